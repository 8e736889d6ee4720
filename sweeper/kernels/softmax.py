"""The built-in ``softmax`` kernel: ``y = softmax(x)`` along each row of a ``rows × cols``
row-major matrix, persistent over rows.

Program ``i`` normalises rows ``i, i + grid, ...``, so the grid is a free launch
parameter.  ``BLOCK`` is the column tile: where ``BLOCK >= cols`` a row is loaded once,
kept in registers, and normalised in one pass (the lanes past ``cols`` are masked, so any
``cols`` works); a narrower tile reads the row twice, first for its maximum and the sum of
exponentials (updated tile by tile, the sum rescaled whenever the maximum grows), then to
write ``exp(x - max) / sum``.  Arithmetic is float32 whatever the dtype.  Bytes moved:
the matrix read once and written once (a row that does not fit a tile is read twice, which
the rate does not credit); FLOPs: five an element (max, subtract, exp, add, divide).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import triton.language as tl

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, Builtin, wide_offsets
from sweeper.kernels._declared import SoftmaxDeclaration
from sweeper.kernels._guess import rowwise

if TYPE_CHECKING:
    from sweeper.core import DeviceFacts

#: (rtol, atol) against a float64 softmax of the same input, by dtype: float32 arithmetic
#: is within a few ulps of float32 (float64 gets no better, as it computes in float32);
#: a 16-bit output is off by its rounding, half an ulp (2**-11 relative for float16,
#: 2**-8 for bfloat16), and float16 flushes values below 6e-8 to 0.  A wrong row is off
#: by far more.
TOLERANCE = {"float64": (1e-5, 1e-12), "float32": (1e-5, 1e-12),
             "float16": (2e-3, 1e-7), "bfloat16": (1e-2, 1e-9)}
#: ``randomize`` draws x from N(0, SPREAD²): the row maxima matter (e**x spans e**±16).
SPREAD = 4.0


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _softmax_body(x, y, rows, COLS: tl.constexpr,  # type: ignore[no-untyped-def]
                  BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # A row's offset is int64 (rows * COLS may pass int32); the row counter is int32
    # unless WIDE (wide_offsets: rows - 1 + grid passes int32), then int64.
    lanes = tl.arange(0, BLOCK)
    row, programs = tl.program_id(0), tl.num_programs(0)
    if WIDE:
        row, programs = row.to(tl.int64), programs.to(tl.int64)
    while row < rows:
        src = x + row.to(tl.int64) * COLS
        dst = y + row.to(tl.int64) * COLS
        if BLOCK >= COLS:             # one pass: the row stays in registers
            mask = lanes < COLS
            v = tl.load(src + lanes, mask=mask, other=-float("inf")).to(tl.float32)
            e = tl.exp(v - tl.max(v, 0))
            tl.store(dst + lanes, e / tl.sum(e, 0), mask=mask)
        else:                         # the first tile is full, as BLOCK < COLS
            v = tl.load(src + lanes).to(tl.float32)
            m = tl.max(v, 0)
            s = tl.sum(tl.exp(v - m), 0)
            for c in range(BLOCK, COLS, BLOCK):
                mask = c + lanes < COLS
                v = tl.load(src + c + lanes, mask=mask, other=-float("inf")).to(tl.float32)
                grown = tl.maximum(m, tl.max(v, 0))
                s = s * tl.exp(m - grown) + tl.sum(tl.exp(v - grown), 0)
                m = grown
            for c in range(0, COLS, BLOCK):
                mask = c + lanes < COLS
                v = tl.load(src + c + lanes, mask=mask, other=-float("inf")).to(tl.float32)
                tl.store(dst + c + lanes, tl.exp(v - m) / s, mask=mask)
        row += programs


class SoftmaxKernel(Builtin, SoftmaxDeclaration):
    """Row-wise softmax by a persistent Triton kernel, one pass or two by ``BLOCK`` (the
    module's docstring).  Checked against a float64 softmax of the same input: an element
    left unwritten (the NaN poison) fails, and so does one off by more than its dtype's
    ``TOLERANCE``; an integer dtype is ruled out at allocation."""

    bodies = (_softmax_body,)
    outputs = ("y",)

    def allocate(self, problem: Problem, device: str) -> Buffers:
        dtype = getattr(torch, problem.dtype)
        if not dtype.is_floating_point:
            raise ValueError(f"softmax needs a floating dtype, not {problem.dtype}; allowed: "
                             "float64, float32, float16, bfloat16")
        shape = (problem.dim("rows"), problem.dim("cols"))
        x = torch.empty(shape, dtype=dtype, device=device)
        return Buffers(problem, {"x": x, "y": torch.empty_like(x)})

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        buffers["x"].normal_(0.0, SPREAD, generator=generator)

    def launch(self, buffers: Buffers, config: Config) -> None:
        x = buffers["x"]
        self.run(_softmax_body, config, x, buffers["y"], x.shape[0], COLS=x.shape[1],
                 WIDE=wide_offsets(x.shape[0], config.grid, 1))

    def model(self, config: Config, facts: DeviceFacts) -> float | None:
        problem = config.problem
        return rowwise(config, facts.sms, facts.l2_bytes, problem.dim("rows"),
                       problem.dim("cols"), config.meta["BLOCK"])

    def check(self, buffers: Buffers) -> str | None:
        x, y = buffers["x"], buffers["y"]
        unwritten = int(torch.isnan(y).sum())
        if unwritten:
            return f"{unwritten} of {y.numel()} elements were never written"
        ref = torch.softmax(x.double(), dim=-1)
        rtol, atol = TOLERANCE[str(y.dtype).removeprefix("torch.")]
        excess = (y.double() - ref).abs() - (atol + rtol * ref.abs())
        bad = int((excess > 0).sum())
        if bad == 0:
            return None
        row, col = divmod(int(excess.argmax()), y.shape[1])
        return (f"{bad} of {y.numel()} elements are off the float64 softmax by more than "
                f"{rtol:g} relative + {atol:g} (worst at row {row}, column {col}: "
                f"{y[row, col].item()!r} != {ref[row, col].item()!r})")

    def baseline(self, buffers: Buffers) -> None:
        torch.softmax(buffers["x"], dim=-1, out=buffers["y"])
