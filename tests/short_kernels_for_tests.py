"""Short kernels (``sweeper.kernel``) for the tests, loaded as user kernels
(``tests.short_kernels_for_tests:NAME``): a planted wrong one of each kind, one with an
inputs factory and a new output, an autotuned one, and ones whose baseline or flops raise."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import sweeper
from examples.scale import A, scale_kernel


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def skips_index_17(x, config):
    """Scales all but element 17: wrong on its first launch."""
    kept = x[17].item()
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)
    x[17] = kept


def _broken_baseline(x):
    raise RuntimeError("the baseline is broken")


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, baseline=_broken_baseline)
def broken_baseline(x, config):
    """A right kernel whose torch baseline raises."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def _broken_reference(x):
    return x.view(-1, 3) * A          # 1024 elements do not split into rows of 3


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=_broken_reference)
def broken_reference(x, config):
    """A right kernel whose torch reference raises."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


SEEN: set[str] = set()


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def tires(x, config):
    """Scales on the first launch of each config only, then does nothing: right when
    verified first, wrong after the timed launches."""
    if repr(config) not in SEEN:
        SEEN.add(repr(config))
        scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps,
                                     **config.meta)


@triton.jit
def _axpy_body(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    result = 2 * tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask)
    tl.store(out + offsets, result, mask=mask)


@sweeper.kernel(inputs=lambda p: {"x": torch.empty(p.n, dtype=getattr(torch, p.dtype)),
                                  "y": torch.empty(p.n, dtype=getattr(torch, p.dtype))},
                outputs={"out": "n"}, meta={"BLOCK": 256}, flops="2 * n",
                reference=lambda x, y: 2 * x + y,
                baseline=lambda x, y, out: torch.add(y, x, alpha=2, out=out),
                baseline_name="torch add(alpha=2)")
def axpy(x, y, out, config):
    """out = 2x + y with inputs from a factory and a new output."""
    _axpy_body[(config.grid,)](x, y, out, x.numel(), num_warps=config.num_warps,
                               **config.meta)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128}, num_warps=1),
                          triton.Config({"BLOCK_SIZE": 256}, num_warps=2, num_stages=2),
                          triton.Config({"BLOCK_SIZE": 256}, num_warps=4)],
                 key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@sweeper.kernel(inputs={"x": "n_elements", "y": "n_elements"}, outputs={"out": "n_elements"},
                dims={"n_elements": 4096}, grid="cdiv(n_elements, BLOCK_SIZE)",
                footprint_bytes="n_elements * itemsize", reference=lambda x, y: x + y,
                autotuned=add_kernel)
def add(x, y, out, config):
    """The autotuned add, launched through its plain jitted function."""
    add_kernel.fn[(config.grid,)](x, y, out, x.numel(), num_warps=config.num_warps,
                                  **config.meta)


@triton.jit
def centre_rows(X, Y, stride, N, BLOCK_SIZE: tl.constexpr):
    """Each row of X less its mean, as a layer norm's first step: one program a row, so
    the grid is M, which is no argument."""
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + tl.program_id(0) * stride + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    tl.store(Y + tl.program_id(0) * stride + cols, x - mean, mask=cols < N)


@sweeper.kernel(inputs={"x": "M, N"}, outputs={"y": "M, N"}, dims={"M": 8, "N": 64},
                meta={"BLOCK_SIZE": 64}, grid="M", footprint_bytes="M * N * itemsize",
                reference=lambda x: x - x.mean(dim=1, keepdim=True),
                tolerance={"float32": (1e-4, 1e-5)})
def centre(x, y, config):
    """A row-wise kernel over dimensions M, N whose grid is M."""
    centre_rows[(config.grid,)](x, y, x.stride(0), x.shape[1], num_warps=config.num_warps,
                                **config.meta)


def _flops_but_at_1024(problem):
    return 2 * problem.n // (problem.n - 1024)      # raises at n=1024 only


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, flops=_flops_but_at_1024)
def uncountable_at_1024(x, config):
    """A right kernel whose flops= function raises for one problem."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


@sweeper.kernel(inputs={"x": "n"}, outputs={"y": "n"}, meta={"BLOCK": 1024},
                dims={"n": 1024}, footprint_bytes="2 * n * itemsize",
                reference=lambda x: x * A)
def named_by_both_arrays(x, y, config):
    """A kernel whose footprint counts its input and its output: no footprint // itemsize
    rule gives its n back."""
    y.copy_(x * A)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024}, dims={"n": 1000},
                reference=lambda x: x * A)
def scale_1000(x, config):
    """The scale example declaring its default size: 1000 elements."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def _bytes_but_at_1024(problem):
    return "lots" if problem.n == 1024 else 2 * problem.n * problem.itemsize


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, bytes_moved=_bytes_but_at_1024)
def unnumbered_at_1024(x, config):
    """A right kernel whose bytes_moved= function returns a string for one problem."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def _flops_below_zero_at_1024(problem):
    return -1 if problem.n == 1024 else 2 * problem.n


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, flops=_flops_below_zero_at_1024)
def negative_at_1024(x, config):
    """A right kernel whose flops= function returns a negative number for one problem."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, flops="n - 2048")
def negative_expression_at_1024(x, config):
    """A right kernel whose flops= expression comes to less than 0 for one problem."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def _flops_raising_two_lines_at_1024(problem):
    if problem.n == 1024:
        raise ValueError("no count at 1024\nuse 2048")
    return 2 * problem.n


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, flops=_flops_raising_two_lines_at_1024)
def two_line_error_at_1024(x, config):
    """A right kernel whose flops= function raises a message of two lines for one problem."""
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)



def _scale_refusing(name, refuse):
    """The scale example declaring ``refuse``."""
    def launch(x, config):
        scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps,
                                     **config.meta)
    return sweeper.kernel(launch, name=name, inputs={"x": "n"}, outputs=["x"],
                          meta={"BLOCK": 1024}, reference=lambda x: x * A, refuse=refuse)


def _at_most_256(config):
    if config.meta["BLOCK"] > 256:
        return f"BLOCK={config.meta['BLOCK']} is more than this kernel's 256"
    return None


def _raises_at_1024(config):
    return f"BLOCK={config.meta['BLOCK']}" if 1024 // (1024 - config.meta["BLOCK"]) > 8 \
        else None


def _true_at_1024(config):
    return config.meta["BLOCK"] == 1024 or None


#: Scale examples whose refuse= refuses a BLOCK over 256, raises at BLOCK=1024 and
#: accepts BLOCK=256, or returns True, not a reason, at BLOCK=1024.
refuses_big_blocks = _scale_refusing("refuses_big_blocks", _at_most_256)
refuse_raises_at_1024 = _scale_refusing("refuse_raises_at_1024", _raises_at_1024)
refuse_says_true_at_1024 = _scale_refusing("refuse_says_true_at_1024", _true_at_1024)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def own_grid(x, config):
    """A launch on a grid of its own (Triton's idiom), whatever grid the config sweeps."""
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
        x, n, A, num_warps=config.num_warps, **config.meta)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def default_warps(x, config):
    """A launch that gives no num_warps: Triton's default 4, whatever block it sweeps."""
    scale_kernel[(config.grid,)](x, x.numel(), A, **config.meta)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _scale_even(x, n, a, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """``scale_kernel`` unmasked where ``@triton.heuristics`` finds n a multiple of BLOCK."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(x + offsets, tl.load(x + offsets) * a)
    else:
        tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * a, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def heuristic_own_grid(x, config):
    """:func:`own_grid` through a ``@triton.heuristics``, which launches the jitted
    function by its ``run``, not ``fn[grid]``."""
    n = x.numel()
    _scale_even[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
        x, n, A, num_warps=config.num_warps, **config.meta)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def heuristic_default_warps(x, config):
    """:func:`default_warps` through a ``@triton.heuristics``."""
    _scale_even[(config.grid,)](x, x.numel(), A, **config.meta)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def heuristic_scale(x, config):
    """A launch through a ``@triton.heuristics`` that runs the config: measured."""
    _scale_even[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def _each_as_fast(call, quantiles):
    """An autotuner's benchmark without a GPU: each config launched once, all as fast
    (the autotuner then chooses its first)."""
    call()
    return [1.0, 1.0, 1.0]


#: ``_scale_even`` under an autotuner of its own: a launch through it
#: runs the config it chose (BLOCK=256, num_warps=2), whatever config sweeper sweeps
_scale_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2),
                                        triton.Config({"BLOCK": 1024}, num_warps=1)],
                               key=["n"], restore_value=["x"], do_bench=_each_as_fast)(_scale_even)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A)
def tuned_by_triton(x, config):
    """A launch through a ``@triton.autotune``: it runs the config the autotuner chose."""
    n = x.numel()
    _scale_tuned[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, n, A)


def _scale_verified(name, verify, factor=A):
    """A scale kernel that multiplies by ``factor`` (the reference's ``A``, or one off by
    a part in a thousand: an approximate kernel), its result judged by ``verify``."""
    def launch(x, config):
        scale_kernel[(config.grid,)](x, x.numel(), factor, num_warps=config.num_warps,
                                     **config.meta)
    return sweeper.kernel(launch, name=name, inputs={"x": "n"}, outputs=["x"],
                          meta={"BLOCK": 1024}, reference=lambda x: x * A, verify=verify)


def _within_a_percent(outputs, expected):
    return torch.allclose(outputs["x"], expected["x"], rtol=1e-2, atol=1e-3)


def _says_how_far(outputs, expected):
    worst = (outputs["x"] - expected["x"]).abs().max().item()
    return None if worst == 0 else f"x is off by up to {worst:.3g}, more than 0"


def _says_false(outputs, expected):
    return False


def _raises(outputs, expected):
    return outputs["y"]


def _says_three(outputs, expected):
    return 3


#: An approximate scale (A + 0.1%) whose verify= accepts within 1 %, which the float32
#: tolerance check would refuse; the same kernel without verify=; and scale kernels whose
#: verify= says why not, says False, raises, and returns no verdict.
APPROXIMATE = A * 1.001
approximate_verified = _scale_verified("approximate_verified", _within_a_percent,
                                       APPROXIMATE)
approximate_unverified = _scale_verified("approximate_unverified", None, APPROXIMATE)
verify_says_why = _scale_verified("verify_says_why", _says_how_far, APPROXIMATE)
verify_says_false = _scale_verified("verify_says_false", _says_false)
verify_raises = _scale_verified("verify_raises", _raises)
verify_says_three = _scale_verified("verify_says_three", _says_three)
