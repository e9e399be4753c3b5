"""The vocabulary of the 2018 models: train tokens seen at least N times, an edge and an unknown token."""
from __future__ import annotations

import collections
import hashlib
import json

import numpy as np

from .. import io

EDGE = "<edge>"  # start and end of every caption
UNK = "<unk>"


class Vocabulary:
    """Token <-> id. Id 0 is the edge token, 1 the unknown token, then words by frequency."""

    def __init__(self, words: list[str]):
        self.tokens = [EDGE, UNK, *words]
        self.index = {token: i for i, token in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            repeated = next(t for i, t in enumerate(self.tokens) if self.index[t] != i)
            raise ValueError(f"vocabulary has repeated tokens ({repeated!r} at positions {self.tokens.index(repeated)} "
                             f"and {self.index[repeated]})")

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

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.index.get(t, 1) for t in tokens]

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
    def load(cls, path) -> Vocabulary:
        try:
            data = json.loads(io.read_text(path, "vocabulary file"))
            tokens = data["tokens"]
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a vocabulary file ({err})") from None
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError(f"{path}: 'tokens' must be a list of strings")
        if tokens[:2] != [EDGE, UNK]:
            raise ValueError(f"{path}: a vocabulary must start with {EDGE} and {UNK}")
        try:
            return cls(tokens[2:])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
