"""Benchmark the 504-metric sweep against the plain-Python oracle, and how it scales.

    python benchmarks/bench_sweep.py            # full run (a few minutes)
    python benchmarks/bench_sweep.py --quick    # under a minute

For Flickr8k-test-sized (1,000 images) and MSCOCO-sized (5,000 images) inputs, 5 references
of up to 21 positions, and the spec's 15 strata: compile time, steady-state time, peak memory
of the sweep, and the oracle's time on the same work. The oracle is timed on a sample of
metrics (all 15 strata each) and scaled to all 504, as it takes minutes; the sample size is
printed. Then a curve over 1k-100k images and a space extended to 5,184 metrics.
The last line printed is machine-readable:
    sweep_vs_oracle=<ratio at 5,000 images> sweep_steady_s_5000=<seconds>
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import random_ref_probs, spec_strata  # noqa: E402
from extra_tiers import extended_space  # noqa: E402

from pregen_jax import tiers  # noqa: E402
from pregen_jax.tiers import oracle  # noqa: E402

TARGET_STEADY_S = 0.1
TARGET_RATIO = 1000.0


def time_sweep(ref_probs, strata, space, repeats):
    """(compile_s, steady_s, temp_bytes): first call minus steady, median of repeats."""
    fn = tiers.compiled_sweep(space)
    args = (jnp.asarray(ref_probs.probs, jnp.float32), jnp.asarray(ref_probs.ranks), jnp.asarray(ref_probs.mask),
            jnp.asarray(strata))
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    temp_bytes = getattr(memory, "temp_size_in_bytes", 0) + getattr(memory, "output_size_in_bytes", 0)
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return compile_s, float(np.median(times)), temp_bytes


def time_oracle(ref_probs, strata, sample_metrics, seed=0):
    """Seconds for the oracle on all metrics x strata, scaled from a sample of metrics."""
    names = tiers.DEFAULT_SPACE.names
    chosen = np.random.default_rng(seed).choice(len(names), sample_metrics, replace=False)
    refs = oracle.to_lists(ref_probs)
    images = [np.flatnonzero(row).tolist() for row in strata]
    start = time.perf_counter()
    for c in chosen:
        for members in images:
            oracle.metric(refs, members, names[c])
    return (time.perf_counter() - start) * len(names) / sample_metrics


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller curve and oracle sample (< 1 minute)")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 10
    sample = 6 if args.quick else 24
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, float32, "
          f"{len(tiers.DEFAULT_SPACE)} metrics x 15 strata (1+2+3+4+5 blocks)")
    print(f"{'images':>8} {'compile_s':>10} {'steady_s':>9} {'xla_mem_MB':>10} {'oracle_s':>9} {'ratio':>9}")
    results = {}
    for images in (1000, 5000):
        ref_probs, strata = random_ref_probs(images), spec_strata(images)
        compile_s, steady_s, temp = time_sweep(ref_probs, strata, tiers.DEFAULT_SPACE, repeats)
        oracle_s = time_oracle(ref_probs, strata, sample)
        results[images] = (steady_s, oracle_s)
        print(f"{images:>8} {compile_s:>10.2f} {steady_s:>9.4f} {temp / 2**20:>10.1f} {oracle_s:>9.1f} "
              f"{oracle_s / steady_s:>9.0f}")
    print(f"(oracle timed on {sample} of 504 metrics, all 15 strata, scaled to 504)")

    print("\ncurve: images vs steady-state seconds (504 metrics, 15 strata)")
    sizes = (1000, 2000, 5000, 10000, 20000) if args.quick else (1000, 2000, 5000, 10000, 20000, 50000, 100000)
    curve = []
    for images in sizes:
        _, steady_s, temp = time_sweep(random_ref_probs(images), spec_strata(images), tiers.DEFAULT_SPACE,
                                       max(2, repeats // 2))
        curve.append((images, steady_s))
        print(f"{images:>8} images  {steady_s:8.4f} s  {steady_s / images * 1e6:6.2f} us/image  "
              f"xla {temp / 2**20:7.1f} MB")
    print(f"  time per image, largest vs 5k: {curve[-1][1] / curve[-1][0] / (results[5000][0] / 5000):.2f}x "
          "(1.0 = linear)")

    space = extended_space()
    _, ext_s, temp = time_sweep(random_ref_probs(5000), spec_strata(5000), space, max(2, repeats // 2))
    per_metric = (ext_s / len(space)) / (results[5000][0] / len(tiers.DEFAULT_SPACE))
    print(f"\nextended space: {len(space)} metrics at 5,000 images: {ext_s:.4f} s "
          f"({per_metric:.2f}x the time per metric of the 504-metric space; 1.0 = linear), xla {temp / 2**20:.1f} MB")

    steady, oracle_s = results[5000]
    ratio = oracle_s / steady
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"target steady < {TARGET_STEADY_S} s at 5,000 images: "
          + ("met" if steady < TARGET_STEADY_S else f"MISSED by {steady / TARGET_STEADY_S:.1f}x ({steady:.3f} s)"))
    print(f"target >= {TARGET_RATIO:.0f}x the oracle: "
          + ("met" if ratio >= TARGET_RATIO else f"MISSED ({ratio:.0f}x)") + f" ({ratio:.0f}x)")
    print(f"sweep_vs_oracle={ratio:.0f} sweep_steady_s_5000={steady:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
