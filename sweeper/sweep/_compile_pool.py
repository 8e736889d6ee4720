"""A pool of compile processes that compile configs ahead of the worker measuring them.

Triton's compile is CPU-bound and its disk cache is shared between processes, so while a
worker measures one config the pool compiles the next ones the sampler will propose; the
worker's launch then loads the binary from the cache.  Each process starts once per
sweep and stays warm: it imports triton and the kernel, holds no CUDA context (it
compiles for a named target, :mod:`sweeper.kernels._precompile`) and runs at a lower
priority than the measuring worker, so compiling does not move its timings.

The coordinator hands configs over with :meth:`CompilePool.ahead`, in the order the
sweep will measure them; each free process takes the first one waiting. Configs that
differ only in their launch grid or L2 state
(:func:`~sweeper.kernels._binaries.binary_of`) share one binary: the first is compiled,
the others wait on it and then load it, so no binary is compiled twice at once (a copy
space of 204 configs has 35 binaries). Before a config is measured,
:meth:`CompilePool.take` says what became of it: compiled (the worker loads it), refused
by the compiler (the trial is a ``compile_error``, as it would have been in the worker),
or not reached (the worker compiles it, as without a pool; a compile in progress is
waited for as long as the caller says, the sweep about as long as compiling it would
take, :meth:`CompilePool.worth_waiting_s`). A process that dies leaves its config to the
worker and is started again, up to ``RESTARTS`` times.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from sweeper._processes import (
    COMPILE_ENV,
    COMPILER,
    GRACE_S,
    STARTUP_S,
    death,
    default_size,
    end,
    send_within,
    spawn,
    stop,
)
from sweeper.kernels._binaries import binary_of
from sweeper.kernels._precompile import Compile, Precompiled, Target
from sweeper.space import Config, Space

#: Times a pool starts a process again after one died, before it gives up.
RESTARTS = 3
#: Seconds :meth:`CompilePool.take` waits for a compile in progress unless told.
WAIT_S = 120.0

Key = tuple[str, ...]
__all__ = ["CompilePool", "PoolSetup", "default_size"]


@dataclass(frozen=True)
class PoolSetup:
    """What a compile process needs: the space (it loads the kernel from it), the
    target, and the coordinator's import path."""

    space: Space
    target: Target
    sys_path: list[str]


@dataclass(frozen=True)
class Started:
    """A compile process's first message: it is ready, with this pid."""

    pid: int


@dataclass(frozen=True)
class Done:
    """A compile process's answer for one config."""

    key: Key
    result: Precompiled
    pid: int


class _Process:
    """One compile process and the config it compiles, if any."""

    def __init__(self, setup: PoolSetup) -> None:
        # no CUDA device (COMPILE_ENV): a compile process never opens a context
        self.spawned = spawn(COMPILER, setup, setup.sys_path, COMPILE_ENV)
        self.proc, self.conn, self.log = \
            self.spawned.proc, self.spawned.conn, self.spawned.log
        self.pid: int | None = None       # set once it said it is ready
        self.key: Key | None = None
        self.config: Config | None = None
        self.since = 0.0                  # when it was handed its config (monotonic)


class CompilePool:
    """``size`` compile processes for ``setup``'s kernel and target.  Configs are
    compiled in the order :meth:`ahead` was given them; :meth:`take` says what became of
    one.  A thread hands configs to the processes as they free up, while the coordinator
    waits on its workers."""

    def __init__(self, setup: PoolSetup, size: int) -> None:
        self.setup, self.size = setup, size
        #: when it was started (``perf_counter``)
        self.created_at = time.perf_counter()
        self.procs = [_Process(setup) for _ in range(size)]
        self.waiting: deque[tuple[Key, Config]] = deque()
        self.done: dict[Key, Done] = {}
        #: each config handed over and not taken -> the config whose compile makes its
        #: binary (itself, or the first handed over with the same :func:`binary_of`)
        self.leader: dict[Key, Key] = {}
        self._binaries: dict[Hashable, Key] = {}
        #: the binaries known to be in the cache (the pool compiled them, or a config
        #: sharing them was measured): a config of one is measured without waiting
        self.built: set[Hashable] = set()
        #: every key handed to a process, in order (what the tests check)
        self.handed: list[Key] = []
        #: the pid of the process that compiled each config
        self.compiled_by: dict[Key, int] = {}
        #: every pid that compiled or started, and why a process died
        self.pids: set[int] = set()
        #: seconds from handing a config over to its answer, each compile so far
        self.walls: list[float] = []
        self.deaths: list[str] = []
        self._lock = threading.RLock()
        self._closing = threading.Event()
        self._feeder = threading.Thread(target=self._feed, name="compile-pool",
                                        daemon=True)
        self._feeder.start()

    def known(self, key: Key) -> bool:
        """Whether ``key`` was handed over (waiting, compiling, compiled, or sharing the
        binary of one that is) and not taken yet."""
        with self._lock:
            return key in self.leader

    def ahead(self, configs: Iterable[tuple[Key, Config]], limit: int | None = None) -> int:
        """Compile these configs next, in this order, after those already waiting; a
        config whose binary another one handed over makes waits on that one.  Stops
        once ``limit`` compiles were queued; returns how many were."""
        queued = 0
        with self._lock:
            for key, config in configs:
                if key in self.leader:
                    continue
                binary = binary_of(config)
                if binary not in self._binaries:
                    if limit is not None and queued >= limit:
                        break
                    self._binaries[binary] = key
                    self.waiting.append((key, config))
                    queued += 1
                self.leader[key] = self._binaries[binary]
            self._hand_out()
        return queued

    def withdraw(self, refused: Callable[[Key, Config], bool]) -> int:
        """Take back the configs waiting that ``refused`` names (the kernel turns them
        down: handed over before it could be asked), uncompiled; a config sharing the
        binary of one taken back is forgotten too, to be handed over again as its own.
        Returns how many were taken back."""
        with self._lock:
            gone = {key for key, config in self.waiting if refused(key, config)}
            if gone:
                self.waiting = deque((k, c) for k, c in self.waiting if k not in gone)
                self.leader = {k: lead for k, lead in self.leader.items() if lead not in gone}
                self._binaries = {b: k for b, k in self._binaries.items() if k not in gone}
        return len(gone)

    def pending(self) -> int:
        """How many configs are waiting or compiling."""
        with self._lock:
            return len(self.waiting) + sum(1 for p in self.procs if p.key is not None)

    def pump(self, timeout: float = 0.0) -> None:
        """Take the answers that came (waiting up to ``timeout`` for one) and hand
        waiting configs to free processes."""
        with self._lock:
            conns = [p.conn for p in self.procs]
        if conns and timeout > 0:
            with contextlib.suppress(OSError, ValueError):   # one closed meanwhile
                wait(conns, timeout)
        with self._lock:
            for proc in list(self.procs):
                try:
                    answered = proc.conn.poll(0)
                except (OSError, ValueError):
                    continue
                if answered:
                    self._receive(proc)
            self._hand_out()

    def take(self, key: Key, wait_s: float = WAIT_S) -> Precompiled | None:
        """What became of ``key``: its compile's result (``None``: the pool did not
        compile it itself, so the worker launches it: loading the binary a config
        sharing it compiled, else compiling).  A config still waiting is withdrawn; a
        compile in progress of it or of its binary is waited for, up to ``wait_s``."""
        self.pump()
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                leader = self.leader.get(key, key)
                self.waiting = deque((k, c) for k, c in self.waiting if k != key)
                if leader in self.done or time.monotonic() >= deadline or \
                        not any(p.key == leader for p in self.procs):
                    self.leader.pop(key, None)
                    done = self.done.pop(key, None) if leader == key else None
                    return done.result if done else None
            self.pump(min(0.1, max(0.0, deadline - time.monotonic())))

    def worth_waiting_s(self) -> float:
        """How long waiting for a compile in progress can pay: the median of the pool's
        compiles so far, about what the worker would take to compile it itself (waiting
        that long, then compiling, costs at most twice the best choice).  None finished
        yet (the pool's processes still starting and warming up): 0, the worker
        compiles its first configs itself; on the H200 waiting for the pool's first
        compile cost a cold copy sweep about 1 s."""
        with self._lock:
            walls = sorted(self.walls)
        return walls[len(walls) // 2] if walls else 0.0

    def drain(self, timeout: float = 600.0) -> None:
        """Wait until every config handed over is compiled (the benchmark's serial
        against pool comparison)."""
        deadline = time.monotonic() + timeout
        while self.pending() and self.procs and time.monotonic() < deadline:
            self.pump(0.1)

    def wait_started(self, timeout: float = STARTUP_S) -> None:
        """Wait until every process has said it is ready (or died)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(p.pid is not None for p in self.procs):
                    return
            self.pump(0.1)

    def close(self) -> None:
        """Stop feeding and end every process."""
        self._closing.set()
        self._feeder.join(GRACE_S + 1.0)     # it waits 0.05 s at a time, and sends bounded
        with self._lock:
            # at once: a compile process holds nothing to keep (Triton writes a cache
            # entry whole, under a temporary name: one cut short leaves no broken entry)
            end(*(proc.spawned for proc in self.procs))
            self.procs = []

    def _feed(self) -> None:
        """The feeder thread: answers taken and configs handed out as processes free
        up, while the coordinator waits on its workers."""
        while not self._closing.is_set():
            self.pump(0.05)

    def _hand_out(self) -> None:
        for proc in list(self.procs):
            if proc.pid is not None and proc.key is None and self.waiting:
                proc.key, config = self.waiting.popleft()
                proc.config, proc.since = config, time.monotonic()
                self.handed.append(proc.key)
                try:
                    sent = send_within(proc.conn, (proc.key, config), GRACE_S)
                except OSError:                  # it died: its answer is its death
                    self._receive(proc)
                    continue
                if not sent:                     # it stopped reading: it is ended
                    self._died(proc)

    def _receive(self, proc: _Process) -> None:
        try:
            got: Any = proc.conn.recv()
        except (EOFError, OSError):
            self._died(proc)
            return
        if isinstance(got, Started):
            proc.pid = got.pid
            self.pids.add(got.pid)
        elif isinstance(got, Done):
            self.done[got.key] = got
            self.walls.append(time.monotonic() - proc.since)
            if got.result.status is Compile.COMPILED and proc.config is not None:
                self.built.add(binary_of(proc.config))
            self.compiled_by[got.key] = got.pid
            proc.key = None

    def _died(self, proc: _Process) -> None:
        """A process died: its config is the worker's; start another in its place
        unless too many have died."""
        stop(proc.proc)                   # its socket closed, or it stopped reading
        self.deaths.append(death(proc.proc, proc.log))
        if proc.key is not None:
            self.done[proc.key] = Done(proc.key, Precompiled(
                Compile.LEFT, f"the compile process died ({self.deaths[-1]})"), proc.pid or 0)
        proc.conn.close()
        self.procs.remove(proc)
        if len(self.deaths) <= RESTARTS:
            self.procs.append(_Process(self.setup))
