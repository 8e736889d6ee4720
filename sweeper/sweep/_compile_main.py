"""A compile process's side (:mod:`sweeper.sweep._compile_pool`): load the kernel once
from the :class:`~sweeper.sweep._compile_pool.PoolSetup`, say ready, then compile each
config it is sent for the named target until it is sent ``None`` or the coordinator
goes away.  It runs at a lower priority than the measuring worker."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from multiprocessing.connection import Connection

from sweeper._processes import jobs, warm_imports
from sweeper.sweep._compile_pool import Done, PoolSetup, Started

#: How much lower than the coordinator and the workers a compile process runs.
NICENESS = 10


def main() -> None:
    """Serve configs over the socket whose descriptor is the first argument."""
    conn = Connection(int(sys.argv[1]))
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    # triton before the setup: a process started ahead of its sweep
    # (sweeper._processes) imports it while the coordinator imports its own
    warm_imports()
    from sweeper.kernels import load_kernel
    from sweeper.kernels._precompile import Precompiler
    from sweeper.kernels._watch import SourceWatch

    setup: PoolSetup = conn.recv()
    sys.path[:0] = [p for p in setup.sys_path if p not in sys.path]
    kernel = load_kernel(setup.space.kernel, setup.space.kernel_options)
    # the source this process compiles: one started after an edit imported the new text
    watch = SourceWatch(kernel.source_files(), kernel.source_hash())
    compiler = Precompiler(kernel, setup.target)
    compiler.warm_up()
    conn.send(Started(os.getpid()))
    for key, config in jobs(conn):
        result = compiler.compile(config)
        # edited since it loaded the kernel: compiled from neither text, for all it knows
        source = "" if watch.edited() is not None else watch.source or ""
        conn.send(Done(key, dataclasses.replace(result, source=source), os.getpid()))
