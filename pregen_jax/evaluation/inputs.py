"""The files ``evaluate`` reads: references (a COCO annotation file, a Karpathy-split JSON, or the
JSONL ``export-references`` writes) and results (COCO results files), each checked in full
before any scoring: a problem is one ``ValueError`` naming the file and the image id, entry or line.

Which images, in which order, as coco-caption's example runs ``COCOEvalCap``
(``params['image_id'] = cocoRes.getImgIds()``): the images of the first results file, in the
order REFS lists its images (``loadRes`` keeps the annotation file's ``images`` order); each
image's references in file order (METEOR keeps the first of tied references, so order is part of
the answer).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .. import io

FORMATS = ("coco", "karpathy", "references-jsonl")


@dataclasses.dataclass(frozen=True)
class ReferenceFile:
    """The references of every image of REFS, in REFS's image order.

    Attributes:
      path: the file; format: one of ``FORMATS``.
      captions: image id -> its raw reference strings, in file order (dict order: REFS's image order).
      tokenized: the strings are already tokenized (``export-references``: lower-case alphanumeric tokens).
    """

    path: str
    format: str
    captions: dict
    tokenized: bool = False


@dataclasses.dataclass(frozen=True)
class ResultsFile:
    """One results file: image id (REFS's key) -> its caption, in file order."""

    path: str
    captions: dict


def read_json(path, what: str):
    try:
        return json.loads(io.read_text(path, what))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None


def read_references(path, split: str = "test") -> ReferenceFile:
    """REFS in whichever of the three formats it is (``split``: a Karpathy JSON's split)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return _references_jsonl(path)
    data = read_json(path, "references file")
    if isinstance(data, dict) and isinstance(data.get("images"), list) and data["images"] and \
            isinstance(data["images"][0], dict) and "sentences" in data["images"][0]:
        return _karpathy(path, data, split)
    return _coco_annotations(path, data)


def _coco_annotations(path: Path, data) -> ReferenceFile:
    """``{"images": [{"id"}], "annotations": [{"image_id", "caption"}]}``."""
    if not isinstance(data, dict) or "annotations" not in data:
        raise ValueError(f"{path}: not a COCO annotation file (no 'annotations'; a Karpathy-split JSON has "
                         "'images' with 'sentences', an export-references file ends in .jsonl)")
    if not isinstance(data["annotations"], list) or not data["annotations"]:
        raise ValueError(f"{path}: 'annotations' must be a non-empty list")
    captions: dict = {}
    for k, ann in enumerate(data["annotations"]):
        if not isinstance(ann, dict) or "image_id" not in ann or "caption" not in ann:
            raise ValueError(f"{path}: annotations[{k}] needs 'image_id' and 'caption'")
        _check_id(path, f"annotations[{k}]", ann["image_id"])
        if not isinstance(ann["caption"], str):
            raise ValueError(f"{path}: annotations[{k}] (image {ann['image_id']!r}): caption is not a string")
        captions.setdefault(ann["image_id"], []).append(ann["caption"])
    order = []
    for k, image in enumerate(data.get("images") or []):
        if not isinstance(image, dict) or "id" not in image:
            raise ValueError(f"{path}: images[{k}] needs an 'id'")
        order.append(image["id"])
    # loadRes keeps the 'images' order; images without an entry there come after, in annotation order
    listed = [i for i in dict.fromkeys(order) if i in captions]
    seen = set(listed)  # once: a set per annotation made this quadratic (22 s at 40,504 images)
    ordered = {i: captions[i] for i in listed + [i for i in captions if i not in seen]}
    return ReferenceFile(str(path), "coco", ordered)


def _karpathy(path: Path, data: dict, split: str) -> ReferenceFile:
    """A Karpathy-split JSON: images keyed by ``cocoid`` where present, else ``filename``; raw captions."""
    captions: dict = {}
    for k, image in enumerate(data["images"]):
        if not isinstance(image, dict) or not isinstance(image.get("sentences"), list):
            raise ValueError(f"{path}: images[{k}] needs a 'sentences' list")
        if image.get("split") != split:
            continue
        key = image["cocoid"] if "cocoid" in image else image.get("filename")
        if key is None:
            raise ValueError(f"{path}: images[{k}] has neither 'cocoid' nor 'filename'")
        if key in captions:
            raise ValueError(f"{path}: image {key!r} appears twice (images[{k}])")
        raws = []
        for s, sentence in enumerate(image["sentences"]):
            raw = sentence.get("raw") if isinstance(sentence, dict) else None
            if not isinstance(raw, str):
                raise ValueError(f"{path}: image {key!r}, sentences[{s}]: no raw caption (a string under 'raw')")
            raws.append(raw)
        captions[key] = raws
    if not captions:
        raise ValueError(f"{path}: no image in split {split!r} (--split)")
    return ReferenceFile(str(path), "karpathy", captions)


def _references_jsonl(path: Path) -> ReferenceFile:
    """The JSONL ``export-references`` writes: one reference a line, ``image_id`` and ``text``."""
    captions: dict = {}
    for line_no, line in enumerate(io.read_text(path, "references file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {line_no}: not JSON ({err.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("image_id"), str) or not isinstance(row.get("text"), str):
            raise ValueError(f"{path}, line {line_no}: not a row of export-references (needs 'image_id' and 'text')")
        captions.setdefault(row["image_id"], []).append(row["text"])
    if not captions:
        raise ValueError(f"{path}: no references")
    return ReferenceFile(str(path), "references-jsonl", captions, tokenized=True)


def _check_id(path, where: str, image_id) -> None:
    if isinstance(image_id, bool) or not isinstance(image_id, (int, str)):
        raise ValueError(f"{path}: {where}: image_id {json.dumps(image_id)[:40]} is not an integer or a string")


def _kind(image_id) -> str:
    return "an integer" if isinstance(image_id, int) else "a string"


def read_results(path, references: ReferenceFile) -> ResultsFile:
    """A COCO results file ``[{"image_id", "caption"}]`` checked against REFS: every image is in
    REFS (an id that matches only as a string or only as a number is named as such), once."""
    data = read_json(path, "results file")
    if not isinstance(data, list):
        raise ValueError(f"{path}: a results file is a JSON list of {{\"image_id\", \"caption\"}}")
    if not data:
        raise ValueError(f"{path}: empty results file (no captions)")
    known = references.captions
    as_text = {str(i): i for i in known}
    captions: dict = {}
    for k, row in enumerate(data):
        if not isinstance(row, dict) or "image_id" not in row or "caption" not in row:
            raise ValueError(f"{path}: entry {k} needs 'image_id' and 'caption'")
        image_id = row["image_id"]
        _check_id(path, f"entry {k}", image_id)
        if not isinstance(row["caption"], str):
            raise ValueError(f"{path}: entry {k} (image {image_id!r}): caption is not a string "
                             f"({json.dumps(row['caption'])[:40]})")
        if image_id not in known:
            twin = as_text.get(str(image_id))
            if twin is not None:
                raise ValueError(f"{path}: entry {k}: image_id {image_id!r} ({_kind(image_id)}) matches image "
                                 f"{twin!r} of {references.path} only as a "
                                 f"{'string' if isinstance(image_id, int) else 'number'} (it is {_kind(twin)} there)")
            raise ValueError(f"{path}: entry {k}: image {image_id!r} is not in {references.path}")
        if image_id in captions:
            raise ValueError(f"{path}: entry {k}: a second result for image {image_id!r} (one caption per image)")
        captions[image_id] = row["caption"]
    return ResultsFile(str(path), captions)


def scored_images(references: ReferenceFile, systems: list[ResultsFile]) -> list:
    """The images scored, in REFS's order; every system must cover the same ones."""
    first = systems[0]
    for other in systems[1:]:
        missing = [i for i in first.captions if i not in other.captions]
        extra = [i for i in other.captions if i not in first.captions]
        if missing or extra:
            which = (f"lacks image {missing[0]!r}" if missing else f"has image {extra[0]!r} that {first.path} lacks")
            raise ValueError(f"{other.path}: covers other images than {first.path} ({which}; "
                             f"{len(missing)} missing, {len(extra)} extra): systems are compared on the same images")
    return [i for i in references.captions if i in first.captions]
