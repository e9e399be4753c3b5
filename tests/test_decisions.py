"""Model-level decisions: pairwise accuracy, tau-b, held-out selection, the paired bootstrap."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pregen_jax import ranking
from pregen_jax.ranking import decisions, render
from tests.conftest import shared

PPLX = "geomean_join_pplx_none"


def col(*values):
    return np.array(values, float)[:, None]


def test_perplexity_like_metric_is_right_after_the_sign_flip():
    quality = np.array([1.0, 2.0, 3.0, 4.0])
    perplexity = col(40, 30, 20, 10)
    assert decisions.pairwise_accuracy(perplexity, quality, [-1.0])[0] == 1.0
    assert decisions.pairwise_accuracy(perplexity, quality, [1.0])[0] == 0.0
    assert list(decisions.signs([-0.3, 0.0, 0.2, np.nan])) == [-1, 1, 1, 1]


def test_pregen_tie_counts_half_and_postgen_ties_are_left_out():
    quality = np.array([1.0, 2.0, 3.0, 4.0])
    # pair (0, 1) tied in pre-gen: 1/2; the other 5 pairs right.
    assert decisions.pairwise_accuracy(col(1, 1, 3, 4), quality, [1.0])[0] == pytest.approx(5.5 / 6)
    # pair (0, 1) tied in post-gen: not counted, though pre-gen orders it "wrong".
    agreement, pairs = decisions.pair_agreement(col(2, 1, 3, 4), np.array([1.0, 1, 3, 4]), [1.0])
    assert (agreement[0], pairs) == (5.0, 5)


def test_pair_mask_restricts_the_pairs():
    quality = np.array([1.0, 2.0, 3.0])
    pregen = col(1, 3, 2)  # pair (1, 2) wrong
    assert decisions.pairwise_accuracy(pregen, quality, [1.0])[0] == pytest.approx(2 / 3)
    mask = np.ones((3, 3), bool)
    mask[1, 2] = mask[2, 1] = False
    assert decisions.pairwise_accuracy(pregen, quality, [1.0], mask)[0] == 1.0
    assert np.isnan(decisions.pairwise_accuracy(pregen, quality, [1.0], np.zeros((3, 3), bool))[0])
    with pytest.raises(ValueError, match="pair mask"):
        decisions.pairwise_accuracy(pregen, quality, [1.0], np.ones((2, 2), bool))


def test_vectorised_over_columns():
    rng = np.random.default_rng(0)
    pregen = rng.integers(0, 4, (9, 5)).astype(float)
    quality = rng.integers(0, 5, 9).astype(float)
    sign = np.array([1.0, -1, 1, -1, 1])
    together = decisions.pairwise_accuracy(pregen, quality, sign)
    one_by_one = [decisions.pairwise_accuracy(pregen[:, [c]], quality, sign[[c]])[0] for c in range(5)]
    assert together == pytest.approx(one_by_one)


def test_kendall_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    pregen = np.column_stack([rng.integers(0, 4, 12), rng.normal(size=12), np.full(12, 2.0), np.arange(12)])
    quality = rng.integers(0, 6, 12).astype(float)
    tau = decisions.kendall_tau_b(pregen, quality)
    for c in range(4):
        want = stats.kendalltau(pregen[:, c], quality, variant="b").statistic
        assert tau[c] == pytest.approx(want, rel=1e-12) if np.isfinite(want) else np.isnan(tau[c])
    assert np.isnan(tau[2])  # a constant metric has no tau-b, as in scipy


def two_group_models():
    # Group a: 3 models, metric right on all 3 pairs. Group b: 4 models, one of 6 pairs wrong.
    # Across groups the metric is reversed (a's quality is higher, its metric lower): never compared.
    return pd.DataFrame({
        "dataset": ["a"] * 3 + ["b"] * 4,
        "num_strata": 1,
        "CIDEr": [11.0, 12, 13, 1, 2, 3, 4],
        "m": [1.0, 2, 3, 10, 20, 40, 30],
        PPLX: [3.0, 2, 1, 40, 30, 20, 10],
    })


def test_validate_models_pools_pairs_and_weights_tau():
    models = two_group_models()
    correlations = pd.DataFrame({"pregen": ["m", PPLX], "all_R": [-0.2, 0.1]})  # signs as given
    df = decisions.validate_models(models, correlations, "CIDEr", group_by="dataset").set_index("pregen")
    assert list(df.columns) == [f"{g}_{what}" for g in ("a", "b", "all")
                                for what in ("pairwise_accuracy", "kendall_tau", "models", "pairs")]
    m = df.loc["m"]  # oriented by the negative sign: a all wrong, b 1 right of 6
    assert (m["a_pairwise_accuracy"], m["b_pairwise_accuracy"]) == (0.0, pytest.approx(1 / 6))
    assert (m["a_models"], m["b_models"], m["all_models"]) == (3, 4, 7)
    assert (m["a_pairs"], m["b_pairs"], m["all_pairs"]) == (3, 6, 9)
    assert m["all_pairwise_accuracy"] == pytest.approx((0 + 1) / 9)
    tau_b = -stats.kendalltau(models["m"][3:], models["CIDEr"][3:]).statistic
    assert m["b_kendall_tau"] == pytest.approx(tau_b)
    assert m["all_kendall_tau"] == pytest.approx((-1.0 * 3 + tau_b * 6) / 9)
    p = df.loc[PPLX]  # positive sign given: perplexity all wrong
    assert p["all_pairwise_accuracy"] == 0.0
    assert df.index[0] == "m"  # sorted by pooled accuracy


def test_validate_models_without_groups_uses_all_pairs():
    models = two_group_models()
    correlations = pd.DataFrame({"pregen": ["m"], "all_R": [0.5]})
    df = decisions.validate_models(models, correlations, "CIDEr")
    assert list(df.columns) == ["pregen", "all_pairwise_accuracy", "all_kendall_tau", "all_models", "all_pairs"]
    assert df["all_pairs"][0] == 21
    assert df["all_kendall_tau"][0] == pytest.approx(stats.kendalltau(models["m"], models["CIDEr"]).statistic)


def strata_table():
    """3 groups x 4 models x (1 model row + 4 strata rows). Metric `a` tracks CIDEr in groups
    g1 and g2 and is noise in g3; `b` tracks it everywhere a little less tightly; perplexity
    falls as CIDEr rises."""
    rng = np.random.default_rng(3)
    rows = []
    for g, group in enumerate(["g1", "g2", "g3"]):
        for model in range(4):
            for num_strata, stratum in [(1, 0), (2, 0), (2, 1), (3, 0), (3, 2)]:
                quality = 10 * g + model + stratum * 3 + rng.uniform(0, 0.5)
                rows.append({
                    "dataset": group, "num_strata": num_strata, "stratum": stratum, "CIDEr": quality,
                    "mean_max_normcount_prefix0": rng.normal(0, 10) if group == "g3" else quality,
                    "mean_mean_prob_none": quality + rng.normal(0, 1.0),
                    PPLX: 100 - 2 * quality + rng.normal(0, 0.01),
                })
    return pd.DataFrame(rows)


def test_heldout_selection_picks_on_the_other_groups():
    table = strata_table()
    result = ranking.rank(table, ["CIDEr"], ranking.pregen_columns(table), group_by="dataset")
    df = decisions.heldout_selection(table, result.correlations["CIDEr"], "CIDEr", "dataset")
    assert list(df.columns) == ["held_out", "selected", "selection_R^2", "heldout_R^2", "heldout_pairwise_accuracy",
                                "baseline_heldout_R^2", "baseline_heldout_pairwise_accuracy"]
    # Perplexity fits best everywhere; leave it out of the candidates to see the choice.
    candidates = result.correlations["CIDEr"][lambda d: d["pregen"] != PPLX]
    df = decisions.heldout_selection(table, candidates, "CIDEr", "dataset").set_index("held_out")
    assert df["selected"].to_dict() == {"g1": "mean_mean_prob_none", "g2": "mean_mean_prob_none",
                                        "g3": "mean_max_normcount_prefix0"}
    g3 = table["dataset"] == "g3"
    chosen = stats.pearsonr(table.loc[~g3, "mean_max_normcount_prefix0"], table.loc[~g3, "CIDEr"]).statistic
    held = stats.pearsonr(table.loc[g3, "mean_max_normcount_prefix0"], table.loc[g3, "CIDEr"]).statistic
    assert df.loc["g3", "selection_R^2"] == pytest.approx(chosen ** 2)
    assert df.loc["g3", "heldout_R^2"] == pytest.approx(held ** 2)
    assert df.loc["g3", "heldout_R^2"] < 0.3 < 0.99 < df.loc["g3", "baseline_heldout_R^2"]
    # Perplexity's sign comes from the selection rows: it orders every held-out pair right.
    assert (df["baseline_heldout_pairwise_accuracy"] == 1.0).all()
    md = render.decisions_markdown({}, {"CIDEr": df.reset_index()}, {})
    assert ("Perplexity does as well as or better than the selected metric on held-out g1 "
            "(R^2 and pairwise accuracy)") in md


def test_group_r2_in_correlations_is_over_that_groups_strata_rows():
    table = strata_table()
    df = ranking.rank(table, ["CIDEr"], ranking.pregen_columns(table), group_by="dataset").correlations["CIDEr"]
    row = df.set_index("pregen").loc["mean_mean_prob_none"]
    for group in ["g1", "g2", "g3"]:
        rows = table["dataset"] == group
        want = stats.pearsonr(table.loc[rows, "mean_mean_prob_none"], table.loc[rows, "CIDEr"]).statistic ** 2
        assert row[f"{group}_R^2"] == pytest.approx(want)


def test_markdown_says_when_perplexity_is_as_good():
    models = two_group_models()
    correlations = pd.DataFrame({"pregen": ["m", PPLX], "all_R": [0.2, -0.1]})
    df = decisions.validate_models(models, correlations, "CIDEr", group_by="dataset")
    md = render.decisions_markdown({"CIDEr": df}, {}, {"CIDEr": "m"})
    assert "orders model pairs as well as or better than `m` in: a (1.000 vs 1.000), b (1.000 vs 0.833)" in md


def test_bootstrap_is_deterministic_and_matches_a_plain_loop():
    rng = np.random.default_rng(4)
    base = rng.uniform(0, 1, 200)
    scores = np.stack([base, base, base + 0.3 + rng.normal(0, 0.05, 200), base + rng.normal(0, 0.3, 200)])
    boot = decisions.paired_bootstrap(scores, resamples=1000, seed=7)
    again = decisions.paired_bootstrap(scores, resamples=1000, seed=7)
    np.testing.assert_array_equal(boot.p, again.p)
    assert boot.p[0, 1] == 1.0 and not boot.significant()[0, 1]  # identical scores
    assert boot.p[0, 2] == pytest.approx(1 / 1001) and boot.significant()[0, 2]  # clearly separated
    np.testing.assert_array_equal(boot.p, boot.p.T)
    assert (np.diag(boot.p) == 1).all()
    # The same draws, one resample at a time.
    draws = np.random.default_rng(7).integers(0, 200, size=(1000, 200))
    means = scores[:, draws].mean(-1)  # [M, B]
    d = scores.mean(1)[0] - scores.mean(1)[3]
    want = (1 + (np.abs(means[0] - means[3] - d) >= abs(d)).sum()) / 1001
    assert boot.p[0, 3] == pytest.approx(want)
    with pytest.raises(ValueError, match="per-image scores"):
        decisions.paired_bootstrap(scores[:, :1])


def test_accuracy_on_significant_pairs_only():
    rng = np.random.default_rng(5)
    base = rng.uniform(0, 1, 300)
    # Models 0 and 1 differ by noise only; model 2 is clearly better.
    scores = np.stack([base + rng.normal(0, 0.2, 300), base + rng.normal(0, 0.2, 300), base + 1.0])
    boot = decisions.paired_bootstrap(scores, seed=0)
    assert not boot.significant()[0, 1] and boot.significant()[0, 2] and boot.significant()[1, 2]
    quality = scores.mean(1)
    pregen = col(quality[1], quality[0], quality[2])  # the noisy pair misordered
    assert decisions.pairwise_accuracy(pregen, quality, [1.0])[0] == pytest.approx(2 / 3)
    assert decisions.pairwise_accuracy(pregen, quality, [1.0], boot.significant())[0] == 1.0


def test_2018_table_decisions():
    table = ranking.read_table(shared("pregen-metrics-2018", "data.txt"))
    result = ranking.rank(table, ["CIDEr"], ranking.pregen_columns(table), "dataset")
    models, heldout = decisions.decision_tables(table, result.correlations, "dataset")
    df = models["CIDEr"].set_index("pregen")
    winner, pplx = df.loc["mean_max_normcount_prefix0"], df.loc[PPLX]
    assert round(winner["all_pairwise_accuracy"], 2) == 0.51 and round(winner["flickr30k_pairwise_accuracy"], 2) == 0.26
    assert round(pplx["all_pairwise_accuracy"], 2) == 0.62
    assert (winner["all_models"], winner["all_pairs"]) == (36, 198)
    held = heldout["CIDEr"]
    assert round(held["heldout_R^2"].min(), 2) == 0.82 and round(held["heldout_R^2"].max(), 2) == 0.98


def test_rank_command_writes_decision_tables(tmp_path):
    from pregen_jax import cli

    path = tmp_path / "t.tsv"
    strata_table().to_csv(path, sep="\t", index=False)
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out"), "--group-by", "dataset"]) == 0
    models = pd.read_csv(tmp_path / "out" / "models_CIDEr.tsv", sep="\t")
    heldout = pd.read_csv(tmp_path / "out" / "heldout_CIDEr.tsv", sep="\t")
    assert models["all_models"].iloc[0] == 12 and "tokenizer" in models.columns
    assert list(heldout["held_out"]) == ["g1", "g2", "g3"]
    assert "# Does the metric pick the better model?" in (tmp_path / "out" / "decisions.md").read_text()


def test_the_report_says_what_few_models_can_show():
    """Issue 64: beside model-level findings, how many pairs the test had and the fewest a metric
    must order right for Kendall's tau to differ from 0 (exact, two-sided, 5%)."""
    from pregen_jax.pipeline.model_level import what_pairs_can_show
    assert "cannot be told from chance" in what_pairs_can_show(4)  # 6 pairs: even tau = 1 has p = 0.083
    five = what_pairs_can_show(5)
    assert "5 models, so 10 pairs" in five and "at least 10 of the 10 pairs" in five
    ten = what_pairs_can_show(10)
    assert "at least 34 of the 45 pairs" in ten
    from pregen_jax.pipeline.model_level import _with_inversions
    for wrong, significant in ((11, True), (12, False)):  # 34 of 45 right is significant, 33 is not
        order = _with_inversions(10, wrong)
        assert sum(a > b for i, a in enumerate(order) for b in order[i + 1:]) == wrong
        assert (stats.kendalltau(range(10), order, method="exact").pvalue < 0.05) == significant
