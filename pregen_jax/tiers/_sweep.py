"""The sweep: every metric of a space on every stratum, as one jit-compiled computation.

Tiers 1-3 depend only on the model's reference probabilities, so they are computed once;
strata differ only in which images tier 4 reduces, which is a mask. Python loops below run
at trace time only (one per tier function), never per metric, image or stratum.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..refprobs import RefProbs
from ._space import DEFAULT_SPACE, Space


def stable_argsort(values):
    """``jnp.argsort(values, axis=-1, stable=True)``, built from integer sorts.

    XLA's CPU sort is several times faster on one integer operand than on floats or on
    (key, index) pairs, so: map the floats to order-preserving integers, sort them, take each
    value's rank by binary search (ties share the rank), pack (rank, index) into one integer
    and sort that. Falls back to ``jnp.argsort`` when the pack would overflow int32.
    """
    n = values.shape[-1]
    wide = values.dtype == jnp.float64
    int_type, bits = (jnp.int64, 64) if wide else (jnp.int32, 32)
    if not wide and n * n >= 2 ** 31:
        return jnp.argsort(values, axis=-1, stable=True)
    values = jnp.where(values == 0, jnp.zeros((), values.dtype), values)  # -0.0 ties with +0.0
    raw = jax.lax.bitcast_convert_type(values, int_type)
    keys = raw ^ ((raw >> (bits - 1)) & jnp.iinfo(int_type).max)   # negative floats: reverse order
    flat_keys = keys.reshape(-1, n)
    rank = jax.vmap(lambda row, k: jnp.searchsorted(row, k, side="left"))(jnp.sort(flat_keys, axis=-1), flat_keys)
    packed = rank.astype(int_type) * n + jnp.arange(n, dtype=int_type)
    return (jnp.sort(packed, axis=-1) % n).astype(jnp.int32).reshape(values.shape)


def _sorted_with_mask(values, mask):
    """Sort ``values: f[..., N]`` along N and carry ``mask: bool[S, ..., N]`` along.

    The sort happens once per column; each stratum's mask is only permuted, so every
    aggregator sees its values sorted ascending (the registry's documented contract).
    """
    order = stable_argsort(values)
    sorted_values = jnp.take_along_axis(values, order, axis=-1)
    mask = jnp.broadcast_to(mask, mask.shape[:1] + values.shape)
    sorted_mask = jnp.take_along_axis(mask, jnp.broadcast_to(order, mask.shape), axis=-1)
    return jnp.broadcast_to(sorted_values, sorted_mask.shape), sorted_mask


def sweep_arrays(space: Space, probs, ranks, mask, strata):
    """Pure function behind ``sweep``.

    Args:
      probs: f[I, R, T]; ranks: i32[I, R, T]; mask: bool[I, R, T]; strata: bool[S, I].
    Returns:
      f[S, C] with C = len(space), columns in ``space.names`` order.
    """
    ref_mask = mask.any(-1)                                                   # [I, R]
    keep = jnp.stack([f.fn(probs, ranks, mask) & mask for f in space.filters])  # [F, I, R, T]
    caption = jnp.stack([g.fn(probs[None], keep, mask[None])                  # [G, F, I, R]
                         for g in space.caption_scores]).astype(probs.dtype)

    per_image = [agg for agg in space.image_aggregators if not agg.is_join]
    caption_sorted, ref_mask_sorted = _sorted_with_mask(caption, ref_mask[None])
    caption_sorted, ref_mask_sorted = caption_sorted[0], ref_mask_sorted[0]   # [G, F, I, R]
    image_scores = jnp.stack([agg.fn(caption_sorted, ref_mask_sorted) for agg in per_image])  # [A, G, F, I]
    images_sorted, image_member = _sorted_with_mask(                          # [S, A, G, F, I]
        image_scores, strata[:, None, None, None, :])

    joined = caption.reshape(*caption.shape[:2], -1)                          # [G, F, I*R]
    joined_member = (strata[:, :, None] & ref_mask[None]).reshape(strata.shape[0], 1, 1, -1)
    joined_sorted, joined_member = _sorted_with_mask(joined, joined_member)   # [S, G, F, I*R]

    columns = []                                                              # per tier-4 fn: [S, A3, G, F]
    for dataset_agg in space.dataset_aggregators:
        over_images = dataset_agg.fn(images_sorted, image_member)             # [S, A, G, F]
        over_captions = dataset_agg.fn(joined_sorted, joined_member)          # [S, G, F]
        by_tier3, next_image = [], 0
        for agg in space.image_aggregators:  # restore the space's tier-3 order around join
            if agg.is_join:
                by_tier3.append(over_captions)
            else:
                by_tier3.append(over_images[:, next_image])
                next_image += 1
        columns.append(jnp.stack(by_tier3, axis=1))
    # [S, T4, T3, G, F] -> [S, C]: tier 4 outermost, tier 1 innermost, as space.names.
    return jnp.stack(columns, axis=1).reshape(strata.shape[0], -1)


@functools.lru_cache(maxsize=64)
def compiled_sweep(space: Space):
    """The jit-compiled sweep for one space (compiled once per input shape)."""
    return jax.jit(functools.partial(sweep_arrays, space))


def float_dtype():
    """float64 when ``jax_enable_x64`` is on, float32 otherwise."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def check_strata(strata, num_images: int) -> np.ndarray:
    """Validate ``strata: bool[S, I]`` (one row per stratum, each with at least one image)."""
    strata = np.asarray(strata)
    if strata.ndim == 1:
        strata = strata[None]
    if strata.ndim != 2 or strata.shape[1] != num_images:
        raise ValueError(f"strata must be bool[strata, images] with {num_images} images, got shape {strata.shape}")
    if strata.dtype != np.bool_:
        if not np.isin(strata, (0, 1)).all():
            raise ValueError("strata must be a boolean mask (True = image in the stratum)")
        strata = strata.astype(bool)
    empty = ~strata.any(1)
    if empty.any():
        raise ValueError(f"stratum {int(np.argmax(empty))} has no images")
    return strata


def sweep(ref_probs: RefProbs, strata=None, space: Space = DEFAULT_SPACE) -> np.ndarray:
    """Every metric of ``space`` on every stratum: ``np.ndarray f[S, C]``.

    Args:
      ref_probs: one model's reference probabilities.
      strata: bool[S, I], one row per stratum (a subset of images); None = all images.
      space: the tier space; column c of the result is ``space.names[c]``.

    >>> import numpy as np
    >>> rp = RefProbs.from_lists([[[0.5, 0.5]]], [[[0, 1]]])
    >>> float(sweep(rp)[0, DEFAULT_SPACE.names.index("mean_mean_count_prefix0")])
    1.0
    """
    if not isinstance(ref_probs, RefProbs):
        raise TypeError(f"sweep needs a RefProbs, got {type(ref_probs).__name__}")
    if strata is None:
        strata = np.ones((1, ref_probs.num_images), bool)
    strata = check_strata(strata, ref_probs.num_images)
    dtype = float_dtype()
    result = compiled_sweep(space)(jnp.asarray(ref_probs.probs, dtype), jnp.asarray(ref_probs.ranks, jnp.int32),
                                   jnp.asarray(ref_probs.mask), jnp.asarray(strata))
    return np.asarray(result)
