"""Order-free aggregators reduced once per image instead of once per partition.

The spec's 15 strata are 5 partitions, and every segment of every partition is a run of one
image order; cutting that order at every segment boundary gives "atoms" (the runs' finest
common refinement), and each segment is a union of atoms. An aggregator that can be written
as statistics of pieces of a row, combined per union of pieces (a sum: partial sums added),
registers that form as ``Parts``; the segment sweep then reduces each atom once and combines
the atoms' statistics per segment, so each image is read once for all partitions instead of
once per partition.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

__all__ = ["Parts", "reduce_by_parts"]


@dataclasses.dataclass(frozen=True)
class Parts:
    """An aggregator as statistics of pieces of a row, combined per union of pieces.

    Attributes:
      partial: ``(values: f[..., N], mask: bool[..., N]) -> tuple of f[...]``: statistics of
        the masked values of one piece (values in any order; a piece may have no masked value).
      combine: ``(stats: tuple of f[..., P], mask: bool[..., P]) -> f[...]``: the aggregator
        over the union of P pieces from their statistics (``mask``: the pieces that exist;
        the others hold arbitrary numbers).
    """

    partial: Callable
    combine: Callable


def _atoms_of(spans, atoms) -> np.ndarray:
    """i[K, A_max]: the atoms (indices into ``atoms``) inside each span, -1 padding."""
    inside = [[j for j, (lo, hi) in enumerate(atoms) if a <= lo and hi <= b] for a, b in spans]
    index = np.full((len(spans), max(len(row) for row in inside)), -1, np.int32)
    for k, row in enumerate(inside):
        index[k, :len(row)] = row
    return index


def reduce_by_parts(parts: Parts, ordered, valid, runs):
    """The aggregator over every segment of every partition: f[S, ...] (segment axis first).

    Args:
      parts: the aggregator's ``Parts``.
      ordered: f[..., N], the values in the runs' order; valid: bool[N], the entries that exist.
      runs: ``Runs`` over N (atoms and each partition's spans).
    """
    stats = [parts.partial(ordered[..., a:b], jnp.broadcast_to(valid[a:b], ordered[..., a:b].shape))
             for a, b in runs.atoms]
    stacked = tuple(jnp.stack(column, axis=-1) for column in zip(*stats))            # each f[..., atoms]
    out = []
    for spans in runs.spans:
        index = _atoms_of(spans, runs.atoms)
        pieces = tuple(jnp.take(s, np.maximum(index, 0), axis=-1) for s in stacked)  # each f[..., K, A_max]
        result = parts.combine(pieces, jnp.broadcast_to(index >= 0, pieces[0].shape))
        out.append(jnp.moveaxis(result, -1, 0))
    return jnp.concatenate(out)
