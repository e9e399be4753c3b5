#!/usr/bin/env bash
# Move the lock: resolve pyproject.toml's ranges afresh (newest versions that fit) in a new virtual
# environment made in a temporary folder (removed afterwards), with every extra the tests and the
# docs need, and write what pip installed to constraints.txt (pregen-jax itself left out). The
# README's two commands (scripts/demo.sh, scripts/test.sh) and .ci/run install with
# `-c constraints.txt`, so the versions they get move only here. Moving the lock is a commit of its
# own that states how the demo's numbers moved (docs/development.md: "The lock").
set -euo pipefail
cd "$(dirname "$0")/.."
venv_dir="$(mktemp -d "${TMPDIR:-/tmp}/pregen-lock.XXXXXX")"
trap 'rm -rf "$venv_dir"' EXIT
python3 -m venv "$venv_dir/venv"
"$venv_dir/venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test,java,docs]"
{
    echo "# The versions tested: scripts/lock.sh wrote this from a new virtual environment with"
    echo "# pip install -e \".[test,java,docs]\" ($("$venv_dir/venv/bin/python" --version), $(uname -sm))."
    echo "# Installed with: pip install -c constraints.txt -e \".[test,java]\". Move it with scripts/lock.sh."
    # --all: setuptools too (the test extra's: tests/test_wheel.py builds the wheel with it), pip itself left out
    "$venv_dir/venv/bin/python" -m pip freeze --all --exclude-editable --disable-pip-version-check | grep -vi '^pregen[-_]jax' | grep -vi '^pip==' | LC_ALL=C sort -f
} > constraints.txt.new
mv constraints.txt.new constraints.txt
echo "lock: wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages); git diff constraints.txt shows what moved"
