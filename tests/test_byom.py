"""Models of any framework: captions keyed by image id, and settings errors in one plain line (the
guide, docs/guides/bring-your-own-model.md, runs in tests/test_jobs.py)."""
import json

import numpy as np
import pytest

from pregen_jax import cli
from pregen_jax.captioning import load_trained
from pregen_jax.datasets import Vocabulary, tokenize
from pregen_jax.datasets.generated import read_generated_captions
from pregen_jax.pipeline import SearchConfig
from pregen_jax.pipeline.sources import load_data, precomputed_candidates
from pregen_jax.training import checkpoints
from tests.builders import write_precomputed

# ------------------------------------------------------------------ caption files keyed by image id


IDS = ["a.jpg", "b.jpg", "c.jpg"]


@pytest.mark.parametrize("name, text", [
    ("caps.txt", "A dog.\nTwo cats!\nbird\n"),
    ("caps.jsonl", '{"image_id": "c.jpg", "caption": "bird", "score": 0.1}\n\n'
                   '{"image_id": "a.jpg", "caption": "A dog."}\n{"image_id": "b.jpg", "caption": "Two cats!"}\n'),
    ("caps.tsv", "caption\timage_id\nTwo cats!\tb.jpg\nbird\tc.jpg\nA dog.\ta.jpg\n"),
    ("tsv_as.txt", "model\timage_id\tcaption\nm\tc.jpg\tbird\nm\ta.jpg\tA dog.\nm\tb.jpg\tTwo cats!\n"),
])
def test_every_form_gives_the_captions_in_test_order(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert read_generated_captions(tmp_path / name, IDS) == [["a", "dog"], ["two", "cats"], ["bird"]]


def test_lines_end_at_newlines_only(tmp_path):
    (tmp_path / "caps.txt").write_bytes("a dog\u2028runs\r\ntwo cats\nbird".encode())
    assert read_generated_captions(tmp_path / "caps.txt", IDS) == [["a", "dog", "runs"], ["two", "cats"], ["bird"]]
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty.txt: no captions in it"):
        read_generated_captions(tmp_path / "empty.txt", IDS)


def test_numeric_ids_in_jsonl_match_string_ids(tmp_path):
    (tmp_path / "caps.jsonl").write_text('{"image_id": 2, "caption": "x"}\n{"image_id": 1, "caption": "y"}\n')
    assert read_generated_captions(tmp_path / "caps.jsonl", ["1", "2"]) == [["y"], ["x"]]
    (tmp_path / "caps.json").write_text('[{"image_id": 2, "caption": "x"}, {"image_id": "1", "caption": "y"}]')
    assert read_generated_captions(tmp_path / "caps.json", ["1", "2"]) == [["y"], ["x"]]  # a COCO results file


@pytest.mark.parametrize("name, text, message", [
    ("c.jsonl", '{"image_id": "a.jpg", "caption": "x"}\n{"image_id": "z.jpg", "caption": "y"}\n',
     r"c.jsonl: line 2: image 'z.jpg' is not in the test split"),
    ("c.jsonl", '{"image_id": "b.jpg", "caption": "x"}\n', r"c.jsonl: no caption for image 'a.jpg' and 1 more of the test split"),
    ("c.jsonl", '{"image_id": "a.jpg", "caption": "x"}\n{"image_id": "a.jpg", "caption": "y"}\n',
     r"c.jsonl: line 2: image 'a.jpg' already has a caption \(line 1"),
    ("c.jsonl", '{"image_id": "a.jpg", "caption": "?!"}\n', r"c.jsonl: line 1 \(image 'a.jpg'\): an empty caption"),
    ("c.txt", "a dog\n?!\nbird\n", r"c.txt: line 2 \(image 'b.jpg'\): an empty caption"),
    ("c.jsonl", '{"image_id": "a.jpg", "caption": "x"}\n{"image_id": "b.jpg"\n', r"c.jsonl: line 2: not valid JSON"),
    ("c.jsonl", '{"image": "a.jpg", "caption": "x"}\n', r'c.jsonl: line 1: expected an object with "image_id"'),
    ("c.jsonl", '{"image_id": "a.jpg", "caption": ["x"]}\n', r"line 1 \(image 'a.jpg'\): caption is not a string"),
    ("c.jsonl", "a dog\nb cat\nc bird\n", r"c.jsonl: line 1 does not start JSONL"),
    ("c.json", "a dog\nb cat\nc bird\n", r"c.json: line 1 does not start a COCO results file"),
    ("c.json", '{"annotations": [], "images": []}', r"c.json: one JSON object, not captions"),
    ("c.json", '[{"image_id": "a.jpg", "caption": "x"}, {"image_id": "q.jpg", "caption": "y"}]',
     r"c.json: entry 1: image 'q.jpg' is not in the test split"),
    ("c.tsv", "a dog\nb cat\nc bird\n", r"c.tsv: line 1 does not start TSV \(a header line"),
    ("c.tsv", "image_id\tcaption\na.jpg\tx\tz\n", r"c.tsv: line 2: 3 tab-separated fields, the header has 2"),
    ("c.tsv", "image_id\ttext\na.jpg\tx\n", r"c.tsv: line 1: the header names image_id but no caption column"),
    ("c.tsv", "image_id\tcaption\nc.jpg\tx\nb.jpg\ty\n", r"c.tsv: no caption for image 'a.jpg'"),
    ("c.txt", "x\ny\n", r"c.txt: 2 captions but the test split has 3 images"),
])
def test_bad_caption_files_name_the_line_and_image(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message):
        read_generated_captions(tmp_path / name, IDS)


def test_a_search_reads_shuffled_jsonl_as_it_reads_lines(tmp_path):
    config_path = write_precomputed(tmp_path, models=2)
    config = SearchConfig.load(config_path)
    data = load_data(config, progress=False)
    lines = (tmp_path / "model1.txt").read_text().splitlines()
    order = np.random.default_rng(3).permutation(len(lines))
    (tmp_path / "model1.jsonl").write_text("".join(
        json.dumps({"image_id": data.test.image_ids[n], "caption": lines[n]}) + "\n" for n in order))
    (tmp_path / "model0.tsv").write_text("image_id\tcaption\n" + "".join(
        f"{data.test.image_ids[n]}\t{lines[n]}\n" for n in order[::-1]))
    keyed = config_path.read_text().replace('"model1.txt"', '"model1.jsonl"').replace('"model0.txt"', '"model0.tsv"')
    (tmp_path / "keyed.toml").write_text(keyed)
    by_lines = precomputed_candidates(config, data)
    by_id = precomputed_candidates(SearchConfig.load(tmp_path / "keyed.toml"), data)
    assert by_id[1].captions == by_lines[1].captions == [tokenize(line) for line in lines]
    assert by_id[0].captions == by_lines[1].captions  # model0.tsv holds model1's captions
    assert by_id[1].key != by_lines[1].key  # another file: another cache key


def test_a_search_names_the_caption_file_and_image(tmp_path, capsys):
    config_path = write_precomputed(tmp_path, models=2)
    (tmp_path / "model1.jsonl").write_text('{"image_id": "0.jpg", "caption": "a ball"}\n')
    config_path.write_text(config_path.read_text().replace('"model1.txt"', '"model1.jsonl"'))
    assert cli.main(["run", "--config", str(config_path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "model1.jsonl: no caption for image '1.jpg' and 10 more of the test split" in err, err
    assert not list((tmp_path / "out").glob("*.tsv")) and not (tmp_path / "out" / "report.md").exists()


# ------------------------------------------------------------------ settings errors in one plain line


PYDANTIC_TEXT = ("ArgsKwargs", "Field required", "pydantic", "Value error,", "validation error", "For further")


@pytest.mark.parametrize("raw, message", [
    ({"precomputed": [{"architecture": "a", "run": "1", "ref_probs": "x.npz"}]},
     "s.toml: [precomputed 1] captions is required (no default)"),
    ({"precomputed": [{}]}, "s.toml: [precomputed 1] architecture is required (no default)"),
    ({"models": {"architectures": ["lstm"]}}, "s.toml: [models] architectures = ['lstm']: unknown architecture 'lstm'; registered:"),
    ({"models": {"captioner": 3}}, "s.toml: [models] captioner = 3: must be a table"),
    ({"models": {"checkpoints": [{"a": 1}], "vocabulary": "v.json"}},
     "s.toml: [models] checkpoints[0]: Input should be a valid string"),
    ({"training": {"snapshot_epochs": [0]}}, "s.toml: [training] snapshot_epochs[0] = 0: Input should be greater"),
    ({"generation": {"max_len": 2, "min_len": 5}}, "s.toml: [generation] max_len = 2 is below min_len = 5"),
    ({"data": {"source": "karpathy"}}, "s.toml: [data] source = 'karpathy' needs karpathy_json"),
    ({"data": {"sauce": "shapes"}}, "s.toml: [data] unknown setting 'sauce'"),
])
def test_settings_errors_are_one_plain_line(raw, message):
    with pytest.raises(ValueError) as caught:
        SearchConfig.from_dict(raw, "s.toml")
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text and not [word for word in PYDANTIC_TEXT if word in text], text


def test_a_checkpoint_with_unknown_model_settings_is_one_plain_line(tmp_path):
    vocab = Vocabulary(["a", "ball"])
    path = tmp_path / "model.msgpack"
    checkpoints.save(path, {"params": {}}, {"arch": "merge", "model_config": {"embed_size": 8, "depth": 3},
                                            "feature_size": 4, "vocab_fingerprint": vocab.fingerprint(),
                                            "vocab_size": len(vocab)})
    with pytest.raises(ValueError) as caught:
        load_trained(path, vocab)
    text = str(caught.value)
    assert text == f"{path}: not a pregen-jax caption model checkpoint (model_config: unknown setting 'depth')"
