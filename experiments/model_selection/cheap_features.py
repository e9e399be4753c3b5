"""Per-image cheap features from one teacher-forced pass (``RefProbs``), for predicting per-image
post-gen scores (``ppi``, beside it) and screening candidates before generation.

Two kinds, both from the same pass and for every image of the split:

- ``image_log_perplexity``: -mean log p over an image's reference positions (the validation
  perplexity's log, image by image; its mean over images weights images, not tokens);
- ``image_tier_space``: the tier space's metrics with each image its own stratum (one
  ``tiers.sweep`` over ``Partitions`` with I one-image segments: the same vectorized sweep as the
  search's strata). With one image per stratum the dataset aggregator has nothing to aggregate,
  so only the ``mean_*`` columns are kept (84 of the default 504).

A model of another framework brings the same features through its own ``RefProbs``.
"""
from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from pregen_jax import tiers
from pregen_jax.refprobs import RefProbs

Assist = Literal["none", "perplexity", "pregen", "both"]
"""What an assisted race predicts per-image scores from: nothing (a plain race), the per-image
perplexity, the pre-gen tier space, or both."""
ASSISTS: tuple[str, ...] = get_args(Assist)
# the compact predictor of ``--assist pregen``: the references' mean log-probability, the least
# likely token, the share of top-1 tokens, the longest top-1 prefix (each averaged over references)
PREGEN_FEATURES = ("mean_mean_pplx_none", "mean_min_prob_none", "mean_mean_normcount_none",
                   "mean_mean_normcount_prefix0", "mean_max_prob_none")


def image_log_perplexity(ref_probs: RefProbs) -> np.ndarray:
    """-mean log p over each image's real positions: f[I] (an image with none: NaN)."""
    probs = np.asarray(ref_probs.probs, np.float64)
    mask = np.asarray(ref_probs.mask, bool)
    log_p = np.where(mask, np.log(np.clip(probs, 1e-30, None)), 0.0)
    counts = mask.sum((1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return -log_p.sum((1, 2)) / counts


def image_tier_space(ref_probs: RefProbs, space: tiers.Space = tiers.DEFAULT_SPACE) -> tuple[np.ndarray, list[str]]:
    """The tier space on single images: (f[I, C'], the C' names): the ``mean_*`` columns of
    ``tiers.sweep`` with every image its own stratum."""
    one_each = tiers.Partitions(np.arange(ref_probs.num_images, dtype=np.int32)[None])
    values = tiers.sweep(ref_probs, one_each, space)
    keep = [c for c, name in enumerate(space.names) if name.startswith("mean_")]
    return np.asarray(values[:, keep], np.float64), [space.names[c] for c in keep]


def signed_log(values: np.ndarray) -> np.ndarray:
    """sign(x) log(1 + |x|): per-image perplexities and counts have long tails a linear fit
    should not chase; NaN and inf become 0."""
    values = np.nan_to_num(np.asarray(values, np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    return np.sign(values) * np.log1p(np.abs(values))


def assist_features(assist: str, log_perplexity: np.ndarray | None = None, space_values: np.ndarray | None = None,
                    space_names=None, columns=PREGEN_FEATURES) -> np.ndarray | None:
    """The predictor's features for one ``--assist`` choice: f[..., I, C] or None for "none".

    log_perplexity: f[..., I] (``image_log_perplexity``); space_values: f[..., I, C']
    (``image_tier_space``) with ``space_names``; ``columns``: which space columns "pregen" uses.
    """
    if assist not in ASSISTS:
        raise ValueError(f"assist {assist!r}: choose from {', '.join(ASSISTS)}")
    if assist == "none":
        return None
    parts = []
    if assist in ("perplexity", "both"):
        if log_perplexity is None:
            raise ValueError(f"assist {assist}: needs per-image perplexities")
        parts.append(np.asarray(log_perplexity, np.float64)[..., None])
    if assist in ("pregen", "both"):
        if space_values is None:
            raise ValueError(f"assist {assist}: needs the per-image tier space")
        names = list(space_names)
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"assist {assist}: the tier space lacks {', '.join(missing)}")
        parts.append(np.asarray(space_values, np.float64)[..., [names.index(c) for c in columns]])
    return signed_log(np.concatenate(parts, axis=-1))
