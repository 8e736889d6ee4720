"""Kernels a space can name: built-ins by name, user kernels by ``module:attr``."""

from __future__ import annotations

import importlib

from sweeper.errors import SweeperError
from sweeper.kernels._base import Buffers, Headline, Kernel, MetaParam, fill_random

#: Built-in kernels, loaded only when named.
BUILTINS: dict[str, str] = {
    "copy": "sweeper.kernels.copy:CopyKernel",
    "add": "sweeper.kernels.add:AddKernel",
    "matmul": "sweeper.kernels.matmul:MatmulKernel",
}


def kernel_class(name: str) -> type[Kernel]:
    """The :class:`Kernel` subclass for a built-in name or a ``module:attr`` path."""
    target = BUILTINS.get(name, name)
    if ":" not in target:
        raise SweeperError(f"unknown kernel {name!r}; known: {', '.join(BUILTINS)}, "
                           "or package.module:attr for your own")
    module_name, _, attr = target.partition(":")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise SweeperError(f"cannot load kernel {name!r}: {err}") from None
    cls = obj if isinstance(obj, type) else type(obj)
    if not issubclass(cls, Kernel):
        raise SweeperError(f"{name!r} is not a sweeper.kernels.Kernel subclass or instance")
    return cls


def load_kernel(name: str) -> Kernel:
    """An instance of the kernel called ``name``."""
    return kernel_class(name)()


__all__ = ["BUILTINS", "Buffers", "Headline", "Kernel", "MetaParam", "fill_random",
           "kernel_class", "load_kernel"]
