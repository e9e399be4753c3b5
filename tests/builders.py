"""Small real inputs the pipeline tests build in tmp_path: a Karpathy-style corpus, precomputed
model outputs, and a corpus with image features to train on."""
import json

import numpy as np
import tomli_w

from pregen_jax import RefProbs

WORDS = ["a", "red", "blue", "green", "ball", "box", "ring", "above", "below", "small", "big"]


def write_precomputed(tmp_path, images=12, models=3, metrics=("CIDEr", "WMD", "ROUGE_L")):
    """A Karpathy JSON test split and precomputed outputs (RefProbs + captions) of a few models.

    Returns the path of a search config that ranks them.
    """
    rng = np.random.default_rng(0)
    refs = [[" ".join(rng.choice(WORDS, rng.integers(3, 8))) for _ in range(5)] for _ in range(images)]
    doc = {"dataset": "toy", "images": [{"filename": f"{n}.jpg", "split": "test",
                                         "sentences": [{"raw": r} for r in image_refs]}
                                        for n, image_refs in enumerate(refs)]}
    doc["images"].append({"filename": "t.jpg", "split": "train", "sentences": [{"raw": "a ball"}]})
    (tmp_path / "dataset_toy.json").write_text(json.dumps(doc))
    entries = []
    for m in range(models):
        lengths = np.array([[len(r.split()) + 1 for r in image_refs] for image_refs in refs])
        mask = np.arange(lengths.max()) < lengths[..., None]
        quality = 0.3 + 0.2 * m
        ranks = np.where(rng.random(mask.shape) < quality, 0, rng.integers(1, 9, mask.shape))
        probs = np.where(ranks == 0, rng.uniform(0.3, 0.9, mask.shape), rng.uniform(0.001, 0.3, mask.shape))
        RefProbs(probs, ranks, mask).save(tmp_path / f"model{m}.npz")
        captions = [image_refs[0] if rng.random() < quality else " ".join(rng.choice(WORDS, 4))
                    for image_refs in refs]
        (tmp_path / f"model{m}.txt").write_text("\n".join(captions) + "\n")
        entries.append({"architecture": ["init", "merge", "par"][m % 3], "run": str(1 + m // 3),
                        "ref_probs": f"model{m}.npz", "captions": f"model{m}.txt"})
    config = {"name": "toy", "data": {"source": "karpathy", "karpathy_json": "dataset_toy.json"},
              "postgen": {"metrics": list(metrics)}, "precomputed": entries}
    (tmp_path / "search.toml").write_text(tomli_w.dumps(config))
    return tmp_path / "search.toml"


def write_training_corpus(tmp_path, images=60, refs=3, feature_size=6):
    """A Karpathy JSON with train/val/test splits (30/10/20 of 60) and random .npy features."""
    rng = np.random.default_rng(1)
    doc = []
    for n in range(images):
        split = "train" if n < images // 2 else ("val" if n < images * 2 // 3 else "test")
        doc.append({"filename": f"{n}.jpg", "split": split,
                    "sentences": [{"raw": " ".join(rng.choice(WORDS, rng.integers(3, 7)))} for _ in range(refs)]})
    (tmp_path / "dataset_toy.json").write_text(json.dumps({"dataset": "toy", "images": doc}))
    np.save(tmp_path / "feats.npy", rng.normal(size=(images, feature_size)).astype(np.float32))


def training_config(**sections) -> dict:
    """A search that trains one tiny model on ``write_training_corpus``'s files (sections override)."""
    config = {"name": "tiny", "data": {"source": "karpathy", "karpathy_json": "dataset_toy.json",
                                       "features": "feats.npy", "min_count": 1},
              "models": {"architectures": ["par"], "runs": 1,
                         "rnn": {"embed_size": 8, "hidden_size": 8, "image_size": 8}},
              "training": {"epochs": 1, "batch_size": 16, "snapshot_epochs": []},
              "generation": {"beam_width": 2, "max_len": 8, "min_len": 2},
              "postgen": {"metrics": ["CIDEr", "WMD"]}}
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    return config


def write_config(path, config: dict):
    path.write_text(tomli_w.dumps(config))
    return path


def scst_toy_task():
    """SCST's toy task (tests/test_scst.py, tests/test_scst_fast.py): four images, each described by
    one word ("red", "blue", ...), and an untrained merge GRU. Returns (model, params, features
    f32[4, 4], captions, vocab)."""
    from pregen_jax.captioning import RnnConfig, make_model
    from pregen_jax.captioning.train import init_params
    from pregen_jax.datasets import Vocabulary

    words = ["red", "blue", "green", "black"]
    captions = [[[w, "shape"], [w, "shape"]] for w in words]
    vocab = Vocabulary.build(captions, 1)
    features = np.eye(4, dtype=np.float32)
    model = make_model("merge", RnnConfig(embed_size=16, hidden_size=16, image_size=16, dropout=0.0), len(vocab))
    return model, init_params(model, 4, 0), features, captions, vocab
