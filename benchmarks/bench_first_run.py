"""The first-ever ``evaluate`` (no cache at all) and the first after ``doctor --prepare``, against
COCOEvalCap on the same files, each in its own process under ``/usr/bin/time -v``.

    python benchmarks/bench_first_run.py [--images 5000]
    python benchmarks/bench_first_run.py --pairs 3 [--images 5000]   # issue 51: first-ever runs against COCOEvalCap

``--pairs N``: the first-ever ``evaluate`` as a new user runs it, against COCOEvalCap, N interleaved
pairs (the order swapped each pair, so the shared machine's load falls on both sides): this checkout
built as a wheel and installed non-editable in a new virtual environment (``tests/test_wheel.py``'s
steps, before any timing), run from another folder with ``PREGEN_JAX_CACHE``, ``NUMBA_CACHE_DIR``,
``JAX_COMPILATION_CACHE_DIR`` and ``XDG_CACHE_HOME`` new empty folders each run. Each run in a fresh
process (``bench_evaluate.run_child``: wall, CPU with the children waited for, the largest process's
peak, every process at once); each pair's largest score difference to COCOEvalCap's (every corpus and
per-image score); the median of the pairs' ratios (COCOEvalCap's wall / evaluate's: at least 1.0 is
the target) and the load average beside each run.

Inputs: ``bench_evaluate.build_files`` (each Flickr8k test image five times: 5,000 scored images
by default). Rows, run one after the other: COCOEvalCap (``bench_evaluate.COCO_SCRIPT`` in a child,
its METEOR jar and PTB jar included); ``pregen-search evaluate`` with ``PREGEN_JAX_CACHE`` an
empty folder (the paraphrase table built, numba compiling into that empty cache); ``pregen-search
doctor --prepare`` into another empty folder, then ``evaluate`` with it. Wall seconds and peak
RSS (the largest process of the tree, as ``time -v`` reports it), CPU seconds (user + system, children
included: the JVMs); the load average beside each.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(ROOT))  # tests.test_wheel's steps
METRICS = "Bleu_1,Bleu_2,Bleu_3,Bleu_4,METEOR,ROUGE_L,CIDEr"


def timed(command: list[str], env: dict) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds (user + system, the process and the children it waited for), peak
    RSS in MB, stderr) of ``command`` under ``/usr/bin/time -v``."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    clock = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    wall = int(clock[1] or 0) * 3600 + int(clock[2]) * 60 + float(clock[3])
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1]) // 1024
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr)[1]) for kind in ("User", "System"))
    return wall, cpu, rss, done.stderr


def first_ever_pairs(images: int, pairs: int) -> None:
    """``--pairs``: the module doc's interleaved first-ever runs; prints each pair and the median."""
    import statistics

    from bench_evaluate import COCO_SCRIPT, build_files, largest_difference, run_child
    from bench_evaluate import METRICS as SCORED

    from tests.test_wheel import USER_ENV, _built_wheel, _venv_with
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        refs, res, what = build_files(tmp, images)
        search = str(_venv_with(_built_wheel(tmp), tmp) / "pregen-search")
        elsewhere = tmp / "elsewhere"
        elsewhere.mkdir()
        print(f"{images:,} images ({what}); {os.cpu_count()} CPUs; evaluate: the wheel in a new venv, empty caches each run")
        ratios, worst = [], 0.0
        for k in range(pairs):
            runs = {}
            for side in (("coco", "ours") if k % 2 == 0 else ("ours", "coco")):
                load = os.getloadavg()[0]
                if side == "coco":
                    command = [sys.executable, "-c", COCO_SCRIPT, str(refs), str(res), str(tmp / f"coco{k}.json")]
                    runs[side] = (*run_child(command), load)
                    continue
                fresh = Path(tempfile.mkdtemp(prefix=f"first{k}-", dir=tmp))
                env = {**USER_ENV, "PREGEN_JAX_CACHE": str(fresh / "pregen"), "NUMBA_CACHE_DIR": str(fresh / "numba"),
                       "JAX_COMPILATION_CACHE_DIR": str(fresh / "jax"), "XDG_CACHE_HOME": str(fresh / "xdg")}
                command = [search, "evaluate", "--references", str(refs), "--captions", str(res), "--metrics",
                           ",".join(SCORED), "--out", str(tmp / f"out{k}")]
                runs[side] = (*run_child(command, env, cwd=elsewhere), load)
            difference = largest_difference(json.loads((tmp / f"coco{k}.json").read_text()), tmp / f"out{k}")
            worst = max(worst, difference)
            (cw, cc, cp, ct, cl), (ow, oc, op, ot, ol) = runs["coco"], runs["ours"]
            ratios.append(cw / ow)
            print(f"pair {k} ({'COCOEvalCap first' if k % 2 == 0 else 'evaluate first'}): COCOEvalCap {cw:.1f} s "
                  f"(CPU {cc:.1f} s, largest process {cp:.0f} MB, all {ct:.0f} MB, load {cl:.1f}); first-ever evaluate "
                  f"{ow:.1f} s (CPU {oc:.1f} s, largest process {op:.0f} MB, all {ot:.0f} MB, load {ol:.1f}): "
                  f"{ratios[-1]:.2f}x; largest difference {difference:.2e}", flush=True)
    print(f"median {statistics.median(ratios):.2f}x (COCOEvalCap's wall / the first-ever evaluate's; target at least "
          f"1.0), range {min(ratios):.2f}-{max(ratios):.2f}x; largest difference {worst:.2e} (target 1e-9)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="scored images (bench_evaluate.build_files)")
    parser.add_argument("--pairs", type=int, default=0, metavar="N",
                        help="instead: N interleaved pairs of the first-ever evaluate (the wheel in a new venv, "
                             "empty caches) and COCOEvalCap")
    args = parser.parse_args()
    if args.pairs:
        first_ever_pairs(args.images, args.pairs)
        return
    from bench_evaluate import COCO_SCRIPT, build_files
    python, search = sys.executable, str(Path(sys.executable).with_name("pregen-search"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        refs, res, _ = build_files(tmp, args.images)
        evaluate = [search, "evaluate", "--references", str(refs), "--captions", str(res), "--metrics", METRICS]
        coco = [python, "-c", COCO_SCRIPT, str(refs), str(res), str(tmp / "coco.json")]  # bench_evaluate's child
        rows = []
        for label, command, cache in (("COCOEvalCap", coco, "unused"), ("evaluate, no cache at all", evaluate, "cold"),
                                      ("doctor --prepare", [search, "doctor", "--prepare"], "prepared"),
                                      ("evaluate after doctor --prepare", evaluate, "prepared")):
            env = {**os.environ, "PREGEN_JAX_CACHE": str(tmp / cache)}
            load = os.getloadavg()[0]
            wall, cpu, rss, err = timed(command, env)
            said = [line for line in err.splitlines() if line.startswith(("METEOR:", "warning:"))]
            rows.append((label, wall, cpu, rss, load, said))
    print(f"{args.images} images; {os.cpu_count()} CPUs")
    print(f"{'run':34s} {'wall s':>7s} {'CPU s':>7s} {'peak MB':>8s} {'load':>5s}")
    for label, wall, cpu, rss, load, said in rows:
        print(f"{label:34s} {wall:7.1f} {cpu:7.1f} {rss:8d} {load:5.1f}")
        for line in said:
            print(f"    {line[:110]}")


if __name__ == "__main__":
    main()
