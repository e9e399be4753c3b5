"""Intervals and paired tests for corpus metrics, recomputed from per-image sufficient statistics.

Every resample rescores the corpus from its rows' statistics (``metric.from_sums`` of the summed
rows: BLEU from its clipped counts and lengths, METEOR from its alignment statistics, CIDEr-D
from per-image scores whose document frequencies stay those of the full set), never by averaging
sentence scores. A bootstrap resample is ``counts @ stats`` (``counts: f64[B, images]``, how often
each image was drawn), which is ``aggregate(stats[idx])`` up to the float order of the sum.

- Paired bootstrap (Koehn 2004): ``resamples`` draws of images with replacement, one index matrix
  shared by every system and metric (so differences are paired). A system's 95% interval is the
  BCa interval of its resampled scores (the percentiles moved by the bootstrap's bias and the
  jackknife's skew: the plain 2.5th and 97.5th percentiles undercover CIDEr-D at 200 images,
  0.929 against 0.941, tests/test_evaluate_significance.py); the difference to the first
  system, its BCa interval, and a two-sided p-value ``(1 + #{|d_b - d| >= |d|}) / (B + 1)``: the
  resampled differences centred on the observed one stand in for the null distribution.
- Approximate randomization (Noreen 1989; Riezler and Maxwell 2005): ``trials`` random swaps of
  the two systems' captions image by image (each image swapped with probability 1/2, the same
  swaps for every system), ``p = (1 + #{|d_t| >= |d|}) / (T + 1)``.

How this relates to sacrebleu's ``--paired-bs`` and ``--paired-ar`` (sacrebleu/significance.py):
the same two tests, the same defaults (1,000 resamples, 10,000 trials), statistics summed and
rescored the same way, one index matrix for all systems. Where it differs: sacrebleu's interval
is the bootstrap mean +- half the percentile width (symmetric, centred on the resampled mean;
here the BCa interval, asymmetric where the scores are skewed), and it gives no interval on the
difference; its bootstrap p-value
centres the *absolute* resampled differences on their mean and counts those above the observed
absolute difference (``(#{|d_b| - mean|d_b| > |d|} + 1) / (B + 1)``), and its randomization test
counts ``>`` where this counts ``>=`` (a system against itself gets p = 1 here). Its default seed
is 12345 (``SACREBLEU_SEED``); here ``seed`` (default 0). No correction for multiple comparisons.
"""
from __future__ import annotations

import dataclasses
from statistics import NormalDist

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


def interval(resampled: np.ndarray, observed: float | None = None, jackknife: np.ndarray | None = None
             ) -> tuple[float, float]:
    """The 95% interval from resampled scores (f64[B]): BCa (Efron 1987) where the observed score and
    its jackknife (f64[images]: the score without each image) are given, else the percentile interval.

    BCa moves the percentiles by the bootstrap's median bias (``z0``) and the skew of the
    jackknife (``a``, the acceleration): a corpus mean of right-skewed per-image scores (CIDEr-D)
    covers the truth at its nominal rate where the plain percentiles fall short.
    """
    levels = np.array([(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    if observed is not None and jackknife is not None:
        normal = NormalDist()  # the standard library's: scipy.stats takes seconds to import
        below = (np.count_nonzero(resampled < observed) + 0.5 * np.count_nonzero(resampled == observed)) / len(resampled)
        z0 = normal.inv_cdf(float(np.clip(below, 0.5 / len(resampled), 1 - 0.5 / len(resampled))))
        spread = jackknife.mean() - jackknife
        scale = 6 * np.sum(spread ** 2) ** 1.5
        acceleration = float(np.sum(spread ** 3) / scale) if scale > 0 else 0.0
        shifted = [z0 + (z0 + z) / (1 - acceleration * (z0 + z)) for z in map(normal.inv_cdf, levels)]
        levels = np.array([normal.cdf(z) for z in shifted])
    low, high = np.quantile(resampled, levels)
    return float(low), float(high)


def jackknife(metric, rows: np.ndarray) -> np.ndarray:
    """f64[images]: the corpus score without each image, from the summed statistics (one vectorized call)."""
    return metric.from_sums(rows.sum(axis=0) - rows, len(rows) - 1)


def bootstrap_p(resampled: np.ndarray, observed: float) -> float:
    """Two-sided p of the observed difference from resampled differences (f64[B]) centred on it."""
    hits = np.count_nonzero(np.abs(resampled - observed) >= abs(observed) * (1 - 1e-12))
    return (1 + hits) / (len(resampled) + 1)


def randomization_p(metrics: dict, columns: dict, base: np.ndarray, system: np.ndarray, trials: int,
                    rng: np.random.Generator) -> dict:
    """{metric: two-sided approximate-randomization p of ``system`` vs ``base``}: f64[images, K] each,
    metric ``m``'s statistics in ``columns[m]``; one set of swaps serves every metric."""
    images = len(base)
    base_sum, system_sum = base.sum(axis=0), system.sum(axis=0)
    observed = {m: abs(float(metric.from_sums(system_sum[columns[m]], images) -
                             metric.from_sums(base_sum[columns[m]], images))) for m, metric in metrics.items()}
    change = system - base                                   # what swapping an image moves between the two
    hits = dict.fromkeys(metrics, 0)
    for start in range(0, trials, _CHUNK):
        swap = rng.integers(0, 2, (min(_CHUNK, trials - start), images), dtype=np.int8).astype(np.float64)
        moved = swap @ change                                              # f64[t, K]
        for m, metric in metrics.items():
            at = columns[m]
            diff = metric.from_sums(system_sum[at] - moved[:, at], images) - metric.from_sums(base_sum[at] + moved[:, at],
                                                                                               images)
            hits[m] += int(np.count_nonzero(np.abs(diff) >= observed[m] * (1 - 1e-12)))
    return {m: (1 + hits[m]) / (trials + 1) for m in metrics}


def stacked(metrics: dict, stats: dict) -> tuple[dict, np.ndarray]:
    """({metric: its column slice}, f64[images, K]): one system's statistics of every metric side by side."""
    columns, at = {}, 0
    for m in metrics:
        columns[m] = slice(at, at + stats[m].shape[1])
        at += stats[m].shape[1]
    return columns, np.concatenate([np.asarray(stats[m], np.float64) for m in metrics], axis=1)


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
    at, rows_of = {}, {}
    for system in systems:
        at, rows_of[system] = stacked(metrics, stats[system])
    resampled = {system: counts @ rows_of[system] for system in systems}   # f64[B, K]: summed statistics
    tests = {system: randomization_p(metrics, at, rows_of[systems[0]], rows_of[system], plan.trials,
                                     np.random.default_rng(ar_seed)) for system in systems[1:]}
    rows = []
    for name, metric in metrics.items():
        scores = {system: metric.from_sums(resampled[system][:, at[name]], images) for system in systems}
        base_score = float(metric.aggregate(stats[systems[0]][name]))
        base_jackknife = jackknife(metric, rows_of[systems[0]][:, at[name]])
        for system in systems:
            score = float(metric.aggregate(stats[system][name]))
            own = jackknife(metric, rows_of[system][:, at[name]])
            low, high = interval(scores[system], score, own)
            row = {"system": system, "metric": name, "score": score, "low": low, "high": high}
            if system != systems[0]:
                diffs = scores[system] - scores[systems[0]]
                diff = score - base_score
                diff_low, diff_high = interval(diffs, diff, own - base_jackknife)
                row.update(diff=diff, diff_low=diff_low, diff_high=diff_high,
                           p_bootstrap=bootstrap_p(diffs, diff), p_randomization=tests[system][name])
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)
