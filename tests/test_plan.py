"""``sweeper plan`` and ``sweeper kernels`` from declarations: a kernel's options listed
(required, or their default), the CUDA device's facts read from its driver without
torch (or assumed, and said so)."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from sweeper.cli import main
from sweeper.devices import _gpu_query
from sweeper.devices._gpu_query import ASSUMED_GPU, query_gpu
from sweeper.finals import FINALS_OVERHEAD_S, FINALS_STAYING, MIN_ROUNDS, TOP_K
from tests.test_shapes import StridedDeclaration

ROOT = Path(__file__).resolve().parent.parent


class WithMode(StridedDeclaration):
    """The strided declaration with a required option and one that has a default."""

    name: ClassVar[str] = "with-mode"
    options: ClassVar[dict[str, str]] = {"mode": "fast or exact", "tag": "a label"}
    option_defaults: ClassVar[dict[str, str]] = {"tag": "none"}

    def __init__(self, mode: str, tag: str) -> None:
        self.mode, self.tag = mode, tag

    @classmethod
    def option_problem(cls, key: str, value: str, *, imports: bool = False) -> str | None:
        return None if key != "mode" or value in ("fast", "exact") else \
            f"{value!r} is no mode; allowed: fast, exact"


def test_the_kernels_listing_gives_each_option_required_or_its_default(capsys):
    assert main(["kernels", "tests.test_plan:WithMode", "torch-op"]) == 0
    out = capsys.readouterr().out
    assert ("  options (kernel: {name: with-mode, OPTION: ...}):\n"
            "    mode (required): fast or exact\n    tag = none: a label\n") in out
    assert "    op (required): a torch callable by its dotted path" in out
    assert main(["kernels", "--json", "tests.test_plan:WithMode", "copy"]) == 0
    import json

    with_mode, copy = json.loads(capsys.readouterr().out)
    assert with_mode["options"] == {
        "mode": {"doc": "fast or exact", "required": True, "default": None},
        "tag": {"doc": "a label", "required": False, "default": "none"}}
    assert copy["options"] == {}


def test_a_kernel_options_default_stands_in_where_the_space_leaves_it_out(write_space):
    from sweeper.space import load_space

    path = write_space("kernel: {name: tests.test_plan:WithMode, mode: exact}\n"
                       "params:\n  n: [4096]\n  stride: [1]\n")
    assert load_space(path).kernel_options == (("mode", "exact"), ("tag", "none"))


class FakeDriver:
    """libcuda's five calls, answering for one GPU (an A100: compute capability 8.0, a
    1410 MHz SM clock, a 1593 MHz memory clock over a 5120-bit bus: 2039 GB/s);
    ``without``: attributes it refuses (an older driver's)."""

    def __init__(self, count: int = 1, without: tuple[int, ...] = ()) -> None:
        self.count = count
        self.without = without

    def cuInit(self, flags: int) -> int:
        return 0

    def cuDeviceGetCount(self, out: Any) -> int:
        out._obj.value = self.count
        return 0

    def cuDeviceGet(self, out: Any, index: int) -> int:
        out._obj.value = index
        return 0

    def cuDeviceGetName(self, buf: Any, size: int, device: Any) -> int:
        ctypes.memmove(buf, b"NVIDIA A100-SXM4-80GB\0", 22)
        return 0

    def cuDeviceGetAttribute(self, out: Any, attr: int, device: Any) -> int:
        if attr in self.without:
            return 1                              # CUDA_ERROR_INVALID_VALUE
        out._obj.value = {16: 108, 38: 40 << 20, 75: 8, 76: 0, 13: 1_410_000,
                          36: 1_593_000, 37: 5120}[attr]
        return 0


def test_the_cuda_plan_reads_the_gpu_from_its_driver(monkeypatch, write_space, capsys):
    monkeypatch.setattr(_gpu_query, "_driver", FakeDriver)
    facts = query_gpu()
    assert (facts.name, facts.sms, facts.l2_bytes) == ("NVIDIA A100-SXM4-80GB", 108, 40 << 20)
    path = write_space("kernel: copy\nparams:\n  grid: [sms, 2*sms]\n  footprint: [1MiB]\n")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "would measure 2 on NVIDIA A100-SXM4-80GB\n" in out and "assumed" not in out
    assert _gpu_query.gpu_arch() == "sm_80"        # the compile pool's target
    monkeypatch.setattr(_gpu_query, "_driver", lambda: FakeDriver(count=0))
    assert query_gpu() == "no CUDA device found" and _gpu_query.gpu_arch() is None


def test_a_fresh_plan_on_another_gpu_scales_the_h200s_figures_by_its_bounds(
        monkeypatch, capsys, tmp_path):
    """The plan's launch figures were read on an H200: on a GPU whose DRAM and FLOP bounds
    are lower (the fake A100: 2039 GB/s and 312 TFLOP/s against 4814 and 1070), a kernel
    no run here has measured is priced at those ratios, and the plan says so; once a run
    measured the kernel, its own launches price it and the ratios are gone."""
    from sweeper.bounds import derive_bounds
    from sweeper.devices._gpu_query import GPU_COSTS_READ_ON
    from sweeper.plan import gpu_scale, note_run

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path))
    monkeypatch.setattr(_gpu_query, "_driver", FakeDriver)
    hardware = _gpu_query.query_hardware()
    bounds = derive_bounds(hardware)
    assert bounds.dram is not None and round(bounds.dram.per_s / 1e9) == 2039
    assert round(bounds.flops["bfloat16"].per_s / 1e12) == 312
    read_on = derive_bounds(GPU_COSTS_READ_ON)
    assert read_on.dram is not None and round(read_on.dram.per_s / 1e9) == 4814
    from sweeper.devices._cuda import PlannedGpu

    scale = gpu_scale(PlannedGpu())
    assert scale.by_bytes == pytest.approx(3201 * 6016 / (1593 * 5120))
    assert scale.by_flops == pytest.approx(132 * 1980 * 4096 / (108 * 1410 * 2048))
    assert scale.why(flop_bound=True) == (
        "DRAM 2039 against 4814 GB/s, bfloat16 FLOP 312 against 1071 TFLOP/s of the NVIDIA "
        "H200 these figures were read on")
    assert scale.why(flop_bound=False) == \
        "DRAM 2039 against 4814 GB/s of the NVIDIA H200 these figures were read on"

    def trials_s(space: str) -> tuple[float, str]:
        assert main(["plan", space, "--studies-dir", str(tmp_path / "studies")]) == 0
        out = capsys.readouterr().out
        found = re.search(r"trials ([\d.]+) s", out)
        assert found, out
        return float(found.group(1)), out

    a100, out = trials_s("spaces/copy.yaml")
    assert ("launches of at least 20 us, 4000 GB/s, TFLOP/s bfloat16 795, float16 795, "
            "float32 400; on NVIDIA A100-SXM4-80GB 2.36× that by its bytes (DRAM 2039 against "
            "4814 GB/s of the NVIDIA H200 these figures were read on), until a run here "
            "measures the kernel's)") in out
    _, out = trials_s("spaces/matmul-8k.yaml")
    assert ("; a launch bound by its FLOPs 1.7× that; on NVIDIA A100-SXM4-80GB 2.36× that "
            "again by its bytes and 3.43× by its FLOPs (DRAM 2039 against 4814 GB/s, "
            "bfloat16 FLOP 312 against 1071 TFLOP/s of the NVIDIA H200") in out
    monkeypatch.setattr(_gpu_query, "_driver", lambda: FakeDriver(without=(36,)))
    h200, out = trials_s("spaces/copy.yaml")          # no memory clock: the H200's bandwidth
    assert "by its bytes" not in out and "3.43× by its FLOPs" not in out
    assert a100 > 1.5 * h200
    monkeypatch.setattr(_gpu_query, "_driver", FakeDriver)
    note_run("cuda: NVIDIA A100-SXM4-80GB", kernel="copy", sampler="exhaustive",
             startup_s=None, report_s=None, compiles_s=[], ask_s=None,
             launch_scales=[1.0] * 200)
    measured, out = trials_s("spaces/copy.yaml")      # its own launches measured here
    assert "by its bytes" not in out and measured == pytest.approx(h200, rel=0.05)


def test_without_a_driver_the_cuda_plan_assumes_a_gpu_and_says_so(monkeypatch, capsys):
    def missing() -> Any:
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(_gpu_query, "_driver", missing)
    assert main(["plan", "spaces/copy-small.yaml"]) == 0
    out = capsys.readouterr().out
    assert f"would measure 12 on {ASSUMED_GPU.name}\n" in out
    assert ("  (no CUDA driver found (libcuda.so.1): planned for an assumed NVIDIA H200 "
            "(132 SMs, 60 MiB L2); expressions over sms and l2_bytes may count differently "
            "on yours)\n") in out
    assert "no CUDA device found; run on the CPU" not in out


def test_a_kernel_that_compiles_nothing_is_planned_without_compiles(monkeypatch, capsys,
                                                                     tmp_path):
    """torch-op launches the kernels torch ships: the GPU plan of spaces/torch-op-gelu.yaml
    counted '8 binaries ... 8 to compile (Triton's ...)' and seconds to compile them,
    where the run compiles nothing (its GPU check says the module names no Triton)."""
    def missing() -> Any:
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(_gpu_query, "_driver", missing)
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path))
    assert main(["plan", "spaces/torch-op-gelu.yaml", "--studies-dir",
                 str(tmp_path / "studies")]) == 0
    out = capsys.readouterr().out
    assert "would measure 8 on" in out
    assert "binaries" not in out and "compile" not in out
    # the op is imported when the run allocates, never by plan: its line says so
    assert out.endswith("not checked: that the op torch.nn.functional.gelu exists (plan imports "
                        "no torch; `sweeper run` refuses an op it cannot import before "
                        "measuring)\n")
    assert main(["plan", "spaces/copy-small.yaml", "--studies-dir",
                 str(tmp_path / "studies")]) == 0
    assert "  4 binaries: 0 compiled on this machine already" in capsys.readouterr().out


@pytest.mark.gpu
def test_the_driver_gives_the_facts_torch_gives():
    import torch

    props = torch.cuda.get_device_properties(0)
    facts = query_gpu()
    assert not isinstance(facts, str), facts
    assert (facts.name, facts.sms, facts.l2_bytes) == \
        (props.name, props.multi_processor_count, props.L2_cache_size)


@pytest.mark.gpu
def test_the_driver_gives_the_bounds_nvml_gives():
    """The plan reads the GPU's peak clocks and bus width from the driver, a run from NVML:
    both derive the same DRAM and FLOP bounds, so a plan prices the GPU a run measures."""
    from sweeper.devices._cuda import CudaDevice, PlannedGpu

    planned, opened = PlannedGpu().bounds(), CudaDevice().bounds()
    assert planned.dram is not None and opened.dram is not None
    assert planned.dram.per_s == pytest.approx(opened.dram.per_s, rel=0.01)
    assert planned.flops["bfloat16"].per_s == \
        pytest.approx(opened.flops["bfloat16"].per_s, rel=0.01)


@pytest.mark.gpu
def test_a_gpu_run_keeps_the_binaries_it_ran_and_the_next_plan_loads_them(
        small_space, tmp_path, monkeypatch, capsys):
    """After a run on the GPU, the binaries its trials ran are kept (binaries.json, per
    GPU, Triton cache folder and kernel source): the next ``sweeper plan`` of the space
    for a new study counts each as compiled (a load), where the first counted each as a
    compile (a plan of the study that ran has nothing left to measure)."""
    import json

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)

    def binaries() -> tuple[int, int]:
        assert main(["plan", str(small_space), "--studies-dir", "fresh"]) == 0
        out = capsys.readouterr().out
        found = re.search(r"(\d+) binar(?:y|ies): (\d+) compiled on this machine already", out)
        assert found, out
        return int(found.group(1)), int(found.group(2))

    total, cached = binaries()
    assert total >= 2 and cached == 0               # no run here kept any yet
    assert main(["run", str(small_space), "--no-report", "--quiet"]) == 0
    kept = json.loads((tmp_path / "cache" / "binaries.json").read_text())
    (keys,) = [v for k, v in kept.items() if " | copy | " in k]
    assert len(keys) == total
    assert binaries() == (total, total)


# -- the time estimate --------------------------------------------------------------------
def _estimate(path: str, *extra: str, capsys: Any) -> str:
    assert main(["plan", path, *extra]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines()
               if x.startswith("estimated time: ")]
    return line


def test_the_estimate_counts_a_matmuls_flops_and_the_finals(monkeypatch, capsys):
    from sweeper.devices import DeviceFacts, PlanCosts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.plan import UNMEASURED_FLOP_SCALE, RunCosts, RunShape, make_plan
    from sweeper.space import load_space

    monkeypatch.setattr(_gpu_query, "has_driver", lambda: False)
    space = load_space(ROOT / "spaces" / "matmul-8k.yaml")
    facts, measure = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20), space.measure
    moved = declared_count("matmul", "bytes_moved")
    assert moved is not None
    by_bytes = make_plan(space, moved, facts, GPU_COSTS, measure)
    computed = make_plan(space, moved, facts, GPU_COSTS, measure,
                         flops=declared_count("matmul", "flops"), finals=True)
    assert by_bytes.finals_s == 0 and computed.finals_s > 0
    # 2 x 8192³ FLOP at 795 TFLOP/s: 1.38 ms a launch, as the H200 measured for the tuned
    # one, against 0.1 ms for its bytes at 4 TB/s; a sweep's configs, where none of the
    # kernel's ran here, at UNMEASURED_FLOP_SCALE times that
    flop_s, bytes_s = 2 * 8192**3 / 795e12, 3 * 8192**2 * 2 / 4e12
    launches = (measure.warmup + 2 + measure.repeat) * computed.trials
    # a launch of 0.5 ms or more is warmed up by two turns, one of 0.1 ms by all; each turn
    # flushes the L2 as a sample does
    assert measure.warmup_turns(flop_s) == 2 and measure.warmup_turns(bytes_s) == measure.warmup
    fewer = (measure.warmup - 2) * computed.trials
    flush_s = 2 * facts.l2_bytes / GPU_COSTS.bandwidth
    assert computed.estimate_s - computed.finals_s == pytest.approx(
        by_bytes.estimate_s + (launches - fewer) * flop_s * UNMEASURED_FLOP_SCALE
        - launches * bytes_s - fewer * flush_s, rel=0.05)
    # once a run measured the kernel's launches, its own scale stands
    shape = RunShape(costs=RunCosts(launch_scale={"matmul": 1.0}), kernel="matmul")
    scaled = make_plan(space, moved, facts, GPU_COSTS, measure,
                       flops=declared_count("matmul", "flops"), shape=shape)
    assert scaled.parts["trials"] == pytest.approx(
        by_bytes.parts["trials"] + (launches - fewer) * flop_s - launches * bytes_s
        - fewer * flush_s, rel=0.05)
    no_flops = PlanCosts(**{**vars(GPU_COSTS), "flops": {}})
    assert make_plan(space, moved, facts, no_flops, measure,
                     flops=declared_count("matmul", "flops")).estimate_s == \
        pytest.approx(by_bytes.estimate_s)
    line = _estimate(str(ROOT / "spaces" / "matmul-8k.yaml"), capsys=capsys)
    assert "finals " in line and "TFLOP/s bfloat16 795" in line
    assert f"bound by its FLOPs {UNMEASURED_FLOP_SCALE:g}× that" in line
    assert scaled.assumptions["flop_scale"] == by_bytes.assumptions["flop_scale"] == 1.0


def test_a_run_keeps_its_reports_seconds_with_its_heatmaps(write_space, tmp_path, capsys,
                                                          monkeypatch):
    from sweeper.devices import open_device
    from sweeper.plan import costs_key, run_costs
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = str(write_space(SMALL_SPACE))
    assert main(["run", path, "--device", "interpret", "--studies-dir", str(tmp_path)]) == 0
    drawn = re.search(r"; (\d+) heatmaps in ", capsys.readouterr().out)
    assert drawn, "no report line"
    kept = run_costs(costs_key(open_device("interpret")))
    assert kept.report_maps == int(drawn.group(1)) >= 2 and kept.report_s > 0


def test_a_study_run_before_gives_its_seconds_a_trial(write_space, tmp_path, capsys):
    from tests.conftest import SMALL_SPACE

    path = str(write_space(SMALL_SPACE))
    plan = ["plan", path, "--device", "interpret", "--studies-dir", str(tmp_path)]
    assert main(plan) == 0
    assert "last run" not in capsys.readouterr().out
    run = ["run", path, "--device", "interpret", "--studies-dir", str(tmp_path), "--quiet",
           "--no-report"]
    assert main([*run, "--trials", "2"]) == 0
    capsys.readouterr()
    assert main(plan) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("the study's last run ")]
    # the 4 configs the run would measure, the 2 the study keeps left out
    assert "2 trials in " in line and " s a trial with its finals: 4 trials at that rate" in line
    assert "power-bound" not in out                 # the interpreter has no power cap
    assert main(run) == 0
    capsys.readouterr()
    assert main(plan) == 0                          # nothing left: no time at that rate
    assert capsys.readouterr().out.splitlines()[-1].endswith(" s a trial with its finals")


def test_an_interpreted_launch_costs_by_its_programs_and_its_bodys_operations(monkeypatch):
    """On the interpreter a launch costs its programs and the tensor operations its body
    runs at the shrunk problem, not its bytes: a copy of 16 tiles costs more than one of
    a single tile at the same bytes, each program adds, a softmax row counts more than a
    copy tile; a kernel that counts none is one copy step a program.  A fresh machine
    takes the interpreter's own start-up and report, and its finals as typical as the
    H200's (unloaded, four of them stopped after 3, 3, 3 and 5 rounds)."""
    from sweeper.devices import open_device
    from sweeper.kernels import declared_count
    from sweeper.plan import RunCosts, model_launch_s, plan_of, run_costs, run_shape
    from sweeper.space import load_space

    device = open_device("interpret")
    costs, facts = device.plan_costs, device.facts()
    space = load_space(ROOT / "spaces" / "copy.yaml")
    copy_ops = declared_count("copy", "interpreted_ops")
    moved = declared_count("copy", "bytes_moved")
    assert moved is not None and declared_count("cuda", "interpreted_ops") is None

    def launch(grid: str, block: int, ops=copy_ops) -> float:
        config = space.resolve({"grid": grid, "block": "128", "BLOCK": str(block),
                                "dtype": "float32", "footprint": "1GiB", "cache": "cold"},
                               facts.env(), facts.max_footprint)
        assert config.problem.n == 4096                   # 16 KiB: the interpreter's cap
        return model_launch_s(config, moved, declared_count("copy", "flops"), costs, ops)

    one = costs.launch_s + costs.program_s
    assert launch("sms", 256) == pytest.approx(one + costs.program_s + 16 * 9 * costs.op_s)
    assert launch("sms", 16384) == pytest.approx(one + costs.program_s + 9 * costs.op_s)
    assert launch("16*sms", 16384) - launch("sms", 16384) == \
        pytest.approx((16 - 1) * facts.sms * costs.program_s)
    assert launch("sms", 256, ops=None) == pytest.approx(
        one + costs.program_s + facts.sms * costs.OPS_PER_PROGRAM * costs.op_s)
    softmax = load_space(ROOT / "spaces" / "softmax.yaml")
    row = softmax.resolve({"grid": "rows", "block": "128", "BLOCK": "4096", "rows": "4096",
                           "cols": "3000", "dtype": "float32", "cache": "cold"},
                          facts.env(), facts.max_footprint)
    ops = declared_count("softmax", "interpreted_ops")
    assert ops is not None and ops(row) == row.problem.dim("rows") * (8 + 11)
    monkeypatch.setenv("SWEEPER_CACHE", str(ROOT / "nonexistent-cache"))
    fresh = run_costs("interpret: nowhere", costs)
    assert (fresh.startup_s, fresh.report_s) == (costs.startup_s, costs.report_s) != \
        (RunCosts.startup_s, RunCosts.report_s)
    shape = run_shape(space, device, report=True, startup=True)
    plan, _ = plan_of(space, device, shape)
    assert plan.parts["start-up"] == costs.startup_s
    assert plan.parts["report"] == pytest.approx(fresh.report_for(plan.maps))
    from sweeper.devices import PlanCosts

    as_h200 = PlanCosts(**{**vars(costs), "finals_rounds": None})
    monkeypatch.setattr(type(device), "plan_costs", as_h200)
    h200, _ = plan_of(space, device, shape)
    assert costs.finals_rounds is None and plan.parts["finals"] == h200.parts["finals"] > 0


def test_a_user_kernels_interpreted_launch_counts_its_triton_functions_operations(
        monkeypatch, capsys):
    """A user's ``sweeper.kernel`` counted no operations, so each program was priced at
    one copy step (9): ``examples/matmul.yaml``, whose program runs 32 operations around
    its loop over K and 26 a step of it (two tile loads with their addresses and masks,
    the ``tl.dot``), measured 20-24 times that model's launch under load where copy
    measured 5, and its run took twice its estimate.  Its launch counts the operations
    of the ``@triton.jit`` function it launches, read from the source (never imported),
    the loop's trips from the config's ``K`` and ``BLOCK_K``; ``plan`` says so."""
    import sys

    from sweeper.devices import open_device
    from sweeper.plan import declared_counts, model_launch_s, plan_of
    from sweeper.space import Problem, load_space

    monkeypatch.chdir(ROOT)
    # another test in this process may have imported it: what matters is that plan does not
    monkeypatch.delitem(sys.modules, "examples.matmul", raising=False)
    device = open_device("interpret")
    costs, facts = device.plan_costs, device.facts()
    space = load_space(ROOT / "examples" / "matmul.yaml", user_code=False)
    moved, flops, ops = declared_counts(space.kernel)
    assert (moved, flops) == (None, None) and ops is not None
    assert ops.named == "matmul_kernel (matmul.py:13)"
    shrunk = space.resolve({a.name: a.labels[0] for a in space.axes}, facts.env(),
                           facts.max_footprint)            # 4096³ shrunk to 32³, one tile
    assert (shrunk.grid, ops(shrunk)) == (1, 32 + 26)
    for block_k, size in ((32, 32), (16, 64), (16, 100)):
        config = dataclasses.replace(shrunk, grid=4, meta={**shrunk.meta, "BLOCK_K": block_k},
                                     problem=Problem("float16", 0, (("M", size), ("N", size),
                                                                    ("K", size))))
        steps = -(-size // block_k)
        assert ops(config) == 4 * (32 + 26 * steps)
        assert model_launch_s(config, lambda _: 0, None, costs, ops) == pytest.approx(
            costs.launch_s + config.grid * (costs.program_s + costs.op_s * ops(config) /
                                            config.grid))
    counted, _ = plan_of(space, device)
    monkeypatch.setattr("sweeper.plan.source_ops", lambda kernel: None)
    uncounted, _ = plan_of(space, device)
    assert counted.parts["trials"] > 2.5 * uncounted.parts["trials"]
    assert "examples.matmul" not in sys.modules                # read, never imported
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main(["plan", "examples/matmul.yaml", "--device", "interpret",
                 "--studies-dir", str(ROOT / "nonexistent-studies")]) == 0
    assert "the estimate counts its launches and, on the interpreter, the tensor operations " \
        "each program of matmul_kernel (matmul.py:13) runs, counted from its source, not " \
        "the bytes it moves" in capsys.readouterr().out


def test_the_builtin_matmul_counts_its_interpreted_operations_from_its_source(monkeypatch):
    """The built-in ``matmul`` declared no count, so an interpreted launch was priced at
    one copy step (9 operations) a program: 18 for spaces/matmul-8k.yaml's interpreter
    command (a grid of ``sms``, two programs here, over 64³ in 32² tiles), whose programs
    run some 400.  It counts its Triton bodies from their source as a user kernel's are:
    about what the tutorial's matmul (examples/matmul.py, the same tiles and steps of K)
    counts, whatever the grid (the persistent loop's tiles are shared among its programs,
    one or all of them), and the split-K reduction's programs where K is split."""
    from sweeper.kernels import declared_count
    from sweeper.plan import declared_counts
    from sweeper.space import Config, Problem

    monkeypatch.chdir(ROOT)
    ops = declared_count("matmul", "interpreted_ops")
    tutorial = declared_counts("examples.matmul:matmul")[2]
    assert ops is not None and tutorial is not None
    meta = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 8, "num_stages": 3}
    builtin = {**meta, "SPLIT_K": 1, "TMA": 0, "EPILOGUE_SUBTILE": 0, "FLATTEN": 0}
    for size in (32, 64, 128):
        problem = Problem("float16", 0, (("M", size), ("N", size), ("K", size)))
        tiles = (size // 32) ** 2
        each = Config(problem, grid=tiles, block=128, meta=builtin)    # a tile a program
        counted = ops(each)
        assert 1.0 <= counted / tutorial(dataclasses.replace(each, meta=meta)) <= 1.5
        # two programs (the sms of the 2-core machine) run all the tiles between them:
        # a program more or less adds or takes its own steps alone, under half a tile's
        one_more = ops(dataclasses.replace(each, grid=tiles + 1)) - counted
        assert 0 < one_more < counted / tiles / 2
        assert ops(dataclasses.replace(each, grid=2)) == counted + (2 - tiles) * one_more
        split = ops(dataclasses.replace(each, meta={**builtin, "SPLIT_K": 2}))
        assert split > counted                 # the reduction's programs besides


def test_an_interpreted_final_is_priced_as_the_interpreter_runs_it(monkeypatch):
    """Each entrant of an interpreted final takes five host-timed samples a round, whose
    median's 95 % interval is their whole range: under load every config tied with the
    fastest, twelve finalists ran all five rounds, and examples/matmul.yaml's finals took
    6.1-7.4 s where the plan, pricing the H200's five finalists (three of them staying)
    and 3.5 rounds, kept about 1 s.  The interpreter's final takes the top five and three
    rounds, and the plan prices every one of them in each: as many entrant-rounds as a
    final of configs that all tie runs."""
    import random

    from sweeper.devices import open_device
    from sweeper.finals import FinalSize, Round, finalists, finals_estimate_s, remeasure
    from sweeper.measure import summarize
    from sweeper.plan import plan_of
    from sweeper.space import Config, Problem, load_space
    from sweeper.store import TrialRecord
    from sweeper.trial import TrialStatus

    device = open_device("interpret")
    size = FinalSize.declared(device.most_finalists, device.most_final_rounds)
    round_ = Round.on(device.measure_spec)
    noise = random.Random(7)

    def samples(n: int) -> list[float]:        # every config alike, as under load
        return [noise.uniform(20.0, 30.0) for _ in range(n)]

    trials = []
    for i in range(12):
        drawn = samples(round_.samples)
        trials.append(TrialRecord(number=i, choice={"n": str(i)}, status=TrialStatus.OK,
                                  config=Config(Problem("float32", 4096), grid=i + 1,
                                                block=32, meta={"BLOCK": 256}),
                                  samples_ms=drawn, stats=summarize(drawn)))
    measured: list[int | None] = []

    def measure_one(t: TrialRecord, rule: Any) -> list[float]:
        measured.append(t.number)
        return samples(rule.repeat)

    def baseline(rule: Any) -> list[float]:
        measured.append(None)
        return samples(rule.repeat)

    entrants = finalists(trials, size)
    final = remeasure(entrants, measure_one, lambda t: 1, baseline=("torch", baseline),
                      per_round=round_.samples, most_rounds=size.rounds)
    assert (len(entrants), final.rounds) == (TOP_K, MIN_ROUNDS)
    # each entrant-round at one second, launches aside: the plan's seconds are its count
    planned = finals_estimate_s(len(trials), 0.0, None, typical=True, round_=round_,
                                overhead_s=1.0, baseline_free=True, size=size,
                                ties=device.plan_costs.finals_tie)
    assert planned == pytest.approx(len(measured))
    # the plan of a space on the interpreter prices its finals so
    priced: list[dict[str, Any]] = []
    monkeypatch.setattr("sweeper.plan.finals_estimate_s",
                        lambda *args, **kwargs: priced.append(kwargs) or 0.0)
    plan_of(load_space(ROOT / "spaces" / "copy-small.yaml"), device)
    assert priced and all(p["size"] == size and p["ties"] for p in priced)

# -- what a run costs beyond its trials, measured and kept per device ----------------------
def test_a_runs_first_compile_in_the_worker_is_counted_apart(tmp_path, monkeypatch):
    """The first binary a worker compiles starts the compiler in its process: on the H200
    softmax's first took 1.7 s and its others 0.14-0.21 s, and a plan counting 0.17 s for
    it put the run at 1.57 times its estimate.  It is kept apart and counted once."""
    import dataclasses

    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.plan import RunCosts, RunShape, make_plan, note_run, run_costs
    from sweeper.space import load_space

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    note_run("GPU S", kernel="softmax", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[0.16, 0.17, 0.2], first_compile_s=1.7, ask_s=None)
    kept = run_costs("GPU S")
    assert (kept.compile_of("softmax"), kept.first_compile_s) == (0.17, {"softmax": 1.7})
    space = load_space(ROOT / "spaces" / "softmax.yaml")
    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)

    def compile_s(costs: RunCosts, **shape: Any) -> float:
        return make_plan(space, declared_count("softmax", "bytes_moved"), facts, GPU_COSTS,
                         space.measure, flops=declared_count("softmax", "flops"), shape=RunShape(
                             kernel="softmax", costs=costs, **shape)).parts["compile"]
    plain = dataclasses.replace(kept, first_compile_s={})
    for shape in ({"sampler": "tpe", "cold": True},            # each in the worker
                  {"sampler": "exhaustive", "cold": True, "compile_workers": 8}):
        # once 1.7 s where 0.17 s was counted (behind a pool: the first trial waits for
        # the pool's compile or its own, whichever it measured)
        assert compile_s(kept, **shape) == pytest.approx(compile_s(plain, **shape) + 1.53)
    # a fresh machine assumes the first compile as the H200 measured it; once the
    # kernel's compiles were measured, only a measured first compile counts apart
    fresh = RunCosts()
    assert fresh.first_compile_of("softmax") == RunCosts.FIRST_COMPILE_S
    assert fresh.first_compile_of("cuda", nvrtc=True) == RunCosts.NVRTC_COMPILE_S
    assert plain.first_compile_of("softmax") == plain.compile_of("softmax")
    as_others = dataclasses.replace(fresh, first_compile_s={"softmax": RunCosts.COMPILE_S})
    assert compile_s(fresh, sampler="tpe", cold=True) == pytest.approx(
        compile_s(as_others, sampler="tpe", cold=True) + RunCosts.FIRST_COMPILE_S -
        RunCosts.COMPILE_S)


def test_a_report_is_estimated_by_its_heatmaps():
    """A report's tables and pictures grow with its maps: on the H200 copy.yaml's 8 took
    0.7 s, 36 took 1.3-1.4 s and matmul-shapes.yaml's 107 took 3.1 s (its pictures 0.5,
    0.9-1.0 and 2.0 s), where one figure for all put the shapes run at 1.49 times its
    estimate, and a slope through the 8 maps' pictures alone at 6.7 s.  The plan counts a
    map per problem and combination of meta-parameter values, and one of the best over
    them, per problem."""
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.plan import RunCosts, make_plan
    from sweeper.space import load_space

    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)

    def maps(name: str) -> int:
        space = load_space(ROOT / "spaces" / name)
        return make_plan(space, declared_count(space.kernel, "bytes_moved"), facts, GPU_COSTS,
                         space.measure, flops=declared_count(space.kernel, "flops")).maps
    # copy: one problem, 7 BLOCK values and the best; shapes: 3 problems x 34 + 3
    assert (maps("copy.yaml"), maps("matmul-shapes.yaml")) == (8, 105)
    fresh = RunCosts()                      # nothing measured: the H200's line
    assert fresh.report_for(8) == pytest.approx(0.7)
    assert 1.3 <= fresh.report_for(36) <= 1.5 and 2.9 <= fresh.report_for(107) <= 3.3
    assert RunCosts(report_s=0.2, report_maps=4).report_for(40) == pytest.approx(0.2)
    assert RunCosts(report_s=1.0, report_maps=0).report_for(2) == pytest.approx(1.5)
    # measured: copy's 8 maps in 0.7 s, 0.1 s of it its files (no imports): the pictures'
    # and tables' own fixed part is not priced per map
    copy = RunCosts(report_s=0.7, report_maps=8, report_fixed_s=0.1)
    assert copy.report_for(8) == pytest.approx(0.7)
    assert copy.report_for(107) == pytest.approx(0.5 + 0.2 / 8 * 107)      # 3.2 s: 3.1 ran
    shapes = RunCosts(report_s=3.1, report_maps=107, report_fixed_s=0.2)
    assert shapes.report_for(8) == pytest.approx(0.6 + 2.5 / 107 * 8)      # 0.8 s: 0.7 ran
    # imports measured (a process that had not imported pandas and the plotting library)
    # are paid once, whatever the maps
    cold = RunCosts(report_s=4.3, report_maps=7, report_fixed_s=3.7)
    assert cold.report_for(9) - cold.report_for(8) == pytest.approx(0.2 / 7)
    assert cold.report_for(7) == pytest.approx(4.3)
    # a time budget keeps that; where the fixed part was not measured, never less than the
    # last report
    assert cold.report_reserve(2) == pytest.approx(4.1 + 0.2 / 7 * 2)
    assert RunCosts(report_s=4.3, report_maps=7).report_reserve(2) == 4.3


def test_a_report_is_scaled_by_its_maps_cells_too(write_space, tmp_path, monkeypatch):
    """A report's pictures grow with their cells as well as their maps (on the 2-core
    development machine 8 maps of replayed copy studies drew in 2.3-2.5 s over 28 cells,
    4.5-5.1 s over 204): a space's last report is scaled to this run's cells, under
    another ``-p`` size of the same maps too, and another space's report is scaled by
    them rather than taken as its maps held.  The run keeps the cells with the report's
    seconds, per space."""
    from sweeper.plan import RunCosts, note_run, run_costs

    small = RunCosts(report_s=2.5, report_maps=8, report_fixed_s=0.1, report_cells=28)
    units = 8 + 28 / RunCosts.CELLS_A_MAP
    assert small.report_for(8, 28) == pytest.approx(2.5)
    assert small.report_for(8, 204) == pytest.approx(
        0.5 + 2.0 / units * (8 + 204 / RunCosts.CELLS_A_MAP))      # 4.5 s: 4.5-5.1 drew
    assert small.report_for(8) == pytest.approx(2.5)                # cells not known
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    note_run("d", kernel="copy", sampler="exhaustive", startup_s=None, report_s=2.5,
             report_maps=8, report_fixed_s=0.1, report_cells=28, compiles_s=[], ask_s=None,
             space="copy-fp32")
    kept = run_costs("d")
    assert kept.reports["copy-fp32"]["report_cells"] == 28
    assert kept.of_space("copy-fp32").report_for(8, 204) == pytest.approx(
        small.report_for(8, 204))
    assert kept.of_space("other").report_for(8, 204) == pytest.approx(
        small.report_for(8, 204))


@pytest.mark.parametrize(("axes", "drawn"), [
    ({"grid": [4], "block": [32, 128], "BLOCK": [128, 512]}, 1),
    ({"grid": [2, 4], "block": [32], "BLOCK": [128]}, 0),
    ({"grid": [2, 4], "block": [32, 64], "BLOCK": [256]}, 1)],
    ids=["one-cell-each", "grid-only", "one-BLOCK"])
def test_the_plan_prices_the_maps_the_report_draws(write_space, tmp_path, capsys,
                                                   monkeypatch, axes, drawn):
    """Each meta value's configs in one cell of their own (BLOCK == 4 * block): the
    report draws one map (its problem's; the others, of one cell, are folded into it),
    and the plan prices one, not a map per meta value and one per problem (three).  Grid
    alone varying: no map can be drawn of one axis, where the plan priced two (the map
    of its one BLOCK and the best over it); the plan and the report share one rule
    (sweeper.drawn_maps).  One BLOCK: its map and the best over it are the same map,
    which the report drew twice and the plan priced twice; one now."""
    from sweeper.devices import open_device
    from sweeper.plan import plan_of
    from sweeper.space import load_space

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(f"""
        kernel: copy
        sampler: exhaustive
        params: {{{", ".join(f"{k}: {v}" for k, v in axes.items())}, dtype: [float32],
                 footprint: [4KiB]}}
        constraints: ["BLOCK == 4 * block or BLOCK == 256"]
        measure: {{warmup: 1, repeat: 3}}
    """)
    plan, _ = plan_of(load_space(path), open_device("interpret", for_plan=True))
    assert plan.maps == drawn
    assert main(["run", str(path), "--device", "interpret", "--studies-dir",
                 str(tmp_path / "st"), "--quiet"]) == 0
    assert (f"; {drawn} heatmap{'s' * (drawn != 1)} in " if drawn else
            "; no heatmap drawn: nothing varies enough to draw a map (report.md says why)"
            ) in capsys.readouterr().out


def test_a_run_keeps_its_costs_per_device_and_the_plan_reads_them(tmp_path, monkeypatch):
    from sweeper.plan import RunCosts, note_run, run_costs

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    assert run_costs("GPU X") == RunCosts()                       # nothing run: the H200's
    note_run("GPU X", kernel="matmul", sampler="auto", startup_s=3.21, report_s=None,
             compiles_s=[0.9, 1.5, 1.1], ask_s=0.05, trials_s=[0.02, 0.03, 0.5],
             launch_scales=[1.2, 1.1, 9.0])
    note_run("GPU Y", kernel="copy", sampler="exhaustive", startup_s=None, report_s=0.7,
             compiles_s=[], ask_s=None)
    x, y = run_costs("GPU X"), run_costs("GPU Y")
    assert (x.startup_s, x.report_s, x.compile_of("matmul"), x.ask_s["auto"]) == \
        (3.21, RunCosts.report_s, 1.1, 0.05)
    assert (x.trial_s, x.launch_scale) == ({"matmul": 0.03}, {"matmul": 1.2})   # medians
    assert (y.report_s, y.report_maps, y.compile_of("copy")) == (0.7, 8, RunCosts.COMPILE_S)
    note_run("GPU Y", kernel="copy", sampler="exhaustive", startup_s=None, report_s=9.0,
             report_maps=107, compiles_s=[], ask_s=None)
    assert (run_costs("GPU Y").report_s, run_costs("GPU Y").report_maps) == (9.0, 107)
    note_run("GPU Y", kernel="copy", sampler="exhaustive", startup_s=None, report_s=0.5,
             report_maps=0, compiles_s=[], ask_s=None)        # nothing drawn: kept as it was
    assert (run_costs("GPU Y").report_s, run_costs("GPU Y").report_maps) == (9.0, 107)
    note_run("GPU Y", kernel="copy", sampler="exhaustive", startup_s=None, report_s=4.3,
             report_maps=7, report_fixed_s=3.7, compiles_s=[], ask_s=None)
    assert run_costs("GPU Y").report_fixed_s == 3.7
    note_run("GPU Y", kernel="copy", sampler="exhaustive", startup_s=None, report_s=9.0,
             report_maps=107, compiles_s=[], ask_s=None)      # a report not broken down
    assert run_costs("GPU Y").report_fixed_s is None
    # a compile in the pool (beside the pool's other processes) is kept apart from one in
    # the worker; each stands in for the other where only one was measured
    note_run("GPU Z", kernel="matmul", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[0.3, 0.5, 0.4], pool_compiles_s=[1.4, 1.6, 1.5], ask_s=None)
    z = run_costs("GPU Z")
    assert (z.compile_of("matmul"), z.compile_of("matmul", pooled=True)) == (0.4, 1.5)
    assert x.compile_of("matmul", pooled=True) == 1.1        # the worker's, none pooled
    note_run("GPU P", kernel="matmul", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], pool_compiles_s=[2.0], ask_s=None)
    assert run_costs("GPU P").compile_of("matmul") == 2.0     # the pool's, none in the worker
    assert (x.scale_of("matmul", True), x.scale_of("copy", False), x.scale_of("copy", True),
            y.scale_of("copy", True)) == (1.2, 1.0, 1.2, 1.0)   # an interpreter: the machine's
    # a GPU kernel not run here: its FLOP-bound launches at UNMEASURED_FLOP_SCALE, a
    # measured one's at its own scale
    from sweeper.plan import UNMEASURED_FLOP_SCALE
    assert (x.scale_of("copy", False, by_flops=True), x.scale_of("matmul", False, by_flops=True),
            x.scale_of("matmul", True, by_flops=True)) == (UNMEASURED_FLOP_SCALE, 1.2, 1.2)
    note_run("interp", kernel="copy", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None, launch_scales=[4.0] * 10, prior_trials=30)
    assert run_costs("interp").launch_scale == {"copy": 4.0}    # nothing else to pull to
    note_run("interp", kernel="add", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None, launch_scales=[2.0] * 10, prior_trials=30)
    assert run_costs("interp").launch_scale["add"] == pytest.approx(
        2.0 ** 0.25 * 4.0 ** 0.75, abs=1e-4)                   # pulled towards copy's


def test_a_machines_first_kernel_keeps_the_load_it_measured(tmp_path, monkeypatch):
    """The interpreter's model is a machine unloaded; under load (load average 7 on the
    2 cores) its launches measured 4-6 times it.  A kernel's first run was pulled towards
    the model's 1 as if it were 50 trials: a 30-trial run at 6 was kept as 1.96, a
    12-trial copy-small run at 4 as 1.31, and the next plan put their trials at a third
    of what they took.  The machine's first kernel is kept as measured; a kernel after it
    is pulled towards what the machine's kernels measured, by the interpreter's prior of
    a few trials, so a run of one or two trials moves its scale part of the way."""
    from sweeper.devices import open_device
    from sweeper.plan import note_run, run_costs

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    prior = open_device("interpret").plan_costs.scale_prior_trials

    def run(kernel: str, ratio: float, trials: int) -> float:
        note_run("interp", kernel=kernel, sampler="exhaustive", startup_s=None,
                 report_s=None, compiles_s=[], ask_s=None, launch_scales=[ratio] * trials,
                 prior_trials=prior)
        return run_costs("interp").launch_scale[kernel]

    assert run("matmul", 6.0, 30) == 6.0
    assert run("copy", 4.0, 12) == pytest.approx(4.0 ** (12 / (12 + prior)) *
                                                 6.0 ** (prior / (12 + prior)), abs=1e-4)
    assert run("copy", 4.0, 12) > 4.0 / 1.25                  # its own 24 trials, mostly
    assert 4.0 < run("add", 2.0, 1) < 6.0                    # one trial: the machine's, mostly


def test_a_small_run_pools_its_launch_ratio_with_what_larger_runs_measured(tmp_path,
                                                                           monkeypatch):
    """A run of spaces/copy.yaml (204 trials) measured the interpreter's launches at 0.134
    of the model; a following run of copy-small (12) at 0.14 replaced that with its own,
    pulled towards 1 by the model's 50 trials (0.68), and the next plan of copy.yaml
    priced its trials at 3.8 times what they took.  Pooled by trials, in log, the scale
    stays where those trials put it; older trials count as at most SCALE_TRIALS_KEPT.
    Another kernel is pulled towards the pooled ratio."""
    import math

    from sweeper.plan import RunCosts, note_run, run_costs

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))

    def run(ratio: float, trials: int) -> RunCosts:
        note_run("interp", kernel="copy", sampler="exhaustive", startup_s=None,
                 report_s=None, compiles_s=[], ask_s=None, launch_scales=[ratio] * trials,
                 prior_trials=50)
        return run_costs("interp")

    first = run(0.134, 204)
    assert first.launch_scale["copy"] == 0.134           # the machine's first kernel
    after = run(0.14, 12)
    pooled = math.exp((200 * math.log(0.134) + 12 * math.log(0.14)) / 212)   # 204, capped
    assert (after.launch_ratio["copy"], after.launch_trials["copy"]) == \
        (pytest.approx(pooled, abs=1e-4), 212)
    assert after.launch_scale["copy"] == pytest.approx(pooled, abs=1e-4)
    # a machine that changed: a new ratio moves the scale, the old trials capped at 200
    later = run(1.0, 200)
    assert later.launch_ratio["copy"] == pytest.approx(
        math.exp(200 * math.log(after.launch_ratio["copy"]) / 400), abs=1e-4)
    # another kernel is pulled towards the ratio the machine's kernels measured, not 1
    note_run("interp", kernel="softmax", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None, launch_scales=[0.145] * 24, prior_trials=50)
    machine = run_costs("interp").launch_ratio["copy"]
    assert run_costs("interp").launch_scale["softmax"] == pytest.approx(
        0.145 ** (24 / 74) * machine ** (50 / 74), abs=2e-4)
    # a kernel not run yet takes the figure a first run is pulled towards: the median of
    # the other kernels' measured ratios, not of their pulled scales
    costs = run_costs("interp")
    ratios = sorted(costs.launch_ratio.values())
    assert costs.scale_of("add", True) == pytest.approx(sum(ratios) / 2)
    assert costs.scale_of("add", True) != pytest.approx(
        sum(costs.launch_scale.values()) / 2, abs=1e-3)
    assert costs.machine_ratio("softmax") == costs.launch_ratio["copy"]
    # a cache from before the pool (a scale alone) takes the run's ratio as it is
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "old"))
    note_run("interp", kernel="copy", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None, launch_scales=[2.0] * 10)
    assert run_costs("interp").launch_scale["copy"] == 2.0
    # what a run's finals cost per entrant-round beyond their launches, kept until measured
    assert run_costs("GPU Z").finals_overhead_s is None
    note_run("GPU Z", kernel="matmul", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None, finals_overhead_s=0.00312)
    note_run("GPU Z", kernel="matmul", sampler="exhaustive", startup_s=None, report_s=None,
             compiles_s=[], ask_s=None)
    assert run_costs("GPU Z").finals_overhead_s == 0.0031
    (tmp_path / "cache" / "run-costs.json").write_text("{not json")
    assert run_costs("GPU X") == RunCosts()                       # damaged: assumed again
    note_run("GPU X", kernel="copy", sampler="exhaustive", startup_s=1.0, report_s=None,
             compiles_s=[], ask_s=None)                           # and written anew
    assert run_costs("GPU X").startup_s == 1.0


def test_the_estimate_adds_start_up_cold_compiles_proposals_cool_downs_and_the_report(
        monkeypatch):
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.measure import DEFAULT_DUTY, SUSTAINED
    from sweeper.plan import UNMEASURED_FLOP_SCALE, UNMEASURED_LOAD_S, RunCosts, RunShape, make_plan
    from sweeper.space import load_space

    space = load_space(ROOT / "spaces" / "matmul-8k.yaml")
    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)
    moved, flops = declared_count("matmul", "bytes_moved"), declared_count("matmul", "flops")
    assert moved is not None

    def plan(shape=None, measure=space.measure):
        return make_plan(space, moved, facts, GPU_COSTS, measure, flops=flops, finals=True,
                         shape=shape)
    bare = plan()
    assert set(bare.parts) == {"start-up", "trials", "compile", "proposals", "finals",
                               "report"}
    assert bare.parts["start-up"] == bare.parts["compile"] == bare.parts["report"] == 0
    costs = RunCosts(startup_s=3.0, report_s=0.5, compile_s={"matmul": 2.0},
                     ask_s={"auto": 0.03}, load_s={"auto": 0.1})
    warm = plan(RunShape(sampler="auto", kernel="matmul", costs=costs, report=True,
                         startup=True))
    # a power-bound sweep under auto also loads the GPU before a trial's samples where it
    # idled for the proposal; an exhaustive one hands its next config over at once
    assert "exhaustive" not in costs.load_s and not RunCosts().load_s   # none measured
    # where none was measured, each of auto's power-bound trials takes the whole load: its
    # proposal outlasts IDLE_S; an exhaustive sweep's next config is handed over at once
    assert UNMEASURED_LOAD_S["auto"] == SUSTAINED.seconds
    fresh = plan(RunShape(sampler="auto", kernel="matmul", costs=RunCosts(ask_s={})))
    assert fresh.estimate_s == pytest.approx(bare.estimate_s
                                             + SUSTAINED.seconds * bare.trials)
    assert warm.estimate_s == pytest.approx(bare.estimate_s + 3.0 + costs.report_for(warm.maps)
                                            + (0.03 + costs.load_s["auto"]) * bare.trials)
    exhaustive = plan(RunShape(kernel="matmul", costs=costs))
    assert exhaustive.parts["trials"] == pytest.approx(bare.parts["trials"])
    cool = plan(RunShape(sampler="auto", kernel="matmul", costs=costs),
                measure=dataclasses.replace(space.measure, duty="off"))
    assert cool.parts["trials"] == pytest.approx(plan(measure=dataclasses.replace(
        space.measure, duty="off")).parts["trials"])             # no power schedule: no load
    # what this machine measured of the kernel: a trial's own seconds, its launches' scale
    learned = plan(RunShape(kernel="matmul", costs=RunCosts(
        trial_s={"matmul": 0.1}, launch_scale={"matmul": 2.0})))
    # (the bare plan's launches, every one FLOP-bound at 8192³, at the unmeasured scale)
    launches = (bare.parts["trials"] - bare.trials * GPU_COSTS.compile_s) / UNMEASURED_FLOP_SCALE
    assert learned.parts["trials"] == pytest.approx(bare.trials * 0.1 + 2 * launches, rel=0.02)
    # cold: 2 s a binary, in 8 processes while the GPU measures (a plan, or auto's model's
    # favourites), else each in the worker, followed by the sustained load of a
    # power-bound sweep
    pooled = plan(RunShape(kernel="matmul", cold=True, compile_workers=8, costs=costs))
    from sweeper.kernels._binaries import binary_of
    from sweeper.study import resolved

    binaries = len({binary_of(c) for _, c in resolved(space, facts.env(), None)
                    if not isinstance(c, Exception)})      # configs differing by grid share
    assert 0 < binaries < pooled.valid
    assert pooled.parts["compile"] == pytest.approx(
        2.0 + max(0.0, binaries * 2.0 / 8 - bare.parts["trials"]))
    serial = plan(RunShape(sampler="tpe", kernel="matmul", cold=True, costs=costs))
    assert serial.parts["compile"] == pytest.approx(binaries * (2.0 + 0.2))
    # each from what a compile costs where it runs: in the pool beside the others, or in
    # the worker alone
    split = dataclasses.replace(costs, compile_s={"matmul": 0.4},
                                pool_compile_s={"matmul": 2.0})
    assert plan(RunShape(kernel="matmul", cold=True, compile_workers=8, costs=split)
                ).parts["compile"] == pytest.approx(pooled.parts["compile"])
    assert plan(RunShape(sampler="tpe", kernel="matmul", cold=True, costs=split)
                ).parts["compile"] == pytest.approx(binaries * (0.4 + 0.2))
    # a power-bound kernel's finals follow cool-downs; a space's own cool-down precedes
    # every config's samples too
    assert bare.parts["finals"] > plan(measure=dataclasses.replace(
        space.measure, duty="off")).parts["finals"]
    cool = plan(measure=dataclasses.replace(space.measure, duty="cool", duty_s=0.5))
    assert cool.parts["trials"] == pytest.approx(bare.parts["trials"] + 0.5 * bare.trials)
    assert DEFAULT_DUTY.kind == "cool"
    # a final's host seconds per entrant-round, as this machine's last finals measured them
    off = dataclasses.replace(space.measure, duty="off")
    assumed = plan(measure=off).parts["finals"]
    measured = plan(RunShape(costs=RunCosts(finals_overhead_s=0.001)), measure=off
                    ).parts["finals"]
    rounds = MIN_ROUNDS + 0.5             # one problem's final: the top five, three of
    entrant_rounds = TOP_K + FINALS_STAYING * (rounds - 1) + rounds   # them later, the baseline
    assert assumed - measured == pytest.approx(entrant_rounds * (FINALS_OVERHEAD_S - 0.001))


def test_a_run_keeps_what_its_report_took_beyond_the_pictures(write_space, tmp_path,
                                                              monkeypatch):
    """The report's tables and files (pandas' and the plotting library's imports among
    them) take about the same whatever the maps; a run keeps their seconds apart from the
    pictures', so the next estimate and time budget price a map at what drawing it took."""
    import json

    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--studies-dir",
                 str(tmp_path / "studies"), "--quiet"]) == 0
    (costs,) = json.loads((tmp_path / "cache" / "run-costs.json").read_text()).values()
    assert costs["report_maps"] > 0
    assert 0 < costs["report_fixed_s"] <= costs["report_s"]


def test_a_report_that_redrew_nothing_leaves_the_reports_costs_as_they_were(
        write_space, tmp_path, monkeypatch):
    """A resumed run whose report keeps every heatmap unchanged drew nothing: its seconds
    say nothing of what a map costs.  Kept beside the maps it kept, they priced a map at
    nearly nothing, and the next `--time 40s` run on the interpreter wrote a report of
    8 maps that took 15.4 s and ended at 48.4 s."""
    import json

    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(SMALL_SPACE)
    run = ["run", str(path), "--device", "interpret", "--studies-dir",
           str(tmp_path / "studies"), "--quiet"]
    assert main(run) == 0
    cache = tmp_path / "cache" / "run-costs.json"
    (first,) = json.loads(cache.read_text()).values()
    assert main(run) == 0                                # complete: every map unchanged
    (again,) = json.loads(cache.read_text()).values()
    kept = ("report_s", "report_maps", "report_fixed_s")
    assert {k: again[k] for k in kept} == {k: first[k] for k in kept}


def test_plan_refuses_a_gpu_only_kernel_on_the_interpreter_as_run_does(tmp_path, capsys):
    """A space ``run`` refuses on this device, ``plan`` refuses with the same one line and
    exit status 2, printing nothing else (it said 'would measure nothing' and exited 0,
    so a script that plans before it runs went on to a run that could not start)."""
    from tests.conftest import ROOT

    space = str(ROOT / "spaces" / "cuda-copy.yaml")
    assert main(["plan", space, "--device", "interpret"]) == 2
    planned = capsys.readouterr()
    assert main(["run", space, "--device", "interpret", "--studies-dir",
                 str(tmp_path / "st")]) == 2
    ran = capsys.readouterr()
    assert planned.out == ran.out == "" and planned.err == ran.err == (
        "sweeper: kernel cuda runs on a CUDA GPU only (compiled CUDA C); device interpret "
        "cannot run it: run on a GPU (leave out --device) or replay a recorded table "
        "(--device replay:TABLE.csv)\n")
    assert not (tmp_path / "st").exists()
    assert main(["plan", space]) == 0                    # the GPU's plan, assumed or not
    assert "estimated time" in capsys.readouterr().out


def test_plan_refuses_a_space_of_no_valid_config_as_run_does(write_space, tmp_path, capsys):
    """Every config ruled out: ``plan`` says what removed them, then refuses in run's line
    with exit status 2, estimating nothing (it printed 'would measure 0' and an estimated
    time before the refusal)."""
    from tests.conftest import SMALL_SPACE

    path = str(write_space(SMALL_SPACE, "s.yaml"))
    none = ["--device", "interpret", "-p", "BLOCK=16"]
    assert main(["plan", path, *none]) == 2
    planned = capsys.readouterr()
    assert main(["run", path, *none, "--studies-dir", str(tmp_path / "st")]) == 2
    ran = capsys.readouterr()
    assert planned.err == ran.err and "no config can be launched" in ran.err
    assert planned.out.endswith("constraints and values remove 4; 0 valid\n"
                                "       4  constraint 'BLOCK >= 4 * block' is false\n")
    assert not (tmp_path / "st").exists()


def test_plan_says_a_space_time_budget_as_the_run_does(write_space, capsys):
    """``budget.time`` bounds the estimate as it bounds the run: never scaled down part by
    part (a budget of 10 ms printed an estimate of 0 s with no parts)."""
    from tests.conftest import SMALL_SPACE

    def estimate(budget: str) -> str:
        path = write_space(SMALL_SPACE + f"    budget: {{time: {budget}}}\n")
        assert main(["plan", str(path), "--device", "interpret"]) == 0
        (line,) = [x for x in capsys.readouterr().out.splitlines()
                   if x.startswith("estimated time: ")]
        return line

    assert estimate("10ms").startswith("estimated time: ") and (
        "s, the start-up alone, longer than the time budget of 0.01 s: it likely measures "
        "nothing (6 trials would take ") in estimate("10ms")
    line = estimate("1000h")
    assert "budget" not in line and "would take" not in line and "start-up " in line


def test_plan_takes_runs_budgets_and_plans_the_run_they_bound(write_space, capsys):
    """``plan --trials N --time T`` plans the run ``run --trials N --time T`` starts: the
    configs the trial budget lets it measure, saying that budget binds, the estimate
    bounded by the time budget, both over the space's own budget; a bad value is refused
    as ``run`` refuses it."""
    from tests.conftest import SMALL_SPACE

    path = str(write_space(SMALL_SPACE + "    budget: {trials: 1, time: 1000h}\n"))
    plan = ["plan", path, "--device", "interpret"]            # 6 valid configs

    def said(*options: str) -> str:
        assert main([*plan, *options]) == 0
        return capsys.readouterr().out

    assert "would measure 1 of 6 (budget: 1 trials) on " in said()       # the space's
    assert "would measure 2 of 6 (budget: 2 trials) on " in said("--trials", "2")
    out = said("--trials", "40", "--time", "10ms")
    assert "would measure 6 (budget: 40 trials) on " in out              # does not bind
    assert "longer than the time budget of 0.01 s: it likely measures nothing (6 trials " \
        "would take " in out
    for bad in (["--trials", "0"], ["--time", "-3s"], ["--time", "soon"]):
        assert main([*plan, *bad]) == 2
        refused = capsys.readouterr().err
        assert main(["run", path, "--device", "interpret", *bad]) == 2
        assert refused == capsys.readouterr().err.replace("sweeper run", "sweeper plan")
        assert refused.startswith(f"sweeper plan: argument {bad[0]}: ")


def test_plan_counts_the_configs_one_at_a_time_measures_not_every_valid_one(
        write_space, tmp_path, capsys):
    """One-at-a-time measures its baseline and each other value of each axis alone: the
    plan counts those, as the run's progress does (it counted 408 trials and 39 s for
    spaces/copy-oat.yaml's 17 on the interpreter), a ruled-out one of them left out."""
    path = write_space("""
        kernel: copy
        sampler: {name: one-at-a-time, baseline: {BLOCK: 128}}
        params:
          grid: [sms, 2*sms, 4*sms]
          block: [32, 64, 128, 256]
          BLOCK: [128, 256, 512]
          footprint: [4KiB]
        constraints: ["BLOCK >= block"]
        measure: {warmup: 0, repeat: 2}
    """, "oat.yaml")
    assert main(["plan", str(path), "--device", "interpret"]) == 0
    out = capsys.readouterr().out
    # 36 configs, 3 ruled out; the plan: the baseline (2*sms, 64, 128), 2 grids, 3 blocks
    # (256 with BLOCK 128 ruled out: not measured), 2 BLOCKs
    assert "33 valid\n" in out and "would measure 7 on Triton interpreter (CPU)\n" in out, out
    assert main(["run", str(path), "--device", "interpret", "--quiet", "--no-report",
                 "--studies-dir", str(tmp_path / "studies")]) == 0
    assert "done: 7 measured, 0 failed, 1 skipped by constraints" in capsys.readouterr().out


def test_a_process_the_command_restarted_into_keeps_no_start_up_cost(write_space, tmp_path,
                                                                      monkeypatch):
    """execve keeps the process's start time: a restarted command's start-up holds the
    sweeps of the processes before it (24 s after twelve hung trials), which the next
    estimate must not take for what a start-up costs."""
    from sweeper import plan
    from sweeper.engine import RunOptions, run_sweep
    from sweeper.engine._options import SpaceSource
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(SMALL_SPACE)
    noted: list[dict[str, Any]] = []
    real = plan.note_run
    monkeypatch.setattr(plan, "note_run", lambda *a, **kw: (noted.append(kw), real(*a, **kw)))

    def run(study: str) -> None:
        run_sweep(RunOptions(space=SpaceSource(path=str(path)), device="interpret",
                             studies_dir=str(tmp_path), study=study, quiet=True,
                             report=False, clock_from_start=True))

    run("first")
    assert noted[-1]["startup_s"] is not None and noted[-1]["startup_s"] > 0
    monkeypatch.setenv("SWEEPER_RESTARTS", "1")
    run("restarted")
    assert noted[-1]["startup_s"] is None and noted[-1]["setup_s"] is None


def test_run_prints_its_estimate_and_the_wall_against_it(write_space, tmp_path, capsys):
    from tests.conftest import SMALL_SPACE

    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
                 "--no-report", "--timing"]) == 0
    out = capsys.readouterr().out
    assert "estimated time: " in out and " for 6 trials (" in out
    assert "s in all (estimated " in out


def test_the_runs_estimate_is_of_the_budget_the_run_has(write_space, tmp_path, monkeypatch):
    """``--trials`` and ``--time`` bound the estimate a run prints, as they bound the run:
    a run of two trials is not priced as the whole space."""
    from sweeper.devices import open_device
    from sweeper.engine import RunOptions, _costs
    from sweeper.engine._clock import RunClock
    from sweeper.engine._options import SpaceSource
    from sweeper.plan import RunCosts, _costs_path, costs_key
    from sweeper.space import load_space
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(SMALL_SPACE)
    space, device = load_space(path), open_device("interpret")
    # this machine's runs: no start-up or report, a second of each trial's own
    costs = RunCosts(startup_s=0.0, report_s=0.0, trial_s={"copy": 1.0})
    _costs_path().parent.mkdir(parents=True)
    _costs_path().write_text(json.dumps({costs_key(device): dataclasses.asdict(costs)}))
    said: list[str] = []

    def estimate(**budget: Any) -> float:
        options = RunOptions(space=SpaceSource(path=str(path)), device="interpret",
                             report=False, **budget)
        seconds = _costs.estimate(said.append, options, space, device, RunClock(first=False))
        assert seconds is not None
        return seconds

    whole = estimate()                         # a second of each trial's own, and finals
    assert " for 6 trials (trials 6 s" in said[-1] and whole > 6.0
    assert estimate(trials=2) < whole / 2
    assert " for 2 trials (trials 2 s" in said[-1]
    assert estimate(time_s=3.0) == pytest.approx(3.0)
    assert said[-1].startswith("estimated time: 3 s, the time budget (6 trials would take ")
    assert " s: trials 6 s" in said[-1]            # the parts of the whole, not scaled down

    # a resumed run measures none of the configs its study answered, and they count
    # towards --trials
    from sweeper.store import TrialRecord
    from sweeper.study import resolved
    from sweeper.trial import TrialResult, TrialStatus

    valid = [(c, o) for c, o in resolved(space, device.facts().env(),
                                         device.facts().max_footprint)
             if not isinstance(o, Exception)]
    kept = [TrialRecord.from_result(n, c, o, TrialResult(TrialStatus.OK), "", 0.0)
            for n, (c, o) in enumerate(valid[:4])]
    options = RunOptions(space=SpaceSource(path=str(path)), device="interpret", report=False)
    _costs.estimate(said.append, options, space, device, RunClock(first=False), kept)
    assert " for 2 trials (trials 2 s" in said[-1]
    _costs.estimate(said.append, dataclasses.replace(options, trials=5), space, device,
                    RunClock(first=False), kept)
    assert " for 1 trial (trials 1 s" in said[-1]


def test_a_trial_that_compiled_keeps_its_compile_apart_from_its_own_seconds(
        tmp_path, monkeypatch, write_space):
    """The plan adds a cold cache's compiles and a power schedule's seconds apart, so a
    trial's own seconds leave out what its first launch spent compiling and its cool-down
    or load (else a cold run's trials count them twice)."""
    from sweeper.devices import open_device
    from sweeper.engine._costs import note_costs
    from sweeper.measure import summarize
    from sweeper.plan import costs_key, run_costs
    from sweeper.space import load_space
    from sweeper.store import TrialRecord
    from sweeper.sweep._summary import SweepSummary
    from sweeper.trial import TrialStatus
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space, device = load_space(write_space(SMALL_SPACE)), open_device("interpret")
    assert device.measure_spec(space.measure).warmup == 1

    def trial(number: int, cold_s: float, wall_s: float) -> TrialRecord:
        """Three samples of 1 ms after one warm-up and the first launch."""
        return TrialRecord(number=number, choice={"block": str(number)},
                           status=TrialStatus.OK, samples_ms=[1.0] * 3,
                           stats=summarize([1.0] * 3), cold_s=cold_s, wall_s=wall_s)

    class Clock:
        report_maps = report_fixed_s = report_cells = None

        def startup_s(self) -> None:
            return None

        def setup_s(self) -> None:
            return None

        def steps(self) -> dict[str, float]:
            return {}

    # 0.1 s of each trial's own; the last two also compiled for 0.5 s in their first launch,
    # and the last was loaded for 0.2 s by its power schedule after the GPU idled
    trials = [trial(0, 0.001, 0.105), trial(1, 0.501, 0.605), trial(2, 0.501, 0.805)]
    trials[2].seconds = {"load": 0.2}
    # the interpreter compiles nothing for a GPU and its plan counts no compiles: a first
    # launch's seconds stay the trial's own there
    note_costs(space, device, Clock(), SweepSummary(trials=trials))
    assert run_costs(costs_key(device)).trial_s["copy"] == pytest.approx(0.6, abs=1e-4)
    monkeypatch.setattr(type(device), "measures_gpu", True)      # as on a GPU
    note_costs(space, device, Clock(), SweepSummary(trials=trials))
    kept = run_costs(costs_key(device))
    assert kept.trial_s["copy"] == pytest.approx(0.1, abs=1e-4)
    assert kept.compile_s["copy"] == pytest.approx(0.501) and not kept.pool_compile_s
    # a run's first trial starts the worker's launcher: a run of two whose first took a
    # second of its own prices a trial as its second did
    note_costs(space, device, Clock(), SweepSummary(trials=[trial(0, 0.001, 1.005),
                                                            trial(1, 0.001, 0.205)]))
    assert run_costs(costs_key(device)).trial_s["copy"] == pytest.approx(0.2, abs=1e-4)
    # under measure.duty auto, the loads of the power-bound trials that compiled nothing
    # are the sampler's (a compile's own load is priced with it); the first trial aside
    assert space.measure.duty == "auto" and space.sampler.name == "exhaustive"
    hot = [trial(0, 0.001, 0.5), trial(1, 0.001, 0.3), trial(2, 0.501, 0.8),
           trial(3, 0.001, 0.2), trial(4, 0.001, 0.1)]
    for t, load in zip(hot, (0.2, 0.15, 0.2, 0.05, 0.0), strict=True):
        t.duty, t.seconds = "configs sampled back to back under sustained load", {"load": load}
    hot[4].seconds = {}                    # no pause before it: no load
    note_costs(space, device, Clock(), SweepSummary(trials=hot))
    assert run_costs(costs_key(device)).load_s["exhaustive"] == pytest.approx(0.2 / 3, abs=1e-4)
    hot[1].seconds = {"cool-down": 0.1, "load": 0.15}     # a cool-down schedule's: none
    note_costs(space, device, Clock(), SweepSummary(trials=hot))
    assert run_costs(costs_key(device)).load_s["exhaustive"] == pytest.approx(0.05 / 2, abs=1e-4)


# -- compiles per distinct binary, looked up in the machine's caches ----------------------
def _valid(space, facts) -> list:
    from sweeper.study import resolved

    return [c for _, c in resolved(space, facts.env(), facts.max_footprint)
            if not isinstance(c, Exception)]


def _softmax_warm(tmp_path: Path, monkeypatch: Any) -> Path:
    """Fresh sweeper and Triton caches under ``tmp_path``, Triton's holding one binary of
    softmax (some other shape): the kernel is warm, no binary of a space is; the entry's
    folder."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    entry = tmp_path / "triton" / "A1B2"
    entry.mkdir(parents=True)
    (entry / "_softmax_body.json").write_text("{}")
    return entry


def test_new_shapes_of_a_warm_kernel_compile_and_binaries_run_before_load(tmp_path,
                                                                          monkeypatch):
    """The plan counts a compile per binary no run on this machine ran (Triton's: per
    problem, block and constexprs), whatever else of the kernel is cached: a new shape of
    a kernel whose other shapes are in Triton's cache compiles every binary; a binary a
    run's trials ran loads; none does once Triton's folder holds nothing of the kernel."""
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.kernels._binaries import note_built, triton_binaries
    from sweeper.plan import RunCosts, RunShape, make_plan
    from sweeper.space import load_space

    entry = _softmax_warm(tmp_path, monkeypatch)
    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)
    moved = declared_count("softmax", "bytes_moved")
    assert moved is not None
    space = load_space(ROOT / "benchmarks" / "spaces" / "softmax-fp32-8k.yaml")
    configs = _valid(space, facts)
    assert len(configs) == 64                   # 4 grids x 4 blocks x 4 BLOCKs
    costs = RunCosts(compile_s={"softmax": 0.3})

    def plan(space, workers=0):
        shape = RunShape(kernel="softmax", compile_workers=workers, costs=costs,
                         binaries=triton_binaries("GPU T", "softmax"))
        return make_plan(space, moved, facts, GPU_COSTS, space.measure, shape=shape)

    new = plan(space)                           # the kernel is warm, this shape is not
    assert (new.binaries, new.cached) == (16, 0)         # grids share a block's binary
    assert new.parts["compile"] == pytest.approx(16 * 0.3)
    # a run whose trials ran the binaries of BLOCK 1024 and 2048 (at every grid)
    note_built("GPU T", "softmax", [c for c in configs if c.meta["BLOCK"] <= 2048])
    half = plan(space)
    assert (half.binaries, half.cached) == (16, 8)
    assert half.parts["compile"] == pytest.approx(8 * 0.3)
    assert half.parts["trials"] == pytest.approx(new.parts["trials"])   # loads: in trial_s
    # another shape of the same kernel: its binaries are new, however warm the others
    wider = load_space(ROOT / "benchmarks" / "spaces" / "softmax-fp32-8k.yaml",
                       ["cols=4096"])
    assert (plan(wider).binaries, plan(wider).cached) == (16, 0)
    # the same keys on another GPU are not cached
    assert not triton_binaries("GPU U", "softmax").cached(
        triton_binaries("GPU T", "softmax").key(configs[0]))
    # a pool started once a trial compiled: the worker compiles its first 8 s itself
    assert plan(space, workers=8).parts["compile"] == pytest.approx(8 * 0.3)
    (entry / "_softmax_body.json").unlink()     # Triton's cache emptied: all compile
    gone = plan(space)
    assert (gone.binaries, gone.cached) == (16, 0)
    assert gone.parts["compile"] == pytest.approx(16 * 0.3)


def test_a_lazily_started_pool_leaves_the_worker_its_first_compiles(monkeypatch):
    """Where the kernel has binaries cached, the compile pool starts once a trial
    compiled: the worker compiles ``LAZY_POOL_S`` of binaries itself, the pool the rest
    beside the trials left; where nothing of the kernel is cached the pool starts with
    the sweep (the first compile waited for)."""
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.kernels._binaries import Binaries, binary_of
    from sweeper.plan import LAZY_POOL_S, RunCosts, RunShape, make_plan
    from sweeper.space import load_space

    space = load_space(ROOT / "benchmarks" / "spaces" / "matmul-k256.yaml")
    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)
    none_cached = Binaries("triton", binary_of, lambda _: False)
    costs = RunCosts(compile_s={"matmul": 0.4}, pool_compile_s={"matmul": 1.6})

    def plan(cold):
        shape = RunShape(kernel="matmul", cold=cold, compile_workers=8, costs=costs,
                         binaries=none_cached)
        return make_plan(space, declared_count("matmul", "bytes_moved"), facts, GPU_COSTS,
                         space.measure, flops=declared_count("matmul", "flops"), shape=shape)
    lazy, early = plan(False), plan(True)
    assert (lazy.binaries, lazy.cached, lazy.valid) == (72, 0, 108)
    trials = lazy.parts["trials"]
    assert LAZY_POOL_S / 0.4 == 20                     # the worker's 20, the pool's 52
    assert lazy.parts["compile"] == pytest.approx(
        20 * 0.4 + max(0.0, 52 * 1.6 / 8 - trials * 52 / 72))
    assert lazy.parts["compile"] > 8.0
    assert early.parts["compile"] == pytest.approx(1.6 + max(0.0, 72 * 1.6 / 8 - trials))


def test_cuda_c_configs_count_nvrtc_compiles_by_their_cache_key(tmp_path, monkeypatch,
                                                                capsys):
    """A ``cuda`` kernel's binaries are NVRTC's cache keys (its defines: block, VEC,
    UNROLL, dtype; never the grid): each compiles where the CUDA cache lacks it, at the
    kernel's measured compile else 0.1 s, and one compiled before (for the cache's arch
    and NVRTC version) loads."""
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels._binaries import cuda_binaries, newest_target
    from sweeper.kernels._cuda_build import CudaLaunch, _defines, compiled
    from sweeper.plan import RunCosts, RunShape, make_plan
    from sweeper.space import load_space
    from tests.test_cuda_kernel import FakeCompiler

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)
    space = load_space(ROOT / "spaces" / "cuda-copy.yaml")
    options = dict(space.kernel_options)
    configs = _valid(space, facts)
    assert len(configs) == 225

    def plan(costs=None):
        shape = RunShape(kernel="cuda", costs=costs or RunCosts(),
                         binaries=cuda_binaries(options))
        return make_plan(space, lambda _: 0, facts, GPU_COSTS, space.measure, shape=shape)
    fresh = plan()                                  # nothing compiled: 5 blocks x 3 x 3
    assert (fresh.binaries, fresh.cached) == (45, 0)
    assert fresh.parts["compile"] == pytest.approx(45 * RunCosts.NVRTC_COMPILE_S)
    assert plan(RunCosts(compile_s={"cuda": 0.06})).parts["compile"] == \
        pytest.approx(45 * 0.06)                    # as measured for the kernel
    # compile the VEC=4 configs' binaries (15 of them) into the cache, as a run does
    launch = CudaLaunch(Path(options["source"]), options["entry"], [], None, "")
    compiler = FakeCompiler()
    for config in configs:
        if config.meta["VEC"] == 4:
            compiled(launch.source, *_defines(launch, config), compiler)
    assert len(compiler.calls) == 15               # 75 configs: the grids share a binary
    assert newest_target(tmp_path / "cache" / "cuda") == ("sm_90", "12.4")
    warm = plan()
    assert (warm.binaries, warm.cached) == (45, 15)
    assert warm.parts["compile"] == pytest.approx(30 * RunCosts.NVRTC_COMPILE_S)
    # `sweeper plan` says so (the CUDA device assumed: no driver here)
    def missing() -> Any:
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(_gpu_query, "_driver", missing)
    assert main(["plan", str(ROOT / "spaces" / "cuda-copy.yaml")]) == 0
    assert ("  45 binaries: 15 compiled on this machine already (a load each), 30 to "
            "compile (NVRTC's, per cache key)\n") in capsys.readouterr().out


def test_a_cuda_c_kernel_is_planned_by_the_bytes_its_tensors_move():
    """A ``cuda`` kernel's bytes come from its declared tensors (each input read once,
    each output written once: 2 GiB a launch of the 1 GiB copy; an input written in place
    counts twice), or from its ``bytes_moved`` option where given, and its FLOPs from
    ``flops``: read from the options alone, so ``sweeper plan`` prices the launches by
    the bandwidth, imports no torch, and no longer says it counts launches only."""
    import subprocess
    import sys

    from sweeper.devices import DeviceFacts
    from sweeper.plan import declared_counts
    from sweeper.space import load_space

    space = load_space(ROOT / "spaces" / "cuda-copy.yaml")
    options = dict(space.kernel_options)
    moved, flops, ops = declared_counts("cuda", options)
    problem = next(iter(_valid(space, DeviceFacts(name="t", sms=132, l2_bytes=1)))).problem
    assert problem.n == 1 << 28 and moved(problem) == 2 << 30
    assert flops is None and ops is None
    in_place = {**options, "outputs": '["src"]', "inputs": '{"src": "n", "w": ["n", "int8"]}'}
    assert declared_counts("cuda", in_place)[0](problem) == (2 * 4 + 1) << 28
    stated = {**options, "bytes_moved": "3 * n * itemsize", "flops": "n"}
    moved, flops, _ = declared_counts("cuda", stated)
    assert moved(problem) == 3 << 30 and flops is not None and flops(problem) == 1 << 28
    assert declared_counts("cuda", None) == (None, None, None)
    script = ("import sys; from sweeper.cli import main; "
              "assert main(['plan', 'spaces/cuda-copy.yaml']) == 0; "
              "print(sorted(m for m in ('torch', 'triton', 'cupy') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "[]"
    assert "counts launches only" not in run.stdout and "trials " in run.stdout


def test_copy_strided_is_planned_by_the_dram_sectors_its_order_reads():
    """``copy-strided`` moves 2 n elements whatever the order, but a read further apart
    than a 32-byte sector costs a sector: the plan prices a launch by ``dram_bytes``
    (dst written whole, each distinct src element read at up to a sector), which is the
    bytes moved at stride 1, a sector an element for a transpose or a wide stride, and
    n / gcd(stride, n) elements where the order repeats them (the L2 serves the rest);
    the kernels whose order is contiguous keep their bytes moved."""
    from sweeper.core import Problem
    from sweeper.plan import declared_counts
    from tests.test_library import strided

    moved, _, _ = declared_counts("copy-strided")
    n = 1 << 26
    assert moved(strided(n, 1, 0)) == 2 * 4 * n                     # a plain copy
    assert moved(strided(n, 4096, 1)) == 4 * n + 32 * n             # a transpose: 4.5x
    assert moved(strided(n, 33, 0)) == 4 * n + 32 * n               # every element, apart
    assert moved(strided(n, 2, 0)) == 4 * n + (n // 2) * 8          # half the elements
    assert moved(strided(n, 4096, 0)) == 4 * n + (n // 4096) * 32   # a column, repeated
    assert moved(strided(3 * (1 << 25) + 1, 3, 0, "float16")) == 8 * (3 * (1 << 25) + 1)
    copy, _, _ = declared_counts("copy")
    plain = Problem("float32", 4 * n, (("n", n),))
    assert copy(plain) == 2 * 4 * n


def test_new_shapes_of_a_warm_kernel_start_the_compile_pool_with_the_sweep(tmp_path,
                                                                           monkeypatch):
    """A kernel with other shapes in Triton's cache, whose binaries for this space no run
    here ran, starts its compile pool with the sweep, as a cold kernel does: the worker
    would compile them for EARLY_POOL_S or more.  Where runs ran enough of them the pool
    waits for a trial that compiled.  The run's decision (prespawn, from the driver's
    facts) and the plan's are one function."""
    from types import SimpleNamespace

    from sweeper.devices import DeviceFacts
    from sweeper.engine import _prespawn
    from sweeper.kernels._binaries import note_built
    from sweeper.plan import EARLY_POOL_S, RunCosts, device_key, pool_from_start
    from sweeper.space import load_space

    _softmax_warm(tmp_path, monkeypatch)
    facts = DeviceFacts(name="GPU T", sms=132, l2_bytes=60 << 20)
    key = device_key("cuda", facts)
    space = load_space(ROOT / "benchmarks" / "spaces" / "softmax-fp32-8k.yaml")
    configs = _valid(space, facts)
    costs = RunCosts(compile_s={"softmax": 0.3})          # 16 binaries: 4.8 s to compile
    assert 16 * 0.3 >= EARLY_POOL_S > 8 * 0.3
    assert pool_from_start(space, facts, key, costs)
    note_built(key, "softmax", [c for c in configs if c.meta["BLOCK"] <= 2048])
    assert not pool_from_start(space, facts, key, costs)              # 8 left: 2.4 s
    assert pool_from_start(space, facts, key, RunCosts(compile_s={"softmax": 0.4}))
    options = SimpleNamespace(device="cuda", compile_workers=None, gpus=None)
    monkeypatch.setattr("sweeper.devices._gpu_query.query_gpu", lambda index: facts)
    monkeypatch.setattr("sweeper.plan.run_costs", lambda key: costs if key == "cuda: GPU T"
                        else RunCosts())                  # as runs here measured them
    assert not _prespawn.pool_starts_ahead(options, space)
    wider = load_space(ROOT / "benchmarks" / "spaces" / "softmax-fp32-8k.yaml",
                       ["cols=4096"])
    assert _prespawn.pool_starts_ahead(options, wider)               # a new shape
    assert not _prespawn.pool_starts_ahead(
        SimpleNamespace(device="cuda", compile_workers=0, gpus=None), wider)
    assert not _prespawn.pool_starts_ahead(
        SimpleNamespace(device="interpret", compile_workers=None, gpus=None), wider)
    torch_op = load_space(ROOT / "spaces" / "torch-op-gelu.yaml")   # no Triton to compile
    assert not pool_from_start(torch_op, facts, key, RunCosts(compile_s={"torch-op": 9.0}))


def test_a_flop_bound_kernel_of_short_samples_half_prices_cool_down_finals():
    """matmul-shapes' samples (2-6 ms on the H200) are too short to trip the power limiter
    alone, yet a GPU hot from earlier work found them power-bound in two runs of four and
    their finals took 100 ms cool-downs: the plan prices those cool-downs at
    ``POWER_MAYBE``, between the two; a long-sample kernel's finals take them in full,
    and a kernel bound by its bytes takes none."""
    from sweeper.devices import DeviceFacts
    from sweeper.devices._base import GPU_COSTS
    from sweeper.kernels import declared_count
    from sweeper.plan import POWER_MAYBE, make_plan
    from sweeper.space import load_space

    facts = DeviceFacts(name="test", sms=132, l2_bytes=60 << 20)

    def finals(name: str, duty: str = "auto") -> float:
        space = load_space(ROOT / "spaces" / f"{name}.yaml")
        measure = dataclasses.replace(space.measure, duty=duty)
        kernel = "matmul" if name.startswith("matmul") else name
        moved = declared_count(kernel, "bytes_moved")
        assert moved is not None
        return make_plan(space, moved, facts, GPU_COSTS, measure,
                         flops=declared_count(kernel, "flops"), finals=True).parts["finals"]

    cold_downs = finals("matmul-shapes", "cool") - finals("matmul-shapes", "off")
    assert cold_downs > 1.0
    assert finals("matmul-shapes") == pytest.approx(
        finals("matmul-shapes", "off") + POWER_MAYBE * cold_downs, rel=0.05)
    assert finals("copy") == pytest.approx(finals("copy", "off"))


def test_a_calls_first_run_in_its_process_counts_its_set_up(tmp_path, monkeypatch,
                                                            write_space):
    """A call from Python spends its first run's set-up in the call (the imports its set-up
    pulls in, the GPU check: 2.6 s on the interpreter, against 0.2 s for a second call), so
    its estimate counts what this machine's first runs measured before their sweep
    (``RunCosts.setup_s``, else the command's start-up), and a later call's does not; the
    command counts its whole start-up.  Each first run keeps its own set-up."""
    from sweeper.devices import open_device
    from sweeper.engine import RunOptions, _costs
    from sweeper.engine._clock import RunClock
    from sweeper.engine._options import SpaceSource
    from sweeper.plan import RunCosts, _costs_path, costs_key, run_costs
    from sweeper.space import load_space
    from sweeper.sweep._summary import SweepSummary
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = write_space(SMALL_SPACE)
    space, device = load_space(path), open_device("interpret")
    costs = RunCosts(startup_s=3.0, setup_s=2.0, report_s=0.0, trial_s={"copy": 1.0})
    _costs_path().parent.mkdir(parents=True)
    _costs_path().write_text(json.dumps({costs_key(device): dataclasses.asdict(costs)}))
    said: list[str] = []

    def estimate(first: bool, command: bool = False) -> float:
        options = RunOptions(space=SpaceSource(path=str(path)), device="interpret",
                             report=False, clock_from_start=command)
        seconds = _costs.estimate(said.append, options, space, device, RunClock(first=first))
        assert seconds is not None
        return seconds

    later = estimate(first=False)
    assert "start-up" not in said[-1]
    assert estimate(first=True) == pytest.approx(later + 2.0)
    assert "(start-up 2 s, " in said[-1]
    assert estimate(first=True, command=True) == pytest.approx(later + 3.0)
    # a time budget shorter than the start-up is said to be, not promised
    options = RunOptions(space=SpaceSource(path=str(path)), device="interpret", report=False,
                         clock_from_start=True, time_s=2.0)
    assert _costs.estimate(said.append, options, space, device, RunClock()) == pytest.approx(3.0)
    assert said[-1].startswith("estimated time: 3 s, the start-up alone, longer than the "
                               "time budget of 2 s: it likely measures nothing (6 trials ")

    clock = RunClock(first=True)
    clock.marks = {"space and device": clock.start + 0.5, "set-up": clock.start + 1.75}
    _costs.note_costs(space, device, clock, SweepSummary())
    assert run_costs(costs_key(device)).setup_s == pytest.approx(1.75)
    clock.first = False                    # a later call's set-up says nothing of a first's
    clock.marks["set-up"] = clock.start + 0.7
    _costs.note_costs(space, device, clock, SweepSummary())
    assert run_costs(costs_key(device)).setup_s == pytest.approx(1.75)


def test_plan_refuses_a_changed_study_as_run_does_and_force_plans_the_resume(
        small_space, tmp_path, monkeypatch, capsys):
    """A study whose space changed since it was measured: run refuses to resume it without
    --force, where plan estimated the resume as if nothing had changed, and took no
    --force.  plan now refuses it with run's line, and --force (the same declaration as
    run's) plans the resumed run, its kept trials not measured again."""
    monkeypatch.chdir(tmp_path)
    studies = ["--device", "interpret", "--studies-dir", "st"]
    assert main(["run", str(small_space), *studies, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    small_space.write_text(small_space.read_text().replace("repeat: 3", "repeat: 4"))
    refused = []
    for command in ("run", "plan"):
        assert main([command, str(small_space), *studies]) == 2
        captured = capsys.readouterr()
        refused.append(captured.err)
        assert captured.out == ""
    assert refused[0] == refused[1] and "cannot resume, it was measured with other " \
        "settings (the space's line " in refused[0] and "rerun with --force" in refused[0]
    assert main(["plan", str(small_space), *studies, "--force"]) == 0
    out = capsys.readouterr().out
    assert "would measure 0 on Triton interpreter (CPU); the study in st/tiny-interpret " \
        "keeps 8 trials of this space, not measured again\n  (--force: the study was " \
        "measured with other settings, space_content; the run adds to it)\n" in out


def test_plan_measures_again_what_ran_on_a_kernel_source_before_a_forced_resume(
        small_space, tmp_path, monkeypatch, capsys):
    """A study resumed with --force after its kernel changed measures again the configs
    measured on the earlier source (winners.Sources.done); plan's estimate counts them as
    to measure, where it said they were kept."""
    monkeypatch.chdir(tmp_path)
    studies = ["--device", "interpret", "--studies-dir", "st"]
    assert main(["run", str(small_space), *studies, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["plan", str(small_space), *studies]) == 0
    assert "keeps 8 trials of this space, not measured again" in capsys.readouterr().out
    meta_path = tmp_path / "st" / "tiny-interpret" / "study.json"
    meta = json.loads(meta_path.read_text())
    before = meta["kernel_source_hash"]
    meta["kernel_source_hash"] = "f" * 16           # as a forced resume after an edit
    meta["forced"] = [{"when": "2026-01-01T00:00:00+00:00",
                       "changed": [f"kernel_source: '{before}' -> '{'f' * 16}'"]}]
    meta_path.write_text(json.dumps(meta))
    assert main(["plan", str(small_space), *studies]) == 0
    out = capsys.readouterr().out
    # the six measured are measured again; the two the constraints ruled out stay so
    assert "would measure 6 on Triton interpreter (CPU); the study in st/tiny-interpret " \
        "keeps 2 trials of this space, not measured again" in out


def test_plan_counts_the_kept_trials_of_its_own_space(small_space, tmp_path, monkeypatch,
                                                     capsys):
    """A study run with more values than ``-p`` now gives keeps trials of configs outside
    this space: plan counts those of its space as kept, and the others apart."""
    monkeypatch.chdir(tmp_path)
    studies = ["--device", "interpret", "--studies-dir", "st"]
    assert main(["run", str(small_space), *studies, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["plan", str(small_space), *studies, "-p", "BLOCK=1024"]) == 0
    assert "would measure 0 on Triton interpreter (CPU); the study in st/tiny-interpret " \
        "keeps 4 trials of this space, not measured again (and 4 of configs outside it)\n" \
        in capsys.readouterr().out


def test_plan_prices_the_configs_to_measure_again_first_and_says_so(small_space, tmp_path,
                                                                   monkeypatch, capsys):
    """A study's trial to be measured again (``retry``: its worker process was killed from
    outside) is of a config a resumed run measures first, within its trial budget: plan
    says how many of the trials it would measure are such, and prices that config, not
    the next one of the space that the study lacks."""
    from sweeper.devices import open_device
    from sweeper.engine._inputs import budgeted
    from sweeper.plan import RunShape, plan_of
    from sweeper.space import Invalid, load_space
    from sweeper.store import StudyStore, key_of
    from sweeper.study import resolved
    from sweeper.trial import TrialStatus
    from tests.api_fixtures import kill_trial

    monkeypatch.chdir(tmp_path)
    studies = ["--device", "interpret", "--studies-dir", "st"]
    assert main(["run", str(small_space), *studies, "--quiet", "--no-report",
                 "--trials", "3"]) == 0
    capsys.readouterr()
    space, device = load_space(small_space), open_device("interpret")
    order = [key_of(c) for c, o in resolved(space, device.facts().env(),
                                            device.facts().max_footprint)
             if not isinstance(o, Invalid)]
    study = tmp_path / "st" / "tiny-interpret"
    measured = [t for t in StudyStore(study).records()[0]
                if t.status is not TrialStatus.INVALID]
    killed = max(measured, key=lambda t: order.index(t.key()))  # the last in the space
    assert order.index(killed.key()) > min(i for i, k in enumerate(order)
                                           if k not in {t.key() for t in measured})
    kill_trial(study, killed.number)
    assert main(["plan", str(small_space), *studies, "--trials", "3"]) == 0
    assert ("would measure 1 of 4 (budget: 3 trials) on Triton interpreter (CPU), 1 of "
            "them first to measure again (its worker process was killed from outside); the "
            "study in st/tiny-interpret keeps 4 trials of this space, not measured again\n"
            ) in capsys.readouterr().out

    done = frozenset(t.key() for t in measured if t.number != killed.number)
    plan, _ = plan_of(budgeted(space, 3, None), device,
                      RunShape(done=done, spent=2, again=(killed.choice,)))
    alone, _ = plan_of(space, device, RunShape(done=frozenset(order) - {killed.key()}))
    first, _ = plan_of(budgeted(space, 3, None), device, RunShape(done=done, spent=2))
    assert plan.trials == alone.trials == 1 and plan.again == 1
    assert plan.parts["trials"] == alone.parts["trials"] != first.parts["trials"]


def test_a_spaces_report_is_priced_from_its_own_last_report_not_anothers(
        write_space, tmp_path, monkeypatch):
    """What a report's maps cost is kept per space (its ``study:`` name) beside the
    machine's last: a space reported here is priced from its own report, however slow
    another space's maps were since; one never reported takes the machine's last."""
    from sweeper.devices import open_device
    from sweeper.plan import RunCosts, costs_key, note_run, run_costs, run_shape
    from tests.conftest import SMALL_SPACE

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    note_run("GPU R", kernel="copy", sampler="exhaustive", startup_s=None, report_s=1.0,
             report_maps=4, report_fixed_s=0.5, compiles_s=[], ask_s=None, space="small")
    note_run("GPU R", kernel="matmul", sampler="exhaustive", startup_s=None, report_s=40.0,
             report_maps=8, report_fixed_s=0.5, compiles_s=[], ask_s=None, space="big")
    costs = run_costs("GPU R")
    small, big, other = costs.of_space("small"), costs.of_space("big"), costs.of_space("x")
    assert small.report_for(4) == pytest.approx(1.0)
    assert small.report_for(8) == pytest.approx(0.5 + 0.4 + 2 * (1.0 - 0.9))
    assert big.report_for(8) == pytest.approx(40.0) and other.report_for(8) == \
        pytest.approx(40.0)                     # never reported here: the machine's last
    assert RunCosts().of_space("small") == RunCosts()
    # a run's estimate and time budget read the costs of its own space
    device = open_device("interpret")
    path = write_space(SMALL_SPACE)             # study: tiny
    note_run(costs_key(device), kernel="copy", sampler="exhaustive", startup_s=None,
             report_s=1.5, report_maps=2, report_fixed_s=1.0, compiles_s=[], ask_s=None,
             space="tiny")
    note_run(costs_key(device), kernel="matmul", sampler="exhaustive", startup_s=None,
             report_s=30.0, report_maps=2, report_fixed_s=1.0, compiles_s=[], ask_s=None,
             space="elsewhere")
    from sweeper.space import load_space

    shape = run_shape(load_space(path), device, report=True, startup=True)
    assert shape.costs.report_s == 1.5


def test_plan_and_run_say_what_the_shrink_rules_out(write_space, tmp_path, capsys):
    """On the interpreter a constraint over a dimension reads the shrunk size (cols 1000
    measured as 255): ``BLOCK <= cols`` rules out 4 configs there, 2 at the size asked;
    ``plan`` and ``run`` say the shrink and that difference, where both said nothing of
    it before."""
    path = str(write_space("""
        study: rowwise
        kernel: softmax
        sampler: exhaustive
        params:
          grid: [rows]
          block: [128]
          BLOCK: [64, 128, 256, 512, 1024, 2048]
          rows: [64]
          cols: [1000]
          dtype: [float32]
        constraints: ["BLOCK <= cols"]
        """))
    said = ("constraints and values read the shrunk sizes: they rule out 4 configs "
            "(2 at the sizes asked)")
    assert main(["plan", path, "--device", "interpret"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  shrunk to fit 16KiB: rows 64 → 16, cols 1000 → 255" in lines, lines
    assert f"  {said}" in lines, lines
    assert main(["run", path, "--device", "interpret", "--trials", "1", "--no-report",
                 "--studies-dir", str(tmp_path / "st")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("shrunk to fit 16KiB: rows 64 → 16, cols 1000 → 255")
    assert lines[at + 1] == said, lines
