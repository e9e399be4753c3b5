"""``evaluate`` with the diversity metrics (issue 62): results with several captions per image, read
from each form (repeated image ids, caption lists, a JSON object of lists) or memory, scored equal
to the references' algorithms (tests/test_diversity.py's oracles), with intervals, the family's
paired tests and signatures; Self-CIDEr's document frequencies from every image of the references."""
import json

import numpy as np
import pytest

from pregen_jax.cli import main
from pregen_jax.evaluation import evaluate
from tests.test_diversity import (
    _flickr8k_document_frequency,
    flickr8k_test_references,
    oracle_div_n,
    oracle_global_div_1,
    oracle_mbleu,
    oracle_self_cider,
    where_image2_samples,
)

METRICS = ["Div_1", "Div_2", "gDiv_1", "mBLEU_4", "Self_CIDEr"]


def test_where_image2_runs_as_samples_give_the_oracles_intervals_and_tests():
    """Two architectures' 3 runs as 3 samples per image on 60 of the 1,000 images, against the
    references of all 1,000 (Self-CIDEr's document frequencies: every image of REFS, not the 100)."""
    refs = flickr8k_test_references()
    systems = [where_image2_samples(tuple(f"{arch}_{r}" for r in (1, 2, 3))) for arch in ("init", "merge")]
    picked = [{i: caps[i] for i in list(caps)[:60]} for caps in systems]
    result = evaluate(refs, picked, names=["init", "merge"], metrics=METRICS, tokenizer="none")
    rows = {(r.system, r.metric): r for r in result.results}
    for name, caps in zip(["init", "merge"], picked):
        want = {"Div_1": oracle_div_n(caps, 1)[0], "Div_2": oracle_div_n(caps, 2)[0],
                "gDiv_1": oracle_global_div_1(caps), "mBLEU_4": oracle_mbleu(caps)[0][3],
                "Self_CIDEr": oracle_self_cider(list(refs.values()), caps, _flickr8k_document_frequency()).mean()}
        for metric, value in want.items():
            row = rows[name, metric]
            assert abs(row.score - value) <= (1e-7 if metric == "Self_CIDEr" else 1e-12), (name, metric)
            assert row.interval[0] <= row.score <= row.interval[1], (name, metric, row.interval)
        np.testing.assert_allclose(result.scores[name]["Div_2"], oracle_div_n(caps, 2)[1], rtol=0, atol=1e-12)
    for metric in METRICS:
        row = rows["merge", metric]
        assert row.diff_interval[0] <= row.diff <= row.diff_interval[1]
        assert 0 < row.p_adjusted <= 1 and 0 < row.p_randomization <= 1
    assert result.settings["significance"]["family"]["comparisons"] == len(METRICS)
    assert "set:3-samples-per-image" in result.signatures["Div_1"]
    assert "df:all" in result.signatures["Self_CIDEr"] and "nrefs:5" in result.signatures["Self_CIDEr"]
    assert "nrefs" not in result.signatures["mBLEU_4"] and result.settings["captions_per_image"]["init"] == 3


CAPTIONS = {1: ["A dog runs.", "a dog is running", "the brown dog"], 2: ["Two cats sleep", "two cats", "cats, asleep"],
            3: ["a red car", "A car.", "a red car"]}
REFS = {"images": [{"id": i} for i in CAPTIONS],
        "annotations": [{"image_id": i, "id": 10 * i + j, "caption": c} for i in CAPTIONS
                        for j, c in enumerate(["a dog", "an animal outside"])]}


@pytest.mark.parametrize("form", ["repeated ids", "caption lists", "json of lists", "jsonl"])
def test_every_form_of_samples_scores_alike(tmp_path, capsys, form):
    rows = {"repeated ids": json.dumps([{"image_id": i, "caption": c} for k in range(3) for i, caps in CAPTIONS.items()
                                        for c in caps[k:k + 1]]),
            "caption lists": json.dumps([{"image_id": i, "caption": caps} for i, caps in CAPTIONS.items()]),
            "json of lists": json.dumps({str(i): caps for i, caps in CAPTIONS.items()}),
            "jsonl": "".join(json.dumps({"image_id": i, "caption": c}) + "\n" for i, caps in CAPTIONS.items()
                             for c in caps)}
    (tmp_path / "refs.json").write_text(json.dumps(REFS))
    (tmp_path / "res.json").write_text(rows[form])
    code = main(["evaluate", "--references", str(tmp_path / "refs.json"), "--captions", str(tmp_path / "res.json"),
                 "--metrics", ",".join(METRICS), "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    memory = evaluate(str(tmp_path / "refs.json"), CAPTIONS, metrics=METRICS)
    for r in memory.results:
        assert json.dumps(scores).count(r.metric) and abs(_score(scores, r.metric) - r.score) < 1e-12
    assert "signature: Self_CIDEr|" in capsys.readouterr().out


def _score(scores: dict, metric: str) -> float:
    """The one system's ``metric`` in scores.json, wherever the file nests it."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == metric and isinstance(value, (int, float)):
                    found.append(float(value))
                walk(value)
    walk(scores)
    assert found, metric
    return found[0]


def test_gdiv_resamples_and_jackknife_count_the_words_of_the_images_kept():
    """gDiv-1's sparse statistics: a resample's score is the number of words of the images it draws,
    the jackknife's the number without each image; words are numbered across systems."""
    from pregen_jax import postgen
    from pregen_jax.evaluation.significance import jackknife, resampled_sums
    rng = np.random.default_rng(1)
    words = [f"w{k}" for k in range(40)]
    caps = {i: [" ".join(rng.choice(words, rng.integers(0, 6))) for _ in range(2)] for i in range(25)}
    metric = postgen.diversity_metric("gDiv_1")
    metric.stats(caps, {i: ["other words"] * 2 for i in caps})  # another system first: its words take columns
    rows = metric.stats(caps, caps)
    used = lambda keep: len({w for i, k in zip(caps, keep) if k for c in caps[i] for w in c.split()})
    counts = rng.multinomial(25, np.full(25, 1 / 25), size=6).astype(np.uint16)
    sums = resampled_sums(rows, 6, rng, counts=[counts])
    assert metric.from_sums(sums, 25).tolist() == [used(row) for row in counts]
    assert jackknife(metric, rows).tolist() == [used(np.arange(25) != k) for k in range(25)]
    assert metric.aggregate(rows) == used(np.ones(25))


def test_novel_is_the_share_of_captions_not_among_the_training_captions(tmp_path):
    """novel: each image's share of captions no training caption equals once both are tokenized (PTB:
    "A dog runs." is "a dog runs"); the mean over images; refused without training captions."""
    train = {"images": [{"id": 7}, {"id": 8}],
             "annotations": [{"image_id": 7, "id": 1, "caption": "A dog runs."}, {"image_id": 8, "id": 2, "caption": "Two cats"}]}
    (tmp_path / "train.json").write_text(json.dumps(train))
    (tmp_path / "refs.json").write_text(json.dumps(REFS))
    caps = {1: ["a dog runs", "a dog", "A dog runs!"], 2: ["two cats", "Two cats.", "cats"], 3: ["x", "y", "z"]}
    result = evaluate(str(tmp_path / "refs.json"), caps, metrics=["novel", "Div_1"], train_captions=tmp_path / "train.json")
    assert result.scores["captions"]["novel"].tolist() == [1 / 3, 1 / 3, 1.0]
    assert result.results[0].score == pytest.approx(5 / 9, abs=1e-15)
    assert "train:train.json:2-distinct" in result.signatures["novel"]
    with pytest.raises(ValueError, match="--metrics novel: needs the training captions"):
        evaluate(str(tmp_path / "refs.json"), caps, metrics=["novel"])
