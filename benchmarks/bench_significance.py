"""`evaluate`'s bootstrap: multinomial counts drawn in chunks against the B x n index matrix it replaced.

Real statistics: the first 5,000 Flickr8k images (file order), caption 1 as system A, caption 2
as system B, captions 3-5 as references (alnum-lower tokens), for Bleu_1..4, ROUGE_L and CIDEr
(and METEOR, Python backend, with --meteor). For 40,504 images (COCO val2014's size) the
5,000 images' rows are tiled: memory and time do not depend on the values.

Printed: (1) the peak of numpy's allocations (tracemalloc) and the wall time of the resampled
sums of both systems at 40,504 images x 1,000 resamples, the chunked counts
(``significance.resampled_sums``) against the index version (``rng.integers(0, n, (B, n))``,
its bincount and a float copy, then one product, as before issue 43); (2) on 5,000 images, that
one generator gives both the same draws, and how far the 95% intervals move with evaluate's new
bootstrap stream of the same seed (other draws, the same distribution), as a share of each
interval's width.

    python benchmarks/bench_significance.py [--meteor] [--compare]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pregen_jax import postgen  # noqa: E402
from pregen_jax.evaluation.significance import interval, jackknife, resampled_sums, stacked  # noqa: E402

RESAMPLES = 1000


def index_version(rows: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """f64[B, K]: before issue 43: the B x n int64 index matrix, its bincount, a float copy, one product."""
    images = len(rows)
    idx = rng.integers(0, images, (resamples, images))
    flat = (idx + images * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * images).reshape(resamples, images).astype(np.float64)
    return counts @ rows


def statistics(metric_names: list[str], images: int = 5000) -> tuple[dict, dict, np.ndarray, np.ndarray]:
    """(metrics, columns, rows of A f64[images, K], rows of B) from Flickr8k's captions."""
    from pregen_jax.datasets import tokenize
    token_file = ROOT.parent / "shared" / "data" / "flickr8k" / "Flickr8k.token.txt"
    captions: dict = {}
    for line in token_file.read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    chosen = [c for c in captions.values() if len(c) == 5 and all(c)][:images]
    gts = {k: c[2:] for k, c in enumerate(chosen)}
    metrics, per_system = {}, ({}, {})
    for name in metric_names:
        metric = postgen.REGISTRY[name].factory(postgen.PostgenOptions())
        metrics[name] = metric
        for j, stats in enumerate(per_system):
            stats[name] = np.asarray(metric.stats(gts, {k: [c[j]] for k, c in enumerate(chosen)}), np.float64)
        if hasattr(metric, "close"):
            metric.close()
    columns, a = stacked(metrics, per_system[0])
    _, b = stacked(metrics, per_system[1])
    return metrics, columns, a, b


def peak_and_time(function, *args) -> tuple[float, float]:
    tracemalloc.start()
    start = time.perf_counter()
    function(*args)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2 ** 20, seconds


def whole_compare(metrics: dict, columns: dict, a: np.ndarray, b: np.ndarray) -> None:
    """``significance.compare`` of the two systems tiled to 40,504 images: wall time and peak RSS."""
    import resource

    from pregen_jax.evaluation.significance import Resampling, compare

    def peak_rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reps = -(-40504 // len(a))
    before = peak_rss()
    stats = {s: {m: np.tile(rows[:, columns[m]], (reps, 1))[:40504] for m in metrics} for s, rows in (("A", a), ("B", b))}
    start = time.perf_counter()
    compare(metrics, stats, Resampling())
    print(f"load average {os.getloadavg()[0]:.1f}; compare at 40,504 images x 2 systems x {len(metrics)} metrics, "
          f"1,000 resamples, 10,000 trials: {time.perf_counter() - start:.1f} s; the process's peak RSS "
          f"{before:.0f} MiB before the tiled statistics, {peak_rss():.0f} MiB after compare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meteor", action="store_true", help="METEOR's statistics too (Python backend)")
    parser.add_argument("--compare", action="store_true",
                        help="instead: the whole of evaluate's significance (significance.compare, 1,000 resamples, "
                             "10,000 trials) at 40,504 images, its time and the process's peak RSS")
    args = parser.parse_args()
    names = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"] + (["METEOR"] if args.meteor else [])
    metrics, columns, a, b = statistics(names)
    if args.compare:
        whole_compare(metrics, columns, a, b)
        return
    both = np.concatenate([a, b], axis=1)
    print(f"load average {os.getloadavg()[0]:.1f}; statistics: {a.shape[1]} columns per system, 2 systems")
    large = np.tile(both, (-(-40504 // len(both)), 1))[:40504]
    for label, function in (("index version (B x n int64)", index_version), ("chunked counts (u16)", resampled_sums)):
        peak, seconds = peak_and_time(function, large, RESAMPLES, np.random.default_rng(0))
        print(f"40,504 images x {RESAMPLES} resamples, {label}: peak numpy allocations {peak:.0f} MiB, {seconds:.2f} s")
    same = max(float(np.max(np.abs(index_version(both, RESAMPLES, np.random.default_rng(seed)) -
                                   resampled_sums(both, RESAMPLES, np.random.default_rng(seed))))) for seed in range(3))
    print(f"\n5,000 images, one generator: the chunks draw what the index version drew (each resample's row of "
          f"indices); resampled sums differ by at most {same:.1e} (float order of the products)")
    print("5,000 images: the 95% intervals with evaluate's new bootstrap stream (SeedSequence(seed).spawn(2)[0]) "
          "against the old one (default_rng(seed)), seed 0; shift as a share of the old interval's width")
    shifts = []
    for seed in range(5):
        old = index_version(both, RESAMPLES, np.random.default_rng(seed))
        new = resampled_sums(both, RESAMPLES, np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0]))
        width = a.shape[1]
        for name, metric in metrics.items():
            at = columns[name]
            for system, rows, offset in (("A", a, 0), ("B", b, width)):
                cols = slice(at.start + offset, at.stop + offset)
                score = float(metric.aggregate(rows[:, at]))
                jack = jackknife(metric, rows[:, at])
                lo0, hi0 = interval(metric.from_sums(old[:, cols], len(a)), score, jack)
                lo1, hi1 = interval(metric.from_sums(new[:, cols], len(a)), score, jack)
                shift = max(abs(lo1 - lo0), abs(hi1 - hi0)) / (hi0 - lo0)
                shifts.append(shift)
                if seed == 0:
                    print(f"  {name:8s} {system}: {score:.4f} old [{lo0:.4f}, {hi0:.4f}] new [{lo1:.4f}, {hi1:.4f}]"
                          f" shift {100 * shift:.1f}% of the width")
    shifts = np.array(shifts)
    print(f"over seeds 0-4 x {len(metrics)} metrics x 2 systems: endpoint shift median {100 * np.median(shifts):.1f}%, "
          f"max {100 * shifts.max():.1f}% of the interval's width (the Monte Carlo error of two independent "
          f"{RESAMPLES}-resample bootstraps, not a bias)")


if __name__ == "__main__":
    main()
