"""The tokenizers ``evaluate`` offers, by name, each str[n] -> str[n] (tokens joined by single spaces).

- ``ptb``: COCO's protocol, pycocoevalcap's ``PTBTokenizer`` (the Stanford jar, lower-cased, its
  punctuation list removed; ``postgen.ptb``). The default.
- ``alnum-lower``: the package tokenizer (lower-case alphanumeric runs; the 2018 study's), what
  ``postgen.score`` applies.
- ``none``: the strings as given (already tokenized: split on whitespace by every metric).
"""
from __future__ import annotations

TOKENIZERS = ("ptb", "alnum-lower", "none")


def check_tokenizer(name: str, already_tokenized: bool, source: str) -> None:
    """Refuse a tokenizer that does not fit the references (``source``: the references file)."""
    if name not in TOKENIZERS:
        raise ValueError(f"--tokenizer {name}: choose from {', '.join(TOKENIZERS)}")
    if already_tokenized and name == "ptb":
        raise ValueError(f"{source}: references written by export-references are already tokenized (lower-case "
                         "alphanumeric tokens: PTB's punctuation rules have nothing left to act on, and its "
                         "splits would not be COCO's); score them with the tokenizer the file records "
                         "(the default: alnum-lower, applied to the captions too) or --tokenizer none")


def tokenize_all(strings: list[str], name: str) -> list[str]:
    """``strings`` tokenized by ``name`` (one PTB jar run for all of them)."""
    if name == "ptb":
        from ..postgen.ptb import tokenize_captions
        return tokenize_captions(strings)
    if name == "alnum-lower":
        from ..datasets import tokenize
        return [" ".join(tokenize(s)) for s in strings]
    return list(strings)


def tokenizer_label(name: str) -> str:
    """The tokenizer as outputs name it (with the PTB backend)."""
    if name == "ptb":
        from ..postgen.ptb import DEFAULT_BACKEND
        return f"ptb (pycocoevalcap's PTBTokenizer, punctuation removed; {DEFAULT_BACKEND} backend)"
    if name == "alnum-lower":
        return "alnum-lower (lower-case alphanumeric runs, the package tokenizer)"
    return "none (strings as given)"
