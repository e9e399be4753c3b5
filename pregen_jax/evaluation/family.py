"""One stated family of comparisons, adjusted together: single-step max-T on the shared bootstrap draws.

``evaluate`` compares every system after the first with the first, on every metric with
statistics; by default all these comparisons (systems - 1 times metrics) are one family, so the
chance of any false "differs" among everything printed is at most ``1 - LEVEL``. Per-metric
families (each metric's systems - 1 comparisons) on request (``FAMILIES``).

Single-step max-T (Westfall and Young 1993, the bootstrap form of Romano and Wolf 2005): each
comparison j's B resampled differences ``d_bj`` (the same resampled images for every system and
metric, so their dependence is kept), centred on the observed ``d_j`` and studentized by their
standard deviation ``s_j`` (metrics on different scales count alike):
``T_bj = (d_bj - d_j) / s_j``; ``M_b = max_j |T_bj|``; ``t_j = |d_j| / s_j``.

- adjusted p: ``p_j = (1 + #{M_b >= t_j}) / (1 + B)``;
- simultaneous interval: ``d_j +- c s_j``, ``c`` the order statistic of ``M`` at which ``p`` crosses
  ``1 - LEVEL``; computed as ``s_j (d_j / s_j -+ c)``, so it excludes 0 exactly when ``t_j > c``,
  which is exactly when ``p_j < 1 - LEVEL`` (``max_t``);
- step-down p (Romano and Wolf 2005), printed beside and labelled: the comparisons in decreasing
  ``t_j``, each against the maximum over itself and those below it, made monotone; never above
  the single-step p, and with no interval that matches it.

Why 1,000 resamples suffice whatever the family's size (no ``20 m / alpha`` rule): every adjusted p
is read off one distribution, that of ``M``, so its resolution is ``1 / (1 + B)`` for any number
of comparisons m (Holm's smallest p is ``m / (1 + B)``), and rejecting is one quantile of ``M``,
estimated from ``(1 - LEVEL)(1 + B)`` = 50 draws beyond it at B = 1,000, as for one unadjusted test.
The family-wise error measured with equal systems: experiments/evaluate_family/README.md.
"""
from __future__ import annotations

import dataclasses

import numpy as np

LEVEL = 0.95
FAMILIES = {"all": "every comparison printed (each system after the first against the first, on every metric "
                   "with intervals)",
            "metric": "each metric's comparisons (each system after the first against the first), one family per "
                      "metric"}


@dataclasses.dataclass(frozen=True)
class Adjusted:
    """One family's adjustment, each array f64[m] in the family's order.

    p: single-step max-T adjusted p-values; p_stepdown: step-down max-T p-values;
    low, high: the simultaneous ``LEVEL`` intervals of the differences; critical: ``c`` (inf where
    B is too small to reach ``1 - LEVEL``).
    """

    p: np.ndarray
    p_stepdown: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical: float


def max_t(draws: np.ndarray, observed: np.ndarray, level: float = LEVEL) -> Adjusted:
    """Max-T adjustment of m comparisons: ``draws`` f64[B, m] resampled differences, ``observed``
    f64[m] the differences themselves (see the module docstring). A comparison whose draws do not
    vary (``s_j = 0``) gets ``T_bj = 0``, ``t_j`` 0 or inf, and the interval ``[d_j, d_j]`` (widened
    to reach 0 where it is not rejected)."""
    draws, observed = np.asarray(draws, np.float64), np.asarray(observed, np.float64)
    resamples = len(draws)
    spread = draws.std(axis=0, ddof=1)
    varies = spread > 0
    safe = np.where(varies, spread, 1.0)
    centred = np.where(varies, np.abs(draws - observed) / safe, 0.0)                     # |T_bj|, f64[B, m]
    t = np.where(varies, np.abs(observed) / safe, np.where(observed == 0, 0.0, np.inf))  # t_j
    largest = np.sort(centred.max(axis=1))                                               # M_b ascending
    beyond = resamples - np.searchsorted(largest, t, side="left")                        # #{M_b >= t_j}
    p = (1 + beyond) / (1 + resamples)
    critical = _critical(largest[::-1], level)
    signed = np.where(varies, observed / safe, 0.0)
    fixed = t > critical  # a comparison that does not vary: its interval is d alone where it is rejected
    low = np.where(varies, safe * (signed - critical), np.where(fixed, observed, np.minimum(observed, 0.0)))
    high = np.where(varies, safe * (signed + critical), np.where(fixed, observed, np.maximum(observed, 0.0)))
    return Adjusted(p, _step_down(centred, t), low, high, critical)


def _critical(descending: np.ndarray, level: float) -> float:
    """``c``: the (r + 1)-th largest M_b, r the most resamples beyond a t that still gives
    ``(1 + r) / (1 + B) < 1 - level`` (so ``t > c`` exactly when p < 1 - level); inf where none does."""
    resamples = len(descending)
    allowed = np.nonzero((1 + np.arange(resamples + 1)) / (1 + resamples) < 1 - level)[0]
    return float(descending[allowed[-1]]) if len(allowed) and allowed[-1] < resamples else np.inf


def _step_down(centred: np.ndarray, t: np.ndarray) -> np.ndarray:
    """f64[m]: step-down max-T p-values: in decreasing t, each against max_b over itself and the
    comparisons after it, made non-decreasing (Romano and Wolf 2005, algorithm 4.1 as p-values)."""
    order = np.argsort(-t, kind="stable")
    remaining = np.maximum.accumulate(centred[:, order][:, ::-1], axis=1)[:, ::-1]  # f64[B, m]: max over k >= j
    raw = (1 + np.count_nonzero(remaining >= t[order], axis=0)) / (1 + len(centred))
    adjusted = np.empty_like(raw)
    adjusted[order] = np.maximum.accumulate(raw)
    return adjusted


def adjust_rows(rows: list[dict], draws: dict, family: str = "all", level: float = LEVEL) -> dict:
    """Fill each compared row of ``rows`` (those with ``diff``) with ``diff_low``, ``diff_high`` (the
    simultaneous interval), ``p_adjusted`` and ``p_stepdown``, over ``family`` (``FAMILIES``);
    ``draws``: (system, metric) -> f64[B] its resampled differences. Returns what settings.json
    records: the family, its size (the largest where per metric) and the critical values."""
    if family not in FAMILIES:
        raise ValueError(f"--family {family}: choose from {', '.join(FAMILIES)}")
    compared = [row for row in rows if "diff" in row]
    groups: dict = {}
    for row in compared:
        groups.setdefault("all" if family == "all" else row["metric"], []).append(row)
    critical = {}
    for key, members in groups.items():
        found = max_t(np.column_stack([draws[row["system"], row["metric"]] for row in members]),
                      np.array([row["diff"] for row in members]), level)
        for k, row in enumerate(members):
            row.update(diff_low=float(found.low[k]), diff_high=float(found.high[k]), p_adjusted=float(found.p[k]),
                       p_stepdown=float(found.p_stepdown[k]))
        critical[key] = found.critical
    return {"family": family, "described": FAMILIES[family], "comparisons": len(compared),
            "family_size": max((len(g) for g in groups.values()), default=0), "families": len(groups),
            "critical_max_t": critical}
