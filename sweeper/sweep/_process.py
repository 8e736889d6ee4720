"""A worker that is a process of its own, one per GPU, started once and kept warm.

The coordinator starts ``python -c 'sweeper.sweep._worker_main.main()'`` with one end of
a socket pair; over it go a :class:`Setup` (what the worker needs to build its device,
kernel and bench), then one :class:`~sweeper.sweep._workers.Job` at a time, each
answered by an :class:`~sweeper.sweep._workers.Outcome`; messages are pickled by
:mod:`multiprocessing.connection`.  The worker's output goes to a file whose last lines
name what happened when it dies.  It runs in a session of its own, so Ctrl-C reaches
only the coordinator, which stops after the trials in flight.

A worker that dies mid-trial (a segfault, ``os._exit``, a sticky CUDA error) has that
trial recorded as ``crashed`` with its exit status and last output; one that runs past
``measure.timeout`` is stopped (SIGTERM, then SIGKILL after a grace) and the trial
recorded as ``timeout``.  Either way a fresh worker takes its place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from sweeper.ceilings import Ceilings
from sweeper.errors import SweeperError
from sweeper.finals import ROUNDS
from sweeper.space import Config, MeasureSpec, Space
from sweeper.store import GpuSlot
from sweeper.study import Choice, now
from sweeper.sweep._finals import FinalsJob, FinalsOutcome
from sweeper.sweep._workers import Job, Outcome, Worker, failed
from sweeper.trial import TrialStatus

#: Seconds a new worker may take to import torch, open its device and say it is ready.
STARTUP_S = 300.0
#: Seconds between SIGTERM and SIGKILL for a worker being stopped.
GRACE_S = 2.0
#: Lines of a dead worker's output quoted in its trial's reason.
TAIL_LINES = 5


@dataclass(frozen=True)
class Setup:
    """What a worker process builds its bench from: the space, the device as
    ``--device`` named it, the measurement, the ceilings, the journal's baseline and duty
    records, and the coordinator's import path (so a user kernel named by module path
    imports the same)."""

    space: Space
    device: str
    measure: MeasureSpec
    ceilings: Ceilings | None
    known: list[Any]
    sys_path: list[str]


@dataclass(frozen=True)
class Ready:
    """A worker's first message: the name of the device it opened, and the
    ``perf_counter`` at which each of its start-up steps ended, in order."""

    name: str
    steps: dict[str, float] = dataclasses.field(default_factory=dict)


def spawn(module: str, setup: object, sys_path: list[str], env: dict[str, str]
          ) -> tuple[subprocess.Popen[bytes], Connection, Any]:
    """Start ``python -c 'from MODULE import main; main()'`` in a session of its own with
    one end of a socket pair, ``env`` over this process's environment and ``sys_path`` as
    its import path, and send it ``setup``: the process, our end, and the file its
    output goes to (read when it dies)."""
    mine, theirs = Pipe(duplex=True)
    log = tempfile.TemporaryFile()  # noqa: SIM115 - read when it dies
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in sys_path if p)}
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from {module} import main; main()", str(theirs.fileno())],
        pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log,
        stderr=subprocess.STDOUT, env=env, start_new_session=True)
    theirs.close()
    mine.send(setup)
    return proc, mine, log


def death(proc: subprocess.Popen[bytes], log: Any) -> str:
    """How ``proc`` ended and its last lines of output (in ``log``)."""
    code = proc.wait()
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    log.seek(0)
    lines = log.read().decode(errors="replace").strip().splitlines()
    tail = " | ".join(line.strip() for line in lines[-TAIL_LINES:] if line.strip())
    return f"{how}; its last output: {tail}" if tail else f"{how}; no output"


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    """End ``proc`` if it runs: SIGTERM, SIGKILL after ``GRACE_S``."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ProcessWorker(Worker):
    """A persistent worker process measuring on GPU ``index`` (``gpu_env``: set
    ``CUDA_VISIBLE_DEVICES`` so the worker sees that GPU alone; off for a device with no
    GPUs, where ``index`` only names the worker)."""

    def __init__(self, setup: Setup, index: int, *, gpu_env: bool, env: dict[str, str],
                 resolve: Callable[[Choice], Config | None]) -> None:
        self.setup, self.index, self.gpu_env = setup, index, gpu_env
        self.env, self.resolve = env, resolve
        self.timeout_s = setup.measure.timeout_s
        self._conn: Connection | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._started = ("", 0.0)
        self._finals_job: FinalsJob | None = None
        #: when the process was last launched (``perf_counter``), and its ready message
        self.launched, self.ready = 0.0, Ready("")

    def launch(self) -> None:
        """Start the process (:meth:`wait_ready` waits until it can measure), so that
        several workers import torch side by side."""
        env = dict(self.env)
        if self.gpu_env:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            listed = visible.split(",") if visible else None
            env["CUDA_VISIBLE_DEVICES"] = listed[self.index] if listed and \
                self.index < len(listed) else str(self.index)
        self.launched = time.perf_counter()
        self._proc, self._conn, self._log = spawn("sweeper.sweep._worker_main", self.setup,
                                                  self.setup.sys_path, env)

    def wait_ready(self) -> None:
        """Wait until the process has built its bench; :class:`SweeperError` with its
        last output if it could not."""
        assert self._conn is not None
        ready = self._conn.poll(STARTUP_S) and self._receive()
        if not isinstance(ready, Ready):
            self._stop()
            raise SweeperError(f"the worker for GPU {self.index} did not start: "
                               f"{self._death()}")
        self.slot, self.ready = GpuSlot(self.index, ready.name), ready

    def started(self) -> dict[str, float]:
        return self.ready.steps

    def submit(self, job: Job) -> None:
        assert self._conn is not None
        self.job, self._started = job, (now(), time.monotonic())
        with contextlib.suppress(OSError):   # it died between jobs: result() says so
            self._conn.send(job)

    def done(self) -> bool:
        assert self._conn is not None
        return self._conn.poll(0)

    def result(self) -> Outcome:
        got = self._receive()
        if isinstance(got, Outcome):
            if got.lost:
                got.record = dataclasses.replace(got.record, reason=(
                    f"{got.record.reason} (it left the CUDA context unusable; the sweep "
                    "went on with a fresh worker)"))
            return got
        self._stop()
        return self._failed(TrialStatus.CRASHED, (
            f"the worker process died during this trial ({self._death()}); the sweep "
            "went on with a fresh worker"))

    def submit_finals(self, job: FinalsJob) -> None:
        self._finals_job = job
        if self._conn is not None:
            with contextlib.suppress(OSError):   # it died: finals_result() says so
                self._conn.send(job)

    def finals_result(self) -> FinalsOutcome:
        """The worker's final, or why there is none: it died, or ran past
        ``measure.timeout`` per entrant and round (then it is stopped).  Either way a fresh
        worker takes its place for the next problem's finals."""
        job, self._finals_job = self._finals_job, None
        assert job is not None, "finals_result() before submit_finals()"
        if self._conn is None:
            return FinalsOutcome(None, error="its worker could not be restarted")
        limit = None if self.timeout_s is None else \
            self.timeout_s * ROUNDS * (len(job.finalists) + 1)
        got = self._receive() if self._conn.poll(limit) else False
        if isinstance(got, FinalsOutcome):
            return got
        if got is False:
            self._stop()
            error = (f"no final after {limit:g} s (measure.timeout for each entrant of each "
                     "round); the worker was stopped")
        else:
            self._stop()
            error = f"the worker process died during the finals ({self._death()})"
        try:
            self.restart(None)
        except SweeperError as err:
            self._stop()
            error += f"; no fresh worker: {err}"
        return FinalsOutcome(None, error=error)

    def connection(self) -> Connection | None:
        return self._conn

    def deadline(self) -> float | None:
        if self.job is None or self.timeout_s is None:
            return None
        return self._started[1] + self.timeout_s

    def expire(self) -> Outcome:
        self._stop()
        return self._failed(TrialStatus.TIMEOUT, (
            f"no result after {self.timeout_s:g} s (measure.timeout): a hung kernel, or a "
            "compile longer than that; the worker was stopped and the sweep went on with a "
            "fresh one"))

    def restart(self, record: Any) -> None:
        self._stop()
        self.launch()
        self.wait_ready()

    def finish(self) -> None:
        if self._conn is not None and self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._conn.send(None)            # done: the worker exits on its own

    def close(self) -> None:
        self.finish()
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(GRACE_S)
        self._stop()

    def _receive(self) -> Any:
        assert self._conn is not None
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            return None

    def _failed(self, status: TrialStatus, reason: str) -> Outcome:
        assert self.job is not None
        started, t0 = self._started
        return failed(self.job, status, reason, started, time.monotonic() - t0,
                      self.resolve)

    def _stop(self) -> None:
        """End the process: SIGTERM, SIGKILL after a grace; close the pipe."""
        stop(self._proc)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _death(self) -> str:
        """How the process ended and its last lines of output."""
        assert self._proc is not None
        return death(self._proc, self._log)
