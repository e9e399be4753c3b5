"""Benchmark the Python METEOR (``METEOR(backend="python")``) against pycocoevalcap's jar, warm.

    python benchmarks/bench_meteor.py            # both sets; a few minutes
    python benchmarks/bench_meteor.py --set flickr8k

Sets (segments: an image's references and one candidate, as pycocoevalcap sends them):
  - ``demo``: the baseline demo's models' test captions (/work/baseline/demo/cache/captions or
    --demo-captions; 1,000 images each) against the built-in dataset's five references;
  - ``flickr8k``: 5,000 raw Flickr8k test captions, each against the other four of its image.
Each side runs in its own process pinned to one core (``taskset -c``), the same distinct
segments in the same order (both memoize: the jar is sent each distinct SCORE line once, the
Python side also aligns each distinct (candidate, reference) pair once). Reported per side:
resource loading (the JVM with its paraphrase table; Python's synonyms, memory-mapped table and
compiled search, already compiled once on the machine), then scoring alone: wall time, CPU time
(the JVM's own, read from /proc) and peak resident memory (the JVM's VmHWM; Python's ru_maxrss).
The ratio is of scoring wall times, loading excluded. The statistics of both sides are compared
(they must be equal). The last line is machine-readable:
    meteor_speedup_<set>=<jar wall / python wall> ...
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def segments(name: str) -> list[tuple[list[str], str]]:
    """The set's distinct segments, in first-seen order."""
    from tests.meteor_oracle import sets
    rows = sets.demo_captions() if name == "demo" else sets.flickr8k_leave_one_out()
    return list(dict.fromkeys((tuple(refs), cand) for refs, cand, _ in rows))


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def worker(side: str, name: str, out: str) -> None:
    """One side on one set: load, then score every segment; results to ``out`` (JSON + .npy)."""
    rows = segments(name)
    gts = {k: list(refs) for k, (refs, _) in enumerate(rows)}
    res = {k: [cand] for k, (_, cand) in enumerate(rows)}
    start = time.perf_counter()
    if side == "jar":
        from pregen_jax.postgen.meteor.jar import JarMeteor
        meteor = JarMeteor()
        meteor.stat_lines({"warm": ["a man"]}, {"warm": ["a man"]})  # the JVM has loaded its tables
        pid = meteor._java._process.pid
    else:
        from pregen_jax.postgen.meteor.python import PythonMeteor
        meteor = PythonMeteor()
        meteor.load()
        pid = os.getpid()
    loaded = time.perf_counter()
    cpu0 = _proc_cpu(pid) if side == "jar" else time.process_time()
    if side == "jar":
        from pregen_jax.postgen.meteor import scoring
        lines = meteor.stat_lines(gts, res)
        stats = np.array([scoring.parse(lines[k]) for k in gts])
    else:
        stats = meteor.stats(gts, res)
    wall = time.perf_counter() - loaded
    cpu = (_proc_cpu(pid) if side == "jar" else time.process_time()) - cpu0
    peak = _proc_peak_kib(pid) if side == "jar" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    np.save(out + ".npy", stats)
    Path(out).write_text(json.dumps({"segments": len(rows), "load_s": loaded - start, "wall_s": wall, "cpu_s": cpu,
                                     "peak_mib": peak / 1024}))
    if side == "jar":
        meteor.close()


def run(side: str, name: str, core: int, folder: Path) -> dict:
    out = str(folder / f"{side}-{name}.json")
    subprocess.run(["taskset", "-c", str(core), sys.executable, __file__, "--worker", side, "--set", name, "--out", out],
                   check=True)
    result = json.loads(Path(out).read_text())
    result["stats"] = np.load(out + ".npy")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["demo", "flickr8k", "both"], default="both")
    parser.add_argument("--core", type=int, default=0, help="the core both sides run on, one after the other")
    parser.add_argument("--worker", choices=["jar", "python"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.set, args.out)
        return
    import tempfile
    print(f"load average {os.getloadavg()[0]:.2f}; one core each (taskset -c {args.core})")
    ratios = []
    for name in (["demo", "flickr8k"] if args.set == "both" else [args.set]):
        with tempfile.TemporaryDirectory() as folder:
            results = {side: run(side, name, args.core, Path(folder)) for side in ("python", "jar")}
        equal = np.array_equal(results["python"]["stats"], results["jar"]["stats"])
        print(f"\n{name}: {results['jar']['segments']} distinct segments; statistics equal: {equal}")
        print(f"{'side':8} {'load s':>8} {'score wall s':>13} {'score cpu s':>12} {'peak MiB':>9}")
        for side in ("jar", "python"):
            r = results[side]
            print(f"{side:8} {r['load_s']:8.2f} {r['wall_s']:13.2f} {r['cpu_s']:12.2f} {r['peak_mib']:9.0f}")
        ratio = results["jar"]["wall_s"] / results["python"]["wall_s"]
        print(f"python METEOR: {ratio:.2f}x the warm jar's wall time, "
              f"{results['jar']['cpu_s'] / results['python']['cpu_s']:.2f}x its CPU time (target 5x: "
              f"{'met' if ratio >= 5 else 'missed'})")
        ratios.append(f"meteor_speedup_{name}={ratio:.3f}")
    print(" ".join(ratios))


if __name__ == "__main__":
    main()
