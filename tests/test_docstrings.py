"""Every public definition in sweeper/ says, in a docstring, what it promises and why.

A public definition is a module-level class or function whose name does not start with
``_`` (private modules included: their names are re-exported), and each public method and
property of a public class, nested classes too.  Local functions and names starting with
``_`` (dunders included) are not.  Enum members, dataclass fields and class attributes are
data, not definitions: the class docstring or a ``#:`` comment says what they mean.

A definition whose contract is written elsewhere needs no docstring of its own:

- a method that overrides one its class inherits, when that one has a docstring.  Bases
  are resolved by name through the module's imports: a class in sweeper/ by its name
  (the one in the imported module when several share it), searched up through its own
  bases; any other (Optuna's ``BaseSampler``, ``argparse.ArgumentParser``, ``str``) is
  imported and its method's or property's ``__doc__`` read (a plain class attribute's
  ``__doc__`` is its type's, so it does not count).  An undocumented override of an
  undocumented method does not count: the search goes on up, and fails at the top.
- a method of a class that implements a ``typing.Protocol`` of sweeper/ without naming
  it as a base: the class defines every method of the protocol with the same parameter
  names (as a type checker would match it), and the protocol's stub has a docstring.
- a property's setter or deleter (the getter documents the property), and an
  ``@overload`` stub (the implementation documents the function).

``EXEMPT`` lists the paths left out, each with its reason; a test fails on an entry under
which nothing is found any more, so a stale one is dropped.  A sample tree checks each
rule of the checker itself.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Paths (a folder ends with ``/``) left out of the check, each with the reason.
EXEMPT: tuple[str, ...] = ()
#: What a protocol's base resolves to.
PROTOCOL = ("typing.Protocol", "typing_extensions.Protocol")


@dataclass(frozen=True)
class ClassInfo:
    """A class of sweeper/ as the walk sees it: where it is, and the names its module
    imported (alias -> dotted target), against which its bases resolve."""

    module: str
    node: ast.ClassDef
    imports: dict[str, str]


def module_name(rel: str) -> str:
    """``sweeper/store/_journal.py`` -> ``sweeper.store._journal``."""
    parts = rel.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(tree: ast.Module, module: str) -> dict[str, str]:
    """Alias -> dotted target of every import in ``tree``, relative ones resolved."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    found[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[:len(module.split(".")) - node.level]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def body_nodes(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body``, those inside ``if``/``try``/``with`` blocks included."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                inner.extend(handler.body)
            out.extend(body_nodes(inner))
        else:
            out.append(node)
    return out


def methods_of(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Name -> definition of each method defined in the class body itself."""
    return {child.name: child for child in body_nodes(node.body)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))}


def params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """A method's parameter names after ``self``, as a type checker matches them."""
    args = node.args
    names = [a.arg for a in [*args.posonlyargs, *args.args]][1:]
    return tuple(names + [a.arg for a in args.kwonlyargs])


def decorated_as(node: ast.FunctionDef | ast.AsyncFunctionDef, *names: str) -> bool:
    """Whether a decorator of ``node`` ends with one of ``names`` (``x.setter``)."""
    return any(ast.unparse(d).split(".")[-1] in names for d in node.decorator_list)


def external_doc(owner: Any, name: str) -> bool:
    """Whether class ``owner`` (from outside sweeper/) has a documented method or property
    ``name``.  A plain value is not a method: its ``__doc__`` is its type's."""
    if owner is None:
        return False
    raw = inspect.getattr_static(owner, name, None)
    if not (inspect.isroutine(raw) or inspect.isdatadescriptor(raw)):
        return False
    return bool((getattr(raw, "__doc__", None) or "").strip())


class Tree:
    """Every class of a source tree's sweeper/, indexed by name, and how to resolve their
    bases, documented ancestors and protocols."""

    def __init__(self, root: Path) -> None:
        self.classes: dict[str, list[ClassInfo]] = {}
        self.modules: list[tuple[str, ast.Module]] = []
        self.defined: dict[str, set[str]] = {}     # module -> its module-level class names
        for path in sorted((root / "sweeper").rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(), filename=rel)
            self.modules.append((rel, tree))
            module = module_name(rel)
            imports = imports_of(tree, module)
            self.defined[module] = {n.name for n in body_nodes(tree.body)
                                    if isinstance(n, ast.ClassDef)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, []).append(
                        ClassInfo(module, node, imports))
        self.protocols = [c for infos in self.classes.values() for c in infos
                          if any(self.target(c, b) in PROTOCOL for b in c.node.bases)]

    def target(self, cls: ClassInfo, base: ast.expr) -> str:
        """The dotted name a base expression stands for (``Generic[T]`` -> its origin)."""
        if isinstance(base, ast.Subscript):
            base = base.value
        first, _, rest = ast.unparse(base).partition(".")
        if first in cls.imports:
            return cls.imports[first] + (f".{rest}" if rest else "")
        if first in self.defined[cls.module] and not rest:
            return f"{cls.module}.{first}"
        return f"builtins.{first}" + (f".{rest}" if rest else "")

    def internal(self, cls: ClassInfo, base: ast.expr) -> ClassInfo | None:
        """The class of sweeper/ a base names; ``None`` for any other base."""
        dotted = self.target(cls, base)
        if dotted.split(".")[0] != "sweeper":
            return None
        module, _, name = dotted.rpartition(".")
        candidates = self.classes.get(name, [])
        exact = [c for c in candidates if c.module == module]
        within = [c for c in candidates if c.module.startswith(f"{module}.")]
        for found in (exact, within, candidates):
            if len(found) == 1:
                return found[0]
        return None

    def external(self, cls: ClassInfo, base: ast.expr) -> Any:
        """The class object of a base from outside sweeper/, imported; ``None`` if it is
        in sweeper/ or cannot be imported."""
        dotted = self.target(cls, base)
        if dotted.split(".")[0] == "sweeper":
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for part in parts[cut:]:
                obj = getattr(obj, part, None)
            return obj
        return None

    def inherits_doc(self, cls: ClassInfo, name: str, seen: frozenset[int] = frozenset()
                     ) -> bool:
        """Whether a base of ``cls``, or a base of a base, documents method ``name``."""
        for base in cls.node.bases:
            parent = self.internal(cls, base)
            if parent is not None:
                if id(parent.node) in seen:
                    continue
                method = methods_of(parent.node).get(name)
                if method is not None and ast.get_docstring(method):
                    return True
                if self.inherits_doc(parent, name, seen | {id(parent.node)}):
                    return True
            elif external_doc(self.external(cls, base), name):
                return True
        return False

    def all_methods(self, cls: ClassInfo) -> dict[str, tuple[str, ...]]:
        """Name -> parameter names of each method ``cls`` has, its sweeper bases' too."""
        found: dict[str, tuple[str, ...]] = {}
        for base in reversed(cls.node.bases):
            parent = self.internal(cls, base)
            if parent is not None and parent is not cls:
                found.update(self.all_methods(parent))
        found.update({n: params(m) for n, m in methods_of(cls.node).items()})
        return found

    def protocol_doc(self, cls: ClassInfo, name: str) -> bool:
        """Whether ``cls`` implements a protocol of sweeper/ whose stub of ``name`` is
        documented."""
        if any(cls is protocol for protocol in self.protocols):
            return False
        have = self.all_methods(cls)
        for protocol in self.protocols:
            stubs = methods_of(protocol.node)
            if name in stubs and ast.get_docstring(stubs[name]) and all(
                    have.get(n) == params(m) for n, m in stubs.items()):
                return True
        return False


def undocumented(root: Path) -> list[str]:
    """``file:line: name has no docstring`` for each public definition under
    ``root/sweeper`` that needs a docstring and lacks one."""
    tree = Tree(root)
    found: list[str] = []

    def visit(rel: str, body: list[ast.stmt], cls: ClassInfo | None, prefix: str) -> None:
        for node in body_nodes(body):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node.name.startswith("_") or _documented_elsewhere(tree, cls, node):
                continue
            if not ast.get_docstring(node):
                found.append(f"{rel}:{node.lineno}: {prefix}{node.name} has no docstring")
            if isinstance(node, ast.ClassDef):
                info = next(c for c in tree.classes[node.name] if c.node is node)
                visit(rel, node.body, info, f"{prefix}{node.name}.")

    for rel, module in tree.modules:
        visit(rel, module.body, None, "")
    return found


def exempt(line: str, paths: tuple[str, ...] = EXEMPT) -> bool:
    """Whether a finding of :func:`undocumented` lies under one of the exempt ``paths``."""
    rel = line.split(":", 1)[0]
    return any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in paths)


@functools.cache
def in_repo() -> tuple[str, ...]:
    """The findings for this checkout, exempt paths included (both tests read them)."""
    return tuple(undocumented(ROOT))


def _documented_elsewhere(tree: Tree, cls: ClassInfo | None, node: ast.stmt) -> bool:
    """Whether ``node``, a definition in ``cls`` (``None``: at module level), takes its
    contract from somewhere else (the module docstring lists where)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if decorated_as(node, "overload", "setter", "deleter"):
        return True
    return cls is not None and (tree.inherits_doc(cls, node.name)
                                or tree.protocol_doc(cls, node.name))


def test_every_public_definition_has_a_docstring():
    found = [line for line in in_repo() if not exempt(line)]
    assert not found, ("public definitions without a docstring (say what each promises "
                       "and why):\n" + "\n".join(found))


def test_each_exempt_path_still_needs_its_exemption():
    stale = [e for e in EXEMPT if not any(exempt(line, (e,)) for line in in_repo())]
    assert not stale, f"documented now (or gone), drop from EXEMPT: {stale}"


#: A small sweeper/ with one case of each rule; the comments say what the checker finds.
SAMPLE = {
    "sweeper/__init__.py": "",
    "sweeper/base.py": '''
import argparse
import json
from typing import Protocol, overload


class Base:
    """Documented."""

    def run(self) -> None:
        """Documented."""

    def bare(self) -> None:  # found
        pass


class Shape(Protocol):
    """Documented."""

    def area(self, scale: float) -> float:
        """Documented."""


def naked() -> None:  # found
    pass


def _private() -> None:
    pass


@overload
def one(x: int) -> int: ...
def one(x):
    """Documented."""
    return x
''',
    "sweeper/sub/_impl.py": '''
import argparse
import json

from sweeper.base import Base


class Child(Base):
    """Documented."""

    def run(self) -> None:  # its base documents it
        pass

    def bare(self) -> None:  # found: its base does not document it either
        pass

    @property
    def size(self) -> int:  # found
        return 1

    @size.setter
    def size(self, value: int) -> None:
        pass

    def _helper(self) -> None:
        pass

    class Inner:  # found
        def go(self) -> None:  # found
            pass


class Square:
    """Implements Shape without naming it."""

    def area(self, scale: float) -> float:
        return scale


class Skewed:
    """Has Shape's method with other parameter names: not an implementation."""

    def area(self, factor: float) -> float:  # found
        return factor


class Parser(argparse.ArgumentParser):
    """Documented."""

    def error(self, message):  # argparse documents it
        raise SystemExit(message)

    def label(self):  # found
        return ""


class Encoder(json.JSONEncoder):
    """JSONEncoder.item_separator is a string, not a documented method."""

    def item_separator(self):  # found
        return ","


class _Hidden:
    def shown(self) -> None:
        pass
''',
}


def test_the_checker_finds_each_undocumented_definition_and_no_other(tmp_path):
    for rel, text in SAMPLE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text.lstrip())
    found = undocumented(tmp_path)
    expected = [f"sweeper/{rel}:{n}: {name} has no docstring" for rel, n, name in (
        ("base.py", 12, "Base.bare"),
        ("base.py", 23, "naked"),
        ("sub/_impl.py", 13, "Child.bare"),
        ("sub/_impl.py", 17, "Child.size"),
        ("sub/_impl.py", 27, "Child.Inner"),
        ("sub/_impl.py", 28, "Child.Inner.go"),
        ("sub/_impl.py", 42, "Skewed.area"),
        ("sub/_impl.py", 52, "Parser.label"),
        ("sub/_impl.py", 59, "Encoder.item_separator"),
    )]
    assert found == expected
    assert [line for line in found if not exempt(line, ("sweeper/sub/",))] == expected[:2]
    assert [line for line in found if not exempt(line, ("sweeper/base.py",))] == expected[2:]
