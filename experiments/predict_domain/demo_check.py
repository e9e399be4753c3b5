"""`predict` on a finished search (the full demo's): coverage on exchangeable held-out models, the domain
rule's false flags, and the README's noise models.

    python experiments/predict_domain/demo_check.py --search runs/demo [--level 0.9] [--strengths 0.5 1 2 3 4]
        [--skip-held-out] [--skip-pairs]

1. **Held-out models.** Every model of the search, and every pair, is left out in turn; the rest
   calibrate and the held-out models are predicted for every post-gen metric, the metric chosen
   among the search's ranked metrics inside every fit, by full conformal (what `predict` ships)
   and by jackknife+ with the choice refitted on each n - 1 set (``interval_methods``). The
   models are exchangeable with each other by construction of the draw (a random one is held
   out), which is the guarantee's premise. Coverage with its Clopper-Pearson 95% interval,
   median width, share unbounded (jackknife+ needs 19 calibration models at 0.90). For full
   conformal also the coverage among the rows ``predict`` would print (not withheld beyond the
   domain, the threshold refitted on the calibrating models) and among those not flagged either:
   the guarantee is marginal, so it is not promised there; this measures it.
2. **False flags.** ``domain.loo_flag_rate`` on the calibration models' axes: each model left
   out, the threshold refitted on the others, flagged or not.
3. **Noise models.** The README's recipe (random next-token scores, the true token favoured by
   ``strength``), fingerprinted with the search's references, through ``predict_scores``: each
   row withheld (beyond the domain on its own metric), none (no number: ``why`` says why), flagged
   or ordinary.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interval_methods import METHODS  # noqa: E402

from pregen_jax import RefProbs  # noqa: E402
from pregen_jax.pipeline.finished import FinishedSearch  # noqa: E402
from pregen_jax.prediction import calibration_set, conformal, domain, predict_scores  # noqa: E402

SHIPPED = ["full conformal, choice in each fit", "jackknife+, choice in each fit"]


def held_out(cal, out: int, level: float) -> pd.DataFrame:
    """One row per (held-out set of ``out`` models, held-out model, post-gen metric, method), with whether
    ``predict`` would print the full conformal row (``printed``: not withheld beyond the domain on its own
    metric; ``ordinary``: printed and not flagged on another axis), the domain's threshold refitted on the
    models that calibrate."""
    rows = []
    models = cal.models
    axes_x = models[cal.axes].to_numpy(np.float64)
    for left in itertools.combinations(range(len(models)), out):
        keep = np.setdiff1d(np.arange(len(models)), left)
        threshold = domain.domain_threshold(axes_x[keep])
        for post, names in cal.candidates.items():
            x, y = models[names].to_numpy(np.float64), models[post].to_numpy(np.float64)
            for i in left:
                made = conformal.conformal_interval(x[keep], y[keep], x[i], level)
                own = x[keep][:, made.chosen][:, None]
                withheld = domain.place(own, x[i, [made.chosen]], ["own"], threshold).flagged()
                flagged = domain.place(axes_x[keep], axes_x[i], cal.axes, threshold).flagged()
                for method in SHIPPED:
                    if method == SHIPPED[0]:
                        low, high, covered = made.low, made.high, made.covers(y[i])
                    else:
                        low, high = METHODS[method](x[keep], y[keep], x[i], level, None)
                        covered = bool(low <= y[i] <= high)
                    rows.append({"out": out, "model": i, "postgen": post, "method": method, "low": low,
                                 "high": high, "covered": covered, "pieces": len(made.pieces),
                                 "printed": not withheld, "ordinary": not withheld and not flagged})
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    out = []
    for key, group in rows.groupby(by, sort=False):
        covered = int(group["covered"].sum())
        low, high = binomtest(covered, len(group)).proportion_ci(0.95, method="exact")
        width = (group["high"] - group["low"]).to_numpy(np.float64)
        bounded = width[np.isfinite(width)]
        out.append({**dict(zip(by, key)), "predictions": len(group), "covered": covered,
                    "coverage": covered / len(group), "ci_low": low, "ci_high": high,
                    "median_width": float(np.median(bounded)) if len(bounded) else np.nan,
                    "unbounded": 1 - len(bounded) / len(width)})
    return pd.DataFrame(out)


def noise_model(run: FinishedSearch, strength: float, seed: int) -> RefProbs:
    """The README's recipe on the search's references: normal scores, the true token's raised by ``strength``."""
    rng = np.random.default_rng(seed)
    vocabulary = 50  # token 0 ends a caption
    targets = [[[*rng.integers(1, vocabulary, length - 1), 0] for length in image if length]
               for image in run.reference_lengths]
    logits = [[rng.normal(size=(len(ids), vocabulary)) + strength * np.eye(vocabulary)[ids] for ids in refs]
              for refs in targets]
    made = RefProbs.from_log_probs(logits, targets, logits=True)
    return RefProbs(made.probs, made.ranks, made.mask, references=run.references)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", required=True)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--strengths", type=float, nargs="+", default=[0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])
    parser.add_argument("--out", default="runs/predict_domain", help="folder for the noise models' files")
    parser.add_argument("--skip-held-out", action="store_true")
    parser.add_argument("--skip-pairs", action="store_true", help="hold out one model at a time only")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    run = FinishedSearch.open(args.search)
    cal = calibration_set(run, None, args.level)
    print(cal.describe())
    fmt = {"float_format": lambda v: f"{v:.3f}", "index": False}
    pd.set_option("display.width", 200)
    if not args.skip_held_out:
        rows = pd.concat([held_out(cal, out, args.level) for out in ((1,) if args.skip_pairs else (1, 2))],
                         ignore_index=True)
        print(summary(rows, ["out", "method"]).to_string(**fmt))
        print(summary(rows, ["out", "method", "postgen"]).to_string(**fmt))
        conformal_rows = rows[rows["method"] == SHIPPED[0]]
        print("full conformal, coverage among the rows predict prints (marginal guarantee: not promised there)")
        print(summary(conformal_rows.assign(rows="all"), ["out", "rows"]).to_string(**fmt))
        print(summary(conformal_rows[conformal_rows["printed"]].assign(rows="printed"), ["out", "rows"])
              .to_string(**fmt))
        print(summary(conformal_rows[conformal_rows["ordinary"]].assign(rows="printed, not flagged"), ["out", "rows"])
              .to_string(**fmt))
        print(f"sets with islands: {(conformal_rows['pieces'] > 1).sum()} of {len(conformal_rows)}")
    flagged, n = domain.loo_flag_rate(cal.models[cal.axes].to_numpy(np.float64))
    print(f"false flags, each calibration model left out in turn: {flagged} of {n} ({flagged / n:.2f})")
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, strength in enumerate(args.strengths):
        path = folder / f"noise-{strength:g}.npz"
        noise_model(run, strength, k).save(path)
        paths.append(str(path))
    scores = predict_scores(run, paths, calibration=cal)
    p = scores.predictions
    flagged = p["flag"].fillna("") != ""
    kind = np.where(p["status"].isin(["withheld", "none"]), p["status"], np.where(flagged, "flagged", "ordinary"))
    shown = p.assign(kind=kind)[["model", "perplexity", "postgen", "predictor", "kind", "predicted", "set", "flag",
                                 "why", "note"]]
    pd.set_option("display.max_colwidth", 90)
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(pd.Series(kind).value_counts().to_string())
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
