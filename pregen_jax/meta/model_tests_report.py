"""The pre-gen unit tests as files: pregen_unit_tests.tsv and a report, and the
``fails_meaning_preserving`` flag that ``pregen-search rank --unit-tests`` adds.

Reading a unit-test file and the search report's pass-rate section live with the pipeline's
report (``pipeline.unit_test_results``), which renders them from the run folder's data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..pipeline.unit_test_results import (  # noqa: F401  (read_unit_tests, pass_rates: this module's API too)
    TEST_ORDER,
    TOP,
    UNIT_TESTS_FILE,
    UNIT_TESTS_REPORT,
    pass_rates,
    read_unit_tests,
    top_metrics_table,
)
from .common import markdown_table

MEANING_PRESERVING = "meaning-preserving"
FAIL_BELOW = 50.0   # a metric fails a test when it passes fewer than half of its trials
FLAG_COLUMN = "fails_meaning_preserving"

RULES = [
    "- **temperature** (meaning-preserving): the output layer's kernel and bias divided by T, which is exactly "
    "logits / T; T in {0.5, 2}. Greedy captions (hence their post-gen scores) do not change. One trial per model "
    "and T; it passes when |s_a - s_b| / (|s_a| + 1e-9) <= 0.15 (s_a: the unchanged model, s_b: the corrupted "
    "one; MUTT's rule with |s_a| so that negative metrics are judged too). A metric that is inf or NaN on "
    "either side fails; two zeros pass.",
    "- **shuffled_images** (meaning-altering): the test images' features permuted among them (a seeded random "
    "cycle: no image keeps its own). One trial per model; it passes when the metric gets strictly worse, "
    "'worse' being the sign of its R with CIDEr in the search (a tie fails; +-inf counts as a value, NaN fails).",
    "- **param_noise** (graded): Gaussian noise on every parameter tensor with standard deviation 0.05, 0.1 and "
    "0.2 x that tensor's standard deviation (one seeded draw per model, scaled per level). The levels 0, 0.05, "
    "0.1, 0.2 give 6 pairs per model; a pair is a trial when the CIDEr of the two models' beam captions "
    "differs, and passes when the signed metric moves strictly the way CIDEr does (a metric tie fails; pairs "
    "with equal CIDEr are not trials).",
    "- **early_snapshot** (graded): each earlier snapshot against its final model, from the search's table "
    "(num_strata == 1 rows); the same rule as param_noise.",
    "- Tests other than temperature need a direction: metrics the search left out of the CIDEr ranking (inf, "
    "NaN or constant) have none and are not listed for them.",
]


# ------------------------------------------------------------------ reading a unit-test file


def fails_meaning_preserving(frame: pd.DataFrame) -> dict[str, bool]:
    """pre-gen name -> whether it passes fewer than 50% of the trials of some meaning-preserving test.

    Metrics with no meaning-preserving row (or only tests without trials) are absent.
    """
    rows = frame[(frame["kind"] == MEANING_PRESERVING) & (frame["trials"] > 0)]
    return {name: bool((group["accuracy"] < FAIL_BELOW).any()) for name, group in rows.groupby("pregen", sort=False)}


def flag_correlations(correlations: dict[str, pd.DataFrame], frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each correlations frame with a ``fails_meaning_preserving`` column (True/False; empty where untested)."""
    fails = fails_meaning_preserving(frame)
    return {post: df.assign(**{FLAG_COLUMN: df["pregen"].map(lambda name: fails.get(name))})
            for post, df in correlations.items()}


def add_unit_test_flags(folder, result, frame: pd.DataFrame, source: str, tokenizer: str, table: str,
                        filter0: str | None = None, models_left_out: dict[str, str] | None = None) -> None:
    """``rank --unit-tests``: correlations_<POSTGEN>.tsv in ``folder`` with the flag column, and summary.md
    rendered with the unit-test section (``result``: the ranking of ``table``; ``source``: the unit-test file;
    ``filter0`` and ``models_left_out`` as ``ranking.write_ranking`` takes them)."""
    from ..ranking import summary_markdown
    folder = Path(folder)
    for post, df in flag_correlations(result.correlations, frame).items():
        df = df.assign(tokenizer=tokenizer)
        io.write_tsv(df.assign(filter0=filter0) if filter0 else df, folder / f"correlations_{post}.tsv")
    io.write_text(summary_markdown(result, tokenizer=tokenizer, source=table, filter0=filter0,
                                   models_left_out=models_left_out)
                  + rank_summary_section(result.correlations, frame, source), folder / "summary.md")


def rank_summary_section(correlations: dict[str, pd.DataFrame], frame: pd.DataFrame, source: str,
                         top: int = TOP) -> str:
    """The summary.md section of ``rank --unit-tests``: which top metrics fail a meaning-preserving test."""
    fails = fails_meaning_preserving(frame)
    lines = ["", "## Unit tests", "", f"Source: `{source}`. A metric **fails** a meaning-preserving test when it "
             f"passes fewer than {FAIL_BELOW:.0f}% of its trials (column `{FLAG_COLUMN}` of "
             "correlations_<POSTGEN>.tsv: True/False, empty where the file has no meaning-preserving row for it).", "",
             f"{sum(fails.values())} of {len(fails)} tested metrics fail a meaning-preserving test."]
    for post, df in correlations.items():
        head = df.head(top)
        flagged = [f"`{p}` (rank {k + 1})" for k, p in enumerate(head["pregen"]) if fails.get(p)]
        untested = sum(p not in fails for p in head["pregen"])
        lines.append(f"- {post}: of the top {len(head)}, "
                     + (f"these fail: {', '.join(flagged)}" if flagged else "none fails")
                     + (f"; {untested} untested" if untested else "") + ".")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the command's outputs


def _family_table(frame: pd.DataFrame) -> str:
    """Mean pass rate per test by caption score (tier 2), over the metrics tested."""
    from ..tiers import parse_metric_name
    parts = frame["pregen"].map(parse_metric_name)
    frame = frame.assign(caption_score=[p[2] if p else "?" for p in parts])
    wide = frame.pivot_table(index="caption_score", columns="test", values="accuracy", aggfunc="mean", sort=False)
    tests = [t for t in TEST_ORDER if t in wide.columns]
    return markdown_table(["caption score (tier 2)", *tests],
                          [[name, *[float(wide.at[name, t]) for t in tests]] for name in wide.index])


def _overall_table(frame: pd.DataFrame) -> str:
    rows = []
    for test in [t for t in TEST_ORDER if t in set(frame["test"])]:
        part = frame[frame["test"] == test]
        acc = part["accuracy"]
        rows.append([test, part["kind"].iloc[0], len(part), int(part["trials"].max()), float(acc.mean()),
                     f"{int((acc >= FAIL_BELOW).sum())} of {len(part)}"])
    return markdown_table(["test", "kind", "metrics", "trials per metric", "mean pass rate (%)",
                           f"metrics passing >= {FAIL_BELOW:.0f}%"], rows)


def report_markdown(run, names: list[str], correlations: pd.DataFrame | None) -> str:
    from ..datasets import TOKENIZER
    from . import model_corruptions as mc
    search, frame = run.search, run.table
    greedy = sum(bool(np.all(s.greedy_unchanged)) for s in run.scores)
    unranked = len([n for n in names if n not in search.direction])
    counts = ", ".join(f"{c['computed']} computed / {c['reused']} reused" for c in run.cache_log.values()) or "none"
    lines = [f"# Pre-gen unit tests: {search.config.name}", "",
             f"Search: `{search.folder}`; {len(run.models)} models corrupted "
             f"({', '.join(m.label for m in run.models)}); {len(names)} pre-gen metrics; "
             f"{run.seconds:.0f} s (models: {counts}).", "",
             f"- Tokenizer (references): {TOKENIZER}",
             f"- Seed {run.seed} (noise and shuffles per model: seed and a hash of the model's label); generation as "
             f"the search: beam {search.config.generation.beam_width}, max_len {search.config.generation.max_len}, "
             f"min_len {search.config.generation.min_len}",
             f"- Greedy captions unchanged at every temperature for {greedy} of {len(run.scores)} models",
             f"- {unranked} metrics have no direction (not ranked against CIDEr in the search): tested on "
             "temperature only", ""]
    lines += [f"- {note}" for note in run.notes] + ([""] if run.notes else [])
    lines += ["## Tests and pass rules", "", *RULES, "",
              "## Pass rates of the top metrics", "",
              "Pass rate (trials) per test; rank = by R^2 with CIDEr in the search.", "",
              top_metrics_table(frame, correlations), "",
              "## Over all metrics", "", _overall_table(frame), "",
              "## By caption score", "", _family_table(frame), "",
              "## CIDEr of the corrupted models", "",
              "CIDEr-D of the beam captions on the whole test set, unchanged (noise 0), with parameter noise, and "
              "from shuffled image features.", ""]
    header = ["model", *[f"noise {level:g}" for level in (0.0, *mc.NOISE_LEVELS)], "shuffled"]
    lines += [markdown_table(header, [[m.label, *[f"{c:.4f}" for c in s.cider], f"{float(s.cider_shuffled):.4f}"]
                                      for m, s in zip(run.models, run.scores)]), ""]
    lines += ["## Files", "", f"- `{UNIT_TESTS_FILE}`: test, kind, pregen, trials, passed, accuracy (percent), "
              "tokenizer; one row per test and metric",
              "- `cache/unit_tests/`: per-model scores (reused by a rerun)", ""]
    return "\n".join(lines)


def write_unit_test_outputs(run, names: list[str]) -> None:
    """pregen_unit_tests.tsv and the report: added to the run folder itself (whose report.md is then
    rendered again from its data, the results included), or published in ``run.out``."""
    from ..pipeline.report import rerender_report
    correlations = run.correlations
    text = report_markdown(run, names, correlations)
    if Path(run.out).resolve() == run.search.folder.resolve():
        io.write_tsv(run.table, run.out / UNIT_TESTS_FILE)
        io.write_text(text, run.out / UNIT_TESTS_REPORT)
        rerender_report(run.out)
        return
    with io.staged_folder(run.out, keep=("cache",)) as staging:
        io.write_tsv(run.table, staging / UNIT_TESTS_FILE)
        io.write_text(text, staging / "report.md")
