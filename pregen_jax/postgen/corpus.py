"""Candidates and references of many images as arrays: what the array backends share.

Candidates ``c`` (one per scored image) and references ``r`` are strings encoded together
(``text.encode``), references grouped by image. The images whose references are encoded may be
more than the images scored (``idf_from``: CIDEr-D's document frequencies over a whole set,
scores on a subset). N-grams are integer keys (``gram = ((t0 * V + t1) * V + t2) * V + t3``) and
their counts per string come from one sort per order, never a Python dictionary.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .text import Encoded, encode

MAX_ORDER = 4
_LIMIT = 2 ** 62


@dataclasses.dataclass(frozen=True)
class Grams:
    """The distinct n-grams of one order in each string, sorted by (gram, string).

    Attributes:
      gram: i64[E] the n-gram's key; string: i64[E] the string (references first, then candidates);
      count: i64[E] its occurrences in that string.
    """

    gram: np.ndarray
    string: np.ndarray
    count: np.ndarray


@dataclasses.dataclass(frozen=True)
class Corpus:
    """References of ``images`` images and one candidate for each of ``C`` of them.

    Attributes:
      refs: list[str] R reference strings, grouped by image; ref_image: i64[R] their image.
      ref_start, ref_count: i64[images] where each image's references are and how many.
      cands: list[str] C candidate strings; cand_image: i64[C] the image each is scored against.
      images: the number of images whose references are encoded (CIDEr-D's document set).
    """

    refs: list
    ref_image: np.ndarray
    ref_start: np.ndarray
    ref_count: np.ndarray
    cands: list
    cand_image: np.ndarray
    images: int

    @classmethod
    def build(cls, refs_per_image: list[list[str]], cands: list[str], cand_image) -> Corpus:
        """``refs_per_image[i]``: the references of image i; ``cands[c]`` is scored against image ``cand_image[c]``."""
        ref_count = np.fromiter(map(len, refs_per_image), np.int64, len(refs_per_image))
        ref_start = np.zeros(len(ref_count), np.int64)
        np.cumsum(ref_count[:-1], out=ref_start[1:])
        refs = [r for group in refs_per_image for r in group]
        return cls(refs, np.repeat(np.arange(len(ref_count)), ref_count), ref_start, ref_count,
                   list(cands), np.asarray(cand_image, np.int64), len(ref_count))

    @property
    def R(self) -> int:  # noqa: N802 (the size's usual name)
        return len(self.refs)

    @functools.cached_property
    def encoded(self) -> Encoded:
        """References then candidates, split with ``str.split()``."""
        return encode(self.refs + self.cands)

    @functools.cached_property
    def encoded_rouge(self) -> Encoded:
        """References then candidates, split with ``str.split(" ")`` (an empty string is one empty token)."""
        encoded = self.encoded
        if encoded.canonical and (encoded.lengths.size == 0 or encoded.lengths.min() > 0):
            return encoded
        return encode(self.refs + self.cands, empty_token=True)

    @functools.cached_property
    def pair_cand(self) -> np.ndarray:
        """i64[P]: the candidate of each (candidate, reference of its image) pair; ``pair_ref`` the reference."""
        return np.repeat(np.arange(len(self.cands)), self.ref_count[self.cand_image])

    @functools.cached_property
    def pair_ref(self) -> np.ndarray:
        counts = self.ref_count[self.cand_image]
        first = np.zeros(len(counts), np.int64)
        np.cumsum(counts[:-1], out=first[1:])
        return np.arange(counts.sum()) - np.repeat(first - self.ref_start[self.cand_image], counts)

    @functools.cached_property
    def _grams(self) -> dict[int, Grams]:
        return {}

    def grams(self, n: int) -> Grams:
        """The n-grams (order ``n``) of every string, counted per string (worked out once per order)."""
        if n not in self._grams:
            self._grams[n] = self._count_grams(n)
        return self._grams[n]

    def _count_grams(self, n: int) -> Grams:
        encoded = self.encoded
        keys = _gram_keys(encoded, n)
        valid = encoded.position + n <= encoded.lengths[encoded.string]
        gram, string = keys[valid], encoded.string[valid]
        strings = len(encoded.lengths)
        if gram.size and int(gram.max()) >= _LIMIT // max(strings, 1):
            gram = np.unique(gram, return_inverse=True)[1].astype(np.int64)  # dense ids: key * strings fits
        combined, count = np.unique(gram * strings + string, return_counts=True)
        return Grams(combined // strings, combined % strings, count)


def _gram_keys(encoded: Encoded, n: int) -> np.ndarray:
    """i64[T]: the key of the n-gram starting at each token (garbage where it would cross a string)."""
    ids, size = encoded.ids, max(encoded.vocab_size, 1)
    if size ** n >= _LIMIT:  # too many words for one int64: number the (n-1)-grams densely first
        prefix = np.unique(_gram_keys(encoded, n - 1), return_inverse=True)[1].astype(np.int64)
        return prefix * size + _shifted(ids, n - 1)
    keys = ids.copy()
    for k in range(1, n):
        keys = keys * size + _shifted(ids, k)
    return keys


def _shifted(ids: np.ndarray, k: int) -> np.ndarray:
    """``ids`` moved ``k`` to the left, zeros at the end."""
    out = np.zeros_like(ids)
    if k < len(ids):
        out[:len(ids) - k] = ids[k:]
    return out
