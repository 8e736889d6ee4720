"""Where a trial's host time went, by what it was spent on."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class Spent(dict[str, float]):
    """Seconds by what they were spent on (``perf_counter``), added up over the blocks
    timed with :meth:`on`: a trial's compile, verification, cool-downs and sampling."""

    @contextlib.contextmanager
    def on(self, what: str) -> Iterator[None]:
        """Add the time the block takes to ``what``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[what] = self.get(what, 0.0) + time.perf_counter() - t0
