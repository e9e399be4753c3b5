"""The tokenizers ``evaluate`` offers, by name (``postgen.tokenizers``: ``ptb``, the default,
``alnum-lower`` and ``none``), and which of them fit the references read."""
from __future__ import annotations

from ..postgen.tokenizers import TOKENIZERS, tokenize_all, tokenizer_label

__all__ = ["TOKENIZERS", "check_tokenizer", "tokenize_all", "tokenizer_label"]


def check_tokenizer(name: str, already_tokenized: bool, source: str) -> None:
    """Refuse a tokenizer that does not fit the references (``source``: the references file)."""
    if name not in TOKENIZERS:
        raise ValueError(f"--tokenizer {name}: choose from {', '.join(TOKENIZERS)}")
    if already_tokenized and name == "ptb":
        raise ValueError(f"{source}: references written by export-references are already tokenized (lower-case "
                         "alphanumeric tokens: PTB's punctuation rules have nothing left to act on, and its "
                         "splits would not be COCO's); score them with the tokenizer the file records "
                         "(the default: alnum-lower, applied to the captions too) or --tokenizer none")
