"""Draw the report's pictures (matplotlib): heatmaps, one-at-a-time effects, footprint
curves and rooflines.  The numbers, cell text and captions come from
:mod:`._heatmaps`, :mod:`._tables`, :mod:`._footprint` and :mod:`._roofline`; this
module only draws them."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.escape import printable
from sweeper.fsio import atomic_write
from sweeper.report._footprint import FootprintCurve
from sweeper.report._heatmaps import HeatmapData, cell_text
from sweeper.report._provenance import approx_size
from sweeper.report._roofline import BESIDE, Roof, Roofline
from sweeper.report._tables import LABELS
from sweeper.space import format_size

#: Resolution of PNGs: cell text at 7-8 pt stays sharp.
DPI = 110
#: The widest a heatmap is drawn (inches).  A map with more grid labels than fit at
#: 1.25 in a column (a grid of 2,000 values) is drawn this wide, its cells without
#: text and a tick on every few columns: cell by cell it took minutes and a 10 MB PNG
#: no one could read.  The best configs stay in the report's tables.
MAX_WIDTH = 40.0
#: Column ticks of a map drawn at :data:`MAX_WIDTH`, at most.
MAX_TICKS = 60


def draw_heatmap(data: HeatmapData, directory: Path, formats: Sequence[str] = ("png",)
                 ) -> list[Path]:
    """Write ``NAME.png`` (and each other of ``formats``) under ``directory``; return their
    paths.  A map with a number in one cell or none writes nothing (see
    :mod:`sweeper.report._heatmaps`)."""
    if not data.drawn:
        return []
    return save_figure(heatmap_figure(data), [directory / f"{data.name}.{f}" for f in formats])


def heatmap_figure(data: HeatmapData) -> Any:
    """The map as a matplotlib figure: cells coloured by rate (on ``data.scale`` when the
    study's or problem's maps share one), the colour bar labelled with the rate and its
    unit, ``cell_text`` in them (dark on light cells, white on dark ones), cells whose CI
    is wide hatched, the marked cell boxed in red, the caption under the title.  Drawn with
    matplotlib alone: seaborn's heatmap costs an import of scipy and a full extra draw."""
    from matplotlib.patches import Rectangle

    values = data.values.astype(float)
    grid = values.to_numpy()
    width = max(6.0, 1.25 * values.shape[1] + 2.5)
    compact = width > MAX_WIDTH                 # no cell text, fewer ticks (see MAX_WIDTH)
    width = min(width, MAX_WIDTH)
    text = np.full(grid.shape, "", dtype=object) if compact else cell_text(data).to_numpy()
    lines = max(str(t).count("\n") + 1 for t in text.ravel())
    height = max(3.5, (0.3 + 0.2 * lines) * values.shape[0] + 2.5)
    fig, ax = subplots(figsize=(width, height))
    vmin, vmax = data.scale if data.scale else (None, None)
    mesh = ax.pcolormesh(np.ma.masked_invalid(grid), cmap="viridis", vmin=vmin, vmax=vmax,
                         edgecolors="white", linewidth=0 if compact else 0.5)
    bar = fig.colorbar(mesh, ax=ax, label=data.colour_label or LABELS.get(data.metric,
                                                                          data.metric))
    bar.outline.set_linewidth(0)
    ax.set(xlim=(0, grid.shape[1]), ylim=(grid.shape[0], 0), facecolor="#dddddd")
    for side in ax.spines.values():
        side.set_visible(False)
    size = 8 if lines <= 2 else 7
    for i in range(0 if compact else grid.shape[0]):
        for j in range(grid.shape[1]):
            number = np.isfinite(grid[i, j])        # else the text says why there is none
            if number or text[i, j]:
                colour = (".15" if _luminance(mesh.to_rgba(grid[i, j])) > .408 else "w"
                          ) if number else "#666666"
                ax.text(j + 0.5, i + 0.5, text[i, j], ha="center", va="center",
                        color=colour, fontsize=size if number else 8)
    wide = data.wide.to_numpy()
    for i, j in zip(*np.nonzero(wide), strict=True):
        ax.add_patch(Rectangle((j, i), 1, 1, fill=False, hatch="///", linewidth=0,
                               edgecolor=(1.0, 0.55, 0.0, 0.9)))
    if data.best is not None:
        row = list(values.index).index(data.best[0])
        col = list(values.columns).index(data.best[1])
        ax.add_patch(Rectangle((col, row), 1, 1, fill=False, edgecolor="red", linewidth=3))
    every = -(-grid.shape[1] // MAX_TICKS) if compact else 1
    rotation = 90 if compact else data.label_rotation
    turned = rotation != 0
    ax.set_xticks(np.arange(0, grid.shape[1], every) + 0.5)
    ax.set_xticklabels(data.column_labels[::every], rotation=rotation, fontsize=8,
                       ha="right" if turned else "center",
                       rotation_mode="anchor" if turned else "default")
    ax.set_yticks(np.arange(grid.shape[0]) + 0.5, [str(b) for b in values.index],
                  va="center")
    ax.set_xlabel("grid (programs)")
    ax.set_ylabel("block (threads per program)")
    caption = data.caption + ("; too many columns to print each cell's number (`sweeper "
                              "export STUDY --format csv` lists them)" if compact else "")
    _titled(ax, data.title, caption, width, fontsize=9)
    return fig


def _luminance(rgba: tuple[float, float, float, float]) -> float:
    """Relative luminance (WCAG) of a colour: above ~0.41 dark text reads better."""
    rgb = np.asarray(rgba[:3])
    linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def matplotlib_imported() -> None:
    """Import what drawing takes (matplotlib's figures and the Agg canvas that writes
    them), so a caller can time it, or have it done before it forks drawing processes.
    No backend is chosen and pyplot is never imported: a figure made here is a
    :class:`~matplotlib.figure.Figure` of its own, saved to files, so a notebook's own
    plots (its inline backend) and figures are as they were after a report."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401


def subplots(*grid: int, figsize: tuple[float, float], **options: Any) -> tuple[Any, Any]:
    """A figure of ``figsize`` inches on an Agg canvas of its own, and its axes
    (``fig.subplots(*grid, **options)``), held by no pyplot state: closed by dropping
    it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(*grid, **options)


def plain_text(fig: Any) -> None:
    """Draw each text of ``fig`` as the characters it holds: its control characters as
    their escapes (:func:`~sweeper.escape.printable`, which the report's tables use too)
    and ``$`` as a dollar sign, never TeX.  Titles, labels and cells carry names from
    the study (a GPU's, a kernel's, a problem's), and a GPU name a study file was edited
    to hold, ``$^$``, stopped the report with matplotlib's math-text ParseSyntaxException,
    where ESC drew as a missing glyph."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        shown = text.get_text()
        if not shown.isprintable():
            text.set_text("\n".join(printable(line) for line in shown.split("\n")))


def save_figure(fig: Any, paths: Sequence[Path]) -> list[Path]:
    """Write ``fig`` to each of ``paths`` in the format its suffix names (each file whole
    or not at all).  PNGs at :data:`DPI`.  Every text is drawn as the characters it
    holds (:func:`plain_text`)."""
    plain_text(fig)
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine, for which every savefig first lays
    # the whole figure out again (its text measured twice); the layout is done
    fig.set_layout_engine(None)
    for path in paths:
        image = io.BytesIO()
        fig.savefig(image, format=path.suffix[1:], dpi=DPI)
        atomic_write(path, image.getvalue())
    return list(paths)


def effect_figure(effect: Any, title: str, metric: str = "gbps") -> Any:
    """A rate against one axis's values, the median's 95 % CI as a band, baseline marked."""
    points = effect.points
    x = np.arange(len(points))
    fig, ax = subplots(figsize=(max(5.0, 0.9 * len(points) + 2), 3.6))
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
    return fig

#: Line colours by cache mode, so a problem's points and its reference share one.
CACHE_COLOURS = {"cold": "tab:blue", "warm": "tab:orange"}


def footprint_figure(curve: FootprintCurve) -> Any:
    """The curve as a matplotlib figure: footprint on a log2 axis, each problem's a tick
    in the largest unit it reaches (:func:`~sweeper.report._provenance.approx_size`), the
    rate from zero."""
    fig, ax = subplots(figsize=(7.5, 4.8))
    for cache, sub in curve.points.groupby("cache", sort=True):
        colour = CACHE_COLOURS.get(str(cache))
        rate = sub["rate"].to_numpy(float)
        ax.errorbar(sub["footprint"], rate, yerr=[rate - sub["lo"].to_numpy(float),
                                                  sub["hi"].to_numpy(float) - rate],
                    marker="o", capsize=3, color=colour, label=f"{cache}: chosen config")
    for cache, ref in curve.ceiling.groupby("cache", sort=True):
        ax.plot(ref["footprint"], ref["rate"], linewidth=1, alpha=0.6,
                color=CACHE_COLOURS.get(str(cache), "grey"),
                label=f"{curve.ceiling_label}, {cache}" if cache else curve.ceiling_label)
    if len(curve.trace):
        ax.plot(curve.trace["footprint"], curve.trace["rate"], linestyle=":", marker=".",
                color="tab:green", label=curve.trace_label.split(" (")[0] + " at every footprint")
    if curve.bound is not None:
        ax.axhline(curve.bound, linestyle="--", color="tab:red", linewidth=1,
                   label=curve.bound_label)
    if curve.l2_footprint:
        ax.axvline(curve.l2_footprint, color="grey", linewidth=1,
                   label=f"L2 {format_size(curve.l2_bytes)}: left of it, the working set fits")
    ax.set_xscale("log", base=2)
    ticks = sorted(curve.points["footprint"].unique())
    # a footprint in the largest unit it reaches (28.6MiB), as the report says sizes it
    # worked out; format_size's exact unit leaves one of no round size in bytes (30000000B)
    ax.set_xticks(ticks, [approx_size(float(t)) for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("footprint (the bytes a problem is named by, log2 scale)")
    ax.set_ylabel(LABELS.get(curve.metric, curve.metric))
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    _titled(ax, curve.title, curve.caption, 7.5)
    return fig


def roofline_figure(roof: Roofline) -> Any:
    """The roofline as a matplotlib figure: log-log, calibrated roofs solid, physical
    bounds dashed, each placed winner labelled with its % of the roof; winners without
    a place listed in a panel beside it."""
    if roof.beside:
        fig, (ax, side) = subplots(1, 2, figsize=(11.5, 5.5),
                                       gridspec_kw={"width_ratios": [3, 1.4]})
    else:
        fig, ax = subplots(figsize=(8.5, 5.5))
    x = np.logspace(*_x_range(roof), 200)
    for kind_calibrated in (True, False):
        _draw_roofs(ax, x, [r for r in roof.roofs if r.calibrated == kind_calibrated])
    for _, p in roof.points.iterrows():
        ax.scatter(p["intensity"], p["flop_s"] / 1e12, zorder=3)
        above = f" ({p['above'].split(':', 1)[0]})" if p["above"] else ""
        ax.annotate(f"{p['kernel']} {p['problem']}\n{p['pct_roof']:.0f}% of roof{above}",
                    (p["intensity"], p["flop_s"] / 1e12), textcoords="offset points",
                    xytext=(5, -12), fontsize=7)
    if roof.beside:
        side.axis("off")
        side.set_title(BESIDE, fontsize=8, loc="left", wrap=True)
        side.text(0, 0.98, "\n".join(textwrap.fill(line, 48, subsequent_indent="  ")
                                     for line in roof.beside), va="top", fontsize=7,
                  transform=side.transAxes)
        ax.plot([], [], " ", label=BESIDE.split(" (")[0] + ": listed at right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved, log scale)")
    ax.set_ylabel("TFLOP/s (log scale)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    _titled(ax, f"roofline · {roof.gpu}", roof.key, 8.5)
    return fig


def draw_roofline(roof: Roofline, paths: list[Path]) -> list[Path]:
    """Write the roofline to each of ``paths`` (format from the suffix)."""
    return save_figure(roofline_figure(roof), paths)


def _draw_roofs(ax: Any, x: np.ndarray, roofs: list[Roof]) -> None:
    """One kind of roofs (calibrated or physical): the memory diagonal up to the highest
    compute roof, each compute roof from where it meets the diagonal."""
    style = "-" if roofs and roofs[0].calibrated else "--"
    memory = next((r for r in roofs if r.kind == "memory"), None)
    compute = [r for r in roofs if r.kind == "compute"]
    top = max((r.per_s for r in compute), default=np.inf)
    if memory:
        y = np.minimum(x * memory.per_s, top) / 1e12
        ax.plot(x, y, style, color="black", linewidth=1.2, label=memory.name)
    for r in compute:
        flat = np.full_like(x, r.per_s / 1e12)
        shown = x * memory.per_s >= r.per_s if memory else np.ones_like(x, dtype=bool)
        ax.plot(x[shown], flat[shown], style, linewidth=1.2, label=r.name)


def _x_range(roof: Roofline) -> tuple[float, float]:
    """log10 of the intensities shown: the points and every ridge, with room around."""
    xs = list(roof.points["intensity"])
    memory = [r.per_s for r in roof.roofs if r.kind == "memory"]
    xs += [c.per_s / m for c in roof.roofs if c.kind == "compute" for m in memory]
    lo, hi = (min(xs), max(xs)) if xs else (0.1, 100.0)
    return float(np.log10(lo) - 1), float(np.log10(hi) + 1)


def _titled(ax: Any, title: str, caption: str, width_in: float, fontsize: int = 8) -> None:
    """Title and caption over the plot, each wrapped to its width (~12 characters an inch
    at 9 pt)."""
    chars = int(12 * width_in)
    ax.set_title(textwrap.fill(title, chars) + "\n" + textwrap.fill(caption, chars),
                 fontsize=fontsize)
