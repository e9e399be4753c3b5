"""`predict`'s conformal set against its definition, brute force (issue 58).

    python experiments/predict_domain/exact_set.py [--worlds 300] [--level 0.9] [--seed 0] [--small]

Each world: n calibration models (9-24) and a new one, exchangeable, with M candidate metrics
(2-39) each correlated rho ~ U(0, 0.95) with the score; in a third of the worlds the new model is
moved far out (1 to 1,000 standard deviations) on about 30% of the metrics. With ``--small``:
n = 9 and 3 metrics, each correlated 0.7 with the score (where unbounded sets are common enough to
count: a left-out model further out than the new one on the metric the fits choose follows the
new model's score). The printed set
(``conformal.conformal_interval``: exact, piece by piece) is checked against the set's rule
evaluated candidate by candidate (``conformal.accepted``) on a grid of 14,001 points: every
1/200 of the calibration scores' spread within 20 spreads of the prediction, then 3,000
log-spaced points each side out to 1e6 spreads. Reported: worlds with an accepted grid value
outside the printed set (must be 0), worlds with a printed piece whose midpoint the rule rejects
(must be 0), worlds with islands (more than one piece), unbounded worlds, and whether each
unbounded one is accepted at 1e6 spreads by the rule.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from pregen_jax.prediction import conformal


def world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x f[n, M], y f[n], x_new f[M]): see the module docstring."""
    n, metrics = int(rng.integers(9, 25)), int(rng.integers(2, 40))
    rho = rng.uniform(0, 0.95, metrics)
    q = rng.normal(size=n + 1)
    x = rho * q[:, None] + np.sqrt(1 - rho ** 2) * rng.normal(size=(n + 1, metrics))
    if rng.random() < 1 / 3:
        far = rng.random(metrics) < 0.3
        x[-1, far] += rng.normal(size=int(far.sum())) * 10 ** rng.uniform(0, 3)
    return x[:-1], q[:-1], x[-1]


def small_world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x f[9, 3], y f[9], x_new f[3]): the ``--small`` world (tests/test_predict_validity.py's)."""
    q = rng.normal(size=10)
    x = 0.7 * q[:, None] + 0.7 * rng.normal(size=(10, 3))
    return x[:-1], q[:-1], x[-1]


def grid(centre: float, spread: float) -> np.ndarray:
    """f64[14001]: the candidates (module docstring)."""
    far = np.logspace(np.log10(20), 6, 3000)
    return centre + spread * np.concatenate([-far[::-1], np.linspace(-20, 20, 8001), far])


def inside(pieces, t: np.ndarray, tolerance: float) -> np.ndarray:
    """bool[T]: ``t`` in one of the closed ``pieces`` (widened by ``tolerance`` for rounding)."""
    return np.any([(low - tolerance <= t) & (t <= high + tolerance) for low, high in pieces], axis=0)


def check(x, y, x_new, level) -> dict:
    """One world: the printed set against the rule on the grid."""
    made = conformal.conformal_interval(x, y, x_new, level)
    spread = float(np.ptp(y))
    candidates = grid(made.predicted, spread)
    kept = conformal.accepted(x, y, x_new, level, candidates)
    missed = kept & ~inside(made.pieces, candidates, 1e-9 * spread)
    mids = np.array([(a + b) / 2 if np.isfinite(a + b) else (b - spread if np.isfinite(b) else a + spread)
                     for a, b in made.pieces])
    return {"missed": int(missed.sum()), "unsound": int((~conformal.accepted(x, y, x_new, level, mids)).sum()),
            "pieces": len(made.pieces), "bounded": made.bounded,
            "kept_far": bool(kept[[0, -1]].any()), "reason": made.reason}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=300)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true", help="9 models, 3 metrics (module docstring)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    draw = small_world if args.small else world
    rows = [check(*draw(rng), args.level) for _ in range(args.worlds)]
    missed = sum(r["missed"] > 0 for r in rows)
    unsound = sum(r["unsound"] > 0 for r in rows)
    islands = sum(r["pieces"] > 1 for r in rows)
    unbounded = [r for r in rows if not r["bounded"]]
    far = sum(r["kept_far"] for r in rows)
    print(f"{args.worlds} {'small ' if args.small else ''}worlds at level {args.level} (seed {args.seed}): accepted grid values outside the printed "
          f"set in {missed}; a printed piece rejected at its midpoint in {unsound}; islands in {islands}; "
          f"unbounded {len(unbounded)} (the rule accepts a candidate at 1e6 spreads in {far})")
    for r in unbounded[:3]:
        print(f"  e.g. {r['reason']}")
    print(f"{time.perf_counter() - start:.0f} s")
    return 0 if missed == unsound == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
