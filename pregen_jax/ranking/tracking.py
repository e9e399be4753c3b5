"""The statistics of the checkpoint tracker (``selection.tracker``): how alpha is spent over a
stream of offers, and one offer's paired sequential test of a challenger against the kept checkpoint.

The guarantee. Offer 1 is kept without a comparison; offer k >= 2 is comparison j = k - 1, of the
challenger C_k with the kept checkpoint I_k on images drawn in a fresh uniformly random order (its
own seed, never an order an earlier offer saw), with a two-sided confidence sequence at level
1 - alpha_j for the mean paired difference d_k = mean_i (C_k(i) - I_k(i)) over the N images of the
split (``confseq.two_sided``, without replacement, valid at every look). I_k is chosen by the
earlier offers alone, and the order of offer k is independent of them, so the sequence covers d_k
at every look with probability >= 1 - alpha_j given the past; by a union bound over comparisons,
every sequence of the stream covers at once with probability >= 1 - sum_j alpha_j >= 1 - alpha, for
a stream of any length, stopped whenever the user likes (patience included). On that event:

- ``better`` (low > 0): C_k is truly better than I_k on the split, so every replacement raises the
  kept checkpoint's true score;
- ``not better`` (high <= within): C_k is at most ``within`` above I_k, hence above the final kept;
- ``undecided`` (the offer's budget spent first): C_k is at most ``bound`` = high above I_k.

So the kept checkpoint is at most max(within, every undecided bound) below every checkpoint
offered. Reusing one order for every offer would break this: the kept checkpoint won on that
order's first images, and would be compared again on them (a winner's curse).

Spending (``Spending``), over comparisons (the first offer compares nothing and spends nothing):
``alpha_j = 6 alpha / (pi^2 j^2)`` for a stream of unknown length (the Basel sum; offer 2 gets
6 alpha / pi^2), or ``alpha / (K - 1)`` for each comparison of at most K offers declared in advance.
The cost: a betting sequence's width grows about as sqrt(log(1 / alpha_j)); ``Spending.width_factor``
is that ratio to a single test at alpha, shown with every verdict.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import confseq

TRACKER_TUNING = confseq.Tuning(truncation=0.9, plan=None, prior_variance=0.05 ** 2)
"""The bets: the paper's schedule (no planned size: an offer stops as soon as it is decided), staking
up to 0.9 of the capital, with a prior standard deviation of a tenth of the difference range (paired
differences sit near 0 in a range of +-10 CIDEr-D)."""

STATUSES = {1: "better", -1: "not better", 0: "undecided"}


@dataclasses.dataclass(frozen=True)
class Spending:
    """How alpha is spent over the comparisons of a stream (comparison j is offer j + 1: the first
    offer is kept without one). ``most`` None: alpha_j = 6 alpha / (pi^2 j^2) (any number of
    offers); else alpha / (most - 1) for each comparison of at most ``most`` offers."""

    alpha: float = 0.05
    most: int | None = None

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha {self.alpha}: must lie in (0, 1)")
        if self.most is not None and self.most < 2:
            raise ValueError(f"most {self.most}: at least 2 offers (the first is kept without a comparison)")

    def level(self, j: int) -> float:
        """alpha_j, the level of comparison j (1, 2, ...; offer j + 1)."""
        if j < 1:
            raise ValueError(f"comparison {j}: comparisons count from 1 (offer 2)")
        if self.most is None:
            return 6 * self.alpha / (math.pi ** 2 * j ** 2)
        if j > self.most - 1:
            raise ValueError(f"offer {j + 1}: the tracker was declared for at most {self.most} offers (alpha / "
                             f"{self.most - 1} for each of their {self.most - 1} comparisons); a longer stream needs a "
                             "new tracker, or most=None (6 alpha / (pi^2 j^2) for comparison j)")
        return self.alpha / (self.most - 1)

    def width_factor(self, j: int) -> float:
        """About how much wider comparison j's interval is than one test's at alpha:
        sqrt(log(1/alpha_j) / log(1/alpha))."""
        return math.sqrt(math.log(1 / self.level(j)) / math.log(1 / self.alpha))

    def describe(self) -> str:
        return (f"alpha_j = 6 x {self.alpha:g} / (pi^2 j^2) for comparison j (offer j + 1), any number of offers"
                if self.most is None else
                f"alpha_j = {self.alpha:g} / {self.most - 1} for each comparison of at most {self.most} offers")


def looks(population: int, first: int, budget: int) -> np.ndarray:
    """i64[R]: the images drawn by each look of an offer: ``first``, then doubling (as a race's rounds:
    few looks, each a larger batch to decode), up to ``budget`` (<= N)."""
    if first < 1 or not 1 <= budget <= population:
        raise ValueError(f"batch {first}, budget {budget} of {population} images: batch >= 1, 1 <= budget <= N")
    sizes = first * 2 ** np.arange(max(1, math.ceil(math.log2(max(budget / first, 1))) + 1))
    return np.unique(np.minimum(np.append(sizes, budget), budget))


def paired_look(differences: np.ndarray, population: int, alpha: float, width: float,
                within: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One look of an offer, for rows of paired differences (challenger - kept) ``f[B, t]`` on the t
    images drawn so far, each in [-width, width]: (status i8[B]: 1 better, -1 not better, 0 open;
    low f[B], high f[B]: the two-sided sequence at 1 - alpha for the split's mean difference, on the
    score's scale). ``better`` wins when both hold (low > 0 and high <= within)."""
    x = confseq.difference_to_unit(np.atleast_2d(differences), (0.0, width))
    t = x.shape[1]
    if t == population:  # every image drawn: the exact mean S / N (the logical bounds, whose upper one,
        low = high = confseq.logical_bounds(x, population, np.array([t]))[0]  # (S + N - N) / N, may round)
    else:
        low, high = confseq.two_sided(x, population, alpha, np.array([t]), TRACKER_TUNING)
    low = confseq.difference_from_unit(low[:, 0], (0.0, width))
    high = confseq.difference_from_unit(high[:, 0], (0.0, width))
    status = np.where(low > 0, 1, np.where(high <= within, -1, 0)).astype(np.int8)
    return status, low, high


@dataclasses.dataclass(frozen=True)
class OfferResults:
    """Offers replayed at once (``paired_verdicts``), one row each: status i8[B] (1, -1, 0 undecided),
    drawn i64[B] (the images each drew), low and high f[B] (the interval at its last look)."""

    status: np.ndarray
    drawn: np.ndarray
    low: np.ndarray
    high: np.ndarray


def paired_verdicts(differences: np.ndarray, population: int, alpha: float, width: float, within: float,
                    at: np.ndarray) -> OfferResults:
    """What ``paired_look`` decides, look by look at ``at`` (i64[R], images drawn), for rows of
    differences ``f[B, T]`` in the order drawn (T >= at[-1]); a row stops at its first decision. The
    tracker makes the same calls on one row as its images arrive; a study replays many orders at once."""
    rows = differences.shape[0]
    status = np.zeros(rows, np.int8)
    drawn = np.zeros(rows, np.int64)
    low, high = np.full(rows, -width), np.full(rows, width)
    open_rows = np.arange(rows)
    for t in at:
        if not len(open_rows):
            break
        s, lo, hi = paired_look(differences[open_rows, :t], population, alpha, width, within)
        status[open_rows], drawn[open_rows], low[open_rows], high[open_rows] = s, t, lo, hi
        open_rows = open_rows[s == 0]
    return OfferResults(status, drawn, low, high)
