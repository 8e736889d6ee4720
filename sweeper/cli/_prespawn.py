"""``sweeper run`` starts its worker processes before it does anything else
(:mod:`sweeper._nursery`), from its options alone: one per GPU it will use.  They import
torch and triton while this process imports its own and opens the study.  A guess that
turns out wrong costs nothing but those imports: a process nobody adopts is ended when
the run ends, and one that is missing is started when it is needed.

The compile processes are not started ahead: eight more processes importing torch at
once slowed the coordinator's and the worker's own imports by seconds on the H200
machine (16 cores), more than they saved; they start with the sweep, at a lower
priority, and compile a one-line kernel before their first config
(:meth:`~sweeper.kernels._precompile.Precompiler.warm_up`)."""

from __future__ import annotations

import argparse
import sys

from sweeper.errors import SweeperError


def worker_processes(workers: str | None, measures_gpu: bool) -> bool:
    """Whether ``run``'s workers are processes of their own: ``--workers process``, or
    by default on a device that measures a GPU (``inline`` measures in this process)."""
    return workers == "process" if workers else measures_gpu


def prespawn_workers(args: argparse.Namespace) -> int:
    """Start the worker processes ``run`` with ``args`` will use (none where it measures
    in this process, or the device cannot be told from its name); how many."""
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
    return len(indices)


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
