"""Every progress bar obeys ``--no-progress`` and stays off where stderr is not a terminal
(issue 52: METEOR's paraphrase-table bar wrote a hundred carriage-return updates into a
``--no-progress`` log)."""
from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
from pathlib import Path

from pregen_jax import progress
from pregen_jax.postgen.meteor import paraphrase_build

PACKAGE = Path(progress.__file__).parent


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drawn(monkeypatch, stream) -> str:
    """What the paraphrase table's bar writes to ``stream`` (as stderr) for a 2 MB build."""
    monkeypatch.setattr(sys, "stderr", stream)
    update, close = paraphrase_build.progress_bar("METEOR paraphrase table")
    for done in range(0, 2_000_001, 100_000):
        update(done, 2_000_000)
    close()
    return stream.getvalue()


def test_the_paraphrase_bar_draws_on_a_terminal_only_and_never_under_no_progress(monkeypatch):
    monkeypatch.delenv(progress.NO_PROGRESS_ENV, raising=False)
    assert "METEOR paraphrase table" in _drawn(monkeypatch, _Terminal())  # the bar works at all
    assert _drawn(monkeypatch, io.StringIO()) == ""                         # a log file: nothing
    with progress.no_progress():
        assert _drawn(monkeypatch, _Terminal()) == ""                       # --no-progress: nothing
    assert progress.NO_PROGRESS_ENV not in os.environ                       # restored after


def test_the_rule(monkeypatch):
    monkeypatch.delenv(progress.NO_PROGRESS_ENV, raising=False)
    assert progress.bar_disabled(True) is None  # tqdm's own rule: on where the stream is a terminal
    assert progress.bar_disabled(False) is True
    with progress.no_progress(active=False):
        assert progress.NO_PROGRESS_ENV not in os.environ
    with progress.no_progress():
        assert progress.bar_disabled(True) is True
        # a worker process started meanwhile inherits it
        child = subprocess.run([sys.executable, "-c", "from pregen_jax.progress import bar_disabled; "
                                "print(bar_disabled(True))"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}, check=True)
        assert child.stdout.strip() == "True"


def _tqdm_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "tqdm":
            yield node


def test_every_bar_of_the_package_takes_the_rule():
    """Each ``tqdm(...)`` in the package passes ``disable=bar_disabled(...)``: a new bar that forgets
    it fails here, not in a user's log."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "tqdm" not in text:  # parsing only files that name it keeps this test cheap
            continue
        for call in _tqdm_calls(ast.parse(text)):
            disable = next((k.value for k in call.keywords if k.arg == "disable"), None)
            ok = isinstance(disable, ast.Call) and getattr(disable.func, "id", None) == "bar_disabled"
            calls.append((f"{path.relative_to(PACKAGE)}:{call.lineno}", ok))
    assert len(calls) >= 6, calls  # training, encoder, refprobs, generation, models, METEOR's table
    assert [where for where, ok in calls if not ok] == []
