"""Flickr8k human judgments: the readers (real formats, hand-made files), the self-reference rules,
the tau variants, and an end-to-end run (BLEU-1 and CIDEr only, so no Java)."""
import numpy as np
import pandas as pd
import pytest
import scipy.stats

from pregen_jax.datasets import TOKENIZER_NAME
from pregen_jax.meta import judgments as jm
from pregen_jax.meta import judgments_report

from .conftest import shared

CAPTIONS = {
    "1000_a.jpg": ["A dog runs on the grass .", "A brown dog is running .", "A dog plays outside .",
                   "The dog runs through a field .", "A dog in a green field ."],
    "2000_b.jpg": ["Two children swim in a pool .", "Kids are swimming .", "Two kids in the water .",
                   "Children playing in a swimming pool .", "A boy and a girl swim ."],
    "3000_c.jpg": ["A man rides a bike .", "A cyclist on a road .", "A man on a bicycle .",
                   "Someone cycling down the street .", "Kids are swimming ."],  # same text as 2000_b.jpg#1
}
EXPERT_ROWS = [("1000_a.jpg", "2000_b.jpg#0", 1, 1, 2), ("1000_a.jpg", "1000_a.jpg#3", 4, 4, 4),
               ("1000_a.jpg", "3000_c.jpg#2", 1, 2, 1), ("2000_b.jpg", "2000_b.jpg#0", 4, 4, 3),
               ("2000_b.jpg", "3000_c.jpg#4", 3, 4, 4), ("2000_b.jpg", "1000_a.jpg#1", 1, 1, 1),
               ("3000_c.jpg", "3000_c.jpg#0", 4, 4, 4), ("3000_c.jpg", "1000_a.jpg#0", 1, 1, 2),
               ("3000_c.jpg", "2000_b.jpg#3", 2, 1, 1)]
CROWD_ROWS = [("1000_a.jpg", "1000_a.jpg#2", 1.0, 3, 0), ("1000_a.jpg", "2000_b.jpg#1", 0.0, 0, 3),
              ("1000_a.jpg", "3000_c.jpg#3", 0.25, 1, 3), ("2000_b.jpg", "3000_c.jpg#4", 1.0, 3, 0),
              ("2000_b.jpg", "2000_b.jpg#2", 0.666667, 2, 1), ("2000_b.jpg", "1000_a.jpg#4", 0.0, 0, 3),
              ("3000_c.jpg", "1000_a.jpg#1", 0.333333, 1, 2), ("3000_c.jpg", "3000_c.jpg#2", 1.0, 3, 0)]


def write_flickr8k(folder, expert=EXPERT_ROWS, crowd=CROWD_ROWS):
    folder.mkdir(exist_ok=True)
    (folder / "Flickr8k.token.txt").write_text(
        "".join(f"{image}#{n}\t{c}\n" for image, caps in CAPTIONS.items() for n, c in enumerate(caps)))
    (folder / "ExpertAnnotations.txt").write_text("".join("\t".join(map(str, r)) + "\n" for r in expert))
    (folder / "CrowdFlowerAnnotations.txt").write_text("".join("\t".join(map(str, r)) + "\n" for r in crowd))
    return folder


@pytest.fixture
def flickr(tmp_path):
    folder = write_flickr8k(tmp_path / "flickr8k")
    return folder, jm.read_captions(folder / "Flickr8k.token.txt")


def test_read_captions(flickr):
    _, captions = flickr
    assert captions.text["1000_a.jpg#0"] == "a dog runs on the grass"
    assert captions.image_captions["2000_b.jpg"] == [f"2000_b.jpg#{n}" for n in range(5)]
    assert len(captions.references("3000_c.jpg")) == 5


@pytest.mark.parametrize("content, message", [
    ("1000_a.jpg#0 no tab here\n", r"line 1: expected '<image>#<n><TAB><caption>'"),
    ("1000_a.jpg#0\tA dog\n1000_a.jpg#1\t...\n", r"line 2: caption 1000_a.jpg#1 is empty after tokenisation"),
    ("1000_a.jpg#0\tA dog\n1000_a.jpg#0\tA cat\n", r"line 2: caption id 1000_a.jpg#0 appears twice"),
])
def test_caption_reader_errors(tmp_path, content, message):
    (tmp_path / "Flickr8k.token.txt").write_text(content)
    with pytest.raises(ValueError, match=message):
        jm.read_captions(tmp_path / "Flickr8k.token.txt")


def test_read_expert_and_crowdflower(flickr):
    folder, captions = flickr
    expert = jm.read_expert(folder / "ExpertAnnotations.txt", captions)
    assert expert[0] == jm.Judgment("1000_a.jpg", "2000_b.jpg#0", (1.0, 1.0, 2.0)) and len(expert) == 9
    crowd = jm.read_crowdflower(folder / "CrowdFlowerAnnotations.txt", captions)
    assert crowd[2] == jm.Judgment("1000_a.jpg", "3000_c.jpg#3", (0.25,)) and len(crowd) == 8


@pytest.mark.parametrize("file, line, message", [
    ("ExpertAnnotations.txt", "1000_a.jpg\t2000_b.jpg#0\t1\t5\t2", r"expert scores must be integers 1-4"),
    ("ExpertAnnotations.txt", "1000_a.jpg\t2000_b.jpg#0\t1\t2", r"expected 5 tab-separated fields"),
    ("ExpertAnnotations.txt", "1000_a.jpg\t9999_z.jpg#0\t1\t1\t1", r"caption id 9999_z.jpg#0 not in Flickr8k"),
    ("ExpertAnnotations.txt", "9999_z.jpg\t2000_b.jpg#0\t1\t1\t1", r"image 9999_z.jpg has no captions"),
    ("CrowdFlowerAnnotations.txt", "1000_a.jpg\t2000_b.jpg#0\t0.5\t3\t0", r"share of yes 0.5 does not match"),
    ("CrowdFlowerAnnotations.txt", "1000_a.jpg\t2000_b.jpg#0\tyes\t3\t0", r"share of yes, yes and no must be numbers"),
])
def test_judgment_reader_errors(flickr, file, line, message):
    folder, captions = flickr
    first = "1000_a.jpg\t2000_b.jpg#1\t" + ("1\t1\t1" if file.startswith("Expert") else "0.5\t1\t1")
    (folder / file).write_text(first + "\n" + line + "\n")
    read = jm.read_expert if file.startswith("Expert") else jm.read_crowdflower
    with pytest.raises(ValueError, match=rf"{file}, line 2: {message}"):
        read(folder / file, captions)


def test_expert_pairs_leave_out_the_image_own_captions(flickr):
    folder, captions = flickr
    pairs = jm.expert_pairs(jm.read_expert(folder / "ExpertAnnotations.txt", captions), captions)
    # Left out: the three pairs with the image's own caption id, and 2000_b.jpg judged with
    # 3000_c.jpg#4, whose text is 2000_b.jpg's own caption #1.
    assert pairs.left_out == 4 and len(pairs) == 5
    assert pairs.candidates[0] == "two children swim in a pool"
    assert all(refs == captions.references(image) for refs, image in zip(pairs.references, pairs.images))
    assert pairs.human.shape == (5, 3) and pairs.human[0].tolist() == [1.0, 1.0, 2.0]


def test_crowdflower_own_caption_removal_rules(flickr):
    folder, captions = flickr
    judged = jm.read_crowdflower(folder / "CrowdFlowerAnnotations.txt", captions)
    by_rule = {rule: jm.crowdflower_pairs(judged, captions, rule) for rule in jm.REMOVAL_RULES}
    pair, image, kept = by_rule["pair"], by_rule["image"], by_rule["kept"]
    assert pair.own == 4 and len(pair) == 8 and pair.human[:, 0].tolist()[:3] == [1.0, 0.0, 0.25]
    own_text = captions.text["1000_a.jpg#2"]
    assert own_text not in pair.references[0] and len(pair.references[0]) == 4  # its own pair
    assert pair.references[1] == captions.references("1000_a.jpg")  # another pair of the same image
    assert own_text not in image.references[1] and len(image.references[1]) == 4  # CLIPScore: image-wide
    # 2000_b.jpg has two own candidates (3000_c.jpg#4 by text, 2000_b.jpg#2 by id): image-wide, both go.
    assert len(image.references[5]) == 3 and len(pair.references[5]) == 5
    assert kept.references == [captions.references(i) for i in kept.images]
    with pytest.raises(ValueError, match="unknown reference removal rule"):
        jm.crowdflower_pairs(judged, captions, "all")


def test_tau_variants():
    assert jm.TAU_VARIANT == {jm.EXPERT: "c", jm.CROWDFLOWER: "b"}
    metric = np.array([0.1, 0.4, 0.4, 0.9])
    human = np.array([[1, 2, 1], [2, 2, 3], [1, 3, 3], [4, 3, 4]], float)
    rows_x, rows_y = np.repeat(metric, 3), human.reshape(-1)
    tau_b = scipy.stats.kendalltau(rows_x, rows_y, variant="b").statistic
    tau_c = scipy.stats.kendalltau(rows_x, rows_y, variant="c").statistic
    assert tau_b != pytest.approx(tau_c)  # ties: the variants differ
    assert jm.kendall(metric, human, "c") == pytest.approx(tau_c)
    expert = jm.JudgedPairs(jm.EXPERT, ["i"] * 4, ["x"] * 4, [["y"]] * 4, human)
    crowd = jm.JudgedPairs(jm.CROWDFLOWER, ["i"] * 4, ["x"] * 4, [["y"]] * 4, human[:, :1])
    assert jm.correlate(expert, {"M": metric}, "tau-c")[0]["tau"] == pytest.approx(tau_c)
    assert jm.correlate(crowd, {"M": metric}, "tau-b")[0]["tau"] == pytest.approx(
        scipy.stats.kendalltau(metric, human[:, 0], variant="b").statistic)


def test_end_to_end_on_tiny_files(flickr, tmp_path):
    folder, _ = flickr
    out = tmp_path / "out"
    result = judgments_report.run_judgments(out, flickr8k=folder, metrics="Bleu_1,CIDEr")
    table = pd.read_csv(out / "judgments.tsv", sep="\t")
    assert list(table.columns) == list(jm.COLUMNS) and len(table) == 2 * (1 + len(jm.REMOVAL_RULES))
    assert (table["tokenizer"] == TOKENIZER_NAME).all() and table["tau"].between(-1, 1).all()
    assert set(table["variant"]) == {"tau-c", "tau-b", "tau-b, own caption removed image-wide",
                                     "tau-b, own caption kept"}
    assert table.groupby("dataset")["pairs"].first().to_dict() == {jm.EXPERT: 5, jm.CROWDFLOWER: 8}
    assert result.counts["expert_rows"] == 15
    report = (out / "report.md").read_text()
    assert "43.9" in report and TOKENIZER_NAME in report  # the published CIDEr beside ours


def test_missing_file_writes_nothing(flickr, tmp_path):
    folder, _ = flickr
    (folder / "CrowdFlowerAnnotations.txt").unlink()
    with pytest.raises(ValueError, match=r"CrowdFlowerAnnotations.txt: not found"):
        judgments_report.run_judgments(tmp_path / "out", flickr8k=folder, metrics="Bleu_1")
    assert not (tmp_path / "out").exists()


def test_real_flickr8k_counts():
    expert, crowd = jm.read_flickr8k_judgments(shared("flickr8k"))
    assert (len(expert), expert.left_out, expert.human.size) == (5664, 158, 16992)
    assert len(crowd["pair"]) == 47830 and crowd["pair"].own == 723  # 721 by caption id, 2 more by text
    assert len(set(expert.images)) == 1000
