"""The caption-generator architectures, by name: what ``[models] architectures`` may list.

An architecture is a Flax module class built as ``cls(arch, config, vocab_size)`` (``config`` its
family's sizes, an instance of the ``config`` class it registers with: ``RnnConfig`` or
``TransformerConfig``; ``vocab_size`` the vocabulary object's length) that provides

    start_decoding(features f[B, D], max_len) -> carry      (may fill the 'cache' collection)
    step(carry, tokens i32[B], train=False) -> (carry, logits f[B, V])
    __call__(features f[B, D], tokens i32[B]) -> logits f[B, V]   (initialises every parameter)

and, optionally, ``teacher_forced(features, inputs i32[B, L], train=False) -> logits f[B, L, V]``
(one pass over all positions; without it teacher forcing is a loop over ``step``). Its
parameters name the image projection ``image_proj`` and the output layer ``out`` (the checks
of feature size and vocabulary size read them). Adding an architecture is one decorator:

    @register_architecture("mine", config=RnnConfig, check=my_check)
    class Mine(nn.Module): ...

``check(config)`` raises ValueError for sizes the architecture cannot build (e.g. a width
the heads do not divide); the config's validation calls it for every listed architecture.
The config class's ``record()`` is what checkpoints and cache keys hold (and ``from_record``
reads it back), so one family's sizes never change another's keys.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..registry import Registry


def _no_check(config) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A registered caption-generator architecture."""

    name: str
    module: Callable                         # (arch, config, vocab_size) -> flax.linen.Module
    config: type                             # its family's sizes: RnnConfig, TransformerConfig
    check: Callable = _no_check              # (config) -> None, ValueError for sizes it cannot build
    description: str = ""


ARCHITECTURES: Registry[Architecture] = Registry("architecture", make=Architecture)
"""Every registered architecture by name, in registration order (``ARCHITECTURES.get(name)``
names the registered ones when ``name`` is not)."""


def register_architecture(name: str, config: type, check: Callable = _no_check, description: str = "",
                          overwrite: bool = False):
    """Decorator: register a module class (or factory) under ``name``, built from a ``config``
    (its family's sizes class); returns it unchanged."""
    return ARCHITECTURES.register(name, overwrite=overwrite, config=config, check=check, description=description)


def make_model(name: str, config, vocab_size: int):
    """The Flax module of architecture ``name`` over ``vocab_size`` tokens (id 0 the edge token);
    ``config``: an instance of the architecture's config class."""
    arch = ARCHITECTURES.get(name)
    if not isinstance(config, arch.config):
        raise ValueError(f"architecture {name!r} is built from a {arch.config.__name__}, not a "
                         f"{type(config).__name__}")
    arch.check(config)
    return arch.module(name, config, vocab_size)
