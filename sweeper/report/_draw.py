"""Draw heatmaps (seaborn); the numbers come from :func:`sweeper.report._tables.heatmaps`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.report._tables import LABELS, HeatmapData


def draw_heatmap(data: HeatmapData, directory: Path) -> list[Path]:
    """Write ``NAME.png`` and ``NAME.svg`` under ``directory``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.patches import Rectangle

    values = data.values.astype(float)
    annot = np.empty(values.shape, dtype=object)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values.iat[i, j]
            annot[i, j] = _fmt(v) if np.isfinite(v) else data.notes.iat[i, j]
    width = max(6.0, 1.25 * values.shape[1] + 2.5)
    height = max(3.5, 0.6 * values.shape[0] + 2.0)
    fig, ax = plt.subplots(figsize=(width, height))
    sns.heatmap(values, annot=annot, fmt="", cmap="viridis", ax=ax, linewidths=0.5,
                linecolor="white", cbar_kws={"label": LABELS.get(data.metric, data.metric)},
                mask=~np.isfinite(values.to_numpy()))
    ax.set_facecolor("#dddddd")
    for i in range(values.shape[0]):            # notes for masked cells
        for j in range(values.shape[1]):
            if not np.isfinite(values.iat[i, j]) and annot[i, j]:
                ax.text(j + 0.5, i + 0.5, annot[i, j], ha="center", va="center",
                        color="#666666", fontsize=8)
    if data.best is not None:
        row = list(values.index).index(data.best[0])
        col = list(values.columns).index(data.best[1])
        ax.add_patch(Rectangle((col, row), 1, 1, fill=False, edgecolor="red", linewidth=3))
    ax.set_xticklabels(data.column_labels, rotation=0, fontsize=8)
    ax.set_xlabel("grid (programs)")
    ax.set_ylabel("block (threads = num_warps × 32)")
    title = textwrap.fill(data.title, width=int(11 * width))      # ~11 characters an inch
    ax.set_title(title + (f"\n(red: {data.best_note})" if data.best is not None else ""),
                 fontsize=10)
    return _save(fig, directory, data.name)


def _save(fig: Any, directory: Path, stem: str) -> list[Path]:
    """Write ``stem``.png and ``stem``.svg under ``directory`` and close the figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{stem}.png", directory / f"{stem}.svg"]
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def draw_effect(effect: Any, title: str, directory: Path, metric: str = "gbps") -> list[Path]:
    """A rate against one axis's values, the median's 95 % CI as a band, baseline marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = effect.points
    x = np.arange(len(points))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(points) + 2), 3.6))
    ax.fill_between(x, points["lo"].astype(float), points["hi"].astype(float), alpha=0.3,
                    label="95% CI of the median")
    ax.plot(x, points["rate"].astype(float), marker="o", label="median")
    base = list(points["label"]).index(effect.baseline)
    ax.axvline(base, color="grey", linestyle="--", linewidth=1, label="baseline")
    ax.set_xticks(x, [str(v) for v in points["label"]], fontsize=8)
    ax.set_xlabel(effect.axis)
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.set_title(f"{title}: {effect.axis} alone (best/worst {effect.ratio:.2f}x"
                 f"{', beyond noise' if effect.beyond_noise else ', within noise'})",
                 fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, directory, f"oat_{effect.axis}")
