"""A run starts its worker processes before it does anything else
(:mod:`sweeper._processes`), from its options alone: one per GPU it will use.  They import
torch and triton while this process imports its own and opens the study.  A guess that
turns out wrong costs nothing but those imports: a process nobody adopts is ended when
the run ends, and one that is missing is started when it is needed.

The compile pool starts ahead only where the sampler knows what comes next (it walks a
plan, or follows the kernel model: :func:`sweeper.plan.compiles_ahead`) and enough will
compile: Triton's cache holds nothing of the kernel (:mod:`sweeper.kernels._cache_probe`,
from the kernel module's file, unimported), or the binaries this machine has not compiled
would keep the worker compiling for seconds (:func:`sweeper.plan.pool_from_start`: new
shapes of a kernel whose other shapes are cached).  It is then started here, with the
workers, and, for a sampler that walks a plan, handed every valid config of the space at
once (the GPU's facts and architecture read from the driver,
:mod:`sweeper.devices._gpu_query`): its processes compile while this process and the
workers import, and the sweep adopts it.  Otherwise it waits for a
trial that compiled: eight more processes importing beside the coordinator and the
worker slowed their imports by about a second on the H200 machine (16 cores), which a
warm cache never wins back.  Compile processes run at a lower priority and compile a
one-line kernel before their first config
(:meth:`~sweeper.kernels._precompile.Precompiler.warm_up`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sweeper.engine._options import RunOptions
from sweeper.errors import SweeperError

if TYPE_CHECKING:
    from sweeper.sweep._compile_pool import CompilePool


def worker_processes(workers: str | None, measures_gpu: bool) -> bool:
    """Whether ``run``'s workers are processes of their own: ``--workers process``, or
    by default on a device that measures a GPU (``inline`` measures in this process)."""
    return workers == "process" if workers else measures_gpu


class StartAhead:
    """What a run with ``options`` starts once its space is read (``on_space``), before its
    own imports: its worker processes, and, where enough will compile
    (:func:`pool_starts_ahead`), its compile pool (:func:`start_pool`).
    ``pool_ahead`` keeps that decision for the sweep, which adopts ``pool`` (or, where
    none could be started here, starts its own with the sweep) instead of waiting for a
    trial that compiled; :meth:`close` ends a pool no sweep adopted."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.pool_ahead = False
        self.pool: CompilePool | None = None

    def __call__(self, space: Any) -> None:
        # the workers first: whether the pool starts ahead asks the CUDA driver (its
        # initialization, tenths of a second) and the caches, which the workers'
        # imports need not wait for
        workers = prespawn_workers(self.options)
        self.pool_ahead = pool_starts_ahead(self.options, space)
        if self.pool_ahead and workers:
            self.pool = start_pool(self.options, space, workers)

    def close(self) -> None:
        """End the pool (a sweep that adopted it ended it already: nothing happens)."""
        if self.pool is not None:
            self.pool.close()


def pool_starts_ahead(options: RunOptions, space: Any) -> bool:
    """Whether a run with ``options`` starts its compile pool with the sweep: on a device
    that measures a GPU, ``--compile-workers`` not 0, a sampler that knows what comes next
    (:func:`~sweeper.plan.compiles_ahead`), and nothing of the kernel in Triton's cache
    (:func:`~sweeper.kernels._cache_probe.space_cold`) or enough of the space's binaries
    not compiled on this machine yet (:func:`~sweeper.plan.pool_from_start`, for the GPU
    the driver names; where it names none, the cache alone decides)."""
    from sweeper.devices import device_class
    from sweeper.devices._gpu_query import query_gpu
    from sweeper.kernels._cache_probe import space_cold
    from sweeper.plan import compiles_ahead, device_key, pool_from_start, run_costs

    try:
        cls = device_class(options.device)
    except SweeperError:            # said in its place, when the device is opened
        return False
    if not (cls.measures_gpu and options.compile_workers != 0 and
            compiles_ahead(space.sampler.name)):
        return False
    facts = query_gpu((options.gpus or [0])[0])
    if isinstance(facts, str):
        return space_cold(space.kernel)
    key = device_key(cls.name, facts)
    return pool_from_start(space, facts, key, run_costs(key))


def prespawn_workers(options: RunOptions) -> int:
    """Start the worker processes a run with ``options`` will use (none where it measures
    in this process, or the device cannot be told from its name); how many."""
    from sweeper._processes import WORKER, prespawn, worker_env
    from sweeper.devices import device_class

    try:
        cls = device_class(options.device)
    except SweeperError:            # said in its place, when the device is opened
        return 0
    if not worker_processes(options.workers, cls.measures_gpu):
        return 0
    indices = _indices(options.gpus, cls.measures_gpu)
    for index in indices:
        prespawn(WORKER, worker_env(index, cls.measures_gpu, dict(cls.sets_env)),
                 list(sys.path))
    return len(indices)


def start_pool(options: RunOptions, space: Any, workers: int) -> CompilePool | None:
    """The compile pool a run with ``options`` will ask for (``--compile-workers``, else the
    default for ``workers`` measuring processes), started now and handed every valid
    config of ``space`` (a binary compiled once; the sweep measures first the configs
    whose binary is built).  None where it asks for no process, or the
    first GPU's facts cannot be read from the driver: the sweep then starts its own.  An
    exhaustive sweep's configs go in the order its sampler will propose them; a sampler
    that follows the kernel model is handed none here: the sweep hands them over in the
    model's order once it has the model's guesses (its processes import and warm up
    meanwhile)."""
    from sweeper.devices._gpu_query import gpu_arch, query_gpu
    from sweeper.kernels._precompile import Target
    from sweeper.plugins import sampler_capabilities
    from sweeper.samplers._order import plan_order
    from sweeper.space import Invalid
    from sweeper.store import key_of
    from sweeper.study import resolved
    from sweeper.sweep._compile_pool import CompilePool, PoolSetup, default_size

    asked = options.compile_workers
    size = default_size(workers) if asked is None else asked
    if size <= 0:
        return None
    index = (options.gpus or [0])[0]
    facts, arch = query_gpu(index), gpu_arch(index)
    if isinstance(facts, str) or arch is None:
        return None
    pool = CompilePool(PoolSetup(space, Target.parse(arch), list(sys.path)), size)
    if not sampler_capabilities(space.sampler.name).plans:
        return pool
    try:
        valid = [(key_of(choice), config) for choice, config in resolved(space, facts.env())
                 if not isinstance(config, Invalid)]
    except SweeperError:          # said in its place, when the sweep enumerates the space
        pool.close()
        return None
    # the exhaustive sampler's order (one-at-a-time's plan is made from its baseline)
    pool.ahead(plan_order(valid, space.sampler.seed)
               if space.sampler.name == "exhaustive" else valid)
    return pool


def _indices(asked: Sequence[int] | None, gpu: bool) -> list[int]:
    """The GPU indices ``--gpus`` names: none given, the first; ``all``, every one the
    driver counts.  None on a GPU device where there is no CUDA driver at all (the device
    is refused in one line when it opens; no process need import torch for that)."""
    from sweeper.devices._gpu_query import gpu_count, has_driver

    if gpu and not has_driver():
        return []
    if asked is None:
        return list(range(gpu_count())) if gpu else []
    return list(asked) or [0]
