"""CIDEr-D from pycocoevalcap, on its native scale (not multiplied by 10)."""
from __future__ import annotations

from pycocoevalcap.cider.cider import Cider

from .base import PostgenMetric, check_inputs


class CIDEr(PostgenMetric):
    """CIDEr-D; document frequencies come from the references of the images scored."""

    name = "CIDEr"
    corpus_is_mean = False  # document frequencies come from the block: recompute per stratum
    corpus_dependent = True

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        score, per_image = Cider().compute_score(gts, res)
        return float(score), [float(s) for s in per_image]
