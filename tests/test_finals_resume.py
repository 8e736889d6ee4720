"""The interleaved finals are a stage a resume finishes: a run killed between two problems'
finals keeps the one finished and the next run measures only the other; a final made out
of date by later trials stops counting; export and the report say which problems still end
with the sweep's best."""

import time

import pytest

import sweeper.sweep._workers as workers_module
from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.export import export_study
from sweeper.finals import MIN_ROUNDS, TOP_K, FinalRecord
from sweeper.kernels import load_kernel
from sweeper.outcome import outcome_lines
from sweeper.report import write_report
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.sweep import Sweep, open_study
from sweeper.winners import UNFINISHED, Winners
from tests.conftest import SMALL_SPACE, sweep_study

TWO_PROBLEMS = SMALL_SPACE.replace("footprint: [4KiB]", "footprint: [4KiB, 8KiB]")


def _sweep(path, root, **kwargs):
    device = open_device("interpret")
    space = load_space(path)
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test")
    return Sweep(space, kernel, device, store, **kwargs), store


def _killed_at_final(monkeypatch, nth):
    """``remeasure`` dies (as a killed process would) when the ``nth`` final starts."""
    real, calls = workers_module.remeasure, []

    def dying(*args, **kwargs):
        calls.append(1)
        if len(calls) == nth:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(workers_module, "remeasure", dying)
    return calls


def test_a_run_killed_between_two_finals_is_finished_by_the_next(write_space, tmp_path,
                                                                 monkeypatch):
    path = write_space(TWO_PROBLEMS)
    sweep, store = _sweep(path, tmp_path / "s")
    _killed_at_final(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        sweep.run()
    trials = store.records()[0]
    first = store.read(FinalRecord)
    assert len(first) == 1                                  # the first problem's, whole
    assert len(Winners.of(store).missing(trials)) == 1
    monkeypatch.undo()

    again, _ = _sweep(path, tmp_path / "s")
    summary = again.run()
    assert summary.measured == 0 and len(summary.finals) == 1
    finals = store.read(FinalRecord)
    assert finals[0] == first[0] and len(finals) == 2      # the first was not measured again
    assert {f.problem.footprint for f in finals} == {4096, 8192}
    assert Winners.of(store).missing(store.records()[0]) == []
    assert all(p.final is not None for p in Winners.of(store).picks(trials).values())
    third, _ = _sweep(path, tmp_path / "s")
    assert third.run().finals == [] and len(store.read(FinalRecord)) == 2   # nothing left to do


def test_a_final_that_later_trials_outdate_no_longer_chooses(small_space, tmp_path,
                                                            monkeypatch, capsys):
    sweep, store = _sweep(small_space, tmp_path / "s", max_trials=2)
    sweep.run()
    (old,) = store.read(FinalRecord)
    assert old.after_trial == max(t.number for t in store.records()[0])
    _killed_at_final(monkeypatch, 1)
    more, _ = _sweep(small_space, tmp_path / "s", max_trials=4)
    with pytest.raises(KeyboardInterrupt):
        more.run()
    monkeypatch.undo()
    trials = store.records()[0]
    picks = Winners.of(store).picks(trials)
    (pick,) = picks.values()
    assert pick.final is None and pick.chosen_by == "sweep median"    # the old final is stale
    _, (entry,) = export_study(store, tmp_path / "tuning.json")
    assert entry["chosen_by"] == "sweep median" and entry["note"] == UNFINISHED
    assert main(["export", str(store.root), "-o", str(tmp_path / "t2.json")]) == 0
    assert f"(sweep median); {UNFINISHED}" in capsys.readouterr().out
    # what a launch gets there says it is the sweep's best for now, as the export did
    monkeypatch.setenv("SWEEPER_TUNING", str(tmp_path / "t2.json"))
    assert main(["tuned", "copy", "--footprint", "4KiB", "--gpu", entry["gpu"]]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        f"(study {entry['study']}); the sweep's best for now: {UNFINISHED}")
    write_report(store, draw=False)
    assert (f"**float32 4KiB cold** ends with the sweep's best for now: {UNFINISHED}."
            in (store.root / "report.md").read_text())

    last, _ = _sweep(small_space, tmp_path / "s", max_trials=4)
    summary = last.run()
    assert summary.measured == 0 and len(summary.finals) == 1
    (pick,) = Winners.of(store).picks(store.records()[0]).values()
    assert pick.final is not None and pick.final.after_trial == max(t.number for t in trials)
    _, (entry,) = export_study(store, tmp_path / "tuning.json")
    assert entry["chosen_by"] == "interleaved final" and "note" not in entry


def test_a_final_recorded_without_after_trial_still_stands(small_space, tmp_path):
    sweep, store = _sweep(small_space, tmp_path / "s")
    sweep.run()
    final = store.read(FinalRecord)[0].to_json()
    final.pop("after_trial")
    winners = Winners.from_records([FinalRecord.from_json(final)])
    assert winners.missing(store.records()[0]) == []


def test_a_final_on_the_interpreter_keeps_its_caps_on_any_measurement(write_space, tmp_path):
    """The interpreter takes at most 1 warm-up and 5 timed runs of anything it measures:
    a final's rounds too (on a GPU each entrant takes 2 and 10), and the record says so,
    as the time budget and `sweeper plan` count it."""
    from sweeper.devices import open_device
    from sweeper.finals import GPU_ROUND, Round, finals_estimate_s

    device = open_device("interpret")
    assert Round.on(device.measure_spec) == Round(warmup=1, samples=5)
    _, summary = sweep_study(write_space(SMALL_SPACE), device, tmp_path / "s")
    (final,) = summary.finals
    assert final.samples_per_round == 5
    assert len(final.winner_row().samples_ms) == 5 * final.rounds
    assert all(len(row.samples_ms) % 5 == 0 for row in final.finalists)
    assert finals_estimate_s(6, 1.0, None, round_=Round(1, 5)) == pytest.approx(
        finals_estimate_s(6, 1.0, None, round_=GPU_ROUND)
        - 7 * 5 * 2 * 6 * 1.0 / 1e3, rel=1e-9)   # 7 entrants x 5 rounds: 6 launches fewer


TWELVE = SMALL_SPACE.replace('grid: [sms, "cdiv(n, BLOCK)"]',
                             'grid: [sms, 2*sms, "cdiv(n, BLOCK)"]').replace(
    "block: [32, 128]", "block: [32, 64]")


def test_a_final_on_the_interpreter_takes_the_top_five_in_three_rounds(write_space, tmp_path,
                                                                       monkeypatch):
    """Under load the interpreter's timings tie every config (five samples a round, whose
    median's interval is their whole range): the twelve of a space all tied, all were
    finalists, and none left nor settled before the fifth round.  A final there takes the
    top five and three rounds (``InterpretDevice.most_finalists``, ``most_final_rounds``),
    as ``sweeper plan`` prices it."""
    import random

    device = open_device("interpret")
    real, noise = device.time, random.Random(3)

    def tied(launch, **how):                  # launched as ever, timed as noise alone
        return [noise.uniform(1.0, 2.0) for _ in real(launch, **how)]

    monkeypatch.setattr(device, "time", tied)
    store, summary = sweep_study(write_space(TWELVE), device, tmp_path / "s")
    assert sum(t.ok for t in store.records()[0]) == 12
    (final,) = summary.finals
    assert (len(final.finalists), final.rounds) == (TOP_K, MIN_ROUNDS)


def test_a_final_the_time_budget_cut_short_stands_until_the_next_run(small_space, tmp_path,
                                                                      monkeypatch, capsys):
    """A final the budget's end stopped before ``MIN_ROUNDS`` is kept and chooses, said so
    wherever its choice is shown, and the next run measures it again."""
    real = workers_module.remeasure

    def at_the_deadline(*args, **kwargs):        # the budget ends as the final starts
        return real(*args, **{**kwargs, "deadline": time.monotonic()})

    monkeypatch.setattr(workers_module, "remeasure", at_the_deadline)
    sweep, store = _sweep(small_space, tmp_path / "s")
    sweep.run()
    monkeypatch.undo()
    (short,) = store.read(FinalRecord)
    assert short.rounds == 1 and short.cut_short
    trials = store.records()[0]
    (pick,) = Winners.of(store).picks(trials).values()
    assert pick.final == short
    assert pick.chosen_by == "interleaved final, cut short by the time budget"
    assert Winners.of(store).missing(trials) == [short.problem]
    _, (entry,) = export_study(store, tmp_path / "tuning.json")
    assert entry["chosen_by"] == pick.chosen_by
    headline = load_kernel(load_space(small_space).kernel).headline
    lines = outcome_lines(trials, Winners.of(store), headline)
    assert any(line.startswith("winner,") and "after 1 interleaved round over" in line and
               "(cut short by the time budget: the same command measures the final again)"
               in line for line in lines), lines

    again, _ = _sweep(small_space, tmp_path / "s")
    summary = again.run()
    assert summary.measured == 0 and len(summary.finals) == 1
    (final,) = summary.finals
    assert not final.cut_short and final.rounds >= MIN_ROUNDS
    assert Winners.of(store).missing(store.records()[0]) == []
    assert Winners.of(store).picks(trials)[short.problem].final == final


def test_the_estimate_of_a_resume_counts_the_finals_the_study_owes(write_space, tmp_path):
    """A run stopped before its finals leaves them to the next, whose estimate prices them
    even where no config is left to measure (it said 'for 0 trials (start-up 2 s, report
    1 s)' and then ran the finals)."""
    from sweeper.engine._costs import _finals_owed
    from sweeper.plan import RunShape, plan_of
    from sweeper.store import key_of

    path = write_space(TWO_PROBLEMS)
    sweep, store = _sweep(path, tmp_path / "s", finals=False)
    sweep.run()
    trials = store.records()[0]
    owed = _finals_owed(store, trials)
    measured = [t for t in trials if t.ok]
    assert sorted(count for count, _ in owed.values()) == [len(measured) // 2] * 2
    assert all(fastest > 0 for _, fastest in owed.values())
    space, device = load_space(path), open_device("interpret")
    done = frozenset(key_of(t.choice) for t in trials)
    plan, _ = plan_of(space, device, RunShape(done=done, finals_owed=owed))
    assert plan.trials == 0 and plan.finals_s > 0
    assert plan_of(space, device, RunShape(done=done))[0].finals_s == 0
    again, _ = _sweep(path, tmp_path / "s")
    again.run()
    assert _finals_owed(store, store.records()[0]) == {}     # nothing owed once they ran


def test_a_final_held_among_fewer_configs_than_the_problems_best_does_not_decide_it(
        small_space, tmp_path, capsys):
    """A run narrowed by ``-p`` after the whole space was measured holds its final among
    its own configs; that final decides that run, not the problem: export still names
    the problem's fastest config, and the next whole run holds the final again."""
    whole, store = _sweep(small_space, tmp_path / "s", finals=False)
    whole.run()
    trials = store.records()[0]
    best = min((t for t in trials if t.ok), key=lambda t: t.stats.median)
    other = "256" if best.choice["BLOCK"] == "1024" else "1024"
    space = load_space(small_space, [f"BLOCK={other}"])
    narrowed = Sweep(space, load_kernel(space.kernel), open_device("interpret"), store)
    assert len(narrowed.run().finals) == 1
    (final,) = store.read(FinalRecord)
    assert best.number not in {r.number for r in final.finalists}
    mine = [t for t in trials if t.choice["BLOCK"] == other]
    assert list(Winners.of(store).current(mine).values()) == [final]   # it decided that run
    (pick,) = Winners.of(store).picks(trials).values()
    assert pick.final is None and pick.trial.number == best.number     # not the problem
    assert len(Winners.of(store).missing(trials)) == 1
    _, (entry,) = export_study(store, tmp_path / "tuning.json")
    assert entry["trial"] == best.number and entry["chosen_by"] == "sweep median"

    again, _ = _sweep(small_space, tmp_path / "s")
    assert len(again.run().finals) == 1
    (pick,) = Winners.of(store).picks(store.records()[0]).values()
    assert pick.final is not None and best.number in {r.number for r in pick.final.finalists}
    assert Winners.of(store).missing(store.records()[0]) == []


def test_a_final_lost_with_its_worker_is_named_by_its_problem_and_left_to_the_next_run(
        write_space, tmp_path):
    """A worker process killed during a final (one GPU): the line names the problem as the
    summary does (it showed ``ProblemKey(dtype='float32', ...)``) and says the next run
    measures that final, which the same command then does."""
    from sweeper.sweep._finals import run_finals
    from sweeper.sweep._summary import SilentReporter
    from sweeper.sweep._workers import FinalsOutcome, Workers

    class Killed:
        slot = "GPU 0 (Triton interpreter (CPU))"

        def submit_finals(self, job):
            pass

        def finals_result(self, on_round=None):
            return FinalsOutcome(None, error="the worker process died during the finals "
                                             "(killed by SIGKILL; no output)")

    path = write_space(TWO_PROBLEMS)
    sweep, store = _sweep(path, tmp_path / "s", finals=False)
    sweep.run()
    trials = store.records()[0]
    missing = Winners.of(store).missing(trials)
    finals, lost = run_finals(trials, missing, Workers([Killed()]), store, 0, None,
                              lambda extras: None, SilentReporter())
    assert finals == [] and lost == [
        f"GPU 0 (Triton interpreter (CPU)), float32 {size} cold: the worker process died "
        "during the finals (killed by SIGKILL; no output); its final is left for the next "
        "run (run the same command to measure it)" for size in ("4KiB", "8KiB")]
    summary = _sweep(path, tmp_path / "s")[0].run()
    assert len(summary.finals) == 2 and not Winners.of(store).missing(trials)
