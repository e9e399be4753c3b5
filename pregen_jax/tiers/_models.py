"""The sweep over many models in one call: padded to one shape, vmapped, sharded over devices.

Models usually share their test set (same images, references and strata structure), so one
compiled sweep serves them all; models that differ are padded: images that no stratum holds,
references and positions that the mask leaves out, segments padded to the longest. The
models axis is sharded over a ``Mesh`` of the local devices (one code path for one device or
many: ``shard_map`` gives each device its share of models, which it vmaps over).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..refprobs import RefProbs
from ._segments import Partitions, PartitionShape, SegmentLayout, plan_segments
from ._space import DEFAULT_SPACE, Space
from ._sweep import METHODS, as_partitions, float_dtype, sweep_arrays, sweep_segment_arrays, use_segments

AXIS = "models"


def _pad_ref_probs(ref_probs: RefProbs, images: int, refs: int, positions: int, dtype):
    """f[I', R', T'] arrays padded to [images, refs, positions]. Padding images get one
    one-position reference (probability 1, top choice), so that tiers 1-3 see a valid image;
    no stratum contains them."""
    i, r, t = np.shape(ref_probs.probs)
    probs = np.zeros((images, refs, positions), dtype)
    ranks = np.zeros((images, refs, positions), np.int32)
    mask = np.zeros((images, refs, positions), bool)
    probs[:i, :r, :t] = ref_probs.probs
    ranks[:i, :r, :t] = ref_probs.ranks
    mask[:i, :r, :t] = ref_probs.mask
    probs[i:, 0, 0], mask[i:, 0, 0] = 1.0, True
    return probs, ranks, mask


def _pad_partitions(partitions: Partitions, images: int) -> Partitions:
    ids = partitions.segment_ids
    return Partitions(np.pad(ids, ((0, 0), (0, images - ids.shape[1])), constant_values=-1))


def _segment_inputs(partitions, ref_masks):
    """(layout, stacked index) shared by all models, or None if their partitions differ in
    the number of partitions or segments. Identical runs layouts keep the runs form."""
    if len({p.num_segments for p in partitions}) != 1:
        return None
    plans = [plan_segments(p, m) for p, m in zip(partitions, ref_masks)]
    if all(layout == plans[0][0] and layout.runs is not None for layout, _ in plans):
        return plans[0][0], np.stack([index for _, index in plans])
    lengths = np.max([[s.length for s in layout.images] for layout, _ in plans], axis=0)
    plans = [plan_segments(p, m, lengths=lengths, runs=False) for p, m in zip(partitions, ref_masks)]
    layout = plans[0][0]
    if any(other != layout for other, _ in plans[1:]):  # exactness differs: drop it for all
        layout = SegmentLayout(tuple(PartitionShape(s.segments, s.length, False) for s in layout.images),
                               tuple(PartitionShape(s.segments, s.length, False) for s in layout.captions), None)
    return layout, tuple(np.stack([index[p] for _, index in plans]) for p in range(len(lengths)))


@functools.lru_cache(maxsize=32)
def compiled_model_sweep(space: Space, layout, devices: tuple, batch_size: int | None):
    """``fn(probs, ranks, mask, strata_or_index)`` over a leading models axis, sharded over
    ``devices`` (the models axis must be a multiple of their number). ``layout`` None = mask
    sweep (``strata: bool[M, S, I]``), else the segment sweep with that layout."""
    mesh = Mesh(np.array(devices), (AXIS,))
    one = (functools.partial(sweep_arrays, space) if layout is None
           else functools.partial(sweep_segment_arrays, space, layout))

    def local(*args):  # this device's share of models
        if batch_size is None:
            return jax.vmap(one)(*args)
        return jax.lax.map(lambda a: one(*a), args, batch_size=batch_size)

    spec = PartitionSpec(AXIS)
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=spec, out_specs=spec)), NamedSharding(mesh, spec)


def sweep_models(models: Sequence[RefProbs], strata=None, space: Space = DEFAULT_SPACE, *,
                 method: str = "auto", devices=None, batch_size: int | None = 8) -> list[np.ndarray]:
    """``tiers.sweep`` for many models in one compiled, device-sharded computation.

    Args:
      models: one ``RefProbs`` per model (image, reference and position counts may differ).
      strata: None (all images), one strata for every model (a bool[S, I] numpy array or
        ``Partitions``), or a list or tuple with one per model (each None, a mask or
        ``Partitions``).
      space, method: as ``tiers.sweep``; the segment form is used when every model's strata
        have the same number of partitions and segments, and "auto" chooses it for all.
      devices: the devices to shard the models over (default: all local devices).
      batch_size: models evaluated at once (vmapped) per device, the rest in sequence;
        bounds memory (XLA's buffers are about 36 MB per model at 5,000 images, 600 MB at
        100,000). None = all of the device's share at once. On one CPU device every batch
        size measured the same speed: XLA already spreads one model over the cores.
    Returns:
      One f[S_m, C] per model, equal (up to float rounding order) to ``tiers.sweep`` of it.
    """
    models = list(models)
    if not models:
        raise ValueError("sweep_models needs at least one model")
    for m, model in enumerate(models):
        if not isinstance(model, RefProbs):
            raise TypeError(f"sweep_models: model {m} is a {type(model).__name__}, not a RefProbs")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(strata, (list, tuple)):
        if len(strata) != len(models):
            raise ValueError(f"sweep_models: {len(strata)} strata for {len(models)} models")
        per_model = list(strata)
    else:
        per_model = [strata] * len(models)
    partitions = [as_partitions(s, model.num_images) for s, model in zip(per_model, models)]
    images, refs, positions = (max(np.shape(model.probs)[axis] for model in models) for axis in range(3))
    dtype = float_dtype()
    padded = [_pad_ref_probs(model, images, refs, positions, dtype) for model in models]
    partitions = [_pad_partitions(p, images) for p in partitions]
    ref_masks = [mask.any(-1) for _, _, mask in padded]

    segments = None
    if all(use_segments(p, method) for p in partitions):
        segments = _segment_inputs(partitions, ref_masks)
    if segments is None:
        if method == "segments":
            raise ValueError("sweep_models: method='segments' needs the same number of partitions and segments "
                             "for every model")
        num_strata = max(p.num_strata for p in partitions)
        # Padding strata hold image 0; their rows are dropped below.
        last = np.zeros((num_strata, images), bool)
        last[:, 0] = True
        index = np.stack([np.concatenate([p.mask, last[p.num_strata:]]) for p in partitions])
        layout = None
    else:
        layout, index = segments

    devices = tuple(jax.local_devices() if devices is None else devices)
    fn, sharding = compiled_model_sweep(space, layout, devices, batch_size)
    stacked = [np.stack(arrays) for arrays in zip(*padded)]
    extra = -len(models) % len(devices)  # pad the models axis to a multiple of the devices
    inputs = jax.tree.map(lambda a: np.concatenate([a, np.repeat(a[:1], extra, axis=0)]) if extra else a,
                          (*stacked, index))
    inputs = jax.device_put(inputs, sharding)
    result = np.asarray(fn(*inputs))
    return [result[m, :p.num_strata] for m, p in enumerate(partitions)]
