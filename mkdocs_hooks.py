"""mkdocs hooks of the documentation site (mkdocs.yml: ``hooks``).

Docstrings are prose (``docstring_style: null``), so Markdown reads two things in them as
reference-style links: nested indexing written as shapes, ``log_probs[i][r]``, and subscripts
inside doctest lines, ``table["candidate"][selection.race.picked]``. mkdocs-autorefs then warns
that no page defines ``r`` or ``selection.race.picked``, and a strict build fails. Neither is a
cross-reference, so only those warnings are dropped: a one-letter index, or a target that a
doctest line (``>>>`` or ``...``) of the docstring the warning names contains. Every other
unresolved reference still fails the build.

The API pages (docs/reference/api/*.md) hold their names twice: the ``:::`` line, which
mkdocstrings renders on the site, and a plain-text copy for reading them without the site
(scripts/api_pages.py writes it between two markers); the site leaves the copy out.
"""
import logging
import re
from pathlib import Path

_UNRESOLVED = re.compile(r"from (?P<file>\S+?):(?P<line>\d+): .*Could not find cross-reference target '(?P<target>[^']*)'$")
_DOCSTRING_LINES = 200  # how far past the docstring's first line a doctest may sit


def _in_doctest(file: str, line: int, target: str) -> bool:
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()[line - 1:line - 1 + _DOCSTRING_LINES]
    except (OSError, UnicodeDecodeError):
        return False
    return any(row.lstrip().startswith((">>>", "...")) and target in row for row in lines)


class _NotALink(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        match = _UNRESOLVED.search(record.getMessage())
        if match is None:
            return True
        target = match["target"]
        return not (re.fullmatch(r"[a-z]", target) or _in_doctest(match["file"], int(match["line"]), target))


def on_startup(command, dirty) -> None:
    # the plugin's loggers (one per module) are created on import: filter the named one of each
    for name in ("plugin", "references", "backlinks"):
        logging.getLogger(f"mkdocs.plugins.mkdocs_autorefs._internal.{name}").addFilter(_NotALink())


_API_COPY = re.compile(r"<!-- api: written by scripts/api_pages\.py.*?<!-- api: end -->", re.S)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """An API page without its plain-text copy (the site renders the ``:::`` line)."""
    return _API_COPY.sub("", markdown)
