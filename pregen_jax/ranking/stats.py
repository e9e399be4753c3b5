"""Rank pre-gen metrics by how well they predict post-gen metrics (Pearson R, R^2, p).

All pre-gen columns are correlated at once with array operations; scipy supplies only the
t distribution for the two-sided p-value. Exclusion follows the spec: a pre-gen metric is
dropped from every group when, in any one group, any of its values is +-inf or NaN or it is
constant; the reason is kept. A post-gen metric constant in some group has nothing to be
predicted: it is left out the same way (``Ranking.excluded_postgen``), not an error, so a search
whose one metric does not vary still writes everything else. Data no ranking applies to (too few
rows, no pre-gen metric left) raises ``NotApplicable``: a declared outcome, not a failure.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import stats

ALL = "all"


class NotApplicable(ValueError):
    """A step that does not apply to this data (too few rows, every metric constant, ...): a declared
    outcome that a run reports and goes on from, unlike an unexpected error."""
PERPLEXITY_BASELINE = "geomean_join_pplx_none"


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The result of ``rank``.

    Attributes:
      correlations: post-gen name -> DataFrame with columns ``pregen``, then
        ``<group>_R^2``, ``<group>_R``, ``<group>_p`` per group and for ``all``, sorted by
        ``all_R^2`` descending; excluded metrics are absent.
      excluded: DataFrame with columns ``pregen``, ``reason``.
      groups: the group names in column order (``all`` last).
      group_by: the column that defined the groups, or None.
      excluded_postgen: post-gen name -> why it was not ranked against (constant, inf or too few
        rows in some group); it has no entry in ``correlations``.
      rows_left_out: post-gen name -> how many of its rows are NaN (data points it cannot score),
        which its correlations leave out, the other rows ranked as usual.
    """

    correlations: dict[str, pd.DataFrame]
    excluded: pd.DataFrame
    groups: list[str]
    group_by: str | None = None
    excluded_postgen: dict[str, str] = dataclasses.field(default_factory=dict)
    rows_left_out: dict[str, str] = dataclasses.field(default_factory=dict)


def pearson(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson R and two-sided p of every column of ``x: f[N, C]`` against ``y: f[N]``.

    Returns (r: f[C], p: f[C]). Needs N >= 3 for a p-value (NaN otherwise).
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    n = x.shape[0]
    xc = x - x.mean(0)
    yc = y - y.mean()
    # Scale before multiplying so that very large metrics (sum_sum_pplx ~ 1e300) do not overflow.
    x_scale = np.abs(xc).max(0)
    xs = xc / np.where(x_scale > 0, x_scale, 1.0)
    ys = yc / max(np.abs(yc).max(), 1e-300)
    r = (xs * ys[:, None]).sum(0) / np.sqrt((xs ** 2).sum(0) * (ys ** 2).sum())
    r = np.clip(r, -1.0, 1.0)
    dof = n - 2
    if dof < 1:
        return r, np.full_like(r, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = r * np.sqrt(dof / (1.0 - r ** 2))
    p = 2 * stats.t.sf(np.abs(t), dof)
    return r, np.where(np.abs(r) == 1.0, 0.0, p)


def _exclusions(values: np.ndarray, names: list[str], group_rows: dict[str, np.ndarray]) -> dict[str, str]:
    """pregen name -> reason, for metrics non-finite or constant in some group."""
    reasons: dict[str, str] = {}
    for group, rows in group_rows.items():
        block = values[rows]
        nonfinite = ~np.isfinite(block).all(0)
        with np.errstate(invalid="ignore"):
            constant = ~nonfinite & (block.max(0) == block.min(0))
        for c in np.flatnonzero(nonfinite | constant):
            reasons.setdefault(names[c], f"{'inf or NaN' if nonfinite[c] else 'constant'} in group {group}")
    return reasons


MIN_GROUP_ROWS = 3  # Pearson's p needs one degree of freedom; two points always give R^2 = 1


def group_rows(table: pd.DataFrame, group_by: str | None) -> dict[str, np.ndarray]:
    """Group name -> bool[rows]; ``all`` last. Errors name a group too small to correlate."""
    groups = {}
    if group_by:
        for value in pd.unique(table[group_by]):
            groups[str(value)] = np.asarray(table[group_by] == value)
    groups[ALL] = np.ones(len(table), bool)
    for name, rows in groups.items():
        if rows.sum() < MIN_GROUP_ROWS:
            where = f"group {group_by} = {name}" if name != ALL else "the table"
            raise NotApplicable(f"{where} has {int(rows.sum())} row(s); correlations need at least {MIN_GROUP_ROWS}")
    return groups


def rank(table: pd.DataFrame, postgen: list[str], pregen: list[str], group_by: str | None = None) -> Ranking:
    """Correlate every pre-gen column with every post-gen column, per group and over all rows.

    Args:
      table: one row per data point (model x stratum).
      postgen: post-gen column names (e.g. ["METEOR", "CIDEr"]); its NaN rows (data points it
        cannot score) are left out of its correlations (``rows_left_out``); one with inf, or that does
        not vary within some group, is left out (``excluded_postgen``, with the reason).
      pregen: pre-gen column names; those non-finite or constant in some group are left out
        (the spec's rule), with the reason.
      group_by: optional column whose values define groups (e.g. "dataset"); ``all`` is
        always added as the last group.
    """
    missing = [c for c in [*postgen, *pregen, *([group_by] if group_by else [])] if c not in table.columns]
    if missing:
        raise ValueError(f"table has no column(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    if not pregen:
        raise ValueError("no pre-gen columns to rank")
    if not postgen:
        raise ValueError("no post-gen columns to rank against")
    groups = group_rows(table, group_by)
    targets, excluded_postgen, rows_left_out = {}, {}, {}
    for post in postgen:
        target = table[post].to_numpy(np.float64)
        scored = {group: rows & ~np.isnan(target) for group, rows in groups.items()}
        for group, rows in scored.items():
            if np.isinf(target[rows]).any():
                excluded_postgen.setdefault(post, f"post-gen column {post!r} has inf values (group {group})")
            elif rows.sum() < MIN_GROUP_ROWS:
                excluded_postgen.setdefault(post, f"post-gen column {post!r} has {int(rows.sum())} row(s) that are "
                                                  f"not NaN in group {group}; correlations need {MIN_GROUP_ROWS}")
            elif np.ptp(target[rows]) == 0:
                excluded_postgen.setdefault(post, f"post-gen column {post!r} is constant in group {group}: "
                                                  "nothing to correlate with")
        if post not in excluded_postgen:
            targets[post] = target, scored
        if np.isnan(target).any():
            rows_left_out[post] = (f"{int(np.isnan(target).sum())} of {len(target)} rows NaN (data points {post} "
                                   "cannot score: e.g. a stratum of WMD whose captions have no word with a vector), "
                                   "left out of its correlations")

    values = table[pregen].to_numpy(np.float64)
    reasons = _exclusions(values, list(pregen), groups)
    kept = [c for c, name in enumerate(pregen) if name not in reasons]
    if not kept:
        raise NotApplicable(f"no pre-gen metric left to rank: all {len(pregen)} are inf, NaN or constant in some group "
                         f"of {', '.join(groups)}")
    kept_names = [pregen[c] for c in kept]
    correlations = {}
    for post, (target, scored) in targets.items():
        frame = {"pregen": kept_names}
        for group, rows in scored.items():
            r, p = pearson(values[rows][:, kept], target[rows])
            frame[f"{group}_R^2"] = r ** 2
            frame[f"{group}_R"] = r
            frame[f"{group}_p"] = p
        correlations[post] = (pd.DataFrame(frame).sort_values(f"{ALL}_R^2", ascending=False, kind="stable")
                              .reset_index(drop=True))
    excluded = pd.DataFrame({"pregen": list(reasons), "reason": list(reasons.values())})
    return Ranking(correlations, excluded, list(groups), group_by, excluded_postgen, rows_left_out)


def empty_ranking(group_by: str | None = None, excluded_postgen: dict[str, str] | None = None) -> Ranking:
    """The ranking of a run where ranking did not apply: nothing correlated, nothing excluded."""
    return Ranking({}, pd.DataFrame({"pregen": [], "reason": []}), [ALL], group_by, dict(excluded_postgen or {}))
