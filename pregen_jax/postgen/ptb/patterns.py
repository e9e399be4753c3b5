# SPDX-FileCopyrightText: 2002-2009 The Board of Trustees of The Leland Stanford Junior University
#   (Stanford CoreNLP 3.4.1, PTBLexer.flex: Tim Grow, Christopher Manning, Jenny Finkel, Stanford NLP Group)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: GPL-2.0-or-later
"""The token shapes of the Stanford PTB lexer (CoreNLP 3.4.1), as regular expressions for the ``regex`` module.

Translated macro by macro from CoreNLP 3.4.1's ``PTBLexer.flex`` (its macros, their Unicode
ranges and word lists), so this file is under that file's licence, GPL-2.0-or-later (Stanford NLP
Group; docs/licensing.md), and checked against the jar token for token (the jar is the oracle,
tests/test_ptb_oracle.py). The jar's scanner is case-insensitive for letters
written outside a character class and case-sensitive inside one ("[A-Z]" stays upper case):
``caseless`` turns every ASCII letter outside a class into ``[xX]``, plus the four characters
whose Java case mapping reaches an ASCII letter (I with a dot, dotless i, long s, Kelvin sign),
as the scanner's generator does (not Python's IGNORECASE, whose folding differs). Its letter,
digit and upper-case classes are Java's ``Character.isLetter``, ``isDigit`` and ``isUpperCase``
of 2014 on 16-bit chars (charclasses.py's frozen tables, through a shadow of the text in UTF-16
code units). A shape refers to another one as ``<NAME>``; ``expand`` substitutes it, grouped.
"""
from __future__ import annotations

import re

from . import charclasses

_REF = re.compile(r"<([A-Z_0-9]+)>")
_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|[pP]\{[^}]*\}|.)", re.S)


# Characters whose Java case mapping (one char to one char) reaches an ASCII letter: the scanner's
# caseless "i" also matches U+0130 and U+0131, "s" the long s, "k" the Kelvin sign.
_OTHER_CASES = {"i": "\u0130\u0131", "s": "\u017f", "k": "\u212a"}


def caseless(pattern: str) -> str:
    """``pattern`` with each ASCII letter outside a character class matching both cases."""
    out, k, in_class = [], 0, False
    while k < len(pattern):
        c = pattern[k]
        if c == "\\":
            escape = _ESCAPE.match(pattern, k).group()
            out.append(escape)
            k += len(escape)
            continue
        if in_class:
            in_class = c != "]" or out[-1] == "[" or out[-1] == "[^"
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", k):
                out.append("[^")
                k += 2
                continue
        elif c == "<" and (ref := _REF.match(pattern, k)):  # a shape's name, not letters to match
            out.append(ref.group())
            k = ref.end()
            continue
        elif c.isascii() and c.isalpha():
            c = f"[{c.lower()}{c.upper()}{_OTHER_CASES.get(c.lower(), '')}]"
        out.append(c)
        k += 1
    return "".join(out)


def expand(shapes: dict[str, str], pattern: str) -> str:
    """``pattern`` with every ``<NAME>`` replaced by ``(?:shapes[NAME])``."""
    return _REF.sub(lambda m: f"(?:{shapes[m.group(1)]})", pattern)


# name -> pattern, in dependency order; each is made caseless, then its references expanded.
_SHAPES = {
    # the scanner's [:letter:], [:digit:], [:uppercase:]: exact on the shadow text (charclasses.py)
    "JLETTER": charclasses.PACKAGE_CLASSES[0],
    "JDIGIT": charclasses.PACKAGE_CLASSES[1],
    "JUPPER": charclasses.PACKAGE_CLASSES[2],
    "SGML": r"""<(?:[!?][A-Za-z\-][^>\r\n]*|[A-Za-z][A-Za-z0-9_:.\-]*(?:[ ]+(?:[A-Za-z][A-Za-z0-9_:.\-]*|[A-Za-z][A-Za-z0-9_:.\-]*[ ]*=[ ]*(?:'[^']*'|"[^"]*")))*[ ]*/?|/[A-Za-z][A-Za-z0-9_:.\-]*)[ ]*>""",
    "SPMDASH": r"&(?:MD|mdash|ndash);|[\u0096\u0097\u2013\u2014\u2015]",
    "SPAMP": r"&amp;",
    "SPPUNC": r"&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);",
    "SPLET": r"&[aeiouAEIOU](?:acute|grave|uml);",
    "SPACE": r"[ \t\u00A0\u2000-\u200A\u3000]",
    "SPACES": r"<SPACE>+",
    "NEWLINE": r"\r|\r?\n|\u2028|\u2029|\u000B|\u000C|\u0085",
    "SPACENL": r"<SPACE>|<NEWLINE>",
    "SPACENLS": r"<SPACENL>+",
    "SENTEND": r"<SPACENL>(?:<SPACENL>|<JUPPER>|<SGML>)",
    "DIGIT": r"<JDIGIT>|[\u07C0-\u07C9]",
    "DATE": r"<DIGIT>{1,2}[\-/]<DIGIT>{1,2}[\-/]<DIGIT>{2,4}",
    "NUM": r"<DIGIT>+|<DIGIT>*(?:[.:,\u00AD\u066B\u066C]<DIGIT>+)+",
    "NUMBER": r"[\-+]?<NUM>",
    "SUBSUPNUM": r"[\u207A\u207B\u208A\u208B]?(?:[\u2070\u00B9\u00B2\u00B3\u2074-\u2079]+|[\u2080-\u2089]+)",
    "FRAC": r"(?:<DIGIT>{1,4}[- \u00A0])?<DIGIT>{1,4}(?:\\?/|\u2044)<DIGIT>{1,4}",
    "FRAC2": r"[\u00BC\u00BD\u00BE\u2153-\u215E]",
    "DOLSIGN": r"[A-Z]*\$|\#",
    "DOLSIGN2": r"[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]",
    "LETTER": (r"<JLETTER>|<SPLET>|[\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F"
               r"\u0370-\u037D\u0384\u0385\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525"
               r"\u055A-\u055F\u0591-\u05BD\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F"
               r"\u064B-\u065E\u0670\u06D6-\u06EF\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F\u07A6-\u07B1"
               r"\u07CA-\u07F5\u07FA\u0900-\u0903\u093C\u093E-\u094E\u0951-\u0955\u0962-\u0963\u0981-\u0983"
               r"\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD\u09D7\u09E2\u09E3\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F"
               r"\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03\u0C3E-\u0C56"
               r"\u0D3E-\u0D44\u0D46-\u0D48\u0E30-\u0E3A\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD]"),
    "WORD": r"<LETTER>(?:<LETTER>|<DIGIT>)*(?:[.!?]<LETTER>(?:<LETTER>|<DIGIT>)*)*",
    "FILENAME_EXT": (r"bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov|mp3|pdf"
                     r"|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip"),
    "FILENAME": r"(?:<LETTER>|<DIGIT>)+(?:[.](?:<LETTER>|<DIGIT>)+)*[.]<FILENAME_EXT>",
    "APOS": r"['\u0092\u2019]|&apos;",
    "APOSETCETERA": r"<APOS>|[`\u0091\u2018\u201B]",
    "HYPHEN": r"[-_\u058A\u2010\u2011]",
    "LD": r"<JLETTER>|<JDIGIT>",  # [:letter:]|[:digit:] (no extra letters)
    "THING": (r"(?:[dDoOlL]<APOSETCETERA><LD>)?<LD>+"
              r"(?:<HYPHEN>(?:[dDoOlL]<APOSETCETERA><LD>)?<LD>+)*"),
    "THINGA": r"[A-Z]+(?:(?:[+&]|<SPAMP>)[A-Z]+)+",
    "THING3": r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}",
    "ACRO": r"[A-Za-z](?:\.[A-Za-z])*|(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(?:U\.K|U\.S\.S\.R)",
    "ACRO2": r"[A-Za-z](?:\.[A-Za-z])+|(?:Canada|Sino|Korean|EU|Japan|non)-U\.S|U\.S\.-(?:U\.K|U\.S\.S\.R)",
    "HTHING": r"[A-Za-z0-9][A-Za-z0-9.,\u00AD]*(?:-(?:[A-Za-z0-9\u00AD]+|<ACRO2>\.))+",
    "REDAUX": r"<APOS>(?:[msdMSD]|re|ve|ll)",
    "SWORD": r"[A-Za-z\u00AD]*[A-MO-Za-mo-z]\u00AD*",
    "SREDAUX": r"n<APOSETCETERA>t",
    "APOWORD": (r"<APOS>n<APOS>?|[lLdDjJ]<APOS>|Dunkin<APOS>|somethin<APOS>|ol<APOS>|<APOS>em"
                r"|[A-HJ-XZn]<APOSETCETERA><JLETTER>{2}<JLETTER>*|<APOS>[2-9]0s|<APOS>till?"
                r"|<JLETTER><JLETTER>*[aeiouyAEIOUY]<APOSETCETERA>[aeiouA-Z]<JLETTER>*|<APOS>cause|cont'd\.?|'twas"
                r"|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l|O<APOSETCETERA>o"),
    "APOWORD2": r"y<APOS>",
    "FULLURL": r"""https?://[^ \t\n\f\r"<>|(){}]+[^ \t\n\f\r"<>|.!?(){},-]""",
    # ",-_" in the second class is a range (U+002C..U+005F: digits and capitals among them), as in the lexer
    "LIKELYURL": (r"""(?:(?:www\.(?:[^ \t\n\f\r"<>|.!?(){},]+\.)+[a-zA-Z]{2,4})"""
                  r"""|(?:(?:[^ \t\n\f\r"`'<>|.!?(){},-_$]+\.)+(?:com|net|org|edu)))"""
                  r"""(?:/[^ \t\n\f\r"<>|()]+[^ \t\n\f\r"<>|.!?(){},-])?"""),
    "EMAIL": (r"""(?:&lt;|<)?[a-zA-Z0-9][^ \t\n\f\r"<>|()\u00A0{}]*@(?:[^ \t\n\f\r"<>|(){}.\u00A0]+\.)*"""
              r"""[^ \t\n\f\r"<>|(){}.\u00A0]+(?:&gt;|>)?"""),
    "TWITTER": r"@[a-zA-Z_][a-zA-Z_0-9]*|\#<LETTER>+",
    "ABMONTH": r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec",
    "ABDAYS": r"Mon|Tue|Tues|Wed|Thu|Thurs|Fri",
    "ABSTATE": (r"Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich"
                r"|Minn|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo"),
    "ABCOMP": r"Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys",
    "ABNUM": r"tel|est|ext|sq",
    "ABPTIT": r"Jr|Sr|Bros|(?:Ed|Ph)\.D|Blvd|Rd|Esq",
    "ABBREV1": r"(?:<ABMONTH>|<ABDAYS>|<ABSTATE>|<ABCOMP>|<ABNUM>|<ABPTIT>|etc|al|seq|Bldg)\.",
    "ABTITLE": (r"Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt"
                r"|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens"
                r"|Insp|Mlle|Mme|Msgr|Sfc"),
    "ABCOMP2": r"Invt|Elec|Natl|M[ft]g|Dept",
    "ABBREV4": r"<ABTITLE>|vs|Alex|Wm|Jos|Cie|a\.k\.a|cf|TREAS|Ph|<ACRO>|<ABCOMP2>",
    "ABBREV2": r"<ABBREV4>\.",
    "ACRONYM": r"<ACRO>\.",
    "ABBREV3": r"(?:ca|figs?|prop|nos?|art|bldg|prop|pp|op)\.",
    "PHONE": (r"(?:\([0-9]{2,3}\)[ \u00A0]?|(?:\+\+?)?(?:[0-9]{2,4}[\- \u00A0])?[0-9]{2,4}[\- \u00A0])"
              r"[0-9]{3,4}[\- \u00A0]?[0-9]{3,5}|(?:(?:\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}"),
    "LDOTS": r"\.{3,5}|(?:\.[ \u00A0]){2,4}\.|[\u0085\u2026]",
    "ASTS": r"\*+|(?:\\\*){1,3}",
    "FNMARKS": r"@+|\#+|_+",
    "INSENTP": r"[,;:\u3001]",
    "QUOTES": r"<APOS>|''|[`\u2018\u2019\u201A\u201B\u201C\u201D\u0091\u0092\u0093\u0094\u201E\u201F\u2039\u203A\u00AB\u00BB]{1,2}",
    "DBLQUOT": r'"|&quot;',
    "TBSPEC": r"-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\.D\.s|pro-|anti-|S(?:&|&amp;)P-500|S(?:&|&amp;)Ls|Cap<APOS>n|c<APOS>est",
    "TBSPEC2": r"<APOS>[0-9][0-9]",
    "SMILEY": r"[<>]?[:;=][\-o*']?[()DPdpO\\{@|\[\]]",
    # the first form reads, as the lexer has it: one of ^x=~<>, a dot, then the literal text "[^x=~<>]"
    "ASIANSMILEY": (r"[\^x=~<>]\.\[\^x=~<>\]|[\-\^x=~<>']_[\-\^x=~<>']|\([\-\^x=~<>'][_.]?[\-\^x=~<>']\)"
                    r"|\([\^x=~<>']-[\^x=~<>'`]\)"),
    "MISCSYMBOL": (r"[+%&~\^|\\\u00A6\u00A7\u00A8\u00A9\u00AC\u00AE\u00AF\u00B0-\u00B3\u00B4-\u00BA\u00D7\u00F7"
                   r"\u0387\u05BE\u05C0\u05C3\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B"
                   r"\u061E\u066A\u066D\u0703-\u070D\u07F6\u07F7\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017"
                   r"\u2020-\u2023\u2030-\u2038\u203B\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F"
                   r"\u2190-\u21FF\u2200-\u2BFF\u3012\u30FB\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65]"),
}


def shapes() -> dict[str, str]:
    """Every shape as a finished pattern (caseless, references expanded)."""
    done: dict[str, str] = {}
    for name, pattern in _SHAPES.items():
        done[name] = expand(done, caseless(pattern))
    return done
