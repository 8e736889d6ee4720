"""A worker, as the engine runs it for ``sweeper worker``: one of any number of processes,
on any hosts, sharing one study's sweep (each config claimed, measured and kept once).
Workers run no finals; a run of the same space and study afterwards runs them and the
report."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeper.core._spelling import option
from sweeper.core._units import counted
from sweeper.engine._clock import process_age
from sweeper.engine._inputs import budgeted, kernel_for, space_and_device
from sweeper.engine._options import SpaceSource
from sweeper.engine._run import END_S, last_run
from sweeper.errors import StudyError
from sweeper.options import OptionValueError, check_study_name, lease, study_folder

if TYPE_CHECKING:          # the store is imported where a worker opens it
    from sweeper.store import Storage


@dataclass(frozen=True)
class WorkerOptions:
    """A worker of study ``study`` (under ``studies_dir``, or in ``storage``, a database
    URL): its space (None: the one the study recorded, which must exist), ``device``,
    ``worker_id`` (None: ``HOST:PID``), how long a claim outlives its last heartbeat
    (``lease_s``), its budgets (``trials``, ``time_s``), ``force`` (join a study measured
    with other settings) and the ``command`` the study records.  ``clock_from_start``: the
    time budget counts from the process's start, as a command's does (its start-up
    included), not from the sweep's."""

    study: str
    space: SpaceSource | None = None
    device: str = "cuda"
    studies_dir: str = "studies"
    storage: str | None = None
    worker_id: str | None = None
    lease_s: float = 60.0
    trials: int | None = None
    time_s: float | None = None
    force: bool = False
    command: str = "sweeper worker"
    clock_from_start: bool = False


def run_worker(options: WorkerOptions) -> Any:
    """Sweep the study alongside other workers; returns the sweep's summary.  A Ctrl-C or
    SIGTERM stops it after the trial in flight, kept (its ``stopped_by`` says which)."""
    check_study_name(option("study"), options.study)
    try:      # the command's parser checked --lease; a WorkerOptions built in Python, here
        lease(options.lease_s, repr(options.lease_s))
    except OptionValueError as err:
        raise OptionValueError(f"lease_s: {err}") from None
    from sweeper.store._open import open_storage

    store = open_storage(options.storage, study_folder(options.studies_dir, options.study))
    space, device = _space_of(options, store)
    from sweeper.interrupt import stopping_on_signals
    from sweeper.sweep import Sampling, StopFlag, Sweep, open_study
    from sweeper.sweep._claims import Claims

    kernel = kernel_for(space, device)
    worker_id = options.worker_id or f"{socket.gethostname()}:{os.getpid()}"
    # the sampler, built before the study is written: a factory that fails leaves none
    sampling = open_study(store, space, kernel, device, force=options.force, worker=worker_id,
                          command=options.command,
                          budget=budgeted(space, options.trials, options.time_s).budget,
                          before_writing=lambda: Sampling.build(
                              space, kernel, device.facts(), []))
    print(f"worker {worker_id}: study {options.study} in {store.location}; "
          f"{counted(space.size, 'config')}, claims held for {options.lease_s:g} s between "
          "heartbeats", flush=True)
    stop = StopFlag()
    sweep = Sweep(space, kernel, device, store, max_trials=options.trials,
                  max_time_s=options.time_s, finals=False, stop=stop,
                  claims=Claims(store, worker_id, options.lease_s), sampling=sampling)
    sweep.run_drift = False
    if options.clock_from_start:
        # the command's start-up (imports, the space, the device, the study) is spent
        sweep.outside_s = (process_age() or 0.0) + END_S
    # Ctrl-C or SIGTERM stops after the trial in flight, as `sweeper run` does (twice: at once)
    with stopping_on_signals(stop):
        summary = sweep.run()
    # as `sweeper run` keeps its own: the last to end of workers sharing the study
    wall_s = process_age() if options.clock_from_start else None
    store.update_meta(last_run={**last_run(summary, options.command, wall_s=wall_s),
                                "worker": worker_id})
    print(f"worker {worker_id}: {counted(summary.measured, 'config')} measured and kept in "
          f"{summary.wall_s:.1f} s; stopped: {summary.stopped_by}")
    print("finals and the report: once every worker is done, `sweeper run` of the same "
          "space and study (with the same --storage) runs them")
    return summary


def _space_of(options: WorkerOptions, store: Storage) -> tuple[Any, Any]:
    """The space (``options.space``, else the one the study recorded) and the device, both
    checked."""
    if options.space is not None:
        return space_and_device(options.space, options.device)
    if not store.exists():
        raise StudyError(f"{store.location}: no study {options.study!r} yet; give its space "
                         "file to create it (sweeper worker SPACE --study NAME ...)")
    from sweeper.devices import device_class, open_device
    from sweeper.export import recorded_folder
    from sweeper.space import parse_space

    meta = store.study_meta()
    os.environ.update(device_class(options.device).sets_env)
    space = parse_space(str(meta.space_text), file=str(meta.space_path),
                        default_study=options.study, folder=recorded_folder(meta))
    device = open_device(options.device)
    device.check_space(space)
    return space, device
