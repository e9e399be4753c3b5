"""The test sets METEOR must match the jar on, as (references, candidate, name) segments.

where-image2 (12 models and the human captions, package-tokenized as the pipeline scores them),
MUTT's original and corrupted sentences with 5, 10 and 20 references (raw), each Flickr8k test
caption against the other four (raw text), the demo's captions where a finished demo run has them (DEMO_RUN),
and hard strings.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from pregen_jax.datasets import tokenize

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
ROOT = Path(__file__).resolve().parents[2]
# A finished demo run (`bash scripts/demo.sh` writes runs/demo); PREGEN_TEST_DEMO_RUN names another.
DEMO_RUN = Path(os.environ.get("PREGEN_TEST_DEMO_RUN", ROOT / "runs" / "demo"))
WHERE_MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)] + ["human_1"]
MUTT = ("det_sub", "double_PP", "near_syms", "neg_subj", "neg_verb", "passive", "remove_prep", "sem_opps",
        "shuffled", "swap_chunks")

Segment = tuple[list[str], str, str]  # (references, candidate, name)


def flickr8k_raw() -> dict[str, list[str]]:
    """image -> its five raw captions."""
    refs: dict[str, list[str]] = {}
    for line in (DATA / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        refs.setdefault(key.split("#")[0], []).append(caption)
    return refs


def where_image2(model: str) -> list[Segment]:
    folder = DATA / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    raw = flickr8k_raw()
    lines = (folder / f"flickr8k_{model}.txt").read_text(encoding="utf-8").splitlines()
    return [([" ".join(tokenize(c)) for c in raw[i]], " ".join(tokenize(line)), f"where-image2 {model} {i}")
            for i, line in zip(ids, lines)]


def flickr8k_leave_one_out() -> list[Segment]:
    """Each Flickr8k test caption (raw) against the other four of its image."""
    raw = flickr8k_raw()
    test = (DATA / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split()  # 5 names have no captions
    return [(raw[i][:k] + raw[i][k + 1:], raw[i][k], f"flickr8k {i}#{k}") for i in test if i in raw for k in range(len(raw[i]))]


def mutt(corruption: str, references: int) -> list[Segment]:
    folder = DATA / "mutt"
    refs: dict = {}
    for a in json.loads((folder / f"{corruption}_r{references}.json").read_text())["annotations"]:
        refs.setdefault(a["image_id"], []).append(a["caption"])
    out = []
    for side in "ab":
        for c in json.loads((folder / f"{corruption}_{side}.json").read_text()):
            out.append((refs[c["image_id"]], c["caption"], f"mutt {corruption} r{references} {side} {c['image_id']}"))
    return out


def demo_captions() -> list[Segment]:
    """A finished demo run's models' test captions (``cache/captions/<model>/captions.txt``, one line
    per test image) against the built-in dataset's references (the demo's 6000/1000/1000, seed 0)."""
    from pregen_jax.datasets.shapes import ShapesConfig, generate
    folders = sorted(p.parent for p in (DEMO_RUN / "cache" / "captions").glob("*/captions.txt"))
    if not folders:
        return []
    test = generate(ShapesConfig(6000, 1000, 1000, seed=0)).splits["test"]
    refs = [[" ".join(c) for c in captions] for captions in test.captions]
    out = []
    for folder in folders:
        lines = (folder / "captions.txt").read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(refs), folder
        out += [(r, line, f"demo {folder.name} {k}") for k, (r, line) in enumerate(zip(refs, lines))]
    return out


HARD = [
    "A man's dog, the U.S.-based co. -- 3,000 dogs... e.g. Dr. Who",
    "\u201cQuoted\u201d `text' and \u2018single\u2019 quotes '' here",
    "Stra\u00dfe CAF\u00c9 na\u00efve \u0130stanbul \u0131 \u03a3\u039f\u03a3 Stra\u00dfe",
    "numbers 1,000.50 and 3.14 and 1990's and 'til rock'n'roll",
    "dash\u2013en dash\u2014em a - b a-b -a b- U.S.A.-led",
    "tabs\tand\u00a0nbsp and\u3000ideographic space",
    "Mr. Smith met Mrs. Jones at 5 p.m. No. 5 vs. No more",
    "emoji \U0001F600 smile and symbols @#$%^&*()[]{}<>|\\/",
    "a a a a a a a a a a a a",
    "the the the of of of , , , . . .",
    "",
    "   ",
    "a",
    ".",
    "ALL CAPS SENTENCE WITH WORDS",
    "x" * 60,
    "a man in a red shirt is riding a bicycle down the street next to a building",
    " ".join(["a dog runs on the grass and a man in a red shirt throws a ball"] * 5),  # 75 words: no bit masks
]


def hard_strings() -> list[Segment]:
    """Every hard string against the others as references, and against itself."""
    out = []
    for k, s in enumerate(HARD):
        others = [h for h in HARD if h.strip() and h != s][:6]
        out.append((others, s, f"hard {k} vs others"))
        if s.strip():
            out.append(([s], s, f"hard {k} vs itself"))
    return out
