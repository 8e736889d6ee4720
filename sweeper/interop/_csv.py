"""``--format csv``: the study as a replay table (:func:`sweeper.export.export_csv`)."""

from __future__ import annotations

from sweeper.export import export_csv
from sweeper.interop import Written
from sweeper.store import Storage


def write_csv(store: Storage, target: str | None, *, replace: bool = False) -> Written:
    """Every trial that ran, as a table ``--device replay:`` serves (default path:
    STUDY/replay.csv).  Trials ruled out by constraints (``invalid``) and configs a
    replayed table lacked (``missing``) measured nothing, and a replay table cannot hold
    them, so they are left out; the Parquet export keeps every trial.  An existing file is
    replaced whole (``replace`` changes nothing)."""
    path, count = export_csv(store, target or store.root / "replay.csv")
    return Written(str(path), f"wrote {count} trials to {path} (replay it with "
                   f"--device replay:{path})")
