"""The first ``postgen.score("METEOR", ...)`` of a new process after ``pregen-search evaluate`` filled
the cache on the same images, against ``evaluate``'s warm wall time (issue 63).

    python benchmarks/bench_meteor_api_after_evaluate.py [--images 1000] [--repeats 3] [--old-rule]

In a temporary folder, with ``PREGEN_JAX_CACHE`` a new empty folder: ``bench_evaluate.build_files``'
inputs (Flickr8k test images five times; 1,000 scored images by default); one ``evaluate`` (cold:
it builds METEOR's table of the words it meets and compiles the search; not timed); ``--repeats``
warm ``evaluate`` runs (each a fresh process, wall time of the whole command: imports, reading,
PTB, every metric, the bootstrap); then ``--repeats`` new Python processes that each import
``pregen_jax.postgen``, read the same two files and time their first ``postgen.score("METEOR",
gts, res)`` alone (the call: PTB tokenizing, loading METEOR's resources, scoring; the imports
apart). The target: the call's median at most 3x ``evaluate``'s warm median. The call's corpus
score is checked equal to ``evaluate``'s METEOR.

``--old-rule``: once more, on a copy of the filled cache, the call as the package ran it before
issue 63 (the table of words ``evaluate`` kept ignored: the whole table built, 5.3 M entries), for
the ratio's context. The machine may be shared: the load average is printed beside each run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import ROOT, build_files, ours_command, run_child  # noqa: E402

CALL = """
import json, sys, time
from pregen_jax import postgen
from pregen_jax.postgen.meteor import paraphrase
if sys.argv[3] == "old":  # before issue 63: the in-process METEOR never read a table of words
    paraphrase.words_kept = lambda source=None: False
refs, res = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
gts = {}
for a in refs["annotations"]:
    gts.setdefault(a["image_id"], []).append(a["caption"])
caps = {r["image_id"]: [r["caption"]] for r in res}
gts = {i: gts[i] for i in caps}
start = time.perf_counter()
corpus, _ = postgen.score("METEOR", gts, caps)
print(json.dumps({"seconds": time.perf_counter() - start, "corpus": corpus}))
"""


def call(refs: Path, res: Path, env: dict, rule: str = "new") -> dict:
    """The first METEOR call of a new process: {"seconds", "corpus"}."""
    done = subprocess.run([sys.executable, "-c", CALL, str(refs), str(res), rule], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the METEOR call failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-rule", action="store_true", help="also the call as before issue 63, once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        refs, res, what = build_files(tmp, args.images)
        env = {**os.environ, "PREGEN_JAX_CACHE": str(tmp / "cache"), "PYTHONPATH": str(ROOT)}
        print(f"{args.images:,} images ({what}); {os.cpu_count()} CPUs; cache {tmp / 'cache'} (new)")
        cold = run_child(ours_command(refs, res, tmp / "cold"), env, ROOT)[0]
        print(f"evaluate cold (fills the cache): {cold:.2f} s")
        warm = []
        for k in range(args.repeats):
            load = os.getloadavg()[0]
            warm.append(run_child(ours_command(refs, res, tmp / f"warm{k}"), env, ROOT)[0])
            print(f"evaluate warm {k + 1}: {warm[-1]:.2f} s (load {load:.1f})")
        expected = json.loads((tmp / "cold" / "scores.json").read_text())
        meteor = next(iter(expected["systems"].values()))["METEOR"]
        meteor = meteor["score"] if isinstance(meteor, dict) else meteor
        calls = []
        for k in range(args.repeats):
            load = os.getloadavg()[0]
            got = call(refs, res, env)
            calls.append(got["seconds"])
            same = abs(got["corpus"] - meteor) < 1e-12
            print(f"first postgen.score('METEOR') of a new process {k + 1}: {got['seconds']:.2f} s (load {load:.1f}); "
                  f"corpus {got['corpus']:.6f}, evaluate's {meteor:.6f}: {'equal' if same else 'DIFFERENT'}"
                  + (f"; stderr: {got['stderr'][:200]}" if got["stderr"] else ""))
        ratio = statistics.median(calls) / statistics.median(warm)
        print(f"median call {statistics.median(calls):.2f} s / median warm evaluate {statistics.median(warm):.2f} s "
              f"= {ratio:.2f}x (target at most 3x: {'met' if ratio <= 3 else 'NOT met'})")
        if args.old_rule:
            shutil.copytree(tmp / "cache", tmp / "cache-old")
            got = call(refs, res, {**env, "PREGEN_JAX_CACHE": str(tmp / "cache-old")}, "old")
            print(f"before issue 63 (the whole table built by the call): {got['seconds']:.2f} s = "
                  f"{got['seconds'] / statistics.median(warm):.2f}x evaluate's warm median")


if __name__ == "__main__":
    main()
