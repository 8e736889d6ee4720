"""The kernel library's built-ins beyond copy, add and matmul (``scale``, ``copy-strided``,
``softmax``): each runs and verifies on the interpreter at small problems, a planted
wrong result is caught, and its bytes, FLOPs, model and example space hold."""

from __future__ import annotations

import dataclasses
import shlex

import pytest
import torch

from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.kernels import Buffers, load_kernel
from sweeper.kernels._guess import streaming
from sweeper.kernels._jit import jitted
from sweeper.kernels.scale import A, ScaleKernel, _replay_body, replayed
from sweeper.space import Config, MeasureSpec, Problem
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus, run_trial
from tests.conftest import H200, ROOT

MEASURE = MeasureSpec(warmup=2, repeat=3, stop="fixed")


def trial(kernel, problem: Problem, meta: dict, grid: int = 3):
    """``run_trial`` on the interpreter; returns the result and the buffers it ran on."""
    buffers = kernel.allocate(problem, "cpu")
    config = Config(problem=problem, grid=grid, block=128, meta=meta, cache="warm")
    result = run_trial(kernel, buffers, config, open_device("interpret"), MEASURE,
                       torch.Generator().manual_seed(0))
    return result, buffers


def run_example(name: str, tmp_path, capsys, trials: int = 3) -> list:
    """spaces/README.md's command for ``name``, in-process, a few trials; its study's
    launched trials."""
    from tests.test_spaces_folder import readme_rows

    argv = shlex.split(readme_rows()[name])[1:]
    argv[1] = str(ROOT / argv[1])
    assert main([*argv, "--trials", str(trials), "--studies-dir", str(tmp_path), "--quiet",
                 "--no-report"]) == 0
    capsys.readouterr()
    (study,) = tmp_path.iterdir()
    return [t for t in StudyStore(study).records()[0] if t.status is not TrialStatus.INVALID]


# -- scale ---------------------------------------------------------------------------------
def n_problem(dtype: str, n: int) -> Problem:
    return Problem(dtype, n * torch.finfo(getattr(torch, dtype)).bits // 8, (("n", n),))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_scale_verifies_after_its_timed_launches_multiplied_again(dtype):
    result, buffers = trial(load_kernel("scale"), n_problem(dtype, 3000), {"BLOCK": 256})
    assert result.status is TrialStatus.OK, result.reason
    # the check after the samples replayed exactly the launches timed since the poisoning
    assert int(buffers["launches"].item()) == len(result.samples_ms) == 3
    expected = buffers["start"].clone()
    for _ in range(3):
        expected.mul_(A)
    assert torch.equal(buffers["x"], expected) and not torch.equal(buffers["x"],
                                                                  buffers["start"])


class SkipsAfterFirst(ScaleKernel):
    """Counts every launch but scales only on the first after each poisoning: the kind
    of kernel the check after the timed samples exists to catch."""

    def poison(self, buffers: Buffers) -> None:
        super().poison(buffers)
        self.skip = False

    def launch(self, buffers: Buffers, config: Config) -> None:
        if self.skip:
            buffers["launches"].add_(1)
            return
        self.skip = True
        super().launch(buffers, config)


def test_scale_catches_a_kernel_that_stops_scaling_and_a_planted_wrong_value():
    result, _ = trial(SkipsAfterFirst(), n_problem("float32", 2048), {"BLOCK": 512})
    assert result.status is TrialStatus.WRONG_ANSWER and len(result.samples_ms) == 3
    assert result.reason.startswith(
        "the first launch was right, but the output after the timed samples (3) was wrong: "
        "2048 of 2048 elements differ from the start times 1.03125**3, the launches "
        "counted (first at index 0:")          # scaled once where three launches ran
    kernel = load_kernel("scale")
    result, buffers = trial(kernel, n_problem("float32", 2048), {"BLOCK": 512})
    assert result.status is TrialStatus.OK and kernel.check(buffers) is None
    buffers["x"][1000] += 1.0
    assert kernel.check(buffers).startswith(
        "1 of 2048 elements differ from the start times 1.03125**3, the launches counted "
        "(first at index 1000:")


@pytest.mark.filterwarnings("ignore:overflow encountered")     # the interpreter's numpy
def test_scale_replays_hundreds_of_launches_through_overflow_in_float16():
    kernel = load_kernel("scale")
    problem = n_problem("float16", 1024)
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(3))
    kernel.poison(buffers)
    config = Config(problem=problem, grid=1, block=128, meta={"BLOCK": 1024})
    for _ in range(400):
        kernel.launch(buffers, config)
    x = buffers["x"]
    assert torch.isinf(x).float().mean() > 0.5 and torch.isfinite(x).any()
    assert kernel.check(buffers) is None
    buffers["launches"].sub_(1)             # one launch fewer than ran: the values disagree
    assert "start times 1.03125**399" in kernel.check(buffers)


def torch_replay(start: torch.Tensor, launches: int) -> torch.Tensor:
    """``start`` times ``A``, ``launches`` times, by torch's ``mul_``: one pass a launch."""
    out = start.clone()
    for _ in range(launches):
        out.mul_(A)
    return out


@pytest.mark.filterwarnings("ignore:overflow encountered")     # the interpreter's numpy
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_the_gpu_replays_loop_rounds_as_torch_does_on_the_interpreter(dtype):
    """The GPU's one-pass replay (a Triton loop per element), run on the interpreter, gives
    torch's bits launch by launch, through overflow, with a tail that fills no whole
    program (bfloat16, which the interpreter's numpy cannot round to, is left to the GPU
    test)."""
    start = (torch.randn(3000, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
             * 1e3).to(getattr(torch, dtype))
    for launches in (0, 1, 7, 400):
        out = torch.empty_like(start)
        jitted(_replay_body, True)[(3,)](start, out, start.numel(), A, launches, BLOCK=1024)
        assert torch.equal(out, torch_replay(start, launches)), launches


def test_scale_rules_out_integer_dtypes_and_states_its_bytes_and_model():
    kernel = load_kernel("scale")
    with pytest.raises(ValueError) as refused:
        kernel.allocate(Problem("int32", 4096, (("n", 1024),)), "cpu")
    assert str(refused.value) == ("scale multiplies by 1.03125: int32 is no floating dtype; "
                                  "allowed: float64, float32, float16, bfloat16")
    problem = n_problem("float32", 1 << 20)
    assert kernel.bytes_moved(problem) == 8 << 20 and kernel.flops(problem) == 1 << 20
    assert kernel.working_set(problem) == 4 << 20           # in place: one array in L2
    config = Config(problem=problem, grid=132, block=256, meta={"BLOCK": 2048})
    assert kernel.model(config, H200) == streaming(config, 132, 2048, inputs=1)
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    start = buffers["x"].clone()
    kernel.baseline(buffers)
    assert torch.equal(buffers["x"], start * A)


def test_the_scale_example_runs_on_the_interpreter(tmp_path, capsys):
    trials = run_example("scale.yaml", tmp_path, capsys)
    assert len(trials) == 3 and all(t.ok for t in trials)


# -- copy-strided --------------------------------------------------------------------------
def strided(n: int, stride: int, linecross: int, dtype: str = "float32") -> Problem:
    itemsize = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    return Problem(dtype, n * itemsize, (("n", n), ("stride", stride),
                                         ("linecross", linecross)))


@pytest.mark.parametrize("problem", [
    strided(4096, 1, 0), strided(4096, 8, 0), strided(4096, 64, 1), strided(3000, 3, 1, "int32"),
    strided(4095, 64, 0, "float16"),            # no view has this order: index_select
    strided(1000, 3_000_000, 0),                # i * stride passes 2**31: int64 indices
], ids=lambda p: " ".join(f"{k}={v}" for k, v in p.dims) + f" {p.dtype}")
def test_copy_strided_verifies_each_order_and_its_baseline_does_the_same_work(problem):
    kernel = load_kernel("copy-strided")
    result, buffers = trial(kernel, problem, {"BLOCK": 256})
    assert result.status is TrialStatus.OK, result.reason
    n, stride, linecross = (v for _, v in problem.dims)
    i = torch.arange(n)
    rows = n // stride
    index = (i % rows) * stride + i // rows if linecross else i * stride % n
    assert torch.equal(buffers["dst"], buffers["src"][index])
    kernel.poison(buffers)
    kernel.baseline(buffers)
    assert kernel.check(buffers) is None
    assert ("index" in buffers.tensors) == (not linecross and n % stride != 0)


def test_copy_strided_catches_a_planted_value_and_a_plain_copy():
    kernel = load_kernel("copy-strided")
    result, buffers = trial(kernel, strided(4096, 8, 1), {"BLOCK": 512})
    assert result.status is TrialStatus.OK
    buffers["dst"][17] = 5.0
    # element 17 is row 17 of column 0 of the 512 x 8 matrix: src[17 * 8]
    assert kernel.check(buffers).startswith("1 of 4096 elements differ from src in this order "
                                            "(first at index 17, which reads src[136]: 5.0 != ")
    buffers["dst"].copy_(buffers["src"])                 # the right bytes in the wrong order
    assert kernel.check(buffers).startswith("4088 of 4096 elements differ")  # 8 fixed points


def test_copy_strided_rules_out_a_linecross_matrix_that_n_does_not_fill(write_space, tmp_path,
                                                                      capsys):
    kernel = load_kernel("copy-strided")
    with pytest.raises(ValueError) as refused:
        kernel.allocate(strided(4096, 3000, 1), "cpu")
    assert str(refused.value) == ("linecross reads an (n / stride) × stride matrix: n = 4096 "
                                  "is no multiple of stride = 3000")
    space = write_space("""
        kernel: copy-strided
        sampler: exhaustive
        params:
          grid: ["cdiv(n, BLOCK)"]
          BLOCK: [1024]
          n: [4096]
          stride: [64, 3000]
          linecross: [1]
        measure: {warmup: 1, repeat: 2}
    """, "lines.yaml")
    assert main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
                 "--quiet", "--no-report"]) == 0
    trials = StudyStore(tmp_path / "lines-interpret").records()[0]
    assert [(t.choice["stride"], t.status.value) for t in trials] == [("64", "ok"),
                                                                      ("3000", "invalid")]
    assert trials[1].reason == ("allocating the inputs: linecross reads an (n / stride) × "
                                "stride matrix: n = 4096 is no multiple of stride = 3000")
    assert "n=4096 stride=64 linecross=1" in capsys.readouterr().out


def test_a_dimension_whose_minimum_is_0_takes_0_and_refuses_what_is_out_of_limits(
        write_space, capsys):
    text = """
        kernel: copy-strided
        params:
          n: [4096]
          stride: [8]
          linecross: [0, VALUE]
    """
    assert main(["plan", str(write_space(text.replace("VALUE", "1"))), "--device",
                 "interpret"]) == 0
    assert "would measure 2" in capsys.readouterr().out
    for value, index, line in (("-1", 1, "linecross: -1 is out of its limits; allowed: an "
                                "integer >= 0 and <= 1"), ("2", 1, "linecross: 2 is out of "
                                "its limits; allowed: an integer >= 0 and <= 1")):
        path = write_space(text.replace("VALUE", value))
        assert main(["plan", str(path), "--device", "interpret"]) == 2
        assert capsys.readouterr().err == f"{path}:5: params.linecross[{index}]: {line}\n"
    path = write_space(text.replace("n: [4096]", "n: [0]").replace("VALUE", "1"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (f"{path}:3: params.n[0]: 0 must be positive; allowed: "
                                       "an integer >= 1 and <= 2147483647, e.g. 16777216\n")


def test_copy_strided_sizes_from_a_footprint_as_a_plain_copy_and_states_its_bytes(
        write_space):
    from sweeper.space import load_space
    from sweeper.sweep import enumerate_choices

    space = load_space(write_space("""
        kernel: copy-strided
        params:
          footprint: [16KiB]
    """))
    (choice,), _ = enumerate_choices(space, {"sms": 132, "l2_bytes": 60 << 20})
    config = space.resolve(choice, {"sms": 132, "l2_bytes": 60 << 20}, None)
    assert config.problem.dims == (("n", 4096), ("stride", 1), ("linecross", 0))
    assert config.grid == 4 and config.meta == {"BLOCK": 1024}
    kernel = load_kernel("copy-strided")
    big = strided(1 << 28, 4096, 1)
    assert kernel.bytes_moved(big) == 2 << 30
    config = Config(problem=big, grid=1 << 18, block=256, meta={"BLOCK": 1024})
    assert kernel.model(config, H200) == streaming(config, 132, 1024, inputs=1)


def test_the_copy_strided_example_runs_on_the_interpreter(tmp_path, capsys):
    trials = run_example("copy-strided.yaml", tmp_path, capsys, trials=4)
    assert len(trials) == 4 and all(t.ok for t in trials)
    assert all(t.config.problem.dim("n") == 4096 for t in trials)      # 256 MiB shrunk


# -- softmax -------------------------------------------------------------------------------
def matrix(rows: int, cols: int, dtype: str = "float32") -> Problem:
    itemsize = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    return Problem(dtype, rows * cols * itemsize, (("rows", rows), ("cols", cols)))


@pytest.mark.parametrize("problem, block", [
    (matrix(6, 100), 128),                  # one pass, 28 lanes masked
    (matrix(6, 100), 32),                   # two passes over 4 tiles, the last one masked
    (matrix(5, 64), 64),                    # a power of two that fills the tile exactly
    (matrix(4, 300, "float16"), 512),
    (matrix(4, 300, "float16"), 128),
], ids=lambda v: " ".join(f"{k}={n}" for k, n in v.dims) + f" {v.dtype}"
    if isinstance(v, Problem) else f"BLOCK={v}")
def test_softmax_verifies_any_cols_in_one_pass_or_two(problem, block):
    kernel = load_kernel("softmax")
    result, buffers = trial(kernel, problem, {"BLOCK": block}, grid=2)
    assert result.status is TrialStatus.OK, result.reason
    y = buffers["y"].double()
    assert torch.allclose(y.sum(dim=1), torch.ones(y.shape[0], dtype=torch.float64),
                          atol=1e-2)
    kernel.poison(buffers)
    kernel.baseline(buffers)
    assert kernel.check(buffers) is None


def test_softmax_catches_a_planted_value_an_unwritten_row_and_a_missing_max():
    kernel = load_kernel("softmax")
    result, buffers = trial(kernel, matrix(4, 100), {"BLOCK": 128}, grid=2)
    assert result.status is TrialStatus.OK
    buffers["y"][2, 37] *= 1.001                          # 1e-3 relative: above 1e-5
    assert kernel.check(buffers).startswith(
        "1 of 400 elements are off the float64 softmax by more than 1e-05 relative + 1e-12 "
        "(worst at row 2, column 37:")
    buffers["y"][3].fill_(float("nan"))
    assert kernel.check(buffers) == "100 of 400 elements were never written"
    x = buffers["x"].double()
    buffers["y"].copy_(x.exp() / x.exp().sum(dim=1, keepdim=True) * 1.01)   # a 1 % slip
    assert " of 400 elements are off the float64 softmax" in kernel.check(buffers)


def test_softmax_is_sized_by_its_dimensions_and_refuses_a_footprint(write_space, capsys):
    path = write_space("""
        kernel: softmax
        params:
          footprint: [64KiB]
    """)
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (f"{path}:3: params.footprint: softmax is sized by its "
                                       "dimensions, not a footprint; give rows, cols\n")
    from sweeper.space import load_space

    space = load_space(write_space("kernel: softmax\nparams:\n  cols: [1000]\n"))
    assert [space.axis(d).labels for d in ("rows", "cols", "BLOCK", "grid")] == [
        ("4096",), ("1000",), ("4096",), ("rows",)]        # the declared defaults
    kernel = load_kernel("softmax")
    with pytest.raises(ValueError, match="softmax needs a floating dtype, not int16"):
        kernel.allocate(Problem("int16", 200, (("rows", 10), ("cols", 10))), "cpu")


def test_softmax_bytes_flops_and_model():
    kernel = load_kernel("softmax")
    problem = matrix(4096, 3000)
    assert kernel.bytes_moved(problem) == 2 * 4096 * 3000 * 4
    assert kernel.flops(problem) == 5 * 4096 * 3000

    def guess(block: int, BLOCK: int, grid: int = 4096) -> float:
        config = Config(problem=problem, grid=grid, block=block, meta={"BLOCK": BLOCK})
        return kernel.model(config, H200)

    # one pass beats two at the same tile width's registers; a row in 4096 lanes of 128
    # threads (32 values each) does not spill, 16384 lanes would
    assert guess(256, 4096) > guess(256, 1024) > 0
    assert guess(32, 16384) < 0.5 * guess(256, 4096)
    assert guess(256, 4096, grid=132) < guess(256, 4096)          # grid-stride: split up front


def test_softmax_model_reads_a_row_again_from_the_l2_while_the_rows_in_flight_fit():
    """A row wider than its tile is read twice; the second read costs DRAM bytes only for
    the part of the rows the resident programs hold that the L2 cannot."""
    kernel = load_kernel("softmax")
    problem = matrix(4096, 32000, "bfloat16")                     # 64000-byte rows

    def guess(block: int, BLOCK: int, l2_bytes: int = H200.l2_bytes) -> float:
        config = Config(problem=problem, grid=4096, block=block, meta={"BLOCK": BLOCK})
        return kernel.model(config, dataclasses.replace(H200, l2_bytes=l2_bytes))

    # 512 threads: 4 programs an SM, 528 rows (32 MiB) between their two reads, which the
    # H200's 60 MiB L2 holds: two passes of 16384 columns rate near one pass of 32768
    # (measured 1.06 times it on the H200, where the model rated it 0.66 times)
    assert guess(512, 16384) == pytest.approx(guess(512, 32768), rel=0.05)
    # with no L2 to hold them, every second read comes from DRAM: 2/3 of the bytes' rate
    assert guess(512, 16384, l2_bytes=0) == pytest.approx(2 / 3 * guess(512, 16384))
    # 128 threads: 16 programs an SM hold 2112 rows (129 MiB); the part past the L2 is read
    # from DRAM again, so the guess lies between no L2 and an L2 that holds them all
    assert (guess(128, 16384, l2_bytes=0) < guess(128, 16384)
            < guess(128, 16384, l2_bytes=1 << 30))
    assert guess(128, 16384) == pytest.approx(
        2 / (3 - (60 << 20) / (2112 * 64000)) * guess(128, 16384, l2_bytes=1 << 30))
    # a row in one tile is read once: the L2 makes no difference
    assert guess(512, 32768, l2_bytes=0) == guess(512, 32768)
    # it is held in float32 whatever its dtype: 32768 bf16 lanes of 128 threads are 256
    # float32 values a thread, twice the registers (measured 0.76 of the best on the
    # H200, where counting bf16 bytes rated it the model's favourite)
    assert guess(128, 32768) == pytest.approx(0.5 * guess(512, 32768), rel=0.02)


def test_the_softmax_example_runs_on_the_interpreter(tmp_path, capsys):
    trials = run_example("softmax.yaml", tmp_path, capsys, trials=2)
    assert len(trials) == 2 and all(t.ok for t in trials)
    assert trials[0].config.problem.dims == (("rows", 8), ("cols", 200))


# -- on a GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_scale_on_a_gpu_counts_launches_replayed_from_a_cuda_graph(dtype):
    """A graph replays launches the host never makes: the counter on the device still
    counts them, and the replay in torch matches Triton's rounding bit for bit."""
    from sweeper.measure import StopRule
    from sweeper.trial import Rotation

    device, kernel = open_device("cuda"), load_kernel("scale")
    problem = n_problem(dtype, 1 << 22)
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    config = Config(problem=problem, grid=(1 << 22) // 1024, block=256, meta={"BLOCK": 1024})
    rotation = Rotation(kernel, [buffers], config)
    measured = device.measure(rotation, warmup=3, rule=StopRule(kind="fixed", repeat=20),
                              flush=False, batch=10, graph=True, verify=rotation)
    assert measured.graph and measured.wrong_after is None
    # after the poisoning: one launch warming up outside the capture, then 10 a replay,
    # where the host called launch 11 times in all (once more to capture the batch)
    assert int(buffers["launches"].item()) == 1 + 10 * len(measured.timing.samples) == 201


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_scale_replays_on_a_gpu_what_torch_does_one_launch_at_a_time(dtype):
    """On the GPU the check's one-pass replay gives torch's bits for 300 launches over 2**24
    + 3 elements (float16 overflows on the way), and the check passes after the kernel
    ran them."""
    start = (torch.randn((1 << 24) + 3, generator=torch.Generator(device="cuda").manual_seed(2),
                         dtype=torch.float64, device="cuda") * 1e3).to(getattr(torch, dtype))
    assert torch.equal(replayed(start, 300), torch_replay(start, 300))
    kernel = load_kernel("scale")
    problem = n_problem(dtype, start.numel())
    buffers = kernel.allocate(problem, "cuda")
    buffers["x"].copy_(start)
    kernel.poison(buffers)
    config = Config(problem=problem, grid=264, block=256, meta={"BLOCK": 2048})
    for _ in range(300):
        kernel.launch(buffers, config)
    assert kernel.check(buffers) is None


@pytest.mark.gpu
@pytest.mark.parametrize("problem", [strided(1 << 26, 4096, 1), strided(1 << 26, 4097, 0),
                                     strided(1 << 26, 1 << 20, 0)],
                         ids=["linecross", "odd stride", "int64 index"])
def test_copy_strided_on_a_gpu_verifies_and_its_baseline_matches(problem):
    kernel = load_kernel("copy-strided")
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, Config(problem=problem, grid=(1 << 26) // 1024, block=256,
                                  meta={"BLOCK": 1024}))
    assert kernel.check(buffers) is None
    kernel.poison(buffers)
    kernel.baseline(buffers)
    assert kernel.check(buffers) is None


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("block", [1024, 4096])
def test_softmax_on_a_gpu_verifies_at_a_width_no_power_of_two(dtype, block):
    kernel = load_kernel("softmax")
    problem = matrix(4096, 3000, dtype)
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, Config(problem=problem, grid=132 * 4, block=256,
                                  meta={"BLOCK": block}))
    assert kernel.check(buffers) is None
