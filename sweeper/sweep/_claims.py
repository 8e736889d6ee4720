"""The claim step of a sweep shared by workers: between "config chosen" and "measured".

A worker (``sweeper worker``) asks the store for the config's claim before measuring it,
keeps the claim alive from a heartbeat thread while it measures, and records the trial
through the claim, so a config is kept once however many workers share the study (see
:mod:`sweeper.store._base`).  A config another worker has recorded is skipped; one another
live worker holds is not measured yet: the sweep keeps it (:class:`Held`) and, once its
sampler has nothing new, asks for it again every :attr:`Claims.poll_s` until its holder
records it or the claim is free (the holder died: at once; hung or cut off: after its
lease), and then measures it itself.  So no worker stops as complete while a config is
only claimed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sweeper.errors import StorageError
from sweeper.store import Claim, TrialRecord
from sweeper.store._base import Storage, claim_key
from sweeper.store._journal import fault
from sweeper.study import Choice

if TYPE_CHECKING:
    import optuna

#: The lease a worker's claims get unless told otherwise: long against one trial, short
#: against a config whose holder is hung or on a host that is gone (a holder whose process
#: is gone loses its claims at once).
LEASE_S = 60.0
#: The longest wait between two asks for the configs other workers hold.
POLL_S = 0.5
#: A claim is renewed this many times per lease: one renewal late or lost, the next still
#: lands in time (:data:`~sweeper.options.MIN_LEASE_S`, the shortest lease a worker takes,
#: leaves a renewal seconds to land).
BEATS_PER_LEASE = 3


@dataclass
class Held:
    """A config another live worker holds (or one a sweep measures again): its choice
    and the sampler's trials waiting on its outcome (the first proposal and any repeat;
    a trial or its number)."""

    choice: Choice
    trials: list[optuna.trial.Trial | int] = field(default_factory=list)


class Claims:
    """``worker_id``'s claims on ``store``, each renewed every third of ``lease_s``
    (:data:`BEATS_PER_LEASE`) while its trial runs (several at once when the sweep has a
    worker per GPU)."""

    def __init__(self, store: Storage, worker_id: str, lease_s: float = LEASE_S) -> None:
        self.store, self.worker_id, self.lease_s = store, worker_id, lease_s
        #: how long to wait between two asks for the configs other workers hold
        self.poll_s = min(POLL_S, lease_s / BEATS_PER_LEASE)
        self._beats: dict[str, tuple[threading.Event, threading.Thread]] = {}
        #: the kernel source a config is claimed on where a resume with ``--force``
        #: changed it (a config measured only on an earlier one is claimable again);
        #: None: a config recorded on any source is done (:func:`claim_key`)
        self.source: str | None = None

    def take(self, key: tuple[str, ...]) -> Claim:
        """Claim ``key`` and keep it alive until :meth:`keep` (TAKEN); or why not: another
        worker recorded it (DONE) or holds it alive (HELD)."""
        text = claim_key(key, self.source)
        got = self.store.claim(text, self.worker_id, self.lease_s)
        if got is not Claim.TAKEN:
            return got
        stop = threading.Event()
        thread = threading.Thread(target=self._heartbeat, args=(text, stop), daemon=True,
                                  name=f"sweeper-heartbeat-{self.worker_id}")
        thread.start()
        self._beats[text] = (stop, thread)
        fault("after-claim")
        return got

    def keep(self, key: tuple[str, ...], record: TrialRecord) -> TrialRecord | None:
        """Record ``record`` through the claim (numbered by the store); None where the claim
        was lost (this worker stalled past its lease and another took the config)."""
        text = claim_key(key, self.source)
        beat = self._beats.pop(text, None)
        if beat is not None:            # its heartbeat ends first
            beat[0].set()
            beat[1].join()
        return self.store.record_claimed(text, self.worker_id, record)

    def _heartbeat(self, key: str, stop: threading.Event) -> None:
        """Renew the claim of ``key`` until ``stop``, or until it is lost.  A database that
        fails a renewal (down, or past a time limit) is tried again at the next beat: a
        thread has no one to tell, and the worker's next write says it in one line (the
        claim, if it lapses meanwhile, is another worker's to take)."""
        while not stop.wait(self.lease_s / BEATS_PER_LEASE):
            try:
                if not self.store.heartbeat(key, self.worker_id, self.lease_s):
                    return
            except StorageError:
                continue
