"""Subword vocabularies: a BPE trained with the ``tokenizers`` library on the training captions.

Text is lower-cased and split into the package's alnum-lower words (``corpus.tokenize``: runs
of ``[a-z0-9]``; everything else separates words and is dropped) before BPE sees it, so a piece
never crosses a word boundary: every piece belongs to exactly one reference word, which is
what the pre-gen metrics' word level needs (``pregen_jax.pieces``). A piece that continues a
word carries the prefix ``##`` (``ball`` -> ``b``, ``##all``), so generated ids decode to words
without the tokenizer's text decoder, and the post-gen metrics see the same alnum-lower words
as with a word vocabulary.

The library does not promise byte-equal training runs, so a search trains once per run folder,
saves ``tokenizer.json``, and everything downstream is keyed on that file's content
(``fingerprint``, the sha256 of the saved text). Ids 0 and 1 are the edge and unknown tokens,
as in the word vocabulary.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .. import io
from .vocab import EDGE, UNK, CaptionVocabulary, Vocabulary

CONTINUES = "##"  # prefix of a piece that continues a word


def _new_tokenizer():
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    tokenizer = Tokenizer(models.BPE(unk_token=UNK, continuing_subword_prefix=CONTINUES))
    tokenizer.normalizer = normalizers.Lowercase()
    # The package's alnum-lower rule: separators are runs of anything but [a-z0-9], dropped.
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("[^a-z0-9]+"), behavior="removed")
    return tokenizer


def train_bpe(captions, vocab_size: int) -> BpeVocabulary:
    """A BPE of at most ``vocab_size`` entries (fewer when the captions have no more merges; more
    only if their characters alone exceed it) from ``captions[n][r]`` word lists."""
    from tokenizers import trainers
    tokenizer = _new_tokenizer()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EDGE, UNK],
                                  continuing_subword_prefix=CONTINUES, show_progress=False)
    tokenizer.train_from_iterator((" ".join(ref) for refs in captions for ref in refs), trainer)
    return BpeVocabulary.from_json(tokenizer.to_str(), "trained BPE")


def run_bpe(captions, vocab_size: int, path) -> BpeVocabulary:
    """The run's BPE: read from ``path`` if a search trained it before, else trained and saved there.

    Read back from the file either way, so that the vocabulary is the saved file's content. The
    caller names ``path`` after what the training depends on (the captions, ``vocab_size``).
    """
    path = Path(path)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        train_bpe(captions, vocab_size).save(path)
    return BpeVocabulary.load(path)


class BpeVocabulary:
    """A trained ``tokenizers`` BPE as a caption vocabulary (see the module docstring)."""

    kind = "bpe"

    def __init__(self, tokenizer, text: str):
        self.tokenizer = tokenizer
        self.text = text  # the saved JSON, whose hash is the fingerprint
        vocab = tokenizer.get_vocab()
        self.tokens = [""] * len(vocab)
        for token, i in vocab.items():
            self.tokens[i] = token
        self.continues = np.array([t.startswith(CONTINUES) for t in self.tokens])
        self._word_pieces: dict[str, tuple[int, ...]] = {}  # word -> its piece ids, each word encoded once

    @classmethod
    def from_json(cls, text: str, where: str = "tokenizer") -> BpeVocabulary:
        from tokenizers import Tokenizer
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as err:  # the library raises its own exception types
            raise ValueError(f"{where}: not a tokenizers JSON file ({err})") from None
        if tokenizer.token_to_id(EDGE) != 0 or tokenizer.token_to_id(UNK) != 1:
            raise ValueError(f"{where}: a caption vocabulary needs {EDGE} as id 0 and {UNK} as id 1")
        return cls(tokenizer, text)

    @classmethod
    def load(cls, path) -> BpeVocabulary:
        return cls.from_json(io.read_text(path, "tokenizer file"), str(path))

    def save(self, path) -> None:
        io.write_text(self.text, path)

    def __len__(self) -> int:
        return len(self.tokens)

    def __getstate__(self):  # pickled as its JSON (post-gen worker processes get a copy)
        return {"text": self.text}

    def __setstate__(self, state):
        other = BpeVocabulary.from_json(state["text"])
        self.__dict__.update(other.__dict__)

    @property
    def name(self) -> str:
        return f"bpe-{len(self)}"

    @property
    def unk_id(self) -> int:
        return 1

    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def _pieces_of(self, words: list[str]) -> list[tuple[int, ...]]:
        """Each word's piece ids. Words are pre-tokenized, so BPE encodes each one alone (no piece crosses a
        word, and the normalizer sees one word at a time): encoding a caption is encoding its words, and each
        distinct word is encoded once per process (25,000 references: 0.1 s, against 5 s a caption at a time)."""
        memo, out = self._word_pieces, []
        for word in words:
            pieces = memo.get(word)
            if pieces is None:
                pieces = memo[word] = tuple(self.tokenizer.encode([word], is_pretokenized=True,
                                                                  add_special_tokens=False).ids)
            out.append(pieces)
        return out

    def encode(self, words: list[str]) -> list[int]:
        """A reference's words -> piece ids (each word's pieces in order)."""
        return [i for pieces in self._pieces_of(words) for i in pieces]

    def word_starts(self, words: list[str]) -> list[bool]:
        """Per piece of ``encode(words)``: True where a word begins."""
        return [k == 0 for pieces in self._pieces_of(words) for k in range(len(pieces))]

    def pieces(self, text: str) -> list[str]:
        """A caption's pieces as strings (the alnum-lower rule applied first)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).tokens)

    def unknown_words(self, words: list[str]) -> int:
        """Words read wholly or partly as the unknown token."""
        return sum(self.unk_id in pieces for pieces in self._pieces_of(words))

    def decode(self, ids) -> list[str]:
        """Piece ids up to (not including) the first edge token -> words: a ``##`` piece continues
        the word before it (a caption that starts with one starts a word with it)."""
        words: list[str] = []
        for i in np.asarray(ids).tolist():
            if i == 0:
                break
            token = self.tokens[i]
            if self.continues[i] and words and words[-1] != UNK:
                words[-1] += token[len(CONTINUES):]
            else:
                words.append(token[len(CONTINUES):] if self.continues[i] else token)
        return words


def load_vocabulary(path) -> CaptionVocabulary:
    """A vocabulary file: a word vocabulary's ``vocabulary.json``, or a ``tokenizer.json`` of the
    ``tokenizers`` library (a BPE trained by ``tokenizer.train_bpe``)."""
    text = io.read_text(path, "vocabulary file")
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{path}: not a vocabulary file ({err})") from None
    if isinstance(data, dict) and "model" in data and "tokens" not in data:
        return BpeVocabulary.from_json(text, str(path))
    return Vocabulary._load_words(path, data)
