"""Which store a command's ``--storage`` names, and a study copied between two stores.

No option: the journal in the study's folder under ``--studies-dir``.  A
``postgresql://`` URL: the database, whose driver (SQLAlchemy, psycopg) is imported only
then, so commands on journals never pay for it.
"""

from __future__ import annotations

from pathlib import Path

from sweeper.core._spelling import given, option
from sweeper.errors import StudyError, SweeperError
from sweeper.store._base import Storage
from sweeper.store._meta import named

#: The URL schemes ``--storage`` takes besides a folder of journals.
SCHEMES = ("postgresql://", "postgresql+psycopg://", "postgres://")


def is_database(spec: str | None) -> bool:
    """Whether ``spec`` names a database rather than a folder of journals."""
    return spec is not None and spec.startswith(SCHEMES)


def open_storage(spec: str | None, folder: Path) -> Storage:
    """The store of the study whose local folder is ``folder``: its journal there, or
    (``spec`` a database URL) the study of that folder's name in the database, whose
    report and exports go to ``folder``."""
    from sweeper.store._study import StudyStore

    if spec is None:
        return StudyStore(folder)
    if not is_database(spec):
        from sweeper.store._url import mask_url

        raise SweeperError(f"{option('storage')}: {mask_url(spec)[:60]!r} is not a storage; "
                           "allowed: a postgresql://USER@HOST/DB URL (leave it out for the "
                           f"journal under {option('studies_dir')})")
    try:
        from sweeper.store._postgres import PostgresStore
    except ImportError as err:
        raise SweeperError(f"{given('storage', spec.split('://')[0] + '://')}: needs the "
                           "postgres extra "
                           f"(pip install 'sweeper[postgres]'): {err}") from None
    url = "postgresql://" + spec.split("://", 1)[1]
    return PostgresStore(url, folder.name, folder)


def copy_study(source: Storage, target: Storage) -> int:
    """Copy ``source``'s metadata and records, in order, into ``target`` (which must hold
    no study of that name; the metadata names the study as ``target`` does, see
    :func:`~sweeper.store._meta.named`), verified by reading it back; returns the records
    copied.  All or nothing (:meth:`Storage.copy_in`): a copy interrupted leaves no study in
    ``target``, so running it again completes it.  A source journal's bad lines are not
    records and are not copied (a warning names them).  The source is held while it is
    read (:meth:`Storage.hold`): a study a run or workers are sweeping is refused, and
    none starts on it until the copy is made."""
    if not source.exists():
        raise StudyError(f"{source.location}: no study to copy")
    if target.exists():
        raise target.taken()
    try:
        source.hold()
        meta, records = named(source.meta(), target.name), source.raw_records()
        target.copy_in(meta, records, source.location)
    finally:
        target.close()
        source.close()
    return len(records)
