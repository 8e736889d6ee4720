"""The built-in ``matmul`` kernel: C = A @ B for square matrices, persistent over tiles.

Program ``i`` computes tiles ``i, i + grid, ...`` of ``BLOCK_M × BLOCK_N``, so the grid
is a free launch parameter beside ``BLOCK_M/N/K``, ``num_stages`` and num_warps.  The
footprint is the bytes of A: M = N = K = isqrt(footprint / itemsize).  Bytes moved:
A and B read once, C written once; FLOPs: 2·M·N·K.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

import torch
import triton.language as tl

from sweeper.kernels._base import Buffers
from sweeper.kernels._declared import MatmulDeclaration
from sweeper.kernels._guess import tiled
from sweeper.kernels._jit import jit
from sweeper.space import Config, Problem

#: ‖C − ref‖ / ‖ref‖ allowed, by dtype: a right product's relative error is far under 1e-3
#: in fp32, about 3e-4 through TF32 (Triton's default for fp32 operands) and between 1e-3
#: and 1e-2 with 16-bit operands; a wrong one is off by order 1.
TOLERANCE = {"float32": 2e-3, "float16": 1e-2, "bfloat16": 2e-2}


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _matmul_body(a, b, c, M: tl.constexpr, BLOCK_M: tl.constexpr,  # type: ignore[no-untyped-def]
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Square M x M matrices, row-major. M is a constexpr: the K loop then has constant
    # bounds (pipelined on the GPU, and runnable by triton 3.6's interpreter).
    tiles_n = (M + BLOCK_N - 1) // BLOCK_N
    tiles = ((M + BLOCK_M - 1) // BLOCK_M) * tiles_n
    tile = tl.program_id(0)
    while tile < tiles:
        rm = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)   # tl.zeros is itself jitted
        for k in range(0, M, BLOCK_K):
            rk = k + tl.arange(0, BLOCK_K)
            x = tl.load(a + rm[:, None] * M + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < M), other=0.0)
            y = tl.load(b + rk[:, None] * M + rn[None, :],
                        mask=(rk[:, None] < M) & (rn[None, :] < M), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * M + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < M))
        tile += tl.num_programs(0)


@functools.cache
def matmul_kernel(interpret: bool = False) -> Any:
    """The jitted Triton kernel (``interpret=True``: for CPU tensors, via the
    interpreter)."""
    return jit(_matmul_body, interpret=interpret)


def side(problem: Problem) -> int:
    """The side of the square matrices of ``problem``: M = N = K = isqrt(elements)."""
    return math.isqrt(problem.n)


class MatmulKernel(MatmulDeclaration):
    """C = A @ B for square matrices by a persistent Triton kernel, tile sizes and
    pipeline depth swept.  Checked against a float64 product: an element left unwritten
    (the NaN poison) fails, and so does a relative error above the dtype's ``TOLERANCE``,
    as a right product differs from the exact one only by rounding."""

    def allocate(self, problem: Problem, device: str) -> Buffers:
        m = side(problem)
        if m * m != problem.n:
            raise ValueError(f"matmul: footprint {problem.footprint} bytes of {problem.dtype} "
                             f"is not a square matrix ({problem.n} elements)")
        dtype = getattr(torch, problem.dtype)
        a = torch.empty(m, m, dtype=dtype, device=device)
        return Buffers(problem, {"a": a, "b": torch.empty_like(a), "c": torch.empty_like(a)})

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        for name in ("a", "b"):
            buffers[name].normal_(generator=generator)

    def poison(self, buffers: Buffers) -> None:
        buffers["c"].fill_(float("nan"))

    def launch(self, buffers: Buffers, config: Config) -> None:
        a = buffers["a"]
        matmul_kernel(interpret=not a.is_cuda)[(config.grid,)](
            a, buffers["b"], buffers["c"], M=a.shape[0], num_warps=config.num_warps,
            **config.meta)

    def model(self, config: Config, sms: int) -> float | None:
        m = config.meta
        return tiled(config, sms, side(config.problem), m["BLOCK_M"], m["BLOCK_N"],
                     m["BLOCK_K"], m["num_stages"])

    def check(self, buffers: Buffers) -> str | None:
        a, b, c = buffers["a"], buffers["b"], buffers["c"]
        if torch.isnan(c).any():
            return f"{int(torch.isnan(c).sum())} of {c.numel()} elements were never written"
        ref = a.double() @ b.double()
        err = float((c.double() - ref).norm() / ref.norm())
        limit = TOLERANCE.get(str(a.dtype).removeprefix("torch."), 1e-2)
        return None if err <= limit else f"relative error {err:.3g} > {limit:g}"

    def bytes_moved(self, problem: Problem) -> int:
        return 3 * problem.footprint

    def flops(self, problem: Problem) -> int:
        return 2 * side(problem) ** 3

    def baseline(self, buffers: Buffers) -> None:
        torch.matmul(buffers["a"], buffers["b"], out=buffers["c"])

    def source(self) -> str:
        return (inspect.getsource(_matmul_body) + inspect.getsource(MatmulDeclaration) +
                inspect.getsource(type(self)))
