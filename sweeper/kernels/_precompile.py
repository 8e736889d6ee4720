"""Compiling a config ahead of its launch, for a named GPU target, without a GPU.

A compile worker (:mod:`sweeper.sweep._compile_pool`) holds no CUDA context: Triton is
told the target (``GPUTarget("cuda", 90, 32)`` for an H100/H200) in place of asking
the driver, and the kernel's own :meth:`~sweeper.kernels.Kernel.launch` runs on
``meta`` tensors (shapes and dtypes, no memory) with every Triton launch turned into
Triton's warm-up, which compiles into the on-disk cache and launches nothing.  Going
through the launch itself, not a second description of it, is what makes the
signature, the constexprs and the specialization (pointers aligned to 16 bytes, as
fresh allocations are) those of the measuring worker's launch, so its cache key is
the same and the worker loads the binary instead of compiling it.

A CUDA C kernel (``cuda``) compiles through NVRTC into its own disk cache the same way,
for the target's architecture; it needs CuPy, and without it the worker compiles.
"""

from __future__ import annotations

import contextlib
import enum
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sweeper.core import Config, Problem
from sweeper.errors import SweeperError
from sweeper.kernels._base import Buffers, Kernel
from sweeper.kernels._cuda_build import CudaLaunch, NvrtcCompiler, precompile
from sweeper.kernels._jit import COMPILING
from sweeper.kernels._launched import runs_patched

_ARCH = re.compile(r"sm_?(\d+)a?")
#: Why a launch that ran no Triton kernel (a torch op) was not compiled ahead.
NO_TRITON = "the launch compiled no Triton kernel"


@dataclass(frozen=True)
class Target:
    """What a compile is for: Triton's ``GPUTarget(backend, arch, warp_size)``."""

    backend: str = "cuda"
    arch: int = 90
    warp_size: int = 32

    @classmethod
    def parse(cls, text: str) -> Target:
        """``sm_90`` (or ``90``) as a CUDA target; a :class:`SweeperError` otherwise."""
        m = _ARCH.fullmatch(text.strip()) or re.fullmatch(r"(\d+)", text.strip())
        if not m:
            raise SweeperError(f"compile target {text!r}: expected a CUDA architecture "
                               "such as sm_90")
        return cls("cuda", int(m.group(1)))

    def __str__(self) -> str:
        return f"sm_{self.arch}" if self.backend == "cuda" else f"{self.backend}:{self.arch}"


class Compile(str, enum.Enum):
    """What compiling a config ahead came to."""

    COMPILED = "compiled"      # in the disk cache: the worker's launch loads it
    FAILED = "failed"          # the compiler refused it: the trial is a compile_error
    LEFT = "left"              # not compiled here (see the reason): the worker compiles


@dataclass(frozen=True)
class Precompiled:
    """A config compiled ahead: how it went, why (for ``FAILED`` the reason the trial
    records, as :func:`sweeper.trial.classify` words it), the compile's seconds and how
    many Triton kernels the launch compiled."""

    status: Compile
    reason: str = ""
    seconds: float = 0.0
    kernels: int = 0
    #: the kernel source hash the compile process loaded, where no file of it was edited
    #: since ("": not told, or edited): a refusal is kept only from the sweep's own
    source: str = ""


class _Counter:
    """How many Triton launches turned into compiles."""

    kernels = 0


@contextlib.contextmanager
def compiling_for(target: Target) -> Iterator[_Counter]:
    """Within it, a Triton launch compiles for ``target`` into the disk cache and launches
    nothing, an interpreted kernel included (its compiled twin is compiled, in a language
    unpatched: :func:`_unpatched_language`): each launch is made Triton's warm-up where
    it ends (:func:`~sweeper.kernels._launched.runs_patched`), so one through a
    ``@triton.heuristics``, which never calls ``kernel[grid]``, is compiled too.
    Everything is put back afterwards."""
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    counter = _Counter()
    twins: dict[int, Any] = {}

    def warm(compile_only: Any) -> Any:
        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                counter.kernels += 1
            return compile_only(fn, *args, grid=grid, warmup=True, **kwargs)
        return run

    def warm_twin(_: Any) -> Any:
        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            return _twin(fn, twins).run(*args, grid=grid, warmup=warmup, **kwargs)
        return run

    saved = driver._active
    named = GPUTarget(target.backend, target.arch, target.warp_size)
    # Triton's active driver stood in for: the target it was told, device 0, no stream;
    # nothing touches CUDA
    driver.set_active(SimpleNamespace(get_current_target=lambda: named,
                                      get_current_device=lambda: 0,
                                      get_current_stream=lambda device=None: 0))
    COMPILING[0] = True
    try:
        with runs_patched({JITFunction: warm, InterpretedFunction: warm_twin}), \
                _unpatched_language(twins):
            yield counter
    finally:
        COMPILING[0] = False
        driver._active = saved


def _twin(fn: Any, twins: dict[int, Any]) -> Any:
    """The compiled twin of the interpreted function ``fn`` (one per function)."""
    from triton.runtime.jit import JITFunction

    if id(fn) not in twins:
        twins[id(fn)] = JITFunction(fn.fn, **fn.kwargs)
    return twins[id(fn)]


def _language_objects() -> list[Any]:
    """What Triton's interpreter patches to run a kernel (``_patch_lang``, Triton 3.x):
    the language's modules and the classes whose methods it replaces."""
    import triton.language as tl

    core = tl.core
    found = [tl, core, getattr(tl, "math", None), core.tensor,
             getattr(core, "tensor_descriptor_base", None), getattr(core, "condition", None),
             core.dtype]
    return [obj for obj in found if obj is not None]


#: Each of :func:`_language_objects` and its attributes, kept while no interpreter had
#: patched them (:func:`keep_language`); None: not kept (yet).
_PRISTINE: list[tuple[Any, dict[str, Any]]] | None = None


def language_patched() -> bool:
    """Whether Triton's interpreter left its patches on the language: in Triton 3.9 a
    device function an interpreted kernel calls (``tl.max`` ...) patches it for good."""
    from triton.runtime.interpreter import InterpretedFunction

    return any(getattr(value, "__module__", None) == "triton.runtime.interpreter" and
               not isinstance(value, InterpretedFunction)     # the jitted library's own
               for obj in _language_objects() for value in list(vars(obj).values()))


def keep_language() -> bool:
    """Keep the Triton language as it is, unless the interpreter patched it already, so
    that :func:`compiling_for` compiles in it in a process that interprets; whether it is
    kept (now or before)."""
    global _PRISTINE
    with contextlib.suppress(ImportError):
        if _PRISTINE is None and not language_patched():
            _PRISTINE = [(obj, dict(vars(obj))) for obj in _language_objects()]
    return _PRISTINE is not None


@contextlib.contextmanager
def _unpatched_language(twins: dict[int, Any]) -> Iterator[None]:
    """Where this process interprets Triton kernels (``TRITON_INTERPRET``): the language as
    :func:`keep_language` kept it (the interpreter's patches taken off for the while, a
    compile in the patched one fails on the interpreter's own values), and each jitted
    function a module holds, interpreted, as its compiled twin, so a kernel's calls to
    ``tl.max`` or a helper of its own compile as calls to a Triton function.  Everything
    is put back afterwards.  Elsewhere (a compile process): nothing."""
    import os
    import sys
    import types

    from triton.runtime.interpreter import InterpretedFunction

    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        yield
        return
    if language_patched() and not keep_language():
        raise LanguagePatched("this process ran Triton's interpreter before sweeper could "
                              "keep Triton's language unpatched (sweeper.kernels."
                              "_precompile.keep_language)")
    undo: list[tuple[Any, str, Any]] = []
    missing = object()
    try:
        for obj, attrs in _PRISTINE or []:
            now = dict(vars(obj))
            for name in set(now) | set(attrs):
                if now.get(name, missing) is not attrs.get(name, missing):
                    undo.append((obj, name, now.get(name, missing)))
                    if name in attrs:
                        setattr(obj, name, attrs[name])
                    else:
                        delattr(obj, name)
        for module in list(sys.modules.values()):
            # plain modules only, each value's type read, not asked: a lazy module or
            # object (torch's) would import what it stands for, sympy included
            if type(module) is not types.ModuleType:
                continue
            names = vars(module)
            for name, value in list(names.items()):
                if type(value) is InterpretedFunction:
                    undo.append((module, name, value))
                    names[name] = _twin(value, twins)
        yield
    finally:
        for obj, name, value in reversed(undo):
            if value is missing:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


class LanguagePatched(RuntimeError):
    """Triton's language is left patched by its interpreter and was not kept before: a
    compile in this process cannot be told from the interpreter's values."""


class Precompiler:
    """Compiles ``kernel``'s configs for ``target`` through the kernel's launch on
    ``meta`` tensors (allocated once per problem; they take no memory), or on ``device``:
    the interpreter's problems, capped at 16 KiB, cost nothing on the CPU, where torch's
    first ``meta`` tensor imports its symbolic shapes (sympy: 0.8 s on the 2-core
    machine)."""

    def __init__(self, kernel: Kernel, target: Target, device: str = "meta") -> None:
        self.kernel, self.target, self.device = kernel, target, device
        self._buffers: dict[Problem, Buffers] = {}
        launch = getattr(getattr(kernel, "plan", None), "launch", None)
        #: a CUDA C kernel's launch, compiled by NVRTC for the target (no compiler: no CuPy)
        self.cuda = launch if isinstance(launch, CudaLaunch) else None
        if self.cuda is not None and self.cuda.compiler is None:
            with contextlib.suppress(ImportError):        # no CuPy: the worker compiles
                self.cuda.compiler = NvrtcCompiler(arch=str(target))

    def warm_up(self) -> None:
        """Compile a one-line Triton kernel for the target (``_touch``): the compiler's
        own start is paid here, not by the first config, which a worker that caught up
        with the pool may be waiting on.  Nothing for a CUDA C kernel; never raises."""
        if self.cuda is not None:
            return
        with contextlib.suppress(Exception):
            import torch

            from sweeper.kernels._touch import touch

            with compiling_for(self.target):
                touch[(1,)](torch.empty(1, device="meta"))

    def compile(self, config: Config) -> Precompiled:
        """``config`` compiled ahead; never raises for the config's fault."""
        from sweeper.trial import TrialStatus, classify

        t0 = time.perf_counter()
        if self.cuda is not None and self.cuda.compiler is None:
            return Precompiled(Compile.LEFT, "CuPy is not installed: NVRTC compiles in the "
                               "worker")
        try:
            if self.cuda is not None:
                precompile(self.cuda, config)
                return Precompiled(Compile.COMPILED, "", time.perf_counter() - t0, 1)
            buffers = self._buffers.get(config.problem)
            if buffers is None:
                buffers = self._buffers[config.problem] = \
                    self.kernel.allocate(config.problem, self.device)
            with compiling_for(self.target) as counter:
                self.kernel.launch(buffers, config)
        except Exception as err:  # noqa: BLE001 - a failure is the trial's, or the worker's
            status, reason = classify(err)
            failed = status is TrialStatus.COMPILE_ERROR
            return Precompiled(Compile.FAILED if failed else Compile.LEFT,
                               reason, time.perf_counter() - t0)
        seconds = time.perf_counter() - t0
        if not counter.kernels:
            return Precompiled(Compile.LEFT, NO_TRITON, seconds)
        return Precompiled(Compile.COMPILED, "", seconds, counter.kernels)
