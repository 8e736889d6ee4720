"""The space and the device a run reads, checked once and in order; the kernel they
ask for; the space under the run's budgets.  Each error is one line naming what is
wrong."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from sweeper.core._model import DICT
from sweeper.core._spelling import given, option
from sweeper.engine._options import SpaceSource
from sweeper.errors import NoDeviceError, SweeperError


def space_and_device(source: SpaceSource, device_name: str, for_plan: bool = False,
                     on_space: Callable[[Any], object] | None = None) -> tuple[Any, Any]:
    """The device's name, the space (with ``-p`` overrides) and the device itself, checked
    in that order, then the space against the device; ``for_plan``: kernel options
    checked by form only, and the device's plan stand-in (``open_device``): no torch
    imported.  ``on_space`` is called with the space once it is read, before the device
    opens."""
    from sweeper.devices import device_class, open_device
    from sweeper.space import autotune_space, load_space

    # the variables a device sets (the interpreter's) before any kernel module is imported
    os.environ.update(device_class(device_name).sets_env)
    if (source.path is None) == (source.from_autotune is None):
        raise SweeperError("give a space file or --from-autotune module:kernel (one of them)")
    params = list(source.params)
    if source.from_autotune is not None:
        space = autotune_space(source.from_autotune, params, user_code=not for_plan)
    else:
        assert source.path is not None        # one of the two, checked above
        space = load_space(source.path, params, allow=list(source.allow_path),
                           user_code=not for_plan, text=source.text,
                           lines=source.path != DICT)
    if on_space is not None:
        on_space(space)
    try:
        device = open_device(device_name, for_plan=for_plan)
    except NoDeviceError as err:
        if not needs_gpu(space):
            raise
        # the interpreter the device's message points to cannot run this kernel either
        raise NoDeviceError(f"{str(err).split(';')[0]}, and kernel {space.kernel} runs on "
                            "a CUDA GPU only (compiled CUDA C): run on a GPU or replay a "
                            f"recorded table ({given('device', 'replay:TABLE.csv')})") from None
    device.check_space(space, user_code=not for_plan)
    return space, device


def kernel_for(space: Any, device: Any, *, processes: bool = False,
               imported: Collection[str] = ()) -> Any:
    """The space's kernel, constructed with its options; refused in one line where it
    runs on a CUDA GPU only and ``device`` launches elsewhere (a replay launches nothing),
    named as the space names it, as ``plan`` names it saying the same, where its module,
    among the modules ``imported`` before the run began, was edited since
    (:func:`refuse_stale`), and where the processes that measure cannot run it
    (:func:`refuse_unreachable`; ``processes``: the workers are processes of their own,
    else trials run in this one)."""
    from sweeper.kernels import load_kernel

    kernel = load_kernel(space.kernel, space.kernel_options)
    refuse_stale(space.kernel, kernel, imported)
    refuse_gpu_only(space.kernel, kernel.needs_gpu, device)
    refuse_unreachable(space.kernel, type(kernel).__module__, device, processes=processes)
    refuse_at_configs(space, kernel, device)
    return kernel


def refuse_at_configs(space: Any, kernel: Any, device: Any) -> None:
    """Refuse, before anything is written, a kernel (an instance, or the class of its
    declaration) whose declared model or launch arguments fail at some config on
    ``device`` (:func:`refuse_bad_model`, :func:`refuse_bad_args`): what ``run`` asks of
    the kernel it constructs, and ``plan`` of a declaration it builds importing no user
    code (:func:`planned_kernel`)."""
    refuse_bad_model(space, kernel, device)
    refuse_bad_args(space, kernel, device)


def planned_kernel(space: Any) -> Any:
    """The class that declares the space's kernel for its options, as ``plan`` may build
    it: a ``cuda`` kernel's short kernel, with its model and its launch (whose files are
    read, nothing compiled or imported); a built-in's declaration; a stand-in for any
    other kernel, whose module is not imported (so nothing of its launch is known)."""
    from sweeper import plugins

    declared = plugins.kernel_declaration(space.kernel, user_code=False)
    return declared.specialize(dict(space.kernel_options), None)


def refuse_bad_model(space: Any, kernel: Any, device: Any) -> None:
    """Refuse, before anything is written, a kernel's declared model
    (:mod:`sweeper.kernels._model_form`) one of whose launch settings (a streaming tile,
    a matmul's tiles, ...) is below its least at some config on ``device``.  Reading the
    space checked them at every combination of the axes' constant values; an axis they
    read that is given as an expression (``64 * sms``) has its values only once the device
    is known, as have a tiled or rowwise model's sizes on a device that shrinks the
    problem's dimensions (the interpreter's).  The error is at that value's line."""
    declared = getattr(kernel, "declared_model", None)
    if declared is None:
        return
    sizes = declared.size_names
    late = [a for a in space.axes if a.name in declared.launch_names | sizes
            and any(v.expr is not None for v in a.values)]
    if not late and device.facts().max_footprint is not None:
        late = [a for a in space.axes if a.name in sizes]

    def problem(config: Any) -> tuple[str, str | None] | None:
        try:
            declared.check(config)
        except SweeperError as err:
            return str(err), None
        return None

    _refuse_at_value(space, device, late, problem)


def refuse_bad_args(space: Any, kernel: Any, device: Any) -> None:
    """Refuse, before anything is written, a kernel whose launch takes an integer
    argument its type cannot hold at some config on ``device`` (a ``sweeper.cuda``
    launch's ``config_problem``: an untyped ``n`` past int32).  Reading the space
    checked each axis's constant values; an axis given as an expression (``64 * sms``,
    ``2 * m``) has its values only once the device is known.  The error is at the first
    such value of the config, the argument's own axis where it is one; a space whose
    arguments read no expression is not resolved here."""
    launch = getattr(getattr(kernel, "plan", None), "launch", None)
    check = getattr(launch, "config_problem", None)
    reads: frozenset[str] = getattr(launch, "reads", frozenset())
    late = [a for a in space.axes if a.name in reads and any(v.expr is not None
                                                             for v in a.values)]
    if not callable(check):
        return

    def problem(config: Any) -> tuple[str, str | None] | None:
        found = check(config)           # (the argument's name, why), or None
        return None if found is None else (f"kernel {space.kernel}: {found[1]}", found[0])

    _refuse_at_value(space, device, late, problem)


def _refuse_at_value(space: Any, device: Any, late: list[Any],
                     problem: Callable[[Any], tuple[str, str | None] | None]) -> None:
    """Resolve ``space`` on ``device``, where any axis is ``late`` (its values known only
    now), and refuse the first config ``problem`` finds wrong, saying why (a
    :class:`SpaceError` at the value of that config's ``late`` axis it names, else of its
    first one given as an expression, else of its first one)."""
    from sweeper.core import Config
    from sweeper.errors import SpaceError
    from sweeper.study import resolved

    if not late:
        return
    facts = device.facts()
    for choice, config in resolved(space, facts.env(), facts.max_footprint):
        found = problem(config) if isinstance(config, Config) else None
        if found is None:
            continue
        why, name = found
        values = [(a.name, a.value(choice[a.name])) for a in late]
        exprs = [(n, v) for n, v in values if v.expr is not None] or values
        value = next((v for n, v in exprs if n == name or (
            name == "n" and n == "footprint")), exprs[0][1])
        raise SpaceError(f"on {facts.name}, {why}", file=value.origin.file,
                         line=value.origin.line, path=value.origin.path)


def refuse_stale(name: str, kernel: Any, imported: Collection[str]) -> None:
    """Refuse, before anything is written, kernel ``name`` whose code comes from modules
    among those ``imported`` before the run began (a notebook's earlier ``sweeper.run``,
    or its own ``import``) whose files were edited since: Python keeps the module it
    imported, so the run would measure the code from before the edit, silently, where
    ``sweeper run`` (a new process) measures the edit.  Its modules: the one the space
    names, those whose code the kernel runs (:meth:`~sweeper.kernels.Kernel.code_modules`:
    a launch imported from another module, the module of a ``@triton.jit`` function
    given it) and the user's own modules each imports.  Told where one of them imported
    as read (as a run loads a kernel) no longer holds that text
    (:func:`~sweeper.kernels._own_modules.edited_since_read`); else, for the kernel's own
    module, where the source hash the files give now
    (:func:`~sweeper.kernels.source_hash_unrun`, what a new process records) is not the
    one of the code loaded, or where the files alone do not tell it (a Kernel subclass,
    a launch imported from another module) where its source read afresh
    (:func:`~sweeper.kernels._base.source_afresh`) is not the source first read."""
    from sweeper.kernels import Kernel, source_hash_unrun
    from sweeper.kernels._base import hash_of_source, source_afresh
    from sweeper.kernels._own_modules import (
        edited_since_read,
        files_as_now,
        users_files,
        with_own,
    )

    module = type(kernel).__module__
    if module == "__main__":
        return
    named = name.partition(":")[0] if ":" in name else module
    top = named if named in sys.modules else module
    code = kernel.code_modules()
    other = [named] if named not in code and named in imported else []  # its imports too
    found = dict(users_files(code))
    for own, path in with_own(other):
        found.setdefault(own, path)
    ours = [(m, p) for m, p in found.items() if m in imported]
    edited = edited_since_read(ours)
    if not edited and module in imported:
        with files_as_now():
            now = source_hash_unrun(name)
        if now is None and type(kernel).source_hash is Kernel.source_hash:   # of its source()
            afresh = source_afresh(kernel)
            now = None if afresh is None else hash_of_source(afresh)
        if now is None or now == kernel.source_hash():
            return
        package = Path(__file__).resolve().parents[1]   # sweeper's own: not the user's edit
        edited = [p for p in kernel.source_files() if not p.resolve().is_relative_to(package)]
        edited = _not_as_read(edited, kernel.source()) or edited
    elif not edited:
        return
    files = [p.name for p in edited] or [f"{module}'s files"]
    shown = files[0] if len(files) == 1 else f"one of {', '.join(files[:3])}" + (
        f" ({len(files)} files)" if len(files) > 3 else "")
    raise SweeperError(
        f"kernel {name}: {shown} was edited since this process imported {top}, whose "
        "code it keeps: a run here would measure the code from before the edit; restart "
        f"the process (a notebook's kernel), or reload it (importlib.reload({top}), "
        "after any module of yours it imports that was edited), then run again")


def _not_as_read(files: list[Path], source: str) -> list[Path]:
    """Those of ``files`` whose text now is none of ``source`` (the kernel's source as
    first read, which holds each file's text as it was): the ones edited since."""
    def edited(path: Path) -> bool:
        try:
            return path.read_text(encoding="utf-8") not in source
        except (OSError, UnicodeDecodeError):
            return True
    return [path for path in files if edited(path)]


def refuse_unreachable(name: str, module: str, device: Any, *, processes: bool) -> None:
    """Refuse, before anything is written, kernel ``name`` (defined in ``module``) where
    the trials could only fail for where it was defined, as a notebook defines or imports
    it: in ``__main__`` where worker processes measure (theirs is not the caller's), or,
    measured in this process on a device that interprets Triton (``TRITON_INTERPRET``), a
    module holding a ``@triton.jit`` function made for a GPU, as one imported before the
    device set the variable holds (each trial would crash on the missing driver)."""
    if processes and module == "__main__":
        raise SweeperError(
            f"kernel {name} is defined in __main__ (a notebook or a script), which the "
            "worker processes cannot import: put it in a module and name it as "
            f"module:attr, or pass {given('workers', 'inline')}")
    if processes or device.sets_env.get("TRITON_INTERPRET") != "1":
        return
    compiled = _compiled_for_gpu(sys.modules.get(module))
    if compiled:
        fix = ("restart the process (a notebook's kernel) and set TRITON_INTERPRET=1 "
               "before importing triton: os.environ[\"TRITON_INTERPRET\"] = \"1\" first in "
               "a notebook, TRITON_INTERPRET=1 python script.py for a script"
               if module == "__main__" else
               f"restart the process (a notebook's kernel) and run before importing {module}, "
               f"or pass {given('workers', 'process')} (a worker imports it afresh)")
        raise SweeperError(
            f"kernel {name}: {module}.{compiled[0]} is a @triton.jit function made for a GPU "
            f"({module} was {'run' if module == '__main__' else 'imported'} before sweeper "
            f"set TRITON_INTERPRET=1 for device {device.name}), which the interpreter cannot "
            f"run; {fix}")


def _compiled_for_gpu(module: Any) -> list[str]:
    """The names of ``module``'s ``@triton.jit`` functions made for a GPU (not Triton's
    interpreter), an autotuned or heuristic one's included; each value's type read, not
    asked (a lazy object would import what it stands for).  None where triton is not
    imported: then no such function exists."""
    if module is None or "triton" not in sys.modules:
        return []
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction, KernelInterface

    found = []
    for name, value in list(vars(module).items()):
        while issubclass(type(value), KernelInterface) and not issubclass(
                type(value), (JITFunction, InterpretedFunction)):
            value = getattr(value, "fn", None)          # an Autotuner, Heuristics
        if issubclass(type(value), JITFunction):
            found.append(name)
    return found


def refuse_gpu_only(name: str, needs_gpu: bool, device: Any) -> None:
    """Refuse, in one line, kernel ``name`` where it runs on a CUDA GPU only
    (``needs_gpu``) and ``device`` launches elsewhere (a replay launches nothing): ``run``
    before anything is written, ``plan`` before anything is printed."""
    if needs_gpu and not device.replays and device.torch_device != "cuda":
        raise SweeperError(f"kernel {name} runs on a CUDA GPU only (compiled CUDA C); device "
                           f"{device.name} cannot run it: run on a GPU (leave out "
                           f"{option('device')}) or replay a recorded table "
                           f"({given('device', 'replay:TABLE.csv')})")


def needs_gpu(space: Any) -> bool:
    """Whether the space's kernel declares it runs on a CUDA GPU only (a user kernel is
    read from its source, not imported: one launching ``sweeper.cuda(...)`` does, as the
    built-in ``cuda`` does)."""
    from sweeper import plugins

    declared = plugins.kernel_declaration(space.kernel, user_code=False)
    return bool(getattr(declared, "needs_gpu", False))


def budgeted(space: Any, trials: int | None, time_s: float | None) -> Any:
    """``space`` under a run's budgets: ``--trials`` and ``--time`` where given (``None``:
    not), else the space's ``budget.trials`` and ``budget.time``; what ``run`` estimates
    and ``plan`` plans alike."""
    budget = space.budget
    return dataclasses.replace(space, budget=dataclasses.replace(
        budget, trials=budget.trials if trials is None else trials,
        time_s=budget.time_s if time_s is None else time_s))
