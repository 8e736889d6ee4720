"""On a CUDA GPU (Hopper: compute capability 9.0 for TMA, 8.9 for fp8): the matmul's
split-K at the K ≫ M, N shape, the TMA variant and float8_e4m3fn, verified and compared
with torch's own product."""

from __future__ import annotations

import pytest
import torch

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.space import Config, Problem

pytestmark = pytest.mark.gpu

META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3, "GROUP_M": 1,
        "SPLIT_K": 1, "TMA": 0, "EPILOGUE_SUBTILE": 0, "FLATTEN": 0}


def launched(dtype: str, shape: tuple[int, int, int], grid: int, block: int = 256,
             **meta: int):
    """The kernel, buffers and config of one verified-ready launch on the GPU."""
    open_device("cuda")
    kernel = load_kernel("matmul")
    m, n, k = shape
    problem = Problem(dtype, max(m * k, k * n, m * n), (("M", m), ("N", n), ("K", k)))
    config = Config(problem=problem, grid=grid, block=block, meta={**META, **meta})
    assert kernel.refusal(config, "cuda") is None
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, config)
    torch.cuda.synchronize()
    return kernel, buffers, config


def relative(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return float((ours.float() - theirs.float()).norm() / theirs.float().norm())


@pytest.mark.parametrize("split, grid", [(2, 132), (4, 256), (8, 132)])
def test_split_k_at_1024_1024_16384_verifies_matches_torch_and_repeats_bit_for_bit(split, grid):
    kernel, buffers, config = launched("bfloat16", (1024, 1024, 16384), grid, SPLIT_K=split)
    assert kernel.check(buffers) is None
    ours = buffers["c"].clone()
    assert relative(ours, torch.matmul(buffers["a"], buffers["b"])) < 1e-2
    kernel.launch(buffers, config)
    torch.cuda.synchronize()
    assert torch.equal(buffers["c"], ours)


@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (1000, 1048, 2056)])
@pytest.mark.parametrize("meta", [
    {"BLOCK_N": 256, "GROUP_M": 8, "TMA": 1, "EPILOGUE_SUBTILE": 1, "FLATTEN": 1},
    {"BLOCK_N": 256, "GROUP_M": 8, "TMA": 1},
    {"GROUP_M": 8, "TMA": 1, "SPLIT_K": 2},
])
def test_the_tma_variant_verifies_and_matches_torch_matmul(shape, meta):
    # 1000 x 1048 x 2056: rows of 16-byte multiples, but no tile divides M, N or K
    kernel, buffers, _ = launched("bfloat16", shape, 132, **meta)
    assert kernel.check(buffers) is None
    assert relative(buffers["c"], torch.matmul(buffers["a"], buffers["b"])) < 1e-2


@pytest.mark.parametrize("meta", [{}, {"BLOCK_N": 256, "GROUP_M": 8, "TMA": 1},
                                  {"GROUP_M": 8, "TMA": 1, "EPILOGUE_SUBTILE": 1}])
def test_fp8_at_8192_cubed_verifies_and_matches_scaled_mm(meta):
    kernel, buffers, config = launched("float8_e4m3fn", (8192, 8192, 8192), 132,
                                       BLOCK_K=128, **meta)
    assert buffers["c"].dtype == torch.bfloat16
    assert kernel.check(buffers) is None
    ours = buffers["c"].clone()
    kernel.baseline(buffers)                                        # torch._scaled_mm
    torch.cuda.synchronize()
    assert kernel.check(buffers) is None
    assert relative(ours, buffers["c"]) < 2e-2
    assert kernel.flops(config.problem) == 2 * 8192 ** 3


def test_an_older_gpu_is_refused_the_variants_it_lacks():
    from sweeper.kernels.matmul import refusal

    major, minor = torch.cuda.get_device_capability()
    config = Config(problem=Problem("float8_e4m3fn", 1 << 20,
                                    (("M", 1024), ("N", 1024), ("K", 1024))),
                    grid=132, block=256, meta={**META, "TMA": 1})
    expected = refusal(config, (major, minor))
    assert load_kernel("matmul").refusal(config, "cuda") == expected
    assert (expected is None) == ((major, minor) >= (9, 0))


@pytest.mark.parametrize("dtype, meta", [
    # bf16, four stages of 128 x 256 x 64 operands (192 KiB): C's 64 KiB through TMA does
    # not fit beside them, half of it does, pointer stores need none
    ("bfloat16", {"BLOCK_N": 256, "num_stages": 4, "TMA": 1}),
    ("bfloat16", {"BLOCK_N": 256, "num_stages": 4, "TMA": 1, "EPILOGUE_SUBTILE": 1}),
    ("bfloat16", {"BLOCK_N": 256, "num_stages": 4}),
    # 128 x 128 x 128 operands: three stages (192 KiB) and C's 32 KiB fit, four do not
    ("bfloat16", {"BLOCK_K": 128, "num_stages": 3, "TMA": 1}),
    ("bfloat16", {"BLOCK_K": 128, "num_stages": 4, "TMA": 1, "EPILOGUE_SUBTILE": 1}),
    ("float32", {"num_stages": 4}),
    ("float32", {"num_stages": 3}),
])
def test_the_matmul_model_runs_out_of_shared_memory_where_triton_does(dtype, meta):
    """The model's guess is 0 (cannot launch) exactly where Triton refuses the launch for
    want of shared memory, the TMA store's staging of C included."""
    from triton.runtime.errors import OutOfResources

    from sweeper.trial import TrialStatus, classify

    m = n = k = 1024
    problem = Problem(dtype, m * k, (("M", m), ("N", n), ("K", k)))
    config = Config(problem=problem, grid=132, block=256, meta={**META, **meta})
    refused: OutOfResources | None = None
    try:
        launched(dtype, (m, n, k), 132, **meta)
    except OutOfResources as err:    # raised at the first launch
        refused = err
    fits = load_kernel("matmul").model(config, open_device("cuda").facts()) > 0
    assert fits == (refused is None), (meta, refused)
    if refused is not None:
        assert classify(refused)[0] is TrialStatus.OUT_OF_RESOURCES, refused
