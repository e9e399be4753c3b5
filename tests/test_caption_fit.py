"""The own-image check (datasets/caption_fit.py, its null datasets/caption_null.py): silent on real
models' captions and on a dataset's own references, a warning with the estimated misplaced share on
captions that belong to other images (a shifted file, another dataset's captions, 10% moved),
whatever the caller's tokens; calibrated on the data at hand, never on shipped thresholds. The commands' warnings are tested with each command (test_evaluate_inputs,
test_score, test_jobs)."""
import json
import math
import re
import warnings
from collections import Counter

import numpy as np
import pytest

from pregen_jax import io
from pregen_jax.datasets import read_flickr8k
from pregen_jax.datasets.caption_fit import (
    CAP,
    MIN_IMAGES,
    SEED,
    caption_fit,
    caption_fits,
    flag_threshold,
    judged,
    warn_if_misfit,
)
from pregen_jax.datasets.caption_null import LEVELS, CaptionNull, ReferenceNull, curve_null, peer_calibration
from pregen_jax.datasets.caption_ranks import CHANCE, _words, fit_blocks, own_image_ranks, rank_profile, share_of

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
    right = caption_fit(refs, captions)
    assert right.bottom_half == 0 and right.own_image_rank == pytest.approx(1.0) and not right.suspicious
    assert right.misplaced == 0 and right.images == len(refs)
    shifted = caption_fit(refs, captions[1:] + captions[:1])
    assert shifted.suspicious and shifted.bottom_half > 0.3 and shifted.misplaced_high == 1.0
    constant = caption_fit(refs, ["a dog runs through the grass"] * len(refs))
    assert constant.bottom_half == CHANCE and constant.suspicious  # every image ties with its own: half each
    assert constant.distinct == 1 and "; 1 distinct captions)" in constant.warning("c.json")


def _ranks_by_loops(references, captions) -> list[float]:
    """The definition, one caption and one image at a time (the module docstring's fit and mid-rank)."""
    n = len(captions)
    held = [Counter(w for ref in refs for w in set(_words(ref))) for refs in references]
    images_holding = Counter(w for h in held for w in h)
    weight = {w: round(math.log(n / c) * 2 ** 20) / 2 ** 20 for w, c in images_holding.items()}
    ranks = []
    for a, caption in enumerate(captions):
        fits = [sum(weight[w] * h[w] for w in set(_words(caption)) if w in h) for h in held]
        others = [f for b, f in enumerate(fits) if b != a]
        ranks.append((sum(f < fits[a] for f in others) + 0.5 * sum(f == fits[a] for f in others)) / (n - 1))
    return ranks


def test_the_ranks_are_the_definitions_and_the_check_reads_every_image_up_to_the_cap():
    """Random captions of random scenes (many ties and partial fits): the blocked sparse product
    gives the loops' ranks exactly (fits on a grid of 2^-20 are exact sums in any order)."""
    refs, captions = _toy(40, seed=1)
    rng = np.random.default_rng(2)
    words = sorted({w for c in captions for w in c.split()})
    mixed = [" ".join(rng.choice(words, 5)) if k % 3 else c for k, c in enumerate(captions)]
    np.testing.assert_array_equal(own_image_ranks(refs, mixed), _ranks_by_loops(refs, mixed))
    odd = [[r.replace(" ", "\x00", 1).upper() for r in rs] for rs in refs]  # the texts' separator inside a text
    np.testing.assert_array_equal(own_image_ranks(odd, mixed), _ranks_by_loops(odd, mixed))
    assert caption_fit(refs * 3, mixed * 3, cap=50).images == 50 and caption_fit(refs, mixed).images == 40


def test_the_threshold_falls_with_the_images_and_rises_with_the_null_and_the_estimate_is_clipped():
    thresholds = [flag_threshold(n, 0.08, 0.005) for n in (20, 50, 1000, CAP)]
    assert thresholds == sorted(thresholds, reverse=True) and thresholds[-1] > 0.08
    assert flag_threshold(500, 0.08, 0.0) < flag_threshold(500, 0.08, 0.02) < flag_threshold(500, 0.12, 0.02)
    null = CaptionNull("peers", 0.08, 0.005, "test")
    fit = judged(np.full(100, 0.9), 100, 0.3, null)  # better than the null: no sign of captions moved
    assert (fit.bottom_half, fit.misplaced, fit.misplaced_low, fit.misplaced_high) == (0, 0, 0, 0)
    fit = judged(np.r_[np.full(30, 0.2), np.full(70, 0.9)], 100, 0.3, null)
    assert fit.bottom_half == pytest.approx(0.3) and fit.misplaced == pytest.approx((0.3 - 0.08) / (CHANCE - 0.08))
    assert 0 < fit.misplaced_low < fit.misplaced < fit.misplaced_high < 1 and fit.suspicious
    assert fit.threshold == flag_threshold(100, 0.08, 0.005) and fit.null_share == 0.08
    assert fit.summary()["calibration"] == "peers" and "calibrated by peers: test" in fit.warning("r.json")


def test_a_null_at_chance_is_too_generic_to_check_with_no_misplaced_share():
    """Where even a wholly misplaced file would pass, the check abstains: never flagged, and
    ``misplaced_share`` is null (not an estimate) in the API and in settings.json's summary."""
    fit = judged(np.full(100, 0.1), 100, 0.9, CaptionNull("references", 0.45, 0.1, "test"))
    assert fit.blind and not fit.suspicious and fit.bottom_half == 1
    assert (fit.misplaced, fit.misplaced_low, fit.misplaced_high) == (None, None, None)
    summary = fit.summary()
    assert summary["misplaced_share"] is None and summary["misplaced_share_95"] is None
    assert summary["too_generic_to_check"] and summary["calibration"] == "references"
    assert "the own-image check cannot see captions moved to other images in it" in fit.warning("c.json")
    refs, _ = _toy()
    words = sorted({w for rs in refs for w in rs[0].split()[1:3]})
    constant = caption_fit(refs, [f"{words[0]} {words[1]} {words[2]}"] * len(refs))  # fits a few images, the same ones
    assert constant.genericity == pytest.approx(1) and constant.blind and constant.misplaced is None


def test_peers_are_their_median_and_spread_and_a_file_among_true_peers_is_judged_by_them():
    """Five files on the same images: each calibrated by the four others (median, 1.4826 MAD); a
    file shifted by one image among four true ones is flagged and they are not; alone, each is
    calibrated by the references."""
    assert peer_calibration([0.1, 0.2, 0.3, 0.5]).q0 == pytest.approx(0.25)
    assert peer_calibration([0.1, 0.2, 0.3, 0.5]).tau == pytest.approx(1.4826 * 0.1)
    refs, captions = _toy(80, seed=6)
    rng = np.random.default_rng(7)
    noisy = [[c if rng.random() > 0.1 else captions[rng.integers(80)] for c in captions] for _ in range(4)]
    fits = caption_fits(refs, [*noisy, captions[1:] + captions[:1]])
    assert [f.calibration.kind for f in fits] == ["peers"] * 5
    assert [f.suspicious for f in fits] == [False] * 4 + [True]
    others = [*noisy[1:], captions[1:] + captions[:1]]  # file 0's peers
    assert fits[0].null_share == pytest.approx(np.median([share_of(own_image_ranks(refs, c)) for c in others]))
    assert caption_fit(refs, noisy[0]).calibration.kind == "references"


def test_the_references_calibration_is_its_definition():
    """Level by level: each image's reference ``i mod R`` held out as its caption against the other
    references (reduced to its commonest words), ``rank_profile``'s share and genericity; the file's
    null read between the levels that bracket its genericity. Nothing shipped: all from the data."""
    refs, _ = _toy(50, seed=8)
    rng = np.random.default_rng(9)
    refs = [[" ".join(rng.permutation(r.split())[:5]) for r in rs] for rs in refs]  # five different references
    null = ReferenceNull(refs, SEED, MIN_IMAGES)
    held = [rs[i % 5] for i, rs in enumerate(refs)]
    others = [rs[:i % 5] + rs[i % 5 + 1:] for i, rs in enumerate(refs)]
    whole = rank_profile(others, held)
    images_holding = Counter(w for rs in refs for w in {w for r in rs for w in _words(r)})
    two = rank_profile(others, [" ".join(sorted(set(_words(h)), key=lambda w: (-images_holding[w], w))[:2])
                                for h in held])
    assert LEVELS[0] is None and 2 in LEVELS
    assert null._level(None) == (whole.genericity, share_of(whole.ranks))
    assert null._level(2) == (two.genericity, share_of(two.ranks))
    target = (whole.genericity + two.genericity) / 2
    calibration = null.calibration(target)
    points = [null._levels[level] for level in LEVELS if level in null._levels]
    generic = np.maximum.accumulate([g for g, _ in points])
    assert generic[-1] >= 2 * target - whole.genericity or len(points) == len(LEVELS)  # read as far again
    curve = [share for _, share in points]
    assert calibration.q0 == pytest.approx(np.interp(target, generic, curve))
    rise = np.interp(2 * target - whole.genericity, generic, curve) - share_of(whole.ranks)
    floor = max(calibration.q0, 3 / len(refs))
    assert calibration.tau == pytest.approx(math.hypot(rise / 2, math.sqrt(floor * (1 - floor) / len(refs))))
    assert null.calibration(0.0).q0 == share_of(whole.ranks)  # less generic than the references: their share
    assert null.calibration(0.0).tau == pytest.approx(math.sqrt(max(share_of(whole.ranks), 3 / 50) * 0.94 / 50), 0.1)


def test_the_references_spread_is_half_the_curves_rise_to_as_far_again_beyond_the_file():
    """q0 the curve at the file's genericity; tau half its rise from the references' own genericity to
    as far again beyond the file's (0.2 -> 0.4 here), the binomial error beside it; flat beyond the levels."""
    points = [(0.2, 0.01), (0.3, 0.05), (0.4, 0.21)]
    null = curve_null(points, 0.3, 500)
    assert null.kind == "references" and null.q0 == pytest.approx(0.05)
    assert null.tau == pytest.approx(math.hypot(0.1, math.sqrt(0.05 * 0.95 / 500)))
    assert curve_null(points, 0.1, 500).q0 == 0.01 and curve_null(points, 0.1, 500).tau < 0.01  # as the references
    beyond = curve_null(points, 0.5, 500)
    assert beyond.q0 == 0.21 and beyond.tau == pytest.approx(math.hypot(0.1, math.sqrt(0.21 * 0.79 / 500)))


def test_the_references_null_reads_its_levels_as_far_again_beyond_the_file():
    """ReferenceNull computes levels until one is as generic as 2 g - g0 (0.4 for a file at 0.3 whose
    references sit at 0.2), not only as the file (0.3: the spread would read a flat curve, 0.02 not 0.1).
    The levels' (genericity, share) are given, so nothing is fitted here."""
    null = ReferenceNull([["a dog runs", "a cat sits"]] * 50, SEED, MIN_IMAGES)
    curve = [(0.2, 0.01), (0.25, 0.02), (0.3, 0.05), (0.35, 0.1), (0.4, 0.21), (0.5, 0.3)]
    null._levels = dict(zip(LEVELS, curve))  # the cache the levels are read from
    calibration = null.calibration(0.3)
    assert calibration == curve_null(curve[:5], 0.3, 50)  # read up to the first level at 0.4
    assert calibration.tau == pytest.approx(math.hypot(0.1, math.sqrt(0.06 * 0.94 / 50)))  # at least 3 in 50

def test_moving_captions_among_the_images_leaves_the_genericity_as_it_is():
    refs, captions = _toy(seed=3)
    order = np.random.default_rng(4).permutation(len(refs))
    right, moved = rank_profile(refs, captions), rank_profile(refs, [captions[i] for i in order])
    np.testing.assert_allclose(np.sort(moved.columns), np.sort(right.columns))
    assert moved.genericity == pytest.approx(right.genericity) and right.ranks.min() > moved.ranks.min()


def test_strings_and_tokens_are_the_same_words():
    refs, captions = _toy()
    tokens = caption_fit([[r.upper().split() for r in rs] for rs in refs], [c.split() for c in captions])
    assert tokens == caption_fit(refs, captions)


def test_too_few_images_say_nothing_and_lengths_must_match():
    refs, captions = _toy(MIN_IMAGES - 1)
    assert caption_fit(refs, captions) is None
    with pytest.raises(ValueError, match="3 captions for 4 images"):
        caption_fit(refs[:4], captions[:3])


def test_the_warning_names_the_estimate_the_measure_its_calibration_and_what_it_cannot_tell():
    refs, captions = _toy()
    with pytest.warns(UserWarning) as caught:
        warn_if_misfit(refs, [captions, captions[3:] + captions[:3]], ["mine.json", "res.json"])
    (line,) = [str(w.message) for w in caught]
    assert re.match(r"res\.json: about \d+% \[\d+%, 100%\] of its captions look like captions of other images "
                    r"\(bottom-half share 0\.\d{3}, flagged above 0\.\d{3}: the share of 60 images whose caption", line)
    assert "calibrated by references: 60 images' held-out references (share 0.000" in line
    assert "a shifted or misordered file, captions of another dataset" in line
    assert "or a model whose captions fit other images better than its own; this check cannot tell these apart" in line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_misfit(refs, [captions], ["res.json"])


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


def test_real_models_pass_and_their_files_made_wrong_or_another_datasets_do_not(flickr8k):
    """Four where-image2 models checked together (as ``evaluate`` runs them: each calibrated by the
    others) pass; a fifth with 10% of its captions moved to other images is caught, its estimated
    share near 0.10, and so are MUTT's sentences (another dataset's captions) beside them;
    alone (calibrated by the references) a model passes and the file shifted by one image is caught
    (200 draws of subsets and 120 of 10% moved: experiments/caption_check)."""
    refs, files = flickr8k
    mutt = sorted({row["caption"] for path in sorted((SHARED / "mutt").glob("*_a.json"))
                   for row in json.loads(path.read_text())})
    team = [files[name] for name in ("init_2", "pre_2", "par_2", "merge_3")]
    rng = np.random.default_rng(0)
    moved, picked = list(files["pre_1"]), rng.choice(len(refs), len(refs) // 10, replace=False)
    for a, b in zip(picked, np.roll(picked, 1)):
        moved[a] = files["pre_1"][b]
    other = [mutt[i] for i in rng.choice(len(mutt), len(refs), replace=len(mutt) < len(refs))]
    fits = caption_fits(refs, [*team, moved, other])
    assert [fit.suspicious for fit in fits] == [False] * 4 + [True, True]
    assert all(fit.calibration.kind.startswith("peers") for fit in fits)
    assert abs(fits[-2].misplaced - 0.1) < 0.05 and abs(fits[-1].misplaced - 1) < 0.05
    alone = caption_fit(refs, files["par_1"])
    assert alone.calibration.kind == "references" and not alone.suspicious and not alone.blind
    assert caption_fit(refs, files["par_1"][1:] + files["par_1"][:1]).suspicious
    # alone, moved captions raise the share (by about a tenth of 0.5 - q0), though the references' null is
    # too wide to flag it; another dataset's captions are too generic to check alone, and the line says so
    moved_alone, true_alone = caption_fit(refs, moved), caption_fit(refs, files["pre_1"])
    assert moved_alone.bottom_half > true_alone.bottom_half + 0.025 and not true_alone.suspicious
    assert moved_alone.genericity == pytest.approx(true_alone.genericity)
    mutt_alone = caption_fit(refs, other)
    assert mutt_alone.blind and mutt_alone.summary()["misplaced_share"] is None and not mutt_alone.suspicious
    assert "cannot see captions moved to other images in it" in mutt_alone.warning("mutt.json")


def test_a_datasets_own_references_pass_and_shifted_are_caught(flickr8k):
    """Flickr8k's caption k of each test image as a "model" against the other four references passes,
    alone (references) and beside models (peers); shifted by one image it is caught, alone."""
    refs, files = flickr8k
    k = 4  # the most generic of the five (0.28 against the references' 0.27)
    others, human = [rs[:k] + rs[k + 1:] for rs in refs], [" ".join(rs[k]) for rs in refs]
    alone = caption_fit(others, human)
    assert alone.calibration.kind == "references" and not alone.suspicious and not alone.blind
    assert caption_fit(others, human[1:] + human[:1]).suspicious
    beside = caption_fits(others, [human, *(files[name] for name in MODELS[:4])])[0]
    assert beside.calibration.kind == "peers" and not beside.suspicious


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
    assert all("look like captions of other images (bottom-half share 0." in line and "cannot tell these apart" in line
               for line in warned)
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
    warned = [line for line in capsys.readouterr().err.splitlines() if "bottom-half share" in line]
    assert [line.split(":")[1].strip().rsplit("/", 1)[-1] for line in warned] == ["shifted.json", "other.json"]


def test_the_column_shares_score_every_cell_as_the_own_image_is_scored():
    """columns[k] is the share of captions that would put image k in the top half were it their own
    (the loops' mid-rank, ties and all): the product's blocks and median shortcut give it exactly."""
    refs, captions = _toy(40, seed=5)
    captions = [captions[k % 7] if k % 2 else "w1 w2" for k in range(40)]  # repeats and a caption most images tie on
    profile = rank_profile(refs, captions)
    tops = np.zeros(40)
    n = len(captions)
    held = [Counter(w for ref in refs_ for w in set(_words(ref))) for refs_ in refs]
    images_holding = Counter(w for h in held for w in h)
    weight = {w: round(math.log(n / c) * 2 ** 20) / 2 ** 20 for w, c in images_holding.items()}
    for caption in captions:
        fits = [sum(weight[w] * h[w] for w in set(_words(caption)) if w in h) for h in held]
        for k in range(n):
            mid = (sum(f < fits[k] for f in fits) + 0.5 * (sum(f == fits[k] for f in fits) - 1)) / (n - 1)
            tops[k] += 1.0 if mid > 0.5 else 0.5 if mid == 0.5 else 0.0
    np.testing.assert_array_equal(profile.columns, tops / n)


def test_the_fits_are_the_definitions_sums_whichever_way_each_word_is_added():
    """``fit_blocks``: every caption's fit to every image, the definition's loop to the last bit,
    whether a word goes through the dense product (here "half": a third of the captions, half the
    images) or pair by pair (the rare ones), and whatever the block size; an empty caption fits nothing."""
    refs, captions = _toy(70, seed=3)
    # "half": in the references of half the images and in a third of the captions (dense, weight log 2)
    refs = [[f"{ref} half" if k % 2 else ref for ref in refs_] for k, refs_ in enumerate(refs)]
    captions = ["" if k % 9 == 0 else f"{c} half" if k % 3 == 0 else c for k, c in enumerate(captions)]
    n = len(captions)
    held = [Counter(w for ref in refs_ for w in set(_words(ref))) for refs_ in refs]
    images_holding = Counter(w for h in held for w in h)
    weight = {w: round(math.log(n / c) * 2 ** 20) / 2 ** 20 for w, c in images_holding.items()}
    expected = np.array([[sum(weight[w] * h[w] for w in set(_words(caption)) if w in h) for h in held]
                         for caption in captions])
    assert (expected > 0).sum() > n * n / 6 and not expected[::9].any()  # "half" fits many; the empty captions none
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(fit_blocks([], [])) == []  # no images: no blocks, and no log(0) warned
    for block in (1, 16, 512):
        blocks = list(fit_blocks(refs, captions, block=block))
        assert [start for start, _ in blocks] == list(range(0, n, block))
        np.testing.assert_array_equal(np.concatenate([fits for _, fits in blocks]), expected)
