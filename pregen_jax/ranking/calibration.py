"""Predict a post-gen score from a pre-gen metric, with an interval, after a finished search.

A search ends with a table of models scored both ways. Its whole-test-set rows (one per model,
``num_strata == 1``) calibrate a straight line postgen = intercept + slope * pregen by ordinary
least squares; a new model's pre-gen value then gives a predicted post-gen score with the
usual OLS prediction interval,

    predicted +- t_{(1 + level) / 2, n - 2} * s * sqrt(1 + 1/n + (x - mean x)^2 / Sxx),

s^2 = residual sum of squares / (n - 2). The leave-one-model-out absolute errors say how far
off such predictions were for the search's own models. A value outside the calibration's
pre-gen range is flagged: the interval assumes the line holds there too.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import stats

from .decisions import NUM_STRATA


@dataclasses.dataclass(frozen=True)
class Calibration:
    """postgen ~ intercept + slope * pregen over ``models`` model rows."""

    pregen: str
    postgen: str
    slope: float
    intercept: float
    models: int
    residual_std: float  # s: sqrt(residual sum of squares / (models - 2))
    pregen_mean: float
    pregen_sxx: float  # sum of squared deviations of the pre-gen values
    pregen_min: float
    pregen_max: float
    r_squared: float


@dataclasses.dataclass(frozen=True)
class Prediction:
    """A predicted post-gen score and its prediction interval (arrays if the value was one)."""

    predicted: float | np.ndarray
    low: float | np.ndarray
    high: float | np.ndarray
    level: float
    outside_range: bool | np.ndarray  # the pre-gen value lies outside the calibration's range


def _xy(model_rows: pd.DataFrame, pregen: str, postgen: str) -> tuple[np.ndarray, np.ndarray]:
    for column in (pregen, postgen):
        if column not in model_rows.columns:
            raise ValueError(f"calibration table has no column {column!r}")
    if NUM_STRATA in model_rows.columns and (model_rows[NUM_STRATA] != 1).any():
        raise ValueError(f"calibrate on the model rows only ({NUM_STRATA} == 1, the whole test set)")
    x = model_rows[pregen].to_numpy(np.float64)
    y = model_rows[postgen].to_numpy(np.float64)
    if len(x) < 3:
        raise ValueError(f"calibrating {postgen} on {pregen} needs at least 3 models, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError(f"calibrating {postgen} on {pregen}: NaN or inf among the models' values")
    if np.ptp(x) == 0:
        raise ValueError(f"calibrating {postgen} on {pregen}: the pre-gen metric is the same for every model")
    return x, y


def calibrate(model_rows: pd.DataFrame, pregen: str, postgen: str) -> Calibration:
    """Fit postgen = intercept + slope * pregen by OLS over the model rows (one per model)."""
    x, y = _xy(model_rows, pregen, postgen)
    fit = stats.linregress(x, y)
    residuals = y - (fit.intercept + fit.slope * x)
    n = len(x)
    return Calibration(
        pregen=pregen, postgen=postgen, slope=float(fit.slope), intercept=float(fit.intercept), models=n,
        residual_std=float(np.sqrt((residuals ** 2).sum() / (n - 2))), pregen_mean=float(x.mean()),
        pregen_sxx=float(((x - x.mean()) ** 2).sum()), pregen_min=float(x.min()), pregen_max=float(x.max()),
        r_squared=float(fit.rvalue ** 2))


def predict(calibration: Calibration, value, level: float = 0.9) -> Prediction:
    """The predicted post-gen score for pre-gen ``value`` (scalar or array) with a ``level``
    (default 90%) OLS prediction interval."""
    if not 0 < level < 1:
        raise ValueError(f"prediction interval level must be in (0, 1), got {level}")
    c = calibration
    x = np.asarray(value, np.float64)
    predicted = c.intercept + c.slope * x
    t = stats.t.ppf((1 + level) / 2, c.models - 2)
    half = t * c.residual_std * np.sqrt(1 + 1 / c.models + (x - c.pregen_mean) ** 2 / c.pregen_sxx)
    # A margin for the float32 sweep against a table's 10 printed digits: the search's own models are inside.
    margin = 1e-6 * max(abs(c.pregen_min), abs(c.pregen_max), c.pregen_max - c.pregen_min)
    outside = (x < c.pregen_min - margin) | (x > c.pregen_max + margin)
    if x.ndim == 0:
        return Prediction(float(predicted), float(predicted - half), float(predicted + half), level, bool(outside))
    return Prediction(predicted, predicted - half, predicted + half, level, outside)


def loo_abs_errors(model_rows: pd.DataFrame, pregen: str, postgen: str) -> np.ndarray:
    """f[models]: |error| predicting each model's post-gen score from a line fitted to the others.

    Exact OLS identity, no refitting: the leave-one-out residual is e_i / (1 - h_i), with
    leverage h_i = 1/n + (x_i - mean x)^2 / Sxx. Infinite where the others all share one
    pre-gen value (no line through them).
    """
    x, y = _xy(model_rows, pregen, postgen)
    c = calibrate(model_rows, pregen, postgen)
    residuals = y - (c.intercept + c.slope * x)
    leverage = 1 / c.models + (x - c.pregen_mean) ** 2 / c.pregen_sxx
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(residuals / (1 - leverage))


def loo_table(model_rows: pd.DataFrame, choices: dict[str, str]) -> pd.DataFrame:
    """Leave-one-model-out absolute errors per post-gen metric (for the search report).

    Returns DataFrame ``postgen``, ``pregen``, ``calibration_models``, ``calibration_R^2``,
    ``loo_mean_abs_error``, ``loo_max_abs_error``.
    """
    rows = []
    for post, pre in choices.items():
        c = calibrate(model_rows, pre, post)
        errors = loo_abs_errors(model_rows, pre, post)
        rows.append({"postgen": post, "pregen": pre, "calibration_models": c.models, "calibration_R^2": c.r_squared,
                     "loo_mean_abs_error": float(errors.mean()), "loo_max_abs_error": float(errors.max())})
    return pd.DataFrame(rows)
