"""How a launch names what it wants, matched to what a tuning file holds: dtypes by any
usual spelling, GPUs by name then by architecture, kernels by name, problems by the
nearest tuned shape.

The nearest-shape rule (:mod:`sweeper.dispatch`, which also gives an untuned shape its
candidates), used by :func:`sweeper.tuned`, :func:`sweeper.tuned_kernel` and
``benchmarks/dispatch_regret.py`` alike: among the entries tuned over the same dimension
names, the one with the least sum over dimensions of ``|log2(tuned / asked)|`` (a 1-D
problem: of its footprint); ties go to the entry listed first.  Distances are in log
space because a kernel's best tiles and grid follow ratios of sizes, not differences.
A match is *far* when some dimension differs by more than :data:`FAR_RATIO` times: past
that the tiles per SM and the working set against L2 change enough that the tuned winner
is commonly no longer the best, and the caller is warned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sweeper.core._units import DTYPE_ALIASES, DTYPES, canonical_dtype, did_you_mean
from sweeper.dispatch import nearest_index
from sweeper.errors import SweeperError

if TYPE_CHECKING:
    from sweeper.tuning import TuningEntry

#: A tuned problem this many times larger or smaller than the asked one in any dimension
#: (or footprint) is a far match: the caller is warned.
FAR_RATIO = 4.0
#: What a replay study prefixes to the recorded GPU's name.
REPLAY_PREFIX = "replay: "
#: Compute capability by a GPU model named in a device name, for GPUs met by name only
#: (a tuning entry from before capabilities were recorded, or ``gpu=`` given by name).
#: Longer names first, so that "A100" is not read as "A10".
KNOWN_GPUS: dict[str, tuple[int, int]] = {
    "GB200": (10, 0), "B200": (10, 0), "B100": (10, 0), "GH200": (9, 0), "H200": (9, 0),
    "H100": (9, 0), "H800": (9, 0), "H20": (9, 0), "L40": (8, 9), "L4": (8, 9),
    "RTX 40": (8, 9), "A100": (8, 0), "A800": (8, 0), "A30": (8, 0), "A40": (8, 6),
    "A10": (8, 6), "RTX 30": (8, 6), "T4": (7, 5), "V100": (7, 0),
}


def dtype_name(dtype: object) -> str:
    """The torch name of ``dtype``: a name (``float32``), an alias (``fp32``), a torch
    dtype (``torch.float32``) or its text; anything else is refused listing the forms."""
    name = canonical_dtype(str(dtype))
    if name is None:
        raise SweeperError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPES)}, the "
                           f"aliases {', '.join(DTYPE_ALIASES)}, or a torch dtype"
                           f"{did_you_mean(str(dtype), [*DTYPES, *DTYPE_ALIASES])}")
    return name


def gpu_model(name: str) -> str:
    """The GPU a name stands for: a replayed study's ``replay: NVIDIA H200`` is the H200."""
    return name.strip().removeprefix(REPLAY_PREFIX)


def capability_of(name: str, recorded: str | None = None) -> tuple[int, int] | None:
    """The compute capability a GPU has: ``recorded`` (``"9.0"``) where a study measured it,
    else read from its model's name (:data:`KNOWN_GPUS`), else ``None``."""
    if recorded:
        major, _, minor = recorded.partition(".")
        if major.isdigit() and minor.isdigit():
            return int(major), int(minor)
    upper = gpu_model(name).upper()
    return next((cc for model, cc in KNOWN_GPUS.items() if model in upper), None)


@dataclass(frozen=True)
class GpuMatch:
    """The entries of the GPU chosen for a launch, and how it was chosen."""

    indices: list[int]
    by_architecture: bool        # False: by name


def match_gpu(entries: Sequence[TuningEntry], indices: Sequence[int], gpu: str,
              capability: tuple[int, int] | None) -> GpuMatch | None:
    """Of ``indices``, the entries tuned on ``gpu`` (by name, a replay of it included),
    else those of one GPU of the same architecture (compute capability major version,
    the newest-numbered first), else ``None``."""
    model = gpu_model(gpu)
    same = [i for i in indices if gpu_model(entries[i].gpu) == model]
    if same:
        return GpuMatch(same, False)
    capability = capability or capability_of(gpu)
    if capability is None:
        return None
    family = [i for i in indices if (capability_of(entries[i].gpu, entries[i].capability)
                                     or (-1, -1))[0] == capability[0]]
    if not family:
        return None
    chosen = max(gpu_model(entries[i].gpu) for i in family)
    picked = [i for i in family if gpu_model(entries[i].gpu) == chosen]
    return GpuMatch(picked, True)


@dataclass(frozen=True)
class Nearness:
    """How far a tuned problem is from the asked one: ``distance``, the sum of
    ``|log2(tuned / asked)|`` over dimensions (0: exact); ``far``, whether some dimension
    differs by more than :data:`FAR_RATIO` times."""

    distance: float
    far: bool


def nearest(problems: Sequence[Mapping[str, int]], asked: Mapping[str, int]
            ) -> tuple[int, Nearness]:
    """The position in ``problems`` of the one nearest to ``asked`` by the rule above, and
    how near; ``problems`` must not be empty and each must have ``asked``'s names
    (dimensions, or ``{"footprint": bytes}``)."""
    at = nearest_index(problems, asked)
    logs = [abs(math.log2(problems[at][d] / v)) for d, v in asked.items()]
    return at, Nearness(sum(logs), max(logs) > math.log2(FAR_RATIO))


__all__ = [
    "DTYPE_ALIASES",
    "FAR_RATIO",
    "KNOWN_GPUS",
    "GpuMatch",
    "Nearness",
    "capability_of",
    "dtype_name",
    "gpu_model",
    "match_gpu",
    "nearest",
]
