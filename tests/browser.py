"""Headless Chromium for the tests: a page loaded as a user's browser loads it (from a file,
offline), with what it printed to its console, the document after its scripts ran, and a
screenshot.  As root (CI containers) Chromium needs ``--no-sandbox``; each load gets a
fresh profile folder, so no two runs share state."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

#: The browsers looked for, in order: Debian's package is ``chromium``.
NAMES = ("chromium", "chromium-browser")
#: A console line of Chromium's log (``--enable-logging=stderr``): anything the page logged.
CONSOLE = re.compile(r"CONSOLE|Uncaught", re.IGNORECASE)
TIMEOUT = 120


class Loaded(NamedTuple):
    """A page as the browser left it."""

    dom: str                    # the document after its scripts ran (``--dump-dom``)
    console: list[str]          # the console lines it logged (errors included)
    screenshot: Path            # a PNG of the first ``size`` pixels


def find() -> str | None:
    """The Chromium to run, or None."""
    return next((path for path in map(shutil.which, NAMES) if path), None)


def missing() -> str | None:
    """Why no browser can be run here, or None."""
    return None if find() else f"no headless browser: none of {', '.join(NAMES)} is on PATH " \
                               "(Debian's chromium package)"


def _run(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = find()
    assert binary is not None, missing()
    with tempfile.TemporaryDirectory(prefix="sweeper-chromium-") as profile:
        command = [binary, "--headless", "--disable-gpu", "--no-first-run",
                   "--hide-scrollbars", f"--user-data-dir={profile}",
                   *(["--no-sandbox"] if os.geteuid() == 0 else []), *args,
                   page.resolve().as_uri()]
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                              check=True)


def load(page: Path, screenshot: Path, size: tuple[int, int] = (1280, 1400)) -> Loaded:
    """``page`` loaded twice, offline: once for its document and console, once for a
    screenshot of ``size`` pixels written to ``screenshot``."""
    dumped = _run(page, "--enable-logging=stderr", "--v=0", "--dump-dom")
    console = [line for line in dumped.stderr.splitlines() if CONSOLE.search(line)]
    _run(page, f"--window-size={size[0]},{size[1]}", f"--screenshot={screenshot.resolve()}")
    return Loaded(dumped.stdout, console, screenshot)
