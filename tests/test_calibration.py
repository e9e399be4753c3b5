"""Calibration of a post-gen score on a pre-gen metric: OLS fit, prediction interval, LOO error."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pregen_jax.ranking import calibration

X = np.array([0.30, 0.35, 0.40, 0.42, 0.50, 0.55])
Y = np.array([0.80, 0.86, 0.97, 0.95, 1.10, 1.16])


def models():
    return pd.DataFrame({"num_strata": 1, "mean_max_normcount_prefix0": X, "CIDEr": Y})


def test_fit_and_interval_by_hand():
    c = calibration.calibrate(models(), "mean_max_normcount_prefix0", "CIDEr")
    # Hand computation: slope = Sxy / Sxx, s^2 = SSE / (n - 2).
    n, xm, ym = len(X), X.mean(), Y.mean()
    sxx = ((X - xm) ** 2).sum()
    slope = ((X - xm) * (Y - ym)).sum() / sxx
    intercept = ym - slope * xm
    s = np.sqrt(((Y - intercept - slope * X) ** 2).sum() / (n - 2))
    assert (c.slope, c.intercept, c.residual_std, c.models) == (pytest.approx(slope), pytest.approx(intercept),
                                                                 pytest.approx(s), 6)
    assert c.r_squared == pytest.approx(stats.pearsonr(X, Y).statistic ** 2)
    p = calibration.predict(c, 0.45)
    half = stats.t.ppf(0.95, n - 2) * s * np.sqrt(1 + 1 / n + (0.45 - xm) ** 2 / sxx)
    assert p.predicted == pytest.approx(intercept + slope * 0.45)
    assert (p.low, p.high) == (pytest.approx(p.predicted - half), pytest.approx(p.predicted + half))
    assert not p.outside_range and p.level == 0.9
    wider = calibration.predict(c, 0.45, level=0.99)
    assert wider.high - wider.low > p.high - p.low


def test_outside_range_is_flagged_and_interval_widens():
    c = calibration.calibrate(models(), "mean_max_normcount_prefix0", "CIDEr")
    p = calibration.predict(c, np.array([0.30, 0.55, 0.29, 0.80]))
    assert list(p.outside_range) == [False, False, True, True]
    assert (p.high - p.low)[3] > (p.high - p.low)[1]


def test_loo_errors_equal_refitting_without_each_model():
    errors = calibration.loo_abs_errors(models(), "mean_max_normcount_prefix0", "CIDEr")
    for i in range(len(X)):
        keep = np.arange(len(X)) != i
        fit = stats.linregress(X[keep], Y[keep])
        assert errors[i] == pytest.approx(abs(Y[i] - fit.intercept - fit.slope * X[i]))
    loo = calibration.loo_table(models(), {"CIDEr": "mean_max_normcount_prefix0"})
    assert loo["loo_mean_abs_error"][0] == pytest.approx(errors.mean())
    assert loo["loo_max_abs_error"][0] == pytest.approx(errors.max())


@pytest.mark.parametrize("change, message", [
    (lambda t: t.head(2), "at least 3 models"),
    (lambda t: t.assign(num_strata=[1, 1, 1, 2, 2, 2]), "model rows only"),
    (lambda t: t.assign(CIDEr=np.nan), "NaN or inf"),
    (lambda t: t.assign(mean_max_normcount_prefix0=0.4), "same for every model"),
    (lambda t: t.drop(columns="CIDEr"), "no column 'CIDEr'"),
])
def test_bad_calibration_tables(change, message):
    with pytest.raises(ValueError, match=message):
        calibration.calibrate(change(models()), "mean_max_normcount_prefix0", "CIDEr")
