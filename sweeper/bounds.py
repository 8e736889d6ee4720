"""The device's physical limits: what no correct launch can beat, calibrated or not.

A result faster than physics allows is not a fast kernel: it is a kernel that skipped
its work (a memoising pseudo-optimisation, a launch that did nothing) or a wrong count
of the bytes or FLOPs it claims.  Without ``sweeper calibrate`` the measured ceilings
are unknown, so the device's theoretical peaks serve as hard bounds:

- **DRAM**: memory clock x bus width x 2 (double data rate), from NVML (else torch).
- **SM load/store path**: SMs x max SM clock x ``SM_PATH_BYTES_PER_CLOCK``.
- **FLOP/s per dtype**: SMs x max SM clock x the dense FLOP per clock per SM of the
  architecture (``ARCHITECTURES``, keyed by compute capability).

The fewest seconds one launch can take is the largest of the times each bound imposes
(:meth:`Bounds.fastest`); a median below that by more than ``MARGIN`` is impossible.
A fact the device cannot give leaves its bound out, and the bound's absence is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeper.core import format_size

#: Event-timer resolution and clock jitter: a median may undercut a bound by this much.
MARGIN = 0.05
#: Bytes per clock one SM's load/store path can move.  Volta to Blackwell, an SM's
#: L1/shared-memory data path moves 128 B per clock (H100: 33 TB/s over 132 SMs at 1.98
#: GHz); every byte a kernel loads or stores passes through it (TMA copies included: they
#: land in or leave from shared memory).  256 lets loads and stores both run at that rate
#: at once, so no kernel's traffic, L2 hits included, can exceed it.
SM_PATH_BYTES_PER_CLOCK = 256
#: At most this many L2 sizes of a launch's traffic can avoid DRAM: lines resident when it
#: starts (reads served by the L2) and dirty lines still resident when it ends (writes the
#: L2 absorbed, written back after the timed sample), each at most the whole L2.
L2_SERVES = 2


@dataclass(frozen=True)
class Architecture:
    """Dense FLOP per clock per SM by operand kind, for one compute capability."""

    name: str
    #: "16-bit" (tensor, float16/bfloat16), "tf32" (tensor), "fp8" (tensor),
    #: "fp32" (CUDA cores: 2 x FMA lanes)
    flop_per_clock: Mapping[str, int]


ARCHITECTURES: dict[tuple[int, int], Architecture] = {
    (7, 0): Architecture("Volta", {"16-bit": 1024, "fp32": 128}),
    (7, 5): Architecture("Turing", {"16-bit": 1024, "fp32": 128}),
    (8, 0): Architecture("Ampere", {"16-bit": 2048, "tf32": 1024, "fp32": 128}),
    (8, 6): Architecture("Ampere", {"16-bit": 1024, "tf32": 512, "fp32": 256}),
    (8, 7): Architecture("Ampere", {"16-bit": 1024, "tf32": 512, "fp32": 256}),
    (8, 9): Architecture("Ada", {"16-bit": 1024, "tf32": 512, "fp8": 2048, "fp32": 256}),
    (9, 0): Architecture("Hopper", {"16-bit": 4096, "tf32": 2048, "fp8": 8192, "fp32": 256}),
    (10, 0): Architecture("Blackwell", {"16-bit": 8192, "tf32": 4096, "fp8": 16384,
                                        "fp32": 256}),
}
#: Which rates bound a dtype's FLOPs: the largest of them.  float32 includes TF32, the
#: precision Triton's ``tl.dot`` uses for it by default.
DTYPE_RATES: dict[str, tuple[str, ...]] = {
    "float16": ("16-bit",), "bfloat16": ("16-bit",), "float32": ("tf32", "fp32"),
    "float8_e4m3fn": ("fp8",), "float8_e5m2": ("fp8",),
}
RATE_NAMES = {"16-bit": "16-bit tensor", "tf32": "TF32 tensor", "fp8": "fp8 tensor",
              "fp32": "fp32 CUDA-core"}


@dataclass(frozen=True)
class Sourced:
    """A hardware fact and where it was read (``NVML``, ``torch``)."""

    value: float
    source: str

    @staticmethod
    def first(*candidates: tuple[str, float | None]) -> Sourced | None:
        """The first known (non-zero) value of ``(source, value)`` pairs, or ``None``."""
        for source, value in candidates:
            if value:
                return Sourced(float(value), source)
        return None


@dataclass(frozen=True)
class HardwareFacts:
    """What the bounds are derived from; ``None`` where the device cannot say."""

    gpu: str
    sms: int
    l2_bytes: int
    capability: tuple[int, int] | None = None
    mem_mhz: Sourced | None = None        # maximum memory clock
    bus_bits: Sourced | None = None       # memory bus width
    sm_mhz: Sourced | None = None         # maximum SM clock


@dataclass(frozen=True)
class Bound:
    """One limit: bytes or FLOPs per second, and how it was derived."""

    name: str           # "DRAM", "SM load/store", or a dtype
    per_s: float
    how: str            # "NVML: 3201 MHz memory clock x 6144-bit bus x 2 for DDR"
    source: str         # short, for one-line summaries: "NVML", "the Hopper table"
    is_flops: bool = False

    def rate_text(self) -> str:
        """The rate for a reader: TFLOP/s for a FLOP bound, GB/s for a byte bound."""
        return f"{_num(self.per_s / 1e12)} TFLOP/s" if self.is_flops else \
            f"{_num(self.per_s / 1e9)} GB/s"


@dataclass(frozen=True)
class Limit:
    """The fewest seconds a launch can take, and the bound that sets it."""

    seconds: float
    bound: Bound
    detail: str         # how the time follows from the bound


@dataclass(frozen=True)
class Bounds:
    """The physical limits of one device; each may be absent, and ``absent`` says why."""

    gpu: str
    l2_bytes: int = 0
    dram: Bound | None = None
    sm_path: Bound | None = None
    flops: Mapping[str, Bound] = field(default_factory=dict)     # dtype -> bound
    absent: tuple[str, ...] = ()

    @classmethod
    def none(cls, gpu: str, why: str) -> Bounds:
        """No bound at all on this device, and why (the interpreter, a replay)."""
        return cls(gpu=gpu, absent=(why,))

    def all(self) -> list[Bound]:
        """Every bound the device has, the byte bounds first."""
        return [b for b in (self.dram, self.sm_path) if b] + list(self.flops.values())

    def fastest(self, nbytes: int, flops: int, dtype: str) -> Limit | None:
        """The fewest seconds one launch moving ``nbytes`` and doing ``flops`` on ``dtype``
        can take: the largest time any bound imposes (``None`` when none applies)."""
        limits = []
        if self.dram and nbytes:
            served = min(nbytes, L2_SERVES * self.l2_bytes)
            limits.append(Limit((nbytes - served) / self.dram.per_s, self.dram, (
                f"moving {format_size(nbytes)}, at most {format_size(served)} of it from the "
                f"{format_size(self.l2_bytes)} L2,")))
        if self.sm_path and nbytes:
            limits.append(Limit(nbytes / self.sm_path.per_s, self.sm_path,
                                f"moving {format_size(nbytes)}"))
        if dtype in self.flops and flops:
            limits.append(Limit(flops / self.flops[dtype].per_s, self.flops[dtype],
                                f"doing {flops:.4g} FLOP"))
        best = max(limits, key=lambda lim: lim.seconds, default=None)
        return best if best is not None and best.seconds > 0 else None

    def beyond(self, nbytes: int, flops: int, dtype: str, median_s: float) -> str | None:
        """Why a launch with this median is impossible, or ``None`` if physics allows it."""
        limit = self.fastest(nbytes, flops, dtype)
        if limit is None or median_s * (1 + MARGIN) >= limit.seconds:
            return None
        bound = limit.bound
        rate = f"{flops / median_s / 1e12:.4g} TFLOP/s" if bound.is_flops else \
            f"{nbytes / median_s / 1e9:.4g} GB/s"
        what = f"{bound.name} FLOP bound" if bound.is_flops else f"{bound.name} bound"
        # the trial's own numbers in parentheses: reports group reasons without them
        return (f"faster than physics allows ({rate}, median {median_s * 1e3:.4g} ms; "
                f"{limit.detail} takes at least {limit.seconds * 1e3:.4g} ms): beyond the "
                f"{self.gpu}'s {what} of {bound.rate_text()}, from {bound.how}")

    def summary(self, dtypes: Sequence[str] = ()) -> str:
        """One line: the byte bounds, the FLOP bounds of ``dtypes``, their sources."""
        shown = [b for b in (self.dram, self.sm_path) if b] + \
            [self.flops[d] for d in dtypes if d in self.flops]
        if not shown:
            return f"none ({'; '.join(self.absent) or 'no facts'})"
        sources = " and ".join(dict.fromkeys(b.source for b in shown))
        return ", ".join(f"{b.name} {b.rate_text()}" for b in shown) + f" (from {sources})"

    def to_json(self) -> dict[str, Any]:
        """The bounds as a study's journal keeps them, with the margin they were applied
        with, so a report shows the limits the study was checked against."""
        def one(b: Bound) -> dict[str, Any]:
            return {"per_s": b.per_s, "how": b.how, "source": b.source}
        return {"gpu": self.gpu, "l2_bytes": self.l2_bytes, "margin": MARGIN,
                "dram": one(self.dram) if self.dram else None,
                "sm_path": one(self.sm_path) if self.sm_path else None,
                "flops": {d: one(b) for d, b in self.flops.items()},
                "absent": list(self.absent)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bounds:
        """The bounds :meth:`to_json` wrote, names and kinds restored from the keys."""
        def one(name: str, d: Mapping[str, Any], is_flops: bool = False) -> Bound:
            return Bound(name, d["per_s"], d["how"], d["source"], is_flops)
        dram, path = data.get("dram"), data.get("sm_path")
        return cls(gpu=data["gpu"], l2_bytes=data.get("l2_bytes", 0),
                   dram=one("DRAM", dram) if dram else None,
                   sm_path=one("SM load/store", path) if path else None,
                   flops={k: one(k, v, True) for k, v in data.get("flops", {}).items()},
                   absent=tuple(data.get("absent", ())))


def derive_bounds(hw: HardwareFacts) -> Bounds:
    """The bounds ``hw`` supports; each fact missing leaves its bound out, with why."""
    absent: list[str] = []
    dram = None
    if hw.mem_mhz and hw.bus_bits:
        mem, bus = hw.mem_mhz, hw.bus_bits
        where = f"{mem.source}: " if mem.source == bus.source else \
            f"{mem.source} memory clock, {bus.source} bus width: "
        dram = Bound("DRAM", mem.value * 1e6 * bus.value / 8 * 2,
                     f"{where}{mem.value:.0f} MHz memory clock x {bus.value:.0f}-bit bus x 2 "
                     "for DDR", mem.source)
    else:
        unknown = [n for n, v in (("memory clock", hw.mem_mhz), ("bus width", hw.bus_bits))
                   if not v]
        absent.append(f"DRAM: the {' and '.join(unknown)} cannot be read")
    arch = ARCHITECTURES.get(hw.capability) if hw.capability else None
    cc = ".".join(map(str, hw.capability)) if hw.capability else "unknown"
    if arch is None:
        listed = ", ".join(f"{a.name} {'.'.join(map(str, c))}" for c, a in ARCHITECTURES.items())
        absent.append(f"SM load/store and FLOP/s: compute capability {cc} is not in the "
                      f"architecture table (known: {listed})")
    elif not hw.sm_mhz:
        absent.append("SM load/store and FLOP/s: the maximum SM clock cannot be read")
    if arch is None or not hw.sm_mhz:
        return Bounds(hw.gpu, hw.l2_bytes, dram, absent=tuple(absent))
    sm = hw.sm_mhz
    per_sm = f"{hw.sms} SMs x {sm.value:.0f} MHz max SM clock from {sm.source}"
    path = Bound("SM load/store", hw.sms * sm.value * 1e6 * SM_PATH_BYTES_PER_CLOCK,
                 f"{per_sm} x {SM_PATH_BYTES_PER_CLOCK} B/clock/SM", sm.source)
    table = f"the {arch.name} table"
    flops = {}
    for dtype, kinds in DTYPE_RATES.items():
        known = [(arch.flop_per_clock[k], k) for k in kinds if k in arch.flop_per_clock]
        if not known:
            continue
        rate, kind = max(known)
        flops[dtype] = Bound(dtype, hw.sms * sm.value * 1e6 * rate,
                             f"{per_sm} x {rate} FLOP/clock/SM: {RATE_NAMES[kind]}, dense, "
                             f"{arch.name}, compute capability {cc}", table, is_flops=True)
    missing = [d for d in DTYPE_RATES if d not in flops]
    absent.append(f"FLOP/s of {', '.join([*missing, 'float64', 'integers'])}: no rate in "
                  f"{table}")
    return Bounds(hw.gpu, hw.l2_bytes, dram, path, flops, tuple(absent))


def _num(value: float) -> str:
    return f"{value:.0f}" if value >= 1000 else f"{value:.4g}"
