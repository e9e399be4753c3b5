"""Write each API reference page's readable part: the signatures and docstrings of what its module
exports, as plain Markdown, so that docs/reference/api/*.md read without building the site.

Each page keeps its ``::: module`` line (the site renders it with mkdocstrings); between the two
markers below this script writes the same names as text, which the site leaves out
(mkdocs_hooks.py). ``python3 scripts/api_pages.py`` rewrites the pages; ``--check`` fails where a
page is not current (tests/test_docs_site.py runs it).
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "reference" / "api"
START = "<!-- api: written by scripts/api_pages.py from the docstrings; the site shows the ::: line instead -->"
END = "<!-- api: end -->"
DIRECTIVE = re.compile(r"^::: (?P<module>[\w.]+)$", re.M)


def public_names(module) -> list[str]:
    """The names a module exports: its ``__all__``, else its public functions and classes defined there."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and
                  (inspect.isfunction(v) or inspect.isclass(v)) and getattr(v, "__module__", "") == module.__name__)


def signature_of(obj) -> str:
    """``(args) -> result`` of a function or a class's constructor ("" where there is none to show);
    a default that is not a short literal shows as its name or ``...`` (no memory addresses, no hashes)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = [p.replace(default=_Shown(p.default)) if p.default is not inspect.Parameter.empty else p
              for p in signature.parameters.values()]
    return str(signature.replace(parameters=params))


class _Shown:
    """A default value as the page shows it."""

    def __init__(self, value):
        plain = value is None or isinstance(value, (bool, int, float, str)) or (
            isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value))
        text = repr(value) if plain else getattr(value, "__name__", "...")
        self.text = text if len(text) <= 60 else "..."

    def __repr__(self) -> str:
        return self.text


def entry(name: str, obj) -> list[str]:
    """One exported name as Markdown: a heading, its signature and its docstring in a text block."""
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
    head = f"{name}{signature_of(obj)}" if kind != "value" else f"{name} = {_Shown(obj)!r}"
    doc = inspect.getdoc(obj) if kind != "value" else ""
    lines = [f"### {name}", "", "```text", f"{kind} {head}"]
    if doc:
        lines += ["", *doc.splitlines()]
    if kind == "class":
        for method, member in vars(obj).items():
            if method.startswith("_") or not (inspect.isfunction(member) or isinstance(member, (classmethod, property))):
                continue
            target = member.fget if isinstance(member, property) else getattr(obj, method)
            first = (inspect.getdoc(target) or "").split("\n\n")[0].replace("\n", " ")
            sig = "" if isinstance(member, property) else signature_of(target)
            lines += ["", f"  .{method}{sig}", *([f"      {first}"] if first else [])]
    return [*lines, "```", ""]


def rendered(module_name: str) -> str:
    """The readable part of the page of ``module_name``, between the markers."""
    module = importlib.import_module(module_name)
    lines = [START, "", f"## `{module_name}`", ""]
    doc = inspect.getdoc(module)
    if doc:
        lines += ["```text", *doc.splitlines(), "```", ""]
    for name in public_names(module):
        lines += entry(name, getattr(module, name))
    return "\n".join([*lines, END])


def updated(text: str) -> str:
    """A page's text with its readable part written afresh (after its ``:::`` line)."""
    match = DIRECTIVE.search(text)
    if match is None:
        raise ValueError("no '::: module' line")
    head = text[:match.end()]
    return f"{head}\n\n{rendered(match['module'])}\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail (exit 1) where a page is not current")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    stale = []
    for page in sorted(PAGES.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        new = updated(text)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"not current (run python3 scripts/api_pages.py): {', '.join(map(str, stale))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
