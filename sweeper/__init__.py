"""sweeper: autotuning parameter sweeps for GPU kernels, with measurements you can trust.

The pipeline, one module or subpackage per role:
space (parse) -> samplers (propose) -> trial (verify, time) -> measure (timer, stats)
-> store (journal) -> report (tables, heatmaps) -> export (tuning file, :func:`tuned`).
"""

from sweeper.errors import SpaceError, SweeperError
from sweeper.export import TunedConfig, tuned

__version__ = "0.1.0"

__all__ = ["SpaceError", "SweeperError", "TunedConfig", "__version__", "tuned"]
