"""Worker processes for the claim tests: they drive a store's claim API with a fake
measurement (no torch, no kernel), as ``sweeper worker`` on many hosts would."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

from sweeper.measure import summarize
from sweeper.space import Config, Problem
from sweeper.store._open import open_storage
from sweeper.store._records import TrialRecord
from sweeper.trial import TrialStatus


def fake_trial(key: str, worker_id: str) -> TrialRecord:
    """The trial a worker "measured" for ``key`` (its choice), naming the worker."""
    choice = dict(pair.split("=", 1) for pair in json.loads(key))
    median = 1.0 + int(choice["block"]) / 1000
    config = Config(Problem("float32", 1 << 20), grid=132, block=32 * (1 + int(choice["block"])),
                    meta={"BLOCK": 1024})
    return TrialRecord(number=0, choice=choice, status=TrialStatus.OK, config=config,
                       samples_ms=[median] * 3,
                       stats=summarize([median] * 3), gbps=1.0, reason=worker_id)


def keys(count: int) -> list[str]:
    """``count`` config keys."""
    return [json.dumps(["BLOCK=1024", f"block={b}", "grid=sms"]) for b in range(count)]


def drain(spec: str | None, root: str, worker_id: str, todo: list[str], lease_s: float,
          deadline_s: float = 60.0, start: Any = None) -> None:
    """Claim, "measure" and record keys until every key of ``todo`` is recorded by
    someone; a key another worker holds is tried again later (its holder may die).
    ``start``, a barrier, is waited on once the store is open, so that workers spawned
    one after another on a loaded machine begin together."""
    store = open_storage(spec, Path(root))
    store.share()
    if start is not None:
        start.wait(60)
    rng = random.Random(worker_id)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        recorded = {tuple(sorted(t.choice.items())) for t in store.records(warn=False)[0]}
        left = [k for k in todo if tuple(sorted(fake_trial(k, "").choice.items()))
                not in recorded]
        if not left:
            return
        rng.shuffle(left)
        for key in left:
            if store.claim(key, worker_id, lease_s):
                time.sleep(rng.uniform(0, 0.01))
                assert store.heartbeat(key, worker_id, lease_s)
                store.record_claimed(key, worker_id, fake_trial(key, worker_id))
        time.sleep(0.05)
    raise TimeoutError(f"{worker_id}: keys still unrecorded after {deadline_s} s")


def hold(spec: str | None, root: str, worker_id: str, key: str, lease_s: float,
         ready: str) -> None:
    """Claim ``key``, say so by creating the file ``ready``, and never finish (the test
    SIGKILLs this process mid-trial)."""
    store = open_storage(spec, Path(root))
    store.share()
    assert store.claim(key, worker_id, lease_s)
    assert store.heartbeat(key, worker_id, lease_s)
    Path(ready).write_text(str(os.getpid()))
    time.sleep(600)


def resume(spec: str | None, root: str, worker_id: str, times: int, start: Any) -> None:
    """Note ``times`` resumptions of the study, each named ``worker_id:i``, as as many
    processes resuming it one after another would; ``start`` (a barrier) lines up the
    processes the test runs at once."""
    store = open_storage(spec, Path(root))
    store.meta()                                   # connected and warm before the start
    start.wait()
    for i in range(times):
        store.note_resumed(f"{worker_id}:{i}", last_command=f"{worker_id} {i}")


def take(spec: str | None, root: str, ready: str) -> None:
    """Take the study as ``sweeper run`` does, say so by creating the file ``ready``, and
    hold it (the test SIGKILLs this process)."""
    store = open_storage(spec, Path(root))
    store.open_journal()
    Path(ready).write_text(str(os.getpid()))
    time.sleep(600)
