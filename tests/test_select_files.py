"""``pregen-search select --references REFS --captions A B C``: caption files alone, no search
(issue 40, item 2): scores target evaluate --idf-from all's, and scored on every image (the default
since issue 57, and --budget 1) equal them, with evaluate's paired test beside."""
import json

import numpy as np
import pandas as pd
import pytest

from pregen_jax import cli
from pregen_jax.captionfiles import read_references
from pregen_jax.evaluation import score_files
from pregen_jax.ranking import verdicts
from pregen_jax.selection import RaceSettings, select_files
from tests.test_evaluate import flickr_captions


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """refs.json (COCO annotations of 120 Flickr8k test images) and three COCO results files of
    the first 100 of them: a real caption, and the same with its first one or two words cut."""
    folder = tmp_path_factory.mktemp("files")
    captions = flickr_captions(120)
    ids = {name: 1000 + 7 * k for k, name in enumerate(captions)}
    (folder / "refs.json").write_text(json.dumps({
        "images": [{"id": ids[n]} for n in captions],
        "annotations": [{"image_id": ids[n], "caption": c} for n in captions for c in captions[n][1:]]}))
    for k in range(3):
        rows = [{"image_id": ids[n], "caption": captions[n][0].split(" ", k)[-1]} for n in list(captions)[:100]]
        (folder / f"m{k}.json").write_text(json.dumps(rows[::-1]))
    return folder


def test_budget_1_gives_evaluate_idf_from_all_scores_exactly(files):
    paths = [files / f"m{k}.json" for k in range(3)]
    refs = read_references(files / "refs.json")
    table, selection, found = select_files(refs, paths, "CIDEr", RaceSettings(budget=1.0, seed=3))
    assert found.tokenizer == "ptb" and len(found.images) == 100 and len(found.idf_from) == 120
    evaluation = score_files(files / "refs.json", paths, metrics=["CIDEr"], idf_from="all")
    expected = evaluation.table.set_index("system")["score"]
    assert list(table["whole_split_score"]) == [expected[f"m{k}"] for k in range(3)]  # exactly, not approximately
    per_image = evaluation.per_image.pivot(index="image_id", columns="system", values="CIDEr").loc[found.images]
    np.testing.assert_array_equal(selection.scores, per_image[["m0", "m1", "m2"]].to_numpy().T)
    # the paired test for new images is evaluate's: the pick (m0, evaluate's first) against each other
    assert selection.race.exact and selection.race.picked == 0
    significance = evaluation.table.set_index("system")
    for k in (1, 2):
        for column in ("diff", "diff_low", "diff_high", "p_adjusted"):
            assert table[column][k] == pytest.approx(significance[column][f"m{k}"], abs=1e-12), column


def _printed(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def _agree(out, lines, verbose=False, within=None):
    """The agreement rules (ranking.verdicts) on select.tsv and what was printed, the answer's own race
    rebuilt from select.tsv's rows (status, within, the pick)."""
    table = pd.read_csv(out / "select.tsv", sep="\t")
    rows = table.rename(columns={"run": "candidate"})
    said = lines[0]
    race = verdicts.RaceResult(rows, int(np.flatnonzero(table["picked"])[0]),
                               [k for k, s in enumerate(table["status"]) if s == "not separated"], 0, 1.0, [], 0.0,
                               within=float(table["within"].dropna().iloc[0]), exact=said.startswith(verdicts.EXACT),
                               stopped_by_within=said.startswith("within "))
    return verdicts.agreement_errors(race, table, lines[:-3], within, verbose)


def test_select_of_files_is_exact_by_default_with_the_paired_test_beside(files, capsys):
    out = files / "exact"
    assert cli.main(["select", "--references", str(files / "refs.json"), "--captions",
                     *[str(files / f"m{k}.json") for k in range(3)], "--out", str(out)]) == 0
    lines = _printed(capsys)
    assert len(lines) <= verdicts.MAX_LINES and lines[0].startswith("exact on these images: picked ")
    assert "m0.json, CIDEr " in lines[0] and "on all 100 images" in lines[0]
    assert lines[1].startswith("on new images (evaluate's paired bootstrap, max-T over the 2 comparisons")
    assert "tok:ptb" in lines[-3] and _agree(out, lines) == []
    table = pd.read_csv(out / "select.tsv", sep="\t")
    assert table["p_adjusted"].notna().sum() == 2 and (table["images_scored"] == 100).all()
    assert "tokenizer: ptb" in (out / "summary.txt").read_text()


def test_select_without_a_search_picks_and_labels_a_subset(files, capsys):
    out = files / "sel"
    assert cli.main(["select", "--references", str(files / "refs.json"), "--captions",
                     *[str(files / f"m{k}.json") for k in range(3)], "--budget", "0.3", "--out", str(out),
                     "--verbose"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "select.tsv", sep="\t")
    assert table["picked"].sum() == 1 and set(table["tokenizer"]) == {"ptb"}
    assert "tokenizer: ptb" in printed and printed.splitlines()[0] == "tokenizer: ptb"
    assert "estimated from " in printed and "of the 100 images of" in printed
    assert "that the files caption (of its 120)" in printed
    # what the intervals are (issue 41): confidence sequences, simultaneous over the 3 models at alpha/3
    assert "confidence sequence, valid at every look of the race, at 98.33% (alpha/K for the K = 3" in printed
    assert "repeated looks" not in printed and "teacher-forced" not in printed
    assert "within: the pick is" in printed  # how far the pick can be from the best (issue 48)
    assert "every model on every image: about " in printed  # what scoring everything would have cost
    lines = printed.strip().splitlines()[1:]
    assert _agree(out, lines, verbose=True) == []
    if "not shown worse" in printed:
        assert "--within EPS" in printed and "would likely" not in printed


@pytest.mark.parametrize("extra, message", [
    ([], "give --references REFS and --captions"),
    (["--references", "r.json", "--search", "run"], "not both"),
    (["--references", "r.json", "--captions", "a.json"], "--captions: 1 file(s); select without a search compares at least two"),
    (["--references", "r.json", "--captions", "a.json", "b.json", "--checkpoints", "c"], "--checkpoints: needs --search"),
    (["--references", "r.json", "--captions", "a.json", "b.json", "--screen"], "--screen: needs --search"),
])
def test_sources_and_options_that_need_a_search(tmp_path, capsys, extra, message):
    assert cli.main(["select", *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "o").exists()


def test_captions_of_another_split_name_the_split_raced(tmp_path, capsys):
    karpathy = {"images": [{"filename": f"{k}.jpg", "split": "val" if k < 20 else "test",
                            "sentences": [{"raw": f"a dog number {k}"}]} for k in range(40)]}
    (tmp_path / "k.json").write_text(json.dumps(karpathy))
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"image_id": f"{k}.jpg", "caption": "a dog"}) + "\n"
                                                        for k in range(20, 40)))
    assert cli.main(["select", "--references", str(tmp_path / "k.json"), "--captions", str(tmp_path / "a.jsonl"),
                     str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "a.jsonl: line 1: image '20.jpg' is not in the val split of" in err, err


def test_files_not_separated_say_so_first_and_how_far_the_pick_may_be(files, capsys):
    # two copies of one file: no race can separate them; the answer leads with that, then `within`
    out = files / "same"
    (files / "copy.json").write_text((files / "m0.json").read_text())
    assert cli.main(["select", "--references", str(files / "refs.json"), "--captions", str(files / "m0.json"),
                     str(files / "copy.json"), "--budget", "0.3", "--out", str(out)]) == 0
    lines = _printed(capsys)
    assert lines[0].startswith("not separated: ") and "is at most " in lines[0] and "below the best of the 2" in lines[0]
    assert lines[1].startswith("shown worse than the best (dropped): none; not shown worse: ")
    assert len(lines) <= verdicts.MAX_LINES and _agree(out, lines) == []
    table = pd.read_csv(out / "select.tsv", sep="\t")
    assert table["within"].notna().sum() == 1 and float(table["within"].dropna().iloc[0]) > 0
