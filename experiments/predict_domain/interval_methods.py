"""The interval methods compared for `predict` after choosing its metric (``experiments/predict_domain``).

Each takes the calibration models' candidate metrics ``x`` f64[n, M], their scores ``y`` f64[n], a new
model's metrics ``x_new`` f64[M] and a level, and returns (low, high):

- ``naive``: the metric chosen on all n models (``conformal.choose``), then jackknife+ on that one
  metric, as `predict` did before issue 49 (the choice outside the leave-one-out fits);
- ``fixed``: jackknife+ on a metric fixed in advance (``fixed`` column), the baseline the choice
  is measured against;
- ``jackknife_chosen``: jackknife+ with the choice refitted on each n - 1 set (Barber et al. 2021:
  valid at 1 - 2 alpha for any symmetric algorithm, the choice included);
- ``conformal_chosen``: full conformal with the choice inside each augmented fit
  (``pregen_jax.prediction.conformal``, what `predict` ships).
"""
from __future__ import annotations

import numpy as np

from pregen_jax.prediction import conformal, jackknife


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of y on x by least squares."""
    xc = x - x.mean()
    slope = float(xc @ (y - y.mean()) / (xc @ xc))
    return float(y.mean() - slope * x.mean()), slope


def _jackknife(x: np.ndarray, y: np.ndarray, x_new: np.ndarray, level: float, rechoose: bool,
               column: int | None = None) -> tuple[float, float]:
    n = len(y)
    if column is None and not rechoose:
        column = conformal.choose(x, y)
    centres, residuals = np.empty(n), np.empty(n)
    for i in range(n):
        others = np.arange(n) != i
        c = conformal.choose(x[others], y[others]) if rechoose else column
        a, b = _line(x[others, c], y[others])
        centres[i] = a + b * x_new[c]
        residuals[i] = abs(y[i] - a - b * x[i, c])
    return jackknife.plus_ends(centres, residuals, level)


def naive(x, y, x_new, level, fixed):
    return _jackknife(x, y, x_new, level, rechoose=False)


def fixed_metric(x, y, x_new, level, fixed):
    return _jackknife(x, y, x_new, level, rechoose=False, column=fixed)


def jackknife_chosen(x, y, x_new, level, fixed):
    return _jackknife(x, y, x_new, level, rechoose=True)


def conformal_chosen(x, y, x_new, level, fixed):
    made = conformal.conformal_interval(x, y, x_new, level)
    return made.low, made.high


METHODS = {"naive (chosen on n, then jackknife+)": naive, "fixed metric, jackknife+": fixed_metric,
           "jackknife+, choice in each fit": jackknife_chosen, "full conformal, choice in each fit": conformal_chosen}
