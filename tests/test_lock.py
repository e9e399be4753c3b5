"""The lock (constraints.txt): the scripts install with it, and ``doctor`` compares it with what is installed."""
import re
from pathlib import Path

from pregen_jax import cli
from pregen_jax.commands import lockfile

ROOT = Path(__file__).resolve().parents[1]


def test_the_lock_pins_every_package_once_and_not_the_package_itself():
    locked = lockfile.read_lock((ROOT / "constraints.txt").read_text())
    lines = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert len(locked) == len(lines) and all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", line) for line in lines)
    assert "pregen-jax" not in locked
    assert {"jax", "jaxlib", "flax", "numpy", "numba", "scipy", "pycocoevalcap", "pytest", "mkdocs"} <= set(locked)


def test_the_readme_commands_and_ci_install_with_the_lock():
    for script in ("scripts/test.sh", "scripts/demo.sh"):
        installs = [line for line in (ROOT / script).read_text().splitlines() if "pip install" in line]
        assert installs and all("-c constraints.txt" in line for line in installs), script
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_read_lock_and_lock_differences():
    text = "# a comment\n\nFlax_Extra==1.0  # why\njax==0.10.2\nnumpy==2.4.6 ; python_version >= '3.11'\nonly-locked==3\n"
    locked = lockfile.read_lock(text)
    assert locked == {"flax-extra": "1.0", "jax": "0.10.2", "numpy": "2.4.6", "only-locked": "3"}
    differ, missing = lockfile.lock_differences(locked, {"flax-extra": "1.0", "jax": "0.10.3", "numpy": "2.4.6"})
    assert differ == ["jax 0.10.3 (locked 0.10.2)"] and missing == ["only-locked"]


def test_the_lock_is_found_beside_a_checkout_only(tmp_path):
    package = tmp_path / "pregen_jax"
    package.mkdir()
    assert lockfile.checkout_lock(package) is None  # a wheel: site-packages has no lock
    (tmp_path / "constraints.txt").write_text("jax==0.0.1\n")
    assert lockfile.checkout_lock(package) is None  # a stray file, not a checkout
    (tmp_path / "pyproject.toml").write_text("")
    assert lockfile.checkout_lock(package) == tmp_path / "constraints.txt"
    assert lockfile.lock_line(tmp_path / "constraints.txt").endswith("1 differ: jax " + __import__("jax").__version__
                                                                     + " (locked 0.0.1)")
    assert "not available" in lockfile.lock_line(None) or lockfile.checkout_lock() == ROOT / "constraints.txt"


def test_doctor_says_whether_the_installed_versions_are_the_locked_ones(capsys):
    assert cli.main(["doctor"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lock: ")]
    assert str(ROOT / "constraints.txt") in line and re.search(r"installed versions match|\d+ differ: ", line)
