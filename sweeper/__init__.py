"""sweeper: autotuning parameter sweeps for GPU kernels, with measurements you can trust.

The pipeline, one module or subpackage per role:
space (parse) -> samplers (propose) -> trial (verify, time) -> measure (timer, stats)
-> store (journal) -> report (tables, heatmaps) -> export (tuning file, :func:`tuned`).

Importing sweeper costs nothing: :func:`tuned`, :class:`TunedConfig` and :func:`kernel`
(a kernel in a few lines) are imported
when first used (PEP 562), and no torch, triton, optuna or pandas is imported until a
command needs them (``tests/test_layering.py`` keeps it so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeper.errors import SpaceError, SweeperError

if TYPE_CHECKING:
    from sweeper.export import TunedConfig, tuned
    from sweeper.kernels._short_form import kernel

__version__ = "0.1.0"

#: Public names imported on first use, and the module each lives in.
_LAZY = {"TunedConfig": "sweeper.export", "tuned": "sweeper.export",
         "kernel": "sweeper.kernels._short_form", "cuda": "sweeper.kernels._cuda_form"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'sweeper' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value             # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["SpaceError", "SweeperError", "TunedConfig", "__version__", "cuda", "kernel",
           "tuned"]
