"""BLEU, CIDEr-D, ROUGE-L and METEOR from pycocoevalcap (METEOR 1.5 runs on Java)."""
from __future__ import annotations

import shutil
import threading

import numpy as np
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.meteor import meteor as meteor_module
from pycocoevalcap.rouge.rouge import Rouge

from .base import PostgenMetric, check_inputs


class CIDEr(PostgenMetric):
    """CIDEr-D as pycocoevalcap computes it (document frequencies from the images scored)."""

    name = "CIDEr"
    corpus_is_mean = False  # document frequencies come from the block: recompute per stratum

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        score, per_image = Cider().compute_score(gts, res)
        return float(score), [float(s) for s in per_image]


class BLEU(PostgenMetric):
    """BLEU-n (corpus level, pycocoevalcap's closest-reference brevity penalty)."""

    corpus_is_mean = False

    def __init__(self, n: int = 4):
        self.n = n
        self.name = f"Bleu_{n}"

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        scores, per_image = Bleu(self.n).compute_score(gts, res, verbose=0)
        return float(scores[-1]), [float(s) for s in per_image[-1]]


class ROUGE_L(PostgenMetric):  # noqa: N801 (pycocoevalcap's name)
    """ROUGE-L F-measure (beta 1.2), the mean over images."""

    name = "ROUGE_L"

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        score, per_image = Rouge().compute_score(gts, res)
        return float(score), [float(s) for s in np.asarray(per_image)]


class METEOR(PostgenMetric):
    """METEOR 1.5 (pycocoevalcap's jar, ``-l en -norm``). One Java process, started once.

    The corpus score of a stratum comes from METEOR's own EVAL over the stratum's
    per-image statistics, so alignment (the slow part) runs once per image, not per stratum.
    """

    name = "METEOR"
    corpus_is_mean = False

    def __init__(self):
        ok, why = self.availability()
        if not ok:
            raise RuntimeError(f"METEOR unavailable: {why}")
        self._meteor = meteor_module.Meteor()
        self._lock = threading.Lock()

    @classmethod
    def availability(cls):
        java = shutil.which("java")
        if not java:
            return False, "java not found on PATH (install a JRE, e.g. apt-get install default-jre-headless)"
        return True, f"java at {java}"

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
