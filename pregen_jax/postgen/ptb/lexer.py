"""The PTB tokenizer in Python: the lexer's rules (rules.py) run as the jar's scanner runs them.

The scanner at a position takes the longest match over all rules (a lookahead counts toward its
rule's length), the first rule on a tie, makes a token of it (or none), and goes on after the
token's text. Lines are one text joined by newlines, as the jar reads its input file, so a
lookahead at the end of one caption sees the next, as in COCOEvalCap.

Most of a caption takes a shortcut that gives what the rules give: a run of ASCII letters and
digits that starts with a letter and ends at a space or the line's end is one word token
(unless it is one of the split forms: cannot, gonna, ...); a lone "." before a space that does
not start a spaced ellipsis is a period. A word of ASCII letters and punctuation with no period,
digit or "<" cannot reach more than two characters past its end, so its tokens are remembered
per (word, next two characters).
"""
from __future__ import annotations

import functools
import re

import regex

from . import patterns
from .rules import RULES, Action

_SHAPES = patterns.shapes()


def _compile(pattern: str, posix: bool) -> regex.Pattern:
    flags = regex.V0 | (regex.POSIX if posix else 0)
    return regex.compile(patterns.expand(_SHAPES, patterns.caseless(pattern)), flags)


# per rule: the pattern with its lookahead (POSIX: the longest match), the pattern and lookahead alone
_WHOLE = [_compile(f"(?:{body})" + (f"(?:{ahead})" if ahead else ""), True) for body, ahead, _ in RULES]
_BODY = [_compile(body, False) if ahead else None for body, ahead, _ in RULES]
_AHEAD = [_compile(ahead, False) if ahead else None for _, ahead, _ in RULES]
_ACTION = [action for _, _, action in RULES]


@functools.lru_cache(maxsize=65536)
def _candidates(char: str) -> tuple[int, ...]:
    """The rules whose match can start with ``char``, in rule order."""
    return tuple(k for k, whole in enumerate(_WHOLE) if whole.match(char, partial=True))


def _cut(rule: int, text: str, start: int, end: int) -> int:
    """Where a lookahead rule's token ends: the longest body whose lookahead matches the rest."""
    body, ahead = _BODY[rule], _AHEAD[rule]
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


def step(text: str, start: int, view: int) -> tuple[str | None, int]:
    """The token the scanner makes at ``start`` of text[:view] (None: none) and where it goes on."""
    best, length = -1, 0
    for rule in _candidates(text[start]):
        match = _WHOLE[rule].match(text, start, view)
        if match is not None and match.end() - start > length:
            best, length = rule, match.end() - start
    end = start + length
    if _AHEAD[best] is not None:
        end = _cut(best, text, start, end)
    action, matched = _ACTION[best], text[start:end]
    if action is Action.BACK2 or action is Action.BACK3:
        back = 2 if action is Action.BACK2 else 3
        return matched[:-back], end - back
    if action is Action.ACRONYM:  # "I." gives "I" then "."; "U.S." gives "U.S." then "."
        return (matched[:1] if len(matched) == 2 else matched), end - 1
    if action is Action.PERIOD_AGAIN:
        return matched, end - 1
    return _token(action, matched), end


CONTEXT = 256  # characters of the following lines that the scanner sees past a line's end
# A line of such words, and at most one period at its end, is its words (lexed, each gives itself)
_PLAIN_LINE = re.compile(r" *[A-Za-z][A-Za-z0-9]*(?: +[A-Za-z][A-Za-z0-9]*)*(?: +\.)? *")
_SPLIT_WORD = re.compile(r"\b(?:cannot|gonna|gotta|lemme|gimme|wanna)\b", re.I | re.A)
_SPACES = re.compile("[ \t\u00a0\u2000-\u200a\u3000]+")
_SIMPLE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?=[ \n]|\Z)")
_SPLIT_FORMS = frozenset(["cannot", "gonna", "gotta", "lemme", "gimme", "wanna"])
_REMEMBERED = re.compile(r"""[A-Za-z'`\-,;:!?"()\[\]{}/&#@$%*+=~^|\\_>]+""")
_MEMO_LIMIT = 200_000
_memo: dict[tuple[str, str], list[str]] = {}


def _remembered(text: str, start: int, end: int, view: int) -> list[str] | None:
    """The tokens of the word text[start:end] (looked up or lexed); None if it may depend on more context."""
    key = (text[start:end], text[end:end + 2])
    tokens = _memo.get(key)
    if tokens is None:
        tokens, pos = [], start
        while pos < end:
            token, pos = step(text, pos, view)
            if token is not None:
                tokens.append(token)
        if pos != end:
            return None
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        _memo[key] = tokens
    return tokens


def lex(text: str, start: int, stop: int, view: int) -> tuple[list[str], int]:
    """The tokens of text[start:stop] (one line of ``text``, the scanner seeing up to ``view``) and where
    the scanner stopped (>= stop)."""
    tokens: list[str] = []
    pos = start
    while pos < stop:
        char = text[pos]
        if char == " ":  # only SPACES starts with a space: the whole run of spaces is skipped
            pos = _SPACES.match(text, pos).end()
            continue
        simple = _SIMPLE.match(text, pos, view)
        if simple is not None and simple.group().lower() not in _SPLIT_FORMS:
            tokens.append(simple.group())
            pos = simple.end()
            continue
        if char == "." and (pos + 1 >= view or text[pos + 1] == "\n"
                            or (text[pos + 1] == " " and text[pos + 2:pos + 3] != ".")):
            tokens.append(".")
            pos += 1
            continue
        end = text.find(" ", pos, stop)
        end = stop if end < 0 else end
        if _REMEMBERED.fullmatch(text, pos, end):
            remembered = _remembered(text, pos, end, view)
            if remembered is not None:
                tokens.extend(remembered)
                pos = end
                continue
        token, pos = step(text, pos, view)
        if token is not None:
            tokens.append(token)
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
    return token.lower()


def _context_end(text: str, stop: int) -> int:
    """Where the scanner's view of a line ending at ``stop`` ends: at least CONTEXT characters past the
    line, in whole lines. A match never reaches further in practice (a lookahead looks at most at
    the next line's first word or tag), and bounding it keeps patterns with a required character
    (EMAIL's "@", THING3's "/") from scanning the rest of the text."""
    end = stop
    while end < len(text) and end - stop < CONTEXT:
        end = text.find("\n", end + 1)
        end = len(text) if end < 0 else end
    return end


def tokenize_lines(lines: list[str]) -> list[str]:
    """What the jar writes for each of ``lines`` (str[n] -> str[n]; no line may hold a line break):
    its tokens, lower-cased, joined by single spaces."""
    units = [_utf16(line) for line in lines]
    text = "\n".join(units)
    out, pos, start = [], 0, 0
    for line in units:
        stop = start + len(line)
        if pos <= start and _PLAIN_LINE.fullmatch(line) and not _SPLIT_WORD.search(line):
            out.append(" ".join(line.split()).lower())
        else:
            tokens, pos = lex(text, max(pos, start), stop, _context_end(text, stop))
            out.append(" ".join(map(_lower, tokens)))
        start = stop + 1
    return out
