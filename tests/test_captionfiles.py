"""One reader of references and captions for every command (issue 40, item 1): every form read
alike, the same one-line errors, and a bad captions file refused before any search is opened."""
import json

import pytest

from pregen_jax import cli
from pregen_jax.captionfiles import CaptionRows, match_captions, parse_captions, read_caption_file, read_references
from pregen_jax.pipeline.finished import FinishedSearch

REFS = {"images": [{"id": 3}, {"id": 1}, {"id": 2}],
        "annotations": [{"image_id": i, "caption": c} for i, c in ((1, "A dog."), (2, "Two cats"), (3, "a car"),
                                                                  (1, "a brown dog"))]}
FORMS = {
    "res.json": json.dumps([{"image_id": 2, "caption": "two cats"}, {"image_id": 1, "caption": "a dog"},
                            {"image_id": 3, "caption": "a car", "score": 1}]),
    "res.jsonl": '{"image_id": "2", "caption": "two cats"}\n\n{"image_id": 1, "caption": "a dog"}\n'
                 '{"image_id": 3, "caption": "a car"}\n',
    "res.tsv": "model\timage_id\tcaption\nm\t3\ta car\nm\t1\ta dog\nm\t2\ttwo cats\n",
    "res.txt": "a car\r\na dog\ntwo cats",  # REFS's image order: the annotation file's images list
}


@pytest.mark.parametrize("name", list(FORMS))
def test_every_form_gives_the_same_captions(tmp_path, name):
    (tmp_path / "refs.json").write_text(json.dumps(REFS))
    (tmp_path / name).write_text(FORMS[name])
    refs = read_references(tmp_path / "refs.json")
    assert list(refs.captions) == [3, 1, 2] and refs.captions[1] == ["A dog.", "a brown dog"]
    assert read_caption_file(tmp_path / name, refs) == {1: "a dog", 2: "two cats", 3: "a car"}
    assert parse_captions(tmp_path / name).form == {"json": "coco-results", "jsonl": "jsonl", "tsv": "tsv",
                                                    "txt": "lines"}[name.split(".")[1]]


def test_karpathy_images_match_by_cocoid_or_filename_and_name_the_split(tmp_path):
    karpathy = {"images": [{"filename": "a.jpg", "cocoid": 7, "split": "val", "sentences": [{"raw": "A dog."}]},
                           {"filename": "b.jpg", "split": "val", "sentences": [{"raw": "A cat."}]},
                           {"filename": "c.jpg", "split": "test", "sentences": [{"raw": "A car."}]}]}
    (tmp_path / "k.json").write_text(json.dumps(karpathy))
    refs = read_references(tmp_path / "k.json", "val")
    (tmp_path / "c.jsonl").write_text('{"image_id": "a.jpg", "caption": "x"}\n{"image_id": "b.jpg", "caption": "y"}\n')
    assert read_caption_file(tmp_path / "c.jsonl", refs) == {7: "x", "b.jpg": "y"}
    (tmp_path / "t.jsonl").write_text('{"image_id": "c.jpg", "caption": "x"}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl: line 1: image 'c.jpg' is not in the val split of .*k\.json"):
        read_caption_file(tmp_path / "t.jsonl", refs)
    with pytest.raises(ValueError, match=r"k\.json: no image in split 'train' \(--split; it has test, val\)"):
        read_references(tmp_path / "k.json", "train")


def test_one_karpathy_reader_serves_the_search_and_evaluate(tmp_path):
    """The search's corpus reader and evaluate's references read the same file through
    ``read_karpathy``: same images, same texts (a sentence with only ``tokens`` is its tokens joined)."""
    from pregen_jax.datasets import read_karpathy_json
    karpathy = {"dataset": "coco", "images": [
        {"filename": "a.jpg", "cocoid": 7, "split": "test", "sentences": [{"raw": "A dog."}, {"tokens": ["a", "cat"]}]},
        {"filename": "b.jpg", "split": "test", "sentences": [{"raw": "Two birds!"}]}]}
    (tmp_path / "k.json").write_text(json.dumps(karpathy))
    refs = read_references(tmp_path / "k.json", "test")
    test = read_karpathy_json(tmp_path / "k.json")["test"]
    assert refs.captions == {7: ["A dog.", "a cat"], "b.jpg": ["Two birds!"]} and refs.aliases == {"a.jpg": 7}
    assert test.raw == list(refs.captions.values()) and test.aliases == {"7": "a.jpg"}
    karpathy["images"][1]["cocoid"] = "8"
    (tmp_path / "k.json").write_text(json.dumps(karpathy))
    for read in (lambda p: read_references(p, "test"), read_karpathy_json):
        with pytest.raises(ValueError, match=r"k\.json: image 'b.jpg': 'cocoid' = \"8\": must be an integer"):
            read(tmp_path / "k.json")


def test_a_subset_is_allowed_only_where_asked():
    rows = CaptionRows("c.jsonl", "jsonl", [("line 1", "a", "x")])
    assert match_captions(rows, ["a", "b"], "the val split", complete=False) == {"a": "x"}
    with pytest.raises(ValueError, match=r"c.jsonl: no caption for image 'b' of the val split"):
        match_captions(rows, ["a", "b"], "the val split")


def test_exported_references_are_checked_line_by_line(tmp_path):
    good = {"image_id": "a.jpg", "image": 0, "ref": 0, "text": "a dog", "tokens": ["a", "dog"]}
    (tmp_path / "refs.jsonl").write_text(json.dumps(good) + "\n" + json.dumps({**good, "image": "0"}) + "\n")
    with pytest.raises(ValueError, match=r"refs\.jsonl: line 2: image = \"0\" is not an integer"):
        read_references(tmp_path / "refs.jsonl")
    (tmp_path / "refs.jsonl").write_text(json.dumps(good) + "\n")
    refs = read_references(tmp_path / "refs.jsonl")
    assert refs.tokenizer == "alnum-lower" and refs.captions == {"a.jpg": ["a dog"]}  # no record: alnum-lower


@pytest.fixture
def no_search(monkeypatch):
    """Opening a search fails the test: what is checked with it must be checked before."""
    def refuse(*args, **kwargs):
        raise AssertionError("the search was opened")
    monkeypatch.setattr(FinishedSearch, "open", classmethod(refuse))


BAD_CAPTIONS = {"bad.json": ('[{"image_id": 1, "caption": ["a"]}]', r"bad\.json: entry 0 \(image 1\): caption is not a string"),
                "bad.jsonl": ('{"image_id": 1, "caption": "a"}\n{"image_id": 2\n', r"bad\.jsonl: line 2: not valid JSON"),
                "bad.tsv": ("image_id\tcaption\n1\ta\tb\n", r"bad\.tsv: line 2: 3 tab-separated fields")}


@pytest.mark.parametrize("name", list(BAD_CAPTIONS))
@pytest.mark.parametrize("command", ["select", "predict"])
def test_a_bad_captions_file_is_refused_before_the_search_is_opened(tmp_path, capsys, no_search, command, name):
    import re
    text, message = BAD_CAPTIONS[name]
    (tmp_path / name).write_text(text)
    extra = (["--refprobs", str(tmp_path / "m.npz")] if command == "predict" else ["--out", str(tmp_path / "o")])
    assert cli.main([command, "--search", str(tmp_path / "run"), *extra, "--captions", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pregen-search {command}: error: ") and re.search(message, err[0]), err
    assert not (tmp_path / "o").exists()
