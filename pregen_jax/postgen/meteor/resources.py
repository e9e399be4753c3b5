# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""METEOR 1.5's English resources, read at run time from the installed pycocoevalcap.

The jar is a zip: function words, non-breaking prefixes and the WordNet synonym files
(``synonym/english.{exceptions,synsets}``) come out of it; the paraphrase table is the gzip beside
it (``paraphrase.py`` compiles it). Nothing of them is copied into this package.
"""
from __future__ import annotations

import functools
import marshal
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

NBP_ANY, NBP_NUMERIC_ONLY = 1, 2  # a non-breaking prefix before anything, or only before a number


def jar_path() -> Path:
    """pycocoevalcap's METEOR 1.5 jar."""
    from pycocoevalcap.meteor import meteor as meteor_module
    return Path(meteor_module.__file__).parent / meteor_module.METEOR_JAR


def paraphrase_path() -> Path:
    """The English paraphrase table beside the jar (``data/paraphrase-en.gz``)."""
    return jar_path().parent / "data" / "paraphrase-en.gz"


def _lines(member: str) -> list[str]:
    with zipfile.ZipFile(jar_path()) as jar:
        return jar.read(member).decode("utf-8").splitlines()


@functools.lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """The jar's English function words (``function/english.words``)."""
    return frozenset(_lines("function/english.words"))


@functools.lru_cache(maxsize=1)
def nonbreaking_prefixes() -> dict[str, int]:
    """prefix -> NBP_ANY or NBP_NUMERIC_ONLY (``nonbreaking/english.prefixes``; # comments skipped)."""
    prefixes = {}
    for line in _lines("nonbreaking/english.prefixes"):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        numeric = len(fields) > 1 and fields[1] == "#NUMERIC_ONLY#"
        prefixes[fields[0]] = NBP_NUMERIC_ONLY if numeric else NBP_ANY
    return prefixes


@dataclass(frozen=True)
class Synonyms:
    """WordNet 3 as the jar ships it: word -> its synset ids as the file writes them (a line of
    integers, read by ``synsets_of`` when a word is met: most never are), and irregular form -> base forms."""

    lines: dict[str, str]
    bases: dict[str, tuple[str, ...]]

    def synsets_of(self, word: str) -> frozenset[int]:
        """The word's synset ids (empty where WordNet lacks the word)."""
        line = self.lines.get(word)
        return frozenset(map(int, line.split())) if line is not None else frozenset()


@functools.lru_cache(maxsize=1)
def synonyms() -> Synonyms:
    """``synonym/english.synsets`` (word line, then its synset ids) and ``english.exceptions`` (base
    form line, then its irregular forms); a later line for the same word replaces the earlier. Kept
    in the cache folder as Python's marshal of the two dictionaries, keyed by the jar's content and
    the Python version (reading it back takes half the time of parsing the jar's 3.7 MB again)."""
    from ...io import cache_folder, file_hash, write_bytes
    cache = cache_folder()
    kept = None if cache is None else cache / (f"meteor-synonyms-{file_hash(jar_path())[:16]}"
                                               f"-py{sys.version_info[0]}{sys.version_info[1]}.marshal")
    if kept is not None and kept.is_file():
        try:
            lines, bases = marshal.loads(kept.read_bytes())
            return Synonyms(lines, bases)
        except (OSError, EOFError, ValueError, TypeError):  # damaged: read the jar again
            pass
    lines = _lines("synonym/english.synsets")
    synsets = dict(zip(lines[0:len(lines) - 1:2], lines[1::2]))
    bases: dict[str, list[str]] = {}
    lines = _lines("synonym/english.exceptions")
    for k in range(0, len(lines) - 1, 2):
        for form in lines[k + 1].split():
            bases.setdefault(form, []).append(lines[k])
    found = Synonyms(synsets, {form: tuple(b) for form, b in bases.items()})
    if kept is not None:
        try:
            write_bytes(marshal.dumps((found.lines, found.bases)), kept)
            for old in cache.glob("meteor-synonyms-*.marshal"):  # another jar's or Python's
                if old != kept:
                    old.unlink(missing_ok=True)
        except OSError:
            pass
    return found
