"""The search space: parsed once from YAML into the core's frozen dataclasses
(:mod:`sweeper.core`, whose names are all re-exported here), checked against the kernel
the registry finds."""

from sweeper.core import *  # noqa: F403  (the core's public names, listed in its __all__)
from sweeper.core import __all__ as _core_names
from sweeper.core._configs import Configs
from sweeper.space._files import Override
from sweeper.space._parser import (
    autotune_space,
    load_space,
    parse_space,
    recorded_kernel_options,
)

__all__ = [*_core_names, "Configs", "Override", "autotune_space", "load_space", "parse_space",
           "recorded_kernel_options"]
