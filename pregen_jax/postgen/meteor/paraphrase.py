# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR's English paraphrase table, compiled once into memory-mapped arrays.

The table (``paraphrase-en.gz``, 5.3 M entries of three lines: a probability the jar ignores, a
reference phrase, its paraphrase) becomes, in ``cache_folder()/meteor-paraphrase-v<FORMAT>-<sha256>/``:

- ``vocab.bin`` + ``vocab_offsets.npy``: the table's words, UTF-8, sorted by bytes; a word's id
  is its rank (looked up by bisection, no dictionary in memory);
- ``keys.npy`` (u64, sorted): a hash of each distinct reference phrase (checked free of
  collisions when compiled), ``phrase_offsets.npy``/``phrase_ids.npy`` its words;
- ``entry_offsets.npy``: each phrase's entries, in the table's order (the order the jar tries them);
- ``prefix_keys.npy`` (u64, sorted): the keys of every phrase's prefixes (where a lookup can stop);
- ``para_offsets.npy``/``para_ids.npy``: each entry's paraphrase words.

A lookup gives what Meteor 1.5's Java ``ParaphraseTransducer`` gives (every phrase of the table
that starts at a position, shorter first, entries in table order; Michael Denkowski and Alon
Lavie, Carnegie Mellon University) over this package's own arrays; it follows that class, so this
file is under its licence, LGPL-2.1-only (docs/licensing.md).

The folder is named by the source's digest, written under a temporary name and renamed, so a
changed table compiles afresh and readers never see half a folder.
"""
from __future__ import annotations

import bisect
import functools
import gzip
import mmap
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..base import file_hash
from .jit import compiled
from .resources import cache_folder, paraphrase_path

HASH_MULTIPLIER = 0x9E3779B97F4A7C15  # an odd 64-bit constant: phrase key = fold of (key * M + id + 1) mod 2^64
MASK = (1 << 64) - 1
FORMAT = 2  # the compiled layout's version, part of the folder name
FILES = ("vocab.bin", "vocab_offsets.npy", "keys.npy", "phrase_offsets.npy", "phrase_ids.npy", "entry_offsets.npy",
         "para_offsets.npy", "para_ids.npy", "prefix_keys.npy")


def phrase_key(ids) -> int:
    """The u64 key of a phrase (a sequence of word ids)."""
    key = 0
    for word in ids:
        key = (key * HASH_MULTIPLIER + int(word) + 1) & MASK
    return key


def _keys(offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """u64[phrases]: ``phrase_key`` of each phrase of a CSR (offsets i64[n + 1], ids i32[...]), vectorized."""
    lengths = np.diff(offsets)
    keys = np.zeros(len(lengths), np.uint64)
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max())):
            has = lengths > position
            words = ids[offsets[:-1][has] + position].astype(np.uint64) + np.uint64(1)
            keys[has] = keys[has] * np.uint64(HASH_MULTIPLIER) + words
    return keys


def _csr(phrases: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, phrases), np.int64, len(phrases))
    offsets = np.zeros(len(phrases) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.fromiter((w for p in phrases for w in p), np.int32, int(offsets[-1]))


def compile_table(source: Path, folder: Path) -> None:
    """Compile the gzip table ``source`` into ``folder`` (the files above)."""
    with gzip.open(source, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    vocab: dict[bytes, int] = {}
    refs = [[vocab.setdefault(w, len(vocab)) for w in line.split(b" ") if w] for line in lines[1::3]]
    paras = [[vocab.setdefault(w, len(vocab)) for w in line.split(b" ") if w] for line in lines[2::3]]
    del lines
    words = sorted(vocab)  # ids become ranks in byte order
    rank = np.empty(len(words), np.int32)
    rank[np.fromiter((vocab[w] for w in words), np.int64, len(words))] = np.arange(len(words), dtype=np.int32)
    del vocab
    ref_offsets, ref_ids = _csr(refs)
    para_offsets, para_ids = _csr(paras)
    del refs, paras
    ref_ids, para_ids = rank[ref_ids], rank[para_ids]
    keys = _keys(ref_offsets, ref_ids)
    order = np.argsort(keys, kind="stable")  # entries of one phrase stay in the table's order
    sorted_keys = keys[order]
    first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    _check_no_collisions(order, first, ref_offsets, ref_ids)
    phrase_offsets, phrase_ids = _gather(ref_offsets, ref_ids, order[first])
    entry_para_offsets, entry_para_ids = _gather(para_offsets, para_ids, order)
    blob = b"".join(words)
    vocab_offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, words), np.int64, len(words)), out=vocab_offsets[1:])
    folder.mkdir(parents=True)
    (folder / "vocab.bin").write_bytes(blob)
    for name, array in (("vocab_offsets", vocab_offsets), ("keys", sorted_keys[first]),
                        ("phrase_offsets", phrase_offsets), ("phrase_ids", phrase_ids),
                        ("entry_offsets", np.r_[first, len(order)].astype(np.int64)),
                        ("para_offsets", entry_para_offsets), ("para_ids", entry_para_ids),
                        ("prefix_keys", prefix_keys(phrase_offsets, phrase_ids))):
        np.save(folder / f"{name}.npy", array)


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


def _gather(offsets: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR rows ``rows`` of (offsets, ids), in that order, as a new CSR."""
    lengths = offsets[rows + 1] - offsets[rows]
    new_offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    starts = np.repeat(offsets[rows] - new_offsets[:-1], lengths)
    return new_offsets, ids[starts + np.arange(int(new_offsets[-1]))]


def _check_no_collisions(order, first, offsets, ids) -> None:
    """Every entry under a key has the same reference phrase as the key's first entry."""
    group = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(order)]))
    head = order[first][group]
    lengths, head_lengths = np.diff(offsets)[order], np.diff(offsets)[head]
    if not np.array_equal(lengths, head_lengths):
        raise RuntimeError("paraphrase table: two phrases share a hash key; change HASH_MULTIPLIER")
    for position in range(int(lengths.max())):
        has = lengths > position
        if not np.array_equal(ids[offsets[order[has]] + position], ids[offsets[head[has]] + position]):
            raise RuntimeError("paraphrase table: two phrases share a hash key; change HASH_MULTIPLIER")


class ParaphraseTable:
    """The compiled table, memory-mapped (read-only)."""

    def __init__(self, folder: Path):
        self.folder = folder
        with open(folder / "vocab.bin", "rb") as f:
            self._blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.path.getsize(f.name) else b""
        def load(path):  # a plain ndarray view of the map: element access without np.memmap's overhead
            return np.load(path, mmap_mode="r").view(np.ndarray)
        self._vocab_offsets = load(folder / "vocab_offsets.npy")
        self.keys = load(folder / "keys.npy")
        self.phrase_offsets, self.phrase_ids = load(folder / "phrase_offsets.npy"), load(folder / "phrase_ids.npy")
        self.entry_offsets = load(folder / "entry_offsets.npy")
        self.para_offsets, self.para_ids = load(folder / "para_offsets.npy"), load(folder / "para_ids.npy")
        self.prefix_keys = load(folder / "prefix_keys.npy")
        self.max_phrase = int(np.diff(self.phrase_offsets).max()) if len(self.keys) else 0

    def word_id(self, word: str) -> int:
        """The word's id in the table, or -1 where the table has no such word."""
        target = word.encode("utf-8")
        words = _Words(self._blob, self._vocab_offsets)
        k = bisect.bisect_left(words, target)
        return k if k < len(words) and words[k] == target else -1

    def span_rows(self, ids: tuple[int, ...]) -> np.ndarray:
        """i64[rows, 4]: (start, reference phrase length, first entry, end entry) of every phrase of the
        table in the sentence ``ids``: by start, shorter phrases first; a phrase's entries are a range,
        in table order (the jar's order)."""
        return _span_rows(np.array(ids, np.int64), self.max_phrase, self.keys, self.prefix_keys,
                          self.phrase_offsets, self.phrase_ids, self.entry_offsets)

    def words(self, entry: int) -> tuple[int, ...]:
        """One entry's paraphrase (word ids)."""
        return tuple(self.para_ids[self.para_offsets[entry]:self.para_offsets[entry + 1]].tolist())

    def gather(self, words: int, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """A sentence's ``span_rows`` as arrays: (entry offsets i64[words + 1] per start, reference
        phrase length i64[entries], word offsets i64[entries + 1], paraphrase words i64[...])."""
        return _gather_rows(words, rows, self.para_offsets, self.para_ids)


@compiled
def _span_rows(ids, max_phrase, keys, prefix_keys, phrase_offsets, phrase_ids, entry_offsets):
    """The table's trie walk from each start: stop where no phrase has the prefix so far."""
    n = len(ids)
    out = []
    for start in range(n):
        key = np.uint64(0)
        for length in range(1, min(max_phrase, n - start) + 1):
            word = ids[start + length - 1]
            if word < 0:  # a word the table lacks
                break
            key = key * np.uint64(HASH_MULTIPLIER) + np.uint64(word + 1)
            k = np.searchsorted(prefix_keys, key)
            if k == len(prefix_keys) or prefix_keys[k] != key:
                break
            k = np.searchsorted(keys, key)
            if k == len(keys) or keys[k] != key or phrase_offsets[k + 1] - phrase_offsets[k] != length:
                continue
            same = True
            for q in range(length):
                same = same and phrase_ids[phrase_offsets[k] + q] == ids[start + q]
            if same:
                out.append((start, length, entry_offsets[k], entry_offsets[k + 1]))
    rows = np.empty((len(out), 4), np.int64)
    for r in range(len(out)):
        rows[r, 0], rows[r, 1], rows[r, 2], rows[r, 3] = out[r]
    return rows


@compiled
def _gather_rows(words, rows, para_offsets, para_ids):
    per_start = np.zeros(words + 1, np.int64)
    total_words = 0
    for r in range(len(rows)):
        per_start[rows[r, 0] + 1] += rows[r, 3] - rows[r, 2]
        total_words += para_offsets[rows[r, 3]] - para_offsets[rows[r, 2]]
    per_start = np.cumsum(per_start)
    lengths = np.empty(per_start[-1], np.int64)
    word_offsets = np.zeros(per_start[-1] + 1, np.int64)
    out = np.empty(total_words, np.int64)
    e, w = 0, 0
    for r in range(len(rows)):
        for entry in range(rows[r, 2], rows[r, 3]):
            lengths[e] = rows[r, 1]
            for q in range(para_offsets[entry], para_offsets[entry + 1]):
                out[w] = para_ids[q]
                w += 1
            e += 1
            word_offsets[e] = w
    return per_start, lengths, word_offsets, out


class _Words:
    """The sorted vocabulary as a sequence of bytes (for bisection)."""

    def __init__(self, blob, offsets):
        self._blob, self._offsets = blob, offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, k: int) -> bytes:
        return self._blob[int(self._offsets[k]):int(self._offsets[k + 1])]


@functools.lru_cache(maxsize=1)
def table(source: Path | None = None) -> ParaphraseTable:
    """The compiled table of ``source`` (the installed one by default), compiled first if needed."""
    source = Path(source or paraphrase_path())
    folder = cache_folder() / f"meteor-paraphrase-v{FORMAT}-{file_hash(str(source))[:16]}"
    if not all((folder / name).exists() for name in FILES):
        cache_folder().mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".meteor-paraphrase-", dir=cache_folder()))
        try:
            compile_table(source, staging / "table")
            try:
                os.rename(staging / "table", folder)
            except OSError:  # another process finished first: its folder is the same
                if not all((folder / name).exists() for name in FILES):
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return ParaphraseTable(folder)
