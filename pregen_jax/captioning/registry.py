"""The caption-generator architectures, by name: what ``[models] architectures`` may list.

An architecture is a Flax module class built as ``cls(arch, config, vocab_size)`` (``config`` a
``CaptionerConfig``, ``vocab_size`` the vocabulary object's length) that provides

    start_decoding(features f[B, D], max_len) -> carry      (may fill the 'cache' collection)
    step(carry, tokens i32[B], train=False) -> (carry, logits f[B, V])
    __call__(features f[B, D], tokens i32[B]) -> logits f[B, V]   (initialises every parameter)

and, optionally, ``teacher_forced(features, inputs i32[B, L], train=False) -> logits f[B, L, V]``
(one pass over all positions; without it teacher forcing is a loop over ``step``). Its
parameters name the image projection ``image_proj`` and the output layer ``out`` (the checks
of feature size and vocabulary size read them). Adding an architecture is one decorator:

    @register_architecture("mine", check=my_check)
    class Mine(nn.Module): ...

``check(config)`` raises ValueError for sizes the architecture cannot build (e.g. a width
the heads do not divide); the config's validation calls it for every listed architecture.
``ignores`` names the ``CaptionerConfig`` fields the architecture does not read: they stay out
of its ``record`` (checkpoints and cache keys), so a new field for one architecture changes
no other's keys.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..registry import Registry
from ..settings import as_dict


def _no_check(config) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Architecture:
    """A registered caption-generator architecture."""

    name: str
    module: Callable                         # (arch, config, vocab_size) -> flax.linen.Module
    check: Callable = _no_check              # (config) -> None, ValueError for sizes it cannot build
    ignores: tuple[str, ...] = ()            # CaptionerConfig fields it does not read
    description: str = ""


ARCHITECTURES: Registry[Architecture] = Registry("architecture", make=Architecture)
"""Every registered architecture by name, in registration order (``ARCHITECTURES.get(name)``
names the registered ones when ``name`` is not)."""


def register_architecture(name: str, check: Callable = _no_check, ignores=(), description: str = "",
                          overwrite: bool = False):
    """Decorator: register a module class (or factory) under ``name``; returns it unchanged."""
    return ARCHITECTURES.register(name, overwrite=overwrite, check=check, ignores=tuple(ignores),
                                  description=description)


def make_model(name: str, config, vocab_size: int):
    """The Flax module of architecture ``name`` over ``vocab_size`` tokens (id 0 the edge token)."""
    arch = ARCHITECTURES.get(name)
    arch.check(config)
    return arch.module(name, config, vocab_size)


def record(name: str, config) -> dict:
    """``config`` as plain data without the fields architecture ``name`` ignores (for checkpoints and cache keys)."""
    ignored = ARCHITECTURES.get(name).ignores
    return {key: value for key, value in as_dict(config).items() if key not in ignored}
