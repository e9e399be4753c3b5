"""A finished search's run folder, opened and checked once: the one reader of finished runs.

A search ends by writing ``manifest.json`` (atomically, last): the config, the models with
their cache keys and files, the test references' fingerprint, versions, the tokenizer and a
content hash of every data file. ``FinishedSearch.open`` refuses a folder without one (written
before manifests existed, or not a finished search) in one line that says to rerun the search,
and a folder whose files changed since. Every other command asks this class, never a path:
the table, the correlations and the pre-gen metric chosen per post-gen metric, calibration
data, the models, the references' fingerprint and lengths, the vocabulary, the config.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io, ranking
from ..ranking import ALL, decisions, render
from ..refprobs import ReferenceFingerprint, RefProbs
from .config import SearchConfig
from .unit_test_results import UNIT_TESTS_FILE, read_unit_tests

MANIFEST = "manifest.json"
FORMAT = "pregen-jax run folder"
VERSION = 1
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    """One model of the search as the manifest records it.

    ``source``: trained, checkpoint or precomputed; ``keys``: stage -> cache key; ``files``: what
    -> path (relative to the run folder when inside it); ``decoding``: e.g. ``beam 3``, or
    ``unknown`` for captions given ready-made; ``vocabulary``: the model's, e.g. ``word-72``, or
    ``unknown``.
    """

    label: str
    architecture: str
    run: str
    epoch: str
    source: str
    keys: dict
    files: dict
    decoding: str
    vocabulary: str


def rerun_hint(folder: Path) -> str:
    if not (folder / "config.toml").is_file():
        return "give the --out folder of a finished pregen-search run or demo, or rerun the search that wrote it"
    return (f"rerun the search (pregen-search run --config {folder / 'config.toml'} --out {folder}; "
            "its cache makes that fast)")


class FinishedSearch:
    """A run folder written by ``pregen-search run``/``demo``; see the module docstring.

    ``kept``: where files the search keeps rather than writes (the unit-test results) live,
    when that is not ``folder`` (the search renders its report in a staging folder).
    """

    def __init__(self, folder, manifest: dict, kept=None):
        self.folder = Path(folder)
        self.manifest = manifest
        self.kept = Path(kept) if kept is not None else self.folder

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, folder, option: str = "--search") -> FinishedSearch:
        """Read and check ``folder``'s manifest and files; a ``ValueError`` in one line otherwise."""
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"{option} {folder}: no such folder")
        path = folder / MANIFEST
        if not path.is_file():
            raise ValueError(f"{option} {folder}: no {MANIFEST}, so not a finished search's run folder (or one "
                             f"written before run folders carried a manifest): {rerun_hint(folder)}")
        try:
            manifest = json.loads(io.read_text(path, "manifest"))
        except ValueError as err:
            raise ValueError(f"{path}: not valid JSON ({' '.join(str(err).split())}): {rerun_hint(folder)}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"{path}: not a pregen-jax run folder manifest")
        if manifest.get("version") != VERSION:
            raise ValueError(f"{path}: manifest version {manifest.get('version')!r}, this pregen-jax reads "
                             f"{VERSION}: {rerun_hint(folder)}")
        for key in ("config", "files", "models", "references", "postgen", "tokenizer"):
            if key not in manifest:
                raise ValueError(f"{path}: no {key!r}; not a complete manifest: {rerun_hint(folder)}")
        for name, digest in manifest["files"].items():
            if not (folder / name).is_file():
                raise ValueError(f"{folder / name}: missing, but {MANIFEST} lists it: {rerun_hint(folder)}")
            if io.file_digest(folder / name) != digest:
                raise ValueError(f"{folder / name}: changed since the search wrote it: {rerun_hint(folder)}")
        run = cls(folder, manifest)
        if io.read_text(folder / "config.toml") != manifest["config"]:
            raise ValueError(f"{folder / 'config.toml'}: differs from the config in {MANIFEST}: {rerun_hint(folder)}")
        return run

    def _tsv(self, name: str) -> pd.DataFrame:
        """A TSV the search wrote (its hash checked on opening), without the ``tokenizer`` column; may have no rows."""
        return pd.read_csv(self.file(name), sep="\t").drop(columns=["tokenizer", "filter0"], errors="ignore")

    def file(self, name: str) -> Path:
        """A data file of the run (only files the manifest lists)."""
        if name not in self.manifest["files"]:
            raise ValueError(f"{self.folder}: the search wrote no {name}")
        return self.folder / name

    # ------------------------------------------------------------------ what the search was

    @functools.cached_property
    def config(self) -> SearchConfig:
        """The search's config, with the tokenizer its scores were made with (a search written before
        configs named one recorded ``alnum-lower`` in its manifest, and its config reads as today's default)."""
        config = SearchConfig.load(self.file("config.toml"))
        if config.postgen.tokenizer != self.tokenizer:
            config = dataclasses.replace(config, postgen=dataclasses.replace(config.postgen, tokenizer=self.tokenizer))
        return config

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def tokenizer(self) -> str:
        """The short name of what the post-gen metrics see (every TSV's ``tokenizer`` column)."""
        return self.manifest["tokenizer"]["name"]

    @property
    def tokenizer_description(self) -> str:
        return self.manifest["tokenizer"]["description"]

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.manifest.get("versions", {}))

    @property
    def facts(self) -> dict:
        return dict(self.manifest.get("facts", {}))

    @property
    def postgen(self) -> list[str]:
        """The post-gen metrics the search scored, in its order."""
        return list(self.manifest["postgen"])

    @property
    def references(self) -> ReferenceFingerprint:
        """The fingerprint of the test references every model of the search was scored on."""
        return ReferenceFingerprint(**self.manifest["references"])

    @functools.cached_property
    def reference_lengths(self) -> np.ndarray:
        """i32[I, R]: positions (tokens + 1) of each test reference (0 for a missing one)."""
        return np.load(self.file("reference_lengths.npy"), allow_pickle=False)

    @functools.cached_property
    def vocabulary(self):
        """The vocabulary the search's models read (None when every model was precomputed)."""
        from ..datasets import load_vocabulary
        if "vocabulary.json" not in self.manifest["files"]:
            return None
        return load_vocabulary(self.file("vocabulary.json"))

    @property
    def models(self) -> list[ModelEntry]:
        return [ModelEntry(**entry) for entry in self.manifest["models"]]

    # ------------------------------------------------------------------ what the search found

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        """table.tsv: one row per (model, stratum)."""
        return ranking.read_table(self.file("table.tsv"))

    @property
    def filter0(self) -> str:
        """Which positions the search's ``*_filter0`` metrics keep, a key of ``tiers.FILTER0_SEMANTICS``
        (``table.tsv``'s ``filter0`` column; a search written before it had one: from its config)."""
        if "filter0" in self.table.columns:
            return str(self.table["filter0"].iloc[0])
        return "not-top-choice" if self.config.pregen.compat_2018 else "top-choice"

    @property
    def left_out(self) -> dict[str, str]:
        """label -> why the findings leave the model out (degenerate captions); its rows stay in table.tsv."""
        return dict(self.manifest.get("left_out", {}))

    @property
    def model_rows(self) -> pd.DataFrame:
        """The whole-test-set rows (one per model) of the models the findings rest on (every model but
        those ``left_out``), in table order, indexed 0..M-1."""
        rows = decisions.model_rows(self.table).reset_index(drop=True)
        kept = [m.label not in self.left_out for m in self.models]
        return rows if all(kept) else rows[kept].reset_index(drop=True)

    @functools.cached_property
    def models_table(self) -> pd.DataFrame:
        """models.tsv: whole-test-set post-gen scores, caption statistics, decoding and vocabulary per model."""
        return pd.read_csv(self.file("models.tsv"), sep="\t", keep_default_na=False, na_values=[""])

    @functools.cached_property
    def correlations(self) -> dict[str, pd.DataFrame]:
        """post-gen -> its ranking (correlations_<POSTGEN>.tsv without the tokenizer column), best R^2 first."""
        out = {}
        for post in self.postgen:
            name = f"correlations_{post}.tsv"
            if name in self.manifest["files"]:
                out[post] = self._tsv(name)
        return out

    @functools.cached_property
    def ranking(self) -> ranking.Ranking:
        """The ranking as ``ranking.rank`` returned it (correlations, exclusions, groups)."""
        excluded, excluded_postgen, _, rows_left_out = render.split_excluded(self._tsv("excluded.tsv"))
        first = next(iter(self.correlations.values()), pd.DataFrame())
        groups = [c.removesuffix("_R^2") for c in first.columns if c.endswith("_R^2")] or [ALL]
        return ranking.Ranking(self.correlations, excluded, groups, self.manifest.get("group_by"), excluded_postgen,
                               rows_left_out)

    @property
    def late_steps(self) -> dict[str, dict[str, str]]:
        """{"skipped": step -> why it did not apply, "failed": step -> the error, "tracebacks": failed
        step -> its traceback}: the steps after the table that were not done (``pipeline.late``)."""
        steps = self.manifest.get("late_steps", {})
        return {kind: dict(steps.get(kind, {})) for kind in ("skipped", "failed", "tracebacks")}

    def chosen(self, pregen: str | None = None) -> dict[str, str]:
        """post-gen -> the pre-gen metric the run chose for it (its best by R^2), or ``pregen`` for all."""
        if pregen is not None:
            from .space import tier_space
            if pregen not in tier_space(self.config.pregen).names:
                raise ValueError(f"--pregen {pregen!r} is not a metric of the search's space")
        return {post: pregen or str(df["pregen"].iloc[0]) for post, df in self.correlations.items() if len(df)}

    def direction(self, post: str = "CIDEr") -> dict[str, float]:
        """pre-gen name -> +1 or -1, the sign of its R with ``post`` (metrics left out of the ranking are absent)."""
        df = self.correlations.get(post)
        if df is None:
            raise ValueError(f"{self.folder}: the search has no {post} ranking (post-gen metrics: "
                             f"{', '.join(self.postgen)})")
        r = df[f"{ALL}_R"].to_numpy(np.float64)
        return {name: float(np.sign(v)) for name, v in zip(df["pregen"], r) if np.isfinite(v) and v != 0}

    @functools.cached_property
    def calibration(self) -> pd.DataFrame | None:
        """calibration.tsv: each chosen metric's (and perplexity's) leave-one-model-out error; None with < 3 models."""
        if "calibration.tsv" not in self.manifest["files"]:
            return None
        return self._tsv("calibration.tsv")

    @property
    def decisions_markdown(self) -> str | None:
        """decisions.md, the model-level text (None with fewer than 3 models)."""
        if "decisions.md" not in self.manifest["files"]:
            return None
        return io.read_text(self.file("decisions.md"))

    def unit_tests(self) -> pd.DataFrame | str | None:
        """The unit-test results ``pregen-search unit-tests`` added (None without; a string says why unreadable)."""
        path = self.kept / UNIT_TESTS_FILE
        if not path.is_file():
            return None
        try:
            return read_unit_tests(path)
        except ValueError as err:
            return str(err)

    # ------------------------------------------------------------------ checks for readers

    def check_refprobs(self, ref_probs: RefProbs, where: str | None = None) -> None:
        """Refuse reference probabilities not computed on the search's references, vocabulary and units."""
        where = where or ref_probs.source or "RefProbs"
        if ref_probs.references is None:
            raise ValueError(f"{where}: carries no reference fingerprint, so it cannot be matched to the search's "
                             "test references; a model of this package: compute it with "
                             "pregen_jax.captioning.reference_probs; a model elsewhere: attach the search's with "
                             "pregen_jax.external.attach_search_fingerprint(ref_probs, 'refs.jsonl') (pregen-search "
                             "export-references --search DIR --out refs.jsonl writes what it needs); then "
                             "RefProbs.save")
        difference = self.references.difference(ref_probs.references)
        if difference:
            raise ValueError(f"{where}: does not match the search its calibration was fitted on: {difference}")
