"""What the commands say: every line true for the device, the kernel and each problem;
exit statuses that tell a script what happened.  In-process through ``sweeper.cli.main``."""

import argparse
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from sweeper import __version__
from sweeper.cli import EXIT_CONFIGS_FAILED, main
from sweeper.cli._parser import build_parser
from sweeper.core._units import counted
from sweeper.devices._cuda import CudaDevice
from sweeper.devices._interpret import InterpretDevice
from sweeper.devices._replay import ReplayDevice
from sweeper.engine._lines import cache_text
from sweeper.kernels import Headline, load_kernel
from sweeper.outcome import COMPLETE, failure_counts, nothing_measured
from sweeper.samplers._priors import prior_sources
from sweeper.space import Config, Problem, load_space
from sweeper.store import StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from sweeper.winners import Winners

ROOT = Path(__file__).resolve().parent.parent
REPLAY = ROOT / "tests" / "data" / "replay"


def run(capsys, *argv):
    """``sweeper ARGV``; returns (exit status, stdout lines, stderr)."""
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def line(lines, prefix):
    """The one line starting with ``prefix``."""
    found = [x for x in lines if x.startswith(prefix)]
    assert len(found) == 1, (prefix, lines)
    return found[0]


# -- export and tuned lead with the kernel's headline rate ----------------------------------------
def test_export_and_tuned_print_matmul_in_tflops_as_the_run_did(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "run", str(ROOT / "spaces/matmul.yaml"), "--device",
                     f"replay:{REPLAY / 'h200-matmul.csv'}", "--quiet", "--no-report")
    assert rc == 0
    best = line(out, "best in the sweep, bfloat16 M=4096 N=4096 K=4096 cold: #")
    figures = best.split(": median ")[1]                  # "0.184 ms, 746.8 TFLOP/s"
    assert figures.endswith(" TFLOP/s") and "GB/s" not in best

    rc, out, _ = run(capsys, "export", "matmul-bf16-replay", "-o", "tuning.json")
    assert rc == 0 and "GB/s" not in "\n".join(out)
    exported = line(out, "matmul bfloat16 M=4096 N=4096 K=4096 on replay: NVIDIA H200: #")
    assert exported.endswith(f": median {figures} (sweep median)")
    entry = json.loads(Path("tuning.json").read_text())["entries"][0]
    assert entry["headline"] == "tflops"
    assert figures == f"{entry['median_ms']:.4g} ms, {entry['rate']:.4g} TFLOP/s"
    flops = load_kernel("matmul").flops(Problem("bfloat16", entry["footprint"]))
    assert entry["rate"] * 1e12 == pytest.approx(flops / (entry["median_ms"] * 1e-3))

    rc, out, _ = run(capsys, "tuned", "matmul", "--dtype", "bfloat16", "--footprint", "32MiB",
                     "--gpu", "replay: NVIDIA H200", "--tuning", "tuning.json")
    assert rc == 0
    assert out[0].endswith(f"tuned at M=4096 N=4096 K=4096 (exact): median {figures} "
                           "(study matmul-bf16-replay)")


def test_tuning_entries_written_before_rates_read_as_gbps(tmp_path):
    from sweeper import tuned
    from sweeper.export import describe

    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"version": 1, "entries": [{
        "kernel": "matmul", "gpu": "G", "dtype": "float16", "footprint": 1 << 20,
        "grid": 132, "grid_expr": "sms", "block": 256, "meta": {"BLOCK_M": 128},
        "gbps": 12.5, "median_ms": 0.25, "study": "old", "facts": {"sms": 132,
                                                                    "l2_bytes": 1 << 20}}]}))
    cfg = tuned("matmul", dtype="float16", footprint=1 << 20, gpu="G", path=path)
    assert (cfg.rate, cfg.headline.unit) == (12.5, "GB/s")
    assert describe(cfg).endswith("tuned at 1MiB (exact): median 0.25 ms, 12.5 GB/s (study old)")


# -- the header claims a flush only where the device flushes ---------------------------------------
def test_only_a_device_that_flushes_claims_the_l2_flush(small_space, tmp_path, capsys,
                                                       monkeypatch):
    assert CudaDevice.flushes_l2 and not InterpretDevice.flushes_l2
    assert not ReplayDevice.flushes_l2
    assert cache_text(["cold"], CudaDevice) == "cache cold (L2 flushed before each sample)"
    assert cache_text(["cold", "warm"], InterpretDevice) == (
        "cache cold and warm (no L2 flush on this device: cold is timed as warm)")
    assert cache_text(["warm"], CudaDevice) == "cache warm"
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "run", str(small_space), "--device", "interpret", "--no-report")
    assert rc == 0
    space = line(out, "space: 8 configs")
    assert space.endswith("cache cold (no L2 flush on this device: cold is timed as warm)")
    assert not any("L2 flushed" in x for x in out)


@pytest.mark.gpu
def test_on_a_gpu_the_header_says_the_l2_is_flushed(small_space, tmp_path, capsys,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)     # other tests ran interpreted
    rc, out, _ = run(capsys, "run", str(small_space), "--no-report")
    assert rc == 0
    assert line(out, "space: 8 configs").endswith("; cache cold (L2 flushed before each sample)")
    assert line(out, "best in the sweep, float32 4KiB cold: #").endswith(" GB/s")
    assert line(out, "winner, float32 4KiB cold, after ")


# -- one best and one winner line per problem, each naming it --------------------------------------
def test_each_problem_gets_its_best_and_winner_lines(write_space, tmp_path, capsys,
                                                    monkeypatch):
    space = write_space("""
        study: two
        kernel: copy
        sampler: exhaustive
        params:
          grid: [sms]
          block: [32, 64]
          BLOCK: [256]
          footprint: [16KiB, 4KiB]
        measure: {warmup: 1, repeat: 3}
    """)
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                     "--no-report")
    assert rc == 0
    results = [x for x in out if x.startswith(("best in the sweep", "winner"))]
    shown = [re.sub(r"after [345] interleaved", "after N interleaved", x.split(": #")[0])
             for x in results]
    assert shown == [                                          # 4 KiB first: sorted by size
        "best in the sweep, float32 4KiB cold",
        "winner, float32 4KiB cold, after N interleaved rounds over 2 finalists",
        "best in the sweep, float32 16KiB cold",
        "winner, float32 16KiB cold, after N interleaved rounds over 2 finalists"]
    store = StudyStore(tmp_path / "studies" / "two-interpret")
    trials = store.records()[0]
    picks = Winners.of(store).picks(trials)
    assert len(picks) == 2 and all(p.final is not None for p in picks.values())
    for (_, footprint, _, _), pick in picks.items():     # the final's median and its rate
        t = pick.trial
        base = pick.final.baseline
        assert line(results, f"winner, float32 {footprint >> 10}KiB cold").endswith(
            f": #{t.number} grid=sms (=2) block={t.config.block} BLOCK=256: median "
            f"{pick.median_ms:.4g} ms, {t.rate(Headline.GBPS, pick.median_ms):.4g} GB/s; "
            f"{counted(len(pick.final.tied) - 1, 'other')} tied within noise; "
            f"{pick.final.baseline_ratio_text()}× torch copy_ "
            f"({base.stats.median:.4g} ms in the same rounds)")

    # a resumed run that measures nothing still names each problem's winner
    rc, again, _ = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                       "--no-report")
    assert rc == 0 and [x for x in again if x.startswith(("best", "winner"))] == results


# -- nothing measured: exit 1 and say why ---------------------------------------------------------
ZEROS = """
    study: zeros
    kernel: tests.kernels_for_tests:CopiesZeros
    sampler: exhaustive
    params:
      grid: [sms]
      block: [32, 64]
      BLOCK: [256]
      footprint: [4KiB]
    measure: {warmup: 1, repeat: 3}
"""


def test_a_sweep_of_wrong_answers_exits_1_and_says_why(write_space, tmp_path, capsys,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "run", str(write_space(ZEROS)), "--device", "interpret",
                       "--quiet", "--no-report")
    assert rc == 1
    first = min(StudyStore(tmp_path / "studies" / "zeros-interpret").records()[0],
                key=lambda t: t.number)
    why = (f"2 wrong_answer (first: #0 grid=sms block={first.choice['block']} BLOCK=256: "
           "1024 of 1024 elements differ from the input (first at index 0: ")
    assert err.startswith(f"sweeper: no config was measured: {why}") and err.count("\n") == 1
    assert line(out, "best in the sweep, float32 4KiB cold: ").startswith(
        f"best in the sweep, float32 4KiB cold: nothing measured: {why}")
    assert not any(x.startswith("winner") for x in out)


def test_a_report_of_no_measured_config_names_no_heatmaps_folder(write_space, tmp_path, capsys,
                                                                 monkeypatch):
    """A study whose every trial failed draws no heatmap and makes no heatmaps folder: the
    report's line says so and why, naming no folder."""
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "run", str(write_space(ZEROS)), "--device", "interpret", "--quiet",
               "--no-report")[0] == 1
    folder = tmp_path / "studies" / "zeros-interpret"
    rc, out, _ = run(capsys, "report", str(folder))
    assert rc == 0 and not (folder / "heatmaps").exists()
    assert out[-1] == (f"report: {folder / 'report.md'}, report.html and report.json; no "
                       "heatmap drawn: no config was measured (report.md says why)")


def record(number, status, reason=None, **choice):
    return TrialRecord(number=number, status=status, reason=reason,
                       choice={"grid": "sms", "block": "32", "dtype": "float32", **choice})


def test_nothing_measured_counts_each_failure_with_its_first_reason():
    trials = [record(3, TrialStatus.CRASHED, "boom\nTraceback (most recent call last) ..."),
              record(1, TrialStatus.WRONG_ANSWER, "3 of 8 differ", BLOCK="1"),
              record(2, TrialStatus.WRONG_ANSWER, "1 of 8 differ", BLOCK="2"),
              record(4, TrialStatus.INVALID, "constraint 'BLOCK >= block' is false"),
              record(5, TrialStatus.COMPILE_ERROR, "x" * 300)]
    assert nothing_measured(trials, "complete") == (
        "no config was measured: 2 wrong_answer (first: #1 grid=sms block=32 BLOCK=1: 3 of 8 "
        "differ), 1 crashed (first: #3 grid=sms block=32: boom Traceback (most recent call "
        "last) ...), 1 compile_error (first: #5 "
        f"grid=sms block=32: {'x' * 119}…); 1 skipped by constraints (all: "
        "constraint 'BLOCK >= block' is false)")
    assert nothing_measured([], "stopped: Ctrl-C") == (
        "no config was measured: no trial finished (stopped: stopped: Ctrl-C)")
    ok = record(6, TrialStatus.OK)
    assert nothing_measured([*trials, ok], "complete") is None
    # a time budget spent before the first trial: the configs the constraints removed are
    # not why nothing was measured
    assert nothing_measured([trials[3]], "budget: 14 s") == (
        "no config was measured: no trial finished (stopped: budget: 14 s); 1 skipped by "
        "constraints (all: constraint 'BLOCK >= block' is false)")
    assert nothing_measured([trials[3]], COMPLETE) == (
        "no config was measured: 1 skipped by constraints (all: constraint "
        "'BLOCK >= block' is false)")
    assert failure_counts([trials[0]]) == (
        "1 crashed (first: #3 grid=sms block=32: boom Traceback (most recent call last) ...)")


KILLED = ("a SIGKILL that sweeper did not send killed the worker process: not the kernel's "
          "fault, the next run measures it again")


def test_a_trial_to_measure_again_is_counted_and_listed_apart_from_the_failed():
    """A trial whose worker process was killed from outside (``retry``) failed by no
    fault of the kernel's: the ``failed:`` line leaves it out, and every count and list
    of trials by outcome says it "to measure again", never "crashed"."""
    from sweeper.outcome import again_line, counts_text, failed_line

    ok = record(0, TrialStatus.OK, BLOCK="256")
    killed = [TrialRecord(**{**vars(record(n, TrialStatus.CRASHED, KILLED, BLOCK="1024")),
                             "retry": True}) for n in (2, 1)]
    crashed = record(3, TrialStatus.CRASHED, "boom", BLOCK="512")
    assert failed_line([ok, *killed]) is None
    assert failed_line([ok, *killed, crashed]) == (
        "failed: 1 crashed (first: #3 grid=sms block=32 BLOCK=512: boom); every one with "
        "BLOCK=512")
    assert failure_counts(killed) == (
        "2 to measure again (first: #1 grid=sms block=32 BLOCK=1024: a SIGKILL that sweeper "
        "did not send killed the worker process: not the kernel's fault, the next run "
        "measures it again)")
    assert nothing_measured(killed, COMPLETE).startswith(
        "no config was measured: 2 to measure again (first: #1 ")
    assert counts_text(1, 0, 0, 0, 2) == (
        "1 measured, 0 failed, 2 to measure again (their worker processes were killed from "
        "outside)")
    assert counts_text(1, 0, 1, 0, 1) == (
        "1 measured, 1 failed, 1 to measure again (its worker process was killed from "
        "outside)")
    assert again_line([ok, crashed]) is None
    assert again_line([ok, *killed]) == (
        "to measure again: 2 configs, their worker processes were killed from outside "
        "(first: #1 grid=sms block=32 BLOCK=1024); the next run of the study measures them")


def test_the_failed_line_says_what_each_way_of_failing_shares_when_they_share_nothing():
    """A kernel that crashes at BLOCK=1024 and computes wrong at one other config: the
    failures together share nothing, so the line says what the crashed ones share, rather
    than nothing that points at BLOCK=1024."""
    from sweeper.outcome import failed_line

    ok = [record(n, TrialStatus.OK, block=b, BLOCK=B)
          for n, (b, B) in enumerate([("32", "256"), ("64", "512"), ("32", "512")])]
    crashed = [record(n, TrialStatus.CRASHED, "ValueError: no", block=b, BLOCK="1024")
               for n, b in ((3, "32"), (4, "64"))]
    wrong = [record(5, TrialStatus.WRONG_ANSWER, "1 of 8 differ", block="64", BLOCK="256")]
    said = failed_line([*ok, *crashed, *wrong])
    assert said == ("failed: 2 crashed (first: #3 grid=sms block=32 BLOCK=1024: ValueError: "
                    "no), 1 wrong_answer (first: #5 grid=sms block=64 BLOCK=256: 1 of 8 "
                    "differ); every crashed one with BLOCK=1024")
    # one way of failing: what they share, said once, as before
    assert failed_line([*ok, *crashed]).endswith("); every one with BLOCK=1024")


def test_failures_at_several_values_no_measured_config_has_are_named_by_them():
    """A kernel that fails above a size (BLOCK=1024 and 2048, where 256 and 512 ran)
    shares no one label, yet one axis tells the failed configs from the measured: the
    run's line and report.md's "in common" both name its values."""
    from sweeper.outcome import failed_line, set_apart

    ok = [record(n, TrialStatus.OK, block=b, BLOCK=B)
          for n, (b, B) in enumerate([("32", "256"), ("64", "512"), ("64", "256")])]
    bad = [record(n, TrialStatus.COMPILE_ERROR, "CompileTimeAssertionFailure", block=b,
                  BLOCK=B) for n, (b, B) in enumerate(
                      [("32", "2048"), ("64", "1024"), ("32", "1024")], start=3)]
    assert failed_line([*ok, *bad]).endswith("); every one with BLOCK=1024 or 2048")
    # a label some measured config has too tells nothing; with nothing measured, nothing
    assert set_apart([{"block": "32"}, {"block": "64"}], [{"block": "64"}], ["block"]) == []
    assert set_apart([{"BLOCK": "1024"}], [], ["BLOCK"]) == []
    from sweeper.report._tables import failure_counts as report_counts
    from sweeper.report._tables import trials_frame

    counts = report_counts(trials_frame([*ok, *bad], ["BLOCK"]))
    assert counts.iloc[0]["in common"] == "BLOCK=1024 or 2048"


def test_a_reason_of_several_lines_is_said_whole_on_one_line():
    """A reason of several lines (a user's message, a recorded study's) is its lines
    joined (``errors.one_line``) wherever one line shows it: "no config was measured"'s
    counts and its most common ruled-out reason, and the early stop's failures alike,
    which are judged on the whole reason, not its first line."""
    from sweeper.outcome import reason_line
    from sweeper.sweep._budget import _alike

    ruled_out = [record(n, TrialStatus.INVALID, "pruned: it raised ValueError: no rows\n"
                        "  see the table") for n in (1, 2)]
    assert nothing_measured(ruled_out, COMPLETE) == (
        "no config was measured: 2 skipped by constraints (all: pruned: it "
        "raised ValueError: no rows see the table)")
    crashed = record(3, TrialStatus.CRASHED, "boom\nat line 7")
    assert reason_line(crashed) == "boom at line 7"
    assert nothing_measured([crashed], COMPLETE) == (
        "no config was measured: 1 crashed (first: #3 grid=sms block=32: boom at line 7)")
    first, second = (SimpleNamespace(status=TrialStatus.CRASHED, reason=f"boom\nat line {n}")
                     for n in ("x", "y"))
    assert _alike([first], second) is None


# -- compare and ab: a practical threshold ------------------------------------------------------
def _study(root, name, samples, size=1 << 20, **meta):
    store = StudyStore(root / name)
    store.create({"study": name, "kernel": "copy", "environment": {"gpu": "G"}, **meta})
    from sweeper.measure import summarize

    store.append(TrialRecord(number=0, status=TrialStatus.OK, choice={"block": "32"},
                             config=Config(Problem("float32", size), grid=1, block=32),
                             samples_ms=samples, stats=summarize(samples)))
    store.close()


def test_compare_calls_a_difference_within_the_threshold_same(tmp_path, capsys):
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a)
    _study(tmp_path, "b", [x * 1.003 for x in a])                 # 0.3 % slower, CIs apart
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[1].startswith("SAME ")
    assert out[-2] == "SAME 1 of 1 config (FASTER/SLOWER: B against A)"
    assert out[-1] == ("practical threshold 1%: medians closer than that are SAME even where "
                       "their 95% CIs are apart (1 such)")
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path),
                     "--threshold", "0.2%")
    assert rc == 0 and out[1].startswith("SLOWER ") and out[-1].startswith(
        "practical threshold 0.2%: ") and out[-1].endswith("(0 such)")
    rc, _, err = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path),
                     "--threshold", "lots")
    assert rc == 2 and err == ("sweeper: --threshold: 'lots' is not a fraction; allowed: 0% "
                               "to under 100% (e.g. 1% or 0.01)\n")


def test_compare_shows_a_tiny_or_huge_ratio_in_its_column(tmp_path, capsys):
    """A ratio of 1e-7 (a 16 KiB copy on a GPU against one on the interpreter) reads
    1e-07, not 0.0000, and one of 1e7 keeps the interval's bracket in its column."""
    a = [1000.0 + 1e-3 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a)
    _study(tmp_path, "b", [x * 1e-7 for x in a])
    _study(tmp_path, "c", [x * 1e4 for x in a])
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[1].startswith("FASTER ")
    assert "0.0000" not in out[1] and "    1e-07 [  1e-07,   1e-07]" in out[1]
    rc, out2, _ = run(capsys, "compare", "a", "c", "--studies-dir", str(tmp_path))
    assert rc == 0 and out2[1].startswith("SLOWER ") and "1e+04 [  1e+04,   1e+04]" in out2[1]
    assert out[1].index("[") == out2[1].index("[") == 19            # as a 1.0000 row's
    assert out[1].index("]") == out2[1].index("]") == 36


def test_compare_says_where_the_studies_ran_other_kernels(tmp_path, capsys):
    """Two studies of one config on other kernels (or one kernel's source edited): the
    ratio compares the kernels, and a note says so before the verdicts."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a, kernel_source_hash="aaaa")
    _study(tmp_path, "b", [x * 2 for x in a], kernel="scale", kernel_source_hash="bbbb")
    again = [x + 1e-6 for x in a]       # measured again: not the very same samples
    _study(tmp_path, "c", again, kernel_source_hash="cccc")
    _study(tmp_path, "d", again, kernel_source_hash="aaaa")
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0] == ("note: A ran kernel copy (source aaaa), B kernel scale "
                                  "(source bbbb): each ratio compares the kernels as well "
                                  "as the config")
    assert out[1].startswith("verdict ") and out[2].startswith("SLOWER ")
    rc, out, _ = run(capsys, "compare", "a", "c", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0].startswith("note: A ran kernel copy (source aaaa), B kernel "
                                         "copy (source cccc)")
    rc, out, _ = run(capsys, "compare", "a", "d", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0].startswith("verdict ")


def test_compare_of_a_copy_of_one_study_says_the_samples_are_the_same(tmp_path, capsys):
    """A study against its copy (copy-study, ``cp -r``: another folder, so not refused as
    the same study) read as a table of verdicts on nothing: a note says how many configs
    have the very same samples on both sides."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a)
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    rc, out, _ = run(capsys, "compare", "a", "copy", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0] == ("note: 1 of the 1 config compared has the very same samples "
                                  "in A and B (a copy of one study, or two replays of one "
                                  "table?): their verdicts compare those samples with "
                                  "themselves")


def test_compare_of_a_study_or_trial_with_itself_says_both_sides_are_the_same_samples(
        tmp_path, capsys):
    """``compare A A`` (by name or by path), or one trial against itself: one line saying
    both sides are the same samples, exit 2, no table of SAME verdicts."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a)
    for pair, what in ((("a", "a"), "the study"), (("a", str(tmp_path / "a")), "the study"),
                       (("a@0", "a@0"), "trial #0 of")):
        rc, out, err = run(capsys, "compare", *pair, "--studies-dir", str(tmp_path))
        assert rc == 2 and out == [] and err == (
            f"sweeper: A and B are the same samples ({what} {tmp_path / 'a'} on both sides): "
            "compared with themselves they say nothing; compare two studies, or two trials "
            "of one (STUDY@N STUDY@M)\n"), (pair, err)


def test_compare_of_studies_with_no_problem_in_common_says_what_each_measured(tmp_path,
                                                                              capsys):
    """A 1 GiB study against one the interpreter shrank to 16 KiB: the refusal names each
    side's problems, so the reader sees why none is in common."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _study(tmp_path, "a", a, size=1 << 30)
    _study(tmp_path, "b", a, size=1 << 14)
    rc, out, err = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 2 and out == [] and err == (
        f"sweeper: {tmp_path / 'a'} and {tmp_path / 'b'} have no successful config measured "
        "on the same problem in both: A measured float32 1GiB cold (1 config); B measured "
        "float32 16KiB cold (1 config)\n")


def test_compare_says_how_many_configs_only_one_study_measured(tmp_path, capsys):
    """A config that failed in A (or that A never ran) has no verdict; a note counts those
    left out, so "1 of 1 config" is not read as the whole of two studies of 3 configs."""
    from sweeper.measure import summarize

    for name, blocks in (("a", (32,)), ("b", (32, 64, 128)), ("c", (32,))):
        # each study measured anew: not the very same samples as another's
        a = [1.0 + 1e-5 * (i % 7) + 1e-7 * ord(name) for i in range(60)]
        store = StudyStore(tmp_path / name)
        store.create({"study": name, "kernel": "copy", "environment": {"gpu": "G"}})
        for number, block in enumerate(blocks):
            store.append(TrialRecord(
                number=number, status=TrialStatus.OK, choice={"block": str(block)},
                config=Config(Problem("float32", 1 << 20), grid=1, block=block),
                samples_ms=a, stats=summarize(a)))
        store.close()
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0] == ("note: left out: 2 configs measured successfully only in "
                                  "B (a verdict needs the config's samples on the same "
                                  "problem in both)")
    assert out[-2] == "SAME 1 of 1 config (FASTER/SLOWER: B against A)"
    rc, out, _ = run(capsys, "compare", "a", "c", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0].startswith("verdict ")


def _forced_study(root, name, trials, old="0" * 16, new="1" * 16):
    """A study resumed with ``--force`` after its kernel's source changed from ``old`` to
    ``new`` (``old`` None: never forced, its source ``new``): one trial per ``(block,
    source, samples)`` of ``trials``, numbered in order."""
    from sweeper.measure import summarize

    store = StudyStore(root / name)
    store.create({"study": name, "kernel": "copy", "environment": {"gpu": "G"},
                  "kernel_source_hash": new,
                  "forced": [] if old is None else
                  [{"changed": [f"kernel_source: '{old}' -> '{new}'"]}]})
    for number, (block, source, samples) in enumerate(trials):
        store.append(TrialRecord(
            number=number, status=TrialStatus.OK, choice={"block": str(block)},
            config=Config(Problem("float32", 1 << 20), grid=1, block=block),
            samples_ms=samples, stats=summarize(samples), source_hash=source))
    store.close()


def test_compare_of_a_study_forced_past_a_kernel_edit_uses_its_source_now(tmp_path, capsys):
    """A study resumed with --force after its kernel was edited is compared by the trials
    measured on its source now: a config measured only on the earlier source has no
    verdict (it got one from the earlier source's samples, under a note naming the source
    now), and a note counts the earlier trials left out."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    slow = [2 * x for x in a]
    old, new = "0" * 16, "1" * 16
    _forced_study(tmp_path, "a", [(32, old, a), (64, old, a), (32, new, slow)])
    _forced_study(tmp_path, "b", [(32, new, slow), (64, new, slow)], old=None)
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0
    assert out[:2] == [
        "note: left out: 1 config measured successfully only in B (a verdict needs the "
        "config's samples on the same problem in both)",
        "note: left out: 2 trials of A measured on an earlier source of its kernel (a "
        "resume with --force after an edit measures its configs again; the source now's "
        "trials are compared)"]
    assert out[-2] == "SAME 1 of 1 config (FASTER/SLOWER: B against A)"


def test_compare_of_a_study_whose_source_came_back_says_where_unnamed_trials_may_have_run(
        tmp_path, capsys):
    """A study whose kernel went from A to B and back to A holds trials that name no
    source (an older sweeper's): they may have run on A, so compare's note does not say
    they were measured on an earlier source, as the report's record does not."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    src_a, src_b = "0" * 16, "1" * 16
    _forced_study(tmp_path, "a", [(32, None, a), (64, None, a), (32, src_a, a)],
                  old=src_a, new=src_b)
    meta = tmp_path / "a" / "study.json"
    data = json.loads(meta.read_text())
    data["kernel_source_hash"] = src_a
    data["forced"].append({"changed": [f"kernel_source: '{src_b}' -> '{src_a}'"]})
    meta.write_text(json.dumps(data))
    _forced_study(tmp_path, "b", [(32, src_a, a)], old=None, new=src_a)
    rc, out, _ = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 0
    assert out[0] == (
        "note: left out: 2 trials of A measured on an earlier source of its kernel or, "
        "those that name no source, on this one before trials named their source (a resume "
        "with --force after an edit measures its configs again; the source now's trials "
        "are compared)")


def test_compare_of_a_study_with_no_trial_on_its_kernel_s_source_now_says_why(
        tmp_path, capsys):
    """A study resumed with --force after its kernel was edited and not measured since
    has nothing to compare: the refusal says that its trials ran on an earlier source
    (it said A measured no config successfully)."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    _forced_study(tmp_path, "a", [(32, "0" * 16, a), (64, "0" * 16, a)])
    _forced_study(tmp_path, "b", [(32, "1" * 16, a)], old=None)
    rc, _, err = run(capsys, "compare", "a", "b", "--studies-dir", str(tmp_path))
    assert rc == 2 and err == (
        f"sweeper: {tmp_path / 'a'} and {tmp_path / 'b'} have no successful config "
        "measured on the same problem in both: A measured no config successfully on its "
        "kernel's source now (2 trials on an earlier source left out: a resume with "
        "--force after an edit measures them again); B measured float32 1MiB cold "
        "(1 config)\n")


def test_compare_of_two_trials_says_where_they_ran_on_other_sources_of_the_kernel(
        tmp_path, capsys):
    """Two trials of one config in a study resumed with --force after its kernel was
    edited, one per source: the verdict says the ratio compares the sources too (it read
    as the same config run twice); two trials of one source get no such note."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    old, new = "0" * 16, "1" * 16
    _forced_study(tmp_path, "a", [(32, old, a), (64, new, a), (32, new, [2 * x for x in a])])
    rc, out, _ = run(capsys, "compare", "a@0", "a@2", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0] == (
        f"note: A (#0) was measured on the kernel's source {old}, B (#2) on {new}: the "
        "ratio compares the sources as well as the configs")
    rc, out, _ = run(capsys, "compare", "a@1", "a@2", "--studies-dir", str(tmp_path))
    assert rc == 0 and out[0].startswith("verdict ")


def test_report_of_a_study_forced_past_a_kernel_edit_prints_the_failures_of_its_source_now(
        tmp_path, monkeypatch, capsys):
    """``sweeper report`` prints the failed line of the trials the report shows: once a
    study resumed with --force after its kernel was edited measured a trial on the new
    source, a config that failed on the earlier one (the edit may have fixed it) is no
    failure of the study now (it printed ``failed: 1 wrong_answer``)."""
    from tests.api_fixtures import forced_study

    study = forced_study(tmp_path, monkeypatch)
    capsys.readouterr()
    assert main(["report", str(study.path)]) == 0
    out = capsys.readouterr().out
    assert "failed:" not in out and out.startswith("report: ")
    shown = json.loads((study.path / "report.json").read_text())
    assert [f["status"] for f in shown["failures"]] == ["invalid"]     # the ruled out
    assert shown["counts"] == {"ok": 2, "invalid": 2}


def test_report_of_a_study_forced_past_a_kernel_edit_with_nothing_on_it_yet_says_so(
        tmp_path, monkeypatch, capsys):
    """A study resumed with --force after its kernel was edited, no trial measured on the
    new source yet: the best config per problem says that none was measured on the source
    now yet, not that no config was measured (the report shows the earlier trials)."""
    from tests.api_fixtures import forced_study

    study = forced_study(tmp_path, monkeypatch)
    meta = json.loads((study.path / "study.json").read_text())     # edited again
    meta["forced"].append({"changed": [f"kernel_source: '{'1' * 16}' -> '{'2' * 16}'"]})
    (study.path / "study.json").write_text(json.dumps({**meta, "kernel_source_hash": "2" * 16}))
    assert main(["report", str(study.path)]) == 0
    said = ("None: no config was measured on the kernel's source now yet (8 trials on an "
            "earlier source, which no winner is chosen from); `sweeper run` measures the "
            "configs on this one.")
    assert said in (study.path / "report.md").read_text()
    assert said.replace("'", "&#x27;") in (study.path / "report.html").read_text()


def test_report_of_a_study_edited_twice_with_nothing_on_its_source_now_shows_one_source(
        tmp_path, monkeypatch):
    """Sources A, B, then C (each resume with --force), nothing measured on C yet: the
    tables and heatmaps show B's trials (the latest earlier source that measured any) and
    those the constraints ruled out, each config once, and the report names B atop it, in
    its record and in report.json (it showed A's and B's trials together, B's configs
    twice, the maps' cells mixing the two sources' timings, no source named)."""
    from sweeper.report import study_tables
    from tests.api_fixtures import forced_study

    study = forced_study(tmp_path, monkeypatch)
    meta = json.loads((study.path / "study.json").read_text())     # edited again: C
    meta["forced"].append({"changed": [f"kernel_source: '{'1' * 16}' -> '{'2' * 16}'"]})
    (study.path / "study.json").write_text(json.dumps({**meta, "kernel_source_hash": "2" * 16}))
    every = StudyStore(study.path).records()[0]
    on_b = [t.number for t in every if t.source_hash == "1" * 16]
    ruled_out = [t.number for t in every if t.status is TrialStatus.INVALID]
    assert len(on_b) == 2 and len(ruled_out) == 2
    assert main(["report", str(study.path)]) == 0
    tables = study_tables(StudyStore(study.path))
    assert sorted(tables.frame["number"]) == sorted(on_b + ruled_out)
    keys = [t.key() for t in every if t.number in tables.frame["number"].tolist()]
    assert len(keys) == len(set(keys))
    cells = [n for m in tables.heatmaps if m.numbers is not None
             for n in m.numbers.to_numpy().flatten().tolist() if n == n]
    assert set(cells) <= set(on_b + ruled_out)
    shown = json.loads((study.path / "report.json").read_text())
    assert sorted(row["number"] for row in shown["best"]) == on_b
    assert shown["earlier_source_shown"] == {"source": "1" * 16, "trials": 2}
    md = (study.path / "report.md").read_text()
    note = (f"no trial was measured on the kernel's source now ({'2' * 16}) yet: the tables "
            "and heatmaps show the 2 trials of the latest earlier source of the kernel that "
            f"measured any, {'1' * 16}; no winner is chosen from them")
    assert f"> **Note:** {note}.\n" in md
    assert f"Note: {note}.".replace("'", "&#x27;") in (study.path / "report.html").read_text()
    assert "8 trials measured on an earlier source of the kernel than its source now " \
        f"({'2' * 16}): no winner, final or export is chosen from them; none was measured " \
        "on the source now yet: the tables and heatmaps here show the 2 trials of the " \
        f"latest earlier source of the kernel that measured any, {'1' * 16} " \
        "(`trials.jsonl` keeps the others) |" in md


def test_report_of_a_study_whose_source_came_back_says_where_unnamed_trials_may_have_run(
        tmp_path, monkeypatch):
    """Sources A, B, then A again (each resume with --force), A's trials recorded without
    their source (an older sweeper's): they may have run on A, the source now, before
    trials named theirs, so the measurement record and the best config per problem say so
    (they said every one was measured on an earlier source)."""
    from tests.api_fixtures import forced_study

    study = forced_study(tmp_path, monkeypatch)
    journal = study.path / "trials.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    a = next(d["source_hash"] for d in lines if d.get("source_hash") not in (None, "1" * 16))
    journal.write_text("".join(json.dumps({k: v for k, v in d.items() if not (
        k == "source_hash" and v == a)}) + "\n" for d in lines))
    meta = json.loads((study.path / "study.json").read_text())     # back on A
    meta["forced"].append({"changed": [f"kernel_source: '{'1' * 16}' -> '{a}'"]})
    (study.path / "study.json").write_text(json.dumps({**meta, "kernel_source_hash": a}))
    assert main(["report", str(study.path)]) == 0
    md = (study.path / "report.md").read_text()
    assert f"| earlier kernel source | 8 trials measured on an earlier source of the kernel " \
        f"than its source now ({a}) or, the 6 of them that name no source, on this one " \
        "before trials named their source: no winner, final or export" in md
    assert "None: no config was measured on the kernel's source now yet (8 trials on an " \
        "earlier source or, the 6 of them that name no source, on this one before trials " \
        "named their source, which no winner is chosen from)" in md


def test_ab_gives_its_verdict_under_the_threshold(small_space, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "ab", str(small_space), "--vary", "BLOCK=256,1024", "--device",
                     "interpret", "--threshold", "0.5")
    assert rc == 0
    assert line(out, "verdict: B (BLOCK=1024) is ").split("]; ")[1].startswith(
        "practical threshold 50%")
    (samples,) = Path("studies/tiny-interpret-ab").glob("BLOCK-256-vs-1024-*.json")
    data = json.loads(samples.read_text())
    assert data["threshold"] == 0.5
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,1024", "--device", "interpret",
                 "--threshold", "100%"]) == 2
    assert "--threshold: '100%' is not a fraction" in capsys.readouterr().err


# -- calibrate, --version, help ------------------------------------------------------------------
def test_calibrate_without_a_gpu_says_there_is_nothing_to_calibrate(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc, out, err = run(capsys, "calibrate")
    assert rc == 2 and out == []
    assert err == ("sweeper: calibrate needs a CUDA GPU and none was found: there is nothing "
                   "to calibrate on the CPU\n")


def test_calibrate_takes_device_as_the_other_commands_declare_it(capsys):
    """``calibrate --device`` is ``run``'s and ``ab``'s option (one declaration: the same
    default and help); a device with no ceilings is refused in one line, and the default
    still looks for a CUDA GPU."""
    commands = build_parser()._subparsers._group_actions[0].choices

    def device(name):
        return next(a for a in commands[name]._actions if "--device" in a.option_strings)

    for other in ("run", "ab", "plan"):
        assert (device("calibrate").default, device("calibrate").help) == \
            (device(other).default, device(other).help)
    for spec, name in (("interpret", "interpret"), ("replay:t.csv", "replay")):
        rc, out, err = run(capsys, "calibrate", "--device", spec)
        assert rc == 2 and out == [] and err == (
            f"sweeper: --device {spec}: calibrate measures a GPU's ceilings, and the {name} "
            "device has none; allowed: a device that measures a GPU (--device cuda, the "
            "default)\n")
    rc, _, err = run(capsys, "calibrate", "--device", "nope")
    assert rc == 2 and err.startswith("sweeper: unknown device 'nope'; known: cuda, ")
    if not torch.cuda.is_available():
        rc, _, err = run(capsys, "calibrate", "--device", "cuda")
        assert rc == 2 and "calibrate needs a CUDA GPU and none was found" in err


def test_tuned_without_a_gpu_finds_the_interpreters_entries(write_space, tmp_path, capsys,
                                                             monkeypatch):
    """Without a GPU a Triton kernel runs on the interpreter only: ``sweeper tuned`` looks
    its entries up there, as :func:`sweeper.tuned` does, with no ``--gpu``."""
    from tests.conftest import SMALL_SPACE

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.chdir(tmp_path)
    space = write_space(SMALL_SPACE)
    assert run(capsys, "run", str(space), "--device", "interpret", "--quiet",
               "--no-report")[0] == 0
    assert run(capsys, "export", "studies/tiny-interpret")[0] == 0
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    rc, out, err = run(capsys, "tuned", "copy", "--dtype", "fp32", "--footprint", "4KiB")
    assert rc == 0, err
    assert any("Triton interpreter (CPU)" in line for line in out), out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"sweeper {__version__}\n"


def test_every_argument_of_every_command_has_help(capsys):
    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {action.dest}")

    walk(build_parser(), "sweeper")
    assert missing == []
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = capsys.readouterr().out
    assert re.search(r"^ +b +study, or STUDY@TRIAL, judged against A$", text, re.M)
    assert re.search(r"^ +--threshold THRESHOLD$", text, re.M) and "(default: 1%, as" in text


# -- priors: named, and off with --no-priors ------------------------------------------------------
AUTO = """
    study: auto
    kernel: copy
    sampler: auto
    params:
      grid: [sms, "cdiv(n, BLOCK)"]
      block: [32, 128]
      BLOCK: [256, 1024]
      footprint: [4KiB]
    measure: {warmup: 1, repeat: 3}
    budget: {trials: 2}
"""


def test_auto_names_the_studies_it_starts_from_and_no_priors_drops_them(
        write_space, tmp_path, capsys, monkeypatch):
    space = write_space(AUTO)
    monkeypatch.chdir(tmp_path)
    common = ("run", str(space), "--device", "interpret", "--no-report")
    assert run(capsys, *common, "--study", "first")[0] == 0
    first = StudyStore(tmp_path / "studies" / "first").records()[0]
    best = max((t for t in first if t.ok), key=lambda t: t.score)

    rc, out, _ = run(capsys, *common, "--study", "second")
    assert rc == 0
    gpu = InterpretDevice().facts().name
    assert line(out, "auto: ") == (
        f"auto: starting from 2 configs that won other studies of copy on {gpu} in studies: "
        "first (2 configs, measured on this same problem); --no-priors to start without them")
    second = StudyStore(tmp_path / "studies" / "second")
    assert second.records()[0][0].choice == best.choice       # the earlier winner, first
    assert list(second.meta()["last_run"]["priors"]) == ["first"]

    rc, out, _ = run(capsys, *common, "--study", "third", "--no-priors")
    assert rc == 0
    assert line(out, "auto: ") == (
        "auto: starting without the winners of other studies (--no-priors)")
    assert StudyStore(tmp_path / "studies" / "third").meta()["last_run"]["priors"] == {}


def test_auto_starting_from_one_config_says_one_config(write_space, tmp_path, capsys,
                                                      monkeypatch):
    """The line counted its configs as 'from 1 configs'."""
    space = write_space(AUTO)
    monkeypatch.chdir(tmp_path)
    common = ("run", str(space), "--device", "interpret", "--no-report")
    assert run(capsys, *common, "--study", "first", "--trials", "1")[0] == 0
    rc, out, _ = run(capsys, *common, "--study", "second", "--trials", "1")
    assert rc == 0
    assert line(out, "auto: ").startswith("auto: starting from 1 config that won other "
                                          "studies of copy on ")


def test_priors_from_another_problem_are_not_called_the_same_problem(tmp_path, capsys):
    assert main(["run", str(ROOT / "benchmarks/spaces/copy-256m.yaml"), "--device",
                 f"replay:{REPLAY / 'h200-copy-256m.csv'}", "--studies-dir", str(tmp_path),
                 "--quiet", "--no-report"]) == 0
    sources = prior_sources(tmp_path, load_space(ROOT / "spaces/copy.yaml"),
                            "replay: NVIDIA H200")
    assert [(s.study, len(s.configs), s.same_problem) for s in sources] == [
        ("copy-256m-replay", 3, False)]
    same = prior_sources(tmp_path, load_space(ROOT / "benchmarks/spaces/copy-256m.yaml"),
                         "replay: NVIDIA H200")
    assert [(len(s.configs), s.same_problem) for s in same] == [(3, True)]


def test_priors_of_a_study_forced_past_a_kernel_edit_are_its_source_now_s_best(
        tmp_path, monkeypatch):
    """The winners ``auto`` starts from, of another study resumed with --force after its
    kernel was edited, are the best of its trials on the source now: the earlier
    source's best (its fastest config, which the new source has not measured) is no
    winner of it (it was offered first)."""
    from tests.api_fixtures import SPACE, forced_study

    study = forced_study(tmp_path, monkeypatch)
    (tmp_path / "s.yaml").write_text(SPACE)
    now = [t.choice for t in StudyStore(study.path).records()[0] if t.number >= 8]
    configs = [c for s in prior_sources(tmp_path, load_space(tmp_path / "s.yaml"),
                                        "replay: NVIDIA H200") for c in s.configs]
    assert [{k: c[k] for k in ("grid", "block", "BLOCK")} for c in configs] == [
        {k: c[k] for k in ("grid", "block", "BLOCK")} for c in now]


def test_a_problem_the_kernel_cannot_allocate_is_recorded_and_the_sweep_goes_on(
        tmp_path, monkeypatch, capsys):
    """A kernel's ``allocate`` refusing a problem (a matmul footprint that is no square
    matrix) rules the config out with its reason; any other exception there is recorded
    as a crash; neither is a traceback, and the command says why nothing was measured."""
    from sweeper.kernels.copy import CopyKernel

    space = tmp_path / "s.yaml"
    space.write_text("study: s\nkernel: copy\nsampler: exhaustive\nparams:\n"
                     "  grid: [sms]\n  block: [32, 64]\n  BLOCK: [256]\n  dtype: [float32]\n"
                     "  footprint: [4KiB]\nmeasure: {warmup: 1, repeat: 3}\n")
    for error, status in ((ValueError("no such shape"), "invalid"),
                          (TypeError("bug in allocate"), "crashed")):
        def refuse(self, problem, device, error=error):
            raise error
        monkeypatch.setattr(CopyKernel, "allocate", refuse)
        rc = main(["run", str(space), "--device", "interpret", "--studies-dir",
                   str(tmp_path / status), "--quiet", "--no-report"])
        err = capsys.readouterr().err
        assert rc == 1 and "Traceback" not in err
        trials = StudyStore(tmp_path / status / "s-interpret").records()[0]
        assert [t.status.value for t in trials] == [status, status]
        assert all(t.reason.startswith("allocating the inputs: ") for t in trials)
        if status == "invalid":
            assert err.endswith("2 skipped by the kernel (all: allocating the "
                                "inputs: no such shape)\n")
        else:
            assert "2 crashed (first: #0 grid=sms block=32 BLOCK=256: allocating the inputs: "\
                   "TypeError: bug in allocate)" in err


def test_debug_prints_the_traceback_of_a_trial_whose_inputs_failed_to_allocate(
        tmp_path, monkeypatch, capsys):
    """``--debug`` shows the traceback of a trial that crashed allocating its inputs (the
    kernel's ``allocate`` raised) as it shows a failed launch's: the trial named, then
    the kernel's own error; a run without ``--debug`` shows none."""
    from sweeper.errors import DEBUG_ENV
    from sweeper.kernels.copy import CopyKernel

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    space = tmp_path / "s.yaml"
    space.write_text("study: s\nkernel: copy\nsampler: exhaustive\nparams:\n"
                     "  grid: [sms]\n  block: [32, 64]\n  BLOCK: [256]\n  dtype: [float32]\n"
                     "  footprint: [4KiB]\nmeasure: {warmup: 1, repeat: 3}\n")

    def allocate(self, problem, device):
        raise TypeError("bug in allocate")
    monkeypatch.setattr(CopyKernel, "allocate", allocate)
    rc = main(["--debug", "run", str(space), "--device", "interpret", "--studies-dir",
               str(tmp_path), "--quiet", "--no-report"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("Traceback (most recent call last):\n") == 2, err
    assert "sweeper --debug: trial #" in err and " block=64 BLOCK=256 failed " \
        "(crashed):\nTraceback (most recent call last):\n" in err, err
    assert 'raise TypeError("bug in allocate")\nTypeError: bug in allocate\n' in err, err


def test_a_config_the_kernel_refuses_in_its_own_words_is_skipped_by_the_kernel(
        tmp_path, monkeypatch, capsys):
    """A config the kernel's own ``refusal`` turns down (whatever its words: a BLOCK it
    does not take, a variant the device lacks) is counted as skipped by the kernel, in the
    ``done:`` line and the report, apart from the configs the space's constraints skip:
    it passed them, and counting it as theirs blames the space."""
    from sweeper.kernels.copy import CopyKernel

    def refusal(self, config, device):
        return ("BLOCK=512 is not supported by this kernel; allowed: BLOCK <= 256"
                if config.meta["BLOCK"] == 512 else None)
    monkeypatch.setattr(CopyKernel, "refusal", refusal)
    space = tmp_path / "s.yaml"
    space.write_text("study: s\nkernel: copy\nsampler: exhaustive\nparams:\n"
                     "  grid: [sms]\n  block: [32, 64]\n  BLOCK: [256, 512]\n"
                     "  dtype: [float32]\n  footprint: [4KiB]\nconstraints: [\"block <= 32\"]\n"
                     "measure: {warmup: 1, repeat: 3}\n")
    rc, out, _ = run(capsys, "run", str(space), "--device", "interpret", "--studies-dir",
                     str(tmp_path / "studies"))
    assert rc == 0
    assert line(out, "done: ").startswith(
        "done: 1 measured, 0 failed, 3 skipped: 2 by constraints, 1 by the kernel, "), out
    report = (tmp_path / "studies" / "s-interpret" / "report.md").read_text()
    assert "4 trials: 1 measured, 0 failed, 3 skipped: 2 by constraints, 1 by the " \
        "kernel" in report


def test_a_run_names_its_failed_configs_and_what_they_share(write_space, tmp_path, capsys,
                                                            monkeypatch):
    """The terminal names the failures, not only their count: by status, the first config
    and its reason, and the labels every failed config has and the others lack."""
    from tests.conftest import SMALL_SPACE

    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RaisesOnBigBlock"))
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                     "--no-report")
    assert rc == EXIT_CONFIGS_FAILED == 3         # measured, but the kernel failed somewhere
    failed = line(out, "failed: ")
    assert failed.startswith(
        "failed: 4 crashed (first: #2 grid=cdiv(n, BLOCK) block=32 BLOCK=1024: RuntimeError: "
        "BLOCK=1024 is too big for this test (at kernels_for_tests.py:31: raise ")
    assert failed.endswith("…); every one with BLOCK=1024")      # the reason cut short
    rc, out, _ = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                     "--no-report")       # resumed: nothing failed this run, but the study
    assert rc == EXIT_CONFIGS_FAILED      # holds its failures, said as earlier runs'
    assert not [x for x in out if x.startswith("failed: ")]
    assert line(out, "failed in earlier runs: ") == failed.replace(
        "failed:", "failed in earlier runs:", 1)


def test_debug_prints_a_failed_trials_traceback_and_the_report_keeps_its_message(
        write_space, tmp_path, capsys, monkeypatch):
    """``--debug`` shows each failed trial's traceback as it fails (a run without it shows
    none); report.md groups the failures and shows their trials, what they share and
    the complete message."""
    from sweeper.errors import DEBUG_ENV
    from tests.conftest import SMALL_SPACE

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RaisesOnBigBlock"))
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "--debug", "run", str(space), "--device", "interpret",
                     "--quiet")
    assert rc == EXIT_CONFIGS_FAILED
    assert err.count("Traceback (most recent call last):") == 4, err
    assert "RuntimeError: BLOCK=1024 is too big for this test\n" in err
    headed = re.findall(r"sweeper --debug: trial #(\d+) of grid=\d+ block=\d+ BLOCK=1024 "
                        r"failed \(crashed\):\nTraceback \(most recent call last\):\n", err)
    assert len(headed) == 4, err
    report = (tmp_path / "studies" / "tiny-interpret" / "report.md").read_text()
    row = next(x for x in report.splitlines() if x.startswith("| crashed | RuntimeError"))
    assert sorted(re.findall(r"#(\d+)", row)) == sorted(headed), row  # the report's numbers
    assert "| crashed | RuntimeError: BLOCK=1024 is too big for this test (at " \
           "kernels_for_tests.py:31: raise RuntimeError(f\"BLOCK={config.meta\\['BLOCK'\\]} " \
           "is too big for this test\")) | 4 | #" in report             # [ ] escaped
    assert "| BLOCK=1024 |" in report
    assert DEBUG_ENV not in os.environ                # set while the command ran, not after
    rc, _, err = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                     "--study", "again")
    assert rc == EXIT_CONFIGS_FAILED and "Traceback" not in err


def test_a_run_whose_first_configs_all_fail_alike_stops_and_says_why(write_space, tmp_path,
                                                                    capsys, monkeypatch):
    """A kernel wrong everywhere (or with a typo) fails every config the same way: the run
    stops after the first five instead of failing the whole space, says so, and exits 1
    (nothing measured)."""
    from tests.conftest import SMALL_SPACE

    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:CopiesZeros").replace(
        "BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024, 2048]"))
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                       "--no-report")
    assert rc == 1
    assert line(out, "done: ").startswith("done: 0 measured, 5 failed")
    assert "; stopped: the first 5 configs all failed alike (wrong_answer: " in \
        line(out, "done: ")
    assert ("elements differ from the input (first at index 0: 0.0 != "
            in line(out, "done: "))                      # the reason, whole where it is short
    assert line(out, "failed: ").startswith("failed: 5 wrong_answer (first: #")
    assert "no config produced a number" in err or "no config was measured" in err


def test_failures_alike_are_judged_on_their_whole_line_not_the_terminal_cut():
    """Two failures that differ only in their numbers are alike, however wide the numbers
    are: a cut made for the terminal before masking would move with their widths and make
    the early stop depend on the timings (it did: a run stopped or not by chance)."""
    from sweeper.outcome import REASON_CHARS
    from sweeper.sweep._budget import _alike
    from sweeper.trial import TrialStatus

    tail = "x" * REASON_CHARS
    first, second = (SimpleNamespace(status=TrialStatus.IMPOSSIBLE, reason=(
        f"faster than physics allows ({rate} GB/s; {tail}")) for rate in ("0.1", "0.003912"))
    assert _alike(_alike([], first) or [], second) == [first, second]
    other = SimpleNamespace(status=TrialStatus.IMPOSSIBLE, reason=f"slower ({tail}")
    assert _alike([first], other) is None


def test_a_trial_killed_from_outside_neither_joins_nor_ends_the_failures_alike():
    """A trial whose worker a SIGKILL sweeper did not send ended (``retry``) says nothing
    of the kernel: the failures alike before and after it are counted as if it were not
    there, never ended by it nor joined."""
    from sweeper.space import Budget
    from sweeper.store import TrialRecord
    from sweeper.sweep._budget import Budgets, StopFlag
    from sweeper.trial import TrialStatus

    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=None, ceilings=None,
                      valid=10, measured=0, t0=0.0)
    trials = [TrialRecord(number=n, choice={"BLOCK": str(n)}, status=TrialStatus.CRASHED,
                          reason="boom" if n != 1 else "killed", retry=n == 1)
              for n in range(3)]
    for t in trials:
        budgets.counted(t, None)
    assert budgets.alike == [trials[0], trials[2]]


def test_failures_that_share_a_value_do_not_stop_the_run(write_space, tmp_path, capsys,
                                                         monkeypatch):
    """Five failures alike that all have BLOCK=1024 may be that value's fault, not the
    kernel's: the run goes on and measures the other configs."""
    from tests.conftest import SMALL_SPACE

    space = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:RaisesOnBigBlock").replace(
        "block: [32, 128]", "block: [32, 64, 128]").replace(
        "grid: [sms, \"cdiv(n, BLOCK)\"]", "grid: [sms, 2, 3, \"cdiv(n, BLOCK)\"]"))
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "run", str(space), "--device", "interpret", "--quiet",
                     "--no-report")
    assert rc == EXIT_CONFIGS_FAILED
    done = line(out, "done: ")
    assert "stopped: complete" in done and ", 12 failed," in done, done
    assert line(out, "failed: ").endswith("every one with BLOCK=1024")


def test_a_reason_is_cut_for_the_terminal_with_an_ellipsis():
    """The stop line and the failed line show a reason on one line (its lines joined), cut
    at REASON_CHARS with an ellipsis, after a whole word where one ends near the limit,
    never mid-word without one (report.md keeps it whole)."""
    from sweeper.outcome import REASON_CHARS, reason_line

    def failed(reason):
        return SimpleNamespace(reason=reason)

    long = "InterpreterError: AttributeError(\"no attribute 'lod'\") (at k.py:20: " + "x" * 200
    cut = reason_line(failed(long + "\nsecond line"))
    assert len(cut) == REASON_CHARS and cut.endswith("…") and long.startswith(cut[:-1])
    words = "CompilationError: copy.cu(2): catastrophic error: #error directive: VEC 2 is " \
        "refused here | #error VEC 2 is refused here | compilation terminated."
    assert reason_line(failed(words)) == words[:words.rindex(" ", 0, REASON_CHARS)] + " …"
    assert len(reason_line(failed(words))) <= REASON_CHARS   # a word not cut in two
    assert reason_line(failed("short\nmore")) == "short more"
    assert reason_line(failed(None)) == "no reason recorded"

