"""Issue 14 without a GPU: physical bounds (arithmetic, the architecture table, an impossible
result failing its trial) and outputs verified after the timed samples (a memoising kernel)."""

import json

import pytest
import torch

from sweeper.bounds import (
    MARGIN,
    Bound,
    Bounds,
    HardwareFacts,
    Sourced,
    derive_bounds,
)
from sweeper.cli import main
from sweeper.devices import DEVICES
from sweeper.devices._interpret import InterpretDevice
from sweeper.finals import FinalRecord
from sweeper.kernels import load_kernel
from sweeper.measure import Flag, StopRule
from sweeper.report import write_report
from sweeper.space import Config, MeasureSpec, Problem
from sweeper.sweep._bench import Bench
from sweeper.trial import TrialStatus, run_trial
from tests.conftest import sweep_study

GB = 1e9
#: Made-up round numbers: 100 GB/s DRAM, 1000 GB/s through the SMs, 10 TFLOP/s bf16.
MADE_UP = Bounds(gpu="Test GPU", l2_bytes=1 << 20,
                 dram=Bound("DRAM", 100 * GB, "made up: DRAM", "a test"),
                 sm_path=Bound("SM load/store", 1000 * GB, "made up: SMs", "a test"),
                 flops={"bfloat16": Bound("bfloat16", 10e12, "made up: FLOPs", "a test",
                                             is_flops=True)})
H200 = HardwareFacts("NVIDIA H200", sms=132, l2_bytes=60 << 20, capability=(9, 0),
                     mem_mhz=Sourced(3201, "NVML"), bus_bits=Sourced(6144, "NVML"),
                     sm_mhz=Sourced(1980, "NVML"))


# -- arithmetic ------------------------------------------------------------------------------
def test_the_fewest_seconds_is_the_largest_time_any_bound_imposes():
    # 1 GB, of which at most 2 x 1 MiB from the L2: DRAM dominates
    limit = MADE_UP.fastest(10**9, 0, "float32")
    assert limit.bound.name == "DRAM"
    assert limit.seconds == pytest.approx((10**9 - 2 * (1 << 20)) / (100 * GB))
    # all of it fits what the L2 can serve: the SM path alone bounds it
    limit = MADE_UP.fastest(2 << 20, 0, "float32")
    assert limit.bound.name == "SM load/store"
    assert limit.seconds == pytest.approx((2 << 20) / (1000 * GB))
    # compute-heavy: the dtype's FLOP rate dominates; a dtype without a rate has no FLOP term
    limit = MADE_UP.fastest(1 << 20, 10**12, "bfloat16")
    assert limit.bound.name == "bfloat16" and limit.seconds == pytest.approx(0.1)
    assert MADE_UP.fastest(1 << 20, 10**12, "float64").bound.name == "SM load/store"
    assert MADE_UP.fastest(0, 0, "float32") is None
    assert Bounds.none("cpu", "no bounds here").fastest(10**9, 10**12, "bfloat16") is None


def test_a_median_is_impossible_only_beyond_the_margin():
    fewest = (10**9 - 2 * (1 << 20)) / (100 * GB)
    assert MADE_UP.beyond(10**9, 0, "float32", fewest) is None
    assert MADE_UP.beyond(10**9, 0, "float32", fewest / (1 + MARGIN) * 1.001) is None
    why = MADE_UP.beyond(10**9, 0, "float32", fewest / (1 + MARGIN) * 0.999)
    assert why.startswith("faster than physics allows (")
    assert why.endswith("): beyond the Test GPU's DRAM bound of 100 GB/s, from made up: DRAM")
    assert "moving 1000000000B, at most 2MiB of it from the 1MiB L2, takes at least" in why
    why = MADE_UP.beyond(1 << 20, 10**12, "bfloat16", 1e-3)
    assert why == ("faster than physics allows (1000 TFLOP/s, median 1 ms; doing 1e+12 FLOP "
                   "takes at least 100 ms): beyond the Test GPU's bfloat16 FLOP bound of "
                   "10 TFLOP/s, from made up: FLOPs")


# -- the architecture table -------------------------------------------------------------------
def test_h200_bounds_from_nvml_and_the_hopper_table():
    bounds = derive_bounds(H200)
    assert bounds.dram.per_s == pytest.approx(3201e6 * 6144 / 8 * 2)        # 4.92 TB/s
    assert bounds.dram.how == "NVML: 3201 MHz memory clock x 6144-bit bus x 2 for DDR"
    assert bounds.sm_path.per_s == pytest.approx(132 * 1980e6 * 256)
    assert bounds.flops["bfloat16"].per_s == pytest.approx(132 * 1980e6 * 4096)  # ~1070 T
    assert bounds.flops["float16"].per_s == bounds.flops["bfloat16"].per_s
    assert bounds.flops["float32"].per_s == pytest.approx(132 * 1980e6 * 2048)   # TF32
    assert bounds.flops["float8_e4m3fn"].per_s == pytest.approx(132 * 1980e6 * 8192)
    assert bounds.flops["bfloat16"].how == (
        "132 SMs x 1980 MHz max SM clock from NVML x 4096 FLOP/clock/SM: 16-bit tensor, "
        "dense, Hopper, compute capability 9.0")
    assert bounds.absent == ("FLOP/s of float64, integers: no rate in the Hopper table",)
    assert bounds.summary(["bfloat16"]) == (
        "DRAM 4917 GB/s, SM load/store 66908 GB/s, bfloat16 1071 TFLOP/s (from NVML and the "
        "Hopper table)")


@pytest.mark.parametrize("capability, dtype, per_clock", [
    ((7, 0), "float32", 128),      # Volta: no TF32, the CUDA cores' 2 x 64 FMA lanes
    ((7, 0), "float16", 1024),
    ((7, 5), "bfloat16", 1024),
    ((8, 0), "float32", 1024),     # A100: TF32 tensor rate above the cores' 128
    ((8, 0), "bfloat16", 2048),
    ((8, 6), "float32", 512),      # larger of TF32 512 and CUDA-core 256
    ((8, 7), "float16", 1024),
    ((8, 9), "float8_e5m2", 2048),
    ((10, 0), "bfloat16", 8192),
    ((10, 0), "float32", 4096),
    ((10, 0), "float8_e4m3fn", 16384),
])
def test_the_capability_table(capability, dtype, per_clock):
    hw = HardwareFacts("G", sms=10, l2_bytes=0, capability=capability,
                       sm_mhz=Sourced(1000, "torch"))
    assert derive_bounds(hw).flops[dtype].per_s == pytest.approx(10 * 1000e6 * per_clock)


def test_architectures_without_fp8_have_no_fp8_bound():
    hw = HardwareFacts("A100", sms=108, l2_bytes=0, capability=(8, 0),
                       sm_mhz=Sourced(1410, "NVML"))
    bounds = derive_bounds(hw)
    assert "float8_e4m3fn" not in bounds.flops
    assert bounds.absent[-1] == ("FLOP/s of float8_e4m3fn, float8_e5m2, float64, integers: no "
                                 "rate in the Ampere table")


def test_missing_facts_leave_their_bounds_out_and_say_why():
    bounds = derive_bounds(HardwareFacts("Future GPU", sms=100, l2_bytes=0, capability=(12, 1),
                                         mem_mhz=Sourced(2000, "torch"), bus_bits=None,
                                         sm_mhz=Sourced(2000, "torch")))
    assert bounds.all() == []
    assert bounds.absent[0] == "DRAM: the bus width cannot be read"
    assert bounds.absent[1].startswith("SM load/store and FLOP/s: compute capability 12.1 is "
                                       "not in the architecture table (known: Volta 7.0, ")
    assert bounds.summary(["float32"]).startswith("none (DRAM: the bus width cannot be read; ")
    no_clock = derive_bounds(HardwareFacts("G", 10, 0, (9, 0), Sourced(1000, "NVML"),
                                           Sourced(512, "torch")))
    assert no_clock.dram.how == ("NVML memory clock, torch bus width: 1000 MHz memory clock "
                                 "x 512-bit bus x 2 for DDR")
    assert no_clock.sm_path is None and not no_clock.flops
    assert no_clock.absent == ("SM load/store and FLOP/s: the maximum SM clock cannot be read",)


def test_facts_come_from_the_first_source_that_knows_them():
    assert Sourced.first(("NVML", None), ("torch", 1593.0)) == Sourced(1593.0, "torch")
    assert Sourced.first(("NVML", 3201), ("torch", 2619.0)) == Sourced(3201.0, "NVML")
    assert Sourced.first(("NVML", None), ("torch", 0)) is None


def test_bounds_survive_json():
    bounds = derive_bounds(H200)
    assert Bounds.from_json(json.loads(json.dumps(bounds.to_json()))) == bounds
    none = Bounds.none("cpu", "why not")
    assert Bounds.from_json(none.to_json()) == none


# -- outputs verified after the timed samples -----------------------------------------------
def _trial(kernel_name, sets=1, repeat=3, device=None):
    kernel = load_kernel(kernel_name)
    problem = Problem("float32", 4096)
    buffers = [kernel.allocate(problem, "cpu") for _ in range(sets)]
    generator = torch.Generator().manual_seed(0)
    for b in buffers[1:]:
        kernel.randomize(b, generator)
    config = Config(problem=problem, grid=1, block=32, meta={"BLOCK": 1024})
    return run_trial(kernel, buffers, config, device or InterpretDevice(),
                     MeasureSpec(warmup=1, repeat=repeat, stop="fixed"), generator)


def _sweep(path, device, tmp_path, **kwargs):
    return sweep_study(path, device, tmp_path / "s", **kwargs)[0]


def test_a_kernel_that_stops_working_after_the_verified_launch_is_a_wrong_answer():
    result = _trial("tests.kernels_for_tests:Memoises")
    assert result.status is TrialStatus.WRONG_ANSWER
    assert result.reason.startswith(
        "the first launch was right, but the output after the timed samples (3) was wrong: "
        "1024 of 1024 elements differ from the input (first at index 0: nan != ")
    assert result.reason.endswith(
        "); the kernel stopped doing the work after the verified launch")
    assert len(result.samples_ms) == 3           # what it ran stays on record
    assert _trial("copy").status is TrialStatus.OK


def test_only_buffer_sets_the_samples_launched_are_checked():
    # 4 sets, 2 samples: two sets stay poisoned and unlaunched; they are not checked
    assert _trial("copy", sets=4, repeat=2).status is TrialStatus.OK


def test_a_wrong_rotated_set_is_named():
    kernel = load_kernel("copy")
    problem = Problem("float32", 4096)
    sets = [kernel.allocate(problem, "cpu") for _ in range(3)]
    from sweeper.trial import Rotation

    rotation = Rotation(kernel, sets, Config(problem=problem, grid=1, block=32,
                                             meta={"BLOCK": 1024}))
    generator = torch.Generator().manual_seed(1)
    for b in sets:
        kernel.randomize(b, generator)
    rotation.poison()
    for _ in range(3):
        rotation()
    assert rotation.check() is None and rotation.launched == {0, 1, 2}
    sets[2]["src"][5] += 1.0                      # the third set's output is now stale
    assert rotation.check().startswith("buffer set 3 of 3: 1 of 1024 elements differ")


def test_the_output_check_brackets_the_timed_samples():
    events = []

    class Check:
        def poison(self):
            events.append("poison")

        def check(self):
            events.append("check")
            return "stale"

    measured = InterpretDevice().measure(lambda: events.append("launch"), warmup=2,
                                         rule=StopRule(kind="fixed", repeat=3), flush=False,
                                         batch=2, verify=Check())
    assert events == ["launch"] * 2 + ["poison"] + ["launch"] * 6 + ["check"]
    assert measured.wrong_after == "stale"
    assert InterpretDevice().measure(lambda: None, warmup=0, rule=StopRule(kind="fixed",
                                     repeat=1), flush=False).wrong_after is None


def test_a_memoising_kernel_never_wins_a_sweep(write_space, tmp_path, capsys):
    from tests.conftest import SMALL_SPACE

    path = write_space(SMALL_SPACE.replace("kernel: copy",
                                           "kernel: tests.kernels_for_tests:Memoises"))
    store = _sweep(path, InterpretDevice(), tmp_path)
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    # caught at every config, the same way: the sweep stops after the first five alike
    assert len(measured) == 5
    assert all(t.status is TrialStatus.WRONG_ANSWER and "stopped doing the work" in t.reason
               for t in measured)
    assert main(["export", str(store.root), "-o", str(tmp_path / "t.json")]) == 2
    assert capsys.readouterr().err == f"sweeper: {store.root}: no successful trial to export\n"
    assert not (tmp_path / "t.json").exists()


# -- impossible results -----------------------------------------------------------------------
class TinyBoundsDevice(InterpretDevice):
    """The interpreter, given bounds no launch can meet: 1 kB/s of DRAM and no L2."""

    name = "tiny-bounds"

    def bounds(self):
        return Bounds(gpu="tiny GPU", l2_bytes=0,
                      dram=Bound("DRAM", 1e3, "made up for the test", "a test"),
                      absent=("FLOP/s: not for this test",))


def test_a_result_beyond_the_bounds_fails_as_impossible_and_never_wins(small_space, tmp_path):
    store = _sweep(small_space, TinyBoundsDevice(), tmp_path)
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    # impossible at every config alike: the sweep may stop after its first five (the
    # kernel, or its declared traffic, is at fault), unless they share a label
    assert len(measured) >= 5 and all(t.status is TrialStatus.IMPOSSIBLE for t in measured)
    for t in measured:
        assert t.reason.startswith("faster than physics allows (") and t.samples_ms
        assert t.reason.endswith("): beyond the tiny GPU's DRAM bound of 1e-06 GB/s, from "
                                 "made up for the test; still beyond after re-verifying and "
                                 "re-timing")
        assert "moving 8KiB, at most 0B of it from the 0B L2, takes at least 8192 ms" in t.reason
    assert store.read(FinalRecord) == []                   # no finalist, no pick
    assert main(["export", str(store.root), "-o", str(tmp_path / "t.json")]) == 2
    assert store.meta()["bounds"]["dram"] == {"per_s": 1e3, "how": "made up for the test",
                                              "source": "a test"}
    text = write_report(store, draw=False).markdown.read_text()
    section = text.split("## Physical bounds\n")[1].split("\n## ")[0]
    assert f"{len(measured)} trial(s) failed so." in section
    assert "- **DRAM**: 1e-06 GB/s, from made up for the test" in section
    assert "Not available: FLOP/s: not for this test." in section
    assert "| impossible | faster than physics allows: beyond the tiny GPU's DRAM bound" in text


def test_a_result_beyond_the_bounds_only_once_is_retimed_and_kept(small_space, tmp_path,
                                                                  monkeypatch):
    calls = []
    original = Bench.run

    def first_run_too_fast(self, config, number):
        result = original(self, config, number)
        calls.append(number)
        if calls.count(number) == 1:          # as if the first timing had lost its kernel
            result.stats = type(result.stats)(**{**result.stats.to_dict(), "median": 1e-9})
        return result

    monkeypatch.setattr(Bench, "run", first_run_too_fast)

    class RoomyBounds(InterpretDevice):
        def bounds(self):
            return Bounds(gpu="roomy GPU", dram=Bound("DRAM", 1e9, "made up", "a test"))

    store = _sweep(small_space, RoomyBounds(), tmp_path, finals=False)
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert all(t.ok for t in measured) and len(calls) == 2 * len(measured)
    assert all(t.flags[-1].kind is Flag.RETIMED and t.flags[-1].text.startswith(
        "re-timed: the first run was beyond a limit (faster than physics allows (")
        for t in measured)


def test_the_run_header_and_report_name_the_bounds(small_space, tmp_path, capsys,
                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(DEVICES, "tiny-bounds", "tests.test_bounds:TinyBoundsDevice")
    assert main(["run", str(small_space), "--device", "tiny-bounds", "--no-report"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert ("bounds: DRAM 1e-06 GB/s (from a test); a result beyond them fails its trial as "
            "impossible\n") in out
    assert "done: 0 measured, 5 failed" in out
    assert "stopped: the first 5 configs all failed alike (impossible: " in out
    assert "best in the sweep, float32 4KiB cold: nothing measured: 5 impossible" in out
    assert "sweeper: no config was measured: 5 impossible" in captured.err
    assert main(["run", str(small_space), "--device", "interpret", "--study", "plain"]) == 0
    out = capsys.readouterr().out
    assert "bounds: none (CPU timings of an interpreter: no GPU's physical limits apply)\n" in out
    report = (tmp_path / "studies" / "plain" / "report.md").read_text()
    assert ("## Physical bounds\n\nNone on this device (CPU timings of an interpreter: no GPU's "
            "physical limits apply): results were not checked against physical limits.\n"
            ) in report
    data = json.loads((tmp_path / "studies" / "plain" / "report.json").read_text())
    assert data["bounds"]["absent"] == ["CPU timings of an interpreter: no GPU's physical "
                                        "limits apply"]
