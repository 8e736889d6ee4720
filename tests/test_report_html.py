"""report.html: one self-contained page written beside report.md from the same computed
tables, text from the study shown only as text, a notebook's fragment, and, in a real
browser (headless Chromium, :mod:`tests.browser`), pages that load without a console
error, draw their heatmaps, charts and trial table, answer a filter, a sort and a hover,
and are not blank on screen."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.api import Study
from sweeper.ceilings import Ceilings
from sweeper.devices import open_device
from sweeper.escape import script_json
from sweeper.report import study_tables, write_report
from sweeper.report._html import html_page, report_data
from sweeper.trial import TrialStatus
from tests.conftest import sweep_study
from tests.test_plots import three_footprints
from tests.test_report import BASE, TRIALS, copy_study, record, replayed

#: A failure reason that would run script, load an image and close the JSON block if it
#: were ever written as markup.
HOSTILE = ("</script><script>document.body.setAttribute('data-pwned', 1)</script>"
           "<img src=x onerror=\"document.body.setAttribute('data-pwned', 2)\"> & more")
#: TRIALS with #3's wrong answer given the hostile reason.
HOSTILE_TRIALS = [record(3, "2*sms", 64, 256, 0.0, TrialStatus.WRONG_ANSWER, HOSTILE, 264)
                  if t.number == 3 else t for t in TRIALS]


def data_of(page: str) -> dict:
    """The JSON block the page's script draws from, as the script reads it."""
    return json.loads(re.search(r'<script type="application/json" class="sw-data">(.*?)'
                                r"</script>", page, re.S).group(1))


def trial_table(data: dict) -> list[dict]:
    """The page's trial table as the script reads it: one dict a trial, text put back
    from the columns written as indices into their ``levels``."""
    trials = data["trials"]
    levels = trials["levels"]
    return [{c: levels[c][v] if c in levels else v for c, v in zip(trials["columns"], row,
                                                                    strict=True)}
            for row in trials["rows"]]


def test_the_report_writes_report_html_beside_report_md_from_the_same_tables(tmp_path):
    store = copy_study(tmp_path)
    files = write_report(store, draw=False)
    assert files.html == store.root / "report.html" and files.html.exists()
    page = files.html.read_text(encoding="utf-8")
    tables = study_tables(store)
    data = data_of(page)
    assert data == json.loads(script_json(report_data(tables)))
    # every trial, by number, with its full reason
    trials = trial_table(data)
    assert [t["number"] for t in trials] == list(tables.frame["number"])
    assert trials[3]["reason"] == \
        "7 of 10 elements differ from the input (first at index 3: nan != 0.5)"
    assert trials[3]["status"] == "wrong_answer" and trials[3]["BLOCK"] == 256
    # a rate means nothing for a trial without a number: missing, not 0
    assert [t["gbps"] for t in trials if t["number"] in (3, 5)] == [None, None]
    # each heatmap cell names the trial it shows, whose rate it is
    rates = dict(zip(tables.frame["number"], tables.frame["gbps"], strict=True))
    overview = data["maps"][-1]
    assert overview["name"].endswith("_best")
    cells = [c for row in overview["cells"] for c in row]
    assert [(c[0], c[1]) for c in cells if c[0] is not None] == [
        (rates[c[1]], c[1]) for c in cells if c[0] is not None]
    assert overview["best"] == [0, 0] and overview["cells"][0][0][:3] == [400.0, 4, "400"]
    # the failures with their full reasons, the provenance
    assert "1 wrong_answer: elements differ from the input" in page
    assert "<pre>7 of 10 elements differ from the input (first at index 3: nan != 0.5)</pre>" \
        in page
    assert "<td>reproduce</td><td>sweeper run x.yaml --device cuda --study st</td>" in page
    assert "<td>command</td><td>`sweeper run x.yaml` (reproduce: " in page


def test_the_page_shows_the_baselines_its_best_configs_are_a_percentage_of(tmp_path):
    # the best configs' "% of torch copy_" column is relative to the sweep's baseline,
    # not the finals' one: the page shows that baseline's table, as report.md does, and
    # says what the best configs' numbers are
    files = write_report(copy_study(tmp_path), draw=False)
    page, md = files.html.read_text(encoding="utf-8"), files.markdown.read_text()
    assert "<th>% of torch copy_</th>" in page
    section = page.split('-baselines">Baselines (same timer, same runs, same GPU)</h2>')[1]
    table = section.split("</table>")[0]
    assert "<td>torch copy_</td><td>float32</td><td>1GiB</td><td>cold</td>" in table
    md_row = next(line for line in md.splitlines() if line.startswith("| torch copy_ |"))
    assert [f"<td>{cell}</td>" in table for cell in md_row.strip("| ").split(" | ")] == \
        [True] * len(md_row.strip("| ").split(" | "))
    assert "<p>Medians, their ±CI % (half the 95% interval, in % of the median) and rates " \
        "are the sweep&#x27;s.</p>" in page


def test_the_page_is_self_contained(tmp_path):
    page = write_report(copy_study(tmp_path), draw=False).html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for fetches in ("src=", "<link", "@import", "url(http", "fetch(", "XMLHttpRequest"):
        assert fetches not in page
    assert set(re.findall(r"https?://[^\s\"')]+", page)) == {"http://www.w3.org/2000/svg"}


def test_text_from_the_study_is_shown_as_text(tmp_path):
    store = copy_study(tmp_path, records=[*HOSTILE_TRIALS, *BASE])
    store.update_meta(environment={"gpu": "<b>GPU</b>", "sms": 132})
    page = html_page(study_tables(store))
    for markup in ("<script>document", "<img", "<b>GPU"):
        assert markup not in page
    assert f"<pre>{html.escape(HOSTILE)}</pre>" in page
    assert "&lt;b&gt;GPU&lt;/b&gt;" in page
    # the JSON block holds it whole, and cannot end its own <script> element
    block = re.search(r'class="sw-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in block and "\\u003c/script\\u003e" in block
    assert HOSTILE in [t["reason"] for t in trial_table(data_of(page))]


def test_a_study_renders_itself_in_a_notebook(tmp_path):
    store = copy_study(tmp_path)
    study = Study(store.root)
    first, second = study._repr_html_(), study._repr_html_()
    assert first.startswith('<div class="sweeper-report" id="sweeper-')
    assert first.rstrip().endswith("</div>") and "<html" not in first
    ids = [re.match(r'<div class="sweeper-report" id="([^"]+)"', f).group(1)
           for f in (first, second)]
    assert ids[0] != ids[1]          # two outputs of one notebook do not share an id
    assert data_of(first) == data_of(second)
    assert not (store.root / "report.html").exists()       # showing writes nothing


def test_ipython_displays_a_study_as_its_report(tmp_path):
    from IPython.core.formatters import DisplayFormatter

    store = copy_study(tmp_path)
    shown, _ = DisplayFormatter().format(Study(store.root))
    assert shown["text/html"].startswith('<div class="sweeper-report" id="sweeper-')
    assert shown["text/plain"] == f"Study({str(store.root)!r})"


def not_blank(png: Path) -> None:
    """A screenshot that shows something: pixels that vary, a good share not white."""
    import matplotlib.image

    grey = matplotlib.image.imread(png)[..., :3].mean(axis=2)
    assert grey.std() > 0.05, f"{png}: a blank screenshot (pixel std {grey.std():.3f})"
    assert (grey < 0.9).mean() > 0.02


def opens_cleanly(loaded) -> None:
    """No console line, no error written into the page, and the script ran to its end."""
    assert loaded.console == []
    assert 'class="sw-error"' not in loaded.dom
    assert 'data-drawn="yes"' in loaded.dom
    not_blank(loaded.screenshot)


#: Counts the heatmap cells drawn, unfolds the folded maps, counts again, and the trial
#: table's rows; writes them into the page.
UNFOLD = """<script>
(function () {
  var root = document.querySelector(".sweeper-report"), out = {};
  out.before = root.querySelectorAll("rect.sw-cell").length;
  root.querySelectorAll("details").forEach(function (d) {
    if (d.querySelector("figure.sw-map")) { d.open = true; d.dispatchEvent(new Event("toggle")); }
  });
  out.after = root.querySelectorAll("rect.sw-cell").length;
  out.rows = root.querySelectorAll(".sw-trials tbody tr").length;
  document.body.setAttribute("data-test", JSON.stringify(out));
})();
</script></body>"""


def driven(page: Path, script: str) -> Path:
    """A copy of ``page`` that runs ``script`` (ending ``</body>``) after the report's own."""
    copy = page.with_name(f"driven-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", script),
                    encoding="utf-8")
    return copy


def seen(loaded) -> Any:
    """What a driving script wrote into the page (JSON in ``body[data-test]``)."""
    return json.loads(html.unescape(re.search(r'data-test="([^"]*)"', loaded.dom).group(1)))


def test_an_interpreted_copy_report_opens_in_a_browser(tmp_path, small_space, browser):
    store, _ = sweep_study(small_space, open_device("interpret"), tmp_path / "copy")
    files = write_report(store, draw=False)
    loaded = browser.load(driven(files.html, UNFOLD), tmp_path / "copy.png")
    opens_cleanly(loaded)
    data = data_of(files.html.read_text(encoding="utf-8"))
    cells = [sum(len(row) for row in m["cells"]) for m in data["maps"]]
    assert [m["name"] for m in data["maps"]][-1].endswith("_best")
    # the overview drawn at once, the maps folded away when unfolded
    assert seen(loaded) == {"before": cells[-1], "after": sum(cells), "rows": 8}
    # a cell whose CI is wide is hatched in its map (the driving script unfolded them all)
    wide = sum(1 for m in data["maps"] for row in m["cells"] for c in row if c[4] is not None)
    assert loaded.dom.count('class="sw-wide"') == wide


def test_a_replayed_matmul_report_with_its_roofline_opens_in_a_browser(tmp_path, browser):
    store = replayed("tests/data/replay/h200-matmul.csv", "spaces/matmul.yaml", tmp_path / "mm")
    ceilings = Ceilings(gpu="NVIDIA H200", uuid="", driver="", matmul={"bfloat16": 800.0},
                        copy={1 << 30: {"cold": 4000.0, "warm": 4000.0}})
    store.update_meta(ceilings=ceilings.to_json())
    files = write_report(store, draw=False)
    loaded = browser.load(files.html, tmp_path / "mm.png")
    opens_cleanly(loaded)
    assert 'figure class="sw-chart"' in loaded.dom and 'class="sw-pt"' in loaded.dom
    (chart,) = data_of(files.html.read_text(encoding="utf-8"))["charts"]
    points, memory, compute = chart["series"]
    assert [p[4] for p in points["points"]] == [4]               # the winner, hovering #4
    assert memory["label"] == "DRAM copy 4000 GB/s (calibrated)"
    assert memory["points"][-1][:5] == [200, 800, None, None, None]
    assert memory["points"][-1][5].startswith("DRAM copy 4000 GB/s: torch copy_'s bandwidth")
    assert {p[1] for p in compute["points"]} == {800}            # the roof meets at the ridge
    assert loaded.dom.count('class="sw-cell"') == 6       # the overview; 24 maps folded away


#: Hovers the first point of the first chart; writes the tooltip it showed into the page.
HOVER_POINT = """<script>
(function () {
  var dot = document.querySelector("figure.sw-chart circle.sw-pt");
  dot.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: 5, clientY: 5}));
  document.body.setAttribute("data-test",
                             JSON.stringify(document.querySelector(".sw-tip").textContent));
})();
</script></body>"""


def test_a_footprint_curve_opens_in_a_browser(tmp_path, browser):
    files = write_report(three_footprints(tmp_path), draw=False)
    loaded = browser.load(driven(files.html, HOVER_POINT), tmp_path / "fp.png")
    opens_cleanly(loaded)
    assert loaded.dom.count('class="sw-pt"') == 6               # 3 footprints, cold and warm
    assert ">L2 8KiB<" in loaded.dom
    tip = seen(loaded).splitlines()
    assert tip[0] == "float32 4KiB cold: #0, 90 GB/s at median 9.102e-05 ms (sweep)"
    assert tip[2] == "#0  ok  float32 4KiB cold" and tip[4].startswith("median ")


#: Drives the page as a reader would: filter, sort, hover; writes what it saw into the page.
DRIVER = """<script>
(function () {
  var root = document.querySelector(".sweeper-report"), out = {};
  var input = root.querySelector(".sw-controls input");
  function rows() { return root.querySelectorAll(".sw-trials tbody tr"); }
  function filter(text) { input.value = text; input.dispatchEvent(new Event("input")); }
  out.all = rows().length;
  filter("status=wrong_answer");
  out.failed = Array.from(rows()).map(function (r) { return r.textContent; });
  filter("BLOCK=1024 grid=sms");
  out.filtered = Array.from(rows()).map(function (r) { return r.children[0].textContent; });
  filter("");
  var th = Array.from(root.querySelectorAll(".sw-trials th")).find(function (h) {
    return h.textContent === "GB/s"; });
  th.click(); th.click();
  out.fastest = Array.from(rows()).slice(0, 3).map(function (r) {
    return r.children[0].textContent; });
  var cell = root.querySelector("rect.sw-cell");
  cell.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: 5, clientY: 5}));
  var tip = root.querySelector(".sw-tip");
  out.tip = tip.hidden ? "" : tip.textContent;
  document.body.setAttribute("data-test", JSON.stringify(out));
})();
</script></body>"""


def test_the_page_filters_sorts_and_shows_a_cells_trial_and_keeps_text_as_text(tmp_path,
                                                                              browser):
    store = copy_study(tmp_path, records=[*HOSTILE_TRIALS, *BASE])
    page = write_report(store, draw=False).html
    loaded = browser.load(driven(page, DRIVER), tmp_path / "driven.png")
    opens_cleanly(loaded)
    assert ' data-pwned="' not in loaded.dom and "<img" not in loaded.dom   # nothing ran
    assert html.escape(HOSTILE, quote=False) in loaded.dom     # in the failures and the table
    saw = seen(loaded)
    assert saw["all"] == 8
    (failed,) = saw["failed"]
    assert failed.startswith("3wrong_answer") and HOSTILE in failed
    assert saw["filtered"] == ["4", "5"]        # BLOCK (not block) 1024 on the sms grid
    assert saw["fastest"] == ["4", "1", "2"]    # 400, 300, 200 GB/s
    tip = saw["tip"].splitlines()
    assert tip[0].startswith("#4  ok") and tip[1] == "grid=sms (=132) block=32 BLOCK=1024"
    assert tip[2].startswith("median ") and "95% CI [" in tip[2]
    assert tip[3].startswith("400 GB/s") and tip[4].startswith("samples 3")


def test_the_page_stays_small_for_many_trials(tmp_path):
    """At most 150 bytes a trial beyond the page's own 40 kB, here on 100 trials (a
    synthetic copy sweep of 10⁴ trials wrote 1.3 MB, as README.md says)."""
    grids = ["sms", "2*sms", "4*sms", "8*sms", "16*sms"]
    rng = np.random.default_rng(0)
    trials = [record(n, grids[n % 5], [32, 64][n // 5 % 2], 256 << (n // 10 % 10),
                     float(rng.uniform(100, 400)), grid_value=132 * 2 ** (n % 5))
              for n in range(100)]
    axes = {"grid": grids, "block": ["32", "64"], "BLOCK": [str(256 << i) for i in range(10)],
            "dtype": ["float32"], "footprint": ["1GiB"]}
    page = write_report(copy_study(tmp_path, records=trials, axes=axes), draw=False).html
    assert page.stat().st_size < 40_000 + 150 * len(trials)


def test_two_studies_in_one_notebook_page_both_draw(tmp_path, browser):
    """A notebook shows each Study as a fragment of one document: each draws itself, and
    its ids (gradients, clip paths) do not meet the other's."""
    first = Study(copy_study(tmp_path / "a").root)._repr_html_()
    second = Study(three_footprints(tmp_path / "b").root)._repr_html_()
    page = tmp_path / "notebook.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>"
                    f"{first}{second}</body></html>", encoding="utf-8")
    loaded = browser.load(page, tmp_path / "notebook.png")
    assert loaded.console == [] and 'class="sw-error"' not in loaded.dom
    assert loaded.dom.count('data-drawn="yes"') == 2
    ids = re.findall(r' id="([^"]+)"', loaded.dom)
    assert len(ids) == len(set(ids))              # sections, gradients and clip paths apart
    assert loaded.dom.count("<linearGradient ") == 1      # the first's overview map
    assert loaded.dom.count("<clipPath ") == 1            # the second's footprint curve
    not_blank(loaded.screenshot)


#: Writes each trial row's status and class into the page.
ROW_CLASSES = """<script>
(function () {
  var rows = document.querySelectorAll(".sweeper-report .sw-trials tbody tr");
  document.body.setAttribute("data-test", JSON.stringify(Array.from(rows).map(function (r) {
    return [r.children[0].textContent, r.className]; })));
})();
</script></body>"""


def test_the_trial_table_tints_as_failed_only_the_trials_that_failed(tmp_path, browser):
    """A config a replay's table lacks (``missing``) reads as not run, like one ruled out,
    not as a failure (the heatmaps say ``missing``); a crashed one is tinted."""
    records = [*TRIALS[:5],
               record(6, "2*sms", 32, 1024, 0.0, TrialStatus.MISSING, "not in the table",
                      264),
               record(7, "2*sms", 64, 1024, 0.0, TrialStatus.CRASHED, "boom", 264), *BASE]
    page = write_report(copy_study(tmp_path, records=records), draw=False).html
    loaded = browser.load(driven(page, ROW_CLASSES), tmp_path / "rows.png")
    assert loaded.console == []
    classes = dict(seen(loaded))
    assert classes == {"0": "", "1": "", "2": "", "3": "sw-failed", "4": "",
                       "6": "sw-invalid", "7": "sw-failed"}, classes



def infinite_ci(tmp_path) -> tuple[Any, dict]:
    """A study whose first ok trial's CI is infinitely wide over its median (a median a
    few ulps above 0 overflows it; a journal edited by hand can hold one), and that
    trial's record."""
    store = copy_study(tmp_path)
    lines = store.journal_path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"status":"ok"' in line)
    data = json.loads(lines[at])
    data["stats"]["rel_ci"] = float("inf")
    lines[at] = json.dumps(data)
    store.journal_path.write_text("\n".join(lines) + "\n")
    return store, data


def test_a_cell_whose_ci_is_too_wide_to_put_a_number_on_is_drawn_hatched(tmp_path):
    store, _ = infinite_ci(tmp_path)
    page = write_report(store, draw=False).html.read_text(encoding="utf-8")
    spreads = [cell[4] for m in data_of(page)["maps"] for row in m["cells"] for cell in row
               if cell[4] is not None]
    assert "∞" in spreads


def test_report_json_is_json_any_reader_parses_where_a_number_is_infinite(tmp_path):
    # JSON has no Infinity: json.dumps writes it, and JSON.parse, jq or a strict reader
    # refuses the whole file; a number that is not finite is null, as NaN is
    store, data = infinite_ci(tmp_path)
    files = write_report(store, draw=False)

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    report = json.loads(files.json.read_text(), parse_constant=refuse)
    assert any(row.get("number") == data["number"] and row["ci_pct"] is None
               for row in report["best"])
