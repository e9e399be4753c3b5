"""The METEOR oracle for tests: pycocoevalcap's meteor-1.5.jar, at every stage.

``Probe`` compiles ``MeteorProbe.java`` (javac, into a temporary folder) against the jar and
runs it warm: the jar's normalized text, stems, synonym sets and a pair's alignment and
statistics. ``jar_stats`` runs the jar as pycocoevalcap does (``-stdio``) for SCORE lines.
Both are kept for the test session. Nothing here ships with the package.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pregen_jax.postgen.jvm import JavaProcess
from pregen_jax.postgen.meteor import jar_path, scoring
from pregen_jax.postgen.meteor.jar import JarMeteor

SOURCE = Path(__file__).with_name("MeteorProbe.java")


def java_available() -> bool:
    return shutil.which("java") is not None and shutil.which("javac") is not None


@functools.lru_cache(maxsize=1)
def _compiled() -> str:
    """The folder holding MeteorProbe.class (compiled once per session)."""
    folder = tempfile.mkdtemp(prefix="meteor-probe-")
    subprocess.run(["javac", "-nowarn", "-cp", str(jar_path()), "-d", folder, str(SOURCE)], check=True,
                   capture_output=True)
    return folder


@dataclass(frozen=True)
class Aligned:
    """The jar's best alignment of a (test, reference) pair: matches as (reference start, length,
    test start, length, stage), and the pair's statistics f64[23]."""

    matches: tuple[tuple[int, int, int, int, int], ...]
    stats: np.ndarray


class Probe:
    """MeteorProbe in one warm JVM; ``align=True`` also loads the scorer (the paraphrase table)."""

    def __init__(self, align: bool = False):
        classpath = f"{_compiled()}:{jar_path()}"
        self._java = JavaProcess(["java", "-Xmx2G", "-Dfile.encoding=UTF-8", "-cp", classpath, "MeteorProbe"]
                                 + (["align"] if align else []), cwd=str(jar_path().parent))
        self._memo: dict[str, str] = {}

    def _ask(self, requests: list[str]) -> list[str]:
        new = [r for r in dict.fromkeys(requests) if r not in self._memo]
        self._memo.update(zip(new, self._java.ask(new)))
        return [self._memo[r] for r in requests]

    def normalize(self, texts: list[str]) -> list[str]:
        return self._ask([f"NORM\t{t}" for t in texts])

    def stem(self, words: list[str]) -> list[str]:
        return self._ask([f"STEM\t{w}" for w in words])

    def synsets(self, words: list[str]) -> list[frozenset[int]]:
        return [frozenset(map(int, r.split())) for r in self._ask([f"SYN\t{w}" for w in words])]

    def align(self, pairs: list[tuple[str, str]]) -> list[Aligned]:
        replies = self._ask([f"ALIGN\t{test}\t{ref}" for test, ref in pairs])
        out = []
        for reply in replies:
            matches, _, stats = reply.rpartition("\t")
            parsed = tuple(tuple(int(x) for x in m.replace(":", " ").split()) for m in matches.split(",") if m.strip())
            out.append(Aligned(parsed, scoring.parse(stats)))
        return out

    def close(self) -> None:
        self._java.close()


class JarStats:
    """The jar's SCORE statistics for (references, candidate) segments, memoized for the session."""

    def __init__(self):
        self._jar = JarMeteor()

    def stats(self, segments: list[tuple[list[str], str]]) -> np.ndarray:
        """f64[segments, 23]."""
        gts = {k: refs for k, (refs, _) in enumerate(segments)}
        res = {k: [cand] for k, (_, cand) in enumerate(segments)}
        lines = self._jar.stat_lines(gts, res)
        return np.array([scoring.parse(lines[k]) for k in gts]).reshape(len(segments), scoring.K)

    def eval(self, stats: np.ndarray) -> tuple[float, list[float]]:
        """The jar's EVAL of statistics rows: (corpus score, per-row scores)."""
        return self._jar.eval([" ".join(repr(float(v)) for v in row) for row in stats])

    def close(self) -> None:
        self._jar.close()
