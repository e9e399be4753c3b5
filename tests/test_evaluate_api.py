"""``evaluation.evaluate`` is ``pregen-search evaluate`` as a function: the same defaults and the
same table, from files or from captions held in memory; ``postgen.score``'s default tokenizer is
the command's, so its scores equal the command's."""
import json

import numpy as np
import pytest

from pregen_jax import postgen
from pregen_jax.cli import main
from pregen_jax.evaluation import Result, evaluate

METRICS = ["Bleu_4", "ROUGE_L", "CIDEr"]


def _captions(images: int = 30) -> tuple[dict, dict, dict]:
    """(references, captions of system a, of system b), image id -> strings, with the punctuation,
    case and contractions on which PTB and alnum-lower differ."""
    rng = np.random.default_rng(0)
    words = ["dog", "cat's", "T-shirt", "runs", "on", "the", "grass,", "mat.", "Red", "blue!", "can't", "jump"]
    sentence = lambda: " ".join(rng.choice(words, int(rng.integers(4, 9))))
    refs = {1000 + k: [sentence() for _ in range(4)] for k in range(images)}
    a = {i: r[0] if i % 3 else sentence() for i, r in refs.items()}
    b = {i: sentence() for i in refs}
    return refs, a, b


def _files(tmp_path, refs: dict, systems: dict) -> tuple:
    annotations = {"images": [{"id": i} for i in refs],
                   "annotations": [{"image_id": i, "id": 10 * i + j, "caption": c}
                                   for i, texts in refs.items() for j, c in enumerate(texts)]}
    (tmp_path / "refs.json").write_text(json.dumps(annotations))
    paths = []
    for name, captions in systems.items():
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps([{"image_id": i, "caption": c} for i, c in captions.items()]))
    return tmp_path / "refs.json", paths


def test_the_function_prints_the_commands_table_from_files_or_memory(tmp_path, capsys):
    refs, a, b = _captions()
    refs_path, paths = _files(tmp_path, refs, {"a": a, "b": b})
    assert main(["evaluate", "--references", str(refs_path), "--captions", *map(str, paths),
                 "--metrics", ",".join(METRICS)]) == 0
    printed = capsys.readouterr().out
    from_files = evaluate(refs_path, paths, metrics=METRICS)
    assert str(from_files) in printed  # the same table, to the last digit and the footer
    in_memory = evaluate(refs, [a, [{"image_id": i, "caption": c} for i, c in b.items()]], names=["a", "b"],
                         metrics=METRICS)
    assert str(in_memory) == str(from_files)
    assert in_memory.table.equals(from_files.table)
    results = in_memory.results
    assert all(isinstance(r, Result) for r in results) and [(r.system, r.metric) for r in results] == \
        [(s, m) for m in METRICS for s in ("a", "b")]
    cider_b = next(r for r in results if (r.system, r.metric) == ("b", "CIDEr"))
    assert cider_b.interval[0] <= cider_b.score <= cider_b.interval[1] and cider_b.p_bootstrap > 0
    assert cider_b.diff == pytest.approx(cider_b.score - results[-2].score, abs=1e-12)
    assert evaluate(refs, a, metrics=["CIDEr"]).systems == ["captions"]


def test_postgen_score_equals_the_command_by_default(tmp_path):
    refs, a, _ = _captions()
    table = evaluate(refs, a, metrics=METRICS)
    res = {i: [c] for i, c in a.items()}
    for metric in METRICS:
        corpus, per_image = postgen.score(metric, refs, res)
        # the same code on the same tokens in one run: equal to the last digit
        assert corpus == next(r.score for r in table.results if r.metric == metric), metric
        assert per_image == table.scores["captions"][metric].tolist(), metric
    old, _ = postgen.score("CIDEr", refs, res, tokenizer="alnum-lower")
    assert old != pytest.approx(next(r.score for r in table.results if r.metric == "CIDEr"), abs=1e-6)


def test_captions_in_memory_are_checked_as_files_are():
    refs, a, _ = _captions(5)
    with pytest.raises(ValueError, match=r"captions 1 \(in memory\): entry 0: image 'x' is not in references"):
        evaluate(refs, {"x": "a dog"}, metrics=["CIDEr"])
    with pytest.raises(ValueError, match=r"captions 1 \(in memory\): image 1000: the caption must be a string"):
        evaluate(refs, {1000: 3}, metrics=["CIDEr"])
    with pytest.raises(ValueError, match=r"references \(in memory\): image 1: expected a list of reference strings"):
        evaluate({1: [2]}, a, metrics=["CIDEr"])


def test_every_score_carries_its_signature(tmp_path):
    """One line per metric pins how it was computed; scores.json holds them, one schema for one or many systems."""
    from pregen_jax import __version__
    from pregen_jax.evaluation.outputs import scores_json
    from pregen_jax.postgen import ptb
    refs, a, b = _captions(12)
    refs[1000] = refs[1000][:3]
    one = evaluate(refs, a, metrics=METRICS)
    assert one.signatures["CIDEr"] == (f"CIDEr|cider-d:sigma6:x10|df:scored|nrefs:3-4|tok:ptb-{ptb.DEFAULT_BACKEND}|"
                                       f"backend:native|pregen-jax:{__version__}")
    assert one.signature_lines() == [f"signature: {one.signatures[m]}" for m in METRICS]
    assert str(one).splitlines()[-3:] == one.signature_lines()
    assert [r.signature for r in one.results] == [one.signatures[m] for m in METRICS]
    other = evaluate(refs, a, metrics=["CIDEr", "Bleu_4"], tokenizer="alnum-lower", idf_from="all")
    assert "|df:all|" in other.signatures["CIDEr"] and "|tok:alnum-lower|" in other.signatures["Bleu_4"]
    two = evaluate(refs, [a, b], metrics=METRICS)
    for result, systems in ((one, ["captions"]), (two, ["captions", "captions_2"])):
        written = scores_json(result)
        assert set(written) == {"version", "systems", "signatures", "tokenizer", "images_scored"}
        assert list(written["systems"]) == systems and written["signatures"] == one.signatures
        assert written["systems"]["captions"]["CIDEr"] == one.results[-1].score


def test_results_keyed_by_imgid_or_file_name_match_a_karpathy_json_without_coco_ids(tmp_path):
    """Flickr's Karpathy JSONs have a sequential ``imgid`` and a ``filename``, no COCO id: results keyed
    by either match, and the key used is stated."""
    refs, a, _ = _captions(6)
    karpathy = {"dataset": "flickr8k", "images": [
        {"filename": f"{i}_photo.jpg", "imgid": k, "split": "test", "sentences": [{"raw": r} for r in texts]}
        for k, (i, texts) in enumerate(refs.items())]}
    (tmp_path / "karpathy.json").write_text(json.dumps(karpathy))
    by_imgid = [{"image_id": k, "caption": a[i]} for k, i in enumerate(refs)]
    by_name = [{"image_id": f"{i}_photo.jpg", "caption": a[i]} for i in refs]
    imgid = evaluate(tmp_path / "karpathy.json", by_imgid, metrics=["CIDEr"])
    name = evaluate(tmp_path / "karpathy.json", by_name, metrics=["CIDEr"])
    assert imgid.results[0].score == name.results[0].score == evaluate(refs, a, metrics=["CIDEr"]).results[0].score
    assert imgid.settings["captions_keyed_by"] == {"captions": "imgid (matched to REFS's filename)"}
    assert name.settings["captions_keyed_by"] == {"captions": "filename"}
    assert any("image ids are Karpathy imgid (matched to REFS's filename)" in note for note in imgid.notes)


def test_select_prints_and_writes_the_races_signature(tmp_path, capsys):
    import pandas as pd
    refs, a, b = _captions(20)
    refs_path, paths = _files(tmp_path, refs, {"a": a, "b": b})
    assert main(["select", "--references", str(refs_path), "--captions", *map(str, paths), "--metric", "CIDEr",
                 "--budget", "1", "--out", str(tmp_path / "out")]) == 0
    written = pd.read_csv(tmp_path / "out" / "select.tsv", sep="\t")["signature"]
    assert set(written) == {evaluate(refs, a, metrics=["CIDEr"], idf_from="all").signatures["CIDEr"]}
    assert f"signature: {written[0]}" in capsys.readouterr().out.splitlines()
