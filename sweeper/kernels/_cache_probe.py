"""Whether Triton's disk cache holds anything of a kernel, told from files alone.

Triton names the files of a cache entry after the jitted function
(``<cache>/<hash>/<function>.json``).  Where no entry is named after a function that the
kernel's module defines or imports, every config of a sweep will compile: ``sweeper
run`` then starts its compile processes with its workers, before it has imported torch,
and its pool compiles from the sweep's start (:mod:`sweeper.engine._prespawn`).  Anything
else (an entry of the kernel, a module that is not Triton's, a file that cannot be read
or parsed, a cache too big to look through) says "cached": the pool then waits for a
trial that compiled.  A wrong "nothing cached" costs a warm run the compile processes'
start-up, never a result.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

from sweeper.kernels._own_modules import module_file

#: Cache entries looked through before giving up (and saying "cached").
CACHE_SCAN = 5_000


def triton_cache_dir() -> str:
    """Triton's cache folder as ``triton.knobs.cache.dir`` gives it, without importing
    triton: ``$TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache`` (home: ``~``)."""
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~/")
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(home, ".triton", "cache")


def function_names(source: str) -> set[str] | None:
    """The functions ``source`` defines or imports by name, at any depth (None where it
    is not Python, or names no Triton)."""
    if "triton" not in source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


def nothing_cached(names: Iterable[str], cache: str | None = None) -> bool:
    """Whether no entry of Triton's cache (``cache``, default :func:`triton_cache_dir`)
    is named after one of ``names``."""
    wanted = {f"{name}.json" for name in names}
    folder = cache if cache is not None else triton_cache_dir()
    if not os.path.isdir(folder):
        return True
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= CACHE_SCAN:
                    return False
                if entry.is_dir() and not wanted.isdisjoint(os.listdir(entry.path)):
                    return False
    except OSError:
        return False
    return True


def kernel_source(kernel: str) -> str | None:
    """The source of the module that defines a space's ``kernel:`` (a built-in name, an
    installed entry point or a ``module:attr`` path), found on the import path (the
    working folder first) and read, not run; ``None`` where it cannot be found or read."""
    from sweeper import plugins

    try:
        module = plugins.find(plugins.KERNEL, kernel).target.partition(":")[0]
    except Exception:  # noqa: BLE001 - any failure says "unknown"; loading it says why
        return None
    path = module_file(module)
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def names_triton(kernel: str) -> bool | None:
    """Whether the module that defines a space's ``kernel:`` names Triton (its source read,
    not run: :func:`function_names`); ``None`` where it cannot be found or read."""
    source = kernel_source(kernel)
    return None if source is None else function_names(source) is not None


def space_cold(kernel: str) -> bool:
    """For a space's ``kernel:``, before anything is imported: its module's source
    (:func:`kernel_source`) names functions none of whose entries Triton's cache holds."""
    source = kernel_source(kernel)
    names = function_names(source) if source is not None else None
    return names is not None and nothing_cached(names)
