"""ROUGE-L from pycocoevalcap."""
from __future__ import annotations

import numpy as np
from pycocoevalcap.rouge.rouge import Rouge

from .base import PostgenMetric, check_inputs


class ROUGE_L(PostgenMetric):  # noqa: N801 (pycocoevalcap's name)
    """ROUGE-L F-measure (beta 1.2), the mean over images."""

    name = "ROUGE_L"

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        score, per_image = Rouge().compute_score(gts, res)
        return float(score), [float(s) for s in np.asarray(per_image)]
