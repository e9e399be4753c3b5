"""CIDEr-D as pycocoevalcap computes it (its own scale, x10 included), over all images at once.

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

import threading

import numpy as np

from .base import PostgenMetric, check_inputs
from .corpus import MAX_ORDER, Corpus

SIGMA = 6.0


def cider_d(corpus: Corpus, sigma: float = SIGMA) -> np.ndarray:
    """f64[C]: CIDEr-D of each candidate, document frequencies over all ``corpus.images`` images."""
    R, C = corpus.R, len(corpus.cands)  # noqa: N806
    if C == 0:
        return np.zeros(0)
    ref_len = np.log(float(corpus.images))
    width = int(corpus.ref_count.max())
    numerator = np.zeros((MAX_ORDER, C, width))
    cand_norm = np.zeros((MAX_ORDER, C))
    ref_norm = np.zeros((MAX_ORDER, R))
    cand_start = corpus.ref_start[corpus.cand_image]
    cand_count = corpus.ref_count[corpus.cand_image]
    for n in range(1, MAX_ORDER + 1):
        j = corpus.joined(n)
        r_ref, c_cand = j.r_ref, j.c_cand
        r_weight = j.r_tf * (ref_len - np.log(np.maximum(1.0, j.df[j.group])))
        c_weight = j.c_tf * (ref_len - np.log(np.maximum(1.0, j.c_df)))
        ref_norm[n - 1] = np.sqrt(np.bincount(r_ref, r_weight ** 2, R))
        cand_norm[n - 1] = np.sqrt(np.bincount(c_cand, c_weight ** 2, C))
        # shared n-grams of each candidate and each reference of its image: the run of its (gram, image)
        found = j.c_run >= 0
        lo = np.where(found, j.run_start[j.c_run], 0)
        runs = np.where(found, j.run_end[j.c_run] - lo, 0)
        entry = np.repeat(np.arange(len(c_cand)), runs)
        match = np.arange(runs.sum()) + np.repeat(lo - np.cumsum(runs) + runs, runs)
        w_c, w_r = c_weight[entry], r_weight[match]
        cand = c_cand[entry]
        slot = r_ref[match] - cand_start[cand]
        numerator[n - 1] += np.bincount(cand * width + slot, np.minimum(w_c, w_r) * w_r,
                                        C * width).reshape(C, width)
    slots = np.arange(width)
    real = slots[None, :] < cand_count[:, None]                                  # b[C, width]
    ref_of_slot = np.where(real, cand_start[:, None] + slots[None, :], 0)
    both = (cand_norm[:, :, None] != 0) & (ref_norm[:, ref_of_slot] != 0)
    similarity = np.where(both, numerator / np.where(both, cand_norm[:, :, None] * ref_norm[:, ref_of_slot], 1.0),
                          numerator)
    bigrams = np.maximum(corpus.encoded.lengths - 1, 0)                         # pycocoevalcap's "length"
    delta = (bigrams[R:][:, None] - bigrams[ref_of_slot]).astype(np.float64)
    similarity = similarity * np.exp(-(delta ** 2) / (2 * sigma ** 2))
    summed = np.where(real[None], similarity, 0.0).sum(axis=2)                   # f[4, C] over references
    return summed.mean(axis=0) / cand_count * 10.0


class CIDEr(PostgenMetric):
    """CIDEr-D; document frequencies from the references of the images scored, or of ``idf_from``.

    ``backend``: ``"array"`` (default; all images at once, equal to pycocoevalcap to 1e-9) or
    ``"coco"`` (pycocoevalcap itself; no ``idf_from``).
    """

    name = "CIDEr"
    corpus_is_mean = True
    corpus_dependent = True  # an image's score depends on the other images' references (idf)

    def __init__(self, backend: str = "array", idf_from: dict | None = None):
        if backend not in ("array", "coco"):
            raise ValueError(f"CIDEr backend must be 'array' or 'coco', got {backend!r}")
        if backend == "coco" and idf_from is not None:
            raise ValueError("CIDEr: idf_from needs the array backend (pycocoevalcap takes frequencies from gts)")
        self.backend, self.idf_from = backend, idf_from

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        if self.backend == "coco":
            from pycocoevalcap.cider.cider import Cider
            score, per_image = Cider().compute_score(gts, res)
            return float(score), [float(s) for s in per_image]
        per_image = cider_d(corpus_of(gts, res, self.idf_from))
        return float(np.mean(per_image)), per_image.tolist()


def corpus_of(gts: dict, res: dict, idf_from: dict | None = None) -> Corpus:
    """The ``Corpus`` of pycocoevalcap's (gts, res); references of ``idf_from`` (a superset of ``gts``) if given.

    The last few are kept (by content), so that CIDEr-D, BLEU and ROUGE-L scoring the same
    captions one after another (as a search does, metric by metric) split and count them once.
    """
    key = _key(gts, res, idf_from)
    with _LOCK:
        corpus = _RECENT.get(key)
    if corpus is None:
        corpus = _corpus_of(gts, res, idf_from)
        with _LOCK:
            _RECENT[key] = corpus
            while len(_RECENT) > 2:
                del _RECENT[next(iter(_RECENT))]
    return corpus


def recent_corpus(gts: dict, res: dict, idf_from: dict | None = None) -> Corpus | None:
    """The kept ``Corpus`` of exactly these strings, or None (nothing is built)."""
    with _LOCK:
        return _RECENT.get(_key(gts, res, idf_from))


def _key(gts: dict, res: dict, idf_from: dict | None) -> tuple:
    return (tuple(gts), tuple(map(tuple, gts.values())), tuple(res[i][0] for i in gts),
            None if idf_from is None else (tuple(idf_from), tuple(map(tuple, idf_from.values()))))


_RECENT: dict = {}
_LOCK = threading.Lock()


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
