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

from .text import Encoded, Grams, Grouped, _shifted, encode, grouped

MAX_ORDER = 4
_LIMIT = 2 ** 62


@dataclasses.dataclass(frozen=True)
class Joined:
    """The n-grams of one order split into references and candidates, and joined on (gram, image).

    Attributes:
      r_ref, r_tf: i32[Er] reference entries (sorted by gram, then reference): the reference, the count;
      group: i32[Er] each reference entry's index among the distinct reference grams;
      c_cand: i64[Ec] candidate entries (sorted by gram, then candidate); c_tf: i32[Ec] their counts.
      df: i64[G] the number of images whose references hold each distinct gram.
      run_start, run_end: i32[U] the entries of each distinct (gram, image), a contiguous run.
      c_df: i32[Ec] the df of each candidate entry's gram (0: in no reference);
      c_run: i32[Ec] the run of the candidate's (gram, image), -1 where its image's references lack it;
      c_group: i32[Ec] the distinct reference gram of each candidate entry (-1: in no reference).
    """

    r_ref: np.ndarray
    r_tf: np.ndarray
    group: np.ndarray
    c_cand: np.ndarray
    c_tf: np.ndarray
    df: np.ndarray
    run_start: np.ndarray
    run_end: np.ndarray
    c_df: np.ndarray
    c_run: np.ndarray
    c_group: np.ndarray


@dataclasses.dataclass(frozen=True)
class Corpus:
    """References of ``images`` images and one candidate for each of ``C`` of them.

    Attributes:
      refs: list[str] R reference strings, grouped by image; ref_image: i64[R] their image.
      ref_start, ref_count: i64[images] where each image's references are and how many.
      cands: list[str] C candidate strings; cand_image: i64[C] the image each is scored against.
      images: the number of images whose references are encoded (CIDEr-D's document set).
      kept: use the kept reference side (``references.references_of``) where the strings allow.
    """

    refs: list
    ref_image: np.ndarray
    ref_start: np.ndarray
    ref_count: np.ndarray
    cands: list
    cand_image: np.ndarray
    images: int
    kept: bool = False

    @classmethod
    def build(cls, refs_per_image: list[list[str]], cands: list[str], cand_image, kept: bool = False) -> Corpus:
        """``refs_per_image[i]``: the references of image i; ``cands[c]`` is scored against image ``cand_image[c]``."""
        ref_count = np.fromiter(map(len, refs_per_image), np.int64, len(refs_per_image))
        ref_start = np.zeros(len(ref_count), np.int64)
        np.cumsum(ref_count[:-1], out=ref_start[1:])
        refs = [r for group in refs_per_image for r in group]
        return cls(refs, np.repeat(np.arange(len(ref_count)), ref_count), ref_start, ref_count,
                   list(cands), np.asarray(cand_image, np.int64), len(ref_count), kept)

    @property
    def R(self) -> int:  # noqa: N802 (the size's usual name)
        return len(self.refs)

    @functools.cached_property
    def _kept(self):
        """(the kept references, the candidates in their vocabulary), or None: the general path."""
        if not self.kept:
            return None
        from .references import references_of
        references = references_of(self.refs)
        cands = references.encode_candidates(self.cands) if references is not None else None
        return None if cands is None else (references, cands)

    @property
    def encoded(self) -> Encoded:
        """References then candidates, split with ``str.split()``: with kept references, joined anew at
        each call (not kept: 70 MB at 40,504 images, which only ROUGE-L reads whole)."""
        if self._kept is not None:
            from .references import concatenate
            return concatenate(self._kept[0].encoded, self._kept[1])
        return self._encoded

    @functools.cached_property
    def _encoded(self) -> Encoded:
        return encode(self.refs + self.cands)

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        """i64[R + C]: the tokens of each reference, then of each candidate (``encoded.lengths``)."""
        if self._kept is not None:
            return np.concatenate([self._kept[0].encoded.lengths, self._kept[1].lengths])
        return self._encoded.lengths

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
    def _memo(self) -> dict:
        return {}

    def once(self, key, compute):
        """``compute()``, worked out once for this corpus under ``key``: what several metrics, or
        several calls, read (n-gram counts and joins, BLEU's counts)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def reference_side(self, key, compute):
        """``compute()``, a function of the references and their grouping into images alone: kept with
        the kept references under ``key`` (with this grouping), so later corpora on them reuse it."""
        if self._kept is None:
            return compute()
        return self._kept[0].side((key, self.ref_count.tobytes()), compute)

    def joined(self, n: int) -> Joined:
        """The n-grams of order ``n`` joined between candidates and references (worked out once per order)."""
        return self.once(("joined", n), lambda: _join(self, n, *self._count_grams(n)))

    def _count_grams(self, n: int) -> tuple[Grouped, Grams]:
        """(the references' n-grams of order ``n``, the candidates' (strings numbered from 0)), each
        sorted by (gram, string) and counted; the references' kept where they are."""
        if self._kept is not None:
            from .references import count_grams
            references, cands = self._kept
            return references.grams(n), count_grams(cands, n, references.base)
        encoded = self.encoded
        keys = _gram_keys(encoded, n)
        valid = encoded.position + n <= encoded.lengths[encoded.string]
        gram, string = keys[valid], encoded.string[valid]
        strings = len(encoded.lengths)
        if gram.size and int(gram.max()) >= _LIMIT // max(strings, 1):
            gram = np.unique(gram, return_inverse=True)[1].astype(np.int64)  # dense ids: key * strings fits
        combined, count = np.unique(gram * strings + string, return_counts=True)
        gram, string = combined // strings, combined % strings
        is_ref = string < self.R  # sorted by (gram, string): each part stays sorted
        return (grouped(gram[is_ref], string[is_ref], count[is_ref]),
                Grams(gram[~is_ref], string[~is_ref] - self.R, count[~is_ref]))


def _join(corpus: Corpus, n: int, refs: Grouped, cands: Grams) -> Joined:
    c_gram, c_cand, c_tf = cands.gram, cands.string, cands.count
    distinct = refs.distinct
    df, run_bounds, run_key = corpus.reference_side(n, lambda: _ref_side(corpus, refs))  # kept with kept references
    c_df = np.zeros(len(c_gram), np.int32)  # i32: kept for every order until the corpus goes (20 MB less at 40,504 images)
    c_run = np.full(len(c_gram), -1, np.int32)
    c_group = np.full(len(c_gram), -1, np.int32)
    if distinct.size and c_gram.size:
        at = np.searchsorted(distinct, c_gram).clip(max=len(distinct) - 1)   # sorted needles: fast
        known = distinct[at] == c_gram
        c_group = np.where(known, at, -1).astype(np.int32)
        c_df = np.where(known, df[at], 0).astype(np.int32)
        wanted = at * corpus.images + corpus.cand_image[c_cand]
        run = np.searchsorted(run_key, wanted).clip(max=len(run_key) - 1)
        c_run = np.where(known & (run_key[run] == wanted), run, -1).astype(np.int32)
    return Joined(refs.string, refs.count, refs.group, c_cand, c_tf.astype(np.int32), df, run_bounds[:-1],
                  run_bounds[1:], c_df, c_run, c_group)


def _ref_side(corpus: Corpus, refs: Grouped) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The references' half of ``_join``: (i64[G] document frequencies, i32[U + 1] where each distinct
    (gram, image) run starts and the end, i64[U] each run's key ``group * images + image``)."""
    image = corpus.ref_image[refs.string]
    new_run = np.empty(len(image), bool)
    new_run[:1] = True
    np.not_equal(refs.group[1:], refs.group[:-1], out=new_run[1:])
    new_run[1:] |= image[1:] != image[:-1]
    run_start = np.flatnonzero(new_run)
    run_group = refs.group[run_start]
    df = np.bincount(run_group, minlength=len(refs.distinct)).astype(np.int64)
    run_key = run_group.astype(np.int64) * corpus.images + image[run_start]
    return df, np.append(run_start, len(image)).astype(np.int32), run_key


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
