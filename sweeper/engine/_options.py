"""What a run is asked to do, as typed, frozen values: the one thing the front doors (the
``sweeper`` command, :func:`sweeper.run`, benchmarks) build and the engine reads.

Each value is checked where it is made (the command's parser, the API's arguments), so
the engine never re-reads an option by name nor guesses its type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sweeper.options import GPU_CHECK_TARGET

if TYPE_CHECKING:
    from sweeper.space import Override


@dataclass(frozen=True)
class SpaceSource:
    """Where the space comes from: a file (``path``), YAML text under a pseudo file name
    (``path`` ``<string>`` or ``<dict>``, with ``text``), or a ``@triton.autotune`` kernel
    (``from_autotune``, ``module:kernel``); ``params`` are the ``-p KEY=VALUES``
    overrides (the API's dict entries as :class:`~sweeper.space.Override`s),
    ``allow_path`` the folders outside the space file's own that ``extends:`` and file
    references may read."""

    path: str | None = None
    text: str | None = None
    from_autotune: str | None = None
    params: tuple[str | Override, ...] = ()
    allow_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunOptions:
    """A run: the space, where it is measured (``device``: ``cuda``, ``interpret``,
    ``replay:TABLE.csv``) and kept (``study`` under ``studies_dir``, or ``storage``, a
    database URL), its budgets (``trials``, ``time_s``), its workers (``gpus``: ``()``
    the one GPU the device opens, ``None`` every visible one; ``workers`` ``process`` or
    ``inline``, None the device's default; ``compile_workers``, None ``auto``), on the
    interpreter what it also compiles for a GPU (``gpu_check``: ``first``, ``all`` or
    ``off``; ``gpu_check_target``: ``sm_90``, :mod:`sweeper.sweep._gpu_check`) and what
    it says and writes (``quiet``, ``report``, ``svg``, ``timing``; ``priors``: ``auto``
    starts from other studies' winners).

    ``command`` is what the study records as the command that made it (the front door
    names itself: ``sweeper run ...`` with URLs masked, ``sweeper.run(...)``; None:
    ``sweeper run``).  ``restart_argv``: where a trial broke the CUDA context
    or hung, the run goes on in a fresh ``python -m sweeper`` process with these
    arguments; None (a call from Python) makes that an error to the caller instead, the
    caller's process never replaced.  ``clock_from_start``: the time line counts from the
    process's start (a command from the shell) rather than from the call."""

    space: SpaceSource
    device: str = "cuda"
    study: str | None = None
    studies_dir: str = "studies"
    storage: str | None = None
    trials: int | None = None
    time_s: float | None = None
    force: bool = False
    gpus: tuple[int, ...] | None = ()
    workers: str | None = None
    compile_workers: int | None = None
    gpu_check: str = "first"
    gpu_check_target: str = GPU_CHECK_TARGET
    quiet: bool = False
    #: nothing on standard output, the summary and the report's line included (the
    #: API's ``quiet=True``; errors still go to standard error)
    silent: bool = False
    report: bool = True
    svg: bool = False
    timing: bool = False
    priors: bool = True
    command: str | None = None
    restart_argv: tuple[str, ...] | None = None
    clock_from_start: bool = False
