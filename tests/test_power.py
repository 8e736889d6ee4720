"""Power-aware measurement without a GPU: the equal-duty schedule, which throttle reasons
discard samples, the clocks window, power-bound detection in a sweep, and the torch
baseline measured in the finals' rounds."""

import time

import pytest

from sweeper.cli import main
from sweeper.devices._interpret import InterpretDevice
from sweeper.devices._nvml import GpuState, StateMonitor, Window, throttle_reason
from sweeper.errors import SpaceError
from sweeper.kernels import load_kernel
from sweeper.measure import (
    DEFAULT_DUTY,
    SUSTAINED,
    Duty,
    Flag,
    StopRule,
    power_bound,
    sample_until,
)
from sweeper.report import write_report
from sweeper.space import load_space
from sweeper.store import DutyRecord, StudyStore
from sweeper.sweep import Sweep, open_study
from sweeper.winners import Winners
from tests.conftest import SMALL_SPACE


def test_a_cool_down_idles_and_a_load_runs_the_configs_own_work(monkeypatch):
    slept, launches, syncs = [], [], []
    monkeypatch.setattr(time, "sleep", slept.append)
    Duty("cool", 1.5).settle(lambda: launches.append(1), lambda: syncs.append(1))
    assert slept == [1.5] and not launches and syncs == [1]
    Duty("load", 0.05).settle(lambda: launches.append(1), lambda: syncs.append(1))
    assert len(launches) >= 1 and len(syncs) == 2 + len(launches)
    assert "1.5 s cool-down" in Duty("cool", 1.5).describe()
    assert "0.05 s of the config's own work" in Duty("load", 0.05).describe()


def test_a_cool_down_schedule_samples_in_short_bursts(monkeypatch):
    """Bursts of at most BURST_S of work, sized from one host-timed launch, each after a
    cool-down and two turns of the sampling loop whose times are dropped (not launches
    back to back, which read a short kernel's first sample high); a fixed rule takes one
    burst (at least BURST_MIN)."""
    from sweeper.measure import _duty

    slept, launches, asked = [], [], []
    clock = iter(range(1000))
    monkeypatch.setattr(time, "sleep", slept.append)
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock) * 0.004)  # a launch: 4 ms
    cool = Duty("cool", 1.0)
    size = cool.burst_size(lambda: launches.append(1), lambda: None)
    assert size == int(_duty.BURST_S / 0.004) == 3 and launches == [1]
    turn = iter(range(1000))
    timed = lambda k: (asked.append(k), [float(next(turn)) for _ in range(k)])[1]  # noqa: E731
    take = cool.bursts(timed, lambda: cool.settle(lambda: None, lambda: None), size)
    warm = _duty.BURST_WARMUP
    # the first burst follows the trial's own warmup; each later one drops its warm turns
    assert take(10) == [0.0, 1.0, 2.0, *range(3 + warm, 6 + warm),
                        *range(6 + 2 * warm, 9 + 2 * warm), 9.0 + 3 * warm]
    assert asked == [3, 3 + warm, 3 + warm, 1 + warm] and len(slept) == 3
    assert launches == [1]                    # only the burst's sizing launch
    fixed = StopRule(kind="fixed", repeat=30)
    assert cool.capped(fixed, 3).repeat == _duty.BURST_MIN == 5
    assert cool.capped(fixed, 8).repeat == 8 and cool.capped(fixed, 50).repeat == 30
    assert cool.capped(StopRule(kind="ci"), 3) == StopRule(kind="ci")


def test_the_power_cap_labels_samples_unless_the_schedule_starts_them_cool():
    capped = GpuState(sm_mhz=1425, throttle=("sw_power_cap",))
    # the kernel's own power draw: kept, though the clock is under 75 % of 1980 MHz
    assert throttle_reason(capped, 1980) is None
    assert throttle_reason(capped, 1980, discard_power_cap=True).startswith(
        "power cap engaged (SM clock 1425 MHz)")
    # a low clock with no cap to explain it, and slowdowns that are not the kernel's doing
    assert throttle_reason(GpuState(sm_mhz=900), 1980).startswith("SM clock 900 MHz < 75%")
    assert throttle_reason(GpuState(sm_mhz=1980, throttle=("hw_thermal_slowdown",)),
                           1980) == "throttled: hw_thermal_slowdown"
    assert throttle_reason(GpuState(sm_mhz=1980, throttle=("sync_boost",)), 1980) is None
    assert Duty("cool", 1).discards_power_cap() and not Duty("load", 1).discards_power_cap()


def test_a_discarded_chunk_is_taken_again_after_the_schedule_recovers():
    states = iter(["power cap engaged", None])
    recovered = []
    timing = sample_until(lambda k: [1.0] * k, StopRule(kind="fixed", repeat=3),
                          throttled=lambda: next(states), recover=lambda: recovered.append(1))
    assert recovered == [1] and timing.discarded == 3 and len(timing.samples) == 3


def test_the_window_sums_up_clocks_power_and_reasons_from_the_polls():
    w = Window.of([GpuState(sm_mhz=1980, power_w=300.0),
                   GpuState(sm_mhz=1440, power_w=690.0, throttle=("sw_power_cap",)),
                   GpuState(sm_mhz=1500, power_w=680.0, throttle=("sw_power_cap",)),
                   GpuState(sm_mhz=1460, power_w=692.0, throttle=("sw_power_cap",))])
    assert w.polls == 4 and w.sm_mhz_min == 1440 and w.sm_mhz_max == 1980
    assert w.sm_mhz_mean == pytest.approx(1595.0) and w.power_w_max == 692.0
    assert w.reasons == {"sw_power_cap": 0.75}
    assert Window.of([]).polls == 0


def test_the_monitor_window_falls_back_to_the_last_poll_for_a_short_window():
    """A window holds the polls made inside it; one shorter than a poll, with none
    inside, takes the last poll before it, counted as 0.  Whatever the machine's load:
    the window opens before the monitor's first read, the test waits for the reads
    themselves (never a fixed time), and the poller has stopped before the short window
    is read, so no poll can land inside it."""
    import threading

    reads = threading.Semaphore(0)

    class Reader:
        available, note, usual_sm_mhz, power_limit_w = True, None, 1980, 700.0

        def read(self, processes=True):
            reads.release()
            return GpuState(sm_mhz=1980, power_w=150.0)

    started = time.perf_counter()
    monitor = StateMonitor(Reader(), period_s=0.005)
    for _ in range(4):                        # the first read, then three of the poller's
        assert reads.acquire(timeout=600), "the poller never read"
    monitor.close()
    monitor._thread.join()
    t = time.perf_counter()
    assert monitor.window(started, t).polls >= 4
    short = monitor.window(t + 5, t + 5.001)
    assert short.polls == 0 and short.sm_mhz_mean == 1980


def test_nvml_reads_the_slow_energy_counter_and_process_list_only_on_a_full_read(
        monkeypatch):
    """The energy counter is 3-5 ms of a 0.05 ms read and nothing reads it back, so the
    poller asks it with the process list, every ``PROCESS_EVERY`` polls, not on every
    poll beside the worker's timing; the polls between carry the count, not the energy."""
    import sys
    import types

    from sweeper.devices._nvml import NvmlReader

    calls = []

    def call(name, value):
        return lambda *args: calls.append(name) or value

    fake = types.SimpleNamespace(
        NVMLError=RuntimeError, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: "h",
        nvmlDeviceGetDefaultApplicationsClock=lambda h, c: 1980,
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetClockInfo=lambda h, c: 1980, nvmlDeviceGetTemperature=lambda h, t: 40,
        nvmlDeviceGetPowerUsage=lambda h: 150_000,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0,
        nvmlDeviceGetTotalEnergyConsumption=call("energy", 5_000),
        nvmlDeviceGetComputeRunningProcesses=call("processes", [types.SimpleNamespace(pid=1)]))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    reader = NvmlReader()
    assert reader.read(processes=False) == GpuState(sm_mhz=1980, mem_mhz=1980,
                                                    temperature_c=40, power_w=150.0)
    assert calls == []
    full = reader.read()
    assert full.energy_mj == 5_000 and full.other_processes == 1
    assert sorted(calls) == ["energy", "processes"]
    calls.clear()
    monitor = StateMonitor(reader, period_s=0.001)
    started = time.perf_counter()
    # a loaded machine may run the poller late: wait for its polls, not a fixed time
    while len(monitor._history) <= 2 * StateMonitor.PROCESS_EVERY + 1 and \
            time.perf_counter() < started + 10:
        time.sleep(0.01)
    monitor.close()
    monitor._thread.join(5)
    polls = list(monitor._history)
    slow = [s for _, s in polls if s.energy_mj is not None]
    assert len(polls) > 2 * StateMonitor.PROCESS_EVERY
    assert calls.count("energy") == calls.count("processes") == len(slow)
    assert len(slow) <= len(polls) // StateMonitor.PROCESS_EVERY + 1
    assert all(s.other_processes == 1 for _, s in polls)


def test_the_cuda_device_polls_nvml_only_once_something_measures():
    """A process that only coordinates (worker processes measure) opens the CUDA device
    for its facts: NVML is read there never, not every 20 ms beside the workers' timing."""
    from sweeper.devices._cuda import CudaDevice

    reads = []

    class Reader:
        available, note, usual_sm_mhz, power_limit_w = True, None, 1980, 700.0

        def read(self, processes=True):
            reads.append(processes)
            return GpuState(sm_mhz=1980, power_w=150.0)

    device = object.__new__(CudaDevice)     # the GPU's facts are not needed here
    device.reader, device._monitor = Reader(), None
    time.sleep(0.03)
    assert reads == [] and device._monitor is None
    assert device.state() == GpuState(sm_mhz=1980, power_w=150.0)
    assert device.monitor is device.monitor and reads[0] is True
    device.monitor.close()


def test_power_bound_means_the_cap_or_power_near_the_limit():
    assert power_bound({"sw_power_cap": 0.5}, 400.0, 700.0).startswith(
        "sw_power_cap in 50% of the NVML polls")
    assert power_bound({}, 650.0, 700.0).startswith("board power reached 650 W, 93%")
    assert power_bound({}, 500.0, 700.0) is None
    assert power_bound({}, 650.0, 0.0) is None            # limit unknown: no guess


class PowerCappedDevice(InterpretDevice):
    """The interpreter, reporting every sampling window as power-capped at 690 of 700 W."""

    def window(self, t0, t1):
        return Window(polls=3, sm_mhz_mean=1440.0, sm_mhz_min=1425, sm_mhz_max=1470,
                      power_w_mean=690.0, power_w_max=692.0, reasons={"sw_power_cap": 1.0})

    def power_limit_w(self):
        return 700.0


def _power_sweep(write_space, root, extra=""):
    path = write_space(SMALL_SPACE.replace("measure: {warmup: 1, repeat: 3}",
                                           "measure: {warmup: 1, repeat: 3" + extra + "}"))
    space, device = load_space(path), PowerCappedDevice()
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test")
    return Sweep(space, kernel, device, store), store


def test_a_power_bound_study_sweeps_under_sustained_load_and_decides_after_cool_downs(
        write_space, tmp_path, monkeypatch):
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    sweep, store = _power_sweep(write_space, tmp_path / "s")
    summary = sweep.run()
    duty = store.read(DutyRecord)
    trials = [t for t in store.records()[0] if t.ok]
    first = min(t.number for t in trials)
    assert len(duty) == 1 and duty[0].trial == first and duty[0].duty == SUSTAINED
    assert duty[0].reason.startswith("sw_power_cap in 100% of the NVML polls")
    assert duty[0].first_measurement.median_ms > 0
    assert summary.duty.startswith(f"power-bound from trial #{first} (sw_power_cap") and \
        "; from then on configs sampled back to back under sustained load" in summary.duty \
        and "and the finals with a 0.1 s cool-down before each config's samples" in \
        summary.duty
    assert len(trials) == 6 and len({t.number for t in trials}) == 6   # recorded once each
    assert all(t.duty == SUSTAINED.describe() for t in trials)
    assert all(any(f.kind is Flag.POWER_CAPPED and f.text.startswith(
        "power-capped: sw_power_cap in 100%") for f in t.flags) for t in trials)
    # the sweep never idles the GPU on purpose; the finals cool down before each entrant
    # of every round (its rounds x (finalists + the baseline), finalists that left aside)
    final = summary.finals[0]
    assert final.duty == DEFAULT_DUTY.describe()
    assert len(slept) >= final.rounds * 2
    assert set(slept) == {0.1}
    sweep_seconds = [t.seconds for t in trials]
    assert not any("cool-down" in s for s in sweep_seconds)


def test_sustained_load_loads_an_idle_gpu_only(monkeypatch):
    from sweeper.measure import _duty
    clock = [100.0]
    monkeypatch.setattr(_duty, "_LOAD", _duty._Load())
    monkeypatch.setattr(_duty.time, "perf_counter", lambda: clock[0])
    launches = []

    def launch():
        launches.append(clock[0])
        clock[0] += 0.01
    SUSTAINED.settle(launch, lambda: None)          # idle since ever: loaded for 0.2 s
    assert len(launches) == 20
    SUSTAINED.sampled()
    clock[0] += 0.02                                 # a short gap: still under load
    launches.clear()
    SUSTAINED.settle(launch, lambda: None)
    assert launches == []
    SUSTAINED.sampled()
    clock[0] += 0.5                                  # a compile's pause: loaded again
    SUSTAINED.settle(launch, lambda: None)
    assert len(launches) == 20
    assert SUSTAINED.for_finals() == DEFAULT_DUTY and DEFAULT_DUTY.for_finals() == DEFAULT_DUTY


def test_a_race_under_sustained_load_states_its_winner_from_cool_rounds(
        write_space, tmp_path, monkeypatch):
    from sweeper.finals import CONFIRM_ROUNDS
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    sweep, store = _power_sweep(write_space, tmp_path / "s", ", finals_duty: sustained")
    summary = sweep.run()
    assert store.read(DutyRecord)[0].duty == SUSTAINED
    assert summary.duty.endswith("and the finals with configs sampled back to back under "
                                 "sustained load (after an idle GPU, 0.2 s of the config's "
                                 "own work first) (measure.duty: auto)")
    final = summary.finals[0]
    assert final.duty == SUSTAINED.describe() and final.rounds >= 3
    # the race idles the GPU for nothing; the winner and the baseline then take their
    # rounds after cool-downs (one before each burst of their samples)
    confirmed = final.confirmed
    assert confirmed.duty == DEFAULT_DUTY.describe() and confirmed.rounds == CONFIRM_ROUNDS
    assert confirmed.baseline.name == "torch copy_"
    per_round = final.samples_per_round
    assert len(confirmed.samples_ms) == len(confirmed.baseline.samples_ms) == \
        CONFIRM_ROUNDS * per_round
    assert set(slept) == {0.1} and len(slept) >= 2 * CONFIRM_ROUNDS
    assert final.baseline_ratio() == pytest.approx(
        confirmed.baseline.stats.median / confirmed.stats.median)
    assert final.compared_baseline() is confirmed.baseline
    kept = next(iter(Winners.of(store).finals.values()))     # as the journal reads it back
    assert kept.confirmed == confirmed
    write_report(store, draw=False)
    md = (store.root / "report.md").read_text()
    assert f"at {final.baseline_ratio_text()}× its speed" in md and "after cool-downs" in md
    import json
    stated = json.loads((store.root / "report.json").read_text())["winners"][0]
    assert stated["confirmed"] == {"duty": DEFAULT_DUTY.describe(), "rounds": CONFIRM_ROUNDS,
                                   "median_ms": confirmed.stats.median}
    assert stated["baseline"]["median_ms"] == confirmed.baseline.stats.median
    assert stated["baseline"]["winner_speed_ratio"] == final.baseline_ratio()


def test_the_finals_schedule_follows_only_a_sustained_sweep():
    assert SUSTAINED.for_finals("sustained") == SUSTAINED
    cool = Duty("cool", 1.0)
    assert cool.for_finals("sustained") == cool and cool.for_finals("cool") == cool
    from sweeper.finals import finals_estimate_s
    # back to back, then the winner and the baseline after six cool-downs in all
    raced, cooled = finals_estimate_s(5, 1.0, SUSTAINED), finals_estimate_s(5, 1.0, DEFAULT_DUTY)
    assert raced == pytest.approx(finals_estimate_s(5, 1.0, None) + 6 * (0.024 + 0.1 + 0.02))
    assert raced < cooled / 1.5


def test_a_resumed_power_bound_study_keeps_its_schedule(write_space, tmp_path, monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda s: None)
    sweep, store = _power_sweep(write_space, tmp_path / "s")
    sweep.max_trials = 2
    sweep.run_finals = False
    sweep.run()
    again, _ = _power_sweep(write_space, tmp_path / "s")
    again.run()
    assert len(store.read(DutyRecord)) == 1                    # not switched a second time
    assert all(t.duty for t in store.records()[0] if t.ok)


def test_a_fixed_schedule_applies_from_the_first_trial_and_off_never(
        write_space, tmp_path, monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda s: None)
    sweep, store = _power_sweep(write_space, tmp_path / "load", ", duty: {load: 1ms}")
    sweep.run()
    assert not store.read(DutyRecord)
    assert all(t.duty == "0.001 s of the config's own work before its samples"
               for t in store.records()[0] if t.ok)
    sweep, store = _power_sweep(write_space, tmp_path / "off", ", duty: off")
    sweep.run()
    assert not store.read(DutyRecord) and not any(t.duty for t in store.records()[0])


@pytest.mark.parametrize("text, error", [
    ("duty: sometimes", "measure.duty: 'sometimes' is not a duty schedule; allowed: auto, off"),
    ("duty: {cool: 1s, load: 1s}", "is not a duty schedule"),
    ("duty: {cool: fast}", "measure.duty.cool: 'fast' is not a duration"),
])
def test_bad_duty_schedules_are_refused_at_their_line(write_space, text, error):
    path = write_space(SMALL_SPACE.replace("measure: {warmup: 1, repeat: 3}",
                                           f"measure: {{warmup: 1, {text}}}"))
    with pytest.raises(SpaceError, match=error) as err:
        load_space(path)
    assert err.value.line == 11            # the measure line


def test_the_baseline_runs_in_the_finals_rounds_and_the_report_compares_them(
        small_space, tmp_path, capsys):
    code = main(["run", str(small_space), "--device", "interpret", "--studies-dir",
                 str(tmp_path), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    store = StudyStore(tmp_path / "tiny-interpret")
    final = next(iter(Winners.of(store).finals.values()))
    assert final.baseline.name == "torch copy_"
    assert len(final.baseline.samples_ms) == final.rounds * final.samples_per_round  # every round
    ratio = final.baseline_ratio()
    assert ratio == pytest.approx(final.baseline.stats.median / final.winner_row().stats.median)
    assert f"{final.baseline_ratio_text()}× torch copy_" in out and "in the same rounds" in out
    write_report(store, draw=False)
    md = (store.root / "report.md").read_text()
    assert "baseline: torch copy_" in md and f"at {final.baseline_ratio_text()}× its speed" in md
    assert "× baseline, same rounds" in md
    # report.html says what report.md says of it, in the same words
    said = (f"In the same rounds torch copy_ measured {final.baseline.stats.median:.4g} ms: "
            f"the winner runs at {final.baseline_ratio_text()}× its speed.")
    assert said in md and said in (store.root / "report.html").read_text()


def test_a_measurement_under_a_cool_down_takes_one_burst_and_says_so(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda s: None)

    def launch():                                # 3 ms of host time: 4 samples a burst
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.003:
            pass

    measured = InterpretDevice().measure(launch, warmup=0, flush=False,
                                         rule=StopRule(kind="fixed", repeat=30),
                                         duty=Duty("cool", 1.0))
    assert len(measured.timing.samples) == 5
    assert measured.timing.stop_reason.text == ("fixed: 5 samples (one burst of the cool-down "
                                           "schedule; 30 asked)")


def test_a_tiny_ratio_is_printed_with_its_digits_not_as_zero():
    from sweeper.finals import FinalBaseline, Finalist, FinalRecord
    from sweeper.measure import summarize
    from sweeper.store import ProblemKey

    def final(base_ms, winner_ms):
        return FinalRecord(problem=ProblemKey("float32", 4096),
                           finalists=[Finalist(number=1, stats=summarize([winner_ms]))],
                           tied=[1], winner=1,
                           baseline=FinalBaseline(name="torch", samples_ms=[base_ms],
                                                  stats=summarize([base_ms])))

    assert final(1.38, 1.486).baseline_ratio_text() == "0.929"
    assert final(0.0015, 8.0).baseline_ratio_text() == "0.00019"
    assert final(1.0, 1.0).baseline_ratio_text() == "1.000"
