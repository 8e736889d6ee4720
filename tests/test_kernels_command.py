"""``sweeper kernels``: every kernel the registry knows, as declared, in text or JSON; the
built-ins are listed without importing torch, triton, optuna or pandas."""

from __future__ import annotations

import json
import subprocess
import sys

from sweeper import plugins
from sweeper.cli import main
from tests.conftest import ROOT
from tests.test_layering import HEAVY
from tests.test_plugins import ENTRY_POINTS, PACKAGE, install

#: Run in a fresh interpreter: ``sweeper kernels`` in text and JSON, then which heavy
#: modules were imported (the layering test's method).
LISTING = r'''
import contextlib, io, json, sys
from sweeper.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["kernels"]) == 0 and main(["kernels", "--json"]) == 0
print(json.dumps({"out": out.getvalue(), "heavy": sorted(m for m in %r if m in sys.modules)}))
'''


def test_the_listing_reads_declarations_only_and_imports_no_heavy_module():
    run = subprocess.run([sys.executable, "-c", LISTING % (HEAVY,)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert found["heavy"] == []
    text = found["out"]
    for name in plugins.KERNEL.builtins:
        assert f"\n{name} (built-in): " in f"\n{text}"


def test_each_built_in_lists_its_meta_parameters_dimensions_defaults_and_baseline(capsys):
    assert main(["kernels", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert list(entries) == list(plugins.KERNEL.builtins)
    softmax = entries["softmax"]
    assert softmax["dims"]["cols"] == {
        "doc": "columns: elements of each row, any number", "default": 4096, "min": 1,
        "max": None, "multiple_of": 1, "allowed": "an integer >= 1"}
    assert softmax["meta_params"]["BLOCK"]["default"] == 4096
    assert softmax["dims_from_footprint"] == {} and softmax["baseline"] == "torch.softmax"
    assert softmax["defaults"] == {"grid": "rows", "block": 256, "dtype": "float32"}
    assert entries["matmul"]["headline"] == "TFLOP/s" and entries["copy"]["headline"] == "GB/s"
    assert entries["copy-strided"]["dims"]["linecross"]["allowed"] == \
        "an integer >= 0 and <= 1"
    assert entries["scale"]["baseline"] == "torch mul_" and all(
        e["error"] is None and e["origin"] == "built-in" for e in entries.values())
    assert main(["kernels", "copy-strided"]) == 0
    assert capsys.readouterr().out == (
        "copy-strided (built-in): dst[i] = src[(i * stride) % n], or a matrix read by columns "
        "(linecross): strided and line-crossing reads\n"
        "  meta-parameters:\n"
        "    BLOCK = 1024, a power of two: elements each program copies per step\n"
        "  dimensions:\n"
        "    n = 16777216: elements of src and dst; an integer >= 1 and <= 2147483647\n"
        "    stride = 1: elements between the sources of consecutive elements (linecross: "
        "the matrix's columns); an integer >= 1\n"
        "    linecross = 0: 0: element i reads src[(i * stride) % n]; 1: read an (n / stride) "
        "× stride matrix by columns, write it by rows; an integer >= 0 and <= 1\n"
        "  footprint: n * itemsize bytes; a footprint alone gives n = footprint // itemsize, "
        "stride = 1, linecross = 0\n"
        "  defaults: grid cdiv(n, BLOCK), block 128, dtype float32, footprint 64MiB\n"
        "  headline: GB/s; baseline: torch strided-view copy_\n"
        "  runs on: a CUDA GPU, the CPU through the Triton interpreter (--device interpret), "
        "or a replay of a recorded table (--device replay:TABLE.csv)\n")


def test_installed_kernels_and_a_module_path_are_listed_a_broken_one_with_its_reason(
        tmp_path, monkeypatch, capsys):
    install(tmp_path / "site", "sweeper-tinyplug", "0.1", ENTRY_POINTS,
            {"sweeper_tinyplug": PACKAGE})
    install(tmp_path / "site", "sweeper-broken", "0.2",
            "[sweeper.kernels]\nnokernel = sweeper_tinyplug:backwards\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "sweeper_tinyplug", raising=False)
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out
    assert ("\n\ndouble (entry point double = sweeper_tinyplug:Double in sweeper.kernels of "
            "sweeper-tinyplug 0.1): y = 2 x in steps of CHUNK elements, with torch alone.\n"
            "  meta-parameters:\n    CHUNK = 256, a power of two: elements per step\n"
            "  dimensions:\n    n = (no default): elements of each array; an integer >= 1\n"
            ) in out
    assert ("\n\nnokernel (entry point)\n  cannot load kernel 'nokernel' (entry point "
            "nokernel = sweeper_tinyplug:backwards in sweeper.kernels of sweeper-broken 0.2): "
            "sweeper_tinyplug:backwards is a function") in out
    assert main(["kernels", "tests.kernels_for_tests:DropsLastBlock", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert (entry["name"], entry["origin"], entry["summary"]) == (
        "drops-last-block", "module:attr path",
        "Copies all but the last BLOCK elements: a partial result the poison must expose.")
    assert main(["kernels", "nope"]) == 2
    assert capsys.readouterr().err == ("sweeper: unknown kernel 'nope'; known: "
                                       f"{', '.join(plugins.KERNEL.builtins)}, double "
                                       "(sweeper-tinyplug 0.1), nokernel (sweeper-broken "
                                       "0.2), or package.module:attr for your own\n")


def test_a_short_kernel_is_listed_by_its_own_docstring(capsys):
    assert main(["kernels", "tests.short_kernels_for_tests:broken_baseline"]) == 0
    assert capsys.readouterr().out.startswith(
        "broken_baseline (module:attr path): A right kernel whose torch baseline raises.\n")


def test_a_kernel_named_twice_is_listed_once(capsys):
    """``sweeper kernels copy copy``: each kernel once, in the order first named."""
    assert main(["kernels", "copy", "scale", "copy", "--json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)] == ["copy", "scale"]
    assert main(["kernels", "copy", "copy"]) == 0
    assert capsys.readouterr().out.count("copy (built-in)") == 1
