"""What input can reach: option values, study names and the folders a run writes to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweeper.cli import main
from sweeper.space import load_space
from sweeper.space._names import safe_name, study_name_problem

TINY = """
study: tiny
kernel: copy
sampler: exhaustive
params:
  grid: [sms]
  block: [32]
  BLOCK: [256, 1024]
  footprint: [4KiB]
measure: {warmup: 1, repeat: 3}
"""


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    return captured.err.rstrip("\n")


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def _refused_run(tmp_path: Path, capsys, *args: str) -> str:
    """``sweeper run`` with ``args`` exits 2 with one line and writes nothing anywhere."""
    before = _files(tmp_path)
    rc = main(["run", *args, "--device", "interpret", "--studies-dir",
               str(tmp_path / "studies"), "--quiet"])
    line = _one_line(capsys)
    assert rc == 2 and _files(tmp_path) == before and not (tmp_path / "studies").exists()
    return line


# -- option values ---------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["-5", "0", "abc", "1.5", "", "١"])
def test_trials_must_be_a_whole_number_of_at_least_one(tiny, tmp_path, capsys, value):
    line = _refused_run(tmp_path, capsys, str(tiny), f"--trials={value}")
    assert line == (f"sweeper run: argument --trials: {value!r} is not a whole number >= 1 "
                    "(see sweeper run --help)")


@pytest.mark.parametrize("value, said", [
    ("0", "'0' is not a duration; allowed: a positive number with ms, s, m or h (e.g. 10m)"),
    ("-1s", "'-1s' is not a duration"),
    ("soon", "'soon' is not a duration"),
    ("nan", "'nan' is not a duration"),
    ("inf", "'inf' is not a duration"),
    ("9" * 400 + "h", f"{'9' * 40!r} is too long to be a duration"),
])
def test_time_must_be_finite_and_positive(tiny, tmp_path, capsys, value, said):
    line = _refused_run(tmp_path, capsys, str(tiny), f"--time={value}")
    assert line.startswith(f"sweeper run: argument --time: {said}")
    assert line.endswith("(see sweeper run --help)")


def test_an_unknown_option_is_one_line(tiny, tmp_path, capsys):
    line = _refused_run(tmp_path, capsys, str(tiny), "--frobnicate")
    assert line == "sweeper: unrecognized arguments: --frobnicate (see sweeper --help)"


@pytest.mark.parametrize("params, said", [
    (["BLOCK=300"], "-p BLOCK=300: params.BLOCK[0]: 300 is not a power of two"),
    (["footprint=0B"], "-p footprint=0B: params.footprint[0]: 0B must be positive"),
    (["block=33"], "-p block=33: params.block[0]: 33 threads per program; allowed: 32, 64"),
    (["BLOCK=[1024, 1024]"], "-p BLOCK=[1024, 1024]: params.BLOCK: value '1024' appears twice"),
    (['grid=[sms, "cdiv(n,"]'], '-p grid=[sms, "cdiv(n,"]: params.grid[1]: cannot parse'),
    (["grid=[sms"], "-p grid=[sms:1: YAML syntax error: expected ',' or ']'"),
    (["BLOCK=1024", "BLOCK=2048"], "-p BLOCK=2048: BLOCK is given twice (also -p BLOCK=1024); "
     "give each axis once"),
    (["seed=3"], "-p seed=3: params.seed: unknown key 'seed'; known: grid, block"),
    (["BLOCK="], "-p: 'BLOCK=' is not KEY=VALUE[,VALUE...]"),
])
def test_p_values_go_through_the_files_checks(tiny, tmp_path, capsys, params, said):
    options = [x for p in params for x in ("-p", p)]
    assert _refused_run(tmp_path, capsys, str(tiny), *options).startswith(said)


# -- study names -----------------------------------------------------------------------------
BAD_NAMES = [
    ("../../x", "'/' is not allowed"),
    ("/abs/x", "'/' is not allowed"),
    ("a\\b", "'\\\\' is not allowed"),
    ("a\x00b", "'\\x00' is not allowed"),
    ("a\nb", "'\\n' is not allowed"),
    ("\u202egnp.exe", "'\\u202e' is not allowed"),
    ("x" * 300, "longer than 100 characters"),
    (".hidden", "it starts with '.'"),
    ("..", "it starts with '.'"),
    ("", "it is empty"),
    ("a b", "' ' is not allowed"),
    ("ü", "'ü' is not allowed"),
]
RULE = ("allowed: 1 to 100 of the letters A-Z a-z, digits and . - _ +, not starting with "
        "'.'")


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_a_bad_study_option_is_refused_and_nothing_written(tiny, tmp_path, capsys, name, why):
    line = _refused_run(tmp_path, capsys, str(tiny), "--study", name)
    shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}... (300 characters)"
    assert line == f"sweeper: --study: {shown} is not a study name: {why}; {RULE}"


@pytest.mark.parametrize("name, why", BAD_NAMES[:8])
def test_a_bad_study_in_the_space_file_is_refused_with_its_line(tmp_path, capsys, name, why):
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("study: tiny", f"study: {json.dumps(name)}"))
    line = _refused_run(tmp_path, capsys, str(space))
    assert line.startswith(f"{space}:2: study: ") and f"is not a study name: {why}" in line


def test_good_study_names_pass_and_a_file_name_is_made_safe(tmp_path):
    for name in ("copy-fp32", "a.b-c_d+e", "X" * 100, "h200.v2"):
        assert study_name_problem(name) is None
    assert safe_name("my space (2)") == "my-space-2"
    assert safe_name("..\u202e..") == "study" and safe_name("a" * 300) == "a" * 100
    space = tmp_path / "my space (2).yaml"
    space.write_text(TINY.replace("study: tiny\n", ""))
    assert load_space(space).study == "my-space-2"


def test_a_study_link_out_of_the_studies_folder_is_refused(tiny, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "evil").symlink_to(outside)
    rc = main(["run", str(tiny), "--device", "interpret", "--studies-dir", str(studies),
               "--study", "evil", "--quiet"])
    assert rc == 2 and _one_line(capsys) == (
        f"sweeper: {studies / 'evil'}: resolves to {outside}, outside the studies folder "
        f"{studies}; a study is written under --studies-dir only")
    assert list(outside.iterdir()) == []


def test_a_studies_dir_that_is_a_file_is_refused(tiny, tmp_path, capsys):
    (tmp_path / "studies").write_text("")
    rc = main(["run", str(tiny), "--device", "interpret", "--studies-dir",
               str(tmp_path / "studies"), "--quiet"])
    assert rc == 2 and _one_line(capsys) == f"sweeper: --studies-dir {tmp_path / 'studies'}: " \
                                            "not a folder"


def test_a_run_writes_under_its_studies_folder_only(tmp_path, capsys):
    """A whole run (replayed, so it is quick) leaves every file outside --studies-dir as it
    was, and writes its study in one folder under it."""
    from tests.test_hostile_replay import COLUMNS, HEADER, ROWS, SPACE

    (tmp_path / "tiny.yaml").write_text(SPACE)
    (tmp_path / "t.csv").write_text("\n".join([*HEADER, COLUMNS, *ROWS]) + "\n")
    before = _files(tmp_path)
    assert main(["run", str(tmp_path / "tiny.yaml"), "--device", f"replay:{tmp_path / 't.csv'}",
                 "--studies-dir", str(tmp_path / "st"), "--quiet"]) == 0
    after = _files(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("st/")} == before
    assert {Path(k).parts[:2] for k in after if k.startswith("st/")} == {("st", "tiny-replay")}
