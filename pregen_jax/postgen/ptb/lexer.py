# SPDX-FileCopyrightText: 2002-2009 The Board of Trustees of The Leland Stanford Junior University
#   (Stanford CoreNLP 3.4.1, PTBLexer.flex: Tim Grow, Christopher Manning, Jenny Finkel, Stanford NLP Group)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: GPL-2.0-or-later
"""The PTB tokenizer in Python: lines of captions through the scanner (scanner.py), with shortcuts.

Lines are one text joined by newlines, as the jar reads its input file, so a lookahead at the end
of one caption sees the next, as in COCOEvalCap; a tag whose quoted attribute holds a newline
(the only token that can) is written newline and all, as the jar writes it.

Most of a caption takes a shortcut that gives what the rules give: a run of ASCII letters and
digits that starts with a letter and ends at a space or the line's end is one word token
(unless it is one of the split forms: cannot, gonna, ...); a lone "." before a space that does
not start a spaced ellipsis is a period; a line of only such words and a final " ." is its
words. A word of ASCII letters and punctuation with no period, digit or "<" cannot reach more
than two characters past its end, so its tokens are remembered per (word, next two characters).

The shortcuts and the driver are this package's own; the words they must leave to the rules
(the split forms cannot, gonna, ...) are taken from CoreNLP 3.4.1's ``PTBLexer.flex``, so this file is
under that file's licence, GPL-2.0-or-later (Stanford NLP Group; docs/licensing.md).
"""
from __future__ import annotations

import bisect
import itertools
import re

from .javacase import lower
from .punctuation import drop_punctuation
from .scanner import shadow, step

CONTEXT = 256  # characters of the following lines that the scanner sees past a line's end
# A line of such words, single spaces between, a period at its end or not, is its words (each lexes as itself)
_PLAIN_LINE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*(?: \.)?")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SPACES = re.compile("[ \t\u00a0\u2000-\u200a\u3000]+")
# A run of simple words (each one ASCII letter then letters and digits) between single spaces, the last
# ending at a space or the line's end: each word is one token (unless it is a split form)
_RUN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*(?=[ \n]|\Z)")
_SPLIT_FORMS = frozenset(["cannot", "gonna", "gotta", "lemme", "gimme", "wanna"])
_REMEMBERED = re.compile(r"""[A-Za-z'`\-,;:!?"()\[\]{}/&#@$%*+=~^|\\_>]+""")
_MEMO_LIMIT = 200_000
_memo: dict[tuple[str, str], list[str]] = {}


def _remembered(text: str, shade: str, start: int, end: int, view: int) -> list[str] | None:
    """The tokens of the word text[start:end], lower-cased (looked up or lexed); None if it may depend on
    more context."""
    key = (text[start:end], text[end:end + 2])
    tokens = _memo.get(key)
    if tokens is None:
        tokens, pos = [], start
        while pos < end:
            token, pos = step(text, shade, pos, view)
            if token is not None:
                tokens.append(_lower(token))
        if pos != end:
            return None
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        _memo[key] = tokens
    return tokens


def lex(text: str, shade: str, start: int, stop: int, view: int, careful: bool = True) -> tuple[list[str], int]:
    """The tokens of text[start:stop], lower-cased (one line of ``text``, the scanner seeing up to ``view``;
    ``shade`` is ``shadow(text)``) and where the scanner stopped (>= stop). ``careful``: the line may
    hold a split form (cannot, gonna, ...), so runs of simple words are checked for one."""
    tokens: list[str] = []
    pos = start
    while pos < stop:
        char = text[pos]
        if char == " ":  # only SPACES starts with a space: the whole run of spaces is skipped
            pos = _SPACES.match(text, pos).end()
            continue
        run = _RUN.match(text, pos, view)
        if run is not None:
            words = run.group().lower().split(" ")
            if careful:  # up to the first split form, which the rules split
                words = list(itertools.takewhile(lambda word: word not in _SPLIT_FORMS, words))
            if words:
                tokens.extend(words)
                pos += len(words) - 1 + sum(map(len, words))
                continue
        if char == "." and (pos + 1 >= view or text[pos + 1] == "\n"
                            or (text[pos + 1] == " " and text[pos + 2:pos + 3] != ".")):
            tokens.append(".")
            pos += 1
            continue
        end = text.find(" ", pos, stop)
        end = stop if end < 0 else end
        if _REMEMBERED.fullmatch(text, pos, end):
            remembered = _remembered(text, shade, pos, end, view)
            if remembered is not None:
                tokens.extend(remembered)
                pos = end
                continue
        token, pos = step(text, shade, pos, view)
        if token is not None:
            tokens.append(_lower(token))
    return tokens, pos


def _utf16(text: str) -> str:
    """``text`` with each character beyond U+FFFF as its two surrogates (the jar lexes UTF-16 code units)."""
    if text.isascii() or max(text) <= "\uffff":
        return text
    return "".join(c if c <= "\uffff" else chr(0xD800 + ((ord(c) - 0x10000) >> 10)) + chr(0xDC00 + ((ord(c) - 0x10000) & 0x3FF))
                   for c in text)


def _lower(token: str) -> str:
    """Java's ``toLowerCase(Locale.ENGLISH)`` of a token (surrogate pairs joined back first)."""
    if not token.isascii() and any("\ud800" <= c <= "\udfff" for c in token):
        token = token.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return lower(token)


def _context_end(starts: list[int], stop: int) -> int:
    """Where the scanner's view of a line ending at ``stop`` ends: the first line end at least CONTEXT
    characters past it, or the text's end (``starts``: where each line starts, then the text's length
    + 1). A match never reaches further in practice (a lookahead looks at most at the next line's
    first word or tag), and bounding it keeps patterns with a required character (EMAIL's "@",
    THING3's "/") from scanning the rest of the text."""
    at = bisect.bisect_left(starts, stop + CONTEXT + 1)
    return starts[min(at, len(starts) - 1)] - 1


def _split_form_lines(text: str, starts: list[int]) -> set[int]:
    """The lines of ``text`` (starting at ``starts``) that hold a split form (cannot, gonna, ...) in any
    case, inside a word or not: they skip the plain-line shortcut (a few too many does no harm)."""
    low = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)  # str.find is far faster than a regex
    found = set()
    for form in _SPLIT_FORMS:
        at = low.find(form)
        while at >= 0:
            found.add(bisect.bisect_right(starts, at) - 1)
            at = low.find(form, at + 1)
    return found


def _lines(lines: list[str], clean: bool) -> list[str]:
    text = "\n".join(lines)
    units = lines if text.isascii() else [_utf16(line) for line in lines]  # one check for ASCII captions
    text = text if units is lines else "\n".join(units)
    shade = shadow(text)
    starts = [0, *itertools.accumulate(len(line) + 1 for line in units)]
    split = _split_form_lines(text, starts)
    rough = [k for k, line in enumerate(units) if k in split or not _PLAIN_LINE.fullmatch(line)]  # to lex
    out: list[str] = []
    stream: list[str] = []  # tokens of a line whose last token runs on into the next line(s), and theirs
    pos, k = 0, 0
    while k < len(units):
        start, stop = starts[k], starts[k] + len(units[k])
        if pos <= start and not stream:  # plain lines up to the next rough one: their words
            at = bisect.bisect_left(rough, k)
            plain = units[k:rough[at] if at < len(rough) else len(units)]
            if plain:
                out.extend([(line[:-2] if line.endswith(" .") else line).lower() for line in plain] if clean
                           else [line.lower() for line in plain])
                k += len(plain)
                continue
        tokens, pos = lex(text, shade, max(pos, start), stop, _context_end(starts, stop), k in split)
        stream.extend(tokens)
        k += 1
        if pos > stop:  # a tag with a newline inside its quotes: the jar writes it as it is, newline and all
            continue
        # the jar's output lines: tokens joined by spaces, a newline where a line ends (or inside a token)
        written = " ".join(stream).split("\n")
        out.extend([drop_punctuation(w) for w in written] if clean else written)
        stream = []
    return out


def lex_lines(lines: list[str]) -> list[str]:
    """What the jar writes for each of ``lines`` (str[n] -> str[n]; no line may hold a line break):
    its tokens, lower-cased, joined by single spaces."""
    return _lines(lines, clean=False)


def lex_captions(lines: list[str]) -> list[str]:
    """pycocoevalcap's PTBTokenizer output for each of ``lines`` (str[n] -> str[n]; no line breaks):
    ``drop_punctuation`` of what the jar writes, a plain line's final " ." dropped directly."""
    return _lines(lines, clean=True)
