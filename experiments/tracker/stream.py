"""The checkpoint tracker (``pregen_jax.selection.Tracker``) against the rules people use, replayed
over many random image orders on a stream of checkpoints whose per-image CIDEr-D is known.

    python experiments/tracker/stream.py --replays 1000 --out runs/tracker

The streams, on the 1,000 Flickr8k test images: the 12 where-image2 Flickr8k models as listed
(init, pre, par, merge x 3 runs) and rising by full-split CIDEr-D (the order training tends to give:
every offer a close improvement), and the 12 followed by the human captions (one of each image's
references, so far above every model: a checkpoint that must replace the kept one). Every replay is one seed: the tracker draws offer k's images in the order
``default_rng([seed, k])`` gives, as ``Tracker(seed=seed)`` does (``check_against_tracker`` runs the real
``Tracker`` on two replays and asserts the same verdicts), and the baselines' fixed subsets are drawn
from the same seed. Each image looked up counts as one decoded and scored.

    python experiments/tracker/stream.py --trained /work/runs/tracker-streams --out runs/tracker-trained

replays the trained streams ``build_streams.py`` wrote (``trained_streams``: one training run's checkpoints
in step order), with the validation-loss rule beside the others.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model_selection"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import trained_streams
import where_image2

from pregen_jax import io, postgen
from pregen_jax.datasets import TOKENIZER_NAME, tokenize
from pregen_jax.ranking import tracking
from pregen_jax.selection.race import score_range

CHECKPOINTS = [*where_image2.MODELS, "human_1"]
SUBSETS = (0.05, 0.10, 0.25, 0.64)
PATIENCE = 3


def per_image(shared: Path) -> tuple[list[str], np.ndarray, dict]:
    """(names, f64[13, 1000] per-image CIDEr-D with whole-split document frequencies, references by image)."""
    folder = shared / "where-image2-captions"
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    gts = where_image2.references(shared, ids)
    rows, captions = [], {}
    for name in CHECKPOINTS:
        lines = (folder / f"flickr8k_{name}.txt").read_text(encoding="utf-8").split("\n")[:len(ids)]
        captions[name] = [" ".join(tokenize(c)) for c in lines]
        res = {i: [c] for i, c in zip(ids, captions[name])}
        rows.append(postgen.CIDEr().compute_score(gts, res)[1])
    return CHECKPOINTS, np.asarray(rows, np.float64), {"gts": [gts[i] for i in ids], "captions": captions}


def track(scores: np.ndarray, replays: int, within: float, alpha: float, width: float, batch: int,
          budget: float, most: int | None) -> dict:
    """The tracker's verdicts on every replay (seed r: offer k's order ``default_rng([r, k])``).

    Returns kept i64[R] (the final kept checkpoint), cost f[R] (images decoded, challengers and kept),
    failed bool[R] (some interval missed its true difference, or some verdict was wrong), bound f[R]
    (the guarantee's max(within, undecided bounds)), statuses i8[R, K]."""
    k_total, n = scores.shape
    truth = scores.mean(1)
    spending = tracking.Spending(alpha, most)
    at = tracking.looks(n, batch, max(1, int(np.ceil(budget * n))))
    kept = np.zeros(replays, np.int64)
    cached = np.zeros((replays, n), bool)  # images the kept checkpoint has scored
    cost = np.zeros(replays)
    failed = np.zeros(replays, bool)
    bound = np.full(replays, within)
    statuses = np.zeros((replays, k_total), np.int8)
    statuses[:, 0] = 1
    history = np.zeros((replays, k_total), np.int64)  # the kept checkpoint after each offer
    spent = np.zeros((replays, k_total))  # images decoded up to and including each offer
    for k in range(1, k_total):
        orders = np.stack([np.random.default_rng([r, k + 1]).permutation(n)[:at[-1]] for r in range(replays)])
        differences = scores[k][orders] - scores[kept[:, None], orders]
        result = tracking.paired_verdicts(differences, n, spending.level(k), width, within, at)  # offer k + 1: comparison k
        d = truth[k] - truth[kept]
        failed |= (result.low > d + 1e-12) | (result.high < d - 1e-12)
        failed |= (result.status == 1) & (d <= 0)
        failed |= (result.status == -1) & (d > within)
        drawn = np.arange(at[-1])[None, :] < result.drawn[:, None]
        seen = np.zeros((replays, n), bool)
        np.put_along_axis(seen, orders, drawn, 1)
        cost += result.drawn + (seen & ~cached).sum(1)
        cached |= seen
        better = result.status == 1
        kept[better] = k
        cached[better] = seen[better]
        undecided = result.status == 0
        bound[undecided] = np.maximum(bound[undecided], np.maximum(result.high[undecided], 0))
        statuses[:, k], history[:, k], spent[:, k] = result.status, kept, cost
    gap = truth.max() - truth[kept]
    failed |= gap > bound + 1e-12
    return {"kept": kept, "cost": cost, "failed": failed, "bound": bound, "statuses": statuses, "gap": gap,
            "history": history, "spent": spent}


def with_patience(result: dict, truth: np.ndarray, patience: int) -> dict:
    """The tracker's replays stopped at ``patience`` offers in a row not better (the verdicts before the
    stop are the same; the checkpoints after it are never offered but count in the stream's best)."""
    replays, k_total = result["statuses"].shape
    stopped = np.full(replays, k_total)
    for r in range(replays):
        misses = 0
        for k in range(1, k_total):
            misses = 0 if result["statuses"][r, k] == 1 else misses + 1
            if misses >= patience:
                stopped[r] = k + 1
                break
    kept = result["history"][np.arange(replays), stopped - 1]
    return {"kept": kept, "cost": result["spent"][np.arange(replays), stopped - 1], "gap": truth.max() - truth[kept],
            "stopped": stopped}


def fixed_subset(scores: np.ndarray, replays: int, share: float, patience: int | None = None) -> dict:
    """Validate every checkpoint on one random subset (seed r), keep the best subset mean; with
    ``patience``, stop after that many offers in a row not better (the rest never decoded)."""
    k_total, n = scores.shape
    size = max(1, round(share * n))
    truth = scores.mean(1)
    kept, cost, stopped = np.zeros(replays, np.int64), np.zeros(replays), np.full(replays, k_total)
    for r in range(replays):
        subset = np.random.default_rng([r, 0]).permutation(n)[:size]
        means = scores[:, subset].mean(1)
        best, misses = 0, 0
        for k in range(k_total):
            if means[k] > means[best]:
                best, misses = k, 0
            elif k:
                misses += 1
            if patience is not None and misses >= patience:
                stopped[r] = k + 1
                break
        kept[r], cost[r] = best, size * stopped[r]
    found = {"kept": kept, "cost": cost, "gap": truth.max() - truth[kept]}
    return found | ({"stopped": stopped} if patience is not None else {})


def row(method: str, stream: str, result: dict, k_total: int, alpha: float | None = None) -> dict:
    failed = result.get("failed")
    out = {"stream": stream, "method": method, "images_per_checkpoint": result["cost"].mean() / k_total,
           "gap_median": float(np.median(result["gap"])), "gap_p90": float(np.quantile(result["gap"], 0.9)),
           "gap_max": float(result["gap"].max()), "kept_best_share": float((result["gap"] == 0).mean())}
    if failed is not None:
        low, high = clopper_pearson(int(failed.sum()), len(failed))
        out |= {"failures": int(failed.sum()), "failure_rate": failed.mean(), "failure_low": low, "failure_high": high,
                "bound_median": float(np.median(result["bound"])), "alpha": alpha}
    if "stopped" in result:
        out["stopped_median"] = float(np.median(result["stopped"]))
    return out


def clopper_pearson(failures: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of a failure rate."""
    tail = (1 - level) / 2
    low = stats.beta.ppf(tail, failures, trials - failures + 1) if failures else 0.0
    high = stats.beta.ppf(1 - tail, failures + 1, trials - failures) if failures < trials else 1.0
    return float(low), float(high)


def check_against_tracker(names, scores, data, width, replays=(0, 1), **settings) -> None:
    """The real ``Tracker`` on caption lookups gives the replay's statuses (a guard on this simulation)."""
    from pregen_jax.selection import Tracker
    simulated = track(scores, max(replays) + 1, settings["within"], settings["alpha"], width, settings["batch"],
                      settings["budget"], settings["most"])["statuses"]
    for r in replays:
        tracker = Tracker(data["gts"], within=settings["within"], alpha=settings["alpha"], seed=r, most=settings["most"],
                          batch=settings["batch"], budget=settings["budget"], tokenizer="alnum-lower", quiet=True)  # as scored
        got = [tracker.offer(name, lambda idx, c=data["captions"][name]: [c[int(i)] for i in idx]).status
               for name in names]
        expected = [tracking.STATUSES[int(s)] for s in simulated[r]]
        assert got == expected, (r, got, expected)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--out", default=None, help="write stream.tsv here")
    parser.add_argument("--quick", action="store_true", help="one tracker setting, no check against the Tracker")
    parser.add_argument("--streams", nargs="*", default=None, metavar="STREAM",
                        help="listed, rising, human (default: all three)")
    parser.add_argument("--settings", nargs="*", default=None, metavar="WITHIN:BUDGET[:MOST]",
                        help="tracker settings (default: 0.02:1 0.05:1 0.05:1:13 0.1:0.25)")
    parser.add_argument("--no-check", action="store_true", help="skip running the real Tracker on two replays")
    parser.add_argument("--trained", default=None, metavar="FOLDER",
                        help="replay the trained streams build_streams.py wrote there instead of where-image2's")
    args = parser.parse_args(argv)
    settings = [(0.02, 1.0, None), (0.05, 1.0, None), (0.05, 1.0, 13), (0.1, 0.25, None)]
    if args.settings:
        settings = [(float(w), float(b), int(m[0]) if m else None) for w, b, *m in (x.split(":") for x in args.settings)]
    if args.quick:
        settings = settings[1:2]
    if args.trained:
        streams = trained_streams.load_streams(args.trained)
        if args.streams:
            streams = {k: streams[k] for k in args.streams}
        rows = [r for name, stream in streams.items() for r in replay_trained(name, stream, settings, args)]
        return finish(rows, args)
    shared = io.shared_data()
    if not (shared / "where-image2-captions").is_dir():
        print(f"skipped: {shared} has no where-image2-captions (see ../shared/data/README.md)")
        return 0
    names, scores, data = per_image(shared)
    gts = dict(enumerate(data["gts"]))
    low, high = score_range("CIDEr", gts, gts)
    width = high - low
    truth = scores.mean(1)
    print("full-split CIDEr-D:", ", ".join(f"{n} {t:.4f}" for n, t in zip(names, truth)), f"(range bound {high:.3f})")
    if not args.quick and not args.no_check:
        check_against_tracker(names, scores, data, width, within=0.05, alpha=args.alpha, batch=32, budget=1.0,
                              most=None)
        print("the real Tracker gives the simulated verdicts on replays 0 and 1")
    rows = []

    models = np.arange(len(where_image2.MODELS))  # the human captions are among the references: far above
    streams = {"12 models listed": models, "12 models rising": models[np.argsort(truth[models], kind="stable")],
               "12 models + human last": np.arange(len(names))}
    if args.streams:
        short = dict(zip(("listed", "rising", "human"), streams))
        streams = {short[k]: streams[short[k]] for k in args.streams}
    for stream, order in streams.items():
        rows += replay(stream, scores[order], width, settings, args)
    return finish(rows, args)


def replay(stream: str, s: np.ndarray, width: float, settings, args, extra=()) -> list[dict]:
    """Every rule's row on one stream (per-image scores ``s: f64[K, I]``), printed as it comes (a long run
    shows its rows before the end); ``extra``: (label, result) rows of rules that need more than scores."""
    rows = []

    def add(found: dict) -> None:
        rows.append(found)
        print("\t".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in found.items()), flush=True)

    k_total = len(s)
    add(row("full validation", stream, {"cost": np.full(args.replays, s.shape[1] * k_total),
                                        "gap": np.zeros(args.replays)}, k_total))
    for share in SUBSETS:
        add(row(f"fixed {share:.0%}", stream, fixed_subset(s, args.replays, share), k_total))
    for share in (0.25, 1.0):
        add(row(f"patience {PATIENCE} on fixed {share:.0%}", stream,
                fixed_subset(s, args.replays, share, PATIENCE), k_total))
    for label, result in extra:
        add(row(label, stream, result, k_total))
    for within, budget, most in settings:
        start = time.process_time()
        result = track(s, args.replays, within, args.alpha, width, 32, budget, most)
        label = f"tracker within {within} budget {budget:.0%}" + (f" most {most}" if most else "")
        add(row(label, stream, result, k_total, args.alpha))
        if (within, budget, most) == (0.05, 1.0, None):
            add(row(f"{label} patience {PATIENCE}", stream, with_patience(result, s.mean(1), PATIENCE), k_total))
        print(f"{stream}: {label}: {time.process_time() - start:.0f} s CPU", flush=True)
    return rows


def replay_trained(name: str, stream: dict, settings, args) -> list[dict]:
    """One trained stream (``trained_streams.load_streams``): its range, the real Tracker's check, and every
    rule's row with the validation-loss rule (cost: teacher-forced images per checkpoint, not decoded)."""
    scores, gts = stream["scores"], dict(enumerate(stream["data"]["gts"]))
    low, high = score_range("CIDEr", gts, gts)
    truth = scores.mean(1)
    best = int(truth.argmax())
    print(f"{name}: {len(truth)} checkpoints on {scores.shape[1]} images, full-split CIDEr-D {truth.min():.4f}-"
          f"{truth.max():.4f} (best {stream['names'][best]}; last {truth[-1]:.4f}; lowest val loss "
          f"{stream['names'][int(np.argmin(stream['val_loss']))]}); range bound {high:.3f}", flush=True)
    if not args.quick and not args.no_check:
        check_against_tracker(stream["names"], scores, stream["data"], high - low, within=0.05, alpha=args.alpha,
                              batch=32, budget=1.0, most=None)
        print(f"{name}: the real Tracker gives the simulated verdicts on replays 0 and 1", flush=True)
    loss = stream["val_loss"]
    extra = [("validation loss (teacher-forced, no decoding)",
              trained_streams.validation_loss(scores, loss, args.replays)),
             (f"validation loss, patience {PATIENCE} (teacher-forced)",
              trained_streams.validation_loss(scores, loss, args.replays, PATIENCE))]
    return replay(name, scores, high - low, settings, args, extra)


def finish(rows: list[dict], args) -> int:
    """Print the table and write it (with its tokenizer) to ``--out``."""
    table = pd.DataFrame(rows)
    table["tokenizer"] = TOKENIZER_NAME
    table["replays"] = args.replays
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table.drop(columns=["tokenizer"]).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if args.out:
        io.write_tsv(table, Path(args.out) / "stream.tsv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
