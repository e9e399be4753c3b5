"""The METEOR oracle for tests: pycocoevalcap's meteor-1.5.jar, at every stage.

``Probe`` runs the jar's own entry points: its normalizer (``edu.cmu.meteor.util.Normalizer en
true``: the -norm text before lower-casing), its Snowball stemmer (``Stemmer en``) and the
scorer's alignments (``-writeAlignments``: each pair's matches by stage); ``JarStats`` runs the
jar as pycocoevalcap does (``-stdio``) for SCORE statistics and EVAL scores. Replies are kept for
the test session. Nothing here ships with the package; Java is the only requirement (no javac).
"""
from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pregen_jax.postgen.jvm import JavaProcess, find_java, java_command, java_env
from pregen_jax.postgen.meteor import jar_path, scoring
from pregen_jax.postgen.meteor.jar import JarMeteor


def java_available() -> bool:
    return find_java() is not None


@dataclass(frozen=True)
class Aligned:
    """The jar's best alignment of a (test, reference) pair: matches as (reference start, length,
    test start, length, stage), in reference order."""

    matches: tuple[tuple[int, int, int, int, int], ...]


class Probe:
    """The jar's normalizer and stemmer in warm JVMs (started on first use), its aligner per batch."""

    def __init__(self):
        self._java: dict[str, JavaProcess] = {}
        self._memo: dict[tuple[str, str], str] = {}

    def _ask(self, tool: str, args: list[str], requests: list[str]) -> list[str]:
        if tool not in self._java:
            self._java[tool] = JavaProcess(java_command(["-cp", str(jar_path()), *args]), cwd=str(jar_path().parent))
        new = [r for r in dict.fromkeys(requests) if (tool, r) not in self._memo]
        self._memo.update(((tool, r), reply) for r, reply in zip(new, self._java[tool].ask(new)))
        return [self._memo[tool, r] for r in requests]

    def normalize(self, texts: list[str]) -> list[str]:
        """The jar's -norm normalization of each text (punctuation kept), before lower-casing."""
        return self._ask("norm", ["edu.cmu.meteor.util.Normalizer", "en", "true"], texts)

    def stem(self, words: list[str]) -> list[str]:
        """The jar's English Snowball stem of each word (its Stemmer leaves number-like words as they are)."""
        return self._ask("stem", ["Stemmer", "en"], words)

    def align(self, pairs: list[tuple[str, str]]) -> list[Aligned]:
        """The scorer's alignment of each (test, reference) pair (raw text; -l en -norm)."""
        with tempfile.TemporaryDirectory(prefix="meteor-probe-") as folder:
            test, ref = Path(folder, "test.txt"), Path(folder, "ref.txt")
            test.write_text("".join(t + "\n" for t, _ in pairs), encoding="utf-8")
            ref.write_text("".join(r + "\n" for _, r in pairs), encoding="utf-8")
            subprocess.run(java_command(["-Xmx2G", "-jar", str(jar_path()), str(test), str(ref), "-l", "en", "-norm",
                                         "-writeAlignments", "-q", "-f", str(Path(folder, "probe"))]),
                           check=True, capture_output=True, env=java_env(), cwd=folder)
            blocks = Path(folder, "probe-align.out").read_text(encoding="utf-8").split("Alignment\t")[1:]
        out = []
        for block in blocks:
            rows = block.split("\n")[4:]
            matches = [tuple(int(x) for x in row.replace(":", " ").split()[:5]) for row in rows if row.strip()]
            out.append(Aligned(tuple(matches)))
        return out

    def close(self) -> None:
        for java in self._java.values():
            java.close()


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
