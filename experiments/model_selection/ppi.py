"""Prediction-powered estimates of a whole split's mean score from a few scored images.

A teacher-forced pass gives cheap features for every image of the split; a post-gen score is
known only on the images scored so far (a simple random sample, without replacement, of the
split). The split is a finite population of N images, and the target is its mean score (the
whole-split CIDEr of a model, or the difference between two models' whole-split CIDEr).

- ``ppi_mean``: PPI++ for an infinite population (Angelopoulos, Duchi and Zrnic 2023: the
  rectified mean with the power-tuned lambda, a z interval). It equals ``ppi_py``'s
  ``ppi_mean_pointestimate`` and ``ppi_mean_ci``; kept as the reference case.
- ``regression_mean``: the split's own estimator, the difference (GREG) estimator of survey
  sampling with the finite-population correction:
      mu = mean(f over all N) + mean(y - lam f over the n scored)      (lam f's mean: lam mean(f))
      se^2 = (1 - n/N) var(y - lam f) / n
  The predictions f are known on every image, so their whole-split mean carries no variance.
  ``lam`` is power-tuned as in PPI++ (the variance-minimising coefficient, clipped to [0, 1]),
  so a useless predictor gives lam near 0 and the plain mean with its FPC interval.
- ``crossfit_predictions``: a ridge predictor of the score from the features, pooled over
  candidates (or pairs), cross-fitted by image (Zrnic and Candes 2024): an image's prediction
  never comes from a fit that saw that image's score of any candidate (candidates share their
  image noise). Unscored images get the mean of the folds' predictions.

Shapes: G groups (candidates, or pairs of candidates), I images, C features.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from scipy import stats

FOLDS = 2
PENALTY = 1.0  # ridge penalty on standardised features (training rows count 1 each)


@dataclasses.dataclass(frozen=True)
class MeanEstimate:
    """An estimate of a mean and its interval.

    estimate, se: the estimate and its standard error; low/high: the interval asked for.
    lam: the predictions' weight (0: the plain mean). scored: n; population: N (0: infinite).
    plain_se: the plain mean's standard error on the same images (FPC alike).
    df: degrees of freedom of the t interval (inf: z).
    """

    estimate: float
    se: float
    low: float
    high: float
    lam: float
    scored: int
    population: int
    plain_se: float
    df: float

    @property
    def variance_ratio(self) -> float:
        """The plain mean's variance over this one's (> 1: the predictions helped; NaN when both
        are 0, as when the whole split is scored)."""
        if self.se > 0:
            return float(self.plain_se ** 2 / self.se ** 2)
        return math.nan if self.plain_se == 0 else math.inf

    def upper(self, alpha: float) -> float:
        """One-sided upper bound at level 1 - alpha."""
        return self.estimate + _quantile(1 - alpha, self.df) * self.se


@functools.lru_cache(maxsize=4096)
def _quantile(p: float, df: float) -> float:
    return float(stats.norm.ppf(p) if math.isinf(df) else stats.t.ppf(p, df))


def _vector(values, name: str) -> np.ndarray:
    values = np.asarray(values, np.float64)
    if values.ndim != 1:
        raise ValueError(f"{name}: expected f[n], got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name}: not every value is finite")
    return values


def power_tuned_lambda(y, f_scored, f_unscored) -> float:
    """PPI++'s lambda for a mean (``ppi_py``'s ``_calc_lam_glm`` with an identity Hessian):
    cov(y, f) / ((1 + n/N) var(f)), biased covariance over the n scored, unbiased variance of
    all predictions, clipped to [0, 1]. ``y, f_scored: f[n]``; ``f_unscored: f[N]``."""
    y, f_scored, f_unscored = _vector(y, "y"), _vector(f_scored, "f_scored"), _vector(f_unscored, "f_unscored")
    n, big_n = len(y), len(f_unscored)
    cov = np.mean((y - y.mean()) * (f_scored - f_scored.mean()))
    var = np.var(np.concatenate([f_scored, f_unscored]), ddof=1)
    if not var > 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(y, f_scored, f_unscored, alpha: float = 0.1, lam: float | None = None) -> MeanEstimate:
    """PPI++ mean of an infinite population from n labelled points and N unlabelled ones.

    y: f[n] scores; f_scored: f[n] their predictions; f_unscored: f[N] predictions of the
    unlabelled points. lam: None = power-tuned (``power_tuned_lambda``), 1 = PPI, 0 = classical.
    Returns a two-sided z interval at level 1 - alpha (``ppi_py.ppi_mean_ci``).
    """
    y, f_scored, f_unscored = _vector(y, "y"), _vector(f_scored, "f_scored"), _vector(f_unscored, "f_unscored")
    if len(y) != len(f_scored):
        raise ValueError(f"{len(y)} scores but {len(f_scored)} predictions of them")
    lam = power_tuned_lambda(y, f_scored, f_unscored) if lam is None else float(lam)
    n, big_n = len(y), len(f_unscored)
    estimate = float(np.mean(lam * f_unscored) + np.mean(y - lam * f_scored))
    se = math.sqrt(np.var(lam * f_unscored) / big_n + np.var(y - lam * f_scored) / n)
    half = _quantile(1 - alpha / 2, math.inf) * se
    return MeanEstimate(estimate, se, estimate - half, estimate + half, lam, n, 0,
                        float(np.std(y) / math.sqrt(n)), math.inf)


def finite_lambda(y, f_scored, f_all) -> float:
    """The regression estimator's weight (Cochran 7.1, b = s_yf / s_f^2 over the scored images),
    clipped to [0, 1] as PPI++ clips its power tuning; 0 when the scored predictions are constant
    or fewer than 3 images are scored. ``f_all`` is unused: kept so every tuner reads the same."""
    del f_all
    var = np.var(f_scored, ddof=1) if len(y) > 1 else 0.0
    if len(y) < 3 or not var > 1e-300:
        return 0.0
    cov = np.cov(y, f_scored, ddof=1)[0, 1]
    return float(np.clip(cov / var, 0.0, 1.0))


def regression_mean(y, f_scored, f_all, alpha: float = 0.1, lam: float | None = None) -> MeanEstimate:
    """The whole split's mean from a simple random sample of it without replacement.

    y: f[n] scores of the scored images; f_scored: f[n] their predictions; f_all: f[N]
    predictions of every image of the split (the scored ones included, with the same values).
    lam: None = power-tuned (``finite_lambda``: one more degree of freedom spent, unless the
    scored predictions are constant: then lam = 0 and this is the plain mean), 0 = the plain mean. The interval is two-sided at level 1 - alpha, t with n - 1 (fixed lam) or n - 2
    (tuned lam) degrees of freedom, and the finite-population correction 1 - n/N.
    """
    y, f_scored, f_all = _vector(y, "y"), _vector(f_scored, "f_scored"), _vector(f_all, "f_all")
    n, big_n = len(y), len(f_all)
    if len(f_scored) != n:
        raise ValueError(f"{n} scores but {len(f_scored)} predictions of them")
    if not 2 <= n <= big_n:
        raise ValueError(f"{n} scored images of {big_n}: need 2 <= n <= N")
    tuned = lam is None and n > 2 and np.var(f_scored) > 1e-300  # a slope is fitted: one more df spent
    lam = (finite_lambda(y, f_scored, f_all) if lam is None else float(lam))
    ddof = 2 if tuned else 1
    fpc = 1 - n / big_n
    residual = y - lam * f_scored
    estimate = float(lam * f_all.mean() + residual.mean())
    se = math.sqrt(fpc * np.var(residual, ddof=ddof) / n)
    plain_se = math.sqrt(fpc * np.var(y, ddof=1) / n)
    df = float(n - ddof)
    half = _quantile(1 - alpha / 2, df) * se
    return MeanEstimate(estimate, se, estimate - half, estimate + half, lam, n, big_n, plain_se, df)


def image_folds(scored: np.ndarray, folds: int = FOLDS, seed: int = 0) -> np.ndarray:
    """A fold per image: i64[I], -1 for unscored images, 0..folds-1 (balanced, random) for the
    scored ones. ``scored: bool[I]``."""
    scored = np.asarray(scored, bool)
    fold = np.full(scored.shape, -1, np.int64)
    where = np.flatnonzero(scored)
    fold[where[np.random.default_rng(seed).permutation(len(where))]] = np.arange(len(where)) % folds
    return fold


def ridge_fit(x: np.ndarray, y: np.ndarray, penalty: float = PENALTY) -> tuple[np.ndarray, ...]:
    """Ridge regression on standardised features: (centre f[C], scale f[C], coefficients f[C+1]
    with the intercept last, the training rows' lowest and highest standardised features f[C]).
    ``x: f[n, C]``, ``y: f[n]``; the intercept is not penalised."""
    centre, scale = x.mean(0), x.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (x - centre) / scale
    gram = z.T @ z + penalty * np.eye(x.shape[1])
    beta = np.linalg.solve(gram, z.T @ (y - y.mean()))
    return centre, scale, np.append(beta, y.mean()), z.min(0), z.max(0)


def ridge_predict(model: tuple[np.ndarray, ...], x: np.ndarray) -> np.ndarray:
    """Predictions of a ``ridge_fit`` model for ``x: f[..., C]``, each feature clipped to the range
    the fit saw: a few scored images must not make a linear fit extrapolate to wild values on
    images with extreme features (their whole-split mean would carry them)."""
    centre, scale, coef, low, high = model
    return np.clip((x - centre) / scale, low, high) @ coef[:-1] + coef[-1]


def crossfit_predictions(x, y, folds: int = FOLDS, seed: int = 0, penalty: float = PENALTY) -> np.ndarray:
    """Cross-fitted predictions of every group's score on every image: f[G, I].

    x: f[G, I, C] features (known everywhere); y: f[G, I] scores, NaN where not scored. The
    scored images (those with any score) are split into ``folds`` by image; the fit for fold k
    pools every group's scores on the other folds' images, and predicts fold k's images. An
    unscored image gets the mean of the folds' predictions. Too few rows to fit (fewer than C + 3)
    or constant features give zeros (no help: ``regression_mean`` then is the plain mean).
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if x.ndim != 3 or x.shape[:2] != y.shape:
        raise ValueError(f"features {x.shape} and scores {y.shape}: expected f[G, I, C] and f[G, I]")
    known = np.isfinite(y)
    fold = image_folds(known.any(0), folds, seed)
    out = np.zeros(y.shape)
    unscored = fold < 0
    for k in range(folds):
        train = known & (fold >= 0)[None] & (fold != k)[None]
        if train.sum() < x.shape[2] + 3 or not (x[train].std(0) > 0).any():
            prediction = np.zeros(y.shape)  # nothing to fit: a constant, so lam = 0 (the plain mean)
        else:
            prediction = ridge_predict(ridge_fit(x[train], y[train], penalty), x)
        out[:, fold == k] = prediction[:, fold == k]
        out[:, unscored] += prediction[:, unscored] / folds
    return out


def crossfit_r2(predictions: np.ndarray, y: np.ndarray) -> float:
    """Out-of-fold R^2 of ``predictions`` over the scored entries of ``y`` (NaN where unscored),
    both f[G, I]: 1 - sum of squared errors / sum of squares about the mean."""
    known = np.isfinite(y)
    residual = y[known] - predictions[known]
    total = ((y[known] - y[known].mean()) ** 2).sum()
    return float(1 - (residual ** 2).sum() / total) if total > 0 else math.nan


def group_estimates(y, predictions, alpha: float = 0.1, tuned: bool = True) -> list[MeanEstimate]:
    """``regression_mean`` of every group at once (vectorized; equal to it group by group).

    y: f[G, I] scores, NaN where unscored; predictions: f[G, I] on every image. ``tuned=False``:
    the plain mean with the finite-population correction (lam = 0). A group with fewer than 2
    scored images gets NaN.
    """
    y = np.asarray(y, np.float64)
    f = np.asarray(predictions, np.float64)
    known = np.isfinite(y)
    n = known.sum(1).astype(np.float64)
    big_n = y.shape[1]
    ok = n >= 2
    safe = np.where(ok, n, 2.0)
    y0 = np.where(known, y, 0.0)
    f0 = np.where(known, f, 0.0)
    y_mean, f_mean = y0.sum(1) / safe, f0.sum(1) / safe
    dy = np.where(known, y - y_mean[:, None], 0.0)
    df_ = np.where(known, f - f_mean[:, None], 0.0)
    s_ff = (df_ ** 2).sum(1) / np.maximum(safe - 1, 1)
    fitted = tuned & (n > 2) & (s_ff * (safe - 1) / safe > 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(fitted & (n >= 3), np.clip((dy * df_).sum(1) / np.maximum(safe - 1, 1) / s_ff, 0.0, 1.0), 0.0)
    ddof = np.where(fitted, 2.0, 1.0)
    residual = dy - lam[:, None] * df_
    s_ee = (residual ** 2).sum(1) / np.maximum(safe - ddof, 1)
    fpc = 1 - safe / big_n
    estimate = y_mean + lam * (f.mean(1) - f_mean)
    se = np.sqrt(np.maximum(fpc, 0.0) * s_ee / safe)
    plain_se = np.sqrt(np.maximum(fpc, 0.0) * (dy ** 2).sum(1) / np.maximum(safe - 1, 1) / safe)
    dof = safe - ddof
    half = stats.t.ppf(1 - alpha / 2, dof) * se
    out = []
    for g in range(y.shape[0]):
        if not ok[g]:
            out.append(MeanEstimate(*(math.nan,) * 5, int(n[g]), big_n, math.nan, math.nan))
            continue
        out.append(MeanEstimate(float(estimate[g]), float(se[g]), float(estimate[g] - half[g]),
                                float(estimate[g] + half[g]), float(lam[g]), int(n[g]), big_n, float(plain_se[g]),
                                float(dof[g])))
    return out


def pair_estimates(scores, features, pairs, alpha: float = 0.1, seed: int = 0,
                   folds: int = FOLDS) -> tuple[list[MeanEstimate], float]:
    """Whole-split differences of candidates' means, pair by pair, with a predictor of the
    per-image differences fitted on the differences of the features (pooled over the pairs,
    cross-fitted by image).

    scores: f[M, I] (NaN where unscored); features: f[M, I, C]; pairs: [(a, b), ...]: estimates
    of mean(a) - mean(b) on the images both were scored on. Returns (estimates, cross-fitted R^2).
    """
    scores = np.asarray(scores, np.float64)
    features = np.asarray(features, np.float64)
    a, b = (np.array([p[k] for p in pairs], int) for k in (0, 1))
    y = scores[a] - scores[b]
    x = features[a] - features[b]
    predictions = crossfit_predictions(x, y, folds, seed)
    return group_estimates(y, predictions, alpha), crossfit_r2(predictions, y)
