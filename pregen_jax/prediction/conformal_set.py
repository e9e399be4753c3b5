"""The full conformal set of ``conformal`` computed exactly: every piece of it, bounded or not
(``pregen-search predict``).

For a candidate score ``t`` of the new model, calibration model ``i`` is scored by its residual
from the line chosen and fitted on the other ``n`` models (the new one among them, with score
``t``). Over those ``n`` models metric ``m``'s centred cross-product with the scores is linear in
``t``, ``cxy_m(t) = a_m + b_m t`` (``b_m``: the new model's centred value), so the choice (highest
R^2, ``cxy_m^2 / cxx_m``) is the metric whose ``|a_m + b_m t| / sqrt(cxx_m)`` is highest: the
upper envelope of the ``2M`` lines ``+-(a_m + b_m t) / sqrt(cxx_m)`` (``upper_envelope``), which
changes at finitely many break points. Between two break points every residual is linear in
``t``, ``|alpha_i + beta_i t|``, and the new model's is ``|t - predicted|`` (its own line is fitted
on the calibration models only), so each comparison ``R_i(t) < R_new(t)`` changes at most at two
roots. Between consecutive break points and roots (the **critical points**) the count of
calibration models scored below the new one is constant: one evaluation per gap decides it, and
one per critical point (with both one-sided choices at a break point) decides the points
themselves. The set reported is the closure of the kept gaps and points (a superset only by
those end points): an interval, a union of intervals (islands), or unbounded on a side, where
the last gap is kept. Exact up to floating point; no grid, no search range.

Arrays: ``x_aug`` f64[n+1, M] the models' scaled candidate metrics, the new model last; ``y`` f64[n]
the calibration models' scores.
"""
from __future__ import annotations

import dataclasses

import numpy as np

TINY = 1e-12   # a fit's centred sum of squares at or below this (of scaled columns) cannot carry a line


@dataclasses.dataclass(frozen=True)
class Forms:
    """Every calibration model's residual as a linear form per piece of the candidate axis.

    Attributes:
      breaks: f64[B] increasing: where some model's chosen metric changes.
      alpha, beta: f64[n, B+1]: model i's residual on piece j is ``|alpha[i, j] + beta[i, j] t|``.
    """

    breaks: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    def piece(self, t: np.ndarray, side: str = "left") -> np.ndarray:
        """int[T]: the piece each candidate lies in (at a break point: the one below, or above with ``right``)."""
        return np.searchsorted(self.breaks, t, side=side)


def upper_envelope(slopes: np.ndarray, intercepts: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The highest of the lines ``intercepts + slopes t`` (each f[L]) for every real ``t``: (breaks f[K]
    increasing, lines int[K+1]), line ``lines[k]`` highest between ``breaks[k-1]`` and ``breaks[k]``.
    Identical lines go to the lowest ``keys`` (the metric's column: ``np.argmax``'s first on ties).
    Walks from ``t = -inf`` (the least slope) to each next line crossing the current one from below."""
    order = np.lexsort((keys, -intercepts, slopes))
    current, at = int(order[0]), -np.inf
    breaks, lines = [], [current]
    while True:
        steeper = slopes > slopes[current]
        if not steeper.any():
            return np.array(breaks, np.float64), np.array(lines, np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(steeper, (intercepts[current] - intercepts) / (slopes - slopes[current]), np.inf)
        cross = np.maximum(cross, at)  # rounding can put a crossing a hair before the last one
        first = np.flatnonzero(cross == cross.min())
        first = first[slopes[first] == slopes[first].max()]
        current, at = int(first[np.argmin(keys[first])]), float(cross.min())
        breaks.append(at)
        lines.append(current)


def forms(x_aug: np.ndarray, y: np.ndarray) -> Forms:
    """Each calibration model's leave-one-out residual, piece by piece (module docstring)."""
    n, metrics = len(y), x_aug.shape[1]
    columns = np.tile(np.arange(metrics), 2)
    per_model = []
    for i in range(n):
        others = np.arange(n + 1) != i
        centre = x_aug[others].mean(0)
        xc = x_aug[others] - centre                                   # [n, M], the new model last
        cxx = (xc ** 2).sum(0)
        a, b = xc[:-1].T @ y[others[:-1]], xc[-1]                     # cxy_m(t) = a_m + b_m t
        usable = cxx > TINY
        root = np.sqrt(np.where(usable, cxx, 1.0))
        lines = np.flatnonzero(np.tile(usable, 2))
        sign = np.repeat([1.0, -1.0], metrics)
        if not len(lines):  # no metric can carry a line without model i: it never scores below the new model
            per_model.append((np.empty(0), None, None))
            continue
        breaks, best = upper_envelope((sign * np.tile(b / root, 2))[lines], (sign * np.tile(a / root, 2))[lines],
                                      columns[lines])
        m = columns[lines][best]                                      # [K+1] the chosen metric per stretch
        lever = (x_aug[i] - centre)[m] / cxx[m]
        alpha = y[i] - (y.sum() - y[i]) / n - a[m] * lever            # residual = alpha + beta t on each stretch
        beta = -1.0 / n - b[m] * lever
        per_model.append((breaks, alpha, beta))
    breaks = np.unique(np.concatenate([bp for bp, _, _ in per_model]))
    inside = _representatives(breaks)
    alpha, beta = np.full((n, len(inside)), np.inf), np.zeros((n, len(inside)))
    for i, (bp, a_i, b_i) in enumerate(per_model):
        if a_i is not None:
            stretch = np.searchsorted(bp, inside)
            alpha[i], beta[i] = a_i[stretch], b_i[stretch]
    return Forms(breaks, alpha, beta)


def _representatives(points: np.ndarray) -> np.ndarray:
    """f64[P+1]: one point inside each gap of the increasing ``points`` f[P] (and beyond both ends)."""
    if not len(points):
        return np.zeros(1)
    ends = [points[0] - 1.0 - abs(points[0])], [points[-1] + 1.0 + abs(points[-1])]
    return np.concatenate([ends[0], (points[:-1] + points[1:]) / 2, ends[1]])


def _below(f: Forms, t: np.ndarray, piece: np.ndarray, predicted: float, slack: float | np.ndarray) -> np.ndarray:
    """int[T]: how many calibration models score strictly below the new model at each ``t`` (the
    comparison loosened by ``slack``, float or f[T]: a score equal to the new model's but for rounding
    is a tie, and ties count for the new model; at critical points the two are equal by construction,
    and a model can tie it over a whole gap, its residual the new model's own line)."""
    with np.errstate(invalid="ignore"):
        own = np.abs(f.alpha[:, piece] + f.beta[:, piece] * t)
    return (own < np.abs(t - predicted) - slack).sum(0)


def _roots(f: Forms, predicted: float) -> np.ndarray:
    """Every ``t`` inside a piece where some model's residual equals the new model's ``|t - predicted|``."""
    lows = np.concatenate([[-np.inf], f.breaks])
    highs = np.concatenate([f.breaks, [np.inf]])
    with np.errstate(divide="ignore", invalid="ignore"):
        found = np.stack([(predicted + f.alpha) / (1 - f.beta), (predicted - f.alpha) / (1 + f.beta)])  # [2, n, P]
    keep = np.isfinite(found) & (found > lows) & (found < highs)
    return found[keep]


def kept_pieces(f: Forms, predicted: float, rank: int, scale: float) -> tuple[list[tuple[float, float]], list[int]]:
    """The set's closure as sorted disjoint closed intervals (ends may be infinite), and the count of models
    below the new one in its two outer gaps ([below -inf, above +inf]). Kept: at most ``rank - 1`` of the
    n calibration models score strictly below the new one (ties count for it). ``scale``: the scores'
    spread, for the rounding slack at critical points and for joining pieces that touch but for it."""
    z = np.unique(np.concatenate([f.breaks, _roots(f, predicted), [predicted]]))
    mids = _representatives(z)
    gap_ok = _below(f, mids, f.piece(mids), predicted, 1e-12 * (scale + np.abs(mids))) <= rank - 1
    slack = 1e-12 * max(scale, float(np.abs(z).max()))
    point_ok = ((_below(f, z, f.piece(z, "left"), predicted, slack) <= rank - 1)
                | (_below(f, z, f.piece(z, "right"), predicted, slack) <= rank - 1))
    edges = np.concatenate([[-np.inf], z, [np.inf]])
    spans = [(edges[g], edges[g + 1]) for g in np.flatnonzero(gap_ok)] + [(p, p) for p in z[point_ok]]
    merged: list[tuple[float, float]] = []
    for low, high in sorted(spans):
        if merged and low <= merged[-1][1] + 1e-9 * scale:
            merged[-1] = (merged[-1][0], float(max(merged[-1][1], high)))
        else:
            merged.append((float(low), float(high)))
    outer = _below(f, mids[[0, -1]], f.piece(mids[[0, -1]]), predicted, 1e-12 * (scale + np.abs(mids[[0, -1]])))
    return merged, [int(outer[0]), int(outer[1])]
