"""The journal, ``trials.jsonl``: how it is read, repaired and appended to.

**Reading.**  Each line is one record: a JSON object whose ``kind`` is one of
:data:`~sweeper.store._schema.KINDS` and whose fields fit that record type.  Any other
line is *set aside*: never a traceback, never silent, never the end of the study.

- A last line without its newline is a write cut short (a crash, a full disk) and is set
  aside, unless it is a whole record that lacks only the newline: that one is kept.
- Any other line that is not a record (not UTF-8, not JSON, JSON but not an object, an
  unknown kind, missing or mistyped fields, a text holding a lone surrogate, statistics
  that contradict themselves or their samples) is set aside too, and so is a record that
  does not fit those before it or the study (:mod:`sweeper.store._ledger`: a trial number
  or a config already recorded, a choice outside the study's space, a final or drift
  record naming a trial no line before it records).

Each set-aside line is a warning ``STUDY/trials.jsonl:LINE: reason``; every command goes on
with the good records.  Reading never changes the file, so read-only commands (report,
export, compare) warn at every read until a run repairs the journal.  Blank lines are
ignored.

**Repair**, when a run opens the journal to append: the bad lines go first to
``trials.rejected.jsonl`` (one JSON object each: ``line``, ``reason``, ``text`` as it was,
bytes that are not UTF-8 as surrogate escapes, ``journal_sha256``, ``set_aside``),
fsynced; then the good lines, byte for byte, go to a temporary file in the study folder,
fsynced, renamed over the journal, and the folder is fsynced.  The journal is never
truncated or rewritten in place: a kill at any step leaves the old journal or the repaired
one, whole, and the next run does what is missing (a damaged journal's lines reach the side
file once).  A kept last record that lacked only its newline gets the newline appended.

**Durability.**  A record is on disk when :meth:`JournalWriter.append_all` returns: the whole
line is written with ``os.write`` to the journal opened ``O_APPEND``, then fsynced; a new
journal's entry in the study folder is fsynced too (``study.json`` and the folder itself are
made durable when the study is created, see :mod:`sweeper.fsio`).  A trial reported finished
therefore survives a kill -9, an OS crash or a power cut, and a resumed study never measures
it again: each trial is in the journal, whole, or it is measured again (exactly once).
The fsync costs 0.08 ms a record on the H200 machine's disk (docs/benchmarks.md), and on a
disk another process keeps writing 0.3 ms at the median, 150 ms at the 99th percentile
(docs/benchmarks-log.md): small against a GPU trial (an H200 copy sweep spends some 58 ms a
trial on compile, verification and timed runs: 11.8 s over 204 configs, ``python
benchmarks/sweep_overhead.py``).

**A failed write** (disk full, quota, I/O error) may leave a torn last line, which the next
open sets aside as above; this process writes nothing more to the journal, and the
:class:`~sweeper.errors.WriteError` says up to which trial the study is consistent.  A run
locks the study folder (``flock``) while it has the journal open, and a second run of the
same study is refused; workers (``sweeper worker``) share the folder lock and append one at a
time under the study lock of :mod:`sweeper.store._claims_file`, each ending a line a killed
worker left torn before its own.

**Fault injection.**  ``SWEEPER_FAULT=POINT[:N]`` in the environment kills the process
(SIGKILL) the Nth time (default: the first) it reaches ``POINT``: ``after-reject`` (side file
written), ``after-repair-write`` (repaired copy written, not renamed), ``after-repair-rename``
or ``after-append`` (a record fsynced); ``after-claim`` (a worker's claim taken, its trial not
yet measured: :mod:`sweeper.sweep._claims`).  The journal tests use it to show that a kill at
each step loses nothing, the worker tests that a killed worker's config is measured by another.
"""

from __future__ import annotations

import array
import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import signal
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.errors import StudyError, StudyWarning, WriteError, user_stacklevel
from sweeper.fsio import (
    TEMP_SUFFIX,
    fsync_dir,
    make_dirs,
    replace,
    write_all,
    write_error,
    write_temp,
)
from sweeper.store._claims_file import BUSY_RUN, StudyLock, busy, locked
from sweeper.store._ledger import Axes, Ledger
from sweeper.store._schema import SURROGATE_ESCAPE, record_problem, surrogate_problem
from sweeper.store._upgrade import upgraded

JOURNAL = "trials.jsonl"
REJECTED = "trials.rejected.jsonl"
#: Set-aside lines listed one by one in warnings; the rest are counted in one more line.
MAX_LISTED = 5
TORN = "incomplete last line (no newline at its end): a write cut short by a crash or a full disk"


@dataclass(frozen=True)
class BadLine:
    """A line set aside: its number in the journal (from 1), why, and its bytes as they
    were, so the side file can keep it whole."""

    number: int
    reason: str
    text: bytes


@dataclass
class Scan:
    """A journal as read: its good records (with their lines' numbers), its bad lines, and
    the ledger that checked the records against each other and the study's axes."""

    records: list[dict[str, Any]] = field(default_factory=list)
    numbers: array.array[int] = field(default_factory=lambda: array.array("q"))
    bad: list[BadLine] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    sha256: str = ""
    line_count: int = 0
    needs_newline: bool = False    # the last line is kept but lacks its newline
    #: the journal's bytes, kept only where a line was set aside (for :func:`repair`): a
    #: cached read of 10⁵ trials does not hold its 90 MB twice
    data: bytes = b""

    @property
    def lines(self) -> list[bytes]:
        """The good records' lines, as they are in the journal; only where a line was set
        aside (:attr:`data`)."""
        split = self.data.split(b"\n")
        return [split[number - 1] for number in self.numbers]


def scan(path: Path, axes: Axes | None = None) -> Scan:
    """Read and check ``path`` (trials against the study's ``axes`` when given)."""
    data = read_bytes(path, "cannot read the journal")
    return Scan(ledger=Ledger(axes)) if data is None else scan_bytes(data, axes)


def read_bytes(path: Path, cannot: str = "cannot read") -> bytes | None:
    """What the file ``path`` holds, or ``None`` where there is none; one it cannot read is
    a StudyError saying ``cannot`` and why."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise StudyError(f"{path}: {cannot}: {err.strerror or err}") from None


def scan_bytes(data: bytes, axes: Axes | None = None) -> Scan:
    """Check a journal's bytes line by line (see the module docstring for what is kept and
    what is set aside); the journal's hash is recorded with them."""
    out = Scan(sha256=hashlib.sha256(data).hexdigest(), ledger=Ledger(axes))
    number, start = _take_lines(out, data, 0)
    tail = data[start:]                    # b"" when the journal ends with a newline
    out.line_count = number + (1 if tail else 0)
    out.needs_newline = _take(out, number + 1, tail, torn=True) if tail.strip() else bool(tail)
    if out.bad:
        out.data = data
    return out


def _take_lines(out: Scan, data: bytes, number: int) -> tuple[int, int]:
    """File each line of ``data`` that ends in a newline, numbered on from ``number``;
    the last line's number and where the bytes after it start."""
    start = 0
    # one line at a time, each freed once read: the records parsed meanwhile do not sit
    # between a whole journal's line copies, which would hold its size in memory after
    while (end := data.find(b"\n", start)) >= 0:
        number += 1
        _take(out, number, data[start:end], torn=False)
        start = end + 1
    return number, start


@dataclass(frozen=True)
class _Read:
    """What :class:`JournalTail` read last: the scan, the file's inode, size and time of
    change, the axes its trials were checked against, the hash of its bytes so far and
    whether they end a line (none is being written, or was torn)."""

    found: Scan
    inode: int
    size: int
    mtime_ns: int
    axes: Axes | None
    digest: Any
    whole_lines: bool


class JournalTail:
    """One journal as last read, followed as it grows: a read parses only the lines
    appended since the read before.  Workers sharing a study read it at each claim and
    each append; read whole every time, each trial cost every line of the study, and a
    shared sweep's bookkeeping grew with the square of its trials.  Each read is what
    :func:`scan` of the whole file gives, a new :class:`Scan` (one handed out earlier
    never changes): it is read whole again where the file is not the one read before (a
    repair renames a copy over it), is shorter or was written over, where the last read
    ended without a newline or the new bytes do not end in one (a line being written, or
    torn), where a line is set aside for the first time (its scan keeps the journal's
    bytes, for the repair), and where the study's axes changed.  Workers never repair the
    journal they share, so lines set aside before are followed past as any other."""

    def __init__(self, path: Path, axes: Callable[[], Axes | None]) -> None:
        self.path, self._axes = path, axes
        self._last: _Read | None = None

    def read(self) -> Scan:
        """The journal's records and bad lines as they are now."""
        axes = self._axes()
        try:
            with open(self.path, "rb") as file:
                st = os.fstat(file.fileno())
                last = self._last
                if last is not None and (last.inode, last.axes) == (st.st_ino, axes) and \
                        last.size <= st.st_size and last.whole_lines:
                    if last.size == st.st_size and last.mtime_ns == st.st_mtime_ns:
                        return last.found
                    file.seek(last.size)
                    more = file.read()
                    if more.endswith(b"\n") and self._follow(more, st, axes):
                        return self._last.found      # type: ignore[union-attr]
                    file.seek(0)
                data = file.read()
        except FileNotFoundError:
            self._last = None
            return Scan(ledger=Ledger(axes))
        except OSError as err:
            raise StudyError(f"{self.path}: cannot read the journal: "
                             f"{err.strerror or err}") from None
        found = scan_bytes(data, axes)
        self._last = _Read(found, st.st_ino, len(data), st.st_mtime_ns, axes,
                           hashlib.sha256(data), data.endswith(b"\n") or not data)
        return found

    def _follow(self, more: bytes, st: os.stat_result, axes: Axes | None) -> bool:
        """Take ``more``, whole lines appended to what was read last; false (nothing
        taken) where the first line set aside is among them: a scan with lines set aside
        keeps the journal's bytes (:attr:`Scan.data`), which a whole read gives."""
        assert self._last is not None
        last = self._last.found
        out = Scan(records=list(last.records), numbers=array.array("q", last.numbers),
                   bad=list(last.bad), ledger=last.ledger.copy())
        out.line_count, _ = _take_lines(out, more, last.line_count)
        if out.bad and not last.bad:
            return False
        if out.bad:
            out.data = last.data + more
        digest = self._last.digest.copy()
        digest.update(more)
        out.sha256 = digest.hexdigest()
        self._last = _Read(out, st.st_ino, self._last.size + len(more), st.st_mtime_ns, axes,
                           digest, True)
        return True


def _take(out: Scan, number: int, text: bytes, *, torn: bool) -> bool:
    """Check one line and file it as a record or a bad line; whether it was kept."""
    if not text.strip():
        return False
    data, reason = parse_line(text)
    if data is not None:
        reason = out.ledger.problem(data) or ""
    elif torn and reason.startswith("not JSON"):
        reason = TORN
    if reason or data is None:               # parse_line gives a reason with no record
        out.bad.append(BadLine(number, reason, text))
        return False
    out.ledger.add(data, number)
    out.records.append(data)
    out.numbers.append(number)
    return True


#: Distinct keys and texts a journal's records share, at most: a study's records repeat
#: the same few dozen keys and labels, each parsed anew on every line.
MAX_SHARED = 1 << 14
_SEEN: dict[str, str] = {}


def _shared(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict whose keys and text values are the same ``str`` objects
    as the equal ones on earlier lines (up to :data:`MAX_SHARED` of them): a journal of
    10⁵ trials then holds its records in half the memory."""
    share = _SEEN.setdefault if len(_SEEN) < MAX_SHARED else _SEEN.get
    return {share(k, k): (share(v, v) if type(v) is str else v) for k, v in pairs}


_DECODER = json.JSONDecoder(object_pairs_hook=_shared)


def parse_line(text: bytes, kept: bool = True) -> tuple[dict[str, Any] | None, str]:
    """The record on one line, or ``None`` and why it is not one; a record ``kept`` shares
    its keys and labels with the records read before it (:func:`_shared`)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 text (byte {err.start + 1})"
    try:
        if kept and not decoded.startswith("\ufeff"):     # json.loads refuses a BOM
            data = _DECODER.decode(decoded)
        else:
            data = json.loads(decoded)
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg}, column {err.colno})"
    except RecursionError:
        return None, "not JSON sweeper can read (nested too deeply)"
    except ValueError as err:             # an integer of more than 4300 digits
        return None, f"not JSON sweeper can read ({str(err).split(':')[0]})"
    data, problem = upgraded(data)
    if problem is None:
        problem = record_problem(data)
    if problem is None and SURROGATE_ESCAPE.search(decoded):
        problem = surrogate_problem(data)
        if problem is not None:
            problem = f"{data['kind']} record: {problem}"
    return (data, "") if problem is None else (None, problem)


def warn_new(where: Any, found: Scan, warned: set[tuple[str, int]], outcome: str) -> None:
    """Warn of the bad lines of ``found`` not in ``warned`` (a reader's (hash, line) pairs
    already told), and add them there: a reader says each once, a new reader again."""
    new = [b for b in found.bad if (found.sha256, b.number) not in warned]
    warned.update((found.sha256, b.number) for b in new)
    warn_bad(where, new, outcome)


def warn_bad(path: Path, bad: list[BadLine], outcome: str) -> None:
    """One warning per bad line (the first ``MAX_LISTED``), then one for the rest."""
    for line in bad[:MAX_LISTED]:
        warnings.warn(f"{path}:{line.number}: {line.reason}; {outcome}", StudyWarning,
                      stacklevel=user_stacklevel())
    if len(bad) > MAX_LISTED:
        rest = bad[MAX_LISTED:]
        warnings.warn(f"{path}: {len(rest)} more bad lines (lines {rest[0].number}-"
                      f"{rest[-1].number}), each {outcome}", StudyWarning,
                      stacklevel=user_stacklevel())


class JournalWriter:
    """Appends records to one study's journal: opened (locked, repaired) by a run."""

    def __init__(self, root: Path, axes: Callable[[], Axes | None] = lambda: None,
                 tail: JournalTail | None = None,
                 check: Callable[[Scan], object] = lambda found: None) -> None:
        self.root = root
        self.path = root / JOURNAL
        self._axes = axes                  # the study's, read again at each open and append
        #: raises where the journal as read must not be repaired (its study is damaged)
        self._check = check
        #: the journal as read, shared with the store's readers: appended to by others
        self._tail = tail or JournalTail(self.path, axes)
        self._fds: list[int] = []          # the folder lock, then the journal
        self._finalizer = weakref.finalize(self, _close_all, self._fds)
        self._mutex = threading.Lock()     # a watchdog thread may append too
        self._failed: WriteError | None = None
        self._ledger = Ledger()
        self._lines = 0
        self._shared: StudyLock | None = None

    def open(self, shared: StudyLock | None = None) -> None:
        """Lock the study, repair the journal if it needs it, open it to append.  With
        ``shared`` (workers): the folder lock is shared with other workers, the journal is
        not repaired (others append to it) nor temporary files removed (another worker's
        may be about to be renamed), and each append takes ``shared``."""
        if self._fds:
            return
        make_dirs(self.root)
        self._lock(shared=shared is not None)
        self._shared = shared
        try:
            found = scan(self.path, self._axes())
            self._check(found)
            if found.bad and shared is None:
                repair(self.path, found)
                found = scan(self.path, self._axes())
            created = not self.path.exists()
            try:      # a read-only folder or file: one line, the journal as it was
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            except OSError as err:
                raise write_error(err, self.path) from None
            self._fds.append(fd)
            if created:
                fsync_dir(self.root)
            self._ledger, self._lines = found.ledger, found.line_count
            if shared is None:
                if found.needs_newline:
                    self._write(b"\n")
                for stale in [*self.root.glob(f".{JOURNAL}.*{TEMP_SUFFIX}"),
                              *self.root.glob(f".study.json.*{TEMP_SUFFIX}")]:
                    stale.unlink(missing_ok=True)  # a kill's leftovers, copies of nothing new
        except BaseException:
            self.close()
            raise

    def append_all(self, records: Sequence[Any]) -> None:
        """Write ``records`` (checked in turn) in one write and one fsync; a kill before leaves
        whole lines and perhaps a torn one, set aside at the next open as for one record."""
        with self._mutex:
            if self._failed is not None:
                raise self._failed
            self.open()
            with self._shared_turn():
                self._ledger.axes = self._axes()   # a resume may have widened them
                lines: list[bytes] = []
                try:      # each checked after those before it in the batch
                    for i, record in enumerate(records, 1):
                        data = record.to_json()
                        lines.append(encode_record(data, self._ledger, self.path))
                        self._ledger.add(data, self._lines + i)
                    self._write(b"".join(lines))
                except BaseException:
                    if self._failed is None:   # the ledger counts what the journal holds
                        self._ledger = scan(self.path, self._axes()).ledger
                    raise
                self._lines += len(records)
        fault("after-append")

    @contextlib.contextmanager
    def _shared_turn(self) -> Iterator[None]:
        """Shared: this process's turn under the study lock, the journal read again (other
        workers appended) and a line torn by a killed worker ended first."""
        if self._shared is None:
            yield
            return
        with self._shared.held():
            found = self._tail.read()
            self._ledger, self._lines = found.ledger.copy(), found.line_count
            if found.needs_newline or (found.bad and found.bad[-1].reason == TORN):
                self._write(b"\n")
            yield

    def close(self) -> None:
        """Close the journal and release the study's lock; every record appended is already
        on disk. A later :meth:`append` opens them again."""
        _close_all(self._fds)

    def _write(self, data: bytes) -> None:
        try:
            write_all(self._fds[-1], data)
            os.fsync(self._fds[-1])
        except OSError as err:
            last = max((number for number, line in self._ledger.trials.items()
                        if line <= self._lines), default=None)  # not the batch unwritten
            self._failed = write_error(err, self.path, (
                f"the study is consistent up to trial #{last}" if last is not None else
                "the study is consistent (no trial recorded yet)"),
                again="run the same command to go on")
            raise self._failed from None

    def _lock(self, shared: bool) -> None:
        fd = locked(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0),
                    (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB,
                    f"{self.root}: cannot open the study")
        if fd is None:
            raise StudyError(f"{self.root}: {BUSY_RUN if shared else busy()}")
        self._fds.append(fd)


def encode_record(data: dict[str, Any], ledger: Ledger | Callable[[dict[str, Any]], Ledger],
                  where: Any) -> bytes:
    """A record's line, checked as the reader will check it (what is written can always be
    read back) against the ``ledger`` of the records before it (or the one ``ledger``
    gives for the record, its fields checked); a record that is not one is a StudyError
    naming ``where``.  The caller counts it in the ledger once written."""
    try:
        text = json.dumps(data, separators=(",", ":")).encode()
    except (TypeError, ValueError, RecursionError) as err:
        raise StudyError(f"{where}: cannot record a {data.get('kind')} record: "
                         f"not JSON ({err})") from None
    parsed, reason = parse_line(text, kept=False)      # only checked, then dropped
    if parsed is not None:
        reason = (ledger if isinstance(ledger, Ledger) else ledger(parsed)).problem(parsed) or ""
    if reason:
        raise StudyError(f"{where}: cannot record a {data.get('kind')} record: {reason}")
    return text + b"\n"


def repair(path: Path, found: Scan) -> None:
    """Set the bad lines aside, then replace the journal with its good lines (see the
    module's docstring); never truncates or rewrites the journal in place."""
    reject(path, found)
    fault("after-reject")
    temp = write_temp(path, b"".join(line + b"\n" for line in found.lines))
    fault("after-repair-write")
    replace(temp, path)
    fault("after-repair-rename")
    warn_bad(path, found.bad, f"moved to {REJECTED}")


def reject(path: Path, found: Scan) -> None:
    """Append ``found``'s bad lines to the side file, fsynced, each once per journal."""
    side = path.with_name(REJECTED)
    done, ends_with_newline = _rejected(side)
    when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows = [json.dumps({"line": b.number, "reason": b.reason,
                        "text": b.text.decode("utf-8", "surrogateescape"),
                        "journal_sha256": found.sha256, "set_aside": when}) + "\n"
            for b in found.bad if (found.sha256, b.number) not in done]
    if not rows:
        return
    created = not side.exists()
    data = ("" if ends_with_newline else "\n") + "".join(rows)
    try:
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            write_all(fd, data.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise write_error(err, side, f"{path.name} is as it was") from None
    if created:
        fsync_dir(path.parent)


def _rejected(side: Path) -> tuple[set[tuple[str, int]], bool]:
    """The (journal hash, line) pairs already in the side file; whether it ends a line."""
    data = read_bytes(side)
    if data is None:
        return set(), True
    done = set()
    for line in data.splitlines():
        try:
            row = json.loads(line)
            done.add((row["journal_sha256"], row["line"]))
        except (ValueError, TypeError, KeyError):
            continue                    # a line torn by a crash while it was appended
    return done, data.endswith(b"\n") or not data


_reached: dict[str, int] = {}


def fault(point: str) -> None:
    """Kill this process here if ``SWEEPER_FAULT`` names ``point`` (see the docstring)."""
    spec = os.environ.get("SWEEPER_FAULT", "")
    name, _, nth = spec.partition(":")
    if name != point:
        return
    _reached[point] = _reached.get(point, 0) + 1
    if _reached[point] == (int(nth) if nth.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _close_all(fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())
