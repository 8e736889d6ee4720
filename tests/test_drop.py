"""With several GPUs, a GPU on which no fresh worker starts is dropped and the sweep goes
on with the others; only when no worker is left does the command stop.  In process, on
the interpreter: two "GPUs" whose workers are inline workers that break on purpose."""

from __future__ import annotations

from typing import Any

import pytest

from sweeper.store import StudyStore
from sweeper.study import now
from sweeper.sweep import _loop
from sweeper.sweep._drop import NotStarted
from sweeper.sweep._workers import InlineWorker, Job, failed
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE

WHY = "no answer within 2 s, then stopped: killed by SIGKILL; no output"


def _breaking(broken: set[int]) -> type[InlineWorker]:
    """An inline worker class whose first job on a GPU in ``broken`` ends it (recorded as
    crashed, the worker lost) and on which no fresh worker starts."""

    class Breaking(InlineWorker):
        broke = False

        def submit(self, job: Job) -> None:
            assert self.slot is not None
            if self.slot.index in broken and not self.broke:
                self.job, self.broke = job, True
                self._outcome = failed(job, TrialStatus.CRASHED, "died on purpose", now(),
                                       0.0, self.resolve)
                return
            super().submit(job)

        def restart(self, record: Any) -> None:
            assert self.slot is not None
            i = self.slot.index
            raise NotStarted(f"the worker for GPU {i} did not start ({WHY}) in place of "
                             f"the one trial {record.number} (crashed) ended; every trial "
                             "measured so far is kept in the study", i, WHY)

    return Breaking


def _run(write_space, tmp_path, monkeypatch, broken: set[int], *more: str) -> int:
    from sweeper.cli import main

    monkeypatch.setattr(_loop, "InlineWorker", _breaking(broken))
    return main(["run", str(write_space(SMALL_SPACE)), "--device", "interpret",
                 "--gpus", "0,1", "--studies-dir", str(tmp_path), "--quiet", *more])


def test_a_gpu_without_a_fresh_worker_is_dropped_and_the_sweep_goes_on(
        write_space, tmp_path, monkeypatch, capsys):
    """GPU 1's first trial ends its worker and none starts in its place: GPU 1 is
    dropped with one line (console, last_run, report), GPU 0 measures every other config
    exactly once, and the finals run on GPU 0 alone."""
    status = _run(write_space, tmp_path, monkeypatch, {1}, "--no-report")
    out, err = capsys.readouterr()
    assert status == 3, err             # measured, the trial that ended its worker failed
    store = StudyStore(tmp_path / "tiny-interpret")
    trials = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert len(trials) == len({t.key() for t in trials}) == 6
    crashed = [t for t in trials if not t.ok]
    assert [(t.status, t.gpu.index) for t in crashed] == [(TrialStatus.CRASHED, 1)]
    assert {t.gpu.index for t in trials if t.ok} == {0}
    line = (f"GPU 1 dropped after trial {crashed[0].number} (crashed): a fresh worker did "
            f"not start ({WHY}); the sweep went on with GPU 0; GPU 1 is not retried in "
            "this run")
    assert line in out.splitlines()
    assert "done: 5 measured, 1 failed" in out
    last_run = store.meta()["last_run"]
    assert last_run["dropped"] == [{"gpu": 1, "after_trial": crashed[0].number,
                                    "status": "crashed", "why": WHY, "left": [0],
                                    "line": line}]
    from sweeper.winners import Winners

    finals = Winners.of(store).finals
    assert finals and {f.gpu.index for f in finals.values()} == {0}
    from sweeper.report._markdown import markdown
    from sweeper.report._write import study_tables

    assert f"> **Last run:** {line}.\n" in markdown(study_tables(store), [])


def test_when_no_worker_is_left_the_command_stops_with_one_line(
        write_space, tmp_path, monkeypatch, capsys):
    """Both GPUs break: the first is dropped, the second ends the command with the one
    line naming both; the two crashed trials are in the journal."""
    status = _run(write_space, tmp_path, monkeypatch, {0, 1}, "--no-report")
    err = capsys.readouterr().err.strip()
    assert status == 2
    trials = StudyStore(tmp_path / "tiny-interpret").records()[0]
    crashed = sorted((t for t in trials if t.status is TrialStatus.CRASHED),
                     key=lambda t: t.number)
    assert len(crashed) == 2
    first, last = crashed
    assert err == (
        f"sweeper: the worker for GPU {last.gpu.index} did not start ({WHY}) in place of "
        f"the one trial {last.number} (crashed) ended; every trial measured so far is "
        f"kept in the study; GPU {first.gpu.index} was dropped after trial {first.number}")


@pytest.mark.parametrize("left, words", [((0,), "GPU 0"), ((0, 2), "GPUs 0, 2")])
def test_the_drop_line_names_the_gpus_left(left, words):
    from sweeper.sweep._drop import Dropped

    line = Dropped(1, 17, "timeout", "it died: exit status 1; no output", left).line()
    assert line == ("GPU 1 dropped after trial 17 (timeout): a fresh worker did not start "
                    f"(it died: exit status 1; no output); the sweep went on with {words}; "
                    "GPU 1 is not retried in this run")
