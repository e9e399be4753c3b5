"""The own-image check's quality-adjusted null (pregen_jax/datasets/caption_fit.py, ``null_share``):
how the bottom-half share of real files (nothing misplaced) moves with how generic their captions
are, fitted on some model families and judged on the others (leave one family out), and what the
adjusted check catches on strong and weak models.

    python experiments/caption_check/null_model.py --demo RUN [--quick QUICK_RUN] [--draws 5] [--out DIR]

Null files: each real file whole and ``--draws`` random image subsets of 50, 100, 200 and 500 images
(where-image2's 12 models and a held-out human caption on Flickr8k; a demo run's finals and
first-epoch snapshots, GRUs and transformers, and its held-out references; a quick demo's too).
Families: where-image2, Flickr8k human, the demo's init, pre, par, merge and transformer models
(finals with their snapshots), the demo's human references, the quick demo's models, its human
references.
"""
from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from run import MODELS, corrupt, demo_files, flickr8k

from pregen_jax import io
from pregen_jax.datasets.caption_fit import CHANCE, fit_blocks, flag_threshold, rank_profile, share_of

SIZES = (50, 100, 200, 500)


def family(dataset: str, name: str) -> str:
    """The model family a null file is held out with."""
    if dataset == "flickr8k":
        return "flickr8k human" if name.startswith("held-out") else "where-image2"
    if name.startswith("held-out"):
        return f"{dataset} human"
    return dataset if dataset == "quick demo" else f"demo {name.split('-')[0]}"


def held_out_references(images: list, references: dict, files: dict) -> tuple[dict, dict]:
    """The files with one human "model" per reference k (image k's reference held out from the other
    four) in place of ``human_1`` (one of them)."""
    references = {name: refs for name, refs in references.items() if not name.startswith("human")}
    files = {name: captions for name, captions in files.items() if not name.startswith("human")}
    for k in range(5):
        name = f"held-out reference {k}"
        files[name] = [" ".join(refs[k]) if not isinstance(refs[k], str) else refs[k] for refs in images]
        references[name] = [refs[:k] + refs[k + 1:] for refs in images]
    return references, files


def profiles(references: list, captions: list, kept: np.ndarray) -> dict:
    profile = rank_profile([references[i] for i in kept], [captions[i] for i in kept])
    return {"images": len(kept), "share": share_of(profile.ranks), "genericity": profile.genericity}


def null_rows(sets: dict[str, tuple[dict, dict]], draws: int) -> list[dict]:
    rows = []
    for dataset, (references, files) in sets.items():
        for name, captions in files.items():
            n = len(captions)
            rng = np.random.default_rng(zlib.crc32(f"null {dataset} {name}".encode()))
            subsets = [np.arange(n)] + [np.sort(rng.choice(n, size, replace=False))
                                        for size in SIZES if size < n for _ in range(draws)]
            for kept in subsets:
                rows.append({"dataset": dataset, "family": family(dataset, name), "file": name,
                             **profiles(references[name], captions, kept)})
    return rows


def wrong_rows(sets: dict[str, tuple[dict, dict]], kinds: tuple[str, ...], draws: int) -> list[dict]:
    rows = []
    for dataset, (references, files) in sets.items():
        for name, captions in files.items():
            if name.startswith("held-out") or name.startswith("human"):
                continue
            for kind in kinds:
                rng = np.random.default_rng(zlib.crc32(f"{dataset} {name} {kind}".encode()))
                true = int(kind.removeprefix("wrong")) / 100 if kind.startswith("wrong") else 1.0
                for draw in range(1 if kind.startswith("shift") else draws):
                    moved = corrupt(kind, captions, rng, {})
                    rows.append({"dataset": dataset, "family": family(dataset, name), "file": name, "kind": kind,
                                 "draw": draw, "true_share": true,
                                 **profiles(references[name], moved, np.arange(len(moved)))})
    return rows


GRID = np.round(np.arange(0.20, 1.0001, 0.02), 3)  # the curve's knots (genericity)
REACH = 0.04  # a family's curve holds this far beyond its files' genericity
MIN_TAU = 0.003
Z_FAMILY = 2.33  # families compared at their 1% upper share (of a model's q0)


def _isotonic(g: np.ndarray, share: np.ndarray, images: np.ndarray):
    from sklearn.isotonic import IsotonicRegression
    return IsotonicRegression(increasing=True, out_of_bounds="clip").fit(g, share, sample_weight=images)


def family_curve(files: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(q0, tau) of one family at GRID (NaN beyond its files' genericity +- REACH): q0 the isotonic
    (non-decreasing) fit of its whole files' bottom-half shares on their genericity, weighted by
    images; tau at a knot the root mean square of the leave-one-file-out residuals (each file's
    share against the fit without it) of the files within REACH of it, at least MIN_TAU: where
    files of the same genericity differ (a snapshot far above the finals beside it) it is wide."""
    g, share, images = (files[c].to_numpy() for c in ("genericity", "share", "images"))
    q0 = _isotonic(g, share, images).predict(GRID)
    loo = np.full(len(g), np.nan)
    for i in range(len(g) if len(g) > 2 else 0):
        kept = np.arange(len(g)) != i
        loo[i] = share[i] - _isotonic(g[kept], share[kept], images[kept]).predict([g[i]])[0]
    tau = np.array([np.sqrt(np.nanmean(loo[np.abs(g - knot) <= REACH] ** 2)) if np.any(np.abs(g - knot) <= REACH)
                    else np.nan for knot in GRID])
    inside = (GRID >= g.min() - REACH) & (GRID <= g.max() + REACH)
    tau = pd.Series(np.where(inside, tau, np.nan)).interpolate(limit_area="inside").to_numpy()
    return np.where(inside, q0, np.nan), np.where(inside, np.maximum(np.nan_to_num(tau, nan=MIN_TAU), MIN_TAU), np.nan)


def fit_curve(whole: pd.DataFrame) -> list[tuple[float, float, float]]:
    """(genericity, q0, tau) knots from real whole files (nothing misplaced): at each knot the (q0,
    tau) of the family there whose q0 + Z_FAMILY tau is highest (``family_curve``), q0 made
    non-decreasing, with the anchor (1, 0.5) (captions that all fit the same images: the share is
    the same whatever the pairing). A family's files are the runs of one
    architecture (finals and snapshots), one dataset's held-out references or where-image2's."""
    curves = [family_curve(files) for _, files in whole.groupby("family")]
    q0s, taus = np.array([c[0] for c in curves]), np.array([c[1] for c in curves])    # f64[families, knots]
    upper = np.where(np.isnan(q0s), -np.inf, q0s + Z_FAMILY * np.nan_to_num(taus))
    top = upper.argmax(axis=0)                                # the family with the highest upper share
    covered = np.isfinite(upper.max(axis=0))
    q0 = np.where(covered, q0s[top, np.arange(len(GRID))], np.nan)
    tau = np.where(covered, taus[top, np.arange(len(GRID))], np.nan)
    q0[-1], tau[-1] = CHANCE, np.nanmax(tau)  # GRID ends at 1: one caption for every image
    q0 = pd.Series(q0).interpolate(limit_direction="both").cummax().to_numpy()
    tau = pd.Series(tau).interpolate(limit_direction="both").to_numpy()
    return [(float(k), round(float(q), 4), round(float(t), 4)) for k, q, t in zip(GRID, q0, tau)]


def judge(frame: pd.DataFrame, curve: list[tuple[float, float, float]]) -> pd.Series:
    """Whether each file (its images, share, genericity) is flagged under ``curve`` (blind files never)."""
    g, q, t = np.array(curve).T
    q0, tau = np.interp(frame["genericity"], g, q), np.interp(frame["genericity"], g, t)
    threshold = np.array([flag_threshold(int(n), a, b) for n, a, b in zip(frame["images"], q0, tau)])
    return pd.Series((frame["share"].to_numpy() > threshold) & (threshold < CHANCE), index=frame.index)


def estimate(frame: pd.DataFrame, curve) -> np.ndarray:
    g, q, _ = np.array(curve).T
    q0 = np.interp(frame["genericity"], g, q)
    return (frame["share"].to_numpy() - q0) / np.maximum(CHANCE - q0, 0.01)


def whole_files(null: pd.DataFrame) -> pd.DataFrame:
    return null[null["images"] == null.groupby(["dataset", "file"])["images"].transform("max")]


def report(out: Path) -> None:
    """The curve fitted on every family, false alarms on each family held out in turn, power."""
    null = pd.read_csv(out / "null_profiles.tsv", sep="\t")
    strong = pd.read_csv(out / "wrong_profiles.tsv", sep="\t")
    weak = pd.read_csv(out / "wrong_weak_profiles.tsv", sep="\t")
    curve = fit_curve(whole_files(null))
    print("_NULL_Q0 = (" + ", ".join(f"{q:.4f}" for _, q, _ in curve) + ")")
    print("_NULL_TAU = (" + ", ".join(f"{t:.4f}" for _, _, t in curve) + ")")
    null = null.assign(model=null["dataset"] + " " + null["file"].str.replace("-e1", "", regex=False))
    rows = []
    for held in sorted(null["family"].unique()):  # each family held out in turn; each model held out in turn
        test = null[null["family"] == held]
        by_model = pd.concat([judge(test[test["model"] == model], fit_curve(whole_files(null[null["model"] != model])))
                              for model in test["model"].unique()])
        rows.append({"family": held, "files": len(test), "flagged (model held out)": int(by_model.sum()),
                     "flagged (family held out)": int(judge(test, fit_curve(whole_files(null[null["family"] != held]))).sum()),
                     "flagged (all-family fit)": int(judge(test, curve).sum()),
                     "flagged files (model held out)": ", ".join(sorted(set(test.loc[by_model[by_model].index, "file"])))})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    for column in ("flagged (model held out)", "flagged (family held out)", "flagged (all-family fit)"):
        print(f"false alarms, {column}: {table[column].sum()} of {table['files'].sum()} "
              f"({table[column].sum() / table['files'].sum():.2%})")
    for name, frame in (("where-image2", strong), ("weak (demo, quick demo)", weak)):
        frame = frame.assign(flagged=judge(frame, curve), estimate=estimate(frame, curve))
        frame["within"] = (frame["estimate"] - frame["true_share"]).abs() <= 0.05
        print(name)
        print(frame.groupby(["family", "kind"] if "weak" in name else ["kind"]).agg(
            draws=("share", "size"), flagged=("flagged", "mean"),
            share=("share", "mean"), estimate=("estimate", "mean"), sd=("estimate", "std"),
            within_005=("within", "mean")).round(3).to_string())


def tie_variants(references: list, captions: list) -> dict:
    """Is it ties? One file's bottom-half share three ways: as the check counts (a tie with the own
    image half), ties counted as not bottom half (only images fitting strictly better count), and
    with the images that got the very same caption left out of each image's decoys."""
    fits = np.concatenate([block for _, block in fit_blocks(references, captions)])  # f64[n, n]
    n = len(captions)
    own = fits[np.arange(n), np.arange(n)][:, None]
    _, group = np.unique([c.strip().lower() for c in captions], return_inverse=True)
    decoy = group[:, None] != group[None, :]                                   # other captions' images only
    less, tied = ((fits < own) & decoy).sum(axis=1), ((fits == own) & decoy).sum(axis=1)
    kept = np.maximum(decoy.sum(axis=1), 1)
    mid = np.where(decoy.sum(axis=1) > 0, (less + tied / 2) / kept, 0.5)
    return {"share": share_of(((fits < own).sum(axis=1) + ((fits == own).sum(axis=1) - 1) / 2) / (n - 1)),
            "ties not bottom": float(np.mean((fits > own).sum(axis=1) / (n - 1) > 0.5)),
            "same caption not a decoy": share_of(mid), "distinct": len(set(group))}


def ties_report(sets: dict[str, tuple[dict, dict]]) -> None:
    rows = [{"dataset": dataset, "file": name, **tie_variants(references[name], captions)}
            for dataset, (references, files) in sets.items() for name, captions in files.items()
            if dataset != "flickr8k" and not name.startswith("held-out")]
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", default=None, help="a demo's run folder (finished or running)")
    parser.add_argument("--quick", default=None, help="a quick demo's run folder")
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--wrong-draws", type=int, default=20)
    parser.add_argument("--out", required=True)
    parser.add_argument("--report-only", action="store_true", help="read the profiles in --out, fit and report")
    parser.add_argument("--ties", action="store_true", help="the demos' models' shares with ties and repeats counted otherwise")
    args = parser.parse_args(argv)
    if args.report_only:
        report(Path(args.out))
        return 0
    shared = io.shared_data()
    references, files, _ = flickr8k(shared)
    sets = {"flickr8k": held_out_references(references["init_1"], references, files)}
    demo_refs, demo_captions, _ = demo_files(Path(args.demo))
    sets["demo"] = (demo_refs, demo_captions)
    if args.quick:
        quick_refs, quick_captions, _ = demo_files(Path(args.quick))
        sets["quick demo"] = (quick_refs, quick_captions)
    if args.ties:
        ties_report({k: v for k, v in sets.items() if k != "flickr8k"})
        return 0
    out = Path(args.out)
    io.write_tsv(pd.DataFrame(null_rows(sets, args.draws)), out / "null_profiles.tsv")
    strong = {"flickr8k": (references, {n: c for n, c in files.items() if n in MODELS})}
    io.write_tsv(pd.DataFrame(wrong_rows(strong, ("shift+1", "shift-1", "wrong5", "wrong10"), args.wrong_draws)),
                 out / "wrong_profiles.tsv")
    weak = {k: v for k, v in sets.items() if k != "flickr8k"}
    io.write_tsv(pd.DataFrame(wrong_rows(weak, ("shift+1", "wrong5", "wrong10"), max(1, args.wrong_draws // 4))),
                 out / "wrong_weak_profiles.tsv")
    report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
