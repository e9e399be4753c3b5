"""Order statistics of unsorted rows by radix selection: the median without a sort.

A sort costs the tier-4 sweep most of its time on XLA:CPU (its comparator is called per
comparison), while a median needs only the middle one or two entries. Radix selection finds
the k-th smallest entry of each row bit by bit, from the top: with the entries as
order-preserving unsigned keys, the k-th smallest is the largest key ``v`` with
``count(key < v) <= k``, and each of the key's bits is one count over the row (32 for
float32, 64 for float64). Each count is a compare fused into a sum, so a row costs a few
dozen vectorized passes instead of a sort, and the result is an entry of the row, exactly
what a sort would give.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ._sorting import order_keys, pad_key, values_from_keys

# Each count is summed over chunks of CHUNK entries, then over the chunks: XLA:CPU fuses the
# compare into the first sum only when that sum is this short (a longer one is split into a
# tree of windows, which writes the compare out first).
CHUNK = 8


def _search_keys(values, mask):
    """``f[..., N] -> (i[..., M], bits)``: the floats' order-preserving signed keys (NaN last),
    masked-out entries and the padding to a multiple of CHUNK (M >= N) the largest key."""
    keys = jnp.where(mask, order_keys(values), pad_key(values.dtype))
    pad = -keys.shape[-1] % CHUNK
    if pad:
        keys = jnp.concatenate([keys, jnp.full((*keys.shape[:-1], pad), pad_key(values.dtype), keys.dtype)], axis=-1)
    return keys, 64 if keys.dtype == jnp.int64 else 32


def _signed(keys, bits: int):
    """Unsigned keys (the search's arithmetic) -> the signed keys in the same order (compares of
    signed integers are the cheaper ones on x86)."""
    return jax.lax.bitcast_convert_type(keys ^ keys.dtype.type(1 << (bits - 1)), jnp.int64 if bits == 64 else jnp.int32)


def _largest(unsigned):
    return jnp.array(jnp.iinfo(unsigned).max, unsigned)


def _count(chunks, keep):
    """Sum over each row of ``keep(chunks)`` (bool or i32): i32[...] (chunks: i[..., CHUNK, M/CHUNK],
    each chunk a strided set of CHUNK entries, so the first sum runs along contiguous memory)."""
    per_chunk = jnp.sum(keep(chunks), axis=-2, dtype=jnp.int32)
    return jnp.sum(jax.lax.optimization_barrier(per_chunk), axis=-1)   # keeps the two sums apart


def _schedule(bits: int, parts: int) -> list[int]:
    """The interval widths' thirds (or halves) of a search over ``2**bits`` keys: step i
    tries ``lo + step`` (and ``lo + 2 * step``) and leaves an interval of ``step`` keys."""
    steps, width = [], 1 << bits
    while width > 1:
        steps.append(-(-width // parts))
        width = steps[-1]
    return steps


def kth_keys(chunks, bits: int, k):
    """The k-th (0-based) smallest key of each row, as an unsigned key: u[...] (chunks: the
    signed keys i[..., CHUNK, M/CHUNK]; k: i32[...]).

    The answer is the largest key ``v`` with ``count(key < v) <= k``, searched in an interval
    ``[lo, lo + width)`` that each step cuts in three with two candidates counted in one pass
    (two 16-bit counts packed in one int32: 21 passes for 32 bits), or in two for rows of
    2**16 entries or more (32 passes).
    """
    unsigned = jnp.uint64 if bits == 64 else jnp.uint32
    top = _largest(unsigned)
    packed = chunks.shape[-2] * chunks.shape[-1] < 1 << 16
    ternary = 3 if packed else 2

    def candidate(lo, step):  # lo + step, kept below the largest key (which no valid entry has)
        return lo + jnp.minimum(jnp.asarray(step, unsigned), top - lo)

    def below(first, second=None):  # c < first (bool), or (c < first) + ((c < second) << 16) (i32)
        one = _signed(first, bits)[..., None, None]
        if second is None:
            return lambda c: c < one
        two = _signed(second, bits)[..., None, None]
        return lambda c: (c < one).astype(jnp.int32) + ((c < two).astype(jnp.int32) << 16)

    start = (chunks[..., 0, 0] * 0).astype(unsigned) + (k * 0).astype(unsigned)  # zeros that vary as the inputs do
    lo = jnp.broadcast_to(start, chunks.shape[:-2])
    steps = jnp.array(_schedule(bits, ternary), unsigned)
    return jax.lax.fori_loop(0, len(steps), lambda i, lo: _narrow(chunks, k, lo, steps[i], packed, candidate, below), lo)


def _narrow(chunks, k, lo, step, packed, candidate, below):
    """One step of ``kth_keys``: the interval's new start (u[...])."""
    first = candidate(lo, step)
    if not packed:
        return jnp.where(_count(chunks, below(first)) <= k, first, lo)
    second = candidate(first, step)
    both = _count(chunks, below(first, second))
    return jnp.where(both >> 16 <= k, second, jnp.where(both & 0xFFFF <= k, first, lo))


def middle_pair(values, mask):
    """The two middle masked entries of each row, in any order along the last axis.

    values: f[..., N]; mask: bool[..., N] (at least one True per row). Returns (low, high):
    the ``(n - 1) // 2``-th and ``n // 2``-th smallest masked values (n = masked count; equal
    when n is odd), as a sort would place them (NaN last, -0.0 as +0.0).
    """
    mask = jnp.broadcast_to(mask, values.shape)
    n = mask.sum(-1)
    keys, bits = _search_keys(values, mask)
    # Materialized once: otherwise XLA fuses the keys' making (a gather, in the sweep) into every count.
    keys = jax.lax.optimization_barrier(keys)
    chunks = keys.reshape(*keys.shape[:-1], CHUNK, -1)
    low = kth_keys(chunks, bits, (n - 1) // 2)
    low_signed = _signed(low, bits)
    # The next entry: low again if it repeats, else the smallest key above it.
    at_most = _count(chunks, lambda c: c <= low_signed[..., None, None])
    above = jnp.min(jnp.where(chunks > low_signed[..., None, None], chunks, pad_key(values.dtype)), axis=-2)
    above = jnp.min(jax.lax.optimization_barrier(above), axis=-1)   # as _count: the long min second
    high = jnp.where(at_most > n // 2, low_signed, above)
    return values_from_keys(low_signed, values.dtype), values_from_keys(high, values.dtype)


def median_any_order(values, mask):
    """``agg_median`` for values in any order along the last axis (radix selection, no sort)."""
    low, high = middle_pair(values, mask)
    return jnp.where(low == high, low, (low + high) / 2)  # inf stays inf, never inf-inf
