"""What the README and the docs' front page both say, said the same (issue 63): the locked install
line, the demo's time; and the demo's size as its script's comment, ``demo --help`` and its config say."""
from __future__ import annotations

import re
import tomllib

from pregen_jax.commands import demo
from tests.conftest import ROOT

INSTALL = 'pip install -c constraints.txt -e ".[java]"'
DEMO_TIME = re.compile(r"(\d+) to (\d+) minutes\s+on 2 quiet CPU cores, the install aside \(median (\d+) s of three "
                       r"runs, (\d+)-(\d+) s, on ([^)]+)\)")


def _pages() -> dict[str, str]:
    return {name: " ".join((ROOT / name).read_text(encoding="utf-8").split()) for name in ("README.md", "docs/index.md")}


def test_the_readme_and_the_front_page_install_the_same_locked_way():
    for name, text in _pages().items():
        assert INSTALL in text, name
        assert 'pip install -e ".[java]"' not in text, name  # no unlocked install line beside it


def test_the_demo_time_is_the_same_and_its_range_holds_its_median():
    said = {name: DEMO_TIME.search(" ".join(text.split())) for name, text in _pages().items()}
    assert all(said.values()), said
    first, *others = [m.groups() for m in said.values()]
    assert all(other == first for other in others), said
    low, high, median, fastest, slowest = map(int, first[:5])
    assert 60 * low <= median <= 60 * high and fastest <= median <= slowest
    assert first[5].strip()  # the host named


def test_the_demo_script_its_help_and_its_config_give_the_same_size():
    config = tomllib.loads((ROOT / "pregen_jax" / "pipeline" / "demo" / "demo.toml").read_text(encoding="utf-8"))
    size = f"{len(config['models']['architectures'])} architectures x {config['models']['runs']} runs"
    script = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    assert re.findall(r"\d+ architectures x \d+ runs", script) == [size]
    assert size in demo.COMMAND.help and size in demo.__doc__
