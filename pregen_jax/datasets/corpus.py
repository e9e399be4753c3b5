"""The in-memory form of a caption corpus: splits of images with tokenised references."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import numpy as np

TOKENIZER_NAME = "alnum-lower"
"""The short name of the tokenizer used throughout, as outputs with scores record it."""
TOKENIZER = f"{TOKENIZER_NAME}: re.findall('[a-z0-9]+', caption.lower())"
"""The tokenizer used throughout (the 2018 study's): lower-case alphanumeric runs."""


def tokenize(caption: str) -> list[str]:
    """Lower-case alphanumeric tokens, the 2018 study's tokenisation."""
    return re.findall("[a-z0-9]+", caption.lower())


@dataclasses.dataclass
class CaptionSplit:
    """One split: images in order and their reference captions.

    Attributes:
      image_ids: str[N] image identifiers.
      captions: captions[n][r] is reference r of image n as a list of tokens.
      pixels: optional u8[N, H, W, 3] (the built-in dataset); features: optional f32[N, D].
      labels: optional u8[N, A] multi-hot attributes (the built-in dataset's encoder targets).
      raw: optional raw[n][r], reference r of image n as the corpus file writes it (what the ``ptb``
        tokenizer reads); None: the tokens are the text (the built-in dataset).
      aliases: another id of an image -> its id in ``image_ids`` (a Karpathy JSON's ``cocoid``), so
        that captions files keyed either way match; None: no other ids.
    """

    image_ids: list[str]
    captions: list[list[list[str]]]
    pixels: np.ndarray | None = None
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    raw: list[list[str]] | None = None
    aliases: dict[str, str] | None = None

    def raw_text(self) -> list[list[str]]:
        """raw[n][r]: each reference as the corpus writes it (its tokens joined where it kept no text)."""
        if self.raw is not None:
            return self.raw
        return [[" ".join(tokens) for tokens in refs] for refs in self.captions]

    def __len__(self) -> int:
        return len(self.image_ids)

    def check(self, source: str) -> None:
        """Raise ValueError naming ``source`` and the image for empty reference lists or captions."""
        if len(self.captions) != len(self.image_ids):
            raise ValueError(f"{source}: {len(self.image_ids)} images but {len(self.captions)} caption lists")
        for image_id, refs in zip(self.image_ids, self.captions):
            if not refs:
                raise ValueError(f"{source}: image {image_id} has no reference captions")
            for r, tokens in enumerate(refs):
                if not tokens:
                    raise ValueError(f"{source}: image {image_id}, caption {r} is empty after tokenisation")
        for name, arr in (("pixels", self.pixels), ("features", self.features)):
            if arr is not None and len(arr) != len(self.image_ids):
                raise ValueError(f"{source}: {len(self.image_ids)} images but {len(arr)} rows of {name}")

    def content_hash(self) -> str:
        """Hash of the image ids and captions (not pixels/features), for cache keys."""
        digest = hashlib.sha256(json.dumps([self.image_ids, self.captions]).encode())
        if self.features is not None:
            digest.update(np.ascontiguousarray(self.features).tobytes())
        return digest.hexdigest()[:16]


@dataclasses.dataclass
class CaptionDataset:
    """A named corpus with train/val/test splits and the tokenizer that produced its tokens."""

    name: str
    splits: dict[str, CaptionSplit]
    tokenizer: str = TOKENIZER
    file_order: list[str] | None = None  # every image id in the source file's order (feature rows follow it)

    def __getitem__(self, split: str) -> CaptionSplit:
        try:
            return self.splits[split]
        except KeyError:
            raise ValueError(f"dataset {self.name} has no split {split!r} (has {sorted(self.splits)})") from None
