"""The replay device: timings served from a recorded table, no kernel launched.

``--device replay:PATH.csv`` answers each config from a table that ``sweeper export
STUDY --format csv`` wrote: one column per parameter, named and labelled as in the
space file, then ``status``, ``median_ms`` and ``samples_ms`` (space-separated raw
samples).  Lines starting with ``#`` carry the recorded GPU's facts.  Samplers and
the whole pipeline can then be tested and compared without a GPU.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from sweeper.devices._base import Device, DeviceFacts, Launch
from sweeper.errors import SweeperError
from sweeper.fsio import atomic_write

FORMAT = "sweeper replay table v1"
RESERVED = ("status", "median_ms", "samples_ms")


class ReplayDevice(Device):
    name: ClassVar[str] = "replay"
    torch_device: ClassVar[str] = "cpu"
    replays: ClassVar[bool] = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.header, self.columns, self.rows = read_table(self.path)
        self.note = (f"replay of {self.header.get('gpu', '?')} timings from {self.path}: "
                     "no kernel is launched")
        self._facts = DeviceFacts(name=f"replay: {self.header.get('gpu', '?')}",
                                  sms=int(self.header.get("sms", 1)),
                                  l2_bytes=int(self.header.get("l2_bytes", 0)))
        self.params = [c for c in self.columns if c not in RESERVED]
        self._index = {tuple(row[p] for p in self.params): row for row in self.rows}

    def facts(self) -> DeviceFacts:
        return self._facts

    def lookup(self, choice: Mapping[str, str]) -> dict[str, Any] | None:
        """The recorded row for ``choice`` (axes the table lacks are ignored), or None."""
        missing = [p for p in self.params if p not in choice]
        if missing:
            raise SweeperError(f"{self.path}: the space has no axis {missing[0]!r}, which "
                               "the table records; replay a table of the same space")
        return self._index.get(tuple(str(choice[p]) for p in self.params))

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        raise SweeperError("the replay device serves recorded timings; it cannot time a launch")

    def synchronize(self) -> None:
        return None

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env.update(gpu=self._facts.name, replay_table=str(self.path),
                   recorded=dict(self.header))
        return env


def read_table(path: Path) -> tuple[dict[str, str], list[str], list[dict[str, str]]]:
    """(header facts, column names, rows) of a replay table; errors name the file and line."""
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise SweeperError(f"{path}: cannot read the replay table: {err.strerror}") from None
    header: dict[str, str] = {}
    body = []
    for line in lines:
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                header[key.strip()] = value.strip()
        elif line.strip():
            body.append(line)
    reader = csv.DictReader(body)
    columns = list(reader.fieldnames or [])
    if "median_ms" not in columns:
        raise SweeperError(f"{path}: a replay table needs a median_ms column; it has "
                           f"{', '.join(columns) or 'none'}")
    rows = [dict(r) for r in reader]
    return header, columns, rows


def write_table(path: Path, header: Mapping[str, Any], params: Sequence[str],
                rows: Sequence[Mapping[str, Any]]) -> None:
    """Write a replay table: ``# key: value`` lines, then the CSV."""
    f = io.StringIO(newline="")
    f.write(f"# {FORMAT}\n")
    for key, value in header.items():
        f.write(f"# {key}: {value}\n")
    writer = csv.DictWriter(f, fieldnames=[*params, *RESERVED])
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    atomic_write(path, f.getvalue())
