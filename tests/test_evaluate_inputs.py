"""Bad input to ``pregen-search evaluate`` (issue 35, item 4): one line naming the file and the
problem (image id, entry or line), exit code 2, nothing written; an empty caption is scored, with
a warning that counts them."""
import json
import re

import pytest

from pregen_jax.cli import main

REFS = {"images": [{"id": 1}, {"id": 2}, {"id": 3}],
        "annotations": [{"image_id": i, "id": 10 * i + j, "caption": c}
                        for i, caps in ((1, ["A dog runs.", "a brown dog"]), (2, ["Two cats sleep", "cats on a bed"]),
                                        (3, ["a red car", "A car, parked."])) for j, c in enumerate(caps)]}
RES = [{"image_id": 1, "caption": "a dog"}, {"image_id": 2, "caption": "two cats"}, {"image_id": 3, "caption": "a car"}]


def run(tmp_path, capsys, refs=REFS, results=(RES,), extra=()):
    """(exit code, stderr lines, stdout) of evaluate on these files; --out tmp_path/out."""
    refs_path = tmp_path / "refs.json"
    refs_path.write_text(refs if isinstance(refs, str) else json.dumps(refs))
    paths = []
    for k, res in enumerate(results):
        paths.append(tmp_path / f"res{k}.json")
        paths[-1].write_text(res if isinstance(res, str) else json.dumps(res))
    code = main(["evaluate", "--references", str(refs_path), "--captions", *map(str, paths),
                 "--metrics", "Bleu_4,CIDEr", "--tokenizer", "alnum-lower", "--out", str(tmp_path / "out"), *extra])
    out = capsys.readouterr()
    return code, [line for line in out.err.splitlines() if line], out.out


BAD = {
    "image not in REFS": (REFS, [RES + [{"image_id": 9, "caption": "x"}]], r"res0\.json: entry 3: image 9 is not in .*refs\.json"),
    "two results for one image": (REFS, [RES + [{"image_id": 2, "caption": "x"}]],
                                  r"res0\.json: entry 3: image 2 already has a caption \(entry 1"),
    "caption not a string": (REFS, [[{"image_id": 1, "caption": 7}, *RES[1:]]],
                             r"res0\.json: entry 0 \(image 1\): caption is not a string or a list of strings"),
    "a list beside strings": (REFS, [[{"image_id": 1, "caption": ["a", "dog"]}, *RES[1:]]],
                              r"res0\.json: entry 1: one caption string where the first entry has a list of captions"),
    "samples of unequal number": (REFS, [RES + RES[:2] + RES[:1]],
                                  r"res0\.json: entry 1: image 2 has 2 caption\(s\) but image 1 \(entry 0\) has 3"),
    "samples scored by a COCO metric": (REFS, [RES + RES], r"--metrics Bleu_4: scores one caption per image against "
                                                        r"the references, and .*res0\.json has 2 per image"),
    "lists of samples scored by a COCO metric": (REFS, ['{"1": ["a dog", "dogs"], "2": ["a", "b"], "3": ["c", "d"]}'],
                                                 r"--metrics Bleu_4: scores one caption per image.* has 2 per image"),
    "a JSON of lists mixing shapes": (REFS, ['{"1": ["a dog", "dogs"], "2": "a cat", "3": ["c", "d"]}'],
                                      r"res0\.json: image '2': one caption string where the first entry has a list"),
    "empty results file": (REFS, [[]], r"res0\.json: no captions in it"),
    "annotation file without annotations": ({"images": REFS["images"]}, [RES],
                                            r"refs\.json: not a COCO annotation file \(no 'annotations'"),
    "results given as references": (RES, [RES], r"refs\.json: a JSON list, not a COCO annotation file"),
    "references given as captions": (REFS, [REFS], r"res0\.json: one JSON object, not captions"),
    "systems on other images": (REFS, [RES, RES[:2]], r"res1\.json: covers other images than .*res0\.json \(lacks image 3"),
    "not JSON": (REFS, ["[{\"image_id\": 1,"], r"res0\.json: not valid JSON \(line 1"),
    "image without an id type": (REFS, [[{"image_id": [1], "caption": "x"}]], r"res0\.json: entry 0: image_id \[1\] is not"),
    "JSONL line not in REFS": (REFS, ['{"image_id": 1, "caption": "a"}\n{"image_id": 7, "caption": "b"}\n'],
                               r"res0\.json: line 2: image 7 is not in .*refs\.json"),
    "lines, too few": (REFS, ["a dog\ntwo cats\n"], r"res0\.json: line 1 does not start a COCO results file"),
}
@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case):
    refs, results, message = BAD[case]
    code, err, out = run(tmp_path, capsys, refs, results)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("pregen-search evaluate: error: ")
    assert re.search(message, err[0]), err[0]
    assert not (tmp_path / "out").exists() and out == ""


def test_ids_of_the_other_type_match_and_every_form_scores_alike(tmp_path, capsys):
    """An id that matches REFS's only as a string (or number) is that image (one key has that
    decimal string); JSONL, TSV and one caption a line (REFS's order) score as the COCO results file."""
    as_strings = [{**row, "image_id": str(row["image_id"])} for row in RES]
    jsonl = "".join(json.dumps(row) + "\n" for row in reversed(as_strings))
    tsv = "image_id\tcaption\n" + "".join(f"{row['image_id']}\t{row['caption']}\n" for row in RES)
    lines = "".join(row["caption"] + "\n" for row in RES)
    code, err, out = run(tmp_path, capsys, results=(RES, as_strings, jsonl, tsv))
    assert code == 0, err
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert len({json.dumps(s) for s in scores["systems"].values()}) == 1
    (tmp_path / "lines.txt").write_text(lines)
    code = main(["evaluate", "--references", str(tmp_path / "refs.json"), "--captions", str(tmp_path / "res0.json"),
                 str(tmp_path / "lines.txt"), "--metrics", "CIDEr", "--tokenizer", "alnum-lower"])
    printed = capsys.readouterr().out
    assert code == 0 and "lines" in printed


def test_ptb_on_export_references_is_refused_with_the_reason(tmp_path, capsys):
    (tmp_path / "refs.jsonl").write_text(json.dumps({"image_id": "a.jpg", "image": 0, "ref": 0, "text": "a dog",
                                                     "tokens": ["a", "dog"]}) + "\n")
    (tmp_path / "res.json").write_text(json.dumps([{"image_id": "a.jpg", "caption": "a dog"}]))
    code = main(["evaluate", "--references", str(tmp_path / "refs.jsonl"), "--captions", str(tmp_path / "res.json"),
                 "--tokenizer", "ptb", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "already tokenized" in err[0] and "alnum-lower" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("metrics, message", [("BLEURT", "unknown post-gen metric 'BLEURT'"),
                                              ("REO_R_image", "reads the images"),
                                              ("CIDEr,CIDEr", "names a metric twice"),
                                              ("mBLEU_4", "--metrics mBLEU_4: needs at least 2 captions (samples) per image"),
                                              ("Self_CIDEr", "needs at least 2 captions (samples) per image")])
def test_metrics_that_cannot_be_scored_are_refused(tmp_path, capsys, metrics, message):
    refs, res = tmp_path / "refs.json", tmp_path / "res.json"
    refs.write_text(json.dumps(REFS))
    res.write_text(json.dumps(RES))
    code = main(["evaluate", "--references", str(refs), "--captions", str(res), "--metrics", metrics,
                 "--tokenizer", "alnum-lower", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()


def test_an_empty_caption_is_scored_with_a_warning_that_counts_them(tmp_path, capsys):
    results = [{**RES[0], "caption": ""}, {**RES[1], "caption": "  "}, RES[2]]
    code, err, out = run(tmp_path, capsys, results=(results,))
    assert code == 0 and (tmp_path / "out" / "scores.json").is_file()
    assert [line for line in err if "empty caption" in line] == [
        f"warning: {tmp_path / 'res0.json'}: 2 empty caption(s) (first: image 1), scored as the toolkits score them"]
    per_image = (tmp_path / "out" / "per_image.tsv").read_text().splitlines()
    assert per_image[0].split("\t") == ["image_id", "Bleu_4", "CIDEr", "tokenizer"] and len(per_image) == 4


def test_a_metric_asked_for_that_cannot_run_here_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PREGEN_JAX_CORENLP", raising=False)
    code, err, _ = run(tmp_path, capsys, extra=("--metrics", "SPICE", "--corenlp-dir", str(tmp_path)))
    assert code == 2 and len(err) == 1 and "--metrics SPICE: cannot run here" in err[0], err
    assert not (tmp_path / "out").exists()
