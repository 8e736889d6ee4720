"""A study in PostgreSQL, shared by workers on any number of hosts (``--storage
postgresql://USER@HOST/DB``).

Three tables, made on first use (SQLAlchemy Core, psycopg 3): ``sweeper_studies`` (a study's
name and its metadata), ``sweeper_records`` (one row a record, in the order appended: the
study, ``kind``, a trial's ``number`` and config ``key``, and the record's journal line) and
``sweeper_claims`` (which worker measures which config, until when).  The record is kept as
the journal's text, not JSONB: a record may hold NaN (a statistic a hand-written journal left
out), which PostgreSQL's JSON types refuse, and the same bytes as the journal's line make a
copied study comparable byte for byte.  Every record is checked as the journal checks it
(:func:`sweeper.store._journal.encode_record`) and a unique index on (study, trial number)
backs that check across hosts; reads check the rows again as the journal's lines, so a row
written by other means is set aside, with a warning, as a journal's bad line is.

Claims: a claim is a row inserted with ``ON CONFLICT DO NOTHING``, so two workers cannot
both insert it; taking over a claim whose lease ran out, renewing and finishing one lock its
row (``SELECT ... FOR UPDATE``), and a finished claim stays, marked done, so the key is never
claimed again.  Lease times are the server's clock (``now()``), one clock for every host.
A worker id is held by the session advisory lock of :func:`lock_key` on the
process's own connection (:meth:`PostgresStore.enlist`): a killed process's connection
closes and its session ends, so a claim whose holder holds no such lock (``pg_locks``) is
taken at once; one whose holder's session lives on (a host cut off) waits for its lease.

Who may write: ``sweeper run`` holds a session advisory lock on a key derived from the study's
name (``pg_try_advisory_lock``), workers hold it shared (``pg_try_advisory_lock_shared``),
each on a connection of its own kept for as long as the store is open; a session lock ends
with its session, so a killed process leaves none behind.  Appends and metadata edits
hold the study's row (``SELECT ... FOR UPDATE``), so each sees every one before it.

Why not Optuna's RDB storage: it stores Optuna trials (parameters and one value each), not
sweeper's records (raw samples, statistics, flags, baselines, finals), has no claims, and
would be a second record of the study beside the journal format every reader knows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from sweeper.errors import StorageError, StudyError, SweeperError
from sweeper.store._axes_damage import axes_refused
from sweeper.store._base import Storage, check_copied, counts, kept_once, record_key
from sweeper.store._claims_file import BUSY_COPY, BUSY_RUN, Held, busy, worker_taken
from sweeper.store._journal import Scan, encode_record, scan_bytes
from sweeper.store._ledger import Ledger, study_axes
from sweeper.store._meta import checked_meta
from sweeper.store._records import TrialRecord
from sweeper.store._schema import record_class
from sweeper.store._url import SHAPE, database_url, mask_url, with_timeouts

SCHEMA = sa.MetaData()
STUDIES = sa.Table("sweeper_studies", SCHEMA,
                   sa.Column("name", sa.Text, primary_key=True),
                   sa.Column("meta", sa.Text, nullable=False))
RECORDS = sa.Table("sweeper_records", SCHEMA,
                   sa.Column("seq", sa.BigInteger, sa.Identity(), primary_key=True),
                   sa.Column("study", sa.Text, sa.ForeignKey("sweeper_studies.name"),
                             nullable=False),
                   sa.Column("kind", sa.Text, nullable=False),
                   sa.Column("number", sa.Integer),
                   sa.Column("key", sa.Text),
                   sa.Column("line", sa.Text, nullable=False))
sa.Index("sweeper_records_trial_number", RECORDS.c.study, RECORDS.c.number, unique=True,
         postgresql_where=RECORDS.c.kind == "trial")
sa.Index("sweeper_records_key", RECORDS.c.study, RECORDS.c.key)
CLAIMS = sa.Table("sweeper_claims", SCHEMA,
                  sa.Column("study", sa.Text, primary_key=True),
                  sa.Column("key", sa.Text, primary_key=True),
                  sa.Column("worker", sa.Text, nullable=False),
                  sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
                  sa.Column("done", sa.Boolean, nullable=False, default=False))

#: The advisory lock taken while the tables are made, so workers starting together agree.
_DDL_LOCK = 0x5EE9E7
_engines: dict[str, sa.Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> sa.Engine:
    """One engine (a connection pool) per URL in this process, its tables made; psycopg 3
    is the driver whatever the URL names.  The URL is checked first (a malformed one is
    refused before any connection is tried) and given sweeper's time limits where it sets
    none (:func:`sweeper.store._url.with_timeouts`); a failure of the database is one line
    (:func:`_on_error`)."""
    with _engines_lock:
        if url not in _engines:
            real = with_timeouts(database_url(url)).set(drivername="postgresql+psycopg")
            engine = sa.create_engine(real, pool_pre_ping=True)
            sa.event.listen(engine, "handle_error", functools.partial(_on_error, url))
            try:
                with engine.begin() as c:
                    c.execute(sa.select(sa.func.pg_advisory_xact_lock(_DDL_LOCK)))
                    SCHEMA.create_all(c)
            except BaseException:
                engine.dispose()
                raise
            _engines[url] = engine
        return _engines[url]


def _on_error(url: str, context: sa.engine.ExceptionContext) -> None:
    """Raise a failure of the database at ``url`` as one line naming it (masked): one
    that cannot be reached, went away, or ran past a time limit is a :class:`StorageError`
    (exit status 1), a parameter the driver refuses when connecting is bad input.  Every
    other error (a constraint, a conflict between transactions that the code retries) is
    left as SQLAlchemy raises it, as is the pool's own check of a connection (it opens a
    fresh one when that fails)."""
    error = context.original_exception
    if context.is_pre_ping or isinstance(error, psycopg.errors.TransactionRollback):
        return
    reason = _reason(error, url)
    if context.connection is None and _refused(error):
        raise SweeperError(f"{mask_url(url)}: the database refuses the connection: "
                           f"{reason}; check the URL's database, user and password")
    if context.connection is None and (isinstance(error, psycopg.ProgrammingError) or
                                       _malformed(error, reason)):
        raise SweeperError(f"{mask_url(url)}: the database driver refuses it: {reason}; "
                           f"allowed: {SHAPE}")
    if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
        what = "cannot reach the database" if context.connection is None else \
            "the database failed"
        failure = f"{mask_url(url)}: {what}: {reason}"
        raise StorageError(f"{failure}; every record appended before is kept there (run the "
                           "same command again to go on)", failure=failure)


#: libpq's refusal of a connection parameter's value before it tries any host
#: (``invalid port number: "99999"``, ``invalid sslmode value: "x"``), as psycopg words it,
#: and the server's refusal of a setting in the URL's ``options`` (``-c
#: statement_timeout=x``: invalid_parameter_value, or a name it has not: undefined_object)
_MALFORMED = re.compile(r'(?:connection is bad: )?invalid |.*FATAL: +(?:invalid value for '
                        r'parameter|unrecognized configuration parameter) "')
_BAD_SETTINGS = ("22023", "42704")


def _malformed(error: BaseException, reason: str) -> bool:
    """Whether a connection was refused for a parameter of the URL that cannot be taken
    (by libpq, or a server setting by the server): the URL's fault, which running again
    cannot mend, as :func:`_refused`'s."""
    return getattr(error, "sqlstate", None) in _BAD_SETTINGS or \
        _MALFORMED.match(reason) is not None


#: The server's answers to a connection that name its database, user or password wrong
#: (invalid_catalog_name, invalid_authorization_specification, invalid_password): the
#: URL's fault, which running again cannot mend.
_REFUSALS = ("3D000", "28000", "28P01")


def _refused(error: BaseException) -> bool:
    """Whether the server refused the connection for its database, user or password (by
    SQLSTATE where the driver gives it, else by the server's message)."""
    if getattr(error, "sqlstate", None) in _REFUSALS:
        return True
    text = str(error)
    return isinstance(error, psycopg.OperationalError) and (
        ("database" in text and "does not exist" in text) or
        "password authentication failed" in text or
        ("role" in text and "does not exist" in text))


def _reason(error: BaseException, url: str) -> str:
    """The first line of the driver's message, without the URL's password in it."""
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    password = sa.engine.make_url(url).password
    return reason.replace(str(password), "***") if password else reason


def lock_key(*parts: str) -> int:
    """The advisory lock key of a study (``"sweeper-study", NAME``) or of a worker id in
    one (``"sweeper-worker", STUDY, ID``): 64 bits of the SHA-256 of the parts joined by
    NULs; the first part keeps the two kinds, and :data:`_DDL_LOCK`, apart."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


#: Whether some session holds the advisory lock of a 64-bit key: PostgreSQL shows its
#: high half as ``classid``, its low half as ``objid``, with ``objsubid`` 1.
_LOCK_HELD = sa.text(
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND classid = CAST(:high AS oid) AND objid = CAST(:low AS oid) AND objsubid = 1)")


def _lease(lease_s: float) -> Any:
    return sa.func.now() + sa.literal(dt.timedelta(seconds=lease_s), sa.Interval())


class PostgresStore(Storage):
    """Study ``name`` in the database at ``url``; reports and exports go to ``root``."""

    def __init__(self, url: str, name: str, root: str | Path) -> None:
        self.url, self._name, self.root = url, name, Path(root)
        self.engine = engine_for(url)
        self._mutex = threading.Lock()
        #: this process's own session: it holds the study's advisory lock and the worker
        #: ids enlisted
        self._lock_conn: sa.Connection | None = None
        #: what that session holds: the study (``None``) and the worker ids enlisted
        self._held: set[str | None] = set()
        self._warned: set[tuple[str, int]] = set()
        #: the last trial row :meth:`trials_counted` read, and how many it counted to it
        self._counted = (0, 0)

    @property
    def name(self) -> str:
        """The study's name."""
        return self._name

    @property
    def location(self) -> str:
        """The database (without its password) and the study."""
        return f"{mask_url(self.url)} (study {self._name})"

    def absolute(self) -> PostgresStore:
        return self if self.root.is_absolute() else \
            PostgresStore(self.url, self._name, self.root.absolute())

    def exists(self) -> bool:
        """Whether the database has this study."""
        with self.engine.connect() as c:
            return c.execute(sa.select(STUDIES.c.name).where(
                STUDIES.c.name == self._name)).first() is not None

    def create(self, meta: dict[str, Any]) -> bool:
        """Add the study with ``meta`` unless the database has it (``ON CONFLICT DO
        NOTHING``: of processes adding it at once, one does)."""
        with self.engine.begin() as c:
            return self._add(c, meta)

    def _add(self, c: sa.Connection, meta: dict[str, Any]) -> bool:
        """Insert the study's row with ``meta`` unless there is one; whether this did."""
        text = json.dumps(meta, sort_keys=True)
        return c.execute(pg_insert(STUDIES).values(name=self._name, meta=text)
                         .on_conflict_do_nothing(index_elements=[STUDIES.c.name])
                         .returning(STUDIES.c.name)).first() is not None

    def copy_in(self, meta: dict[str, Any], records: list[dict[str, Any]],
                origin: str) -> None:
        """See :meth:`Storage.copy_in`: the study's row and every record are inserted,
        checked as appends are, and read back in one transaction, committed only once
        they read back equal; an interruption or a failure rolls all of it back.  The
        study is taken for this process first, as an append takes it: another process
        making a study of this name (a copy, a run) refuses it, as a study there does."""
        self._take(shared=False, refused=(
            f"another sweeper process is making a study {self._name!r} there (a copy or a "
            "run); give --to another database, or let it finish (the copy keeps the study's "
            "name)"))
        with self.engine.begin() as c:
            if not self._add(c, meta):
                raise self.taken()
            for data in records:
                self._insert(c, data)
            check_copied(origin, self.location, (meta, records),
                         (self._meta(c, lock=False), self._scan_in(c).records))

    def taken(self) -> StudyError:
        """The database has a study of this name."""
        return StudyError(f"{self.location}: a study {self._name!r} is there already; give "
                          "--to another database (the copy keeps the study's name)")

    def meta(self) -> dict[str, Any]:
        """The checked metadata; none, or a malformed one, is a StudyError."""
        with self.engine.connect() as c:
            return self._meta(c, lock=False)

    def _meta(self, c: sa.Connection, *, lock: bool) -> dict[str, Any]:
        query = sa.select(STUDIES.c.meta).where(STUDIES.c.name == self._name)
        row = c.execute(query.with_for_update() if lock else query).first()
        if row is None:
            raise StudyError(f"{self.location}: no such study")
        return checked_meta(json.loads(row.meta), self.location)

    def edit_meta(self, edit: Callable[[dict[str, Any]], None]) -> None:
        """Read, ``edit`` and write the metadata in one transaction holding the study's
        row (``SELECT ... FOR UPDATE``): another process's edit waits for it."""
        with self.engine.begin() as c:
            meta = self._meta(c, lock=True)
            edit(meta)
            c.execute(sa.update(STUDIES).where(STUDIES.c.name == self._name)
                      .values(meta=json.dumps(meta, sort_keys=True)))

    def open_journal(self) -> None:
        """Take the study's advisory lock for this process alone (``sweeper run``)."""
        self._take(shared=False)

    def hold(self) -> None:
        """Take the study's advisory lock for this process alone, as a run does."""
        self._take(shared=False, refused=BUSY_COPY)

    def share(self) -> None:
        """Take the study's advisory lock shared with other workers."""
        self._take(shared=True)

    def _take(self, *, shared: bool, refused: str | None = None) -> None:
        """Hold the study's session advisory lock on a connection of its own (detached
        from the pool: closing it ends the session, and with it the lock); a lock this
        store holds already, either way, is kept as it is.  Where another session holds
        it, a StudyError saying ``refused`` (by default what a worker or a run is told)."""
        take = sa.func.pg_try_advisory_lock_shared if shared else sa.func.pg_try_advisory_lock
        self._hold(None, take(lock_key("sweeper-study", self._name)),
                   refused or (BUSY_RUN if shared else busy()))

    def _hold(self, what: str | None, lock: Any, refused: str) -> None:
        """Take the advisory lock ``lock`` (of the study, ``what`` None, or of the worker id
        ``what``) on this process's own session, unless it holds it already; a StudyError
        saying ``refused`` while another session holds it."""
        with self._mutex:
            if what in self._held:
                return
            if not self._session().execute(sa.select(lock)).scalar():
                raise StudyError(f"{self.location}: {refused}")
            self._held.add(what)

    def _session(self) -> sa.Connection:
        """This process's own session (``_mutex`` held): a connection detached from the
        pool, so that closing it ends the session and the locks it holds."""
        if self._lock_conn is None:
            conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            conn.detach()
            self._lock_conn = conn
            weakref.finalize(self, conn.close)
        return self._lock_conn

    def close(self) -> None:
        """Release the study's advisory lock; every record is committed when appended.
        The lock is released by a statement before the connection closes: a closed
        connection's session ends on the server a moment later, and a process opening the
        study right after (a resume) could find it still held."""
        with self._mutex:
            if self._lock_conn is not None:
                with contextlib.suppress(sa.exc.SQLAlchemyError, StorageError):
                    self._lock_conn.execute(sa.select(sa.func.pg_advisory_unlock_all()))
                self._lock_conn.close()
                self._lock_conn = None
            self._held.clear()

    def append(self, record: Any) -> None:
        """Check ``record`` as the journal does and insert it, holding the study's row so
        that appends are checked against every record before them; the study is taken for
        this process first unless it is already (as a journal's first append does)."""
        self._take(shared=False)
        with self.engine.begin() as c:
            self._insert(c, record.to_json(), once=kept_once(record))

    def _insert(self, c: sa.Connection, data: dict[str, Any], once: str | None = None
                ) -> None:
        """Insert ``data`` checked, the study's row held; with ``once`` (a baseline's key),
        only if no record of that key is there."""
        meta = self._meta(c, lock=True)
        if once is not None and c.execute(sa.select(RECORDS.c.seq).where(
                RECORDS.c.study == self._name, RECORDS.c.key == once).limit(1)).first():
            return
        line = encode_record(data, lambda record: self._ledger(c, meta, record), self.location)
        c.execute(sa.insert(RECORDS).values(
            study=self._name, kind=data["kind"], key=record_key(data),
            number=data["number"] if data["kind"] == "trial" else None,
            line=line.decode().rstrip("\n")))

    def _ledger(self, c: sa.Connection, meta: dict[str, Any], data: dict[str, Any]) -> Ledger:
        """The ledger a record ``data`` (its fields checked) is checked against: the
        study's axes, and of its trials those the check reads (of the record's number or
        config, or those it names), each at its place among the study's records: a few
        rows, not every row at every insert."""
        ledger = Ledger(study_axes(meta))
        refs = getattr(record_class(data["kind"]), "trial_refs", None)
        numbers = [data["number"]] if data["kind"] == "trial" else refs(data) if refs else []
        if numbers:
            at = sa.func.row_number().over(order_by=RECORDS.c.seq).label("at")
            rows = sa.select(RECORDS.c.kind, RECORDS.c.number, RECORDS.c.key, RECORDS.c.line,
                             at).where(RECORDS.c.study == self._name).subquery()
            wanted = rows.c.number.in_(numbers) | (rows.c.key == (record_key(data) or ""))
            for row in c.execute(sa.select(rows).where(rows.c.kind == "trial", wanted)
                                 .order_by(rows.c.at)):
                line = json.loads(row.line)
                ledger.add_trial(row.number, tuple(json.loads(row.key)), row.at,
                                 line.get("source_hash"), bool(line.get("retry")))
        return ledger

    def _scan(self) -> Scan:
        """The study's records checked as a journal holding their lines would be.  Each
        was checked when it was inserted; a row written by other means, or before a check
        existed, is set aside as a journal's bad line is, numbered by its place."""
        with self.engine.connect() as c:
            return self._scan_in(c)

    def _scan_in(self, c: sa.Connection) -> Scan:
        """:meth:`_scan` as connection ``c`` sees the study (within its transaction); a
        StudyError where the metadata's axes are damaged
        (:func:`~sweeper.store._axes_damage.axes_refused`), as a study folder's are
        refused, rather than its trials set aside."""
        try:
            meta = self._meta(c, lock=False)
        except StudyError:
            meta = {}                       # no study (no records) or its metadata says why
        lines = c.execute(sa.select(RECORDS.c.line).where(RECORDS.c.study == self._name)
                          .order_by(RECORDS.c.seq)).scalars().all()
        data = b"".join(line.encode() + b"\n" for line in lines)
        found = scan_bytes(data, study_axes(meta))
        refused = axes_refused(found, lambda: scan_bytes(data), meta,
                               lambda keys: self.location, self.location,
                               f"its metadata ({STUDIES.name}.meta)", "give another --study")
        if refused is not None:
            raise refused
        return found

    def trials_counted(self) -> int:
        """See :meth:`Storage.trials_counted`: the trial rows appended since the last
        count are read, not every row at every count."""
        seq, count = self._counted
        with self.engine.connect() as c:
            rows = c.execute(sa.select(RECORDS.c.seq, RECORDS.c.line).where(
                RECORDS.c.study == self._name, RECORDS.c.kind == "trial",
                RECORDS.c.seq > seq).order_by(RECORDS.c.seq)).all()
        for row in rows:
            seq = row.seq
            with contextlib.suppress(ValueError, AttributeError):
                count += counts(json.loads(row.line))
        self._counted = (seq, count)
        return count

    def enlist(self, worker_id: str) -> None:
        """See :meth:`Storage.enlist`: the session advisory lock of :func:`lock_key`
        on this process's own connection."""
        lock = sa.func.pg_try_advisory_lock(lock_key("sweeper-worker", self._name, worker_id))
        self._hold(worker_id, lock, worker_taken(worker_id))

    @contextlib.contextmanager
    def _claims(self) -> Iterator[_Claims]:
        """The study's claims in one transaction."""
        with self.engine.begin() as c:
            yield _Claims(self._name, c)

    def _kept(self, claims: _Claims, key: str) -> Iterator[dict[str, Any]]:
        """The study's rows of ``key``, read one at a time."""
        lines = claims.c.execute(sa.select(RECORDS.c.line).where(
            RECORDS.c.study == self._name, RECORDS.c.key == key).order_by(RECORDS.c.seq))
        return (json.loads(line) for line in lines.scalars())

    def _append_next(self, claims: _Claims, record: TrialRecord) -> TrialRecord:
        """Insert ``record`` under the next free trial number, the study's row held."""
        self._meta(claims.c, lock=True)
        last = claims.c.execute(sa.select(sa.func.max(RECORDS.c.number)).where(
            RECORDS.c.study == self._name, RECORDS.c.kind == "trial")).scalar()
        kept = dataclasses.replace(record, number=0 if last is None else last + 1)
        self._insert(claims.c, kept.to_json())
        return kept


class _Claims:
    """Study ``study``'s claims in one transaction on ``c``, each row locked as it is read
    (``SELECT ... FOR UPDATE``); a new claim is a row inserted ``ON CONFLICT DO NOTHING``,
    so two workers cannot both insert it."""

    def __init__(self, study: str, c: sa.Connection) -> None:
        self.study, self.c = study, c

    def get(self, key: str) -> Held | None:
        """The claim's row, locked, with ``expired`` by the server's clock; None if none."""
        row = self.c.execute(sa.select(CLAIMS.c.worker, CLAIMS.c.done,
                                       (CLAIMS.c.expires < sa.func.now()).label("expired"))
                             .where(self._row(key)).with_for_update()).first()
        return None if row is None else Held(row.worker, row.expired, row.done)

    def put(self, key: str, worker_id: str, lease_s: float, *, new: bool) -> bool:
        """Give ``key`` to ``worker_id`` for ``lease_s``; a ``new`` claim only if no other
        worker inserted one meanwhile (whether it did)."""
        if new:
            return self.c.execute(pg_insert(CLAIMS).values(
                study=self.study, key=key, worker=worker_id, expires=_lease(lease_s),
                done=False).on_conflict_do_nothing().returning(CLAIMS.c.key)
            ).first() is not None
        self._set(key, worker=worker_id, expires=_lease(lease_s))
        return True

    def finish(self, key: str) -> None:
        """Mark the claim done: its key is never claimed again."""
        self._set(key, done=True)

    def delete(self, key: str) -> None:
        """Drop the claim."""
        self.c.execute(sa.delete(CLAIMS).where(self._row(key)))

    def alive(self, worker_id: str) -> bool:
        """Whether some session holds ``worker_id`` (:meth:`PostgresStore.enlist`)."""
        key = lock_key("sweeper-worker", self.study, worker_id) & 0xFFFFFFFFFFFFFFFF
        return bool(self.c.execute(_LOCK_HELD, {"high": key >> 32,
                                                "low": key & 0xFFFFFFFF}).scalar())

    def _row(self, key: str) -> Any:
        return sa.and_(CLAIMS.c.study == self.study, CLAIMS.c.key == key)

    def _set(self, key: str, **values: Any) -> None:
        self.c.execute(sa.update(CLAIMS).where(self._row(key)).values(**values))
