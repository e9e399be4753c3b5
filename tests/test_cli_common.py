"""Every subcommand takes the common options (``--no-progress``) with one meaning: the parser walked,
each subcommand (aliases too) parsing the flag with the shared help; and under it the progress
lines a command prints (mutt's, judgments', unit-tests') go nowhere."""
from __future__ import annotations

import argparse

import pytest

from pregen_jax import cli
from pregen_jax.commands import base
from tests.test_docs_reference import subcommands


def _required(parser: argparse.ArgumentParser) -> list[str]:
    """Values for a subcommand's required options, enough for argparse to parse (nothing runs)."""
    needed = [a for a in parser._actions if a.required and a.option_strings]
    needed += [group._group_actions[0] for group in parser._mutually_exclusive_groups if group.required]
    return [word for action in needed
            for word in (action.option_strings[0], *(["x"] if action.nargs in (None, "+") else []))]


def test_every_subcommand_accepts_no_progress_with_one_meaning():
    parser = cli.build_parser()
    children = subcommands(parser)
    assert len(children) >= 12  # the walk found the subcommands at all
    for name, child in children.items():
        action = child._option_string_actions.get("--no-progress")
        assert action is not None, f"pregen-search {name} lacks --no-progress"
        assert action.help == base.NO_PROGRESS_HELP, f"pregen-search {name}: --no-progress means something else"
        args = parser.parse_args([name, *_required(child), "--no-progress"])
        assert args.no_progress is True
        assert parser.parse_args([name, *_required(child)]).no_progress is False


def test_a_new_subcommand_gets_it_without_asking(monkeypatch):
    def arguments(parser):
        parser.add_argument("--out", required=True)
    command = base.Command("brand-new", "a subcommand that names no common option", arguments, lambda args: 0)
    module = type(cli)("brand_new")
    module.COMMAND = command
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, module))
    assert cli.build_parser().parse_args(["brand-new", "--out", "o", "--no-progress"]).no_progress is True


@pytest.mark.parametrize("flag, printer", [([], print), (["--no-progress"], None)])
def test_progress_lines_obey_the_flag(flag, printer):
    args = cli.build_parser().parse_args(["mutt", "--out", "o", *flag])
    assert base.progress_lines(args) is printer
