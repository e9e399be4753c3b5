"""Realistic random inputs for benchmarks: reference probabilities and the spec's 15 strata."""
from __future__ import annotations

import numpy as np

from pregen_jax import RefProbs


def random_ref_probs(images: int, refs: int = 5, max_positions: int = 21, seed: int = 0) -> RefProbs:
    """Flickr8k-like shapes: 5 references of 4-21 positions; a true token is the top choice
    about half the time, with high probability when it is and low when it is not."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.normal(12, 3.5, (images, refs)).round(), 4, max_positions).astype(int)
    mask = np.arange(max_positions) < lengths[..., None]
    top = rng.random(mask.shape) < 0.5
    probs = np.where(top, rng.beta(5, 2, mask.shape), rng.beta(1, 8, mask.shape) * 0.5).astype(np.float32)
    ranks = np.where(top, 0, rng.geometric(0.2, mask.shape)).astype(np.int32)
    return RefProbs(probs, ranks, mask)


def spec_strata(images: int, seed: int = 0) -> np.ndarray:
    """bool[15, images]: k = 1..5 contiguous blocks of n // k images of a random ordering."""
    order = np.random.default_rng(seed).permutation(images)
    rows = []
    for k in range(1, 6):
        size = images // k
        for s in range(k):
            row = np.zeros(images, bool)
            row[order[s * size:(s + 1) * size]] = True
            rows.append(row)
    return np.stack(rows)
