"""Jackknife+ prediction intervals for a calibration line, and where a new value lies against the
calibration models' range: what ``pregen-search predict`` gave before issue 49, kept as the
comparison its full conformal intervals (``conformal``) were chosen against
(``experiments/predict_domain``: jackknife+ with the metric re-chosen in each leave-one-out fit
covered 0.95-0.96 at 0.90, 1.15-1.4x as wide as full conformal, and is unbounded below 19
models at 0.90).

The point prediction is the least-squares line through the search's models (``ranking.calibration``).
Its interval is the jackknife+ of Barber, Candes, Ramdas and Tibshirani (2021, "Predictive
inference with the jackknife+", Ann. Statist. 49(1)): with ``mu_{-i}`` the line fitted without
model ``i`` and ``R_i = |y_i - mu_{-i}(x_i)|`` its leave-one-out residual, the interval at ``x`` is

    [ the floor(alpha (n + 1))-th smallest of mu_{-i}(x) - R_i ,
      the ceil((1 - alpha)(n + 1))-th smallest of mu_{-i}(x) + R_i ],

which covers a new model's post-gen score with probability at least ``1 - 2 alpha`` whenever the
new model and the ``n`` calibration models are exchangeable, whatever the relation between the
two metrics (no normal errors, no straight line assumed), and whatever symmetric algorithm fits
``mu_{-i}`` (``plus_ends``: a metric chosen inside each fit too). ``level`` here is that
guarantee, ``1 - 2 alpha``: a ``level`` interval needs ``n >= 2 / (1 - level) - 1`` models (19
for 90%); with fewer, the interval is unbounded (``jackknife_max_level`` says what ``n`` allows).
``place`` says on which side of the calibration models' range a value lies, and how far.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ..ranking.calibration import calibrate


@dataclasses.dataclass(frozen=True)
class JackknifePlus:
    """The leave-one-model-out lines of a calibration: ``slopes``, ``intercepts`` f64[n] (line i fitted
    without model i), ``residuals`` f64[n] (|y_i - that line at x_i|), the full line, and the
    range of the pre-gen values ``x_min``, ``x_max``."""

    pregen: str
    postgen: str
    slope: float
    intercept: float
    slopes: np.ndarray
    intercepts: np.ndarray
    residuals: np.ndarray
    x_min: float
    x_max: float

    @property
    def models(self) -> int:
        return len(self.residuals)


def leave_one_out_lines(model_rows: pd.DataFrame, pregen: str, postgen: str) -> JackknifePlus:
    """The full line (``ranking.calibration.calibrate``) and its ``n`` leave-one-out lines (ValueError
    where the others of some model share one pre-gen value: no line through them)."""
    full = calibrate(model_rows, pregen, postgen)
    x = model_rows[pregen].to_numpy(np.float64)
    y = model_rows[postgen].to_numpy(np.float64)
    slopes, intercepts = np.empty(len(x)), np.empty(len(x))
    for i in range(len(x)):
        others = np.arange(len(x)) != i
        xo, yo = x[others], y[others]
        spread = ((xo - xo.mean()) ** 2).sum()
        if spread == 0:
            raise ValueError(f"calibrating {postgen} on {pregen}: without one model the others share one pre-gen value")
        slopes[i] = ((xo - xo.mean()) * (yo - yo.mean())).sum() / spread
        intercepts[i] = yo.mean() - slopes[i] * xo.mean()
    residuals = np.abs(y - (intercepts + slopes * x))
    return JackknifePlus(pregen, postgen, full.slope, full.intercept, slopes, intercepts, residuals,
                         float(x.min()), float(x.max()))


def jackknife_max_level(models: int) -> float:
    """The largest ``level`` (= 1 - 2 alpha) whose jackknife+ interval is bounded with ``models`` models."""
    return 1 - 2 / (models + 1)


def jackknife_plus_interval(jk: JackknifePlus, value: float, level: float) -> tuple[float, float]:
    """The jackknife+ interval at pre-gen ``value`` covering at least ``level`` (= 1 - 2 alpha); an end is
    infinite where ``n`` models are too few for ``level`` (``jackknife_max_level``)."""
    return plus_ends(jk.intercepts + jk.slopes * value, jk.residuals, level)


def plus_ends(centres: np.ndarray, residuals: np.ndarray, level: float) -> tuple[float, float]:
    """Barber et al.'s ends from the leave-one-out fits' values at the new point ``centres`` f[n] and their
    residuals ``residuals`` f[n] (any leave-one-out algorithm: the metric may be chosen inside each fit)."""
    if not 0 < level < 1:
        raise ValueError(f"--level {level}: must lie strictly between 0 and 1")
    alpha = (1 - level) / 2
    n = len(residuals)
    low_rank = math.floor(alpha * (n + 1) + 1e-9)           # 1-based ranks
    high_rank = math.ceil((1 - alpha) * (n + 1) - 1e-9)
    low = float(np.sort(centres - residuals)[low_rank - 1]) if low_rank >= 1 else -math.inf
    high = float(np.sort(centres + residuals)[high_rank - 1]) if high_rank <= n else math.inf
    return low, high


def line_value(jk: JackknifePlus, value: float) -> float:
    """The full line at ``value``."""
    return jk.intercept + jk.slope * value


def jackknife_place(jk: JackknifePlus, value: float) -> tuple[str, float]:
    """("inside", 0.0), or ("below" / "above", how far outside the calibration models' pre-gen range, in
    the pre-gen metric's units). Values within 1e-6 of the range's scale of an end are inside (the
    float32 sweep against a table's 10 printed digits: the search's own models are inside)."""
    tolerance = 1e-6 * max(abs(jk.x_min), abs(jk.x_max), jk.x_max - jk.x_min)
    if value < jk.x_min - tolerance:
        return "below", jk.x_min - value
    if value > jk.x_max + tolerance:
        return "above", value - jk.x_max
    return "inside", 0.0
