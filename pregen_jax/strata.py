"""Strata: one model's test set cut into blocks by how well the model does on each image."""
from __future__ import annotations

import dataclasses

import numpy as np

SPEC_MAX_K = 5
"""The spec cuts the sorted test set into k = 1..5 blocks."""
NUM_SPEC_STRATA = SPEC_MAX_K * (SPEC_MAX_K + 1) // 2
"""The spec's strata per model: 1 + 2 + 3 + 4 + 5 = 15."""


@dataclasses.dataclass(frozen=True)
class Strata:
    """Blocks of images.

    Attributes:
      mask: bool[S, I], row s = the images of stratum s.
      num_strata: i[S], the k of the cut each stratum belongs to; stratum: i[S], its index in it.
    """

    mask: np.ndarray
    num_strata: np.ndarray
    stratum: np.ndarray

    def blocks(self, image_ids) -> list[list]:
        """Each stratum as a list of image ids."""
        ids = np.asarray(list(image_ids), dtype=object)
        return [ids[row].tolist() for row in self.mask]


def spec_strata(per_image_score, max_k: int = SPEC_MAX_K) -> Strata:
    """The spec's strata: sort images by score ascending (stable: ties keep image order), then
    for k = 1..max_k cut the sorted list into k blocks of n // k images (a remainder at the
    top end is left out). 1 + 2 + ... + max_k strata."""
    scores = np.asarray(per_image_score, float)
    n = len(scores)
    if n < max_k:
        raise ValueError(f"need at least {max_k} images for {max_k} strata, got {n}")
    if not np.isfinite(scores).all():
        raise ValueError("per-image scores contain NaN or inf")
    order = np.argsort(scores, kind="stable")
    rows, ks, ss = [], [], []
    for k in range(1, max_k + 1):
        size = n // k
        for s in range(k):
            row = np.zeros(n, bool)
            row[order[size * s:size * (s + 1)]] = True
            rows.append(row)
            ks.append(k)
            ss.append(s)
    return Strata(np.stack(rows), np.array(ks), np.array(ss))
