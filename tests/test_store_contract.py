"""One contract, two stores: the journal in a study folder and a study in PostgreSQL (a
real server the session starts, see tests/pgserver.py) keep the same promises, and the
claims give each config to one worker, also when workers run at once or die mid-trial."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import time
import uuid
import warnings
from collections import Counter

import pytest

from sweeper.errors import StudyError, StudyWarning, SweeperError
from sweeper.finals import FinalRecord
from sweeper.measure import summarize
from sweeper.space import Problem
from sweeper.store import BaselineRecord, DriftRecord, DutyRecord, StudyStore
from sweeper.store._base import Storage, claim_key, claimed, record_key
from sweeper.store._claims_file import BUSY_RUN, Claim, busy, worker_taken
from sweeper.store._open import copy_study, open_storage
from sweeper.trial import TrialStatus
from tests import store_workers
from tests.test_journal import META, trial
from tests.test_records import every_kind

BACKENDS = ["journal", "postgresql"]


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    """(spec, root) of a fresh study in each store: ``spec`` is what --storage would say."""
    if request.param == "journal":
        return None, tmp_path / "s"
    url = request.getfixturevalue("postgres_url")
    return url, tmp_path / f"s{uuid.uuid4().hex[:12]}"


def fresh(backend) -> Storage:
    spec, root = backend
    return open_storage(spec, root)


#: META, its axes holding the labels of the workers' keys too (store_workers.keys).
WORKED = {**META, "axes": {**META["axes"], "block": [*META["axes"]["block"],
                                                     *map(str, range(24))]}}


def make(backend, meta=None) -> Storage:
    store = fresh(backend)
    store.create(meta or {**WORKED, "study": store.name})
    return store


def test_a_study_is_created_and_its_metadata_read_and_updated(backend):
    store = fresh(backend)
    assert not store.exists()
    with pytest.raises(StudyError, match=r"no study here|no such study"):
        store.meta()
    store.create({**META, "study": store.name})
    assert store.exists() and fresh(backend).exists()
    store.update_meta(resumed=["2026-12-01T10:00:00+00:00"], last_run={"measured": 3})
    assert fresh(backend).meta() == {**META, "study": store.name,
                                     "resumed": ["2026-12-01T10:00:00+00:00"],
                                     "last_run": {"measured": 3}}


def test_every_record_kind_reads_back_equal_in_order(backend):
    store = make(backend)
    records = every_kind()
    for record in records:
        store.append(record)
    store.close()
    again = fresh(backend)
    trials, baselines = again.records()
    assert trials == [r for r in records if r.kind == "trial"]
    assert baselines == [r for r in records if r.kind == "baseline"]
    assert again.read(FinalRecord) == [records[3]]
    assert again.read(DriftRecord) == [records[4]]
    assert again.read(DutyRecord) == [records[5]]
    assert [d["kind"] for d in again.raw_records()] == [r.kind for r in records]


def test_a_resumed_study_appends_after_what_it_holds(backend):
    store = make(backend)
    store.open_journal()
    store.append(trial(0))
    store.close()
    again = fresh(backend)
    again.open_journal()
    again.append(trial(1, block=64))
    again.close()
    assert [t.number for t in fresh(backend).records()[0]] == [0, 1]


@pytest.mark.parametrize("bad, reason", [
    (trial(0), r"cannot record a trial record: trial #0 again \(first on line 1\)"),
    (dataclasses.replace(trial(1), samples_ms="fast"), r"cannot record a trial record: .*"
                                                        r"samples_ms"),
    (dataclasses.replace(every_kind()[3], winner=7),
     r"cannot record a final record: .*7"),
])
def test_a_bad_record_is_refused_and_nothing_is_kept(backend, bad, reason):
    store = make(backend)
    store.append(trial(0))
    with pytest.raises(StudyError, match=reason):
        store.append(bad)
    store.close()
    assert fresh(backend).raw_records() == [trial(0).to_json()]


def test_a_key_is_claimed_once_renewed_by_its_holder_and_never_again_once_recorded(backend):
    store = make(backend)
    store.share()
    key = store_workers.keys(1)[0]
    assert store.claim(key, "a", 30) is Claim.TAKEN
    assert store.claim(key, "b", 30) is Claim.HELD
    assert store.claim(key, "a", 30) is Claim.TAKEN    # its holder: renewed
    assert store.heartbeat(key, "a", 30) and not store.heartbeat(key, "b", 30)
    assert store.record_claimed(key, "b", store_workers.fake_trial(key, "b")) is None
    kept = store.record_claimed(key, "a", store_workers.fake_trial(key, "a"))
    assert kept is not None and kept.number == 0 and kept.reason == "a"
    assert store.claim(key, "b", 30) is store.claim(key, "a", 30) is Claim.DONE
    assert not store.heartbeat(key, "a", 30)
    assert [t.reason for t in fresh(backend).records()[0]] == ["a"]


def test_a_claim_not_renewed_for_its_lease_goes_to_another_worker(backend):
    store = make(backend)
    store.share()
    first, second = store_workers.keys(2)
    assert store.claim(first, "a", 0.2) and store.claim(second, "a", 30)
    time.sleep(0.4)
    assert store.claim(first, "b", 30) and not store.claim(second, "b", 30)
    assert store.record_claimed(first, "a", store_workers.fake_trial(first, "a")) is None
    assert store.record_claimed(first, "b", store_workers.fake_trial(first, "b")).number == 0
    store.release(second, "a")
    assert store.claim(second, "b", 30)


def test_a_key_recorded_without_a_claim_is_never_claimed(backend):
    store = make(backend)
    key = store_workers.keys(1)[0]
    store.append(dataclasses.replace(store_workers.fake_trial(key, "run"), number=5))
    store.close()
    assert not fresh(backend).claim(key, "a", 30)


def test_a_config_recorded_only_on_an_earlier_kernel_source_is_claimed_on_the_new_one(
        backend):
    """A study resumed with ``--force`` after its kernel changed claims configs on the new
    source (:func:`claim_key` with it): one whose trials all name an earlier source (or
    none) is claimable, and done once a trial on the new source is recorded; its claim
    without a source is done as before."""
    store = make(backend)
    store.share()
    first, second = store_workers.keys(2)
    old, new = "0" * 16, "1" * 16
    store.append(dataclasses.replace(store_workers.fake_trial(first, "run"), number=0,
                                     source_hash=old))
    store.append(dataclasses.replace(store_workers.fake_trial(second, "run"), number=1))
    assert store.claim(first, "a", 30) is store.claim(second, "a", 30) is Claim.DONE
    on_new = claim_key(json.loads(first), new)
    assert claimed(on_new) == (first, new) and claimed(first) == (first, None)
    assert store.claim(on_new, "a", 30) is Claim.TAKEN
    assert store.claim(on_new, "b", 30) is Claim.HELD
    kept = store.record_claimed(on_new, "a", dataclasses.replace(
        store_workers.fake_trial(first, "a"), source_hash=new))
    assert kept is not None and kept.number == 2
    assert store.claim(on_new, "b", 30) is Claim.DONE
    assert store.claim(claim_key(json.loads(second), new), "b", 30) is Claim.TAKEN
    assert [t.source_hash for t in fresh(backend).records()[0]] == [old, None, new]


def test_a_trial_to_be_measured_again_lets_its_config_be_recorded_once_more(backend):
    """A trial whose worker was killed from outside (``retry``) leaves its config to be
    measured again: claimed as any config not measured yet, recorded once more, then done;
    a third trial of it is refused as any config's second.  Every reader sees that
    config's one trial, the later; the study keeps both, and its trial budget counts
    one."""
    store = make(backend)
    store.share()
    killed = dataclasses.replace(trial(0, status=TrialStatus.CRASHED), samples_ms=[],
                                 stats=None, gbps=0.0, reason="killed", retry=True)
    store.append(killed)
    store.append(trial(1))
    key = claim_key(killed.key())
    assert store.claim(key, "a", 30) is Claim.TAKEN
    again = store.record_claimed(key, "a", dataclasses.replace(trial(0), number=9))
    assert again is not None and again.number == 2
    assert store.claim(key, "b", 30) is Claim.DONE
    with pytest.raises(StudyError, match=r"trial #3 measures the config of trial #2 "):
        store.append(dataclasses.replace(trial(0), number=3))
    store.close()
    reader = fresh(backend)
    assert [(t.number, t.retry) for t in reader.records()[0]] == [(1, False), (2, False)]
    assert [d.get("retry", False) for d in reader.raw_records()] == [True, False, False]
    assert reader.trials_counted() == 2


def _spawn() -> multiprocessing.context.SpawnContext:
    return multiprocessing.get_context("spawn")     # a fresh interpreter: no inherited pool


def test_four_concurrent_workers_record_every_key_exactly_once(backend):
    spec, root = backend
    make(backend).close()
    todo = store_workers.keys(24)
    ctx = _spawn()
    start = ctx.Barrier(4)      # a spawned worker's imports take seconds under load
    workers = [ctx.Process(target=store_workers.drain,
                           args=(spec, str(root), f"w{i}", todo, 30, 60.0, start))
               for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0] * 4
    trials = fresh(backend).records()[0]
    assert sorted(Counter(t.key() for t in trials).values()) == [1] * 24
    assert sorted(t.number for t in trials) == list(range(24))
    assert len({t.reason for t in trials}) > 1           # the work was shared


def test_a_worker_killed_mid_trial_loses_its_key_to_another_at_once(backend, tmp_path):
    spec, root = backend
    make(backend).close()
    todo = store_workers.keys(6)
    ready = tmp_path / "ready"
    ctx = _spawn()
    holder = ctx.Process(target=store_workers.hold,
                         args=(spec, str(root), "doomed", todo[0], 600, str(ready)))
    holder.start()
    end = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert ready.exists(), "the holder never claimed its key"
    heir = fresh(backend)
    assert heir.claim(todo[0], "heir", 30) is Claim.HELD       # its holder lives
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    assert holder.exitcode == -signal.SIGKILL
    # its lease runs ten minutes more, but its process is gone: the key is free at once
    # (a database ends a killed client's session a moment after its socket closes)
    end = time.monotonic() + 10
    while (got := heir.claim(todo[0], "heir", 30)) is Claim.HELD and time.monotonic() < end:
        time.sleep(0.05)
    assert got is Claim.TAKEN
    heir.close()
    store_workers.drain(spec, str(root), "heir", todo, 30)
    trials = fresh(backend).records()[0]
    assert Counter(t.key() for t in trials) == Counter(
        store_workers.fake_trial(k, "").key() for k in todo)
    assert {t.reason for t in trials} == {"heir"}


def test_a_worker_id_is_held_by_one_live_process_at_a_time(backend):
    make(backend).close()
    first = fresh(backend)
    first.enlist("w")
    first.enlist("w")                                   # its own: kept
    other = fresh(backend)
    with pytest.raises(StudyError) as err:
        other.enlist("w")
    assert str(err.value) == f"{where(other)}: {worker_taken('w')}"
    with pytest.raises(StudyError):
        other.claim(store_workers.keys(1)[0], "w", 30)  # a claim enlists its worker
    other.enlist("v")
    first.close()
    other.enlist("w")
    other.close()


def test_a_study_copied_between_the_stores_reads_back_equal(postgres_url, tmp_path):
    journal = StudyStore(tmp_path / "j" / "copied")
    journal.create({**META, "study": "copied"})
    for record in every_kind():
        journal.append(record)
    journal.close()
    name = f"copied{uuid.uuid4().hex[:8]}"
    base = open_storage(postgres_url, tmp_path / "db" / name)
    source = StudyStore(tmp_path / "j" / "copied")
    assert copy_study(source, base) == 6
    assert base.raw_records() == source.raw_records()
    # copied under another name, the study is that name's (sweeper.store._meta.named)
    assert base.meta() == {**source.meta(), "study": name, "copied_from": "copied"}
    back = StudyStore(tmp_path / "back" / name)
    assert copy_study(base, back) == 6
    assert back.meta() == base.meta()
    assert back.journal_path.read_bytes() == source.journal_path.read_bytes()
    with pytest.raises(StudyError, match=rf"a study '{name}' is there already"):
        copy_study(source, base)


def test_a_storage_that_is_not_a_database_url_is_refused(tmp_path):
    with pytest.raises(SweeperError, match=r"^--storage: 'mysql://x' is not a storage; "
                                           r"allowed: a postgresql://USER@HOST/DB URL"):
        open_storage("mysql://x", tmp_path / "s")


def baseline(median: float, footprint: int = 1 << 20) -> BaselineRecord:
    """The torch baseline of a float16 problem with median ``median``."""
    samples = [median] * 3
    return BaselineRecord.from_samples("torch copy_", Problem("float16", footprint), samples,
                                       summarize(samples), 1.0)


def test_a_problems_baseline_is_kept_once_whichever_worker_measured_it(backend):
    make(backend).close()
    first, second = fresh(backend), fresh(backend)
    first.share()
    second.share()
    first.append(baseline(1.0))
    second.append(baseline(2.0))                       # the same problem: nothing kept
    second.append(baseline(3.0, footprint=1 << 21))    # another problem: kept
    first.append(baseline(4.0, footprint=1 << 21))
    first.close()
    second.close()
    again = fresh(backend)
    assert [b.stats.median for b in again.records()[1]] == [1.0, 3.0]
    assert [d["stats"]["median"] for d in again.raw_records()] == [1.0, 3.0]
    again.open_journal()                               # a run's append: checked the same way
    again.append(baseline(5.0))
    again.close()
    assert len(fresh(backend).raw_records()) == 2


def test_readers_of_a_study_holding_a_baseline_twice_take_the_first(backend, tmp_path):
    older = StudyStore(tmp_path / "older" / "s")
    older.create({**META, "study": "s"})
    older.journal_path.write_text("".join(
        json.dumps(b.to_json()) + "\n" for b in (baseline(1.0), baseline(2.0),
                                                 baseline(3.0, footprint=1 << 21))))
    target = fresh(backend)
    assert copy_study(older, target) == 3               # a copy keeps the study as it is
    for store in (older, fresh(backend)):
        assert [b.stats.median for b in store.records()[1]] == [1.0, 3.0]
        assert [b.stats.median for b in store.read(BaselineRecord)] == [1.0, 3.0]
        assert len(store.raw_records()) == 3


def test_two_processes_resuming_at_once_each_keep_every_entry(backend):
    spec, root = backend
    make(backend).close()
    ctx = _spawn()
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=store_workers.resume, args=(spec, str(root), w, 60, start))
             for w in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    meta = fresh(backend).meta()
    assert sorted(meta["resumed"]) == sorted(f"{w}:{i}" for w in "ab" for i in range(60))
    for w in "ab":                                      # each one's own entries in order
        assert [r for r in meta["resumed"] if r[0] == w] == [f"{w}:{i}" for i in range(60)]
    assert meta["last_command"] in ("a 59", "b 59") and meta["study"] == fresh(backend).name


def where(store: Storage) -> str:
    """How a refusal names the study: its folder, or its database and name."""
    return str(store.root) if isinstance(store, StudyStore) else store.location


def test_a_run_holds_its_study_alone_and_workers_share_theirs(backend):
    make(backend).close()
    run = fresh(backend)
    run.open_journal()
    other = fresh(backend)
    with pytest.raises(StudyError) as err:
        other.open_journal()
    assert str(err.value) == f"{where(other)}: {busy()}"
    with pytest.raises(StudyError) as err:
        other.share()
    assert str(err.value) == f"{where(other)}: {BUSY_RUN}"
    run.close()
    workers = [fresh(backend), fresh(backend)]
    for w in workers:
        w.share()
    with pytest.raises(StudyError, match="another sweeper process is running this study"):
        fresh(backend).open_journal()
    for w in workers:
        w.close()
    last = fresh(backend)
    last.open_journal()
    last.close()


def test_a_killed_runs_hold_on_its_study_dies_with_it(backend, tmp_path):
    spec, root = backend
    make(backend).close()
    ready = tmp_path / "ready"
    holder = _spawn().Process(target=store_workers.take, args=(spec, str(root), str(ready)))
    holder.start()
    end = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert ready.exists(), "the holder never took the study"
    with pytest.raises(StudyError, match="another sweeper process is running this study"):
        fresh(backend).open_journal()
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    end = time.monotonic() + 10       # the server ends the session once it sees the socket shut
    while True:
        store = fresh(backend)
        try:
            store.open_journal()
            break
        except StudyError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    store.close()


def _unchecked(store: Storage, data: dict) -> None:
    """Add ``data`` to the study's records as it is, unchecked (a hand edit, another tool,
    a study written before the check)."""
    line = json.dumps(data)
    if isinstance(store, StudyStore):
        with open(store.journal_path, "a") as f:
            f.write(line + "\n")
        return
    import sqlalchemy as sa

    from sweeper.store._postgres import RECORDS

    with store.engine.begin() as c:
        c.execute(sa.insert(RECORDS).values(study=store.name, kind=data["kind"],
                                            number=data.get("number"), line=line,
                                            key=record_key(data)))


def test_a_record_outside_the_study_is_set_aside_by_every_reader(backend):
    store = make(backend)
    store.append(trial(0))
    store.append(trial(1))
    store.close()
    alien = {**trial(7).to_json(), "choice": {"grid": "3*sms", "block": "32", "BLOCK": "4096"}}
    _unchecked(store, alien)
    _unchecked(store, {**trial(0).to_json(), "number": 8})         # trial #0's config again
    reader = fresh(backend)
    with pytest.warns(StudyWarning) as caught:
        trials, _ = reader.records()
    assert [t.number for t in trials] == [0, 1]
    assert [(b.number, b.reason) for b in reader.bad_lines()] == [
        (3, "trial #7: grid '3*sms' is not one of the study's labels (sms, 2*sms, 4*sms, "
            "8*sms)"),
        (4, "trial #8 measures the config of trial #0 (line 1) again; the first is kept")]
    assert [str(w.message).split(": ")[0] for w in caught] == [
        f"{reader.location}:3", f"{reader.location}:4"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # a journal moves them aside, as said
        reader.open_journal()
    with pytest.raises(StudyError, match=r"trial #9 measures the config of trial #1 \(line 2\)"):
        reader.append(dataclasses.replace(trial(1), number=9))
    reader.append(trial(2))                         # a run goes on after them
    reader.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [t.number for t in fresh(backend).records()[0]] == [0, 1, 2]


#: a space file whose axes are META's (with those resolving a choice fills in)
SPACE = ("kernel: copy\nparams:\n  grid: [sms, 2*sms, 4*sms, 8*sms]\n"
         "  block: [32, 64, 128, 256]\n  BLOCK: [1024, 2048]\n")


@pytest.mark.parametrize("axes", [{}, {**META["axes"], "BLOCK": ["1024"]}])
def test_axes_damaged_in_the_metadata_refuse_the_study_and_set_no_trial_aside(backend, axes):
    """Metadata whose axes leave out every trial, or a label of the space the study records
    that a trial chooses, is refused by every reader (one line naming the axis and the
    label), rather than those finished trials set aside to be measured again; once the
    axes are restored every trial reads back."""
    store = make(backend, {**META, "space_text": SPACE})
    store.append(trial(0))
    store.append(dataclasses.replace(trial(1), choice={**trial(1).choice, "BLOCK": "2048"}))
    store.close()
    store.update_meta(axes=axes)
    reader = fresh(backend)
    said = (r"its axes leave out every one of the journal's 2 trials \(first .*:1: "
            r"trial #0: axis 'grid' is not one of the study's axes" if not axes else
            r"its axes leave out BLOCK '2048', which the space the study records gives "
            r"and the journal's trials choose \(1 trial, first .*:2\), so .* is damaged; "
            r"restore '2048' to its axis 'BLOCK' \(every label")
    with pytest.raises(StudyError, match=said):
        reader.records()
    store.update_meta(axes=META["axes"])
    assert [t.number for t in fresh(backend).records()[0]] == [0, 1]


def test_a_resumed_study_widens_its_axes_to_the_space_it_runs(backend):
    store = make(backend)
    store.note_resumed("2026-12-01T10:00:00+00:00", {"grid": ["sms", "16*sms"], "WARPS": ["4"]})
    axes = fresh(backend).meta()["axes"]
    assert axes["grid"] == [*META["axes"]["grid"], "16*sms"] and axes["WARPS"] == ["4"]
    store.append(dataclasses.replace(trial(0), choice={**trial(0).choice, "grid": "16*sms",
                                                       "WARPS": "4"}))
    store.close()
    assert fresh(backend).records()[0][0].choice["grid"] == "16*sms"


def test_a_trial_a_full_disk_kept_out_of_the_journal_leaves_its_config_to_claim(
        tmp_path, monkeypatch):
    """A claim is marked done only once its trial is in the journal: a full disk (or a
    kill) between the two leaves the config to the next worker, never done unrecorded."""
    from sweeper.errors import WriteError
    from tests.test_journal import fail_writes

    backend = (None, tmp_path / "s")
    store = make(backend)
    store.share()
    key = store_workers.keys(1)[0]
    assert store.claim(key, "a", 30) is Claim.TAKEN
    with monkeypatch.context() as m:
        fail_writes(m, "trials.jsonl")
        with pytest.raises(WriteError, match="disk full"):
            store.record_claimed(key, "a", store_workers.fake_trial(key, "a"))
    store.close()                           # worker a is gone
    other = fresh(backend)
    other.share()
    assert other.claim(key, "b", 30) is Claim.TAKEN
    assert other.record_claimed(key, "b", store_workers.fake_trial(key, "b")) is not None
    assert [t.reason for t in fresh(backend).records(warn=False)[0]] == ["b"]
