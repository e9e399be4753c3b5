"""The race as it was before issue 41, kept runnable as the baseline: a t bound with Bonferroni
over rounds and candidates, and the prediction-powered assisted race of issue 29.

``race_table(matrix, settings, prior, names, features, screen)`` is ``ranking.racing.race_table``
of commit 76e84f4 (what ``pregen-search select`` ran until then), with one addition: the result's
``intervals`` (f[rounds, candidates, 2]) hold every candidate's interval after each round (its
t interval on the images scored so far, at the race's corrected level), which ``race_coverage.py``
checks against the whole split. Statistics: c is dropped when the one-sided upper bound
``mean(d) + t_{1-a'}(n - 1) sd(d) / sqrt(n)`` of its paired differences to the leader is below
zero, ``a' = alpha / (rounds x (N - 1))``; each interval is ``mean +- t_{1-a'}(n - 1) sd / sqrt(n)``.
Assisted races (``features``) use ``ppi``'s estimates (``ppi.py`` here), as in issue 29 (``assisted.py``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import ppi  # issue 29's prediction-powered estimates, beside this file
from scipy import stats

from pregen_jax.ranking import racing
from pregen_jax.ranking.racing import RaceResult, RaceSettings


def race(score_images, num_candidates: int, num_images: int, settings: RaceSettings = RaceSettings(), prior=None,
         names=None, features=None, screen: int | None = None) -> RaceResult:
    """The t-bound race (see the module's docstring); arguments as ``ranking.racing.race``."""
    names = list(names) if names is not None else [str(c) for c in range(num_candidates)]
    prior = np.zeros(num_candidates) if prior is None else np.asarray(prior, np.float64)
    if features is not None:
        features = np.asarray(features, np.float64)
    if screen is None and settings.screen is not None:
        screen = racing.screen_size(num_candidates, settings.screen)
    order = racing.prior_order(prior)
    prior_rank = np.empty(num_candidates, int)
    prior_rank[order] = np.arange(1, num_candidates + 1)
    raced = [int(c) for c in order[:screen]]
    total_budget = settings.budget * num_images * num_candidates
    sizes = racing.round_sizes(num_images, len(raced), min(1.0, total_budget / (num_images * len(raced))))
    looks = len(sizes) * max(len(raced) - 1, 1)
    alpha = (1 - settings.confidence) / looks
    images = np.random.default_rng(settings.seed).permutation(num_images)
    placed = features[:, images] if features is not None else None  # by position in ``images``

    scores = np.full((num_candidates, num_images), np.nan)
    alive = list(raced)
    status = {c: racing.STATUS_LEFT if c in raced else racing.STATUS_SCREENED for c in range(num_candidates)}
    rounds_in = np.zeros(num_candidates, int)
    budget_left = total_budget
    done = 0
    run: list[int] = []
    history, interval = [], np.full((num_candidates, 2), np.nan)
    for k, size in enumerate(sizes, start=1):
        new = racing.round_images(size, done, len(alive), budget_left)  # the package's schedule, shared
        if new is None:
            break
        size = done + new
        for c in alive:
            scores[c, done:size] = np.asarray(score_images(c, images[done:size]), np.float64)
            rounds_in[c] += 1
        budget_left -= new * len(alive)
        done = size
        run.append(size)
        for c in alive:
            half = _half_width(scores[c, :done], alpha)
            interval[c] = scores[c, :done].mean() - half, scores[c, :done].mean() + half
        history.append(interval.copy())
        if len(alive) < 2:
            break
        if placed is None:
            alive = _survivors(scores[:, :done], alive, prior_rank, alpha, status, k)
        else:
            alive = _assisted_survivors(scores, placed, alive, prior_rank, alpha, status, k, settings.seed)
        if len(alive) == 1:
            break

    counts = (~np.isnan(scores)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nansum(scores, axis=1) / counts
    columns: dict = {}
    assist: dict = {}
    if placed is None:
        estimates = means
        half = np.array([_half_width(scores[c, :counts[c]], alpha) for c in range(num_candidates)])
        low, high = estimates - half, estimates + half
    else:
        predictions = ppi.crossfit_predictions(placed[raced], scores[raced], seed=settings.seed)
        singles = dict(zip(raced, ppi.group_estimates(scores[raced], predictions, 2 * alpha)))
        estimates = np.array([singles[c].estimate if c in singles else np.nan for c in range(num_candidates)])
        low = np.array([singles[c].low if c in singles else np.nan for c in range(num_candidates)])
        high = np.array([singles[c].high if c in singles else np.nan for c in range(num_candidates)])
        columns = {"plain_estimate": means,
                   "lam": [singles[c].lam if c in singles else np.nan for c in range(num_candidates)],
                   "variance_ratio": [singles[c].variance_ratio if c in singles else np.nan
                                      for c in range(num_candidates)]}
    picked = min(alive, key=lambda c: (-estimates[c], prior_rank[c]))
    status[picked] = racing.STATUS_PICKED
    if placed is not None:
        pairs, r2_pairs = _pair_estimates_to(scores, placed, raced, picked, alpha, settings.seed)
        columns["pair_variance_ratio"] = [pairs[c].variance_ratio if c in pairs else np.nan
                                          for c in range(num_candidates)]
        ratios = [pairs[c].variance_ratio for c in pairs]
        assist = {"r2_single": ppi.crossfit_r2(predictions, scores[raced]), "r2_pairs": r2_pairs,
                  "variance_ratio_pairs": float(np.median(ratios)) if ratios else math.nan}
    assist["screened"] = num_candidates - len(raced)
    table = pd.DataFrame({
        "candidate": names, "prior_rank": prior_rank, "rounds": rounds_in, "images_scored": counts,
        "estimate": estimates, "low": low, "high": high,
        "status": [status[c] for c in range(num_candidates)],
        "picked": [c == picked for c in range(num_candidates)], **columns})
    spent = int(counts.sum())
    return RaceResult(table, picked, [c for c in alive if c != picked], spent,
                      spent / (num_candidates * num_images), run, alpha, assist, alpha,
                      np.array(history).reshape(-1, num_candidates, 2))


def _survivors(scores, alive, prior_rank, alpha, status, k):
    means = scores[alive].mean(1)
    leader = alive[int(min(range(len(alive)), key=lambda j: (-means[j], prior_rank[alive[j]])))]
    n = scores.shape[1]
    t = stats.t.ppf(1 - alpha, n - 1)
    keep = []
    for c in alive:
        if c == leader:
            keep.append(c)
            continue
        d = scores[c] - scores[leader]
        if d.mean() + t * d.std(ddof=1) / math.sqrt(n) < 0:
            status[c] = f"dropped in round {k}"
        else:
            keep.append(c)
    return keep


def _pair_estimates_to(scores, placed, group, leader, alpha, seed):
    others = [c for c in group if c != leader]
    if not others:
        return {}, math.nan
    found, r2 = ppi.pair_estimates(scores, placed, [(c, leader) for c in others], 2 * alpha, seed)
    return dict(zip(others, found)), r2


def _assisted_survivors(scores, placed, alive, prior_rank, alpha, status, k, seed):
    predictions = ppi.crossfit_predictions(placed[alive], scores[alive], seed=seed)
    singles = dict(zip(alive, ppi.group_estimates(scores[alive], predictions, 2 * alpha)))
    leader = min(alive, key=lambda c: (-singles[c].estimate, prior_rank[c]))
    pairs, _ = _pair_estimates_to(scores, placed, alive, leader, alpha, seed)
    keep = []
    for c in alive:
        if c != leader and pairs[c].upper(alpha) < 0:
            status[c] = f"dropped in round {k}"
        else:
            keep.append(c)
    return keep


def _half_width(values: np.ndarray, alpha: float) -> float:
    n = len(values)
    if n < 2:
        return float("nan")
    return float(stats.t.ppf(1 - alpha, n - 1) * values.std(ddof=1) / math.sqrt(n))


def race_table(matrix, settings: RaceSettings, prior=None, names=None, features=None, screen=None) -> RaceResult:
    """The t-bound race on known per-image scores ``matrix: f64[candidates, images]``."""
    matrix = np.asarray(matrix, np.float64)
    return race(lambda c, idx: matrix[c, idx], matrix.shape[0], matrix.shape[1], settings, prior, names,
                features, screen)
