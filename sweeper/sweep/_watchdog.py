"""The watchdog: a trial that runs past ``measure.timeout`` is recorded as timed out.

A hung kernel cannot be interrupted from its own process, so the watchdog's thread
appends the trial's ``timeout`` record to the journal itself and hands over to
``on_hang`` (``sweeper run`` goes on in a fresh process there, which resumes the study
and never proposes that config again).  If the trial ends after all, the main thread
raises :class:`TrialHung` rather than record it twice.  Once the kernel's source was
edited the hung trial may run code compiled from the edited text: it is not recorded
under the source the study records (as the sweep keeps no outcome past an edit), and
``on_hang`` is told which file was edited.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

from sweeper.errors import TrialHung, WriteError
from sweeper.space import Config
from sweeper.store import Storage, TrialRecord
from sweeper.study import Choice, now
from sweeper.trial import TrialResult, TrialStatus


@contextlib.contextmanager
def watchdog(store: Storage, number: int, choice: Choice, timeout_s: float | None,
             on_hang: Callable[[TrialRecord, str], None] | None,
             config: Callable[[], Config | None], sampler: str | None = None,
             source_hash: str | None = None,
             edited: Callable[[], str] | None = None) -> Iterator[None]:
    """Guard trial ``number`` (``choice``, proposed by ``sampler``, of the kernel whose
    source hash is ``source_hash``; ``config`` resolves it, None if it cannot be): after
    ``timeout_s`` record it as timed out, unless ``edited()`` names a file of the kernel
    edited since (then nothing is recorded), and call ``on_hang`` with the record and
    that file ("": recorded).  No timeout or no ``on_hang``: no watchdog."""
    if on_hang is None or timeout_s is None:
        yield
        return
    lock, state, started = threading.Lock(), {"done": False}, now()
    timeout, hang = timeout_s, on_hang

    def fire() -> None:
        with lock:
            if state["done"]:
                return
            state["hung"] = True
            result = TrialResult(TrialStatus.TIMEOUT, (
                f"no result after {timeout:g} s (measure.timeout): a hung kernel, or a "
                "compile longer than that; the sweep went on in a fresh process"))
            record = TrialRecord.from_result(number, choice, config(), result, started,
                                             timeout)
            record.sampler, record.source_hash = sampler, source_hash
            changed = edited() if edited is not None else ""
            try:
                if not changed:
                    store.append(record)
            except WriteError as err:      # on this thread no one else can report it
                print(f"sweeper: {err}", file=sys.stderr, flush=True)
                os._exit(1)                # the main thread is stuck in the kernel
            hang(record, changed)          # sweeper run: never returns

    timer = threading.Timer(timeout, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            hung = state.get("hung", False)
    if hung:
        raise TrialHung(number)
