"""The own-image check (pregen_jax/datasets/caption_fit.py) on Flickr8k, whose files none of its
constants was fitted on (it ships none: its null is read from the data at hand when it runs):
false alarms and abstentions per file, what it catches, its cost.

    nice python experiments/caption_check/run.py [--draws 200] [--moved-draws 20] [--out DIR]
    nice python experiments/caption_check/run.py --cost-only

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
from pregen_jax.datasets.caption_null import ReferenceNull
from pregen_jax.datasets.caption_ranks import rank_profile

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
        kept = np.sort(np.random.default_rng(zlib.crc32(f"subset {draw}".encode())).choice(len(references), size,
                                                                                           replace=False))
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


def cost(references: list, captions: list, repeats: int = 3) -> str:
    """Median seconds of one file's check alone (references calibration) against its fits alone (the
    file's ``rank_profile``), at 1,000 and 2,000 images (the Flickr8k lists repeated), interleaved."""
    out = []
    for size in (1000, 2000):
        refs = [references[i % len(references)] for i in range(size)]
        caps = [captions[i % len(captions)] for i in range(size)]
        times = {"check": [], "fits": []}
        for _ in range(repeats):
            for mode in times:
                start = time.perf_counter()
                caption_fit(refs, caps) if mode == "check" else rank_profile(refs, caps)
                times[mode].append(time.perf_counter() - start)
        out.append(f"{size:,} images: check {np.median(times['check']):.3f} s, its fits alone "
                   f"{np.median(times['fits']):.3f} s")
    return "; ".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="random 500-image subsets (default 200)")
    parser.add_argument("--first-draw", type=int, default=0, help="the first subset's number (to split the draws)")
    parser.add_argument("--human-peer-draws", type=int, default=20,
                        help="subsets in which each human file is also judged with the 12 models as peers (default 20)")
    parser.add_argument("--moved-draws", type=int, default=20, help="draws per model of 10%% moved (default 20)")
    parser.add_argument("--other-draws", type=int, default=5,
                        help="draws per model of each other random wrong kind (default 5)")
    parser.add_argument("--part", choices=("all", "files", "wrong", "subsets"), default="all",
                        help="files: the whole and wrong files alone; wrong: the wrong files alone; subsets: the "
                             "random subsets alone")
    parser.add_argument("--out", default=None, help="write subsets.tsv, whole.tsv, wrong.tsv here")
    parser.add_argument("--cost-only", action="store_true", help="the check's cost alone")
    parser.add_argument("--report", nargs="+", default=None, metavar="DIR",
                        help="print the tables of earlier runs' --out folders (their subsets.tsv and wrong.tsv)")
    args = parser.parse_args(argv)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    references, files, train = flickr8k(shared)
    if args.cost_only:
        print(cost(references, files["init_1"]))
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
