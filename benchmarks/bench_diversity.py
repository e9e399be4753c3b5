"""Benchmark the diversity metrics against ``evaluate``'s COCO metrics on the same captions, in one run.

    python benchmarks/bench_diversity.py                  # 5,000 images x 5 samples, 3 alternating pairs
    python benchmarks/bench_diversity.py --images 1000 --pairs 1

Inputs, from Flickr8k's captions: ``--images`` Flickr8k images (train, dev and test files in order),
each with its five human captions as the references (a COCO annotation file in memory), and as a
system: the five captions as five samples per image (the diversity metrics) and caption 1 alone
(COCO's metrics: one caption per image). Timed in this process, warm (one untimed run of each
first: METEOR's tables and compiled code, imports), alternating, ``--pairs`` times:

- COCO: ``evaluate(refs, one caption per image, metrics=Bleu_1..4, METEOR, ROUGE_L, CIDEr)``, the
  whole call (PTB tokenizing, every metric, 1,000 bootstrap resamples, the table);
- diversity, whole: ``evaluate(refs, five samples per image, metrics=Div_1, Div_2, gDiv_1, mBLEU_4,
  Self_CIDEr)``, the same call (its PTB run tokenizes 25,000 samples and every image's references);
- diversity, metrics: the five metrics' statistics on the tokenized samples alone (what they add
  to a run that tokenized them already).

Prints each time, the two ratios to COCO's (median over pairs) and the load average: the machine
may be shared, so only the ratios, measured in the same run, are compared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("PREGEN_JAX_SHARED_DATA") or ROOT.parent / "shared" / "data")
COCO = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]
DIVERSITY = ["Div_1", "Div_2", "gDiv_1", "mBLEU_4", "Self_CIDEr"]


def flickr_sets(images: int) -> tuple[dict, dict, dict]:
    """(references image -> five captions, samples image -> the same five, one caption image -> caption 1)."""
    captions: dict[str, list[str]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(caption)
    names = [n for part in ("train", "dev", "test")
             for n in (SHARED / "flickr8k" / f"Flickr_8k.{part}Images.txt").read_text().split()][:images]
    refs = {n: captions[n] for n in names}
    return refs, {n: list(refs[n]) for n in names}, {n: refs[n][0] for n in names}


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def metrics_alone(refs: dict, samples: dict) -> float:
    """Seconds of the five diversity metrics' statistics on tokenized samples (tokenized before the clock)."""
    from pregen_jax import postgen
    from pregen_jax.evaluation.tokenizers import tokenize_all
    strings = [c for n in refs for c in refs[n]]
    tokens = iter(tokenize_all(strings, "ptb"))
    gts = {n: [next(tokens) for _ in refs[n]] for n in refs}
    res = gts  # the samples are the references' own captions, tokenized alike

    def score():
        for name in DIVERSITY:
            metric = postgen.diversity_metric(name)
            if name == "Self_CIDEr":
                metric.idf_from = gts
            metric.stats(gts, res)
    assert all(samples[n] == refs[n] for n in refs)
    return timed(score)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    from pregen_jax.evaluation import evaluate
    refs, samples, one = flickr_sets(args.images)
    coco = lambda: evaluate(refs, one, metrics=COCO)
    diverse = lambda: evaluate(refs, samples, metrics=DIVERSITY)
    coco(), diverse()  # warm: METEOR's tables and compiled code, imports
    rows = []
    for pair in range(args.pairs):
        times = {"coco": timed(coco), "diversity": timed(diverse), "metrics": metrics_alone(refs, samples)}
        rows.append(times)
        print(f"pair {pair + 1}: evaluate COCO {times['coco']:.2f} s; evaluate diversity {times['diversity']:.2f} s "
              f"({times['diversity'] / times['coco']:.1%}); diversity metrics alone {times['metrics']:.2f} s "
              f"({times['metrics'] / times['coco']:.1%})", flush=True)
    whole = statistics.median(r["diversity"] / r["coco"] for r in rows)
    alone = statistics.median(r["metrics"] / r["coco"] for r in rows)
    print(f"{args.images:,} images x 5 samples: diversity metrics alone {alone:.1%} of evaluate's COCO metrics "
          f"(median of {args.pairs}), the whole evaluate with them {whole:.1%}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
