"""A replayed trial: the result a replay device recorded for a config; nothing is launched.

The table's samples become the trial's, summarized as a measured trial's are; a config
the table lacks is ``missing``, and one it records as failed keeps that status and, where
the table gives it, the reason.
"""

from __future__ import annotations

from sweeper.devices import Device
from sweeper.kernels import Kernel
from sweeper.measure import Stop, StopReason, summarize, throughput
from sweeper.space import Config
from sweeper.study import Choice
from sweeper.trial import TrialResult, TrialStatus


def replayed(device: Device, kernel: Kernel, choice: Choice, config: Config) -> TrialResult:
    """``choice``'s recorded result on ``device`` (which ``replays``)."""
    row = device.lookup(choice, kernel.meta_params)  # type: ignore[attr-defined]
    if row is None:
        return TrialResult(TrialStatus.MISSING,
                           f"not in the replay table {device.path}")  # type: ignore
    if row.get("status", "ok") != "ok":
        why, said = row.get("reason") or "", "recorded as failed"
        return TrialResult(TrialStatus(row["status"]), why if why.startswith(said)
                           else f"{said}: {why}" if why else said)
    samples = [float(x) for x in (row.get("samples_ms") or "").split()] or \
        [float(row["median_ms"])]
    stats = summarize(samples)
    seconds = stats.median * 1e-3
    return TrialResult(
        TrialStatus.OK, samples_ms=samples, stats=stats,
        stop_reason=StopReason(Stop.REPLAYED, "replayed"),
        gbps=throughput(kernel.bytes_moved(config.problem), seconds) / 1e9,
        gflops=throughput(kernel.flops(config.problem), seconds) / 1e9,
        working_set=int(kernel.working_set(config.problem)))
