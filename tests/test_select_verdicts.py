"""One verdict (issue 57): every answer of ``select`` on a grid of races keeps the agreement rules of
``ranking.verdicts`` (first line, later lines, select.tsv's statuses, the RaceResult), and the rules
catch an answer that breaks them."""
import numpy as np
import pandas as pd
import pytest

from pregen_jax.commands.select_summary import summary_lines
from pregen_jax.ranking import verdicts
from pregen_jax.ranking.racing import RaceSettings, race_table
from pregen_jax.selection.race import Selection


def _skewed(means, images, seed):
    rng = np.random.default_rng(seed)
    hard = rng.gamma(0.6, 1.0, images)
    rows = [np.clip(hard * rng.gamma(2.0, 0.5, images), 0, 10) for _ in means]
    return np.stack([np.clip(row * mean / row.mean(), 0, 10) for row, mean in zip(rows, means)])


def _answer(result, settings):
    table = pd.concat([pd.DataFrame({"architecture": "m", "run": [str(c) for c in range(len(result.table))],
                                     "epoch": ""}), result.table.drop(columns=["candidate"])], axis=1)
    selection = Selection(result, "CIDEr", {"generate": 0.0, "score": 0.1}, settings)
    return table, summary_lines(table, selection, 1.0, "images", verbose=False), summary_lines(
        table, selection, 1.0, "images")


GRID = {"two apart": [1.0, 0.6], "two close": [1.0, 0.99], "four mixed": [1.0, 0.97, 0.7, 0.5],
        "three equal": [1.0, 1.0, 1.0]}


@pytest.mark.parametrize("name", GRID)
def test_every_answer_of_a_grid_keeps_one_verdict(name):
    matrix = _skewed(GRID[name], 300, 1)
    seen = set()
    for budget, within, seed in ((0.1, None, 0), (0.4, 0.3, 1), (1.0, None, 2), (1.0, 0.05, 3)):
        settings = RaceSettings(budget=budget, seed=seed, within=within)
        result = race_table(matrix, settings)
        table, short, full = _answer(result, settings)
        assert verdicts.agreement_errors(result, table, short, within) == [], (budget, within, seed, short)
        assert verdicts.agreement_errors(result, table, full, within, verbose=True) == []
        seen.add(verdicts.verdict(result))
    exact = verdicts.exact_result(matrix)
    table, short, _ = _answer(exact, RaceSettings(budget=1.0))
    assert verdicts.agreement_errors(exact, table, short) == [] and verdicts.verdict(exact) == verdicts.EXACT
    if name in ("two close", "three equal"):  # the full budget's race ran to every image: exact, not stopped early
        assert verdicts.EXACT in seen, seen


def test_the_rules_catch_an_answer_that_contradicts_itself():
    matrix = _skewed([1.0, 0.99, 0.98], 300, 2)
    settings = RaceSettings(budget=0.1, seed=0)
    result = race_table(matrix, settings)
    table, short, _ = _answer(result, settings)
    assert verdicts.verdict(result) == verdicts.NOT_SEPARATED and verdicts.agreement_errors(result, table, short) == []
    said = verdicts.agreement_errors(result, table, ["separated: " + short[0], *short[1:]])
    assert any("first line" in e for e in said)
    wrong = table.copy()
    wrong.loc[result.not_separated[0], "status"] = "dropped in round 1"
    assert any("not separated" in e for e in verdicts.agreement_errors(result, wrong, short))
    assert verdicts.agreement_errors(result, table, short + ["stopped early: the pick was shown within"]) != []
    assert verdicts.agreement_errors(result, table, short * 3) != []  # more than 6 lines
    other = f"at most {result.within + 0.01:.4f} "  # a first line whose W is not the race's
    assert any("within" in e for e in verdicts.agreement_errors(
        result, table, [short[0].replace(f"at most {result.within:.4f} ", other), *short[1:]]))


def test_the_paired_line_prints_the_picks_lead_not_the_others_minus_the_pick():
    # select.tsv's diff is each model minus the pick (evaluate's); beside "not shown better than X"
    # the line must give the pick's lead over X, so a pick that is best on these images reads +, not -
    from types import SimpleNamespace

    from pregen_jax.commands.select_summary import paired_line
    table = pd.DataFrame({"architecture": "m", "run": ["0", "1", "2"], "epoch": ""})
    paired = pd.DataFrame({"diff": [np.nan, -0.02, -0.3], "diff_low": [np.nan, -0.05, -0.4],
                           "diff_high": [np.nan, 0.01, -0.2], "better": [False, False, True]})
    line = paired_line(table, SimpleNamespace(paired=paired))
    assert "better than 1 of 2" in line and "(+0.0200 [-0.0100, +0.0500])" in line and "-0.0200" not in line


def test_a_race_that_drew_the_whole_split_says_the_picks_score_is_exact():
    # one model dropped early, the two close ones drawn to the last image: not exact (the dropped one has
    # fewer images), but the pick's score is every image's, so no "estimated from" and no interval
    matrix = _skewed([1.0, 0.98, 0.3], 300, 1)
    settings = RaceSettings(budget=1.0, seed=0)
    result = race_table(matrix, settings)
    assert not result.exact and result.table["images_scored"][result.picked] == 300
    table, short, _ = _answer(result, settings)
    assert "on all 300 images (its score exact on these images)" in short[0] and "estimated" not in short[0]
    assert verdicts.agreement_errors(result, table, short) == []
