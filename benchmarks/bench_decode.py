"""Decoding that stops early against the scan over every position, on a finished run's models.

    python benchmarks/bench_decode.py RUN                   # every model of RUN (a demo's run folder), beam 3
    python benchmarks/bench_decode.py RUN --width 1 --reps 5

For every trained model in ``RUN/cache/train/`` (the final checkpoints and the epoch-1
snapshots), ``generate_captions`` over the run's test images with the run's generation
settings, the stopping decoder (``stop_early=True``) and the scan over all ``max_len``
positions (``stop_early=False``) called in turn ``--reps`` times (interleaved, after one
compiling call each): the median seconds of each, their ratio, the positions each batch ran,
and a check that the captions are identical. The last line is machine-readable:
    decode_scan_s=<s> decode_stop_s=<s> decode_speedup=<ratio> captions_identical=<bool>
(sums over the models of the medians).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax

from pregen_jax.captioning import generate_captions, load_trained
from pregen_jax.pipeline.config import SearchConfig
from pregen_jax.pipeline.sources import load_data


def checkpoints(run: Path) -> list[Path]:
    """Every final checkpoint and epoch-1 snapshot of ``run``'s trained models, in name order."""
    found = []
    for folder in sorted((run / "cache" / "train").iterdir()):
        found += [p for p in (folder / "model.msgpack", folder / "snapshot-epoch1.msgpack") if p.is_file()]
    return found


def interleaved(calls: dict, reps: int) -> dict[str, list[float]]:
    """Each of ``calls`` (name -> no-argument function) once to compile, then all in turn ``reps`` times."""
    for fn in calls.values():
        jax.block_until_ready(fn())
    seconds = {name: [] for name in calls}
    for _ in range(reps):
        for name, fn in calls.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            seconds[name].append(time.perf_counter() - start)
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished search's run folder (its cache/train/ and config.toml)")
    parser.add_argument("--width", type=int, default=None, help="beam width (default: the run's)")
    parser.add_argument("--reps", type=int, default=5, help="interleaved timed calls of each decoder (default 5)")
    args = parser.parse_args(argv)
    config = SearchConfig.load(args.run / "config.toml")
    data = load_data(config, progress=False, run_folder=args.run)
    gen = config.generation
    width = args.width or gen.beam_width
    features = data.test.features
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {args.run}: {len(features)} test images, "
          f"beam {width}, max_len {gen.max_len}, min_len {gen.min_len}; median of {args.reps} interleaved calls")
    print(f"{'model':44s} {'scan_s':>8} {'stop_s':>8} {'speedup':>8}  steps per batch (stop; scan: {gen.max_len})")
    total = {"scan": 0.0, "stop": 0.0}
    identical = True
    for path in checkpoints(args.run):
        trained = load_trained(path, data.vocab)

        def decoder(stop_early, trained=trained):
            return lambda: generate_captions(trained.model, trained.params, features, data.vocab, width, gen.max_len,
                                             gen.min_len, progress=False, stop_early=stop_early, with_steps=True)
        calls = {"scan": decoder(False), "stop": decoder(True)}
        seconds = interleaved(calls, args.reps)
        (scan_captions, _), (stop_captions, steps) = calls["scan"](), calls["stop"]()
        identical &= scan_captions == stop_captions
        scan_s, stop_s = statistics.median(seconds["scan"]), statistics.median(seconds["stop"])
        total["scan"] += scan_s
        total["stop"] += stop_s
        name = f"{path.parent.name.rsplit('-', 1)[0]}/{path.stem}"
        print(f"{name:44s} {scan_s:8.3f} {stop_s:8.3f} {scan_s / stop_s:7.2f}x  {steps}"
              f"{'' if scan_captions == stop_captions else '  CAPTIONS DIFFER'}")
    speedup = total["scan"] / total["stop"]
    print(f"\nall models: scan {total['scan']:.2f} s, stopping {total['stop']:.2f} s: {speedup:.2f}x; "
          f"captions identical: {identical}")
    print(f"decode_scan_s={total['scan']:.3f} decode_stop_s={total['stop']:.3f} decode_speedup={speedup:.3f} "
          f"captions_identical={identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
