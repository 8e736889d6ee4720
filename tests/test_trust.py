"""Issue 3 without a GPU: ceilings, suspicious results, winners, machine state through a fake
NVML reader, flags, fingerprints, compare."""

import numpy as np
import pytest
import torch

from sweeper import ceilings as ceil
from sweeper.ceilings import Ceilings
from sweeper.cli import main
from sweeper.devices._interpret import InterpretDevice
from sweeper.devices._nvml import GpuState, Window, throttle_reason
from sweeper.finals import PRACTICAL, RULE, finalists, pick_winner
from sweeper.kernels import load_kernel
from sweeper.measure import Flag, Stop, StopRule, TrialFlag, summarize
from sweeper.space import Config, MeasureSpec, Problem, load_space
from sweeper.store import StudyStore, TrialRecord
from sweeper.study import fingerprint_diff
from sweeper.sweep import Sweep, open_study
from sweeper.trial import TrialStatus, run_trial

CEIL = Ceilings(gpu="G", uuid="U-1", driver="580", launch_floor_us=20.0,
                copy={1 << 20: {"cold": 1000.0, "warm": 3000.0},
                      1 << 30: {"cold": 4000.0, "warm": 4100.0}},
                matmul={"float32": 50.0, "bfloat16": 800.0})


def test_ceiling_interpolates_in_log_footprint_and_clamps():
    assert CEIL.bandwidth(1 << 20) == 1000.0
    assert CEIL.bandwidth(1 << 25) == pytest.approx(2500.0)      # halfway in log2
    assert CEIL.bandwidth(1 << 10) == 1000.0 and CEIL.bandwidth(1 << 40) == 4000.0
    assert CEIL.bandwidth(1 << 20, "warm") == 3000.0
    assert CEIL.dram_bandwidth() == 4000.0


def test_roofline_places_work_under_the_right_roof():
    ai, attainable, bound = CEIL.roofline(flops=0, nbytes=8, dtype="float32")
    assert (ai, attainable, bound) == (0.0, 0.0, "memory")
    ai, attainable, bound = CEIL.roofline(flops=1000 * 8, nbytes=8, dtype="bfloat16")
    assert ai == 1000 and bound == "compute" and attainable == 800e3
    ai, attainable, bound = CEIL.roofline(flops=8, nbytes=8, dtype="float32")
    assert bound == "memory" and attainable == 4000.0


def test_ceilings_are_cached_per_gpu_uuid_and_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path))
    path = ceil.save(CEIL)
    assert path == tmp_path / "ceilings" / "G-U-1-580.json"
    assert ceil.load("G", "U-1", "580") == CEIL
    assert ceil.load("G", "U-1", "581") is None
    assert ceil.load("G", "U-2", "580") is None


class FakeNvml:
    """Throttled for the first read after sampling starts, then fine."""

    available = True
    note = None
    usual_sm_mhz = 1980

    def __init__(self, clocks):
        self.clocks = list(clocks)
        self.energy = 0

    def read(self, processes=True):
        self.energy += 1000
        return GpuState(sm_mhz=self.clocks.pop(0) if self.clocks else 1980, mem_mhz=3201,
                        temperature_c=40, power_w=300.0, energy_mj=self.energy)


class FakeStateDevice(InterpretDevice):
    def __init__(self, clocks, floor_ms=None):
        super().__init__()
        self.reader = FakeNvml(clocks)
        self.floor_ms = floor_ms

    def state(self):
        return self.reader.read()

    def window(self, t0, t1):
        return Window(polls=4, power_w_mean=300.0, power_w_max=300.0)

    def throttled(self, duty=None):
        return throttle_reason(self.reader.read(), self.reader.usual_sm_mhz)

    def launch_floor_ms(self):
        return self.floor_ms


def _trial(device, sets=1, l2_bytes=0, cache="cold", measure=None):
    kernel = load_kernel("copy")
    problem = Problem("float32", 4096)
    buffers = [kernel.allocate(problem, "cpu") for _ in range(sets)]
    config = Config(problem=problem, grid=1, block=32, meta={"BLOCK": 1024}, cache=cache)
    return run_trial(kernel, buffers, config, device,
                     measure or MeasureSpec(warmup=0, repeat=3, stop="fixed"),
                     torch.Generator().manual_seed(0), l2_bytes=l2_bytes)


def test_throttled_samples_are_discarded_and_state_and_energy_recorded():
    # reads: state at start (1980), throttle check after chunk 1 (900: discard),
    # after chunk 2 (1980: keep), state at end
    result = _trial(FakeStateDevice([1980, 900, 1980, 1980]))
    assert result.status is TrialStatus.OK
    assert result.discarded == 3 and len(result.samples_ms) == 3
    assert result.discard_reasons == ["SM clock 900 MHz < 75% of its usual 1980 MHz"]
    assert result.state["start"]["sm_mhz"] == 1980 and result.state["end"]["power_w"] == 300.0
    # energy per launch: mean board power over the sampling window x the median time
    assert result.power_w == 300.0 and result.power_readings == 4
    assert result.energy_j == pytest.approx(300.0 * result.stats.median * 1e-3)
    assert TrialFlag(Flag.DISCARDED, "3 samples discarded (throttled)") in result.flags


def test_flags_for_launch_bound_and_l2_resident_with_rotation():
    result = _trial(FakeStateDevice([], floor_ms=100.0), sets=3, l2_bytes=1 << 20, cache="warm")
    assert TrialFlag(Flag.L2_RESIDENT, "L2-resident (warm, rotating 3 buffer sets)") in \
        result.flags
    assert any(f.kind is Flag.LAUNCH_BOUND and f.text.startswith("launch-bound: median") and
               "try measure.batch" in f.text for f in result.flags)


class SteadyTimes(FakeStateDevice):
    """Runs every launch as the interpreter does but reports steady times (1.00-1.02 ms),
    so an adaptive rule's verdict does not hang on the host's load: under a loaded CI
    machine the interpreter's own times once stayed 186 % apart for 30 s."""

    def time(self, launch, *, warmup, repeat, flush):
        super().time(launch, warmup=warmup, repeat=repeat, flush=flush)
        return [1.0 + 0.01 * (i % 3) for i in range(repeat)]


def test_adaptive_rule_through_a_device_records_why_it_stopped():
    measure = MeasureSpec(warmup=0, stop="stdrel", target=0.9, min_samples=4, max_time_s=30)
    result = _trial(SteadyTimes([]), measure=measure)
    assert result.stop_reason.kind is Stop.CONVERGED and \
        result.stop_reason.text.startswith("converged: stdrel") and len(result.samples_ms) >= 4


def test_batched_samples_are_divided_by_the_batch():
    device = InterpretDevice()
    calls = []
    measured = device.measure(lambda: calls.append(1), warmup=1,
                              rule=StopRule(kind="fixed", repeat=2), flush=False, batch=4)
    assert len(calls) == 1 + 2 * 4 and measured.batch == 4


def test_the_warmup_turns_the_sampling_loop_so_the_first_sample_follows_what_others_do(
        monkeypatch):
    """After launches back to back, a short kernel's first timed sample read 1.2-3.6× its
    settled time on an H100 (benchmarks/first_samples.py); the warmup therefore turns the
    same loop as every sample (flush, hold, events, launch) and only its times are
    dropped."""
    from sweeper.measure import time_cuda

    steps: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            self.at = 0.0

        def record(self) -> None:
            steps.append("event")
            self.at = float(len(steps))

        def elapsed_time(self, end: "Event") -> float:
            return end.at - self.at

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: steps.append("sync"))
    turn = ["flush", "hold", "event", "launch", "event"]
    samples = time_cuda(lambda: steps.append("launch"), warmup=2, repeat=1,
                        flush=lambda: steps.append("flush"),
                        hold=lambda: steps.append("hold"))
    assert steps == turn * 3 + ["sync"] and samples == [2.0]
    steps.clear()
    assert time_cuda(lambda: steps.append("launch"), warmup=2, repeat=0) == []
    assert steps == ["event", "launch", "event"] * 2 + ["sync"]


def test_a_sampling_call_without_warmup_holds_the_idle_gpu_longer_before_its_first_sample(
        monkeypatch):
    """A call's first sample starts on an idle GPU: its hold alone let the host's first
    steps into the sample (an H100 read a 15 µs kernel's first sample at 4.1-4.6×), so
    that turn holds ``LEAD_HOLDS`` times more; later turns, and calls whose warmup turns
    come first, hold once."""
    from sweeper.measure import _timer, time_cuda

    steps: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            pass

        def record(self) -> None:
            steps.append("event")

        def elapsed_time(self, end: "Event") -> float:
            return 1.0

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: steps.append("sync"))
    turn = ["event", "launch", "event"]
    time_cuda(lambda: steps.append("launch"), warmup=0, repeat=2,
              hold=lambda: steps.append("hold"))
    assert _timer.LEAD_HOLDS >= 1
    assert steps == (["hold"] * (1 + _timer.LEAD_HOLDS) + turn + ["hold"] + turn
                     + ["sync"])
    steps.clear()
    time_cuda(lambda: steps.append("launch"), warmup=1, repeat=1,
              hold=lambda: steps.append("hold"))
    assert steps == ["hold", *turn] * 2 + ["sync"]


def test_two_warmup_turns_where_their_launches_take_warmup_time():
    """Two turns of a launch of 0.7 ms or more measured the same as ten on the copy sweep
    (an H100, docs/benchmarks.md); a short launch keeps every turn, ``off`` all of them."""
    spec = MeasureSpec()                          # ten turns, 1 ms
    assert spec.warmup_turns(0.0005) == 2 and spec.warmup_turns(0.0007) == 2
    assert spec.warmup_turns(0.0004) == 10 and spec.warmup_turns(15e-6) == 10
    assert MeasureSpec(warmup_time_s=None).warmup_turns(1.0) == 10
    assert MeasureSpec(warmup=2).warmup_turns(1.0) == 2
    assert MeasureSpec(warmup=1).warmup_turns(1.0) == 1


@pytest.mark.parametrize(("launch_ms", "enough_s", "turns"), [
    (0.7, 0.001, [2]), (0.4, 0.001, [2, 8]), (0.7, None, [10])])
def test_the_cuda_warmup_times_two_turns_and_stops_where_they_took_enough(
        launch_ms, enough_s, turns):
    from sweeper.devices._cuda import CudaDevice

    calls: list[int] = []

    def time(launch, *, warmup, repeat, flush):
        calls.append(warmup + repeat)
        return [launch_ms] * repeat

    device = object.__new__(CudaDevice)           # no GPU here: the timer stands in
    device.time = time
    device.warm_up(lambda: None, 10, flush=True, enough_s=enough_s)
    assert calls == turns


def record(number, samples, warps=4, block_meta=1024, grid=100):
    return TrialRecord(number=number, choice={"n": str(number)}, status=TrialStatus.OK,
                       config=Config(Problem("float32", 4), grid=grid, block=32 * warps,
                                     meta={"BLOCK": block_meta}),
                       samples_ms=samples, stats=summarize(samples))


def test_finalists_are_top_k_plus_the_tied_set_and_skip_suspicious():
    trials = [record(i, [1.0 + 0.01 * i + 0.001 * k for k in range(20)]) for i in range(8)]
    trials[0].flags = [TrialFlag(Flag.SUSPICIOUS,
                                 "suspicious: 9e9 GB/s is above the calibrated ceiling")]
    chosen = finalists(trials)
    assert [t.number for t in chosen] == [1, 2, 3, 4, 5]


def test_winner_prefers_lowest_variance_then_the_simplest():
    flat = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    wobbly = [0.99, 1.01, 0.99, 1.01, 0.99, 1.01]
    trials = {1: record(1, wobbly, warps=1), 2: record(2, flat, warps=8),
              3: record(3, flat, warps=2), 4: record(4, [2.0] * 6, warps=1)}
    winner, tied = pick_winner({n: t.samples_ms for n, t in trials.items()}, trials)
    assert set(tied) == {1, 2, 3}
    assert winner == 3          # CV 0 beats the wobbly one; fewer warps among the flat ones


def spread(median, half_width, n=50):
    """``n`` samples evenly over ``median`` ± ``half_width``: CV grows with the width."""
    return list(np.linspace(median - half_width, median + half_width, n))


def test_a_tied_but_10pct_slower_config_does_not_win_on_its_lower_cv():
    # the H200 matmul case: wide intervals make a 10 % slower config statistically tied
    trials = {1: record(1, spread(1.00, 0.5)), 2: record(2, spread(1.10, 0.01), warps=1)}
    samples = {n: t.samples_ms for n, t in trials.items()}
    winner, tied = pick_winner(samples, trials)
    assert tied == [1, 2]                      # tied within noise ...
    assert winner == 1                         # ... but too slow to matter: the fastest wins


def test_a_tied_config_within_1pct_wins_on_its_lower_cv():
    trials = {1: record(1, spread(1.000, 0.05)), 2: record(2, spread(1.005, 0.001), warps=8)}
    winner, tied = pick_winner({n: t.samples_ms for n, t in trials.items()}, trials)
    assert tied == [1, 2] and winner == 2      # 0.5 % slower, steadier: it wins
    assert f"within {PRACTICAL:.0%} of its median" in RULE


def test_a_finalist_that_left_the_rounds_cannot_win_them_later():
    """Only finalists still racing are compared: one that left after the first round (2 %
    and beyond noise slower then) must not win because the others' later rounds ran
    slower (a machine under load), as its early samples never met those conditions."""
    from sweeper.finals import remeasure

    trials = {1: record(1, [1.0] * 5), 2: record(2, [1.03] * 5)}
    seen = {1: 0}

    def measure_one(t, rule):
        if t.number == 2:
            return [1.03] * rule.repeat
        seen[1] += 1                          # the winner-to-be slows down, round by round
        return [1.0 + 0.02 * (seen[1] - 1) ** 2] * rule.repeat

    final = remeasure(list(trials.values()), measure_one, lambda t: 1, seed=0)
    rows = {row.number: row for row in final.finalists}
    assert len(rows[2].samples_ms) == 10       # left after round 1 (1.03 against 1.0)
    assert final.rounds >= 3 and final.winner == 1
    assert len(final.winner_row().samples_ms) == 10 * final.rounds


def test_a_result_above_the_ceiling_is_retimed_flagged_and_cannot_win(small_space, tmp_path):
    device = InterpretDevice()
    space = load_space(small_space)
    kernel = load_kernel(space.kernel)
    store = StudyStore(tmp_path / "s")
    open_study(store, space, kernel, device, command="test")
    tiny = Ceilings(gpu="x", uuid="", driver="", copy={1: {"cold": 1e-9, "warm": 1e-9}})
    summary = Sweep(space, kernel, device, store, ceilings=tiny).run()
    trials = store.records()[0]
    ok = [t for t in trials if t.ok]
    assert ok and all(t.suspicious for t in ok)
    assert all(t.flags[-1].kind is Flag.SUSPICIOUS and
               "after re-verifying and re-timing; it cannot win" in t.flags[-1].text for t in ok)
    assert summary.finals == []
    with pytest.raises(Exception, match="no successful trial to export"):
        main(["--debug", "export", str(tmp_path / "s"), "-o", str(tmp_path / "t.json")])


def test_fingerprint_diff_names_every_change():
    have = {"gpu": "H200", "torch": "2.11.0", "driver": "580"}
    want = {"gpu": "H200", "torch": "2.12.0", "driver": "580", "env": "TRITON_X=1"}
    assert fingerprint_diff(have, want) == ["env: None -> 'TRITON_X=1'",
                                            "torch: '2.11.0' -> '2.12.0'"]


def test_study_records_the_provenance_fingerprint(small_space, tmp_path):
    device = InterpretDevice()
    space = load_space(small_space)
    store = StudyStore(tmp_path / "s")
    open_study(store, space, load_kernel("copy"), device, command="test")
    fp = store.meta()["fingerprint"]
    assert {"gpu", "kernel_source", "space_content", "torch", "triton", "sweeper",
            "env"} <= set(fp)
    assert "TRITON_INTERPRET=1" in fp["env"]


def test_compare_cli_on_two_studies_and_two_trials(small_space, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        assert main(["run", str(small_space), "--device", "interpret", "--study", name,
                     "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["compare", "a", "b"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["verdict", "B/A", "time"]
    assert len(out) == 1 + 6 + 2 and out[-2].endswith("of 6 configs (FASTER/SLOWER: B against A)")
    assert out[-1].startswith("practical threshold 1%: ")
    assert all(line.split()[0] in ("SAME", "FASTER", "SLOWER", "UNCLEAR") for line in out[1:-2])
    assert main(["compare", "a@2", "a@3"]) == 0
    assert "#2 vs #3" in capsys.readouterr().out
    assert main(["compare", "a@x", "b"]) == 2
    assert "a trial is written STUDY@NUMBER" in capsys.readouterr().err
    assert main(["compare", "a@99", "a@3"]) == 2          # says which numbers there are
    assert capsys.readouterr().err.endswith(": no successful trial number 99; successful: "
                                            "2-7\n")
    assert main(["compare", "a@0", "a@3"]) == 2           # and how a failed one ended
    assert capsys.readouterr().err.endswith(": no successful trial number 0 (it ended "
                                            "invalid); successful: 2-7\n")
    # a folder's name may hold an @: the trial follows the last one
    folder = tmp_path / "x@y"
    folder.mkdir()
    (tmp_path / "studies" / "a").rename(folder / "a")
    assert main(["compare", f"{folder}/a@2", f"{folder}/a@3"]) == 0
    assert "#2 vs #3" in capsys.readouterr().out
    assert main(["compare", f"{folder}/a", "b"]) == 0


def test_compare_matches_a_problem_however_its_space_spelt_it(small_space, tmp_path, capsys,
                                                             monkeypatch):
    """``footprint: 4KiB`` and ``4096``, ``float32`` and ``fp32`` are one problem: its
    configs are compared, each line naming the problem as measured."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--study", "a",
                 "--quiet", "--no-report"]) == 0
    assert main(["run", str(small_space), "--device", "interpret", "--study", "b",
                 "-p", "footprint=4096", "-p", "dtype=fp32", "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["compare", "a", "b"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].endswith("of 6 configs (FASTER/SLOWER: B against A)")
    assert all(line.endswith(" (float32 4KiB cold)") for line in out[1:-2])
    assert any(line.endswith(" BLOCK=1024 block=32 grid=sms (float32 4KiB cold)")
               for line in out[1:-2])


@pytest.mark.parametrize("a, b, said", [
    ("a@", "b@1", "sweeper: 'a@': a trial is written STUDY@NUMBER\n"),
    ("a@1", "b", "sweeper: 'a@1' is one trial and 'b' a whole study: compare two studies, "
     "or two trials (STUDY@NUMBER each)\n"),
    ("a", "b@1", "sweeper: 'b@1' is one trial and 'a' a whole study: compare two studies, "
     "or two trials (STUDY@NUMBER each)\n"),
])
def test_compare_refuses_a_trial_against_a_whole_study(tmp_path, capsys, monkeypatch, a, b,
                                                       said):
    """A trial against a study has no config in common to report: the refusal says what
    was given and what compare takes, not that the studies share no config."""
    monkeypatch.chdir(tmp_path)
    assert main(["compare", a, b]) == 2
    assert capsys.readouterr().err == said


def test_compare_matches_configs_measured_on_the_same_problem_and_names_the_devices(
        tmp_path, capsys, monkeypatch):
    import shutil

    from tests.conftest import ROOT

    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "studies" / "h200-copy-fp32", tmp_path / "studies" / "h200")
    # the interpreter measures spaces/copy.yaml's 1GiB configs at 16KiB: the same labels
    assert main(["run", str(ROOT / "spaces" / "copy.yaml"), "--device", "interpret",
                 "--study", "cpu", "--trials", "3", "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["compare", "h200", "cpu"]) == 2
    err = capsys.readouterr().err                  # what each measured: why none in common
    assert "have no successful config measured on the same problem in both: A measured " \
        "float32 1GiB cold (" in err and "; B measured float32 16KiB cold (" in err
    cpu = next(t.number for t in StudyStore(tmp_path / "studies" / "cpu").records()[0] if t.ok)
    assert main(["compare", "h200@6", f"cpu@{cpu}"]) == 0   # two trials, as asked
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("note: A was measured on NVIDIA H200, B on Triton interpreter (CPU): "
                      "each ratio compares the devices as well as the config")
    # and on other problems: the interpreter measured that 1GiB config at 16KiB
    assert out[1] == (f"note: A (#6) is copy float32 1GiB cold, B (#{cpu}) is copy float32 "
                      "16KiB cold: the ratio compares the problems as well as the configs")
    # and on other sources of copy: the H200 study was measured before copy.py was edited
    assert out[2].startswith("note: A (#6) was measured on the kernel's source ") and \
        out[2].endswith(": the ratio compares the sources as well as the configs")
    assert out[3].startswith("verdict")
    other = next(t.number for t in StudyStore(tmp_path / "studies" / "h200").records()[0]
                 if t.ok and t.number != 6)
    assert main(["compare", "h200@6", f"h200@{other}"]) == 0    # one problem: no note
    assert capsys.readouterr().out.startswith("verdict")


def test_state_monitor_polls_in_the_background_and_averages_power():
    import time

    from sweeper.devices._nvml import StateMonitor

    class Reader:
        available, note, usual_sm_mhz = True, None, 1980

        def __init__(self):
            self.calls = 0

        def read(self, processes=True):
            self.calls += 1
            return GpuState(sm_mhz=1980, power_w=100.0 + self.calls,
                            other_processes=2 if processes else 0)

    reader = Reader()
    monitor = StateMonitor(reader, period_s=0.005)
    t0 = time.perf_counter()
    time.sleep(0.2)
    t1 = time.perf_counter()
    monitor.close()
    window = monitor.window(t0, t1)
    assert window.polls >= 5 and 100.0 < window.power_w_mean < 100.0 + reader.calls + 1
    assert monitor.latest().other_processes == 2      # carried between process-list polls
    after = monitor.window(t1 + 10, t1 + 11)
    assert (after.power_w_mean, after.polls) == (monitor.latest().power_w, 0)


def test_the_interpreter_measures_with_torch_on_one_thread_and_gives_the_threads_back():
    """A capped problem's torch baseline on several CPU threads woke them at every call
    (4-18 ms on a shared two-core machine, 0.08 ms on one thread); a ``tl.dot``, which
    the interpreter runs as NumPy's matmul, woke BLAS's, so an interpreted matmul's
    launch of 128×256 tiles took 77-100 ms under load against 20-28 ms on one thread,
    where 64×64 tiles took 32-46 ms either way: BLAS is on one thread too."""
    import numpy  # noqa: F401  (its BLAS loaded, as the interpreter's launches load it)
    from threadpoolctl import threadpool_info, threadpool_limits

    device = InterpretDevice()
    before = torch.get_num_threads()
    seen: list[tuple[int, set[int]]] = []

    def blas() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"):
        device.measure(lambda: seen.append((torch.get_num_threads(), blas())), warmup=1,
                       rule=StopRule(kind="fixed", repeat=3), flush=False)
        after = blas()
    assert seen == [(1, {1})] * 4 and torch.get_num_threads() == before and after == {2}
