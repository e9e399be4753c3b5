"""A finished search's models scored on every image of its val split, for ``race_power.py --matrix``.

    python3 experiments/model_selection/demo_grid.py RUN OUT_DIR

Runs ``select``'s race at ``--budget 1`` with every model completed on every image (each model
decoded once, beam as the search's generation settings), and saves OUT_DIR/per_image.npy
(f64[models, images], CIDEr-D with the split's document frequencies, the search's tokenizer) and
OUT_DIR/range.npy (the score range select races on: CIDEr-D's bound from the references).
"""
import functools
import sys
import time
from pathlib import Path

import numpy as np

from pregen_jax.pipeline.finished import FinishedSearch
from pregen_jax.ranking.racing import RaceSettings
from pregen_jax.selection import race as race_mod
from pregen_jax.selection import search_models


def main(run_folder: str, out: str) -> None:
    seen = {}
    score_range = race_mod.score_range

    def recording(*args, **kwargs):
        seen["range"] = score_range(*args, **kwargs)
        return seen["range"]
    race_mod.score_range = recording  # the range select races on, kept
    search_models.race_candidates = functools.partial(race_mod.race_candidates, complete=True)  # every image
    start = time.time()
    run = FinishedSearch.open(run_folder)
    _, selection, _ = search_models.run_select(run, "CIDEr", RaceSettings(budget=1.0, seed=0), progress=False)
    Path(out).mkdir(parents=True, exist_ok=True)
    np.save(Path(out) / "per_image.npy", selection.scores)
    np.save(Path(out) / "range.npy", np.array(seen["range"]))
    print(f"{selection.scores.shape} scores, range {seen['range']}, {time.time() - start:.0f} s, {selection.seconds}")
    print("means:", np.nanmean(selection.scores, 1).round(3))


if __name__ == "__main__":
    main(*sys.argv[1:3])
