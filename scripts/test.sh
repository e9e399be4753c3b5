#!/usr/bin/env bash
# The README's test command: install the package with its test extras, then run the tests
# (slow tests excluded; run them with: python -m pytest -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_java.sh
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
python3 -m pytest -q "$@"
