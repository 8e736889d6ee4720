"""The built-in matmul's variants on the interpreter: split-K (a float32 workspace reduced by
a second launch), the grouped tile order, the TMA variant, float8_e4m3fn with scaled
inputs and a bfloat16 C; the configs a GPU cannot run, refused with one line; the model's
split-K guess; old replay tables that predate the new meta-parameters."""

from __future__ import annotations

import pytest
import torch

from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.errors import SpaceError
from sweeper.kernels import load_kernel, matmul
from sweeper.kernels.matmul import refusal
from sweeper.space import Config, Problem, parse_space
from sweeper.store import StudyStore
from tests.conftest import H200, ROOT

META = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "num_stages": 2, "GROUP_M": 1,
        "SPLIT_K": 1, "TMA": 0, "EPILOGUE_SUBTILE": 0, "FLATTEN": 0}


def problem(dtype: str, m: int, n: int, k: int) -> Problem:
    return Problem(dtype, max(m * k, k * n, m * n), (("M", m), ("N", n), ("K", k)))


def launched(dtype: str, shape: tuple[int, int, int], grid: int = 5, **meta: int):
    """The kernel and the buffers of one launch of ``meta`` on fresh inputs."""
    open_device("interpret")
    kernel = load_kernel("matmul")
    config = Config(problem=problem(dtype, *shape), grid=grid, block=128,
                    meta={**META, **meta})
    assert kernel.refusal(config, "cpu") is None
    buffers = kernel.allocate(config.problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, config)
    return kernel, buffers, config


def test_the_check_reads_the_relative_error_through_random_projections():
    """The projected error tracks the true relative (Frobenius) error: an output off by
    half the tolerance passes, one off by twice fails, and so does one wrong tile alone;
    fresh random columns each check, so no output can be made to fit them."""
    kernel, buffers, _ = launched("float32", (64, 48, 64))
    assert kernel.check(buffers) is None
    exact = buffers["a"].double() @ buffers["b"].double()
    noise = torch.randn(exact.shape, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(3))
    limit = 2e-3                                     # TOLERANCE["float32"]
    for scale, passes in ((0.5, True), (2.0, False)):
        buffers["c"].copy_(exact + noise * (scale * limit * exact.norm() / noise.norm()))
        wrong = kernel.check(buffers)
        assert (wrong is None) is passes, (scale, wrong)
    buffers["c"].copy_(exact)
    buffers["c"][:16, :16] = 0.0                     # one 16 x 16 tile never computed
    assert kernel.check(buffers).startswith("relative error")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("split", [2, 3, 5])
def test_split_k_verifies_at_non_square_shapes_with_k_no_multiple_of_its_slices(dtype, split):
    # K = 200: 13 steps of BLOCK_K = 16, so no split divides it; grid 5 < units (persistent)
    kernel, buffers, _ = launched(dtype, (48, 40, 200), SPLIT_K=split)
    assert kernel.check(buffers) is None
    assert tuple(buffers[f"partials{split}"].shape) == (split, 48, 40)
    assert buffers[f"partials{split}"].dtype == torch.float32


def test_split_k_adds_every_slice_in_a_fixed_order():
    kernel, buffers, config = launched("float32", (48, 40, 200), SPLIT_K=3)
    first = buffers["c"].clone()
    kernel.launch(buffers, config)
    assert torch.equal(buffers["c"], first)              # deterministic: no atomics
    from sweeper.kernels._jit import jitted
    from sweeper.kernels._matmul_triton import _reduce_body

    buffers["partials3"][2].zero_()                      # drop the last slice of K
    jitted(_reduce_body, True)[(2,)](buffers["partials3"], buffers["c"], buffers["c"],
                                     MN=48 * 40, SPLIT_K=3, BLOCK=1024, SCALED=False)
    assert kernel.check(buffers).startswith("relative error ")


@pytest.mark.parametrize("group", [1, 2, 3, 8])
def test_every_grouped_tile_order_covers_c_once(group):
    # 7 x 3 tiles of 16 x 32 (M = 100 and N = 70 are no multiples): a group of 2 or 8 rows
    # leaves a short last group; grid 4 makes each program take several tiles
    kernel, buffers, _ = launched("float16", (100, 70, 48), grid=4, GROUP_M=group, FLATTEN=1)
    assert kernel.check(buffers) is None


@pytest.mark.parametrize("meta", [{"TMA": 1}, {"TMA": 1, "EPILOGUE_SUBTILE": 1},
                                  {"TMA": 1, "SPLIT_K": 2, "GROUP_M": 2}])
@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3fn"])
def test_the_tma_variant_verifies_on_the_interpreter(dtype, meta):
    kernel, buffers, _ = launched(dtype, (48, 40, 96), **meta)
    assert kernel.check(buffers) is None


def test_fp8_scales_its_inputs_writes_bf16_and_matches_scaled_mm():
    kernel, buffers, config = launched("float8_e4m3fn", (48, 40, 200), SPLIT_K=2)
    a, b, c, scales = buffers["a"], buffers["b"], buffers["c"], buffers["scales"]
    assert a.dtype == b.dtype == torch.float8_e4m3fn and c.dtype == torch.bfloat16
    assert b.shape == (200, 40) and b.stride() == (1, 200)        # K contiguous
    assert float(a.float().abs().max()) == float(b.float().abs().max()) == 448.0
    assert float(scales[2, 0]) == pytest.approx(float(scales[0, 0] * scales[1, 0]))
    assert all(scales[i, 0].data_ptr() % 16 == 0 for i in range(3))  # as cuBLASLt needs
    assert kernel.check(buffers) is None
    ours = c.clone().float()
    kernel.baseline(buffers)                                      # torch._scaled_mm
    assert kernel.check(buffers) is None
    assert float((ours - c.float()).norm() / c.float().norm()) < 1e-2
    c[47, 39] += 1000.0
    assert kernel.check(buffers).startswith("relative error ")
    kernel.poison(buffers)
    assert kernel.check(buffers) == "1920 of 1920 elements were never written"
    assert kernel.bytes_moved(config.problem) == 48 * 200 + 200 * 40 + 48 * 40 * 2


def test_a_config_the_device_cannot_run_is_refused_with_one_line(monkeypatch):
    monkeypatch.setattr(matmul, "interpreter_dot_wrong", lambda: True)

    def why(dtype="bfloat16", shape=(64, 64, 64), capability=(9, 0), **meta):
        return refusal(Config(problem=problem(dtype, *shape), grid=4, block=128,
                              meta={**META, **meta}), capability)

    assert why() is None and why(TMA=1) is None and why("float8_e4m3fn", TMA=1) is None
    assert why(SPLIT_K=5) == ("SPLIT_K=5 leaves slices of K with nothing to add: K=64 is 4 "
                              "step(s) of BLOCK_K=16; allowed: SPLIT_K <= 4")
    assert why(EPILOGUE_SUBTILE=1) == ("EPILOGUE_SUBTILE=1 splits the TMA store of C; "
                                       "allowed with TMA=1, SPLIT_K=1")
    assert why("float8_e4m3fn", capability=(8, 0)) == (
        "float8_e4m3fn needs fp8 tensor cores: compute capability 8.9 or later; this GPU "
        "has 8.0")
    assert why("float8_e4m3fn", capability=(8, 9)) is None
    assert why(TMA=1, capability=(8, 9)) == (
        "TMA=1 needs the tensor memory accelerator: compute capability 9.0 or later; this "
        "GPU has 8.9; allowed: TMA=0")
    assert why(shape=(64, 60, 100), TMA=1) == (
        "TMA=1 addresses rows in multiples of 16 bytes; the rows of A (200 bytes), B (120 "
        "bytes), C (120 bytes) are not; allowed: TMA=0 for M=64 N=60 K=100")
    assert why("float8_e4m3fn", (64, 40, 100), TMA=1).startswith(
        "TMA=1 addresses rows in multiples of 16 bytes; the rows of A (100 bytes), B (100 "
        "bytes) are not")                       # C is bfloat16: 80 bytes a row
    assert why("float16", (64, 60, 100), capability=None) is None    # no TMA: any shape
    # the interpreter's bfloat16 tl.dot is off by some 1e10: every trial a wrong answer
    assert why(capability=None) == (
        "the Triton interpreter's tl.dot of bfloat16 tiles gives wrong products; allowed on "
        "the interpreter: dtype float16 or float32 (-p dtype=float32), bfloat16 on a GPU")
    assert why("float8_e4m3fn", capability=None) is None     # its C is bfloat16: no dot


@pytest.mark.parametrize("wrong", [True, False])
def test_bfloat16_is_refused_on_the_interpreter_only_where_its_dot_computes_wrong(
        monkeypatch, wrong):
    """The refusal follows a probe of the interpreter's bfloat16 ``tl.dot``, not a
    belief: a Triton whose interpreter multiplies right runs bfloat16 configs there."""
    monkeypatch.setattr(matmul, "interpreter_dot_wrong", lambda: wrong)
    config = Config(problem=problem("bfloat16", 64, 64, 64), grid=4, block=128, meta=META)
    assert refusal(config, None) == (
        "the Triton interpreter's tl.dot of bfloat16 tiles gives wrong products; allowed on "
        "the interpreter: dtype float16 or float32 (-p dtype=float32), bfloat16 on a GPU"
        if wrong else None)
    assert refusal(config, (9, 0)) is None                    # a GPU never asks the probe


def test_the_interpreter_probe_runs_once_a_process_and_tells_a_wrong_product(monkeypatch):
    """The probe runs a real bfloat16 product on the interpreter once (cached), and calls
    the interpreter wrong where the product is off or cannot be run at all."""
    matmul.interpreter_dot_wrong.cache_clear()
    first = matmul.interpreter_dot_wrong()
    assert isinstance(first, bool)
    monkeypatch.setattr(matmul, "jitted", lambda *a: pytest.fail("probed twice"))
    assert matmul.interpreter_dot_wrong() is first
    matmul.interpreter_dot_wrong.cache_clear()

    class Broken:
        def __getitem__(self, grid):
            def launch(a, b, c, n):
                c.copy_(a.float() @ b.float() * 1e10)     # Triton 3.9's interpreter's error
            return launch

    monkeypatch.setattr(matmul, "jitted", lambda fn, interpret: Broken())
    assert matmul.interpreter_dot_wrong() is True
    matmul.interpreter_dot_wrong.cache_clear()

    class Right:
        def __getitem__(self, grid):
            return lambda a, b, c, n: c.copy_(a.float() @ b.float())

    monkeypatch.setattr(matmul, "jitted", lambda fn, interpret: Right())
    assert matmul.interpreter_dot_wrong() is False
    matmul.interpreter_dot_wrong.cache_clear()


def interpreted(tmp_path, monkeypatch, study: str, params: str) -> list:
    """The trials of a float16 matmul space of ``params`` (YAML lines) run on the
    interpreter, exhaustively, two samples a config."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        f"study: {study}\nkernel: matmul\nsampler: exhaustive\nparams:\n  block: [128]\n"
        f"{params}  num_stages: [2]\n  dtype: [float16]\n"
        "measure: {warmup: 1, repeat: 2, stop: fixed}\n")
    assert main(["run", "s.yaml", "--device", "interpret", "--quiet", "--no-report"]) == 0
    return StudyStore(tmp_path / "studies" / f"{study}-interpret").records()[0]


def test_a_refused_config_is_an_invalid_trial_and_the_sweep_goes_on(tmp_path, monkeypatch):
    trials = interpreted(tmp_path, monkeypatch, "split",
                         "  grid: [4]\n  M: [32]\n  N: [32]\n  K: [64]\n  BLOCK_M: [16]\n"
                         "  BLOCK_N: [16]\n  BLOCK_K: [16]\n  SPLIT_K: [1, 2, 8]\n")
    by_split = {t.config.meta["SPLIT_K"]: t for t in trials}
    assert by_split[1].ok and by_split[2].ok
    assert by_split[8].status.value == "invalid"
    assert by_split[8].reason == ("SPLIT_K=8 leaves slices of K with nothing to add: K=64 "
                                  "is 4 step(s) of BLOCK_K=16; allowed: SPLIT_K <= 4")


@pytest.mark.parametrize("text, message", [
    ("kernel: copy\nparams:\n  dtype: [float32, float8_e4m3fn]\n",
     "s.yaml:3: params.dtype[1]: copy takes no float8_e4m3fn; allowed: float64, float32, "
     "float16, bfloat16, int64, int32, int16, int8, uint8"),
    ("kernel: matmul\nparams:\n  dtype: [int8]\n",
     "s.yaml:3: params.dtype[0]: matmul takes no int8; allowed: float64, float32, float16, "
     "bfloat16, float8_e4m3fn"),
    ("kernel: matmul\nparams:\n  dtype: [fp9]\n",
     "s.yaml:3: params.dtype[0]: unknown dtype 'fp9'; allowed: float64, float32, float16, "
     "bfloat16, float8_e4m3fn (or an alias: fp32, bf16, ...); did you mean 'fp8'?"),
    ("kernel: matmul\nparams:\n  TMA: [0, 2]\n",
     "s.yaml:3: params.TMA[1]: 2 is not a value of matmul's TMA; allowed: 0, 1"),
    ("kernel: matmul\nparams:\n  SPLIT_K: [0]\n", "s.yaml:3: params.SPLIT_K[0]: 0 must be "
     "positive; allowed: a positive integer, e.g. 1"),
])
def test_dtypes_and_switches_a_kernel_does_not_take_are_refused_at_their_line(text, message):
    with pytest.raises(SpaceError) as info:
        parse_space(text, file="s.yaml")
    assert str(info.value) == message


def test_fp8_and_the_new_switches_parse_for_matmul():
    space = parse_space("kernel: matmul\nparams:\n  dtype: [float8_e4m3fn]\n  TMA: [0, 1]\n"
                        "  SPLIT_K: [1, 4]\n  GROUP_M: [1, 8]\n", file="s.yaml")
    assert space.axis("dtype").labels == ("float8_e4m3fn",)
    assert space.axis("TMA").labels == ("0", "1") and space.size == 8


def test_the_model_splits_k_where_tiles_are_fewer_than_the_sms():
    kernel = load_kernel("matmul")

    def guess(shape: tuple[int, int, int], split: int) -> float:
        config = Config(problem=problem("bfloat16", *shape), grid=132, block=256,
                        meta={**META, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64,
                              "num_stages": 3, "SPLIT_K": split})
        return kernel.model(config, H200)

    # 64 tiles of 128 x 128 on 132 SMs: two slices of K fill them, twice as fast or near
    assert guess((1024, 1024, 16384), 2) > 1.6 * guess((1024, 1024, 16384), 1)
    # 4096 tiles at 8192^3 already fill them: splitting only adds the reduction
    assert guess((8192, 8192, 8192), 2) < guess((8192, 8192, 8192), 1)


def test_the_model_rates_tma_loads_above_pointer_loads_of_the_same_tile():
    """On every recorded H200 table with a TMA axis the best configs load through TMA;
    the model rates a config with it above the same without (the tile's time at
    ``TMA_LOADS``), so its favourites are not twice as many as they need be."""
    from sweeper.kernels._guess import TMA_LOADS

    kernel = load_kernel("matmul")

    def guess(tma: int) -> float:
        config = Config(problem=problem("bfloat16", 6144, 6144, 6144), grid=132, block=256,
                        meta={**META, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                              "num_stages": 3, "TMA": tma})
        return kernel.model(config, H200)

    assert TMA_LOADS < 1
    assert guess(0) < guess(1) < guess(0) / TMA_LOADS


def test_a_flattened_loop_saves_each_tile_the_pipelines_fill():
    """A flattened loop issues the next tile's loads while this one's last steps multiply:
    it saves one fill a tile, much of a tile of few K steps and little of a long one (on
    the H200 0.77 of the time at 4 steps, 0.99-1.00 at 96-224)."""
    kernel = load_kernel("matmul")

    def guess(k: int, flatten: int) -> float:
        config = Config(problem=problem("bfloat16", 8192, 8192, k), grid=132, block=256,
                        meta={**META, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                              "num_stages": 3, "TMA": 1, "FLATTEN": flatten})
        return kernel.model(config, H200)

    short, long = guess(256, 1) / guess(256, 0), guess(14336, 1) / guess(14336, 0)
    assert short > 1.15 and 1.0 < long < 1.01


def test_a_table_recorded_before_the_new_meta_parameters_replays_at_their_defaults(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    table = f"replay:{ROOT / 'tests/data/replay/h200-matmul.csv'}"
    base = ("kernel: matmul\nsampler: exhaustive\nparams:\n  grid: [sms]\n  block: [256]\n"
            "  BLOCK_M: [128]\n  BLOCK_N: [128]\n  BLOCK_K: [64]\n  num_stages: [3]\n"
            "  dtype: [bfloat16]\n  footprint: [32MiB]\n")
    (tmp_path / "old.yaml").write_text("study: old\n" + base)
    assert main(["run", "old.yaml", "--device", table, "--quiet", "--no-report"]) == 0
    (tmp_path / "new.yaml").write_text("study: new\n" + base + "  SPLIT_K: [1, 2]\n")
    assert main(["run", "new.yaml", "--device", table, "--quiet"]) == 2
    assert "no column 'SPLIT_K' for the axis SPLIT_K of new.yaml" in capsys.readouterr().err


def test_a_space_file_names_dtypes_as_sweeper_tuned_does():
    """The aliases ``tuned`` takes (``fp8``, ``bf16``, ``torch.float16``) name the same
    dtypes in a space file; labels and studies keep torch's names."""
    space = parse_space("kernel: matmul\nparams:\n  dtype: [fp8, bf16, torch.float16]\n",
                        file="s.yaml")
    assert list(space.choices()["dtype"]) == ["float8_e4m3fn", "bfloat16", "float16"]


def test_a_footprint_space_runs_square_on_the_interpreter(tmp_path, monkeypatch):
    """On the interpreter (16 KiB cap) a matmul sized by ``footprint:`` was lowered to the
    largest power of two elements under the cap, 8192 of float16: no square, so every
    config was refused ('is no problem of this kernel').  The problem's own dimensions
    shrink now, by one factor: 4096² stays square and a power of two (64²), 1000² stays
    square and none (90²), and the configs run and verify."""
    trials = interpreted(tmp_path, monkeypatch, "square", "  BLOCK_M: [32]\n  BLOCK_N: [32]\n"
                         "  BLOCK_K: [32]\n  footprint: [32MiB, 2000000]\n")
    assert sorted((t.status.value, t.config.problem.dims) for t in trials) == [
        ("ok", (("M", 64), ("N", 64), ("K", 64))), ("ok", (("M", 90), ("N", 90), ("K", 90)))]
