"""The journal's contract: what a study promises (sweeper/store/_journal.py's docstring).

- Reading: any line that is not a record is set aside with a warning naming its line and
  why; never a traceback, and the study stays usable.
- Repair: bad lines go to trials.rejected.jsonl, then a repaired copy is renamed over the
  journal; a SIGKILL at any step loses nothing.
- Durability: every record is fsynced before append returns; folders fsynced on creation.
- Exactly once: a sweep killed at any record and resumed measures every config once.
- Every other file is written whole (temp + rename); a full disk leaves files as they were
  and the journal consistent, with one line and exit 1.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import signal
import time
import warnings
from pathlib import Path

import pytest

from sweeper import ceilings, fsio
from sweeper.cli import main
from sweeper.errors import StudyError, StudyWarning, SweeperError, WriteError
from sweeper.finals import Finalist, FinalRecord
from sweeper.measure import Duty, summarize
from sweeper.space import Config, Problem, load_space
from sweeper.store import (
    FORMAT,
    JOURNAL,
    REJECTED,
    BaselineRecord,
    DutyRecord,
    ProblemKey,
    StudyStore,
    TrialRecord,
)
from sweeper.trial import TrialStatus
from tests.conftest import priors_from_studies

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
GRIDS = ["sms", "2*sms", "4*sms", "8*sms"]
META = {"format": FORMAT, "study": "s", "kernel": "copy", "headline": "gbps",
        "command": "sweeper run x.yaml",
        "axes": {"grid": GRIDS, "block": ["32", "64", "128", "256"], "BLOCK": ["1024", "2048"]},
        "meta_axes": ["BLOCK"], "environment": {"gpu": "Fake GPU", "sms": 132},
        "fingerprint": {"device": "cuda"}}


def trial(number: int, block: int | None = None, status: TrialStatus = TrialStatus.OK
          ) -> TrialRecord:
    """Trial ``number``, ok; by default a config of its own among 16 (a study records each
    once)."""
    median = 1.0 + number / 10
    block = 32 << number % 4 if block is None else block
    return TrialRecord(
        number=number, status=status,
        choice={"grid": GRIDS[number // 4 % 4], "block": str(block), "BLOCK": "1024"},
        config=Config(Problem("float32", 1 << 20), grid=132, block=block, meta={"BLOCK": 1024}),
        samples_ms=[median] * 3, gbps=2.0 / median,
        stats=summarize([median] * 3))


def final() -> FinalRecord:
    return FinalRecord(problem=ProblemKey("float32", 1 << 20),
                       finalists=[Finalist(number=0, stats=summarize([0.9, 1.0, 1.1]))],
                       tied=[0], winner=0)


def make_study(root: Path, trials: int = 4) -> StudyStore:
    """A study of ``trials`` ok trials, a baseline, a final and a duty record, closed."""
    store = StudyStore(root)
    store.create({**META, "study": root.name})
    for n in range(trials):
        store.append(trial(n, block=32 << n % 4))
    store.append(BaselineRecord("torch copy_", "float32", 1 << 20, [1.0], summarize([1.0]),
                                2.0))
    store.append(final())
    store.append(DutyRecord(trial=trials, reason="capped", note="power-bound",
                            duty=Duty("cool", 1.0)))
    store.close()
    return store


def lines_of(store: StudyStore) -> list[bytes]:
    return store.journal_path.read_bytes().splitlines()


def read_quietly(store: StudyStore) -> tuple[list[TrialRecord], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trials = store.records()[0]
    return trials, [str(w.message) for w in caught if w.category is StudyWarning]


# -- reading ----------------------------------------------------------------------------------
BAD_LINES = [
    (b"garbage", r"not JSON \(Expecting value, column 1\)"),
    (b"[1,2]", r"a JSON array, not a record \(an object with a kind\)"),
    (b"{}", r"no kind; a record's kind is one of baseline, drift, duty, final, trial"),
    (b"null", r"a JSON null, not a record"),
    (b'{"kind":"wat"}', r"unknown kind 'wat'; a record's kind is one of baseline, drift"),
    (b'{"kind":"trial","number":9,"choice":{},"status":"weird"}',
     r"trial record: status 'weird' is not one of ok, invalid, compile_error, "),
    (b'{"kind":"trial","number":9}', r"trial record: no status, choice"),
    (b'{"kind":"trial","number":"9","choice":{},"status":"ok"}',
     r"trial record: number is '9', not int"),
    (b'{"kind":"trial","number":9,"choice":{},"status":"crashed","samples_ms":"abc"}',
     r"trial record: samples_ms is 'abc', not list\[float\]"),
    (b'{"kind":"trial","number":9,"choice":{},"status":"ok"}',
     r"trial record: an ok trial without a config"),
    (b'{"kind":"trial","number":9,"choice":{},"status":"crashed","config":{"grid":1}}',
     r"trial record: config has no block, num_warps, meta, dtype, footprint"),
    (b'{"kind":"baseline","name":"x","dtype":"float32","footprint":1,"samples_ms":[],'
     b'"stats":{},"gbps":1}', r"baseline record: its stats has no median above 0"),
    (b'{"kind":"final","problem":{"dtype":"float32","footprint":1},"finalists":[{"number":77,'
     b'"stats":{"median":1,"ci_lo":1,"ci_hi":1,"cv":0}}],"tied":[77],"winner":77}',
     r"final record: trial #77 is not recorded before it"),
    (b'{"kind":"final","problem":{"dtype":"float32","footprint":1},"finalists":[],'
     b'"tied":[],"winner":0}', r"final record: the winner #0 is not among its finalists"),
    (b'{"kind":"final","problem":{"dtype":"float32","footprint":1},"finalists":[{"number":0,'
     b'"stats":{"median":1,"ci_lo":1,"ci_hi":1,"cv":0}}],"tied":[0],"winner":0,'
     b'"baseline":{"name":"torch","stats":{"median":1}}}',
     r"final record: its baseline's stats has no ci_lo, ci_hi, cv number"),
    (b'{"kind":"final","problem":{"dtype":"float32","footprint":1},"finalists":[{"number":0,'
     b'"stats":{"median":1,"ci_lo":1,"ci_hi":1,"cv":0}}],"tied":[0],"winner":0,'
     b'"confirmed":{"duty":"d","rounds":3,"stats":{"median":0,"ci_lo":1,"ci_hi":1,"cv":0}}}',
     r"final record: confirmed: stats: ci_lo"),
    (b'{"kind":"final","problem":{"dtype":"float32","footprint":1},"finalists":[{"number":0,'
     b'"stats":{"median":1,"ci_lo":1,"ci_hi":1,"cv":0}}],"tied":[0],"winner":0,'
     b'"confirmed":{"duty":"d","rounds":3,"stats":{"median":1,"ci_lo":1,"ci_hi":1,"cv":0},'
     b'"baseline":{"name":"torch","samples_ms":[-1],"stats":{"median":1,"ci_lo":1,'
     b'"ci_hi":1,"cv":0}}}}',
     r"final record: its confirmation's baseline's samples_ms\[0\] -1(\.0)? is not a time"),
    (b'{"kind":"duty","trial":3,"reason":"capped","note":"n","duty":{"kind":"cool"}}',
     r"duty record: duty: no seconds"),
    ((b'{"kind":"trial","number":9,"choice":{},"status":"crashed","clocks":{"polls":1,'
      b'"reasons":[]}}'),
     r"trial record: clocks: reasons is \[\], not dict\[str, float\]"),
    (json.dumps(trial(1).to_json()).encode(),
     r"trial #1 again \(first on line 2\); the first is kept"),
    (b"\xff\xfe{}", r"not UTF-8 text \(byte 1\)"),
    (b"[" * 100_000, r"not JSON sweeper can read \(nested too deeply\)"),
    (b'{"kind":"trial","number":' + b"9" * 5000 + b"}", r"not JSON sweeper can read \("),
]


@pytest.mark.parametrize("line, reason", BAD_LINES)
def test_a_bad_line_is_set_aside_with_its_line_and_reason(tmp_path, line, reason):
    store = make_study(tmp_path / "s")
    good = lines_of(store)
    store.journal_path.write_bytes(b"\n".join([*good[:3], line, *good[3:]]) + b"\n")
    fresh = StudyStore(tmp_path / "s")
    trials, said = read_quietly(fresh)
    assert len(trials) == 4 and len(fresh.records()[1]) == 1
    assert len(fresh.read(FinalRecord)) == 1 and len(fresh.read(DutyRecord)) == 1
    assert len(said) == 1 and re.fullmatch(
        rf"{re.escape(str(fresh.journal_path))}:4: {reason}.*; set aside \(the study goes on "
        r"without it; the next run moves it to trials.rejected.jsonl\)", said[0]), said
    assert [b.number for b in fresh.bad_lines()] == [4]


def test_the_same_store_warns_once_per_bad_line_and_reading_changes_nothing(tmp_path):
    store = make_study(tmp_path / "s")
    with open(store.journal_path, "ab") as f:
        f.write(b"garbage\n[1,2]\n")
    before = store.journal_path.read_bytes()
    fresh = StudyStore(tmp_path / "s")
    assert len(read_quietly(fresh)[1]) == 2
    assert read_quietly(fresh)[1] == [] and fresh.read(FinalRecord)       # already told
    assert len(read_quietly(StudyStore(tmp_path / "s"))[1]) == 2      # a new reader is told
    assert store.journal_path.read_bytes() == before
    assert not (tmp_path / "s" / REJECTED).exists()


def test_more_than_five_bad_lines_are_listed_then_counted(tmp_path):
    store = make_study(tmp_path / "s")
    with open(store.journal_path, "ab") as f:
        f.write(b"x\n" * 8)
    said = read_quietly(StudyStore(tmp_path / "s"))[1]
    assert len(said) == 6 and ":8: not JSON" in said[0]
    assert said[5].endswith(f"{JOURNAL}: 3 more bad lines (lines 13-15), each set aside (the "
                            "study goes on without it; the next run moves it to "
                            "trials.rejected.jsonl)")


def test_a_whole_last_record_without_its_newline_is_kept_and_completed(tmp_path):
    store = make_study(tmp_path / "s")
    store.journal_path.write_bytes(store.journal_path.read_bytes().rstrip(b"\n"))
    trials, said = read_quietly(StudyStore(tmp_path / "s"))
    assert said == [] and len(trials) == 4
    again = StudyStore(tmp_path / "s")
    again.append(trial(4))                  # the newline first, then the record
    again.close()
    assert [json.loads(x)["kind"] for x in lines_of(again)][-3:] == ["final", "duty", "trial"]


def test_garbage_appended_never_blocks_run_report_or_export(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert run_replay(tmp_path, blocks="1024") == 0
    study = tmp_path / "copy-fp32-replay"
    lines = len(StudyStore(study).journal_path.read_bytes().splitlines())
    with open(study / JOURNAL, "ab") as f:
        f.write(b"garbage\n")
    capsys.readouterr()
    warning = (f"sweeper: warning: {study}/{JOURNAL}:{lines + 1}: not JSON (Expecting value, "
               "column 1); ")
    for argv in (["report", str(study)], ["export", str(study), "-o", str(tmp_path / "t")]):
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert err == warning + ("set aside (the study goes on without it; the next run moves "
                                 "it to trials.rejected.jsonl)\n")
    assert run_replay(tmp_path, blocks="1024") == 0
    assert capsys.readouterr().err == warning + "moved to trials.rejected.jsonl\n"
    assert run_replay(tmp_path, blocks="1024") == 0 and main(["report", str(study)]) == 0
    assert capsys.readouterr().err == ""


# -- repair -----------------------------------------------------------------------------------
def test_a_run_moves_bad_lines_aside_once_and_keeps_every_record(tmp_path):
    store = make_study(tmp_path / "s")
    good = lines_of(store)
    torn = good[1][:30]
    store.journal_path.write_bytes(b"\n".join([good[0], b"garbage", b"\xff", *good[1:]]) +
                                   b"\n" + torn)
    mode = 0o640
    os.chmod(store.journal_path, mode)
    run = StudyStore(tmp_path / "s")
    with pytest.warns(StudyWarning) as caught:
        run.open_journal()
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "not JSON (Expecting value, column 1); moved to trials.rejected.jsonl",
        "not UTF-8 text (byte 1); moved to trials.rejected.jsonl",
        "incomplete last line (no newline at its end): a write cut short by a crash or a full "
        "disk; moved to trials.rejected.jsonl"]
    assert str(caught[0].message).startswith(f"{run.journal_path}:2: ")
    assert lines_of(run) == good and run.journal_path.read_bytes().endswith(b"\n")
    assert os.stat(run.journal_path).st_mode & 0o777 == mode
    rejected = [json.loads(x) for x in (tmp_path / "s" / REJECTED).read_text().splitlines()]
    assert [(r["line"], r["text"].encode("utf-8", "surrogateescape")) for r in rejected] == [
        (2, b"garbage"), (3, b"\xff"), (len(good) + 3, torn)]
    run.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # repaired: nothing more to say
        StudyStore(tmp_path / "s").open_journal()
        assert len(StudyStore(tmp_path / "s").records()[0]) == 4


def killed(point: str, action, timeout: float = 120) -> bool:
    """Run ``action`` in a forked child with ``SWEEPER_FAULT=point``; whether the fault
    hook killed it (SIGKILL) there."""
    pid = os.fork()
    if pid == 0:
        try:
            os.environ["SWEEPER_FAULT"] = point
            warnings.simplefilter("ignore")
            action()
        finally:
            os._exit(0)                      # the hook did not fire
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"the child did not reach {point} within {timeout} s")


@pytest.mark.parametrize("point", ["after-reject", "after-repair-write", "after-repair-rename"])
def test_a_repair_killed_at_any_step_loses_nothing(tmp_path, point):
    store = make_study(tmp_path / "s")
    good = lines_of(store)
    store.journal_path.write_bytes(b"\n".join([*good[:2], b"garbage", *good[2:]]) + b"\n{\"ki")
    assert killed(point, lambda: StudyStore(tmp_path / "s").open_journal())
    trials, _ = read_quietly(StudyStore(tmp_path / "s"))
    assert len(trials) == 4                                  # the old journal or the new one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        StudyStore(tmp_path / "s").open_journal()            # the next run finishes the repair
    assert lines_of(store) == good
    rejected = (tmp_path / "s" / REJECTED).read_text().splitlines()
    assert [json.loads(x)["line"] for x in rejected] == [3, len(good) + 2]   # each once
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == sorted([
        "study.json", REJECTED, JOURNAL])                    # no temporary file left


def run_replay(studies: Path, blocks: str = "512,1024") -> int:
    """``sweeper run`` of spaces/copy.yaml with ``BLOCK`` values ``blocks``, replayed."""
    return main(["run", "spaces/copy.yaml", "--device", f"replay:{TABLE}", "-p",
                 f"BLOCK={blocks}", "--studies-dir", str(studies), "--quiet", "--no-report"])


def test_a_sweep_killed_at_any_record_resumes_exactly_once(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    studies = tmp_path / "st"
    for nth in (1, 7, 15, 23):               # killed after that many records, each time
        assert killed(f"after-append:{nth}", lambda: run_replay(studies))
    assert run_replay(studies) == 0
    trials = StudyStore(studies / "copy-fp32-replay").records()[0]
    space = load_space("spaces/copy.yaml", ["BLOCK=512,1024"])
    assert len(trials) == space.size == len({t.key() for t in trials})
    assert sorted(t.number for t in trials) == list(range(space.size))


def test_the_fault_hook_kills_a_real_run_through_the_environment(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "SWEEPER_FAULT": "after-append:3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "sweeper", "run", "spaces/copy.yaml",
                           "--device", f"replay:{TABLE}", "-p", "BLOCK=1024", "--studies-dir",
                           str(tmp_path), "--quiet"], cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    assert len(StudyStore(tmp_path / "copy-fp32-replay").records()[0]) == 3


# -- durability -------------------------------------------------------------------------------
def test_every_record_is_fsynced_and_new_folders_too(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = StudyStore(tmp_path / "a" / "s")
    store.create(META)
    assert synced[:3] == [str(tmp_path), str(tmp_path / "a"), synced[2]]   # each new folder
    assert re.fullmatch(rf"{tmp_path}/a/s/\.study\.json\.\w+\.tmp", synced[2])
    assert synced[3:] == [str(tmp_path / "a" / "s")]                        # the rename
    synced.clear()
    store.append(trial(0))
    store.append(trial(1))
    journal = str(store.journal_path)
    assert synced == [str(tmp_path / "a" / "s"), journal, journal]   # created, then each record


def test_a_second_process_cannot_append_to_a_study_being_run(tmp_path):
    first = make_study(tmp_path / "s")
    first.open_journal()
    other = StudyStore(tmp_path / "s")
    with pytest.raises(StudyError, match=r"/s: another sweeper process is running this study; "
                                         r"wait for it to finish, or pass --study NEW "
                                         r"\(processes share a study as `sweeper worker "
                                         r"--study NAME`\)"):
        other.append(trial(9))
    first.close()
    other.append(trial(9))
    other.close()


def test_append_never_writes_a_line_the_reader_would_set_aside(tmp_path):
    store = make_study(tmp_path / "s")
    before = store.journal_path.read_bytes()
    with pytest.raises(StudyError, match=r"cannot record a trial record: trial #1 again"):
        store.append(trial(1))
    bad = trial(9)
    bad.config = dataclasses.replace(bad.config, grid=10 ** 5000)
    with pytest.raises(StudyError, match=r"cannot record a trial record: not JSON \(Exceeds"):
        store.append(bad)
    store.close()
    assert store.journal_path.read_bytes() == before


# -- files written whole ----------------------------------------------------------------------
def fail_writes(monkeypatch, name: str, after: int = 0, partial: bool = True) -> None:
    """``os.write`` to files named ``name`` fails with ENOSPC after ``after`` writes, the
    failing one writing half its bytes first (as a full disk does)."""
    real, count = os.write, [0]

    def write(fd: int, data) -> int:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(name):
            count[0] += 1
            if count[0] > after:
                if partial and len(data) > 1 and count[0] == after + 1:
                    return real(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_atomic_write_replaces_whole_or_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    fsio.atomic_write(target, "old\n")
    os.chmod(target, 0o604)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fsio.atomic_write(link, b"new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    assert os.stat(target).st_mode & 0o777 == 0o604
    fail_writes(monkeypatch, ".report.json.")
    with pytest.raises(WriteError, match=rf"^disk full writing {target}: No space left on device; "
                                         r"report.json is as it was; free space and run the "
                                         r"same command again$"):
        fsio.atomic_write(target, "x" * 100_000)
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "report.json"]
    with pytest.raises(SweeperError, match=rf"^cannot write {tmp_path}: it is a directory, not "
                                           r"a regular file; give a file path$") as refused:
        fsio.atomic_write(tmp_path, "x")
    assert not isinstance(refused.value, WriteError)      # bad input (exit 2), not the disk


def test_the_ceilings_cache_is_written_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path))
    found = ceilings.Ceilings(gpu="G", uuid="U", driver="1", measured="now",
                              copy={1 << 20: {"cold": 1.0, "warm": 2.0}})
    path = ceilings.save(found)
    before = path.read_bytes()
    fail_writes(monkeypatch, f".{path.name}.")
    with pytest.raises(WriteError, match="disk full"):
        ceilings.save(found)
    assert path.read_bytes() == before and ceilings.load("G", "U", "1") == found


def test_no_file_is_written_except_through_atomic_write():
    """Every writer goes through sweeper.fsio; a new one that does not fails here."""
    pattern = re.compile(r"write_text\(|write_bytes\(|open\([^)]*['\"][wax]b?['\"]|"
                         r"savefig\((?!image)")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in (ROOT / "sweeper").rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_report_on_a_full_disk_keeps_the_old_report(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert run_replay(tmp_path, blocks="1024") == 0
    study = tmp_path / "copy-fp32-replay"
    before = b'{"an": "earlier report"}\n'
    (study / "report.json").write_bytes(before)
    fail_writes(monkeypatch, ".report.")
    capsys.readouterr()
    assert main(["report", str(study)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"sweeper: disk full writing {study}/report.") and "Traceback" not in err
    assert (study / "report.json").read_bytes() == before
    assert not [p for p in study.iterdir() if p.name.endswith(".tmp")]


# -- disk full while sweeping -----------------------------------------------------------------
def test_a_full_disk_stops_the_sweep_with_one_line_and_the_study_goes_on(tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.chdir(ROOT)
    fail_writes(monkeypatch, JOURNAL, after=5)
    assert run_replay(tmp_path) == 1
    study = tmp_path / "copy-fp32-replay"
    err = capsys.readouterr().err.strip()
    assert err == (f"sweeper: disk full writing {study}/{JOURNAL}: No space left on device; "
                   "the study is consistent up to trial #4; free space and run the same "
                   "command to go on")
    assert not study.joinpath(JOURNAL).read_bytes().endswith(b"\n")   # a torn last line
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    assert run_replay(tmp_path) == 0
    err = capsys.readouterr().err
    assert f"{study}/{JOURNAL}:6: incomplete last line" in err and "moved to" in err
    trials = StudyStore(study).records()[0]
    space = load_space("spaces/copy.yaml", ["BLOCK=512,1024"])
    assert len(trials) == len({t.key() for t in trials}) == space.size


def test_a_journal_that_cannot_be_opened_is_one_line_and_left_as_it_was(tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.chdir(ROOT)
    assert run_replay(tmp_path) == 0
    study = tmp_path / "copy-fp32-replay"
    before = (study / JOURNAL).read_bytes()
    real = os.open

    def read_only(path, flags, *args, **kwargs):      # a read-only mount, or a file 0444
        if os.path.basename(path) == JOURNAL and flags & os.O_WRONLY:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    capsys.readouterr()
    assert run_replay(tmp_path) == 1
    assert capsys.readouterr().err.strip() == (
        f"sweeper: read-only file system writing {study}/{JOURNAL}: Read-only file system; "
        f"{JOURNAL} is as it was")
    assert (study / JOURNAL).read_bytes() == before


# -- study.json -------------------------------------------------------------------------------
def test_a_journal_without_study_json_is_refused_not_adopted(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    study = tmp_path / "copy-fp32-replay"
    store = make_study(study)
    (study / "study.json").unlink()
    before = store.journal_path.read_bytes()
    assert run_replay(tmp_path) == 2
    assert capsys.readouterr().err.strip() == (
        f"sweeper: {study}: trials.jsonl without study.json; it cannot be checked against this "
        "run; move it away or pass --study NEW")
    assert main(["report", str(study)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sweeper: {study}: trials.jsonl without study.json: nothing says what it measured; "
        "restore study.json or move the folder away")
    assert sorted(p.name for p in study.iterdir()) == [JOURNAL]
    assert store.journal_path.read_bytes() == before


@pytest.mark.parametrize("text, problem", [
    ("[]", "a JSON array, not an object"),
    ("{}", "no study, kernel; a study.json needs study, kernel"),
    ('{"study": "s",\n "kernel": }', ":2: not JSON (Expecting value, column 12); restore it"),
    ('{"study": "s",\n "kernel": "co', ":2: not JSON (Unterminated string starting at, column 12)"),
    ('{"study": "s", "kernel": 3}', "kernel is 3, not str"),
    ('{"study": "s", "kernel": "copy", "environment": []}', "environment is [], not dict"),
    ('{"study": "s", "kernel": "copy", "axes": {"grid": 1}}', "axes is {'grid': 1}, not dict"),
    # the entries of the environment an export or a report reads, each of its type
    ('{"study": "s", "kernel": "copy", "environment": {"sms": "two"}}',
     "environment: sms is 'two', not int | None"),
    ('{"study": "s", "kernel": "copy", "environment": {"l2_bytes": "1MiB"}}',
     "environment: l2_bytes is '1MiB', not int | None"),
    ('{"study": "s", "kernel": "copy", "environment": {"max_footprint": "big"}}',
     "environment: max_footprint is 'big', not int | None"),
    ('{"study": "s", "kernel": "copy", "environment": {"recorded": 5}}',
     "environment: recorded is 5, not dict[str, str]"),
    # the entries of the other objects the report reads
    ('{"study": "s", "kernel": "copy", "headline": "GB/s"}',
     "headline 'GB/s' is not one of gbps, tflops"),
    ('{"study": "s", "kernel": "copy", "bounds": {"gpu": "G", "dram": {"per_s": 1e12}}}',
     "bounds: dram: no how, source"),
    ('{"study": "s", "kernel": "copy", "last_run": {"gpu_busy": {"parts": "compile 3 s"}}}',
     "last_run: gpu_busy: parts is 'compile 3 s', not dict[str, float]"),
    ('{"study": "s", "kernel": "copy", "last_run": {"dropped": ["GPU 1"]}}',
     "last_run: dropped[0] is 'GPU 1', not an object"),
    ('{"study": "s", "kernel": "copy", "sampler": {"name": "oat", "baseline": {"BLOCK": 64}}}',
     "sampler: baseline is {'BLOCK': 64}, not list[tuple[str, str]]"),
    ('{"study": "s", "kernel": "copy", "format": 3}',
     "written in format 3 by a newer sweeper; this one reads study files of formats 1 to 2: "
     "upgrade sweeper"),
    ('{"study": "s", "kernel": "copy", "format": "2"}',
     "format '2' is not a format number (a whole number >= 1)"),
])
def test_a_study_json_that_is_not_one_is_refused_with_its_file(tmp_path, monkeypatch, capsys,
                                                               text, problem):
    monkeypatch.chdir(ROOT)
    study = tmp_path / "copy-fp32-replay"
    make_study(study)
    (study / "study.json").write_text(text)
    for argv in (["report", str(study)], ["export", str(study), "-o", str(tmp_path / "t")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sweeper: {study}/study.json") and problem in err, err
        assert "\n" not in err
    assert run_replay(tmp_path) == 2
    assert problem in capsys.readouterr().err
    assert (study / "study.json").read_text() == text and not (tmp_path / "t").exists()


@pytest.mark.parametrize("entry, wrong, problem", [
    ("kernel", 7, "kernel is 7, not str"),
    ("format", "2", "format '2' is not a format number"),
    ("sampler", {"name": "oat", "seed": "x"}, "sampler: seed is 'x', not int"),
    ("environment", {"gpu": "G", "sms": "two"}, "environment: sms is 'two', not int | None"),
    ("last_run", {"dropped": [{"gpu": "GPU 1", "line": "gone"}, "GPU 2"]},
     "last_run: dropped[1] is 'GPU 2', not an object"),
])
def test_a_study_json_entry_of_the_wrong_type_is_refused_at_its_line(tmp_path, monkeypatch,
                                                                      capsys, entry, wrong,
                                                                      problem):
    """A study.json edited by hand is refused with the line of the entry it got wrong, a
    nested one's own (the entry inside ``sampler``, the list item), as a space file's
    error is: the file is many lines long (``json.dumps(indent=2)``)."""
    monkeypatch.chdir(ROOT)
    study = tmp_path / "copy-fp32-replay"
    make_study(study)
    meta = json.loads((study / "study.json").read_text())
    text = json.dumps({**meta, entry: wrong}, indent=2, sort_keys=True)
    (study / "study.json").write_text(text)
    lines = text.splitlines()
    key = {"sampler": '"seed"', "environment": '"sms"', "last_run": '"GPU 2"'}.get(
        entry, f'"{entry}"')
    start = next(i for i, line in enumerate(lines) if line.startswith(f'  "{entry}"'))
    line = next(i for i, text in enumerate(lines) if i >= start and key in text) + 1
    assert main(["report", str(study)]) == 2
    assert capsys.readouterr().err.startswith(
        f"sweeper: {study}/study.json:{line}: {problem}")


# -- priors from other studies ----------------------------------------------------------------
def test_priors_skip_an_unreadable_study_and_use_the_good_records_of_a_damaged_one(tmp_path):
    space = load_space(ROOT / "spaces/copy.yaml")
    meta = {**META, "environment": {"gpu": "G"}}
    for name in ("a-broken", "b-damaged", "c-good"):
        store = StudyStore(tmp_path / name)
        store.create({**meta, "study": name})
        store.append(trial(0, block=128 if name == "b-damaged" else 256))
        store.close()
    (tmp_path / "a-broken" / "study.json").write_text("[]")
    with open(tmp_path / "b-damaged" / JOURNAL, "ab") as f:
        f.write(b"garbage\n{\"kind\": \"wat\"}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = priors_from_studies(tmp_path, space, "G")
    assert [c["block"] for c in found] == ["128", "256"]
    assert [str(w.message) for w in caught] == [
        f"auto: study {tmp_path}/a-broken skipped for priors: {tmp_path}/a-broken/study.json: "
        "a JSON array, not an object; restore it, or move the study folder away",
        f"auto: study {tmp_path}/b-damaged: 2 bad line(s) in its journal set aside (line 2: "
        "not JSON (Expecting value, column 1)); its other trials are used for priors"]


def test_a_journal_followed_as_it_grows_reads_as_the_whole_file_does(tmp_path):
    """:class:`JournalTail` parses only what was appended since its last read, and every
    read equals a scan of the whole file: as it grows by whole lines, by a torn line and
    its end, by a line set aside, replaced by a shorter copy, written over at its size,
    and checked against other axes; a read handed out before never changes."""
    from sweeper.store._journal import JournalTail, scan

    path = tmp_path / JOURNAL
    axes = [META["axes"]]
    tail = JournalTail(path, lambda: axes[0])
    line = [json.dumps(trial(n).to_json()).encode() + b"\n" for n in range(10)]

    def same() -> None:
        got, whole = tail.read(), scan(path, axes[0])
        for name in ("records", "bad", "sha256", "line_count", "needs_newline"):
            assert getattr(got, name) == getattr(whole, name), name
        assert list(got.numbers) == list(whole.numbers)
        assert (got.ledger.trials, got.ledger.configs) == (whole.ledger.trials,
                                                            whole.ledger.configs)

    same()                                              # no journal yet
    path.write_bytes(line[0] + line[1])
    same()
    first = tail.read()
    held = (list(first.records), first.ledger.copy().trials)
    with path.open("ab") as f:
        f.write(line[2] + line[3])
    same()
    assert (first.records, first.ledger.trials) == held     # an earlier read unchanged
    with path.open("ab") as f:
        f.write(line[4][:20])                           # a line being written
    same()
    with path.open("ab") as f:
        f.write(line[4][20:])
    same()
    with path.open("ab") as f:
        f.write(line[1] + line[5])                      # trial #1 again: set aside
    same()
    assert tail.read().bad
    with path.open("ab") as f:
        f.write(b"garbage\n" + line[6])                 # followed past lines set aside
    same()
    assert tail.read().data == path.read_bytes()        # what a repair of it rewrites
    with path.open("ab") as f:
        f.write(line[7][:30])                           # torn by a killed worker,
    same()
    with path.open("ab") as f:
        f.write(b"\n" + line[8])                        # ended by the next one's append
    same()
    shorter = tmp_path / "copy"
    shorter.write_bytes(line[0] + line[1] + line[2])   # a repair renames a copy over it
    os.replace(shorter, path)
    same()
    with path.open("ab") as f:
        f.write(line[3])
    same()
    data = path.read_bytes()
    time.sleep(0.01)
    path.write_bytes(data.replace(b'"number":3', b'"number":7'))   # the same size
    same()
    axes[0] = {**META["axes"], "block": ["32", "64"]}  # trials of block 128, 256 set aside
    same()
    assert tail.read().bad
