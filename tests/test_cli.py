"""End to end through the command line, on the Triton interpreter: run -> study -> heatmap
-> report -> export -> tuned lookup -> a kernel launched with the exported config."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sweeper import tuned
from sweeper.cli import main
from sweeper.kernels.copy import copy as tuned_copy
from sweeper.store import StudyStore

ROOT = Path(__file__).resolve().parent.parent


def sweeper(*args, cwd):
    """Run the real console entry point in a subprocess; returns (rc, stdout, stderr)."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "sweeper", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_run_report_export_tuned_launch(small_space, tmp_path, monkeypatch):
    rc, out, err = sweeper("run", str(small_space), "--device", "interpret", cwd=tmp_path)
    assert rc == 0, err
    study = tmp_path / "studies" / "tiny-interpret"
    assert "study tiny-interpret: studies/tiny-interpret (new)" in out
    assert "note: Triton interpreter on the CPU" in out and "mean nothing for a GPU" in out
    assert "done: 6 measured, 0 failed, 2 skipped by constraints" in out
    assert "best in the sweep, float32 4KiB cold: #" in out
    assert "report: studies/tiny-interpret/report.md" in out
    assert re.search("winner, float32 4KiB cold, after [345] interleaved rounds over ", out)
    assert (study / "study.json").exists() and (study / "trials.jsonl").exists()
    pngs = sorted(p.name for p in (study / "heatmaps").glob("*.png"))
    assert pngs == ["float32_4KiB_cold_BLOCK-1024.png", "float32_4KiB_cold_BLOCK-256.png",
                    "float32_4KiB_cold_best.png"]
    report = json.loads((study / "report.json").read_text())
    assert report["environment"]["device"] == "interpret"
    assert "mean nothing for a GPU" in report["device_note"]
    assert "interpreter" in (study / "report.md").read_text()

    # a second run resumes and measures nothing again
    rc, out, _ = sweeper("run", str(small_space), "--device", "interpret", "--quiet",
                         cwd=tmp_path)
    assert rc == 0 and "done: 0 measured" in out and "study " not in out

    rc, out, _ = sweeper("report", "tiny-interpret", cwd=tmp_path)
    assert rc == 0 and "3 heatmaps" in out

    rc, out, err = sweeper("export", "tiny-interpret", cwd=tmp_path)
    assert rc == 0, err
    assert "wrote 1 entry to studies/tuning.json" in out
    tuning = tmp_path / "studies" / "tuning.json"
    entry = json.loads(tuning.read_text())["entries"][0]
    winner = report["winners"][0]
    assert entry["trial"] == winner["winner"] and entry["chosen_by"] == "interleaved final"
    row = winner["finalists"][0]
    assert row["role"] == "winner" and row["number"] == winner["winner"]
    assert (entry["grid_expr"], entry["block"], entry["meta"]["BLOCK"]) == (
        row["grid"], row["block"], row["BLOCK"])

    rc, out, _ = sweeper("tuned", "copy", "--footprint", "4KiB", "--gpu",
                         "Triton interpreter (CPU)", cwd=tmp_path)
    assert rc == 0 and f"block={entry['block']}" in out

    # the tuned config flows back into a launch
    cfg = tuned("copy", dtype="float32", footprint=4096, gpu="Triton interpreter (CPU)",
                path=tuning)
    assert cfg.block == entry["block"] and cfg.meta == entry["meta"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.randn(1024)
    assert torch.equal(tuned_copy(x, tuning=str(tuning)), x)


def signal_after_trial(monkeypatch, count: int, *signals) -> None:
    """Each of ``signals`` sent to this process once its ``count``-th trial is reported
    (the user's Ctrl-C, a scheduler's SIGTERM), in the run's own reporter."""
    from sweeper.sweep import SilentReporter

    trial = SilentReporter.trial
    seen = []

    def signalling(self, record, best):
        trial(self, record, best)
        seen.append(record)
        if len(seen) == count:
            for sig in signals:
                os.kill(os.getpid(), sig)

    monkeypatch.setattr(SilentReporter, "trial", signalling)


def test_a_run_ctrl_c_stopped_exits_130_with_its_trials_kept(small_space, tmp_path,
                                                              monkeypatch, capsys):
    import signal

    from sweeper.sweep import SilentReporter

    trial = SilentReporter.trial
    signal_after_trial(monkeypatch, 2, signal.SIGINT)   # the user's Ctrl-C after the second
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report"]) == 130
    out, err = capsys.readouterr()
    assert "stopped: interrupted (Ctrl-C)" in out
    assert err == "stopping after the current trial (Ctrl-C again to abort it)\n"  # no echo
    study = tmp_path / "studies" / "tiny-interpret"
    kept = [json.loads(line) for line in (study / "trials.jsonl").read_text().splitlines()]
    ok = sum(t.get("status") == "ok" for t in kept)
    assert ok >= 2
    # what it left, and how to measure it: 6 valid configs (the constraint rules out 2)
    assert (f"{6 - ok} configs and the finals of 1 problem left for the next run: Ctrl-C "
            "stopped the sweep (run the same command to measure them)") in out
    monkeypatch.setattr(SilentReporter, "trial", trial)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report"]) == 0     # resumed to the end: done


def test_a_sigterm_stops_a_run_as_ctrl_c_does_and_exits_143(small_space, tmp_path,
                                                             monkeypatch, capsys):
    """A job scheduler's SIGTERM (or ``kill``) stops the run after the trial in flight,
    with its summary, as Ctrl-C does; the handler the process had is back afterwards, and
    a second signal aborts at once."""
    import signal

    class Killed(Exception):
        pass

    def before(signum, frame):        # the process's own handler: what a stray SIGTERM hits
        raise Killed
    previous = signal.signal(signal.SIGTERM, before)
    signal_after_trial(monkeypatch, 2, signal.SIGTERM)   # the scheduler's, after the second
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                     "--no-report"]) == 143
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, previous)
    out, err = capsys.readouterr()
    assert "stopped: interrupted (SIGTERM)" in out and "best in the sweep" in out
    assert "left for the next run: a SIGTERM stopped the sweep (run the same command" in out
    assert err == ("SIGTERM: stopping after the current trial (a second SIGTERM or a Ctrl-C "
                   "aborts it)\n")
    kept = (tmp_path / "studies" / "tiny-interpret" / "trials.jsonl").read_text()
    assert sum(json.loads(line).get("status") == "ok" for line in kept.splitlines()) == 2
    # a second signal while the first is honoured
    signal_after_trial(monkeypatch, 1, signal.SIGTERM, signal.SIGINT)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report"]) == 130
    assert capsys.readouterr().err.endswith("sweeper: aborted; every finished trial is kept\n")
    # two SIGTERMs: the scheduler's status, 128 + SIGTERM, not Ctrl-C's
    signal_after_trial(monkeypatch, 1, signal.SIGTERM, signal.SIGTERM)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report", "--force"]) == 143
    assert capsys.readouterr().err.endswith("sweeper: aborted; every finished trial is kept\n")


def test_ctrl_c_during_the_finals_leaves_the_finals_not_started_to_the_next_run(
        small_space, tmp_path, monkeypatch, capsys):
    import signal

    from sweeper.sweep import SilentReporter

    small_space.write_text(small_space.read_text().replace("footprint: [4KiB]",
                                                           "footprint: [4KiB, 2KiB]"))
    started = SilentReporter.final_started

    def interrupting(self, problem, finalists):  # the user's Ctrl-C as the first final starts
        started(self, problem, finalists)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(SilentReporter, "final_started", interrupting)
    monkeypatch.chdir(tmp_path)
    run = ["run", str(small_space), "--device", "interpret", "--quiet", "--no-report"]
    assert main(run) == 130
    out = capsys.readouterr().out
    assert "stopped: interrupted (Ctrl-C)" in out
    assert "finals of 1 problem left for the next run: Ctrl-C stopped the finals" in out
    assert out.count("winner, ") == 1              # the final that had started ended
    monkeypatch.setattr(SilentReporter, "final_started", started)
    assert main(run) == 0
    out = capsys.readouterr().out
    assert out.count("winner, ") == 2 and "left for the next run" not in out


def test_ctrl_c_in_the_last_final_lets_it_end_and_exits_130(small_space, tmp_path,
                                                              monkeypatch, capsys):
    import signal

    from sweeper.sweep import SilentReporter

    round_ = SilentReporter.final_round

    def interrupting(self, number, finalists):  # the user's Ctrl-C after the first round
        round_(self, number, finalists)
        if number == 1:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(SilentReporter, "final_round", interrupting)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report"]) == 130
    out = capsys.readouterr().out
    assert "stopped: interrupted (Ctrl-C)" in out and out.count("winner, ") == 1
    assert "left for the next run" not in out           # the one final ended


def test_bad_space_exits_2_with_one_line_and_writes_nothing(write_space, tmp_path):
    path = write_space("kernel: copy\nparams:\n  BLOCK: {pow2: [300, 1024]}\n", "bad.yaml")
    rc, out, err = sweeper("run", str(path), "--device", "interpret", cwd=tmp_path)
    assert rc == 2
    assert err == (f"{path}:3: params.BLOCK.pow2: 300 is not a power of two; allowed: a "
                   "power of two at each end (256 or 512 here)\n")
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "studies").exists()


def test_no_gpu_points_to_the_interpreter(small_space, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc, _, err = sweeper("run", str(small_space), cwd=tmp_path)
    assert rc == 2
    assert err.count("\n") == 1 and "no CUDA device found" in err and "--device interpret" in err
    assert not (tmp_path / "studies").exists()


def test_plan_counts_and_estimates(small_space, capsys):
    assert main(["plan", str(small_space), "--device", "interpret"]) == 0
    out = capsys.readouterr().out
    assert "8 configs (grid 2 × block 2 × dtype 1 × footprint 1 × cache 1 × BLOCK 2)" in out
    assert "constraints and values remove 2; 6 valid" in out
    assert "2  constraint 'BLOCK >= 4 * block' is false" in out
    assert "estimated time:" in out


def test_plan_of_a_partly_run_study_counts_what_the_run_would_measure(small_space, tmp_path,
                                                                     monkeypatch, capsys):
    """Before a run resumes, ``plan`` says what it would measure: the configs the study
    has not answered, as the run's own estimate counts them, not the whole space."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet", "--no-report",
                 "--trials", "2"]) == 0
    capsys.readouterr()
    assert main(["plan", str(small_space), "--device", "interpret"]) == 0
    out = capsys.readouterr().out
    kept = len(StudyStore(tmp_path / "studies" / "tiny-interpret").records()[0])
    assert "6 valid" in out
    assert (f"would measure 4 on Triton interpreter (CPU); the study in "
            f"studies/tiny-interpret keeps {kept} trials of this space, not measured again") in out


def test_plan_on_a_replay_device_estimates_the_recorded_gpu(capsys):
    root = Path(__file__).resolve().parent.parent
    table = root / "tests/data/replay/h200-copy.csv"
    assert main(["plan", str(root / "spaces/copy.yaml"), "--device", f"replay:{table}"]) == 0
    out = capsys.readouterr().out
    assert "204 valid" in out
    assert "would measure 204 (budget: 400 trials) on replay: NVIDIA H200" in out
    assert "estimated time:" in out and "as on the GPU the table was recorded on" in out


def test_a_study_name_close_to_a_study_folder_is_suggested(tmp_path, capsys, monkeypatch):
    """A run on the interpreter names its study ...-interpret: the name without it finds
    no study, and the message names the folder the user meant."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "studies" / "copy-fp32-interpret").mkdir(parents=True)
    (tmp_path / "studies" / "copy-fp32-interpret" / "study.json").write_text("{}")
    (tmp_path / "studies" / "matmul-bf16").mkdir()
    (tmp_path / "studies" / "matmul-bf16" / "study.json").write_text("{}")
    for name in ("studies/copy-fp32", "copy-fp32"):
        assert main(["export", name]) == 2
        err = capsys.readouterr().err
        assert f"sweeper: no study {name!r}" in err
        assert err.rstrip().endswith("; did you mean studies/copy-fp32-interpret?")
    assert main(["export", "softmax"]) == 2
    assert "did you mean" not in capsys.readouterr().err        # nothing close: no guess


def test_a_file_in_a_study_folder_suggests_the_study(tmp_path, capsys, monkeypatch):
    """``sweeper report studies/x/report.md`` names a file of study x: the message names
    the folder to give instead."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "studies" / "copy-fp32-interpret").mkdir(parents=True)
    (tmp_path / "studies" / "copy-fp32-interpret" / "study.json").write_text("{}")
    for name in ("report.md", "trials.jsonl", "heatmaps"):
        assert main(["report", f"studies/copy-fp32-interpret/{name}"]) == 2
        err = capsys.readouterr().err
        assert err.rstrip().endswith("; did you mean studies/copy-fp32-interpret?")


def test_a_space_file_given_for_a_study_names_its_studies(tmp_path, capsys, monkeypatch):
    """``sweeper report spaces/copy.yaml`` names the space, not a study: the message says
    so and names the studies that ran that file (by its recorded hash), or none."""
    import hashlib

    monkeypatch.chdir(tmp_path)
    (tmp_path / "spaces").mkdir()
    space = tmp_path / "spaces" / "copy.yaml"
    space.write_text("kernel: copy\nparams: {BLOCK: [256]}\n")
    digest = hashlib.sha256(space.read_bytes()).hexdigest()
    for name, sha in (("copy-interpret", digest), ("copy-replay", digest), ("other", "0")):
        (tmp_path / "studies" / name).mkdir(parents=True)
        (tmp_path / "studies" / name / "study.json").write_text(
            json.dumps({"space_sha256": sha}))
    assert main(["report", "spaces/copy.yaml"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "; spaces/copy.yaml is a space file, not a study; its studies: "
        "studies/copy-interpret, studies/copy-replay")
    (tmp_path / "spaces" / "add.yaml").write_text("kernel: add\n")
    assert main(["export", "spaces/add.yaml"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "; spaces/add.yaml is a space file, not a study; no study here ran it (sweeper run "
        "spaces/add.yaml makes one)")


def test_the_commands_description_is_whole(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("Autotuning parameter sweeps for GPU kernels, with measurements you can trust: "
            "describe a search space in YAML, sweep it, report and export the winners.") in text


def test_run_help_names_the_study_a_device_without_a_gpu_runs_into(capsys):
    """A newcomer without a GPU finds their study under the name ``--study``'s help gives:
    the interpreter's and a replay's alike."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "with the device's name appended: -interpret, -replay)" in text


def test_tuned_help_names_the_defaults_a_machine_without_a_gpu_looks_up(capsys, monkeypatch):
    """``sweeper tuned --help`` names the device a lookup defaults to where there is no GPU
    (a newcomer's replay study is found only with ``--gpu``) and the tuning file's default."""
    from sweeper.lookup import current_gpu
    from sweeper.tuning import DEFAULT_TUNING

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(SystemExit):
        main(["tuned", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"without one, '{current_gpu()}')" in text and "'replay: NVIDIA H200'" in text
    assert f"(default: $SWEEPER_TUNING or {DEFAULT_TUNING})" in text


def test_compare_help_gives_each_options_default(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "SAME becomes UNCLEAR (default: 5%)" in text and "(default: 1%, as the finals)" in text


@pytest.mark.parametrize("command", ["run", "worker", "plan", "report", "roofline", "export",
                                     "ab", "compare", "copy-study"])
def test_studies_dir_help_gives_its_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    help_text = text[text.rindex("--studies-dir STUDIES_DIR"):]          # past the usage
    assert "default: studies" in help_text[:300]


def test_unknown_study_and_debug_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "nothing"]) == 2
    assert "sweeper: no study 'nothing' (looked in nothing and studies/nothing)" in \
        capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2                 # one place, said once
    assert f"sweeper: no study '{tmp_path}' (looked in {tmp_path})" in capsys.readouterr().err
    with pytest.raises(Exception, match="no study"):
        main(["--debug", "report", "nothing"])
    with pytest.raises(Exception, match="no study"):
        main(["report", "nothing", "--debug"])          # after the command as well


def test_bad_option_values(small_space, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--time", "soon"]) == 2
    assert "--time: 'soon' is not a duration" in capsys.readouterr().err
    # a negative duration is the option's value, refused as one (not "expected one argument")
    for value in ("-3s", "-1m", "-1h30m"):
        assert main(["run", str(small_space), "--device", "interpret", "--time", value]) == 2
        assert f"--time: '{value}' is not a duration" in capsys.readouterr().err
    assert main(["worker", str(small_space), "--study", "s", "--lease", "-5s"]) == 2
    assert "--lease: '-5s' is not a duration" in capsys.readouterr().err
    assert not (tmp_path / "studies").exists()
    assert main(["tuned", "copy", "--footprint", "lots"]) == 2
    assert "--footprint: 'lots' is not a size" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch, capsys):
    """``sweeper kernels | head``: the closed pipe is exit 141, no traceback."""
    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["kernels"]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("signal_", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_ctrl_c_while_the_command_loads_is_one_line_and_130(signal_, status, small_space,
                                                            tmp_path):
    """A Ctrl-C before the first trial, while the executable imports what its commands need
    (here as numpy loads, what the parser's import reaches first), ends it as a Ctrl-C
    anywhere does: one line, exit 130, nothing written, no traceback.  A SIGTERM alike,
    with 143: it killed the command silently there (and while it wrote its report)."""
    code = ("import importlib.abc, os, runpy, signal, sys\n"
            "class CtrlC(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'numpy':\n"
            f"            os.kill(os.getpid(), signal.{signal_})\n"
            "sys.meta_path.insert(0, CtrlC())\n"
            # as in a terminal: a shell's background job starts with SIGINT ignored
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "sys.argv = ['sweeper', *sys.argv[1:]]\n"
            "runpy.run_module('sweeper', run_name='__main__', alter_sys=True)\n")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    (tmp_path / "here").mkdir()
    done = subprocess.run([sys.executable, "-c", code, "run", str(small_space), "--device",
                           "interpret"], capture_output=True, text=True, check=False,
                          cwd=tmp_path / "here", env=env, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (
        status, "", "sweeper: aborted; every finished trial is kept\n")
    assert list((tmp_path / "here").iterdir()) == []


def test_the_executable_leaves_as_python_would_less_the_teardown():
    """``leave``: threads ended as the interpreter ends them (an idle thread pool's
    workers told to stop, non-daemon threads joined), atexit handlers run, buffered
    output flushed, the status kept; only the freeing of the heap is skipped."""
    code = ("import atexit, concurrent.futures, sys, threading, time\n"
            "from sweeper.cli import leave\n"
            "atexit.register(lambda: print('atexit'))\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n"
            "idle = concurrent.futures.ThreadPoolExecutor(2)\n"   # never shut down
            "idle.submit(print, 'pool')\n"
            "time.sleep(0.05)\n"
            "print('out'); sys.stderr.write('err')\n"
            "leave(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT, timeout=60)   # an idle pool would hang
    assert (done.returncode, done.stdout, done.stderr) == (3, "pool\nout\nthread\natexit\n",
                                                           "err")


def test_a_signal_while_the_executable_leaves_ends_it_with_its_status_and_no_traceback():
    """A second Ctrl-C that comes while ``leave`` runs the exit hooks (after a first one
    stopped the sweep and the summary was printed) printed ``Exception ignored in atexit
    callback`` and a traceback ending in KeyboardInterrupt; now the process ends at once
    with the command's status, its output flushed.  A SIGTERM alike."""
    for sig in ("SIGINT", "SIGTERM"):
        code = ("import atexit, os, signal, sys, time\n"
                "from sweeper.cli import leave\n"
                "atexit.register(lambda: print('not reached'))\n"
                f"atexit.register(lambda: (os.kill(os.getpid(), signal.{sig}), "
                "time.sleep(5)))\n"
                "print('out'); sys.stderr.write('err')\n"
                "leave(130)\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=False, cwd=ROOT, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (130, "out\n", "err"), sig


def test_report_says_which_configs_failed_as_run_does(write_space, tmp_path, capsys):
    """``sweeper report`` prints the ``failed:`` line ``sweeper run`` printed, not only
    report.md; a study with no failure prints none."""
    space = write_space("""
        study: skips
        kernel: tests.short_kernels_for_tests:skips_index_17
        sampler: exhaustive
        params: {block: [32, 64], BLOCK: [256], footprint: [4KiB]}
        measure: {warmup: 1, repeat: 3}
    """)
    studies = tmp_path / "studies"
    main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
          "--no-report"])
    failed = [x for x in capsys.readouterr().out.splitlines() if x.startswith("failed: ")]
    assert len(failed) == 1 and failed[0].startswith("failed: 2 wrong_answer (first: #")
    assert main(["report", "skips-interpret", "--studies-dir", str(studies)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == failed[0]


def test_a_resume_says_the_failures_its_study_holds_and_exits_as_the_first_run(
        write_space, tmp_path, capsys):
    """A resume with nothing left to measure of a study that holds failed configs says
    them (``failed in earlier runs: ...``) and exits 3 as the run that failed them did: a
    CI job running the same command again sees the same status; a run whose ``-p`` leaves
    the failed configs out holds none of them, and exits 0."""
    space = write_space("""
        study: big-blocks-fail
        kernel: tests.kernels_for_tests:RaisesOnBigBlock
        sampler: exhaustive
        params: {grid: [sms], block: [32, 64], BLOCK: [256, 1024], footprint: [4KiB]}
        measure: {warmup: 1, repeat: 3}
    """)
    args = ["run", str(space), "--device", "interpret", "--studies-dir",
            str(tmp_path / "studies"), "--no-report"]
    assert main(args) == 3
    failed = [x for x in capsys.readouterr().out.splitlines() if x.startswith("failed")]
    assert len(failed) == 1 and failed[0].startswith("failed: 2 crashed (first: #")
    assert main(args) == 3
    again = [x for x in capsys.readouterr().out.splitlines() if x.startswith("failed")]
    assert again == [failed[0].replace("failed:", "failed in earlier runs:", 1)]
    assert main([*args, "-p", "BLOCK=256"]) == 0
    assert not [x for x in capsys.readouterr().out.splitlines() if x.startswith("failed")]


def test_a_resume_with_nothing_left_to_measure_skips_the_gpu_check_and_says_so(
        small_space, tmp_path, capsys):
    """A resume whose study holds every config (or whose kept trials spend its trial
    budget) says that nothing is left to measure instead of an estimate for 0 trials,
    and compiles nothing for a GPU: no trial would use the check."""
    args = ["run", str(small_space), "--device", "interpret", "--studies-dir",
            str(tmp_path / "studies"), "--no-report"]
    assert main([*args, "--trials", "2"]) == 0
    first = capsys.readouterr().out.splitlines()
    assert any(x.startswith("gpu check: ") for x in first)
    assert any(x.startswith("estimated time: ") for x in first)
    assert main([*args, "--trials", "2"]) == 0
    again = capsys.readouterr().out.splitlines()
    assert "nothing left to measure: the study's 2 trials spend the trial budget of 2; " \
        "no gpu check" in again
    assert not [x for x in again if x.startswith(("gpu check", "estimated time"))]
    assert main(args) == 0                      # the rest of the space
    capsys.readouterr()
    assert main(args) == 0
    again = capsys.readouterr().out.splitlines()
    assert [x for x in again if x.startswith("nothing left")] == [
        "nothing left to measure: the study holds every one of the space's 8 configs (8 "
        "trials kept); no gpu check"]
    assert not [x for x in again if x.startswith(("gpu check", "estimated time"))]


def test_a_rerun_after_failures_alike_with_nothing_changed_says_so_up_front(
        write_space, tmp_path, capsys):
    """A run stopped because its first configs all failed alike, run again with nothing
    changed (the kernel's source, the space, the settings), says so before it measures
    the configs left; one whose ``-p`` sweeps other labels does not."""
    from tests.conftest import SMALL_SPACE

    space = write_space(SMALL_SPACE.replace("kernel: copy",
                                            "kernel: tests.kernels_for_tests:CopiesZeros"))
    args = ["run", str(space), "--device", "interpret", "--studies-dir",
            str(tmp_path / "studies"), "--no-report", "--gpu-check", "off"]
    main([*args, "-p", "footprint=4KiB,8KiB"])
    out = capsys.readouterr().out
    assert "stopped: the first 5 configs all failed alike" in out
    assert "is at fault; fix it and run again (with --force: a study refuses a changed " \
        "kernel or space without it)\n" in out
    assert "nothing changed" not in out
    main([*args, "-p", "footprint=4KiB,8KiB"])
    notes = [x for x in capsys.readouterr().out.splitlines() if "nothing changed" in x]
    assert notes == ["note: nothing changed since the last run stopped at its first 5 configs "
                     "failing alike (the same kernel source, space and settings): the configs "
                     "left are measured and will likely fail the same way; to measure a fixed "
                     "kernel, rerun with --force"]
    main(args)
    assert "nothing changed" not in capsys.readouterr().out
