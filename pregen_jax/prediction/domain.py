"""Where a new model lies against the calibration models: the domain every prediction is checked
against (``pregen-search predict``).

A prediction holds for a model like the calibration models (exchangeable with them). A model
whose perplexity, chosen pre-gen metric or other informative pre-gen metric lies far outside
theirs is not one: a pure-noise "model" with perplexity 17.3 where the calibration models span
3.35-4.77 was given a CIDEr as confident as theirs because its chosen metric happened to fall in
range (issue 49). So each new model is placed on a few **axes** (``axes``: perplexity, each
post-gen metric's chosen metric, and the next most informative metrics by R^2 that are not near
copies of those), each axis measured in **spans** of the calibration models (how far outside
their range, divided by its width; 0 inside; ``outside_spans``). The model's **score** is its
largest distance over the axes.

The threshold is the calibration models' own spread, by the conformal rank of a new model among
them: each calibration model's score against the other ``n - 1`` (``loo_scores``), and a new
model is flagged when its score exceeds the ``ceil((1 - RATE)(n + 1))``-th smallest of those
(the largest of them for ``n < 39``). A model exchangeable with the calibration models is then
flagged with probability at most ``max(RATE, 1 / (n + 1))``; ``loo_flag_rate`` measures the rule,
threshold refitted each time, on the calibration models left out in turn. The flag names each
axis beyond the threshold and how far out it lies.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

RATE = 0.05          # the flag rate the threshold allows for a model like the calibration models
COPY = 0.9           # |r| over the calibration models above which a metric is a near copy of an axis taken
EXTRA_AXES = 2       # informative metrics added beyond perplexity and the chosen ones


@dataclasses.dataclass(frozen=True)
class Placement:
    """One new model against the calibration models.

    Attributes:
      axes: the axes' names, A of them.
      distances: f64[A]: how far outside the calibration range on each axis, in spans (0 inside; inf
        for a non-finite value).
      sides: per axis ``inside``, ``below`` or ``above``.
      low, high: f64[A]: the calibration models' range on each axis.
      threshold: the distance beyond which an axis is flagged (``domain_threshold``).
    """

    axes: tuple[str, ...]
    distances: np.ndarray
    sides: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    threshold: float

    def flagged(self, axis: str | None = None) -> bool:
        """Any axis (or the one named) beyond the threshold."""
        out = self.distances > self.threshold
        return bool(out[self.axes.index(axis)] if axis is not None else out.any())

    def describe(self, axis: str) -> str:
        """``geomean_join_pplx_none 17.3: 8.8 spans above [3.35, 4.77]``."""
        a = self.axes.index(axis)
        if not np.isfinite(self.distances[a]):
            return f"{axis}: not finite"
        return (f"{axis} {self.distances[a]:.2g} spans {self.sides[a]} [{self.low[a]:.4g}, {self.high[a]:.4g}]")

    def flags(self) -> str:
        """Every axis beyond the threshold, furthest first; empty when none is."""
        out = [a for a in np.argsort(-self.distances, kind="stable") if self.distances[a] > self.threshold]
        return "; ".join(self.describe(self.axes[a]) for a in out)


def outside_spans(x: np.ndarray, x_new: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """f64[A] distances and sides of ``x_new`` f[A] against the rows of ``x`` f[n, A] (module docstring).
    An axis on which the calibration models agree exactly has span 0: any other value is inf out."""
    low, high = x.min(0), x.max(0)
    span = high - low
    below, above = low - x_new, x_new - high
    gap = np.maximum(np.maximum(below, above), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # gap / 0 = inf: span 0, any other value is out
        distance = np.where(gap > 0, gap / span, 0.0)
    distance = np.where(np.isfinite(x_new), distance, np.inf)
    sides = ["inside" if d == 0 else "below" if b > 0 else "above" for d, b in zip(distance, below)]
    return distance, sides


def loo_scores(x: np.ndarray) -> np.ndarray:
    """f64[n]: each calibration model's score (largest distance over the axes) against the other n - 1."""
    n = len(x)
    return np.array([outside_spans(x[np.arange(n) != i], x[i])[0].max() for i in range(n)])


def domain_threshold(x: np.ndarray) -> float:
    """The score beyond which a new model is flagged: the ceil((1 - RATE)(n + 1))-th smallest LOO score,
    the largest where that rank exceeds n."""
    scores = np.sort(loo_scores(x))
    rank = min(len(scores), math.ceil((1 - RATE) * (len(scores) + 1) - 1e-9))
    return float(scores[rank - 1])


def place(x: np.ndarray, x_new: np.ndarray, axes: list[str], limit: float | None = None) -> Placement:
    """``x_new`` f[A] against the calibration models' ``x`` f[n, A] (threshold computed unless given)."""
    distances, sides = outside_spans(x, x_new)
    return Placement(tuple(axes), distances, tuple(sides), x.min(0), x.max(0),
                     domain_threshold(x) if limit is None else limit)


def loo_flag_rate(x: np.ndarray) -> tuple[int, int]:
    """(flagged, n): the rule applied to each calibration model left out, threshold refitted on the others."""
    n = len(x)
    flagged = 0
    for i in range(n):
        others = x[np.arange(n) != i]
        flagged += place(others, x[i], [str(a) for a in range(x.shape[1])]).flagged()
    return flagged, n


def axes(model_rows: pd.DataFrame, first: list[str], ranked: list[str]) -> list[str]:
    """``first`` (perplexity, the chosen metrics), then up to ``EXTRA_AXES`` of ``ranked`` (best first) whose
    |r| with every axis taken is below ``COPY`` over the calibration models (not a near copy)."""
    taken = list(dict.fromkeys(first))
    extra = 0
    for name in ranked:
        if extra == EXTRA_AXES:
            break
        if name in taken or name not in model_rows.columns:
            continue
        values = model_rows[name].to_numpy(np.float64)
        if not np.isfinite(values).all() or np.ptp(values) == 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            r = [abs(np.corrcoef(values, model_rows[a].to_numpy(np.float64))[0, 1]) for a in taken]
        if np.nanmax(r) < COPY:
            taken.append(name)
            extra += 1
    return taken
