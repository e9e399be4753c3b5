"""SPICE 1.0 where Stanford CoreNLP 3.6.0 jars are present; unavailable (one clear line) elsewhere.

pycocoevalcap ships spice-1.0.jar but fetches the CoreNLP 3.6.0 jars from the internet on first
use, which this project never does. Point ``PREGEN_JAX_CORENLP`` (or the ``corenlp_dir``
argument) at a folder holding ``stanford-corenlp-3.6.0.jar`` and
``stanford-corenlp-3.6.0-models.jar``; pycocoevalcap's own ``spice/lib`` is also searched.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import processes
from .base import PostgenMetric, PostgenOptions
from .jvm import find_java, java_command, java_env, java_problem
from .registry import register_metric

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")


def _spice_dir() -> Path:
    """pycocoevalcap's SPICE folder, found without importing its module (which imports urllib's
    HTTP client: 16 ms of every evaluate's start). pycocoevalcap is a namespace package."""
    return Path(importlib.util.find_spec("pycocoevalcap.spice.spice").origin).parent


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
    """Whether SPICE runs here: the jars are there and open, Java starts, and one caption is really
    scored. The jars are looked for first: where they are absent (most machines) no JVM is started
    to say so (``java -version``: 70 ms of every evaluate's start)."""
    folder = find_corenlp(options.corenlp_dir if options else None)
    if folder is None:
        return False, ("Stanford CoreNLP 3.6.0 jars not found (set PREGEN_JAX_CORENLP to a folder with "
                       f"{' and '.join(CORENLP_JARS)}; no registry here serves them)")
    problem = java_problem()
    if problem:
        return False, problem
    for jar in (*(folder / name for name in CORENLP_JARS), _spice_dir() / "spice-1.0.jar"):
        problem = jar_problem(jar)
        if problem:
            return False, problem
    problem = script_engine_problem(folder)
    if problem:
        return False, problem
    return _probe(str(folder), find_java().path, *(Path(folder, jar).stat().st_mtime_ns for jar in CORENLP_JARS))


# SpiceScorer writes its -out file by running JSON.stringify in javax.script's "JavaScript" engine.
# Nashorn, that engine, left the JDK in Java 15: there getEngineByName returns null and SPICE ends
# with a NullPointerException after all the parsing. The standalone Nashorn (with the asm jars it
# needs) among the CoreNLP jars puts it back on the class path.
NASHORN_CLASS = "org/openjdk/nashorn/api/scripting/NashornScriptEngineFactory.class"


def script_engine_problem(folder: Path) -> str | None:
    """Why SPICE could not write its scores with this Java and these jars (no JavaScript engine), or None."""
    import zipfile
    java = find_java()
    if java is None or java.major < 15:
        return None
    for jar in sorted(folder.glob("*.jar")):
        try:
            with zipfile.ZipFile(jar) as archive:
                if NASHORN_CLASS in archive.namelist():
                    return None
        except (OSError, zipfile.BadZipFile):
            continue
    return (f"SPICE 1.0 writes its scores through a JavaScript engine, which Java {java.major} ({java.path}) lacks: "
            f"put nashorn-core 15.x and the asm jars it needs in {folder}, or set PREGEN_JAVA to a Java 8 to 14")


@functools.lru_cache(maxsize=4)
def _probe(folder: str, java: str, *mtimes) -> tuple[bool, str]:
    """Score one caption with the jars (once per process, Java and jar folder): broken jars fail here,
    not after the work is done."""
    try:
        _run_spice(Path(folder), {"probe": ["a dog runs on the grass"]}, {"probe": ["a dog runs"]})
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as err:
        said = (getattr(err, "stderr", None) or b"").decode(errors="replace")  # says why; the exit code does not
        thrown = [line for line in said.splitlines() if "Exception" in line or "Error" in line]
        why = (thrown[-1:] or str(err).splitlines())[0].strip()  # the innermost cause
        return False, f"SPICE does not run with {java} and the jars in {folder}: {why[:200]}"
    return True, f"CoreNLP jars in {folder} (one caption scored)"


def depends_on(options: PostgenOptions) -> dict:
    """What changes SPICE's scores: its jar and the CoreNLP jars (sha256)."""
    from ..io import file_hash
    folder = find_corenlp(options.corenlp_dir or None)
    jars = [_spice_dir() / "spice-1.0.jar", *((folder / jar) for jar in CORENLP_JARS if folder)]
    return {"jars": [file_hash(str(jar)) for jar in jars]}


def spice_command(classpath: str, in_file: Path, out_file: Path) -> list[str]:
    """The JVM command that scores ``in_file`` into ``out_file``: with the ``--add-opens`` flags
    SPICE's libraries need on Java 16+ (``jvm.ADD_OPENS_PACKAGES``), no parse cache (``-cache``
    would write LMDB files; the run's own cache holds the scores)."""
    return java_command(["-Xmx8G", "-cp", classpath, "edu.anu.spice.SpiceScorer", str(in_file),
                         "-out", str(out_file), "-subset", "-silent"], add_opens=True)


def _run_spice(corenlp: Path, gts: dict, res: dict) -> list[float]:
    """Per-image SPICE F of (gts, res), in ``gts`` order, from one JVM run over all of them."""
    ids = list(gts)
    spice = _spice_dir()
    with tempfile.TemporaryDirectory() as tmp:
        in_file, out_file = Path(tmp) / "in.json", Path(tmp) / "out.json"
        in_file.write_text(json.dumps([{"image_id": str(i), "test": res[i][0], "refs": gts[i]} for i in ids]))
        classpath = os.pathsep.join([str(spice / "spice-1.0.jar"), str(spice / "lib" / "*"), str(corenlp / "*")])
        subprocess.run(spice_command(classpath, in_file, out_file), check=True, cwd=tmp, env=java_env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=processes.die_with_parent)  # no JVM outlives the run
        results = {r["image_id"]: r["scores"]["All"]["f"] for r in json.loads(out_file.read_text())}
    return [float(results[str(i)]) for i in ids]


class SPICE(PostgenMetric):
    """SPICE F-score per image; the corpus score is the mean over images."""

    name = "SPICE"
    needs_java = True

    def __init__(self, corenlp_dir=None):
        ok, why = availability(PostgenOptions(corenlp_dir=str(corenlp_dir or "")))
        if not ok:
            raise RuntimeError(f"SPICE unavailable: {why}")
        self.corenlp = find_corenlp(corenlp_dir)

    @classmethod
    def from_options(cls, name, options):
        return cls(options.corenlp_dir or None)

    def _checked_stats(self, gts, res):
        per_image = _run_spice(self.corenlp, gts, res)  # SpiceScorer is a batch program: one JVM per call
        return np.array(per_image, np.float64).reshape(-1, 1)


register_metric("SPICE", SPICE, availability, "SPICE 1.0 (pycocoevalcap; needs Stanford CoreNLP 3.6.0 jars)",
                depends_on=depends_on)
