"""What a search says at the level users decide: which of two models is better.

Beside the strata ranking, every search writes, for its whole-test-set rows (one per model):
pairwise accuracy and Kendall tau of each kept pre-gen metric (``models_<POSTGEN>.tsv``, with
the accuracy on the pairs a paired bootstrap finds significantly different), held-out
selection with groups (``heldout_<POSTGEN>.tsv``), the bootstrap itself
(``significance_<POSTGEN>.tsv``; in ``models_<POSTGEN>.tsv`` as ``all_pairwise_accuracy_significant``
and ``all_pairs_significant``) and the leave-one-model-out error of predicting each
post-gen score from the chosen pre-gen metric (``calibration.tsv``).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..ranking import ALL, PERPLEXITY_BASELINE, calibration, decisions
from .search import SearchResult

BOOTSTRAP_RESAMPLES = 1000


@dataclasses.dataclass
class ModelLevel:
    files: dict[str, pd.DataFrame | str]   # file name -> table or text, for the run folder
    markdown: str                          # the report's section


def significance(result: SearchResult, post: str, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """(one row per model pair, bool[M, M] significant pairs) from a paired bootstrap over test images."""
    scores = np.stack([model.per_image[post] for model in result.models])
    boot = decisions.paired_bootstrap(scores, BOOTSTRAP_RESAMPLES, seed)
    significant = boot.significant()
    rows = []
    for a in range(len(result.models)):
        for b in range(a + 1, len(result.models)):
            rows.append({"model_a": result.models[a].label, "model_b": result.models[b].label,
                         "difference": boot.difference[a, b], "p": boot.p[a, b], "significant": bool(significant[a, b])})
    return pd.DataFrame(rows), significant


def _significant_accuracy(models: pd.DataFrame, correlations: pd.DataFrame, post: str, significant: np.ndarray,
                          group_by: str | None) -> tuple[np.ndarray, int]:
    """Pairwise accuracy of every kept metric over significant pairs (within groups); and their count."""
    pair_mask = significant.copy()
    if group_by:
        groups = models[group_by].to_numpy()
        pair_mask &= groups[:, None] == groups[None, :]
    names = list(correlations["pregen"])
    sign = decisions.signs(correlations[f"{ALL}_R"])
    target = models[post].to_numpy(np.float64)
    accuracy = decisions.pairwise_accuracy(models[names].to_numpy(np.float64), target, sign, pair_mask)
    upper = np.triu(pair_mask, 1) & (target[:, None] != target[None, :])
    return accuracy, int(upper.sum())


def _fmt(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def model_level(result: SearchResult, group_by: str | None, seed: int) -> ModelLevel:
    models = decisions.model_rows(result.table).reset_index(drop=True)
    if len(models) < 3:
        note = f"Only {len(models)} model(s): no model-level validation (it needs at least 3)."
        return ModelLevel({}, "## Does the metric pick the better model?\n\n" + note + "\n")
    correlations = result.ranking.correlations
    # The rank command's tables and text, then what only a search can add: per-image significance.
    files = decisions.decision_outputs(result.table, correlations, group_by)
    body = files["decisions.md"]
    chosen = {post: df["pregen"].iloc[0] for post, df in correlations.items()}
    significant_lines = []
    for post in correlations:
        df = files[f"models_{post}.tsv"]
        pairs, significant = significance(result, post, seed)
        accuracy, count = _significant_accuracy(models, correlations[post], post, significant, group_by)
        by_name = dict(zip(correlations[post]["pregen"], accuracy))
        df[f"{ALL}_pairwise_accuracy_significant"] = df["pregen"].map(by_name)
        df[f"{ALL}_pairs_significant"] = count
        files[f"significance_{post}.tsv"] = pairs
        significant_lines.append(f"| {post} | {count} of {len(pairs)} | `{chosen[post]}` "
                                 f"{_fmt(by_name[chosen[post]])} | {_fmt(by_name.get(PERPLEXITY_BASELINE))} |")
    loo = pd.concat([calibration.loo_table(models, chosen).assign(criterion="best by R^2"),
                     calibration.loo_table(models, {p: PERPLEXITY_BASELINE for p in chosen
                                                    if PERPLEXITY_BASELINE in set(correlations[p]["pregen"])})
                     .assign(criterion="perplexity")], ignore_index=True)
    files["calibration.tsv"] = loo
    extra = [f"## Significant pairs only (paired bootstrap over test images, {BOOTSTRAP_RESAMPLES} resamples, "
             f"seed {seed}, p < 0.05)", "",
             "| post-gen | significant pairs | best metric's accuracy | perplexity's accuracy |", "|---|---|---|---|",
             *significant_lines, "",
             "## Predicting a post-gen score from the pre-gen metric (leave one model out)", "",
             "A line fitted on the other models predicts each model's post-gen score from its pre-gen value "
             "(`pregen-search score` does this for new models):", "",
             loo.to_markdown(index=False, floatfmt=".4f"), ""]
    document = body + "\n" + "\n".join(extra)
    files["decisions.md"] = document
    # In report.md the same text sits one heading level lower.
    section = "\n".join("#" + line if line.startswith("#") else line for line in document.splitlines())
    return ModelLevel(files, section + "\n")
