"""The claim step of a sweep shared by workers: between "config chosen" and "measured".

A worker (``sweeper worker``) asks the store for the config's claim before measuring it
(another worker holding it, or having recorded it, means: skip it), keeps the claim alive
from a heartbeat thread while it measures, and records the trial through the claim, so a
config is kept once however many workers share the study (see :mod:`sweeper.store._base`).
"""

from __future__ import annotations

import threading

from sweeper.store import TrialRecord
from sweeper.store._base import Storage, claim_key

#: The lease a worker's claims get unless told otherwise: long against one trial, short
#: against a dead worker's config waiting for another.
LEASE_S = 60.0


class Claims:
    """``worker_id``'s claims on ``store``, each renewed every third of ``lease_s`` while
    its trial runs (several at once when the sweep has a worker per GPU)."""

    def __init__(self, store: Storage, worker_id: str, lease_s: float = LEASE_S) -> None:
        self.store, self.worker_id, self.lease_s = store, worker_id, lease_s
        self._beats: dict[str, tuple[threading.Event, threading.Thread]] = {}

    def take(self, key: tuple[str, ...]) -> bool:
        """Claim ``key`` and keep it alive until :meth:`keep`; false: another worker holds
        it or recorded it, and this one skips it."""
        text = claim_key(key)
        if not self.store.claim(text, self.worker_id, self.lease_s):
            return False
        stop = threading.Event()
        thread = threading.Thread(target=self._heartbeat, args=(text, stop), daemon=True,
                                  name=f"sweeper-heartbeat-{self.worker_id}")
        thread.start()
        self._beats[text] = (stop, thread)
        return True

    def keep(self, key: tuple[str, ...], record: TrialRecord) -> TrialRecord | None:
        """Record ``record`` through the claim (numbered by the store); None where the claim
        was lost (this worker stalled past its lease and another took the config)."""
        text = claim_key(key)
        self._stop(text)
        return self.store.record_claimed(text, self.worker_id, record)

    def _heartbeat(self, key: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            if not self.store.heartbeat(key, self.worker_id, self.lease_s):
                return

    def _stop(self, key: str) -> None:
        beat = self._beats.pop(key, None)
        if beat is not None:
            stop, thread = beat
            stop.set()
            thread.join()
