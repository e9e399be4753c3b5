"""The search configuration: one TOML file holds everything needed to rerun a search.

Sections: [data] what to caption, [models] which generators ([models.captioner] their sizes),
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
from ..captioning import ARCHITECTURES, registry
from ..captioning.models import CaptionerConfig
from ..captioning.train import TrainConfig
from ..postgen.base import PostgenOptions
from ..settings import NonNegativeInt, PositiveInt, as_dict, build, settings

ID_COLUMNS = ("dataset", "architecture", "run", "epoch", "num_strata", "stratum")
"""The identifying columns of a search's table, in order."""

GROUPABLE = ("dataset", "architecture", "run", "epoch")
DEFAULT_POSTGEN = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4", "ROUGE_L")
MIN_TEST_IMAGES = 5  # the spec's 5 partitions need at least one image per block


@settings
class DataConfig:
    source: Literal["shapes", "karpathy", "flickr8k"] = "shapes"
    train: PositiveInt = 6000             # shapes: images per split
    val: PositiveInt = 1000
    test: PositiveInt = 1000
    seed: NonNegativeInt = 0              # shapes: generation seed
    encoder_epochs: PositiveInt = 4       # shapes: epochs of the shared image encoder
    karpathy_json: str = ""               # karpathy: dataset_<name>.json
    flickr8k_dir: str = ""                # flickr8k: folder with Flickr8k.token.txt and the split files
    features: str = ""                    # karpathy/flickr8k: .npy/.npz/.mat image features (row order: see README)
    min_count: PositiveInt = 5            # word vocabulary: tokens seen at least this often in train
    tokenizer: Literal["word", "bpe"] = "word"  # the models' vocabulary: words, or BPE pieces (never across words)
    vocab_size: Annotated[int, pydantic.Field(ge=8)] = 1000  # bpe: entries of the BPE trained on the train captions

    @pydantic.model_validator(mode="after")
    def _consistent(self):
        if self.source == "shapes" and self.test < MIN_TEST_IMAGES:
            raise ValueError(f"test = {self.test}: the 15 strata need at least {MIN_TEST_IMAGES} test images")
        if self.source == "karpathy" and not self.karpathy_json:
            raise ValueError("source = 'karpathy' needs karpathy_json")
        if self.source == "flickr8k" and not self.flickr8k_dir:
            raise ValueError("source = 'flickr8k' needs flickr8k_dir")
        return self


@settings
class ModelsConfig:
    architectures: list[str] = dataclasses.field(default_factory=lambda: list(ARCHITECTURES))  # registered names
    runs: PositiveInt = 3                 # independently seeded runs per architecture
    captioner: CaptionerConfig = CaptionerConfig()
    checkpoints: list[str] = dataclasses.field(default_factory=list)  # already trained model.msgpack files
    vocabulary: str = ""                  # the vocabulary.json those checkpoints were trained with

    @pydantic.field_validator("architectures")
    @classmethod
    def _registered(cls, architectures):
        for name in architectures:
            registry.get(name)  # unknown: names the registered ones
        return architectures

    @pydantic.model_validator(mode="after")
    def _consistent(self):
        if len(set(self.architectures)) != len(self.architectures):
            raise ValueError(f"architectures lists one twice: {self.architectures}")
        for name in self.architectures:
            registry.check(name, self.captioner)
        if self.checkpoints and not self.vocabulary:
            raise ValueError("checkpoints need the vocabulary they were trained with (vocabulary = ...)")
        return self


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
    metrics: list[str] = dataclasses.field(default_factory=lambda: list(DEFAULT_POSTGEN))

    @pydantic.field_validator("metrics")
    @classmethod
    def _known(cls, metrics):
        from ..postgen import registry
        if not metrics:
            raise ValueError("name at least one post-gen metric")
        registry.check_names(metrics, "metrics")
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
    modules: list[str] = dataclasses.field(default_factory=list)  # your tier functions: module names or .py files
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
    """A model evaluated elsewhere: its RefProbs (.npz) and generated captions (one per line)."""

    architecture: str
    run: str
    ref_probs: str
    captions: str

    @property
    def label(self) -> str:
        return f"{self.architecture}-{self.run}"


@settings
class SearchConfig:
    name: str = "search"
    seed: NonNegativeInt = 0
    data: DataConfig = DataConfig()
    models: ModelsConfig = ModelsConfig()
    training: TrainConfig = TrainConfig(epochs=6, snapshot_epochs=[1])
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
        models = dict(raw.pop("models", {})) if isinstance(raw.get("models"), dict) else raw.pop("models", {})
        if isinstance(models, dict):
            if "arch" in models.get("captioner", {}):
                raise ValueError(f"{source}: [models.captioner] has no 'arch': list them in [models] architectures")
            models["captioner"] = build(CaptionerConfig, models.get("captioner", {}), source, "models.captioner")
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
        """Rules that span sections."""
        if self.data.source != "shapes" and not self.data.features and not self.only_precomputed:
            raise ValueError(f"{source}: [data] features is required to train or run caption models on "
                             f"source {self.data.source!r}")
        seen = {}
        for k, entry in enumerate(self.precomputed, 1):
            if entry.label in seen:
                raise ValueError(f"{source}: [[precomputed]] entries {seen[entry.label]} and {k} are both "
                                 f"architecture {entry.architecture!r}, run {entry.run!r}; give each model its own run")
            seen[entry.label] = k

    @property
    def only_precomputed(self) -> bool:
        return bool(self.precomputed) and not self.models.checkpoints

    def resolve_paths(self, base: Path) -> SearchConfig:
        """The same config with relative file paths made absolute against ``base``."""
        def path(value: str) -> str:
            return str((base / value).resolve()) if value and not Path(value).is_absolute() else value

        def module(value: str) -> str:
            return path(value) if value.endswith(".py") else value
        data = dataclasses.replace(self.data, karpathy_json=path(self.data.karpathy_json),
                                   flickr8k_dir=path(self.data.flickr8k_dir), features=path(self.data.features))
        models = dataclasses.replace(self.models, checkpoints=[path(p) for p in self.models.checkpoints],
                                     vocabulary=path(self.models.vocabulary))
        postgen = dataclasses.replace(self.postgen, stopwords=path(self.postgen.stopwords),
                                      corenlp_dir=path(self.postgen.corenlp_dir), reo_model=path(self.postgen.reo_model))
        pregen = dataclasses.replace(self.pregen, modules=[module(m) for m in self.pregen.modules])
        precomputed = [dataclasses.replace(m, ref_probs=path(m.ref_probs), captions=path(m.captions))
                       for m in self.precomputed]
        return dataclasses.replace(self, data=data, models=models, postgen=postgen, pregen=pregen,
                                   precomputed=precomputed)


def demo_config(quick: bool = False) -> SearchConfig:
    """The built-in demo: 5 architectures x 3 runs on the shapes dataset (smaller with quick); the
    transformer has 1 layer (as fast per epoch as merge on CPU).

    ``search/configs/demo.toml`` and ``demo_quick.toml`` spell these out (a test keeps them equal).
    """
    if quick:
        return SearchConfig(
            name="demo-quick", data=DataConfig(train=1200, val=200, test=300, encoder_epochs=3),
            models=ModelsConfig(runs=1, captioner=CaptionerConfig(embed_size=64, hidden_size=64, image_size=64,
                                                                   layers=1)),
            training=TrainConfig(epochs=3, batch_size=64, snapshot_epochs=[1]))
    return SearchConfig(
        name="demo", models=ModelsConfig(captioner=CaptionerConfig(embed_size=128, hidden_size=128, image_size=128,
                                                                   layers=1)),
        training=TrainConfig(epochs=5, snapshot_epochs=[1]))
