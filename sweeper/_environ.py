"""Environment variables set for a while and put back as they were."""

from __future__ import annotations

import contextlib
import os
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
