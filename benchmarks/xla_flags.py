"""Do XLA's CPU flags change the models a search trains? (issue 52: trained models differ by host)

    python benchmarks/xla_flags.py --out DIR [--flags= --flags=--xla_cpu_max_isa=SSE4_2 ...]

For each flag set (``XLA_FLAGS``, the first one the baseline; default: none, the host's own ISA
capped at AVX2, SSE4.2, platform-dependent math off, and both), a small search in a process of its
own: 240 generated images of random features, ``pre`` and ``merge`` GRUs and a transformer (width
32), 3 epochs, CIDEr only, no post-gen workers. Prints, against the baseline, whether each model's
trained parameters are identical (else their largest difference relative to the baseline's largest
value) and how many float columns of ``table.tsv`` moved. The same flags twice give identical
models on one host (the first two runs), so a flag that moves anything changes XLA's arithmetic.
Different hosts cannot be compared from one machine: run it on each and compare ``DIR/*/table.tsv``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

FLAGS = ["", "", "--xla_cpu_max_isa=AVX2", "--xla_cpu_max_isa=SSE4_2",
         "--xla_cpu_enable_platform_dependent_math=false",
         "--xla_cpu_max_isa=AVX2 --xla_cpu_enable_platform_dependent_math=false"]
ROOT = Path(__file__).resolve().parents[1]

SEARCH = """
import sys
from pathlib import Path
from pregen_jax import cli
from tests.builders import training_config, write_config, write_training_corpus
root = Path(sys.argv[1]); root.mkdir(parents=True, exist_ok=True)
write_training_corpus(root, images=240, refs=3, feature_size=32)
sizes = {"embed_size": 32, "hidden_size": 32, "image_size": 32}
config = write_config(root / "search.toml", training_config(
    models={"architectures": ["pre", "merge", "transformer"], "rnn": sizes,
            "transformer": {"width": 32, "mlp_width": 32, "image_size": 32}},
    training={"epochs": 3, "batch_size": 16, "snapshot_epochs": []}, postgen={"metrics": ["CIDEr"]}))
sys.exit(cli.main(["run", "--config", str(config), "--out", str(root / "out"), "--no-progress", "--workers", "0"]))
"""


def trained(folder: Path) -> dict:
    """architecture -> its trained parameters (a list of arrays, the tree's leaf order)."""
    import jax
    import numpy as np

    from pregen_jax.training import checkpoints
    models = {}
    for path in sorted((folder / "out" / "cache" / "train").glob("*/model.msgpack")):
        tree, _ = checkpoints.load(path)
        models[path.parent.name.split("-")[0]] = [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]
    return models


def compared(base: Path, other: Path) -> str:
    """One line: each model identical or its largest relative difference; table.tsv's float columns that moved."""
    import numpy as np
    import pandas as pd
    a, b = trained(base), trained(other)
    parts = []
    for name in a:
        if all(np.array_equal(x, y) for x, y in zip(a[name], b[name])):
            parts.append(f"{name} identical")
        else:
            rel = max(float(np.abs(x - y).max() / (np.abs(x).max() or 1.0)) for x, y in zip(a[name], b[name]))
            parts.append(f"{name} {rel:.1e}")
    ta, tb = (pd.read_csv(f / "out" / "table.tsv", sep="\t") for f in (base, other))
    floats = [c for c in ta.columns if ta[c].dtype.kind == "f"]
    x, y = ta[floats].to_numpy(float), tb[floats].to_numpy(float)
    moved = ~((x == y) | (np.isnan(x) & np.isnan(y)))
    return f"{'; '.join(parts)}; table.tsv {int(moved.any(0).sum())} of {len(floats)} float columns moved"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="a folder for one run folder per flag set")
    parser.add_argument("--flags", action="append", help="one XLA_FLAGS value (written --flags=VALUE), the first "
                                                         "the baseline; repeat for more (default: the six above)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    folders = []
    for k, flags in enumerate(args.flags or FLAGS):
        folder = out / f"flags{k}"
        env = {**os.environ, "XLA_FLAGS": flags, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-c", SEARCH, str(folder)], env=env, check=True, capture_output=True)
        folders.append(folder)
        line = "baseline" if k == 0 else compared(folders[0], folder)
        print(f"XLA_FLAGS={flags!r}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
