"""Files written whole: every file sweeper writes goes through sweeper.fsio.atomic_write
(temp + fsync + rename); a full disk leaves each file as it was, with one line and exit 1.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sweeper import ceilings, fsio
from sweeper.cli import main
from sweeper.errors import WriteError

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"


def run_replay(studies: Path, blocks: str = "512,1024") -> int:
    """``sweeper run`` of spaces/copy.yaml with ``BLOCK`` values ``blocks``, replayed."""
    return main(["run", "spaces/copy.yaml", "--device", f"replay:{TABLE}", "-p",
                 f"BLOCK={blocks}", "--studies-dir", str(studies), "--quiet", "--no-report"])


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
    with pytest.raises(WriteError, match=rf"^cannot write {tmp_path}: it is a folder; give the "
                                         r"path of a file$"):
        fsio.atomic_write(tmp_path, "x")


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
