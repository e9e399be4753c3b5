"""Where a finished search's post-gen seconds go: each metric on every model's captions, in one
process, as a post-gen worker scores them (strata, then each configured metric's blocks).

    python benchmarks/bench_postgen_demo.py RUN     # RUN: a finished search folder, e.g. from
                                                    # bench_scale.py --only demo --demo-out RUN

Reads the run's config and its cached captions (nothing is trained or decoded) and scores them
again with no cache, on this machine alone: the seconds a worker would spend with no trainers
beside it. METEOR's JVM start (in a search: while the first model trains) is timed apart. The
last line is machine-readable: ``postgen_worker_s=<s> meteor_jvm_start_s=<s> <metric>_s=<s> ...``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished search folder (its cache/captions is read)")
    parser.add_argument("--backend", choices=("native", "coco"), default="native",
                        help="every metric: this package's backends (default) or the toolkits "
                             "(pycocoevalcap, its jars, gensim)")
    args = parser.parse_args()
    import dataclasses

    from pregen_jax.pipeline import flow
    from pregen_jax.pipeline.config import SearchConfig
    from pregen_jax.pipeline.postgen_metrics import LazyMetrics, gts_res
    from pregen_jax.pipeline.sources import load_data

    folders = sorted((args.run / "cache" / "captions").glob("*/captions.txt"))
    if not folders:
        raise SystemExit(f"bench_postgen_demo: error: {args.run}: no cached captions (is it a finished search?)")
    config = SearchConfig.load(args.run / "config.toml")
    config = dataclasses.replace(config, postgen=dataclasses.replace(config.postgen, backend=args.backend))
    data = load_data(config, progress=False, run_folder=args.run)
    metrics = LazyMetrics(config.postgen, data)
    seconds = {"strata": 0.0, **{name: 0.0 for name in metrics.names}}
    jvm = 0.0
    try:
        if "METEOR" in metrics.names:  # its JVM and paraphrase table, then one segment: the start alone
            start = time.perf_counter()
            metrics["METEOR"].compute_score({"x": ["a dog runs"]}, {"x": ["a dog"]})
            jvm = time.perf_counter() - start
        for path in folders:
            captions = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
            gts, res = gts_res(data, captions)
            start = time.perf_counter()
            blocks = flow.strata_of(data, captions, args.backend).blocks(data.test.image_ids)
            seconds["strata"] += time.perf_counter() - start
            for name in metrics.names:
                start = time.perf_counter()
                metrics[name].score_blocks(gts, res, blocks)
                seconds[name] += time.perf_counter() - start
    finally:
        metrics.close()
    total = sum(seconds.values())
    print(f"{len(folders)} models x {len(data.test)} test images, one process, no cache, backend {args.backend}\n")
    print("| part | seconds | share |\n|---|---|---|")
    for name, value in seconds.items():
        print(f"| {name} | {value:.2f} | {value / total:.0%} |")
    print(f"| all | {total:.2f} | 100% |\n\nMETEOR JVM start (apart): {jvm:.2f} s")
    print(" ".join([f"postgen_worker_s={total:.2f}", f"meteor_jvm_start_s={jvm:.2f}",
                    *(f"{name}_s={value:.2f}" for name, value in seconds.items())]))


if __name__ == "__main__":
    main()
