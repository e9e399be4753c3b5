"""The own-image check (datasets/caption_fit.py): silent on real models' captions, a warning on
captions that belong to other images (a shifted file, another dataset's captions), whatever the
caller's tokens. The commands' warnings are tested with each command (test_evaluate_inputs,
test_score, test_jobs)."""
import json
import warnings

import numpy as np
import pytest

from pregen_jax import io
from pregen_jax.datasets import read_flickr8k
from pregen_jax.datasets.caption_fit import CHANCE, MIN_IMAGES, MIN_OWN_IMAGE_RANK, caption_fit, warn_if_misfit

SHARED = io.shared_data()
MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)]


def _toy(images: int = 60, seed: int = 0):
    """references[i][r] and a caption per image that names its image's own animal, colour and ground."""
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(200)]
    scenes = [rng.choice(words, 4, replace=False) for _ in range(images)]
    refs = [[f"a {s[0]} {s[1]} is on the {s[2]} near {s[3]}" for _ in range(5)] for s in scenes]
    captions = [f"the {s[1]} {s[0]} on {s[2]}" for s in scenes]
    return refs, captions


def test_captions_of_their_own_images_pass_and_shifted_or_constant_ones_do_not():
    refs, captions = _toy()
    assert caption_fit(refs, captions).own_image_rank == pytest.approx(1.0)
    shifted = caption_fit(refs, captions[1:] + captions[:1])
    assert shifted.suspicious and shifted.own_image_rank < 0.6
    constant = caption_fit(refs, ["a dog runs through the grass"] * len(refs))
    assert constant.own_image_rank == CHANCE and constant.suspicious  # every decoy ties with the own image


def test_strings_and_tokens_are_the_same_words():
    refs, captions = _toy()
    tokens = caption_fit([[r.upper().split() for r in rs] for rs in refs], [c.split() for c in captions])
    assert tokens == caption_fit(refs, captions)


def test_too_few_images_say_nothing_and_lengths_must_match():
    refs, captions = _toy(MIN_IMAGES - 1)
    assert caption_fit(refs, captions) is None
    with pytest.raises(ValueError, match="3 captions for 4 images"):
        caption_fit(refs[:4], captions[:3])


def test_the_warning_names_the_measure_its_value_and_what_it_cannot_tell():
    refs, captions = _toy()
    with pytest.warns(UserWarning) as caught:
        warn_if_misfit(refs, captions[3:] + captions[:3], "res.json")
    (line,) = [str(w.message) for w in caught]
    assert line.startswith("res.json: its captions fit their own images hardly better than other images (own-image "
                           "rank 0.")
    assert f", flagged below {MIN_OWN_IMAGE_RANK:.2f}, chance 0.50: the share of 20 other images whose references" in line
    assert "a shifted or misordered file, captions of another dataset" in line
    assert "a model that ignores its image; this check cannot tell these apart" in line
    assert "key it by image_id" not in line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_misfit(refs, captions, "res.json")


@pytest.fixture(scope="module")
def flickr8k():
    if not (SHARED / "where-image2-captions").is_dir():
        pytest.skip(f"{SHARED} has no where-image2-captions (see ../shared/data/README.md)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split file's stray 1.jpg..5.jpg entries
        test = read_flickr8k(SHARED / "flickr8k")["test"]
    folder = SHARED / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    row = {image_id: n for n, image_id in enumerate(test.image_ids)}
    refs = [test.captions[row[i]] for i in ids]
    files = {m: (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)] for m in MODELS}
    return refs, files


def test_real_models_pass_and_their_files_made_wrong_do_not(flickr8k):
    """The 12 where-image2 models (CIDEr about 0.47) pass; each shifted by one image, and MUTT's
    sentences in their place (another dataset's real captions), are caught."""
    refs, files = flickr8k
    mutt = sorted({row["caption"] for path in sorted((SHARED / "mutt").glob("*_a.json"))
                   for row in json.loads(path.read_text())})
    for name, captions in files.items():
        assert not caption_fit(refs, captions).suspicious, name
        assert caption_fit(refs, captions[1:] + captions[:1]).suspicious, name
    rng = np.random.default_rng(0)
    other = [mutt[i] for i in rng.choice(len(mutt), len(refs), replace=len(mutt) < len(refs))]
    assert caption_fit(refs, other).own_image_rank < 0.6


def _evaluate(tmp_path, capsys, results: dict[str, list], images: int = 60) -> list[str]:
    """evaluate's warning lines on these results files (name -> captions of the first images)."""
    from pregen_jax.cli import main
    refs, _ = _toy(images)
    coco = {"images": [{"id": i} for i in range(images)],
            "annotations": [{"image_id": i, "id": 10 * i + r, "caption": c} for i, rs in enumerate(refs)
                            for r, c in enumerate(rs)]}
    (tmp_path / "refs.json").write_text(json.dumps(coco))
    for name, captions in results.items():
        (tmp_path / name).write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(captions)]))
    assert main(["evaluate", "--references", str(tmp_path / "refs.json"), "--captions",
                 *(str(tmp_path / name) for name in results), "--metrics", "CIDEr", "--tokenizer", "alnum-lower",
                 "--resamples", "1000", "--trials", "999"]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]


def test_evaluate_warns_on_a_shifted_file_and_on_another_datasets_captions(tmp_path, capsys):
    _, captions = _toy()
    other = ["a surfer rides a big wave", "two men play chess in a park", "a child eats ice cream"] * 20
    warned = _evaluate(tmp_path, capsys, {"mine.json": captions, "shifted.json": captions[1:] + captions[:1],
                                          "other.json": other})
    assert [line.split(":")[1].strip().rsplit("/", 1)[-1] for line in warned] == ["shifted.json", "other.json"]
    assert all("own-image rank 0." in line and "cannot tell these apart" in line for line in warned)
    assert not any("key it by image_id" in line for line in warned)


def test_evaluate_says_when_a_results_file_covers_part_of_the_references(tmp_path, capsys):
    _, captions = _toy()
    assert _evaluate(tmp_path, capsys, {"mine.json": captions}) == []
    (line,) = _evaluate(tmp_path, capsys, {"half.json": captions[:30]})
    assert line.endswith("half.json: covers 30 of the 60 images of " + str(tmp_path / "refs.json") +
                         ": scored on those only, as COCOEvalCap does (a score on part of the images is not the "
                         "whole set's)")


def test_select_without_a_search_warns_on_a_shifted_file_and_on_another_datasets_captions(tmp_path, capsys):
    from pregen_jax.cli import main
    refs, captions = _toy()
    coco = {"images": [{"id": i} for i in range(len(refs))],
            "annotations": [{"image_id": i, "id": 10 * i + r, "caption": c} for i, rs in enumerate(refs)
                            for r, c in enumerate(rs)]}
    (tmp_path / "refs.json").write_text(json.dumps(coco))
    other = ["a surfer rides a big wave", "two men play chess in a park", "a child eats ice cream"] * 20
    files = {"mine.json": captions, "shifted.json": captions[1:] + captions[:1], "other.json": other}
    for name, caps in files.items():
        (tmp_path / name).write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(caps)]))
    assert main(["select", "--references", str(tmp_path / "refs.json"), "--captions",
                 *(str(tmp_path / name) for name in files), "--budget", "1", "--tokenizer", "alnum-lower",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "own-image rank" in line]
    assert [line.split(":")[1].strip().rsplit("/", 1)[-1] for line in warned] == ["shifted.json", "other.json"]
