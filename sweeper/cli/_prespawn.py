"""``sweeper run`` starts its worker processes before it does anything else
(:mod:`sweeper._nursery`), from its options alone: one per GPU it will use.  They import
torch and triton while this process imports its own and opens the study.  A guess that
turns out wrong costs nothing but those imports: a process nobody adopts is ended when
the run ends, and one that is missing is started when it is needed.

The compile processes start ahead only where every config will compile: the sampler
walks a plan (it can say what comes next) and Triton's cache holds nothing of the kernel
(:mod:`sweeper.kernels._cache_probe`, from the kernel module's file, unimported).
Otherwise they wait for a trial that compiled: eight more processes importing beside
the coordinator and the worker slowed their imports by about a second on the H200
machine (16 cores), which a warm cache never wins back.  They run at a lower priority
and compile a one-line kernel before their first config
(:meth:`~sweeper.kernels._precompile.Precompiler.warm_up`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sweeper.errors import SweeperError


def worker_processes(workers: str | None, measures_gpu: bool) -> bool:
    """Whether ``run``'s workers are processes of their own: ``--workers process``, or
    by default on a device that measures a GPU (``inline`` measures in this process)."""
    return workers == "process" if workers else measures_gpu


#: Samplers that walk a plan, so a sweep compiles their next configs ahead.
PLANNED = ("exhaustive", "one-at-a-time")


def prespawn_workers(args: argparse.Namespace, space: Any = None) -> int:
    """Start the worker processes ``run`` with ``args`` will use (none where it measures
    in this process, or the device cannot be told from its name), and with ``space`` the
    compile processes where it will compile every config (:func:`prespawn_compilers`);
    how many workers."""
    from sweeper._nursery import WORKER, prespawn, worker_env
    from sweeper.devices import device_class

    try:
        cls = device_class(args.device)
    except SweeperError:            # said in its place, when the device is opened
        return 0
    if not worker_processes(args.workers, cls.measures_gpu):
        return 0
    indices = _indices(args.gpus, cls.measures_gpu)
    for index in indices:
        prespawn(WORKER, worker_env(index, cls.measures_gpu, dict(cls.sets_env)),
                 list(sys.path))
    if space is not None and indices and cls.measures_gpu:
        prespawn_compilers(args, space, len(indices))
    return len(indices)


def prespawn_compilers(args: argparse.Namespace, space: Any, workers: int) -> int:
    """Start the compile processes a sweep of ``space`` on a GPU will ask for, where it
    will compile every config: ``--compile-workers`` not 0, a sampler that walks a plan,
    nothing of the kernel in Triton's cache; how many (as many as ``run`` asks for:
    ``--compile-workers``, else the default for ``workers`` measuring processes)."""
    from sweeper._nursery import COMPILE_ENV, COMPILER, default_size, prespawn
    from sweeper.kernels._cache_probe import space_cold

    asked = getattr(args, "compile_workers", None)
    size = default_size(workers) if asked is None else asked
    if size <= 0 or space.sampler.name not in PLANNED or not space_cold(space.kernel):
        return 0
    prespawn(COMPILER, dict(COMPILE_ENV), list(sys.path), count=size)
    return size


def _indices(asked: list[int] | None, gpu: bool) -> list[int]:
    """The GPU indices ``--gpus`` names: none given, the first; ``all``, every one the
    driver counts.  None on a GPU device where there is no CUDA driver at all (the device
    is refused in one line when it opens; no process need import torch for that)."""
    from sweeper.devices._gpu_query import gpu_count, has_driver

    if gpu and not has_driver():
        return []
    if asked is None:
        return list(range(gpu_count())) if gpu else []
    return asked or [0]
