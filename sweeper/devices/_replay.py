"""The replay device: timings served from a recorded table, no kernel launched.

``--device replay:PATH.csv`` answers each config from a table that ``sweeper export
STUDY --format csv`` wrote: one column per parameter, named and labelled as in the
space file, then ``status``, ``median_ms`` and ``samples_ms`` (space-separated raw
samples), and where a config failed, ``reason``: why, as its trial recorded it.  Lines
starting with ``#`` carry the recorded GPU's facts, and ``max_footprint`` where that
device capped problems (the interpreter): the rows' sizes are those asked, measured
shrunk under it, and the replay shrinks them the same way.  Samplers and the whole pipeline can
then be tested and compared without a GPU.

The table is also a spreadsheet's: a cell that would start a formula (a label
``=HYPERLINK(...)``) is written with ``'`` in front and read back without it
(:func:`sweeper.escape.csv_cell`), so a label replays as the label it was.
"""

from __future__ import annotations

import array
import csv
import functools
import hashlib
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any, ClassVar

from sweeper.bounds import Bounds
from sweeper.core import DeviceFacts, Space, bulk
from sweeper.core._configs import Lazy
from sweeper.devices._base import Device, Launch
from sweeper.errors import DataError, SweeperError
from sweeper.escape import FORMULA_START, csv_cell, csv_uncell, printable
from sweeper.fsio import atomic_write

FORMAT = "sweeper replay table v1"
#: The columns a table holds beside the axes: what was measured, and why a config failed
#: (written only where one did).
MEASURED = ("status", "median_ms", "samples_ms")
RESERVED = (*MEASURED, "reason")
#: The shortest time (ms) a table may hold for one launch.  0.1 us is below the CUDA
#: event timer's resolution (about 0.5 us) and below what any kernel launch takes on a
#: GPU end to end (microseconds, even replayed from a CUDA graph), so a number under
#: it is a unit mix-up or corruption, and it would make a config look thousands of
#: times faster than possible.  Every median in the recorded H200 tables is >= 0.0075 ms.
MIN_MS = 1e-4
#: Header facts that must be whole numbers, and the least each may be.
NUMERIC_FACTS = {"sms": 1, "l2_bytes": 0, "max_footprint": 1}


class ReplayDevice(Device):
    """Serves each config the recorded row of a table ``sweeper export --format csv`` wrote
    (``replay:PATH.csv``), launching nothing, so samplers and the pipeline run on a GPU's
    real timings without one; its facts are the recorded GPU's, and a table whose columns
    are not the space's axes is refused before a trial runs."""

    name: ClassVar[str] = "replay"
    torch_device: ClassVar[str] = "cpu"
    argument: ClassVar[str | None] = "PATH.csv"
    replays: ClassVar[bool] = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        raw = table_bytes(self.path)
        #: the hash of the table's bytes: the table a study's fingerprint compares, however
        #: its path is written (:meth:`planned_environment`)
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.header, self.columns, self.rows = read_table(self.path, raw)
        self.note = (f"replay of {self.header.get('gpu', '?')} timings from {self.path}: "
                     "no kernel is launched")
        self._facts = DeviceFacts(name=f"replay: {self.header.get('gpu', '?')}",
                                  sms=int(self.header.get("sms", 1)),
                                  l2_bytes=int(self.header.get("l2_bytes", 0)),
                                  max_footprint=_cap(self.header))
        self.params = [c for c in self.columns if c not in RESERVED]

    def facts(self) -> DeviceFacts:
        return self._facts

    def bounds(self) -> Bounds:
        return Bounds.none(self._facts.name, "replayed timings are served as recorded; the "
                           "table does not record the GPU's clocks and bus width")

    def check_space(self, space: Space, *, user_code: bool = True) -> None:
        """Refuse a table that does not record every axis of ``space`` (each config would
        silently get the median of whichever row matched the other axes) or records an
        axis the space lacks.  A meta-parameter without a column is accepted where the
        space holds it at the kernel's default alone: the table was recorded before the
        kernel declared it, when every launch ran at that default.  ``user_code=False``
        (``plan``): a user kernel's defaults are those its source gives in literals, its
        module not imported."""
        from sweeper.plugins import kernel_declaration

        declared = kernel_declaration(space.kernel, user_code=user_code,
                                      params={a.name: list(a.labels) for a in space.axes})
        implied = implied_axes(declared.meta_params, self.params)
        self._check_axes([a.name for a in space.axes
                          if implied.get(a.name, (None,)) != a.labels[:2]], space.path)

    def _check_axes(self, axes: Sequence[str], space_path: str) -> None:
        missing = [a for a in axes if a not in self.params]
        if missing:
            raise _bad(self.path, self.rows.line,
                       f"no column {missing[0]!r} for the axis {missing[0]} of {space_path}; "
                       f"the table has {', '.join(self.params) or 'no parameter'} columns; "
                       "replay a table recorded with the same axes")
        extra = [p for p in self.params if p not in axes]
        if extra:
            raise _bad(self.path, self.rows.line,
                       f"column {extra[0]!r} is not an axis of {space_path} (its axes: "
                       f"{', '.join(axes)}); replay a table recorded with the same axes")

    def lookup(self, choice: Mapping[str, str],
               meta_params: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The recorded row for ``choice``, or None; a choice over other axes than the
        table's is refused (see :meth:`check_space`), but for the kernel's
        ``meta_params`` (name -> MetaParam) the table lacks, which the choice must hold
        at their defaults."""
        implied = implied_axes(meta_params or {}, self.params)
        if any(str(choice[k]) != v for k, (v,) in implied.items() if k in choice):
            return None
        choice = {k: v for k, v in choice.items() if k not in implied}
        if set(choice) != set(self.params):
            self._check_axes(list(choice), "the space")
        place = self.rows.places.get(tuple(str(choice[p]) for p in self.params))
        return None if place is None else self.rows[place]

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        raise SweeperError("the replay device serves recorded timings; it cannot time a launch")

    def synchronize(self) -> None:
        return None

    def planned_environment(self) -> dict[str, str]:
        """The table it serves: its path as the device was given it (``replay_table``,
        what messages name) and the hash of its contents (``replay_table_sha256``, what a
        study's fingerprint compares: the same file named another way, or a copy, is the
        same table, and a table edited in place is another study's measurements)."""
        return {"replay_table": str(self.path), "replay_table_sha256": self.sha256}

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env.update(gpu=self._facts.name, recorded=dict(self.header),
                   **self.planned_environment())
        return env


def _cap(header: Mapping[str, str]) -> int | None:
    """The cap on footprints the recorded device measured under (``max_footprint``, the
    interpreter's), which the replay keeps: each row's sizes are those its space asked
    for, and its timings those of the problem the cap shrank them to, so a replay shrinks
    them the same way and computes its rates over the problem measured."""
    cap = header.get("max_footprint")
    return int(cap) if cap else None


def implied_axes(meta_params: Mapping[str, Any], columns: Sequence[str]
                 ) -> dict[str, tuple[str]]:
    """The meta-parameters a table has no column for, each with its default's label: a
    table recorded before the kernel declared them, when every launch ran at that
    default, answers for configs that hold them there."""
    return {name: (str(p.default),) for name, p in meta_params.items() if name not in columns}


def table_bytes(path: Path) -> bytes:
    """The bytes of the replay table at ``path``; a DataError where it is not a regular
    file that can be read."""
    try:
        if path.exists() and not path.is_file():  # /dev/zero would be read without end
            raise _bad(path, None, "not a regular file; a replay table is a CSV file")
        return path.read_bytes()
    except OSError as err:                        # a name too long raises in exists() too
        raise _bad(path, None, f"cannot read the replay table: {err.strerror}") from None
    except ValueError:                            # a NUL in the name
        raise _bad(path, None, "not a file name (it holds a NUL character)") from None


def table_sha256(path: str | Path) -> str | None:
    """The hash of the contents of the table at ``path``, as
    :meth:`ReplayDevice.planned_environment` gives it; None where ``path`` holds no
    regular file that can be read."""
    try:
        return hashlib.sha256(table_bytes(Path(path))).hexdigest()
    except DataError:                             # none there, unreadable, a bad name
        return None


@bulk()                                     # 10⁶ rows are millions of strings and tuples
def read_table(path: Path, raw: bytes | None = None
               ) -> tuple[dict[str, str], list[str], Rows]:
    """(header facts, column names, rows) of a replay table (``raw``: its bytes, where
    read already), every row checked: a table is data from outside, so a value that is
    not a recorded outcome or a plausible time refuses the whole table with
    ``table.csv:LINE: what is wrong``."""
    if raw is None:
        raw = table_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise _bad(path, None, f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset "
                           f"{err.start}); a replay table is what `sweeper export STUDY "
                           "--format csv` writes") from None
    facts = 0                               # where the lines of facts at the top end
    while text.startswith("#", facts):
        facts = text.find("\n", facts) + 1 or len(text)
    rest = text[facts:].removesuffix("\n")
    if rest and "\n#" not in rest:
        # the common shape: the facts, then the CSV, read whole
        header = _facts(path, enumerate(text[:facts].split("\n"), 1))
        read = _rows_at_once(path, text.count("\n", 0, facts) + 1, rest)
        if read is not None:
            return header, *read
    lines = text.split("\n")
    header = _facts(path, enumerate(lines, 1))
    body = [(number, line + "\n") for number, line in enumerate(lines, 1)
            if not line.startswith("#") and line.strip()]   # (line number, its text)
    # lines end at "\n" alone: a quoted cell may hold a CR or another line break, which
    # the CSV reader joins back into the label it was written from
    if not body:
        raise _bad(path, None, "no CSV header line; a replay table needs one")
    return header, *_rows(path, body)


#: Characters that make a CSV line other than its fields split at commas: a quote, a
#: line break the CSV reader sees (CR), a NUL.
_NOT_PLAIN = ('"', "\r", "\0")


def _facts(path: Path, lines: Iterable[tuple[int, str]]) -> dict[str, str]:
    """The ``# key: value`` facts among ``lines`` (line number, text), each checked."""
    header: dict[str, str] = {}
    for number, line in lines:
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if not sep:
                continue
            key, value = key.strip(), _header_value(value.strip(), csv_uncell)
            if not value.isprintable():
                raise _bad(path, number, f"{key}: control characters are not allowed")
            if key in NUMERIC_FACTS and not (value.isascii() and value.isdigit() and
                                             int(value) >= NUMERIC_FACTS[key]):
                raise _bad(path, number, f"{key}: {value[:40]!r} is not a whole number "
                                         f">= {NUMERIC_FACTS[key]}")
            header[key] = value
    return header


class Rows(Lazy[dict[str, str]]):
    """A table's rows as read, each made a dict (column -> text) when first asked for
    (the same dict every time after), and where each config is (its parameters' labels
    in column order -> row): a sweep of a table of 10⁶ rows makes dicts only of the rows
    it replays.  The cells are kept a list per column (``cells``), as they are checked;
    ``line`` is the file's line that names the columns, where a message about them points."""

    def __init__(self, columns: Sequence[str], cells: Sequence[Sequence[str]],
                 places: dict[tuple[str, ...], int], line: int | None = None) -> None:
        self.columns, self._cells, self.places = tuple(columns), tuple(cells), places
        self.line = line
        self._made: list[dict[str, str] | None] = [None] * len(places)

    def __len__(self) -> int:
        return len(self._made)

    def _item(self, index: int) -> dict[str, str]:
        made = self._made[index]
        if made is None:
            made = self._made[index] = {c: cells[index]
                                        for c, cells in zip(self.columns, self._cells,
                                                            strict=True)}
        return made


def _rows_at_once(path: Path, first: int, text: str) -> tuple[list[str], Rows] | None:
    """The column names and the checked rows of the CSV part ``text`` (its header on line
    ``first``, no ``#`` line in it), each check made over a whole column at once; None
    where a cell is quoted, a line is blank or a check fails, for :func:`_rows` to read
    the table row by row and name the first line that is wrong."""
    if any(c in text for c in _NOT_PLAIN):
        return None
    head, _, text = text.partition("\n")
    lines = text.split("\n") if text else []
    if not head.strip() or max([len(head), *map(len, lines)]) > csv.field_size_limit():
        return None                     # a blank line, or one over the CSV reader's cap
    columns = _columns(path, first, head.split(","))
    # a blank line has no comma: with two columns or more, it fails the count
    if len(columns) < 2 or set(map(str.count, lines, repeat(","))) - {len(columns) - 1}:
        return None
    flat = ",".join(lines).split(",") if lines else []
    cells = [flat[i::len(columns)] for i in range(len(columns))]
    if "'" in text:
        cells = [[csv_uncell(c) for c in column] if "'" in "".join(column) else column
                 for column in cells]
    at = {c: cells[columns.index(c)] for c in RESERVED if c in columns}
    statuses = at.get("status", ["ok"] * len(lines))
    if not set(statuses) <= set(_outcomes()):
        return None
    medians = at["median_ms"]
    if set(statuses) != {"ok"}:
        medians = [m for s, m in zip(statuses, medians, strict=True) if s == "ok" or m]
    if not (_all_milliseconds(medians) and
            _all_milliseconds(" ".join(at.get("samples_ms", ())).split())):
        return None
    keys = list(zip(*(cells[i] for i, c in enumerate(columns) if c not in RESERVED),
                    strict=True))
    places = dict(zip(keys, range(len(lines)), strict=True))
    if len(places) != len(lines):
        return None
    return columns, Rows(columns, cells, places, first)


def _all_milliseconds(texts: Sequence[str]) -> bool:
    """Whether every one of ``texts`` passes :func:`_milliseconds`."""
    import numpy as np

    if not "".join(texts).isascii():
        return False
    try:
        values = np.fromiter(map(float, texts), dtype=float, count=len(texts))
    except ValueError:
        return False
    return bool(np.all(np.isfinite(values) & (values >= MIN_MS)))


def _rows(path: Path, body: list[tuple[int, str]]) -> tuple[list[str], Rows]:
    """The column names and the checked rows of the CSV part, row by row."""
    reader = csv.reader(text for _, text in body)
    fields_of: list[list[str]] = []
    places: dict[tuple[str, ...], int] = {}
    lines = array.array("q")                # each row's line in the file
    columns: list[str] = []
    head: int | None = None                 # the line naming the columns
    params: list[int] = []
    at: dict[str, int] = {}
    try:
        for fields in reader:
            line = body[reader.line_num - 1][0]
            if not columns:
                columns, head = _columns(path, line, fields), line
                params = [i for i, c in enumerate(columns) if c not in RESERVED]
                at = {c: columns.index(c) for c in RESERVED if c in columns}
                continue
            if len(fields) != len(columns):
                raise _bad(path, line, f"{len(fields)} fields; the header has "
                                   f"{len(columns)}")
            fields = [csv_uncell(f) for f in fields]
            _check_row(path, line, fields, at)
            key = tuple(fields[i] for i in params)
            if key in places:
                raise _bad(path, line, f"the same config as line {lines[places[key]]}; "
                                   "a table holds each config once")
            places[key] = len(fields_of)
            fields_of.append(fields)
            lines.append(line)
    except csv.Error as err:
        line = body[min(reader.line_num, len(body)) - 1][0]
        raise _bad(path, line, f"not CSV: {err}") from None
    cells = [list(column) for column in zip(*fields_of, strict=True)] or [[] for _ in columns]
    return columns, Rows(columns, cells, places, head)


def _columns(path: Path, line: int, fields: list[str]) -> list[str]:
    for name in fields:
        if not (name.isascii() and name.isidentifier()):
            raise _bad(path, line, f"column {name[:40]!r} is not a parameter "
                               f"name; allowed: axis names, {', '.join(RESERVED)}")
        if fields.count(name) > 1:
            raise _bad(path, line, f"column {name!r} appears twice")
    if "median_ms" not in fields:
        raise _bad(path, line, f"a replay table needs a median_ms column; it has "
                           f"{', '.join(fields) or 'none'}")
    return fields


@functools.cache
def _outcomes() -> tuple[str, ...]:
    """The statuses a table may record: every trial status but ``invalid`` and
    ``missing`` (no trial of those ran)."""
    from sweeper.trial import TrialStatus

    return tuple(s.value for s in TrialStatus if s not in (TrialStatus.INVALID,
                                                           TrialStatus.MISSING))


def _check_row(path: Path, line: int, fields: Sequence[str], at: Mapping[str, int]) -> None:
    """A known status; for a successful row a plausible median and samples (``at``: the
    place of each reserved column the table has)."""
    status = fields[at["status"]] if "status" in at else "ok"
    if status not in _outcomes():
        raise _bad(path, line, f"status {status[:40]!r} is not a recorded outcome; "
                           f"allowed: {', '.join(_outcomes())}")
    median = fields[at["median_ms"]]
    if status == "ok" or median:
        _milliseconds(path, line, "median_ms", median)
    for sample in (fields[at["samples_ms"]] if "samples_ms" in at else "").split():
        _milliseconds(path, line, "samples_ms", sample)


def _milliseconds(path: Path, line: int, column: str, text: str) -> float:
    if not text:
        raise _bad(path, line, f"{column} is empty; a successful row needs its "
                           "median")
    try:
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= MIN_MS):
        raise _bad(path, line, f"{column}: {text[:40]!r} is not a time in ms; "
                           f"allowed: a finite number >= {MIN_MS:g} ms (one launch)")
    return value


def _bad(path: Path, line: int | None, message: str) -> DataError:
    return DataError(message, file=str(path), line=line)


def write_table(path: Path, header: Mapping[str, Any], params: Sequence[str],
                rows: Sequence[Mapping[str, Any]]) -> None:
    """Write a replay table: ``# key: value`` lines (each value on its line: a control
    character escaped), then the CSV, each cell one a spreadsheet shows as text; a failure
    leaves ``path`` as it was (see :func:`sweeper.fsio.atomic_write`)."""
    out = io.StringIO(newline="")
    out.write(f"# {FORMAT}\n")
    for key, value in header.items():
        out.write(f"# {key}: {_header_value(printable(str(value)), _header_cell)}\n")
    failed = any(row.get("reason") for row in rows)        # no column where none failed
    writer = csv.DictWriter(out, fieldnames=[*params, *(RESERVED if failed else MEASURED)])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(printable(str(v))) for k, v in row.items()
                         if failed or k != "reason"})
    atomic_write(path, out.getvalue())


def _header_value(value: str, escape: Callable[[str], str]) -> str:
    """A header value with ``escape`` applied to each piece after a comma: a spreadsheet
    splits a ``# gpu: ...`` line into cells there (the first starts with ``#``, never a
    formula), and takes spaces and quotes in front of a cell off before a formula."""
    first, *rest = value.split(",")
    return ",".join([first, *map(escape, rest)])


def _header_cell(piece: str) -> str:
    """:func:`csv_cell` for a piece of a header line: ``'`` in front of one that starts a
    formula after its spaces and quotes, or starts with ``'``."""
    return "'" + piece if piece.lstrip(' "').startswith(FORMULA_START) else piece
