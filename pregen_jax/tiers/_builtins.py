"""The built-in tier functions of the spec (../shared/docs/pregen-spec.md).

Each is registered with a plain-Python ``reference`` taken from the oracle, so that
``tiers.check`` compares the array version with the spec's own words.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from . import oracle
from ._parts import Parts
from ._registry import register_aggregator, register_caption_score, register_filter
from ._selection import median_any_order


def _prefix(ranks):
    kept = [k == 0 for k in ranks]
    return [all(kept[:t + 1]) for t in range(len(kept))]


def _caption_reference(name):
    return lambda probs, keep: oracle.caption_score([p for p, k in zip(probs, keep) if k], len(probs), name)


def _aggregator_reference(name):
    return functools.partial(oracle.aggregate, name=name)

# ---------------------------------------------------------------- tier 1: filters


@register_filter("none", reference=lambda probs, ranks: [True] * len(probs))
def keep_all(probs, ranks, mask):
    """All m+1 positions."""
    return mask


@register_filter("filter0", reference=lambda probs, ranks: [k == 0 for k in ranks])
def keep_top(probs, ranks, mask):
    """Positions whose true token is the model's top choice (rank 0), as the paper's text says."""
    return mask & (ranks == 0)


@register_filter("miss0", reference=lambda probs, ranks: [k != 0 for k in ranks])
def keep_missed(probs, ranks, mask):
    """Positions whose true token is NOT the top choice: what the 2018 code's ``filter0`` kept."""
    return mask & (ranks != 0)


@register_filter("prefix0", reference=lambda probs, ranks: _prefix(ranks))
def keep_top_prefix(probs, ranks, mask):
    """The longest prefix in which every true token is the model's top choice."""
    # The first miss bounds the prefix: one argmax, where a cumsum is a slow reduce-window on XLA:CPU.
    miss = mask & (ranks != 0)
    first_miss = jnp.where(miss.any(-1), jnp.argmax(miss, axis=-1), miss.shape[-1])
    return mask & (jnp.arange(miss.shape[-1]) < first_miss[..., None])


# ---------------------------------------------------------------- tier 2: caption scores


@register_caption_score("prob", reference=_caption_reference("prob"))
def caption_prob(probs, keep, mask):
    """Product of the kept probabilities; 0 when nothing is kept."""
    product = jnp.prod(jnp.where(keep, probs, 1.0), axis=-1)
    return jnp.where(keep.any(-1), product, 0.0)


@register_caption_score("pplx", reference=_caption_reference("pplx"))
def caption_pplx(probs, keep, mask):
    """Perplexity 2 ** (-mean(log2 p)) of the kept positions; +inf when nothing is kept or a kept p is 0."""
    count = keep.sum(-1)
    # log2 of the unbroadcast probabilities, then select: a log under the select (of each
    # filter's broadcast copy) is not vectorized on XLA:CPU and cost 3-5x more.
    log2_sum = jnp.sum(jnp.where(keep, jnp.log2(probs), 0.0), axis=-1)
    pplx = jnp.exp2(-log2_sum / jnp.maximum(count, 1))
    return jnp.where(count > 0, pplx, jnp.inf)


@register_caption_score("count", reference=_caption_reference("count"))
def caption_count(probs, keep, mask):
    """How many positions were kept."""
    return keep.sum(-1).astype(probs.dtype)


@register_caption_score("normcount", reference=_caption_reference("normcount"))
def caption_normcount(probs, keep, mask):
    """Kept positions over the reference's full length m+1 (end token included)."""
    return keep.sum(-1).astype(probs.dtype) / jnp.maximum(mask.sum(-1), 1).astype(probs.dtype)


# ---------------------------------------------------------------- tiers 3 and 4: aggregators


def _count(mask, dtype):
    return jnp.maximum(mask.sum(-1), 1).astype(dtype)


def _total(stat, mask):
    """Sum of the pieces' statistics that exist: f[..., P], bool[..., P] -> f[...]."""
    return jnp.sum(jnp.where(mask, stat, 0), axis=-1)


def _sum_and_count(values, mask):
    return agg_sum(values, mask), mask.sum(-1).astype(values.dtype)


SUM_PARTS = Parts(lambda values, mask: (agg_sum(values, mask),), lambda stats, mask: _total(stats[0], mask))
MEAN_PARTS = Parts(_sum_and_count,
                   lambda stats, mask: _total(stats[0], mask) / jnp.maximum(_total(stats[1], mask), 1))
MAX_PARTS = Parts(lambda values, mask: (agg_max(values, mask),),
                  lambda stats, mask: jnp.max(jnp.where(mask, stats[0], -jnp.inf), axis=-1))
MIN_PARTS = Parts(lambda values, mask: (agg_min(values, mask),),
                  lambda stats, mask: jnp.min(jnp.where(mask, stats[0], jnp.inf), axis=-1))


@register_aggregator("sum", reference=_aggregator_reference("sum"), unsorted=True, parts=SUM_PARTS)
def agg_sum(values, mask):
    """Sum of the masked values."""
    return jnp.sum(jnp.where(mask, values, 0.0), axis=-1)


@register_aggregator("mean", reference=_aggregator_reference("mean"), unsorted=True, parts=MEAN_PARTS)
def agg_mean(values, mask):
    """Arithmetic mean of the masked values."""
    return agg_sum(values, mask) / _count(mask, values.dtype)


def kth_masked(values, mask, k):
    """The k-th (0-based) masked entry of ``values`` sorted ascending along the last axis.

    values: f[..., N] sorted ascending; mask: bool[..., N]; k: i[...] -> f[...] (-inf where
    there is no k-th masked entry).

    When every row's mask is a prefix (the segment sweep's rows, tier 3's sorted captions) the
    k-th masked entry is entry k: one gather. Otherwise each entry's rank among the masked ones
    is a cumsum along N (slow on XLA:CPU). One ``lax.cond`` picks; both give the same values.
    """
    n = mask.sum(-1)

    def direct():
        at = jnp.clip(k, 0, mask.shape[-1] - 1)[..., None]
        picked = jnp.take_along_axis(values, at, axis=-1)[..., 0]
        return jnp.where((k >= 0) & (k < n), picked, -jnp.inf).astype(values.dtype)

    def ranked():
        position = jnp.cumsum(mask, axis=-1) - 1
        hit = mask & (position == k[..., None])
        return jnp.max(jnp.where(hit, values, -jnp.inf), axis=-1)

    prefix = jnp.all(mask == (jnp.arange(mask.shape[-1]) < n[..., None]))
    return jax.lax.cond(prefix, direct, ranked)


@register_aggregator("median", reference=_aggregator_reference("median"), unsorted=median_any_order)
def agg_median(values, mask):
    """Median of the masked values (mean of the two middle ones for an even count)."""
    n = mask.sum(-1)
    low = kth_masked(values, mask, (n - 1) // 2)
    high = kth_masked(values, mask, n // 2)
    return jnp.where(low == high, low, (low + high) / 2)  # inf stays inf, never inf-inf


def _geomean_stats(values, mask):
    """(zeros, sum of the logs of the others, count) of the masked values, each f[...]."""
    zeros = jnp.sum(mask & (values == 0), axis=-1).astype(values.dtype)
    log_sum = jnp.sum(jnp.where(mask & (values != 0), jnp.log(values), 0.0), axis=-1)  # log outside the select
    return zeros, log_sum, mask.sum(-1).astype(values.dtype)


def _geomean_from(zeros, log_sum, count):
    return jnp.where(zeros > 0, 0.0, jnp.exp(log_sum / jnp.maximum(count, 1))).astype(log_sum.dtype)


GEOMEAN_PARTS = Parts(_geomean_stats, lambda stats, mask: _geomean_from(*(_total(s, mask) for s in stats)))


@register_aggregator("geomean", reference=_aggregator_reference("geomean"), unsorted=True, parts=GEOMEAN_PARTS)
def agg_geomean(values, mask):
    """Geometric mean exp(mean(log x)); 0 when any value is 0 (and +inf stays +inf)."""
    return _geomean_from(*_geomean_stats(values, mask))


@register_aggregator("max", reference=_aggregator_reference("max"), unsorted=True, parts=MAX_PARTS)
def agg_max(values, mask):
    """Largest masked value."""
    return jnp.max(jnp.where(mask, values, -jnp.inf), axis=-1)


@register_aggregator("min", reference=_aggregator_reference("min"), unsorted=True, parts=MIN_PARTS)
def agg_min(values, mask):
    """Smallest masked value."""
    return jnp.min(jnp.where(mask, values, jnp.inf), axis=-1)
