"""A plain-Python reference implementation written straight from the spec.

Loops over images, references and positions; float64 Python arithmetic; no numpy in the
metric itself. It is the oracle the tests compare ``sweep`` against and the baseline that
``benchmarks/bench_sweep.py`` times. Slow by design.
"""
from __future__ import annotations

import math
import statistics

import numpy as np

from ..refprobs import RefProbs


def _kept(probs, ranks, filter_name, compat_2018):
    """The kept probabilities of one reference (lists over its m+1 positions)."""
    if filter_name == "none":
        return list(probs)
    if filter_name == "filter0":
        if compat_2018:
            return [p for p, k in zip(probs, ranks) if k != 0]
        return [p for p, k in zip(probs, ranks) if k == 0]
    if filter_name == "prefix0":
        kept = []
        for p, k in zip(probs, ranks):
            if k != 0:
                break
            kept.append(p)
        return kept
    raise ValueError(f"unknown filter {filter_name!r}")


def caption_score(kept, length, score_name):
    """One of the spec's caption scores of the kept probabilities of a reference of ``length`` positions."""
    if score_name == "prob":
        if not kept:
            return 0.0
        product = 1.0
        for p in kept:
            product *= p
        return product
    if score_name == "pplx":
        if not kept or any(p == 0 for p in kept):
            return math.inf
        return 2 ** (-sum(math.log2(p) for p in kept) / len(kept))
    if score_name == "count":
        return float(len(kept))
    if score_name == "normcount":
        return len(kept) / length
    raise ValueError(f"unknown caption score {score_name!r}")


def aggregate(values, name):
    """One of the spec's aggregators over a non-empty list of floats."""
    values = list(values)
    if name == "sum":
        return math.fsum(values) if all(math.isfinite(v) for v in values) else sum(values)
    if name == "mean":
        return aggregate(values, "sum") / len(values)
    if name == "median":
        return statistics.median(values) if all(math.isfinite(v) for v in values) else _median_inf(values)
    if name == "geomean":
        if any(v == 0 for v in values):
            return 0.0
        return math.exp(sum(math.log(v) for v in values) / len(values))
    if name == "max":
        return max(values)
    if name == "min":
        return min(values)
    raise ValueError(f"unknown aggregator {name!r}")


def _median_inf(values):
    ordered = sorted(values)
    n = len(ordered)
    low, high = ordered[(n - 1) // 2], ordered[n // 2]
    return low if low == high else (low + high) / 2


def metric(refs, images, name, compat_2018=False):
    """One pre-gen metric on a set of images.

    Args:
      refs: ``refs[i]`` is a list of references of image i, each a list of (prob, rank)
        pairs over its m+1 positions.
      images: indices of the images in the stratum.
      name: ``tier4_tier3_tier2_tier1`` from the spec's names.
    """
    tier4, tier3, tier2, tier1 = name.split("_")
    image_scores, caption_scores = [], []
    for i in images:
        scores = []
        for ref in refs[i]:
            probs = [p for p, _ in ref]
            ranks = [k for _, k in ref]
            scores.append(caption_score(_kept(probs, ranks, tier1, compat_2018), len(ref), tier2))
        if tier3 == "join":
            caption_scores.extend(scores)
        else:
            image_scores.append(aggregate(scores, tier3))
    return aggregate(caption_scores if tier3 == "join" else image_scores, tier4)


def to_lists(ref_probs: RefProbs):
    """RefProbs -> ``refs[i][r] = [(prob, rank), ...]`` without padding."""
    probs = np.asarray(ref_probs.probs, np.float64)
    ranks = np.asarray(ref_probs.ranks)
    lengths = ref_probs.lengths
    return [[[(float(probs[i, r, t]), int(ranks[i, r, t])) for t in range(lengths[i, r])]
             for r in range(probs.shape[1]) if lengths[i, r] > 0] for i in range(probs.shape[0])]


def sweep(ref_probs: RefProbs, strata, names, compat_2018=False):
    """The oracle's answer to ``tiers.sweep``: f64[S, C] for the given metric names."""
    refs = to_lists(ref_probs)
    strata = np.asarray(strata, bool)
    out = np.empty((strata.shape[0], len(names)))
    for s, row in enumerate(strata):
        images = np.flatnonzero(row).tolist()
        for c, name in enumerate(names):
            out[s, c] = metric(refs, images, name, compat_2018)
    return out
