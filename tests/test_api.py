"""The Python API: ``sweeper.run`` goes through the engine ``sweeper run`` calls and
returns a ``Study`` of any store; bad input raises the command's one-line error; the
Study's tables are typed and agree with the report; the progress bar draws no control
codes where it cannot be live."""

from __future__ import annotations

import functools
import io
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

import sweeper
from sweeper.errors import SpaceError, StudyError, SweeperError
from sweeper.progress import ProgressReporter
from sweeper.store import StudyStore
from sweeper.winners import Winners
from tests.api_fixtures import FAILED, MISSING, ROOT, SPACE, TABLE, mixed_table, replayed_trials

TINY = {"study": "tiny", "kernel": "copy", "sampler": "exhaustive",
        "params": {"grid": ["sms"], "block": [32, 64], "BLOCK": [256], "footprint": ["4KiB"]},
        "measure": {"warmup": 1, "repeat": 3}}


def test_run_takes_a_path_yaml_text_or_a_dict_and_returns_the_study(tmp_path, capsys):
    table = mixed_table(tmp_path)
    space = tmp_path / "mixed.yaml"
    space.write_text(SPACE)
    import yaml

    studies = {}
    for kind, given in (("path", space), ("text", SPACE), ("dict", yaml.safe_load(SPACE))):
        study = sweeper.run(given, device=f"replay:{table}", studies_dir=tmp_path / kind,
                            quiet=True, report=False)
        assert isinstance(study, sweeper.Study)
        assert (study.name, study.path) == ("mixed-replay", tmp_path / kind / "mixed-replay")
        assert (study.device, study.gpu, study.kernel) == ("replay", "replay: NVIDIA H200",
                                                          "copy")
        studies[kind] = study
    assert studies["text"].space == SPACE
    assert yaml.safe_load(studies["dict"].space) == yaml.safe_load(SPACE)
    command = json.loads((studies["dict"].path / "study.json").read_text())["command"]
    assert command == f"sweeper.run(<dict>, device='replay:{table}')"
    frames = [s.trials_dataframe().drop(columns=["started", "wall_s"]) for s in
              studies.values()]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    pd.testing.assert_frame_equal(frames[0], frames[2])
    assert capsys.readouterr().out == ""      # quiet: nothing printed
    sweeper.run(space, device=f"replay:{table}", studies_dir=tmp_path / "loud", report=False)
    out = capsys.readouterr().out             # the command's own lines, as `sweeper run`
    assert "study mixed-replay" in out and "done: 4 measured, 1 failed, 1 config the recorded " \
        "table does not hold, 2 skipped by" in out
    # where the call went, as the command's last line says, from the call (no python start)
    time_line = out.splitlines()[-1]
    assert time_line.startswith("time: ") and " s in all: space and device " in time_line
    assert "python start" not in time_line


def test_run_options_are_the_commands(tmp_path):
    study = sweeper.run(ROOT / "spaces/copy.yaml", device=f"replay:{TABLE}",
                        studies_dir=tmp_path, study="two", trials=2, time="10m",
                        params={"BLOCK": [512, 1024], "block": 128}, quiet=True, report=False)
    trials = study.trials_dataframe()
    assert study.name == "two" and len(trials) == 2
    assert set(trials["BLOCK"]) <= {512, 1024} and set(trials["block"]) == {128}
    assert not (study.path / "report.md").exists()             # report=False
    assert study.report() == study.path / "report.md"
    assert study.report().is_file()


@pytest.mark.parametrize(("space", "message"), [
    ("kernel: copy\nparams:\n  BLOCK: [300]\n",
     "<string>:3: params.BLOCK[0]: 300 is not a power of two"),
    ({"kernel": "copy", "params": {"BLOCK": [300]}},
     "<dict>: params.BLOCK[0]: 300 is not a power of two"),
    ({"kernel": "copy", "params": {"BLOCK": [object()]}}, "<dict>: not YAML data"),
    ("{kernel: copy, params: {BLOK: [256]}}", "<string>:1: params.BLOK: unknown"),
    # the YAML reader's limits name no line of the YAML the dict was dumped to
    ({"kernel": "copy", "params": {}, "x": functools.reduce(lambda d, _: {"a": d}, range(150),
                                                            {})},
     "<dict>: nested more than 100 levels deep"),
    ({"kernel": "copy", "params": {}, "x": list(range(30000))},
     "<dict>: the document grows past 20000 values"),
])
def test_a_bad_space_raises_the_commands_one_line_error_and_writes_nothing(
        tmp_path, space, message):
    with pytest.raises(SpaceError) as err:
        sweeper.run(space, device="interpret", studies_dir=tmp_path / "st")
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize(("options", "message"), [
    ({"trials": 0}, "trials: 0 is not a whole number >= 1"),
    ({"trials": 10**10}, "trials: 10000000000 is more trials than 1,000,000,000; allowed: "
     "a whole number from 1 to 1,000,000,000"),
    ({"time": "soon"}, "time: "),
    ({"time": -1}, "time: -1 is not a positive duration of at most 1000h"),
    ({"time": "-1"}, "time: '-1' is not a duration"),          # text, quoted as text
    ({"study": "../up"}, "study: '../up' is not a study name: '/' is not allowed"),
    ({"device": "tpu"}, "unknown device 'tpu'; known: cuda, interpret, replay"),
])
def test_bad_options_raise_sweeper_errors_not_system_exit(tmp_path, options, message):
    with pytest.raises(SweeperError, match="^" + message.replace("(", r"\(")):
        sweeper.run(ROOT / "spaces/copy-small.yaml", studies_dir=tmp_path / "st",
                    **{"device": "interpret", **options})
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize(("options", "message"), [
    ({"device": None}, "device: None is not a device name; allowed: text, one of cuda, "
     "interpret, replay"),
    ({"device": 5}, "device: 5 is not a device name; allowed: text, one of cuda,"),
    ({"storage": 5}, "storage: 5 is not a storage; allowed: a postgresql:// URL"),
    ({"studies_dir": 5}, "studies_dir: 5 is not a path; allowed: text or a Path"),
    ({"params": 5}, "params: 5 is not parameter overrides; allowed: a dict such as "
     "{'BLOCK': [1024, 2048]}, or 'KEY=VALUES' texts"),
    ({"params": ["BLOCK=256", 5]}, "params: ['BLOCK=256', 5] is not parameter overrides"),
    ({"params": {"BLOCK": {1, 2}}}, "params['BLOCK']: {1, 2} is not values of a space; "
     "allowed: numbers, text, booleans, or a list of them"),
    ({"allow_path": 5}, "allow_path: 5 is not a folder; allowed: a path, or a list of paths"),
    ({"time": 10**400}, "time: 1000000000000000000000000000000000000... is not a positive "
     "duration of at most 1000h"),
    ({"time": 1e12}, "time: 1000000000000.0 is not a positive duration of at most 1000h"),
    ({"time": 1000 * 3600 + 1}, "time: 3600001 is not a positive duration of at most "
     "1000h"),
    ({"time": float("nan")}, "time: nan is not a positive duration of at most 1000h"),
    ({"time": [10]}, "time: [10] is not a duration"),
    ({"gpus": [0, 0]}, "gpus: [0, 0] is not GPU indices; allowed: 'all', '0,1' or [0, 1], "
     "each index once"),
    ({"gpus": [0, "1"]}, "gpus: [0, '1'] is not GPU indices"),
    ({"gpus": 1}, "gpus: 1 is not GPU indices"),
    ({"force": "no"}, "force: 'no' is not True or False"),
    ({"quiet": 1}, "quiet: 1 is not True or False"),
])
def test_arguments_of_the_wrong_type_are_refused_with_a_sweeper_error(
        tmp_path, monkeypatch, options, message):
    """A value the command could never have been given is one line naming the keyword and
    what it takes, never a raw AttributeError, TypeError or OverflowError, and nothing is
    written; a number of seconds is held to ``--time``'s 1000 h as text is."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SweeperError) as err:
        sweeper.run(ROOT / "spaces/copy-small.yaml",
                    **{"device": "interpret", "studies_dir": "st", **options})
    assert type(err.value) is SweeperError
    assert str(err.value).startswith(message), str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_numpy_numbers_and_arrays_are_taken_as_the_values_they_hold(tmp_path):
    """A space built in a notebook holds numpy's numbers and arrays (``np.arange``,
    ``np.int64``) and ranges: a dict space, ``params`` and ``trials`` take them as the
    Python values they hold, never refusing an integer as "not a whole number"."""
    import numpy as np

    space = {**TINY, "params": {**TINY["params"], "block": np.array([32, 64]),
                                "BLOCK": [np.int64(256)]}}
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False, trials=np.int64(2), params={"grid": range(1, 3)})
    trials = study.trials_dataframe()
    assert len(trials) == 2 and set(trials["BLOCK"]) == {256}
    assert set(trials["grid"]) <= {1, 2}
    assert yaml.safe_load(study.space)["params"]["block"] == [32, 64]


def test_float_values_in_params_reach_the_space_as_the_floats_they_are(tmp_path):
    """A float in ``params=`` is read as the same float (``1e20``, ``inf``, ``nan``), not
    as the text JSON writes for it (``1e+20``, ``Infinity``): an axis refuses it as the
    dict space refuses the same float, by its value, never as an unknown name."""
    import math

    from sweeper.api._run import _override
    from sweeper.space._yaml import load_with_lines

    for value in (1e20, -1e-7, 0.1, 1.0, float("inf"), float("-inf"), float("nan")):
        (back,), _ = load_with_lines(_override("BLOCK", value).values, "<test>")
        assert type(back) is float
        assert back == value or (math.isnan(value) and math.isnan(back)), back
        errors = []
        for space, params in (({**TINY, "params": {**TINY["params"], "BLOCK": [value]}}, {}),
                              (TINY, {"BLOCK": [value]})):
            with pytest.raises(SpaceError) as err:
                sweeper.run(space, params=params, device="interpret", studies_dir=tmp_path)
            errors.append(str(err.value).partition("params.BLOCK[0]: ")[2])
        assert errors[0] == errors[1] == f"{value} is not an integer, a size or an expression"
    assert list(tmp_path.iterdir()) == []


def test_gpus_takes_a_list_of_indices_as_the_command_takes_0_1(tmp_path):
    """``gpus=[0, 1]`` is ``--gpus 0,1``: on the interpreter, two workers."""
    study = sweeper.run(TINY, device="interpret", studies_dir=tmp_path, gpus=[0, 1],
                        quiet=True, report=False)
    trials = StudyStore(study.path).records()[0]
    assert len(trials) == 2 and all(t.status.value == "ok" for t in trials)
    assert {t.gpu.index for t in trials if t.gpu} <= {0, 1}


def test_study_and_load_study_refuse_arguments_of_the_wrong_type(tmp_path):
    with pytest.raises(SweeperError, match=r"^storage: 5 is not a study; allowed: a study's "
                       r"folder \(text or a Path\), or a Storage$"):
        sweeper.Study(5)
    with pytest.raises(SweeperError, match=r"^study: 5 is not a study; allowed: its folder or "
                       r"name, as text or a Path$"):
        sweeper.load_study(5)
    with pytest.raises(SweeperError, match=r"^storage: 5 is not a storage; allowed: a "
                       r"postgresql:// URL"):
        sweeper.load_study("x", storage=5)
    with pytest.raises(SweeperError, match=r"^studies_dir: None is not a path"):
        sweeper.load_study("x", studies_dir=None)


def test_study_methods_refuse_bad_values_in_one_line(tmp_path):
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=tmp_path,
                        quiet=True, report=False)
    with pytest.raises(SweeperError, match=r"^scale: 'bogus' is not a colour scale; allowed: "
                       r"study, problem, map$") as err:
        study.report(scale="bogus")
    assert type(err.value) is SweeperError
    with pytest.raises(SweeperError, match=r"^shared_scale: 'yes' is not True or False$"):
        study.report(shared_scale="yes")
    assert not (study.path / "report.md").exists()
    with pytest.raises(SweeperError, match=r"^format \['csv'\] is unknown; allowed: tuning, "
                       r"csv, parquet"):
        study.export(format=["csv"])
    with pytest.raises(SweeperError, match=r"^target: 5 is not a path; allowed: text or a "
                       r"Path$"):
        study.export(5)
    with pytest.raises(SweeperError, match=r"^replace: 1 is not True or False$"):
        study.export(tmp_path / "o.db", format="optuna", replace=1)
    with pytest.raises(SweeperError, match=r"^samples: 'yes' is not True or False$"):
        study.trials_dataframe(samples="yes")
    assert not (tmp_path / "o.db").exists() and not (tmp_path / "5").exists()


def test_api_errors_name_the_keywords_where_the_commands_name_its_flags(tmp_path):
    """One check serves both front doors; from Python its message names the keyword
    (``studies_dir=``, ``replace=True``), never a flag no notebook can pass, and the
    command's spelling is back once the call returns."""
    from sweeper.options import study_folder

    (tmp_path / "file").write_text("")
    with pytest.raises(SweeperError, match=re.escape(
            f"studies_dir={str(tmp_path / 'file')!r}: not a folder")):
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path / "file")
    with pytest.raises(SweeperError, match=re.escape(
            f"--studies-dir {tmp_path / 'file'}: not a folder")):
        study_folder(str(tmp_path / "file"), "tiny")
    with pytest.raises(SweeperError, match=r"^gpus='all': the interpret device has no GPUs to "
                       r"count; name the workers by index \(gpus='0,1'\)$"):
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path, gpus="all")
    with pytest.raises(SpaceError, match=r"to allow another folder pass allow_path='DIR' or "
                       "set SWEEPER_ALLOW_PATH$"):
        sweeper.run("kernel: copy\nextends: /etc/hostname\n", device="interpret",
                    studies_dir=tmp_path)
    with pytest.raises(SweeperError, match="^storage: 'mysql://h/db' is not a storage; "
                       r"allowed: a postgresql://USER@HOST/DB URL \(leave it out for the "
                       r"journal under studies_dir\)$"):
        sweeper.load_study("tiny", storage="mysql://h/db", studies_dir=tmp_path)
    study = sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    with pytest.raises(StudyError, match=r"; rerun with force=True to keep its trials under "
                       r"these settings \(it measures nothing new: the study holds every "
                       r"config of this space\), or with study='NEW' to start a new study$"):
        sweeper.run({**TINY, "measure": {"warmup": 1, "repeat": 4}}, device="interpret",
                    studies_dir=tmp_path, quiet=True, report=False)
    with pytest.raises(SweeperError, match=r"^format='optuna' needs target='URL': "
                       r"sqlite:///FILE\.db, or a journal file path$"):
        study.export(format="optuna")
    journal = tmp_path / "optuna.log"
    study.export(journal, format="optuna")
    with pytest.raises(SweeperError, match=re.escape(
            f"target={str(journal)!r}: it already holds an Optuna study 'tiny-interpret'; "
            "pass replace=True to delete it and write it again")):
        study.export(journal, format="optuna")
    assert study.export(journal, format="optuna", replace=True) == journal


@pytest.mark.parametrize(("params", "api", "command"), [
    ({5: [1]}, "params={5: [1]}: params.5: unknown key '5'; known: grid, block, dtype, "
     "footprint, cache, n, BLOCK", "-p 5=[1]: params.5: unknown key '5'; known: "),
    ({"block": 32, "BLOCK": [300]}, "params={'BLOCK': [300]}: params.BLOCK[0]: 300 is not a "
     "power of two", "-p BLOCK=[300]: params.BLOCK[0]: 300 is not a power of two"),
    (["BLOCK"], "params: 'BLOCK' is not KEY=VALUE[,VALUE...]",
     "-p: 'BLOCK' is not KEY=VALUE[,VALUE...]"),
    (["BLOCK=256", "BLOCK=512"], "params='BLOCK=512': BLOCK is given twice (also "
     "params='BLOCK=256'); give each axis once", "-p BLOCK=512: BLOCK is given twice (also "
     "-p BLOCK=256); give each axis once"),
    (["BLOCK=@x"], "params: 'BLOCK=@x': not YAML: found character '@' that cannot start "
     "any token", "-p: 'BLOCK=@x': not YAML: found character '@' that cannot start any "
     "token\n"),
], ids=["a-dict-key", "a-dict-value", "no-equals-sign", "given-twice", "not-yaml"])
def test_params_errors_name_params_where_the_command_names_p(tmp_path, capsys, params, api,
                                                             command):
    """``params=`` is the command's ``-p``: from Python its errors name ``params`` as the
    caller gave it, a dict's entry as the dict wrote it (``params={'BLOCK': [300]}``), never
    as the command's text (``params='BLOCK=[300]'``)."""
    from sweeper.cli import main

    with pytest.raises(SpaceError) as err:
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path / "st", params=params)
    assert str(err.value).startswith(api) and "\n" not in str(err.value), str(err.value)
    (tmp_path / "tiny.yaml").write_text(json.dumps(TINY))
    texts = [f"{k}={json.dumps(v)}" for k, v in params.items()] \
        if isinstance(params, dict) else params
    assert main(["run", str(tmp_path / "tiny.yaml"), "--device", "interpret", "--studies-dir",
                 str(tmp_path / "st"), *[x for t in texts for x in ("-p", t)]]) == 2
    assert capsys.readouterr().err.startswith(command)
    assert not (tmp_path / "st").exists()


def test_a_busy_study_names_study_where_the_command_names_its_flag(tmp_path):
    """Another process holding the study: from Python the way out is ``study='NEW'``; the
    command's ``--study NEW`` is unchanged (workers are a command only)."""
    study = sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    holder = StudyStore(study.path)
    holder.open_journal()
    try:
        with pytest.raises(StudyError) as err:
            sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
        assert str(err.value) == (
            f"{study.path}: another sweeper process is running this study; wait for it to "
            "finish, or pass study='NEW' (processes share a study as `sweeper worker "
            "--study NAME`)")
        with pytest.raises(StudyError) as err:
            StudyStore(study.path).open_journal()
        assert str(err.value) == (
            f"{study.path}: another sweeper process is running this study; wait for it to "
            "finish, or pass --study NEW (processes share a study as `sweeper worker "
            "--study NAME`)")
    finally:
        holder.close()


def test_a_final_left_for_a_longer_budget_names_time_where_the_command_names_its_flag():
    """The budget that would cover a final left over, as the caller sets it."""
    from types import SimpleNamespace

    from sweeper.core._spelling import keywords
    from sweeper.engine._lines import _deferred_line
    from sweeper.store import ProblemKey

    idle = SimpleNamespace(finals_deferred=[ProblemKey("float32", 4096, "cold")],
                           finals_needed_s=1.2, finals_left_s=0.8, finals_room_s=2.0,
                           measured=0)
    with keywords():                                      # as inside sweeper.run
        assert _deferred_line(idle, 3.0).endswith("report's share): time='4s' or more "
                                                  "measures them")
    assert _deferred_line(idle, 3.0).endswith("report's share): --time 4s or more measures them")


def test_the_dataframe_has_a_typed_row_per_trial(tmp_path):
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}",
                        studies_dir=tmp_path, quiet=True, report=False)
    df = study.trials_dataframe()
    assert len(df) == 8 and list(df["number"]) == list(range(8))
    dtypes = df.dtypes.astype(str).to_dict()
    assert {k: dtypes[k] for k in ("number", "status", "retry", "reason", "dtype",
                                   "footprint", "grid", "grid_label", "block", "BLOCK", "n",
                                   "median_ms", "ci_lo_ms", "ci_hi_ms", "gbps", "flags")} == {
        "number": "int64", "status": "category", "retry": "bool", "reason": "string",
        "dtype": "string",
        "footprint": "Int64", "grid": "Int64", "grid_label": "string", "block": "Int64",
        "BLOCK": "Int64", "n": "Int64", "median_ms": "float64", "ci_lo_ms": "float64",
        "ci_hi_ms": "float64", "gbps": "float64", "flags": "string"}
    assert str(dtypes["started"]).startswith("datetime64") and "UTC" in dtypes["started"]
    assert list(df.columns[:9]) == ["number", "status", "retry", "reason", "dtype",
                                    "footprint", "cache", "grid", "block"]
    assert not df["retry"].any()                 # no worker was killed from outside
    by_status = df.groupby("status", observed=True).size().to_dict()
    assert by_status == {"ok": 4, "invalid": 2, "wrong_answer": 1, "missing": 1}
    failed = df[(df["grid_label"] == FAILED["grid"]) & (df["block"] == 64)
                & (df["BLOCK"] == 1024)].iloc[0]
    assert failed["status"] == "wrong_answer" and failed["reason"] == "recorded as failed"
    assert pd.isna(failed["median_ms"]) and pd.isna(failed["gbps"])       # never 0 or inf
    ok = df[df["status"] == "ok"]           # a copy does no FLOPs: its FLOP/s are missing
    assert (ok["gbps"] > 0).all() and ok["gflops"].isna().all() and ok["tflops"].isna().all()
    ruled_out = df[df["status"] == "invalid"]
    assert ruled_out["grid"].isna().all() and set(ruled_out["BLOCK"]) == {512}
    assert ruled_out["reason"].str.startswith("constraint 'BLOCK >= 8*block' is false").all()
    missing = df[df["status"] == "missing"].iloc[0]
    assert (missing["grid_label"], missing["block"]) == (MISSING["grid"], 64)
    ok = df[df["status"] == "ok"]
    assert (ok["ci_lo_ms"] <= ok["median_ms"]).all() and (ok["median_ms"] <= ok["ci_hi_ms"]).all()
    assert (ok["gbps"] > 1000).all() and (ok["samples"] == 50).all()
    samples = study.trials_dataframe(samples=True)["samples_ms"]
    assert [len(s) for s in samples] == [0, 0, 50, 50, 0, 50, 50, 0]
    assert df.attrs["gpu"] == "replay: NVIDIA H200" and df.attrs["headline"] == "GB/s"


def test_winners_are_the_reports_and_the_baselines_torchs(tmp_path):
    study = sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    winners = study.winners
    store = StudyStore(study.path)
    picks = Winners.of(store).picks(store.records()[0])
    assert len(winners) == len(picks) == 1
    row, pick = winners.iloc[0], next(iter(picks.values()))
    assert row["chosen_by"] == "interleaved final" and row["number"] == pick.trial.number
    assert row["median_ms"] == pick.median_ms            # the final's median, as report.md
    assert re.match("interleaved final: [345] rounds", row["median_from"])
    assert (row["dtype"], row["footprint"], row["cache"]) == ("float32", 4096, "cold")
    assert row["block"] in (32, 64) and row["BLOCK"] == 256
    assert str(winners.dtypes["block"]) == "Int64"
    baselines = study.baselines
    assert list(baselines["name"]) == ["torch copy_"]
    assert baselines.loc[0, "median_ms"] > 0 and baselines.loc[0, "samples"] >= 1
    assert study.export(tmp_path / "tuning.json") == tmp_path / "tuning.json"
    entry = json.loads((tmp_path / "tuning.json").read_text())["entries"][0]
    assert entry["median_ms"] == row["median_ms"] and entry["trial"] == row["number"]


def test_winners_are_in_problem_order_whatever_order_they_were_measured_in(tmp_path):
    """A space listing 8 KiB before 4 KiB measures 8 KiB first: the winners still come in
    (dtype, footprint, dims, cache) order, as report.md gives them (they came in the
    order of the winners' trial numbers, 8 KiB first)."""
    space = {**TINY, "sampler": "exhaustive",
             "params": {**TINY["params"], "block": [32], "footprint": ["8KiB", "4KiB"]}}
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    winners = study.winners
    assert winners["footprint"].tolist() == [4096, 8192]
    assert winners["number"].tolist() == [1, 0]         # 8 KiB was measured first


def test_a_study_with_no_measured_trial_gives_empty_tables_with_the_same_columns(tmp_path):
    """A study that measured nothing (every config missing from the replayed table, or no
    trial at all: a budget spent before the first) reads as a measured one does, with no
    rows: winners raised KeyError "['chosen_by'] not in index".  The dimensions' columns
    aside: only a trial resolved to a config names them."""
    table = mixed_table(tmp_path)
    measured = sweeper.run(SPACE, device=f"replay:{table}", studies_dir=tmp_path / "measured",
                           quiet=True, report=False)
    failed = sweeper.run(SPACE.replace("block: [64, 128]", "block: [32]"),
                         device=f"replay:{table}", studies_dir=tmp_path / "failed",
                         quiet=True, report=False)
    assert set(failed.trials_dataframe()["status"]) == {"missing"}
    nothing = sweeper.run(SPACE, device=f"replay:{table}", studies_dir=tmp_path / "nothing",
                          quiet=True, report=False)
    (nothing.path / "trials.jsonl").unlink()
    nothing = sweeper.load_study(nothing.path)
    assert nothing.trials_dataframe().empty
    dims = measured.trials_dataframe().attrs["dims"]
    assert dims == ["n"]
    want = {"winners": measured.winners.drop(columns=dims).dtypes.to_dict(),
            "trials": measured.trials_dataframe().drop(columns=dims).dtypes.to_dict()}
    assert want["winners"]["chosen_by"] == "string" and want["trials"]["gbps"] == "float64"
    for study, resolved in ((failed, True), (nothing, False)):
        winners, trials = study.winners, study.trials_dataframe()
        assert winners.empty and ("n" in winners) is resolved and ("n" in trials) is resolved
        assert winners.drop(columns=dims, errors="ignore").dtypes.to_dict() == want["winners"]
        assert trials.drop(columns=dims, errors="ignore").dtypes.to_dict() == want["trials"]
        baselines = study.baselines          # the dimensions where a trial names them
        assert baselines.empty and baselines.dtypes.astype(str).to_dict() == {
            "name": "string", "dtype": "string", "footprint": "int64", "cache": "string",
            **({"n": "int64"} if resolved else {}),
            "median_ms": "float64", "ci_lo_ms": "float64", "ci_hi_ms": "float64",
            "gbps": "float64", "samples": "int64"}


def test_load_study_opens_a_study_and_refuses_a_folder_without_one(tmp_path):
    sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=tmp_path,
                quiet=True, report=False)
    study = sweeper.load_study(tmp_path / "mixed-replay")
    assert len(study.trials_dataframe()) == 8 and study.winners["number"].tolist() == [6]
    assert study.baselines.empty                  # a replayed study times no torch
    (tmp_path / "nothing").mkdir()
    with pytest.raises(StudyError, match=re.escape(
            f"no study {str(tmp_path / 'nothing')!r} (looked in {tmp_path / 'nothing'})")):
        sweeper.load_study(tmp_path / "nothing")
    (tmp_path / "nothing" / "study.json").write_text("{")
    with pytest.raises(StudyError, match="^" + re.escape(str(tmp_path / "nothing"))):
        sweeper.load_study(tmp_path / "nothing")


def test_a_study_is_checked_when_it_is_made_saying_what_is_allowed(tmp_path, monkeypatch):
    """``sweeper.Study(path)`` of a folder without a study was made all the same, and
    every question then raised, its display in a notebook too: refused at once, naming
    the folder and what is allowed (a studies folder: its studies; a close name: that
    study)."""
    from IPython.core.formatters import DisplayFormatter

    monkeypatch.chdir(tmp_path)
    sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", quiet=True, report=False)
    allowed = ("allowed: a study's folder (what sweeper run prints, a Study's .path), or "
               "sweeper.load_study(NAME) for a study's name under studies_dir")
    with pytest.raises(StudyError) as err:
        sweeper.Study("nope")
    assert str(err.value) == f"Study('nope'): no folder nope; {allowed}"
    (tmp_path / "empty").mkdir()
    with pytest.raises(StudyError) as err:
        sweeper.Study(tmp_path / "empty")
    assert str(err.value) == (f"Study({str(tmp_path / 'empty')!r}): no study in "
                              f"{tmp_path / 'empty'} (no study.json); {allowed}")
    with pytest.raises(StudyError) as err:
        sweeper.Study("mixed-replay")                   # a name: load_study's to find
    assert str(err.value) == (f"Study('mixed-replay'): no folder mixed-replay; {allowed}; "
                              "did you mean studies/mixed-replay?")
    with pytest.raises(StudyError) as err:
        sweeper.Study("studies")
    assert str(err.value) == (
        "Study('studies'): studies is a studies folder, not a study; its studies: "
        "mixed-replay; give one's folder (studies/mixed-replay), or "
        "sweeper.load_study('mixed-replay', studies_dir='studies')")
    with pytest.raises(StudyError, match=r"^Study\('studies/mixed-replay/study.json'\): "
                       r"studies/mixed-replay/study.json is a file, not a folder; allowed"):
        sweeper.Study("studies/mixed-replay/study.json")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "study.json").write_text("{")
    with pytest.raises(StudyError, match=r"^bad"):
        sweeper.Study("bad")
    study = sweeper.Study("studies/mixed-replay")
    assert study.kernel == "copy" and len(study.trials_dataframe()) == 8
    shown, _ = DisplayFormatter().format(study)
    assert "text/html" in shown
    assert list(tmp_path.glob("nope*")) == []


def test_a_study_given_a_url_or_a_store_without_a_study_is_refused_when_made(tmp_path):
    """``sweeper.Study(storage)`` given a URL read it as a folder of a mangled name
    (``no folder postgresql:/u@host/db``), and given a store (``StudyStore``, a
    database's) without a study was made all the same, every question of it failing
    later; each is refused when made, saying what is wrong and what is allowed (a
    database's study by ``load_study``, by the name its ``repr`` shows)."""
    with pytest.raises(StudyError) as err:
        sweeper.Study("postgresql://me:secret@db.example/sweeps")
    assert str(err.value) == (
        "Study('postgresql://me:***@db.example/sweeps'): a database URL names no study; "
        "allowed: sweeper.load_study('NAME', storage='postgresql://me:***@db.example/sweeps') "
        "for the study NAME it keeps, or a study's folder")
    with pytest.raises(StudyError) as err:          # a database's Study's repr, pasted
        sweeper.Study(storage="postgresql://me@db.example/sweeps (study copy-fp32)")
    assert str(err.value) == (
        "Study('postgresql://me@db.example/sweeps (study copy-fp32)'): a database URL names "
        "no study; allowed: sweeper.load_study('copy-fp32', "
        "storage='postgresql://me@db.example/sweeps'), or a study's folder")
    with pytest.raises(StudyError, match=re.escape(
            "Study('sqlite:///optuna.db'): sqlite:// is no store of studies; allowed: a "
            "study's folder, or sweeper.load_study(NAME, storage=URL) with a postgresql:// "
            "URL")):
        sweeper.Study("sqlite:///optuna.db")
    with pytest.raises(StudyError, match=re.escape(
            f"Study({str(tmp_path / 'none')!r}): no folder {tmp_path / 'none'}; allowed")):
        sweeper.Study(StudyStore(tmp_path / "none"))
    assert list(tmp_path.iterdir()) == []


def test_load_study_takes_a_study_name_as_the_commands_do(tmp_path, monkeypatch, capsys):
    """``load_study("NAME")`` finds the study of that name under ``studies_dir`` (default
    ``studies``, as ``sweeper report NAME``) where no folder ``NAME`` holds one; a name
    that finds none says where it looked and the close name there is."""
    monkeypatch.chdir(tmp_path)
    sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", quiet=True, report=False)
    assert sweeper.load_study("mixed-replay").path == Path.cwd() / "studies/mixed-replay"
    assert len(sweeper.load_study("mixed-replay").trials_dataframe()) == 8
    (tmp_path / "studies").rename(tmp_path / "elsewhere")
    study = sweeper.load_study("mixed-replay", studies_dir=tmp_path / "elsewhere")
    assert study.path == tmp_path / "elsewhere" / "mixed-replay"
    with pytest.raises(StudyError) as err:
        sweeper.load_study("mixed-replai", studies_dir="elsewhere")
    assert str(err.value) == ("no study 'mixed-replai' (looked in mixed-replai and "
                              "elsewhere/mixed-replai); did you mean elsewhere/mixed-replay?")
    from sweeper.cli import main

    capsys.readouterr()                           # the command: the same lookup, one line
    assert main(["report", "mixed-replai", "--studies-dir", "elsewhere"]) == 2
    assert capsys.readouterr().err == f"sweeper: {err.value}\n"


def test_load_study_of_a_studies_folder_lists_its_studies_as_study_does(tmp_path,
                                                                        monkeypatch, capsys):
    """``load_study("st1")`` of a folder holding studies said only ``no study 'st1'
    (looked in st1 and studies/st1)`` where ``Study("st1")`` lists the studies in it: it
    says the same, and so does the command, naming the option as each caller gives it."""
    monkeypatch.chdir(tmp_path)
    sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir="st1",
                quiet=True, report=False)
    held = ("st1 is a studies folder, not a study; its studies: mixed-replay; give one's "
            "folder (st1/mixed-replay), or ")
    with pytest.raises(StudyError) as err:
        sweeper.load_study("st1")
    assert str(err.value) == f"no study 'st1': {held}its name, 'mixed-replay', with " \
        "studies_dir='st1'"
    with pytest.raises(StudyError) as err:
        sweeper.Study("st1")
    assert str(err.value) == f"Study('st1'): {held}sweeper.load_study('mixed-replay', " \
        "studies_dir='st1')"
    from sweeper.cli import main

    capsys.readouterr()
    assert main(["report", "st1"]) == 2
    assert capsys.readouterr().err == (f"sweeper: no study 'st1': {held}its name, "
                                       "'mixed-replay', with --studies-dir st1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixed.csv", "st1"]


def test_load_study_of_a_name_cut_short_suggests_the_study_it_begins(tmp_path, monkeypatch):
    """``copy-smal`` is the start of ``copy-small-interpret``: that is the study meant, not
    ``copy-oat``, whose whole name is a closer spelling of another study."""
    monkeypatch.chdir(tmp_path)
    for name in ("copy-oat", "copy-small-interpret", "copy-fp32-interpret"):
        (tmp_path / "studies" / name).mkdir(parents=True)
        (tmp_path / "studies" / name / "study.json").write_text("{}")
    with pytest.raises(StudyError, match=r"; did you mean studies/copy-small-interpret\?$"):
        sweeper.load_study("copy-smal")
    with pytest.raises(StudyError, match=r"; did you mean studies/copy-oat\?$"):
        sweeper.load_study("copy-oaat")


def test_an_empty_study_name_is_refused_as_empty(tmp_path, monkeypatch, capsys):
    """``load_study("")`` and ``sweeper report ""`` say the name is empty, not that they
    looked in '' and the studies folder."""
    monkeypatch.chdir(tmp_path)
    said = ("no study named: the study is empty; give a study's folder or its name under "
            "the studies folder")
    with pytest.raises(StudyError, match=f"^{re.escape(said)}$"):
        sweeper.load_study("")
    from sweeper.cli import main

    assert main(["report", ""]) == 2
    assert capsys.readouterr().err == f"sweeper: {said}\n"
    assert list(tmp_path.iterdir()) == []


def test_a_study_run_into_postgresql_is_returned_and_loaded_from_there(postgres_url,
                                                                      tmp_path):
    """``storage=URL``: every trial goes to the database, the Study returned reads it from
    there, and ``load_study(name, storage=URL)`` opens it again; the local folder holds
    only the report."""
    url = postgres_url
    studies = tmp_path / "local"
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=studies,
                        study="api-pg", storage=url, quiet=True)
    assert study.name == "api-pg" and study.location.startswith("postgresql://")
    assert len(study.trials_dataframe()) == 8 and study.winners["number"].tolist() == [6]
    assert not (studies / "api-pg" / "trials.jsonl").exists()
    assert (studies / "api-pg" / "report.md").exists()
    again = sweeper.load_study("api-pg", storage=url, studies_dir=studies)
    assert again.trials_dataframe()["number"].tolist() == \
        study.trials_dataframe()["number"].tolist()
    assert repr(again).startswith("Study('postgresql://")
    with pytest.raises(StudyError, match="no study 'nothing-here'"):
        sweeper.load_study("nothing-here", storage=url, studies_dir=studies)
    from sweeper.store._postgres import PostgresStore

    with pytest.raises(StudyError, match=r"^Study\('postgresql://.* \(study nothing-here\)'\): "
                       r"no study 'nothing-here' there; allowed: a study the database keeps, "
                       r"as sweeper.load_study\(NAME, storage=URL\) finds it by name$"):
        sweeper.Study(PostgresStore(url, "nothing-here", studies / "nothing-here"))
    assert sweeper.Study(PostgresStore(url, "api-pg", studies / "api-pg")).kernel == "copy"


def test_the_api_builds_the_engines_options_and_never_the_command_line():
    """The API's one way in is the engine: no argparse, nothing of ``sweeper.cli``."""
    import ast

    for path in (ROOT / "sweeper" / "api").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom)]
        assert not [n for n in names if n.startswith("sweeper.cli")], path
        assert "_parser" not in path.read_text(encoding="utf-8"), path


def test_the_progress_bar_written_to_a_pipe_has_no_control_codes(tmp_path):
    from rich.console import Console

    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out))
    trials = replayed_trials(tmp_path)
    reporter.start(len(trials), 0)
    for t in trials:
        reporter.trial(t, trials[6])
    reporter.finish()
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    assert text.splitlines() == [text.strip()]             # drawn once, at the end
    assert "8/8" in text and "best 2840 GB/s last missing" in text


def test_text_or_a_dict_without_study_is_named_after_its_kernel(tmp_path):
    """Two kernels run from Python without ``study:`` are two studies, each named after its
    kernel (a second was refused: "dict-interpret: cannot resume, its kernel's source
    changed"); a mapping ``kernel:`` and ``from_autotune:`` name theirs the same way."""
    small = {"sampler": "exhaustive", "measure": {"warmup": 1, "repeat": 3},
             "params": {"block": [32], "BLOCK": [256], "footprint": ["4KiB"]}}
    first = sweeper.run({**small, "kernel": "copy"}, device="interpret",
                        studies_dir=tmp_path, quiet=True, report=False)
    second = sweeper.run(yaml.safe_dump({**small, "kernel": {"name": "scale"}}),
                         device="interpret", studies_dir=tmp_path, quiet=True, report=False)
    assert (first.name, second.name) == ("copy-interpret", "scale-interpret")
    third = sweeper.run("from_autotune: tests.short_kernels_for_tests:add\n"
                        "params: {n_elements: [1024]}\nmeasure: {warmup: 1, repeat: 3}\n",
                        device="interpret", studies_dir=tmp_path, quiet=True, report=False)
    assert third.name == "add-interpret"


@pytest.mark.parametrize(("call", "message"), [
    (lambda s: sweeper.run(ROOT / "spaces/copy-small.yaml", devcie="interpret",
                           studies_dir=s), "sweeper.run() takes no keyword 'devcie'; allowed: "
     "space, device, studies_dir, study, trials, time, params, force, quiet, report, "
     "priors, allow_path, gpus, storage, gpu_check, gpu_check_target, workers, "
     "compile_workers, svg, timing, debug; did you mean 'device'?"),
    (lambda s: sweeper.load_study("x", studies=s), "sweeper.load_study() takes no keyword "
     "'studies'; allowed: study, storage, studies_dir; did you mean 'studies_dir'?"),
    (lambda s: sweeper.tuned("copy", dtyp="float32"), "sweeper.tuned() takes no keyword "
     "'dtyp'; allowed: kernel, dtype, footprint, dims, gpu, path, cache; did you mean 'dtype'?"),
    (lambda s: sweeper.tuned_kernel(kye=["n"]), "sweeper.tuned_kernel() takes no keyword "
     "'kye'"),
    (lambda s: sweeper.cuda("copy.cu", "copy", ["y", "x", "n"], templat="copy<{V}>"),
     "sweeper.cuda() takes no keyword 'templat'; allowed: source, entry, args, template, "
     "nvrtc_options, shared_memory, constant_memory; did you mean 'template'?"),
    (lambda s: sweeper.kernel(lambda x, config: None, inputs={"x": "n"}, outputs=["x"],
                              refrence=lambda x: x), "sweeper.kernel() takes no keyword "
     "'refrence'; allowed: inputs, outputs, reference,"),
    (lambda s: sweeper.Study(s).export(fromat="csv"), "Study.export() takes no keyword "
     "'fromat'; allowed: target, format, replace; did you mean 'format'?"),
    (lambda s: sweeper.Study(s).report(scales="map"), "Study.report() takes no keyword "
     "'scales'; allowed: shared_scale, scale, svg, redraw; did you mean 'scale'?"),
    (lambda s: sweeper.Study(s).trials_dataframe(sample=True), "Study.trials_dataframe() "
     "takes no keyword 'sample'; allowed: samples; did you mean 'samples'?"),
])
def test_a_misspelt_keyword_names_the_ones_taken_and_the_likely_one(tmp_path, call, message):
    """Python's own "got an unexpected keyword argument" says neither what the function
    takes nor which was meant: each API function says both, as a SweeperError that is a
    TypeError too, before anything runs or is written."""
    study = tmp_path / "st" / "tiny-interpret"
    if "Study." in message:
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path / "st", quiet=True,
                    report=False)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SweeperError) as err:
        call(study if "Study." in message else tmp_path / "st")
    assert isinstance(err.value, TypeError)
    assert str(err.value).startswith(message), str(err.value)
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("call, message", [
    (lambda: sweeper.run(), "sweeper.run() needs space (the space: a space file's path, "
     "YAML text or a dict), not given; help(sweeper.run) says more"),
    (lambda: sweeper.load_study(), "sweeper.load_study() needs study (the study: its "
     "folder, or its name under studies_dir), not given; help(sweeper.load_study) says more"),
    (lambda: sweeper.kernel(lambda x, config: None), "sweeper.kernel() needs inputs= (the "
     "tensors by name and shape, such as {'x': 'n'}, or a factory problem -> dict of "
     "tensors), outputs= (the outputs: inputs written in place by name, such as ['x'], or "
     "new ones by shape, such as {'y': 'n'}) and reference= (torch code on copies of the "
     "inputs that returns the outputs, such as lambda x: x * 2), not given; "
     "help(sweeper.kernel) says more"),
    (lambda: sweeper.kernel(inputs={"x": "n"}, reference=lambda x: x),   # the decorator's
     "sweeper.kernel() needs outputs= (the outputs: "),
    (lambda: sweeper.tuned(), "sweeper.tuned() needs kernel (the kernel's name, as the "
     "tuning file names it, such as 'copy') and dtype= (the problem's dtype, such as "
     "'float32', 'fp32' or torch.float32), not given"),
    (lambda: sweeper.tuned(kernel="copy"), "sweeper.tuned() needs dtype= (the problem's"),
    (lambda: sweeper.cuda("copy.cu"), "sweeper.cuda() needs entry (the __global__ "
     "function's name) and args (its arguments in order: "),
    (lambda: sweeper.tuned_kernel(), "sweeper.tuned_kernel() needs key= (the arguments "
     "that are the problem's dimensions, as the study named them, such as ['n']), not "
     "given; help(sweeper.tuned_kernel) says more"),
])
def test_a_missing_argument_is_named_with_what_it_is(tmp_path, monkeypatch, call, message):
    """Python's own "kernel() missing 3 required keyword-only arguments" says neither what
    they are nor where to read it, and is no SweeperError: each public entry says which
    arguments it needs and what each is, as a SweeperError that is a TypeError too,
    before anything runs or is written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SweeperError) as err:
        call()
    assert isinstance(err.value, TypeError)
    assert str(err.value).startswith(message), str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_too_many_positional_arguments_say_which_it_takes_and_the_keywords(tmp_path):
    """``sweeper.run(space, "interpret")`` was Python's plain "takes 1 positional argument
    but 2 were given", no SweeperError, naming neither the argument nor the keywords: it
    says both; a method does not count ``self``."""
    from sweeper.core._spelling import entry

    with pytest.raises(SweeperError) as err:
        sweeper.run(str(tmp_path / "s.yaml"), "interpret")
    assert isinstance(err.value, TypeError)
    assert str(err.value).startswith(
        "sweeper.run() takes 1 positional argument (space), got 2; give the others by "
        "keyword: device=, studies_dir=, study=, ")
    assert list(tmp_path.iterdir()) == []

    class Holder:
        @entry()
        def report(self, *, svg=False):  # type: ignore[no-untyped-def]
            return svg

    with pytest.raises(SweeperError, match=re.escape(
            "Holder.report() takes 0 positional arguments (none), got 1; give the others "
            "by keyword: svg=")):
        Holder().report(True)
    assert Holder().report(svg=True) is True


def test_an_entry_must_say_what_each_argument_it_needs_is():
    """An API function whose needed argument ``entry`` cannot describe is refused as it is
    decorated (at import), never with a message that names no argument at a user's call."""
    from sweeper.core._spelling import entry

    def tuned(kernel, *, dtype, cache="cold"):  # type: ignore[no-untyped-def]
        return kernel, dtype, cache

    with pytest.raises(TypeError, match=re.escape("['kernel', 'dtype'], not ['kernel']")):
        entry(needs={"kernel": "its name"})(tuned)
    with pytest.raises(TypeError, match="needs= must say"):
        entry(needs={"kernel": "k", "dtype": "d", "cache": "c"})(tuned)
    checked = entry(needs={"kernel": "its name", "dtype": "its dtype"})(tuned)
    assert checked("copy", dtype="fp32") == ("copy", "fp32", "cold")
    assert checked(kernel="copy", dtype="fp32") == ("copy", "fp32", "cold")
    with pytest.raises(SweeperError, match=re.escape(
            "tuned() needs kernel (its name), not given")):
        checked(dtype="fp32")


def test_run_takes_every_option_of_the_command(tmp_path, capsys):
    """``workers``, ``compile_workers``, ``gpu_check_target``, ``svg`` and ``timing`` are
    ``--workers``, ``--compile-workers``, ``--gpu-check-target``, ``--svg`` and ``--timing``:
    the README says ``sweeper.run`` takes the command's options, and a bad value is one line
    naming the keyword, nothing written."""
    for options, message in [
            ({"workers": "threads"}, "workers: 'threads' is not 'process', 'inline' or None"),
            ({"gpu_check": "some"}, "gpu_check: 'some' is not 'first', 'all' or 'off'"),
            ({"compile_workers": -1}, "compile_workers: '-1' is not a whole number >= 0"),
            ({"compile_workers": True}, "compile_workers: True is not a whole number"),
            ({"gpu_check_target": "sm_1"}, "gpu_check_target: 'sm_1': not a CUDA architecture"),
            ({"timing": "yes"}, "timing: 'yes' is not True or False")]:
        with pytest.raises(SweeperError, match=re.escape(message)):
            sweeper.run(TINY, device="interpret", studies_dir=tmp_path / "bad", **options)
    assert not (tmp_path / "bad").exists()
    study = sweeper.run(ROOT / "spaces/copy-small.yaml", device="interpret", trials=4,
                        studies_dir=tmp_path, workers="inline", compile_workers=0,
                        gpu_check="off", gpu_check_target="90", svg=True, timing=True)
    out = capsys.readouterr().out
    assert "coordinator per trial (ms)" in out            # --timing's lines
    assert list(study.path.glob("heatmaps/*.svg"))


def test_what_the_engine_says_deep_in_a_run_names_keywords_not_flags(tmp_path, capsys):
    """Messages made far below ``sweeper.run`` (the compile pool's options, the stop after
    configs that all failed alike) name what a notebook passes: ``compile_workers=2``,
    ``force=True``, never ``--compile-workers 2`` or ``--force``."""
    with pytest.raises(SweeperError, match=r"^compile_workers=2: the interpret device "
                       "compiles nothing for a GPU; leave the option out$"):
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path, compile_workers=2)
    failing = {**TINY, "kernel": "tests.kernels_for_tests:CopiesZeros",
               "params": {**TINY["params"], "block": [32, 64, 128, 256, 512, 1024]}}
    study = sweeper.run(failing, device="interpret", studies_dir=tmp_path, report=False,
                        gpu_check="off")
    out = capsys.readouterr().out
    assert "stopped: the first 5 configs all failed alike" in out
    assert "fix it and run again (with force=True: a study refuses a changed kernel or " \
        "space without it)" in out
    assert "--force" not in out
    assert set(study.trials_dataframe().status) == {"wrong_answer"}


def test_a_run_and_an_optuna_export_leave_optunas_verbosity_as_they_found_it(tmp_path):
    """A sweep quiets Optuna for its own studies, and so does an export to Optuna, through
    ``optuna.logging.set_verbosity``, which is the whole process's: a notebook's own Optuna
    studies fell silent (or logged anew, where it had quieted them itself) for the rest of
    the session."""
    import optuna

    before = optuna.logging.get_verbosity()
    try:
        for level in (optuna.logging.DEBUG, optuna.logging.ERROR):
            optuna.logging.set_verbosity(level)
            study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}",
                                studies_dir=tmp_path / str(level), quiet=True, report=False)
            assert optuna.logging.get_verbosity() == level
            study.export(tmp_path / f"optuna-{level}.log", format="optuna")
            assert optuna.logging.get_verbosity() == level
    finally:
        optuna.logging.set_verbosity(before)


def test_a_report_leaves_the_notebooks_matplotlib_as_it_found_it(tmp_path):
    """A notebook shows its plots through its own backend (inline); the report switched
    the whole process to Agg, so after ``sweeper.run`` or ``Study.report()`` the
    notebook's next plot was no longer shown.  The report draws figures of its own,
    through no pyplot state and no backend of the process's."""
    import matplotlib
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    matplotlib.use("pdf")              # stands for a notebook's inline backend
    figures = plt.get_fignums()
    try:
        study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}",
                            studies_dir=tmp_path, quiet=True)
        assert list(study.path.glob("heatmaps/*.png"))
        assert matplotlib.get_backend() == "pdf" and plt.get_fignums() == figures
        study.report()
        assert matplotlib.get_backend() == "pdf" and plt.get_fignums() == figures
    finally:
        matplotlib.use(before)


def test_debug_shows_each_failed_trials_traceback_as_the_commands_flag_does(
        tmp_path, capsys, monkeypatch):
    """``sweeper --debug run`` prints a failed trial's traceback; from Python there was no
    way to see one but setting an undocumented variable.  ``debug=True`` does, for this
    call only."""
    import os

    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    space = {**TINY, "kernel": "tests.kernels_for_tests:RaisesOnBigBlock",
             "params": {**TINY["params"], "BLOCK": [256, 1024]}}
    options: dict[str, Any] = {"device": "interpret", "quiet": True, "report": False,
                               "gpu_check": "off"}
    sweeper.run(space, studies_dir=tmp_path / "a", **options)
    assert "Traceback" not in capsys.readouterr().err
    study = sweeper.run(space, studies_dir=tmp_path / "b", debug=True, **options)
    err = capsys.readouterr().err
    assert err.count("Traceback (most recent call last)") == 2       # block 32 and 64
    assert "RuntimeError: BLOCK=1024 is too big for this test" in err
    assert "SWEEPER_DEBUG" not in os.environ
    assert study.trials_dataframe().status.value_counts()["crashed"] == 2
    with pytest.raises(SweeperError, match=r"^debug: 'yes' is not True or False$"):
        sweeper.run(space, studies_dir=tmp_path / "c", debug="yes", **options)


def _frames(err: BaseException) -> list[tuple[Path, str]]:
    """Each frame of ``err``'s traceback: its file and function."""
    import traceback

    return [(Path(f.filename), f.name) for f in traceback.extract_tb(err.__traceback__)]


#: The one frame of sweeper's a sweeper error from an API call keeps (the call's).
AT_CALL = (ROOT / "sweeper" / "core" / "_api_errors.py", "call")


def test_a_sweeper_error_leaves_the_api_with_the_calls_traceback_alone(tmp_path,
                                                                       monkeypatch):
    """A refused resume is raised deep in the sweep (``check_resumable``); a notebook
    showed those frames of sweeper's above its one line.  A sweeper error leaves each API
    call with the caller's frames and the call's one frame; ``debug=True`` (or
    ``SWEEPER_DEBUG=1``, for any call) keeps the rest."""
    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    here = (Path(__file__),
            "test_a_sweeper_error_leaves_the_api_with_the_calls_traceback_alone")
    options: dict[str, Any] = {"device": f"replay:{mixed_table(tmp_path)}",
                               "studies_dir": tmp_path, "quiet": True, "report": False}
    study = sweeper.run(SPACE, **options)
    edited = SPACE.replace("BLOCK: [512, 1024]", "BLOCK: [512]")
    with pytest.raises(StudyError, match="cannot resume") as err:
        sweeper.run(edited, **options)
    assert _frames(err.value) == [here, AT_CALL]
    assert err.value.__cause__ is None and err.value.__suppress_context__
    with pytest.raises(StudyError, match="cannot resume") as err:
        sweeper.run(edited, debug=True, **options)
    assert "check_resumable" in [name for _, name in _frames(err.value)]
    (tmp_path / "nothing").mkdir()
    with pytest.raises(StudyError, match=r"^no study") as err:
        sweeper.load_study(tmp_path / "nothing")
    assert _frames(err.value) == [here, AT_CALL]
    with pytest.raises(SweeperError, match="is a directory") as err:
        study.export(tmp_path, format="csv")                 # refused deep in the writer
    assert _frames(err.value) == [here, AT_CALL]
    with pytest.raises(SweeperError, match=r"^scale:") as err:
        study.report(scale="bogus")
    assert _frames(err.value) == [here, AT_CALL]
    monkeypatch.setenv("SWEEPER_DEBUG", "1")
    with pytest.raises(StudyError, match=r"^no study") as err:
        sweeper.load_study(tmp_path / "nothing")
    assert "find_study" in [name for _, name in _frames(err.value)]


def test_every_public_entry_leaves_a_users_mistake_with_the_calls_traceback_alone(
        tmp_path, monkeypatch):
    """``sweeper.kernel`` (called, or the decorator it returns), ``sweeper.cuda``,
    ``sweeper.tuned`` and ``sweeper.tuned_kernel`` (and its decorator) showed 3 to 10 of
    sweeper's frames (the declaration's checks, the tuning file's reader) above a bad
    argument's one line; each leaves as ``sweeper.run``'s errors do: the caller's frames
    and the call's one frame, the whole traceback under ``SWEEPER_DEBUG=1``.  A
    ``sweeper.cuda`` call still reads its source relative to the caller's folder, not to
    the frame that cuts its traceback."""
    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    here = (Path(__file__),
            "test_every_public_entry_leaves_a_users_mistake_with_the_calls_traceback_alone")

    def launch(x, config):  # type: ignore[no-untyped-def]
        pass

    declared = {"inputs": {"x": "n"}, "outputs": ["x"], "reference": lambda x: x}
    calls = [
        (lambda: sweeper.kernel(launch, **declared), "give grid="),
        (lambda: sweeper.kernel(**declared)(launch), "give grid="),
        (lambda: sweeper.kernel(launch, **declared, devcie="cpu"), "no keyword 'devcie'"),
        (lambda: sweeper.cuda("missing.cu", "k", ["x"]),
         f"no file {Path(__file__).parent / 'missing.cu'}"),
        (lambda: sweeper.tuned("copy", dtype="float32", footprint=1024,
                               path=tmp_path / "none.json"), "no tuning file"),
        (lambda: sweeper.tuned_kernel(key=["n"], cache="hot"), "cache 'hot'"),
        (lambda: sweeper.tuned_kernel(tmp_path / "none.json", key=["n"]), "no tuning file")]
    for call, said in calls:
        with pytest.raises(SweeperError, match=re.escape(said)) as err:
            call()
        frames = _frames(err.value)
        assert frames[0] == here and frames[-1] == AT_CALL, frames
        assert all(not f.is_relative_to(ROOT / "sweeper") for f, _ in frames[:-1]), frames
    monkeypatch.setenv("SWEEPER_DEBUG", "1")
    with pytest.raises(SweeperError, match="give grid=") as err:
        sweeper.kernel(launch, **declared)
    assert len([f for f, _ in _frames(err.value) if f.is_relative_to(ROOT / "sweeper")]) > 2


def test_what_the_users_own_code_raised_stays_chained_from_its_first_line(tmp_path,
                                                                          monkeypatch):
    """A sampler's factory of the user's raised: that error, the cause, stays, its
    traceback from the user's own first frame on (none of sweeper's or importlib's); the
    import error behind a device module that is not there is sweeper's own business,
    said in the message, and is left out."""
    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_sampler.py").write_text(
        "def make(context):\n    return build(context)\n\n\n"
        "def build(context):\n    raise ValueError('my sampler is broken')\n")
    with pytest.raises(SweeperError, match="its factory raised ValueError") as err:
        sweeper.run({**TINY, "sampler": "my_sampler:make"}, device="interpret", quiet=True,
                    report=False, gpu_check="off")
    cause = err.value.__cause__
    assert isinstance(cause, ValueError) and _frames(err.value)[-1] == AT_CALL
    assert _frames(cause) == [(tmp_path / "my_sampler.py", "make"),
                              (tmp_path / "my_sampler.py", "build")]
    with pytest.raises(SweeperError, match="cannot load device") as err:
        sweeper.run(TINY, device="no_such_module:Device", quiet=True, report=False)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert _frames(err.value)[-1] == AT_CALL
    with pytest.raises(SweeperError, match="cannot load device") as err:
        sweeper.run(TINY, device="no_such_module:Device", quiet=True, report=False,
                    debug=True)
    assert isinstance(err.value.__cause__, ImportError)


def test_an_error_not_sweepers_keeps_its_whole_traceback(tmp_path, monkeypatch):
    """A bug (here a store that raises) is no message of sweeper's: every frame stays."""
    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=tmp_path,
                        quiet=True, report=False)

    def broken(self: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(StudyStore, "records", broken)
    with pytest.raises(RuntimeError, match="a bug") as err:
        study.trials_dataframe()
    names = [name for _, name in _frames(err.value)]
    assert "trials_dataframe" in names and names[-1] == "broken"


def test_a_dict_space_changed_since_its_study_is_refused_naming_keys_not_yaml_lines(
        tmp_path):
    """A notebook edits its space dict and runs again: the refusal names what changed by
    its key path (``params.BLOCK``), as a dict's errors do; it named a line of the YAML
    the dict was dumped to, which the user never saw (``the space's line 12``)."""
    import copy

    options: dict[str, Any] = {"device": "interpret", "studies_dir": tmp_path,
                               "quiet": True, "report": False, "gpu_check": "off"}
    sweeper.run(TINY, **options)
    edited = copy.deepcopy(TINY)
    edited["params"]["BLOCK"] = [256, 512]
    edited["measure"] = {"warmup": 1}
    with pytest.raises(StudyError, match=re.escape(
            "cannot resume, it was measured with other settings (the space's "
            "params.BLOCK: [256] -> [256, 512]; measure.repeat: 3 -> (none)); rerun with "
            "force=True to keep its trials and add new ones to them, or with study='NEW' "
            "to start a new study")):
        sweeper.run(edited, **options)
    text = yaml.safe_dump({**TINY, "study": "text"}, default_flow_style=None,
                          sort_keys=False)               # YAML text: its own lines
    sweeper.run(text, **options)
    with pytest.raises(StudyError, match=re.escape(
            "(the space's line 7: 'BLOCK: [256]' -> 'BLOCK: [256, 512]')")):
        sweeper.run(text.replace("BLOCK: [256]", "BLOCK: [256, 512]"), **options)


#: A short kernel whose Triton function is made when its module is imported, as a
#: notebook's own module (or cell) makes it.
GPU_MADE = '''
import triton
import triton.language as tl

import sweeper


@triton.jit
def scale_kernel(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 0.5, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 256},
                reference=lambda x: x * 0.5)
def scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
'''


def test_a_kernel_imported_before_the_interpreter_was_chosen_is_refused(tmp_path,
                                                                        monkeypatch):
    """A notebook that imports its kernel's module (or defines the kernel in a cell)
    before ``sweeper.run(..., device="interpret")`` holds ``@triton.jit`` functions made
    for a GPU, which every trial would crash on ("0 active drivers"), recording as many
    crashed trials: refused, saying why and what to do, before anything is written."""
    import importlib
    import sys

    (tmp_path / "gpu_made.py").write_text(GPU_MADE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_INTERPRET", "0")            # as a fresh notebook has it
    space = {"kernel": "gpu_made:scale", "params": {"n": [1024]}}
    try:
        importlib.import_module("gpu_made")
        with pytest.raises(SweeperError, match=re.escape(
                "kernel gpu_made:scale: gpu_made.scale_kernel is a @triton.jit function made "
                "for a GPU (gpu_made was imported before sweeper set TRITON_INTERPRET=1 for "
                "device interpret), which the interpreter cannot run; restart the process "
                "(a notebook's kernel) and run before importing gpu_made, or pass "
                "workers='process'")):
            sweeper.run(space, device="interpret", studies_dir=tmp_path / "studies",
                        quiet=True)
        assert not (tmp_path / "studies").exists()
    finally:
        sys.modules.pop("gpu_made", None)


def test_a_kernel_defined_in_main_is_refused_where_worker_processes_measure(tmp_path,
                                                                            monkeypatch):
    """A kernel a notebook defines lives in its ``__main__``, which a worker process
    (``workers="process"``, the default on a GPU) cannot import: refused in one line
    naming the way out, before anything is written, not a worker that died."""
    import sys

    def launch(x: Any, config: Any) -> None:
        x.mul_(0.5)

    launch.__module__ = "__main__"
    kernel = sweeper.kernel(launch, name="in_main", inputs={"x": "n"}, outputs=["x"], grid=1,
                            reference=lambda x: x * 0.5)
    monkeypatch.setattr(sys.modules["__main__"], "in_main", kernel, raising=False)
    with pytest.raises(SweeperError, match=re.escape(
            "kernel __main__:in_main is defined in __main__ (a notebook or a script), which "
            "the worker processes cannot import: put it in a module and name it as "
            "module:attr, or pass workers='inline'")):
        sweeper.run({"kernel": "__main__:in_main", "params": {"n": [1024]}},
                    device="interpret", workers="process", studies_dir=tmp_path / "studies",
                    quiet=True)
    assert not (tmp_path / "studies").exists()


def test_run_puts_back_the_variables_the_interpreter_set(tmp_path, monkeypatch):
    """``sweeper.run(..., device="interpret")`` sets ``TRITON_INTERPRET=1`` for its run
    only: a notebook's later ``@triton.jit`` kernels, and ``sweeper.tuned``'s idea of the
    GPU it runs on, are not the interpreter's for the rest of the session."""
    import os

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    study = sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False, gpu_check="off")
    assert os.environ["TRITON_INTERPRET"] == "0"
    assert set(study.trials_dataframe().status) == {"ok"}
    monkeypatch.delenv("TRITON_INTERPRET")
    sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True, report=False,
                gpu_check="off")
    assert "TRITON_INTERPRET" not in os.environ


def test_a_study_is_still_read_after_the_notebook_changes_folder(tmp_path, monkeypatch):
    """A ``Study`` from a relative ``studies_dir`` (or ``load_study``) holds its folder by
    its absolute path: after ``os.chdir`` (a notebook's ``%cd``) it still reads its own
    trials, not "no study here" nor another folder's study of the same relative path."""
    monkeypatch.chdir(tmp_path)
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}",
                        studies_dir="studies", quiet=True, report=False)
    loaded = sweeper.load_study("mixed-replay")
    trials = len(study.trials_dataframe())
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for opened in (study, loaded):
        assert opened.path == tmp_path / "studies" / "mixed-replay"
        assert len(opened.trials_dataframe()) == trials
        assert opened.report() == tmp_path / "studies" / "mixed-replay" / "report.md"
    assert not (tmp_path / "elsewhere" / "studies").exists()


def test_what_a_study_writes_is_returned_by_its_absolute_path(tmp_path, monkeypatch):
    """``study.export("t.json")`` returned ``t.json`` where ``study.report()`` returns an
    absolute path: after the notebook changes folder (``%cd``) it named another file.
    Every method that writes returns where it wrote by its absolute path (a SQLite URL
    names its file so), each still right after the folder changes."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWEEPER_TUNING", raising=False)
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", quiet=True,
                        report=False)
    written = [study.report(), study.export(), study.export("t.json"),
               study.export("r.csv", format="csv"), study.export(format="csv"),
               study.export("a.parquet", format="parquet"),
               study.export("c.py", format="triton"),
               study.export("o.log", format="optuna")]
    assert written[:3] == [study.path / "report.md", tmp_path / "studies" / "tuning.json",
                           tmp_path / "t.json"]
    url = study.export("sqlite:///o.db", format="optuna")
    assert url == f"sqlite:///{tmp_path / 'o.db'}"
    assert study.export("sqlite:///./o.db?timeout=5", format="optuna", replace=True) == \
        f"sqlite:///{tmp_path / 'o.db'}?timeout=5"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for path in written:
        assert isinstance(path, Path) and path.is_absolute() and path.is_file(), path
    import optuna

    assert optuna.get_all_study_names(url) == ["mixed-replay"]


def test_a_zipped_groups_advice_is_written_as_the_params_dict(tmp_path):
    """Where ``params=`` breaks a group of zipped axes, the way out is written in the
    form the caller used: a dict entry (``params={'tiles': {'zip': ...}}``), not ``-p``'s
    ``tiles={zip: ...}``, which ``params='...'`` text still gets."""
    space = tmp_path / "s.yaml"
    space.write_text("kernel: matmul\nparams:\n"
                     "  tiles: {zip: {BLOCK_M: [16, 32], BLOCK_N: [16, 32]}}\n")
    for params, advice in (
            ({"tiles": [64]}, "override it as a group: params={'tiles': {'zip': "
                              "{'BLOCK_M': [...], 'BLOCK_N': [...]}}}"),
            ({"BLOCK_M": [64]}, "override the group instead (params={'tiles': {'zip': {...}}})"),
            ("BLOCK_M=64", "override the group instead (tiles={zip: {...}})")):
        with pytest.raises(SpaceError) as err:
            sweeper.run(str(space), params=params, device="interpret", studies_dir=tmp_path)
        assert str(err.value).endswith(advice), str(err.value)
    assert not (tmp_path / "s").exists()


def test_a_dict_spaces_zipped_group_is_named_by_its_key_path_never_a_yaml_line(tmp_path):
    """A dict has no lines: where ``params=`` (or another group) breaks a dict space's group
    of zipped axes, the group is named by its key path under ``<dict>``, as the dict's
    other errors are, not at the line of the YAML the dict was dumped to."""
    zipped = {"zip": {"BLOCK_M": [16, 32], "BLOCK_N": [16, 32]}}
    space = {"kernel": "matmul", "params": {"tiles": zipped}}
    for given, params, message in (
            (space, {"BLOCK_M": [64]}, "params={'BLOCK_M': [64]}: BLOCK_M is zipped in "
                                       "params.tiles (<dict>), so it moves with BLOCK_N"),
            (space, {"tiles": [64]}, "params={'tiles': [64]}: params.tiles (<dict>) is a "
                                     "group of zipped axes"),
            ({"kernel": "matmul", "params": {
                "tiles": zipped, "more": {"zip": {"BLOCK_M": [16, 32], "BLOCK_K": [16, 32]}}}},
             {}, "<dict>: params.more.zip.BLOCK_M: BLOCK_M is also zipped in params.tiles "
                 "(<dict>); an axis is zipped in one group at most")):
        with pytest.raises(SpaceError) as err:
            sweeper.run(given, params=params, device="interpret", studies_dir=tmp_path)
        assert str(err.value).startswith(message), str(err.value)
        assert not re.search(r"<dict>:\d", str(err.value)), str(err.value)
    assert not list(tmp_path.iterdir())


def test_a_postgresql_study_holds_its_folder_by_its_absolute_path_as_a_journals_does(
        postgres_url, tmp_path, monkeypatch):
    """A ``Study`` kept in PostgreSQL, from a relative ``studies_dir``, holds its local
    folder (its report and exports) by its absolute path, as a journal's does: after
    ``os.chdir`` (a notebook's ``%cd``) its report goes where it went before, not under
    the new folder."""
    monkeypatch.chdir(tmp_path)
    table = mixed_table(tmp_path)
    study = sweeper.run(SPACE, device=f"replay:{table}", studies_dir="local",
                        study="api-pg-cwd", storage=postgres_url, quiet=True, report=False)
    loaded = sweeper.load_study("api-pg-cwd", storage=postgres_url, studies_dir="local")
    journal = sweeper.run(SPACE, device=f"replay:{table}", studies_dir="local",
                          study="api-journal-cwd", quiet=True, report=False)
    assert journal.path == tmp_path / "local" / "api-journal-cwd"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for opened in (study, loaded):
        assert opened.path == tmp_path / "local" / "api-pg-cwd"
        assert opened.report() == tmp_path / "local" / "api-pg-cwd" / "report.md"
    assert not (tmp_path / "elsewhere" / "local").exists()


def test_a_dict_naming_its_kernel_by_the_object_is_told_the_name_to_give(tmp_path):
    """A notebook holds the kernel ``sweeper.kernel`` made and puts it in the dict; a space
    names its kernel (the study records the name, workers import it by it): refused in
    one line giving the ``module:attr`` to write, not YAML's "cannot represent an
    object", and nothing written."""
    from tests.short_kernels_for_tests import broken_baseline

    with pytest.raises(SpaceError, match=re.escape(
            "<dict>: kernel: the kernel itself, not its name; allowed: a built-in's name or "
            "'module:attr' (here 'tests.short_kernels_for_tests:broken_baseline')")):
        sweeper.run({"kernel": broken_baseline, "params": {"n": [1024]}}, device="interpret",
                    studies_dir=tmp_path / "studies")
    assert not (tmp_path / "studies").exists()


def test_an_empty_space_path_is_refused_as_empty(tmp_path, capsys):
    """``Path("")`` is the current folder: ``sweeper.run("")`` said ``.: cannot read the
    space file: Is a directory``."""
    from sweeper.cli import main
    from sweeper.errors import SpaceError

    message = "'': no space file named (an empty path); give a space file's path, such as " \
              "spaces/copy.yaml"
    with pytest.raises(SpaceError, match=re.escape(message)):
        sweeper.run("", device="interpret", studies_dir=tmp_path / "s")
    assert main(["run", "", "--device", "interpret", "--studies-dir", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err.strip().endswith(message)
    assert not (tmp_path / "s").exists()


def test_one_line_yaml_text_is_told_it_was_read_as_a_path_and_how_to_give_text(
        tmp_path, monkeypatch):
    """``sweeper.run("kernel: copy")`` said only ``kernel: copy: cannot read the space
    file: No such file or directory``: a string without a newline is a path, and where it
    names no file but reads as YAML the error says so and how to pass text.  A file of
    that name is still read as the space, and a plain missing path keeps its error."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpaceError) as err:
        sweeper.run("kernel: copy", device="interpret", studies_dir="s")
    assert str(err.value) == (
        f"'kernel: copy': no such space file in {tmp_path}: a string without a newline is "
        "read as a space file's path; allowed for YAML text: a newline in it "
        "('kernel: copy\\n') or braces round it ('{kernel: copy}'), or a dict")
    with pytest.raises(SpaceError, match=re.escape("or braces round it ('{kernel: copy}')")):
        sweeper.run("kernel: copy, sampler: random, params: {BLOCK: [" + "1, " * 30 + "2]}",
                    device="interpret", studies_dir="s")
    with pytest.raises(SpaceError, match=re.escape(
            "spaces/none.yaml: cannot read the space file: No such file or directory")):
        sweeper.run("spaces/none.yaml", device="interpret", studies_dir="s")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kernel: copy").write_text(SPACE)              # a file of that name: read
    study = sweeper.run("kernel: copy", device=f"replay:{mixed_table(tmp_path)}",
                        studies_dir="s", quiet=True, report=False)
    assert study.kernel == "copy"


#: A script that runs TINY on the interpreter and gets two Ctrl-Cs after its first trial
#: (the notebook user's Interrupt pressed twice).
TWO_CTRL_CS = """
import os, signal, sys
import sweeper
from sweeper.sweep import SilentReporter
trial = SilentReporter.trial
def interrupting(self, record, best):
    trial(self, record, best)
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
SilentReporter.trial = interrupting
sweeper.run({space!r}, device="interpret", studies_dir=sys.argv[1], quiet=True, report=False)
"""


def test_a_second_ctrl_c_is_a_short_keyboard_interrupt_naming_the_study(tmp_path):
    """The first Ctrl-C stops after the trial in flight; a second aborts the call with a
    ``KeyboardInterrupt`` raised from ``sweeper.run`` itself: its traceback is the caller's
    line and the call (no frames of the sweep the signal landed in, no "during handling"),
    and it says which study keeps the finished trials and how to resume it, which the
    same call then does."""
    import os
    import subprocess
    import sys

    script = tmp_path / "notebook.py"
    script.write_text(TWO_CTRL_CS.format(space=TINY))
    studies = tmp_path / "studies"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(script), str(studies)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    journal = studies / "tiny-interpret" / "trials.jsonl"
    assert run.stderr.splitlines()[-1] == (
        f"KeyboardInterrupt: sweeper.run: study tiny-interpret aborted by Ctrl-C; every "
        f"finished trial is kept in {journal}: call sweeper.run again with the same "
        "arguments to resume it"), run.stderr
    frames = re.findall(r'^  File "([^"]+)"', run.stderr, flags=re.MULTILINE)
    assert frames == [str(script), str(ROOT / "sweeper" / "core" / "_api_errors.py")], \
        run.stderr
    assert "During handling" not in run.stderr and "direct cause" not in run.stderr
    kept = StudyStore(journal.parent).records()[0]
    assert [t.status.value for t in kept] == ["ok"]
    study = sweeper.run(TINY, device="interpret", studies_dir=studies, quiet=True,
                        report=False)
    assert study.trials_dataframe()["status"].tolist() == ["ok", "ok"]


def test_ctrl_c_outside_the_sweep_is_as_short_and_says_what_was_kept(tmp_path, monkeypatch):
    """A Ctrl-C where no handler of the sweep's is in place (while the run starts, before
    any study is opened; while it reports, after) is Python's own KeyboardInterrupt: the
    call turns it into the same short one, saying what was kept."""
    import sweeper.engine._report as report
    import sweeper.engine._run as engine

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(engine, "space_and_device", interrupted)
        with pytest.raises(KeyboardInterrupt) as err:
            sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True)
    assert str(err.value) == ("sweeper.run: aborted by Ctrl-C before its study was opened; "
                              "nothing was written")
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(report, "report_study", interrupted)
    with pytest.raises(KeyboardInterrupt) as err:
        sweeper.run(TINY, device="interpret", studies_dir=tmp_path, quiet=True)
    journal = tmp_path / "tiny-interpret" / "trials.jsonl"
    assert str(err.value) == (f"sweeper.run: study tiny-interpret aborted by Ctrl-C; every "
                              f"finished trial is kept in {journal}: call sweeper.run again "
                              "with the same arguments to resume it")
    assert len(StudyStore(journal.parent).records()[0]) == 2



def _module_run(tmp_path, monkeypatch, prefix, text, attr, params):
    """A module of a fresh name holding ``text`` on the path, and a ``sweeper.run`` of its
    kernel ``attr`` over one config (``params`` adds the problem) on the interpreter: the
    name, the module's file and the run, which takes ``studies_dir``."""
    import uuid

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    space = {"kernel": f"{name}:{attr}", "sampler": "exhaustive",
             "params": {"block": [32], "BLOCK": [256], **params},
             "measure": {"warmup": 1, "repeat": 3}}
    return name, path, functools.partial(sweeper.run, space, device="interpret", quiet=True,
                                         report=False, gpu_check="off")


def test_a_kernel_module_edited_since_this_process_imported_it_is_refused(tmp_path,
                                                                          monkeypatch):
    """A notebook that runs its module's kernel, edits the module and runs again would
    measure the code Python imported first, silently (study ``new`` recorded as
    correct a kernel whose edit is wrong), where ``sweeper run`` measures the edit:
    refused before anything is written, saying to restart or reload; an unedited rerun
    is not, and the reloaded module is measured as edited."""
    import importlib
    import sys

    monkeypatch.setenv("TRITON_INTERPRET", "1")     # a reload makes interpreter kernels
    name, path, run = _module_run(tmp_path, monkeypatch, "edited", GPU_MADE, "scale",
                                  {"n": [1024]})
    try:
        assert set(run(studies_dir=tmp_path / "a").trials_dataframe().status) == {"ok"}
        run(studies_dir=tmp_path / "a")                      # unedited: resumed
        path.write_text(GPU_MADE.replace("* 0.5, mask", "* 2.0, mask"))
        with pytest.raises(SweeperError, match=re.escape(
                f"kernel {name}:scale: {name}.py was edited since this process imported "
                f"{name}, whose code it keeps: a run here would measure the code from before "
                "the edit; restart the process (a notebook's kernel), or reload it "
                f"(importlib.reload({name}), after any module of yours it imports that was "
                "edited), then run again")):
            run(studies_dir=tmp_path / "b")
        assert not (tmp_path / "b").exists()
        importlib.reload(sys.modules[name])
        edited = run(studies_dir=tmp_path / "b").trials_dataframe()
        assert set(edited.status) == {"wrong_answer"}
    finally:
        sys.modules.pop(name, None)


def test_a_kernel_subclass_edited_since_this_process_imported_it_is_refused(tmp_path,
                                                                            monkeypatch):
    """A Kernel subclass's hash its files alone do not tell: its source read afresh is
    compared with the source the code that runs was read as; an unedited rerun resumes."""
    import sys

    text = ("from sweeper.kernels.copy import CopyKernel\n\n\n"
            "class MyCopy(CopyKernel):\n    name = 'mycopy'\n    LANES = 1\n")
    name, path, run = _module_run(tmp_path, monkeypatch, "subclassed", text, "MyCopy",
                                  {"footprint": ["4KiB"]})
    try:
        assert set(run(studies_dir=tmp_path / "a").trials_dataframe().status) == {"ok"}
        run(studies_dir=tmp_path / "a")                      # unedited: resumed
        path.write_text(text.replace("LANES = 1", "LANES = 2"))
        with pytest.raises(SweeperError, match=re.escape(
                f"kernel {name}:MyCopy: {name}.py was edited since this process imported "
                f"{name}, whose code it keeps")):
            run(studies_dir=tmp_path / "b")
        assert not (tmp_path / "b").exists()
    finally:
        sys.modules.pop(name, None)


_HELPER_JIT = GPU_MADE.split("@sweeper.kernel")[0]
_HELPER_LAUNCH = _HELPER_JIT + '''
def launch(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
'''
_DECLARED_ELSEWHERE = '''
import sweeper
from {helpers} import launch

scale = sweeper.kernel(launch, inputs={{"x": "n"}}, outputs=["x"], meta={{"BLOCK": 256}},
                       reference=lambda x: x * 0.5)
'''
_JIT_ELSEWHERE = '''
import sweeper
from {helpers} import scale_kernel


@sweeper.kernel(inputs={{"x": "n"}}, outputs=["x"], meta={{"BLOCK": 256}},
                reference=lambda x: x * 0.5)
def scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
'''


@pytest.mark.parametrize(("helper", "kernel", "imported_first"), [
    (_HELPER_LAUNCH, _DECLARED_ELSEWHERE, False),
    (_HELPER_LAUNCH, _DECLARED_ELSEWHERE, True),
    (_HELPER_JIT, _JIT_ELSEWHERE, False),
])
def test_a_module_the_kernel_s_code_comes_from_edited_since_import_is_refused(
        helper, kernel, imported_first, tmp_path, monkeypatch):
    """The kernel's module imports its launch, or its ``@triton.jit`` function, from a
    helpers module of the project: an edit of the helpers is refused as one of the
    kernel's module is (the run would measure the launch Python imported first), whether
    the run imported the modules or the notebook did; an unedited rerun resumes, and once
    both are reloaded the edit is measured."""
    import importlib
    import sys
    import uuid

    monkeypatch.setenv("TRITON_INTERPRET", "1")     # a reload makes interpreter kernels
    helpers = f"helpers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{helpers}.py").write_text(helper)
    name, _, run = _module_run(tmp_path, monkeypatch, "declared",
                               kernel.format(helpers=helpers), "scale", {"n": [1024]})
    try:
        if imported_first:
            importlib.import_module(name)
        assert set(run(studies_dir=tmp_path / "a").trials_dataframe().status) == {"ok"}
        run(studies_dir=tmp_path / "a")                      # unedited: resumed
        (tmp_path / f"{helpers}.py").write_text(helper.replace("* 0.5, mask", "* 2.0, mask"))
        with pytest.raises(SweeperError, match=re.escape(
                f"kernel {name}:scale: {helpers}.py was edited since this process imported "
                f"{name}, whose code it keeps: a run here would measure the code from before "
                f"the edit; restart the process (a notebook's kernel), or reload it "
                f"(importlib.reload({name}), after any module of yours it imports that was "
                "edited), then run again")):
            run(studies_dir=tmp_path / "b")
        assert not (tmp_path / "b").exists()
        importlib.reload(sys.modules[helpers])
        importlib.reload(sys.modules[name])
        edited = run(studies_dir=tmp_path / "b").trials_dataframe()
        assert set(edited.status) == {"wrong_answer"}
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop(helpers, None)


def test_a_launch_given_a_jit_function_of_another_module_names_that_module(tmp_path,
                                                                           monkeypatch):
    """A launch made by a function of one module around a ``@triton.jit`` function of
    another (a closure): the modules whose code it runs are both, though the launch's
    module imports no other."""
    import sys
    import uuid

    tag = uuid.uuid4().hex[:8]
    (tmp_path / f"maker_{tag}.py").write_text(
        "def make(jit):\n"
        "    def launch(x, config):\n"
        "        jit[(config.grid,)](x, x.numel(), num_warps=config.num_warps, "
        "**config.meta)\n"
        "    return launch\n")
    (tmp_path / f"jit_{tag}.py").write_text(_HELPER_JIT)
    (tmp_path / f"decl_{tag}.py").write_text(
        f"import sweeper\nfrom maker_{tag} import make\nfrom jit_{tag} import scale_kernel\n"
        "scale = sweeper.kernel(make(scale_kernel), inputs={'x': 'n'}, outputs=['x'], "
        "meta={'BLOCK': 256}, reference=lambda x: x * 0.5)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        kernel = __import__(f"decl_{tag}").scale()
        assert kernel.code_modules() == (f"decl_{tag}", f"maker_{tag}", f"jit_{tag}")
    finally:
        for module in ("maker", "jit", "decl"):
            sys.modules.pop(f"{module}_{tag}", None)


def test_the_module_declaring_a_kernel_whose_launch_it_imports_is_part_of_its_source(
        tmp_path, monkeypatch):
    """``scale = sweeper.kernel(launch, reference=...)`` in one module, ``launch``
    imported from another of the user's: the source a study hashes holds both modules'
    text, so an edit of the declaration (its reference) is a new version, as an edit of
    the launch is, where the hash held the launch's module alone and a resume went on
    under the old hash; the declaring module's file is watched and its code refused
    when edited since import. A launch declared in its own module hashes as before."""
    import sys
    import uuid

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tag = uuid.uuid4().hex[:8]
    helpers, decl = f"helpers_{tag}", f"decl_{tag}"
    (tmp_path / f"{helpers}.py").write_text(_HELPER_LAUNCH)
    path = tmp_path / f"{decl}.py"
    path.write_text(_DECLARED_ELSEWHERE.format(helpers=helpers))
    monkeypatch.syspath_prepend(str(tmp_path))

    def loaded():
        sys.modules.pop(decl, None)
        sys.modules.pop(helpers, None)
        return __import__(decl).scale()
    try:
        kernel = loaded()
        assert path.read_text() in kernel.source()
        assert (tmp_path / f"{helpers}.py").read_text() in kernel.source()
        assert path in kernel.source_files()
        assert kernel.code_modules()[:2] == (decl, helpers)
        before = kernel.source_hash()
        assert loaded().source_hash() == before                 # a new process: the same
        path.write_text(path.read_text().replace("x * 0.5", "x * 0.25"))
        assert loaded().source_hash() != before
    finally:
        sys.modules.pop(decl, None)
        sys.modules.pop(helpers, None)


def test_a_studys_report_takes_the_report_commands_svg_and_redraw(tmp_path):
    """``Study.report(svg=True)`` draws the pictures as SVG too and ``redraw=True`` draws
    every one again, as ``sweeper report --svg`` and ``--redraw`` do (a notebook had no
    way to either: an SVG only from ``sweeper.run(..., svg=True)``); a bad value is one
    line naming the keyword, nothing written."""
    study = sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=tmp_path,
                        quiet=True, report=False)
    with pytest.raises(SweeperError, match=r"^svg: 'yes' is not True or False$"):
        study.report(svg="yes")
    with pytest.raises(SweeperError, match=r"^redraw: 1 is not True or False$"):
        study.report(redraw=1)
    assert not (study.path / "report.md").exists()
    heatmaps = study.path / "heatmaps"
    assert study.report(svg=True) == study.path / "report.md"
    pngs, svgs = sorted(heatmaps.glob("*.png")), sorted(heatmaps.glob("*.svg"))
    assert pngs and [p.stem for p in svgs] == [p.stem for p in pngs]
    drawn = {p: p.stat().st_mtime_ns for p in pngs}
    study.report()
    assert {p: p.stat().st_mtime_ns for p in pngs} == drawn     # unchanged: not drawn again
    study.report(redraw=True)
    assert all(p.stat().st_mtime_ns != drawn[p] for p in pngs)


def test_paths_starting_with_a_tilde_are_in_the_home_folder(tmp_path, monkeypatch):
    """``~`` in a path keyword is the home folder, as the shell makes it of the command's
    arguments: ``studies_dir="~/studies"`` made a folder named ``~`` in the working
    folder (which ``rm -rf ~`` would then be asked to clean up).  The space's path, the
    folders of ``run``, ``load_study``, ``Study`` and an export's target alike."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "spaces").mkdir(parents=True)
    work.mkdir()
    (home / "spaces" / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    study = sweeper.run("~/spaces/tiny.yaml", device="interpret", studies_dir="~/studies",
                        quiet=True, report=False, gpu_check="off", allow_path="~/spaces")
    assert study.path == home / "studies" / "tiny-interpret"
    assert sweeper.load_study("tiny-interpret", studies_dir=Path("~/studies")).path == \
        study.path
    assert sweeper.load_study("~/studies/tiny-interpret").path == study.path
    assert sweeper.Study("~/studies/tiny-interpret").path == study.path
    assert Path(study.export("~/tuning.json")) == home / "tuning.json"
    assert (home / "tuning.json").exists()
    assert not list(work.iterdir())


def test_a_dict_or_text_studys_reproduce_line_is_a_call_that_resumes_it(tmp_path,
                                                                        monkeypatch):
    """A study of a space given as a dict has no file: its report said to reproduce it
    with ``sweeper run '<dict>' ...``, a file no one has.  It says the Python call that
    runs the space text the study keeps, and that call resumes the same study."""
    monkeypatch.chdir(tmp_path)
    study = sweeper.run(TINY, device="interpret", quiet=True, gpu_check="off", trials=1)
    study.report()
    reproduce = json.loads((study.path / "report.json").read_text())["reproduce"]
    assert reproduce == ("sweeper.run(sweeper.load_study('tiny-interpret').space, "
                         "device='interpret', study='tiny-interpret')")
    assert f"reproduce: `{reproduce}`" in (study.path / "report.md").read_text()
    again = eval(reproduce, {"sweeper": sweeper})       # the line under test
    assert again.path == study.path and len(again.trials_dataframe()) == 2
