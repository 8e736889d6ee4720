"""A study on disk: ``study.json`` (what, where, with what) and ``trials.jsonl``.

The journal is append-only, one complete JSON object per line, flushed after
every trial: a crash loses at most the trial in flight, and a torn last line is
skipped on load with a warning.  Optuna's own storages were measured too slow
for this (SQLite 2.5x and JournalStorage 1.4x a bare loop on the H200); the
Optuna study is rebuilt in memory from this journal on resume.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import IO, Any

from sweeper.errors import StudyError
from sweeper.fsio import atomic_write
from sweeper.store._records import BaselineRecord, TrialRecord

META = "study.json"
JOURNAL = "trials.jsonl"


class StudyStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._journal: IO[str] | None = None

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def journal_path(self) -> Path:
        return self.root / JOURNAL

    def exists(self) -> bool:
        return (self.root / META).is_file()

    def create(self, meta: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_meta(meta)

    def meta(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / META).read_text())
        except FileNotFoundError:
            raise StudyError(f"{self.root}: no study here (no {META})") from None
        except json.JSONDecodeError as err:
            raise StudyError(f"{self.root / META}: unreadable: {err}") from None

    def update_meta(self, **changes: Any) -> None:
        meta = self.meta()
        meta.update(changes)
        self._write_meta(meta)

    def _write_meta(self, meta: dict[str, Any]) -> None:
        atomic_write(self.root / META, json.dumps(meta, indent=2, sort_keys=True) + "\n")

    def append(self, record: Any) -> None:
        """Append one record (anything with ``to_json()``) and flush it to the file."""
        if self._journal is None:
            self._drop_torn_tail()
            self._journal = open(self.root / JOURNAL, "a")
        self._journal.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
        self._journal.flush()

    def _drop_torn_tail(self) -> None:
        """Cut a last line a crash left unfinished, so new records start on a line of their own."""
        path = self.root / JOURNAL
        if not path.exists() or path.stat().st_size == 0:
            return
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def records(self) -> tuple[list[TrialRecord], list[BaselineRecord]]:
        trials: list[TrialRecord] = []
        baselines: list[BaselineRecord] = []
        path = self.root / JOURNAL
        if not path.exists():
            return trials, baselines
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                if i == len(lines):   # torn by a crash mid-write: that trial is re-run
                    warnings.warn(f"{path}:{i}: incomplete last record skipped", stacklevel=2)
                    continue
                raise StudyError(f"{path}:{i}: not a JSON record") from None
            if data.get("kind") == "baseline":
                baselines.append(BaselineRecord.from_json(data))
            elif data.get("kind", "trial") == "trial":
                trials.append(TrialRecord.from_json(data))
        return trials, baselines

    def raw(self, kind: str) -> list[dict[str, Any]]:
        """The journal's records of another ``kind`` (e.g. ``final``), as dicts."""
        path = self.root / JOURNAL
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue           # a torn last line; records() warns about it
            if data.get("kind") == kind:
                out.append(data)
        return out

    def __enter__(self) -> StudyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
