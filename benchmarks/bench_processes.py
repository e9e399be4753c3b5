"""Benchmark one search over 1, 2 and 4 processes on one machine, with a trace per process.

    python benchmarks/bench_processes.py --out /tmp/procs              # the small config, 1 2 4 processes
    python benchmarks/bench_processes.py --out /tmp/procs --tiny --processes 1 2   # a check on 2 cores

Every process count runs the same config into a fresh run folder (nothing cached: data, compiled
programs and models are made again), its processes started as ``pregen-search run --coordinator
127.0.0.1:PORT --num-processes N --process-id K`` (one process: plain ``run``). Each process runs
under a tracer that records every stage the search times (``pipeline.search.StageTimer``: train,
decode, reference probabilities, sweep, post-gen, ...; start and end, thread) and the process's own
wall and CPU time, into ``trace-N-K.json``. The summary gives, per process count, the wall time
(slowest process), the speed-up over one process, and per process its stages' seconds (summed over
its threads and models: they overlap) and its CPU time. ``JAX_PLATFORMS`` and the other JAX
variables pass through, so the same script runs on a CPU machine or a GPU one.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"name": "procs", "seed": 0, "precomputed": [],
         "data": {"source": "shapes", "train": 400, "val": 100, "test": 200, "seed": 0, "encoder_epochs": 1},
         "models": {"architectures": ["init", "pre", "par", "merge"], "runs": 1,
                    "rnn": {"cell": "gru", "embed_size": 32, "hidden_size": 32, "image_size": 32}},
         "training": {"epochs": 2, "batch_size": 64, "snapshot_epochs": [1]},
         "generation": {"beam_width": 3, "max_len": 16, "min_len": 3},
         "postgen": {"metrics": ["CIDEr", "Bleu_4", "ROUGE_L"]}}
TINY = {**SMALL, "data": {**SMALL["data"], "train": 120, "val": 40, "test": 60, "encoder_epochs": 1},
        "models": {**SMALL["models"], "rnn": {"cell": "gru", "embed_size": 8, "hidden_size": 8, "image_size": 8}},
        "training": {"epochs": 1, "batch_size": 32, "snapshot_epochs": []},
        "generation": {"beam_width": 2, "max_len": 8, "min_len": 2}}

TRACER = """
import json, resource, sys, threading, time
start_wall, start_cpu = time.perf_counter(), time.process_time()
trace_path, argv = sys.argv[1], sys.argv[2:]
from pregen_jax import cli
from pregen_jax.pipeline import search
events, lock = [], threading.Lock()
add = search.StageTimer.add
def traced_add(self, stage, seconds):
    end = time.perf_counter() - start_wall
    with lock:
        events.append({"stage": stage, "start": round(end - seconds, 4), "end": round(end, 4),
                       "thread": threading.current_thread().name})
    add(self, stage, seconds)
search.StageTimer.add = traced_add
try:
    code = cli.main(argv)
finally:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    json.dump({"argv": argv, "wall": time.perf_counter() - start_wall, "cpu": time.process_time() - start_cpu,
               "children_cpu": usage.ru_utime + usage.ru_stime, "events": events}, open(trace_path, "w"))
sys.exit(code)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_search(config: Path, out: Path, traces: Path, count: int, timeout: float) -> float | None:
    """Wall seconds of one search over ``count`` processes (every process's trace written); None if one
    failed or they ran past ``timeout`` (its log's end printed)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    commands = []
    for k in range(count):
        argv = ["run", "--config", str(config), "--out", str(out), "--no-progress"]
        if count > 1:
            argv += ["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(count), "--process-id", str(k)]
        commands.append([sys.executable, "-c", TRACER, str(traces / f"trace-{count}-{k}.json"), *argv])
    start = time.perf_counter()
    logs = [open(traces / f"log-{count}-{k}.txt", "w") for k in range(count)]
    processes = [subprocess.Popen(c, env=env, stdout=log, stderr=subprocess.STDOUT) for c, log in zip(commands, logs)]
    deadline = start + timeout
    try:
        codes = [p.wait(timeout=max(1.0, deadline - time.perf_counter())) for p in processes]
    except subprocess.TimeoutExpired:
        codes = None
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
        for log in logs:
            log.close()
    wall = time.perf_counter() - start
    if codes is None or any(codes):
        failed = 0 if codes is None else codes.index(next(c for c in codes if c))
        why = f"stopped after {timeout:.0f} s" if codes is None else f"exit codes {codes}"
        print(f"{count} processes: {why}; "
              f"process {failed}'s log ends:\n{(traces / f'log-{count}-{failed}.txt').read_text()[-2000:]}", flush=True)
        return None
    return wall


def summary(traces: Path, walls: dict[int, float]) -> str:
    """The markdown tables of every process count."""
    lines = ["| processes | wall s | speed-up | per process: wall s, CPU s (with its workers), busiest stages (s) |",
             "|---|---|---|---|"]
    done = {count: wall for count, wall in walls.items() if wall is not None}
    for count, wall in walls.items():
        if wall is None:
            lines.append(f"| {count} | failed or stopped (see its log) | | |")
            continue
        cells = []
        for k in range(count):
            trace = json.loads((traces / f"trace-{count}-{k}.json").read_text())
            stages: dict[str, float] = {}
            for event in trace["events"]:
                stages[event["stage"]] = stages.get(event["stage"], 0.0) + event["end"] - event["start"]
            busiest = ", ".join(f"{s} {v:.1f}" for s, v in sorted(stages.items(), key=lambda kv: -kv[1])[:5])
            last = max((e["end"] for e in trace["events"]), default=0.0)
            cells.append(f"p{k}: {trace['wall']:.1f}, {trace['cpu'] + trace['children_cpu']:.1f} CPU, last stage "
                         f"ends {last:.1f}; {busiest}")
        lines.append(f"| {count} | {wall:.1f} | {done[min(done)] / wall:.2f}x | {'<br>'.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the run folders, traces and summary.md")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--tiny", action="store_true", help="a tiny config (a check of the script, on 2 cores)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process count before it is stopped")
    args = parser.parse_args()
    out = Path(args.out)
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    config = out / "search.toml"
    config.write_text(tomli_w.dumps(TINY if args.tiny else SMALL))
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # processes sharing one GPU take what they use
    device = subprocess.run([sys.executable, "-c", "import jax; d = jax.devices()[0]; "
                             "print(f'JAX {jax.__version__} on {d.platform} ({d.device_kind})')"],
                            capture_output=True, text=True).stdout.strip()
    print(f"cpus {os.cpu_count()}; {device}; load average {os.getloadavg()[0]:.1f}", flush=True)
    walls = {}
    for count in args.processes:
        walls[count] = run_search(config, out / f"run-{count}", traces, count, args.timeout)
        if walls[count] is not None:
            print(f"{count} process(es): {walls[count]:.1f} s (load average {os.getloadavg()[0]:.1f})", flush=True)
    table = summary(traces, walls)
    (out / "summary.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
