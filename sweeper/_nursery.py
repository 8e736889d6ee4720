"""Worker and compile processes started before the command knows what they will do.

A worker process spends its first seconds importing torch and triton (3.1 s on the H200
machine), and so does the coordinator before it can read a study or open its GPU (2.8
s); one after the other, those seconds add up before the first trial.  ``sweeper run``
therefore starts its processes first (:func:`prespawn`), with what it can tell from its
options alone (the device's environment, the GPU indices); they import side by side
with the coordinator and then wait for their setup.  :func:`adopt` hands a waiting
process to the worker or compile pool that asks for the same module and environment
(:func:`sweeper.sweep._spawn.spawn` asks first); one never adopted is ended by
:func:`release` (at exit at the latest): it has done nothing but import.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

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
    its import path; its output goes to a file (read when it dies)."""
    mine, theirs = Pipe(duplex=True)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - read when it dies
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in sys_path if p)}
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from {module} import main; main()", str(theirs.fileno())],
        pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT, env=env, start_new_session=True)
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


def kill_now(*procs: Any, reap_s: float = 1.0) -> None:
    """SIGKILL the process group of each of ``procs`` (processes started by :func:`start`,
    holding nothing that must be kept), all first, then reap each within ``reap_s`` (else
    the system does): they die side by side, not one after another."""
    alive = [proc for proc in procs if proc.poll() is None]   # reaped: its pid may be reused
    for proc in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in alive:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(reap_s)


atexit.register(release)
