"""Does a pre-gen metric pick the better model? Model-level checks beside the strata R^2.

The strata ranking (``ranking.rank``) correlates over 15 strata per model, which says little
about the decision users make: which of two trained models is better. This module answers
that on the model rows (one row per model, ``num_strata == 1``, scored on the whole test set):

- pairwise accuracy: over pairs of models in one group whose post-gen values differ, the
  share the pre-gen metric orders the same way (a pre-gen tie counts 1/2), after multiplying
  the metric by the sign of its pooled Pearson R (perplexity falls as quality rises);
- Kendall tau-b of the signed metric against the post-gen metric, per group;
- leave-one-group-out selection: choose the metric with the best R^2 on the other groups and
  measure it, and the perplexity baseline, on the held-out group;
- a paired bootstrap over test images that says which model pairs differ significantly, so
  pairwise accuracy can be restricted to pairs whose order is not noise.

Everything is vectorised over the pre-gen columns (C, thousands) with the models (M, tens)
as pairs (P = M (M - 1) / 2). Pure functions of DataFrames and arrays; nothing is written
(``render`` turns the tables into decisions.md and files).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .stats import ALL, PERPLEXITY_BASELINE, pearson

NUM_STRATA = "num_strata"


def model_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The whole-test-set rows (``num_strata == 1``), one per model."""
    if NUM_STRATA not in table.columns:
        raise ValueError(f"table has no {NUM_STRATA!r} column to find the model (whole-test-set) rows")
    models = table[table[NUM_STRATA] == 1]
    if len(models) == 0:
        raise ValueError(f"table has no model rows ({NUM_STRATA} == 1)")
    return models


def signs(r: np.ndarray) -> np.ndarray:
    """-1 where R < 0, else +1 (an R of exactly 0 or NaN keeps the metric as it is)."""
    return np.where(np.asarray(r, np.float64) < 0, -1.0, 1.0)


def _pairs(m: int, pair_mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j), i < j, of the model pairs to count; ``pair_mask: bool[M, M]``."""
    i, j = np.triu_indices(m, 1)
    if pair_mask is not None:
        pair_mask = np.asarray(pair_mask, bool)
        if pair_mask.shape != (m, m):
            raise ValueError(f"pair mask has shape {pair_mask.shape}, expected ({m}, {m})")
        keep = pair_mask[i, j]
        i, j = i[keep], j[keep]
    return i, j


def pair_agreement(pregen: np.ndarray, postgen: np.ndarray, sign: np.ndarray,
                   pair_mask: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Summed pair scores and the number of pairs counted.

    Args:
      pregen: f[M, C], one row per model.
      postgen: f[M].
      sign: f[C], +-1: the pre-gen metric is multiplied by it before comparing.
      pair_mask: optional bool[M, M]; only pairs (i, j), i < j, with ``pair_mask[i, j]``
        are considered (e.g. the significantly different pairs).

    Returns:
      (agreement: f[C], pairs): over the considered pairs whose post-gen values differ, a
      pair scores 1 when the signed pre-gen metric orders it like the post-gen metric, 1/2
      when the pre-gen values are equal, 0 otherwise.
    """
    pregen = np.asarray(pregen, np.float64)
    postgen = np.asarray(postgen, np.float64)
    if pregen.ndim != 2 or postgen.shape != pregen.shape[:1]:
        raise ValueError(f"pre-gen values f[models, metrics] {pregen.shape} and post-gen f[models] "
                         f"{postgen.shape} do not match")
    i, j = _pairs(len(postgen), pair_mask)
    post_order = np.sign(postgen[i] - postgen[j])
    i, j, post_order = i[post_order != 0], j[post_order != 0], post_order[post_order != 0]
    pre_order = np.sign((pregen[i] - pregen[j]) * np.asarray(sign, np.float64))
    score = np.where(pre_order == 0, 0.5, (pre_order == post_order[:, None]).astype(np.float64))
    return score.sum(0), len(i)


def pairwise_accuracy(pregen: np.ndarray, postgen: np.ndarray, sign: np.ndarray,
                      pair_mask: np.ndarray | None = None) -> np.ndarray:
    """f[C]: the share of model pairs the signed metric orders right (NaN without pairs).

    See ``pair_agreement`` for the arguments; pass ``pair_mask=bootstrap.significant()`` to
    count only the pairs whose post-gen difference is significant.
    """
    agreement, pairs = pair_agreement(pregen, postgen, sign, pair_mask)
    return agreement / pairs if pairs else np.full(agreement.shape, np.nan)


def kendall_tau_b(pregen: np.ndarray, postgen: np.ndarray) -> np.ndarray:
    """f[C]: Kendall tau-b of every column of ``pregen: f[M, C]`` against ``postgen: f[M]``.

    The same statistic as ``scipy.stats.kendalltau(x, y, variant="b")``, over all columns at
    once: (concordant - discordant) / sqrt((P - ties in x) (P - ties in y)). NaN where either
    side is constant.
    """
    pregen = np.asarray(pregen, np.float64)
    postgen = np.asarray(postgen, np.float64)
    i, j = np.triu_indices(len(postgen), 1)
    pre_order = np.sign(pregen[i] - pregen[j])
    post_order = np.sign(postgen[i] - postgen[j])
    untied_pre = (pre_order != 0).sum(0)
    untied_post = (post_order != 0).sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return (pre_order * post_order[:, None]).sum(0) / np.sqrt(untied_pre * untied_post.astype(np.float64))


def _group_masks(table: pd.DataFrame, group_by: str | None) -> dict[str, np.ndarray]:
    if not group_by:
        return {ALL: np.ones(len(table), bool)}
    if group_by not in table.columns:
        raise ValueError(f"table has no column {group_by!r} to group by")
    return {str(g): np.asarray(table[group_by] == g) for g in pd.unique(table[group_by])}


def validate_models(models: pd.DataFrame, correlations: pd.DataFrame, postgen: str,
                    group_by: str | None = None) -> pd.DataFrame:
    """Pairwise accuracy and Kendall tau-b of every ranked pre-gen metric on the model rows.

    Args:
      models: one row per model (see ``model_rows``) with the pre-gen and post-gen columns.
      correlations: the ranking's table for ``postgen`` (``pregen``, ``all_R``, ...); its
        metrics are the ones validated and the sign of ``all_R`` (over all strata rows)
        orients each metric.
      postgen: the post-gen column.
      group_by: optional column; pairs are only formed inside a group.

    Returns:
      DataFrame ``pregen``, then for every group and for ``all``:
      ``<group>_pairwise_accuracy``, ``<group>_kendall_tau``, ``<group>_models``,
      ``<group>_pairs`` (pairs with differing post-gen values). ``all`` pools the pairs of
      every group (pairs across groups are never formed); its tau is the groups' tau
      weighted by their pairs (NaN when some group's tau is: a metric constant over that
      group's models). Sorted by ``all_pairwise_accuracy``, descending (stable, so
      ties keep the ranking's R^2 order).
    """
    names = list(correlations["pregen"])
    values = models[names].to_numpy(np.float64)
    target = models[postgen].to_numpy(np.float64)
    if not np.isfinite(target).all():
        raise ValueError(f"{postgen} is NaN or inf on some model row")
    sign = signs(correlations[f"{ALL}_R"])
    frame: dict[str, object] = {"pregen": names}
    total_agreement, total_pairs, tau_sum = np.zeros(len(names)), 0, np.zeros(len(names))
    groups = _group_masks(models, group_by)
    for group, rows in groups.items():
        agreement, pairs = pair_agreement(values[rows], target[rows], sign)
        tau = kendall_tau_b(values[rows], target[rows]) * sign
        if group != ALL:
            frame[f"{group}_pairwise_accuracy"] = agreement / pairs if pairs else np.nan
            frame[f"{group}_kendall_tau"] = tau
            frame[f"{group}_models"] = int(rows.sum())
            frame[f"{group}_pairs"] = pairs
        if pairs:  # a group without pairs (one model, or equal post-gen values) adds nothing
            total_agreement += agreement
            total_pairs += pairs
            tau_sum += tau * pairs
    frame[f"{ALL}_pairwise_accuracy"] = total_agreement / total_pairs if total_pairs else np.nan
    frame[f"{ALL}_kendall_tau"] = tau_sum / total_pairs if total_pairs else np.nan
    frame[f"{ALL}_models"] = len(models)
    frame[f"{ALL}_pairs"] = total_pairs
    df = pd.DataFrame(frame)
    return df.sort_values(f"{ALL}_pairwise_accuracy", ascending=False, kind="stable").reset_index(drop=True)


def heldout_selection(table: pd.DataFrame, correlations: pd.DataFrame, postgen: str, group_by: str,
                      baseline: str = PERPLEXITY_BASELINE) -> pd.DataFrame:
    """Leave one group out: choose on the others by R^2, measure on the held-out group.

    Args:
      table: all data points (strata rows and model rows) with a ``num_strata`` column.
      correlations: the ranking's table for ``postgen``; its ``pregen`` column is the set
        of candidate metrics (those the ranking keeps).
      postgen: the post-gen column.
      group_by: the group column (at least two groups).
      baseline: the comparison metric (perplexity); NaN where absent or non-finite.

    Returns:
      DataFrame, one row per held-out group: ``held_out``, ``selected`` (best pooled R^2 on
      the other groups' rows), ``selection_R^2``, ``heldout_R^2`` (over the held-out
      group's strata rows), ``heldout_pairwise_accuracy`` (over its model rows, the metric
      oriented by the sign of its R on the selection rows), and the same two for the
      baseline: ``baseline_heldout_R^2``, ``baseline_heldout_pairwise_accuracy``.
    """
    groups = _group_masks(table, group_by)
    if len(groups) < 2:
        raise ValueError(f"held-out selection needs at least two groups in {group_by!r}, got {list(groups)}")
    names = list(correlations["pregen"])
    values = table[names].to_numpy(np.float64)
    target = table[postgen].to_numpy(np.float64)
    is_model = np.asarray(table[NUM_STRATA] == 1) if NUM_STRATA in table.columns else None
    if is_model is None or not is_model.any():
        raise ValueError(f"table has no model rows ({NUM_STRATA} == 1)")
    base = table[baseline].to_numpy(np.float64) if baseline in table.columns else None
    rows = []
    for group, held in groups.items():
        chosen = ~held
        r_sel, _ = pearson(values[chosen], target[chosen])
        best = int(np.argmax(r_sel ** 2))
        r_held, _ = pearson(values[held][:, [best]], target[held])
        held_models = held & is_model
        accuracy = pairwise_accuracy(values[held_models][:, [best]], target[held_models], signs(r_sel[[best]]))
        row = {"held_out": group, "selected": names[best], "selection_R^2": r_sel[best] ** 2,
               "heldout_R^2": r_held[0] ** 2, "heldout_pairwise_accuracy": accuracy[0],
               "baseline_heldout_R^2": np.nan, "baseline_heldout_pairwise_accuracy": np.nan}
        if base is not None and np.isfinite(base[chosen | held]).all():
            r_base_sel, _ = pearson(base[chosen][:, None], target[chosen])
            r_base_held, _ = pearson(base[held][:, None], target[held])
            row["baseline_heldout_R^2"] = r_base_held[0] ** 2
            row["baseline_heldout_pairwise_accuracy"] = pairwise_accuracy(
                base[held_models][:, None], target[held_models], signs(r_base_sel))[0]
        rows.append(row)
    return pd.DataFrame(rows)


@dataclasses.dataclass(frozen=True)
class PairedBootstrap:
    """Which models differ significantly on one post-gen metric.

    Attributes:
      difference: f[M, M], observed mean score of model a minus that of model b.
      p: f[M, M], two-sided bootstrap p-value of that difference (1 on the diagonal).
      resamples: the number of bootstrap resamples.
    """

    difference: np.ndarray
    p: np.ndarray
    resamples: int

    def significant(self, alpha: float = 0.05) -> np.ndarray:
        """bool[M, M]: pairs whose difference is significant at ``alpha`` (two-sided)."""
        return self.p < alpha


def paired_bootstrap(scores: np.ndarray, resamples: int = 1000, seed: int = 0) -> PairedBootstrap:
    """Paired bootstrap over test images of every pair of models.

    Every resample draws the test images with replacement once and applies the same draw to
    every model (the pairing: image difficulty cancels out). The statistic is the mean of
    the per-image scores. For CIDEr (document frequencies from the whole test set), BLEU and
    METEOR the corpus score is not exactly the mean of per-image scores; the per-image scores
    are computed once on the whole test set and only their mean is resampled, which tests
    "is the mean per-image score higher" and is the usual approximation (recomputing the
    corpus score per resample would cost a toolkit run per resample).

    The p-value is the shifted-null one: the share of resampled differences whose distance
    from the observed difference is at least the observed difference, (1 + count) /
    (1 + resamples), so it is never 0 and is 1 for identical scores.

    Args:
      scores: f[M, N], per-image post-gen scores of M models on the same N test images.
      resamples: number of resamples (at least 1000 for p-values near 0.05 to be stable).
      seed: seed of the numpy Generator (same seed, same p-values).
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise ValueError(f"per-image scores must be f[models, images] with at least 2 images, got {scores.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("per-image scores contain NaN or inf")
    m, n = scores.shape
    rng = np.random.default_rng(seed)
    observed = scores.mean(1)
    difference = observed[:, None] - observed[None, :]
    exceed = np.zeros((m, m))
    chunk = max(1, min(resamples, (1 << 22) // n))  # bounds the [chunk, N] count matrix
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        draws = rng.integers(0, n, size=(b, n))
        # counts[k, i]: how often image i is drawn in resample k; means = counts @ scores.T / N.
        counts = np.bincount((draws + n * np.arange(b)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        means = counts @ scores.T / n  # [b, M]
        resampled = means[:, :, None] - means[:, None, :]  # [b, M, M]
        exceed += (np.abs(resampled - difference) >= np.abs(difference)).sum(0)
    return PairedBootstrap(difference, (1 + exceed) / (1 + resamples), resamples)


def decision_tables(table: pd.DataFrame, correlations: dict[str, pd.DataFrame],
                    group_by: str | None) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """(post-gen -> ``validate_models`` table, post-gen -> ``heldout_selection`` table).

    The held-out tables are empty without at least two groups.
    """
    models = model_rows(table)
    validated = {post: validate_models(models, df, post, group_by) for post, df in correlations.items()}
    heldout = {}
    if group_by and table[group_by].nunique() >= 2:
        heldout = {post: heldout_selection(table, df, post, group_by) for post, df in correlations.items()}
    return validated, heldout
