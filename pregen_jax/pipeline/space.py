"""The pre-gen metric space a search sweeps: the built-in tiers plus the user's, and its identity
for the stage cache."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
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
            tiers.load_module_file(path)  # again when its contents changed
        else:
            importlib.import_module(module)
    except ValueError as err:
        if str(err).startswith("[pregen] modules:"):
            raise
        raise ValueError(f"[pregen] modules: importing {module!r} failed: {err}") from None
    except (Exception, SystemExit) as err:  # a user's module may fail in any way (sys.exit too): name it
        what = f"called sys.exit({err.code!r})" if isinstance(err, SystemExit) else f"{type(err).__name__}: {err}"
        raise ValueError(f"[pregen] modules: importing {module!r} failed ({what})") from None


def engine_digest() -> str:
    """Hash of the sweep's own code (every module of ``pregen_jax.tiers``: the segment and mask
    forms, the median's radix selection, the built-in tier functions): a change there can move
    scores (a float order) without any tier function's source changing."""
    import hashlib
    folder = Path(tiers.__file__).parent
    sha = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def space_key(space: tiers.Space) -> str:
    """Identity of a space: its metric names, the code and module file contents of every tier
    function in it, and the sweep's own code (``engine_digest``)."""
    def code(tier_fn):
        try:
            return inspect.getsource(tier_fn.fn) if tier_fn.fn is not None else tier_fn.name
        except (OSError, TypeError):
            return tier_fn.fn.__code__.co_code.hex()
    functions = [*space.filters, *space.caption_scores, *space.image_aggregators, *space.dataset_aggregators]
    return digest(space.names, [(f.tier, f.name, code(f), f.module_digest) for f in functions], engine_digest())
