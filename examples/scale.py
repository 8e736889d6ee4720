"""x *= A in place, as a short kernel: the README's "Your own kernel"."""
import triton
import triton.language as tl

import sweeper

A = 0.5


@triton.jit
def scale_kernel(x, n, a, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * a, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, baseline=lambda x: x.mul_(A))
def scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)
