"""The built-in ``scale`` kernel: ``x *= A`` in place, grid-stride like ``copy``.

Bytes moved: the footprint read and written back; one FLOP per element.

An in-place kernel has no output to poison, and every launch multiplies again: the
timed launches leave ``x`` at ``x0 * A**k``, not at ``x0 * A``.  So the check verifies
against the value after the known number of launches (inputs are never restored between
samples, which would add a copy to the timed work):

- ``poison`` (before the first launch and again after warmup) keeps a copy of ``x`` as
  the start and zeroes a launch counter;
- the kernel's first program adds one to the counter on the device at every launch, so
  launches replayed from a CUDA graph or batched count as launches made one by one;
- ``check`` multiplies the start by ``A`` as many times as the counter says, rounding
  to the dtype after each step as the kernel does, and compares bit for bit.  The
  replay on the GPU is one pass of a Triton loop per element (:func:`replayed`), not
  one pass of torch's ``mul_`` per launch: on the H200 that took 57 ms a trial at 2 GiB
  fp32 (a third of an exhaustive sweep's wall).  The product is exact before its one
  rounding (below), so torch's ``mul_`` gives the same bits: a GPU test holds the two
  together in every dtype.

``A = 1 + 2**-5`` has six significant bits, so a product with any element is exact in
float32 before it is rounded once to the dtype: Triton (which multiplies in float32 or
wider) and torch round alike, and every step changes every nonzero value even in
bfloat16 (a relative step of 2**-5 is above its half ulp).  The values grow: after
about 360 launches in float16 (2 900 in float32 and bfloat16) they overflow to ±inf,
which the replay reproduces and a launch that skipped its work does not; the replay on
the CPU stops early once a step changes nothing.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, Elementwise, mismatch, wide_offsets
from sweeper.kernels._declared import ScaleDeclaration

#: The factor every launch multiplies by (see the module's docstring for why this one).
A = 1.03125
#: Elements each program of the GPU's replay (:func:`replayed`) takes.
REPLAY_BLOCK = 1024
#: Every this many steps, the replay on the CPU checks whether a step still changes
#: anything.
SATURATION_CHECK = 64


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _scale_body(x, launches, n, a, BLOCK: tl.constexpr,  # type: ignore[no-untyped-def]
                WIDE: tl.constexpr):
    if tl.program_id(0) == 0:         # one program counts the launch, on the device
        tl.store(launches, tl.load(launches) + 1)
    # offsets int32 unless WIDE (wide_offsets), as copy's
    lanes = tl.arange(0, BLOCK)
    pid, programs = tl.program_id(0), tl.num_programs(0)
    if WIDE:
        pid, programs = pid.to(tl.int64), programs.to(tl.int64)
    start = pid * BLOCK
    while start < n:
        offsets = start + lanes
        mask = offsets < n
        tl.store(x + offsets, tl.load(x + offsets, mask=mask) * a, mask=mask)
        start += programs * BLOCK


def _replay_body(start, out, n, a, launches,  # type: ignore[no-untyped-def]
                 BLOCK: tl.constexpr):
    # each element of start multiplied by a, launches times, rounded to the dtype each time
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(start + offsets, mask=mask)
    for _ in range(launches):
        value = (value * a).to(out.dtype.element_ty)
    tl.store(out + offsets, value, mask=mask)


def replayed(start: torch.Tensor, launches: int) -> torch.Tensor:
    """``start`` multiplied by ``A`` ``launches`` times, one rounding to its dtype per step
    as the kernel does: on the GPU in one pass of a Triton loop per element; for CPU
    tensors (the interpreter's small sizes) by torch's ``mul_``, one pass a launch, which
    stops early once a step changes nothing (the interpreter's numpy has no bfloat16 to
    round a loop to)."""
    if not start.is_cuda:
        out = start.clone()
        for step in range(launches):
            before = out.clone() if step % SATURATION_CHECK == SATURATION_CHECK - 1 else None
            out.mul_(A)
            if before is not None and torch.equal(before, out):
                break
        return out
    from sweeper.kernels._jit import jitted

    out = torch.empty_like(start)
    n = start.numel()
    jitted(_replay_body, False)[(triton.cdiv(n, REPLAY_BLOCK),)](
        start, out, n, A, launches, BLOCK=REPLAY_BLOCK)
    return out


class ScaleKernel(Elementwise, ScaleDeclaration):
    """``x *= A`` in place by a grid-stride Triton kernel over a 1-D tensor of a floating
    dtype, verified against the start multiplied as many times as the kernel ran (the
    module's docstring says how); offsets are int64 where the grid and problem take them
    past int32 (:func:`wide_offsets`); an integer dtype is ruled out at allocation."""

    bodies = (_scale_body,)
    inputs = ("x",)

    def allocate(self, problem: Problem, device: str) -> Buffers:
        dtype = getattr(torch, problem.dtype)
        if not dtype.is_floating_point:
            raise ValueError(f"scale multiplies by {A}: {problem.dtype} is no floating "
                             "dtype; allowed: float64, float32, float16, bfloat16")
        x = torch.empty(problem.n, dtype=dtype, device=device)
        return Buffers(problem, {"x": x, "start": torch.empty_like(x),
                                 "launches": torch.zeros(1, dtype=torch.int64, device=device)})

    def poison(self, buffers: Buffers) -> None:
        """Keep ``x`` as the start the check replays from, and zero the launch counter:
        ``x`` is both input and output, so nothing can be poisoned."""
        buffers["start"].copy_(buffers["x"])
        buffers["launches"].zero_()

    def launch(self, buffers: Buffers, config: Config) -> None:
        n = buffers.problem.n
        self.run(_scale_body, config, buffers["x"], buffers["launches"], n, A,
                 WIDE=wide_offsets(n, config.grid, config.meta["BLOCK"]))

    def check(self, buffers: Buffers) -> str | None:
        x, launches = buffers["x"], int(buffers["launches"].item())
        expected = replayed(buffers["start"], launches)
        return mismatch(x, expected, f"the start times {A}**{launches}, the launches counted")

    def baseline(self, buffers: Buffers) -> None:
        """``x.mul_(A)``: the same work; the launch counter is the kernel's alone (the
        baseline is timed, never verified)."""
        buffers["x"].mul_(A)
