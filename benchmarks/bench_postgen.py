"""Benchmark the array backends of CIDEr-D, BLEU-1..4 and ROUGE-L against pycocoevalcap.

    python benchmarks/bench_postgen.py

Inputs: the shared where-image2 captions (../shared/data/where-image2-captions; 5 models x
1,000 Flickr8k test images = 5,000 candidates) against the 5 Flickr8k references of each image
(../shared/data/flickr8k), all pre-tokenized as the package tokenizer writes them. Timed from
those strings to corpus and per-image scores of the three metrics together, warm: the best of 2
calls in one process, for
  - pycocoevalcap: Bleu(4), Rouge(), Cider() per model (how it is used);
  - array, per model: ``postgen.score_systems`` with one model per call (the references are
    split and counted by the first model's call and kept for the others);
  - array, batched: one ``score_systems`` call for all 5 models (the references split and
    counted once);
  - array, batched, references kept: the same call again, the references' side kept from an
    earlier call (``warm_batched`` in the last line: "warm, best of 2 calls in one process" as
    the issue times it);
  - array, per model, references kept (``warm_per_model``);
  - ``postgen.score(name, gts, res)`` once per metric and model, references kept (``warm_api``:
    BLEU-1..4, ROUGE-L and CIDEr-D each a call, as a user of the functional API calls them).
Before each timed per-model round and each batched call, the kept references are dropped, so
those timings include splitting and counting the references.
The array scores are checked against pycocoevalcap's (largest absolute difference printed).
The machine may be shared: the load average is printed. The last line is machine-readable:
    postgen_speedup_per_model=<wall ratio> postgen_speedup_batched=<wall ratio> cpu_per_model=... cpu_batched=...
    warm_batched=... warm_per_model=... warm_api=...
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
MODELS = ("init_1", "pre_1", "par_1", "merge_1", "init_2")
NAMES = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"]


def where_image2(models=MODELS) -> tuple[dict, dict]:
    """(gts: image -> 5 tokenized Flickr8k references, {model: res}) over the 1,000 test images."""
    from pregen_jax.datasets import tokenize
    folder = SHARED / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    refs: dict[str, list[str]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        refs.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    gts = {i: refs[i] for i in ids}
    systems = {m: {i: [" ".join(tokenize(c))] for i, c in
                   zip(ids, (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").splitlines())}
               for m in models}
    return gts, systems


def coco(gts, systems) -> dict:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    out = {}
    for model, res in systems.items():
        bleu, bleu_per = Bleu(4).compute_score(gts, res, verbose=0)
        rouge, rouge_per = Rouge().compute_score(gts, res)
        cider, cider_per = Cider().compute_score(gts, res)
        out[model] = {**{f"Bleu_{n}": (bleu[n - 1], np.asarray(bleu_per[n - 1])) for n in (1, 2, 3, 4)},
                      "ROUGE_L": (rouge, np.asarray(rouge_per)), "CIDEr": (cider, np.asarray(cider_per))}
    return out


def forget_references() -> None:
    """Drop the reference sides kept from earlier calls, so that a call pays for its references."""
    from pregen_jax.postgen import cider, references
    references._RECENT.clear()
    cider._RECENT.clear()


def per_model(gts, systems) -> dict:
    """One call per model; the first model's call splits and counts the references, the others reuse them."""
    from pregen_jax import postgen
    forget_references()
    return {m: postgen.score_systems(NAMES, gts, {m: res}, tokenize=False)[m] for m, res in systems.items()}


def batched(gts, systems) -> dict:
    from pregen_jax import postgen
    forget_references()
    return postgen.score_systems(NAMES, gts, systems, tokenize=False)


def batched_kept(gts, systems) -> dict:
    """As ``batched``, the references' side kept from an earlier call on the same references."""
    from pregen_jax import postgen
    return postgen.score_systems(NAMES, gts, systems, tokenize=False)


def per_model_kept(gts, systems) -> dict:
    """One call per model, the references' side kept from earlier calls (a warm process, as the issue times it)."""
    from pregen_jax import postgen
    return {m: postgen.score_systems(NAMES, gts, {m: res}, tokenize=False)[m] for m, res in systems.items()}


def per_metric_api(gts, systems) -> dict:
    """``postgen.score(name, gts, res)`` for each metric of each model, as a user calls the functional API."""
    from pregen_jax import postgen
    out = {}
    for m, res in systems.items():
        out[m] = {}
        for name in NAMES:
            corpus, per_image = postgen.score(name, gts, res, tokenizer="alnum-lower")
            out[m][name] = (corpus, np.asarray(per_image))
    return out


def interleaved(functions: dict, args, repeats: int = 2) -> tuple[dict, dict, dict]:
    """({name: best wall seconds}, {name: best CPU seconds of this process}, {name: last value}), the
    functions called in turn ``repeats`` times, so that a change of the machine's load hits all alike."""
    wall = {name: math.inf for name in functions}
    cpu = dict(wall)
    values = {}
    for _ in range(repeats):
        for name, function in functions.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            values[name] = function(*args)
            wall[name] = min(wall[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    return wall, cpu, values


def largest_difference(ours: dict, reference: dict) -> float:
    worst = 0.0
    for model, metrics in reference.items():
        for name, (corpus, per_image) in metrics.items():
            worst = max(worst, abs(ours[model][name][0] - corpus), float(np.abs(ours[model][name][1] - per_image).max()))
    return worst


def main() -> None:
    if not (SHARED / "where-image2-captions").is_dir() or not (SHARED / "flickr8k").is_dir():
        print(f"skipped: {SHARED} has no where-image2-captions or flickr8k (see ../shared/data/README.md)")
        return
    gts, systems = where_image2()
    print(f"{len(systems)} models x {len(gts)} images = {len(systems) * len(gts)} candidates, "
          f"{sum(map(len, gts.values()))} references; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    wall, cpu, values = interleaved({"coco": coco, "model": per_model, "batch": batched, "kept": batched_kept,
                                     "model_kept": per_model_kept, "api": per_metric_api}, (gts, systems))
    labels = {"coco": "pycocoevalcap (Bleu 1-4 + ROUGE_L + CIDEr, per model)",
              "model": "array, one call per model", "batch": "array, one call for all models",
              "kept": "array, one call for all, references kept",
              "model_kept": "array, one call per model, references kept",
              "api": "postgen.score per metric and model, references kept"}
    for name, label in labels.items():
        ratio = "" if name == "coco" else (f"  x{wall['coco'] / wall[name]:.1f} wall, x{cpu['coco'] / cpu[name]:.1f} CPU"
                                           f"  (largest |difference| {largest_difference(values[name], values['coco']):.1e})")
        print(f"{label:<55} {wall[name] * 1000:8.1f} ms wall {cpu[name] * 1000:8.1f} ms CPU{ratio}")
    print(f"postgen_speedup_per_model={wall['coco'] / wall['model']:.1f} postgen_speedup_batched="
          f"{wall['coco'] / wall['batch']:.1f} cpu_per_model={cpu['coco'] / cpu['model']:.1f} "
          f"cpu_batched={cpu['coco'] / cpu['batch']:.1f} warm_batched={wall['coco'] / wall['kept']:.1f} "
          f"warm_per_model={wall['coco'] / wall['model_kept']:.1f} warm_api={wall['coco'] / wall['api']:.1f}")


if __name__ == "__main__":
    main()
