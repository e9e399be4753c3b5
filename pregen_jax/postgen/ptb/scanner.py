# SPDX-FileCopyrightText: 2002-2009 The Board of Trustees of The Leland Stanford Junior University
#   (Stanford CoreNLP 3.4.1, PTBLexer.flex: Tim Grow, Christopher Manning, Jenny Finkel, Stanford NLP Group)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: GPL-2.0-or-later
"""The PTB lexer's scanner: one token at a time, as the jar's generated scanner makes it.

At a position it takes the longest match over all rules (a lookahead counts toward its rule's
length), the first rule on a tie, and makes a token of it (or none) by the rule's action. A rule
with a lookahead keeps the longest part of the match that its pattern matches with the lookahead
matching the rest. Only the rules whose match can start with the character at hand are tried.

The matching is this package's own; the actions' tables (currency signs, fractions, quotes,
brackets, dashes) are translated from the Java code of CoreNLP 3.4.1's ``PTBLexer.flex``, so this
file is under that file's licence, GPL-2.0-or-later (Stanford NLP Group; docs/licensing.md).
"""
from __future__ import annotations

import functools
import re

import regex

from . import charclasses, patterns
from .rules import RULES, Action

_SHAPES = patterns.shapes()


def _compile(pattern: str, posix: bool) -> regex.Pattern:
    flags = regex.V0 | (regex.POSIX if posix else 0)
    return regex.compile(patterns.expand(_SHAPES, patterns.caseless(pattern)), flags)


# per rule: the pattern with its lookahead (POSIX: the longest match); the pattern and the lookahead alone
# (``_split``) are compiled when a rule with a lookahead first wins (a few of them in a caption file)
_WHOLE = [_compile(f"(?:{body})" + (f"(?:{ahead})" if ahead else ""), True) for body, ahead, _ in RULES]
_HAS_AHEAD = [bool(ahead) for _, ahead, _ in RULES]
_ACTION = [action for _, _, action in RULES]


@functools.cache
def _split(rule: int) -> tuple[regex.Pattern, regex.Pattern]:
    """(the body, the lookahead) of a rule with a lookahead, compiled."""
    body, ahead, _ = RULES[rule]
    return _compile(body, False), _compile(ahead, False)


def _named(texts: list[str]) -> set[int]:
    """The non-ASCII chars that the patterns ``texts`` (as compiled) name one by one or in ranges of their own."""
    named: set[int] = set()
    for pattern in texts:
        for first, last in _ESCAPES.findall(pattern):
            named.update(range(int(first, 16), int(last or first, 16) + 1))
        named.update(ord(c) for c in pattern if not c.isascii())
    return named


_ESCAPES = re.compile(r"\\u([0-9A-Fa-f]{4})(?:-\\u([0-9A-Fa-f]{4}))?")


@functools.lru_cache(maxsize=1)
def _stand_ins() -> dict:
    """For str.translate: char -> stand-in (made when a text first holds a non-ASCII char)."""
    texts = [p.pattern for p in _WHOLE] + [patterns.expand(_SHAPES, patterns.caseless(part))
                                           for body, ahead, _ in RULES if ahead for part in (body, ahead)]
    return charclasses.shadow_table(_named(texts))


@functools.lru_cache(maxsize=65536)
def _candidates(char: str) -> tuple[int, ...]:
    """The rules whose match can start with ``char``, in rule order."""
    return tuple(k for k, whole in enumerate(_WHOLE) if whole.match(char, partial=True))


def shadow(text: str) -> str:
    """What the scanner matches for ``text`` (same length): chars whose Unicode class the regex
    package and the jar disagree on replaced by stand-ins (charclasses.shadow_table)."""
    return text if text.isascii() else text.translate(_stand_ins())


def _cut(rule: int, text: str, start: int, end: int) -> int:
    """Where a lookahead rule's token ends: the longest body whose lookahead matches the rest."""
    body, ahead = _split(rule)
    for cut in range(end - 1, start, -1):
        if body.fullmatch(text, start, cut) and ahead.fullmatch(text, cut, end):
            return cut
    raise AssertionError(f"PTB lexer: no split of {text[start:end]!r} for rule {rule}")


_AMP = re.compile("&amp;", re.I | re.A)
_FRACTIONS = str.maketrans({"\u00BC": "1/4", "\u00BD": "1/2", "\u00BE": "3/4", "\u2153": "1/3", "\u2154": "2/3"})
_CURRENCY = str.maketrans({"\u00A2": "cents", "\u00A3": "#", "\u0080": "$", "\u00A4": "$", "\u20A0": "$",
                           "\u20AC": "$"})
_PARENS = str.maketrans({"(": "-LRB-", ")": "-RRB-"})
_QUOTES_ANY = str.maketrans({"\u0091": "`", "\u2018": "`", "\u201B": "`", "\u2039": "`", "\u0092": "'", "\u2019": "'",
                             "\u203A": "'", "\u0093": "``", "\u201C": "``", "\u00AB": "``", "\u0094": "''",
                             "\u201D": "''", "\u00BB": "''"})
_LEFT = (re.compile("&apos;|'"), "`", re.compile('"|&quot;'), "``")
_RIGHT = (re.compile("&apos;|'"), "'", re.compile('"|&quot;'), "''")
_CONSTANT = {Action.MDASH: "--", Action.LESS: "<", Action.GREATER: ">", Action.LCB: "-LCB-", Action.RCB: "-RCB-",
             Action.LSB: "-LSB-", Action.RSB: "-RSB-", Action.LRB: "-LRB-", Action.RRB: "-RRB-",
             Action.ELLIPSIS: "..."}


def _quotes(text: str, left: bool) -> str:
    single, single_to, double, double_to = _LEFT if left else _RIGHT
    return double.sub(double_to, single.sub(single_to, text)).translate(_QUOTES_ANY)


def _token(action: Action, text: str) -> str | None:
    """The token ``action`` makes of ``text`` (None: no token), for the actions that read nothing again."""
    if action is Action.TEXT:
        return text
    if action is Action.SOFT:
        return (text.replace("\u00AD", "") or "-") if "\u00AD" in text else text
    if action in _CONSTANT:
        return _CONSTANT[action]
    if action is Action.NBSP:
        return text.replace(" ", "\u00A0")
    if action is Action.AMP:
        return _AMP.sub("&", text)
    if action is Action.FRACTION:
        return text.translate(_FRACTIONS)
    if action is Action.CURRENCY:
        return text.translate(_CURRENCY)
    if action is Action.PHONE:
        return text.replace(" ", "\u00A0").translate(_PARENS)
    if action is Action.PARENS:
        return text.translate(_PARENS)
    if action is Action.QUOTE_LEFT or action is Action.QUOTE_RIGHT:
        return _quotes(text, action is Action.QUOTE_LEFT)
    if action is Action.DASHES:
        return "--" if 3 <= len(text) <= 4 else text
    return None  # SKIP, NEWLINE


def step(text: str, shade: str, start: int, view: int) -> tuple[str | None, int]:
    """The token the scanner makes at ``start`` of text[:view] (None: none) and where it goes on;
    ``shade`` is ``shadow(text)``, which the patterns match."""
    best, length = -1, 0
    for rule in _candidates(shade[start]):
        match = _WHOLE[rule].match(shade, start, view)
        if match is not None and match.end() - start > length:
            best, length = rule, match.end() - start
    end = start + length
    if _HAS_AHEAD[best]:
        end = _cut(best, shade, start, end)
    action, matched = _ACTION[best], text[start:end]
    if action is Action.BACK2 or action is Action.BACK3:
        back = 2 if action is Action.BACK2 else 3
        return matched[:-back], end - back
    if action is Action.ACRONYM:  # "I." gives "I" then "."; "U.S." gives "U.S." then "."
        return (matched[:1] if len(matched) == 2 else matched), end - 1
    if action is Action.PERIOD_AGAIN:
        return matched, end - 1
    return _token(action, matched), end
