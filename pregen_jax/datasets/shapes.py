"""The built-in visual captioning dataset: coloured shapes on textured backgrounds.

Deterministic from a seed. Each image (48x48 RGB) holds 1-3 objects, each with a shape (7
kinds), a colour (8), a size (small/big) and a place (a 3x3 grid cell); pairs of objects
stand in spatial relations. Five references per image come from a stochastic grammar that
behaves like different annotators: each mentions its own subset of objects and attributes,
uses synonyms ("square", "box", "block"), and picks among list, existential, relational,
counting and locative sentence forms, 3 to 15 words long.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .. import io
from ..io import default_cache_dir
from .corpus import CaptionDataset, CaptionSplit

VERSION = 1
SIZE = 48

SHAPES = {  # shape -> nouns annotators use for it
    "circle": ["circle", "ball", "disc", "dot"],
    "square": ["square", "box", "block"],
    "triangle": ["triangle"],
    "diamond": ["diamond", "rhombus"],
    "cross": ["cross", "plus"],
    "ring": ["ring", "donut", "hoop"],
    "bar": ["bar", "stripe", "rectangle"],
}
COLOURS = {
    "red": (220, 30, 30), "green": (30, 180, 40), "blue": (30, 60, 220), "yellow": (235, 220, 30),
    "purple": (140, 40, 180), "orange": (245, 140, 20), "white": (245, 245, 245), "black": (15, 15, 15),
}
SIZE_WORDS = {"small": ["small", "little", "tiny"], "big": ["big", "large"]}
ROWS, COLS = ["top", "middle", "bottom"], ["left", "middle", "right"]
BACKGROUNDS = {"speckled": ["speckled", "grey", "noisy"], "striped": ["striped"], "checkered": ["checkered"]}
NUMBERS = ["one", "two", "three"]


@dataclasses.dataclass(frozen=True)
class ShapesConfig:
    """Size and seed of the built-in dataset (defaults: Flickr8k's 6000/1000/1000 split)."""

    train: int = 6000
    val: int = 1000
    test: int = 1000
    refs_per_image: int = 5
    seed: int = 0

    @property
    def folder_name(self) -> str:
        return f"shapes-v{VERSION}-seed{self.seed}-{self.train}-{self.val}-{self.test}-r{self.refs_per_image}"


@dataclasses.dataclass
class Obj:
    shape: str
    colour: str
    size: str
    row: int
    col: int
    cx: float
    cy: float
    radius: float


@dataclasses.dataclass
class Scene:
    """What one image shows, exactly: its objects (in drawing order) and its background.

    The ground truth for checking caption metrics against known content (see ``load_scenes``).
    """

    objects: list[Obj]
    background: str

    def relations(self) -> list[tuple[int, str, int]]:
        """(a, relation, b) for every ordered pair of objects: "a is <relation> b".

        The relation is the grammar's spatial one ("above", "below", "left of", "right of");
        the grammar also says "next to"/"near" at random, which holds for every pair.
        """
        return [(a, relation_of(self.objects[a], self.objects[b]), b)
                for a in range(len(self.objects)) for b in range(len(self.objects)) if a != b]

    def to_json(self) -> dict:
        return {"objects": [dataclasses.asdict(obj) for obj in self.objects], "background": self.background}

    @classmethod
    def from_json(cls, data: dict) -> Scene:
        return cls([Obj(**obj) for obj in data["objects"]], data["background"])


@dataclasses.dataclass(frozen=True)
class Mentioned:
    """What one noun phrase of a reference claims: an object with this shape, colour, size and
    grid cell (``None``: not said; the count form's "one of them red" says a colour only)."""

    shape: str | None = None
    colour: str | None = None
    size: str | None = None
    cell: int | None = None

    def fits(self, obj: Obj) -> bool:
        return ((self.shape is None or self.shape == obj.shape) and (self.colour is None or self.colour == obj.colour)
                and (self.size is None or self.size == obj.size)
                and (self.cell is None or self.cell == obj.row * 3 + obj.col))


@dataclasses.dataclass(frozen=True)
class ReferenceForm:
    """The logical form of one reference, as the grammar emitted it.

    The sentence is true of a scene when distinct objects fit ``objects`` (one each), the first
    two stand in ``relation`` ("above", "below", "left of", "right of", or "near": true of any
    pair), the scene holds exactly ``count`` objects, and its background is ``background``
    (``None``: not said). "there are two shapes ..." says two of the objects, not the scene's
    count: the grammar writes it for any subset of two.
    """

    objects: tuple[Mentioned, ...]
    relation: str | None = None
    count: int | None = None
    background: str | None = None

    def holds(self, scene: Scene) -> bool:
        """Whether the sentence is true of ``scene`` (a plain search over assignments: the oracle)."""
        if (self.count is not None and self.count != len(scene.objects)) or \
                (self.background is not None and self.background != scene.background):
            return False
        for chosen in itertools.permutations(scene.objects, len(self.objects)):
            if all(m.fits(o) for m, o in zip(self.objects, chosen)) and \
                    (self.relation in (None, "near") or relation_of(chosen[0], chosen[1]) == self.relation):
                return True
        return False

    def to_json(self) -> dict:
        return {"objects": [dataclasses.asdict(m) for m in self.objects], "relation": self.relation,
                "count": self.count, "background": self.background}


def relation_of(a: Obj, b: Obj) -> str:
    """Where ``a`` lies relative to ``b`` (image y grows downwards), as the grammar words it."""
    dx, dy = b.cx - a.cx, b.cy - a.cy
    if abs(dy) >= abs(dx):
        return "above" if dy > 0 else "below"
    return "left of" if dx > 0 else "right of"


# ------------------------------------------------------------------------ scenes and pixels


def _scene(rng) -> tuple[list[Obj], str]:
    n = int(rng.choice([1, 2, 3], p=[0.3, 0.4, 0.3]))
    cells = rng.choice(9, n, replace=False)
    objs = []
    for cell in cells:
        row, col = divmod(int(cell), 3)
        size = "big" if rng.random() < 0.5 else "small"
        radius = rng.uniform(6.5, 8.0) if size == "big" else rng.uniform(3.5, 4.8)
        cx = 8 + col * 16 + rng.uniform(-1.5, 1.5)
        cy = 8 + row * 16 + rng.uniform(-1.5, 1.5)
        objs.append(Obj(str(rng.choice(list(SHAPES))), str(rng.choice(list(COLOURS))), size, row, col, cx, cy, radius))
    return objs, str(rng.choice(list(BACKGROUNDS)))


def _shape_mask(obj: Obj, yy, xx):
    dx, dy, r = xx - obj.cx, yy - obj.cy, obj.radius
    dist2 = dx ** 2 + dy ** 2
    if obj.shape == "circle":
        return dist2 <= r ** 2
    if obj.shape == "square":
        return np.maximum(abs(dx), abs(dy)) <= r * 0.85
    if obj.shape == "triangle":
        return (dy <= 0.8 * r) & (abs(dx) <= (dy + r) * 0.6)
    if obj.shape == "diamond":
        return abs(dx) + abs(dy) <= r
    if obj.shape == "cross":
        return ((abs(dx) <= r / 3) & (abs(dy) <= r)) | ((abs(dy) <= r / 3) & (abs(dx) <= r))
    if obj.shape == "ring":
        return (dist2 <= r ** 2) & (dist2 >= (0.55 * r) ** 2)
    return (abs(dx) <= r) & (abs(dy) <= 0.4 * r)  # bar


def _render(objs: list[Obj], background: str, rng) -> np.ndarray:
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    base = rng.uniform(90, 160, 3)
    image = np.broadcast_to(base, (SIZE, SIZE, 3)) + rng.normal(0, 12, (SIZE, SIZE, 3))
    if background == "striped":
        period = rng.integers(4, 8)
        image = image + 25 * (((xx + yy * rng.integers(0, 2)) // period) % 2)[..., None]
    elif background == "checkered":
        period = rng.integers(4, 8)
        image = image + 25 * (((xx // period) + (yy // period)) % 2)[..., None]
    for obj in objs:
        colour = np.asarray(COLOURS[obj.colour], np.float32) + rng.normal(0, 10, 3)
        image = np.where(_shape_mask(obj, yy, xx)[..., None], colour, image)
    return np.clip(image, 0, 255).astype(np.uint8)


def attribute_names() -> list[str]:
    """Names of the multi-hot attribute labels the image encoder learns to predict."""
    names = [f"{c}_{s}" for s in SHAPES for c in COLOURS] + list(SHAPES) + list(COLOURS)
    names += [f"{z}_{s}" for s in SHAPES for z in SIZE_WORDS] + [f"cell{k}" for k in range(9)]
    return names + [f"bg_{b}" for b in BACKGROUNDS] + [f"count{n}" for n in (1, 2, 3)]


_ATTRIBUTE_INDEX = {name: k for k, name in enumerate(attribute_names())}


def _labels(objs: list[Obj], background: str) -> np.ndarray:
    index = _ATTRIBUTE_INDEX
    labels = np.zeros(len(index), np.uint8)
    for obj in objs:
        for name in (f"{obj.colour}_{obj.shape}", obj.shape, obj.colour, f"{obj.size}_{obj.shape}",
                     f"cell{obj.row * 3 + obj.col}"):
            labels[index[name]] = 1
    labels[index[f"bg_{background}"]] = labels[index[f"count{len(objs)}"]] = 1
    return labels


# ------------------------------------------------------------------------ the grammar


class _Annotator:
    """One description of one scene: a random style, then a random sentence form."""

    def __init__(self, rng, objs, background):
        self.rng, self.objs, self.background = rng, objs, background
        self.p_colour = rng.uniform(0.6, 1.0)
        self.p_size = rng.uniform(0.1, 0.7)
        self.said: list[Mentioned] = []  # each noun phrase's claim, in order (recorded only: no draws)
        self.form: ReferenceForm | None = None  # the last sentence's logical form

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def noun_phrase(self, obj, det=None):
        words = [det or self.pick(["a", "a", "the"])]
        size = colour = None
        if self.rng.random() < self.p_size:
            words.append(self.pick(SIZE_WORDS[obj.size]))
            size = obj.size
        if self.rng.random() < self.p_colour:
            words.append(obj.colour)
            colour = obj.colour
        words.append(self.pick(SHAPES[obj.shape]))
        self.said.append(Mentioned(obj.shape, colour, size))
        if words[0] == "a" and words[1][0] in "aeiou":
            words[0] = "an"
        return words

    def place(self, obj):
        row, col = ROWS[obj.row], COLS[obj.col]
        if row == "middle" and col == "middle":
            return self.pick([["in", "the", "middle"], ["in", "the", "center"]])
        if row == "middle":
            return ["on", "the", col]
        if col == "middle":
            return ["at", "the", row]
        return ["in", "the", row, col, "corner"]

    def relation(self, a, b):
        dx, dy = b.cx - a.cx, b.cy - a.cy
        if self.rng.random() < 0.2:
            self.said_relation = "near"
            return self.pick([["next", "to"], ["near"]])
        self.said_relation = relation_of(a, b)
        if abs(dy) >= abs(dx):
            return ["above"] if dy > 0 else ["below"]
        return ["to", "the", "left", "of"] if dx > 0 else ["to", "the", "right", "of"]

    def background_phrase(self):
        self.said_background = self.background
        return ["on", "a", self.pick(BACKGROUNDS[self.background]), "background"]

    def _placed(self, obj):
        """The last noun phrase's claim, now with ``obj``'s grid cell (the place form said it)."""
        self.said[-1] = dataclasses.replace(self.said[-1], cell=obj.row * 3 + obj.col)

    def sentence(self) -> list[str]:
        """One reference; its logical form is left in ``self.form``."""
        self.said, self.said_relation, self.said_background, count = [], None, None, None
        objs = list(self.objs)
        self.rng.shuffle(objs)
        mentioned = objs[: int(self.rng.integers(1, len(objs) + 1))] if self.rng.random() < 0.5 else objs
        forms = ["list", "there", "picture", "place"]
        if len(mentioned) >= 2:
            forms += ["relation", "relation"]
        if len(self.objs) >= 2:
            forms.append("count")
        form = self.pick(forms)
        if form == "relation":
            a, b = mentioned[0], mentioned[1]
            words = self.noun_phrase(a) + self.relation(a, b) + self.noun_phrase(b)
        elif form == "count":
            one = self.pick(list(self.objs))
            noun = self.pick(["shapes", "objects", "things"])
            words = [NUMBERS[len(self.objs) - 1], noun]
            count = len(self.objs)
            if self.rng.random() < 0.6:
                if self.rng.random() < 0.7:
                    words += ["one", "of", "them", one.colour]
                    self.said.append(Mentioned(colour=one.colour))
                else:
                    words += ["one", "of", "them", "a", self.pick(SHAPES[one.shape])]
                    self.said.append(Mentioned(shape=one.shape))
            else:
                words += self.background_phrase()
        elif form == "there":
            if len(mentioned) == 1:
                words = ["there", "is"] + self.noun_phrase(mentioned[0], det="a")
                if self.rng.random() < 0.5:
                    words += self.place(mentioned[0])
                    self._placed(mentioned[0])
            else:
                words = ["there", "are", NUMBERS[len(mentioned) - 1], "shapes"] + self._list(mentioned)
        elif form == "picture":
            words = ["a", self.pick(["picture", "photo", "drawing"]), "of"] + self._list(mentioned)
            if self.rng.random() < 0.3:
                words += self.background_phrase()
        elif form == "place":
            obj = mentioned[0]
            words = self.noun_phrase(obj) + self.place(obj)
            self._placed(obj)
        else:
            words = self._list(mentioned)
            if self.rng.random() < 0.25:
                words += self.background_phrase()
        self.form = ReferenceForm(tuple(self.said), self.said_relation, count, self.said_background)
        return words

    def _list(self, objs):
        words = []
        for k, obj in enumerate(objs):
            if k:
                words.append("and")
            words += self.noun_phrase(obj, det="a")
        return words


def _describe(rng, objs, background, count, forms: list | None = None) -> list[list[str]]:
    """``count`` references of a scene; their logical forms are appended to ``forms`` when given."""
    refs = []
    while len(refs) < count:
        annotator = _Annotator(rng, objs, background)
        words = annotator.sentence()
        if 3 <= len(words) <= 15:
            refs.append(words)
            if forms is not None:
                forms.append(annotator.form)
    return refs


# ------------------------------------------------------------------------ building and caching


def generate(config: ShapesConfig) -> CaptionDataset:
    """Generate the dataset in memory (a few seconds for the default 8,000 images)."""
    return generate_with_scenes(config)[0]


def generate_with_scenes(config: ShapesConfig) -> tuple[CaptionDataset, dict[str, list[Scene]]]:
    """The dataset and, per split, the scene behind every image (same pixels and captions as ``generate``)."""
    return generate_with_forms(config)[:2]


def generate_with_forms(config: ShapesConfig) -> tuple[CaptionDataset, dict[str, list[Scene]],
                                                       dict[str, list[list[ReferenceForm]]]]:
    """The dataset, the scenes, and per split the logical form of every reference
    (``forms[split][n][r]`` for ``captions[n][r]``); same pixels and captions as ``generate``."""
    splits, scenes, forms = {}, {}, {}
    for offset, (split, count) in enumerate((("train", config.train), ("val", config.val), ("test", config.test))):
        rng = np.random.default_rng([config.seed, VERSION, offset])
        pixels = np.empty((count, SIZE, SIZE, 3), np.uint8)
        labels = np.empty((count, len(_ATTRIBUTE_INDEX)), np.uint8)
        captions, scenes[split], forms[split] = [], [], []
        for n in range(count):
            objs, background = _scene(rng)
            pixels[n] = _render(objs, background, rng)
            labels[n] = _labels(objs, background)
            forms[split].append([])
            captions.append(_describe(rng, objs, background, config.refs_per_image, forms[split][-1]))
            scenes[split].append(Scene(objs, background))  # recorded only: no extra draws from rng
        splits[split] = CaptionSplit([f"{split}-{n:05d}" for n in range(count)], captions, pixels, labels=labels)
    return CaptionDataset("shapes", splits), scenes, forms


SCENES_FILE = "scenes.json"


def _scenes_json(scenes: dict[str, list[Scene]]) -> str:
    return json.dumps({split: [scene.to_json() for scene in split_scenes] for split, split_scenes in scenes.items()})


def load_shapes(config: ShapesConfig = ShapesConfig(), cache_dir=None) -> CaptionDataset:
    """The built-in dataset, generated once into ``cache_dir`` (with its seed and version)."""
    folder = Path(cache_dir or default_cache_dir()) / config.folder_name
    if not (folder / "meta.json").is_file():
        dataset, scenes = generate_with_scenes(config)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
        try:
            for split, data in dataset.splits.items():
                np.save(staging / f"{split}_pixels.npy", data.pixels)
                np.save(staging / f"{split}_labels.npy", data.labels)
                (staging / f"{split}_captions.json").write_text(json.dumps(
                    {"image_ids": data.image_ids, "captions": [[" ".join(r) for r in refs] for refs in data.captions]}))
            (staging / SCENES_FILE).write_text(_scenes_json(scenes))
            (staging / "meta.json").write_text(json.dumps({"version": VERSION, **dataclasses.asdict(config)}))
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return dataset
    splits = {}
    for split in ("train", "val", "test"):
        try:
            data = json.loads((folder / f"{split}_captions.json").read_text())
            pixels = np.load(folder / f"{split}_pixels.npy")
            labels = np.load(folder / f"{split}_labels.npy")
        except (OSError, ValueError) as err:
            raise ValueError(f"{folder}: damaged dataset cache ({err}); delete the folder to regenerate it") from err
        splits[split] = CaptionSplit(data["image_ids"], [[r.split() for r in refs] for refs in data["captions"]], pixels,
                                     labels=labels)
    return CaptionDataset("shapes", splits)


def load_scenes(config: ShapesConfig = ShapesConfig(), cache_dir=None) -> dict[str, list[Scene]]:
    """The scene behind every image of every split, from ``scenes.json`` in the dataset's cache folder.

    A cache folder made before scenes were stored lacks the file: the dataset is then generated
    again (deterministic from the seed), checked against the cached captions, and the scenes are
    added to the folder.
    """
    dataset = load_shapes(config, cache_dir)
    folder = Path(cache_dir or default_cache_dir()) / config.folder_name
    path = folder / SCENES_FILE
    if not path.is_file():
        regenerated, scenes = generate_with_scenes(config)
        for split, data in dataset.splits.items():
            if regenerated[split].captions != data.captions:
                raise ValueError(f"{folder}: cached captions differ from those the generator makes now; "
                                 "delete the folder to regenerate it")
        io.write_text(_scenes_json(scenes), path)
        return scenes
    try:
        data = json.loads(path.read_text())
        scenes = {split: [Scene.from_json(scene) for scene in data[split]] for split in dataset.splits}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: damaged scene file ({err}); delete it to regenerate it") from err
    for split, split_scenes in scenes.items():
        if len(split_scenes) != len(dataset[split]):
            raise ValueError(f"{path}: {len(split_scenes)} {split} scenes but the split has {len(dataset[split])} images")
    return scenes


def load_reference_forms(config: ShapesConfig = ShapesConfig(), cache_dir=None) -> dict[str, list[list[ReferenceForm]]]:
    """The logical form of every cached reference (``forms[split][n][r]``): the dataset is generated
    again (deterministic from the seed) and its captions checked against the cache's."""
    dataset = load_shapes(config, cache_dir)
    regenerated, _, forms = generate_with_forms(config)
    for split, data in dataset.splits.items():
        if regenerated[split].captions != data.captions:
            raise ValueError(f"{Path(cache_dir or default_cache_dir()) / config.folder_name}: cached captions differ "
                             "from those the generator makes now; delete the folder to regenerate it")
    return forms
