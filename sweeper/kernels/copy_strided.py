"""The built-in ``copy-strided`` kernel: ``dst[i] = src[j(i)]``, grid-stride like ``copy``,
with the source index ``j`` in one of two orders:

- strided (``linecross: 0``): ``j = (i * stride) % n``.  Consecutive lanes read
  ``stride`` elements apart; where ``stride`` and ``n`` share a factor ``g``, only
  ``n / g`` distinct elements are read (each ``g`` times), which the L2 may serve;
- line-crossing (``linecross: 1``): ``src`` is an ``(n / stride) × stride`` matrix read by
  columns and ``dst`` written by rows (a transpose), so every element is read once and
  consecutive lanes read a row apart; ``n`` must be a multiple of ``stride``.

At ``stride`` 1 both are ``copy``.  ``n``, ``stride`` and the order are compile-time
constants: the index costs a few integer operations by constants (int64 where ``i *
stride``, or ``i`` itself for a grid whose programs reach past 2**31, may pass int32),
never a division by a runtime value, so the access order is what is measured.  Bytes
moved: ``n`` elements read and ``n`` written, as the kernel asks for them.  The baseline
is torch's ``copy_`` from a view of ``src`` in the same order (a transpose, or a strided
column broadcast where ``stride`` divides ``n``); where no view has the order (strided,
``n`` no multiple of ``stride``) it is ``torch.index_select`` over an index kept with the
buffers, which moves the index too.
"""

from __future__ import annotations

from typing import TypeVar

import torch
import triton.language as tl

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, Elementwise, mismatch, wide_offsets
from sweeper.kernels._declared import CopyStridedDeclaration


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _strided_body(src, dst, N: tl.constexpr,  # type: ignore[no-untyped-def]
                  STRIDE: tl.constexpr, LINECROSS: tl.constexpr, BLOCK: tl.constexpr,
                  WIDE: tl.constexpr):
    # offsets int32 unless WIDE (wide_offsets: N - 1 + grid * BLOCK passes int32)
    lanes = tl.arange(0, BLOCK)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    if WIDE:
        pid, programs = pid.to(tl.int64), programs.to(tl.int64)
    start = pid * BLOCK
    while start < N:
        i = start + lanes
        mask = i < N
        if LINECROSS:             # element i = (column c, row r) of the (N / STRIDE) rows
            source = (i % (N // STRIDE)) * STRIDE + i // (N // STRIDE)
        elif N * STRIDE < 2**31:
            source = i * STRIDE % N
        else:
            source = i.to(tl.int64) * STRIDE % N
        tl.store(dst + i, tl.load(src + source, mask=mask), mask=mask)
        start += programs * BLOCK


def order(problem: Problem) -> tuple[int, int, bool]:
    """``n``, ``stride`` and whether the order is line-crossing, checked: a
    ``ValueError`` for a problem the kernel cannot do (the sweep rules it out)."""
    n, stride, linecross = (problem.dim(d) for d in ("n", "stride", "linecross"))
    if n >= 2**31:
        raise ValueError(f"copy-strided uses int32 offsets: n = {n} is >= 2**31")
    if linecross and n % stride:
        raise ValueError(f"linecross reads an (n / stride) × stride matrix: n = {n} is no "
                         f"multiple of stride = {stride}")
    return n, stride, bool(linecross)


#: An element of ``dst``, or a tensor of them.
Index = TypeVar("Index", int, torch.Tensor)


def source_of(i: Index, n: int, stride: int, linecross: bool) -> Index:
    """The element of ``src`` that element ``i`` of ``dst`` reads (elementwise for a
    tensor)."""
    rows = n // stride
    return (i % rows) * stride + i // rows if linecross else i * stride % n


def source_index(problem: Problem, device: str | torch.device) -> torch.Tensor:
    """The element of ``src`` each element of ``dst`` reads (int64), computed by torch."""
    n, stride, linecross = order(problem)
    return source_of(torch.arange(n, device=device), n, stride, linecross)


class CopyStridedKernel(Elementwise, CopyStridedDeclaration):
    """``dst[i] = src[j(i)]`` in the strided or line-crossing order (the module's
    docstring), checked bit for bit against ``src`` indexed by torch (the NaN poison never
    compares equal)."""

    bodies = (_strided_body,)
    inputs, outputs = ("src",), ("dst",)

    def allocate(self, problem: Problem, device: str) -> Buffers:
        n, stride, linecross = order(problem)
        buffers = super().allocate(problem, device)
        if not linecross and n % stride:          # no view has this order: the baseline's
            buffers.tensors["index"] = source_index(problem, device)
        return buffers

    def launch(self, buffers: Buffers, config: Config) -> None:
        n, stride, linecross = order(buffers.problem)
        self.run(_strided_body, config, buffers["src"], buffers["dst"], N=n, STRIDE=stride,
                 LINECROSS=int(linecross),
                 WIDE=wide_offsets(n, config.grid, config.meta["BLOCK"]))

    def check(self, buffers: Buffers) -> str | None:
        """``dst`` against ``src`` in the kernel's order as torch lays it out
        (:func:`in_order`): one pass, where building the index anew took several (5 ms a
        trial at 256 MiB on the H200)."""
        n, stride, linecross = order(buffers.problem)
        view = in_order(buffers)
        expected = buffers["src"][buffers["index"]] if view is None else view.reshape(-1)
        # the NaN poison left behind always differs
        return mismatch(buffers["dst"], expected, "src in this order",
                        lambda i: f", which reads src[{source_of(i, n, stride, linecross)}]")

    def baseline(self, buffers: Buffers) -> None:
        """``dst.copy_`` from a view of ``src`` in the kernel's order, or
        ``torch.index_select`` where no view has it (the module's docstring)."""
        view = in_order(buffers)
        if view is None:
            torch.index_select(buffers["src"], 0, buffers["index"], out=buffers["dst"])
        else:
            buffers["dst"].view(view.shape).copy_(view)


def in_order(buffers: Buffers) -> torch.Tensor | None:
    """``src`` as a ``stride × n / stride`` view in the kernel's order, laid out as ``dst``
    is: the transpose of the ``n / stride × stride`` matrix (line-crossing), or its first
    column repeated ``stride`` times (strided, ``stride`` dividing ``n``: ``dst[a * rows +
    r] = src[r * stride]``); ``None`` where no view has the order."""
    n, stride, linecross = order(buffers.problem)
    src, rows = buffers["src"], n // stride
    if linecross:
        return src.view(rows, stride).t()
    if n % stride == 0:
        return src.view(rows, stride)[:, 0].expand(stride, rows)
    return None
