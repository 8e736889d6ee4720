"""Process-wide state a run sets for a while and puts back as it was: environment
variables, and the level of a library's logger (Optuna's, which a sweep quiets for its
own studies), so that a notebook's later code finds its process as it left it."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable, Iterator


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
