"""The built-in ``copy`` kernel: a Triton grid-stride copy.

Program ``i`` copies blocks ``i, i + grid, i + 2*grid, ...`` of ``BLOCK`` elements,
so the grid is a free launch parameter and grid, block (num_warps) and ``BLOCK``
are independent axes.  Bytes moved: the footprint read plus the footprint written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import triton.language as tl

from sweeper.kernels._base import Buffers, Elementwise, mismatch, wide_offsets
from sweeper.kernels._declared import CopyDeclaration
from sweeper.kernels._jit import jitted

if TYPE_CHECKING:      # a run that measures nothing (a finished study's) imports no torch
    import torch


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _copy_body(src, dst, n, BLOCK: tl.constexpr,  # type: ignore[no-untyped-def]
               WIDE: tl.constexpr):
    # A while loop, not range(pid, num_blocks, programs): the interpreter of triton 3.6 with
    # NumPy 2 cannot turn a program id into a range bound.  Offsets are int32 unless WIDE
    # (wide_offsets: n - 1 + grid * BLOCK passes int32), then int64.
    lanes = tl.arange(0, BLOCK)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    if WIDE:
        pid, programs = pid.to(tl.int64), programs.to(tl.int64)
    start = pid * BLOCK
    while start < n:
        offsets = start + lanes
        mask = offsets < n
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)
        start += programs * BLOCK


class CopyKernel(Elementwise, CopyDeclaration):
    """``dst = src`` by a grid-stride Triton kernel over 1-D tensors of the problem's
    dtype, checked bit for bit (the NaN poison never compares equal); offsets are int64
    where the grid and problem take them past int32 (:func:`wide_offsets`)."""

    bodies = (_copy_body,)
    inputs, outputs = ("src",), ("dst",)

    def check(self, buffers: Buffers) -> str | None:
        return mismatch(buffers["dst"], buffers["src"], "the input")

    def baseline(self, buffers: Buffers) -> None:
        buffers["dst"].copy_(buffers["src"])


def copy(src: torch.Tensor, out: torch.Tensor | None = None, *, tuning: str | None = None
         ) -> torch.Tensor:
    """Copy ``src`` with the tuned config for this GPU, dtype and nearest footprint.

    This is how a tuned config flows back into a launch: ``sweeper export`` wrote it,
    :func:`sweeper.tuned` reads it.
    """
    import torch

    from sweeper.export import tuned

    out = torch.empty_like(src) if out is None else out
    cfg = tuned("copy", dtype=src.dtype, footprint=src.numel() * src.element_size(),
                path=tuning)
    jitted(_copy_body, not src.is_cuda)[(cfg.grid,)](
        src, out, src.numel(), num_warps=cfg.num_warps,
        WIDE=wide_offsets(src.numel(), cfg.grid, cfg.meta["BLOCK"]), **cfg.meta)
    return out
