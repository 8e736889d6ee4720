"""Telling, from files alone, whether Triton's cache holds anything of a kernel: the
functions its module defines or imports, against the names of the cache's entries."""

from __future__ import annotations

import sys

from sweeper.kernels import _cache_probe as probe

SOURCE = """\
import triton
from somewhere import _body, helper as other
def outer():
    def inner():
        pass
"""


def test_function_names_are_what_a_triton_module_defines_or_imports():
    assert probe.function_names(SOURCE) == {"_body", "helper", "outer", "inner"}
    assert probe.function_names("def f(): pass\n") is None          # no Triton
    assert probe.function_names("import triton\ndef (:\n") is None   # not Python


def test_the_cache_folder_is_triton_s_without_importing_it(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    assert probe.triton_cache_dir() == str(tmp_path / ".triton" / "cache")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "here"))
    assert probe.triton_cache_dir() == str(tmp_path / "here")


def test_an_entry_named_after_one_function_is_enough(tmp_path):
    assert probe.nothing_cached({"_body"}, str(tmp_path / "missing"))
    (tmp_path / "H1").mkdir()
    (tmp_path / "H1" / "other.json").write_text("{}")
    assert probe.nothing_cached({"_body"}, str(tmp_path))
    (tmp_path / "H2").mkdir()
    (tmp_path / "H2" / "_body.json").write_text("{}")
    assert not probe.nothing_cached({"_body", "x"}, str(tmp_path))


def test_a_space_s_kernel_module_is_found_and_read_not_imported(monkeypatch, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (tmp_path / "pkg" / "mine.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    assert probe.module_file("pkg.mine") == str(tmp_path / "pkg" / "mine.py")
    assert probe.space_cold("pkg.mine:Kernel") and "pkg" not in sys.modules
    (tmp_path / "cache" / "H").mkdir(parents=True)
    (tmp_path / "cache" / "H" / "inner.json").write_text("{}")
    assert not probe.space_cold("pkg.mine:Kernel")
