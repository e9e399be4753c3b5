"""The study's two figures: criterion value vs CIDEr per checkpoint, and pairwise accuracy per criterion."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def criteria_vs_cider(checkpoints: dict[str, pd.DataFrame], shown: dict[str, list[tuple[str, str]]], path: Path):
    """One row per corpus, one panel per criterion: its value (x) against CIDEr (y), one point per
    checkpoint, coloured by architecture. ``shown``: corpus -> [(panel title, column)]."""
    plt = _pyplot()
    corpora = list(checkpoints)
    columns = max(len(v) for v in shown.values())
    fig, axes = plt.subplots(len(corpora), columns, figsize=(3.2 * columns, 3.0 * len(corpora)), squeeze=False)
    colours = {"init": "tab:blue", "pre": "tab:orange", "par": "tab:green", "merge": "tab:red"}
    for row, corpus in enumerate(corpora):
        frame = checkpoints[corpus]
        for col in range(columns):
            ax = axes[row][col]
            if col >= len(shown[corpus]):
                ax.axis("off")
                continue
            title, column = shown[corpus][col]
            for arch, part in frame.groupby("architecture"):
                ax.scatter(part[column], part["CIDEr"], s=10, color=colours.get(arch), label=arch)
            ax.set_title(f"{corpus}: {title}", fontsize=7)
            ax.set_xlabel(column, fontsize=6)
            ax.tick_params(labelsize=6)
            if col == 0:
                ax.set_ylabel("CIDEr (beam 3, validation)", fontsize=7)
            values = frame[column].to_numpy(float)
            if (values > 0).all() and values.max() > 100 * values.min():
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(plt.NullFormatter())
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def accuracy_bars(selection: pd.DataFrame, path: Path):
    """Pairwise accuracy (all pairs and significant pairs) of every criterion, per corpus."""
    plt = _pyplot()
    corpora = list(dict.fromkeys(selection["corpus"]))
    fig, axes = plt.subplots(len(corpora), 1, figsize=(8, 3.8 * len(corpora)), squeeze=False)
    for ax, corpus in zip(axes[:, 0], corpora):
        part = selection[selection["corpus"] == corpus]
        y = np.arange(len(part))
        ax.barh(y - 0.2, part["pairwise_accuracy"], height=0.4, label="all pairs")
        ax.barh(y + 0.2, part["significant_pairwise_accuracy"], height=0.4, label="significant pairs")
        ax.set_yticks(y, [f"{label} ({metric})" if metric not in label else label
                          for label, metric in zip(part["label"], part["metric"])], fontsize=6)
        ax.invert_yaxis()
        ax.axvline(0.5, color="grey", lw=0.5)
        ax.axvline(0.9, color="grey", lw=0.5, ls="--")
        ax.set_xlim(0, 1)
        ax.set_title(f"{corpus}: orders checkpoint pairs as CIDEr does", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
