import csv
import dataclasses
import itertools
import json
import sys

import pytest

from sweeper.devices import open_device
from sweeper.errors import ContextLost, StudyError, StudyWarning
from sweeper.kernels import load_kernel
from sweeper.measure import Stop, StopReason
from sweeper.space import load_space
from sweeper.store import JOURNAL, REJECTED, StudyStore
from sweeper.sweep import SilentReporter, StopFlag, Sweep, enumerate_choices, open_study
from sweeper.sweep._bench import Bench
from sweeper.trial import TrialStatus
from tests.conftest import ROOT, SMALL_SPACE


def start(space_path, root, **kwargs):
    device = open_device("interpret")
    space = load_space(space_path)
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test", force=kwargs.pop("force", False))
    return Sweep(space, kernel, device, store, **kwargs), store


def test_enumerate_splits_valid_and_ruled_out(small_space):
    space = load_space(small_space)
    valid, invalid = enumerate_choices(space, {"sms": 2, "l2_bytes": 1 << 20})
    # BLOCK >= 4*block rules out BLOCK=256 with block=128, for both grids
    assert len(valid) == 6 and len(invalid) == 2
    assert all(c["BLOCK"] == "256" and c["block"] == "128" for c, _ in invalid)
    assert invalid[0][1] == "constraint 'BLOCK >= 4 * block' is false (BLOCK=256, block=128)"


def test_exhaustive_sweep_measures_every_valid_config_once(small_space, tmp_path):
    sweep, store = start(small_space, tmp_path / "s")
    summary = sweep.run()
    assert summary.measured == 6 and summary.skipped == 2
    assert summary.stopped_by.startswith("complete")
    trials, baselines = store.records()
    assert len(trials) == 8
    assert len({t.key() for t in trials}) == 8
    assert sum(t.status is TrialStatus.INVALID for t in trials) == 2
    ok = [t for t in trials if t.ok]
    assert all(len(t.samples_ms) == 3 and t.cold_s > 0 and t.gbps > 0 for t in ok)
    fastest = max(t.gbps for t in ok)
    assert summary.best.gbps == fastest
    assert [b.name for b in baselines] == ["torch copy_"]
    meta = store.meta()
    assert meta["environment"]["device"] == "interpret"
    assert meta["measure"]["stop"] == "fixed" and meta["measure"]["repeat"] == 3
    assert all(t.stop_reason == StopReason(Stop.FIXED, "fixed: 3 samples") for t in ok)
    assert "BLOCK >= 4 * block" in meta["space_text"]


def test_resume_measures_nothing_twice(small_space, tmp_path):
    stop = StopFlag()

    class StopAfterTwo(SilentReporter):
        n = 0

        def trial(self, record, best):
            self.n += 1
            if self.n == 2:
                stop.set = True    # what Ctrl-C does: stop after the trial in flight

    sweep, store = start(small_space, tmp_path / "s", reporter=StopAfterTwo(), stop=stop)
    first = sweep.run()
    assert first.stopped_by == "interrupted (Ctrl-C)" and first.measured == 2
    kept = {t.key() for t in store.records()[0] if t.ok}
    assert len(kept) == 2
    sweep, store = start(small_space, tmp_path / "s")
    second = sweep.run()
    assert second.resumed == 4 and second.measured == 4   # 2 measured + 2 skipped were kept
    trials = store.records()[0]
    assert len(trials) == 8 and len({t.key() for t in trials}) == 8
    third, _ = start(small_space, tmp_path / "s")
    assert third.run().measured == 0


def test_torn_last_line_is_dropped_and_rerun(small_space, tmp_path):
    sweep, store = start(small_space, tmp_path / "s", max_trials=3)
    sweep.run()
    journal = tmp_path / "s" / JOURNAL
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])   # crash mid-write
    with pytest.warns(StudyWarning, match=r"trials.jsonl:\d+: incomplete last line .*; moved "
                                          "to trials.rejected.jsonl"):
        sweep, store = start(small_space, tmp_path / "s")
        sweep.run()
    for line in journal.read_text().splitlines():
        json.loads(line)
    trials = store.records()[0]
    assert len({t.key() for t in trials}) == 8 == len(trials)
    rejected = json.loads((tmp_path / "s" / REJECTED).read_text())
    assert rejected["text"] == lines[-1][:25]


def test_budget_trials_and_time(small_space, tmp_path):
    sweep, _ = start(small_space, tmp_path / "a", max_trials=2)
    summary = sweep.run()
    assert summary.measured == 2 and summary.stopped_by == "budget: 2 trials"
    sweep, _ = start(small_space, tmp_path / "b", max_time_s=1e-9)
    assert sweep.run().stopped_by == "budget: 1e-09 s"


def test_resume_with_other_settings_is_refused(small_space, tmp_path):
    sweep, _ = start(small_space, tmp_path / "s", max_trials=1)
    sweep.run()
    small_space.write_text(small_space.read_text().replace("repeat: 3", "repeat: 4"))
    line = small_space.read_text().splitlines().index(
        "measure: {warmup: 1, repeat: 4}") + 1
    with pytest.raises(StudyError, match=r"cannot resume, it was measured with other settings "
                                         rf"\(the space's line {line}: 'measure: "
                                         r"\{warmup: 1, repeat: 3\}' -> 'measure: \{warmup: "
                                         r"1, repeat: 4\}'\); rerun with --force"):
        start(small_space, tmp_path / "s")
    sweep, _ = start(small_space, tmp_path / "s", force=True)
    assert sweep.run().resumed >= 1


def test_a_study_resumed_with_force_takes_no_config_its_space_dropped_into_a_final(
        small_space, tmp_path):
    # the first run's best configs include block=128; the narrowed space has no such
    # value, so those trials stay in the journal but cannot be measured again
    sweep, store = start(small_space, tmp_path / "s", finals=False)
    sweep.run()
    first = [t for t in store.records()[0] if t.ok]
    assert any(t.choice["block"] == "128" for t in first)
    small_space.write_text(small_space.read_text().replace("block: [32, 128]", "block: [32]"))
    sweep, store = start(small_space, tmp_path / "s", force=True, finals=True)
    summary = sweep.run()
    assert summary.finals and not summary.finals_lost
    kept = {t.number: t for t in store.records()[0]}
    for final in summary.finals:
        assert all(kept[row.number].choice["block"] == "32" for row in final.finalists)
    assert len(kept) >= len(first)      # the earlier space's trials are all still there


def test_a_refusal_names_the_space_files_changed_lines():
    from sweeper.study import text_changes

    old = "a: 1\nb: [1, 2]\nc: 3\nd: 4\ne: 5\nf: 6\n"
    assert text_changes(old, old) == []
    assert text_changes(old, old.replace("b: [1, 2]", "b: [1]")) == [
        "line 2: 'b: [1, 2]' -> 'b: [1]'"]
    assert text_changes(old, old.replace("c: 3\n", "")) == ["line 3: 'c: 3' -> '(none)'"]
    many = "a: 0\nb: 0\nc: 3\nd: 0\ne: 5\nf: 0\n"
    assert text_changes(old, many) == ["line 1: 'a: 1 / b: [1, 2]' -> 'a: 0 / b: 0'",
                                       "line 4: 'd: 4' -> 'd: 0'", "line 6: 'f: 6' -> 'f: 0'"]
    assert text_changes(old, many, most=2) == ["line 1: 'a: 1 / b: [1, 2]' -> 'a: 0 / b: 0'",
                                               "line 4: 'd: 4' -> 'd: 0'", "and 1 more change"]
    # a file the space extends: its own line numbers, named
    child = "kernel: copy\nextends: base.yaml\n"
    base = "params:\n  block: [32]\n  BLOCK: [256, 1024]\n"
    text = f"{child}\n# extends base.yaml:\n{base}"
    assert text_changes(text, text.replace("[256, 1024]", "[256]")) == [
        "base.yaml line 3: 'BLOCK: [256, 1024]' -> 'BLOCK: [256]'"]
    assert text_changes(text, text.replace("kernel: copy", "kernel: add")) == [
        "line 1: 'kernel: copy' -> 'kernel: add'"]
    # a long text: linear but for the stretch that changed, named whole past DIFF_LINES
    long = "".join(f"k{i}: {i}\n" for i in range(50_000))
    assert text_changes(long, long.replace("k25000: 25000", "k25000: 0")) == [
        "line 25001: 'k25000: 25000' -> 'k25000: 0'"]
    wide = long.replace("k1: 1\n", "k1: 0\n").replace("k40000: 40000", "k40000: 0")
    (only,) = text_changes(long, wide)
    assert only.startswith("line 2: 'k1: 1 / k2: 2 / ")


def _scale_study(tmp_path, monkeypatch, blocks):
    """``sweeper run`` of examples/scale.py's kernel, copied as edited_scale.py in
    ``tmp_path`` (the working folder now), over ``BLOCK: [blocks]`` on the interpreter;
    and what edits its source (the next run imports it again)."""
    source = (ROOT / "examples" / "scale.py").read_text()
    (tmp_path / "edited_scale.py").write_text(source)
    (tmp_path / "s.yaml").write_text("kernel: edited_scale:scale\nsampler: exhaustive\n"
                                     "params: {grid: [\"cdiv(n, BLOCK)\"], block: [32], "
                                     f"BLOCK: [{blocks}], footprint: [4KiB]}}\n"
                                     "measure: {warmup: 1, repeat: 2}\n")
    monkeypatch.chdir(tmp_path)

    def edit():
        (tmp_path / "edited_scale.py").write_text(source.replace("A = 0.5", "A = 0.25"))
        monkeypatch.delitem(sys.modules, "edited_scale")
    return ["run", "s.yaml", "--device", "interpret", "--studies-dir", "studies", "--quiet",
            "--no-report"], edit


def test_plan_sees_a_kernel_source_edit_before_the_forced_resume(tmp_path, monkeypatch,
                                                                  capsys):
    """plan reads a ``@sweeper.kernel`` module's text (never running it), so an edit of the
    kernel since its study was measured is seen before the run: without --force plan
    refuses with run's own line, and with --force it counts the configs measured on the
    earlier source as to measure, as the forced run measures them again."""
    from sweeper.cli import main

    run, edit = _scale_study(tmp_path, monkeypatch, "256, 512")
    assert main(run) == 0
    plan = ["plan", *run[1:run.index("--quiet")]]
    capsys.readouterr()
    assert main(plan) == 0
    assert "would measure 0 " in capsys.readouterr().out
    edit()
    refused = []
    for command in (plan, run):
        assert main(command) == 2
        captured = capsys.readouterr()
        refused.append(captured.err)
        assert command is run or "edited_scale" not in sys.modules   # plan ran none of it
    assert refused[0] == refused[1] and "its kernel's source changed" in refused[0]
    assert main([*plan, "--force"]) == 0
    out = capsys.readouterr().out
    assert "would measure 2 on Triton interpreter (CPU)\n  (--force: the study was measured " \
        "with other settings, kernel_source; the run adds to it)\n" in out


def test_resume_after_the_kernel_source_changed_says_what_to_do_and_writes_nothing(
        tmp_path, monkeypatch, capsys):
    from sweeper.cli import main

    run, edit = _scale_study(tmp_path, monkeypatch, "256")
    assert main(run) == 0
    study = tmp_path / "studies" / "s-interpret"
    before = {p: p.read_bytes() for p in study.rglob("*") if p.is_file()}
    edit()
    capsys.readouterr()
    assert main(run) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("sweeper: ")
    assert err.startswith("sweeper: studies/s-interpret: cannot resume, its kernel's source "
                          "changed since it was measured (kernel_source: '")
    assert err.endswith("'); rerun with --force to keep its trials and measure its configs "
                        "again on this source (those of the earlier source stay in the study "
                        "but choose no winner), or with --study NEW to measure this source in "
                        "a new study\n")
    assert {p: p.read_bytes() for p in study.rglob("*") if p.is_file()} == before
    assert main([*run, "--study", "s-new"]) == 0 and (tmp_path / "studies" / "s-new").is_dir()
    assert main([*run, "--force"]) == 0
    # its one config, measured on the earlier source, is measured again on this one
    assert main(["export", str(study), "-o", str(tmp_path / "t.json")]) == 0
    assert json.loads((tmp_path / "t.json").read_text())["entries"][0]["trial"] == 1
    assert len(json.loads((study / "study.json").read_text())["resumed"]) == 1
    # a forced resume that measured nothing yet: nothing to export, and what to do
    journal = study / "trials.jsonl"
    lines = journal.read_text().splitlines(True)
    journal.write_text("".join(lines[:[json.loads(x).get("number") for x in lines].index(1)]))
    capsys.readouterr()
    assert main(["export", str(study), "-o", str(tmp_path / "u.json")]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: {study}: no successful trial on the kernel's source now to export: 1 "
        "trial ran on an earlier source, before a resume with --force after the kernel "
        "changed; run the study again (sweeper run) to measure its configs on this source\n")
    assert not (tmp_path / "u.json").exists()


@pytest.mark.parametrize("damage, says", [
    ({"kernel_source": "0123456789abcdef"},
     "kernel_source: '0123456789abcdef' differs from the kernel_source_hash '"),
    ({"kernel_source": "not a hash"}, "kernel_source: 'not a hash' is not a hash of 16 hex "
                                      "digits"),
    ({"kernel_source": 7}, "kernel_source: 7 is not text"),
    (None, "study.json records no fingerprint"),
])
def test_a_damaged_fingerprint_is_named_as_damage_not_as_a_changed_kernel(
        tmp_path, monkeypatch, capsys, damage, says):
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    run = ["run", "spaces/copy.yaml", "-p", "BLOCK=512,1024", "--device",
           f"replay:{ROOT / 'tests' / 'data' / 'replay' / 'h200-copy.csv'}", "--studies-dir",
           str(tmp_path), "--quiet", "--no-report", "--trials", "2"]
    assert main(run) == 0
    path = tmp_path / "copy-fp32-replay" / "study.json"
    meta = json.loads(path.read_text())
    if damage is None:
        del meta["fingerprint"]
    else:
        meta["fingerprint"].update(damage)
    path.write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(run) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "source changed" not in err
    assert err.startswith(f"sweeper: {path.parent}: cannot resume, the fingerprint in its "
                          f"study.json is damaged ({says}")
    assert err.endswith("; restore study.json from a copy, or rerun with --force to keep its "
                        "trials and add new ones to them, or with --study NEW to start a new "
                        "study\n")


def test_a_refused_resume_of_a_space_narrowed_back_says_force_adds_nothing(
        write_space, tmp_path, capsys):
    """A resume refused for a space whose configs the study all holds (one narrowed back)
    says ``--force`` keeps the trials and measures nothing new, not that it adds new
    ones; one refused for a space with configs the study lacks still says it adds them."""
    from sweeper.cli import main
    from tests.conftest import SMALL_SPACE

    whole = write_space(SMALL_SPACE, "tiny.yaml")
    args = ["--device", "interpret", "--studies-dir", str(tmp_path / "studies"),
            "--quiet", "--no-report"]
    assert main(["run", str(whole), *args]) == 0
    narrowed = write_space(SMALL_SPACE.replace("BLOCK: [256, 1024]", "BLOCK: [1024]"),
                           "tiny.yaml")
    capsys.readouterr()
    assert main(["run", str(narrowed), *args]) == 2
    err = capsys.readouterr().err
    assert "add new ones" not in err and err.endswith(
        "; rerun with --force to keep its trials under these settings (it measures "
        "nothing new: the study holds every config of this space), or with --study NEW "
        "to start a new study\n")
    widened = write_space(SMALL_SPACE.replace("BLOCK: [256, 1024]", "BLOCK: [256, 1024, 2048]"),
                          "tiny.yaml")
    assert main(["run", str(widened), *args]) == 2
    assert capsys.readouterr().err.endswith(
        "; rerun with --force to keep its trials and add new ones to them, or with "
        "--study NEW to start a new study\n")


def test_a_refused_resume_stops_at_the_first_config_force_would_add(
        tmp_path, monkeypatch, capsys):
    """A refused resume says whether ``--force`` would measure configs the study lacks.
    It counted every config of a space up to 50,000 (a second there, on a refusal decided
    without them); the first config the study lacks tells it, and the rest of the space is
    never enumerated."""
    import sweeper.study
    from sweeper.cli import main

    enumerated = []
    resolved = sweeper.study.resolved

    def counted(*args, **kwargs):
        for item in resolved(*args, **kwargs):
            enumerated.append(item)
            yield item

    monkeypatch.setattr(sweeper.study, "resolved", counted)
    space = tmp_path / "x.yaml"
    space.write_text((ROOT / "spaces" / "copy.yaml").read_text())
    run = ["run", str(space), "--device",
           f"replay:{ROOT / 'tests' / 'data' / 'replay' / 'h200-copy.csv'}", "--studies-dir",
           str(tmp_path), "--quiet", "--no-report", "--trials", "2"]
    assert main(run) == 0
    space.write_text(space.read_text().replace("warmup: 10", "warmup: 11"))
    capsys.readouterr()
    enumerated.clear()
    assert main(run) == 2
    assert capsys.readouterr().err.endswith(
        "; rerun with --force to keep its trials and add new ones to them, or with "
        "--study NEW to start a new study\n")
    assert 1 <= len(enumerated) <= 3            # at most past the 2 measured: of 210


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_model_samplers_never_measure_a_config_twice(write_space, tmp_path, sampler):
    path = write_space(f"""
        kernel: copy
        sampler: {{name: {sampler}, seed: 1}}
        params:
          grid: [1, 2, 3]
          block: [32, 64]
          BLOCK: [256, 512]
          footprint: [4KiB]
        constraints: ["grid != 3 or block == 32"]
        measure: {{warmup: 0, repeat: 2}}
    """)
    sweep, store = start(path, tmp_path / sampler)
    summary = sweep.run()
    trials = store.records()[0]
    keys = [t.key() for t in trials]
    assert len(keys) == len(set(keys))
    measured = [t for t in trials if t.status is not TrialStatus.INVALID]
    assert len(measured) == summary.measured == 10   # 12 configs, 2 ruled out
    assert summary.stopped_by.startswith("complete")
    assert summary.repeated >= 0


BREAKS = "tests.kernels_for_tests:RaisesOnBigBlock"


def test_a_trial_that_breaks_the_cuda_context_is_recorded_and_the_sweep_goes_on(
        write_space, tmp_path):
    """Every config with BLOCK 1024 raises; the device then reports itself unusable, as
    CUDA does after an illegal address.  Each such trial is recorded once, crashed, and
    the study resumed in a fresh "process" measures everything else exactly once."""
    path = write_space(SMALL_SPACE.replace("kernel: copy", f"kernel: {BREAKS}"))
    space = load_space(path)
    kernel = load_kernel(space.kernel)
    store = StudyStore(tmp_path / "st")
    runs = 0
    while True:
        runs += 1
        device = open_device("interpret")
        device.healthy = lambda: False
        open_study(store, space, kernel, device, command="test")
        try:
            summary = Sweep(space, kernel, device, store).run()
            break
        except ContextLost as lost:
            last = store.records()[0][-1]
            assert lost.number == last.number and last.status is TrialStatus.CRASHED
            assert "left the CUDA context unusable" in last.reason
            assert "too big for this test" in last.reason
    trials = store.records()[0]
    measured = [t for t in trials if t.status is not TrialStatus.INVALID]
    assert len({t.key() for t in measured}) == len(measured) == 6
    assert sum(t.ok for t in measured) == 2 and runs == 5     # 4 crashes, then the rest
    assert summary.best is not None and summary.best.ok


def test_run_goes_on_in_worker_processes_after_a_broken_context(write_space, tmp_path,
                                                                 monkeypatch, capsys):
    """Measuring inline, the first trial that breaks the context hands the rest of the
    sweep to worker processes in the same command: no re-execution, each config once."""
    from sweeper.cli import main
    from sweeper.devices._interpret import InterpretDevice

    path = write_space(SMALL_SPACE.replace("kernel: copy", f"kernel: {BREAKS}"))
    monkeypatch.setattr(InterpretDevice, "healthy", lambda self: False)
    monkeypatch.setattr("os.execve", lambda *a: pytest.fail("re-executed"))
    args = ["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
            "--quiet", "--no-report", "--workers", "inline"]
    assert main(args) == 3                  # measured; the trial that broke it crashed
    out, err = capsys.readouterr()
    assert err.count("left the CUDA context unusable") == 1, err
    assert "the sweep went on in worker processes" in err and "fresh process" not in err
    assert "done: 2 measured, 3 failed" in out        # in the worker processes
    measured = [t for t in StudyStore(tmp_path / "tiny-interpret").records()[0]
                if t.status is not TrialStatus.INVALID]
    assert len({t.key() for t in measured}) == len(measured) == 6
    crashed = [t for t in measured if t.status is TrialStatus.CRASHED]
    assert len(crashed) == 4 and sum(t.ok for t in measured) == 2
    assert sum("went on in worker processes" in t.reason for t in crashed) == 1


def test_a_kernels_refusal_that_raises_fails_its_trials_and_the_sweep_goes_on(
        write_space, tmp_path, capsys):
    """A subclass's own ``refusal`` that raises at BLOCK=1024: those trials crash, their
    reason saying what raised and at which line (the ``failed:`` line names it), the
    other configs are measured, and the run ends with exit status 3, not a traceback."""
    from sweeper.cli import main
    from sweeper.cli._exits import EXIT_CONFIGS_FAILED
    from tests import kernels_for_tests

    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RefusalRaisesOnBigBlocks"))
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--no-report", "--gpu-check", "off"])
    out, err = capsys.readouterr()
    assert rc == EXIT_CONFIGS_FAILED and "Traceback" not in err, err
    line = kernels_for_tests.RefusalRaisesOnBigBlocks.refusal.__code__.co_firstlineno + 1
    said = (f"asking whether the kernel can launch it: KeyError: 1024 (at "
            f"kernels_for_tests.py:{line}: ")
    assert "failed: 4 crashed (first: #" in out and said[:60] in out, out
    trials = StudyStore(tmp_path / "tiny-interpret").records()[0]
    assert {(t.config.meta["BLOCK"], t.status) for t in trials if t.config} == {
        (256, TrialStatus.OK), (1024, TrialStatus.CRASHED)}
    assert all(t.reason.startswith(said) for t in trials
               if t.status is TrialStatus.CRASHED), trials


def test_ab_stops_at_a_kernels_refusal_that_raises_saying_so(write_space, tmp_path, capsys,
                                                              monkeypatch):
    """``sweeper ab`` where the kernel's own ``refusal`` raises at BLOCK=1024: one line
    naming the side and what raised where, exit 2, no traceback."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RefusalRaisesOnBigBlocks"))
    rc = main(["ab", str(space), "--vary", "BLOCK=256,1024", "--device", "interpret"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "BLOCK=1024 with " in err and " held: the kernel's refusal raised KeyError: " \
        "1024 (at kernels_for_tests.py:" in err, err


def test_a_hung_trial_is_recorded_as_timeout_and_the_run_goes_on(write_space, tmp_path):
    """A real `sweeper run` process: the configs with BLOCK 1024 never return; after
    measure.timeout each is recorded as timeout, the process re-executes itself and
    resumes, and the other configs are measured."""
    from tests.conftest import run_sweeper_process

    text = SMALL_SPACE.replace("kernel: copy", "kernel: tests.kernels_for_tests:HangsOnBigBlock")
    # 3 s, as tests/test_hangs.py: at 1 s a BLOCK=256 trial, interpreted on a loaded
    # machine (two test processes and their sweeps on two cores), once took longer
    path = write_space(text.replace("measure: {warmup: 1, repeat: 3}",
                                    "measure: {warmup: 1, repeat: 3, timeout: 3s}"))
    run, measured = run_sweeper_process(path, "interpret", tmp_path, "tiny-interpret",
                                        timeout=300)
    # 3: the last process counts the timeouts its predecessors recorded (SWEEPER_SINCE)
    assert run.returncode == 3, run.stderr
    assert run.stderr.count("going on in a fresh process") == 4
    assert len({t.key() for t in measured}) == len(measured) == 6
    hung = [t for t in measured if t.status is TrialStatus.TIMEOUT]
    assert len(hung) == 4 and all(t.config.meta["BLOCK"] == 1024 for t in hung)
    assert all(t.reason.startswith("no result after 3 s (measure.timeout)") for t in hung)
    assert sum(t.ok for t in measured) == 2


def test_a_full_disk_when_a_hang_is_recorded_is_one_line_and_exit_1(write_space, tmp_path,
                                                                    monkeypatch, capsys):
    """On the watchdog's thread nobody else can report a failed append: it says so in one
    line and ends the process with status 1 (here ``os._exit`` only records the code)."""
    import errno
    import os
    import time

    from sweeper.errors import WriteError
    from sweeper.fsio import write_error

    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    sweep, store = start(write_space(SMALL_SPACE), tmp_path / "s", on_hang=lambda r, edited: None)
    sweep.measure = dataclasses.replace(sweep.measure, timeout_s=0.05)
    real = store.append

    def append(record):
        if getattr(record, "status", None) is TrialStatus.TIMEOUT:
            raise write_error(OSError(errno.ENOSPC, "No space left on device"),
                              store.journal_path)
        real(record)

    monkeypatch.setattr(store, "append", append)
    monkeypatch.setattr(Bench, "trial", lambda self, number, choice: time.sleep(0.3))
    with pytest.raises(Exception) as raised:
        sweep.run()
    assert not isinstance(raised.value, WriteError)          # the main thread saw the hang
    assert exits == [1]
    err = capsys.readouterr().err
    assert err.startswith("sweeper: disk full writing ") and err.count("\n") == 1


def _replay_run(tmp_path, *extra):
    """``sweeper run`` of spaces/copy.yaml on the replay device into ``tmp_path``."""
    return ["run", "spaces/copy.yaml", "-p", "BLOCK=512,1024", "--device",
            f"replay:{ROOT / 'tests' / 'data' / 'replay' / 'h200-copy.csv'}", "--studies-dir",
            str(tmp_path), "--quiet", "--no-report", "--trials", "2", *extra]


def test_a_study_folder_copied_under_another_name_is_the_study_of_that_name(
        tmp_path, monkeypatch, capsys):
    """``cp -r studies/a studies/b``: reports, exports and a resume name the study ``b``
    (a report notes where it came from); reading it leaves study.json as it was, a resume
    records the new name and the old one as ``copied_from``."""
    import shutil

    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    assert main(_replay_run(tmp_path)) == 0
    shutil.copytree(tmp_path / "copy-fp32-replay", tmp_path / "b")
    copied = (tmp_path / "b" / "study.json").read_bytes()
    assert main(["report", str(tmp_path / "b")]) == 0
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert (report["study"], report["copied_from"]) == ("b", "copy-fp32-replay")
    assert report["reproduce"].endswith("--study b")
    md = (tmp_path / "b" / "report.md").read_text()
    assert md.startswith("# Study `b`: ") and "copied or renamed from the study " \
        "copy-fp32-replay" in md
    assert main(["export", "b", "--studies-dir", str(tmp_path), "-o",
                 str(tmp_path / "t.json")]) == 0
    (entry,) = json.loads((tmp_path / "t.json").read_text())["entries"]
    assert entry["study"] == "b"
    assert (tmp_path / "b" / "study.json").read_bytes() == copied     # read, not written
    assert StudyStore(tmp_path / "copy-fp32-replay").study_meta().copied_from == ""
    capsys.readouterr()
    assert main(_replay_run(tmp_path, "--study", "b")) == 0
    meta = json.loads((tmp_path / "b" / "study.json").read_text())
    assert (meta["study"], meta["copied_from"]) == ("b", "copy-fp32-replay")
    original = json.loads((tmp_path / "copy-fp32-replay" / "study.json").read_text())
    assert original["study"] == "copy-fp32-replay" and "copied_from" not in original


def test_a_resume_from_another_folder_keeps_the_space_file_the_study_recorded(
        tmp_path, monkeypatch, capsys):
    """The study records its space file as the command that created it named it, relative
    to the folder it ran in (``spaces/x.yaml``).  A resume of that file from another folder
    (``../a/spaces/x.yaml``) rewrote it, so the report's command to reproduce the study
    and the command that created it named one file from two folders, neither said which;
    it is kept, and another file run into the study is recorded as its run named it."""
    from sweeper.cli import main

    (tmp_path / "a" / "spaces").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    text = (ROOT / "spaces" / "copy.yaml").read_text()
    (tmp_path / "a" / "spaces" / "x.yaml").write_text(text)
    table = f"replay:{ROOT / 'tests' / 'data' / 'replay' / 'h200-copy.csv'}"
    run = ["-p", "BLOCK=512,1024", "--device", table, "--study", "x", "--studies-dir",
           str(tmp_path / "st"), "--quiet", "--trials"]
    monkeypatch.chdir(tmp_path / "a")
    assert main(["run", "spaces/x.yaml", *run, "1", "--no-report"]) == 0
    monkeypatch.chdir(tmp_path / "b")
    assert main(["run", "../a/spaces/x.yaml", *run, "2"]) == 0
    meta = json.loads((tmp_path / "st" / "x" / "study.json").read_text())
    assert (meta["space_path"], meta["space_folder"]) == (
        "spaces/x.yaml", str(tmp_path / "a" / "spaces"))
    report = json.loads((tmp_path / "st" / "x" / "report.json").read_text())
    assert report["command"].startswith("sweeper run spaces/x.yaml ")
    assert report["reproduce"].startswith("sweeper run spaces/x.yaml ")
    (tmp_path / "b" / "y.yaml").write_text(text)        # another file, the same space
    assert main(["run", "y.yaml", *run, "3", "--no-report"]) == 0
    meta = json.loads((tmp_path / "st" / "x" / "study.json").read_text())
    assert (meta["space_path"], meta["space_folder"]) == ("y.yaml", str(tmp_path / "b"))


def test_a_study_resumed_with_force_adopts_the_new_space_and_resumes_without_it_after(
        tmp_path, monkeypatch, capsys):
    """Once ``--force`` added a changed space's trials, the same command run again
    resumes as it is: the study checks the next run against the space it last ran."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    space = tmp_path / "s.yaml"
    space.write_text((ROOT / "spaces" / "copy.yaml").read_text())
    run = [*_replay_run(tmp_path)[:1], str(space), *_replay_run(tmp_path)[2:]]
    assert main(run) == 0
    space.write_text(space.read_text().replace('"BLOCK >= block"', '"BLOCK >= 2*block"'))
    capsys.readouterr()
    assert main(run) == 2 and "cannot resume" in capsys.readouterr().err
    assert main([*run, "--force"]) == 0
    assert main(run) == 0                          # the same command, unchanged file
    meta = json.loads((tmp_path / "copy-fp32-replay" / "study.json").read_text())
    assert "2*block" in meta["space_text"] and len(meta["resumed"]) == 2
    (forced,) = meta["forced"]
    assert forced["when"] == meta["resumed"][0]
    assert [c.split(":")[0] for c in forced["changed"]] == ["space_content"]
    # a later change is named against the space the study last ran, not its first
    space.write_text(space.read_text().replace("2*block", "4*block"))
    capsys.readouterr()
    assert main(run) == 2
    assert "'constraints: [\"BLOCK >= 2*block\"]' -> 'constraints: [\"BLOCK >= 4*block\"]'" \
        in capsys.readouterr().err


def test_a_resume_with_other_p_overrides_continues_the_study_without_force(
        tmp_path, monkeypatch, capsys):
    """``-p`` replaces axes for one run, not the study's settings: a study is resumed by
    what its space file says before ``-p`` (``space_content``), so a run with other
    overrides, or none, adds to the study without ``--force``, and ``plan`` sees it alike;
    ``study.json`` keeps the file's own text and records nothing as forced."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    run, _ = _narrow_copy(tmp_path, "32")
    assert main(run) == 0
    path = tmp_path / "run" / "copy-fp32-replay" / "study.json"
    before = json.loads(path.read_text())
    wider = [*run[:run.index("-p")], "-p", "BLOCK=1024", "-p", "block=32,64",
             *run[run.index("--device"):]]
    plan = ["plan", *[a for a in wider[1:] if a not in ("--quiet", "--no-report")]]
    capsys.readouterr()
    assert main(plan) == 0
    out = capsys.readouterr().out
    assert "the study in " in out and "--force" not in out
    assert main(wider) == 0
    meta = json.loads(path.read_text())
    assert "forced" not in meta and len(meta["resumed"]) == 1
    assert meta["fingerprint"]["space_content"] == before["fingerprint"]["space_content"]
    assert meta["space_text"] == (ROOT / "spaces" / "copy.yaml").read_text()
    trials = StudyStore(path.parent).records()[0]
    assert sorted({t.choice["block"] for t in trials}) == ["32", "64"]
    assert sum(t.choice["block"] == "64" for t in trials) == \
        sum(t.choice["block"] == "32" for t in trials) > 0


@pytest.mark.parametrize("sampler", ["random", "auto", "exhaustive"])
def test_trials_of_configs_this_run_s_space_lacks_do_not_make_it_complete(
        sampler, tmp_path, monkeypatch, capsys):
    """A sampler without a plan counts the configs left as the valid ones less those
    measured, and the progress bar starts at those measured: the study's trials of
    configs this run's space lacks (another ``-p``, a value ``--force`` dropped) are none
    of them.  Counted, 12 trials at ``block=32,64`` made the 6 configs at ``block=128``
    complete with none measured (``random``, ``auto``), and started the bar at 6/6."""
    from sweeper.cli import main
    from sweeper.sweep import _summary

    monkeypatch.chdir(ROOT)
    bars: list[tuple[int, int]] = []
    monkeypatch.setattr(_summary.SilentReporter, "start",
                        lambda self, total, done, best=None: bars.append((total, done)))
    space = tmp_path / "s.yaml"
    space.write_text((ROOT / "spaces" / "copy.yaml").read_text().replace(
        "sampler: exhaustive", f"sampler: {sampler}"))
    run, _ = _narrow_copy(tmp_path, "32,64")
    run[1] = str(space)
    assert main(run) == 0
    other = [*run[:run.index("-p")], "-p", "BLOCK=1024", "-p", "block=128",
             *run[run.index("--device"):]]
    capsys.readouterr()
    assert main(other) == 0
    assert "done: 6 measured" in capsys.readouterr().out
    assert bars == [(12, 0), (6, 0)]
    trials = StudyStore(tmp_path / "run" / "copy-fp32-replay").records()[0]
    assert sum(t.choice["block"] == "128" for t in trials) == 6 and len(trials) == 18


def test_a_resume_forced_after_the_kernel_changed_chooses_from_the_new_source_only(
        tmp_path, monkeypatch):
    """Each trial records the kernel source it was measured on; once ``--force`` resumed a
    study after its kernel's source changed, the winner, the export (its entry, top configs
    and source hash) and the run's summary come from the trials measured on the new source
    only, trials an older sweeper recorded without a hash counting as the old source's,
    and the report says how many ran on the earlier one.  A study never forced reads as it
    did, with or without hashes."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    run = _replay_run(tmp_path)[:-2]
    folder = tmp_path / "copy-fp32-replay"
    journal = folder / "trials.jsonl"

    def exported():
        assert main(["export", str(folder), "-o", str(tmp_path / "t.json")]) == 0
        return json.loads((tmp_path / "t.json").read_text())["entries"][0]

    def without_hashes(numbers):        # as an older sweeper wrote those trials
        lines = [json.loads(line) for line in journal.read_text().splitlines()]
        journal.write_text("".join(json.dumps(
            {k: v for k, v in d.items() if not (k == "source_hash" and d.get("number") in
                                                numbers)}) + "\n" for d in lines))

    assert main([*run, "--trials", "3"]) == 0
    old = load_kernel("copy").source_hash()
    trials = StudyStore(folder).records()[0]
    assert {t.source_hash for t in trials} == {old}
    best = min((t for t in trials if t.ok), key=lambda t: t.stats.median)
    assert exported()["trial"] == best.number
    without_hashes({t.number for t in trials})
    assert exported()["trial"] == best.number                  # never forced: as it was

    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    # the trial budget counts the new source's trials: one, the first config measured again
    assert main([*run, "--trials", "1", "--force"]) == 0
    new = [t for t in StudyStore(folder).records()[0] if t.number > max(
        t.number for t in trials)]
    assert {t.source_hash for t in new} == {"1" * 16} and len(new) == 1
    assert new[0].key() == trials[0].key() and new[0].number == len(trials)
    assert best.stats.median < min(t.stats.median for t in new)   # the old best is faster
    won = min(new, key=lambda t: t.stats.median)     # the old trials have no hash now
    entry = exported()
    assert (entry["trial"], entry["source_hash"]) == (won.number, "1" * 16)
    assert entry["sweep_median_ms"] == won.stats.median
    assert all(top["meta"]["BLOCK"] in {t.config.meta["BLOCK"] for t in new}
               for top in entry["top"]) and len(entry["top"]) <= len(new)
    assert main(["report", str(folder)]) == 0
    md = (folder / "report.md").read_text()
    assert "| earlier kernel source | 3 trials measured on an earlier source of the " \
        f"kernel than its source now ({'1' * 16}): no winner" in md
    assert "; the tables and heatmaps here leave them out (`trials.jsonl` keeps them) |" in md
    assert f"| float32 1GiB cold | {won.number} |" in md
    # the tables show the trials on the source now: the earlier ones are left out
    shown = json.loads((folder / "report.json").read_text())
    assert shown["counts"] == {"ok": len(new)}
    assert [row["number"] for row in shown["best"]] == [t.number for t in new]


def _narrow_copy(tmp_path, blocks):
    """``sweeper run`` of spaces/copy.yaml at ``BLOCK=1024`` and ``block=blocks`` on the
    replayed H200 table into ``tmp_path / "run"``, and its options but the command's."""
    device = f"replay:{ROOT / 'tests' / 'data' / 'replay' / 'h200-copy.csv'}"
    narrow = ["-p", "BLOCK=1024", "-p", f"block={blocks}", "--device", device]
    return ["run", "spaces/copy.yaml", *narrow, "--studies-dir", str(tmp_path / "run"),
            "--quiet", "--no-report"], narrow


def test_a_resume_forced_after_the_kernel_changed_measures_its_configs_again(
        tmp_path, monkeypatch, capsys):
    """A complete exhaustive study resumed with ``--force`` after its kernel's source
    changed measures every config again on the new source, numbered after the trials it
    holds (which stay in the journal), and ends with a winner on that source; so does a
    shared worker (``sweeper worker --force``), whose claims are on the new source."""
    import shutil

    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    run, narrow = _narrow_copy(tmp_path, "32,64")
    assert main(run) == 0
    shutil.copytree(tmp_path / "run", tmp_path / "shared")
    old = StudyStore(tmp_path / "run" / "copy-fp32-replay").records()[0]
    assert len(old) == 12 and all(t.ok for t in old)

    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    capsys.readouterr()
    assert main([*run, "--force"]) == 0
    assert "done: 12 measured" in capsys.readouterr().out
    worker = ["worker", "spaces/copy.yaml", "--study", "copy-fp32-replay", *narrow,
              "--studies-dir", str(tmp_path / "shared"), "--worker-id", "w", "--force"]
    assert main(worker) == 0
    for folder in ("run", "shared"):
        study = tmp_path / folder / "copy-fp32-replay"
        trials = StudyStore(study).records()[0]
        new = trials[12:]
        assert trials[:12] == old and [t.number for t in new] == list(range(12, 24))
        assert {t.source_hash for t in new} == {"1" * 16}
        assert sorted(t.key() for t in new) == sorted(t.key() for t in old)
        assert main(["export", str(study), "-o", str(tmp_path / "t.json")]) == 0
        entry = json.loads((tmp_path / "t.json").read_text())["entries"][0]
        assert entry["trial"] >= 12 and entry["source_hash"] == "1" * 16
    assert main(run) == 0                   # measured on this source: nothing again
    assert len(StudyStore(tmp_path / "run" / "copy-fp32-replay").records()[0]) == 24


def test_a_resume_forced_past_an_edit_estimates_the_configs_it_measures_again(
        small_space, tmp_path, monkeypatch, capsys):
    """Forced past an edit of its kernel, a resumed run measures again every config
    measured only on the earlier source; its estimate counts those trials, as ``sweeper
    plan --force`` does, not none ("estimated time: 3 s for 0 trials")."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    run = ["run", str(small_space), "--device", "interpret", "--no-report",
           "--gpu-check", "off"]
    assert main(run) == 0
    measured = sum(t.ok for t in StudyStore(tmp_path / "studies" / "tiny-interpret")
                   .records()[0])
    assert measured > 0
    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    capsys.readouterr()
    assert main([*run, "--force"]) == 0
    out = capsys.readouterr().out
    estimate = next(line for line in out.splitlines() if line.startswith("estimated time:"))
    assert f" for {measured} trials " in estimate, estimate
    assert f"done: {measured} measured" in out


def test_a_resume_with_nothing_left_says_so_not_an_estimate_of_no_part(
        small_space, tmp_path, monkeypatch, capsys):
    """A resume with nothing left to measure and no report, in a process already started
    (the API's, a notebook's), with the gpu check off: one line says nothing is left, and
    no estimate of 0 trials, whose every part is under half a second, follows."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    run = ["run", str(small_space), "--device", "interpret", "--no-report",
           "--gpu-check", "off"]
    assert main(run) == 0
    capsys.readouterr()
    assert main(run) == 0
    out = capsys.readouterr().out.splitlines()
    assert not [line for line in out if line.startswith("estimated time:")]
    assert "nothing left to measure: the study holds every one of the space's 8 configs (8 " \
        "trials kept)" in out


def test_a_source_changed_and_changed_back_measures_again_the_trials_that_name_none(
        tmp_path, monkeypatch, capsys):
    """A study whose kernel went from source A to B and back to A (each resume with
    --force) holds trials an older sweeper recorded without a source: they may have run on
    A or, forced past the first edit by that sweeper, on B.  They count as neither: the
    run measures their configs again on A, as a shared worker's claim on A (which only a
    trial naming A satisfies) does; the run treated them as done while the claims did
    not, so the two disagreed on what was left to measure."""
    import shutil

    from sweeper.cli import main
    from sweeper.store._base import claim_key
    from sweeper.winners import Sources

    monkeypatch.chdir(ROOT)
    run, narrow = _narrow_copy(tmp_path, "32")
    assert main(run) == 0
    folder = tmp_path / "run" / "copy-fp32-replay"
    journal = folder / "trials.jsonl"
    journal.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items()
                                           if k != "source_hash"}) + "\n"
                               for line in journal.read_text().splitlines()))
    first = StudyStore(folder).records()[0]
    assert len(first) == 6 and {t.source_hash for t in first} == {None}
    source = type(load_kernel("copy")).source_hash
    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    assert main([*run, "--force", "--trials", "1"]) == 0              # on B
    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", source)
    shutil.copytree(tmp_path / "run", tmp_path / "shared")
    capsys.readouterr()
    assert main([*run, "--force"]) == 0                                 # back on A
    assert "done: 6 measured" in capsys.readouterr().out
    worker = ["worker", "spaces/copy.yaml", "--study", "copy-fp32-replay", *narrow,
              "--studies-dir", str(tmp_path / "shared"), "--worker-id", "w", "--force"]
    assert main(worker) == 0
    a = load_kernel("copy").source_hash()
    for where in ("run", "shared"):
        trials = StudyStore(tmp_path / where / "copy-fp32-replay").records()[0]
        assert [t.source_hash for t in trials[7:]] == [a] * 6
        assert sorted(t.key() for t in trials[7:]) == sorted(t.key() for t in first)
    store = StudyStore(tmp_path / "run" / "copy-fp32-replay")
    assert len(Sources.of(store.study_meta()).done(store.records()[0])) == 6
    assert store.claim(claim_key(first[0].key(), a), "w", 60.0).value == "done"
    store.close()


def test_a_resume_forced_after_a_kernel_edit_that_measured_nothing_says_so(
        tmp_path, monkeypatch, capsys):
    """A resume with --force after an edit of the kernel whose every config then fails
    produced no number on the source now: the run says no config was measured and exits
    1 (it exited 3, as if the earlier source's numbers were the study's)."""
    from sweeper.cli import main
    from sweeper.cli._exits import EXIT_NOTHING_MEASURED

    monkeypatch.chdir(ROOT)
    run, narrow = _narrow_copy(tmp_path, "32")
    assert main(run) == 0
    table = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
    lines = table.read_text().splitlines(True)
    head = [line for line in lines if line.startswith("#")]
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    for row in rows:
        row.update(status="wrong_answer", median_ms="", samples_ms="")
    failing = tmp_path / "failing.csv"
    with failing.open("w", newline="") as f:
        f.write("".join(head))
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    device = narrow[narrow.index("--device") + 1]
    edited = [f"replay:{failing}" if arg == device else arg for arg in run]
    monkeypatch.setattr(type(load_kernel("copy")), "source_hash", lambda self: "1" * 16)
    capsys.readouterr()
    assert main([*edited, "--force"]) == EXIT_NOTHING_MEASURED
    assert capsys.readouterr().err.startswith(
        "sweeper: no config was measured: 5 wrong_answer (first: #6 ")   # 5 alike: stop


def test_a_resume_forced_after_the_kernel_changed_keeps_time_for_new_finalists_only(
        tmp_path, monkeypatch):
    """The time budget of a run of a study forced past a kernel edit keeps time for the
    finals of the trials on the new source only: the earlier source's enter no final."""
    from sweeper.cli import main
    from sweeper.sweep._budget import Budgets

    run, edit = _scale_study(tmp_path, monkeypatch, "256, 512")
    assert main(run) == 0
    edit()
    assert main([*run, "--force"]) == 0
    journal = tmp_path / "studies" / "s-interpret" / "trials.jsonl"   # its final undone
    journal.write_text("".join(line for line in journal.read_text().splitlines(True)
                               if json.loads(line)["kind"] != "final"))
    noted = []
    real = Budgets.note

    def spy(self, record, measured_now=False):
        noted.append(record.number)
        return real(self, record, measured_now)
    monkeypatch.setattr(Budgets, "note", spy)
    assert main([*run, "--time", "10m"]) == 0
    assert sorted(noted) == [2, 3]


def test_a_report_of_a_study_forced_past_a_kernel_edit_shows_no_final_of_the_earlier_source(
        tmp_path, monkeypatch):
    """A forced resume stopped before its finals leaves the earlier source's final the
    latest of its problem: the report leaves it out, as it does that final's finalists,
    and names the problem's final as still to run (it raised a KeyError on them); its
    power summary names the duty of the finals it shows alone (it read every latest
    final's)."""
    from sweeper.cli import main

    run, edit = _scale_study(tmp_path, monkeypatch, "256, 512")
    assert main(run) == 0
    edit()
    assert main([*run, "--force"]) == 0
    study = tmp_path / "studies" / "s-interpret"
    journal = study / "trials.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    finals = [i for i, d in enumerate(lines) if d["kind"] == "final"]
    lines[finals[0]]["duty"] = "cool-down 2 s"          # the earlier source's final
    journal.write_text("".join(json.dumps(d) + "\n" for i, d in enumerate(lines)
                               if i != finals[-1]))     # the new final undone
    assert main(["report", str(study)]) == 0
    shown = json.loads((study / "report.json").read_text())
    assert shown["winners"] == [] and shown["unfinished_finals"] == ["float32 4KiB cold"]
    assert sorted(row["number"] for row in shown["best"]) == [2, 3]
    assert shown["power"]["finals_duty"] == []
    lines[finals[-1]]["duty"] = "sustained"             # the new final back
    journal.write_text("".join(json.dumps(d) + "\n" for d in lines))
    assert main(["report", str(study)]) == 0
    shown = json.loads((study / "report.json").read_text())
    assert len(shown["winners"]) == 1 and shown["power"]["finals_duty"] == ["sustained"]


def test_the_power_summary_names_the_duty_switch_of_the_source_it_shows(
        tmp_path, monkeypatch):
    """A study whose kernel went from A to B, where B's run found it power-bound, and
    back to A (each resume with --force) shows A's trials: its power summary's switch is
    the one those trials followed, none here (it named the study's last, B's, though
    none of the trials shown ran under it); a switch A's own trials followed is named,
    and so is B's where a later trial shown followed it, saying where it was made."""
    from sweeper.cli import main
    from sweeper.measure import SUSTAINED
    from sweeper.store import DutyRecord

    run, edit = _scale_study(tmp_path, monkeypatch, "256, 512")
    first = (tmp_path / "edited_scale.py").read_text()
    assert main(run) == 0
    edit()
    assert main([*run, "--force"]) == 0                       # B: trials #2, #3
    (tmp_path / "edited_scale.py").write_text(first)
    monkeypatch.delitem(sys.modules, "edited_scale")
    assert main([*run, "--force", "-p", "BLOCK=256,512,1024"]) == 0    # A again: #4
    study = tmp_path / "studies" / "s-interpret"
    journal = study / "trials.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert sorted(d["number"] for d in lines if d["kind"] == "trial") == [0, 1, 2, 3, 4]

    def switched(at, *followed):
        """report.json's switch once trial ``at`` made the study power-bound and the
        trials ``followed`` were sampled under it."""
        duty = DutyRecord(trial=at, reason="sw_power_cap", duty=SUSTAINED,
                          note=f"power-bound from trial #{at}")
        out = []
        for d in lines:
            if d["kind"] == "trial" and d["number"] == at:
                out.append(duty.to_json())
            out.append({**d, "duty": SUSTAINED.describe()} if d.get("number") in followed
                       and d["kind"] == "trial" else d)
        journal.write_text("".join(json.dumps(d) + "\n" for d in out))
        assert main(["report", str(study)]) == 0
        return json.loads((study / "report.json").read_text())["power"]["switched"]

    assert switched(3, 3) == ""                  # B's switch: no trial shown followed it
    assert switched(1, 1) == "power-bound from trial #1"        # A's own
    note = switched(3, 3, 4)                     # A's #4 sampled under B's switch
    assert note.startswith("power-bound from trial #3") and "another source" in note


def test_a_resume_forced_after_the_environment_changed_records_the_new_environment(
        tmp_path, monkeypatch, capsys):
    """The environment a forced resume ran in becomes the study's, as its fingerprint
    does (reports show the latest run's); the one it replaced is kept in the ``forced``
    entry.  A resume that forced nothing keeps the study's."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("TRITON_SWEEPER_TEST_KNOB", raising=False)
    assert main(_replay_run(tmp_path)) == 0
    path = tmp_path / "copy-fp32-replay" / "study.json"
    first = json.loads(path.read_text())["environment"]
    monkeypatch.setenv("TRITON_SWEEPER_TEST_KNOB", "1")
    capsys.readouterr()
    assert main(_replay_run(tmp_path)) == 2 and "cannot resume" in capsys.readouterr().err
    assert main(_replay_run(tmp_path, "--force")) == 0
    meta = json.loads(path.read_text())
    assert meta["environment"]["env"]["TRITON_SWEEPER_TEST_KNOB"] == "1"
    (forced,) = meta["forced"]
    assert forced["environment"] == first and [c.split(":")[0] for c in forced["changed"]] \
        == ["env"]
    assert main(_replay_run(tmp_path)) == 0                 # resumes as it is now
    again = json.loads(path.read_text())
    assert again["environment"] == meta["environment"] and len(again["forced"]) == 1


def test_a_resume_on_another_replay_table_is_a_change_of_its_settings(
        tmp_path, monkeypatch, capsys):
    """A study replayed from one table resumed from another (``--device
    replay:OTHER.csv``, other contents) is refused with run's line, naming both tables;
    with --force it resumes, study.json's ``forced`` records the change, and the report's
    note and its body name the new table (the resume went ahead unrecorded, the note
    naming the old table).  A study an older sweeper recorded, its fingerprint without
    the table, resumes from the table its environment names."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    assert main(_replay_run(tmp_path)) == 0
    table = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
    other = tmp_path / "other.csv"
    other.write_text("# another recording\n" + table.read_text())
    run = [f"replay:{other}" if a == f"replay:{table}" else a for a in _replay_run(tmp_path)]
    path = tmp_path / "copy-fp32-replay" / "study.json"
    meta = json.loads(path.read_text())
    assert meta["environment"]["replay_table"] == str(table)
    del meta["fingerprint"]["replay_table_sha256"]         # as an older sweeper wrote it
    path.write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(_replay_run(tmp_path)) == 0                # its own table: resumed
    plan = ["plan", *[a for a in run[1:] if a not in ("--quiet", "--no-report")]]
    refused = []
    for command in (plan, run):                            # plan sees it as run does
        assert main(command) == 2
        refused.append(capsys.readouterr().err)
    assert refused[0] == refused[1]
    assert f"cannot resume, it was measured with other settings (replay_table: " \
        f"'{table}' -> '{other}' (other contents)); rerun with --force" in refused[1]
    assert main([*plan, "--force"]) == 0
    assert "replay_table; the run adds to it" in capsys.readouterr().out
    assert main([*run, "--force"]) == 0
    meta = json.loads(path.read_text())
    assert meta["forced"][-1]["changed"] == [
        f"replay_table: '{table}' -> '{other}' (other contents)"]
    assert str(other) in meta["device_note"] and str(table) not in meta["device_note"]
    assert main(["report", str(path.parent)]) == 0
    md = (path.parent / "report.md").read_text()
    assert f"timings from {other}: " in md and str(table) not in md.split("\n## ")[0]
    assert main(run) == 0                                  # resumes as it is now


def test_a_replay_table_is_told_by_its_contents_not_by_how_its_path_is_written(
        tmp_path, monkeypatch, capsys):
    """A replayed study's fingerprint holds the hash of its table's contents: the same
    table named by a relative path, or copied elsewhere, resumes it (a path written
    otherwise was refused as another table), and a table edited in place is refused by
    run and plan alike, naming its path (it resumed unseen).  A study an older sweeper
    recorded, with its table's path alone, reads as the contents that path holds now: a
    copy of it resumes, and a path that holds no table now is a change, said so."""
    import shutil

    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    table = tmp_path / "t.csv"
    shutil.copyfile(ROOT / "tests" / "data" / "replay" / "h200-copy.csv", table)
    run = [f"replay:{table}" if a.startswith("replay:") else
           str(ROOT / a) if a == "spaces/copy.yaml" else a for a in _replay_run(tmp_path)]
    assert main(run) == 0
    path = tmp_path / "copy-fp32-replay" / "study.json"
    meta = json.loads(path.read_text())
    monkeypatch.chdir(tmp_path)
    relative = ["replay:t.csv" if a.startswith("replay:") else a for a in run]
    copy = tmp_path / "copy.csv"
    shutil.copyfile(table, copy)
    copied = [f"replay:{copy}" if a.startswith("replay:") else a for a in run]
    plan = ["plan", *[a for a in relative[1:] if a not in ("--quiet", "--no-report")]]
    capsys.readouterr()
    for command in (plan, relative, copied):               # the same table: resumed
        assert main(command) == 0, capsys.readouterr().err
    assert "forced" not in json.loads(path.read_text())
    assert len(meta["fingerprint"]["replay_table_sha256"]) == 64
    table.write_text(table.read_text().replace("0.", "1.", 1) + "\n")   # edited in place
    refused = []
    for command in (plan, relative):
        assert main(command) == 2
        refused.append(capsys.readouterr().err)
    assert refused[0] == refused[1]
    assert "(replay_table: 't.csv' holds other contents than the study was measured " \
        "from); rerun with --force" in refused[1]
    older = {**meta, "fingerprint": {**{k: v for k, v in meta["fingerprint"].items()
                                        if k != "replay_table_sha256"},
                                     "replay_table": str(copy)}}
    path.write_text(json.dumps(older))                     # as an older sweeper wrote it
    assert main(copied) == 0
    path.write_text(json.dumps({**older, "fingerprint": {
        **older["fingerprint"], "replay_table": str(tmp_path / "gone.csv")}}))
    capsys.readouterr()
    assert main(copied) == 2
    assert f"(replay_table: '{tmp_path / 'gone.csv'}' -> '{copy}' (the study recorded " \
        "its table's path alone, and it holds no table now)); rerun with --force" in \
        capsys.readouterr().err


def _as_older_sweeper_wrote(path):
    """Rewrite study.json at ``path`` as an older sweeper wrote it: the hash of the space's
    bytes in its fingerprint, no content hash; returns that study.json."""
    meta = json.loads(path.read_text())
    del meta["fingerprint"]["space_content"]
    meta["fingerprint"]["space_sha256"] = meta["space_sha256"]
    path.write_text(json.dumps(meta))
    return meta


@pytest.mark.parametrize("older", [False, True])
def test_a_space_whose_budget_alone_changed_resumes_under_the_new_budget(
        tmp_path, monkeypatch, capsys, older):
    """A budget says when a search stops, not what a trial measures: an edit of
    ``budget:`` alone (its trials, its time; an older study's too) resumes the study
    without ``--force``, under the new budget; the same edit beside any other is refused
    as before."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    space = tmp_path / "s.yaml"
    text = (ROOT / "spaces" / "copy.yaml").read_text()
    space.write_text(text.replace("budget: {trials: 400, time: 10m}", "budget: {trials: 2}"))
    run = [*_replay_run(tmp_path)[:1], str(space), *_replay_run(tmp_path)[2:-2]]
    assert main(run) == 0
    path = tmp_path / "copy-fp32-replay" / "study.json"
    if older:
        _as_older_sweeper_wrote(path)
    space.write_text(text.replace("budget: {trials: 400, time: 10m}",
                                  "budget: {trials: 5, time: 20m}"))
    capsys.readouterr()
    assert main(run) == 0, capsys.readouterr().err
    assert StudyStore(tmp_path / "copy-fp32-replay").trials_counted() == 5
    meta = json.loads(path.read_text())
    assert "trials: 5" in meta["space_text"] and not meta.get("forced")
    space.write_text(text.replace("budget: {trials: 400, time: 10m}", "budget: {trials: 6}")
                     .replace('"BLOCK >= block"', '"BLOCK >= 2*block"'))
    assert main(run) == 2
    assert "cannot resume, it was measured with other settings" in capsys.readouterr().err
    assert StudyStore(tmp_path / "copy-fp32-replay").trials_counted() == 5


def test_the_space_is_fingerprinted_by_what_it_says_not_by_its_bytes():
    from sweeper.space import parse_space
    from sweeper.space._yaml import content_sha256

    text = (ROOT / "spaces" / "copy-small.yaml").read_text()
    same = ["# a comment\n" + text.replace("sampler: exhaustive", "sampler:   exhaustive  # x"),
            text.replace("block: [32, 128]", "block:\n    - 32\n    - 128"),
            text.replace("kernel: copy\n", "") + "kernel: 'copy'\n"]     # order, quotes
    hashes = {parse_space(t).content_sha256 for t in [text, *same]}
    assert len(hashes) == 1 and len({parse_space(t).sha256 for t in [text, *same]}) == 4
    assert parse_space(text.replace("BLOCK: [256, 1024]", "BLOCK: [256, 2048]")
                       ).content_sha256 not in hashes
    assert len({content_sha256(v) for v in ({"a": 1}, {"a": 1.0}, {"a": "1"}, {"a": True},
                                            {"a": [1]}, {"a": None}, {"b": 1})}) == 7


@pytest.mark.parametrize("older", [False, True])
def test_a_space_whose_comments_changed_resumes_and_a_change_is_named(
        tmp_path, monkeypatch, capsys, older):
    """A comment or whitespace edit of the space file resumes its study, an older study's
    too (its fingerprint has the hash of the space's bytes); a change of what it says is
    refused, naming the line that changed and not the comments."""
    from sweeper.cli import main

    monkeypatch.chdir(ROOT)
    space = tmp_path / "s.yaml"
    space.write_text((ROOT / "spaces" / "copy.yaml").read_text())
    run = [*_replay_run(tmp_path)[:1], str(space), *_replay_run(tmp_path)[2:]]
    assert main(run) == 0
    path = tmp_path / "copy-fp32-replay" / "study.json"
    if older:
        meta = _as_older_sweeper_wrote(path)
        assert main(run) == 0                    # the same file: the same bytes
        assert "space_content" in json.loads(path.read_text())["fingerprint"]
        path.write_text(json.dumps(meta))
    text = space.read_text()
    space.write_text("# tuned on the H200\n" + text.replace("sampler: ", "sampler:    "))
    capsys.readouterr()
    assert main(run) == 0, capsys.readouterr().err
    space.write_text("# retuned\n" + text.replace('"BLOCK >= block"', '"BLOCK >= 2*block"'))
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "cannot resume, it was measured with other settings (the space's line 14: " \
           "'constraints: [\"BLOCK >= block\"]' -> 'constraints: [\"BLOCK >= 2*block\"]'); " \
           "rerun with --force" in err and "tuned" not in err and "line 1:" not in err


@pytest.mark.parametrize("history", [[], ["b"], ["b", "c"], ["b", "a"]])
def test_a_plan_reads_an_edit_as_the_forced_resume_will_record_it(history):
    """``Sources.edited`` (plan, which sees an edit of the kernel before the run) reads
    the trials as ``Sources.of`` reads the study.json that the forced resume to the edited
    source records: after no change, one, two, and a change back to the first source."""
    from sweeper.store._meta import StudyMeta
    from sweeper.winners import Sources

    def meta(sources):
        forced = [{"when": "2026-01-01T00:00:00+00:00",
                   "changed": [f"kernel_source: '{h(a)}' -> '{h(b)}'"]}
                  for a, b in itertools.pairwise(sources)]
        return StudyMeta.from_json({"study": "s", "kernel": "copy",
                                    "kernel_source_hash": h(sources[-1]), "forced": forced})

    def h(name):
        return name * 16

    before = ["a", *history]
    for edit in "abcd":
        after = before if edit == before[-1] else [*before, edit]
        assert Sources.of(meta(before)).edited(h(edit)) == Sources.of(meta(after))
