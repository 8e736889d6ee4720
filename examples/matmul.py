"""C = A B, the Triton tutorial's matmul as a short kernel that declares the built-in tiled
model for ``auto``: one program per ``BLOCK_M × BLOCK_N`` tile of C, grouped ``GROUP_M``
tiles down for the L2, ``BLOCK_K`` of K a step, ``num_stages`` operand buffers in flight."""
import torch
import triton
import triton.language as tl

import sweeper
from sweeper.kernels import Headline


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    rm = (first_m + (pid % group) % rows) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = ((pid % group) // rows) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(a + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@sweeper.kernel(inputs={"a": "M, K", "b": "K, N"}, outputs={"c": "M, N"},
                dims={"M": 4096, "N": 4096, "K": 4096},
                meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                      "num_stages": 3},
                grid="cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", dtype="float16",
                footprint_bytes="(M * K + K * N + M * N) * itemsize",
                flops="2 * M * N * K", headline=Headline.TFLOPS,
                reference=lambda a, b: a @ b, baseline=lambda a, b, c: torch.matmul(a, b, out=c),
                baseline_name="torch.matmul",
                tolerance={"bfloat16": (1.6e-2, 1e-2), "float16": (1e-3, 1e-2)},
                model={"tiled": {"m": "M", "n": "N", "k": "K", "tile_m": "BLOCK_M",
                                 "tile_n": "BLOCK_N", "tile_k": "BLOCK_K",
                                 "stages": "num_stages"}})
def matmul(a, b, c, config):
    m, k = a.shape
    matmul_kernel[(config.grid,)](a, b, c, m, b.shape[1], k, num_warps=config.num_warps,
                                  **config.meta)
