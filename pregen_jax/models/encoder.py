"""A small CNN that turns a 48x48 RGB image of the built-in dataset into a feature vector.

It is trained once per dataset, to name which (shape, colour) pairs, shapes, colours, sizes
and grid cells are in the picture, and then frozen; every caption model reads the same
features. Why shared rather than trained jointly: it mirrors the 2018 setup (all models
read the same pretrained VGG features, so architectures differ only in the language side),
it makes the 12 models of a search comparable, and it lets a caption model train in a
fraction of the time.
"""
from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp


class ImageEncoder(nn.Module):
    """u8[B, 48, 48, 3] -> (features f[B, 6*6*64], attribute logits f[B, num_attributes]).

    The features are the last pooled feature map, flattened: it keeps where things are,
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
