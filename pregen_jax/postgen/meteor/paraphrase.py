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
import hashlib
import mmap
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ...io import cache_folder, file_hash
from .jit import compiled
from .paraphrase_build import HASH_MULTIPLIER, build_arrays, build_arrays_of_nothing, progress_bar
from .resources import paraphrase_path

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


def write_arrays(arrays: dict[str, np.ndarray], folder: Path) -> None:
    """``build_arrays``' output as the files ``FILES`` in a new ``folder``."""
    folder.mkdir(parents=True)
    for name, array in arrays.items():
        if name == "vocab":
            (folder / "vocab.bin").write_bytes(array.tobytes())
        else:
            np.save(folder / f"{name}.npy", array)


def compile_table(source: Path, folder: Path, progress=None) -> None:
    """Compile the gzip table ``source`` into ``folder`` (the files above)."""
    write_arrays(build_arrays(source, progress), folder)


class ParaphraseTable:
    """The compiled table: ``build_arrays``' arrays, memory-mapped from a folder (``open``) or in memory."""

    def __init__(self, arrays: dict[str, np.ndarray], blob=None):
        self._blob = arrays["vocab"].tobytes() if blob is None else blob
        self._vocab_offsets = arrays["vocab_offsets"]
        self.keys = arrays["keys"]
        self.phrase_offsets, self.phrase_ids = arrays["phrase_offsets"], arrays["phrase_ids"]
        self.entry_offsets = arrays["entry_offsets"]
        self.para_offsets, self.para_ids = arrays["para_offsets"], arrays["para_ids"]
        self.prefix_keys = arrays["prefix_keys"]
        for array in (self._vocab_offsets, self.keys, self.phrase_offsets, self.phrase_ids, self.entry_offsets,
                      self.para_offsets, self.para_ids, self.prefix_keys):
            array.flags.writeable = False  # as mapped ones are: one compiled signature for every table
        self.max_phrase = int(np.diff(self.phrase_offsets).max()) if len(self.keys) else 0

    @classmethod
    def open(cls, folder: Path) -> ParaphraseTable:
        """The table compiled into ``folder`` (``write_arrays``), memory-mapped read-only."""
        with open(folder / "vocab.bin", "rb") as f:
            blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.path.getsize(f.name) else b""
        # plain ndarray views of the maps: element access without np.memmap's overhead
        arrays = {name[:-4]: np.load(folder / name, mmap_mode="r").view(np.ndarray) for name in FILES
                  if name.endswith(".npy")}
        return cls(arrays, blob)

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
        ids = np.array(ids, np.int64)
        return _span_rows(ids, *self.first_words(ids), self.max_phrase, self.keys, self.prefix_keys,
                          self.phrase_offsets, self.phrase_ids, self.entry_offsets)

    def first_words(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bool[...]: a phrase of the table starts with the word, i64[...]: the row in ``keys`` of the
        one-word phrase that is the word, or -1) of each word id (-1: a word the table lacks): the
        walk's first step for each word, looked up once per word instead of at each position."""
        if not len(self.keys):  # a table of no entry
            return np.zeros(np.shape(ids), bool), np.full(np.shape(ids), -1, np.int64)
        key = (np.asarray(ids, np.int64) + 1).astype(np.uint64)  # a one-word phrase's key (_span_rows)
        present = np.asarray(ids) >= 0
        at = np.searchsorted(self.prefix_keys, key)
        prefix = present & (self.prefix_keys[np.minimum(at, len(self.prefix_keys) - 1)] == key) & (at < len(self.prefix_keys))
        k = np.searchsorted(self.keys, key)
        inside = np.minimum(k, len(self.keys) - 1)
        whole = (k < len(self.keys)) & (self.keys[inside] == key) & (np.diff(self.phrase_offsets)[inside] == 1)
        return prefix, np.where(prefix & whole, k, -1).astype(np.int64)

    def words(self, entry: int) -> tuple[int, ...]:
        """One entry's paraphrase (word ids)."""
        return tuple(self.para_ids[self.para_offsets[entry]:self.para_offsets[entry + 1]].tolist())

    def gather(self, words: int, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """A sentence's ``span_rows`` as arrays: (entry offsets i64[words + 1] per start, reference
        phrase length i64[entries], word offsets i64[entries + 1], paraphrase words i64[...])."""
        return _gather_rows(words, rows, self.para_offsets, self.para_ids)


@compiled
def _span_rows(ids, first_prefix, first_key, max_phrase, keys, prefix_keys, phrase_offsets, phrase_ids, entry_offsets):
    """i64[rows, 4]: ``ParaphraseTable.span_rows`` of one sentence (``_span_rows_into`` a new array)."""
    rows, count = _span_rows_into(ids, first_prefix, first_key, max_phrase, keys, prefix_keys, phrase_offsets,
                                  phrase_ids, entry_offsets, np.empty((4 * len(ids) + 1, 4), np.int64), 0)
    return rows[:count].copy()


@compiled(inline=True)
def _span_rows_into(ids, first_prefix, first_key, max_phrase, keys, prefix_keys, phrase_offsets, phrase_ids,
                    entry_offsets, rows, count):
    """The table's trie walk from each start: stop where no phrase has the prefix so far. The first
    step of each start is ``first_prefix``, ``first_key`` (``ParaphraseTable.first_words`` of ``ids``).
    Each phrase found is written as a row (start, length, first entry, end entry) at ``rows[count]``
    (``rows`` grown by doubling where full); returns (rows, rows used): many sentences' rows go one
    after another into one array, without a list or an array per sentence."""
    n = len(ids)
    for start in range(n):
        key = np.uint64(0)
        for length in range(1, min(max_phrase, n - start) + 1):
            word = ids[start + length - 1]
            if word < 0:  # a word the table lacks
                break
            key = key * np.uint64(HASH_MULTIPLIER) + np.uint64(word + 1)
            if length == 1:
                if not first_prefix[start]:
                    break
                k = first_key[start]
                if k < 0:
                    continue
            else:
                k = _lower_bound(prefix_keys, key)
                if k == len(prefix_keys) or prefix_keys[k] != key:
                    break
                k = _lower_bound(keys, key)
                if k == len(keys) or keys[k] != key or phrase_offsets[k + 1] - phrase_offsets[k] != length:
                    continue
            same = True
            for q in range(length):
                same = same and phrase_ids[phrase_offsets[k] + q] == ids[start + q]
            if same:
                if count == len(rows):
                    grown = np.empty((2 * len(rows) + 1, 4), np.int64)
                    for r in range(count):  # a loop, not a slice assignment: numba compiles that with
                        for c in range(4):  # its shape-mismatch message (seconds of string code)
                            grown[r, c] = rows[r, c]
                    rows = grown
                rows[count, 0], rows[count, 1], rows[count, 2], rows[count, 3] = (start, length, entry_offsets[k],
                                                                                  entry_offsets[k + 1])
                count += 1
    return rows, count


@compiled(inline=True)
def _lower_bound(keys, key):
    """The first position of ``keys`` (u64[n], sorted) holding ``key`` or more (``np.searchsorted``'s
    left side, written out: numba's compiles for seconds on a first run)."""
    low, high = 0, len(keys)
    while low < high:
        middle = (low + high) // 2
        if keys[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low


@compiled
def _gather_rows(words, rows, para_offsets, para_ids):
    """``ParaphraseTable.gather``'s arrays of one sentence's ``span_rows`` (made here, ``_entries_into``)."""
    entries, total_words = 0, 0
    for r in range(len(rows)):
        entries += rows[r, 3] - rows[r, 2]
        total_words += para_offsets[rows[r, 3]] - para_offsets[rows[r, 2]]
    per_start = np.zeros(words + 1, np.int64)
    lengths = np.empty(entries, np.int64)
    word_offsets = np.zeros(entries + 1, np.int64)
    out = np.empty(total_words, np.int64)
    _entries_into(rows, 0, len(rows), para_offsets, para_ids, per_start, lengths, word_offsets, out)
    return per_start, lengths, word_offsets, out


@compiled(inline=True)
def _entries_into(rows, first_row, end_row, para_offsets, para_ids, per_start, lengths, word_offsets, words):
    """One sentence's paraphrase entries, ``rows[first_row:end_row]`` (by start), written as ``gather``
    lays them out: entry offsets per start (``per_start``, i64[words + 1], zeros given), each entry's
    reference phrase length (``lengths``), word offsets (``word_offsets``, i64[entries + 1], zeros
    given) and the paraphrases' words (``words``); offsets local to the sentence. Used for one
    sentence (``_gather_rows``) and for slices of many sentences' arrays (``packed._pack``)."""
    e, w = 0, 0
    for r in range(first_row, end_row):
        per_start[rows[r, 0] + 1] += rows[r, 3] - rows[r, 2]
        for entry in range(rows[r, 2], rows[r, 3]):
            lengths[e] = rows[r, 1]
            for q in range(para_offsets[entry], para_offsets[entry + 1]):
                words[w] = para_ids[q]
                w += 1
            e += 1
            word_offsets[e] = w
    for q in range(len(per_start) - 1):
        per_start[q + 1] += per_start[q]


class _Words:
    """The sorted vocabulary as a sequence of bytes (for bisection)."""

    def __init__(self, blob, offsets):
        self._blob, self._offsets = blob, offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, k: int) -> bytes:
        return self._blob[int(self._offsets[k]):int(self._offsets[k + 1])]


def empty_table() -> ParaphraseTable:
    """A table of no entry (the compiled search's types, for compiling it before a table is chosen)."""
    return ParaphraseTable(build_arrays_of_nothing())


def kept_table(source: Path | None = None) -> ParaphraseTable | None:
    """The whole compiled table of ``source`` where the cache folder holds it (``table`` built it), else None."""
    cache, name = cache_folder(), _name(source)
    if cache is not None and _complete(cache / name):
        return table(source)
    return None


def table_of_words(grams: frozenset[str], source: Path | None = None) -> tuple[ParaphraseTable, frozenset[str]]:
    """(a table, the grams it serves): the entries of ``source`` that sentences can use whose words and
    neighbour pairs (``"a man"``) are in a set holding ``grams`` (``paraphrase_build._entries_of_words``:
    exactly those entries). Kept in the cache folder, one at a time: a kept table serving ``grams``
    is used, else one is built for its grams and these (one pass over the gzip: seconds, not the whole
    table's build) and replaces it."""
    kept, served = kept_table_of_words(grams, source)
    if kept is not None:
        return kept, served
    cache, name = cache_folder(), _name(source) + "-words"
    served = served | grams
    source = Path(source or paraphrase_path())
    print(f"METEOR: building a paraphrase table of the {sum(' ' not in g for g in served):,} words met from "
          f"{source.name} (the whole table: `pregen-search doctor --prepare`)", file=sys.stderr, flush=True)
    arrays = build_arrays(source, None, frozenset(g.encode("utf-8") for g in served))
    if cache is not None:
        listed = "\n".join(sorted(served))
        try:
            folder = _kept(arrays, cache, f"{name}-{hashlib.sha256(listed.encode('utf-8')).hexdigest()[:16]}",
                           listed, f"{name}-*")
            return ParaphraseTable.open(folder), served
        except OSError as err:
            warnings.warn(f"METEOR's paraphrase table not kept in {cache} ({err}): built again next run", stacklevel=2)
    return ParaphraseTable(arrays), served


def kept_table_of_words(grams: frozenset[str], source: Path | None = None
                        ) -> tuple[ParaphraseTable | None, frozenset[str]]:
    """(the kept table of some words that serves ``grams``, or None; the grams the kept one serves,
    empty where none is kept): ``table_of_words`` without building. The in-process METEOR
    (``postgen.score``, a search's workers) reads the table ``evaluate`` kept this way."""
    cache, name = cache_folder(), _name(source) + "-words"
    served: frozenset[str] = frozenset()
    for folder in sorted(cache.glob(f"{name}-*")) if cache is not None else []:
        try:
            served = frozenset((folder / "grams.txt").read_text(encoding="utf-8").split("\n"))
        except OSError:
            continue
        if served.issuperset(grams) and _complete(folder):
            return ParaphraseTable.open(folder), served
    return None, served


def words_kept(source: Path | None = None) -> bool:
    """Whether the cache folder holds a table of some words of ``source`` (``table_of_words`` kept it)."""
    cache = cache_folder()
    return cache is not None and any(_complete(folder) for folder in cache.glob(f"{_name(source)}-words-*"))


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds every file of a compiled table (``FILES``)."""
    return all((folder / file).exists() for file in FILES)


def _name(source: Path | None) -> str:
    return f"meteor-paraphrase-v{FORMAT}-{file_hash(str(Path(source or paraphrase_path())))[:16]}"


@functools.lru_cache(maxsize=1)
def table(source: Path | None = None) -> ParaphraseTable:
    """The compiled table of ``source`` (the installed one by default): from the cache folder, else
    built (one line and a progress bar on stderr) and kept there, or in memory where the cache
    folder cannot be written."""
    source = Path(source or paraphrase_path())
    name = _name(source)
    cache = cache_folder()
    if cache is not None and _complete(cache / name):
        return ParaphraseTable.open(cache / name)
    where = cache / name if cache is not None else "memory (the cache folder is not writable)"
    print(f"METEOR: building the paraphrase table from {source.name} (5.3 M entries; once per cache folder) "
          f"into {where}", file=sys.stderr, flush=True)
    update, close = progress_bar("METEOR paraphrase table")
    try:
        arrays = build_arrays(source, update)
    finally:
        close()
    if cache is not None:
        try:
            return ParaphraseTable.open(_kept(arrays, cache, name))
        except OSError as err:
            warnings.warn(f"METEOR's paraphrase table not kept in {cache} ({err}): built again next run", stacklevel=2)
    return ParaphraseTable(arrays)


def _kept(arrays: dict[str, np.ndarray], cache: Path, name: str, grams: str | None = None,
          replaces: str = "meteor-paraphrase-*") -> Path:
    """``cache/name`` holding ``arrays`` (and ``grams.txt``: the grams a table of some words serves),
    written under a temporary name, then renamed, so readers never see half a table; the other
    tables in ``cache`` named by the pattern ``replaces`` (by default all: an older format or
    source, tables of some words) removed."""
    folder = cache / name
    staging = Path(tempfile.mkdtemp(prefix=".meteor-paraphrase-", dir=cache))
    try:
        write_arrays(arrays, staging / "table")
        if grams is not None:
            (staging / "table" / "grams.txt").write_text(grams, encoding="utf-8")
        try:
            os.rename(staging / "table", folder)
        except OSError:  # another process finished first: its folder is the same
            if not _complete(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for old in cache.glob(replaces):
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    return folder
