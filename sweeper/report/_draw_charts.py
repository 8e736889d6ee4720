"""Draw footprint curves and rooflines (matplotlib); the numbers and what each mark means
come from :mod:`._footprint` and :mod:`._roofline`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.report._draw import pyplot, save_figure
from sweeper.report._footprint import FootprintCurve
from sweeper.report._roofline import BESIDE, Roof, Roofline
from sweeper.report._tables import LABELS
from sweeper.space import format_size

#: Line colours by cache mode, so a problem's points and its reference share one.
CACHE_COLOURS = {"cold": "tab:blue", "warm": "tab:orange"}


def draw_footprint(curve: FootprintCurve, directory: Path,
                   formats: Sequence[str] = ("png",)) -> list[Path]:
    """Write ``NAME.png`` (and each other of ``formats``) of the curve under ``directory``."""
    return save_figure(footprint_figure(curve),
                       [directory / f"{curve.name}.{f}" for f in formats])


def footprint_figure(curve: FootprintCurve) -> Any:
    """The curve as a matplotlib figure: footprint on a log2 axis, the rate from zero."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
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
    if curve.l2_bytes:
        ax.axvline(curve.l2_bytes, color="grey", linewidth=1,
                   label=f"L2 {format_size(curve.l2_bytes)}")
    ax.set_xscale("log", base=2)
    ticks = sorted(curve.points["footprint"].unique())
    ax.set_xticks(ticks, [format_size(int(t)) for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("footprint (bytes of the problem, log2 scale)")
    ax.set_ylabel(LABELS.get(curve.metric, curve.metric))
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    _titled(ax, curve.title, curve.caption, 7.5)
    return fig


def roofline_figure(roof: Roofline) -> Any:
    """The roofline as a matplotlib figure: log-log, calibrated roofs solid, physical
    bounds dashed, each placed winner labelled with its % of the roof; winners without
    a place listed in a panel beside it."""
    plt = pyplot()
    if roof.beside:
        fig, (ax, side) = plt.subplots(1, 2, figsize=(11.5, 5.5),
                                       gridspec_kw={"width_ratios": [3, 1.4]})
    else:
        fig, ax = plt.subplots(figsize=(8.5, 5.5))
    x = np.logspace(*_x_range(roof), 200)
    for kind_calibrated in (True, False):
        _draw_roofs(ax, x, [r for r in roof.roofs if r.calibrated == kind_calibrated])
    for _, p in roof.points.iterrows():
        ax.scatter(p["intensity"], p["flop_s"] / 1e12, zorder=3)
        ax.annotate(f"{p['kernel']} {p['problem']}\n{p['pct_roof']:.0f}% of roof",
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
    caption = ("solid: measured by " + roof.ceilings_from if roof.ceilings_from else
               "no calibrated ceilings") + "; dashed: physical bounds"
    _titled(ax, f"roofline · {roof.gpu}", caption, 8.5)
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


def _titled(ax: Any, title: str, caption: str, width_in: float) -> None:
    chars = int(12 * width_in)
    ax.set_title(textwrap.fill(title, chars) + "\n" + textwrap.fill(caption, chars),
                 fontsize=8)
