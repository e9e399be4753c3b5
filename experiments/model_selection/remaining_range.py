"""Issue 48, item 1: how much a race would gain from the range over the images not yet drawn.

    python3 experiments/model_selection/remaining_range.py [--orders 2000]

A race bets against the worst per-image difference, so it is told the largest CIDEr-D any caption
can get on the split (``postgen.cider.score_bound``'s largest value over the split). The issue asks
for the largest bound over the images not yet drawn instead, which can only be smaller. This prints,
for the study's shapes validation images and Flickr8k's test images, the mean over random orders of
that remaining largest bound over the split's, after 5, 10, 25 and 50% of the images are drawn: the
share of the range a race would keep at its budgets.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import where_image2

from pregen_jax import io, postgen
from pregen_jax.datasets import ShapesConfig, load_shapes
from pregen_jax.postgen import cider

DRAWN = (0.05, 0.10, 0.25, 0.50)


def remaining_share(bound: np.ndarray, drawn: float, orders: int, rng: np.random.Generator) -> float:
    """Mean over ``orders`` random orders of max(bound of the images not yet drawn) / max(bound)."""
    n = len(bound)
    return float(np.mean([bound[rng.permutation(n)[int(drawn * n):]].max() for _ in range(orders)]) / bound.max())


def splits() -> dict[str, list[list[str]]]:
    """references[image][r] (tokenized strings) of each split, by name."""
    val = load_shapes(ShapesConfig(1200, 600, 300, seed=0)).splits["val"]  # the middle plan's
    out = {"shapes val (600)": [[" ".join(r) for r in val.captions[n]] for n in range(600)]}
    folder = io.shared_data() / "where-image2-captions"
    if folder.is_dir():
        ids = (folder / "imgs_flickr8k.txt").read_text().split()
        gts = where_image2.references(io.shared_data(), ids)
        out["Flickr8k test (1000)"] = [postgen.tokenized(list(gts[i])) for i in ids]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=2000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, refs in splits().items():
        bound = cider.score_bound(cider.Corpus.build(refs, [], []))
        shares = ", ".join(f"{d:.0%} {remaining_share(bound, d, args.orders, rng):.4f}" for d in DRAWN)
        print(f"{name}: largest bound {bound.max():.3f}; the largest not yet drawn over it, after {shares}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
