"""What ``pregen-search evaluate`` writes and prints; every output names the tokenizer.

- ``scores.json``: one schema for one or several results files (``SCORES_VERSION``): ``systems``,
  system -> metric -> corpus score (each system's mapping is ``COCOEvalCap.eval``), ``signatures``,
  metric -> its signature, the tokenizer and the images scored (docs/reference/outputs.md).
- ``per_image.tsv``: ``image_id`` then one column per metric, as ``evalImgs`` (with ``system``
  when several results files are scored), then ``tokenizer``; full float precision.
- ``significance.tsv`` (several results files): the corpus table with intervals and p-values.
- ``settings.json``: tokenizer, each metric's backend, versions, the JVMs started and which Java,
  the document-frequency rule, the resampling plan.
"""
from __future__ import annotations

import csv
import io as text_io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import io

if TYPE_CHECKING:  # Evaluation.__str__ renders with this module's render
    from .runner import Evaluation


SCORES_VERSION = 2
"""scores.json's schema: 2 since 0.2.0 (before: metric -> score for one results file, results file ->
that mapping for several, with ``tokenizer`` beside them)."""


def scores_json(evaluation: Evaluation) -> dict:
    """scores.json: the same keys for one results file or several."""
    by_system: dict = {system: {} for system in evaluation.systems}
    for row in evaluation.rows():
        by_system[row["system"]][row["metric"]] = float(row["score"])
    return {"version": SCORES_VERSION, "systems": by_system, "signatures": dict(evaluation.signatures),
            "tokenizer": evaluation.settings["tokenizer"], "images_scored": evaluation.settings["images_scored"]}


def write_evaluation(evaluation: Evaluation, staging: Path) -> list[str]:
    """Write the files into ``staging`` (a staged folder); their names."""
    io.write_text(json.dumps(scores_json(evaluation), indent=1) + "\n", staging / "scores.json")
    io.write_text(per_image_tsv(evaluation), staging / "per_image.tsv")
    io.write_text(json.dumps(evaluation.settings, indent=1, default=str) + "\n", staging / "settings.json")
    written = ["scores.json", "per_image.tsv", "settings.json"]
    if len(evaluation.systems) > 1:
        io.write_text(evaluation.table.to_csv(sep="\t", index=False), staging / "significance.tsv")
        written.append("significance.tsv")
    return written


def per_image_tsv(evaluation: Evaluation) -> str:
    """per_image.tsv: ``evaluation.per_image`` with the tokenizer, as ``DataFrame.to_csv(sep="\\t",
    index=False)`` writes it (floats as numpy's shortest repr, NaN empty, cells quoted where they must
    be), without making the frame."""
    several = len(evaluation.systems) > 1
    ids = np.asarray(evaluation.images)
    ids = ids.astype(str) if ids.dtype.kind in "iu" else [str(i) for i in evaluation.images]
    out = text_io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(["image_id", *evaluation.metrics, *(["system"] if several else []), "tokenizer"])
    for system in evaluation.systems:
        columns = [ids, *(_floats(evaluation.scores[system][m]) for m in evaluation.metrics)]
        tail = [system] * several + [evaluation.tokenizer]
        writer.writerows([*cells, *tail] for cells in zip(*columns))
    return out.getvalue()


def _floats(values) -> list[str]:
    """str[n]: f64 values as pandas writes them to CSV (numpy's ``astype(str)``, which is Python's float
    repr, made here by ``repr`` in half the time; NaN as an empty cell)."""
    return ["" if v != v else repr(v) for v in np.asarray(values, np.float64).tolist()]


def render(evaluation: Evaluation) -> str:
    """The corpus table for the terminal: one row per metric and system, in aligned columns (score
    and 95% interval; with several systems, each after the first against the first: ``d``, its
    simultaneous interval, ``p_adj``, ``p_stepdown``, ``p_bs`` and ``p_ar``), then a line saying what
    the numbers are, naming the family of comparisons and its size."""
    systems = evaluation.systems
    settings = evaluation.settings
    lines = [f"tokenizer: {settings['tokenizer']}; {settings['images_scored']} images; "
             f"{settings['document_frequencies']}"]
    rows, shown = [], None
    for r in evaluation.rows():
        row = {"metric": r["metric"] if r["metric"] != shown else "", "system": r["system"],
               "score": f"{r['score']:.4f}",
               "95% interval": f"[{r['low']:.4f}, {r['high']:.4f}]" if _given(r.get("low")) else ""}
        shown = r["metric"]
        if _given(r.get("diff")):
            row.update({"d": f"{r['diff']:+.4f}", "d 95% interval": f"[{r['diff_low']:+.4f}, {r['diff_high']:+.4f}]",
                        "p_adj": f"{r['p_adjusted']:.4f}", "p_stepdown": f"{r['p_stepdown']:.4f}",
                        "p_bs": f"{r['p_bootstrap']:.4f}", "p_ar": f"{r['p_randomization']:.4f}"})
        rows.append(row)
    columns = ["metric", *(["system"] if len(systems) > 1 else []), "score", "95% interval",
               *(["d", "d 95% interval", "p_adj", "p_stepdown", "p_bs", "p_ar"] if len(systems) > 1 else [])]
    lines.extend(aligned_columns(rows, columns, left={"metric", "system"}))
    if len(systems) > 1:
        plan = settings["significance"]
        family = plan["family"]
        size = (f"{family['comparisons']} comparisons" if family["family"] == "all" else
                f"{family['families']} families of {family['family_size']} comparisons")
        lines.append(f"95% BCa bootstrap intervals; d: difference to {systems[0]} with its 95% interval, simultaneous "
                     f"over the family of comparisons: {family['described']} ({size}); the interval excludes 0 exactly "
                     f"when p_adj < 0.05 (single-step max-T on {plan['bootstrap_resamples']} bootstrap resamples "
                     "shared by every system and metric); p_stepdown: step-down max-T over the same family (no "
                     "matching interval); unadjusted: p_bs (paired bootstrap) and p_ar (approximate randomization, "
                     f"{plan['randomization_trials']} trials); seed {plan['seed']}")
    return "\n".join(lines)


def _given(value) -> bool:
    """A cell that applies (not absent, not NaN)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def aligned_columns(rows: list[dict], columns: list[str], left=frozenset()) -> list[str]:
    """``rows`` (column -> text; missing: blank) as lines of columns two spaces apart, each as wide
    as its widest cell or header; ``left`` columns flush left, the others flush right."""
    widths = {c: max([len(c), *(len(row.get(c, "")) for row in rows)]) for c in columns}

    def line(cells: dict) -> str:
        return "  ".join(cells.get(c, "").ljust(widths[c]) if c in left else cells.get(c, "").rjust(widths[c])
                         for c in columns).rstrip()
    return [line({c: c for c in columns}), *(line(row) for row in rows)]
