# SPDX-FileCopyrightText: 2019 Ruotian Luo
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Diversity of several captions (samples) per image, as captioning papers report it.

How it was written: it follows the definitions of self-critical.pytorch's
``captioning/utils/div_utils.py`` (``compute_div_n``, ``compute_global_div_n``) and
``eval_multi.py`` (``eval_div_stats``: Ruotian Luo), rule by rule, re-expressed as array
operations over all images (no line of it is copied; this file keeps that project's MIT licence
and credits it, docs/licensing.md). The captions are tokenized first (PTB, as ``eval_div_stats``
does) and split with ``str.split()``.

- ``Div_n``: for each image, the distinct n-grams of its samples over their total number of
  *tokens* (not n-grams), with 1e-6 added to the denominator; the corpus score is the mean over
  images (``compute_div_n``). Per image: that ratio.
- ``gDiv_1``: the number of distinct words over the whole set (a count, ``compute_global_div_n``
  with n = 1). A corpus statistic: its per-image statistics are each image's set of words (a
  sparse 0/1 row over the words), so a resample's score is the number of words some resampled
  image uses (``counts @ rows`` > 0); per image, the image's own distinct words.
- ``mBLEU_n``: for each sample slot i, pycocoevalcap's corpus BLEU-n of sample i of every image
  against that image's other samples; the mean over i (``eval_div_stats``; it depends on the
  samples' order). Statistics: BLEU's ten counts (``bleu.bleu_stats``) of each slot, side by side.

- ``novel``: the share of each image's captions not among a training set's captions (exact match
  of the tokenized strings), the mean over images: this package's definition (papers report the
  share of novel captions; no reference code fixes the details).

``Self_CIDEr`` (Wang and Chan 2019) is in ``selfcider.py``. These metrics score one system's
samples among themselves (``SampleMetric``), so they live in a registry of their own
(``DIVERSITY``), apart from the metrics that score a caption against references.
"""
from __future__ import annotations

import numpy as np

from ..registry import Registry
from .base import PostgenMetric
from .bleu import MAX_ORDER, _bleu
from .corpus import _LIMIT, _gram_keys
from .recent import CACHE
from .text import Encoded, encode

EPSILON = 1e-6  # div_utils' denominator: distinct n-grams / (1e-6 + tokens)
DIVERSITY: Registry = Registry("diversity metric")  # name -> a factory of its metric


def check_samples(gts: dict, res: dict, least: int = 1, source: str = "captions") -> int:
    """The number of samples per image of ``res`` (image -> list of caption strings), the same for
    every image of ``gts`` and at least ``least``; ValueError (one line) otherwise."""
    if set(gts) != set(res):
        missing = sorted(set(gts) ^ set(res), key=str)[:3]
        raise ValueError(f"{source}: references and samples cover different images (e.g. {missing})")
    counts = {len(res[i]) for i in gts}
    if len(counts) > 1:
        first = next(iter(gts))
        other = next(i for i in gts if len(res[i]) != len(res[first]))
        raise ValueError(f"{source}: image {first!r} has {len(res[first])} samples but image {other!r} has "
                         f"{len(res[other])} (every image needs the same number)")
    samples = counts.pop() if counts else 0
    if samples < least:
        raise ValueError(f"{source}: {samples} sample(s) per image; at least {least} needed")
    return samples


class SampleMetric(PostgenMetric):
    """A metric of several captions per image of one system: ``res`` maps each image to its samples
    (a list of m tokenized strings, the same m for every image); ``gts`` gives the images' order
    (and, for Self-CIDEr, document frequencies). ``least``: the fewest samples it scores."""

    least = 1

    def stats(self, gts: dict, res: dict):
        check_samples(gts, res, self.least, self.name)
        return self._checked_stats(gts, res)

    def stats_of_tokenized(self, gts: dict, res: dict):
        return self.stats(gts, res)

    def variant(self, samples: str) -> str:
        """The signature's variant field: which definition, with its n and the set it reads."""
        raise NotImplementedError


def encoded_samples(samples: list[list[str]]) -> Encoded:
    """The samples' strings (image by image) as token ids, split with ``str.split()`` (``text.encode``):
    kept a while, so that the metrics scoring one system's samples in turn encode them once."""
    strings = tuple(s for group in samples for s in group)
    return CACHE.get(("encoded samples", strings), lambda: encode(list(strings)))


def gram_entries(encoded: Encoded, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i64[E] n-gram key, i64[E] string, i64[E] count): the distinct (n-gram of order ``n``, string) of
    ``encoded``, sorted by (n-gram, string). Keys are dense ids only where the raw ones would overflow."""
    strings = max(len(encoded.lengths), 1)
    valid = encoded.position + n <= encoded.lengths[encoded.string]
    keys, string = _gram_keys(encoded, n)[valid], encoded.string[valid]
    if keys.size and int(keys.max()) >= _LIMIT // strings:
        keys = np.unique(keys, return_inverse=True)[1].ravel().astype(np.int64)
    combined, count = np.unique(keys * strings + string, return_counts=True)
    return combined // strings, combined % strings, count


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """b[E]: where a run of equal (keys...) begins, in entries sorted by them."""
    new = np.ones(len(keys[0]), bool)
    if len(new) > 1:
        new[1:] = np.logical_or.reduce([key[1:] != key[:-1] for key in keys])
    return new


class DivN(SampleMetric):
    """Div-n: per image, distinct n-grams of its samples / (1e-6 + their tokens); corpus: the mean."""

    corpus = "mean"
    score_range = (0.0, 1.0)  # an image's distinct n-grams never outnumber its tokens

    def __init__(self, n: int = 1):
        self.n, self.name = n, f"Div_{n}"

    def _checked_stats(self, gts, res):
        samples = [res[i] for i in gts]
        m, encoded = len(samples[0]), encoded_samples(samples)
        tokens = np.bincount(np.arange(len(encoded.lengths)) // m, encoded.lengths, len(samples))
        gram, string, _ = gram_entries(encoded, self.n)
        image = string // m
        distinct = np.bincount(image[run_starts(gram, image)], minlength=len(samples)).astype(np.float64)
        return (distinct / (EPSILON + tokens))[:, None]

    def variant(self, samples):
        return f"div{self.n}:distinct-{self.n}grams/(1e-6+tokens):mean-over-images|set:{samples}-samples-per-image"


class GlobalDiv1(SampleMetric):
    """gDiv-1: the number of distinct words over all images' samples (a count).

    Statistics: a sparse 0/1 matrix (``scipy.sparse.csr_array`` f64[images, words]), each image's
    words; ``from_sums`` counts the words with a positive sum. ``significance`` resamples it as the
    others (``counts @ rows``)."""

    name = "gDiv_1"
    corpus = "summed"
    score_range = (0.0, float("inf"))
    centred_draws = True  # a resample (about 63% of the images) always uses fewer words: ``significance`` centres

    def __init__(self):
        self.words: dict[str, int] = {}  # word -> its column, the same for every system this metric scores

    def _checked_stats(self, gts, res):
        from scipy.sparse import csr_array
        samples = [res[i] for i in gts]
        m, encoded = len(samples[0]), encoded_samples(samples)
        ids, first = np.unique(encoded.ids, return_index=True)           # the words used, by their first token
        tokens = " ".join(s for group in samples for s in group).split()  # str.split(), as div_utils splits
        column = np.zeros(encoded.vocab_size, np.int64)
        column[ids] = [self.words.setdefault(tokens[k], len(self.words)) for k in first]
        pairs = np.unique(encoded.string // m * max(encoded.vocab_size, 1) + encoded.ids)  # (image, word) once
        image, word = pairs // max(encoded.vocab_size, 1), column[pairs % max(encoded.vocab_size, 1)]
        return csr_array((np.ones(len(pairs)), (image, word)), shape=(len(samples), len(self.words)))

    def from_sums(self, sums, images):
        return np.count_nonzero(np.asarray(sums) > 0, axis=-1).astype(np.float64)

    def aggregate(self, stats):
        if hasattr(stats, "tocsr"):
            return self.from_sums(np.asarray(stats.sum(axis=0)).ravel(), stats.shape[0])
        return super().aggregate(stats)

    def per_image(self, stats):
        if hasattr(stats, "tocsr"):
            return np.diff(stats.tocsr().indptr).astype(np.float64)  # each image's own distinct words
        return super().per_image(stats)

    def without_each(self, rows) -> np.ndarray:
        """f64[images]: the score without each image: the words less those that image alone uses."""
        rows = rows.tocsr()
        total = np.asarray(rows.sum(axis=0)).ravel()
        alone = (rows @ (total == 1).astype(np.float64)).ravel()
        return self.aggregate(rows) - alone

    def variant(self, samples):
        return f"gdiv1:distinct-words:count|set:{samples}-samples-per-image"


class MutualBleu(SampleMetric):
    """mBLEU-n: the mean over sample slots i of pycocoevalcap's corpus BLEU-n of slot i against the
    image's other samples. Statistics: f64[images, 10 m], each slot's ``bleu_stats`` in turn."""

    corpus = "summed"
    least = 2

    def __init__(self, n: int = 4):
        self.n, self.name = n, f"mBLEU_{n}"

    def _checked_stats(self, gts, res):
        return mutual_bleu_stats([res[i] for i in gts])

    def from_sums(self, sums, images):
        sums = np.asarray(sums, np.float64)
        width = 2 * MAX_ORDER + 2
        slots = sums.reshape(*sums.shape[:-1], sums.shape[-1] // width, width)
        m = MAX_ORDER
        scores = _bleu(slots[..., :m], slots[..., m:2 * m], slots[..., 2 * m], slots[..., 2 * m + 1])
        return scores[..., self.n - 1].mean(axis=-1)

    def variant(self, samples):
        return (f"mbleu{self.n}:coco-corpus-bleu{self.n}:slot-vs-other-samples:closest-ref:mean-over-slots"
                f"|set:{samples}-samples-per-image")


class Novel(SampleMetric):
    """novel: the share of an image's captions (its samples, or its one caption) not among the training
    captions ``train`` (a set of strings tokenized as the captions are: a caption is novel unless
    one equals it exactly); the corpus score is the mean over images (with one caption per image:
    the share of the captions that are novel)."""

    name = "novel"
    corpus = "mean"

    def __init__(self, train: frozenset | None = None, source: str = ""):
        self.train, self.source = train, source

    def _checked_stats(self, gts, res):
        if self.train is None:
            raise ValueError("novel: no training captions given (--train-captions FILE)")
        return np.array([[np.mean([caption not in self.train for caption in res[i]])] for i in gts], np.float64)

    def variant(self, samples):
        return (f"novel:share-not-in-train:exact-tokenized-match|train:{self.source}"
                f":{len(self.train or ())}-distinct|set:{samples}-samples-per-image")


def mutual_bleu_stats(samples: list[list[str]]) -> np.ndarray:
    """f64[images, 10 m]: for each slot k, ``bleu.bleu_stats`` of sample k of each image against the image's
    other samples, as pycocoevalcap's ``BleuScorer`` counts them: matches of orders 1-4 clipped by the
    largest count in any other sample, guesses, the length and the closest other length (ties to the
    shorter). All slots in one pass: a sample's clip is the largest count of its (image, n-gram) where
    another sample holds it, else the second largest."""
    images, m = len(samples), len(samples[0])
    encoded = encoded_samples(samples)
    lengths = encoded.lengths.reshape(images, m)
    correct = np.zeros((images * m, MAX_ORDER))
    for n in range(1, MAX_ORDER + 1):
        gram, string, count = gram_entries(encoded, n)
        image = string // m
        group = np.cumsum(run_starts(gram, image)) - 1                    # each entry's (n-gram, image)
        top = np.maximum.reduceat(count, np.flatnonzero(run_starts(gram, image))) if count.size else count
        at_top = count == top[group]
        tops = np.bincount(group, at_top, len(top))                     # how many samples hold the largest count
        second = np.zeros(len(top), np.int64)
        np.maximum.at(second, group[~at_top], count[~at_top])
        clip = np.where(at_top & (tops[group] == 1), second[group], top[group])
        correct[:, n - 1] = np.bincount(string, np.minimum(count, clip), images * m)
    guess = np.maximum(0, encoded.lengths[:, None] - np.arange(MAX_ORDER)[None, :])
    other = lengths[:, None, :].repeat(m, axis=1)                                        # [images, k, j]
    key = 2 * np.abs(other - lengths[:, :, None]) + (other > lengths[:, :, None])      # ties to the shorter
    key[:, np.arange(m), np.arange(m)] = np.iinfo(np.int64).max                        # not itself
    reflen = np.take_along_axis(other, key.argmin(axis=2)[:, :, None], axis=2)[:, :, 0]
    stats = np.concatenate([correct, guess, encoded.lengths[:, None], reflen.reshape(-1, 1)], axis=1)
    return stats.reshape(images, m * (2 * MAX_ORDER + 2)).astype(np.float64)


def diversity_metric(name: str) -> SampleMetric:
    """The diversity metric registered as ``name``."""
    return DIVERSITY.get(name)()


for _n in (1, 2):
    DIVERSITY.add(f"Div_{_n}", lambda n=_n: DivN(n))
DIVERSITY.add("gDiv_1", GlobalDiv1)
DIVERSITY.add("novel", Novel)
for _n in (1, 2, 3, 4):
    DIVERSITY.add(f"mBLEU_{_n}", lambda n=_n: MutualBleu(n))
