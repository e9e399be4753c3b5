"""One cache for every stage of a search, kept in the run folder's ``cache/``.

An entry's key hashes everything that determines the stage's output: the stage's name and
version (bumped when its code changes what it writes), the settings that matter to it, and
the keys of the upstream entries it reads. A changed setting therefore recomputes that stage
and what depends on it, and nothing else; an unchanged one reuses the entry. An entry is
complete when its ``DONE`` file exists, written last, so a killed run resumes where it stopped.

Three kinds of cache, one interface: ``StageCache`` (read-write), ``ReadOnlyCache`` (every entry
must be done: another process computed it) and ``NoCache`` (computes everything, keeps nothing,
but still gives each value its key). Each counts what it computed and reused, in one place.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .. import io

_COUNT_LOCK = threading.Lock()

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Stage:
    """A cached stage: its folder name under ``cache/`` and its code version."""

    name: str
    version: int


def digest(*parts) -> str:
    """A short content hash of JSON-able parts (dataclasses and paths included)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One stage output: ``folder`` holds it, ``key`` identifies it for downstream stages."""

    stage: Stage
    label: str
    key: str
    folder: Path
    settings: Any
    upstream: tuple[str, ...]

    @property
    def done(self) -> bool:
        return (self.folder / "DONE").is_file()

    def mark_done(self) -> None:
        """Record the entry as complete (after everything in ``folder`` is written)."""
        io.write_text(json.dumps({"stage": self.stage.name, "version": self.stage.version, "label": self.label,
                                  "settings": self.settings, "upstream": list(self.upstream)},
                                 indent=1, default=str), self.folder / "DONE")


class StageCache:
    """Stage entries under ``root/<stage>/<label>-<key>/``, and a log of what was reused."""

    read_only = False

    def __init__(self, root):
        self.root = Path(root)
        self.log: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

    def entry(self, stage: Stage, label: str, settings: Any = None, upstream=()) -> Entry:
        upstream = tuple(upstream)
        io.check_name(label, "model label")  # never a path outside the cache, whoever built the label
        key = digest(stage.name, stage.version, settings, upstream)
        return Entry(stage, label, key, self.root / stage.name / f"{label}-{key}", settings, upstream)

    def cached(self, stage: Stage, label: str, settings: Any, upstream, compute: Callable[[], T],
               save: Callable[[T, Path], None], load: Callable[[Path], T]) -> tuple[T, Entry]:
        """The stage's value: loaded when the entry is complete, else computed and saved.

        ``save`` writes into a fresh folder that becomes the entry only once complete.
        """
        entry = self.entry(stage, label, settings, upstream)
        if entry.done:
            self.count(stage, reused=True)
            return load(entry.folder), entry
        value = compute()
        entry.folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=entry.folder.parent, prefix=f".{entry.folder.name}."))
        try:
            save(value, staging)
            shutil.rmtree(entry.folder, ignore_errors=True)   # a half-written entry from a killed run
            staging.rename(entry.folder)
            entry.mark_done()
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.count(stage, reused=False)
        return value, entry

    def count(self, stage: Stage, reused: bool) -> None:
        """Record one entry of ``stage`` as reused or computed (``cached`` does it for its own)."""
        with _COUNT_LOCK:  # trainer threads count too
            self.log[stage.name]["reused" if reused else "computed"] += 1

    def merge(self, counts: dict[str, dict[str, int]]) -> None:
        """Add the counts of another view of this cache (a post-gen worker's)."""
        with _COUNT_LOCK:  # trainer threads may be counting meanwhile
            for name, counted in counts.items():
                self.log[name].update(counted)

    def counts(self) -> dict[str, dict[str, int]]:
        """Stage name -> {"computed": n, "reused": m}."""
        return {name: {"computed": c["computed"], "reused": c["reused"]} for name, c in self.log.items()}


class ReadOnlyCache(StageCache):
    """The stage cache as process 0 reads the other processes' results: every entry must be done."""

    read_only = True

    def cached(self, stage, label, settings, upstream, compute, save, load):
        entry = self.entry(stage, label, settings, upstream)
        if not entry.done:
            raise ValueError(f"{entry.folder}: another process did not finish {stage.name} of {label} "
                             "(stopped early?); rerun the same command to resume")
        return load(entry.folder), entry


class NoCache(StageCache):
    """Every stage computed and nothing written (experiments that keep their own results): the
    keys are still worked out, so downstream stages see the same keys as with a cache."""

    def __init__(self):
        super().__init__(Path("/nonexistent-pregen-cache"))

    def cached(self, stage, label, settings, upstream, compute, save, load):
        entry = self.entry(stage, label, settings, upstream)
        self.count(stage, reused=False)
        return compute(), entry
