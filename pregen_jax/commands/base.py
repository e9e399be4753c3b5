"""What a subcommand is (``Command``) and the argument types several of them share."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Callable
from pathlib import Path

# The words outputs use (strata, tier space, prior_rank, assist, ...): docs/glossary.md, which the
# package carries (pregen_jax/glossary.md links to it in a checkout; a wheel holds the page itself),
# so the path printed exists wherever the package is installed
GLOSSARY = Path(__file__).resolve().parents[1] / "glossary.md"
WORDS = f"words: {GLOSSARY}"  # the last line a command's output ends with


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand of ``pregen-search``.

    name: what the user types; help: the line ``pregen-search --help`` shows; arguments: adds the
    options to the subcommand's parser; run: (parsed arguments) -> exit code, raising
    ``ValueError``/``OSError`` for bad input (the CLI prints it as one line, exit code 2);
    aliases: older names that still work (each run under an alias says so, see ``renamed``).
    """

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    aliases: tuple[str, ...] = ()


NO_PROGRESS_HELP = ("no progress bars (the worker processes' included) and no progress lines (one per model, "
                    "metric or step); the answer, warnings and errors are printed as ever")


def common_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every subcommand takes, with one meaning everywhere (``cli.build_parser`` adds
    them to each, so a new subcommand has them without asking): ``--no-progress``, which ``cli``
    applies to every bar (``progress.no_progress``) and a command to its progress lines
    (``progress_lines``)."""
    if "--no-progress" not in parser._option_string_actions:  # a command that still adds its own keeps it
        parser.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)


def progress_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where a command's progress lines go: printed, or nowhere under ``--no-progress``."""
    return None if getattr(args, "no_progress", False) else print


def renamed(args: argparse.Namespace, name: str) -> None:
    """Say once, on stderr, that the command was run under an old name kept for one version."""
    import sys
    if args.command != name:
        print(f"pregen-search {args.command}: renamed to `pregen-search {name}`; the old name `{args.command}` "
              "works for this version only", file=sys.stderr)


@contextlib.contextmanager
def warnings_as_lines():
    """Warnings the library gives inside (a captions file that looks wrong, a corpus line that is
    not an image) printed after it as ``warning: ...`` lines on stderr, each once (not when it
    fails: an error is one line)."""
    import sys
    import warnings

    from ..processes import ignore_fork_warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ignore_fork_warning()
        yield
    for message in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
        print(f"warning: {message}", file=sys.stderr)


def check_caption_files(paths, option: str) -> None:
    """Each captions file read and its form checked (``captionfiles.parse_captions``), before a
    command opens a search, loads a model or starts a JVM; which images they caption is checked
    once the references are read."""
    from pathlib import Path

    from ..captionfiles import parse_captions
    for path in paths:
        if not Path(path).is_file():
            raise ValueError(f"{option}: {path}: file not found")
        parse_captions(path)


def seed(text: str) -> int:
    """argparse type: a seed (0..settings.MAX_SEED)."""
    from ..settings import MAX_SEED
    if not text.isdigit() or int(text) > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (an integer 0..{MAX_SEED})")
    return int(text)


def workers(text: str) -> int:
    """argparse type: a number of post-gen worker processes (0: none)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a number of workers (0, 1, 2, ...): {text!r}")
    return int(text)


def trainers(text: str) -> int:
    """argparse type: a number of models trained at once (at least 1)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a number of trainers (1, 2, ...): {text!r}")
    return int(text)
