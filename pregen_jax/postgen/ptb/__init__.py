"""COCO's tokenizer: the Stanford PTB tokenizer as pycocoevalcap's ``PTBTokenizer`` runs it.

``tokenize(captions) -> list[str]``: one string per caption, the jar's tokens lower-cased, the
tokens of pycocoevalcap's punctuation list removed, the rest joined by single spaces; its quirks
kept (the list holds ``-LRB-`` in upper case, so the lower-cased ``-lrb-`` survives; an em dash
becomes ``--`` and is removed).

Backends: ``"java"`` runs the Stanford CoreNLP 3.4.1 jar that pycocoevalcap ships
(``-preserveLines -lowerCase``, the input in a temporary file); ``"python"`` is this package's own
lexer, equal to the jar on every test set.

Where COCOEvalCap is wrong we differ on purpose: the jar ends a line at a carriage return, a
vertical tab, a form feed, U+2028 or U+2029 as well as at a newline, so in COCOEvalCap a caption
holding one becomes two output lines and every later caption lands on the wrong image. Here each
of these (and a newline, as COCOEvalCap does) is a space, with a warning.
"""
from __future__ import annotations

import warnings

from . import jar

BACKENDS = ("java",)
DEFAULT_BACKEND = "java"

# pycocoevalcap's list (tokenizer/ptbtokenizer.py), in its order; compared only after lower-casing,
# so "-LRB-" and the other bracket names never match a lower-cased token.
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])

# Characters the jar reads as the end of a line (its NEWLINE); "\n" COCOEvalCap itself turns into a space.
LINE_BREAKS = "\n\r\x0b\x0c\u2028\u2029"
_TO_SPACE = str.maketrans({c: " " for c in LINE_BREAKS})


def one_line(captions: list[str]) -> list[str]:
    """``captions`` with every line break the jar knows turned into a space, warning when one other
    than a newline was there (COCOEvalCap would have split that caption and shifted later ones)."""
    out = [caption.translate(_TO_SPACE) for caption in captions]
    split = [k for k, caption in enumerate(captions) if any(c in caption for c in LINE_BREAKS[1:])]
    if split:
        warnings.warn(f"PTB tokenizer: {len(split)} caption(s) hold a carriage return, vertical tab, form feed, "
                      f"U+2028 or U+2029 (first: caption {split[0]}); tokenized as spaces (COCOEvalCap would split "
                      "the line and shift every later caption onto the wrong image)", stacklevel=3)
    return out


def drop_punctuation(line: str) -> str:
    """One jar output line after pycocoevalcap's clean-up: split on single spaces, listed tokens removed."""
    return " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS)


def tokenize(captions: list[str], backend: str = DEFAULT_BACKEND) -> list[str]:
    """PTB-tokenized ``captions`` (str[n] -> str[n]), exactly as pycocoevalcap's ``PTBTokenizer``
    gives each one, line breaks inside a caption aside (see the module docstring)."""
    if backend not in BACKENDS:
        raise ValueError(f"PTB tokenizer: unknown backend {backend!r} (one of {', '.join(BACKENDS)})")
    if not captions:
        return []
    lines = jar.tokenize_lines(one_line(list(captions)))
    return [drop_punctuation(line) for line in lines]


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "LINE_BREAKS", "PUNCTUATIONS", "drop_punctuation", "one_line", "tokenize"]
