"""A tanh-approximated GELU, ``out = gelu(x)``, tuned the way most Triton users tune today: an
``@triton.autotune`` list of 24 configs (tile size x warps), brought into sweeper as it is
with ``from_autotune:`` (``benchmarks/spaces/gelu-autotune.yaml``).  Its exhaustive table is
one of the search benchmarks' tables of a kernel without a model."""

from __future__ import annotations

import triton
import triton.language as tl

import sweeper


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=w)
                          for b in (256, 512, 1024, 2048, 4096, 8192) for w in (1, 2, 4, 8)],
                 key=["n_elements"])
@triton.jit
def gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    z = 0.7978845608028654 * (x + 0.044715 * x * x * x)     # sqrt(2 / pi) * (...)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0
    tl.store(out_ptr + offsets, (0.5 * x * (1.0 + tanh)).to(out_ptr.dtype.element_ty),
             mask=mask)


def _reference(x):
    import torch
    return torch.nn.functional.gelu(x.float(), approximate="tanh").to(x.dtype)


@sweeper.kernel(inputs={"x": "n_elements"}, outputs={"out": "n_elements"},
                dims={"n_elements": 1 << 20}, grid="cdiv(n_elements, BLOCK_SIZE)",
                footprint_bytes="n_elements * itemsize", flops="8 * n_elements",
                reference=_reference, autotuned=gelu_kernel)
def gelu(x, out, config):
    """out = gelu(x), one tile of ``BLOCK_SIZE`` elements a program."""
    gelu_kernel.fn[(config.grid,)](x, out, x.numel(), num_warps=config.num_warps,
                                   **config.meta)
