# SPDX-FileCopyrightText: 2002-2009 The Board of Trustees of The Leland Stanford Junior University
#   (Stanford CoreNLP 3.4.1, PTBLexer.flex: Tim Grow, Christopher Manning, Jenny Finkel, Stanford NLP Group)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: GPL-2.0-or-later
"""The PTB lexer's rules, in its order: what each matches, what must follow it, and what it makes of the text.

A rule is ``(pattern, lookahead, action)``. The scanner takes, at each position, the rule whose
pattern-and-lookahead matches the longest text, the first such rule on a tie; a rule with a
lookahead returns only the pattern's part (the longest part such that the lookahead matches the
rest). Actions are named in ``Action``; lexer.py carries them out. The rules are those of
CoreNLP 3.4.1's PTBLexer with its default options as ``PTBTokenizer -preserveLines`` sets them
(PTB3 escaping, latex quotes, "--" for dashes, "..." for ellipses, traditional treebank-3 state,
assimilations split, untokenizable characters deleted), translated rule by rule from its
``PTBLexer.flex`` (patterns, lookaheads and the actions their Java code takes with those options),
so this file is under that file's licence, GPL-2.0-or-later (Stanford NLP Group; docs/licensing.md).
"""
from __future__ import annotations

import enum


class Action(enum.Enum):
    TEXT = "the text as matched"
    SOFT = "the text without soft hyphens (U+00AD); '-' if nothing else is left"
    BACK2 = "the text less its last 2 characters, which are read again (gonna -> gon na)"
    BACK3 = "the text less its last 3 characters, which are read again (cannot -> can not)"
    NBSP = "spaces inside the token become U+00A0"
    MDASH = "--"
    AMP = "&amp; (any case) becomes &"
    FRACTION = "a vulgar fraction character becomes 1/4, 1/2, 3/4, 1/3 or 2/3 (others stay)"
    CURRENCY = "cent sign -> cents, pound sign -> #, euro and generic currency signs -> $"
    ACRONYM = "a two-character acronym loses its period (read again); a longer one keeps it and the period is read again"
    PERIOD_AGAIN = "the text, then its final period read again"
    PHONE = "spaces become U+00A0, ( and ) become -LRB- and -RRB-"
    PARENS = "( and ) become -LRB- and -RRB-"
    QUOTE_LEFT = "quotes as opening quotes: ' -> `, \" -> ``"
    QUOTE_RIGHT = "quotes as closing quotes: ' -> ', \" -> ''"
    LESS = "<"
    GREATER = ">"
    LCB = "-LCB-"
    RCB = "-RCB-"
    LSB = "-LSB-"
    RSB = "-RSB-"
    LRB = "-LRB-"
    RRB = "-RRB-"
    DASHES = "three or four hyphens become --"
    ELLIPSIS = "..."
    SKIP = "no token"
    NEWLINE = "the end of a line"


A = Action
_SENTENCE_STARTERS = (
    "[A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|[B]ut|[E]arlier|[H]e|[H]er|[H]ere|[H]owever|[I]f"
    r"|[I]n|[I]t|[L]ast|[M]any|[M]ore|[M]r\.|[M]s\.|[N]ow|[O]nce|[O]ne|[O]ther|[O]ur|[S]he|[S]ince|[S]o|[S]ome"
    "|[S]uch|[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese|[T]hey|[T]his|[W]e|[W]hen|[W]hile|[W]hat|[Y]et|[Y]ou|<SGML>")
ANY = r"[\s\S]"  # the lexer's [^]: any character, a newline too

RULES: list[tuple[str, str | None, Action]] = [
    (r"c[+][+]", None, A.TEXT),
    (r"(?:c|f)\#", None, A.TEXT),
    (r"cannot", None, A.BACK3),
    (r"'twas", None, A.BACK3),
    (r"'tis", None, A.BACK2),
    (r"gonna|gotta|lemme|gimme|wanna", None, A.BACK2),
    (r"<SGML>", None, A.NBSP),
    (r"<SPMDASH>", None, A.MDASH),
    (r"<SPAMP>", None, A.AMP),
    (r"<SPPUNC>", None, A.TEXT),
    (r"<WORD>", r"<REDAUX>", A.SOFT),
    (r"<SWORD>", r"<SREDAUX>", A.SOFT),
    (r"<WORD>", None, A.SOFT),
    (r"<APOWORD>", None, A.TEXT),
    (r"<APOWORD2>", r"<JLETTER>", A.TEXT),
    (r"<FULLURL>", None, A.TEXT),
    (r"<LIKELYURL>", None, A.TEXT),
    (r"<EMAIL>", None, A.TEXT),
    (r"<TWITTER>", None, A.TEXT),
    (r"<REDAUX>", r"[^A-Za-z]", A.QUOTE_RIGHT),
    (r"<SREDAUX>", r"[^A-Za-z]", A.QUOTE_RIGHT),
    (r"<DATE>", None, A.TEXT),
    (r"<NUMBER>", None, A.SOFT),
    (r"<SUBSUPNUM>", None, A.TEXT),
    (r"<FRAC>", None, A.NBSP),
    (r"<FRAC2>", None, A.FRACTION),
    (r"<TBSPEC>", None, A.AMP),
    (r"<THING3>", None, A.TEXT),
    (r"<DOLSIGN>", None, A.TEXT),
    (r"<DOLSIGN2>", None, A.CURRENCY),
    (r"<ACRONYM>", rf"<SPACENLS>(?:{_SENTENCE_STARTERS})<SPACENL>", A.ACRONYM),
    (r"<ABBREV3>", r"<SPACENL>?<JDIGIT>", A.TEXT),
    (r"(?:pt[eyEY]|co)\.", r"<SPACE>(?:ltd|lim)", A.TEXT),
    (r"<ABBREV1>", r"<SENTEND>", A.PERIOD_AGAIN),
    (r"<ABBREV1>", ANY + ANY, A.TEXT),
    (r"<ABBREV1>", None, A.PERIOD_AGAIN),
    (r"<ABBREV2>", None, A.TEXT),
    (r"<ABBREV4>", r"<SPACE>", A.TEXT),
    (r"<ACRO>", r"<SPACENL>", A.TEXT),
    (r"<TBSPEC2>", r"<SPACENL>", A.TEXT),
    (r"<FILENAME>", r"<SPACENL>|[.?!,]", A.TEXT),
    (r"<WORD>\.", r"<INSENTP>", A.SOFT),
    (r"<PHONE>", None, A.PHONE),
    (r"<DBLQUOT>", r"[A-Za-z0-9$]", A.QUOTE_LEFT),
    (r"<DBLQUOT>", None, A.QUOTE_RIGHT),
    (r"\x7f", None, A.SKIP),
    (r"<|&lt;", None, A.LESS),
    (r">|&gt;", None, A.GREATER),
    (r"<SMILEY>", r"[^A-Za-z0-9]", A.PARENS),
    (r"<ASIANSMILEY>", None, A.PARENS),
    (r"\{", None, A.LCB),
    (r"\}", None, A.RCB),
    (r"\[", None, A.LSB),
    (r"\]", None, A.RSB),
    (r"\(", None, A.LRB),
    (r"\)", None, A.RRB),
    (r"-+", None, A.DASHES),
    (r"<LDOTS>", None, A.ELLIPSIS),
    (r"<FNMARKS>", None, A.TEXT),
    (r"<ASTS>", None, A.TEXT),
    (r"<INSENTP>", None, A.TEXT),
    (r"[?!]+", None, A.TEXT),
    (r"[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]", None, A.TEXT),
    (r"=", None, A.TEXT),
    (r"/", None, A.TEXT),
    (r"<HTHING>\.", r"<INSENTP>", A.SOFT),
    (r"<HTHING>", None, A.SOFT),
    (r"<THING>\.", r"<INSENTP>", A.TEXT),
    (r"<THING>", None, A.TEXT),
    (r"<THINGA>\.", r"<INSENTP>", A.AMP),
    (r"<THINGA>", None, A.AMP),
    (r"'", r"[A-Za-z][^ \t\n\r\u00A0]", A.QUOTE_LEFT),
    (r"<REDAUX>", None, A.QUOTE_RIGHT),
    (r"<SREDAUX>", None, A.QUOTE_RIGHT),
    (r"<QUOTES>", None, A.QUOTE_RIGHT),
    (r"<<|>>", None, A.TEXT),
    (r"<MISCSYMBOL>", None, A.TEXT),
    (r"\x00|<SPACES>|[\u200B\u200E\u200F\uFEFF]", None, A.SKIP),
    (r"<NEWLINE>", None, A.NEWLINE),
    (r"&nbsp;", None, A.SKIP),
    (r"[^\n]", None, A.SKIP),  # untokenizable: deleted (the jar logs the first one)
]
