"""Grids and problems whose indices pass 2**31: every built-in either computes them safely
(offsets widened to int64 where they can pass it) or refuses the launch as an invalid
trial with its reason, before anything is allocated; none writes outside its buffers.

A launch of 2**31 - 1 programs cannot run on the interpreter in a test's time, so the
launches here run a chosen few of its program ids (:func:`only_programs`): every program
that has work, and the last ones, whose ``program_id * BLOCK`` wraps in int32.  That is
all the work the launch has: the kernel's own check must then pass, and the guard bytes
around every buffer must be as they were.  The launches run in a child process, so a
wild store shows as a failing exit code (``malloc(): unaligned tcache chunk``, a
segfault) instead of killing pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from sweeper.kernels._base import INT32_MAX, wide_offsets
from tests.conftest import ROOT

#: The largest grid a launch takes (CUDA's limit on a grid's x dimension).
HUGE = 2**31 - 1
#: Elements of guard around each buffer: more than the widest BLOCK a case uses, so a
#: store that wraps to just below a buffer lands in them.
GUARD = 1 << 13


@contextlib.contextmanager
def only_programs(ids: Sequence[int]) -> Iterator[list[int]]:
    """Within it, an interpreted launch runs programs ``ids`` of its grid, and no other:
    each sees its id from ``ids`` and ``num_programs`` as the grid launched; yields the
    grids launched."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.interpreter import interpreter_builder as builder

    run, grids = InterpretedFunction.run, []

    def run_some(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        grids.append(grid[0])
        return run(self, *args, grid=(len(ids),), warmup=warmup, **kwargs)

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        builder.grid_dim = (grids[-1], ny, nz)

    def set_grid_idx(x: int, y: int, z: int) -> None:
        builder.grid_idx = (ids[x], y, z)

    InterpretedFunction.run = run_some               # type: ignore[method-assign]
    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
    try:
        yield grids
    finally:
        InterpretedFunction.run = run                 # type: ignore[method-assign]
        del builder.set_grid_dim, builder.set_grid_idx


def guarded(buffers: Any) -> tuple[Any, dict[str, Any]]:
    """``buffers`` with each tensor moved into the middle of a larger one whose
    :data:`GUARD` elements either side hold a known pattern; and those larger tensors."""
    import torch

    moved, outer = {}, {}
    for name, t in buffers.tensors.items():
        whole = torch.full((GUARD + t.numel() + GUARD,), 7, dtype=t.dtype)
        inner = whole[GUARD:GUARD + t.numel()].view(t.shape)
        inner.copy_(t)
        moved[name], outer[name] = inner, whole
    return type(buffers)(buffers.problem, moved), outer


def guards_hit(outer: dict[str, Any]) -> list[str]:
    """The tensors whose guard bytes something changed."""
    import torch

    hit = []
    for name, whole in outer.items():
        pattern = torch.full((GUARD,), 7, dtype=whole.dtype).view(torch.uint8)
        if not (torch.equal(whole[:GUARD].view(torch.uint8), pattern) and
                torch.equal(whole[-GUARD:].view(torch.uint8), pattern)):
            hit.append(name)
    return hit


#: kernel, dimensions, dtype, meta, the programs with work (the others have none).
CASES: dict[str, tuple[str, dict[str, int], str, dict[str, int], int]] = {
    "copy": ("copy", {"n": 3000}, "float32", {"BLOCK": 1024}, 3),
    "add": ("add", {"n": 3000}, "float32", {"BLOCK": 1024}, 3),
    "scale": ("scale", {"n": 3000}, "float32", {"BLOCK": 1024}, 3),
    "copy-strided": ("copy-strided", {"n": 3000, "stride": 7, "linecross": 0}, "float32",
                     {"BLOCK": 1024}, 3),
    "copy-strided-linecross": ("copy-strided", {"n": 3000, "stride": 6, "linecross": 1},
                               "float32", {"BLOCK": 1024}, 3),
    "softmax": ("softmax", {"rows": 3, "cols": 100}, "float32", {"BLOCK": 128}, 3),
    "softmax-two-pass": ("softmax", {"rows": 3, "cols": 100}, "float32", {"BLOCK": 32}, 3),
}


def run_case(case: str) -> dict[str, Any]:
    """Launch ``case`` with a grid of :data:`HUGE` programs, running those with work and
    the last two: what the kernel's check and the guards say."""
    import torch

    from sweeper.kernels import load_kernel
    from sweeper.space import DTYPES, Config, Problem

    name, dims, dtype, meta, working = CASES[case]
    kernel = load_kernel(name)
    footprint = DTYPES[dtype]
    for size in dims.values():
        footprint *= size if size > 1 else 1
    problem = Problem(dtype, footprint, tuple(dims.items()))
    config = Config(problem=problem, grid=HUGE, block=128, meta=meta, cache="warm")
    refused = kernel.cannot_launch(config, "cpu")
    if refused is not None:
        return {"case": case, "refused": refused}
    buffers, outer = guarded(kernel.allocate(problem, "cpu"))
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    kernel.poison(buffers)
    with only_programs([*range(working), HUGE - 2, HUGE - 1]) as grids:
        kernel.launch(buffers, config)
    return {"case": case, "grids": grids, "check": kernel.check(buffers),
            "guards_hit": guards_hit(outer)}


def main(cases: Sequence[str]) -> None:
    """Run ``cases``, one JSON line each."""
    for case in cases:
        print(json.dumps(run_case(case)), flush=True)


def run_child(cases: Sequence[str]) -> tuple[int | str, list[dict[str, Any]], str]:
    """Run ``cases`` in a child process on the interpreter: its exit code (``"hung"``
    past the time a few programs take), the results it printed, its stderr's end."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; from tests.test_hostile_indices import main; "
                                   "main(sys.argv[1:])", *cases],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else err.stdout or ""
        return "hung", [json.loads(line) for line in out.splitlines()], ""
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, results, proc.stderr[-2000:]


def test_the_largest_grid_writes_nothing_outside_the_buffers() -> None:
    """Grid 2**31 - 1: the programs with work do all of it, the last ones (whose int32
    ``program_id * BLOCK`` wraps negative) nothing, and no store lands outside."""
    rc, results, err = run_child(list(CASES))
    assert rc == 0, f"the child ended with {rc} after {len(results)} case(s): {err}"
    assert [r["case"] for r in results] == list(CASES)
    for r in results:
        assert r.get("refused") is None, r
        assert r["grids"] == [HUGE], r
        assert r["check"] is None, r
        assert r["guards_hit"] == [], r


def test_offsets_widen_only_where_int32_cannot_hold_them() -> None:
    assert not wide_offsets(INT32_MAX + 1 - 1024 * 4, 4, 1024)    # reaches INT32_MAX exactly
    assert wide_offsets(INT32_MAX + 2 - 1024 * 4, 4, 1024)
    assert wide_offsets(3000, HUGE, 1)                            # the stride alone passes
    assert wide_offsets(2**31, 1, 1)                              # so does the problem


@pytest.mark.parametrize("grid, wide", [(3, False), (HUGE, True)])
def test_a_launch_that_fits_int32_compiles_the_int32_code(monkeypatch, grid, wide) -> None:
    """``WIDE`` is what a launch passes, so a launch that fits int32 keeps the code (and
    the compiled kernel) it always had on a GPU."""
    from triton.runtime.interpreter import InterpretedFunction

    from sweeper.kernels import load_kernel
    from sweeper.space import Config, Problem

    seen = []
    monkeypatch.setattr(InterpretedFunction, "run",
                        lambda self, *a, grid, warmup, **kw: seen.append(kw["WIDE"]))
    for name, dims in [("copy", {"n": 3000}), ("add", {"n": 3000}), ("scale", {"n": 3000}),
                       ("copy-strided", {"n": 3000, "stride": 1, "linecross": 0}),
                       ("softmax", {"rows": 30, "cols": 100})]:
        kernel = load_kernel(name)
        problem = Problem("float32", 12000, tuple(dims.items()))
        kernel.launch(kernel.allocate(problem, "cpu"),
                      Config(problem=problem, grid=grid, block=128, meta={"BLOCK": 1024}))
    assert seen == [wide] * 5


def matmul_config(grid: int, m: int = 64, n: int = 64, k: int = 64, **meta: int) -> Any:
    from sweeper.space import Config, Problem

    problem = Problem("float16", max(m * k, k * n, m * n) * 2, (("M", m), ("N", n), ("K", k)))
    return Config(problem=problem, grid=grid, block=128,
                  meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, **meta})


def test_matmul_refuses_what_its_int32_indices_cannot_reach() -> None:
    """matmul keeps its per-element offsets in int32 (widening them costs every tile), so
    it declares what they reach and the launch is refused where that passes int32."""
    from sweeper.kernels import load_kernel

    kernel = load_kernel("matmul")
    assert kernel.cannot_launch(matmul_config(4), "cpu") is None
    assert kernel.cannot_launch(matmul_config(HUGE - 4), "cpu") is None   # 4 units: fits
    refused = kernel.cannot_launch(matmul_config(HUGE), "cpu")
    assert refused is not None and "unit + grid" in refused and "2147483650" in refused
    big = dict(m=65536, n=64, k=65536)                         # A: 2**32 elements
    refused = kernel.cannot_launch(matmul_config(4, **big), "cpu")
    assert refused is not None and "A's offsets" in refused and "4294967295" in refused
    assert kernel.cannot_launch(matmul_config(4, **big, TMA=1), "cpu") is None
    square = dict(m=32768, n=32768, k=128, TMA=1)              # C: 2**30 elements
    assert kernel.cannot_launch(matmul_config(4, **square, SPLIT_K=2), "cpu") is None
    refused = kernel.cannot_launch(matmul_config(4, **square, SPLIT_K=4), "cpu")
    assert refused is not None and "partial sums" in refused


def test_a_grid_past_int32_is_an_invalid_trial_and_the_sweep_goes_on(write_space,
                                                                      tmp_path) -> None:
    """Through ``sweeper run`` on the interpreter: a grid past what CUDA takes is ruled out
    as the space is resolved, one whose indices would wrap is refused before anything is
    allocated; each is an invalid trial with its reason, never a crash."""
    from sweeper.store import StudyStore
    from tests.conftest import run_sweeper_process

    space = write_space("""
        study: huge-grid
        kernel: matmul
        sampler: exhaustive
        params:
          grid: [2147483647, 2147483648, 4]
          BLOCK_M: [32]
          BLOCK_N: [32]
          BLOCK_K: [32]
          M: [64]
          N: [64]
          K: [64]
          dtype: [float32]
        measure: {warmup: 1, repeat: 1}
    """)
    proc, launched = run_sweeper_process(space, "interpret", tmp_path / "studies",
                                         "huge-grid-interpret", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [t.choice["grid"] for t in launched] == ["4"] and launched[0].ok
    reasons = {t.choice["grid"]: t.reason
               for t in StudyStore(tmp_path / "studies" / "huge-grid-interpret").records()[0]}
    assert "unit + grid" in reasons["2147483647"] and "int32" in reasons["2147483647"]
    assert "allowed: 1 to 2147483647" in reasons["2147483648"]
