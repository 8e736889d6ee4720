"""Wrap a Triton kernel for the device its tensors live on.

``triton.jit`` reads ``TRITON_INTERPRET`` when it wraps a function, so the
variable is set for that moment only: a process can then hold a compiled kernel
for the GPU and an interpreted one for CPU tensors side by side (the tests do).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sweeper._environ import environ_kept

#: Whether a launch now only compiles, launching nothing (``_precompile.compiling_for``
#: sets it); read through :func:`compiling`.
COMPILING = [False]


def compiling() -> bool:
    """Whether a launch now only compiles ahead (within ``compiling_for``)."""
    return COMPILING[0]


def jit(fn: Callable[..., Any], *, interpret: bool) -> Any:
    """``triton.jit(fn)``, interpreted for CPU tensors when ``interpret``, compiled for the
    GPU otherwise, whatever ``TRITON_INTERPRET`` says; the variable is restored
    afterwards."""
    import triton

    with environ_kept(TRITON_INTERPRET="1" if interpret else "0"):
        return triton.jit(fn)


@functools.cache
def jitted(fn: Callable[..., Any], interpret: bool) -> Any:
    """:func:`jit` of ``fn`` once per process for each mode: the kernels the built-ins
    launch."""
    return jit(fn, interpret=interpret)
