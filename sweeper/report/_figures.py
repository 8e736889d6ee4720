"""Which pictures a report shows, and drawing only those whose input changed.

Each picture is a :class:`Figure`: a file stem, a module-level function that builds a
matplotlib figure and its arguments (the computed tables).  Its *key* hashes those
arguments, the drawing code (the bytes of the module that draws), matplotlib's version
and the PNG resolution; ``heatmaps/manifest.json`` records the key each file was drawn
from.  A file whose key and file are unchanged is kept; a picture whose input changed is
drawn again, and its files in formats not asked for this time are removed (they would show
old numbers); files the manifest lists that the report no longer shows are removed too.
A file sweeper did not draw (not in the manifest) is never touched.

Drawing runs in this process, or in a pool of forked processes (matplotlib is not
thread-safe; a forked worker starts in milliseconds without importing anything again) when
there are at least :data:`POOL_MIN` pictures to draw and :data:`POOL_CPUS` CPUs.  On two
shared CPUs the pool was no faster than drawing in this process
(``benchmarks/report_speed.py``), so it is left to machines with more.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sweeper.fsio import atomic_write, make_dirs
from sweeper.report import _draw
from sweeper.report._contents import ReportTables

#: The manifest's name in the pictures' folder.
MANIFEST = "manifest.json"
#: Fewest pictures to draw, and fewest CPUs, for which a pool of processes is used.
POOL_MIN = 4
POOL_CPUS = 4
#: Seconds a report's first pictures are taken to need before any was drawn, against a
#: deadline: a pool's start and its first pictures (the 8 maps of spaces/copy.yaml took
#: 0.5-0.6 s in a pool on the H100 and H200 machines), or the plotting library's first
#: figure alone (0.4 s on the H200).  Without it a deadline 0.5 s away started a pool
#: that drew nothing in 0.6 s, waited for as its pictures ran on (an H100, `--time 6s` on
#: spaces/matmul-shapes.yaml ended at 6.54 s).
FIRST_PICTURE_S = 0.6


class Figure(NamedTuple):
    """One picture of a report: ``build(*args)`` returns the matplotlib figure."""

    stem: str
    build: Callable[..., Any]
    args: tuple[Any, ...]


class Rendered(NamedTuple):
    """The pictures' files: every one the report shows, and those drawn this time; and the
    seconds this process spent importing the plotting library to draw them (a report's
    cost whatever its maps, not its pictures'; 0 where none was drawn or it was loaded)."""

    images: list[Path]
    drawn: list[Path]
    imported_s: float = 0.0
    #: the stems of the pictures left undrawn at the deadline (the report shows none of
    #: them, and the next report draws them)
    left: tuple[str, ...] = ()


def report_figures(tables: ReportTables) -> list[Figure]:
    """The pictures of a report, in the order it shows them: heatmaps that hold numbers in
    two cells or more, one-at-a-time effects, footprint curves, the roofline."""
    kernel, metric = tables.meta.kernel, tables.metric
    out = [Figure(m.name, _draw.heatmap_figure, (m,)) for m in tables.heatmaps if m.drawn]
    out += [Figure(f"oat_{e.axis}", _draw.effect_figure, (e, kernel, metric))
            for e in tables.effects if not e.unvaried]
    out += [Figure(c.name, _draw.footprint_figure, (c,)) for c in tables.footprint]
    if tables.roofline is not None:
        out.append(Figure("roofline", _draw.roofline_figure, (tables.roofline,)))
    return out


def render(figures: Sequence[Figure], directory: Path, formats: Sequence[str] = ("png",),
           *, redraw: bool = False, workers: int | None = None,
           deadline: float | None = None) -> Rendered:
    """Write each figure in each of ``formats`` under ``directory``, drawing only those
    whose key or file changed (all with ``redraw``); ``workers``: processes to draw in
    (default: one per CPU where a pool pays, see above; else this process alone).  A
    ``deadline`` (``time.perf_counter()``'s clock; None: none) starts no picture that the
    longest drawn so far (before any: ``FIRST_PICTURE_S``) says would end past it: those
    left are not shown, their old files are removed as stale, and the next report draws
    them."""
    old = _manifest(directory)
    code = _code_key()
    keys = {f.stem: figure_key(f, code) for f in figures}
    todo: list[tuple[Figure, list[Path]]] = []
    images: list[Path] = []
    for f in figures:
        paths = [directory / f"{f.stem}.{x}" for x in formats]
        images += paths
        stale = [p for p in paths
                 if redraw or old.get(p.name) != keys[f.stem] or not p.is_file()]
        if stale:
            todo.append((f, stale))
    imported_s = 0.0
    if deadline is not None and time.perf_counter() + FIRST_PICTURE_S > deadline:
        drawn: list[Path] = []          # not even the first picture would be done in time
    else:
        if todo:
            make_dirs(directory)
            # here, before any drawing process is forked (they inherit it), and timed apart
            start = time.perf_counter()
            _draw.matplotlib_imported()
            imported_s = time.perf_counter() - start
        drawn = _draw_all(todo, workers, deadline)
    done = set(drawn)
    left = tuple(f.stem for f, stale in todo if not set(stale) <= done)
    images = [p for p in images if p.stem not in left]
    record = {p.name: keys[p.stem] for p in images}
    for name, key in old.items():     # files not asked for: kept while they are current
        if name not in record:
            if keys.get(Path(name).stem) == key:
                record[name] = key
            else:
                (directory / name).unlink(missing_ok=True)
    if record or old:
        atomic_write(directory / MANIFEST, json.dumps(
            {"version": 1, "files": dict(sorted(record.items()))}, indent=1) + "\n")
    return Rendered(images, drawn, imported_s, left)


def figure_key(figure: Figure, code: str) -> str:
    """What a picture is drawn from, hashed: its stem, builder and arguments, and ``code``
    (:func:`_code_key`: the drawing code, matplotlib's version and the resolution)."""
    h = hashlib.sha256(code.encode())
    h.update(f"{figure.stem}\0{figure.build.__qualname__}\0".encode())
    h.update(json.dumps(figure.args, default=_content).encode())
    return h.hexdigest()[:32]


def _code_key() -> str:
    import matplotlib

    h = hashlib.sha256(f"{matplotlib.__version__}\0{_draw.DPI}\0".encode())
    h.update(Path(_draw.__file__ or "").read_bytes())
    return h.hexdigest()


def _content(value: Any) -> Any:
    """What JSON does not write itself (frames, arrays, numpy scalars, dataclasses, enums),
    in a form that depends only on its content: a frame as its values, index, columns and
    dtypes."""
    if isinstance(value, pd.DataFrame | pd.Series):
        frame = value.to_frame() if isinstance(value, pd.Series) else value
        return [type(value).__name__, [str(t) for t in frame.dtypes], frame.to_json(
            orient="split", double_precision=15, default_handler=str)]
    if isinstance(value, np.ndarray):
        return [str(value.dtype), value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, dataclasses.asdict(value)]
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return f"{type(value).__name__}:{value!r}"


def _manifest(directory: Path) -> dict[str, str]:
    """The key of each file drawn before; nothing (all drawn again) when the manifest is
    missing or not one sweeper wrote."""
    try:
        files = json.loads((directory / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    ok = isinstance(files, dict) and all(isinstance(v, str) for v in files.values())
    return {str(k): v for k, v in files.items()} if ok else {}


def _draw_all(todo: Sequence[tuple[Figure, list[Path]]], workers: int | None,
              deadline: float | None = None) -> list[Path]:
    """The files of ``todo`` drawn: in order, in this process or a pool, until a picture
    would end past ``deadline`` (by the longest drawn so far; in a pool, a picture not
    done at the deadline is cancelled where it has not started, and left out)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if workers is None:
        workers = (cpus or 1) if len(todo) >= POOL_MIN and (cpus or 1) >= POOL_CPUS else 1
    count = min(workers, len(todo))
    if count < 2:
        out: list[Path] = []
        longest = 0.0
        for job in todo:
            start = time.perf_counter()
            if deadline is not None and start + longest > deadline:
                break
            out += _draw_one(job)
            longest = max(longest, time.perf_counter() - start)
        return out
    import multiprocessing

    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_draw_one, job) for job in todo]
        drawn: list[Path] = []
        for future in futures:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                drawn += future.result(timeout=wait)
            except TimeoutError:
                pool.shutdown(wait=True, cancel_futures=True)
                break
        return drawn


def _draw_one(job: tuple[Figure, list[Path]]) -> list[Path]:
    figure, paths = job
    return _draw.save_figure(figure.build(*figure.args), paths)
