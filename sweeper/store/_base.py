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
- a study is created once: of processes creating it at once, one does and the others
  find it there (:meth:`Storage.create`), so workers started together all join it;
- a config is measured once however many workers share the study: a worker *claims* its
  key first (:meth:`Storage.claim`), keeps the claim alive (:meth:`Storage.heartbeat`) and
  records the trial through it (:meth:`Storage.record_claimed`); a recorded key is never
  claimed again, but for one whose trial is to be measured again (``retry``: its worker
  was killed from outside), claimed and recorded once more.  A claim's holder is a worker
  id that one live process holds (:meth:`Storage.enlist`): a claim whose holder's process
  is gone is taken by another worker at once, and one not renewed for its lease (a
  holder hung, or on a host that is gone) after that lease;
- a problem's torch baseline is kept once per study: every worker measures it before its
  first config of the problem (none waits on another's), and an append of a baseline the
  study holds already keeps nothing, checked under the store's lock or transaction.  A
  claim for it was the other way; it would leave the problem without one when its holder
  dies, for a measurement as long as one trial.  Readers that find several (a study
  written before this rule) take the first;
- the metadata is changed by an atomic read-modify-write (:meth:`Storage.edit_meta`): two
  processes resuming the study at once both leave their ``resumed`` entry;
- a copied study is there whole or not at all (:meth:`Storage.copy_in`): a copy
  interrupted leaves nothing that reads as the study, and the same copy can run again;
- one ``sweeper run`` holds a study at a time (:meth:`Storage.open_journal`), and never
  alongside ``sweeper worker``s (:meth:`Storage.share`); the lock goes with its process.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from sweeper.errors import StudyError
from sweeper.store._claims_file import Claim, holds
from sweeper.store._journal import BadLine, Scan, warn_new
from sweeper.store._ledger import study_axes, widened
from sweeper.store._meta import StudyMeta, named
from sweeper.store._records import BaselineRecord, TrialRecord, key_of
from sweeper.store._schema import Record
from sweeper.store._upgrade import complete_dims
from sweeper.trial import TrialStatus

R = TypeVar("R", bound=Record)


def claim_key(key: Sequence[str], source: str | None = None) -> str:
    """A config's key (:meth:`TrialRecord.key`) as the text claims are kept under; with
    ``source`` (a kernel source hash), its claim on that source only: ``<key>@<source>``,
    done once a trial of the config records that source (a study resumed with
    ``--force`` after its kernel changed measures again what an earlier source measured)."""
    return json.dumps(list(key)) + (f"@{source}" if source is not None else "")


def claimed(key: str) -> tuple[str, str | None]:
    """A :func:`claim_key`'s config key (as :func:`record_key` gives a trial's) and
    source hash (None: any source)."""
    config, at, source = key.rpartition("@")
    return (config, source) if at and config.endswith("]") else (key, None)


def record_key(data: dict[str, Any]) -> str | None:
    """The key a record's JSON is kept once under: a trial's claim key, or
    ``baseline:<problem>`` for a baseline; None for other kinds."""
    if data.get("kind") == "baseline":
        dims = sorted(data.get("dims", {}).items())
        return "baseline:" + json.dumps([data["dtype"], data["footprint"],
                                         data.get("cache", "cold"), dims])
    return claim_key(key_of(data["choice"])) if data.get("kind") == "trial" else None


def kept_once(record: Any) -> str | None:
    """The baseline key of ``record`` when an append keeps it only if the study has none
    yet; None for every other record, and for a copied one (a copy carries a study as it
    is, duplicates of an older study included)."""
    if isinstance(record, RawRecord):
        return None
    key = record_key(record.to_json())
    return key if key is not None and key.startswith("baseline:") else None


def first_baselines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without a baseline of a problem that has one before it."""
    seen: set[str | None] = set()
    out = []
    for data in records:
        key = record_key(data) if data["kind"] == "baseline" else None
        if key is None or key not in seen:
            seen.add(key)
            out.append(data)
    return out


def measured_again(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without each trial to be measured again (``retry``: its worker was
    killed from outside) that a later trial of its config on its kernel source measured
    again: a study reads as that config's one trial (the journal keeps both)."""
    waiting: dict[tuple[tuple[str, ...], str | None], int] = {}
    again: set[int] = set()
    for at, data in enumerate(records):
        if data["kind"] != "trial" or not (waiting or data.get("retry")):
            continue
        key = (key_of(data["choice"]), data.get("source_hash"))
        if key in waiting:
            again.add(waiting.pop(key))
        if data.get("retry"):
            waiting[key] = at
    return [d for at, d in enumerate(records) if at not in again] if again else records


def counts(data: dict[str, Any]) -> bool:
    """Whether the trial budget counts a trial record's JSON ``data``, as
    :func:`~sweeper.trial.trials_counted` counts: all but those the constraints ruled out
    and those to be measured again (their config's next trial counts)."""
    return data.get("status") != TrialStatus.INVALID.value and not data.get("retry")


def check_copied(origin: str, where: str, wanted: tuple[dict[str, Any], list[dict[str, Any]]],
                 found: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """Refuse a copy of a study at ``origin`` that reads back at ``where`` as ``found``
    (metadata, records) where it was read as ``wanted``; the copy is not to be kept."""
    if found != wanted:
        raise StudyError(f"{where}: the copy does not read back as {origin} does; "
                         "nothing was copied")


class Storage(ABC):
    """One study in some store.  ``root`` is the local folder where the study's report
    and exports are written (the study folder itself for the journal)."""

    root: Path
    #: what a warning says becomes of a record that reads set aside
    SET_ASIDE = "set aside (the study goes on without it)"
    _warned: set[tuple[str, int]]      # the set-aside lines warned of: each once a store

    @property
    @abstractmethod
    def name(self) -> str:
        """The study's name."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the records are, as messages name it (a file, or a URL and study)."""

    @abstractmethod
    def absolute(self) -> Storage:
        """This study with its local folder (``root``) by its absolute path, from the
        current folder now: a store held after the process changes folder (a notebook's
        ``%cd``) still reads and reports into its own.  Itself where it is absolute."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether a study was created here."""

    def orphaned(self) -> bool:
        """Records without metadata: nothing says what they measured (journal only)."""
        return False

    @abstractmethod
    def create(self, meta: dict[str, Any]) -> bool:
        """Create the study with ``meta`` unless one is there already; whether this call
        created it.  Atomic: of processes creating the study at once, exactly one does and
        the others find it there (``meta`` of theirs is not written)."""

    @abstractmethod
    def copy_in(self, meta: dict[str, Any], records: list[dict[str, Any]],
                origin: str) -> None:
        """Create the study holding ``meta`` and ``records`` (their JSON as read at
        ``origin``, named in messages), all or nothing: on return it is here and reads
        back equal (:func:`check_copied`); after an interruption or a failure no study is
        here, so the same copy can run again.  :meth:`taken` where a study of this name
        is here already."""

    @abstractmethod
    def taken(self) -> StudyError:
        """The error of a copy into this store where the study's name is taken: what is
        there, and what the user can do instead (the copy keeps the study's name)."""

    @abstractmethod
    def meta(self) -> dict[str, Any]:
        """The checked metadata as its JSON object (what a copy or an edit works on); a
        missing or malformed one is a StudyError."""

    def study_meta(self) -> StudyMeta:
        """The checked metadata, typed: what readers ask of it.  Its ``study`` is the
        name the study is held under (:func:`~sweeper.store._meta.named`: a folder copied
        under another name is the study of that name), whatever the metadata recorded."""
        return StudyMeta.from_json(named(self.meta(), self.name))

    @abstractmethod
    def edit_meta(self, edit: Callable[[dict[str, Any]], None]) -> None:
        """Change the metadata by ``edit`` (called on it, changing it in place) in one
        atomic read-modify-write: no other process changes it in between."""

    def update_meta(self, **changes: Any) -> None:
        """Replace keys of the metadata with ``changes``, all or nothing."""
        self.edit_meta(lambda meta: meta.update(changes))

    def note_resumed(self, when: str, axes: Mapping[str, Sequence[str]] | None = None,
                     sampler: Mapping[str, Any] | None = None, forced: Sequence[str] = (),
                     environment: Mapping[str, Any] | None = None,
                     budget: Mapping[str, Any] | None = None, **changes: Any) -> None:
        """Add ``when`` to the metadata's ``resumed`` list, ``budget`` (this run's, as
        :class:`~sweeper.store._meta.RunBudget` keeps it) to its ``budgets``, the labels
        of ``axes`` (the space this process sweeps) to the study's axes
        (:func:`~sweeper.store._ledger.widened`:
        its trials are checked against them), make ``sampler`` (this run's) its
        ``sampler``, added to its ``samplers`` (each it ran with, first to last) where it
        is new, add ``forced`` (what differed from its fingerprint in a resume with
        ``--force``, if anything) to its ``forced`` list with ``when``, make
        ``environment`` (this run's) its environment where it forced something, the one
        it replaces kept in that ``forced`` entry where they differ (a resume that forced
        nothing keeps the study's), and replace keys
        with ``changes``, in one edit: processes resuming the study at once each keep
        theirs.  A study recorded under another name than it is
        held under (its folder copied) takes that name now, the old one kept as
        ``copied_from`` (:func:`~sweeper.store._meta.named`)."""
        def edit(meta: dict[str, Any]) -> None:
            meta.update(named(meta, self.name))
            meta.update(changes, resumed=[*meta.get("resumed", []), when])
            if budget is not None:
                meta["budgets"] = [*meta.get("budgets", []), dict(budget)]
            if forced:
                entry: dict[str, Any] = {"when": when, "changed": list(forced)}
                if environment is not None and meta.get("environment") != environment:
                    entry["environment"] = meta.get("environment")
                    meta["environment"] = dict(environment)
                meta["forced"] = [*meta.get("forced", []), entry]
            if axes is not None:
                meta["axes"] = widened(study_axes(meta), axes)
            if sampler is not None:
                ran = meta.get("samplers") or [meta.get("sampler", {})]
                meta["sampler"] = dict(sampler)
                meta["samplers"] = ran if meta["sampler"] in ran else [*ran, meta["sampler"]]

        self.edit_meta(edit)

    @abstractmethod
    def open_journal(self) -> None:
        """Take the study for this process (a run does this before reading it); a
        StudyError (:func:`~sweeper.store._claims_file.busy`) while another process holds it."""

    @abstractmethod
    def hold(self) -> None:
        """Take the study for this process, as a run does, without writing to it: no run
        or worker appends while it is read whole (a copy).  A StudyError
        (``_claims_file.BUSY_COPY``) while a run or a worker holds it; :meth:`close` lets
        it go."""

    @abstractmethod
    def share(self) -> None:
        """Open the study for appending alongside other workers (``sweeper worker``); a
        StudyError (``_claims_file.BUSY_RUN``) while a run holds it."""

    @abstractmethod
    def append(self, record: Any) -> None:
        """Append one record (anything with ``to_json()``), checked; kept on return.  A
        baseline of a problem the study holds one of keeps nothing (:func:`kept_once`)."""

    def append_all(self, records: Sequence[Any]) -> None:
        """Append ``records`` in order, as :meth:`append` would one by one; a backend may
        keep them at one go (the journal: one fsync for all of them).  What a sweep
        records up front, every config the constraints rule out, may be 10⁵ records."""
        for record in records:
            self.append(record)

    @abstractmethod
    def close(self) -> None:
        """Release the study; every record appended is already kept."""

    @abstractmethod
    def _scan(self) -> Scan:
        """The study's records checked as a journal holding their lines is."""

    def raw_records(self, warn: bool = True) -> list[dict[str, Any]]:
        """Every good record's JSON, in the order appended; a line that is not a record
        is set aside, with a warning naming its place (once per line and store) unless
        ``warn`` is false."""
        found = self._scan()
        if warn:
            warn_new(self.location, found, self._warned, self.SET_ASIDE)
        return found.records

    def trials_counted(self) -> int:
        """How many of the study's trials its trial budget counts now, whoever recorded
        them (all but those the constraints ruled out, as
        :func:`~sweeper.trial.trials_counted` counts): workers sharing the study stop at
        its budget together."""
        return sum(1 for d in self._scan().records if d["kind"] == "trial" and counts(d))

    def bad_lines(self) -> list[BadLine]:
        """What reads set aside as not records, numbered by their place in the study."""
        return list(self._scan().bad)

    @abstractmethod
    def enlist(self, worker_id: str) -> None:
        """Hold ``worker_id`` for this process while the store is open (:meth:`close` lets
        it go, and so does the process's death): its claims are alive while it is held.  A
        StudyError when another live process holds it: two processes under one id would
        each take the other's claims as their own and measure every config twice."""

    @abstractmethod
    def _claims(self) -> AbstractContextManager[Any]:
        """The study's claims for one step that sees the study whole (the journal's study
        lock, a PostgreSQL transaction): ``get`` a key's :class:`Held`, ``put`` a key to a
        worker, ``finish`` it, ``delete`` it, and whether a worker is ``alive``."""

    def _recorded(self, claims: Any, key: str) -> bool:
        """Whether a record of ``key`` is kept (within the step ``claims``): of its config,
        on the kernel source it names if it names one (:func:`claimed`), and not to be
        measured again (``retry``)."""
        config, source = claimed(key)
        return any((source is None or data.get("source_hash") == source)
                   and not data.get("retry") for data in self._kept(claims, config))

    @abstractmethod
    def _kept(self, claims: Any, key: str) -> Iterable[dict[str, Any]]:
        """The JSON of each record kept under ``key`` (:func:`record_key`), within the
        step ``claims``."""

    @abstractmethod
    def _append_next(self, claims: Any, record: TrialRecord) -> TrialRecord:
        """Append ``record`` under the next free trial number (within the step
        ``claims``); the record as kept."""

    def claim(self, key: str, worker_id: str, lease_s: float) -> Claim:
        """Take ``key`` (a :func:`claim_key`) for ``worker_id`` for ``lease_s``, enlisting
        it first (:meth:`enlist`): TAKEN, unless a trial of it is recorded (DONE) or
        another worker's claim is alive (HELD): its lease runs and its holder's process is
        not known to be gone."""
        self.enlist(worker_id)
        with self._claims() as claims:
            if self._recorded(claims, key):
                return Claim.DONE
            held = claims.get(key)
            if held is not None and held.done:
                return Claim.DONE
            if held is not None and held.worker != worker_id and not held.expired and \
                    claims.alive(held.worker):
                return Claim.HELD
            # a new claim loses to one another worker made meanwhile (its own step)
            taken = claims.put(key, worker_id, lease_s, new=held is None)
            return Claim.TAKEN if taken else Claim.HELD

    def heartbeat(self, key: str, worker_id: str, lease_s: float) -> bool:
        """Extend ``worker_id``'s claim of ``key`` by ``lease_s``; false if it lost it."""
        with self._claims() as claims:
            if not holds(claims.get(key), worker_id):
                return False
            return bool(claims.put(key, worker_id, lease_s, new=False))

    def record_claimed(self, key: str, worker_id: str, record: TrialRecord
                       ) -> TrialRecord | None:
        """Append ``record`` (the trial of ``key``) under the next free trial number, if
        ``worker_id`` still holds ``key``; the record as kept, or None (claim lost).  One
        step checks the claim, appends the trial and then marks the claim done: a write
        that fails (a full disk) or a kill between the two leaves the config recorded or
        claimable, never done without its trial."""
        with self._claims() as claims:
            if not holds(claims.get(key), worker_id):
                return None
            kept = self._append_next(claims, record)
            claims.finish(key)
            return kept

    def release(self, key: str, worker_id: str) -> None:
        """Give up ``worker_id``'s claim of ``key`` unmeasured (another may take it now)."""
        with self._claims() as claims:
            if holds(claims.get(key), worker_id):
                claims.delete(key)

    def records(self, *, warn: bool = True) -> tuple[list[TrialRecord], list[BaselineRecord]]:
        """The trials and baselines (:meth:`read`, read once)."""
        trials, baselines = self._typed((TrialRecord, BaselineRecord), warn)
        return trials, baselines

    def read(self, cls: type[R]) -> list[R]:
        """The records of record type ``cls`` (``FinalRecord``, ``DriftRecord``...), in the
        order appended; a problem recorded without dimensions (a journal older than them)
        gets those the study's kernel derives from its footprint."""
        return self._typed((cls,), True)[0]

    def _typed(self, classes: Sequence[type[Record]], warn: bool) -> list[list[Any]]:
        """The records of each type of ``classes`` (see :meth:`read`)."""
        kinds: dict[str, tuple[type[Record], list[Any]]] = {
            cls.__dataclass_fields__["kind"].default: (cls, [])   # type: ignore[attr-defined]
            for cls in classes}
        for data in first_baselines(measured_again(self.raw_records(warn))):
            if data["kind"] in kinds:
                cls, out = kinds[data["kind"]]
                out.append(cls.from_json(data))
        found = [out for _, out in kinds.values()]
        complete_dims([record for out in found for record in out], self.meta)
        return found

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
