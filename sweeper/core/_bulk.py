"""Building many objects at once without paying the cyclic garbage collector for them."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while a block builds a great many objects that
    hold no cycles (a replay table's 10⁶ rows, a journal's records): each collection would
    walk every container made so far, about a third of such a block's time.  Objects
    that do form cycles are still collected, at the next collection after the block."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
