"""The built-in ``add`` kernel: ``c = a + b``, grid-stride like ``copy``.

Bytes moved: two footprints read and one written; one FLOP per element.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
import triton.language as tl

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, fill_poison, fill_random, mismatch, wide_offsets
from sweeper.kernels._declared import AddDeclaration
from sweeper.kernels._guess import streaming
from sweeper.kernels._jit import jit


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _add_body(a, b, c, n, BLOCK: tl.constexpr,  # type: ignore[no-untyped-def]
              WIDE: tl.constexpr):
    # offsets int32 unless WIDE (wide_offsets), as copy's
    lanes = tl.arange(0, BLOCK)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    if WIDE:
        pid, programs = pid.to(tl.int64), programs.to(tl.int64)
    start = pid * BLOCK
    while start < n:
        offsets = start + lanes
        mask = offsets < n
        x = tl.load(a + offsets, mask=mask)
        y = tl.load(b + offsets, mask=mask)
        tl.store(c + offsets, x + y, mask=mask)
        start += programs * BLOCK


@functools.cache
def add_kernel(interpret: bool = False) -> Any:
    """The jitted Triton kernel (``interpret=True``: for CPU tensors, via the
    interpreter)."""
    return jit(_add_body, interpret=interpret)


class AddKernel(AddDeclaration):
    """``c = a + b`` by a grid-stride Triton kernel over 1-D tensors of the problem's
    dtype, checked exactly against torch's sum (same dtype, same rounding); offsets are
    int64 where the grid and problem take them past int32 (:func:`wide_offsets`)."""

    def allocate(self, problem: Problem, device: str) -> Buffers:
        dtype = getattr(torch, problem.dtype)
        a = torch.empty(problem.n, dtype=dtype, device=device)
        return Buffers(problem, {"a": a, "b": torch.empty_like(a), "c": torch.empty_like(a)})

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        for name in ("a", "b"):
            fill_random(buffers[name], generator)

    def poison(self, buffers: Buffers) -> None:
        fill_poison(buffers["c"])

    def launch(self, buffers: Buffers, config: Config) -> None:
        a, n = buffers["a"], buffers.problem.n
        add_kernel(interpret=not a.is_cuda)[(config.grid,)](
            a, buffers["b"], buffers["c"], n, num_warps=config.num_warps,
            WIDE=wide_offsets(n, config.grid, config.meta["BLOCK"]), **config.meta)

    def model(self, config: Config, sms: int) -> float | None:
        return streaming(config, sms, config.meta["BLOCK"], inputs=2)

    def check(self, buffers: Buffers) -> str | None:
        # same dtype, same rounding: exact
        return mismatch(buffers["c"], buffers["a"] + buffers["b"], "a + b")

    def baseline(self, buffers: Buffers) -> None:
        torch.add(buffers["a"], buffers["b"], out=buffers["c"])

    def source(self) -> str:
        return (inspect.getsource(_add_body) + inspect.getsource(AddDeclaration) +
                inspect.getsource(type(self)))
