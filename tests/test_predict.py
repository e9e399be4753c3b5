"""`pregen-search predict`: post-gen scores of a new model from its reference probabilities."""
import numpy as np
import pandas as pd
import pytest

from pregen_jax import RefProbs, cli
from tests.builders import write_precomputed


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    folder = tmp_path_factory.mktemp("predict")
    config = write_precomputed(folder, models=4)
    assert cli.main(["run", "--config", str(config), "--out", str(folder / "run"), "--no-progress"]) == 0
    return folder


def test_predicts_each_postgen_metric_with_an_interval(search, capsys):
    out = search / "predicted.tsv"
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", str(search / "model3.npz"),
                     "--out", str(out)]) == 0
    frame = pd.read_csv(out, sep="\t")
    assert set(frame["postgen"]) == {"CIDEr", "ROUGE_L", "WMD"}
    assert (frame["low"] <= frame["predicted"]).all() and (frame["predicted"] <= frame["high"]).all()
    assert (frame["calibration_models"] == 4).all() and frame["tokenizer"].eq("alnum-lower").all()
    # The prediction lies on the least-squares line through the search's models.
    table = pd.read_csv(search / "run" / "table.tsv", sep="\t")
    models = table[table["num_strata"] == 1]
    own = models[(models["architecture"] == "init") & (models["run"] == 2)]
    for _, row in frame.iterrows():
        slope, intercept = np.polyfit(models[row["pregen"]], models[row["postgen"]], 1)
        assert row["predicted"] == pytest.approx(intercept + slope * own[row["pregen"]].iloc[0], rel=1e-6)
    assert "warning" not in capsys.readouterr().err


def test_other_references_are_refused(search, capsys):
    with np.load(search / "model1.npz") as npz:
        mask = npz["mask"].copy()
        probs, ranks = npz["probs"], npz["ranks"]
    mask[0, 0, mask[0, 0].sum() - 1] = False  # one reference a token shorter
    RefProbs(probs, ranks, mask).save(search / "other.npz")
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", str(search / "other.npz")]) == 2
    err = capsys.readouterr().err
    assert "other.npz: not the search's test references (image 0, reference 0" in err
    assert len(err.strip().splitlines()) == 1


def test_out_that_is_a_folder_is_refused_before_any_work(search, capsys):
    args = ["predict", "--search", str(search / "run"), "--refprobs", str(search / "model1.npz")]
    assert cli.main([*args, "--out", str(search)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_unknown_metric_and_not_a_run_folder_are_errors(search, capsys):
    args = ["predict", "--search", str(search / "run"), "--refprobs", str(search / "model1.npz")]
    assert cli.main([*args, "--pregen", "mean_mean_nosuch_none"]) == 2
    assert "not a metric of the search's space" in capsys.readouterr().err
    assert cli.main(["predict", "--search", str(search), "--refprobs", str(search / "model1.npz")]) == 2
    assert "not a finished search's run folder" in capsys.readouterr().err
