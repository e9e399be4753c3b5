"""The demo, run and doctor subcommands of `pregen-search`."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from .config import SearchConfig, demo_config


def _search(config: SearchConfig, out: Path, progress: bool) -> int:
    from .report import write_outputs
    from .search import run_search
    start = time.perf_counter()
    result = run_search(config, out, progress=progress)
    report = write_outputs(result, config)
    print(f"\n{len(result.table)} data points; report: {report} ({time.perf_counter() - start:.0f} s)")
    for name, why in result.unavailable.items():
        print(f"{name} unavailable: {why}")
    for post, df in result.ranking.correlations.items():
        print(f"  {post:8s} best {df['pregen'].iloc[0]:32s} R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


def demo(args) -> int:
    return _search(demo_config(args.quick), Path(args.out), not args.no_progress)


def run(args) -> int:
    return _search(SearchConfig.load(args.config), Path(args.out), not args.no_progress)


def doctor(args) -> int:
    import jax

    from .. import postgen
    from ..postgen.spice import find_corenlp
    java = shutil.which("java")
    print(f"java: {java or 'NOT FOUND (METEOR and SPICE need it: apt-get install default-jre-headless)'}")
    print(f"JAX {jax.__version__} devices: {', '.join(f'{d.platform}:{d.device_kind}' for d in jax.devices())}")
    print(f"SPICE CoreNLP 3.6.0 jars: {find_corenlp(args.corenlp_dir) or 'not found'}")
    print("post-gen metrics:")
    for name, (ok, why) in postgen.availability(args.corenlp_dir).items():
        print(f"  {name:8s} {'available' if ok else 'UNAVAILABLE'}: {why}")
    return 0


def add_commands(sub) -> None:
    demo_parser = sub.add_parser("demo", help="train 4 architectures x 3 runs on the built-in dataset and rank")
    demo_parser.add_argument("--out", default="runs/demo", help="run folder (also the cache: rerun to resume)")
    demo_parser.add_argument("--quick", action="store_true", help="a small version that finishes in minutes")
    demo_parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo_parser.set_defaults(func=demo)

    run_parser = sub.add_parser("run", help="run a search from a TOML config (see search/configs/)")
    run_parser.add_argument("--config", required=True)
    run_parser.add_argument("--out", required=True, help="run folder (also the cache: rerun to resume)")
    run_parser.add_argument("--no-progress", action="store_true")
    run_parser.set_defaults(func=run)

    doctor_parser = sub.add_parser("doctor", help="which post-gen metrics and devices this machine has")
    doctor_parser.add_argument("--corenlp-dir", default=None)
    doctor_parser.set_defaults(func=doctor)
