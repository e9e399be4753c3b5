# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR 1.5's ``-norm`` text: its tokenizer and punctuation normalizer for English (punctuation
kept), then lower-casing, as the jar's scorer applies them to each line.

Translated pattern by pattern from Meteor 1.5's Java ``Normalizer`` (edu.cmu.meteor.util, by
Michael Denkowski and Alon Lavie, Carnegie Mellon University, itself based on the Moses
tokenizer), so this file is under its licence, LGPL-2.1-only (docs/licensing.md), and checked
against the jar's output. Java's semantics are kept where Python's differ:
``\\s`` and ``\\p{Digit}``/``\\p{Lower}`` are ASCII only, ``StringTokenizer`` splits on
`` \\t\\n\\r\\f`` only, ``trim`` drops every character up to U+0020, and the letters the
normalizer treats as word characters are its own list of ranges (Latin-1, Latin Extended-A
parts, Cyrillic, phonetic extensions), not Unicode's.
"""
from __future__ import annotations

import functools
import re
import sys

from .resources import NBP_ANY, NBP_NUMERIC_ONLY, nonbreaking_prefixes

ALPHA = "A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e" \
        "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f"
ALNUM = "0-9" + ALPHA
JAVA_SPACE = " \t\n\x0b\f\r"          # Java's \s
TOKEN_DELIMITERS = re.compile("[ \t\n\r\f]+")  # java.util.StringTokenizer's default
TRIMMED = "".join(map(chr, range(0x21)))  # String.trim
UNICODE_SPACES = re.compile("[  \u2000-\u200a\u202f\u205f\u3000\u00a0]+")

SEPARATE_OTHER = re.compile(f"([^{ALNUM}{JAVA_SPACE}.'`,\\-\u2018\u2019])")
MULTI_DOT = re.compile(r"\.([.]+)")
MULTI_DOT_NEXT = re.compile(r"DOTMULTI\.([^.])")
COMMAS = (re.compile("([^0-9])[,]([^0-9])"), re.compile("([0-9])[,]([^0-9])"), re.compile("([^0-9])[,]([0-9])"))
SINGLE_QUOTES = re.compile("([`\u2018\u2019])")
DOUBLE_QUOTES = re.compile("([\u201c\u201d]|'')")
INNER_DASH = re.compile(f"([{ALNUM}.])[-]([{ALNUM}])")
CONTRACTIONS = ((re.compile(f"([^{ALPHA}])[']([^{ALPHA}])"), r"\1 ' \2"),
                (re.compile(f"([^{ALPHA}0-9])[']([{ALPHA}])"), r"\1 ' \2"),
                (re.compile(f"([{ALPHA}])[']([^{ALPHA}])"), r"\1 ' \2"),
                (re.compile(f"([{ALPHA}])[']([{ALPHA}])"), r"\1 '\2"),
                (re.compile("([0-9])[']([s])"), r"\1 '\2"))
HAS_ALPHA = re.compile(f"[{ALPHA}]")
STARTS_LOWER = re.compile("[a-z]")
STARTS_NUMBER = re.compile("[0-9]+")
# Lines of ASCII letters, digits and spaces only (what PTB tokens without punctuation are): no rule
# above changes them, so their normalized text is their tokens joined by one space.
PLAIN = re.compile("[A-Za-z0-9 ]*")


def java_tokens(text: str) -> list[str]:
    """``StringTokenizer``'s tokens of ``text``."""
    return [t for t in TOKEN_DELIMITERS.split(text) if t]


def java_trim(text: str) -> str:
    return text.strip(TRIMMED)


def normalize_text(line: str) -> str:
    """The jar's English normalization of one line, punctuation kept, before lower-casing."""
    text = SEPARATE_OTHER.sub(r" \1 ", f" {line} ")
    text = MULTI_DOT.sub(r" DOTMULTI\1", text)
    while "DOTMULTI." in text:
        text = MULTI_DOT_NEXT.sub(r"DOTDOTMULTI \1", text).replace("DOTMULTI.", "DOTDOTMULTI")
    for pattern in COMMAS:
        text = pattern.sub(r"\1 , \2", text)
    text = DOUBLE_QUOTES.sub(' " ', SINGLE_QUOTES.sub("'", text))
    text = text.replace("\u2013", "-").replace("--", "-")
    text = INNER_DASH.sub(r"\1 \2", text)
    for pattern, replacement in CONTRACTIONS:
        text = pattern.sub(replacement, text)
    text = _split_dots(java_tokens(text))
    while "DOTDOTMULTI" in text:
        text = text.replace("DOTDOTMULTI", "DOTMULTI.")
    text = text.replace("DOTMULTI", ".")
    return java_trim(UNICODE_SPACES.sub(" ", text))


def _split_dots(words: list[str]) -> str:
    """Words rejoined, a final dot split off unless the word is a known or lower-case-followed
    abbreviation (or a dotted acronym, whose dots go: U.S. -> US)."""
    prefixes = nonbreaking_prefixes()
    out = []
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else None
        if _java_length(word) > 1 and word.endswith("."):
            prefix = word[:-1]
            kind = prefixes.get(prefix)
            if "." in prefix and HAS_ALPHA.search(prefix):
                out.append(word.replace(".", ""))
            elif kind == NBP_ANY or (following is not None and STARTS_LOWER.match(following)):
                out.append(word)
            elif kind == NBP_NUMERIC_ONLY and following is not None and STARTS_NUMBER.match(following):
                out.append(word)
            else:
                out.append(prefix + " .")
        else:
            out.append(word)
        out.append(" ")
    return "".join(out)


def _java_length(word: str) -> int:
    """``String.length``: UTF-16 code units."""
    return len(word) + sum(1 for c in word if ord(c) > 0xFFFF)


@functools.lru_cache(maxsize=1 << 16)
def normalize(line: str) -> tuple[str, ...]:
    """The scorer's tokens of one line: normalized, lower-cased (Java's ``toLowerCase`` in an
    English locale), split as ``Alignment`` splits it. Words are interned: a corpus's sentences
    share one string per distinct word (at COCO's size 2.7 M words, 158 MB as separate strings)."""
    if is_plain(line):  # normalize_text's result, at a fraction of its cost
        return plain_tokens(line)
    return tuple(map(sys.intern, java_tokens(java_lower(normalize_text(line)))))


def is_plain(line: str) -> bool:
    """No normalization rule changes the line: ``normalize`` gives ``plain_tokens``."""
    return PLAIN.fullmatch(line) is not None and "DOTMULTI" not in line


def plain_tokens(line: str) -> tuple[str, ...]:
    """``normalize`` of a line that ``is_plain``: its words, lower-cased and interned."""
    return tuple(map(sys.intern, line.lower().split()))


def java_lower(text: str) -> str:
    """``String.toLowerCase()`` in an English locale: Python's ``str.lower`` (full case mapping,
    İ -> i̇, final sigma in context) agrees on the texts tested."""
    return text.lower()
