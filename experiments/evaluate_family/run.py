"""Family-wise error of ``evaluate``'s comparisons with systems of equal quality (issue 49, item 4).

    python experiments/evaluate_family/run.py [--replications 1000] [--images 500] [--meteor]

Equal systems from real captions: on each replication, ``--images`` of the 1,000 Flickr8k test
images drawn afresh, and each image's captions by where-image2 models dealt out to the systems in
a random order, image by image (two systems: init_1 and merge_1 swapped at random per image; five
systems: init_1, pre_1, par_1, merge_1, init_2), so no system is better than another. Every
metric's statistics are computed once on all 1,000 images (alnum-lower tokens, CIDEr-D's document
frequencies from all of them, as ``--idf-from all``); a replication resamples rows with
``significance.resampled_sums`` (the same draws for every system and metric) and adjusts with
``family.adjust_rows``, as ``evaluate`` does (its BCa intervals and randomization test, which do
not enter the adjustment, are left out). A false rejection is any comparison of the family with
``p < 0.05``. Counted per replication: single-step max-T over every comparison printed (the
default family), max-T per metric (each metric's family alone), step-down max-T, Holm per metric
(the former default), and the unadjusted paired bootstrap. Then power, beside: the same systems
with one made worse, its captions of a share of the images (``--degrade``, 10%) replaced by its
captions of the next image (misplaced), a real difference on every metric; and the max-T critical
value's spread over seeds at 1,000 resamples and at ``20 m / 0.05``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from pregen_jax import io, postgen
from pregen_jax.datasets import tokenize
from pregen_jax.evaluation.family import adjust_rows, max_t
from pregen_jax.evaluation.significance import bootstrap_p, resampled_sums

METRICS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr")
DESIGNS = {"2 systems": ("init_1", "merge_1"), "5 systems": ("init_1", "pre_1", "par_1", "merge_1", "init_2")}
ALPHA = 0.05


def statistics(metric_names) -> tuple[dict, dict]:
    """(metric name -> metric, model -> metric -> f64[1000, k]) on the 1,000 where-image2 test images;
    ``model + " shifted"``: its caption of the next image on each image."""
    shared = io.shared_data()
    folder = shared / "where-image2-captions"
    names = folder.joinpath("imgs_flickr8k.txt").read_text().split()
    references: dict = {}
    for line in (shared / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        references.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    gts = {k: references[name] for k, name in enumerate(names)}
    metrics = {name: postgen.REGISTRY[name].factory(postgen.PostgenOptions()) for name in metric_names}
    models = sorted({m for design in DESIGNS.values() for m in design})
    stats = {}
    for model in models:
        lines = folder.joinpath(f"flickr8k_{model}.txt").read_text(encoding="utf-8").splitlines()
        for label, shift in ((model, 0), (f"{model} shifted", 1)):
            res = {k: [" ".join(tokenize(lines[(k + shift) % len(gts)]))] for k in gts}
            stats[label] = {name: np.asarray(metric.stats(gts, res), np.float64) for name, metric in metrics.items()}
    return metrics, stats


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment (the former default, per metric), for comparison."""
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order]))
    return adjusted


def replicate(metrics: dict, systems: dict, resamples: int, seed: int) -> dict:
    """One replication's rejections (any comparison with p < 0.05) by each method; ``systems``:
    name -> metric -> f64[images, k] (the first is the baseline)."""
    names = list(systems)
    images = len(next(iter(systems[names[0]].values())))
    columns, blocks, at = {}, [], 0
    for system in names:
        for metric in metrics:
            block = systems[system][metric]
            columns[system, metric] = slice(at, at + block.shape[1])
            blocks.append(block)
            at += block.shape[1]
    sums = resampled_sums(np.concatenate(blocks, axis=1), resamples, np.random.default_rng(seed))
    rows, draws = [], {}
    for metric_name, metric in metrics.items():
        base = metric.from_sums(sums[:, columns[names[0], metric_name]], images)
        base_score = float(metric.aggregate(systems[names[0]][metric_name]))
        for system in names[1:]:
            draws[system, metric_name] = metric.from_sums(sums[:, columns[system, metric_name]], images) - base
            diff = float(metric.aggregate(systems[system][metric_name])) - base_score
            rows.append({"system": system, "metric": metric_name, "diff": diff,
                         "p_bootstrap": bootstrap_p(draws[system, metric_name], diff)})
    every = [dict(r) for r in rows]
    adjust_rows(every, draws, "all")
    per_metric = [dict(r) for r in rows]
    adjust_rows(per_metric, draws, "metric")
    raw = np.array([r["p_bootstrap"] for r in rows])
    holm_p = np.concatenate([holm(raw[[r["metric"] == m for r in rows]]) for m in metrics])
    agree = all(((r["diff_low"] > 0) or (r["diff_high"] < 0)) == (r["p_adjusted"] < ALPHA) for r in every)
    return {"max-T, every comparison (default)": any(r["p_adjusted"] < ALPHA for r in every),
            "step-down max-T, every comparison": any(r["p_stepdown"] < ALPHA for r in every),
            "max-T per metric, any metric": any(r["p_adjusted"] < ALPHA for r in per_metric),
            "Holm per metric, any metric (former)": bool((holm_p < ALPHA).any()),
            "unadjusted paired bootstrap": bool((raw < ALPHA).any()),
            "intervals agree with p_adj": agree}


def dealt(stats: dict, models: tuple, sample: np.ndarray, rng: np.random.Generator, degrade: float = 0.0) -> dict:
    """System j gets, on each sampled image, the caption of the model the dealing gives it; with
    ``degrade``, system s1's captions of that share of the images are the same model's captions of
    the next image instead (a worse system)."""
    order = rng.permuted(np.tile(np.arange(len(models)), (len(sample), 1)), axis=1)
    picked = {name: np.stack([stats[m][name][sample] for m in models]) for name in stats[models[0]]}
    systems = {f"s{j}": {name: block[order[:, j], np.arange(len(sample))] for name, block in picked.items()}
               for j in range(len(models))}
    if degrade:
        moved = rng.choice(len(sample), round(degrade * len(sample)), replace=False)
        for name in systems["s1"]:
            shifted = np.stack([stats[f"{m} shifted"][name][sample] for m in models])
            systems["s1"][name][moved] = shifted[order[moved, 1], moved]
    return systems


def critical_spread(metrics: dict, systems: dict, seeds: int = 20) -> dict:
    """The max-T critical value's mean and spread over ``seeds`` bootstrap seeds, at 1,000 resamples
    and at ``20 m / ALPHA`` (m comparisons)."""
    m = (len(systems) - 1) * len(metrics)
    out = {}
    for resamples in (1000, int(np.ceil(20 * m / ALPHA))):
        values = []
        for seed in range(seeds):
            names = list(systems)
            blocks = [systems[s][metric] for s in names for metric in metrics]
            sums = resampled_sums(np.concatenate(blocks, axis=1), resamples, np.random.default_rng(1000 + seed))
            at, draws, observed = 0, [], []
            scores = {}
            for s in names:
                for name, metric in metrics.items():
                    width = systems[s][name].shape[1]
                    scores[s, name] = (metric.from_sums(sums[:, at:at + width], len(blocks[0])),
                                       float(metric.aggregate(systems[s][name])))
                    at += width
            for s in names[1:]:
                for name in metrics:
                    draws.append(scores[s, name][0] - scores[names[0], name][0])
                    observed.append(scores[s, name][1] - scores[names[0], name][1])
            values.append(max_t(np.column_stack(draws), np.array(observed)).critical)
        out[resamples] = (float(np.mean(values)), float(np.std(values, ddof=1)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--degrade", type=float, default=0.1, help="power: the share of s1's images misplaced")
    parser.add_argument("--meteor", action="store_true", help="METEOR too (its native backend)")
    args = parser.parse_args(argv)
    if not (io.shared_data() / "where-image2-captions").is_dir():
        print(f"skipped: {io.shared_data()} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    from scipy.stats import binomtest
    start = time.perf_counter()
    metrics, stats = statistics(METRICS + (("METEOR",) if args.meteor else ()))
    print(f"metrics: {', '.join(metrics)}; {args.replications} replications of {args.images} images, "
          f"{args.resamples} resamples; statistics in {time.perf_counter() - start:.0f} s")
    with threadpool_limits(1):
        for design, models in DESIGNS.items():
            m = (len(models) - 1) * len(metrics)
            for degrade in (0.0, args.degrade):
                rng = np.random.default_rng(41)
                counts: dict = {}
                for replication in range(args.replications):
                    sample = rng.choice(1000, args.images, replace=False)
                    systems = dealt(stats, models, sample, rng, degrade)
                    for method, rejected in replicate(metrics, systems, args.resamples, replication).items():
                        counts[method] = counts.get(method, 0) + int(rejected)
                what = ("equal systems (dealt): family-wise error" if not degrade else
                        f"power: s1 with {degrade:.0%} of its captions misplaced, any rejection")
                print(f"\n{design} ({', '.join(models)}), family of {m} comparisons; {what}")
                for method, count in counts.items():
                    low, high = binomtest(count, args.replications).proportion_ci(0.95, method="exact")
                    print(f"  {method}: {count / args.replications:.3f} [{low:.3f}, {high:.3f}]")
            spread = critical_spread(metrics, dealt(stats, models, np.arange(args.images), np.random.default_rng(7)))
            print("  max-T critical value over 20 seeds: " + "; ".join(
                f"{b:,} resamples {mean:.3f} (sd {sd:.3f})" for b, (mean, sd) in spread.items()))
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
