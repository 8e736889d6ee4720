"""sweeper: autotuning parameter sweeps for GPU kernels, with measurements you can trust.

The pipeline, one module or subpackage per role:
space (parse) -> samplers (propose) -> sweep (the loop; a worker per GPU) -> trial
(verify, time) -> devices and measure (timer, stats) -> finals (the winner; consensus
across GPUs) -> store (journal or PostgreSQL) -> report (tables, pictures), interop (other
formats), export (tuning file) -> :func:`tuned` and :func:`tuned_kernel` at launch time.
Kernels, samplers and devices plug in by name (:mod:`sweeper.plugins`);
``docs/architecture.md`` maps the modules.

Importing sweeper costs nothing: :func:`tuned`, :class:`TunedConfig`, :func:`tuned_kernel`
(a ``@triton.jit`` function dispatched by shape), :func:`kernel` (a kernel in a few
lines), :func:`cuda` (a CUDA C kernel) and the Python API (:func:`run`,
:func:`load_study`, :class:`Study`) are imported when first used (PEP 562), and no torch,
triton, optuna or pandas is imported until a command needs them
(``tests/test_layering.py`` keeps it so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweeper._lazy import lazy
from sweeper._version import __version__
from sweeper.errors import SpaceError, SweeperError

if TYPE_CHECKING:
    from sweeper.export import TunedConfig, tuned
    from sweeper.kernels._cuda_form import cuda
    from sweeper.kernels._short_form import kernel
    from sweeper.launcher import tuned_kernel

#: Public names imported on first use, and the module each lives in.
_LAZY = {"TunedConfig": "sweeper.export", "tuned": "sweeper.export",
         "kernel": "sweeper.kernels._short_form", "cuda": "sweeper.kernels._cuda_form",
         "tuned_kernel": "sweeper.launcher", "run": "sweeper.api",
         "load_study": "sweeper.api", "Study": "sweeper.api"}


__getattr__ = lazy(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["SpaceError", "Study", "SweeperError", "TunedConfig", "__version__", "cuda",
           "kernel", "load_study", "run", "tuned", "tuned_kernel"]
