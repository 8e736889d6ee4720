"""The worker process's side (:mod:`sweeper.sweep._process`): build the bench once from
the :class:`~sweeper.sweep._process.Setup`, say ready, then measure each job it is sent
(a trial, or a problem's finals) until it is sent ``None`` or the coordinator goes away.
It never writes the journal: the records measuring adds come back with the trial or the
final (a :class:`Relay`)."""

from __future__ import annotations

import sys
import time
from multiprocessing.connection import Connection

from sweeper._processes import jobs, warm_imports
from sweeper.store import BaselineRecord, TrialRecord
from sweeper.study import Choice, now
from sweeper.sweep._process import Ready, Setup
from sweeper.sweep._relay import Relay
from sweeper.sweep._workers import FinalRound, FinalsJob, FinalsOutcome, Outcome, final_of
from sweeper.trial import TrialResult, TrialStatus


def unrun(number: int, choice: Choice, edited: str) -> TrialRecord:
    """What stands for trial ``number`` where this worker's kernel is not the source the
    trial would be recorded under (``edited`` names the file): never run, never kept."""
    return TrialRecord.from_result(number, choice, None, TrialResult(
        TrialStatus.CRASHED, f"not run: {edited} was edited"), now(), 0.0)


def main() -> None:
    """Serve jobs over the socket whose descriptor is the first argument."""
    conn = Connection(int(sys.argv[1]))
    # torch and triton before the setup: a process started ahead of its sweep
    # (sweeper._processes) imports them while the coordinator does the same
    warm_imports()
    from sweeper.devices import open_device
    from sweeper.kernels import load_kernel
    from sweeper.kernels._watch import SourceWatch
    from sweeper.sweep._bench import Bench
    from sweeper.sweep._limits import Limits

    steps = {"imports": time.perf_counter()}   # the interpreter, torch and triton
    setup: Setup = conn.recv()
    sys.path[:0] = [p for p in setup.sys_path if p not in sys.path]
    steps["setup"] = time.perf_counter()
    device = open_device(setup.device)
    steps["device"] = time.perf_counter()
    kernel = load_kernel(setup.space.kernel, setup.space.kernel_options)
    # the source this process runs: a worker started after an edit imported the new text
    watch = SourceWatch(kernel.source_files(), kernel.source_hash())
    steps["kernel"] = time.perf_counter()
    bounds = device.bounds()
    steps["bounds"] = time.perf_counter()
    relay = Relay(setup.known)
    bench = Bench(setup.space, kernel, device, relay, measure=setup.measure,
                  facts=device.facts(), limits=Limits(kernel, bounds, setup.ceilings),
                  baselines=relay.read(BaselineRecord))
    steps["bench"] = time.perf_counter()
    conn.send(Ready(device.facts().name, steps))
    for job in jobs(conn):
        if isinstance(job, FinalsJob):
            edited = watch.differs(job.source)
            final = None if edited else \
                final_of(bench, job, lambda r, n: conn.send(FinalRound(r, n)))
            conn.send(FinalsOutcome(final, relay.drain(),
                                    edited=edited or watch.differs(job.source)))
            continue
        got = time.perf_counter()
        bench.merge_best(job.best)
        if job.duty is not None:
            bench.power.duty = job.duty
        edited = watch.differs(job.source)
        if edited:              # nothing of another source is run, let alone kept
            conn.send(Outcome(unrun(job.number, job.choice, edited), edited=edited))
            continue
        record = bench.trial(job.number, job.choice)
        bench.note_best(record)
        lost = record.status is TrialStatus.CRASHED and not device.healthy()
        # a compile reads the kernel again: an edit meanwhile may be what was measured
        conn.send(Outcome(record, relay.drain(), lost, bench.stamps(got),
                          watch.differs(job.source)))
        if lost:                   # nothing more can run in this process
            return

