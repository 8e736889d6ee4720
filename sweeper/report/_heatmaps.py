"""Compute heatmaps (pure pandas): per map, a block × grid table of a rate, the text of
each cell and what the map's colours and red box mean.  :mod:`._draw` only draws them.

What the maps promise a reader:

- Cells are sweep medians.  A winner of the interleaved final was chosen on the medians
  the finalists got when re-measured together, under equal conditions, so a neighbour can
  be brighter in the sweep and still have lost.  The winner's cell therefore shows its
  final rate under its sweep rate (``final 4277``), and the caption says what the cells
  are and that the red box is the final's winner.
- A best-over-meta map names in each cell the meta values that won it (``B=1024``; long
  names are shortened and the caption gives the legend).  Titles name only the
  meta-parameters with more than one value in the problem (``best over BLOCK_M,
  BLOCK_N``, not every one the kernel has, fixed ones included).  The winner's cell shows the
  winner itself, even where another meta value was faster there in the sweep, so the
  red box, the number and the meta values in it are all the winner's.
- One colour scale for every map of the study by default (``scale="study"``), so a 4 %
  spread never fills the whole scale and colours compare across maps; ``"problem"``:
  one per problem; ``"map"``: each map its own range.  The caption says which, and the
  colour bar names the rate and its unit (``colour_label``).
- A cell whose median's 95 % CI is wider than ±:data:`WIDE_CI_PCT` % is marked (hatched,
  its ``±CI`` under its rate), and the caption says how many are and whether the red
  box is one of them: a bright cell whose samples spread widely may be luck, and lose in
  the finals.
- No map of one cell: a map of one meta values' configs that holds a number in one cell
  only is folded into the problem's best-over-meta map (which names in each cell the
  meta values that won it, and says in its caption how many it folds); a best-over-meta
  map of one cell (grid and block fixed) is computed but not drawn (``drawn`` is
  false): the report's tables rank those configs.
- No map twice: a problem of one meta values' configs has its best-over-meta map only
  (its title names no "best over"), the same numbers as that meta values' own.
- No map of one varying axis: where fewer than two of grid, block and the
  meta-parameters vary among a problem's measured configs, its best-over-meta map is
  computed but not drawn (``flat``) and it has no other.  Which maps are drawn is
  :mod:`sweeper.drawn_maps`' rule, the one ``plan`` prices the report by.
- Grid labels are wrapped at spaces to the cell width; one with a piece that still does
  not fit is drawn turned (``label_rotation``), so labels never run into each other.
- A cell with no number says why: ``fail``, ``skip`` (ruled out), ``missing`` (not in a
  replay's table), ``abandoned`` (cut short, clearly slower) or ``again`` (to be measured
  again: its worker process was killed from outside), as the report counts them
  (:data:`MARKS`).
- A map with no number at all (every config in it failed or was ruled out) is computed
  but not drawn (``measured`` is false): an all-"fail" picture with a colour bar over
  nothing says less than the report's line about why nothing was measured.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sweeper.core._units import counted
from sweeper.drawn_maps import ProblemMaps, drawable
from sweeper.kernels import Headline
from sweeper.options import SCALES
from sweeper.outcome import RETRY
from sweeper.report._tables import (
    LABELS,
    PROBLEM_ORDER,
    at_median,
    outcome_labels,
    problem_key,
    rate_column,
    unit,
    value_label,
)
from sweeper.winners import Pick

#: Characters of a grid label that fit one line of a cell (1.25 in at 8 pt).
CELL_CHARS = 16
#: Meta values per line of a cell's text in a best-over-meta map.
META_PER_LINE = 2
#: The word a cell with no number shows, by its trial's status: a config ruled out before
#: it ran, one a replay's table does not hold, one whose sampling was cut short once
#: clearly slower than the best and one to be measured again (its worker process killed
#: from outside) are none of them failures (the run's ``done:`` line and the report count
#: them apart); every other status is the kernel's or the GPU's ``fail``.
MARKS = {"invalid": "skip", "missing": "missing", "abandoned": "abandoned", RETRY: "again"}
#: A cell whose median's 95 % CI is wider than ± this % of the median is marked: beyond
#: it, two configs' medians cannot be told apart (``compare_samples``' ``max_noise``).
WIDE_CI_PCT = 5.0


class HeatmapData(NamedTuple):
    """One heatmap: a block × grid table of a rate and what it is of."""

    name: str                      # file stem
    title: str
    values: pd.DataFrame           # index: block, columns: grid label; NaN where no result
    notes: pd.DataFrame            # same shape: "" or why a cell has no number
    column_labels: list[str]       # tick text for the columns, wrapped to the cell width
    best: tuple[Any, str] | None   # (block, grid label) of the marked cell
    metric: str
    best_note: str = "best"        # what the marked cell is
    won_by: pd.DataFrame | None = None     # best-over-meta maps: the meta values per cell
    best_final: float | None = None        # the marked winner's rate in the final
    scale: tuple[float, float] | None = None   # colour limits shared with other maps
    caption: str = ""              # what the cells, the colour scale and the red box mean
    label_rotation: int = 0        # degrees the column labels are turned
    #: same shape as ``values``: the trial each cell shows (its number; for a cell with no
    #: number, the first failed or ruled-out trial there), NaN where no trial ran
    numbers: pd.DataFrame | None = None
    #: same shape as ``values``: each cell's 95 % CI half-width, in % of its median
    ci_pct: pd.DataFrame | None = None
    #: the colour bar's label: the rate and its unit
    colour_label: str = ""
    #: maps of one cell each that this best-over-meta map folds in (not drawn apart)
    folded: int = 0
    #: fewer than two of grid, block and the meta-parameters vary in its problem: no map
    flat: bool = False

    @property
    def measured(self) -> bool:
        """Whether any cell holds a number (a map without one is not drawn)."""
        return self.cells > 0

    @property
    def cells(self) -> int:
        """How many cells hold a number."""
        return int((~np.isnan(self.values.to_numpy(dtype=float))).sum())

    @property
    def drawn(self) -> bool:
        """Whether the map is drawn: it holds numbers in two cells or more (one cell is no
        map; the report's tables say it) and is not :attr:`flat`."""
        return drawable(self.cells) and not self.flat

    def filled(self) -> list[tuple[Any, Any]]:
        """(block, grid label) of each cell that holds a number."""
        rows, cols = np.nonzero(~np.isnan(self.values.to_numpy(dtype=float)))
        return [(self.values.index[r], self.values.columns[c])
                for r, c in zip(rows, cols, strict=True)]

    @property
    def wide(self) -> pd.DataFrame:
        """Same shape as ``values``: whether each cell's CI is wider than
        ±:data:`WIDE_CI_PCT` % (false where unknown)."""
        return pd.DataFrame(self.wide_cells(), index=self.values.index,
                            columns=self.values.columns)

    def wide_cells(self) -> np.ndarray:
        """:attr:`wide` as an array, without building a table for it (captions count
        the wide cells of every map)."""
        if self.ci_pct is None:
            return np.zeros(self.values.shape, dtype=bool)
        with np.errstate(invalid="ignore"):       # NaN compares false: unknown, not wide
            wide: np.ndarray = (self.ci_pct.to_numpy(dtype=float) > WIDE_CI_PCT) & \
                ~np.isnan(self.values.to_numpy(dtype=float))
        return wide


def heatmaps(df: pd.DataFrame, meta_names: Sequence[str], grid_order: Sequence[str],
             block_order: Sequence[int], *, kernel: str, gpu: str,
             headline: Headline = Headline.GBPS, picks: Mapping[int, Pick] | None = None,
             scale: str = "study") -> list[HeatmapData]:
    """A heatmap per (meta values, problem), plus the best over meta values, problems in
    (dtype, footprint, dimensions, cache) order; maps of one meta values' configs with a
    number in one cell only are folded into the best-over-meta map, a problem where fewer
    than two of grid, block and the meta-parameters vary has only that one, flat (see
    above), and a problem none of whose configs could be launched (every one ruled out:
    one the interpreter merged into another) has none.

    ``picks`` (trial number -> :class:`Pick`) are the configs the study ends with; a map
    marks its problem's pick where the pick lies in it, else its own best cell.
    ``scale``: one of :data:`~sweeper.options.SCALES`."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, but got {scale!r}")
    metric = rate_column(df, headline)
    picks = picks or {}
    problems: list[tuple[list[HeatmapData], dict[str, str]]] = []
    for _, sub in df.groupby(PROBLEM_ORDER, sort=True, dropna=False):
        if (sub["status"] == "invalid").all():     # nothing launched: the report says why
            continue
        text = problem_key(sub.iloc[0])
        resident = sub["flags"].str.contains("L2-resident").any()
        base = f"{kernel} · {text.replace(' ', ' · ')}{' (L2-resident)' if resident else ''}"
        stem = text.replace(" ", "_")
        ok = sub[sub["status"] == "ok"]
        short = short_names([n for n in meta_names if ok[n].nunique() > 1])
        # the titles name only the meta-parameters with more than one value among this
        # problem's configs: one fixed at a value (num_stages: [4]) tells maps apart from
        # nothing, and the best over it is no choice (the file names keep every one)
        varying = [n for n in meta_names if sub[n].nunique(dropna=False) > 1]
        maps, keys = [], []
        groups = sub.groupby(list(meta_names), sort=True) if meta_names else [((), sub)]
        for key, cell_df in groups:
            keys.append(key)
            pairs = list(zip(meta_names, key, strict=True))
            meta_text = " ".join(f"{n}={value_label(v)}" for n, v in pairs if n in varying)
            name = f"{stem}_" + "_".join(f"{n}-{value_label(v)}" for n, v in pairs)
            maps.append(_grid(cell_df, grid_order, block_order, metric, name.rstrip("_"),
                              f"{base} · {meta_text} · {gpu} · {unit(metric)}".replace(
                                  " ·  ·", " ·"), picks, values_in_labels=True))
        over = f" · best over {', '.join(varying)}" if varying else ""
        best = _grid(sub, grid_order, block_order, metric, f"{stem}_best",
                     f"{base}{over} · {gpu} · {unit(metric)}", picks,
                     values_in_labels=False, won_by=short)
        counted_maps = ProblemMaps()
        for key, m in zip(keys, maps, strict=True):
            for block, grid in m.filled():
                counted_maps.add(key, grid, block)
        rule = counted_maps.drawn()
        maps = [m for key, m in zip(keys, maps, strict=True)
                if not m.measured or key in rule.own]
        best = best._replace(folded=rule.folded, flat=rule.flat)
        problems.append(([*maps, best], short))
    everything = [m for maps, _ in problems for m in maps]
    out = []
    for maps, short in problems:
        shared = everything if scale == "study" else maps if scale == "problem" else []
        out += _captioned(maps, shared, scale, short, metric)
    return out


def short_names(names: Sequence[str]) -> dict[str, str]:
    """Short names for meta-parameters in cell text: names of up to 3 characters stay,
    longer ones become their parts' initials (``BLOCK`` -> ``B``, ``BLOCK_M`` -> ``BM``,
    ``num_stages`` -> ``ns``); where two would clash, the full names are kept."""
    short = {n: n if len(n) <= 3 else "".join(p[0] for p in re.split(r"_+", n) if p)
             for n in names}
    return short if len(set(short.values())) == len(short) else {n: n for n in names}


def tick_labels(labels: Sequence[str], width: int = CELL_CHARS) -> tuple[list[str], int]:
    """``labels`` wrapped at spaces to ``width`` characters a line, and the rotation to
    draw them at: 0, or 45 degrees when a piece without spaces is still wider."""
    wrapped = [[line for part in label.split("\n")
                for line in textwrap.wrap(part, width, break_long_words=False,
                                          break_on_hyphens=False) or [""]]
               for label in labels]
    fits = all(len(line) <= width for lines in wrapped for line in lines)
    return ["\n".join(lines) for lines in wrapped], 0 if fits else 45


def cell_text(data: HeatmapData) -> pd.DataFrame:
    """What each cell says: its rate, the meta values that won it (best-over-meta maps),
    the winner's final rate (its cell), or why it has no number."""
    out = data.notes.copy().astype(object)
    wide = data.wide
    for (block, grid), value in data.values.stack().dropna().items():
        lines = [fmt_rate(float(value))]
        if wide.loc[block, grid]:
            lines[0] += f" ±{data.ci_pct.loc[block, grid]:.0f}%"      # type: ignore[union-attr]
        if data.won_by is not None and data.won_by.loc[block, grid]:
            lines.append(data.won_by.loc[block, grid])
        if data.best_final is not None and data.best == (block, grid):
            lines.append(f"final {fmt_rate(data.best_final)}")
        out.loc[block, grid] = "\n".join(lines)
    return out


def fmt_rate(value: float) -> str:
    """A rate for a heatmap cell: whole numbers from 100 up, three significant digits
    below, so every cell stays short and still tells close values apart."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _grid(df: pd.DataFrame, grid_order: Sequence[str], block_order: Sequence[int],
          metric: str, name: str, title: str, picks: Mapping[int, Pick], *,
          values_in_labels: bool, won_by: Mapping[str, str] | None = None) -> HeatmapData:
    # Read as columns of plain values, each cell's first trial kept by a dict: building
    # and sorting a frame for each of a large space's hundreds of maps (most of them
    # blank) was most of the report's tables
    rows, cols = list(block_order), list(grid_order)
    labels, rotation = tick_labels(_column_labels(df, grid_order, values_in_labels))
    cells = list(zip(df["block"].tolist(), df["grid_label"].tolist(), strict=True))
    status, number = outcome_labels(df).tolist(), df["number"].tolist()
    marks: dict[tuple[Any, Any], str] = {}       # each failed cell's first trial's mark
    failed: dict[tuple[Any, Any], Any] = {}      # and its number
    for cell, state, n in zip(cells, status, number, strict=True):
        if state != "ok" and cell not in marks:
            marks[cell], failed[cell] = MARKS.get(state, "fail"), n
    ok = np.flatnonzero(np.array(status, dtype=object) == "ok")
    rate = df[metric].to_numpy(dtype=float)
    # the best first (a stable sort, as the frame's: ties in the study's order), except
    # that the winner's cell shows the winner (see above); a map none of whose configs
    # was measured (most maps of a large space) shows no number, its failed and ruled-out
    # cells marked, and nothing to rank or pick
    ranked = ok[np.argsort(-rate[ok], kind="stable")]
    picked = [i for i in ok if number[i] in picks][:1]
    shown: dict[tuple[Any, Any], int] = {}
    for i in [*picked, *ranked]:
        shown.setdefault(cells[i], int(i))
    values = _table({c: rate[i] for c, i in shown.items()}, rows, cols, np.nan, floats=True)
    ci_pct = df["ci_pct"].to_numpy(dtype=float)
    ci = _table({c: ci_pct[i] for c, i in shown.items()}, rows, cols, np.nan, floats=True)
    winners = None
    if won_by is not None:
        meta = {n: df[n].tolist() for n in won_by}
        winners = _table({c: _meta_text({n: v[i] for n, v in meta.items()}, won_by)
                          for c, i in shown.items()}, rows, cols, "")
    measured = {c for c, i in shown.items() if not np.isnan(rate[i])}
    notes = _table({c: m for c, m in marks.items() if c not in measured}, rows, cols, "")
    # the trial each cell shows: the measured one, else the first that failed there
    numbers = _table({**failed, **{c: number[i] for c, i in shown.items()}}, rows, cols,
                     np.nan, floats=True)
    best, note, final = _marked(values, df.iloc[picked[0]] if picked else None, picks, metric)
    return HeatmapData(name=name, title=title, values=values, notes=notes,
                       column_labels=labels, best=best, metric=metric, best_note=note,
                       won_by=winners, best_final=final,
                       label_rotation=rotation, numbers=numbers, ci_pct=ci,
                       colour_label=LABELS.get(metric, metric))


def _table(cells: Mapping[tuple[Any, Any], Any], rows: list[Any], cols: list[Any],
           empty: Any, floats: bool = False) -> pd.DataFrame:
    """A block x grid table of ``cells`` ((block, grid label) -> value), ``empty`` where a
    cell has nothing; ``floats``: every column float (built from one array: a report
    builds thousands of these)."""
    grid = [[cells.get((b, g), empty) for g in cols] for b in rows]
    if floats:
        return pd.DataFrame(np.array(grid, dtype=float).reshape(len(rows), len(cols)),
                            index=rows, columns=cols)
    return pd.DataFrame(grid, index=rows, columns=cols)


def _meta_text(row: Mapping[str, Any], short: Mapping[str, str]) -> str:
    parts = [f"{s}={value_label(row[n])}" for n, s in short.items()]
    return "\n".join(" ".join(parts[i:i + META_PER_LINE])
                     for i in range(0, len(parts), META_PER_LINE))


def _column_labels(df: pd.DataFrame, grid_order: Sequence[str], with_values: bool
                   ) -> list[str]:
    """Each grid label, with the number of programs when the map has one value for it."""
    programs: dict[str, list[Any]] = {}          # each label's program counts, in order
    for g, p in zip(df["grid_label"], df["grid"], strict=True):
        if not pd.isna(p) and p not in programs.setdefault(g, []):
            programs[g].append(p)
    labels = []
    for g in grid_order:
        grids = programs.get(g, [])
        shown = with_values and len(grids) == 1 and str(int(grids[0])) != g
        labels.append(f"{g}\n={int(grids[0])}" if shown else g)
    return labels


def _marked(values: pd.DataFrame, pick: pd.Series | None, picks: Mapping[int, Pick],
            metric: str) -> tuple[tuple[Any, str] | None, str, float | None]:
    """The cell the red box marks, what it is, and its final rate (a final's winner):
    ``pick`` is the row of the config the study ends with, where it is in the map."""
    if pick is not None and pick["block"] in values.index and \
            pick["grid_label"] in values.columns:
        chosen = picks[pick["number"]]
        if chosen.final is None:
            return (pick["block"], pick["grid_label"]), "best in the sweep", None
        return ((pick["block"], pick["grid_label"]), "winner of the interleaved final",
                at_median(pick[metric], pick["median_ms"], chosen.median_ms))
    rates = values.to_numpy(dtype=float)
    if np.isnan(rates).all():
        return None, "best", None
    # the first highest in reading order (row by row), as a stacked table's idxmax gives
    row, column = np.unravel_index(np.nanargmax(rates), rates.shape)
    return (values.index[row], values.columns[column]), \
        "best of this map" if picks else "best", None


def _captioned(maps: list[HeatmapData], shared: list[HeatmapData], scale: str,
               short: Mapping[str, str], metric: str) -> list[HeatmapData]:
    """A problem's maps with their captions, and the colour range they share with
    ``shared`` (the study's maps, the problem's, or none: each its own)."""
    rate_unit = unit(metric)
    drawn = [m for m in shared if m.drawn]
    numbers = np.concatenate([m.values.to_numpy(dtype=float).ravel() for m in drawn] or
                             [np.array([])])
    numbers = numbers[np.isfinite(numbers)]
    limits = (float(numbers.min()), float(numbers.max())) if numbers.size else None
    out = []
    for m in maps:
        parts = ["cells: sweep medians"]
        if m.won_by is not None and short:
            legend = ", ".join(f"{s} = {n}" for n, s in short.items() if s != n)
            parts.append("under each, the meta values that won it"
                         + (f" ({legend})" if legend else ""))
        if m.folded:
            parts.append(f"it folds {counted(m.folded, 'map')} of one cell "
                         "(one per meta values)")
        if m.best is not None:
            parts.append(f"red: {m.best_note}" + (
                f" ('final': its {rate_unit} when the finalists were re-measured together)"
                if m.best_final is not None else ""))
        count = int(m.wide_cells().sum())
        if count:
            text = (f"hatched: {count} cell{'s' if count > 1 else ''} whose median's 95% CI "
                    f"is wider than ±{WIDE_CI_PCT:g}% (its ± under the rate): not settled")
            if m.best is not None and m.wide.loc[m.best[0], m.best[1]]:
                ci = m.ci_pct.loc[m.best[0], m.best[1]]                 # type: ignore[union-attr]
                text += f", the red box's among them (±{ci:.0f}%)"
            parts.append(text)
        if scale == "map" or limits is None or len(drawn) < 2:
            parts.append("colour: this map's own range")
            chosen = None
        else:
            parts.append(f"colour: one scale for the {'study' if scale == 'study' else 'problem'}"
                         f"'s {len(drawn)} maps ({fmt_rate(limits[0])} to "
                         f"{fmt_rate(limits[1])} {rate_unit})")
            chosen = limits if m.measured else None
        out.append(m._replace(scale=chosen, caption="; ".join(parts)))
    return out
