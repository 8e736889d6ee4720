"""Names a package imports on first use (PEP 562), so that importing the package costs
only what it needs now (``tests/test_layering.py`` keeps ``import sweeper`` free of
torch, triton, optuna and pandas)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name ``homes`` maps to a module
    (``.name``: one of the package's) imported from there when first asked for and kept in
    the package; an ``AttributeError`` for any other name."""
    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name], package), name)
        setattr(sys.modules[package], name, value)      # looked up once
        return value
    return __getattr__
