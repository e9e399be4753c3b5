"""METEOR 1.5 from pycocoevalcap (a Java jar, ``-l en -norm``)."""
from __future__ import annotations

import shutil
import threading

import numpy as np
from pycocoevalcap.meteor import meteor as meteor_module

from .base import PostgenMetric, check_inputs


class METEOR(PostgenMetric):
    """METEOR 1.5 (pycocoevalcap's jar, ``-l en -norm``). One Java process, started once.

    The corpus score of a stratum comes from METEOR's own EVAL over the stratum's
    per-image statistics, so alignment (the slow part) runs once per image, not per stratum.
    """

    name = "METEOR"
    corpus_is_mean = False

    def __init__(self):
        if not shutil.which("java"):
            raise RuntimeError("METEOR unavailable: java not found on PATH")
        from .. import processes
        with processes.children_die_with_parent(meteor_module):  # no JVM outlives the run (kill -9 included)
            self._meteor = meteor_module.Meteor()
        self._lock = threading.Lock()

    def _stats(self, gts, res) -> dict:
        with self._lock:
            return {i: self._meteor._stat(res[i][0], gts[i]) for i in gts}

    def _eval(self, stats: list[str]) -> tuple[float, list[float]]:
        with self._lock:
            process = self._meteor.meteor_p
            process.stdin.write(("EVAL ||| " + " ||| ".join(stats) + "\n").encode())
            process.stdin.flush()
            per_image = [float(process.stdout.readline().strip()) for _ in stats]
            score = float(process.stdout.readline().strip())
        return score, per_image

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        return self._eval([stats[i] for i in gts])

    def score_blocks(self, gts, res, blocks):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        _, per_image = self._eval([stats[i] for i in gts])
        return np.array([self._eval([stats[i] for i in block])[0] for block in blocks]), np.asarray(per_image)

    def stratum_scores(self, gts, res, strata):
        check_inputs(gts, res)
        stats = self._stats(gts, res)
        return np.array([self._eval([stats[i] for i in block])[0] for block in strata])

    def close(self):
        meteor = getattr(self, "_meteor", None)
        if meteor is not None:
            meteor.meteor_p.stdin.close()
            meteor.meteor_p.kill()
            meteor.meteor_p.wait()
            self._meteor = None
