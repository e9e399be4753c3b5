"""Coverage and width of `predict`'s intervals after it chooses its metric: a simulation.

    python experiments/predict_domain/simulate.py [--reps 1000] [--models 20] [--metrics 504]
        [--rho-max 0.95] [--levels 0.8 0.9] [--search runs/demo [--skip-latent]]

Each replication draws ``models + 1`` exchangeable models; the first ``models`` calibrate, the
last is predicted by the four methods of ``interval_methods`` (the metric chosen by R^2 among
``metrics`` candidates outside the fits as before, a metric fixed in advance, jackknife+ and full
conformal with the choice inside each fit). Reported per method and level: coverage with its
Clopper-Pearson 95% interval, the median and mean width of the bounded intervals, and the share
unbounded.

Two worlds:
- ``latent``: a model's quality q ~ N(0, 1) is its post-gen score; the metrics come in 42
  families of 12 variants that share a family nuisance factor (weight 0.7), each family with a
  true correlation rho ~ U(0, ``--rho-max``) with q (its variants 0.9-1.0 of it; 0.95 by default,
  0.6 a world of weak metrics where choosing is most optimistic); the fixed metric is the one with
  the highest true rho.
- ``search`` (with ``--search``): models drawn from the normal distribution with the finished
  search's mean and covariance over its models (the post-gen score and every candidate metric;
  rank n - 1, so the draws span the search's models' own directions), per post-gen metric; the
  fixed metric is the search's chosen one over all its models (``FinishedSearch.chosen``). Its
  replications are shared out over the post-gen metrics.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interval_methods import METHODS  # noqa: E402


def latent_world(rng: np.random.Generator, models: int, metrics: int, rho_max: float = 0.95, families: int = 42):
    """(draw(rng, count) -> (x f[count, metrics], y f[count]), fixed column): see the module docstring."""
    family = np.repeat(np.arange(families), -(-metrics // families))[:metrics]
    rho = rng.uniform(0, rho_max, families)[family] * rng.uniform(0.9, 1.0, metrics)
    fixed = int(np.argmax(rho))

    def draw(rng, count):
        q = rng.normal(size=count)
        nuisance = rng.normal(size=(count, families))[:, family]
        noise = np.sqrt(0.7) * nuisance + np.sqrt(0.3) * rng.normal(size=(count, metrics))
        return rho * q[:, None] + np.sqrt(1 - rho ** 2) * noise, q
    return draw, fixed


def search_world(model_rows: pd.DataFrame, names: list[str], post: str, chosen: str):
    """Draws from N(mean, covariance) of the search's models' [post, names...] (module docstring)."""
    data = model_rows[[post, *names]].to_numpy(np.float64)
    mean = data.mean(0)
    centred = (data - mean) / np.sqrt(len(data) - 1)          # covariance = centred.T @ centred

    def draw(rng, count):
        made = mean + rng.normal(size=(count, len(data))) @ centred
        return made[:, 1:], made[:, 0]
    return draw, names.index(chosen)


def replicate(draw, fixed: int, models: int, reps: int, levels: list[float], seed: int, world: str) -> pd.DataFrame:
    """One row per (replication, level, method): low, high, actual, covered."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(reps):
        x, y = draw(rng, models + 1)
        for level in levels:
            for method, interval in METHODS.items():
                low, high = interval(x[:-1], y[:-1], x[-1], level, fixed)
                rows.append({"world": world, "rep": rep, "level": level, "method": method, "low": low, "high": high,
                             "actual": y[-1], "covered": bool(low <= y[-1] <= high)})
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Coverage [Clopper-Pearson 95%], median and mean width (bounded ones), share unbounded."""
    out = []
    for key, group in rows.groupby(by, sort=False):
        covered = int(group["covered"].sum())
        low, high = binomtest(covered, len(group)).proportion_ci(0.95, method="exact")
        width = (group["high"] - group["low"]).to_numpy(np.float64)
        bounded = width[np.isfinite(width)]
        out.append({**dict(zip(by, key)), "predictions": len(group), "coverage": covered / len(group),
                    "ci_low": low, "ci_high": high,
                    "median_width": float(np.median(bounded)) if len(bounded) else np.nan,
                    "mean_width": float(bounded.mean()) if len(bounded) else np.nan,
                    "unbounded": 1 - len(bounded) / len(width)})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--metrics", type=int, default=504)
    parser.add_argument("--rho-max", type=float, default=0.95)
    parser.add_argument("--levels", type=float, nargs="+", default=[0.8, 0.9])
    parser.add_argument("--search", default=None, help="a finished search (the full demo's) for the second world")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-latent", action="store_true", help="only the search's world")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    draw, fixed = latent_world(np.random.default_rng(args.seed), args.models, args.metrics, args.rho_max)
    frames = [] if args.skip_latent else [replicate(draw, fixed, args.models, args.reps, args.levels, args.seed + 1,
                                                    "latent")]
    if args.search:
        from pregen_jax.pipeline.finished import FinishedSearch
        from pregen_jax.prediction.calibration_set import usable_models
        run = FinishedSearch.open(args.search)
        models = usable_models(run)
        for k, (post, chosen) in enumerate(run.chosen().items()):
            names = [n for n in run.correlations[post]["pregen"]
                     if n in models.columns and np.isfinite(models[n]).all() and np.ptp(models[n]) > 0]
            draw, fixed = search_world(models, names, post, chosen if chosen in names else names[0])
            frames.append(replicate(draw, fixed, args.models, args.reps // len(run.chosen()) + 1, args.levels,
                                    args.seed + 2 + k, f"search {post}"))
    rows = pd.concat(frames, ignore_index=True)
    pd.set_option("display.width", 200)
    fmt = {"float_format": lambda v: f"{v:.3f}", "index": False}
    print(f"{args.models} calibration models, {args.reps} replications" + ("" if args.skip_latent else
          f"; latent world: {args.metrics} candidate metrics, rho up to {args.rho_max}"))
    if not args.skip_latent:
        print(summary(rows[rows["world"] == "latent"], ["world", "level", "method"]).to_string(**fmt))
    if args.search:
        searched = rows[rows["world"] != "latent"].assign(world="search (all post-gen metrics)")
        print(summary(searched, ["world", "level", "method"]).to_string(**fmt))
        print(summary(rows[rows["world"] != "latent"], ["world", "level", "method"]).to_string(**fmt))
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
