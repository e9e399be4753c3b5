"""Issue 57: which change separates the Done-when pair (two files 0.36 CIDEr-D apart, 10% of 1,000
images): today's race, then without the last round (the budget a doubling leaves unspent, as before),
then also with bets staking at most 0.9 (as before). What is left between that and main's race
(``study.py --tag=-main`` with main's package) is the K = 2 sequence at alpha against two at alpha / 2.

    python3 experiments/select_exact/ablation.py --scores DIR/scores.npz [--races 200]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import study

from pregen_jax.ranking import racing


def doubling_only(original):
    """``round_images`` that refuses a round which is not a doubling (the last round of the budget left)."""
    return lambda size, done, alive, left: None if done and size - done > done else original(size, done, alive, left)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", type=Path, required=True)
    parser.add_argument("--races", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    saved = np.load(args.scores)
    matrix, names, high = saved["matrix"], [str(n) for n in saved["names"]], float(saved["high"])
    pre, moved = matrix[names.index("pre_1")], matrix[names.index("par_2_moved")]
    pair = np.stack([study.moved_share(pre, moved, pre.mean() - moved.mean() - study.TARGET, 0), moved])
    original, truncation = racing.round_images, racing.RACE_TRUNCATION
    rows = []
    for label, last_round, stake in (("today", True, truncation), ("no last round", False, truncation),
                                     ("no last round, stake 0.9", False, 0.9)):
        racing.round_images = original if last_round else doubling_only(original)
        racing.RACE_TRUNCATION = stake
        results = study.races(pair, 0.1, args.races, high)
        hits = study.separated(results, 1)
        low, top = study.clopper_pearson(hits, args.races)
        rows.append({"design": label, "races": args.races, "separated": hits / args.races, "cp_low": low,
                     "cp_high": top, "images_each": float(np.mean([r.table["images_scored"][0] for r in results]))})
        print(rows[-1], flush=True)
    racing.round_images, racing.RACE_TRUNCATION = original, truncation
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if args.out:
        table.to_csv(args.out / "ablation.tsv", sep="\t", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
