"""The pre-gen metric space a search sweeps: the built-in tiers plus the user's, and its identity
for the stage cache."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

from .. import tiers
from .cache import digest
from .config import PregenConfig


def tier_space(config: PregenConfig) -> tiers.Space:
    """The configured tier space: 504 metrics (2018 or paper semantics), plus the user's tier functions.

    ``modules`` are imported first (a module name, or a .py file), so that their
    ``@tiers.register_...`` decorators run; every added function is then checked.
    """
    for module in config.modules:
        _import_tiers(module)
    base = tiers.COMPAT_2018 if config.compat_2018 else tiers.DEFAULT_SPACE
    extra = {"filters": config.filters, "caption_scores": config.caption_scores,
             "image_aggregators": config.image_aggregators, "dataset_aggregators": config.dataset_aggregators}
    try:
        space = base.extend(**extra)
        for tier, names in zip((1, 2, 3, 4), extra.values()):
            for name in names:
                tiers.check(name, tier)
    except ValueError as err:
        raise ValueError(f"[pregen]: {err}") from None
    return space


def _import_tiers(module: str) -> None:
    try:
        if module.endswith(".py"):
            path = Path(module)
            if not path.is_file():
                raise ValueError(f"[pregen] modules: {path} not found")
            name = "pregen_user_tiers_" + re.sub(r"\W", "_", path.stem) + "_" + digest(str(path.resolve()))
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, path)
                loaded = importlib.util.module_from_spec(spec)
                sys.modules[name] = loaded
                spec.loader.exec_module(loaded)
        else:
            importlib.import_module(module)
    except ValueError:
        raise
    except Exception as err:  # a user's module may fail in any way: say which module, in one line
        raise ValueError(f"[pregen] modules: importing {module!r} failed ({type(err).__name__}: {err})") from None


def space_key(space: tiers.Space) -> str:
    """Identity of a space: its metric names and the code of every tier function in it."""
    def code(tier_fn):
        try:
            return inspect.getsource(tier_fn.fn) if tier_fn.fn is not None else tier_fn.name
        except (OSError, TypeError):
            return tier_fn.fn.__code__.co_code.hex()
    functions = [*space.filters, *space.caption_scores, *space.image_aggregators, *space.dataset_aggregators]
    return digest(space.names, [(f.tier, f.name, code(f)) for f in functions])
