"""Issue 48: do races separate now, and are they still valid? Whole races, every grid and budget.

    python3 experiments/model_selection/race_power.py [--races 2000] [--run DIR] [--out DIR] [--only GRID ...]

Replays ``ranking.racing`` on known per-image CIDEr-D (whole-split document frequencies, so each
candidate's mean over the split is the CIDEr-D its interval is about) with the race's defaults
(95%, the drops against the predictable leader at alpha/2, ``within`` at alpha/2 over the pairs),
``--races`` seeds per grid and budget (5, 10, 25%), and counts, per cell:

- validity: the share of races in which every printed interval (every candidate's, after every
  round) covered its whole-split value (with a 95% Clopper-Pearson interval); the false-drop rate
  (the split's best dropped; on the equal-means grid, where every candidate is a best, the
  largest drop rate of any candidate); how often the pick is within its ``within`` (mu_best -
  mu_pick <= W at the end); P(pick outside Hsu's MCB set of the whole split);
- power: the drop rate of each candidate placed a known gap below the best (``gap 0.1`` ...), and
  of the candidates 0.05 or more below the best; ``within`` at the end (median); how many are left;
  the cost (images scored over candidates x images).

Grids (models x images):
- ``where-image2``: the 12 Flickr8k models of Tanti et al. (2018), 1,000 test images;
- ``where-image2 + gaps``: the same with the best model's scores scaled to 0.1 and 0.2 below it;
- ``N=5000 + gaps``: 5,000 images drawn with replacement from where-image2's 1,000 (the 12 models'
  scores of an image kept together), and the best scaled to 0.05, 0.1 and 0.2 below it;
- ``equal means``: 12 copies of where-image2's best model, each with its images rotated by 83
  (every mean exactly equal, the leader switches most);
- ``weak``: 12 weak "checkpoints" (``weak_grid``): where-image2's captions on 5-27% of the images,
  off-topic words of another image's caption on the rest (73-94% of per-image scores zero);
- with ``--matrix NAME NPY HIGH``: any grid of per-image scores (the demo's 30 models on its 1,000
  val images: ``demo_grid.py``);
- with ``--run DIR``: every grid a ``run.py`` run saved in ``DIR/cache/arrays_<grid>.npz`` (shapes,
  the word and BPE transformers, shapes-small, Flickr8k: checkpoints x validation images), raced as
  ``select`` races a search's checkpoints: on the range ``select`` takes from the split's references
  (``score_high``; [0, 10] in a run from before it was saved) and with the validation perplexity as
  the prior (the first leader, and the order of ties).

Scaled copies keep the pairing and the shape of the best model's scores: they are models a known
gap below the best, which no real grid offers at N = 5,000.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import assisted
import where_image2
from race_coverage import share

from pregen_jax import io, postgen
from pregen_jax.datasets import tokenize
from pregen_jax.ranking import racing

BUDGETS = (0.05, 0.10, 0.25)
RACES = 2000
ROTATION = 83  # images each copy of the equal-means grid is rotated by
GAP_BINS = (0.0, 0.05, 0.1, 0.2, math.inf)  # drop rates by a candidate's true gap below the best, in these bins
CIDER_BOUND = 7.3531374560261975  # postgen.cider.score_bound's largest value on Flickr8k's 1,000 test images


def with_gaps(per_image: np.ndarray, gaps: tuple[float, ...]) -> tuple[np.ndarray, list[str]]:
    """The grid and, below it, the best row scaled to each gap below its mean; names of the rows."""
    best = per_image[np.argmax(per_image.mean(1))]
    scaled = [best * (1 - gap / best.mean()) for gap in gaps]
    names = [f"model {k}" for k in range(len(per_image))] + [f"gap {gap:g}" for gap in gaps]
    return np.vstack([per_image, *scaled]), names


def weak_grid(shared: Path) -> np.ndarray:
    """f64[12, 1000]: weak "checkpoints" whose per-image CIDEr-D is mostly zero, as early ones': model k
    gives where-image2 model k's own caption on a share 0.05 + 0.02 k of the images (a fixed random subset)
    and on the rest the first 4 words of another image's caption that no reference of this image has
    (a score of exactly 0, as an early checkpoint's off-topic caption gets)."""
    folder = shared / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    gts = where_image2.references(shared, ids)
    rng = np.random.default_rng(12)
    rows = []
    for k, model in enumerate(where_image2.MODELS):
        lines = [" ".join(tokenize(c)) for c in
                 (folder / f"flickr8k_{model}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)]]
        own = rng.random(len(ids)) < 0.05 + 0.02 * k
        other = rng.permutation(len(ids))
        res = {}
        for n, i in enumerate(ids):
            seen = {w for ref in gts[i] for w in ref.split()}
            wrong = [w for w in lines[other[n]].split() if w not in seen][:4] or ["unk"]
            res[i] = [lines[n] if own[n] else " ".join(wrong)]
        rows.append(postgen.CIDEr().compute_score(gts, res)[1])
    return np.asarray(rows, np.float64)


def grids(run: Path | None, bounded: bool = True) -> dict[str, tuple]:
    """(per-image CIDEr-D f[M, I], row names, the score range the race is told, the prior f[M] or None)
    by grid name; ``bounded``: every grid raced on select's range for its images (where known), else on
    [0, 10]."""
    out = {}
    shared = io.shared_data()
    cider = (0.0, 10.0)
    if (shared / "where-image2-captions").is_dir():
        base = where_image2.per_image_cider(shared)[1]
        # select's range on these images (selection.race.score_range)
        bound = (0.0, CIDER_BOUND * (1 + 1e-9)) if bounded else cider
        out["where-image2"] = (base, [f"model {k}" for k in range(12)], bound, None)
        out["where-image2 + gaps"] = (*with_gaps(base, (0.1, 0.2)), bound, None)
        rows = np.random.default_rng(5000).integers(0, base.shape[1], 5000)
        out["N=5000 + gaps"] = (*with_gaps(base[:, rows], (0.05, 0.1, 0.2)), bound, None)
        best = base[np.argmax(base.mean(1))]
        out["equal means"] = (np.stack([np.roll(best, ROTATION * k) for k in range(12)]),
                              [f"copy {k}" for k in range(12)], bound, None)
        out["weak"] = (weak_grid(shared), [f"weak {k}" for k in range(12)], bound, None)
    if run is not None:
        for name, arrays in assisted.load_grids(run).items():
            matrix = arrays["per_image"]
            high = (0.0, float(arrays["score_high"])) if bounded and "score_high" in arrays else cider
            out[name] = (matrix, [f"checkpoint {k}" for k in range(len(matrix))], high, arrays["prior"])
    return out


def race_facts(result, truth: np.ndarray, mcb: np.ndarray, names: list[str]) -> dict:
    """One race's validity and power (``truth``: f[M] whole-split means; ``mcb``: bool[M])."""
    intervals = result.intervals  # [rounds, M, 2], NaN where not yet scored
    scored = ~np.isnan(intervals[..., 0])
    slack = 1e-9 * (1 + np.abs(truth))
    held = ~scored | ((intervals[..., 0] <= truth + slack) & (intervals[..., 1] >= truth - slack))
    dropped = result.table["status"].str.startswith("dropped").to_numpy()
    best = truth.max()
    within = float(getattr(result, "within", math.nan))
    facts = {"covered_all_rounds": bool(held.all()), "best_dropped": bool(dropped[truth >= best - 1e-12].any()),
             "max_drop_equal": dropped, "within": within,
             "pick_within": bool(best - truth[result.picked] <= within + 1e-9) if math.isfinite(within) else False,
             "outside_mcb": not bool(mcb[result.picked]), "cost": result.cost, "left": 1 + len(result.not_separated),
             "regret": best - truth[result.picked], "dropped_far": dropped[truth <= best - 0.05].mean()
             if (truth <= best - 0.05).any() else math.nan}
    gap = best - truth
    for low, high in zip(GAP_BINS[:-1], GAP_BINS[1:]):
        inside = (gap > 1e-12) & (gap >= low) & (gap < high)  # the best itself (gap 0) is the false drop, above
        facts[f"dropped bin {gap_bin(low, high)}"] = dropped[inside].mean() if inside.any() else math.nan
    for name, flag in zip(names, dropped):
        if name.startswith("gap "):
            facts[f"dropped {name}"] = bool(flag)
    return facts


def gap_bin(low: float, high: float) -> str:
    """A bin's name: (0, 0.05), [0.05, 0.1), ..., >= 0.2."""
    if math.isinf(high):
        return f">= {low:g}"
    return f"({low:g}, {high:g})" if low == 0 else f"[{low:g}, {high:g})"


def seeds_facts(per_image: np.ndarray, names: list[str], score_range, prior, budget: float, seeds) -> list[dict]:
    """``race_facts`` of the races of these seeds (one worker's share)."""
    truth, mcb = per_image.mean(1), assisted.possibly_best(per_image)
    return [race_facts(racing.race_table(per_image, racing.RaceSettings(budget=budget, seed=seed), prior,
                                         score_range=score_range), truth, mcb, names) for seed in seeds]


def cell(name: str, per_image: np.ndarray, names: list[str], score_range, prior, budget: float, races: int,
         workers: int = 1) -> dict:
    """One grid and budget, ``races`` seeds (``prior``: f[M], lower is better, or None), over ``workers``
    processes (each race depends on its seed alone, so the counts do not depend on them)."""
    truth = per_image.mean(1)
    start = time.perf_counter()
    shares = [range(w, races, workers) for w in range(workers)]
    if workers == 1:
        parts = [seeds_facts(per_image, names, score_range, prior, budget, shares[0])]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.starmap(seeds_facts, [(per_image, names, score_range, prior, budget, s) for s in shares])
    by_seed = {seed: f for share, part in zip(shares, parts) for seed, f in zip(share, part)}
    facts = [by_seed[seed] for seed in range(races)]
    table = pd.DataFrame([{k: v for k, v in f.items() if k != "max_drop_equal"} for f in facts])
    drops_each = np.mean([f["max_drop_equal"] for f in facts], axis=0)  # each candidate's drop rate
    row = {"grid": name, "models": per_image.shape[0], "images": per_image.shape[1], "budget": budget,
           "races": races, "range_high": score_range[1]}
    row["covered"], row["covered_low"], row["covered_high"] = share(table["covered_all_rounds"])
    row["best_dropped"], _, row["best_dropped_high"] = share(table["best_dropped"])
    row["max_drop_rate"] = float(drops_each[truth >= truth.max() - 1e-12].max())
    row["pick_within"], row["pick_within_low"], _ = share(table["pick_within"])
    row |= {"within_median": table["within"].median(), "p_outside_mcb": table["outside_mcb"].mean(),
            "regret_mean": table["regret"].mean(), "dropped_far": table["dropped_far"].mean(),
            "left": table["left"].mean(), "cost": table["cost"].mean(), "seconds": time.perf_counter() - start}
    for column in table.columns:
        if column.startswith(("dropped gap", "dropped bin")):
            row[column] = table[column].mean()  # NaN where the grid has no candidate in the bin
    print(f"{name}, {budget:.0%}: covered {row['covered']:.4f}, best dropped {row['best_dropped']:.4f}, "
          f"within {row['within_median']:.3f} (pick inside {row['pick_within']:.4f}), "
          + ", ".join(f"{k} {row[k]:.3f}" for k in row if k.startswith("dropped gap"))
          + f", cost {row['cost']:.3f}, {row['seconds']:.0f} s", flush=True)
    return row


def markdown(table: pd.DataFrame) -> str:
    """The README's table: one row per grid and budget."""
    gaps = [c for c in table.columns if c.startswith(("dropped gap", "dropped bin"))]
    head = ("| grid (models x images) | budget | races | every interval covered, all looks [95% CI] | best dropped "
            "(max over equal bests) | pick within `within` | `within` (median) | P(outside MCB) | mean regret | "
            "dropped, >= 0.05 below | " + " | ".join(g.replace("dropped ", "drop ") for g in gaps)
            + (" | " if gaps else "") + "left | cost |")
    lines = [head, "|" + "---|" * (12 + len(gaps))]
    fmt = lambda v: "" if pd.isna(v) else f"{v:.3f}"  # noqa: E731
    for r in table.to_dict("records"):
        lines.append(
            f"| {r['grid']} ({r['models']} x {r['images']}) | {r['budget']:.0%} | {r['races']} | "
            f"{r['covered']:.4f} [{r['covered_low']:.4f}, {r['covered_high']:.4f}] | "
            f"{r['best_dropped']:.4f} ({r['max_drop_rate']:.4f}) | {r['pick_within']:.4f} | {fmt(r['within_median'])} | "
            f"{r['p_outside_mcb']:.3f} | {r['regret_mean']:.4f} | {fmt(r['dropped_far'])} | "
            + " | ".join(fmt(r.get(g)) for g in gaps) + (" | " if gaps else "")
            + f"{r['left']:.1f} | {r['cost']:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="a run.py run folder (its cache/arrays_*.npz)")
    parser.add_argument("--races", type=int, default=RACES)
    parser.add_argument("--budgets", type=float, nargs="+", default=list(BUDGETS))
    parser.add_argument("--only", nargs="+", default=None, metavar="GRID", help="these grids only")
    parser.add_argument("--out", type=Path, default=None, help="write power.tsv and power.md here")
    parser.add_argument("--workers", type=int, default=1, help="processes racing a cell's seeds")
    parser.add_argument("--full-range", action="store_true",
                        help="race every grid on CIDEr-D's [0, 10] (as select did before issue 48: the baseline)")
    parser.add_argument("--matrix", nargs=3, action="append", default=[], metavar=("NAME", "NPY", "HIGH"),
                        help="one more grid: per-image scores f[models, images] saved as .npy (e.g. a search's models "
                             "scored on every val image by select --budget 1), raced on [0, HIGH] (select's range)")
    args = parser.parse_args(argv)
    rows = []
    found = grids(args.run, not args.full_range)
    for name, path, high in args.matrix:
        matrix = np.load(path)
        found[name] = (matrix, [f"model {k}" for k in range(len(matrix))], (0.0, float(high)), None)
    for name, (per_image, names, score_range, prior) in found.items():
        if args.only is None or name in args.only:
            rows += [cell(name, per_image, names, score_range, prior, budget, args.races, args.workers)
                     for budget in args.budgets]
    if not rows:
        print(f"nothing raced: {io.shared_data()} has no where-image2-captions and no --run was given")
        return 1
    table = pd.DataFrame(rows)
    text = markdown(table)
    print(text)
    if args.out:
        io.write_tsv(table, args.out / "power.tsv")
        io.write_text(text + "\n", args.out / "power.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
