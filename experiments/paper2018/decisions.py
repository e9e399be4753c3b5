"""Does the 2018 winner pick the better model? Model-level checks on the 2018 table.

    python3 experiments/paper2018/decisions.py [--out runs/paper2018-decisions]

Reads ../shared/data/pregen-metrics-2018/data.txt (36 models x 15 strata; the 36 rows with
num_strata == 1 are the models, 12 per dataset), ranks all pre-gen metrics against METEOR,
CIDEr, SPICE and WMD by dataset as `pregen-search rank --group-by dataset` does, then prints
for CIDEr the pairwise accuracy and Kendall tau-b of the 2018 winner and of perplexity per
dataset and pooled, and the leave-one-dataset-out table for every post-gen metric. With
--out it also writes decisions.md and the models_/heldout_ tables there.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pregen_jax import io, ranking
from pregen_jax.ranking import decisions, render

TABLE = io.shared_data("pregen-metrics-2018", "data.txt")
WINNER = "mean_max_normcount_prefix0"
POSTGEN = ["METEOR", "CIDEr", "SPICE", "WMD"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--out", default=None, help="also write the decision tables and decisions.md here")
    args = parser.parse_args(argv)
    if not Path(args.table).is_file():
        print(f"skipped: {args.table} not found (see ../shared/data/README.md)")
        return 0
    table = ranking.read_table(args.table)
    result = ranking.rank(table, POSTGEN, ranking.pregen_columns(table), group_by="dataset")
    models, heldout = decisions.decision_tables(table, result.correlations, "dataset")

    cider = models["CIDEr"].set_index("pregen")
    groups = [c[: -len("_pairwise_accuracy")] for c in cider.columns if c.endswith("_pairwise_accuracy")]
    print("CIDEr, model rows (pairs of models within a dataset whose CIDEr differs):")
    print(f"  {'metric':30s} " + " ".join(f"{g:>20s}" for g in groups))
    for name in (WINNER, ranking.PERPLEXITY_BASELINE):
        row = cider.loc[name]
        cells = [f"acc {row[f'{g}_pairwise_accuracy']:.3f} tau {row[f'{g}_kendall_tau']:+.3f}" for g in groups]
        print(f"  {name:30s} " + " ".join(f"{c:>20s}" for c in cells))
    print(f"  pairs per dataset {int(cider[f'{groups[0]}_pairs'].iloc[0])}, pooled {int(cider['all_pairs'].iloc[0])}")
    best = models["CIDEr"].iloc[0]
    print(f"  highest pooled accuracy: {best['pregen']} {best['all_pairwise_accuracy']:.3f}")

    for post, df in heldout.items():
        print(f"\n{post}, leave one dataset out (choose by R^2 on the other two, measure on the third):")
        print(df.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if args.out:
        chosen = {post: df["pregen"].iloc[0] for post, df in result.correlations.items()}
        outputs = {**{f"models_{post}.tsv": df for post, df in models.items()},
                   **{f"heldout_{post}.tsv": df for post, df in heldout.items()},
                   "decisions.md": render.decisions_markdown(models, heldout, chosen)}
        with io.staged_folder(args.out) as staging:
            ranking.write_files(staging, outputs, "2018 study's own (lower-cased alphanumeric tokens)")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
