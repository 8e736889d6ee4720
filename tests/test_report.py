import json

import numpy as np
import pytest

from sweeper.report import best_configs, failure_counts, heatmaps, trials_frame, write_report
from sweeper.store import BaselineRecord, StudyStore, TrialRecord
from sweeper.trial import TrialStatus


def record(number, grid, block, BLOCK, gbps, status=TrialStatus.OK, reason=None, grid_value=None):
    ok = status is TrialStatus.OK
    median = 2.0 / gbps if ok else None
    return TrialRecord(
        number=number, status=status, reason=reason,
        choice={"grid": grid, "block": str(block), "BLOCK": str(BLOCK), "dtype": "float32",
                "footprint": "1GiB"},
        config=None if status is TrialStatus.INVALID else {
            "grid": grid_value or 132, "block": block, "num_warps": block // 32,
            "meta": {"BLOCK": BLOCK}, "dtype": "float32", "footprint": 1 << 30},
        samples_ms=[median] * 3 if ok else [],
        stats={"n": 3, "mean": median, "median": median, "min": median, "max": median,
               "p95": median, "p99": median, "std": 0.0, "cv": 0.0} if ok else None,
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


def test_write_report_writes_images_markdown_and_json(tmp_path):
    store = StudyStore(tmp_path / "st")
    store.create({"study": "st", "kernel": "copy", "command": "sweeper run x.yaml",
                  "space_path": "x.yaml", "space_sha256": "ab" * 32,
                  "axes": {"grid": ["sms", "2*sms"], "block": ["32", "64"],
                           "BLOCK": ["256", "1024"]},
                  "meta_axes": ["BLOCK"], "measure": {"warmup": 1, "repeat": 3},
                  "environment": {"gpu": "Fake GPU", "sms": 132},
                  "fingerprint": {"device": "cuda"}})
    for t in [*TRIALS, *BASE]:
        store.append(t)
    store.close()
    files = write_report(store)
    assert sorted(p.name for p in files.images) == sorted(
        f"float32_1GiB_cold_{n}.{ext}" for n in ("BLOCK-256", "BLOCK-1024", "best")
        for ext in ("png", "svg"))
    assert all(p.stat().st_size > 1000 for p in files.images)
    assert files.images[0].read_bytes()[:4] == b"\x89PNG"
    md = files.markdown.read_text()
    assert "| 1 | 4 | sms | 132 | 32 | 1024 |" in md
    assert "## Measurement record" in md and "| stopping rule |" in md
    assert "sweeper run x.yaml --device cuda --study st" in md
    assert "| invalid | constraint 'BLOCK >= 32*block' is false | 2 |" in md
    data = json.loads(files.json.read_text())
    assert data["best"][0]["gbps"] == 400.0 and data["best"][0]["pct_of_baseline"] == 100.0
    assert data["counts"] == {"ok": 5, "invalid": 2, "wrong_answer": 1}
    assert data["baselines"][0]["gbps"] == 400.0
    assert {f["status"] for f in data["failures"]} == {"invalid", "wrong_answer"}
