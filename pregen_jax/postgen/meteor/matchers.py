# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR 1.5's four matchers (exact, stem, synonym, paraphrase) over two token sequences.

Each distinct sentence is analysed once (``Sentence``): its words' Java hash codes (the jar
compares words and stems by ``String.hashCode``, collisions included), stems' hash codes,
WordNet synsets (its own and its base forms'), paraphrase-table ids and the paraphrases that
start at each position. ``candidates`` lists the possible matches of a (test, reference) pair
per reference position, in the order the jar finds them (the beam search's ties depend on it).

Translated from Meteor 1.5's Java matchers (``ExactMatcher``, ``StemMatcher``, ``SynonymMatcher``,
``SynonymDictionary``, ``ParaphraseMatcher``; Michael Denkowski and Alon Lavie, Carnegie Mellon
University), so this file is under their licence, LGPL-2.1-only (docs/licensing.md).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .paraphrase import ParaphraseTable
from .resources import Synonyms, function_words
from .stem import stem

EXACT, STEM, SYNONYM, PARAPHRASE = 0, 1, 2, 3

# WordNet's morphology (the jar's ``morph``): suffix -> replacement, tried in order.
MORPH = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
         ("ies", "y"), ("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
         ("ing", ""), ("er", ""), ("est", ""), ("er", "e"), ("est", "e"))

Match = tuple[int, int, int, int, int]  # (reference start, length, test start, length, stage)


def java_hash(text: str) -> int:
    """``String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed 32-bit int."""
    units = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for k in range(0, len(units), 2):
        h = (31 * h + (units[k] | units[k + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@dataclass(frozen=True)
class Sentence:
    """One normalized sentence's words and what each matcher needs of them."""

    words: tuple[str, ...]
    hashes: tuple[int, ...]
    stem_hashes: tuple[int, ...]
    synsets: tuple[frozenset[int], ...]
    para_ids: tuple[int, ...]
    spans: tuple[tuple[tuple[int, int, int], ...], ...]  # per start: (phrase length, entry range) in the table
    function: tuple[bool, ...]
    starts: dict[int, list[int]]  # paraphrase-table word id -> positions where it occurs
    span_rows: np.ndarray  # ``spans`` as i64[rows, 4]: (start, phrase length, first entry, end entry)


class Analyzer:
    """Builds ``Sentence`` records, each word's features worked out once."""

    def __init__(self, synonyms: Synonyms, table: ParaphraseTable):
        self.synonyms, self.table = synonyms, table
        self.function_words = function_words()
        self.word_features = functools.lru_cache(maxsize=1 << 18)(self._word_features)

    def _word_features(self, word: str) -> tuple[int, int, frozenset[int], int, bool]:
        return (java_hash(word), java_hash(stem(word)), self._synsets(word), self.table.word_id(word),
                java_lower_is_function(word, self.function_words))

    def _synsets(self, word: str) -> frozenset[int]:
        """The word's synsets and its base forms' (irregular forms first, else WordNet's morphology)."""
        synsets_of = self.synonyms.synsets_of
        bases = self.synonyms.bases.get(word)
        if bases is not None:
            return synsets_of(word).union(*map(synsets_of, bases))
        return synsets_of(word) | synsets_of(self._morph(word))

    def _morph(self, word: str) -> str:
        if word.endswith("ss") or len(word.encode("utf-16-le", "surrogatepass")) <= 4:
            return word
        for suffix, replacement in MORPH:
            if word.endswith(suffix):
                base = word[:len(word) - len(suffix)] + replacement
                if base in self.synonyms.lines:
                    return base
        return ""

    def sentence(self, words: tuple[str, ...]) -> Sentence:
        features = [self.word_features(w) for w in words]
        para_ids = tuple(f[3] for f in features)
        rows = self.table.span_rows(para_ids)
        return Sentence(words, tuple(f[0] for f in features), tuple(f[1] for f in features),
                        tuple(f[2] for f in features), para_ids,
                        _per_start(rows, len(words)), tuple(f[4] for f in features), _positions(para_ids), rows)


def _per_start(rows: np.ndarray, words: int) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    spans: list[list[tuple[int, int, int]]] = [[] for _ in range(words)]
    for start, length, first, end in rows.tolist():
        spans[start].append((length, first, end))
    return tuple(map(tuple, spans))


def _positions(ids: tuple[int, ...]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for k, word in enumerate(ids):
        out.setdefault(word, []).append(k)
    return out


def java_lower_is_function(word: str, function_words: frozenset[str]) -> bool:
    return word.lower() in function_words


def candidates(test: Sentence, ref: Sentence, table: ParaphraseTable) -> tuple[list[list[Match]], list[int], list[int]]:
    """(matches starting at each reference position, test coverage, reference coverage): how many
    matches cover each word. Identical sentences get exact matches only (as the jar does)."""
    n1, n2 = len(test.words), len(ref.words)
    found: list[list[Match]] = [[] for _ in range(n2)]
    cover1, cover2 = [0] * n1, [0] * n2

    def add(m: Match) -> None:
        found[m[0]].append(m)
        for k in range(m[3]):
            cover1[m[2] + k] += 1
        for k in range(m[1]):
            cover2[m[0] + k] += 1

    h1, h2 = test.hashes, ref.hashes
    for j in range(n2):
        for i in range(n1):
            if h1[i] == h2[j]:
                add((j, 1, i, 1, EXACT))
    if n1 == n2 and h1 == h2:
        return found, cover1, cover2
    s1, s2 = test.stem_hashes, ref.stem_hashes
    for j in range(n2):
        for i in range(n1):
            if s1[i] == s2[j] and h1[i] != h2[j]:
                add((j, 1, i, 1, STEM))
    for j in range(n2):
        if ref.synsets[j]:
            for i in range(n1):
                if h1[i] != h2[j] and not ref.synsets[j].isdisjoint(test.synsets[i]):
                    add((j, 1, i, 1, SYNONYM))
    _paraphrases(test, ref, table, add)
    return found, cover1, cover2


def _paraphrases(test: Sentence, ref: Sentence, table: ParaphraseTable, add) -> None:
    """Paraphrases of reference phrases found in the test, then of test phrases found in the reference."""
    for j, spans in enumerate(ref.spans):
        for length, first, end in spans:
            for entry in range(first, end):
                words = table.words(entry)
                for i in _occurrences(test.para_ids, test.starts, words):
                    add((j, length, i, len(words), PARAPHRASE))
    for i, spans in enumerate(test.spans):
        for length, first, end in spans:
            for entry in range(first, end):
                words = table.words(entry)
                for j in _occurrences(ref.para_ids, ref.starts, words):
                    add((j, len(words), i, length, PARAPHRASE))


def _occurrences(ids: tuple[int, ...], starts: dict[int, list[int]], words: tuple[int, ...]) -> list[int]:
    """Every start where ``words`` occurs in ``ids`` (``starts``: word id -> its positions; an
    empty phrase occurs everywhere)."""
    k = len(words)
    if k == 0:
        return list(range(len(ids)))
    at = starts.get(words[0])
    if at is None:
        return []
    if k == 1:
        return at
    return [i for i in at if ids[i:i + k] == words]
