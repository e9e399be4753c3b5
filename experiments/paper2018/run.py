"""Reproduce the 2018 pre-gen ranking from the shared table.

    python experiments/paper2018/run.py --out runs/paper2018

Reads ../shared/data/pregen-metrics-2018/data.txt, ranks all 504 pre-gen metrics against
METEOR, CIDEr, SPICE and WMD per dataset group (mscoco, flickr30k, flickr8k) and over all
540 rows, exactly as `pregen-search rank --group-by dataset` does, and prints the top 5 per
post-gen metric with the R^2 of the best metric and of the perplexity baseline.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pregen_jax import io, ranking

TABLE = io.shared_data("pregen-metrics-2018", "data.txt")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(TABLE))
    parser.add_argument("--out", default="runs/paper2018")
    args = parser.parse_args(argv)
    if not Path(args.table).is_file():
        print(f"skipped: {args.table} not found (see ../shared/data/README.md)")
        return 0
    table = ranking.read_table(args.table)
    pregen = ranking.pregen_columns(table)
    result = ranking.rank(table, ["METEOR", "CIDEr", "SPICE", "WMD"], pregen, group_by="dataset")
    with io.staged_folder(args.out) as staging:
        ranking.write_ranking(result, staging, "2018 study's own (lower-cased alphanumeric tokens)", args.table,
                              filter0="not-top-choice")  # the 2018 code's filter0 (the spec)
    print(f"{len(pregen)} pre-gen metrics, {len(result.excluded)} left out, "
          f"{len(pregen) - len(result.excluded)} ranked over {len(table)} data points")
    for post, df in result.correlations.items():
        base = df.loc[df["pregen"] == ranking.PERPLEXITY_BASELINE, "all_R^2"]
        print(f"\n{post}: baseline {ranking.PERPLEXITY_BASELINE} R^2 = {base.iloc[0]:.3f}")
        for i, row in df.head(5).iterrows():
            print(f"  {i + 1}. {row['pregen']:32s} R^2 = {row['all_R^2']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
