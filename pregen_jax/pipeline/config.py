"""The search configuration: one TOML file holds everything needed to rerun a search.

Sections: [data] what to caption, [models] which generators ([models.rnn] and [models.transformer]
their sizes, one section per family),
[training], [generation], [postgen], [pregen], and [[precomputed]] for results made by other
toolkits. Every field is typed and range-checked when the file is read; an error names the
file, section, key, value and what is allowed. Relative paths are read relative to the
config file's folder; the config saved with a run holds them resolved.
"""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import pydantic
import tomli_w

from .. import io
from ..captioning import ARCHITECTURES, BUILTIN_ARCHITECTURES
from ..captioning.models import RnnConfig
from ..captioning.train import TrainConfig
from ..captioning.transformer import TransformerConfig
from ..postgen import DEFAULT_METRICS
from ..postgen.base import PostgenOptions
from ..settings import (
    DirPath,
    FilePath,
    ModulePath,
    NonNegativeInt,
    PositiveInt,
    Seed,
    as_dict,
    build,
    map_paths,
    path_fields,
    settings,
)
from ..strata import NUM_SPEC_STRATA, SPEC_MAX_K

ID_COLUMNS = ("dataset", "architecture", "run", "epoch", "num_strata", "stratum")
"""The identifying columns of a search's table, in order."""


def model_label(architecture: str, run, epoch="final") -> str:
    """A model's one label, in every file name, message and table that names a model:
    ``architecture-run`` for the final model (or a model with no epochs: a checkpoint file, a
    captions file), ``architecture-run-eEPOCH`` for a snapshot.

    >>> model_label("merge", 1), model_label("merge", "1", 1), model_label("captions", "mine.jsonl", "")
    ('merge-1', 'merge-1-e1', 'captions-mine.jsonl')
    """
    return f"{architecture}-{run}" + (f"-e{epoch}" if str(epoch) not in ("final", "") else "")

GROUPABLE = ("dataset", "architecture", "run", "epoch")
DEFAULT_POSTGEN = DEFAULT_METRICS  # the post-gen metrics' one list is postgen's
MIN_TEST_IMAGES = SPEC_MAX_K  # the spec's 5 partitions need at least one image per block


@settings
class DataConfig:
    source: Literal["shapes", "karpathy", "flickr8k"] = "shapes"
    train: PositiveInt = 6000             # shapes: images per split
    val: PositiveInt = 1000
    test: PositiveInt = 1000
    seed: Seed = 0                        # shapes: generation seed
    encoder_epochs: PositiveInt = 4       # shapes: epochs of the shared image encoder
    karpathy_json: FilePath = ""          # karpathy: dataset_<name>.json
    flickr8k_dir: DirPath = ""            # flickr8k: folder with Flickr8k.token.txt and the split files
    features: FilePath = ""               # karpathy/flickr8k: .npy/.npz/.mat image features (row order: see README)
    min_count: PositiveInt = 5            # word vocabulary: tokens seen at least this often in train
    tokenizer: Literal["word", "bpe"] = "word"  # the models' vocabulary: words, or BPE pieces (never across words)
    vocab_size: Annotated[int, pydantic.Field(ge=8)] = 1000  # bpe: entries of the BPE trained on the train captions

    @pydantic.model_validator(mode="after")
    def _consistent(self):
        if self.source == "shapes" and self.test < MIN_TEST_IMAGES:
            raise ValueError(f"test = {self.test}: the {NUM_SPEC_STRATA} strata need at least {MIN_TEST_IMAGES} "
                             "test images")
        if self.source == "karpathy" and not self.karpathy_json:
            raise ValueError("source = 'karpathy' needs karpathy_json")
        if self.source == "flickr8k" and not self.flickr8k_dir:
            raise ValueError("source = 'flickr8k' needs flickr8k_dir")
        return self


@settings
class ModelsConfig:
    architectures: list[str] = dataclasses.field(default_factory=lambda: list(BUILTIN_ARCHITECTURES))  # registered names
    runs: PositiveInt = 3                 # independently seeded runs per architecture
    rnn: RnnConfig = RnnConfig()          # [models.rnn]: the RNN architectures' sizes
    transformer: TransformerConfig = TransformerConfig()  # [models.transformer]: the transformer's sizes
    checkpoints: list[FilePath] = dataclasses.field(default_factory=list)  # already trained model.msgpack files
    vocabulary: FilePath = ""             # the vocabulary.json those checkpoints were trained with

    @pydantic.field_validator("architectures")
    @classmethod
    def _registered(cls, architectures):
        for name in architectures:
            ARCHITECTURES.get(name)  # unknown: names the registered ones
        return architectures

    @pydantic.model_validator(mode="after")
    def _consistent(self):
        if len(set(self.architectures)) != len(self.architectures):
            raise ValueError(f"architectures lists one twice: {self.architectures}")
        for name in self.architectures:
            ARCHITECTURES.get(name).check(self.sizes(name))
        if self.checkpoints and not self.vocabulary:
            raise ValueError("checkpoints need the vocabulary they were trained with (vocabulary = ...)")
        return self

    def sizes(self, name: str):
        """The sizes architecture ``name`` is built from: the section of its registered config class
        (``rnn`` or ``transformer``)."""
        family = ARCHITECTURES.get(name).config
        for section in (self.rnn, self.transformer):
            if isinstance(section, family):
                return section
        raise ValueError(f"architecture {name!r} is built from a {family.__name__}, which no [models] section "
                         "holds (register it with RnnConfig or TransformerConfig)")


# [models.captioner] (one section for every family, read for this version): its keys as each family names them.
LEGACY_CAPTIONER = {
    "rnn": {key: key for key in ("cell", "embed_size", "hidden_size", "image_size", "dropout", "learn_init_state",
                                 "normalize_image")},
    "transformer": {"embed_size": "width", "hidden_size": "mlp_width", "image_size": "image_size",
                    "dropout": "dropout", "normalize_image": "normalize_image", "layers": "layers", "heads": "heads"},
}


def _legacy_captioner(captioner, source: str) -> dict:
    """``[models.captioner]`` as ``[models.rnn]`` and ``[models.transformer]`` (the transformer's
    width was ``embed_size``, its feed-forward width ``hidden_size``), with a warning saying so."""
    import warnings
    if not isinstance(captioner, dict):
        raise ValueError(f"{source}: [models] captioner = {captioner!r}: must be a table")
    known = {key for keys in LEGACY_CAPTIONER.values() for key in keys}
    unknown = sorted(set(captioner) - known)
    if unknown:
        raise ValueError(f"{source}: [models.captioner] unknown setting {unknown[0]!r} (its keys now live in "
                         "[models.rnn] and [models.transformer])")
    warnings.warn(f"{source}: [models.captioner] is read as [models.rnn] and [models.transformer] (the "
                  "transformer's width = embed_size, mlp_width = hidden_size) for this version only: write those "
                  "sections instead", stacklevel=3)
    return {family: {new: captioner[old] for old, new in keys.items() if old in captioner}
            for family, keys in LEGACY_CAPTIONER.items()}


@settings
class GenerationConfig:
    beam_width: PositiveInt = 3
    max_len: PositiveInt = 50
    min_len: NonNegativeInt = 5

    @pydantic.model_validator(mode="after")
    def _lengths(self):
        if self.max_len < self.min_len:
            raise ValueError(f"max_len = {self.max_len} is below min_len = {self.min_len}")
        return self


@settings
class PostgenConfig(PostgenOptions):
    stopwords: FilePath = ""    # PostgenOptions's paths, marked as paths (same order, same defaults)
    corenlp_dir: DirPath = ""
    reo_model: DirPath = ""
    metrics: list[str] = dataclasses.field(default_factory=lambda: list(DEFAULT_POSTGEN))
    # what the post-gen metrics see: "ptb" (COCO's protocol: the corpus's raw references and the models'
    # captions through PTB, as evaluate scores) or "alnum-lower" (lower-case alphanumeric runs, the 2018 study's)
    tokenizer: Literal["ptb", "alnum-lower"] = "ptb"

    @pydantic.field_validator("metrics")
    @classmethod
    def _known(cls, metrics):
        from ..postgen import registry
        if not metrics:
            raise ValueError("name at least one post-gen metric")
        registry.check_metric_names(metrics, "metrics")
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"lists a metric twice: {metrics}")
        return metrics

    @property
    def options(self) -> PostgenOptions:
        return PostgenOptions(stopwords=self.stopwords, corenlp_dir=self.corenlp_dir, reo_model=self.reo_model,
                              backend=self.backend)


@settings
class PregenConfig:
    compat_2018: bool = False             # the 2018 code's filter0 (positions NOT the top choice)
    units: Literal["word", "token"] = "word"  # positions: reference words (pieces combined, see pieces) or tokens
    group_by: str = ""                    # table column to group correlations by ("" = all rows only)
    degenerate: Literal["exclude", "include"] = "exclude"  # degenerate models in the findings? (their rows stay in table.tsv)
    modules: list[ModulePath] = dataclasses.field(default_factory=list)  # your tier functions: module names or .py files
    filters: list[str] = dataclasses.field(default_factory=list)  # tier names added to the 504-metric space
    caption_scores: list[str] = dataclasses.field(default_factory=list)
    image_aggregators: list[str] = dataclasses.field(default_factory=list)
    dataset_aggregators: list[str] = dataclasses.field(default_factory=list)

    @pydantic.field_validator("group_by")
    @classmethod
    def _groupable(cls, group_by):
        if group_by and group_by not in GROUPABLE:
            raise ValueError(f"no column {group_by!r} in a search table; group by one of {', '.join(GROUPABLE)}")
        return group_by


@settings
class PrecomputedModel:
    """A model evaluated elsewhere: its RefProbs (.npz) and generated captions (JSONL or TSV keyed by
    image_id, or one a line in test-split order: ``datasets.generated``)."""

    architecture: str
    run: str
    ref_probs: FilePath
    captions: FilePath

    @pydantic.field_validator("architecture", "run")
    @classmethod
    def _file_name_safe(cls, value):
        return io.check_name(value)

    @property
    def label(self) -> str:
        return model_label(self.architecture, self.run)


@settings
class SearchConfig:
    name: str = "search"
    seed: Seed = 0
    data: DataConfig = DataConfig()
    models: ModelsConfig = ModelsConfig()
    training: TrainConfig = TrainConfig()  # one set of defaults, with or without a [training] section
    generation: GenerationConfig = GenerationConfig()
    postgen: PostgenConfig = PostgenConfig()
    pregen: PregenConfig = PregenConfig()
    precomputed: list[PrecomputedModel] = dataclasses.field(default_factory=list)

    def to_toml(self) -> str:
        return tomli_w.dumps(as_dict(self))

    @classmethod
    def from_dict(cls, raw: dict, source: str = "config", base: Path | None = None) -> SearchConfig:
        """Build and validate from TOML data; ``base`` resolves relative paths (the config's folder)."""
        raw = dict(raw)
        if not raw:
            raise ValueError(f"{source}: the config is empty; a search needs at least a [data] section (what to "
                             "caption) or [[precomputed]] models (see search/configs/ for examples)")
        models = dict(raw.pop("models", {})) if isinstance(raw.get("models"), dict) else raw.pop("models", {})
        if isinstance(models, dict):
            if "captioner" in models:  # the one section of every family's sizes, before they had their own
                models.update(_legacy_captioner(models.pop("captioner"), source))
            for key, family in (("rnn", RnnConfig), ("transformer", TransformerConfig)):
                if key in models:
                    models[key] = build(family, models[key], source, f"models.{key}")
        sections = {"data": DataConfig, "models": ModelsConfig, "training": TrainConfig,
                    "generation": GenerationConfig, "postgen": PostgenConfig, "pregen": PregenConfig}
        kwargs = {"models": build(ModelsConfig, models, source, "models")}
        for key, section_cls in sections.items():
            if key != "models" and key in raw:
                kwargs[key] = build(section_cls, raw.pop(key), source, key)
        entries = raw.pop("precomputed", [])
        if not isinstance(entries, list):
            raise ValueError(f"{source}: [[precomputed]] must be an array of tables")
        kwargs["precomputed"] = [build(PrecomputedModel, entry, source, f"precomputed {k + 1}")
                                 for k, entry in enumerate(entries)]
        config = build(cls, {**raw, **kwargs}, source)
        if base is not None:
            config = config.resolve_paths(Path(base))
        config.check(source)
        return config

    @classmethod
    def load(cls, path) -> SearchConfig:
        path = Path(path)
        try:
            raw = tomllib.loads(io.read_text(path, "config file"))
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
        return cls.from_dict(raw, str(path), base=path.resolve().parent)

    def check(self, source: str) -> None:
        """Rules that span sections and hold for every use of a config (``check_files``, run before a
        search, adds what only a search needs: the files it names, image features)."""
        seen = {}
        for k, entry in enumerate(self.precomputed, 1):
            if entry.label in seen:
                raise ValueError(f"{source}: [[precomputed]] entries {seen[entry.label]} and {k} are both "
                                 f"architecture {entry.architecture!r}, run {entry.run!r}; give each model its own run")
            seen[entry.label] = k

    def check_files(self, source: str) -> None:
        """What a search needs before any work: image features where models are trained or run, and
        each file or folder named by the config (relative paths: resolved first); the [[precomputed]]
        files are read, with their own messages, later but before any work. (``export-references``
        needs none of it: only [data]'s corpus.)"""
        if self.data.source != "shapes" and not self.data.features and not self.only_precomputed:
            raise ValueError(f"{source}: [data] features is required to train or run caption models on "
                             f"source {self.data.source!r} (../shared/data ships none): give any "
                             "extractor's vectors as an .npz of arrays 'features' and 'image_ids' (file names); "
                             "docs/guides/search.md, \"Flickr8k or a Karpathy JSON: the files a search needs\"")
        # every path the config marks (settings.PathKind), but [[precomputed]]'s: read later, with their own messages
        named = [(section, key, value, "file" if kind == "module" else kind)
                 for section, key, value, kind in path_fields(self)
                 if not section.startswith("precomputed") and (kind != "module" or value.endswith(".py"))]
        for section, key, value, kind in named:
            if not value or not Path(value).is_absolute():
                continue  # unresolved paths (a config built in code) are checked where they are read
            found = Path(value).is_dir() if kind == "dir" else Path(value).is_file()
            if not found:
                what = "folder" if kind == "dir" else "file"
                raise ValueError(f"{source}: [{section}] {key} = {value!r}: no such {what}")

    @property
    def only_precomputed(self) -> bool:
        return bool(self.precomputed) and not self.models.checkpoints

    def resolve_paths(self, base: Path) -> SearchConfig:
        """The same config with relative file paths made absolute against ``base``."""
        def path(value: str, kind: str) -> str:
            if not value or Path(value).is_absolute() or (kind == "module" and not value.endswith(".py")):
                return value  # empty, absolute, or an importable module's name
            return str((base / value).resolve())
        return map_paths(self, path)


DEMO_CONFIGS = Path(__file__).parent / "demo"
"""``demo.toml`` and ``demo_quick.toml``, shipped with the package (``search/configs/`` links to them)."""


def demo_config_path(quick: bool = False) -> Path:
    """The file ``pregen-search demo`` (``--quick``) reads: the config users copy to start their own."""
    return DEMO_CONFIGS / ("demo_quick.toml" if quick else "demo.toml")


def demo_config(quick: bool = False) -> SearchConfig:
    """The built-in demo: 5 architectures x 3 runs on the shapes dataset (smaller with quick), read
    from its file."""
    return SearchConfig.load(demo_config_path(quick))
