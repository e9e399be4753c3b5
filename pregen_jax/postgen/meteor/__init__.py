# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""METEOR 1.5 as pycocoevalcap runs it (``-l en -norm``): a Python translation of the jar's
Java (``backend="native"``, the default: no Java; fast.py, matchers.py, normalize.py,
paraphrase.py, python.py and scoring.py follow Meteor 1.5's Java sources by Michael Denkowski and
Alon Lavie, so they are under its LGPL-2.1-only: docs/licensing.md) or the jar itself (``backend="coco"``).

The native (Python) backend became the default once its statistics equalled the jar's on every segment
of the test sets (where-image2's 13 caption sets, MUTT with 5, 10 and 20 references, each
Flickr8k test caption against the other four, the demo's captions, hard strings).

Per-image sufficient statistics (``stats``: f64[images, 23], ``scoring`` says the fields) and
their corpus score (``aggregate``, EVAL's rule) are what every score here is made of.
"""
from __future__ import annotations

import numpy as np

from ...io import file_hash
from ..base import PostgenMetric, backend_name
from ..registry import register_metric
from . import scoring
from .jar import JarMeteor, jar_path, summed_stats, warn_separators

BACKENDS = ("coco", "native")  # every metric's (base.METRIC_BACKENDS); "python" is the old name of "native"
DEFAULT_BACKEND = "native"

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "METEOR", "backend_for", "jar_path", "prepare", "scoring", "summed_stats"]


def backend_for(options) -> str:
    """METEOR's backend under the post-gen options: the jar where they ask for the toolkits
    (``backend = "coco"``), else ``DEFAULT_BACKEND``."""
    return "coco" if getattr(options, "backend", "") == "coco" else DEFAULT_BACKEND


class METEOR(PostgenMetric):
    """METEOR 1.5 (``-l en -norm``). ``backend="coco"``: pycocoevalcap's jar in one warm JVM
    (``close()`` ends it), whose SCORE replies are the statistics; ``backend="native"`` (default):
    the same statistics computed here (``python.PythonMeteor``), no JVM.

    ``stats`` rows are the SCORE statistics with EVAL's chunk rule applied (a perfect match, every
    word matched in one chunk, counts no chunk: its own score is the same either way), so the
    corpus score of any rows is ``scoring.meteor_of_sums`` of their column sums, as the jar's EVAL gives it.
    """

    name = "METEOR"
    corpus = "summed"
    needs_java = DEFAULT_BACKEND == "coco"  # only backend="coco" starts a JVM
    releases_gil = True  # native: the compiled search (nogil); coco: waiting on the JVM

    def __init__(self, backend: str = DEFAULT_BACKEND, apart: bool = False):
        self.backend = backend = backend_name(backend, "METEOR")
        self._jar = JarMeteor() if backend == "coco" else None
        self._python = None
        self._apart = backend == "native" and apart  # its rows and scores come from that process
        if self._apart:  # a process of its own, loading while this one goes on
            from .process import MeteorProcess
            self._python = MeteorProcess()
        elif backend == "native":  # resources load now, where the JVM would start
            from .python import PythonMeteor  # numba and the compiled alignment: imported when first used
            self._python = PythonMeteor()
            self._python.load()

    @classmethod
    def from_options(cls, name: str, options) -> METEOR:
        return cls(backend_for(options))

    @classmethod
    def apart(cls, name: str, options) -> METEOR:
        """``PostgenMetric.apart``: the native backend in a process of its own (``process.MeteorProcess``),
        started now; the jar is in a JVM of its own already."""
        return cls(backend_for(options), apart=True)

    @property
    def aligned(self) -> int:
        """Segments (jar) or distinct (test, reference) pairs (native) aligned so far."""
        return (self._jar or self._python).aligned

    def _checked_stats(self, gts: dict, res: dict) -> np.ndarray:
        """f64[images, 23]: each image's statistics (the jar's SCORE reply, EVAL's chunk rule), in ``gts`` order."""
        warn_separators(gts)
        if self._python is not None:
            return self._eval_rows(self._python.stats(gts, res))
        lines = self._jar.stat_lines(gts, res)
        stats = np.array([scoring.parse(lines[i]) for i in gts]).reshape(len(gts), scoring.K)
        return scoring.eval_rows(stats)

    def stats_started(self, gts: dict, res: dict):
        """``PostgenMetric.stats_started``: the native backend in this process segments and lists the
        new pairs now, in the caller's thread, and aligns them in threads of its own (compiled, no GIL
        held); apart, the request is sent to its process now and its rows read when called."""
        if self._python is None:
            return super().stats_started(gts, res)
        warn_separators(gts)
        finish = self._python.stats_started(gts, res)
        return lambda: self._eval_rows(finish())

    def _eval_rows(self, rows: np.ndarray) -> np.ndarray:
        """The native backend's rows with EVAL's chunk rule (``scoring.eval_rows``; the process applies it)."""
        return rows if self._apart else scoring.eval_rows(rows)

    def from_sums(self, sums: np.ndarray, images) -> np.ndarray:
        """f64[...]: METEOR of summed statistics f64[..., 23] (the jar's computeMetrics)."""
        if self._apart:  # the compiled formula is in that process (numba is not started in this one)
            return self._python.meteor_of_sums(sums)
        return scoring.meteor_of_sums(sums)

    def close(self):
        for backend in (getattr(self, "_jar", None), getattr(self, "_python", None)):
            if backend is not None and hasattr(backend, "close"):
                backend.close()


def prepare() -> str:
    """Build what METEOR's first use builds (the paraphrase table, the compiled search) into the
    cache folder (``pregen-search doctor --prepare``); one line saying where."""
    from ...io import cache_folder
    from .paraphrase import table
    from .python import PythonMeteor
    PythonMeteor().load()  # the compiled search
    table()  # the whole table, even where a table of words (evaluate's) would have served the load
    folder = cache_folder()
    if folder is None:
        return "METEOR's paraphrase table and search built in memory only (the cache folder is not writable)"
    return f"METEOR's paraphrase table and compiled search in {folder}"


def _availability(options) -> tuple[bool, str]:
    """METEOR: its resources are installed (the native backend) or Java starts and the jar opens (coco)."""
    from ..jvm import java_description, java_problem
    from ..spice import jar_problem
    from .resources import paraphrase_path
    if backend_for(options) == "native":
        problem = jar_problem(jar_path()) or (None if paraphrase_path().is_file() else
                                              f"{paraphrase_path()}: METEOR's paraphrase table is missing")
        return (False, problem) if problem else (True, "backend native (no Java; pycocoevalcap's METEOR 1.5 resources)")
    problem = java_problem() or jar_problem(jar_path())
    if problem:
        return False, problem
    return True, f"backend coco (pycocoevalcap's jar), java {java_description()}"


def _depends_on(options) -> dict:
    return {"jar": file_hash(str(jar_path()))}


register_metric("METEOR", METEOR, _availability, "METEOR 1.5 (pycocoevalcap's, -l en -norm; native, or its jar)",
                depends_on=_depends_on)
