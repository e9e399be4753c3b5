"""The rules for bad input and faults, one reader at a time: each damaged file gets one ValueError
naming the file (and line, key or image id); a cache entry follows everything that determines it."""
import json
import sys

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from pregen_jax import io, tiers
from pregen_jax.meta import judgments as jm
from pregen_jax.meta import mutt
from pregen_jax.pipeline import model_level
from pregen_jax.pipeline import space as stages
from pregen_jax.pipeline.cache import Stage, StageCache
from pregen_jax.pipeline.config import PregenConfig


@pytest.mark.parametrize("image_id", [[1, 2], {"id": 1}, None, True, 1.5])
def test_mutt_image_id_must_be_a_number_or_a_string(tmp_path, image_id):
    path = tmp_path / "swap_a.json"
    path.write_text(json.dumps([{"image_id": 1, "caption": "a dog runs"}, {"image_id": image_id, "caption": "a cat"}]))
    with pytest.raises(ValueError, match=r"swap_a.json: entry 1: image_id = .*: must be a number or a string"):
        mutt.read_sentences(path)


def test_mutt_files_may_start_with_a_bom(tmp_path):
    path = tmp_path / "swap_a.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"image_id": 7, "caption": "a dog runs"}]).encode())
    assert mutt.read_sentences(path) == ([7], ["a dog runs"])


CAPTIONS = "1.jpg#0\ta dog runs\n1.jpg#1\ta brown dog\n2.jpg#0\ta cat sits\n"


@pytest.mark.parametrize("share", ["nan", "NaN", "inf", "-0.5", "1.5"])
def test_crowdflower_shares_must_be_numbers_in_0_1(tmp_path, share):
    (tmp_path / "tokens.txt").write_text(CAPTIONS)
    captions = jm.read_captions(tmp_path / "tokens.txt")
    path = tmp_path / "CrowdFlowerAnnotations.txt"
    path.write_text(f"1.jpg\t2.jpg#0\t0.5\t1\t1\n1.jpg\t1.jpg#1\t{share}\t2\t1\n")
    with pytest.raises(ValueError, match=rf"CrowdFlowerAnnotations.txt, line 2: share of yes = '{share}': must be "
                                         r"a number in 0..1"):
        jm.read_crowdflower(path, captions)


def test_judgment_files_split_lines_on_newlines_only(tmp_path):
    """A U+2028 inside a caption is part of it; a BOM and \\r\\n endings are tolerated."""
    (tmp_path / "tokens.txt").write_bytes(b"\xef\xbb\xbf" + "1.jpg#0\ta dog\u2028runs\r\n2.jpg#0\ta cat\r\n".encode())
    captions = jm.read_captions(tmp_path / "tokens.txt")
    assert captions.text == {"1.jpg#0": "a dog runs", "2.jpg#0": "a cat"}


def test_npz_loader_names_the_file_for_every_fault(tmp_path):
    good = tmp_path / "good.npz"
    np.savez_compressed(good, probs=np.linspace(0.1, 0.9, 400))
    assert set(io.load_npz(good)) == {"probs"}
    flipped = tmp_path / "flipped.npz"
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"flipped.npz: not a readable .npz file"):
        io.load_npz(flipped)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(ValueError, match=r"truncated.npz: not a readable .npz file"):
        io.load_npz(truncated)
    objects = tmp_path / "objects.npz"
    np.savez(objects, probs=np.array([[0.1], [0.2, 0.3]], dtype=object))
    with pytest.raises(ValueError, match=r"objects.npz: holds object arrays"):
        io.load_npz(objects)
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ValueError, match=r"single.npy: expected an .npz archive"):
        io.load_npz(single)
    with pytest.raises(ValueError, match=r"good.npz: missing arrays \['mask'\]"):
        io.load_npz(good, names=("probs", "mask"))


@pytest.mark.parametrize("name", ["../../../x", "a/b", "a\\b", "..", ".", "", "x" * 101, 3, ".hidden"])
def test_names_never_become_paths(tmp_path, name):
    with pytest.raises(ValueError, match="a name becomes part of file names"):
        io.check_name(name, "run")
    with pytest.raises(ValueError, match="model label"):
        StageCache(tmp_path / "cache").entry(Stage("pregen", 1), name)
    assert io.check_name("merge-1 (e2) final_v+1@x") == "merge-1 (e2) final_v+1@x"


USER_TIERS = """
import jax.numpy as jnp
from pregen_jax import tiers

SCALE = {scale}


@tiers.register_caption_score("scaledmean")
def scaledmean(probs, keep, mask):
    return SCALE * jnp.sum(jnp.where(keep, probs, 0.0), -1) / jnp.maximum(jnp.sum(keep, -1), 1)
"""


def test_a_changed_module_constant_changes_the_cache_key(tmp_path):
    """The function's source is the same, its scores are not: the pre-gen space's key must differ."""
    module = tmp_path / "my_tiers.py"
    keys = []
    try:
        for scale in (1.0, 2.0):
            module.write_text(USER_TIERS.format(scale=scale))  # edited in the same process (a notebook)
            space = stages.tier_space(PregenConfig(modules=[str(module)], caption_scores=["scaledmean"]))
            keys.append(stages.space_key(space))
        assert keys[0] != keys[1]
        assert tiers.REGISTRIES[2]["scaledmean"].module_digest == io.file_digest(module)
        assert all(f.module_digest for f in tiers.REGISTRIES[1].values())  # built-in ones: their module counts too
        from pregen_jax.pipeline import space as space_module  # the sweep's own code counts too (its float order)
        digest = space_module.engine_digest()
        original = space_module.Path.read_bytes

        def edited(path):
            data = original(path)
            return data + b"# edited\n" if path.name == "_selection.py" else data
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(space_module.Path, "read_bytes", edited)
            assert space_module.engine_digest() != digest and stages.space_key(space) != keys[1]
        fn = tiers.REGISTRIES[2]["scaledmean"].fn
        assert float(fn(jnp.ones((1, 3)), jnp.ones((1, 3), bool), jnp.ones((1, 3), bool))[0]) == 2.0  # the new code
    finally:
        if "scaledmean" in tiers.REGISTRIES[2]:
            tiers.REGISTRIES[2].remove("scaledmean")


def test_a_constant_metric_is_reported_not_fatal():
    """Calibration of a pre-gen metric that is the same for every model is a note; the others are fitted."""
    models = pd.DataFrame({"CIDEr": [0.1, 0.3, 0.2, 0.5], "flat": [1.0, 1.0, 1.0, 1.0],
                           "geomean_join_pplx_none": [9.0, 7.0, 8.0, 5.5]})
    correlations = {"CIDEr": pd.DataFrame({"pregen": ["flat", "geomean_join_pplx_none"]})}
    loo, notes = model_level._calibration(models, correlations, {"CIDEr": "flat"})
    assert list(loo["pregen"]) == ["geomean_join_pplx_none"] and list(loo["criterion"]) == ["perplexity"]
    assert len(notes) == 1 and "CIDEr from `flat` (best by R^2)" in notes[0] and "same for every model" in notes[0]


def _run_cli(args, cwd):
    import os
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pregen_jax.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


@pytest.mark.slow  # two searches of three precomputed models, each in its own process
def test_a_rerun_after_a_module_constant_changed_recomputes_the_pregen_columns(tmp_path):
    import tomllib

    import tomli_w

    from tests.builders import write_precomputed
    config = write_precomputed(tmp_path, metrics=("CIDEr",))
    doc = tomllib.loads(config.read_text())
    doc["pregen"] = {"modules": ["my_tiers.py"], "caption_scores": ["scaledmean"]}
    config.write_text(tomli_w.dumps(doc))
    tables = []
    for scale in (1.0, 2.0):
        (tmp_path / "my_tiers.py").write_text(USER_TIERS.format(scale=scale))
        done = _run_cli(["run", "--config", str(config), "--out", str(tmp_path / "out"), "--no-progress"], tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        tables.append(pd.read_csv(tmp_path / "out" / "table.tsv", sep="\t"))
    column = "mean_mean_scaledmean_prefix0"
    assert column in tables[0].columns
    np.testing.assert_allclose(tables[1][column], 2 * tables[0][column], rtol=1e-6)
    assert "pregen 3 computed / 0 reused" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.slow  # a whole search of three precomputed models
def test_a_search_whose_best_metric_is_constant_across_models_writes_everything(tmp_path):
    """Three models with the same reference probabilities: the model-level steps cannot calibrate;
    the report says so, exit 0, and the table and rankings are written."""
    import shutil

    from tests.builders import write_precomputed
    config = write_precomputed(tmp_path, metrics=("CIDEr", "ROUGE_L"))
    for m in (1, 2):
        shutil.copy(tmp_path / "model0.npz", tmp_path / f"model{m}.npz")
    done = _run_cli(["run", "--config", str(config), "--out", str(tmp_path / "out"), "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "out"
    for name in ("table.tsv", "correlations_CIDEr.tsv", "correlations_ROUGE_L.tsv", "models.tsv", "report.md"):
        assert (out / name).is_file(), name
    report = (out / "report.md").read_text()
    assert "Not calibrated: CIDEr from" in report and "the pre-gen metric is the same for every model" in report
