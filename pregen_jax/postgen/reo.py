"""REO (Jiang et al. 2019) as post-gen metrics: relevance, extraness and omission of a caption,
against the image (``*_image``) and against the references (``*_refs``), in a shared
image-text space trained here (``pregen_jax.reo``; experiments/reo_shapes/ trains one and writes
the scorer folder that ``[postgen] reo_model`` names).

Unlike the text-only metrics, REO reads the images: the search binds each metric to the split's
image ids and features (``bind_images``) before scoring. The six metrics share one scorer and
one scoring pass per set of captions. Corpus score: the mean over images.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .base import PostgenMetric, PostgenOptions
from .registry import register_metric

MEASURES = {"REO_R_image": "R_image", "REO_E_image": "E_image", "REO_O_image": "O_image",
            "REO_R_refs": "R_refs", "REO_E_refs": "E_refs", "REO_O_refs": "O_refs"}


def _depends_on(options: PostgenOptions) -> dict:
    """What changes REO's scores besides captions, references and images: the scorer's files."""
    from ..io import file_hash
    from ..reo.scorer import DETECTOR_FILE, SCORER_FILES  # the scorer folder's file names, in one place
    folder = Path(options.reo_model)
    files = SCORER_FILES + ((DETECTOR_FILE,) if (folder / DETECTOR_FILE).is_file() else ())
    return {"scorer": [file_hash(str(folder / name)) for name in files]}


def _availability(options: PostgenOptions) -> tuple[bool, str]:
    if not options.reo_model:
        return False, ("no REO matching model: train one with experiments/reo_shapes/run.py and set "
                       "[postgen] reo_model = OUT/reo_scorer")
    from ..reo.scorer import SCORER_FILES
    folder = Path(options.reo_model)
    missing = [name for name in SCORER_FILES if not (folder / name).is_file()]
    if missing:
        return False, f"{folder}: not a REO scorer folder (no {', '.join(missing)})"
    return True, f"matching model in {folder}"


@functools.lru_cache(maxsize=4)
def _scorer(folder: str):
    from ..reo import load_scorer
    return load_scorer(folder)


class REO(PostgenMetric):
    """One of REO's six scores; higher is better for each (the paper's E and O are distances
    to the residual, so a larger value means less extra or less missing content)."""

    needs_images = True
    score_range = (-np.inf, np.inf)

    def __init__(self, name: str, folder: str):
        if name not in MEASURES:
            raise ValueError(f"unknown REO metric {name!r}; choose from {', '.join(MEASURES)}")
        self.name, self.folder = name, str(folder)
        self.scorer, self.vocab, self.image_features = _scorer(self.folder)
        self._regions: dict | None = None
        self._last: tuple | None = None

    def bind_images(self, image_ids, features, source: str) -> None:
        """Which image each id is: ``features`` f[I, D] (a flattened region grid, made into the scorer's
        regions: grid cells or a learned detector's object boxes) or f[I, K, Dr] regions, from ``source`` (the identity of the features; it must be the one the matcher was trained on)."""
        if source != self.image_features:
            raise ValueError(f"{self.folder}: the REO matcher was trained on image features {self.image_features!r}, "
                             f"this search's are {source!r}; train a matcher on these (experiments/reo_shapes)")
        regions = self.scorer.regions_from_features(features)  # grid cells or the detector's object boxes
        if regions.shape[-1] != self.scorer.matcher.config.region_size:
            raise ValueError(f"{self.folder}: the matcher reads {self.scorer.matcher.config.region_size}-dimensional "
                             f"regions, the images have {regions.shape[-1]}")
        self._regions = {image_id: k for k, image_id in enumerate(image_ids)}
        self._features = regions

    @classmethod
    def from_options(cls, name, options):
        return cls(name, options.reo_model)

    def _checked_stats(self, gts, res):
        if self._regions is None:
            raise ValueError(f"{self.name} reads the images: bind_images(image_ids, features) first")
        missing = [i for i in gts if i not in self._regions]
        if missing:
            raise ValueError(f"{self.name}: no image features for image {missing[0]}")
        ids = list(gts)
        key = (tuple(ids), tuple(res[i][0] for i in ids), tuple(tuple(gts[i]) for i in ids))
        if self._last is None or self._last[0] != key:
            regions = self._features[[self._regions[i] for i in ids]]
            candidates = [res[i][0].split() for i in ids]
            references = [[ref.split() for ref in gts[i]] for i in ids]
            self._last = (key, self.scorer.score(regions, candidates, references))
        return np.asarray(self._last[1][MEASURES[self.name]], np.float64).reshape(-1, 1)


for _name, _what in (("R", "relevance"), ("E", "extraness (higher: less extra content)"),
                     ("O", "omission (higher: less missing content)")):
    for _truth in ("image", "refs"):
        register_metric(f"REO_{_name}_{_truth}", REO, _availability,
                        f"REO {_what} against the {'image' if _truth == 'image' else 'references'} "
                        "(needs a matching model)", depends_on=_depends_on)
