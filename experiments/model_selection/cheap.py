"""Cheap decisions: CIDEr on a random share of the images, and racing, against full CIDEr.

Both read per-image CIDEr computed with whole-set document frequencies (what
``postgen.score("CIDEr", ..., idf_from=all_gts)`` gives a subset, and what a whole-split CIDEr
computation gives each of its images), so a subset's mean is an unbiased estimate of the
whole-split CIDEr and every method's cost is the images it decodes and scores.

For each method and budget: the pick's regret (CIDEr given up, % of the best), pairwise
accuracy on the pairs that differ significantly, and cost as a share of full CIDEr, for seed 0
(the run a user would make) and over ``RACES`` reseeded runs: mean regret, how often the
regret exceeds 1%, and for racing how often the best checkpoint was dropped.
"""
from __future__ import annotations

import numpy as np

from pregen_jax.ranking import decisions
from pregen_jax.ranking.racing import RaceSettings, race_table

BUDGETS = (0.05, 0.10, 0.25)
RACES = 50


def _regret_percent(cider: np.ndarray, pick: int) -> float:
    return float(100 * (cider.max() - cider[pick]) / cider.max())


def _significant_accuracy(values: np.ndarray, cider: np.ndarray, significant: np.ndarray) -> float:
    values = np.where(np.isnan(values), -np.inf, values)
    return float(decisions.pairwise_accuracy(values[:, None], cider, np.array([1.0]), significant)[0])


def subset_values(per_image: np.ndarray, share: float, seed: int) -> np.ndarray:
    """CIDEr of every checkpoint on one random ``share`` of the images (the same for all): f[M]."""
    images = per_image.shape[1]
    chosen = np.random.default_rng(seed).choice(images, max(2, round(share * images)), replace=False)
    return per_image[:, chosen].mean(1)


def subset_row(per_image: np.ndarray, significant: np.ndarray, share: float, races: int = RACES) -> dict:
    """CIDEr on a random share of the images, whole-set frequencies."""
    cider = per_image.mean(1)
    first = subset_values(per_image, share, 0)
    regrets = np.array([_regret_percent(cider, int(np.argmax(subset_values(per_image, share, seed))))
                        for seed in range(races)])
    return {"method": f"CIDEr on {share:.0%}", "budget": share, "cost_share": share,
            "regret_percent": _regret_percent(cider, int(np.argmax(first))),
            "significant_pairwise_accuracy": _significant_accuracy(first, cider, significant),
            "mean_regret_percent": float(regrets.mean()), "p_regret_over_1pct": float((regrets > 1).mean()),
            "p_best_dropped": np.nan}


def race_row(per_image: np.ndarray, significant: np.ndarray, budget: float, prior=None,
             races: int = RACES, confidence: float = 0.95) -> dict:
    """Racing at ``budget`` (share of checkpoints x images), reseeded ``races`` times."""
    cider = per_image.mean(1)
    best = int(np.argmax(cider))
    regrets, dropped, costs = [], [], []
    first = None
    for seed in range(races):
        result = race_table(per_image, RaceSettings(budget=budget, confidence=confidence, seed=seed), prior)
        regrets.append(_regret_percent(cider, result.picked))
        dropped.append(result.table["status"].iloc[best].startswith("dropped"))
        costs.append(result.cost)
        first = first or result
    regrets = np.array(regrets)
    return {"method": f"racing at {budget:.0%}", "budget": budget, "cost_share": float(np.mean(costs)),
            "regret_percent": regrets[0],
            "significant_pairwise_accuracy": _significant_accuracy(first.table["estimate"].to_numpy(), cider,
                                                                   significant),
            "mean_regret_percent": float(regrets.mean()), "p_regret_over_1pct": float((regrets > 1).mean()),
            "p_best_dropped": float(np.mean(dropped)), "rounds": len(first.rounds),
            "left_at_end": 1 + len(first.not_separated)}


def cheap_rows(per_image: np.ndarray, significant: np.ndarray, prior=None, budgets=BUDGETS,
               races: int = RACES) -> list[dict]:
    """Every cheap method at every budget on one grid: ``per_image: f64[checkpoints, images]``
    (whole-set frequencies), ``significant: bool[checkpoints, checkpoints]``."""
    rows = [subset_row(per_image, significant, share, races) for share in budgets]
    rows += [race_row(per_image, significant, budget, prior, races) for budget in budgets]
    return rows
