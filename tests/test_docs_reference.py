"""The command reference (docs/reference/commands.md) says exactly what the argument parser has:
every subcommand and option of ``pregen_jax.cli.build_parser()`` documented, nothing documented
that the parser lacks; and every repository path the docs name exists."""
from __future__ import annotations

import argparse
import re

from pregen_jax import cli
from tests.conftest import ROOT
from tests.test_docs_examples import doc_files

REFERENCE = ROOT / "docs" / "reference" / "commands.md"
SECTION = re.compile(r"^## `pregen-search (?P<name>[\w-]+)`", re.M)
OPTION_ROW = re.compile(r"^\| `(?P<options>-[^`]*)`", re.M)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's name and parser; an alias maps to the same parser object."""
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser but -h/--help."""
    return {string for action in parser._actions for string in action.option_strings
            if not isinstance(action, argparse._HelpAction)}


def documented() -> dict[str, tuple[set[str], str]]:
    """Command -> (the options its section's table rows name, the section's text)."""
    text = REFERENCE.read_text(encoding="utf-8")
    starts = list(SECTION.finditer(text))
    sections = {}
    for match, after in zip(starts, [*starts[1:], None]):
        body = text[match.end():after.start() if after else None]
        names = set()
        for row in OPTION_ROW.finditer(body):  # `--out DIR`, `--a / --b`: every option the cell names
            names |= set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", row["options"]))
        sections[match["name"]] = (names, body)
    return sections


def test_every_subcommand_is_documented_and_nothing_else():
    parsers = subcommands(cli.build_parser())
    primary = {}
    for name, parser in parsers.items():
        primary.setdefault(id(parser), name)  # the first name a parser is registered under
    commands = set(primary.values())
    assert set(documented()) == commands, (
        f"undocumented: {sorted(commands - set(documented()))}; "
        f"documented but not in the parser: {sorted(set(documented()) - commands)}")
    for name, parser in parsers.items():
        if name not in commands:  # an alias: its command's section names it
            assert f"`{name}`" in documented()[primary[id(parser)]][1], f"alias {name} not mentioned"


# The options every subcommand takes (``commands.base.common_arguments``): documented once, in the
# page's opening list, and allowed (not needed) in a command's own table
COMMON = {"--no-progress"}


def test_every_option_is_documented_and_nothing_else():
    parsers = subcommands(cli.build_parser())
    for name, (names, _) in documented().items():
        have = options(parsers[name]) - COMMON
        names = names - COMMON
        assert names == have, (f"pregen-search {name}: undocumented {sorted(have - names)}; "
                               f"documented but not in the parser {sorted(names - have)}")


def test_the_common_options_are_documented_once_before_the_commands():
    text = REFERENCE.read_text(encoding="utf-8")
    opening = text[:SECTION.search(text).start()]
    assert all(f"`{option}`" in opening for option in COMMON)


PATH = re.compile(r"`((?:pregen_jax|tests|benchmarks|experiments|search|scripts|docs)/[\w./-]*?)`")
READMES = ["README.md", "search/README.md", "experiments/README.md", "benchmarks/README.md"]
MODULE = re.compile(r"`((?:pipeline|ranking|postgen|reo|captioning|selection|prediction|external|evaluation|meta|"
                    r"datasets|tiers|training|commands)/[\w./-]+\.py)`")
SCRIPT = re.compile(r"python3? ((?:experiments|benchmarks)/[\w./-]+\.py)")


def test_every_repository_path_the_docs_name_exists():
    """A path in backquotes (``pregen_jax/pipeline/flow.py``, ``experiments/reo_shapes/``) must be
    in the repository: the docs drift when code moves, and this says where."""
    missing = []
    for path in doc_files():
        for match in PATH.finditer(path.read_text(encoding="utf-8")):
            named = match[1].split("::")[0]
            if "*" in named or "<" in named:
                continue
            if not (ROOT / named).exists():
                missing.append(f"{path.relative_to(ROOT)}: {named}")
    for path in [*doc_files(), *(ROOT / name for name in READMES), *ROOT.glob("experiments/*/README.md")]:
        text = path.read_text(encoding="utf-8")
        for match in SCRIPT.finditer(text):  # the commands of results
            if not (ROOT / match[1]).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {match[1]}")
        for match in MODULE.finditer(text):  # `reo/scores.py`: a module of the package, named short
            if not (ROOT / "pregen_jax" / match[1]).exists():
                missing.append(f"{path.relative_to(ROOT)}: pregen_jax/{match[1]}")
    assert not missing, missing


LINK = re.compile(r"\]\((?!https?:|mailto:|#)(?P<target>[^)#\s]+)(?:#(?P<anchor>[^)\s]+))?\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_of_the_readmes_resolve():
    """Relative links of the READMEs (mkdocs checks the docs/ pages' own) point at files that
    exist, and at headings that exist there."""
    broken = []
    for name in READMES:
        path = ROOT / name
        for match in LINK.finditer(path.read_text(encoding="utf-8")):
            target = (path.parent / match["target"]).resolve()
            if not target.exists():
                broken.append(f"{name}: {match['target']}")
            elif match["anchor"] and target.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
                if match["anchor"] not in {slug(h) for h in headings}:
                    broken.append(f"{name}: {match['target']}#{match['anchor']}")
    assert not broken, broken


PACKAGES = ("postgen", "tiers", "ranking", "captioning", "datasets", "pipeline", "selection", "prediction",
            "external", "meta", "refprobs", "RefProbs")
NAME = re.compile(r"`(?:pregen_jax\.)?((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")


def resolve(dotted: str) -> bool:
    """Whether ``pregen_jax.<dotted>`` names a module or an attribute (``postgen.score``,
    ``RefProbs.from_log_probs``, ``pipeline.flow.STAGES``)."""
    import importlib
    obj = importlib.import_module("pregen_jax")
    for part in dotted.split("."):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
        except (ImportError, AttributeError, TypeError):
            return False
    return True


def test_every_package_name_the_docs_write_exists():
    """A function or module the prose names in backquotes (`postgen.metric_names()`,
    `RefProbs.from_log_probs`) exists: names drift when code is renamed, and the code blocks alone
    would not catch the prose."""
    missing = sorted({f"{path.relative_to(ROOT)}: {match[1]}" for path in doc_files()
                      for match in NAME.finditer(path.read_text(encoding="utf-8")) if not resolve(match[1])})
    assert not missing, missing
