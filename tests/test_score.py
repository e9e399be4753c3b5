"""The reader of finished runs (manifest.json, FinishedSearch), `pregen-search predict` (and its old name `score`), RefProbs
fingerprints, and `rank` refusing columns it does not know."""
import dataclasses
import json
import tomllib

import numpy as np
import pandas as pd
import pytest
import tomli_w

from pregen_jax import RefProbs, cli
from pregen_jax.pipeline import SearchConfig
from pregen_jax.pipeline.finished import MANIFEST, FinishedSearch
from pregen_jax.pipeline.sources import load_data, precomputed_candidates
from pregen_jax.refprobs import ReferenceFingerprint, reference_fingerprint
from tests.builders import write_precomputed


def declared(config):
    """The test references' fingerprint as a model of another vocabulary (bpe-9) declares it."""
    data = load_data(SearchConfig.load(config), progress=False)
    return dataclasses.replace(data.references, vocabulary="bpe-9", vocabulary_fingerprint="f00d")


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    folder = tmp_path_factory.mktemp("score")
    config = write_precomputed(folder, models=4, metrics=("CIDEr", "ROUGE_L"))  # no WMD: its vectors load slowly
    # One of par-1's 12 random captions repeats a word, which flags it degenerate: this file tests
    # score and the reader on all four models, not that rule (test_pipeline does).
    doc = tomllib.loads(config.read_text())
    config.write_text(tomli_w.dumps({**doc, "pregen": {**doc.get("pregen", {}), "degenerate": "include"}}))
    theirs = declared(config)
    for m in range(4):  # the ready-made models declare their vocabulary in their files
        dataclasses.replace(RefProbs.load(folder / f"model{m}.npz"), references=theirs).save(folder / f"model{m}.npz")
    assert cli.main(["run", "--config", str(config), "--out", str(folder / "run"), "--no-progress"]) == 0
    run = FinishedSearch.open(folder / "run")
    for m in range(4):  # the users' RefProbs, fingerprinted with the run's references
        stamped = dataclasses.replace(RefProbs.load(folder / f"model{m}.npz"), references=run.references)
        stamped.save(folder / f"new{m}.npz")
    return folder


def test_manifest_records_models_references_and_versions(search):
    run = FinishedSearch.open(search / "run")
    manifest = json.loads((search / "run" / MANIFEST).read_text())
    assert {"pregen-jax", "jax", "python"} <= set(manifest["versions"])
    assert run.tokenizer == "ptb" and run.postgen == ["CIDEr", "ROUGE_L"]  # a new search: the default
    assert [m.label for m in run.models] == ["init-1", "merge-1", "par-1", "init-2"]
    assert all(m.source == "precomputed" and m.decoding == "unknown" and m.vocabulary == "bpe-9"
               for m in run.models)
    assert set(run.models[0].keys) == {"model", "refprobs", "strata"}
    assert run.models[0].files["refprobs"].endswith("model0.npz")
    assert run.references.units == "word" and run.references.vocabulary == "bpe-9"
    assert run.reference_lengths.shape == tuple(manifest["reference_shape"])
    assert set(run.chosen()) == {"CIDEr", "ROUGE_L"} and len(run.model_rows) == 4
    report = (search / "run" / "report.md").read_text()
    assert "beam 3" not in report and "unknown (captions given ready-made)" in report
    assert "- Models' vocabulary: bpe-9" in report and "vocabulary 9" not in report
    models = pd.read_csv(search / "run" / "models.tsv", sep="\t")
    assert (models["decoding"] == "unknown").all() and (models["vocabulary"] == "bpe-9").all()


def test_score_predicts_n_models_with_conformal_intervals_and_perplexity(search, capsys):
    out = search / "scored"
    paths = [str(search / f"new{m}.npz") for m in (0, 3)]
    captions = [str(search / f"model{m}.txt") for m in (0, 3)]
    # 4 calibration models allow a conformal level of at most 4/5
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", *paths, "--captions", *captions,
                     "--out", str(out), "--level", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("calibration: 4 usable model(s) of the search's 4; 50% intervals need at least 3; "
                              "domain axes: geomean_join_pplx_none, ")
    assert "from perplexity" in printed and "order by the chosen metric: " in printed
    assert "50% conformal sets, valid after choosing" in printed
    frame = pd.read_csv(out / "scores.tsv", sep="\t", keep_default_na=False, na_values=[""])
    assert len(frame) == 2 * 2 * 2 and set(frame["predictor"]) == {"chosen", "perplexity"}
    assert (frame["decoding"] == "unknown").all() and (frame["units"] == "word").all()
    # the search's own models: inside every range, never flagged
    assert not frame["outside_calibration_range"].any() and frame["flag"].isna().all()
    assert (frame["low"] < frame["high"]).all() and (frame["low"] >= 0).all()
    # the whole set, as printed (4 models and many candidate metrics: often islands), its outermost ends the row's
    assert (frame["status"] == "predicted").all() and frame["why"].isna().all() and (frame["pieces"] >= 1).all()
    for _, row in frame.iterrows():
        assert row["set"].startswith(f"[{row['low']:.3f}, ") and row["set"].endswith(f", {row['high']:.3f}]")
        assert row["set"].count(" or ") == row["pieces"] - 1 and row["set"] in printed
    assert (frame.loc[frame["postgen"] != "CIDEr", "high"] <= 1).all()
    # At most one of the two predictions is the narrower one per model and post-gen metric.
    assert (frame.groupby(["model", "postgen"])["narrower"].sum() <= 1).all()
    # The chosen prediction lies on the least-squares line through the calibration models' metric of highest
    # R^2 (the interval's rule: tests/test_predict_validity.py), cut at the metric's range.
    run = FinishedSearch.open(search / "run")
    models = run.model_rows
    for _, row in frame[frame["predictor"] == "chosen"].iterrows():
        names = [n for n in run.correlations[row["postgen"]]["pregen"] if np.ptp(models[n]) > 0]
        r2 = [np.corrcoef(models[n], models[row["postgen"]])[0, 1] ** 2 for n in names]
        assert row["pregen"] == names[int(np.argmax(r2))]
        x, y = models[row["pregen"]].to_numpy(), models[row["postgen"]].to_numpy()
        slope, intercept = np.polyfit(x, y, 1)
        assert row["predicted"] == pytest.approx(max(intercept + slope * row["pregen_value"], 0.0), rel=1e-6,
                                                 abs=1e-9)
        assert row["low"] <= row["predicted"] <= row["high"]
    # With their captions, the models' measured scores are the search's own (model0 is init-1, model3 init-2).
    for name, label in (("new0", ("init", 1)), ("new3", ("init", 2))):
        own = models[(models["architecture"] == label[0]) & (models["run"] == label[1])].iloc[0]
        for _, row in frame[frame["model"] == name].iterrows():
            assert row["measured"] == pytest.approx(own[row["postgen"]], rel=1e-6)
    order = pd.read_csv(out / "order.tsv", sep="\t")
    pairs = pd.read_csv(out / "pairs.tsv", sep="\t")
    assert len(order) == 2 * 2 * 2 and len(pairs) == 2 * 2
    cider = order[(order["postgen"] == "CIDEr") & (order["predictor"] == "chosen")]
    assert cider["predicted"].is_monotonic_decreasing
    row = pairs[(pairs["postgen"] == "CIDEr") & (pairs["predictor"] == "chosen")].iloc[0]
    a, b = (frame[(frame["model"] == m) & (frame["postgen"] == "CIDEr") & (frame["predictor"] == "chosen")].iloc[0]
            for m in (row["model_a"], row["model_b"]))
    assert row["separable"] == (a["low"] > b["high"] or b["low"] > a["high"])


def _refused(search, capsys, path, out=None) -> str:
    args = ["predict", "--search", str(search / "run"), "--refprobs", str(search / "new1.npz"), str(path),
            "--level", "0.5"]
    assert cli.main(args + (["--out", str(out)] if out else [])) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    return err


def test_score_refuses_other_references_units_or_no_fingerprint(search, capsys, tmp_path):
    run = FinishedSearch.open(search / "run")
    loaded = RefProbs.load(search / "model1.npz")
    plain = RefProbs(loaded.probs, loaded.ranks, loaded.mask)
    plain.save(tmp_path / "plain.npz")
    assert "carries no reference fingerprint" in _refused(search, capsys, tmp_path / "plain.npz", tmp_path / "o")
    assert not (tmp_path / "o").exists()
    words = dataclasses.replace(run.references, vocabulary="word-72", vocabulary_fingerprint="beef")
    dataclasses.replace(plain, references=words).save(tmp_path / "words.npz")
    assert ("does not match the search its calibration was fitted on: its model reads vocabulary word-72, the "
            "search's models read bpe-9") in _refused(search, capsys, tmp_path / "words.npz")
    other = dataclasses.replace(run.references, tokens="0123456789abcdef")
    dataclasses.replace(plain, references=other).save(tmp_path / "other.npz")
    assert "other.npz: does not match the search its calibration was fitted on: it was computed on other references" \
        in _refused(search, capsys, tmp_path / "other.npz")
    dataclasses.replace(plain, units="token", references=dataclasses.replace(run.references, units="token")).save(tmp_path / "t.npz")
    assert "its positions are tokens, the search's are words: combine each word's pieces" in _refused(
        search, capsys, tmp_path / "t.npz")
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", str(search / "new0.npz"),
                     "--captions", str(search / "model0.txt"), str(search / "model1.txt")]) == 2
    assert "--captions: 2 file(s) for 1 --refprobs file(s)" in capsys.readouterr().err


def test_score_is_the_old_name_of_predict_and_says_so(search, capsys, tmp_path):
    args = ["--search", str(search / "run"), "--refprobs", str(search / "new0.npz"), "--level", "0.5"]
    assert cli.main(["score", *args, "--out", str(tmp_path / "old")]) == 0
    err = capsys.readouterr().err
    assert "pregen-search score: renamed to `pregen-search predict`" in err and "this version only" in err
    assert cli.main(["predict", *args, "--out", str(tmp_path / "new")]) == 0
    assert "renamed" not in capsys.readouterr().err
    for name in ("scores.tsv", "order.tsv", "pairs.tsv"):
        assert (tmp_path / "old" / name).read_text() == (tmp_path / "new" / name).read_text()


def test_a_search_refuses_ready_made_refprobs_of_other_references(search, tmp_path):
    config = SearchConfig.load(search / "run" / "config.toml")
    data = load_data(config, progress=False)
    other = dataclasses.replace(data.references, tokens="0123456789abcdef")
    dataclasses.replace(RefProbs.load(search / "model0.npz"), references=other).save(tmp_path / "other.npz")
    entry = dataclasses.replace(config.precomputed[0], ref_probs=str(tmp_path / "other.npz"))
    with pytest.raises(ValueError, match=r"other.npz\): its fingerprint says it was computed on other references"):
        precomputed_candidates(dataclasses.replace(config, precomputed=[entry]), data)


def test_fingerprints_follow_tokens_order_and_vocabulary(tmp_path):
    class Vocab:
        def __init__(self, tokens):
            self.tokens = tokens

        def fingerprint(self):
            return "-".join(self.tokens)
    refs = [[["a", "red", "box"], ["a", "box"]], [["a", "ball"]]]
    base = reference_fingerprint(refs, Vocab(["<edge>", "<unk>", "a"]))
    assert base.vocabulary == "word-3" and base.units == "word"
    assert reference_fingerprint([refs[0][::-1], refs[1]], Vocab(["<edge>", "<unk>", "a"])).tokens != base.tokens
    other_vocab = reference_fingerprint(refs, Vocab(["<edge>", "<unk>", "b"]))
    # never "word-3 is not word-3": the same name with other tokens says so, with both fingerprints
    assert base.difference(other_vocab).startswith("its vocabulary is another word-3 (the same kind and size, other "
                                                   "tokens: fingerprint <edge>-<unk>-b, the search's <edge>-<unk>-a)")
    assert base.difference(base) is None
    mask = np.ones((1, 1, 2), bool)
    rp = RefProbs(np.full((1, 1, 2), 0.5), np.zeros((1, 1, 2), np.int32), mask, references=base)
    rp.save(tmp_path / "rp.npz")
    assert RefProbs.load(tmp_path / "rp.npz").references == base
    RefProbs(rp.probs, rp.ranks, rp.mask).save(tmp_path / "plain.npz")
    assert RefProbs.load(tmp_path / "plain.npz").references is None
    assert ReferenceFingerprint.from_json(base.to_json(), "x") == base


def test_run_folder_without_manifest_or_changed_is_refused(search, tmp_path, capsys):
    import shutil
    old = tmp_path / "old"
    shutil.copytree(search / "run", old, ignore=shutil.ignore_patterns("cache"))
    (old / MANIFEST).unlink()
    assert cli.main(["predict", "--search", str(old), "--refprobs", str(search / "new0.npz")]) == 2
    err = capsys.readouterr().err
    assert "no manifest.json" in err and "rerun the search" in err and len(err.strip().splitlines()) == 1
    changed = tmp_path / "changed"
    shutil.copytree(search / "run", changed, ignore=shutil.ignore_patterns("cache"))
    with open(changed / "table.tsv", "a") as f:
        f.write("\n")
    assert cli.main(["predict", "--search", str(changed), "--refprobs", str(search / "new0.npz")]) == 2
    assert "table.tsv: changed since the search wrote it" in capsys.readouterr().err


def test_rank_refuses_unknown_columns_unless_named(search, tmp_path, capsys):
    table = pd.read_csv(search / "run" / "table.tsv", sep="\t")
    table = pd.concat([table, np.exp(-table["mean_mean_prob_none"]).rename("my_perplexity")], axis=1)
    table.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    args = ["rank", "--table", str(tmp_path / "t.tsv")]
    assert cli.main([*args, "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "column 'my_perplexity' is not a pre-gen metric name" in err and "--pregen my_perplexity" in err
    assert not (tmp_path / "a").exists()
    assert cli.main([*args, "--out", str(tmp_path / "b"), "--pregen", "my_perplexity"]) == 0
    ranked = pd.read_csv(tmp_path / "b" / "correlations_CIDEr.tsv", sep="\t")
    assert "my_perplexity" in set(ranked["pregen"])
    assert cli.main([*args, "--out", str(tmp_path / "c"), "--ignore", "my_perplexity"]) == 0
    assert "my_perplexity" not in set(pd.read_csv(tmp_path / "c" / "correlations_CIDEr.tsv", sep="\t")["pregen"])


def test_select_races_a_finished_searchs_models_on_the_test_split(search, capsys):
    out = search / "selected"
    assert cli.main(["select", "--search", str(search / "run"), "--split", "test", "--budget", "0.5",
                     "--seed", "1", "--out", str(out), "--no-progress", "--verbose"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "select.tsv", sep="\t")
    assert list(table.columns[:3]) == ["architecture", "run", "epoch"]
    assert {"rounds", "images_scored", "estimate", "low", "high", "status", "picked", "search_score",
            "tokenizer"} <= set(table.columns)
    assert table["picked"].sum() == 1 and "cost: " in printed
    assert printed.splitlines()[1].startswith(("separated: picked ", "not separated: ", "within "))  # after the tokenizer
    assert table["images_scored"].sum() <= 0.5 * 4 * 12
    assert "check against the search's whole-split CIDEr" in printed
    # a search of ready-made models has no captions of the validation images: refused in one line
    assert cli.main(["select", "--search", str(search / "run"), "--out", str(search / "v")]) == 2
    assert "no model of the search can be decoded on the val split" in capsys.readouterr().err
    assert not (search / "v").exists()


def test_predict_measures_captions_of_too_few_images_without_the_own_image_check(search, capsys, tmp_path):
    """12 test images are too few for the own-image check (datasets/caption_fit.MIN_IMAGES): another
    dataset's captions are measured without a word about them (the warning on a search of 25 test
    images: tests/test_jobs.py)."""
    (tmp_path / "flickr.txt").write_text("a dog runs through the grass\n" * 12)
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", str(search / "new0.npz"),
                     "--captions", str(tmp_path / "flickr.txt"), "--level", "0.5"]) == 0
    captured = capsys.readouterr()
    assert "bottom-half share" not in captured.err and "measured" in captured.out
    assert "os.fork()" not in captured.err


def _readme_fake(run, strength: float, path) -> str:
    """The README's recipe (random logits favouring the true token by ``strength``) on the search's references."""
    rng = np.random.default_rng(0)
    vocabulary = 50  # token 0 ends a caption
    targets = [[[*rng.integers(1, vocabulary, length - 1), 0] for length in image if length]
               for image in run.reference_lengths]
    logits = [[rng.normal(size=(len(ids), vocabulary)) + strength * np.eye(vocabulary)[ids] for ids in refs]
              for refs in targets]
    fake = RefProbs.from_log_probs(logits, targets, logits=True)
    RefProbs(fake.probs, fake.ranks, fake.mask, references=run.references).save(path)
    return str(path)


def test_the_readme_fake_models_are_flagged_or_withheld_and_get_no_zero_width_interval(search, capsys):
    """The README's recipe on the search's references: at strength 3 a model far better than the search's four
    at some metrics (issue 41 saw BLEU 1.000 [1.000, 1.000]); at 0.5 a near-random one whose perplexity lies
    far above theirs (issue 49: given a CIDEr as confident as theirs). Four models make a loose domain (the
    threshold is how far out one of them lies from the other three, here 5.3 spans)."""
    run = FinishedSearch.open(search / "run")
    paths = [_readme_fake(run, 3, search / "fake.npz"), _readme_fake(run, 0.5, search / "noise.npz")]
    out = search / "fake"
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", *paths, str(search / "new1.npz"),
                     "--out", str(out), "--level", "0.5"]) == 0
    printed = capsys.readouterr().out
    frame = pd.read_csv(out / "scores.tsv", sep="\t", keep_default_na=False, na_values=[""])
    noise = frame[frame["model"] == "noise"]
    assert (noise["outside_calibration_range"] | noise["flag"].notna()).all(), noise
    assert noise["flag"].dropna().str.contains(r"geomean_join_pplx_none \d+ spans above").all()
    assert noise.loc[noise["predictor"] == "perplexity", "outside_calibration_range"].all()
    assert "FLAGGED: " in printed and "none: " in printed
    outside = frame[frame["outside_calibration_range"]]
    assert outside["predicted"].isna().all() and outside["low"].isna().all() and outside["high"].isna().all()
    assert set(outside["side"]) <= {"below", "above"} and (outside["distance"] > 0).all()
    # a row without a number says why in its own columns, naming the axis; the domain cell never reads ok there
    assert (outside["status"] == "withheld").all()
    assert all(why.startswith(f"outside the calibration models' domain on its own metric: {axis} ")
               for why, axis in zip(outside["why"], outside["pregen"]))
    withheld = [line for line in printed.splitlines() if "none: " in line]
    assert withheld and all("WITHHELD from " in line and " ok " not in line for line in withheld)
    assert "  why (noise, from geomean_join_pplx_none): outside the calibration models' domain" in printed
    assert ~outside["narrower"].any()  # never the extrapolated one
    given = frame[frame["predicted"].notna()]
    assert (given["high"] > given["low"]).all()  # no zero-width interval, clipped or not
    assert "[1.000, 1.000]" not in printed and "[0.000, 0.000]" not in printed
    order = pd.read_csv(out / "order.tsv", sep="\t")
    assert "noise" not in set(order["model"])  # only predicted, unflagged models are ordered
    assert set(order["model"]) <= set(given.loc[given["flag"].isna(), "model"])
    for _, row in outside.iterrows():  # which side, and how far
        expected = (row["calibration_min"] - row["pregen_value"] if row["side"] == "below"
                    else row["pregen_value"] - row["calibration_max"])
        assert row["distance"] == pytest.approx(expected)


def test_predict_refuses_a_search_with_too_few_models_for_its_level_in_one_line(search, capsys, tmp_path):
    assert cli.main(["predict", "--search", str(search / "run"), "--refprobs", str(search / "new0.npz"),
                     "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    assert ("4 usable calibration model(s) (of the search's 4); 90% intervals need at least 9 (4 allow at most "
            "--level 0.80): use a search with more models, e.g. the full demo's") in err
