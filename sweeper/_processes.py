"""sweeper's own processes, in one place: each serves one module over a socket (a worker,
a compile process), and is started, adopted, sent its setup and ended here, never waited
on without bound.

**Started ahead.**  A worker process spends its first seconds importing torch and triton
(3.1 s on the H200 machine), and so does the coordinator before it can read a study or
open its GPU (2.8 s); one after the other, those seconds add up before the first trial.
``sweeper run`` therefore starts its processes first (:func:`prespawn`), with what it can
tell from its options alone (the device's environment, the GPU indices); they import side
by side with the coordinator and then wait for their setup.  :func:`adopt` hands a waiting
process to the worker or compile pool that asks for the same module and environment
(:func:`spawn` asks first); one never adopted is ended by :func:`release` (at exit at the
latest): it has done nothing but import.

**Stopped without waiting for ever.**  A process may be stuck in C (a synchronize on a
kernel that never returns runs no signal handler), may stop reading its socket, or may not
be reapable while the GPU driver tears its context down.  Every send has a deadline
(:func:`send_within`), stopping signals the process's whole group (its children, a
compiler say, go too) and gives up reaping after ``KILL_S``.  Nothing here imports torch:
a compile process and a run starting its compile pool early use it before (or without)
importing the measuring side.
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
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from sweeper.errors import DEBUG_ENV

#: The modules whose ``main`` a process serves.
WORKER = "sweeper.sweep._worker_main"
COMPILER = "sweeper.sweep._compile_main"
#: What a compile process's environment sets: no CUDA device (it never opens a
#: context; it compiles for a named target), and real compiles, not the interpreter.
COMPILE_ENV = {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "0"}


@dataclass
class Spawned:
    """A process started and importing, not yet sent its setup: the process, our end of
    its socket, the file its output goes to, and when it was started (``perf_counter``)."""

    proc: Any
    conn: Connection
    log: Any
    launched: float = field(default_factory=time.perf_counter)


#: Most compile processes a pool starts by default (Triton's compile scales to about
#: this many before the processes' start-up outweighs what they save).
MAX_DEFAULT = 8


def default_size(workers: int = 1, cores: int | None = None) -> int:
    """The compile processes a sweep with ``workers`` measuring processes starts: the
    cores left over by the workers and the coordinator, at most ``MAX_DEFAULT``."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(0, min(cores - workers - 1, MAX_DEFAULT))


_Key = tuple[str, tuple[tuple[str, str], ...]]
_waiting: dict[_Key, list[Spawned]] = {}


def _key(module: str, env: dict[str, str]) -> _Key:
    return module, tuple(sorted(env.items()))


def start(module: str, sys_path: list[str], env: dict[str, str]) -> Spawned:
    """Start ``python -c 'from MODULE import main; main()'`` in a session of its own with
    one end of a socket pair, ``env`` over this process's environment and ``sys_path`` as
    its import path; its output goes to a file (read when it dies), its stderr to this
    process's under ``sweeper --debug`` (:data:`~sweeper.errors.DEBUG_ENV`: a failed trial's
    traceback shows as it fails)."""
    mine, theirs = Pipe(duplex=True)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - read when it dies
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in sys_path if p)}
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from {module} import main; main()", str(theirs.fileno())],
        pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
        stderr=None if env.get(DEBUG_ENV) else subprocess.STDOUT, env=env,
        start_new_session=True)
    theirs.close()
    return Spawned(proc, mine, log)


def prespawn(module: str, env: dict[str, str], sys_path: list[str], count: int = 1) -> None:
    """Start ``count`` processes serving ``module`` with ``env`` over this process's
    environment, to be adopted later by whoever asks for the same module and ``env``."""
    for _ in range(count):
        _waiting.setdefault(_key(module, env), []).append(start(module, sys_path, env))


def adopt(module: str, env: dict[str, str]) -> Spawned | None:
    """A waiting process serving ``module`` with ``env``, taken out of the nursery; None
    where there is none (or it has died meanwhile: it is ended and the next is tried)."""
    waiting = _waiting.get(_key(module, env), [])
    while waiting:
        spawned = waiting.pop(0)
        if spawned.proc.poll() is None:
            return spawned
        end(spawned)
    return None


def waiting() -> int:
    """How many processes wait to be adopted."""
    return sum(len(v) for v in _waiting.values())


def release(module: str | None = None) -> None:
    """End every process never adopted (they only imported; their group is killed), or
    only those serving ``module``."""
    end(*(spawned for key in [k for k in _waiting if module is None or k[0] == module]
          for spawned in _waiting.pop(key)))


def end(*ended: Spawned) -> None:
    """End processes started by :func:`start` at once: our end of each socket closed, the
    processes killed side by side (:func:`kill_now`)."""
    for spawned in ended:
        with contextlib.suppress(OSError):
            spawned.conn.close()
    kill_now(*(spawned.proc for spawned in ended))


def worker_env(index: int, gpu_env: bool, env: dict[str, str]) -> dict[str, str]:
    """The environment a worker for GPU ``index`` gets over this process's: ``env``, and
    with ``gpu_env`` ``CUDA_VISIBLE_DEVICES`` naming that GPU alone (the ``index``-th of
    this process's own ``CUDA_VISIBLE_DEVICES`` where it is set)."""
    env = dict(env)
    if gpu_env:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        listed = visible.split(",") if visible else None
        env["CUDA_VISIBLE_DEVICES"] = listed[index] if listed and index < len(listed) \
            else str(index)
    return env


def warm_imports() -> None:
    """Import torch and triton (where installed), the seconds every worker and compile
    process spends before it can do anything, so a process started ahead spends them
    while it waits for its setup."""
    import importlib

    for name in ("torch", "triton", "triton.compiler"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def jobs(conn: Connection) -> Iterator[Any]:
    """What a process's coordinator sends it after its setup, one job at a time, until it
    sends ``None`` or goes away."""
    while True:
        try:
            job = conn.recv()
        except EOFError:           # the coordinator is gone
            return
        if job is None:
            return
        yield job


def kill_now(*procs: Any, reap_s: float = 1.0) -> None:
    """SIGKILL the process group of each of ``procs`` (processes started by :func:`start`,
    holding nothing that must be kept), all first, then reap each within ``reap_s`` (else
    the system does): they die side by side, not one after another."""
    alive = [proc for proc in procs if proc.poll() is None]   # reaped: its pid may be reused
    for proc in alive:
        _signal_group(proc.pid, signal.SIGKILL)
    for proc in alive:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(reap_s)


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
    """A process serving ``module`` (:func:`start`: a session of its own, ``env`` over
    this process's environment, ``sys_path`` as its import path), sent ``setup``: one
    :func:`prespawn` started earlier with the same module and ``env`` where there is one,
    else a new one."""
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


def ended(proc: subprocess.Popen[bytes], within: float) -> int | None:
    """How ``proc`` ended, as its ``returncode`` would say it (``-9``: killed by SIGKILL),
    waiting ``within`` seconds at most; None where it runs still.  It is not reaped, so
    :func:`stop` still ends what is left of its group.  Asked before :func:`stop` signals
    it, this tells a kill from outside (the OOM killer, a user's ``kill -9``) from
    sweeper's own."""
    deadline = time.monotonic() + within
    while proc.returncode is None:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:       # reaped by another
            break
        if info is not None:
            signalled = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
            return -info.si_status if signalled else info.si_status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
    return proc.returncode


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


#: The processes :func:`linger` lets end on their own and has not reaped yet.
_lingering: set[subprocess.Popen[bytes]] = set()
_lingering_lock = threading.Lock()


def linger(proc: subprocess.Popen[bytes]) -> None:
    """Let ``proc``, asked to end, exit on its own while this process goes on: a daemon
    thread reaps it, and stops it (:func:`stop`) if it has not ended within ``GRACE_S``
    (a worker tearing its CUDA context down takes tenths of a second); one still there
    when this process exits is killed with its group then (:func:`_kill_lingering`, the
    one exit handler for all of them: a notebook that runs sweep after sweep in worker
    processes would otherwise gather a handler, and a hold on its process, per worker)."""
    def reap() -> None:
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            stop(proc)
        finally:
            with _lingering_lock:
                _lingering.discard(proc)

    with _lingering_lock:
        _lingering.add(proc)
    threading.Thread(target=reap, name="sweeper-reap", daemon=True).start()


def _kill_lingering() -> None:
    """At exit: kill (with its group) each process :func:`linger` let end that is still
    there, without waiting to reap it."""
    with _lingering_lock:
        procs = list(_lingering)
    kill_now(*procs, reap_s=0.0)


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


atexit.register(release)
atexit.register(_kill_lingering)
