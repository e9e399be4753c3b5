"""Choose the best of N models by racing: real scoring spent only where it separates them.

Every round, every candidate still in the race is scored on the same new random images of
the split; a candidate leaves when the paired per-image differences to the leader say, at the
stated confidence, that it is worse. The race ends when one candidate remains or the budget
(a share of models x images) is spent; the pick is the best mean among those left.

Statistics. After round k each survivor c has per-image scores on the same n_k images as the
leader L (the survivor with the best mean). With d_i = s_c,i - s_L,i, c is dropped when the
one-sided upper bound  mean(d) + t_{1-a'}(n_k - 1) * sd(d) / sqrt(n_k)  is below zero, with
a' = alpha / (rounds * (N - 1)): Bonferroni over every look the race can take and every
comparison in a look, so the chance of dropping a candidate that is in fact no worse than the
leader stays below about alpha for the whole race (the t bound is exact for normal
differences; per-image CIDEr differences are far from normal on tiny rounds, so the first
round is never smaller than ``MIN_ROUND`` images).

Assisted races (``features``). With cheap per-image features of every candidate on every image
(one teacher-forced pass; ``ranking.features``), every mean and every paired difference is the
prediction-powered regression estimate of the whole split's (``ranking.ppi``: the difference
estimator with the finite-population correction, the predictor cross-fitted by image, power
tuned so that a useless predictor gives the plain mean). The drop rule is the same bound with that
estimate, its standard error and its degrees of freedom. Features of zeros give the plain race
with the finite-population correction, the fair baseline for an assisted one.

Screening (``screen``). Candidates whose prior (the teacher-forced criterion) ranks them below
``screen`` are never scored: status ``screened out``. The budget stays a share of all candidates
x images, so the candidates left get more images each.

Round sizes come from a few fixed buckets (powers of two: the images scored so far double each
round), so code compiled for one batch shape is reused. Only ``score_images`` costs anything:
the race never looks at scores it did not ask for.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field
from scipy import stats

from ..settings import Seed, settings
from . import ppi
from .features import Assist

MIN_ROUND = 16  # images in the first round, at least: fewer make the t bound meaningless
STATUS_PICKED = "picked"
STATUS_LEFT = "not separated"  # still in the race when it ended, not the pick
STATUS_SCREENED = "screened out"  # ranked below the screen by the prior: never scored


Share = Annotated[float, Field(gt=0, le=1)]


@settings
class RaceSettings:
    """How a race spends its budget, validated once, when made (a ``ValueError`` naming the field).

    budget: share of (candidates x images) that may be scored, in (0, 1].
    confidence: 1 - alpha for the whole race (Bonferroni over rounds and candidates), in [0.5, 1).
    seed: the random order in which the split's images are drawn.
    assist: the per-image features an assisted race predicts scores from ("none": a plain race).
    screen: race only this share of the candidates, those the prior ranks best (None: all).
    split: the split whose images a race of a search's models scores ("val" selects; "test"
      checks a pick against the search's whole-split scores).
    """

    budget: Share = 0.1
    confidence: Annotated[float, Field(ge=0.5, lt=1)] = 0.95
    seed: Seed = 0
    assist: Assist = "none"
    screen: Share | None = None
    split: Literal["val", "test"] = "val"


@dataclasses.dataclass
class RaceResult:
    """What a race found.

    table: one row per candidate in the order given, columns ``candidate``, ``prior_rank``,
      ``rounds`` (rounds it was scored in), ``images_scored``, ``estimate`` (its mean score on
      its images), ``low``/``high`` (the interval at the race's corrected level), ``status``
      (``picked``, ``dropped in round k``, ``not separated``, ``screened out``), ``picked``; an
      assisted race adds ``plain_estimate``, ``lam`` and ``variance_ratio`` (the plain mean's
      variance over the estimate's, on the same images) and ``pair_variance_ratio`` (the same for
      the difference to the pick).
    picked: index of the chosen candidate.
    not_separated: indices still in the race at the end besides the pick.
    images_scored: image scorings spent in all; ``cost`` is that over candidates x images.
    rounds: round sizes (cumulative images) actually run.
    assist: for an assisted race, at its end: ``r2_single`` and ``r2_pairs`` (cross-fitted R^2
      of the predictor of scores and of differences to the pick), ``variance_ratio_pairs`` (the
      median over the pick's pairs); every race: ``screened`` (how many were screened out).
    """

    table: pd.DataFrame
    picked: int
    not_separated: list[int]
    images_scored: int
    cost: float
    rounds: list[int]
    alpha_per_test: float
    assist: dict = dataclasses.field(default_factory=dict)


def round_sizes(num_images: int, num_candidates: int, budget: float) -> list[int]:
    """Cumulative images per round: powers of two from the first bucket, doubling, then the
    whole split; cut where even a single survivor could not afford the next round.

    The first bucket is the largest power of two that lets every candidate take at least three
    looks within the budget if none is dropped (but at least ``MIN_ROUND``).
    """
    per_candidate = budget * num_images  # what each candidate can have if none is ever dropped
    first = MIN_ROUND
    while first * 2 * 4 <= per_candidate:  # first, 2 first, 4 first fit: three looks
        first *= 2
    first = max(2, min(first, math.floor(per_candidate), num_images))
    sizes = [first]
    total_budget = budget * num_images * num_candidates
    while sizes[-1] < num_images:
        nxt = min(sizes[-1] * 2, num_images)
        # the cheapest way to reach nxt: one survivor beside the leader (two candidates)
        if first * num_candidates + 2 * (nxt - first) > total_budget + 1e-9:
            break
        sizes.append(nxt)
    return sizes


def race(score_images: Callable[[int, np.ndarray], np.ndarray], num_candidates: int, num_images: int,
         settings: RaceSettings = RaceSettings(), prior: Sequence[float] | None = None,
         names: Sequence[str] | None = None, features: np.ndarray | None = None,
         screen: int | None = None) -> RaceResult:
    """Race ``num_candidates`` on a split of ``num_images`` images.

    score_images(c, images: i64[n]) -> f64[n]: candidate c's per-image scores (higher is
      better) on those images; the only costly call, made once per candidate and round on
      the round's new images.
    prior: a teacher-forced criterion per candidate, lower is better (e.g. validation
      perplexity): the order candidates are scored in, the tie-break between equal means,
      and reported as ``prior_rank``.
    features: f[candidates, images, C] cheap per-image features (an assisted race) or None.
    screen: race only the ``screen`` candidates the prior ranks best (None: the share
      ``settings.screen`` says, or all).
    """
    if num_candidates < 1:
        raise ValueError("no candidates to race")
    if num_images < 2:
        raise ValueError(f"{num_images} images: a race needs at least 2")
    names = list(names) if names is not None else [str(c) for c in range(num_candidates)]
    prior = np.zeros(num_candidates) if prior is None else np.asarray(prior, np.float64)
    if prior.shape != (num_candidates,):
        raise ValueError(f"prior has {prior.shape} values for {num_candidates} candidates")
    if features is not None:
        features = np.asarray(features, np.float64)
        if features.ndim != 3 or features.shape[:2] != (num_candidates, num_images):
            raise ValueError(f"features {features.shape}: expected f[{num_candidates}, {num_images}, C]")
    if screen is None and settings.screen is not None:
        screen = screen_size(num_candidates, settings.screen)
    order = prior_order(prior)
    prior_rank = np.empty(num_candidates, int)
    prior_rank[order] = np.arange(1, num_candidates + 1)
    racing = [int(c) for c in order[:screen]]
    if not racing:
        raise ValueError(f"screen {screen}: no candidate left to race")

    total_budget = settings.budget * num_images * num_candidates
    sizes = round_sizes(num_images, len(racing), min(1.0, total_budget / (num_images * len(racing))))
    looks = len(sizes) * max(len(racing) - 1, 1)
    alpha = (1 - settings.confidence) / looks
    images = np.random.default_rng(settings.seed).permutation(num_images)
    placed = features[:, images] if features is not None else None  # by position in ``images``

    scores = np.full((num_candidates, num_images), np.nan)  # by position in ``images``
    alive = list(racing)
    status = {c: STATUS_LEFT if c in racing else STATUS_SCREENED for c in range(num_candidates)}
    rounds_in = np.zeros(num_candidates, int)
    budget_left = total_budget
    done = 0
    run: list[int] = []
    for k, size in enumerate(sizes, start=1):
        new = size - done
        if new * len(alive) > budget_left + 1e-9:
            # the last round: the largest bucket (a power of two) the budget still pays for
            affordable = int((budget_left + 1e-9) // len(alive))
            if affordable < 2:
                break
            new = 1 << (affordable.bit_length() - 1)
            size = done + new
        for c in alive:
            values = np.asarray(score_images(c, images[done:size]), np.float64)
            if values.shape != (new,):
                raise ValueError(f"candidate {names[c]}: {values.shape} scores for {new} images")
            scores[c, done:size] = values
            rounds_in[c] += 1
        budget_left -= new * len(alive)
        done = size
        run.append(size)
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
        predictions = ppi.crossfit_predictions(placed[racing], scores[racing], seed=settings.seed)
        singles = dict(zip(racing, ppi.group_estimates(scores[racing], predictions, 2 * alpha)))
        estimates = np.array([singles[c].estimate if c in singles else np.nan for c in range(num_candidates)])
        low = np.array([singles[c].low if c in singles else np.nan for c in range(num_candidates)])
        high = np.array([singles[c].high if c in singles else np.nan for c in range(num_candidates)])
        columns = {"plain_estimate": means,
                   "lam": [singles[c].lam if c in singles else np.nan for c in range(num_candidates)],
                   "variance_ratio": [singles[c].variance_ratio if c in singles else np.nan
                                      for c in range(num_candidates)]}
    picked = min(alive, key=lambda c: (-estimates[c], prior_rank[c]))
    status[picked] = STATUS_PICKED
    if placed is not None:
        pairs, r2_pairs = _pair_estimates_to(scores, placed, racing, picked, alpha, settings.seed)
        columns["pair_variance_ratio"] = [pairs[c].variance_ratio if c in pairs else np.nan
                                          for c in range(num_candidates)]
        ratios = [pairs[c].variance_ratio for c in pairs]
        assist = {"r2_single": ppi.crossfit_r2(predictions, scores[racing]), "r2_pairs": r2_pairs,
                  "variance_ratio_pairs": float(np.median(ratios)) if ratios else math.nan}
    assist["screened"] = num_candidates - len(racing)
    table = pd.DataFrame({
        "candidate": names, "prior_rank": prior_rank, "rounds": rounds_in, "images_scored": counts,
        "estimate": estimates, "low": low, "high": high,
        "status": [status[c] for c in range(num_candidates)],
        "picked": [c == picked for c in range(num_candidates)], **columns})
    spent = int(counts.sum())
    return RaceResult(table, picked, [c for c in alive if c != picked], spent,
                      spent / (num_candidates * num_images), run, alpha, assist)


def _survivors(scores: np.ndarray, alive: list[int], prior_rank: np.ndarray, alpha: float,
               status: dict, k: int) -> list[int]:
    """Candidates not shown worse than the leader on the images all of them were scored on."""
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
        upper = d.mean() + t * d.std(ddof=1) / math.sqrt(n)
        if upper < 0:
            status[c] = f"dropped in round {k}"
        else:
            keep.append(c)
    return keep


def _single_estimates(scores: np.ndarray, placed: np.ndarray, group: list[int], alpha: float,
                      seed: int) -> dict[int, ppi.MeanEstimate]:
    """Each candidate's whole-split mean (two-sided level 1 - 2 alpha), the predictor pooled over ``group``."""
    predictions = ppi.crossfit_predictions(placed[group], scores[group], seed=seed)
    return dict(zip(group, ppi.group_estimates(scores[group], predictions, 2 * alpha)))


def prior_order(prior: np.ndarray) -> np.ndarray:
    """Candidates best first by the prior (lower is better; NaN last; ties in candidate order)."""
    return np.argsort(np.where(np.isnan(prior), np.inf, prior), kind="stable")


def _pair_estimates_to(scores: np.ndarray, placed: np.ndarray, group: list[int], leader: int, alpha: float,
                       seed: int) -> tuple[dict[int, ppi.MeanEstimate], float]:
    """mean(c) - mean(leader) for every other c of ``group``, on the images both were scored on."""
    others = [c for c in group if c != leader]
    if not others:
        return {}, math.nan
    found, r2 = ppi.pair_estimates(scores, placed, [(c, leader) for c in others], 2 * alpha, seed)
    return dict(zip(others, found)), r2


def _assisted_survivors(scores: np.ndarray, placed: np.ndarray, alive: list[int], prior_rank: np.ndarray,
                        alpha: float, status: dict, k: int, seed: int) -> list[int]:
    """``_survivors`` with prediction-powered estimates: the leader by its estimated whole-split
    mean, a drop when the difference's one-sided upper bound at 1 - alpha is below zero."""
    singles = _single_estimates(scores, placed, alive, alpha, seed)
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
    """Half the two-sided interval of a mean at level 1 - 2 alpha (t distribution)."""
    n = len(values)
    if n < 2:
        return float("nan")
    return float(stats.t.ppf(1 - alpha, n - 1) * values.std(ddof=1) / math.sqrt(n))


def race_table(matrix: np.ndarray, settings: RaceSettings, prior=None, names=None, features=None,
               screen: int | None = None) -> RaceResult:
    """A race on known per-image scores ``matrix: f64[candidates, images]`` (studies, tests):
    each scoring is a lookup, and still counts as one image scored."""
    matrix = np.asarray(matrix, np.float64)
    return race(lambda c, idx: matrix[c, idx], matrix.shape[0], matrix.shape[1], settings, prior, names,
                features, screen)


def screen_size(num_candidates: int, keep_share: float) -> int:
    """How many candidates a screen keeping ``keep_share`` of them races: ceil, at least 2."""
    if not 0 < keep_share <= 1:
        raise ValueError(f"screen share {keep_share}: expected a share in (0, 1]")
    return min(num_candidates, max(2, math.ceil(keep_share * num_candidates - 1e-9)))
