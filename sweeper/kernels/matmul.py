"""The built-in ``matmul`` kernel: C (M×N) = A (M×K) @ B (K×N), persistent over tiles.

Program ``i`` computes work units ``i, i + grid, ...`` (a ``BLOCK_M × BLOCK_N`` tile of C,
or one of its ``SPLIT_K`` slices of K), so the grid is a free launch parameter beside
the tile shape, ``num_stages``, num_warps, the tile order (``GROUP_M``) and the TMA
variant; ``_matmul_triton.py`` has the bodies.  M, N and K need not be multiples of the
tiles: every load and store is masked (or, with TMA, bounded by its descriptor).  A space
gives M, N, K, or a footprint (the bytes of one square matrix: M = N = K =
isqrt(footprint / itemsize)).  Bytes moved: A and B read once, C written once; FLOPs:
2·M·N·K.

float8_e4m3fn: A and B are drawn in float32 and scaled so that each one's largest
magnitude is 448 (fp8's largest value) before the cast; the kernel multiplies by the
product of the two scales before writing C in bfloat16: the output fp8 training and
inference use, wide enough that C adds no error beyond its rounding (an fp8 C would need
its own scale), half the bytes of float32.  B is stored N × K and read transposed,
because Hopper's fp8 tensor cores and ``torch._scaled_mm`` (the baseline) take B with K
contiguous.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, Builtin
from sweeper.kernels._declared import MatmulDeclaration, mnk
from sweeper.kernels._guess import tiled
from sweeper.kernels._jit import jitted
from sweeper.kernels._matmul_triton import (
    REDUCE_BLOCK,
    _dot_probe_body,
    _matmul_body,
    _reduce_body,
    descriptor,
)

if TYPE_CHECKING:
    from sweeper.core import DeviceFacts

#: ‖C − ref‖ / ‖ref‖ allowed, by dtype: a right product's relative error is far under 1e-3
#: in fp32, about 3e-4 through TF32 (Triton's default for fp32 operands) and between 1e-3
#: and 1e-2 with 16-bit operands; a wrong one is off by order 1.  float8_e4m3fn: the
#: reference multiplies the same fp8 values, dequantised, so what remains is C's rounding
#: to bfloat16 (2**-9 of each element, about 1e-3 in norm) and Hopper's fp8 accumulation,
#: which keeps about 14 bits of mantissa between promotions (Triton's sm_90 default,
#: max_num_imprecise_acc = 2**30, never promotes): up to about 2 % of an element at
#: K = 4096 by DeepSeek-V3's measurement, far less in norm.
TOLERANCE = {"float32": 2e-3, "float16": 1e-2, "bfloat16": 2e-2, "float8_e4m3fn": 3e-2}
#: Random columns a check multiplies the output and the inputs' product by.
PROJECTIONS = 4
FP8 = "float8_e4m3fn"
#: The largest float8_e4m3fn value: each input is scaled so that its largest magnitude is it.
FP8_MAX = 448.0


def meta_of(config: Config) -> dict[str, int]:
    """``config``'s meta-parameters, the declared defaults filling those it lacks (a
    config recorded before the kernel declared them)."""
    declared = MatmulDeclaration.meta_params
    return {**{name: p.default for name, p in declared.items()}, **config.meta}


#: The side of the square tiles :func:`interpreter_dot_wrong` multiplies (``tl.dot``'s least).
PROBE_N = 16


@functools.cache
def interpreter_dot_wrong() -> bool:
    """Whether the Triton interpreter's ``tl.dot`` of bfloat16 tiles gives wrong products,
    told by running one ``PROBE_N``-square product on it and comparing with torch's at
    the bfloat16 tolerance (a product that raises counts as wrong); once a process, so
    once for the Triton it imports.  Triton 3.9's is off by some 1e10: every bfloat16
    trial there would fail as a wrong answer."""
    a, b = (torch.randn(PROBE_N, PROBE_N, generator=torch.Generator().manual_seed(seed))
            .to(torch.bfloat16) for seed in (1, 2))
    c = torch.zeros(PROBE_N, PROBE_N)
    try:
        jitted(_dot_probe_body, True)[(1,)](a, b, c, PROBE_N)
    except Exception:  # noqa: BLE001 - an interpreter that cannot run it runs no bf16 trial
        return True
    expected = a.float() @ b.float()
    error = torch.linalg.vector_norm(c - expected) / torch.linalg.vector_norm(expected)
    return not bool(error <= TOLERANCE["bfloat16"])


def refusal(config: Config, capability: tuple[int, int] | None) -> str | None:
    """Why ``config`` cannot run on a GPU of compute ``capability`` (``None``: the
    interpreter, which runs every variant, but bfloat16 only where its ``tl.dot`` of
    bfloat16 tiles computes right, :func:`interpreter_dot_wrong`: a wrong one would fail
    every trial as a wrong answer), or ``None``."""
    meta, problem = meta_of(config), config.problem
    if problem.dtype == "bfloat16" and capability is None and interpreter_dot_wrong():
        return ("the Triton interpreter's tl.dot of bfloat16 tiles gives wrong products; "
                "allowed on the interpreter: dtype float16 or float32 (-p dtype=float32), "
                "bfloat16 on a GPU")
    m, n, k = mnk(problem)
    steps = -(-k // meta["BLOCK_K"])
    if meta["SPLIT_K"] > steps:
        return (f"SPLIT_K={meta['SPLIT_K']} leaves slices of K with nothing to add: K={k} "
                f"is {steps} step(s) of BLOCK_K={meta['BLOCK_K']}; allowed: SPLIT_K <= {steps}")
    if meta["EPILOGUE_SUBTILE"] and not (meta["TMA"] and meta["SPLIT_K"] == 1):
        return "EPILOGUE_SUBTILE=1 splits the TMA store of C; allowed with TMA=1, SPLIT_K=1"
    if problem.dtype == FP8 and capability is not None and capability < (8, 9):
        return (f"{FP8} needs fp8 tensor cores: compute capability 8.9 or later; this GPU "
                f"has {capability[0]}.{capability[1]}")
    if meta["TMA"]:
        if capability is not None and capability < (9, 0):
            return (f"TMA=1 needs the tensor memory accelerator: compute capability 9.0 or "
                    f"later; this GPU has {capability[0]}.{capability[1]}; allowed: TMA=0")
        rows = {"A": k * problem.itemsize, "B": (k if problem.dtype == FP8 else n) *
                problem.itemsize, "C": n * (2 if problem.dtype == FP8 else problem.itemsize)}
        odd = [f"{name} ({size} bytes)" for name, size in rows.items() if size % 16]
        if odd:
            return (f"TMA=1 addresses rows in multiples of 16 bytes; the rows of "
                    f"{', '.join(odd)} are not; allowed: TMA=0 for M={m} N={n} K={k}")
    return None


def epilogue_bytes(config: Config) -> int:
    """Shared memory a program stages C's tile in: a TMA store (``SPLIT_K`` 1) writes C from
    shared memory, its ``BLOCK_M × BLOCK_N`` tile, or half of it at a time with
    ``EPILOGUE_SUBTILE``; pointer stores need none.  On the H200 every recorded
    ``out_of_resources`` of a TMA config is one whose operand buffers fit but not with
    this beside them (e.g. 128 × 256 × 64 tiles in four stages, bf16: 192 KiB of operands,
    plus 64 KiB of C; 32 KiB subtiled fits)."""
    meta = meta_of(config)
    if not meta["TMA"] or meta["SPLIT_K"] > 1:
        return 0
    size = 2 if config.problem.dtype == FP8 else config.problem.itemsize
    return meta["BLOCK_M"] * meta["BLOCK_N"] * size // (2 if meta["EPILOGUE_SUBTILE"] else 1)


def workspace(buffers: Buffers, split: int) -> torch.Tensor:
    """The float32 ``split × M × N`` partial sums of ``split`` slices of K, allocated on
    the first launch and kept with the buffers, so the timed launches reuse it (every
    slice is written whole by each launch: nothing needs zeroing); C itself, unread,
    when K is not split."""
    c = buffers["c"]
    if split == 1:
        return c
    name = f"partials{split}"
    if name not in buffers.tensors:
        buffers.tensors[name] = torch.empty(split, *c.shape, dtype=torch.float32,
                                            device=c.device)
    return buffers[name]


class MatmulKernel(Builtin, MatmulDeclaration):
    """C = A @ B for M×K and K×N matrices by a persistent Triton kernel, tile sizes, tile
    order, split-K, pipeline depth and the TMA variant swept.  Checked against the float64
    product of the same inputs (dequantised for float8_e4m3fn), projected on random
    columns (:meth:`check`): an element left unwritten
    (the NaN poison) fails, and so does a relative error above the dtype's ``TOLERANCE``,
    as a right product differs from the exact one only by rounding."""

    bodies = (_matmul_body, _reduce_body)
    outputs = ("c",)

    def allocate(self, problem: Problem, device: str) -> Buffers:
        m, n, k = mnk(problem)
        dtype, fp8 = getattr(torch, problem.dtype), problem.dtype == FP8
        tensors = {"a": torch.empty(m, k, dtype=dtype, device=device),
                   "b": torch.empty(n, k, dtype=dtype, device=device).t() if fp8 else
                   torch.empty(k, n, dtype=dtype, device=device),
                   "c": torch.empty(m, n, dtype=torch.bfloat16 if fp8 else dtype, device=device)}
        if fp8:
            # A's, B's and their product, a row of 16 bytes each: cuBLASLt (the _scaled_mm
            # baseline) refuses a scale whose address is not 16-byte aligned
            tensors["scales"] = torch.ones(3, 4, dtype=torch.float32, device=device)
        return Buffers(problem, tensors)

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        if buffers.problem.dtype != FP8:
            for name in ("a", "b"):
                buffers[name].normal_(generator=generator)
            return
        scales = buffers["scales"]
        for i, name in enumerate(("a", "b")):
            drawn = torch.empty(buffers[name].shape, device=scales.device).normal_(
                generator=generator)
            scales[i, 0] = drawn.abs().max() / FP8_MAX
            buffers[name].copy_(drawn / scales[i, 0])
        scales[2, 0] = scales[0, 0] * scales[1, 0]

    def refusal(self, config: Config, device: str) -> str | None:
        return refusal(config, torch.cuda.get_device_capability() if device == "cuda" else None)

    def int32_reach(self, config: Config) -> dict[str, int]:
        """The index expressions of ``_matmul_body`` and ``_reduce_body`` computed in int32
        that can pass 2**31, with the largest value each reaches at ``config``: the work-unit
        loop's counter always, the pointer offsets of A, B and C without TMA (a descriptor
        addresses in 64 bits), the partial sums' with split-K.  Lanes past M, N or K are
        masked, so only offsets of elements inside the matrices count."""
        meta, (m, n, k) = meta_of(config), mnk(config.problem)
        split = meta["SPLIT_K"]
        units = -(-m // meta["BLOCK_M"]) * -(-n // meta["BLOCK_N"]) * split
        counter = f"unit + grid (the work-unit loop's counter; grid <= {2**31 - units} keeps it)"
        reach = {counter: units - 1 + config.grid}
        if not meta["TMA"]:
            reach.update({"rm * K + rk (A's offsets; TMA=1 has none)": m * k - 1,
                          "rk * SBK + rn * SBN (B's offsets; TMA=1 has none)": k * n - 1,
                          "rm * N + rn (C's offsets; TMA=1 has none)": m * n - 1})
        if split > 1:
            reach["(unit // tiles) * M * N + rm * N + rn (the partial sums' offsets)"] = \
                split * m * n - 1
        return reach

    def launch(self, buffers: Buffers, config: Config) -> None:
        a, b, c = buffers["a"], buffers["b"], buffers["c"]
        meta = meta_of(config)
        m, k, n, split = a.shape[0], a.shape[1], b.shape[1], meta.pop("SPLIT_K")
        scaled = "scales" in buffers.tensors
        scale = buffers["scales"][2] if scaled else c        # unread when not scaled
        partials = workspace(buffers, split)
        b_t = b.stride(0) == 1 and b.stride(1) != 1             # stored N x K
        operands: tuple[Any, Any, Any] = (a, b, c)
        if meta["TMA"]:
            bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
            operands = (descriptor(a, [bm, bk]),
                        descriptor(b.t(), [bn, bk]) if b_t else descriptor(b, [bk, bn]),
                        descriptor(c, [bm, bn // 2 if meta["EPILOGUE_SUBTILE"] else bn]))
        interpret = not a.is_cuda
        jitted(_matmul_body, interpret)[(config.grid,)](
            *operands, partials, scale, M=m, N=n, K=k, SBK=b.stride(0), SBN=b.stride(1),
            SPLIT_K=split, B_T=b_t, SCALED=scaled, num_warps=config.num_warps, **meta)
        if split > 1:
            jitted(_reduce_body, interpret)[(-(-m * n // REDUCE_BLOCK),)](
                partials, c, scale, MN=m * n, SPLIT_K=split, BLOCK=REDUCE_BLOCK,
                SCALED=scaled, num_warps=4)

    def model(self, config: Config, facts: DeviceFacts) -> float | None:
        m = meta_of(config)
        return tiled(config, facts.sms, mnk(config.problem), m["BLOCK_M"], m["BLOCK_N"],
                     m["BLOCK_K"], m["num_stages"], split_k=m["SPLIT_K"],
                     epilogue=epilogue_bytes(config), tma=bool(m["TMA"]),
                     flatten=bool(m["FLATTEN"]))

    def check(self, buffers: Buffers) -> str | None:
        c = buffers["c"]
        if torch.isnan(c).any():
            return f"{int(torch.isnan(c).sum())} of {c.numel()} elements were never written"
        # Freivalds' check: C x against A (B x) for random columns x, in float64.  The
        # relative error of the products estimates that of C against the exact A B (the
        # Frobenius norms: E|E x|^2 = |E|^2 for Gaussian x), at the cost of matrix-vector
        # products, not of a float64 matrix product (18 ms for 8192³ on the H200).
        x = torch.randn(c.shape[1], PROJECTIONS, dtype=torch.float64, device=c.device)
        a, b = buffers["a"].double(), buffers["b"].double()
        if "scales" in buffers.tensors:
            a, b = a * buffers["scales"][0, 0].double(), b * buffers["scales"][1, 0].double()
        ref = a @ (b @ x)
        err = float((c.double() @ x - ref).norm() / ref.norm())
        limit = TOLERANCE.get(buffers.problem.dtype, 1e-2)
        return None if err <= limit else f"relative error {err:.3g} > {limit:g}"

    def baseline(self, buffers: Buffers) -> None:
        if "scales" not in buffers.tensors:
            torch.matmul(buffers["a"], buffers["b"], out=buffers["c"])
            return
        # fast accumulation: the same imprecise fp8 accumulation as Triton's on sm_90
        scales = buffers["scales"]
        torch._scaled_mm(buffers["a"], buffers["b"], scale_a=scales[0, 0], scale_b=scales[1, 0],
                         out_dtype=torch.bfloat16, use_fast_accum=True, out=buffers["c"])
