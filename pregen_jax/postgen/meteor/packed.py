# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""Many sentences packed at once into the compiled search's arrays.

``Packer.pack(sentences)`` gives what ``fast.concatenate_sentences([fast.pack(analyzer.sentence(s),
table) for s in sentences])`` gives, without a Python object per sentence: each distinct word's
features (``Analyzer.word_features``: Java hash, stem hash, synsets, paraphrase-table id, function
flag) are worked out once and kept as arrays; the sentences' words become one array of word ids,
and one compiled pass gathers the features, walks the paraphrase table from every start
(``paraphrase._span_rows``) and lays out each sentence's slices. At COCO's size (243,000 distinct
sentences) the per-sentence objects had cost about five times the alignment itself.

The paraphrase walk it calls follows Meteor 1.5's Java ``ParaphraseTransducer`` (Michael Denkowski
and Alon Lavie, Carnegie Mellon University), so this file is under their licence, LGPL-2.1-only
(docs/licensing.md).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from . import paraphrase
from .jit import compiled
from .matchers import Analyzer

ARRAYS = 10  # hashes, stem hashes, synset offsets, synsets, paraphrase ids, function flags, then the
# paraphrase entries: offsets per start, reference phrase lengths, word offsets, words (fast.pack's order)


class Packer:
    """Sentences (tuples of normalized words) to the search's arrays; word features kept by word.
    ``pack`` may be called from several threads (the kept features under a lock, the compiled pass
    outside it)."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self.ids: dict[str, int] = {}  # word -> its row in the feature arrays, in order of first sight
        self._features: list[tuple] = []  # (hash, stem hash, sorted synsets, table id, function) per word
        self._arrays: tuple[np.ndarray, ...] | None = None
        self._lock = threading.Lock()

    def _word_arrays(self) -> tuple[np.ndarray, ...]:
        """(hash, stem hash, synset offsets, synsets, table id, function, and the table walk's first step:
        ``ParaphraseTable.first_words``) per word, as arrays."""
        if self._arrays is None:
            hashes, stems, synsets, table_ids, function = zip(*self._features) if self._features else ((),) * 5
            offsets = np.zeros(len(synsets) + 1, np.int64)
            np.cumsum([len(s) for s in synsets], out=offsets[1:])
            table_ids = np.array(table_ids, np.int64)
            self._arrays = (np.array(hashes, np.int64), np.array(stems, np.int64), offsets,
                            np.fromiter(itertools.chain.from_iterable(synsets), np.int64, int(offsets[-1])),
                            table_ids, np.array(function, np.bool_), *self.analyzer.table.first_words(table_ids))
        return self._arrays

    def pack(self, sentences: list[tuple[str, ...]]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """(offsets i64[sentences + 1, 10], the 10 arrays): sentence ``s``'s array ``k`` is
        ``data[k][offsets[s, k]:offsets[s + 1, k]]``, as ``fast.concatenate_sentences`` lays them out."""
        return self.packed(*self.prepare(sentences))

    def prepare(self, sentences: list[tuple[str, ...]]) -> tuple:
        """``pack``'s Python part (the sentences' word ids, new words' features worked out): its
        arguments to ``packed``, the compiled part."""
        with self._lock:
            new = set(itertools.chain.from_iterable(sentences)).difference(self.ids)
            for word in sorted(new):  # sorted: the ids do not depend on set order
                hashed, stem_hash, synsets, table_id, function = self.analyzer.word_features(word)
                self._features.append((hashed, stem_hash, tuple(sorted(synsets)), table_id, function))
                self.ids[word] = len(self._features) - 1
                self._arrays = None
            flat = np.fromiter(map(self.ids.__getitem__, itertools.chain.from_iterable(sentences)), np.int64)
            arrays = self._word_arrays()
        return flat, np.fromiter(map(len, sentences), np.int64, len(sentences)), arrays

    def packed(self, flat: np.ndarray, lengths: np.ndarray, arrays: tuple) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """``pack``'s result from ``prepare``'s: compiled code only (no GIL held)."""
        table = self.analyzer.table
        return _pack(flat, lengths, *arrays, table.max_phrase, table.keys, table.prefix_keys,
                     table.phrase_offsets, table.phrase_ids, table.entry_offsets, table.para_offsets, table.para_ids)


@compiled
def _pack(flat, lengths, w_hash, w_stem, w_syn_offsets, w_syn, w_table, w_function, w_first_prefix, w_first_key,
          max_phrase, keys, prefix_keys, phrase_offsets, phrase_ids, entry_offsets, para_offsets, para_ids):
    """``Packer.pack``'s arrays from the sentences' word ids ``flat`` (i64[words]) and ``lengths``
    (i64[sentences]). Pass one walks the table from every start of every sentence into one array of
    rows (``paraphrase._span_rows_into``; ``ParaphraseTable.gather``'s entries, one sentence after
    another), sizing every slice; pass two lays the slices out. No array is made per sentence: at
    COCO's size those had cost three times the walk."""
    count = len(lengths)
    table_ids = w_table[flat]
    first_prefix, first_key = w_first_prefix[flat], w_first_key[flat]
    rows = np.empty((2 * len(flat) + 16, 4), np.int64)  # (start, phrase length, first entry, end entry): grown
    used = 0
    row_start = np.zeros(count + 1, np.int64)  # sentence s's rows: rows[row_start[s]:row_start[s + 1]]
    sizes = np.zeros((count, ARRAYS), np.int64)
    start = 0
    for s in range(count):
        n = lengths[s]
        rows, used = paraphrase._span_rows_into(table_ids[start:start + n], first_prefix[start:start + n],
                                                first_key[start:start + n], max_phrase, keys, prefix_keys,
                                                phrase_offsets, phrase_ids, entry_offsets, rows, used)
        row_start[s + 1] = used
        entries, entry_words, synsets = 0, 0, 0
        for r in range(row_start[s], used):
            entries += rows[r, 3] - rows[r, 2]
            entry_words += para_offsets[rows[r, 3]] - para_offsets[rows[r, 2]]
        for q in range(start, start + n):
            synsets += w_syn_offsets[flat[q] + 1] - w_syn_offsets[flat[q]]
        sizes[s, 0] = sizes[s, 1] = sizes[s, 4] = sizes[s, 5] = n
        sizes[s, 2] = sizes[s, 6] = n + 1
        sizes[s, 3] = synsets
        sizes[s, 7] = entries
        sizes[s, 8] = entries + 1
        sizes[s, 9] = entry_words
        start += n
    offsets = np.zeros((count + 1, ARRAYS), np.int64)
    for s in range(count):
        for k in range(ARRAYS):
            offsets[s + 1, k] = offsets[s, k] + sizes[s, k]
    syn_offsets = np.zeros(offsets[count, 2], np.int64)
    synsets = np.empty(offsets[count, 3], np.int64)
    per_start = np.zeros(offsets[count, 6], np.int64)
    phrase_lengths = np.empty(offsets[count, 7], np.int64)
    word_offsets = np.zeros(offsets[count, 8], np.int64)
    entry_words = np.empty(offsets[count, 9], np.int64)
    start = 0
    for s in range(count):
        n = lengths[s]
        base2, at3 = offsets[s, 2], offsets[s, 3]
        for q in range(n):  # each word's synsets, sorted, one after another; offsets local to the sentence
            word = flat[start + q]
            for x in range(w_syn_offsets[word], w_syn_offsets[word + 1]):
                synsets[at3] = w_syn[x]
                at3 += 1
            syn_offsets[base2 + q + 1] = at3 - offsets[s, 3]
        o = offsets  # the sentence's entries as ParaphraseTable.gather lays them out, in its slices
        paraphrase._entries_into(rows, row_start[s], row_start[s + 1], para_offsets, para_ids,
                                 per_start[o[s, 6]:o[s + 1, 6]], phrase_lengths[o[s, 7]:o[s + 1, 7]],
                                 word_offsets[o[s, 8]:o[s + 1, 8]], entry_words[o[s, 9]:o[s + 1, 9]])
        start += n
    data = (w_hash[flat], w_stem[flat], syn_offsets, synsets, table_ids, w_function[flat], per_start,
            phrase_lengths, word_offsets, entry_words)
    return offsets, data
