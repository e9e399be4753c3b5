"""The package says what its code is (docs/licensing.md): the PTB and METEOR ports, and the files
that follow coco-caption's, gensim's, POT's or confseq's code, name the licences of the sources
they follow, and the package's SPDX expression names every licence a file carries. ``reuse lint``
(scripts/test.sh) checks the whole repository; these tests check what it cannot: which licence
those files carry, whom they credit, and that the expression the wheel's metadata gives is the
one pyproject.toml declares."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib

import pytest

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXPRESSION = "MIT AND GPL-2.0-or-later AND LGPL-2.1-only AND BSD-2-Clause-Views"
PORTS = ROOT / "pregen_jax" / "postgen"
# the licence of each ported folder's translated files, and the copyright its authors hold
UPSTREAM = {
    "ptb": ("GPL-2.0-or-later", "The Leland Stanford Junior University", ("Christopher Manning",)),
    "meteor": ("LGPL-2.1-only", "Carnegie Mellon University", ("Michael Denkowski", "Alon Lavie")),
}
# the files translated from the upstream sources (docs/licensing.md lists why each is or is not); a
# file tagged with the upstream licence is held to the same checks
TRANSLATED = {
    "ptb": {"patterns.py", "rules.py", "scanner.py", "lexer.py"},
    "meteor": {"align.py", "fast.py", "matchers.py", "normalize.py", "paraphrase.py", "python.py", "scoring.py"},
}
# Files that follow another project's code outside the two ported folders' upstreams (docs/licensing.md,
# "Code that follows coco-caption, gensim and POT"), by path from the repository root: their SPDX licence
# expression, the copyright holders their header names, and the authors or projects their docstring credits.
COCO = "2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam"  # coco-caption's license.txt, bleu/LICENSE
FOLLOWED = {
    "pregen_jax/postgen/bleu.py": ("MIT", (COCO,), ("David Chiang", "Hao Fang", "Tsung-Yi Lin")),
    "pregen_jax/postgen/cider.py": ("BSD-2-Clause-Views", (COCO,), ("Ramakrishna Vedantam", "Tsung-Yi Lin")),
    "pregen_jax/rewards/bleu.py": ("MIT", (COCO,), ("David Chiang", "Hao Fang", "Tsung-Yi Lin")),
    "pregen_jax/rewards/cider.py": ("BSD-2-Clause-Views", (COCO,), ("Ramakrishna Vedantam", "Tsung-Yi Lin")),
    "pregen_jax/postgen/rouge.py": ("BSD-2-Clause-Views", (COCO,), ("Ramakrishna Vedantam",)),
    "pregen_jax/postgen/ptb/punctuation.py": ("BSD-2-Clause-Views", (COCO,), ("Hao Fang", "Tsung-Yi Lin")),
    "pregen_jax/postgen/wmd.py": ("LGPL-2.1-only AND MIT", ("2018 RaRe Technologies s.r.o.", "2016-2023 POT contributors"),
                                  ("gensim", "POT")),
    "tests/test_confseq.py": ("MIT", ("2021 confseq developers",), ("confseq",)),
    # the diversity metrics: self-critical.pytorch's div_utils.py and eval_multi.py; Self-CIDEr's kernel, ruotianluo/cider
    "pregen_jax/postgen/diversity.py": ("MIT", ("2019 Ruotian Luo",), ("Ruotian Luo", "self-critical.pytorch")),
    "pregen_jax/postgen/selfcider.py": ("BSD-2-Clause-Views AND MIT", (COCO, "2019 Ruotian Luo"),
                                        ("Ramakrishna Vedantam", "Tsung-Yi Lin", "Ruotian Luo")),
    "tests/test_diversity.py": ("MIT AND BSD-2-Clause-Views", ("2019 Ruotian Luo", COCO),
                                ("Ruotian Luo", "Ramakrishna Vedantam", "Tsung-Yi Lin")),
    # the SCST reward's self-critical forms and the cached document frequencies: self-critical.pytorch
    "pregen_jax/rewards/critic.py": ("MIT", ("2019 Ruotian Luo",), ("Ruotian Luo", "self-critical.pytorch")),
    "pregen_jax/rewards/pickled.py": ("MIT", ("2019 Ruotian Luo",), ("Ruotian Luo", "self-critical.pytorch")),
    "tests/test_self_critical.py": ("MIT", ("2019 Ruotian Luo",), ("Ruotian Luo", "self-critical.pytorch")),
    # METEOR's Python search, moved out of the package: the test oracle of its numba search
    "tests/meteor_oracle/align.py": ("LGPL-2.1-only", ("2004, 2010 Carnegie Mellon University",),
                                     ("Michael Denkowski", "Alon Lavie")),
}
# the tags, written so that `reuse lint` does not read them as this file's own
LICENSE_TAG, COPYRIGHT_TAG = "SPDX-" "License-Identifier: ", "SPDX-" "FileCopyrightText: "
SPDX = re.compile(f"^# {LICENSE_TAG}" r"(?P<id>\S+)$", re.M)
SPDX_EXPRESSION = re.compile(f"^# {LICENSE_TAG}" r"(?P<expression>.+)$", re.M)
HOLDERS = re.compile(f"^# {COPYRIGHT_TAG}" r"(?P<holder>.+)$", re.M)
OURS = "2026 The pregen-jax authors"


def header(path) -> str:
    """The comment lines that open ``path``."""
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines[:next((k for k, line in enumerate(lines) if not line.startswith("#")),
                                                    len(lines))])


def test_pyproject_declares_every_licence_as_one_spdx_expression():
    project = PYPROJECT["project"]
    assert project["license"] == EXPRESSION  # PEP 639: a plain string, not a table
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    files = {path.relative_to(ROOT).as_posix() for pattern in project["license-files"] for path in ROOT.glob(pattern)}
    for licence in EXPRESSION.split(" AND "):
        assert f"LICENSES/{licence}.txt" in files
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in PYPROJECT["build-system"]["requires"])


def test_the_installed_metadata_gives_the_expression():
    """What the build backend wrote for this install (the same metadata a wheel carries; a venv
    installed before pyproject.toml changed needs ``pip install -e .`` again)."""
    metadata = importlib.metadata.metadata("pregen-jax")
    assert metadata["License-Expression"] == EXPRESSION
    assert metadata["License"] is None


@pytest.mark.parametrize("folder", sorted(UPSTREAM))
def test_every_ported_file_names_its_licence_and_credits_its_authors(folder):
    licence, holder, authors = UPSTREAM[folder]
    files = sorted((PORTS / folder).rglob("*.py"))  # a file added, moved or split must carry a header too
    ported = [p for p in files if p.name in TRANSLATED[folder] or licence in SPDX.findall(header(p))]
    assert ported, f"{folder}: no file under {licence} any more: update TRANSLATED and docs/licensing.md"
    for path in files:
        top = header(path)
        named = SPDX.findall(top)
        assert len(named) == 1, f"{path.name}: one licence tag at the top, found {named}"
        assert named[0] in EXPRESSION.split(" AND "), path.name
        assert f"{COPYRIGHT_TAG}2026 The pregen-jax authors" in top, path.name
        if path.relative_to(ROOT).as_posix() in FOLLOWED:  # follows another upstream (checked below)
            assert named[0] == FOLLOWED[path.relative_to(ROOT).as_posix()][0], path.name
        elif path in ported:
            assert named[0] == licence, path.name
            assert COPYRIGHT_TAG in top and holder in top, path.name
            assert all(author in top for author in authors), path.name
            docstring = ast.get_docstring(ast.parse(path.read_text()))  # says how it was written
            assert re.search(r"[Tt]ranslat|follows?|taken from", docstring) and licence in docstring, path.name
        else:
            assert named[0] == "MIT", path.name


@pytest.mark.parametrize("relative", sorted(FOLLOWED))
def test_every_file_following_other_code_names_its_licence_and_credits_its_authors(relative):
    expression, holders, credited = FOLLOWED[relative]
    path = ROOT / relative
    top = header(path)
    assert SPDX_EXPRESSION.findall(top) == [expression], relative
    assert set(expression.split(" AND ")) <= set(EXPRESSION.split(" AND ")), relative
    named = HOLDERS.findall(top)
    assert OURS in named and all(holder in named for holder in holders), (relative, named)
    docstring = ast.get_docstring(ast.parse(path.read_text()))  # says how it was written, whom it follows
    assert re.search(r"[Tt]ranslat|follows?|[Tt]aken from", docstring), relative
    assert all(licence in docstring for licence in expression.split(" AND ")), relative
    assert all(author in top + docstring for author in credited), relative


def test_every_file_with_an_upstream_copyright_is_listed():
    """A file whose SPDX header names a holder other than this project follows someone's code: it is
    one of the two ported folders' files or listed in FOLLOWED (and so in docs/licensing.md)."""
    folders = {folder: holder for folder, (_, holder, _) in UPSTREAM.items()}
    found = []
    for path in sorted([*(ROOT / "pregen_jax").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]):
        others = [h for h in HOLDERS.findall(header(path)) if h != OURS]
        relative = path.relative_to(ROOT).as_posix()
        in_port = any(relative.startswith(f"pregen_jax/postgen/{folder}/") and all(holder in h for h in others)
                      for folder, holder in folders.items())
        if others and not in_port:
            found.append(relative)
    assert sorted(found) == sorted(FOLLOWED)


def test_licence_texts_are_the_full_texts():
    texts = {p.stem: p.read_text() for p in (ROOT / "LICENSES").glob("*.txt")}
    assert set(texts) == set(EXPRESSION.split(" AND "))
    views = texts["BSD-2-Clause-Views"]  # coco-caption's license.txt as it stands, its copyright line included
    assert views.startswith(f"Copyright (c) {COCO.replace('2015 ', '2015, ')}\nAll rights reserved.")
    assert "must retain the above copyright notice" in views and "of the FreeBSD Project." in views
    assert "Version 2, June 1991" in texts["GPL-2.0-or-later"] and "END OF TERMS AND CONDITIONS" in texts[
        "GPL-2.0-or-later"]
    assert "Version 2.1, February 1999" in texts["LGPL-2.1-only"] and "END OF TERMS AND CONDITIONS" in texts[
        "LGPL-2.1-only"]
    assert "Permission is hereby granted, free of charge" in texts["MIT"]
