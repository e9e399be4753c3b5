"""Do `predict`'s intervals cover held-out models' real scores? Leave one family out.

    python experiments/paper2018/predict_coverage.py [--search runs/demo] [--level 0.8]

For each architecture (a model family) in turn, `predict`'s calibration is fitted on the other
families' models and predicts each held-out model's post-gen score with its full conformal
interval (``prediction.conformal``): from the 2018 winner ``mean_max_normcount_prefix0`` (fixed),
with ``--search`` from the metric chosen among the search's ranked metrics inside every fit (as
`predict` does), and from perplexity ``geomean_join_pplx_none``. Each held-out model is placed
against the calibration models' domain (``prediction.domain``: perplexity and the predictor's
metric, the threshold from the calibration models): beyond it on the predictor's own metric
`predict` gives no prediction ("withheld"), beyond it on perplexity only it flags the row.
Reported: covered / predicted (withheld ones apart, with whether the interval computed anyway
would have covered them) with its Clopper-Pearson 95% interval, per post-gen metric and pooled.

Models: the 2018 table's 12 models of each dataset (Flickr8k = the where-image2 models, Flickr30k,
MSCOCO; 4 architectures x 3 runs; calibration on 9, so at most level 9/10), and with ``--search``
a finished search's models (the demo's). Leaving a family out is harder than the guarantee's
premise (a held-out family is not exchangeable with the others), so coverage below the level is
possible and is what this measures. The pooled counts share models across post-gen metrics:
their intervals treat them as independent, which they are not.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from pregen_jax import io, ranking
from pregen_jax.prediction import conformal, domain
from pregen_jax.prediction.calibration_set import usable_models
from pregen_jax.ranking import decisions

TABLE = io.shared_data("pregen-metrics-2018", "data.txt")
WINNER, PERPLEXITY = "mean_max_normcount_prefix0", "geomean_join_pplx_none"
POSTGEN = ["METEOR", "CIDEr", "SPICE", "WMD"]


def coverage_by_family(models: pd.DataFrame, candidates: list[str], post: str, level: float) -> pd.DataFrame:
    """Leave each architecture out: one row per held-out model (``side``: inside, or where `predict` withholds
    it; ``flagged``: beyond the domain on perplexity; ``low``, ``high``, ``covered``)."""
    rows = []
    for held_out, group in models.groupby("architecture", sort=False):
        train = models[models["architecture"] != held_out]
        y = train[post].to_numpy(np.float64)
        x = train[candidates].to_numpy(np.float64)
        for _, row in group.iterrows():
            x_new = row[candidates].to_numpy(np.float64)
            made = conformal.conformal_interval(x, y, x_new, level)
            metric = candidates[made.chosen]
            axes = list(dict.fromkeys([PERPLEXITY, metric]))
            placement = domain.place(train[axes].to_numpy(np.float64), row[axes].to_numpy(np.float64), axes)
            actual = float(row[post])
            covered = made.covers(actual)
            withheld = placement.flagged(metric)
            rows.append({"family": held_out, "pregen": metric, "postgen": post, "calibration_models": len(train),
                         "side": placement.sides[axes.index(metric)] if withheld else "inside",
                         "flagged": placement.flagged(), "low": made.low, "high": made.high, "actual": actual,
                         "covered": None if withheld else covered, "covered_if_extrapolated": covered})
    return pd.DataFrame(rows)


def held_out_predictions(models: pd.DataFrame, candidates: dict[str, list[str]], level: float,
                         source: str) -> pd.DataFrame:
    """One row per (post-gen metric, predictor, held-out model): see ``coverage_by_family``."""
    frames = []
    for post, names in candidates.items():
        for predictor, metrics in (("chosen", names), ("perplexity", [PERPLEXITY])):
            frame = coverage_by_family(models, metrics, post, level)
            frames.append(frame.assign(source=source, predictor=predictor))
    return pd.concat(frames, ignore_index=True)


def summary(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """covered / predicted with the Clopper-Pearson 95% interval; models outside the range apart."""
    out = []
    for key, group in rows.groupby(by, sort=False):
        inside = group[group["side"] == "inside"]
        covered = int(inside["covered"].astype(bool).sum())
        low, high = (binomtest(covered, len(inside)).proportion_ci(0.95, method="exact") if len(inside)
                     else (float("nan"), float("nan")))
        outside = group[group["side"] != "inside"]
        out.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "predicted": len(inside),
                    "covered": covered, "coverage": covered / len(inside) if len(inside) else float("nan"),
                    "ci_low": low, "ci_high": high, "outside_range": len(outside),
                    "outside_would_cover": int(outside["covered_if_extrapolated"].sum()),
                    "flagged": int(inside["flagged"].sum()),
                    "unflagged_coverage": float(inside.loc[~inside["flagged"].astype(bool), "covered"].astype(bool).mean()),
                    "median_width": float((inside["high"] - inside["low"]).median())})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--search", default=None, help="a finished search's run folder (the demo's) to add")
    parser.add_argument("--level", type=float, default=0.8, help="the intervals' level (default 0.8)")
    args = parser.parse_args(argv)
    frames = []
    if Path(args.table).is_file():
        table = decisions.model_rows(ranking.read_table(args.table))
        for dataset, models in table.groupby("dataset", sort=False):
            frames.append(held_out_predictions(models.reset_index(drop=True), dict.fromkeys(POSTGEN, [WINNER]),
                                               args.level, f"2018 {dataset}"))
    else:
        print(f"skipped the 2018 table: {args.table} not found (see ../shared/data/README.md)")
    if args.search:
        from pregen_jax.pipeline.finished import FinishedSearch
        run = FinishedSearch.open(args.search)
        models = usable_models(run)
        candidates = {post: [n for n in df["pregen"] if n in models.columns and np.ptp(models[n]) > 0]
                      for post, df in run.correlations.items()}
        frames.append(held_out_predictions(models, candidates, args.level, f"search {run.folder.name}"))
    if not frames:
        return 0
    rows = pd.concat(frames, ignore_index=True)
    pd.set_option("display.width", 200)
    print(f"full conformal at level {args.level}, leaving one architecture out at a time")
    print(summary(rows, ["source", "predictor", "postgen"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    print(summary(rows, ["source", "predictor"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print()
    print(summary(rows, ["predictor"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
