#!/usr/bin/env bash
# The README's test command: install the package with its test extras, then run the tests
# (slow tests excluded; run them with: python -m pytest -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1; then
  echo "java not found: installing default-jre-headless (METEOR needs it)"
  (apt-get install -y -q default-jre-headless >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q default-jre-headless >/dev/null)) || echo "could not install java; METEOR tests will skip"
fi
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
python3 -m pytest -q "$@"
