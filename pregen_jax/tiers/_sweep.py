"""The sweep: every metric of a space on every stratum, as one jit-compiled computation.

Tiers 1-3 depend only on the model's reference probabilities, so they are computed once;
strata differ only in which images tier 4 reduces. Two exact forms of tier 4:

- segments (``sweep_segment_arrays``): the strata as partitions of the images (the spec's 15
  strata are 5 partitions); each stratum is one sorted row of a [segments, length] layout,
  so each image is touched once per partition, and equal-sized segments need no mask; an
  aggregator with ``parts`` (``_parts``) reduces each run of images once for all partitions;
- mask (``sweep_arrays``): any bool[S, I]; each column is sorted once and every stratum's
  mask permuted along, so each image is touched once per stratum.

Both hand every aggregator its values sorted ascending along the last axis with a mask (the
registry's contract), or in any order to the forms registered as order-free. Python loops below run at trace time only (one per tier function or
partition), never per metric, image or stratum.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..refprobs import RefProbs
from ._parts import reduce_by_parts
from ._segments import (
    Partitions,
    SegmentLayout,
    caption_index,
    in_order,
    plan_segments,
    segment_rows,
    segment_rows_any_order,
)
from ._sorting import sort_masked, stable_argsort
from ._space import DEFAULT_SPACE, Space

METHODS = ("auto", "segments", "mask")


def caption_and_image_scores(space: Space, probs, ranks, mask):
    """Tiers 1-3, shared by every stratum.

    Args:
      probs: f[I, R, T]; ranks: i32[I, R, T]; mask: bool[I, R, T].
    Returns:
      caption: f[G, F, I, R] (tier 2 of tier 1); ref_mask: bool[I, R];
      image_scores: f[A, G, F, I], one row per tier-3 aggregator other than ``join``
      (None if there is none).
    """
    ref_mask = mask.any(-1)
    keep = jnp.stack([f.fn(probs, ranks, mask) & mask for f in space.filters])       # [F, I, R, T]
    caption = jnp.stack([g.fn(probs[None], keep, mask[None])                         # [G, F, I, R]
                         for g in space.caption_scores]).astype(probs.dtype)
    per_image = [agg for agg in space.image_aggregators if not agg.is_join]
    if not per_image:
        return caption, ref_mask, None
    caption_sorted, sorted_mask = sort_masked(caption, ref_mask)
    image_scores = jnp.stack([agg.fn(caption_sorted, sorted_mask) for agg in per_image])  # [A, G, F, I]
    return caption, ref_mask, image_scores.astype(probs.dtype)


def _columns(space: Space, per_dataset_agg, num_strata: int):
    """[(over_images f[S, A, G, F] | None, over_captions f[S, G, F] | None)] per tier-4
    function -> f[S, C], tier 4 outermost and tier 1 innermost, as ``space.names``."""
    columns = []
    for over_images, over_captions in per_dataset_agg:
        by_tier3, next_image = [], 0
        for agg in space.image_aggregators:  # restore the space's tier-3 order around join
            if agg.is_join:
                by_tier3.append(over_captions)
            else:
                by_tier3.append(over_images[:, next_image])
                next_image += 1
        columns.append(jnp.stack(by_tier3, axis=1))                                  # [S, T3, G, F]
    return jnp.stack(columns, axis=1).reshape(num_strata, -1)


def _has_join(space: Space) -> bool:
    return any(agg.is_join for agg in space.image_aggregators)


# ---------------------------------------------------------------- tier 4 over a mask


def _sorted_with_mask(values, mask):
    """Sort ``values: f[..., N]`` along N and carry ``mask: bool[S, ..., N]`` along.

    The sort happens once per column; each stratum's mask is only permuted.
    """
    order = stable_argsort(values)
    sorted_values = jnp.take_along_axis(values, order, axis=-1)
    mask = jnp.broadcast_to(mask, mask.shape[:1] + values.shape)
    sorted_mask = jnp.take_along_axis(mask, jnp.broadcast_to(order, mask.shape), axis=-1)
    return jnp.broadcast_to(sorted_values, sorted_mask.shape), sorted_mask


def sweep_arrays(space: Space, probs, ranks, mask, strata):
    """The sweep over any strata mask.

    Args:
      probs: f[I, R, T]; ranks: i32[I, R, T]; mask: bool[I, R, T]; strata: bool[S, I].
    Returns:
      f[S, C] with C = len(space), columns in ``space.names`` order.
    """
    caption, ref_mask, image_scores = caption_and_image_scores(space, probs, ranks, mask)
    images_sorted = image_member = joined_sorted = joined_member = None
    if image_scores is not None:
        images_sorted, image_member = _sorted_with_mask(image_scores, strata[:, None, None, None, :])  # [S, A, G, F, I]
    if _has_join(space):
        joined = caption.reshape(*caption.shape[:2], -1)                                            # [G, F, I*R]
        member = (strata[:, :, None] & ref_mask[None]).reshape(strata.shape[0], 1, 1, -1)
        joined_sorted, joined_member = _sorted_with_mask(joined, member)                           # [S, G, F, I*R]
    results = []
    for dataset_agg in space.dataset_aggregators:
        results.append((None if image_scores is None else dataset_agg.fn(images_sorted, image_member),
                        None if joined_sorted is None else dataset_agg.fn(joined_sorted, joined_member)))
    return _columns(space, results, strata.shape[0])


# ---------------------------------------------------------------- tier 4 over segments


def _reduce_segments(agg_fn, rows):
    """Apply a tier-4 aggregator to each partition's sorted rows: [S, ...] (segment axis first)."""
    return jnp.concatenate([jnp.moveaxis(agg_fn(values, mask), -1, 0) for values, mask in rows])


def sweep_segment_arrays(space: Space, layout: SegmentLayout, probs, ranks, mask, index):
    """The sweep over strata that form partitions (``layout`` and ``index`` from
    ``plan_segments``).

    Args:
      probs: f[I, R, T]; ranks: i32[I, R, T]; mask: bool[I, R, T];
      index: the image order i32[I] when ``layout.runs`` is set, else one i32[K_p, L_p] of
        segment members per partition (-1 = padding).
    Returns:
      f[S, C], S = sum of K_p, strata in (partition, segment) order.
    """
    caption, ref_mask, image_scores = caption_and_image_scores(space, probs, ranks, mask)
    runs = layout.runs
    # Aggregators with ``parts`` reduce each atom of the runs once; the others get rows, and
    # when every one of those takes values in any order (the spec's median), nothing is sorted.
    rowed = [agg for agg in space.dataset_aggregators if agg.parts is None or runs is None]
    any_order = all(agg.unsorted is not None for agg in rowed)
    sources = {}  # "images" / "captions" -> (values in the runs' order or None, their runs, rows or None)
    if image_scores is not None:
        sources["images"] = _tier4_inputs(image_scores, layout.images, runs, index, None, space.dataset_aggregators,
                                          rowed, any_order)
    if _has_join(space):
        sources["captions"] = _tier4_inputs(caption.reshape(*caption.shape[:2], -1), layout.captions,
                                            None if runs is None else runs.scaled(ref_mask.shape[-1]),
                                            caption_index(layout, index, ref_mask), ref_mask.reshape(-1),
                                            space.dataset_aggregators, rowed, any_order)
    results = []
    for dataset_agg in space.dataset_aggregators:
        fn = dataset_agg.unsorted if any_order else dataset_agg.fn
        reduced = {}
        for what, (ordered, source_runs, rows) in sources.items():
            if dataset_agg.parts is not None and source_runs is not None:
                reduced[what] = reduce_by_parts(dataset_agg.parts, *ordered, source_runs)
            else:
                reduced[what] = _reduce_segments(fn, rows)
        results.append((reduced.get("images"), reduced.get("captions")))
    return _columns(space, results, sum(shape.segments for shape in layout.images))


def _tier4_inputs(values, shapes, runs, index, entry_valid, space_aggregators, rowed, any_order):
    """(values in the runs' order and which exist, or None; runs; each partition's rows, or None
    when every aggregator reduces by parts)."""
    parted = len(rowed) < len(space_aggregators)
    ordered = in_order(values, index, entry_valid) if runs is not None and (parted or rowed and any_order) else None
    rows = None
    if rowed:
        rows = (segment_rows_any_order(values, shapes, runs, index, entry_valid, ordered) if any_order
                else segment_rows(values, shapes, runs, index, entry_valid))
    return ordered, runs, rows


# ---------------------------------------------------------------- compiled functions and the public sweep


@functools.lru_cache(maxsize=64)
def compiled_sweep(space: Space):
    """The jit-compiled mask sweep for one space (compiled once per input shape)."""
    return jax.jit(functools.partial(sweep_arrays, space))


@functools.lru_cache(maxsize=64)
def compiled_segment_sweep(space: Space):
    """The jit-compiled segment sweep for one space: ``fn(layout, probs, ranks, mask, index)``,
    compiled once per input shape and layout (``layout`` is static)."""
    return jax.jit(functools.partial(sweep_segment_arrays, space), static_argnums=0)


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


def as_partitions(strata, num_images: int) -> Partitions:
    """None (all images), a bool[S, I] mask or ``Partitions`` -> ``Partitions`` (validated)."""
    if strata is None:
        return Partitions(np.zeros((1, num_images), np.int32))
    if isinstance(strata, Partitions):
        if strata.segment_ids.shape[1] != num_images:
            raise ValueError(f"segment_ids cover {strata.segment_ids.shape[1]} images, the model has {num_images}")
        return strata
    return Partitions.from_mask(check_strata(strata, num_images))


def use_segments(partitions: Partitions, method: str) -> bool:
    """Whether to reduce over segments: always for "segments", never for "mask"; for "auto"
    when every partition's segments have equal sizes (the spec's strata, or no strata) and
    span at most 6 x I entries in all. A segment sweep compiles once per shape and partition
    structure (segment sizes), so "auto" keeps arbitrary masks on the mask sweep, which
    compiles once per shape."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method != "auto":
        return method == "segments"
    equal = all((sizes == sizes[0]).all() for sizes in partitions.segment_sizes())
    return equal and partitions.padded_elements() <= 6 * partitions.num_images


def sweep(ref_probs: RefProbs, strata=None, space: Space = DEFAULT_SPACE, *, method: str = "auto") -> np.ndarray:
    """Every metric of ``space`` on every stratum: ``np.ndarray f[S, C]``.

    Args:
      ref_probs: one model's reference probabilities.
      strata: None (one stratum: all images); a bool[S, I] mask, one row per stratum; or
        ``Partitions`` (segment ids per partition; rows then come in (partition, segment)
        order). A mask's partition structure is found by grouping consecutive disjoint rows.
      space: the tier space; column c of the result is ``space.names[c]``.
      method: "segments" (reduce each partition's segments), "mask" (one masked reduction per
        stratum) or "auto" (segments when each partition's segments have equal sizes, as the
        spec's strata do; see ``use_segments``). Both give the same numbers up to float
        rounding order.

    >>> import numpy as np
    >>> rp = RefProbs.from_lists([[[0.5, 0.5]]], [[[0, 1]]])
    >>> float(sweep(rp)[0, DEFAULT_SPACE.names.index("mean_mean_count_prefix0")])
    1.0
    """
    if not isinstance(ref_probs, RefProbs):
        raise TypeError(f"sweep needs a RefProbs, got {type(ref_probs).__name__}")
    partitions = as_partitions(strata, ref_probs.num_images)
    dtype = float_dtype()
    arrays = (jnp.asarray(ref_probs.probs, dtype), jnp.asarray(ref_probs.ranks, jnp.int32), jnp.asarray(ref_probs.mask))
    if use_segments(partitions, method):
        layout, index = plan_segments(partitions, ref_probs.ref_mask)
        result = compiled_segment_sweep(space)(layout, *arrays, jax.tree.map(jnp.asarray, index))
    else:
        result = compiled_sweep(space)(*arrays, jnp.asarray(partitions.mask))
    return np.asarray(result)
