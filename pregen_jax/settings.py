"""Typed settings: frozen dataclasses validated on construction (pydantic, strict).

Strict means no silent coercion: ``epochs = "1"`` or ``seed = "zero"`` is an error, not 1 or
a crash later. ``one_line`` turns pydantic's report into the one-line error users see:
``search.toml: [training] epochs = 0: Input should be greater than or equal to 1``.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Annotated

import pydantic
from pydantic import ConfigDict, Field

settings = functools.partial(pydantic.dataclasses.dataclass, frozen=True,
                             config=ConfigDict(strict=True, extra="forbid", allow_inf_nan=False))
"""Decorator for a settings dataclass: frozen, strict types, unknown fields rejected, no inf or NaN."""

MAX_INT = 2**31 - 1  # counts and sizes become int32 arrays and shapes: a larger one would overflow, not run
PositiveInt = Annotated[int, Field(ge=1, le=MAX_INT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_INT)]
PositiveFloat = Annotated[float, Field(gt=0)]
Probability = Annotated[float, Field(ge=0, lt=1)]
MAX_SEED = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
"""A random seed: 0..2^32-1 (what every generator the package seeds accepts)."""

ValidationError = pydantic.ValidationError


def one_line(err: pydantic.ValidationError, source: str, section: str = "") -> str:
    """The first problem of a validation error as ``source: [section] key = value: what is allowed``."""
    first = err.errors()[0]
    loc = [str(part) for part in first["loc"]]
    where = f"[{section}] " if section else ""
    if first["type"] == "unexpected_keyword_argument":
        return f"{source}: {where}unknown setting {loc[-1]!r}"
    if first["type"] == "missing_argument":
        return f"{source}: {where}{'.'.join(loc)} is required"
    message = first["msg"].removeprefix("Value error, ")
    if not loc:  # a rule across fields: its message names them
        return f"{source}: {where}{message}"
    return f"{source}: {where}{'.'.join(loc)} = {first['input']!r}: {message}"


def build(cls, values, source: str, section: str = ""):
    """``cls(**values)`` with a one-line ``ValueError`` for anything wrong."""
    if not isinstance(values, dict):
        raise ValueError(f"{source}: [{section}] must be a table of settings, got {values!r}")
    try:
        return cls(**values)
    except pydantic.ValidationError as err:
        raise ValueError(one_line(err, source, section)) from None
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: [{section}] {err}") from None


def as_dict(obj) -> dict:
    """A settings dataclass as plain data (tuples become lists), for TOML and cache keys."""
    def plain(value):
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value
    return plain(obj)
