# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""The English Snowball (Porter2) stemmer as METEOR 1.5's jar has it (the 2010 algorithm).

Later Snowball releases changed English (new R1 prefixes such as ``past``/``univers``/``organ``,
``-ogist``, exceptions such as ``evening``, no undoubling in ``added``), so today's
snowballstemmer and PyStemmer give different stems for some words; this is the algorithm as
published before those changes, checked word for word against the jar. Written from the
published description of Martin Porter's English (Porter2) algorithm (Snowball), not from the
Snowball-generated Java in Meteor's jar; this package's own work (MIT, docs/licensing.md). Strings are handled as
UTF-16 code units, as Java's are.
"""
from __future__ import annotations

import functools

VOWELS = frozenset("aeiouy")
VALID_LI = frozenset("cdeghkmnrt")
DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
EXCEPTIONS = {"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie", "idly": "idl",
              "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl", "sky": "sky",
              "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes"}
AFTER_1A = frozenset(("inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"))
R1_PREFIXES = ("gener", "commun", "arsen")
STEP_2 = (("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"), ("iveness", "ive"),
          ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"), ("entli", "ent"), ("ation", "ate"),
          ("alism", "al"), ("aliti", "al"), ("ousli", "ous"), ("iviti", "ive"), ("fulli", "ful"), ("enci", "ence"),
          ("anci", "ance"), ("abli", "able"), ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"),
          ("ogi", "og"), ("li", ""))
STEP_3 = (("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"), ("ative", ""),
          ("ical", "ic"), ("ness", ""), ("ful", ""))
STEP_4 = ("ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize",
          "ion", "al", "er", "ic")


def _longest(word: str, suffixes) -> str | None:
    """The longest of ``suffixes`` that ends ``word`` (Snowball's ``among``)."""
    best = None
    for suffix in suffixes:
        if word.endswith(suffix) and (best is None or len(suffix) > len(best)):
            best = suffix
    return best


def _region_after(word: str, start: int) -> int:
    """The position after the first non-vowel that follows a vowel, from ``start`` (or the end)."""
    k = start
    while k < len(word) and word[k] not in VOWELS:
        k += 1
    while k < len(word) and word[k] in VOWELS:
        k += 1
    return min(k + 1, len(word)) if k < len(word) else len(word)


def _short_syllable_at(word: str, end: int) -> bool:
    """``shortv`` ending at ``end`` (exclusive): non-vowel (not w, x, Y), vowel, non-vowel; or vowel, non-vowel at the start."""
    if end >= 3 and word[end - 1] not in VOWELS and word[end - 1] not in "wxY" and word[end - 2] in VOWELS \
            and word[end - 3] not in VOWELS:
        return True
    return end == 2 and word[0] in VOWELS and word[1] not in VOWELS


@functools.lru_cache(maxsize=1 << 18)
def stem(word: str) -> str:
    """The jar's stem of ``word`` (Java's ``englishStemmer``: ``setCurrent``, ``stem``, ``getCurrent``)."""
    if any(ord(c) > 0xFFFF for c in word):  # Java counts a supplementary character as two chars
        units = word.encode("utf-16-le", "surrogatepass")
        chars = "".join(chr(int.from_bytes(units[k:k + 2], "little")) for k in range(0, len(units), 2))
        return _stem(chars).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _stem(word)


def _stem(word: str) -> str:
    if word in EXCEPTIONS:
        return EXCEPTIONS[word]
    if len(word) < 3:
        return word
    word = _prelude(word)
    p1 = next((len(p) for p in R1_PREFIXES if word.startswith(p)), None)
    if p1 is None:
        p1 = _region_after(word, 0)
    p2 = _region_after(word, p1)
    word = _step_1a(word)
    if word not in AFTER_1A:
        for step in (_step_1b, _step_1c, _step_2, _step_3, _step_4, _step_5):
            word = step(word, p1, p2)
    return word.replace("Y", "y")


def _prelude(word: str) -> str:
    """Drop a leading apostrophe; y at the start or after a vowel becomes Y (a consonant)."""
    if word.startswith("'"):
        word = word[1:]
    chars = list(word)
    if chars and chars[0] == "y":
        chars[0] = "Y"
    for k in range(1, len(chars)):
        if chars[k] == "y" and chars[k - 1] in VOWELS:
            chars[k] = "Y"
    return "".join(chars)


def _step_1a(word: str) -> str:
    suffix = _longest(word, ("'s'", "'s", "'"))
    if suffix:
        word = word[:-len(suffix)]
    suffix = _longest(word, ("sses", "ied", "ies", "s", "us", "ss"))
    if suffix == "sses":
        return word[:-2]
    if suffix in ("ied", "ies"):
        return word[:-3] + ("i" if len(word) - 3 >= 2 else "ie")
    if suffix == "s" and any(c in VOWELS for c in word[:-2]):
        return word[:-1]
    return word


def _step_1b(word: str, p1: int, p2: int) -> str:
    suffix = _longest(word, ("eed", "eedly", "ed", "edly", "ing", "ingly"))
    if suffix in ("eed", "eedly"):
        return word[:-len(suffix)] + "ee" if len(word) - len(suffix) >= p1 else word
    if suffix is None or not any(c in VOWELS for c in word[:-len(suffix)]):
        return word
    word = word[:-len(suffix)]
    ending = _longest(word, ("at", "bl", "iz") + DOUBLES)
    if ending in ("at", "bl", "iz"):
        return word + "e"
    if ending:
        return word[:-1]
    if len(word) <= p1 and _short_syllable_at(word, len(word)):
        return word + "e"
    return word


def _step_1c(word: str, p1: int, p2: int) -> str:
    if len(word) >= 3 and word[-1] in "yY" and word[-2] not in VOWELS:
        return word[:-1] + "i"
    return word


def _step_2(word: str, p1: int, p2: int) -> str:
    suffix = _longest(word, [s for s, _ in STEP_2])
    if suffix is None or len(word) - len(suffix) < p1:
        return word
    stemmed = word[:-len(suffix)]
    if suffix == "ogi":
        return stemmed + "og" if stemmed.endswith("l") else word
    if suffix == "li":
        return stemmed if stemmed and stemmed[-1] in VALID_LI else word
    return stemmed + dict(STEP_2)[suffix]


def _step_3(word: str, p1: int, p2: int) -> str:
    suffix = _longest(word, [s for s, _ in STEP_3])
    if suffix is None or len(word) - len(suffix) < p1:
        return word
    if suffix == "ative" and len(word) - len(suffix) < p2:
        return word
    return word[:-len(suffix)] + dict(STEP_3)[suffix]


def _step_4(word: str, p1: int, p2: int) -> str:
    suffix = _longest(word, STEP_4)
    if suffix is None or len(word) - len(suffix) < p2:
        return word
    if suffix == "ion":
        return word[:-3] if word[:-3].endswith(("s", "t")) else word
    return word[:-len(suffix)]


def _step_5(word: str, p1: int, p2: int) -> str:
    if word.endswith("e"):
        start = len(word) - 1
        if start >= p2 or (start >= p1 and not _short_syllable_at(word, start)):
            return word[:-1]
    elif word.endswith("l") and len(word) - 1 >= p2 and word[:-1].endswith("l"):
        return word[:-1]
    return word
