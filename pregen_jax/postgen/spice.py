"""SPICE 1.0 where Stanford CoreNLP 3.6.0 jars are present; unavailable (one clear line) elsewhere.

pycocoevalcap ships spice-1.0.jar but fetches the CoreNLP 3.6.0 jars from the internet on first
use, which this project never does. Point ``PREGEN_JAX_CORENLP`` (or the ``corenlp_dir``
argument) at a folder holding ``stanford-corenlp-3.6.0.jar`` and
``stanford-corenlp-3.6.0-models.jar``; pycocoevalcap's own ``spice/lib`` is also searched.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .base import PostgenMetric, PostgenOptions, check_inputs

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")


def _spice_dir() -> Path:
    import pycocoevalcap.spice.spice as spice_module  # pycocoevalcap is a namespace package
    return Path(spice_module.__file__).parent


def find_corenlp(corenlp_dir=None) -> Path | None:
    candidates = [corenlp_dir, os.environ.get("PREGEN_JAX_CORENLP"), _spice_dir() / "lib"]
    for folder in candidates:
        if folder and all((Path(folder) / jar).is_file() for jar in CORENLP_JARS):
            return Path(folder)
    return None


def availability(options: PostgenOptions | None = None) -> tuple[bool, str]:
    """Whether SPICE runs here: Java present, the CoreNLP jars found, and one caption really scored."""
    if not shutil.which("java"):
        return False, "java not found on PATH"
    folder = find_corenlp(options.corenlp_dir if options else None)
    if folder is None:
        return False, ("Stanford CoreNLP 3.6.0 jars not found (set PREGEN_JAX_CORENLP to a folder with "
                       f"{' and '.join(CORENLP_JARS)}; no registry here serves them)")
    return _probe(str(folder), *(Path(folder, jar).stat().st_mtime_ns for jar in CORENLP_JARS))


@functools.lru_cache(maxsize=4)
def _probe(folder: str, *mtimes) -> tuple[bool, str]:
    """Score one caption with the jars (once per process and jar folder): broken jars fail here, not
    after the work is done."""
    try:
        _run_spice(Path(folder), {"probe": ["a dog runs on the grass"]}, {"probe": ["a dog runs"]})
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as err:
        return False, f"SPICE does not run with the jars in {folder}: {str(err).splitlines()[0][:200]}"
    return True, f"CoreNLP jars in {folder} (one caption scored)"


def depends_on(options: PostgenOptions) -> dict:
    """What changes SPICE's scores: its jar and the CoreNLP jars (sha256)."""
    from .registry import file_hash
    folder = find_corenlp(options.corenlp_dir or None)
    jars = [_spice_dir() / "spice-1.0.jar", *((folder / jar) for jar in CORENLP_JARS if folder)]
    return {"jars": [file_hash(str(jar)) for jar in jars]}


def _run_spice(corenlp: Path, gts: dict, res: dict) -> list[float]:
    """Per-image SPICE F of (gts, res), in ``gts`` order, from one JVM run over all of them."""
    ids = list(gts)
    spice = _spice_dir()
    with tempfile.TemporaryDirectory() as tmp:
        in_file, out_file = Path(tmp) / "in.json", Path(tmp) / "out.json"
        in_file.write_text(json.dumps([{"image_id": str(i), "test": res[i][0], "refs": gts[i]} for i in ids]))
        classpath = os.pathsep.join([str(spice / "spice-1.0.jar"), str(spice / "lib" / "*"), str(corenlp / "*")])
        subprocess.run(["java", "-Xmx8G", "-cp", classpath, "edu.anu.spice.SpiceScorer", str(in_file),
                        "-out", str(out_file), "-subset", "-silent"], check=True, cwd=spice,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        results = {r["image_id"]: r["scores"]["All"]["f"] for r in json.loads(out_file.read_text())}
    return [float(results[str(i)]) for i in ids]


class SPICE(PostgenMetric):
    """SPICE F-score per image; the corpus score is the mean over images."""

    name = "SPICE"

    def __init__(self, corenlp_dir=None):
        ok, why = availability(PostgenOptions(corenlp_dir=str(corenlp_dir or "")))
        if not ok:
            raise RuntimeError(f"SPICE unavailable: {why}")
        self.corenlp = find_corenlp(corenlp_dir)

    def compute_score(self, gts, res):
        check_inputs(gts, res)
        per_image = _run_spice(self.corenlp, gts, res)  # SpiceScorer is a batch program: one JVM per call
        return float(np.mean(per_image)), per_image
