"""Where a sweep's time goes (sweeper.sweep._timing): each worker's start, busy, idle and
tail time add up to the loop's span; the coordinator's phases are timed per trial; with
worker processes the journal is written once the freed worker has its next job."""

from __future__ import annotations

import pytest

from sweeper.devices import open_device
from sweeper.sweep import SilentReporter
from sweeper.sweep._outbox import Outbox
from sweeper.sweep._timing import Stamps, Timeline
from tests.conftest import SMALL_SPACE, sweep_study


def _two_lanes() -> Timeline:
    """Worker 0 launched at 1 s, ready at 3 s, jobs [4, 6] and [6.5, 9]; worker 1
    launched at 1 s, ready at 5 s, one job [5, 7] that died (no stamps, seen at 7.5 s)."""
    timeline = Timeline(t0=0.0)
    timeline.ready(0, 1.0, {"imports": 2.0, "device": 3.0})
    timeline.ready(1, 1.0, {"imports": 4.5, "device": 5.0})
    timeline.job(0, Stamps(4.0, 6.0, {"baseline": 0.5, "buffers": 0.25}))
    timeline.job(0, Stamps(6.5, 9.0, {"buffers": 0.25}))
    timeline.phases.update(ask=0.03, journal=0.3)
    return timeline


def test_the_breakdown_adds_up_for_each_worker(monkeypatch):
    timeline = _two_lanes()
    monkeypatch.setattr("sweeper.sweep._timing.time.perf_counter", lambda: 7.5)
    timeline.job(1, None)                    # busy from ready (5 s) to when it was seen
    timeline.ready(1, 8.0, {"device": 9.5})  # its fresh worker: no second start
    b = timeline.breakdown(end=10.0)
    assert (b.setup_s, b.span_s, b.trials, b.tail_s) == (4.0, 10.0, 3, 2.5)
    w0, w1 = b.workers
    assert (w0.launched_s, w0.start_s, w0.jobs, w0.busy_s, w0.idle_s, w0.tail_s) == \
        (1.0, 2.0, 2, 4.5, 1.5, 1.0)
    assert w0.steps == {"imports": 1.0, "device": 1.0}
    assert w0.repeated == {"baseline": 0.5, "buffers": 0.5}
    assert (w1.start_s, w1.jobs, w1.busy_s, w1.idle_s, w1.tail_s) == (4.0, 1, 2.5, 0.0, 2.5)
    for w in b.workers:
        assert w.launched_s + w.start_s + w.busy_s + w.idle_s + w.tail_s == b.span_s
    assert b.per_trial_ms("ask") == pytest.approx(10.0)
    assert b.per_trial_ms("tell") == 0.0
    assert b.lines() == [
        "loop 10.00 s: set-up 4.00 s, 3 trials, tail 2.50 s",
        "coordinator per trial (ms): ask 10.00, journal 100.00",
        "worker 0: launched at 1.00 s, ready after 2.00 s (imports 1.00, device 1.00); "
        "2 jobs, busy 4.50 s, idle 1.50 s, tail 1.00 s; repeated per problem: "
        "baseline 0.50, buffers 0.50",
        "worker 1: launched at 1.00 s, ready after 4.00 s (imports 3.50, device 0.50); "
        "1 jobs, busy 2.50 s, idle 0.00 s, tail 2.50 s"]


def test_a_timeline_with_no_jobs_has_no_tail():
    timeline = Timeline(t0=2.0)
    timeline.ready(0, 2.0, {})
    b = timeline.breakdown(end=3.0)
    assert (b.setup_s, b.span_s, b.tail_s, b.trials) == (1.0, 1.0, 0.0, 0)
    assert b.workers[0].tail_s == 1.0 and b.workers[0].start_s == 0.0
    assert b.lines()[1] == "coordinator per trial (ms): nothing timed"


def test_two_workers_on_the_interpreter_account_for_the_whole_loop(write_space, tmp_path):
    """Two workers in this process: their jobs are the trials measured, each worker's
    figures add up to the loop's span, the coordinator's phases are timed, and the
    per-problem baseline and buffers are counted where they were measured."""
    _, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                             tmp_path / "s", gpus=[0, 1])
    b = summary.timing
    assert b is not None and b.trials == summary.measured == 6
    assert [w.index for w in b.workers] == [0, 1] and sum(w.jobs for w in b.workers) == 6
    assert 0 < b.span_s <= summary.wall_s and 0 <= b.setup_s < b.span_s
    for w in b.workers:
        assert w.launched_s + w.start_s + w.busy_s + w.idle_s + w.tail_s == \
            pytest.approx(b.span_s, abs=1e-6)
        assert w.busy_s > 0 and w.steps == {} and w.start_s == 0.0
    assert sum(w.busy_s for w in b.workers) <= b.span_s     # one process: one at a time
    assert {"ask", "expand", "tell", "journal", "reporter", "wait"} <= set(b.phases)
    assert sum(w.repeated.get("baseline", 0.0) for w in b.workers) > 0
    assert 0 <= b.tail_s <= b.span_s


class _Store:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def append(self, record: object) -> None:
        self.log.append(f"journal {record}")


class _Reporter(SilentReporter):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def trial(self, record: object, best: object) -> None:
        self.log.append(f"report {record} best {best}")


@pytest.mark.parametrize("defer", [False, True])
def test_the_outbox_writes_in_order_at_once_or_when_flushed(defer):
    log: list[str] = []
    outbox = Outbox(_Store(log), _Reporter(log), Timeline(0.0), defer=defer)  # type: ignore[arg-type]
    outbox.journal("baseline")
    outbox.journal("trial-1")
    outbox.report("trial-1", "trial-1")  # type: ignore[arg-type]
    outbox.kept()
    written = ["journal baseline", "journal trial-1", "report trial-1 best trial-1"]
    assert log == ([] if defer else written)
    outbox.flush()
    assert log == written
    outbox.journal("trial-2")
    outbox.kept(at_once=True)             # a lost worker: kept before a fresh one starts
    assert log == [*written, "journal trial-2"]
    assert set(outbox.timeline.phases) == {"journal", "reporter"}


def test_worker_processes_start_while_the_coordinator_sets_up(write_space, tmp_path):
    """Slow (~15 s: each worker process imports torch).  Two worker processes on the
    interpreter are launched before the sampler's study is rebuilt: their launch comes
    before the first job, their start-up steps are named, and every figure adds up."""
    store, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                                 tmp_path / "s", gpus=[0, 1], processes=True)
    b = summary.timing
    assert b is not None and summary.measured == b.trials == 6
    assert len({t.key() for t in store.records()[0] if t.gpu}) == 6
    for w in b.workers:
        assert w.launched_s < b.setup_s and w.launched_s < 1.0
        assert list(w.steps) == ["imports", "setup", "device", "kernel", "bounds", "bench"]
        assert w.start_s == pytest.approx(sum(w.steps.values()))
        assert w.launched_s + w.start_s + w.busy_s + w.idle_s + w.tail_s == \
            pytest.approx(b.span_s, abs=1e-6)
    assert sum(w.jobs for w in b.workers) == 6


def test_workers_are_all_asked_to_end_before_any_is_waited_for():
    """Closing the workers after the loop: each exits side by side, not one after the
    other (a worker process takes a while to let go of its GPU)."""
    from sweeper.sweep._workers import InlineWorker, Workers

    log: list[str] = []

    class _Ending(InlineWorker):
        def __init__(self, name: str) -> None:
            self.name = name

        def finish(self) -> None:
            log.append(f"finish {self.name}")

        def close(self, wait: bool = True) -> None:
            log.append(f"close {self.name}{'' if wait else ' (not waited for)'}")

    Workers([_Ending("0"), _Ending("1")]).close()
    assert log == ["finish 0", "finish 1", "close 0", "close 1"]
    log.clear()
    Workers([_Ending("0")], wait_on_close=False).close()
    assert log == ["finish 0", "close 0 (not waited for)"]


def _parts(line: str, step: str) -> tuple[float, list[float]]:
    """A step of the ``time:`` line: its seconds and those of its parts in parentheses."""
    import re

    found = re.search(rf"(?:^|, ){step} ([\d.]+) s \(([^)]*)\)", line.split(": ", 2)[2])
    assert found, line
    inner = found.group(2).split(";")[0]          # the sweep's gpu busy share follows a ;
    return float(found.group(1)), [float(p.rsplit(" ", 1)[1]) for p in inner.split(", ")]


def test_the_time_line_s_parts_add_up_to_their_step(write_space, tmp_path, capsys,
                                                    monkeypatch):
    """Each step's parts add up to the step, to their rounding: the time the sweep takes
    before its own clock starts (building it: 0.3 s of the README's H100 example) is its
    start's, and the report's outside what it clocks (importing pandas: 0.5-0.7 s where
    the sweep measured in this process) its imports'."""
    import time

    from sweeper.cli import main
    from sweeper.engine import _report
    from sweeper.sweep import Sweep

    built, reported = Sweep.__init__, _report.report_study

    def slow_build(self, *args, **kwargs):
        time.sleep(0.4)
        built(self, *args, **kwargs)

    def slow_report(*args, **kwargs):
        time.sleep(0.4)
        return reported(*args, **kwargs)

    monkeypatch.setattr(Sweep, "__init__", slow_build)
    monkeypatch.setattr(_report, "report_study", slow_report)
    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--gpu-check", "off",
                 "--studies-dir", str(tmp_path), "--quiet"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time: "))
    for step in ("sweep", "report"):
        seconds, parts = _parts(line, step)
        assert seconds >= 0.4
        assert sum(parts) == pytest.approx(seconds, abs=0.05 * (len(parts) + 1)), line
