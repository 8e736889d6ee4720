"""Kernels a space can name: built-ins by name, user kernels by ``module:attr``."""

from __future__ import annotations

import importlib
import re
from typing import Any

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


_USER_KERNEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:"
                          r"[A-Za-z_][A-Za-z0-9_]*")


def unchecked_kernel(name: str, params: Any) -> type[Kernel]:
    """The built-in called ``name``, or, for a user kernel, a stand-in that imports nothing.

    Importing a user kernel runs its module's top-level code, which only ``run`` (and
    ``ab``) must do.  The stand-in declares as meta-parameters the names ``params`` (a
    space's ``params`` mapping) gives besides the launch and problem axes, without
    defaults or checks; the rest is the base :class:`Kernel`'s (its axis defaults, GB/s)."""
    if name in BUILTINS:
        return kernel_class(name)
    if _USER_KERNEL.fullmatch(name) is None:
        raise SweeperError(f"unknown kernel {name!r}; known: {', '.join(BUILTINS)}, or "
                           "package.module:attr for your own")
    from sweeper.space._model import LAUNCH_AXES, PROBLEM_AXES

    names: list[str] = []
    for key, value in (params.items() if isinstance(params, dict) else ()):
        zipped = value.get("zip") if isinstance(value, dict) else None
        names += list(zipped) if isinstance(zipped, dict) else [key]
    meta = {n: MetaParam(default=0, doc="not checked: the kernel was not imported")
            for n in names if isinstance(n, str) and n.isidentifier() and n.isascii() and
            n not in (*LAUNCH_AXES, *PROBLEM_AXES)}
    return type("UncheckedKernel", (Kernel,), {"name": name, "meta_params": meta})


def load_kernel(name: str) -> Kernel:
    """An instance of the kernel called ``name``."""
    return kernel_class(name)()


__all__ = ["BUILTINS", "Buffers", "Headline", "Kernel", "MetaParam", "fill_random",
           "kernel_class", "load_kernel", "unchecked_kernel"]
