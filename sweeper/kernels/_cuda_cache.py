"""The disk cache of compiled CUDA kernels: private to the user, every entry verified.

A cubin from the cache is loaded into the GPU and run, so the cache trusts nothing it did
not write itself:

- the folder (``<sweeper cache>/cuda``) must be a real folder, not a link, owned by this
  user and not writable by others; it is made (and kept) ``0700``.  Any other folder is
  not used: a warning, once, and kernels compile without a cache;
- beside the entries lies a secret of this user's (``hmac.key``, 32 random bytes,
  ``0600``); each entry (``KEY.cubin`` and ``KEY.json``) carries an HMAC-SHA256 tag, over
  its cache key (which hashes the source, includes, options, arch and NVRTC version), the
  entry's lowered name and the cubin, made with that secret.  An entry whose tag does not
  check (planted, damaged, half replaced, written by an older sweeper) is a miss: the
  kernel is compiled again and the entry replaced;
- every file is opened with ``O_NOFOLLOW`` and must be a regular file of this user's, mode
  ``0600``: a link to a system file is never read, and a write replaces the link itself;
- a cache that cannot be written (read-only, full, not a folder) costs the caching only:
  a :class:`~sweeper.errors.CacheWarning`, once per folder, and the compiled kernel is
  used as it is.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeper.errors import CacheWarning, SweeperError, user_stacklevel
from sweeper.fsio import make_dirs, replace, write_temp

#: The secret entries are tagged with, in the cache folder.
KEY_FILE = "hmac.key"
KEY_BYTES = 32
#: What a tag is over first, so a tag of another kind (or version) never checks here.
DOMAIN = b"sweeper cuda cache 1\0"
#: The largest file the cache reads; a bigger one is not an entry sweeper wrote.
MAX_FILE = 1 << 30
#: The folders a warning has been given for, in this process.
_warned: set[str] = set()


class Untrusted(Exception):
    """A cache file or folder that is not what this user's sweeper wrote; the message
    says why, for the warning."""


class CompileCache:
    """The cache folder ``folder``; :meth:`get` and :meth:`put` never raise for what is on
    disk: a bad entry is a miss, a folder that cannot be used or written a warning."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._key: bytes | None = None

    def get(self, key: str) -> tuple[bytes, str] | None:
        """The cubin and lowered name cached under ``key``, when its tag checks."""
        secret = self._secret()
        if secret is None:
            return None
        try:
            cubin = read_private(self.folder / f"{key}.cubin")
            meta = json.loads(read_private(self.folder / f"{key}.json"))
            lowered, tag = meta["lowered"], meta["tag"]
        except (OSError, Untrusted, ValueError, KeyError, TypeError):
            return None
        if not isinstance(lowered, str) or not isinstance(tag, str) or \
                not hmac.compare_digest(tag, _tag(secret, key, lowered, cubin)):
            return None
        return cubin, lowered

    def put(self, key: str, cubin: bytes, lowered: str, about: dict[str, Any]) -> Path | None:
        """Cache ``cubin`` and ``lowered`` under ``key`` (``about``: what it was compiled
        from, kept for a reader); the cubin's path, or ``None`` when it could not be
        written (a warning, once)."""
        secret = self._secret()
        if secret is None:
            return None
        meta = {**about, "lowered": lowered, "tag": _tag(secret, key, lowered, cubin)}
        cubin_path = self.folder / f"{key}.cubin"
        try:
            write_private(cubin_path, cubin)
            write_private(self.folder / f"{key}.json", json.dumps(meta).encode())
        except SweeperError as err:
            self._warn(str(err))
            return None
        return cubin_path

    def _secret(self) -> bytes | None:
        """This user's secret, made with the folder on first use; ``None`` (with a
        warning) where the folder or the secret cannot be trusted or made."""
        if self._key is None:
            try:
                self._key = _open_secret(self.folder)
            except (Untrusted, SweeperError) as err:
                self._warn(str(err))
        return self._key

    def _warn(self, why: str) -> None:
        if str(self.folder) not in _warned:
            _warned.add(str(self.folder))
            warnings.warn(f"CUDA compile cache {self.folder}: {why}; compiling without "
                          "it (set SWEEPER_CACHE to a folder of your own)", CacheWarning,
                          stacklevel=user_stacklevel())


def _tag(secret: bytes, key: str, lowered: str, cubin: bytes) -> str:
    """The entry's HMAC-SHA256, hex: over its key, lowered name and cubin."""
    message = DOMAIN + key.encode() + b"\0" + lowered.encode() + b"\0" + \
        hashlib.sha256(cubin).digest()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _open_secret(folder: Path) -> bytes:
    """The secret in ``folder``, made (with the folder, ``0700``) where there is none; an
    :class:`Untrusted` where the folder or the secret is not this user's alone, a
    :class:`SweeperError` where either cannot be made."""
    private_folder(folder)
    path = folder / KEY_FILE
    if not os.path.lexists(path):
        temp = write_temp(path, secrets.token_bytes(KEY_BYTES), mode=0o600)
        try:                             # a link: never over one another process made meanwhile
            _make(path, lambda: os.link(temp, path))
        finally:
            temp.unlink(missing_ok=True)
    try:
        secret = read_private(path)
    except OSError as err:
        raise Untrusted(f"cannot read {KEY_FILE}: {err.strerror or err}") from None
    if len(secret) != KEY_BYTES:
        raise Untrusted(f"{KEY_FILE} holds {len(secret)} bytes, not {KEY_BYTES}; remove it")
    return secret


def private_folder(folder: Path) -> None:
    """Make ``folder`` (and its parents) where it is missing, then check that it is a
    folder, not a link, of this user's and writable by no one else; a folder of this
    user's open to reading by others is made ``0700``.  An :class:`Untrusted` says why a
    folder is not used, a :class:`SweeperError` why it could not be made."""
    if not os.path.lexists(folder):      # some read-only file systems refuse mkdir first
        make_dirs(folder.parent)
        _make(folder, lambda: os.mkdir(folder, 0o700))
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0))
    except OSError as err:
        why = "it is a symbolic link" if os.path.islink(folder) else \
            "it is not a folder" if err.errno == errno.ENOTDIR else err.strerror or str(err)
        raise Untrusted(why) from None
    try:
        info = os.fstat(fd)
        _check_owner(info, "it")
        if stat.S_IMODE(info.st_mode) & 0o022:
            raise Untrusted(f"it is writable by other users (mode "
                            f"{stat.S_IMODE(info.st_mode):04o})")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def _make(path: Path, create: Callable[[], None]) -> None:
    """``create()`` the file or folder ``path``, unless another process made it first; a
    :class:`SweeperError` where it cannot be made."""
    try:
        create()
    except FileExistsError:
        pass
    except OSError as err:
        raise SweeperError(f"cannot make {path}: {err.strerror or err}") from None


def _check_owner(info: os.stat_result, what: str) -> None:
    if info.st_uid != os.geteuid():
        raise Untrusted(f"{what} is owned by user {info.st_uid}, not by you "
                        f"({os.geteuid()})")


def read_private(path: Path) -> bytes:
    """The bytes of ``path``, a regular file (not a link) of this user's, mode ``0600``
    (no one else may read or write it), at most :data:`MAX_FILE` bytes; an
    :class:`Untrusted` for any other file, an ``OSError`` where there is none."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK |
                 getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as file:                   # closes fd, whatever happens
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{path.name} is not a regular file")
        _check_owner(info, path.name)
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise Untrusted(f"{path.name} is open to other users (mode "
                            f"{stat.S_IMODE(info.st_mode):04o}, not 0600)")
        if info.st_size > MAX_FILE:
            raise Untrusted(f"{path.name} is {info.st_size} bytes")
        return file.read()


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` (a link there too, never what it points to) with ``data``, mode
    ``0600``, whole or not at all; a :class:`~sweeper.errors.WriteError` when it cannot."""
    replace(write_temp(path, data, mode=0o600), path)


__all__ = ["CompileCache", "Untrusted", "private_folder", "read_private", "write_private"]
