# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, cider/cider.py and cider/cider_scorer.py: Ramakrishna Vedantam, Tsung-Yi Lin)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: BSD-2-Clause-Views
"""CIDEr-D as pycocoevalcap computes it (its own scale, x10 included), over all images at once.

How it was written: the metric is Vedantam, Zitnick and Parikh's CIDEr-D (CVPR 2015), and its
rules as computed here (the document frequencies, the tf-idf weights, the clipped similarity, the
norms, the length penalty on the bigram count, the mean, the division and the x10) follow
coco-caption's ``cider/cider_scorer.py`` (``CiderScorer.compute_doc_freq`` and ``compute_cider``:
Ramakrishna Vedantam and Tsung-Yi Lin) rule by rule, re-expressed as array operations over all
images (no line of it is copied; the joins, the blocks and ``idf_from`` are this package's own).
So this file is under coco-caption's licence (its ``license.txt``: BSD-2-Clause-Views, Copyright
(c) 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam; docs/licensing.md).

pycocoevalcap's quirks, reproduced: the document frequency of an n-gram is the number of images
whose *set* of references contains it; the idf's numerator is log(number of images); an n-gram
vector holds tf * (log(images) - log(max(1, df))); the similarity to a reference clips the
candidate's weight (``min(w_c, w_r) * w_r``), is divided by both norms only when both are
non-zero, and is multiplied by exp(-delta^2 / (2 * 6^2)) where delta is the difference of the
*bigram* counts; the score is the mean over the four orders of the sum over references, divided
by the number of references, times 10. Corpus score: the mean over images.

Document frequencies: from the references of the images scored (pycocoevalcap, and the 2018
strata: each stratum on its own block), or from a whole set (``idf_from``), so that an image of
a subset gets the score it has in the whole set and a subset's mean estimates the whole-set
CIDEr-D without bias. Where which is used: a search's strata sort the test images by their
CIDEr-D with the whole test set's frequencies; its post-gen score of each stratum keeps the 2018
semantics (the block alone, its own frequencies: ``score_blocks``, as ``corpus_dependent``);
subsets meant to estimate the whole set pass ``idf_from``.
"""
from __future__ import annotations

from itertools import repeat

import numpy as np

from .base import PostgenMetric, backend_name, check_inputs
from .corpus import MAX_ORDER, Corpus
from .recent import CACHE
from .registry import backend_setting, register_metric

SIGMA = 6.0


def cider_d(corpus: Corpus, sigma: float = SIGMA) -> np.ndarray:
    """f64[C]: CIDEr-D of each candidate, document frequencies over all ``corpus.images`` images."""
    return cider_d_layers(corpus, np.zeros((1, corpus.images), np.int64), sigma)[0]


def cider_d_layers(corpus: Corpus, layers: np.ndarray, sigma: float = SIGMA) -> np.ndarray:
    """f64[L, C]: CIDEr-D of each candidate within its block of each layer, as if pycocoevalcap
    scored that block alone (document frequencies from the block's references, the idf's
    numerator the log of the block's size); NaN for a candidate in no block of the layer.

    ``layers``: i64[L, images], the block of each image in layer l (-1: none). A layer's blocks
    are disjoint, so one pass over the n-grams scores all of them: each entry takes the
    frequencies of its own image's block. Strata are layers (k = 1..5 blocks of one sort).
    """
    R, C = corpus.R, len(corpus.cands)  # noqa: N806
    layers = np.asarray(layers, np.int64)
    if C == 0:
        return np.zeros((len(layers), 0))
    width = int(corpus.ref_count.max())
    cand_start = corpus.ref_start[corpus.cand_image]
    cand_count = corpus.ref_count[corpus.cand_image]
    slots = np.arange(width)
    real = slots[None, :] < cand_count[:, None]                                  # b[C, width]
    ref_of_slot = np.where(real, cand_start[:, None] + slots[None, :], 0)
    bigrams = np.maximum(corpus.lengths - 1, 0)                         # pycocoevalcap's "length"
    delta = (bigrams[R:][:, None] - bigrams[ref_of_slot]).astype(np.float64)
    penalty = np.exp(-(delta ** 2) / (2 * sigma ** 2))
    # each order's matches: made once for all layers where there are several, else one order at a time
    # (all four at once held 150 MB more at 40,504 images)
    kept = [_matches(corpus, n, width, cand_start) for n in range(1, MAX_ORDER + 1)] if len(layers) > 1 else None
    scores = np.full((len(layers), C), np.nan)
    for layer, image_block in enumerate(layers):
        blocks = int(image_block.max()) + 1
        if blocks == 0:
            continue
        log_size = np.log(np.maximum(np.bincount(image_block[image_block >= 0], minlength=blocks), 1).astype(np.float64))
        summed = np.zeros((MAX_ORDER, C))
        whole_set = blocks == 1 and bool((image_block == 0).all())
        for n in range(MAX_ORDER):
            j, entry, match, target = kept[n] if kept is not None else _matches(corpus, n + 1, width, cand_start)
            c_block = image_block[corpus.cand_image[j.c_cand]]
            if whole_set:  # its frequencies as joined; the references' weights kept with kept references
                c_df = j.c_df
                r_weight, ref_norm = corpus.reference_side(
                    ("cider", n), lambda j=j, log=log_size[0]: _reference_weights(j, log, j.df[j.group], R))
            else:
                r_block = image_block[corpus.ref_image[j.r_ref]]
                run_block = r_block[j.run_start]
                df_block = np.bincount((run_block * len(j.df) + j.group[j.run_start])[run_block >= 0],
                                       minlength=blocks * len(j.df))
                df = df_block[np.maximum(r_block, 0) * len(j.df) + j.group]
                c_df = np.where(j.c_group >= 0, df_block[np.maximum(c_block, 0) * len(j.df) + j.c_group], 0)
                r_weight, ref_norm = _reference_weights(j, log_size[np.maximum(r_block, 0)], df, R)
            c_weight = _tf_idf(j.c_tf, log_size[np.maximum(c_block, 0)], c_df)
            cand_norm = np.sqrt(np.bincount(j.c_cand, c_weight ** 2, C))
            w_c, w_r = c_weight[entry], r_weight[match]
            numerator = np.bincount(target, np.minimum(w_c, w_r) * w_r, C * width).reshape(C, width)
            norms = cand_norm[:, None] * ref_norm[ref_of_slot]
            both = (cand_norm[:, None] != 0) & (ref_norm[ref_of_slot] != 0)
            similarity = np.where(both, numerator / np.where(both, norms, 1.0), numerator) * penalty
            summed[n] = np.where(real, similarity, 0.0).sum(axis=1)                  # over references
        in_layer = image_block[corpus.cand_image] >= 0
        scores[layer, in_layer] = (summed.mean(axis=0) / cand_count * 10.0)[in_layer]
    return scores


def score_bound(corpus: Corpus) -> np.ndarray:
    """f64[images]: the highest CIDEr-D any candidate can get on each image of ``corpus`` (document
    frequencies over all its images), from its references alone.

    For order n the score sums min(w_c, w_r) w_r / (|c| |r_j|) * penalty over the M references and
    divides by M; the entries are nonnegative and the penalty at most 1, so by Cauchy-Schwarz it is at
    most c_hat . (sum_j r_hat_j) / M <= |sum_j r_hat_j| / M (r_hat_j: reference j's unit vector, 0 where
    its norm is 0, as the scorer then adds nothing). The bound is 10 x the mean over the four orders
    of that norm: a race's drops bet against the worst difference, and this is often a third below
    the range's 10 (``ranking.racing``: a tighter range, more power, the same guarantee).
    """
    log_size = np.log(max(corpus.images, 1))
    squared = np.zeros((MAX_ORDER, corpus.images))
    for n in range(MAX_ORDER):
        j = corpus.joined(n + 1)
        r_weight, ref_norm = _reference_weights(j, log_size, j.df[j.group], corpus.R)
        norm = ref_norm[j.r_ref]
        unit = np.where(norm > 0, r_weight / np.where(norm > 0, norm, 1.0), 0.0)
        image = corpus.ref_image[j.r_ref]
        key, at = np.unique(image * (int(j.group.max(initial=0)) + 1) + j.group, return_inverse=True)
        summed = np.bincount(at.ravel(), unit, len(key))
        squared[n] = np.bincount(key // (int(j.group.max(initial=0)) + 1), summed ** 2, corpus.images)
    return 10.0 * (np.sqrt(squared) / np.maximum(corpus.ref_count, 1)).mean(axis=0)


def _tf_idf(tf: np.ndarray, log_size, df: np.ndarray) -> np.ndarray:
    """f64[E]: each entry's weight, tf * (log(images of its block) - log(max(1, df)))."""
    return tf * (log_size - np.log(np.maximum(1.0, df)))


def _reference_weights(j, log_size, df: np.ndarray, refs: int) -> tuple[np.ndarray, np.ndarray]:
    """(f64[Er] each reference entry's weight, f64[refs] each reference's norm)."""
    r_weight = _tf_idf(j.r_tf, log_size, df)
    return r_weight, np.sqrt(np.bincount(j.r_ref, r_weight ** 2, refs))


def _matches(corpus: Corpus, n: int, width: int, cand_start: np.ndarray) -> tuple:
    """The join of order ``n``; each (candidate entry, reference entry of its image with the same
    gram) match: the entry, the reference entry, and the flat (candidate, reference slot) it adds to."""
    j = corpus.joined(n)
    found = j.c_run >= 0  # shared n-grams of a candidate and its image's references: the run of (gram, image)
    lo = np.where(found, j.run_start[j.c_run], 0)
    runs = np.where(found, j.run_end[j.c_run] - lo, 0)
    entry = np.repeat(np.arange(len(j.c_cand)), runs)
    match = np.arange(runs.sum()) + np.repeat(lo - np.cumsum(runs) + runs, runs)
    cand = j.c_cand[entry]
    target = cand * width + (j.r_ref[match] - cand_start[cand])
    return j, entry, match, target


class CIDEr(PostgenMetric):
    """CIDEr-D; document frequencies from the references of the images scored, or of ``idf_from``.

    Statistics: each image's score (``k = 1``) with the document frequencies of the whole scored
    set (or ``idf_from``) held fixed; the corpus score is their mean, so a subset's or a
    resample's aggregate keeps the full set's frequencies. ``backend``: ``"native"`` (default; all
    images at once, equal to pycocoevalcap to 1e-9) or ``"coco"`` (pycocoevalcap itself; no ``idf_from``).
    """

    name = "CIDEr"
    corpus = "mean"
    corpus_dependent = True  # an image's score depends on the other images' references (idf)
    score_range = (0.0, 10.0)

    def __init__(self, backend: str = "native", idf_from: dict | None = None):
        backend = backend_name(backend, "CIDEr")
        if backend == "coco" and idf_from is not None:
            raise ValueError("CIDEr: idf_from needs the native backend (pycocoevalcap takes frequencies from gts)")
        self.backend, self.idf_from = backend, idf_from

    @classmethod
    def from_options(cls, name, options):
        return cls(options.backend)

    def _checked_stats(self, gts, res):
        if self.backend == "coco":
            from pycocoevalcap.cider.cider import Cider
            per_image = np.asarray(Cider().compute_score(gts, res)[1], np.float64)
        else:
            per_image = cider_d(corpus_of(gts, res, self.idf_from))
        return per_image[:, None]

    def score_blocks(self, gts, res, blocks):
        """Each block scored alone (its own document frequencies, as the 2018 strata), all blocks in
        one pass over the whole set's n-grams (``cider_d_layers``); per image: the whole set."""
        if self.backend == "coco" or self.idf_from is not None:
            return super().score_blocks(gts, res, blocks)
        check_inputs(gts, res)
        layers, where = _layers(list(gts), blocks)
        scores = cider_d_layers(corpus_of(gts, res), layers)
        return np.array([scores[layer][at].mean() for layer, at in where]), scores[0]


def _layers(image_ids: list, blocks: list[list]) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
    """Blocks of images packed into layers of disjoint blocks (the whole set first):
    (i64[L, images] each image's block in each layer or -1, per block its layer and image positions)."""
    position = {image_id: k for k, image_id in enumerate(image_ids)}
    layers = [np.zeros(len(image_ids), np.int64)]
    where = []
    for block in blocks:
        at = np.array([position[i] for i in block], np.int64)
        if len(np.unique(at)) == len(image_ids):  # the whole set: scored in layer 0 already
            where.append((0, at))
            continue
        free = [k for k in range(1, len(layers)) if (layers[k][at] < 0).all()]
        layer = free[0] if free else len(layers)
        if not free:
            layers.append(np.full(len(image_ids), -1, np.int64))
        layers[layer][at] = layers[layer].max() + 1
        where.append((layer, at))
    return np.stack(layers), where


def corpus_of(gts: dict, res: dict, idf_from: dict | None = None) -> Corpus:
    """The ``Corpus`` of pycocoevalcap's (gts, res); references of ``idf_from`` (a superset of ``gts``) if given.

    The last few are kept (by content), so that CIDEr-D, BLEU and ROUGE-L scoring the same
    captions one after another (as a search does, metric by metric) split and count them once.
    """
    return CACHE.get(("corpus", inputs_key(gts, res, idf_from)), lambda: _corpus_of(gts, res, idf_from))


def inputs_key(gts: dict, res: dict, idf_from: dict | None) -> tuple:
    """The content of (gts, res, idf_from), all of it: everything ``check_inputs`` reads and every string."""
    return (tuple(gts), tuple(map(tuple, gts.values())), len(res), tuple(map(tuple, map(res.get, gts, repeat(())))),
            None if idf_from is None else (tuple(idf_from), tuple(map(tuple, idf_from.values()))))



def _corpus_of(gts: dict, res: dict, idf_from: dict | None) -> Corpus:
    if idf_from is None:
        return Corpus.build(list(gts.values()), [res[i][0] for i in gts], np.arange(len(gts)), kept=True)
    position = {image_id: k for k, image_id in enumerate(idf_from)}
    for image_id in gts:
        if image_id not in position:
            raise ValueError(f"idf_from: image {image_id!r} is scored but not among the images of idf_from")
        if list(idf_from[image_id]) != list(gts[image_id]):
            raise ValueError(f"idf_from: image {image_id!r} has other references there than in gts")
    return Corpus.build(list(idf_from.values()), [res[i][0] for i in gts], [position[i] for i in gts], kept=True)


register_metric("CIDEr", CIDEr, description="CIDEr-D (pycocoevalcap's scale; document frequencies from the images scored)",
                depends_on=backend_setting)
