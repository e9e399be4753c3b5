"""How well a criterion makes the decisions users make with CIDEr: pure functions of arrays.

A criterion is a value per checkpoint and a sign (+1: higher is better). Against the
checkpoints' CIDEr it is scored by pairwise accuracy (all pairs, and pairs whose CIDEr
differs significantly by a paired bootstrap over images), Kendall tau-b, regret@1 (the CIDEr
given up by keeping the checkpoint the criterion ranks first), top-5 overlap, and early
stopping: per training run, the epoch where patience runs out and the CIDEr lost by keeping
that run's best epoch by the criterion instead of its best epoch by CIDEr.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from pregen_jax.ranking import decisions


def signed(values, sign: float) -> np.ndarray:
    """Values oriented so that higher is better; NaN becomes -inf (never chosen)."""
    oriented = np.asarray(values, np.float64) * sign
    return np.where(np.isnan(oriented), -np.inf, oriented)


def best_index(values, sign: float) -> int:
    """The checkpoint the criterion ranks first (the first one on ties)."""
    return int(np.argmax(signed(values, sign)))


def top_k_overlap(values, sign: float, cider, k: int = 5) -> float:
    """Share of CIDEr's top k that are also in the criterion's top k (stable order on ties)."""
    ours = np.argsort(-signed(values, sign), kind="stable")[:k]
    theirs = np.argsort(-np.asarray(cider, np.float64), kind="stable")[:k]
    return len(set(ours) & set(theirs)) / min(k, len(theirs))


def early_stop(values, sign: float, patience: int) -> tuple[int, int]:
    """(stop epoch, chosen epoch), 1-based, for one run's per-epoch ``values: f[E]``.

    As ``train_captioner`` does: the first epoch is the best so far; an epoch is better when
    its signed value is strictly higher; training stops once ``patience`` epochs in a row
    were not better (or after the last epoch) and keeps the best epoch seen.
    """
    oriented = signed(values, sign)
    best, bad = 0, 0
    for epoch in range(1, len(oriented)):
        if oriented[epoch] > oriented[best]:
            best, bad = epoch, 0
        else:
            bad += 1
            if bad >= patience:
                return epoch + 1, best + 1
    return len(oriented), best + 1


@dataclasses.dataclass(frozen=True)
class Checkpoints:
    """The checkpoints of one corpus, in run-major, epoch-minor order.

    labels: str[M]; runs: str[M] (training run of each); epochs: i[M] (1-based);
    cider: f[M] (beam-3 CIDEr on the whole validation split); significant: bool[M, M]
    (paired bootstrap over images of per-image CIDEr, p < 0.05).
    """

    labels: list[str]
    runs: list[str]
    epochs: np.ndarray
    cider: np.ndarray
    significant: np.ndarray

    def run_rows(self) -> dict[str, np.ndarray]:
        """Run -> its checkpoints' row indices, by epoch."""
        runs = np.asarray(self.runs)
        return {run: np.flatnonzero(runs == run)[np.argsort(self.epochs[runs == run])]
                for run in dict.fromkeys(self.runs)}


def early_stopping(checkpoints: Checkpoints, values, sign: float, patience: int) -> list[dict]:
    """Per run: where the criterion stops, which epoch it keeps, and the CIDEr lost by that."""
    rows = []
    for run, idx in checkpoints.run_rows().items():
        stop, chosen = early_stop(np.asarray(values)[idx], sign, patience)
        cider = checkpoints.cider[idx]
        rows.append({"run": run, "epochs": len(idx), "stop_epoch": stop, "chosen_epoch": chosen,
                     "cider_chosen": float(cider[chosen - 1]), "best_cider_epoch": int(np.argmax(cider)) + 1,
                     "cider_lost": float(cider.max() - cider[chosen - 1])})
    return rows


def evaluate_criterion(checkpoints: Checkpoints, values, sign: float, patience: int) -> tuple[dict, list[dict]]:
    """The selection.tsv columns of one criterion, and its per-run early-stopping rows."""
    values = np.asarray(values, np.float64)
    cider = checkpoints.cider
    column = values[:, None]
    best = best_index(values, sign)
    significant = checkpoints.significant
    stops = early_stopping(checkpoints, values, sign, patience)
    lost = np.array([r["cider_lost"] for r in stops])
    return {
        "checkpoints": len(values),
        "pairs": decisions.pair_agreement(column, cider, np.array([sign]))[1],
        "pairwise_accuracy": float(decisions.pairwise_accuracy(column, cider, np.array([sign]))[0]),
        "significant_pairs": decisions.pair_agreement(column, cider, np.array([sign]), significant)[1],
        "significant_pairwise_accuracy": float(decisions.pairwise_accuracy(column, cider, np.array([sign]),
                                                                           significant)[0]),
        "kendall_tau": float(decisions.kendall_tau_b(column * sign, cider)[0]),
        "picked": checkpoints.labels[best],
        "regret_at_1": float(cider.max() - cider[best]),
        "regret_at_1_percent": float(100 * (cider.max() - cider[best]) / cider.max()),
        "top5_overlap": top_k_overlap(values, sign, cider),
        "early_stopped_runs": sum(r["stop_epoch"] < r["epochs"] for r in stops),
        "early_stop_mean_epoch": float(np.mean([r["stop_epoch"] for r in stops])),
        "early_stop_cider_lost_mean": float(lost.mean()),
        "early_stop_cider_lost_max": float(lost.max()),
    }, stops


def best_in_hindsight(checkpoints: Checkpoints, table: np.ndarray, signs: np.ndarray) -> int:
    """Column of ``table: f[M, C]`` with the highest pairwise accuracy on these very checkpoints
    (ties: the first). An upper bound for pre-gen, not a criterion anyone could choose in advance."""
    accuracy = decisions.pairwise_accuracy(table, checkpoints.cider, signs)
    return int(np.nanargmax(np.where(np.isfinite(table).all(0), accuracy, np.nan)))


def gain_interval(checkpoints: Checkpoints, values, sign: float, base_values, base_sign: float,
                  resamples: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """Significant-pair accuracy of a criterion minus a baseline's, with a 90% interval.

    Checkpoints of one training run are not independent, so the interval resamples whole runs
    with replacement (a cluster bootstrap) and recomputes both accuracies on the pairs of the
    resampled checkpoints that differ significantly. Returns (observed gain, 5th, 95th percentile).
    """
    values, base_values = np.asarray(values, np.float64)[:, None], np.asarray(base_values, np.float64)[:, None]
    cider, significant = checkpoints.cider, checkpoints.significant

    def gain(idx):
        mask = significant[np.ix_(idx, idx)]
        ours = decisions.pairwise_accuracy(values[idx], cider[idx], np.array([sign]), mask)[0]
        theirs = decisions.pairwise_accuracy(base_values[idx], cider[idx], np.array([base_sign]), mask)[0]
        return ours - theirs

    runs = list(checkpoints.run_rows().values())
    rng = np.random.default_rng(seed)
    draws = [gain(np.concatenate([runs[k] for k in rng.integers(0, len(runs), len(runs))]))
             for _ in range(resamples)]
    low, high = np.nanpercentile(draws, [5, 95])
    return float(gain(np.arange(len(cider)))), float(low), float(high)
