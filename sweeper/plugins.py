"""One registry for what sweeper runs: kernels, samplers and devices.

A space file (``kernel:``, ``sampler:``) or ``--device`` names a plugin in one of three
ways, tried in this order:

1. a built-in name: the tables :data:`KERNEL`, :data:`SAMPLER` and :data:`DEVICE` hold;
2. the name of an entry point that an installed distribution declares in the group
   ``sweeper.kernels``, ``sweeper.samplers`` or ``sweeper.devices``;
3. a ``package.module:attr`` path, imported with the current directory first on
   ``sys.path`` (as ``python -m sweeper`` has it; the console script's ``sys.path`` lacks
   it), and only while that module is imported: sweeper's own later imports never see a
   file of the current directory.

Nothing is imported until a plugin is loaded, and then only the module that holds it.
Each plugin is checked as it is loaded (a kernel is a ``Kernel`` subclass or instance, a
sampler factory is callable with one argument, its context, and declares its capabilities
as booleans, a device is a concrete ``Device`` subclass), and every error names the
plugin and where it came from.
The core then asks a plugin what it can do (a device's ``replays``, a sampler's
:class:`SamplerCapabilities`), never what it is called.

This module imports no subpackage at its top: the space parser asks it for a kernel's
declared meta-parameters and for sampler names without importing kernels or samplers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypeVar

from sweeper.core._units import did_you_mean, zip_members
from sweeper.errors import SweeperError, user_line

if TYPE_CHECKING:
    from sweeper.kernels._base import Kernel

#: ``package.module:attr``: what a path must look like before anything is imported.
PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:"
                  r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Kind:
    """One kind of plugin: its noun in messages, its entry point group, its built-ins
    (name -> ``module:attr``, in the order messages list them) and its check (why an
    object is not such a plugin, or ``None``)."""

    noun: str
    group: str
    builtins: dict[str, str]
    check: Callable[[Any], str | None]
    #: Words a newcomer uses for a built-in that spelling alone would not suggest
    #: (``--device cpu`` for ``interpret``, ``sampler: grid`` for ``exhaustive``): word ->
    #: the built-in's name.
    meant: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    """Where a plugin's name leads, before anything is imported."""

    kind: Kind
    name: str
    target: str                                  # module:attr
    origin: str                                  # built-in, entry point ..., module:attr path
    entry_point: metadata.EntryPoint | None = None

    @property
    def builtin(self) -> bool:
        """Whether the name is one of sweeper's own plugins."""
        return self.origin == "built-in"

    def __str__(self) -> str:
        return f"{self.kind.noun} {self.name!r} ({self.origin})"


@dataclass(frozen=True)
class SamplerCapabilities:
    """What a sampler factory declares, as attributes of the same names (these defaults
    where it declares nothing); :func:`declares` sets them."""

    #: The interleaved finals re-measure its best configs to choose each problem's winner.
    needs_finals: bool = True
    #: It takes the kernel model's guess of every valid config (``Kernel.model``).
    uses_model: bool = False
    #: It starts from the winners of other studies of the kernel on this GPU.
    uses_priors: bool = False
    #: The space file's ``sampler.baseline`` is the config it varies around; the sweep
    #: measures that config again at the end to show the drift over the study.
    takes_baseline: bool = False
    #: It walks a plan it can tell ahead (a :class:`~sweeper.samplers._exhaustive.
    #: PlannedSampler`: ``size``, ``upcoming(count)``, ``prefer``): the sweep's progress
    #: counts its plan and a pool compiles its next configs while the GPU measures.
    plans: bool = False
    #: It may be asked for a config while others are still being measured at no cost to
    #: its search (its proposals do not depend on outcomes, or one outcome behind they
    #: were measured no worse): a sweep with worker processes asks for a worker's next
    #: config while its trial runs and hands it over the moment it ends, one config ahead
    #: per worker.
    asks_ahead: bool = False
    #: The sweep records every config of the space the constraints rule out, up front
    #: (as skipped trials), since it would propose each of them.
    records_invalid: bool = False
    #: Every config it will propose, told from the baseline and the axes alone (a
    #: function ``(baseline, axes) -> [config]``, importable without optuna):
    #: ``sweeper plan`` and a run's estimate count those, not every valid config.
    proposes: Callable[[Mapping[str, str], Mapping[str, Sequence[str]]],
                       list[dict[str, str]]] | None = None


CAPABILITIES = tuple(f.name for f in dataclasses.fields(SamplerCapabilities))
#: The capabilities that are functions (or None), not True or False.
FUNCTIONS = ("proposes",)
F = TypeVar("F", bound=Callable[..., Any])


def declares(**capabilities: Any) -> Callable[[F], F]:
    """Declare what a sampler factory needs or offers::

        @declares(needs_finals=False)
        def my_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler: ...
    """
    unknown = sorted(set(capabilities) - set(CAPABILITIES))
    if unknown:
        raise TypeError(f"unknown sampler capability {unknown[0]!r}; known: "
                        f"{', '.join(CAPABILITIES)}")

    def mark(factory: F) -> F:
        for key, value in capabilities.items():
            setattr(factory, key, value)
        return factory
    return mark


def _kernel_problem(obj: Any) -> str | None:
    from sweeper.kernels._base import Kernel

    cls = obj if isinstance(obj, type) else type(obj)
    if not issubclass(cls, Kernel):
        what, instead = _not_a_kernel(obj)
        return f"is {what}, not a sweeper.kernels.Kernel subclass or instance{instead}"
    # cuda's __new__ makes another class
    return _unfinished(cls, "kernel", inspect.isabstract(cls) and cls.__new__ is object.__new__)


def _not_a_kernel(obj: Any) -> tuple[str, str]:
    """What ``obj``, named as a kernel but not a Kernel, is, and what to name instead: a
    plain function or a ``@triton.jit`` one is launched by a ``@sweeper.kernel``
    function, a ``@triton.autotune`` one is brought whole by ``from_autotune``."""
    from sweeper.kernels._unimported import not_a_kernel

    kinds = {(c.__module__.partition(".")[0], c.__name__) for c in type(obj).__mro__}
    if ("triton", "Autotuner") in kinds:
        fn = getattr(getattr(obj, "fn", None), "__name__", "the_function")
        return (f"a @triton.autotune function ({type(obj).__name__})",
                not_a_kernel("autotune", fn))
    if ("triton", "KernelInterface") in kinds:
        return f"a @triton.jit function ({type(obj).__name__})", not_a_kernel("jit")
    if inspect.isfunction(obj):
        return _a(obj), not_a_kernel("function")
    return _a(obj), ""


#: What a sampler factory is, for messages.
FACTORY = "(context: sweeper.samplers.SamplerContext) -> optuna.samplers.BaseSampler"


def _sampler_problem(obj: Any) -> str | None:
    if not callable(obj):
        return f"is {_a(obj)}, not a sampler factory (a callable: {FACTORY})"
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):      # no signature to read: it is called as it is
        signature = None
    if signature is not None and not _binds_one(signature):
        names = list(signature.parameters)
        return (f"takes ({', '.join(names)}); a sampler factory takes one argument: "
                f"{FACTORY}" + (", whose fields spec, choices, axes, priors and guesses "
                                "replace the five arguments of older factories"
                                if len(names) == 5 else ""))
    for key in CAPABILITIES:
        value = getattr(obj, key, None if key in FUNCTIONS else False)
        if key in FUNCTIONS and not (value is None or callable(value)):
            return f"declares {key} = {value!r}; {key} is a function or None"
        if key not in FUNCTIONS and not isinstance(value, bool):
            return f"declares {key} = {value!r}; a capability is True or False"
    return None


def _binds_one(signature: inspect.Signature) -> bool:
    """Whether a callable of ``signature`` can be called with one positional argument."""
    try:
        signature.bind(None)
    except TypeError:
        return False
    return True


def _device_problem(obj: Any) -> str | None:
    from sweeper.devices._base import Device

    if not (isinstance(obj, type) and issubclass(obj, Device)):
        return f"is {_a(obj)}, not a sweeper.devices.Device subclass"
    return _unfinished(obj, "device", inspect.isabstract(obj))


def _unfinished(cls: Any, noun: str, abstract: bool) -> str | None:
    """What a plugin class of ``noun`` says where it is ``abstract`` (the methods it leaves
    out) or declares no name; ``None`` where it is neither."""
    if abstract:
        return f"is abstract: it does not implement {', '.join(sorted(cls.__abstractmethods__))}"
    if not isinstance(getattr(cls, "name", None), str):
        return f"declares no name (a class attribute: name = 'my-{noun}')"
    return None


def _a(obj: Any) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__name__}"
    name = type(obj).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


KERNEL = Kind("kernel", "sweeper.kernels", {
    "copy": "sweeper.kernels.copy:CopyKernel",
    "add": "sweeper.kernels.add:AddKernel",
    "matmul": "sweeper.kernels.matmul:MatmulKernel",
    "scale": "sweeper.kernels.scale:ScaleKernel",
    "copy-strided": "sweeper.kernels.copy_strided:CopyStridedKernel",
    "softmax": "sweeper.kernels.softmax:SoftmaxKernel",
    "torch-op": "sweeper.kernels.torch_op:TorchOpKernel",
    "cuda": "sweeper.kernels.cuda:CudaKernel",
}, _kernel_problem)
SAMPLER = Kind("sampler", "sweeper.samplers", {
    "auto": "sweeper.samplers:auto_sampler",
    "exhaustive": "sweeper.samplers:exhaustive_sampler",
    "one-at-a-time": "sweeper.samplers:one_at_a_time_sampler",
    "tpe": "sweeper.samplers:tpe_sampler",
    "random": "sweeper.samplers:random_sampler",
    "gp": "sweeper.samplers:gp_sampler",
    "qmc": "sweeper.samplers:qmc_sampler",
    "cmaes": "sweeper.samplers:cmaes_sampler",
}, _sampler_problem, meant={"grid": "exhaustive", "bayes": "gp", "bayesian": "gp",
                            # Kernel Tuner's strategies of the same search
                            "brute_force": "exhaustive", "random_sample": "random",
                            "bayes_opt": "gp"})
DEVICE = Kind("device", "sweeper.devices", {
    "cuda": "sweeper.devices._cuda:CudaDevice",
    "interpret": "sweeper.devices._interpret:InterpretDevice",
    "replay": "sweeper.devices._replay:ReplayDevice",
}, _device_problem, meant={"cpu": "interpret", "gpu": "cuda"})
#: What each built-in kernel declares (name, meta-parameters, defaults, headline), apart
#: from its implementation: reading it imports neither torch nor triton.
DECLARED = {
    "copy": "sweeper.kernels._declared:CopyDeclaration",
    "add": "sweeper.kernels._declared:AddDeclaration",
    "matmul": "sweeper.kernels._declared:MatmulDeclaration",
    "scale": "sweeper.kernels._declared:ScaleDeclaration",
    "copy-strided": "sweeper.kernels._declared:CopyStridedDeclaration",
    "softmax": "sweeper.kernels._declared:SoftmaxDeclaration",
    "torch-op": "sweeper.kernels._declared:TorchOpDeclaration",
    "cuda": "sweeper.kernels._cuda_form:CudaDeclaration",
}


def installed(kind: Kind) -> dict[str, list[metadata.EntryPoint]]:
    """The entry points of ``kind``'s group, by name, read from the installed
    distributions' metadata (nothing is imported); a name two distributions declare
    maps to both."""
    found: dict[str, list[metadata.EntryPoint]] = {}
    for ep in metadata.entry_points(group=kind.group):
        found.setdefault(ep.name, []).append(ep)
    return found


def _dist(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"


def known(kind: Kind) -> str:
    """What ``kind``'s names may be, for a message."""
    names = list(kind.builtins)
    names += [f"{name} ({', '.join(_dist(ep) for ep in eps)})"
              for name, eps in installed(kind).items() if name not in kind.builtins]
    return f"{', '.join(names)}, or package.module:attr for your own"


def find(kind: Kind, name: str) -> Found:
    """Where ``name`` leads (a built-in, an installed entry point, a path), without
    importing anything; a :class:`SweeperError` if it leads nowhere."""
    if name in kind.builtins:
        return Found(kind, name, kind.builtins[name], "built-in")
    if ":" not in name:
        eps = installed(kind).get(name, [])
        if len(eps) > 1:
            raise SweeperError(f"{kind.noun} {name!r} is declared by {len(eps)} installed "
                               f"distributions ({', '.join(_dist(ep) for ep in eps)}) in "
                               f"{kind.group}; uninstall all but one")
        if eps:
            ep = eps[0]
            return Found(kind, name, ep.value, f"entry point {ep.name} = {ep.value} in "
                         f"{kind.group} of {_dist(ep)}", ep)
    if PATH.fullmatch(name) is None:
        dotted = _dotted(name)
        module = _a_module(kind, name)
        hint = f"; did you mean {kind.meant[name]!r}?" if name in kind.meant else \
            module if module else f"; did you mean {dotted!r}?" if dotted else \
            did_you_mean(name, [*kind.builtins, *installed(kind)])
        raise SweeperError(f"unknown {kind.noun} {name!r}; known: {known(kind)}{hint}")
    return Found(kind, name, name, "module:attr path")


def _a_module(kind: Kind, name: str) -> str | None:
    """The hint for ``name`` where it is a module of the user's on the import path (the
    current directory first) given without what in it to load (``kernel:
    mykern.rowsum``): the kernels its source declares at its top level, read without
    importing it (a function under a ``kernel(...)`` decorator or bound to such a call, a
    class one of whose bases is named ``Kernel``), each after a colon; else how to name
    one.  ``None`` where ``name`` is no such module (one of the standard library's or an
    installed package's is none)."""
    from sweeper.kernels._own_modules import user_module_file

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        return None
    path = user_module_file(name)         # not the standard library's nor a package's
    if path is None:
        return None
    found = str(path)
    shown = os.path.relpath(found)
    shown = found if shown.startswith("..") else shown
    declared = _kernels_declared(found) if kind is KERNEL else []
    head = f"; {name} is a module ({shown}): name the {kind.noun} in it after a colon"
    if not declared:
        return f"{head} ('{name}:NAME')"
    return f"{head}: did you mean {' or '.join(repr(f'{name}:{d}') for d in declared)}?"


def _kernels_declared(path: str) -> list[str]:
    """The top-level names of the module at ``path`` that declare a kernel, read from its
    source (nothing run; empty where it cannot be read)."""
    import ast

    def named(node: ast.AST, last: str) -> bool:
        node = node.func if isinstance(node, ast.Call) else node
        node = node.func if isinstance(node, ast.Call) else node     # kernel(...)(launch)
        return (isinstance(node, ast.Name) and node.id == last) or \
            (isinstance(node, ast.Attribute) and node.attr == last)

    try:
        with open(path, encoding="utf-8") as file:
            tree = ast.parse(file.read(), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
            MemoryError):
        return []
    names: list[str] = []
    for stmt in tree.body:
        decorated = isinstance(stmt, ast.FunctionDef) and any(
            isinstance(d, ast.Call) and named(d, "kernel") for d in stmt.decorator_list)
        subclass = isinstance(stmt, ast.ClassDef) and any(named(b, "Kernel")
                                                          for b in stmt.bases)
        if (decorated or subclass) and isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                named(stmt.value, "kernel"):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return names


def _dotted(name: str) -> str | None:
    """``examples.scale:scale`` for ``examples/scale.py:scale``, a file path where a
    module path goes (as a ``cuda`` kernel's ``reference:`` takes one), or for
    ``examples.scale.scale``, a dot where the colon goes; else ``None``."""
    if ":" not in name and "." in name:
        module, _, attr = name.rpartition(".")
        return f"{module}:{attr}" if PATH.fullmatch(f"{module}:{attr}") else None
    module, sep, attr = name.rpartition(":")
    dotted = module.removeprefix("./").removesuffix(".py").replace("/", ".")
    return f"{dotted}:{attr}" if sep and dotted != module and \
        PATH.fullmatch(f"{dotted}:{attr}") else None


@dataclass(frozen=True)
class Plugin:
    """A loaded, checked plugin and where it came from."""

    obj: Any
    found: Found

    def __str__(self) -> str:
        return str(self.found)


def load(kind: Kind, name: str) -> Plugin:
    """Import the plugin ``name`` leads to and check it is a ``kind``; every failure is a
    :class:`SweeperError` naming the plugin and its entry point or path."""
    from sweeper.kernels._own_modules import imports_as_read

    found = find(kind, name)
    try:
        with imports_as_read():     # a kernel's source is hashed as imported (loaded_text)
            obj = found.entry_point.load() if found.entry_point is not None else \
                import_path(found.target, from_cwd=not found.builtin)
    except (ImportError, AttributeError) as err:
        raise _cannot_load(found, err) from err
    except SystemExit as err:       # a script's top level: argparse, sys.exit() ...
        at = _where(err)
        raise SweeperError(f"cannot load {found}: importing "
                           f"{found.target.partition(':')[0]} exited (SystemExit: {err.code})"
                           f"{f' (at {at})' if at else ''}; its module is imported, so code "
                           "to run as a script goes under if __name__ == \"__main__\":"
                           ) from None
    except Exception as err:        # the plugin's own module failed while it was imported
        at = _where(err)
        # a syntax error's own text ends with "(file, line N)": say it once, as file:line
        message = err.msg if isinstance(err, SyntaxError) and at else str(err)
        raise _import_raised(found, err, message, at) from err
    problem = kind.check(obj)
    if problem is not None:
        raise SweeperError(f"cannot load {found}: {found.target} {problem}")
    return Plugin(obj, found)


def _import_raised(found: Found, err: BaseException, message: str, at: str | None
                   ) -> SweeperError:
    """Why plugin ``found`` could not be loaded, importing its module raised ``err``
    (``message``, at the user's line ``at``): as ``run`` says it on importing the module,
    and as ``plan`` says it on reading the module's source (a declaration refused)."""
    return SweeperError(f"cannot load {found}: importing {found.target.partition(':')[0]} "
                        f"raised {type(err).__name__}: {message}{f' (at {at})' if at else ''}")


def _cannot_load(found: Found, err: ImportError | AttributeError, at: str | None = None
                 ) -> SweeperError:
    """Why plugin ``found`` could not be loaded, its module or attribute missing: the
    error, where in the user's code it arose (``at``, else from ``err``'s traceback), and
    what to do about it."""
    at = at or _where(err)
    return SweeperError(f"cannot load {found}: {err}{f' (at {at})' if at else ''}"
                        f"{_not_on_the_path(found, err)}")


def refuse_missing_module(kind: Kind, name: str) -> None:
    """Raise the :class:`SweeperError` :func:`load` would where the top-level package of
    the module a ``module:attr`` plugin ``name`` names is nowhere on the import path (the
    current directory first), told without importing anything: ``plan``, which runs no
    user code, refuses such a space as ``run`` does.  A module found, or one that only
    importing its package could tell, passes: ``run`` checks the rest, but for a
    submodule no folder of its package holds (:func:`_missing_submodule`) and an
    attribute the module's source shows it never binds
    (:func:`~sweeper.kernels._unimported.names_bound`), each refused as ``run`` refuses
    it, as is a module whose source does not compile
    (:func:`~sweeper.kernels._unimported.compile_error`) or whose opening imports name a
    package nowhere on the path (:func:`~sweeper.kernels._unimported.missing_import`), at
    the line ``run`` names."""
    import importlib.util

    from sweeper.kernels._unimported import compile_error, missing_import, names_bound

    found = find(kind, name)
    if found.builtin or found.entry_point is not None:
        return
    top = found.target.partition(":")[0].split(".")[0]
    with _cwd_first():
        try:
            spec = importlib.util.find_spec(top)        # a top-level name: nothing runs
        except (ImportError, ValueError):
            return
        if spec is None:
            raise _cannot_load(found, ModuleNotFoundError(f"No module named {top!r}", name=top))
        module = found.target.partition(":")[0]
        missing = _missing_submodule(list(spec.submodule_search_locations or []),
                                     spec.origin, module)
        if missing is not None:
            raise _cannot_load(found, ModuleNotFoundError(f"No module named {missing!r}",
                                                          name=missing))
        refused = compile_error(found.target)
        if refused is not None:                         # what importing it raises first
            raise _import_raised(found, refused, refused.msg, _where(refused))
        missing_at = missing_import(found.target)
        if missing_at is not None:
            missing, at = missing_at
            raise _cannot_load(found, ModuleNotFoundError(f"No module named {missing!r}",
                                                          name=missing), at)
        bound = names_bound(found.target)
    if bound is not None:
        module, _, attr = found.target.partition(":")
        raise _cannot_load(found, AttributeError(f"module {module} has no attribute {attr!r}"
                                                 f"{did_you_mean(attr, bound)}"))


#: What a package's ``__init__`` may say to make modules no file of its folders holds.
_MAKES_MODULES = ("__path__", "sys.modules", "modules[", "extend_path")


def _missing_submodule(locations: list[str], origin: str | None, module: str) -> str | None:
    """The dotted name of the first package or module on the way to ``module`` that no
    folder of the package above it holds (``mykern.rowsun`` for ``mykern.rowsun``, where
    ``mykern/`` has no ``rowsun.py``, ``rowsun/`` nor ``rowsun.*``), read from the folders
    its top-level package was found in (``locations``, its ``__init__`` at ``origin``),
    nothing imported; ``None`` where each is there, or where only importing could tell (a
    module, not a package, above it; an ``__init__`` that may make modules)."""
    parts = module.split(".")
    for depth, part in enumerate(parts[1:], start=1):
        if not locations or (origin is not None and _makes_modules(origin)):
            return None
        holders = []
        for folder in locations:
            try:
                names = os.listdir(folder)
            except OSError:
                return None
            if any(n == part or n.startswith(f"{part}.") for n in names):
                holders.append(folder)
        if not holders:
            return ".".join(parts[:depth + 1])
        folders = [os.path.join(f, part) for f in holders if os.path.isdir(os.path.join(f, part))]
        inits = [os.path.join(f, "__init__.py") for f in folders
                 if os.path.isfile(os.path.join(f, "__init__.py"))]
        locations, origin = ([os.path.dirname(inits[0])], inits[0]) if inits else (folders, None)
    return None


def _makes_modules(init: str) -> bool:
    """Whether the package ``__init__`` at ``init`` may make modules its folders do not
    hold (it names :data:`_MAKES_MODULES`), or cannot be read."""
    try:
        with open(init, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return True
    return any(word in text for word in _MAKES_MODULES)


def _not_on_the_path(found: Found, err: BaseException) -> str:
    """What to do when a path plugin's own module was not found: the dotted name of a file
    name given as its module (``mymod.py:add``), or where the module was looked for (the
    newcomer who runs ``examples.scale:scale`` from another folder); empty when a package
    that is there lacks the module or a module the plugin imports is missing."""
    module, _, attr = found.target.partition(":")
    missing = getattr(err, "name", None) if isinstance(err, ModuleNotFoundError) else None
    if found.builtin or found.entry_point is not None or missing is None:
        return ""
    if module.endswith(".py"):
        return f"; did you mean '{module.removesuffix('.py')}:{attr}'?"
    if missing != module.split(".")[0]:
        return ""
    return (f" in the current directory ({os.getcwd()}) or on the Python path; run from the "
            "folder that holds it, or add that folder to PYTHONPATH")


def _where(err: BaseException) -> str | None:
    """``mykernels.py:12: from .helpers import SCALE``: where in the user's code importing
    a plugin failed (a syntax error: its file, line and text); ``None`` where no line of
    theirs is in it (a module that does not exist)."""
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        text = (err.text or "").strip()
        return f"{os.path.basename(err.filename)}:{err.lineno}{': ' + text if text else ''}"
    return user_line(err)


def import_path(target: str, *, from_cwd: bool = True, first: str | None = None) -> Any:
    """The attribute ``package.module:attr`` names, its module imported with the current
    directory first on ``sys.path`` where ``from_cwd`` (as a plugin's path is), or the
    folder ``first`` where one is given."""
    module_name, _, attr = target.partition(":")
    with _cwd_first(first) if from_cwd or first else contextlib.nullcontext():
        module = importlib.import_module(module_name)
    if not hasattr(module, attr):
        public = [n for n in vars(module) if not n.startswith("_")]
        raise AttributeError(f"module {module_name} has no attribute {attr!r}"
                             f"{did_you_mean(attr, public)}")
    return getattr(module, attr)


@contextlib.contextmanager
def _cwd_first(folder: str | None = None) -> Iterator[None]:
    """The current directory (or ``folder``) first on ``sys.path`` while a path plugin is
    imported."""
    cwd = folder or os.getcwd()
    sys.path.insert(0, cwd)
    importlib.invalidate_caches()       # a module written since the folder was last read
    try:
        yield
    finally:
        if sys.path and sys.path[0] == cwd:
            del sys.path[0]
        elif cwd in sys.path:
            sys.path.remove(cwd)


def kernel_declaration(name: str, *, user_code: bool = True,
                       params: Mapping[str, Any] | None = None) -> type[Kernel]:
    """The class whose attributes declare kernel ``name``: its ``name``, ``meta_params``,
    ``defaults``, ``headline`` and ``baseline_name``.  A built-in's declaration imports
    neither torch nor triton; any other kernel's is its own class, its module imported,
    unless ``user_code`` is off: then a stand-in that imports nothing declares the
    meta-parameters ``params`` (a space's ``params`` mapping) names, unchecked."""
    found = find(KERNEL, name)
    if found.builtin:
        declared: type[Kernel] = import_path(DECLARED[name], from_cwd=False)
        return declared
    if not user_code:
        return unchecked_kernel(name, params)
    obj = load(KERNEL, name).obj
    return obj if isinstance(obj, type) else type(obj)


def unchecked_kernel(name: str, params: Any) -> type[Kernel]:
    """A stand-in for the user kernel ``name`` that imports nothing.

    Importing a user kernel runs its module's top-level code, which only ``run`` (and
    ``ab``) must do.  The stand-in declares what the kernel's source declares in literals
    (:mod:`sweeper.kernels._unimported`: dimensions, meta-parameters, options, defaults,
    autotune configs); where the source says no meta-parameters it could read, the names
    ``params`` (a space's ``params`` mapping) gives besides the launch and problem axes
    and the dimensions, without defaults or checks; the rest is the base
    :class:`Kernel`'s (its ``defaults`` too where the source sets none; one the source
    sets replaces them whole, as the class itself does).  Its ``unread`` names what could
    not be read."""
    from sweeper.core._model import LAUNCH_AXES, PROBLEM_AXES
    from sweeper.kernels._base import Kernel, MetaParam
    from sweeper.kernels._unimported import ImportRefused, read_declaration

    found = find(KERNEL, name)
    try:
        read = read_declaration(found.target, name) if not found.builtin else None
    except ImportRefused as refused:            # as importing the module would refuse it
        raise _import_raised(found, refused.error, str(refused.error), refused.at) from None
    attrs: dict[str, Any] = dict(read.attrs) if read is not None else {}
    dims = attrs.get("dims", Kernel.dims)
    names: list[str] = []
    for key, value in (params.items() if isinstance(params, dict) else ()):
        members = zip_members(value)
        names += members if members is not None else [key]
    attrs.setdefault("meta_params", {
        n: MetaParam(default=0, doc="not checked: the kernel was not imported")
        for n in names if isinstance(n, str) and n.isidentifier() and n.isascii() and
        n not in (*LAUNCH_AXES, *PROBLEM_AXES, *dims)})
    attrs["unread"] = read.unread if read is not None else ()
    return type("UncheckedKernel", (Kernel,), {**attrs, "name": name})


def inherits_defaults(declared: type[Any]) -> bool:
    """Whether kernel class ``declared`` takes the base :class:`Kernel`'s ``defaults`` as
    they are: neither it nor a class between it and Kernel sets its own (a stand-in for an
    unimported kernel whose source sets none, or whose ``defaults`` could not be read)."""
    from sweeper.kernels._base import Kernel

    return declared.defaults is Kernel.defaults


def sampler_capabilities(name: str) -> SamplerCapabilities:
    """What sampler ``name`` declares (its factory is loaded: a built-in's imports no
    optuna)."""
    factory = load(SAMPLER, name).obj
    return SamplerCapabilities(**{key: getattr(factory, key) for key in CAPABILITIES
                                  if hasattr(factory, key)})


def split_device(spec: str) -> tuple[str, str | None]:
    """``replay:PATH.csv`` -> (``replay``, ``PATH.csv``): a device name, then an argument
    after a colon where the name before it is a built-in or installed device; anything
    else is one name (a ``module:attr`` path takes no argument)."""
    name, colon, argument = spec.partition(":")
    if colon and (name in DEVICE.builtins or name in installed(DEVICE)):
        return name, argument
    return spec, None
