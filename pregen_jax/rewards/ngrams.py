"""N-grams of token ids as exact keys without 64-bit types, on the host and on the device.

An n-gram (n <= 4) of ids is two uint32 words: ``hi = (t0 + 1) << 16 | (t1 + 1)``,
``lo = (t2 + 1) << 16 | (t3 + 1)``, a missing position (n < 4) left 0. Ids + 1 keep the end
token (id 0) apart from "no token", so the order is part of the key and one table holds all
four orders, with no hashing and no collision, as long as every id is below 65,535
(``MAX_ID``; checked where ids are concrete, a NaN reward where they are traced). The device never needs jax's x64 mode: keys are
compared word by word (``search``); the host packs them into one uint64 for numpy's sorts.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

MAX_ORDER = 4
MAX_ID = 65_534  # ids + 1 must fit in 16 bits
ENDS = ("row", "always", "never")  # how a row of ids ends (``sentence``)


def check_ids(ids: np.ndarray, source: str, max_id: int = MAX_ID) -> None:
    """A ValueError naming ``source`` where an id is negative or above ``max_id`` (at most ``MAX_ID``)."""
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) > max_id):
        raise ValueError(f"{source}: token ids must lie in 0..{max_id} ({id_limit(max_id)}); "
                         f"found {int(ids.min())}..{int(ids.max())}")


def id_limit(max_id: int) -> str:
    """Why ids stop at ``max_id``: the vocabulary, or the exact n-gram keys."""
    return f"a vocabulary of {max_id + 1}" if max_id < MAX_ID else "exact two-word n-gram keys hold ids under 65,535"


def check_end(end: str) -> None:
    if end not in ENDS:
        raise ValueError(f"end {end!r}: must be one of {', '.join(map(repr, ENDS))}")


def sentence(ids: Sequence[int], pad_id: int, end: str) -> np.ndarray:
    """i64[L]: the words of one id sequence, read by the rule ``end`` (``ENDS``):

    - ``"row"`` (self-critical.pytorch's ``array_to_str``): the ids up to and including the first
      ``pad_id`` (the end token); a sequence with no ``pad_id`` keeps all its ids and has no end token;
    - ``"always"`` (``prepro_ngrams``'s references, ``tokens + ['<eos>']``): the same, with the end
      token appended where the sequence has none;
    - ``"never"``: the ids before the first ``pad_id``, no end token.
    """
    ids = np.asarray(ids, np.int64).reshape(-1)
    ends = np.flatnonzero(ids == pad_id)
    words = ids[:ends[0]] if len(ends) else ids
    if end == "never" or (end == "row" and not len(ends)):
        return words
    return np.append(words, pad_id)


def host_keys(sentences: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every n-gram occurrence of many sentences: (key u64[E] = hi << 32 | lo, sentence i64[E], order i64[E] 1..4)."""
    lengths = np.fromiter(map(len, sentences), np.int64, len(sentences))
    width = int(lengths.max(initial=0))
    tokens = np.zeros((len(sentences), width + MAX_ORDER - 1), np.uint64)  # + 1 per id; 0: no token
    for s, words in enumerate(sentences):
        tokens[s, :len(words)] = np.asarray(words, np.uint64) + np.uint64(1)
    keys, owners, orders = [], [], []
    for n in range(1, MAX_ORDER + 1):
        key = np.zeros((len(sentences), width), np.uint64)
        for k in range(n):  # position k of the gram fills bits 48 - 16 k .. 63 - 16 k
            key |= tokens[:, k:k + width] << np.uint64(48 - 16 * k)
        valid = np.arange(width)[None, :] + n <= lengths[:, None]
        s, _ = np.nonzero(valid)
        keys.append(key[valid])
        owners.append(s)
        orders.append(np.full(len(s), n, np.int64))
    return np.concatenate(keys), np.concatenate(owners), np.concatenate(orders)


def split_key(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """u64[E] -> (hi u32[E], lo u32[E])."""
    return (key >> np.uint64(32)).astype(np.uint32), (key & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def key_of(gram: Sequence[int]) -> int:
    """The uint64 key of one n-gram of ids (1 <= n <= 4)."""
    if not 1 <= len(gram) <= MAX_ORDER:
        raise ValueError(f"an n-gram has 1 to {MAX_ORDER} ids, not {len(gram)}")
    return sum((int(t) + 1) << (48 - 16 * k) for k, t in enumerate(gram))


def sample_lengths(samples: jax.Array, pad_id: int, end: str, width) -> jax.Array:
    """samples: i[B, T] -> i32[B], each row's words as ``sentence`` counts them, reading only its
    first ``width`` (i32 scalar, <= T) positions. ``"always"`` needs position ``width`` to hold
    ``pad_id`` (the appended end token): ``row_ids`` gives rows that do."""
    T = samples.shape[1]  # noqa: N806
    is_end = (samples == pad_id) & (jnp.arange(T)[None, :] < width)
    has_end, first = is_end.any(1), jnp.argmax(is_end, 1)
    if end == "never":
        return jnp.where(has_end, first, width).astype(jnp.int32)
    return jnp.where(has_end, first + 1, width + int(end == "always")).astype(jnp.int32)


def row_ids(samples: jax.Array, pad_id: int, end: str, width) -> jax.Array:
    """samples: i[B, T] -> i[B, T'] with ``pad_id`` at and after position ``width`` (T' = T + 1
    for ``"always"``, whose appended end token sits at position ``width``)."""
    samples = jnp.where(jnp.arange(samples.shape[1])[None, :] < width, samples, pad_id)
    if end == "always":
        samples = jnp.concatenate([samples, jnp.full((samples.shape[0], 1), pad_id, samples.dtype)], 1)
    return samples


def device_keys(samples: jax.Array, lengths: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """samples: i[B, T], lengths: i32[B] -> (hi u32[B, 4, T], lo u32[B, 4, T], valid bool[B, 4, T]):
    the n-gram of order n + 1 starting at each position, and whether it lies within the sentence."""
    B, T = samples.shape  # noqa: N806
    positions = jnp.arange(T)
    tokens = jnp.where(positions[None, :] < lengths[:, None], samples.astype(jnp.uint32) + 1, 0)
    tokens = jnp.concatenate([tokens, jnp.zeros((B, MAX_ORDER - 1), jnp.uint32)], 1)
    t = [tokens[:, k:k + T] for k in range(MAX_ORDER)]
    zero = jnp.zeros_like(t[0])
    hi = [t[0] << 16, t[0] << 16 | t[1], t[0] << 16 | t[1], t[0] << 16 | t[1]]
    lo = [zero, zero, t[2] << 16, t[2] << 16 | t[3]]
    valid = [positions[None, :] + n <= lengths[:, None] for n in range(1, MAX_ORDER + 1)]
    return jnp.stack(hi, 1), jnp.stack(lo, 1), jnp.stack(valid, 1)


def search_keys(table_hi: jax.Array, table_lo: jax.Array, hi: jax.Array, lo: jax.Array, start, stop,
           steps: int) -> tuple[jax.Array, jax.Array]:
    """Binary search of keys (hi, lo) in a table sorted by (hi, lo), within [start, stop) per key.

    table_hi, table_lo: u32[N], N >= 1 (an empty table holds one entry outside every range); hi, lo: u32[...]; start, stop: i32 broadcastable to hi's shape;
    ``steps`` >= log2 of the longest range + 1 -> (index i32[...], found bool[...]). jnp.searchsorted
    reads one 1-D key; this compares the two words lexicographically, so no 64-bit key is needed.
    """
    low = jnp.broadcast_to(jnp.asarray(start, jnp.int32), hi.shape)
    high = jnp.broadcast_to(jnp.asarray(stop, jnp.int32), hi.shape)
    last = max(table_hi.shape[0] - 1, 0)

    def body(_, bounds):  # invariant: the first key >= (hi, lo) lies in [low, high]
        low, high = bounds
        middle = (low + high) // 2
        at = jnp.minimum(middle, last)
        m_hi, m_lo = table_hi[at], table_lo[at]
        below = (m_hi < hi) | ((m_hi == hi) & (m_lo < lo))
        open_ = low < high
        return jnp.where(open_ & below, middle + 1, low), jnp.where(open_ & ~below, middle, high)

    low, _ = jax.lax.fori_loop(0, steps, body, (low, high))
    stop = jnp.broadcast_to(jnp.asarray(stop, jnp.int32), hi.shape)
    at = jnp.minimum(low, last)
    found = (low < stop) & (table_hi[at] == hi) & (table_lo[at] == lo)
    return at, found


def search_steps(longest: int) -> int:
    """Binary-search iterations that settle a range of ``longest`` keys."""
    return max(int(longest), 1).bit_length() + 1
