"""Confidence sequences for the mean of a finite population sampled without replacement.

A race draws the images of a split in a random order, without replacement, and looks at its
estimates after every round: an interval that is right at a fixed sample size is wrong at some
look with a probability that grows with the looks, and a t interval is not even right at a
fixed size for the skewed, heavy-tailed per-image scores of CIDEr-D. A confidence sequence
(low_t, high_t) holds at every t at once: P(for all t: low_t <= mu <= high_t) >= 1 - alpha,
whatever the values are, as long as they lie in a known range, so a race may look as often as
it likes and stop when it likes.

Which sequence, and why. The hedged betting sequences of Waudby-Smith and Ramdas ("Confidence
sequences for sampling without replacement", NeurIPS 2020; "Estimating means of bounded random
variables by betting", JRSS-B 2023), in their without-replacement form, rather than an
empirical-Bernstein sequence (Howard et al. 2021):

- they are never wider than the empirical-Bernstein sequence by much and much narrower on
  skewed values near one end of the range (WSR 2023, section 5): per-image CIDEr-D is mostly
  near 0 with a long tail inside [0, 10], and its paired differences are concentrated near 0
  inside [-10, 10];
- they use the finite split exactly: the bet at draw i is on the mean of the images not yet
  drawn, so the sequence narrows faster than a with-replacement one as the race eats into the
  split, and is the split's exact mean once every image is drawn;
- the one tuning choice (the bets) is the paper's default, so the sequence can be checked
  against the authors' implementation (``confseq.betting.betting_cs(x, alpha=..., N=...)``).

Construction, for values x_1, x_2, ... in [0, 1] (a uniformly random order of N values with
mean mu). For a candidate mean m, the mean of the values not yet drawn before draw i is
``mu_i(m) = (N m - S_{i-1}) / (N - i + 1)`` (S_i = x_1 + ... + x_i): the conditional mean of x_i
when mu = m. Two capital processes bet on x_i landing above and below it::

    K+_t(m) = prod_{i <= t} (1 + l+_i(m) (x_i - mu_i(m))),   l+_i(m) = min(l_i, c / mu_i(m))
    K-_t(m) = prod_{i <= t} (1 - l-_i(m) (x_i - mu_i(m))),   l-_i(m) = min(l_i, c / (1 - mu_i(m)))

Both are nonnegative martingales when mu = m (the bets l_i read x_1 .. x_{i-1} only), so by
Ville's inequality P(exists t: K+_t(mu) >= 1 / a) <= a. The lower bound at t is the smallest m
that K+ does not reject (K+_t(m) <= 1 / a), the upper bound the largest m that K- does not
reject; both are intersected with the logical bounds [S_t / N, (S_t + N - t) / N] (every value
lies in [0, 1]). A two-sided sequence at alpha gives each side alpha / 2: confseq's
``max(K+ / 2, K- / 2)`` hedge, theta = 1/2. The bets are the paper's predictable plug-in,
``l_i = sqrt(2 log(1 / a) / (s2_{i-1} i log(1 + i)))`` with ``s2`` the running variance
regularised by one fake observation of variance 1/4 at 1/2, and c = 1/2 (confseq's
``lambda_predmix_eb`` and ``trunc_scale``). K+_t(m) falls as m rises and K-_t(m) rises (each
factor is monotone in mu_i(m), itself increasing in m), so each bound is found by bisection to
about 1e-11 rather than on confseq's grid of 1,000 values.

Values on another range [lo, hi] are rescaled to [0, 1] first (``to_unit``), and paired
differences of such values, which lie in [lo - hi, hi - lo], by ``difference_to_unit``; bounds come
back through ``from_unit`` and ``difference_from_unit``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

TRUNCATION = 0.5  # c: the largest share of its capital a bet may stake against the worst value
BISECTIONS = 36  # halvings of [0, 1]: 1.5e-11 (a race bisects every bound of every look: 46 cost 28% more)


@dataclasses.dataclass(frozen=True)
class Tuning:
    """How a sequence bets: the paper's defaults, or sized for a race.

    truncation: c, the largest share of its capital a bet may stake against the worst value (any
      c < 1 keeps every factor positive, so any c < 1 is valid; a larger c bets harder).
    plan: None: the paper's schedule (bets that shrink as sqrt(1 / (t log t)), for no planned
      size); else the number of draws the bets are sized for (a float, or f[T] per draw, read
      from the past only): ``sqrt(2 log(1 / a) / (s2 n))`` is the bet whose bound is tightest
      at n draws, and a race knows roughly how many images it can afford.
    prior_variance: the variance of the one fake observation at 1/2 that regularises ``s2``
      (on [0, 1]; 1/4, the largest possible, by default).
    """

    truncation: float = TRUNCATION
    plan: float | np.ndarray | None = None
    prior_variance: float = 0.25


DEFAULT = Tuning()


def predictable_bets(x: np.ndarray, alpha, tuning: Tuning = DEFAULT) -> np.ndarray:
    """The predictable plug-in bets l: f[B, T] for values ``x: f[B, T]`` in [0, 1] and one-sided
    levels ``alpha`` (a float or f[B]); l[:, i] reads x[:, :i] only."""
    x = np.asarray(x, np.float64)
    t = np.arange(1, x.shape[-1] + 1)
    mean = np.minimum((0.5 + np.cumsum(x, -1)) / (t + 1), 1.0)
    variance = (tuning.prior_variance + np.cumsum((x - mean) ** 2, -1)) / (t + 1)
    before = np.concatenate([np.full(x.shape[:-1] + (1,), tuning.prior_variance), variance[..., :-1]], -1)
    log_alpha = np.log(1 / np.asarray(alpha, np.float64))
    if log_alpha.ndim:
        log_alpha = log_alpha[:, None]
    size = t * np.log1p(t) if tuning.plan is None else np.asarray(tuning.plan, np.float64)
    return np.sqrt(2 * log_alpha / (size * before))


def logical_bounds(x: np.ndarray, population: int, looks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the draws alone say, f[B, R] each: the mean lies in [S_t / N, (S_t + N - t) / N]."""
    drawn = np.cumsum(np.asarray(x, np.float64), -1)[:, looks - 1]
    return drawn / population, (drawn + population - looks) / population


def one_sided(x: np.ndarray, population: int, alpha, looks=None, side: str = "upper",
              tuning: Tuning = DEFAULT) -> np.ndarray:
    """A one-sided sequence at level 1 - alpha per row: the ``side`` ("lower" or "upper") bound
    of the mean of the N = ``population`` values of which ``x: f[B, T]`` (in [0, 1], in random
    order without replacement) are the first T, after each of the ``looks`` (i64[R], draws
    1..T; default every draw): f[B, R]. ``alpha``: a float or f[B]; ``tuning``: how it bets."""
    x = np.atleast_2d(np.asarray(x, np.float64))
    rows, draws = x.shape
    looks = np.arange(1, draws + 1) if looks is None else np.asarray(looks, np.int64)
    if draws > population or (looks < 1).any() or (looks > draws).any():
        raise ValueError(f"{draws} draws, looks {looks.min()}..{looks.max()}, of a population of {population}")
    if side not in ("lower", "upper"):
        raise ValueError(f"side {side!r}: lower or upper")
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), (rows,))
    bets = predictable_bets(x, alpha, tuning)[:, None, :]  # [B, 1, T]
    before = np.concatenate([np.zeros((rows, 1)), np.cumsum(x, -1)[:, :-1]], -1)[:, None, :]
    left = (population - np.arange(draws))[None, None, :]  # values not yet drawn before draw i
    seen = (np.arange(1, draws + 1)[None, :] <= looks[:, None])[None]  # [1, R, T]
    values = x[:, None, :]
    threshold = np.log(1 / alpha)[:, None]
    sign = 1.0 if side == "lower" else -1.0

    def excess(m: np.ndarray) -> np.ndarray:
        """log K_t(m) - log(1 / alpha), f[B, R]: > 0 where m is rejected."""
        mu = np.clip((population * m[:, :, None] - before) / left, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            cap = tuning.truncation / (mu if side == "lower" else 1 - mu)
        factor = 1 + sign * np.minimum(bets, cap) * (values - mu)
        return np.where(seen, np.log(factor), 0.0).sum(-1) - threshold

    low, high = logical_bounds(x, population, looks)
    # lower: K+ falls as m rises; the bound is the smallest m not rejected (rejected below it)
    # upper: K- rises with m; the bound is the largest m not rejected (rejected above it)
    inner, outer = (high, low) if side == "lower" else (low, high)
    at_outer, at_inner = excess(outer) <= 0, excess(inner) <= 0
    rejected, accepted = outer.copy(), inner.copy()
    for _ in range(BISECTIONS):
        middle = (rejected + accepted) / 2
        ok = excess(middle) <= 0
        accepted = np.where(ok, middle, accepted)
        rejected = np.where(ok, rejected, middle)
    # every m rejected: the side is empty (an event of probability <= alpha): say only what is logical
    return np.where(at_outer | ~at_inner, outer, rejected)


def two_sided(x: np.ndarray, population: int, alpha, looks=None,
              tuning: Tuning = DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided sequence at level 1 - alpha per row (each side at alpha / 2): (low, high),
    f[B, R] each (see ``one_sided``). Where the two sides do not meet (probability <= alpha) it
    is the logical interval, as confseq's grid gives it."""
    alpha = np.asarray(alpha, np.float64)
    low = one_sided(x, population, alpha / 2, looks, "lower", tuning)
    high = one_sided(x, population, alpha / 2, looks, "upper", tuning)
    x = np.atleast_2d(np.asarray(x, np.float64))
    looks = np.arange(1, x.shape[1] + 1) if looks is None else np.asarray(looks, np.int64)
    logical_low, logical_high = logical_bounds(x, population, looks)
    crossed = low > high
    return np.where(crossed, logical_low, low), np.where(crossed, logical_high, high)


def to_unit(values: np.ndarray, score_range: tuple[float, float]) -> np.ndarray:
    """Scores in [lo, hi] mapped onto [0, 1]."""
    lo, hi = score_range
    return (np.asarray(values, np.float64) - lo) / (hi - lo)


def from_unit(values: np.ndarray, score_range: tuple[float, float]) -> np.ndarray:
    """``to_unit`` undone: a bound on [0, 1] as a bound on the scores' scale."""
    lo, hi = score_range
    return lo + (hi - lo) * np.asarray(values, np.float64)


def difference_to_unit(differences: np.ndarray, score_range: tuple[float, float]) -> np.ndarray:
    """Paired differences of scores in [lo, hi], which lie in [lo - hi, hi - lo], mapped onto [0, 1]."""
    width = score_range[1] - score_range[0]
    return (np.asarray(differences, np.float64) + width) / (2 * width)


def difference_from_unit(values: np.ndarray, score_range: tuple[float, float]) -> np.ndarray:
    """``difference_to_unit`` undone."""
    width = score_range[1] - score_range[0]
    return 2 * width * np.asarray(values, np.float64) - width
