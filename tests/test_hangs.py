"""The coordinator never waits on a worker process without bound: a worker stuck in C
with SIGTERM ignored, its children, a worker that stops reading its socket, a fresh
worker that never says it is ready."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from sweeper._processes import GRACE_S, ended, send_within, stop
from sweeper.store import StudyStore, TrialRecord
from sweeper.sweep import _process
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE

STUCK = SMALL_SPACE.replace("kernel: copy", "kernel: tests.kernels_for_tests:StuckInC") \
    .replace("measure: {warmup: 1, repeat: 3}", "measure: {warmup: 1, repeat: 3, timeout: 3s}")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _left_behind(pids_file: Path) -> list[int]:
    """The pids noted in ``pids_file`` still running after a short while."""
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids, "the kernel noted no pid"
    deadline = time.monotonic() + 3.0
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _run(path: Path, studies: Path, *more: str) -> int:
    from sweeper.cli import main

    return main(["run", str(path), "--device", "interpret", "--workers", "process",
                 "--studies-dir", str(studies), "--quiet", "--no-report", *more])


def _one_hung_among_six(status: int, studies: Path, capsys
                        ) -> tuple[str, list[TrialRecord], TrialRecord]:
    """Checks a run that ended normally with every config measured exactly once and one
    of them timed out; returns its output, the measured trials and the hung one."""
    out, err = capsys.readouterr()
    assert status == 3, err             # measured, one config failing by the kernel's fault
    assert "done: 5 measured, 1 failed" in out
    measured = [t for t in StudyStore(studies / "tiny-interpret").records()[0]
                if t.status is not TrialStatus.INVALID]
    assert len(measured) == len({t.key() for t in measured}) == 6
    hung = [t for t in measured if not t.ok]
    assert [t.status for t in hung] == [TrialStatus.TIMEOUT]
    return out, measured, hung[0]


def test_a_worker_stuck_in_c_ignoring_sigterm_is_killed_with_its_children(
        write_space, tmp_path, monkeypatch, capsys):
    """Slow (~20 s: two worker processes import torch).  The hung trial is recorded as
    timeout within measure.timeout + the grace + a little, its worker and the child it
    started are gone, and a fresh worker measures the rest."""
    pids = tmp_path / "pids"
    monkeypatch.setenv("SWEEPER_TEST_PIDS", str(pids))
    _, _, hung = _one_hung_among_six(_run(write_space(STUCK), tmp_path), tmp_path, capsys)
    assert hung.reason == (
        "no result after 3 s (measure.timeout): a hung kernel, or a compile longer than "
        "that; the worker was stopped and the sweep went on with a fresh one")
    assert 3 <= hung.wall_s < 3 + GRACE_S + 3
    assert _left_behind(pids) == []


def test_a_fresh_worker_that_never_starts_stops_the_sweep_with_one_line(
        write_space, tmp_path, monkeypatch, capsys):
    """Slow (~15 s).  After the hang, the fresh worker blocks in C while it loads the
    kernel: after RESTART_S the sweep stops with one line (exit 2), the hung trial is in
    the journal, and neither process is left running."""
    pids, marker = tmp_path / "pids", tmp_path / "stuck-start"
    monkeypatch.setenv("SWEEPER_TEST_PIDS", str(pids))
    monkeypatch.setenv("SWEEPER_TEST_STUCK_START", str(marker))
    monkeypatch.setattr(_process, "RESTART_S", 20.0)
    t0 = time.monotonic()
    status = _run(write_space(STUCK), tmp_path)
    err = capsys.readouterr().err
    assert status == 2
    assert time.monotonic() - t0 < 60
    trials = StudyStore(tmp_path / "tiny-interpret").records()[0]
    hung = [t for t in trials if t.status is TrialStatus.TIMEOUT]
    assert len(hung) == 1
    assert err.strip() == (
        "sweeper: the worker for GPU 0 did not start (no answer within 20 s, then "
        "stopped: killed by SIGKILL; no output) in place of the one trial "
        f"{hung[0].number} (timeout) ended; every trial measured so far is kept in the "
        "study")
    assert len(pids.read_text().splitlines()) == 2    # the hung worker, then the fresh one
    assert _left_behind(pids) == []


def test_how_a_process_ended_is_told_without_reaping_it():
    """:func:`ended` tells a process killed by a SIGKILL before sweeper signalled it (the
    OOM killer, a user's kill -9) from one that exited and one still running, and leaves
    each to :func:`stop`, which ends the one running with its SIGTERM."""
    killed = subprocess.Popen(["sleep", "60"], start_new_session=True)
    os.kill(killed.pid, signal.SIGKILL)
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"],
                              start_new_session=True)
    running = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert (ended(killed, 10), ended(exited, 30), ended(running, 0.1)) == \
        (-signal.SIGKILL, 3, None)
    assert killed.returncode is exited.returncode is None           # not reaped
    assert all(stop(proc) for proc in (killed, exited, running))
    assert (killed.returncode, exited.returncode, running.returncode) == \
        (-signal.SIGKILL, 3, -signal.SIGTERM)


def test_a_send_to_a_peer_that_stopped_reading_gives_up_at_its_deadline():
    """The peer reads nothing: 8 MiB do not fit in the socket's buffer, and the send
    returns False after its timeout instead of blocking; what fits arrives whole, framed
    as Connection.recv reads it; a peer that is gone is an OSError."""
    mine, theirs = socket.socketpair()
    sender, receiver = Connection(os.dup(mine.fileno())), Connection(os.dup(theirs.fileno()))
    mine.close()
    theirs.close()
    big = b"x" * (100 * 1024)
    assert send_within(sender, {"job": 1, "big": big}, 1.0)
    assert receiver.recv() == {"job": 1, "big": big}
    t0 = time.monotonic()
    assert send_within(sender, b"y" * (8 << 20), 0.3) is False
    assert 0.3 <= time.monotonic() - t0 < 1.5
    receiver.close()
    with pytest.raises(OSError):
        send_within(sender, b"z" * (8 << 20), 1.0)
    sender.close()


def test_with_two_gpus_the_one_without_a_fresh_worker_is_dropped(
        write_space, tmp_path, monkeypatch, capsys):
    """Slow (~15 s).  Two worker processes ("GPUs" 0 and 1); the hang ends one, and the
    fresh worker in its place never says it is ready: its GPU is dropped with one line,
    the other measures every other config exactly once, the command ends normally, and no
    process is left running."""
    import re

    pids, marker = tmp_path / "pids", tmp_path / "stuck-start"
    monkeypatch.setenv("SWEEPER_TEST_PIDS", str(pids))
    monkeypatch.setenv("SWEEPER_TEST_STUCK_START", str(marker))
    monkeypatch.setattr(_process, "RESTART_S", 2.0)
    out, measured, hung = _one_hung_among_six(
        _run(write_space(STUCK), tmp_path, "--gpus", "0,1"), tmp_path, capsys)
    gone, left = hung.gpu.index, 1 - hung.gpu.index
    assert {t.gpu.index for t in measured if t.ok} == {left}
    lines = [line for line in out.splitlines() if "dropped" in line]
    assert len(lines) == 1
    assert re.fullmatch(
        rf"GPU {gone} dropped after trial {hung.number} \(timeout\): a fresh worker did "
        r"not start \(no answer within 2 s, then stopped: killed by SIG(TERM|KILL); "
        rf"(no output|its last output: .*)\); the sweep went on with GPU {left}; "
        rf"GPU {gone} is not retried in this run", lines[0]), lines[0]
    meta = StudyStore(tmp_path / "tiny-interpret").meta()["last_run"]
    assert [d["gpu"] for d in meta["dropped"]] == [gone]
    assert _left_behind(pids) == []
