# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Building METEOR's paraphrase arrays (``paraphrase.py``'s layout) from ``paraphrase-en.gz`` by
streaming: the gzip is read a block at a time; each reference phrase line is numbered by one
dictionary lookup (about 430,000 distinct lines among 5.3 M), each paraphrase word by one
(43,000 distinct words), both made in C (``map`` over a ``defaultdict``). What is kept between
blocks is int32 arrays and the distinct reference lines, so memory stays a few times the
finished arrays' size (about 120 MB), and the build takes seconds, with a progress bar on stderr.

This package's own code (not translated from Meteor 1.5): it reads the table's three-line format
and writes this package's arrays.
"""
from __future__ import annotations

import gzip
import itertools
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...progress import bar_disabled

BLOCK = 1 << 21  # decompressed bytes per step (its Python objects, about 20 times that, live one step)
SPACE, NEWLINE = 32, 10
ROWS = 1 << 18  # rows per step of a gather (bounds its temporaries)
HASH_MULTIPLIER = 0x9E3779B97F4A7C15  # an odd 64-bit constant: phrase key = fold of (key * M + id + 1) mod 2^64
_OTHER_SPACE = re.compile(rb"[\t\r\x0b\x0c\x1c-\x1f]")  # split by bytes.split() but not by the table's reader


@dataclass(frozen=True)
class Entries:
    """The table's entries in file order: reference phrases as ids of distinct lines
    (``ref_lines`` i32[entries]) whose words are a CSR (``line_offsets`` i64[lines + 1],
    ``line_words`` i32[...]); paraphrases as a CSR (``para_offsets`` i64[entries + 1],
    ``para_words`` i32[...]). Word ids are ranks in ``words`` (bytes, sorted)."""

    ref_lines: np.ndarray
    line_offsets: np.ndarray
    line_words: np.ndarray
    para_offsets: np.ndarray
    para_words: np.ndarray
    words: list[bytes]


class _Vocabulary:
    """Words numbered in the order first seen, one C-level dictionary lookup each."""

    def __init__(self):
        self.ids: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)

    def number(self, lines: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(i32[lines] each line's word count, i32[words] the words' ids, in order): words are
        split at spaces, empty ones dropped (the table's reader)."""
        if not lines:
            return np.zeros(0, np.int32), np.zeros(0, np.int32)
        text = b"\n".join(lines)
        if _OTHER_SPACE.search(text):  # bytes.split() would split there too: one line at a time
            words = [w for line in lines for w in line.split(b" ") if w]
        else:
            words = text.split()
        counts = _words_per_line(np.frombuffer(text + b"\n", np.uint8))
        return counts, np.fromiter(map(self.ids.__getitem__, words), np.int32, len(words))

    def ranks(self) -> tuple[list[bytes], np.ndarray]:
        """(the words sorted by bytes, i32[words] each id's rank among them)."""
        words = sorted(self.ids)
        rank = np.empty(len(words), np.int32)
        rank[np.fromiter(map(self.ids.__getitem__, words), np.int64, len(words))] = np.arange(len(words),
                                                                                           dtype=np.int32)
        return words, rank


def _words_per_line(data: np.ndarray) -> np.ndarray:
    """i32[lines]: the words (maximal runs of bytes other than space and newline) of each line of
    ``data`` (u8[...], every line ending in a newline)."""
    inside = (data != SPACE) & (data != NEWLINE)
    begun = np.cumsum(inside[1:] & ~inside[:-1], dtype=np.int64)  # begun[k]: words begun in data[1:k + 2]
    before = np.r_[0, begun][np.flatnonzero(data == NEWLINE)] + int(inside[0])  # words begun before each newline
    return np.diff(before, prepend=0).astype(np.int32)


def _blocks(source: Path, progress):
    """The decompressed file in blocks that end at a line's end (the last line given one)."""
    size = os.path.getsize(source)
    with open(source, "rb") as raw, gzip.GzipFile(fileobj=raw) as f:
        tail = b""
        while True:
            block = f.read(BLOCK)
            progress(raw.tell(), size)
            if not block:
                if tail:
                    yield tail + b"\n"
                return
            block = tail + block
            cut = block.rfind(b"\n") + 1
            tail = block[cut:]
            if cut:
                yield block[:cut]


def _entries_of_words(blocks, grams: frozenset[bytes]):
    """The entries of ``blocks`` (``_blocks``) whose reference phrase and paraphrase are made of
    ``grams``' words with each two neighbours one of its pairs (``b"a man"``): any other entry can
    match nowhere in sentences whose words and neighbour pairs ``grams`` holds (a phrase matches
    where it occurs). Given as blocks of whole entries (an incomplete last entry passed on as it is,
    for ``read_entries`` to refuse). A phrase's entries follow one another in the table: a reference
    line is judged where it differs from the one before (430,000 times among 5.3 M entries), a
    paraphrase only in an entry whose reference passed; the rest is C loops (``split``, ``map``,
    ``compress``)."""
    def made_of_words(line: bytes) -> bool:
        words = [w for w in line.split(b" ") if w]
        return grams.issuperset(words) and grams.issuperset(map(b" ".join, zip(words, words[1:])))
    carry, last = b"", b"\n"  # the last reference line judged (a newline: none; no line holds one)
    passed = False
    for block in blocks:
        lines = (carry + block if carry else block).split(b"\n")[:-1]
        whole = len(lines) - len(lines) % 3
        carry = b"".join(line + b"\n" for line in lines[whole:])
        refs, paras = lines[1:whole:3], lines[2:whole:3]
        verdicts = bytearray(len(refs))
        changed = list(itertools.compress(itertools.count(1), map(bytes.__ne__, refs[1:], refs[:-1])))
        at = 0
        for start in ([0] if refs and refs[0] != last else []) + changed:  # run starts
            if at < start:
                verdicts[at:start] = b"\x01" * (start - at) if passed else bytes(start - at)
            passed, at = made_of_words(refs[start]), start
        if refs:
            verdicts[at:] = b"\x01" * (len(refs) - at) if passed else bytes(len(refs) - at)
            last = refs[-1]
        chosen = [k for k in itertools.compress(itertools.count(), verdicts) if made_of_words(paras[k])]
        if chosen:
            yield b"".join(b"%s\n%s\n%s\n" % (lines[3 * k], refs[k], paras[k]) for k in chosen)
    if carry:
        yield carry


def read_entries(source: Path, progress=None, grams: frozenset[bytes] | None = None) -> Entries:
    """The entries of the gzip table ``source`` (three lines each: a probability, the reference
    phrase, its paraphrase; words split at spaces, empty words dropped). ``progress(done, total)``
    is called with compressed bytes read. ``grams`` (UTF-8 words and neighbour pairs): only the
    entries made of them (``_entries_of_words``; None: every entry)."""
    ref_ids: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)
    vocabulary = _Vocabulary()
    refs, para_counts, para_words = [], [], []  # each block's
    lines_before = 0
    blocks = _blocks(source, progress or (lambda done, total: None))
    for block in blocks if grams is None else _entries_of_words(blocks, grams):
        lines = block.split(b"\n")[:-1]  # each block ends with a newline
        chosen = lines[(1 - lines_before) % 3::3]
        refs.append(np.fromiter(map(ref_ids.__getitem__, chosen), np.int32, len(chosen)))
        counts, words = vocabulary.number(lines[(2 - lines_before) % 3::3])
        para_counts.append(counts)
        para_words.append(words)
        lines_before += len(lines)
    if lines_before % 3:
        raise ValueError(f"{source}: {lines_before} lines, not entries of three lines")
    line_counts, line_words = vocabulary.number(list(ref_ids))
    del ref_ids
    words, rank = vocabulary.ranks()
    for part in para_words:
        part[:] = rank[part]
    para_offsets, para_words = _csr(para_counts, para_words)
    line_offsets, line_words = _csr([line_counts], [rank[line_words]])
    return Entries(_joined(refs, np.int32), line_offsets, line_words, para_offsets, para_words, words)


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    """``parts`` concatenated, the list emptied as it goes."""
    out = np.empty(sum(map(len, parts)), dtype)
    at = 0
    while parts:
        part = parts.pop(0)
        out[at:at + len(part)] = part
        at += len(part)
    return out


def _csr(counts: list[np.ndarray], ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets i64[rows + 1], ids i32[...]) of per-part row lengths and ids (the lists emptied)."""
    lengths = _joined(counts, np.int32)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    del lengths
    return offsets, _joined(ids, np.int32)


def build_arrays(source: Path, progress=None, grams: frozenset[bytes] | None = None) -> dict[str, np.ndarray]:
    """The compiled table of the gzip table ``source``: file stem -> array (``paraphrase.FILES``;
    ``vocab.bin`` as u8[...]). ``progress(done, total)`` and ``grams``: as ``read_entries``."""
    entries = read_entries(source, progress, grams)
    offsets, ids = entries.line_offsets, entries.line_words
    line_keys = _keys(offsets, ids)
    _check_no_collisions(line_keys, offsets, ids)
    order = np.argsort(line_keys[entries.ref_lines], kind="stable")  # a phrase's entries stay in the table's order
    keys = line_keys[entries.ref_lines[order]]
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    keys = keys[first]
    phrase_offsets, phrase_ids = csr_rows(offsets, ids, entries.ref_lines[order[first]])
    para_offsets, para_ids = csr_rows(entries.para_offsets, entries.para_words, order)
    words = entries.words
    vocab_offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, words), np.int64, len(words)), out=vocab_offsets[1:])
    return {"vocab": np.frombuffer(b"".join(words), np.uint8), "vocab_offsets": vocab_offsets,
            "keys": keys, "phrase_offsets": phrase_offsets, "phrase_ids": phrase_ids,
            "entry_offsets": np.r_[first, len(order)].astype(np.int64), "para_offsets": para_offsets,
            "para_ids": para_ids, "prefix_keys": prefix_keys(phrase_offsets, phrase_ids)}


def build_arrays_of_nothing() -> dict[str, np.ndarray]:
    """``build_arrays``' arrays of a table of no entry (their types, no content)."""
    offsets = np.zeros(1, np.int64)
    return {"vocab": np.zeros(0, np.uint8), "vocab_offsets": offsets, "keys": np.zeros(0, np.uint64),
            "phrase_offsets": offsets.copy(), "phrase_ids": np.zeros(0, np.int32), "entry_offsets": offsets.copy(),
            "para_offsets": offsets.copy(), "para_ids": np.zeros(0, np.int32), "prefix_keys": np.zeros(0, np.uint64)}


def _keys(offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """u64[phrases]: ``paraphrase.phrase_key`` of each phrase of a CSR (offsets i64[n + 1], ids i32[...])."""
    lengths = np.diff(offsets)
    keys = np.zeros(len(lengths), np.uint64)
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max()) if len(lengths) else 0):
            has = lengths > position
            words = ids[offsets[:-1][has] + position].astype(np.uint64) + np.uint64(1)
            keys[has] = keys[has] * np.uint64(HASH_MULTIPLIER) + words
    return keys


def prefix_keys(offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """u64[...] sorted, distinct: the keys of every prefix (the phrase itself included) of every phrase."""
    lengths = np.diff(offsets)
    keys, out = np.zeros(len(lengths), np.uint64), []
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max()) if len(lengths) else 0):
            has = lengths > position
            keys[has] = keys[has] * np.uint64(HASH_MULTIPLIER) + ids[offsets[:-1][has] + position].astype(np.uint64) \
                + np.uint64(1)
            out.append(keys[has].copy())
    return np.unique(np.concatenate(out)) if out else np.zeros(0, np.uint64)


def csr_rows(offsets: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR rows ``rows`` of (offsets i64[n + 1], ids), in that order, as a new CSR (``ROWS`` rows a step)."""
    new_offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(offsets[rows + 1] - offsets[rows], out=new_offsets[1:])
    out = np.empty(int(new_offsets[-1]), ids.dtype)
    for a in range(0, len(rows), ROWS):
        b = min(a + ROWS, len(rows))
        starts = np.repeat(offsets[rows[a:b]] - new_offsets[a:b], np.diff(new_offsets[a:b + 1]))
        starts += np.arange(new_offsets[a], new_offsets[b])
        out[new_offsets[a]:new_offsets[b]] = ids[starts]
    return new_offsets, out


def _check_no_collisions(keys: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> None:
    """Phrases (a CSR) with the same key (u64[phrases]) have the same words."""
    if not len(keys):
        return
    rows = np.argsort(keys, kind="stable")
    first = np.flatnonzero(np.r_[True, keys[rows][1:] != keys[rows][:-1]])
    head = rows[first][np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(rows)]))]
    lengths, head_lengths = np.diff(offsets)[rows], np.diff(offsets)[head]
    if not np.array_equal(lengths, head_lengths):
        raise RuntimeError("paraphrase table: two phrases share a hash key; change HASH_MULTIPLIER")
    for position in range(int(lengths.max()) if len(lengths) else 0):
        has = lengths > position
        if not np.array_equal(ids[offsets[rows[has]] + position], ids[offsets[head[has]] + position]):
            raise RuntimeError("paraphrase table: two phrases share a hash key; change HASH_MULTIPLIER")


def progress_bar(description: str):
    """A ``progress(done, total)`` callable drawing a tqdm bar on stderr, and its closer (the bar off
    under ``--no-progress`` and where stderr is not a terminal: ``progress.bar_disabled``)."""
    from tqdm.auto import tqdm
    bar = tqdm(total=0, desc=description, unit="B", unit_scale=True, file=sys.stderr, leave=False,
               disable=bar_disabled())

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
    return update, bar.close
