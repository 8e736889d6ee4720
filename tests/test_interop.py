"""Export formats beyond the tuning file: Optuna (read back with Optuna's own loader),
Parquet (read back with pandas), csv (every trial that ran), and how ``sweeper export``
takes their targets."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import optuna
import pandas as pd
import pytest

import sweeper
from sweeper.cli import main
from sweeper.store import StudyStore
from tests.api_fixtures import SPACE, forced_study, kill_trial, mixed_table


@pytest.fixture
def mixed(tmp_path):
    """The replayed study with ok, failed, ruled-out and missing trials."""
    return sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}",
                       studies_dir=tmp_path / "st", quiet=True, report=False)


def test_optuna_reads_the_export_with_its_own_loader(mixed, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'o.db'}"
    assert main(["export", str(mixed.path), "--format", "optuna", "--to", url]) == 0
    assert capsys.readouterr().out.startswith(
        f"wrote 8 trials to the Optuna study 'mixed-replay' in {url}")
    study = optuna.load_study(study_name="mixed-replay", storage=url)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    df = study.trials_dataframe()
    ours = mixed.trials_dataframe()
    assert len(df) == 8 and list(df["number"]) == list(ours["number"])
    assert df["state"].tolist() == ["FAIL", "FAIL", "COMPLETE", "COMPLETE", "FAIL",
                                    "COMPLETE", "COMPLETE", "FAIL"]
    assert df["user_attrs_status"].tolist() == ours["status"].astype(str).tolist()
    done = df["state"] == "COMPLETE"
    assert df.loc[done, "value"].tolist() == ours.loc[done, "median_ms"].tolist()
    assert df.loc[done, "user_attrs_gbps"].tolist() == ours.loc[done, "gbps"].tolist()
    assert (df.loc[done, "user_attrs_ci_lo_ms"] <= df.loc[done, "value"]).all()
    assert df["params_BLOCK"].dtype == "int64" and df["params_grid"].iloc[0] == "sms"
    failed = study.trials[4]
    assert failed.user_attrs["reason"] == "recorded as failed"
    assert failed.system_attrs["fail_reason"] == "wrong_answer: recorded as failed"
    assert study.best_trial.user_attrs["number"] == 6 == mixed.winners["number"].iloc[0]
    assert isinstance(study.trials[0].distributions["BLOCK"],
                      optuna.distributions.CategoricalDistribution)
    assert study.trials[0].distributions["BLOCK"].choices == (512, 1024)


def test_optuna_export_of_a_study_forced_past_a_kernel_edit_holds_its_source_now(
        tmp_path, monkeypatch, capsys):
    """Optuna's best trial of a study resumed with --force after its kernel was edited is
    the study's own winner: the export holds the trials measured on the source now (and
    the configs ruled out), and says how many it left out."""
    study = forced_study(tmp_path, monkeypatch)
    url = f"sqlite:///{tmp_path / 'o.db'}"
    assert main(["export", str(study.path), "--format", "optuna", "--to", url]) == 0
    assert capsys.readouterr().out.endswith(
        "; left out 6 trials measured on an earlier source of the kernel\n")
    loaded = optuna.load_study(study_name="mixed-replay", storage=url)
    assert [t.user_attrs["number"] for t in loaded.trials] == [0, 1, 8, 9]
    assert loaded.best_trial.user_attrs["number"] == 8 == study.winners["number"].iloc[0]


@pytest.mark.parametrize("journal", [False, True])
def test_optuna_queues_a_trial_to_measure_again_as_waiting(mixed, tmp_path, capsys, journal):
    """A trial whose worker process was killed from outside (``retry``) is no failure of
    the kernel's: the export writes it WAITING, as ``Study.enqueue_trial`` queues a trial
    (its config in ``fixed_params``), so the Optuna study's next trial measures that
    config, read back from a database and from a journal alike."""
    from sweeper.interop._optuna import journal_storage, value

    kill_trial(mixed.path, 3)
    target = str(tmp_path / "optuna.log") if journal else f"sqlite:///{tmp_path / 'o.db'}"
    assert main(["export", str(mixed.path), "--format", "optuna", "--to", target]) == 0
    assert capsys.readouterr().out.startswith(
        "wrote 8 trials (1 of them WAITING to be measured again: its worker process was "
        "killed from outside) to the Optuna study 'mixed-replay'")
    study = optuna.load_study(study_name="mixed-replay",
                              storage=journal_storage(target) if journal else target)
    assert [(t.user_attrs["number"], t.state.name) for t in study.trials] == [
        (0, "FAIL"), (1, "FAIL"), (2, "COMPLETE"), (3, "WAITING"), (4, "FAIL"),
        (5, "COMPLETE"), (6, "COMPLETE"), (7, "FAIL")]
    waiting = study.trials[3]
    assert waiting.user_attrs["retry"] and waiting.user_attrs["status"] == "crashed"
    assert waiting.datetime_start is None and "fail_reason" not in waiting.system_attrs
    assert not any(t.user_attrs["retry"] for t in study.trials if t.number != 3)
    killed = next(t for t in StudyStore(mixed.path).records()[0] if t.number == 3)
    trial = study.ask()                 # Optuna's queue: its next trial is the killed one
    dists = study.trials[2].distributions
    assert trial.number == 3 and {a: trial.suggest_categorical(a, d.choices)
                                  for a, d in dists.items()} == \
        {a: value(label) for a, label in killed.choice.items() if a in dists}


def test_optuna_reads_an_export_into_postgresql(mixed, postgres_url, capsys):
    """A ``postgresql://`` URL is opened as sweeper's own store opens one (psycopg 3, its
    time limits); Optuna reads the study back from the same database."""
    assert main(["export", str(mixed.path), "--format", "optuna", "--to", postgres_url]) == 0
    assert "wrote 8 trials to the Optuna study 'mixed-replay'" in capsys.readouterr().out
    storage = optuna.storages.RDBStorage(
        postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    study = optuna.load_study(study_name="mixed-replay", storage=storage)
    assert len(study.trials) == 8


def test_a_second_export_to_the_same_storage_is_refused_unless_replace(mixed, tmp_path,
                                                                        capsys):
    journal = tmp_path / "optuna.log"                  # Optuna's JournalStorage file
    args = ["export", str(mixed.path), "--format", "optuna", "--to", str(journal)]
    assert main(args) == 0
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"sweeper: --to {journal}: it already holds an Optuna study 'mixed-replay'; "
        "pass --replace to delete it and write it again")
    assert main([*args, "--replace"]) == 0
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(journal)))
    assert [s.n_trials for s in optuna.get_all_study_summaries(storage)] == [8]


@pytest.mark.parametrize(("extra", "message"), [
    ([], "sweeper: --format optuna needs --to URL: sqlite:///FILE.db, or a journal "
         "file path"),
    (["--to", "x.db", "-o", "y"], "sweeper: -o: --format optuna takes --to URL, "
                                       "not -o"),
])
def test_optuna_takes_its_storage_and_nothing_else(mixed, capsys, extra, message):
    assert main(["export", str(mixed.path), "--format", "optuna", *extra]) == 2
    assert capsys.readouterr().err.strip() == message


def test_other_formats_refuse_storage_and_replace(mixed, capsys):
    assert main(["export", str(mixed.path), "--format", "parquet", "--to", "x"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sweeper: --to: --format parquet takes -o FILE, not --to")
    assert main(["export", str(mixed.path), "--replace"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sweeper: --replace: only for --format optuna; --format tuning replaces its file whole")
    for format in ("tuning", "triton", "csv"):             # from Python alike, never ignored
        with pytest.raises(sweeper.SweeperError, match=re.escape(
                f"replace=True: only for format='optuna'; format={format!r} replaces its "
                "file whole")):
            mixed.export(mixed.path / "out", format=format, replace=True)
    assert not (mixed.path / "out").exists()


def test_parquet_holds_every_trial_typed_with_its_raw_samples(mixed, capsys):
    assert main(["export", str(mixed.path), "--format", "parquet"]) == 0
    path = mixed.path / "trials.parquet"
    assert capsys.readouterr().out.strip() == (
        f"wrote 8 trials with their raw samples to {path}")
    back = pd.read_parquet(path)
    ours = mixed.trials_dataframe(samples=True)
    pd.testing.assert_frame_equal(back.drop(columns="samples_ms"),
                                  ours.drop(columns="samples_ms"), check_dtype=True)
    assert [list(s) for s in back["samples_ms"]] == [list(s) for s in ours["samples_ms"]]
    records = {t.number: t.samples_ms for t in mixed.storage.records()[0]}
    assert [list(s) for s in back["samples_ms"]] == [records[n] for n in back["number"]]
    assert back.attrs["study"] == "mixed-replay" and back.attrs["headline"] == "GB/s"
    long = back.explode("samples_ms")
    assert long["samples_ms"].notna().sum() == 4 * 50


def test_parquet_of_a_journal_edited_past_64_bit_integers_is_written(mixed, capsys):
    """A trial line edited by hand to a number past 2**63 is set aside as no trial's,
    with its line; a count past it (``outliers: 1e308``) is kept as text: the export
    stopped with an OverflowError in either."""
    journal = mixed.path / "trials.jsonl"
    lines = journal.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('{"status":"ok"'))
    edited = json.loads(lines[at])
    edited["stats"]["outliers"] = 1e308
    lines[at] = json.dumps(edited)
    lines.append(json.dumps({**edited, "number": 10**20}))
    journal.write_text("\n".join(lines) + "\n")
    assert main(["export", str(mixed.path), "--format", "parquet"]) == 0
    out, err = capsys.readouterr()
    parquet = mixed.path / "trials.parquet"
    assert out.strip() == f"wrote 8 trials with their raw samples to {parquet}"
    assert (f"{journal}:{len(lines)}: trial record: number 100000000000000000000 is no "
            "trial's number (0 to 2**63 - 1); set aside") in err
    back = pd.read_parquet(parquet)
    assert back["outliers"].dtype == "string" and "1e+308" in set(back["outliers"])


def test_a_trial_ruled_out_is_sized_as_the_problem_measured_not_half_asked(
        tmp_path, monkeypatch):
    """The interpreter measures rows=64 cols=1000 as rows=16 cols=255: the config the
    constraint rules out gets that problem whole, as the measured trials have it (its
    rows and cols columns held 64 and 1000 beside the measured footprint and dims), in
    the Parquet export and the report's table alike; the report's table keeps the
    problem asked in ``size_label``."""
    from sweeper.report._tables import study_frame
    from sweeper.store import StudyStore

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sm.yaml").write_text(
        "study: sm\nkernel: softmax\nsampler: exhaustive\nparams:\n  grid: [rows]\n"
        "  block: [32, 128]\n  BLOCK: [64, 256]\n  rows: [64]\n  cols: [1000]\n"
        "  dtype: [float32]\nconstraints: [\"BLOCK >= 2 * block\"]\n"
        "measure: {warmup: 1, repeat: 2, stop: fixed}\n")
    assert main(["run", "sm.yaml", "--device", "interpret", "--quiet", "--no-report"]) == 0
    assert main(["export", "studies/sm-interpret", "--format", "parquet", "-o", "t.parquet"]
                ) == 0
    sized = ["footprint", "dims", "rows", "cols"]
    measured = [16 * 255 * 4, "rows=16 cols=255", 16, 255]
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert back["status"].tolist() == ["invalid", "ok", "ok", "ok"]
    assert back[sized].values.tolist() == [measured] * 4
    store = StudyStore(tmp_path / "studies" / "sm-interpret")
    table = study_frame(store.study_meta(), store.records()[0])
    assert table[sized].values.tolist() == [measured] * 4
    assert set(table["size_label"]) == {"rows=64 cols=1000"}


def test_the_trials_of_a_study_forced_past_a_kernel_edit_name_their_source(
        tmp_path, monkeypatch, capsys):
    """A study resumed with --force after its kernel was edited lists the trials of both
    sources (the Parquet export and ``trials_dataframe``), each with the source it was
    measured on, and the table names the source now: two rows of one config are told
    apart, and ``df[df.source_hash == df.attrs["kernel_source"]]`` is what it chooses
    from."""
    study = forced_study(tmp_path, monkeypatch)
    old = {t.source_hash for t in study_trials(study) if t.number < 8}
    df = study.trials_dataframe()
    assert df.attrs["kernel_source"] == "1" * 16 and old != {"1" * 16}
    assert df["source_hash"].tolist() == [*sorted(old) * 8, *["1" * 16] * 2]
    assert main(["export", str(study.path), "--format", "parquet"]) == 0
    back = pd.read_parquet(study.path / "trials.parquet")
    assert back["source_hash"].tolist() == df["source_hash"].tolist()
    now = df[df["source_hash"] == df.attrs["kernel_source"]]
    assert now["number"].tolist() == [8, 9]


def study_trials(study):
    """The trials of ``study`` (a :class:`sweeper.Study`) as the journal keeps them."""
    from sweeper.store import StudyStore

    return StudyStore(study.path).records()[0]


def test_csv_holds_every_trial_that_ran(mixed, tmp_path):
    target = tmp_path / "t.csv"
    assert mixed.export(target, format="csv") == target
    rows = list(csv.DictReader(line for line in target.read_text().splitlines()
                               if not line.startswith("#")))
    trials = mixed.trials_dataframe()
    ran = trials[~trials["status"].isin(["invalid", "missing"])]
    assert len(rows) == len(ran) == 5
    assert sorted(r["status"] for r in rows) == sorted(ran["status"].astype(str))
    assert sorted(float(r["median_ms"]) for r in rows if r["status"] == "ok") == sorted(
        ran.loc[ran["status"] == "ok", "median_ms"])


def test_csv_of_a_study_forced_past_a_kernel_edit_is_its_source_now_and_replays(
        tmp_path, monkeypatch, capsys):
    """A study resumed with --force after its kernel was edited holds two trials of some
    configs, one per source: the replay table holds each config once, as measured on the
    source now, so it replays (it held both, which a replay table refuses), and the
    export says how many it left out.  One with no trial on the source now is refused."""
    study = forced_study(tmp_path, monkeypatch)
    target = tmp_path / "t.csv"
    capsys.readouterr()
    assert main(["export", str(study.path), "--format", "csv", "-o", str(target)]) == 0
    assert capsys.readouterr().out.endswith(      # 4 ok and a wrong answer
        "; left out 5 trials measured on an earlier source of the kernel\n")
    rows = list(csv.DictReader(line for line in target.read_text().splitlines()
                               if not line.startswith("#")))
    assert sorted(float(r["median_ms"]) for r in rows) == sorted(
        t.stats.median for t in study_trials(study) if t.number >= 8)
    again = sweeper.run(SPACE, device=f"replay:{target}", studies_dir=tmp_path / "again",
                        quiet=True, report=False)
    assert again.winners["number"].tolist() != [] and \
        again.winners["median_ms"].iloc[0] == study.winners["median_ms"].iloc[0]
    meta = json.loads((study.path / "study.json").read_text())     # edited again
    meta["forced"].append({"changed": [f"kernel_source: '{'1' * 16}' -> '{'2' * 16}'"]})
    (study.path / "study.json").write_text(json.dumps({**meta, "kernel_source_hash": "2" * 16}))
    assert main(["export", str(study.path), "--format", "csv", "-o", str(target)]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: {study.path}: no trial ran on the kernel's source now (7 trials on an "
        "earlier source, before a resume with --force after the kernel changed): a replay "
        "table of it would hold no row; nothing written\n")


def test_csv_of_a_study_no_trial_of_which_ran_is_refused(tmp_path, capsys):
    """Every config missing from the replayed table: no trial ran, so a replay table would
    hold no row; the export says so (exit 2) and writes nothing, as the tuning file's."""
    lines = mixed_table(tmp_path).read_text().splitlines()
    table = tmp_path / "empty.csv"
    table.write_text("\n".join(line for line in lines if line.startswith("#")) + "\n"
                     + next(line for line in lines if not line.startswith("#")) + "\n")
    sweeper.run(SPACE, device=f"replay:{table}", studies_dir=tmp_path / "st", quiet=True,
                report=False)
    study = tmp_path / "st" / "mixed-replay"
    capsys.readouterr()
    assert main(["export", str(study), "--format", "csv", "-o", str(tmp_path / "o.csv")]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: {study}: no trial ran (2 invalid, 6 missing): a replay table of it would "
        "hold no row; nothing written\n")
    assert not (tmp_path / "o.csv").exists()


def test_study_export_writes_each_format_and_refuses_an_unknown_one(mixed, tmp_path):
    assert mixed.export(tmp_path / "a.parquet", format="parquet") == tmp_path / "a.parquet"
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert mixed.export(url, format="optuna") == url
    assert mixed.export(url, format="optuna", replace=True) == url
    with pytest.raises(sweeper.SweeperError) as err:
        mixed.export(tmp_path / "x", format="xlsx")
    assert str(err.value) == ("format 'xlsx' is unknown; allowed: tuning, csv, parquet, "
                              "triton, header, optuna")
    for typed, meant in (("cvs", "csv"), ("CSV", "csv"), ("Parquet", "parquet")):
        with pytest.raises(sweeper.SweeperError, match=f"; did you mean '{meant}'\\?$"):
            mixed.export(tmp_path / "x", format=typed)


def test_study_export_returns_the_files_path_or_the_databases_url(mixed, tmp_path):
    """``Study.export`` returns where it wrote as ``Study.report`` does, a ``Path``, where
    it wrote a file (it returned a ``str``); an Optuna database's URL is no path
    (``Path("sqlite:///a.db")`` is ``sqlite:/a.db``), so it is a ``str``, the one given
    where it names its file by its absolute path."""
    for format, name in (("csv", "replay.csv"), ("parquet", "trials.parquet"),
                         ("triton", "tuned_configs.py")):
        written = mixed.export(format=format)
        assert isinstance(written, Path) and written == mixed.path / name
    journal = tmp_path / "optuna.log"
    written = mixed.export(str(journal), format="optuna")
    assert isinstance(written, Path) and written == journal
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert mixed.export(url, format="optuna") == url


def test_the_tuning_file_is_the_working_folders_whatever_the_studies_folder(
        mixed, tmp_path, monkeypatch):
    """The tuning file is where launches look (``sweeper.tuned``, ``sweeper tuned``:
    ``$SWEEPER_TUNING``, else ``studies/tuning.json`` of the working folder), and they
    know no studies folder: ``Study.export()`` writes it there whatever ``studies_dir``
    the study was run with, as ``sweeper export --studies-dir`` does."""
    monkeypatch.delenv("SWEEPER_TUNING", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert mixed.export() == work / "studies" / "tuning.json"
    entries = json.loads((work / "studies" / "tuning.json").read_text())["entries"]
    (work / "studies" / "tuning.json").unlink()
    assert main(["export", "mixed-replay", "--studies-dir", str(tmp_path / "st")]) == 0
    again = json.loads((work / "studies" / "tuning.json").read_text())["entries"]
    assert len(again) == len(entries) == 1 and not (tmp_path / "st" / "tuning.json").exists()
    monkeypatch.setenv("SWEEPER_TUNING", str(tmp_path / "mine.json"))
    assert mixed.export() == tmp_path / "mine.json"


def test_each_problem_is_an_optuna_study_of_its_own(tmp_path, capsys):
    """Two footprints, two Optuna studies named after them: best_trial and importances
    compare configs of one problem, and the footprint is no parameter."""
    from tests.conftest import SMALL_SPACE

    study = sweeper.run(SMALL_SPACE.replace("footprint: [4KiB]", "footprint: [4KiB, 8KiB]"),
                        device="interpret", studies_dir=tmp_path, quiet=True, report=False)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    assert main(["export", str(study.path), "--format", "optuna", "--to", url]) == 0
    assert "to the Optuna studies 'tiny-interpret footprint=4KiB', " \
           "'tiny-interpret footprint=8KiB' in" in capsys.readouterr().out
    names = sorted(optuna.get_all_study_names(url))
    assert names == ["tiny-interpret footprint=4KiB", "tiny-interpret footprint=8KiB"]
    for name in names:
        loaded = optuna.load_study(study_name=name, storage=url)
        assert loaded.user_attrs["problem"] == name.split(" ", 1)[1]
        assert len(loaded.trials) == 8 and "footprint" not in loaded.best_trial.params
    assert main(["export", str(study.path), "--format", "optuna", "--to", url]) == 2
    assert "already holds an Optuna study 'tiny-interpret footprint=4KiB'" in \
        capsys.readouterr().err
    assert main(["export", str(study.path), "--format", "optuna", "--to", url,
                 "--replace"]) == 0
    assert sorted(optuna.get_all_study_names(url)) == names
