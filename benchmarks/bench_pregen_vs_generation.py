"""Pre-gen versus generation (+ post-gen scoring) for one trained model, 1,000 test images.

    python benchmarks/bench_pregen_vs_generation.py            # default-size model (~5 min)
    python benchmarks/bench_pregen_vs_generation.py --quick    # smaller model trained briefly (< 3 min)
    python benchmarks/bench_pregen_vs_generation.py --quick --clock cpu   # CPU seconds: on a busy shared machine

(a) pre-gen: teacher-forced reference probabilities (1,000 images x 5 references) + the
    504-metric sweep on the spec's 15 strata;
(b) generation with beam widths 1 and 3 (min length 5, max length 50, as in 2018), each with
    the decoder that stops once the batch's captions have ended (what the package runs) and
    with the scan over all 50 positions (the decoder before it), with the positions each
    batch ran and a check that both give the same captions;
(c) post-gen scoring of the beam-3 captions with CIDEr, METEOR and WMD (whole test set).
Steady-state times: the median of ``--reps`` (5) calls of each of (a) and (b)'s four decoders,
called in turn (interleaved, so that a change in the machine's load falls on all alike), after
a first call each (compilation, reported separately); also the training time of the model and
its greedy CIDEr after one epoch and at the end. The last line printed is machine-readable
(the stopping decoder's ratios, then the scan's):
    pregen_vs_beam3=<ratio> pregen_vs_beam3_plus_postgen=<ratio> scan_pregen_vs_beam3=<ratio> ...
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import spec_strata  # noqa: E402

from pregen_jax import postgen, tiers  # noqa: E402
from pregen_jax.captioning import RnnConfig, generate_captions, reference_probs  # noqa: E402
from pregen_jax.captioning import train as training  # noqa: E402
from pregen_jax.datasets import ShapesConfig, Vocabulary, load_shapes  # noqa: E402
from pregen_jax.datasets.shapes_encoder import attach_image_features  # noqa: E402
from pregen_jax.io import default_cache_dir  # noqa: E402


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and its finished children: on a machine shared with
    many other processes, the wall time measures their load, the CPU time this work's cost."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


CLOCKS = {"wall": time.perf_counter, "cpu": cpu_seconds}
clock = time.perf_counter  # what every stage is timed with (--clock)


def seconds_of(fn):
    """(seconds, result) of one call of ``fn()``, its arrays ready."""
    start = clock()
    result = jax.block_until_ready(fn())
    return clock() - start, result


def interleaved(calls: dict, reps: int) -> tuple[dict, dict, dict]:
    """Each of ``calls`` (name -> no-argument function) once, then all in turn ``reps`` times.

    -> (first-call seconds, median steady seconds, last result), each by name.
    """
    first, results = {}, {}
    for name, fn in calls.items():
        first[name], results[name] = seconds_of(fn)
    steady = {name: [] for name in calls}
    for _ in range(reps):
        for name, fn in calls.items():
            seconds, results[name] = seconds_of(fn)
            steady[name].append(seconds)
    return first, {name: statistics.median(times) for name, times in steady.items()}, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", default=None, help="where the model is trained (default: a temp folder)")
    parser.add_argument("--reps", type=int, default=5, help="interleaved timed calls of each stage (default 5)")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                        help="wall seconds (default), or CPU seconds of this process: on a busy shared machine")
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]
    size = 128 if args.quick else 256
    data_config = ShapesConfig(train=1500, val=200, test=1000) if args.quick else ShapesConfig()
    print(f"times: {args.clock} seconds; jax {jax.__version__} on {jax.devices()[0].platform}; model: merge/GRU {size}; "
          f"train {data_config.train} images; test 1,000 images x 5 references")

    dataset = load_shapes(data_config)
    attach_image_features(dataset, default_cache_dir(), epochs=2 if args.quick else 4, progress=False)
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    vocab = Vocabulary.build(train.captions)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="pregen-bench-"))
    start = time.perf_counter()
    trained = training.train_captioner(
        "merge", RnnConfig(embed_size=size, hidden_size=size, image_size=size),
        training.TrainConfig(epochs=2 if args.quick else 8, snapshot_epochs=[1], patience=2), 0, vocab,
        train.features, train.captions, val.features, val.captions, workdir, progress=False)
    train_s = time.perf_counter() - start
    model, params, features = trained.model, trained.params, test.features
    gts = {i: [" ".join(r) for r in refs] for i, refs in enumerate(test.captions)}

    def greedy_cider(m, p):
        caps = generate_captions(m, p, features, vocab, 1, progress=False)
        return postgen.CIDEr().compute_score(gts, {i: [" ".join(c)] for i, c in enumerate(caps)})[0]
    epoch1 = training.load_trained(workdir / "snapshot-epoch1.msgpack", vocab)
    cider_epoch1, cider_final = greedy_cider(epoch1.model, epoch1.params), greedy_cider(model, params)

    # (a) pre-gen and (b) generation, old and new decoders, interleaved
    strata = spec_strata(len(test))

    def pregen():
        """-> the reference probabilities' share of the seconds."""
        start = clock()
        ref_probs = reference_probs(model, params, features, test.captions, vocab, progress=False)
        probs_s = clock() - start
        tiers.sweep(ref_probs, strata)
        return probs_s

    def generation(width, stop_early):
        return lambda: generate_captions(model, params, features, vocab, width, progress=False, stop_early=stop_early,
                                         with_steps=True)
    calls = {"pregen": pregen, "greedy": generation(1, True), "greedy_scan": generation(1, False),
             "beam3": generation(3, True), "beam3_scan": generation(3, False)}
    first, steady, results = interleaved(calls, args.reps)
    rp_s = results["pregen"]  # the last call's split: reference probabilities, then the sweep
    pregen_s, g1_s, g3_s = steady["pregen"], steady["greedy"], steady["beam3"]
    g1_scan_s, g3_scan_s = steady["greedy_scan"], steady["beam3_scan"]
    beam3, steps3 = results["beam3"]
    same = {w: results[w][0] == results[w + "_scan"][0] for w in ("greedy", "beam3")}
    # (c) post-gen on the beam-3 captions
    res = {i: [" ".join(c)] for i, c in enumerate(beam3)}
    post_times, startup = {}, {}
    for name in ("CIDEr", "METEOR", "WMD"):
        start = time.perf_counter()
        metric_set = postgen.make_metrics([name])
        startup[name] = time.perf_counter() - start
        if not metric_set.metrics:
            print(f"{name} unavailable: {metric_set.unavailable[name]}")
            continue
        start = clock()
        metric_set.metrics[0].compute_score(gts, res)
        post_times[name] = clock() - start
        metric_set.close()
    postgen_s = sum(post_times.values())

    print(f"\ntraining: {train_s:.0f} s ({len(trained.history)} epochs); greedy CIDEr after 1 epoch "
          f"{cider_epoch1:.3f}, final {cider_final:.3f}")
    print(f"{'stage':40s} {'steady_s':>9} {'first_call_s':>13}  (median of {args.reps} interleaved calls)")
    for label, name in (("(a) pre-gen: probabilities + sweep", "pregen"),
                        ("(b) greedy, stopping", "greedy"), ("(b) greedy, scan over 50", "greedy_scan"),
                        ("(b) beam 3, stopping", "beam3"), ("(b) beam 3, scan over 50", "beam3_scan")):
        print(f"{label:40s} {steady[name]:9.3f} {first[name]:13.3f}")
    print(f"(a) the last call's reference probabilities: {rp_s:.3f} s (the rest is the sweep)")
    print(f"positions each batch ran, stopping: greedy {results['greedy'][1]}, beam 3 {steps3} (the scan: 50); "
          f"captions identical to the scan's: greedy {same['greedy']}, beam 3 {same['beam3']}")
    print(f"stopping vs scan: greedy {g1_scan_s / g1_s:.2f}x faster, beam 3 {g3_scan_s / g3_s:.2f}x faster")
    for name, seconds in post_times.items():
        print(f"{'(c) post-gen ' + name:40s} {seconds:9.3f} {'(start ' + format(startup[name], '.1f') + ' s)':>13}")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    ratios = {}
    for decoder, (greedy_s, beam3_s) in (("stopping", (g1_s, g3_s)), ("scan", (g1_scan_s, g3_scan_s))):
        ratios[decoder] = (greedy_s / pregen_s, beam3_s / pregen_s, (beam3_s + postgen_s) / pregen_s)
        vs_beam1, vs_beam3, vs_all = ratios[decoder]
        print(f"\n{decoder} decoder, generation's time / pre-gen's: greedy {vs_beam1:.2f}x, beam 3 {vs_beam3:.2f}x, "
              f"beam 3 + post-gen scoring {vs_all:.1f}x (above 1: pre-gen is faster)")
    vs_all = ratios["stopping"][2]
    print(f"target pre-gen < 10 s: {'met' if pregen_s < 10 else 'MISSED'} ({pregen_s:.2f} s); "
          f"target >= 20x generation+post-gen (stopping decoder): {'met' if vs_all >= 20 else 'MISSED'} "
          f"({vs_all:.1f}x); 2018: 44x (28 s vs 1246 s, GTX 760, MSCOCO)")
    print(f"pregen_vs_beam3={ratios['stopping'][1]:.2f} pregen_vs_beam3_plus_postgen={ratios['stopping'][2]:.2f} "
          f"scan_pregen_vs_beam3={ratios['scan'][1]:.2f} scan_pregen_vs_beam3_plus_postgen={ratios['scan'][2]:.2f} "
          f"beam3_scan_vs_stop={g3_scan_s / g3_s:.2f} captions_identical={same['greedy'] and same['beam3']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
