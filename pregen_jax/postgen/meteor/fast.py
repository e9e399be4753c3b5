# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""The pair alignment of ``tests/meteor_oracle/align.py`` compiled with numba: the same matches,
beam and statistics over integer arrays (a sentence's features packed once by ``pack``), for
sentences of any length (word sets are bit masks of as many 64-bit words as needed). The one
search the package runs; tests hold it to the Python oracle and to the jar.

A compiled form of the oracle's (align.py's) translation of Meteor 1.5's Java ``Aligner`` and ``Stage`` (Michael
Denkowski and Alon Lavie, Carnegie Mellon University), so under their licence, LGPL-2.1-only
(docs/licensing.md).
"""
from __future__ import annotations

import numpy as np

from . import scoring
from .jit import compiled
from .matchers import Sentence
from .paraphrase import ParaphraseTable

BEAM = 40
WEIGHTS = np.array(scoring.ALIGN_WEIGHTS)  # the beam's ranking weights, not the score's
# a path's columns: weighted test and reference matches, chunks, next reference position, end of the
# last match in the test, distance, its last node in the match tree; then the test and reference
# words used, as bit masks (USED1: as many int64 words as the longer sentence needs, then USED2's)
M1, M2, CHUNK, IDX, LAST_END, DISTANCE, NODE, USED1 = range(8)


def pack(sentence: Sentence, table: ParaphraseTable) -> tuple:
    """A sentence's features as arrays: hashes, stem hashes, synsets (CSR, sorted), paraphrase ids,
    function flags, and its paraphrase entries (per start: phrase length and paraphrase ids, CSR)."""
    syn_offsets = np.zeros(len(sentence.words) + 1, np.int64)
    syn_offsets[1:] = np.cumsum([len(s) for s in sentence.synsets])
    synsets = np.array([x for s in sentence.synsets for x in sorted(s)], np.int64)
    return (np.array(sentence.hashes, np.int64), np.array(sentence.stem_hashes, np.int64), syn_offsets, synsets,
            np.array(sentence.para_ids, np.int64), np.array(sentence.function, np.bool_),
            *table.gather(len(sentence.words), sentence.span_rows))


@compiled(inline=True)
def _shares(a, a0, a1, b, b0, b1) -> bool:
    """Two sorted ranges a[a0:a1], b[b0:b1] have a common element."""
    while a0 < a1 and b0 < b1:
        if a[a0] == b[b0]:
            return True
        if a[a0] < b[b0]:
            a0 += 1
        else:
            b0 += 1
    return False


@compiled
def _candidates(t, r):
    """Matches (rows: ref start, length, test start, length, stage) in the jar's order per ref start."""
    h1, s1, so1, sy1, p1, _, eo1, el1, ew1, w1 = t
    h2, s2, so2, sy2, p2, _, eo2, el2, ew2, w2 = r
    n1, n2 = len(h1), len(h2)
    # at most: a match per (test, reference) word and stage, a paraphrase entry per position
    out = np.empty((3 * n1 * n2 + eo2[n2] * n1 + eo1[n1] * n2, 5), np.int64)
    count = 0
    for j in range(n2):
        for i in range(n1):
            if h1[i] == h2[j]:
                _put(out, count, j, 1, i, 1, 0)
                count += 1
    identical = n1 == n2
    if identical:
        for k in range(n1):
            if h1[k] != h2[k]:
                identical = False
                break
    if not identical:
        for j in range(n2):
            for i in range(n1):
                if s1[i] == s2[j] and h1[i] != h2[j]:
                    _put(out, count, j, 1, i, 1, 1)
                    count += 1
        for j in range(n2):
            for i in range(n1):
                if h1[i] != h2[j] and _shares(sy1, so1[i], so1[i + 1], sy2, so2[j], so2[j + 1]):
                    _put(out, count, j, 1, i, 1, 2)
                    count += 1
        # a phrase can occur in a sentence only if its first word does: a 64-bit set of the sentence's
        # word ids (mod 64) skips the scan for most paraphrase entries (about 67 a sentence)
        held1, held2 = _held(p1), _held(p2)
        for j in range(n2):
            for e in range(eo2[j], eo2[j + 1]):
                k0, k1 = ew2[e], ew2[e + 1]
                if k1 > k0 and not (held1 >> (w2[k0] & 63)) & 1:
                    continue
                for i in range(n1):
                    ok = True
                    for k in range(k1 - k0):
                        if i + k == n1 or p1[i + k] != w2[k0 + k]:
                            ok = False
                            break
                    if ok:
                        _put(out, count, j, el2[e], i, k1 - k0, 3)
                        count += 1
        for i in range(n1):
            for e in range(eo1[i], eo1[i + 1]):
                k0, k1 = ew1[e], ew1[e + 1]
                if k1 > k0 and not (held2 >> (w1[k0] & 63)) & 1:
                    continue
                for j in range(n2):
                    ok = True
                    for k in range(k1 - k0):
                        if j + k == n2 or p2[j + k] != w1[k0 + k]:
                            ok = False
                            break
                    if ok:
                        _put(out, count, j, k1 - k0, i, el1[e], 3)
                        count += 1
    return _by_ref_start(out, count, n2)


@compiled(inline=True)
def _by_ref_start(rows, count, n2):
    """``rows[:count]`` (i64[count, 5]) ordered by reference start (column 0, in [0, n2)), rows of
    equal start in their order: a counting sort (the same order as a stable argsort, without
    compiling numba's mergesort: seconds on a first run)."""
    at = np.zeros(n2 + 1, np.int64)
    for k in range(count):
        at[rows[k, 0] + 1] += 1
    for j in range(n2):
        at[j + 1] += at[j]
    out = np.empty((count, 5), np.int64)
    for k in range(count):
        d = at[rows[k, 0]]
        at[rows[k, 0]] = d + 1
        for c in range(5):
            out[d, c] = rows[k, c]
    return out


@compiled(inline=True)
def _held(ids) -> np.uint64:
    """The bits ``id mod 64`` of ``ids``, set (a superset test of membership)."""
    held = np.uint64(0)
    for k in range(len(ids)):
        held |= np.uint64(1) << np.uint64(ids[k] & 63)
    return held


@compiled(inline=True)
def _put(out, row, a, b, c, d, e):
    out[row, 0], out[row, 1], out[row, 2], out[row, 3], out[row, 4] = a, b, c, d, e


@compiled(inline=True)
def _free(path, base, start, length) -> bool:
    """No bit of [start, start + length) is set in the mask at ``path[base:]``."""
    for q in range(start, start + length):
        if (path[base + q // 64] >> (q % 64)) & 1:
            return False
    return True


@compiled(inline=True)
def _copy(target, source):
    """``target[:] = source`` (1-D, same length) as a loop: numba compiles a slice assignment with its
    shape-mismatch message (seconds of string code on a first run)."""
    for q in range(len(source)):
        target[q] = source[q]


@compiled(inline=True)
def _mark(path, base, start, length):
    for q in range(start, start + length):
        path[base + q // 64] |= np.int64(1) << (q % 64)


@compiled
def _search(m, n1, n2, weights):
    """The beam search of ``align.best_alignment`` (the oracle) over candidate rows ``m``; the best
    path's rows."""
    first = np.zeros(n2 + 1, np.int64)
    for k in range(len(m)):
        first[m[k, 0] + 1] += 1
    for j in range(n2):
        first[j + 1] += first[j]
    cover1 = np.zeros(max(n1, 1), np.int64)
    cover2 = np.zeros(max(n2, 1), np.int64)
    for k in range(len(m)):
        for q in range(m[k, 3]):
            cover1[m[k, 2] + q] += 1
        for q in range(m[k, 1]):
            cover2[m[k, 0] + q] += 1
    words = max(n1, n2, 1) // 64 + 1
    used1, used2 = USED1, USED1 + words
    start = np.zeros(USED1 + 2 * words, np.int64)
    start[LAST_END], start[NODE] = -1, -1
    fixed = np.empty(n2 + 1, np.int64)  # not np.full: one more numba function to compile
    for j in range(n2 + 1):
        fixed[j] = -1
    for j in range(n2):
        if first[j + 1] - first[j] == 1:
            k = first[j]
            ok = True
            for q in range(m[k, 1]):
                ok = ok and cover2[j + q] == 1
            for q in range(m[k, 3]):
                ok = ok and cover1[m[k, 2] + q] == 1
            if ok:
                fixed[j] = k
                _mark(start, used2, j, m[k, 1])
                _mark(start, used1, m[k, 2], m[k, 3])
    widest = 0
    for j in range(n2):
        widest = max(widest, first[j + 1] - first[j])
    buffers = np.empty((2, BEAM * (widest + 2), len(start)), np.int64)  # the paths, two buffers in turn
    paths = buffers[0]
    keys, ranks = np.empty(buffers.shape[1], np.int64), np.empty(buffers.shape[1], np.int64)  # _ranked's room
    _copy(paths[0], start)
    alive = 1
    parent = np.empty(len(start), np.int64)
    # the matches each path took, as a tree: node -> (match row, parent node); a match is taken at
    # most once per path alive at its position, so BEAM nodes per candidate bound the tree
    node_match = np.empty(BEAM * (len(m) + 1), np.int64)
    node_parent = np.empty(BEAM * (len(m) + 1), np.int64)
    nodes = np.zeros(1, np.int64)
    for current in range(n2 + 1):
        order = _ranked(paths, alive, keys, ranks)
        nxt = buffers[(current + 1) % 2]
        count = 0
        for rank in range(min(BEAM, alive)):
            _copy(parent, paths[order[rank]])
            if current == n2:
                if parent[LAST_END] != -1:
                    parent[CHUNK] += 1
                _copy(nxt[count], parent)
                count += 1
                continue
            if not _free(parent, used2, current, 1):
                if current < parent[IDX]:
                    _copy(nxt[count], parent)
                    count += 1
                elif fixed[parent[IDX]] >= 0:
                    k = fixed[parent[IDX]]
                    _take(parent, m, k, weights, node_match, node_parent, nodes)
                    parent[DISTANCE] += abs(m[k, 0] - m[k, 2])
                    _copy(nxt[count], parent)
                    count += 1
                continue
            for k in range(first[current], first[current + 1]):
                if not (_free(parent, used2, m[k, 0], m[k, 1]) and _free(parent, used1, m[k, 2], m[k, 3])):
                    continue
                new = nxt[count]
                _copy(new, parent)
                _mark(new, used2, m[k, 0], m[k, 1])
                _mark(new, used1, m[k, 2], m[k, 3])
                _take(new, m, k, weights, node_match, node_parent, nodes)
                parent[DISTANCE] += abs(m[k, 0] - m[k, 2])
                count += 1
            if parent[LAST_END] != -1:
                parent[CHUNK] += 1
                parent[LAST_END] = -1
            parent[IDX] += 1
            _copy(nxt[count], parent)
            count += 1
        if count == 0:
            _copy(nxt[0], paths[order[0]])
            count = 1
        paths, alive = nxt, count
    best = paths[_ranked(paths, alive, keys, ranks)[0]]
    taken = 0
    node = best[NODE]
    while node >= 0:
        taken += 1
        node = node_parent[node]
    rows = np.empty(taken, np.int64)
    node = best[NODE]
    for q in range(taken):
        rows[q] = node_match[node]
        node = node_parent[node]
    out = np.empty((taken, 5), np.int64)
    for q in range(taken):  # by reference start (distinct: a path's matches cover disjoint words), by
        k = rows[q]  # insertion, rather than compiling numba's argsort
        p = q
        while p > 0 and out[p - 1, 0] > m[k, 0]:
            for c in range(5):
                out[p, c] = out[p - 1, c]
            p -= 1
        for c in range(5):
            out[p, c] = m[k, c]
    return out


@compiled(inline=True)
def _ranked(paths, alive, key, order):
    """Path order, best first, into ``order[:alive]`` (``key``: room for as many keys): more weighted
    matches, then fewer chunks, then less distance; ties keep their order (a stable sort, as
    Java's). Few paths are alive at a time: an insertion sort in place, no array made."""
    for p in range(alive):
        key[p] = (-(paths[p, M1] + paths[p, M2]) * (np.int64(1) << 42) + paths[p, CHUNK] * (np.int64(1) << 21)
                  + paths[p, DISTANCE])
        order[p] = p
        q = p
        while q > 0 and key[order[q - 1]] > key[p]:  # strictly greater: an equal key stays behind (stable)
            order[q] = order[q - 1]
            q -= 1
        order[q] = p
    return order


@compiled(inline=True)
def _take(path, m, k, weights, node_match, node_parent, nodes):
    w = weights[m[k, 4]]
    path[M1] = np.int64(path[M1] + m[k, 3] * w)  # Java's int += double: truncation toward zero
    path[M2] = np.int64(path[M2] + m[k, 1] * w)
    if path[LAST_END] != -1 and m[k, 2] != path[LAST_END]:
        path[CHUNK] += 1
    path[IDX] = m[k, 0] + m[k, 1]
    path[LAST_END] = m[k, 2] + m[k, 3]
    node = nodes[0]
    node_match[node], node_parent[node] = k, path[NODE]
    path[NODE] = node
    nodes[0] = node + 1


@compiled(inline=True)
def _stats(t, r, weights):
    n1, n2 = len(t[0]), len(r[0])
    matches = _search(_candidates(t, r), n1, n2, weights)
    f1, f2 = t[5], r[5]
    row = np.zeros(23)
    row[0], row[1] = n1, n2
    for k in range(n1):
        row[2] += f1[k]
    for k in range(n2):
        row[3] += f2[k]
    chunks, last_end, position = 0, -1, 0
    for q in range(len(matches)):
        j, length, i, match_length, stage = (matches[q, 0], matches[q, 1], matches[q, 2], matches[q, 3],
                                             matches[q, 4])
        for k in range(match_length):
            row[4 + 4 * stage + (2 if f1[i + k] else 0)] += 1
        for k in range(length):
            row[5 + 4 * stage + (2 if f2[j + k] else 0)] += 1
        if j > position and last_end != -1:
            chunks += 1
            last_end = -1
        if last_end != -1 and i != last_end:
            chunks += 1
        position, last_end = j + length, i + match_length
        row[21] += match_length
        row[22] += length
    row[20] = chunks + (1 if last_end != -1 else 0)
    return row


@compiled
def _batch(tests, refs, offsets, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, weights):
    """Statistics f64[pairs * 23] (row after row) and scores f64[pairs] of sentence pairs (``tests``,
    ``refs``: indices into the sentences concatenated by ``concatenate_sentences``). Every float
    array is made one way (``np.zeros(n)``): numba compiles each way of making one apart."""
    rows = np.zeros(len(tests) * 23)
    scores = np.zeros(len(tests))
    for p in range(len(tests)):
        a, b = tests[p], refs[p]
        t = (d0[offsets[a, 0]:offsets[a + 1, 0]], d1[offsets[a, 1]:offsets[a + 1, 1]],
             d2[offsets[a, 2]:offsets[a + 1, 2]], d3[offsets[a, 3]:offsets[a + 1, 3]],
             d4[offsets[a, 4]:offsets[a + 1, 4]], d5[offsets[a, 5]:offsets[a + 1, 5]],
             d6[offsets[a, 6]:offsets[a + 1, 6]], d7[offsets[a, 7]:offsets[a + 1, 7]],
             d8[offsets[a, 8]:offsets[a + 1, 8]], d9[offsets[a, 9]:offsets[a + 1, 9]])
        r = (d0[offsets[b, 0]:offsets[b + 1, 0]], d1[offsets[b, 1]:offsets[b + 1, 1]],
             d2[offsets[b, 2]:offsets[b + 1, 2]], d3[offsets[b, 3]:offsets[b + 1, 3]],
             d4[offsets[b, 4]:offsets[b + 1, 4]], d5[offsets[b, 5]:offsets[b + 1, 5]],
             d6[offsets[b, 6]:offsets[b + 1, 6]], d7[offsets[b, 7]:offsets[b + 1, 7]],
             d8[offsets[b, 8]:offsets[b + 1, 8]], d9[offsets[b, 9]:offsets[b + 1, 9]])
        row = _stats(t, r, weights)
        for k in range(23):
            rows[23 * p + k] = row[k]
        scores[p] = scoring.row_score(row)
    return rows, scores


def concatenate_sentences(sentences: list[tuple]) -> tuple:
    """``pack``-ed sentences as one set of arrays: (offsets i64[sentences + 1, 10], the 10 arrays)."""
    lengths = np.array([[len(a) for a in s] for s in sentences], np.int64).reshape(len(sentences), 10)
    offsets = np.zeros((len(sentences) + 1, 10), np.int64)
    np.cumsum(lengths, axis=0, out=offsets[1:])
    kinds = (np.int64,) * 5 + (np.bool_,) + (np.int64,) * 4
    data = tuple(np.concatenate([s[k] for s in sentences]).astype(kinds[k], copy=False) if sentences
                 else np.zeros(0, kinds[k]) for k in range(10))
    return offsets, data


def pair_stats_batch(tests: np.ndarray, refs: np.ndarray, sentences: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """(f64[pairs, 23] statistics, f64[pairs] scores) of the pairs (indices into ``sentences``)."""
    return packed_pair_stats(tests, refs, *concatenate_sentences(sentences))


def packed_pair_stats(tests: np.ndarray, refs: np.ndarray, offsets: np.ndarray,
                      data: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(f64[pairs, 23] statistics, f64[pairs] scores) of the pairs (indices into sentences laid out
    as ``concatenate_sentences`` or ``packed.Packer.pack`` give them: ``offsets``, ``data``)."""
    rows, scores = _batch(np.asarray(tests, np.int64), np.asarray(refs, np.int64), offsets, *data, WEIGHTS)
    return rows.reshape(len(scores), 23), scores


def pair_alignment(test: tuple, ref: tuple) -> list[tuple[int, int, int, int, int]]:
    """The best alignment of two ``pack``-ed sentences, as the jar's -writeAlignments lists it:
    (reference start, length, test start, length, stage) in reference order."""
    return [tuple(row) for row in _search(_candidates(test, ref), len(test[0]), len(ref[0]), WEIGHTS).tolist()]
