#!/usr/bin/env bash
# The README's test command: install the package with its test and java extras at the versions
# tested (constraints.txt: the lock; scripts/lock.sh moves it), check the house rules
# (ruff: lint and import order; lint-imports: the package's layers and no import circles;
# deptry: every third-party import declared, nothing declared unused; all three configured in
# pyproject.toml), then run the tests (slow tests excluded; run them with:
# python -m pytest -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test,java]"
python3 -m ruff check .
lint-imports --no-cache
deptry .
reuse lint -q  # every file names its licence and copyright (REUSE.toml, LICENSES/; docs/licensing.md)
workers="${PYTEST_WORKERS:-$(python3 -c 'import os; print(min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))')}"
python3 -m pytest -q -n "$workers" --dist loadfile "$@"
