"""Where pre-gen pays off: generation + post-gen against pre-gen over model size, references per
image, caption length, batch size and architecture (issue 64).

    python benchmarks/bench_crossover.py                 # the lean grid (~15-30 min on 2 busy cores)
    python benchmarks/bench_crossover.py --images 100 --reps 1 --only base   # a smoke run

Models are untrained (random weights): speed does not depend on what a model learnt, once the
captions' length is fixed, and here it is: each reference has exactly L words, and generation
runs with ``min_len = max_len = L`` (the stopping decoder then runs the same L positions a trained
model's would if its captions had L words). The vocabulary has ``--vocabulary`` words (Flickr8k's
is about 2,500). For each configuration, on ``--images`` images:

- pre-gen: teacher-forced reference probabilities of every reference + the 504-metric sweep on
  the spec's 15 strata;
- generation: greedy and beam 3 with the stopping decoder (what the package runs);
- post-gen: CIDEr, METEOR and WMD of the beam-3 captions against the references (started once,
  outside the timing, and warmed up by a first call; measured once per (references, length),
  since it does not depend on the model).

Times are CPU seconds (this process's threads and finished children: on a shared machine the
wall time measures the other processes' load), medians of ``--reps`` interleaved calls after a
first call each (compilation, not counted); the wall medians of pre-gen and beam 3 are in the TSV. The ratio (generation + post-gen) / pre-gen above 1 means pre-gen is faster. The grid
varies one factor at a time around a base point (merge GRU, hidden 256, 5 references, 12 words,
batch 50); hidden sizes 64-1,024 for both the RNN and the transformer. It prints a markdown table
and writes a TSV (``--out``).
"""
from __future__ import annotations

import argparse
import dataclasses
import resource
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import spec_strata  # noqa: E402

from pregen_jax import postgen, tiers  # noqa: E402
from pregen_jax.captioning import RnnConfig, TransformerConfig, generate_captions, make_model, reference_probs  # noqa: E402
from pregen_jax.captioning.models import with_feature_mean  # noqa: E402
from pregen_jax.captioning.train import init_params  # noqa: E402
from pregen_jax.datasets import Vocabulary  # noqa: E402

FEATURES = 512  # image feature size (VGG's fc7 has 4,096; the projection to the model's size is one matmul)
POSTGEN = ("CIDEr", "METEOR", "WMD")


@dataclasses.dataclass(frozen=True)
class Point:
    """One configuration: architecture, hidden size, references per image, words per caption, batch size."""

    arch: str = "merge"
    hidden: int = 256
    refs: int = 5
    length: int = 12
    batch: int = 50  # a divisor of --images: a last batch padded with empty rows would bill them to generation


def grid(only: str) -> list[Point]:
    """One factor at a time around the base point; hidden sizes for both architecture families."""
    base = Point()
    points = [base]
    if only == "base":
        return points
    # the order matters on a busy machine: the rows that say most first (each new shape compiles anew)
    rnn, transformer = base, dataclasses.replace(base, arch="transformer")
    points += [dataclasses.replace(rnn, hidden=1024), transformer, dataclasses.replace(transformer, hidden=1024),
               dataclasses.replace(rnn, hidden=64), dataclasses.replace(transformer, hidden=64),
               dataclasses.replace(rnn, refs=1), dataclasses.replace(rnn, hidden=1024, refs=1),
               dataclasses.replace(rnn, length=24), dataclasses.replace(rnn, batch=100),
               dataclasses.replace(rnn, length=6), dataclasses.replace(transformer, refs=1)]
    return points


def model_of(point: Point, vocab: Vocabulary, features: np.ndarray):
    if point.arch == "transformer":
        config = TransformerConfig(width=point.hidden, mlp_width=point.hidden, image_size=point.hidden,
                                   heads=4 if point.hidden >= 64 else 1)
    else:
        config = RnnConfig(embed_size=point.hidden, hidden_size=point.hidden, image_size=point.hidden)
    model = make_model(point.arch, config, len(vocab))
    return model, with_feature_mean(init_params(model, features.shape[1], 0), config, features)


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its finished children: on a machine shared
    by many processes the wall time measures the others' load, the CPU time this work's cost."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def seconds(fn) -> tuple[float, float, object]:
    """(CPU seconds, wall seconds, result) of one call of ``fn()``, its arrays ready."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    result = jax.block_until_ready(fn())
    return cpu_seconds() - cpu, time.perf_counter() - wall, result


def timed(calls: dict, reps: int) -> tuple[dict, dict, dict]:
    """Median steady CPU seconds, median wall seconds and the last result by name: a first call each
    (compilation), then ``reps`` rounds in turn."""
    results = {name: seconds(fn)[2] for name, fn in calls.items()}
    cpu, wall = {name: [] for name in calls}, {name: [] for name in calls}
    for _ in range(reps):
        for name, fn in calls.items():
            took_cpu, took_wall, results[name] = seconds(fn)
            cpu[name].append(took_cpu)
            wall[name].append(took_wall)
    return ({name: statistics.median(t) for name, t in cpu.items()},
            {name: statistics.median(t) for name, t in wall.items()}, results)


def corpus(images: int, refs: int, length: int, words: list[str], seed: int = 0) -> list[list[list[str]]]:
    rng = np.random.default_rng(seed)
    return [[list(rng.choice(words, length)) for _ in range(refs)] for _ in range(images)]


def measure(point: Point, args, vocab, words, features, metrics, postgen_cache: dict) -> dict:
    captions = corpus(args.images, point.refs, point.length, words)
    model, params = model_of(point, vocab, features)
    strata = spec_strata(args.images)

    def pregen():
        ref_probs = reference_probs(model, params, features, captions, vocab, batch_size=point.batch, progress=False,
                                    warn_unknown=False)
        return tiers.sweep(ref_probs, strata)

    def generation(width):
        return lambda: generate_captions(model, params, features, vocab, width, max_len=point.length,
                                         min_len=point.length, batch_size=point.batch, progress=False)
    steady, wall, results = timed({"pregen": pregen, "greedy": generation(1), "beam3": generation(3)}, args.reps)
    key = (point.refs, point.length)
    if key not in postgen_cache:
        gts = {i: [" ".join(r) for r in refs] for i, refs in enumerate(captions)}
        res = {i: [" ".join(c)] for i, c in enumerate(results["beam3"])}
        for m in metrics.metrics:  # a first call warms each metric up (its tables, its compiled code): not counted
            m.compute_score(gts, res)
        postgen_cache[key] = sum(seconds(lambda m=m: m.compute_score(gts, res))[0] for m in metrics.metrics)
    post = postgen_cache[key]
    pre = steady["pregen"]
    return {**dataclasses.asdict(point), "pregen_s": pre, "greedy_s": steady["greedy"], "beam3_s": steady["beam3"],
            "postgen_s": post, "pregen_wall_s": wall["pregen"], "beam3_wall_s": wall["beam3"], "greedy_plus_postgen_vs_pregen": (steady["greedy"] + post) / pre,
            "beam3_plus_postgen_vs_pregen": (steady["beam3"] + post) / pre,
            "beam3_alone_vs_pregen": steady["beam3"] / pre}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--vocabulary", type=int, default=2000, help="words in the vocabulary (default 2,000)")
    parser.add_argument("--only", choices=("base", "grid"), default="grid")
    parser.add_argument("--points", default=None, help="comma-separated indices into the grid's rows (default: all; "
                                                        "two processes can share a grid on a busy machine)")
    parser.add_argument("--out", default=None, help="a TSV of every row (default: none)")
    args = parser.parse_args(argv)
    words = [f"w{k}" for k in range(args.vocabulary)]
    vocab = Vocabulary(words)
    features = np.random.default_rng(1).normal(size=(args.images, FEATURES)).astype(np.float32)
    start = time.perf_counter()
    metrics = postgen.make_metrics(list(POSTGEN))
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {args.images} images; vocabulary "
          f"{len(vocab)}; post-gen {', '.join(m.name for m in metrics.metrics)} (started in "
          f"{time.perf_counter() - start:.1f} s, not counted; unavailable: {metrics.unavailable or 'none'}); "
          f"median of {args.reps} interleaved calls")
    print("| arch | hidden | refs | words | batch | pre-gen CPU s | greedy CPU s | beam 3 CPU s | post-gen CPU s | "
          "(greedy + post) / pre | (beam 3 + post) / pre | beam 3 alone / pre |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows, cache = [], {}
    try:
        points = grid(args.only)
        if args.points:
            points = [points[int(k)] for k in args.points.split(",")]
        for point in points:
            row = measure(point, args, vocab, words, features, metrics, cache)
            rows.append(row)
            print(f"| {row['arch']} | {row['hidden']} | {row['refs']} | {row['length']} | {row['batch']} | "
                  f"{row['pregen_s']:.3f} | {row['greedy_s']:.3f} | {row['beam3_s']:.3f} | {row['postgen_s']:.3f} | "
                  f"{row['greedy_plus_postgen_vs_pregen']:.2f}x | {row['beam3_plus_postgen_vs_pregen']:.2f}x | "
                  f"{row['beam3_alone_vs_pregen']:.2f}x |", flush=True)
            if args.out:  # each row as it comes: a long grid on a busy machine keeps what it measured
                import pandas as pd
                pd.DataFrame(rows).to_csv(args.out, sep="\t", index=False)
    finally:
        metrics.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
