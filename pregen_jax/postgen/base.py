"""The post-gen metric interface: pycocoevalcap's ``compute_score(gts, res)`` plus strata.

``gts``: image id -> list of reference strings; ``res``: image id -> [one candidate string].
Strings are already tokenised (tokens joined by spaces) with the package tokenizer, so every
metric sees the same tokens; scores are on each toolkit's native scale.
"""
from __future__ import annotations

import numpy as np


class PostgenMetric:
    """A post-gen metric. Subclasses set ``name`` and implement ``compute_score``."""

    name = "metric"
    corpus_is_mean = True  # the corpus score is the mean of the per-image scores

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """(available on this machine, why not / what is used)."""
        return True, "ok"

    def compute_score(self, gts: dict, res: dict) -> tuple[float, list[float]]:
        raise NotImplementedError

    def stratum_scores(self, gts: dict, res: dict, strata: list[list]) -> np.ndarray:
        """The corpus score of each stratum (a list of image ids), each computed on its block alone."""
        if self.corpus_is_mean:
            ids = list(gts)
            _, per_image = self.compute_score(gts, res)
            by_id = dict(zip(ids, per_image))
            return np.array([np.mean([by_id[i] for i in block]) for block in strata])
        return np.array([self.compute_score({i: gts[i] for i in block}, {i: res[i] for i in block})[0]
                         for block in strata])

    def close(self) -> None:
        """Release external resources (a Java process)."""


def check_inputs(gts: dict, res: dict, source: str = "captions") -> None:
    """Clear errors for the inputs every metric shares."""
    if set(gts) != set(res):
        missing = sorted(set(gts) ^ set(res), key=str)[:3]
        raise ValueError(f"{source}: references and candidates cover different images (e.g. {missing})")
    for image_id, refs in gts.items():
        if not refs:
            raise ValueError(f"{source}: image {image_id} has no references")
        if len(res[image_id]) != 1:
            raise ValueError(f"{source}: image {image_id} needs exactly one candidate, got {len(res[image_id])}")
        if not any(r.strip() for r in refs):
            raise ValueError(f"{source}: image {image_id} has only empty references")
