"""Issue 57: how many images a two-model race needs to separate a gap, and whether it stays valid.

    python3 experiments/select_exact/study.py --out DIR [--races 1000] [--scores NPZ] [--parts ...]

Per-image CIDEr-D as ``select`` scores the where-image2 files (``exact_inputs``; ptb, document
frequencies from all 1,000 images; every model on every image, ``select_files(..., exact=True)``),
saved to ``DIR/scores.npz`` (``--scores`` reads it back, so that another package on PYTHONPATH, e.g.
main's, races the same numbers: the baseline). Then, with ``ranking.racing.race_table`` on select's
range for these images (``selection.race.score_range``: CIDEr-D's bound from the references):

- ``done``: the Done-when pair, two files 0.36 apart: par_2's captions moved by one image (0.0598)
  against pre_1 with the captions of a random share of its images moved too (that share chosen so the
  gap is 0.360), and the plain pair par_2 against par_2 moved; ``--races`` races at 10%: the share
  separated (the moved file dropped), with its Clopper-Pearson 95% interval;
- ``gaps``: the best file (init_3) against a copy a gap g below it (0.05, 0.1, 0.2, 0.4), made two
  ways: ``scaled`` (its per-image scores times 1 - g / mean: differences proportional to the scores)
  and ``moved`` (the captions of a share of its images moved: differences as noisy as a real model's);
  races at budget 1 (each model may get every image; the race stops when one is dropped): the images
  each model was scored on when the copy was dropped (median, 90th percentile; 1000 = never before the
  end), and the share separated at 10% and 25%;
- ``valid``: two models with equal means (init_3 and its images rotated by 83: each is a best): the
  share of races in which either is dropped (each at most alpha = 0.05), the pick within ``within``,
  every interval covering at every look, at 10%, 25% and 100%.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import exact_inputs

from pregen_jax import io
from pregen_jax.ranking import racing

GAPS = (0.05, 0.1, 0.2, 0.4)
TARGET = 0.36  # the Done-when pair's gap


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """The exact 95% interval of a binomial share (scipy's beta quantiles)."""
    from scipy.stats import beta
    low = beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    high = beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return float(low), float(high)


def scores(out: Path) -> tuple[np.ndarray, list[str], float]:
    """(f64[8, 1000] per-image CIDEr-D of ``exact_inputs.MODELS``, their names, select's range top)."""
    from pregen_jax.captionfiles import read_references
    from pregen_jax.selection import RaceSettings, select_files
    from pregen_jax.selection.race import score_range
    paths = exact_inputs.write(out / "files")
    references = read_references(out / "files" / "refs.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the moved file's misfit warning: it is moved on purpose
        _, selection, found = select_files(references, paths, "CIDEr", RaceSettings(), exact=True)
    text = lambda refs: [" ".join(r) for r in refs]  # noqa: E731 (as the race joins token lists)
    high = score_range("CIDEr", {i: text(r) for i, r in enumerate(found.references)},
                       {i: text(r) for i, r in found.idf_from.items()}, tokenized=True)[1]
    return selection.scores, list(exact_inputs.MODELS), high


def moved_share(own: np.ndarray, moved: np.ndarray, gap: float, seed: int) -> np.ndarray:
    """``own``'s per-image scores with those of a random share of images replaced by ``moved``'s (the
    captions of those images moved), the share the smallest that puts the mean ``gap`` below ``own``'s."""
    order = np.random.default_rng(seed).permutation(len(own))
    loss = np.cumsum((own - moved)[order]) / len(own)
    count = int(np.searchsorted(loss, gap))  # the last share whose loss is still under ``gap``
    row = own.copy()
    row[order[:count]] = moved[order[:count]]
    return row


def races(pair: np.ndarray, budget: float, count: int, high: float) -> list:
    """``count`` races of the two rows of ``pair`` at ``budget``, seeds 0..count - 1."""
    return [racing.race_table(pair, racing.RaceSettings(budget=budget, seed=seed), score_range=(0.0, high))
            for seed in range(count)]


def separated(results, worse: int) -> int:
    """Races in which the worse row was dropped."""
    return sum(str(r.table["status"][worse]).startswith("dropped") for r in results)


def done_rows(matrix, names, high, count) -> list[dict]:
    """The Done-when pair (0.36 apart) and the plain moved pair, ``count`` races each at 10%."""
    pre, par, moved = (matrix[names.index(n)] for n in ("pre_1", "par_2", "par_2_moved"))
    partly = moved_share(pre, moved, pre.mean() - moved.mean() - TARGET, 0)
    rows = []
    for label, better in (("pre_1 partly moved vs par_2 moved", partly), ("par_2 vs par_2 moved", par)):
        pair = np.stack([better, moved])
        start = time.perf_counter()
        hits = separated(races(pair, 0.1, count, high), 1)
        low, top = clopper_pearson(hits, count)
        rows.append({"pair": label, "gap": pair[0].mean() - pair[1].mean(), "budget": 0.1, "races": count,
                     "separated": hits / count, "cp_low": low, "cp_high": top,
                     "seconds": time.perf_counter() - start})
        print(rows[-1], flush=True)
    return rows


def moved_like(own: np.ndarray, matrix, names) -> np.ndarray:
    """What ``own``'s model would score with its captions moved: approximated by par_2 moved's scores
    (every moved file scores 0.056-0.063: a caption of another image fits this one's references about
    equally badly whoever wrote it)."""
    return matrix[names.index("par_2_moved")]


def gap_rows(matrix, names, high, count) -> list[dict]:
    best = matrix[names.index("init_3")]
    moved = moved_like(best, matrix, names)
    rows = []
    for gap in GAPS:
        for kind, copy in (("scaled", best * (1 - gap / best.mean())), ("moved", moved_share(best, moved, gap, 1))):
            pair = np.stack([best, copy])
            full = races(pair, 1.0, count, high)
            when = np.array([r.table["images_scored"][1] if str(r.table["status"][1]).startswith("dropped")
                             else 1000 for r in full])
            row = {"gap": gap, "kind": kind, "true_gap": best.mean() - copy.mean(), "races": count,
                   "images_median": float(np.median(when)), "images_p90": float(np.quantile(when, 0.9))}
            for budget in (0.1, 0.25):
                row[f"separated_{budget:g}"] = separated(races(pair, budget, count, high), 1) / count
            rows.append(row)
            print(row, flush=True)
    return rows


def valid_rows(matrix, names, high, count) -> list[dict]:
    best = matrix[names.index("init_3")]
    pair = np.stack([best, np.roll(best, 83)])
    truth = pair.mean(1)
    rows = []
    for budget in (0.1, 0.25, 1.0):
        results = races(pair, budget, count, high)
        dropped = np.array([[str(s).startswith("dropped") for s in r.table["status"]] for r in results])
        covered = [bool(np.all(np.isnan(r.intervals[..., 0]) | ((r.intervals[..., 0] <= truth + 1e-9)
                                                                 & (r.intervals[..., 1] >= truth - 1e-9))))
                   for r in results]
        within = [truth.max() - truth[r.picked] <= r.within + 1e-9 for r in results]
        row = {"budget": budget, "races": count, "drop_rate_0": dropped[:, 0].mean(),
               "drop_rate_1": dropped[:, 1].mean(), "any_dropped": dropped.any(1).mean(),
               "covered": float(np.mean(covered)), "pick_within": float(np.mean(within)),
               "within_median": float(np.median([r.within for r in results]))}
        row["any_dropped_cp_high"] = clopper_pearson(int(dropped.any(1).sum()), count)[1]
        rows.append(row)
        print(row, flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--races", type=int, default=1000)
    parser.add_argument("--gap-races", type=int, default=200, help="races per gap, kind and budget")
    parser.add_argument("--scores", type=Path, default=None, help="a scores.npz this script wrote")
    parser.add_argument("--parts", nargs="+", default=["done", "gaps", "valid"], choices=["done", "gaps", "valid"])
    parser.add_argument("--tag", default="", help="a suffix for the tables' names (e.g. -main)")
    args = parser.parse_args(argv)
    if not (io.shared_data() / "where-image2-captions").is_dir():
        print(f"skipped: {io.shared_data()} has no where-image2-captions")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scores is None:
        matrix, names, high = scores(args.out)
        np.savez(args.out / "scores.npz", matrix=matrix, names=np.array(names), high=high)
    else:
        saved = np.load(args.scores)
        matrix, names, high = saved["matrix"], [str(n) for n in saved["names"]], float(saved["high"])
    print("means:", dict(zip(names, np.round(matrix.mean(1), 4))), f"range top {high:.4f}", flush=True)
    parts = {"done": lambda: done_rows(matrix, names, high, args.races),
             "gaps": lambda: gap_rows(matrix, names, high, args.gap_races),
             "valid": lambda: valid_rows(matrix, names, high, args.races)}
    for part in args.parts:
        table = pd.DataFrame(parts[part]())
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        io.write_tsv(table, args.out / f"{part}{args.tag}.tsv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
