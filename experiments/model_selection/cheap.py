"""Cheap decisions: CIDEr on a random share of the images, and racing, against full CIDEr.

Both read per-image CIDEr computed with whole-set document frequencies (what
``postgen.score("CIDEr", ..., idf_from=all_gts)`` gives a subset, and what a whole-split CIDEr
computation gives each of its images), so a subset's mean is an unbiased estimate of the
whole-split CIDEr and every method's cost is the images it decodes and scores.

Each method at each budget becomes a criterion of the study's table (``cheap_criteria``): its
values are those of seed 0 (the run a user would make), so pairwise accuracy, Kendall tau and
regret are read as for every other criterion; beside them, over ``RACES`` reseeded runs, the mean
regret, how often the regret exceeds 1% and, for racing, how often the best checkpoint was
dropped, and the mean cost (images decoded and scored over checkpoints x images).
"""
from __future__ import annotations

import numpy as np

from pregen_jax.ranking import decisions
from pregen_jax.ranking.racing import RaceSettings, race_table

BUDGETS = (0.05, 0.10, 0.25)
RACES = 50
RACE = {"race": race_table}  # what racing runs: ranking.racing's race; run.py --t-bound puts t_race's here


def _regret_percent(cider: np.ndarray, pick: int) -> float:
    return float(100 * (cider.max() - cider[pick]) / cider.max())


def _significant_accuracy(values: np.ndarray, cider: np.ndarray, significant: np.ndarray) -> float:
    values = np.where(np.isnan(values), -np.inf, values)
    return float(decisions.pairwise_accuracy(values[:, None], cider, np.array([1.0]), significant)[0])


def subset_images(images: int, share: float, seed: int) -> np.ndarray:
    """The random ``share`` of the images (the same for every checkpoint) drawn with ``seed``."""
    return np.random.default_rng(seed).choice(images, max(2, round(share * images)), replace=False)


def subset_values(per_image: np.ndarray, share: float, seed: int) -> np.ndarray:
    """CIDEr of every checkpoint on one random ``share`` of the images: f[M]."""
    return per_image[:, subset_images(per_image.shape[1], share, seed)].mean(1)


def race_values(result) -> np.ndarray:
    """The race's ranking as numbers, higher = better: the pick, then those it could not separate,
    then the dropped by the round they left (later = better); the estimate orders within a group."""
    table = result.table
    rounds = len(result.rounds)
    level = np.array([rounds + 2 if s == "picked" else rounds + 1 if s == "not separated"
                      else int(s.rsplit(" ", 1)[1]) for s in table["status"]], float)
    return 100.0 * level + table["estimate"].to_numpy(np.float64)  # per-image CIDEr-D is below 10


def subset_stats(per_image: np.ndarray, share: float, races: int = RACES) -> dict:
    """CIDEr on a random share, reseeded ``races`` times: regret of the pick over the seeds."""
    cider = per_image.mean(1)
    regrets = np.array([_regret_percent(cider, int(np.argmax(subset_values(per_image, share, seed))))
                        for seed in range(races)])
    return {"cost_share": len(subset_images(per_image.shape[1], share, 0)) / per_image.shape[1],
            "races": races, "mean_regret_percent": float(regrets.mean()),
            "p_regret_over_1pct": float((regrets > 1).mean()), "p_best_dropped": np.nan}


def race_stats(per_image: np.ndarray, budget: float, prior=None, races: int = RACES,
               confidence: float = 0.95) -> tuple[dict, object]:
    """Racing at ``budget`` (share of checkpoints x images), reseeded ``races`` times; and seed 0's race."""
    cider = per_image.mean(1)
    best = int(np.argmax(cider))
    regrets, dropped, costs, left = [], [], [], []
    first = None
    for seed in range(races):
        result = RACE["race"](per_image, RaceSettings(budget=budget, confidence=confidence, seed=seed), prior)
        regrets.append(_regret_percent(cider, result.picked))
        dropped.append(result.table["status"].iloc[best].startswith("dropped"))
        costs.append(result.cost)
        left.append(1 + len(result.not_separated))
        first = first or result
    regrets = np.array(regrets)
    return {"cost_share": float(np.mean(costs)), "races": races, "mean_regret_percent": float(regrets.mean()),
            "p_regret_over_1pct": float((regrets > 1).mean()), "p_best_dropped": float(np.mean(dropped)),
            "race_rounds": len(first.rounds), "left_at_end_mean": float(np.mean(left))}, first


def cheap_criteria(per_image: np.ndarray, full_seconds: float, prior=None, budgets=BUDGETS,
                   races: int = RACES, confidence: float = 0.95) -> list[dict]:
    """Every cheap method at every budget on one grid, as criteria of the study's table.

    per_image: f64[checkpoints, images] (whole-set frequencies); full_seconds: what full CIDEr
    costs per checkpoint (decoding + scoring every image); a method's seconds are its cost share
    of that (decoding and scoring are linear in the images). prior: lower is better (validation
    perplexity), the race's order and tie-break.
    """
    out = []
    for share in budgets:
        stats = subset_stats(per_image, share, races)
        out.append({"label": f"CIDEr on {share:.0%}", "metric": f"CIDEr@{share:.0%}", "sign": 1.0,
                    "criterion": f"CIDEr on a random {share:.0%} of the images, whole-set frequencies",
                    "values": subset_values(per_image, share, 0), "seconds": stats["cost_share"] * full_seconds,
                    "stats": stats})
    return out + race_criteria(per_image, full_seconds, prior, budgets, races, confidence)


def race_criteria(per_image: np.ndarray, full_seconds: float, prior=None, budgets=BUDGETS, races: int = RACES,
                  confidence: float = 0.95, suffix: str = "") -> list[dict]:
    """Racing at every budget as criteria (see ``cheap_criteria``); ``suffix`` names a variant."""
    out = []
    for budget in budgets:
        stats, first = race_stats(per_image, budget, prior, races, confidence)
        out.append({"label": f"racing at {budget:.0%}{suffix}", "metric": f"race@{budget:.0%}{suffix}", "sign": 1.0,
                    "criterion": f"racing (ranking.racing, confidence {confidence:g}), budget {budget:.0%}",
                    "values": race_values(first), "seconds": first.cost * full_seconds,
                    "stats": {**stats, "cost_share_seed0": first.cost}})
    return out


def calibrate_confidence(held_out: np.ndarray, levels=(0.95, 0.8, 0.5), budgets=BUDGETS, races: int = RACES,
                         max_dropped: float = 0.05) -> tuple[float, list[dict]]:
    """Racing's confidence chosen on other models than those reported (``held_out: f64[M, images]``):
    the lowest level whose P(true best dropped) stays <= ``max_dropped`` at every budget (0.95 if
    none does). Returns (that level, one row per level and budget)."""
    rows = [{"confidence": level, "budget": budget, **race_stats(held_out, budget, None, races, level)[0]}
            for level in levels for budget in budgets]
    fine = [level for level in levels
            if all(r["p_best_dropped"] <= max_dropped for r in rows if r["confidence"] == level)]
    return (min(fine) if fine else 0.95), rows


def cheap_rows(per_image: np.ndarray, significant: np.ndarray, prior=None, budgets=BUDGETS,
               races: int = RACES) -> list[dict]:
    """A compact table of the cheap methods alone (``where_image2.py`` prints it)."""
    cider = per_image.mean(1)
    rows = []
    for c in cheap_criteria(per_image, 1.0, prior, budgets, races):
        pick = int(np.argmax(c["values"]))
        rows.append({"method": c["label"], "regret_percent": _regret_percent(cider, pick),
                     "significant_pairwise_accuracy": _significant_accuracy(c["values"], cider, significant),
                     **c["stats"]})
    return rows
