"""How busy a sweep kept its GPU: each trial's host seconds by what they went to, the
kernel's own time from its samples, and the share of the sweep's wall, said after every
run, kept in study.json's last run and shown in the report."""

from __future__ import annotations

import json

import pytest

from sweeper.busy import PARTS, Busy, busy
from sweeper.cli import main
from sweeper.finals import Finalist, FinalRecord
from sweeper.measure import summarize
from sweeper.store import ProblemKey, StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE

SPENT = ("randomize", "compile", "verify", "warmup", "sample")


def measured(number: int, samples: list[float], batch: int = 1, **seconds: float
             ) -> TrialRecord:
    return TrialRecord(number=number, choice={"block": str(number)}, status=TrialStatus.OK,
                       samples_ms=samples, stats=summarize(samples), batch=batch,
                       seconds=seconds)


def test_the_kernel_time_comes_from_the_samples_and_the_rest_is_named():
    trials = [measured(0, [2.0, 2.0, 2.0], compile=1.0, verify=0.1, randomize=0.05,
                       warmup=0.01, sample=0.02),
              measured(1, [1.0] * 4, batch=10, **{"cool-down": 2.0}, warmup=0.01, sample=0.05),
              TrialRecord(number=2, choice={"block": "2"}, status=TrialStatus.COMPILE_ERROR,
                          seconds={"compile": 0.5})]
    final = FinalRecord(problem=ProblemKey("float32", 4), tied=[], winner=0, finalists=[
        Finalist(number=0, samples_ms=[2.0] * 5, stats=summarize([2.0] * 5))])
    got = busy(trials, [final], wall_s=10.0, finals_wall_s=1.0, gpus=1, warmup=2,
               repeated_s=0.25)
    assert got.timed_s == pytest.approx(0.006 + 0.04)          # 3 x 2 ms; 4 x 1 ms x 10
    assert got.warmup_s == pytest.approx(2 * 0.002 + 2 * 0.001)
    assert got.finals_s == pytest.approx(0.010)
    assert got.parts["compile"] == pytest.approx(1.5)
    assert got.parts["cool-down"] == pytest.approx(2.0)
    assert got.parts["finals overhead"] == pytest.approx(0.99)
    assert got.parts["allocate and baseline"] == pytest.approx(0.25)
    # sample + warmup host time beyond the kernel's: 0.03 - 0.010 and 0.06 - 0.042
    assert got.parts["sampling overhead"] == pytest.approx(0.020 + 0.018)
    assert got.kernel_s + sum(got.parts.values()) == pytest.approx(10.0)
    assert got.share == pytest.approx(got.kernel_s / 10.0)
    assert set(got.parts) <= set(PARTS)
    line = got.line()
    assert line.startswith(f"gpu busy {100 * got.share:.1f}% of 10.0 s (timed launches")
    assert "compile 1.5 s" in line and "cool-down 2.0 s" in line
    # the trials alone: their launches over the 9 s of the sweep the finals did not take
    assert got.trials_share == pytest.approx((got.timed_s + got.warmup_s) / 9.0, abs=1e-4)
    assert f"without the finals' 1.0 s {100 * got.trials_share:.1f}%" in line
    kept = json.loads(json.dumps(got.to_json()))
    assert kept["parts"]["compile"] == 1.5 and kept["trials_share"] == got.trials_share
    assert kept["finals_wall_s"] == 1.0


def test_a_final_s_batched_samples_count_every_launch():
    """Under ``measure.batch`` a final's sample is one launch's time, as a trial's: ten
    launches ran for each, so the finals' kernel time is ten times their sum, not their
    sum (which left nine tenths of it in the finals' overhead)."""
    final = FinalRecord(problem=ProblemKey("float32", 4), tied=[], winner=0, finalists=[
        Finalist(number=0, samples_ms=[2.0] * 5, stats=summarize([2.0] * 5))])
    trials = [measured(0, [2.0] * 5, batch=10, warmup=0.0, sample=0.1)]
    got = busy(trials, [final], wall_s=1.0, finals_wall_s=0.5, gpus=1, warmup=0, batch=10)
    assert got.timed_s == pytest.approx(0.1) and got.finals_s == pytest.approx(0.1)
    assert got.parts["finals overhead"] == pytest.approx(0.4)


def test_the_kept_figures_are_worded_as_the_run_worded_them():
    """study.json keeps the figures with its keys sorted; the report's line read from them
    is the run's own line, word for word: the parts in the run's order, and each number
    rounded once (0.3554 s kept as 0.355 read 0.35 where the run had said 0.36)."""
    ran = Busy(wall_s=1.4071, gpus=1, timed_s=0.3554, warmup_s=0.1062, finals_s=0.4671,
               finals_wall_s=0.5784, label="interpret",
               parts={"compile": 0.2114, "finals overhead": 0.1113,
                      "coordinator and idle": 0.0921})
    kept = json.loads(json.dumps(ran.to_json(), sort_keys=True))
    assert list(kept["parts"]) != list(ran.parts)             # as study.json has them
    assert Busy.from_json(kept).line() == ran.line()
    assert "timed launches 0.36 s" in ran.line()


def test_two_gpus_count_twice_the_wall():
    trials = [measured(0, [1.0] * 10, warmup=0.0, sample=0.01)]
    one = busy(trials, [], wall_s=1.0, finals_wall_s=0.0, gpus=1, warmup=0)
    two = busy(trials, [], wall_s=1.0, finals_wall_s=0.0, gpus=2, warmup=0)
    assert two.share == pytest.approx(one.share / 2) and "x 2 GPUs" in two.line()
    assert "without the finals" not in one.line() and one.trials_share == one.share
    assert two.parts["coordinator and idle"] == pytest.approx(2.0 - 0.01)


def test_a_run_says_keeps_and_reports_how_busy_it_kept_the_device(write_space, tmp_path,
                                                                  capsys):
    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("interpret busy ")]
    store = StudyStore(tmp_path / "tiny-interpret")
    trials = [t for t in store.records()[0] if t.status is TrialStatus.OK]
    assert trials and all(set(SPENT) <= set(t.seconds) for t in trials)
    assert all(v >= 0 for t in trials for v in t.seconds.values())
    kept = store.study_meta().last_run["gpu_busy"]
    assert 0 < kept["share"] < 1 and kept["gpus"] == 1 and kept["parts"]["compile"] > 0
    assert line.startswith(f"interpret busy {100 * kept['share']:.1f}% of")
    assert kept["label"] == "interpret"
    if kept["finals_wall_s"] >= 0.05:      # the trials' own share, said beside the whole's
        # said to a tenth of the unrounded figure (0.1500x kept as 0.15 reads 0.2)
        shown = float(line.split("without the finals' ")[1].split(" s")[0])
        assert abs(shown - kept["finals_wall_s"]) <= 0.05 + 1e-6, line
        # (from the kept figures, each to the microsecond; the share is kept to four
        # digits)
        without = kept["wall_s"] - kept["finals_wall_s"]
        assert kept["trials_share"] == pytest.approx(
            (kept["timed_s"] + kept["warmup_s"]) / without, abs=1e-4)
    report = (tmp_path / "tiny-interpret" / "report.md").read_text()
    # the report words the kept figures as the run's line does (one wording, not two)
    assert f"| busy in the last run | {Busy.from_json(kept).line()} |" in report
    assert Busy.from_json(kept).line() == line                            # as said
    again = Busy.from_json(kept)
    assert (again.share, again.trials_share) == (kept["share"], kept["trials_share"])
    assert json.loads((tmp_path / "tiny-interpret" / "report.json").read_text())[
        "gpu_busy"] == kept


def test_a_replay_launches_nothing_and_says_no_busy_figure(tmp_path, capsys):
    from tests.test_journal import run_replay

    assert run_replay(tmp_path) == 0
    assert " busy " not in capsys.readouterr().out
