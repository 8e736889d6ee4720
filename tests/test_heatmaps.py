"""Heatmaps: which meta values won each cell, the winner's cell, colour scales, labels."""

import dataclasses
import json
from itertools import combinations

import pytest

from sweeper.cli import main
from sweeper.measure import summarize
from sweeper.report import (
    cell_text,
    heatmap_figure,
    heatmaps,
    study_tables,
    tick_labels,
    trials_frame,
)
from sweeper.report._heatmaps import WIDE_CI_PCT, short_names
from sweeper.report._html import _map
from sweeper.space import Problem, format_size
from sweeper.trial import TrialStatus
from tests.test_report import COPY_AXES, TRIALS, copy_study, final, record

GRIDS, BLOCKS = ["sms", "2*sms"], [32, 64]


def maps(trials=TRIALS, **kw):
    return heatmaps(trials_frame(trials, ["BLOCK"]), ["BLOCK"], GRIDS, BLOCKS, kernel="copy",
                    gpu="G", **kw)


def test_a_best_over_meta_map_names_the_meta_values_that_won_each_cell():
    best = maps()[-1]
    assert best.won_by.loc[32, "sms"] == "B=1024" and best.won_by.loc[64, "sms"] == "B=256"
    text = cell_text(best)
    assert text.loc[32, "sms"] == "400\nB=1024" and text.loc[32, "2*sms"] == "200\nB=256"
    assert text.loc[64, "2*sms"] == "fail"                      # no number, and why
    assert "under each, the meta values that won it (B = BLOCK)" in best.caption
    per_block = maps()[0]                 # a map of one BLOCK names no meta values
    assert per_block.won_by is None and cell_text(per_block).loc[32, "sms"] == "100"


def test_titles_name_only_the_meta_parameters_that_vary():
    """A meta-parameter at one value in every config (num_stages: [4]) is no choice: the
    best-over-meta map is not 'best over BLOCK, num_stages', and no map's title repeats
    it; the file names keep it."""
    fixed = [dataclasses.replace(t, choice={**t.choice, "num_stages": "4"}, config=(
        dataclasses.replace(t.config, meta={**t.config.meta, "num_stages": 4})
        if t.config else None)) for t in TRIALS]
    drawn = heatmaps(trials_frame(fixed, ["BLOCK", "num_stages"]), ["BLOCK", "num_stages"],
                     GRIDS, BLOCKS, kernel="copy", gpu="G")
    assert drawn[-1].title == "copy · float32 · 1GiB · cold · best over BLOCK · G · GB/s"
    assert drawn[0].title == "copy · float32 · 1GiB · cold · BLOCK=256 · G · GB/s"
    assert drawn[0].name.endswith("_BLOCK-256_num_stages-4")
    assert "(B = BLOCK)" in drawn[-1].caption


def test_the_winners_cell_shows_the_winner_and_its_final_rate(tmp_path):
    # the sweep's fastest in cell (32, sms) is #4 (BLOCK=1024, 400 GB/s), but the final
    # re-measured #4 and #0 (BLOCK=256, 100 GB/s in the sweep) together and chose #0
    store = copy_study(tmp_path, [final(0, [4, 0], [0.0050, 0.0049])])
    best = study_tables(store).heatmaps[-1]
    assert best.best == (32, "sms") and best.best_note == "winner of the interleaved final"
    assert best.values.loc[32, "sms"] == 100.0 and best.won_by.loc[32, "sms"] == "B=256"
    assert best.best_final == pytest.approx(2.0 / 0.0049)
    assert cell_text(best).loc[32, "sms"] == "100\nB=256\nfinal 408"
    assert "red: winner of the interleaved final ('final': its GB/s when the finalists " \
           "were re-measured together)" in best.caption


def test_short_names_for_cell_text():
    assert short_names(["BLOCK", "BLOCK_M", "num_stages", "K"]) == {
        "BLOCK": "B", "BLOCK_M": "BM", "num_stages": "ns", "K": "K"}
    assert short_names(["BLOCK_M", "BIG_M"]) == {"BLOCK_M": "BLOCK_M", "BIG_M": "BIG_M"}


def at(trial, footprint, scale=1.0):
    """``trial`` in another problem (``footprint`` bytes), its rate times ``scale``."""
    label = format_size(footprint)
    config = dataclasses.replace(trial.config, problem=Problem("float32", footprint)) \
        if trial.config else None
    return dataclasses.replace(trial, number=trial.number + 100, config=config,
                               choice={**trial.choice, "footprint": label},
                               gbps=trial.gbps * scale)


def test_one_colour_scale_for_the_study_by_default_per_problem_or_map_on_request(tmp_path):
    """A problem whose rates spread 4 % must not fill the whole scale: by default every
    map of the study shares one range; ``problem`` and ``map`` narrow it on request."""
    small = [at(t, 1 << 20, 0.5) for t in TRIALS]              # 25-200 GB/s
    both = maps([*TRIALS, *small])
    assert len(both) == 6 and all(m.scale == (25.0, 400.0) for m in both)
    assert all("colour: one scale for the study's 6 maps (25 to 400 GB/s)" in m.caption
               for m in both)
    per_problem = maps([*TRIALS, *small], scale="problem")
    assert [m.scale for m in per_problem] == [(25.0, 200.0)] * 3 + [(50.0, 400.0)] * 3
    store = copy_study(tmp_path, records=[*TRIALS, *small], axes={
        **COPY_AXES, "footprint": ["1MiB", "1GiB"]})
    older = study_tables(store, shared_scale=True).heatmaps             # the older flag
    assert [(m.scale, m.caption) for m in older] == [
        (m.scale, m.caption) for m in study_tables(store, scale="problem").heatmaps]
    assert [m.scale for m in older] == [(25.0, 200.0)] * 3 + [(50.0, 400.0)] * 3
    own = maps([*TRIALS, *small], scale="map")
    assert all(m.scale is None and "colour: this map's own range" in m.caption for m in own)
    fig = heatmap_figure(both[3])                    # 1GiB, BLOCK=256: its own range 100-300
    mesh, bar = fig.axes[0].collections[0], fig.axes[1]
    assert mesh.get_clim() == (25.0, 400.0)
    assert bar.get_ylabel() == "effective GB/s (read + write, median)" == both[3].colour_label
    assert heatmap_figure(own[3]).axes[0].collections[0].get_clim() == (100.0, 300.0)
    with pytest.raises(ValueError, match="scale must be one of study, problem, map, but got "
                                         "'maps'"):
        maps(scale="maps")


def test_a_cell_whose_ci_is_wide_is_marked_and_the_caption_says_so():
    """The issue's brightest cell spread ±140 % and lost in the finals: a cell whose CI is
    wider than ±5 % shows its ± and is hatched, and the caption counts them and says
    when the red box is one."""
    noisy = dataclasses.replace(TRIALS[4], samples_ms=[0.002, 0.02, 0.005, 0.0009, 0.02],
                                stats=summarize([0.002, 0.02, 0.005, 0.0009, 0.02]))
    data = maps([*TRIALS[:4], noisy, *TRIALS[5:]])
    best = data[-1]
    assert best.best == (32, "sms") and best.wide.loc[32, "sms"]
    ci = best.ci_pct.loc[32, "sms"]
    assert ci > WIDE_CI_PCT and not best.wide.loc[64, "sms"]     # steady: 3 equal samples
    assert cell_text(best).loc[32, "sms"].startswith(f"400 ±{ci:.0f}%\n")
    assert (f"hatched: 1 cell whose median's 95% CI is wider than ±5% (its ± under the "
            f"rate): not settled, the red box's among them (±{ci:.0f}%)") in best.caption
    assert "hatched" not in data[0].caption                         # BLOCK=256: all steady
    fig = heatmap_figure(best)
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert [(p.get_x(), p.get_y()) for p in hatched] == [(0, 0)]
    # report.html draws the same mark: the cell's ± (the script hatches such a cell)
    cells = [c for row in _map(best)["cells"] for c in row]
    assert [c[4] for c in cells] == [round(ci), None, None, None]


def test_maps_of_one_cell_are_folded_into_the_best_over_meta_map():
    """A from_autotune study zips block with its meta values: each meta values' map
    holds one cell.  Those are folded into the best map, which says so; a best map of one
    cell is not drawn either, and the report says where its configs are."""
    zipped = [record(0, "sms", 32, 256, 100.0), record(1, "sms", 64, 1024, 300.0),
              record(2, "sms", 32, 1024, 200.0)]        # BLOCK=256 holds one cell
    data = maps(zipped)
    assert [m.name for m in data] == ["float32_1GiB_cold_BLOCK-1024", "float32_1GiB_cold_best"]
    assert data[-1].folded == 1 and data[-1].cells == 2 and data[-1].drawn
    assert "it folds 1 map of one cell (one per meta values)" in data[-1].caption
    lone, = maps(lone_records())             # grid and block fixed: only BLOCK varies
    assert (lone.name, lone.cells, lone.drawn, lone.folded, lone.flat) == (
        "float32_1GiB_cold_best", 1, False, 0, True)


def test_a_map_none_of_whose_configs_was_measured_marks_why_and_names_its_trials():
    """A meta value none of whose configs was measured (most of a large space's, when a
    budget stops the sweep early) still gets its map, not drawn: its failed and ruled-out
    cells marked and their trials named, no number, no marked cell, the column labels as
    any map's."""
    crashed = record(1, "2*sms", 32, 1024, 0.0, TrialStatus.CRASHED, "boom", 264)
    skipped = record(2, "sms", 64, 1024, 0.0, TrialStatus.INVALID, "ruled out")
    blank, _ = maps([record(0, "sms", 32, 256, 100.0), record(3, "2*sms", 64, 256, 90.0),
                     crashed, skipped])          # (BLOCK=256's map is the best-over-meta map)
    assert blank.name == "float32_1GiB_cold_BLOCK-1024" and not blank.measured
    assert blank.notes.loc[32, "2*sms"] == "fail" and blank.notes.loc[64, "sms"] == "skip"
    assert blank.notes.loc[32, "sms"] == ""
    assert blank.numbers.loc[32, "2*sms"] == 1 and blank.numbers.loc[64, "sms"] == 2
    assert blank.numbers.dtypes.eq(float).all() and blank.values.isna().all().all()
    assert (blank.best, blank.best_note, blank.best_final, blank.won_by) == (
        None, "best", None, None)
    assert blank.column_labels == ["sms", "2*sms\n=264"]


def test_a_cell_without_a_number_says_why_as_the_report_counts_it():
    """A config a replay's table lacks and one cut short once clearly slower are no
    failures (the run and the report count them apart): their cells say ``missing`` and
    ``abandoned``, never ``fail``."""
    missing = record(1, "2*sms", 32, 1024, 0.0, TrialStatus.MISSING,
                     "not in the replay table t.csv", 264)
    abandoned = record(2, "sms", 64, 1024, 0.0, TrialStatus.ABANDONED, None)
    crashed = record(3, "2*sms", 64, 1024, 0.0, TrialStatus.CRASHED, "boom", 264)
    best = maps([record(0, "sms", 32, 1024, 100.0), missing, abandoned, crashed])[-1]
    assert best.name == "float32_1GiB_cold_best"
    text = cell_text(best)
    assert (text.loc[32, "2*sms"], text.loc[64, "sms"], text.loc[64, "2*sms"]) == (
        "missing", "abandoned", "fail")
    assert text.loc[32, "sms"] == "100"


def lone_records():
    return [record(0, "sms", 32, 256, 100.0), record(1, "sms", 32, 1024, 300.0)]


def test_a_report_says_which_maps_of_one_cell_it_did_not_draw(tmp_path):
    failed = record(1, "2*sms", 32, 1024, 0.0, TrialStatus.CRASHED, "RuntimeError: boom", 264)
    store = copy_study(tmp_path, records=[record(0, "sms", 32, 256, 100.0), failed,
                                          record(2, "sms", 32, 512, 90.0),
                                          record(3, "sms", 64, 512, 80.0)],
                       axes={**COPY_AXES, "BLOCK": ["256", "512", "1024"]})
    assert main(["report", str(store.root)]) == 0
    data = json.loads((store.root / "report.json").read_text())
    assert data["heatmaps"]["drawn"] == ["float32_1GiB_cold_BLOCK-512", "float32_1GiB_cold_best"]
    report = (store.root / "report.md").read_text()
    assert ("Not drawn, no config in them was measured: float32_1GiB_cold_BLOCK-1024.\n\n"
            "1 map of one meta values' configs held a number in one cell only: it is folded "
            "into its problem's best-over-meta map, whose cells name the meta values that won "
            "them.") in report
    assert not (store.root / "heatmaps" / "float32_1GiB_cold_BLOCK-256.png").exists()
    lone = copy_study(tmp_path / "lone", records=[record(0, "sms", 32, 256, 100.0), failed])
    assert main(["report", str(lone.root)]) == 0
    assert ("Not drawn, no config in them was measured: float32_1GiB_cold_BLOCK-1024.\n\n"
            "Not drawn, fewer than two of grid, block and the meta-parameters vary in their "
            "problem: float32_1GiB_cold_best; the best-config tables above rank their "
            "configs.\n") in (lone.root / "report.md").read_text()


def test_a_problem_of_one_meta_values_has_one_map(tmp_path):
    """One BLOCK, grid and block varying: the map of that BLOCK and the best over the
    BLOCKs are the same numbers; the report drew both.  One is drawn, the best-over-meta
    map, titled without a 'best over' of nothing."""
    one = [t for t in TRIALS if t.choice["BLOCK"] == "256"]
    drawn = maps(one)
    assert [(m.name, m.drawn) for m in drawn] == [("float32_1GiB_cold_best", True)]
    assert drawn[0].title == "copy · float32 · 1GiB · cold · G · GB/s"
    store = copy_study(tmp_path, records=one, axes={**COPY_AXES, "BLOCK": ["256"]})
    assert main(["report", str(store.root)]) == 0
    assert [p.name for p in (store.root / "heatmaps").glob("*.png")] == [
        "float32_1GiB_cold_best.png"]


def test_a_problem_where_fewer_than_two_axes_vary_has_no_map(tmp_path):
    """A problem where grid alone varies (block and BLOCK fixed) beside one where grid,
    block and BLOCK vary: no grid × block map can show the first, yet the report drew its
    map and its best-over-BLOCK twin, and the plan priced both.  Now neither, by one rule
    (sweeper.drawn_maps), and report.md says why."""
    from sweeper.drawn_maps import ProblemMaps

    row = [at(record(20, "sms", 32, 256, 100.0), 1 << 20),
           at(record(21, "2*sms", 32, 256, 150.0), 1 << 20)]
    drawn = maps([*TRIALS, *row])
    assert [(m.name, m.drawn) for m in drawn] == [
        ("float32_1MiB_cold_best", False), ("float32_1GiB_cold_BLOCK-256", True),
        ("float32_1GiB_cold_BLOCK-1024", True), ("float32_1GiB_cold_best", True)]
    assert drawn[0].flat and drawn[0].cells == 2
    store = copy_study(tmp_path, records=[*TRIALS, *row],
                       axes={**COPY_AXES, "footprint": ["1MiB", "1GiB"]})
    assert main(["report", str(store.root)]) == 0
    assert ("Not drawn, fewer than two of grid, block and the meta-parameters vary in their "
            "problem: float32_1MiB_cold_best; the best-config tables above rank their "
            "configs.") in (store.root / "report.md").read_text()
    assert not list((store.root / "heatmaps").glob("*1MiB*.png"))
    counted = ProblemMaps()                # plan's count: the same rule, without pandas
    for grid in ("sms", "2*sms"):
        counted.add((("BLOCK", 256),), grid, 32)
    assert counted.drawn().count == 0
    counted.add((("BLOCK", 1024),), "sms", 32)            # BLOCK varies too: grid × BLOCK
    assert counted.drawn().count == 2 and counted.drawn().folded == 1


def test_sweeper_report_takes_the_colour_scale(tmp_path):
    store = copy_study(tmp_path)
    assert main(["report", str(store.root), "--shared-scale"]) == 0
    data = json.loads((store.root / "report.json").read_text())
    assert data["heatmaps"]["colour_scale"] == "shared by each problem's maps"
    assert data["heatmaps"]["drawn"] == ["float32_1GiB_cold_BLOCK-256",
                                         "float32_1GiB_cold_BLOCK-1024", "float32_1GiB_cold_best"]
    assert main(["report", str(store.root), "--scale", "map"]) == 0
    assert json.loads((store.root / "report.json").read_text())["heatmaps"][
        "colour_scale"] == "per map"
    assert main(["report", str(store.root)]) == 0
    assert json.loads((store.root / "report.json").read_text())["heatmaps"][
        "colour_scale"] == "one for the study's maps"


LONG = "cdiv(isqrt(n), BLOCK_M) * cdiv(isqrt(n), BLOCK_N)"


def test_long_grid_labels_wrap_to_the_cell_or_turn():
    assert tick_labels([LONG + "\n=1024", "sms\n=132"]) == (
        ["cdiv(isqrt(n),\nBLOCK_M) *\ncdiv(isqrt(n),\nBLOCK_N)\n=1024", "sms\n=132"], 0)
    labels, rotation = tick_labels(["max(sms,cdiv(n,8*BLOCK))", "sms"])
    assert labels == ["max(sms,cdiv(n,8*BLOCK))", "sms"] and rotation == 45


@pytest.mark.parametrize("grids, rotation", [
    ([LONG, "2*" + LONG, "sms"], 0),
    (["max(sms,cdiv(n,8*BLOCK))", "min(sms,cdiv(n,8*BLOCK))", "sms"], 45)])
def test_drawn_grid_labels_never_overlap(grids, rotation):
    trials = [record(i, g, b, 256, 100.0 + i, grid_value=1024)
              for i, (g, b) in enumerate((g, b) for g in grids for b in BLOCKS)]
    data = heatmaps(trials_frame(trials, ["BLOCK"]), ["BLOCK"], grids, BLOCKS,
                    kernel="copy", gpu="G")[0]
    assert data.label_rotation == rotation
    fig = heatmap_figure(data)
    renderer = fig.canvas.get_renderer()
    ticks = fig.axes[0].get_xticklabels()
    assert [t.get_text() for t in ticks] == data.column_labels
    assert {t.get_rotation() for t in ticks} == {rotation}
    boxes = [t.get_window_extent(renderer) for t in ticks]
    for a, b in combinations(boxes, 2):
        assert a.x1 <= b.x0 or b.x1 <= a.x0


def test_a_best_over_meta_map_where_no_meta_value_varies_among_the_ok_trials():
    # a --time budget that stopped after a few trials: every config measured has BLOCK=256
    # (pandas 3.0 gives no records for a frame of no columns, and every report crashed)
    best = maps([t for t in TRIALS if t.choice["BLOCK"] == "256"])[-1]
    assert best.won_by.loc[32, "sms"] == "" and best.won_by.loc[64, "sms"] == ""
    assert cell_text(best).loc[64, "sms"] == "300"


def test_report_refuses_both_colour_scale_flags(tmp_path, capsys):
    """``--shared-scale`` is ``--scale problem``: given with ``--scale`` too, one of them
    would win silently, so the pair is refused in one line, exit 2, nothing written."""
    assert main(["report", str(tmp_path), "--shared-scale", "--scale", "map"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--scale: not allowed with argument --shared-scale" in err
    assert not list(tmp_path.iterdir())
