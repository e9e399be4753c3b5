"""Ranking: Pearson against scipy, the exclusion rule, the 2018 table and the rank command."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pregen_jax import cli, ranking
from tests.conftest import shared


def test_pearson_matches_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4)) * [1, 1e6, 1e-6, 1]
    y = x[:, 0] * 0.3 + rng.normal(size=30)
    r, p = ranking.pearson(x, y)
    for c in range(4):
        want = stats.pearsonr(x[:, c], y)
        assert r[c] == pytest.approx(want.statistic, rel=1e-9)
        assert p[c] == pytest.approx(want.pvalue, rel=1e-6)


def toy_table():
    rng = np.random.default_rng(1)
    n = 12
    quality = rng.uniform(0, 1, n)
    return pd.DataFrame({
        "dataset": ["a"] * 6 + ["b"] * 6,
        "CIDEr": quality,
        "mean_max_normcount_prefix0": quality * 2 + rng.normal(0, 0.01, n),
        "mean_mean_pplx_none": 10 - quality * 5 + rng.normal(0, 0.5, n),
        "sum_sum_pplx_prefix0": np.where(np.arange(n) == 3, np.inf, quality),
        "max_max_count_none": np.where(np.arange(n) < 6, 5.0, quality),  # constant in group a
    })


def test_rank_orders_and_excludes_with_reasons():
    table = toy_table()
    pregen = ranking.pregen_columns(table)
    assert pregen == ["mean_max_normcount_prefix0", "mean_mean_pplx_none", "sum_sum_pplx_prefix0",
                      "max_max_count_none"]
    result = ranking.rank(table, ["CIDEr"], pregen, group_by="dataset")
    df = result.correlations["CIDEr"]
    assert df["pregen"].tolist() == ["mean_max_normcount_prefix0", "mean_mean_pplx_none"]
    assert list(df.columns) == ["pregen", "a_R^2", "a_R", "a_p", "b_R^2", "b_R", "b_p", "all_R^2", "all_R", "all_p"]
    assert df["all_R"].iloc[1] < 0  # sign ignored by the ranking, kept in R
    reasons = dict(zip(result.excluded["pregen"], result.excluded["reason"]))
    assert reasons == {"sum_sum_pplx_prefix0": "inf or NaN in group a", "max_max_count_none": "constant in group a"}


def test_a_nan_post_gen_row_is_left_out_of_that_metric_alone(tmp_path, capsys):
    """Issue 52: a stratum none of whose captions WMD can score is NaN; its row leaves WMD's
    correlations (noted), not WMD from the ranking, and stays in every other metric's."""
    table = toy_table()
    table["WMD"] = np.where(np.arange(12) == 4, np.nan, table["CIDEr"] ** 2)
    pregen = ranking.pregen_columns(table)
    result = ranking.rank(table, ["CIDEr", "WMD"], pregen, group_by="dataset")
    alone = ranking.rank(table.drop(index=4), ["WMD"], pregen, group_by="dataset")
    pd.testing.assert_frame_equal(result.correlations["WMD"], alone.correlations["WMD"])
    assert result.correlations["CIDEr"].equals(ranking.rank(table, ["CIDEr"], pregen, "dataset").correlations["CIDEr"])
    assert result.excluded_postgen == {} and list(result.rows_left_out) == ["WMD"]
    assert result.rows_left_out["WMD"].startswith("1 of 12 rows NaN")
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False, na_rep="nan")  # as table.tsv writes it
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out"), "--group-by", "dataset"]) == 0
    assert "note: WMD: 1 of 12 rows NaN" in capsys.readouterr().err
    excluded = pd.read_csv(tmp_path / "out" / "excluded.tsv", sep="\t")
    assert excluded[excluded["kind"] == "post-gen rows"]["name"].tolist() == ["WMD"]
    assert ranking.render.split_excluded(excluded)[3] == {"WMD": result.rows_left_out["WMD"]}


def test_rank_reproduces_2018_table():
    table = ranking.read_table(shared("pregen-metrics-2018", "data.txt"))
    result = ranking.rank(table, ["METEOR", "CIDEr", "SPICE", "WMD"], ranking.pregen_columns(table), "dataset")
    assert len(result.excluded) == 504 - 361
    best = {post: (df["pregen"].iloc[0], round(df["all_R^2"].iloc[0], 3)) for post, df in result.correlations.items()}
    assert best == {"METEOR": ("mean_max_normcount_prefix0", 0.965), "CIDEr": ("mean_max_normcount_prefix0", 0.937),
                    "SPICE": ("mean_max_normcount_prefix0", 0.950), "WMD": ("mean_max_normcount_prefix0", 0.954)}


def test_rank_command_writes_tables(tmp_path, capsys):
    path = tmp_path / "t.csv"
    toy_table().to_csv(path, index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out"), "--group-by", "dataset"]) == 0
    written = pd.read_csv(tmp_path / "out" / "correlations_CIDEr.tsv", sep="\t")
    assert written["pregen"].iloc[0] == "mean_max_normcount_prefix0"
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Tokenizer:" in summary and "left out 2" in summary
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == [".pregen-jax-output", "correlations_CIDEr.tsv", "excluded.tsv", "summary.md"]


@pytest.mark.parametrize("content, message", [
    ("", "empty file"),
    ("CIDEr,mean_max_normcount_prefix0\n", "no rows"),
    ("CIDEr,foo\n1,2\n2,3\n3,4\n", "no pre-gen columns"),
    ("CIDEr,mean_max_normcount_prefix0\n1,2\n2,oops\n3,4\n", "line 3: column .* 'oops', not a number"),
    ("x,mean_max_normcount_prefix0\n1,2\n2,3\n3,4\n", "no post-gen columns"),
])
def test_rank_command_bad_tables(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    out = tmp_path / "out"
    assert cli.main(["rank", "--table", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err
    import re
    assert re.search(message, err), err
    assert not out.exists() or not any(out.iterdir())


def test_rank_leaves_out_rows_whose_in_findings_is_false(tmp_path, capsys):
    """Issue 64: a table's own ``in_findings`` column (a search's models.tsv joined in) is read:
    its false rows are left out and said; ``--keep-all`` ranks them too."""
    table = toy_table().assign(architecture="a", run=np.repeat([1, 2, 3], 4), epoch="final")
    table["in_findings"] = np.where(table["run"] == 3, "False", "True")
    path = tmp_path / "t.tsv"
    table.to_csv(path, sep="\t", index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "left out 1 model(s), 4 rows" in capsys.readouterr().err
    kept = ranking.rank(toy_table().iloc[:8].reset_index(drop=True), ["CIDEr"], ranking.pregen_columns(table))
    written = pd.read_csv(tmp_path / "out" / "correlations_CIDEr.tsv", sep="\t")
    np.testing.assert_allclose(written["all_R^2"], kept.correlations["CIDEr"]["all_R^2"], atol=1e-9)
    assert "`a-3` (in_findings false)" in (tmp_path / "out" / "summary.md").read_text()
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "all"), "--keep-all"]) == 0
    every = ranking.rank(toy_table(), ["CIDEr"], ranking.pregen_columns(table))
    written = pd.read_csv(tmp_path / "all" / "correlations_CIDEr.tsv", sep="\t")
    np.testing.assert_allclose(written["all_R^2"], every.correlations["CIDEr"]["all_R^2"], atol=1e-9)
    table["in_findings"] = "maybe"
    table.to_csv(path, sep="\t", index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "bad")]) == 2
    assert "column 'in_findings' has 'maybe'" in capsys.readouterr().err


def test_filter0_semantics_are_named(tmp_path, capsys):
    """Issue 64: the 2018 table's filter0 keeps the positions that are NOT the top choice, a
    search's those that are; every ranking output says which, and a contradiction is an error."""
    from pregen_jax import tiers
    assert tiers.DEFAULT_SPACE.filter0 == "top-choice" and tiers.COMPAT_2018.filter0 == "not-top-choice"
    assert tiers.Space.from_names(filters=("none", "prefix0")).filter0 == "none"
    path = tmp_path / "t.csv"
    toy_table().assign(mean_max_count_filter0=np.arange(12.0)).to_csv(path, index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out"), "--filter0", "not-top-choice"]) == 0
    assert "(filter0: not-top-choice)" in capsys.readouterr().out
    written = pd.read_csv(tmp_path / "out" / "correlations_CIDEr.tsv", sep="\t")
    assert written["filter0"].eq("not-top-choice").all()
    assert "filter0: not-top-choice (filter0 keeps the positions whose true token is NOT" in (
        tmp_path / "out" / "summary.md").read_text()
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "unknown")]) == 0
    assert "does not say what its *_filter0 columns keep" in capsys.readouterr().err
    toy_table().assign(filter0="top-choice").to_csv(path, index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "bad"), "--filter0", "not-top-choice"]) == 2
    assert "says its filter0 is top-choice" in capsys.readouterr().err
