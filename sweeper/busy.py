"""How busy a sweep kept its GPUs: the share of its wall time during which they ran the
kernel's timed and warm-up launches, and where the rest went.

Each trial records its host seconds by what they were spent on (``TrialRecord.seconds``:
randomizing the inputs, the first launch with its compile, verifying, the power
schedule's cool-downs or loads, warming up, sampling); the kernel's own GPU time is read
from what it measured (each timed sample's per-launch time times the launches in it, and
each warm-up launch at the median).  What the workers' trials do not account for (the
coordinator asking and journaling, workers starting or waiting, the finals' own
cool-downs, allocating buffers and timing the torch baseline) is the remainder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweeper.core import warmup_turns

if TYPE_CHECKING:
    from sweeper.finals import FinalRecord
    from sweeper.store import TrialRecord

#: What the rest of the time went to, in the order shown.
PARTS = ("compile", "verify", "randomize", "cool-down", "load", "sampling overhead",
         "finals overhead", "allocate and baseline", "coordinator and idle")
#: Decimals of a second :meth:`Busy.to_json` keeps.
KEPT = 6


@dataclass(frozen=True)
class Busy:
    """A sweep's GPU time: ``kernel_s`` of its launches (``timed_s`` sampled, ``warmup_s``
    warming up, ``finals_s`` re-measured in the finals) against ``wall_s`` of wall time on
    each of ``gpus`` GPUs, and the seconds of the rest by what they went to (``parts``,
    keys of :data:`PARTS`)."""

    wall_s: float
    gpus: int
    timed_s: float
    warmup_s: float
    finals_s: float
    parts: dict[str, float] = field(default_factory=dict)
    #: what ran the launches: ``gpu``, or a device without one (``interpret``)
    label: str = "gpu"
    #: seconds of ``wall_s`` the finals took: under a power schedule they are mostly the
    #: cool-downs that put every finalist in the same state, so the search's own share
    #: (:attr:`trials_share`) is said apart
    finals_wall_s: float = 0.0
    #: the shares as ``study.json`` kept them (:meth:`from_json`): said as the run said
    #: them, not recomputed from the kept seconds' rounding
    kept_shares: tuple[float, float] | None = None

    @property
    def kernel_s(self) -> float:
        """Seconds the GPUs ran the kernel's timed and warm-up launches."""
        return self.timed_s + self.warmup_s + self.finals_s

    @property
    def share(self) -> float:
        """The share of the sweep's GPU time (wall x GPUs) spent on those launches, to four
        digits: the line printed and the figure kept are the same number."""
        if self.kept_shares is not None:
            return self.kept_shares[0]
        return round(self.kernel_s / (self.wall_s * self.gpus), 4) if self.wall_s > 0 else 0.0

    @property
    def trials_share(self) -> float:
        """The share of the sweep's GPU time without its finals spent on the trials' timed
        and warm-up launches, to four digits: how busy the search itself kept the GPUs."""
        if self.kept_shares is not None:
            return self.kept_shares[1]
        wall = (self.wall_s - self.finals_wall_s) * self.gpus
        return round((self.timed_s + self.warmup_s) / wall, 4) if wall > 0 else 0.0

    def line(self) -> str:
        """``gpu busy 23.4% of 10.2 s (...); the rest: compile 3.1 s, ...``, and the
        trials' own share where finals ran."""
        on = f" x {self.gpus} GPUs" if self.gpus > 1 else ""
        rest = ", ".join(f"{k} {v:.1f} s" for k, v in self.parts.items() if v >= 0.05)
        finals = f", finals {self.finals_s:.2f} s" if self.finals_s else ""
        alone = (f"; without the finals' {self.finals_wall_s:.1f} s "
                 f"{100 * self.trials_share:.1f}%") if self.finals_wall_s >= 0.05 else ""
        return (f"{self.label} busy {100 * self.share:.1f}% of {self.wall_s:.1f} s{on} (timed "
                f"launches {self.timed_s:.2f} s, warm-up {self.warmup_s:.2f} s{finals}){alone}"
                f"{f'; the rest: {rest}' if rest else ''}")

    @classmethod
    def from_json(cls, kept: dict[str, Any]) -> Busy:
        """The :class:`Busy` that :meth:`to_json` kept (``study.json``'s last run), so the
        report words it as the run's own line does: its parts in :data:`PARTS`' order
        (``study.json`` is written with its keys sorted)."""
        parts = dict(kept.get("parts", {}))
        ordered = {k: parts.pop(k) for k in PARTS if k in parts}
        return cls(wall_s=kept.get("wall_s", 0.0), gpus=kept.get("gpus", 1),
                   timed_s=kept.get("timed_s", 0.0), warmup_s=kept.get("warmup_s", 0.0),
                   finals_s=kept.get("finals_s", 0.0), parts={**ordered, **parts},
                   label=kept.get("label", "gpu"), finals_wall_s=kept.get("finals_wall_s", 0.0),
                   kept_shares=(kept.get("share", 0.0),
                                kept.get("trials_share", kept.get("share", 0.0))))

    def to_json(self) -> dict[str, Any]:
        """As ``study.json``'s last run and ``report.json`` keep it: seconds to the
        microsecond, so that the report's line, which says them to a hundredth or a tenth,
        rounds them once, as the run's line did (kept to the millisecond, 0.3554 s became
        0.355 s and read 0.35 where the run had said 0.36)."""
        return {"label": self.label, "share": self.share, "wall_s": round(self.wall_s, KEPT),
                "gpus": self.gpus, "timed_s": round(self.timed_s, KEPT),
                "warmup_s": round(self.warmup_s, KEPT), "finals_s": round(self.finals_s, KEPT),
                "finals_wall_s": round(self.finals_wall_s, KEPT),
                "trials_share": self.trials_share,
                "parts": {k: round(v, KEPT) for k, v in self.parts.items()}}


def busy(trials: Sequence[TrialRecord], finals: Sequence[FinalRecord], *, wall_s: float,
         finals_wall_s: float, gpus: int, warmup: int, warmup_time_s: float | None = None,
         repeated_s: float = 0.0, batch: int = 1,
         label: str = "gpu") -> Busy:
    """The :class:`Busy` of a sweep that measured ``trials`` (its own, not those resumed)
    and ran ``finals`` (``FinalRecord``s, ``finals_wall_s`` of its wall) in ``wall_s`` on
    ``gpus`` GPUs, each trial warmed up with ``warmup`` launches (two where those took
    ``warmup_time_s``: :func:`~sweeper.core.warmup_turns`); ``repeated_s``: the
    seconds its workers spent per problem on buffers and baselines; ``batch``: the
    launches in each of the finalists' samples (``measure.batch``: a sample is one
    launch's time, as a trial's, and a final's record keeps no batch of its own)."""
    timed = warm = 0.0
    parts = dict.fromkeys(PARTS, 0.0)
    for t in trials:
        seconds = t.seconds
        trial_timed = sum(t.samples_ms) * t.batch / 1e3
        trial_warm = warmup_turns(warmup, warmup_time_s, t.stats.median / 1e3) * \
            t.stats.median / 1e3 if t.stats and seconds.get("warmup") else 0.0
        timed, warm = timed + trial_timed, warm + trial_warm
        for what in ("compile", "verify", "randomize", "cool-down", "load"):
            parts[what] += seconds.get(what, 0.0)
        parts["sampling overhead"] += max(0.0, seconds.get("sample", 0.0) +
                                          seconds.get("warmup", 0.0) - trial_timed - trial_warm)
    in_finals = sum(sum(f.samples_ms) for final in finals for f in final.finalists) * \
        batch / 1e3
    parts["finals overhead"] = max(0.0, finals_wall_s * gpus - in_finals)
    parts["allocate and baseline"] = repeated_s
    accounted = timed + warm + in_finals + sum(parts.values())
    parts["coordinator and idle"] = max(0.0, wall_s * gpus - accounted)
    return Busy(wall_s=wall_s, gpus=gpus, timed_s=timed, warmup_s=warm, finals_s=in_finals,
                parts={k: v for k, v in parts.items() if v > 0}, label=label,
                finals_wall_s=finals_wall_s)
