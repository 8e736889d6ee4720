"""``sweeper worker``: one of any number of processes, on any hosts, sharing one study's
sweep (each config claimed, measured and kept once: the engine's
:func:`~sweeper.engine.run_worker`, given the command's options); and ``sweeper
copy-study``, which moves a study between the journal and a database.

``copy-study`` is a command of its own rather than ``export --to``: ``export`` writes the
winners for launches (a tuning file, a replay table), while a copy carries the whole study,
every record and its metadata, and is read back and compared before it is reported done."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sweeper.cli._exits import EXIT_OK, signal_exit
from sweeper.core._units import counted
from sweeper.errors import StorageError, SweeperError
from sweeper.options import check_study_name, study_folder


def cmd_worker(args: argparse.Namespace) -> int:
    """Sweep the study ``args.study`` alongside other workers (the engine's
    :func:`~sweeper.engine.run_worker`); the exit status: as ``run``'s where Ctrl-C or a
    SIGTERM stopped it, else done."""
    from sweeper.cli._inputs import recorded_command, space_source
    from sweeper.engine import WorkerOptions, run_worker

    if args.space is None and args.param:
        raise SweeperError(f"-p {args.param[0]}: -p replaces an axis of the space file, and "
                           "none was given (a worker without one takes the study's space "
                           "as recorded); give it: sweeper worker SPACE --study NAME -p ...")
    summary = run_worker(WorkerOptions(
        study=args.study, space=None if args.space is None else space_source(args),
        device=args.device, studies_dir=args.studies_dir, storage=args.storage,
        worker_id=args.worker_id, lease_s=args.lease, trials=args.trials, time_s=args.time,
        force=args.force, command=recorded_command(args.argv),
        clock_from_start=args.from_shell))
    return signal_exit(summary.stopped_by)


def cmd_copy_study(args: argparse.Namespace) -> int:
    """``sweeper copy-study``: copy a study from ``--storage`` to ``--to``, verified, all
    or nothing (:func:`~sweeper.store._open.copy_study`: one interrupted leaves no copy, and
    the same command run again makes it).  The study is named as ``report`` and ``export``
    name it: in ``--storage``'s database by its name, else a study folder or a name under
    ``--studies-dir``; the copy takes the study's name."""
    from sweeper.cli._inputs import open_study
    from sweeper.store import StudyStore
    from sweeper.store._open import copy_study, is_database, open_storage

    if "://" in args.to and not is_database(args.to):
        # a URL of another scheme (sqlite://, file://) made a folder named 'sqlite:'
        from sweeper.store._url import mask_url

        raise SweeperError(f"--to: {mask_url(args.to)[:60]!r} is not a storage; allowed: a "
                           "postgresql://USER@HOST/DB URL, or a studies folder")
    if args.storage is not None:
        check_study_name("study", args.study)
    try:
        source = open_study(args)
        # a folder's own name (of `.` too), held to the rule a study's name follows: the
        # copy must open by it
        name = source.name if args.storage is not None else source.root.resolve().name
        check_study_name("study", name)
        if is_database(args.to):
            target = open_storage(args.to, study_folder(args.studies_dir, name))
        else:
            target = StudyStore(study_folder(args.to, name, "target"))
            if isinstance(source, StudyStore):
                _outside_source(args.to, source.root, target.root)
        count = copy_study(source, target)
    except StorageError as err:     # worded for a run, which keeps what it appended
        raise StorageError(f"{err.failure}; nothing was copied (copy-study copies all or "
                           "nothing): run the same command again once the database answers",
                           failure=err.failure) from err
    print(f"copied study {name}: {count} records and its metadata, from "
          f"{source.location} to {target.location}; read back equal")
    bad = len(source.bad_lines())
    if bad:
        print(f"sweeper: {counted(bad, 'line')} of {source.location} that "
              f"{'is not a record was' if bad == 1 else 'are not records were'} left out",
              file=sys.stderr)
    return EXIT_OK


def _outside_source(to: str, source: Path, target: Path) -> None:
    """Refuse a copy whose folder ``target`` is the source study's folder ``source`` or
    lies inside it (``--to studies/w1`` of the study ``studies/w1``), links resolved: it
    would nest the study in itself (``studies/w1/w1``), a second copy that every later
    copy or removal of the first one carries along."""
    inside, lands = source.resolve(), target.resolve()
    if lands.is_relative_to(inside):
        where = "is" if lands == inside else "lies inside"
        raise SweeperError(f"--to {to}: the copy would go to {target}, which {where} the "
                           f"folder of the study being copied ({source}); allowed: a "
                           f"studies folder outside {source}")
