"""``evaluate`` warm from two checkouts of this package on the same files, runs alternating (issue 51).

    python benchmarks/bench_warm_before_after.py BEFORE_CHECKOUT --images 40504 --runs 3

Each checkout (this one: "after") gets a cache folder of its own, filled by a first run of its own
code (what its users' first run leaves), then ``--runs`` warm runs of each alternate (before, after),
each a fresh process (``bench_evaluate.run_child``: wall, CPU with the children, memory); the
per-image scores of the two are compared byte for byte. The files are ``bench_evaluate.build_files``'
(above 5,000 images: no sentence repeats). The load average is printed with each run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import ROOT, build_files, ours_command, run_child  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the other checkout (its package imported from there)")
    parser.add_argument("--images", type=int, default=40504)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        refs, res, what = build_files(folder, args.images)
        envs = {name: {**os.environ, "PREGEN_JAX_CACHE": str(folder / f"cache-{name}"), "PYTHONPATH": str(path)}
                for name, path in (("before", args.before.resolve()), ("after", ROOT))}
        for name, env in envs.items():
            wall = run_child(ours_command(refs, res, folder / f"fill-{name}"), env, cwd=folder)[0]
            print(f"{name}: first run {wall:.2f} s (fills its cache folder)", flush=True)
        print(f"{args.images:,} images ({what}): alternating warm runs")
        walls: dict[str, list[float]] = {name: [] for name in envs}
        for k in range(args.runs):
            for name, env in envs.items():
                wall, cpu, _, every = run_child(ours_command(refs, res, folder / f"{name}{k}"), env, cwd=folder)
                walls[name].append(wall)
                print(f"run {k} {name}: {wall:.2f} s (CPU {cpu:.2f} s, every process at once {every:.0f} MB); "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        same = all((folder / f"before{k}" / "per_image.tsv").read_bytes() == (folder / f"after{k}" / "per_image.tsv")
                   .read_bytes() for k in range(args.runs))
        before, after = statistics.median(walls["before"]), statistics.median(walls["after"])
        print(f"median before {before:.2f} s, after {after:.2f} s ({after / before - 1:+.1%}); per-image scores "
              f"{'byte-identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
