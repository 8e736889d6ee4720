"""Draw heatmaps (seaborn); the numbers, cell text and captions come from
:func:`sweeper.report._heatmaps.heatmaps`."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.fsio import atomic_write
from sweeper.report._heatmaps import HeatmapData, cell_text
from sweeper.report._tables import LABELS


def draw_heatmap(data: HeatmapData, directory: Path) -> list[Path]:
    """Write ``NAME.png`` and ``NAME.svg`` under ``directory``; return their paths.  A map
    with no number at all writes nothing (see :mod:`sweeper.report._heatmaps`)."""
    if not data.measured:
        return []
    return _save(heatmap_figure(data), directory, data.name)


def heatmap_figure(data: HeatmapData) -> Any:
    """The map as a matplotlib figure: cells coloured by rate (on ``data.scale`` when the
    problem's maps share one), ``cell_text`` in them, the marked cell boxed in red, the
    caption under the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.patches import Rectangle

    values = data.values.astype(float)
    text = cell_text(data).to_numpy()
    lines = max(str(t).count("\n") + 1 for t in text.ravel())
    width = max(6.0, 1.25 * values.shape[1] + 2.5)
    height = max(3.5, (0.3 + 0.2 * lines) * values.shape[0] + 2.5)
    fig, ax = plt.subplots(figsize=(width, height))
    vmin, vmax = data.scale if data.scale else (None, None)
    sns.heatmap(values, annot=text, fmt="", cmap="viridis", ax=ax, linewidths=0.5,
                linecolor="white", vmin=vmin, vmax=vmax,
                annot_kws={"fontsize": 8 if lines <= 2 else 7},
                cbar_kws={"label": LABELS.get(data.metric, data.metric)},
                mask=~np.isfinite(values.to_numpy()))
    ax.set_facecolor("#dddddd")
    for i in range(values.shape[0]):            # notes for masked cells
        for j in range(values.shape[1]):
            if not np.isfinite(values.iat[i, j]) and text[i, j]:
                ax.text(j + 0.5, i + 0.5, text[i, j], ha="center", va="center",
                        color="#666666", fontsize=8)
    if data.best is not None:
        row = list(values.index).index(data.best[0])
        col = list(values.columns).index(data.best[1])
        ax.add_patch(Rectangle((col, row), 1, 1, fill=False, edgecolor="red", linewidth=3))
    turned = data.label_rotation != 0
    ax.set_xticklabels(data.column_labels, rotation=data.label_rotation, fontsize=8,
                       ha="right" if turned else "center",
                       rotation_mode="anchor" if turned else "default")
    ax.set_xlabel("grid (programs)")
    ax.set_ylabel("block (threads = num_warps × 32)")
    chars = int(12 * width)                       # ~12 characters an inch at 9 pt
    ax.set_title(textwrap.fill(data.title, width=chars) + "\n" +
                 textwrap.fill(data.caption, width=chars), fontsize=9)
    return fig


def _save(fig: Any, directory: Path, stem: str) -> list[Path]:
    """Write ``stem``.png and ``stem``.svg under ``directory`` and close the figure."""
    return save_figure(fig, [directory / f"{stem}.png", directory / f"{stem}.svg"])


def save_figure(fig: Any, paths: list[Path]) -> list[Path]:
    """Write ``fig`` to each of ``paths`` in the format its suffix names (each file whole
    or not at all) and close the figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    for path in paths:
        image = io.BytesIO()
        fig.savefig(image, format=path.suffix[1:], dpi=110)
        atomic_write(path, image.getvalue())
    plt.close(fig)
    return paths


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
