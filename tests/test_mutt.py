"""MUTT metric unit tests: the pass rules, the test-set readers and their errors, and an end-to-end
run on a hand-made folder (BLEU-1 and CIDEr only, so no Java)."""
import json

import numpy as np
import pandas as pd
import pytest
from pycocoevalcap.cider.cider import Cider

from pregen_jax import postgen
from pregen_jax.datasets import TOKENIZER_NAME, tokenize
from pregen_jax.meta import common, mutt, mutt_report
from pregen_jax.meta.common import score_candidates

from .conftest import shared


def write_set(folder, corruption, items, refs, ks=(1, 2)):
    """items: [(image_id, original, corruption)]; refs: image_id -> references (the longest list)."""
    (folder / f"{corruption}_a.json").write_text(json.dumps([{"image_id": i, "caption": a} for i, a, _ in items]))
    (folder / f"{corruption}_b.json").write_text(json.dumps([{"image_id": i, "caption": b} for i, _, b in items]))
    for k in ks:
        annotations = [{"image_id": i, "id": i, "caption": r} for i, rs in refs.items() for r in rs[:k]]
        (folder / f"{corruption}_r{k}.json").write_text(json.dumps(
            {"type": "captions", "info": {}, "licenses": [], "annotations": annotations,
             "images": [{"id": a["image_id"]} for a in annotations]}))


# det_sub: item 0 is symmetric in "a"/"the" at k=2 only; item 1 never (its references use "a").
DET_SUB = ([(0, "A dog runs.", "The dog runs."), (1, "A cat sleeps", "The cat sleeps")],
           {0: ["a dog runs", "the dog runs"], 1: ["A cat sleeps on a mat", "a cat is sleeping"]})
NEG_VERB = ([(0, "A man is running", "A man is not running"), (1, "Two kids play", "Two kids do not play")],
            {0: ["a man is running fast", "a man runs"], 1: ["two kids play outside", "children play"]})


@pytest.fixture
def tiny_mutt(tmp_path):
    folder = tmp_path / "mutt"
    folder.mkdir()
    write_set(folder, "det_sub", *DET_SUB)
    write_set(folder, "neg_verb", *NEG_VERB)
    return folder


def test_higher_rule_needs_strictly_higher():
    for kind in (mutt.MEANING_ALTERING, mutt.FLUENCY):
        assert mutt.passes(kind, [2.0, 1.0, 1.0, 0.0], [1.0, 1.0, 2.0, 0.0]).tolist() == [True, False, False, False]


def test_within_rule_edges_and_zeros():
    s_a = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 100.0, 100.0, 100.0, 100.0]
    s_b = [0.0, 0.1, 0.85, 1.15, 0.849, 1.151, 85.0, 115.0, 84.9, 115.1]
    expected = [True, False, True, True, False, False, True, True, False, False]
    assert mutt.passes(mutt.MEANING_PRESERVING, s_a, s_b).tolist() == expected


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown corruption kind"):
        mutt.passes("meaning-ish", [1.0], [1.0])


def test_parse_ks():
    assert mutt.parse_ks("5,10,20") == (5, 10, 20)
    assert mutt.parse_ks("20, 5,5") == (20, 5)
    for bad in ("5,x", "0", ""):
        with pytest.raises(ValueError, match="--refs"):
            mutt.parse_ks(bad)


def test_read_set_tokenises_and_takes_first_k(tiny_mutt):
    refs = dict(DET_SUB[1])
    refs[0] = refs[0] + ["a dog is running"]
    refs[1] = refs[1] + ["  ...  "]  # empty after tokenisation: left out, counted
    write_set(tiny_mutt, "det_sub", DET_SUB[0], refs, ks=(1, 2, 3))
    got = mutt.read_mutt_set(tiny_mutt, "det_sub", (1, 3))
    assert got.kind == mutt.MEANING_PRESERVING and got.image_ids == [0, 1]
    assert got.originals == ["a dog runs", "a cat sleeps"] and got.corruptions == ["the dog runs", "the cat sleeps"]
    assert got.references[1] == [["a dog runs"], ["a cat sleeps on a mat"]]
    assert got.references[3] == [["a dog runs", "the dog runs", "a dog is running"],
                                 ["a cat sleeps on a mat", "a cat is sleeping"]]
    assert got.dropped == {1: 0, 3: 1} and got.prefix_consistent is True
    assert mutt.find_corruptions(tiny_mutt) == ["neg_verb", "det_sub"]  # MUTT's order, not alphabetical


def test_prefix_check_notices_other_references(tiny_mutt):
    write_set(tiny_mutt, "det_sub", DET_SUB[0], {0: ["x y", "a dog runs"], 1: ["z", "a cat"]}, ks=(2,))
    write_set(tiny_mutt, "det_sub", DET_SUB[0], {0: ["a dog runs"], 1: ["a cat"]}, ks=(1,))
    assert mutt.read_mutt_set(tiny_mutt, "det_sub", (1, 2)).prefix_consistent is False


def _break(folder, what):
    items, refs = DET_SUB
    if what == "missing b":
        (folder / "det_sub_b.json").unlink()
    elif what == "misaligned":
        (folder / "det_sub_b.json").write_text(json.dumps([{"image_id": 1, "caption": "x"},
                                                           {"image_id": 0, "caption": "y"}]))
    elif what == "shorter b":
        (folder / "det_sub_b.json").write_text(json.dumps([{"image_id": 0, "caption": "x"}]))
    elif what == "no references":
        write_set(folder, "det_sub", items, {0: refs[0]})
    elif what == "empty sentence":
        write_set(folder, "det_sub", [(0, "a dog", "?!"), items[1]], refs)
    elif what == "k not available":
        (folder / "det_sub_r2.json").unlink()
    elif what == "fewer than k":
        write_set(folder, "det_sub", items, {0: refs[0], 1: refs[1][:1]}, ks=(2,))
    elif what == "bad json":
        (folder / "det_sub_a.json").write_text("[{")
    elif what == "not coco":
        (folder / "det_sub_r1.json").write_text("[]")
    elif what == "unknown corruption":
        (folder / "foo_a.json").write_text("[]")


@pytest.mark.parametrize("what, message", [
    ("missing b", r"det_sub_b.json: not found"),
    ("misaligned", r"det_sub_b.json: image_ids do not align with det_sub_a.json \(entry 0"),
    ("shorter b", r"det_sub_b.json: 1 sentences but det_sub_a.json has 2"),
    ("no references", r"det_sub_r1.json: image_id 1 has no references"),
    ("empty sentence", r"det_sub_b.json: image_id 0: caption '\?!' is empty after tokenisation"),
    ("k not available", r"det_sub_r2.json: not found \(no 2-reference set"),
    ("fewer than k", r"det_sub_r2.json: image_id 1 has 1 references, fewer than 2"),
    ("bad json", r"det_sub_a.json: not valid JSON"),
    ("not coco", r"det_sub_r1.json: expected a COCO-style annotation file"),
    ("unknown corruption", r"foo_a.json: unknown corruption 'foo'"),
])
def test_bad_input_is_one_line_error_naming_the_file(tiny_mutt, what, message):
    _break(tiny_mutt, what)
    with pytest.raises(ValueError, match=message) as err:
        mutt.read_mutt(tiny_mutt, (1, 2))
    assert "\n" not in str(err.value)


def test_missing_folder_and_unknown_metric(tmp_path):
    with pytest.raises(ValueError, match="MUTT folder not found"):
        mutt.read_mutt(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"--metrics: unknown metric\(s\) \['BLEU'\]"):
        common.requested_metrics("CIDEr,BLEU")
    assert common.requested_metrics(None)[:4] == ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]


def test_bad_input_writes_nothing(tiny_mutt, tmp_path):
    _break(tiny_mutt, "misaligned")
    with pytest.raises(ValueError):
        mutt_report.run_mutt(tmp_path / "out", data=tiny_mutt, ks="1,2", metrics="Bleu_1")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.staging-*"))


class CountingLength(postgen.PostgenMetric):
    """A fake metric: the candidate's length in tokens; counts the candidates it scored."""

    name = "Length"

    def __init__(self):
        self.scored = 0

    def compute_score(self, gts, res):
        self.scored += len(res)
        per = [len(res[i][0].split()) for i in gts]
        return float(np.mean(per)), per


def test_score_candidates_keeps_repeats_and_reuses_the_memo():
    metric = CountingLength()
    metric_set = postgen.MetricSet([metric], {})
    refs, cands, memo = [["a b"], ["a b"], ["c"]], ["x y z", "x y z", "q"], {}
    assert score_candidates(metric_set, refs, cands, memo)["Length"].tolist() == [3, 3, 1]
    assert metric.scored == 2  # the repeated pair scored once
    assert score_candidates(metric_set, refs + [["d"]], cands + ["r s"], memo)["Length"].tolist() == [3, 3, 1, 2]
    assert metric.scored == 3  # only the new pair


def test_end_to_end_on_a_tiny_folder(tiny_mutt, tmp_path):
    out = tmp_path / "out"
    result = mutt_report.run_mutt(out, data=tiny_mutt, ks="1,2", metrics="Bleu_1,CIDEr")
    table = pd.read_csv(out / "mutt.tsv", sep="\t")
    assert list(table.columns) == list(mutt.COLUMNS) and len(table) == 2 * 2 * 2
    assert (table["tokenizer"] == TOKENIZER_NAME).all() and (table["trials"] == 2).all()
    bleu1 = table[table["metric"] == "Bleu_1"].set_index(["corruption", "refs"])["accuracy"]
    # Hand-checked BLEU-1 (pycocoevalcap, closest-reference brevity penalty):
    # det_sub k=1: b loses a third of its unigrams in both items (fail, fail); k=2: item 0 ties (pass).
    # neg_verb k=1: item 0 "not" lengthens b to the reference length, 0.8 > 0.78 (fail); item 1 passes.
    assert bleu1.to_dict() == {("det_sub", 1): 0.0, ("det_sub", 2): 50.0, ("neg_verb", 1): 50.0,
                               ("neg_verb", 2): 100.0}
    # CIDEr-D: the originals and the corruptions in two separate calls, as MUTT did.
    for corruption, (items, refs), kind in (("det_sub", DET_SUB, mutt.MEANING_PRESERVING),
                                            ("neg_verb", NEG_VERB, mutt.MEANING_ALTERING)):
        for k in (1, 2):
            gts = {n: [" ".join(tokenize(r)) for r in refs[i][:k]] for n, (i, _, _) in enumerate(items)}
            s_a = Cider().compute_score(gts, {n: [" ".join(tokenize(a))] for n, (_, a, _) in enumerate(items)})[1]
            s_b = Cider().compute_score(gts, {n: [" ".join(tokenize(b))] for n, (_, _, b) in enumerate(items)})[1]
            row = table[(table["metric"] == "CIDEr") & (table["corruption"] == corruption) & (table["refs"] == k)]
            assert row["passed"].item() == int(mutt.passes(kind, s_a, s_b).sum())
    report = (out / "report.md").read_text()
    assert TOKENIZER_NAME in report and "is the start of the largest file's list" in report
    assert (out / "mutt_heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.unavailable == {} and not list(tmp_path.glob(".out.staging-*"))


def test_real_mutt_sets_counts():
    sets = mutt.read_mutt(shared("mutt"))
    counts = {s.corruption: len(s.originals) for s in sets}
    assert counts == {"neg_subj": 336, "neg_verb": 198, "sem_opps": 246, "shuffled": 14, "passive": 214,
                      "near_syms": 240, "det_sub": 65, "double_PP": 202, "remove_prep": 202, "swap_chunks": 500}
    assert all(s.prefix_consistent for s in sets)  # r5 and r10 are the first 5 and 10 of r20
    assert {s.corruption: s.dropped[20] for s in sets if s.dropped[20]} == {"neg_subj": 1, "sem_opps": 1,
                                                                             "swap_chunks": 1}
    assert all(len(r) == 5 for s in sets for r in s.references[5])


def test_command_line(tiny_mutt, tmp_path, capsys):
    from pregen_jax import cli
    out = tmp_path / "out"
    assert cli.main(["mutt", "--out", str(out), "--data", str(tiny_mutt), "--refs", "1,7", "--metrics", "Bleu_1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neg_verb_r7.json: not found" in err and not out.exists()
    assert cli.main(["mutt", "--out", str(out), "--data", str(tiny_mutt), "--refs", "1,2", "--metrics", "Bleu_1"]) == 0
    assert "mutt.tsv" in capsys.readouterr().out and (out / "mutt.tsv").is_file()
