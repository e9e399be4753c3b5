"""Issue 29's study: racing assisted by one teacher-forced pass, screening, and a noise-aware target.

Reads what ``run.py`` saved per grid (``DIR/cache/arrays_<grid>.npz``: per-image whole-split CIDEr
f[M, I], validation perplexity f[M], per-image log-perplexity f[M, I] and tier space f[M, I, 84],
and the seconds of full CIDEr, of the pass and of the per-image sweep) and replays races on them:

- methods, at budgets of 2%, 5%, 10% and 25% of checkpoints x images: CIDEr on a random share,
  plain racing, racing assisted by per-image perplexity, by the pre-gen tier space, by both
  (``ranking.racing`` with ``features``: prediction-powered estimates, ``ppi.py`` here), screening
  by validation perplexity (the share kept chosen leave-one-grid-out) and screening with the
  assists; ``RACES`` reseeded races each;
- targets: P(regret > 1%) as before, and P(the pick is outside the full split's set of possibly
  best models): Hsu's multiple comparisons with the best at 95%, paired on all images, with a
  Bonferroni t constant in place of Dunnett's (a little wider, so a little easier to hit);
- per grid: the cross-fitted R^2 of the predictor for single models and for pairs (the 15 pairs of
  the 6 best), the variance ratio achieved in the races, the share screened out, and the coverage
  of nominal 90% intervals of whole-split pairwise differences over ``DRAWS`` draws of n images.

Cost: images decoded and scored over full CIDEr's, plus, for an assisted race, the pass (and the
per-image sweep for the tier space) of every raced checkpoint, in seconds over full CIDEr's
seconds. ``cost_without_pass`` is for checkpoints whose pass over the split training already made.

    python3 experiments/model_selection/assisted.py --run runs/model_selection [--races 500]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import cheap_features
import numpy as np
import pandas as pd
import ppi
from scipy import stats
from t_race import race_table  # the race of issue 29: the t bound, assisted or not

from pregen_jax import io, tiers
from pregen_jax.ranking.racing import RaceSettings, screen_size

BUDGETS = (0.02, 0.05, 0.10, 0.25)
RACES = 500
DRAWS = 1000
ASSISTS = ("perplexity", "pregen", "both")
SHARES = (0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0)
SPACE_NAMES = [n for n in tiers.DEFAULT_SPACE.names if n.startswith("mean_")]
GRID_NAMES = {"shapes": "shapes", "shapes_transformer_word": "shapes transformer (word)",
              "shapes_transformer_BPE": "shapes transformer (BPE)", "shapes-small": "shapes-small",
              "flickr8k": "flickr8k"}


def load_grids(folder: Path) -> dict[str, dict]:
    """Every grid's arrays under ``folder/cache`` (``arrays_<slug>.npz``), by grid name."""
    out = {}
    for slug, name in GRID_NAMES.items():
        path = folder / "cache" / f"arrays_{slug}.npz"
        if path.is_file():
            with np.load(path) as data:
                out[name] = {k: data[k] for k in data.files}
    return out


def features_of(arrays: dict, assist: str) -> np.ndarray | None:
    """f[M, I, C] for one assist (``cheap_features.assist_features``)."""
    return cheap_features.assist_features(assist, arrays["log_ppl"], arrays["space"], SPACE_NAMES)


def possibly_best(per_image: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Hsu's MCB on paired per-image scores f[M, I]: bool[M], True where model i is not shown worse
    than every other: for all j != i, mean_i - mean_j + q se(d_ij) >= 0, q the one-sided t
    quantile at alpha / (M - 1) (Bonferroni for Dunnett's constant)."""
    m, n = per_image.shape
    means = per_image.mean(1)
    q = stats.t.ppf(1 - alpha / max(m - 1, 1), n - 1)
    out = np.ones(m, bool)
    for i in range(m):
        d = per_image[i] - per_image
        se = d.std(1, ddof=1) / math.sqrt(n)
        bound = means[i] - means + q * se
        bound[i] = 0.0
        out[i] = bool((bound >= -1e-12).all())
    return out


def screen_share(grids: dict, held_out: str, max_lost: float = 0.05, extra=()) -> float:
    """The smallest share of checkpoints a perplexity screen keeps such that the full-CIDEr best
    is screened out on at most ``max_lost`` of the *other* grids (leave-one-grid-out) and the
    ``extra`` sets of models (the held-out search models)."""
    others = [grids[g] for g in grids if g != held_out] + list(extra)
    for share in SHARES:
        lost = [_best_screened(arrays, share) for arrays in others]
        if not others or np.mean(lost) <= max_lost:
            return share
    return 1.0


def search_models(folder: Path) -> dict | None:
    """The 12 held-out search models (other seeds): per-image CIDEr on the shapes test split and
    the validation perplexity their training logged (``cache/shapes/search``), or None."""
    from pregen_jax.selection import logged_perplexity
    base = folder / "cache" / "shapes"
    per_image, prior = [], []
    for path in sorted((base / "search").glob("*.npz")):
        run, epoch = path.stem.rsplit("-e", 1)
        snapshot = base / "train" / run / f"snapshot-epoch{epoch}.msgpack"
        if not snapshot.is_file():
            return None
        with np.load(path) as data:
            per_image.append(data["per_image"])
        prior.append(logged_perplexity(snapshot))
    return {"per_image": np.stack(per_image), "prior": np.array(prior)} if per_image else None


def _best_screened(arrays: dict, share: float) -> bool:
    prior = arrays["prior"]
    keep = screen_size(len(prior), share)
    kept = np.argsort(np.where(np.isnan(prior), np.inf, prior), kind="stable")[:keep]
    return int(np.argmax(arrays["per_image"].mean(1))) not in kept


def method_rows(name: str, arrays: dict, share: float, budgets=BUDGETS, races: int = RACES) -> list[dict]:
    """Every method at every budget on one grid: one row each, over ``races`` reseeded runs."""
    per_image, prior = arrays["per_image"], arrays["prior"]
    m, n = per_image.shape
    cider = per_image.mean(1)
    best, mcb = int(np.argmax(cider)), possibly_best(per_image)
    full = float(arrays["seconds_cider"])
    pass_seconds = {"perplexity": float(arrays["seconds_pass"]),
                    "pregen": float(arrays["seconds_pass"] + arrays["seconds_sweep_images"]),
                    "both": float(arrays["seconds_pass"] + arrays["seconds_sweep_images"])}
    feats = {a: features_of(arrays, a) for a in ASSISTS}
    keep = screen_size(m, share)
    methods = [("racing", None, None), *[(f"racing + {a}", a, None) for a in ASSISTS],
               ("racing + screen", None, keep), *[(f"racing + {a} + screen", a, keep) for a in ASSISTS]]
    rows = []
    for budget in budgets:
        picks = [int(np.argmax(per_image[:, np.random.default_rng(s).choice(n, max(2, round(budget * n)), False)]
                               .mean(1))) for s in range(races)]
        rows.append(_row(name, f"CIDEr on {budget:.0%}", budget, picks, cider, mcb, best,
                         [max(2, round(budget * n)) / n] * races, 0.0, full, [False] * races))
        for label, assist, screen in methods:
            start = time.perf_counter()
            picks, costs, dropped, ratios = [], [], [], []
            for seed in range(races):
                result = race_table(per_image, RaceSettings(budget=budget, seed=seed), prior,
                                    features=feats[assist] if assist else None, screen=screen)
                picks.append(result.picked)
                costs.append(result.cost)
                dropped.append(result.table["status"].iloc[best] in ("screened out",)
                               or result.table["status"].iloc[best].startswith("dropped"))
                ratios.append(result.assist.get("variance_ratio_pairs", math.nan))
            raced = (screen or m) / m
            extra = pass_seconds[assist] * raced / full if assist else 0.0
            row = _row(name, f"{label} at {budget:.0%}", budget, picks, cider, mcb, best, costs, extra, full, dropped)
            row.update({"variance_ratio_pairs": float(np.nanmedian(ratios)) if assist else math.nan,
                        "screened_share": 1 - raced, "replay_seconds": time.perf_counter() - start})
            rows.append(row)
    return rows


def _row(grid, label, budget, picks, cider, mcb, best, costs, extra, full, dropped) -> dict:
    picks = np.asarray(picks)
    regrets = 100 * (cider.max() - cider[picks]) / cider.max()
    image_share = float(np.mean(costs))
    return {"grid": grid, "label": label, "budget": budget, "races": len(picks),
            "cost_share_of_cider": image_share + extra, "cost_without_pass": image_share,
            "seconds_per_eval": (image_share + extra) * full, "mean_regret": float(regrets.mean()),
            "p_regret_over_1pct": float((regrets > 1).mean()), "p_outside_mcb": float((~mcb[picks]).mean()),
            "p_best_dropped": float(np.mean(dropped)), "mcb_set_size": int(mcb.sum()),
            "p_picked_best": float((picks == best).mean())}


def r2_rows(name: str, arrays: dict) -> list[dict]:
    """Cross-fitted R^2 (2 folds by image, all images) of each assist's predictor: single models,
    and the pairs of the six best models (differences as features)."""
    per_image = arrays["per_image"]
    top = np.argsort(-per_image.mean(1))[:6]
    pairs = [(int(a), int(b)) for k, a in enumerate(top) for b in top[k + 1:]]
    rows = []
    for assist in ASSISTS:
        x = features_of(arrays, assist)
        single = ppi.crossfit_r2(ppi.crossfit_predictions(x, per_image), per_image)
        a, b = (np.array([p[k] for p in pairs]) for k in (0, 1))
        y = per_image[a] - per_image[b]
        pair = ppi.crossfit_r2(ppi.crossfit_predictions(x[a] - x[b], y), y)
        rows.append({"grid": name, "assist": assist, "r2_single": single, "r2_pairs_top6": pair})
    return rows


def coverage_rows(name: str, arrays: dict, budgets=BUDGETS, draws: int = DRAWS, level: float = 0.9) -> list[dict]:
    """Coverage of nominal ``level`` intervals of whole-split pairwise differences: each draw takes
    n = budget x I images without replacement, a random reference model b, estimates every
    (c, b) with the assist's pooled cross-fitted predictor, and checks one random c's interval."""
    per_image = arrays["per_image"]
    m, i = per_image.shape
    truth = per_image.mean(1)
    rows = []
    for budget in budgets:
        n = max(2, round(budget * i))
        for assist in ("none", *ASSISTS):
            x = features_of(arrays, assist) if assist != "none" else np.zeros((m, i, 1))
            rng = np.random.default_rng(29)
            covered, widths, plain = 0, [], []
            for d in range(draws):
                images = rng.choice(i, n, replace=False)
                b = int(rng.integers(m))
                others = [c for c in range(m) if c != b]
                masked = np.full(per_image.shape, np.nan)
                masked[:, images] = per_image[:, images]
                found, _ = ppi.pair_estimates(masked, x, [(c, b) for c in others], 1 - level, seed=d)
                k = int(rng.integers(len(others)))
                est = found[k]
                covered += est.low <= truth[others[k]] - truth[b] <= est.high
                widths.append(est.high - est.low)
                plain.append(2 * stats.t.ppf(1 - (1 - level) / 2, n - 1) * est.plain_se)
            low, high = stats.binomtest(covered, draws).proportion_ci(0.95, method="exact")
            rows.append({"grid": name, "budget": budget, "images": n, "assist": assist, "draws": draws,
                         "coverage": covered / draws, "cp_low": low, "cp_high": high,
                         "width_over_plain": float(np.mean(widths) / np.mean(plain)), "gated": n >= 30})
    gated = [r for r in rows if r["gated"]]
    for r in gated:  # Bonferroni over the gated cells
        r["cp_low_bonferroni"], r["cp_high_bonferroni"] = stats.binomtest(
            round(r["coverage"] * r["draws"]), r["draws"]).proportion_ci(1 - 0.05 / len(gated), method="exact")
        r["passes"] = r["cp_low_bonferroni"] <= level <= r["cp_high_bonferroni"]
    return rows


def method_of(label: pd.Series) -> pd.Series:
    """A row's method without its budget ("racing + pregen at 5%" -> "racing + pregen";
    "CIDEr on 5%" -> "CIDEr on a random share")."""
    return label.str.replace(r" at \d+%$", "", regex=True).str.replace(r"^CIDEr on \d+%$", "CIDEr on a random share",
                                                                        regex=True)


def needs(table: pd.DataFrame, column: str, at_most: float = 0.05) -> pd.DataFrame:
    """Per grid and method: the cheapest budget whose ``column`` is at most ``at_most`` (its cost),
    or none."""
    method = method_of(table["label"])
    out = []
    for (grid, label), part in table.assign(method=method).groupby(["grid", "method"], sort=False):
        fine = part[part[column] <= at_most].sort_values("cost_share_of_cider")
        out.append({"grid": grid, "method": label, f"needs ({column} <= {at_most})":
                    f"{fine.iloc[0]['cost_share_of_cider']:.3f}" if len(fine) else "none at budgets <= 25%"})
    return pd.DataFrame(out)


def plot(table: pd.DataFrame, path: Path) -> None:
    """Error rate (P outside the MCB set) against cost, one panel per grid, one line per method."""
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    grids = list(dict.fromkeys(table["grid"]))
    fig, axes = plt.subplots(1, len(grids), figsize=(4.2 * len(grids), 3.8), squeeze=False)
    method = method_of(table["label"])
    for ax, grid in zip(axes[0], grids):
        part = table[table["grid"] == grid].assign(method=method)
        for label, rows in part.groupby("method", sort=False):
            ax.plot(rows["cost_share_of_cider"], rows["p_outside_mcb"], marker="o", ms=3, label=label)
        ax.axvline(0.05, color="grey", lw=0.8, ls="--")
        ax.axhline(0.05, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(grid, fontsize=9)
        ax.set_xlabel("cost (share of full CIDEr, pass included)")
    axes[0][0].set_ylabel("P(pick outside the MCB set)")
    axes[0][-1].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


KINDS = ("assisted", "assisted_r2", "assisted_coverage", "assisted_screen")


def merge(folder: Path) -> int:
    """One set of tables, the needs table and the figure from the per-grid runs' files."""
    tables = {}
    for kind in KINDS:
        parts = [pd.read_csv(p, sep="\t") for p in sorted((folder / "parts").glob(f"{kind}_*.tsv"))
                 if not any(p.name.startswith(f"{other}_") for other in KINDS if other != kind and len(other) > len(kind))]
        tables[kind] = pd.concat(parts, ignore_index=True)
        io.write_tsv(tables[kind], folder / f"{kind}.tsv")
    table = tables["assisted"]
    # a race that scored the whole split knows the means exactly: no variance to compare (an earlier
    # version wrote inf there)
    table["variance_ratio_pairs"] = table["variance_ratio_pairs"].replace([np.inf], np.nan)
    order = [g for g in GRID_NAMES.values() if g in set(table["grid"])]
    table = table.set_index("grid").loc[order].reset_index()
    need = needs(table, "p_outside_mcb").merge(needs(table, "p_regret_over_1pct"), on=["grid", "method"])
    io.write_tsv(need, folder / "assisted_needs.tsv")
    plot(table, folder / "error_vs_cost.png")
    append_to_selection(table, folder / "selection.tsv")
    io.write_text(summary_markdown(table, need, tables), folder / "assisted_summary.md")
    print(need.to_string(index=False))
    return 0


def summary_markdown(table: pd.DataFrame, need: pd.DataFrame, tables: dict) -> str:
    """The README's tables: per grid, each method at 5% and the cost it needs; the predictor's
    R^2, the variance ratio, the screen and the coverage."""
    lines = []
    method = method_of(table["label"])
    sizes = tables["assisted_screen"].set_index("grid")
    for grid in dict.fromkeys(table["grid"]):
        part = table[(table["grid"] == grid) & (table["budget"] == 0.05)].assign(method=method)
        needed = need[need["grid"] == grid].drop(columns="grid").set_index("method")
        m, i = int(sizes.loc[grid, "checkpoints"]), int(sizes.loc[grid, "images"])
        lines += [f"#### {grid} ({m} checkpoints x {i} images; full CIDEr: {m * i} images, "
                  f"{m * sizes.loc[grid, 'seconds_full_cider']:.2f} s)", "",
                  "| method | cost at 5% (pass incl.) | without pass | images, seconds at 5% | P(outside MCB) at 5% "
                  "| P(regret > 1%) at 5% | mean regret at 5% | variance ratio (pairs) "
                  "| cost needed: P(outside MCB) <= 0.05 | cost needed: P(regret > 1%) <= 0.05 |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in part.itertuples():
            ratio = "" if pd.isna(r.variance_ratio_pairs) else f"{r.variance_ratio_pairs:.3f}"
            lines.append(f"| {r.method} | {r.cost_share_of_cider:.3f} | {r.cost_without_pass:.3f} | "
                         f"{r.cost_without_pass * m * i:.0f}, {r.seconds_per_eval * m:.2f} s | "
                         f"{r.p_outside_mcb:.3f} | {r.p_regret_over_1pct:.3f} | {r.mean_regret:.1f}% | {ratio} | "
                         f"{needed.loc[r.method].iloc[0]} | {needed.loc[r.method].iloc[1]} |")
        lines.append("")
    lines += ["#### Per grid: the predictor, the screen, the passes", "",
              "| grid | R^2 single (perplexity / pregen / both) | R^2 pairs of the 6 best (perplexity / pregen / both) "
              "| MCB set (of M) | screen keeps | full CIDEr s/ckpt | pass s/ckpt | per-image sweep s/ckpt |",
              "|---|---|---|---|---|---|---|---|"]
    r2 = tables["assisted_r2"].set_index(["grid", "assist"])
    screen = tables["assisted_screen"].set_index("grid")
    for grid in dict.fromkeys(table["grid"]):
        single = " / ".join(f"{r2.loc[(grid, a), 'r2_single']:.3f}" for a in ASSISTS)
        pairs = " / ".join(f"{r2.loc[(grid, a), 'r2_pairs_top6']:.3f}" for a in ASSISTS)
        g = screen.loc[grid]
        mcb = int(table[table["grid"] == grid]["mcb_set_size"].iloc[0])
        lines.append(f"| {grid} | {single} | {pairs} | {mcb} of {int(g['checkpoints'])} | "
                     f"{g['screen_keep_share']:.2f} (best screened out here: {bool(g['best_screened_out_here'])}) | "
                     f"{g['seconds_full_cider']:.3f} | {g['seconds_pass']:.3f} | {g['seconds_sweep_images']:.3f} |")
    coverage = tables["assisted_coverage"]
    lines += ["", "#### Coverage of nominal 90% intervals for whole-split pairwise differences (1,000 draws)", "",
              "| grid | images | none | perplexity | pregen | both | width / plain (pregen) | gated cells passing |",
              "|---|---|---|---|---|---|---|---|"]
    for (grid, n), part in coverage.groupby(["grid", "images"], sort=False):
        by = part.set_index("assist")
        passing = (f"{int(part['passes'].fillna(False).astype(bool).sum())} of {len(part)}"
                   if part["gated"].astype(bool).all() else "not gated (< 30 images)")
        lines.append(f"| {grid} | {n} | " + " | ".join(f"{by.loc[a, 'coverage']:.3f}" for a in ("none", *ASSISTS))
                     + f" | {by.loc['pregen', 'width_over_plain']:.3f} | {passing} |")
    return "\n".join(lines) + "\n"


def append_to_selection(table: pd.DataFrame, path: Path) -> None:
    """The methods' rows into run.py's ``selection.tsv``, beside its criteria (``study`` =
    "issue 29"; rows of an earlier merge are replaced)."""
    if not path.is_file():
        return
    selection = pd.read_csv(path, sep="\t")
    if "study" in selection:
        selection = selection[selection["study"] != "issue 29"]
    rows = table.rename(columns={"mean_regret": "mean_regret_percent"}).assign(
        study="issue 29", criterion=lambda t: t["label"] + f" ({RACES} races; cost includes the pass)",
        label=lambda t: t["label"] + " [500 races]")
    io.write_tsv(pd.concat([selection.assign(study=selection.get("study", "run.py")), rows], ignore_index=True),
                 path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="run.py's output folder (its cache/arrays_*.npz)")
    parser.add_argument("--races", type=int, default=RACES)
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--only", nargs="+", default=None, help="only these grids")
    parser.add_argument("--merge", action="store_true",
                        help="join the tables of earlier runs (DIR/parts/) into one set, the figure and selection.tsv")
    args = parser.parse_args(argv)
    folder = Path(args.run)
    if args.merge:
        return merge(folder)
    grids = load_grids(folder)
    if not grids:
        raise SystemExit(f"{folder}/cache has no arrays_*.npz: run run.py first")
    methods, r2, coverage, shares = [], [], [], []
    search = search_models(folder)
    held_out = [search] if search is not None else []
    for name, arrays in grids.items():
        if args.only and name not in args.only:
            continue
        start = time.perf_counter()
        share = screen_share(grids, name, extra=held_out)
        shares.append({"grid": name, "screen_keep_share": share, "best_screened_out_here": _best_screened(arrays, share),
                       "search_models_in_rule": len(held_out),
                       "search_best_prior_rank": (int(np.argsort(np.argsort(search["prior"]))[
                           int(np.argmax(search["per_image"].mean(1)))]) + 1) if search else None,
                       "checkpoints": arrays["per_image"].shape[0], "images": arrays["per_image"].shape[1],
                       "seconds_full_cider": float(arrays["seconds_cider"]),
                       "seconds_pass": float(arrays["seconds_pass"]),
                       "seconds_sweep_images": float(arrays["seconds_sweep_images"])})
        r2 += r2_rows(name, arrays)
        methods += method_rows(name, arrays, share, races=args.races)
        coverage += coverage_rows(name, arrays, draws=args.draws)
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(methods)
    # each run's tables go to parts/ (several --only runs can share the work); --merge joins them
    suffix = "_" + ("_".join(g.replace(" ", "-") for g in args.only) if args.only else "all")
    parts = folder / "parts"
    io.write_tsv(table, parts / f"assisted{suffix}.tsv")
    io.write_tsv(pd.DataFrame(r2), parts / f"assisted_r2{suffix}.tsv")
    io.write_tsv(pd.DataFrame(coverage), parts / f"assisted_coverage{suffix}.tsv")
    io.write_tsv(pd.DataFrame(shares), parts / f"assisted_screen{suffix}.tsv")
    need = needs(table, "p_outside_mcb").merge(needs(table, "p_regret_over_1pct"), on=["grid", "method"])
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_rows", 500):
        print(table.drop(columns=["replay_seconds"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(pd.DataFrame(r2).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(pd.DataFrame(coverage).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(need.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
