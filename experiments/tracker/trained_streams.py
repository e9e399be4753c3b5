"""The trained streams ``build_streams.py`` writes, read for ``stream.py``, and the validation-loss rule.

A stream is one training run's checkpoints in step order; the validation-loss rule keeps the checkpoint
with the lowest validation loss (mean teacher-forced NLL per token over the validation references, the
rule self-critical.pytorch keeps by with its default ``language_eval=0``). Its cost is one teacher-forced
pass over every validation image per checkpoint: no decoding, no scoring.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def load_streams(folder) -> dict[str, dict]:
    """``<arch>-s<seed>`` -> {names: str[K], scores: f64[K, I] per-image CIDEr-D, val_loss: f64[K], steps: i64[K],
    data: {gts: I lists of reference strings, captions: name -> I caption strings}} for each ``*.npz`` in
    ``folder``, in name order."""
    streams = {}
    for path in sorted(Path(folder).glob("*.npz")):
        saved = np.load(path)
        names = [str(n) for n in saved["names"]]
        captions = {name: [str(c) for c in row] for name, row in zip(names, saved["captions"])}
        streams[path.stem] = {"names": names, "scores": np.asarray(saved["cider"], np.float64),
                              "val_loss": np.asarray(saved["val_loss"], np.float64), "steps": saved["steps"],
                              "data": {"gts": json.loads(str(saved["references"])), "captions": captions}}
    return streams


def validation_loss(scores: np.ndarray, val_loss: np.ndarray, replays: int, patience: int | None = None) -> dict:
    """Keep the checkpoint of lowest validation loss (ties: the earlier); with ``patience``, stop after that many
    checkpoints in a row that do not lower it. Deterministic: the same in every replay.

    Returns kept, cost (teacher-forced images, the whole split per checkpoint evaluated), gap (full-split
    CIDEr-D below the stream's best) as arrays over the replays, and stopped with ``patience``."""
    k_total, n = scores.shape
    truth = scores.mean(1)
    best, misses, stopped = 0, 0, k_total
    for k in range(1, k_total):
        if val_loss[k] < val_loss[best]:
            best, misses = k, 0
        else:
            misses += 1
        if patience is not None and misses >= patience:
            stopped = k + 1
            break
    found = {"kept": np.full(replays, best), "cost": np.full(replays, float(n * stopped)),
             "gap": np.full(replays, truth.max() - truth[best])}
    return found | ({"stopped": np.full(replays, stopped)} if patience is not None else {})


def markdown(tables: list[pd.DataFrame]) -> str:
    """The frontier table of ``stream.py --trained`` runs (their stream.tsv): one row a rule, one column a stream,
    each cell "images per checkpoint: gap median / p90" (and, where the rule stops, the offer it stopped at)."""
    table = pd.concat(tables, ignore_index=True)
    streams = list(dict.fromkeys(table["stream"]))
    lines = ["| rule | " + " | ".join(streams) + " |", "|---|" + "---:|" * len(streams)]
    for method, rows in table.groupby("method", sort=False):
        cells = []
        for stream in streams:
            found = rows[rows["stream"] == stream]
            if found.empty:
                cells.append("")
                continue
            r = found.iloc[0]
            cell = f"{r.images_per_checkpoint:.0f}: {r.gap_median:.3f} / {r.gap_p90:.3f}"
            if "stopped_median" in r and pd.notna(r.stopped_median):
                cell += f" (stop {r.stopped_median:.0f})"
            cells.append(cell)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":  # python experiments/tracker/trained_streams.py runs/*/stream.tsv
    import sys
    print(markdown([pd.read_csv(path, sep="\t") for path in sys.argv[1:]]))
