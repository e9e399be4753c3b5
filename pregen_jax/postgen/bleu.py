# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, bleu/bleu.py and bleu/bleu_scorer.py: Hao Fang, Tsung-Yi Lin;
#   BleuScorer first written by David Chiang)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""BLEU-1..4 as pycocoevalcap computes it, over all images at once.

How it was written: the counting and scoring rules follow coco-caption's ``bleu/bleu_scorer.py``
(``cook_refs``, ``cook_test``, ``BleuScorer.compute_score`` with ``option="closest"``: Hao Fang and
Tsung-Yi Lin's version of David Chiang's BLEU scorer) rule by rule, its constants and order of
operations kept, re-expressed as array operations over all images (no line of it is copied; the
counting over the shared n-gram join is this package's own). So this file is under the licence
coco-caption gives ``bleu/`` (its ``bleu/LICENSE``: MIT, Copyright (c) 2015 Xinlei Chen, Hao Fang,
Tsung-Yi Lin, and Ramakrishna Vedantam) and credits its authors; docs/licensing.md quotes the grant
and the older notice in ``bleu_scorer.py``'s header.

pycocoevalcap's quirks, reproduced: a candidate n-gram's count is clipped by its largest count
in any one reference; each precision is (correct + 1e-15) / (guess + 1e-9) ("tiny" and "small":
an empty candidate scores 0, not NaN); BLEU-n is the n-th root of the running product of the
precisions; the brevity penalty uses the 'closest' reference length (ties go to the shorter)
and applies when (testlen + 1e-15) / (reflen + 1e-9) < 1. The per-image scores are these
sentence-level BLEUs; the corpus score comes from the summed counts and summed lengths (not a
mean of the per-image scores).
"""
from __future__ import annotations

import numpy as np

from .base import PostgenMetric, backend_name
from .corpus import MAX_ORDER, Corpus
from .registry import backend_setting, register_metric

TINY, SMALL = 1e-15, 1e-9


def bleu_counts(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(correct: i64[C, 4], guess: i64[C, 4], testlen: i64[C], reflen: i64[C] the closest reference length).

    Worked out once per corpus: BLEU-1..4, scored in turn on the same captions, count them once.
    """
    return corpus.once("bleu counts", lambda: _counts(corpus))


def _counts(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    R, C = corpus.R, len(corpus.cands)  # noqa: N806
    lengths = corpus.lengths
    testlen = lengths[R:]
    correct = np.zeros((C, MAX_ORDER), np.int64)
    guess = np.maximum(0, testlen[:, None] - np.arange(MAX_ORDER)[None, :])
    for n in range(1, MAX_ORDER + 1):
        j = corpus.joined(n)
        # the largest count of each (gram, image) over the image's references: a max over its run
        if j.run_start.size:
            max_count = np.maximum.reduceat(j.r_tf, j.run_start)
            clip = np.where(j.c_run >= 0, max_count[j.c_run], 0)
            correct[:, n - 1] = np.bincount(j.c_cand, np.minimum(j.c_tf, clip), C).astype(np.int64)
    reflen = _closest(corpus, testlen)
    return correct, guess, testlen, reflen


def _closest(corpus: Corpus, testlen: np.ndarray) -> np.ndarray:
    """i64[C]: the reference length closest to each candidate's length, ties to the shorter."""
    counts = corpus.ref_count[corpus.cand_image]
    slots = np.arange(int(counts.max()) if counts.size else 0)
    real = slots[None, :] < counts[:, None]                                           # b[C, refs]
    refs = np.where(real, corpus.ref_start[corpus.cand_image][:, None] + slots[None, :], 0)
    ref_len = corpus.lengths[refs]
    key = 2 * np.abs(ref_len - testlen[:, None]) + (ref_len > testlen[:, None])  # min (|l - t|, l): ties to shorter
    best = np.argmin(np.where(real, key, np.iinfo(np.int64).max), axis=1)
    return ref_len[np.arange(len(testlen)), best]


def bleu_scores(correct, guess, testlen, reflen) -> tuple[np.ndarray, np.ndarray]:
    """(f[4] corpus BLEU-1..4 from summed counts, f[C, 4] each candidate's sentence BLEU-1..4)."""
    per_image = _bleu(correct, guess, testlen, reflen)
    corpus = _bleu(correct.sum(0), guess.sum(0), float(testlen.sum()), float(reflen.sum()))
    return corpus, per_image


def _bleu(correct, guess, testlen, reflen) -> np.ndarray:
    """f64[..., 4]: BLEU-1..4 of counts ``correct``, ``guess`` (f[..., 4]) and lengths (f[...])."""
    precision = (np.asarray(correct, np.float64) + TINY) / (guess + SMALL)
    scores = np.cumprod(precision, axis=-1) ** (1.0 / np.arange(1, MAX_ORDER + 1))
    ratio = (testlen + TINY) / (reflen + SMALL)
    penalty = np.where(ratio < 1, np.exp(1 - 1 / np.where(ratio < 1, ratio, 1.0)), 1.0)
    return scores * np.asarray(penalty)[..., None]


def bleu_stats(corpus: Corpus) -> np.ndarray:
    """f64[C, 10]: each candidate's BLEU statistics: clipped matches of orders 1-4, guesses of
    orders 1-4, its length and the closest reference length (all counts: their sums are exact)."""
    correct, guess, testlen, reflen = bleu_counts(corpus)
    return np.concatenate([correct, guess, testlen[:, None], reflen[:, None]], axis=1).astype(np.float64)


def coco_bleu_stats(gts: dict, res: dict) -> np.ndarray:
    """f64[I, 10]: ``bleu_stats`` as pycocoevalcap's ``BleuScorer`` counts them (its cooked
    sentences, its 'closest' reference length): the toolkit's own statistics, in ``gts`` order."""
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer
    scorer = BleuScorer(n=MAX_ORDER)
    for i in gts:
        scorer += (res[i][0], gts[i])
    rows = []
    for comps in scorer.ctest:
        reflen = scorer._single_reflen(comps["reflen"], "closest", comps["testlen"])
        rows.append([*comps["correct"], *comps["guess"], comps["testlen"], reflen])
    return np.array(rows, np.float64).reshape(len(rows), 2 * MAX_ORDER + 2)


class BLEU(PostgenMetric):
    """BLEU-n; per-image scores are pycocoevalcap's sentence-level BLEU, the corpus score its corpus BLEU.

    Statistics (``stats``: f64[I, 10], ``bleu_stats``) are summed over images, then scored
    (``from_sums``). ``backend``: ``"native"`` (default, all images at once) or ``"coco"``
    (pycocoevalcap's ``BleuScorer`` counts them).
    """

    corpus = "summed"

    def __init__(self, n: int = 4, backend: str = "native"):
        if n not in (1, 2, 3, 4):
            raise ValueError(f"BLEU order must be 1-4, got {n}")
        backend = backend_name(backend, "BLEU")
        self.n, self.backend = n, backend
        self.name = f"Bleu_{n}"

    @classmethod
    def from_options(cls, name, options):
        return cls(int(name[-1]), options.backend)

    def _checked_stats(self, gts, res):
        if self.backend == "coco":
            return coco_bleu_stats(gts, res)
        from .cider import corpus_of
        return bleu_stats(corpus_of(gts, res))

    def from_sums(self, sums, images):
        sums = np.asarray(sums, np.float64)
        m = MAX_ORDER
        return _bleu(sums[..., :m], sums[..., m:2 * m], sums[..., 2 * m], sums[..., 2 * m + 1])[..., self.n - 1]


for _n in (1, 2, 3, 4):
    register_metric(f"Bleu_{_n}", BLEU, description=f"BLEU-{_n} (pycocoevalcap's corpus BLEU from summed counts)",
                    depends_on=backend_setting)
