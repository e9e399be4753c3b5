"""Object regions for the shapes dataset, as SCAN has them (one vector per object, from boxes),
instead of the encoder's 6x6 grid.

- ``oracle_boxes``: the scene's true boxes (what a perfect detector would give).
- ``RegionDetector``: a small learned detector on the encoder's grid map, trained on the
  training split's boxes only (as Visual Genome's boxes supervise the bottom-up detector):
  per grid cell an objectness logit and the object's centre and radius, then greedy
  non-maximum suppression.
- ``box_regions``: RoI pooling of the grid map: each box's vector is the mean of the cells
  weighted by how much of each cell the box covers; the background's is the mean of the cells
  weighted by how much of each no box covers. Regions f[I, 1 + 3, C]: background first, then
  the objects; missing objects are zero vectors (padding, skipped by every mean over regions).
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from ..datasets.shapes import SIZE, Scene
from ..training import checkpoints
from .model import shapes_regions

GRID = 6
MAX_OBJECTS = 3
CELL = SIZE / GRID
REGION_KINDS = ("grid", "oracle", "learned")


def oracle_boxes(scenes: list[Scene]) -> np.ndarray:
    """f32[I, 3, 4]: (x0, y0, x1, y1) in pixels of each object's square box (centre +- radius),
    zeros where the scene has fewer objects."""
    boxes = np.zeros((len(scenes), MAX_OBJECTS, 4), np.float32)
    for n, scene in enumerate(scenes):
        for k, o in enumerate(scene.objects):
            boxes[n, k] = (o.cx - o.radius, o.cy - o.radius, o.cx + o.radius, o.cy + o.radius)
    return boxes


def cell_coverage(boxes: np.ndarray, grid: int = GRID) -> np.ndarray:
    """f32[I, B, grid*grid]: the fraction of each grid cell (row-major) that each box covers."""
    edges = np.arange(grid + 1) * (SIZE / grid)
    lo, hi = edges[:-1], edges[1:]

    def overlap(a, b):  # a, b f[I, B] -> f[I, B, grid]
        return np.clip(np.minimum(b[..., None], hi) - np.maximum(a[..., None], lo), 0, None) / (SIZE / grid)
    ox = overlap(boxes[..., 0], boxes[..., 2])
    oy = overlap(boxes[..., 1], boxes[..., 3])
    return (oy[..., :, None] * ox[..., None, :]).reshape(*boxes.shape[:2], grid * grid).astype(np.float32)


def box_regions(features: np.ndarray, boxes: np.ndarray, grid: int = GRID) -> np.ndarray:
    """RoI-pooled regions f32[I, 1 + B, C] from flattened grid maps f[I, grid*grid*C] and boxes
    f[I, B, 4] (all-zero box: no object): the background first, then one vector per box."""
    maps = np.asarray(features, np.float32).reshape(len(features), grid * grid, -1)
    cover = cell_coverage(boxes, grid)                                         # [I, B, G]
    weights = cover / np.maximum(cover.sum(axis=-1, keepdims=True), 1e-6)
    background = 1.0 - np.clip(cover.sum(axis=1), 0.0, 1.0)                     # [I, G]
    background = np.where(background.sum(axis=-1, keepdims=True) > 0, background, 1.0)
    weights = np.concatenate([background[:, None] / background.sum(axis=-1, keepdims=True)[:, None], weights], 1)
    return np.einsum("ibg,igc->ibc", weights, maps)


# ------------------------------------------------------------------------ the learned detector


@dataclasses.dataclass(frozen=True)
class DetectorConfig:
    hidden: int = 128
    epochs: int = 30
    batch_images: int = 256
    learning_rate: float = 3e-3
    threshold: float = 0.1     # objectness probability a kept detection needs (the best one is always kept;
                               # a centre near a cell border splits its probability: on the quick data 0.1
                               # gets the number of objects right in 80% of test images, 0.5 in 35%)
    seed: int = 0


class _DetectorModule(nn.Module):
    """Per grid cell, from its 3x3 neighbourhood of features: (objectness logit, dx, dy, log radius),
    the centre offset in cells from the cell's centre."""

    hidden: int

    @nn.compact
    def __call__(self, maps):                       # maps f[I, G, G, C]
        x = nn.Conv(self.hidden, (3, 3), padding="SAME")(maps)
        x = nn.relu(x)
        x = nn.Conv(self.hidden, (1, 1))(x)
        x = nn.relu(x)
        return nn.Conv(4, (1, 1))(x)               # [I, G, G, 4]


def _targets(scenes: list[Scene], grid: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """(objectness f32[I, G, G], box targets f32[I, G, G, 3]: dx, dy in cells from the cell centre, log radius)."""
    hit = np.zeros((len(scenes), grid, grid), np.float32)
    box = np.zeros((len(scenes), grid, grid, 3), np.float32)
    cell = SIZE / grid
    for n, scene in enumerate(scenes):
        for o in scene.objects:
            col, row = min(int(o.cx // cell), grid - 1), min(int(o.cy // cell), grid - 1)
            hit[n, row, col] = 1.0
            box[n, row, col] = (o.cx / cell - col - 0.5, o.cy / cell - row - 0.5, np.log(o.radius))
    return hit, box


@dataclasses.dataclass
class RegionDetector:
    """A trained detector: ``boxes(features)`` gives f32[I, 3, 4] boxes (zeros: none)."""

    config: DetectorConfig
    params: dict
    channels: int
    history: list = dataclasses.field(default_factory=list)

    @property
    def module(self):
        return _DetectorModule(self.config.hidden)

    def predict(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(objectness probabilities f[I, G, G], boxes f[I, G, G, 4] in pixels) for flattened grid maps."""
        maps = np.asarray(features, np.float32).reshape(len(features), GRID, GRID, self.channels)
        out = np.concatenate([np.asarray(_apply(self.config.hidden, self.params, maps[s:s + 1000]))
                              for s in range(0, len(maps), 1000)])
        prob = 1 / (1 + np.exp(-out[..., 0]))
        centre = np.arange(GRID) + 0.5
        cx = (out[..., 1] + centre[None, None, :]) * CELL
        cy = (out[..., 2] + centre[None, :, None]) * CELL
        r = np.exp(np.clip(out[..., 3], 0.0, 3.0))
        return prob, np.stack([cx - r, cy - r, cx + r, cy + r], -1)

    def boxes(self, features: np.ndarray) -> np.ndarray:
        """Greedy non-maximum suppression: the most confident cell, then the next not within one
        cell of a kept one, while its probability reaches the threshold (at least one, at most 3)."""
        prob, cells = self.predict(features)
        out = np.zeros((len(prob), MAX_OBJECTS, 4), np.float32)
        flat_p, flat_b = prob.reshape(len(prob), -1), cells.reshape(len(prob), -1, 4)
        rows, cols = np.divmod(np.arange(GRID * GRID), GRID)
        for n in range(len(prob)):
            kept = []
            for g in np.argsort(-flat_p[n]):
                if len(kept) == MAX_OBJECTS or (kept and flat_p[n, g] < self.config.threshold):
                    break
                if all(max(abs(rows[g] - rows[k]), abs(cols[g] - cols[k])) > 1 for k in kept):
                    kept.append(g)
            out[n, :len(kept)] = flat_b[n, kept]
        return out


@functools.partial(jax.jit, static_argnums=0)
def _apply(hidden, params, maps):
    return _DetectorModule(hidden).apply(params, maps)


def train_detector(features: np.ndarray, scenes: list[Scene], config: DetectorConfig = DetectorConfig(),
                   progress: bool = False) -> RegionDetector:
    """Train the detector on grid maps f[I, G*G*C] of the training split and their scenes' boxes."""
    channels = features.shape[1] // (GRID * GRID)
    maps = np.asarray(features, np.float32).reshape(len(features), GRID, GRID, channels)
    hit, box = _targets(scenes)
    module = _DetectorModule(config.hidden)
    params = module.init(jax.random.PRNGKey(config.seed), maps[:1])
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, m, h, b):
        def loss_fn(p):
            out = module.apply(p, m)
            objectness = optax.sigmoid_binary_cross_entropy(out[..., 0], h).mean()
            regression = jnp.sum(h[..., None] * (out[..., 1:] - b) ** 2) / jnp.maximum(h.sum(), 1.0)
            return objectness + regression
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    rng = np.random.default_rng(config.seed)
    history = []
    size = min(config.batch_images, len(maps))
    for epoch in range(config.epochs):
        order = rng.permutation(len(maps))
        losses = []
        for s in range(0, len(order) - size + 1, size):
            idx = order[s:s + size]
            params, opt_state, loss = step(params, opt_state, maps[idx], hit[idx], box[idx])
            losses.append(float(loss))
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses))})
        if progress:
            print(f"detector epoch {epoch + 1}: loss {history[-1]['loss']:.4f}", flush=True)
    return RegionDetector(config, params, channels, history)


def detection_quality(boxes: np.ndarray, scenes: list[Scene], iou: float = 0.5) -> dict[str, float]:
    """Precision and recall of predicted boxes f[I, 3, 4] against the scenes' at IoU >= ``iou``,
    and the share of images whose number of detections is right."""
    truth = oracle_boxes(scenes)
    hits = predicted = actual = right_count = 0
    for n, scene in enumerate(scenes):
        pred = [b for b in boxes[n] if b.any()]
        true = list(truth[n][:len(scene.objects)])
        predicted += len(pred)
        actual += len(true)
        right_count += len(pred) == len(true)
        used = set()
        for b in pred:
            for k, t in enumerate(true):
                if k not in used and _iou(b, t) >= iou:
                    used.add(k)
                    hits += 1
                    break
    return {"precision": hits / max(predicted, 1), "recall": hits / max(actual, 1),
            "count_right": right_count / max(len(scenes), 1)}


def _iou(a, b) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def regions_of(kind: str, features: np.ndarray, scenes: list[Scene] | None = None,
               detector: RegionDetector | None = None) -> np.ndarray:
    """Regions f32[I, K, C] of one kind: "grid" (the 36 cells), "oracle" (the scenes' boxes) or
    "learned" (the detector's boxes), both of the latter RoI-pooled with the background first."""
    if kind == "grid":
        return shapes_regions(features, GRID)  # (with its check that the features are a flattened grid map)
    if kind == "oracle":
        if scenes is None:
            raise ValueError("oracle regions need the scenes")
        return box_regions(features, oracle_boxes(scenes))
    if kind == "learned":
        if detector is None:
            raise ValueError("learned regions need a trained RegionDetector")
        return box_regions(features, detector.boxes(features))
    raise ValueError(f"region kind must be one of {', '.join(REGION_KINDS)}, not {kind!r}")


def save_detector(detector: RegionDetector, path) -> None:
    """The detector's parameters and settings in one file (atomic)."""
    checkpoints.save(Path(path), {"params": detector.params},
                     {"detector_config": dataclasses.asdict(detector.config), "channels": detector.channels,
                      "history": detector.history})


def load_detector(path) -> RegionDetector:
    """A detector saved by ``save_detector``."""
    tree, meta = checkpoints.load(Path(path))
    try:
        config = DetectorConfig(**meta["detector_config"])
        channels = int(meta["channels"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a region detector file ({err})") from err
    template = _DetectorModule(config.hidden).init(jax.random.PRNGKey(0), jnp.zeros((1, GRID, GRID, channels)))
    try:
        params = serialization.from_state_dict(template, tree["params"])
    except Exception as err:
        raise ValueError(f"{path}: parameters do not fit the detector config ({err})") from err
    return RegionDetector(config, params, channels, meta.get("history", []))
