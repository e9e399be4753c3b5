"""METEOR 1.5 from pycocoevalcap's jar (``-l en -norm``), one warm JVM fed in batches."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import PostgenMetric, check_inputs
from .jvm import JavaProcess, java_command
from .registry import register_metric

MEMO_LIMIT = 500_000  # segments whose statistics are kept (about 150 MB); past it the memo starts afresh


def jar_path() -> Path:
    """pycocoevalcap's METEOR 1.5 jar."""
    from pycocoevalcap.meteor import meteor as meteor_module
    return Path(meteor_module.__file__).parent / meteor_module.METEOR_JAR


def summed_stats(lines: list[str]) -> str:
    """One METEOR statistics line whose score is the corpus score of ``lines`` (as EVAL gives it).

    A line is: test and reference lengths, their function words, per matching stage (exact,
    stem, synonym, paraphrase) the test and reference content and function words matched, then
    chunks and the test and reference words matched. EVAL adds segments field by field
    (``MeteorStats.addStats``), except that a perfect match (every word matched, one chunk)
    adds no chunk, and scores the sum; so does this, and the sum is exact in float64 (the fields
    are counts). ``repr`` writes back a value Java parses to the same double.
    """
    stats = np.array([line.split() for line in lines], np.float64)
    stages = slice(4, stats.shape[1] - 3)
    test_matched = stats[:, stages][:, 0::4].sum(1) + stats[:, stages][:, 2::4].sum(1)
    reference_matched = stats[:, stages][:, 1::4].sum(1) + stats[:, stages][:, 3::4].sum(1)
    chunks = stats.shape[1] - 3
    perfect = (test_matched == stats[:, 0]) & (reference_matched == stats[:, 1]) & (stats[:, chunks] == 1)
    stats[perfect, chunks] = 0.0
    return " ".join(repr(float(value)) for value in stats.sum(0))


class METEOR(PostgenMetric):
    """METEOR 1.5 (pycocoevalcap's jar, ``-l en -norm``). One Java process, started once and
    reused for every model of a run; ``close()`` ends it.

    The statistics of all images go to the JVM in one batch (pycocoevalcap waits for each
    image's reply before sending the next). A segment's statistics depend on its references and
    candidate alone, so they are kept for the run: models that write the same caption for an
    image share one alignment (the slow part). Corpus scores come from METEOR's own EVAL, of the
    per-image statistics or, for a block of images, of the block's summed statistics
    (``summed_stats``): one EVAL scores every block.
    """

    name = "METEOR"
    corpus = "summed"
    needs_java = True

    def __init__(self):
        jar = jar_path()
        # The serial collector: METEOR aligns on one thread, and the default collector's threads only
        # compete with the training beside it (about 20% less time for the same scores, measured
        # on the demo's captions).
        self._java = JavaProcess(java_command(["-XX:+UseSerialGC", "-jar", "-Xmx2G", jar.name, "-", "-", "-stdio",
                                               "-l", "en", "-norm"]), cwd=str(jar.parent))
        self._memo: dict[str, str] = {}  # SCORE line -> its statistics
        self.aligned = 0  # segments sent to the JVM for alignment (the rest came from the memo)

    def _stats(self, gts, res) -> dict:
        """METEOR's sufficient statistics of each image (exactly pycocoevalcap's SCORE lines)."""
        lines = {}
        for i in gts:
            hypothesis = res[i][0].replace("|||", "").replace("  ", " ")
            lines[i] = " ||| ".join(("SCORE", " ||| ".join(gts[i]), hypothesis))
        new = list(dict.fromkeys(line for line in lines.values() if line not in self._memo))
        if len(self._memo) + len(new) > MEMO_LIMIT:
            self._memo.clear()
            new = list(dict.fromkeys(lines.values()))
        self._memo.update(zip(new, self._java.ask(new)))
        self.aligned += len(new)
        return {i: self._memo[line] for i, line in lines.items()}

    def _eval(self, stats: list[str]) -> tuple[float, list[float]]:
        """(METEOR's corpus score of ``stats``, the score of each line)."""
        replies = self._java.ask(["EVAL ||| " + " ||| ".join(stats)], replies_per_line=len(stats), extra_replies=1)
        return float(replies[-1]), [float(r) for r in replies[:-1]]

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        return self._eval([stats[i] for i in gts])

    def score_blocks(self, gts, res, blocks):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        summed = [summed_stats([stats[i] for i in block]) for block in blocks]
        _, scores = self._eval([stats[i] for i in gts] + summed)
        return np.array(scores[len(gts):]), np.asarray(scores[:len(gts)])

    def close(self):
        java = getattr(self, "_java", None)
        if java is not None:
            java.close()


def _availability(options) -> tuple[bool, str]:
    """METEOR: Java starts, and its jar opens."""
    from .jvm import java_description, java_problem
    from .spice import jar_problem
    problem = java_problem() or jar_problem(jar_path())
    if problem:
        return False, problem
    return True, f"java {java_description()}"


def _depends_on(options) -> dict:
    from .base import file_hash
    return {"jar": file_hash(str(jar_path()))}


register_metric("METEOR", METEOR, _availability, "METEOR 1.5 (pycocoevalcap, Java; -l en -norm)",
                depends_on=_depends_on)
