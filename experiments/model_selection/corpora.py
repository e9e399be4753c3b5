"""The two corpora of the study: the built-in shapes dataset and Flickr8k with a text stand-in
for the image.

Flickr8k has no images here, so each image is represented by the mean GloVe 50d vector of
one of its five captions (held out: never a reference, never trained on); the other four
captions are its references. A model then captions "the scene another annotator
described", which keeps the captioning task real language with a per-image signal.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from pregen_jax import io
from pregen_jax.datasets import ShapesConfig, Vocabulary, load_shapes, read_flickr8k


@dataclasses.dataclass
class Split:
    """image_ids: str[N]; features: f32[N, D]; captions[n][r]: token lists."""

    image_ids: list[str]
    features: np.ndarray
    captions: list[list[list[str]]]

    def __len__(self) -> int:
        return len(self.image_ids)

    def take(self, n: int) -> Split:
        return Split(self.image_ids[:n], self.features[:n], self.captions[:n])


@dataclasses.dataclass
class Corpus:
    name: str
    train: Split
    val: Split
    test: Split
    vocab: Vocabulary
    description: str


def shapes(train_images: int, val_images: int, test_images: int, dataset_size: tuple[int, int, int],
           encoder_epochs: int, progress: bool) -> Corpus:
    """The built-in dataset with the shared image encoder's features, as ``pipeline.sources.load_data``
    builds it; the first ``train_images`` / ``val_images`` / ``test_images`` of each split are used."""
    from pregen_jax.datasets.shapes_encoder import attach_image_features
    dataset = load_shapes(ShapesConfig(*dataset_size, seed=0))
    attach_image_features(dataset, io.default_cache_dir(), epochs=encoder_epochs, seed=0, progress=progress)
    splits = {name: Split(s.image_ids, s.features, s.captions) for name, s in dataset.splits.items()}
    train = splits["train"].take(train_images)
    vocab = Vocabulary.build(train.captions, 5)
    return Corpus("shapes", train, splits["val"].take(val_images), splits["test"].take(test_images), vocab,
                  f"built-in shapes v1 (seed 0, {'/'.join(map(str, dataset_size))}; encoder {encoder_epochs} epochs), "
                  f"{train_images} training images used")


def mean_glove(tokens: list[str], glove) -> np.ndarray:
    """f32[50]: the mean GloVe vector of the tokens that have one (zeros when none has)."""
    rows = [glove.row[t] for t in tokens if t in glove.row]
    if not rows:
        return np.zeros(glove.matrix.shape[1], np.float32)
    return np.asarray(glove.matrix[sorted(rows)], np.float32).mean(0)


def _glove_split(image_ids, captions, glove) -> Split:
    """Caption 0 of each image becomes its feature vector, captions 1.. its references."""
    kept = [(i, refs) for i, refs in zip(image_ids, captions) if len(refs) >= 2]
    features = np.stack([mean_glove(refs[0], glove) for _, refs in kept])
    return Split([i for i, _ in kept], features, [refs[1:] for _, refs in kept])


def flickr8k(train_images: int, val_images: int, test_images: int, min_count: int = 5) -> Corpus:
    """Flickr8k (../shared/data/flickr8k) with the held-out-caption GloVe stand-in for images."""
    from pregen_jax.postgen.wmd import GloveVectors
    folder = io.shared_data("flickr8k")
    if not (folder / "Flickr8k.token.txt").is_file():
        raise FileNotFoundError(f"{folder}: Flickr8k not found (see ../shared/data/README.md)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split files' stray 1.jpg..5.jpg entries
        dataset = read_flickr8k(folder)
    glove = GloveVectors()
    splits = {name: _glove_split(s.image_ids, s.captions, glove) for name, s in dataset.splits.items()}
    train = splits["train"].take(train_images)
    vocab = Vocabulary.build(train.captions, min_count)
    return Corpus("flickr8k", train, splits["val"].take(val_images), splits["test"].take(test_images), vocab,
                  f"Flickr8k ({train_images}/{val_images} train/val images); image = mean GloVe 6B 50d of "
                  "caption 0, references = captions 1-4")
