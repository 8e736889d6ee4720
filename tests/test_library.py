"""The kernel library's built-ins beyond copy, add and matmul (``scale``, ``copy-strided``,
``softmax``): each runs and verifies on the interpreter at small problems, a planted
wrong result is caught, and its bytes, FLOPs, model and example space hold."""

from __future__ import annotations

import shlex

import pytest
import torch

from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.kernels import Buffers, load_kernel
from sweeper.kernels._guess import streaming
from sweeper.kernels.scale import A, ScaleKernel
from sweeper.space import Config, MeasureSpec, Problem
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus, run_trial
from tests.conftest import ROOT

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
        "2048 of 2048 elements differ from the start times 1.03125**3 (the launches "
        "counted; first at index 0:")          # scaled once where three launches ran
    kernel = load_kernel("scale")
    result, buffers = trial(kernel, n_problem("float32", 2048), {"BLOCK": 512})
    assert result.status is TrialStatus.OK and kernel.check(buffers) is None
    buffers["x"][1000] += 1.0
    assert kernel.check(buffers).startswith(
        "1 of 2048 elements differ from the start times 1.03125**3 (the launches counted; "
        "first at index 1000:")


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
    assert kernel.model(config, 132) == streaming(config, 132, 2048, inputs=1)
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    start = buffers["x"].clone()
    kernel.baseline(buffers)
    assert torch.equal(buffers["x"], start * A)


def test_the_scale_example_runs_on_the_interpreter(tmp_path, capsys):
    trials = run_example("scale.yaml", tmp_path, capsys)
    assert len(trials) == 3 and all(t.ok for t in trials)
