"""Benchmark ``pregen-search evaluate`` against pycocoevalcap's ``COCOEvalCap``, end to end, in one run.

    python benchmarks/bench_evaluate.py                    # 5,000 and 40,504 images, cold and warm
    python benchmarks/bench_evaluate.py --images 5000      # one size
    python benchmarks/bench_evaluate.py --images 40504 --no-parts
    python benchmarks/bench_evaluate.py --pairs 4          # alternating whole warm runs: the ratio's spread
    python benchmarks/bench_evaluate.py --images 5000 --blas-threads 0 1 4   # many cores: BLAS threads capped

Inputs, built in a temporary folder from Flickr8k's captions, as a COCO annotation file and a COCO
results file:
  - 5,000 images (``--images`` at most 5,000): each Flickr8k test image five times, copy k scoring raw
    caption k against the other four (4 references an image; every sentence appears five times);
  - 40,504 images (COCO val2014's size; any ``--images`` above 5,000): 5 references an image and one
    caption, 6 sentences an image taken in order from Flickr8k's 40,460 captions (cycling), each
    with one random word of Flickr8k's vocabulary inserted at a random place (seed 0, drawn again
    on a clash), so that no sentence repeats, as in COCO.
Both sides read the same two files and give BLEU-1..4, METEOR, ROUGE-L and CIDEr-D (SPICE needs
the CoreNLP jars, absent here), corpus and per image; every score is checked equal (largest
difference printed).

The whole (what a user waits for): each side in a fresh Python process, from the two files to every
score. COCOEvalCap: ``evaluate()`` as coco-caption's example runs it (imports, PTB jar, each scorer,
METEOR's JVM). evaluate: ``python -m pregen_jax.cli evaluate ... --out DIR`` (imports, reading,
PTB, every metric's per-image statistics, the corpus table with 1,000 BCa bootstrap resamples,
writing). evaluate runs twice: **cold** with an empty cache folder (``PREGEN_JAX_CACHE``: METEOR's
tables and compiled code are built on this first run after install), then **warm** (the same
folder, filled). Wall, CPU (the process and the processes it waited for: PTB's jar, METEOR's
JVM) and peak memory: the largest resident set of one process (the kernel's count), and of every
process of the run at once (sampled every 10 ms: evaluate with METEOR's own process, COCOEvalCap
with its JVMs); for COCOEvalCap its Python process alone is printed beside it.

The parts (warm, in this process, on the same tokenized strings): the PTB tokenizer, each scorer
(BLEU-1..4 as one; METEOR made and run in this process), METEOR as evaluate runs it (in a process
of its own, started and loaded in the timing: the whole run starts it earlier, beside its own
imports and reading), and evaluate's significance (``compare``: bootstrap intervals) alone.
The machine may be shared: the load average is printed with the numbers. Flickr8k's files are read
from ``../shared/data/flickr8k`` beside the checkout, or from ``$PREGEN_JAX_SHARED_DATA/flickr8k``
(a lent GPU machine: ``benchmarks/device_evaluate.sh``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("PREGEN_JAX_SHARED_DATA") or ROOT.parent / "shared" / "data")  # flickr8k/ under it
METRICS = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]
SMALL, LARGE = 5000, 40504


def flickr_captions() -> dict[str, list[str]]:
    captions: dict[str, list[str]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(caption)
    return captions


def repeated_set(images: int) -> tuple[dict, list]:
    """(annotations, results): ``images // 5`` Flickr8k test images five times, raw caption k against the other four."""
    captions = flickr_captions()
    test = (SHARED / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split()[:images // 5]
    scored = [(5 * n + k, captions[name], k) for n, name in enumerate(test) for k in range(5)]
    annotations = {"images": [{"id": i, "file_name": f"{i}.jpg"} for i, _, _ in scored],
                   "annotations": [{"image_id": i, "id": 10 * i + j, "caption": c}
                                   for i, caps, k in scored for j, c in enumerate(caps) if j != k]}
    return annotations, [{"image_id": i, "caption": caps[k]} for i, caps, k in scored]


def unique_set(images: int, seed: int = 0) -> tuple[dict, list]:
    """(annotations, results): 5 references and 1 caption an image, no sentence repeated (see the module doc)."""
    flat = [c for caps in flickr_captions().values() for c in caps]
    vocabulary = sorted({w for c in flat for w in c.lower().split() if w.isalpha()})
    rng, seen, sentences = random.Random(seed), set(), []
    for n in range(6 * images):
        words = flat[n % len(flat)].split()
        while True:
            at = rng.randrange(len(words) + 1)
            sentence = " ".join(words[:at] + [rng.choice(vocabulary)] + words[at:])
            if sentence.lower() not in seen:
                break
        seen.add(sentence.lower())
        sentences.append(sentence)
    annotations = {"images": [{"id": i, "file_name": f"{i}.jpg"} for i in range(images)],
                   "annotations": [{"image_id": i, "id": 6 * i + j, "caption": sentences[6 * i + j]}
                                   for i in range(images) for j in range(1, 6)]}
    return annotations, [{"image_id": i, "caption": sentences[6 * i]} for i in range(images)]


def build_files(folder: Path, images: int) -> tuple[Path, Path, str]:
    """refs.json (COCO annotations), res.json (COCO results) and the set's description."""
    if images <= SMALL:
        (annotations, results), what = repeated_set(images), "Flickr8k test images x5, 4 raw references (repeated)"
    else:
        (annotations, results), what = unique_set(images), "5 references, a random word inserted: no sentence repeats"
    (folder / "refs.json").write_text(json.dumps(annotations))
    (folder / "res.json").write_text(json.dumps(results))
    return folder / "refs.json", folder / "res.json", what


COCO_SCRIPT = """
import contextlib, gc, io, json, resource, sys
import pycocoevalcap.eval as coco_eval
from pycocotools.coco import COCO
refs, res, out = sys.argv[1:]
class NotRun(Exception):
    pass
class NoSpice:  # SPICE is last in COCOEvalCap's list and needs CoreNLP's jars (absent): not run
    def compute_score(self, gts, res):
        raise NotRun
    def method(self):
        return "SPICE"
coco_eval.Spice = NoSpice
with contextlib.redirect_stdout(io.StringIO()):
    coco = COCO(refs)
    coco_res = coco.loadRes(res)
    evaluator = coco_eval.COCOEvalCap(coco, coco_res)
    evaluator.params["image_id"] = coco_res.getImgIds()
    try:
        evaluator.evaluate()
    except NotRun:
        pass
    gc.collect()  # Meteor's JVM ends when its scorer is collected (its __del__)
json.dump({"eval": evaluator.eval, "imgToEval": {str(k): v for k, v in evaluator.imgToEval.items()},
           "python_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}, open(out, "w"))
"""


def tree_rss_mb(pid: int) -> float:
    """Resident MB of process ``pid`` and all its descendants now (Linux /proc; 0 where unreadable)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    todo.extend(int(child) for child in children.read().split())
        except (OSError, ValueError):
            continue
    return total / 1024


def run_child(command: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float, float, float]:
    """(wall s, CPU s, peak resident MB of the largest single process, peak MB of the whole tree) of
    one process and the children it waited for. The largest single process is the kernel's
    ``ru_maxrss``; the tree's peak (every process of the run at once: evaluate with METEOR's
    process, COCOEvalCap with its JVMs) is sampled every 10 ms, so a shorter spike can be missed."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_mb(process.pid))
            done.wait(0.01)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if status != 0:
        raise RuntimeError(f"{command[:4]} failed ({status}): {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak[0]


def timed(fn):
    """(result, wall seconds, CPU seconds of this process and of the children it waited for)."""
    wall, cpu = time.perf_counter(), time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return out, time.perf_counter() - wall, time.process_time() - cpu + child_cpu


def ours_command(refs: Path, res: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "pregen_jax.cli", "evaluate", "--references", str(refs), "--captions", str(res),
            "--metrics", ",".join(METRICS), "--out", str(out)]


def largest_difference(coco: dict, out: Path) -> float:
    """Largest |ours - COCOEvalCap| over every corpus and per-image score."""
    import numpy as np
    import pandas as pd
    scores = next(iter(json.loads((out / "scores.json").read_text())["systems"].values()))  # one system
    per_image = pd.read_csv(out / "per_image.tsv", sep="\t").set_index("image_id")
    worst = 0.0
    for metric in METRICS:
        theirs = np.array([coco["imgToEval"][str(i)][metric] for i in per_image.index])
        worst = max(worst, abs(scores[metric] - coco["eval"][metric]),
                    float(np.max(np.abs(per_image[metric].to_numpy() - theirs))))
    return worst


def cocoevalcap_parts(refs: Path, res: Path) -> tuple[dict, tuple]:
    """({part: (wall, cpu)}, (gts, res) tokenized) of COCOEvalCap's steps, one by one."""
    import contextlib
    import io as stdio

    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    from pycocotools.coco import COCO
    with contextlib.redirect_stdout(stdio.StringIO()):
        coco = COCO(str(refs))
        coco_res = coco.loadRes(str(res))
    ids = coco_res.getImgIds()
    gts = {i: coco.imgToAnns[i] for i in ids}
    res_anns = {i: coco_res.imgToAnns[i] for i in ids}
    times = {}
    (gts, res_tok), *times["PTB tokenizer"] = timed(lambda: (PTBTokenizer().tokenize(gts), PTBTokenizer().tokenize(res_anns)))

    def meteor():
        scorer = Meteor()
        out = scorer.compute_score(gts, res_tok)
        scorer.meteor_p.stdin.close()
        scorer.meteor_p.kill()
        scorer.meteor_p.wait()  # reaped: its CPU time counts
        return out
    for name, fn in (("Bleu_1..4", lambda: Bleu(4).compute_score(gts, res_tok, verbose=0)), ("METEOR", meteor),
                     ("ROUGE_L", lambda: Rouge().compute_score(gts, res_tok)),
                     ("CIDEr", lambda: Cider().compute_score(gts, res_tok))):
        _, *times[name] = timed(fn)
    return times, (gts, res_tok)


def ours_parts(refs: Path, res: Path) -> dict:
    """{part: (wall, cpu)} of evaluate's steps on the same files (warm: the cache folder is filled)."""
    from pregen_jax import postgen
    from pregen_jax.captionfiles import read_references
    from pregen_jax.evaluation.inputs import read_results, scored_images
    from pregen_jax.evaluation.significance import Resampling, compare
    from pregen_jax.evaluation.tokenizers import tokenize_all
    references = read_references(refs)
    results = read_results(res, references)
    images = scored_images(references, [results])
    strings = [c for i in images for c in references.captions[i]] + [results.captions[i] for i in images]
    from pregen_jax.postgen.ptb import lexer, scanner
    lexer._memo.clear()  # the Python PTB lexer's word memo and rule cache: as in a fresh process
    scanner._candidates.cache_clear()
    tokens, *tokenizing = timed(lambda: tokenize_all(strings, "ptb"))
    times = {"PTB tokenizer": tuple(tokenizing)}
    at = iter(tokens)
    gts = {i: [next(at) for _ in references.captions[i]] for i in images}
    res_tok = {i: [next(at)] for i in images}
    scorers, stats = {}, {}
    for name, metrics in (("Bleu_1..4", ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]), ("METEOR", ["METEOR"]),
                          ("ROUGE_L", ["ROUGE_L"]), ("CIDEr", ["CIDEr"])):
        def run(metrics=metrics):
            postgen.recent.CACHE.clear()  # each metric from the strings, nothing kept from the one before
            with postgen.make_metrics(metrics, postgen.PostgenOptions()) as started:
                for m in started.metrics:
                    scorers[m.name], stats[m.name] = m, m.stats_of_tokenized(gts, res_tok)
                    m.aggregate(stats[m.name])
        _, *times[name] = timed(run)

    def apart():  # what evaluate runs: METEOR in a process of its own, its start and loading included
        with postgen.make_metrics(["METEOR"], postgen.PostgenOptions(), apart=True) as started:
            meteor = started.metrics[0]
            meteor.aggregate(meteor.stats_of_tokenized(gts, res_tok))
        meteor._python._child.wait()  # its CPU counted (a waited child)
    _, *times["METEOR apart (own process)"] = timed(apart)
    _, *times["significance"] = timed(lambda: compare(scorers, {"res": stats}, Resampling()))
    return times


def bench_size(images: int, parts: bool) -> dict:
    """Every figure of one size; prints its table."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        refs, res, what = build_files(folder, images)
        load = [os.getloadavg()]
        coco_wall, coco_cpu, coco_peak, coco_tree = run_child([sys.executable, "-c", COCO_SCRIPT, str(refs), str(res),
                                                    str(folder / "coco.json")])
        coco = json.loads((folder / "coco.json").read_text())
        cache = folder / "cache"
        env = {**os.environ, "PREGEN_JAX_CACHE": str(cache)}
        runs = {}
        for kind in ("cold", "warm"):
            out = folder / f"out_{kind}"
            runs[kind] = (*run_child(ours_command(refs, res, out), env), largest_difference(coco, out))
        load.append(os.getloadavg())
        coco_parts = our_parts = None
        if parts:
            os.environ["PREGEN_JAX_CACHE"] = str(cache)  # the parts warm, from the cache the cold run filled
            coco_parts, _ = cocoevalcap_parts(refs, res)
            our_parts = ours_parts(refs, res)
            load.append(os.getloadavg())
    coco_python_mb = coco["python_peak_kb"] / 1024
    worst = max(run[-1] for run in runs.values())
    print(f"\n{images:,} images ({what}); load average {', '.join(f'{a:.1f}' for a, _, _ in load)} "
          "(1-min, at start / after the whole runs / after the parts)")
    print(f"largest difference to COCOEvalCap (every corpus and per-image score, cold and warm runs): {worst:.2e}")
    print(f"{'':22s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>8s} {'all MB':>8s} {'wall ratio':>10s} {'CPU ratio':>9s}"
          "   (peak: the largest process; all: every process of the run at once, sampled)")
    print(f"{'COCOEvalCap (whole)':22s} {coco_wall:8.2f} {coco_cpu:8.2f} {coco_peak:8.0f} {coco_tree:8.0f}   "
          f"(its Python process alone: {coco_python_mb:.0f} MB)")
    for kind, (wall, cpu, peak, tree, _) in runs.items():
        print(f"{'evaluate ' + kind:22s} {wall:8.2f} {cpu:8.2f} {peak:8.0f} {tree:8.0f} {coco_wall / wall:9.1f}x "
              f"{coco_cpu / cpu:8.1f}x")
    if parts:
        print(f"{'part (warm)':22s} {'COCOEvalCap wall':>16s} {'CPU':>7s} {'evaluate wall':>14s} {'CPU':>7s} "
              f"{'wall ratio':>10s}")
        for part, (ow, oc) in our_parts.items():
            if part in coco_parts:
                (cw, cc) = coco_parts[part]
                print(f"{part:22s} {cw:16.2f} {cc:7.2f} {ow:14.2f} {oc:7.2f} {cw / ow:9.1f}x")
            else:
                print(f"{part:22s} {'-':>16s} {'-':>7s} {ow:14.2f} {oc:7.2f}")
    return {"images": images, "warm_speedup": coco_wall / runs["warm"][0], "cold_speedup": coco_wall / runs["cold"][0],
            "warm_peak_mb": runs["warm"][2], "warm_all_mb": runs["warm"][3], "max_abs_diff": worst}


def bench_pairs(images: int, pairs: int) -> list[float]:
    """``pairs`` alternating whole runs, COCOEvalCap then ``evaluate`` warm (its cache filled by a run
    before), on the same files: each pair's wall ratio, printed as it comes (the host's speed drifts
    between runs; a pair's two runs are close in time)."""
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        refs, res, what = build_files(folder, images)
        env = {**os.environ, "PREGEN_JAX_CACHE": str(folder / "cache")}
        run_child(ours_command(refs, res, folder / "filling"), env)
        print(f"\n{images:,} images ({what}): alternating pairs, warm")
        for k in range(pairs):
            coco = run_child([sys.executable, "-c", COCO_SCRIPT, str(refs), str(res), str(folder / "coco.json")])
            ours = run_child(ours_command(refs, res, folder / f"out{k}"), env)
            ratios.append(coco[0] / ours[0])
            print(f"pair {k}: COCOEvalCap {coco[0]:.2f} s, evaluate {ours[0]:.2f} s (CPU {ours[1]:.2f} s, every process "
                  f"at once {ours[3]:.0f} MB): {ratios[-1]:.2f}x; load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"median {statistics.median(ratios):.2f}x, range {min(ratios):.2f}-{max(ratios):.2f}x")
    return ratios


def bench_blas_threads(images: int, settings: list[int], repeats: int) -> None:
    """``evaluate`` warm (its cache filled by a run before) with numpy's BLAS threads capped
    (``OPENBLAS_NUM_THREADS`` etc.; 0: not set, as numpy decides: one a core), the settings in
    turn, ``repeats`` times: wall and CPU of each run, then each setting's median. For machines of
    many cores, where idle BLAS threads cost CPU time and the bootstrap's products gain from them."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        refs, res, what = build_files(folder, images)
        base = {key: value for key, value in os.environ.items() if not key.endswith("_NUM_THREADS")}
        base["PREGEN_JAX_CACHE"] = str(folder / "cache")
        run_child(ours_command(refs, res, folder / "filling"), base)
        print(f"\n{images:,} images ({what}): evaluate warm, numpy's BLAS threads capped (0: not set); {os.cpu_count()} cpus")
        walls: dict[int, list[tuple[float, float]]] = {n: [] for n in settings}
        for k in range(repeats):
            for threads in settings:
                env = {**base, **({name: str(threads) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                                  "MKL_NUM_THREADS")} if threads else {})}
                wall, cpu, _, _ = run_child(ours_command(refs, res, folder / f"out{k}-{threads}"), env)
                walls[threads].append((wall, cpu))
                print(f"run {k} threads {threads}: {wall:.2f} s, CPU {cpu:.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        for threads, runs in walls.items():
            print(f"threads {threads}: median wall {statistics.median(w for w, _ in runs):.2f} s, "
                  f"median CPU {statistics.median(c for _, c in runs):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, nargs="+", default=[SMALL, LARGE],
                        help=f"scored images, one run per size (default {SMALL} {LARGE}); at most {SMALL}: the "
                             "repeated test-set form, above: the unique-sentence form")
    parser.add_argument("--no-parts", action="store_true", help="time only the wholes (cold, warm, COCOEvalCap)")
    parser.add_argument("--pairs", type=int, default=0, metavar="N",
                        help="instead: N alternating pairs of whole warm runs (COCOEvalCap, evaluate) per size")
    parser.add_argument("--blas-threads", type=int, nargs="+", metavar="N",
                        help="instead: evaluate warm with numpy's BLAS threads capped at each N in turn (0: not "
                             "set), --pairs times (default 3) per size")
    args = parser.parse_args()
    if args.blas_threads:
        for images in args.images:
            bench_blas_threads(images, args.blas_threads, args.pairs or 3)
        return
    if args.pairs:
        for images in args.images:
            bench_pairs(images, args.pairs)
        return
    from pregen_jax.postgen.meteor import DEFAULT_BACKEND
    from pregen_jax.postgen.ptb import DEFAULT_BACKEND as PTB_BACKEND
    print(f"cpus {os.cpu_count()}; evaluate's backends: METEOR {DEFAULT_BACKEND}, PTB {PTB_BACKEND}; "
          "targets: warm wall 10x COCOEvalCap's, peak 1,500 MB at 40,504 images, difference 1e-9")
    summary = [bench_size(images, not args.no_parts) for images in args.images]
    print()
    print(" ".join(f"images={s['images']} warm_speedup={s['warm_speedup']:.2f} cold_speedup={s['cold_speedup']:.2f} "
                   f"warm_peak_mb={s['warm_peak_mb']:.0f} warm_all_mb={s['warm_all_mb']:.0f} "
                   f"max_abs_diff={s['max_abs_diff']:.2e}" for s in summary))


if __name__ == "__main__":
    main()
