# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""COCO's tokenizer: the Stanford PTB tokenizer as pycocoevalcap's ``PTBTokenizer`` runs it.

``tokenize_captions(captions) -> list[str]``: one string per caption, the jar's tokens lower-cased, the
tokens of pycocoevalcap's punctuation list removed, the rest joined by single spaces; its quirks
kept (the list holds ``-LRB-`` in upper case, so the lower-cased ``-lrb-`` survives; an em dash
becomes ``--`` and is removed).

Backends: ``"java"`` runs the Stanford CoreNLP 3.4.1 jar that pycocoevalcap ships
(``-preserveLines -lowerCase``, the input in a temporary file, Java through postgen/jvm.py);
``"python"`` is a Python port of the jar's lexer (lexer.py, scanner.py, rules.py, patterns.py:
translated from CoreNLP 3.4.1's ``PTBLexer.flex``, so under its GPL-2.0-or-later; charclasses.py,
javacase.py: Java's character classes and case, measured; docs/licensing.md), equal to the jar token for token on every test set
(tests/test_ptb_oracle.py, tests/test_ptb_unicode.py) and needing no Java; the default.

Where COCOEvalCap is wrong we differ on purpose: the jar ends a line at a carriage return, a
vertical tab, a form feed, U+2028 or U+2029 as well as at a newline, so in COCOEvalCap a caption
holding one becomes two output lines and every later caption lands on the wrong image. Here each
of these (and a newline, as COCOEvalCap does) is a space, with a warning.
"""
from __future__ import annotations

import warnings

from .punctuation import PUNCTUATIONS, drop_punctuation

BACKENDS = ("java", "python")
DEFAULT_BACKEND = "python"

# Characters the jar reads as the end of a line (its NEWLINE); "\n" COCOEvalCap itself turns into a space.
LINE_BREAKS = "\n\r\x0b\x0c\u2028\u2029"
_TO_SPACE = str.maketrans({c: " " for c in LINE_BREAKS})


def one_line(captions: list[str]) -> list[str]:
    """``captions`` with every line break the jar knows turned into a space, warning when one other
    than a newline was there (COCOEvalCap would have split that caption and shifted later ones)."""
    joined = "".join(captions)
    if not any(c in joined for c in LINE_BREAKS):  # the usual case: a few scans of all captions (memchr-fast)
        return captions
    out = [caption.translate(_TO_SPACE) for caption in captions]
    split = [k for k, caption in enumerate(captions) if any(c in caption for c in LINE_BREAKS[1:])]
    if split:
        warnings.warn(f"PTB tokenizer: {len(split)} caption(s) hold a carriage return, vertical tab, form feed, "
                      f"U+2028 or U+2029 (first: caption {split[0]}); tokenized as spaces (COCOEvalCap would split "
                      "the line and shift every later caption onto the wrong image)", stacklevel=3)
    return out


def tokenize_captions(captions: list[str], backend: str = DEFAULT_BACKEND) -> list[str]:
    """PTB-tokenized ``captions`` (str[n] -> str[n]), exactly as pycocoevalcap's ``PTBTokenizer``
    gives each one, line breaks inside a caption aside (see the module docstring)."""
    if backend not in BACKENDS:
        raise ValueError(f"PTB tokenizer: unknown backend {backend!r} (one of {', '.join(BACKENDS)})")
    if not captions:
        return []
    lines = one_line(list(captions))
    if backend == "python":
        from . import lexer  # compiles its patterns on first import (about 0.2 s)
        return lexer.lex_captions(lines)
    from . import jar
    return [drop_punctuation(line) for line in jar.run_jar(lines)]


def description(backend: str = DEFAULT_BACKEND) -> str:
    """One line saying what ``backend`` runs (``pregen-search doctor``, and outputs that name the tokenizer)."""
    if backend == "python":
        return ("python: pregen-jax's own lexer, no Java (equal to pycocoevalcap's Stanford CoreNLP 3.4.1 jar "
                "token for token on Flickr8k, MUTT, where-image2 and every BMP char; backend='java' runs the jar)")
    from . import jar
    return f"java: pycocoevalcap's Stanford CoreNLP 3.4.1 jar ({jar.corenlp_jar()}) through postgen/jvm.py"


__all__ = ["BACKENDS", "DEFAULT_BACKEND", "LINE_BREAKS", "PUNCTUATIONS", "description", "drop_punctuation", "one_line",
           "tokenize_captions"]
