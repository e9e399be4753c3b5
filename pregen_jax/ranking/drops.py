"""Which candidates a race drops, and how far its pick can be from the best: the evidence
against each candidate, bet against whoever leads, and the pick's distance to the best.

**Drops against the predictable leader.** A race wants to drop candidate c when c is worse than
the best; it may be wrong (drop the best) with probability at most a. Every candidate c keeps
one capital process, whatever candidate leads::

    E_c,t = prod_{i <= t} (1 + l_i (u_i - m_i))

with, on the metric's scale rescaled to [0, 1] (``confseq.difference_to_unit``),
u_i = unit(s_L,i - s_c,i) the difference of draw i between the leader L = L(i - 1) and c, and
m_i = (N / 2 - sum_{j < i} u_j) / (N - i + 1) the mean of that pair's values not yet drawn if
the pair's split means were equal (the sum runs over the same pair (L(i - 1), c) at every j <
i: both were scored on every image drawn so far, since a race scores every survivor on every
round's images). The leader and the bet l_i in [0, c / m_i] are fixed before draw i (the leader
at the previous look, the bet from the pair's earlier draws).

Why it is valid. Let c be the candidate best on the split. For any leader L, the pair's split
mean of u is at most 1/2, so the conditional mean of u_i given the draws so far (a uniformly
random one of the values not yet drawn) is at most m_i; l_i >= 0, so every factor has
conditional mean at most 1, and u_i >= 0 with l_i <= c / m_i keeps it >= 1 - c > 0. E_c is a
nonnegative supermartingale whichever candidates lead, and Ville's inequality gives P(E_c ever
reaches 1 / a) <= a: the best is dropped with probability at most a, with no split of a over
the K - 1 pairs a candidate is compared in (the earlier rule's alpha / (K - 1)). The argument
needs the sum in m_i to be the current leader's pair sum (a sum of differences to old leaders
would not be the pair's past), and the process to run forward only: a round's factors are
computed once, draw by draw, never again over the same images with a leader chosen from them.

**How far the pick can be from the best** (``within``). After any look, with the pick p (the
survivor with the highest mean, chosen from the data), W = max(0, max over survivors j != p of
U_{j,p}), where U_{j,k} is the upper bound of a one-sided confidence sequence for mu_j - mu_k
at b / (K - 1), intersected over the looks it was computed at. If the best, b, is still in the
race (probability >= 1 - a) and the K - 1 sequences U_{b,k} all hold (probability >= 1 - b, a
union over the fixed best's pairs: which pair is read depends on the data, the sequences do
not), then mu_b - mu_p <= W at every look at once. A race runs the drops at a = alpha / 2 and
the pairs at b = alpha / 2, so "the pick is at most W below the best of the K" holds with
probability at least 1 - alpha, at every look (and so when the race stops because W <= EPS).

**K = 2: one statement at alpha** (issue 57). With two candidates the drop and W are one one-sided
claim about the best b against the other o: keep U_jk for both orders (``update_pair_bounds``),
drop j when U_jk < 0, and W = max(0, U_op) for the pick p. Dropping b needs U_bo < 0 <= mu_b - mu_o,
and a pick o farther than W below b needs mu_b - mu_o > U_bo: both are failures of the one
sequence U_bo (b is fixed though unknown; U_ob may fail freely), so each order's sequence runs at
alpha and the two statements hold together at 1 - alpha, where the K > 2 rule gives each alpha / 2. With equal means each is a best and each one's
drop is its own sequence's failure: P(a given best is dropped) <= alpha as for K > 2, but P(either is
dropped) is bounded only by 2 alpha (measured: 4 of 300 races at the whole budget, experiments/select_exact).
"""
from __future__ import annotations

import math

import numpy as np

from . import confseq


def leader_log_evidence(differences: np.ndarray, start: int, population: int, alpha: float,
                        tuning: confseq.Tuning) -> np.ndarray:
    """log of each factor of E_c for draws ``start`` .. T - 1: f[C, T - start].

    differences: f[C, T], each row u_j for j < T of one candidate against the current leader
      (in [0, 1]: ``confseq.difference_to_unit`` of s_leader - s_c), the draws before ``start``
      included (they fix m_i and the bets); the leader is the same for draws ``start`` .. T - 1.
    alpha: the level the bets are sized for (one-sided); tuning: truncation, plan, prior.
    A factor is +inf where the pair's past makes equal means impossible (m_i < 0, or the sum of
    all T draws past N / 2: the remaining values could not bring the mean back to 1/2).
    """
    u = np.atleast_2d(np.asarray(differences, np.float64))
    draws = u.shape[1]
    before = np.concatenate([np.zeros((u.shape[0], 1)), np.cumsum(u, -1)[:, :-1]], -1)
    left = population - np.arange(draws)  # values not yet drawn before draw i (0-based)
    m = (population / 2 - before) / left
    bets = confseq.predictable_bets(u, alpha, tuning)
    with np.errstate(divide="ignore", invalid="ignore"):
        bets = np.clip(np.minimum(bets, tuning.truncation / m), 0.0, None)
        factor = np.log1p(bets * (u - m))
    impossible = (m < 0) | ((m == 0) & (u > 0))
    factor = np.where(impossible, math.inf, np.where(m > 0, factor, 0.0))
    # after the last draw: the values drawn alone already sum past N / 2 (every value is >= 0), so the
    # pair's means cannot be equal (with every image drawn: the split says c is worse); a float's slack
    # keeps equal means equal
    factor[:, -1] = np.where(before[:, -1] + u[:, -1] > population / 2 + 1e-9 * population, math.inf, factor[:, -1])
    return factor[:, start:]


def pair_upper(differences: np.ndarray, population: int, alpha: float, tuning: confseq.Tuning) -> np.ndarray:
    """The upper bound after the last draw of a one-sided sequence at ``alpha`` for each row's
    split mean of unit differences ``differences: f[P, T]``: f[P] (on [0, 1])."""
    u = np.atleast_2d(np.asarray(differences, np.float64))
    return confseq.one_sided(u, population, alpha, [u.shape[1]], "upper", tuning)[:, 0]


def update_pair_bounds(scores: np.ndarray, pairs, population: int, alpha: float, score_range: tuple[float, float],
                       tuning: confseq.Tuning, bounds: dict) -> None:
    """Intersect ``bounds[j, k]`` (U_jk, the upper bound of mu_j - mu_k on the scores' scale) with each
    pair's one-sided sequence at ``alpha`` after the last draw of ``scores: f[M, done]``, for ``pairs``
    ((j, k), ...). A sequence intersected over its looks is still one: it holds at every look at once."""
    pairs = list(pairs)
    if not pairs:
        return
    rows = np.stack([scores[j] - scores[k] for j, k in pairs])
    upper = confseq.difference_from_unit(
        pair_upper(confseq.difference_to_unit(rows, score_range), population, alpha, tuning), score_range)
    for pair, bound in zip(pairs, upper):
        bounds[pair] = min(float(bound), bounds.get(pair, math.inf))


def within_bound(scores: np.ndarray, alive: list[int], pick: int, population: int, alpha: float,
                 score_range: tuple[float, float], tuning: confseq.Tuning, bounds: dict) -> float:
    """W: the largest upper bound of mu_j - mu_pick over the survivors j (0 when none is left beside
    the pick), each one-sided at ``alpha`` and intersected with the same pair's earlier bounds in
    ``bounds`` (the module docstring: why it holds for a pick chosen from the data). ``scores: f[M, done]``."""
    others = [j for j in alive if j != pick]
    if not others:
        return 0.0
    update_pair_bounds(scores, [(j, pick) for j in others], population, alpha, score_range, tuning, bounds)
    return max(0.0, max(bounds[j, pick] for j in others))
