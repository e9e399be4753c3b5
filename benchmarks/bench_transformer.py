"""A transformer at today's scale: pre-gen against greedy / beam-3 generation + post-gen scoring.

    python benchmarks/bench_transformer.py                 # CPU default: 400 images (6-9 min on 2 shared cores; 800: 9 min)
    python benchmarks/bench_transformer.py --images 5000   # the full split (default on a GPU)
    python benchmarks/bench_transformer.py --quick         # 24 images, under 3 minutes
    python benchmarks/bench_transformer.py --estimate      # roofline times for an H100 from XLA's cost analysis

The test split is MSCOCO-sized: 5,000 images x 5 references. The references are real captions
(5,000 Flickr8k images sampled with a fixed seed, 5 captions each, alnum-lower words), the image
features random (2,048 non-negative numbers per image). The vocabulary is a BPE of 10,000 pieces
(``pregen_jax.datasets.tokenizer.train_bpe``) trained on all 40,000 Flickr8k captions. The model
is the ``transformer`` architecture with random weights: width 512, feed-forward 2,048, image
projection 512, 6 layers, 8 heads. A random model almost never ends a caption, so the end
token's output bias is raised until greedy captions end, on average, at the references' mean
length in pieces. The bias is found from one greedy pass with the end token forbidden: until
the end token wins, raising its logit changes nothing else, so that pass's margins (the end
token's logit minus the best other's, per step) give every bias's greedy lengths exactly.

Stages (each program compiled ahead, compile times reported apart, then timed once):
(a) pre-gen: teacher-forced probabilities of every reference piece (one parallel pass over all
    positions), the pieces joined to words (``[pregen] units = "word"``, the default), and the
    504-metric sweep over the spec's 15 strata (blocks of a random image order, as in
    bench_sweep.py);
(b) generation with the key/value cache: greedy and beam 3 (min length 5, max length 50);
(c) post-gen on the beam-3 captions: CIDEr-D, BLEU-1..4 and METEOR with pycocoevalcap, and with
    the package's array scorers (``pregen_jax.postgen.score_systems``; METEOR in its warm JVM)
    where this checkout has them;
(d) what parallel positions buy: one teacher-forcing batch (256 rows of 16 positions; 32 with
    --quick) timed in one parallel pass and step by step through the key/value cache.
Below 5,000 images the per-image costs are printed, with the full size estimated from them
(teacher forcing from its time per computed position and the full split's padded layout,
decoding from its time per row-step); the sweep and post-gen, which need no model, are also
timed at 5,000 images (the measured probabilities and captions repeated over the 5,000 images'
references). Peak memory per stage: the resident set on CPU (the METEOR JVM is a separate
process, not counted), the device's peak bytes in use on an accelerator.
The last line printed is machine-readable:
    pregen_s=... beam3_s=... postgen_s=... speedup=...
with speedup = (beam3_s + postgen_s) / pregen_s at the measured size, postgen_s the fastest
post-gen path available (the array scorers when present: the conservative ratio).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import resource
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inputs import spec_strata  # noqa: E402

from pregen_jax import postgen, tiers  # noqa: E402
from pregen_jax.captioning import TransformerConfig, decode, generate_captions, make_model, reference_probs  # noqa: E402
from pregen_jax.captioning.evaluate import DataParallel, _per_device, round_up  # noqa: E402
from pregen_jax.captioning.input_pipeline import bucket_width, reference_word_starts  # noqa: E402
from pregen_jax.datasets import read_flickr8k  # noqa: E402
from pregen_jax.datasets.tokenizer import train_bpe  # noqa: E402

FULL_IMAGES, REFS, FEATURE_SIZE = 5000, 5, 2048
MODEL = TransformerConfig(width=512, mlp_width=2048, image_size=512, layers=6, heads=8, dropout=0.1)
MAX_LEN, MIN_LEN, BEAM = 50, 5, 3
TF_BATCH, DECODE_BATCH = 512, 200   # reference_probs' default batch size; 2 decoding batches at the CPU default
CALIBRATION = 250                   # images whose greedy pass sets the end token's bias
FLICKR8K = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "flickr8k"
H100_TFLOPS, H100_TBS = 494.7, 3.35  # NVIDIA's published H100 SXM figures: TF32 tensor core (dense), HBM3


# ----------------------------------------------------------------------------- measuring
class Stages:
    """Wall time and peak memory of named stages, in the order run."""

    def __init__(self):
        self.rows: dict[str, dict] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        resettable = reset_peak_rss()
        start, cpu = time.perf_counter(), time.process_time()
        yield
        self.rows[name] = {"s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                           "rss_mb": peak_rss_mb(), "rss_stage": resettable, "device_mb": device_peak_mb()}

    def s(self, name: str) -> float:
        return self.rows[name]["s"]

    def cpu(self, name: str) -> float:
        """CPU seconds of this process's threads (on a shared machine less noisy than wall time)."""
        return self.rows[name]["cpu_s"]


def reset_peak_rss() -> bool:
    """Reset the kernel's peak resident set (Linux: VmHWM), so each stage's peak is its own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """Peak resident set since the last reset (else of the whole process), in MB."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def device_peak_mb() -> float | None:
    """The first device's peak bytes in use (a GPU or TPU; None on CPU, which has no such counter)."""
    stats = jax.devices()[0].memory_stats() if jax.devices()[0].platform != "cpu" else None
    return stats["peak_bytes_in_use"] / 2**20 if stats and "peak_bytes_in_use" in stats else None


# ----------------------------------------------------------------------------- inputs
def test_split(folder: Path, seed: int = 0):
    """(captions[5000][5] word lists of sampled Flickr8k images, every Flickr8k image's 5 captions)."""
    if not (folder / "Flickr8k.token.txt").is_file():
        raise SystemExit(f"bench_transformer: Flickr8k captions not found in {folder} (pass --flickr8k DIR)")
    data = read_flickr8k(folder)
    every = [refs[:REFS] for split in ("train", "val", "test") for refs in data[split].captions]
    chosen = np.random.default_rng(seed).choice(len(every), FULL_IMAGES, replace=False)
    return [every[i] for i in chosen], every


def random_model(vocab_size: int, seed: int = 0):
    """The transformer with random weights (Flax's default initialisers)."""
    model = make_model("transformer", MODEL, vocab_size)
    probe = jnp.zeros((1, FEATURE_SIZE), jnp.float32)
    return model, model.init(jax.random.PRNGKey(seed), probe, jnp.zeros((1,), jnp.int32))


@functools.partial(jax.jit, static_argnums=(0, 3))
def end_margins(model, params, features, max_len: int):
    """f32[B, max_len]: per greedy step with the end token forbidden, its logit minus the best other's."""
    def body(carry, _):
        state, prev = carry
        state, logits = decode.decode_step(model, params, state, prev)
        others = logits.at[:, decode.EDGE_ID].set(-jnp.inf)
        return (state, jnp.argmax(others, -1).astype(jnp.int32)), logits[:, decode.EDGE_ID] - others.max(-1)
    init = (decode.start(model, params, features, max_len), jnp.full((features.shape[0],), decode.EDGE_ID, jnp.int32))
    return jax.lax.scan(body, init, None, length=max_len)[1].T


def greedy_lengths(margins: np.ndarray, bias: float) -> np.ndarray:
    """Greedy caption lengths (pieces before the end token) with ``bias`` added to the end token's logit."""
    ends = (margins + bias >= 0) & (np.arange(margins.shape[1]) >= MIN_LEN)
    return np.where(ends.any(1), ends.argmax(1), margins.shape[1])


def end_bias(margins: np.ndarray, target: float) -> float:
    """The bias whose mean greedy length is closest to ``target`` (bisection; lengths fall as it grows)."""
    low, high = -float(margins.max()) - 1, -float(margins.min()) + 1
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if greedy_lengths(margins, mid).mean() > target else (low, mid)
    return high


def with_end_bias(params, bias: float):
    out = params["params"]["out"]
    return {**params, "params": {**params["params"], "out": {**out, "bias": out["bias"].at[decode.EDGE_ID].add(bias)}}}


@functools.partial(jax.jit, static_argnums=0)
def stepwise_token_probs(model, params, features, inputs, targets):
    """``decode.true_token_probs`` with the positions read one at a time through the key/value
    cache (``start_decoding`` + ``step``, as decoding reads them) instead of in one parallel pass."""
    def body(state, tokens):
        return decode.decode_step(model, params, state, tokens)
    _, logits = jax.lax.scan(body, decode.start(model, params, features, inputs.shape[1]), inputs.T)
    logits = logits.swapaxes(0, 1).astype(jnp.float32)
    true_logit = jnp.take_along_axis(logits, targets[..., None], -1)
    log_probs = true_logit[..., 0] - jax.nn.logsumexp(logits, -1)
    return jnp.exp(log_probs), jnp.sum(logits > true_logit, -1).astype(jnp.int32)


def parallel_vs_stepwise(model, params, features, rows: int, width: int = 16) -> dict:
    """Seconds of the same teacher-forced batch (``rows`` x ``width`` positions), in one parallel
    pass and step by step through the cache (each compiled by a first call), and their largest
    probability difference."""
    rng = np.random.default_rng(2)
    ids = rng.integers(2, model.vocab_size, (rows, width + 1)).astype(np.int32)
    ids[:, 0] = decode.EDGE_ID
    args = (params, features[np.arange(rows) % len(features)], ids[:, :width], ids[:, 1:])
    out = {}
    for name, fn in (("parallel", decode.true_token_probs), ("stepwise", stepwise_token_probs)):
        jax.block_until_ready(fn(model, *args))
        start = time.perf_counter()
        out[name + "_probs"] = np.asarray(jax.block_until_ready(fn(model, *args))[0])
        out[name] = time.perf_counter() - start
    out["max_diff"] = float(np.abs(out["parallel_probs"] - out["stepwise_probs"]).max())
    out["positions"] = rows * width
    return out


def interleaved(stages: Stages, calls: dict, reps: int) -> dict:
    """Each of ``calls`` (stage name -> no-argument function) in turn, ``reps`` times; each stage's
    row is its median call's (wall, CPU and memory of that call). -> the last result of each."""
    results = {}
    for rep in range(reps):
        for name, fn in calls.items():
            with stages(f"{name} #{rep}"):
                results[name] = fn()
    for name in calls:
        runs = sorted((stages.rows.pop(f"{name} #{rep}") for rep in range(reps)), key=lambda row: row["s"])
        stages.rows[name] = {**runs[(reps - 1) // 2], "all_s": [row["s"] for row in runs]}
    return results


# ----------------------------------------------------------------------------- layouts and compilation
def tf_widths(piece_counts: np.ndarray, batch_size: int) -> list[int]:
    """The padded width of each teacher-forcing batch, as ``reference_probs`` forms them
    (references sorted by length, ``batch_size`` a batch, width a multiple of 8 of the longest m+1)."""
    lengths = np.sort(piece_counts + 1, kind="stable")
    return [bucket_width(int(lengths[s:s + batch_size].max())) for s in range(0, len(lengths), batch_size)]


def compile_ahead(kind: str, model, params, statics: tuple, *arrays) -> float:
    """Seconds to compile ``evaluate``'s batched program ``kind`` for these shapes (cached for the timed calls)."""
    parallel = DataParallel.over()
    fn = _per_device(kind, model, parallel.mesh, statics)
    args = [parallel.split(np.zeros(shape, dtype)) for shape, dtype in arrays]
    start = time.perf_counter()
    fn.lower(parallel.replicate(params), *args).compile()
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- an accelerator estimate
def xla_cost(lowered) -> tuple[float, float]:
    """(flops, bytes accessed) of a lowered program, from XLA's cost analysis of its compiled form here."""
    cost = lowered.compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", 0.0)), float(cost.get("bytes accessed", 0.0))


def roofline_s(flops: float, bytes_: float, tflops: float, tbs: float) -> float:
    """Seconds at the roofline: the slower of the arithmetic at peak and the memory traffic at full bandwidth."""
    return max(flops / (tflops * 1e12), bytes_ / (tbs * 1e12))


def beam_step(model, width: int):
    """One beam-search position as its own program: the decoder's step, log-softmax, top-k, reordering."""
    def one(params, beams, t):
        decoder, logits = decode.decode_step(model, params, beams.decoder, decode.previous_tokens(beams, t))
        return decode.extend_beams(beams, decoder, decode._log_probs(logits, t, MIN_LEN), t)
    return jax.jit(one)


def estimate(model, params, pieces_full: np.ndarray, tflops: float, tbs: float) -> None:
    """Roofline times on an accelerator for the full split's teacher-forced pass and beam-3 decoding,
    from XLA's cost analysis (flops, bytes accessed) of the programs compiled for this machine's CPU."""
    spec = lambda shape, dtype: jax.ShapeDtypeStruct(shape, dtype)  # noqa: E731
    widths = tf_widths(pieces_full, TF_BATCH)
    tf = {"flops": 0.0, "bytes": 0.0}
    for width in sorted(set(widths)):
        flops, bytes_ = xla_cost(decode.true_token_probs.lower(
            model, params, spec((TF_BATCH, FEATURE_SIZE), jnp.float32), spec((TF_BATCH, width), jnp.int32),
            spec((TF_BATCH, width), jnp.int32)))
        tf["flops"] += flops * widths.count(width)
        tf["bytes"] += bytes_ * widths.count(width)
    beams = jax.eval_shape(lambda p, f: decode.init_beams(decode.start(model, p, f, MAX_LEN), DECODE_BATCH, BEAM,
                                                          MAX_LEN),
                           params, spec((DECODE_BATCH, FEATURE_SIZE), jnp.float32))
    step_flops, step_bytes = xla_cost(beam_step(model, BEAM).lower(params, beams, spec((), jnp.int32)))
    batches = round_up(FULL_IMAGES, DECODE_BATCH) // DECODE_BATCH
    stop = int(np.percentile(pieces_full + 1, 99))
    tf_s = roofline_s(tf["flops"], tf["bytes"], tflops, tbs)
    step_s = roofline_s(step_flops, step_bytes, tflops, tbs)
    print(f"\nESTIMATE, not a measurement: roofline times on an accelerator of {tflops:g} TFLOP/s and {tbs:g} TB/s "
          f"(defaults: NVIDIA's published H100 SXM figures), from XLA's cost analysis of the programs as compiled "
          f"for this machine's CPU (a GPU compiler fuses differently); latency, kernel launches and the host are "
          f"left out, so real times are longer, most of all for decoding's small steps")
    print(f"teacher-forced pass, the full split ({FULL_IMAGES:,} images x {REFS} references, {len(widths)} batches "
          f"of {TF_BATCH}, widths {sorted(set(widths))}): {tf['flops'] / 1e12:.2f} TFLOP, {tf['bytes'] / 1e9:.2f} GB "
          f"accessed -> {tf_s * 1e3:.1f} ms")
    print(f"one beam-3 position over {DECODE_BATCH} images ({DECODE_BATCH * BEAM} rows; the cache of {MAX_LEN + 1} "
          f"slots reordered by beam): {step_flops / 1e9:.2f} GFLOP, {step_bytes / 1e9:.3f} GB accessed -> "
          f"{step_s * 1e6:.0f} us ({'memory' if step_bytes / tbs > step_flops / tflops else 'compute'}-bound)")
    for label, steps in ((f"the scan's {MAX_LEN} positions", MAX_LEN),
                         (f"{stop} positions (99% of the references have ended by then)", stop)):
        beam_s = step_s * steps * batches
        print(f"beam 3 over the full split, {batches} batches x {label}: {beam_s:.2f} s = {beam_s / tf_s:.1f}x "
              f"the teacher-forced pass")
    print(f"estimate_tf_s={tf_s:.4f} estimate_beam_step_us={step_s * 1e6:.1f} "
          f"estimate_beam3_scan_s={step_s * MAX_LEN * batches:.3f} estimate_beam3_stop{stop}_s="
          f"{step_s * stop * batches:.3f}")


# ----------------------------------------------------------------------------- post-gen
def coco_postgen(gts: dict, res: dict) -> dict[str, float]:
    """Seconds of pycocoevalcap's CIDEr-D, BLEU-1..4 and METEOR (its JVM started inside)."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    times = {}
    for name, make in (("CIDEr", Cider), ("BLEU", lambda: Bleu(4)), ("METEOR", Meteor)):
        start = time.perf_counter()
        scorer = make()
        if name == "BLEU":
            scorer.compute_score(gts, res, verbose=0)
        else:
            scorer.compute_score(gts, res)
        times[name] = time.perf_counter() - start
        if name == "METEOR":
            with contextlib.suppress(Exception):
                scorer.close() if hasattr(scorer, "close") else scorer.__del__()
    return times


def array_postgen(gts: dict, res: dict) -> dict[str, float] | None:
    """Seconds of the package's array scorers (CIDEr-D, BLEU-1..4) and METEOR in its warm JVM
    (start included); None where this checkout has no array scorers."""
    if not hasattr(postgen, "score_systems"):
        return None
    start = time.perf_counter()
    postgen.score_systems(["CIDEr", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"], gts, {"beam3": res}, tokenizer="alnum-lower")
    times = {"CIDEr+BLEU": time.perf_counter() - start}
    start = time.perf_counter()
    with postgen.make_metrics(["METEOR"]) as metrics:
        if metrics.metrics:
            metrics.metrics[0].compute_score(gts, res)
            times["METEOR"] = time.perf_counter() - start
    return times


def word_dicts(references, captions) -> tuple[dict, dict]:
    """pycocoevalcap's (gts, res): image -> reference strings, image -> [caption string]."""
    gts = {i: [" ".join(r) for r in refs] for i, refs in enumerate(references)}
    return gts, {i: [" ".join(captions[i % len(captions)])] for i in range(len(references))}


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 images; under 3 minutes")
    parser.add_argument("--images", type=int, default=None,
                        help="test images to run the model on (default: 5,000 on an accelerator, 400 on CPU)")
    parser.add_argument("--flickr8k", type=Path, default=FLICKR8K, help="folder of Flickr8k.token.txt")
    parser.add_argument("--reps", type=int, default=5,
                        help="interleaved calls of each decoder, the median timed (default 5)")
    parser.add_argument("--estimate", action="store_true",
                        help="only the roofline estimate for an accelerator from XLA's cost analysis (no timing)")
    parser.add_argument("--peak-tflops", type=float, default=H100_TFLOPS,
                        help=f"--estimate: the accelerator's peak TFLOP/s (default {H100_TFLOPS:g}: H100 SXM, TF32 "
                             "dense, what float32 matmuls use there)")
    parser.add_argument("--bandwidth-tbs", type=float, default=H100_TBS,
                        help=f"--estimate: its memory bandwidth in TB/s (default {H100_TBS:g}: H100 SXM, HBM3)")
    args = parser.parse_args(argv)
    wall = time.perf_counter()
    platform = jax.devices()[0].platform
    images = args.images or (24 if args.quick else FULL_IMAGES if platform != "cpu" else 400)
    images = min(images, FULL_IMAGES)
    stages = Stages()

    with stages("setup: references, BPE, model"):
        all_refs, every = test_split(args.flickr8k)
        vocab = train_bpe(every, 10_000)
        model, params = random_model(len(vocab))
    refs = all_refs[:images]
    pieces_full = np.array([len(vocab.encode(r)) for rs in all_refs for r in rs])
    if args.estimate:
        estimate(model, params, pieces_full, args.peak_tflops, args.bandwidth_tbs)
        return 0
    pieces = pieces_full[:images * REFS]
    features = np.maximum(np.random.default_rng(1).standard_normal((images, FEATURE_SIZE)), 0).astype(np.float32)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params["params"]))
    print(f"jax {jax.__version__} on {platform} ({jax.device_count()} device(s)); transformer width 512, 6 layers, "
          f"8 heads, {n_params / 1e6:.1f}M parameters, BPE vocabulary {len(vocab):,}; {images:,} of {FULL_IMAGES:,} "
          f"test images x {REFS} references (mean {pieces_full.mean():.2f} pieces, "
          f"{np.mean([len(r) for rs in all_refs for r in rs]):.2f} words)")

    with stages("length calibration (one greedy pass)"):
        calib = features[:min(images, CALIBRATION)]
        margins = np.asarray(end_margins(model, params, calib, MAX_LEN))
        bias = end_bias(margins, pieces_full.mean())
        params = with_end_bias(params, bias)
    predicted = greedy_lengths(margins, bias)

    tf_batch = min(TF_BATCH, round_up(images * REFS, 8))
    dec_batch = min(DECODE_BATCH, images)
    widths = tf_widths(pieces, tf_batch)
    compile_s = {
        "teacher forcing": sum(compile_ahead("probs", model, params, (), ((tf_batch, FEATURE_SIZE), np.float32),
                                             ((tf_batch, w), np.int32), ((tf_batch, w), np.int32))
                               for w in sorted(set(widths))),
        **{f"{name}{suffix}": compile_ahead(kind, model, params, (*width, MAX_LEN, MIN_LEN, stop_early),
                                            ((dec_batch, FEATURE_SIZE), np.float32), ((dec_batch,), bool))
           for name, kind, width in (("greedy", "greedy", ()), ("beam 3", "beam", (BEAM,)))
           for suffix, stop_early in (("", True), (" scan", False))},
    }

    # (a) pre-gen
    strata = spec_strata(images)
    with stages("(a) teacher-forced pass"):
        token_probs = reference_probs(model, params, features, refs, vocab, batch_size=tf_batch, progress=False)
    with stages("(a) pieces to words"):
        word_probs = token_probs.to_words(reference_word_starts(refs, vocab))
    sweep_first = time.perf_counter()
    tiers.sweep(word_probs, strata)
    sweep_first = time.perf_counter() - sweep_first
    with stages("(a) sweep, 504 metrics x 15 strata"):
        tiers.sweep(word_probs, strata)
    if not args.quick:  # another compilation (a shape of its own), skipped to keep --quick short
        tiers.sweep(token_probs, strata)
        with stages("(a) sweep at token units"):
            tiers.sweep(token_probs, strata)

    # (b) generation with the key/value cache: the stopping decoder and the scan over all MAX_LEN
    # positions, called in turn (interleaved) args.reps times, the median call kept
    def generation(width, stop_early):
        return lambda: generate_captions(model, params, features, vocab, width, MAX_LEN, MIN_LEN, dec_batch,
                                         progress=False, stop_early=stop_early, with_steps=True)
    decoded = interleaved(stages, {"(b) greedy": generation(1, True), "(b) greedy, scan": generation(1, False),
                                   "(b) beam 3": generation(BEAM, True), "(b) beam 3, scan": generation(BEAM, False)},
                          args.reps)
    (greedy, greedy_steps), (beam3, beam_steps) = decoded["(b) greedy"], decoded["(b) beam 3"]
    identical = all(decoded[name][0] == decoded[name + ", scan"][0] for name in ("(b) greedy", "(b) beam 3"))

    # what parallel positions buy: one batch of teacher forcing, parallel against step by step
    with stages("(d) one batch, parallel vs step by step"):
        parallel = parallel_vs_stepwise(model, params, features, min(tf_batch, 32 if args.quick else 256))

    # (c) post-gen on the beam-3 captions
    gts, res = word_dicts(refs, beam3)
    with stages("(c) post-gen, pycocoevalcap"):
        coco = coco_postgen(gts, res)
    arrays = None
    if hasattr(postgen, "score_systems"):
        with stages("(c) post-gen, array scorers"):
            arrays = array_postgen(gts, res)
    full = None
    if images < FULL_IMAGES and not args.quick:
        full_words = word_probs.take(np.arange(FULL_IMAGES) % images)
        full_strata = spec_strata(FULL_IMAGES)
        tiers.sweep(full_words, full_strata)
        start = time.perf_counter()
        tiers.sweep(full_words, full_strata)
        full = {"sweep": time.perf_counter() - start}
        gts_full, res_full = word_dicts(all_refs, beam3)
        full["coco"] = coco_postgen(gts_full, res_full)
        full["arrays"] = array_postgen(gts_full, res_full)
    ref_words = np.mean([len(r) for rs in refs for r in rs])
    report(stages, compile_s, sweep_first, images, ref_words, pieces, pieces_full, tf_batch, dec_batch, widths,
           predicted, parallel, greedy, beam3, vocab, coco, arrays, full, bias, args.quick, time.perf_counter() - wall,
           {"greedy": greedy_steps, "beam 3": beam_steps}, identical, args.reps)
    return 0


def report(stages, compile_s, sweep_first, images, ref_words, pieces, pieces_full, tf_batch, dec_batch, widths,
           predicted, parallel, greedy, beam3, vocab, coco, arrays, full, bias, quick, wall_s, steps, identical,
           reps) -> None:
    print(f"\n{'stage':40s} {'seconds':>9} {'s / image':>10} {'CPU s':>8} {'peak RSS MB':>12} {'device MB':>10}")
    for name, row in stages.rows.items():
        device = f"{row['device_mb']:.0f}" if row["device_mb"] is not None else "-"
        print(f"{name:40s} {row['s']:9.3f} {row['s'] / images:10.4f} {row['cpu_s']:8.1f} {row['rss_mb']:12.0f} "
              f"{device:>10}")
    print("compile (s, apart): " + ", ".join(f"{k} {v:.1f}" for k, v in compile_s.items())
          + f", sweep {sweep_first - stages.s('(a) sweep, 504 metrics x 15 strata'):.1f}"
          + ("" if stages.rows["setup: references, BPE, model"]["rss_stage"] else "  (peak RSS: whole process)"))

    greedy_words, beam_words = np.array([len(c) for c in greedy]), np.array([len(c) for c in beam3])
    beam_pieces = np.array([len(vocab.encode(c)) for c in beam3])
    print(f"\nend-token bias {bias:+.2f}: greedy captions of the {len(predicted)} calibration images end after "
          f"{predicted.mean():.2f} pieces on average (median {np.median(predicted):.0f}; "
          f"{(predicted == MAX_LEN).mean():.0%} never end; references: {pieces_full.mean():.2f}); generated captions "
          f"have {greedy_words.mean():.2f} words greedy, {beam_words.mean():.2f} words (about {beam_pieces.mean():.1f} "
          f"pieces) beam 3; references {ref_words:.2f} words")

    never = {name: np.mean([len(vocab.encode(c)) >= MAX_LEN for c in captions])
             for name, captions in (("greedy", greedy), ("beam 3", beam3))}
    print(f"captions that never end (re-encoded to {MAX_LEN} pieces or more): greedy {never['greedy']:.1%}, beam 3 "
          f"{never['beam 3']:.1%}; positions each batch of {dec_batch} ran, stopping decoder: greedy "
          f"{steps['greedy']}, beam 3 {steps['beam 3']} (the scan: {MAX_LEN}); captions identical to the scan's: "
          f"{identical}")

    # what decides the ratio: positions computed and seconds per position
    tf_s = stages.s("(a) teacher-forced pass")
    tf_positions = sum(w + 1 for w in widths) * tf_batch        # + 1: the image prefix position
    real_positions = int((pieces + 1).sum())
    print(f"\nteacher forcing: {real_positions:,} real positions ({real_positions / images:.1f} per image), "
          f"{tf_positions:,} computed with padding and the image prefix ({tf_positions / images:.1f} per image; "
          f"batch widths {sorted(set(widths))}): {tf_s / tf_positions * 1e6:.0f} us per computed position, "
          f"{tf_s / real_positions * 1e6:.0f} us per real one")
    print(f"decoding, median of {reps} interleaved calls each (all: " + "; ".join(
        f"{name[4:]} " + " ".join(f"{x:.2f}" for x in stages.rows[name]["all_s"])
        for name in ("(b) greedy", "(b) greedy, scan", "(b) beam 3", "(b) beam 3, scan")) + ")")
    row_steps = {}
    for name, width in (("greedy", 1), ("beam 3", BEAM)):
        for suffix, batch_steps in (("", steps[name]), (", scan", [MAX_LEN] * len(steps[name]))):
            key = f"(b) {name}{suffix}"
            row_steps[key] = sum(batch_steps) * dec_batch * width
            seconds, cpu = stages.s(key), stages.cpu(key)
            print(f"{key[4:]:14s} {seconds:8.2f} s, {row_steps[key]:,} row-steps "
                  f"({row_steps[key] / images:.0f} per image): {seconds / row_steps[key] * 1e6:.0f} us per row-step "
                  f"({cpu / row_steps[key] * 1e6:.0f} CPU us); / teacher forcing = {seconds / tf_s:.2f}x = "
                  f"{row_steps[key] / tf_positions:.2f}x the positions x "
                  f"{(seconds / row_steps[key]) / (tf_s / tf_positions):.2f}x the time per position")
    for name in ("greedy", "beam 3"):
        print(f"stopping vs scan, {name}: {stages.s(f'(b) {name}, scan') / stages.s(f'(b) {name}'):.2f}x faster")
    print(f"the same teacher-forced batch ({parallel['positions']:,} positions, 16 a row): one parallel pass "
          f"{parallel['parallel']:.2f} s, step by step through the key/value cache {parallel['stepwise']:.2f} s: "
          f"parallel positions are {parallel['stepwise'] / parallel['parallel']:.2f}x faster "
          f"(probabilities differ by {parallel['max_diff']:.1e} at most)")
    greedy_s, beam_s = stages.s("(b) greedy"), stages.s("(b) beam 3")
    beam_scan_s = stages.s("(b) beam 3, scan")

    coco_s = sum(coco.values())
    arrays_s = sum(arrays.values()) if arrays else None
    print("\npost-gen (beam-3 captions), pycocoevalcap: " + ", ".join(f"{k} {v:.2f} s" for k, v in coco.items())
          + f" = {coco_s:.2f} s")
    if arrays:
        print("post-gen, array scorers (METEOR: warm JVM, start included): "
              + ", ".join(f"{k} {v:.2f} s" for k, v in arrays.items()) + f" = {arrays_s:.2f} s")
    else:
        print("post-gen, array scorers: not in this checkout (pregen_jax.postgen has no score_systems)")
    pregen_s = tf_s + stages.s("(a) pieces to words") + stages.s("(a) sweep, 504 metrics x 15 strata")
    postgen_s = arrays_s if arrays_s is not None else coco_s
    speedup = (beam_s + postgen_s) / pregen_s
    token_units = (f" (token units: {tf_s + stages.s('(a) sweep at token units'):.2f} s)"
                   if "(a) sweep at token units" in stages.rows else "")
    print(f"\npre-gen {pregen_s:.2f} s{token_units}; "
          f"greedy {greedy_s:.2f} s; beam 3 {beam_s:.2f} s; post-gen {postgen_s:.2f} s "
          f"({'array scorers' if arrays else 'pycocoevalcap'}), {coco_s:.2f} s with pycocoevalcap")
    scan_speedup = (beam_scan_s + postgen_s) / pregen_s
    print(f"beam-3 + post-gen / pre-gen = {speedup:.2f}x with the stopping decoder, {scan_speedup:.2f}x with the scan "
          f"({(beam_s + coco_s) / pregen_s:.2f}x / {(beam_scan_s + coco_s) / pregen_s:.2f}x with pycocoevalcap; "
          f"greedy + post-gen: {(greedy_s + postgen_s) / pregen_s:.2f}x / "
          f"{(stages.s('(b) greedy, scan') + postgen_s) / pregen_s:.2f}x); post-gen alone / pre-gen "
          f"{postgen_s / pregen_s:.2f}x")

    if full:
        full_widths = tf_widths(pieces_full, TF_BATCH)
        full_positions = sum(w + 1 for w in full_widths) * TF_BATCH
        est_tf = tf_s / tf_positions * full_positions
        est_words = stages.s("(a) pieces to words") / images * FULL_IMAGES
        full_batches = round_up(FULL_IMAGES, DECODE_BATCH) // DECODE_BATCH  # the stopping decoder: the mean steps
        est_beam = beam_s / row_steps["(b) beam 3"] * full_batches * DECODE_BATCH * BEAM * np.mean(steps["beam 3"])
        est_scan = beam_scan_s / row_steps["(b) beam 3, scan"] * full_batches * DECODE_BATCH * BEAM * MAX_LEN
        full_coco = sum(full["coco"].values())
        full_post = sum(full["arrays"].values()) if full["arrays"] else full_coco
        est_pregen = est_tf + est_words + full["sweep"]
        print(f"\nfull size ({FULL_IMAGES:,} images), estimated from the per-position costs: teacher forcing "
              f"{est_tf:.0f} s ({full_positions:,} positions), pieces to words {est_words:.1f} s, sweep (measured) "
              f"{full['sweep']:.2f} s, beam 3 {est_beam:.0f} s (scan {est_scan:.0f} s); post-gen measured: {full_post:.1f} s "
              f"({full_coco:.1f} s pycocoevalcap: " + ", ".join(f"{k} {v:.1f}" for k, v in full["coco"].items())
              + (")" if not full["arrays"] else "; arrays: " + ", ".join(
                  f"{k} {v:.1f}" for k, v in full["arrays"].items()) + ")"))
        print(f"full size estimate: beam-3 + post-gen / pre-gen = {(est_beam + full_post) / est_pregen:.2f}x "
              f"with the stopping decoder, {(est_scan + full_post) / est_pregen:.2f}x with the scan "
              f"({(est_beam + full_coco) / est_pregen:.2f}x / {(est_scan + full_coco) / est_pregen:.2f}x with "
              "pycocoevalcap)")

    print(f"\ntarget pre-gen faster than beam-3 + post-gen: {'met' if speedup > 1 else 'MISSED'} ({speedup:.2f}x); "
          f"target >= 20x (bench_pregen_vs_generation's): {'met' if speedup >= 20 else 'MISSED'}; "
          f"2018: 44x (GRU, GTX 760, MSCOCO)")
    length_ok = abs(greedy_words.mean() - ref_words) <= 0.15 * ref_words
    print(f"target mean greedy length (words) within 15% of the references': {'met' if length_ok else 'MISSED'}; "
          + (f"--quick under 3 minutes: {'met' if wall_s < 180 else 'MISSED'} " if quick else "")
          + f"(whole run {wall_s:.0f} s)")
    print(f"pregen_s={pregen_s:.3f} beam3_s={beam_s:.3f} postgen_s={postgen_s:.3f} speedup={speedup:.2f} "
          f"beam3_scan_s={beam_scan_s:.3f} scan_speedup={scan_speedup:.2f} captions_identical={identical}")


if __name__ == "__main__":
    sys.exit(main())
