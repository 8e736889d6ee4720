"""The CUDA compile cache trusts only what this user's sweeper wrote: a planted entry, a
link, a folder of someone else's or open to others is never loaded; a cache that cannot
be written costs the caching only.  Without a GPU: the compiler is faked."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
import warnings
from pathlib import Path

import pytest

from sweeper.errors import CacheWarning
from sweeper.kernels import _cuda_cache
from sweeper.kernels._cuda_build import compiled
from sweeper.kernels._cuda_spec import cache_key, sources
from tests.test_cuda_kernel import COPY_CU, FakeCompiler

OPTIONS = ("-DVEC=4",)
REAL = b"CUBINcopy"                    # what FakeCompiler compiles copy to


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """``$SWEEPER_CACHE``; warnings start afresh and any is an error unless expected."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SWEEPER_CACHE", str(root))
    monkeypatch.setattr(_cuda_cache, "_warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        yield root


def key() -> str:
    """The cache key of copy.cu with OPTIONS on the fake compiler: anyone can work it out."""
    return cache_key(sources(COPY_CU), "copy", OPTIONS, "sm_90", "12.4")


def plant(folder: Path, cubin: bytes, meta: dict | None = None) -> tuple[Path, Path]:
    """An entry under the predictable key, as someone other than sweeper would write it."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / f"{key()}.cubin", folder / f"{key()}.json"
    paths[0].write_bytes(cubin)
    paths[1].write_text(json.dumps(meta or {"lowered": "_Zcopy", "tag": "0" * 64}))
    for path in paths:
        path.chmod(0o600)
    return paths


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_entries_are_private_and_found_again(cache):
    compiler = FakeCompiler()
    first = compiled(COPY_CU, "copy", OPTIONS, compiler)
    assert first.cubin == REAL and first.path == cache / "cuda" / f"{key()}.cubin"
    assert mode(cache / "cuda") == 0o700
    assert {p.name: mode(p) for p in (cache / "cuda").iterdir()} == {
        "hmac.key": 0o600, f"{key()}.cubin": 0o600, f"{key()}.json": 0o600}
    assert compiled(COPY_CU, "copy", OPTIONS, compiler) == first and len(compiler.calls) == 1


@pytest.mark.parametrize("tagged", [False, True], ids=["no-tag", "tag-of-another-secret"])
def test_a_planted_entry_is_compiled_over(cache, tagged):
    compiled(COPY_CU, "copy", ("-DVEC=2",), FakeCompiler())       # the cache and its secret
    meta = {"lowered": "_Zevil"}
    if tagged:
        meta["tag"] = _cuda_cache._tag(b"x" * 32, key(), "_Zevil", b"EVIL")
    cubin, _ = plant(cache / "cuda", b"EVIL", meta)
    compiler = FakeCompiler()
    built = compiled(COPY_CU, "copy", OPTIONS, compiler)
    assert len(compiler.calls) == 1 and built.cubin == REAL and built.lowered == "_Zcopy"
    assert cubin.read_bytes() == REAL                             # and replaced
    assert compiled(COPY_CU, "copy", OPTIONS, compiler).cubin == REAL
    assert len(compiler.calls) == 1


def test_a_planted_entry_in_a_fresh_cache_is_never_loaded(cache):
    plant(cache / "cuda", b"EVIL", {"lowered": "_Zevil"})
    compiler = FakeCompiler()
    assert compiled(COPY_CU, "copy", OPTIONS, compiler).cubin == REAL
    assert len(compiler.calls) == 1


def test_a_link_is_never_read_nor_written_through(cache, tmp_path):
    compiler = FakeCompiler()
    compiled(COPY_CU, "copy", OPTIONS, compiler)
    cubin = cache / "cuda" / f"{key()}.cubin"
    system = tmp_path / "libsystem.so"                 # a file the link points to
    system.write_bytes(REAL)                           # even one with the right bytes
    system.chmod(0o600)
    cubin.unlink()
    cubin.symlink_to(system)
    built = compiled(COPY_CU, "copy", OPTIONS, compiler)
    assert len(compiler.calls) == 2 and built.cubin == REAL
    assert not cubin.is_symlink() and system.read_bytes() == REAL     # the link replaced
    meta = cache / "cuda" / f"{key()}.json"
    config = tmp_path / "system.json"                  # the right entry, behind a link
    config.write_bytes(meta.read_bytes())
    config.chmod(0o600)
    meta.unlink()
    meta.symlink_to(config)
    compiled(COPY_CU, "copy", OPTIONS, compiler)
    assert len(compiler.calls) == 3 and not meta.is_symlink()
    assert json.loads(config.read_text())["lowered"] == "_Zcopy"


def test_a_fifo_in_place_of_an_entry_does_not_block(cache):
    compiler = FakeCompiler()
    compiled(COPY_CU, "copy", OPTIONS, compiler)
    cubin = cache / "cuda" / f"{key()}.cubin"
    cubin.unlink()
    os.mkfifo(cubin, 0o600)
    assert compiled(COPY_CU, "copy", OPTIONS, compiler).cubin == REAL
    assert len(compiler.calls) == 2 and stat.S_ISREG(cubin.lstat().st_mode)


def test_an_entry_open_to_others_is_compiled_over_and_made_private(cache):
    compiler = FakeCompiler()
    compiled(COPY_CU, "copy", OPTIONS, compiler)
    cubin = cache / "cuda" / f"{key()}.cubin"
    cubin.chmod(0o666)
    assert compiled(COPY_CU, "copy", OPTIONS, compiler).cubin == REAL
    assert len(compiler.calls) == 2 and mode(cubin) == 0o600


def _compiles_uncached(cache: Path, said: str) -> None:
    """Two compiles, both used, neither cached, one warning naming ``said``."""
    compiler = FakeCompiler()
    with pytest.warns(CacheWarning, match=said) as caught:
        first = compiled(COPY_CU, "copy", OPTIONS, compiler)
        second = compiled(COPY_CU, "copy", OPTIONS, compiler)
    assert len(caught) == 1 and str(cache) in str(caught[0].message)
    assert "compiling without it" in str(caught[0].message)
    assert first.cubin == second.cubin == REAL and first.path is None
    assert len(compiler.calls) == 2


@pytest.fixture
def read_only(monkeypatch):
    """Make a folder read-only: its mode, and for root (whom modes do not stop) every call
    that would create something in it fails as on a read-only file system."""
    def make(folder: Path) -> None:
        folder.chmod(0o500)
        if os.geteuid() != 0:
            return

        def check(path) -> None:
            if str(path) == str(folder) or str(path).startswith(str(folder) + os.sep):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

        real_mkdir, real_link, real_mkstemp = os.mkdir, os.link, tempfile.mkstemp

        def mkdir(path, *args, **kwargs):
            check(path)
            return real_mkdir(path, *args, **kwargs)

        def link(source, target, *args, **kwargs):
            check(target)
            return real_link(source, target, *args, **kwargs)

        def mkstemp(*args, **kwargs):
            check(Path(kwargs["dir"]) / "new")
            return real_mkstemp(*args, **kwargs)

        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return make


def test_a_read_only_cache_costs_only_the_caching(cache, read_only):
    cache.mkdir()
    read_only(cache)
    _compiles_uncached(cache, "cannot make|writing")
    assert not (cache / "cuda").exists()


def test_a_read_only_cache_folder_with_its_secret_costs_only_the_caching(cache, read_only):
    compiled(COPY_CU, "copy", ("-DVEC=2",), FakeCompiler())        # folder and secret made
    read_only(cache / "cuda")
    _compiles_uncached(cache, "writing")
    assert not (cache / "cuda" / f"{key()}.cubin").exists()


def test_a_cache_that_is_a_file_costs_only_the_caching(cache):
    cache.write_text("not a folder")
    _compiles_uncached(cache, "cannot make")
    assert cache.read_text() == "not a folder"


def test_a_cache_folder_that_is_a_link_is_not_used(cache, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.mkdir()
    (cache / "cuda").symlink_to(elsewhere)
    _compiles_uncached(cache, "symbolic link")
    assert list(elsewhere.iterdir()) == []


def test_a_folder_of_another_user_is_not_used(cache, monkeypatch):
    compiler = FakeCompiler()
    compiled(COPY_CU, "copy", OPTIONS, compiler)                  # a good entry, by "them"
    me = os.geteuid() + 1
    monkeypatch.setattr(os, "geteuid", lambda: me)
    _compiles_uncached(cache, f"owned by user {me - 1}, not by you \\({me}\\)")


@pytest.mark.parametrize("folder_mode", [0o777, 0o770, 0o722])
def test_a_folder_others_can_write_is_not_used(cache, folder_mode):
    compiled(COPY_CU, "copy", OPTIONS, FakeCompiler())
    (cache / "cuda").chmod(folder_mode)
    _compiles_uncached(cache, f"writable by other users \\(mode {folder_mode:04o}\\)")


def test_a_folder_of_mine_others_can_read_is_made_private(cache):
    (cache / "cuda").mkdir(parents=True, mode=0o755)
    (cache / "cuda").chmod(0o755)
    compiled(COPY_CU, "copy", OPTIONS, FakeCompiler())
    assert mode(cache / "cuda") == 0o700


def test_a_secret_open_to_others_is_not_used(cache):
    compiled(COPY_CU, "copy", OPTIONS, FakeCompiler())
    (cache / "cuda" / "hmac.key").chmod(0o644)
    _compiles_uncached(cache, "hmac.key is open to other users \\(mode 0644, not 0600\\)")
