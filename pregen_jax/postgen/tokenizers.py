"""The tokenizers strings are scored after, by name, each str[n] -> str[n] (tokens joined by single spaces).

- ``ptb``: COCO's protocol, pycocoevalcap's ``PTBTokenizer`` (the Stanford jar's tokens, lower-cased,
  its punctuation list removed; ``postgen.ptb``, a Python port by default). What ``pregen-search
  evaluate`` and ``postgen.score`` apply by default, and what papers report.
- ``alnum-lower``: the package tokenizer (lower-case alphanumeric runs; the 2018 study's), which
  leaves already tokenized strings as they are; ``postgen.score``'s default before 0.2.0.
- ``none``: the strings as given (already tokenized: split on whitespace by every metric).
"""
from __future__ import annotations

TOKENIZERS = ("ptb", "alnum-lower", "none")
DEFAULT_TOKENIZER = "ptb"


def check_tokenizer_name(name: str, option: str = "tokenizer") -> str:
    """``name`` if it is one of ``TOKENIZERS``, else one ``ValueError`` naming ``option``."""
    if name not in TOKENIZERS:
        raise ValueError(f"{option} {name!r}: choose from {', '.join(TOKENIZERS)}")
    return name


def tokenize_all(strings: list[str], name: str) -> list[str]:
    """``strings`` tokenized by ``name`` (one PTB run for all of them)."""
    if name == "ptb":
        from .ptb import tokenize_captions
        return tokenize_captions(strings)
    if name == "alnum-lower":
        from ..datasets import tokenize
        return [" ".join(tokenize(s)) for s in strings]
    return list(strings)


def tokenizer_label(name: str) -> str:
    """The tokenizer as outputs name it (with the PTB backend)."""
    if name == "ptb":
        from .ptb import DEFAULT_BACKEND
        return f"ptb (pycocoevalcap's PTBTokenizer, punctuation removed; {DEFAULT_BACKEND} backend)"
    if name == "alnum-lower":
        return "alnum-lower (lower-case alphanumeric runs, the package tokenizer)"
    return "none (strings as given)"
