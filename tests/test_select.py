"""pregen-search select's Python API: any candidates with generate(image_indices) -> captions race."""
import numpy as np
import pytest

from pregen_jax import postgen
from pregen_jax.ranking.racing import RaceSettings
from pregen_jax.selection import Candidate, check_metric, lookup, select

WORDS = "a dog cat runs sits on the grass red ball man woman rides bike in park water".split()


def _references(images=400, seed=0):
    rng = np.random.default_rng(seed)
    return [[" ".join(rng.choice(WORDS, rng.integers(4, 9))) for _ in range(5)] for _ in range(images)]


def test_the_model_that_copies_a_reference_wins_and_every_asked_image_is_counted():
    refs = _references()
    rng = np.random.default_rng(1)
    good = [r[0] for r in refs]                                             # one of its references
    half = [r[0] if k % 2 else " ".join(rng.choice(WORDS, 6)) for k, r in enumerate(refs)]
    noise = [" ".join(rng.choice(WORDS, 6)) for _ in refs]
    asked = []

    def counting(captions):
        def generate(images):
            asked.append(len(images))
            return lookup(captions)(images)
        return generate
    candidates = [Candidate("noise", counting(noise)), Candidate("good", counting(good)),
                  Candidate("half", counting(half))]
    selection = select(candidates, refs, "CIDEr", RaceSettings(budget=0.25, seed=0))
    table = selection.race.table
    assert table.loc[selection.race.picked, "candidate"] == "good"
    assert sum(asked) == selection.race.images_scored <= 0.25 * 3 * len(refs)
    assert table.loc[0, "status"].startswith("dropped")


def test_race_scores_are_whole_split_cider_of_each_image():
    refs = _references(60)
    captions = [" ".join(np.random.default_rng(k).choice(WORDS, 5)) for k in range(60)]
    gts = {i: r for i, r in enumerate(refs)}
    _, whole = postgen.score("CIDEr", gts, {i: [c] for i, c in enumerate(captions)})
    seen = {}

    def generate(images):
        seen.update({int(i): captions[int(i)] for i in images})
        return [captions[int(i)] for i in images]
    selection = select([Candidate("m", generate), Candidate("n", generate)], refs, "CIDEr",
                       RaceSettings(budget=0.5, seed=3))
    row = selection.race.table.iloc[0]
    images = sorted(seen)
    assert row["estimate"] == pytest.approx(np.mean([whole[i] for i in images]), abs=1e-9)


@pytest.mark.parametrize("metric", ["Bleu_4", "METEOR", "perplexity"])
def test_metrics_whose_corpus_score_is_not_a_mean_are_refused(metric):
    with pytest.raises(ValueError, match=f"--metric {metric}: cannot race"):
        check_metric(metric)


def test_screened_select_never_decodes_the_screened_and_assists_are_refused():
    refs = _references(200)
    rng = np.random.default_rng(2)
    good = [r[0] for r in refs]
    noise = [" ".join(rng.choice(WORDS, 6)) for _ in refs]
    asked = {}

    def counting(name, captions):
        def generate(images):
            asked[name] = asked.get(name, 0) + len(images)
            return lookup(captions)(images)
        return generate

    candidates = [Candidate("good", counting("good", good), 1.0),
                  Candidate("noise", counting("noise", noise), 2.0),
                  Candidate("worst", counting("worst", noise), 3.0)]
    selection = select(candidates, refs, "CIDEr", RaceSettings(budget=0.3, seed=0, screen=0.5))
    table = selection.race.table
    assert table.loc[selection.race.picked, "candidate"] == "good"
    assert "worst" not in asked and table.loc[2, "status"] == "screened out"
    assert set(selection.seconds) == {"generate", "score"}  # no teacher-forced pass any more
    # assisted races were dropped (issue 41): refused when the settings are made, once
    for assist in ("tiers", "both"):
        with pytest.raises(ValueError, match="assist"):
            RaceSettings(assist=assist)


@pytest.mark.parametrize("options, message", [
    (["--screen", "--screen-keep", "2"], "--screen-keep 2.0: Input should be less than or equal to 1"),
    (["--budget", "0"], "--budget 0.0: Input should be greater than 0"),
    (["--confidence", "1"], "--confidence 1.0: Input should be less than 1"),
    (["--assist", "pregen"], "--assist 'pregen': assisted races were dropped (issue 41)"),
])
def test_the_race_settings_are_checked_once_before_any_work_naming_the_option(tmp_path, capsys, options, message):
    from pregen_jax import cli
    assert cli.main(["select", "--search", str(tmp_path / "nowhere"), *options, "--out", str(tmp_path / "o")]) == 2
    assert f"pregen-search select: error: {message}" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_summary_says_what_its_intervals_are_and_promises_no_budget():
    from pregen_jax.commands.select_summary import budget_hint, interval_kind
    from pregen_jax.ranking.racing import race_table
    rng = np.random.default_rng(0)
    matrix = np.clip(rng.normal([[1.0], [0.9], [0.2], [0.1]], 0.5, (4, 400)), 0, 10)
    result = race_table(matrix, RaceSettings(budget=0.2, confidence=0.9, screen=0.75), prior=np.arange(4.0))
    said = interval_kind(result)
    # three raced (one screened out): each interval at 1 - 0.1/3, drops at 1 - 0.1/2
    assert "at 96.67% (alpha/K for the K = 3 models raced)" in said and "a test at 95.00%" in said
    assert "valid at every look" in said
    assert "--budget 1" in budget_hint(0.2) and "--within EPS" in budget_hint(0.2)
    assert "whole_split_score" in budget_hint(1.0) and "--budget" not in budget_hint(1.0)


def test_captions_at_hand_are_scored_on_every_image_and_models_that_decode_race():
    refs = _references(120)
    rng = np.random.default_rng(4)
    good = [r[0] for r in refs]
    noise = [" ".join(rng.choice(WORDS, 6)) for _ in refs]
    exact = select([Candidate("noise", lookup(noise)), Candidate("good", lookup(good))], refs, "CIDEr")
    assert exact.race.exact and exact.race.picked == 1 and exact.race.images_scored == 2 * 120
    assert list(exact.race.table["status"]) == ["below the pick on these images", "picked"]
    assert exact.paired.loc[0, "better"] and exact.paired.loc[0, "p_adjusted"] < 0.05  # evaluate's max-T
    decoding = Candidate("good", lambda images: [good[int(i)] for i in images])  # must generate: a race
    raced = select([Candidate("noise", lookup(noise)), decoding], refs, "CIDEr")
    assert not raced.race.exact and raced.race.images_scored <= 0.1 * 2 * 120 + 1e-9 and raced.paired is None
