"""Readers for real caption corpora: Karpathy-split JSON and the Flickr8k token/split files.

Both re-derive tokens with the package tokenizer, so every corpus shares one tokenisation (the
models' words), keep each reference's raw text too (what a search scoring with ``ptb`` reads), and
both fail with one line naming the file and the entry at fault.
"""
from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path

from .. import io
from .corpus import CaptionDataset, CaptionSplit, tokenize

FLICKR8K_SPLIT_FILES = (("train", "Flickr_8k.trainImages.txt"), ("val", "Flickr_8k.devImages.txt"),
                        ("test", "Flickr_8k.testImages.txt"))


def read_karpathy_json(path, merge_restval: bool = True) -> CaptionDataset:
    """A ``dataset_flickr8k.json``-style file: ``{"dataset": ..., "images": [{"filename",
    "split", "sentences": [{"raw" or "tokens"}]}]}``.

    ``file_order`` lists every image in file order: the row order of Karpathy's feature files.
    """
    path = Path(path)
    try:
        data = json.loads(io.read_text(path, "Karpathy JSON"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise ValueError(f"{path}: expected a Karpathy-split JSON object with an 'images' list")
    splits: dict[str, CaptionSplit] = {}
    file_order, seen = [], {}
    for n, image in enumerate(data["images"]):
        if not isinstance(image, dict) or "split" not in image or not isinstance(image.get("sentences"), list):
            raise ValueError(f"{path}: image entry {n} needs 'split' and a 'sentences' list")
        image_id = _image_id(path, n, image)
        if image_id in seen:
            raise ValueError(f"{path}: image {image_id!r} appears twice (entries {seen[image_id]} and {n})")
        seen[image_id] = n
        refs = [_sentence_tokens(path, image_id, k, s) for k, s in enumerate(image["sentences"])]
        raws = [s["raw"] if "raw" in s else " ".join(s["tokens"]) for s in image["sentences"]]
        if not isinstance(image["split"], str):
            raise ValueError(f"{path}: image {image_id!r}: 'split' = {json.dumps(image['split'])[:60]}: must be a "
                             "string (train, val, test or restval)")
        split = "train" if image["split"] == "restval" and merge_restval else image["split"]
        target = splits.setdefault(split, CaptionSplit([], [], raw=[], aliases={}))
        target.image_ids.append(image_id)
        cocoid = image.get("cocoid")
        if isinstance(cocoid, int) and not isinstance(cocoid, bool) and str(cocoid) != image_id:
            target.aliases[str(cocoid)] = image_id  # results files of COCO's tools key images by cocoid
        target.captions.append(refs)
        target.raw.append(raws)
        file_order.append(image_id)
    for name, split in splits.items():
        split.check(f"{path} ({name} split)")
    name = data.get("dataset", path.stem)
    if not isinstance(name, str):
        raise ValueError(f"{path}: 'dataset' = {json.dumps(name)[:60]}: must be a string (the corpus's name)")
    return CaptionDataset(name, splits, file_order=file_order)


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


def _sentence_tokens(path, image_id, k, sentence) -> list[str]:
    where = f"{path}: image {image_id!r}, sentence {k}"
    if not isinstance(sentence, dict):
        raise ValueError(f"{where}: expected an object with 'raw' or 'tokens'")
    if "raw" in sentence:
        if not isinstance(sentence["raw"], str):
            raise ValueError(f"{where}: 'raw' must be a string, got {sentence['raw']!r}")
        return tokenize(sentence["raw"])
    tokens = sentence.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(f"{where}: needs 'raw' (a string) or 'tokens' (a list of strings)")
    return tokenize(" ".join(tokens))


def read_flickr8k(folder, strict: bool = False) -> CaptionDataset:
    """The Flickr8k distribution: ``Flickr8k.token.txt`` and ``Flickr_8k.{train,dev,test}Images.txt``.

    A split file may list images that have no captions (some copies of the test split end
    with ``1.jpg`` ... ``5.jpg``): they are skipped with a warning naming them, or are an
    error with ``strict=True``. ``file_order`` is every line of the train, dev and test split
    files in that order (skipped images included): the row order a features ``.npy``
    without image ids must follow.
    """
    folder = Path(folder)
    token_file = folder / "Flickr8k.token.txt"
    captions: dict[str, list[list[str]]] = collections.defaultdict(list)
    raws: dict[str, list[str]] = collections.defaultdict(list)
    for line_no, line in enumerate(io.read_lines(token_file, "Flickr8k caption file"), 1):
        if not line.strip():
            continue
        key, sep, raw = line.partition("\t")
        if not sep or "#" not in key:
            raise ValueError(f"{token_file}, line {line_no}: expected '<image>.jpg#<n><TAB><caption>'")
        captions[key.split("#")[0]].append(tokenize(raw))
        raws[key.split("#")[0]].append(raw)
    splits, file_order = {}, []
    for split, file_name in FLICKR8K_SPLIT_FILES:
        split_file = folder / file_name
        ids = [line.strip() for line in io.read_lines(split_file, "Flickr8k split file") if line.strip()]
        file_order += ids
        missing = [i for i in ids if i not in captions]
        if missing:
            message = (f"{split_file}: {len(missing)} listed image(s) have no captions in {token_file.name}: "
                       f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
            if strict:
                raise ValueError(message)
            warnings.warn(message + " (skipped)", stacklevel=2)
            ids = [i for i in ids if i in captions]
        duplicated = [i for i, count in collections.Counter(ids).items() if count > 1]
        if duplicated:
            raise ValueError(f"{split_file}: image {duplicated[0]} is listed more than once")
        splits[split] = CaptionSplit(ids, [captions[i] for i in ids], raw=[raws[i] for i in ids])
        splits[split].check(f"{token_file} ({split} split)")
    return CaptionDataset("flickr8k", splits, file_order=file_order)
