"""Which checkpoint to keep, and how cheaply: every criterion against full CIDEr, one table.

    python3 experiments/model_selection/run.py --out runs/model_selection [--plan middle|full] [--quick]

Trains grids of caption models (the four RNNs, and the transformer with word and BPE
vocabularies; sizes x learning rates, a snapshot every epoch) on the built-in shapes dataset
and on Flickr8k (image stand-in: the mean GloVe vector of a held-out caption), scores every
checkpoint on the validation split (beam-3 CIDEr per image with whole-set frequencies,
optionally METEOR, per-token perplexity, the 504 pre-gen metrics at word level, the wall time
of each), adds the 12 where-image2 models (captions only), and asks of every criterion a user
could select by how well it makes CIDEr's decisions (compare.py): validation perplexity, the
2018 winner, the pre-gen metrics a search on disjoint models picks, CIDEr on 5/10/25% of the
images and racing at budgets of 5/10/25% (cheap.py; 50 reseeded runs each).

Writes DIR/selection.tsv (one row per grid and criterion), DIR/checkpoints_<grid>.tsv,
DIR/early_stopping.tsv, DIR/search_ranking.tsv, DIR/racing_calibration.tsv,
DIR/criteria_vs_cider.png, DIR/pairwise_accuracy.png and DIR/summary.md; DIR/cache/ keeps
checkpoints and scores, so a rerun resumes (``--only GRID`` fills part of it from a second
process). Timings are wall seconds on this machine, compilation excluded.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cheap
import compare
import corpora
import plots
import scoring
import where_image2

from pregen_jax import io, postgen, ranking, tiers
from pregen_jax.captioning import ARCHITECTURES, criteria
from pregen_jax.datasets import TOKENIZER_NAME, Vocabulary
from pregen_jax.datasets.tokenizer import run_bpe
from pregen_jax.ranking import decisions
from pregen_jax.selection.race import score_range

NAMES = tiers.DEFAULT_SPACE.names
PATIENCE = 2  # TrainConfig's default
PPLX_2018 = ranking.PERPLEXITY_BASELINE  # geomean_join_pplx_none


@dataclasses.dataclass(frozen=True)
class Grid:
    architectures: tuple[str, ...]
    sizes: tuple[int, ...]
    learning_rates: tuple[float, ...]
    epochs: int
    dropout: float = 0.5
    layers: int = 0        # transformer: decoder blocks, attention heads
    heads: int = 0

    def runs(self, seed: int) -> list[scoring.RunSpec]:
        return [scoring.RunSpec(arch, size, lr, self.dropout, seed + k, self.epochs, layers=self.layers,
                                heads=self.heads)
                for k, (arch, size, lr) in enumerate((a, s, r) for a in self.architectures for s in self.sizes
                                                     for r in self.learning_rates)]


RNNS = tuple(a for a in ARCHITECTURES if a != "transformer")


@dataclasses.dataclass(frozen=True)
class Plan:
    name: str
    shapes_dataset: tuple[int, int, int]   # the built-in dataset's train/val/test sizes
    encoder_epochs: int
    shapes_images: tuple[int, int, int]    # images used per split
    shapes_grid: Grid
    search_grid: Grid
    search_epochs: tuple[int, ...]         # snapshots of the search models that are scored
    flickr_images: tuple[int, int, int]
    flickr_grid: Grid
    overfit_images: int                    # shapes-small: few training images, no dropout, many epochs,
    overfit_grid: Grid                     # so that early stopping has something to decide
    transformer_grid: Grid                 # on shapes, with the word vocabulary and with a BPE
    bpe_size: int = 64                     # [data] vocab_size of the BPE grid (shapes has ~70 words)
    meteor: bool = True
    resamples: int = 1000
    races: int = cheap.RACES


TRANSFORMERS = Grid(("transformer",), (32, 64), (1e-3, 5e-3), epochs=3, dropout=0.1, layers=2, heads=4)
FULL = Plan(name="full", shapes_dataset=(6000, 1000, 1000), encoder_epochs=4, shapes_images=(2000, 1000, 500),
            shapes_grid=Grid(RNNS, (32, 96), (1e-3, 5e-3), epochs=4),
            search_grid=Grid(RNNS, (32, 96), (1e-3, 5e-3), epochs=4), search_epochs=(1, 2, 4),
            flickr_images=(2000, 1000, 500), flickr_grid=Grid(RNNS, (64,), (1e-3, 5e-3), epochs=4),
            overfit_images=400, overfit_grid=Grid(RNNS, (96,), (5e-3,), epochs=10, dropout=0.0),
            transformer_grid=dataclasses.replace(TRANSFORMERS, sizes=(32, 96), epochs=4))
# What fits in about 30 minutes on a loaded 2-core machine: one size per RNN, 600 validation images
# (so that 5% of them is 30 images), no METEOR (the decisions are CIDEr's).
MIDDLE = Plan(name="middle", shapes_dataset=(1200, 600, 300), encoder_epochs=3, shapes_images=(1200, 600, 300),
              shapes_grid=Grid(RNNS, (32,), (1e-3, 5e-3), epochs=3),
              search_grid=Grid(RNNS, (32,), (5e-3,), epochs=3), search_epochs=(1, 2, 3),
              flickr_images=(1000, 300, 100), flickr_grid=Grid(("merge", "par"), (32,), (1e-3, 5e-3), epochs=3),
              overfit_images=200, overfit_grid=Grid(("merge", "par"), (64,), (5e-3,), epochs=6, dropout=0.0),
              transformer_grid=TRANSFORMERS, meteor=False, resamples=500)
QUICK = Plan(name="quick", shapes_dataset=(1200, 200, 300), encoder_epochs=3, shapes_images=(1200, 200, 300),
             shapes_grid=Grid(RNNS, (32,), (5e-3,), epochs=2),
             search_grid=Grid(RNNS, (32,), (5e-3,), epochs=2), search_epochs=(1, 2),
             flickr_images=(300, 100, 100), flickr_grid=Grid(("merge", "par"), (32,), (5e-3,), epochs=2),
             overfit_images=200, overfit_grid=Grid(("merge",), (32,), (5e-3,), epochs=3, dropout=0.0),
             transformer_grid=dataclasses.replace(TRANSFORMERS, sizes=(32,), learning_rates=(5e-3,), epochs=2),
             resamples=200, races=20)
PLANS = {p.name: p for p in (FULL, MIDDLE, QUICK)}
SEEDS = {"selection": 0, "search": 500}


class Clock:
    """Wall and CPU seconds since the start, per phase (CPU: this process, all its threads)."""

    def __init__(self):
        self.start, self.cpu, self.phases = time.perf_counter(), time.process_time(), {}

    def phase(self, name: str) -> None:
        wall, cpu = time.perf_counter() - self.start, time.process_time() - self.cpu
        self.phases[name.split(":")[0]] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}
        print(f"[{wall:7.1f} s wall, {cpu:7.1f} s CPU] {name}", flush=True)


# ------------------------------------------------------------------ the search on disjoint models


def search_picks(corpus, plan: Plan, cache: Path, metrics, progress: bool) -> tuple[dict, pd.DataFrame, np.ndarray]:
    """Train the search models (other seeds), score them on the test split in 15 strata, rank.

    Returns ({"R^2": (name, sign), "pairwise accuracy": (name, sign)}, the ranking table,
    f64[models, test images] per-image CIDEr of the search models: held-out data for racing's level).
    """
    cider = next(m for m in metrics.metrics if m.name == "CIDEr")
    rows, held_out = [], []
    specs = plan.search_grid.runs(SEEDS["search"])
    for spec in tqdm(specs, desc="search models", disable=not progress):
        spec.train(corpus, cache, progress=False)
        for epoch in plan.search_epochs:
            trained = scoring.load_snapshot(spec, cache, epoch, corpus.vocab)
            scores = scoring.score_search_model(trained, corpus.test, corpus.vocab, cider,
                                                cache / "search" / f"{spec.label}-e{epoch}.npz")
            frame = pd.DataFrame(scores["pregen"], columns=NAMES)
            frame.insert(0, "CIDEr", scores["cider"])
            for col, value in (("architecture", spec.arch), ("run", spec.label), ("epoch", str(epoch)),
                               ("num_strata", scores["num_strata"]), ("stratum", scores["stratum"])):
                frame.insert(0, col, value)
            rows.append(frame)
            held_out.append(scores["per_image"])
    table = pd.concat(rows, ignore_index=True)
    result = ranking.rank(table, ["CIDEr"], NAMES)
    by_r2 = result.correlations["CIDEr"]
    by_pairs = decisions.validate_models(decisions.model_rows(table), by_r2, "CIDEr")
    sign_of = dict(zip(by_r2["pregen"], decisions.signs(by_r2["all_R"])))
    picks = {"R^2": (by_r2["pregen"].iloc[0], sign_of[by_r2["pregen"].iloc[0]]),
             "pairwise accuracy": (by_pairs["pregen"].iloc[0], sign_of[by_pairs["pregen"].iloc[0]])}
    ranked = by_r2[["pregen", "all_R^2", "all_R"]].merge(
        by_pairs[["pregen", "all_pairwise_accuracy", "all_kendall_tau", "all_pairs"]], on="pregen")
    ranked.insert(1, "rank_by_R^2", np.arange(1, len(ranked) + 1))
    ranked["rank_by_pairwise_accuracy"] = ranked["all_pairwise_accuracy"].rank(ascending=False, method="min")
    return picks, ranked, np.stack(held_out)


# ------------------------------------------------------------------ one corpus's checkpoints


def score_grid(corpus, grid: Grid, cache: Path, metrics, subset, progress: bool) -> pd.DataFrame:
    """Train the selection grid and score every snapshot: one row per checkpoint."""
    scorer = scoring.Scorer(corpus, metrics, subset)
    rows = []
    specs = grid.runs(SEEDS["selection"])
    for spec in tqdm(specs, desc=f"{corpus.name} runs", disable=not progress):
        spec.train(corpus, cache, progress=False)
        for epoch in range(1, grid.epochs + 1):
            trained = scoring.load_snapshot(spec, cache, epoch, corpus.vocab)
            scores = scorer.score(trained, cache / "scores" / f"{spec.label}-e{epoch}.npz")
            rows.append({"checkpoint": f"{spec.label}-e{epoch}", "run": spec.label, "architecture": spec.arch,
                         "size": spec.size, "layers": spec.layers, "learning_rate": spec.learning_rate,
                         "epoch": epoch, "CIDEr": float(scores["cider"]), "METEOR": float(scores["meteor"]),
                         "CIDEr@10% measured": float(scores["cider_subset"]),
                         "perplexity": float(scores["perplexity"]),
                         "mean_caption_length": float(scores["mean_caption_length"]),
                         **{f"seconds_{k}": float(t) for k, t in zip(scoring.TIMES, scores["times"])},
                         "_pregen": scores["pregen"], "_per_image": scores["cider_per_image"],
                         "_log_ppl": scores["image_log_perplexity"], "_space": scores["image_space"]})
    return pd.DataFrame(rows)


def criteria_of(frame: pd.DataFrame, pregen: np.ndarray, picks: dict, hindsight: tuple[str, float],
                meteor: bool) -> list[dict]:
    """Every criterion a user could select by: name, values per checkpoint, sign, seconds per evaluation."""
    seconds = {k: float(frame[f"seconds_{k}"].median()) for k in scoring.TIMES}
    pregen_seconds = seconds["refprobs"] + seconds["sweep_one"]

    def metric(label, kind, name, sign):
        return {"label": label, "criterion": f"{kind}: {name}", "metric": name, "sign": sign,
                "values": pregen[:, NAMES.index(name)], "seconds": pregen_seconds}
    winner_sign = criteria.Criterion.make(scoring.WINNER_2018).sign
    chosen = [
        {"label": "CIDEr", "criterion": "CIDEr, beam 3, all validation images (reference)", "metric": "CIDEr",
         "sign": 1.0, "values": frame["CIDEr"].to_numpy(), "seconds": seconds["generate"] + seconds["cider"]},
        {"label": "val perplexity", "criterion": "validation perplexity (the usual default)",
         "metric": "perplexity", "sign": -1.0, "values": frame["perplexity"].to_numpy(), "seconds": seconds["refprobs"]},
        metric("2018 winner", "2018 winner", scoring.WINNER_2018, winner_sign),
        metric("2018 pplx column", "2018 perplexity column", PPLX_2018, -1.0),
        metric("search R^2 pick", "search pick by R^2", *picks["R^2"]),
        metric("search pairwise pick", "search pick by pairwise accuracy", *picks["pairwise accuracy"]),
        metric("hindsight (not selectable)", "best pre-gen in hindsight, not selectable", *hindsight),
    ]
    if meteor:
        chosen.insert(1, {"label": "METEOR", "criterion": "METEOR, beam 3, all validation images",
                          "metric": "METEOR", "sign": 1.0, "values": frame["METEOR"].to_numpy(),
                          "seconds": seconds["generate"] + seconds["meteor"]})
    return chosen


def _slug(name: str) -> str:
    return name.replace(" ", "_").replace("(", "").replace(")", "")


def _save_arrays(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with io.atomic_path(path) as tmp:
        np.savez(tmp, **arrays)


def checkpoints_of(frame: pd.DataFrame, per_image: np.ndarray, resamples: int) -> compare.Checkpoints:
    significant = decisions.paired_bootstrap(per_image, resamples, seed=0).significant()
    return compare.Checkpoints(list(frame["checkpoint"]), list(frame["run"]), frame["epoch"].to_numpy(),
                               per_image.mean(1), significant)


def model_criteria(frame: pd.DataFrame, checkpoints: compare.Checkpoints, picks: dict, meteor: bool) -> list[dict]:
    """The criteria of a grid of trained checkpoints (probabilities known): CIDEr, perplexity, pre-gen."""
    pregen = np.stack(frame["_pregen"].to_numpy())
    with np.errstate(divide="ignore", invalid="ignore"):  # constant columns: NaN R, sign +1, never chosen
        r, _ = ranking.pearson(np.where(np.isfinite(pregen), pregen, 0.0), checkpoints.cider)
    signs = decisions.signs(r)
    usable = np.isfinite(pregen).all(0) & (np.ptp(np.where(np.isfinite(pregen), pregen, 0), 0) > 0)
    best = compare.best_in_hindsight(checkpoints, np.where(usable, pregen, np.nan), signs)
    return criteria_of(frame, pregen, picks, (NAMES[best], float(signs[best])), meteor)


def evaluate_grid(name: str, frame: pd.DataFrame, chosen: list[dict], checkpoints: compare.Checkpoints,
                  resamples: int, extra: dict) -> tuple[list, list]:
    """selection.tsv rows (one per criterion) and early-stopping rows of one grid."""
    rows, stops = [], []
    base = next((c for c in chosen if c["label"] == "val perplexity"), None)
    cider_seconds = chosen[0]["seconds"]
    for c in chosen:
        result, per_run = compare.evaluate_criterion(checkpoints, c["values"], c["sign"], PATIENCE)
        gain = (np.nan,) * 3 if base is None else compare.gain_interval(
            checkpoints, c["values"], c["sign"], base["values"], base["sign"], resamples)
        stats = c.get("stats", {})
        rows.append({"grid": name, **extra, "label": c["label"], "criterion": c["criterion"], "metric": c["metric"],
                     "direction": "higher" if c["sign"] > 0 else "lower", "seconds_per_eval": c["seconds"],
                     "cost_share_of_cider": c["seconds"] / cider_seconds,
                     "speedup_vs_cider": cider_seconds / c["seconds"], **result,
                     "significant_accuracy_gain_vs_perplexity": gain[0], "gain_90ci_low": gain[1],
                     "gain_90ci_high": gain[2], "images_share": stats.get("cost_share", np.nan),
                     "races": stats.get("races", np.nan), "mean_regret_percent": stats.get("mean_regret_percent", np.nan),
                     "p_regret_over_1pct": stats.get("p_regret_over_1pct", np.nan),
                     "p_best_dropped": stats.get("p_best_dropped", np.nan),
                     "left_at_end_mean": stats.get("left_at_end_mean", np.nan), "tokenizer": TOKENIZER_NAME})
        stops += [{"grid": name, "label": c["label"], "metric": c["metric"], **s} for s in per_run]
        frame[c["metric"]] = c["values"]
    return rows, stops


# ------------------------------------------------------------------ outputs


SUMMARY_COLUMNS = ["criterion", "seconds_per_eval", "cost_share_of_cider", "significant_pairwise_accuracy",
                   "significant_accuracy_gain_vs_perplexity", "gain_90ci_low", "gain_90ci_high", "kendall_tau",
                   "regret_at_1_percent", "mean_regret_percent", "p_regret_over_1pct", "p_best_dropped",
                   "left_at_end_mean", "early_stop_cider_lost_mean"]


def summary_markdown(selection: pd.DataFrame, picks: dict, facts: dict) -> str:
    lines = ["# Model selection: every criterion against full CIDEr, per grid", "",
             f"Post-gen tokenizer: {TOKENIZER_NAME}. Seconds: median wall time per checkpoint evaluation on this "
             "machine (compilation excluded; other processes shared the CPU); cheap methods: their share of "
             "images x full CIDEr's seconds.", ""]
    for key, value in facts.items():
        lines.append(f"- {key}: {value}")
    lines += ["", f"Search on disjoint models: best by R^2 `{picks['R^2'][0]}`, best by model-level pairwise "
              f"accuracy `{picks['pairwise accuracy'][0]}`.", ""]
    cols = SUMMARY_COLUMNS
    for grid, part in selection.groupby("grid", sort=False):
        first = part.iloc[0]
        lines += [f"## {grid} ({first['vocabulary']}): {first['checkpoints']} checkpoints, {first['pairs']} pairs, "
                  f"{first['significant_pairs']} significant", "",
                  "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for _, row in part.iterrows():
            cells = [row["criterion"]] + [f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c])
                                          for c in cols[1:]]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", *moonshot_lines(part), ""]
    return "\n".join(lines)


def moonshot_lines(part: pd.DataFrame) -> list[str]:
    """The cheap moonshot: CIDEr's own pick (regret <= 1%) at <= 5% of its cost, per method at 5%."""
    lines = ["Moonshot (CIDEr's own pick, regret <= 1%, at <= 5% of its cost):"]
    for _, row in part[part["label"].str.contains(r"(?:at|on) 5%")].iterrows():
        met = row["regret_at_1_percent"] <= 1.0 and row["cost_share_of_cider"] <= 0.05 + 1e-9
        lines.append(f"- {row['label']}: seed 0 regret {row['regret_at_1_percent']:.2f}% at "
                     f"{row['cost_share_of_cider']:.1%} of the cost: {'met' if met else 'not met'}; over "
                     f"{row['races']:.0f} seeds P(regret > 1%) = {row['p_regret_over_1pct']:.2f}")
    return lines


# ------------------------------------------------------------------ the grids


def where_image2_grid(resamples: int, races: int, level: float) -> tuple[list, list, pd.DataFrame] | None:
    """The 12 where-image2 models (captions only): CIDEr, CIDEr on shares, racing (post-gen alone)."""
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        return None
    start = time.perf_counter()
    names, per_image = where_image2.per_image_cider(shared)
    seconds = (time.perf_counter() - start) / len(names)  # lookup + array CIDEr: scoring only
    frame = pd.DataFrame({"checkpoint": names, "run": names, "architecture": [n.split("_")[0] for n in names],
                          "epoch": 1, "CIDEr": per_image.mean(1)})
    checkpoints = checkpoints_of(frame, per_image, resamples)
    chosen = [{"label": "CIDEr", "criterion": "CIDEr, all 1,000 test images (reference)", "metric": "CIDEr",
               "sign": 1.0, "values": checkpoints.cider, "seconds": seconds}]
    chosen += cheap.cheap_criteria(per_image, seconds, None, races=races)
    if level != 0.95:
        chosen += cheap.race_criteria(per_image, seconds, None, races=races, confidence=level,
                                      suffix=f" (level {level:g})")
    rows, stops = evaluate_grid("where-image2", frame, chosen, checkpoints, resamples,
                                {"vocabulary": "captions only", "units": "none"})
    return rows, stops, frame


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="run folder (its cache/ makes a rerun resume)")
    parser.add_argument("--plan", choices=sorted(PLANS), default="full", help="grid sizes (middle: ~30 min)")
    parser.add_argument("--quick", action="store_true", help="the quick plan (a few minutes)")
    parser.add_argument("--no-flickr8k", action="store_true", help="skip the Flickr8k grid")
    parser.add_argument("--progress", action="store_true", help="progress bars")
    parser.add_argument("--only", nargs="+", metavar="GRID", default=None,
                        help="score only these grids (e.g. 'shapes transformer (BPE)'); the tables then hold only "
                             "them: for filling the cache from a second process")
    parser.add_argument("--t-bound", action="store_true",
                        help="race as before issue 41 (t_race.py: t bound, Bonferroni over rounds), as the tables of "
                             "the README's findings 1-9 were made")
    args = parser.parse_args(argv)
    if args.t_bound:
        import t_race
        cheap.RACE["race"] = t_race.race_table
    out = io.claim_out_folder(args.out)
    plan = QUICK if args.quick else PLANS[args.plan]
    cache = out / "cache"
    clock = Clock()
    shapes = corpora.shapes(*plan.shapes_images, dataset_size=plan.shapes_dataset,
                            encoder_epochs=plan.encoder_epochs, progress=args.progress)
    clock.phase(f"shapes loaded: {len(shapes.train)}/{len(shapes.val)}/{len(shapes.test)} images, "
                f"vocabulary {len(shapes.vocab)}")
    facts = {"plan": plan.name, "shapes": shapes.description}
    selections, stops, tables = [], [], {}
    with postgen.make_metrics(["CIDEr", "METEOR"] if plan.meteor else ["CIDEr"]) as metrics:
        if metrics.unavailable:
            raise SystemExit(f"needs CIDEr (and METEOR): {metrics.unavailable}")
        picks, ranked, held_out = search_picks(shapes, plan, cache / "shapes", metrics, args.progress)
        clock.phase(f"search on disjoint models: R^2 pick {picks['R^2'][0]}, "
                    f"pairwise pick {picks['pairwise accuracy'][0]}")
        level, calibration = cheap.calibrate_confidence(held_out, races=plan.races)
        facts["racing level"] = (f"confidence {level:g}: the lowest of 0.95/0.8/0.5 whose P(true best dropped) "
                                 f"<= 0.05 at every budget on the {len(held_out)} search models' test images "
                                 "(racing_calibration.tsv); rows 'racing ... (level L)' use it")
        small = dataclasses.replace(shapes, name="shapes-small", train=shapes.train.take(plan.overfit_images),
                                    vocab=Vocabulary.build(shapes.train.take(plan.overfit_images).captions, 5),
                                    description=f"shapes with {plan.overfit_images} training images")
        facts["shapes-small"] = (f"the same shapes splits, first {plan.overfit_images} training images, "
                                 f"dropout {plan.overfit_grid.dropout:g}, {plan.overfit_grid.epochs} epochs")
        grids = [("shapes", shapes, plan.shapes_grid)]
        if "transformer" in ARCHITECTURES:
            bpe = dataclasses.replace(shapes, name="shapes-bpe", vocab=run_bpe(
                shapes.train.captions, plan.bpe_size, cache / "shapes-bpe" / f"tokenizer-{plan.bpe_size}.json"))
            grids += [("shapes transformer (word)", shapes, plan.transformer_grid),
                      ("shapes transformer (BPE)", bpe, plan.transformer_grid)]
        else:
            facts["transformer"] = "skipped: no `transformer` architecture in this checkout"
        grids.append(("shapes-small", small, plan.overfit_grid))
        if not args.no_flickr8k:
            if io.shared_data("flickr8k", "Flickr8k.token.txt").is_file():
                flickr = corpora.flickr8k(*plan.flickr_images)
                facts["flickr8k"] = flickr.description + f", vocabulary {len(flickr.vocab)}"
                grids.append(("flickr8k", flickr, plan.flickr_grid))
            else:
                facts["flickr8k"] = "skipped: ../shared/data/flickr8k not found"
        grids = [g for g in grids if args.only is None or g[0] in args.only]
        for name, corpus, grid in grids:
            subset = np.sort(cheap.subset_images(len(corpus.val), 0.10, 0))
            frame = score_grid(corpus, grid, cache / corpus.name, metrics, subset, args.progress)
            clock.phase(f"{name}: {len(frame)} checkpoints scored")
            per_image = np.stack(frame["_per_image"].to_numpy())
            checkpoints = checkpoints_of(frame, per_image, plan.resamples)
            chosen = model_criteria(frame, checkpoints, picks, plan.meteor)
            prior = frame["perplexity"].to_numpy()
            chosen += cheap.cheap_criteria(per_image, chosen[0]["seconds"], prior, races=plan.races)
            if level != 0.95:
                chosen += cheap.race_criteria(per_image, chosen[0]["seconds"], prior, races=plan.races,
                                              confidence=level, suffix=f" (level {level:g})")
            rows, grid_stops = evaluate_grid(name, frame, chosen, checkpoints, plan.resamples,
                                             {"vocabulary": corpus.vocab.name, "units": "word"})
            selections += rows
            stops += grid_stops
            measured = frame["seconds_generate_subset"].median() + frame["seconds_cider_subset"].median()
            facts[f"{name} seconds"] = (
                f"full CIDEr {chosen[0]['seconds']:.3f} s per checkpoint (beam-3 decoding "
                f"{frame['seconds_generate'].median():.3f} + scoring {frame['seconds_cider'].median():.3f}); "
                f"CIDEr on 10% measured {measured:.3f} s ({measured / chosen[0]['seconds']:.2f} of full; the table "
                f"bills shares linearly); teacher-forced pass {frame['seconds_refprobs'].median():.3f} s")
            tables[name] = frame.drop(columns=["_pregen", "_per_image", "_log_ppl", "_space"])
            # the arrays the assisted races replay (assisted.py): per-image CIDEr and cheap features
            _save_arrays(cache / f"arrays_{_slug(name)}.npz", per_image=per_image, prior=prior,
                         log_ppl=np.stack(frame["_log_ppl"].to_numpy()), space=np.stack(frame["_space"].to_numpy()),
                         seconds_cider=chosen[0]["seconds"], seconds_pass=frame["seconds_refprobs"].median(),
                         seconds_sweep_images=frame["seconds_sweep_images"].median(),
                         # the range select races these images on (its CIDEr-D bound from the references)
                         score_high=score_range("CIDEr", *[scoring.references(corpus.val)] * 2)[1])
    found = where_image2_grid(plan.resamples, plan.races, level) if not args.only or "where-image2" in args.only else None
    if found is None:
        facts["where-image2"] = "skipped: ../shared/data/where-image2-captions not found"
    else:
        selections += found[0]
        stops += found[1]
        facts["where-image2"] = "12 Flickr8k models of Tanti et al. (2018), captions only: post-gen alone"
    clock.phase("cheap methods and tables")
    selection = pd.DataFrame(selections)
    facts["time"] = f"{clock.phases} (seconds since start, this run; cached work is reused)"
    shown = {name: [("validation perplexity", "perplexity"), ("2018 winner", scoring.WINNER_2018),
                    ("search pick (R^2)", picks["R^2"][0]), ("CIDEr on 10% of images", "CIDEr@10%")]
             for name in tables}
    with io.staged_folder(out, keep=("cache",)) as staging:
        io.write_tsv(selection, staging / "selection.tsv")
        io.write_tsv(pd.DataFrame(stops), staging / "early_stopping.tsv")
        io.write_tsv(ranked, staging / "search_ranking.tsv")
        io.write_tsv(pd.DataFrame(calibration), staging / "racing_calibration.tsv")
        for name, table in tables.items():
            io.write_tsv(table, staging / f"checkpoints_{name.replace(' ', '_').replace('(', '').replace(')', '')}.tsv")
        plots.criteria_vs_cider(tables, shown, staging / "criteria_vs_cider.png")
        plots.accuracy_bars(selection.rename(columns={"grid": "corpus"}), staging / "pairwise_accuracy.png")
        io.write_text(summary_markdown(selection, picks, facts), staging / "summary.md")
    clock.phase(f"wrote {out}")
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(selection[["grid", "label", "cost_share_of_cider", "significant_pairwise_accuracy", "kendall_tau",
                         "regret_at_1_percent", "p_regret_over_1pct", "p_best_dropped"]].to_string(
                             index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
