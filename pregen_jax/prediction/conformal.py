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
    #{i <= n : R_i(y) < R_{n+1}(y)} <= ceil(level (n + 1)) - 1.

Every model is scored by the same symmetric rule, so for a new model exchangeable with the
calibration models the set covers its score with probability at least ``level`` (at most
``level + 1 / (n + 1)`` without ties), whatever the relation and however many candidate metrics:
valid after choosing. The new model's own score is ``|y - the prediction|``, so the prediction is
always in the set. Scoring by the plain residual of the fit on all ``n + 1`` is valid too, but
there a candidate ``y`` far off lets the choice fall on whichever metric puts the new model far
out, the line bends through it and the set gains islands (hull 2.7 against 1.5 wide in the
simulation). The set is bounded once ``ceil(level (n + 1)) <= n`` (``min_models``: 9 for 0.9).
With the metric re-chosen for each ``y`` the set has no closed form, but it is piecewise simple:
each score is linear in ``y`` between the points where some fit's chosen metric changes, and
``conformal_set`` finds those points and the set exactly (an interval, a union of intervals, or
unbounded on a side, printed as such; no grid, no search range). Ties count for the new model
(only scores strictly below its own count against it), as the guarantee needs. Which columns may
be chosen is decided on all ``n + 1`` models alike (finite for each, not constant over them), so
the rule stays symmetric in the models.

Arrays: ``x`` f64[n, M] the calibration models' candidate metrics, ``y`` f64[n] their post-gen
scores, ``x_new`` f64[M]. Columns are scaled by the calibration models' range first (R^2 and the
lines' predictions do not change; ``sum_sum_pplx`` ~ 1e300 would overflow the products).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import conformal_set


@dataclasses.dataclass(frozen=True)
class Interval:
    """A prediction and its conformal set.

    Attributes:
      predicted: the line of the metric chosen on the n models, at the new model.
      low, high: the set's outermost ends (infinite on an unbounded side).
      pieces: the set as sorted disjoint closed intervals, ``((low, high), ...)``: one unless it has islands.
      reason: why the set is unbounded ("" where it is bounded).
      chosen: the chosen metric's column; ``columns``: the candidate columns usable for all n + 1 models.
    """

    predicted: float
    low: float
    high: float
    chosen: int
    columns: np.ndarray
    pieces: tuple[tuple[float, float], ...] = ()
    reason: str = ""

    @property
    def bounded(self) -> bool:
        return bool(np.isfinite([self.low, self.high]).all())

    def covers(self, value: float) -> bool:
        """``value`` in one of the pieces."""
        return any(low <= value <= high for low, high in self.pieces)


def min_models(level: float) -> int:
    """The fewest calibration models whose ``level`` set can be bounded: ceil(level (n + 1)) <= n."""
    if not 0 < level < 1:
        raise ValueError(f"--level {level}: must lie strictly between 0 and 1")
    n = 2
    while _rank(level, n) > n:
        n += 1
    return n


def max_level(models: int) -> float:
    """The largest ``level`` whose set can be bounded with ``models`` calibration models: n / (n + 1)."""
    return models / (models + 1)


def _rank(level: float, n: int) -> int:
    """ceil(level (n + 1)): the new model is kept while fewer than this many calibration models score below it."""
    return math.ceil(level * (n + 1) - 1e-9)


def usable_columns(x: np.ndarray, x_new: np.ndarray | None = None) -> np.ndarray:
    """bool[M]: columns finite for every model and not constant over them, the new model counted alike
    when given (the rule is then the same for each of the n + 1, as exchangeability needs)."""
    every = x if x_new is None else np.vstack([x, x_new[None]])
    keep = np.isfinite(every).all(0)
    with np.errstate(invalid="ignore"):
        keep &= np.nanmax(every, 0) > np.nanmin(every, 0)
    return keep


def scaled(x: np.ndarray, x_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both centred on the calibration models' mean and divided by their range, column by column (a column
    constant over them, usable only through the new model, by its distance from them)."""
    centre = x.mean(0)
    span = x.max(0) - x.min(0)
    span = np.where(span > 0, span, np.maximum(np.abs(x_new - centre), 1.0))
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
        return np.where(sxx > conformal_set.TINY, sxy ** 2 / sxx, -np.inf)


def _scores(x_aug: np.ndarray, y: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """f[n+1, G]: each model's leave-one-out residual in the augmented fit, for each candidate score of the
    new model: |y_i - the line chosen and fitted on the other n models, at x_i|. ``x_aug`` f[n+1, M]
    (the new model last), ``y`` f[n], ``candidates`` f[G]. The choice is made without the model
    scored, so a far-out new model cannot pick the one metric that bends the line through it. (The
    set's rule evaluated candidate by candidate, by other arithmetic than ``conformal_set``'s: its check.)"""
    n1, size = x_aug.shape[0], len(candidates)
    scores = np.vstack([np.broadcast_to(y[:, None], (n1 - 1, size)), candidates[None]])   # [n+1, G]
    m, columns = n1 - 1, np.arange(size)
    out = np.empty((n1, size))
    for i in range(n1):  # n + 1 small passes: each [M, G], never [n+1, M, G] at once
        others = np.arange(n1) != i
        xc = x_aug[others] - x_aug[others].mean(0)                                     # [n, M]
        x_i = x_aug[i] - x_aug[others].mean(0)                                         # [M]
        cxx = (xc ** 2).sum(0)
        cxy = xc.T @ scores[others]                                                    # [M, G]
        best = np.argmax(_fit_quality(cxy, cxx), 0)                                    # [G]: the choice without i
        out[i] = np.abs(scores[i] - scores[others].sum(0) / m - cxy[best, columns] / cxx[best] * x_i[best])
    return out


def accepted(x: np.ndarray, y: np.ndarray, x_new: np.ndarray, level: float, candidates: np.ndarray) -> np.ndarray:
    """bool[G]: the candidate scores f[G] the conformal set keeps, by its definition, one by one (for the
    checks of ``conformal_interval``; same columns and scaling)."""
    columns = usable_columns(x, x_new)
    xs, xs_new = scaled(x[:, columns], x_new[columns])
    scores = _scores(np.vstack([xs, xs_new[None]]), y, np.asarray(candidates, np.float64))
    return (scores[:-1] < scores[-1]).sum(0) <= _rank(level, len(y)) - 1


def _unbounded_reason(side: str, edge: float, below: int, n: int) -> str:
    return (f"unbounded {side}: every score {'from' if side == 'above' else 'up to'} {edge:.4g} {'up ' if side == 'above' else ''}is kept (there "
            f"{n - below} of the {n} calibration models' leave-one-out residuals, fitted with the new model, grow at "
            "least as fast as its own: those lines follow the new model)")


def conformal_interval(x: np.ndarray, y: np.ndarray, x_new: np.ndarray, level: float) -> Interval:
    """The full conformal set at ``level`` with the metric re-chosen in every fit, exactly (module docstring).
    ``x`` f[n, M], ``y`` f[n], ``x_new`` f[M]; columns not usable (``usable_columns`` over all n + 1) are
    left out of the choice. ValueError where none is usable."""
    columns = np.flatnonzero(usable_columns(x, x_new))
    if not len(columns):
        raise ValueError("no candidate pre-gen metric is finite for every model and varies over them")
    if not usable_columns(x)[columns].any():  # the new model's own fit (on the n) would have no line
        raise ValueError("no candidate pre-gen metric varies over the calibration models (only the new model "
                         "moves one): no line to predict from")
    xs, xs_new = scaled(x[:, columns], x_new[columns])
    n = len(y)
    chosen = choose(xs, y)
    xc = xs[:, chosen] - xs[:, chosen].mean()
    predicted = float(y.mean() + (xc @ (y - y.mean())) / (xc @ xc) * (xs_new[chosen] - xs[:, chosen].mean()))
    rank = _rank(level, n)
    if rank > n:
        return Interval(predicted, -math.inf, math.inf, int(columns[chosen]), columns, ((-math.inf, math.inf),),
                        f"unbounded: {n} calibration models allow at most level {max_level(n):.3f} "
                        f"(--level {level:g} needs {min_models(level)})")
    forms = conformal_set.forms(np.vstack([xs, xs_new[None]]), y)
    pieces, outer = conformal_set.kept_pieces(forms, predicted, rank, max(float(np.ptp(y)), 1e-12))
    reasons = []
    if pieces[0] == (-math.inf, math.inf):
        reasons.append(f"unbounded: every score is kept (nowhere do more than {rank - 1} of the {n} calibration "
                       "models' leave-one-out residuals, fitted with the new model, fall below its own)")
    elif pieces[0][0] == -math.inf:
        reasons.append(_unbounded_reason("below", pieces[0][1], outer[0], n))
    if pieces[-1][1] == math.inf and pieces[-1][0] > -math.inf:
        reasons.append(_unbounded_reason("above", pieces[-1][0], outer[1], n))
    return Interval(predicted, pieces[0][0], pieces[-1][1], int(columns[chosen]), columns, tuple(pieces),
                    "; ".join(reasons))


def loo_errors(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f64[n]: |y_i - the line chosen and fitted on the other n - 1 models, at x_i| (the choice inside each
    fit: an honest leave-one-model-out error after choosing). ``x`` f[n, M] (usable columns), ``y`` f[n]."""
    xs = scaled(x, x[0])[0]  # a column constant over these models cannot be chosen (-inf R^2)
    n = len(y)
    errors = np.empty(n)
    for i in range(n):
        others = np.arange(n) != i
        column = choose(xs[others], y[others])
        xo, yo = xs[others, column], y[others]
        slope = ((xo - xo.mean()) @ (yo - yo.mean())) / ((xo - xo.mean()) @ (xo - xo.mean()))
        errors[i] = abs(y[i] - yo.mean() - slope * (xs[i, column] - xo.mean()))
    return errors
