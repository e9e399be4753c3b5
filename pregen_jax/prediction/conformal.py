"""Full conformal prediction intervals for a line whose pre-gen metric is chosen by R^2, the choice made
inside every fit (``pregen-search predict``).

``predict`` picks, per post-gen metric, the candidate pre-gen metric with the highest R^2 over the
calibration models (``choose``), fits a least-squares line through it and predicts a new model's
score. Intervals computed after that choice from the same models are optimistic (the winner of
~400 correlations fits its n models better than it fits the next one: in simulations of n = 20
and 504 metrics, jackknife+ after choosing covered 0.81-0.88 at a nominal 0.90,
``experiments/predict_domain``). Here the whole
procedure, choice included, is the algorithm of full conformal prediction (Vovk et al. 2005;
Lei et al. 2018, "Distribution-free predictive inference for regression", JASA 113): for a
candidate score ``y`` of the new model, each of the ``n + 1`` models (the new one with score
``y``) is scored by its leave-one-out residual, the metric chosen and the line fitted on the
other ``n`` models,

    R_i(y) = |y_i - line_{-i}(x_i)|,   i = 1..n+1;   y is in the set  <=>
    #{i <= n+1 : R_i(y) <= R_{n+1}(y)} <= ceil(level (n + 1)).

Every model is scored by the same symmetric rule, so for a new model exchangeable with the
calibration models the set covers its score with probability at least ``level`` (at most
``level + 1 / (n + 1)`` without ties), whatever the relation and however many candidate metrics:
valid after choosing. The new model's own score is ``|y - the prediction|``, so the prediction is
always in the set. Scoring by the plain residual of the fit on all ``n + 1`` is valid too, but
there a candidate ``y`` far off lets the choice fall on whichever metric puts the new model far
out, the line bends through it and the set gains islands (hull 2.7 against 1.5 wide in the
simulation). The set is bounded once ``ceil(level (n + 1)) <= n`` (``min_models``: 9 for 0.9).
With the metric re-chosen for each ``y`` there is no closed form: the set is found on a grid
(``GRID`` points over a span that doubles until both ends are rejected) and its outermost ends
refined on two nested grids between the last kept and the first rejected candidate (to 8e-6
of the span); the interval reported is the set's hull (a superset: coverage can only rise).

Arrays: ``x`` f64[n, M] the calibration models' candidate metrics, ``y`` f64[n] their post-gen
scores, ``x_new`` f64[M]. Columns are scaled by the calibration models' range first (R^2 and the
lines' predictions do not change; ``sum_sum_pplx`` ~ 1e300 would overflow the products).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

GRID = 257             # candidate scores on the first pass over the span
FINE = 33              # candidates per refining pass: the ends land within span / (128 * 32^2) (8e-6 span) of the set's
MAX_WIDENINGS = 12     # the span doubles at most this often (4096x) before an end is called unbounded


@dataclasses.dataclass(frozen=True)
class Interval:
    """A prediction: ``predicted`` (the line of the metric chosen on the n models, at the new model),
    ``low``, ``high`` (the conformal set's hull; infinite where unbounded), ``chosen`` (that metric's
    column), ``columns`` (the candidate columns the new model's values allowed)."""

    predicted: float
    low: float
    high: float
    chosen: int
    columns: np.ndarray


def min_models(level: float) -> int:
    """The fewest calibration models whose ``level`` set is bounded: ceil(level (n + 1)) <= n."""
    if not 0 < level < 1:
        raise ValueError(f"--level {level}: must lie strictly between 0 and 1")
    n = 2
    while math.ceil(level * (n + 1) - 1e-9) > n:
        n += 1
    return n


def max_level(models: int) -> float:
    """The largest ``level`` whose set is bounded with ``models`` calibration models: n / (n + 1)."""
    return models / (models + 1)


def usable_columns(x: np.ndarray, x_new: np.ndarray | None = None) -> np.ndarray:
    """bool[M]: columns finite for every model (the new one too) and not constant over the calibration models."""
    keep = np.isfinite(x).all(0)
    with np.errstate(invalid="ignore"):
        keep &= np.nanmax(x, 0) > np.nanmin(x, 0)
    if x_new is not None:
        keep &= np.isfinite(x_new)
    return keep


def scaled(x: np.ndarray, x_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both centred on the calibration models' mean and divided by their range, column by column."""
    centre = x.mean(0)
    span = x.max(0) - x.min(0)
    return (x - centre) / span, (x_new - centre) / span


def choose(x: np.ndarray, y: np.ndarray) -> int:
    """The rule: the column of ``x`` f[n, M] with the highest R^2 against ``y`` f[n] (first on ties)."""
    xc, yc = x - x.mean(0), y - y.mean()
    return int(np.argmax(_fit_quality(xc.T @ yc, (xc ** 2).sum(0))))


def _fit_quality(sxy: np.ndarray, sxx: np.ndarray) -> np.ndarray:
    """R^2 up to a common factor, sxy^2 / sxx (``sxx`` f[M], ``sxy`` f[M] or f[M, G]); -inf for a column
    constant over the models fitted (a discrete metric without one model), which no line can use."""
    sxx = sxx.reshape(sxx.shape + (1,) * (sxy.ndim - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sxx > 1e-12, sxy ** 2 / sxx, -np.inf)


def _scores(x_aug: np.ndarray, y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """f[n+1, G]: each model's leave-one-out residual in the augmented fit, for each candidate score of the
    new model: |y_i - the line chosen and fitted on the other n models, at x_i|. ``x_aug`` f[n+1, M]
    (the new model last), ``y`` f[n], ``candidates`` f[G]. The choice is made without the model
    scored, so a far-out new model cannot pick the one metric that bends the line through it."""
    n1, size = x_aug.shape[0], len(candidates)
    scores = np.vstack([np.broadcast_to(y[:, None], (n1 - 1, size)), candidates[None]])   # [n+1, G]
    sx, sxx, sy, sxy = x_aug.sum(0), (x_aug ** 2).sum(0), scores.sum(0), x_aug.T @ scores  # [M], [M], [G], [M, G]
    m, columns = n1 - 1, np.arange(size)
    out = np.empty((n1, size))
    for i in range(n1):  # n + 1 small passes: each [M, G], never [n+1, M, G] at once
        sx_i, sy_i = sx - x_aug[i], sy - scores[i]
        cxx = sxx - x_aug[i] ** 2 - sx_i ** 2 / m                                    # [M]
        cxy = sxy - np.outer(x_aug[i], scores[i]) - np.outer(sx_i, sy_i) / m          # [M, G]
        best = np.argmax(_fit_quality(cxy, cxx), 0)                                  # [G]: the choice without i
        slope = cxy[best, columns] / cxx[best]
        out[i] = np.abs(scores[i] - sy_i / m - slope * (x_aug[i, best] - sx_i[best] / m))
    return out


def _accepted(x_aug: np.ndarray, y: np.ndarray, candidates: np.ndarray, rank: int) -> np.ndarray:
    """bool[G]: the candidate scores the conformal set keeps (the new model's residual at most the
    ``rank``-th smallest of the n + 1)."""
    scores = _scores(x_aug, y, candidates)
    return (scores <= scores[-1]).sum(0) <= rank


def _refine(x_aug, y, inside: float, outside: float, rank: int) -> float:
    """The kept score nearest ``outside``, between a kept and a rejected candidate, on two nested grids of
    ``FINE`` points (each narrows the gap 32-fold)."""
    for _ in range(2):
        candidates = np.linspace(inside, outside, FINE)
        last = np.flatnonzero(_accepted(x_aug, y, candidates, rank))[-1]  # candidates[0] is kept
        inside, outside = candidates[last], candidates[min(last + 1, FINE - 1)]
    return float(inside)


def conformal_interval(x: np.ndarray, y: np.ndarray, x_new: np.ndarray, level: float) -> Interval:
    """The full conformal interval at ``level`` with the metric re-chosen in every fit (module docstring).
    ``x`` f[n, M], ``y`` f[n], ``x_new`` f[M]; columns not usable (``usable_columns``) are left out of
    the choice. ValueError where none is usable."""
    columns = np.flatnonzero(usable_columns(x, x_new))
    if not len(columns):
        raise ValueError("no candidate pre-gen metric is finite for the new model and varies over the calibration "
                         "models")
    xs, xs_new = scaled(x[:, columns], x_new[columns])
    n = len(y)
    chosen = choose(xs, y)
    xc = xs[:, chosen] - xs[:, chosen].mean()
    predicted = float(y.mean() + (xc @ (y - y.mean())) / (xc @ xc) * (xs_new[chosen] - xs[:, chosen].mean()))
    rank = math.ceil(level * (n + 1) - 1e-9)
    if rank > n:
        return Interval(predicted, -math.inf, math.inf, int(columns[chosen]), columns)
    x_aug = np.vstack([xs, xs_new[None]])
    spread = max(float(np.ptp(y)), 1e-12)
    half = spread
    for _ in range(MAX_WIDENINGS):  # the prediction itself is always kept (its own score is 0)
        candidates = np.linspace(predicted - half, predicted + half, GRID)
        kept = _accepted(x_aug, y, candidates, rank)
        if not (kept[0] or kept[-1]):
            break
        half *= 2
    else:
        return Interval(predicted, -math.inf if kept[0] else float(candidates[0]),
                        math.inf if kept[-1] else float(candidates[-1]), int(columns[chosen]), columns)
    if not kept.any():  # only with ties at zero among the calibration models' scores
        return Interval(predicted, math.nan, math.nan, int(columns[chosen]), columns)
    first, last = np.flatnonzero(kept)[[0, -1]]
    low = _refine(x_aug, y, candidates[first], candidates[first - 1], rank)
    high = _refine(x_aug, y, candidates[last], candidates[last + 1], rank)
    return Interval(predicted, float(low), float(high), int(columns[chosen]), columns)


def loo_errors(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f64[n]: |y_i - the line chosen and fitted on the other n - 1 models, at x_i| (the choice inside each
    fit: an honest leave-one-model-out error after choosing). ``x`` f[n, M] (usable columns), ``y`` f[n]."""
    xs = scaled(x, x[0])[0]
    n = len(y)
    errors = np.empty(n)
    for i in range(n):
        others = np.arange(n) != i
        column = choose(xs[others], y[others])
        xo, yo = xs[others, column], y[others]
        slope = ((xo - xo.mean()) @ (yo - yo.mean())) / ((xo - xo.mean()) @ (xo - xo.mean()))
        errors[i] = abs(y[i] - yo.mean() - slope * (xs[i, column] - xo.mean()))
    return errors
