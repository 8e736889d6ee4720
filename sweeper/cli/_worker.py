"""``sweeper worker``: one of any number of processes, on any hosts, sharing one study's
sweep (each config claimed, measured and kept once); and ``sweeper copy-study``, which
moves a study between the journal and a database.

``copy-study`` is a command of its own rather than ``export --to``: ``export`` writes the
winners for launches (a tuning file, a replay table), while a copy carries the whole study,
every record and its metadata, and is read back and compared before it is reported done."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from sweeper.cli._exits import EXIT_OK
from sweeper.errors import StudyError
from sweeper.options import check_study_name, study_folder

if TYPE_CHECKING:          # the store is imported where a command opens it
    from sweeper.store import Storage


def cmd_worker(args: argparse.Namespace) -> int:
    """Sweep the study ``args.study`` alongside other workers; the exit status."""
    check_study_name("--study", args.study)
    from sweeper.store._open import open_storage

    store = open_storage(args.storage, study_folder(args.studies_dir, args.study))
    space, device = _space_of(args, store)
    from sweeper.cli._inputs import recorded_command
    from sweeper.engine import kernel_for
    from sweeper.sweep import Sweep, open_study
    from sweeper.sweep._claims import Claims

    kernel = kernel_for(space, device)
    worker_id = args.worker_id or f"{socket.gethostname()}:{os.getpid()}"
    open_study(store, space, kernel, device, force=args.force, worker=worker_id,
               command=recorded_command(args.argv))
    print(f"worker {worker_id}: study {args.study} in {store.location}; "
          f"{space.size} configs, claims held for {args.lease:g} s between heartbeats",
          flush=True)
    sweep = Sweep(space, kernel, device, store, max_trials=args.trials, max_time_s=args.time,
                  finals=False, claims=Claims(store, worker_id, args.lease))
    sweep.run_drift = False
    summary = sweep.run()
    print(f"worker {worker_id}: {summary.measured} configs measured and kept in "
          f"{summary.wall_s:.1f} s; stopped: {summary.stopped_by}")
    print("finals and the report: once every worker is done, `sweeper run` of the same "
          "space and study (with the same --storage) runs them")
    return EXIT_OK


def _space_of(args: argparse.Namespace, store: Storage) -> tuple[Any, Any]:
    """The space (``args.space``, else the one the study recorded) and the device, both
    checked."""
    if args.space is not None:
        from sweeper.cli._inputs import space_source
        from sweeper.engine import space_and_device

        return space_and_device(space_source(args), args.device)
    if not store.exists():
        raise StudyError(f"{store.location}: no study {args.study!r} yet; give its space "
                         "file to create it (sweeper worker SPACE --study NAME ...)")
    from sweeper.devices import device_class, open_device
    from sweeper.space import parse_space

    meta = store.meta()
    os.environ.update(device_class(args.device).sets_env)
    space = parse_space(str(meta.get("space_text", "")), file=str(meta.get("space_path")),
                        default_study=args.study)
    device = open_device(args.device)
    device.check_space(space)
    return space, device


def cmd_copy_study(args: argparse.Namespace) -> int:
    """``sweeper copy-study``: copy a study from ``--storage`` to ``--to``, verified."""
    check_study_name("study", args.study)
    from sweeper.store import StudyStore
    from sweeper.store._open import copy_study, is_database, open_storage

    source = open_storage(args.storage, study_folder(args.studies_dir, args.study))
    target = open_storage(args.to, study_folder(args.studies_dir, args.study)) \
        if is_database(args.to) else StudyStore(study_folder(args.to, args.study))
    count = copy_study(source, target)
    print(f"copied study {args.study}: {count} records and its metadata, from "
          f"{source.location} to {target.location}; read back equal")
    if source.bad_lines():
        print(f"sweeper: {len(source.bad_lines())} lines of {source.location} that are not "
              "records were left out", file=sys.stderr)
    return EXIT_OK
