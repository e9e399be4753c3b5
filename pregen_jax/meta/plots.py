"""The MUTT heatmap: accuracy per corruption (rows) and metric (columns), one panel per k."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import io


def accuracy_grid(table: pd.DataFrame, k: int, corruptions: list[str], metrics: list[str]) -> np.ndarray:
    """f[corruptions, metrics]: accuracy in percent at k references (NaN where not scored)."""
    at_k = table[table["refs"] == k].set_index(["corruption", "metric"])["accuracy"]
    return np.array([[at_k.get((c, m), np.nan) for m in metrics] for c in corruptions], float)


def mutt_heatmap(table: pd.DataFrame, path, title: str) -> Path:
    """Write the heatmap PNG (matplotlib's Agg canvas; no pyplot state)."""
    from matplotlib.figure import Figure
    corruptions = list(dict.fromkeys(table["corruption"]))
    kinds = dict(zip(table["corruption"], table["kind"]))
    metrics = list(dict.fromkeys(table["metric"]))
    ks = sorted(table["refs"].unique())
    fig = Figure(figsize=(1.6 + 0.62 * len(metrics) * len(ks), 1.2 + 0.42 * len(corruptions)), layout="constrained")
    axes = fig.subplots(1, len(ks), sharey=True, squeeze=False)[0]
    image = None
    for ax, k in zip(axes, ks):
        grid = accuracy_grid(table, k, corruptions, metrics)
        image = ax.imshow(grid, vmin=0, vmax=100, cmap="viridis", aspect="auto")
        for (row, col), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(col, row, f"{value:.0f}", ha="center", va="center", fontsize=7,
                        color="black" if value > 60 else "white")
        ax.set_title(f"{k} references", fontsize=9)
        ax.set_xticks(range(len(metrics)), metrics, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(corruptions)), [f"{c} ({kinds[c]})" for c in corruptions], fontsize=7)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="trials passed (%)")
    fig.suptitle(title, fontsize=9)
    path = Path(path)
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=130, format="png")
    return path
