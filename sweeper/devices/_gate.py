"""A gate on the CUDA stream: nvbench's blocking kernel, so no host time is ever timed.

A timed sample is a start event, the launch and an end event, queued by the host.  If the
GPU reaches the start event before the host has queued the launch, the host's launch path
(a Python wrapper, an autotuner's hooks, argument binding: 20 to over 100 µs) is timed as
kernel time.  A fixed spin before each sample hides a launch path shorter than the spin
only, and not the first samples after a synchronize, when the GPU has no backlog: on an
H100 a 15 µs reduction with a zeroing hook read 27 µs at its median, its first samples
409, 104 and 62 µs, under a 50 µs spin.

The gate closes the stream with a one-program kernel that waits for a counter to reach a
value the host sets, from a second stream, once it has queued a group of samples.  The
group's samples then run back to back from the queue, however long the host took to queue
them.  Groups are small (:data:`sweeper.measure._timer.GROUP` samples), so the GPU waits
only for the first group's queueing, and later ones usually find their release there.

A launch that synchronizes (``.item()``, ``torch.cuda.synchronize()``) would wait for a
GPU that waits for it: :meth:`Gate.passes` finds such a launch first, and the timer holds
the GPU with the spin for it instead.  The wait gives up after about :data:`SPINS` polls
(a second or more) and says so (:meth:`Gate.gave_up`), so a host stalled that long costs
a retaken chunk, never a hang.
"""

from __future__ import annotations

from typing import Any

import torch
import triton.language as tl

from sweeper.kernels._jit import jitted

#: Polls of the counter before the wait gives up (each a round trip to the L2).
SPINS = 4_000_000

#: Spin cycles before the probe's launch (about 0.5 ms at 2 GHz): a launch that returns
#: while they still run did not wait for the GPU (one whose host path alone takes longer
#: is taken for one that did, and is timed with the spin as before).
PROBE_CYCLES = 1_000_000


def _wait(counter, target, spins):  # type: ignore[no-untyped-def]
    polls = 0
    while (tl.atomic_add(counter, 0) < target) & (polls < spins):
        polls += 1
    if polls >= spins:
        tl.atomic_add(counter + 1, 1)


class Gate:
    """The gate of one CUDA device's stream: :meth:`close` queues the wait, :meth:`open`
    releases it from a second stream (see the module's docstring)."""

    def __init__(self) -> None:
        self._kernel = jitted(_wait, False)    # compiled for the GPU, once per process
        # [released, waits that gave up]: a release only ever raises the first
        self._counter = torch.zeros(2, dtype=torch.int64, device="cuda")
        self._side = torch.cuda.Stream()
        self._closed = 0
        torch.cuda.synchronize()

    def close(self) -> None:
        """Queue the wait for the next release on the current stream."""
        self._closed += 1
        self._kernel[(1,)](self._counter, self._closed, SPINS, num_warps=1)

    def open(self) -> None:
        """Release the last wait queued, from the second stream (queued now, it runs
        beside the waiting kernel)."""
        with torch.cuda.stream(self._side):
            self._counter[:1].fill_(self._closed)

    def gave_up(self) -> bool:
        """Whether a wait gave up since the last call (read after a synchronize)."""
        if not int(self._counter[1].item()):
            return False
        self._counter[1].zero_()
        return True

    def passes(self, launch: Any) -> bool:
        """Whether ``launch`` can be queued behind the gate: it returns while the GPU is
        still busy, so it never waits for the GPU.  Runs it once."""
        torch.cuda.synchronize()
        torch.cuda._sleep(PROBE_CYCLES)
        launch()
        queued = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        return queued


def gate() -> Gate | None:
    """The current device's gate, made and tried once per process and device; ``None``
    where that failed (Triton could not compile the wait, or it never saw its release):
    the timer then spins before each sample instead."""
    index = torch.cuda.current_device()
    if index not in _GATES:
        made: Gate | None = None
        try:
            made = Gate()
            made.close()
            made.open()
            torch.cuda.synchronize()
            if made.gave_up():
                made = None
        except Exception:          # noqa: BLE001 - any failure: no gate, the spin stays
            made = None
        _GATES[index] = made
    return _GATES[index]


_GATES: dict[int, Gate | None] = {}
