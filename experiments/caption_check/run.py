"""The own-image check (pregen_jax/datasets/caption_fit.py) on Flickr8k, whose files none of its
constants was fitted on (it ships none: its null is read from the data at hand when it runs):
false alarms and abstentions per file, what it catches, its cost.

    nice python experiments/caption_check/run.py [--draws 200] [--moved-draws 20] [--out DIR]
    nice python experiments/caption_check/run.py --part alone --draws 200 --cache CACHE --out DIR
    nice python experiments/caption_check/run.py --separation
    nice python experiments/caption_check/run.py --cost-only [--baseline /work/main]

Files: where-image2's 12 models (Tanti et al. 2018) on the 1,000 Flickr8k test images, against the
five references; Flickr8k's 5 human-caption files (Flickr8k.token.txt: caption k of each test image
as a "model", the other four its references). Each file is judged two ways, as the check runs:
**peers** (``evaluate`` of the 12 models together: each calibrated by the 11 others; a human file
together with the 12 models against its four references) and **alone** (one file: the references
calibration). Subsets: ``--draws`` random 500-image subsets (the same images for every file of a
draw). Wrong files, from each model's whole file: 5% or 10% of its captions moved among its images,
shifted by one image, MUTT's sentences (another dataset's captions), Flickr8k's captions of other
(training) images; ``--moved-draws`` draws of each random kind.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from pregen_jax import io
from pregen_jax.datasets import read_flickr8k
from pregen_jax.datasets.caption_fit import MIN_IMAGES, SEED, caption_fit, judged_file
from pregen_jax.datasets.caption_null import LEVELS, ReferenceNull
from pregen_jax.datasets.caption_ranks import RankProfile, rank_profile, share_of

MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)]
KINDS = ("wrong5", "wrong10", "shift+1", "mutt", "flickr8k-other-images")


def flickr8k(shared: Path) -> tuple[list, dict[str, list[str]], list[str]]:
    """(references per test image in where-image2's order (token lists), model -> captions, train captions)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split file's stray 1.jpg..5.jpg entries
        data = read_flickr8k(shared / "flickr8k")
    folder = shared / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    row = {image_id: n for n, image_id in enumerate(data["test"].image_ids)}
    references = [data["test"].captions[row[i]] for i in ids]
    files = {m: (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)] for m in MODELS}
    return references, files, [" ".join(refs[0]) for refs in data["train"].captions]


def human(references: list, k: int) -> tuple[list, list[str]]:
    """(the other four references of each image, its caption k as a "model")."""
    return [refs[:k] + refs[k + 1:] for refs in references], [" ".join(refs[k]) for refs in references]


def mutt_sentences(shared: Path) -> list[str]:
    return sorted({row["caption"] for path in sorted((shared / "mutt").glob("*_a.json"))
                   for row in json.loads(path.read_text())})


def corrupt(kind: str, captions: list, rng: np.random.Generator, pools: dict[str, list[str]]) -> list:
    """A wrong file made from ``captions`` (one per image)."""
    n = len(captions)
    if kind == "shift+1":
        return captions[1:] + captions[:1]
    if kind.startswith("wrong"):
        picked = rng.choice(n, round(int(kind.removeprefix("wrong")) / 100 * n), replace=False)
        moved = list(captions)
        for a, b in zip(picked, np.roll(picked, 1)):  # each picked image gets another picked image's caption
            moved[a] = captions[b]
        return moved
    pool = pools[kind]
    return [pool[i] for i in rng.choice(len(pool), n, replace=len(pool) < n)]


def verdicts(references: list, files: dict[str, list], judge: list[str] | None = None, known: dict | None = None,
             null: ReferenceNull | None = None) -> list[dict]:
    """Each file of ``judge`` (default: every file of ``files``, name -> captions, all on the same
    images) checked with the other files as peers and alone, as ``caption_fits`` and ``caption_fit``
    would (one ``rank_profile`` per file; ``known``: profiles already made of files as they are here;
    ``null``: the references calibration of these references, if made)."""
    profiles = {name: (known or {}).get(name) or rank_profile(references, captions) for name, captions in files.items()}
    null = null or ReferenceNull(references, SEED, MIN_IMAGES)
    rows = []
    for name in judge or files:
        peers = [profile for other, profile in profiles.items() if other != name]
        for mode, others in (("peers", peers), ("alone", [])):
            if mode == "peers" and len(files) == 1:
                continue
            fit = judged_file(files[name], profiles[name], others, null)
            rows.append({"file": name, "mode": mode, "calibration": fit.calibration.kind, "share": fit.bottom_half,
                         "q0": fit.null_share, "tau": fit.calibration.tau, "threshold": fit.threshold,
                         "flagged": fit.suspicious, "blind": fit.blind, "misplaced": fit.misplaced,
                         "genericity": fit.genericity})
    return rows


def subsets(references: list, files: dict, draws: range, human_peer_draws: int, out: Path | None = None,
            size: int = 500) -> pd.DataFrame:
    """Random ``size``-image subsets (numbered ``draws``), the same images for every file of a draw: every model
    (peers: the 11 others) and alone, every human file alone, and in the first ``human_peer_draws``
    draws with the 12 models as peers (on its four references: 12 more fits each)."""
    rows = []
    for draw in draws:
        kept = subset(references, draw, size)
        refs = [references[i] for i in kept]
        models = {m: [files[m][i] for i in kept] for m in MODELS}
        found = verdicts(refs, models)
        for k in range(5):
            others, captions = human(refs, k)
            team = {f"human_{k}": captions, **(models if draw < human_peer_draws else {})}
            found += verdicts(others, team, judge=[f"human_{k}"])
        rows += [{"draw": draw, **row} for row in found]
        print(f"draw {draw} of {draws}", file=sys.stderr, flush=True)
        if out is not None and (draw + 1) % 10 == 0:
            io.write_tsv(pd.DataFrame(rows), out / "subsets.tsv")
    return pd.DataFrame(rows)


def subset(references: list, draw: int, size: int = 500) -> np.ndarray:
    """i64[size]: subset ``draw``'s images (sorted), the same for every file and every run."""
    rng = np.random.default_rng(zlib.crc32(f"subset {draw}".encode()))
    return np.sort(rng.choice(len(references), size, replace=False))


def alone_verdicts(references: list, files: dict, draws: range, cache: Path) -> pd.DataFrame:
    """Every file of every subset of ``draws`` judged alone by the shipped code (``judged_file`` with
    no peers), keeping in ``cache`` (``draw_D.npz``) what a draw's checks share: each file's profile
    (``NAME/ranks``, ``NAME/columns``) and each references null's levels (``TAG/LEVEL/point``: its
    genericity and share; the 12 models share one null, ``refs5``, each human file has its own against
    the other three references, ``refs4_k``). Read where present; levels missing are made as the
    check makes them (``ReferenceNull._level``) and kept."""
    rows = []
    for draw in draws:
        path = cache / f"draw_{draw}.npz"
        store = dict(np.load(path)) if path.is_file() else {}
        kept = subset(references, draw)
        refs = [references[i] for i in kept]
        nulls = {"refs5": ReferenceNull(refs, SEED, MIN_IMAGES)}
        for k in range(5):
            nulls[f"refs4_{k}"] = ReferenceNull(human(refs, k)[0], SEED, MIN_IMAGES)
        for tag, null in nulls.items():
            for level in LEVELS:
                if f"{tag}/{level}/point" in store:
                    null._levels[level] = tuple(store[f"{tag}/{level}/point"])
                elif f"{tag}/{level}/ranks" in store:  # a whole profile kept
                    level_profile = RankProfile(store[f"{tag}/{level}/ranks"], store[f"{tag}/{level}/columns"])
                    null._levels[level] = (level_profile.genericity, share_of(level_profile.ranks))
        judged_here = [(m, "refs5", refs, [files[m][i] for i in kept]) for m in MODELS] + [
            (f"human_{k}", f"refs4_{k}", *human(refs, k)) for k in range(5)]
        for name, tag, ref_set, captions in judged_here:
            if f"{name}/ranks" not in store:
                made = rank_profile(ref_set, captions)
                store[f"{name}/ranks"], store[f"{name}/columns"] = made.ranks, made.columns
            profile = RankProfile(store[f"{name}/ranks"], store[f"{name}/columns"])
            fit = judged_file(captions, profile, [], nulls[tag])
            rows.append({"draw": draw, "file": name, "mode": "alone", "calibration": fit.calibration.kind,
                         "share": fit.bottom_half, "q0": fit.null_share, "tau": fit.calibration.tau,
                         "threshold": fit.threshold, "flagged": fit.suspicious, "blind": fit.blind,
                         "misplaced": fit.misplaced, "genericity": fit.genericity})
        for tag, null in nulls.items():
            store.update({f"{tag}/{level}/point": np.array(point) for level, point in null._levels.items()})
        np.savez_compressed(path, **store)
        print(f"draw {draw} of {draws}", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def wrong(references: list, files: dict, draws: int, other_draws: int, pools: dict) -> pd.DataFrame:
    """Each model's whole file made wrong (``corrupt``), judged beside the 11 other models' true files
    and alone: ``draws`` draws of 10% moved, ``other_draws`` of each other random kind."""
    known = {name: rank_profile(references, captions) for name, captions in files.items()}
    null = ReferenceNull(references, SEED, MIN_IMAGES)
    rows = []
    for name in MODELS:
        for kind in KINDS:
            rng = np.random.default_rng(zlib.crc32(f"{name} {kind}".encode()))
            for draw in range(1 if kind == "shift+1" else draws if kind == "wrong10" else other_draws):
                team = {**{m: files[m] for m in MODELS if m != name}, name: corrupt(kind, files[name], rng, pools)}
                rows += [{"kind": kind, "draw": draw, **row}
                         for row in verdicts(references, team, [name], {m: known[m] for m in MODELS if m != name}, null)]
        print(f"wrong files of {name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def per_file(frame: pd.DataFrame) -> pd.DataFrame:
    """Alarms over checkable draws, abstentions over all, per file and mode."""
    return frame.assign(checkable=~frame["blind"]).groupby(["mode", "file"], sort=False).agg(
        draws=("flagged", "size"), checkable=("checkable", "sum"), alarms=("flagged", "sum"),
        abstained=("blind", "sum"), share=("share", "median"), threshold=("threshold", "median")).assign(
        alarm_rate=lambda t: t["alarms"] / t["checkable"].clip(lower=1),
        abstention_rate=lambda t: t["abstained"] / t["draws"]).reset_index()


def print_wrong(wrongs: pd.DataFrame, fmt: dict) -> None:
    print("wrong files (1,000 images):")
    print(wrongs.groupby(["kind", "mode"], sort=False).agg(
        draws=("flagged", "size"), flagged=("flagged", "mean"), abstained=("blind", "mean"),
        share=("share", "median"), threshold=("threshold", "median"), estimate=("misplaced", "mean"),
        estimate_sd=("misplaced", "std")).reset_index().to_string(**fmt), flush=True)
    moved = wrongs[(wrongs["kind"] == "wrong10") & (wrongs["mode"] == "peers")]
    print("10% moved, peers, per model:", ", ".join(f"{name} {group['flagged'].sum()}/{len(group)}"
                                                     for name, group in moved.groupby("file", sort=False)))


def print_subsets(draws: pd.DataFrame, fmt: dict) -> None:
    table = per_file(draws)
    print(f"{draws['draw'].nunique()} random 500-image subsets, per file:")
    print(table.to_string(**fmt))
    family = table.assign(family=np.where(table["file"].str.startswith("human"), "flickr8k human", "where-image2"))
    print(family.groupby(["mode", "family"], sort=False)[["draws", "checkable", "alarms", "abstained"]].sum()
          .assign(alarm_rate=lambda t: t["alarms"] / t["checkable"].clip(lower=1),
                  abstention_rate=lambda t: t["abstained"] / t["draws"]).reset_index().to_string(**fmt))


def cost(references: list, captions: list, baseline: Path | None = None, repeats: int = 3) -> str:
    """Median seconds of one file's check alone (references calibration) against its fits alone (the
    file's ``rank_profile``) and, with ``baseline`` (another checkout's root), against that checkout's
    ``caption_fit``, at 1,000 and 2,000 images (the Flickr8k lists repeated), interleaved in one process."""
    checks = {"check": caption_fit, "fits": rank_profile}
    if baseline is not None:
        checks["baseline check"] = baseline_module(baseline).caption_fit
    out = []
    for size in (1000, 2000):
        refs = [references[i % len(references)] for i in range(size)]
        caps = [captions[i % len(captions)] for i in range(size)]
        times = {mode: [] for mode in checks}
        for _ in range(repeats):
            for mode, check in checks.items():
                start = time.perf_counter()
                check(refs, caps)
                times[mode].append(time.perf_counter() - start)
        medians = {mode: float(np.median(t)) for mode, t in times.items()}
        ratio = f" ({medians['check'] / medians['baseline check']:.2f}x)" if baseline is not None else ""
        out.append(f"{size:,} images: " + ", ".join(f"{mode} {t:.3f} s" for mode, t in medians.items()) + ratio)
    return "; ".join(out)


def baseline_module(root: Path):
    """``ROOT/pregen_jax/datasets/caption_fit.py`` of another checkout, imported beside this one's (its
    package made by hand, so that its ``__init__`` and the rest of that checkout are not run)."""
    import importlib
    import types
    package = types.ModuleType("baseline_datasets")
    package.__path__ = [str(root / "pregen_jax" / "datasets")]
    sys.modules["baseline_datasets"] = package
    return importlib.import_module("baseline_datasets.caption_fit")


def separation(references: list, files: dict) -> pd.DataFrame:
    """Whether a lone file's moved captions can be told from a model's own bad ones, per model (whole
    file, 10% of its captions moved as ``corrupt`` moves them): among captions whose own image is in
    the bottom half, the AUC (moved against not moved) of (a) the caption's best fit to another image
    over its fit to its own and (b) its own image's rank, low first. 0.5: no better than chance."""
    from pregen_jax.datasets.caption_ranks import fit_blocks
    rows = []
    for name in MODELS:
        moved = corrupt("wrong10", files[name], np.random.default_rng(zlib.crc32(f"{name} wrong10".encode())), {})
        fits = np.vstack([block for _, block in fit_blocks(references, moved)])       # f64[n, n]
        own = np.diag(fits).copy()
        np.fill_diagonal(fits, -np.inf)
        best = fits.max(axis=1)
        np.fill_diagonal(fits, own)
        rank = ((fits < own[:, None]).sum(1) + ((fits == own[:, None]).sum(1) - 1) / 2) / (len(own) - 1)
        bottom = rank < 0.5
        was_moved = np.array([a != b for a, b in zip(moved, files[name])])
        ratio = best / np.maximum(own, 1e-9)
        rows.append({"file": name, "bottom_half": int(bottom.sum()), "moved_in_it": int((bottom & was_moved).sum()),
                     "auc_best_other_over_own": _auc(ratio[bottom & was_moved], ratio[bottom & ~was_moved]),
                     "auc_low_rank": _auc(-rank[bottom & was_moved], -rank[bottom & ~was_moved])})
    return pd.DataFrame(rows)


def needed_spread(q0: float, images: int = 1000, moved: float = 0.1, power: float = 0.9) -> float:
    """The largest null spread (tau, by 0.0001) at which a file of ``images`` with ``moved`` of its
    captions moved (share ``(1 - moved) q0 + moved / 2``) is flagged with probability ``power`` (normal)."""
    from statistics import NormalDist

    from pregen_jax.datasets.caption_fit import flag_threshold
    share = (1 - moved) * q0 + moved / 2
    bound = share - NormalDist().inv_cdf(power) * (share * (1 - share) / images) ** 0.5
    return max([t / 10000 for t in range(300) if flag_threshold(images, q0, t / 10000) <= bound], default=0.0)


def _auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive above a negative), ties half."""
    above = positive[:, None] > negative[None, :]
    return float(np.mean(above + 0.5 * (positive[:, None] == negative[None, :])))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="random 500-image subsets (default 200)")
    parser.add_argument("--first-draw", type=int, default=0, help="the first subset's number (to split the draws)")
    parser.add_argument("--human-peer-draws", type=int, default=20,
                        help="subsets in which each human file is also judged with the 12 models as peers (default 20)")
    parser.add_argument("--moved-draws", type=int, default=20, help="draws per model of 10%% moved (default 20)")
    parser.add_argument("--other-draws", type=int, default=5,
                        help="draws per model of each other random wrong kind (default 5)")
    parser.add_argument("--part", choices=("all", "files", "wrong", "subsets", "alone"), default="all",
                        help="files: the whole and wrong files alone; wrong: the wrong files alone; subsets: the "
                             "random subsets alone; alone: the random subsets, every file alone only, from --cache")
    parser.add_argument("--cache", default=None,
                        help="--part alone: keep each subset's profiles here (draw_D.npz; read where present)")
    parser.add_argument("--out", default=None, help="write subsets.tsv, whole.tsv, wrong.tsv here")
    parser.add_argument("--cost-only", action="store_true", help="the check's cost alone")
    parser.add_argument("--baseline", default=None, metavar="ROOT",
                        help="--cost-only: also time this checkout's check (e.g. /work/main), in the same process")
    parser.add_argument("--separation", action="store_true",
                        help="whether moved captions can be told from a model's own bad ones (whole files)")
    parser.add_argument("--report", nargs="+", default=None, metavar="DIR",
                        help="print the tables of earlier runs' --out folders (their subsets.tsv and wrong.tsv)")
    args = parser.parse_args(argv)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    references, files, train = flickr8k(shared)
    if args.cost_only:
        print(cost(references, files["init_1"], Path(args.baseline) if args.baseline else None))
        return 0
    if args.separation:
        print(separation(references, files).to_string(float_format=lambda x: f"{x:.3f}", index=False))
        print("the largest null spread at which a tenth moved is flagged in 90% of 1,000-image files:",
              ", ".join(f"q0 {q0}: {needed_spread(q0):.4f}" for q0 in (0.074, 0.082, 0.091)))
        return 0
    pd.set_option("display.width", 200)
    fmt = {"float_format": lambda x: f"{x:.3f}", "index": False}
    if args.report:
        tables = {name: [pd.read_csv(Path(folder) / f"{name}.tsv", sep="\t") for folder in args.report
                         if (Path(folder) / f"{name}.tsv").is_file()] for name in ("wrong", "subsets")}
        if tables["wrong"]:
            print_wrong(pd.concat(tables["wrong"]), fmt)
        if tables["subsets"]:
            print_subsets(pd.concat(tables["subsets"]), fmt)
        return 0
    if args.part in ("all", "files", "wrong"):
        files_part(references, files, train, shared, args, fmt)
    if args.part in ("all", "subsets"):
        subsets_part(references, files, args, fmt)
    if args.part == "alone":
        cache = Path(args.cache or args.out or ".")
        cache.mkdir(parents=True, exist_ok=True)
        draws = alone_verdicts(references, files, range(args.first_draw, args.first_draw + args.draws), cache)
        print_subsets(draws, fmt)
        if args.out:
            io.write_tsv(draws, Path(args.out) / "subsets.tsv")
    return 0


def files_part(references: list, files: dict, train: list, shared: Path, args, fmt: dict) -> None:
    if args.part != "wrong":
        whole = pd.DataFrame(verdicts(references, files) + [
            row for k in range(5) for row in verdicts(human(references, k)[0],
                                                      {f"human_{k}": human(references, k)[1], **files},
                                                      judge=[f"human_{k}"])])
        print("whole files (1,000 images):")
        print(whole.drop(columns=["misplaced"]).to_string(**fmt), flush=True)
        if args.out:
            io.write_tsv(whole, Path(args.out) / "whole.tsv")
    pools = {"mutt": mutt_sentences(shared), "flickr8k-other-images": train}
    wrongs = wrong(references, files, args.moved_draws, args.other_draws, pools)
    print_wrong(wrongs, fmt)
    if args.out:
        io.write_tsv(wrongs, Path(args.out) / "wrong.tsv")


def subsets_part(references: list, files: dict, args, fmt: dict) -> None:
    numbers = range(args.first_draw, args.first_draw + args.draws)
    draws = subsets(references, files, numbers, args.human_peer_draws, Path(args.out) if args.out else None)
    print_subsets(draws, fmt)
    if args.out:
        io.write_tsv(draws, Path(args.out) / "subsets.tsv")


if __name__ == "__main__":
    sys.exit(main())
