"""`pregen-search run` over two processes (jax.distributed on 127.0.0.1) gives one process's table.

Each process trains and evaluates one of the two models; process 0 gathers both from the
shared cache and alone writes the run folder.
"""
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pregen_jax import cli, tiers
from pregen_jax.pipeline import SearchConfig, flow, run_search, sources, workers
from pregen_jax.pipeline.cache import NoCache
from pregen_jax.pipeline.distributed import Cluster, initialize
from tests.builders import training_config, write_config, write_precomputed, write_training_corpus

ROOT = Path(__file__).resolve().parents[1]

# Runs the CLI, noting in MARKS/wrote-K whether process K published a run folder.
SPY = """
import sys
from pathlib import Path
from pregen_jax import cli, io
marks, argv = Path(sys.argv[1]), sys.argv[2:]
process = argv[argv.index("--process-id") + 1]
publish = io.staged_folder
def spied(*args, **kwargs):
    (marks / f"wrote-{process}").write_text("")
    return publish(*args, **kwargs)
io.staged_folder = spied
sys.exit(cli.main(argv))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # minutes on 2 cores: kept out of .ci/run (python3 -m pytest -m slow)
def test_two_processes_write_one_process_table(tmp_path):
    write_training_corpus(tmp_path)
    config = write_config(tmp_path / "search.toml", training_config(models={"architectures": ["par", "merge"]}))
    assert cli.main(["run", "--config", str(config), "--out", str(tmp_path / "one"), "--no-progress"]) == 0

    marks = tmp_path / "marks"
    marks.mkdir()
    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("XLA_FLAGS", None)
    processes = [subprocess.Popen(
        [sys.executable, "-c", SPY, str(marks), "run", "--config", str(config), "--out", str(tmp_path / "two"),
         "--no-progress", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(k)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in (0, 1)]
    outputs = [p.communicate(timeout=900) for p in processes]
    for p, (_stdout, stderr) in zip(processes, outputs):
        assert p.returncode == 0, stderr[-3000:]
    assert "process 1 of 2: done; process 0 writes" in outputs[1][0]
    assert "report:" in outputs[0][0] and "report:" not in outputs[1][0]
    assert sorted(m.name for m in marks.iterdir()) == ["wrote-0"]

    one = pd.read_csv(tmp_path / "one" / "table.tsv", sep="\t")
    two = pd.read_csv(tmp_path / "two" / "table.tsv", sep="\t")
    assert len(two) == 2 * 15 and list(two["architecture"].unique()) == ["par", "merge"]
    pregen = list(tiers.DEFAULT_SPACE.names)
    post = ["CIDEr", "WMD"]
    others = [c for c in one.columns if c not in pregen]
    assert list(two.columns) == list(one.columns)
    pd.testing.assert_frame_equal(two[others], one[others])  # ids and post-gen scores: identical
    np.testing.assert_allclose(two[pregen].to_numpy(float), one[pregen].to_numpy(float), rtol=1e-6, atol=0)
    assert set(post) <= set(others)
    # Each process trained its own model into the shared cache.
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "two" / "cache" / "train").iterdir()) == ["merge", "par"]
    report = (tmp_path / "two" / "report.md").read_text()
    assert "train 2 computed / 0 reused" in report


def test_num_processes_alone_starts_them_on_this_machine(tmp_path):
    config = write_precomputed(tmp_path, models=3)
    assert cli.main(["run", "--config", str(config), "--out", str(tmp_path / "one"), "--no-progress"]) == 0
    assert cli.main(["run", "--config", str(config), "--out", str(tmp_path / "two"), "--no-progress",
                     "--num-processes", "2"]) == 0  # this process has used JAX: it only starts and waits
    one, two = (pd.read_csv(tmp_path / name / "table.tsv", sep="\t") for name in ("one", "two"))
    pd.testing.assert_frame_equal(two, one, rtol=1e-6)
    assert "refprobs" not in (tmp_path / "two" / "report.md").read_text()  # precomputed: nothing decoded


def test_postgen_workers_give_the_sequential_result(tmp_path):
    """Scoring in a worker process, or in a worker thread, equals scoring in order in this process."""
    config = SearchConfig.load(write_precomputed(tmp_path, models=3))
    inline = run_search(config, tmp_path / "inline", progress=False, workers=0)
    pooled = run_search(config, tmp_path / "pooled", progress=False, workers=1)
    pd.testing.assert_frame_equal(pooled.table, inline.table)
    assert pooled.stages == inline.stages == {
        "strata": {"computed": 3, "reused": 0}, "postgen": {"computed": 9, "reused": 0},
        "pregen": {"computed": 3, "reused": 0}}
    assert pooled.timings["post-gen metrics"] > 0 and "waiting for post-gen workers" not in inline.timings
    data = sources.load_data(config, False)
    candidate = sources.precomputed_candidates(config, data)[0]
    settings = flow.FlowSettings(config, None)
    (model,) = flow.start_unit(candidate, flow.Context(data, settings, NoCache()))
    flow.advance(model, flow.Context(data, settings, NoCache()))
    with workers.PostgenPool(1, data, config.postgen, tmp_path / "threads" / "cache", kind="thread") as pool:
        scored = pool.submit(model).result()
    assert scored.model.visited == ["train", "refprobs", "captions", "strata", "postgen"]
    first = inline.table.iloc[:15]
    np.testing.assert_array_equal(scored.model.post["CIDEr"].to_numpy(), first["CIDEr"].to_numpy())


def test_cluster_divides_units_round_robin():
    cluster = Cluster(1, 3)
    assert cluster.mine(list("abcdefg")) == ["b", "e"]
    assert [Cluster(k, 3).owns(4) for k in range(3)] == [False, True, False]
    assert Cluster().mine([1, 2]) == [1, 2] and Cluster().is_main


@pytest.mark.parametrize("args, message", [
    (("127.0.0.1:1234", 2, None), "go together"),
    (("127.0.0.1:1234", 2, 2), "must lie in 0..1"),
    (("localhost", 2, 0), "HOST:PORT"),
    ((None, 0, None), "1 or more"),
])
def test_bad_process_flags_are_one_line_errors(args, message):
    with pytest.raises(ValueError, match=message):
        initialize(*args)


def test_bad_process_flags_on_the_command_line(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path / "x"), "--process-id", "1"]) == 2
    assert "--coordinator, --num-processes and --process-id go together" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------ no process outlives its run


def children_of(pid: int) -> dict[int, str]:
    """Every live descendant of ``pid``: {pid: command line}."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            parents[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, cmdline) in parents.items():
            if ppid == parent and child not in found:
                found[child] = cmdline
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


MARK = "PREGEN_TEST_RUN"  # in the environment of a search these tests start, and so of all its children


def of_run(folder: Path) -> dict[int, str]:
    """Every live process whose environment carries ``MARK={folder}``: the search started in
    ``folder`` and everything it started (workers, JVMs), even after their parent is gone."""
    mark = f"{MARK}={folder}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                marked = mark in (entry / "environ").read_bytes().split(b"\0")
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marked and alive(int(entry.name)):
                found[int(entry.name)] = cmdline
    return found


def is_worker(cmdline: str) -> bool:
    return "multiprocessing" in cmdline and "resource_tracker" not in cmdline


def wait_for(condition, seconds: float):
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    return condition()


def start_search(tmp_path, metrics, backend: str | None = None):
    config = write_precomputed(tmp_path, models=3, metrics=metrics)
    if backend:  # "coco": METEOR runs its jar (a JVM child of the worker)
        config.write_text(config.read_text().replace("[postgen]\n", f'[postgen]\nbackend = "{backend}"\n'))
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env[MARK] = str(tmp_path)
    return subprocess.Popen([sys.executable, "-m", "pregen_jax.cli", "run", "--config", str(config), "--out",
                             str(tmp_path / "out"), "--no-progress", "--workers", "1"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.slow  # about 25 s: a worker and its JVM must start first
@pytest.mark.skipif(not Path("/proc").is_dir() or __import__("pregen_jax.postgen.jvm").postgen.jvm.find_java() is None,
                    reason="needs /proc and java")
def test_kill_9_of_a_search_leaves_no_process_behind(tmp_path):
    """The post-gen worker, multiprocessing's resource tracker and the worker's METEOR JVM all end
    when the search is killed with SIGKILL (which runs no cleanup code)."""
    search = start_search(tmp_path, ("CIDEr", "METEOR"), backend="coco")
    try:
        started = wait_for(lambda: any("meteor" in c for c in children_of(search.pid).values()), 120)
        descendants = children_of(search.pid)
        assert started, (descendants, search.poll(), search.stderr.read() if search.poll() is not None else "")
        assert any("resource_tracker" in c for c in descendants.values()), descendants
        assert sum("multiprocessing" in c and "resource_tracker" not in c for c in descendants.values()) >= 1
    finally:
        killed(search)
    assert_none_left(tmp_path, 15)


def killed(search: subprocess.Popen) -> None:
    """SIGKILL the search and reap it, without reading its pipes to their end: a child that outlived
    it holds them open, and ``communicate()`` would wait for that child (a test that hangs, not fails)."""
    import signal
    os.kill(search.pid, signal.SIGKILL)
    search.wait()
    search.stdout.close()
    search.stderr.close()


def assert_none_left(folder: Path, seconds: float) -> None:
    """Within ``seconds``, no process of the search started in ``folder`` is alive (those still
    alive are killed, not left to the next test, and named in the failure)."""
    import signal
    wait_for(lambda: not of_run(folder), seconds)
    survivors = of_run(folder)
    for pid in survivors:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, survivors


@pytest.mark.slow  # about 30 s: a worker must appear first
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_kill_9_of_a_search_while_its_worker_starts_leaves_no_process_behind(tmp_path):
    """SIGKILL to the search the moment its post-gen worker process appears, while the worker still
    imports, before its initializer runs. The worker must not take its new parent (pid 1 or a
    subreaper) for the search: before c9ad89a it did, watched pid 1 for ever, and took the jobs
    already in its pipe, so it and its METEOR JVM outlived the search (found 40-56 min later)."""
    search = start_search(tmp_path, ("CIDEr", "METEOR"), backend="coco")
    try:
        assert wait_for(lambda: any(is_worker(c) for c in children_of(search.pid).values()), 120), search.poll()
    finally:
        killed(search)
    assert_none_left(tmp_path, 90)  # the worker ends once it has imported and started watching


@pytest.mark.slow  # about 20 s: a worker must start first
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_ctrl_c_while_workers_start_prints_one_line(tmp_path):
    """Ctrl-C reaches every process of the terminal's group: only the search speaks, in one line, exit 130."""
    import signal
    search = start_search(tmp_path, ("CIDEr", "ROUGE_L"))
    try:
        assert wait_for(lambda: any("multiprocessing" in c and "resource_tracker" not in c
                                    for c in children_of(search.pid).values()), 120)
        descendants = children_of(search.pid)
        os.killpg(search.pid, signal.SIGINT)  # what the terminal does
        _, stderr = search.communicate(timeout=60)
    finally:
        if search.poll() is None:
            os.killpg(search.pid, signal.SIGKILL)
    assert search.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["pregen-search run: interrupted; rerun the same command to resume"], stderr
    assert wait_for(lambda: not any(alive(pid) for pid in descendants), 15)


AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


@pytest.mark.skipif(not AUTOGROUP.is_file() or AUTOGROUP.read_text().strip() != "1",
                    reason="needs Linux with autogroup on (elsewhere workers stay in the search's session)")
def test_a_worker_sits_in_a_session_of_its_own_and_a_cancel_ends_it(tmp_path):
    """Where the scheduler groups by session, a post-gen worker leads its own (the cores are then
    shared between it and the search, not among the search's threads); the terminal's Ctrl-C
    misses it, so closing the pool with ``cancel`` (as Ctrl-C or an error does) ends it at once,
    mid-job."""
    import threading
    config = SearchConfig.load(write_precomputed(tmp_path, models=1, metrics=("CIDEr",)))
    data = sources.load_data(config, False)
    pool = workers.PostgenPool(1, data, config.postgen, tmp_path / "cache", kind="process")
    try:
        pool.warm()
        pids = wait_for(pool.worker_pids, 60)
        assert len(pids) == 1 and wait_for(lambda: os.getsid(pids[0]) == pids[0], 60)  # it leads its session
        assert os.getsid(0) != pids[0]
        pool._executor.submit(__import__("time").sleep, 60)  # a job that would hold a plain shutdown a minute
        closing = threading.Thread(target=pool.close, kwargs={"cancel": True})
        closing.start()
        closing.join(20)
        assert not closing.is_alive() and wait_for(lambda: not alive(pids[0]), 10)
    finally:
        pool.close(cancel=True)


def test_a_child_started_to_die_with_its_parent_does(tmp_path):
    """processes.popen: the kernel ends the child when its parent is killed (no cleanup code runs)."""
    import signal

    from pregen_jax import processes
    script = ("import sys, time\nfrom pregen_jax import processes\n"
              "child = processes.popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "print(child.pid, flush=True)\ntime.sleep(60)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    parent.stdout.close()  # the pipe is ours to close (ResourceWarning is an error)
    assert wait_for(lambda: not alive(child), 10)
    assert processes.watch_parent().daemon  # in this process: a watcher that never fires while pytest lives


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler (KeyboardInterrupt) for the test, whatever an earlier test set."""
    import signal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_cli_main_gives_back_the_callers_sigint_handler(tmp_path, crash_on, capsys):
    """After a Ctrl-C, main() quietens further ones (its one line is said); on return the caller's
    handler is back, so a test process or a Python caller is not left with an exiting handler."""
    import signal

    from pregen_jax.external import match as export
    mine = signal.getsignal(signal.SIGINT)
    config = write_precomputed(tmp_path, models=1)
    with crash_on(export, "read_corpus", call=1):
        code = cli.main(["export-references", "--config", str(config), "--out", str(tmp_path / "refs.jsonl")])
    assert code == 130 and "interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is mine


def test_a_ctrl_c_while_children_start_is_deferred_not_lost(default_sigint):
    """Inside ``interrupts_deferred`` SIGINT is blocked, not ignored: a Ctrl-C there still ends up
    as KeyboardInterrupt (at the latest when the block ends), and a child started there inherits
    the block (it unblocks once its own quiet handler is set)."""
    import signal
    import time

    from pregen_jax import processes
    with pytest.raises(KeyboardInterrupt):
        with processes.interrupts_deferred():
            child = subprocess.run([sys.executable, "-c", "import signal; print(signal.SIGINT in "
                                    "signal.pthread_sigmask(signal.SIG_BLOCK, []))"], capture_output=True, text=True)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)
            pytest.fail("unreachable only if the interrupt was raised in the window")  # pragma: no cover
    assert child.stdout.strip() == "True"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the mask is back


def test_a_ctrl_c_that_a_gc_callback_would_swallow_is_raised_again(default_sigint):
    """A KeyboardInterrupt raised inside a garbage-collector callback (as JAX's ``_xla_gc_callback``
    can be, when Ctrl-C lands there) is printed and dropped by Python; the CLI raises it again."""
    import gc
    import time

    from pregen_jax import processes

    def callback(phase, info):
        if phase == "start":
            gc.callbacks.remove(callback)
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        with processes.interrupts_never_swallowed():
            gc.callbacks.append(callback)
            gc.collect()
            for _ in range(100):
                time.sleep(0.01)
    assert callback not in gc.callbacks


def test_a_worker_takes_a_deferred_ctrl_c_quietly():
    """A process started with SIGINT blocked and then given the worker's quiet handler ends at once,
    silently, with 130 when a Ctrl-C was sent while it started."""
    import signal
    code = ("import os, signal, time\n"
            "os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while it starts: blocked, so pending\n"
            "time.sleep(0.2)\n"
            "from pregen_jax import processes\n"
            "processes.quiet_interrupts_in_worker()\n"
            "time.sleep(5)\n"
            "print('not reached')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    from pregen_jax import processes
    with processes.interrupts_deferred():
        child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 130 and out == "" and err == "", (child.returncode, out, err)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


@pytest.mark.slow  # about 2 minutes: ten searches, each interrupted at another moment
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_ctrl_c_at_any_moment_of_a_search_ends_it_in_one_line(tmp_path):
    """SIGINT to the search's process group (what the terminal sends) at many moments of a small
    search, the post-gen worker's start included: every one ends the run with one line, exit 130,
    and no process left."""
    import signal
    import time
    first = tmp_path / "whole"
    first.mkdir()
    start = time.monotonic()
    search = start_search(first, ("CIDEr", "ROUGE_L"))
    _, stderr = search.communicate(timeout=300)
    assert search.returncode == 0, stderr
    whole = time.monotonic() - start
    moments = [("worker appears", None)] + [(f"{f:.0%} of the run", f * whole)
                                             for f in (0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85)]
    for name, delay in moments:
        folder = tmp_path / name.replace(" ", "-").replace("%", "pc")
        folder.mkdir()
        search = start_search(folder, ("CIDEr", "ROUGE_L"))
        try:
            if delay is None:
                assert wait_for(lambda pid=search.pid: any("multiprocessing" in c and "resource_tracker" not in c
                                                           for c in children_of(pid).values()), 120)
            else:
                time.sleep(delay)
            descendants = children_of(search.pid)
            os.killpg(search.pid, signal.SIGINT)
            _, stderr = search.communicate(timeout=120)
        finally:
            if search.poll() is None:
                os.killpg(search.pid, signal.SIGKILL)
        assert search.returncode == 130, (name, search.returncode, stderr)
        assert stderr.strip().splitlines()[-1:] == ["pregen-search run: interrupted; rerun the same command to resume"], (
            name, stderr)
        assert sum("interrupted" in line for line in stderr.splitlines()) == 1, (name, stderr)
        assert wait_for(lambda left=descendants: not any(alive(pid) for pid in left), 15), name
