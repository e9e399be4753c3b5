"""Readers for real caption corpora: Karpathy-split JSON and the Flickr8k token/split files."""
from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path

from .corpus import CaptionDataset, CaptionSplit, tokenize


def read_karpathy_json(path, merge_restval: bool = True) -> CaptionDataset:
    """A ``dataset_flickr8k.json``-style file: ``{"dataset": ..., "images": [{"filename",
    "split", "sentences": [{"raw" or "tokens"}]}]}``. Tokens are re-derived from ``raw`` with
    the package tokenizer when present, so all corpora share one tokenisation."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        images = data["images"]
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable JSON file ({err})") from err
    except (KeyError, TypeError):
        raise ValueError(f"{path}: expected a Karpathy-split JSON object with an 'images' list") from None
    splits: dict[str, CaptionSplit] = {}
    file_order = []
    for n, image in enumerate(images):
        try:
            split = image["split"]
            image_id = image.get("filename") or str(image.get("imgid", n))
            refs = [tokenize(s["raw"]) if "raw" in s else [t.lower() for t in s["tokens"]] for s in image["sentences"]]
        except (KeyError, TypeError) as err:
            raise ValueError(f"{path}: image entry {n} lacks {err} (needs split, sentences)") from None
        if split == "restval" and merge_restval:
            split = "train"
        target = splits.setdefault(split, CaptionSplit([], []))
        target.image_ids.append(image_id)
        file_order.append(image_id)
        target.captions.append(refs)
    for name, split in splits.items():
        split.check(f"{path} ({name} split)")
    return CaptionDataset(str(data.get("dataset", path.stem)), splits, file_order=file_order)


def read_flickr8k(folder, strict: bool = False) -> CaptionDataset:
    """The Flickr8k distribution: ``Flickr8k.token.txt`` and ``Flickr_8k.{train,dev,test}Images.txt``.

    A split file may list images that have no captions (some copies of the test split end
    with ``1.jpg`` ... ``5.jpg``): they are skipped with a warning naming them, or are an
    error with ``strict=True``.
    """
    folder = Path(folder)
    token_file = folder / "Flickr8k.token.txt"
    if not token_file.is_file():
        raise ValueError(f"{token_file}: not found")
    captions: dict[str, list[list[str]]] = collections.defaultdict(list)
    for line_no, line in enumerate(token_file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        key, sep, raw = line.partition("\t")
        if not sep or "#" not in key:
            raise ValueError(f"{token_file}, line {line_no}: expected '<image>.jpg#<n><TAB><caption>'")
        captions[key.split("#")[0]].append(tokenize(raw))
    splits = {}
    for split, file_name in (("train", "Flickr_8k.trainImages.txt"), ("val", "Flickr_8k.devImages.txt"),
                             ("test", "Flickr_8k.testImages.txt")):
        split_file = folder / file_name
        if not split_file.is_file():
            raise ValueError(f"{split_file}: not found")
        ids = [line.strip() for line in split_file.read_text().splitlines() if line.strip()]
        missing = [i for i in ids if i not in captions]
        if missing:
            message = (f"{split_file}: {len(missing)} listed image(s) have no captions in {token_file.name}: "
                       f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
            if strict:
                raise ValueError(message)
            warnings.warn(message + " (skipped)", stacklevel=2)
            ids = [i for i in ids if i in captions]
        splits[split] = CaptionSplit(ids, [captions[i] for i in ids])
        splits[split].check(f"{token_file} ({split} split)")
    return CaptionDataset("flickr8k", splits)
