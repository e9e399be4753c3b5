"""Does SCST raise test CIDEr-D on the built-in dataset above its two controls? (issue 50)

    python experiments/scst/run.py --arch merge transformer --seeds 0 1 2 --out runs/scst

The quick demo's data and sizes (shapes 1200/200/300, encoder 3 epochs, 64 units, 3 epochs of
cross-entropy with Adam 1e-3, the epoch of best validation perplexity kept, as a search keeps
it). From each kept checkpoint, three models decoded the same way (beam 3, max_len 50,
min_len 5, the demo's ``[generation]``):
  - kept: the checkpoint itself;
  - ce: cross-entropy continued from it for the same number of steps as SCST (Adam 1e-3, the
    training batches of 64 captions, fresh optimizer state);
  - scst: ``pregen_jax.captioning.scst.finetune`` from it (``ScstConfig``, flags below).
Test CIDEr-D is recomputed from the captions by ``evaluate``'s scorer (``pregen_jax.postgen``,
CIDEr-D, the test references' document frequencies), not by the reward; a bad ending is a
caption whose last word is a function word (``BAD_ENDINGS``). Writes results.jsonl, one row a
model; ``--table`` prints the README's table from it.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from pregen_jax import postgen
from pregen_jax.captioning import RnnConfig, TransformerConfig, generate_captions
from pregen_jax.captioning import scst as scst_training
from pregen_jax.captioning import train as training
from pregen_jax.captioning.input_pipeline import encode_references, training_batch, training_batches
from pregen_jax.datasets import ShapesConfig, Vocabulary, load_shapes
from pregen_jax.datasets.shapes_encoder import attach_image_features
from pregen_jax.io import default_cache_dir

# function words of the dataset's captions, none of which ends a training reference
BAD_ENDINGS = {"a", "an", "the", "of", "and", "on", "in", "is", "are", "to", "at", "below", "above", "near", "next",
               "there", "with", "or"}


def sizes(arch: str):
    return (TransformerConfig(width=64, mlp_width=64, image_size=64, layers=1, heads=4) if arch == "transformer"
            else RnnConfig(embed_size=64, hidden_size=64, image_size=64))


def continue_cross_entropy(trained, steps: int, seed: int, features, captions, vocab) -> dict:
    """The kept parameters after ``steps`` more cross-entropy steps (Adam 1e-3, batches of 64 captions)."""
    import optax
    pairs = [(n, ids) for n, _, ids in encode_references(captions, vocab, "training captions")]
    step = training.adam_train_step(trained.model, 1e-3)
    params, opt_state = trained.params, optax.adam(1e-3).init(trained.params)
    done, epoch = 0, 100
    while done < steps:
        for batch in training_batches(pairs, 64, np.random.default_rng([seed, epoch])):
            if done == steps:
                break
            key = jax.random.fold_in(jax.random.PRNGKey(seed * 7919 + epoch), done)
            params, opt_state, _ = step(params, opt_state, key, *training_batch(pairs, batch, features))
            done += 1
        epoch += 1
    return params


def evaluate(model, params, features, gts, vocab) -> dict:
    """Test CIDEr-D (postgen, evaluate's scorer) and the share of bad endings, beam 3."""
    captions = generate_captions(model, params, features, vocab, beam_width=3, max_len=50, min_len=5, progress=False)
    res = {i: [" ".join(c)] for i, c in enumerate(captions)}
    cider, per_image = postgen.score("CIDEr", gts, res, tokenizer="alnum-lower")  # as its table was made (before ptb became the default)
    bad = np.mean([bool(c) and c[-1] in BAD_ENDINGS for c in captions])
    return {"cider": round(float(cider), 4), "bad_endings": round(float(bad), 4),
            "distinct": len({r[0] for r in res.values()}), "example": res[0][0],
            "per_image": [round(float(v), 6) for v in per_image]}


def paired_interval(a, b, resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of mean(a - b) over the test images (paired by image;
    the document frequencies held at the whole test set's)."""
    diff = np.asarray(a) - np.asarray(b)
    draws = np.random.default_rng(seed).integers(0, len(diff), (resamples, len(diff)))
    means = diff[draws].mean(1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["merge", "transformer"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--baseline", default="mean", choices=["mean", "greedy"])
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--out", default="runs/scst")
    parser.add_argument("--table", action="store_true", help="print the table of OUT/results.jsonl and stop")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.table:
        return print_table(out / "results.jsonl")
    dataset = load_shapes(ShapesConfig(1200, 200, 300, seed=0))
    attach_image_features(dataset, default_cache_dir(), epochs=3, seed=0, progress=False)
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    vocab = Vocabulary.build(train.captions, 5)
    gts = {i: [" ".join(r) for r in refs] for i, refs in enumerate(test.captions)}
    endings = {r[-1] for refs in train.captions for r in refs}
    assert not BAD_ENDINGS & endings, f"references end in {BAD_ENDINGS & endings}: not bad endings"
    config = scst_training.ScstConfig(steps=args.steps, images=args.images, samples=args.samples,
                                      baseline=args.baseline, learning_rate=args.learning_rate)
    rewards = scst_training.Rewards.build(train.captions, vocab)
    out.mkdir(parents=True, exist_ok=True)
    for arch in args.arch:
        for seed in args.seeds:
            trained = training.train_captioner(arch, sizes(arch), training.TrainConfig(epochs=3, batch_size=64), seed,
                                               vocab, train.features, train.captions, val.features, val.captions,
                                               out / "models" / f"{arch}-{seed}", progress=False)
            start = time.perf_counter()
            ce = continue_cross_entropy(trained, args.steps, seed, np.asarray(train.features, np.float32),
                                        train.captions, vocab)
            ce_seconds = time.perf_counter() - start
            start = time.perf_counter()
            tuned, history = scst_training.finetune(trained.model, trained.params, config, train.features,
                                                    train.captions, vocab, seed, rewards)
            scst_seconds = time.perf_counter() - start
            for control, params, seconds in (("kept", trained.params, 0.0), ("ce", ce, ce_seconds),
                                             ("scst", tuned, scst_seconds)):
                row = {"arch": arch, "seed": seed, "model": control, "steps": 0 if control == "kept" else args.steps,
                       "seconds": round(seconds, 1), **evaluate(trained.model, params, test.features, gts, vocab)}
                if control == "scst":
                    row.update(config=dataclass_record(config), reward_history=history)
                print(json.dumps(row), flush=True)
                with open(out / "results.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
    return 0


def dataclass_record(config) -> dict:
    from pregen_jax.settings import as_dict
    return as_dict(config)


def print_table(path: Path) -> int:
    """The README's table: per architecture and seed, CIDEr-D and bad endings of kept / ce / scst."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    cells = {(r["arch"], r["seed"], r["model"]): r for r in rows}
    print("| arch | seed | CIDEr-D kept | CIDEr-D CE continued | CIDEr-D SCST | SCST - CE [95% CI] | "
          "bad endings kept / CE / SCST | distinct captions kept / CE / SCST | SCST above both |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arch, seed in dict.fromkeys((r["arch"], r["seed"]) for r in rows):
        kept, ce, scst = (cells.get((arch, seed, m)) for m in ("kept", "ce", "scst"))
        if not (kept and ce and scst):
            continue
        above = scst["cider"] > max(kept["cider"], ce["cider"])
        low, high = paired_interval(scst["per_image"], ce["per_image"])
        print(f"| {arch} | {seed} | {kept['cider']:.4f} | {ce['cider']:.4f} | **{scst['cider']:.4f}** | "
              f"{scst['cider'] - ce['cider']:+.4f} [{low:+.4f}, {high:+.4f}] | "
              f"{kept['bad_endings']:.1%} / {ce['bad_endings']:.1%} / {scst['bad_endings']:.1%} | "
              f"{kept['distinct']} / {ce['distinct']} / {scst['distinct']} | {'yes' if above else 'NO'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
