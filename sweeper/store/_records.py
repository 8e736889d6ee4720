"""What a study keeps: one typed record per trial and per baseline, as JSON lines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sweeper.kernels import Headline
from sweeper.measure import Stats
from sweeper.space import Config
from sweeper.trial import TrialResult, TrialStatus


def config_dict(config: Config) -> dict[str, Any]:
    return {"grid": config.grid, "block": config.block, "num_warps": config.num_warps,
            "meta": dict(config.meta), "dtype": config.problem.dtype,
            "footprint": config.problem.footprint, "cache": config.cache}


@dataclass
class TrialRecord:
    """Everything one trial produced; ``config`` is ``None`` when it could not be resolved."""

    number: int
    choice: dict[str, str]
    status: TrialStatus
    reason: str | None = None
    config: dict[str, Any] | None = None
    cold_s: float | None = None
    samples_ms: list[float] = field(default_factory=list)
    stats: dict[str, float] | None = None
    gbps: float = 0.0
    gflops: float = 0.0
    started: str = ""
    wall_s: float = 0.0
    stop_reason: str = ""
    discarded: int = 0
    discard_reasons: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    energy_j: float | None = None
    power_w: float | None = None
    power_readings: int = 0
    energy_window_s: float = 0.0
    batch: int = 1
    graph: bool = False
    flags: list[str] = field(default_factory=list)
    saved_ms: float = 0.0
    clocks: dict[str, Any] | None = None
    duty: str = ""
    kind: str = "trial"

    @classmethod
    def from_result(cls, number: int, choice: dict[str, str], config: Config | None,
                    result: TrialResult, started: str, wall_s: float) -> TrialRecord:
        return cls(number=number, choice=dict(choice), status=result.status,
                   reason=result.reason, config=config_dict(config) if config else None,
                   cold_s=result.cold_s, samples_ms=list(result.samples_ms),
                   stats=result.stats.to_dict() if result.stats else None, gbps=result.gbps,
                   gflops=result.gflops, started=started, wall_s=wall_s,
                   stop_reason=result.stop_reason, discarded=result.discarded,
                   discard_reasons=list(result.discard_reasons), state=dict(result.state),
                   energy_j=result.energy_j, power_w=result.power_w,
                   power_readings=result.power_readings,
                   energy_window_s=result.energy_window_s,
                   batch=result.batch, graph=result.graph, flags=list(result.flags),
                   saved_ms=result.saved_ms, clocks=result.clocks, duty=result.duty)

    @property
    def suspicious(self) -> bool:
        return any(f.startswith("suspicious") for f in self.flags)

    @property
    def ok(self) -> bool:
        return self.status is TrialStatus.OK

    @property
    def score(self) -> float:
        """What the search maximizes: GB/s, else GFLOP/s, else launches per second.  It
        stays so for every kernel, whatever its headline: resumed studies keep their
        values, and within one problem any rate ranks configs as the median does."""
        if not self.ok or not self.stats:
            return 0.0
        return self.gbps or self.gflops or 1e3 / self.stats["median"]

    def rate(self, headline: Headline, median_ms: float | None = None) -> float:
        """The rate reports lead with: GB/s, or TFLOP/s; at ``median_ms`` when given (the
        same work timed again, as in the interleaved final)."""
        rate = self.gflops / 1e3 if headline is Headline.TFLOPS else self.gbps
        if median_ms is None or not self.stats:
            return rate
        return rate * self.stats["median"] / median_ms

    def key(self) -> tuple[str, ...]:
        return tuple(f"{k}={v}" for k, v in sorted(self.choice.items()))

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrialRecord:
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        data["status"] = TrialStatus(data["status"])
        return cls(**data)


@dataclass
class BaselineRecord:
    """The same work done by torch (``torch copy_``), timed the same way, per problem."""

    name: str
    dtype: str
    footprint: int
    samples_ms: list[float]
    stats: dict[str, float]
    gbps: float
    cache: str = "cold"
    stop_reason: str = ""
    kind: str = "baseline"

    @classmethod
    def from_samples(cls, name: str, dtype: str, footprint: int, samples: list[float],
                     stats: Stats, gbps: float, cache: str = "cold",
                     stop_reason: str = "") -> BaselineRecord:
        return cls(name=name, dtype=dtype, footprint=footprint, samples_ms=list(samples),
                   stats=stats.to_dict(), gbps=gbps, cache=cache, stop_reason=stop_reason)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BaselineRecord:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
