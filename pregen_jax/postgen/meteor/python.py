# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR 1.5 in Python (``METEOR(backend="native")``): the jar's SCORE statistics without Java.

Work is done once: each distinct line is normalized once, each distinct word analysed once
(``matchers.Analyzer``; sentences packed together by ``packed.Packer``), each distinct (test,
reference) pair aligned once; an image keeps the statistics of its best reference (the first of
equal scores), as the jar does.

The SCORE protocol and the choice of the best reference follow Meteor 1.5's Java ``Meteor`` and
``MeteorScorer`` (Michael Denkowski and Alon Lavie, Carnegie Mellon University), so this file is
under their licence, LGPL-2.1-only (docs/licensing.md); the memos are this package's own.
"""
from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ...io import cache_folder
from ...processes import collector_paused, cores_here
from . import compile_apart, fast, packed, paraphrase, scoring
from .jar import score_line
from .jit import compiling_message, mark_compiled
from .matchers import Analyzer, Sentence
from .normalize import is_plain, java_tokens, java_trim, normalize, plain_tokens
from .packed import Packer
from .paraphrase import table
from .resources import synonyms

MEMO_LIMIT = 1_000_000  # pairs whose statistics are kept; past it the memo starts afresh
BATCH = 5_000  # new pairs aligned per compiled call (their sentences' arrays are held together: at 20,000
# pairs two batches in flight held 136 MB more at 40,504 images, for no speed)
WHOLE_TABLE_SENTENCES = 100_000  # sentences asked about (test and references, repeats counted) from which a
# first run builds and keeps the whole paraphrase table rather than one of their words: its ~9 CPU s more, once,
# are a small share of such a run (COCOEvalCap takes minutes there), and every later run then loads it with no
# check of its words (at 40,504 COCO images, 243,000 sentences, that check cost 1.5 s of each warm run's 18.5)


def _segment(references: list[str], candidate: str) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(test, references) of one image as the jar reads pycocoevalcap's SCORE line, normalized. Where
    every string is plain (``is_plain``: no ``|||``, nothing the line or the normalizer would change
    but spaces) its words are the answer, without building and splitting the line."""
    if references and is_plain(candidate) and all(map(is_plain, references)):
        return plain_tokens(candidate), [plain_tokens(r) for r in references]
    refs, test = segment_parts(score_line(references, candidate))
    return normalize(test), [normalize(r) for r in refs]


def segment_parts(line: str) -> tuple[list[str], str]:
    """(references, test) of a SCORE line as the jar splits it (``split("\\\\|\\\\|\\\\|")``, which drops
    trailing empty parts, then ``trim``)."""
    parts = line.split("|||")
    while parts and parts[-1] == "":
        parts.pop()
    return [java_trim(p) for p in parts[1:-1]], java_trim(parts[-1])


class PythonMeteor:
    """The jar's SCORE statistics, computed here; resources loaded on first use.

    ``tables_of_words``: where the cache folder lacks the whole paraphrase table, use a table of the
    words and neighbour pairs of the sentences asked about (``paraphrase.table_of_words``: exactly
    the entries they can use; built in seconds, not the whole table's build), again for a later
    call that brings new ones; from ``WHOLE_TABLE_SENTENCES`` sentences in one call, the whole table
    instead (built and kept: later runs load it unchecked). Without ``tables_of_words`` (the API, a
    search's workers): the whole table where the cache folder holds it; else a table of words kept
    there (``evaluate``'s) while it serves the sentences asked about; else the whole table, built
    and kept (so ``evaluate`` then reads it). ``compile_apart``: a first run compiles in two processes of their
    own (``compile_apart.py``) while this one builds the table. For a process that is asked about all its sentences at once (``evaluate``'s METEOR
    process); elsewhere no table of words is built (``doctor --prepare`` builds the whole one ahead)."""

    def __init__(self, tables_of_words: bool = False, compile_apart: bool = False):
        self._tables_of_words = tables_of_words
        self._compile_apart = compile_apart  # a first run compiles in processes of their own
        self._compiling: list = []  # the processes compiling (compile_apart), until their code is loaded
        self._words: frozenset[str] | None = None  # the grams the table serves (None: all, the whole table)
        self._analyzer: Analyzer | None = None
        self._packer: Packer | None = None
        self._pairs: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}  # (test, reference) -> its row
        self._rows = np.zeros((0, scoring.K))  # f64[memo capacity, 23]: each pair's statistics
        self._scores = np.zeros(0)  # f64[memo capacity]: each pair's score
        self._used = 0  # rows of the memo's arrays in use
        self._pending: Callable[[], np.ndarray] | None = None  # an unfinished ``stats_started``
        self.aligned = 0  # distinct pairs aligned so far

    @property
    def loaded(self) -> bool:
        """Whether ``load`` has run."""
        return self._packer is not None

    def load(self) -> None:
        """Load the resources (synonyms, the compiled paraphrase table and search, compiling them the
        first time on a machine). With no whole table in the cache folder, and ``tables_of_words``
        or a table of words kept there, the table waits for the sentences (``stats_started``)."""
        if self._packer is None:
            message = compiling_message(_compiled_sources())
            if message:
                print(message, file=sys.stderr, flush=True)
            apart = message and self._compile_apart and cache_folder() is not None
            if apart:  # first: they compile while this process reads the synonyms and builds the table
                self._compiling = [compile_apart.started(part) for part in compile_apart.PARTS]
            whole = paraphrase.kept_table()
            if whole is None and not self._tables_of_words and not paraphrase.words_kept():
                whole = table()  # built here, once per cache folder
            self._words = None if whole is not None else frozenset()  # else: a table of words, once asked
            self._use(whole if whole is not None else paraphrase.empty_table())
            if not apart:
                self._compiled_ready()

    def _compiled_ready(self) -> None:
        """The compiled code compiled or loaded (where processes of their own compile it: once they
        have ended; one that failed leaves its part to be compiled here)."""
        for child in self._compiling:
            child.wait()
            child.stdout.close()
        self._compiling = []
        for part in compile_apart.PARTS:
            compile_apart.compile_part(part)
        mark_compiled(_compiled_sources())

    def _use(self, paraphrases: paraphrase.ParaphraseTable) -> None:
        """Analyse words with the table ``paraphrases`` from now on (the word features kept so far
        hold another table's ids: dropped; the pairs' statistics do not depend on the table used)."""
        self._analyzer = Analyzer(synonyms(), paraphrases)
        self._packer = Packer(self._analyzer)

    def _serve_words(self, segments: list) -> None:
        """With a table of some words: one that serves every word and neighbour pair (``"a man"``) of
        ``segments`` (test, references)."""
        if self._words is None:
            return
        asked = sum(1 + len(refs) for _, refs in segments)
        if asked >= WHOLE_TABLE_SENTENCES:
            self._use_whole(f"{asked:,} sentences in one call (from {WHOLE_TABLE_SENTENCES:,}, the whole table "
                            "rather than one of their words)")
            return
        sentences = set(itertools.chain.from_iterable((test, *refs) for test, refs in segments))
        grams = set(itertools.chain.from_iterable(sentences))
        grams.update(itertools.chain.from_iterable(map(" ".join, zip(s, s[1:])) for s in sentences))
        if self._words.issuperset(grams):
            return
        if self._tables_of_words:
            paraphrases, self._words = paraphrase.table_of_words(frozenset(grams) | self._words)
        else:  # the table of words evaluate kept, where it serves these sentences; else the whole table
            paraphrases, self._words = paraphrase.kept_table_of_words(frozenset(grams))
            if paraphrases is None:
                self._use_whole("the kept paraphrase table of words (evaluate's) lacks words of these sentences")
                return
        self._use(paraphrases)

    def _use_whole(self, why: str) -> None:
        """The whole table from now on; where the cache folder lacks it, one line on stderr saying why
        it is built now (kept, it replaces the tables of words in the cache folder)."""
        if paraphrase.kept_table() is None:
            print(f"METEOR: {why}: building the whole paraphrase table", file=sys.stderr, flush=True)
        self._words = None
        self._use(table())

    @staticmethod
    def compiled_already() -> bool:
        """Whether numba's cache holds the compiled search (``load`` compiles nothing)."""
        return compiling_message(_compiled_sources()) is None

    def _sentence(self, tokens: tuple[str, ...]) -> Sentence:
        return self._analysed(tokens)[0]

    def _analysed(self, tokens: tuple[str, ...]) -> tuple[Sentence, tuple]:
        """The sentence's features and its arrays for the compiled search (``fast.pack``): one
        sentence's form, for ``alignment`` and the tests (``stats`` packs many at once), with the
        whole table: one of some words, chosen again for each sentence, could give two sentences
        ids of two tables."""
        self.load()
        if self._words is not None:
            self._use_whole("a sentence analysed on its own (alignment)")
        sentence = self._analyzer.sentence(tokens)
        return sentence, fast.pack(sentence, self._analyzer.table)

    def segment(self, references: list[str], candidate: str) -> tuple[float, ...]:
        """The SCORE statistics of one image (what the jar replies to pycocoevalcap's line)."""
        return tuple(self.stats({0: references}, {0: [candidate]})[0].tolist())

    def stats(self, gts: dict, res: dict) -> np.ndarray:
        """f64[images, 23]: SCORE statistics per image, in ``gts`` order. The new distinct pairs are
        aligned together (compiled batches on every core), then each image keeps its best reference."""
        return self.stats_started(gts, res)()

    def stats_started(self, gts: dict, res: dict) -> Callable[[], np.ndarray]:
        """``stats``, begun: its Python part (segmenting, the new pairs, each batch's word ids) now, in
        the caller's thread; its compiled part (packing, aligning: no GIL held) in threads of its own,
        so that the caller can work meanwhile; calling the result waits and gives the rows. A call
        made while an earlier one is unfinished finishes that one first."""
        self.load()
        if self._pending is not None:
            self._pending()
        with collector_paused():
            segments = [_segment(gts[i], res[i][0]) for i in gts]
            self._serve_words(segments)
            if self._compiling:
                self._compiled_ready()
            if len(self._pairs) + sum(len(refs) for _, refs in segments) > MEMO_LIMIT:
                self._pairs.clear()
                self._used = 0
            new = list(dict.fromkeys((t, r) for t, refs in segments for r in refs if (t, r) not in self._pairs))
            batches = [new[start:start + BATCH] for start in range(0, len(new), BATCH)]
            pool = ThreadPoolExecutor(max_workers=max(1, min(len(batches), cores_here())))
            # each batch aligned as soon as its word ids are ready, while the next one's are made
            aligned = [pool.submit(self._computed, *self._prepared(batch)) for batch in batches]
        pool.shutdown(wait=False)  # its threads end with the last batch

        def finish() -> np.ndarray:
            if self._pending is finish:
                self._pending = None
            with collector_paused():
                for batch, future in zip(batches, aligned):
                    self._store(batch, *future.result())
                aligned.clear()
                pairs = self._pairs
                flat = np.fromiter((pairs[test, ref] for test, refs in segments for ref in refs), np.int64)
            counts = np.fromiter((len(refs) for _, refs in segments), np.int64, len(segments))
            return self._rows[flat[_first_best(self._scores[flat], counts)]].reshape(len(gts), scoring.K)
        self._pending = finish
        return finish

    def _prepared(self, pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple:
        """A batch's inputs to ``_computed``: its sentences' word ids (``Packer.prepare``), and each
        pair's test and reference as indices into them."""
        index: dict[tuple[str, ...], int] = {}
        for pair in pairs:
            for tokens in pair:
                index.setdefault(tokens, len(index))
        tests = np.fromiter((index[t] for t, _ in pairs), np.int64, len(pairs))
        refs = np.fromiter((index[r] for _, r in pairs), np.int64, len(pairs))
        return self._packer.prepare(list(index)), tests, refs

    def _computed(self, sentences: tuple, tests: np.ndarray, refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(f64[pairs, 23] statistics, f64[pairs] scores) of a prepared batch: compiled code only."""
        offsets, data = self._packer.packed(*sentences)
        return fast.packed_pair_stats(tests, refs, offsets, data)

    def _store(self, pairs: list, rows: np.ndarray, scores: np.ndarray) -> None:
        """The pairs' rows and scores into the memo's arrays (grown by doubling)."""
        start = self._used
        if start + len(pairs) > len(self._scores):
            capacity = max(2 * len(self._scores), start + len(pairs), 1024)
            self._rows = np.concatenate([self._rows[:start], np.zeros((capacity - start, scoring.K))])
            self._scores = np.concatenate([self._scores[:start], np.zeros(capacity - start)])
        self._rows[start:start + len(pairs)] = rows
        self._scores[start:start + len(pairs)] = scores
        self._pairs.update(zip(pairs, range(start, start + len(pairs))))
        self._used = start + len(pairs)
        self.aligned += len(pairs)


def _compiled_sources() -> list[Path]:
    """The source files of the compiled functions (numba's cache is per file and content)."""
    return [Path(fast.__file__), Path(paraphrase.__file__), Path(packed.__file__)]


def _first_best(scores: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """i64[segments]: for each segment's run of ``counts`` scores in ``scores`` (f64[sum(counts)]), the
    position of its highest score, the first of equal ones (the jar's ``>``, from -1)."""
    if counts.size and counts.min() < 1:
        raise ValueError("METEOR: an image without references")
    position = np.arange(len(scores))
    segment = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((position, -scores, segment))
    return order[np.cumsum(counts) - counts]


def alignment(meteor: PythonMeteor, test: str, reference: str) -> list[tuple[int, int, int, int, int]]:
    """The best alignment of one raw (test, reference) pair, as the jar's -writeAlignments lists it:
    (reference start, length, test start, length, stage) in reference order."""
    meteor.load()
    return fast.pair_alignment(meteor._analysed(normalize(test))[1], meteor._analysed(normalize(reference))[1])


__all__ = ["PythonMeteor", "alignment", "java_tokens", "segment_parts"]
