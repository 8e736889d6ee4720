"""Outputs that cannot take a file, and tuning files that are not what export wrote: one
line, exit 2, and whatever was there left as it was."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from sweeper import fsio
from sweeper.cli import main
from sweeper.errors import SweeperError
from sweeper.export import tuned
from tests.test_export import GPU, study


@pytest.fixture
def one_study(tmp_path):
    return study(tmp_path, "s", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)])


def _tuning(tmp_path: Path, entries) -> Path:
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"version": 1, "entries": entries}))
    return path


def _good_entry(**changes):
    entry = {"kernel": "copy", "gpu": GPU, "dtype": "float32", "footprint": 1 << 20,
             "grid": 256, "grid_expr": "cdiv(n, BLOCK)", "block": 128, "meta": {"BLOCK": 1024},
             "gbps": 30.0, "median_ms": 1.0, "study": "s", "trial": 0,
             "facts": {"sms": 100, "l2_bytes": 1 << 20}}
    entry.update(changes)
    return entry


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err.rstrip("\n")


@pytest.mark.parametrize("fmt", ["tuning", "csv", "triton"])
def test_export_to_dev_full_is_refused_before_writing(one_study, capsys, fmt):
    assert main(["export", str(one_study.root), "-o", "/dev/full", "--format", fmt]) == 2
    assert _one_line(capsys) == ("sweeper: cannot write /dev/full: it is a device, not a "
                                 "regular file; give a file path")


@pytest.mark.parametrize("fmt", ["tuning", "csv", "triton"])
def test_export_to_a_folder_is_refused_and_the_folder_untouched(one_study, tmp_path, capsys,
                                                               fmt):
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(["export", str(one_study.root), "-o", str(folder), "--format", fmt]) == 2
    assert _one_line(capsys) == (f"sweeper: cannot write {folder}: it is a directory, not a "
                                 "regular file; give a file path")
    assert list(folder.iterdir()) == []


OPTUNA = ["export", "STUDY", "--format", "optuna", "--to"]
OUTPUTS = [(["export", "STUDY", "--format", f, "-o"], f, "") for f in ("tuning", "csv", "triton")] \
    + [(["schema", "-o"], "schema", ""), (OPTUNA, "optuna", ""),
       (OPTUNA, "sqlite", "sqlite:///")]        # SQLite makes no folder of its own


@pytest.mark.parametrize("command, name, scheme", OUTPUTS, ids=[o[1] for o in OUTPUTS])
def test_every_output_makes_its_folders_and_refuses_a_path_through_a_file(
        one_study, tmp_path, capsys, command, name, scheme):
    """Each command that writes a file a path names makes the folders it names; a path
    through a file was a failed write (exit 1, the OS's 'Not a directory'), not the bad
    input it is: exit 2, its one line, and nothing written."""
    args = [str(one_study.root) if a == "STUDY" else a for a in command]
    made = tmp_path / "new" / "deeper" / f"{name}.out"
    assert main([*args, scheme + str(made)]) == 0
    assert made.is_file()
    capsys.readouterr()
    blocker = tmp_path / "notes.txt"
    blocker.write_text("kept")
    through = blocker / "deeper" / f"{name}.out"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([*args, scheme + str(through)]) == 2
    assert _one_line(capsys) == (f"sweeper: cannot write {through}: {blocker} is a file, not a "
                                 "folder; move it away or give another path")
    assert blocker.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


FAILURES = [("open", errno.EACCES, "permission denied", ""),     # a read-only folder
            ("write", errno.ENOSPC, "disk full",
             "; free space and run the same command again"),
            ("fsync", errno.EIO, "I/O error", ""),
            ("replace", errno.EROFS, "read-only file system", "")]


@pytest.mark.parametrize("fmt", ["tuning", "csv"])
@pytest.mark.parametrize("call, code, said, advice", FAILURES)
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(one_study, tmp_path, capsys,
                                                             monkeypatch, fmt, call, code,
                                                             said, advice):
    """A write that fails is exit 1 (the machine, not the input) and one line."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / "t.out"
    before = '{"version": 1, "entries": []}\n' if fmt == "tuning" else "what was there\n"
    target.write_text(before)

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fsio.os, call, fail)
    assert main(["export", str(one_study.root), "-o", str(target), "--format", fmt]) == 1
    monkeypatch.undo()
    assert _one_line(capsys) == (f"sweeper: {said} writing {target}: {os.strerror(code)}; "
                                 f"t.out is as it was{advice}")
    assert target.read_text() == before
    assert [p.name for p in out.iterdir()] == ["t.out"]        # the temp file is gone


def test_a_failed_write_to_a_new_file_writes_nothing(one_study, tmp_path, capsys, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.os, "write", full)
    assert main(["export", str(one_study.root), "-o", str(tmp_path / "new.json")]) == 1
    assert _one_line(capsys).endswith("No space left on device; new.json not written; free "
                                      "space and run the same command again")
    assert not (tmp_path / "new.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".new.json")]


def test_a_write_that_takes_no_bytes_ends_instead_of_spinning(tmp_path, monkeypatch):
    monkeypatch.setattr(fsio.os, "write", lambda fd, data: 0)
    with pytest.raises(SweeperError, match=r"disk full writing .*; x not written"):
        fsio.atomic_write(tmp_path / "x", "text")


def test_a_folder_that_cannot_be_synced_still_gets_the_new_file(tmp_path, monkeypatch):
    real = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real(fd)

    monkeypatch.setattr(fsio.os, "fsync", fsync)
    (tmp_path / "x").write_text("old")
    fsio.atomic_write(tmp_path / "x", "new")
    assert (tmp_path / "x").read_text() == "new" and os.listdir(tmp_path) == ["x"]


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    (tmp_path / "x").write_text("old")
    (tmp_path / "x").chmod(0o640)
    fsio.atomic_write(tmp_path / "x", b"new")
    assert stat.S_IMODE((tmp_path / "x").stat().st_mode) == 0o640
    umask = os.umask(0o022)
    try:
        fsio.atomic_write(tmp_path / "y", "new")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "y").stat().st_mode) == 0o644


def test_export_through_a_link_replaces_the_file_and_keeps_the_link(one_study, tmp_path):
    real = tmp_path / "shared" / "tuning.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"version": 1, "entries": []}))
    link = tmp_path / "tuning.json"
    link.symlink_to(real)
    assert main(["export", str(one_study.root), "-o", str(link)]) == 0
    assert link.is_symlink() and len(json.loads(real.read_text())["entries"]) == 1


BAD_ENTRIES = [
    ({"block": None}, "block is None, not int"),
    ({"block": "128"}, "block is '128', not int"),
    ({"footprint": True}, "footprint is True, not int"),
    ({"footprint": 0}, "footprint is 0; it must be positive"),
    ({"median_ms": float("nan")}, "median_ms is nan; it must be positive"),
    ({"gbps": -1.0}, "gbps is -1.0; it must be a finite number >= 0"),
    ({"dtype": "float99"}, "dtype 'float99' is unknown; allowed: float64, float32"),
    ({"meta": {"BLOCK": "big"}}, "meta.BLOCK is 'big'; it must be an integer"),
    ({"meta": []}, "meta is [], not dict"),
    ({"facts": {"sms": 100}}, "'facts.l2_bytes' is missing"),
    ({"rate": "fast", "headline": "tflops"}, "rate is 'fast', not float"),
    ({"rate": 1.0, "headline": "furlongs"}, "headline 'furlongs' is not one of gbps, tflops"),
    ({"rate": 1.0}, "no headline"),
]


@pytest.mark.parametrize("change, said", BAD_ENTRIES)
def test_a_tuning_entry_with_a_wrong_field_is_named(tmp_path, capsys, change, said):
    path = _tuning(tmp_path, [_good_entry(), _good_entry(**change)])
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"sweeper: {path}: entries[1] (copy ")
    assert said in line and line.endswith("`sweeper export STUDY` writes a complete entry")


def test_a_tuning_entry_missing_a_field_is_named(tmp_path, capsys):
    entry = _good_entry()
    del entry["grid_expr"]
    path = _tuning(tmp_path, [entry])
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    assert _one_line(capsys) == (f"sweeper: {path}: entries[0] (copy float32 1MiB on {GPU}): "
                                 "no grid_expr; `sweeper export STUDY` writes a "
                                 "complete entry")


@pytest.mark.parametrize("text, said", [
    ("[1, 2]", "tuning file version None; this sweeper reads version 1"),
    ('{"version": 1, "entries": {}}', "'entries' must be a list of tuned configs"),
    ('{"version": 1, "entries": [7]}', "entries[0]: an entry must be an object, got int"),
])
def test_a_tuning_file_that_is_not_one_is_refused(tmp_path, capsys, text, said):
    path = tmp_path / "tuning.json"
    path.write_bytes(text.encode("latin-1"))
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    assert _one_line(capsys).startswith(f"sweeper: {path}: {said}")


@pytest.mark.parametrize("text, line", [('{"version": 1,\n "entries": [\n', 3),
                                        ("\xff\xfe", 1)])
def test_a_tuning_file_broken_mid_json_is_refused_at_its_line(tmp_path, capsys, text, line):
    path = tmp_path / "tuning.json"
    path.write_bytes(text.encode("latin-1"))
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    assert _one_line(capsys) == (f"sweeper: {path}:{line}: not a readable tuning file: "
                                 "Expecting value (column 1)")


def test_export_refuses_to_merge_into_a_broken_tuning_file_and_leaves_it(one_study, tmp_path,
                                                                         capsys):
    entry = _good_entry()
    del entry["facts"]
    path = _tuning(tmp_path, [entry])
    before = path.read_bytes()
    assert main(["export", str(one_study.root), "-o", str(path)]) == 2
    assert "entries[0] (copy float32 1MiB on Fake GPU): no facts" in _one_line(capsys)
    assert path.read_bytes() == before


@pytest.mark.parametrize("expr, said", [
    ("cdiv(n,", "grid_expr: cannot parse expression 'cdiv(n,'"),
    ("cdiv(n, WARPS)", "grid_expr: unknown name 'WARPS'"),
    ("n // 0", "grid_expr: division by zero"),
    ("n - n", "grid_expr 'n - n' gives 0 programs at 4MiB; a launch needs at least one"),
])
def test_a_hand_edited_grid_expression_is_named_with_its_entry(tmp_path, expr, said):
    path = _tuning(tmp_path, [_good_entry(grid_expr=expr)])
    with pytest.raises(SweeperError) as err:
        tuned("copy", dtype="float32", footprint=4 << 20, gpu=GPU, path=path)
    assert str(err.value).startswith(f"{path}: entries[0] (copy float32 1MiB on {GPU}): ")
    assert said in str(err.value)


@pytest.mark.parametrize("footprint, said", [
    ("0B", "--footprint: '0B' is not a footprint; allowed: a positive size (e.g. 256MiB)"),
    ("0", "--footprint: '0' is not a footprint; allowed: a positive size"),
    ("-1MiB", "--footprint: '-1MiB' is not a size; allowed: an integer with a unit"),
    ("lots", "--footprint: 'lots' is not a size"),
])
def test_tuned_refuses_a_footprint_that_is_not_positive(tmp_path, capsys, footprint, said):
    path = _tuning(tmp_path, [_good_entry()])
    assert main(["tuned", "copy", f"--footprint={footprint}", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    assert _one_line(capsys).startswith(f"sweeper: {said}")


def test_tuned_api_refuses_a_bad_footprint_or_dtype(tmp_path):
    path = _tuning(tmp_path, [_good_entry()])
    for footprint in (0, -4096, 1.5, True, "0B"):
        with pytest.raises(SweeperError, match="give a positive number of bytes"):
            tuned("copy", dtype="float32", footprint=footprint, gpu=GPU, path=path)
    with pytest.raises(SweeperError, match="footprint: 'lots' is not a size; allowed: an "
                                           "integer with a unit of"):
        tuned("copy", dtype="float32", footprint="lots", gpu=GPU, path=path)
    # a size as text, as the message's example and `sweeper tuned --footprint` write it
    assert tuned("copy", dtype="float32", footprint="4KiB", gpu=GPU, path=path) == \
        tuned("copy", dtype="float32", footprint=4096, gpu=GPU, path=path)
    with pytest.raises(SweeperError, match="unknown dtype 'float99'; allowed: float64"):
        tuned("copy", dtype="float99", footprint=4096, gpu=GPU, path=path)
    with pytest.raises(SweeperError, match=r"footprint 3 B is less than one float32 element "
                                           r"\(4 bytes\); give at least that"):
        tuned("copy", dtype="float32", footprint=3, gpu=GPU, path=path)
    # 12001 bytes were looked up as 3000 elements, unsaid
    with pytest.raises(SweeperError, match=r"footprint 12001 B is no whole number of float32 "
                                           r"elements; allowed: a multiple of 4 bytes "
                                           r"\(e.g. 12000\)"):
        tuned("copy", dtype="float32", footprint=12001, gpu=GPU, path=path)


def test_tuned_blames_a_footprint_under_one_element_not_the_tuning_file(tmp_path, capsys):
    path = _tuning(tmp_path, [_good_entry()])
    assert main(["tuned", "copy", "--footprint=3", "--dtype", "fp32", "--gpu", GPU,
                 "--tuning", str(path)]) == 2
    assert _one_line(capsys).startswith("sweeper: footprint 3 B is less than one float32 "
                                        "element (4 bytes)")


def test_a_tuning_file_that_is_a_device_is_refused_before_reading(capsys):
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 "/dev/zero"]) == 2
    assert _one_line(capsys) == ("sweeper: /dev/zero: not a regular file; a tuning file is a "
                                 "JSON file")


def test_schema_to_dev_full_is_refused(capsys):
    assert main(["schema", "-o", "/dev/full"]) == 2
    assert _one_line(capsys) == ("sweeper: cannot write /dev/full: it is a device, not a "
                                 "regular file; give a file path")


def test_a_cache_that_cannot_be_written_is_left_as_it_was(tmp_path, monkeypatch):
    """sweeper's caches (built binaries, the plan's measured costs) are a convenience: a
    full disk leaves the old file and the run goes on."""
    path = tmp_path / "cache" / "costs.json"
    fsio.write_cache(path, {"a": 1}, indent=1)
    assert fsio.read_cache(path) == {"a": 1}

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.os, "write", full)
    fsio.write_cache(path, {"a": 2}, indent=1)                  # no error
    monkeypatch.undo()
    assert fsio.read_cache(path) == {"a": 1}
