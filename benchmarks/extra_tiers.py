"""Tier functions registered from user code, to grow the space past 5,000 metrics.

They double as examples of extending pregen-jax without editing it.
"""
from __future__ import annotations

import jax.numpy as jnp

from pregen_jax import tiers


def _prefix_within(k):
    def keep(probs, ranks, mask):
        return mask & (jnp.cumsum(mask & (ranks >= k), axis=-1) == 0)
    keep.__doc__ = f"The longest prefix whose true tokens all rank in the top {k}."
    return keep


def _within(k):
    def keep(probs, ranks, mask):
        return mask & (ranks < k)
    keep.__doc__ = f"Positions whose true token ranks in the top {k}."
    return keep


def _minprob(probs, keep, mask):
    """Smallest kept probability (1 when nothing is kept)."""
    return jnp.min(jnp.where(keep, probs, 1.0), axis=-1)


def _meanprob(probs, keep, mask):
    """Mean kept probability (0 when nothing is kept)."""
    return jnp.sum(jnp.where(keep, probs, 0.0), -1) / jnp.maximum(keep.sum(-1), 1)


def _maxprob(probs, keep, mask):
    """Largest kept probability (0 when nothing is kept)."""
    return jnp.max(jnp.where(keep, probs, 0.0), axis=-1)


def _logprob(probs, keep, mask):
    """Sum of the kept log probabilities (-inf when a kept p is 0; 0 when nothing is kept)."""
    return jnp.sum(jnp.where(keep, jnp.log(jnp.where(keep, probs, 1.0)), 0.0), axis=-1)


def _trimmed_mean(values, mask):
    """Mean without the lowest and highest value (plain mean below 3); values arrive sorted."""
    n = mask.sum(-1, keepdims=True)
    position = jnp.cumsum(mask, -1) - 1
    inner = mask & (((position > 0) & (position < n - 1)) | (n < 3))
    return jnp.sum(jnp.where(inner, values, 0.0), -1) / jnp.maximum(inner.sum(-1), 1)


def _std(values, mask):
    """Population standard deviation of the masked values."""
    n = jnp.maximum(mask.sum(-1, keepdims=True), 1)
    mean = jnp.sum(jnp.where(mask, values, 0.0), -1, keepdims=True) / n
    return jnp.sqrt(jnp.sum(jnp.where(mask, (values - mean) ** 2, 0.0), -1) / n[..., 0])


def extended_space() -> tiers.Space:
    """The default space plus 6 filters, 4 caption scores and 2 aggregators: 5,184 metrics."""
    new_filters = {"top2prefix": _prefix_within(2), "top3prefix": _prefix_within(3),
                   "top5prefix": _prefix_within(5), "top2": _within(2), "top5": _within(5),
                   "top10": _within(10)}
    for name, fn in new_filters.items():
        if name not in tiers.REGISTRIES[1]:
            tiers.register_filter(name)(fn)
    for name, fn in {"minprob": _minprob, "meanprob": _meanprob, "maxprob": _maxprob, "logprob": _logprob}.items():
        if name not in tiers.REGISTRIES[2]:
            tiers.register_caption_score(name)(fn)
    for name, fn in {"trimmed_mean": _trimmed_mean, "std": _std}.items():
        if name not in tiers.REGISTRIES[4]:
            tiers.register_aggregator(name)(fn)
    return tiers.DEFAULT_SPACE.extend(filters=list(new_filters), caption_scores=["minprob", "meanprob", "maxprob", "logprob"],
                                      image_aggregators=["trimmed_mean", "std"],
                                      dataset_aggregators=["trimmed_mean", "std"])
