"""The built-in ``add`` kernel: ``c = a + b``, grid-stride like ``copy``.

Bytes moved: two footprints read and one written; one FLOP per element.
"""

from __future__ import annotations

import torch
import triton.language as tl

from sweeper.kernels._base import Buffers, Elementwise, mismatch
from sweeper.kernels._declared import AddDeclaration


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


class AddKernel(Elementwise, AddDeclaration):
    """``c = a + b`` by a grid-stride Triton kernel over 1-D tensors of the problem's
    dtype, checked exactly against torch's sum (same dtype, same rounding); offsets are
    int64 where the grid and problem take them past int32 (:func:`wide_offsets`)."""

    bodies = (_add_body,)
    inputs, outputs = ("a", "b"), ("c",)

    def check(self, buffers: Buffers) -> str | None:
        # same dtype, same rounding: exact
        return mismatch(buffers["c"], buffers["a"] + buffers["b"], "a + b")

    def baseline(self, buffers: Buffers) -> None:
        torch.add(buffers["a"], buffers["b"], out=buffers["c"])
