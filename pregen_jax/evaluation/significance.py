"""Intervals and paired tests for corpus metrics, recomputed from per-image sufficient statistics.

Every resample rescores the corpus from its rows' statistics (``metric.from_sums`` of the summed
rows: BLEU from its clipped counts and lengths, METEOR from its alignment statistics, CIDEr-D
from per-image scores whose document frequencies stay those of the full set), never by averaging
sentence scores. A bootstrap resample is ``counts @ stats`` (``counts: f64[B, images]``, how often
each image was drawn), which is ``aggregate(stats[idx])`` up to the float order of the sum.

- Paired bootstrap (Koehn 2004): ``resamples`` draws of images with replacement, one index matrix
  shared by every system and metric (so differences are paired). A system's 95% interval is the
  2.5th and 97.5th percentiles of its resampled scores; the difference to the first system, its
  percentile interval, and a two-sided p-value ``(1 + #{|d_b - d| >= |d|}) / (B + 1)``: the
  resampled differences centred on the observed one stand in for the null distribution.
- Approximate randomization (Noreen 1989; Riezler and Maxwell 2005): ``trials`` random swaps of
  the two systems' captions image by image (each image swapped with probability 1/2, the same
  swaps for every system), ``p = (1 + #{|d_t| >= |d|}) / (T + 1)``.

How this relates to sacrebleu's ``--paired-bs`` and ``--paired-ar`` (sacrebleu/significance.py):
the same two tests, the same defaults (1,000 resamples, 10,000 trials), statistics summed and
rescored the same way, one index matrix for all systems. Where it differs: sacrebleu's interval
is the bootstrap mean +- half the percentile width (centred on the resampled mean, not the
percentiles themselves), and it gives no interval on the difference; its bootstrap p-value
centres the *absolute* resampled differences on their mean and counts those above the observed
absolute difference (``(#{|d_b| - mean|d_b| > |d|} + 1) / (B + 1)``), and its randomization test
counts ``>`` where this counts ``>=`` (a system against itself gets p = 1 here). Its default seed
is 12345 (``SACREBLEU_SEED``); here ``seed`` (default 0). No correction for multiple comparisons.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

LEVEL = 0.95
_CHUNK = 1000  # randomization trials per block: [chunk, images] swap masks at a time


@dataclasses.dataclass(frozen=True)
class Resampling:
    """How intervals and p-values are drawn: ``resamples`` bootstrap draws, ``trials`` randomization
    swaps, the generator's ``seed``."""

    resamples: int = 1000
    trials: int = 10000
    seed: int = 0

    def __post_init__(self):
        if self.resamples < 1 or self.trials < 1:
            raise ValueError(f"resamples and trials must be at least 1, got {self.resamples} and {self.trials}")


def bootstrap_counts(images: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """f64[B, images]: how often each image is drawn in each resample (``idx = rng.integers(0, images, [B, images])``)."""
    idx = rng.integers(0, images, (resamples, images))
    flat = (idx + images * np.arange(resamples)[:, None]).ravel()
    return np.bincount(flat, minlength=resamples * images).reshape(resamples, images).astype(np.float64)


def interval(values: np.ndarray) -> tuple[float, float]:
    """The percentile interval of ``values`` (f64[B]) at ``LEVEL``."""
    low, high = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(low), float(high)


def bootstrap_p(resampled: np.ndarray, observed: float) -> float:
    """Two-sided p of the observed difference from resampled differences (f64[B]) centred on it."""
    hits = np.count_nonzero(np.abs(resampled - observed) >= abs(observed) * (1 - 1e-12))
    return (1 + hits) / (len(resampled) + 1)


def randomization_p(metric, base: np.ndarray, system: np.ndarray, trials: int, rng: np.random.Generator) -> float:
    """Two-sided approximate-randomization p of ``system`` vs ``base`` (stats f64[images, k] each)."""
    images = len(base)
    base_sum, system_sum = base.sum(axis=0), system.sum(axis=0)
    observed = abs(float(metric.from_sums(system_sum, images) - metric.from_sums(base_sum, images)))
    change = system - base                                   # what swapping an image moves between the two
    hits = 0
    for start in range(0, trials, _CHUNK):
        swap = rng.integers(0, 2, (min(_CHUNK, trials - start), images), dtype=np.int8).astype(np.float64)
        moved = swap @ change                                              # f64[t, k]
        diff = metric.from_sums(system_sum - moved, images) - metric.from_sums(base_sum + moved, images)
        hits += int(np.count_nonzero(np.abs(diff) >= observed * (1 - 1e-12)))
    return (1 + hits) / (trials + 1)


def compare(metrics: dict, stats: dict, plan: Resampling = Resampling()) -> pd.DataFrame:
    """One row per (system, metric): the corpus score, its 95% bootstrap interval, and for every
    system after the first the difference to the first, its interval and both p-values.

    ``metrics``: metric name -> ``PostgenMetric``; ``stats``: system -> {metric name -> f64[images, k]}
    (every system over the same images, in the same order). Metrics without statistics
    (``None``) get their score only.
    """
    columns = ["system", "metric", "score", "low", "high", "diff", "diff_low", "diff_high", "p_bootstrap",
               "p_randomization"]
    systems = list(stats)
    if not metrics:
        return pd.DataFrame(columns=columns)
    images = len(next(iter(stats[systems[0]].values())))
    rng = np.random.default_rng(plan.seed)
    counts = bootstrap_counts(images, plan.resamples, rng)   # one index matrix for every system and metric
    ar_seed = rng.integers(0, 2 ** 63)                       # the same swaps for every system and metric
    rows = []
    for name, metric in metrics.items():
        resampled = {}
        for system in systems:
            rows_stats = stats[system][name]
            score = float(metric.aggregate(rows_stats))
            resampled[system] = metric.from_sums(counts @ rows_stats, images)
            low, high = interval(resampled[system])
            row = {"system": system, "metric": name, "score": score, "low": low, "high": high}
            if system != systems[0]:
                base = stats[systems[0]][name]
                diff = score - float(metric.aggregate(base))
                diffs = resampled[system] - resampled[systems[0]]
                row.update(diff=diff, diff_low=interval(diffs)[0], diff_high=interval(diffs)[1],
                           p_bootstrap=bootstrap_p(diffs, diff),
                           p_randomization=randomization_p(metric, base, rows_stats, plan.trials,
                                                           np.random.default_rng(ar_seed)))
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)
