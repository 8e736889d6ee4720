"""Records typed end to end: every kind of journal record is written and read back as the
same typed object (a Config, Stats, flags and stop reasons by their kinds, a Window, a
final's rows), a journal written before records were typed loads into those objects, and
a record whose kinds or config do not fit is set aside with its reason.

``tests/data/journal-before-kinds.jsonl`` holds its first 8 lines from the H200 study
``studies/h200-copy-fp32`` (invalid trials, the torch baseline, a measured trial); the
rest was written by sweeper before records were typed: flags and stop reasons as text
alone, every flag and stop reason it produced, clocks, a final with its baseline, drift
and duty records as dicts, and a config older than the cache axis.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import warnings
from pathlib import Path

import pytest

from sweeper.devices._nvml import Window
from sweeper.errors import StudyWarning
from sweeper.finals import FinalBaseline, Finalist, FinalRecord
from sweeper.measure import Duty, Flag, Stats, Stop, StopReason, Timing, TrialFlag, summarize
from sweeper.report import write_report
from sweeper.space import Config, Problem
from sweeper.store import (
    FORMAT,
    BaselineRecord,
    DriftRecord,
    DutyRecord,
    FirstMeasurement,
    ProblemKey,
    StudyStore,
    TrialRecord,
)
from sweeper.store._base import RawRecord
from sweeper.store._journal import parse_line
from sweeper.store._schema import KINDS
from sweeper.trial import TrialStatus

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "tests" / "data" / "journal-before-kinds.jsonl"
SAMPLES = [0.5, 0.51, 0.49, 0.5, 0.52]
WINDOW = Window(polls=2, sm_mhz_mean=1980.0, sm_mhz_min=1980, sm_mhz_max=1980,
                power_w_mean=300.0, power_w_max=310.0, reasons={"sw_power_cap": 0.5})
#: What sweeper writes for each flag and stop reason (trial.py, sweep.py, the stop rule).
FLAG_TEXTS = {
    Flag.UNCONVERGED: "unconverged",
    Flag.L2_RESIDENT: "L2-resident (warm, rotating 3 buffer sets)",
    Flag.LAUNCH_BOUND: "launch-bound: median 4.1 us is within 5x the 3.3 us launch floor; "
                       "try measure.batch or measure.graph",
    Flag.DISCARDED: "3 samples discarded (throttled)",
    Flag.POWER_CAPPED: "power-capped: sw_power_cap in 100% of the NVML polls, SM clock "
                       "1425 MHz on average",
    Flag.RETIMED: "re-timed: the first run was beyond a limit (faster than physics allows)",
    Flag.SUSPICIOUS: "suspicious: 5000 GB/s is above the calibrated 4297 GB/s ceiling",
}
STOP_TEXTS = {
    Stop.FIXED: "fixed: 5 samples (one burst of the cool-down schedule; 50 asked)",
    Stop.CONVERGED: "converged: ci 0.41% < 0.5% after 23 samples",
    Stop.UNCONVERGED: "unconverged: max_time 1 s reached with stdrel 0.61% after 5 samples",
    Stop.ABANDONED: "abandoned: after 10 samples the median's CI starts at 0.9 ms",
    Stop.REPLAYED: "replayed",
}


def every_kind() -> list:
    """One record of each kind, every typed field filled."""
    stats = summarize(SAMPLES)
    config = Config(Problem("float16", 1 << 20, (("n", 1 << 19),)), grid=264, block=128,
                    meta={"BLOCK": 2048}, cache="warm")
    trial = TrialRecord(
        number=0, choice={"grid": "2*sms", "block": "128", "BLOCK": "2048"},
        status=TrialStatus.OK, config=config, cold_s=0.5, samples_ms=SAMPLES, stats=stats,
        gbps=4.2, started="2026-12-01T10:00:00+00:00", wall_s=0.1,
        stop_reason=StopReason(Stop.CONVERGED, STOP_TEXTS[Stop.CONVERGED]),
        discarded=3, discard_reasons=["SM clock 900 MHz < 75% of its usual 1980 MHz"],
        state={"start": {"sm_mhz": 1980}}, energy_j=0.15, power_w=300.0, power_readings=2,
        flags=[TrialFlag(kind, text) for kind, text in FLAG_TEXTS.items()], clocks=WINDOW,
        duty="a 1 s cool-down before each config's samples")
    failed = TrialRecord(number=1, choice={"grid": "sms", "block": "32", "BLOCK": "2048"},
                         status=TrialStatus.CRASHED, reason="RuntimeError: boom")
    baseline = BaselineRecord.from_samples(
        "torch copy_", Problem("float16", 1 << 20, (("n", 1 << 19),)), SAMPLES, stats, 4.0,
        cache="warm",
        stop_reason=StopReason(Stop.FIXED, STOP_TEXTS[Stop.FIXED]))
    final = FinalRecord(
        problem=ProblemKey("float16", 1 << 20, "warm", (("n", 1 << 19),)),
        finalists=[Finalist(number=0, samples_ms=SAMPLES, stats=stats, gbps=4.1)],
        tied=[0], winner=0,
        baseline=FinalBaseline(name="torch copy_", samples_ms=SAMPLES, stats=stats),
        duty="a 1 s cool-down before each config's samples", after_trial=1)
    drift = DriftRecord(number=0, samples_ms=SAMPLES, stats=stats, drift_pct=0.4)
    duty = DutyRecord(trial=1, reason="sw_power_cap in 50% of the NVML polls while sampling",
                      note="power-bound from trial #1", duty=Duty("cool", 1.0),
                      first_measurement=FirstMeasurement(median_ms=0.5, clocks=WINDOW))
    return [trial, failed, baseline, final, drift, duty]


def read_all(store: StudyStore) -> list:
    trials, baselines = store.records()
    return [*trials, *baselines, *store.read(FinalRecord), *store.read(DriftRecord),
            *store.read(DutyRecord)]


def test_every_record_kind_round_trips_through_the_journal(tmp_path):
    written = every_kind()
    assert {r.kind for r in written} == set(KINDS)            # every kind the journal knows
    store = StudyStore(tmp_path / "s")
    for record in written:
        store.append(record)
    store.close()
    fresh = StudyStore(tmp_path / "s")
    read = read_all(fresh)
    assert read == written and fresh.bad_lines() == []
    # what a read record writes back is its line, byte for byte
    lines = fresh.journal_path.read_bytes().splitlines()
    assert [json.dumps(r.to_json(), separators=(",", ":")).encode() for r in read] == lines
    trial = read[0]
    assert isinstance(trial.config, Config) and isinstance(trial.stats, Stats)
    assert trial.problem == ProblemKey("float16", 1 << 20, "warm", (("n", 1 << 19),))
    assert trial.suspicious
    assert [f.kind for f in trial.flags] == list(Flag) and trial.clocks == WINDOW
    # the journal keeps the config flat and a flag or stop reason as its kind and text
    data = json.loads(lines[0])
    assert data["config"] == {"grid": 264, "block": 128, "num_warps": 4, "meta": {"BLOCK": 2048},
                              "dtype": "float16", "footprint": 1 << 20, "cache": "warm",
                              "dims": {"n": 1 << 19}}
    assert data["flags"][-1] == {"kind": "suspicious", "text": FLAG_TEXTS[Flag.SUSPICIOUS]}
    assert data["stop_reason"] == {"kind": "converged", "text": STOP_TEXTS[Stop.CONVERGED]}
    assert data["stats"] == summarize(SAMPLES).to_dict()


def old_study(tmp_path: Path) -> StudyStore:
    root = tmp_path / "old"
    root.mkdir()
    shutil.copy(OLD, root / "trials.jsonl")
    (root / "study.json").write_text(json.dumps({
        "study": "old", "kernel": "copy", "environment": {"gpu": "NVIDIA H200"},
        "axes": {"grid": ["sms", "2*sms", "4*sms", "8*sms", "16*sms", "cdiv(n, BLOCK)"],
                 "block": ["128", "256", "512"], "BLOCK": ["256", "1024", "8192"],
                 "dtype": ["float32"], "footprint": ["1GiB"], "cache": ["cold"]},
        "meta_axes": ["BLOCK"],
        "measure": {"stop": "ci", "abandon": 1.5}}))
    return StudyStore(root)


def test_a_journal_written_before_records_were_typed_loads_into_them(tmp_path):
    store = old_study(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StudyWarning)          # no line is set aside
        trials, baselines = store.records()
    by_number = {t.number: t for t in trials}
    assert len(trials) == 11 and len(baselines) == 1 and store.bad_lines() == []
    skipped, measured = by_number[0], by_number[6]
    assert skipped.status is TrialStatus.INVALID and skipped.config is None
    assert skipped.stats is None and skipped.stop_reason is None       # "" in the journal
    # dimensions are derived from the footprint by the study's kernel (copy: n)
    assert measured.config == Config(Problem("float32", 1 << 30, (("n", 1 << 28),)),
                                     grid=1056, block=128, meta={"BLOCK": 8192}, cache="cold")
    assert baselines[0].dims == {"n": 1 << 28}
    assert measured.stats.median == 0.5558560192584991 and measured.stats.n == 50
    assert measured.stop_reason == StopReason(Stop.FIXED, "fixed: 50 samples")
    assert baselines[0].stats.median > 0
    assert baselines[0].stop_reason == StopReason(Stop.FIXED, "fixed: 50 samples")
    # text-only flags and stop reasons get their kind from their first words, text kept
    flagged = by_number[7]
    texts = json.loads(OLD.read_text().splitlines()[8])["flags"]
    assert [f.kind for f in flagged.flags] == list(Flag)
    assert [f.text for f in flagged.flags] == texts and flagged.suspicious
    assert [by_number[n].stop_reason.kind for n in (7, 8, 9, 10)] == [
        Stop.UNCONVERGED, Stop.ABANDONED, Stop.CONVERGED, Stop.REPLAYED]
    assert flagged.clocks == Window(polls=3, sm_mhz_mean=1425.0, sm_mhz_min=1395,
                                    sm_mhz_max=1455, power_w_mean=690.2, power_w_max=701.5,
                                    reasons={"sw_power_cap": 1.0})
    assert by_number[10].config.cache == "cold"       # older than the cache axis
    (final,) = store.read(FinalRecord)
    assert final.problem == ProblemKey("float32", 1 << 30, "cold", (("n", 1 << 28),))
    assert final.problem == measured.problem == baselines[0].problem   # old keys agree
    assert final.winner_row().number == 6 and final.baseline.name == "torch copy_"
    assert final.baseline_ratio() == pytest.approx(0.5051 / 0.5559)
    (drift,) = store.read(DriftRecord)
    assert drift.number == 6 and drift.stats.median == 0.557 and drift.drift_pct > 0
    (duty,) = store.read(DutyRecord)
    assert duty.duty == Duty("cool", 1.0) and duty.first_measurement.clocks == flagged.clocks


def test_an_old_record_writes_back_the_same_but_its_kinds(tmp_path):
    """Read and written again, an old line keeps every value; flags and stop reasons gain
    their kind, problems the dimensions derived from their footprint, and fields newer
    than the line are written with their defaults."""
    store = old_study(tmp_path)
    trials, (baseline,) = store.records()
    by_number = {t.number: t for t in trials}
    others = {"baseline": baseline, **{r.kind: r for cls in (FinalRecord, DriftRecord,
                                                              DutyRecord)
                                       for r in store.read(cls)}}
    for line in OLD.read_text().splitlines():
        old = json.loads(line)
        record = by_number[old["number"]] if old["kind"] == "trial" else others[old["kind"]]
        new = record.to_json()
        for key, value in old.items():
            if key == "flags":
                assert new[key] == [{"kind": TrialFlag.kind_of(t).value, "text": t}
                                    for t in value]
            elif key == "stop_reason":
                assert new[key] == (None if value == "" else
                                    {"kind": StopReason.kind_of(value).value, "text": value})
            elif key == "config" and value is not None:
                n = value["footprint"] // 4
                assert new[key] == {"cache": "cold", **value, "dims": {"n": n}}
            elif key == "problem":
                assert new[key] == {**value, "dims": {"n": value["footprint"] // 4}}
            else:
                assert new[key] == value, key


def test_the_report_reads_an_old_journal_by_kind(tmp_path):
    store = old_study(tmp_path)
    md = write_report(store, draw=False).markdown.read_text()
    counts = dict(re.findall(r"^\| ([^|]+) \| (\d+) \|$", md, re.MULTILINE))
    assert {k.value: counts[k.value] for k in Flag} == {k.value: "1" for k in Flag}
    assert counts["fixed: 50"] == "1" and counts["converged: ci"] == "1"
    assert counts["replayed"] == "1" and counts["unconverged"] == "1"
    assert "The baseline (#6) measured again at the end" not in md      # not one at a time
    assert "Equal duty: power-bound from trial #7" in md
    assert "**float32 1GiB cold**: winner #6" in md


@pytest.mark.parametrize("kind, text", FLAG_TEXTS.items())
def test_a_flag_written_as_text_alone_is_read_by_its_first_words(kind, text):
    assert TrialFlag.kind_of(text) is kind


@pytest.mark.parametrize("kind, text", STOP_TEXTS.items())
def test_a_stop_reason_written_as_text_alone_is_read_by_its_first_words(kind, text):
    assert StopReason.kind_of(text) is kind


def test_readers_decide_by_the_kind_never_the_text():
    trial = every_kind()[0]
    trial.flags = [TrialFlag(Flag.RETIMED, "suspicious: worded so, but re-timed")]
    assert not trial.suspicious
    trial.flags = [TrialFlag(Flag.SUSPICIOUS, "above the ceiling")]
    assert trial.suspicious
    fine = Timing([1.0], StopReason(Stop.CONVERGED, "unconverged, as its text says"))
    assert fine.converged and not fine.abandoned
    cut = Timing([1.0], StopReason(Stop.ABANDONED, "converged, as its text says"))
    assert cut.abandoned and not cut.converged


GOOD = ('{"kind":"trial","number":9,"choice":{},"status":"ok","samples_ms":[1],'
        '"stats":{"median":1},"config":{"grid":1,"block":64,"num_warps":2,"meta":{},'
        '"dtype":"float32","footprint":4}')
CURRENT = GOOD.replace('"footprint":4}', '"footprint":4,"cache":"cold"}') + ',"format":2'
BAD = [
    (GOOD + ',"flags":["fast"]}',
     ("trial record: flags[0] 'fast' does not start with one of unconverged, L2-resident, "
      "launch-bound, samples discarded, power-capped, re-timed, suspicious")),
    (GOOD + ',"flags":[{"kind":"fast","text":"fast"}]}',
     "trial record: flags[0]: kind 'fast' is not one of unconverged, L2-resident, "),
    (GOOD + ',"flags":[{"text":"unconverged"}]}',
     "trial record: flags[0] is {'text': 'unconverged'}, not an object with a kind and a text"),
    (GOOD + ',"stop_reason":"enough: 3 samples"}',
     ("trial record: stop_reason 'enough: 3 samples' does not start with one of fixed, "
      "converged, unconverged, abandoned, replayed")),
    (GOOD.replace('"num_warps":2', '"num_warps":4') + "}",
     "trial record: config: num_warps 4 is not block / 32 (64 threads)"),
    (GOOD.replace('"float32"', '"float8"') + "}",
     "trial record: config: dtype 'float8' is not one of float64, float32, "),
    (GOOD + ',"clocks":{"sm_mhz_mean":1980}}', "trial record: clocks: no polls"),
    ('{"kind":"duty","trial":9,"reason":"r","note":"n","duty":{"kind":"warm","seconds":1}}',
     "duty record: duty: kind 'warm' is not one of cool, load"),
    (('{"kind":"final","problem":{"dtype":"float32","footprint":4},"finalists":[{"stats":'
      '{"median":1,"ci_lo":1,"ci_hi":1,"cv":0}}],"tied":[],"winner":0}'),
     "final record: finalists[0]: no number"),
    ('{"kind":"final","problem":{"footprint":4},"finalists":[],"tied":[],"winner":0}',
     "final record: problem: no dtype"),
    (GOOD + ',"format":4}',
     "written in format 4 by a newer sweeper; this one reads records of formats 1 to 3: "
     "upgrade sweeper"),
    (GOOD + ',"format":0}', "format 0 is not a format number (a whole number >= 1)"),
    (GOOD + ',"format":true}', "format True is not a format number (a whole number >= 1)"),
    # the current format keeps flags and stop reasons as objects only, a config's cache too
    (CURRENT + ',"flags":["unconverged"]}',
     "trial record: flags[0] is 'unconverged', not an object with a kind and a text"),
    (CURRENT + ',"stop_reason":"fixed: 5 samples"}',
     "trial record: stop_reason is 'fixed: 5 samples', not an object with a kind and a text"),
    (GOOD + ',"format":2}', "trial record: config has no cache"),
]


@pytest.mark.parametrize("line, reason", BAD)
def test_a_record_whose_kinds_or_config_do_not_fit_is_set_aside(tmp_path, line, reason):
    root = tmp_path / "s"
    root.mkdir()
    (root / "trials.jsonl").write_text(GOOD.replace('"number":9', '"number":1') + "}\n"
                                       + line + "\n")
    store = StudyStore(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trials, _ = store.records()
    said = [str(w.message) for w in caught if w.category is StudyWarning]
    assert [t.number for t in trials] == [1] and len(said) == 1
    assert f"trials.jsonl:2: {reason}" in said[0], said


def test_statistics_a_hand_written_journal_leaves_out_read_as_nan(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    (root / "trials.jsonl").write_text(
        '{"kind":"baseline","name":"torch copy_","dtype":"float32","footprint":4,'
        '"samples_ms":[1.0],"stats":{"median":1.0,"min":1.0,"p95":1.0},"gbps":8.0}\n')
    (baseline,) = StudyStore(root).records()[1]
    assert baseline.stats.median == 1.0 and baseline.stats.n == 0
    assert math.isnan(baseline.stats.mean) and baseline.stats.bounds() == (1.0, 1.0)


# -- formats ----------------------------------------------------------------------------------
def test_every_record_and_a_new_study_file_carry_the_format_they_are_written_in(tmp_path):
    assert FORMAT == 2
    for record in every_kind():
        assert record.to_json()["format"] == FORMAT
    store = StudyStore(tmp_path / "s")
    store.append_all(every_kind())
    lines = [json.loads(line) for line in store.journal_path.read_text().splitlines()]
    assert [line["format"] for line in lines] == [FORMAT] * len(every_kind())


def test_a_trial_to_measure_again_is_written_in_a_format_older_sweepers_set_aside(
        tmp_path, monkeypatch):
    """A trial whose worker was killed from outside (``retry``) is written in format 3,
    every other record in format 2, and read back as written.  A sweeper older than
    ``retry`` read such a trial as its config's crash and set aside the config's next
    trial, the one that measured it, as recorded twice; it reads records of formats 1 to
    2, so it sets the killed trial aside instead, saying why, and keeps the next one."""
    from sweeper.store import _upgrade
    from sweeper.store._schema import RETRY_FORMAT

    choice = {"grid": "sms", "block": "32", "BLOCK": "2048"}
    killed = TrialRecord(number=1, choice=choice, status=TrialStatus.CRASHED,
                         reason="a SIGKILL that sweeper did not send killed it", retry=True)
    trial, *others = every_kind()
    again = TrialRecord(**{**vars(trial), "number": 2, "choice": choice})
    assert killed.to_json()["format"] == RETRY_FORMAT == 3
    assert [r.to_json()["format"] for r in [trial, *others, again]] == [FORMAT] * 7
    store = StudyStore(tmp_path / "s")
    store.append_all([trial, killed, again])
    assert store.records()[0] == [trial, again] and store.bad_lines() == []
    assert [t.number for t in store.read(TrialRecord)] == [0, 2]
    # as the sweepers with retry before it wrote it, in format 2: read alike
    earlier = StudyStore(tmp_path / "earlier")
    earlier.append_all([trial, RawRecord({**killed.to_json(), "format": FORMAT}), again])
    assert earlier.records()[0] == [trial, again] and earlier.bad_lines() == []
    monkeypatch.setattr(_upgrade, "RETRY_FORMAT", FORMAT)     # a reader of formats 1 to 2
    older = StudyStore(store.root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert older.records()[0] == [trial, again]
    (said,) = [str(w.message) for w in caught if w.category is StudyWarning]
    assert said.startswith(f"{older.journal_path}:2: written in format 3 by a newer "
                           "sweeper; this one reads records of formats 1 to 2: upgrade "
                           "sweeper; set aside")


def test_an_older_record_is_upgraded_where_it_is_read_and_written_back_as_the_current(tmp_path):
    store = old_study(tmp_path)
    assert store.meta()["format"] == FORMAT and store.meta()["headline"] == "gbps"
    copy = StudyStore(tmp_path / "copy")
    copy.append_all([RawRecord(d) for d in store.raw_records()])
    written = [json.loads(line) for line in copy.journal_path.read_text().splitlines()]
    assert {line["format"] for line in written} == {FORMAT}
    flagged = next(line for line in written if line.get("number") == 7)
    assert {f["kind"] for f in flagged["flags"]} == {f.value for f in Flag}
    assert next(line for line in written if line.get("number") == 0)["stop_reason"] is None
    assert all(line["config"]["cache"] == "cold" for line in written if line.get("config"))
    assert copy.records()[0] == store.records()[0]


@pytest.mark.parametrize("kernel, headline", [("copy", "gbps"), ("matmul", "tflops"),
                                              ("my_kernels.py:fused", "gbps")])
def test_an_older_study_file_leads_with_its_kernels_rate(tmp_path, kernel, headline):
    root = tmp_path / "s"
    root.mkdir()
    (root / "study.json").write_text(json.dumps({"study": "s", "kernel": kernel}))
    assert StudyStore(root).meta() == {"study": "s", "kernel": kernel, "headline": headline,
                                       "finals": True, "format": FORMAT}
    meta = StudyStore(root).study_meta()
    assert (meta.headline, meta.finals, meta.gpu, meta.axes) == (headline, True, "?", {})


@pytest.mark.parametrize("extra, finals", [
    ({"environment": {"device": "replay"}}, False),
    ({"sampler": {"name": "one-at-a-time"}}, False),
    ({"sampler": {"name": "tpe"}, "environment": {"device": "cuda"}}, True),
    ({"sampler": {"name": "one-at-a-time"}, "finals": True}, True),   # recorded: as it says
])
def test_an_older_study_file_runs_finals_but_on_a_replay_or_one_at_a_time(tmp_path, extra,
                                                                          finals):
    root = tmp_path / "s"
    root.mkdir()
    (root / "study.json").write_text(json.dumps({"study": "s", "kernel": "copy", **extra}))
    assert StudyStore(root).study_meta().finals is finals




def test_a_record_of_the_current_format_is_read_as_written():
    line = CURRENT.replace('"choice":{}', '"choice":{"block":"64"}') + "}"
    data, reason = parse_line(line.encode())
    assert reason == "" and data == json.loads(line)
