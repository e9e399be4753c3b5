"""The search configuration: one TOML file holds everything needed to rerun a search.

Sections: [data] what to caption, [models] which generators, [training], [generation],
[postgen], [pregen], and [[precomputed]] for results made by other toolkits.
"""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import tomli_w

from ..models import ARCHITECTURES, CaptionerConfig
from ..training import TrainConfig


@dataclasses.dataclass
class DataConfig:
    source: str = "shapes"        # shapes | karpathy | flickr8k
    train: int = 6000             # shapes: images per split
    val: int = 1000
    test: int = 1000
    seed: int = 0                 # shapes: generation seed
    encoder_epochs: int = 4       # shapes: epochs of the shared image encoder
    karpathy_json: str = ""       # karpathy: dataset_<name>.json
    flickr8k_dir: str = ""        # flickr8k: folder with Flickr8k.token.txt and split files
    features: str = ""            # karpathy/flickr8k: .npy/.npz/.mat image features
    min_count: int = 5            # vocabulary: tokens seen at least this often in train


@dataclasses.dataclass
class ModelsConfig:
    architectures: list[str] = dataclasses.field(default_factory=lambda: list(ARCHITECTURES))
    runs: int = 3                 # independently seeded runs per architecture
    cell: str = "gru"
    embed_size: int = 256
    hidden_size: int = 256
    image_size: int = 256
    dropout: float = 0.5
    learn_init_state: bool = False
    normalize_image: bool = False
    checkpoints: list[str] = dataclasses.field(default_factory=list)  # already trained model.msgpack files
    vocabulary: str = ""          # the vocabulary JSON those checkpoints were trained with

    def captioner(self, arch: str) -> CaptionerConfig:
        return CaptionerConfig(arch=arch, cell=self.cell, embed_size=self.embed_size, hidden_size=self.hidden_size,
                               image_size=self.image_size, dropout=self.dropout,
                               learn_init_state=self.learn_init_state, normalize_image=self.normalize_image)


@dataclasses.dataclass
class TrainingConfig:
    epochs: int = 6
    batch_size: int = 128
    learning_rate: float = 1e-3
    patience: int = 2
    snapshot_epochs: list[int] = dataclasses.field(default_factory=lambda: [1])  # extra, weaker models

    def train_config(self, seed: int) -> TrainConfig:
        return TrainConfig(self.epochs, self.batch_size, self.learning_rate, self.patience,
                           tuple(self.snapshot_epochs), seed)


@dataclasses.dataclass
class GenerationConfig:
    beam_width: int = 3
    max_len: int = 50
    min_len: int = 5


@dataclasses.dataclass
class PostgenConfig:
    metrics: list[str] = dataclasses.field(default_factory=lambda: ["METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4",
                                                                    "ROUGE_L"])
    stopwords: str = ""           # WMD stop-word file ("" = the 2018 list from ../shared/data when present)
    corenlp_dir: str = ""         # SPICE: folder with the Stanford CoreNLP 3.6.0 jars


@dataclasses.dataclass
class PregenConfig:
    compat_2018: bool = False     # use the 2018 code's filter0 (positions NOT the top choice)
    group_by: str = ""            # table column to group correlations by ("" = all rows only)


@dataclasses.dataclass
class PrecomputedModel:
    """A model evaluated elsewhere: its RefProbs (.npz) and generated captions (one per line)."""

    architecture: str
    run: str
    ref_probs: str
    captions: str


@dataclasses.dataclass
class SearchConfig:
    name: str = "search"
    seed: int = 0
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    models: ModelsConfig = dataclasses.field(default_factory=ModelsConfig)
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)
    generation: GenerationConfig = dataclasses.field(default_factory=GenerationConfig)
    postgen: PostgenConfig = dataclasses.field(default_factory=PostgenConfig)
    pregen: PregenConfig = dataclasses.field(default_factory=PregenConfig)
    precomputed: list[PrecomputedModel] = dataclasses.field(default_factory=list)

    def to_toml(self) -> str:
        return tomli_w.dumps(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, raw: dict, source: str = "config") -> "SearchConfig":
        sections = {"data": DataConfig, "models": ModelsConfig, "training": TrainingConfig,
                    "generation": GenerationConfig, "postgen": PostgenConfig, "pregen": PregenConfig}
        raw = dict(raw)
        kwargs = {}
        for key, section_cls in sections.items():
            kwargs[key] = _build(section_cls, raw.pop(key, {}), f"{source} [{key}]")
        kwargs["precomputed"] = [_build(PrecomputedModel, m, f"{source} [[precomputed]]")
                                 for m in raw.pop("precomputed", [])]
        for key in ("name", "seed"):
            if key in raw:
                kwargs[key] = raw.pop(key)
        if raw:
            raise ValueError(f"{source}: unknown setting(s) {sorted(raw)}")
        config = cls(**kwargs)
        config.validate(source)
        return config

    @classmethod
    def load(cls, path) -> "SearchConfig":
        path = Path(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ValueError(f"{path}: cannot read config ({err})") from err
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from err
        return cls.from_dict(raw, str(path))

    def validate(self, source: str) -> None:
        if self.data.source not in ("shapes", "karpathy", "flickr8k"):
            raise ValueError(f"{source}: [data] source must be shapes, karpathy or flickr8k, got {self.data.source!r}")
        for arch in self.models.architectures:
            if arch not in ARCHITECTURES:
                raise ValueError(f"{source}: unknown architecture {arch!r} (choose from {ARCHITECTURES})")
        if self.data.source != "shapes" and not self.data.features and not self.precomputed:
            raise ValueError(f"{source}: [data] features is required for source {self.data.source!r}")
        if self.generation.beam_width < 1:
            raise ValueError(f"{source}: [generation] beam_width must be at least 1")


def _build(cls, values: dict, source: str):
    if not isinstance(values, dict):
        raise ValueError(f"{source}: expected a table of settings")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"{source}: unknown setting(s) {unknown}; known: {sorted(names)}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {err}") from err


def demo_config(quick: bool = False) -> SearchConfig:
    """The built-in demo: 4 architectures x 3 runs on the shapes dataset (smaller with quick)."""
    config = SearchConfig(name="demo-quick" if quick else "demo")
    config.models.embed_size = config.models.hidden_size = config.models.image_size = 128
    config.training.epochs = 5
    if quick:
        config.data = DataConfig(train=1200, val=200, test=300, encoder_epochs=3)
        config.models.runs = 1
        config.models.embed_size = config.models.hidden_size = config.models.image_size = 64
        config.training.epochs = 3
        config.training.batch_size = 64
    return config
