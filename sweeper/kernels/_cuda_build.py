"""Compiling a CUDA C/C++ kernel through NVRTC, cached on disk.

A compiled kernel is keyed by :func:`~sweeper.kernels._cuda_spec.cache_key` (source and
includes, entry, options, arch, NVRTC version) and kept as ``KEY.cubin`` with ``KEY.json``
(the entry's lowered name: a template instantiation's mangled one, and the entry's tag)
under ``<sweeper cache>/cuda``: a second sweep of the same configs, or a resumed one,
compiles nothing.  The cache is this user's alone and each entry is verified before it is
used (:mod:`sweeper.kernels._cuda_cache`); one that cannot be written costs the caching,
never the compile.

The compiler is a small interface so the cache is tested without a GPU; the real one
(:class:`NvrtcCompiler`) imports CuPy when it first compiles, never before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sweeper.ceilings import cache_root
from sweeper.kernels._cuda_cache import CompileCache
from sweeper.kernels._cuda_spec import cache_key, sources

#: How many of NVRTC's log lines a failed trial's reason keeps (errors first).
LOG_LINES = 6


class CompilationError(Exception):
    """NVRTC refused the source: the message is its log's error lines.  The name is
    the one :func:`sweeper.trial.classify` records as ``compile_error``."""


@dataclass(frozen=True)
class Compiled:
    """A compiled kernel: where its cubin is cached (``None``: it could not be), the name
    to look the entry up by, and the cubin itself, what is loaded (never the file again,
    which could have been replaced since it was checked)."""

    path: Path | None
    lowered: str
    cubin: bytes = field(repr=False)


class Compiler(Protocol):
    """What compiles: ``(source text, file name, options, entry) -> (cubin, lowered
    name)``, a :class:`CompilationError` with the log when the source does not compile;
    ``arch`` and ``version`` are part of every cache key."""

    arch: str
    version: str

    def compile(self, source: str, name: str, options: Sequence[str], entry: str
                ) -> tuple[bytes, str]:
        """The cubin of ``source`` and ``entry``'s lowered name."""
        ...


def cuda_cache_dir() -> Path:
    """Where compiled kernels are kept: ``cuda/`` in sweeper's cache folder."""
    return cache_root() / "cuda"


def compiled(source: Path, entry: str, options: Sequence[str], compiler: Compiler,
             folder: Path | None = None) -> Compiled:
    """The kernel ``entry`` of ``source`` compiled with ``options``: from the cache when it
    holds it with a tag that checks, else compiled (``-I`` the source's folder, ``-arch``
    the compiler's) and stored where the cache can take it."""
    files = sources(source)
    key = cache_key(files, entry, options, compiler.arch, compiler.version)
    cache = CompileCache(folder or cuda_cache_dir())
    hit = cache.get(key)
    if hit is not None:
        return Compiled(cache.folder / f"{key}.cubin", hit[1], hit[0])
    text = files[source.resolve()].decode()
    flags = (*options, f"-I{source.resolve().parent}", f"-arch={compiler.arch}",
             "-std=c++17")
    binary, lowered = compiler.compile(text, source.name, flags, entry)
    path = cache.put(key, binary, lowered, {"entry": entry, "options": list(flags),
                                            "source": str(source)})
    return Compiled(path, lowered, binary)


def log_reason(log: str) -> str:
    """NVRTC's log as a reason: its error lines first, then the rest, at most
    ``LOG_LINES`` lines joined by `` | ``."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    kept = (errors + [line for line in lines if line not in errors])[:LOG_LINES]
    return " | ".join(kept) or "NVRTC gave no log"


class NvrtcCompiler:
    """NVRTC through CuPy's binding, for ``arch`` (``sm_90``), else the current CUDA
    device's (CuPy imported here)."""

    def __init__(self, arch: str | None = None) -> None:
        import cupy
        from cupy.cuda import nvrtc

        self.arch = arch or f"sm_{cupy.cuda.Device().compute_capability}"
        self.version = ".".join(map(str, nvrtc.getVersion()))
        self.include = _cuda_include()

    def compile(self, source: str, name: str, options: Sequence[str], entry: str
                ) -> tuple[bytes, str]:
        """NVRTC's cubin and lowered name; a :class:`CompilationError` with its log."""
        from cupy.cuda import nvrtc

        flags = [*options, *([f"-I{self.include}"] if self.include else [])]
        program = nvrtc.createProgram(source, name, (), ())
        try:
            nvrtc.addNameExpression(program, entry)
            try:
                nvrtc.compileProgram(program, flags)
            except nvrtc.NVRTCError as err:
                raise CompilationError(log_reason(nvrtc.getProgramLog(program) or
                                                  str(err))) from None
            return nvrtc.getCUBIN(program), nvrtc.getLoweredName(program, entry)
        finally:
            nvrtc.destroyProgram(program)


def _cuda_include() -> str | None:
    """The CUDA toolkit's include folder (``cuda_fp16.h``), where CuPy finds one."""
    import cupy

    root = cupy.cuda.get_cuda_path()
    return os.path.join(root, "include") if root and os.path.isdir(
        os.path.join(root, "include")) else None
