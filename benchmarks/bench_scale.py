"""How a search scales: models x images, devices, processes, the post-gen pool, and the demo.

    python benchmarks/bench_scale.py            # full run (about 30 minutes on 2 cores, the demo included)
    python benchmarks/bench_scale.py --quick    # a few minutes (the quick demo)
    python benchmarks/bench_scale.py --only grid devices   # some sections

Sections (each prints a markdown table):
  grid       seconds per model of reference probabilities, the 504-metric sweep and post-gen
             scoring (CIDEr, METEOR, WMD) over 1k-40k test images, synthetic but realistic
             inputs (the demo's model size and 72-word vocabulary; 5 references of about 10
             words), and what 1-64 models take on one process (per-model time x models: the
             stages are per model, with nothing shared between models but compiled code).
  devices    reference probabilities and generation with batches split over 1, 2 and 4 fake
             CPU devices (a subprocess with --xla_force_host_platform_device_count=4): the
             largest difference from one device, and the overhead (fake devices share the cores).
  workers    training steps per second alone, and while a worker thread or a worker process
             scores captions (CIDEr, METEOR, WMD) beside it: what the post-gen pool costs training.
  ensemble   one training step of 3 runs vmapped against 3 separate steps (and how far apart
             the parameters are after a few steps).
  trainers   two runs' training steps one after the other, and at once in two threads of one process (as
             a search trains them: pipeline/trainers.py): steps per second of both.
  compile    the training step's first call in a fresh process, compiled and loaded from the
             persistent compilation cache that a search keeps in its run folder.
  processes  `pregen-search run` of one config with 1 process and with 2 processes on this machine.
  demo       `pregen-search demo` (--quick with --quick) in a fresh run folder, dataset cached: its
             stage times as the report gives them.
  baseline   the demo of the code as it was before this round of changes (git commit BASELINE: 4
             GRU architectures, pycocoevalcap post-gen, cold JVMs), from `git archive` in a
             temporary folder, timed the same way: the demo's speed against it, in one run.
The last line printed is machine-readable:
    demo_s=<seconds> baseline_demo_s=<seconds> demo_vs_baseline=<ratio> postgen_share=<share> sweep_steady_s_5000=<seconds> two_process_speedup=<ratio>
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from _inputs import random_ref_probs, spec_strata  # noqa: E402

SECTIONS = ("grid", "devices", "workers", "ensemble", "trainers", "compile", "processes", "demo", "baseline")
BASELINE = "6fbc621"  # the demo of 2026-11-22 (213 s on one idle machine, 467 s on another)
WORDS = ("a an the red green blue yellow purple small big large tiny ball box ring triangle square circle star "
         "above below beside left right of next to on under and with near").split()


def env_with_root(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra)
    return env


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# ------------------------------------------------------------------ synthetic inputs


def demo_model(seed: int = 0):
    """A model of the demo's size (GRU 128, 72-word vocabulary, 128-d image features), randomly initialised."""
    from pregen_jax.captioning import Captioner, RnnConfig
    from pregen_jax.captioning.train import init_params
    from pregen_jax.datasets import Vocabulary
    vocab = Vocabulary([f"w{k}" for k in range(70)])
    model = Captioner("merge", RnnConfig(embed_size=128, hidden_size=128, image_size=128), len(vocab))
    return model, init_params(model, 128, seed), vocab


def training_batch(rng, width: int = 12) -> tuple:
    """One training batch of the demo's shape: features f32[128, 128], inputs and targets i32[128, width], mask."""
    return (rng.normal(size=(128, 128)).astype(np.float32), rng.integers(0, 72, (128, width)).astype(np.int32),
            rng.integers(0, 72, (128, width)).astype(np.int32), np.ones((128, width), np.float32))


def demo_training_step():
    """(jitted Adam step, params, optimizer state, one batch) of the demo-size model."""
    import optax

    from pregen_jax.captioning import train as training
    model, params, _ = demo_model()
    optimizer = optax.adam(1e-3)
    return (training.make_train_step(model, optimizer), params, optimizer.init(params),
            training_batch(np.random.default_rng(0)))


def token_captions(images: int, vocab, seed: int = 0):
    """features f32[I, 128] and 5 references per image of N(10, 3) tokens (3-20) from ``vocab``."""
    rng = np.random.default_rng(seed)
    words = vocab.tokens[2:]
    features = rng.normal(size=(images, 128)).astype(np.float32)
    captions = [[[words[k] for k in rng.integers(0, len(words), int(np.clip(rng.normal(10, 3), 3, 20)))]
                 for _ in range(5)] for _ in range(images)]
    return features, captions


def english_captions(images: int, seed: int = 0):
    """(gts, res) of ``images`` images: 5 references of 6-14 words each, and a candidate that
    shares about half its words with the first reference (a mediocre captioner)."""
    rng = np.random.default_rng(seed)
    sentence = lambda n: [str(w) for w in rng.choice(WORDS, n)]  # noqa: E731
    gts, res = {}, {}
    for i in range(images):
        refs = [sentence(rng.integers(6, 15)) for _ in range(5)]
        candidate = [w if rng.random() < 0.5 else str(rng.choice(WORDS)) for w in refs[0]]
        gts[f"img{i}"] = [" ".join(r) for r in refs]
        res[f"img{i}"] = [" ".join(candidate)]
    return gts, res


# ------------------------------------------------------------------ sections


def grid(quick: bool) -> dict:
    """Seconds per model of each stage over image counts; totals for 1-64 models on one process."""
    import jax

    from pregen_jax import postgen, tiers
    from pregen_jax.captioning import reference_probs
    images_list = [1000, 5000] if quick else [1000, 5000, 40000]
    postgen_images = [1000] if quick else [1000, 5000]
    model, params, vocab = demo_model()
    rows, sweep_5000 = [], None
    metrics = postgen.make_metrics(["CIDEr", "METEOR", "WMD"])
    try:
        for images in images_list:
            features, captions = token_captions(images, vocab)
            run_probs = lambda: reference_probs(model, params, features, captions, vocab, progress=False,  # noqa
                                                warn_unknown=False)
            run_probs()  # compile every length bucket
            probs_s = median_time(run_probs, 1 if images > 5000 else 3)
            ref_probs, strata = random_ref_probs(images), spec_strata(images)
            # One model per call, as a search sweeps each model (bench_sweep.py times tiers.sweep_models).
            run_sweep = lambda rp=ref_probs, st=strata: jax.block_until_ready(tiers.sweep(rp, st))  # noqa: E731
            run_sweep()
            sweep_s = median_time(run_sweep, 3)
            if images == 5000:
                sweep_5000 = sweep_s
            post = {}
            if images in postgen_images:
                gts, res = english_captions(images)
                for metric in metrics.metrics:
                    start = time.perf_counter()
                    metric.compute_score(gts, res)
                    post[metric.name] = time.perf_counter() - start
            rows.append({"images": images, "probs": probs_s, "sweep": sweep_s, **post})
            print(f"  grid {images} images: {rows[-1]}", flush=True)
    finally:
        metrics.close()
    # Post-gen at image counts not measured: linear in images from the largest measured (per-image work).
    largest = max((r for r in rows if "CIDEr" in r), key=lambda r: r["images"])
    extrapolated = set()
    for row in rows:
        if "CIDEr" not in row:
            extrapolated.add(row["images"])
            for name in ("CIDEr", "METEOR", "WMD"):
                row[name] = largest[name] * row["images"] / largest["images"]
    print("\n### Seconds per model (one process, 2 CPU cores; post-gen on the whole test set; "
          "* = post-gen extrapolated linearly from the largest measured size)\n")
    names = ["probs", "sweep", "CIDEr", "METEOR", "WMD"]
    print("| images | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for row in rows:
        star = "*" if row["images"] in extrapolated else ""
        print(f"| {row['images']:,}{star} | " + " | ".join(f"{row[n]:.3f}" for n in names) + " |")
    print("\n### One process, all stages but training, by models x images (seconds = models x per-model)\n")
    models_list = [1, 4, 16, 64]
    print("| images \\ models | " + " | ".join(map(str, models_list)) + " |\n|---|" + "---|" * len(models_list))
    for row in rows:
        per_model = sum(v for k, v in row.items() if k != "images")
        print(f"| {row['images']:,} | " + " | ".join(f"{m * per_model:,.0f}" for m in models_list) + " |")
    return {"sweep_steady_s_5000": sweep_5000, "grid": rows}


DEVICE_SCRIPT = """
import json, sys, time
import jax, numpy as np
sys.path.insert(0, sys.argv[2])
from bench_scale import demo_model, token_captions
from pregen_jax.captioning import generate_captions, reference_probs
model, params, vocab = demo_model()
features, captions = token_captions(int(sys.argv[1]), vocab)
out = {}
for n in (1, 2, 4):
    devices = jax.local_devices()[:n]
    def probs():
        return reference_probs(model, params, features, captions, vocab, progress=False, warn_unknown=False,
                               devices=devices)
    def beam():
        return generate_captions(model, params, features, vocab, 3, progress=False, devices=devices)
    rp, caps = probs(), beam()
    start = time.perf_counter(); probs(); probs_s = time.perf_counter() - start
    start = time.perf_counter(); beam(); beam_s = time.perf_counter() - start
    out[n] = {"probs_s": probs_s, "beam3_s": beam_s, "probs": np.asarray(rp.probs).tolist(), "captions": caps}
json.dump(out, sys.stdout)
"""


def devices(quick: bool) -> dict:
    images = 500 if quick else 2000
    done = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT, str(images), str(Path(__file__).parent)],
                          env=env_with_root(JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=4"),
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    out = json.loads(done.stdout)
    one = out["1"]
    print(f"\n### Batches split over fake CPU devices ({images} images x 5 references; beam 3)\n")
    print("| devices | probabilities (s) | beam-3 generation (s) | max abs prob difference vs 1 | captions equal |")
    print("|---|---|---|---|---|")
    for n, row in out.items():
        diff = float(np.max(np.abs(np.asarray(row["probs"]) - np.asarray(one["probs"]))))
        same = sum(a == b for a, b in zip(row["captions"], one["captions"])) / len(one["captions"])
        print(f"| {n} | {row['probs_s']:.3f} | {row['beam3_s']:.3f} | {diff:.1e} | {same:.1%} |")
    return {"devices": {n: (row["probs_s"], row["beam3_s"]) for n, row in out.items()}}


def _score_forever(stop: threading.Event, done: list, images: int) -> None:
    """Post-gen jobs (CIDEr, METEOR, WMD on ``images`` images) until ``stop``; appends one entry per job."""
    from pregen_jax import postgen
    gts, res = english_captions(images, seed=len(done))
    with postgen.make_metrics(["CIDEr", "METEOR", "WMD"]) as metrics:
        while not stop.is_set():
            for metric in metrics.metrics:
                metric.compute_score(gts, res)
            done.append(time.perf_counter())


def _score_in_process(conn, images: int) -> None:
    stop, done = threading.Event(), []
    worker = threading.Thread(target=_score_forever, args=(stop, done, images))
    worker.start()
    conn.recv()
    stop.set()
    worker.join()
    conn.send(len(done))


def workers(quick: bool) -> dict:
    """Training throughput alone, beside a scoring thread, beside a scoring process."""
    import multiprocessing

    import jax

    step, params, opt_state, batch = demo_training_step()
    state = [params, opt_state]
    seconds = 20 if quick else 60

    def steps_per_s(duration: float) -> float:
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < duration:
            state[0], state[1], loss = step(state[0], state[1], jax.random.PRNGKey(count), *batch)
            count += 1
            if count % 10 == 0:
                loss.block_until_ready()
        loss.block_until_ready()
        return count / (time.perf_counter() - start)

    steps_per_s(3)  # compile
    images = 300
    results = {"alone": (steps_per_s(seconds), 0.0)}
    stop, done = threading.Event(), []
    thread = threading.Thread(target=_score_forever, args=(stop, done, images))
    thread.start()
    time.sleep(5)  # METEOR's JVM and GloVe load
    first = len(done)
    start = time.perf_counter()
    rate = steps_per_s(seconds)
    jobs = (len(done) - first) / (time.perf_counter() - start)
    stop.set()
    thread.join()
    results["beside a worker thread"] = (rate, jobs)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_score_in_process, args=(child, images))
    process.start()
    time.sleep(10)  # spawn, imports, JVM
    start = time.perf_counter()
    rate = steps_per_s(seconds)
    parent.send("stop")
    jobs_total = parent.recv()
    process.join()
    results["beside a worker process"] = (rate, jobs_total / (time.perf_counter() - start + 10))
    print(f"\n### Training steps (merge/GRU 128, batch 128 x 12) beside post-gen scoring ({images} images a job)\n")
    print("| training | steps / s | relative | post-gen jobs / s |\n|---|---|---|---|")
    for name, (rate, jobs) in results.items():
        print(f"| {name} | {rate:.1f} | {rate / results['alone'][0]:.2f} | {jobs:.2f} |")
    print("(the process's job rate counts its start-up: a lower bound)")
    return {"workers": results}


def trainers(quick: bool) -> dict:
    """Two runs trained one after the other against both at once in two threads (the search's trainers)."""
    import jax
    import optax

    from pregen_jax.captioning import train as training
    model, _, _ = demo_model()
    optimizer = optax.adam(1e-3)
    step = training.make_train_step(model, optimizer)
    states = [[p, optimizer.init(p)] for p in (training.init_params(model, 128, seed) for seed in (1, 2))]
    batch = training_batch(np.random.default_rng(0), 16)
    key = jax.random.PRNGKey(0)
    steps = 30 if quick else 150

    def train(k: int) -> None:
        for _ in range(steps):
            states[k][0], states[k][1], loss = step(*states[k], key, *batch)
        loss.block_until_ready()
    train(0), train(1)  # compiled

    def one_after_the_other():
        train(0), train(1)

    def at_once():
        threads = [threading.Thread(target=train, args=(k,)) for k in (0, 1)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    pairs = [(median_time(one_after_the_other, 1), median_time(at_once, 1)) for _ in range(3)]
    sequential_s, threads_s = np.median(pairs, axis=0)
    print(f"\n### 2 runs x {steps} training steps: one after the other vs at once in two threads\n")
    print("| training | seconds | steps per second | relative |\n|---|---|---|---|")
    print(f"| one after the other | {sequential_s:.2f} | {2 * steps / sequential_s:.1f} | 1.00 |")
    print(f"| two threads | {threads_s:.2f} | {2 * steps / threads_s:.1f} | {sequential_s / threads_s:.2f}x |")
    return {"trainers_speedup": sequential_s / threads_s}


def ensemble(quick: bool) -> dict:
    """3 runs' training steps vmapped into one, against 3 separate steps of the same batches."""
    import jax
    import optax

    from pregen_jax.captioning import train as training
    model, _, _ = demo_model()
    optimizer = optax.adam(1e-3)
    step = training.make_train_step(model, optimizer)
    runs = [training.init_params(model, 128, seed) for seed in (1, 2, 3)]
    states = [[p, optimizer.init(p)] for p in runs]
    stacked = jax.tree_util.tree_map(lambda *x: np.stack(x), *states)
    vmapped = jax.jit(jax.vmap(step))
    rng = np.random.default_rng(0)
    width = 12
    batches = [training_batch(rng, width) for _ in range(3)]
    keys = [jax.random.PRNGKey(k) for k in range(3)]
    together = [np.stack(parts) for parts in zip(*batches)]
    steps = 10 if quick else 40

    def separate():
        for k in range(3):
            states[k][0], states[k][1], loss = step(*states[k], keys[k], *batches[k])
        loss.block_until_ready()

    def joint():
        stacked[0], stacked[1], loss = vmapped(stacked[0], stacked[1], np.stack(keys), *together)
        loss.block_until_ready()
    separate(), joint()
    pairs = [(median_time(separate, 1), median_time(joint, 1)) for _ in range(steps)]  # interleaved: fair under load
    separate_s, joint_s = np.median(pairs, axis=0)
    diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)[k])))
               for k in range(3) for a, b in zip(jax.tree_util.tree_leaves(states[k][0]),
                                                  jax.tree_util.tree_leaves(stacked[0])))
    print("\n### 3 runs of one architecture: separate training steps vs one vmapped step (same batches)\n")
    print("| training | seconds per step of all 3 | relative |\n|---|---|---|")
    print(f"| 3 separate steps | {separate_s:.4f} | 1.00 |\n| one vmapped step | {joint_s:.4f} | "
          f"{joint_s / separate_s:.2f} |")
    print(f"Largest parameter difference after {steps + 1} identical steps: {diff:.2e}")
    return {"ensemble": (separate_s, joint_s, diff)}


COMPILE_SCRIPT = """
import sys, time
import jax
jax.config.update("jax_compilation_cache_dir", sys.argv[2])
sys.path.insert(0, sys.argv[1])
from bench_scale import demo_training_step
step, params, opt_state, batch = demo_training_step()
start = time.perf_counter()
step(params, opt_state, jax.random.PRNGKey(0), *batch)[2].block_until_ready()
print(time.perf_counter() - start)
"""


def compile_cache(quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        times = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, str(Path(__file__).parent), folder],
                                  env=env_with_root(JAX_PLATFORMS="cpu"), capture_output=True, text=True, check=True)
            times.append(float(done.stdout.split()[-1]))
    print("\n### The training step's first call in a fresh process\n")
    print(f"| compiled | loaded from the persistent cache |\n|---|---|\n| {times[0]:.2f} s | {times[1]:.2f} s |")
    return {"compile": times}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _search_command(config: Path, out: Path, extra=()) -> list[str]:
    return [sys.executable, "-m", "pregen_jax.cli", "run", "--config", str(config), "--out", str(out),
            "--no-progress", *extra]


def processes(quick: bool) -> dict:
    """The same search with 1 process and with 2 (jax.distributed on 127.0.0.1), fresh run folders."""
    from pregen_jax.pipeline import demo_config
    config = demo_config(quick=True)
    if quick:  # 2 architectures x 1 run of the quick demo, 1 epoch
        config = config.from_dict({**json.loads(json.dumps(_as_dict(config))),
                                   "models": {**_as_dict(config)["models"], "architectures": ["par", "merge"]},
                                   "training": {**_as_dict(config)["training"], "epochs": 1}})
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "search.toml").write_text(config.to_toml())
        start = time.perf_counter()
        subprocess.run(_search_command(folder / "search.toml", folder / "one"), env=env_with_root(), check=True,
                       capture_output=True)
        one_s = time.perf_counter() - start
        port = _free_port()
        start = time.perf_counter()
        running = [subprocess.Popen(_search_command(folder / "search.toml", folder / "two", [
            "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(k)]),
            env=env_with_root(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for k in (0, 1)]
        for p in running:
            _, err = p.communicate()
            if p.returncode:
                raise RuntimeError(err[-2000:])
        two_s = time.perf_counter() - start
        same = (folder / "one" / "table.tsv").read_text() == (folder / "two" / "table.tsv").read_text()
    models = len(config.models.architectures) * config.models.runs * (1 + len(config.training.snapshot_epochs))
    print(f"\n### One search ({models} models: quick demo {'2 architectures, 1 epoch' if quick else ''}), "
          "1 and 2 processes on this machine\n")
    print("| processes | seconds | speed-up |\n|---|---|---|")
    print(f"| 1 | {one_s:.1f} | 1.00 |\n| 2 | {two_s:.1f} | {one_s / two_s:.2f} |")
    print(f"table.tsv byte-identical: {same}")
    return {"two_process_speedup": one_s / two_s, "processes": (one_s, two_s, same)}


def _as_dict(config) -> dict:
    from pregen_jax.settings import as_dict
    return as_dict(config)


def demo(quick: bool, keep: str | None = None) -> dict:
    """The demo in a fresh run folder (``keep``: that folder, kept, instead of a temporary one)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(keep) if keep else Path(folder) / "demo"
        if keep and out.exists():
            raise SystemExit(f"{out}: --demo-out must be a new folder (the demo is timed from a fresh run folder)")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pregen_jax.cli", "demo", "--out", str(out), "--no-progress",
                        *(["--quick"] if quick else [])], env=env_with_root(), check=True, capture_output=True)
        wall = time.perf_counter() - start
        timings = json.loads((out / "cache" / "timings.json").read_text())[-1]
    print(f"\n### `pregen-search demo{' --quick' if quick else ''}`, fresh run folder, dataset cached "
          f"({wall:.0f} s with the interpreter's start)\n")
    print("| stage | seconds |\n|---|---|")
    for stage, seconds in timings.items():
        if stage != "when":
            print(f"| {stage} | {seconds:.1f} |")
    share = timings.get("post-gen metrics", 0.0) / timings["total"]
    print(f"\nPost-gen: {timings.get('post-gen metrics', 0.0):.1f} s of worker time, {share:.1%} of the total "
          f"(target: under 10%, {'met' if share < 0.1 else 'missed'})")
    return {"demo_s": timings["total"], "demo": timings, "postgen_share": share}


def baseline(quick: bool) -> dict:
    """The demo of commit ``BASELINE``, run from its own source tree, timed as ``demo`` times ours."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "src"
        source.mkdir()
        archive = subprocess.run(["git", "-C", str(root), "archive", BASELINE], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
        out = Path(folder) / "demo"
        env = {**env_with_root(), "PYTHONPATH": str(source)}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pregen_jax.cli", "demo", "--out", str(out), "--no-progress",
                        *(["--quick"] if quick else [])], env=env, cwd=source, check=True, capture_output=True)
        wall = time.perf_counter() - start
        timings = json.loads((out / "cache" / "timings.json").read_text())[-1]
    print(f"\n### the demo of commit {BASELINE}{' --quick' if quick else ''} ({wall:.0f} s with the interpreter's "
          "start)\n")
    print("| stage | seconds |\n|---|---|")
    for stage, seconds in timings.items():
        if stage != "when":
            print(f"| {stage} | {seconds:.1f} |")
    print(f"\nPost-gen: {timings.get('post-gen metrics', 0.0):.1f} s of worker time, "
          f"{timings.get('post-gen metrics', 0.0) / timings['total']:.1%} of the total")
    return {"baseline_demo_s": timings["total"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, the quick demo")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--demo-out", help="keep the demo's run folder here (a new folder) to read its report")
    args = parser.parse_args(argv)
    import jax
    print(f"jax {jax.__version__}; devices: {', '.join(str(d) for d in jax.devices())}; "
          f"{os.cpu_count()} CPU cores; {'quick' if args.quick else 'full'} run", flush=True)
    sections = {"grid": grid, "devices": devices, "workers": workers, "ensemble": ensemble, "trainers": trainers,
                "compile": compile_cache, "processes": processes,
                "demo": lambda quick: demo(quick, args.demo_out), "baseline": baseline}
    found: dict = {}
    for name in args.only:
        start = time.perf_counter()
        found.update(sections[name](args.quick))
        print(f"({name}: {time.perf_counter() - start:.0f} s)", flush=True)
    if "demo_s" in found and "baseline_demo_s" in found:
        ratio = found["demo_s"] / found["baseline_demo_s"]
        found["demo_vs_baseline"] = ratio
        print(f"demo {found['demo_s']:.0f} s against the baseline's {found['baseline_demo_s']:.0f} s: {ratio:.2f}x "
              f"(target: no slower, {'met' if ratio <= 1 else 'missed'})")
    line = " ".join(f"{key}={found[key]:.4g}" if isinstance(found.get(key), float) else f"{key}=nan"
                    for key in ("demo_s", "baseline_demo_s", "demo_vs_baseline", "postgen_share", "sweep_steady_s_5000",
                                "two_process_speedup"))
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
