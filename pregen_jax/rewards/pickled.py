# SPDX-FileCopyrightText: 2019 Ruotian Luo
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Reading self-critical.pytorch's cached document frequencies (``scripts/prepro_ngrams.py``'s
``*-idxs.p``) without running anything a pickle names.

The file is ``{"document_frequency": df, "ref_len": images}`` pickled with protocol 2, where
``df`` is the ``defaultdict(float)`` of pyciderevalcap's ``CiderScorer.compute_doc_freq``
keyed by n-grams as tuples of id strings (``("12", "7", "0")``, the end token ``"0"``), and
``ref_len`` the number of images. ``pickle.load`` would import and call whatever the file names;
``SafeUnpickler`` resolves only ``collections.defaultdict`` (read as a plain dict) and ``float``
(its default factory), so a file holding anything but dicts, tuples, strings and numbers is
refused. How it was written: the format follows ``prepro_ngrams.py`` and ``ciderD_scorer.py``
(Ruotian Luo, MIT); no line is copied.
"""
from __future__ import annotations

import io
import pickle
from pathlib import Path

_FACTORY = object()  # what a pickled ``float`` (the defaultdict's factory) becomes


def _plain_dict(*_factory) -> dict:
    return {}


class SafeUnpickler(pickle.Unpickler):
    """An unpickler whose only classes are ``defaultdict`` (a plain dict) and ``float`` (ignored)."""

    ALLOWED = {("collections", "defaultdict"): _plain_dict, ("builtins", "float"): _FACTORY,
               ("__builtin__", "float"): _FACTORY}  # Python 2's name, for files written there

    def find_class(self, module: str, name: str):
        if (module, name) in self.ALLOWED:
            return self.ALLOWED[module, name]
        raise pickle.UnpicklingError(f"it names {module}.{name}: only dicts, tuples, strings and numbers are read")


def read_cached_frequencies(path) -> tuple[dict[tuple[int, ...], float], int]:
    """({n-gram as a tuple of ids: document frequency}, images) from a ``*-idxs.p`` file.

    A ValueError naming ``path`` and the problem: not a pickle, a class outside the allowed two,
    a missing key, an n-gram that is not 1..4 id strings, a frequency that is not a positive number,
    or ``ref_len`` not a positive whole number.
    """
    where = str(path)
    try:
        data = SafeUnpickler(io.BytesIO(Path(path).read_bytes()), encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError) as error:
        raise ValueError(f"{where}: not a cached document frequency pickle ({error})") from None
    if not isinstance(data, dict) or not {"document_frequency", "ref_len"} <= set(data):
        raise ValueError(f"{where}: needs the keys 'document_frequency' and 'ref_len' (prepro_ngrams.py's -idxs.p)")
    images, df = data["ref_len"], data["document_frequency"]
    if isinstance(images, bool) or not isinstance(images, (int, float)) or images != int(images) or images < 1:
        raise ValueError(f"{where}: ref_len {images!r} is not a number of images (a positive whole number)")
    if not isinstance(df, dict):
        raise ValueError(f"{where}: document_frequency is a {type(df).__name__}, not a dict")
    return {_gram(gram, where): _frequency(gram, value, where) for gram, value in df.items()}, int(images)


def _gram(gram, where: str) -> tuple[int, ...]:
    if (not isinstance(gram, tuple) or not 1 <= len(gram) <= 4
            or not all(isinstance(t, str) and t.isascii() and t.isdigit() for t in gram)):
        raise ValueError(f"{where}: n-gram {gram!r} is not 1..4 id strings (a words pickle, -words.p, holds words)")
    return tuple(int(t) for t in gram)


def _frequency(gram, value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 1:
        raise ValueError(f"{where}: n-gram {gram!r} has document frequency {value!r}, not a number >= 1")
    return float(value)
