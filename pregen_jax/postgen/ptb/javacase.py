# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Java's ``String.toLowerCase(Locale.ENGLISH)`` of a token, which the jar's ``-lowerCase`` applies.

It equals Python's ``str.lower`` but for the capital sigma: Java writes the final form (U+03C2)
where, within the closest word boundaries around it, a cased letter comes before it and none
after it, its words being those of Java's (legacy) word break rules: letters and digits joined
by dashes, connector punctuation, the soft hyphen, U+2027, quotes and periods between letters (commas
and periods between digits), combining marks and format characters part of the char before
them, a run of kanji or kana a word of its own. An approximation of Java's break rules, checked
against the jar on strings made to mix them (tests/test_ptb_oracle.py). Python
looks only at the next letter, so "ΟΣ-A" is "οσ-a" in Java and "ος-a" in Python.
"""
from __future__ import annotations

import regex

SIGMA = "\u03a3"
# letters of words; kanji, katakana and hiragana runs are words of their own in Java's rules
_CJK = "\u3005\u4e00-\u9fa5\uf900-\ufa2d\u30a1-\u30fa\u30fd\u30fe\u3041-\u3094\u309d\u309e\u3099-\u309c\u30fb\u30fc"
_LETTER = regex.compile(rf"(?![{_CJK}])[\p{{L}}\p{{Mc}}]")
_DIGIT = regex.compile(r"\p{N}")
_IGNORED = regex.compile(r"(?!\u00ad)[\p{Mn}\p{Me}\p{Cf}]")  # the soft hyphen joins words instead
_FORMAT = regex.compile(r"(?!\u00ad)\p{Cf}")
# Java's "cased": upper, lower and title case letters and its own short list of Other_Lowercase and
# Other_Uppercase ranges (ConditionalSpecialCasing), not Unicode's whole Cased property
_CASED = regex.compile(r"[\p{Lu}\p{Ll}\p{Lt}\u02B0-\u02B8\u02C0\u02C1\u02E0-\u02E4\u0345\u037A\u1D2C-\u1D61"
                       r"\u2160-\u217F\u24B6-\u24E9]")
_MID_WORD = regex.compile(r"[\p{Pd}\p{Pc}\u00ad\u2027\"'.]")
_MID_NUMBER = regex.compile(r"[\"',\u066b.]")


def _base(token: str, at: int, step: int) -> int:
    """The first index from ``at`` in direction ``step`` that is not an ignored mark (-1 or len: none)."""
    while 0 <= at < len(token) and _IGNORED.match(token, at):
        at += step
    return at


def _word_char(token: str, at: int) -> bool:
    return 0 <= at < len(token) and bool(_LETTER.match(token, at) or _DIGIT.match(token, at))


def _joins(token: str, at: int) -> bool:
    """Whether token[at] (not a letter or digit) is inside the word: a mark on a letter or digit, or
    punctuation that joins the letter (digit) before it, marks skipped, to the one right after it."""
    if _IGNORED.match(token, at):
        return _word_char(token, _base(token, at, -1))
    before, after = _base(token, at - 1, -1), at + 1
    while after < len(token) and _FORMAT.match(token, after):  # format chars (not marks) are skipped after it
        after += 1
    if not (_word_char(token, before) and _word_char(token, after)):
        return False
    if _MID_WORD.match(token, at) and _LETTER.match(token, before) and _LETTER.match(token, after):
        return True
    return bool(_MID_NUMBER.match(token, at) and _DIGIT.match(token, before) and _DIGIT.match(token, after))


def _word(token: str, at: int) -> tuple[int, int]:
    """The span [start, end) of the word around token[at] (a letter)."""
    start, end = at, at + 1
    while start > 0 and (_word_char(token, start - 1) or _joins(token, start - 1)):
        start -= 1
    while end < len(token) and (_word_char(token, end) or _IGNORED.match(token, end) or _joins(token, end)):
        end += 1
    return start, end


def _final(token: str, at: int) -> bool:
    start, end = _word(token, at)
    return (any(_CASED.match(c) for c in token[start:at])
            and not any(_CASED.match(c) for c in token[at + 1:end]))


def lower(token: str) -> str:
    """``token`` lower-cased as Java lower-cases it (Locale.ENGLISH)."""
    if SIGMA not in token:
        return token.lower()
    parts = token.split(SIGMA)
    out, at = [parts[0].lower()], len(parts[0])
    for part in parts[1:]:
        out.append("\u03c2" if _final(token, at) else "\u03c3")
        out.append(part.lower())
        at += 1 + len(part)
    return "".join(out)
