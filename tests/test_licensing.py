"""The package says what its code is (docs/licensing.md): the PTB and METEOR ports name the
licences of the sources they were translated from, and the package's SPDX expression names every
licence a file carries. ``reuse lint`` (scripts/test.sh) checks the whole repository; these tests
check what it cannot: which licence the ported files carry, whom they credit, and that the
expression the wheel's metadata gives is the one pyproject.toml declares."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib

import pytest

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXPRESSION = "MIT AND GPL-2.0-or-later AND LGPL-2.1-only"
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
# the tags, written so that `reuse lint` does not read them as this file's own
LICENSE_TAG, COPYRIGHT_TAG = "SPDX-" "License-Identifier: ", "SPDX-" "FileCopyrightText: "
SPDX = re.compile(f"^# {LICENSE_TAG}" r"(?P<id>\S+)$", re.M)


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
        if path in ported:
            assert named[0] == licence, path.name
            assert COPYRIGHT_TAG in top and holder in top, path.name
            assert all(author in top for author in authors), path.name
            docstring = ast.get_docstring(ast.parse(path.read_text()))  # says how it was written
            assert re.search(r"[Tt]ranslat|follows?|taken from", docstring) and licence in docstring, path.name
        else:
            assert named[0] == "MIT", path.name


def test_licence_texts_are_the_full_texts():
    texts = {p.stem: p.read_text() for p in (ROOT / "LICENSES").glob("*.txt")}
    assert set(texts) == set(EXPRESSION.split(" AND "))
    assert "Version 2, June 1991" in texts["GPL-2.0-or-later"] and "END OF TERMS AND CONDITIONS" in texts[
        "GPL-2.0-or-later"]
    assert "Version 2.1, February 1999" in texts["LGPL-2.1-only"] and "END OF TERMS AND CONDITIONS" in texts[
        "LGPL-2.1-only"]
    assert "Permission is hereby granted, free of charge" in texts["MIT"]
