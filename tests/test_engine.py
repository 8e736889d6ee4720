"""The coordinator and its workers: one worker per GPU, each config measured once and
named by the GPU that measured it; a worker process that dies or hangs costs its trial
only, never the command."""

from __future__ import annotations

import dataclasses
import json

import optuna
import pytest

from sweeper.devices import open_device
from sweeper.samplers import ExhaustiveSampler
from sweeper.store import GpuSlot, StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE, sweep_study


def _measured(store: StudyStore) -> list[TrialRecord]:
    return [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]


@pytest.mark.parametrize("sampler", ["exhaustive", "auto", "random"])
def test_two_workers_measure_every_config_once_and_records_name_their_gpu(
        write_space, tmp_path, sampler):
    """Two "GPUs" (workers 0 and 1 on the interpreter): the sampler has two trials
    outstanding at once, yet every config is measured exactly once, and the records name
    both GPUs."""
    text = SMALL_SPACE.replace("sampler: exhaustive", f"sampler: {sampler}")
    store, summary = sweep_study(write_space(text), open_device("interpret"),
                                 tmp_path / "s", gpus=[0, 1])
    measured = _measured(store)
    assert len(measured) == len({t.key() for t in measured}) == 6
    assert summary.measured == 6 and summary.stopped_by.startswith("complete")
    name = open_device("interpret").facts().name
    assert {t.gpu for t in measured} == {GpuSlot(0, name), GpuSlot(1, name)}
    assert all(t.ok for t in measured)
    numbers = sorted(t.number for t in store.records()[0])
    assert numbers == list(range(len(numbers)))          # each number given once


def test_a_trial_budget_holds_with_trials_in_flight(write_space, tmp_path):
    store, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                                 tmp_path / "s", gpus=[0, 1], max_trials=3)
    assert summary.measured == 3 and len(_measured(store)) == 3
    assert summary.stopped_by == "budget: 3 trials"


def test_exhaustive_never_proposes_a_pending_config_again():
    choices = [{"a": str(i)} for i in range(3)]
    study = optuna.create_study(sampler=ExhaustiveSampler(choices, seed=None),
                                direction="maximize")
    dist = {"a": optuna.distributions.CategoricalDistribution(["0", "1", "2"])}
    first, second = study.ask(dist), study.ask(dist)      # both pending
    assert first.params != second.params
    assert study.sampler.remaining(study) == 1


def test_records_without_a_gpu_still_load_and_a_gpu_round_trips():
    record = TrialRecord(number=0, choice={"BLOCK": "256"}, status=TrialStatus.INVALID,
                         reason="ruled out", gpu=GpuSlot(1, "NVIDIA H200"))
    data = json.loads(json.dumps(record.to_json()))
    assert data["gpu"] == {"index": 1, "name": "NVIDIA H200"}
    assert TrialRecord.from_json(data).gpu == GpuSlot(1, "NVIDIA H200")
    del data["gpu"]                                    # a journal older than workers
    assert TrialRecord.from_json(data).gpu is None


@pytest.mark.parametrize("gpus, message", [
    ("0,0", "sweeper run: argument --gpus: '0,0': give GPU indices, comma-separated and "
            "each once (0,1), or all (see sweeper run --help)"),
    ("x", "sweeper run: argument --gpus: 'x': give GPU indices, comma-separated and each "
          "once (0,1), or all (see sweeper run --help)"),
    ("all", "sweeper: --gpus all: the interpret device has no GPUs to count; name the "
            "workers by index (--gpus 0,1)"),
])
def test_a_bad_gpus_option_is_one_line_and_nothing_written(write_space, tmp_path, capsys,
                                                           gpus, message):
    from sweeper.cli import main

    status = main(["run", str(write_space(SMALL_SPACE)), "--device", "interpret",
                   "--studies-dir", str(tmp_path / "studies"), "--gpus", gpus])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err == message
    assert not (tmp_path / "studies").exists()


def test_worker_processes_survive_a_crash_and_a_hang_in_one_command(write_space, tmp_path,
                                                                    capsys):
    """Slow (~40 s: each worker process imports torch).  Two worker processes on the
    interpreter; one config ends its worker with os._exit(3), another sleeps past
    measure.timeout.  The command goes on with fresh workers (no re-execution): the
    crash is recorded with its exit status and last output, the hang as timeout, every
    other config measured once, by both workers."""
    from sweeper.cli import main

    text = SMALL_SPACE.replace("kernel: copy",
                               "kernel: tests.kernels_for_tests:DiesOrHangsOnBigBlock")
    path = write_space(text.replace("measure: {warmup: 1, repeat: 3}",
                                    "measure: {warmup: 1, repeat: 3, timeout: 8s}"))
    status = main(["run", str(path), "--device", "interpret", "--gpus", "0,1",
                   "--workers", "process", "--studies-dir", str(tmp_path), "--quiet",
                   "--no-report"])
    out, err = capsys.readouterr()
    assert status == 3, err             # measured, two configs failing by the kernel's fault
    assert "fresh process" not in err and "done: 4 measured, 2 failed" in out
    measured = _measured(StudyStore(tmp_path / "tiny-interpret"))
    assert len(measured) == len({t.key() for t in measured}) == 6
    by_status = {t.status: t for t in measured if not t.ok}
    crashed, hung = by_status[TrialStatus.CRASHED], by_status[TrialStatus.TIMEOUT]
    assert crashed.config.num_warps == 1 and crashed.config.meta["BLOCK"] == 1024
    assert crashed.reason == (
        "the worker process died during this trial (exit status 3; its last output: "
        "dies-or-hangs: exiting on purpose); the sweep went on with a fresh worker")
    assert hung.config.num_warps == 4 and hung.config.meta["BLOCK"] == 1024
    assert hung.reason.startswith("no result after 8 s (measure.timeout)")
    assert "the worker was stopped and the sweep went on with a fresh one" in hung.reason
    assert 8 <= hung.wall_s < 30
    assert sum(t.ok for t in measured) == 4
    assert {t.gpu.index for t in measured} == {0, 1}
    assert all(t.gpu.name == "Triton interpreter (CPU)" for t in measured)


@pytest.mark.parametrize("signal_", ["SIGKILL", "SIGTERM"])
def test_a_worker_killed_from_outside_has_its_config_measured_again_once_before_the_finals(
        signal_, write_space, tmp_path, monkeypatch, capsys):
    """Slow (~30 s: two commands, each worker process importing torch).  A SIGKILL that
    sweeper did not send (the OOM killer, a user's kill -9), or a SIGTERM (a scheduler
    ending a job's processes), is no fault of the kernel's: the trial is recorded crashed
    to be measured again, counted apart from the failed, and a fresh worker measures its
    config again, once, before the sampler's next proposal.  The 4-warp config, killed
    once, then measures, before the finals (which met it, so the next run runs none
    again); the 1-warp one, killed again, is the config's crash (exit 3, then in the next
    run's "failed in earlier runs"), measured no more.  The study reads as one trial a
    config; the journal keeps both kills, in format 3."""
    from sweeper.cli import main
    from sweeper.finals import FinalRecord
    from sweeper.winners import Winners

    monkeypatch.setenv("SWEEPER_TEST_KILLED", str(tmp_path / "killed-once"))
    monkeypatch.setenv("SWEEPER_TEST_KILL_SIGNAL", signal_)
    path = write_space(SMALL_SPACE.replace("kernel: copy",
                                           "kernel: tests.kernels_for_tests:KilledOnBigBlock"))
    store = StudyStore(tmp_path / "tiny-interpret")

    def run() -> tuple[int, str, list[TrialRecord]]:
        status = main(["run", str(path), "--device", "interpret", "--workers", "process",
                       "--studies-dir", str(tmp_path), "--quiet", "--no-report"])
        out = capsys.readouterr().out
        measured = _measured(store)
        assert len(measured) == len({t.key() for t in measured}) == 6
        return status, out, [t for t in measured if not t.ok]

    status, out, failed = run()
    assert status == 3, out
    assert ("done: 5 measured, 1 failed (2 measured again: their worker processes were "
            "killed from outside), ") in out
    assert "stopped: complete: every valid config tried\n" in out
    assert "left for the next run" not in out
    killed = [d for d in store.raw_records() if d.get("retry")]
    assert [d["config"]["meta"]["BLOCK"] for d in killed] == [1024, 1024]
    assert all(d["reason"] == (
        f"a {signal_} that sweeper did not send killed the worker process: not the kernel's "
        "fault, the sweep measures it again (the OOM killer, or a user's or a "
        f"scheduler's kill; killed by {signal_}; no output; killed so again, it is recorded "
        "as crashed); the sweep went on with a fresh worker") for d in killed)
    first = {d["config"]["num_warps"]: d["number"] for d in killed}
    (crashed,) = failed
    assert crashed.config.num_warps == 1 and not crashed.retry
    assert crashed.reason.startswith(
        f"a {signal_} that sweeper did not send killed the worker process again, as in trial "
        f"#{first[1]}: killed twice, so likely by this config")
    again = next(t for t in store.records()[0] if t.ok and t.config.num_warps == 4
                 and t.config.meta["BLOCK"] == 1024 and t.number > first[4])
    (final,) = store.read(FinalRecord)               # after it: it met every config
    assert final.after_trial >= again.number
    assert not Winners.of(store).missing(store.records()[0])

    status, out, failed = run()
    assert status == 3 and "done: 0 measured, 0 failed, " in out
    assert f"failed in earlier runs: 1 crashed (first: #{crashed.number} " in out
    assert failed == [crashed]
    assert store.read(FinalRecord) == [final]       # no final to run again
    lines = (tmp_path / "tiny-interpret" / "trials.jsonl").read_text().splitlines()
    assert sum('"retry":true' in line for line in lines) == 2   # the journal keeps them
    # in format 3, which sweepers older than retry set aside, keeping the trial after
    assert all(('"retry":true' in line) == ('"format":3' in line) for line in lines)


def test_an_interrupted_run_counts_a_config_killed_from_outside_among_those_left(
        write_space, tmp_path, monkeypatch, capsys):
    """Slow (~30 s: two commands, each worker process importing torch).  Ctrl-C after a
    trial whose worker a SIGKILL from outside ended: the configs the run says it left for
    the next run are those the next run measures, the killed ones among them, said
    apart."""
    import re
    import signal

    from sweeper.cli import main
    from sweeper.sweep import SilentReporter
    from tests.test_cli import signal_after_trial

    monkeypatch.setenv("SWEEPER_TEST_KILLED", str(tmp_path / "killed-once"))
    path = write_space(SMALL_SPACE.replace("kernel: copy",
                                           "kernel: tests.kernels_for_tests:KilledOnBigBlock"))
    command = ["run", str(path), "--device", "interpret", "--workers", "process",
               "--studies-dir", str(tmp_path), "--quiet", "--no-report"]
    trial = SilentReporter.trial
    signal_after_trial(monkeypatch, 2, signal.SIGINT)   # Ctrl-C after the first killed one
    assert main(command) == 130
    out = capsys.readouterr().out
    killed = [t for t in StudyStore(tmp_path / "tiny-interpret").records()[0] if t.retry]
    assert killed, out
    said = re.search(r"(\d+) configs \((\d+) of them to measure again: (its worker process "
                     r"was|their worker processes were) killed from outside\) and the "
                     r"finals of 1 problem left for the next run: Ctrl-C stopped the sweep "
                     r"\(run the same command to measure them\)", out)
    assert said is not None, out
    left, again = int(said[1]), int(said[2])
    assert again == len(killed)
    monkeypatch.setattr(SilentReporter, "trial", trial)
    main(command)
    done = re.search(r"done: (\d+) measured, (\d+) failed(?:, (\d+) to measure again)?",
                     capsys.readouterr().out)
    assert done is not None                         # as many as it said, a config killed
    assert sum(int(n or 0) for n in done.groups()) == left      # for the first time among


def test_a_config_killed_from_outside_that_the_run_does_not_hold_is_not_left_to_it(
        write_space, tmp_path, capsys):
    """The study's config whose worker a SIGKILL from outside ended, measured with ``-p
    BLOCK=1024``: a run with ``-p BLOCK=256`` does not measure it, says none is left to
    it, and exits 0; a run with ``-p BLOCK=1024`` measures it again first."""
    from sweeper.cli import main
    from tests.api_fixtures import kill_trial

    path = write_space(SMALL_SPACE)
    command = ["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--quiet", "--no-report"]
    assert main([*command, "-p", "BLOCK=1024"]) == 0
    study = tmp_path / "tiny-interpret"
    killed = max(_measured(StudyStore(study)), key=lambda t: t.number)
    kill_trial(study, killed.number)
    capsys.readouterr()
    assert main([*command, "-p", "BLOCK=256"]) == 0
    out = capsys.readouterr().out
    assert "done: 2 measured, 0 failed, " in out and "left for the next run" not in out
    assert main([*command, "-p", "BLOCK=1024"]) == 0
    out = capsys.readouterr().out
    assert "done: 1 measured, 0 failed (1 measured again: its worker process was killed " \
           "from outside), " in out and "left for the next run" not in out
    (again,) = [t for t in StudyStore(study).records()[0] if t.number > killed.number
                and t.key() == killed.key()]
    assert again.ok


def test_a_trial_budget_measures_a_config_left_to_measure_again_first(tmp_path, capsys):
    """A config an earlier run left to measure again (``retry``: its worker process was
    killed from outside) is measured before the sampler's next proposal: under a trial
    budget with one trial left, that trial is its, so "run the same command to measure
    it" holds, and the same command then finds nothing left.  The exhaustive sampler here
    reaches that config last: asked first, it measured another config in that trial and
    left the killed one again, run after run."""
    from sweeper.cli import main
    from tests.api_fixtures import SPACE, killed_from_outside, mixed_table

    table = mixed_table(tmp_path)
    space = tmp_path / "mixed.yaml"
    space.write_text(SPACE)

    def run(folder, *extra):
        status = main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                       str(folder), "--quiet", "--no-report", *extra])
        return status, capsys.readouterr().out, \
            StudyStore(folder / "mixed-replay").records()[0]

    _, _, whole = run(tmp_path / "whole")            # every config, in the sampler's order
    last = [t for t in whole if t.ok][-1]
    _, _, first = run(tmp_path / "st", "--trials", "2")
    assert last.key() not in {t.key() for t in first}
    store = StudyStore(tmp_path / "st" / "mixed-replay")
    store.append(killed_from_outside(dataclasses.replace(last, number=len(first))))
    store.close()
    status, out, trials = run(tmp_path / "st", "--trials", "3")
    assert status == 0, out
    assert "done: 1 measured, 0 failed (1 measured again: its worker process was killed " \
           "from outside)" in out and "stopped: budget: 3 trials" in out
    assert "left for the next run" not in out
    assert [(t.key(), t.ok) for t in trials if t.number > len(first)] == [(last.key(), True)]
    status, out, trials_after = run(tmp_path / "st", "--trials", "3")
    assert status == 0 and "done: 0 measured, 0 failed, " in out
    assert trials_after == trials


def test_finals_run_before_a_config_left_to_measure_again_say_so(write_space, tmp_path,
                                                                  capsys):
    """A trial budget spent before the config an earlier run left to measure again
    (``retry``) is measured (here lowered to the trials the study holds): the run's
    finals choose without it, and its last line says so, and that the same command would
    measure nothing: the budget that measures it.  That budget measures it first, and the
    final runs again, the config among those it met."""
    from sweeper.cli import main
    from sweeper.finals import FinalRecord
    from tests.api_fixtures import killed_from_outside

    path = write_space(SMALL_SPACE)
    whole, _ = sweep_study(path, open_device("interpret"), tmp_path / "whole", finals=False)
    store, _ = sweep_study(path, open_device("interpret"), tmp_path / "tiny-interpret",
                           finals=False, max_trials=3)
    kept = store.records()[0]
    last = max(_measured(whole), key=lambda t: t.number)
    assert last.ok and last.key() not in {t.key() for t in kept}
    store.append(killed_from_outside(dataclasses.replace(
        last, number=max(t.number for t in kept) + 1)))
    store.close()
    command = ["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--quiet", "--no-report"]
    assert main([*command, "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "done: 0 measured, 0 failed, " in out and "stopped: budget: 3 trials" in out
    assert ("1 config left for the next run to measure again: its worker process was "
            "killed from outside (the trial budget is spent: --trials 4 measures it; this "
            "run's finals of 1 problem ran without it, and run again once the next run "
            "measures it ok)") in out
    (final,) = store.read(FinalRecord)
    assert main([*command, "--trials", "4"]) == 0
    out = capsys.readouterr().out
    assert "done: 1 measured, 0 failed (1 measured again: its worker process was killed " \
           "from outside), " in out and "left for the next run" not in out
    (again,) = [t for t in store.records()[0] if t.key() == last.key()]
    assert again.ok and again.number > final.after_trial
    first, second = store.read(FinalRecord)
    assert first == final and second.after_trial >= again.number


@pytest.mark.parametrize("max_trials, left", [(None, 5), (4, 3)])
def test_a_config_to_measure_again_is_left_for_the_next_run_under_any_sampler_and_budget(
        max_trials, left):
    """Two trials of six valid configs, one to be measured again: a sampler that is not
    exhaustive leaves up to five configs to the next run, and a trial budget of four
    three (the next run's budget counts the killed config's next trial, not the killed
    one)."""
    from sweeper.space import Budget
    from sweeper.sweep._budget import Budgets, StopFlag

    budgets = Budgets(Budget(), StopFlag(), max_trials=max_trials, max_time_s=None,
                      ceilings=None, valid=6, measured=0, t0=0.0)
    for number, retry in ((0, False), (1, True)):
        budgets.counted(TrialRecord(number=number, choice={"BLOCK": str(number)},
                                    status=TrialStatus.CRASHED, reason="died", retry=retry),
                        None)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    assert budgets.left(study) == (left, False)


def test_one_worker_process_measures_the_finals_and_is_not_waited_for(
        write_space, tmp_path, monkeypatch):
    """Slow (~8 s: the worker process imports torch).  With one worker process the finals
    run in it (it holds the kernels compiled and the buffers), recorded as one GPU's
    finals are (no GPU named); the coordinator measures nothing itself, and closing does
    not wait for the process to exit: it ends on its own."""
    from sweeper.sweep import _finals, _process, _workers

    def coordinator_finals(*args, **kwargs):
        raise AssertionError("the coordinator measured the finals itself")

    monkeypatch.setattr(_workers, "final_of", coordinator_finals)
    lingering = []
    monkeypatch.setattr(_process, "linger", lambda proc: lingering.append(proc))
    store, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                                 tmp_path / "s", processes=True)
    assert summary.finals and all(f.gpu is None for f in summary.finals)
    assert [f.problem for f in store.read(_finals.FinalRecord)] == \
        [f.problem for f in summary.finals]
    (proc,) = lingering
    assert proc.wait(30) == 0          # asked to end, it ended on its own


def test_after_a_lost_worker_a_spare_waits_so_the_next_fresh_one_has_its_imports_done(
        write_space, tmp_path, monkeypatch):
    """Slow (~15 s).  One worker process loses two trials to crashes: the first fresh
    worker is started then (and imports), and a spare is started beside it; the second
    fresh worker is that spare, already imported; the sweep ends none left waiting."""
    from sweeper import _processes

    adopted = []
    real_adopt = _processes.adopt
    monkeypatch.setattr(_processes, "adopt", lambda module, env: adopted.append(
        real_adopt(module, env)) or adopted[-1])
    text = SMALL_SPACE.replace("kernel: copy", "kernel: tests.kernels_for_tests:DiesOnBigBlock")
    store, summary = sweep_study(write_space(text), open_device("interpret"), tmp_path / "s",
                                 processes=True)
    measured = _measured(store)
    assert [t.status for t in measured].count(TrialStatus.CRASHED) == 2
    assert sum(t.ok for t in measured) == 4 and summary.measured == 6
    # the first worker, then the first fresh one, started anew; the second one adopted
    assert [a is not None for a in adopted] == [False, False, True]
    assert _processes.waiting() == 0          # the spare after the last loss was ended


def test_a_command_replaced_after_a_hang_counts_the_failures_of_its_earlier_processes(
        write_space, tmp_path, monkeypatch):
    """The last process of a command that a hang re-executed exits 3 for a failure an
    earlier one recorded: it counts the study's kernel faults since the command started
    ($SWEEPER_SINCE), not its own alone, and not those of earlier commands."""
    from sweeper.engine._restart import SINCE
    from sweeper.engine._run import RunResult
    from sweeper.study import now

    store, summary = sweep_study(write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RaisesOnBigBlock")),
        open_device("interpret"), tmp_path / "s")
    failed = [t for t in store.records()[0] if t.status is TrialStatus.CRASHED]
    assert failed
    resumed = dataclasses.replace(summary, resumed=len(summary.trials))   # none of its own
    monkeypatch.delenv(SINCE, raising=False)
    assert RunResult(store, resumed).kernel_faults == 0
    monkeypatch.setenv(SINCE, min(t.started for t in failed))
    assert RunResult(store, resumed).kernel_faults == len(failed)
    monkeypatch.setenv(SINCE, "9" + now())                        # after them all
    assert RunResult(store, resumed).kernel_faults == 0
