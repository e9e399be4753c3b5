"""The reference side of a corpus, worked out once and kept: many candidate sets (models) are
scored against the same references, one call each.

A ``References`` holds the references' token ids, their vocabulary and their n-gram counts,
with n-gram keys in a fixed base (``gram = ((t0 * B + t1) * B + t2) * B + t3``) that leaves room
for the candidates' own new words, so that candidates encoded later share the key space. The
last few are kept by content (the tuple of reference strings). Only canonical references
(tokens joined by single spaces, none empty) are kept; anything else takes the general path.
"""
from __future__ import annotations

import dataclasses
from itertools import count, repeat

import numpy as np

from .recent import CACHE
from .text import Encoded, Grams, Grouped, _arrays, grouped, is_canonical


@dataclasses.dataclass
class References:
    """Reference strings as ids (``encoded``), their ``vocab`` and n-gram ``base``; ``grams(n)`` their counts."""

    encoded: Encoded
    vocab: dict
    base: int
    _grams: dict = dataclasses.field(default_factory=dict)
    _sides: dict = dataclasses.field(default_factory=dict)

    def side(self, key, compute):
        """The references' half of a join, kept per ``key`` (order, grouping into images)."""
        if key not in self._sides:
            self._sides[key] = compute()
        return self._sides[key]

    def grams(self, n: int) -> Grouped:
        """The references' n-grams of order ``n``, sorted by (gram, reference), counted, grams numbered."""
        if n not in self._grams:
            counted = count_grams(self.encoded, n, self.base)
            self._grams[n] = grouped(counted.gram, counted.string, counted.count)
        return self._grams[n]

    def encode_candidates(self, cands: list[str]) -> Encoded | None:
        """The candidates' ids in this vocabulary (new words appended); None where they are not
        canonical, hold an empty string or bring more new words than the base leaves room for."""
        text = "\n".join(cands)
        if not cands or not is_canonical(text, len(cands)):
            return None
        lengths = np.fromiter(map(str.count, cands, repeat(" ")), np.int64, len(cands)) + 1
        tokens = text.split()
        if len(tokens) != lengths.sum():
            return None  # an empty candidate
        new = [w for w in dict.fromkeys(tokens) if w not in self.vocab]
        if len(self.vocab) + len(new) >= self.base:
            return None
        index = {**self.vocab, **dict(zip(new, count(len(self.vocab))))} if new else self.vocab
        encoded = _arrays(tokens, lengths, True, index)
        return encoded


def references_of(refs: list[str]) -> References | None:
    """The kept ``References`` of these strings (built on first use); None for non-canonical ones."""
    return CACHE.get(("references", tuple(refs)), lambda: _build(refs))


def _build(refs: list[str]) -> References | None:
    text = "\n".join(refs)
    if not refs or not is_canonical(text, len(refs)):
        return None
    lengths = np.fromiter(map(str.count, refs, repeat(" ")), np.int64, len(refs)) + 1
    tokens = text.split()
    if len(tokens) != lengths.sum():
        return None  # an empty reference
    vocab = dict(zip(dict.fromkeys(tokens), count()))
    base = 1 << max(15, (2 * len(vocab) + 1024).bit_length())
    if base ** 4 >= 2 ** 62:
        return None
    return References(_arrays(tokens, lengths, True, vocab), vocab, base)


def count_grams(encoded: Encoded, n: int, base: int) -> Grams:
    """``Grams`` of order ``n`` of ``encoded``'s strings, keys in ``base`` (a power of two), sorted by
    (gram, string).

    The tokens are in string order, so a stable sort by gram alone leaves each gram's strings in
    order: unigrams below 2 ** 16 words by a radix sort of their ids; else (gram, string) packed
    into one int64 where it fits, else a stable sort of the grams."""
    ids, m = encoded.ids, max(len(encoded.ids) - n + 1, 0)
    gram = ids[:m].copy()  # the key of the n tokens from each position (in place: no temporaries)
    shift = base.bit_length() - 1
    for k in range(1, n):
        gram <<= shift
        gram |= ids[k:k + m]
    string = encoded.string[:m]
    if n > 1:
        valid = encoded.lengths[string] - encoded.position[:m] >= n  # the n-gram stays inside its string
        gram, string = gram[valid], string[valid]
    bits = max(len(encoded.lengths), 1).bit_length()
    if n == 1 and base <= 1 << 16:
        order = np.argsort(gram.astype(np.uint16), kind="stable")
    elif n * shift + bits <= 63:
        gram <<= bits
        gram |= string
        return _counted(gram, bits)
    else:
        order = np.argsort(gram, kind="stable")
    gram, string = gram[order], string[order]
    first = np.empty(len(gram), bool)
    first[:1] = True
    np.not_equal(gram[1:], gram[:-1], out=first[1:])
    first[1:] |= string[1:] != string[:-1]
    at = np.flatnonzero(first)
    return Grams(gram[at], string[at], np.diff(at, append=len(gram)))


def _counted(keys: np.ndarray, bits: int) -> Grams:
    """``Grams`` of ``keys`` (i64[E] ``gram << bits | string``; sorted in place): each distinct key once,
    with how often it occurs (``np.unique(keys, return_counts=True)`` without its copies)."""
    keys.sort()
    first = np.empty(len(keys), bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    at = np.flatnonzero(first)
    combined = keys[at]
    return Grams(combined >> bits, combined & ((1 << bits) - 1), np.diff(at, append=len(keys)))


def concatenate(refs: Encoded, cands: Encoded) -> Encoded:
    """One ``Encoded`` of references then candidates (the candidates' ids already in the references' vocabulary)."""
    return Encoded(np.concatenate([refs.ids, cands.ids]),
                   np.concatenate([refs.string, cands.string + len(refs.lengths)]),
                   np.concatenate([refs.position, cands.position]),
                   np.concatenate([refs.lengths, cands.lengths]),
                   np.concatenate([refs.starts, cands.starts + len(refs.ids)]),
                   max(refs.vocab_size, cands.vocab_size), refs.canonical and cands.canonical)
