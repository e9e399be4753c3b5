"""Issue 41: do a race's printed intervals hold at every round? Coverage measured, before and after.

    python3 experiments/model_selection/race_coverage.py [--run runs/model_selection] [--races 200] [--out DIR]

Replays races on known per-image CIDEr-D (whole-split document frequencies, so the mean over the
split is the full CIDEr each interval is about) and asks, per grid, budget and nominal level
(0.90, 0.95), for the share of races in which **every** printed interval (every candidate's
``low``/``high`` after every round, as ``RaceResult.intervals`` records them) covered that
candidate's whole-split value: over all rounds, at the first look (16 images where the budget
makes the first round 16) and at the end. Two races on the same seeds (the same image orders):

- "t bound": the race until issue 41 (``t_race.py``): t intervals with Bonferroni over rounds
  and candidates;
- "confidence sequence": ``ranking.racing`` now: without-replacement betting sequences at
  alpha / K for the K intervals, and at alpha / (K - 1) for the paired drops.

Beside coverage (with its 95% Clopper-Pearson interval over the races), the price: the pick's
interval width after the first round and at the end (median over races), the images scored
after the first round and at the end (a share of candidates x images), P(pick outside the MCB
set) (Hsu's multiple comparisons with the best at 95% on the whole split, ``assisted.possibly_best``),
P(the split's best dropped), how many candidates are left at the end, and (``p_missed_flat``, in
coverage.tsv) how often a miss was an interval of zero width (a t interval on images that all
scored the same, usually 0).

Grids: the 12 where-image2 Flickr8k models (1,000 test images; computed here from the captions in
../shared/data/where-image2-captions) and, with ``--run DIR``, every grid a ``run.py`` run saved in
``DIR/cache/arrays_<grid>.npz`` (shapes, the word and BPE transformers, shapes-small, Flickr8k).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

import assisted
import t_race
import where_image2

from pregen_jax import io
from pregen_jax.ranking import racing

LEVELS = (0.90, 0.95)
BUDGETS = (0.10, 0.25)
RACES = 200
METHODS = {"t bound": t_race.race_table, "confidence sequence": racing.race_table}


def race_facts(result, truth: np.ndarray, mcb: np.ndarray, num_images: int) -> dict:
    """One race's coverage and price. ``truth``: f[M] whole-split means; ``mcb``: bool[M]."""
    intervals = result.intervals  # [rounds, M, 2], NaN where not yet scored
    scored = ~np.isnan(intervals[..., 0])
    slack = 1e-9 * (1 + np.abs(truth))  # the bounds meet the mean exactly once the split is drawn
    held = ~scored | ((intervals[..., 0] <= truth + slack) & (intervals[..., 1] >= truth - slack))
    per_round = held.all(1)
    flat = (intervals[..., 1] - intervals[..., 0]) == 0  # a t interval on images that all scored the same
    pick = result.picked
    first = intervals[0, pick]
    raced = int(scored[0].sum())
    best = int(np.argmax(truth))
    return {"first_n": result.rounds[0], "covered_all_rounds": bool(per_round.all()),
            "covered_first": bool(per_round[0]), "covered_end": bool(per_round[-1]),
            "missed_flat": bool((~held & flat).any()),
            "width_first": float(first[1] - first[0]), "width_end": float(intervals[-1, pick, 1] - intervals[-1, pick, 0]),
            "cost_first": raced * result.rounds[0] / (len(truth) * num_images), "cost_end": result.cost,
            "outside_mcb": not bool(mcb[pick]), "best_dropped": result.table["status"].iloc[best].startswith("dropped"),
            "left": 1 + len(result.not_separated)}


def share(hits: np.ndarray) -> tuple[float, float, float]:
    """(share, low, high): the 95% Clopper-Pearson interval of a share of races."""
    k, n = int(np.sum(hits)), len(hits)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return k / n, ci.low, ci.high


def grid_rows(name: str, per_image: np.ndarray, prior, races: int, budgets=BUDGETS, levels=LEVELS) -> list[dict]:
    """Every method, budget and level on one grid, ``races`` seeds each (the same for both methods)."""
    truth = per_image.mean(1)
    mcb = assisted.possibly_best(per_image)
    rows = []
    for budget in budgets:
        for level in levels:
            for method, race_table in METHODS.items():
                start = time.perf_counter()
                facts = pd.DataFrame([race_facts(race_table(per_image, racing.RaceSettings(
                    budget=budget, confidence=level, seed=seed), prior), truth, mcb, per_image.shape[1])
                    for seed in range(races)])
                row = {"grid": name, "models": per_image.shape[0], "images": per_image.shape[1], "budget": budget,
                       "level": level, "method": method, "races": races, "first_n": int(facts["first_n"].iloc[0])}
                for key in ("covered_all_rounds", "covered_first", "covered_end"):
                    row[key], row[f"{key}_low"], row[f"{key}_high"] = share(facts[key].to_numpy())
                row |= {"width_first": facts["width_first"].median(), "width_end": facts["width_end"].median(),
                        "cost_first": facts["cost_first"].mean(), "cost_end": facts["cost_end"].mean(),
                        "p_outside_mcb": facts["outside_mcb"].mean(), "p_best_dropped": facts["best_dropped"].mean(),
                        "left": facts["left"].mean(), "mcb_set": int(mcb.sum()),
                        "p_missed_flat": facts["missed_flat"].mean(),
                        "seconds": time.perf_counter() - start}
                rows.append(row)
                print(f"{name}, {budget:.0%}, {level:g}, {method}: all rounds {row['covered_all_rounds']:.3f}, "
                      f"{row['seconds']:.1f} s", flush=True)
    return rows


def markdown(table: pd.DataFrame) -> str:
    """The README's table: one row per grid, budget, level and method."""
    head = ("| grid (models x images) | budget | level | method | covered, all rounds [95% CI] | covered at the "
            "first look (n) | covered at the end | pick's width: first look / end | cost: first look / end | "
            "P(outside MCB) | P(best dropped) | left at end |")
    lines = [head, "|" + "---|" * 12]
    for r in table.itertuples():
        lines.append(
            f"| {r.grid} ({r.models} x {r.images}) | {r.budget:.0%} | {r.level:.2f} | {r.method} | "
            f"{r.covered_all_rounds:.3f} [{r.covered_all_rounds_low:.3f}, {r.covered_all_rounds_high:.3f}] | "
            f"{r.covered_first:.3f} [{r.covered_first_low:.3f}, {r.covered_first_high:.3f}] ({r.first_n}) | "
            f"{r.covered_end:.3f} | {r.width_first:.3f} / {r.width_end:.3f} | {r.cost_first:.3f} / {r.cost_end:.3f} | "
            f"{r.p_outside_mcb:.3f} | {r.p_best_dropped:.3f} | {r.left:.1f} |")
    return "\n".join(lines)


def grids(run: Path | None) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """(per-image CIDEr f[M, I], prior or None) by grid name: where-image2, and a run's saved grids."""
    out = {}
    if run is not None:
        for name, arrays in assisted.load_grids(run).items():
            out[name] = (arrays["per_image"], arrays["prior"])
    shared = io.shared_data()
    if (shared / "where-image2-captions").is_dir():
        out["where-image2"] = (where_image2.per_image_cider(shared)[1], None)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="a run.py run folder (its cache/arrays_*.npz)")
    parser.add_argument("--races", type=int, default=RACES)
    parser.add_argument("--only", nargs="+", default=None, metavar="GRID", help="these grids only")
    parser.add_argument("--out", type=Path, default=None, help="write coverage.tsv and coverage.md here")
    args = parser.parse_args(argv)
    rows = []
    for name, (per_image, prior) in grids(args.run).items():
        if args.only is None or name in args.only:
            rows += grid_rows(name, per_image, prior, args.races)
    table = pd.DataFrame(rows)
    text = markdown(table)
    print(text)
    if args.out:
        io.write_tsv(table, args.out / "coverage.tsv")
        io.write_text(text + "\n", args.out / "coverage.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
