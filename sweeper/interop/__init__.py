"""A study in other tools' formats: pandas tables, a replay CSV, Parquet, an Optuna study, a
Triton module and a C header of its winners.

:data:`FORMATS` is the table ``sweeper export --format`` and :meth:`Study.export
<sweeper.api.Study.export>` dispatch through: a format's name, the function that writes
it (``module:function``, imported only when that format is asked for, so the CLI's
parser pulls in no pandas or Optuna), what its target is, and its help line.  Each
writer takes the study, the target (``None``: the format's default) and ``replace``, and
returns a :class:`Written`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sweeper._lazy import lazy
from sweeper.core._spelling import given
from sweeper.core._units import counted, did_you_mean
from sweeper.errors import SweeperError

if TYPE_CHECKING:
    from sweeper.interop._table import trials_table
    from sweeper.store import Storage


@dataclass(frozen=True)
class Written:
    """What an export wrote: where (the file's path, or a database's URL as given: a URL
    is no path, ``Path("sqlite:///a.db")`` would drop a slash) and the line saying so."""

    target: Path | str
    line: str


@dataclass(frozen=True)
class Format:
    """One export format: its writer (``module:function``), whether its target is a
    storage URL (``--to``) rather than a file (``-o``), and its help text."""

    writer: str
    help: str
    storage: bool = False


FORMATS: dict[str, Format] = {
    "csv": Format("sweeper.interop._files:write_csv",
                  "a replay table of every trial that ran (default path: STUDY/replay.csv)"),
    "parquet": Format("sweeper.interop._parquet:write_parquet",
                      "every trial, typed, with its raw samples (default path: "
                      "STUDY/trials.parquet; needs pyarrow)"),
    "triton": Format("sweeper.interop._files:write_triton",
                     "a Python module of triton.Configs, key and grid, per GPU (default "
                     "path: STUDY/tuned_configs.py)"),
    "header": Format("sweeper.interop._files:write_header",
                     "a CUDA C kernel's winners as a C header of #defines, per GPU and "
                     "problem (default path: STUDY/tuned.h)"),
    "optuna": Format("sweeper.interop._optuna:write_optuna",
                     "an Optuna study in --to (sqlite:///FILE.db, or a journal file "
                     "path), for optuna.load_study and optuna-dashboard", storage=True),
}


def check_replace(format: str, replace: bool) -> None:
    """``replace`` is for a format kept in a storage (optuna) alone; given with another
    format it is refused, never ignored."""
    found = FORMATS.get(format) if isinstance(format, str) else None
    if replace and not (found is not None and found.storage):
        raise SweeperError(f"{given('replace')}: only for {given('format', 'optuna')}; "
                           f"{given('format', format)} replaces its file whole")


def export(store: Storage, format: str, target: str | None, *, replace: bool = False
           ) -> Written:
    """Write ``store`` in ``format`` to ``target``; an unknown format (or one that is not
    text, from the API) is refused with the known ones, and so is ``replace`` with a
    format that replaces its file whole."""
    check_replace(format, replace)
    if format == "tuning":
        from sweeper.export import export_study

        path, entries = export_study(store, target)
        return Written(path, f"wrote {counted(len(entries), 'entry', 'entries')} to {path}")
    found = FORMATS.get(format) if isinstance(format, str) else None
    if found is None:
        known = ("tuning", *FORMATS)
        hint = did_you_mean(format.lower(), known) if isinstance(format, str) else ""
        raise SweeperError(f"format {format!r} is unknown; allowed: {', '.join(known)}{hint}")
    module, _, function = found.writer.partition(":")
    writer = getattr(importlib.import_module(module), function)
    written: Written = writer(store, target, replace=replace)
    return written


__getattr__ = lazy(__name__, {"trials_table": "._table"})  # pandas only when a table is asked for


__all__ = ["FORMATS", "Format", "Written", "check_replace", "export", "trials_table"]
