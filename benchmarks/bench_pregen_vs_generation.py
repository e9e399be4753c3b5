"""Pre-gen versus generation (+ post-gen scoring) for one trained model, 1,000 test images.

    python benchmarks/bench_pregen_vs_generation.py            # default-size model (~5 min)
    python benchmarks/bench_pregen_vs_generation.py --quick    # smaller model trained briefly (< 3 min)

(a) pre-gen: teacher-forced reference probabilities (1,000 images x 5 references) + the
    504-metric sweep on the spec's 15 strata;
(b) generation with beam widths 1 and 3 (min length 5, max length 50, as in 2018);
(c) post-gen scoring of the beam-3 captions with CIDEr, METEOR and WMD (whole test set).
Steady-state times (compiled code, second call) with compile times reported separately;
also the training time of the model and its greedy CIDEr after one epoch and at the end.
The last line printed is machine-readable:
    pregen_vs_beam3=<ratio> pregen_vs_beam3_plus_postgen=<ratio>
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import spec_strata  # noqa: E402

from pregen_jax import postgen, tiers  # noqa: E402
from pregen_jax.captioning import CaptionerConfig, generate_captions, reference_probs  # noqa: E402
from pregen_jax.captioning import train as training  # noqa: E402
from pregen_jax.datasets import ShapesConfig, Vocabulary, load_shapes  # noqa: E402
from pregen_jax.datasets.shapes_encoder import attach_image_features  # noqa: E402
from pregen_jax.io import default_cache_dir  # noqa: E402


def timed(fn, *args, **kwargs):
    """(first-call seconds, steady seconds, result): the first call includes compilation."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args, **kwargs))
    first = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(fn(*args, **kwargs))
    return first, time.perf_counter() - start, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workdir", default=None, help="where the model is trained (default: a temp folder)")
    args = parser.parse_args(argv)
    size = 128 if args.quick else 256
    data_config = ShapesConfig(train=1500, val=200, test=1000) if args.quick else ShapesConfig()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; model: merge/GRU {size}; "
          f"train {data_config.train} images; test 1,000 images x 5 references")

    dataset = load_shapes(data_config)
    attach_image_features(dataset, default_cache_dir(), epochs=2 if args.quick else 4, progress=False)
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    vocab = Vocabulary.build(train.captions)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="pregen-bench-"))
    start = time.perf_counter()
    trained = training.train_captioner(
        "merge", CaptionerConfig(embed_size=size, hidden_size=size, image_size=size),
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

    # (a) pre-gen
    rp_first, rp_s, ref_probs = timed(reference_probs, model, params, features, test.captions, vocab,
                                      progress=False)
    strata = spec_strata(len(test))
    sweep_first, sweep_s, _ = timed(tiers.sweep, ref_probs, strata)
    pregen_s = rp_s + sweep_s
    # (b) generation
    g1_first, g1_s, _ = timed(generate_captions, model, params, features, vocab, 1, progress=False)
    g3_first, g3_s, beam3 = timed(generate_captions, model, params, features, vocab, 3, progress=False)
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
        start = time.perf_counter()
        metric_set.metrics[0].compute_score(gts, res)
        post_times[name] = time.perf_counter() - start
        metric_set.close()
    postgen_s = sum(post_times.values())

    print(f"\ntraining: {train_s:.0f} s ({len(trained.history)} epochs); greedy CIDEr after 1 epoch "
          f"{cider_epoch1:.3f}, final {cider_final:.3f}")
    print(f"{'stage':40s} {'steady_s':>9} {'first_call_s':>13}")
    for label, steady, first in (("(a) reference probabilities", rp_s, rp_first),
                                 ("(a) sweep 504 metrics x 15 strata", sweep_s, sweep_first),
                                 ("(a) pre-gen total", pregen_s, rp_first + sweep_first),
                                 ("(b) generation, beam 1 (greedy)", g1_s, g1_first),
                                 ("(b) generation, beam 3", g3_s, g3_first)):
        print(f"{label:40s} {steady:9.3f} {first:13.3f}")
    for name, seconds in post_times.items():
        print(f"{'(c) post-gen ' + name:40s} {seconds:9.3f} {'(start ' + format(startup[name], '.1f') + ' s)':>13}")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    vs_beam1, vs_beam3 = g1_s / pregen_s, g3_s / pregen_s
    vs_all = (g3_s + postgen_s) / pregen_s
    print(f"\npre-gen is {vs_beam1:.1f}x faster than greedy generation, {vs_beam3:.1f}x faster than beam-3 "
          f"generation, {vs_all:.1f}x faster than beam-3 generation + post-gen scoring")
    print(f"target pre-gen < 10 s: {'met' if pregen_s < 10 else 'MISSED'} ({pregen_s:.2f} s); "
          f"target >= 20x generation+post-gen: {'met' if vs_all >= 20 else 'MISSED'} ({vs_all:.1f}x); "
          f"2018: 44x (28 s vs 1246 s, GTX 760, MSCOCO)")
    print(f"pregen_vs_beam3={vs_beam3:.2f} pregen_vs_beam3_plus_postgen={vs_all:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
