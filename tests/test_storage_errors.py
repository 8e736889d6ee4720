"""A ``--storage`` database that is wrong or fails: a malformed URL is refused in one line
(exit 2, nothing written), a host that never answers gives up within its connect timeout,
a lock held too long ends at the lock timeout, and the server stopping mid-run is one line
(exit 1) with every trial so far kept for the resume; no password is ever printed or
recorded."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import sweeper
from sweeper.cli import main
from sweeper.errors import SweeperError
from sweeper.store._open import open_storage
from sweeper.store._url import CONNECT_TIMEOUT_S, mask_url, with_timeouts

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
SPACE = ["spaces/copy.yaml", "-p", "BLOCK=512,1024", "--device", f"replay:{TABLE}"]
SECRET = "s3cret"


def with_password(url: str) -> str:
    """The test server's URL with a password in it (its trust login ignores it)."""
    return url.replace("postgresql://sweeper@", f"postgresql://sweeper:{SECRET}@")


def one_line(err: str) -> str:
    """The one line ``err`` must be, with no traceback and no password."""
    assert "Traceback" not in err and SECRET not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("url", [
    f"postgresql://u:{SECRET}@[::1:5/db",                  # an IPv6 host never closed
    f"postgresql://u:{SECRET}@host:notaport/db",
    f"postgresql://u:{SECRET}@host:/db",
    f"postgresql://u:{SECRET}@host:99999/db",
    f"postgresql://u:{SECRET}@host:0/db",
    f"postgresql://u:{SECRET}@x@host/db",                  # an @ in the password, unescaped
    f"postgresql://u:{SECRET}@ho st/db",
    f"postgresql://u:{SECRET}@host/db?bogus=1",
    f"postgresql://u:{SECRET}@host/db?connect_timeout=soon",
    f"postgres://u@host/db?password={SECRET}&bogus=1",
    f"mysql://u:{SECRET}@host/db",
    f"postgresql://u:{SECRET}@/db?host=/nowhere&port=notaport",     # a socket's port
    f"postgresql://u:{SECRET}@/db?host=/a,/b,/c&port=1,2",
])
def test_a_malformed_url_is_one_line_and_writes_nothing(url, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    studies = tmp_path / "studies"
    assert main(["run", *SPACE, "--storage", url, "--studies-dir", str(studies)]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out
    line = one_line(err)
    assert line.startswith("sweeper: ") and "***" in line
    assert not studies.exists()


def test_the_api_refuses_a_malformed_url_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(SweeperError) as caught:
        sweeper.run("spaces/copy.yaml", device=f"replay:{TABLE}", params=["BLOCK=512"],
                    studies_dir=tmp_path / "studies", quiet=True,
                    storage=f"postgresql://u:{SECRET}@[::1:5/db")
    one_line(str(caught.value))
    assert not (tmp_path / "studies").exists()


def test_mask_url_hides_every_secret_the_same_way():
    assert mask_url(f"postgresql://u:{SECRET}@h:5/db") == "postgresql://u:***@h:5/db"
    assert mask_url(f"postgresql://u:{SECRET}@[::1:5/db") == "postgresql://u:***@[::1:5/db"
    assert mask_url(f"postgresql://u:s3@{SECRET}@h/db") == "postgresql://u:***@h/db"
    query = mask_url(f"postgresql://u@h/db?sslpassword={SECRET}&password={SECRET}")
    assert SECRET not in query and {"sslpassword=***", "password=***"} <= set(
        query.partition("?")[2].split("&"))
    assert mask_url(f"--storage=postgresql://u:{SECRET}@h/db") == \
        "--storage=postgresql://u:***@h/db"
    assert mask_url("spaces/copy.yaml") == "spaces/copy.yaml"


def test_every_connection_gets_time_limits_unless_the_url_or_environment_sets_them(
        monkeypatch):
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("PGOPTIONS", raising=False)
    plain = with_timeouts(sa.engine.make_url("postgresql://u@h/db")).query
    assert plain["connect_timeout"] == str(CONNECT_TIMEOUT_S) == "10"
    assert "statement_timeout=" in plain["options"] and "lock_timeout=" in plain["options"]
    own = with_timeouts(sa.engine.make_url(
        "postgresql://u@h/db?connect_timeout=3&options=-c%20lock_timeout%3D1s")).query
    assert own["connect_timeout"] == "3"
    assert own["options"].startswith("-c lock_timeout=1s ")
    assert own["options"].count("lock_timeout") == 1 and "statement_timeout" in own["options"]
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "4")
    monkeypatch.setenv("PGOPTIONS", "-c search_path=x")
    env = with_timeouts(sa.engine.make_url("postgresql://u@h/db")).query
    assert "connect_timeout" not in env and env["options"].startswith("-c search_path=x -c ")


@pytest.fixture
def silent_host() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers; yields the port."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:                # closed at the end of the test
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        # close() alone leaves the thread blocked in accept() (Linux) until join's 5 s
        # timeout; shutdown() wakes it at once, with an OSError
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for conn in held:
            conn.close()
        thread.join(timeout=5)


def test_a_host_that_never_answers_gives_up_within_the_connect_timeout(
        silent_host, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    studies = tmp_path / "studies"
    url = f"postgresql://u:{SECRET}@127.0.0.1:{silent_host}/db?connect_timeout=2"
    start = time.monotonic()
    assert main(["run", *SPACE, "--storage", url, "--studies-dir", str(studies)]) == 1
    assert time.monotonic() - start < 2 + 8
    out, err = capsys.readouterr()
    assert SECRET not in out
    assert one_line(err).startswith(f"sweeper: postgresql://u:***@127.0.0.1:{silent_host}/db")
    assert not studies.exists()


def test_a_lock_held_past_the_lock_timeout_is_one_line(postgres_url, tmp_path, monkeypatch,
                                                       capsys):
    monkeypatch.chdir(ROOT)
    name = f"locked{uuid.uuid4().hex[:8]}"
    url = with_password(postgres_url)
    common = [*SPACE, "--studies-dir", str(tmp_path), "--study", name, "--quiet",
              "--no-report", "--trials", "1"]
    assert main(["run", *common, "--storage", url]) == 0
    capsys.readouterr()
    engine = sa.create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.begin() as c:              # another process holding the study's row
            c.execute(sa.text("SELECT 1 FROM sweeper_studies WHERE name = :n FOR UPDATE"),
                      {"n": name})
            start = time.monotonic()
            assert main(["run", *common, "--storage",
                         f"{url}&options=-c%20lock_timeout%3D1s"]) == 1
            assert time.monotonic() - start < 30
    finally:
        engine.dispose()
    out, err = capsys.readouterr()
    assert SECRET not in out
    assert one_line(err).startswith("sweeper: postgresql://sweeper:***@")


def test_no_password_is_printed_or_recorded(postgres_url, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    name = f"secret{uuid.uuid4().hex[:8]}"
    url = with_password(postgres_url)
    common = ["--storage", url, "--studies-dir", str(tmp_path), "--study", name]
    assert main(["worker", *SPACE, *common, "--trials", "2"]) == 0
    assert main(["run", *SPACE, *common, "--trials", "3"]) == 0
    assert main(["report", name, *common[:4]]) == 0
    assert main(["copy-study", name, *common[:4], "--to", str(tmp_path / "copy")]) == 0
    assert main(["copy-study", name, "--studies-dir", str(tmp_path / "copy"),
                 "--to", url]) == 2                                     # there already
    out, err = capsys.readouterr()
    assert SECRET not in out + err and "sweeper:***@" in out + err
    store = open_storage(url, tmp_path / name)
    meta = store.meta()
    assert SECRET not in repr(meta) and SECRET not in store.location
    assert meta["command"].startswith("sweeper worker ") and "sweeper:***@" in meta["command"]
    assert meta["last_run"]["command"].startswith("sweeper run ")
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


def test_the_server_stopping_mid_run_is_one_line_and_the_resume_loses_nothing(tmp_path):
    from tests import pgserver

    if pgserver.missing():
        pytest.skip(pgserver.missing())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with pgserver.running() as server:
        url = with_password(server.url)
        command = [sys.executable, "-m", "sweeper", "run", "spaces/copy-small.yaml",
                   "--device", "interpret", "--storage", url, "--studies-dir",
                   str(tmp_path), "--no-report"]
        run = subprocess.Popen([*command, "--quiet"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_trials(server.url, 2, run)
            server.stop()
            out, err = run.communicate(timeout=120)
        finally:
            run.kill()
        assert run.returncode == 1, err
        assert SECRET not in out
        assert one_line(err).startswith("sweeper: postgresql://sweeper:***@")
        server.start()
        kept = _trials(server.url)
        assert kept >= 2
        again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr
        assert f"resuming, {kept} trials kept" in again.stdout
        assert SECRET not in again.stdout + again.stderr
        trials = open_storage(server.url, tmp_path / "copy-small-interpret").records()[0]
        assert sorted(t.number for t in trials) == list(range(len(trials)))
        assert len({t.key() for t in trials}) == len(trials) > kept


def _trials(url: str) -> int:
    """How many trial records the server's study tables hold (0 before they exist)."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as c:
            return int(c.execute(sa.text("SELECT count(*) FROM sweeper_records "
                                         "WHERE kind = 'trial'")).scalar() or 0)
    except sa.exc.ProgrammingError:            # no tables yet
        return 0
    finally:
        engine.dispose()


def _wait_for_trials(url: str, count: int, run: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while _trials(url) < count:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run recorded no trials in 120 s"
        time.sleep(0.2)


def test_a_heartbeat_the_database_fails_is_tried_again_not_a_thread_traceback(monkeypatch):
    """The claim's heartbeat runs on a thread, where a StorageError would print a
    traceback and end the renewals: it is tried again at the next beat instead."""
    import threading

    from sweeper.errors import StorageError
    from sweeper.store import Claim
    from sweeper.sweep._claims import Claims

    beats, crashed = [], []
    monkeypatch.setattr(threading, "excepthook", crashed.append)

    class Flaky:
        def claim(self, key, worker_id, lease_s):
            return Claim.TAKEN

        def heartbeat(self, key, worker_id, lease_s):
            beats.append(key)
            if len(beats) <= 2:
                raise StorageError("postgresql://…: the server stopped answering")
            return True

        def record_claimed(self, key, worker_id, record):
            return record

    claims = Claims(Flaky(), "w0", lease_s=0.03)             # a beat every 10 ms
    assert claims.take(("block=32",)) is Claim.TAKEN
    for _ in range(300):                                    # 3 s at most
        if len(beats) >= 4:
            break
        threading.Event().wait(0.01)
    assert claims.keep(("block=32",), "the record") == "the record"
    assert len(beats) >= 4 and crashed == []                  # went on after two failures


def test_an_optuna_export_to_a_host_that_never_answers_gives_up_in_one_line(
        silent_host, tmp_path, monkeypatch, capsys):
    """The Optuna export opens its database with the store's limits: the connect timeout
    where the URL sets none (here 2 s), not libpq's wait without end."""
    from sweeper.store import _url

    monkeypatch.chdir(ROOT)
    studies = tmp_path / "studies"
    assert main(["run", *SPACE, "--studies-dir", str(studies), "--quiet", "--no-report"]) == 0
    (study,) = studies.iterdir()
    capsys.readouterr()
    monkeypatch.setattr(_url, "CONNECT_TIMEOUT_S", 2)
    url = f"postgresql://u:{SECRET}@127.0.0.1:{silent_host}/db"
    start = time.monotonic()
    assert main(["export", str(study), "--format", "optuna", "--to", url]) != 0
    assert time.monotonic() - start < 2 + 8
    out, err = capsys.readouterr()
    assert SECRET not in out
    assert one_line(err).startswith(f"sweeper: --to postgresql://u:***@127.0.0.1:{silent_host}")


def test_a_database_that_does_not_exist_is_bad_input_not_a_failure_to_retry(
        postgres_url, tmp_path, monkeypatch, capsys):
    """A misspelt database name said to run the same command again, which cannot help:
    the server's refusal of the database, user or password is the URL's fault (exit 2)."""
    monkeypatch.chdir(ROOT)
    base, _, query = with_password(postgres_url).partition("?")
    url = base.rsplit("/", 1)[0] + "/nodb" + (f"?{query}" if query else "")
    studies = tmp_path / "studies"
    assert main(["run", *SPACE, "--storage", url, "--studies-dir", str(studies)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("sweeper: postgresql://sweeper:***@") and "/nodb" in line
    assert 'database "nodb" does not exist' in line
    assert line.endswith("; check the URL's database, user and password")
    assert "run the same command again" not in line and not studies.exists()


@pytest.mark.parametrize("parameter, says", [
    ("port=99999", 'invalid port number: "99999"'),
    ("sslmode=bogus", 'invalid sslmode value: "bogus"'),
    ("options=-c%20statement_timeout%3Dsoon", 'parameter "statement_timeout": "soon"'),
    ("options=-c%20statment_timeout%3D5min", 'parameter "statment_timeout"')])
def test_a_parameter_the_driver_or_server_refuses_is_bad_input_not_a_failure_to_retry(
        parameter, says, postgres_url, tmp_path, monkeypatch, capsys):
    """A parameter's value libpq refuses before trying a host, or a server setting the
    server refuses (a typo in README's ``options=-c statement_timeout=5min``), is the URL's
    fault: exit 2, nothing written, never "run the same command again"."""
    monkeypatch.chdir(ROOT)
    url = with_password(postgres_url)
    url = url.replace("port=5432", parameter) if parameter.startswith("port=") else \
        f"{url}&{parameter}"
    studies = tmp_path / "studies"
    assert main(["run", *SPACE, "--storage", url, "--studies-dir", str(studies)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("sweeper: postgresql://sweeper:***@") and says in line, line
    assert "run the same command again" not in line and not studies.exists()


def test_copy_study_to_a_database_that_cannot_be_reached_says_nothing_was_copied(
        tmp_path, capsys):
    """copy-study is all or nothing: its failure is not worded as a run's ("every record
    appended before is kept there"), it says nothing was copied."""
    from tests.test_report import copy_study

    store = copy_study(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as closed:      # a port nobody listens on
        port = closed.getsockname()[1]
    url = f"postgresql://u:{SECRET}@127.0.0.1:{port}/db?connect_timeout=2"
    assert main(["copy-study", str(store.root), "--to", url,
                 "--studies-dir", str(tmp_path / "studies")]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"sweeper: postgresql://u:***@127.0.0.1:{port}/db")
    assert line.endswith("; nothing was copied (copy-study copies all or nothing): run the "
                         "same command again once the database answers")
    assert "appended" not in line
