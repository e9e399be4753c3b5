"""Issue 57: does any answer of ``select`` on the races of issue 48's grids break the agreement rules?

    python3 experiments/select_exact/agreement.py [--races 30] [--out DIR]

Every race of each grid of ``race_power.grids`` (and the two-model pairs of ``study.py``) at a few
settings (10%; 25% with ``--within 0.1``; 100%), answered as ``select`` answers it
(``commands.select_summary.summary_lines``, short and verbose), checked by
``ranking.verdicts.agreement_errors``; prints the count of answers and of those that break a rule.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "model_selection"))

import race_power

from pregen_jax.commands.select_summary import summary_lines
from pregen_jax.ranking import racing, verdicts
from pregen_jax.selection.race import Selection

SETTINGS = ((0.1, None), (0.25, 0.1), (1.0, None))


def answer_errors(matrix, score_range, prior, budget, within, seed) -> tuple[list[str], str]:
    """(the rules an answer of one race breaks, [] when it keeps them all; its verdict)."""
    settings = racing.RaceSettings(budget=budget, within=within, seed=seed)
    result = racing.race_table(matrix, settings, prior, score_range=score_range)
    table = pd.concat([pd.DataFrame({"architecture": "m", "run": [str(c) for c in range(len(matrix))], "epoch": ""}),
                       result.table.drop(columns=["candidate"])], axis=1)
    selection = Selection(result, "CIDEr", {"generate": 0.0, "score": 0.0}, settings)
    short = summary_lines(table, selection, 1.0, "images", verbose=False)
    full = summary_lines(table, selection, 1.0, "images")
    return (verdicts.agreement_errors(result, table, short, within)
            + verdicts.agreement_errors(result, table, full, within, verbose=True)), verdicts.verdict(result)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    found = race_power.grids(None)
    best = found["where-image2"][0][np.argmax(found["where-image2"][0].mean(1))]
    high = found["where-image2"][2]
    found["pair, 0.2 apart"] = (np.stack([best, best * (1 - 0.2 / best.mean())]), None, high, None)
    found["pair, equal"] = (np.stack([best, np.roll(best, 83)]), None, high, None)
    rows = []
    for name, (matrix, _, score_range, prior) in found.items():
        for budget, within in SETTINGS:
            broken, verdict_counts = [], {}
            for seed in range(args.races):
                errors, said = answer_errors(matrix, score_range, prior, budget, within, seed)
                broken += [f"seed {seed}: {e}" for e in errors]
                verdict_counts[said] = verdict_counts.get(said, 0) + 1
            rows.append({"grid": name, "budget": budget, "within": within, "races": args.races,
                         "answers_breaking_a_rule": len({b.split(":")[0] for b in broken}),
                         "verdicts": ", ".join(f"{v} {n}" for v, n in sorted(verdict_counts.items())),
                         "first": broken[0] if broken else ""})
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out / "agreement.tsv", sep="\t", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
