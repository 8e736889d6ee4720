"""Process-wide state a run sets for a while and puts back as it was: environment
variables, the level of a library's logger (Optuna's, which a sweep quiets for its own
studies) and the threads of the BLAS libraries, so that a notebook's later code finds
its process as it left it."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController


@contextlib.contextmanager
def environ_kept(names: Iterable[str] = (), **values: str) -> Iterator[None]:
    """``values`` set in the environment within the block; they and ``names`` as they
    were before it (unset where they were unset) once it ends, whatever ran within
    changed."""
    before = {name: os.environ.get(name) for name in (*names, *values)}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def log_level_kept(package: str, imported_at: int) -> Iterator[None]:
    """The level of ``package``'s logger as it was before the block once it ends, where
    the package is imported by then; ``imported_at``: the level its import sets, which a
    package imported within the block is put back to (Optuna: ``logging.INFO``, which
    ``optuna.logging.set_verbosity`` changes for the whole process)."""
    logger = logging.getLogger(package)
    before = logger.level if package in sys.modules else imported_at
    try:
        yield
    finally:
        if package in sys.modules:
            logger.setLevel(before)


def optuna_verbosity_kept() -> contextlib.AbstractContextManager[None]:
    """Optuna's verbosity as it was before the block (:func:`log_level_kept`): a sweep,
    or an export to Optuna, sets it to WARNING for the whole process."""
    return log_level_kept("optuna", logging.INFO)


def one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """The BLAS libraries loaded in this process (numpy's, scipy's) on one thread within,
    as many as before after.  Their matrices here are small (``auto``'s surrogate: a few
    hundred rows; a ``tl.dot`` the Triton interpreter runs as NumPy's matmul: a tile),
    where more threads cost more than they save, and threads that spin waiting for work
    take a shared machine's CPU: ``benchmarks/search_robustness.py --cost`` on a 2-core
    machine spent 3-10 times less CPU a proposal (docs/search.md), and an interpreted
    matmul launch of 128×256 tiles took 77-100 ms against 20-28 ms on one thread under
    load, where its 64×64 tiles took 32-46 ms either way."""
    limited: contextlib.AbstractContextManager[object] = _blas(
        *(name in sys.modules for name in ("numpy", "scipy.linalg", "torch"))
    ).limit(limits=1, user_api="blas")
    return limited


@functools.cache
def _blas(*loaded: bool) -> ThreadpoolController:
    """The BLAS libraries loaded in this process, found once for each set of the
    libraries that load them (``loaded``: whether numpy, scipy's linalg and torch are)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()
