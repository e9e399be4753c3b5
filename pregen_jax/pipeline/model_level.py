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

from ..ranking import ALL, PERPLEXITY_BASELINE, NotApplicable, calibration, decisions, render
from .search import SearchResult

BOOTSTRAP_RESAMPLES = 1000


@dataclasses.dataclass
class ModelLevel:
    files: dict[str, pd.DataFrame | str]   # file name -> table or text, for the run folder
    markdown: str                          # the report's section


def significance(result: SearchResult, post: str, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """(one row per model pair, bool[M, M] significant pairs) from a paired bootstrap over test images."""
    models = result.findings_models
    scores = np.stack([model.per_image[post] for model in models])
    boot = decisions.paired_bootstrap(scores, BOOTSTRAP_RESAMPLES, seed)
    significant = boot.significant()
    rows = []
    for a in range(len(models)):
        for b in range(a + 1, len(models)):
            rows.append({"model_a": models[a].label, "model_b": models[b].label,
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
    table = result.findings_table
    models = decisions.model_rows(table).reset_index(drop=True)
    if len(models) < 3:
        raise NotApplicable(f"only {len(models)} model(s): model-level validation needs at least 3")
    correlations = result.ranking.correlations
    if not correlations:
        raise NotApplicable("no post-gen metric was ranked against, so no metric was chosen to validate")
    # Each step below may be impossible for this data (a metric constant across the models, say):
    # it then says why in the report, and the table and every other output are still written.
    # The rank command's tables and text, then what only a search can add: per-image significance.
    try:
        files = render.decision_outputs(table, correlations, group_by)
        body = files["decisions.md"]
    except ValueError as err:
        files, body = {}, ("# Does the metric pick the better model?\n\n"
                           f"Not done for this data: {' '.join(str(err).split())}.\n")
    chosen = {post: df["pregen"].iloc[0] for post, df in correlations.items()}
    significant_lines = []
    for post in correlations:
        try:
            pairs, significant = significance(result, post, seed)
            accuracy, count = _significant_accuracy(models, correlations[post], post, significant, group_by)
        except ValueError as err:
            significant_lines.append(f"| {post} | not done: {' '.join(str(err).split())} | | |")
            continue
        by_name = dict(zip(correlations[post]["pregen"], accuracy))
        if f"models_{post}.tsv" in files:
            df = files[f"models_{post}.tsv"]
            df[f"{ALL}_pairwise_accuracy_significant"] = df["pregen"].map(by_name)
            df[f"{ALL}_pairs_significant"] = count
        files[f"significance_{post}.tsv"] = pairs
        significant_lines.append(f"| {post} | {count} of {len(pairs)} | `{chosen[post]}` "
                                 f"{_fmt(by_name[chosen[post]])} | {_fmt(by_name.get(PERPLEXITY_BASELINE))} |")
    loo, not_calibrated = _calibration(models, correlations, chosen)
    if len(loo):
        files["calibration.tsv"] = loo
    extra = [f"## Significant pairs only (paired bootstrap over test images, {BOOTSTRAP_RESAMPLES} resamples, "
             f"seed {seed}, p < 0.05)", "",
             "| post-gen | significant pairs | best metric's accuracy | perplexity's accuracy |", "|---|---|---|---|",
             *significant_lines, "",
             "## Predicting a post-gen score from the pre-gen metric (leave one model out)", "",
             "A line fitted on the other models predicts each model's post-gen score from its pre-gen value "
             "(`pregen-search predict` does this for new models):", "",
             loo.to_markdown(index=False, floatfmt=".4f") if len(loo) else "No line could be fitted.", "",
             *(f"- Not calibrated: {note}." for note in not_calibrated), ""]
    document = body + "\n" + "\n".join(extra)
    files["decisions.md"] = document
    # In report.md the same text sits one heading level lower.
    section = "\n".join("#" + line if line.startswith("#") else line for line in document.splitlines())
    return ModelLevel(files, section + "\n")


def _calibration(models: pd.DataFrame, correlations: dict, chosen: dict) -> tuple[pd.DataFrame, list[str]]:
    """The leave-one-model-out table of every (post-gen, pre-gen) pair that can be calibrated, and a
    note for each that cannot (a pre-gen metric constant across the models, say)."""
    criteria = {"best by R^2": chosen,
                "perplexity": {p: PERPLEXITY_BASELINE for p in chosen
                               if PERPLEXITY_BASELINE in set(correlations[p]["pregen"])}}
    tables, notes = [], []
    for criterion, pairs in criteria.items():
        for post, pregen in pairs.items():
            try:
                tables.append(calibration.loo_table(models, {post: pregen}).assign(criterion=criterion))
            except ValueError as err:
                notes.append(f"{post} from `{pregen}` ({criterion}): {' '.join(str(err).split())}")
    return (pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()), notes


def _with_inversions(n: int, inversions: int) -> list[int]:
    """A permutation of 0..n-1 with exactly ``inversions`` discordant pairs against 0..n-1 (its Lehmer code)."""
    left, code = inversions, []
    for i in range(n):
        code.append(min(left, n - 1 - i))
        left -= code[-1]
    remaining = list(range(n))
    return [remaining.pop(c) for c in code]


def what_pairs_can_show(models: int, level: float = 0.05) -> str:
    """One sentence on what a model-level test over ``models`` models can show: its pairs, and the
    fewest of them a metric must order right for Kendall's tau to differ from 0 at ``level``
    (two-sided, exact, no ties). Pairs share models, so they are not independent tests."""
    from scipy import stats
    pairs = models * (models - 1) // 2
    head = (f"The model-level test rests on {models} models, so {pairs} pairs at most (fewer within groups or where "
            f"post-gen scores tie); the pairs share models, so they are not {pairs} independent tests. ")
    wrong = -1
    while wrong < pairs and models >= 2:
        p = stats.kendalltau(range(models), _with_inversions(models, wrong + 1), method="exact").pvalue
        if not p < level:
            break
        wrong += 1
    if wrong < 0:
        return head + (f"With {models} models no ordering, not even every pair right, makes Kendall's tau differ "
                       f"from 0 at the {level:.0%} level: these accuracies cannot be told from chance.")
    return head + (f"Kendall's tau differs from 0 at the {level:.0%} level (two-sided, exact) only when at least "
                   f"{pairs - wrong} of the {pairs} pairs are ordered right (accuracy {(pairs - wrong) / pairs:.2f}); "
                   f"one pair moves an accuracy by {1 / pairs:.3f}.")
