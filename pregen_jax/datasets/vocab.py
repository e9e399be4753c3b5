"""Vocabularies: what a caption model reads and writes, and the word vocabulary of the 2018 models.

Every vocabulary (``CaptionVocabulary``: the word ``Vocabulary`` here, ``tokenizer.BpeVocabulary``
for subword pieces) maps a reference's words (alnum-lower tokens) to token ids, marks which
ids begin a word, decodes generated ids back to words, and names and fingerprints itself.
Id 0 is the edge token (start and end of every caption), id 1 the unknown token, in both.
"""
from __future__ import annotations

import collections
import hashlib
import json
from typing import Protocol

import numpy as np

from .. import io

EDGE = "<edge>"  # start and end of every caption
UNK = "<unk>"


class CaptionVocabulary(Protocol):
    """What a caption model, its training and the search need from a vocabulary."""

    kind: str  # "word" or "bpe"

    def __len__(self) -> int: ...                             # V, the model's output size

    @property
    def name(self) -> str: ...                                # e.g. "word-72", "bpe-1000" (actual size)

    @property
    def unk_id(self) -> int: ...

    def encode(self, words: list[str]) -> list[int]: ...      # a reference's words -> token ids

    def word_starts(self, words: list[str]) -> list[bool]: ...  # per token id of encode(): begins a word?

    def unknown_words(self, words: list[str]) -> int: ...     # words read (partly) as the unknown token

    def decode(self, ids) -> list[str]: ...                   # ids up to the first edge token -> words

    def fingerprint(self) -> str: ...

    def save(self, path) -> None: ...


class Vocabulary:
    """Token <-> id. Id 0 is the edge token, 1 the unknown token, then words by frequency."""

    kind = "word"

    def __init__(self, words: list[str]):
        self.tokens = [EDGE, UNK, *words]
        self.index = {token: i for i, token in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("vocabulary has repeated tokens")

    @classmethod
    def build(cls, captions, min_count: int = 5) -> Vocabulary:
        """From ``captions[n][r]`` token lists: words seen at least ``min_count`` times."""
        counts = collections.Counter(t for refs in captions for ref in refs for t in ref)
        words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls(words)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def unk_id(self) -> int:
        return 1

    @property
    def name(self) -> str:
        return f"word-{len(self)}"

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.index.get(t, 1) for t in tokens]

    def word_starts(self, tokens: list[str]) -> list[bool]:
        return [True] * len(tokens)

    def unknown_words(self, tokens: list[str]) -> int:
        return sum(1 for t in tokens if t not in self.index)

    def decode(self, ids) -> list[str]:
        """Ids up to (not including) the first edge token."""
        out = []
        for i in np.asarray(ids).tolist():
            if i == 0:
                break
            out.append(self.tokens[i])
        return out

    def fingerprint(self) -> str:
        return hashlib.sha256("\n".join(self.tokens).encode()).hexdigest()[:16]

    def save(self, path) -> None:
        io.write_text(json.dumps({"tokens": self.tokens, "fingerprint": self.fingerprint()}), path)

    @classmethod
    def load(cls, path) -> CaptionVocabulary:
        """A saved vocabulary: a word vocabulary, or a subword tokenizer's file (see ``load_vocabulary``)."""
        return load_vocabulary(path)

    @classmethod
    def _load_words(cls, path, data) -> Vocabulary:
        try:
            tokens = data["tokens"]
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a vocabulary file ({err})") from None
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError(f"{path}: 'tokens' must be a list of strings")
        if tokens[:2] != [EDGE, UNK]:
            raise ValueError(f"{path}: a vocabulary must start with {EDGE} and {UNK}")
        return cls(tokens[2:])


def load_vocabulary(path) -> CaptionVocabulary:
    """A vocabulary file: a word vocabulary's ``vocabulary.json``, or a ``tokenizer.json`` of the
    ``tokenizers`` library (a BPE trained by ``tokenizer.train_bpe``)."""
    text = io.read_text(path, "vocabulary file")
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{path}: not a vocabulary file ({err})") from None
    if isinstance(data, dict) and "model" in data and "tokens" not in data:
        from .tokenizer import BpeVocabulary
        return BpeVocabulary.from_json(text, str(path))
    return Vocabulary._load_words(path, data)
