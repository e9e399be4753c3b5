"""Single-file checkpoints written atomically (temp file, fsync, rename).

A crash mid-write leaves the previous checkpoint intact; a truncated or foreign file is a
clear ``ValueError`` naming it. Format: Flax msgpack of a dict of arrays and a JSON string
of metadata (model config, vocabulary fingerprint, training progress). A plain file rather
than orbax: one small pytree per model, read back whole, no background threads to join
before a process exits.
"""
from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from .. import io


def save(path, tree: dict, meta: dict) -> None:
    """Write ``tree`` (a pytree of arrays) and ``meta`` (JSON-serialisable) to ``path``."""
    io.write_bytes(serialization.msgpack_serialize({"tree": jax.tree_util.tree_map(np.asarray, tree),
                                                        "meta": json.dumps(meta)}), path)


def load(path) -> tuple[dict, dict]:
    """(tree, meta) from ``path``; ValueError if it is missing, truncated or not a checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: checkpoint not found")
    try:
        payload = serialization.msgpack_restore(path.read_bytes())
        return payload["tree"], json.loads(payload["meta"])
    except Exception as err:
        raise ValueError(f"{path}: corrupt or truncated checkpoint ({type(err).__name__}: {err}); "
                         "delete it to retrain") from err


def fingerprint(path) -> str:
    """Content hash of a checkpoint file, for cache keys."""
    return io.file_digest(path)


def check_meta(path, saved: dict, meta: dict, keys) -> None:
    """Raise ValueError naming ``path`` if the saved metadata differs from ``meta`` on any of ``keys``."""
    for key in keys:
        if json.dumps(saved.get(key), sort_keys=True) != json.dumps(meta[key], sort_keys=True):
            raise ValueError(f"{path}: checkpoint was made with a different {key.replace('_', ' ')} "
                             f"({saved.get(key)} vs {meta[key]}); use another workdir or delete it")


def resume(path, params, opt_state, meta: dict, keys):
    """A training checkpoint's (params, best_params, opt_state, state), or None where there is none.

    ``params`` and ``opt_state`` are freshly initialised ones: they give the saved arrays their
    structure. The saved metadata must equal ``meta`` on ``keys`` (else a one-line error), so a
    run never resumes from another configuration's checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        return None
    tree, saved = load(path)
    check_meta(path, saved, meta, keys)
    return (serialization.from_state_dict(params, tree["params"]),
            serialization.from_state_dict(params, tree["best_params"]),
            serialization.from_state_dict(opt_state, tree["opt_state"]), saved["state"])
