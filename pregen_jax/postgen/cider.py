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
CIDEr-D without bias.
"""
from __future__ import annotations

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
        grams = corpus.grams(n)
        is_ref = grams.string < R
        r_gram, r_ref, r_tf = grams.gram[is_ref], grams.string[is_ref], grams.count[is_ref]
        c_gram, c_cand, c_tf = grams.gram[~is_ref], grams.string[~is_ref] - R, grams.count[~is_ref]
        # document frequency: distinct (gram, image) among references (sorted by gram, then image)
        change = np.r_[True, r_gram[1:] != r_gram[:-1]] if r_gram.size else np.zeros(0, bool)
        new_image = change.copy()
        new_image[1:] |= corpus.ref_image[r_ref][1:] != corpus.ref_image[r_ref][:-1]
        group = np.cumsum(change) - 1                                    # the gram's index among distinct grams
        df = np.bincount(group, new_image, int(group[-1]) + 1 if group.size else 0)
        df_grams = r_gram[change]
        r_weight = r_tf * (ref_len - np.log(np.maximum(1.0, df[group])))
        at = np.searchsorted(df_grams, c_gram).clip(max=max(len(df_grams) - 1, 0))
        c_df = np.where(df_grams[at] == c_gram, df[at], 0) if df_grams.size else np.zeros(len(c_gram))
        c_weight = c_tf * (ref_len - np.log(np.maximum(1.0, c_df)))
        ref_norm[n - 1] = np.sqrt(np.bincount(r_ref, r_weight ** 2, R))
        cand_norm[n - 1] = np.sqrt(np.bincount(c_cand, c_weight ** 2, C))
        # shared n-grams of each candidate and each reference of its image: the references of one
        # (gram, image) are a contiguous run of entries; one search finds each candidate entry's run
        run_start = np.flatnonzero(new_image)
        run_key = group[run_start] * corpus.images + corpus.ref_image[r_ref[run_start]]
        run_end = np.r_[run_start[1:], len(r_gram)]
        wanted = at * corpus.images + corpus.cand_image[c_cand]
        run = np.searchsorted(run_key, wanted).clip(max=max(len(run_key) - 1, 0))
        found = (c_df > 0) & (run_key[run] == wanted) if run_key.size else np.zeros(len(c_gram), bool)
        lo = np.where(found, run_start[run] if run_key.size else 0, 0)
        runs = np.where(found, (run_end - run_start)[run] if run_key.size else 0, 0)
        entry = np.repeat(np.arange(len(c_gram)), runs)
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
    """The ``Corpus`` of pycocoevalcap's (gts, res); references of ``idf_from`` (a superset of ``gts``) if given."""
    if idf_from is None:
        return Corpus.build(list(gts.values()), [res[i][0] for i in gts], np.arange(len(gts)))
    position = {image_id: k for k, image_id in enumerate(idf_from)}
    for image_id in gts:
        if image_id not in position:
            raise ValueError(f"idf_from: image {image_id!r} is scored but not among the images of idf_from")
        if list(idf_from[image_id]) != list(gts[image_id]):
            raise ValueError(f"idf_from: image {image_id!r} has other references there than in gts")
    return Corpus.build(list(idf_from.values()), [res[i][0] for i in gts], [position[i] for i in gts])
