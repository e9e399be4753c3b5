"""BLEU-1..4 from pycocoevalcap (corpus level, closest-reference brevity penalty)."""
from __future__ import annotations

from pycocoevalcap.bleu.bleu import Bleu

from .base import PostgenMetric, check_inputs


class BLEU(PostgenMetric):
    """BLEU-n; the per-image scores are pycocoevalcap's sentence-level BLEU."""

    corpus_is_mean = False

    def __init__(self, n: int = 4):
        if n not in (1, 2, 3, 4):
            raise ValueError(f"BLEU order must be 1-4, got {n}")
        self.n = n
        self.name = f"Bleu_{n}"

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        scores, per_image = Bleu(self.n).compute_score(gts, res, verbose=0)
        return float(scores[-1]), [float(s) for s in per_image[-1]]
