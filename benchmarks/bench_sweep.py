"""Benchmark the 504-metric sweep (segment and mask forms) against the plain-Python oracle,
how it scales in images and metrics, and the sweep of many models in one call.

    python benchmarks/bench_sweep.py            # full run (a few minutes)
    python benchmarks/bench_sweep.py --quick    # about a minute
    python benchmarks/bench_sweep.py --large    # also 50k and 100k images in the curve

Inputs: random but realistic reference probabilities (5 references of 4-21 positions) and the
spec's 15 strata (k = 1..5 blocks of n // k images). ``tiers.sweep`` picks the segment form
for them (5 partitions: each image reduced once per partition); the mask form (each image
once per stratum) is timed beside it. The oracle is timed on a sample of metrics (all 15
strata each) and scaled to 504, as it takes minutes; the sample size is printed. Steady-state
times are medians of several calls (the machine may be shared: the load average is printed).
The last line printed is machine-readable:
    sweep_vs_oracle=<ratio at 5,000 images> sweep_steady_s_5000=<seconds>
"""
from __future__ import annotations

import argparse
import os
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
STRETCH_STEADY_S = 0.03
TARGET_RATIO = 1000.0
TARGET_LINEAR = 1.5  # per-image time, largest curve size over 1,000 images


def _median_time(fn, repeats):
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def time_sweep(ref_probs, strata, space, repeats, method):
    """(compile_s, steady_s, xla_bytes) of ``tiers.sweep``'s compiled computation for ``method``."""
    arrays = (jnp.asarray(ref_probs.probs, jnp.float32), jnp.asarray(ref_probs.ranks), jnp.asarray(ref_probs.mask))
    if method == "segments":
        layout, index = tiers.plan_segments(tiers.Partitions.from_mask(strata), ref_probs.ref_mask)
        index = jax.tree.map(jnp.asarray, index)
        lowered, args = tiers.compiled_segment_sweep(space).lower(layout, *arrays, index), (*arrays, index)
    else:
        args = (*arrays, jnp.asarray(strata))
        lowered = tiers.compiled_sweep(space).lower(*args)
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    xla_bytes = getattr(memory, "temp_size_in_bytes", 0) + getattr(memory, "output_size_in_bytes", 0)
    return compile_s, _median_time(lambda: compiled(*args), repeats), xla_bytes


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


def time_models(num_models, images, repeats):
    """(first call s, steady s) of ``tiers.sweep_models`` on ``num_models`` models of ``images``."""
    models = [random_ref_probs(images, seed=m) for m in range(num_models)]
    strata = [spec_strata(images, seed=m) for m in range(num_models)]
    start = time.perf_counter()
    tiers.sweep_models(models, strata)
    first = time.perf_counter() - start
    return first, _median_time(lambda: tiers.sweep_models(models, strata), repeats)


def memory_bandwidth() -> float:
    """Bytes per second of a numpy copy of 512 MiB (read and write counted), best of 5."""
    source = np.ones(64 * 2**20)
    target = np.empty_like(source)
    best = min(_copy_time(source, target) for _ in range(5))
    return 2 * source.nbytes / best


def _copy_time(source, target) -> float:
    start = time.perf_counter()
    np.copyto(target, source)
    return time.perf_counter() - start


def roofline_bytes(ref_probs, space) -> int:
    """The least the 5,000-image sweep must touch: its inputs once, tiers 2-3's outputs written and
    read once, and every tier-4 column (image scores and joined caption scores) read once per
    partition (5). Its working set per partition (a few MB) fits in cache, so this is a floor."""
    images, refs, positions = ref_probs.probs.shape
    filters, captions, image_aggs = len(space.filters), len(space.caption_scores), len(space.image_aggregators)
    inputs = images * refs * positions * (4 + 4 + 1)                      # probs f32, ranks i32, mask bool
    caption_scores = captions * filters * images * refs * 4
    columns = (image_aggs - 1) * captions * filters * images * 4 + caption_scores  # image scores + joined
    return inputs + 2 * caption_scores + 2 * (columns - caption_scores) + 5 * columns


def _verdict(ok: bool, missed: str) -> str:
    return "met" if ok else f"MISSED {missed}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, sizes and models (about a minute)")
    parser.add_argument("--large", action="store_true", help="extend the curve to 50k and 100k images")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 11
    sample = 6 if args.quick else 24
    load_before = os.getloadavg()[0]
    print(f"jax {jax.__version__} on {jax.device_count()} {jax.devices()[0].platform} device(s), {os.cpu_count()} CPUs, "
          f"float32, {len(tiers.DEFAULT_SPACE)} metrics x 15 strata (1+2+3+4+5 blocks); load average {load_before:.1f}")

    print(f"\n{'images':>7} {'form':>9} {'compile_s':>9} {'steady_s':>9} {'xla_MB':>7} {'oracle_s':>9} {'oracle/sweep':>12}")
    results = {}
    for images in (1000, 5000):
        ref_probs, strata = random_ref_probs(images), spec_strata(images)
        oracle_s = time_oracle(ref_probs, strata, sample)
        for method in ("segments", "mask"):
            compile_s, steady_s, xla = time_sweep(ref_probs, strata, tiers.DEFAULT_SPACE, repeats, method)
            results[images, method] = steady_s
            print(f"{images:>7} {method:>9} {compile_s:>9.2f} {steady_s:>9.4f} {xla / 2**20:>7.1f} {oracle_s:>9.1f} "
                  f"{oracle_s / steady_s:>12.0f}")
        results[images, "oracle"] = oracle_s
        end_to_end = _median_time(lambda rp=ref_probs, st=strata: tiers.sweep(rp, st), repeats)
        print(f"{'':>7} segments / mask: {results[images, 'mask'] / results[images, 'segments']:.2f}x faster; "
              f"tiers.sweep end to end (numpy in and out, strata planned each call): {end_to_end:.4f} s")
    print(f"(oracle timed on {sample} of 504 metrics, all 15 strata, scaled to 504)")

    print("\ncurve: steady-state seconds (504 metrics, 15 strata); the mask form up to 20k images")
    sizes = [1000, 2000, 5000, 10000, 20000] + ([50000, 100000] if args.large else [])
    if args.quick:
        sizes = [1000, 5000, 20000]
    curve = {key: value for key, value in results.items() if key[1] != "oracle"}
    for images in sizes:
        line = f"{images:>7} images"
        for method in ("segments", "mask"):
            if (images, method) not in curve:
                if method == "mask" and (images > 20000 or args.quick):
                    continue
                _, curve[images, method], _ = time_sweep(random_ref_probs(images), spec_strata(images),
                                                         tiers.DEFAULT_SPACE, max(3, repeats // 2), method)
            steady_s = curve[images, method]
            line += f"  {method} {steady_s:8.4f} s {steady_s / images * 1e6:6.2f} us/image"
        print(line)
    largest = sizes[-1]
    growth = (curve[largest, "segments"] / largest) / (curve[1000, "segments"] / 1000)
    print(f"  segments: time per image at {largest:,} vs 1,000 images: {growth:.2f}x (1.0 = linear)")

    if not args.quick:
        space = extended_space()
        ref_probs, strata = random_ref_probs(5000), spec_strata(5000)
        _, ext_s, xla = time_sweep(ref_probs, strata, space, max(3, repeats // 2), "segments")
        per_metric = (ext_s / len(space)) / (results[5000, "segments"] / len(tiers.DEFAULT_SPACE))
        print(f"\nextended space: {len(space)} metrics at 5,000 images (segments): {ext_s:.4f} s "
              f"({per_metric:.2f}x the time per metric of the 504-metric space; 1.0 = linear), xla {xla / 2**20:.0f} MB")

    print(f"\nmodels in one call (tiers.sweep_models, {jax.device_count()} device(s), end to end from numpy):")
    counts = (1, 8) if args.quick else (1, 8, 32)
    for images in ((1000,) if args.quick else (1000, 5000)):
        for num_models in counts:
            first, steady = time_models(num_models, images, max(3, repeats // 3))
            print(f"{images:>7} images x {num_models:>2} models: {steady:8.4f} s per call, {steady / num_models:7.4f} s "
                  f"per model (first call {first:.2f} s)")

    steady = results[5000, "segments"]
    ratio = results[5000, "oracle"] / steady
    floor, bandwidth = roofline_bytes(random_ref_probs(5000), tiers.DEFAULT_SPACE), memory_bandwidth()
    print(f"\nroofline at 5,000 images: at least {floor / 1e6:.1f} MB touched; this machine's memory copies "
          f"{bandwidth / 1e9:.1f} GB/s (numpy, 512 MiB, read + write), so {floor / bandwidth * 1e3:.1f} ms from memory "
          f"against {steady * 1e3:.1f} ms measured ({steady * bandwidth / floor:.0f}x the floor: bound by compute, "
          "chiefly the median's radix selection, 21 counting passes over every partition's columns)")
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (2 = both cores busy elsewhere)")
    print(f"target steady < {TARGET_STEADY_S} s at 5,000 images: "
          + _verdict(steady < TARGET_STEADY_S, f"by {steady / TARGET_STEADY_S:.2f}x") + f" ({steady:.4f} s; stretch "
          f"{STRETCH_STEADY_S} s: " + _verdict(steady < STRETCH_STEADY_S, f"by {steady / STRETCH_STEADY_S:.1f}x") + ")")
    print(f"target >= {TARGET_RATIO:.0f}x the oracle at 5,000 images: "
          + _verdict(ratio >= TARGET_RATIO, f"({ratio:.0f}x)") + f" ({ratio:.0f}x)")
    print(f"target linear in images (per-image time {largest:,} vs 1,000 <= {TARGET_LINEAR}x): "
          + _verdict(growth <= TARGET_LINEAR, f"({growth:.2f}x)") + f" ({growth:.2f}x)")
    print(f"sweep_vs_oracle={ratio:.0f} sweep_steady_s_5000={steady:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
