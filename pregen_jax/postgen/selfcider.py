# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption's CIDEr, as ruotianluo/cider's pyciderevalcap/cider/cider_scorer.py keeps it, with
#   ``my_get_self_cider``: Ramakrishna Vedantam, Tsung-Yi Lin, Ruotian Luo)
# SPDX-FileCopyrightText: 2019 Ruotian Luo (self-critical.pytorch, captioning/utils/eval_multi.py: eval_self_cider)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: BSD-2-Clause-Views AND MIT
"""Self-CIDEr (Wang and Chan, "Describing like humans: on diversity in image captioning", CVPR
2019), as self-critical.pytorch's ``eval_self_cider`` computes it.

How it was written: the kernel follows ruotianluo/cider's ``CiderScorer.my_get_self_cider`` and
``counts2vec``/``sim`` (plain CIDEr, no clipping and no length penalty: each order's tf-idf vectors'
dot product divided by both norms where both are non-zero, the mean over orders 1-4, x10), the
document frequencies its ``compute_doc_freq`` over the references of *every* image of the
references file (``eval_self_cider`` adds them all, the idf's numerator the log of their number),
and the score ``eval_multi.get_div``: the kernel / 10, its eigenvalues clipped at 0,
``-log(sqrt(largest) / sum(sqrt(eigenvalues))) / log(m)`` for m samples, in [0, 1]; the corpus
score the mean over images. Re-expressed as array operations over all images (no line is copied);
the kernel's code is under coco-caption's licence (BSD-2-Clause-Views), the score's under
self-critical.pytorch's (MIT); docs/licensing.md.
"""
from __future__ import annotations

import numpy as np

from .corpus import MAX_ORDER, _gram_keys
from .diversity import DIVERSITY, SampleMetric
from .text import encode


def tf_idf_rows(encoded, ref_image: np.ndarray, samples: int, n: int):
    """(f64[S, G] sparse ``scipy.sparse.csr_array``: each sample's order-``n`` tf-idf vector, f64[S] their
    norms). ``encoded``: the references' strings then the S samples' (``text.encode``), references of
    image ``ref_image`` (i64[R]); document frequencies over those images, the log of their number the
    idf's numerator (``compute_doc_freq``, ``counts2vec``)."""
    from scipy.sparse import csr_array
    R, S = len(ref_image), samples  # noqa: N806
    images = int(ref_image.max(initial=-1)) + 1
    valid = encoded.position + n <= encoded.lengths[encoded.string]
    if not valid.any():
        return csr_array((S, 0)), np.zeros(S)
    gram = np.unique(_gram_keys(encoded, n)[valid], return_inverse=True)[1].ravel().astype(np.int64)
    width = int(gram.max()) + 1
    entry, count = np.unique(gram * (R + S) + encoded.string[valid], return_counts=True)  # (gram, string), count
    gram, string = entry // (R + S), entry % (R + S)
    is_ref = string < R
    seen = np.unique(gram[is_ref] * images + ref_image[string[is_ref]])  # (gram, image) pairs of the references
    df = np.bincount(seen // max(images, 1), minlength=width).astype(np.float64)
    gram, string, count = gram[~is_ref], string[~is_ref] - R, count[~is_ref]
    weight = count * (np.log(float(images)) - np.log(np.maximum(1.0, df[gram])))
    norm = np.sqrt(np.bincount(string, weight ** 2, S))
    return csr_array((weight, (string, gram)), shape=(S, width)), norm


def self_cider_kernels(refs: list[list[str]], samples: list[list[str]]) -> np.ndarray:
    """f64[images, m, m]: each image's kernel of plain CIDEr between its m samples (x10, as
    ``my_get_self_cider``), document frequencies over ``refs`` (every image of the references)."""
    images, m = len(samples), len(samples[0])
    ref_strings = [r for group in refs for r in group]
    ref_image = np.repeat(np.arange(len(refs)), [len(group) for group in refs])
    encoded = encode(ref_strings + [s for group in samples for s in group])
    summed = np.zeros((images, m, m))
    for n in range(1, MAX_ORDER + 1):
        rows, norm = tf_idf_rows(encoded, ref_image, images * m, n)
        slot = [rows[k::m] for k in range(m)]                         # image i's sample k: row i * m + k
        norms = norm.reshape(images, m)
        for a in range(m):
            for b in range(a + 1):
                dot = np.asarray(slot[a].multiply(slot[b]).sum(axis=1)).ravel()
                both = (norms[:, a] != 0) & (norms[:, b] != 0)
                value = np.where(both, dot / np.where(both, norms[:, a] * norms[:, b], 1.0), dot)
                summed[:, a, b] += value
                if a != b:
                    summed[:, b, a] += value
    return summed / MAX_ORDER * 10.0


def diversity_of_kernels(kernels: np.ndarray) -> np.ndarray:
    """f64[images]: ``get_div`` of each kernel (f64[images, m, m]): eigenvalues of kernel / 10,
    clipped at 0, then -log(sqrt(largest) / sum(sqrt)) / log(m)."""
    eigenvalues = np.clip(np.linalg.eigvalsh(kernels / 10), 0, None)             # ascending
    roots = np.sqrt(eigenvalues)
    with np.errstate(invalid="ignore", divide="ignore"):  # a zero kernel gives NaN, refused by the caller
        return -np.log(roots[:, -1] / roots.sum(axis=1)) / np.log(kernels.shape[-1])


class SelfCIDEr(SampleMetric):
    """Self-CIDEr of each image's samples; the corpus score is the mean over images.

    ``idf_from``: image -> references of the set whose document frequencies are used (``evaluate``
    passes every image of the references file, as ``eval_self_cider``); None: ``gts``'s images."""

    name = "Self_CIDEr"
    corpus = "mean"
    corpus_dependent = True
    least = 2

    def __init__(self, idf_from: dict | None = None):
        self.idf_from = idf_from

    def _checked_stats(self, gts, res):
        refs = list((self.idf_from if self.idf_from is not None else gts).values())
        scores = diversity_of_kernels(self_cider_kernels(refs, [res[i] for i in gts]))
        if np.isnan(scores).any():
            image = list(gts)[int(np.flatnonzero(np.isnan(scores))[0])]
            raise ValueError(f"Self_CIDEr: image {image!r}: no sample has an n-gram of non-zero weight (all "
                             "empty?): its kernel is 0 and the score 0/0")
        return scores[:, None]

    def variant(self, samples):
        df = "all" if self.idf_from is not None else "scored"
        return (f"self-cider:cider-plain:x10:eig-sqrt-ratio:log-m|set:{samples}-samples-per-image"
                f"|df:{df}")


DIVERSITY.add("Self_CIDEr", SelfCIDEr)
