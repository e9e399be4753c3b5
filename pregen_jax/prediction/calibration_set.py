"""The calibration models ``predict`` rests on, what it chooses from them and the domain it checks new
models against, gathered once per run (``pregen-search predict``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..pipeline.finished import FinishedSearch
from ..ranking import ALL, PERPLEXITY_BASELINE
from . import conformal, domain

MIN_MODELS = 3  # a line through the others of each left-out model needs two


@dataclasses.dataclass(frozen=True)
class CalibrationSet:
    """What every prediction of one run shares.

    Attributes:
      models: the usable calibration models' whole-test-set rows (n of them).
      searched: how many models the search has; ``left_out`` why the others are not used.
      candidates: post-gen metric -> the pre-gen metrics ``predict`` chooses among (one with ``--pregen``).
      chosen: post-gen metric -> the candidate chosen on all n models (``conformal.choose``).
      axes, threshold: the domain (``domain.axes``, ``domain.domain_threshold``).
      level: the intervals' level.
    """

    models: pd.DataFrame
    searched: int
    left_out: dict[str, str]
    candidates: dict[str, list[str]]
    chosen: dict[str, str]
    axes: list[str]
    threshold: float
    level: float

    @property
    def n(self) -> int:
        return len(self.models)

    def describe(self) -> str:
        """The line ``predict`` starts with."""
        left = f"; {len(self.left_out)} left out: degenerate captions" if self.left_out else ""
        return (f"calibration: {self.n} usable model(s) of the search's {self.searched}{left}; "
                f"{100 * self.level:g}% intervals need at least {needed(self.level)}; domain axes: "
                f"{', '.join(self.axes)} (flagged beyond {self.threshold:.2g} spans)")


def needed(level: float) -> int:
    """The fewest usable calibration models ``predict`` accepts at ``level``."""
    return max(MIN_MODELS, conformal.min_models(level))


def usable_models(run: FinishedSearch) -> pd.DataFrame:
    """The run's model rows with a finite score on every post-gen metric it ranked and a finite perplexity."""
    rows = run.model_rows
    columns = [c for c in [*run.correlations, PERPLEXITY_BASELINE] if c in rows.columns]
    finite = np.isfinite(rows[columns].to_numpy(np.float64)).all(1)
    return rows[finite].reset_index(drop=True)


def refusal(run: FinishedSearch, n: int, level: float) -> str:
    """One line: too few usable models for ``level``, and where to find a search that can serve."""
    most = conformal.max_level(n) if n >= MIN_MODELS else 0.0
    return (f"--search {run.folder}: {n} usable calibration model(s) (of the search's {len(run.models)}); "
            f"{100 * level:g}% intervals need at least {needed(level)}"
            + (f" ({n} allow at most --level {most:.2f})" if most > 0 else "")
            + ": use a search with more models, e.g. the full demo's (pregen-search demo --out runs/demo: about 20 "
              "usable models), or lower --level")


def _ranked(run: FinishedSearch, post: str, columns) -> list[str]:
    """The search's ranking of ``post`` (best R^2 first), as columns of the model rows."""
    return [name for name in run.correlations[post]["pregen"] if name in columns]


def calibration_set(run: FinishedSearch, pregen: str | None, level: float) -> CalibrationSet:
    """Everything ``predict`` shares across new models; ValueError (``refusal``) with too few models."""
    if not 0 < level < 1:
        raise ValueError(f"--level {level}: must lie strictly between 0 and 1")
    models = usable_models(run)
    if len(models) < needed(level):
        raise ValueError(refusal(run, len(models), level))
    run.chosen(pregen)  # checks --pregen names a metric of the search's space
    candidates, chosen = {}, {}
    for post in run.correlations:
        names = [pregen] if pregen is not None else _ranked(run, post, models.columns)
        x = models[names].to_numpy(np.float64)
        keep = conformal.usable_columns(x)
        if not keep.any():
            continue
        candidates[post] = [name for name, k in zip(names, keep) if k]
        y = models[post].to_numpy(np.float64)
        scaled = conformal.scaled(x[:, keep], x[0, keep])[0]  # no overflow in the products (sum_sum_pplx ~ 1e300)
        chosen[post] = candidates[post][conformal.choose(scaled, y)]
    if not candidates:
        raise ValueError(f"{run.folder}: the search ranked no pre-gen metric against any post-gen metric")
    mean_r2 = pd.concat([run.correlations[p].set_index("pregen")[f"{ALL}_R^2"] for p in candidates], axis=1).mean(1)
    ranked = [name for name in mean_r2.sort_values(ascending=False, kind="stable").index if name in models.columns]
    first = [PERPLEXITY_BASELINE] if PERPLEXITY_BASELINE in models.columns else []
    axes = domain.axes(models, [*first, *chosen.values()], ranked)
    return CalibrationSet(models, len(run.models), run.left_out, candidates, chosen, axes,
                          domain.domain_threshold(models[axes].to_numpy(np.float64)), level)
