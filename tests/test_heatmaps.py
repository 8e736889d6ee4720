"""Heatmaps: which meta values won each cell, the winner's cell, colour scales, labels."""

import json
from itertools import combinations

import pytest

from sweeper.cli import main
from sweeper.report import (
    cell_text,
    heatmap_figure,
    heatmaps,
    study_tables,
    tick_labels,
    trials_frame,
)
from sweeper.report._heatmaps import short_names
from tests.test_report import TRIALS, copy_study, final, record

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


def test_colour_scales_are_per_map_unless_shared():
    own = maps()
    assert all(m.scale is None and "colour: this map's own range" in m.caption for m in own)
    shared = maps(shared_scale=True)
    assert [m.scale for m in shared] == [(50.0, 400.0)] * 3
    assert all("colour: one scale for this problem's 3 maps" in m.caption for m in shared)
    fig = heatmap_figure(shared[0])                    # BLOCK=256: its own range is 100-300
    assert fig.axes[0].collections[0].get_clim() == (50.0, 400.0)
    assert "colour: one scale" in fig.axes[0].get_title()
    assert heatmap_figure(own[0]).axes[0].collections[0].get_clim() == (100.0, 300.0)


def test_sweeper_report_shares_the_scale_on_request(tmp_path):
    store = copy_study(tmp_path)
    assert main(["report", str(store.root), "--shared-scale"]) == 0
    data = json.loads((store.root / "report.json").read_text())
    assert data["heatmaps"]["colour_scale"] == "shared by each problem's maps"
    assert data["heatmaps"]["drawn"] == ["float32_1GiB_cold_BLOCK-256",
                                         "float32_1GiB_cold_BLOCK-1024", "float32_1GiB_cold_best"]
    assert main(["report", str(store.root)]) == 0
    assert json.loads((store.root / "report.json").read_text())["heatmaps"][
        "colour_scale"] == "per map"


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
