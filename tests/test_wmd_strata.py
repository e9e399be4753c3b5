"""Issue 52: a WMD cell of the quick demo's table.tsv was 0.0 in some runs and 0.596 in others.

Found: the stratum (pre, run 1, epoch 1, 5 strata, stratum 3) holds 60 images all captioned
"a of a of a", which is nothing but stop words, so every word mover's distance is infinite and
each image scores exp(-inf) = 0; runs from a checkout without ``../shared/data/wmd`` score WMD
with no stop words at all (every WMD cell moves; that stratum becomes 0.595). Now a stratum none
of whose captions WMD can score is NaN with a note (its row left out of WMD's correlations), a
search without the 2018 stop words says so, and the same config gives the same table run after run.
"""
import json

import numpy as np
import pandas as pd
import pytest

from pregen_jax import cli
from tests.builders import training_config, write_config, write_precomputed, write_training_corpus


def _run(config, out, capsys):
    assert cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
    return capsys.readouterr().err


def test_wmd_over_strata_is_nan_only_where_no_caption_is_scorable():
    """The fast form of the next test (issue 63): WMD's score of each stratum (``score_blocks``, as a
    search scores them) on six images, two captioned by stop words only; no search, no training."""
    from pregen_jax.postgen.base import score_strata
    from pregen_jax.postgen.wmd import WMD, _availability
    ok, why = _availability()
    if not ok:
        pytest.skip(f"WMD unavailable: {why}")
    gts = {1: ["a red square above a circle"], 2: ["a blue circle"], 3: ["a green square"], 4: ["a red circle"],
           5: ["a black triangle"], 6: ["a blue square"]}
    res = {1: ["a red square"], 2: ["a above a"], 3: ["a below a"], 4: ["a red circle"], 5: ["a triangle"],
           6: ["a green square"]}
    wmd = WMD(stopwords={"a", "above", "below"})
    strata = [list(gts), [2, 3], [1, 4, 5, 6], [2, 5]]
    scores = score_strata([wmd], gts, res, strata)["WMD"].to_numpy()
    per_image = np.asarray(wmd.compute_score(gts, res)[1])
    assert list(per_image[[1, 2]]) == [0.0, 0.0] and (per_image[[0, 3, 4, 5]] >= np.exp(-2)).all()
    assert np.isnan(scores[1])                                            # only stop-word captions: NaN
    assert scores[0] == pytest.approx(per_image.mean(), abs=1e-12)        # the whole set: its zeros count
    assert scores[2] == pytest.approx(per_image[[0, 3, 4, 5]].mean(), abs=1e-12)
    assert scores[3] == pytest.approx(per_image[4] / 2, abs=1e-12) and (scores[~np.isnan(scores)] > 0).all()


@pytest.mark.slow  # about a minute on 2 loaded cores: a search with WMD (GloVe loads in seconds)
def test_a_stratum_of_unscorable_captions_is_nan_with_a_note(tmp_path, capsys):
    config = write_precomputed(tmp_path, models=3)
    (tmp_path / "stop.txt").write_text("a above below")
    text = config.read_text().replace('metrics = [', 'stopwords = "stop.txt"\nmetrics = [')
    config.write_text(text + '\n[pregen]\ndegenerate = "include"\n')  # model 2's rows in the findings
    doc = json.loads((tmp_path / "dataset_toy.json").read_text())
    firsts = [image["sentences"][0]["raw"] for image in doc["images"] if image["split"] == "test"]
    # model 2: half its captions stop words only (CIDEr near 0: the lowest strata), half a reference
    (tmp_path / "model2.txt").write_text("\n".join("a above a" if n % 2 else firsts[n] for n in range(12)) + "\n")
    err = _run(config, tmp_path / "out", capsys)
    table = pd.read_csv(tmp_path / "out" / "table.tsv", sep="\t")
    wmd = table[table["architecture"] == "par"].set_index(["num_strata", "stratum"])["WMD"]
    assert np.isnan(wmd.loc[(2, 0)]) and np.isnan(wmd.loc[(5, 0)])  # only stop-word captions: NaN
    assert 0 < wmd.loc[(1, 0)] < 1 and 0 < wmd.loc[(2, 1)] <= 1     # the whole set: the 6 zeros count
    assert (table["WMD"] != 0).all()                                 # never 0.0
    assert "note: WMD: " in err and "rows NaN" in err                # said once, and written down:
    excluded = pd.read_csv(tmp_path / "out" / "excluded.tsv", sep="\t")
    assert excluded[excluded["name"] == "WMD"]["kind"].tolist() == ["post-gen rows"]  # WMD still ranked
    assert (tmp_path / "out" / "correlations_WMD.tsv").is_file()
    assert "**WMD:**" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.slow  # minutes on 2 loaded cores: two searches that train
def test_the_same_config_gives_the_same_table_run_after_run(tmp_path, capsys):
    """Two runs of one training config into two folders (each with its own empty stage cache): every
    cell of table.tsv the same, byte for byte (one host, one process layout: docs/development.md)."""
    write_training_corpus(tmp_path)
    config = write_config(tmp_path / "search.toml", training_config(
        models={"architectures": ["par", "init"]}, training={"epochs": 2, "snapshot_epochs": [1]}))
    _run(config, tmp_path / "one", capsys)
    _run(config, tmp_path / "two", capsys)
    one, two = ((tmp_path / name / "table.tsv").read_bytes() for name in ("one", "two"))
    assert len(pd.read_csv(tmp_path / "one" / "table.tsv", sep="\t")) == 4 * 15  # 2 models x 2 epochs
    assert one == two
