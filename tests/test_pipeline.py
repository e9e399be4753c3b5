"""`pregen-search run` and `demo`: outputs, caching, resuming, and bad input."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from pregen_jax import cli, postgen, tiers
from pregen_jax.pipeline import SearchConfig, run_search
from tests.builders import training_config, write_config, write_precomputed, write_training_corpus


def run(config_path, out, *options):
    return cli.main(["run", "--config", str(config_path), "--out", str(out), "--no-progress", *options])


def test_run_with_precomputed_models(tmp_path):
    out = tmp_path / "out"
    assert run(write_precomputed(tmp_path), out) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 3 * 15
    expected = ["dataset", "architecture", "run", "epoch", "num_strata", "stratum", "CIDEr", "WMD", "ROUGE_L",
                *tiers.DEFAULT_SPACE.names, "vocabulary", "units", "tokenizer", "filter0"]
    assert list(table.columns) == expected
    assert table["filter0"].eq("top-choice").all()  # issue 64: the filter0 semantics, named
    assert table["tokenizer"].eq("ptb").all()  # new searches score with COCO's tokenizer (issue 40 item 3)
    assert table["vocabulary"].eq("unknown").all() and table["units"].eq("word").all()  # precomputed: words
    for name in ("correlations_CIDEr.tsv", "correlations_WMD.tsv", "report.md", "summary.md", "config.toml",
                 "plot_best_CIDEr.png", "excluded.tsv"):
        assert (out / name).is_file(), name
    correlations = pd.read_csv(out / "correlations_CIDEr.tsv", sep="\t")
    assert list(correlations.columns[:4]) == ["pregen", "all_R^2", "all_R", "all_p"]
    assert correlations["filter0"].eq("top-choice").all()
    report = (out / "report.md").read_text()
    assert "504 pre-gen metrics (filter0 top-choice)" in report and "filter0: top-choice (filter0 keeps" in report
    assert "summed over the models and over the threads" in report  # issue 64: the time table explained
    assert "Tokenizer (all scores): ptb" in report and "## Time per stage" in report
    assert SearchConfig.load(out / "config.toml").precomputed[2].architecture == "par"
    # Per-stratum post-gen scores are those of the block alone.
    whole = table[(table["architecture"] == "init") & (table["num_strata"] == 1)]["CIDEr"].iloc[0]
    doc = json.loads((tmp_path / "dataset_toy.json").read_text())
    gts = {im["filename"]: [" ".join(s["raw"].split()) for s in im["sentences"]] for im in doc["images"][:12]}
    res = {f"{n}.jpg": [line] for n, line in enumerate((tmp_path / "model0.txt").read_text().splitlines())}
    assert whole == pytest.approx(postgen.CIDEr().compute_score(gts, res)[0], rel=1e-6)


def test_degenerate_models_stay_in_the_table_and_out_of_the_findings(tmp_path):
    from pregen_jax.pipeline.finished import FinishedSearch
    config_path = write_precomputed(tmp_path, models=4)
    (tmp_path / "model3.txt").write_text("ball ball ball ball\n" * 12)  # a word three times in a row: degenerate
    out = tmp_path / "out"
    assert run(config_path, out) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 4 * 15  # every model's rows
    models = pd.read_csv(out / "models.tsv", sep="\t", keep_default_na=False)
    flagged = models["flag"] != ""
    assert flagged.iloc[3] and (~flagged).sum() >= 2  # init-2, and maybe a random one (its 4 random words)
    assert models["in_findings"].tolist() == (~flagged).tolist()
    finished = FinishedSearch.open(out)
    labels = [m.label for m in finished.models]
    left_out = [label for label, flag in zip(labels, flagged) if flag]
    assert list(finished.left_out) == left_out and "degenerate" in finished.left_out["init-2"]
    assert len(finished.model_rows) == len(labels) - len(left_out)  # what `score` calibrates on
    # The ranking is that of the other models' rows alone.
    kept_ids = {(m.architecture, str(m.run)) for m in finished.models if m.label not in left_out}
    kept = table[[(a, str(r)) in kept_ids for a, r in zip(table["architecture"], table["run"])]]
    from pregen_jax import ranking
    alone = ranking.rank(kept.reset_index(drop=True), ["CIDEr", "WMD", "ROUGE_L"], list(tiers.DEFAULT_SPACE.names))
    expected = alone.correlations["CIDEr"]
    found = pd.read_csv(out / "correlations_CIDEr.tsv", sep="\t")
    assert found["pregen"].tolist() == expected["pregen"].tolist()
    np.testing.assert_allclose(found["all_R^2"], expected["all_R^2"], atol=1e-9)  # the TSV keeps 10 digits
    report = (out / "report.md").read_text()
    assert f"rest on the other {len(kept_ids)} models" in report and "`init-2`" in report
    if len(kept_ids) >= 3:
        significance = pd.read_csv(out / "significance_CIDEr.tsv", sep="\t")
        assert not set(left_out) & (set(significance["model_a"]) | set(significance["model_b"]))
    # `rank` on the search's own table.tsv gives the report's numbers, and says what it left out
    # (issue 64); --keep-all ranks every row.
    assert cli.main(["rank", "--table", str(out / "table.tsv"), "--out", str(tmp_path / "ranked")]) == 0
    ranked = pd.read_csv(tmp_path / "ranked" / "correlations_CIDEr.tsv", sep="\t")
    assert ranked["pregen"].tolist() == found["pregen"].tolist()
    np.testing.assert_allclose(ranked["all_R^2"], found["all_R^2"], atol=1e-9)
    excluded = pd.read_csv(tmp_path / "ranked" / "excluded.tsv", sep="\t")
    assert excluded.loc[excluded["kind"] == "model", "name"].tolist() == left_out
    assert "`init-2` (degenerate" in (tmp_path / "ranked" / "summary.md").read_text()
    assert cli.main(["rank", "--table", str(out / "table.tsv"), "--out", str(tmp_path / "all"), "--keep-all"]) == 0
    every = ranking.rank(table.drop(columns=["vocabulary", "units", "tokenizer", "filter0"]), ["CIDEr", "WMD", "ROUGE_L"],
                         list(tiers.DEFAULT_SPACE.names)).correlations["CIDEr"]
    np.testing.assert_allclose(pd.read_csv(tmp_path / "all" / "correlations_CIDEr.tsv", sep="\t")["all_R^2"],
                               every["all_R^2"], atol=1e-9)
    # With degenerate = "include" the findings rest on all four.
    config = SearchConfig.load(config_path)
    config = dataclasses.replace(config, pregen=dataclasses.replace(config.pregen, degenerate="include"))
    included = run_search(config, tmp_path / "included", progress=False)
    assert included.left_out == {} and len(included.findings_models) == 4


def test_interrupted_run_resumes_and_finished_run_is_cached(tmp_path, crash_on):
    config_path = write_precomputed(tmp_path)
    out = tmp_path / "out"
    with crash_on(tiers, "sweep"):  # Ctrl-C in the second model's sweep
        assert run(config_path, out, "--workers", "0") == 130  # no post-gen workers: models scored in order
    assert not (out / "table.tsv").exists()
    config = SearchConfig.load(config_path)
    resumed = run_search(config, out, progress=False)
    # Model 0 was finished before the crash, model 1 had its strata and post-gen metrics.
    assert resumed.stages["pregen"] == {"computed": 2, "reused": 1}
    assert resumed.stages["strata"] == {"computed": 1, "reused": 2}
    assert resumed.stages["postgen"] == {"computed": 3, "reused": 6}  # 3 metrics x model 2
    assert run(config_path, out) == 0
    first = pd.read_csv(out / "table.tsv", sep="\t")
    again = run_search(config, out, progress=False)
    assert all(c["computed"] == 0 for c in again.stages.values())
    numbers = ["CIDEr", "WMD", "ROUGE_L", *tiers.DEFAULT_SPACE.names]
    np.testing.assert_allclose(again.table[numbers].to_numpy(float), first[numbers].to_numpy(float), rtol=1e-9)


@pytest.mark.slow  # minutes on 2 cores: kept out of .ci/run (python3 -m pytest -m slow)
def test_demo_quick_end_to_end_then_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "demo"
    assert cli.main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 10 * 15 and set(table["architecture"]) == {"init", "pre", "par", "merge", "transformer"}
    available = {name for name, (ok, _) in postgen.metric_availability().items() if ok}
    assert {"CIDEr", "WMD", "Bleu_4", "ROUGE_L"} | ({"METEOR"} & available) <= set(table.columns)
    (model_file,) = (out / "cache" / "train").glob("merge-1-*/model.msgpack")
    stamp = model_file.stat().st_mtime_ns
    report = (out / "report.md").read_text()
    assert "SPICE" in report  # available, or one line saying why not
    models = pd.read_csv(out / "models.tsv", sep="\t")
    assert len(models) == 10 and (models["distinct_captions"] > 0).all()
    assert cli.main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    assert model_file.stat().st_mtime_ns == stamp  # reused, not retrained
    pd.testing.assert_frame_equal(table, pd.read_csv(out / "table.tsv", sep="\t"))
    assert "train 0 computed / 5 reused" in (out / "report.md").read_text()


def test_run_trains_on_a_karpathy_corpus_with_features_then_reuses_checkpoints(tmp_path):
    write_training_corpus(tmp_path)
    config = training_config(training={"epochs": 2, "snapshot_epochs": [1]}, postgen={"metrics": ["CIDEr", "Bleu_4"]})
    out = tmp_path / "trained"
    assert run(write_config(tmp_path / "train.toml", config), out) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 2 * 15 and set(table["epoch"].astype(str)) == {"final", "1"}
    captions = next((out / "cache" / "captions").glob("par-1-*/captions.txt")).read_text().splitlines()
    assert len(captions) == 20 and all(2 <= len(c.split()) <= 8 for c in captions)
    # The trained model, reused from its checkpoint by another search.
    config["models"]["checkpoints"] = [str(next((out / "cache" / "train").glob("par-1-*/model.msgpack")))]
    config["models"]["vocabulary"] = str(out / "vocabulary.json")
    assert run(write_config(tmp_path / "reuse.toml", config), tmp_path / "reused") == 0
    reused = pd.read_csv(tmp_path / "reused" / "table.tsv", sep="\t")
    final = table[table["epoch"].astype(str) == "final"].reset_index(drop=True)
    np.testing.assert_allclose(reused[tiers.DEFAULT_SPACE.names].to_numpy(), final[tiers.DEFAULT_SPACE.names].to_numpy(),
                               rtol=1e-6)
