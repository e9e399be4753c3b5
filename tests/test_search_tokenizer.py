"""One tokenizer by default (issue 40, item 3): new searches score their post-gen metrics with
``ptb`` (COCO's protocol: the corpus's raw references and the models' captions through PTB, as
``evaluate`` scores them), ``alnum-lower`` stays an option; a finished search's own tokenizer
(recorded in its manifest; ``alnum-lower`` before configs named one) is what commands compare with."""
import json

import pandas as pd
import pytest
import tomli_w

from pregen_jax import cli
from pregen_jax.pipeline import SearchConfig
from pregen_jax.pipeline.finished import MANIFEST, FinishedSearch
from tests.builders import write_precomputed
from tests.conftest import ROOT


def test_new_searches_default_to_ptb_and_2018_reproductions_name_alnum_lower():
    assert SearchConfig().postgen.tokenizer == "ptb"
    assert 'tokenizer="alnum-lower"' in (ROOT / "experiments" / "flickr8k_postgen_2018" / "run.py").read_text()
    with pytest.raises(ValueError, match="tokenizer"):
        SearchConfig.from_dict({"postgen": {"tokenizer": "none"}}, "x.toml")


def _with_punctuation(tmp_path):
    """write_precomputed's search, its references raw text whose words stay the models' (what their
    RefProbs follow) but that PTB reads otherwise: PTB keeps "&" and "$" as tokens, alnum-lower drops them."""
    config_path = write_precomputed(tmp_path, models=2, metrics=("CIDEr", "Bleu_4"))
    doc = json.loads((tmp_path / "dataset_toy.json").read_text())
    for image in doc["images"]:
        for k, sentence in enumerate(image["sentences"]):
            sentence["raw"] = sentence["raw"].capitalize() + (" &." if k % 2 else " $!")
    (tmp_path / "dataset_toy.json").write_text(json.dumps(doc))
    return config_path


@pytest.mark.parametrize("tokenizer", ["ptb", pytest.param("alnum-lower", marks=pytest.mark.slow)])
def test_a_search_scores_as_evaluate_does_with_its_tokenizer(tmp_path, capsys, tokenizer):
    config_path = _with_punctuation(tmp_path)
    if tokenizer != "ptb":  # the default needs no word
        config = __import__("tomllib").loads(config_path.read_text())
        config["postgen"]["tokenizer"] = tokenizer
        config_path.write_text(tomli_w.dumps(config))
    assert cli.main(["run", "--config", str(config_path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    run = FinishedSearch.open(tmp_path / "run")
    assert run.tokenizer == tokenizer == run.config.postgen.tokenizer
    assert set(pd.read_csv(tmp_path / "run" / "table.tsv", sep="\t")["tokenizer"]) == {tokenizer}
    # each model's whole-split CIDEr is evaluate's on the same captions and the raw references
    models = run.models_table.set_index("architecture")
    doc = json.loads((tmp_path / "dataset_toy.json").read_text())
    ids = {image["filename"]: k for k, image in enumerate(doc["images"])}
    coco = {"images": [{"id": ids[i["filename"]]} for i in doc["images"] if i["split"] == "test"],
            "annotations": [{"image_id": ids[i["filename"]], "caption": s["raw"]}
                            for i in doc["images"] if i["split"] == "test" for s in i["sentences"]]}
    (tmp_path / "refs.json").write_text(json.dumps(coco))
    for m, arch in enumerate(["init", "merge"]):
        lines = (tmp_path / f"model{m}.txt").read_text().splitlines()
        (tmp_path / f"res{m}.json").write_text(json.dumps([{"image_id": k, "caption": line}
                                                           for k, line in enumerate(lines)]))
        assert cli.main(["evaluate", "--references", str(tmp_path / "refs.json"), "--captions",
                         str(tmp_path / f"res{m}.json"), "--metrics", "CIDEr", "--tokenizer", tokenizer,
                         "--out", str(tmp_path / f"ev{m}")]) == 0
        expected = json.loads((tmp_path / f"ev{m}" / "scores.json").read_text())["systems"][f"res{m}"]["CIDEr"]
        assert models.loc[arch, "CIDEr"] == pytest.approx(expected, abs=1e-9)  # models.tsv: 10 digits
    # predict --captions measures a file as evaluate scores it, with the search's tokenizer (its own text)
    from pregen_jax.evaluation import score_files
    from pregen_jax.prediction.measured import measured_scores
    lines = [line.capitalize() + " &." for line in (tmp_path / "model0.txt").read_text().splitlines()]
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps({"image_id": f"{k}.jpg", "caption": line}) + "\n"
                                                 for k, line in enumerate(lines)))
    (tmp_path / "mine.json").write_text(json.dumps([{"image_id": k, "caption": line} for k, line in enumerate(lines)]))
    (measured,) = measured_scores(run, [tmp_path / "mine.jsonl"])
    expected = score_files(tmp_path / "refs.json", tmp_path / "mine.json", metrics=["CIDEr"], tokenizer=tokenizer)
    assert measured["CIDEr"] == pytest.approx(expected.table["score"].iloc[0], abs=1e-12)


@pytest.mark.slow
def test_an_old_search_without_a_tokenizer_in_its_config_keeps_alnum_lower(tmp_path):
    config_path = write_precomputed(tmp_path, models=2, metrics=("CIDEr",))
    config = __import__("tomllib").loads(config_path.read_text())
    config["postgen"]["tokenizer"] = "alnum-lower"
    config_path.write_text(tomli_w.dumps(config))
    assert cli.main(["run", "--config", str(config_path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    # as a search written before configs named a tokenizer: its config.toml has none, its manifest says alnum-lower
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    assert manifest["tokenizer"]["name"] == "alnum-lower"
    text = manifest["config"].replace('tokenizer = "alnum-lower"\n', "")
    assert text != manifest["config"]
    manifest["config"] = text
    (tmp_path / "run" / "config.toml").write_text(text)
    manifest["files"]["config.toml"] = __import__("pregen_jax").io.file_digest(tmp_path / "run" / "config.toml")
    (tmp_path / "run" / MANIFEST).write_text(json.dumps(manifest))
    run = FinishedSearch.open(tmp_path / "run")
    assert run.config.postgen.tokenizer == "alnum-lower" == run.tokenizer
