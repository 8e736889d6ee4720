"""``--format parquet``: every trial of a study, typed, with its raw samples.

One row per trial, the columns of :func:`~sweeper.interop.trials_table` plus
``samples_ms``, the raw samples as a list of float64.  A list column rather than a long
table (one row per sample): every trial keeps exactly one row, failed ones (no samples)
included, its columns are not repeated for each of its 50 samples, and Parquet stores a
list of doubles natively; ``df.explode("samples_ms")`` gives the long table.  The file's
metadata holds the study, kernel, GPU and headline unit (pandas reads them back as
``df.attrs``).  Needs pyarrow (the ``parquet`` extra)."""

from __future__ import annotations

from pathlib import Path

from sweeper.core._spelling import given
from sweeper.errors import SweeperError
from sweeper.export import output_file
from sweeper.fsio import atomic_write
from sweeper.interop import Written
from sweeper.interop._table import trials_table
from sweeper.store import Storage


def write_parquet(store: Storage, target: str | None, *, replace: bool = False
                  ) -> Written:
    """Write the study's trials to ``target`` (default STUDY/trials.parquet), whole or not
    at all; an existing file is replaced (``replace`` changes nothing)."""
    try:
        import pyarrow  # type: ignore[import-untyped]  # noqa: F401  (pandas writes with it)
    except ImportError:
        raise SweeperError(f"{given('format', 'parquet')} needs pyarrow: pip install "
                           "'sweeper[parquet]' (or pyarrow)") from None
    path = target or str(store.root / "trials.parquet")
    output_file(store, path)
    df = trials_table(store, samples=True)
    atomic_write(path, df.to_parquet(engine="pyarrow", index=False))   # no path: its bytes
    return Written(Path(path), f"wrote {len(df)} trials with their raw samples to {path}")
