"""The built-in dataset, corpus readers, feature files and the vocabulary."""
import json

import numpy as np
import pytest
from scipy.io import savemat

from pregen_jax.datasets import (
    ShapesConfig,
    Vocabulary,
    load_shapes,
    read_features,
    read_flickr8k,
    read_karpathy_json,
    shapes,
    tokenize,
)
from tests.conftest import shared

SMALL = ShapesConfig(train=40, val=10, test=10, seed=3)


def test_shapes_is_deterministic_and_cached(tmp_path):
    first = load_shapes(SMALL, cache_dir=tmp_path)
    again = load_shapes(SMALL, cache_dir=tmp_path)  # from the cache
    fresh = shapes.generate(SMALL)
    assert (tmp_path / SMALL.folder_name / "meta.json").is_file()
    for split in ("train", "val", "test"):
        assert first[split].captions == again[split].captions == fresh[split].captions
        np.testing.assert_array_equal(again[split].pixels, fresh[split].pixels)
    assert first["train"].pixels.shape == (40, 48, 48, 3) and first["train"].pixels.dtype == np.uint8
    other = shapes.generate(ShapesConfig(train=40, val=10, test=10, seed=4))
    assert other["train"].captions != fresh["train"].captions


def test_shapes_captions_are_varied_descriptions():
    data = shapes.generate(ShapesConfig(train=300, val=1, test=1))
    refs = data["train"].captions
    assert all(len(r) == 5 for r in refs)
    lengths = [len(c) for r in refs for c in r]
    assert min(lengths) >= 3 and max(lengths) <= 15
    words = {w for r in refs for c in r for w in c}
    assert {"box", "square", "ball", "circle", "above", "there", "one", "of", "them"} <= words
    assert len(set(shapes.SHAPES)) >= 6 and len(shapes.COLOURS) >= 8
    # different annotators describe the same picture differently
    assert np.mean([len({" ".join(c) for c in r}) for r in refs]) > 3.5


def test_vocabulary():
    vocab = Vocabulary.build([[["a", "red", "box"], ["a", "box"]], [["a", "blue", "ball"]]], min_count=2)
    assert vocab.tokens == ["<edge>", "<unk>", "a", "box"]
    assert vocab.encode(["a", "zebra"]) == [2, 1]
    assert vocab.decode([2, 3, 0, 2]) == ["a", "box"]


def test_flickr8k_reader():
    folder = shared("flickr8k")
    with pytest.warns(UserWarning, match="no captions .*1.jpg"):
        data = read_flickr8k(folder)
    assert [len(data[s]) for s in ("train", "val", "test")] == [6000, 1000, 1000]
    assert all(len(refs) == 5 for refs in data["test"].captions)
    first_line = (folder / "Flickr8k.token.txt").read_text().splitlines()[0]
    image_id, raw = first_line.split("#")[0], first_line.split("\t")[1]
    split = next(s for s in ("train", "val", "test") if image_id in data[s].image_ids)
    assert data[split].captions[data[split].image_ids.index(image_id)][0] == tokenize(raw)
    with pytest.raises(ValueError, match="testImages.txt: 5 listed image"):
        read_flickr8k(folder, strict=True)


def test_karpathy_json_reader_and_errors(tmp_path):
    doc = {"dataset": "toy", "images": [
        {"filename": "a.jpg", "split": "train", "sentences": [{"raw": "A dog, running!"}, {"tokens": ["A", "cat"]}]},
        {"filename": "b.jpg", "split": "restval", "sentences": [{"raw": "two birds"}]},
        {"filename": "c.jpg", "split": "test", "sentences": [{"raw": "a tree"}]}]}
    path = tmp_path / "dataset_toy.json"
    path.write_text(json.dumps(doc))
    data = read_karpathy_json(path)
    assert data["train"].image_ids == ["a.jpg", "b.jpg"]
    assert data["train"].captions[0] == [["a", "dog", "running"], ["a", "cat"]]
    doc["images"][2]["sentences"] = [{"raw": "!!!"}]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="dataset_toy.json .*image c.jpg, caption 0 is empty"):
        read_karpathy_json(path)
    doc["images"][2]["sentences"] = []
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="image c.jpg has no reference captions"):
        read_karpathy_json(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_karpathy_json(path)


def test_feature_readers(tmp_path):
    feats = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "f.npy", feats)
    np.testing.assert_array_equal(read_features(tmp_path / "f.npy", ["x", "z"], ["x", "y", "z"]), feats[[0, 2]])
    np.savez(tmp_path / "f.npz", features=feats, image_ids=np.array(["x", "y", "z"]))
    np.testing.assert_array_equal(read_features(tmp_path / "f.npz", ["z"]), feats[[2]])
    savemat(tmp_path / "vgg_feats.mat", {"feats": feats.T})
    np.testing.assert_array_equal(read_features(tmp_path / "vgg_feats.mat"), feats)
    with pytest.raises(ValueError, match="f.npz: no features for image w"):
        read_features(tmp_path / "f.npz", ["x", "w"])
    with pytest.raises(ValueError, match="3 feature rows for 2 images"):
        read_features(tmp_path / "f.npy", ["x", "y"])
    bad = feats.copy()
    bad[1, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    with pytest.raises(ValueError, match="nan.npy: features contain NaN"):
        read_features(tmp_path / "nan.npy")
    (tmp_path / "junk.npy").write_bytes(b"junk")
    with pytest.raises(ValueError, match="junk.npy: cannot read features"):
        read_features(tmp_path / "junk.npy")


def test_a_karpathy_corpus_matches_captions_keyed_by_cocoid_or_filename(tmp_path):
    """COCO's tools key results by ``cocoid``; the search keys a Karpathy corpus by file name: both match."""
    from pregen_jax.datasets.generated import read_caption_texts, read_generated_captions
    doc = {"dataset": "coco", "images": [
        {"filename": "COCO_val2014_000000000042.jpg", "cocoid": 42, "split": "test", "sentences": [{"raw": "a dog"}]},
        {"filename": "COCO_val2014_000000000073.jpg", "cocoid": 73, "split": "test", "sentences": [{"raw": "a cat"}]}]}
    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps(doc))
    test = read_karpathy_json(path)["test"]
    assert test.aliases == {"42": "COCO_val2014_000000000042.jpg", "73": "COCO_val2014_000000000073.jpg"}
    by_cocoid = tmp_path / "results.json"
    by_cocoid.write_text(json.dumps([{"image_id": 73, "caption": "A black cat."},
                                     {"image_id": 42, "caption": "A dog runs."}]))
    assert read_generated_captions(by_cocoid, test.image_ids, aliases=test.aliases) == [["a", "dog", "runs"],
                                                                                       ["a", "black", "cat"]]
    assert read_caption_texts(by_cocoid, test.image_ids, aliases=test.aliases) == ["A dog runs.", "A black cat."]
    by_name = tmp_path / "results.jsonl"
    by_name.write_text("".join(json.dumps({"image_id": i, "caption": c}) + "\n" for i, c in
                               (("COCO_val2014_000000000042.jpg", "a dog"), ("COCO_val2014_000000000073.jpg", "a cat"))))
    assert read_generated_captions(by_name, test.image_ids, aliases=test.aliases) == [["a", "dog"], ["a", "cat"]]
    with pytest.raises(ValueError, match="image 99 is not in"):
        by_cocoid.write_text(json.dumps([{"image_id": 99, "caption": "a bird"}]))
        read_generated_captions(by_cocoid, test.image_ids, aliases=test.aliases)
