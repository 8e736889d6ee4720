"""A time budget covers the finals: the loop keeps the time they will take, and a
problem's final starts only if the time left covers it (the next run measures the rest)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from sweeper import finals as finals_module
from sweeper.cli import main
from sweeper.finals import (
    FINALS_STAYING,
    MAX_FINALISTS,
    MIN_ROUNDS,
    ROUNDS,
    TOP_K,
    final_bound_s,
    finals_estimate_s,
    problem_of,
)
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


def test_a_finals_bound_prices_each_finalist_at_its_own_median():
    """The budget's bound: each finalist at twice its own median, the baseline (its own
    not known) at the slowest's: one slow finalist (a loaded machine's) no longer prices
    the whole field."""
    def entrant(median_ms):
        return 2 * 12 * median_ms / 1e3 + 0.02

    medians = [2.0, 2.0, 2.0, 2.0, 24.0]
    assert final_bound_s(medians, None) == pytest.approx(
        ROUNDS * (4 * entrant(2.0) + 2 * entrant(24.0)))
    assert final_bound_s(medians, None) < 0.5 * finals_estimate_s(5, 24.0, None)
    assert final_bound_s(medians, None, rounds=1) == pytest.approx(
        final_bound_s(medians, None) / ROUNDS)
    assert final_bound_s([1.4] * 3, None) == pytest.approx(finals_estimate_s(3, 1.4, None))


def test_a_typical_final_keeps_a_few_finalists_past_its_first_round():
    """What a plan expects: the top five in the first round, three of them in the rest (a
    finalist out of contention leaves), the baseline in every round, all at 1.2 times the
    fastest median; beside an interpreted kernel torch's baseline costs its overhead."""
    entrant = 2 * 12 * 0.6 * 1.4e-3 + 0.02
    rounds = MIN_ROUNDS + 0.5
    assert finals_estimate_s(40, 1.4, None, typical=True) == pytest.approx(
        (TOP_K + FINALS_STAYING * (rounds - 1) + rounds) * entrant)
    assert finals_estimate_s(2, 1.4, None, typical=True, rounds=3) == pytest.approx(
        (2 + 2 * 2 + 3) * entrant)
    assert finals_estimate_s(40, 1.4, None, typical=True, baseline_free=True) == \
        pytest.approx((TOP_K + FINALS_STAYING * (rounds - 1)) * entrant + rounds * 0.02)
    # a budget keeps what a final may take: every finalist in every round
    assert finals_estimate_s(40, 1.4, None, baseline_free=True) == pytest.approx(
        (MAX_FINALISTS + 1) * ROUNDS * (2 * 12 * 1.4e-3 + 0.02))


def trial(number: int, median_ms: float) -> TrialRecord:
    problem = Problem("float32", 4096, (("n", 1024),))
    samples = [median_ms] * 5
    return TrialRecord(number=number, choice={"block": str(number)}, status=TrialStatus.OK,
                       config=Config(problem=problem, grid=1, block=32, meta={}),
                       samples_ms=samples, stats=summarize(samples))


def test_a_sweep_without_finals_says_it_keeps_time_for_the_trial_in_flight(monkeypatch):
    """A worker's sweep and a replay run no finals: what the budget keeps at the end is
    the trial in flight's time, not "kept for the finals"; nothing kept, nothing said."""
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    assert budgets.finals_duty is None
    budgets.counted(dataclasses.replace(trial(0, 2.0), wall_s=0.7), None)
    now[0] = 110.0 - 0.7 + 0.01
    assert budgets._spent(_study()) == "budget: 10 s (0.7 s of it kept for the trial in flight)"
    budgets.counted(dataclasses.replace(trial(1, 2.0), wall_s=0.01), None)
    now[0] = 110.0
    assert budgets._spent(_study()) == "budget: 10 s"


def test_the_loop_stops_when_the_time_left_is_what_the_finals_need(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.finals_duty = lambda: Duty("cool", 0.1)
    assert budgets.keep_for_finals() == 0 and not budgets.halted()
    for i in range(3):
        budgets.counted(trial(i, 2.0 - i / 10), None)
    # each at its own median, in the rounds a final runs before it may stop
    kept = final_bound_s([2.0, 1.9, 1.8], Duty("cool", 0.1), rounds=MIN_ROUNDS)
    assert budgets.keep_for_finals() == pytest.approx(kept)
    now[0] = 110.0 - kept - 0.01
    assert not budgets.halted() and budgets._spent(_study()) == ""
    now[0] = 110.0 - kept + 0.01
    assert budgets.halted()
    assert budgets._spent(_study()) == f"budget: 10 s ({kept:.1f} s of it kept for the finals)"
    entrants = [trial(i, 2.0 - i / 10) for i in range(3)]
    # a final starts when its first round fits: the deadline stops the rounds that do not
    assert budgets.covers(entrants, Duty("cool", 0.1))
    one_round = final_bound_s([2.0, 1.9, 1.8], Duty("cool", 0.1), rounds=1)
    assert one_round == pytest.approx(kept / MIN_ROUNDS)
    now[0] = 110.0 - one_round + 0.01
    assert not budgets.covers(entrants, Duty("cool", 0.1))
    assert budgets.covers(entrants[:1], Duty("cool", 0.1))     # one entrant takes less
    budgets.finals_duty = None                  # a sweep without finals keeps nothing
    assert budgets.keep_for_finals() == 0 and not budgets.halted()


def test_the_finals_are_kept_for_as_the_finalists_so_far_give_them(monkeypatch):
    """The budget bounds each problem's final from the finalists its trials give now (the
    top ``TOP_K`` and those tied with the fastest), at the slowest one's median, not from
    every trial measured: a bound of twelve entrants kept 6.3 s of a 20 s budget on the
    H200 for finals that took 0.1 s.  A machine whose finals measured their host's seconds
    per entrant-round keeps those instead of ``FINALS_OVERHEAD_S``."""
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=60.0, ceilings=None,
                      valid=100, measured=0, t0=time.perf_counter())
    budgets.finals_duty = lambda: None
    for i in range(20):                        # 1.0, 1.1, ... 2.9 ms: none tied
        budgets.counted(trial(i, 1.0 + i / 10), None)
    assert budgets.keep_for_finals() == pytest.approx(
        final_bound_s([1.0, 1.1, 1.2, 1.3, 1.4], None, rounds=MIN_ROUNDS))
    for i in range(20, 32):                    # twelve more at the fastest's median: tied
        budgets.counted(trial(i, 1.0), None)
    assert budgets.keep_for_finals() == pytest.approx(
        finals_estimate_s(MAX_FINALISTS, 1.0, None, rounds=MIN_ROUNDS))
    budgets.finals_overhead_s = 0.001
    assert budgets.keep_for_finals() == pytest.approx(
        finals_estimate_s(MAX_FINALISTS, 1.0, None, rounds=MIN_ROUNDS, overhead_s=0.001))
    assert budgets.keep_for_finals() < finals_estimate_s(MAX_FINALISTS, 1.0, None,
                                                         rounds=MIN_ROUNDS)
    other = trial(30, 5.0)                     # another problem adds its own final
    assert other.config is not None
    other.config = Config(problem=Problem("float32", 8192, (("n", 2048),)), grid=1, block=32,
                          meta={})
    before = budgets.keep_for_finals()
    budgets.counted(other, None)
    assert budgets.keep_for_finals() == pytest.approx(
        before + final_bound_s([5.0], None, rounds=MIN_ROUNDS, overhead_s=0.001))


def test_a_machines_finals_overhead_is_measured_from_its_finals():
    """What an entrant-round of a final cost beyond its launches: the finals' seconds less
    every timed and warm-up launch, per entrant-round; nothing where a duty's waits are in
    the seconds, and one GPU's records where several raced at once."""
    from sweeper.finals import (
        GPU_ROUND,
        FinalBaseline,
        Finalist,
        FinalRecord,
        measured_overhead_s,
    )
    from sweeper.store import GpuSlot, ProblemKey

    def final(rounds: int, gpu=None, duty=""):
        # two finalists racing every round, the first 1 ms a launch, the second 2 ms
        entrants = [Finalist(number=n, samples_ms=[ms] * 10 * rounds,
                             stats=summarize([ms] * 10 * rounds)) for n, ms in ((1, 1.0), (2, 2.0))]
        base = FinalBaseline(name="torch", samples_ms=[1.0] * 10 * rounds,
                             stats=summarize([1.0] * 10 * rounds))
        return FinalRecord(problem=ProblemKey("x", 1), finalists=entrants, tied=[1], winner=1,
                           rounds=rounds, baseline=base, duty=duty, gpu=gpu)

    # 3 + 5 rounds of 3 entrants; launches 12 a round: (1 + 2 + 1) ms x 12 x 8 rounds
    launches = 4e-3 * 12 * 8
    assert measured_overhead_s([final(3), final(5)], launches + 24 * 0.005, GPU_ROUND) == \
        pytest.approx(0.005)
    assert measured_overhead_s([final(3)], 0.0) == 0.0            # never below nothing
    assert measured_overhead_s([], 1.0) is None
    assert measured_overhead_s([final(3, duty="a 0.1 s cool-down")], 1.0) is None
    a, b = GpuSlot(0, "GPU-a"), GpuSlot(1, "GPU-b")
    assert measured_overhead_s([final(3, a), final(3, b)], 4e-3 * 12 * 3 + 9 * 0.01) == \
        pytest.approx(0.01)


def test_the_time_budget_keeps_for_the_report_of_the_heatmaps_measured_so_far(monkeypatch):
    """The report a run the budget cuts short writes draws the heatmaps of its trials, not
    the space's: the budget keeps what a report of the maps so far and of one trial more
    takes (a space of 90 maps kept 8 s on the H200 and left a 12 s run nothing), the maps
    counted by the rule the report draws them by (sweeper.drawn_maps): none for a problem
    where fewer than two of grid, block and the meta-parameters vary, and a map of one
    cell is folded, not drawn."""
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.report_s = lambda maps, cells: 0.4 + 0.5 * maps
    problem = Problem("float32", 4096, (("n", 1024),))

    def counted(number: int, block: int, meta: int, status=TrialStatus.OK) -> float:
        ok = status is TrialStatus.OK
        budgets.counted(TrialRecord(
            number=number, choice={"grid": "sms", "block": str(block)}, status=status,
            config=Config(problem=problem, grid=4, block=block, meta={"BLOCK": meta}),
            samples_ms=[1.0] * 5, stats=summarize([1.0] * 5) if ok else None), None)
        return budgets.keep_for_report()

    assert budgets.keep_for_report() == pytest.approx(0.4)
    assert budgets.time_left() == pytest.approx(10 - 0.4)
    # nothing varies: no map, but a trial more that moves two axes draws the best map
    assert counted(0, 32, 256) == pytest.approx(0.4 + 0.5 * 1)
    # block alone varies: no map, but a trial of another BLOCK draws two (next line)
    assert counted(1, 64, 256) == pytest.approx(0.4 + 0.5 * 2)
    # block and BLOCK vary: the best over BLOCK and BLOCK=256's map are drawn, BLOCK=1024's
    # (one cell) is folded, and a trial more may draw it
    assert counted(2, 32, 1024) == pytest.approx(0.4 + 0.5 * (2 + 1))
    assert counted(3, 64, 1024) == pytest.approx(0.4 + 0.5 * 3)     # its second cell
    assert counted(4, 32, 512, TrialStatus.CRASHED) == pytest.approx(0.4 + 0.5 * 3)
    now[0] = 110.0 - budgets.keep_for_report() + 0.01
    assert budgets.halted()
    budgets.report_s = None                           # --no-report keeps nothing
    assert budgets.keep_for_report() == 0 and not budgets.halted()


def test_no_trial_draws_more_maps_than_the_budget_kept_for_before_it():
    """Whatever config comes next, the maps it draws are at most those the budget kept
    for before it: the trial that first makes a problem vary on two axes draws up to two
    maps at once (the best over its meta values and one meta values' own), which a
    budget that kept none for a problem varying on fewer than two axes left unkept."""
    import random

    from sweeper.drawn_maps import ProblemMaps

    rng = random.Random(0)
    for _ in range(400):
        maps = ProblemMaps()
        axes = [rng.sample(range(4), rng.randint(1, 3)) for _ in range(4)]
        for _ in range(rng.randint(1, 12)):
            drawn, kept = maps.drawn().count, maps.most_added()
            grid, block, *meta = (rng.choice(values) for values in axes)
            maps.add(tuple(meta), grid, block)
            assert maps.drawn().count <= drawn + kept, (axes, drawn, kept, maps.drawn())
    # the case the budget missed: block alone varies, then BLOCK does too: two maps
    maps = ProblemMaps()
    maps.add((256,), "sms", 32)
    maps.add((256,), "sms", 64)
    assert maps.drawn().count == 0 and maps.most_added() == 2
    maps.add((1024,), "sms", 32)
    assert maps.drawn().count == 2


def test_a_resumed_run_keeps_report_time_for_the_maps_it_draws_again():
    """The report draws again only the maps of problems this run adds to (or whose final
    it owes); those are drawn with every cell the study holds.  A resumed run kept time
    for the maps of the resumed trials whose final it owed, and none for the earlier
    trials of a problem whose final was done, which a trial of this run redraws whole."""
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=0.0)
    budgets.report_s = lambda maps, cells: 0.4 + 0.5 * maps

    def record(number: int, n: int, block: int, meta: int) -> TrialRecord:
        problem = Problem("float32", 4096, (("n", n),))
        return TrialRecord(number=number, choice={"grid": "4", "block": str(block)},
                           status=TrialStatus.OK, samples_ms=[1.0] * 5,
                           config=Config(problem=problem, grid=4, block=block,
                                         meta={"BLOCK": meta}), stats=summarize([1.0] * 5))

    # a problem whose final is done: two maps (the best over BLOCK and BLOCK=256's), and
    # one whose final is owed: the same two maps
    for number, (block, meta) in enumerate([(32, 256), (64, 256), (32, 1024)]):
        budgets.note_kept(record(number, 1024, block, meta))
        budgets.note(record(10 + number, 2048, block, meta))
    # the owed final's maps, and a trial more: all of the done problem's two and one more
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (2 + 3))
    budgets.counted(dataclasses.replace(record(20, 1024, 64, 1024), wall_s=0.1), None)
    # the done problem's maps are drawn again now (BLOCK=1024's is drawn too)
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (2 + 3 + 1))


def test_once_the_sweep_stopped_the_report_keeps_no_time_for_a_trial_more(monkeypatch):
    """The maps a trial more may draw are kept for while trials may start; once the sweep
    stopped and its trials in flight ended, the finals and the report follow and no trial
    adds a map.  Keeping them still left a resumed softmax run under ``--time 5s`` on the
    interpreter without its final ("needs 0.2 s more than this time budget left them"),
    ending at 3.1 s."""
    now = [100.0]
    monkeypatch.setattr(_budget.time, "perf_counter", lambda: now[0])
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    budgets.report_s = lambda maps, cells: 0.4 + 0.5 * maps
    budgets.finals_duty = lambda: None
    problem = Problem("float32", 4096, (("n", 1024),))
    entrants = []
    for number, (block, meta) in enumerate([(32, 256), (64, 256), (32, 1024)]):
        entrants.append(dataclasses.replace(TrialRecord(
            number=number, choice={"grid": "4", "block": str(block)}, status=TrialStatus.OK,
            config=Config(problem=problem, grid=4, block=block, meta={"BLOCK": meta}),
            samples_ms=[20.0] * 5, stats=summarize([20.0] * 5)), wall_s=0.1))
        budgets.counted(entrants[-1], None)
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (2 + 1))
    first_round = budgets.first_round_s(entrants, None)
    # the time left covers the first round with the report's two maps kept, not a third
    now[0] = 110.0 + budgets.trial_s - first_round - (0.4 + 0.5 * 2) - 0.5 * 0.5
    assert not budgets.covers(entrants, None)
    budgets.swept = True
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * 2)
    assert budgets.covers(entrants, None)


def test_the_report_of_one_map_is_kept_for_as_one_map_and_a_trial_more():
    """Each meta value's configs in one cell of their own (one block each): the report
    draws one map, its problem's, and folds the others; the budget keeps what that map and
    the one a trial more may add take (it kept three maps' time: two more whatever the
    trials drew)."""
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=2, measured=0, t0=0.0)
    budgets.report_s = lambda maps, cells: 0.4 + 0.5 * maps
    problem = Problem("float32", 4096, (("n", 1024),))
    for number, block in enumerate((32, 128)):
        budgets.counted(TrialRecord(
            number=number, choice={"grid": "4", "block": str(block)}, status=TrialStatus.OK,
            config=Config(problem=problem, grid=4, block=block, meta={"BLOCK": 4 * block}),
            samples_ms=[1.0] * 5, stats=summarize([1.0] * 5)), None)
    assert budgets.keep_for_report() == pytest.approx(0.4 + 0.5 * (1 + 1))


def test_the_first_trial_starts_only_if_its_expected_compile_fits(monkeypatch):
    """Before the run's first trial the budget keeps what that trial is expected to take
    (a compile from a cold cache, ``first_trial_s``): on a fresh H200 machine a 12 s
    budget left 2.6 s after a 7.3 s start-up, the first trial took 3.2 s and the command
    15.6 s.  Once a trial ran, its wall counts instead; once another ran, the longest of
    the others."""
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
    # the run's first trial starts the compiler in its process: once another trial ran,
    # the longest of the others is what a trial in flight takes
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=3.0, ceilings=None,
                      valid=100, measured=0, t0=100.0)
    for number, wall in enumerate((1.7, 0.01, 0.27, 0.02)):
        t = trial(number, 1.0)
        t.wall_s = wall
        budgets.counted(t, None)
        assert budgets.keep_for_finals() == pytest.approx((1.7, 0.01, 0.27, 0.27)[number])


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
        assert final.cut_short == (rounds < MIN_ROUNDS)
    clock[0] = 1000.0
    assert remeasure(group, measure_one, lambda t: 1).rounds >= MIN_ROUNDS


def test_a_final_round_the_deadline_passes_in_stops_and_is_set_aside(monkeypatch):
    """A round that starts in time but slows (a machine loaded mid-final) stops at its
    next entrant once the deadline has passed; what it measured is set aside, so every
    entrant and the baseline keep the same complete rounds."""
    import time as time_module

    from sweeper.finals import remeasure

    clock = [1000.0]
    monkeypatch.setattr(time_module, "monotonic", lambda: clock[0])
    step = {"s": 0.5}

    def measure_one(t, rule):
        clock[0] += step["s"]
        return [t.stats.median] * rule.repeat

    def baseline(rule):
        clock[0] += step["s"]
        return [0.5] * rule.repeat

    def on_round(rounds, racing):
        step["s"] = 3.0                     # the second round runs six times slower

    group = [trial(i, 2.0) for i in range(3)]
    final = remeasure(group, measure_one, lambda t: 1, baseline=("torch", baseline),
                      on_round=on_round, deadline=1004.5, per_round=4)
    assert final.rounds == 1
    assert clock[0] <= 1004.5 + 3.0           # one entrant past the deadline at most
    assert all(len(f.samples_ms) == 4 for f in final.finalists)
    assert final.baseline is not None and len(final.baseline.samples_ms) == 4


def _study():
    import optuna

    return optuna.create_study()


def test_finals_the_budget_does_not_cover_wait_for_the_next_run(write_space, tmp_path,
                                                                monkeypatch, capsys):
    # a cache of its own: a finals overhead another test's run measured would stand
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
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
    # the final that ran measured what an entrant-round costs here beyond its launches:
    # the next run's budget keeps that, not FINALS_OVERHEAD_S
    kept = json.loads((tmp_path / "cache" / "run-costs.json").read_text())
    (overhead,) = [costs["finals_overhead_s"] for costs in kept.values()]
    assert overhead is not None and 0 <= overhead < 1e4
    seen: list[float | None] = []
    real = Budgets.keep_for_finals

    def spy(self):
        seen.append(self.finals_overhead_s)
        return real(self)
    monkeypatch.setattr(Budgets, "keep_for_finals", spy)
    assert main([*args, "--time", "60s", "--force"]) == 0
    assert seen and set(seen) == {overhead}


def test_finals_no_budget_like_this_one_covers_name_the_budget_that_does():
    """A final left for the next run is said as the next run can honour it: where the
    budget, once no trial is measured before the finals, leaves their first rounds the
    time they need, the same command measures them; where it does not (a run that
    measured nothing is such a run), the same command would leave them again, and the
    line names a --time that covers them instead."""
    from types import SimpleNamespace

    from sweeper.engine._lines import _deferred_line
    from sweeper.store import ProblemKey

    key = ProblemKey("float32", 4096, "cold")
    ran = SimpleNamespace(finals_deferred=[key], finals_needed_s=1.2, finals_left_s=0.3,
                          finals_room_s=2.0, measured=3)
    assert _deferred_line(ran, 5.0) == (
        "finals of 1 problem left for the next run: the time budget did not cover them "
        "after this run's trials (the first round of its final needs 1.2 s; this time "
        "budget leaves the finals 2.0 s after the start-up and the report's share when no "
        "trial is measured before them): run the same command to measure them")
    # softmax under --time 5s: the same budget would leave them again
    ran.finals_room_s = 0.8
    assert _deferred_line(ran, 5.0) == (
        "finals of 1 problem left for the next run: the time budget did not cover them (the "
        "first round of its final needs 1.2 s, 0.4 s more than this time budget leaves the "
        "finals after the start-up and the report's share): --time 6s or more measures them")
    idle = SimpleNamespace(finals_deferred=[key, key], finals_needed_s=1.2, finals_left_s=0.8,
                           finals_room_s=2.0, measured=0)
    assert _deferred_line(idle, 3.0).endswith(
        "(the first rounds of their finals need 1.2 s, 0.4 s more than this time budget "
        "leaves the finals after the start-up and the report's share): --time 4s or more "
        "measures them")


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



def _unreported_study(small_space, tmp_path, capsys, monkeypatch):
    """The ``run`` arguments of the small space, and its study, measured whole without a
    report; this machine's report costs as a fresh cache has them (the interpreter's
    2.1 s), not as the other tests' reports left them."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    studies = tmp_path / "studies"
    args = ["run", str(small_space), "--device", "interpret", "--studies-dir", str(studies),
            "--quiet"]
    assert main([*args, "--no-report"]) == 0
    capsys.readouterr()
    return args, studies / "tiny-interpret"


def test_a_report_the_time_left_does_not_cover_is_left_to_sweeper_report(small_space, tmp_path,
                                                                       capsys, monkeypatch):
    """A time budget bounds the report too: where the time left (plus the 5 % a budget may
    run over) does not cover what the sweep kept for the report, the command writes none
    and says how to write it, instead of running past its budget (a complete study resumed
    under ``--time 3s`` on the interpreter: 2.7 s of set-up, then 0.7 s of report, 3.6 s).
    With time left, the report is written as ever."""
    from sweeper.engine import _clock

    args, folder = _unreported_study(small_space, tmp_path, capsys, monkeypatch)
    real = _clock.RunClock.elapsed_s
    # the set-up took all but 10 ms of the budget
    monkeypatch.setattr(_clock.RunClock, "elapsed_s", lambda self: 0.99)
    assert main([*args, "--time", "1s"]) == 0
    out = capsys.readouterr().out
    assert "stopped: complete" in out, out      # nothing was left to measure
    assert "report: not written, the time budget is spent (0.0 s left, a report takes about" \
        in out, out
    assert f"`sweeper report {folder}` writes it" in out, out
    assert not (folder / "report.md").exists()
    # a study of no trials has no report to leave for later: the run says why instead
    empty = ["run", str(small_space), "--device", "interpret", "--studies-dir",
             str(tmp_path / "empty"), "--quiet", "--time", "1s"]
    main(empty)
    out, err = capsys.readouterr()
    assert "report: not written" not in out and "no config was measured" in err, (out, err)
    monkeypatch.setattr(_clock.RunClock, "elapsed_s", real)
    assert main([*args, "--time", "60s"]) == 0
    assert "report: not written" not in capsys.readouterr().out
    assert (folder / "report.md").exists()


def test_a_report_draws_no_picture_past_its_deadline(tmp_path, monkeypatch):
    """The pictures start while the longest drawn so far still ends by the deadline; those
    left are not shown, their old files go as stale, and the next report draws them."""
    from sweeper.report import _figures

    now = [0.0]
    monkeypatch.setattr(_figures.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(_figures._draw, "matplotlib_imported", lambda: None)

    def drawn(job):                               # each picture takes a second
        figure, paths = job
        now[0] += 1.0
        for path in paths:
            path.write_text(figure.stem)
        return paths

    monkeypatch.setattr(_figures, "_draw_one", drawn)
    folder = tmp_path / "heatmaps"
    folder.mkdir()
    (folder / "c.png").write_text("old numbers")      # drawn by sweeper from old ones
    (folder / _figures.MANIFEST).write_text(json.dumps(
        {"version": 1, "files": {"c.png": "an old key"}}))
    figures = [_figures.Figure(stem, str, (stem,)) for stem in "abc"]
    shown = _figures.render(figures, folder, deadline=2.5, workers=1)
    assert shown.left == ("c",) and [p.name for p in shown.images] == ["a.png", "b.png"]
    assert not (folder / "c.png").exists()
    again = _figures.render(figures, folder, deadline=None, workers=1)
    assert again.left == () and [p.name for p in again.drawn] == ["c.png"]


def test_a_deadline_too_close_for_a_first_picture_starts_none(tmp_path, monkeypatch):
    """Before any picture is drawn, a deadline closer than ``FIRST_PICTURE_S`` starts
    none (not the plotting library's import, not a pool): on an H100 a pool started 0.5 s
    before the deadline drew nothing in 0.6 s and carried a `--time 6s` run to 6.54 s."""
    from sweeper.report import _figures

    now = [10.0]
    monkeypatch.setattr(_figures.time, "perf_counter", lambda: now[0])
    started = []
    monkeypatch.setattr(_figures._draw, "matplotlib_imported",
                        lambda: started.append("imports"))
    monkeypatch.setattr(_figures, "_draw_all", lambda *a, **k: started.append("draw") or [])
    folder = tmp_path / "heatmaps"
    figures = [_figures.Figure(stem, str, (stem,)) for stem in "ab"]
    shown = _figures.render(figures, folder, deadline=now[0] + _figures.FIRST_PICTURE_S / 2)
    assert shown.left == ("a", "b") and shown.images == [] and started == []
    shown = _figures.render(figures, folder, deadline=now[0] + _figures.FIRST_PICTURE_S * 2)
    assert started == ["imports", "draw"]


def test_a_report_past_the_time_budget_leaves_its_pictures_to_sweeper_report(
        small_space, tmp_path, capsys, monkeypatch):
    """A report the time kept for it covered when it started may still take longer (its
    pictures' seconds vary twofold on a loaded 2-core machine: a `--time 10s` run of
    spaces/add.yaml ended at 11.7 s): it draws no picture past the budget's end, and says
    which command draws the rest."""
    from sweeper.engine import _report

    args, folder = _unreported_study(small_space, tmp_path, capsys, monkeypatch)
    # the budget's end is past when the report starts: the files are written, no picture
    monkeypatch.setattr(_report, "REPORT_FILES_S", 1e6)
    assert main([*args, "--time", "60s"]) == 0
    out = capsys.readouterr().out
    assert "; no heatmap drawn yet\n" in out and "0 heatmaps" not in out
    assert "not drawn, the time budget is spent: " \
        f"`sweeper report {folder}` draws them" in out, out
    assert (folder / "report.md").exists() and not list((folder / "heatmaps").glob("*.png"))
    assert main(["report", str(folder)]) == 0
    assert list((folder / "heatmaps").glob("*.png"))


def test_a_final_leaves_the_later_finals_the_rounds_kept_for_them():
    """The sweep keeps each problem's final its first ``MIN_ROUNDS`` rounds, and a final
    runs later rounds only in what is left over: the deadline it is handed is the budget's
    end less the later finals' kept rounds and its own confirmation under sustained load
    (a final running five rounds took the time kept for the next, which was then left for
    the next run)."""
    from types import SimpleNamespace

    from sweeper.sweep._finals import run_finals

    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=60.0, ceilings=None,
                      valid=100, measured=0, t0=time.perf_counter())
    first = [trial(0, 1.0), trial(1, 1.1)]
    second = [trial(2, 5.0), trial(3, 5.5)]
    for t in second:
        assert t.config is not None
        t.config = Config(problem=Problem("float32", 8192, (("n", 2048),)), grid=1, block=32,
                          meta={})
    assert budgets.kept_after(first, [second], None) == pytest.approx(
        final_bound_s([5.0, 5.5], None, rounds=MIN_ROUNDS))
    assert budgets.kept_after(second, [], None) == 0
    sustained = Duty("sustained", 0.5)
    confirmation = final_bound_s([5.0, 5.5], sustained, rounds=0)
    assert confirmation > 0
    assert budgets.kept_after(second, [], sustained) == pytest.approx(confirmation)

    jobs = []
    outcome = SimpleNamespace(extras=[], record=SimpleNamespace(gpu=None, after_trial=None),
                              error=None, edited="")
    worker = SimpleNamespace(slot=None, submit_finals=jobs.append,
                             finals_result=lambda on_round: outcome)
    reporter = SimpleNamespace(final_round=None, final_done=lambda: None)
    run_finals([*first, *second], [problem_of(first[0]), problem_of(second[0])],
               SimpleNamespace(all=[worker], several=False), SimpleNamespace(append=id), 0,
               None, lambda extras: None, reporter, deadline=1000.0,
               kept_after=lambda entrants, later: budgets.kept_after(entrants, later, None))
    assert [job.deadline for job in jobs] == pytest.approx(
        [1000.0 - budgets.kept_after(first, [second], None), 1000.0])


def test_a_replay_keeps_this_machines_report_seconds_for_its_next_time_budget(
        write_space, tmp_path, capsys, monkeypatch):
    """A replay's trials are the recorded GPU's, but its start-up and report run here: a
    replay that kept none of them priced its report at the H200's second forever, and a
    `--time 6s` replay of spaces/matmul.yaml on the loaded 2-core machine drew a 9 s
    report and ended at 13.9 s.  What a replay's report took is kept (and no trial
    cost), and the next replay's time budget holds a report it does not cover."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = write_space("""
        study: r
        kernel: copy
        sampler: tpe
        params:
          grid: [sms, 2*sms]
          block: [128, 256]
          BLOCK: [1024, 2048]
          footprint: [1GiB]
    """)
    table = Path(__file__).parent / "data" / "replay" / "h200-copy.csv"
    args = ["run", str(space), "--device", f"replay:{table}", "--quiet", "--no-priors",
            "--studies-dir", str(tmp_path / "studies")]
    assert main([*args, "--study", "first"]) == 0
    kept = json.loads((tmp_path / "cache" / "run-costs.json").read_text())
    [(key, costs)] = kept.items()
    assert key.startswith("replay") and costs["report_s"] > 0 and costs["report_maps"] > 0
    assert costs["trial_s"] == {} and costs["launch_scale"] == {}
    # a machine where that report took 40 s: a 20 s budget has no room for another
    costs.update(report_s=40.0, report_fixed_s=39.0)
    costs["reports"]["r"].update(report_s=40.0, report_fixed_s=39.0)    # the space's own
    (tmp_path / "cache" / "run-costs.json").write_text(json.dumps(kept))
    capsys.readouterr()
    assert main([*args, "--study", "first", "--time", "20s"]) == 0
    assert "report: not written, the time budget is spent" in capsys.readouterr().out


REPLAY_SPACE = """
    study: r
    kernel: copy
    sampler: exhaustive
    params:
      grid: [sms, 2*sms]
      block: [128, 256]
      BLOCK: [1024, 2048]
      footprint: [1GiB]
    budget: {trials: 6, patience: 40}
"""


def test_a_study_records_the_budgets_each_run_was_given(write_space, tmp_path, monkeypatch):
    """study.json keeps each run's budgets as fields (``budgets``: when, trials, time,
    target, patience; an option over the space's ``budget:``), not only inside its command
    line; a study an older sweeper wrote, which kept none, reads as having none."""
    from sweeper.store import StudyMeta

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = write_space(REPLAY_SPACE)
    table = Path(__file__).parent / "data" / "replay" / "h200-copy.csv"
    args = ["run", str(space), "--device", f"replay:{table}", "--quiet", "--no-report",
            "--studies-dir", str(tmp_path / "studies")]
    assert main([*args, "--trials", "2", "--time", "90s"]) == 0
    assert main(args) == 0
    meta = StudyStore(tmp_path / "studies" / "r-replay").study_meta()
    assert [(b.trials, b.time_s, b.patience, b.target) for b in meta.budgets] == [
        (2, 90.0, 40, None), (6, None, 40, None)]
    assert all(b.when for b in meta.budgets) and meta.budgets[1].when == meta.resumed[-1]
    older = json.loads((Path(__file__).parents[1] / "studies" / "h200-copy-fp32" /
                        "study.json").read_text())
    assert "budgets" not in older and StudyMeta.from_json(older).budgets == []


def test_a_resumed_study_file_holds_only_the_fields_its_record_declares(
        write_space, tmp_path, monkeypatch):
    """A resume writes nothing into study.json that :class:`StudyMeta` has no field for:
    it kept the command as ``last_command``, which no reader took (``last_run.command``
    and ``budgets`` say what the last run was given)."""
    import dataclasses

    from sweeper.store import StudyMeta

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = write_space(REPLAY_SPACE)
    table = Path(__file__).parent / "data" / "replay" / "h200-copy.csv"
    args = ["run", str(space), "--device", f"replay:{table}", "--quiet", "--no-report",
            "--studies-dir", str(tmp_path / "studies")]
    assert main([*args, "--trials", "2"]) == 0
    assert main(args) == 0
    meta = json.loads((tmp_path / "studies" / "r-replay" / "study.json").read_text())
    assert set(meta) <= {f.name for f in dataclasses.fields(StudyMeta)}, meta.keys()
    assert meta["last_run"]["command"].startswith("sweeper run")


def test_the_last_run_keeps_the_commands_wall_written_after_its_report(
        write_space, tmp_path, monkeypatch):
    """study.json's ``last_run.wall_s`` is the whole command's, its report included, and
    is written after the report (a run whose report took it past its time budget is seen
    there); the sweep's own seconds are ``sweep_s``, what ``sweeper plan`` prices a trial
    by.  A study an older sweeper wrote kept the sweep's as ``wall_s``: read as
    ``sweep_s``."""
    from sweeper.cli._plan import _last_run
    from sweeper.engine import _report

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    real = _report.report_study

    def slow(*args, **kwargs):
        time.sleep(1.0)
        return real(*args, **kwargs)
    monkeypatch.setattr(_report, "report_study", slow)
    space = write_space(REPLAY_SPACE)
    table = Path(__file__).parent / "data" / "replay" / "h200-copy.csv"
    t0 = time.perf_counter()
    assert main(["run", str(space), "--device", f"replay:{table}", "--quiet",
                 "--studies-dir", str(tmp_path / "studies")]) == 0
    wall = time.perf_counter() - t0
    store = StudyStore(tmp_path / "studies" / "r-replay")
    last = store.study_meta().last_run
    assert last["sweep_s"] + 1.0 <= last["wall_s"] <= wall, (last, wall)
    # an older study's last run: its wall_s was the sweep's
    store.update_meta(last_run={"wall_s": 3.0, "measured": 6, "stopped_by": "complete"})
    assert store.study_meta().last_run == {"sweep_s": 3.0, "measured": 6,
                                           "stopped_by": "complete"}
    said = _last_run(store)
    assert said is not None and "6 trials in 3 s, 0.50 s a trial" in said(0)


def test_a_run_resolves_its_budgets_once(write_space, tmp_path, monkeypatch):
    """``--trials`` and ``--time`` over the space's budget are resolved once a run
    (:func:`~sweeper.engine._inputs.budgeted`): the study, the estimate, the GPU check and
    the summary and report are all given that one."""
    from sweeper.engine import _run

    calls = []
    resolved = _run.budgeted

    def counted(*args):
        calls.append(args)
        return resolved(*args)
    monkeypatch.setattr(_run, "budgeted", counted)
    assert main(["run", str(write_space(SMALL_SPACE)), "--device", "interpret",
                 "--studies-dir", str(tmp_path / "st"), "--trials", "2", "--time", "60s",
                 "--no-report", "--quiet", "--gpu-check", "off"]) == 0
    assert len(calls) == 1 and calls[0][1:] == (2, 60.0)
