"""REO on the built-in shapes dataset: train the shared space, then check R/E/O against known scenes.

    python experiments/reo_shapes/run.py --out runs/reo_shapes [--quick]

1. Loads the cached shapes dataset and the shared image encoder's features (training it once if
   absent); the encoder's 6x6x64 map gives 36 region vectors per image.
2. Trains the SCAN-style matching model on the train split (resumable in OUT/matcher/) and
   writes test retrieval recall at 1/5/10 to OUT/retrieval.tsv.
3. Builds candidate captions of known content for every test image (extra and omitted objects
   and attributes, counted in tuples against the scene), scores them with REO against the image
   and against the references, and writes the Spearman correlations with the counts to
   OUT/reo_validation.tsv (Ledoit-Wolf covariance) and OUT/reo_validation_identity.tsv
   (Euclidean distance), the same within images (scores and counts minus their image's mean)
   to OUT/reo_validation_within_image*.tsv, the paper's Figure 3 check to OUT/figure3.tsv, plots, and
   OUT/summary.json. ``--quick``: a 1200/200/300-image dataset and a short training.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pregen_jax import io, reo
from pregen_jax.datasets import TOKENIZER_NAME, ShapesConfig, Vocabulary, load_shapes
from pregen_jax.datasets.shapes import load_scenes
from pregen_jax.datasets.shapes_encoder import attach_image_features
from pregen_jax.io import default_cache_dir

FULL = {"data": ShapesConfig(), "matcher": reo.MatcherConfig(),
        "training": reo.MatchTrainConfig(epochs=14, batch_size=128, learning_rate=1e-3, warmup_epochs=6),
        "max_extras": 3, "encoder_epochs": 4}
QUICK = {"data": ShapesConfig(train=1200, val=200, test=300), "matcher": reo.MatcherConfig(joint_size=64, embed_size=64),
         "training": reo.MatchTrainConfig(epochs=8, batch_size=64, learning_rate=2e-3, warmup_epochs=4, val_images=100),
         "max_extras": 3, "encoder_epochs": 3}
FIGURE3_THRESHOLD = 0.65  # the paper reports machine-identified errors at >= 0.65 cosine with the true ones


def write_figure3(cosines: dict, path: Path) -> list[dict]:
    rows = []
    for kind, values in cosines.items():
        for key, arr in values.items():
            ground, target = key.split("_")
            rows.append({"error": kind, "ground_truth": ground, "against": target, "mean_cosine": float(arr.mean()),
                         "median_cosine": float(np.median(arr)),
                         "fraction_at_least_0.65": float(np.mean(arr >= FIGURE3_THRESHOLD)), "n": len(arr)})
    header = list(rows[0]) if rows else ["error"]
    lines = ["\t".join(header)] + ["\t".join(f"{r[h]:.4f}" if isinstance(r[h], float) else str(r[h]) for h in header)
                                   for r in rows]
    io.write_text("\n".join(lines) + "\n", path)
    return rows


def write_by_extra_kind(scores: dict, candidates, path: Path) -> list[dict]:
    """Mean scores of candidates that leave nothing out, with no addition or exactly one of each kind."""
    groups = {"none": lambda c: c.extras == 0, **{kind: (lambda c, kind=kind: c.extra_kinds == (kind,))
                                                   for kind in reo.captions.EXTRA_KINDS}}
    rows = []
    for name, keep in groups.items():
        chosen = np.array([c.omit == 0 and keep(c) for c in candidates])
        rows.append({"addition": name, "n": int(chosen.sum()),
                     **{key: float(values[chosen].mean()) for key, values in sorted(scores.items())}})
    header = list(rows[0])
    lines = ["\t".join(header)] + ["\t".join(f"{r[h]:.4f}" if isinstance(r[h], float) else str(r[h]) for h in header)
                                   for r in rows]
    io.write_text("\n".join(lines) + "\n", path)
    return rows


def plot_scores(scores: dict, candidates, path: Path) -> None:
    """R/E/O (rows) against the number of extra, omitted and correct tuples (columns): mean +- s.e.

    Each score is standardised over all candidates (z-score), so the two ground truths, whose
    scales differ by orders of magnitude, share an axis.
    """
    fig, axes = plt.subplots(3, 3, figsize=(12, 10), sharex="col")
    for col, against in enumerate(reo.validation.AGAINST):
        counts = np.array([getattr(c, against) for c in candidates])
        levels = np.unique(counts)
        for row, measure in enumerate(reo.scores.MEASURES):
            ax = axes[row, col]
            for ground, style in (("image", "o-"), ("refs", "s--")):
                values = scores[f"{measure}_{ground}"]
                values = (values - values.mean()) / (values.std() or 1.0)
                means = [values[counts == x].mean() for x in levels]
                errors = [values[counts == x].std() / np.sqrt(max((counts == x).sum(), 1)) for x in levels]
                ax.errorbar(levels, means, yerr=errors, fmt=style, capsize=2, label=f"ground truth: {ground}")
            ax.set_ylabel(f"{measure} (z-score)")
            if row == 2:
                ax.set_xlabel(f"{against} tuples")
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("REO on candidate captions of known content (shapes test split)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="small dataset, short training (about 3 minutes)")
    parser.add_argument("--cache", default=None, help="dataset and encoder cache (default: PREGEN_JAX_CACHE or "
                                                      "~/.cache/pregen-jax)")
    args = parser.parse_args(argv)
    setup = QUICK if args.quick else FULL
    out = Path(args.out)
    cache = Path(args.cache) if args.cache else default_cache_dir()
    timings, start = {}, time.perf_counter()

    dataset = load_shapes(setup["data"], cache)
    # The demo's encoder (4 epochs; --quick: demo --quick's 3), so that the scorer fits those searches' images.
    encoder = attach_image_features(dataset, cache, epochs=setup["encoder_epochs"], seed=0, progress=False)
    scenes = load_scenes(setup["data"], cache)["test"]
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    regions = {name: reo.shapes_regions(split.features) for name, split in dataset.splits.items()}
    vocab = Vocabulary.build(train.captions, 5)
    timings["data_and_encoder_s"] = time.perf_counter() - start

    tick = time.perf_counter()
    trained = reo.train_matcher(setup["matcher"], setup["training"], vocab, regions["train"], train.captions,
                                out / "matcher", regions["val"], val.captions, progress=sys.stderr.isatty())
    timings["matcher_training_s"] = time.perf_counter() - tick
    matcher, params = trained.matcher, trained.params

    tick = time.perf_counter()
    recalls = reo.retrieval_recalls(matcher, params, regions["test"], test.captions)
    reo.write_retrieval(recalls, out / "retrieval.tsv")
    timings["retrieval_s"] = time.perf_counter() - tick

    tick = time.perf_counter()
    candidates = reo.make_candidates(scenes, setup["max_extras"], seed=0)
    covariances = {"ledoit_wolf": reo.estimate_covariance(matcher, params, regions["train"], train.captions),
                   "identity": reo.Covariance.identity(matcher.config.joint_size)}
    image_of = [c.image for c in candidates]
    results = {}
    reo.save_scorer(reo.ReoScorer(matcher, params, covariances["ledoit_wolf"]), out / "matcher" / "matcher.msgpack",
                    out / "reo_scorer", Path(encoder["encoder"]).name)  # a search's [postgen] reo_model
    for name, covariance in covariances.items():
        scores = reo.score_pairs(matcher, params, regions["test"], [c.tokens for c in candidates], test.captions,
                                 covariance, image_of, batch_size=1000)
        rows = reo.correlations(scores, candidates)
        within = reo.correlations(scores, candidates, within_image=True)
        suffix = "" if name == "ledoit_wolf" else f"_{name}"
        reo.write_correlations(rows, out / f"reo_validation{suffix}.tsv")
        reo.write_correlations(within, out / f"reo_validation_within_image{suffix}.tsv")
        plot_scores(scores, candidates, out / f"reo_vs_counts{suffix}.png")
        by_kind = write_by_extra_kind(scores, candidates, out / f"reo_by_extra_kind{suffix}.tsv")
        results[name] = {"by_extra_kind": by_kind, "rows": [dataclasses.asdict(r) for r in rows],
                         "within_image": [dataclasses.asdict(r) for r in within],
                         "means": {k: float(v.mean()) for k, v in scores.items()}}
    # sanity: the candidates with nothing extra or omitted, against their own image and the next one
    perfect = [c for c in candidates if c.omit == 0 and c.extras == 0]
    own_image = np.array([c.image for c in perfect])
    matched_vs_wrong = {}
    for label, images in (("own_image", own_image), ("next_image", (own_image + 1) % len(test))):
        scores = reo.score_pairs(matcher, params, regions["test"], [c.tokens for c in perfect], test.captions,
                                 covariances["ledoit_wolf"], images, batch_size=1000)
        matched_vs_wrong[label] = {k: float(v.mean()) for k, v in scores.items()}
    timings["reo_scoring_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    figure3 = write_figure3(reo.figure3_cosines(matcher, params, regions["test"], test.captions, candidates),
                            out / "figure3.tsv")
    timings["figure3_s"] = time.perf_counter() - tick
    timings["total_s"] = time.perf_counter() - start

    summary = {"mode": "quick" if args.quick else "full", "tokenizer": TOKENIZER_NAME,
               "dataset": dataclasses.asdict(setup["data"]), "encoder": encoder,
               "matcher": dataclasses.asdict(setup["matcher"]), "training": dataclasses.asdict(setup["training"]),
               "training_history": trained.history, "vocabulary_size": len(vocab),
               "covariance": covariances["ledoit_wolf"].source, "candidates": len(candidates),
               "candidate_tokens_max": max(len(c.tokens) for c in candidates),
               "retrieval": recalls, "validation": results, "perfect_candidates_own_vs_next_image": matched_vs_wrong, "figure3": figure3, "timings": timings}
    io.write_text(json.dumps(summary, indent=1, default=str), out / "summary.json")

    print(f"retrieval on {len(test)} test images ({sum(map(len, test.captions))} captions):")
    for direction, r in recalls.items():
        print(f"  {direction:17s} " + "  ".join(f"R@{k} {v:.3f}" for k, v in r.items()))
    print(f"REO on {len(candidates)} candidates, {covariances['ledoit_wolf'].source}:")
    print("  measure ground  against  rho(pooled) rho(within image)")
    for row, within in zip(results["ledoit_wolf"]["rows"], results["ledoit_wolf"]["within_image"]):
        print(f"  {row['measure']}       {row['ground_truth']:6s}  {row['against']:7s}  {row['spearman_rho']:+.3f}"
              f"       {within['spearman_rho']:+.3f}")
    print("candidates with no error, mean scores against their own image / the next image:")
    for key in matched_vs_wrong["own_image"]:
        print(f"  {key:8s} {matched_vs_wrong['own_image'][key]:.4f} / {matched_vs_wrong['next_image'][key]:.4f}")
    print("Figure 3 (mean cosine of residual with the error phrase / a correct phrase):")
    for r in figure3:
        print(f"  {r['error']:7s} {r['ground_truth']:5s} {r['against']:7s} {r['mean_cosine']:.3f} "
              f"(>= 0.65: {r['fraction_at_least_0.65']:.2f}, n {r['n']})")
    print(f"total {timings['total_s']:.0f} s; outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
