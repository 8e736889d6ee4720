"""Footprint curves and rooflines: the numbers behind each picture (not its pixels), the
`sweeper roofline` command end to end on replayed H200 studies, and the cases with
nothing to draw."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.plot_examples import COPY, MATMUL, combined_table
from sweeper import ceilings as ceiling_cache
from sweeper.bounds import Bound, Bounds
from sweeper.ceilings import Ceilings
from sweeper.cli import main
from sweeper.finals import Finalist, FinalRecord
from sweeper.measure import summarize
from sweeper.report import footprint_figure, roofline, roofline_figure, study_tables, write_report
from sweeper.report._footprint import l2_footprint
from sweeper.report._html import _footprint_chart, _roofline_chart
from sweeper.report._roofline import Winner
from sweeper.space import Config, Problem, format_size, parse_size
from sweeper.store import ProblemKey, StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from tests.api_fixtures import matmul_shapes
from tests.test_report import replayed

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "tests" / "data" / "replay"
GPU = "Fake GPU"
L2 = 8 << 10
KIB = 1 << 10
CEILINGS = Ceilings(gpu=GPU, uuid="u", driver="d", measured="2026-01-01T00:00:00+00:00",
                    copy={4 * KIB: {"cold": 100.0, "warm": 300.0},
                          16 * KIB: {"cold": 200.0, "warm": 400.0},
                          64 * KIB: {"cold": 400.0, "warm": 420.0},
                          1 << 30: {"cold": 4000.0, "warm": 4000.0}},
                    matmul={"bfloat16": 800.0, "tfloat32": 400.0, "float32": 50.0})
BOUNDS = Bounds(gpu=GPU, l2_bytes=L2, dram=Bound("DRAM", 5000e9, "test", "test"),
                flops={"bfloat16": Bound("bfloat16", 1000e12, "test", "test", True),
                       "float32": Bound("float32", 500e12, "test", "test", True)})


def trial(number, footprint, cache, block, gbps, dtype="float32"):
    """A measured copy trial: ``gbps`` at the median of samples 1 % apart."""
    median = 2 * footprint / (gbps * 1e9) * 1e3
    samples = [median * 0.99, median, median * 1.01] * 3
    stats = summarize(samples)
    return TrialRecord(
        number=number, status=TrialStatus.OK,
        choice={"grid": "sms", "block": str(block), "BLOCK": "1024", "dtype": dtype,
                "footprint": format_size(footprint), "cache": cache},
        config=Config(Problem(dtype, footprint), grid=132, block=block,
                      meta={"BLOCK": 1024}, cache=cache),
        samples_ms=samples, stats=stats, gbps=2 * footprint / (stats.median * 1e-3) / 1e9)


def _labels(records, axis: str) -> list[str]:
    """The labels of ``axis`` the trials among ``records`` chose, in order."""
    return list(dict.fromkeys(r.choice[axis] for r in records if hasattr(r, "choice")))


def study(tmp_path, records, limits=True, name="st"):
    store = StudyStore(tmp_path / name)
    store.create({"study": name, "kernel": "copy", "command": "sweeper run x.yaml",
                  "space_path": "x.yaml", "meta_axes": ["BLOCK"], "headline": "gbps",
                  "axes": {"grid": ["sms"], "block": ["32", "64"], "BLOCK": ["1024"],
                           "dtype": _labels(records, "dtype"),
                           "footprint": _labels(records, "footprint"),
                           "cache": _labels(records, "cache")},
                  "environment": {"gpu": GPU, "sms": 132, "l2_bytes": L2},
                  "fingerprint": {"device": "cuda"},
                  **({"ceilings": CEILINGS.to_json(), "bounds": BOUNDS.to_json()}
                     if limits else {})})
    for r in records:
        store.append(r)
    store.close()
    return store


#: 3 footprints x cold and warm x 2 configs (block 32 and 64): (footprint, cache) ->
#: (block 32 GB/s, block 64 GB/s)
RATES = {(4 * KIB, "cold"): (90.0, 80.0), (4 * KIB, "warm"): (250.0, 280.0),
         (16 * KIB, "cold"): (180.0, 150.0), (16 * KIB, "warm"): (350.0, 300.0),
         (64 * KIB, "cold"): (380.0, 300.0), (64 * KIB, "warm"): (390.0, 400.0)}


def three_footprints(tmp_path, **kw):
    records, n = [], 0
    for (fp, cache), rates in RATES.items():
        for block, gbps in zip((32, 64), rates, strict=True):
            records.append(trial(n, fp, cache, block, gbps))
            n += 1
    return study(tmp_path, records, **kw)


def test_a_footprint_curve_gives_each_problems_choice_its_ci_and_the_references(tmp_path):
    store = three_footprints(tmp_path)
    (curve,) = study_tables(store).footprint
    assert curve.name == "footprint_float32" and curve.metric == "gbps"
    points = curve.points
    assert list(zip(points["footprint"], points["cache"], strict=True)) == [
        (4 * KIB, "cold"), (4 * KIB, "warm"), (16 * KIB, "cold"), (16 * KIB, "warm"),
        (64 * KIB, "cold"), (64 * KIB, "warm")]
    assert list(points["rate"]) == pytest.approx([max(RATES[k]) for k in RATES])
    assert list(points["problem"])[:2] == ["float32 4KiB cold", "float32 4KiB warm"]
    assert (points["lo"] < points["rate"]).all() and (points["rate"] < points["hi"]).all()
    assert (points["median_from"] == "sweep").all()
    # the copy ceiling per cache mode across the curve's footprints, as reports interpolate it
    cold = curve.ceiling[curve.ceiling["cache"] == "cold"]
    assert list(cold["footprint"]) == [4 * KIB, 16 * KIB, 64 * KIB]
    assert list(cold["rate"]) == [100.0, 200.0, 400.0]
    assert list(curve.ceiling.loc[curve.ceiling["cache"] == "warm", "rate"]) == [300, 400, 420]
    assert curve.ceiling_label == "torch copy_, calibrated (2026-01-01T00:00:00+00:00)"
    assert curve.bound == 5000.0 and curve.bound_label == "DRAM bound 5000 GB/s (physical)"
    assert curve.l2_bytes == L2
    # one config (the 64KiB cold choice: block 32) at every footprint it was measured at
    assert list(curve.trace["rate"]) == pytest.approx([90.0, 180.0, 380.0])
    assert curve.trace_label == ("#8's config (sms block=32 BLOCK=1024), the 64KiB cold "
                                 "choice, at every footprint")
    assert "bars: that median's 95% CI" in curve.caption and "the 8KiB L2" in curve.caption
    ax = footprint_figure(curve).axes[0]
    assert ax.get_xscale() == "log" and ax.get_ylim()[0] == 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4KiB", "16KiB", "64KiB"]
    files = write_report(store, formats=("png", "svg"))
    assert {p.name for p in files.images} >= {"footprint_float32.png", "footprint_float32.svg"}
    md = files.markdown.read_text()
    assert "## Footprint curves" in md
    assert "copy bandwidth measured at the trial's own footprint and cache mode, a " \
        "measurement, not a physical limit: a kernel faster than torch's copy_ reads above " \
        "100" in md
    assert "![footprint_float32](heatmaps/footprint_float32.png)" in md
    data = json.loads(files.json.read_text())["footprint_curves"][0]
    assert [p["rate"] for p in data["points"]] == pytest.approx(list(points["rate"]))
    assert data["bound"]["value"] == 5000.0 and data["l2_bytes"] == L2


def test_a_footprint_of_no_round_size_ticks_in_the_largest_unit_it_reaches(tmp_path):
    """A footprint that no binary unit divides (3·10⁷ bytes: a problem named by its
    dimensions, or in decimal bytes) is a tick in MiB to three digits, as the report says
    a size it worked out, in the picture and in report.html alike (its exact bytes,
    ``30000000B``, read as a count to squint at); a round one keeps its unit."""
    records = [trial(0, 30_000_000, "cold", 32, 900.0), trial(1, 3_000_000, "cold", 32, 800.0),
               trial(2, 64 * KIB, "cold", 32, 300.0)]
    (curve,) = study_tables(study(tmp_path, records, limits=False)).footprint
    ticks = ["64KiB", "2.86MiB", "28.6MiB"]
    ax = footprint_figure(curve).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ticks
    chart = _footprint_chart(curve)
    assert [label for _, label in chart["xticks"]] == ticks
    assert [x for x, _ in chart["xticks"]] == [64 * KIB, 3_000_000, 30_000_000]
    dotted = next(s for s in chart["series"] if s["kind"] == "dotted")
    assert [p[-1].split(":")[0] for p in dotted["points"]] == ticks


def test_a_point_is_the_finals_winner_at_the_finals_median_and_ci(tmp_path):
    records = [trial(0, 4 * KIB, "cold", 32, 90.0), trial(1, 4 * KIB, "cold", 64, 80.0),
               trial(2, 16 * KIB, "cold", 32, 180.0)]
    # re-measured together, #1 (the sweep's slower) won at 0.1 ms: 81.92 GB/s
    samples = [0.099, 0.1, 0.101] * 10
    final = FinalRecord(problem=ProblemKey("float32", 4 * KIB), tied=[1, 0], winner=1,
                        finalists=[Finalist(number=n, samples_ms=samples,
                                            stats=summarize(samples)) for n in (1, 0)])
    (curve,) = study_tables(study(tmp_path, [*records, final])).footprint
    first = curve.points.iloc[0]
    assert first["number"] == 1 and first["median_ms"] == pytest.approx(0.1)
    assert first["rate"] == pytest.approx(2 * 4 * KIB / 1e-4 / 1e9)
    stats = summarize(samples)
    assert first["lo"] == pytest.approx(2 * 4 * KIB / (stats.ci_hi * 1e-3) / 1e9)
    assert first["median_from"].startswith("interleaved final")


def test_a_replayed_h200_copy_over_five_footprints(tmp_path):
    table, space = combined_table(tmp_path, *COPY)      # the recorded 8MiB to 4GiB tables
    store = replayed(table, space, tmp_path / "copy")
    tables = study_tables(store)
    (curve,) = tables.footprint
    best: dict[int, float] = {}
    for row in csv.DictReader(line for line in table.read_text().splitlines()
                              if not line.startswith("#")):
        if row["status"] == "ok":
            fp = parse_size(row["footprint"])
            best[fp] = max(best.get(fp, 0.0), 2 * fp / (float(row["median_ms"]) * 1e-3) / 1e9)
    assert list(curve.points["footprint"]) == sorted(best)
    assert list(curve.points["rate"]) == pytest.approx([best[fp] for fp in sorted(best)])
    assert 1900 < best[8 << 20] < 2000 and best[4 << 30] > 4250       # L2 to DRAM
    assert curve.l2_bytes == 60 << 20                                 # the recorded GPU's
    assert len(curve.trace) == 5 and curve.trace_label.endswith("the 4GiB cold choice, at "
                                                                "every footprint")
    assert curve.bound is None and curve.ceiling.empty                # a replay has neither
    assert tables.roofline is None


def _l2_line(curve):
    """Where the footprint curve's picture and report.html draw the L2: (x, x)."""
    ax = footprint_figure(curve).axes[0]
    (line,) = [li for li in ax.get_lines() if li.get_label().startswith("L2 ")]
    (vline,) = _footprint_chart(curve)["vlines"]
    return line.get_xdata()[0], vline[0]


def test_the_l2_line_stands_where_the_working_set_fills_the_l2_not_the_footprint(tmp_path):
    # copy fp16 on the H200 (60 MiB L2) at 32 MiB to 2 GiB: a footprint is one array, a
    # launch's working set two, so 32 MiB (64 MiB touched) does not fit in the L2
    table, space = combined_table(tmp_path, ["h200-copy-fp16-32m.csv",
                                             "h200-copy-fp16-512m.csv", "h200-copy-fp16.csv",
                                             "h200-copy-fp16-2g.csv"],
                                  ["32MiB", "512MiB", "1GiB", "2GiB"], "spaces/copy.yaml")
    space.write_text(space.read_text().replace("dtype: [float32]", "dtype: [float16]"))
    (curve,) = study_tables(replayed(table, space, tmp_path / "copy")).footprint
    points = curve.points
    assert list(points["working_set"]) == [2 * fp for fp in points["footprint"]]
    assert curve.l2_bytes == 60 << 20 and curve.l2_footprint == 30 << 20
    assert _l2_line(curve) == (30 << 20, 30 << 20)
    # left of the line is what fits in the L2
    assert list(points["footprint"] < curve.l2_footprint) == \
        list(points["working_set"] <= curve.l2_bytes) == [False] * 4
    assert "the 60MiB L2, at the footprint whose working set (the bytes a launch touches) " \
        "fills it, 30MiB: left of it a problem fits in the L2" in curve.caption


def test_the_l2_line_follows_the_recorded_working_set(tmp_path):
    # an in-place kernel's launch touches its footprint alone: the L2 line is at the L2
    in_place = three_footprints(tmp_path / "a").records()[0]
    for r in in_place:
        r.working_set = r.config.problem.footprint
    (curve,) = study_tables(study(tmp_path, in_place, name="in-place")).footprint
    assert curve.l2_footprint == L2 and _l2_line(curve) == (L2, L2)
    # trials that recorded none (an older sweeper's) stand at the bytes a launch moves, the
    # kernel's working set unless it says otherwise: a copy's two arrays
    (curve,) = study_tables(three_footprints(tmp_path / "b")).footprint
    assert list(curve.points["working_set"]) == [2 * fp for fp in curve.points["footprint"]]
    assert curve.l2_footprint == L2 // 2 and _l2_line(curve) == (L2 // 2, L2 // 2)
    # between two footprints whose ratio of working set to footprint differs, on log scales
    points = pd.DataFrame({"footprint": [1 << 20, 4 << 20], "working_set": [1 << 20, 16 << 20]})
    assert l2_footprint(points, 4 << 20) == pytest.approx(2 << 20)
    assert l2_footprint(points, 0) == 0 and l2_footprint(points.assign(working_set=0), 8) == 0


def test_a_tflops_curve_is_held_against_the_matmul_ceiling_and_flop_bound(tmp_path):
    table, space = combined_table(tmp_path, *MATMUL)    # 1024³, 2048³ and 4096³ bf16
    store = replayed(table, space, tmp_path / "mm")
    store.update_meta(ceilings=CEILINGS.to_json(), bounds=BOUNDS.to_json())
    tables = study_tables(store)
    (curve,) = tables.footprint
    assert curve.metric == "tflops" and list(curve.points["footprint"]) == [2 << 20, 8 << 20,
                                                                           32 << 20]
    side = [1024, 2048, 4096]
    assert list(curve.points["rate"]) == pytest.approx(
        [2 * s ** 3 / (m * 1e-3) / 1e12 for s, m in zip(side, curve.points["median_ms"],
                                                          strict=True)])
    assert set(curve.ceiling["rate"]) == {800.0}
    assert curve.ceiling_label == "torch.matmul bfloat16 8192³, calibrated"
    assert curve.bound == 1000.0
    # ... and its winners are points on the study's roofline, against the bf16 roofs
    roof = tables.roofline
    assert list(roof.points["problem"]) == [f"bfloat16 M={n} N={n} K={n} cold"
                                            for n in (1024, 2048, 4096)]
    big = roof.points.iloc[2]
    assert big["intensity"] == pytest.approx(2 * 4096 ** 3 / (3 * (32 << 20)))
    assert big["pct_roof"] == pytest.approx(100 * big["flop_s"] / 800e12)
    md = write_report(store, draw=False).markdown.read_text()
    assert "## Roofline" in md and "compute: bfloat16 matmul 800 TFLOP/s" in md


def test_nothing_is_drawn_for_one_footprint_or_a_dtype_with_one(tmp_path):
    one = study(tmp_path, [trial(0, 4 * KIB, "cold", 32, 90.0),
                           trial(1, 4 * KIB, "warm", 32, 250.0)])
    tables = study_tables(one)
    assert tables.footprint == []
    files = write_report(one)
    assert not [p for p in files.images if p.name.startswith("footprint")]
    assert "Footprint" not in files.markdown.read_text()
    assert json.loads(files.json.read_text())["footprint_curves"] == []
    # two dtypes: float16 has two footprints, float32 one: one curve, float16's
    mixed = study(tmp_path, [trial(0, 4 * KIB, "cold", 32, 90.0),
                             trial(1, 4 * KIB, "cold", 32, 95.0, dtype="float16"),
                             trial(2, 16 * KIB, "cold", 32, 150.0, dtype="float16")],
                  name="mixed")
    assert [c.name for c in study_tables(mixed).footprint] == ["footprint_float16"]
    # a copy study has no FLOPs: no point to place, no roofline section
    assert study_tables(three_footprints(tmp_path / "copy")).roofline is None


def test_shapes_that_share_a_footprint_draw_no_curve(tmp_path):
    """Two matmul shapes of one footprint (8192 x 8192 x 256 and 8192³: 128 MiB of bf16
    each) are two problems at one x: their rates are no function of the footprint, so no
    curve joins them (it drew a vertical step, and the dotted config at 128 MiB was the
    other shape's rate)."""
    table, space = matmul_shapes(
        tmp_path, ["h200-matmul-short-k.csv", "h200-matmul-k256.csv", "h200-matmul-8k-cool.csv"],
        [(2048, 8192, 1024), (8192, 8192, 256), (8192, 8192, 8192)])
    store = replayed(table, space, tmp_path / "st")
    tables = study_tables(store)
    assert list(tables.picks["problem"]) == [
        "bfloat16 M=2048 N=8192 K=1024 cold", "bfloat16 M=8192 N=8192 K=256 cold",
        "bfloat16 M=8192 N=8192 K=8192 cold"]
    assert tables.footprint == []
    files = write_report(store, draw=False)
    assert "Footprint" not in files.markdown.read_text()
    assert json.loads(files.json.read_text())["footprint_curves"] == []


def winners():
    def w(kernel, dtype, problem, flops, nbytes, ms):
        return Winner("s", kernel, dtype, problem, 0, flops, nbytes, ms * 1e-3)
    return [w("matmul", "bfloat16", "bfloat16 32MiB cold", 2 * 4096 ** 3, 3 * (32 << 20), 0.2),
            w("add", "float32", "float32 1GiB cold", 1 << 28, 3 << 30, 1.0),
            w("matmul", "float32", "float32 16MiB cold", 2 * 2048 ** 3, 3 * (16 << 20), 0.1),
            w("copy", "float32", "float32 1GiB cold", 0, 2 << 30, 0.6)]


def test_roofline_points_and_roofs_from_ceilings_and_bounds():
    roof = roofline(GPU, winners(), CEILINGS, BOUNDS, "sweeper calibrate, test")
    assert [(r.name, r.kind, r.per_s, r.calibrated) for r in roof.roofs] == [
        ("DRAM copy 4000 GB/s", "memory", 4000e9, True),
        ("DRAM bound 5000 GB/s", "memory", 5000e9, False),
        ("bfloat16 matmul 800 TFLOP/s", "compute", 800e12, True),
        ("bfloat16 bound 1000 TFLOP/s", "compute", 1000e12, False),
        ("float32 matmul 400 TFLOP/s (as tfloat32)", "compute", 400e12, True),
        ("float32 bound 500 TFLOP/s", "compute", 500e12, False)]
    mm, add, mm32 = (roof.points.iloc[i] for i in range(3))
    assert mm["intensity"] == pytest.approx(2 * 4096 ** 3 / (3 * (32 << 20)))
    assert mm["flop_s"] == pytest.approx(2 * 4096 ** 3 / 0.2e-3)
    assert mm["roof"] == "compute: bfloat16 matmul 800 TFLOP/s"
    assert mm["pct_roof"] == pytest.approx(100 * mm["flop_s"] / 800e12)
    assert mm["pct_physical"] == pytest.approx(100 * mm["flop_s"] / 1000e12)
    assert add["intensity"] == pytest.approx(1 / 12)               # 1 FLOP per 12 bytes
    assert add["roof"] == "memory: DRAM copy 4000 GB/s"
    assert add["pct_roof"] == pytest.approx(100 * (3 << 30) / 1e-3 / 4000e9)
    assert add["pct_physical"] == pytest.approx(100 * (3 << 30) / 1e-3 / 5000e9)
    assert mm32["roof"] == "compute: float32 matmul 400 TFLOP/s (as tfloat32)"
    assert roof.beside == ["copy float32 1GiB cold (#0, s): 0 FLOP, 3579 GB/s, 89.5% of the "
                           "memory roof (DRAM copy 4000 GB/s), 71.6% of the physical bound "
                           "(DRAM bound 5000 GB/s)"]
    assert list(roof.points["above"]) == ["", "", ""]                 # none passes 100 %
    assert roof.roofs[0].source == ("torch copy_'s bandwidth, cold, at its largest footprint, "
                                    "measured by sweeper calibrate, test")
    assert roof.roofs[1].source == "a physical bound, from test"
    fig = roofline_figure(roof)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log" and len(fig.axes) == 2    # + the list
    labels = ax.get_legend_handles_labels()[1]
    assert "winners without FLOPs: listed at right" in labels
    assert "bfloat16 bound 1000 TFLOP/s" in labels
    assert " ".join(ax.get_title().split()).endswith("; dashed: physical bounds")
    assert roof.key == "solid: measured by sweeper calibrate, test; dashed: physical bounds"


def test_a_share_above_100_percent_of_a_roof_says_why_wherever_it_is_shown(tmp_path):
    def w(kernel, flops, nbytes, ms):
        return Winner("s", kernel, "bfloat16", f"bfloat16 {kernel}", 7, flops, nbytes, ms * 1e-3)
    # above the measured roofs, under the physical ones: faster than torch, as kernels may be
    fast = [w("matmul", 2 * 4096 ** 3, 3 * (32 << 20), 0.16), w("copy", 0, 2 << 30, 0.5)]
    roof = roofline(GPU, fast, CEILINGS, BOUNDS, "sweeper calibrate, test")
    point = roof.points.iloc[0]
    assert point["pct_roof"] == pytest.approx(107.4, abs=0.1) and point["pct_physical"] < 100
    measured = "above the measured roof: the roof is a measurement ({}), not a physical limit"
    assert point["above"] == measured.format(
        "torch.matmul's rate at 8192³ on bfloat16, measured by sweeper calibrate, test")
    assert roof.beside == ["copy bfloat16 copy (#7, s): 0 FLOP, 4295 GB/s, 107.4% of the memory "
                           "roof (DRAM copy 4000 GB/s), 85.9% of the physical bound (DRAM bound "
                           "5000 GB/s): " + measured.format(
                               "torch copy_'s bandwidth, cold, at its largest footprint, "
                               "measured by sweeper calibrate, test")]
    # ... in the picture, the command's lines (beside), report.html's hover and report.md
    labels = [t.get_text() for t in roofline_figure(roof).axes[0].texts]
    assert "matmul bfloat16 matmul\n107% of roof (above the measured roof)" in labels
    chart = _roofline_chart(roof)
    assert chart["series"][0]["points"][0][5].endswith("% of the roof (compute: bfloat16 matmul "
                                                       "800 TFLOP/s): " + point["above"])
    assert chart["caption"].startswith("solid: measured by sweeper calibrate, test; dashed: ")
    assert chart["series"][1]["points"][0][5] == "DRAM copy 4000 GB/s: " + roof.roofs[0].source
    # above a physical bound, only by what the bound check allows, or beyond it
    big_l2 = Bounds(gpu=GPU, l2_bytes=1 << 30, dram=BOUNDS.dram, flops=BOUNDS.flops)
    for bounds, ms, said in (
            (big_l2, 0.3, "above the DRAM bound: up to 2× the 1GiB L2 of a launch's traffic "
                          "need not pass through DRAM, as the bound check allows"),
            (BOUNDS, 0.418, "above the physical bound: by less than the 5% the bound check "
                            "allows for the timer's resolution and clock jitter"),
            (BOUNDS, 0.3, "beyond the physical bound: the bound check fails a trial this "
                          "fast as impossible, so this median was not checked against it")):
        add = Winner("s", "add", "float32", "float32 add", 1, 1 << 28, 2 << 30, ms * 1e-3)
        point = roofline(GPU, [add], None, bounds).points.iloc[0]
        assert point["pct_roof"] == point["pct_physical"] > 100 and point["above"] == said
        line = roofline(GPU, [add._replace(flops=0)], None, bounds).beside[0]
        assert line.endswith("% of the memory roof (DRAM bound 5000 GB/s): " + said)
    # report.md says what each roof is and why a share passes 100 %
    table, space = combined_table(tmp_path, *MATMUL)
    store = replayed(table, space, tmp_path / "mm")
    store.update_meta(ceilings=Ceilings(**{**CEILINGS.to_json(),
                                           "matmul": {"bfloat16": 700.0}}).to_json(),
                      bounds=BOUNDS.to_json())
    md = write_report(store, draw=False).markdown.read_text()
    assert "bfloat16 matmul 700 TFLOP/s (torch.matmul's rate at 8192³ on bfloat16, measured " \
        "by sweeper calibrate, 2026-01-01T00:00:00+00:00)" in md
    assert "DRAM bound 5000 GB/s (a physical bound, from test)" in md
    assert "| above 100% |" in md and "| " + measured.format(
        "torch.matmul's rate at 8192³ on bfloat16, measured by sweeper calibrate, "
        "2026-01-01T00:00:00+00:00") + " |" in md


def test_roofline_with_bounds_only_and_its_refusal_without_either():
    roof = roofline(GPU, winners()[:1], None, BOUNDS)
    assert all(not r.calibrated for r in roof.roofs)
    assert roof.key == "no calibrated ceilings; dashed: physical bounds"
    solid = roofline(GPU, winners()[:1], CEILINGS, None, "sweeper calibrate, test")
    title = " ".join(roofline_figure(solid).axes[0].get_title().split())
    assert title.endswith("; no physical bounds (none recorded)") and "dashed" not in title
    point = roof.points.iloc[0]
    assert point["pct_roof"] == pytest.approx(point["pct_physical"])
    assert point["roof"] == "compute: bfloat16 bound 1000 TFLOP/s"
    with pytest.raises(Exception, match=r"^no roofline for Fake GPU: neither ceilings nor "
                       r"physical bounds are known for it \(run `sweeper calibrate` on it;"):
        roofline(GPU, winners(), None, Bounds.none(GPU, "replayed"))


@pytest.fixture
def replay_studies(tmp_path):
    """A copy and a matmul study replayed from the recorded H200 tables."""
    d = tmp_path / "studies"
    replayed(TABLES / "h200-copy.csv", ROOT / "spaces/copy.yaml", d / "copy")
    replayed(TABLES / "h200-matmul.csv", ROOT / "spaces/matmul.yaml", d / "matmul")
    return d


def _one_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_sweeper_roofline_end_to_end(replay_studies, tmp_path, capsys, monkeypatch):
    d = replay_studies
    # replayed studies record no bounds; with no ceilings either, there is no roofline
    assert main(["roofline", "--studies-dir", str(d)]) == 2
    assert _one_line(capsys) == ("sweeper: no roofline for replay: NVIDIA H200: replayed "
                                 "timings are served as recorded; the table does not record "
                                 "the GPU's clocks and bus width; a roofline needs studies "
                                 "measured on a CUDA GPU, which record its physical bounds")
    assert not (d / "roofline.png").exists()
    # the ceilings cache for the GPU a study names (its UUID and driver) is read
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    store = StudyStore(d / "matmul")
    env = store.meta()["environment"]
    store.update_meta(environment={**env, "gpu_uuid": "u-1", "driver": "580"})
    ceiling_cache.save(Ceilings(**{**CEILINGS.to_json(), "gpu": env["gpu"], "uuid": "u-1",
                                   "driver": "580", "copy": {1 << 30: {"cold": 4200.0,
                                                                      "warm": 4200.0}}}))
    assert main(["roofline", "--studies-dir", str(d)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("roofline of replay: NVIDIA H200: 2 winners of 2 studies; roofs "
                      "(solid: measured by sweeper calibrate, 2026-01-01T00:00:00+00:00, from "
                      "the ceilings cache; no physical bounds (none recorded)): DRAM copy 4200 "
                      "GB/s; bfloat16 matmul 800 TFLOP/s")          # no dashed roof claimed
    assert out[1].startswith("matmul bfloat16 M=4096 N=4096 K=4096 cold (#4, matmul): 1365 FLOP/B, "
                             "746.8 TFLOP/s, 93.")
    assert out[2].startswith("copy float32 1GiB cold (#") and out[2].endswith(
        "0 FLOP, 4256 GB/s, 101.3% of the memory roof (DRAM copy 4200 GB/s): above the "
        "measured roof: the roof is a measurement (torch copy_'s bandwidth, cold, at its "
        "largest footprint, measured by sweeper calibrate, 2026-01-01T00:00:00+00:00, from the "
        "ceilings cache), not a physical limit")
    assert out[3:] == [f"wrote {d / 'roofline.png'}", f"wrote {d / 'roofline.svg'}"]
    assert (d / "roofline.png").stat().st_size > 1000
    # named studies, one file in the format its suffix names
    svg = tmp_path / "one.svg"
    assert main(["roofline", "matmul", "--studies-dir", str(d), "-o", str(svg)]) == 0
    assert "1 winner of 1 study;" in capsys.readouterr().out
    assert svg.read_text().lstrip().startswith("<?xml")
    # a study named twice, by its name and by its folder, is placed once
    assert main(["roofline", "matmul", str(d / "matmul"), "--studies-dir", str(d),
                 "-o", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "1 winner of 1 study;" in out and out.count("(#4, matmul)") == 1
    # a folder whose study.json is not one is skipped with a one-line warning
    (d / "broken").mkdir()
    (d / "broken" / "study.json").write_text("nope")
    assert main(["roofline", "--studies-dir", str(d), "-o", str(svg)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (f"sweeper: warning: {d / 'broken'}: skipped: "
                            f"{d / 'broken' / 'study.json'}:1: not JSON (Expecting value, "
                            "column 1); restore it, or move the study folder away\n")
    assert "2 winners of 2 studies;" in captured.out


def test_sweeper_roofline_refuses_with_one_line(replay_studies, tmp_path, capsys):
    d = replay_studies
    assert main(["roofline", "--studies-dir", str(d), "-o", str(tmp_path / "r.pdf")]) == 2
    assert _one_line(capsys) == (f"sweeper: -o {tmp_path / 'r.pdf'}: the suffix '.pdf' names "
                                 "no picture format; allowed: .png, .svg")
    assert main(["roofline", "--studies-dir", str(tmp_path / "none")]) == 2
    assert _one_line(capsys) == (f"sweeper: no study in {tmp_path / 'none'}; name studies, "
                                 "or give --studies-dir")
    store = StudyStore(d / "copy")
    store.update_meta(environment={**store.meta()["environment"], "gpu": "Other GPU"})
    assert main(["roofline", "--studies-dir", str(d)]) == 2
    assert _one_line(capsys) == (
        "sweeper: the studies were measured on 2 GPUs (Other GPU: copy; replay: NVIDIA H200: "
        "matmul); a roofline is of one GPU: name its studies, or pick it with --gpu")
    assert main(["roofline", "--studies-dir", str(d), "--gpu", "Third"]) == 2
    assert _one_line(capsys) == ("sweeper: --gpu 'Third': no study measured on it; the "
                                 "studies' GPUs: Other GPU, replay: NVIDIA H200")
    assert not list(d.glob("roofline.*")) and not list(tmp_path.glob("r.*"))


def test_sweeper_roofline_with_nothing_measured_exits_1(tmp_path, capsys):
    failed = trial(0, 4 * KIB, "cold", 32, 90.0)
    failed.status, failed.reason, failed.stats = TrialStatus.WRONG_ANSWER, "wrong", None
    study(tmp_path, [failed])
    assert main(["roofline", "st", "--studies-dir", str(tmp_path)]) == 1
    assert _one_line(capsys) == ("sweeper: nothing to place on the roofline of Fake GPU: no "
                                 "study of it measured a config")
    assert not list(tmp_path.glob("roofline.*"))
