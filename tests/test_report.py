import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sweeper.ceilings import Ceilings
from sweeper.devices import open_device
from sweeper.export import export_study
from sweeper.finals import Finalist, FinalRecord
from sweeper.kernels import load_kernel
from sweeper.measure import summarize
from sweeper.report import (
    best_configs,
    draw_heatmap,
    failure_counts,
    heatmaps,
    study_tables,
    trials_frame,
    write_report,
)
from sweeper.report._tables import reason_kind
from sweeper.space import Config, Problem, load_space
from sweeper.store import BaselineRecord, ProblemKey, StudyStore, TrialRecord
from sweeper.sweep import Sweep, open_study
from sweeper.trial import TrialStatus

ROOT = Path(__file__).resolve().parent.parent


def record(number, grid, block, BLOCK, gbps, status=TrialStatus.OK, reason=None, grid_value=None):
    ok = status is TrialStatus.OK
    median = 2.0 / gbps if ok else None
    return TrialRecord(
        number=number, status=status, reason=reason,
        choice={"grid": grid, "block": str(block), "BLOCK": str(BLOCK), "dtype": "float32",
                "footprint": "1GiB"},
        config=None if status is TrialStatus.INVALID else Config(
            Problem("float32", 1 << 30), grid=grid_value or 132, block=block,
            meta={"BLOCK": BLOCK}),
        samples_ms=[median] * 3 if ok else [],
        stats=summarize([median] * 3) if ok else None,
        gbps=gbps if ok else 0.0, cold_s=0.1)


TRIALS = [
    record(0, "sms", 32, 256, 100.0),
    record(1, "sms", 64, 256, 300.0),
    record(2, "2*sms", 32, 256, 200.0, grid_value=264),
    record(3, "2*sms", 64, 256, 0.0, TrialStatus.WRONG_ANSWER,
           "7 of 10 elements differ from the input (first at index 3: nan != 0.5)", 264),
    record(4, "sms", 32, 1024, 400.0),
    record(5, "sms", 64, 1024, 0.0, TrialStatus.INVALID,
           "constraint 'BLOCK >= 32*block' is false (BLOCK=1024, block=64)"),
    record(6, "2*sms", 32, 1024, 50.0, grid_value=264),
    record(7, "2*sms", 64, 1024, 0.0, TrialStatus.INVALID,
           "constraint 'BLOCK >= 32*block' is false (BLOCK=1024, block=64)"),
]
#: The axes of the study TRIALS come from, as study.json records them.
COPY_AXES = {"grid": ["sms", "2*sms"], "block": ["32", "64"], "BLOCK": ["256", "1024"],
             "dtype": ["float32"], "footprint": ["1GiB"]}
BASE = [BaselineRecord("torch copy_", "float32", 1 << 30, [0.5], {"median": 0.5, "min": 0.5,
                                                                  "p95": 0.5}, 400.0)]


def test_heatmap_tables_hold_the_numbers():
    df = trials_frame(TRIALS, ["BLOCK"])
    maps = heatmaps(df, ["BLOCK"], ["sms", "2*sms"], [32, 64], kernel="copy", gpu="G")
    assert [m.name for m in maps] == ["float32_1GiB_cold_BLOCK-256",
                                      "float32_1GiB_cold_BLOCK-1024", "float32_1GiB_cold_best"]
    m256, m1024, best = maps
    assert m256.values.loc[32, "sms"] == 100.0 and m256.values.loc[64, "sms"] == 300.0
    assert np.isnan(m256.values.loc[64, "2*sms"]) and m256.notes.loc[64, "2*sms"] == "fail"
    assert m256.best == (64, "sms")
    assert m256.column_labels == ["sms\n=132", "2*sms\n=264"]
    assert m1024.notes.loc[64, "sms"] == "skip" and m1024.best == (32, "sms")
    assert "BLOCK=1024" in m1024.title and "copy · float32 · 1GiB · cold" in m1024.title
    # the overview keeps the best over BLOCK per cell
    assert best.values.loc[32, "sms"] == 400.0 and best.values.loc[32, "2*sms"] == 200.0
    assert best.best == (32, "sms")


def test_best_configs_rank_and_compare_with_baseline():
    df = trials_frame(TRIALS, ["BLOCK"])
    top = best_configs(df, BASE, ["BLOCK"], top=3)
    assert list(top["rank"]) == [1, 2, 3]
    assert list(top["gbps"]) == [400.0, 300.0, 200.0]
    assert list(top["pct_of_baseline"]) == pytest.approx([100.0, 75.0, 50.0])


def test_failure_counts_group_reasons_without_values():
    counts = failure_counts(trials_frame(TRIALS, ["BLOCK"]))
    rows = {(r.status, r.reason): r.count for r in counts.itertuples()}
    assert rows == {("invalid", "constraint 'BLOCK >= 32*block' is false"): 2,
                    ("wrong_answer", "elements differ from the input"): 1}


def test_a_reason_keeps_its_message_and_kernel_line_when_its_numbers_are_stripped():
    typo = ("InterpreterError: AttributeError(\"module 'triton.language' has no attribute "
            "'lod'\") (at k.py:10: tl.store(x + offsets, tl.lod(x + offsets, mask=offsets < n)"
            " * a, mask=offsets < n))")
    assert reason_kind(typo) == typo                 # nothing but the kernel's own numbers
    assert reason_kind("constraint 'BLOCK >= block' is false (BLOCK=256, block=512)") == \
        "constraint 'BLOCK >= block' is false"


def test_failures_are_grouped_with_their_trials_what_they_share_and_the_full_message():
    """Grouping strips the numbers; the report still shows which trials, what their
    configs share that the measured ones lack, and one complete message."""
    wrong = [record(n, g, b, 512, 0.0, TrialStatus.WRONG_ANSWER,
                    f"output y: {n + 3} of 4096 elements differ (first at index {n}: "
                    "1.5 != 0.75)") for n, (g, b) in enumerate(
                        [("sms", 32), ("sms", 64), ("2*sms", 32)], start=10)]
    counts = failure_counts(trials_frame([*TRIALS, *wrong], ["BLOCK"]))
    top = counts.iloc[0].to_dict()
    assert top == {
        "status": "wrong_answer", "reason": "output y: elements differ", "count": 3,
        "trials": "#10, #11, #12", "in common": "BLOCK=512",
        "message": "output y: 13 of 4096 elements differ (first at index 10: 1.5 != 0.75) "
                   "(and 2 other messages alike)"}
    skipped = counts[counts["status"] == "invalid"].iloc[0]
    assert (skipped["trials"], skipped["in common"]) == ("#5, #7", "block=64 BLOCK=1024")
    assert skipped["message"] == "constraint 'BLOCK >= 32*block' is false (BLOCK=1024, block=64)"
    many = [record(n, "sms", 32, 512, 0.0, TrialStatus.CRASHED, "RuntimeError: boom")
            for n in range(20, 30)]
    crashed = failure_counts(trials_frame(many, ["BLOCK"])).iloc[0]
    assert crashed["trials"] == "#20, #21, #22, #23, #24, #25, #26, #27 … (10 in all)"
    assert crashed["message"] == ""                    # the reason is the whole message


def test_write_report_writes_images_markdown_and_json(tmp_path):
    store = StudyStore(tmp_path / "st")
    store.create({"study": "st", "kernel": "copy", "command": "sweeper run x.yaml",
                  "space_path": "x.yaml", "space_sha256": "ab" * 32,
                  "axes": COPY_AXES,
                  "meta_axes": ["BLOCK"], "measure": {"warmup": 1, "repeat": 3},
                  "environment": {"gpu": "Fake GPU", "sms": 132},
                  "fingerprint": {"device": "cuda"}})
    for t in [*TRIALS, *BASE]:
        store.append(t)
    store.close()
    files = write_report(store)
    assert sorted(p.name for p in files.images) == sorted(
        f"float32_1GiB_cold_{n}.png" for n in ("BLOCK-256", "BLOCK-1024", "best"))
    assert files.drawn == files.images
    assert list(files.seconds) == ["imports", "tables", "pictures", "files"]
    assert all(v >= 0 for v in files.seconds.values())
    assert all(p.stat().st_size > 1000 for p in files.images)
    assert files.images[0].read_bytes()[:4] == b"\x89PNG"
    md = files.markdown.read_text()
    assert "| 1 | sweep best | 4 | sms | 132 | 32 | 1024 |" in md
    assert "## Measurement record" in md and "| stopping rule |" in md
    assert "sweeper run x.yaml --device cuda --study st" in md
    assert "| invalid | constraint 'BLOCK >= 32*block' is false | 2 |" in md
    data = json.loads(files.json.read_text())
    assert data["best"][0]["gbps"] == 400.0 and data["best"][0]["pct_of_baseline"] == 100.0
    assert data["counts"] == {"ok": 5, "invalid": 2, "wrong_answer": 1}
    assert data["baselines"][0]["gbps"] == 400.0
    assert {f["status"] for f in data["failures"]} == {"invalid", "wrong_answer"}




def test_a_trial_to_measure_again_is_counted_and_listed_apart_from_the_failed(tmp_path,
                                                                              capsys):
    """A trial whose worker process was killed from outside (``retry``) is no failure of
    the kernel's, and its config is the next run's to measure: report.md's counts and
    failures, report.json's, the page's failures and trial table and the heatmap's cell
    say so ("to measure again", ``retry``, ``again``), never ``crashed``."""
    import dataclasses

    from sweeper.report import html_fragment
    from sweeper.report._html import trial_rows
    from sweeper.report._tables import nothing_measured

    killed = dataclasses.replace(
        record(2, "2*sms", 32, 256, 0.0, TrialStatus.CRASHED,
               "a SIGKILL that sweeper did not send killed the worker process: not the "
               "kernel's fault, the next run measures it again", grid_value=264), retry=True)
    store = copy_study(tmp_path, records=(*TRIALS[:2], killed, *TRIALS[3:], *BASE))
    files = write_report(store, draw=False)
    md = files.markdown.read_text()
    assert ("8 trials: 4 measured, 1 failed, 1 to measure again (its worker process was "
            "killed from outside), 2 skipped by constraints") in md
    assert "| retry | a SIGKILL that sweeper did not send killed the worker process" in md
    assert "crashed" not in md
    data = json.loads(files.json.read_text())
    assert data["counts"] == {"ok": 4, "invalid": 2, "wrong_answer": 1, "retry": 1}
    assert {f["status"] for f in data["failures"]} == {"invalid", "wrong_answer", "retry"}
    tables = study_tables(store)
    assert "<summary>1 retry: a SIGKILL" in html_fragment(tables)
    rows = trial_rows(tables)
    status = rows["columns"].index("status")
    shown = {r[0]: rows["levels"].get("status", [])[r[status]] if "status" in rows["levels"]
             else r[status] for r in rows["rows"]}
    assert shown[2] == "retry"
    m256 = tables.heatmaps[0]
    assert m256.notes.loc[32, "2*sms"] == "again" and m256.notes.loc[64, "2*sms"] == "fail"
    from sweeper.cli import main

    assert main(["report", str(store.root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "failed: 1 wrong_answer (first: #3 grid=2*sms block=64 BLOCK=256: 7 of 10 elements "
        "differ from the input (first at index 3: nan != 0.5)); every one with grid=2*sms "
        "block=64 BLOCK=256",
        "to measure again: 1 config, its worker process was killed from outside (first: #2 "
        "grid=2*sms block=32 BLOCK=256); the next run of the study measures it"]
    # a replay table holds no row of it: replayed as "crashed", it would be the kernel's
    assert main(["export", str(store.root), "--format", "csv", "-o",
                 str(tmp_path / "t.csv")]) == 0
    assert capsys.readouterr().out.strip().endswith(
        "; left out 1 trial to measure again (its worker process was killed from outside: "
        "a replay of the table says it does not hold its config)")
    assert "crashed" not in (tmp_path / "t.csv").read_text()
    assert nothing_measured(trials_frame([killed], ["BLOCK"])).startswith(
        "no config was measured: 1 trial(s), 1 to measure again (its worker process was "
        "killed from outside); the commonest reason: retry, ")


def copy_study(tmp_path, finals=(), records=(*TRIALS, *BASE), axes=COPY_AXES):
    store = StudyStore(tmp_path / "st")
    store.create({"study": "st", "kernel": "copy", "command": "sweeper run x.yaml",
                  "space_path": "x.yaml", "axes": axes,
                  "meta_axes": ["BLOCK"], "environment": {"gpu": "Fake GPU", "sms": 132},
                  "fingerprint": {"device": "cuda"}})
    for r in [*records, *finals]:
        store.append(r)
    store.close()
    return store


def final(winner, numbers, medians):
    rows = [Finalist(number=n, samples_ms=[m] * 50, stats=summarize([m] * 50), gbps=2.0 / m)
            for n, m in zip(numbers, medians, strict=True)]
    return FinalRecord(problem=ProblemKey("float32", 1 << 30), finalists=rows,
                       tied=list(numbers), winner=winner)


def test_reports_mark_the_interleaved_winner_not_the_sweeps_fastest(tmp_path):
    # the sweep's fastest is #4 (400 GB/s); the interleaved final re-measured #4 and #1
    # and named #1: every "best" the report shows is #1, as `sweeper export` writes it
    store = copy_study(tmp_path, [final(1, [4, 1], [0.0050, 0.0049])])
    tables = study_tables(store)
    m256, m1024, overview = tables.heatmaps
    assert overview.best == (64, "sms") and m256.best == (64, "sms")     # #1's cell
    assert overview.best_note == m256.best_note == "winner of the interleaved final"
    assert m1024.best == (32, "sms") and m1024.best_note == "best of this map"
    best = tables.best
    assert list(best.loc[best["chosen"] != "", "number"]) == [1]
    assert best.loc[best["number"] == 1, "chosen"].item() == "winner"
    picks = tables.picks
    assert list(picks["number"]) == [1] and picks["chosen_by"][0] == "interleaved final"
    assert picks["gbps"][0] == pytest.approx(2.0 / 0.0049)       # at the final's median
    _, entries = export_study(store, tmp_path / "tuning.json")
    assert [e["trial"] for e in entries] == [1]
    assert entries[0]["chosen_by"] == picks["chosen_by"][0]
    files = write_report(store, draw=False)
    md = files.markdown.read_text()
    assert "| float32 1GiB cold | 1 | sms | 132 | 64 | 256 | 0.0049 | interleaved final: 5 " \
           "rounds x 10 samples | 0.006667 | 408.2 |" in md
    assert "#1 at 408.2 GB/s (1 tied within noise)" in md
    # the final's grid column holds the space file's grid (sms), in report.html as in
    # report.md, not the programs it launched
    finals_html = files.html.read_text().split('id="sweeper-report-finals"')[1]
    assert "<th>#</th><th>grid</th><th>block</th>" in finals_html.split("</table>")[0]
    assert json.loads(files.json.read_text())["headline"]["per_problem"][0]["number"] == 1


def test_without_finals_reports_mark_the_sweeps_best(tmp_path):
    tables = study_tables(copy_study(tmp_path))
    assert tables.heatmaps[-1].best == (32, "sms")                     # #4's cell
    assert tables.heatmaps[-1].best_note == "best in the sweep"
    assert list(tables.picks["number"]) == [4]
    assert tables.picks["chosen_by"][0] == "sweep median"


def test_a_copy_report_leads_with_gb_per_s(tmp_path):
    files = write_report(copy_study(tmp_path), draw=False)
    md = files.markdown.read_text()
    assert "rates: effective GB/s" in md and "| GB/s | % of torch copy_ |" in md
    assert "TFLOP/s" not in md
    headline = json.loads(files.json.read_text())["headline"]
    assert headline["metric"] == "gbps" and headline["unit"] == "GB/s"


def replayed(table, space, root):
    """A study of ``space`` replayed from ``table`` (both under the repository) in ``root``."""
    device = open_device(f"replay:{ROOT / table}")
    space = load_space(ROOT / space)
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test")
    Sweep(space, kernel, device, store).run()
    return store


def test_a_matmul_report_leads_with_tflops_and_the_matmul_ceiling(tmp_path):
    store = replayed("tests/data/replay/h200-matmul.csv", "spaces/matmul.yaml", tmp_path / "mm")
    ceilings = Ceilings(gpu="NVIDIA H200", uuid="", driver="", matmul={"bfloat16": 800.0},
                        copy={1 << 30: {"cold": 4000.0, "warm": 4000.0}})
    store.update_meta(ceilings=ceilings.to_json())
    tables = study_tables(store)
    assert tables.metric == "tflops"
    pick = tables.picks.iloc[0]
    tflops = 2 * 4096 ** 3 / (pick["median_ms"] * 1e-3) / 1e12
    assert pick["tflops"] == pytest.approx(tflops) and 700 < tflops < 800
    assert pick["pct_ceiling"] == pytest.approx(100 * tflops / 800.0)
    overview = tables.heatmaps[-1]
    assert overview.metric == "tflops" and overview.title.endswith("· TFLOP/s")
    assert overview.values.max().max() == pytest.approx(tflops)
    assert tables.best["tflops"].iloc[0] == pytest.approx(tflops)
    files = write_report(store, draw=False)
    md = files.markdown.read_text()
    assert "rates: TFLOP/s (FLOPs / median)" in md
    best_header = next(line for line in md.splitlines()
                       if line.startswith("| problem | M | N | K | rank"))
    assert "| TFLOP/s | % of ceiling |" in best_header   # replays: no torch, no % of it
    assert "GB/s" not in best_header
    assert "divides TFLOP/s by the torch.matmul rate" in md
    assert "a measurement, not a physical limit: a kernel faster than torch's reads above " \
           "100" in md
    assert f"at {tflops:.4g} TFLOP/s (no interleaved final)" in md
    # the problem by its dimensions and what a launch moves (A, B and C), not A's bytes
    assert "| problems (dtype, size, bytes a launch moves) | bfloat16 M=4096 N=4096 " \
           "K=4096 (96MiB moved a launch) |" in md
    headline = json.loads(files.json.read_text())["headline"]
    assert headline["unit"] == "TFLOP/s"
    assert headline["per_problem"][0]["tflops"] == pytest.approx(tflops)
    assert draw_heatmap(overview, tmp_path / "maps")[0].stat().st_size > 1000


def test_fp32_matmul_is_held_against_the_tf32_ceiling():
    c = Ceilings(gpu="G", uuid="", driver="", matmul={"float32": 50.0, "tfloat32": 400.0})
    assert c.matmul_peak("float32") == ("tfloat32", 400.0)
    assert c.matmul_peak("bfloat16") is None


def test_the_report_lists_what_varied_and_what_was_held_fixed(tmp_path):
    store = StudyStore(tmp_path / "st")
    store.create({"study": "st", "kernel": "copy", "command": "sweeper run x.yaml",
                  "space_path": "x.yaml",
                  "axes": {"grid": ["sms", "2*sms"], "block": ["32", "64"],
                           "BLOCK": ["256", "1024"], "dtype": ["float32"],
                           "footprint": ["1GiB"], "cache": ["cold"]},
                  "meta_axes": ["BLOCK"], "measure": {"warmup": 1, "repeat": 3,
                                                      "abandon": 1.5},
                  "measure_text": "1 warmup + 3 timed", "sampler": {"name": "auto", "seed": 4},
                  "environment": {"gpu": "Fake GPU", "sms": 132, "driver": "1.2"},
                  "fingerprint": {"device": "cuda", "kernel_source": "abc123",
                                  "env": "TRITON_CACHE_DIR=/x"}})
    slow = record(3, "2*sms", 64, 256, 20.0)          # trial #3's config, abandoned instead
    slow.status, slow.reason, slow.saved_ms = TrialStatus.ABANDONED, "abandoned: slow", 12.5
    for t in [*TRIALS[:3], slow, *TRIALS[4:]]:
        store.append(t)
    store.close()
    md = write_report(store, draw=False).markdown.read_text()
    assert "| varied | grid | sms, 2*sms |" in md and "| varied | BLOCK | 256, 1024 |" in md
    assert "| fixed | dtype | float32 |" in md and "| fixed | footprint | 1GiB |" in md
    assert "| fixed | kernel | copy (source abc123) |" in md
    assert "| fixed | measurement | 1 warmup + 3 timed; abandon at 1.5x the best |" in md
    assert "| fixed | sampler | auto, seed 4 |" in md
    assert "| fixed | environment variables | TRITON_CACHE_DIR=/x |" in md
    assert "1 trial(s) stopped sampling once clearly slower than the best, saving about " \
           "12.5 ms" in md
    data = json.loads((store.root / "report.json").read_text())
    assert data["factors"]["fixed"]["cache"] == "cold"
    assert data["abandoned"] == {"trials": 1, "saved_ms": 12.5}
    # counted as the run's done: line counts them: abandoned apart, not among the failed
    from sweeper.trial import FAILURES
    kept = [*TRIALS[:3], slow, *TRIALS[4:]]
    line = (f"{len(kept)} trials: {sum(t.status is TrialStatus.OK for t in kept)} measured, "
            f"1 abandoned early, {sum(t.status in FAILURES for t in kept)} failed, "
            f"{sum(t.status is TrialStatus.INVALID for t in kept)} skipped by constraints")
    assert line in md and line in (store.root / "report.html").read_text()


def test_tuning_json_report_json_and_report_md_give_the_winner_one_median(tmp_path,
                                                                          write_space):
    # a real study on the interpreter, with an interleaved final, at a footprint the
    # interpreter caps: 1 GiB asked for, 16 KiB run
    from sweeper.cli import main
    from sweeper.report import cell_text

    space = write_space("""
        study: one
        kernel: copy
        sampler: exhaustive
        params:
          grid: [sms, "cdiv(n, BLOCK)"]
          block: [32]
          BLOCK: [256, 1024]
          footprint: [1GiB]
        measure: {warmup: 1, repeat: 3}
    """)
    assert main(["run", str(space), "--device", "interpret", "--studies-dir",
                 str(tmp_path), "--quiet"]) == 0
    store = StudyStore(tmp_path / "one-interpret")
    assert main(["export", str(store.root), "-o", str(tmp_path / "tuning.json")]) == 0
    [entry] = json.loads((tmp_path / "tuning.json").read_text())["entries"]
    report = json.loads((store.root / "report.json").read_text())
    [headline] = report["headline"]["per_problem"]
    [final_row] = [r for r in report["winners"][0]["finalists"] if r["role"] == "winner"]
    assert entry["trial"] == headline["number"] == final_row["number"]
    assert entry["median_ms"] == headline["median_ms"] == final_row["median_ms"]
    assert entry["median_from"] == headline["median_from"]
    assert re.fullmatch("interleaved final: [345] rounds x 5 samples", entry["median_from"])
    assert entry["gbps"] == pytest.approx(headline["gbps"])
    assert entry["sweep_median_ms"] == headline["sweep_median_ms"] == \
        final_row["sweep_median_ms"] != entry["median_ms"]
    md = (store.root / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| float32 16KiB cold | "))
    cells = [c.strip() for c in row.split("|")]
    assert cells[cells.index(f"{entry['median_ms']:.4g}") + 1] == entry["median_from"]
    assert f"#{entry['trial']} at {entry['gbps']:.4g} GB/s" in md           # conclusion
    # the maps mark that winner with the same rate, under its sweep rate
    tables = study_tables(store)
    overview = tables.heatmaps[-1]
    assert overview.best_note == "winner of the interleaved final"
    assert overview.best_final == pytest.approx(entry["gbps"])
    text = cell_text(overview).loc[overview.best]
    assert text.splitlines()[-1] == f"final {entry['gbps']:.3g}"
    assert overview.caption.startswith("cells: sweep medians")
    assert "red: winner of the interleaved final ('final': its GB/s when the finalists " \
           "were re-measured together)" in overview.caption
    # the fixed factors say what the trials ran, not only what the space asked for
    ran = "16KiB (1GiB requested; capped on the interpreter)"
    assert f"| fixed | footprint | {ran} |" in md
    assert report["factors"]["fixed"]["footprint"] == ran
    assert "| fixed | cache | cold (nothing is flushed on the interpreter) |" in md
    assert "median of host-clock samples" in report["record"]["statistics"]


def test_the_report_counts_configs_a_replay_table_lacks_apart_from_the_failed():
    from sweeper.report._tables import status_counts_text

    frame = pd.DataFrame({"status": ["ok", "missing", "missing", "wrong_answer", "invalid"]})
    assert status_counts_text(frame) == ("5 trials: 1 measured, 1 failed, 2 configs the "
                                         "recorded table does not hold, 1 skipped by "
                                         "constraints")
    assert status_counts_text(frame[:1]) == ("1 trial: 1 measured, 0 failed, 0 skipped by "
                                             "constraints")
    # a study with no trial yet: its frame has no columns
    assert status_counts_text(pd.DataFrame()) == ("0 trials: 0 measured, 0 failed, 0 skipped "
                                                  "by constraints")


def test_a_replayed_study_says_it_replayed_and_shows_no_empty_columns(tmp_path):
    table = ROOT / "tests/data/replay/h200-copy.csv"
    store = replayed(table, "spaces/copy.yaml", tmp_path / "rp")
    files = write_report(store, draw=False)
    md = files.markdown.read_text()
    intro = md.split("## What varied")[0]
    assert f"Timings replayed from `{table}` (recorded on NVIDIA H200, " \
           "2026-11-29T14:57:46+00:00): nothing was launched, timed or verified here" in intro
    assert "verified on fresh random data" not in md and "timed apart" not in md
    assert "| fixed | inputs | none: nothing was launched |" in md
    assert "| fixed | measurement | replayed as recorded (the space asks for 10 warmup (2 " \
           "where they take 1 ms) + 50 timed) |" in md
    assert f"| statistics | median of the samples recorded in {table};" in md
    assert f"| hardware | NVIDIA H200 (132 SMs, 60MiB L2), driver 580.159.04, as recorded " \
           f"in {table};" in md
    best_header = next(line for line in md.splitlines() if line.startswith("| problem | rank"))
    for empty in ("first run s", "GB/J", "% of baseline", "% of ceiling"):
        assert empty not in best_header
    assert "None |" not in md and "| – |" not in md
    data = json.loads(files.json.read_text())
    assert data["environment"]["device"] == "replay" and "replay of NVIDIA H200" in \
        data["device_note"]
    assert data["record"]["statistics"].startswith(f"median of the samples recorded in {table}")
    assert data["reproduce"].endswith(f"--device replay:{table} --study rp")


def test_a_report_names_each_sampler_that_proposed_trials(tmp_path, monkeypatch):
    """Resumed with ``--force`` under another sampler, a study holds trials of both: each
    records its sampler, study.json names the latest and every one it ran with, and the
    report says which proposed how many, not the first alone.  A study an older sweeper
    wrote (trials naming no sampler, no ``samplers``) reads as its one sampler's."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    space = tmp_path / "s.yaml"
    text = (ROOT / "spaces/copy.yaml").read_text()
    replay = f"replay:{ROOT / 'tests/data/replay/h200-copy.csv'}"
    run = ["run", str(space), "--device", replay, "--study", "s", "--quiet"]
    space.write_text(text.replace("sampler: exhaustive", "sampler: tpe"))
    assert main([*run, "--trials", "5", "--no-report"]) == 0
    folder = tmp_path / "studies" / "s"
    old_meta, old_trials = (folder / "study.json").read_text(), \
        (folder / "trials.jsonl").read_text()
    space.write_text(text.replace("sampler: exhaustive", "sampler: random"))
    assert main([*run, "--trials", "40", "--force"]) == 0
    store = StudyStore(folder)
    assert [t.sampler for t in store.records()[0] if t.status is not TrialStatus.INVALID
            ] == ["tpe"] * 5 + ["random"] * 35     # a config ruled out is no proposal
    meta = json.loads((folder / "study.json").read_text())
    assert meta["sampler"]["name"] == "random"
    assert [s["name"] for s in meta["samplers"]] == ["tpe", "random"]
    shares = "tpe, seed 0: 5 trials; random, seed 0: 35 trials"
    assert f"| varied | sampler | {shares} (a resume with --force changed it) |" in \
        (folder / "report.md").read_text()
    assert "| fixed | sampler |" not in (folder / "report.md").read_text()
    assert f"<td>varied</td><td>sampler</td><td>{shares}" in \
        (folder / "report.html").read_text()
    assert json.loads((folder / "report.json").read_text())["samplers"] == [
        {"name": "tpe", "seeds": [0], "trials": 5},
        {"name": "random", "seeds": [0], "trials": 35}]

    # as an older sweeper left it: trials without their sampler, study.json without samplers
    older = json.loads(old_meta)
    del older["samplers"]
    (folder / "study.json").write_text(json.dumps(older))
    (folder / "trials.jsonl").write_text("".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "sampler"}) + "\n"
        for line in old_trials.splitlines()))
    assert main(["report", str(folder)]) == 0
    assert "| fixed | sampler | tpe, seed 0 |" in (folder / "report.md").read_text()
    assert main([*run, "--trials", "40", "--force", "--no-report"]) == 0   # resumed
    assert [s["name"] for s in StudyStore(folder).study_meta().samplers] == ["tpe", "random"]
    assert main(["report", str(folder)]) == 0
    assert f"| varied | sampler | {shares} (a resume" in (folder / "report.md").read_text()


def test_the_provenance_names_each_resume_with_force_and_what_it_changed(tmp_path,
                                                                       monkeypatch):
    """A study resumed with ``--force`` mixes trials measured under different settings:
    the measurement record gives one line per such resume (when, and what it changed, a
    hash by its key alone) in report.md and report.html, and report.json the list."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRITON_SWEEPER_TEST_KNOB", raising=False)
    space = tmp_path / "s.yaml"
    text = (ROOT / "spaces/copy.yaml").read_text()
    replay = f"replay:{ROOT / 'tests/data/replay/h200-copy.csv'}"
    run = ["run", str(space), "--device", replay, "--study", "s", "--quiet", "--trials", "3"]
    space.write_text(text)
    assert main(run) == 0
    folder = tmp_path / "studies" / "s"
    assert "resumed with --force" not in (folder / "report.md").read_text()
    assert json.loads((folder / "report.json").read_text())["forced"] == []
    monkeypatch.setenv("TRITON_SWEEPER_TEST_KNOB", "1")
    space.write_text(text.replace('"BLOCK >= block"', '"BLOCK >= 2*block"'))
    assert main([*run, "--force"]) == 0
    (forced,) = json.loads((folder / "study.json").read_text())["forced"]
    was = [f"{k}={v}" for k, v in sorted(forced["environment"]["env"].items())]
    env = f"{' '.join(was)!r} -> {' '.join([*was, 'TRITON_SWEEPER_TEST_KNOB=1'])!r}"
    line = (f"resumed with --force, {forced['when']} | changed env: {env}; space_content "
            "(trials before and after it were measured under different settings) |")
    assert f"| {line}" in (folder / "report.md").read_text()
    assert f"<td>resumed with --force, {forced['when']}</td><td>changed env: " in \
        (folder / "report.html").read_text()
    assert json.loads((folder / "report.json").read_text())["forced"] == [forced]


def test_the_software_record_names_each_environment_a_resume_with_force_replaced(tmp_path,
                                                                               monkeypatch):
    """The record's software row gives the latest run's software, then each earlier one a
    resume with ``--force`` replaced (its ``forced`` entry keeps it) and when it ended; a
    resume that changed no software adds nothing."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    replay = f"replay:{ROOT / 'tests/data/replay/h200-copy.csv'}"
    assert main(["run", str(ROOT / "spaces/copy.yaml"), "--device", replay, "--study", "s",
                 "--quiet", "--trials", "2", "--no-report"]) == 0
    folder = tmp_path / "studies" / "s"
    meta = json.loads((folder / "study.json").read_text())
    env = meta["environment"]
    now = (f"CUDA {env.get('cuda', '–')}, torch {env.get('torch')}, triton "
           f"{env.get('triton')}, sweeper {env.get('sweeper')}, Python {env.get('python')}")
    first = {**env, "torch": "2.11.0"}
    second = {**env, "torch": "2.12.0", "triton": "3.1.0"}
    meta["forced"] = [
        {"when": "2026-01-01T00:00:00+00:00", "changed": ["torch: '2.11.0' -> '2.12.0'"],
         "environment": first},
        {"when": "2026-01-02T00:00:00+00:00", "changed": ["env: '' -> 'X=1'"],
         "environment": second},           # the same software: not named again
        {"when": "2026-01-03T00:00:00+00:00", "changed": ["torch: '2.12.0' -> 'now'"],
         "environment": second},
        {"when": "2026-01-04T00:00:00+00:00", "changed": ["space_content: ..."]}]
    (folder / "study.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 0

    def was(e):
        return now.replace(f"torch {env.get('torch')}", f"torch {e['torch']}").replace(
            f"triton {env.get('triton')}", f"triton {e['triton']}")

    row = (f"| software | {now}; before: {was(second)} (until the resume with --force of "
           f"2026-01-03T00:00:00+00:00); before: {was(first)} (until the resume with "
           "--force of 2026-01-01T00:00:00+00:00) |")
    md = (folder / "report.md").read_text()
    assert row in md
    # in the table of what varied: the software is no longer said to be held fixed
    assert "| varied | software | " + row.removeprefix("| software | ").removesuffix(" |") \
        + " (a resume with --force changed it) |" in md
    assert "| fixed | software |" not in md and "| fixed | kernel | copy (source " in md
    del meta["forced"][:3]
    (folder / "study.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 0
    md = (folder / "report.md").read_text()
    assert f"| software | {now} |" in md
    assert "| fixed | software | CUDA " in md and "| varied | software |" not in md
    # a resume forced after the kernel's source changed: the kernel varied
    meta["forced"] = [{"when": "2026-01-05T00:00:00+00:00",
                       "changed": [f"kernel_source: '{'0' * 16}' -> '{'1' * 16}'"]}]
    (folder / "study.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 0
    md = (folder / "report.md").read_text()
    assert "| varied | kernel | copy (source " in md and "| fixed | kernel |" not in md
    assert md.count("(a resume with --force changed it)") == 1


def test_one_at_a_time_varies_a_zipped_group_as_one_and_says_an_axis_never_varied(
        tmp_path, monkeypatch):
    """A zipped group is one row of the one-at-a-time table (its rows its values), not
    each member alone at 'no effect'; an axis its ``when:`` held at its first value around
    the baseline says so, with no picture."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    space = tmp_path / "s.yaml"
    space.write_text("""study: oat
kernel: matmul
sampler: one-at-a-time
params:
  grid: [sms, 2*sms]
  block: [128, 256]
  tiles: {zip: {BLOCK_M: [64, 128, 128, 64], BLOCK_N: [64, 128, 256, 256]}}
  BLOCK_K: [32, 64]
  num_stages: {values: [3, 4], when: "BLOCK_K >= 64"}
  dtype: [bfloat16]
  footprint: [32MiB]
measure: {warmup: 5, repeat: 30, cache: cold}
""")
    replay = f"replay:{ROOT / 'tests/data/replay/h200-matmul.csv'}"
    assert main(["run", str(space), "--device", replay, "--quiet"]) == 0
    folder = tmp_path / "studies" / "oat-replay"
    text = (folder / "report.md").read_text().split("## One variable at a time")[1]
    text = text.split("\n## ")[0]
    assert "| tiles (BLOCK_M, BLOCK_N) | BLOCK_M=128,BLOCK_N=128 | BLOCK_M=128,BLOCK_N=128 " \
           "| 6.521 | True |" in text
    assert "| BLOCK_M |" not in text and "| BLOCK_N |" not in text
    assert "| num_stages | – | 3 | – | not varied: num_stages only varies when " \
           "'BLOCK_K >= 64'; otherwise it stays at its first value |" in text
    assert "(BLOCK_K=32, BLOCK_M=128,BLOCK_N=128, block=128, grid=sms, num_stages=3)" in text
    assert not (folder / "heatmaps" / "oat_num_stages.png").exists()
    assert (folder / "heatmaps" / "oat_tiles.png").exists()


def test_report_json_writes_counts_as_whole_numbers_and_names_the_roles():
    """A column of counts with a gap (a failed trial's) is float in pandas: report.json
    still writes 2, not 2.0, and the finals' unnamed column of roles is ``role``."""
    import pandas as pd

    from sweeper.report._write import _records

    frame = pd.DataFrame({"": ["winner", "tied"], "grid": [2.0, float("nan")],
                          "outliers": [1.0, 0.0], "median_ms": [1.0, 2.5]})
    rows = _records(frame)
    assert rows == [{"role": "winner", "grid": 2, "outliers": 1, "median_ms": 1.0},
                    {"role": "tied", "grid": None, "outliers": 0, "median_ms": 2.5}]
    assert type(rows[0]["grid"]) is int and type(rows[0]["median_ms"]) is float


def test_gb_per_joule_only_where_the_power_reading_is_the_trial_s_own(tmp_path):
    """NVML's board power is a mean over the second before it is read: a trial that
    sampled for 13 ms reads the trials before it (the committed H200 copy study's went
    from 111 W to 240 W in the order they ran), so its GB/J is not given, and the report
    says why; one that sampled for 2 s with polls inside is its own."""
    import dataclasses

    def powered(t, window_s, readings):
        return dataclasses.replace(t, power_w=200.0, energy_j=200.0 * t.stats.median / 1e3,
                                   energy_window_s=window_s, power_readings=readings)

    short = powered(TRIALS[4], 0.013, 1)           # 400 GB/s: the sweep's best
    long_ = powered(TRIALS[1], 2.0, 100)           # 300 GB/s, for 2 s
    store = copy_study(tmp_path, records=[TRIALS[0], long_, TRIALS[2], TRIALS[3], short,
                                          *TRIALS[5:], *BASE])
    tables = study_tables(store)
    gbj = tables.frame.set_index("number")["gb_per_j"]
    assert np.isnan(gbj[4]) and gbj[1] == pytest.approx(300.0 / 200.0)
    md = write_report(store, draw=False).markdown.read_text()
    assert "GB/J is not given for 1 trial: each sampled for less than the 1 s NVML " \
           "averages board power over" in md
    assert "| GB/J |" in next(x for x in md.splitlines() if x.startswith("| problem | rank"))


def test_a_finalist_that_left_the_final_early_is_named_with_its_samples(tmp_path):
    """After each round a finalist neither tied with the fastest nor close to it leaves:
    its median in the finals' table is of one round's samples, not of "5 rounds × 10
    samples each", and the sentence over the table says so."""
    rows = [Finalist(number=n, samples_ms=[m] * k, stats=summarize([m] * k), gbps=2.0 / m)
            for n, m, k in ((1, 0.0049, 50), (4, 0.0050, 50), (2, 0.0090, 10))]
    early = FinalRecord(problem=ProblemKey("float32", 1 << 30), finalists=rows, tied=[1],
                        winner=1, rounds=5, samples_per_round=10)
    md = write_report(copy_study(tmp_path, [early]), draw=False).markdown.read_text()
    assert "winner #1, 0 other(s) tied within noise; 5 rounds × 10 samples each; left " \
           "after fewer rounds, their medians of fewer samples: #2 (10 of 50)." in md
