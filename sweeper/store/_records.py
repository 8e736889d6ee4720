"""What a study's journal keeps, one typed record a line: trials, the torch baselines, and
the drift and duty records (the finals' is :class:`sweeper.finals.FinalRecord`).  How a
record is checked, read and written back is in :mod:`sweeper.store._schema`."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from sweeper.devices._nvml import Window
from sweeper.kernels import SOURCE_HASH, Headline
from sweeper.measure import Duty, Flag, Stats, StopReason
from sweeper.space import Config, Problem
from sweeper.store._codec import ProblemKey
from sweeper.store._schema import (
    CONTROL,
    RETRY_FORMAT,
    Record,
    amounts_problem,
    samples_problem,
    show,
    stats_problem,
)
from sweeper.trial import TrialResult, TrialStatus

#: A trial's amounts that are each a finite number >= 0 where kept (rates, seconds,
#: joules, watts).
TRIAL_AMOUNTS = ("gbps", "gflops", "cold_s", "wall_s", "energy_j", "power_w", "saved_ms")


def key_of(choice: Mapping[str, Any]) -> tuple[str, ...]:
    """A choice's identity across runs, as the journal, the claims and the sweep key it:
    its sorted ``axis=label`` pairs."""
    return tuple(f"{k}={v}" for k, v in sorted(choice.items()))


@dataclass(frozen=True)
class GpuSlot:
    """The GPU that measured a trial: its index among the visible GPUs (``--gpus``) and
    its name.  Records written before sweeps ran on several GPUs have none."""

    index: int
    name: str

    def __str__(self) -> str:
        return f"GPU {self.index} ({self.name})"


@dataclass(kw_only=True)
class TrialRecord(TrialResult, Record):
    """Everything one trial produced: what measuring gave (the :class:`TrialResult`'s
    fields), its number, the sampler's choice, the config it resolved to (``None`` when it
    could not be resolved), when it started, how long it took, the GPU that measured it
    and the sampler that proposed it."""

    number: int
    choice: dict[str, str]
    config: Config | None = None
    started: str = ""
    wall_s: float = 0.0
    gpu: GpuSlot | None = None
    kind: str = "trial"
    #: the sampler that proposed it, as the space file names it (a study resumed with
    #: ``--force`` and another sampler holds trials of both); None in a study an older
    #: sweeper wrote, whose trials came from the sampler its study.json names
    sampler: str | None = None
    #: the hash of the kernel's source it was measured with
    #: (:meth:`~sweeper.kernels.Kernel.source_hash`: a study resumed with ``--force`` after
    #: an edit holds trials of both); None in a study an older sweeper wrote, whose trials
    #: were measured on the source it recorded before any such resume
    #: (:class:`sweeper.winners.Sources`)
    source_hash: str | None = None

    @classmethod
    def from_result(cls, number: int, choice: dict[str, str], config: Config | None,
                    result: TrialResult, started: str, wall_s: float) -> TrialRecord:
        """The record of trial ``number``: the sampler's ``choice``, the config it resolved
        to (``None`` if it did not), what measuring it gave, when it started and how long
        it took."""
        measured = {f.name: copy.copy(getattr(result, f.name)) for f in fields(TrialResult)}
        return cls(**measured, number=number, choice=dict(choice), config=config,
                   started=started, wall_s=wall_s)

    def written_format(self) -> int:
        """:data:`~sweeper.store._schema.RETRY_FORMAT` for a trial to be measured again
        (``retry``), which sweepers older than it set aside rather than keep as the
        config's crash; :data:`~sweeper.store._schema.FORMAT` for any other."""
        return RETRY_FORMAT if self.retry else super().written_format()

    @property
    def problem(self) -> ProblemKey | None:
        """The problem it was measured on; ``None`` for a choice that never resolved."""
        return ProblemKey.of(self.config) if self.config else None

    @property
    def suspicious(self) -> bool:
        """Still beyond the calibrated ceiling once re-timed: it can never win."""
        return any(f.kind is Flag.SUSPICIOUS for f in self.flags)

    @property
    def ok(self) -> bool:
        """Whether the trial was measured and verified (status ``ok``): only such trials
        have a median and can win."""
        return self.status is TrialStatus.OK

    @property
    def score(self) -> float:
        """What the search maximizes: GB/s, else GFLOP/s, else launches per second, of an
        ``ok`` trial (:attr:`samples_score`); 0.0 for any other.  It stays so for every
        kernel, whatever its headline: resumed studies keep their values, and within one
        problem any rate ranks configs as the median does."""
        return self.samples_score if self.ok else 0.0

    @property
    def samples_score(self) -> float:
        """:attr:`score`'s rate from whatever samples the trial took, whatever its status
        (an abandoned trial's, cut short, too); 0.0 without samples."""
        if not self.stats:
            return 0.0
        return self.gbps or self.gflops or 1e3 / self.stats.median

    def rate(self, headline: Headline, median_ms: float | None = None) -> float:
        """The rate reports lead with: GB/s, or TFLOP/s; at ``median_ms`` when given (the
        same work timed again, as in the interleaved final)."""
        rate = self.gflops / 1e3 if headline is Headline.TFLOPS else self.gbps
        if median_ms is None or not self.stats:
            return rate
        return rate * self.stats.median / median_ms

    def key(self) -> tuple[str, ...]:
        """The choice as sorted ``axis=label`` pairs: the identity of a config across runs,
        by which a resumed study knows what it has measured (:func:`key_of`)."""
        return key_of(self.choice)

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What readers rely on beyond the field types: labels a space could have given
        (no control character: every table, file and terminal shows them as they are),
        a source hash a kernel could have (which sources count: :class:`~sweeper.winners.Sources`),
        samples as many as their statistics count, an ``ok`` trial has a config and
        a median, and only a crashed one is measured again (``retry``); its number one
        that tables and Optuna keep (0 to 2**63 - 1)."""
        if not 0 <= data["number"] < 2**63:
            return f"number {show(data['number'])} is no trial's number (0 to 2**63 - 1)"
        for axis, label in data["choice"].items():
            if CONTROL.search(axis):
                return f"choice: axis {show(axis)} holds a control character"
            if CONTROL.search(label):
                return f"choice: {axis} {show(label)} holds a control character"
        source = data.get("source_hash")
        if source is not None and not re.fullmatch(SOURCE_HASH, source):
            return f"source_hash {show(source)} is not a kernel's source hash (16 hex digits)"
        if data.get("retry") and data["status"] != TrialStatus.CRASHED.value:
            return (f"retry is true on a trial with status {data['status']}; only a "
                    "crashed trial is measured again")
        problem = samples_problem(data) or amounts_problem(data, TRIAL_AMOUNTS)
        if problem is None and data["status"] == TrialStatus.OK.value:
            if data.get("config") is None:
                return "an ok trial without a config"
            return stats_problem(data.get("stats"), "an ok trial's stats")
        return problem


@dataclass
class BaselineRecord(Record):
    """The same work done by torch (``torch copy_``), timed the same way, per problem."""

    name: str
    dtype: str
    footprint: int
    samples_ms: list[float]
    stats: Stats
    gbps: float
    cache: str = "cold"
    stop_reason: StopReason | None = None
    #: the problem's dimensions (empty in a journal older than them)
    dims: dict[str, int] = field(default_factory=dict)
    kind: str = "baseline"

    @classmethod
    def from_samples(cls, name: str, problem: Problem, samples: list[float],
                     stats: Stats, gbps: float, cache: str = "cold",
                     stop_reason: StopReason | None = None) -> BaselineRecord:
        """The record of the torch baseline's samples on one problem."""
        return cls(name=name, dtype=problem.dtype, footprint=problem.footprint,
                   samples_ms=list(samples), stats=stats, gbps=gbps, cache=cache,
                   stop_reason=stop_reason, dims=dict(problem.dims))

    @property
    def problem(self) -> ProblemKey:
        """The problem it was measured on, as trials and finals key theirs."""
        return ProblemKey(self.dtype, self.footprint, self.cache, tuple(self.dims.items()))

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What readers rely on beyond the field types: a median, a min and a p95, and
        samples as many as their statistics count."""
        return stats_problem(data["stats"], "its stats", ("min", "p95")) or \
            samples_problem(data) or amounts_problem(data, ("gbps",))


@dataclass
class DriftRecord(Record):
    """The baseline config of a sampler that varies around one (one-at-a-time; trial
    ``number``) measured again at the end of the sweep, and how far its median moved from
    the first measurement, in %."""

    number: int
    samples_ms: list[float]
    stats: Stats
    drift_pct: float
    kind: str = "drift"

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What readers rely on beyond the field types: a median, and samples as many as
        their statistics count."""
        return stats_problem(data["stats"], "its stats") or samples_problem(data)

    @staticmethod
    def trial_refs(data: dict[str, Any]) -> list[int]:
        """The trials this record refers to (the baseline trial): it comes before it in the
        journal."""
        return [data["number"]]


@dataclass
class FirstMeasurement:
    """What the trial that showed a study power-bound measured before the switch."""

    median_ms: float | None = None
    clocks: Window | None = None


@dataclass
class DutyRecord(Record):
    """A study found power-bound, and why (``reason``; ``note`` as runs print it): from
    trial ``trial`` on, every config's samples follow ``duty`` (see
    :mod:`sweeper.measure._duty`).  Written before that trial is measured again."""

    trial: int
    reason: str
    note: str
    duty: Duty
    first_measurement: FirstMeasurement = field(default_factory=FirstMeasurement)
    kind: str = "duty"

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What readers rely on beyond the field types: a duty that precedes samples
        (``cool``, ``load`` or ``sustained``), never ``auto`` or ``off``."""
        if data["duty"]["kind"] not in ("cool", "load", "sustained"):
            return (f"duty: kind {show(data['duty']['kind'])} is not one of cool, load, "
                    "sustained")
        return None
