"""METEOR 1.5 as pycocoevalcap runs it (``-l en -norm``): the jar (``backend="coco"``) or this
package's own implementation, equal to it (``backend="python"``, no Java).

Per-image sufficient statistics (``stats``: f64[images, 23], ``scoring`` says the fields) and
their corpus score (``aggregate``, EVAL's rule) are what every score here is made of.
"""
from __future__ import annotations

import numpy as np

from ..base import PostgenMetric, file_hash
from ..registry import register_metric
from . import scoring
from .jar import JarMeteor, jar_path, summed_stats
from .python import PythonMeteor

BACKENDS = ("coco", "python")
DEFAULT_BACKEND = "coco"

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "METEOR", "jar_path", "scoring", "summed_stats"]


class METEOR(PostgenMetric):
    """METEOR 1.5 (``-l en -norm``). ``backend="coco"``: pycocoevalcap's jar in one warm JVM
    (``close()`` ends it), whose SCORE replies are the statistics; ``backend="python"``: the same
    statistics computed here (``python.PythonMeteor``), no JVM.

    ``stats`` rows are the SCORE statistics with EVAL's chunk rule applied (a perfect match, every
    word matched in one chunk, counts no chunk: its own score is the same either way), so the
    corpus score of any rows is ``scoring.score`` of their column sums, as the jar's EVAL gives it.
    """

    name = "METEOR"
    corpus = "summed"
    needs_java = True

    def __init__(self, backend: str = DEFAULT_BACKEND):
        if backend not in BACKENDS:
            raise ValueError(f"METEOR backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = backend
        self._jar = JarMeteor() if backend == "coco" else None
        self._python = PythonMeteor() if backend == "python" else None

    @property
    def aligned(self) -> int:
        """Segments (jar) or distinct (test, reference) pairs (python) aligned so far."""
        return (self._jar or self._python).aligned

    def _checked_stats(self, gts: dict, res: dict) -> np.ndarray:
        """f64[images, 23]: each image's statistics (the jar's SCORE reply, EVAL's chunk rule), in ``gts`` order."""
        if self._python is not None:
            return scoring.eval_rows(self._python.stats(gts, res))
        lines = self._jar.stat_lines(gts, res)
        stats = np.array([scoring.parse(lines[i]) for i in gts]).reshape(len(gts), scoring.K)
        return scoring.eval_rows(stats)

    def from_sums(self, sums: np.ndarray, images) -> np.ndarray:
        """f64[...]: METEOR of summed statistics f64[..., 23] (the jar's computeMetrics)."""
        return scoring.score(sums)

    def close(self):
        jar = getattr(self, "_jar", None)
        if jar is not None:
            jar.close()


def _availability(options) -> tuple[bool, str]:
    """METEOR: Java starts, and its jar opens."""
    from ..jvm import java_description, java_problem
    from ..spice import jar_problem
    problem = java_problem() or jar_problem(jar_path())
    if problem:
        return False, problem
    return True, f"java {java_description()}"


def _depends_on(options) -> dict:
    return {"jar": file_hash(str(jar_path()))}


register_metric("METEOR", METEOR, _availability, "METEOR 1.5 (pycocoevalcap, Java; -l en -norm)",
                depends_on=_depends_on)
