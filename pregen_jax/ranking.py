"""Rank pre-gen metrics by how well they predict post-gen metrics (Pearson R, R^2, p).

All pre-gen columns are correlated at once with array operations; scipy supplies only the
t distribution for the two-sided p-value. Exclusion follows the spec: a pre-gen metric is
dropped from every group when, in any one group, any of its values is +-inf or NaN or it is
constant; the reason is kept.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ALL = "all"
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
      skipped_postgen: post-gen name -> why it was not ranked (e.g. all NaN: unavailable).
    """

    correlations: dict[str, pd.DataFrame]
    excluded: pd.DataFrame
    groups: list[str]
    skipped_postgen: dict[str, str]


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


def rank(table: pd.DataFrame, postgen: list[str], pregen: list[str], group_by: str | None = None) -> Ranking:
    """Correlate every pre-gen column with every post-gen column, per group and over all rows.

    Args:
      table: one row per data point (model x stratum).
      postgen: post-gen column names (e.g. ["METEOR", "CIDEr"]).
      pregen: pre-gen column names.
      group_by: optional column whose values define groups (e.g. "dataset"); ``all`` is
        always added as the last group.
    """
    missing = [c for c in [*postgen, *pregen, *([group_by] if group_by else [])] if c not in table.columns]
    if missing:
        raise ValueError(f"table has no column(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    if not pregen:
        raise ValueError("no pre-gen columns to rank")
    if len(table) < 3:
        raise ValueError(f"need at least 3 rows (data points) to correlate, got {len(table)}")
    group_rows = {}
    if group_by:
        for value in pd.unique(table[group_by]):
            group_rows[str(value)] = np.asarray(table[group_by] == value)
    group_rows[ALL] = np.ones(len(table), bool)

    values = table[pregen].to_numpy(np.float64)
    reasons = _exclusions(values, list(pregen), group_rows)
    kept = [c for c, name in enumerate(pregen) if name not in reasons]
    kept_names = [pregen[c] for c in kept]

    correlations, skipped = {}, {}
    for post in postgen:
        target = table[post].to_numpy(np.float64)
        bad = [g for g, rows in group_rows.items()
               if not np.isfinite(target[rows]).all() or np.ptp(target[rows]) == 0]
        if bad:
            skipped[post] = f"{post} is NaN, inf or constant in group(s) {', '.join(bad)} (metric unavailable?)"
            continue
        frame = {"pregen": kept_names}
        for group, rows in group_rows.items():
            r, p = pearson(values[rows][:, kept], target[rows])
            frame[f"{group}_R^2"] = r ** 2
            frame[f"{group}_R"] = r
            frame[f"{group}_p"] = p
        df = pd.DataFrame(frame).sort_values(f"{ALL}_R^2", ascending=False, kind="stable").reset_index(drop=True)
        correlations[post] = df
    excluded = pd.DataFrame({"pregen": list(reasons), "reason": list(reasons.values())})
    return Ranking(correlations, excluded, list(group_rows), skipped)


def summary_markdown(ranking: Ranking, top: int = 10, tokenizer: str | None = None) -> str:
    """A readable summary: the top metrics per post-gen metric and the perplexity baseline."""
    lines = ["# Pre-gen metric ranking", ""]
    if tokenizer:
        lines += [f"Tokenizer: {tokenizer}", ""]
    total = sum(len(df) for df in ranking.correlations.values()) // max(len(ranking.correlations), 1)
    lines.append(f"Ranked {total} pre-gen metrics; left out {len(ranking.excluded)} "
                 f"(inf/NaN or constant in some group of {', '.join(ranking.groups)}).")
    if len(ranking.excluded):
        counts = ranking.excluded["reason"].str.split(" in group").str[0].value_counts()
        lines.append("Left out because: " + "; ".join(f"{k}: {v}" for k, v in counts.items()) + ".")
    for post, why in ranking.skipped_postgen.items():
        lines.append(f"Not ranked against {post}: {why}.")
    for post, df in ranking.correlations.items():
        lines += ["", f"## {post}", "", "| rank | pre-gen metric | R^2 (all) | R (all) |", "|---|---|---|---|"]
        for i, row in df.head(top).iterrows():
            lines.append(f"| {i + 1} | `{row['pregen']}` | {row[f'{ALL}_R^2']:.3f} | {row[f'{ALL}_R']:+.3f} |")
        base = df.index[df["pregen"] == PERPLEXITY_BASELINE]
        if len(base):
            row = df.loc[base[0]]
            lines.append(f"\nPerplexity baseline `{PERPLEXITY_BASELINE}`: R^2 = {row[f'{ALL}_R^2']:.3f} "
                         f"(rank {base[0] + 1} of {len(df)}).")
        elif PERPLEXITY_BASELINE in set(ranking.excluded["pregen"]):
            why = ranking.excluded.set_index("pregen").loc[PERPLEXITY_BASELINE, "reason"]
            lines.append(f"\nPerplexity baseline `{PERPLEXITY_BASELINE}`: left out ({why}).")
    return "\n".join(lines) + "\n"


def write_ranking(result, out: Path, tokenizer: str, source: str) -> None:
    """Write correlations_<POSTGEN>.tsv, excluded.tsv and summary.md into ``out``.

    Everything is written into a temporary folder beside ``out`` first and moved in at the
    end, so a failure leaves no partial output.
    """
    from . import tables

    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".staging-"))
    try:
        for post, df in result.correlations.items():
            tables.write_tsv_atomic(df.assign(tokenizer=tokenizer), staging / f"correlations_{post}.tsv")
        tables.write_tsv_atomic(result.excluded, staging / "excluded.tsv")
        summary = summary_markdown(result, tokenizer=tokenizer)
        summary = summary.replace("# Pre-gen metric ranking\n", f"# Pre-gen metric ranking\n\nSource: `{source}`\n", 1)
        tables.write_text_atomic(summary, staging / "summary.md")
        for path in staging.iterdir():
            path.replace(out / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
