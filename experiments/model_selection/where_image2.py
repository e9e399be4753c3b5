"""The 12 where-image2 Flickr8k models (Tanti et al. 2018), which exist only as captions:
cheap decisions on post-gen alone (no probabilities, so no perplexity or pre-gen).

    python3 experiments/model_selection/where_image2.py [--races 50]

Per-image CIDEr of every model on the 1,000 Flickr8k test images, computed once over the whole
split (whole-set document frequencies), then CIDEr on random shares and racing
(``cheap.cheap_rows``), each image looked up still counting as one scored.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cheap

from pregen_jax import io, postgen
from pregen_jax.datasets import TOKENIZER_NAME, read_flickr8k, tokenize
from pregen_jax.ranking import decisions

MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)]


def references(shared: Path, ids: list[str]) -> dict[str, list[str]]:
    """Flickr8k's test references of the images ``ids``, tokenized, by image id."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split file's stray 1.jpg..5.jpg entries
        test = read_flickr8k(shared / "flickr8k")["test"]
    row = {image_id: n for n, image_id in enumerate(test.image_ids)}
    return {i: [" ".join(r) for r in test.captions[row[i]]] for i in ids}


def per_image_cider(shared: Path) -> tuple[list[str], np.ndarray]:
    """(model names, f64[12, 1000] per-image CIDEr, whole-split frequencies)."""
    folder = shared / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    gts = references(shared, ids)
    matrix = []
    for model in MODELS:
        lines = (folder / f"flickr8k_{model}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)]
        res = {i: [" ".join(tokenize(c))] for i, c in zip(ids, lines)}
        matrix.append(postgen.CIDEr().compute_score(gts, res)[1])
    return MODELS, np.asarray(matrix, np.float64)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=cheap.RACES)
    parser.add_argument("--out", default=None, help="write where_image2.tsv here")
    args = parser.parse_args(argv)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    names, per_image = per_image_cider(shared)
    significant = decisions.paired_bootstrap(per_image, 1000, seed=0).significant()
    rows = cheap.cheap_rows(per_image, significant, races=args.races)
    table = pd.DataFrame([{"grid": "where-image2", "checkpoints": len(names), **r, "tokenizer": TOKENIZER_NAME}
                          for r in rows])
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.out:
        io.write_tsv(table, Path(args.out) / "where_image2.tsv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
