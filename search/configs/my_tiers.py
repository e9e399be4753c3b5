"""Tier functions of your own, named in user_tiers.toml: see README "Extending the tier space"."""
import jax.numpy as jnp

from pregen_jax import tiers


def _top2prefix_reference(probs, ranks):
    return [all(k < 2 for k in ranks[:t + 1]) for t in range(len(ranks))]


@tiers.register_filter("top2prefix", reference=_top2prefix_reference)
def top2prefix(probs, ranks, mask):
    """The longest prefix whose true tokens all rank in the model's top 2."""
    return mask & (jnp.cumsum(mask & (ranks >= 2), axis=-1) == 0)


def _trimmed_mean_reference(values):
    inner = values[1:-1] if len(values) >= 3 else values
    return sum(inner) / len(inner)


@tiers.register_aggregator("trimmed_mean", tiers=(3,), reference=_trimmed_mean_reference)
def trimmed_mean(values, mask):
    """Mean without the lowest and highest value (plain mean below 3 values); values arrive sorted."""
    n = mask.sum(-1, keepdims=True)
    position = jnp.cumsum(mask, -1) - 1
    inner = mask & (((position > 0) & (position < n - 1)) | (n < 3))
    return jnp.sum(jnp.where(inner, values, 0.0), -1) / jnp.maximum(inner.sum(-1), 1)
