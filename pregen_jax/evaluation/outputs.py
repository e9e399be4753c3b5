"""What ``pregen-search evaluate`` writes and prints; every output names the tokenizer.

- ``scores.json``: metric -> corpus score, as ``COCOEvalCap.eval`` (one results file), or results
  file -> that mapping (several), with ``"tokenizer"`` beside them.
- ``per_image.tsv``: ``image_id`` then one column per metric, as ``evalImgs`` (with ``system``
  when several results files are scored), then ``tokenizer``; full float precision.
- ``significance.tsv`` (several results files): the corpus table with intervals and p-values.
- ``settings.json``: tokenizer, each metric's backend, versions, the JVMs started and which Java,
  the document-frequency rule, the resampling plan.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import io
from .runner import Evaluation


def scores_json(evaluation: Evaluation) -> dict:
    table = evaluation.table
    by_system = {system: dict(zip(rows["metric"], map(float, rows["score"])))
                 for system, rows in table.groupby("system", sort=False)}
    scores = next(iter(by_system.values())) if len(by_system) == 1 else by_system
    return {**scores, "tokenizer": evaluation.settings["tokenizer"]}


def write_evaluation(evaluation: Evaluation, staging: Path) -> list[str]:
    """Write the files into ``staging`` (a staged folder); their names."""
    io.write_text(json.dumps(scores_json(evaluation), indent=1) + "\n", staging / "scores.json")
    frame = evaluation.per_image.assign(tokenizer=evaluation.table["tokenizer"].iloc[0])
    io.write_text(frame.to_csv(sep="\t", index=False), staging / "per_image.tsv")  # repr precision, not %.10g
    io.write_text(json.dumps(evaluation.settings, indent=1, default=str) + "\n", staging / "settings.json")
    written = ["scores.json", "per_image.tsv", "settings.json"]
    if evaluation.table["system"].nunique() > 1:
        io.write_text(evaluation.table.to_csv(sep="\t", index=False), staging / "significance.tsv")
        written.append("significance.tsv")
    return written


def render(evaluation: Evaluation) -> str:
    """The corpus table for the terminal: one row per metric, one column block per system."""
    table = evaluation.table
    systems = list(dict.fromkeys(table["system"]))
    lines = [f"tokenizer: {evaluation.settings['tokenizer']}; {evaluation.settings['images_scored']} images; "
             f"{evaluation.settings['document_frequencies']}"]
    rows = []
    for metric, group in table.groupby("metric", sort=False):
        row = {"metric": metric}
        for _, r in group.iterrows():
            cell = f"{r['score']:.4f}"
            if pd.notna(r["low"]):
                cell += f" [{r['low']:.4f}, {r['high']:.4f}]"
            if pd.notna(r.get("diff")):
                cell += (f"  d={r['diff']:+.4f} [{r['diff_low']:+.4f}, {r['diff_high']:+.4f}] "
                         f"p_bs={r['p_bootstrap']:.4f} p_holm={r['p_holm']:.4f} p_ar={r['p_randomization']:.4f}")
            row[r["system"]] = cell
        rows.append(row)
    lines.append(pd.DataFrame(rows, columns=["metric", *systems]).to_string(index=False))
    if len(systems) > 1:
        plan = evaluation.settings["significance"]
        lines.append(f"95% BCa bootstrap intervals; d: difference to {systems[0]} with the 95% interval of the "
                     f"paired bootstrap test p_bs ({plan['bootstrap_resamples']} resamples); p_holm: p_bs Holm-adjusted "
                     f"over the {len(systems) - 1} comparison(s) with {systems[0]} per metric; p_ar: approximate "
                     f"randomization ({plan['randomization_trials']} trials), unadjusted; seed {plan['seed']}")
    return "\n".join(lines)
