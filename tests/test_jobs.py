"""Each job works as its guide shows (issue 37 item 4), on a tiny search of trained models.

The code of each test is the code a guide shows a user, with the search's run folder in
``search`` and a scratch folder in ``tmp_path`` (the docs copy it from here: keep it short).
"""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pregen_jax import RefProbs, cli
from pregen_jax.external import attach_references, attach_search_fingerprint, read_exported_references, read_split
from pregen_jax.pipeline import SearchConfig
from tests.builders import training_config, write_config, write_training_corpus


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    """A finished search of two trained architectures (its run folder)."""
    folder = tmp_path_factory.mktemp("jobs")
    write_training_corpus(folder)
    config = training_config(models={"architectures": ["par", "merge"]}, training={"epochs": 2},
                             postgen={"metrics": ["CIDEr"]})
    assert cli.main(["run", "--config", str(write_config(folder / "s.toml", config)), "--out", str(folder / "run"),
                     "--no-progress"]) == 0
    return folder / "run"


def test_a_model_of_any_framework_is_predicted_against_a_search(search, tmp_path, capsys):
    # 1. the references to score, and what the numbers must match (refs.match.json beside them)
    refs = tmp_path / "refs.jsonl"
    assert cli.main(["export-references", "--search", str(search), "--out", str(refs)]) == 0
    words = json.loads((tmp_path / "refs.match.json").read_text())["vocabulary_tokens"]  # 0: end, 1: unknown
    ids = {word: i for i, word in enumerate(words)}
    targets = []  # targets[i][r]: the ids of reference r of image i, then the end token
    for row in read_exported_references(refs):
        if row.ref == 0:
            targets.append([])
        targets[-1].append([ids.get(word, 1) for word in row.tokens] + [0])
    # 2. your model scores each reference in its own framework: log P(next | previous), f[T, V] each
    table = np.log(np.random.default_rng(0).dirichlet(np.ones(len(words)), len(words)))
    log_probs = [[table[[0, *seq[:-1]]] for seq in seqs] for seqs in targets]
    ref_probs = RefProbs.from_log_probs(log_probs, targets)
    attach_search_fingerprint(ref_probs, refs).save(tmp_path / "mine.npz")
    # 3. its post-gen scores predicted by the search's calibration
    assert cli.main(["predict", "--search", str(search), "--refprobs", str(tmp_path / "mine.npz")]) == 0
    printed = capsys.readouterr().out
    assert "CIDEr (range [0, inf); 90% intervals" in printed and "mine" in printed and "s (the whole run)" in printed
    # Without the search's fingerprint, the refusal says what differs and how to fix it.
    attach_references(ref_probs, refs).save(tmp_path / "bare.npz")
    assert cli.main(["predict", "--search", str(search), "--refprobs", str(tmp_path / "bare.npz")]) == 2
    error = capsys.readouterr().err
    assert "it does not say which vocabulary its model reads, and the search's models read word-" in error
    assert "attach_search_fingerprint(ref_probs, 'refs.jsonl')" in error


def test_select_races_models_that_exist_only_as_captions(search, tmp_path, capsys):
    # captions of the validation images by two models of another framework, keyed by image id
    val = read_split(SearchConfig.load(search / "config.toml"), "val")
    for name, pick in (("good", lambda refs: refs[0]), ("poor", lambda refs: ["a", "ball"])):
        with open(tmp_path / f"{name}.jsonl", "w") as f:
            for image_id, refs in zip(val.image_ids, val.captions):
                f.write(json.dumps({"image_id": image_id, "caption": " ".join(pick(refs))}) + "\n")
    assert cli.main(["select", "--search", str(search), "--captions", str(tmp_path / "good.jsonl"),
                     str(tmp_path / "poor.jsonl"), "--budget", "0.5", "--out", str(tmp_path / "picked"),
                     "--no-progress"]) == 0
    table = pd.read_csv(tmp_path / "picked" / "select.tsv", sep="\t")
    picked = table[table["picked"]].iloc[0]
    assert (picked["source"], picked["run"]) == ("captions", str(tmp_path / "good.jsonl"))
    printed = capsys.readouterr().out
    assert "at 95% confidence for the whole race" in printed and "s the whole run" in printed
    assert "the pick's estimate is optimistic" in printed


def test_a_captions_file_of_other_images_gets_a_warning(search, tmp_path, capsys):
    test = read_split(SearchConfig.load(search / "config.toml"), "test")
    (tmp_path / "flickr.txt").write_text("a dog runs through the grass\n" * len(test.image_ids))
    shifted = test.captions[1:] + test.captions[:1]  # each image gets the next image's reference
    (tmp_path / "shifted.txt").write_text("".join(" ".join(refs[0]) + "\n" for refs in shifted))
    assert cli.main(["select", "--search", str(search), "--split", "test", "--captions", str(tmp_path / "flickr.txt"),
                     str(tmp_path / "shifted.txt"), "--budget", "1", "--out", str(tmp_path / "o"),
                     "--no-progress"]) == 0
    warnings = capsys.readouterr().err
    assert "flickr.txt: only 17% of the captions' words occur in the references' vocabulary (share of caption " \
           "words in the references' vocabulary" in warnings
    assert "shifted.txt: each caption shares" in warnings and "(own-image word overlap)" in warnings
    assert "warning: " + str(tmp_path / "shifted.txt") in warnings


def test_no_stray_warning_when_a_child_starts_after_jax():
    """Java children (METEOR, SPICE) start with preexec_fn, a fork JAX warns about; never printed."""
    code = ("import jax.numpy as jnp\njnp.zeros(3).block_until_ready()\nfrom pregen_jax import processes\n"
            "processes.popen([sys.executable, '-c', 'pass']).wait()\n")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, check=True)
    assert "os.fork()" not in done.stderr and "Warning" not in done.stderr, done.stderr
