"""Well-formed lines that do not belong to their study: a trial from another space (labels
not among the study's, an axis it does not have, one it lacks), a label no text may hold
(a lone surrogate, a control character), statistics that contradict themselves or their
samples, a config recorded twice under another number.

Each is set aside like a damaged line (``trials.jsonl:LINE: reason``): the report and a csv
export work without it and say so, a run moves it to ``trials.rejected.jsonl`` and
completes, and the Python API reads the same cleaned study.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweeper.api import load_study
from sweeper.cli import main
from sweeper.errors import StudyError, StudyWarning
from sweeper.store import JOURNAL, REJECTED, StudyStore
from tests.test_hostile_reach import TINY

SET_ASIDE = ("set aside (the study goes on without it; the next run moves it to "
             "trials.rejected.jsonl)")
Edit = Callable[[dict[str, Any]], None]


def _labels(**changes: str) -> Edit:
    return lambda d: d["choice"].update(changes)


def _stats(**changes: float) -> Edit:
    return lambda d: d["stats"].update(changes)


def _drop(axis: str) -> Edit:
    return lambda d: d["choice"].pop(axis)


def _samples(d: dict[str, Any]) -> None:
    d["samples_ms"] = d["samples_ms"][:-1]


def _negative_sample(d: dict[str, Any]) -> None:
    d["samples_ms"][0] = -1.0


#: (how trial #1's line is changed into a hostile one, the reason it is set aside)
HOSTILE: dict[str, tuple[Edit, str]] = {
    "another space": (_labels(dtype="int8", BLOCK="4096", grid="3*sms"),
                      r"trial #7: grid '3\*sms' is not one of the study's "
                      r"labels \(sms\)"),
    "an unknown axis": (_labels(WARPS="4"),
                        r"trial #7: axis 'WARPS' is not one of the study's "
                        r"axes \(BLOCK, block, cache, dtype, footprint, grid\)"),
    "a missing axis": (_drop("BLOCK"),
                       r"trial #7: no label for the study's axis 'BLOCK' "
                       r"\(256, 1024\)"),
    "a lone surrogate": (_labels(grid="\ud800"),
                         r"trial record: choice: grid '\\ud800' holds a lone surrogate, "
                         r"not a character"),
    "a control character": (_labels(grid="s\x1bms"),
                            r"trial record: choice: grid 's\\x1bms' holds a control "
                            r"character"),
    # far above any time the interpreter measures (99 ms was not, on a loaded machine)
    "ci_lo above the median": (_stats(ci_lo=1e6),
                               r"trial record: stats: ci_lo 1000000.0 is above median "),
    "the median above the max": (_stats(median=1e6),
                                 r"trial record: stats: median 1000000.0 is above ci_hi "),
    "a negative time": (_stats(min=-1.0),
                        r"trial record: stats: min -1.0 is not a time \(a finite number "
                        r">= 0 ms\)"),
    "an infinite time": (_stats(max=float("inf")),
                         r"trial record: stats: max inf is not a time"),
    "a sample count that disagrees": (_samples,
                                      r"trial record: stats: n is 3, but samples_ms "
                                      r"holds 2 samples"),
    "a negative sample": (_negative_sample,
                          r"trial record: samples_ms\[0\] -1.0 is not a time"),
    "a rate that is not a number": (lambda d: d.update(gbps=float("nan")),
                                    r"trial record: gbps nan is not a finite number >= 0"),
    "an infinite rate": (lambda d: d.update(gflops=float("inf")),
                         r"trial record: gflops inf is not a finite number >= 0"),
    "a negative rate": (lambda d: d.update(gbps=-5.0),
                        r"trial record: gbps -5.0 is not a finite number >= 0"),
    "a negative whole rate": (lambda d: d.update(gbps=-5),
                              r"trial record: gbps -5 is not a finite number >= 0"),
    "a source hash that is not one": (lambda d: d.update(source_hash="1111\x1b[2J"),
                                      r"trial record: source_hash '1111\\x1b\[2J' is not "
                                      r"a kernel's source hash \(16 hex digits\)"),
    "an ok trial to be measured again": (lambda d: d.update(retry=True),
                                         r"trial record: retry is true on a trial with "
                                         r"status ok; only a crashed trial is measured "
                                         r"again"),
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """A finished study of the tiny space (two trials, a baseline, a final)."""
    root = tmp_path_factory.mktemp("measured")
    (root / "tiny.yaml").write_text(TINY)
    assert _run(root / "tiny.yaml", root / "studies") == 0
    return root / "studies" / "tiny-interpret"


def _run(space: Path, studies: Path) -> int:
    return main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
                 "--quiet", "--no-report"])


def _copy(measured: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The measured study copied under ``tmp_path``; (its folder, the space file)."""
    (tmp_path / "tiny.yaml").write_text(TINY)
    study = tmp_path / "studies" / "tiny-interpret"
    shutil.copytree(measured, study)
    return study, tmp_path / "tiny.yaml"


def _records(study: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (study / JOURNAL).read_text().splitlines()]


def _write(study: Path, records: list[dict[str, Any]]) -> None:
    (study / JOURNAL).write_text("".join(json.dumps(d) + "\n" for d in records))


def _insert(study: Path, at: int, record: dict[str, Any]) -> int:
    """Put ``record`` at index ``at`` of the journal; returns its line number."""
    records = _records(study)
    records.insert(at, record)
    _write(study, records)
    return at + 1


def _hostile(study: Path, edit: Edit) -> int:
    """Trial #1's line changed by ``edit``, written as a new trial #7 that is the fastest
    config of its problem, just before the journal's last line (the final); its line."""
    records = _records(study)
    trial = next(d for d in records if d.get("kind") == "trial" and d["number"] == 1)
    hostile = json.loads(json.dumps(trial))
    hostile.update(number=7, gbps=1e6)
    edit(hostile)
    return _insert(study, len(records) - 1, hostile)


def _checked(study: Path, space: Path, line: int, reason: str, capsys,
             trials_after: int = 2) -> None:
    """Report, csv export, the API and a run each set line ``line`` aside for ``reason``;
    the run moves it to the side file and completes."""
    said = rf"sweeper: warning: {re.escape(str(study / JOURNAL))}:{line}: {reason}.*; "
    capsys.readouterr()
    assert main(["report", str(study)]) == 0
    err = capsys.readouterr().err
    assert re.fullmatch(said + re.escape(SET_ASIDE) + "\n", err), err
    table = study.parent / "t.csv"
    assert main(["export", str(study), "--format", "csv", "-o", str(table)]) == 0
    assert re.fullmatch(said + re.escape(SET_ASIDE) + "\n", capsys.readouterr().err)
    with table.open(newline="") as f:
        assert len(list(csv.DictReader(x for x in f if not x.startswith("#")))) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trials = load_study(study).trials_dataframe()
    said_by_api = [str(w.message) for w in caught if w.category is StudyWarning]
    assert len(trials) == 2 and said_by_api[0].startswith(f"{study / JOURNAL}:{line}: ")
    assert _run(space, study.parent) == 0
    err = capsys.readouterr().err
    assert re.fullmatch(said + "moved to trials.rejected.jsonl\n", err), err
    rejected = [json.loads(x) for x in (study / REJECTED).read_text().splitlines()]
    assert [r["line"] for r in rejected] == [line] and re.match(reason, rejected[0]["reason"])
    assert len(StudyStore(study).records()[0]) == trials_after
    assert main(["report", str(study)]) == 0 and capsys.readouterr().err == ""


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_trial_is_set_aside_and_the_study_goes_on(measured, tmp_path, capsys, name):
    study, space = _copy(measured, tmp_path)
    edit, reason = HOSTILE[name]
    line = _hostile(study, edit)
    _checked(study, space, line, reason, capsys)


def test_a_config_recorded_twice_keeps_the_first(measured, tmp_path, capsys):
    study, space = _copy(measured, tmp_path)
    line = _hostile(study, lambda d: None)          # trial #1's config again, as #7
    first = next(i for i, d in enumerate(_records(study), 1) if d.get("number") == 1)
    _checked(study, space, line, rf"trial #7 measures the config of trial #1 "
                                 rf"\(line {first}\) again; the first is kept", capsys)


def _axes_damaged(study: Path, edit: Callable[[dict[str, Any]], None], key: str) -> int:
    """``study.json``'s axes changed by ``edit``; the line of its entry ``key`` begins."""
    meta = json.loads((study / "study.json").read_text())
    edit(meta["axes"])
    (study / "study.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return next(i for i, x in enumerate((study / "study.json").read_text().splitlines(), 1)
                if x.startswith(key))


def _refused(study: Path, space: Path, said: str, advice: str, capsys) -> None:
    """Run, worker, report and the API each refuse ``study`` in one line beginning with
    ``said`` and ending with ``advice``, exit 2, and nothing in its folder changes."""
    before = {p.name: p.read_bytes() for p in study.iterdir()}
    capsys.readouterr()
    for command in (["run", str(space), "--device", "interpret", "--studies-dir",
                     str(study.parent), "--quiet", "--no-report"],
                    ["worker", str(space), "--study", study.name, "--device", "interpret",
                     "--studies-dir", str(study.parent)],
                    ["report", str(study)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith(said) and err.endswith(advice) and err.count("\n") == 1, err
    with pytest.raises(StudyError, match=re.escape(said[len("sweeper: "):])):
        load_study(study).trials_dataframe()
    assert {p.name: p.read_bytes() for p in study.iterdir()} == before


@pytest.mark.parametrize("damage", ["emptied", "an axis deleted"])
def test_study_axes_that_leave_out_every_trial_are_a_damaged_study_json(
        damage, measured, tmp_path, capsys):
    """``study.json`` whose axes leave out every trial of its journal (``"axes": {}``, or
    an axis every trial chooses from deleted) is damaged, not every journal line: run,
    worker, report and the API each refuse it in one line naming its ``axes`` line, exit
    2, and nothing is moved, where a run moved every finished trial to
    ``trials.rejected.jsonl`` and measured the study again."""
    study, space = _copy(measured, tmp_path)
    line = _axes_damaged(study, dict.clear if damage == "emptied" else
                         lambda axes: axes.pop("grid"), '  "axes": ')
    first = next(i for i, d in enumerate(_records(study), 1) if d.get("kind") == "trial")
    said = (f"sweeper: {study / 'study.json'}:{line}: its axes leave out every one of the "
            f"journal's 2 trials (first {study / JOURNAL}:{first}: trial #0: axis 'grid' is "
            "not one of the study's axes (")
    advice = ("), so study.json is damaged; restore its axes (every axis and label the "
              "trials choose from, as the space file gives them), or move the study folder "
              "away; nothing was moved\n")
    _refused(study, space, said, advice, capsys)


def test_study_axes_that_lose_a_label_of_the_recorded_space_are_a_damaged_study_json(
        measured, tmp_path, capsys):
    """``study.json`` whose axes lost a label that the space it records gives and a trial
    chooses is damaged, not that trial's line, though other trials are in the axes: run,
    worker, report and the API refuse it in one line naming the axis's line and the label,
    exit 2, and nothing is moved, where a run moved the trials of that label to
    ``trials.rejected.jsonl`` and measured them again."""
    study, space = _copy(measured, tmp_path)
    line = _axes_damaged(study, lambda axes: axes.update(BLOCK=["256"]), '    "BLOCK": [')
    first = next(i for i, d in enumerate(_records(study), 1)
                 if d.get("kind") == "trial" and d["choice"]["BLOCK"] == "1024")
    said = (f"sweeper: {study / 'study.json'}:{line}: its axes leave out BLOCK '1024', "
            "which the space the study records gives and the journal's trials choose "
            f"(1 trial, first {study / JOURNAL}:{first}), so study.json is damaged; "
            "restore '1024' to its axis 'BLOCK' (every label the trials choose from, as the "
            "space file gives them), or move the study folder away; nothing was moved")
    _refused(study, space, said, "nothing was moved\n", capsys)


def test_a_resume_with_more_labels_widens_the_study_and_keeps_every_trial(measured, tmp_path,
                                                                           capsys):
    study, space = _copy(measured, tmp_path)
    capsys.readouterr()
    assert main(["run", str(space), "--device", "interpret", "--studies-dir", str(study.parent),
                 "--quiet", "--no-report", "-p", "BLOCK=256,512,1024"]) == 0
    assert capsys.readouterr().err == ""
    assert json.loads((study / "study.json").read_text())["axes"]["BLOCK"] == [
        "256", "1024", "512"]
    assert sorted(t.choice["BLOCK"] for t in StudyStore(study).records()[0]) == [
        "1024", "256", "512"]
