"""Every code block of README.md and docs/ runs as written, or says why it does not.

The convention (docs/development.md, "Examples that run"):

- Each Markdown file is one session: its blocks run in order, in a fresh temporary folder and a
  fresh Python process, as a reader would type them in one terminal and one Python interpreter
  (Python blocks share one namespace per file).
- ```` ```python ````: executed. ```` ```toml ```` whose first line is ``# NAME``: written to the
  file NAME (a config the next blocks read). ```` ```bash ````: each command line runs;
  ``pregen-search ...`` runs in this process (``cli.main``) and must exit 0.
- A block that must not run in the tests (the full demo, an install, a cluster script) has the
  line ``<!-- not tested: REASON -->`` just before it; such blocks are never collected, and the
  reason must say why (``test_every_untested_block_gives_a_reason``). Text blocks (```` ```text ````,
  output excerpts, layouts) are not code.
- Time budget: a file whose blocks take more than about a minute on an idle 2-core machine
  marks its longest block as not tested (the budget is a rule for authors, not a timed
  assertion: timings here depend on what else the machine runs).
"""
from __future__ import annotations

import dataclasses
import linecache
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pregen_jax import cli
from tests.conftest import ROOT

RUN = ("python", "bash", "toml")  # languages whose blocks run; every other fence is text
NOT_TESTED = re.compile(r"<!--\s*not tested:\s*(?P<why>.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.S | re.M)


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block: its file, the line its fence opens on, language and code, and why
    it is not tested (None: it runs)."""

    path: Path
    line: int
    language: str
    code: str
    not_tested: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the not-tested reason of the line before it."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_TESTED.search(before)
        code = "\n".join(row.removeprefix(match["indent"]) for row in match["code"].splitlines())
        found.append(Block(path, line, match["lang"], code, marker["why"] if marker else None))
    return found


def runnable(path: Path) -> list[Block]:
    return [block for block in blocks(path) if block.language in RUN and block.not_tested is None]


def command_lines(code: str) -> list[list[str]]:
    """The commands of a shell block: one per line, a trailing backslash continues it."""
    joined = re.sub(r"\\\n", " ", code)
    return [argv for argv in (shlex.split(line, comments=True) for line in joined.splitlines()) if argv]


def run_block(block: Block, namespace: dict, capsys=None) -> None:
    """Run one block as a reader would: Python in the file's namespace, TOML saved under the name
    its first line gives, each shell line as that command."""
    if block.language == "python":
        # padded so that a traceback's line numbers are the file's, and its source shown
        code = "\n" * block.line + block.code
        name = str(block.path.relative_to(ROOT))
        linecache.cache[name] = (len(code), None, block.path.read_text(encoding="utf-8").splitlines(True), name)
        exec(compile(code, name, "exec"), namespace)
    elif block.language == "toml":
        first = block.code.splitlines()[0]
        assert first.startswith("# "), f"{block.where}: a TOML block starts with '# FILE NAME' (the file it is)"
        Path(first[2:].strip()).write_text(block.code, encoding="utf-8")
    else:
        for argv in command_lines(block.code):
            assert argv[0] == "pregen-search", (
                f"{block.where}: only pregen-search lines run in the tests; mark the block "
                f"'<!-- not tested: REASON -->' if it must not run ({shlex.join(argv)})")
            code = cli.main(argv[1:])
            if code != 0:
                err = capsys.readouterr().err if capsys is not None else "(its stderr is above)"
                raise AssertionError(f"{block.where}: {shlex.join(argv)}: exit {code}: {err}")


# Pages whose blocks another test runs, with checks of what they make: not run twice.
RUN_ELSEWHERE = {"docs/guides/bring-your-own-model.md": "tests/test_jobs.py"}


def _files_with_code() -> list[Path]:
    return [path for path in doc_files() if runnable(path) and str(path.relative_to(ROOT)) not in RUN_ELSEWHERE]


def run_file(path: Path) -> None:
    """Run every runnable block of ``path`` in order, in the current folder and this interpreter."""
    namespace = {"__name__": "__main__"}
    for block in runnable(path):
        run_block(block, namespace)


@pytest.mark.parametrize("path", _files_with_code(), ids=lambda path: str(path.relative_to(ROOT)))
def test_examples_run_as_written(path, tmp_path):
    """Each file in a fresh interpreter, as a reader would start one: what a page registers (a tier
    function, a metric) or switches on (float64) stays out of the other tests."""
    code = f"from tests.test_docs_examples import run_file; from pathlib import Path; run_file(Path({str(path)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, f"{path.relative_to(ROOT)}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


def test_every_untested_block_gives_a_reason():
    for path in doc_files():
        for block in blocks(path):
            if block.not_tested is not None:
                assert len(block.not_tested.split()) >= 3, f"{block.where}: say why it is not tested"
                assert block.language in RUN, f"{block.where}: a text block needs no marker"


def test_no_indented_code_blocks():
    """An indented block is code that no test would run: write it fenced (and marked if it must
    not run)."""
    for path in doc_files():
        text = FENCE.sub("", path.read_text(encoding="utf-8"))
        indented = re.findall(r"\n\n((?: {4}|\t)\S[^\n]*)", text)
        assert not indented, f"{path.relative_to(ROOT)}: indented code block {indented[0]!r}"


def test_the_collector_reads_markers_and_commands(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("Intro.\n\n```python\nx = 1\n```\n\n<!-- not tested: the full demo, minutes -->\n"
                   "```bash\nbash scripts/demo.sh\n```\n\n  ```text\n  out\n  ```\n")
    found = blocks(doc)
    assert [(b.language, b.line, b.not_tested) for b in found] == [
        ("python", 3, None), ("bash", 8, "the full demo, minutes"), ("text", 12, None)]
    assert command_lines("pregen-search run --config a.toml \\\n  --out b  # comment\n\n") == [
        ["pregen-search", "run", "--config", "a.toml", "--out", "b"]]
