"""An interpreted run also compiles its Triton kernel for a real GPU (``--gpu-check``).

The Triton interpreter runs what Triton's compiler refuses: a kernel reading a
module-level global that is not a ``tl.constexpr`` runs fine on ``--device interpret``
and fails to compile, every config of it, on the GPU.  So a run on a device that compiles
nothing for a GPU but runs Triton kernels (``Device.checks_gpu_compile``: the
interpreter) compiles the kernel for a GPU target as well (``sm_90`` unless
``--gpu-check-target`` names another), without a GPU, through the compile pool's
machinery (:func:`~sweeper.kernels._precompile.compiling_for`: the kernel's own launch,
here on the interpreter's CPU tensors, each Triton launch turned into a compile into
Triton's disk cache).

What it costs, and so what is checked (``--gpu-check``):

- ``first`` (the default): one representative binary per run, the space's first valid
  config the kernel does not turn down (:meth:`~sweeper.kernels.Kernel.cannot_launch`),
  compiled before the first trial and said in the header (``gpu check: ...``).
  A compile takes 0.1-2 s of CPU; Triton caches it on disk, so a run of the same space
  again pays only the cache lookup, whose first in a process hashes Triton's own
  library (``triton_key``, 0.5 s) and imports gluon (0.15 s).  Measured on the 2-core
  development machine (``sweeper run SPACE --device interpret --trials 3``, 2026-12-03,
  the header's seconds: fork and hash included): 0.84 s (copy-small), 0.79 s (softmax),
  1.03 s (scale) on an empty Triton cache, 0.59-0.73 s cached.  A process that runs
  many (the test suite's pytest, a notebook) hashes Triton once: a later check of a
  cached binary takes about 0.2 s.  The test suite runs hundreds of interpreted sweeps;
  checking every binary would add a compile to most of their trials.  Under a time
  budget that leaves less than a check took on this machine last (``RunCosts.gpu_check_s``;
  :data:`GPU_CHECK_S` before one ran) before the report, the set-up skips it, saying so;
  one that runs is ended where the budget's time for it runs out.
- ``all``: every distinct binary (:func:`~sweeper.kernels._binaries.binary_of`) before
  its first trial, a config the compiler refuses recorded as the GPU run records it.
- ``off``: nothing is compiled for a GPU.

A refusal is what the GPU run would make of it: where the representative is refused,
every trial is compiled for the target before it runs, and one the compiler refuses is
recorded as a ``compile_error`` whose reason is the compiler's message and the kernel's
``file:line`` (:func:`~sweeper.trial.classify`, as a GPU worker words it), prefixed
with the target, and never interpreted (a keyword the jitted function does not take,
which the interpreter drops and a GPU launch refuses before compiling, is the ``crashed``
trial a GPU run records); so a kernel broken everywhere stops after its
first five configs failed alike, as on the GPU, and a config the compiler takes is
measured on the interpreter as before (once one is, ``first`` stops checking).  A
config the kernel turns down is never compiled: it is skipped by the kernel, as
without the check; nor is one whose refusal fails (a ``refuse=`` with a bug), whose trial
fails with that bug as without the check (the representative is one only where every
other is turned down or fails too).

Where it compiles: in a child forked from this process (:func:`in_a_fork`), between
trials, never during one, so the interpreter's timings are untouched and what the
kernel's launch changes on the Python side stays in the child.  The fork has torch,
triton and the kernel imported already; a compile pool's process would import them
again (about 6 s of CPU on the 2-core machine) for one compile, and a thread would
share the GIL and Triton's patched launch with a trial being timed.  In a process that
interprets, the compile sees the jitted functions a module holds (Triton's own
``tl.max``, a kernel's helpers) as compiled twins, and Triton's language as
:func:`~sweeper.kernels._precompile.keep_language` kept it before the interpreter
patched it (Triton 3.9 leaves its patches on after an interpreted ``tl.max``); a process
that interpreted before sweeper could keep it (a notebook that ran a kernel first) skips
the check, saying why.

Where Triton cannot compile for the target (no NVIDIA backend, no ``ptxas`` in the
wheel), or the launch cannot be compiled here for a reason that is not the kernel's
(the language left patched, a host-side step that fails), the check is skipped with one
line saying why, and a kernel whose launch runs no Triton kernel (a torch op) is said to
have nothing to compile; it never fails a run.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import select
import signal
import time
import warnings
from collections.abc import Callable, Hashable
from typing import Any

from sweeper.core import launch_text
from sweeper.core._spelling import given
from sweeper.fsio import write_all
from sweeper.kernels import Kernel
from sweeper.kernels._binaries import binary_of
from sweeper.kernels._precompile import (
    NO_TRITON,
    Compile,
    Precompiled,
    Precompiler,
    Target,
    keep_language,
)
from sweeper.space import Config
from sweeper.store import TrialRecord
from sweeper.study import Choice, now
from sweeper.trial import TrialResult, TrialStatus

#: Where :func:`~sweeper.trial.classify` names the kernel's line, at a reason's end.
_AT = re.compile(r" \(at (.+)\)$")
#: Triton's refusal of a keyword its jitted function does not take (a meta-parameter the
#: kernel declares but its ``@triton.jit`` function lacks, passed as ``**config.meta``):
#: the interpreter drops such a keyword and runs, a GPU launch raises this at every
#: config, which a GPU run records as ``crashed``.
_UNKNOWN_KEYWORD = re.compile(r"KeyError: .Keyword argument \S+ was specified but "
                              r"unrecogni[sz]ed")
#: Seconds a forked compile may take before it is ended and the check skipped: a child
#: forked from a process with threads can block on a lock one of them held at the fork.
FORK_TIMEOUT_S = 120.0
#: Seconds the check of one config takes on the 2-core development machine (0.6-1.2 s:
#: the fork, Triton's hash of its library, the compile or its cache lookup), where no
#: check ran on this machine yet (``RunCosts.gpu_check_s`` keeps what the last one took):
#: a time budget that leaves less before its report skips the check (:func:`budget_skip`)
GPU_CHECK_S = 1.0


def budget_skip(left_s: float | None, target: str, check_s: float | None = None
                ) -> str | None:
    """The line that says the check is skipped where the time budget leaves ``left_s``
    seconds before the run's report (None: no budget), less than a check takes here
    (``check_s``, as this machine's last check took; ``None``: :data:`GPU_CHECK_S`);
    ``None`` where it fits."""
    takes = GPU_CHECK_S if check_s is None else check_s
    if left_s is None or left_s >= takes:
        return None
    return (f"gpu check: skipped: the time budget leaves {max(left_s, 0.0):.1f} s before the "
            f"report, less than a compile for {target} takes here (about {takes:.2g} s); "
            "nothing compiled for it (a longer time budget, or none, compiles it)")


def cannot_compile(target: Target) -> str | None:
    """Why Triton cannot compile for ``target`` here (no backend for it, no ``ptxas``),
    or ``None``."""
    try:
        from triton.backends import backends
    except Exception as err:  # noqa: BLE001 - any failure means: no backend to ask
        return f"Triton's backends cannot be read ({type(err).__name__}: {err})"
    backend = "nvidia" if target.backend == "cuda" else target.backend
    if backend not in backends:
        return f"this Triton has no {backend} backend (it has: {', '.join(sorted(backends))})"
    if backend != "nvidia":
        return None
    try:
        try:
            from triton import knobs

            ptxas = knobs.nvidia.ptxas.path   # finding it (and running it) is the check
        except ImportError:                   # an older Triton: no knobs
            from triton.backends.nvidia.compiler import _path_to_binary

            ptxas = _path_to_binary("ptxas")[0]
    except Exception as err:  # noqa: BLE001 - RuntimeError: Cannot find ptxas
        return f"Triton's NVIDIA backend finds no ptxas ({err})"
    known = _ptxas_archs(ptxas)
    if known and target.arch not in known:
        return (f"this Triton's ptxas does not compile for {target} (it knows "
                f"{', '.join(f'sm_{a}' for a in sorted(known))})")
    return None


def _ptxas_archs(ptxas: str) -> set[int]:
    """The architectures ``ptxas --help`` lists as its ``--gpu-name`` values (empty where
    it cannot be asked): a target it does not know would be every config's compile
    error, which is the tool's limit, not the kernel's."""
    import subprocess

    try:
        text = subprocess.run([ptxas, "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {int(a) for a in re.findall(r"'sm_(\d+)[af]?'", text)}


class GpuCheck:
    """Compiles ``kernel``'s configs for ``target`` (``mode``: one of
    :data:`~sweeper.options.GPU_CHECKS`) in this process: :meth:`start` the
    representative, :meth:`refused` each trial's config where it is to be checked.
    ``compiler`` stands in for the :class:`~sweeper.kernels._precompile.Precompiler`
    (the tests')."""

    def __init__(self, kernel: Kernel, target: Target, mode: str = "first",
                 compiler: Any = None) -> None:
        self.target, self.mode = target, mode
        # the interpreter's tensors (on the CPU, at most 16 KiB) as its launches take them
        self.compiler = compiler if compiler is not None else \
            Precompiler(kernel, target, device="cpu")
        #: every trial's config is compiled before it runs (``all``, or the
        #: representative was refused)
        self.every = mode == "all"
        #: the outcome of each binary compiled so far
        self.results: dict[Hashable, Precompiled] = {}
        #: seconds spent compiling, and how many binaries were
        self.seconds = 0.0
        #: seconds the representative's check took (the fork, this process's hash of
        #: Triton, the compile or its cache lookup; ``None``: not checked): what a check
        #: costs a run's set-up here
        self.first_s: float | None = None
        #: the seconds of each compile this run, in turn (:attr:`config_s` prices the next)
        self._walls: list[float] = []
        #: a config's compile was ended at the time budget's deadline (:meth:`refused`):
        #: the sweep measures nothing more
        self.cut = False
        #: why the check was skipped (``None``: it ran)
        self.skipped: str | None = None
        #: the binaries whose launch Triton refuses before compiling (an unknown keyword):
        #: ``crashed`` on a GPU, not a ``compile_error``
        self.launch_refused: set[Hashable] = set()

    @classmethod
    def open(cls, kernel: Kernel, target_text: str, mode: str) -> tuple[GpuCheck | None, str]:
        """The check ``mode`` (``first`` or ``all``) asks for, compiling for
        ``target_text`` (``sm_90``); ``None`` and the line the run's header says where it
        cannot run here, else ``""``."""
        target = Target.parse(target_text)
        why = cannot_compile(target)
        if why is not None:
            return None, f"gpu check: skipped: {why}; nothing compiled for {target}"
        keep_language()          # before this run interprets: compiles in it are Triton's
        return cls(kernel, target, mode), ""

    def start(self, config: Config | None, within_s: float | None = None,
              turned_down: tuple[Config, str] | None = None) -> str:
        """Compile the representative ``config`` (the space's first valid one the kernel
        does not turn down); the header's line about it.  Refused: every trial is checked
        from now on.  A compile not done ``within_s`` (what the time budget leaves it) is
        ended and the check skipped.  No ``config``: the check is skipped, saying that
        the kernel turns down every valid config where ``turned_down`` gives the first
        and why, else that the space has none."""
        if config is None and turned_down is not None:
            self.skipped = "every valid config turned down by the kernel"
            first, why = turned_down
            return (f"gpu check: skipped: the kernel turns down every valid config of the "
                    f"space (the first, {_named(first)}: {why}); nothing compiled for "
                    f"{self.target}")
        if config is None:
            self.skipped = "no valid config"
            return "gpu check: skipped: the space has no valid config"
        result = self._compile(config, within_s)
        if result.status is Compile.LEFT:
            self.skipped = result.reason
            self.every = False
            if _ended(result, within_s):
                return (f"gpu check: skipped: the compile for {self.target} did not end "
                        f"within the {within_s:.1f} s the time budget left it; nothing "
                        "compiled for it (a longer time budget, or none, compiles it)")
            if result.reason == NO_TRITON:
                return (f"gpu check: nothing to compile for {self.target}: the kernel's "
                        f"launch ({_named(config)}) runs no Triton kernel")
            return (f"gpu check: skipped: {_named(config)} cannot be compiled for "
                    f"{self.target} here ({result.reason})")
        self.first_s = result.seconds
        if result.status is Compile.FAILED:
            self.every = True
            reason = result.reason.removeprefix(f"{self.target}: ")
            at = _AT.search(reason)
            where = f" at {at.group(1)}" if at else ""
            reason = reason[:at.start()] if at else reason
            launch = binary_of(config) in self.launch_refused
            who = f"Triton's {self.target} launch" if launch else \
                f"the {self.target} compiler"
            status = "crashed" if launch else "a compile_error"
            return (f"gpu check: {who} refuses the kernel{where} "
                    f"({_named(config)}), which a GPU would not run: {reason}; each config "
                    f"is compiled for {self.target} before it runs, a refused one recorded "
                    f"as {status} as on a GPU")
        what = "every binary is" if self.every else "one config was"
        return (f"gpu check: {what} compiled for {self.target} too "
                f"({result.seconds:.2f} s; {given('gpu_check', 'off')} skips it)")

    @property
    def config_s(self) -> float:
        """Seconds the check of the next trial's config may take, which the time budget
        keeps with the trial in flight: while every config is checked, the longest compile
        of this run after its first (the first pays the fork's and Triton's start, as the
        representative's did), else the first, else :data:`GPU_CHECK_S`; 0 where configs
        are not checked."""
        if not self.every or self.skipped is not None:
            return 0.0
        walls = self._walls[1:] or self._walls
        return max(walls) if walls else GPU_CHECK_S

    def refused(self, number: int, choice: Choice, config: Config | None,
                within_s: float | None = None) -> TrialRecord | None:
        """Trial ``number`` of ``choice`` as the ``compile_error`` the GPU would record,
        where it is checked and the compiler refuses its config; else ``None`` (it is
        measured on the interpreter).  A compile not done ``within_s`` (what the time
        budget leaves it) is ended, nothing recorded, and :attr:`cut` set: the sweep
        stops there, as the set-up's check does."""
        if not self.every or config is None or self.skipped is not None:
            return None
        started, t0 = now(), time.perf_counter()
        result = self._compile(config, within_s)
        if _ended(result, within_s):
            self.cut = True
            return None
        if result.status is Compile.COMPILED and self.mode == "first":
            self.every = False            # the kernel compiles: back to one check
        if result.status is not Compile.FAILED:
            return None
        status = TrialStatus.CRASHED if binary_of(config) in self.launch_refused else \
            TrialStatus.COMPILE_ERROR
        return TrialRecord.from_result(
            number, choice, config, TrialResult(status, result.reason),
            started, time.perf_counter() - t0)

    def lines(self) -> list[str]:
        """What the check did, for the sweep's timing breakdown."""
        failed = sum(1 for r in self.results.values() if r.status is Compile.FAILED)
        return [f"gpu check: {len(self.results)} binaries compiled for {self.target} in "
                f"{self.seconds:.2f} s, {failed} refused"]

    def _compile(self, config: Config, within_s: float | None = None) -> Precompiled:
        """``config``'s binary compiled for the target, once a run (ended, and left, past
        ``within_s``); a refusal's reason names the target."""
        binary = binary_of(config)
        if binary not in self.results:
            t0 = time.perf_counter()
            with warnings.catch_warnings():     # Triton 3.9's notice of a default to come
                warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION")
                result = in_a_fork(self.compiler.compile, config, within_s)
            # what it cost this run: the fork and this process's hash of Triton included
            wall = time.perf_counter() - t0
            self.seconds += wall
            self._walls.append(wall)
            status = result.status
            if status is Compile.LEFT and _UNKNOWN_KEYWORD.match(result.reason):
                status = Compile.FAILED                 # the kernel's fault, not this host's
                self.launch_refused.add(binary)
            reason = f"{self.target}: {result.reason}" if status is Compile.FAILED \
                else result.reason
            result = Precompiled(status, reason, wall, result.kernels)
            if _ended(result, within_s):
                return result           # ended at the deadline: a later run compiles it
            self.results[binary] = result
        return self.results[binary]


def _ended(result: Precompiled, within_s: float | None) -> bool:
    """Whether ``result`` is a compile ended at its deadline (``within_s``, what the time
    budget left it), not one that failed or was left otherwise."""
    return within_s is not None and result.status is Compile.LEFT and \
        result.seconds >= within_s


def _named(config: Config) -> str:
    """``grid=2 block=32 BLOCK=256``: the config as every line names its launch."""
    return launch_text(config.grid, config.block, config.meta, config.grid_extents)


def in_a_fork(compile: Callable[[Config], Precompiled], config: Config,
              within_s: float | None = None) -> Precompiled:
    """``compile(config)`` in a child forked from this process (it has torch, triton and
    the kernel imported already: a few milliseconds), so what the kernel's launch changes
    on the Python side (a launch counter, a cache of its own: tests/short_kernels_for_tests
    ``tires`` does its work on a config's first launch only) stays in the child, and the
    trial's first launch is the one the interpreter would have run first.  This process
    hashes Triton's library once first (``triton_key``), so each child does not.  Where
    there is no ``fork`` (not POSIX): here.  A child with no answer after ``within_s``
    (else :data:`FORK_TIMEOUT_S`) is killed, the compile left."""
    if not hasattr(os, "fork"):
        return compile(config)
    with contextlib.suppress(Exception):
        from triton.runtime.cache import triton_key

        triton_key()                     # cached in this process, inherited by the child
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                         # the child: compile, answer, leave at once
        code = 0
        try:
            os.close(read)
            try:
                answer = compile(config)
            except BaseException as err:  # noqa: BLE001 - the parent hears it as a reason
                answer = Precompiled(Compile.LEFT, f"{type(err).__name__}: {err}")
            write_all(write, pickle.dumps(answer))      # into the pipe, not a file
            os.close(write)
        except BaseException:  # noqa: BLE001 - never back into the parent's code
            code = 1
        os._exit(code)
    os.close(write)
    chunks: list[bytes] = []
    limit_s = FORK_TIMEOUT_S if within_s is None else min(within_s, FORK_TIMEOUT_S)
    deadline = time.monotonic() + limit_s
    with os.fdopen(read, "rb", buffering=0) as answer_in:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([answer_in], [], [], left)[0]:
                with contextlib.suppress(OSError):     # stuck (a lock held at the fork)
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Precompiled(Compile.LEFT, f"the compile's process gave no answer "
                                   f"within {limit_s:g} s")
            chunk = answer_in.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if not data:
        return Precompiled(Compile.LEFT, f"the compile's process ended without an answer "
                           f"(wait status {status})")
    result: Precompiled = pickle.loads(data)
    return result
