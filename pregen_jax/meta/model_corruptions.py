"""Corruptions of a caption model and the pass rules of the pre-gen unit tests.

MUTT (Boag et al. 2016) corrupts captions and asks whether a post-gen metric falls when the
meaning is broken and holds when it is kept. Pre-gen metrics score a *model*, so here the model
is corrupted instead:

- ``temperature`` (meaning-preserving): logits divided by T. Greedy captions, hence their
  post-gen scores, do not change; a pre-gen metric should move by at most 15% (MUTT's rule).
- ``shuffled_images`` (meaning-altering): the test images' features permuted among the images,
  so every image is described from another image's features; the metric should get worse.
- ``param_noise`` (graded): Gaussian noise on every parameter tensor, a fraction of that
  tensor's standard deviation; the metric should order the noise levels as CIDEr does.
- ``early_snapshot`` (graded): an earlier epoch's parameters against the final ones.

The pass rules are pure functions, vectorised over metrics (C).
"""
from __future__ import annotations

import jax
import numpy as np

TOLERANCE = 0.15   # MUTT: |s_a - s_b| / (|s_a| + eps) <= 0.15
EPSILON = 1e-9
TEMPERATURES = (0.5, 2.0)
NOISE_LEVELS = (0.05, 0.1, 0.2)

MEANING_PRESERVING, MEANING_ALTERING, GRADED = "meaning-preserving", "meaning-altering", "graded"
TESTS = {"temperature": MEANING_PRESERVING, "shuffled_images": MEANING_ALTERING,
         "param_noise": GRADED, "early_snapshot": GRADED}


# ------------------------------------------------------------------ corruptions


def scale_temperature(params: dict, temperature: float) -> dict:
    """The parameters with the output layer's kernel and bias divided by ``temperature``.

    The output layer is a Dense layer (logits = hidden @ kernel + bias), so this is exactly
    logits / T at every step, with no new model code; for T a power of two even bit for bit.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    out = params["params"]["out"]
    scaled = {**out, "kernel": out["kernel"] / temperature, "bias": out["bias"] / temperature}
    return {**params, "params": {**params["params"], "out": scaled}}


def derangement(n: int, seed) -> np.ndarray:
    """i[n]: a seeded permutation with no fixed point (image i gets the features of image perm[i] != i).

    A random cycle through all n images: shuffle them, then let each take its successor's features.
    """
    if n < 2:
        raise ValueError(f"shuffling image features needs at least 2 images, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    perm = np.empty(n, np.int64)
    perm[order] = np.roll(order, -1)
    return perm


def shuffle_features(features: np.ndarray, seed) -> np.ndarray:
    """features: f[I, D] -> the same rows, each image given another image's row (``derangement``)."""
    return np.asarray(features)[derangement(len(features), seed)]


def add_param_noise(params: dict, level: float, seed) -> dict:
    """Every parameter tensor plus Gaussian noise of standard deviation ``level`` x its own std.

    The same seed draws the same standard-normal tensors at every level, so the noise at 0.2
    is the noise at 0.05 times 4 (the levels differ in size only, not in direction). A tensor
    whose values are all equal (std 0) is left as it is.
    """
    leaves, treedef = jax.tree_util.tree_flatten(params)
    rng = np.random.default_rng(seed)
    noisy = []
    for leaf in leaves:
        leaf = np.asarray(leaf)
        z = rng.standard_normal(leaf.shape)
        noisy.append((leaf + level * float(np.std(leaf)) * z).astype(leaf.dtype))
    return jax.tree_util.tree_unflatten(treedef, noisy)


# ------------------------------------------------------------------ pass rules (f[..., C])


def holds(s_a, s_b) -> np.ndarray:
    """bool[...]: meaning-preserving trials: |s_a - s_b| / (|s_a| + 1e-9) <= 0.15.

    ``s_a`` is the unchanged model's score, ``s_b`` the corrupted one's. The denominator takes
    |s_a| (MUTT wrote s_a; with negative scores its ratio is negative and every trial would
    pass). A score that is inf or NaN in either fails; two zeros pass.
    """
    s_a, s_b = np.asarray(s_a, np.float64), np.asarray(s_b, np.float64)
    finite = np.isfinite(s_a) & np.isfinite(s_b)
    with np.errstate(invalid="ignore", over="ignore"):
        return finite & (np.abs(s_a - s_b) / (np.abs(s_a) + EPSILON) <= TOLERANCE)


def gets_worse(s_a, s_b, direction) -> np.ndarray:
    """bool[...]: meaning-altering trials: the corrupted score ``s_b`` is strictly worse than ``s_a``.

    ``direction``: +1 where higher is better (a positive correlation with CIDEr), -1 where
    lower is. A tie fails; +-inf counts as a value (a perplexity of +inf is worse than any
    finite one); NaN, or both at the same infinity, fails.
    """
    s_a, s_b = np.asarray(s_a, np.float64), np.asarray(s_b, np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(direction, np.float64) * (s_b - s_a) < 0


def ordered_like(m_i, m_j, c_i, c_j, direction) -> tuple[np.ndarray, np.ndarray]:
    """Graded trials: does the metric order two models as CIDEr does?

    m_i, m_j: f[..., C] the metric on models i and j; c_i, c_j: f[...] their CIDEr;
    direction: f[C] (+-1). Returns (counted: bool[...], passed: bool[..., C]): a pair is a
    trial only where the two CIDEr values differ (a CIDEr tie has no order to reproduce); it
    passes when the signed metric moves strictly in CIDEr's direction. A metric tie fails, and
    so does NaN (or the same infinity on both sides); +-inf counts as a value.
    """
    c_i, c_j = np.asarray(c_i, np.float64), np.asarray(c_j, np.float64)
    counted = c_i != c_j
    with np.errstate(invalid="ignore"):
        change = np.asarray(direction, np.float64) * (np.asarray(m_j, np.float64) - np.asarray(m_i, np.float64))
        passed = np.where((c_j > c_i)[..., None], change > 0, change < 0) & counted[..., None]
    return counted, passed
