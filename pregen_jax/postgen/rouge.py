# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, rouge/rouge.py: Ramakrishna Vedantam)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: BSD-2-Clause-Views
"""ROUGE-L as pycocoevalcap computes it, over all images at once.

How it was written: the scoring rules (the split on single spaces, precision and recall per
reference, the best of each taken separately, beta 1.2, 0 when either is 0) follow coco-caption's
``rouge/rouge.py`` (``Rouge.calc_score``: Ramakrishna Vedantam, after Lin 2004) rule by rule,
re-expressed as array operations; the longest common subsequences come from a bit-parallel
algorithm of the literature (below), not from its ``my_lcs``, which is imported from the installed
pycocoevalcap, not copied, for long candidates. So this file is under coco-caption's licence (its
``license.txt``: BSD-2-Clause-Views, Copyright (c) 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and
Ramakrishna Vedantam; docs/licensing.md).

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

from .base import PostgenMetric, backend_name
from .corpus import Corpus
from .registry import backend_setting, register_metric
from .text import Encoded

BETA = 1.2
_BITS = 63
_DENSE = 1 << 23  # entries of the dense (candidate, word) mask table (64 MiB)


def lcs_lengths(corpus: Corpus, encoded: Encoded | None = None) -> np.ndarray:
    """i64[P]: the longest common subsequence of each (candidate, reference) pair (``corpus.pair_*``);
    ``encoded``: ``corpus.encoded_rouge()`` where the caller has it."""
    encoded, R = encoded if encoded is not None else corpus.encoded_rouge(), corpus.R  # noqa: N806
    lengths, starts, ids = encoded.lengths, encoded.starts, encoded.ids
    pair_cand, pair_ref = corpus.pair_cand, corpus.pair_ref
    cand_len = lengths[R:]
    long = cand_len > _BITS
    # tokens numbered among the candidates' own words (a reference word no candidate holds never matches)
    cand_tokens = ids[starts[R]:] if len(corpus.cands) else ids[:0]
    token_cand = encoded.string[starts[R]:] - R if len(corpus.cands) else np.zeros(0, np.int64)
    token_pos = encoded.position[starts[R]:] if len(corpus.cands) else np.zeros(0, np.int64)
    vocab = np.unique(cand_tokens)
    size = max(len(vocab), 1)
    local = np.full(max(encoded.vocab_size, int(ids.max(initial=-1)) + 1), -1, np.int64)  # id -> its number among
    local[vocab] = np.arange(len(vocab))                                                  # the candidates' words
    fits = ~long[token_cand]
    key = token_cand[fits] * size + local[cand_tokens[fits]]
    bits = np.left_shift(np.uint64(1), token_pos[fits].astype(np.uint64))
    ref_tokens = ids[:starts[R]] if R and len(corpus.cands) else ids[:0]
    ref_local = local[ref_tokens]
    # each pair's reference as the candidate's masks of its tokens, one row per reference position;
    # only reference tokens some candidate holds are expanded to pairs
    ref_len = lengths[pair_ref]
    width = int(ref_len.max()) if ref_len.size else 0
    held_token = np.flatnonzero(ref_local >= 0)
    held_ref = encoded.string[held_token]
    held_count = np.bincount(held_ref, minlength=R) if R else np.zeros(0, np.int64)
    held_start = np.zeros(R, np.int64)
    np.cumsum(held_count[:-1], out=held_start[1:])
    per_pair = held_count[pair_ref]
    pair = np.repeat(np.arange(len(pair_ref)), per_pair)
    offset = np.zeros(len(per_pair), np.int64)
    np.cumsum(per_pair[:-1], out=offset[1:])
    token = held_token[np.arange(len(pair)) - np.repeat(offset - held_start[pair_ref], per_pair)]
    column = encoded.position[token]
    wanted = pair_cand[pair] * size + ref_local[token]
    del token, held_token, held_ref, ref_local  # what is no longer read goes before the big tables (40,504 images:
    #                                             these and the lookups below held 130 MB under the match rows)
    if len(corpus.cands) * size <= _DENSE:   # a dense (candidate, word) table of masks
        table = np.zeros(len(corpus.cands) * size, np.uint64)
        np.bitwise_or.at(table, key, bits)
        found = table[wanted]
        del table
    else:                                     # too many words: sorted keys and a search
        order = np.argsort(key, kind="stable")
        key, bits = key[order], bits[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        mask_keys, masks = key[first], np.bitwise_or.reduceat(bits, first)
        at = np.searchsorted(mask_keys, wanted).clip(max=len(mask_keys) - 1)
        found = np.where(mask_keys[at] == wanted, masks[at], np.uint64(0))
        del order, first, mask_keys, masks, at
    del key, bits, wanted
    matches = np.zeros((width, len(ref_len)), np.uint64)
    matches[column, pair] = found
    del column, pair, found
    v = np.full(len(pair_cand), np.iinfo(np.uint64).max, np.uint64)
    u, t = np.empty_like(v), np.empty_like(v)
    for row in matches:  # V' = (V + U) | (V - U), U = V & M
        np.bitwise_and(v, row, out=u)
        np.add(v, u, out=t)
        np.subtract(v, u, out=u)
        np.bitwise_or(t, u, out=v)
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
    encoded = corpus.encoded_rouge()
    lengths = encoded.lengths
    lcs = lcs_lengths(corpus, encoded).astype(np.float64)
    precision = lcs / lengths[R:][corpus.pair_cand]
    recall = lcs / lengths[corpus.pair_ref]
    if C == 0:
        return np.zeros(0)
    first = np.zeros(C, np.int64)  # pairs are grouped by candidate, each candidate has references
    np.cumsum(corpus.ref_count[corpus.cand_image][:-1], out=first[1:])
    best_p = np.maximum.reduceat(precision, first)
    best_r = np.maximum.reduceat(recall, first)
    ok = (best_p != 0) & (best_r != 0)
    denominator = np.where(ok, best_r + beta ** 2 * best_p, 1.0)
    return np.where(ok, ((1 + beta ** 2) * best_p * best_r) / denominator, 0.0)


class ROUGE_L(PostgenMetric):  # noqa: N801 (pycocoevalcap's name)
    """ROUGE-L F-measure (beta 1.2), the mean over images.

    ``backend``: ``"native"`` (default, all images at once) or ``"coco"`` (pycocoevalcap itself).
    """

    name = "ROUGE_L"

    def __init__(self, backend: str = "native"):
        backend = backend_name(backend, "ROUGE_L")
        self.backend = backend

    @classmethod
    def from_options(cls, name, options):
        return cls(options.backend)

    def _checked_stats(self, gts, res):
        if self.backend == "coco":
            from pycocoevalcap.rouge.rouge import Rouge
            return np.asarray(Rouge().compute_score(gts, res)[1], np.float64)[:, None]
        from .cider import corpus_of
        return rouge_l(corpus_of(gts, res))[:, None]


register_metric("ROUGE_L", ROUGE_L, description="ROUGE-L F (pycocoevalcap)", depends_on=backend_setting)
