"""A throwaway PostgreSQL server for the tests: ``initdb`` into a temporary folder, started
with ``pg_ctl`` on a Unix socket in that folder (no TCP port), stopped and removed at the
end.  As root (CI containers), the server runs as the ``postgres`` user (or ``nobody``):
PostgreSQL refuses to run as root.  A test may stop and start it again (the database
going away in the middle of a run, then coming back)."""

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


class Server:
    """A server's data in ``folder``, made by ``initdb``; :meth:`start` and :meth:`stop`
    it any number of times, its data kept between."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        owner = _owner()
        self._as = {} if owner is None else {"user": owner[0], "group": owner[1]}
        if owner is not None:
            os.chown(folder, *owner)
        self._run("initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "sweeper",
                  "--no-sync")

    @property
    def url(self) -> str:
        """Its SQLAlchemy URL (user ``sweeper``, database postgres)."""
        return f"postgresql://sweeper@/postgres?host={self.folder}&port={PORT}"

    def start(self) -> None:
        """Start it and wait until it takes connections."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "log"),
                  "-w", "-o", f"-c listen_addresses='' -k {self.folder} -p {PORT} "
                  "-c fsync=off", "start")

    def stop(self) -> None:
        """Stop it at once, as a crash or a pulled cable would (``-m immediate``)."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")

    def _run(self, *cmd: str) -> None:
        subprocess.run(cmd, check=True, capture_output=True, cwd=self.folder, **self._as)


@contextlib.contextmanager
def running() -> Iterator[Server]:
    """A started server, stopped (where it runs) and removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="sweeper-pg-"))
    try:
        server = Server(folder)
        server.start()
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):   # stopped already
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def server() -> Iterator[str]:
    """Start a server; yields its SQLAlchemy URL (user ``sweeper``, database postgres)."""
    with running() as started:
        yield started.url
