"""The first-ever ``evaluate`` (no cache at all) and the first after ``doctor --prepare``, against
COCOEvalCap on the same files, each in its own process under ``/usr/bin/time -v``.

    python benchmarks/bench_first_run.py [--images 5000]

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
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000, help="scored images (bench_evaluate.build_files)")
    args = parser.parse_args()
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
