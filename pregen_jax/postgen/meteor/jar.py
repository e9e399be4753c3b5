# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""METEOR 1.5 from pycocoevalcap's jar (``-l en -norm``), one warm JVM fed in batches."""
from __future__ import annotations

import warnings

import numpy as np

from ..jvm import JavaProcess, java_command
from . import scoring
from .resources import jar_path

MEMO_LIMIT = 500_000  # segments whose statistics are kept (about 150 MB); past it the memo starts afresh


SEPARATOR = "|||"  # the jar's field separator in SCORE and EVAL lines


def score_line(references: list[str], candidate: str) -> str:
    """pycocoevalcap's ``SCORE`` request for one image (its candidate loses ``|||`` and double
    spaces), except that each reference loses them too: pycocoevalcap would send a reference
    holding ``|||`` as two references (``warn_separators`` says so)."""
    references = [r.replace(SEPARATOR, "").replace("  ", " ") for r in references]
    candidate = candidate.replace(SEPARATOR, "").replace("  ", " ")
    return " ||| ".join(("SCORE", " ||| ".join(references), candidate))


def warn_separators(gts: dict) -> None:
    """One warning where a reference holds ``|||``, which the jar reads as a field separator:
    ``score_line`` removes it (as pycocoevalcap does from candidates) so the reference stays one."""
    found = [i for i, refs in gts.items() if any(SEPARATOR in r for r in refs)]
    if found:
        warnings.warn(f"METEOR: {len(found)} image(s) have a reference holding '|||' (first: image {found[0]}); "
                      "scored with '|||' removed (COCOEvalCap would split such a reference into two)", stacklevel=3)


def summed_stats(lines: list[str]) -> str:
    """One METEOR statistics line whose score is the corpus score of ``lines`` (as EVAL gives it):
    ``scoring.summed`` of the rows; ``repr`` writes back a value Java parses to the same double."""
    total = scoring.summed(np.array([line.split() for line in lines], np.float64))
    return " ".join(repr(float(value)) for value in total)


class JarMeteor:
    """The jar behind ``METEOR(backend="coco")``: one Java process, started once and reused for
    every model of a run; ``close()`` ends it.

    The statistics of all images go to the JVM in one batch (pycocoevalcap waits for each
    image's reply before sending the next). A segment's statistics depend on its references and
    candidate alone, so they are kept for the run: models that write the same caption for an
    image share one alignment (the slow part).
    """

    def __init__(self):
        jar = jar_path()
        # The serial collector: METEOR aligns on one thread, and the default collector's threads only
        # compete with the training beside it (about 20% less time for the same scores, measured
        # on the demo's captions).
        self._java = JavaProcess(java_command(["-XX:+UseSerialGC", "-jar", "-Xmx2G", jar.name, "-", "-", "-stdio",
                                               "-l", "en", "-norm"]), cwd=str(jar.parent))
        self._memo: dict[str, str] = {}  # SCORE line -> its statistics
        self.aligned = 0  # segments sent to the JVM for alignment (the rest came from the memo)

    def stat_lines(self, gts: dict, res: dict) -> dict:
        """METEOR's sufficient statistics of each image (exactly pycocoevalcap's SCORE replies)."""
        lines = {i: score_line(gts[i], res[i][0]) for i in gts}
        new = list(dict.fromkeys(line for line in lines.values() if line not in self._memo))
        if len(self._memo) + len(new) > MEMO_LIMIT:
            self._memo.clear()
            new = list(dict.fromkeys(lines.values()))
        if new:  # segments all in the memo need no JVM (even a closed one)
            self._memo.update(zip(new, self._java.ask(new)))
        self.aligned += len(new)
        return {i: self._memo[line] for i, line in lines.items()}

    def eval(self, stats: list[str]) -> tuple[float, list[float]]:
        """(METEOR's corpus score of ``stats`` lines, the score of each line), from the jar's EVAL."""
        replies = self._java.ask(["EVAL ||| " + " ||| ".join(stats)], replies_per_line=len(stats), extra_replies=1)
        return float(replies[-1]), [float(r) for r in replies[:-1]]

    def close(self) -> None:
        self._java.close()
