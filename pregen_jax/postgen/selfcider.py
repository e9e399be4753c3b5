# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
# SPDX-FileCopyrightText: 2019 Ruotian Luo
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

from .corpus import MAX_ORDER
from .diversity import DIVERSITY, SampleMetric, gram_entries, run_starts
from .text import Encoded, encode


def tf_idf_entries(encoded: Encoded, refs: int, ref_image: np.ndarray, n: int):
    """(i64[E] n-gram key, i64[E] sample, f64[E] weight): each sample's order-``n`` tf-idf vector, sorted
    by (n-gram, sample). ``encoded``: ``refs`` reference strings (of image ``ref_image``, i64[refs]) then
    the samples; document frequencies over those images, the log of their number the idf's numerator
    (``compute_doc_freq``, ``counts2vec``)."""
    images = int(ref_image.max(initial=-1)) + 1
    gram, string, count = gram_entries(encoded, n)
    is_ref = string < refs
    ref_gram, image = gram[is_ref], ref_image[string[is_ref]]
    pairs = ref_gram[run_starts(ref_gram, image)]                  # each (n-gram, image) of the references, once
    first = run_starts(pairs)
    distinct, df = pairs[first], np.diff(np.append(np.flatnonzero(first), len(pairs)))
    gram, string, count = gram[~is_ref], string[~is_ref] - refs, count[~is_ref]
    df_of = np.zeros(len(gram), np.int64)
    if len(distinct):
        at = np.searchsorted(distinct, gram).clip(max=len(distinct) - 1)
        df_of = np.where(distinct[at] == gram, df[at], 0)
    weight = count * (np.log(float(images)) - np.log(np.maximum(1.0, df_of)))
    return gram, string, weight


def self_cider_kernels(refs: list[list[str]], samples: list[list[str]]) -> np.ndarray:
    """f64[images, m, m]: each image's kernel of plain CIDEr between its m samples (x10, as
    ``my_get_self_cider``), document frequencies over ``refs`` (every image of the references).

    Each order: the dot products of the tf-idf vectors of two samples of an image come from the
    pairs of entries that share an (n-gram, image), at most m x m per pair; divided by both norms
    where both are non-zero (``sim``)."""
    images, m = len(samples), len(samples[0])
    ref_strings = [r for group in refs for r in group]
    ref_image = np.repeat(np.arange(len(refs)), [len(group) for group in refs])
    encoded = encode(ref_strings + [s for group in samples for s in group])
    summed = np.zeros(images * m * m)
    for n in range(1, MAX_ORDER + 1):
        gram, sample, weight = tf_idf_entries(encoded, len(ref_strings), ref_image, n)
        norm = np.sqrt(np.bincount(sample, weight ** 2, images * m))
        image = sample // m
        begins = np.flatnonzero(run_starts(gram, image))                # runs of one (n-gram, image)
        run = np.cumsum(run_starts(gram, image)) - 1
        size = np.diff(np.append(begins, len(gram)))[run]             # each entry's run length
        left = np.repeat(np.arange(len(gram)), size)
        right = begins[run[left]] + np.arange(len(left)) - np.repeat(np.cumsum(size) - size, size)
        a, b = sample[left], sample[right]
        dot = np.bincount(image[left] * m * m + (a % m) * m + b % m, weight[left] * weight[right], images * m * m)
        other = np.repeat(norm.reshape(images, m), m, axis=0)    # row image * m + a, column b: sample b's norm
        both = (norm[:, None] != 0) & (other != 0)
        dot = dot.reshape(-1, m)
        summed += np.where(both, dot / np.where(both, norm[:, None] * other, 1.0), dot).ravel()
    return summed.reshape(images, m, m) / MAX_ORDER * 10.0


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
