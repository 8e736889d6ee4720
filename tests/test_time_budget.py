"""A time budget covers the finals: the loop keeps the time they will take, and a
problem's final starts only if the time left covers it (the next run measures the rest)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from sweeper import finals as finals_module
from sweeper.cli import main
from sweeper.finals import MAX_FINALISTS, ROUNDS, finals_estimate_s
from sweeper.measure import Duty, summarize
from sweeper.space import Budget, Config, Problem
from sweeper.store import StudyStore, TrialRecord
from sweeper.sweep import _budget
from sweeper.sweep._budget import Budgets, StopFlag
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE


def test_a_final_is_estimated_from_its_entrants_median_and_duty():
    # 12 finalists and the baseline, 5 rounds of 10 samples and 2 warm-up launches at
    # twice 1.4 ms, two bursts of 12 ms each after a 0.1 s cool-down, 20 ms of overhead
    per_entrant = 2 * 12 * 1.4e-3 + 2 * 0.1 + 0.02
    assert finals_estimate_s(40, 1.4, Duty("cool", 0.1)) == pytest.approx(
        (MAX_FINALISTS + 1) * ROUNDS * per_entrant)
    assert finals_estimate_s(3, 1.4, None) == pytest.approx(4 * ROUNDS * (0.0336 + 0.02))
    assert finals_estimate_s(3, 1.4, Duty("load", 0.5)) == pytest.approx(
        4 * ROUNDS * (0.0336 + 0.5 + 0.02))


def trial(number: int, median_ms: float) -> TrialRecord:
    problem = Problem("float32", 4096, (("n", 1024),))
    samples = [median_ms] * 5
    return TrialRecord(number=number, choice={"block": str(number)}, status=TrialStatus.OK,
                       config=Config(problem=problem, grid=1, block=32, meta={}),
                       samples_ms=samples, stats=summarize(samples))


def test_the_loop_stops_when_the_time_left_is_what_the_finals_need(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.finals_duty = lambda: Duty("cool", 0.1)
    assert budgets.keep_for_finals() == 0 and not budgets.halted()
    for i in range(3):
        budgets.counted(trial(i, 2.0 - i / 10), None)
    kept = finals_estimate_s(3, 1.8, Duty("cool", 0.1))
    assert budgets.keep_for_finals() == pytest.approx(kept)
    now[0] = 110.0 - kept - 0.01
    assert not budgets.halted() and budgets._spent(_study()) == ""
    now[0] = 110.0 - kept + 0.01
    assert budgets.halted()
    assert budgets._spent(_study()) == f"budget: 10 s ({kept:.1f} s of it kept for the finals)"
    entrants = [trial(i, 2.0 - i / 10) for i in range(3)]
    assert not budgets.covers(entrants, Duty("cool", 0.1))
    assert budgets.covers(entrants[:1], Duty("cool", 0.1))     # one entrant takes less
    budgets.finals_duty = None                  # a sweep without finals keeps nothing
    assert budgets.keep_for_finals() == 0 and not budgets.halted()


def test_the_time_budget_keeps_for_the_report_of_the_heatmaps_measured_so_far(monkeypatch):
    """The report a run the budget cuts short writes draws the heatmaps of its trials, not
    the space's: the budget keeps what a report of the maps so far and of one trial more
    takes (a space of 90 maps kept 8 s on the H200 and left a 12 s run nothing)."""
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.report_s = lambda maps: 0.4 + 0.5 * maps
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * 2)   # a trial to come
    assert budgets.time_left() == pytest.approx(10 - 1.4)
    one = trial(0, 2.0)
    budgets.counted(one, None)
    budgets.counted(trial(1, 1.9), None)             # the same problem and meta values
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (2 + 2))
    meta = TrialRecord(number=2, choice={"block": "2"}, status=TrialStatus.OK,
                       config=Config(problem=one.config.problem, grid=1, block=32,
                                     meta={"BLOCK": 256}),
                       samples_ms=[1.0] * 5, stats=summarize([1.0] * 5))
    budgets.counted(meta, None)                       # a new map of the same problem
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (3 + 2))
    now[0] = 110.0 - budgets.keep_for_report() + 0.01
    assert budgets.halted()
    budgets.report_s = None                           # --no-report keeps nothing
    assert budgets.keep_for_report() == 0 and not budgets.halted()


def test_the_first_trial_starts_only_if_its_expected_compile_fits(monkeypatch):
    """Before the run's first trial the budget keeps what that trial is expected to take
    (a compile from a cold cache, ``first_trial_s``): on a fresh H200 machine a 12 s
    budget left 2.6 s after a 7.3 s start-up, the first trial took 3.2 s and the command
    15.6 s.  Once a trial ran, the longest so far counts instead."""
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=3.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.first_trial_s = 3.2
    assert budgets.keep_for_finals() == 3.2 and budgets.halted()
    budgets.first_trial_s = 2.0
    assert not budgets.halted()
    fast = trial(0, 1.0)
    fast.wall_s = 0.1
    budgets.counted(fast, None)
    assert budgets.keep_for_finals() == pytest.approx(0.1)


def test_a_final_takes_no_round_past_the_time_budgets_end(monkeypatch):
    """A final that started inside the budget starts a round only if one as long as the
    last ends before the budget does (the first round always runs): its record says how
    many ran.  Without a deadline it runs until settled."""
    import time as time_module

    from sweeper.finals import MIN_ROUNDS, remeasure

    clock = [1000.0]
    monkeypatch.setattr(time_module, "monotonic", lambda: clock[0])

    def measure_one(t, rule):
        clock[0] += 1.0                     # each entrant's samples take a second
        return [t.stats.median] * rule.repeat

    group = [trial(i, 2.0) for i in range(3)]     # tied: every round takes all three
    for deadline, rounds in ((1005.5, 1), (1006.5, 2), (1009.5, 3)):
        clock[0] = 1000.0
        final = remeasure(group, measure_one, lambda t: 1, deadline=deadline)
        assert final.rounds == rounds and clock[0] <= max(deadline, 1003.0), deadline
    clock[0] = 1000.0
    assert remeasure(group, measure_one, lambda t: 1).rounds >= MIN_ROUNDS


def _study():
    import optuna

    return optuna.create_study()


def test_finals_the_budget_does_not_cover_wait_for_the_next_run(write_space, tmp_path,
                                                                monkeypatch, capsys):
    monkeypatch.setattr(finals_module, "FINALS_OVERHEAD_S", 1e4)   # no final fits in 60 s
    path = write_space(SMALL_SPACE)
    args = ["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
            "--quiet", "--no-report"]
    assert main([*args, "--time", "60s"]) == 0
    out = capsys.readouterr().out
    assert "s of it kept for the finals)" in out
    assert "finals of 1 problem left for the next run: the time budget did not cover" in out
    assert "winner," not in out
    store = StudyStore(tmp_path / "tiny-interpret")
    assert len([t for t in store.records()[0] if t.ok]) == 1   # kept the rest for finals
    monkeypatch.setattr(finals_module, "FINALS_OVERHEAD_S", 0.02)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "left for the next run" not in out and "winner," in out


def test_the_time_budget_bounds_the_whole_command(write_space, tmp_path, capsys):
    """``--time`` counts from the command's start and keeps time for the finals and the
    report: a space that would take longer ends within the budget plus 5 %, its finals
    fitted in or left for the next run, with a line saying so.  The study is kept in
    memory-backed storage where the machine has it (``/dev/shm``): on the 2-core CI
    machine, beside the other tests' journals, writing the study's summary after the sweep
    once took 2.1 s (the run's own ``summary`` step; 0.0 s otherwise), an fsync the budget
    cannot foresee, and what this test holds to 5 % is the budget's own accounting."""
    path = write_space(SMALL_SPACE.replace("block: [32, 128]", "block: [32, 64, 128]")
                       .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024]")
                       .replace("footprint: [4KiB]", "footprint: [1KiB]")
                       .replace('grid: [sms, "cdiv(n, BLOCK)"]', f"grid: {list(range(1, 65))}"))
    shm = Path("/dev/shm")
    studies = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path / "studies"
    try:
        t0 = time.perf_counter()
        assert main(["run", str(path), "--device", "interpret", "--studies-dir", str(studies),
                     "--quiet", "--no-report", "--time", "10s", "--timing"]) == 0
        wall = time.perf_counter() - t0
    finally:
        if studies.parent == shm:
            shutil.rmtree(studies, ignore_errors=True)
    out = capsys.readouterr().out
    print(out)      # shown whole where an assertion fails (its own message is cut short)
    assert "stopped: budget: 10 s" in out, out
    # the finals fitted in, or were left for the next run with a line saying so
    assert ("winner," in out) != \
        ("left for the next run: the time budget did not cover" in out), out
    assert wall <= 10 * 1.05, (wall, out)        # the run's own lines say where time went
