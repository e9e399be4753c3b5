"""What spending alpha over comparisons instead of offers buys at offer 2: the interval's width at
the old level (offer 2 at alpha_2 = 6 alpha / (4 pi^2), the first offer having taken alpha_1 for
nothing) against the new (comparison 1 at 6 alpha / pi^2), on the same images of the same replays.

    python experiments/tracker/width.py --replays 1000

Offer 2 of the where-image2 stream as listed (init_2 against the kept init_1), offer 2's image order
of replay r as the tracker draws it (``default_rng([r, 2])``), at each look of the default batch (32
images, doubling); prints the median and range over replays of old width / new width at each look.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import stream  # experiments/tracker/stream.py, beside this file

from pregen_jax import io
from pregen_jax.ranking import tracking
from pregen_jax.selection.race import score_range


def widths(differences: np.ndarray, population: int, alpha: float, width: float) -> np.ndarray:
    """f[B]: the two-sided sequence's width for rows of paired differences f[B, t] (every row its t images)."""
    _, low, high = tracking.paired_look(differences, population, alpha, width, within=0.0)
    return high - low


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    names, scores, data = stream.per_image(shared)
    gts = dict(enumerate(data["gts"]))
    low, high = score_range("CIDEr", gts, gts)
    n = scores.shape[1]
    old, new = 6 * args.alpha / (4 * math.pi ** 2), 6 * args.alpha / math.pi ** 2
    assert new == tracking.Spending(args.alpha).level(1)
    orders = np.stack([np.random.default_rng([r, 2]).permutation(n) for r in range(args.replays)])
    differences = scores[1][orders] - scores[0][orders]
    print(f"offer 2 ({names[1]} against {names[0]}), {args.replays} replays: old alpha {old:.4f}, new {new:.4f}; "
          f"width factors (predicted) {math.sqrt(math.log(1 / old) / math.log(1 / args.alpha)):.3f} and "
          f"{math.sqrt(math.log(1 / new) / math.log(1 / args.alpha)):.3f}")
    for t in tracking.looks(n, 32, n)[:-1]:  # the last look (every image) is exact at either level
        narrow = widths(differences[:, :t], n, new, high - low)
        ratio = widths(differences[:, :t], n, old, high - low) / narrow
        print(f"{t} images: old width / new width median {np.median(ratio):.3f} (min {ratio.min():.3f}, max "
              f"{ratio.max():.3f}); new width median {np.median(narrow):.4f} CIDEr-D", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
