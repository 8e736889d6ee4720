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
recorded as ``timeout``.  Either way a fresh worker takes its place.  A worker killed by
a SIGKILL or SIGTERM that sweeper did not send (it had died before sweeper signalled it:
the OOM killer, a user's kill, a scheduler ending a job's processes) is no fault of the
kernel's: its trial is
recorded ``crashed`` to be measured again (``retry``: before the sampler's next proposal,
by a fresh worker; or by the next run where this one stops first), and only a second
such kill of the config's trial is recorded as its crash.

The coordinator never waits on a worker without bound (:mod:`sweeper._processes`: every
send has a deadline, stopping ends the whole process group and gives up reaping after
``KILL_S``), and a fresh worker has ``RESTART_S`` to say it is ready.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from sweeper._processes import (
    GRACE_S,
    KILL_S,
    RESTART_S,
    STARTUP_S,
    WORKER,
    death,
    ended,
    linger,
    prespawn,
    send_within,
    spawn,
    stop,
    worker_env,
)
from sweeper.ceilings import Ceilings
from sweeper.errors import SweeperError
from sweeper.finals import ROUNDS
from sweeper.space import Config, MeasureSpec, Space
from sweeper.store import GpuSlot
from sweeper.study import Choice, now
from sweeper.sweep._drop import NotStarted
from sweeper.sweep._workers import (
    FinalRound,
    FinalsJob,
    FinalsOutcome,
    Job,
    OnRound,
    Outcome,
    Worker,
    failed,
)
from sweeper.trial import TrialStatus

#: How a worker ended that no kernel does (its ``returncode``): a signal from outside,
#: the OOM killer's SIGKILL or a scheduler's SIGTERM to every process of its job.
OUTSIDE_KILLS = (-signal.SIGKILL, -signal.SIGTERM)


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
        spawned = spawn(WORKER, self.setup, self.setup.sys_path,
                        worker_env(self.index, self.gpu_env, self.env))
        self.launched, self._proc, self._conn, self._log = \
            spawned.launched, spawned.proc, spawned.conn, spawned.log

    def wait_ready(self, within: float | None = None) -> None:
        """Wait until the process has built its bench, ``within`` seconds at most
        (``STARTUP_S`` by default); :class:`NotStarted` with its last output if it
        could not, and then it is stopped."""
        assert self._conn is not None
        within = STARTUP_S if within is None else within
        ready = self._conn.poll(within) and self._receive()
        if not isinstance(ready, Ready):
            silent = ready is False
            self._stop()
            how = f"no answer within {within:g} s, then stopped" if silent else "it died"
            why = f"{how}: {self._death()}"
            raise NotStarted(f"the worker for GPU {self.index} did not start ({why})",
                             self.index, why)
        self.slot, self.ready = GpuSlot(self.index, ready.name), ready

    def started(self) -> dict[str, float]:
        return self.ready.steps

    def submit(self, job: Job) -> None:
        assert self._conn is not None
        self.job, self._started = job, (now(), time.monotonic())
        with contextlib.suppress(OSError):   # it died between jobs: result() says so
            # a worker that stopped reading is stopped at the job's deadline
            send_within(self._conn, job, self.timeout_s or STARTUP_S)

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
        assert self._proc is not None
        how = ended(self._proc, GRACE_S)       # before _stop() signals it
        self._stop()
        death = self._death()
        if how not in OUTSIDE_KILLS:
            return self._failed(TrialStatus.CRASHED, (
                f"the worker process died during this trial ({death}); the sweep went on "
                "with a fresh worker"))
        job = self.job
        assert job is not None
        killed = (f"a {signal.Signals(-how).name} that sweeper did not send killed the "
                  "worker process")
        outside = f"the OOM killer, or a user's or a scheduler's kill; {death}"
        if job.killed_before is not None:
            return self._failed(TrialStatus.CRASHED, (
                f"{killed} again, as in trial #{job.killed_before}: killed twice, so likely "
                f"by this config (a host allocation the OOM killer ends, say; {death}); the "
                "sweep went on with a fresh worker"))
        outcome = self._failed(TrialStatus.CRASHED, (
            f"{killed}: not the kernel's fault, the sweep measures it again ({outside}; "
            "killed so again, it is recorded as crashed); the sweep went on with a fresh "
            "worker"))
        outcome.record.retry = True
        return outcome

    def submit_finals(self, job: FinalsJob) -> None:
        self._finals_job = job
        if self._conn is not None:
            with contextlib.suppress(OSError):   # it died: finals_result() says so
                send_within(self._conn, job, self.timeout_s or STARTUP_S)

    def finals_result(self, on_round: OnRound | None = None) -> FinalsOutcome:
        """The worker's final (its rounds told to ``on_round`` as the worker ends each),
        or why there is none: it died, or ran past ``measure.timeout`` per entrant and
        round (then it is stopped).  Either way a fresh worker takes its place for the
        next problem's finals."""
        job, self._finals_job = self._finals_job, None
        assert job is not None, "finals_result() before submit_finals()"
        if self._conn is None:
            return FinalsOutcome(None, error="its worker could not be restarted")
        limit = None if self.timeout_s is None else \
            self.timeout_s * ROUNDS * (len(job.finalists) + 1)
        deadline = None if limit is None else time.perf_counter() + limit
        while True:
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            got = self._receive() if self._conn.poll(left) else False
            if not isinstance(got, FinalRound):
                break
            if on_round is not None:
                on_round(got.round, got.finalists)
        if isinstance(got, FinalsOutcome):
            return got
        self._stop()
        if got is False:
            error = (f"no final after {limit:g} s (measure.timeout for each entrant of each "
                     "round); the worker was stopped")
        else:
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
        ended = self._stop()
        unreaped = "" if ended else (
            f" (it had not ended {KILL_S:g} s after SIGKILL: its GPU context may still be "
            "being torn down)")
        return self._failed(TrialStatus.TIMEOUT, (
            f"no result after {self.timeout_s:g} s (measure.timeout): a hung kernel, or a "
            f"compile longer than that; the worker was stopped{unreaped} and the sweep "
            "went on with a fresh one"))

    def restart(self, record: Any) -> None:
        """A fresh worker, given ``RESTART_S`` to start; :class:`NotStarted` (one line)
        if it does not, naming the trial that lost the last one.  After a first loss a
        spare process is started (:mod:`sweeper._processes`), so the next fresh worker has
        its imports done: a sweep that loses workers often (a hang in every tile size
        that is too big) waits on none of them, and neither do the other GPUs."""
        self._stop()
        self.launch()                  # the spare started after a last loss, if any
        # the next loss's spare: importing now, while this one starts and measures
        prespawn(WORKER, worker_env(self.index, self.gpu_env, self.env), self.setup.sys_path)
        try:
            self.wait_ready(RESTART_S)
        except NotStarted as err:
            lost = "" if record is None else \
                f" in place of the one trial {record.number} ({record.status.value}) ended"
            raise NotStarted(f"{err}{lost}; every trial measured so far is kept in the "
                             "study", err.index, err.why) from err

    def finish(self) -> None:
        if self._conn is not None and self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(OSError):
                send_within(self._conn, None, GRACE_S)   # done: it exits on its own

    def close(self, wait: bool = True) -> None:
        self.finish()
        if not wait and self._proc is not None and self._conn is not None:
            linger(self._proc)         # it ends on its own; nothing of it is waited for
            self._conn.close()
            self._conn = None
            return
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

    def _stop(self) -> bool:
        """End the process and its group (:func:`stop`); close the pipe.  False: it
        could not be reaped in time."""
        ended = stop(self._proc)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return ended

    def _death(self) -> str:
        """How the process ended and its last lines of output."""
        assert self._proc is not None
        return death(self._proc, self._log)
