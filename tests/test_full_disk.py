"""A run that fails after creating ``--out`` leaves nothing behind, on a filesystem that is really
full (issue 52: ``evaluate --out`` on a full disk left the folder holding only its marker).

The full filesystem is a 4 KiB tmpfs mounted in a mount namespace of the test's own (``unshare``:
root's ``--mount``, else a user namespace's), so nothing outside the test sees it; where neither
is permitted the test skips, naming why."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pregen_jax

ROOT = Path(pregen_jax.__file__).parent.parent


def _namespace() -> list[str] | None:
    """The ``unshare`` prefix that can mount a tmpfs here, or None."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        probe = subprocess.run([*prefix, "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


SCRIPT = r"""
set -u
mount -t tmpfs -o size=4k tmpfs "$DISK"
"$PY" -m pregen_jax.cli evaluate --references "$INPUTS/refs.json" --captions "$INPUTS/res.json" \
    --metrics CIDEr --tokenizer alnum-lower --out "$DISK/runs/out" >/dev/null 2>"$INPUTS/stderr"
echo "evaluate exit $?"
echo "left: $(ls -A "$DISK")"
head -c 4096 /dev/zero > "$DISK/filler" 2>/dev/null  # now even the marker cannot be written
"$PY" -c "
import sys
from pregen_jax import io
try:
    with io.staged_folder(sys.argv[1]) as staging:
        (staging / 'x').write_text('x')
except OSError as err:
    print('staged_folder:', err.strerror)
" "$DISK/runs/out"
echo "left: $(ls -A "$DISK")"
"""


def test_a_full_disk_leaves_no_out_folder(tmp_path):
    prefix = _namespace()
    if prefix is None:
        pytest.skip("no mount namespace: unshare cannot mount a tmpfs here (neither as root nor in a user namespace)")
    words = "a dog cat runs sits on the grass mat red blue".split()
    images = [{"id": k, "file_name": f"{k}.jpg"} for k in range(20)]
    references = [{"image_id": k, "id": 10 * k + j, "caption": " ".join(words[(k + j + n) % 11] for n in range(6))}
                  for k in range(20) for j in range(3)]
    (tmp_path / "refs.json").write_text(json.dumps({"images": images, "annotations": references}))
    (tmp_path / "res.json").write_text(json.dumps([{"image_id": k, "caption": " ".join(words[(2 * k + n) % 11]
                                                                                      for n in range(6))}
                                                   for k in range(20)]))
    (tmp_path / "disk").mkdir()
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "PYTHONPATH": str(ROOT), "PY": sys.executable,
           "DISK": str(tmp_path / "disk"), "INPUTS": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([*prefix, "sh", "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    stderr = (tmp_path / "stderr").read_text()
    # the outputs do not fit: one line, exit 2, and neither --out nor the folder above it created is left
    assert "evaluate exit 2" in lines, (done.stdout, done.stderr, stderr)
    assert "pregen-search evaluate: error: [Errno 28] No space left on device" in stderr
    assert lines[1] == "left: ", done.stdout
    # not even the marker fits: the same
    assert "staged_folder: No space left on device" in lines, done.stdout
    assert lines[-1] == "left: filler", done.stdout
    assert list((tmp_path / "disk").iterdir()) == []  # the tmpfs was the namespace's alone
