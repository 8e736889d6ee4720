"""A user kernel's declaration read from its module's source, never imported.

``sweeper plan`` runs no user code (importing a module runs its top level), yet a plan
that counts a kernel's dimensions as meta-parameters is wrong.  The declaration is data
written as code: ``@sweeper.kernel(dims=..., meta=...)``, a :class:`Kernel` subclass's
``dims = {...}``, an ``@triton.autotune(configs=[...], key=[...])``.  This reads those
with :mod:`ast`, takes only literal values (``ast.literal_eval``, plus ``Dim(...)``,
``MetaParam(...)`` and ``triton.Config(...)`` calls whose arguments are literals (a
config's ``pre_hook``, code, left unread), built here, constant integer arithmetic such
as ``1 << 24``, ``4096 * 4096`` or ``2**20``, computed here from the tree within
:data:`MOST`, list comprehensions over literal lists
(``[triton.Config({"BLOCK": b}) for b in (256, 1024)]``), built here, and module-level
names bound to such values), and says what it could not read: nothing in the module is
ever evaluated.  A name the module imports (``from pkg.lib import kern``, ``from .lib
import kern as k``, ``import pkg.lib`` then ``pkg.lib.kern``, a re-export through a
package's ``__init__``) is followed into the module it names, found as ``sweeper run``'s
import finds it (the working folder first, then the import path: :func:`module_file`),
and read there the same way; one bound by code only running the module resolves (an
import inside ``try:``, ``importlib.import_module``) is named with where, and why.  The
reading is bounded (:data:`MOST_STEPS`, :data:`MOST_BUILT` and :data:`MOST_HOPS`, each
module-level name read once): a short module whose values grow with each name that uses
the one before is named as too large to read, not read for hours.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import operator
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from sweeper.core import THREAD_BLOCKS, WARP_BLOCKS, Dim
from sweeper.errors import SweeperError, statement
from sweeper.kernels._base import MetaParam, hash_of_source
from sweeper.kernels._interpreted_ops import LaunchOps, function_ops, last_name
from sweeper.kernels._own_modules import absolute_name, module_file, own_source

if TYPE_CHECKING:      # built only where a sweeper.cuda launch is read (plan, lookups)
    from sweeper.kernels._cuda_build import CudaLaunch

#: The class attributes a Kernel subclass's declaration is read from.
CLASS_ATTRS = ("dims", "meta_params", "options", "option_defaults", "optional_options",
               "defaults", "footprint_bytes", "dims_from_footprint", "no_triton_function")
#: ``sweeper.kernel``'s keywords that declare something a space is checked against.
SHORT_KEYWORDS = ("dims", "meta", "grid", "grid_y", "grid_z", "block", "dtype",
                  "footprint_bytes", "autotuned")
#: Calls built from literal arguments: the declaration's value types, nothing else.
CALLS: dict[str, Callable[..., Any]] = {
    "Dim": Dim, "MetaParam": MetaParam,
    "Config": lambda kwargs, **options: SimpleNamespace(kwargs=kwargs, **options)}
#: Keywords of those calls that take code, left unread: a ``triton.Config``'s
#: ``pre_hook`` runs at launch, and what is read of a config (its values) needs none.
HOOKS: dict[str, frozenset[str]] = {"Config": frozenset({"pre_hook"})}


#: The operators of the constant integer arithmetic a declaration may use (``1 << 24``,
#: ``4096 * 4096``, ``2**20``); true division is not one (its result is not an integer).
ARITHMETIC: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
SIGNS: dict[type, Callable[[int], int]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
#: The largest magnitude constant arithmetic may take or give (2**64, beyond any size a
#: kernel declares): ``2**10**10`` or ``1 << 10**12`` is refused before it is computed,
#: as it would take the reader's memory and time.
MOST = 1 << 64
#: The most items a list comprehension may build (a space's axis takes at most 4096
#: values): ``[x for a in A for b in A for c in A]`` multiplies what it builds.
MOST_ITEMS = 4096
#: The most steps one module's reader takes (each node it evaluates and each step of a
#: comprehension's loops): comprehensions nested in one another, directly or through
#: names, multiply their steps, and a refusal should come in about a second (4096 configs
#: of 25 kwargs take some 225000).
MOST_STEPS = 1 << 18
#: The most one value the reader builds may hold, counting what the values it holds hold
#: (4096 autotune configs of 25 kwargs each): a name is read once, but ``x2 = [x1, x1]``
#: holds it twice, and a few dozen such names hold more than any memory, walked whole by
#: whatever checks the declaration.
MOST_BUILT = 1 << 18
#: Why a value is not read where reading the module takes more than :data:`MOST_STEPS`.
TOO_LONG = f"too large to read: the module's reading ran past {MOST_STEPS} steps"
#: Why a value is not read where it holds more than :data:`MOST_BUILT`.
TOO_LARGE = f"too large to read: over {MOST_BUILT} items"
#: Why a value is not read where its names or expressions nest too deeply to follow.
TOO_DEEP = "nested too deeply to read"
#: The most names and imports one name is followed through (``k = kern``, ``from .lib
#: import kern``, a package re-exporting it...): a chain past it, or a loop of modules
#: importing one another, is named, not followed.
MOST_HOPS = 32
#: ``sweeper.cuda``'s parameters (:func:`~sweeper.kernels._cuda_form.cuda`), each
#: to its default (``...``: none, it must be given), and those it takes by position.
CUDA_PARAMETERS: Mapping[str, Any] = MappingProxyType({
    "source": ..., "entry": ..., "args": ..., "template": None, "nvrtc_options": (),
    "shared_memory": None})
CUDA_POSITIONAL = ("source", "entry", "args")
#: No names bound by a comprehension (outside any).
_NO_NAMES: Mapping[str, Any] = MappingProxyType({})


class ImportRefused(Exception):
    """What importing a kernel's module would raise, its declaration refused: the
    error ``sweeper.kernel`` raises (a :class:`SweeperError`, or another where a value
    is not of a type it expects) and where in the module (``at``, as
    :func:`~sweeper.errors.user_line` names it), which the plugin loader words as it words
    a failed import (:func:`sweeper.plugins.unchecked_kernel`)."""

    def __init__(self, error: Exception, at: str) -> None:
        super().__init__(str(error))
        self.error, self.at = error, at


class NotLiteral(Exception):
    """A value that only running the module would give, or one too large to read; its
    text says which (``not a literal``, :data:`TOO_LONG`, :data:`TOO_LARGE`,
    :data:`TOO_DEEP`)."""

    def __init__(self, why: str = "not a literal") -> None:
        super().__init__(why)


def _literal(tree: ast.Module, attr: str, node: ast.AST | None) -> Any:
    """The value of ``node``, what the module binds ``attr`` to, where it is a literal
    (``A = 5``) and the module binds ``attr`` nowhere else (no branch, loop or import
    may rebind it); else ``None``."""
    if not isinstance(node, ast.expr):
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    # an import, def or assignment of it, and what else may bind it: a deletion, a
    # ``global`` of it, a star import
    bindings = sum(_binds(n, attr) or (isinstance(n, ast.Name) and n.id == attr and
                                       isinstance(n.ctx, ast.Del)) or
                   (isinstance(n, (ast.Global, ast.Nonlocal)) and attr in n.names) or
                   (isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names))
                   for n in ast.walk(tree))
    return value if bindings == 1 and value is not None else None


@dataclass(frozen=True)
class SourceDeclaration:
    """What the source of kernel ``target`` declares: class attributes as a Kernel
    subclass has them (``attrs``), and each part that could not be read (``unread``, a
    phrase naming it and where)."""

    target: str
    attrs: dict[str, Any]
    unread: tuple[str, ...]


def read_declaration(target: str, name: str) -> SourceDeclaration:
    """The declaration of ``module:attr`` ``target`` (the kernel a space calls ``name``),
    read from the module's file on ``sys.path`` (the current directory first, as a path
    plugin is imported).  A ``sweeper.kernel`` declaration whose every keyword and launch
    can be read is checked as importing it checks it
    (:meth:`~sweeper.kernels._short_form.Declaration.checked`); one that is wrong raises
    :class:`ImportRefused`, carrying the error importing it would raise and the line it
    would name; where it cannot be checked so, its attributes say why
    (``unchecked_declaration``)."""
    module, _, attr = target.partition(":")
    found = module_file(module)
    if found is None:
        return SourceDeclaration(target, {}, (f"its module {module} (not found on the path)",))
    file = Path(found)
    try:
        text = file.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
            MemoryError) as err:                     # (nested past the parser's limits)
        return SourceDeclaration(target, {}, (f"{file.name} ({type(err).__name__})",))
    reader = _Reader(file, tree, text, module=module)
    node = reader.bound.get(attr)
    if isinstance(node, ast.ClassDef):
        return reader.kernel_class(target, node)
    call = reader.short_call(node)
    if call is None:
        kind = _function_kind(node)
        if kind is not None and node is not None:    # what importing it would refuse
            what = {"autotune": "a @triton.autotune function", "jit": "a @triton.jit "
                    "function", "function": "a function"}[kind]
            raise SweeperError(f"cannot load kernel {target!r} (module:attr path): {target} "
                               f"is {what} ({reader.where(node)}), not a sweeper.kernels."
                               f"Kernel subclass or instance{not_a_kernel(kind, attr)}")
        literal = _literal(tree, attr, node)
        if literal is not None and node is not None:  # what importing it would refuse too
            name = type(literal).__name__
            raise SweeperError(f"cannot load kernel {target!r} (module:attr path): {target} "
                               f"is {'an' if name[:1] in 'aeiou' else 'a'} {name} "
                               f"({reader.where(node)}), not a sweeper.kernels.Kernel "
                               "subclass or instance")
        return SourceDeclaration(target, {}, (f"{attr} in {file.name} (neither a Kernel "
                                              "subclass nor a sweeper.kernel declaration)",))
    # the launch given, as kernel(launch, ...) or kernel(...)(launch); else the decorated node
    given = (node if isinstance(node, ast.Call) and node.func is call else call).args
    # the line importing it fails at: the decorator's, or the call's the name is bound to
    at = call.lineno if isinstance(node, ast.FunctionDef) else getattr(node, "lineno", 0)
    try:
        declared = reader.short_kernel(target, name, call, given[0] if given else node)
    except Exception as err:  # noqa: BLE001  what sweeper.kernel raises, importing would
        raise ImportRefused(err, f"{file.name}:{at}: {statement(reader.lines, at)}") from None
    if reader.launches_cuda(given[0] if given else None):
        declared.attrs["needs_gpu"] = True
        declared.attrs["cuda_source"] = reader.cuda_source(given[0])
    functions = reader.launched_functions(given[0] if given else node)
    if functions:                       # what an interpreted launch runs, for plan
        ops = LaunchOps(tuple(function_ops(f, where=found.where(f)) for f, found in functions))
        # the launched functions' arguments, in order, each once (export --format triton)
        arguments = tuple(dict.fromkeys(a for f in ops.functions for a in f.arguments))
        if arguments:
            declared.attrs["triton_arguments"] = arguments
        declared.attrs["interpreted_ops"] = ops
    return declared


def module_source_hash(target: str) -> str | None:
    """The source hash a study of kernel ``module:attr`` ``target`` records, where its
    module's text tells it (read here, never run), as the kernel's
    :meth:`~sweeper.kernels._short.ShortKernel.source` gives it: a ``sweeper.kernel``
    declaration whose launch the module itself defines hashes the module's text and that
    of the user's own modules it imports (:func:`~sweeper.kernels._short_form.kernel`):
    a function it decorates, or one of the module's own functions it is given
    (``kernel(launch, ...)``, a lambda too); one given a ``sweeper.cuda(...)`` launch
    (``kernel(sweeper.cuda(...), ...)``, or a module-level name bound to that call), whose
    arguments are literals, hashes after those the ``.cu`` file it names and each file
    that includes, its entry, arguments, NVRTC options and shared memory, read as a run
    reads them,
    nothing compiled (:meth:`_Reader.cuda_launch`).  ``None`` for any other kernel (a
    Kernel subclass hashes its class; a launch imported from another module, where
    only importing it tells whose text heads the hash: this module's where the launch
    is the user's, the launch's module's where it is a library's), a module that
    cannot be found or read, or a ``.cu`` file that cannot (a run refuses to import
    it)."""
    module, _, attr = target.partition(":")
    found = module_file(module)
    if found is None:
        return None
    linecache.checkcache(found)
    text = "".join(linecache.getlines(found))         # as inspect.getsource reads a module
    try:
        tree = ast.parse(text, filename=found)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    reader = _Reader(Path(found), tree, text, module=module)
    node = reader.bound.get(attr)
    call = reader.short_call(node)
    if call is None:
        return None
    compiled = ""
    if not isinstance(node, ast.FunctionDef):
        given = (node if isinstance(node, ast.Call) and node.func is call else call).args
        launch = given[0] if given else None
        cuda = reader.cuda_launch(launch)
        if cuda is not None:
            try:
                compiled = cuda.kernel_source()
            except OSError:
                return None
        elif reader.cuda_call(launch) is not None or \
                reader.function(launch, launch=True) is None:
            return None
    return hash_of_source(text + own_source(module, found) + compiled if text else text)


def compile_error(target: str) -> SyntaxError | None:
    """The :class:`SyntaxError` importing the module of ``module:attr`` ``target`` would
    raise first, found by compiling (never running) the source of each module the import
    runs, its packages' ``__init__`` first, as the import system compiles it: one the
    parser refuses (``def f(:``) and one only the compiler does (``f(a=1, a=2)``,
    ``return`` outside a function).  ``None`` where each found compiles, or where one
    cannot be read (importing it tells)."""
    parts = target.partition(":")[0].split(".")
    for depth in range(1, len(parts) + 1):
        found = module_file(".".join(parts[:depth]))
        if found is None:                   # a namespace package's folder: nothing to run
            continue
        try:
            source = Path(found).read_bytes()
            compile(source, found, "exec", dont_inherit=True)   # as importlib compiles it
        except SyntaxError as err:
            return err
        except (OSError, ValueError, RecursionError, MemoryError):
            return None
    return None


def missing_import(target: str) -> tuple[str, str] | None:
    """The top-level package that importing the module of ``module:attr`` ``target`` would
    find nowhere on the import path first, and where its source imports it
    (``mykern.py:6: import nonexisting_pkg``), read, never run, from each module the
    import runs, its packages' ``__init__`` first: of each, the imports that open it (after
    its docstring, before any other statement), which nothing of its own can have made
    findable (a ``sys.path`` edit) or guarded (``try``, ``if``).  ``None`` where each of
    those is found, or where only importing could tell (a relative import, a submodule)."""
    import importlib.util

    parts = target.partition(":")[0].split(".")
    for depth in range(1, len(parts) + 1):
        found = module_file(".".join(parts[:depth]))
        if found is None:
            continue
        try:
            tree = ast.parse(Path(found).read_bytes(), filename=found)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        for node in tree.body:
            if node is tree.body[0] and isinstance(node, ast.Expr) and \
                    isinstance(node.value, ast.Constant):
                continue                                # the docstring
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level or node.module in (None, "__future__") else \
                    [str(node.module)]
            else:
                break
            for name in names:
                top = name.split(".")[0]
                try:
                    spec = importlib.util.find_spec(top)    # a top-level name: nothing runs
                except (ImportError, ValueError):
                    continue
                if spec is None:
                    lines = linecache.getlines(found)
                    return top, (f"{Path(found).name}:{node.lineno}: "
                                 f"{statement(lines, node.lineno)}")
    return None


#: Names through which a module may bind a top-level name its source never spells out.
_DYNAMIC = frozenset({"globals", "setattr", "exec", "eval", "vars", "locals", "__dict__",
                      "__getattr__"})


def names_bound(target: str) -> list[str] | None:
    """The public names the module of ``module:attr`` ``target`` binds at its top level,
    read from its source without importing it, where that source shows ``attr`` is none
    of them: it spells ``attr`` nowhere (no definition, assignment, import, use or string
    of that name) and binds nothing it does not spell out (no ``import *``, no
    ``globals()``, ``setattr``, ``exec``, module ``__getattr__`` or the like), and no
    submodule of that name sits beside it.  ``None`` wherever importing it could still
    give ``attr``, or the source cannot be read."""
    module, _, attr = target.partition(":")
    found = module_file(module)
    if found is None or not attr:
        return None
    file = Path(found)
    if file.name == "__init__.py" and ((file.parent / attr).exists() or
                                       (file.parent / f"{attr}.py").exists()):
        return None                                     # a submodule, which importing binds
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
            MemoryError):
        return None
    spelt: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Name):
            spelt.add(node.id)
        elif isinstance(node, ast.Attribute):
            spelt.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            spelt.add(node.name)
        elif isinstance(node, ast.alias):
            spelt.update((node.asname or node.name).split("."))
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            spelt.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            spelt.update(node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            spelt.update(node.value.replace(".", " ").replace(":", " ").split())
    if attr in spelt or spelt & _DYNAMIC:
        return None
    return sorted(n for n in _Reader(file, tree).bound if not n.startswith("_"))


@dataclass(frozen=True)
class _Import:
    """A name a top-level import binds: the module it names, absolute (``None`` where a
    relative import climbs past its top-level package), the name imported from it
    (``None``: the module itself, as ``import a.b as m`` binds it) and the statement."""

    module: str | None
    attr: str | None
    stmt: ast.stmt


@dataclass(frozen=True)
class _Module:
    """The module a name stands for (``lib`` after ``from pkg import lib``)."""

    name: str


@dataclass(frozen=True)
class _Found:
    """What a name stands for, in the module that binds it: the node ``reader``'s top
    level binds ``name`` to."""

    reader: _Reader
    name: str
    node: ast.AST


class _Modules:
    """What the readers of one declaration share: the readers of the modules its names
    were followed into (by module name; a string: why that module cannot be read; ``None``:
    no file of it found), and the one budget of :data:`MOST_STEPS` for all the reading."""

    def __init__(self) -> None:
        self.steps = 0
        self.readers: dict[str, _Reader | str | None] = {}


class _Reader:
    """One module's top level: what each name is bound to, last binding first (a
    definition or assignment in :attr:`bound`, an import in :attr:`imports`), and the
    value of each name read so far (or why it could not be read), within one budget of
    :data:`MOST_STEPS` for all the reading, that of the modules its imports lead to
    included (``modules``).  ``module``: its dotted name, which its relative imports are
    resolved against; ``file_shown``: how its messages name its file (else by its name)."""

    def __init__(self, file: Path, tree: ast.Module, text: str = "", *, module: str = "",
                 modules: _Modules | None = None, file_shown: str = "") -> None:
        self.file, self.tree, self.module = file, tree, module
        self.file_shown = file_shown or file.name
        self.lines = text.splitlines(keepends=True)
        #: annotations kept as written (``from __future__ import annotations``)
        self.lazy = any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and
                        any(a.name == "annotations" for a in s.names) for s in tree.body)
        self.modules = modules or _Modules()
        if module:
            self.modules.readers.setdefault(module, self)
        self.known: dict[str, Any] = {}                 # name -> value, or its NotLiteral
        self.sizes: dict[int, tuple[int, Any]] = {}     # id -> (what it holds, the value)
        self.bound: dict[str, ast.AST] = {}
        self.imports: dict[str, _Import] = {}
        self.stars: list[_Import] = []                  # from m import *, in order
        package = module if file.name == "__init__.py" else module.rpartition(".")[0]
        for stmt in tree.body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef)):
                self._define({stmt.name: stmt})
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:              # import a.b binds a; as m: a.b
                    name = alias.asname or alias.name.partition(".")[0]
                    self._imported(name, _Import(alias.name if alias.asname else name,
                                                 None, stmt))
            elif isinstance(stmt, ast.ImportFrom):
                base = absolute_name(stmt.module or "", stmt.level, package)
                for alias in stmt.names:
                    if alias.name == "*":
                        self.stars.append(_Import(base, None, stmt))
                    else:
                        self._imported(alias.asname or alias.name,
                                       _Import(base, alias.name, stmt))
            self._define(_assigned(stmt))

    def _define(self, names: Mapping[str, ast.AST]) -> None:
        for name, node in names.items():
            self.bound[name] = node
            self.imports.pop(name, None)

    def _imported(self, name: str, imported: _Import) -> None:
        self.imports[name] = imported
        self.bound.pop(name, None)

    def where(self, node: ast.AST) -> str:
        return f"{self.file_shown}:{getattr(node, 'lineno', '?')}"

    def resolve(self, node: ast.AST, hops: int = 0) -> _Found | _Module:
        """What the name or attribute ``node`` (``kern``, ``lib.kern``,
        ``pkg.lib.kern``) stands for: followed through names bound to names and the
        module's top-level imports into the modules they name, found as importing them
        finds them (:func:`module_file`), each read, never run; :class:`NotLiteral`
        saying where and why where only running the module could tell."""
        if isinstance(node, ast.Name):
            found = self.lookup(node.id, hops)
            if found is None:
                raise NotLiteral(self.unbound(node.id))
            return found
        if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name,
                                                                       ast.Attribute)):
            base = self.resolve(node.value, hops + 1)
            if isinstance(base, _Module):
                return self.member(base.name, node.attr, node, hops + 1)
        name = node.attr if isinstance(node, ast.Attribute) else "NAME"
        raise NotLiteral(f"`{ast.unparse(node)}` at {self.where(node)} is what only running "
                         f"the module gives; {_follow(name)}")

    def lookup(self, name: str, hops: int) -> _Found | _Module | None:
        """What top-level ``name`` stands for (:meth:`resolve`): its binding here, an
        import's, this package's submodule of that name, or a ``from m import *``'s (the
        last first); ``None`` where this module binds it nowhere that can be read."""
        if hops > MOST_HOPS:
            raise NotLiteral(f"{name} in {self.file_shown} is followed through more than "
                             f"{MOST_HOPS} names and imports (do modules import one another "
                             "in a loop?)")
        node = self.bound.get(name)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.resolve(node, hops + 1)
        if node is not None:
            return _Found(self, name, node)
        imported = self.imports.get(name)
        if imported is not None:
            if imported.module is None:
                raise NotLiteral(f"{name} is imported at {self.where(imported.stmt)} from "
                                 "above its top-level package")
            if imported.attr is None:
                return _Module(imported.module)
            return self.member(imported.module, imported.attr, imported.stmt, hops + 1)
        if self.file.name == "__init__.py" and _is_module(f"{self.module}.{name}"):
            return _Module(f"{self.module}.{name}")
        for star in reversed(self.stars):
            reader = self.opened(star.module) if star.module is not None else None
            if reader is not None and reader.exports(name):
                found = reader.lookup(name, hops + 1)
                if found is not None:
                    return found
        return None

    def member(self, module: str, name: str, at: ast.AST, hops: int) -> _Found | _Module:
        """What ``name`` of ``module`` stands for (``from module import name``,
        ``module.name``, at ``at`` here): what its top level binds, else its submodule."""
        reader = self.opened(module)
        found = reader.lookup(name, hops) if reader is not None else None
        if found is not None:
            return found
        if _is_module(f"{module}.{name}"):
            return _Module(f"{module}.{name}")
        if reader is not None:
            raise NotLiteral(reader.unbound(name))
        imported = f"`{statement(self.lines, at.lineno)}` at {self.where(at)}" \
            if isinstance(at, ast.stmt) else f"{ast.unparse(at)} at {self.where(at)}"
        if _is_module(module):
            raise NotLiteral(f"{imported}: {module} (a folder without __init__.py) holds "
                             f"no {name}")
        raise NotLiteral(f"{imported}: {module} is not found in the working folder nor on "
                         "the import path, where `sweeper run` imports it from")

    def opened(self, module: str) -> _Reader | None:
        """The reader of ``module``, read once for all the readers of a declaration;
        ``None`` where no file of it is found (a namespace package's folder, or none);
        :class:`NotLiteral` where its file cannot be read."""
        readers = self.modules.readers
        if module not in readers:
            readers[module] = _opened(module, self.modules)
        reader = readers[module]
        if isinstance(reader, str):
            raise NotLiteral(reader)
        return reader

    def exports(self, name: str) -> bool:
        """Whether ``from this module import *`` binds ``name``: one its ``__all__``
        lists where that is read, else one not starting with ``_``."""
        if "__all__" in self.bound:
            try:
                listed = self.named("__all__", frozenset())
            except NotLiteral:
                return False
            return isinstance(listed, (list, tuple)) and name in listed
        return not name.startswith("_")

    def unbound(self, name: str) -> str:
        """Why top-level ``name`` is not followed here: bound only by a statement whose
        binding only running the module resolves (an import inside ``try:`` or ``if:``, a
        ``for`` loop's, a function's), or nowhere."""
        for node in ast.walk(self.tree):
            line = getattr(node, "lineno", None)
            if line is None or not _binds(node, name):
                continue
            outer = next((s for s in self.tree.body
                          if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
            inside = f" inside `{statement(self.lines, outer.lineno)}` at " \
                f"{self.where(outer)}" if outer is not None and outer.lineno != line else ""
            return (f"{name} is bound at {self.where(node)} "
                    f"(`{statement(self.lines, line)}`){inside}, which only running the "
                    f"module resolves; {_follow(name)}")
        return f"{self.file_shown} binds no {name} at its top level"

    def read(self, node: ast.AST) -> Any:
        """:meth:`value` of a declaration's own node; names nested past Python's stack (a
        chain of thousands of names or operators) are :data:`TOO_DEEP`."""
        try:
            return self.value(node)
        except RecursionError:
            raise NotLiteral(TOO_DEEP) from None

    def step(self) -> None:
        """Count one step of the reading: :data:`TOO_LONG` past :data:`MOST_STEPS`."""
        self.modules.steps += 1
        if self.modules.steps > MOST_STEPS:
            raise NotLiteral(TOO_LONG)

    def built(self, value: Any, items: list[Any]) -> Any:
        """``value``, built of ``items``: :data:`TOO_LARGE` where it holds more than
        :data:`MOST_BUILT`, counting what each item holds as often as it is held."""
        size = 1 + sum(self.sizes.get(id(x), (1,))[0] for x in items)
        if size > MOST_BUILT:
            raise NotLiteral(TOO_LARGE)
        self.sizes[id(value)] = (size, value)          # (kept: its id stays its own)
        return value

    def named(self, name: str, seen: frozenset[str]) -> Any:
        """The value of module-level ``name``, read once: a name used twice, or by each
        of many names, is not read again."""
        if name not in self.known:
            try:
                self.known[name] = self.value(self.bound[name], seen | {name})
            except NotLiteral as err:      # (a cycle of names fails from any of its names)
                self.known[name] = err
        known = self.known[name]
        if isinstance(known, NotLiteral):
            raise NotLiteral(str(known))
        return known

    def value(self, node: ast.AST, seen: frozenset[str] = frozenset(),
              local: Mapping[str, Any] = _NO_NAMES) -> Any:
        """``node``'s value where it is a literal, a call in :data:`CALLS` of literals (its
        :data:`HOOKS` left unread), constant integer arithmetic (:meth:`arithmetic`), a
        list comprehension of them (:meth:`comprehension`), a name a comprehension binds
        (``local``) or a module-level name bound to one (:meth:`named`); else
        :class:`NotLiteral`.  Each node is a :meth:`step`; each container and call built
        is :meth:`built`."""
        self.step()
        if isinstance(node, ast.Name) and node.id in local:
            return local[node.id]
        if isinstance(node, ast.Name) and node.id in self.bound and node.id not in seen:
            return self.named(node.id, seen)
        if isinstance(node, ast.Name) and node.id in self.imports:
            found = self.resolve(node)               # a name another module binds
            if isinstance(found, _Module):
                raise NotLiteral
            return found.reader.named(found.name, frozenset())
        if isinstance(node, ast.ListComp):
            return self.comprehension(node, seen, local)
        if isinstance(node, ast.Call):
            build = CALLS.get(last_name(node.func) or "")
            if build is None or any(isinstance(a, ast.Starred) for a in node.args) or \
                    any(k.arg is None for k in node.keywords):
                raise NotLiteral
            args = [self.value(a, seen, local) for a in node.args]
            hooks = HOOKS.get(last_name(node.func) or "", frozenset())
            kwargs = {k.arg: self.value(k.value, seen, local) for k in node.keywords
                      if k.arg is not None and k.arg not in hooks}
            try:
                return self.built(build(*args, **kwargs), [*args, *kwargs.values()])
            except TypeError as err:
                raise NotLiteral from err
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and type(node.op) in (*ARITHMETIC, *SIGNS):
            number = self.arithmetic(node, seen, local)
            if number is not None:
                return number
        if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            items = [self.value(n, seen, local) for n in _children(node)]
            try:
                if isinstance(node, ast.Dict):
                    return self.built(dict(zip(items[::2], items[1::2], strict=True)), items)
                return self.built(
                    {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items), items)
            except TypeError as err:                       # an unhashable key
                raise NotLiteral from err
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError) as err:
            raise NotLiteral from err

    def arithmetic(self, node: ast.BinOp | ast.UnaryOp, seen: frozenset[str],
                   local: Mapping[str, Any]) -> int | None:
        """The integer ``node`` gives where its operands are integers (literals, names
        bound to them, or arithmetic of them), computed from the tree; ``None`` where an
        operand is another literal (``-1.5``, ``1 + 2j``: :func:`ast.literal_eval`'s);
        :class:`NotLiteral` where the result is not an integer within :data:`MOST` or
        cannot be computed (division by zero, a negative shift or exponent)."""
        operands = [self.value(n, seen, local) for n in (
            (node.left, node.right) if isinstance(node, ast.BinOp) else (node.operand,))]
        if not all(type(x) is int for x in operands):
            return None
        if any(abs(x) > MOST for x in operands):
            raise NotLiteral
        if isinstance(node, ast.UnaryOp):
            return SIGNS[type(node.op)](operands[0])
        left, right = operands
        if (isinstance(node.op, ast.Pow) and abs(left) > 1 and right > 64) or (
                isinstance(node.op, ast.LShift) and left != 0 and right > 64) or (
                isinstance(node.op, ast.Pow) and right < 0):
            raise NotLiteral                             # too large, or not an integer
        try:
            result = ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, ValueError) as err:     # / 0, a negative shift
            raise NotLiteral from err
        if abs(result) > MOST:
            raise NotLiteral
        return result

    def comprehension(self, node: ast.ListComp, seen: frozenset[str],
                      local: Mapping[str, Any]) -> list[Any]:
        """The list ``[item for target in items ...]`` builds, each ``items`` a literal list
        or tuple (or a name bound to one, or ``range()`` of integers), each target a name
        or a tuple of names, with no ``if``: its items in Python's order, at most
        :data:`MOST_ITEMS` of them, each step of each loop a :meth:`step`; else
        :class:`NotLiteral`."""
        scopes = [local]
        for loop in node.generators:
            if loop.ifs or loop.is_async:
                raise NotLiteral
            inner: list[Mapping[str, Any]] = []
            for scope in scopes:
                for item in self.iterated(loop.iter, seen, scope):
                    self.step()
                    inner.append({**scope, **_bind(loop.target, item)})
                    if len(inner) > MOST_ITEMS:
                        raise NotLiteral
            scopes = inner
        items = [self.value(node.elt, seen, scope) for scope in scopes]
        self.built(items, items)
        return items

    def iterated(self, node: ast.expr, seen: frozenset[str],
                 local: Mapping[str, Any]) -> list[Any] | tuple[Any, ...] | range:
        """What a comprehension's ``for`` goes over: a literal list or tuple, or
        ``range()`` of integers of at most :data:`MOST_ITEMS` items (``range(1 << 63)``,
        too long for ``len()`` to count, is one of more)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "range" and "range" not in self.bound and not node.keywords:
            bounds = [self.value(a, seen, local) for a in node.args]
            if not 1 <= len(bounds) <= 3 or not all(type(b) is int for b in bounds):
                raise NotLiteral
            try:
                steps = range(*bounds)
                many = len(steps) > MOST_ITEMS
            except (ValueError, OverflowError) as err:   # a step of 0; over sys.maxsize
                raise NotLiteral from err
            if many:
                raise NotLiteral
            return steps
        items = self.value(node, seen, local)
        if not isinstance(items, (list, tuple)):     # (a set's order is not the source's)
            raise NotLiteral
        return items

    def kernel_class(self, target: str, node: ast.ClassDef) -> SourceDeclaration:
        """A Kernel subclass's class attributes of :data:`CLASS_ATTRS` (its bases are not
        read: a declaration inherited from another class is one this cannot see)."""
        attrs: dict[str, Any] = {}
        unread: list[str] = []
        for stmt in node.body:
            for name, value in _assigned(stmt).items():
                if name not in CLASS_ATTRS:
                    continue
                try:
                    attrs[name] = self.read(value)
                except NotLiteral as err:
                    unread.append(f"{name} at {self.where(stmt)} ({err})")
        inherits = [last_name(b) for b in node.bases] != ["Kernel"]
        for key in ("dims", "meta_params"):
            if key not in attrs and inherits and not any(u.startswith(key) for u in unread):
                unread.append(f"{key} (class {node.name} at {self.where(node)} does not set "
                              "it; what it inherits is not read)")
            if key in attrs and not _all_of(attrs[key], Dim if key == "dims" else MetaParam):
                unread.append(f"{key} at {self.where(node)} (not a mapping of names to "
                              f"{'Dim' if key == 'dims' else 'MetaParam'})")
                del attrs[key]
        return SourceDeclaration(target, attrs, tuple(unread))

    def short_call(self, node: ast.AST | None) -> ast.Call | None:
        """The ``sweeper.kernel(...)`` call that declares ``node``: its decorator, or the
        call it is bound to (``kernel(launch, ...)`` or ``kernel(...)(launch)``)."""
        calls = node.decorator_list if isinstance(node, ast.FunctionDef) else [node]
        return next(filter(None, map(_kernel_call, calls)), None)

    def launches_cuda(self, launch: ast.AST | None) -> bool:
        """Whether ``launch``, the launch a ``sweeper.kernel`` call is given (``None``: a
        decorated Python function, which launches what its body does, not read), is a
        ``sweeper.cuda(...)`` one (compiled CUDA C, which runs on a CUDA GPU only, as the
        built-in ``cuda`` kernel does): the call itself, or a module-level name bound to
        it."""
        return self.cuda_call(launch) is not None

    def cuda_call(self, launch: ast.AST | None) -> ast.Call | None:
        """The ``sweeper.cuda(...)`` call ``launch`` is (:meth:`launches_cuda`), or
        ``None``."""
        seen: set[str] = set()
        while isinstance(launch, ast.Name) and launch.id in self.bound and \
                launch.id not in seen:                  # launch = sweeper.cuda(...) above
            seen.add(launch.id)
            launch = self.bound[launch.id]
        return launch if isinstance(launch, ast.Call) and \
            last_name(launch.func) == "cuda" else None

    def cuda_source(self, launch: ast.AST | None) -> Path | None:
        """The CUDA C file the ``sweeper.cuda(...)`` launch ``launch`` compiles, as the
        call resolves it (relative to the module's folder), where its source is a
        literal (or a module-level name bound to one); ``None`` where only running the
        module gives it."""
        call = self.cuda_call(launch)
        given = [k.value for k in call.keywords if k.arg == "source"] if call else []
        node = call.args[0] if call is not None and call.args else next(iter(given), None)
        try:
            value = self.read(node) if node is not None else None
        except NotLiteral:
            return None
        if not isinstance(value, str) or not value or "\0" in value:
            return None
        return (self.file.resolve().parent / value).resolve()

    def cuda_launch(self, launch: ast.AST | None) -> CudaLaunch | None:
        """The :class:`~sweeper.kernels._cuda_build.CudaLaunch` the ``sweeper.cuda(...)``
        launch ``launch`` makes as the module runs it, built here from the call's
        arguments (each a literal, or a module-level name bound to one; bound to
        :data:`CUDA_PARAMETERS` as Python binds a call's), nothing read or compiled:
        its :meth:`~sweeper.kernels._cuda_build.CudaLaunch.kernel_source` is what a
        study's source hash holds besides the module's text.  ``None`` where only running
        the module gives one (a value computed, ``*args`` or ``**options``), or where
        ``sweeper.cuda`` would refuse the call's arguments (their number, a keyword it
        does not take, a value of a type it does not take)."""
        from sweeper.kernels._cuda_build import CudaLaunch

        call = self.cuda_call(launch)
        path = self.cuda_source(launch)
        if call is None or path is None or len(call.args) > len(CUDA_POSITIONAL) or \
                any(isinstance(a, ast.Starred) for a in call.args):
            return None
        nodes = dict(zip(CUDA_POSITIONAL, call.args, strict=False))
        for keyword in call.keywords:
            if keyword.arg is None or keyword.arg not in CUDA_PARAMETERS or \
                    keyword.arg in nodes:
                return None                             # **options; one it does not take
            nodes[keyword.arg] = keyword.value
        try:
            given = {name: self.read(node) for name, node in nodes.items()}
        except NotLiteral:
            return None
        values = {**CUDA_PARAMETERS, **given}
        entry, args, template, options, shared = (values[k] for k in (
            "entry", "args", "template", "nvrtc_options", "shared_memory"))
        if not isinstance(entry, str) or not isinstance(args, (list, tuple)) or \
                not isinstance(template, (str, type(None))) or \
                not isinstance(options, (list, tuple)) or isinstance(shared, bool) or \
                not isinstance(shared, (str, int, type(None))):
            return None
        return CudaLaunch(path, entry, args, template, self.module, options,
                          None if shared is None else str(shared))

    def launched_functions(self, launch: ast.AST | None
                           ) -> list[tuple[ast.FunctionDef, _Reader]]:
        """The definitions of the Triton functions ``launch`` (the function a
        ``sweeper.kernel`` call declares, or a name bound to it) launches (``f[grid](...)``
        or ``f.fn[grid](...)`` in its body, ``f`` a function defined in the module or one
        it imports, or a name bound to ``triton.autotune(...)(f)``), each with the reader
        of its module; empty where none is read."""
        if isinstance(launch, ast.Name):
            launch = self.bound.get(launch.id)
        if not isinstance(launch, ast.FunctionDef):
            return []
        functions: list[tuple[ast.FunctionDef, _Reader]] = []
        for sub in ast.walk(launch):
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Subscript)):
                continue
            launched = sub.func.value
            if isinstance(launched, ast.Attribute) and launched.attr == "fn":
                launched = launched.value
            found = self.found_function(launched)
            if found is not None and all(found[0] is not f for f, _ in functions):
                functions.append(found)
        return functions

    def found_function(self, node: ast.AST) -> tuple[ast.FunctionDef, _Reader] | None:
        """The definition of the function the name or attribute ``node`` stands for, in
        whichever module binds it (:meth:`resolve`), through ``autotune(...)(f)`` or
        ``jit(f)``, with the reader of that module; ``None`` where it cannot be
        followed."""
        try:
            found = self.resolve(node)
            if isinstance(found, _Found) and isinstance(found.node, ast.Call) and \
                    found.node.args:                         # autotune(...)(f), jit(f)
                found = found.reader.resolve(found.node.args[0])
        except NotLiteral:
            return None
        if isinstance(found, _Found) and isinstance(found.node, ast.FunctionDef):
            return found.node, found.reader
        return None

    def short_kernel(self, target: str, name: str, call: ast.Call, launch: ast.AST | None
                     ) -> SourceDeclaration:
        """The attributes ``sweeper.kernel``'s keywords declare, built as it builds them,
        and, where every keyword and the launch could be read, checked as importing the
        module checks them (:meth:`Declaration.checked`: the first mistake refused in the
        same words), the functions it is given stood in for by their signatures."""
        from sweeper.kernels._short_form import Declaration, check_extents

        values = self.keyword_values(call)
        given: dict[str, Any] = {}
        unread: list[str] = []
        for keyword in call.keywords:
            if keyword.arg == "name" or keyword.arg in SHORT_KEYWORDS:
                value = values[keyword.arg]
                if isinstance(value, NotLiteral):
                    unread.append(f"{keyword.arg}= at {self.where(keyword.value)} ({value})")
                else:
                    given[keyword.arg] = value
        stand_in = self.function(launch, launch=True)
        whole = self.keywords(call, values)
        unchecked: str | None = None            # why it could not be checked as imported
        if isinstance(whole, str):
            unchecked = whole
        elif unread or len(call.args) > 1:
            unchecked = "its keywords, which only running the module gives"
        elif stand_in is None and isinstance(launch, ast.FunctionDef):
            unchecked = (f"its launch {launch.name} at {self.where(launch)}, decorated by "
                         "more than sweeper.kernel")
        elif stand_in is None:
            unchecked = (f"its launch at {self.where(launch or call)}, which only running "
                         "the module gives")
        else:
            Declaration(**whole).checked(stand_in)
        named = getattr(stand_in, "__name__", "<lambda>")
        name = given.pop("name", None) if isinstance(given.get("name"), str) else \
            named if named != "<lambda>" else name
        declared = Declaration(inputs={}, outputs=(), reference=print, **given)
        shape = THREAD_BLOCKS if self.launches_cuda(launch) else WARP_BLOCKS
        attrs = declared.declares(
            name, meta=not any(u.startswith(("meta=", "autotuned=")) for u in unread),
            dims=not any(u.startswith("dims=") for u in unread), shape=shape)
        if "meta_params" in attrs:      # a launch not stood in for: its blocks, as read
            check_extents(name, shape, attrs["meta_params"])
        if "defaults" in attrs and "block" not in given and \
                any(u.startswith("autotuned=") for u in unread):
            del attrs["defaults"]["block"]      # its first config's warps: not guessed
        if unchecked is not None:       # what plan says it could not check
            attrs["unchecked_declaration"] = unchecked
        refuse = next((k.value for k in call.keywords if k.arg == "refuse"), None)
        if refuse is not None:          # code, which only running it answers
            attrs["unchecked_refusal"] = f"its refuse= at {self.where(refuse)}"
        return SourceDeclaration(target, attrs, tuple(unread))

    def keyword_values(self, call: ast.Call) -> dict[str, Any]:
        """Each keyword ``sweeper.kernel`` takes that call ``call`` gives, read once: its
        value (``autotuned=``: as :meth:`autotuner` reads it), or the :class:`NotLiteral`
        reading it raised."""
        from sweeper.kernels._short_form import Declaration

        taken = {field.name for field in fields(Declaration)}
        values: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg in taken:
                try:
                    values[keyword.arg] = self.autotuner(keyword.value) \
                        if keyword.arg == "autotuned" else self.read(keyword.value)
                except NotLiteral as err:
                    values[keyword.arg] = err
        return values

    def keywords(self, call: ast.Call, values: Mapping[str, Any]) -> dict[str, Any] | str:
        """The keywords of ``sweeper.kernel`` call ``call`` as importing it would pass
        them (``values``: :meth:`keyword_values`): literals as they are, a function
        (:data:`CODE`) as :meth:`function` stands in for it; where one is neither (or
        ``**`` passes them), which one, and where."""
        out: dict[str, Any] = {}
        for keyword in call.keywords:
            why = f"its {keyword.arg or '**'}= at {self.where(keyword.value)}, which only " \
                "running the module gives"
            arg = keyword.arg
            if arg is None or arg not in values:    # ** or a keyword it does not take
                return why
            if not isinstance(values[arg], NotLiteral):
                out[arg] = values[arg]
                continue
            function = self.function(keyword.value) if arg in CODE else None
            if function is None or (arg == "inputs" and function.__code__ is None):
                return why                  # (inputs: a factory only where it is one)
            out[arg] = function
        missing = {"inputs", "outputs", "reference"} - set(out)
        return out if not missing else f"its {min(missing)}=, not given"

    def function(self, node: ast.AST | None, *, launch: bool = False) -> Unrun | None:
        """A stand-in for the function ``node`` is (a lambda, a ``def`` of the module or a
        name bound to one, the launch a ``sweeper.kernel`` decorates): its name,
        signature and first line; without a signature where it comes from elsewhere (an
        import, an attribute, a call), which importing it would not check either.  A
        ``launch`` is only a ``def`` or a lambda, undecorated but by ``sweeper.kernel``
        (what another decorator makes of it only running it tells); else ``None``."""
        if isinstance(node, ast.Name) and isinstance(self.bound.get(node.id),
                                                     (ast.FunctionDef, ast.Lambda)):
            node = self.bound[node.id]
        if isinstance(node, ast.Lambda):
            return Unrun("<lambda>", self.signature(node.args), self.file, node.lineno)
        if isinstance(node, ast.FunctionDef):
            if launch and not all(map(_kernel_call, node.decorator_list)):
                return None
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return Unrun(node.name, self.signature(node.args), self.file, first)
        if launch or not (isinstance(node, ast.Attribute) or (
                isinstance(node, ast.Name) and node.id not in self.bound)):
            return None                     # (a value the module computes: only running it)
        return Unrun(last_name(node) or "function", None, self.file, None)

    def signature(self, args: ast.arguments) -> inspect.Signature:
        """The signature a function of these ``args`` has, its defaults and annotations
        shown as its source writes them (a literal default as its value)."""
        kind = inspect.Parameter
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [
            None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        listed: list[tuple[ast.arg, inspect._ParameterKind, ast.expr | None]] = [
            (a, kind.POSITIONAL_ONLY if i < len(args.posonlyargs) else
             kind.POSITIONAL_OR_KEYWORD, d)
            for i, (a, d) in enumerate(zip(positional, defaults, strict=True))]
        if args.vararg is not None:
            listed.append((args.vararg, kind.VAR_POSITIONAL, None))
        listed += [(a, kind.KEYWORD_ONLY, d)
                   for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
        if args.kwarg is not None:
            listed.append((args.kwarg, kind.VAR_KEYWORD, None))
        return inspect.Signature([kind(
            a.arg, k, default=kind.empty if d is None else _Shown(self.shown(d)),
            annotation=kind.empty if a.annotation is None else _Shown(
                repr(ast.unparse(a.annotation)) if self.lazy else ast.unparse(a.annotation)))
            for a, k, d in listed])

    def shown(self, node: ast.expr) -> str:
        """How a default value reads in a signature: a literal's ``repr``, else its
        source."""
        try:
            return repr(self.read(node))
        except NotLiteral:
            return ast.unparse(node)

    def autotuner(self, node: ast.AST) -> Any:
        """What ``autotuned=`` names, as :func:`autotune_declaration` reads it: the
        ``configs`` and ``key`` of the ``@triton.autotune`` decorating that function (or
        the ``triton.autotune(...)(fn)`` call it is), in the module that binds it (a name
        imported from another is followed there, :meth:`resolve`, as running the module
        would import it), and whether it gives a ``post_hook`` (refused as the imported
        declaration refuses it); a literal as it is, and a ``def`` no autotune decorates
        as the kind of object its decorators make of it (:func:`_made_by`), which the
        declaration refuses in the words it refuses the imported one with."""
        reader = self
        if isinstance(node, (ast.Name, ast.Attribute)):
            found = self.resolve(node)           # followed into the module that binds it
            if isinstance(found, _Module):
                raise NotLiteral(f"{ast.unparse(node)} at {self.where(node)} is the "
                                 f"module {found.name}, not a @triton.autotune function")
            reader, node = found.reader, found.node
        calls = node.decorator_list if isinstance(node, ast.FunctionDef) else \
            [node.func] if isinstance(node, ast.Call) else []
        for call in calls:
            if isinstance(call, ast.Call) and last_name(call.func) == "autotune":
                options = {k.arg: reader.read_there(k.value)
                           for k in call.keywords if k.arg in ("configs", "key")}
                return SimpleNamespace(configs=list(options.get("configs", ())),
                                       keys=list(options.get("key", ())), fn=print,
                                       base_fn=SimpleNamespace(__name__=_function(node)),
                                       user_defined_post_hook=any(
                                           k.arg == "post_hook" for k in call.keywords))
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set)):
            return reader.read(node)        # no autotuner: refused as importing refuses it
        made = _made_by(node) if isinstance(node, ast.FunctionDef) else None
        if made is not None:                # a @triton.jit one: refused as importing refuses it
            return made
        if reader is not self or isinstance(node, ast.FunctionDef):
            raise NotLiteral(f"{_function(node)} at {reader.where(node)} is no "
                             "@triton.autotune(...) function its source shows")
        raise NotLiteral

    def read_there(self, node: ast.AST) -> Any:
        """:meth:`read` of ``node`` (the autotuner's ``configs=`` or ``key=``); where it is
        not read, the reason says where it is, which the declaration's own line, naming
        the function, does not show (the Triton tutorials' ``configs=get_configs()``)."""
        try:
            return self.read(node)
        except NotLiteral as err:
            raise NotLiteral(f"{err} at {self.where(node)}") from None


def _opened(module: str, modules: _Modules) -> _Reader | str | None:
    """A reader of ``module``'s source, found as :func:`module_file` finds it (as
    ``sweeper run``'s import finds it), named in messages by its path from the working
    folder; ``None`` where no file of it is found; why, where it cannot be read."""
    found = module_file(module)
    if found is None:
        return None
    relative = os.path.relpath(found)
    shown = found if relative.startswith("..") else relative
    try:
        text = Path(found).read_text(encoding="utf-8")
        tree = ast.parse(text, filename=found)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError,
            MemoryError) as err:
        return f"{shown}, which {module} is read from, cannot be read ({type(err).__name__})"
    return _Reader(Path(found), tree, text, module=module, modules=modules, file_shown=shown)


def _is_module(module: str) -> bool:
    """Whether importing ``module`` (``a.b``) finds it: a file of it, or a folder (a
    namespace package), where :func:`module_file` looks."""
    return module_file(module) is not None or any(
        os.path.isdir(os.path.join(base or os.curdir, *module.split(".")))
        for base in [os.getcwd(), *sys.path])


def _follow(name: str) -> str:
    """What to do for a binding of ``name`` to be followed."""
    return f"bind it at the module's top level (from MODULE import {name}) for plan to follow it"


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name``: an import, a definition or an assignment to it."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.partition(".")[0]) == name for a in node.names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)


#: ``sweeper.kernel``'s keywords that may be given a function (the rest are data).
CODE = frozenset({"inputs", "reference", "baseline", "refuse", "verify", "bytes_moved",
                  "flops"})


def _kernel_call(node: ast.AST | None) -> ast.Call | None:
    """The ``sweeper.kernel(...)`` call ``node`` is, called or not (``kernel(...)(f)``);
    ``None`` where it is none."""
    call = node.func if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) \
        else node
    return call if isinstance(call, ast.Call) and last_name(call.func) == "kernel" else None


class Unrun:
    """A function of the user's module as its source shows it, never run: its name,
    signature (``None``: one only running it would tell) and where it is defined, for the
    checks of a declaration that look at a function without calling it."""

    __signature__: inspect.Signature | None = None

    def __init__(self, name: str, signature: inspect.Signature | None, file: Path,
                 line: int | None) -> None:
        self.__name__ = self.__qualname__ = name
        if signature is not None:
            self.__signature__ = signature
        self.__code__ = None if line is None else \
            SimpleNamespace(co_filename=str(file), co_firstlineno=line)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__name__} was read from its source, never to be run")


class _Shown:
    """A default or annotation in a signature, shown as its source writes it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


#: The values of ``TRITON_INTERPRET`` under which ``triton.jit`` makes an
#: ``InterpretedFunction`` (Triton reads them without regard to case).
INTERPRETS = ("1", "true", "on", "yes", "y")


def _made_by(node: ast.FunctionDef) -> Any:
    """A stand-in of the kind of object running ``def`` ``node`` binds its name to, where
    its source tells, for a declaration to refuse by its type's name as it refuses the
    object itself: a function where nothing decorates it; ``triton.jit``'s
    ``JITFunction`` (under Triton's interpreter, ``TRITON_INTERPRET``, set for ``plan`` as
    for ``run`` by the device, its ``InterpretedFunction``) or ``triton.heuristics``'s
    ``Heuristics``, as its outermost decorator is; ``None`` where another decorator
    makes what only running it tells."""
    interprets = os.environ.get("TRITON_INTERPRET", "").lower() in INTERPRETS
    kinds = {"jit": "InterpretedFunction" if interprets else "JITFunction",
             "heuristics": "Heuristics"}
    outer = node.decorator_list[0] if node.decorator_list else None
    kind = "function" if outer is None else \
        kinds.get(last_name(outer.func if isinstance(outer, ast.Call) else outer) or "")
    return None if kind is None else type(kind, (), {})()


def _function(node: ast.AST) -> str:
    """The name of the function an autotune decorates (``def f``, ``autotune(...)(f)``)."""
    if isinstance(node, ast.FunctionDef):
        return node.name
    args = getattr(node, "args", None)
    first = args[0] if isinstance(args, list) and args else None
    return first.id if isinstance(first, ast.Name) else "the jitted function"


def _assigned(stmt: ast.stmt) -> dict[str, ast.expr]:
    """Each name an assignment binds (``a = b = ...``, ``a: T = ...``) to its value."""
    if isinstance(stmt, ast.Assign):
        return {t.id: stmt.value for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
            stmt.value is not None:
        return {stmt.target.id: stmt.value}
    return {}


def _bind(target: ast.expr, item: Any) -> dict[str, Any]:
    """The names a comprehension's ``for`` target binds to ``item``: a name, or a tuple
    (or list) of targets unpacking a list or tuple of as many items."""
    if isinstance(target, ast.Name):
        return {target.id: item}
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (list, tuple)) and \
            len(item) == len(target.elts):
        return {k: v for t, x in zip(target.elts, item, strict=True)
                for k, v in _bind(t, x).items()}
    raise NotLiteral                                # a starred target, an attribute, a length


def _children(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotLiteral                                   # {**other}
        return [x for key, value in zip(node.keys, node.values, strict=True)
                if key is not None for x in (key, value)]
    return list(getattr(node, "elts", []))


def not_a_kernel(kind: str, fn: str = "the_function") -> str:
    """What to name instead of a ``kind`` of function named as a kernel (``autotune``: a
    ``@triton.autotune`` one, brought whole by ``from_autotune``; ``jit``: a
    ``@triton.jit`` one, launched by a ``@sweeper.kernel`` function; ``function``: a plain
    one, to decorate), as the refusal's tail; ``fn``: the function's name."""
    declare = "with @sweeper.kernel(inputs=..., outputs=...) (README: Your own kernel)"
    if kind == "autotune":
        return (f"; declare a launcher with @sweeper.kernel(..., autotuned={fn}) and name it "
                "in from_autotune: (or sweeper run --from-autotune), which runs its configs")
    if kind == "jit":
        return f"; write a function that launches it, decorate that {declare}, and name it"
    return f"; decorate it {declare}"


def _function_kind(node: ast.AST | None) -> str | None:
    """``autotune``, ``jit`` or ``function`` where ``node`` is a function that no
    decorator can have made a kernel: Triton's own decorators only, or none; ``None``
    where it is something else, or has a decorator of another's (which may return one)."""
    if not isinstance(node, ast.FunctionDef):
        return None
    names = {last_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
    if not names <= {"jit", "autotune", "heuristics"}:
        return None
    return "autotune" if "autotune" in names else "jit" if "jit" in names else \
        "function" if not names else None


def _all_of(value: Any, kind: type) -> bool:
    return isinstance(value, Mapping) and all(isinstance(v, kind) for v in value.values())
