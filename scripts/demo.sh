#!/usr/bin/env bash
# The README's main command: install pregen-jax, then run the demo search end to end on the
# built-in dataset (4 architectures x 3 runs). Extra arguments go to `pregen-search demo`,
# e.g. `bash scripts/demo.sh --quick --out runs/quick`. Rerunning resumes from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1; then
  echo "java not found: installing default-jre-headless (METEOR needs it)"
  (apt-get install -y -q default-jre-headless >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q default-jre-headless >/dev/null)) || echo "could not install java; METEOR will be reported unavailable"
fi
python3 -m pip install -q --disable-pip-version-check -e .
if [[ " $* " != *" --out "* ]]; then set -- --out runs/demo "$@"; fi
exec pregen-search demo "$@"
