"""Measured ceilings of this GPU: copy bandwidth per footprint, matmul FLOP/s per dtype.

``sweeper calibrate`` measures them once and caches them per GPU (name, UUID,
driver).  Reports then show every trial as a % of the ceiling at its footprint and
its place on the roofline; a trial faster than the ceiling allows is suspect.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sweeper.fsio import atomic_write

COPY_FOOTPRINTS = (*(1 << k for k in range(20, 31)), 4 << 30)       # 1 MiB .. 1 GiB, 4 GiB
MATMUL_DTYPES = ("float32", "tfloat32", "float16", "bfloat16")
MATMUL_SIZE = 8192
SUSPICIOUS = 1.05          # faster than 105 % of the ceiling at that footprint is suspect
#: The matmul ceiling a Triton ``tl.dot`` on a dtype is held against: fp32 operands go
#: through TF32 tensor cores by default (``input_precision="tf32"``), as torch's don't.
DOT_CEILING = {"float32": "tfloat32"}


@dataclass
class Ceilings:
    """What ``sweeper calibrate`` measured on one GPU (name, UUID and driver identify it: a
    new driver can move a ceiling), and when; reports hold each trial against these rather
    than against a datasheet."""

    gpu: str
    uuid: str
    driver: str
    measured: str = ""
    launch_floor_us: float = 0.0
    #: footprint (bytes per buffer) -> {"cold": GB/s, "warm": GB/s}, torch copy_, read + write
    copy: dict[int, dict[str, float]] = field(default_factory=dict)
    #: dtype -> TFLOP/s of torch.matmul at MATMUL_SIZE³ on random data
    matmul: dict[str, float] = field(default_factory=dict)

    def bandwidth(self, footprint: int, cache: str = "cold") -> float:
        """GB/s at ``footprint``, interpolated in log2(footprint), clamped at the ends."""
        if not self.copy:
            raise ValueError("no copy ceilings measured")
        import numpy as np

        footprints = sorted(self.copy)
        return float(np.interp(math.log2(max(footprint, 1)), np.log2(footprints),
                               [self.copy[fp][cache] for fp in footprints]))

    def dram_bandwidth(self) -> float:
        """The cold copy bandwidth at the largest footprint: device memory, not L2."""
        return self.bandwidth(max(self.copy), "cold")

    def matmul_peak(self, dtype: str) -> tuple[str, float] | None:
        """(which ceiling, TFLOP/s) a matmul on ``dtype`` is held against; ``None`` when
        that ceiling was not measured."""
        name = DOT_CEILING.get(dtype, dtype)
        return (name, self.matmul[name]) if self.matmul.get(name) else None

    def roofline(self, flops: float, nbytes: float, dtype: str) -> tuple[float, float, str]:
        """(arithmetic intensity FLOP/B, attainable GFLOP/s, "memory"|"compute") for work
        of ``flops`` over ``nbytes``; the compute roof is ``dtype``'s matmul rate."""
        ai = flops / nbytes if nbytes else math.inf
        peak = self.matmul.get(dtype, max(self.matmul.values(), default=0.0)) * 1e3
        memory = ai * self.dram_bandwidth()
        return ai, min(peak, memory), "memory" if memory < peak else "compute"

    def to_json(self) -> dict[str, Any]:
        """The JSON cached per GPU; footprints become strings, as JSON keys must be."""
        return {**asdict(self), "copy": {str(k): v for k, v in self.copy.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ceilings:
        """The ceilings :meth:`to_json` wrote, footprints back to integers."""
        return cls(**{**data, "copy": {int(k): v for k, v in data.get("copy", {}).items()}})


def cache_root() -> Path:
    """Sweeper's cache folder: ``$SWEEPER_CACHE``, else ``$XDG_CACHE_HOME/sweeper`` or
    ``~/.cache/sweeper``."""
    return Path(os.environ.get("SWEEPER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sweeper"))


def cache_path(gpu: str, uuid: str, driver: str) -> Path:
    """The cache file of one GPU and driver in ``ceilings/`` of :func:`cache_root`, named
    so that each calibration has its own file."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{gpu}-{uuid}-{driver}").strip("-")
    return cache_root() / "ceilings" / f"{slug}.json"


def load(gpu: str, uuid: str, driver: str) -> Ceilings | None:
    """The cached ceilings of this GPU and driver, or ``None`` when it has not been
    calibrated."""
    path = cache_path(gpu, uuid, driver)
    return Ceilings.from_json(json.loads(path.read_text())) if path.exists() else None


def save(ceilings: Ceilings) -> Path:
    """Write ``ceilings`` to its cache file atomically (a crash leaves the previous file
    whole) and return the path."""
    path = cache_path(ceilings.gpu, ceilings.uuid, ceilings.driver)
    return atomic_write(path, json.dumps(ceilings.to_json(), indent=2) + "\n")


def measure(device: Any, *, progress: Callable[[str], None] = lambda _: None) -> Ceilings:
    """Measure the ceilings (:data:`COPY_FOOTPRINTS`, :data:`MATMUL_DTYPES`) on a CUDA
    ``device`` with its own timer."""
    import torch

    from sweeper.measure import StopRule, summarize

    env = device.environment()
    out = Ceilings(gpu=env["gpu"], uuid=env.get("gpu_uuid", ""), driver=env.get("driver", ""),
                   measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    out.launch_floor_us = device.launch_floor_ms() * 1e3
    rule = StopRule(kind="ci", target=0.005, min_samples=20, max_time_s=2.0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for fp in COPY_FOOTPRINTS:
        src = torch.empty(fp // 4, dtype=torch.float32, device="cuda").uniform_(generator=gen)
        dst = torch.empty_like(src)
        row = {}
        for cache in ("cold", "warm"):
            t = device.measure(lambda dst=dst, src=src: dst.copy_(src), warmup=10, rule=rule,
                               flush=cache == "cold").timing
            row[cache] = 2 * fp / (summarize(t.samples).median * 1e-3) / 1e9
        out.copy[fp] = row
        progress(f"copy {fp >> 20} MiB: cold {row['cold']:.0f} GB/s, warm {row['warm']:.0f} GB/s")
        del src, dst
    n = MATMUL_SIZE
    for name in MATMUL_DTYPES:
        dtype = torch.float32 if name in ("float32", "tfloat32") else getattr(torch, name)
        a = torch.randn(n, n, device="cuda", dtype=dtype, generator=gen)
        b = torch.randn(n, n, device="cuda", dtype=dtype, generator=gen)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = name == "tfloat32"
        try:
            t = device.measure(lambda a=a, b=b: torch.matmul(a, b), warmup=5,
                               rule=StopRule(kind="fixed", repeat=20), flush=False).timing
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        out.matmul[name] = 2 * n ** 3 / (summarize(t.samples).median * 1e-3) / 1e12
        progress(f"matmul {name} {n}³: {out.matmul[name]:.1f} TFLOP/s")
        del a, b
    return out
