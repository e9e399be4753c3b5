"""BLEU-1..4 as pycocoevalcap computes it, over all images at once.

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

from .base import PostgenMetric, check_inputs
from .corpus import MAX_ORDER, Corpus

TINY, SMALL = 1e-15, 1e-9


def bleu_counts(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(correct: i64[C, 4], guess: i64[C, 4], testlen: i64[C], reflen: i64[C] the closest reference length).

    Worked out once per corpus: BLEU-1..4, scored in turn on the same captions, count them once.
    """
    return corpus.once("bleu counts", lambda: _counts(corpus))


def _counts(corpus: Corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    R, C = corpus.R, len(corpus.cands)  # noqa: N806
    lengths = corpus.encoded.lengths
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
    ref_len = corpus.encoded.lengths[refs]
    key = 2 * np.abs(ref_len - testlen[:, None]) + (ref_len > testlen[:, None])  # min (|l - t|, l): ties to shorter
    best = np.argmin(np.where(real, key, np.iinfo(np.int64).max), axis=1)
    return ref_len[np.arange(len(testlen)), best]


def bleu_scores(correct, guess, testlen, reflen) -> tuple[np.ndarray, np.ndarray]:
    """(f[4] corpus BLEU-1..4 from summed counts, f[C, 4] each candidate's sentence BLEU-1..4)."""
    def bleu(correct, guess, testlen, reflen):
        precision = (correct.astype(np.float64) + TINY) / (guess + SMALL)
        scores = np.cumprod(precision, axis=-1) ** (1.0 / np.arange(1, MAX_ORDER + 1))
        ratio = (testlen + TINY) / (reflen + SMALL)
        penalty = np.where(ratio < 1, np.exp(1 - 1 / np.where(ratio < 1, ratio, 1.0)), 1.0)
        return scores * np.asarray(penalty)[..., None]
    per_image = bleu(correct, guess, testlen, reflen)
    corpus = bleu(correct.sum(0), guess.sum(0), float(testlen.sum()), float(reflen.sum()))
    return corpus, per_image


class BLEU(PostgenMetric):
    """BLEU-n; per-image scores are pycocoevalcap's sentence-level BLEU, the corpus score its corpus BLEU.

    ``backend``: ``"array"`` (default, all images at once) or ``"coco"`` (pycocoevalcap itself).
    """

    corpus_is_mean = False

    def __init__(self, n: int = 4, backend: str = "array"):
        if n not in (1, 2, 3, 4):
            raise ValueError(f"BLEU order must be 1-4, got {n}")
        if backend not in ("array", "coco"):
            raise ValueError(f"BLEU backend must be 'array' or 'coco', got {backend!r}")
        self.n, self.backend = n, backend
        self.name = f"Bleu_{n}"

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        if self.backend == "coco":
            from pycocoevalcap.bleu.bleu import Bleu
            scores, per_image = Bleu(self.n).compute_score(gts, res, verbose=0)
            return float(scores[-1]), [float(s) for s in per_image[-1]]
        from .cider import corpus_of
        corpus, per_image = bleu_scores(*bleu_counts(corpus_of(gts, res)))
        return float(corpus[self.n - 1]), per_image[:, self.n - 1].tolist()

    def score_blocks(self, gts, res, blocks):
        """Each block's corpus BLEU from its images' summed counts (as pycocoevalcap on the block
        alone: a candidate's counts and closest reference length depend on its image only)."""
        if self.backend == "coco":
            return super().score_blocks(gts, res, blocks)
        check_inputs(gts, res)
        from .cider import corpus_of
        correct, guess, testlen, reflen = bleu_counts(corpus_of(gts, res))
        position = {image_id: k for k, image_id in enumerate(gts)}
        by_block = []
        for block in blocks:
            at = [position[i] for i in block]
            by_block.append(bleu_scores(correct[at], guess[at], testlen[at], reflen[at])[0][self.n - 1])
        per_image = bleu_scores(correct, guess, testlen, reflen)[1][:, self.n - 1]
        return np.array(by_block), per_image
