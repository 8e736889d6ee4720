"""A throwaway PostgreSQL server for the tests: ``initdb`` into a temporary folder, started
with ``pg_ctl`` on a Unix socket in that folder (no TCP port), stopped and removed at the
end.  As root (CI containers), the server runs as the ``postgres`` user (or ``nobody``):
PostgreSQL refuses to run as root."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PORT = 5432          # only names the socket file: the server listens on no TCP port


def missing() -> str | None:
    """Why no server can be started here, or None."""
    for tool in ("initdb", "pg_ctl"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (PostgreSQL 15's server tools)"
    return None


def _owner() -> tuple[int, int] | None:
    """The user and group to run the server as when this process is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    raise RuntimeError("running as root, and no postgres or nobody user to run PostgreSQL as")


@contextlib.contextmanager
def server() -> Iterator[str]:
    """Start a server; yields its SQLAlchemy URL (user ``sweeper``, database postgres)."""
    folder = Path(tempfile.mkdtemp(prefix="sweeper-pg-"))
    owner = _owner()
    run_as = {} if owner is None else {"user": owner[0], "group": owner[1]}
    if owner is not None:
        os.chown(folder, *owner)
    data, log = folder / "data", folder / "log"

    def run(*cmd: str) -> None:
        subprocess.run(cmd, check=True, capture_output=True, cwd=folder, **run_as)

    try:
        run("initdb", "-D", str(data), "-A", "trust", "-U", "sweeper", "--no-sync")
        run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-o",
            f"-c listen_addresses='' -k {folder} -p {PORT} -c fsync=off", "start")
        try:
            yield f"postgresql://sweeper@/postgres?host={folder}&port={PORT}"
        finally:
            run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
