"""``pregen-search scst``: fine-tune one of a finished search's trained models by self-critical
sequence training on its training split (``captioning.scst``), writing a checkpoint that
``--checkpoints``, ``select`` and ``predict`` read like any other."""
from __future__ import annotations

import argparse

from .base import Command, seed


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder: its data, vocabulary and "
                                                        "trained models")
    parser.add_argument("--model", required=True, help="the label of the model to fine-tune (e.g. merge-1), as the "
                                                       "run's models table names it")
    parser.add_argument("--out", required=True, help="the checkpoint to write (e.g. merge-1-scst.msgpack)")
    parser.add_argument("--settings", help="a TOML file whose [scst] section sets steps, images, samples, baseline "
                                           "(greedy or mean), learning_rate, max_len, min_len, bleu_weight, log_every "
                                           "(default: captioning.scst.ScstConfig's)")
    parser.add_argument("--seed", type=seed, default=0, help="draws of images and samples (default 0)")


def scst_settings(path):
    """``ScstConfig`` from ``path``'s ``[scst]`` section (defaults without a path); one-line errors."""
    import tomllib

    from .. import io
    from ..captioning.scst import ScstConfig
    from ..settings import build
    if path is None:
        return ScstConfig()
    try:
        raw = tomllib.loads(io.read_text(path, "settings file"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML ({err})") from None
    unknown = sorted(set(raw) - {"scst"})
    if unknown:
        raise ValueError(f"{path}: [{unknown[0]}] is not a section of the scst settings (only [scst])")
    return build(ScstConfig, raw.get("scst", {}), str(path), "scst")


def _checkpoint(run, label: str):
    from pathlib import Path
    entries = {entry.label: entry for entry in run.models}
    if label not in entries:
        raise ValueError(f"--model {label}: not a model of {run.folder} (its models: {', '.join(entries)})")
    files = entries[label].files
    if "model" not in files:
        raise ValueError(f"--model {label}: {run.folder} keeps no parameters of it (a precomputed model, or a "
                         "checkpoint no longer in the run's cache)")
    path = Path(files["model"])
    return path if path.is_absolute() else run.folder / path


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..captioning import scst
    from ..captioning.train import load_trained
    from ..pipeline.finished import FinishedSearch
    from ..pipeline.sources import load_data
    from ..settings import as_dict
    from ..training import checkpoints
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; give the name of the checkpoint to write")
    config = scst_settings(args.settings)
    run = FinishedSearch.open(args.search)
    path = _checkpoint(run, args.model)
    if run.vocabulary is None:
        raise ValueError(f"--search {args.search}: the search has no vocabulary (every model precomputed)")
    trained = load_trained(path, run.vocabulary)
    data = load_data(run.config, progress=False, run_folder=run.folder)
    train = data.dataset["train"]
    params, history = scst.finetune(trained.model, trained.params, config, train.features, train.captions,
                                    run.vocabulary, args.seed)
    _, meta = checkpoints.load(path)
    meta = {**meta, "scst": {"from": str(path), "seed": args.seed, "settings": as_dict(config),
                             "history": history}}
    checkpoints.save(args.out, {"params": params}, meta)
    first, last = history[0], history[-1]
    print(f"wrote {args.out}: {args.model} after {config.steps} SCST steps ({config.images} images x "
          f"{config.samples} samples, {config.baseline} baseline); mean sampled CIDEr-D {first['reward']:.4f} at "
          f"step {first['step']}, {last['reward']:.4f} at step {last['step']} (training images)")
    return 0


COMMAND = Command("scst", "fine-tune a search's trained model by self-critical sequence training (CIDEr-D reward)",
                  _arguments, _run)
