"""How well the own-image check (pregen_jax/datasets/caption_fit.py) tells captions of other images
from real models' captions: false alarms on real files, detection of wrong files, the misplaced
share's estimate, how the share moves with a model's quality, the check's cost.

    python experiments/caption_check/run.py [--draws 20] [--demo RUN_FOLDER] [--out DIR]

Real files (the false-alarm side): the 12 where-image2 models (Tanti et al. 2018) and one held-out
human caption per image on the 1,000 Flickr8k test images, whole and on ``--draws`` random image
subsets of 50, 100, 200 and 500 images each; with ``--demo``, a finished demo's models, final and
first-epoch snapshots (weak checkpoints; GRUs and transformers), and each test image's reference
k held out from the other four (shapes), the same way. Wrong files, made from each where-image2
model (the detection side): shifted by one image (both ways); 5%, 10%, 25% or 50% of the images
given other images' captions of the same file (moved among themselves); another dataset's
captions (MUTT's original sentences, SICK); Flickr8k's human captions of other (training) images;
``--draws`` draws of each random kind.
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
from pregen_jax.datasets import read_flickr8k, tokenize
from pregen_jax.datasets.caption_fit import CAP, caption_fit, flag_threshold, judged, rank_profile

MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)]


def flickr8k(shared: Path) -> tuple[dict[str, list], dict[str, list[str]], list[str]]:
    """(file -> references per test image in where-image2's order, file -> captions, train captions)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split file's stray 1.jpg..5.jpg entries
        data = read_flickr8k(shared / "flickr8k")
    test = data["test"]
    folder = shared / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    row = {image_id: n for n, image_id in enumerate(test.image_ids)}
    references = [test.captions[row[i]] for i in ids]
    files = {}
    for name in [*MODELS, "human_1"]:
        lines = (folder / f"flickr8k_{name}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)]
        files[name] = lines
    train = [" ".join(refs[0]) for refs in data["train"].captions]
    # the human "model" is one of the five references: scored against the other four
    by_file = {name: references for name in files}
    by_file["human_1"] = [[r for r in refs if r != tokenize(h)] for refs, h in zip(references, files["human_1"])]
    return by_file, files, train


def mutt_sentences(shared: Path) -> list[str]:
    found = set()
    for path in sorted((shared / "mutt").glob("*_a.json")):
        found.update(row["caption"] for row in json.loads(path.read_text()))
    return sorted(found)


def demo_files(folder: Path) -> tuple[dict[str, list], dict[str, list], dict[str, str]]:
    """(file -> test references, file -> test captions, file -> source) of a demo's run folder, finished
    or still running (then the built-in demo's config gives the references): its models' captions
    (``cache/captions``, every model and snapshot written so far; "-e1": the first epoch's snapshot)
    and, as human captions, each image's reference k held out from the other four (k = 0..4)."""
    from pregen_jax.pipeline.config import demo_config
    from pregen_jax.pipeline.finished import FinishedSearch
    from pregen_jax.pipeline.sources import load_data
    try:
        run = FinishedSearch.open(folder)
        config, run_folder = run.config, run.folder
    except (OSError, ValueError):  # still running: the built-in demo's data
        config, run_folder = demo_config(), None
    references = load_data(config, progress=False, run_folder=run_folder).test.captions
    refs, files, sources = {}, {}, {}
    for path in sorted((folder / "cache" / "captions").glob("*/captions.txt")):
        name = path.parent.name.rsplit("-", 1)[0]
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) == len(references):
            refs[name], files[name] = references, lines
            sources[name] = "snapshot" if "-e" in name else "model"
    for k in range(5):
        name = f"held-out reference {k}"
        files[name] = [" ".join(image[k]) for image in references]
        refs[name] = [image[:k] + image[k + 1:] for image in references]
        sources[name] = "human"
    return refs, files, sources


def corrupt(kind: str, captions: list, rng: np.random.Generator, pools: dict[str, list[str]]) -> list:
    """A wrong file made from ``captions`` (one per image)."""
    n = len(captions)
    if kind.startswith("shift"):
        step = int(kind.removeprefix("shift"))
        return [captions[(i + step) % n] for i in range(n)]
    if kind.startswith("wrong"):
        share = int(kind.removeprefix("wrong")) / 100
        picked = rng.choice(n, round(share * n), replace=False)
        moved = list(captions)
        for a, b in zip(picked, np.roll(picked, 1)):  # each picked image gets another picked image's caption
            moved[a] = captions[b]
        return moved
    pool = pools[kind]
    return [pool[i] for i in rng.choice(len(pool), n, replace=len(pool) < n)]


SIZES = (50, 100, 200, 500)  # random image subsets of each real file, beside the whole file
KINDS = ("shift+1", "shift-1", "wrong5", "wrong10", "wrong25", "wrong50", "mutt", "flickr8k-other-images")


def null_files(references: dict[str, list], files: dict[str, list], sources: dict[str, str], draws: int,
               dataset: str) -> list[dict]:
    """Real files, as they are: each whole file, and ``draws`` random image subsets of each size in SIZES."""
    rows = []
    for name, captions in files.items():
        rng = np.random.default_rng(zlib.crc32(f"null {name}".encode()))
        subsets = [np.arange(len(captions))] + [np.sort(rng.choice(len(captions), size, replace=False))
                                                for size in SIZES if size < len(captions) for _ in range(draws)]
        for kept in subsets:
            fit = caption_fit([references[name][i] for i in kept], [captions[i] for i in kept])
            rows.append({"dataset": dataset, "source": sources[name], "file": name, "images": len(kept),
                         **fit.summary()})
    return rows


def wrong_files(references: dict[str, list], files: dict[str, list], sources: dict[str, str], draws: int,
                pools: dict[str, list[str]], dataset: str) -> list[dict]:
    """Each real file made wrong (``corrupt``), ``draws`` times per kind: flagged or not, and the estimated
    misplaced share against the true one (``wrongP``: P% of the images moved; shifts, other datasets: 100%)."""
    rows = []
    for name, captions in files.items():
        for kind in KINDS:
            rng = np.random.default_rng(zlib.crc32(f"{name} {kind}".encode()))
            true = int(kind.removeprefix("wrong")) / 100 if kind.startswith("wrong") else 1.0
            for draw in range(1 if kind.startswith("shift") else draws):
                fit = caption_fit(references[name], corrupt(kind, captions, rng, pools))
                rows.append({"dataset": dataset, "source": sources[name], "file": name, "kind": kind, "draw": draw,
                             "true_share": true, "estimate_unclipped": (fit.bottom_half - fit.null_share) / (0.5 - fit.null_share),
                             **fit.summary()})
    return rows


def cost(references, captions, sizes=(1000, CAP, 5000), repeats: int = 3) -> dict[int, float]:
    """Median seconds of ``rank_profile`` and ``judged`` on ``sizes`` images (the Flickr8k lists repeated; the check
    itself stops at CAP: the larger sizes show what going past it would cost)."""
    seconds = {}
    for size in sizes:
        refs = [references[i % len(references)] for i in range(size)]
        caps = [captions[i % len(captions)] for i in range(size)]
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            profile = rank_profile(refs, caps)
            judged(profile.ranks, len(set(caps)), profile.genericity)
            times.append(time.perf_counter() - start)
        seconds[size] = float(np.median(times))
    return seconds


def evaluate_cost(references, captions, images: int = 2000, repeats: int = 5) -> dict[str, float]:
    """Median seconds of ``score_files`` (Bleu_4, CIDEr, ROUGE_L; ptb) on ``images`` images (the
    Flickr8k lists repeated), with the check and with it replaced by nothing, interleaved."""
    import tempfile

    from pregen_jax.evaluation import runner
    folder = Path(tempfile.mkdtemp())
    coco = {"images": [{"id": i} for i in range(images)],
            "annotations": [{"image_id": i, "id": 10 * i + r, "caption": " ".join(c)}
                            for i in range(images) for r, c in enumerate(references[i % len(references)])]}
    (folder / "refs.json").write_text(json.dumps(coco))
    (folder / "res.json").write_text(json.dumps([{"image_id": i, "caption": captions[i % len(captions)]}
                                                 for i in range(images)]))
    real, times = runner.caption_checks, {"with the check": [], "without": []}
    try:
        for _ in range(repeats):
            for mode in times:
                runner.caption_checks = real if mode == "with the check" else (lambda r, systems, i: [None] * len(systems))
                start = time.perf_counter()
                runner.score_files(folder / "refs.json", [folder / "res.json"], metrics=["Bleu_4", "CIDEr", "ROUGE_L"])
                times[mode].append(time.perf_counter() - start)
    finally:
        runner.caption_checks = real
    return {mode: float(np.median(t)) for mode, t in times.items()}


def quality(references: dict[str, list], files: dict[str, list]) -> pd.DataFrame:
    """Each whole file's share and the check's verdict beside its CIDEr-D (alnum-lower tokens; the
    held-out human captions against the other four references): how the share moves with quality."""
    from pregen_jax import postgen
    rows = []
    for name, captions in files.items():
        gts = {i: [" ".join(tokenize(r if isinstance(r, str) else " ".join(r))) for r in refs]
               for i, refs in enumerate(references[name])}
        res = {i: [" ".join(tokenize(c))] for i, c in enumerate(captions)}
        fit = caption_fit(references[name], captions)
        rows.append({"file": name, "cider": float(postgen.score("CIDEr", gts, res)[0]),
                     "distinct_captions": len(set(captions)), **fit.summary()})
    return pd.DataFrame(rows).sort_values("cider")


def print_cost(references: dict, files: dict) -> None:
    print("seconds (median of 3):", ", ".join(f"{n:,} images {s:.3f}" for n, s in
                                              cost(references["init_1"], files["init_1"]).items()))
    for images in (CAP, 5000):
        print(f"evaluate at {images:,} images, seconds (median of 5):", ", ".join(
            f"{mode} {s:.3f}" for mode, s in evaluate_cost(references["init_1"], files["init_1"], images).items()))


def _table(frame: pd.DataFrame, keys: list[str]) -> str:
    return frame.groupby(keys, sort=False).agg(**{
        "files": ("file", "size"), "flagged": ("flagged", "mean"), "share_min": ("bottom_half_share", "min"),
        "share_median": ("bottom_half_share", "median"), "share_max": ("bottom_half_share", "max"),
        "threshold": ("flagged_above", "median")}).reset_index().to_string(index=False,
                                                                          float_format=lambda x: f"{x:.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20, help="draws per file and kind or subset size (default 20)")
    parser.add_argument("--demo", default=None, help="a finished demo's run folder: its models' captions too")
    parser.add_argument("--demo-only", action="store_true", help="with --demo: the demo's files alone")
    parser.add_argument("--out", default=None, help="write null.tsv, wrong.tsv here")
    parser.add_argument("--cost-only", action="store_true", help="the check's cost alone, and evaluate's with and without it")
    args = parser.parse_args(argv)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    references, files, train = flickr8k(shared)
    pools = {"mutt": mutt_sentences(shared), "flickr8k-other-images": train}
    if args.cost_only:
        print_cost(references, files)
        return 0
    sources = {name: "human" if name.startswith("human") else "model" for name in files}
    null, wrong = [], []
    if not args.demo_only:
        null = null_files(references, files, sources, args.draws, "flickr8k")
        wrong = wrong_files(references, {n: c for n, c in files.items() if n in MODELS}, sources, args.draws, pools,
                            "flickr8k")
    if args.demo:
        demo_refs, demo_captions, demo_sources = demo_files(Path(args.demo))
        null += null_files(demo_refs, demo_captions, demo_sources, args.draws, "demo")
        print(quality(demo_refs, demo_captions)[["file", "cider", "distinct_captions", "bottom_half_share",
                                                 "flagged", "misplaced_share"]]
              .to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    null, wrong = pd.DataFrame(null), pd.DataFrame(wrong)
    if args.out:
        io.write_tsv(null, Path(args.out) / "null.tsv")
        io.write_tsv(wrong, Path(args.out) / "wrong.tsv")
    pd.set_option("display.width", 200)
    print(f"null files (real captions): {len(null)}; flagged {int(null['flagged'].sum())} "
          f"({null['flagged'].mean():.2%}); threshold {flag_threshold(1000):.4f} at 1,000 images, {flag_threshold(CAP):.4f} at "
          f"{CAP:,}")
    print(_table(null, ["dataset", "source", "images"]))
    whole = null[null["images"] == null.groupby("file")["images"].transform("max")]
    print("whole files:", ", ".join(f"{f} {s:.3f}" for f, s in zip(whole["file"], whole["bottom_half_share"])))
    if args.demo_only:
        return 0
    print(_table(wrong, ["dataset", "kind"]))
    moved = wrong[wrong["kind"].str.startswith("wrong")]
    error = moved["estimate_unclipped"] - moved["true_share"]
    covered = (moved["misplaced_share_95"].str[0] <= moved["true_share"]) & (
        moved["true_share"] <= moved["misplaced_share_95"].str[1])
    print(moved.assign(error=error, within=error.abs() <= 0.05, covered=covered).groupby("kind", sort=False).agg(
        draws=("error", "size"), mean_estimate=("estimate_unclipped", "mean"), sd=("estimate_unclipped", "std"),
        within_005=("within", "mean"), interval_covers=("covered", "mean"), flagged=("flagged", "mean"))
        .reset_index().to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("the where-image2 models and the human caption:")
    print(quality(references, files)[["file", "cider", "bottom_half_share", "misplaced_share"]]
          .to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print_cost(references, files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
