"""Which of a run's binaries this machine has compiled already, told before anything runs.

``sweeper plan`` (and the estimate ``sweeper run`` prints) counts a compile per distinct
binary the run will not find compiled, a load per one it will.  What makes a binary
distinct, and where it is looked up, is the kernel kind's:

- **CUDA C** (``kernel: {name: cuda}``): NVRTC's own disk cache key,
  :func:`~sweeper.kernels._cuda_spec.cache_key` over the source and its includes, the
  entry, the config's ``-D`` defines, the arch and the NVRTC version.  The arch and
  version are those of the newest entry of the cache (each entry's JSON names them; an
  empty cache, or entries written before they did: every binary compiles), and an entry
  is there when its ``KEY.cubin`` and ``KEY.json`` are (its tag is checked when it is
  loaded, not here).
- **Triton**: :func:`binary_of`, the key the compile pool
  shares binaries by: the problem, the block (``num_warps``) and the meta-parameters (the
  constexprs), all but the launch grid and the L2 state.  Every problem is its own key:
  a dimension passed as a constexpr (matmul's M, N, K, softmax's ``cols``) compiles per
  value, and one passed as an integer compiles per specialization (divisible by 16, equal
  to 1); this key counts each value apart, so where a space sweeps several values of one
  that share a specialization it counts compiles Triton does not make.  Triton's cache is
  keyed by a hash of the kernel's source, Triton's own and the compiler's options, which
  only importing both gives; so a run keeps, per GPU, Triton cache folder and kernel
  source, the keys of the binaries its trials ran (:func:`note_built`, in
  ``<sweeper cache>/binaries.json``), and a binary counts as cached when it is listed
  there and Triton's folder still holds an entry of the kernel
  (:func:`~sweeper.kernels._cache_probe.space_cold`).  A binary a run compiled but never
  measured (a sweep stopped early) counts as a compile next time: the estimate errs long.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper import plugins
from sweeper.ceilings import cache_root
from sweeper.core import Config
from sweeper.fsio import read_cache, write_cache
from sweeper.kernels._cache_probe import kernel_source, names_triton, triton_cache_dir

#: Keys kept per GPU, Triton cache folder and kernel source (the oldest go first).
KEPT = 20_000
#: CUDA cache entries read for the arch and NVRTC version before giving up.
CUDA_SCAN = 5_000


@dataclass(frozen=True)
class Binaries:
    """How a plan tells a space's binaries apart (``key``) and whether one is compiled
    already (``cached``); ``kind``: ``triton`` or ``nvrtc``."""

    kind: str
    key: Callable[[Config], Hashable]
    cached: Callable[[Hashable], bool]


def _index_path() -> Path:
    return cache_root() / "binaries.json"


def _digest(key: Hashable) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:24]


def _triton_index(device: str, kernel: str) -> str | None:
    """Where the keys of ``kernel``'s binaries on ``device`` are kept: the GPU, Triton's
    cache folder and a hash of the kernel's module source (``None``: unreadable)."""
    source = kernel_source(kernel)
    if source is None:
        return None
    sha = hashlib.sha256(source.encode()).hexdigest()[:16]
    return f"{device} | {os.path.realpath(triton_cache_dir())} | {kernel} | {sha}"


def _read_index() -> dict[str, list[str]]:
    return {k: v for k, v in read_cache(_index_path()).items() if isinstance(v, list)}


def note_built(device: str, kernel: str, configs: Iterable[Config]) -> None:
    """Keep that the Triton binaries of ``configs`` (trials a run on ``device`` ran past
    their compile) are in Triton's cache now.  Never fails the run: a cache that cannot
    be written is left as it is."""
    index = _triton_index(device, kernel)
    keys = [_digest(binary_of(c)) for c in configs]
    if index is None or not keys:
        return
    kept = _read_index()
    kept[index] = list(dict.fromkeys([*kept.get(index, []), *keys]))[-KEPT:]
    write_cache(_index_path(), kept, indent=0)


def binary_of(config: Config) -> Hashable:
    """What ``config``'s binary depends on, as far as can be told without compiling: all
    but the launch grid and the L2 state.  A kernel that passes the grid on as an
    argument may specialize on it (Triton specializes integers divisible by 16): then a
    config sharing this key finds no binary and its worker compiles, as without a pool."""
    return (config.problem, config.block, tuple(sorted(config.meta.items())))


def triton_binaries(device: str, kernel: str) -> Binaries:
    """``kernel``'s Triton binaries on ``device``: cached where a run kept their key and
    Triton's cache folder still holds an entry of the kernel."""
    from sweeper.kernels._cache_probe import space_cold  # looked up as called

    index = _triton_index(device, kernel)
    known = set(_read_index().get(index, ())) if index is not None and \
        not space_cold(kernel) else set()
    return Binaries("triton", binary_of, lambda key: _digest(key) in known)


def newest_target(folder: Path) -> tuple[str, str] | None:
    """The arch and NVRTC version of the newest entry of the CUDA cache ``folder``
    (``None``: none names them)."""
    named: list[tuple[float, str, str]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in itertools.islice(entries, CUDA_SCAN):
                if not entry.name.endswith(".json") or not entry.is_file(
                        follow_symlinks=False):
                    continue
                try:
                    meta = json.loads(Path(entry.path).read_bytes())
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                except (OSError, ValueError):
                    continue
                arch, nvrtc = (meta.get("arch"), meta.get("nvrtc")) \
                    if isinstance(meta, dict) else (None, None)
                if isinstance(arch, str) and isinstance(nvrtc, str):
                    named.append((mtime, arch, nvrtc))
    except OSError:
        return None
    # the first of the newest, as the scan met them
    return max(named, key=lambda n: n[0])[1:] if named else None


def cuda_binaries(options: dict[str, str], folder: Path | None = None) -> Binaries:
    """A ``cuda`` kernel's binaries (its ``kernel:`` options ``options``): NVRTC's cache
    key for the newest arch and version in the CUDA cache ``folder`` (default: sweeper's),
    cached where its entry is there; none known: each config's entry and defines, none
    cached."""
    from sweeper.kernels._cuda_build import CudaLaunch, _defines, cuda_cache_dir
    from sweeper.kernels._cuda_spec import cache_key

    folder = folder or cuda_cache_dir()
    launch = CudaLaunch.of_options(options, "")
    target = newest_target(folder)
    try:
        files = launch.files()
    except OSError:
        target = None
    if target is None:
        return Binaries("nvrtc", lambda config: _defines(launch, config), lambda _: False)
    arch, nvrtc = target
    keys: dict[tuple[str, tuple[str, ...]], str] = {}

    def key(config: Config) -> Hashable:
        defined = _defines(launch, config)      # hashed once per binary, not per config
        if defined not in keys:
            keys[defined] = cache_key(files, *defined, arch, nvrtc)
        return keys[defined]

    def cached(key: Any) -> bool:
        return (folder / f"{key}.cubin").is_file() and (folder / f"{key}.json").is_file()

    return Binaries("nvrtc", key, cached)


def compiles_any(space: Any) -> bool:
    """Whether a run of ``space`` compiles binaries of its kernel at all: NVRTC's for CUDA
    C (the ``cuda`` kernel, or a user kernel launching ``sweeper.cuda``), else Triton's
    where the kernel's module names Triton; one that names none (``torch-op``: the kernels
    torch ships, compiled already) compiles nothing, as the run's GPU check says."""
    return space.kernel == "cuda" or bool(getattr(plugins.kernel_declaration(
        space.kernel, user_code=False), "needs_gpu", False)) or \
        names_triton(space.kernel) is not False


def space_binaries(space: Any, device: str) -> Binaries:
    """The binaries of ``space``'s kernel on ``device`` (:func:`~sweeper.plan.costs_key`):
    NVRTC's for a ``cuda`` kernel and for a user kernel launching ``sweeper.cuda`` (read
    from its source: one binary per block, meta-parameters and dtype, whatever the
    problem's size; none known to be cached), else Triton's."""
    if space.kernel == "cuda":
        return cuda_binaries(dict(space.kernel_options))
    if getattr(plugins.kernel_declaration(space.kernel, user_code=False), "needs_gpu", False):
        return Binaries("nvrtc", lambda config: (config.block, tuple(sorted(
            dict(config.meta).items())), config.problem.dtype), lambda _: False)
    return triton_binaries(device, space.kernel)
