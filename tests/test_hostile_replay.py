"""Replay tables are data from outside: a value that is not a recorded outcome or a
plausible time, or a table that does not record every axis of the space, refuses the
table with ``table.csv:LINE: ...`` and exit 2, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.devices._replay import MIN_MS
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus

TABLES = Path(__file__).resolve().parent / "data" / "replay"
SPACE = """
study: tiny
kernel: copy
sampler: exhaustive
params:
  grid: [sms, 2*sms]
  block: [32, 64]
  BLOCK: [256]
  footprint: [4KiB]
"""
HEADER = ["# sweeper replay table v1", "# gpu: Test GPU", "# sms: 4", "# l2_bytes: 1024"]
COLUMNS = "BLOCK,block,cache,dtype,footprint,grid,status,median_ms,samples_ms"
ROWS = ["256,32,cold,float32,4KiB,sms,ok,0.5,0.5 0.5 0.6",
        "256,64,cold,float32,4KiB,sms,ok,0.25,0.25 0.25 0.26",
        "256,32,cold,float32,4KiB,2*sms,out_of_resources,,",
        "256,64,cold,float32,4KiB,2*sms,ok,0.125,"]
FIRST_ROW = len(HEADER) + 2           # the line number of ROWS[0]


@pytest.fixture
def space(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SPACE)
    return path


def _table(tmp_path: Path, rows=ROWS, columns=COLUMNS, header=HEADER) -> Path:
    path = tmp_path / "table.csv"
    path.write_text("\n".join([*header, columns, *rows]) + "\n")
    return path


def _refused(space: Path, table: Path, capsys, command: str = "run") -> str:
    studies = space.parent / "studies"
    args = [command, str(space), "--device", f"replay:{table}"]
    rc = main(args + (["--studies-dir", str(studies), "--quiet"] if command == "run" else []))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert not studies.exists()
    return err.rstrip("\n")


def test_a_sound_table_replays(space, tmp_path, capsys):
    table = _table(tmp_path)
    assert main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                 str(tmp_path / "studies"), "--quiet", "--no-report"]) == 0
    trials = StudyStore(tmp_path / "studies" / "tiny-replay").records()[0]
    assert sorted(t.status.value for t in trials) == ["ok", "ok", "ok", "out_of_resources"]
    medians = sorted(t.stats.median for t in trials if t.ok)
    assert medians == [0.125, 0.25, 0.5]


def test_a_table_with_no_row_replays_every_config_as_missing(space, tmp_path, capsys):
    """A header and no row (an export of a study that measured nothing, trimmed by hand):
    every config is missing, as the run says, never a traceback."""
    table = _table(tmp_path, rows=[])
    assert main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                 str(tmp_path / "studies"), "--quiet", "--no-report"]) == 1
    assert "Traceback" not in capsys.readouterr().err
    trials = StudyStore(tmp_path / "studies" / "tiny-replay").records()[0]
    assert [t.status.value for t in trials] == ["missing"] * 4


def test_a_failed_configs_reason_is_replayed_and_exported_again(space, tmp_path):
    """A table keeps why a config failed (its ``reason`` column, written only where one
    did, a line break escaped), so a replayed failure says what the GPU said, and the
    replayed study's table says it again; a table without the column still replays."""
    rows = [ROWS[0] + ",", ROWS[1] + ",", "256,32,cold,float32,4KiB,2*sms,out_of_resources,,,"
            '"OutOfResources: shared memory, Required: 262144, Hardware limit: 232448"',
            ROWS[3] + ","]
    table = _table(tmp_path, rows, COLUMNS + ",reason")
    studies, again = tmp_path / "studies", tmp_path / "again.csv"
    assert main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                 str(studies), "--quiet", "--no-report"]) == 0
    (failed,) = [t for t in StudyStore(studies / "tiny-replay").records()[0] if not t.ok]
    assert failed.reason == ("recorded as failed: OutOfResources: shared memory, Required: "
                             "262144, Hardware limit: 232448")
    assert main(["export", str(studies / "tiny-replay"), "--format", "csv", "-o",
                 str(again)]) == 0
    text = again.read_text()
    assert text.count("reason") == 1 and "recorded as failed: OutOfResources" in text
    assert main(["run", str(space), "--device", f"replay:{again}", "--study", "twice",
                 "--studies-dir", str(studies), "--quiet", "--no-report"]) == 0
    (failed,) = [t for t in StudyStore(studies / "twice").records()[0] if not t.ok]
    assert failed.reason.startswith("recorded as failed: OutOfResources")   # said once
    clean = tmp_path / "clean" / "table.csv"
    clean.parent.mkdir()
    _table(clean.parent, [ROWS[0], ROWS[1], ROWS[3]])     # no config failed: no column
    assert main(["run", str(space), "--device", f"replay:{clean}", "--study", "clean",
                 "--studies-dir", str(studies), "--quiet", "--no-report"]) == 0
    assert main(["export", str(studies / "clean"), "--format", "csv", "-o",
                 str(tmp_path / "clean.csv")]) == 0
    assert f"{COLUMNS}\n" in (tmp_path / "clean.csv").read_text()


def test_a_replayed_studys_table_names_the_recorded_gpu_once(space, tmp_path):
    """A table exported from a replayed study replays as the GPU it was recorded on, not
    as ``replay: replay: ...``: a GPU that tuned() and compare would not know as itself."""
    studies, again = tmp_path / "studies", tmp_path / "again.csv"
    assert main(["run", str(space), "--device", f"replay:{_table(tmp_path)}", "--studies-dir",
                 str(studies), "--quiet", "--no-report"]) == 0
    assert main(["export", str(studies / "tiny-replay"), "--format", "csv", "-o",
                 str(again)]) == 0
    assert "# gpu: Test GPU" in again.read_text().splitlines()
    assert open_device(f"replay:{again}").facts().name == "replay: Test GPU"


def test_a_replayed_studys_table_keeps_the_recorded_driver_and_date(space, tmp_path):
    """The exported table of a replayed study says when, and under which driver, its
    timings were recorded (the table it replayed), not an empty driver and the date of
    the replay."""
    studies, again = tmp_path / "studies", tmp_path / "again.csv"
    table = _table(tmp_path, header=[*HEADER, "# driver: 580.159.04",
                                     "# created: 2026-12-04T15:03:32+00:00"])
    assert main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                 str(studies), "--quiet", "--no-report"]) == 0
    assert main(["export", str(studies / "tiny-replay"), "--format", "csv", "-o",
                 str(again)]) == 0
    lines = again.read_text().splitlines()
    assert "# driver: 580.159.04" in lines and "# created: 2026-12-04T15:03:32+00:00" in lines


def test_every_recorded_table_loads_and_is_above_the_floor():
    for path in sorted(TABLES.glob("*.csv")):
        device = open_device(f"replay:{path}")
        medians = [float(r["median_ms"]) for r in device.rows if r["median_ms"]]
        assert medians and min(medians) >= MIN_MS, path.name


BAD_ROWS = [
    (0, "256,32,cold,float32,4KiB,sms,ok,nan,", "median_ms: 'nan' is not a time in ms; "
        f"allowed: a finite number >= {MIN_MS:g} ms (one launch)"),
    (0, "256,32,cold,float32,4KiB,sms,ok,0,", "median_ms: '0' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,-0.5,", "median_ms: '-0.5' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,1e-9,", "median_ms: '1e-9' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,inf,", "median_ms: 'inf' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,fast,", "median_ms: 'fast' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,１,", "median_ms: '１' is not a time in ms"),
    (0, "256,32,cold,float32,4KiB,sms,ok,,", "median_ms is empty; a successful row needs "
        "its median"),
    (1, "256,64,cold,float32,4KiB,sms,ok,0.25,0.25 NaN", "samples_ms: 'NaN' is not a time"),
    (1, "256,64,cold,float32,4KiB,sms,ok,0.25,0.25 -1", "samples_ms: '-1' is not a time"),
    (1, "256,64,cold,float32,4KiB,sms,great,0.25,", "status 'great' is not a recorded "
        "outcome; allowed: " + ", ".join(s.value for s in TrialStatus if s.value not in
                                         ("invalid", "missing"))),
    (1, "256,64,cold,float32,4KiB,sms,,0.25,", "status '' is not a recorded outcome"),
    (1, "256,64,cold,float32,4KiB,sms,missing,0.25,", "status 'missing' is not a recorded"),
    (2, "256,32,cold,float32,4KiB,2*sms,out_of_resources,-3,", "median_ms: '-3' is not a "
        "time in ms"),
    (3, "256,64,cold,float32,4KiB,2*sms,ok", "7 fields; the header has 9"),
    (3, "256,64,cold,float32,4KiB,2*sms,ok,0.1,0.1,0.1", "10 fields; the header has 9"),
    (3, "256,32,cold,float32,4KiB,sms,ok,0.1,", f"the same config as line {FIRST_ROW}; a "
        "table holds each config once"),
    (3, '256,64,cold,float32,4KiB,"2*sms,ok,0.1,', "6 fields; the header has 9"),
    (3, "256,64,cold,float32,4KiB,2*sms,ok,0.1," + "0.1 " * 40000, "not CSV: field larger "
        "than field limit"),
]


@pytest.mark.parametrize("index, row, said", BAD_ROWS)
def test_a_bad_row_refuses_the_table_with_its_line(space, tmp_path, capsys, index, row, said):
    rows = list(ROWS)
    rows[index] = row
    table = _table(tmp_path, rows)
    assert _refused(space, table, capsys).startswith(f"{table}:{FIRST_ROW + index}: {said}")


@pytest.mark.parametrize("header, line, said", [
    ("# sms: many", 3, "sms: 'many' is not a whole number >= 1"),
    ("# sms: 0", 3, "sms: '0' is not a whole number >= 1"),
    ("# sms: -4", 3, "sms: '-4' is not a whole number >= 1"),
    ("# gpu: H200\u202e", 3, "gpu: control characters are not allowed"),
])
def test_bad_facts_in_the_header_refuse_the_table(space, tmp_path, capsys, header, line, said):
    table = _table(tmp_path, header=[*HEADER[:2], header, HEADER[3]])
    assert _refused(space, table, capsys) == f"{table}:{line}: {said}"


@pytest.mark.parametrize("columns, said", [
    ("BLOCK,block,cache,dtype,footprint,grid,status,median,samples_ms",
     "a replay table needs a median_ms column; it has BLOCK, block, cache, dtype, footprint, "
     "grid, status, median, samples_ms"),
    ("BLOCK,block,cache,dtype,footprint,grid,grid,median_ms,samples_ms",
     "column 'grid' appears twice"),
    ("BLOCK,block,cache,dtype,foot print,grid,status,median_ms,samples_ms",
     "column 'foot print' is not a parameter name; allowed: axis names, status, median_ms, "
     "samples_ms, reason"),
])
def test_bad_columns_refuse_the_table(space, tmp_path, capsys, columns, said):
    table = _table(tmp_path, columns=columns)
    assert _refused(space, table, capsys) == f"{table}:{len(HEADER) + 1}: {said}"


@pytest.mark.parametrize("command", ["run", "plan"])
@pytest.mark.parametrize("block", ["256", '"256"'])     # read at once, or row by row
def test_a_table_without_a_column_for_an_axis_is_refused(space, tmp_path, capsys, command,
                                                         block):
    """At the line that names the columns, as every other complaint about them is."""
    # without the check every grid got the same median: the one row matching the rest
    rows = [f"{block},32,cold,float32,4KiB,ok,0.5,", "256,64,cold,float32,4KiB,ok,0.25,"]
    table = _table(tmp_path, rows, "BLOCK,block,cache,dtype,footprint,status,median_ms,"
                                   "samples_ms")
    assert _refused(space, table, capsys, command) == (
        f"{table}:{len(HEADER) + 1}: no column 'grid' for the axis grid of {space}; the table "
        "has BLOCK, block, cache, dtype, footprint columns; replay a table recorded with the "
        "same axes")


def test_a_table_with_a_column_the_space_lacks_is_refused(space, tmp_path, capsys):
    rows = [r + ",3" for r in ROWS]
    cols = "BLOCK,block,cache,dtype,footprint,grid,status,median_ms,samples_ms,num_stages"
    table = _table(tmp_path, rows, cols)
    assert _refused(space, table, capsys) == (
        f"{table}:{len(HEADER) + 1}: column 'num_stages' is not an axis of {space} (its "
        "axes: grid, block, dtype, footprint, cache, BLOCK); replay a table recorded with the "
        "same axes")


def test_a_table_that_is_a_device_is_refused_before_reading(space, capsys):
    assert _refused(space, Path("/dev/zero"), capsys) == ("/dev/zero: not a regular file; a "
                                                         "replay table is a CSV file")


@pytest.mark.parametrize("content, said", [
    (b"# gpu: x\n\xff\xfeBLOCK,median_ms\n", "not UTF-8 text (byte 0xff at offset 9); a replay "
     "table is what `sweeper export STUDY --format csv` writes"),
    (b"# only a header\n", "no CSV header line; a replay table needs one"),
])
def test_a_table_that_is_not_text_or_has_no_columns_is_refused(space, tmp_path, capsys,
                                                              content, said):
    table = tmp_path / "table.csv"
    table.write_bytes(content)
    assert _refused(space, table, capsys) == f"{table}: {said}"


def test_a_nul_byte_is_refused_with_its_line(space, tmp_path, capsys):
    rows = list(ROWS)
    rows[1] = "256,64,cold,float32,4KiB,sms,ok,0.2\x005,"
    table = _table(tmp_path, rows)
    assert _refused(space, table, capsys).startswith(
        f"{table}:{FIRST_ROW + 1}: median_ms: '0.2\\x005' is not a time in ms")


@pytest.mark.parametrize("rows", [ROWS, [*ROWS[:2], "256,32,cold,float32,4KiB,'=2*sms,ok,0.3,"],
                                  [ROWS[0], "256,64,cold,float32,4KiB,\"sms\",ok,0.25,"],
                                  []])                  # a header and no row: read, not a crash
def test_a_table_read_whole_is_the_table_read_row_by_row(tmp_path, rows):
    """A table is read column by column where its cells are plain (a 10⁶-row table in
    seconds); every row, label and fact comes out as the CSV reader's row-by-row read
    gives them, quoted cells and ``'`` in front of a formula included."""
    from sweeper.devices._replay import _rows, read_table

    path = tmp_path / "t.csv"
    lines = [*HEADER, COLUMNS, *rows]
    path.write_text("\n".join(lines) + "\n")
    header, columns, read = read_table(path)
    body = [(n, line + "\n") for n, line in enumerate(lines, 1) if not line.startswith("#")]
    want_columns, want = _rows(path, body)
    assert header == {"gpu": "Test GPU", "sms": "4", "l2_bytes": "1024"}
    assert (columns, read.places, list(read)) == (want_columns, want.places, list(want))
