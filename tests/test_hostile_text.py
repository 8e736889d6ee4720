"""Names, labels and reasons from a study, however hostile, reach an export or a report as
the text they are: never code in a generated module, a formula in a spreadsheet, Markdown
or HTML in report.md, or a control character anywhere; and a replay table reads back the
labels it was written with."""

from __future__ import annotations

import ast
import csv
import dataclasses
import html
import json
import re

import pytest

from sweeper.cli import main
from sweeper.devices._replay import ReplayDevice, read_table
from sweeper.escape import csv_cell, csv_uncell
from sweeper.export import export_csv
from sweeper.measure import summarize
from sweeper.report import write_report
from sweeper.space import Config, Problem
from sweeper.store import StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from tests.test_export_triton import load
from tests.test_export_triton import study as triton_study
from tests.test_plots import BOUNDS
from tests.test_report import TRIALS, copy_study

HOSTILE_NAMES = ['x"""\nimport os; os.system("echo pwned")\n"""', "x'''\n'''", "tail\\",
                 "esc\x1b[2J\rnew\nline", "\u202eevil", 'q"', "{brace}"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_triton_module_compiles_whatever_the_names(tmp_path, name):
    store = triton_study(tmp_path / name, gpu=name, kernel=name)    # the study's name too
    out = tmp_path / "tuned.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    tree = ast.parse(out.read_text())           # compiles, and holds nothing but our code
    assert [type(n).__name__ for n in tree.body[:3]] == ["Expr", "ImportFrom", "Import"]
    doc = ast.get_docstring(tree)
    assert doc.startswith(f"Tuned configs of the kernel {name!a} on {name!a},")
    assert [n for n in tree.body if isinstance(n, ast.Expr)] == tree.body[:1]
    assert not [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
                and {a.name for a in n.names} - {"annotations", "json", "math", "os", "time",
                                                 "warnings", "triton"}]
    mod = load(out)
    assert name == mod.KERNEL and list(mod.GPUS) == [name]
    assert mod.WINNERS[name][0]["config"].kwargs == {"BLOCK": 1024}
    other = triton_study(tmp_path / "st2", gpu="other " + name, kernel=name)
    assert main(["export", str(other.root), "--format", "triton", "-o", str(out)]) == 0
    assert sorted(load(out).GPUS) == sorted([name, "other " + name])    # read back, merged


#: Labels a study may hold that a spreadsheet would read as formulas.  A label starting
#: with a tab or CR is one too, but a journal refuses control characters in labels, so those
#: two are checked by the escape alone (:data:`CONTROL_LABELS`).
LABELS = ['=HYPERLINK("http://x","y")', "@SUM(1+1)", "+1+1", "-2+3", "'quoted", "-1",
          "1e-3", "plain", "a,=b", '"=c"']
CONTROL_LABELS = ["\tx", "\rx"]


def _labelled_study(tmp_path, gpu="G"):
    store = StudyStore(tmp_path / "lab")
    store.create({"study": "lab", "kernel": "copy", "axes": {"mode": LABELS},
                  "environment": {"gpu": gpu, "sms": 4, "l2_bytes": 1024}})
    for i, label in enumerate(LABELS):
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK, choice={"mode": label},
            config=Config(Problem("float32", 1 << 20), grid=1, block=128, meta={}),
            samples_ms=[1.0 + i] * 3, stats=summarize([1.0 + i] * 3), gbps=1.0))
    store.close()
    return store


def test_csv_cells_start_no_formula_and_read_back_as_the_labels(tmp_path):
    store = _labelled_study(tmp_path, gpu="GPU, =cmd|' /C calc'!A0")
    path, count, *_ = export_csv(store, tmp_path / "replay.csv")
    assert count == len(LABELS)
    text = path.read_text()
    for line in text.splitlines():          # each cell as a spreadsheet reads it
        cells = next(csv.reader([line]))
        for cell in cells[1:] if line.startswith("#") else cells:
            formula = cell.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r"))
            assert not formula or cell == "-1", (line, cell)
    header, _, rows = read_table(path)
    assert header["gpu"] == "GPU, =cmd|' /C calc'!A0"
    assert [r["mode"] for r in rows] == LABELS
    device = ReplayDevice(path)
    assert [device.lookup({"mode": label})["median_ms"] for label in LABELS] == \
        [str(1.0 + i) for i in range(len(LABELS))]


@pytest.mark.parametrize("text", [*LABELS, *CONTROL_LABELS, "", "'", "''x", "-", "--1", "+",
                                  "1.5"])
def test_the_csv_escape_round_trips(text):
    assert csv_uncell(csv_cell(text)) == text
    if text in CONTROL_LABELS:
        assert csv_cell(text).startswith("'")     # no cell a spreadsheet reads as a formula


def hostile_study(tmp_path, reason: str, study: str, kernel: str, gpu: str) -> StudyStore:
    """TRIALS with ``reason`` for every failure, in a study held in a folder named
    ``study`` whose study.json names ``kernel`` and ``gpu`` given (as a hand-edited file
    could), and records the study as copied from ``old study`` (a copied folder's)."""
    trials = [dataclasses.replace(t, reason=reason) if t.reason else t for t in TRIALS]
    store = copy_study(tmp_path, records=trials)
    meta = json.loads((store.root / "study.json").read_text())
    meta.update(study=f"old {study}", kernel=kernel)
    meta["environment"]["gpu"] = gpu
    (store.root / "study.json").write_text(json.dumps(meta))
    store.close()
    store.root.rename(tmp_path / study)
    return StudyStore(tmp_path / study)


def test_report_md_shows_hostile_text_as_text(tmp_path):
    hostile = "a|b\nc\x1b[31m <script>x</script> [click](http://evil) ![i](http://t)"
    store = hostile_study(tmp_path, hostile, "st\x1b]0;title\x07\nnew line", "copy|x",
                          "GPU <img src=x> | [a](b)")
    md = write_report(store, draw=False).markdown.read_text()
    assert all(c.isprintable() or c == "\n" for c in md)
    ours = re.sub(r"!\[\w+\]\(heatmaps/\w+\.png\)", "", md)      # our own images
    assert not re.search(r"(?<!\\)[<\[]", ours.replace("\\\\", "")), md   # no link, no HTML
    assert md.splitlines()[0] == (r"# Study `st\\x1b\]0;title\\x07 new line`: copy\|x on "
                                  r"GPU \<img src=x> \| \[a\](b)")
    for table in md.split("\n\n"):
        lines = [x for x in table.splitlines() if x.startswith("|")]
        cells = {len(x.replace("\\|", "").split("|")) for x in lines}
        assert len(cells) <= 1, table
    assert r"a\|b c\\x1b\[31m \<script>x\</script> \[click\]" in md     # the reason, as text


def test_compare_tuned_and_roofline_print_a_hand_edited_study_s_text_as_text(
        tmp_path, capsys, monkeypatch):
    """``sweeper compare`` names each study's device, ``sweeper tuned`` the GPU and study
    an entry came from, ``sweeper roofline`` the GPU and studies: text a hand-edited
    study.json (or a tuning file from elsewhere) holds, printed as its escapes, as
    ``sweeper export`` prints it."""
    ours = StudyStore(copy_study(tmp_path / "a").root)
    theirs = hostile_study(tmp_path, "r", "st\x1b]0;title\x07", "copy", "GPU\x1b[2J")
    meta = json.loads((theirs.root / "study.json").read_text())
    meta["fingerprint"]["gpu"] = "GPU\x1b[2J"
    (theirs.root / "study.json").write_text(json.dumps(meta))
    assert main(["compare", str(ours.root), str(theirs.root)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "B on GPU\\x1b[2J: each ratio" in out
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(theirs.root), "-o", str(tuning)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("SWEEPER_TUNING", str(tuning))
    assert main(["tuned", "copy", "--footprint", "1GiB", "--gpu", "GPU\x1b[2J"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "on GPU\\x1b[2J: grid=" in out
    assert "(study st\\x1b]0;title\\x07)" in out
    meta["bounds"] = BOUNDS.to_json()               # so that `sweeper roofline` has roofs
    (theirs.root / "study.json").write_text(json.dumps(meta))
    assert main(["roofline", str(theirs.root), "-o", str(tmp_path / "roof.png")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.startswith("roofline of GPU\\x1b[2J: 1 winner")
    assert "(#4, st\\x1b]0;title\\x07): " in out


def test_report_pictures_draw_a_hand_edited_gpu_name_as_its_characters(tmp_path):
    """A GPU name a study file was edited to hold, with TeX's ``$^$`` and ESC, goes into
    the heatmaps' titles: matplotlib read it as math text and the report stopped with a
    ParseSyntaxException; every title is drawn as the characters it holds."""
    from matplotlib.text import Text

    from sweeper.report._draw import plain_text, subplots

    store = hostile_study(tmp_path, "reason", "st", "copy", "GPU $^$ \x1b[2J")
    written = write_report(store, draw=True)
    assert written.markdown.exists() and list((store.root / "heatmaps").glob("*.png"))
    fig, ax = subplots(figsize=(3.0, 2.0))
    ax.set_title("GPU $^$ \x1b[2J\nsecond line")
    plain_text(fig)
    assert ax.get_title() == "GPU $^$ \\x1b[2J\nsecond line"
    assert not any(t.get_parse_math() for t in fig.findobj(Text))


def test_report_html_shows_hostile_text_as_text(tmp_path):
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)> &amp; ]]> <!--"
    store = hostile_study(tmp_path, hostile, "st<u>", "copy\"'<x>", "GPU <img src=x>")
    page = write_report(store, draw=False).html.read_text()
    ours = {"<script>", "<script type=\"application/json\" class=\"sw-data\">"}
    assert set(re.findall(r"<script[^>]*>", page)) == ours          # no script of theirs
    assert page.count("</script>") == 3                              # errors, data, report
    assert "<img" not in page and "<u>" not in page and "<x>" not in page
    assert "<title>st&lt;u&gt;: copy&quot;&#x27;&lt;x&gt; on GPU &lt;img src=x&gt;</title>" \
        in page
    assert html.escape(hostile) in page                               # the reason, as text
