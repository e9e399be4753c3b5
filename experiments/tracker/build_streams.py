"""Streams of real trained checkpoints for ``stream.py``: merge and transformer trained longer on the
built-in data (the demo's dataset, features and sizes), a checkpoint every ``--every`` steps, and for each
checkpoint the validation split decoded, its per-image CIDEr-D and its validation loss.

    nice python experiments/tracker/build_streams.py --out /work/runs/tracker-streams

Per run (architecture x seed) it writes ``<out>/<arch>-s<seed>.npz``: names (str[K]), steps (i64[K]),
cider (f64[K, I], per-image CIDEr-D of the checkpoint's caption of each of the I validation images against
that image's references, document frequencies from all I images' references, so an image's score does not
depend on which images are scored with it), val_loss (f64[K], mean teacher-forced NLL per token on the
validation references, eval mode: log of the package's validation perplexity, the rule self-critical.pytorch
keeps by with its default ``language_eval=0``), captions (str[K, I]) and references (JSON, for the real
Tracker). Decoding: the package's ``generate_captions``, greedy by default (``--beam``; self-critical.pytorch
validates greedily), with the demo's lengths (max 50, min 5). Tokens: the corpus's (``alnum-lower``). Rerunning resumes (training from its
checkpoint, finished runs from their file).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from pregen_jax import postgen
from pregen_jax.captioning import generate_captions, load_trained, train_captioner
from pregen_jax.captioning.train import TrainConfig, val_perplexity
from pregen_jax.datasets import TOKENIZER_NAME
from pregen_jax.pipeline.config import demo_config
from pregen_jax.pipeline.sources import load_data


def step_of(path: Path) -> int:
    return int(path.stem.removeprefix("snapshot-step"))


def per_image_cider(references: list[list[str]], captions: list[str]) -> np.ndarray:
    """f64[I]: each caption's CIDEr-D against its image's references (whole-split document frequencies)."""
    gts = {i: refs for i, refs in enumerate(references)}
    res = {i: [c] for i, c in enumerate(captions)}
    return np.asarray(postgen.CIDEr().compute_score(gts, res)[1], np.float64)


def build_run(arch: str, seed: int, data, config, train_config: TrainConfig, every: int, images: int,
              beam: int, out: Path) -> Path:
    """Train one run (resuming), then decode and score every step snapshot; write ``<arch>-s<seed>.npz``."""
    target = out / f"{arch}-s{seed}.npz"
    if target.is_file():
        return target
    train, val = data.dataset["train"], data.dataset["val"]
    val_features, val_captions = val.features[:images], val.captions[:images]
    workdir = out / "train" / f"{arch}-s{seed}"
    start = time.perf_counter()
    train_captioner(arch, config.models.sizes(arch), train_config, seed, data.vocab, train.features, train.captions,
                    val_features, val_captions, workdir, progress=False, description=f"{arch}-s{seed}",
                    snapshot_every=every)
    trained_s = time.perf_counter() - start
    references = [[" ".join(ref) for ref in refs] for refs in val_captions]
    paths = sorted(workdir.glob("snapshot-step*.msgpack"), key=step_of)
    g = config.generation
    rows, losses, captions = [], [], []
    start = time.perf_counter()
    for path in paths:
        model = load_trained(path, data.vocab)
        tokens = generate_captions(model.model, model.params, val_features, data.vocab, beam_width=beam,
                                   max_len=g.max_len, min_len=g.min_len, progress=False)
        captions.append([" ".join(t) for t in tokens])
        rows.append(per_image_cider(references, captions[-1]))
        losses.append(np.log(val_perplexity(model.model, model.params, val_features, val_captions, data.vocab)))
    decoded_s = time.perf_counter() - start
    np.savez_compressed(target, names=np.asarray([f"{arch}-s{seed}-step{step_of(p)}" for p in paths]),
                        steps=np.asarray([step_of(p) for p in paths]), cider=np.asarray(rows),
                        val_loss=np.asarray(losses), captions=np.asarray(captions), references=json.dumps(references),
                        tokenizer=TOKENIZER_NAME, beam_width=beam, train_seconds=trained_s,
                        decode_seconds=decoded_s)
    means = np.asarray(rows).mean(1)
    print(f"{arch}-s{seed}: {len(paths)} checkpoints, CIDEr-D {means.min():.4f}-{means.max():.4f} (best at step "
          f"{step_of(paths[int(means.argmax())])}), val loss {min(losses):.4f}-{max(losses):.4f}; "
          f"training {trained_s:.0f} s, decoding+scoring {decoded_s:.0f} s", flush=True)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the streams' folder (outside git)")
    parser.add_argument("--archs", nargs="*", default=["merge", "transformer"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=7, help="train this many epochs (no early stopping)")
    parser.add_argument("--every", type=int, default=50, help="a checkpoint every this many steps")
    parser.add_argument("--images", type=int, default=1000, help="validation images decoded (the first ones)")
    parser.add_argument("--beam", type=int, default=1, help="beam width (1: greedy, as self-critical.pytorch validates)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    config = demo_config()
    data = load_data(config, progress=False)
    t = config.training
    train_config = TrainConfig(epochs=args.epochs, batch_size=t.batch_size, learning_rate=t.learning_rate,
                               patience=args.epochs)
    print(f"built-in data: {data.facts['dataset']}; {len(data.vocab)} tokens; {args.epochs} epochs, "
          f"a checkpoint every {args.every} steps; {args.images} validation images, beam {args.beam}", flush=True)
    for seed in args.seeds:  # seed by seed: both architectures early
        for arch in args.archs:
            build_run(arch, seed, data, config, train_config, args.every, args.images, args.beam, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
