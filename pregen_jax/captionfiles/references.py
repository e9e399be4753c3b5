"""Reference files, in whichever of three formats: a COCO annotation file, a Karpathy-split JSON (one
of its splits), or the JSONL ``export-references`` writes.

Which images, in which order, as coco-caption's example runs ``COCOEvalCap``: REFS's images in the
order the annotation file's ``images`` lists them (``loadRes`` keeps it; images without an entry
there come after, in annotation order); each image's references in file order (METEOR keeps the
first of tied references, so order is part of the answer).
"""
from __future__ import annotations

import dataclasses
import json
import operator
from pathlib import Path

from .. import io
from .exported import read_exported_references
from .karpathy import KarpathyFile, is_karpathy, read_karpathy

FORMATS = ("coco", "karpathy", "references-jsonl")


@dataclasses.dataclass(frozen=True)
class ReferenceSet:
    """The references of every image of REFS, in REFS's image order.

    Attributes:
      path: the file; format: one of ``FORMATS``.
      captions: image id -> its reference strings, in file order (dict order: REFS's image order).
      tokenizer: the tokenizer that already made the strings (an export records it), None: raw text.
      aliases: another id of an image (as a string) -> its key (a Karpathy JSON keyed by ``cocoid``:
        each image's ``filename``; keyed by ``filename``: its ``imgid``), so captions keyed either way match.
      split: the Karpathy split read (None for the other formats).
      key_name: what the keys are (``id``: COCO's image id; ``cocoid``, ``filename``, ``imgid``, ...);
        alias_name: what the aliases are (None: there are none).
    """

    path: str
    format: str
    captions: dict
    tokenizer: str | None = None
    aliases: dict = dataclasses.field(default_factory=dict)
    split: str | None = None
    key_name: str = "image_id"
    alias_name: str | None = None

    @property
    def tokenized(self) -> bool:
        return self.tokenizer is not None

    @property
    def source(self) -> str:
        """How errors name these references: the file, and its split where it has several."""
        return f"the {self.split} split of {self.path}" if self.split else self.path


def read_references(path, split: str = "test") -> ReferenceSet:
    """REFS in whichever of the three formats it is (``split``: a Karpathy JSON's split)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return _references_jsonl(path)
    data = io.read_json(path, "references file")
    if is_karpathy(data):
        return _karpathy(read_karpathy(path, data), split)
    return _coco_annotations(path, data)


def check_image_id(path, where: str, image_id) -> None:
    """An image id is an integer or a string (``where``: the entry or line)."""
    if isinstance(image_id, bool) or not isinstance(image_id, (int, str)):
        raise ValueError(f"{path}: {where}: image_id {json.dumps(image_id)[:40]} is not an integer or a string")


def _coco_annotations(path: Path, data) -> ReferenceSet:
    """``{"images": [{"id"}], "annotations": [{"image_id", "caption"}]}``."""
    if isinstance(data, list):
        raise ValueError(f"{path}: a JSON list, not a COCO annotation file (a results file given as references?)")
    if not isinstance(data, dict) or "annotations" not in data:
        raise ValueError(f"{path}: not a COCO annotation file (no 'annotations'; a Karpathy-split JSON has "
                         "'images' with 'sentences', an export-references file ends in .jsonl)")
    if not isinstance(data["annotations"], list) or not data["annotations"]:
        raise ValueError(f"{path}: 'annotations' must be a non-empty list")
    captions = _grouped_annotations(data["annotations"])
    if captions is None:  # something is wrong: say what, entry by entry
        captions = {}
        for k, ann in enumerate(data["annotations"]):
            if not isinstance(ann, dict) or "image_id" not in ann or "caption" not in ann:
                raise ValueError(f"{path}: annotations[{k}] needs 'image_id' and 'caption'")
            check_image_id(path, f"annotations[{k}]", ann["image_id"])
            if not isinstance(ann["caption"], str):
                raise ValueError(f"{path}: annotations[{k}] (image {ann['image_id']!r}): caption is not a string")
            captions.setdefault(ann["image_id"], []).append(ann["caption"])
    order = []
    for k, image in enumerate(data.get("images") or []):
        if not isinstance(image, dict) or "id" not in image:
            raise ValueError(f"{path}: images[{k}] needs an 'id'")
        order.append(image["id"])
    listed = [i for i in dict.fromkeys(order) if i in captions]
    seen = set(listed)  # once: a set per annotation made this quadratic (22 s at 40,504 images)
    ordered = {i: captions[i] for i in listed + [i for i in captions if i not in seen]}
    return ReferenceSet(str(path), "coco", ordered, key_name="id")


def _grouped_annotations(annotations: list) -> dict | None:
    """image id -> its captions in file order, checked in bulk (type sets, C loops: 0.3 s at 202,520
    annotations entry by entry); None where an entry is not a dict with an integer or string
    ``image_id`` and a string ``caption`` (the caller then finds which)."""
    if set(map(type, annotations)) != {dict}:
        return None
    try:
        ids = list(map(operator.itemgetter("image_id"), annotations))
        texts = list(map(operator.itemgetter("caption"), annotations))
    except KeyError:
        return None
    if not set(map(type, ids)) <= {int, str} or set(map(type, texts)) != {str}:
        return None
    captions: dict = {}
    for image_id, caption in zip(ids, texts):
        captions.setdefault(image_id, []).append(caption)
    return captions


def _karpathy(corpus: KarpathyFile, split: str) -> ReferenceSet:
    """One split of a Karpathy-split JSON: images keyed by ``cocoid`` where present (their ``image_id``
    an alias), else by ``image_id`` (``filename``; its ``imgid`` an alias: Flickr's files have no COCO
    id, and results files key their images by either)."""
    captions: dict = {}
    aliases: dict = {}
    for image in corpus.images:
        if image.split != split:
            continue
        key = image.image_id if image.cocoid is None else image.cocoid
        if key in captions:
            raise ValueError(f"{corpus.path}: image {key!r} appears twice (image entry {image.position})")
        captions[key] = image.texts
        alias = image.image_id if image.cocoid is not None else image.imgid
        if alias is not None and str(alias) != str(key):
            aliases[str(alias)] = key
    if not captions:
        splits = sorted({image.split for image in corpus.images})
        raise ValueError(f"{corpus.path}: no image in split {split!r} (--split; it has {', '.join(splits)})")
    chosen = [image for image in corpus.images if image.split == split]
    fields = {"cocoid" if image.cocoid is not None else image.id_field for image in chosen}
    alias_fields = {image.id_field if image.cocoid is not None else "imgid" for image in chosen
                    if (image.image_id if image.cocoid is not None else image.imgid) is not None}
    return ReferenceSet(corpus.path, "karpathy", captions, aliases=aliases, split=split,
                        key_name=" or ".join(sorted(fields)),
                        alias_name=" or ".join(sorted(alias_fields)) if aliases else None)


def _references_jsonl(path: Path) -> ReferenceSet:
    """The JSONL ``export-references`` writes: its rows' ``raw`` texts (raw references: a ``ptb``
    search's export), else the tokens its rows record (already tokenized, by the tokenizer they name)."""
    rows = read_exported_references(path)
    tokenizers = {row.tokenizer for row in rows}
    if len(tokenizers) > 1:
        raise ValueError(f"{path}: rows made by different tokenizers ({', '.join(sorted(tokenizers))})")
    with_raw = [row.raw is not None for row in rows]
    if any(with_raw) and not all(with_raw):
        line = with_raw.index(not with_raw[0]) + 1
        raise ValueError(f"{path}: row {line} {'has' if with_raw[line - 1] else 'lacks'} 'raw' and row 1 does not "
                         "(an export writes it on every row or on none)")
    captions: dict = {}
    for row in rows:
        captions.setdefault(row.image_id, []).append(row.text if row.raw is None else row.raw)
    return ReferenceSet(str(path), "references-jsonl", captions, tokenizer=None if with_raw[0] else rows[0].tokenizer)
