"""The storage interface every part of sweeper uses to keep a study: what a run, a worker,
a report, an export or a comparison may ask of a store, whatever holds it.

Two backends implement it: :class:`~sweeper.store.StudyStore`, the journal in a study folder
(the default), and :class:`~sweeper.store._postgres.PostgresStore`, a PostgreSQL database
that workers on many hosts share.  One contract test suite (``tests/test_store_contract.py``)
runs against both, so they keep the same promises:

- a study is its metadata (``study.json``'s object) and its records, in the order they were
  appended; a record on return from :meth:`Storage.append` survives a crash;
- a record that is not one (a wrong field, a trial number already recorded, a final naming
  a trial not recorded) is refused with a :class:`~sweeper.errors.StudyError`, nothing kept;
- a config is measured once however many workers share the study: a worker *claims* its
  key first (:meth:`Storage.claim`), keeps the claim alive (:meth:`Storage.heartbeat`) and
  records the trial through it (:meth:`Storage.record_claimed`); a claim not renewed for
  its lease may be taken by another worker, and a recorded key is never claimed again.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from sweeper.store._dims import complete_dims
from sweeper.store._journal import BadLine
from sweeper.store._records import BaselineRecord, TrialRecord
from sweeper.store._schema import Record

R = TypeVar("R", bound=Record)


def claim_key(key: Sequence[str]) -> str:
    """A config's key (:meth:`TrialRecord.key`) as the text claims are kept under."""
    return json.dumps(list(key))


def record_key(data: dict[str, Any]) -> str | None:
    """The claim key of a trial record's JSON; None for other kinds."""
    if data.get("kind") != "trial":
        return None
    return claim_key([f"{k}={v}" for k, v in sorted(data["choice"].items())])


class Storage(ABC):
    """One study in some store.  ``root`` is the local folder where the study's report
    and exports are written (the study folder itself for the journal)."""

    root: Path

    @property
    @abstractmethod
    def name(self) -> str:
        """The study's name."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the records are, as messages name it (a file, or a URL and study)."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether a study was created here."""

    def orphaned(self) -> bool:
        """Records without metadata: nothing says what they measured (journal only)."""
        return False

    @abstractmethod
    def create(self, meta: dict[str, Any]) -> None:
        """Create the study with ``meta``, replacing the metadata of one already there."""

    @abstractmethod
    def meta(self) -> dict[str, Any]:
        """The checked metadata; a missing or malformed one is a StudyError."""

    @abstractmethod
    def update_meta(self, **changes: Any) -> None:
        """Replace keys of the metadata with ``changes``, all or nothing."""

    @abstractmethod
    def open_journal(self) -> None:
        """Take the study for this process (a run does this before reading it)."""

    @abstractmethod
    def share(self) -> None:
        """Open the study for appending alongside other workers (``sweeper worker``)."""

    @abstractmethod
    def append(self, record: Any) -> None:
        """Append one record (anything with ``to_json()``), checked; kept on return."""

    @abstractmethod
    def close(self) -> None:
        """Release the study; every record appended is already kept."""

    @abstractmethod
    def raw_records(self, warn: bool = True) -> list[dict[str, Any]]:
        """Every good record's JSON, in the order appended."""

    def bad_lines(self) -> list[BadLine]:
        """What reads set aside as not records (only a journal can hold such lines)."""
        return []

    @abstractmethod
    def claim(self, key: str, worker_id: str, lease_s: float) -> bool:
        """Whether ``worker_id`` now holds ``key`` (a :func:`claim_key`) for ``lease_s``:
        false when a trial of it is recorded, or another worker's claim is still alive."""

    @abstractmethod
    def heartbeat(self, key: str, worker_id: str, lease_s: float) -> bool:
        """Extend ``worker_id``'s claim of ``key`` by ``lease_s``; false if it lost it."""

    @abstractmethod
    def record_claimed(self, key: str, worker_id: str, record: TrialRecord
                       ) -> TrialRecord | None:
        """Append ``record`` (the trial of ``key``) under the next free trial number, if
        ``worker_id`` still holds ``key``; the record as kept, or None (claim lost)."""

    @abstractmethod
    def release(self, key: str, worker_id: str) -> None:
        """Give up ``worker_id``'s claim of ``key`` unmeasured (another may take it now)."""

    def records(self, *, warn: bool = True) -> tuple[list[TrialRecord], list[BaselineRecord]]:
        """The trials and baselines; a problem recorded without dimensions (a journal older
        than them) gets those the study's kernel derives from its footprint."""
        trials: list[TrialRecord] = []
        baselines: list[BaselineRecord] = []
        for data in self.raw_records(warn):
            if data["kind"] == "trial":
                trials.append(TrialRecord.from_json(data))
            elif data["kind"] == "baseline":
                baselines.append(BaselineRecord.from_json(data))
        complete_dims([*trials, *baselines], self.meta)
        return trials, baselines

    def read(self, cls: type[R]) -> list[R]:
        """The records of record type ``cls`` (``FinalRecord``, ``DriftRecord``...), in the
        order appended."""
        kind = cls.__dataclass_fields__["kind"].default     # type: ignore[attr-defined]
        out = [cls.from_json(data) for data in self.raw_records(True) if data["kind"] == kind]
        complete_dims(out, self.meta)
        return out

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RawRecord:
    """A record's JSON as read, appended elsewhere as it is (a copied study)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_json(self) -> dict[str, Any]:
        """The JSON as read."""
        return self.data
