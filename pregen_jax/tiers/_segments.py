"""Strata as partitions of the images, and each stratum's values as one sorted row.

The spec's 15 strata are 5 partitions: for k = 1..5, k disjoint blocks of the images (a
remainder left out). A tier-4 reduction written over a bool[S, I] mask touches every image
once per stratum (15 times); written over the partitions' segments it touches each image once
per partition (5 times), and needs no mask at all when every segment of a partition has the
same size. Each segment becomes one row of a [segments, length] layout, sorted ascending, so
every registered aggregator still receives ``(values sorted along the last axis, mask)``.

Sorting dominates on CPU, so when every segment is a run of one common image order (the
spec's blocks are runs of the images sorted by CIDEr) the images are cut at every segment
boundary into "atoms"; each atom is sorted once, and a segment made of several atoms sorts
the concatenation of their sorted runs, which XLA's merge sort does at about half the cost
of unsorted input. Other partitions gather and sort each segment directly.

Host side (numpy): ``Partitions`` (segment ids) and ``plan_segments`` (the static layout a
compiled sweep specialises on, and its index arrays). Device side (jax): ``segment_rows``.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ._sorting import order_keys, pad_key, pad_with_last, sort_keys, values_from_keys

# The first sort cuts the atoms into pieces of about N / PIECES entries (at least MIN_PIECE), so
# that one sort op of short rows sorts them all with little padding.
PIECES, MIN_PIECE = 32, 16

__all__ = ["PartitionShape", "Partitions", "SegmentLayout", "in_order", "order_keys", "plan_segments", "segment_rows",
           "segment_rows_any_order"]


@dataclasses.dataclass(frozen=True)
class Partitions:
    """Strata given as partitions of the images.

    Attributes:
      segment_ids: i32[P, I]; ``segment_ids[p, i]`` is the segment (0 .. K_p - 1) of image
        i in partition p, or -1 where image i is in no segment of partition p.

    The strata are the segments, partition by partition: stratum order is (p, segment).
    Every segment 0 .. K_p - 1 of a partition must hold at least one image.
    """

    segment_ids: np.ndarray

    def __post_init__(self):
        ids = np.asarray(self.segment_ids)
        if ids.ndim == 1:
            ids = ids[None]
        if ids.ndim != 2 or ids.shape[1] == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"segment_ids must be integers [partitions, images], got {ids.dtype} {ids.shape}")
        if (ids < -1).any():
            raise ValueError("segment_ids must be -1 (no segment) or a segment number 0, 1, ...")
        for p, row in enumerate(ids):
            used = np.bincount(row[row >= 0], minlength=1)
            if not (row >= 0).any() or (used == 0).any():
                missing = 0 if not (row >= 0).any() else int(np.argmin(used))
                raise ValueError(f"partition {p}: segment {missing} has no images "
                                 "(segments are numbered 0 .. K-1, each non-empty)")
        object.__setattr__(self, "segment_ids", ids.astype(np.int32))

    @classmethod
    def from_mask(cls, strata) -> Partitions:
        """Group consecutive pairwise-disjoint rows of ``strata: bool[S, I]`` into partitions.

        The strata keep their order (``from_mask(m).mask == m``). A row that overlaps the
        rows before it starts a new partition, so any mask works; the spec's 15 strata (k
        blocks for k = 1..5, in that order) give 5 partitions.

        >>> Partitions.from_mask([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]]).segment_ids
        array([[ 0,  0,  0,  0],
               [ 0,  0,  1, -1]], dtype=int32)
        """
        strata = np.asarray(strata, bool)
        groups, covered = [[]], np.zeros(strata.shape[1], bool)
        for s, row in enumerate(strata):
            if groups[-1] and (covered & row).any():
                groups.append([])
                covered[:] = False
            groups[-1].append(s)
            covered |= row
        ids = np.full((len(groups), strata.shape[1]), -1, np.int32)
        for p, rows in enumerate(groups):
            for k, s in enumerate(rows):
                ids[p, strata[s]] = k
        return cls(ids)

    @property
    def num_images(self) -> int:
        return self.segment_ids.shape[1]

    @property
    def num_segments(self) -> tuple[int, ...]:
        """K_p per partition."""
        return tuple(int(row.max()) + 1 for row in self.segment_ids)

    @property
    def num_strata(self) -> int:
        return sum(self.num_segments)

    @property
    def mask(self) -> np.ndarray:
        """bool[S, I], the strata in (partition, segment) order."""
        return np.concatenate([row[None] == np.arange(k)[:, None]
                               for row, k in zip(self.segment_ids, self.num_segments)])

    def segment_sizes(self) -> list[np.ndarray]:
        """Images per segment, one i[K_p] per partition."""
        return [np.bincount(row[row >= 0], minlength=k) for row, k in zip(self.segment_ids, self.num_segments)]

    def padded_elements(self) -> int:
        """Entries of the [segments, longest segment] layouts, summed over partitions."""
        return sum(len(sizes) * int(sizes.max()) for sizes in self.segment_sizes())


@dataclasses.dataclass(frozen=True)
class PartitionShape:
    """Static shape of one partition's layout: ``segments`` rows of ``length`` entries.

    ``exact``: every row is full (no padding), so the aggregators get an all-True mask.
    """

    segments: int
    length: int
    exact: bool


@dataclasses.dataclass(frozen=True)
class Runs:
    """Segments as runs of one image order: ``spans[p][k]`` is the [start, stop) range of
    segment k of partition p in that order; ``atoms`` cut the order at every span boundary
    (ranges that no segment covers are left out)."""

    atoms: tuple[tuple[int, int], ...]
    spans: tuple[tuple[tuple[int, int], ...], ...]

    def scaled(self, factor: int) -> Runs:
        """The same runs over ``factor`` entries per image (the joined caption scores)."""
        return Runs(tuple((a * factor, b * factor) for a, b in self.atoms),
                    tuple(tuple((a * factor, b * factor) for a, b in part) for part in self.spans))

    def pieces(self, size: int):
        """Atoms cut into pieces of at most ``width = size / PIECES`` entries (at least
        MIN_PIECE), so that one sort of [pieces, width] sorts every atom.

        Returns (positions i[pieces, width] into the order, -1 = padding; slot i[size]: where
        each order position lands in the flattened pieces, 0 where no atom covers it).
        """
        width = max(MIN_PIECE, -(-size // PIECES))
        rows = [np.arange(a, min(a + width, stop)) for start, stop in self.atoms for a in range(start, stop, width)]
        positions = np.full((len(rows), width), -1, np.int64)
        slot = np.zeros(size, np.int64)
        for r, row in enumerate(rows):
            positions[r, :len(row)] = row
            slot[row] = r * width + np.arange(len(row))
        return positions, slot


@dataclasses.dataclass(frozen=True)
class SegmentLayout:
    """What a compiled segment sweep specialises on (hashable): one shape per partition for
    the image scores and one for the joined caption scores (R entries per image), and the
    runs when the segments are runs of one image order (then the index array is that order,
    i32[I]; otherwise it is one i32[K_p, L_p] of segment members per partition)."""

    images: tuple[PartitionShape, ...]
    captions: tuple[PartitionShape, ...]
    runs: Runs | None


def _find_runs(partitions: Partitions):
    """(order i32[I], Runs) if every segment is a run of one image order, else None.

    The order sorts images by their segment in each partition (no segment = after the
    last); for blocks cut from one ranking (the spec's strata) every segment is then a run.
    """
    ids = partitions.segment_ids
    keys = np.where(ids >= 0, ids, np.array(partitions.num_segments)[:, None])
    order = np.lexsort(keys[::-1]).astype(np.int32)
    cuts, spans = set(), []
    for row, k in zip(ids[:, order], partitions.num_segments):
        spans.append([])
        for segment in range(k):
            where = np.flatnonzero(row == segment)
            start, stop = int(where[0]), int(where[-1]) + 1
            if stop - start != len(where):
                return None
            spans[-1].append((start, stop))
            cuts |= {start, stop}
    cuts = sorted(cuts)
    atoms = tuple((lo, hi) for lo, hi in zip(cuts, cuts[1:])
                  if any(a <= lo and hi <= b for part in spans for a, b in part))
    return order, Runs(atoms, tuple(tuple(part) for part in spans))


def plan_segments(partitions: Partitions, ref_mask: np.ndarray, lengths=None, runs: bool = True):
    """The static layout and the index array(s) of one model's partitions.

    Args:
      partitions: the strata; ``ref_mask: bool[I, R]``, the references that exist.
      lengths: optional per-partition row lengths to pad to (at least the longest segment),
        so that several models share one layout.
      runs: use the runs form when the segments allow it (and no row needs padding beyond
        its partition's longest segment).
    Returns:
      (SegmentLayout, index): ``index`` is the image order i32[I] for the runs form, else a
      tuple of i32[K_p, L_p] per partition (the images of each segment, then -1 padding).
    """
    ref_mask = np.asarray(ref_mask, bool)
    sizes = partitions.segment_sizes()
    if lengths is None:
        lengths = [int(s.max()) for s in sizes]
    shapes, caption_shapes, members = [], [], []
    for p, (row, k) in enumerate(zip(partitions.segment_ids, partitions.num_segments)):
        length = int(lengths[p])
        if length < sizes[p].max():
            raise ValueError(f"partition {p}: row length {length} is below its longest segment ({sizes[p].max()})")
        index = np.full((k, length), -1, np.int32)
        for segment in range(k):
            images = np.flatnonzero(row == segment)
            index[segment, :len(images)] = images
        exact = bool((sizes[p] == length).all())
        shapes.append(PartitionShape(k, length, exact))
        caption_shapes.append(PartitionShape(k, length * ref_mask.shape[1], exact and bool(ref_mask[row >= 0].all())))
        members.append(index)
    found = _find_runs(partitions) if runs and list(lengths) == [int(s.max()) for s in sizes] else None
    if found is None:
        return SegmentLayout(tuple(shapes), tuple(caption_shapes), None), tuple(members)
    order, plan = found
    return SegmentLayout(tuple(shapes), tuple(caption_shapes), plan), order


def _caption_members(members, ref_mask):
    """Image members i32[K, L] (-1 = padding) -> joined-caption members i32[K, L*R] into the
    flattened [I*R] axis, -1 for padding and for references that do not exist."""
    num_refs = ref_mask.shape[-1]
    flat = members[..., None] * num_refs + jnp.arange(num_refs)
    exists = (members[..., None] >= 0) & ref_mask[jnp.maximum(members, 0)]
    return jnp.where(exists, flat, -1).reshape(*members.shape[:-1], -1)


def _finish_rows(keys, valid, shape: PartitionShape, dtype):
    """Sorted key rows i[..., K, L] (padding sorted last) -> (values, mask); padding entries
    repeat the row's largest value, so every row stays sorted and holds no new values."""
    if shape.exact:
        values = values_from_keys(keys, dtype)
        return values, jnp.ones(values.shape, bool)
    prefix = jnp.arange(shape.length) < valid.sum(-1, keepdims=True)  # valid entries sorted first
    values = values_from_keys(pad_with_last(keys, prefix), dtype)
    return values, jnp.broadcast_to(prefix, values.shape)


def _member_rows(keys, members, shape: PartitionShape, dtype):
    """Gather each segment's members (i32[K, L], -1 padding) from keys i[..., N] and sort."""
    rows = jnp.take(keys, jnp.maximum(members, 0), axis=-1)
    valid = members >= 0
    if not shape.exact:
        rows = jnp.where(valid, rows, pad_key(dtype))
    return _finish_rows(sort_keys(rows), valid, shape, dtype)


def _span_rows(merged, valid, spans, shape: PartitionShape, dtype):
    """One partition's rows from the atom-sorted keys ``merged: i[..., N]`` (each atom a
    sorted run; ``valid: bool[N]`` likewise): slice (or gather) each span, pad, sort."""
    starts = [a for a, _ in spans]
    adjacent = all(b - a == shape.length for a, b in spans) and starts == list(range(starts[0], spans[-1][1], shape.length))
    if adjacent:  # the spec's blocks: one slice and a reshape
        stop = starts[0] + shape.segments * shape.length
        rows = merged[..., starts[0]:stop].reshape(*merged.shape[:-1], shape.segments, shape.length)
        row_valid = valid[starts[0]:stop].reshape(shape.segments, shape.length)
    else:
        index = np.full((shape.segments, shape.length), -1, np.int32)
        for k, (a, b) in enumerate(spans):
            index[k, :b - a] = np.arange(a, b)
        rows = jnp.where(index >= 0, jnp.take(merged, np.maximum(index, 0), axis=-1), pad_key(dtype))
        row_valid = (index >= 0) & valid[np.maximum(index, 0)]
    return _finish_rows(sort_keys(rows), row_valid, shape, dtype)


def segment_rows(values, layout_shapes, runs: Runs | None, index, entry_valid=None):
    """Every partition's segments as sorted rows.

    Args:
      values: f[..., N] (N = images, or images x references for joined caption scores).
      layout_shapes: one ``PartitionShape`` per partition.
      runs: ``Runs`` over N, or None.
      index: with runs, the order i32[N] of the entries; else one i32[K_p, L_p] of members
        per partition (-1 padding).
      entry_valid: optional bool[N], entries that exist (missing references are False).
    Returns:
      One (values f[..., K_p, L_p], mask bool[..., K_p, L_p]) per partition: each row's
      valid entries ascending (NaN last), then padding the mask leaves out.
    """
    dtype = values.dtype
    keys = order_keys(values)
    if entry_valid is not None:
        keys = jnp.where(entry_valid, keys, pad_key(dtype))
    if runs is None:
        return [_member_rows(keys, m, shape, dtype) for m, shape in zip(index, layout_shapes)]
    positions, slot = runs.pieces(index.shape[-1])
    filled = positions >= 0
    at = index[np.maximum(positions, 0)]                                         # [pieces, width] entries
    pieces = sort_keys(jnp.where(filled, jnp.take(keys, at, axis=-1), pad_key(dtype)))
    valid = filled if entry_valid is None else filled & entry_valid[at]
    # Missing entries sort last in their piece, so its valid entries become a prefix.
    valid = jnp.arange(positions.shape[1]) < valid.sum(-1, keepdims=True)
    merged = jnp.take(pieces.reshape(*pieces.shape[:-2], -1), slot, axis=-1)  # [..., N] in the order
    merged_valid = valid.reshape(-1)[slot]
    # A segment of several pieces is their sorted runs side by side: sorting that merges them.
    return [_span_rows(merged, merged_valid, spans, shape, dtype) for spans, shape in zip(runs.spans, layout_shapes)]


def take_last(values, index):
    """``jnp.take(values, index, axis=-1)`` as one gather of whole rows' entries, so that the
    result is laid out row by row (XLA:CPU otherwise lays the gathered axis outermost and every
    reader strides across it). values: f[..., N]; index: i32[M] -> f[..., M]."""
    rows = values.reshape(-1, values.shape[-1])
    at = (jnp.arange(rows.shape[0], dtype=jnp.int32)[:, None] * rows.shape[1] + index[None, :]).reshape(-1)
    return rows.reshape(-1)[at].reshape(*values.shape[:-1], index.shape[-1])


def in_order(values, index, entry_valid=None):
    """The entries in the runs' order, materialized once (else XLA repeats the gather in every
    reduction): (f[..., N], bool[N] the entries that exist). values: f[..., N]; index: i32[N]."""
    ordered = jax.lax.optimization_barrier(take_last(values, index))
    valid = jnp.ones(index.shape, bool) if entry_valid is None else jax.lax.optimization_barrier(entry_valid[index])
    return ordered, valid


def segment_rows_any_order(values, layout_shapes, runs: Runs | None, index, entry_valid=None, ordered=None):
    """``segment_rows`` without the sort, for aggregators that take values in any order:
    each segment's members (padding repeats a member; the mask leaves it out). ``ordered``:
    ``in_order(values, index, entry_valid)`` when the caller has it already (runs only)."""
    if runs is None:
        rows = []
        for members in index:
            valid = members >= 0
            if entry_valid is not None:
                valid = valid & entry_valid[jnp.maximum(members, 0)]
            part = jnp.take(values, jnp.maximum(members, 0), axis=-1)
            rows.append((part, jnp.broadcast_to(valid, part.shape)))
        return rows
    merged, valid = ordered if ordered is not None else in_order(values, index, entry_valid)
    rows = []
    for spans, shape in zip(runs.spans, layout_shapes):
        at = np.full((shape.segments, shape.length), spans[0][0], np.int64)  # padding: a member, masked out
        for k, (a, b) in enumerate(spans):
            at[k, :b - a] = np.arange(a, b)
        starts = [a for a, _ in spans]
        if (at == np.arange(starts[0], starts[0] + at.size).reshape(at.shape)).all():  # the spec's blocks
            stop = starts[0] + at.size
            part = merged[..., starts[0]:stop].reshape(*merged.shape[:-1], *at.shape)
            part_valid = valid[starts[0]:stop].reshape(at.shape)
        else:
            part, part_valid = jnp.take(merged, at, axis=-1), valid[at]
            part_valid = part_valid & (np.arange(shape.length) < np.array([b - a for a, b in spans])[:, None])
        rows.append((part, jnp.broadcast_to(part_valid, part.shape)))
    return rows


def caption_index(layout: SegmentLayout, index, ref_mask):
    """The index array(s) of the joined caption scores [I*R] from the images' ones."""
    num_refs = ref_mask.shape[-1]
    if layout.runs is None:
        return tuple(_caption_members(m, ref_mask) for m in index)
    return (index[:, None] * num_refs + jnp.arange(num_refs)).reshape(-1)
