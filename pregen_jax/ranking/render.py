"""A ranking as files: correlations_<POSTGEN>.tsv, excluded.tsv and summary.md."""
from __future__ import annotations

from pathlib import Path

from .. import io
from .stats import ALL, PERPLEXITY_BASELINE, Ranking


def summary_markdown(ranking: Ranking, top: int = 10, tokenizer: str | None = None, source: str | None = None,
                     heading: str = "#") -> str:
    """A readable summary: the top metrics per post-gen metric and the perplexity baseline.

    ``heading`` is the markdown level of the title ("##" when it is a section of a report).
    """
    sub = heading + "#"
    lines = [f"{heading} Pre-gen metric ranking", ""]
    if source:
        lines += [f"Source: `{source}`", ""]
    if tokenizer:
        lines += [f"Tokenizer: {tokenizer}", ""]
    total = len(next(iter(ranking.correlations.values()))) if ranking.correlations else 0
    lines.append(f"Ranked {total} pre-gen metrics; left out {len(ranking.excluded)} "
                 f"(inf/NaN or constant in some group of {', '.join(ranking.groups)}).")
    if len(ranking.excluded):
        counts = ranking.excluded["reason"].str.split(" in group").str[0].value_counts()
        lines.append("Left out because: " + "; ".join(f"{k}: {v}" for k, v in counts.items()) + ".")
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


def write_ranking(ranking: Ranking, folder: Path, tokenizer: str, source: str) -> None:
    """Write correlations_<POSTGEN>.tsv (with a ``tokenizer`` column), excluded.tsv and summary.md into ``folder``."""
    folder = Path(folder)
    for post, df in ranking.correlations.items():
        io.write_tsv(df.assign(tokenizer=tokenizer), folder / f"correlations_{post}.tsv")
    io.write_tsv(ranking.excluded, folder / "excluded.tsv")
    io.write_text(summary_markdown(ranking, tokenizer=tokenizer, source=source), folder / "summary.md")


def write_files(folder: Path, outputs: dict, tokenizer: str) -> None:
    """Write ``name -> DataFrame`` (as TSV, with a ``tokenizer`` column) or ``name -> text`` into ``folder``."""
    for name, content in outputs.items():
        if isinstance(content, str):
            io.write_text(content, Path(folder) / name)
        else:
            io.write_tsv(content.assign(tokenizer=tokenizer), Path(folder) / name)
