"""REO on the built-in shapes dataset: train the shared space, then check R/E/O against known scenes.

    python experiments/reo_shapes/run.py --out runs/reo_shapes [--quick] [--regions ...] [--loss ...]

1. Loads the cached shapes dataset, its scenes and the logical form of every reference (from
   the generator), and the shared image encoder's features (training it once if absent).
2. Regions, one kind or several (``--regions``): "grid" (the encoder's 6x6 cells), "oracle"
   (one per object from the scene's boxes, plus the background, RoI-pooled from the grid map),
   "learned" (a small detector trained on the training split's boxes, same pooling).
3. Trains a SCAN-style matching model per regions kind and loss (``--loss``: "hinge", VSE++
   hardest negatives after an all-negatives warm-up, or "infonce", learned temperature), with
   the negatives that are true of the caption (by the logical forms) left out of the loss unless
   ``--keep-false-negatives``; per epoch the loss and the validation recall are kept. Test
   retrieval: plain and ambiguity-aware recall at 1/5/10 and mAP, both ways, beside chance
   (OUT/<variant>/retrieval.tsv).
4. Candidate captions of known content per test image are scored with REO (image and
   references as ground truth; the references' truth is the union of the tuples they state),
   and with CIDEr-D, METEOR and BLEU-4 against the references: OUT/<variant>/reo_table.tsv
   (Spearman rho with extra/omitted/correct tuples, pooled and within image, and the
   within-image regression on extra and omitted together), OUT/<variant>/reo_decomposition.tsv
   (the cosine and norm factors of E and O), OUT/baselines_table.tsv.
5. The variant with the best validation (ambiguity-aware recall sum) is the scorer written to
   OUT/reo_scorer; its tables are also written at the top of OUT (reo_validation*.tsv,
   figure3.tsv, plots) with OUT/summary.json and OUT/variants.tsv comparing all variants.
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
import known_captions
import matplotlib.pyplot as plt
import numpy as np
import reo_validation

from pregen_jax import io, reo
from pregen_jax.datasets import TOKENIZER_NAME, ShapesConfig, Vocabulary, load_shapes
from pregen_jax.datasets.shapes import load_reference_forms, load_scenes
from pregen_jax.datasets.shapes_encoder import attach_image_features
from pregen_jax.io import default_cache_dir
from pregen_jax.reo import regions as reo_regions
from pregen_jax.reo import retrieval as reo_retrieval
from pregen_jax.reo import truth as reo_truth

FULL = {"data": ShapesConfig(), "matcher": reo.MatcherConfig(),
        "training": {"hinge": reo.MatchTrainConfig(epochs=14, batch_size=128, learning_rate=1e-3, warmup_epochs=6),
                     "infonce": reo.MatchTrainConfig(epochs=14, batch_size=128, learning_rate=1e-3, loss="infonce")},
        "detector": reo_regions.DetectorConfig(epochs=20),
        "max_extras": 3, "encoder_epochs": 4}
QUICK = {"data": ShapesConfig(train=1200, val=200, test=300), "matcher": reo.MatcherConfig(joint_size=64, embed_size=64),
         "training": {"hinge": reo.MatchTrainConfig(epochs=8, batch_size=64, learning_rate=2e-3, warmup_epochs=4,
                                                    val_images=100),
                      "infonce": reo.MatchTrainConfig(epochs=8, batch_size=64, learning_rate=2e-3, loss="infonce",
                                                      val_images=100)},
         "detector": reo_regions.DetectorConfig(epochs=30),
         "max_extras": 3, "encoder_epochs": 3}
DEFAULT_REGIONS = {"full": "all", "quick": "oracle,learned"}  # --quick leaves the grid out: 5 minutes
DEFAULT_LOSS = "infonce"  # better than the hinge on validation for every kind of regions (README)
BASELINES = {"CIDEr": "CIDEr", "METEOR": "METEOR", "BLEU-4": "Bleu_4"}
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
                                                   for kind in known_captions.EXTRA_KINDS}}
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
    for col, against in enumerate(reo_validation.AGAINST):
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


def baseline_scores(candidates, references, image_ids) -> dict[str, np.ndarray]:
    """CIDEr-D, METEOR and BLEU-4 of every candidate against its image's references, one design
    (omit, extras) at a time so that each image is scored once per call; CIDEr-D's document
    frequencies from all test references. A metric that cannot run is left out (said on stderr)."""
    from pregen_jax.postgen import api
    refs = {image_ids[n]: [" ".join(r) for r in rs] for n, rs in enumerate(references)}
    designs = {}
    for k, c in enumerate(candidates):
        designs.setdefault((c.omit, c.extras), []).append(k)
    out = {}
    for label, name in BASELINES.items():
        values = np.zeros(len(candidates))
        try:
            for chosen in designs.values():
                gts = {image_ids[candidates[k].image]: refs[image_ids[candidates[k].image]] for k in chosen}
                res = {image_ids[candidates[k].image]: [" ".join(candidates[k].tokens)] for k in chosen}
                _, per = api.score(name, gts, res, idf_from=refs if name == "CIDEr" else None, tokenizer="alnum-lower")
                values[chosen] = per
        except Exception as err:  # METEOR needs Java: say so and go on
            print(f"{label} not computed: {err}", file=sys.stderr)
            continue
        out[label] = values
    return out


def run_variant(kind: str, loss: str, setup: dict, data: dict, out: Path, mask: bool, progress: bool) -> dict:
    """Train one matcher (regions ``kind``, ``loss``), measure retrieval, score the candidates."""
    name = f"{kind}-{loss}"
    folder = out / name
    timings, tick = {}, time.perf_counter()
    regions = data["regions"][kind]
    config = dataclasses.replace(setup["training"][loss], mask_false_negatives=mask)
    matcher_config = dataclasses.replace(setup["matcher"], region_size=int(regions["train"].shape[-1]))
    trained = reo.train_matcher(matcher_config, config, data["vocab"], regions["train"], data["train"].captions,
                                out / f"matcher-{name}", regions["val"], data["val"].captions, progress,
                                train_truth=data["train_truth"], val_truth=data["val_truth"])
    timings["training_s"] = time.perf_counter() - tick
    matcher, params = trained.matcher, trained.params

    tick = time.perf_counter()
    test = data["test"]
    flat = [t for refs in test.captions for t in refs]
    owner = np.array([n for n, refs in enumerate(test.captions) for _ in refs])
    similarity = reo.train.similarity_matrix(matcher, params, regions["test"], flat)
    measures = reo_retrieval.retrieval_measures(similarity, owner, data["test_truth"])
    reo_retrieval.write_retrieval_measures(measures, folder / "retrieval.tsv")
    timings["retrieval_s"] = time.perf_counter() - tick

    tick = time.perf_counter()
    candidates = data["candidates"]
    covariance = reo.estimate_covariance(matcher, params, regions["train"], data["train"].captions)
    scores = reo.score_pairs(matcher, params, regions["test"], [c.tokens for c in candidates], test.captions,
                             covariance, [c.image for c in candidates], batch_size=500, parts=True)
    reo_scores = {f"{m}_{g}": scores[f"{m}_{g}"] for g in reo.scores.GROUND_TRUTHS for m in reo.scores.MEASURES}
    table = reo_validation.metric_table(reo_scores, candidates, data["counts"])
    decomposition = reo_validation.decomposition_table(scores, candidates, data["counts"])
    reo_validation.write_rows(table, folder / "reo_table.tsv")
    reo_validation.write_rows(decomposition, folder / "reo_decomposition.tsv")
    timings["reo_scoring_s"] = time.perf_counter() - tick
    history = list(trained.history)
    best_epoch = max(range(len(history)), key=lambda e: history[e].get("val_rsum_ambiguous", history[e]["val_rsum"]))
    result = {"variant": name, "regions": kind, "loss": loss, "mask_false_negatives": mask,
              "regions_per_image": int(regions["test"].shape[1]), "history": history, "best_epoch": best_epoch + 1,
              "val_rsum_ambiguous": history[best_epoch].get("val_rsum_ambiguous"),
              "val_rsum": history[best_epoch]["val_rsum"], "retrieval": measures, "covariance": covariance.source,
              "table": table, "decomposition": decomposition, "timings": timings}
    io.write_text(json.dumps(result, indent=1, default=float), folder / "result.json")
    return {**result, "matcher": matcher, "params": params, "covariance_object": covariance, "scores": scores,
            "matcher_path": out / f"matcher-{name}" / reo.train.MATCHER_FILE}


def _goal_line(row: dict) -> str:
    return (f"{row['score']:8s} {row['ground_truth']:5s} extra {row['rho_extra']:+.2f}/{row['rho_extra_within']:+.2f}"
            f"  omitted {row['rho_omitted']:+.2f}/{row['rho_omitted_within']:+.2f}"
            f"  correct {row['rho_correct']:+.2f}/{row['rho_correct_within']:+.2f}"
            f"  beta extra {row['beta_extra']:+.2f} omitted {row['beta_omitted']:+.2f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="small dataset, short training (under 5 minutes)")
    parser.add_argument("--regions", default=None,
                        help=f"comma-separated region kinds among {', '.join(reo_regions.REGION_KINDS)}, or 'all' "
                             f"(default {DEFAULT_REGIONS['full']}; --quick: {DEFAULT_REGIONS['quick']})")
    parser.add_argument("--loss", default=DEFAULT_LOSS, help="comma-separated losses among hinge, infonce, or 'all' "
                                                             f"(default {DEFAULT_LOSS})")
    parser.add_argument("--keep-false-negatives", action="store_true",
                        help="do not leave captions true of another batch image out of the loss")
    parser.add_argument("--no-baselines", action="store_true", help="skip CIDEr/METEOR/BLEU-4 of the candidates")
    parser.add_argument("--epochs", type=int, default=None, help="matcher epochs (default: 14; --quick: 8)")
    parser.add_argument("--cache", default=None, help="dataset and encoder cache (default: PREGEN_JAX_CACHE or "
                                                      "~/.cache/pregen-jax)")
    args = parser.parse_args(argv)
    args.regions = args.regions or DEFAULT_REGIONS["quick" if args.quick else "full"]
    kinds = list(reo_regions.REGION_KINDS) if args.regions == "all" else args.regions.split(",")
    losses = ["hinge", "infonce"] if args.loss == "all" else args.loss.split(",")
    for kind in kinds:
        if kind not in reo_regions.REGION_KINDS:
            parser.error(f"unknown region kind {kind!r}")
    for loss in losses:
        if loss not in ("hinge", "infonce"):
            parser.error(f"unknown loss {loss!r}")
    setup = QUICK if args.quick else FULL
    if args.epochs:
        setup = {**setup, "training": {k: dataclasses.replace(v, epochs=args.epochs) for k, v in setup["training"].items()}}
    out = Path(args.out)
    cache = Path(args.cache) if args.cache else default_cache_dir()
    progress = sys.stderr.isatty()
    timings, start = {}, time.perf_counter()

    dataset = load_shapes(setup["data"], cache)
    # The demo's encoder (4 epochs; --quick: demo --quick's 3), so that the scorer fits those searches' images.
    encoder = attach_image_features(dataset, cache, epochs=setup["encoder_epochs"], seed=0, progress=False)
    scenes = load_scenes(setup["data"], cache)
    forms = load_reference_forms(setup["data"], cache)
    train, val, test = dataset["train"], dataset["val"], dataset["test"]
    vocab = Vocabulary.build(train.captions, 5)
    timings["data_and_encoder_s"] = time.perf_counter() - start

    tick = time.perf_counter()
    detector, detection = None, None
    if "learned" in kinds:
        detector = reo_regions.train_detector(train.features, scenes["train"], setup["detector"])
        detection = {split: reo_regions.detection_quality(detector.boxes(dataset[split].features), scenes[split])
                     for split in ("val", "test")}
    timings["detector_s"] = time.perf_counter() - tick
    region_sets = {kind: {split: reo_regions.regions_of(kind, dataset[split].features, scenes[split], detector)
                          for split in ("train", "val", "test")} for kind in kinds}

    tick = time.perf_counter()
    flat_val = [f for fs in forms["val"] for f in fs]
    flat_test = [f for fs in forms["test"] for f in fs]
    candidates = known_captions.make_candidates(scenes["test"], setup["max_extras"], seed=0)
    ref_truths = [reo_truth.reference_tuples(fs) for fs in forms["test"]]
    data = {"regions": region_sets, "vocab": vocab, "train": train, "val": val, "test": test,
            "train_truth": reo_truth.batch_truth(forms["train"], scenes["train"]),
            "val_truth": reo_truth.truth_matrix(flat_val, scenes["val"]),
            "test_truth": reo_truth.truth_matrix(flat_test, scenes["test"]), "candidates": candidates,
            "counts": {"image": reo_validation.count_arrays(candidates),
                       "refs": reo_validation.count_arrays(candidates, ref_truths)}}
    truth_share = {split: float(t.mean()) for split, t in (("val", data["val_truth"]), ("test", data["test_truth"]))}
    timings["truth_s"] = time.perf_counter() - tick

    tick = time.perf_counter()
    baselines, baseline_rows = {}, []
    if not args.no_baselines:
        baselines = baseline_scores(candidates, test.captions, test.image_ids)
        baseline_rows = reo_validation.metric_table(baselines, candidates, data["counts"]) if baselines else []
        if baseline_rows:
            reo_validation.write_rows(baseline_rows, out / "baselines_table.tsv")
    timings["baselines_s"] = time.perf_counter() - tick

    results = []
    for kind in kinds:
        for loss in losses:
            tick = time.perf_counter()
            results.append(run_variant(kind, loss, setup, data, out, not args.keep_false_negatives, progress))
            timings[f"variant_{kind}-{loss}_s"] = time.perf_counter() - tick
            print(f"{results[-1]['variant']}: val recall sum {results[-1]['val_rsum']:.3f}, ambiguity-aware "
                  f"{results[-1]['val_rsum_ambiguous']:.3f} ({timings[f'variant_{kind}-{loss}_s']:.0f} s)", flush=True)
    best = max(results, key=lambda r: r["val_rsum_ambiguous"])
    # the scorer a search uses must make its regions from image features alone: not the oracle's
    deployable = [r for r in results if r["regions"] != "oracle"]
    scorer_variant = max(deployable, key=lambda r: r["val_rsum_ambiguous"]) if deployable else None
    if scorer_variant:
        reo.save_scorer(reo.ReoScorer(scorer_variant["matcher"], scorer_variant["params"],
                                      scorer_variant["covariance_object"]),
                        scorer_variant["matcher_path"], out / "reo_scorer", Path(encoder["encoder"]).name,
                        regions=scorer_variant["regions"],
                        detector=detector if scorer_variant["regions"] == "learned" else None)

    tick = time.perf_counter()
    matcher, params = best["matcher"], best["params"]
    test_regions = region_sets[best["regions"]]["test"]
    scores = {f"{m}_{g}": best["scores"][f"{m}_{g}"] for g in reo.scores.GROUND_TRUTHS for m in reo.scores.MEASURES}
    reo_validation.write_correlations(reo_validation.correlations(scores, candidates), out / "reo_validation.tsv")
    reo_validation.write_correlations(reo_validation.correlations(scores, candidates, within_image=True),
                           out / "reo_validation_within_image.tsv")
    plot_scores(scores, candidates, out / "reo_vs_counts.png")
    by_kind = write_by_extra_kind(scores, candidates, out / "reo_by_extra_kind.tsv")
    figure3 = write_figure3(reo_validation.figure3_cosines(matcher, params, test_regions, test.captions, candidates),
                            out / "figure3.tsv")
    timings["best_extras_s"] = time.perf_counter() - tick
    timings["total_s"] = time.perf_counter() - start

    variant_rows = []
    for r in results:
        m = r["retrieval"]
        variant_rows.append({"variant": r["variant"], "val_rsum": r["val_rsum"],
                             "val_rsum_ambiguous": r["val_rsum_ambiguous"], "best_epoch": r["best_epoch"],
                             **{f"{d[:5]}_{key}_at_5": m[d][key][5] for d in m for key in ("recall", "recall_ambiguous")},
                             **{f"{d[:5]}_map": m[d]["map"] for d in m},
                             **{f"{d[:5]}_{key}": m[d][key][5] for d in m
                                for key in ("recall_chance", "recall_ambiguous_chance")},  # at 5
                             **{f"{d[:5]}_map_chance": m[d]["map_chance"] for d in m}})
    reo_validation.write_rows(variant_rows, out / "variants.tsv")
    summary = {"mode": "quick" if args.quick else "full", "tokenizer": TOKENIZER_NAME,
               "dataset": dataclasses.asdict(setup["data"]), "encoder": encoder,
               "matcher": dataclasses.asdict(setup["matcher"]),
               "training": {k: dataclasses.asdict(v) for k, v in setup["training"].items()},
               "mask_false_negatives": not args.keep_false_negatives, "vocabulary_size": len(vocab),
               "caption_true_of_image_share": truth_share, "detection": detection,
               "candidates": len(candidates), "best_variant": best["variant"],
               "scorer_variant": scorer_variant["variant"] if scorer_variant else None,
               "variants": [{k: v for k, v in r.items() if k not in ("matcher", "params", "covariance_object",
                                                                      "scores", "matcher_path")} for r in results],
               "baselines": baseline_rows, "by_extra_kind": by_kind, "figure3": figure3, "timings": timings}
    io.write_text(json.dumps(summary, indent=1, default=float), out / "summary.json")

    print(f"candidates: {len(candidates)}; a test caption is true of {truth_share['test']:.1%} of test images")
    if detection:
        print(f"learned detector (test, IoU >= 0.5): {detection['test']}")
    print("variant          val rsum (ambig.)  test R@5 i2c/c2i plain | ambiguity-aware | mAP (chance)")
    for r in results:
        m = r["retrieval"]
        i2c, c2i = m["image_to_caption"], m["caption_to_image"]
        print(f"  {r['variant']:15s} {r['val_rsum']:.2f} ({r['val_rsum_ambiguous']:.2f})  "
              f"{i2c['recall'][5]:.3f}/{c2i['recall'][5]:.3f} | {i2c['recall_ambiguous'][5]:.3f}/"
              f"{c2i['recall_ambiguous'][5]:.3f} | {i2c['map']:.3f} ({i2c['map_chance']:.3f})/"
              f"{c2i['map']:.3f} ({c2i['map_chance']:.3f})")
    for r in results:
        print(f"{r['variant']}: rho pooled/within image, within-image betas")
        for row in r["table"]:
            print("  " + _goal_line(row))
    if baseline_rows:
        print("baselines (against the references' and the image's tuples):")
        for row in baseline_rows:
            print("  " + _goal_line(row))
    print(f"best on validation: {best['variant']}; total {timings['total_s']:.0f} s; outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
