"""The built-in ``matmul`` kernel: C (M×N) = A (M×K) @ B (K×N), persistent over tiles.

Program ``i`` computes tiles ``i, i + grid, ...`` of ``BLOCK_M × BLOCK_N``, so the grid
is a free launch parameter beside ``BLOCK_M/N/K``, ``num_stages`` and num_warps.  M, N
and K need not be multiples of the tiles: every load and store is masked.  A space gives
M, N, K, or a footprint (the bytes of one square matrix: M = N = K =
isqrt(footprint / itemsize)).  Bytes moved: A and B read once, C written once; FLOPs:
2·M·N·K.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
import triton.language as tl

from sweeper.kernels._base import Buffers, fill_poison
from sweeper.kernels._declared import MatmulDeclaration, mnk
from sweeper.kernels._guess import tiled
from sweeper.kernels._jit import jit
from sweeper.space import Config, Problem

#: ‖C − ref‖ / ‖ref‖ allowed, by dtype: a right product's relative error is far under 1e-3
#: in fp32, about 3e-4 through TF32 (Triton's default for fp32 operands) and between 1e-3
#: and 1e-2 with 16-bit operands; a wrong one is off by order 1.
TOLERANCE = {"float32": 2e-3, "float16": 1e-2, "bfloat16": 2e-2}


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _matmul_body(a, b, c, M: tl.constexpr, N: tl.constexpr,  # type: ignore[no-untyped-def]
                 K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    # Row-major A (M x K), B (K x N), C (M x N). The sizes are constexprs: the K loop then
    # has constant bounds (pipelined on the GPU, and runnable by triton 3.6's interpreter).
    tiles_n = (N + BLOCK_N - 1) // BLOCK_N
    tiles = ((M + BLOCK_M - 1) // BLOCK_M) * tiles_n
    tile = tl.program_id(0)
    while tile < tiles:
        rm = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)   # tl.zeros is itself jitted
        for k in range(0, K, BLOCK_K):
            rk = k + tl.arange(0, BLOCK_K)
            x = tl.load(a + rm[:, None] * K + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            y = tl.load(b + rk[:, None] * N + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
        tile += tl.num_programs(0)


@functools.cache
def matmul_kernel(interpret: bool = False) -> Any:
    """The jitted Triton kernel (``interpret=True``: for CPU tensors, via the
    interpreter)."""
    return jit(_matmul_body, interpret=interpret)


class MatmulKernel(MatmulDeclaration):
    """C = A @ B for M×K and K×N matrices by a persistent Triton kernel, tile sizes and
    pipeline depth swept.  Checked against a float64 product: an element left unwritten
    (the NaN poison) fails, and so does a relative error above the dtype's ``TOLERANCE``,
    as a right product differs from the exact one only by rounding."""

    def allocate(self, problem: Problem, device: str) -> Buffers:
        m, n, k = mnk(problem)
        dtype = getattr(torch, problem.dtype)
        return Buffers(problem, {"a": torch.empty(m, k, dtype=dtype, device=device),
                                 "b": torch.empty(k, n, dtype=dtype, device=device),
                                 "c": torch.empty(m, n, dtype=dtype, device=device)})

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        for name in ("a", "b"):
            buffers[name].normal_(generator=generator)

    def poison(self, buffers: Buffers) -> None:
        fill_poison(buffers["c"])

    def launch(self, buffers: Buffers, config: Config) -> None:
        a, b = buffers["a"], buffers["b"]
        matmul_kernel(interpret=not a.is_cuda)[(config.grid,)](
            a, b, buffers["c"], M=a.shape[0], N=b.shape[1], K=a.shape[1],
            num_warps=config.num_warps, **config.meta)

    def model(self, config: Config, sms: int) -> float | None:
        m = config.meta
        return tiled(config, sms, mnk(config.problem), m["BLOCK_M"], m["BLOCK_N"],
                     m["BLOCK_K"], m["num_stages"])

    def check(self, buffers: Buffers) -> str | None:
        a, b, c = buffers["a"], buffers["b"], buffers["c"]
        if torch.isnan(c).any():
            return f"{int(torch.isnan(c).sum())} of {c.numel()} elements were never written"
        ref = a.double() @ b.double()
        err = float((c.double() - ref).norm() / ref.norm())
        limit = TOLERANCE.get(str(a.dtype).removeprefix("torch."), 1e-2)
        return None if err <= limit else f"relative error {err:.3g} > {limit:g}"

    def baseline(self, buffers: Buffers) -> None:
        torch.matmul(buffers["a"], buffers["b"], out=buffers["c"])

    def source(self) -> str:
        return (inspect.getsource(_matmul_body) + inspect.getsource(MatmulDeclaration) +
                inspect.getsource(type(self)))
