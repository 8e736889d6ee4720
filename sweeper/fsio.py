"""Writing a file so that a failure leaves the old one as it was.

:func:`atomic_write` writes to a unique temporary file in the target's folder,
fsyncs it, renames it over the target and fsyncs the folder: a reader sees the
old file or the new one, never a half-written one, and a disk that fills up, a
read-only folder or an I/O error costs the new content only.  The new file keeps the
permissions of the one it replaces (a new one gets the umask's).  A target that is
not a regular file (``/dev/full``, a directory, a FIFO) is refused before
anything is written: writing "into" it cannot be made atomic, and ``/dev/full``
or a pipe would take data without end or never let the rename happen.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

from sweeper.errors import SweeperError


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` (text is written as UTF-8); return the path written.

    A symbolic link is followed, so the file it points to is replaced and the link
    kept.  Every failure is a :class:`SweeperError` of one line that names the path
    and says the target was left as it was.
    """
    target = writable_target(path)
    payload = data.encode() if isinstance(data, str) else data
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        name = str(target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # umask applies
        tmp = name
        try:
            if target.exists():             # keep the permissions the file had
                os.fchmod(fd, stat.S_IMODE(target.stat().st_mode))
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        tmp = None
        _fsync_folder(target.parent)
    except OSError as err:
        raise SweeperError(f"cannot write {path}: {_why(err)}; "
                           f"{'it was left as it was' if target.exists() else 'nothing written'}"
                           ) from None
    finally:
        if tmp is not None:
            _remove(tmp)
    return Path(path)


def writable_target(path: str | Path) -> Path:
    """The regular file ``path`` names (links followed), or a :class:`SweeperError` if
    it is something that cannot take a file (a device, a directory, a FIFO, a socket)."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as err:
        raise SweeperError(f"cannot write {path}: {_why(err)}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device" if (
            stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "a FIFO or socket"
        raise SweeperError(f"cannot write {path}: it is {kind}, not a regular file; "
                           "give a file path")
    return target


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        if written <= 0:          # a file system that takes nothing would loop forever
            raise OSError(errno.EIO, "the file system accepted no bytes")
        view = view[written:]


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable, as far as the folder lets us.  Best effort: the new file
    is already in place, so a folder that cannot be opened or synced (some file systems
    refuse) must not be reported as a failed write that left the old file."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _why(err: OSError) -> str:
    """``strerror`` with the plain words for a full disk, as users search for them."""
    text = err.strerror or str(err)
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"disk full ({text})"
    return text


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


__all__ = ["atomic_write", "writable_target"]
