"""The journal's claims: which worker measures which config, kept beside the journal.

Several local processes (``sweeper worker``) share one study folder.  Every step that must
see the study whole (take a claim, renew it, record a claimed trial, append any record,
change ``study.json``)
holds :class:`StudyLock`, an exclusive ``flock`` on ``.claims.lock`` in the study folder,
so those steps happen one at a time across processes.  The claims themselves are
``claims.json``, one object by config key (``worker``, ``expires`` as Unix time, ``done``),
replaced whole (:func:`sweeper.fsio.atomic_write`) under the lock: a kill leaves the old
file or the new one.  The processes share one clock, so a lease is plain wall time.

Who is alive: a process holds each worker id it claims under (:class:`WorkerLocks`) by an
exclusive ``flock`` on ``.worker-<hash of the id>.lock`` in the study folder, which ends
with the process however it ends.  A claim whose holder's lock can be taken is a dead
worker's, and the next worker to ask takes it at once, without waiting for its lease; a
second process asking for a held id is refused.  Taking, testing and dropping those locks
happen under :class:`StudyLock`, so a test never races a worker enlisting.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper.core._spelling import given
from sweeper.errors import StudyError
from sweeper.fsio import atomic_write

CLAIMS = "claims.json"
LOCK = ".claims.lock"
#: Why a worker is refused where a run holds the study, whichever store holds it.
BUSY_RUN = "a `sweeper run` holds this study; let it finish, then start the workers"
#: Why a copy is refused where a run or workers hold the study, whichever store holds it.
BUSY_COPY = ("a `sweeper run` or `sweeper worker`s are sweeping this study; let them finish, "
             "then copy it (a copy now would miss the trials they measure next)")


def busy() -> str:
    """Why a run is refused where another process holds the study, whichever store holds
    it; the way out names the study option as the caller gives it (``--study NEW``, from
    the API ``study='NEW'``); workers exist only as a command."""
    return ("another sweeper process is running this study; wait for it to finish, or pass "
            f"{given('study', 'NEW')} (processes share a study as `sweeper worker --study "
            "NAME`)")


class Claim(enum.Enum):
    """What a claim found (:meth:`sweeper.store.Storage.claim`): the key is now this
    worker's, another live worker holds it (it may yet die: ask again later), or a trial
    of it is recorded."""

    TAKEN = "taken"
    HELD = "held"
    DONE = "done"

    def __bool__(self) -> bool:
        """Whether the worker that asked holds the key now."""
        return self is Claim.TAKEN


def worker_taken(worker_id: str) -> str:
    """Why a worker is refused the id ``worker_id``, whichever store holds the study."""
    return (f"worker id {worker_id!r} is held by another live worker of this study; give "
            "each worker its own --worker-id, or leave it out (default: HOST:PID)")


def locked(path: Path, flags: int, lock: int, cannot: str) -> int | None:
    """``path`` opened with ``flags`` and ``flock``ed with ``lock``: its descriptor (closing
    it drops the lock), or ``None`` where another process holds the lock (``LOCK_NB``); a
    StudyError, ``cannot`` and why, where it cannot be opened."""
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        raise StudyError(f"{cannot}: {err.strerror or err}") from None
    try:
        fcntl.flock(fd, lock)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class StudyLock:
    """An exclusive ``flock`` on the study folder's lock file, re-entrant in a process (a
    claimed trial is appended while the claim is checked, under the same lock)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock (waiting for another process that holds it)."""
        with self._mutex:
            if self._depth == 0:
                self._fd = locked(self.root / LOCK, os.O_RDWR | os.O_CREAT, fcntl.LOCK_EX,
                                  f"{self.root}: cannot lock the study")
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)       # closing releases the flock
                    self._fd = None


class WorkerLocks:
    """The worker ids this process holds in one study folder (an ``flock`` each), and
    whether another process holds an id; every step under the folder's :class:`StudyLock`."""

    def __init__(self, root: Path, lock: StudyLock) -> None:
        self.root, self.lock = root, lock
        self._fds: dict[str, int] = {}

    def path(self, worker_id: str) -> Path:
        """The lock file of ``worker_id`` (hashed: an id may hold any character)."""
        digest = hashlib.sha256(worker_id.encode()).hexdigest()[:16]
        return self.root / f".worker-{digest}.lock"

    def enlist(self, worker_id: str) -> None:
        """Hold ``worker_id`` for this process; a StudyError if another process holds it."""
        with self.lock.held():
            if worker_id in self._fds:
                return
            fd = locked(self.path(worker_id), os.O_RDWR | os.O_CREAT,
                        fcntl.LOCK_EX | fcntl.LOCK_NB,
                        f"{self.root}: cannot lock worker id {worker_id!r}")
            if fd is None:
                raise StudyError(f"{self.root}: {worker_taken(worker_id)}")
            self._fds[worker_id] = fd

    def alive(self, worker_id: str) -> bool:
        """Whether a live process holds ``worker_id`` (call under the study lock); a dead
        holder's lock file is removed."""
        if worker_id in self._fds:
            return True
        try:
            fd = os.open(self.path(worker_id), os.O_RDWR)
        except FileNotFoundError:
            return False                     # let go, or found dead before
        except OSError:
            return True                      # cannot tell: the lease decides
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)                     # closing drops a lock just taken
        self.path(worker_id).unlink(missing_ok=True)
        return False

    def close(self) -> None:
        """Let every id go (each lock file removed, then its lock dropped)."""
        if not self._fds:
            return
        with self.lock.held():
            for worker_id, fd in self._fds.items():
                self.path(worker_id).unlink(missing_ok=True)
                os.close(fd)
            self._fds.clear()


@dataclass(frozen=True)
class Held:
    """A claim as a store keeps it: the worker holding it, whether its lease ran out (by
    the store's clock) and whether its trial is recorded (``done``: never claimed again)."""

    worker: str
    expired: bool
    done: bool


def holds(held: Held | None, worker_id: str) -> bool:
    """Whether ``held`` is ``worker_id``'s claim, its trial not yet recorded."""
    return held is not None and held.worker == worker_id and not held.done


class ClaimsFile:
    """``claims.json`` of one study folder as one step under its :class:`StudyLock` sees
    it (:meth:`sweeper.store.Storage.claim`): read when the step begins, replaced whole at
    each change."""

    def __init__(self, root: Path, workers: WorkerLocks) -> None:
        self.path = root / CLAIMS
        self.workers = workers
        self._claims = self._load()

    def get(self, key: str) -> Held | None:
        """``key``'s claim, or ``None``."""
        held = self._claims.get(key)
        return None if held is None else Held(held["worker"], held["expires"] <= time.time(),
                                              held["done"])

    def put(self, key: str, worker_id: str, lease_s: float, *, new: bool) -> bool:
        """Give ``key`` to ``worker_id`` for ``lease_s`` (under the lock, no other worker
        claimed it meanwhile, ``new`` or not)."""
        self._claims[key] = {"worker": worker_id, "expires": time.time() + lease_s,
                             "done": False}
        self._save()
        return True

    def finish(self, key: str) -> None:
        """Mark ``key``'s claim done, once its trial is appended."""
        self._claims[key]["done"] = True
        self._save()

    def delete(self, key: str) -> None:
        """Drop ``key``'s claim."""
        del self._claims[key]
        self._save()

    def alive(self, worker_id: str) -> bool:
        """Whether a live process holds ``worker_id`` (:meth:`WorkerLocks.alive`)."""
        return self.workers.alive(worker_id)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            raise StudyError(f"{self.path}: cannot read the claims ({err}); stop every "
                             "worker of this study and remove the file") from None
        if not isinstance(data, dict):
            raise StudyError(f"{self.path}: not a JSON object of claims; stop every worker "
                             "of this study and remove the file")
        return data

    def _save(self) -> None:
        atomic_write(self.path, json.dumps(self._claims, sort_keys=True) + "\n")
