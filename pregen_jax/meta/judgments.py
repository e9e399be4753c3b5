"""Kendall correlation of the post-gen metrics with the Flickr8k human judgments (Hodosh et al. 2013).

- Flickr8k-Expert (``ExpertAnnotations.txt``): three experts score image-caption pairs 1-4. The
  pairs whose caption is one of the judged image's own five are left out; each expert score is
  its own row; the references are the image's five captions; Kendall tau-c.
- Flickr8k-CrowdFlower (``CrowdFlowerAnnotations.txt``): the human score is the share of "yes"
  votes. A candidate that is one of the image's own captions is removed from its references;
  Kendall tau-b.

A caption is "one of the image's own" when its caption id names the judged image or its tokens
equal those of one of the image's captions (the CLIPScore scripts compare the caption text).
Metrics run once per dataset and rule: one corpus call over all judged pairs, each pair its own
entry (keyed by pair, not by judgment row), so CIDEr-D's document frequencies come from the
references of all the pairs.
"""
from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import numpy as np
import scipy.stats

from .. import io
from ..datasets import TOKENIZER_NAME, tokenize

EXPERT, CROWDFLOWER = "Flickr8k-Expert", "Flickr8k-CrowdFlower"
TAU_VARIANT = {EXPERT: "c", CROWDFLOWER: "b"}  # as CLIPScore (Hessel et al. 2021) reports them
# How a CrowdFlower candidate that is one of the image's own captions leaves the references:
# "pair": from its own pair's references only; "image": from the references of every pair of that
# image (what CLIPScore's download.py does, removing it from the image's one shared list); "kept": not at all.
REMOVAL_RULES = ("pair", "image", "kept")
COLUMNS = ("dataset", "metric", "variant", "tau", "pairs", "tokenizer")


@dataclasses.dataclass(frozen=True)
class Flickr8kCaptions:
    """``Flickr8k.token.txt``: caption id (``<image>#<n>``) -> tokenised caption, and each image's ids in order."""

    text: dict[str, str]
    image_captions: dict[str, list[str]]

    def references(self, image: str) -> list[str]:
        return [self.text[c] for c in self.image_captions[image]]


@dataclasses.dataclass(frozen=True)
class Judgment:
    """One judged image-caption pair: ``scores`` are the three expert scores, or (share of yes,)."""

    image: str
    caption_id: str
    scores: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class JudgedPairs:
    """The pairs a correlation is computed over.

    Attributes:
      candidates: str[pairs], tokenised; references: references[pair] (tokenised strings).
      human: f[pairs, raters] (three experts, or one crowd share).
      left_out: pairs left out (Expert: the candidate is one of the image's own captions).
      own: pairs whose candidate is one of the image's own captions (CrowdFlower).
    """

    dataset: str
    images: list[str]
    candidates: list[str]
    references: list[list[str]]
    human: np.ndarray
    left_out: int = 0
    own: int = 0

    def __len__(self) -> int:
        return len(self.candidates)


def _lines(path: Path, what: str) -> list[tuple[int, list[str]]]:
    if not path.is_file():
        raise ValueError(f"{path}: not found ({what})")
    return [(n, line.split("\t")) for n, line in enumerate(io.read_lines(path, what), 1) if line.strip()]


def read_captions(path) -> Flickr8kCaptions:
    """Read ``Flickr8k.token.txt`` (``<image>#<n>\\t<caption>``), tokenising every caption."""
    path = Path(path)
    text, images = {}, collections.defaultdict(list)
    for n, fields in _lines(path, "Flickr8k captions"):
        if len(fields) != 2 or "#" not in fields[0]:
            raise ValueError(f"{path}, line {n}: expected '<image>#<n><TAB><caption>'")
        caption_id, caption = fields
        tokens = tokenize(caption)
        if not tokens:
            raise ValueError(f"{path}, line {n}: caption {caption_id} is empty after tokenisation ({TOKENIZER_NAME})")
        if caption_id in text:
            raise ValueError(f"{path}, line {n}: caption id {caption_id} appears twice")
        text[caption_id] = " ".join(tokens)
        images[caption_id.rsplit("#", 1)[0]].append(caption_id)
    if not text:
        raise ValueError(f"{path}: no captions")
    return Flickr8kCaptions(text, dict(images))


def _check_ids(path: Path, n: int, image: str, caption_id: str, captions: Flickr8kCaptions) -> None:
    if image not in captions.image_captions:
        raise ValueError(f"{path}, line {n}: image {image} has no captions in Flickr8k.token.txt")
    if caption_id not in captions.text:
        raise ValueError(f"{path}, line {n}: caption id {caption_id} not in Flickr8k.token.txt")


def read_expert(path, captions: Flickr8kCaptions) -> list[Judgment]:
    """``ExpertAnnotations.txt``: image, caption id, three expert scores (integers 1-4)."""
    path = Path(path)
    out = []
    for n, fields in _lines(path, "expert judgments"):
        if len(fields) != 5:
            raise ValueError(f"{path}, line {n}: expected 5 tab-separated fields (image, caption id, 3 scores), "
                             f"got {len(fields)}")
        image, caption_id, *raw = fields
        if any(s not in ("1", "2", "3", "4") for s in raw):
            raise ValueError(f"{path}, line {n}: expert scores must be integers 1-4, got {raw}")
        _check_ids(path, n, image, caption_id, captions)
        out.append(Judgment(image, caption_id, tuple(float(s) for s in raw)))
    if not out:
        raise ValueError(f"{path}: no judgments")
    return out


def read_crowdflower(path, captions: Flickr8kCaptions) -> list[Judgment]:
    """``CrowdFlowerAnnotations.txt``: image, caption id, share of yes, number of yes, number of no."""
    path = Path(path)
    out = []
    for n, fields in _lines(path, "CrowdFlower judgments"):
        if len(fields) != 5:
            raise ValueError(f"{path}, line {n}: expected 5 tab-separated fields (image, caption id, share of yes, "
                             f"yes, no), got {len(fields)}")
        image, caption_id, share, yes, no = fields
        try:
            share, yes, no = float(share), int(yes), int(no)
        except ValueError:
            raise ValueError(f"{path}, line {n}: share of yes, yes and no must be numbers, got {fields[2:]}") from None
        if not 0 <= share <= 1:  # NaN and inf too: a NaN share would make every tau NaN
            raise ValueError(f"{path}, line {n}: share of yes = {fields[2]!r}: must be a number in 0..1")
        if yes < 0 or no < 0 or yes + no == 0 or abs(share - yes / (yes + no)) > 1e-6:
            raise ValueError(f"{path}, line {n}: share of yes {share} does not match {yes} yes and {no} no")
        _check_ids(path, n, image, caption_id, captions)
        out.append(Judgment(image, caption_id, (share,)))
    if not out:
        raise ValueError(f"{path}: no judgments")
    return out


def is_own(judgment: Judgment, captions: Flickr8kCaptions) -> bool:
    """Whether the judged caption is one of the judged image's own (by caption id or by its tokens)."""
    return (judgment.caption_id.rsplit("#", 1)[0] == judgment.image
            or captions.text[judgment.caption_id] in captions.references(judgment.image))


def expert_pairs(judgments: list[Judgment], captions: Flickr8kCaptions) -> JudgedPairs:
    """The Expert pairs whose caption is not one of the image's own; references: the image's five captions."""
    kept = [j for j in judgments if not is_own(j, captions)]
    return JudgedPairs(EXPERT, [j.image for j in kept], [captions.text[j.caption_id] for j in kept],
                       [captions.references(j.image) for j in kept],
                       np.array([j.scores for j in kept], float).reshape(len(kept), -1),
                       left_out=len(judgments) - len(kept))


def crowdflower_pairs(judgments: list[Judgment], captions: Flickr8kCaptions, removal: str = "pair") -> JudgedPairs:
    """Every CrowdFlower pair; an own candidate leaves the references as ``removal`` says (see REMOVAL_RULES)."""
    if removal not in REMOVAL_RULES:
        raise ValueError(f"unknown reference removal rule {removal!r}; choose from {REMOVAL_RULES}")
    own = [is_own(j, captions) for j in judgments]
    removed_by_image = collections.defaultdict(set)
    for j, j_own in zip(judgments, own):
        if j_own:
            removed_by_image[j.image].add(captions.text[j.caption_id])
    references = []
    for j, j_own in zip(judgments, own):
        refs = captions.references(j.image)
        if removal == "pair" and j_own:
            refs = [r for r in refs if r != captions.text[j.caption_id]]
        elif removal == "image":
            refs = [r for r in refs if r not in removed_by_image[j.image]]
        if not refs:
            raise ValueError(f"image {j.image}: no references left after removing its own judged captions")
        references.append(refs)
    return JudgedPairs(CROWDFLOWER, [j.image for j in judgments], [captions.text[j.caption_id] for j in judgments],
                       references, np.array([j.scores for j in judgments], float), own=sum(own))


def kendall(metric_scores, human: np.ndarray, variant: str) -> float:
    """Kendall tau between a metric (f[pairs]) and the human scores (f[pairs, raters]), one row per rating."""
    human = np.asarray(human, float)
    rows = np.repeat(np.asarray(metric_scores, float), human.shape[1])
    return float(scipy.stats.kendalltau(rows, human.reshape(-1), variant=variant).statistic)


def correlate(pairs: JudgedPairs, scores: dict[str, np.ndarray], variant_label: str) -> list[dict]:
    """One judgments.tsv row per metric."""
    variant = TAU_VARIANT[pairs.dataset]
    return [{"dataset": pairs.dataset, "metric": name, "variant": variant_label,
             "tau": kendall(s, pairs.human, variant), "pairs": len(pairs), "tokenizer": TOKENIZER_NAME}
            for name, s in scores.items()]


def read_flickr8k_judgments(folder) -> tuple[JudgedPairs, dict[str, JudgedPairs]]:
    """The Expert pairs and the CrowdFlower pairs under each removal rule, read and checked."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: Flickr8k folder not found")
    captions = read_captions(folder / "Flickr8k.token.txt")
    expert = expert_pairs(read_expert(folder / "ExpertAnnotations.txt", captions), captions)
    crowd_judgments = read_crowdflower(folder / "CrowdFlowerAnnotations.txt", captions)
    crowd = {rule: crowdflower_pairs(crowd_judgments, captions, rule) for rule in REMOVAL_RULES}
    return expert, crowd


def variant_label(pairs: JudgedPairs, removal: str | None = None) -> str:
    """``tau-c`` / ``tau-b``, naming the CrowdFlower removal rule where it is not the default (per pair)."""
    label = f"tau-{TAU_VARIANT[pairs.dataset]}"
    if removal in (None, "pair"):
        return label
    return f"{label}, own caption {'removed image-wide' if removal == 'image' else 'kept'}"
