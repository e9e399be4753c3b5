"""ROUGE-L as pycocoevalcap computes it, over all images at once.

pycocoevalcap's quirks, reproduced: strings are split on a single space (``split(" ")``: an
empty string is one empty token, two spaces make an empty token between them); precision and
recall are the longest common subsequence over the candidate's and the reference's lengths, and
the *best precision* and the *best recall* are taken over the references separately (possibly
from different references); F = (1 + 1.2^2) P R / (R + 1.2^2 P), 0 when either is 0. Corpus
score: the mean over images.

The longest common subsequences of all (candidate, reference) pairs come from a bit-parallel
recurrence (Crochemore et al. 2001) on 64-bit words, one step per reference position for all
pairs at once; candidates longer than 63 tokens go through pycocoevalcap's own dynamic program.
"""
from __future__ import annotations

import numpy as np

from .base import PostgenMetric, check_inputs
from .corpus import Corpus

BETA = 1.2
_BITS = 63


def lcs_lengths(corpus: Corpus) -> np.ndarray:
    """i64[P]: the longest common subsequence of each (candidate, reference) pair (``corpus.pair_*``)."""
    encoded, R = corpus.encoded_rouge, corpus.R  # noqa: N806
    lengths, starts, ids = encoded.lengths, encoded.starts, encoded.ids
    pair_cand, pair_ref = corpus.pair_cand, corpus.pair_ref
    cand_len = lengths[R:]
    long = cand_len > _BITS
    # the bit mask of each (candidate, token): where the token occurs in the candidate
    token_cand = encoded.string[starts[R]:] - R if len(corpus.cands) else np.zeros(0, np.int64)
    token_ids, token_pos = ids[starts[R]:] if len(corpus.cands) else ids[:0], encoded.position[starts[R]:]
    fits = ~long[token_cand]
    size = encoded.vocab_size + 1
    key = token_cand[fits] * size + token_ids[fits]
    order = np.argsort(key, kind="stable")
    key, bits = key[order], np.left_shift(np.uint64(1), token_pos[fits][order].astype(np.uint64))
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else key
    mask_keys, masks = key[first], np.bitwise_or.reduceat(bits, first) if key.size else bits
    # each pair's reference as the candidate's masks of its tokens: one row per pair, looked up for
    # real tokens only (in pair order, so the keys looked up are nearly sorted)
    ref_len = lengths[pair_ref]
    width = int(ref_len.max()) if ref_len.size else 0
    first_token = np.zeros(len(ref_len), np.int64)
    np.cumsum(ref_len[:-1], out=first_token[1:])
    pair = np.repeat(np.arange(len(ref_len)), ref_len)
    column = np.arange(int(ref_len.sum())) - first_token[pair]
    wanted = pair_cand[pair] * size + ids[starts[pair_ref][pair] + column]
    matches = np.zeros((len(ref_len), width), np.uint64)
    if mask_keys.size:
        at = np.searchsorted(mask_keys, wanted).clip(max=len(mask_keys) - 1)
        matches[pair, column] = np.where(mask_keys[at] == wanted, masks[at], np.uint64(0))
    v = np.full(len(pair_cand), np.iinfo(np.uint64).max, np.uint64)
    for j in range(width):
        u = v & matches[:, j]
        v = (v + u) | (v - u)
    low = np.left_shift(np.uint64(1), np.minimum(cand_len[pair_cand], _BITS).astype(np.uint64)) - np.uint64(1)
    lcs = np.minimum(cand_len[pair_cand], _BITS) - np.bitwise_count(v & low).astype(np.int64)  # zeros: matched
    for p in np.flatnonzero(long[pair_cand]):  # rare: pycocoevalcap's own dynamic program
        from pycocoevalcap.rouge.rouge import my_lcs
        c, r = pair_cand[p], pair_ref[p]
        lcs[p] = my_lcs(list(ids[starts[r]:starts[r] + lengths[r]]), list(ids[starts[R + c]:starts[R + c] + cand_len[c]]))
    return lcs.astype(np.int64)


def rouge_l(corpus: Corpus, beta: float = BETA) -> np.ndarray:
    """f64[C]: ROUGE-L F of each candidate against the references of its image."""
    C, R = len(corpus.cands), corpus.R  # noqa: N806
    lengths = corpus.encoded_rouge.lengths
    lcs = lcs_lengths(corpus).astype(np.float64)
    precision = lcs / lengths[R:][corpus.pair_cand]
    recall = lcs / lengths[corpus.pair_ref]
    best_p = np.zeros(C)
    best_r = np.zeros(C)
    np.maximum.at(best_p, corpus.pair_cand, precision)
    np.maximum.at(best_r, corpus.pair_cand, recall)
    ok = (best_p != 0) & (best_r != 0)
    denominator = np.where(ok, best_r + beta ** 2 * best_p, 1.0)
    return np.where(ok, ((1 + beta ** 2) * best_p * best_r) / denominator, 0.0)


class ROUGE_L(PostgenMetric):  # noqa: N801 (pycocoevalcap's name)
    """ROUGE-L F-measure (beta 1.2), the mean over images.

    ``backend``: ``"array"`` (default, all images at once) or ``"coco"`` (pycocoevalcap itself).
    """

    name = "ROUGE_L"

    def __init__(self, backend: str = "array"):
        if backend not in ("array", "coco"):
            raise ValueError(f"ROUGE_L backend must be 'array' or 'coco', got {backend!r}")
        self.backend = backend

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        if self.backend == "coco":
            from pycocoevalcap.rouge.rouge import Rouge
            score, per_image = Rouge().compute_score(gts, res)
            return float(score), [float(s) for s in np.asarray(per_image)]
        from .cider import corpus_of
        per_image = rouge_l(corpus_of(gts, res))
        return float(np.mean(per_image)), per_image.tolist()
