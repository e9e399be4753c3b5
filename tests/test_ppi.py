"""Prediction-powered estimates (experiments/model_selection/ppi.py, issue 29's assisted races): ppi-python on the infinite-population mean, a numpy
oracle for the finite-population difference estimator, and coverage on synthetic splits."""
import math
import sys
from pathlib import Path

import numpy as np
import ppi_py  # the reference (test extra ppi-python): a plain import, so a missing install fails, not skips
import pytest
from scipy import stats

STUDY = Path(__file__).resolve().parents[1] / "experiments" / "model_selection"
sys.path.insert(0, str(STUDY))  # the estimator and its features live in the study since issue 41
try:
    import cheap_features as features
    import ppi
finally:
    sys.path.remove(str(STUDY))



def _labelled(n=80, big_n=500, seed=0, noise=0.5):
    rng = np.random.default_rng(seed)
    truth = rng.normal(1.0, 1.0, n + big_n)
    y = truth[:n] + rng.normal(0, 0.3, n)
    f = truth + rng.normal(0, noise, n + big_n)
    return y, f[:n], f[n:]


@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.4])
@pytest.mark.parametrize("seed", [0, 1])
def test_ppi_mean_equals_ppi_python(lam, seed):
    y, f, f_unlabelled = _labelled(seed=seed)
    ours = ppi.ppi_mean(y, f, f_unlabelled, alpha=0.1, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y, f, f_unlabelled, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, f, f_unlabelled, alpha=0.1, lam=lam)
    assert ours.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert ours.low == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert ours.high == pytest.approx(float(np.squeeze(high)), abs=1e-9)


def test_power_tuned_lambda_is_clipped_and_zero_for_constant_predictions():
    y, f, f_unlabelled = _labelled()
    assert 0 < ppi.power_tuned_lambda(y, f, f_unlabelled) <= 1
    assert ppi.power_tuned_lambda(y, -f, -f_unlabelled) == 0.0
    assert ppi.power_tuned_lambda(y, np.ones_like(f), np.ones_like(f_unlabelled)) == 0.0


def _oracle(y, f_scored, f_all, alpha, lam):
    """The difference estimator written out term by term (Cochran, Sampling Techniques, 7.1)."""
    n, big_n = len(y), len(f_all)
    ybar = sum(y) / n
    fbar_s = sum(f_scored) / n
    fbar = sum(f_all) / big_n
    if lam is None:
        s_yf = sum((a - ybar) * (b - fbar_s) for a, b in zip(y, f_scored)) / (n - 1)
        s_ff = sum((b - fbar_s) ** 2 for b in f_scored) / (n - 1)
        lam = min(max(s_yf / s_ff, 0.0), 1.0)
        ddof = 2
    else:
        ddof = 1
    e = [a - lam * b for a, b in zip(y, f_scored)]
    ebar = sum(e) / n
    s_ee = sum((v - ebar) ** 2 for v in e) / (n - ddof)
    se = math.sqrt((1 - n / big_n) * s_ee / n)
    estimate = ybar + lam * (fbar - fbar_s)
    half = stats.t.ppf(1 - alpha / 2, n - ddof) * se
    return estimate, estimate - half, estimate + half


@pytest.mark.parametrize("lam", [None, 0.0, 0.7])
def test_regression_mean_equals_the_oracle(lam):
    rng = np.random.default_rng(3)
    f_all = rng.normal(0, 1, 300)
    idx = rng.choice(300, 40, replace=False)
    y = 2 + 0.8 * f_all[idx] + rng.normal(0, 0.5, 40)
    ours = ppi.regression_mean(y, f_all[idx], f_all, alpha=0.1, lam=lam)
    estimate, low, high = _oracle(list(y), list(f_all[idx]), list(f_all), 0.1, lam)
    assert (ours.estimate, ours.low, ours.high) == pytest.approx((estimate, low, high), abs=1e-9)


def test_lambda_zero_is_the_plain_mean_with_the_fpc():
    rng = np.random.default_rng(4)
    f_all = rng.normal(0, 1, 100)
    y = rng.normal(0, 1, 100)
    est = ppi.regression_mean(y[:20], f_all[:20], f_all, lam=0.0)
    assert est.estimate == pytest.approx(y[:20].mean(), abs=1e-12)
    assert est.se == pytest.approx(math.sqrt(0.8 * y[:20].var(ddof=1) / 20), abs=1e-12)
    assert est.variance_ratio == pytest.approx(1.0)
    # the whole split scored: the mean is known exactly
    full = ppi.regression_mean(y, f_all, f_all)
    assert full.estimate == pytest.approx(y.mean()) and full.se == 0


def _coverage(population, predictions, n, draws, seed=0, alpha=0.1):
    rng = np.random.default_rng(seed)
    target = population.mean()
    covered, widths, plain = 0, [], []
    for _ in range(draws):
        idx = rng.choice(len(population), n, replace=False)
        est = ppi.regression_mean(population[idx], predictions[idx], predictions, alpha)
        covered += est.low <= target <= est.high
        widths.append(est.high - est.low)
        plain.append(2 * stats.t.ppf(1 - alpha / 2, n - 1) * est.plain_se)
    return covered, np.mean(widths), np.mean(plain)


def _clopper_pearson_contains(k, n, p, level=0.99):
    low, high = stats.binomtest(k, n).proportion_ci(level, method="exact")
    return low <= p <= high


def test_useless_predictor_keeps_coverage_and_the_plain_width():
    rng = np.random.default_rng(5)
    population = rng.gamma(2.0, 0.5, 1000)      # skewed, like per-image CIDEr
    useless = rng.normal(0, 1, 1000)             # independent of the scores
    covered, width, plain = _coverage(population, useless, 60, 1000, seed=6)
    assert _clopper_pearson_contains(covered, 1000, 0.90)
    assert width / plain == pytest.approx(1.0, abs=0.03)


def test_perfect_predictor_shrinks_the_width_toward_zero():
    rng = np.random.default_rng(7)
    population = rng.gamma(2.0, 0.5, 1000)
    rng_draws = np.random.default_rng(8)
    for _ in range(50):  # the estimate is the split's mean itself (up to rounding), the width ~0
        idx = rng_draws.choice(1000, 60, replace=False)
        est = ppi.regression_mean(population[idx], population[idx], population)
        assert est.estimate == pytest.approx(population.mean(), abs=1e-12)
        assert est.high - est.low < 1e-9 * est.plain_se and est.lam == pytest.approx(1.0)
    noisy = population + rng.normal(0, 0.2, 1000)  # a good predictor: narrower, still covers
    covered, width, plain = _coverage(population, noisy, 60, 1000, seed=9)
    assert _clopper_pearson_contains(covered, 1000, 0.90) and width < 0.6 * plain


def test_crossfit_never_uses_an_images_own_scores():
    rng = np.random.default_rng(10)
    x = rng.normal(0, 1, (3, 50, 2))
    y = x[..., 0] + rng.normal(0, 0.1, (3, 50))
    y[:, 30:] = np.nan
    base = ppi.crossfit_predictions(x, y, seed=1)
    fold = ppi.image_folds(np.isfinite(y).any(0), seed=1)
    image = int(np.flatnonzero(fold == 0)[0])
    changed = y.copy()
    changed[:, image] += 100.0  # an image's scores move: its own prediction must not
    again = ppi.crossfit_predictions(x, changed, seed=1)
    assert np.allclose(again[:, image], base[:, image])
    assert ppi.crossfit_r2(base, y) > 0.9


def test_pair_estimates_cover_the_whole_split_difference():
    rng = np.random.default_rng(11)
    images, draws, n = 600, 300, 40
    difficulty = rng.gamma(2.0, 0.5, images)
    quirk = rng.normal(0, 0.3, (2, images))       # per model, per image: what pairs must predict
    scores = np.stack([difficulty + 0.05 + quirk[0], difficulty + quirk[1]])
    features = np.stack([difficulty + quirk[0], difficulty + quirk[1]])[..., None] + rng.normal(0, 0.1, (2, images, 1))
    target = scores[0].mean() - scores[1].mean()
    covered, ratios = 0, []
    for d in range(draws):
        masked = np.full(scores.shape, np.nan)
        idx = rng.choice(images, n, replace=False)
        masked[:, idx] = scores[:, idx]
        (est,), r2 = ppi.pair_estimates(masked, features, [(0, 1)], alpha=0.1, seed=d)
        covered += est.low <= target <= est.high
        ratios.append(est.variance_ratio)
    assert _clopper_pearson_contains(covered, draws, 0.90)
    assert np.median(ratios) > 2


def test_group_estimates_equal_regression_mean_group_by_group():
    rng = np.random.default_rng(12)
    f = rng.normal(0, 1, (5, 120))
    y = 0.5 * f + rng.normal(0, 1, (5, 120))
    y[:, 50:] = np.nan
    y[2, 20:] = np.nan          # fewer images for one group
    f[3] = 1.0                  # constant predictions: the plain mean
    for tuned in (True, False):
        found = ppi.group_estimates(y, f, 0.1, tuned)
        for g in range(5):
            known = np.isfinite(y[g])
            want = ppi.regression_mean(y[g, known], f[g, known], f[g], 0.1, None if tuned else 0.0)
            got = found[g]
            assert (got.estimate, got.low, got.high, got.lam, got.plain_se, got.df) == pytest.approx(
                (want.estimate, want.low, want.high, want.lam, want.plain_se, want.df), abs=1e-9)


def test_an_extreme_feature_on_an_unscored_image_cannot_carry_the_estimate():
    rng = np.random.default_rng(13)
    x = rng.normal(0, 1, (2, 300, 1))
    y = x[..., 0] + rng.normal(0, 0.5, (2, 300))
    x[:, 299, 0] = 1e9               # one image the fit never saw, with a wild feature
    masked = np.full(y.shape, np.nan)
    masked[:, :40] = y[:, :40]
    predictions = ppi.crossfit_predictions(x, masked)
    assert np.abs(predictions).max() < 10
    est = ppi.group_estimates(masked, predictions)[0]
    assert abs(est.estimate - y[0].mean()) < 5 * est.se + 0.5


def test_per_image_features_equal_a_sweep_of_each_image_alone():
    from pregen_jax import tiers
    from pregen_jax.refprobs import RefProbs
    rng = np.random.default_rng(14)
    images, refs, positions = 6, 3, 7
    probs = rng.uniform(0.05, 1, (images, refs, positions)).astype(np.float32)
    ranks = rng.integers(0, 4, (images, refs, positions)).astype(np.int32)
    mask = np.arange(positions)[None, None] < rng.integers(2, positions + 1, (images, refs))[..., None]
    ref_probs = RefProbs(probs, ranks, mask)
    values, names = features.image_tier_space(ref_probs)
    assert values.shape == (images, 84) and all(n.startswith("mean_") for n in names)
    columns = [tiers.DEFAULT_SPACE.names.index(n) for n in names]
    for i in (0, 5):
        alone = tiers.sweep(RefProbs(probs[i:i + 1], ranks[i:i + 1], mask[i:i + 1]))[0, columns]
        np.testing.assert_allclose(values[i], alone, rtol=1e-5)
    log_ppl = features.image_log_perplexity(ref_probs)
    want = [-np.log(probs[i][mask[i]].astype(np.float64)).mean() for i in range(images)]
    np.testing.assert_allclose(log_ppl, want, rtol=1e-6)
    both = features.assist_features("both", log_ppl, values, names)
    assert both.shape == (images, 6) and np.isfinite(both).all()
    assert features.assist_features("none") is None
    with pytest.raises(ValueError, match="choose from"):
        features.assist_features("tiers")
