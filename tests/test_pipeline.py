"""`pregen-search run` and `demo`: outputs, caching, resuming, and bad input."""
import json

import numpy as np
import pandas as pd
import pytest

from pregen_jax import RefProbs, cli, postgen, tiers
from pregen_jax.pipeline import SearchConfig
from pregen_jax.pipeline import search as search_module

WORDS = ["a", "red", "blue", "green", "ball", "box", "ring", "above", "below", "small", "big"]


def write_inputs(tmp_path, images=12, models=3):
    """A Karpathy JSON corpus and precomputed outputs (RefProbs + captions) of a few models."""
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
        entries.append({"architecture": ["init", "merge", "par"][m], "run": "1",
                        "ref_probs": str(tmp_path / f"model{m}.npz"), "captions": str(tmp_path / f"model{m}.txt")})
    config = {"name": "toy", "data": {"source": "karpathy", "karpathy_json": str(tmp_path / "dataset_toy.json")},
              "postgen": {"metrics": ["CIDEr", "WMD", "ROUGE_L"]}, "precomputed": entries}
    import tomli_w
    (tmp_path / "search.toml").write_text(tomli_w.dumps(config))
    return tmp_path / "search.toml"


def run(config_path, out):
    return cli.main(["run", "--config", str(config_path), "--out", str(out), "--no-progress"])


def test_run_with_precomputed_models(tmp_path):
    out = tmp_path / "out"
    assert run(write_inputs(tmp_path), out) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 3 * 15
    expected = ["dataset", "architecture", "run", "epoch", "num_strata", "stratum", "CIDEr", "WMD", "ROUGE_L",
                *tiers.DEFAULT_SPACE.names, "tokenizer"]
    assert list(table.columns) == expected
    assert table["tokenizer"].eq("alnum-lower").all()
    for name in ("correlations_CIDEr.tsv", "correlations_WMD.tsv", "report.md", "summary.md", "config.toml",
                 "plot_best_CIDEr.png", "excluded.tsv"):
        assert (out / name).is_file(), name
    correlations = pd.read_csv(out / "correlations_CIDEr.tsv", sep="\t")
    assert list(correlations.columns[:4]) == ["pregen", "all_R^2", "all_R", "all_p"]
    report = (out / "report.md").read_text()
    assert "Tokenizer (all scores): alnum-lower" in report and "## Time per stage" in report
    assert SearchConfig.load(out / "config.toml").precomputed[2].architecture == "par"
    # Per-stratum post-gen scores are those of the block alone.
    whole = table[(table["architecture"] == "init") & (table["num_strata"] == 1)]["CIDEr"].iloc[0]
    doc = json.loads((tmp_path / "dataset_toy.json").read_text())
    gts = {im["filename"]: [" ".join(s["raw"].split()) for s in im["sentences"]] for im in doc["images"][:12]}
    res = {f"{n}.jpg": [line] for n, line in enumerate((tmp_path / "model0.txt").read_text().splitlines())}
    assert whole == pytest.approx(postgen.CIDEr().compute_score(gts, res)[0], rel=1e-6)


def test_interrupted_run_resumes_and_finished_run_is_cached(tmp_path, monkeypatch):
    config = write_inputs(tmp_path)
    out = tmp_path / "out"
    real_sweep, real_score = tiers.sweep, postgen.score_strata
    calls = {"sweep": 0, "score": 0}

    def crashing_sweep(*args, **kwargs):
        calls["sweep"] += 1
        if calls["sweep"] == 2:
            raise KeyboardInterrupt
        return real_sweep(*args, **kwargs)
    monkeypatch.setattr(search_module.tiers, "sweep", crashing_sweep)
    assert run(config, out) == 130
    assert not (out / "table.tsv").exists()

    def counting_score(*args, **kwargs):
        calls["score"] += 1
        return real_score(*args, **kwargs)
    calls["sweep"] = -100  # no more crashes
    monkeypatch.setattr(search_module.postgen, "score_strata", counting_score)
    assert run(config, out) == 0
    assert calls["score"] == 1        # model 0 and 1 post-gen cached before the crash; only model 2 left
    assert calls["sweep"] == -100 + 2  # model 0's sweep cached; models 1 and 2 swept
    first = pd.read_csv(out / "table.tsv", sep="\t")
    assert run(config, out) == 0
    assert calls["score"] == 1 and calls["sweep"] == -98  # everything cached the second time
    pd.testing.assert_frame_equal(first, pd.read_csv(out / "table.tsv", sep="\t"))


@pytest.mark.parametrize("damage, message", [
    (lambda p: (p / "model1.txt").write_text((p / "model1.txt").read_text().replace("\n", "\n\n", 1)),
     r"model1.txt: 13 captions but the test split has 12"),
    (lambda p: (p / "model1.txt").write_text("!!\n" + "\n".join((p / "model1.txt").read_text().splitlines()[1:])),
     r"model1.txt: line 1 is an empty caption"),
    (lambda p: np.savez(p / "model2.npz", probs=np.full((12, 5, 3), np.nan), ranks=np.zeros((12, 5, 3), int),
                        mask=np.ones((12, 5, 3), bool)), r"model2.npz: image 0, reference 0, position 0"),
    (lambda p: (p / "model0.npz").write_bytes(b"garbage"), r"model0.npz: not a readable .npz"),
    (lambda p: (p / "search.toml").write_text((p / "search.toml").read_text() + "\n[wrong]\nx = 1\n"),
     r"search.toml: unknown setting\(s\) \['wrong'\]"),
])
def test_bad_input_is_a_clear_error_with_no_output(tmp_path, capsys, damage, message):
    config = write_inputs(tmp_path)
    damage(tmp_path)
    out = tmp_path / "out"
    assert run(config, out) == 2
    import re
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


def test_demo_quick_end_to_end_then_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "demo"
    assert cli.main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 8 * 15 and set(table["architecture"]) == {"init", "pre", "par", "merge"}
    assert {"METEOR", "CIDEr", "WMD"} <= set(table.columns) or "METEOR" not in postgen.availability()
    model_file = out / "models" / "merge-1" / "model.msgpack"
    stamp = model_file.stat().st_mtime_ns
    report = (out / "report.md").read_text()
    assert "SPICE" in report  # available, or one line saying why not
    assert cli.main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
    assert model_file.stat().st_mtime_ns == stamp  # reused, not retrained
    pd.testing.assert_frame_equal(table, pd.read_csv(out / "table.tsv", sep="\t"))


def test_run_trains_on_a_karpathy_corpus_with_features_then_reuses_checkpoints(tmp_path):
    rng = np.random.default_rng(1)
    images = []
    for n in range(60):
        split = "train" if n < 30 else ("val" if n < 40 else "test")
        images.append({"filename": f"{n}.jpg", "split": split,
                       "sentences": [{"raw": " ".join(rng.choice(WORDS, rng.integers(3, 7)))} for _ in range(3)]})
    (tmp_path / "dataset_toy.json").write_text(json.dumps({"dataset": "toy", "images": images}))
    np.save(tmp_path / "feats.npy", rng.normal(size=(60, 6)).astype(np.float32))
    import tomli_w
    config = {"name": "karpathy", "data": {"source": "karpathy", "karpathy_json": str(tmp_path / "dataset_toy.json"),
                                           "features": str(tmp_path / "feats.npy"), "min_count": 1},
              "models": {"architectures": ["par"], "runs": 1, "embed_size": 8, "hidden_size": 8, "image_size": 8},
              "training": {"epochs": 2, "batch_size": 16, "snapshot_epochs": [1]},
              "generation": {"beam_width": 2, "max_len": 8},
              "postgen": {"metrics": ["CIDEr", "Bleu_4"]}}
    (tmp_path / "train.toml").write_text(tomli_w.dumps(config))
    out = tmp_path / "trained"
    assert run(tmp_path / "train.toml", out) == 0
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 2 * 15 and set(table["epoch"].astype(str)) == {"final", "1"}
    captions = next((out / "models" / "par-1").glob("captions-*.txt")).read_text().splitlines()
    assert len(captions) == 20 and all(1 <= len(c.split()) <= 8 for c in captions)
    # The trained model, reused from its checkpoint by another search.
    config["models"]["checkpoints"] = [str(out / "models" / "par-1" / "model.msgpack")]
    config["models"]["vocabulary"] = str(out / "vocabulary.json")
    (tmp_path / "reuse.toml").write_text(tomli_w.dumps(config))
    assert run(tmp_path / "reuse.toml", tmp_path / "reused") == 0
    reused = pd.read_csv(tmp_path / "reused" / "table.tsv", sep="\t")
    final = table[table["epoch"].astype(str) == "final"].reset_index(drop=True)
    np.testing.assert_allclose(reused[tiers.DEFAULT_SPACE.names].to_numpy(), final[tiers.DEFAULT_SPACE.names].to_numpy(),
                               rtol=1e-6)
