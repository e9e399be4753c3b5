"""A Karpathy-split JSON (``dataset_coco.json``, ``dataset_flickr8k.json``, ...), read and checked in
one place for every command: the search's corpus reader (``datasets.read_karpathy_json``) and the
references of ``evaluate``, ``select`` and ``predict`` (``read_references``).

``{"dataset": NAME, "images": [{"filename", "cocoid"?, "imgid"?, "split", "sentences": [{"raw"} or
{"tokens"}]}]}``. Each image's id is its ``filename`` (else ``imgid``, else its position): the
search's id; ``cocoid`` is kept beside it (COCO's tools key results by it). A sentence is its
``raw`` text, or its ``tokens`` joined by single spaces where it has no ``raw``.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .. import io


@dataclasses.dataclass(frozen=True)
class KarpathyImage:
    """One entry of ``images``.

    Attributes:
      position: its index in the file's ``images`` (the row of Karpathy's feature files).
      image_id: ``filename``, else ``imgid``, else ``position``, as a string.
      cocoid: COCO's id of the image, where the entry has one.
      split: ``train``, ``val``, ``test`` or ``restval`` (as the file writes it).
      texts: the image's reference sentences, in file order.
      imgid: the entry's ``imgid`` where its id is its ``filename`` (Karpathy's sequential number,
        which results files key images by too), else None.
      id_field: where ``image_id`` came from: ``filename``, ``imgid`` or ``position``.
    """

    position: int
    image_id: str
    cocoid: int | None
    split: str
    texts: list[str]
    imgid: int | str | None = None
    id_field: str = "filename"


@dataclasses.dataclass(frozen=True)
class KarpathyFile:
    """A Karpathy-split JSON: its corpus name (``dataset``, else the file's stem) and its images in file order."""

    path: str
    name: str
    images: list[KarpathyImage]


def is_karpathy(data) -> bool:
    """``data`` (a parsed JSON value) looks like a Karpathy-split JSON (its first image has ``sentences``)."""
    return (isinstance(data, dict) and isinstance(data.get("images"), list) and bool(data["images"])
            and isinstance(data["images"][0], dict) and "sentences" in data["images"][0])


def read_karpathy(path, data=None) -> KarpathyFile:
    """The file at ``path`` (``data``: its JSON value, where the caller parsed it already), every
    entry checked: one ``ValueError`` naming the file and the image at fault."""
    path = Path(path)
    if data is None:
        data = io.read_json(path, "Karpathy JSON")
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise ValueError(f"{path}: expected a Karpathy-split JSON object with an 'images' list")
    name = data.get("dataset", path.stem)
    if not isinstance(name, str):
        raise ValueError(f"{path}: 'dataset' = {json.dumps(name)[:60]}: must be a string (the corpus's name)")
    images, seen = [], {}
    for n, entry in enumerate(data["images"]):
        if not isinstance(entry, dict) or "split" not in entry or not isinstance(entry.get("sentences"), list):
            raise ValueError(f"{path}: image entry {n} needs 'split' and a 'sentences' list")
        image_id = _image_id(path, n, entry)
        if image_id in seen:
            raise ValueError(f"{path}: image {image_id!r} appears twice (entries {seen[image_id]} and {n})")
        seen[image_id] = n
        if not isinstance(entry["split"], str):
            raise ValueError(f"{path}: image {image_id!r}: 'split' = {json.dumps(entry['split'])[:60]}: must be a "
                             "string (train, val, test or restval)")
        cocoid = entry.get("cocoid")
        if cocoid is not None and (isinstance(cocoid, bool) or not isinstance(cocoid, int)):
            raise ValueError(f"{path}: image {image_id!r}: 'cocoid' = {json.dumps(cocoid)[:60]}: must be an integer")
        texts = [_text(path, image_id, k, s) for k, s in enumerate(entry["sentences"])]
        imgid = entry.get("imgid") if entry.get("filename") else None
        if isinstance(imgid, bool) or not isinstance(imgid, (int, str)) or imgid == "":
            imgid = None
        id_field = next((key for key in ("filename", "imgid") if entry.get(key) not in (None, "")), "position")
        images.append(KarpathyImage(n, image_id, cocoid, entry["split"], texts, imgid, id_field))
    return KarpathyFile(str(path), name, images)


def _image_id(path, n: int, image: dict) -> str:
    """The image's ``filename`` (or ``imgid``, or its position), which must be a string (or an integer id)."""
    for key in ("filename", "imgid"):
        value = image.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return str(value)
        raise ValueError(f"{path}: image entry {n}: {key!r} = {json.dumps(value)[:60]}: must be a string "
                         "(the image's file name)" + (" or an integer" if key == "imgid" else ""))
    return str(n)


def _text(path, image_id: str, k: int, sentence) -> str:
    """One sentence's ``raw`` text, or its ``tokens`` joined by spaces."""
    where = f"{path}: image {image_id!r}, sentence {k}"
    if not isinstance(sentence, dict):
        raise ValueError(f"{where}: expected an object with 'raw' or 'tokens'")
    if "raw" in sentence:
        if not isinstance(sentence["raw"], str):
            raise ValueError(f"{where}: 'raw' must be a string, got {sentence['raw']!r}")
        return sentence["raw"]
    tokens = sentence.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"{where}: needs 'raw' (a string) or 'tokens' (a list of strings)")
    return " ".join(tokens)
