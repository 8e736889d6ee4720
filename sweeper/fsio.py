"""Writing files so that a crash or a full disk never leaves one half-written.

Every file sweeper writes whole (study.json, reports, heatmaps, the ceilings cache,
tuning files, replay tables) goes through :func:`atomic_write`: the bytes go to a
temporary file of a unique name (``.NAME.XXXXXXXX.tmp``) in the target's folder, which is
fsynced, renamed over the target (one atomic step on a POSIX file system) and the folder
fsynced.  A reader, and the next boot, sees the old file or the new one, whole, never a
mix or an empty file.  A failure removes the temporary file, leaves the target as it was
and is a :class:`~sweeper.errors.WriteError` that says what went wrong in one line.
The journal, the one file sweeper appends to, has its own rules
(:mod:`sweeper.store._journal`) and uses :func:`write_all` and :func:`fsync_dir` from here.
A folder written whole (a copied study) is built the same way: in a staging folder
beside it (:func:`staging_dir`), renamed into place in one step (:func:`publish_dir`);
the staging folder a killed process left is removed by the next one staged beside it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any

from sweeper.errors import SweeperError, WriteError

TEMP_SUFFIX = ".tmp"

#: How a failed write is named in messages, by errno; anything else is "cannot write".
_WHAT = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded",
         errno.EIO: "I/O error", errno.EROFS: "read-only file system",
         errno.EACCES: "permission denied", errno.EPERM: "permission denied"}
#: fsync of a folder is not supported everywhere; where it is not, the rename alone must do.
_NO_DIR_SYNC = (errno.EINVAL, errno.ENOTSUP, errno.EBADF)


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` (``str`` is written as UTF-8), all or nothing.

    A symlink is written through (the link stays, its target is replaced); a target that
    exists and is not a regular file (a folder, ``/dev/full``) is refused before anything
    is written.  A new file gets the mode ``open()`` would give it; a replaced one keeps its
    own.  Returns the path written."""
    target = writable_target(path)
    temp = write_temp(target, data.encode() if isinstance(data, str) else data)
    replace(temp, target)
    return Path(path)


def read_cache(path: Path) -> dict[str, Any]:
    """The JSON object the cache file ``path`` holds; empty where it is missing, cannot be
    read or holds no object (damaged, or not one sweeper wrote: it is written anew)."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def write_cache(path: Path, kept: dict[str, Any], indent: int) -> None:
    """Write ``kept`` whole to the cache file ``path`` (its folder made) as JSON, keys
    sorted; a cache that cannot be written is left as it is."""
    with contextlib.suppress(OSError, ValueError, WriteError):     # disk full, read-only
        os.makedirs(path.parent, exist_ok=True)
        atomic_write(path, json.dumps(kept, indent=indent, sort_keys=True) + "\n")


def create_new(path: str | Path, data: str | bytes) -> bool:
    """Write ``path`` with ``data``, whole, unless it exists; whether this call wrote it.

    The temporary file is hard-linked to ``path`` (a link fails where a name exists, in
    one atomic step), so of processes creating ``path`` at once exactly one does, and no
    reader ever sees it half-written."""
    target = Path(path)
    temp = write_temp(target, data.encode() if isinstance(data, str) else data)
    try:
        os.link(temp, target)
    except FileExistsError:
        return False
    except OSError as err:
        raise write_error(err, target) from None
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return True


def write_temp(target: Path, data: bytes, mode: int | None = None) -> Path:
    """``data`` in a fsynced temporary file next to ``target``, of ``mode`` (default: the
    target's, or what ``open()`` would give a new file); returns its path."""
    make_dirs(target.parent)
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                    suffix=TEMP_SUFFIX)
    except OSError as err:
        raise write_error(err, target) from None
    try:
        os.fchmod(fd, _mode(target) if mode is None else mode)
        write_all(fd, data)
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise write_error(err, target) from None
    os.close(fd)
    return Path(name)


def replace(temp: Path, target: Path) -> None:
    """Rename ``temp`` over ``target`` and make the rename durable."""
    try:
        os.replace(temp, target)
    except OSError as err:
        temp.unlink(missing_ok=True)
        raise write_error(err, target) from None
    fsync_dir(target.parent)


def staging_dir(target: Path) -> Path:
    """A new, empty folder in which to build the folder ``target`` before
    :func:`publish_dir` renames it into place: ``target``'s name inside a fresh hidden
    folder beside it (``.NAME.PID@HOST.XXXXXXXX.tmp/NAME``).  Nested, so that what lists
    the folders beside ``target`` (``*/study.json``) never sees it half-built, and what is
    built in it is named as ``target`` is.  It gets the mode a new folder gets.

    The hidden folder's name says which process staged it, so that one a kill left (a
    SIGKILL runs no clean-up) is removed here, by the next staging of ``target``, once
    that process is gone (:func:`_stale_staging`); one whose process still runs, or one
    staged on another host (whose processes this one cannot see), is left alone."""
    make_dirs(target.parent)
    for stale in _stale_staging(target):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        outer = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.{_owner()}.",
                                      suffix=TEMP_SUFFIX))
        staged = outer / target.name
        staged.mkdir()
    except OSError as err:
        raise write_error(err, target) from None
    return staged


def _owner() -> str:
    """``PID@HOST``: this process, as a staging folder's name records it (the host's name
    kept to the characters a file name takes safely)."""
    return f"{os.getpid()}@{re.sub(r'[^A-Za-z0-9.-]', '_', socket.gethostname())}"


def _stale_staging(target: Path) -> list[Path]:
    """The staging folders of ``target`` (:func:`staging_dir`) whose process is gone: staged
    on this host by a process that no longer runs.  A folder whose name records no owner
    is not one of them (nothing says whether it is in use)."""
    here = _owner().partition("@")[2]
    # tempfile's random part: 8 of a-z, 0-9 and _
    staged = re.compile(rf"\.{re.escape(target.name)}\.([0-9]+)@{re.escape(here)}\.\w+"
                        rf"{re.escape(TEMP_SUFFIX)}", re.ASCII)
    stale = []
    with contextlib.suppress(OSError):                   # a folder that cannot be listed
        for path in target.parent.iterdir():
            match = staged.fullmatch(path.name)
            if match and path.is_dir() and not path.is_symlink() and \
                    not _alive(int(match.group(1))):
                stale.append(path)
    return stale


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):   # another user's; no such number
        return True
    return True


def publish_dir(staged: Path, target: Path) -> bool:
    """Rename the folder ``staged`` (from :func:`staging_dir`) to ``target`` in one atomic
    step, made durable: a reader sees no folder there, or the whole one.  False, with
    ``target`` left as it was, where something other than an empty folder is there."""
    try:
        os.rename(staged, target)
    except OSError as err:
        if err.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            return False
        raise write_error(err, target) from None
    fsync_dir(target.parent)
    return True


def discard_staging(staged: Path) -> None:
    """Remove the staging folder ``staged`` (from :func:`staging_dir`), whatever is in it,
    and its hidden outer folder; one already renamed into place leaves only the latter."""
    shutil.rmtree(staged.parent, ignore_errors=True)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, going on after short writes; a write that makes no
    progress is a full disk (``ENOSPC``).  An ``OSError`` may leave part of it written."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def fsync_dir(path: Path) -> None:
    """Make the entries of folder ``path`` (a new or renamed file in it) durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as err:
        raise write_error(err, path) from None
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _NO_DIR_SYNC:
            raise write_error(err, path) from None
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """``mkdir -p path``, each new folder made durable in its parent; where ``path`` or a
    folder above it is a file, a :class:`SweeperError` (bad input: exit 2) that says so."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    if not path.is_dir():
        raise _not_a_folder(f"cannot make the folder {(missing or [path])[0]}", path)
    for folder in reversed(missing):
        try:
            folder.mkdir(exist_ok=True)
        except OSError as err:
            raise write_error(err, folder) from None
        fsync_dir(folder.parent)


def _not_a_folder(what: str, file: Path) -> SweeperError:
    """Bad input (exit 2): ``what`` cannot be done, as ``file`` is a file where a folder
    must be."""
    return SweeperError(f"{what}: {file} is a file, not a folder; move it away or give "
                        "another path")


def write_error(err: OSError, path: Path, outcome: str = "",
                again: str = "run the same command again") -> WriteError:
    """One line for a failed write of ``path``: what, where, what is left, what to do."""
    what = _WHAT.get(err.errno or 0)
    where = f"{what} writing {path}" if what else f"cannot write {path}"
    outcome = outcome or (f"{path.name} is as it was" if path.exists() else
                          f"{path.name} not written")      # other files may have been
    advice = f"; free space and {again}" if err.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    return WriteError(f"{where}: {err.strerror or err}; {outcome}{advice}", cause=err)


def writable_target(path: str | Path) -> Path:
    """The regular file ``path`` names (a link followed), or a :class:`SweeperError` (bad
    input: exit 2) when it is something that cannot take a file (a folder, a device such
    as ``/dev/full``, a FIFO): writing "into" one cannot be made atomic, and a device or a
    pipe would take data without end or never let the rename happen."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except NotADirectoryError:          # a folder above it is a file
        above = next((p for p in reversed(target.parents) if p.exists() and not p.is_dir()),
                     target.parent)
        raise _not_a_folder(f"cannot write {path}", above) from None
    except OSError as err:
        raise write_error(err, path) from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device" if (
            stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "a FIFO or socket"
        raise SweeperError(f"cannot write {path}: it is {kind}, not a regular file; "
                           "give a file path")
    return target


def _mode(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["atomic_write", "discard_staging", "fsync_dir", "make_dirs", "publish_dir", "replace",
           "staging_dir", "writable_target", "write_all", "write_error", "write_temp"]
