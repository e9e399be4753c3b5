"""Intervals and paired tests for corpus metrics, recomputed from per-image sufficient statistics.

Every resample rescores the corpus from its rows' statistics (``metric.from_sums`` of the summed
rows: BLEU from its clipped counts and lengths, METEOR from its alignment statistics, CIDEr-D
from per-image scores whose document frequencies stay those of the full set), never by averaging
sentence scores. A bootstrap resample is ``counts @ stats`` (``counts``: how often each image was
drawn), which is ``aggregate(stats[idx])`` up to the float order of the sum.

- Paired bootstrap (Koehn 2004): ``resamples`` draws of images with replacement, the same draws
  for every system and metric (so differences are paired). The draws are multinomial counts per
  image (``u16[chunk, images]``, a chunk of resamples at a time: memory grows with the images,
  not with images x resamples; 40,504 images x 1,000 resamples never hold more than ``_CELLS``
  counts). A system's 95% interval is the BCa interval of its resampled scores (the percentiles
  moved by the bootstrap's bias and the jackknife's skew: the plain 2.5th and 97.5th percentiles
  undercover CIDEr-D at 200 images, 0.929 against 0.941, tests/test_evaluate_significance.py).
  Against the first system: the difference ``d`` and its two-sided p-value, unadjusted,
  ``p = (1 + r) / (1 + B)``, ``r = #{|d_b - d| >= |d|}`` (the resampled differences centred on
  the observed one stand in for the null distribution).
- One family of comparisons (``family``): every comparison printed (systems after the first x
  metrics) by default, or each metric's; single-step max-T over the same draws gives each
  difference its adjusted p-value (``p_adjusted``) and its simultaneous 95% interval
  (``diff_low``, ``diff_high``), which excludes 0 exactly when ``p_adjusted < 0.05``; the
  step-down p-values beside (``p_stepdown``).
- A count of distinct things over the corpus (gDiv-1: the words used; ``centred_draws``) loses the
  words of the images a resample leaves out (about 37% of them), so every resample is below the
  observed count: its resampled scores are centred on the observed one (the bootstrap's bias
  taken off; their spread kept) before its interval and tests.
- Approximate randomization (Noreen 1989; Riezler and Maxwell 2005): ``trials`` random swaps of
  the two systems' captions image by image (each image swapped with probability 1/2, the same
  swaps for every system), ``p = (1 + #{|d_t| >= |d|}) / (T + 1)``; shown unadjusted beside.

The bootstrap and the randomization draw from two independent streams of one seed
(``numpy.random.SeedSequence(seed).spawn(2)``): changing ``resamples`` leaves the randomization
p-values as they were. At least ``MIN_RESAMPLES`` resamples and ``MIN_TRIALS`` trials (fewer
give intervals from a handful of draws; ``family`` says why no more are needed for a larger family).

How this relates to sacrebleu's ``--paired-bs`` and ``--paired-ar`` (sacrebleu/significance.py):
the same two tests, the same defaults (1,000 resamples, 10,000 trials), statistics summed and
rescored the same way, the same draws for all systems. Where it differs: sacrebleu's interval
is the bootstrap mean +- half the percentile width (symmetric, centred on the resampled mean;
here the BCa interval, asymmetric where the scores are skewed), and it gives no interval on the
difference; its bootstrap p-value centres the *absolute* resampled differences on their mean and
counts those above the observed absolute difference (``(#{|d_b| - mean|d_b| > |d|} + 1) / (B + 1)``),
and its randomization test counts ``>`` where this counts ``>=`` (a system against itself gets
p = 1 here). Its default seed is 12345 (``SACREBLEU_SEED``); here ``seed`` (default 0). It
corrects for no multiple comparisons; here max-T over the stated family.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from .family import LEVEL, adjust_rows

if TYPE_CHECKING:
    import pandas as pd

MIN_RESAMPLES, MIN_TRIALS = 1000, 999
_AHEAD = 96 << 20  # bytes of bootstrap counts drawn ahead (1,000 resamples of 40,504 images: 81 MB)
_CELLS = 1 << 23  # counts or swap masks per chunk (64 MB as float64), whatever the images: BLAS threads
# on products of a few rows by 40,504 images took 10-100x longer than on 200 rows (measured under load)


@dataclasses.dataclass(frozen=True)
class Resampling:
    """How intervals and p-values are drawn: ``resamples`` bootstrap draws, ``trials`` randomization
    swaps, and the ``seed`` of both (two independent streams of it, ``streams``); ``family``: the
    comparisons adjusted together (``family.FAMILIES``)."""

    resamples: int = 1000
    trials: int = 10000
    seed: int = 0
    family: str = "all"

    def __post_init__(self):
        if self.resamples < MIN_RESAMPLES:
            raise ValueError(f"--resamples {self.resamples}: at least {MIN_RESAMPLES} bootstrap resamples (fewer give "
                             "intervals and p-values too coarse to trust)")
        if self.trials < MIN_TRIALS:
            raise ValueError(f"--trials {self.trials}: at least {MIN_TRIALS} randomization trials (fewer cannot give "
                             "p <= 0.05 after correcting for several comparisons)")

    def streams(self) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
        """(bootstrap's, randomization's) seed sequences: independent children of ``seed``."""
        bootstrap, randomization = np.random.SeedSequence(self.seed).spawn(2)
        return bootstrap, randomization


def _rows_per_chunk(images: int, total: int) -> int:
    return max(1, min(total, _CELLS // max(images, 1)))


def bootstrap_counts(images: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Chunks u16[chunk, images] (chunks of ``resamples`` rows in all): how often each image is drawn in
    each resample, the multinomial counts of ``images`` uniform draws with replacement (each row
    ``bincount(rng.integers(0, images, images))``)."""
    step = _rows_per_chunk(images, resamples)
    for start in range(0, resamples, step):
        counts = np.empty((min(step, resamples - start), images), np.uint16)
        for row in counts:
            drawn = np.bincount(rng.integers(0, images, images), minlength=images)
            if images > np.iinfo(np.uint16).max and drawn.max() > np.iinfo(np.uint16).max:  # never in practice
                raise OverflowError(f"an image drawn {drawn.max()} times in one resample")
            row[:] = drawn
        yield counts


def resampled_sums(rows: np.ndarray, resamples: int, rng: np.random.Generator, counts=None) -> np.ndarray:
    """f64[B, K]: the summed statistics (rows f64[images, K], or a sparse matrix: gDiv-1's words) of each
    bootstrap resample, ``counts @ rows`` chunk by chunk (``bootstrap_counts``; ``counts``: those
    chunks, some drawn ahead, ``drawn_ahead``)."""
    rows = rows if _is_sparse(rows) else np.asarray(rows, np.float64)
    chunks = bootstrap_counts(len(rows), resamples, rng) if counts is None else counts
    return np.concatenate([chunk.astype(np.float64) @ rows for chunk in chunks])


def drawn_ahead(images: int, plan: Resampling, budget: int = _AHEAD) -> list[np.ndarray] | Iterator[np.ndarray]:
    """``bootstrap_counts`` of ``plan``'s bootstrap stream, drawn now: a list (read as often as needed)
    where they fit in ``budget`` bytes, else its first chunks drawn now and the rest as they are read
    (once). The same draws either way, made while METEOR's process still aligns."""
    chunks = bootstrap_counts(images, plan.resamples, np.random.default_rng(plan.streams()[0]))
    ahead: list[np.ndarray] = []
    for chunk in chunks:
        ahead.append(chunk)
        if sum(c.nbytes for c in ahead) >= budget:
            return itertools.chain(ahead, chunks)
    return ahead


def swap_masks(images: int, trials: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Chunks f64[chunk, images] of 0/1 (``trials`` rows in all): 1 where an image's two captions swap;
    each row the first ``images`` bits of ``rng.bytes(ceil(images / 8))`` (``swap_row``), a row at a
    time: the same draws whatever the chunk, 20x faster than ``rng.integers(0, 2, images)``."""
    step = _rows_per_chunk(images, trials)
    for start in range(0, trials, step):
        swaps = np.empty((min(step, trials - start), images), np.float64)
        for row in swaps:
            row[:] = swap_row(images, rng)
        yield swaps


def swap_row(images: int, rng: np.random.Generator) -> np.ndarray:
    """u8[images] of 0/1, each 1 with probability 1/2: one trial's swaps (the bits of random bytes)."""
    return np.unpackbits(np.frombuffer(rng.bytes((images + 7) // 8), np.uint8), count=images)


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
    """f64[images]: the corpus score without each image, from the summed statistics (one vectorized call;
    a metric with sparse statistics says it itself, ``without_each``)."""
    if _is_sparse(rows):
        return metric.without_each(rows)
    return metric.from_sums(rows.sum(axis=0) - rows, len(rows) - 1)


def _is_sparse(rows) -> bool:
    """``rows`` is a scipy sparse matrix (statistics over a vocabulary: gDiv-1)."""
    return hasattr(rows, "tocsr")


def _common_width(metrics: dict, stats: dict) -> dict:
    """``stats`` with each metric's sparse statistics widened to the same columns in every system (gDiv-1:
    its words, numbered across systems by the metric; a system lacks the words found after it)."""
    out = {system: dict(by_metric) for system, by_metric in stats.items()}
    for name in metrics:
        parts = [out[system][name] for system in out]
        if any(map(_is_sparse, parts)):
            width = max(p.shape[1] for p in parts)
            for system in out:
                rows = out[system][name].copy()
                rows.resize((rows.shape[0], width))
                out[system][name] = rows
    return out


def _side_by_side(parts: list):
    """Statistics f64[images, k_j] side by side: dense, or sparse where any part is."""
    if any(map(_is_sparse, parts)):
        from scipy.sparse import csr_array, hstack
        return hstack([p if _is_sparse(p) else csr_array(np.asarray(p, np.float64)) for p in parts], format="csr")
    return np.concatenate([np.asarray(p, np.float64) for p in parts], axis=1)


def bootstrap_p(resampled: np.ndarray, observed: float) -> float:
    """Two-sided p = (1 + r) / (1 + B) of the observed difference, r = #{|d_b - d| >= |d|} over the
    resampled differences (f64[B])."""
    hits = np.count_nonzero(np.abs(resampled - observed) >= abs(observed) * (1 - 1e-12))
    return (1 + hits) / (len(resampled) + 1)


def randomization_p(metrics: dict, columns: dict, base: np.ndarray, system: np.ndarray, trials: int,
                    rng: np.random.Generator) -> dict:
    """{metric: two-sided approximate-randomization p of ``system`` vs ``base``}: f64[images, K] each,
    metric ``m``'s statistics in ``columns[m]``; one set of swaps serves every metric."""
    images = base.shape[0]
    base_sum, system_sum = base.sum(axis=0), system.sum(axis=0)
    observed = {m: abs(float(metric.from_sums(system_sum[columns[m]], images) -
                             metric.from_sums(base_sum[columns[m]], images))) for m, metric in metrics.items()}
    change = system - base                                   # what swapping an image moves between the two
    hits = dict.fromkeys(metrics, 0)
    for swap in swap_masks(images, trials, rng):
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
    return columns, _side_by_side([stats[m] for m in metrics])


COLUMNS = ["system", "metric", "score", "low", "high", "diff", "diff_low", "diff_high", "p_bootstrap", "p_adjusted",
           "p_stepdown", "p_randomization"]


def compare(metrics: dict, stats: dict, plan: Resampling = Resampling()) -> pd.DataFrame:
    """One row per (system, metric): the corpus score, its 95% bootstrap interval, and for every
    system after the first the difference to the first, its simultaneous 95% interval and max-T
    adjusted p-value over ``plan.family`` (``family``), the step-down p-value, the unadjusted paired
    bootstrap p-value and the approximate-randomization p-value.

    ``metrics``: metric name -> ``PostgenMetric``; ``stats``: system -> {metric name -> f64[images, k]}
    (every system over the same images, in the same order). Metrics without statistics
    (``None``) get their score only.
    """
    import pandas as pd
    rows, draws = compare_rows(metrics, stats, plan)
    adjust_rows(rows, draws, plan.family)
    return pd.DataFrame(rows, columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)


def compare_rows(metrics: dict, stats: dict, plan: Resampling = Resampling(), counts=None) -> tuple[list[dict], dict]:
    """``compare``'s rows as dicts (COLUMNS's keys; those that do not apply absent), metric by metric,
    before the family's adjustment (``family.adjust_rows``, which needs every metric's rows), and
    (system, metric) -> f64[B] the resampled differences it reads; ``counts``: the bootstrap's draws
    made ahead (``drawn_ahead``), else drawn here."""
    systems = list(stats)
    if not metrics:
        return [], {}
    sparse = {name: metric for name, metric in metrics.items() if _is_sparse(stats[systems[0]][name])}
    if sparse and len(sparse) < len(metrics):  # apart, each pass on the same draws: dense rows stay dense
        dense = {name: metric for name, metric in metrics.items() if name not in sparse}
        rows, draws = compare_rows(dense, stats, plan, counts)
        more_rows, more_draws = compare_rows(sparse, stats, plan, counts if isinstance(counts, list) else None)
        order = {name: k for k, name in enumerate(metrics)}
        return sorted(rows + more_rows, key=lambda row: order[row["metric"]]), {**draws, **more_draws}
    stats = _common_width(metrics, stats)
    images = next(iter(stats[systems[0]].values())).shape[0]
    bootstrap_seed, randomization_seed = plan.streams()
    at, rows_of = {}, {}
    for system in systems:
        at, rows_of[system] = stacked(metrics, stats[system])
    width = rows_of[systems[0]].shape[1]
    every = resampled_sums(_side_by_side([rows_of[s] for s in systems]), plan.resamples,
                           np.random.default_rng(bootstrap_seed), counts)  # the same draws for every system and metric
    resampled = {system: every[:, k * width:(k + 1) * width] for k, system in enumerate(systems)}
    tests = {system: randomization_p(metrics, at, rows_of[systems[0]], rows_of[system], plan.trials,
                                     np.random.default_rng(randomization_seed))  # the same swaps for every system
             for system in systems[1:]}
    rows, draws = [], {}
    for name, metric in metrics.items():
        scores = {system: metric.from_sums(resampled[system][:, at[name]], images) for system in systems}
        if getattr(metric, "centred_draws", False):  # a count of distinct words: every resample holds fewer
            scores = {system: draws_ + float(metric.aggregate(stats[system][name])) - draws_.mean()
                      for system, draws_ in scores.items()}
        base_score = float(metric.aggregate(stats[systems[0]][name]))
        for system in systems:
            score = float(metric.aggregate(stats[system][name]))
            low, high = interval(scores[system], score, jackknife(metric, rows_of[system][:, at[name]]))
            row = {"system": system, "metric": name, "score": score, "low": low, "high": high}
            if system != systems[0]:
                draws[system, name] = np.asarray(scores[system] - scores[systems[0]], np.float64)
                diff = score - base_score
                row.update(diff=diff, p_bootstrap=bootstrap_p(draws[system, name], diff),
                           p_randomization=tests[system][name])
            rows.append(row)
    return rows, draws
