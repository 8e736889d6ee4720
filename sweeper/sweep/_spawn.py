"""Processes of sweeper's own that serve one module over a socket (a worker, a compile
process): started, sent their setup, and ended, never waited on without bound.

A process may be stuck in C (a synchronize on a kernel that never returns runs no signal
handler), may stop reading its socket, or may not be reapable while the GPU driver tears
its context down.  Every send has a deadline (:func:`send_within`), stopping signals the
process's whole group (its children, a compiler say, go too) and gives up reaping after
``KILL_S``.  Nothing here imports torch: a compile process and a run starting its compile
pool early use it before (or without) importing the measuring side.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from sweeper._nursery import Spawned, adopt, kill_now, start

#: Seconds a new worker may take to import torch, open its device and say it is ready.
STARTUP_S = 300.0
#: Seconds a fresh worker, started in place of one that died or hung, may take to say it
#: is ready (its imports are warm; a GPU whose last context is still being torn down may
#: not open before then, and the sweep must not wait on it for ever).
RESTART_S = 120.0
#: Seconds between SIGTERM and SIGKILL for a worker being stopped.
GRACE_S = 2.0
#: Seconds to wait for a killed process to be reaped before going on without it (a
#: process whose exit waits in the GPU driver, tearing down a context whose kernel never
#: returned, cannot be reaped until the driver lets it go).
KILL_S = 10.0
#: Lines of a dead worker's output quoted in its trial's reason.
TAIL_LINES = 5


def spawn(module: str, setup: object, sys_path: list[str], env: dict[str, str]) -> Spawned:
    """A process serving ``module`` (:func:`sweeper._nursery.start`: a session of
    its own, ``env`` over this process's environment, ``sys_path`` as its import path),
    sent ``setup``: one :func:`~sweeper._nursery.prespawn` started earlier with the
    same module and ``env`` where there is one, else a new one."""
    spawned = adopt(module, env) or start(module, sys_path, env)
    # it reads the setup once its imports are done; a setup bigger than the socket's
    # buffer waits for that (bounded), and a worker that never reads is stopped by
    # wait_ready, which ends this send too
    threading.Thread(target=_send_quietly, args=(spawned.conn, setup, STARTUP_S),
                     daemon=True, name="sweeper-setup").start()
    return spawned


def _send_quietly(conn: Connection, obj: object, timeout: float) -> None:
    """:func:`send_within`, for a thread: a worker that died or never read is told by
    what waits for its answer."""
    with contextlib.suppress(OSError, ValueError):
        send_within(conn, obj, timeout)


def send_within(conn: Connection, obj: object, timeout: float) -> bool:
    """Send ``obj`` over ``conn`` as :meth:`Connection.send` does, giving up after
    ``timeout`` seconds if the other end stops reading (a blocking send would wait for
    ever once the socket's buffer is full).  False: not all of it went, and the stream is
    broken (stop the other end); :class:`OSError` if the other end is gone."""
    payload = ForkingPickler.dumps(obj)
    size = len(payload)
    header = struct.pack("!i", size) if size <= 0x7FFFFFFF else \
        struct.pack("!i", -1) + struct.pack("!Q", size)
    left = memoryview(header + payload)
    deadline = time.monotonic() + timeout
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        while left:
            wait_s = deadline - time.monotonic()
            if wait_s <= 0 or not select.select([], [sock], [], wait_s)[1]:
                return False
            with contextlib.suppress(BlockingIOError):
                left = left[sock.send(left, socket.MSG_DONTWAIT):]
    return True


def death(proc: subprocess.Popen[bytes], log: Any) -> str:
    """How ``proc`` ended (waiting ``KILL_S`` at most) and its last lines of output (in
    ``log``)."""
    try:
        code: int | None = proc.wait(KILL_S)
    except subprocess.TimeoutExpired:
        code = None
    how = (f"it had not ended {KILL_S:g} s after SIGKILL" if code is None else
           f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}")
    log.seek(0)
    lines = log.read().decode(errors="replace").strip().splitlines()
    tail = " | ".join(line.strip() for line in lines[-TAIL_LINES:] if line.strip())
    return f"{how}; its last output: {tail}" if tail else f"{how}; no output"


def stop(proc: subprocess.Popen[bytes] | None) -> bool:
    """End ``proc`` (started in a session of its own) and every process of its group:
    SIGTERM, SIGKILL after ``GRACE_S`` to whatever of the group is left, then reap it
    within ``KILL_S``.  False: it could not be reaped in time (it is left to the
    system; the caller goes on without it)."""
    if proc is None or proc.returncode is not None:
        return True
    _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while not _exited(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    # the leader is not reaped yet, so its group id still names this group alone
    _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(KILL_S)
    except subprocess.TimeoutExpired:
        return False
    return True


def linger(proc: subprocess.Popen[bytes]) -> None:
    """Let ``proc``, asked to end, exit on its own while this process goes on: a daemon
    thread reaps it, and stops it (:func:`stop`) if it has not ended within ``GRACE_S``
    (a worker tearing its CUDA context down takes tenths of a second); one still there
    when this process exits is killed with its group then."""
    def reap() -> None:
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            stop(proc)

    threading.Thread(target=reap, name="sweeper-reap", daemon=True).start()
    atexit.register(kill_now, proc, reap_s=0.0)


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
