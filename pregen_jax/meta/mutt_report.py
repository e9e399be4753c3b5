"""The MUTT run and its outputs: mutt.tsv, mutt_heatmap.png and report.md (with MUTT's own numbers
beside ours). Above ``mutt`` (reading and scoring the sets), which never imports this module."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..datasets import TOKENIZER, TOKENIZER_NAME
from .common import markdown_table, open_metrics, requested_metrics
from .mutt import (
    DEFAULT_KS,
    FLUENCY,
    MEANING_ALTERING,
    MEANING_PRESERVING,
    TOLERANCE,
    MuttSet,
    parse_ks,
    read_mutt,
    score_mutt,
)
from .plots import accuracy_grid, mutt_heatmap
from .published import MUTT_KS, MUTT_PAPER, MUTT_REPO

KIND_ORDER = (MEANING_ALTERING, MEANING_PRESERVING, FLUENCY)


def summary_by_kind(table: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over the corruptions of each kind (and over all), per metric and k."""
    by_kind = table.pivot_table(index=["metric", "refs"], columns="kind", values="accuracy", aggfunc="mean")
    by_kind["all"] = table.groupby(["metric", "refs"])["accuracy"].mean()
    metrics = list(dict.fromkeys(table["metric"]))
    by_kind = by_kind.reindex(columns=[k for k in (*KIND_ORDER, "all") if k in by_kind.columns])
    return by_kind.reindex(sorted(by_kind.index, key=lambda mk: (metrics.index(mk[0]), mk[1])))


def comparison(table: pd.DataFrame) -> pd.DataFrame:
    """Ours beside MUTT's repository file and paper, for every (corruption, metric, k) they report."""
    rows = []
    for row in table.itertuples():
        if row.refs not in MUTT_KS:
            continue
        at = MUTT_KS.index(row.refs)
        repo = MUTT_REPO.get((row.corruption, row.metric))
        paper = MUTT_PAPER.get((row.corruption, row.metric))
        if repo or paper:
            rows.append({"corruption": row.corruption, "metric": row.metric, "refs": row.refs, "ours": row.accuracy,
                         "repo": repo[at] if repo else np.nan, "paper": paper[at] if paper else np.nan})
    return pd.DataFrame(rows, columns=["corruption", "metric", "refs", "ours", "repo", "paper"])


def _comparison_section(table: pd.DataFrame, sets: list[MuttSet]) -> list[str]:
    comp = comparison(table)
    counts = {s.corruption: len(s.originals) for s in sets}
    here = ", ".join(f"{c} {counts[c]}" for c in ("passive", "neg_verb", "neg_subj", "double_PP", "remove_prep")
                     if c in counts)
    dropped = sum(n for s in sets for n in s.dropped.values())
    if comp.empty:
        return []
    lines = ["## Beside MUTT's own numbers", "",
             "`repo`: `results/coco.txt` of github.com/text-machine-lab/MUTT at commit 455f4be, scored by the "
             "MUTT authors on these very test sets with coco-caption (PTB tokenizer). `paper`: Boag et al. (2016) "
             "Tables 4-6 (BLEU there is BLEU-4), computed on an earlier version of the sets (their item counts "
             "differ: passive 238, neg_verb 202, neg_subj 337, double_PP and remove_prep 500; here: "
             f"{here or 'none of these'}), so `repo` is the like-for-like comparison. Differences in "
             "points, ours minus theirs:", ""]
    comp["d_repo"] = comp["ours"] - comp["repo"]
    comp["d_paper"] = comp["ours"] - comp["paper"]
    per_metric = comp.groupby("metric", sort=False).agg(
        cells=("d_repo", "count"), mean_abs_vs_repo=("d_repo", lambda d: d.abs().mean()),
        max_abs_vs_repo=("d_repo", lambda d: d.abs().max()), within_2=("d_repo", lambda d: int((d.abs() <= 2).sum())),
        mean_abs_vs_paper=("d_paper", lambda d: d.abs().mean()))
    lines.append(markdown_table(
        ["metric", "cells vs repo", "mean abs diff vs repo", "max abs diff vs repo", "cells within 2 points",
         "mean abs diff vs paper"],
        [[m, int(r.cells), r.mean_abs_vs_repo, r.max_abs_vs_repo, int(r.within_2), r.mean_abs_vs_paper]
         for m, r in per_metric.iterrows()]))
    worst = comp.dropna(subset=["d_repo"]).reindex(comp["d_repo"].abs().sort_values(ascending=False).index)
    worst = worst.dropna(subset=["d_repo"]).head(12)
    lines += ["", "The largest differences from the repository numbers:", "",
              markdown_table(["corruption", "metric", "k", "ours", "repo", "paper"],
                             [[r.corruption, r.metric, r.refs, r.ours, r.repo, r.paper] for r in worst.itertuples()]),
              "", "Known sources of difference: tokenisation (coco-caption's PTB tokenizer keeps `make-up` as one "
              "token and splits `boat's` into `boat 's`; alnum-lower gives `make up` and `boat s`); how ties are read (here a tie fails a meaning-altering or fluency trial, as in MUTT's "
              "`a > b`); "
              f"{dropped} reference(s) empty after tokenisation, left out here (coco-caption keeps an empty string); "
              "for CIDEr-D the document frequencies come from the set's own references in both. The full "
              "per-cell comparison is in the table below.", ""]
    full = comp.pivot_table(index=["corruption", "metric"], columns="refs", values=["ours", "repo", "paper"],
                            sort=False)
    ks = sorted(comp["refs"].unique())
    header = ["corruption", "metric"] + [f"k={k}: ours / repo / paper" for k in ks]
    body = []
    for (corruption, metric), r in full.iterrows():
        cells = []
        for k in ks:
            values = [r.get((col, k), np.nan) for col in ("ours", "repo", "paper")]
            cells.append(" / ".join("-" if not np.isfinite(v) else f"{v:.1f}" for v in values))
        body.append([corruption, metric, *cells])
    lines += [markdown_table(header, body), ""]
    return lines


def mutt_report(table: pd.DataFrame, sets: list[MuttSet], unavailable: dict[str, str], data: Path,
                seconds: float, wmd_stopwords=frozenset()) -> str:
    """report.md: settings, accuracy per k, the summary per metric, and MUTT's own numbers beside ours."""
    ks = sorted(table["refs"].unique())
    metrics = list(dict.fromkeys(table["metric"]))
    corruptions = [s.corruption for s in sets]
    prefix = [s.prefix_consistent for s in sets if s.prefix_consistent is not None]
    dropped = [f"{s.corruption} (k={k}): {n}" for s in sets for k, n in s.dropped.items() if n]
    lines = ["# MUTT: metric unit tests of the post-gen metrics", "",
             f"- Data: `{data}`: {len(sets)} corruptions, {sum(len(s.originals) for s in sets)} trials per metric "
             f"and k.",
             f"- Tokenizer: {TOKENIZER_NAME} (`{TOKENIZER.split(': ', 1)[1]}`), the same for originals, "
             "corruptions and references; scores on each toolkit's native scale.",
             f"- References: the first k references of each item, read from `<corruption>_r<k>.json` for k in "
             f"{', '.join(map(str, ks))}. "
             + ("Every smaller file's list is the start of the largest file's list for every item (checked), so "
                f"this is the same as the first k of the r{max(ks)} list." if prefix and all(prefix) else
                "" if not prefix else
                f"The smaller files are NOT the start of the r{max(ks)} lists for every item (checked)."),
             "- Empty references after tokenisation, left out: " + ("; ".join(dropped) if dropped else "none") + ".",
             "- Scoring: the originals (a) and the corruptions (b) in two separate calls of each metric against the "
             "same references, as MUTT did (CIDEr-D's document frequencies come from that set's references); a "
             "sentence's score is the per-image score pycocoevalcap reports (BLEU-n: per-sentence BLEU with "
             "closest-reference brevity penalty; METEOR 1.5 segment score; ROUGE-L F; CIDEr-D); WMD is "
             "exp(-WMD) to the best reference over GloVe 6B 50d without the 2018 stop words.",
             f"- Pass rules: meaning-altering and fluency corruptions pass when s_a > s_b (a tie fails); "
             f"meaning-preserving ones when |s_a - s_b| / (s_a + 1e-9) <= {TOLERANCE} (two zeros pass).",
             *[f"- {name} unavailable: {why}." for name, why in unavailable.items()],
             f"- Run time: {seconds:.0f} s (all metrics, all k).", ""]
    for k in ks:
        grid = accuracy_grid(table, k, corruptions, metrics)
        lines += [f"## Accuracy (% of trials passed), {k} references", "",
                  markdown_table(["corruption", "kind", "trials", *metrics],
                                 [[s.corruption, s.kind, len(s.originals), *row] for s, row in zip(sets, grid)]), ""]
    dropped_words = [w for w in ("no", "not", "there", "a", "the", "is", "being", "by") if w in wmd_stopwords]
    if "WMD" in metrics and dropped_words:
        lines += ["WMD compares bags of content words, and the stop words it drops include "
                  + ", ".join(f"`{w}`" for w in dropped_words) + ": negation, determiner substitution and "
                  "re-ordering can leave its score unchanged (a tie, which fails the strict rule and passes the "
                  "15% rule).", ""]
    summary = summary_by_kind(table)
    lines += ["## Mean accuracy per metric (mean over the corruptions of each kind)", "",
              markdown_table(["metric", "k", *summary.columns],
                             [[m, k, *row] for (m, k), row in zip(summary.index, summary.to_numpy())]), ""]
    lines += _comparison_section(table, sets)
    return "\n".join(lines) + "\n"


def write_mutt_outputs(folder: Path, table: pd.DataFrame, sets: list[MuttSet], unavailable: dict[str, str],
                       data: Path, seconds: float, wmd_stopwords=frozenset()) -> None:
    io.write_text(table.to_csv(sep="\t", index=False, float_format="%.4f"), folder / "mutt.tsv")
    mutt_heatmap(table, folder / "mutt_heatmap.png",
                 f"MUTT accuracy per corruption and metric (tokenizer: {TOKENIZER_NAME})")
    io.write_text(mutt_report(table, sets, unavailable, Path(data), seconds, wmd_stopwords), folder / "report.md")


@dataclasses.dataclass
class MuttRun:
    table: pd.DataFrame
    unavailable: dict[str, str]
    out: Path
    seconds: float


def run_mutt(out, data=None, ks=DEFAULT_KS, metrics: str | None = None,
             progress: Callable[[str], None] | None = None) -> MuttRun:
    """Read the MUTT sets, score them with every requested metric, write mutt.tsv, the heatmap and report.md.

    Bad input is a ValueError before any metric starts; nothing is written to ``out`` then.
    """
    start = time.perf_counter()
    io.check_out_folder(out)  # before any work
    data = Path(data) if data else io.shared_data("mutt")
    ks, names = parse_ks(ks), requested_metrics(metrics)
    sets = read_mutt(data, ks)
    with open_metrics(names) as metric_set:
        if not metric_set.metrics:
            raise ValueError(f"--metrics: none of {names} can run here ({metric_set.unavailable})")
        table = score_mutt(sets, metric_set, progress)
        stopwords = next((m.stopwords for m in metric_set.metrics if m.name == "WMD"), frozenset())
    seconds = time.perf_counter() - start
    with io.staged_folder(out) as stage:
        write_mutt_outputs(stage, table, sets, metric_set.unavailable, data, seconds, stopwords)
    return MuttRun(table, metric_set.unavailable, Path(out), seconds)
