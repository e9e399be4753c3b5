"""Does pre use the image? Train captioners on the built-in dataset and report what they say.

    python experiments/pre_image_word/run.py --arch pre merge --seeds 1 2 --out runs/pre_image_word

Demo sizes (6000/1000/1000 images, GRU 128, 5 epochs, Adam 1e-3; search/configs/demo.toml),
or --quick (1200/200/300, 64 units, 3 epochs). Per model: CIDEr (beam 3) and the number of
distinct captions on the test split, the same for the epoch-1 snapshot, and for pre how
saturated its image step is (share of |tanh pre-activation| > 2.5) and how much its state
after the image step varies across images (mean std over units). Writes results.jsonl.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from pregen_jax.captioning import Captioner, RnnConfig, generate_captions
from pregen_jax.captioning import train as training
from pregen_jax.datasets import ShapesConfig, Vocabulary, load_shapes
from pregen_jax.datasets.shapes_encoder import attach_image_features
from pregen_jax.io import default_cache_dir
from pregen_jax.postgen import CIDEr

SIZES = {"demo": ((6000, 1000, 1000), 128, 5), "quick": ((1200, 200, 300), 64, 3)}


def score(trained, features, gts, vocab) -> tuple[float, int]:
    """CIDEr of beam-3 captions and how many distinct captions there are."""
    caps = generate_captions(trained.model, trained.params, features, vocab, beam_width=3, progress=False)
    res = {i: [" ".join(c)] for i, c in enumerate(caps)}
    return float(CIDEr().compute_score(gts, res)[0]), len({r[0] for r in res.values()})


def image_step(trained, features) -> dict:
    """pre only: saturation of the image step's candidate and its state's spread across images."""
    if trained.model.arch != "pre" or trained.model.config.cell != "gru":
        return {}
    image = np.asarray(trained.model.apply(trained.params, features, method=Captioner._image))
    cell = trained.params["params"]["cell"]["in"]
    pre_activation = image @ np.asarray(cell["kernel"]) + np.asarray(cell["bias"])
    carry, _ = trained.model.apply(trained.params, features, method=Captioner.start)
    return {"image_step_saturated": float((np.abs(pre_activation) > 2.5).mean()),
            "state_spread_across_images": float(np.asarray(carry).std(0).mean())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="+", default=["pre", "merge"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="runs/pre_image_word")
    args = parser.parse_args(argv)
    (n_train, n_val, n_test), units, epochs = SIZES["quick" if args.quick else "demo"]
    dataset = load_shapes(ShapesConfig(n_train, n_val, n_test, seed=0))
    attach_image_features(dataset, default_cache_dir(), epochs=4, seed=0, progress=False)
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    vocab = Vocabulary.build(train.captions, 5)
    gts = {i: [" ".join(r) for r in refs] for i, refs in enumerate(test.captions)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for arch in args.arch:
        for seed in args.seeds:
            config = RnnConfig(embed_size=units, hidden_size=units, image_size=units)
            workdir = out / "models" / f"{arch}-{seed}"
            trained = training.train_captioner(arch, config, training.TrainConfig(epochs=epochs, snapshot_epochs=[1]),
                                               seed, vocab, train.features, train.captions, val.features,
                                               val.captions, workdir, progress=False)
            epoch1 = training.load_trained(workdir / "snapshot-epoch1.msgpack", vocab)
            cider, distinct = score(trained, test.features, gts, vocab)
            cider1, distinct1 = score(epoch1, test.features, gts, vocab)
            row = {"arch": arch, "seed": seed, "cider": round(cider, 4), "distinct_captions": distinct,
                   "epoch1_cider": round(cider1, 4), "epoch1_distinct_captions": distinct1,
                   "val_perplexity": [round(h["val_perplexity"], 3) for h in trained.history],
                   **{k: round(v, 4) for k, v in image_step(trained, jax.numpy.asarray(test.features)).items()}}
            print(json.dumps(row), flush=True)
            with open(out / "results.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
