"""What ``pregen-search demo`` and ``pregen-search run`` share: the options for several processes
or hosts, and running one search (alone, as N local processes, or as one process of a cluster)."""
from __future__ import annotations

import argparse
import sys

from .base import WORDS, trainers, workers


def scale_arguments(parser: argparse.ArgumentParser) -> None:
    """Several processes or hosts (JAX's distributed runtime) and the post-gen worker pool."""
    group = parser.add_argument_group("several processes or hosts (docs/guides/scale.md: several devices, "
                                      "processes and hosts)")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0, which the others connect to (jax.distributed.initialize)")
    group.add_argument("--num-processes", type=int, default=None, metavar="N",
                       help="how many processes in all; alone, it starts N processes on this machine")
    group.add_argument("--process-id", type=int, default=None, metavar="K", help="this process's number, 0..N-1")
    group.add_argument("--distributed", action="store_true",
                       help="let JAX detect the processes from the cluster (Slurm, Open MPI, ...) instead")
    parser.add_argument("--workers", type=workers, default=None, metavar="N",
                        help="post-gen worker processes scoring one model while the next trains "
                             "(default: one per core beyond the first, at most 8, of this process's share of "
                             "the machine; 0: none)")
    parser.add_argument("--trainers", type=trainers, default=None, metavar="N",
                        help="models trained at once, in threads (default on a CPU: one per core of this "
                             "process's share, at most 4; 1 on an accelerator)")


def search(config, args: argparse.Namespace, source: str = "config") -> int:
    """Run the search of ``config`` as ``args`` say: alone, as N processes started here, or as one
    process of a cluster. ``source``: where the config came from, for messages."""
    from ..pipeline.distributed import run_local_processes
    from ..pipeline.preflight import check_search
    alone = args.coordinator is None and args.process_id is None and not args.distributed
    starts_processes = alone and (args.num_processes or 1) > 1
    if not alone or starts_processes:  # before processes start or join (a lone search: run_search checks first)
        check_search(config, source, tier_modules=alone)
    if starts_processes:  # N processes on this machine, started from here
        sys.stdout.flush()
        return run_local_processes(args.argv, args.num_processes)
    return _search_in_cluster(config, args, source)


def _search_in_cluster(config, args: argparse.Namespace, source: str) -> int:
    import time

    from ..pipeline import run_search, write_outputs
    from ..pipeline.distributed import initialize
    start = time.perf_counter()
    cluster = initialize(args.coordinator, args.num_processes, args.process_id, detect=args.distributed)
    result = run_search(config, args.out, progress=not args.no_progress, cluster=cluster, workers=args.workers,
                        trainers=args.trainers, source=source)
    if result is None:  # not process 0: its models are in the shared cache, process 0 writes the run folder
        print(f"process {cluster.index} of {cluster.count}: done; process 0 writes {args.out}")
        return 0
    report = write_outputs(result, config)
    print(f"\n{len(result.table)} data points; report: {report} ({time.perf_counter() - start:.0f} s)")
    # (a metric that cannot run here was named, with why, in one line when the search started; the report lists it)
    for model in result.models:
        if model.quality["problems"]:
            print(f"warning: {model.label} looks degenerate: {'; '.join(model.quality['problems'])}")
    for post, df in result.ranking.correlations.items():
        print(f"  {post:8s} best {df['pregen'].iloc[0]:32s} R^2={df['all_R^2'].iloc[0]:.3f}")
    print(WORDS)
    return 0
