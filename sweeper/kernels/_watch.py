"""Whether a kernel's source files still hold the text a sweep took its source hash from.

A sweep records every trial under the kernel's source hash as it was when the sweep
started, but a compile reads the kernel again: a CUDA C launch reads its files again once
their stamps change, and a worker or compile process started later imports the module
anew.  A :class:`SourceWatch` tells an edit since it began by a stat of each file per
ask, re-reading a file's bytes only where its stamp moved (a ``touch`` is no edit), so
the sweep stops before it records a trial that may have been compiled from another text.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: How long before a read began each file must have been last written for its
#: (mtime, size) to tell the next edit: a file system's timestamps move by ticks (a
#: jiffy on ext4 and tmpfs, 1 s on ext3 and HFS+, 2 s on FAT) and its clock may lag
#: the process's by one, so a later write of the same size may keep a recent stamp.
SETTLED_NS = 2_000_000_000
#: A file's (mtime ns, size), its bytes' sha256, and when it was read (ns); None where
#: the file could not be read.
_Read = tuple[tuple[int, int] | None, bytes | None, int]


def stamp(path: Path) -> tuple[int, int]:
    """The file's modification time (ns) and size now: what tells an edit of a file
    :func:`settled` when it was read."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def settled(stamps: Iterable[tuple[int, int]], began: int) -> bool:
    """Whether files of these :func:`stamp` s, read from ``began`` (ns) on, were each last
    written ``SETTLED_NS`` or more before: only then does a stamp that stays the same tell
    that the bytes read are still the file's (an edit during the read, or a rewrite of the
    same size within a timestamp's tick, may leave the stamp a later edit keeps), so a
    reader keeps its bytes by the stamp alone; else it reads them again at each ask.  The
    rule of the sweep's :class:`SourceWatch` and of a CUDA launch's files alike."""
    return all(mtime <= began - SETTLED_NS for mtime, _ in stamps)


def files_of(*objects: Any) -> tuple[Path, ...]:
    """The files the source of each of ``objects`` (modules, classes, functions, Triton
    functions) is read from, each once, in order; none for one without a file (a
    notebook's)."""
    found: list[Path] = []
    for obj in objects:
        target = getattr(obj, "fn", obj)        # a Triton JITFunction: its Python function
        try:
            name = inspect.getsourcefile(inspect.unwrap(target))
        except (TypeError, OSError, ValueError):
            name = None
        path = Path(name).resolve() if name else None
        if path is not None and path not in found:
            found.append(path)
    return tuple(found)


class SourceWatch:
    """Watches ``files`` from now on: :meth:`edited` names the first whose bytes are no
    longer those read here (a file gone counts as edited).  ``source``: the source hash
    this process took of the kernel as it loaded it, which :meth:`differs` holds against
    the one a trial is recorded under (None: not taken)."""

    def __init__(self, files: Iterable[Path], source: str | None = None) -> None:
        self.files, self.source = tuple(files), source
        self._kept = {path: _read(path) for path in self.files}

    def differs(self, expected: str | None) -> str:
        """Which file to name where this process's kernel may not be the source
        ``expected`` names (None: any): the first edited since the watch began, else,
        where the process loaded the kernel from other text (a worker or compile process
        started after an edit), its files, which one unknown (``one of A and B``); ""
        where it is that source."""
        path = self.edited()
        if path is not None:
            return str(path)
        if expected is None or self.source is None or expected == self.source:
            return ""
        if not self.files:
            return "the kernel's source"
        names = [str(path) for path in self.files]
        return names[0] if len(names) == 1 else \
            f"one of {', '.join(names[:-1])} and {names[-1]}"

    def edited(self) -> Path | None:
        """The first file whose bytes changed since the watch began, or ``None``: a stat
        of each, its bytes read again only where its stamp moved or was too recent to
        tell a later write of the same size (:func:`settled`)."""
        for path in self.files:
            kept, digest, began = self._kept[path]
            if kept is not None and settled([kept], began):
                try:
                    if stamp(path) == kept:
                        continue
                except OSError:
                    return path
            fresh = _read(path)
            if fresh[1] != digest:
                return path
            self._kept[path] = fresh
        return None


def _read(path: Path) -> _Read:
    """``path``'s stamp and the digest of its bytes, read after the time it returns; a
    stamp taken after the read, so an edit in between leaves a recent one (read again)."""
    began = time.time_ns()
    try:
        digest = hashlib.sha256(path.read_bytes()).digest()
        return stamp(path), digest, began
    except OSError:
        return None, None, began
