"""Readers for real caption corpora: Karpathy-split JSON (parsed by ``captionfiles.read_karpathy``, the
one reader of that format) and the Flickr8k token/split files.

Both re-derive tokens with the package tokenizer, so every corpus shares one tokenisation (the
models' words), keep each reference's raw text too (what a search scoring with ``ptb`` reads), and
both fail with one line naming the file and the entry at fault.
"""
from __future__ import annotations

import collections
import warnings
from pathlib import Path

from .. import io
from ..captionfiles.karpathy import read_karpathy
from .corpus import CaptionDataset, CaptionSplit, tokenize

FLICKR8K_SPLIT_FILES = (("train", "Flickr_8k.trainImages.txt"), ("val", "Flickr_8k.devImages.txt"),
                        ("test", "Flickr_8k.testImages.txt"))


def read_karpathy_json(path, merge_restval: bool = True) -> CaptionDataset:
    """A ``dataset_flickr8k.json``-style file (read and checked by ``captionfiles.read_karpathy``):
    its splits, each image's references tokenised (its raw text kept), ``restval`` merged into
    ``train`` unless ``merge_restval`` is False, and ``cocoid`` an alias of each image's id.

    ``file_order`` lists every image in file order: the row order of Karpathy's feature files.
    """
    corpus = read_karpathy(path)
    splits: dict[str, CaptionSplit] = {}
    for image in corpus.images:
        split = "train" if image.split == "restval" and merge_restval else image.split
        target = splits.setdefault(split, CaptionSplit([], [], raw=[], aliases={}))
        target.image_ids.append(image.image_id)
        target.captions.append([tokenize(text) for text in image.texts])
        target.raw.append(image.texts)
        if image.cocoid is not None and str(image.cocoid) != image.image_id:
            target.aliases[str(image.cocoid)] = image.image_id  # results files of COCO's tools key images by cocoid
    for name, split in splits.items():
        split.check(f"{corpus.path} ({name} split)")
    return CaptionDataset(corpus.name, splits, file_order=[image.image_id for image in corpus.images])


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
