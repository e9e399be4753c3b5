"""A ranking as files (correlations_<POSTGEN>.tsv, excluded.tsv, summary.md) and the model-level
decisions as files (models_<POSTGEN>.tsv, heldout_<POSTGEN>.tsv, decisions.md): every markdown
and file of ``ranking``; the numbers come from ``stats`` and ``decisions``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import io
from .decisions import decision_tables
from .stats import ALL, PERPLEXITY_BASELINE, Ranking


def summary_markdown(ranking: Ranking, top: int = 10, tokenizer: str | None = None, source: str | None = None,
                     heading: str = "#", models_left_out: dict[str, str] | None = None,
                     filter0: str | None = None) -> str:
    """A readable summary: the top metrics per post-gen metric and the perplexity baseline.

    ``heading`` is the markdown level of the title ("##" when it is a section of a report);
    ``models_left_out``: model label -> why its rows were not ranked (a search's degenerate models);
    ``filter0``: which positions the metrics named ``*_filter0`` keep (``filter0_line``).
    """
    sub = heading + "#"
    lines = [f"{heading} Pre-gen metric ranking", ""]
    if source:
        lines += [f"Source: `{source}`", ""]
    if tokenizer:
        lines += [f"Tokenizer: {tokenizer}", ""]
    if filter0:
        lines += [filter0_line(filter0), ""]
    if models_left_out:
        lines += [f"Models left out, as the search's findings leave them out ({len(models_left_out)}; "
                  "`pregen-search rank --keep-all` keeps them): "
                  + "; ".join(f"`{label}` ({why})" for label, why in models_left_out.items()) + ".", ""]
    total = len(next(iter(ranking.correlations.values()))) if ranking.correlations else 0
    lines.append(f"Ranked {total} pre-gen metrics; left out {len(ranking.excluded)} "
                 f"(inf/NaN or constant in some group of {', '.join(ranking.groups)}).")
    if len(ranking.excluded):
        counts = ranking.excluded["reason"].str.split(" in group").str[0].value_counts()
        lines.append("Left out because: " + "; ".join(f"{k}: {v}" for k, v in counts.items()) + ".")
    for post, why in ranking.excluded_postgen.items():
        lines.append(f"\n**{post} not ranked against:** {why} (listed in `excluded.tsv`).")
    for post, why in ranking.rows_left_out.items():
        lines.append(f"\n**{post}:** {why} (listed in `excluded.tsv`).")
    for post, df in ranking.correlations.items():
        lines += ["", f"{sub} {post}", "", "| rank | pre-gen metric | R^2 (all) | R (all) |", "|---|---|---|---|"]
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


def filter0_line(filter0: str) -> str:
    """One line naming the filter0 semantics (``tiers.FILTER0_SEMANTICS``, or a table's own words)."""
    from ..tiers import FILTER0_SEMANTICS
    return f"filter0: {filter0}" + (f" ({FILTER0_SEMANTICS[filter0]})" if filter0 in FILTER0_SEMANTICS else "")


def excluded_frame(ranking: Ranking, steps: dict[str, str] | None = None,
                   models: dict[str, str] | None = None) -> pd.DataFrame:
    """excluded.tsv: one row per thing left out and why: ``name``, ``kind`` (``pre-gen``, ``post-gen``,
    ``step`` for a step of the run that did not apply or failed, ``model`` for a model whose rows
    were not ranked), ``reason``."""
    rows = [(name, "pre-gen", why) for name, why in zip(ranking.excluded["pregen"], ranking.excluded["reason"])]
    rows += [(name, "post-gen", why) for name, why in ranking.excluded_postgen.items()]
    rows += [(name, "post-gen rows", why) for name, why in ranking.rows_left_out.items()]
    rows += [(name, "step", why) for name, why in (steps or {}).items()]
    rows += [(name, "model", why) for name, why in (models or {}).items()]
    return pd.DataFrame(rows, columns=["name", "kind", "reason"])


def split_excluded(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str], dict[str, str], dict[str, str]]:
    """excluded.tsv read back: (pre-gen exclusions as ``Ranking.excluded``, post-gen name -> why,
    step -> why, post-gen name -> its NaN rows left out). Files written before the ``kind`` column
    hold pre-gen rows only."""
    if "kind" not in frame.columns:
        return frame, {}, {}, {}
    def of(kind):
        return frame[frame["kind"] == kind]
    pre = of("pre-gen")
    excluded = pd.DataFrame({"pregen": pre["name"].astype(str).tolist(), "reason": pre["reason"].astype(str).tolist()})
    return (excluded, dict(zip(of("post-gen")["name"], of("post-gen")["reason"])),
            dict(zip(of("step")["name"], of("step")["reason"])),
            dict(zip(of("post-gen rows")["name"], of("post-gen rows")["reason"])))


def write_ranking(ranking: Ranking, folder: Path, tokenizer: str, source: str,
                  steps: dict[str, str] | None = None, models_left_out: dict[str, str] | None = None,
                  filter0: str | None = None) -> None:
    """Write correlations_<POSTGEN>.tsv (with ``tokenizer`` and, given, ``filter0`` columns), excluded.tsv
    (``excluded_frame``, with ``steps``: step -> why it was not done, and the models left out) and
    summary.md into ``folder``."""
    folder = Path(folder)
    for post, df in ranking.correlations.items():
        io.write_tsv(_labelled(df, tokenizer, filter0), folder / f"correlations_{post}.tsv")
    io.write_tsv(excluded_frame(ranking, steps, models_left_out), folder / "excluded.tsv")
    io.write_text(summary_markdown(ranking, tokenizer=tokenizer, source=source, models_left_out=models_left_out,
                                   filter0=filter0), folder / "summary.md")


def _labelled(df: pd.DataFrame, tokenizer: str, filter0: str | None) -> pd.DataFrame:
    """``df`` with the columns that say how its numbers were made: ``tokenizer``, then ``filter0`` when known."""
    df = df.assign(tokenizer=tokenizer)
    return df.assign(filter0=filter0) if filter0 else df


def write_files(folder: Path, outputs: dict, tokenizer: str, filter0: str | None = None) -> None:
    """Write ``name -> DataFrame`` (as TSV, with a ``tokenizer`` column and, given, a ``filter0`` one)
    or ``name -> text`` into ``folder``."""
    for name, content in outputs.items():
        if isinstance(content, str):
            io.write_text(content, Path(folder) / name)
        else:
            io.write_tsv(_labelled(content, tokenizer, filter0), Path(folder) / name)


def decision_outputs(table: pd.DataFrame, correlations: dict[str, pd.DataFrame],
                     group_by: str | None) -> dict[str, pd.DataFrame | str]:
    """File name -> content for the rank command: ``models_<POSTGEN>.tsv``,
    ``heldout_<POSTGEN>.tsv`` (with groups) and ``decisions.md``."""
    models, heldout = decision_tables(table, correlations, group_by)
    chosen = {post: df["pregen"].iloc[0] for post, df in correlations.items() if len(df)}
    return {**{f"models_{post}.tsv": df for post, df in models.items()},
            **{f"heldout_{post}.tsv": df for post, df in heldout.items()},
            "decisions.md": decisions_markdown(models, heldout, chosen)}


def _fmt(x) -> str:
    return "n/a" if pd.isna(x) else f"{x:.3f}"


def _models_section(post: str, df: pd.DataFrame, chosen: str, baseline: str) -> list[str]:
    groups = [c[: -len("_pairwise_accuracy")] for c in df.columns if c.endswith("_pairwise_accuracy")]
    by_name = df.set_index("pregen")
    has_base = baseline in by_name.index
    lines = ["", f"## {post}: which model of a pair is better?", "",
             f"| group | models | pairs | `{chosen}` accuracy | tau | perplexity accuracy | tau |",
             "|---|---|---|---|---|---|---|"]
    worse = []
    for g in groups:
        c = by_name.loc[chosen]
        b = by_name.loc[baseline] if has_base else None
        base_cells = (f"{_fmt(b[f'{g}_pairwise_accuracy'])} | {_fmt(b[f'{g}_kendall_tau'])}"
                      if has_base else "n/a | n/a")
        lines.append(f"| {g} | {int(c[f'{g}_models'])} | {int(c[f'{g}_pairs'])} | "
                     f"{_fmt(c[f'{g}_pairwise_accuracy'])} | {_fmt(c[f'{g}_kendall_tau'])} | {base_cells} |")
        if has_base and b[f"{g}_pairwise_accuracy"] >= c[f"{g}_pairwise_accuracy"]:
            worse.append(f"{g} ({_fmt(b[f'{g}_pairwise_accuracy'])} vs {_fmt(c[f'{g}_pairwise_accuracy'])})")
    lines.append("")
    if not has_base:
        lines.append(f"Perplexity (`{baseline}`) is not among the ranked metrics; no comparison.")
    elif worse:
        lines.append(f"**Perplexity (`{baseline}`) orders model pairs as well as or better than `{chosen}` in: "
                     f"{', '.join(worse)}.**")
    else:
        lines.append(f"`{chosen}` orders model pairs better than perplexity (`{baseline}`) in every group.")
    top = df.iloc[0]
    lines.append(f"Highest pooled pairwise accuracy among {len(df)} metrics: `{top['pregen']}` "
                 f"({_fmt(top[f'{ALL}_pairwise_accuracy'])}).")
    return lines


def _heldout_section(post: str, df: pd.DataFrame) -> list[str]:
    lines = ["", f"## {post}: leave one group out", "",
             "| held out | selected on the others | selection R^2 | held-out R^2 | held-out pairwise accuracy "
             "| perplexity held-out R^2 | perplexity held-out pairwise accuracy |", "|---|---|---|---|---|---|---|"]
    plain = []
    for _, r in df.iterrows():
        lines.append(f"| {r['held_out']} | `{r['selected']}` | {_fmt(r['selection_R^2'])} | {_fmt(r['heldout_R^2'])} | "
                     f"{_fmt(r['heldout_pairwise_accuracy'])} | {_fmt(r['baseline_heldout_R^2'])} | "
                     f"{_fmt(r['baseline_heldout_pairwise_accuracy'])} |")
        on = [what for what, ours, base in (("R^2", r["heldout_R^2"], r["baseline_heldout_R^2"]),
                                            ("pairwise accuracy", r["heldout_pairwise_accuracy"],
                                             r["baseline_heldout_pairwise_accuracy"])) if base >= ours]
        if on:
            plain.append(f"{r['held_out']} ({' and '.join(on)})")
    lines.append("")
    lines.append(f"**Perplexity does as well as or better than the selected metric on held-out {'; '.join(plain)}.**"
                 if plain else
                 "The selected metric beats perplexity on every held-out group, in R^2 and pairwise accuracy.")
    return lines


def decisions_markdown(models: dict[str, pd.DataFrame], heldout: dict[str, pd.DataFrame],
                       chosen: dict[str, str], baseline: str = PERPLEXITY_BASELINE) -> str:
    """A readable report of both tables; ``chosen``: post-gen -> the metric to compare with
    perplexity (normally the ranking's top metric by R^2 over all strata rows)."""
    lines = ["# Does the metric pick the better model?", "",
             "Model rows only (whole test set, one per model). Pairwise accuracy: over pairs of models in one "
             "group whose post-gen scores differ, the share the pre-gen metric orders the same way after "
             "orienting it by the sign of its R over all strata rows (a pre-gen tie counts 1/2; 0.5 is chance). "
             "`all` pools the groups' pairs; its tau is weighted by their pairs."]
    for post, df in models.items():
        if chosen.get(post) in set(df["pregen"]):
            lines += _models_section(post, df, chosen[post], baseline)
    for post, df in heldout.items():
        lines += _heldout_section(post, df)
    return "\n".join(lines) + "\n"
