"""``sweeper.run`` in a real Jupyter kernel, executed through nbclient: the header and
summary as text, the progress bar as one output redrawn in place that ends where the
sweep ended (with or without ipywidgets: it needs none), no stderr noise or control codes,
an interrupt that stops after the trial in flight, the trials as an HTML table, and no
thread left running.  Skipped where nbclient or ipykernel is not installed."""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import sweeper
from tests.api_fixtures import SPACE, mixed_table

ROOT = Path(__file__).resolve().parent.parent
#: SMALL_SPACE of conftest.py as a dict: 8 configs, 2 ruled out by the constraint.
TINY = {"study": "tiny", "kernel": "copy", "sampler": "exhaustive",
        "params": {"grid": ["sms", "cdiv(n, BLOCK)"], "block": [32, 128],
                   "BLOCK": [256, 1024], "dtype": ["float32"], "footprint": ["4KiB"]},
        "constraints": ["BLOCK >= 4 * block"], "measure": {"warmup": 1, "repeat": 3}}
#: The bar once ``done`` of the 6 valid configs are measured (the rates and times vary).
BAR = r"trials [━╸╺ ]+ {done}/6 best [\d.]+ GB/s last [\d.]+ GB/s \d:\d\d:\d\d ETA [-:\d]+\n"
#: The end of a sweep with its final: the trials done, the final settled (rich lines the
#: two bars' columns up).
ENDED = (r"trials [━╸╺ ]+ 6/6 +best [\d.]+ GB/s +last [\d.]+ GB/s +\d:\d\d:\d\d done *\n"
         r"finals [━╸╺ ]+ ([345])/\1 +float32 4KiB cold +settled in \1 rounds +\d:\d\d:\d\d "
         r"done *\n")

INTERRUPT_AFTER_TWO = """
import os, signal
from sweeper.progress import ProgressReporter
trial = ProgressReporter.trial
def interrupting(self, record, best):    # the user's Ctrl-C (Kernel > Interrupt)
    trial(self, record, best)
    if self._done == 2:
        os.kill(os.getpid(), signal.SIGINT)
ProgressReporter.trial = interrupting
try:
    stopped = sweeper.run({space!r}, device="interpret", studies_dir={studies!r},
                          study="stopped", report=False)
finally:
    ProgressReporter.trial = trial
"""


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``python3`` kernel that runs this interpreter and imports this checkout's
    sweeper, found before any other through ``JUPYTER_PATH``; the connection files and
    IPython's profile stay under ``tmp_path``."""
    pytest.importorskip("nbclient")
    pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "sweeper tests", "language": "python", "env": {"PYTHONPATH": path}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))


def _execute(cells: list[str], folder: Path) -> list[tuple[list[dict[str, Any]], list[str]]]:
    """Run ``cells`` in a fresh kernel; for each cell, its outputs as the saved notebook has
    them and the text of every display update the kernel sent."""
    import nbformat
    from nbclient import NotebookClient

    updates: list[list[str]] = [[] for _ in cells]

    class Recording(NotebookClient):
        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            if msg["msg_type"] == "update_display_data":
                updates[cell_index].append(msg["content"]["data"]["text/plain"])
            return super().process_message(msg, cell, cell_index)

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    Recording(notebook, kernel_name="python3", timeout=120, startup_timeout=60,
              resources={"metadata": {"path": str(folder)}}).execute()
    return [(list(cell.outputs), drawn) for cell, drawn in zip(notebook.cells, updates,
                                                               strict=True)]


def _text(output: dict[str, Any]) -> str:
    return str(output.get("text") or output.get("data", {}).get("text/plain", ""))


def _printed(outputs: list[dict[str, Any]]) -> str:
    """What a cell printed: its stdout, however the kernel split it into messages (a
    ``print`` may arrive as its text and its newline apart)."""
    assert {(o["output_type"], o.get("name")) for o in outputs} <= {("stream", "stdout")}
    return "".join(_text(o) for o in outputs)


def test_a_sweep_in_a_jupyter_kernel(kernel, tmp_path):
    studies = str(tmp_path / "studies")
    (setup, _), (sweep, updates), (table, _), (shown, _), (stopped, _), (threads, _) = \
        _execute([
            "import threading, sweeper\nbefore = set(threading.enumerate())\n"
            "print(sweeper.__file__)",
            f"study = sweeper.run({TINY!r}, device='interpret', studies_dir={studies!r}, "
            "quiet=False, report=False)",
            "study.trials_dataframe()",
            "study",
            INTERRUPT_AFTER_TWO.format(space=TINY, studies=studies),
            "print(sorted(t.name for t in set(threading.enumerate()) - before))",
        ], tmp_path)
    assert _printed(setup) == f"{ROOT / 'sweeper' / '__init__.py'}\n"
    everything = [o for cell in (sweep, table, shown, stopped) for o in cell]
    assert not [o for o in everything if o["output_type"] == "error"]
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                   for o in everything)
    assert not any("\x1b" in _text(o) or "\r" in _text(o) for o in everything)
    assert [o for o in sweep if o.get("name") == "stderr"] == []     # no tqdm notice

    # the header, the bar as one display (its last drawing), then the summary
    kinds = [o.get("name", o["output_type"]) for o in sweep]
    bar = kinds.index("display_data")
    assert kinds.count("display_data") == 1 and set(kinds) == {"stdout", "display_data"}
    header, summary = "".join(map(_text, sweep[:bar])), "".join(map(_text, sweep[bar + 1:]))
    assert header.startswith("study tiny-interpret: ") and "space: 8 configs" in header
    assert summary.startswith("done: 6 measured, 0 failed, 2 skipped by constraints")
    assert re.fullmatch(ENDED, _text(sweep[bar]))
    assert sweep[bar]["data"]["text/html"].startswith("<pre style=")
    # redrawn in place as trials end (at most once each, and at the end), never behind
    counts = [int(re.search(r" (\d)/6 ", text)[1]) for text in updates]
    assert 2 <= len(updates) <= 6 + 1 + 7 and counts == sorted(counts)  # + the final's
    assert re.fullmatch(ENDED, updates[-1])

    html = table[0]["data"]["text/html"]                           # the trials as a table
    assert '<table border="1" class="dataframe">' in html
    assert html.count("<td>ok</td>") == 6 and html.count("<td>invalid</td>") == 2

    # the study shows itself as its HTML report (the page in a browser: test_report_html)
    (report,) = shown
    page = report["data"]["text/html"]
    assert report["output_type"] == "execute_result"
    assert page.startswith('<div class="sweeper-report" id="sweeper-') and "<script" in page
    assert "tiny-interpret" in page
    assert report["data"]["text/plain"].startswith("Study(")

    # Ctrl-C: the bar where the sweep stopped, one line on stderr, then the summary
    said = [(o.get("name", o["output_type"]), _text(o)) for o in stopped]
    bar = [kind for kind, _ in said].index("display_data")
    (_, drawn), stop_line, *rest = said[bar:]
    where, summary = {kind for kind, _ in rest}, "".join(text for _, text in rest)
    assert stop_line == ("stderr", "stopping after the current trial (Ctrl-C again to "
                                   "abort it)\n")
    measured = int(re.match(r"done: (\d) measured", summary)[1])
    assert where == {"stdout"} and 2 <= measured < 6
    assert "stopped: interrupted (Ctrl-C)" in summary
    assert re.fullmatch(BAR.format(done=measured), drawn)
    assert _printed(threads) == "[]\n"                               # no thread left


def test_the_api_hides_only_tqdms_ipywidgets_notice(tmp_path, monkeypatch):
    """Optuna imports tqdm.auto, whose notice in a notebook without ipywidgets would
    tell a sweeper user to install them; any other warning still shows."""
    from sweeper.api import _run as api_run

    real = api_run.run_sweep

    def warning_run_sweep(options: Any) -> Any:
        warnings.warn("IProgress not found. Please update jupyter and ipywidgets.",
                      stacklevel=1)
        warnings.warn("another warning", stacklevel=1)
        return real(options)

    monkeypatch.setattr(api_run, "run_sweep", warning_run_sweep)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        sweeper.run(SPACE, device=f"replay:{mixed_table(tmp_path)}", studies_dir=tmp_path,
                    quiet=True, report=False)
    assert [str(w.message) for w in shown] == ["another warning"]
