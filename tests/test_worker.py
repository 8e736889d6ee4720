"""``sweeper worker``: workers share one study's sweep through claims (each config kept
once), in PostgreSQL or the journal; ``--storage`` for run, report, export and compare; a
study copied between the stores; a second ``sweeper run`` of a busy study, in either store,
told how to share it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sweeper.cli import main
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.store._open import open_storage

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
SPACE = ["spaces/copy.yaml", "-p", "BLOCK=512,1024", "--device", f"replay:{TABLE}"]


@pytest.fixture(params=["journal", "postgresql"])
def storage(request) -> list[str]:
    """The --storage options of each store (none: the journal)."""
    if request.param == "journal":
        return []
    return ["--storage", request.getfixturevalue("postgres_url")]


def test_two_workers_share_a_sweep_and_each_config_is_kept_once(storage, tmp_path,
                                                                monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    name = f"shared{uuid.uuid4().hex[:8]}"
    common = [*storage, "--study", name, "--studies-dir", str(tmp_path)]
    assert main(["worker", *SPACE, *common, "--worker-id", "a", "--trials", "5"]) == 0
    assert main(["worker", *SPACE, *common, "--worker-id", "b", "--lease", "5s"]) == 0
    out = capsys.readouterr().out
    size = load_space("spaces/copy.yaml", ["BLOCK=512,1024"]).size
    assert "worker a: 5 configs measured and kept" in out
    assert f"worker b: {size - 5} configs measured and kept" in out
    assert "stopped: complete: every valid config tried" in out
    store = open_storage(storage[1] if storage else None, tmp_path / name)
    trials = store.records()[0]
    assert sorted(Counter(t.key() for t in trials).values()) == [1] * size
    assert sorted(t.number for t in trials) == list(range(size))
    # the finals and the report: `sweeper run` of the same study, which measures nothing new
    assert main(["run", *SPACE, *common, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "done: 0 measured" in out and (tmp_path / name / "report.md").is_file()
    assert main(["export", name, *storage, "--studies-dir", str(tmp_path),
                 "-o", str(tmp_path / "tuning.json")]) == 0
    first, second = [t.number for t in trials if t.ok][:2]
    assert main(["compare", f"{name}@{first}", f"{name}@{second}", *storage,
                 "--studies-dir", str(tmp_path)]) == 0
    assert f"#{first} vs #{second}" in capsys.readouterr().out


def test_a_workers_time_budget_counts_from_the_commands_start(tmp_path, monkeypatch,
                                                              capsys):
    """`sweeper worker --time` ends the whole command within the budget, as `run --time`
    does: two workers of spaces/copy.yaml on the interpreter under `--time 20s` ended at
    28.3 and 28.6 s when it counted from their sweeps' start (start-up 8 s)."""
    from sweeper.engine import WorkerOptions, run_worker
    from sweeper.engine._options import SpaceSource

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sweeper.engine._worker.process_age", lambda: 60.0)
    space = SpaceSource(path="spaces/copy.yaml", params=("BLOCK=512,1024",))
    options = dict(study="budgeted", space=space, device=f"replay:{TABLE}",
                   studies_dir=str(tmp_path), time_s=50.0)
    spent = run_worker(WorkerOptions(**options, clock_from_start=True))
    assert spent.measured == 0 and spent.stopped_by.startswith("budget: 50 s")
    fresh = run_worker(WorkerOptions(**options))       # from Python: the sweep's own clock
    assert fresh.measured > 0


def test_a_worker_without_a_space_takes_the_studys_and_needs_the_study(postgres_url, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    name = f"bare{uuid.uuid4().hex[:8]}"
    common = ["--storage", postgres_url, "--study", name, "--studies-dir", str(tmp_path),
              "--device", f"replay:{TABLE}"]
    assert main(["worker", *common]) == 2
    assert f"(study {name}): no study {name!r} yet; give its space file to create it" \
        in capsys.readouterr().err
    assert main(["worker", "spaces/copy.yaml", *common, "--trials", "3"]) == 0
    # -p replaces an axis of a space file: without one it is refused, not ignored
    assert main(["worker", *common, "-p", "BLOCK=4096"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: -p BLOCK=4096: -p replaces an axis of the space file, and none was given "
        "(a worker without one takes the study's space as recorded); give it: sweeper "
        "worker SPACE --study NAME -p ...\n")
    assert main(["worker", *common]) == 0
    assert "stopped: complete: every valid config tried" in capsys.readouterr().out
    trials = open_storage(postgres_url, tmp_path / name).records()[0]
    assert len(trials) == len({t.key() for t in trials}) == load_space(
        "spaces/copy.yaml").size


def test_a_worker_without_a_space_joins_a_study_whose_space_extends_another(tmp_path,
                                                                           capsys):
    """The space a study records holds the files it extended after ``# extends`` lines; a
    worker that takes it from the record reads them merged, as the run did, where it
    read them as one YAML file and refused its repeated keys."""
    (tmp_path / "base.yaml").write_text((ROOT / "spaces" / "copy.yaml").read_text())
    (tmp_path / "child.yaml").write_text(
        "extends: base.yaml\n# the same space, less of it\nstudy: child\n"
        "params:\n  block: [128, 256]\n")
    common = ["--study", "child", "--studies-dir", str(tmp_path / "st"), "--device",
              f"replay:{TABLE}"]
    assert main(["worker", str(tmp_path / "child.yaml"), *common, "--trials", "3"]) == 0
    capsys.readouterr()
    assert main(["worker", *common]) == 0, capsys.readouterr().err
    assert "stopped: complete: every valid config tried" in capsys.readouterr().out
    trials = StudyStore(tmp_path / "st" / "child").records()[0]
    space = load_space(tmp_path / "child.yaml")
    assert len(trials) == len({t.key() for t in trials}) == space.size
    assert {t.config.block for t in trials} == {128, 256}


def test_a_worker_without_a_space_joins_from_another_folder_than_the_study_s_run(
        tmp_path, monkeypatch, capsys):
    """A study made with its space file's relative path (``sweeper worker spaces/x.yaml``
    run in the project's folder) is joined by a worker without a space run from another
    folder: the ``.cu`` file the space names relative to itself is read where the first
    worker read it, not from the working folder."""
    from tests.test_export import cuda_project

    run = cuda_project(tmp_path)
    table = f"replay:{tmp_path / 'a' / 't.csv'}"
    common = ["--study", "x", "--studies-dir", str(tmp_path / "st"), "--device", table]
    monkeypatch.chdir(tmp_path / "a")
    assert main(["worker", run[1], *common, "--trials", "1"]) == 0
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    assert main(["worker", *common]) == 0, capsys.readouterr().err
    assert "stopped: complete: every valid config tried" in capsys.readouterr().out
    assert len(StudyStore(tmp_path / "st" / "x").records()[0]) == 2


def test_copy_study_moves_a_study_to_the_database_and_back(postgres_url, tmp_path,
                                                          monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "4"]) == 0
    name = "copy-fp32-replay"
    assert main(["copy-study", name, "--studies-dir", str(tmp_path / "a"),
                 "--to", postgres_url]) == 0
    assert f"copied study {name}: " in capsys.readouterr().out
    assert main(["copy-study", name, "--storage", postgres_url, "--to",
                 str(tmp_path / "b")]) == 0
    assert "read back equal" in capsys.readouterr().out
    same = [StudyStore(tmp_path / d / name).journal_path.read_bytes() for d in ("a", "b")]
    assert same[0] == same[1]
    assert main(["copy-study", name, "--studies-dir", str(tmp_path / "a"),
                 "--to", postgres_url]) == 2
    assert capsys.readouterr().err.endswith(
        f"a study '{name}' is there already; give --to another database (the copy keeps "
        "the study's name)\n")


class Interrupt:
    """A record encoder that raises KeyboardInterrupt (Ctrl-C) at its ``after + 1``-th
    record while ``armed``, and encodes as ``encode`` does otherwise."""

    def __init__(self, encode, after: int) -> None:
        self.encode, self.left, self.armed = encode, after, True

    def __call__(self, *args, **kwargs):
        if self.armed:
            if self.left == 0:
                raise KeyboardInterrupt
            self.left -= 1
        return self.encode(*args, **kwargs)


@pytest.mark.parametrize(("sig", "status", "why"), [("SIGINT", 130, "Ctrl-C"),
                                                    ("SIGTERM", 143, "SIGTERM")])
def test_a_worker_stops_after_its_trial_in_flight_at_ctrl_c_or_sigterm(
        sig, status, why, tmp_path, monkeypatch, capsys):
    """Ctrl-C (or a scheduler's SIGTERM) to ``sweeper worker`` ends the trial in flight,
    keeps it and prints the worker's summary, as ``sweeper run`` does; a worker started
    again goes on from there."""
    from sweeper.sweep import SilentReporter

    trial = SilentReporter.trial
    seen = []

    def interrupting(self, record, best):     # the signal during the third trial's report
        seen.append(record)
        if len(seen) == 3:
            os.kill(os.getpid(), getattr(signal, sig))
        trial(self, record, best)

    monkeypatch.setattr(SilentReporter, "trial", interrupting)
    monkeypatch.chdir(ROOT)
    common = ["--study", "w", "--studies-dir", str(tmp_path), "--worker-id", "a"]
    assert main(["worker", *SPACE, *common]) == status
    out, err = capsys.readouterr()
    assert "worker a: 3 configs measured and kept in" in out
    assert f"stopped: interrupted ({why})" in out and "stopping after the current trial" in err
    assert len(StudyStore(tmp_path / "w").records()[0]) == 3
    monkeypatch.setattr(SilentReporter, "trial", trial)
    assert main(["worker", *SPACE, *common]) == 0
    size = load_space("spaces/copy.yaml", ["BLOCK=512,1024"]).size
    assert f"worker a: {size - 3} configs measured and kept" in capsys.readouterr().out


@pytest.mark.parametrize("into", ["journal", "postgresql"])
def test_a_copy_interrupted_midway_leaves_no_study_and_the_same_command_completes_it(
        into, tmp_path, monkeypatch, capsys, request):
    """Ctrl-C in the middle of ``copy-study`` leaves nothing at ``--to`` that reads as the
    study (it would export the wrong winner), so the same command run again copies it."""
    from sweeper.store import _journal, _postgres

    monkeypatch.chdir(ROOT)
    name = f"partial{uuid.uuid4().hex[:8]}"
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--study", name,
                 "--quiet", "--no-report", "--trials", "6"]) == 0
    source = StudyStore(tmp_path / "a" / name)
    assert len(source.raw_records()) > 3                 # the copy stops at its 4th
    if into == "journal":
        to, module = str(tmp_path / "b"), _journal
        target = StudyStore(tmp_path / "b" / name)
    else:
        to, module = request.getfixturevalue("postgres_url"), _postgres
        target = open_storage(to, tmp_path / "a" / name)
    interrupt = Interrupt(module.encode_record, after=3)
    monkeypatch.setattr(module, "encode_record", interrupt)
    command = ["copy-study", name, "--studies-dir", str(tmp_path / "a"), "--to", to]
    capsys.readouterr()
    assert main(command) == 130
    assert interrupt.left == 0 and "sweeper: aborted" in capsys.readouterr().err
    assert not target.exists() and target.raw_records() == []
    if into == "journal":
        assert list((tmp_path / "b").iterdir()) == []       # nor a staging folder left
    interrupt.armed = False
    assert main(command) == 0
    assert f"copied study {name}: {len(source.raw_records())} records" \
        in capsys.readouterr().out
    assert target.meta() == source.meta() and target.raw_records() == source.raw_records()
    if into == "journal":
        assert target.journal_path.read_bytes() == source.journal_path.read_bytes()
        assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [name]


def test_a_copy_killed_midway_leaves_a_staging_folder_the_next_copy_removes(tmp_path,
                                                                           monkeypatch, capsys):
    """A SIGKILL runs no clean-up: ``copy-study`` killed midway leaves its hidden staging
    folder beside the target.  The next copy to that place removes it, as its process is
    gone, and leaves alone one whose process still runs (another copy in progress)."""
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "6"]) == 0
    name = "copy-fp32-replay"
    command = ["copy-study", name, "--studies-dir", str(tmp_path / "a"),
               "--to", str(tmp_path / "b")]
    killed = ("import os, signal, sys\n"
              "from sweeper.cli import main\n"
              "from sweeper.store import _journal\n"
              "encode, seen = _journal.encode_record, []\n"
              "def encode_then_die(*args, **kwargs):\n"
              "    seen.append(1)\n"
              "    if len(seen) > 3:\n"
              "        os.kill(os.getpid(), signal.SIGKILL)\n"
              "    return encode(*args, **kwargs)\n"
              "_journal.encode_record = encode_then_die\n"
              "main(sys.argv[1:])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", killed, *command], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    (left,) = (tmp_path / "b").iterdir()                  # the dead copy's staging folder
    assert left.name.startswith(f".{name}.") and (left / name / "study.json").exists()
    capsys.readouterr()
    assert main(command) == 0
    assert f"copied study {name}: " in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "b").iterdir()] == [name]

    from sweeper.fsio import _owner

    in_use = tmp_path / "c" / f".{name}.{_owner()}.abcd_123.tmp"     # this process's
    (in_use / name).mkdir(parents=True)
    assert main([*command[:-1], str(tmp_path / "c")]) == 0
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == sorted([in_use.name, name])


def test_a_copy_onto_a_full_disk_is_one_line_of_the_copy_and_leaves_nothing(tmp_path,
                                                                            monkeypatch,
                                                                            capsys):
    """A full disk at ``--to`` is said of the copy: not of the hidden staging folder's
    journal, whose own message offered a resume ('the study is consistent ...; run the
    same command to go on') of a folder the copy removes."""
    import errno

    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    name = "copy-fp32-replay"
    real = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path / "b")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    capsys.readouterr()
    command = ["copy-study", name, "--studies-dir", str(tmp_path / "a"),
               "--to", str(tmp_path / "b")]
    assert main(command) == 1
    assert capsys.readouterr().err == (
        f"sweeper: disk full writing {tmp_path / 'b' / name}: No space left on device; "
        "nothing copied; free space and run the same command again\n")
    assert list((tmp_path / "b").iterdir()) == []
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    assert main(command) == 0


def test_copy_study_says_what_to_do_where_to_is_taken_or_not_a_folder(tmp_path, monkeypatch,
                                                                      capsys):
    """A ``--to`` that is a file names ``--to``; a study or a folder with other things at
    the copy's place is refused with the options that do work (the copy keeps the
    study's name), and nothing is written."""
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    name = "copy-fp32-replay"
    capsys.readouterr()
    file = tmp_path / "file"
    file.write_text("mine")
    assert main(["copy-study", name, "--studies-dir", str(tmp_path / "a"),
                 "--to", str(file)]) == 2
    assert capsys.readouterr().err == f"sweeper: --to {file}: not a folder\n"
    assert file.read_text() == "mine"
    command = ["copy-study", name, "--studies-dir", str(tmp_path / "a"),
               "--to", str(tmp_path / "b")]
    other = tmp_path / "b" / name
    other.mkdir(parents=True)
    (other / "notes.txt").write_text("mine")
    assert main(command) == 2
    assert capsys.readouterr().err == (
        f"sweeper: {other}: there already and not an empty folder; give --to another "
        f"studies folder, or move {other} away first (the copy keeps the study's name)\n")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    assert [p.name for p in (tmp_path / "b").iterdir()] == [name]
    shutil.rmtree(other)
    assert main(command) == 0
    assert main(command) == 2
    assert capsys.readouterr().err == (
        f"sweeper: {other}: a study '{name}' is there already; give --to another studies "
        f"folder, or move {other} away first (the copy keeps the study's name)\n")


def test_copy_study_takes_a_study_folder_as_report_and_export_do(tmp_path, monkeypatch,
                                                                 capsys):
    """``copy-study`` names its study as ``report`` and ``export`` do: a name under
    ``--studies-dir`` or the study's folder (the copy takes the study's name); a study
    that is not there is one line, exit 2."""
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    name = "copy-fp32-replay"
    capsys.readouterr()
    assert main(["copy-study", str(tmp_path / "a" / name), "--to", str(tmp_path / "b")]) == 0
    assert f"copied study {name}: " in capsys.readouterr().out
    same = [StudyStore(tmp_path / d / name).journal_path.read_bytes() for d in ("a", "b")]
    assert same[0] == same[1]
    odd = tmp_path / "foo bar"                 # a folder no study name could give
    shutil.copytree(tmp_path / "a" / name, odd)
    assert main(["copy-study", str(odd), "--to", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.startswith("sweeper: study: ")
    assert main(["copy-study", "nope", "--studies-dir", str(tmp_path / "a"),
                 "--to", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.startswith("sweeper: no study 'nope' (looked in nope and ")
    assert not (tmp_path / "c").exists()



def test_copy_study_refuses_a_target_in_the_study_it_copies(tmp_path, monkeypatch, capsys):
    """``--to`` the study's own folder, a folder inside it, or its studies folder (links
    resolved) would nest the study in itself (``a/s/s``) or land on it: one line, exit
    2, nothing written."""
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    name = "copy-fp32-replay"
    study = tmp_path / "a" / name
    (tmp_path / "link").symlink_to(study)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    for to, where in ((study, "lies inside"), (study / "sub", "lies inside"),
                      (tmp_path / "link", "lies inside"), (tmp_path / "a", "is")):
        assert main(["copy-study", name, "--studies-dir", str(tmp_path / "a"),
                     "--to", str(to)]) == 2
        assert capsys.readouterr().err == (
            f"sweeper: --to {to}: the copy would go to {to / name}, which {where} the folder "
            f"of the study being copied ({study}); allowed: a studies folder outside "
            f"{study}\n")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_copy_study_refuses_a_url_no_storage_takes(tmp_path, monkeypatch, capsys):
    """``--to sqlite:///x.db`` (or ``file://``) is a URL, not a folder: refused in one
    line, exit 2, where it made a folder named ``sqlite:`` and copied the study into it."""
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    for to in ("sqlite:///x.db", "file:///tmp/studies", "mysql://u:secret@h/db"):
        assert main(["copy-study", "copy-fp32-replay", "--studies-dir", "a",
                     "--to", to]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"sweeper: --to: '{to.split(':')[0]}://") and err.endswith(
            "is not a storage; allowed: a postgresql://USER@HOST/DB URL, or a studies "
            "folder\n") and "secret" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]

def test_a_busy_study_names_sweeper_worker_as_the_way_to_share(storage, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    name = f"busy{uuid.uuid4().hex[:8]}"
    common = [*SPACE, *storage, "--studies-dir", str(tmp_path), "--study", name]
    assert main(["run", *common, "--quiet", "--no-report", "--trials", "1"]) == 0
    holder = open_storage(storage[1] if storage else None, tmp_path / name)
    holder.open_journal()
    try:
        assert main(["run", *common, "--quiet"]) == 2
        assert main(["worker", *common]) == 2
    finally:
        holder.close()
    err = capsys.readouterr().err.splitlines()
    where = holder.location if storage else str(holder.root)
    assert err == [f"sweeper: {where}: another sweeper process is running this study; wait "
                   "for it to finish, or pass --study NEW (processes share a study as "
                   "`sweeper worker --study NAME`)",
                   f"sweeper: {where}: a `sweeper run` holds this study; let it finish, "
                   "then start the workers"]
    assert main(["worker", *common, "--trials", "1"]) == 0   # released: workers go on


def test_a_storage_option_that_is_no_database_is_one_line(tmp_path, capsys):
    assert main(["report", "s", "--storage", "sqlite:///x.db",
                 "--studies-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("sweeper: --storage: 'sqlite:///x.db' is not a "
                                       "storage; allowed: a postgresql://USER@HOST/DB URL "
                                       "(leave it out for the journal under --studies-dir)\n")


def start_workers(count: int, storage: list[str], name: str, studies: Path,
                  env: dict[int, dict[str, str]] | None = None,
                  extra: tuple[str, ...] = (), first: int = 0) -> list[subprocess.Popen[str]]:
    """``count`` ``sweeper worker`` processes of study ``name``, started at once, worker
    ``i`` (from ``first``) named ``w<i>`` with ``env[i]`` added to its environment."""
    base = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}
    return [subprocess.Popen(
        [sys.executable, "-m", "sweeper", "worker", *SPACE, *storage, "--study", name,
         "--studies-dir", str(studies), "--worker-id", f"w{i}", *extra],
        cwd=ROOT, env={**base, **(env or {}).get(i, {})}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(first, first + count)]


def finish(workers: list[subprocess.Popen[str]], timeout: float = 120
           ) -> list[tuple[int, str, str]]:
    """Each worker's exit status, output and errors, once all have ended; a worker still
    running after ``timeout`` seconds is aborted (its threads' stacks in its errors, from
    ``PYTHONFAULTHANDLER``) and fails the test."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(w.poll() is None for w in workers):
        time.sleep(0.1)
    hung = [i for i, w in enumerate(workers) if w.poll() is None]
    for i in hung:
        workers[i].send_signal(signal.SIGABRT)
    outputs = [w.communicate() for w in workers]
    assert not hung, [outputs[i][1][-4000:] for i in hung]
    return [(w.returncode, out, err) for w, (out, err) in zip(workers, outputs, strict=True)]


def kept_once(storage: list[str], root: Path) -> Counter[tuple[str, ...]]:
    """How often each config is kept in the study at ``root``; every config of the space
    is there exactly once (asserted)."""
    trials = open_storage(storage[1] if storage else None, root).records()[0]
    counts = Counter(t.key() for t in trials)
    assert sorted(counts.values()) == [1] * load_space(
        "spaces/copy.yaml", ["BLOCK=512,1024"]).size
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    return counts


def test_workers_started_together_on_a_new_study_all_join_it(storage, tmp_path,
                                                              monkeypatch):
    monkeypatch.chdir(ROOT)
    name = f"crowd{uuid.uuid4().hex[:8]}"
    ended = finish(start_workers(8, storage, name, tmp_path))
    assert [rc for rc, _, _ in ended] == [0] * 8, [err for _, _, err in ended]
    assert all("stopped: complete: every valid config tried" in out
               for _, out, _ in ended)
    kept_once(storage, tmp_path / name)
    meta = open_storage(storage[1] if storage else None, tmp_path / name).meta()
    assert len(meta["resumed"]) == 7                     # one created it, seven joined


def test_a_worker_killed_mid_trial_leaves_its_config_to_the_others(storage, tmp_path,
                                                                   monkeypatch):
    monkeypatch.chdir(ROOT)
    name = f"killed{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    # w0 SIGKILLs itself holding its third claim, its trial not measured; the lease is
    # long, so the others finish in time only by seeing that its holder is gone.  They
    # start once it is dead: started together on replayed trials (milliseconds each), a
    # w0 slow to import on a loaded machine could find every config taken already
    ended = finish(start_workers(1, storage, name, tmp_path, extra=("--lease", "10m"),
                                 env={0: {"SWEEPER_FAULT": "after-claim:3"}}))
    ended += finish(start_workers(3, storage, name, tmp_path, extra=("--lease", "10m"),
                                  first=1))
    assert time.monotonic() - t0 < 300
    assert ended[0][0] == -signal.SIGKILL
    assert [rc for rc, _, _ in ended[1:]] == [0] * 3, [err for _, _, err in ended]
    assert all("stopped: complete: every valid config tried" in out
               for _, out, _ in ended[1:])
    kept_once(storage, tmp_path / name)
    if not storage:
        claims = json.loads((tmp_path / name / "claims.json").read_text())
        assert all(c["done"] for c in claims.values())


def test_a_second_live_worker_under_one_worker_id_is_refused(storage, tmp_path, monkeypatch,
                                                             capsys):
    monkeypatch.chdir(ROOT)
    name = f"twin{uuid.uuid4().hex[:8]}"
    common = [*SPACE, *storage, "--study", name, "--studies-dir", str(tmp_path)]
    assert main(["worker", *common, "--worker-id", "a", "--trials", "1"]) == 0
    holder = open_storage(storage[1] if storage else None, tmp_path / name)
    holder.enlist("a")                          # a live worker "a", in the middle of its sweep
    capsys.readouterr()
    before = holder.meta()
    try:
        assert main(["worker", *common, "--worker-id", "a"]) == 2
    finally:
        holder.close()
    assert holder.meta() == before                  # nothing written
    where = holder.location if storage else str(holder.root)
    assert capsys.readouterr().err == (
        f"sweeper: {where}: worker id 'a' is held by another live worker of this study; "
        "give each worker its own --worker-id, or leave it out (default: HOST:PID)\n")
    assert main(["worker", *common, "--worker-id", "a", "--trials", "1"]) == 0   # let go


def test_workers_stop_together_at_the_studys_trial_budget(storage, tmp_path, monkeypatch,
                                                          capsys):
    """The trial budget is the study's: a worker counts the trials the others record
    while it runs, not only its own and those it proposes after another recorded them."""
    import dataclasses
    import itertools

    from sweeper.store import Claim
    from sweeper.store._base import claim_key
    from sweeper.sweep._claims import Claims
    from sweeper.trial import trials_counted

    monkeypatch.chdir(ROOT)
    name = f"budget{uuid.uuid4().hex[:8]}"
    spec = storage[1] if storage else None
    choices = load_space("spaces/copy.yaml", ["BLOCK=512,1024"]).choices()
    # another worker records configs from the far end of the exhaustive walk, one each
    # time this worker keeps a trial: this worker never proposes them
    theirs = [dict(zip(choices, labels, strict=True))
              for labels in itertools.product(*choices.values())][::-1]
    other: list[Any] = []
    keep = Claims.keep

    def keep_and_another(self, key, record):
        kept = keep(self, key, record)
        if not other:
            other.append(open_storage(spec, tmp_path / name))
            other[0].share()
        theirs_now = dataclasses.replace(record, choice=theirs.pop(0))
        text = claim_key(theirs_now.key())
        if other[0].claim(text, "other", 60.0) is Claim.TAKEN:
            assert other[0].record_claimed(text, "other", theirs_now) is not None
        return kept

    monkeypatch.setattr(Claims, "keep", keep_and_another)
    assert main(["worker", *SPACE, *storage, "--study", name, "--studies-dir",
                 str(tmp_path), "--worker-id", "a", "--trials", "10"]) == 0
    assert "worker a: 5 configs measured and kept" in capsys.readouterr().out
    trials = open_storage(spec, tmp_path / name).records()[0]
    assert trials_counted(trials) == 10


def test_a_worker_keeps_its_run_in_the_studys_last_run(storage, tmp_path, monkeypatch):
    """What `sweeper run` keeps of its sweep (`sweeper plan`'s rate, the report's busy
    line), a worker keeps too, naming itself: the last to end of those sharing the study."""
    monkeypatch.chdir(ROOT)
    name = f"lastrun{uuid.uuid4().hex[:8]}"
    assert main(["worker", *SPACE, *storage, "--study", name, "--studies-dir", str(tmp_path),
                 "--worker-id", "a", "--trials", "3"]) == 0
    last = open_storage(storage[1] if storage else None, tmp_path / name).meta()["last_run"]
    assert last["worker"] == "a" and last["measured"] == 3
    assert last["stopped_by"] == "budget: 3 trials" and last["wall_s"] > 0
    assert last["command"].startswith("sweeper worker ")


@pytest.mark.parametrize("bad, says", [
    (1, "1 line of {} that is not a record was left out"),
    (2, "2 lines of {} that are not records were left out")])
def test_copy_study_counts_the_lines_it_left_out(bad, says, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["run", *SPACE, "--studies-dir", str(tmp_path / "a"), "--quiet",
                 "--no-report", "--trials", "3"]) == 0
    journal = StudyStore(tmp_path / "a" / "copy-fp32-replay").journal_path
    with journal.open("a") as f:
        f.write("garbage\n" * bad)
    capsys.readouterr()
    assert main(["copy-study", str(journal.parent), "--to", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"sweeper: {says.format(journal)}"


@pytest.mark.parametrize("lease", ["1ms", "2.9s", "2s900ms"])
def test_a_lease_its_heartbeat_cannot_keep_alive_is_refused(lease, tmp_path, monkeypatch,
                                                           capsys):
    """A claim is renewed every third of its lease; a lease so short that renewals land
    after it ran out (``--lease 1ms``) let several workers measure one config.  Below
    :data:`~sweeper.options.MIN_LEASE_S`, 3 s, it is refused in one line with the floor
    and why, exit 2, nothing written; from the command and from
    :class:`~sweeper.engine.WorkerOptions` alike.  The floor itself is taken."""
    from sweeper.engine import WorkerOptions, run_worker
    from sweeper.errors import SweeperError
    from sweeper.options import MIN_LEASE_S, seconds
    from sweeper.options import lease as lease_of

    monkeypatch.chdir(ROOT)
    why = ("is shorter than 3s: a worker renews its claim every third of the lease, and a "
           "renewal (a database round trip, a wait for the study's lock) that lands after "
           "the lease ran out lets another worker measure the same config; allowed: 3s or "
           "longer (default 60s)")
    assert main(["worker", *SPACE, "--study", "s", "--studies-dir", str(tmp_path),
                 "--lease", lease]) == 2
    assert capsys.readouterr().err == (f"sweeper worker: argument --lease: "
                                       f"{lease!r} {why} (see sweeper worker --help)\n")
    lease_s = seconds(lease)
    with pytest.raises(SweeperError) as refused:
        run_worker(WorkerOptions(study="s", studies_dir=str(tmp_path), lease_s=lease_s))
    assert str(refused.value) == f"lease_s: {lease_s!r} {why}"
    assert list(tmp_path.iterdir()) == []
    assert lease_of("3s") == MIN_LEASE_S == 3.0


def test_a_worker_that_lost_its_claim_counts_only_the_trials_it_kept(storage, tmp_path,
                                                                      monkeypatch, capsys):
    """A worker stalled past its lease (suspended, cut off) finds its config measured and
    kept by another: its own trial is not the study's, so neither its count of configs
    "measured and kept" nor its summary has it, as for a config another worker recorded
    before it was proposed here."""
    import dataclasses

    from sweeper.store import Claim
    from sweeper.store._base import claim_key
    from sweeper.sweep._claims import Claims

    monkeypatch.chdir(ROOT)
    # a stall past a lease shorter than a worker takes: the test waits for it to run out
    monkeypatch.setattr("sweeper.options.MIN_LEASE_S", 0.1)
    name = f"stalled{uuid.uuid4().hex[:8]}"
    spec = storage[1] if storage else None
    other: list[Any] = []
    keep, lease_s = Claims.keep, 0.3

    def keep_after_a_stall(self, key, record):
        if record.number == 1:          # stalled past its lease; "other" takes the config
            text = claim_key(key, self.source)
            stop, beat = self._beats[text]
            stop.set()
            beat.join()
            time.sleep(lease_s * 2)
            other.append(open_storage(spec, tmp_path / name))
            other[0].share()
            assert other[0].claim(text, "other", 60.0) is Claim.TAKEN
            theirs = dataclasses.replace(record, samples_ms=list(record.samples_ms))
            assert other[0].record_claimed(text, "other", theirs) is not None
        return keep(self, key, record)

    monkeypatch.setattr(Claims, "keep", keep_after_a_stall)
    assert main(["worker", *SPACE, *storage, "--study", name, "--studies-dir",
                 str(tmp_path), "--worker-id", "a", "--lease", f"{lease_s}s",
                 "--trials", "4"]) == 0
    out = capsys.readouterr().out
    trials = open_storage(spec, tmp_path / name).records()[0]
    assert sorted(Counter(t.key() for t in trials).values()) == [1] * len(trials)
    assert len(trials) == 4
    assert "worker a: 3 configs measured and kept" in out, out
    last = open_storage(spec, tmp_path / name).meta()["last_run"]
    assert last["measured"] == 3


@pytest.mark.parametrize("sweeping", ["run", "worker"])
def test_copy_study_refuses_a_study_being_swept(sweeping, storage, tmp_path, monkeypatch,
                                                capsys):
    """A copy made while a run or workers append would miss the trials they measure next,
    and the copy says "read back equal" of a study that is not done: it is refused until
    they finish (exit 2, nothing copied), and no run or worker starts while it copies."""
    monkeypatch.chdir(ROOT)
    name = f"busycopy{uuid.uuid4().hex[:8]}"
    spec = storage[1] if storage else None
    common = [*storage, "--study", name, "--studies-dir", str(tmp_path / "studies")]
    assert main(["worker", *SPACE, *common, "--worker-id", "a", "--trials", "3"]) == 0
    holder = open_storage(spec, tmp_path / "studies" / name)
    holder.open_journal() if sweeping == "run" else holder.share()
    capsys.readouterr()
    copy = ["copy-study", name, *storage, "--studies-dir", str(tmp_path / "studies"),
            "--to", str(tmp_path / "copies")]
    try:
        assert main(copy) == 2
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "let them finish, then copy it" in err
    assert not (tmp_path / "copies" / name).exists()
    assert main(copy) == 0
    assert len(open_storage(None, tmp_path / "copies" / name).records()[0]) == 3


def test_a_copy_into_a_database_another_process_is_making_the_study_in_is_told_so(
        postgres_url, tmp_path, monkeypatch, capsys):
    """Two copies of one name into one database at once: the second is refused saying
    what copy-study can do (another --to), never `--study NEW`, which it does not take."""
    monkeypatch.chdir(ROOT)
    name = f"racing{uuid.uuid4().hex[:8]}"
    assert main(["run", *SPACE, "--study", name, "--studies-dir", str(tmp_path), "--quiet",
                 "--no-report", "--trials", "2"]) == 0
    capsys.readouterr()
    other = open_storage(postgres_url, tmp_path / "elsewhere" / name)
    other.open_journal()                    # another copy of that name, under way
    try:
        assert main(["copy-study", name, "--studies-dir", str(tmp_path),
                     "--to", postgres_url]) == 2
    finally:
        other.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"another sweeper process is making a study {name!r} there" in err
    assert "--to another database" in err and "--study" not in err
    assert not open_storage(postgres_url, tmp_path / name).exists()
