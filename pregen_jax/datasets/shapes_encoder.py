"""The built-in dataset's image encoder: a small CNN trained once per dataset, then frozen.

It is trained to name which (shape, colour) pairs, shapes, colours, sizes and grid cells are
in the picture; every caption model then reads the same features. Why shared rather than
trained jointly: it mirrors the 2018 setup (all models read the same pretrained VGG
features, so architectures differ only in the language side), it makes the models of a
search comparable, and it lets a caption model train in a fraction of the time.
"""
from __future__ import annotations

import functools
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization
from tqdm.auto import tqdm

from ..progress import bar_disabled
from ..training import checkpoints
from .corpus import CaptionDataset


class ImageEncoder(nn.Module):
    """u8[B, 48, 48, 3] -> (features f[B, 6*6*64], attribute logits f[B, num_attributes]).

    The features are the last pooled feature map, flattened row-major (so
    ``features.reshape(B, 36, 64)`` gives 36 region vectors): it keeps where things are,
    which a pooled vector would lose and the captions talk about.
    """

    num_attributes: int
    hidden_size: int = 256

    @nn.compact
    def __call__(self, pixels):
        x = pixels.astype(jnp.float32) / 127.5 - 1.0
        x = nn.relu(nn.Conv(24, (3, 3), strides=2)(x))   # 48 -> 24
        x = nn.relu(nn.Conv(48, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), (2, 2))               # 24 -> 12
        x = nn.relu(nn.Conv(64, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), (2, 2))               # 12 -> 6
        features = x.reshape(x.shape[0], -1)
        hidden = nn.relu(nn.Dense(self.hidden_size)(features))
        return features, nn.Dense(self.num_attributes)(hidden)


def _train_encoder(pixels, labels, epochs, batch_size, seed, progress):
    encoder = ImageEncoder(num_attributes=labels.shape[1])
    params = encoder.init(jax.random.PRNGKey(seed), jnp.zeros((1, *pixels.shape[1:]), jnp.uint8))
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        def loss_fn(p):
            return optax.sigmoid_binary_cross_entropy(encoder.apply(p, x)[1], y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        order = rng.permutation(len(pixels))
        batches = [order[s:s + batch_size] for s in range(0, len(order) - batch_size + 1, batch_size)]
        bar = tqdm(batches, desc=f"image encoder epoch {epoch + 1}/{epochs}", disable=bar_disabled(progress), leave=False)
        for k, batch in enumerate(bar):
            params, opt_state, loss = step(params, opt_state, pixels[batch], labels[batch].astype(np.float32))
            if k % 20 == 0:
                bar.set_postfix(loss=f"{float(loss):.4f}")
    return encoder, params


@functools.partial(jax.jit, static_argnums=0)
def _encode(encoder: ImageEncoder, params, pixels):
    """u8[B, 48, 48, 3] -> (features, attribute logits); compiled once per encoder and batch shape."""
    return encoder.apply(params, pixels)


def _extract(encoder, params, pixels, batch_size=500):
    return np.concatenate([np.asarray(_encode(encoder, params, pixels[s:s + batch_size])[0])
                           for s in range(0, len(pixels), batch_size)]).astype(np.float32)


def attach_image_features(dataset: CaptionDataset, cache_dir, epochs: int = 4, batch_size: int = 64,
                          seed: int = 0, progress: bool = True) -> dict:
    """Set ``features`` (f32[N, 2304]) on every split of a pixel dataset; the encoder is cached in ``cache_dir``.

    Returns a summary with the encoder's attribute accuracy on the test split.
    """
    train = dataset["train"]
    if train.pixels is None or train.labels is None:
        raise ValueError(f"dataset {dataset.name} has no pixels/labels to train an image encoder on")
    key = f"encoder-{train.content_hash()}-{len(train)}-e{epochs}-s{seed}"
    path = Path(cache_dir) / f"{key}.msgpack"
    encoder = ImageEncoder(num_attributes=train.labels.shape[1])
    if path.is_file():
        tree, _ = checkpoints.load(path)
        template = encoder.init(jax.random.PRNGKey(0), jnp.zeros((1, *train.pixels.shape[1:]), jnp.uint8))
        params = serialization.from_state_dict(template, tree["params"])
    else:
        encoder, params = _train_encoder(train.pixels, train.labels, epochs, batch_size, seed, progress)
        checkpoints.save(path, {"params": params}, {"epochs": epochs, "seed": seed})
    for split in dataset.splits.values():
        split.features = _extract(encoder, params, split.pixels)
    test = dataset.splits.get("test", train)
    logits = _encode(encoder, params, test.pixels[:500])[1]
    accuracy = float(((np.asarray(logits) > 0) == (test.labels[:500] > 0)).mean())
    return {"encoder": str(path), "attribute_accuracy": accuracy, "feature_size": int(train.features.shape[1])}
