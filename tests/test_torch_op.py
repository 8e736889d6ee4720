"""The ``torch-op`` built-in: an op named under ``kernel:`` is checked as the space is
parsed (its path always, its existence only where the run may import it), timed over
shapes and dtypes with nothing to tune, and verified against itself in float64 or, where
that cannot be had, against a second call."""

from __future__ import annotations

import pytest
import torch

from sweeper.cli import main
from sweeper.errors import SpaceError
from sweeper.kernels import load_kernel
from sweeper.space import Problem, load_space
from sweeper.trial import TrialStatus
from tests.test_library import run_example, trial

GELU = "torch.nn.functional.gelu"


def problem(rows: int, cols: int, dtype: str = "float32") -> Problem:
    itemsize = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    return Problem(dtype, rows * cols * itemsize, (("rows", rows), ("cols", cols)))


def space_with(write_space, kernel: str, params: str = "dtype: [float32]") -> str:
    return str(write_space(f"kernel: {kernel}\nparams:\n  {params}\n"))


def test_the_op_is_a_kernel_option_with_footprint_or_shape_axes_and_nothing_to_tune(
        write_space):
    space = load_space(space_with(write_space, f"{{name: torch-op, op: {GELU}}}",
                                  "footprint: [8MiB, 1GiB]"))
    assert space.kernel == "torch-op" and space.kernel_options == (("op", GELU),)
    assert [a.name for a in space.axes if len(a.labels) > 1] == ["footprint"]
    assert {a.name: a.labels for a in space.axes}["grid"] == ("1",)
    kernel = load_kernel(space.kernel, space.kernel_options)
    assert kernel.op == GELU and GELU in kernel.source()
    assert kernel.bytes_moved(problem(4, 1000)) == 2 * 4 * 1000 * 4
    assert load_kernel("torch-op", (("op", "torch.tanh"),)).source_hash() != \
        kernel.source_hash()


@pytest.mark.parametrize("kernel, line_error", [
    ("{name: torch-op, op: os.system}",
     "kernel.op: 'os.system' is not a torch callable's path; allowed: a dotted path "
     "starting with torch., such as torch.nn.functional.gelu"),
    ("{name: torch-op, op: torch.nn.functional.gleu}",
     "kernel.op: 'torch.nn.functional.gleu' names nothing: torch.nn.functional has no "
     "attribute 'gleu'; allowed: a torch callable's dotted path, such as "
     "torch.nn.functional.gelu"),
    ("{name: torch-op, op: torch.float32}",
     "kernel.op: 'torch.float32' is dtype, not callable; allowed: a torch callable"),
    ("{name: torch-op, op: 3}",
     "kernel.op: 3 is not a valid op; allowed: a string of 1 to 200 characters, or a "
     "mapping or list of up to 2000 (a torch callable by its dotted path, such as "
     "torch.nn.functional.gelu)"),
    ("{name: torch-op, fn: torch.tanh}",
     "kernel.fn: kernel torch-op takes no option 'fn'; its options: op"),
    ("torch-op",
     "kernel: kernel torch-op needs option 'op' (a torch callable by its dotted path, such "
     "as torch.nn.functional.gelu): kernel: {name: torch-op, op: ...}"),
    ("{name: copy, op: torch.tanh}",
     "kernel.op: kernel copy takes no option 'op'; its options: none (give just its name)"),
    ("{op: torch.tanh}",
     "kernel: a kernel mapping needs a name: {name: KERNEL, OPTION: value, ...}"),
])
def test_a_bad_kernel_option_is_one_line_naming_file_and_line(write_space, capsys, kernel,
                                                              line_error):
    path = space_with(write_space, kernel)
    assert main(["run", path, "--device", "interpret"]) == 2
    assert capsys.readouterr().err == f"{path}:1: {line_error}\n"


def test_plan_imports_no_op_so_only_the_path_is_checked(write_space, capsys):
    path = space_with(write_space, "{name: torch-op, op: torch.nn.functional.gleu}")
    with pytest.raises(SpaceError):
        load_space(path)
    assert load_space(path, user_code=False).kernel_options == \
        (("op", "torch.nn.functional.gleu"),)
    assert main(["plan", path, "--device", "interpret"]) == 0
    assert "1 valid" in capsys.readouterr().out


@pytest.mark.parametrize("rows, cols, dtype", [(1, 1000, "float32"), (3, 257, "bfloat16"),
                                               (2, 64, "float16")])
def test_gelu_verifies_against_float64_over_shapes_and_dtypes(rows, cols, dtype):
    kernel = load_kernel("torch-op", (("op", GELU),))
    result, buffers = trial(kernel, problem(rows, cols, dtype), {})
    assert result.status is TrialStatus.OK, result.reason
    shape = (cols,) if rows == 1 else (rows, cols)
    assert buffers["y"].shape == shape and buffers["y"].dtype == getattr(torch, dtype)


def test_a_planted_value_and_a_launch_that_did_not_run_are_caught():
    kernel = load_kernel("torch-op", (("op", GELU),))
    result, buffers = trial(kernel, problem(1, 1000), {})
    assert result.status is TrialStatus.OK
    buffers["y"][37] *= 1.001
    assert kernel.check(buffers) == (
        f"{GELU} against itself in float64: output y: 1 of 1000 elements differ from the "
        f"reference at rtol 1.3e-06, atol 1e-05 for float32 (first at index 37: "
        f"{buffers['y'][37].item()!r} != "
        f"{torch.nn.functional.gelu(buffers['x'][37:38].double()).item()!r})")
    kernel.poison(buffers)
    assert kernel.check(buffers) == f"{GELU} left no output: the launch did not run"


def test_without_float64_the_op_must_repeat_itself_bit_for_bit(monkeypatch):
    kernel = load_kernel("torch-op", (("op", "torch.neg"),))
    result, buffers = trial(kernel, problem(1, 500, "int32"), {})
    assert result.status is TrialStatus.OK, result.reason
    calls = iter(range(1, 100))
    monkeypatch.setattr(type(kernel), "function", property(
        lambda self: lambda x: x * next(calls)))
    assert kernel.check(buffers).startswith(
        "torch.neg is not deterministic (no float64 reference): output y: ")


def test_the_example_space_runs_on_the_interpreter(tmp_path, capsys):
    trials = run_example("torch-op-gelu.yaml", tmp_path, capsys, trials=8)
    assert len(trials) == 8 and all(t.ok for t in trials)
    assert {t.config.problem.dtype for t in trials} == {"float32", "bfloat16"}


@pytest.mark.gpu
def test_gelu_on_the_gpu_verifies_and_is_timed_at_a_dram_bound_footprint():
    from sweeper.devices import open_device
    from sweeper.space import Config, MeasureSpec
    from sweeper.trial import run_trial

    kernel = load_kernel("torch-op", (("op", GELU),))
    for dtype in ("float32", "bfloat16"):
        p = problem(1, (256 << 20) // (4 if dtype == "float32" else 2), dtype)
        buffers = kernel.allocate(p, "cuda")
        config = Config(problem=p, grid=1, block=32, meta={}, cache="cold")
        result = run_trial(kernel, buffers, config, open_device("cuda"),
                           MeasureSpec(warmup=5, repeat=20, stop="fixed"),
                           torch.Generator(device="cuda").manual_seed(0))
        assert result.status is TrialStatus.OK, result.reason
        assert buffers["y"].is_cuda and result.stats.median > 0
