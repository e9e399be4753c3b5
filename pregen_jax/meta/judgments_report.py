"""The human-judgment run and its outputs: judgments.tsv and report.md (our taus beside CLIPScore's
Table 1). Above ``judgments`` (reading, pairing, correlating), which never imports this module."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..datasets import TOKENIZER, TOKENIZER_NAME
from .common import markdown_table, open_metrics, requested_metrics, score_candidates
from .judgments import (
    COLUMNS,
    CROWDFLOWER,
    EXPERT,
    REMOVAL_RULES,
    correlate,
    read_flickr8k_judgments,
    variant_label,
)
from .published import CLIPSCORE_TABLE1

PROTOCOL = """\
## How the scores are computed

- Candidates and references are tokenised with {tokenizer}; every metric sees the same tokens.
- Per dataset and reference rule, each metric runs once over all the judged pairs: one corpus
  call in which every pair is its own entry (keyed by pair), and a pair's score is the per-image
  score pycocoevalcap reports (BLEU-n: per-sentence BLEU with closest-reference brevity penalty and
  pycocoevalcap's 1e-9 / 1e-15 guards in place of smoothing; METEOR 1.5 segment score; ROUGE-L F;
  CIDEr-D). CIDEr-D's document frequencies therefore come from the references of all the pairs
  (an image judged with m captions counts m times). WMD: exp(-WMD) to the best reference, GloVe 6B
  50d, without the 2018 stop words.
- Flickr8k-Expert: {expert_left_out} of {expert_all} pairs are left out because the caption is one of the
  judged image's own five; the remaining {expert_pairs} pairs give {expert_rows} rows (each of the three
  expert scores its own row, the metric score repeated); Kendall tau-c.
- Flickr8k-CrowdFlower: {crowd_pairs} pairs; the human score is the share of "yes". {crowd_own} candidates are
  one of the image's own captions (same caption id, or the same tokens as one of them). Variant `tau-b`:
  such a candidate is removed from its own pair's references only. `tau-b, own caption removed
  image-wide`: removed from the references of every pair of that image, which is what CLIPScore's
  preprocessing (download.py, one shared reference list per image) does. `tau-b, own caption kept`:
  not removed, to show how much the self-reference inflates the correlation.
"""

DIFFERENCES = """\
## Why the numbers can differ from the published ones

- Tokenisation: CLIPScore runs coco-caption's PTB tokenizer (`t-shirt` one token, `dog's` ->
  `dog 's`); here alnum-lower (`t shirt`, `dog s`).
- Pairs vs rows: CLIPScore keys its single corpus call by judgment row (three entries per Expert
  pair). For every metric except CIDEr-D that changes nothing (a pair's score depends on its own
  references alone); for CIDEr-D the document frequencies scale by three, so reference n-grams get
  the same idf, and only candidate n-grams found in no reference get a different weight
  (log(3N) instead of log N).
- CrowdFlower references: CLIPScore's removal is image-wide (see above); compare with that row.
- BLEU: per-sentence scores, as CLIPScore; pycocoevalcap's tiny constants keep a BLEU-4 with no
  4-gram match slightly above zero and ordered, which Kendall's tau sees.
- SPICE needs Stanford CoreNLP, not available here.
"""


def comparison_rows(table: pd.DataFrame) -> list[list]:
    """[dataset, metric, variant, ours x100, published x100, difference] per row of ``table``."""
    rows = []
    for r in table.itertuples():
        published = CLIPSCORE_TABLE1.get((r.dataset, r.metric), np.nan)
        rows.append([r.dataset, r.metric, r.variant, r.pairs, 100 * r.tau, published,
                     round(100 * r.tau - published, 1) + 0.0])  # + 0.0: no "-0.0"
    for (dataset, metric), value in CLIPSCORE_TABLE1.items():
        if not ((table["dataset"] == dataset) & (table["metric"] == metric)).any():
            rows.append([dataset, metric, "-", 0, np.nan, value, np.nan])
    return rows


def judgments_report(table: pd.DataFrame, counts: dict[str, int], unavailable: dict[str, str], folder: Path,
                     seconds: float) -> str:
    lines = ["# Kendall correlation of the post-gen metrics with Flickr8k human judgments", "",
             f"- Data: `{folder}` (Flickr8k.token.txt, ExpertAnnotations.txt, CrowdFlowerAnnotations.txt); the "
             "references of a judged image are its captions in Flickr8k.token.txt, whatever split it is in.",
             f"- Tokenizer: {TOKENIZER_NAME}. Published: CLIPScore (Hessel et al. 2021), Table 1 (x100).",
             *[f"- {name} unavailable: {why}." for name, why in unavailable.items()],
             f"- Run time: {seconds:.0f} s.", ""]
    for dataset in (EXPERT, CROWDFLOWER):
        rows = [r for r in comparison_rows(table) if r[0] == dataset]
        lines += [f"## {dataset}", "",
                  markdown_table(["metric", "variant", "pairs", "ours (tau x 100)", "published", "ours - published"],
                                 [r[1:] for r in rows]), ""]
    lines.append(PROTOCOL.format(tokenizer=f"{TOKENIZER_NAME} (`{TOKENIZER.split(': ', 1)[1]}`)",
                                 expert_all=counts["expert_pairs"] + counts["expert_left_out"], **counts))
    lines.append(DIFFERENCES)
    lines += _agreement(table)
    return "\n".join(lines)


def _agreement(table: pd.DataFrame) -> list[str]:
    """One line per variant: how far our taus are from the published ones, where both exist."""
    rows = [r for r in comparison_rows(table) if np.isfinite(r[4]) and np.isfinite(r[5])]
    lines = []
    for dataset, variant in dict.fromkeys((r[0], r[2]) for r in rows):
        diffs = [(r[1], r[6]) for r in rows if r[0] == dataset and r[2] == variant]
        lines.append(f"- {dataset}, {variant}: ours - published = "
                     + ", ".join(f"{m} {d:+.1f}" for m, d in diffs)
                     + f" (largest absolute difference {max(abs(d) for _, d in diffs):.1f} points).")
    return ["## Agreement with the published numbers", "", *lines, ""] if lines else []


def write_judgment_outputs(folder: Path, table: pd.DataFrame, counts: dict[str, int], unavailable: dict[str, str],
                           data: Path, seconds: float) -> None:
    io.write_text(table.to_csv(sep="\t", index=False, float_format="%.6f"), folder / "judgments.tsv")
    io.write_text(judgments_report(table, counts, unavailable, Path(data), seconds), folder / "report.md")


@dataclasses.dataclass
class JudgmentsRun:
    table: pd.DataFrame
    unavailable: dict[str, str]
    out: Path
    seconds: float
    counts: dict[str, int]


def run_judgments(out, flickr8k=None, metrics: str | None = None,
                  progress: Callable[[str], None] | None = None) -> JudgmentsRun:
    """Score every judged pair with every requested metric; write judgments.tsv and report.md."""
    start = time.perf_counter()
    io.check_out_folder(out)  # before any work
    folder = Path(flickr8k) if flickr8k else io.shared_data("flickr8k")
    names = requested_metrics(metrics)
    expert, crowd = read_flickr8k_judgments(folder)
    rows, memo = [], {}
    with open_metrics(names) as metric_set:
        if not metric_set.metrics:
            raise ValueError(f"--metrics: none of {names} can run here ({metric_set.unavailable})")
        for pairs, removal in ((expert, None), *((crowd[rule], rule) for rule in REMOVAL_RULES)):
            t0 = time.perf_counter()
            scores = score_candidates(metric_set, pairs.references, pairs.candidates, memo)
            rows += correlate(pairs, scores, variant_label(pairs, removal))
            if progress:
                progress(f"{variant_label(pairs, removal)} {pairs.dataset}: {len(pairs)} pairs "
                         f"({time.perf_counter() - t0:.0f} s)")
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    seconds = time.perf_counter() - start
    counts = {"expert_pairs": len(expert), "expert_rows": int(expert.human.size), "expert_left_out": expert.left_out,
              "crowd_pairs": len(crowd["pair"]), "crowd_own": crowd["pair"].own}
    with io.staged_folder(out) as stage:
        write_judgment_outputs(stage, table, counts, metric_set.unavailable, folder, seconds)
    return JudgmentsRun(table, metric_set.unavailable, Path(out), seconds, counts)
