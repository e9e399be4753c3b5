"""A search over several processes (and hosts): JAX's distributed runtime, models divided.

Every process runs the same command (``pregen-search run --coordinator HOST:PORT
--num-processes N --process-id K``, or ``--distributed`` where JAX detects the cluster, as on
Slurm). ``jax.distributed.initialize`` connects them; each process then takes every N-th unit
of work (a model to train and evaluate), writes what it computes into the shared stage cache,
and meets the others at a barrier (``multihost_utils.sync_global_devices``); process 0 then
reads their entries and alone writes the run folder. One process is the same code path with
N = 1: every unit is its own and the barrier returns at once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Cluster:
    """This process's place among the ``count`` processes of one search."""

    index: int = 0
    count: int = 1
    on_this_host: int = 1  # processes of the search on this machine (they share its cores)

    @property
    def is_main(self) -> bool:
        """Process 0: it gathers the results and writes the run folder."""
        return self.index == 0

    def owns(self, position: int) -> bool:
        """Whether unit ``position`` (in the search's fixed order) is this process's: round robin."""
        return position % self.count == self.index

    def mine(self, units: Sequence[T]) -> list[T]:
        return [unit for k, unit in enumerate(units) if self.owns(k)]

    def barrier(self, name: str) -> None:
        """Wait until every process has reached ``name`` (no-op for one process)."""
        if self.count > 1:
            from jax.experimental import multihost_utils
            multihost_utils.sync_global_devices(name)

    def sum(self, values: np.ndarray) -> np.ndarray:
        """values: f64[K] on every process -> their sum over processes (the same on all)."""
        values = np.asarray(values, np.float64)
        if self.count == 1:
            return values
        from jax.experimental import multihost_utils
        return np.asarray(multihost_utils.process_allgather(values)).reshape(self.count, -1).sum(0)

    def same_host(self) -> np.ndarray:
        """bool[count]: which processes run on this machine (by host name)."""
        host = int.from_bytes(hashlib.sha256(socket.gethostname().encode()).digest()[:3], "little")  # int32-safe
        if self.count == 1:
            return np.array([True])
        from jax.experimental import multihost_utils
        hosts = np.asarray(multihost_utils.process_allgather(np.array([host], np.int32))).reshape(-1)
        return hosts == host

    def check_same(self, what: str, value: str) -> None:
        """ValueError on every process unless all processes hold the same ``value`` (a config, say).

        Process 0's value is broadcast and each process compares its own; the verdicts are
        then gathered, so that all processes stop together instead of waiting at a barrier.
        """
        if self.count == 1:
            return
        from jax.experimental import multihost_utils
        mine = np.frombuffer(hashlib.sha256(value.encode()).digest(), np.uint8)
        main = np.asarray(multihost_utils.broadcast_one_to_all(mine))
        differs = self.sum(np.array([float(not np.array_equal(main, mine))]))
        if differs[0]:
            raise ValueError(f"{what} differs between processes ({int(differs[0])} of {self.count} differ from "
                             "process 0's): every process must run the same command")


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               detect: bool = False) -> Cluster:
    """Join the search's processes through ``jax.distributed.initialize`` and say where we are.

    ``coordinator`` ("HOST:PORT" of process 0), ``num_processes`` and ``process_id`` are passed
    on; with ``detect`` (``--distributed``) JAX reads them from the cluster (Slurm, Open MPI,
    Kubernetes...). With neither, nothing is initialised: one process.
    """
    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"--num-processes {num_processes}: give 1 or more")
    if any(given) and not all(given):
        raise ValueError("--coordinator, --num-processes and --process-id go together (or use --distributed "
                         "where JAX detects the cluster, as on Slurm)")
    if all(given):
        if num_processes < 1 or not 0 <= process_id < num_processes:
            raise ValueError(f"--process-id {process_id} must lie in 0..{num_processes - 1} "
                             f"(--num-processes {num_processes})")
        if ":" not in coordinator:
            raise ValueError(f"--coordinator {coordinator!r}: give HOST:PORT of process 0")
    if not (all(given) or detect):
        return Cluster()
    import jax
    try:
        if detect:
            jax.distributed.initialize()
        else:
            jax.distributed.initialize(coordinator, num_processes, process_id)
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"jax.distributed.initialize failed: {' '.join(str(err).split())[:300]}") from None
    cluster = Cluster(jax.process_index(), jax.process_count())
    return dataclasses.replace(cluster, on_this_host=max(1, int(cluster.same_host().sum())))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_local_processes(argv: list[str], count: int) -> int:
    """Run this command line as processes 0..count-1 on this machine, and wait for them.

    This process only starts and waits (it may already have used JAX, which a process of the
    search must not have before ``jax.distributed.initialize``). Process 0 prints as a single
    process would; the others print only errors. Returns the first non-zero exit code, else 0.
    """
    import pregen_jax
    address = f"127.0.0.1:{free_port()}"
    root = str(Path(pregen_jax.__file__).resolve().parents[1])
    from .. import processes
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               **{processes.PARENT_REPORTS_INTERRUPTS: "1"})
    with processes.interrupts_deferred():  # Ctrl-C: this process alone reports it, and ends them
        children = [processes.popen([sys.executable, "-m", "pregen_jax.cli", *argv, "--coordinator", address,
                                     "--process-id", str(k)], env=env, stdout=None if k == 0 else subprocess.DEVNULL)
                    for k in range(count)]
    try:
        codes = [child.wait() for child in children]
    except BaseException:
        for child in children:
            child.terminate()
            child.wait()
        raise
    return next((code for code in codes if code), 0)


@contextlib.contextmanager
def compiled_programs_kept_in(cache_root: Path):
    """Keep XLA's compiled programs in ``cache_root/xla/<machine>`` (JAX's persistent compilation cache).

    The three runs of an architecture compile the same training step; with the cache the
    second and third load it (seconds instead of a compile), and so do other processes and a
    resumed run. Programs are kept per kind of machine (CPU model and instruction set, or
    accelerator), since a program compiled for one may not run on another. A cache directory
    the user configured (``JAX_COMPILATION_CACHE_DIR``) is left alone. Yields the folder used.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache
    if jax.config.jax_compilation_cache_dir:
        yield Path(jax.config.jax_compilation_cache_dir)
        return
    folder = Path(cache_root) / "xla" / machine_kind()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    compilation_cache.reset_cache()  # JAX reads the setting once, at its first compile
    try:
        yield folder
    finally:
        jax.config.update("jax_compilation_cache_dir", None)
        compilation_cache.reset_cache()


def machine_kind() -> str:
    """A short name for what compiled programs depend on: backend, devices, CPU model and flags."""
    import jax
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                cpu += line
                if cpu.count(":") == 2:
                    break
    except OSError:
        cpu = platform.processor()
    devices = sorted({f"{d.platform}:{d.device_kind}" for d in jax.local_devices()})
    parts = [jax.__version__, platform.machine(), cpu, *devices]
    return f"{jax.default_backend()}-" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
