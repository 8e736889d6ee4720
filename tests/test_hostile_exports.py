"""Every export format's target gets the same checks: one line, exit 2, nothing written,
and the study's own record never overwritten; a full disk is exit 1 and leaves nothing
half-written, the Optuna journal included; a name from a tampered study.json reaches no
terminal and no Optuna study name with its control characters."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend

from sweeper.cli import main
from sweeper.escape import printable
from tests.test_export import study
from tests.test_report import copy_study


@pytest.fixture
def one_study(tmp_path):
    return study(tmp_path, "s", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)])


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err.rstrip("\n")


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _optuna(store, target, *extra):
    return main(["export", str(store.root), "--format", "optuna", "--to", str(target), *extra])


@pytest.mark.parametrize("target, said", [
    ("/dev/full", "cannot write /dev/full: it is a device, not a regular file; give a file "
                  "path"),
    ("{tmp}/fifo", "cannot write {tmp}/fifo: it is a FIFO or socket, not a regular file; "
                   "give a file path"),
    ("{tmp}", "cannot write {tmp}: it is a directory, not a regular file; give a file path"),
    ("{tmp}/notes.txt", "{tmp}/notes.txt:1: not an Optuna journal line (a JSON object with "
                        "an op_code), so not a file to add a study to; --to takes a new file, "
                        "an Optuna journal file or a database URL (sqlite:///FILE.db)"),
    ("{tmp}/s/trials.jsonl", "cannot write {tmp}/s/trials.jsonl: it is the study's own "
                             "trials.jsonl, which holds what it measured; give another path"),
    ("{tmp}/s/study.json", "cannot write {tmp}/s/study.json: it is the study's own "
                           "study.json, which holds what it measured; give another path"),
    ("sqlite:///{tmp}/s/study.json", "cannot write {tmp}/s/study.json: it is the study's own "
                                     "study.json, which holds what it measured; give another "
                                     "path"),
    ("sqlite:///{tmp}/notes.txt", "--to sqlite:///{tmp}/notes.txt: {tmp}/notes.txt is not a "
                                  "SQLite database; --to takes a new file, an Optuna journal "
                                  "file or a database URL (sqlite:///FILE.db)"),
])
def test_optuna_refuses_what_is_not_a_new_file_or_its_own_journal(one_study, tmp_path,
                                                                   capsys, target, said):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "notes.txt").write_text("my notes\n")
    before = {p: p.read_bytes() for p in [tmp_path / "notes.txt", *one_study.root.iterdir()]}
    assert _optuna(one_study, target.format(tmp=tmp_path)) == 2
    assert _one_line(capsys) == "sweeper: " + said.format(tmp=tmp_path)
    assert {p: p.read_bytes() for p in before} == before
    assert _files(tmp_path) == ["fifo", "notes.txt", "s"]
    assert _files(one_study.root) == ["study.json", "trials.jsonl"]


@pytest.mark.parametrize("fmt", ["tuning", "csv", "parquet", "triton"])
@pytest.mark.parametrize("own", ["trials.jsonl", "study.json", "claims.json"])
def test_no_format_writes_over_the_studys_own_record(one_study, capsys, fmt, own):
    before = {p.name: p.read_bytes() for p in one_study.root.iterdir()}
    target = one_study.root / own
    assert main(["export", str(one_study.root), "--format", fmt, "-o", str(target)]) == 2
    assert _one_line(capsys) == (f"sweeper: cannot write {target}: it is the study's own "
                                 f"{own}, which holds what it measured; give another path")
    assert {p.name: p.read_bytes() for p in one_study.root.iterdir()} == before


def test_a_link_to_the_journal_is_the_journal(one_study, tmp_path, capsys):
    (tmp_path / "out.csv").symlink_to(one_study.journal_path)
    before = one_study.journal_path.read_bytes()
    assert main(["export", str(one_study.root), "--format", "csv", "-o",
                 str(tmp_path / "out.csv")]) == 2
    assert "it is the study's own trials.jsonl" in _one_line(capsys)
    assert one_study.journal_path.read_bytes() == before


def test_optuna_adds_a_study_to_its_own_journal_and_replaces_the_file_whole(tmp_path,
                                                                            capsys):
    journal = tmp_path / "optuna.log"
    a = study(tmp_path, "a", 1 << 20, [("sms", 64, 256, 10.0)])
    b = study(tmp_path, "b", 1 << 20, [("sms", 64, 256, 20.0), ("2*sms", 64, 256, 30.0)])
    assert _optuna(a, journal) == 0 and _optuna(b, journal) == 0
    names = optuna.get_all_study_names(optuna.storages.journal.JournalStorage(
        JournalFileBackend(str(journal))))
    assert sorted(names) == ["a", "b"]
    assert _files(tmp_path) == ["a", "b", "optuna.log"]         # no temp or lock file left
    capsys.readouterr()


@pytest.mark.parametrize("existing", [False, True])
def test_a_full_disk_leaves_the_journal_as_it_was(one_study, tmp_path, capsys, monkeypatch,
                                                  existing):
    journal = tmp_path / "optuna.log"
    if existing:
        other = study(tmp_path, "other", 1 << 20, [("sms", 64, 256, 10.0)])
        assert _optuna(other, journal) == 0
        capsys.readouterr()
    before = journal.read_bytes() if existing else None
    real, calls = JournalFileBackend.append_logs, []

    def append_logs(self, logs):
        calls.append(1)
        if len(calls) > 2:               # the study is created, then the disk fills up
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, logs)

    monkeypatch.setattr(JournalFileBackend, "append_logs", append_logs)
    assert _optuna(one_study, journal) == 1
    outcome = f"{journal.name} is as it was" if existing else f"{journal.name} not written"
    assert _one_line(capsys) == (f"sweeper: disk full writing {journal}: "
                                 f"{os.strerror(errno.ENOSPC)}; {outcome}; free space and run "
                                 "the same command again")
    assert (journal.read_bytes() if existing else journal.exists()) == (before or False)
    assert _files(tmp_path) == (["optuna.log", "other", "s"] if existing else ["s"])


def test_a_file_that_cannot_be_read_or_written_is_one_line(one_study, capsys):
    for fmt, code in (("triton", 2), ("csv", 1)):
        assert main(["export", str(one_study.root), "--format", fmt, "-o",
                     "/proc/self/mem"]) == code
        line = _one_line(capsys)
        assert line.startswith(("sweeper: /proc/self/mem: cannot read it",
                                "sweeper: cannot write /proc/self/mem: "))
        assert "writing" not in line


def test_a_heatmaps_path_that_is_a_file_is_one_line(tmp_path, capsys):
    store = copy_study(tmp_path)
    (store.root / "heatmaps").write_text("not a folder")
    assert main(["report", str(store.root)]) == 2
    assert _one_line(capsys) == (f"sweeper: cannot make the folder {store.root / 'heatmaps'}: "
                                 f"{store.root / 'heatmaps'} is a file, not a folder; move it "
                                 "away or give another path")
    assert (store.root / "heatmaps").read_text() == "not a folder"


def test_a_tampered_study_name_reaches_no_terminal_and_no_name(tmp_path, capsys):
    # the study goes by its folder's name: a folder so named (a tampered study.json
    # naming another is a copied study, see test_sweep)
    store = study(tmp_path, "s\x1b[2J\nx", 1 << 20, [("sms", 64, 256, 10.0)])
    meta = json.loads((store.root / "study.json").read_text())
    meta["environment"]["gpu"] = "G\x1b[31m"
    (store.root / "study.json").write_text(json.dumps(meta))
    journal = tmp_path / "o.log"
    assert _optuna(store, journal) == 0
    assert main(["export", str(store.root), "-o", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.count("\n") == 3
    names = optuna.get_all_study_names(optuna.storages.journal.JournalStorage(
        JournalFileBackend(str(journal))))
    assert names == [printable("s\x1b[2J\nx")] == ["s\\x1b[2J\\nx"]
