"""A study on disk: ``study.json`` (what, where, with what) and ``trials.jsonl``.

``study.json`` is replaced whole (:func:`sweeper.fsio.atomic_write`) and checked when read
(a JSON object with at least ``study`` and ``kernel``, the keys readers use of the right
types); a study that fails is a :class:`StudyError` naming the file and what is wrong.
The journal is append-only, one record per line, fsynced after every record; how it is
read, repaired and what it promises are in :mod:`sweeper.store._journal`.  No Optuna
storage is kept beside it: the journal is the study's one record, and on resume the Optuna
study is rebuilt in memory from it (:mod:`sweeper.sweep._optuna`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sweeper.errors import StudyError, WriteError
from sweeper.fsio import (
    atomic_write,
    create_new,
    discard_staging,
    publish_dir,
    staging_dir,
    write_error,
)
from sweeper.store._axes_damage import axes_refused
from sweeper.store._base import RawRecord, Storage, check_copied, kept_once, record_key
from sweeper.store._claims_file import BUSY_COPY, ClaimsFile, StudyLock, WorkerLocks, locked
from sweeper.store._journal import JOURNAL, JournalTail, JournalWriter, Scan, read_bytes, scan
from sweeper.store._ledger import Axes, study_axes
from sweeper.store._meta import checked_meta, key_line
from sweeper.store._records import TrialRecord

META = "study.json"


class StudyStore(Storage):
    """One study's folder: ``study.json`` (what was swept, how and where) and the
    append-only journal of its records. Everything a report, an export or a resumed run
    knows comes from here, so nothing a run finished depends on the process that ran it."""

    SET_ASIDE = ("set aside (the study goes on without it; the next run moves it to "
                 "trials.rejected.jsonl)")

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._tail = JournalTail(self.root / JOURNAL, self._axes)
        self._writer = JournalWriter(self.root, self._axes, self._tail, self._covered)
        self._axes_read: tuple[Any, Axes | None] | None = None
        self._warned: set[tuple[str, int]] = set()
        self._lock = StudyLock(self.root)
        self._workers = WorkerLocks(self.root, self._lock)
        self._shared = False
        self._held: int | None = None        # the folder's lock :meth:`hold` took

    @property
    def name(self) -> str:
        """The study's name: its folder's name (``studies/b`` or ``.`` in it: ``b``), whatever
        its study.json records (a folder copied under another name is that study)."""
        return Path(os.path.abspath(self.root)).name

    @property
    def location(self) -> str:
        """The journal's path."""
        return str(self.journal_path)

    def absolute(self) -> StudyStore:
        return self if self.root.is_absolute() else StudyStore(self.root.absolute())

    @property
    def journal_path(self) -> Path:
        """Where the journal (``trials.jsonl``) is, whether or not it exists yet."""
        return self.root / JOURNAL

    def exists(self) -> bool:
        """Whether the folder holds a ``study.json``, i.e. a study was created here."""
        return (self.root / META).is_file()

    def orphaned(self) -> bool:
        """A journal without ``study.json``: nothing says what it measured, or how."""
        return not self.exists() and self.journal_path.exists()

    def create(self, meta: dict[str, Any]) -> bool:
        """Make the folder and write ``meta`` as its ``study.json`` (whole), unless one is
        there: of processes creating the study at once exactly one writes it
        (:func:`sweeper.fsio.create_new`)."""
        return create_new(self.root / META, _meta_text(meta))

    def copy_in(self, meta: dict[str, Any], records: list[dict[str, Any]],
                origin: str) -> None:
        """See :meth:`Storage.copy_in`: the study is written and read back in a staging
        folder beside this one (:func:`~sweeper.fsio.staging_dir`), its records with one
        write and one fsync, and renamed into place only once it reads back equal; an
        interruption or failure removes it (a kill leaves it hidden, holding no study a
        listing of the studies finds, until the next copy here removes it).  A folder here
        that is not an empty one is :meth:`taken`, before anything is written and again at
        the rename."""
        if self.root.exists() and not (self.root.is_dir() and not any(self.root.iterdir())):
            raise self.taken()
        staged = staging_dir(self.root)
        try:
            copy = StudyStore(staged)
            try:
                copy.create(meta)
                copy.append_all([RawRecord(data) for data in records])
            except WriteError as failed:
                # said of the copy, not of the hidden staging folder's journal (whose
                # message would offer a resume): the staging folder goes, nothing is left
                if failed.cause is None:
                    raise
                raise write_error(failed.cause, self.root, "nothing copied") from None
            finally:
                copy.close()
            check_copied(origin, self.location, (meta, records),
                         (copy.meta(), copy.raw_records()))
            if not publish_dir(staged, self.root):
                raise self.taken()
        finally:
            discard_staging(staged)

    def taken(self) -> StudyError:
        """A study of this name is here (or a folder that is not an empty one)."""
        what = f"a study {self.name!r} is there already" if self.exists() else \
            "there already and not an empty folder"
        return StudyError(f"{self.root}: {what}; give --to another studies folder, or move "
                          f"{self.root} away first (the copy keeps the study's name)")

    def meta(self) -> dict[str, Any]:
        """The checked ``study.json``; a missing, unreadable or malformed one is a
        StudyError that names the file and what is wrong."""
        path = self.root / META
        text = read_bytes(path)
        if text is None:
            raise StudyError(f"{self.root}: no study here (no {META})")
        advice = "; restore it, or move the study folder away"
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as err:
            # the column too: a message such as 'Unterminated string starting at' ends
            # where json put the position
            raise StudyError(f"{path}:{err.lineno}: not JSON ({err.msg}, column "
                             f"{err.colno}){advice}") from None
        except (ValueError, RecursionError) as err:
            raise StudyError(f"{path}: not JSON sweeper can read ({err}){advice}") from None
        return checked_meta(meta, path, advice, text)

    def edit_meta(self, edit: Callable[[dict[str, Any]], None]) -> None:
        """Read, ``edit`` and write ``study.json`` whole under the study lock (another
        process's edit waits for it; a crash leaves the old file or the new)."""
        with self._lock.held():
            meta = self.meta()
            edit(meta)
            atomic_write(self.root / META, _meta_text(meta))

    def open_journal(self) -> None:
        """Take the study for this process and repair its journal if it needs it (a run
        does this before reading it; the first :meth:`append` does it otherwise)."""
        self._writer.open()

    def hold(self) -> None:
        """Lock the study folder as a run does (an exclusive ``flock``), not opening the
        journal: no repair, no write."""
        if self._held is None:
            fd = locked(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0),
                        fcntl.LOCK_EX | fcntl.LOCK_NB, f"{self.root}: cannot open the study")
            if fd is None:
                raise StudyError(f"{self.root}: {BUSY_COPY}")
            self._held = fd

    def append(self, record: Any) -> None:
        """Append one record (anything with ``to_json()``); it is on disk on return.  A
        baseline the journal holds already is not appended: shared, that is checked under
        the study lock, where other workers append theirs."""
        once = kept_once(record)
        with self._lock.held() if self._shared and once else contextlib.nullcontext():
            if once is None or once not in {record_key(d) for d in self._scan().records}:
                self._writer.append_all([record])

    def append_all(self, records: Sequence[Any]) -> None:
        """Append ``records`` in order, on disk on return, with one write and one fsync
        (a baseline among them is appended as :meth:`append` does it)."""
        if any(not isinstance(r, TrialRecord) and kept_once(r) is not None for r in records):
            super().append_all(records)
        elif records:
            self._writer.append_all(records)

    def close(self) -> None:
        """Close the journal and release the study and the worker ids held for another
        process; every record appended is already on disk."""
        self._writer.close()
        self._workers.close()
        if self._held is not None:
            os.close(self._held)
            self._held = None

    def _scan(self) -> Scan:
        """The journal as read now: the lines appended since the last read parsed, or the
        whole of it where it was replaced or the study's axes changed
        (:class:`~sweeper.store._journal.JournalTail`)."""
        return self._covered(self._tail.read())

    def _covered(self, found: Scan) -> Scan:
        """``found``, where ``study.json``'s axes are not damaged
        (:func:`~sweeper.store._axes_damage.axes_refused`: they leave out every trial of
        the journal, or a label its recorded space gives that a trial chooses); else a
        StudyError naming their line, before any trial is set aside or moved, where a run
        moved those finished trials to ``trials.rejected.jsonl`` and measured them again."""
        if not found.bad or found.ledger.axes is None:
            return found
        refused = axes_refused(found, lambda: scan(self.journal_path), self.meta(),
                               self._meta_place, str(self.journal_path), "study.json",
                               "move the study folder away")
        if refused is not None:
            raise refused
        return found

    def _meta_place(self, keys: tuple[str, ...]) -> str:
        """``study.json``'s entry at the key path ``keys`` as messages name it
        (``study.json:LINE``, its line where the file shows it)."""
        path = self.root / META
        line = key_line(read_bytes(path) or b"", keys)
        return f"{path}{'' if line is None else f':{line}'}"

    def _axes(self) -> Axes | None:
        """The study's axes and labels (:func:`study_axes`), read again when ``study.json``
        changed; ``None`` where it is missing or cannot be read (then whatever reads the
        study says why)."""
        key = _stat(self.root / META)
        if key is None or self._axes_read is None or self._axes_read[0] != key:
            try:
                axes = study_axes(self.meta())
            except StudyError:
                axes = None
            self._axes_read = (key, axes)
        return self._axes_read[1]

    def share(self) -> None:
        """Open the journal alongside other workers (see :mod:`sweeper.store._journal`)."""
        self._writer.open(shared=self._lock)
        self._shared = True

    def enlist(self, worker_id: str) -> None:
        """See :meth:`Storage.enlist`: an ``flock`` in the study folder
        (:class:`~sweeper.store._claims_file.WorkerLocks`)."""
        self._workers.enlist(worker_id)

    @contextlib.contextmanager
    def _claims(self) -> Iterator[ClaimsFile]:
        """``claims.json`` in the folder, for one step under the study lock."""
        with self._lock.held():
            yield ClaimsFile(self.root, self._workers)

    def _kept(self, claims: ClaimsFile, key: str) -> Iterator[dict[str, Any]]:
        """The journal's records of ``key``."""
        return (d for d in self._scan().records if record_key(d) == key)

    def _append_next(self, claims: ClaimsFile, record: TrialRecord) -> TrialRecord:
        """Append ``record`` under the next trial number the journal has not recorded."""
        trials = self._scan().ledger.trials
        kept = dataclasses.replace(record, number=max(trials, default=-1) + 1)
        self.append(kept)
        return kept


def _stat(path: Path) -> tuple[int, int, int] | None:
    """What tells a file's versions apart (inode, size, mtime), or ``None`` if it cannot be
    read (absent, or the reader says why)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _meta_text(meta: dict[str, Any]) -> str:
    """``study.json``'s text for ``meta``."""
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"
