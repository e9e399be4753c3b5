"""Sorting floats fast on XLA:CPU: as order-preserving integers.

XLA's CPU sort is several times faster on one integer operand than on floats (whose
comparator handles NaN) or on (key, payload) pairs, so the sweep sorts integer keys and
decodes the sorted keys back into floats: the map is a bijection (up to -0.0 == +0.0 and one
NaN), so no argsort, gather or payload is needed to get sorted values.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

# Sorting networks beat XLA's sort below this many entries per row (the references of an image).
SMALL_SORT = 16


def _int_type(dtype):
    return (jnp.int64, 64) if dtype == jnp.float64 else (jnp.int32, 32)


def pad_key(dtype):
    """The key that sorts after every float key, NaN included (it decodes to a NaN)."""
    return jnp.iinfo(_int_type(dtype)[0]).max


def order_keys(values):
    """``f[..., N] -> i[..., N]``: integers in the same order as the floats (NaN last).

    -0.0 maps to the key of +0.0 and every NaN to the key of one positive NaN, so equal
    floats get equal keys and ``values_from_keys`` inverts the map.
    """
    int_type, bits = _int_type(values.dtype)
    values = jnp.where(values == 0, jnp.zeros((), values.dtype), values)
    values = jnp.where(jnp.isnan(values), jnp.array(jnp.nan, values.dtype), values)
    raw = jax.lax.bitcast_convert_type(values, int_type)
    return raw ^ ((raw >> (bits - 1)) & jnp.iinfo(int_type).max)   # negative floats: reverse order


def values_from_keys(keys, dtype):
    """Inverse of ``order_keys`` (the map flips the same bits both ways)."""
    int_type, bits = _int_type(dtype)
    raw = keys ^ ((keys >> (bits - 1)) & jnp.iinfo(int_type).max)
    return jax.lax.bitcast_convert_type(raw, dtype)


def sort_keys(keys):
    """Sort integer keys along the last axis: a min/max network for short rows, else XLA's sort."""
    n = keys.shape[-1]
    if n > SMALL_SORT:
        return jnp.sort(keys, axis=-1)
    rows = [keys[..., i] for i in range(n)]
    for round_ in range(n):  # odd-even transposition: n rounds sort n entries
        for i in range(round_ % 2, n - 1, 2):
            rows[i], rows[i + 1] = jnp.minimum(rows[i], rows[i + 1]), jnp.maximum(rows[i], rows[i + 1])
    return jnp.stack(rows, axis=-1)


def sort_masked(values, mask):
    """Sort each row's masked entries to the front, ascending (NaN last).

    values: f[..., N]; mask: bool[..., N] (at least one True per row).
    Returns (sorted f[..., N], prefix bool[..., N]): the masked values ascending, then the
    largest of them repeated, so the whole row stays sorted and holds no new values;
    ``prefix`` marks the masked values (the first ``mask.sum(-1)`` entries).
    """
    mask = jnp.broadcast_to(mask, values.shape)
    keys = sort_keys(jnp.where(mask, order_keys(values), pad_key(values.dtype)))
    prefix = jnp.arange(values.shape[-1]) < mask.sum(-1, keepdims=True)
    return values_from_keys(pad_with_last(keys, prefix), values.dtype), prefix


def pad_with_last(sorted_keys, valid):
    """Replace the entries after each row's valid prefix by its last valid key (the largest),
    without a gather: ``valid: bool[..., N]`` is True on a prefix of each sorted row."""
    largest = jnp.max(jnp.where(valid, sorted_keys, jnp.iinfo(sorted_keys.dtype).min), axis=-1, keepdims=True)
    return jnp.where(valid, sorted_keys, largest)


def stable_argsort(values):
    """``jnp.argsort(values, axis=-1, stable=True)``, built from integer sorts.

    Map the floats to order-preserving integers, sort them, take each value's rank by binary
    search (ties share the rank), pack (rank, index) into one integer and sort that. Falls
    back to ``jnp.argsort`` when the pack would overflow.
    """
    n = values.shape[-1]
    int_type, bits = _int_type(values.dtype)
    if bits == 32 and n * n >= 2 ** 31:
        return jnp.argsort(values, axis=-1, stable=True)
    keys = order_keys(values)
    flat_keys = keys.reshape(-1, n)
    rank = jax.vmap(lambda row, k: jnp.searchsorted(row, k, side="left"))(jnp.sort(flat_keys, axis=-1), flat_keys)
    packed = rank.astype(int_type) * n + jnp.arange(n, dtype=int_type)
    return (jnp.sort(packed, axis=-1) % n).astype(jnp.int32).reshape(values.shape)
