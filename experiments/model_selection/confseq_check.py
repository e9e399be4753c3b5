"""``pregen_jax.ranking.confseq`` against confseq's own ``betting_cs`` (Waudby-Smith and Ramdas'
implementation), run from confseq's source where the package does not build.

    pip download confseq==0.0.11 --no-deps -d /tmp/confseq && tar xzf /tmp/confseq/confseq-0.0.11.tar.gz -C /tmp/confseq
    python3 experiments/model_selection/confseq_check.py --source /tmp/confseq/confseq-0.0.11/src

confseq builds a C++ extension against Boost's headers, which most machines lack, so it is not a
declared dependency; its betting module is pure Python and needs only numpy, scipy and
matplotlib. This script imports that module from the unpacked source (``multiprocess`` stubbed
when absent, ``np.float_`` restored for numpy 2), and compares both sequences on skewed values
(per-image CIDEr-D / 10) and on concentrated ones (paired differences rescaled), two levels, at
grids of 1,000 and 10,000 values. Where confseq installs, tests/test_confseq.py makes the same
check at 1,000.
"""
from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import numpy as np

from pregen_jax.ranking import confseq as ours


def import_betting(source: Path):
    """confseq.betting from an unpacked source tree (its ``src`` folder)."""
    if not hasattr(np, "float_"):
        np.float_ = np.float64  # confseq 0.0.11's type hints predate numpy 2
    try:
        import multiprocess  # noqa: F401
    except ImportError:
        sys.modules["multiprocess"] = types.SimpleNamespace(cpu_count=lambda: 1, Pool=None)
    package = types.ModuleType("confseq")
    package.__path__ = [str(source / "confseq")]  # the folder, without its __init__ (which loads the C++ part)
    sys.modules["confseq"] = package
    from confseq import betting
    return betting


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="confseq's unpacked src folder")
    args = parser.parse_args(argv)
    betting = import_betting(args.source)
    rng = np.random.default_rng(0)
    print("values      N  draws  alpha  breaks  max |ours - confseq|  ours inside confseq's")
    for kind in ("skewed", "differences"):
        for population in (200, 1000):
            values = (np.clip(rng.gamma(0.4, 0.08, population), 0, 1) if kind == "skewed"
                      else np.clip(0.5 + 0.02 * rng.standard_t(3, population), 0, 1))
            x = rng.permutation(values)[:150]
            for alpha in (0.05, 0.001):
                low, high = ours.two_sided(x, population, alpha)
                for breaks in (1000, 10000):
                    theirs = betting.betting_cs(x, alpha=alpha, N=population, breaks=breaks)
                    gap = max(np.abs(low[0] - theirs[0]).max(), np.abs(high[0] - theirs[1]).max())
                    inside = bool((low[0] >= theirs[0] - 1e-12).all() and (high[0] <= theirs[1] + 1e-12).all())
                    print(f"{kind:11s} {population:4d} {len(x):6d} {alpha:6g} {breaks:7d} {gap:21.6f}  {inside}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
