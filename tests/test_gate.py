"""The timer's gate (nvbench's blocking kernel): no host time in a sample.

On the CPU the order in which the timer queues its work is checked with stand-ins for
CUDA's events; on a GPU (marked ``gpu``) a launch whose host path alone takes 300 µs is
timed as the ~5 µs kernel it runs, a launch that synchronizes is found and timed with the
spin as before, and a gate whose wait gives up is seen."""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from sweeper.measure import _timer


class _Event:
    def __init__(self, log: list[str], enable_timing: bool) -> None:
        self.log = log

    def record(self) -> None:
        self.log.append("start" if self.log[-1] != "launch" else "end")

    def elapsed_time(self, other: _Event) -> float:
        return 1.0


class _Gate:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def close(self) -> None:
        self.log.append("close")

    def open(self) -> None:
        self.log.append("open")


def _queued(monkeypatch, repeat: int, gated: bool) -> list[str]:
    log: list[str] = []
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing: _Event(log, enable_timing))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    samples = _timer.time_cuda(lambda: log.append("launch"), warmup=2, repeat=repeat,
                               flush=lambda: log.append("flush"),
                               hold=lambda: log.append("hold"),
                               gate=_Gate(log) if gated else None)
    assert samples == [1.0] * repeat
    return log


def test_samples_are_queued_in_groups_each_behind_the_closed_gate(monkeypatch):
    log = _queued(monkeypatch, repeat=_timer.GROUP + 3, gated=True)
    sample = ["flush", "start", "launch", "end"]
    assert log == (["launch", "launch", "sync", "close"] + sample * _timer.GROUP
                   + ["open", "close"] + sample * 3 + ["open", "sync"])


def test_without_a_gate_a_spin_holds_the_gpu_before_each_sample(monkeypatch):
    log = _queued(monkeypatch, repeat=2, gated=False)
    assert log == ["launch", "launch", "sync"] + ["flush", "hold", "start", "launch",
                                                  "end"] * 2 + ["sync"]


def _spin_host(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.gpu
def test_a_slow_host_path_is_not_timed_behind_the_gate():
    """A launch whose host path takes 300 µs before a ~5 µs kernel: behind the gate its
    samples are the kernel's; with the 50 µs spin alone (the timer without a gate) they
    include most of the host's 300 µs."""
    from sweeper.devices import open_device
    from sweeper.devices._gate import gate

    device = open_device("cuda")
    x = torch.zeros(1 << 16, device="cuda")

    def launch() -> None:
        _spin_host(300e-6)
        x.add_(1.0)

    assert gate() is not None
    gated = statistics.median(device.time(launch, warmup=3, repeat=40, flush=False))
    spun = statistics.median(_timer.time_cuda(launch, warmup=3, repeat=40,
                                              hold=device._hold))
    assert gated < 0.05 and spun > 0.2, (gated, spun)


@pytest.mark.gpu
def test_a_launch_that_synchronizes_is_timed_with_the_spin_and_never_hangs():
    from sweeper.devices import open_device
    from sweeper.devices._gate import gate

    device = open_device("cuda")
    x = torch.zeros(1 << 16, device="cuda")

    def launch() -> None:
        x.add_(1.0)
        torch.cuda.synchronize()

    found = gate()
    assert found is not None and not found.passes(launch)
    t0 = time.perf_counter()
    samples = device.time(launch, warmup=2, repeat=20, flush=True)
    assert time.perf_counter() - t0 < 1.0 and len(samples) == 20


@pytest.mark.gpu
def test_a_wait_that_gives_up_is_seen(monkeypatch):
    from sweeper.devices import _gate

    found = _gate.gate()
    assert found is not None
    monkeypatch.setattr(_gate, "SPINS", 1000)
    found.close()                     # never opened: gives up after 1000 polls
    torch.cuda.synchronize()
    assert found.gave_up() and not found.gave_up()
    found.open()                      # the counter catches up with the closings
    torch.cuda.synchronize()
