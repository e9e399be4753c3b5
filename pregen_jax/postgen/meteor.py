"""METEOR 1.5 from pycocoevalcap's jar (``-l en -norm``), one warm JVM fed in batches."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from .base import PostgenMetric, check_inputs
from .jvm import JavaProcess


def jar_path() -> Path:
    """pycocoevalcap's METEOR 1.5 jar."""
    from pycocoevalcap.meteor import meteor as meteor_module
    return Path(meteor_module.__file__).parent / meteor_module.METEOR_JAR


class METEOR(PostgenMetric):
    """METEOR 1.5 (pycocoevalcap's jar, ``-l en -norm``). One Java process, started once and
    reused for every model of a run; ``close()`` ends it.

    The statistics of all images go to the JVM in one batch (pycocoevalcap waits for each
    image's reply before sending the next); the corpus score of a block comes from METEOR's own
    EVAL over the block's per-image statistics, so alignment (the slow part) runs once per image.
    """

    name = "METEOR"
    corpus_is_mean = False

    def __init__(self):
        if not shutil.which("java"):
            raise RuntimeError("METEOR unavailable: java not found on PATH")
        jar = jar_path()
        self._java = JavaProcess(["java", "-jar", "-Xmx2G", jar.name, "-", "-", "-stdio", "-l", "en", "-norm"],
                                 cwd=str(jar.parent))

    def _stats(self, gts, res) -> dict:
        """METEOR's sufficient statistics of each image (exactly pycocoevalcap's SCORE lines)."""
        ids = list(gts)
        lines = []
        for i in ids:
            hypothesis = res[i][0].replace("|||", "").replace("  ", " ")
            lines.append(" ||| ".join(("SCORE", " ||| ".join(gts[i]), hypothesis)))
        return dict(zip(ids, self._java.ask(lines)))

    def _eval(self, stats: list[str]) -> tuple[float, list[float]]:
        replies = self._java.ask(["EVAL ||| " + " ||| ".join(stats)], replies_per_line=len(stats), extra_replies=1)
        return float(replies[-1]), [float(r) for r in replies[:-1]]

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        return self._eval([stats[i] for i in gts])

    def score_blocks(self, gts, res, blocks):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        _, per_image = self._eval([stats[i] for i in gts])
        return np.array([self._eval([stats[i] for i in block])[0] for block in blocks]), np.asarray(per_image)

    def close(self):
        java = getattr(self, "_java", None)
        if java is not None:
            java.close()
