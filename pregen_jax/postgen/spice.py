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

from .. import processes
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


# A class each jar must hold: a truncated or wrong file passes an existence check and crashes Java later.
_JAR_CLASSES = {"stanford-corenlp-3.6.0.jar": "edu/stanford/nlp/pipeline/StanfordCoreNLP.class",
                "stanford-corenlp-3.6.0-models.jar": "edu/stanford/nlp/models/",
                "spice-1.0.jar": "edu/anu/spice/SpiceScorer.class"}


def jar_problem(jar: Path) -> str | None:
    """Why ``jar`` cannot serve SPICE (not a readable jar, or without the classes it must hold), else None."""
    import zipfile
    try:
        with zipfile.ZipFile(jar) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError) as err:
        return f"{jar} is not a readable jar ({type(err).__name__}: {err})"
    wanted = _JAR_CLASSES.get(jar.name)
    if wanted and not any(name.startswith(wanted) for name in names):
        return f"{jar} lacks {wanted} (a damaged or different jar)"
    return None


def availability(options: PostgenOptions | None = None) -> tuple[bool, str]:
    problem = java_problem()
    if problem:
        return False, problem
    folder = find_corenlp(options.corenlp_dir if options else None)
    if folder is None:
        return False, ("Stanford CoreNLP 3.6.0 jars not found (set PREGEN_JAX_CORENLP to a folder with "
                       f"{' and '.join(CORENLP_JARS)}; no registry here serves them)")
    for jar in (*(folder / name for name in CORENLP_JARS), _spice_dir() / "spice-1.0.jar"):
        problem = jar_problem(jar)
        if problem:
            return False, problem
    return True, f"CoreNLP jars in {folder}"


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
        ids = list(gts)
        spice = _spice_dir()
        with tempfile.TemporaryDirectory() as tmp:
            in_file, out_file = Path(tmp) / "in.json", Path(tmp) / "out.json"
            in_file.write_text(json.dumps([{"image_id": str(i), "test": res[i][0], "refs": gts[i]} for i in ids]))
            classpath = os.pathsep.join([str(spice / "spice-1.0.jar"), str(spice / "lib" / "*"),
                                         str(self.corenlp / "*")])
            subprocess.run(["java", "-Xmx8G", "-cp", classpath, "edu.anu.spice.SpiceScorer", str(in_file),
                            "-out", str(out_file), "-subset", "-silent"], check=True, cwd=spice,
                           preexec_fn=processes.die_with_parent)  # no JVM outlives the run
            results = {r["image_id"]: r["scores"]["All"]["f"] for r in json.loads(out_file.read_text())}
        per_image = [float(results[str(i)]) for i in ids]
        return float(np.mean(per_image)), per_image


@functools.lru_cache(maxsize=1)
def java_problem() -> str | None:
    """Why Java cannot run here (not on PATH, or it does not start), else None; Java is really started."""
    import subprocess
    java = shutil.which("java")
    if not java:
        return "java not found on PATH (install a JRE, e.g. apt-get install default-jre-headless)"
    try:
        done = subprocess.run([java, "-version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"java at {java} does not start ({type(err).__name__}: {err})"
    if done.returncode != 0:
        return f"java at {java} does not start (exit code {done.returncode})"
    return None
