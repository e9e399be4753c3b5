"""How much the tokenizer moves the 12 where-image2 Flickr8k models' whole-set scores: ``ptb``
(COCO's protocol, the default of ``evaluate`` and of new searches since issue 40) against
``alnum-lower`` (the 2018 study's), on the raw Flickr8k references and the models' caption files.

    python experiments/flickr8k_postgen_2018/tokenizers.py

Prints each model's BLEU-4, ROUGE-L and CIDEr-D under both, the difference, and whether the
models' order changes. Seconds on 2 CPU cores (the Python PTB lexer; no Java).
"""
from __future__ import annotations

import warnings

import pandas as pd

from pregen_jax import io, postgen
from pregen_jax.datasets import read_flickr8k
from pregen_jax.evaluation.tokenizers import tokenize_all

METRICS = ("Bleu_4", "ROUGE_L", "CIDEr")


def main() -> None:
    shared = io.shared_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split file's stray 1.jpg..5.jpg entries
        test = read_flickr8k(shared / "flickr8k")["test"]
    captions_dir = shared / "where-image2-captions"
    ids = (captions_dir / "imgs_flickr8k.txt").read_text().split()
    raw = dict(zip(test.image_ids, test.raw))
    rows = []
    for path in sorted(captions_dir.glob("flickr8k_*_*.txt")):
        if "human" in path.name:
            continue
        captions = dict(zip(ids, path.read_text().splitlines()))
        for tokenizer in ("alnum-lower", "ptb"):
            tokens = iter(tokenize_all([c for i in ids for c in raw[i]] + [captions[i] for i in ids], tokenizer))
            gts = {i: [next(tokens) for _ in raw[i]] for i in ids}
            res = {i: [next(tokens)] for i in ids}
            rows += [{"model": path.stem.removeprefix("flickr8k_"), "metric": metric, "tokenizer": tokenizer,
                      "score": postgen.score(metric, gts, res, tokenize=False)[0]} for metric in METRICS]
    table = pd.DataFrame(rows).pivot_table(index=["metric", "model"], columns="tokenizer", values="score")
    table["diff"] = table["ptb"] - table["alnum-lower"]
    table["rel_%"] = 100 * table["diff"] / table["alnum-lower"]
    print(table.to_string(float_format=lambda x: f"{x:.4f}"))
    print(table.groupby(level="metric")[["diff", "rel_%"]].agg(["min", "max"]).to_string(float_format=lambda x: f"{x:.4f}"))
    for metric in METRICS:
        scores = table.xs(metric, level="metric")
        same = list(scores["ptb"].sort_values().index) == list(scores["alnum-lower"].sort_values().index)
        print(f"{metric}: the models' order is {'the same' if same else 'different'} under both")


if __name__ == "__main__":
    main()
