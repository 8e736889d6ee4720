"""A report draws only the pictures whose input changed; PNG by default, SVG on request."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure

from sweeper.cli import main
from sweeper.report import write_report
from sweeper.report._figures import MANIFEST
from sweeper.store import StudyStore
from tests.test_report import BASE, TRIALS, copy_study

MAPS = ["float32_1GiB_cold_BLOCK-256", "float32_1GiB_cold_BLOCK-1024", "float32_1GiB_cold_best"]
#: sms, block 32, BLOCK=256: only its own map changes (the best over BLOCK there is #4's,
#: and the study's colour range, 50 to 400 GB/s, stays)
NEW = TRIALS[0]


@pytest.fixture
def saves(monkeypatch):
    """The file names each ``savefig`` wrote, in this process."""
    names: list[str] = []
    real = Figure.savefig

    def counted(self, fname, *args, **kwargs):
        names.append(kwargs.get("format", ""))
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counted)
    return names


def add(store: StudyStore, record) -> StudyStore:
    """``store`` with ``record`` appended, as a resumed sweep leaves it."""
    store.open_journal()
    store.append(record)
    store.close()
    return store


def test_an_unchanged_study_draws_nothing_and_a_new_trial_only_its_maps(tmp_path, saves):
    store = copy_study(tmp_path, records=[t for t in TRIALS if t is not NEW] + BASE)
    first = write_report(store, workers=1)
    assert [p.name for p in first.drawn] == [f"{m}.png" for m in MAPS] and len(saves) == 3
    manifest = json.loads((store.root / "heatmaps" / MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(f"{m}.png" for m in MAPS)
    again = write_report(store, workers=1)
    assert again.drawn == [] and len(saves) == 3
    assert again.images == first.images
    assert "![float32_1GiB_cold_best](heatmaps/float32_1GiB_cold_best.png)" in \
        again.markdown.read_text()
    resumed = write_report(add(store, NEW), workers=1)
    assert [p.name for p in resumed.drawn] == ["float32_1GiB_cold_BLOCK-256.png"]
    assert len(saves) == 4


def test_redraw_draws_all_and_a_lost_file_or_manifest_is_drawn_again(tmp_path, saves):
    store = copy_study(tmp_path)
    write_report(store, workers=1)
    assert len(write_report(store, workers=1, redraw=True).drawn) == 3
    (store.root / "heatmaps" / f"{MAPS[0]}.png").unlink()
    assert [p.stem for p in write_report(store, workers=1).drawn] == [MAPS[0]]
    (store.root / "heatmaps" / MANIFEST).write_text("{not json")
    assert len(write_report(store, workers=1).drawn) == 3
    assert len(saves) == 3 + 3 + 1 + 3


def test_svg_on_request_kept_while_current_removed_when_stale(tmp_path, capsys):
    store = copy_study(tmp_path, records=[t for t in TRIALS if t is not NEW] + BASE)
    folder = store.root / "heatmaps"
    assert main(["report", str(store.root)]) == 0
    assert not list(folder.glob("*.svg"))
    assert main(["report", str(store.root), "--svg"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (f"report: {store.root / 'report.md'}, report.html and report.json; "
                       f"3 heatmaps in {folder} (PNG and SVG; 3 drawn, 0 unchanged)")
    assert (folder / f"{MAPS[2]}.svg").read_text().lstrip().startswith("<?xml")
    assert main(["report", str(store.root)]) == 0           # PNG only: current SVGs stay
    assert capsys.readouterr().out.endswith("(PNG; 0 drawn, 3 unchanged)\n")
    assert len(list(folder.glob("*.svg"))) == 3
    add(store, NEW)
    assert main(["report", str(store.root)]) == 0           # its SVG would show old numbers
    assert capsys.readouterr().out.endswith("(PNG; 1 drawn, 2 unchanged)\n")
    assert sorted(p.stem for p in folder.glob("*.svg")) == sorted([MAPS[1], MAPS[2]])
    (folder / "mine.svg").write_text("<svg/>")                 # not sweeper's: never touched
    assert main(["report", str(store.root), "--redraw"]) == 0
    assert capsys.readouterr().out.endswith("(PNG; 3 drawn, 0 unchanged)\n")
    assert (folder / "mine.svg").read_text() == "<svg/>"


def test_a_pool_of_processes_draws_the_same_files(tmp_path):
    store = copy_study(tmp_path)
    serial = write_report(store, workers=1)
    sizes = {p.name: p.stat().st_size for p in serial.images}
    pooled = write_report(store, workers=2, redraw=True)
    assert pooled.drawn == serial.drawn
    assert {p.name: p.stat().st_size for p in pooled.images} == sizes


def test_axes_with_one_value_are_hidden_and_no_map_of_one_cell_is_drawn(tmp_path, capsys):
    assert main(["run", "spaces/torch-op-gelu.yaml", "--device", "interpret", "--quiet",
                 "--studies-dir", str(tmp_path)]) == 0
    root = tmp_path / "torch-op-gelu-interpret"
    # the interpreter keeps the four footprints apart (16, 8, 4 and 2 KiB): a footprint
    # curve per dtype, and no map
    said = capsys.readouterr().out.splitlines()
    assert [line for line in said if line.startswith("report: ")][-1] == (
        f"report: {root / 'report.md'}, report.html and report.json; 2 heatmaps in "
        f"{root / 'heatmaps'} (PNG; 2 drawn, 0 unchanged)")
    assert sorted(p.name for p in (root / "heatmaps").glob("*.png")) == [
        "footprint_bfloat16.png", "footprint_float32.png"]
    md = (root / "report.md").read_text()
    assert "| fixed | block | 32 |" in md and "| fixed | grid | 1 |" in md
    assert "| problem | # | median ms | median from | sweep median ms | GB/s |" in md
    assert "|  | # | median ms | 95% CI ms | CV % | GB/s | sweep median ms |" in md
    assert "| grid |" not in md.split("## Best config per problem")[1]
    assert "## Heatmaps" not in md
    data = json.loads((root / "report.json").read_text())
    assert data["heatmaps"]["drawn"] == [] and "grid" not in data["best"][0]


def test_a_picture_is_laid_out_once_per_file(tmp_path, monkeypatch):
    """``tight_layout`` leaves the figure a placeholder layout engine, and ``savefig`` then
    laid the whole figure out again before drawing it: every text measured twice."""
    draws: list[str] = []
    real = Figure.draw

    def counted(self, renderer):
        draws.append(type(renderer).__name__)
        return real(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    store = copy_study(tmp_path, records=TRIALS + BASE)
    out = write_report(store, workers=1)
    assert len(out.drawn) == len(MAPS) and len(draws) == len(MAPS)
