"""``--format optuna``: a study written as an Optuna study, for ``optuna.load_study``,
its ``trials_dataframe()`` and optuna-dashboard.

Each problem of the sweeper study (its dtype, footprint, cache and dimensions: what a
config is measured on, not chosen) is an Optuna study of its own, so that Optuna's own
tools (best trial, parameter importances, the dashboard) compare configs of one problem:
named after the sweeper study, and where it has several problems, after each problem too
(``copy-fp32 footprint=256MiB``).  Each minimizes the median in ms (its one objective).
Each other axis is a parameter with a categorical distribution of the axis's values
(numbers as numbers), which is what a sweep chooses among.  Every trial is added (of a
study resumed with ``--force`` after its kernel was edited, every trial measured on its
source now, so that Optuna's best trial is one the study could choose;
:class:`~sweeper.winners.Sources`):
``ok`` as COMPLETE with its median; ``abandoned`` (sampling cut short, clearly slower than
the best) as PRUNED; one to be measured again (``retry``: its worker process was killed
from outside, no fault of the kernel's) as WAITING, queued as ``Study.enqueue_trial``
queues one (its config in the ``fixed_params`` system attribute), so the next
``study.optimize`` or ``study.ask`` of an Optuna user measures it again; every other
status as FAIL, with ``status`` and ``reason`` as user attributes (Optuna's own
``fail_reason`` system attribute too).  User attributes also
carry the sweeper trial number, ``retry``, the headline rate (``gbps`` or ``tflops``), the median's
95 % CI and the other statistics, the resolved grid, the number of samples, the
stopping rule and the flags.  A storage that already holds a study of that name is
refused, unless ``replace``: then those studies are deleted and written again from the
journal, which stays the study's one record.

``--to`` is a database URL or a journal file path; a journal file is checked as every
export's file is (no device, FIFO, folder or the study's own record), must be new or an
Optuna journal already, and is replaced whole once the export is written (never left
half-written: :func:`into_journal`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy.exc import SQLAlchemyError

from sweeper.core._model import LAUNCH_AXES
from sweeper.core._spelling import given, option
from sweeper.core._units import counted
from sweeper.errors import SweeperError, WriteError
from sweeper.escape import printable
from sweeper.export import output_file
from sweeper.fsio import make_dirs, write_error, write_temp
from sweeper.fsio import replace as rename_over
from sweeper.interop import Written
from sweeper.kernels import Headline
from sweeper.outcome import killed_from_outside
from sweeper.store import Storage, TrialRecord
from sweeper.store._url import mask_url
from sweeper.trial import TrialStatus
from sweeper.winners import Sources

#: Statistics kept as user attributes, by their name in :class:`~sweeper.measure.Stats`.
STATS = ("median", "ci_lo", "ci_hi", "mean", "min", "max", "p95", "std", "cv", "rel_ci")
#: What every SQLite database file starts with.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: The start Optuna is given for a trial of a study that records no time at all.
UNKNOWN_START = dt.datetime.fromtimestamp(0, dt.timezone.utc)
TARGETS = "a new file, an Optuna journal file or a database URL (sqlite:///FILE.db)"


def write_optuna(store: Storage, target: str | None, *, replace: bool = False
                 ) -> Written:
    """Write ``store`` into the Optuna storage ``target`` (see the module's text): a
    journal file whole or not at all (:func:`into_journal`), a database in its
    transactions (:func:`into_database`).  The Optuna study's name is the sweeper
    study's, each character that is not printable escaped
    (:func:`sweeper.escape.printable`): ``study.json`` is a file anyone can edit, and a
    name must never carry an ESC or a newline into a terminal or a dashboard."""
    if not target:
        raise SweeperError(f"{given('format', 'optuna')} needs {given('target', 'URL')}: "
                           "sqlite:///FILE.db, or a journal file path")
    meta = store.study_meta()
    every, _ = store.records()
    # Optuna's best trial: of the source now; one to measure again, a WAITING trial
    trials = Sources.of(meta).on_source_now(every)
    problem_axes = [a for a in meta.axes if a not in LAUNCH_AXES and a not in meta.param_axes]
    groups = by_problem(trials, problem_axes)
    names = {label: printable(f"{meta.study} {label}" if len(groups) > 1 else meta.study)
             for label in groups}

    def write(storage: Any) -> None:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        held = [n for n in names.values() if n in optuna.get_all_study_names(storage)]
        if held and not replace:
            raise SweeperError(f"{given('target', mask_url(target))}: it already holds an "
                               f"Optuna study {held[0]!r}; pass {given('replace')} to delete "
                               "it and write it again")
        for name in held:
            optuna.delete_study(study_name=name, storage=storage)
        rate = Headline(meta.headline).value
        since = _time(str(meta.created)) or UNKNOWN_START
        for label, group in groups.items():
            study = optuna.create_study(study_name=names[label], storage=storage,
                                        direction="minimize")
            for key, text in {"sweeper_study": printable(str(store.root)),
                              "kernel": printable(meta.kernel), "gpu": printable(meta.gpu),
                              "problem": printable(label),
                              "objective": "median ms (minimize)"}.items():
                study.set_user_attr(key, text)
            dists = distributions(meta.axes, group, skip=problem_axes)
            study.add_trials([frozen(t, dists, rate, since) for t in group])

    where: Path | str = target                  # a database's URL as given, never a path
    if "://" in target:
        into_database(store, target, list(names.values()), write)
    else:
        into_journal(store, target, write)
        where = Path(target)
    shown = ", ".join(repr(n) for n in names.values())
    first = next(iter(names.values()))
    earlier = len(every) - len(trials)
    left_out = "" if not earlier else \
        f"; left out {counted(earlier, 'trial')} measured on an earlier source of the kernel"
    again = sum(1 for t in trials if t.retry)
    waiting = "" if not again else \
        f" ({again} of them WAITING to be measured again: {killed_from_outside(again)})"
    return Written(where, f"wrote {len(trials)} trials{waiting} to the Optuna "
                   f"{'study' if len(names) == 1 else 'studies'} {shown} in "
                   f"{mask_url(target)} (optuna.load_study(study_name={first!r}, "
                   f"storage=...)){left_out}")


def by_problem(trials: list[TrialRecord], problem_axes: list[str]
               ) -> dict[str, list[TrialRecord]]:
    """``trials`` by their problem, in the order met: each labelled by the values of the
    problem axes that differ between problems (``footprint=256MiB dtype=float16``; ``""``
    for a study of one problem).  A trial ruled out before it resolved goes with the
    problem its labels name."""
    keys = {t.number: tuple(t.choice.get(a, "") for a in problem_axes) for t in trials}
    varying = [i for i, _ in enumerate(problem_axes)
               if len({k[i] for k in keys.values()}) > 1]
    groups: dict[str, list[TrialRecord]] = {}
    for t in trials:
        label = " ".join(f"{problem_axes[i]}={keys[t.number][i]}" for i in varying)
        groups.setdefault(label, []).append(t)
    return groups or {"": []}


def into_journal(store: Storage, target: str, write: Callable[[Any], None]) -> None:
    """Run ``write`` on an Optuna journal at ``target``, all or nothing: the checks every
    export's file gets (:func:`sweeper.export.output_file`: no device, FIFO, folder or
    the study's own record), then an existing file must be an Optuna journal
    (:func:`journal_bytes`); its lines are copied to a temporary file beside it, the
    export appended there, and the file renamed over ``target`` once it is whole.  A
    failure (a full disk: exit 1) leaves ``target`` as it was.  The export is one
    command's: a process appending to the same journal meanwhile would lose its lines."""
    path = output_file(store, target)
    temp = write_temp(path, journal_bytes(path, target))
    try:
        write(journal_storage(str(temp)))
        with open(temp, "rb") as journal:
            os.fsync(journal.fileno())
    except OSError as err:
        _remove(temp)
        raise write_error(err, path) from None
    except BaseException:
        _remove(temp)
        raise
    rename_over(temp, path)


def journal_bytes(path: Path, target: str) -> bytes:
    """What the journal file at ``path`` holds: nothing for a new (or empty) file, else
    every line of it, each checked to be an Optuna journal operation (a JSON object with
    an ``op_code``); any other file is refused, ``FILE:LINE`` and why, and left alone."""
    if not path.exists():
        return b""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SweeperError(f"{given('target', target)}: cannot read it: "
                           f"{err.strerror or err}; {option('target')} takes {TARGETS}"
                           ) from None
    lines = data.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            op = json.loads(line)
        except (ValueError, RecursionError):
            op = None
        if not (isinstance(op, dict) and isinstance(op.get("op_code"), int)):
            raise SweeperError(f"{target}:{number}: not an Optuna journal line (a JSON object "
                               "with an op_code), so not a file to add a study to; "
                               f"{option('target')} takes {TARGETS}")
    if data and not data.endswith(b"\n"):
        raise SweeperError(f"{target}:{len(lines)}: an incomplete last line (no newline at "
                           "its end); Optuna's journal lines end with one")
    return data


def journal_storage(path: str) -> Any:
    """Optuna's journal storage over the file ``path``."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return JournalStorage(JournalFileBackend(path))


def _remove(temp: Path) -> None:
    """The temporary journal and the lock file Optuna keeps beside it, gone."""
    for path in (temp, Path(f"{temp}.lock")):
        path.unlink(missing_ok=True)


def into_database(store: Storage, target: str, names: list[str],
                  write: Callable[[Any], None]) -> None:
    """Run ``write`` on the database ``target`` (a URL).  A SQLite file gets the checks
    of every export's file (:func:`sweeper.export.output_file`) and must be a SQLite
    database if it exists.  A failure part way (a full disk) is one line, exit 1, and the
    study written so far is deleted again where the database still lets it be."""
    path = sqlite_path(target)
    if path is not None:
        output_file(store, path)
        if path.is_file() and path.stat().st_size and not _starts_sqlite(path):
            raise SweeperError(f"{given('target', target)}: {path} is not a SQLite "
                               f"database; {option('target')} takes {TARGETS}")
        make_dirs(path.parent)          # as every file an export writes (SQLite makes none)
    try:
        storage = optuna.storages.RDBStorage(_with_limits(target))
    except Exception as err:  # noqa: BLE001  (SQLAlchemy's errors are many; one line)
        raise SweeperError(f"{given('target', mask_url(target))}: cannot open it as a "
                           "database: "
                           f"{_first_line(err)}") from None
    before = set(optuna.get_all_study_names(storage))
    try:
        write(storage)
    except (SQLAlchemyError, OSError) as err:
        for name in names:
            if name not in before:
                with contextlib.suppress(SQLAlchemyError, KeyError):
                    optuna.delete_study(study_name=name, storage=storage)
        raise WriteError(f"cannot write the Optuna study {names[0]!r} into "
                         f"{mask_url(target)}: {_first_line(err)}") from None


def _with_limits(target: str) -> str:
    """A PostgreSQL ``target`` with the time limits and the driver sweeper's own store
    gives it (:func:`sweeper.store._url.with_timeouts`, psycopg 3): a host that never
    answers is given up on after the connect timeout, not waited for without end.  Any
    other database's URL as it is."""
    if target.partition("://")[0].split("+")[0] != "postgresql":
        return target
    from sqlalchemy import make_url

    from sweeper.store._url import with_timeouts

    try:
        url = make_url(target)
    except Exception:  # noqa: BLE001  (RDBStorage says what is wrong with it, in one line)
        return target
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return with_timeouts(url).render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file a ``sqlite:///FILE`` URL names; ``None`` for another database or an
    in-memory one."""
    scheme, _, rest = url.partition("://")
    if scheme.split("+")[0] != "sqlite" or not rest.startswith("/"):
        return None
    file = rest[1:].partition("?")[0]
    return Path(file) if file and file != ":memory:" else None


def absolute_url(url: str) -> str:
    """``url`` with the file of a ``sqlite:///FILE`` URL by its absolute path, from the
    current folder now (``sqlite:////work/a.db``): a relative one names another file once
    the process changes folder (a notebook's ``%cd``).  Any other URL as it is."""
    path = sqlite_path(url)
    if path is None or path.is_absolute():
        return url
    scheme, _, rest = url.partition("://")
    _, query, options = rest[1:].partition("?")
    return f"{scheme}:///{path.absolute()}{query}{options}"


def _starts_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0]


def value(label: str) -> str | int:
    """An axis label as Optuna gets it: a whole number as an int, anything else as text."""
    return int(label) if label.isascii() and label.isdigit() else label


def distributions(axes: dict[str, list[str]], trials: list[TrialRecord],
                  skip: list[str] | tuple[str, ...] = ()) -> dict[str, CategoricalDistribution]:
    """One categorical distribution per axis but those in ``skip``: the space's values,
    then any value a trial has that the space no longer lists (a study resumed with
    ``--force``)."""
    choices: dict[str, list[str | int]] = {a: [value(v) for v in labels]
                                           for a, labels in axes.items() if a not in skip}
    for t in trials:
        for axis, label in t.choice.items():
            if axis not in skip and value(label) not in choices.setdefault(axis, []):
                choices[axis].append(value(label))
    return {a: CategoricalDistribution(c) for a, c in choices.items() if c}


def frozen(t: TrialRecord, dists: dict[str, CategoricalDistribution], rate: str,
           since: dt.datetime | None = None) -> FrozenTrial:
    """The Optuna trial for ``t`` (see the module's text).  Optuna needs a start time for
    every finished trial; one the journal does not record (a record written by hand or by
    an older sweeper) starts at ``since``, the study's creation.  One to be measured
    again (``retry``) is a WAITING trial as ``Study.enqueue_trial`` makes one: no start,
    no params yet, its config in the ``fixed_params`` system attribute that the trial
    Optuna asks next suggests."""
    state = {TrialStatus.OK: TrialState.COMPLETE,
             TrialStatus.ABANDONED: TrialState.PRUNED}.get(t.status, TrialState.FAIL)
    params = {a: value(label) for a, label in t.choice.items() if a in dists}
    attrs: dict[str, Any] = {"number": t.number, "status": t.status.value,
                             "retry": t.retry, "reason": t.reason or "",
                             "samples": len(t.samples_ms), "flags": [f.text for f in t.flags]}
    if t.retry:
        return FrozenTrial(
            number=t.number, state=TrialState.WAITING, value=None, datetime_start=None,
            datetime_complete=None, params={}, distributions={}, user_attrs=attrs,
            system_attrs={"fixed_params": params}, intermediate_values={},
            trial_id=t.number)
    if t.config is not None:
        attrs["grid"] = t.config.grid
    if t.stats is not None:
        attrs.update({f"{s}_ms" if s not in ("cv", "rel_ci") else s: getattr(t.stats, s)
                      for s in STATS if math.isfinite(getattr(t.stats, s))})
        attrs[rate] = t.gbps if rate == "gbps" else t.gflops / 1e3
    if t.stop_reason is not None:
        attrs["stop"] = t.stop_reason.text
    start = _time(t.started) or since
    system = {"fail_reason": f"{t.status.value}: {t.reason}"} \
        if state is TrialState.FAIL else {}
    return FrozenTrial(
        number=t.number, state=state,
        value=t.stats.median if state is TrialState.COMPLETE and t.stats else None,
        datetime_start=start,
        datetime_complete=start + dt.timedelta(seconds=t.wall_s) if start else None,
        params=params, distributions={a: dists[a] for a in params}, user_attrs=attrs,
        system_attrs=system, intermediate_values={}, trial_id=t.number)


def _time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
