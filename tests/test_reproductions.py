"""The 2018 numbers, reproduced from ../shared/data (skipped where it is absent)."""
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from pregen_jax import postgen, ranking
from pregen_jax.datasets import read_flickr8k, tokenize
from pregen_jax.postgen.jvm import find_java
from tests.conftest import ROOT, shared


def _init_1():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = read_flickr8k(shared("flickr8k"))["test"]
    folder = shared("where-image2-captions")
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    row = {image_id: n for n, image_id in enumerate(test.image_ids)}
    gts = {i: [" ".join(r) for r in test.captions[row[i]]] for i in ids}
    res = {i: [" ".join(tokenize(c))] for i, c in zip(ids, (folder / "flickr8k_init_1.txt").read_text().splitlines())}
    return gts, res


def _table_2018():
    table = ranking.read_table(shared("pregen-metrics-2018", "data.txt"))
    return table[(table["dataset"] == "flickr8k") & (table["architecture"] == "init") & (table["run"] == 1)
                 & (table["num_strata"] == 1)].iloc[0]


def test_whole_set_cider_of_init_1_matches_2018():
    gts, res = _init_1()
    assert postgen.CIDEr().compute_score(gts, res)[0] == pytest.approx(_table_2018()["CIDEr"], rel=2e-4)


@pytest.mark.skipif(find_java() is None, reason="no Java (pip install -e '.[java]' brings one)")
def test_whole_set_meteor_of_init_1_matches_2018():
    gts, res = _init_1()
    metric = postgen.METEOR()
    try:
        assert metric.compute_score(gts, res)[0] == pytest.approx(_table_2018()["METEOR"], rel=1e-9)
    finally:
        metric.close()


@pytest.mark.slow
def test_flickr8k_postgen_experiment(tmp_path):
    """All 12 models x 15 strata against the 2018 table (about 2 minutes)."""
    shared("where-image2-captions")
    subprocess.run([sys.executable, str(ROOT / "experiments" / "flickr8k_postgen_2018" / "run.py"), "--out",
                    str(tmp_path)], check=True)
    comparison = pd.read_csv(tmp_path / "comparison.tsv", sep="\t").set_index("metric")
    assert comparison.loc["METEOR", "max_rel_diff"] < 0.005 and comparison.loc["CIDEr", "max_rel_diff"] < 0.005
    assert comparison.loc["WMD", "pearson_R"] > 0.95
    assert list(pd.read_csv(tmp_path / "postgen.tsv", sep="\t").columns[:7]) == [
        "architecture", "run", "num_strata", "stratum", "METEOR", "CIDEr", "WMD"]
