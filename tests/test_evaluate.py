"""``evaluate`` equals COCOEvalCap (pycocoevalcap's own class, run here on the same files) on every
metric, corpus and per image, with the PTB tokenizer; with alnum-lower it equals ``postgen.score``;
the three reference formats; the command's outputs."""
import json
import random

import numpy as np
import pandas as pd
import pytest

from pregen_jax import postgen
from pregen_jax.cli import main
from pregen_jax.evaluation import Resampling, evaluate, score_files
from pregen_jax.postgen import jvm, ptb
from tests.conftest import shared

TOL = 1e-9


def flickr_captions(images: int) -> dict:
    """The first ``images`` Flickr8k test images: file name -> its five raw captions."""
    captions: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(caption)
    test = shared("flickr8k", "Flickr_8k.testImages.txt").read_text().split()[:images]
    return {name: captions[name] for name in test}


def coco_files(tmp_path, captions: dict, systems=(0,), refs=slice(1, None), seed=0) -> tuple:
    """A COCO annotation file (captions[refs] of each image) and one results file per caption index of
    ``systems``, the results in a shuffled order (COCOEvalCap scores in the annotation file's order)."""
    ids = {name: 1000 + 7 * k for k, name in enumerate(captions)}
    annotations = {"images": [{"id": ids[n], "file_name": n} for n in captions],
                   "annotations": [{"image_id": ids[n], "id": 10 * ids[n] + j, "caption": c}
                                   for n in captions for j, c in enumerate(captions[n][refs])]}
    (tmp_path / "refs.json").write_text(json.dumps(annotations))
    paths = []
    for k in systems:
        results = [{"image_id": ids[n], "caption": captions[n][k]} for n in captions]
        random.Random(seed + k).shuffle(results)
        paths.append(tmp_path / f"res{k}.json")
        paths[-1].write_text(json.dumps(results))
    return tmp_path / "refs.json", paths


class _SpiceNotRun(Exception):
    pass


def cocoevalcap(refs, res, monkeypatch) -> tuple[dict, dict]:
    """(COCOEvalCap.eval, imgToEval) as coco-caption's example runs it; SPICE, last in its list,
    is not run (no CoreNLP jars here): it raises after every other metric has been stored."""
    import pycocoevalcap.eval as coco_eval
    from pycocotools.coco import COCO

    class NoSpice:
        def compute_score(self, gts, res):
            raise _SpiceNotRun

        def method(self):
            return "SPICE"
    monkeypatch.setattr(coco_eval, "Spice", NoSpice)
    coco = COCO(str(refs))
    coco_res = coco.loadRes(str(res))
    evaluator = coco_eval.COCOEvalCap(coco, coco_res)
    evaluator.params["image_id"] = coco_res.getImgIds()
    with pytest.raises(_SpiceNotRun):
        evaluator.evaluate()
    return evaluator.eval, evaluator.imgToEval


def test_equals_cocoevalcap_on_raw_flickr8k_captions(tmp_path, monkeypatch, java_on_path):
    captions = flickr_captions(400)
    first = next(iter(captions))
    captions[first] = ["A dog -- in a T-shirt (red) can't jump ... !", *captions[first][1:]]  # PTB's quirks
    second, third = list(captions)[1:3]
    captions[second] = [" ", *captions[second][1:]]          # an empty caption
    captions[third] = [captions[third][0], "...", "!", "-- ;", "?"]  # references PTB leaves empty
    refs, (res,) = coco_files(tmp_path, captions)
    expected, per_image = cocoevalcap(refs, res, monkeypatch)
    got = score_files(refs, res, metrics=[m for m in expected if m != "SPICE"])
    assert list(got.per_image["image_id"]) == list(per_image)  # coco-caption's image order
    for metric, value in expected.items():
        score = got.table.set_index("metric").loc[metric, "score"]
        assert score == pytest.approx(value, abs=TOL, rel=TOL), metric
        np.testing.assert_allclose(got.per_image[metric], [per_image[i][metric] for i in per_image],
                                   atol=TOL, rtol=TOL, err_msg=metric)
    assert got.settings["tokenizer"].startswith("ptb") and set(got.table["tokenizer"]) == {"ptb"}


def test_alnum_lower_equals_postgen_score(tmp_path):
    captions = flickr_captions(200)
    refs, (res,) = coco_files(tmp_path, captions)
    metrics = ["Bleu_1", "Bleu_4", "ROUGE_L", "CIDEr"]
    got = score_files(refs, res, metrics=metrics, tokenizer="alnum-lower")
    ids = list(got.per_image["image_id"])
    by_id = {1000 + 7 * k: caps for k, caps in enumerate(captions.values())}
    gts = {i: by_id[i][1:] for i in ids}
    res_raw = {i: [by_id[i][0]] for i in ids}
    for metric in metrics:
        corpus, per_image = postgen.score(metric, gts, res_raw, tokenizer="alnum-lower")
        assert got.table.set_index("metric").loc[metric, "score"] == corpus, metric
        assert list(got.per_image[metric]) == per_image, metric


def test_idf_from_all_scores_a_subset_as_in_the_whole_set(tmp_path):
    captions = flickr_captions(120)
    refs, (res,) = coco_files(tmp_path, captions)
    names = list(captions)
    subset = [{"image_id": 1000 + 7 * k, "caption": captions[n][0]} for k, n in enumerate(names) if k % 3 == 0]
    (tmp_path / "subset.json").write_text(json.dumps(subset))
    whole = score_files(refs, res, metrics=["CIDEr"], tokenizer="alnum-lower", idf_from="all")
    part = score_files(refs, tmp_path / "subset.json", metrics=["CIDEr"], tokenizer="alnum-lower", idf_from="all")
    scored = whole.per_image.set_index("image_id")["CIDEr"]
    np.testing.assert_allclose(part.per_image["CIDEr"], scored[part.per_image["image_id"]].to_numpy(), rtol=0, atol=1e-12)
    alone = score_files(refs, tmp_path / "subset.json", metrics=["CIDEr"], tokenizer="alnum-lower")
    assert alone.table["score"].iloc[0] != part.table["score"].iloc[0]
    assert "every image of REFS" in part.settings["document_frequencies"]


def test_karpathy_json_and_export_references_jsonl(tmp_path):
    captions = flickr_captions(60)
    names = list(captions)
    karpathy = {"dataset": "flickr8k", "images": [
        {"filename": n, "split": "test" if k < 50 else "train", **({"cocoid": 5000 + k} if k % 2 else {}),
         "sentences": [{"raw": c, "tokens": ["ignored"]} for c in captions[n][1:]]} for k, n in enumerate(names)]}
    (tmp_path / "karpathy.json").write_text(json.dumps(karpathy))
    results = [{"image_id": 5000 + k if k % 2 else n, "caption": captions[n][0]} for k, n in enumerate(names[:50])]
    (tmp_path / "res.json").write_text(json.dumps(results))
    refs, (res,) = coco_files(tmp_path, {n: captions[n] for n in names[:50]})
    from_karpathy = score_files(tmp_path / "karpathy.json", tmp_path / "res.json", metrics=["CIDEr", "Bleu_4"],
                                tokenizer="alnum-lower")
    from_coco = score_files(refs, res, metrics=["CIDEr", "Bleu_4"], tokenizer="alnum-lower")
    np.testing.assert_array_equal(from_karpathy.table["score"], from_coco.table["score"])  # raw captions, not tokens
    from pregen_jax.datasets import tokenize
    rows = [{"image_id": n, "image": k, "ref": r, "text": " ".join(tokenize(c)), "tokens": tokenize(c)}
            for k, n in enumerate(names[:50]) for r, c in enumerate(captions[n][1:])]
    (tmp_path / "refs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "res_names.json").write_text(json.dumps(
        [{"image_id": n, "caption": " ".join(tokenize(captions[n][0]))} for n in names[:50]]))
    jsonl = score_files(tmp_path / "refs.jsonl", tmp_path / "res_names.json", metrics=["CIDEr", "Bleu_4"])
    assert set(jsonl.table["tokenizer"]) == {"alnum-lower"}  # the export's own (old files record none: alnum-lower)
    np.testing.assert_array_equal(jsonl.table["score"], from_coco.table["score"])
    # raw captions ("A dog.") against an export get the export's tokenizer too, not a silent "none"
    (tmp_path / "res_raw.json").write_text(json.dumps([{"image_id": n, "caption": captions[n][0].upper() + "."}
                                                       for n in names[:50]]))
    raw = score_files(tmp_path / "refs.jsonl", tmp_path / "res_raw.json", metrics=["CIDEr", "Bleu_4"])
    np.testing.assert_array_equal(raw.table["score"], from_coco.table["score"])
    with pytest.raises(ValueError, match="already tokenized.*alnum-lower"):
        score_files(tmp_path / "refs.jsonl", tmp_path / "res_names.json", tokenizer="ptb")


def test_command_writes_scores_per_image_settings_and_compares_systems(tmp_path, capsys):
    captions = flickr_captions(150)
    refs, paths = coco_files(tmp_path, captions, systems=(0, 1), refs=slice(2, None))
    out = tmp_path / "out"
    assert main(["evaluate", "--references", str(refs), "--captions", *map(str, paths), "--metrics",
                 "Bleu_4,CIDEr,ROUGE_L", "--tokenizer", "alnum-lower", "--trials", "2000", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "tokenizer: alnum-lower" in printed and "p_bs" in printed
    scores = json.loads((out / "scores.json").read_text())
    assert scores["tokenizer"].startswith("alnum-lower") and set(scores["systems"]["res0"]) == {"Bleu_4", "CIDEr", "ROUGE_L"}
    assert scores["version"] == 2 and scores["signatures"]["CIDEr"].startswith("CIDEr|cider-d:sigma6:x10|df:scored|nrefs:3|")
    per_image = pd.read_csv(out / "per_image.tsv", sep="\t")
    assert list(per_image.columns) == ["image_id", "Bleu_4", "CIDEr", "ROUGE_L", "system", "tokenizer"]
    table = pd.read_csv(out / "significance.tsv", sep="\t")
    second = table[table["system"] == "res1"].set_index("metric")
    assert (second["diff_low"] <= second["diff"]).all() and (second["diff"] <= second["diff_high"]).all()
    for metric in ("CIDEr", "ROUGE_L"):  # corpus score = mean of per-image scores: p by a direct loop
        a, b = (per_image.loc[per_image["system"] == s, metric].to_numpy() for s in ("res0", "res1"))
        p_bootstrap, p_randomization = p_values_by_loop(a, b, Resampling(trials=2000))
        assert second.loc[metric, "p_bootstrap"] == pytest.approx(p_bootstrap, abs=1e-12)
        assert second.loc[metric, "p_randomization"] == pytest.approx(p_randomization, abs=1e-12)
    # one family, the 3 metrics' comparisons: adjusted p at least the raw one, its interval agreeing with it
    assert (second["p_adjusted"] >= second["p_bootstrap"]).all() and (second["p_stepdown"] <= second["p_adjusted"]).all()
    assert (((second["diff_low"] > 0) | (second["diff_high"] < 0)) == (second["p_adjusted"] < 0.05)).all()
    settings = json.loads((out / "settings.json").read_text())
    family = settings["significance"]["family"]
    assert (family["family"], family["comparisons"], family["family_size"]) == ("all", 3, 3)
    assert "(3 comparisons)" in printed and "p_adj" in printed and "p_stepdown" in printed
    check = settings["misplaced_captions"]["res1"]  # recorded whether flagged or not
    assert check["images_checked"] == 150 and not check["flagged"] and 0 <= check["misplaced_share"] <= 0.1
    assert check["calibration"] == "references" and "held-out references" in check["calibrated_on"]  # 2 files: no peers
    assert settings["significance"]["randomization_trials"] == 2000 and settings["significance"]["seed"] == 0
    assert settings["java"] == "not used"  # array metrics and no PTB: no JVM to name
    ptb_only = score_files(refs, paths[:1], metrics=["CIDEr"], tokenizer="ptb")
    assert ptb_only.settings["java"] == ("not used" if ptb.DEFAULT_BACKEND == "python" else jvm.java_description())
    again = score_files(refs, paths, metrics=["CIDEr"], tokenizer="alnum-lower", plan=Resampling(trials=2000))
    assert again.table.set_index(["system", "metric"]).loc[("res1", "CIDEr"), "p_bootstrap"] == \
        second.loc["CIDEr", "p_bootstrap"]  # the same seed, the same draws
    other = score_files(refs, paths, metrics=["CIDEr"], tokenizer="alnum-lower", plan=Resampling(trials=2000, seed=7))
    assert other.table["low"].iloc[0] != again.table["low"].iloc[0]  # --seed changes the draws
    result = evaluate(refs, paths, metrics=["CIDEr"], tokenizer="alnum-lower", trials=2000)  # the command's API
    assert isinstance(result.table, pd.DataFrame) and result.table.equals(again.table)


def p_values_by_loop(a, b, plan: Resampling) -> tuple[float, float]:
    """(paired bootstrap p, approximate-randomization p) of mean(b) - mean(a), one resample and one trial
    at a time from the same seed streams as ``significance`` (each resample ``rng.integers(0, n, n)``,
    each trial the first n bits of ``rng.bytes(ceil(n / 8))``), scores averaged directly, not from summed
    statistics."""
    bootstrap, randomization = (np.random.default_rng(s) for s in np.random.SeedSequence(plan.seed).spawn(2))
    observed = b.mean() - a.mean()
    extreme = 0
    for _ in range(plan.resamples):
        drawn = bootstrap.integers(0, len(a), len(a))
        extreme += abs(b[drawn].mean() - a[drawn].mean() - observed) >= abs(observed) * (1 - 1e-9)
    swapped = 0
    for _ in range(plan.trials):
        swap = np.unpackbits(np.frombuffer(randomization.bytes((len(a) + 7) // 8), np.uint8), count=len(a)) == 1
        swapped += abs(np.where(swap, a, b).mean() - np.where(swap, b, a).mean()) >= abs(observed) * (1 - 1e-9)
    return (1 + extreme) / (1 + plan.resamples), (1 + swapped) / (1 + plan.trials)


def test_a_system_against_itself_has_p_one_and_a_zero_difference(tmp_path):
    captions = flickr_captions(80)
    refs, (res,) = coco_files(tmp_path, captions)
    twin = tmp_path / "twin.json"
    twin.write_text(res.read_text())
    table = score_files(refs, [res, twin], metrics=["Bleu_4", "CIDEr"], tokenizer="alnum-lower").table
    second = table[table["system"] == "twin"]
    assert (second["diff"] == 0).all() and (second["p_bootstrap"] == 1).all() and (second["p_randomization"] == 1).all()


def test_a_carriage_return_inside_a_caption_is_a_space_with_a_warning(tmp_path):
    """COCOEvalCap's PTB wrapper would split the line and shift every later caption onto the wrong image."""
    captions = flickr_captions(20)
    first = next(iter(captions))
    plain = score_files(*coco_files(tmp_path, captions)[:1], tmp_path / "res0.json", metrics=["CIDEr"])
    captions[first] = ["a dog\rruns on the grass", *captions[first][1:]]
    captions[first][0] = captions[first][0].replace("\r", " ")
    spaced = score_files(*coco_files(tmp_path, captions)[:1], tmp_path / "res0.json", metrics=["CIDEr"])
    captions[first][0] = captions[first][0].replace(" runs", "\rruns")
    broken = score_files(*coco_files(tmp_path, captions)[:1], tmp_path / "res0.json", metrics=["CIDEr"])
    assert list(broken.per_image["CIDEr"]) == list(spaced.per_image["CIDEr"])
    assert list(broken.per_image["CIDEr"])[1:] == list(plain.per_image["CIDEr"])[1:]
    assert any("carriage return" in note for note in broken.notes) and not any("carriage return" in note for note in spaced.notes)
