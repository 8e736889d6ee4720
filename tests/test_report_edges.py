"""Report edge cases: problems in numeric order, the CI as a percentage, and studies or
problems where nothing was measured (said plainly, nothing drawn, no warnings)."""

import dataclasses
import json
import warnings

import pytest

from sweeper.measure import summarize
from sweeper.report import study_tables, write_report
from sweeper.space import Problem, format_size
from sweeper.store import BaselineRecord
from sweeper.trial import TrialStatus
from tests.test_report import TRIALS, copy_study, record


def measured(number, footprint, gbps, rel_ci=0.004, cache="cold"):
    """A measured copy trial of ``footprint`` bytes, with full statistics."""
    t = record(number, "sms", 32, 256, gbps)
    t.samples_ms = [t.stats.median] * 5
    t.stats = dataclasses.replace(summarize(t.samples_ms), rel_ci=rel_ci)
    t.choice = {**t.choice, "footprint": format_size(footprint), "cache": cache}
    t.config = dataclasses.replace(t.config, problem=Problem("float32", footprint), cache=cache)
    return t


def small_study(tmp_path, records, baselines=()):
    return copy_study(tmp_path, records=[*records, *baselines], axes={
        "grid": ["sms"], "block": ["32"], "BLOCK": ["256", "1024"], "dtype": ["float32"],
        "footprint": ["16KiB", "4KiB", "8KiB"], "cache": ["cold", "warm"]})


def test_problems_sort_by_footprint_and_the_ci_is_a_percentage(tmp_path):
    sizes = [16 << 10, 4 << 10, 8 << 10]              # as text: 16KiB < 4KiB < 8KiB
    trials = [measured(i, fp, 100.0 + i) for i, fp in enumerate(sizes)]
    bases = [BaselineRecord("torch copy_", "float32", fp, [0.5], summarize([0.5]), 400.0)
             for fp in sizes]
    store = small_study(tmp_path, trials, bases)
    files = write_report(store, draw=False)
    order = ["float32 4KiB cold", "float32 8KiB cold", "float32 16KiB cold"]
    tables = study_tables(store)
    assert list(tables.best["problem"]) == order
    assert list(tables.picks["problem"]) == order
    assert tables.heatmaps == []          # grid, block and BLOCK each hold one value
    data = json.loads(files.json.read_text())
    assert [r["problem"] for r in data["best"]] == order
    assert [r["problem"] for r in data["headline"]["per_problem"]] == order
    assert [b["footprint"] for b in data["baselines"]] == sorted(sizes)
    assert data["best"][0]["ci_pct"] == pytest.approx(0.4)
    md = files.markdown.read_text()
    header = next(line for line in md.splitlines() if line.startswith("| problem | rank"))
    assert "| median ms | ±CI % |" in header
    assert "| float32 4KiB cold | 1 | sweep best | 1 | 0.0198 | 0.4 |" \
        in md
    assert [line.split(" | ")[0] for line in md.splitlines()
            if line.startswith("| float32 ") and "| sweep best |" in line] == \
        [f"| {p}" for p in order]
    assert "(none)" not in md
    assert "No trial was flagged." in md
    assert "## Trials without a number\n\nNone: every config was measured." in md


def test_a_study_where_nothing_was_measured_says_why_and_draws_nothing(tmp_path):
    wrong = [record(i, g, b, 256, 0.0, TrialStatus.WRONG_ANSWER,
                    f"{i + 1} of 10 elements differ from the input (first at index {i}: "
                    "nan != 0.5)") for i, (g, b) in enumerate(
                        [("sms", 32), ("sms", 64), ("2*sms", 32), ("2*sms", 64)])]
    wrong[3].status, wrong[3].reason = TrialStatus.CRASHED, "RuntimeError: boom"
    store = copy_study(tmp_path, records=[*wrong, TRIALS[5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        files = write_report(store)
    assert files.images == [] and not (store.root / "heatmaps").exists()
    md = files.markdown.read_text()
    why = ("no config was measured: 5 trial(s), 3 wrong_answer, 1 crashed, 1 skipped by "
           "constraints; the commonest reason: wrong_answer, 'elements differ from the "
           "input' (3 trial(s); e.g. #0: 1 of 10 elements differ from the input (first at "
           "index 0: nan != 0.5))")
    assert f"**N{why[1:]}.**" in md
    assert "rates: effective GB/s" in md
    assert "## Best config per problem" in md and "None: no config was measured." in md
    assert "## Best configs in the sweep" not in md and "## How sampling stopped" not in md
    assert "## Heatmaps\n\nNone drawn: no config was measured." in md
    assert "(none)" not in md
    data = json.loads(files.json.read_text())
    assert data["unmeasured"] == why
    assert data["heatmaps"] == {"colour_scale": "one for the study's maps", "drawn": [],
                                "not_drawn": [
        "float32_1GiB_cold_BLOCK-256", "float32_1GiB_cold_BLOCK-1024",
        "float32_1GiB_cold_best"]}


def test_a_problem_without_a_measured_config_is_named(tmp_path):
    failed = record(9, "sms", 32, 256, 0.0, TrialStatus.CRASHED, "RuntimeError: boom")
    failed.choice = {**failed.choice, "footprint": "4KiB", "cache": "cold"}
    failed.config = dataclasses.replace(failed.config, problem=Problem("float32", 4 << 10))
    store = small_study(tmp_path, [measured(0, 8 << 10, 100.0), failed])
    files = write_report(store)
    md = files.markdown.read_text()
    assert "**float32 4KiB cold**: no config was measured: 1 trial(s), 1 crashed; the " \
           "commonest reason: crashed, 'RuntimeError: boom' (1 trial(s); e.g. #9: " \
           "RuntimeError: boom).\n" in md
    assert files.images == [] and "## Heatmaps" not in md     # no axis of a map varies



def test_a_study_stopped_by_its_budget_says_so_under_the_title(tmp_path):
    """A reader of someone else's study sees whether the sweep covered the space: the
    line under the title says why the last run stopped, and report.json keeps it."""
    store = small_study(tmp_path, [measured(0, 8 << 10, 100.0), measured(1, 4 << 10, 90.0)])
    store.update_meta(last_run={"stopped_by": "budget: 2 trials"})
    files = write_report(store, draw=False)
    said = "2 trials: 2 measured, 0 failed, 0 skipped by constraints; the last run " \
           "stopped: budget: 2 trials. "
    assert said in files.markdown.read_text()
    assert said in files.html.read_text()
    assert json.loads(files.json.read_text())["stopped_by"] == "budget: 2 trials"
