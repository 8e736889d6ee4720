"""The code a kernel defined in ``__main__`` (a notebook's cells, a script) runs: what
identifies its version in a study.

A kernel in a module of its own is identified by that module's text (and its own modules'),
but ``__main__`` is no such module.  A notebook has no file, so the text of the functions
the declaration names alone would leave out the ``@triton.jit`` function its launch calls:
an edit of that cell and a run again resumed the study as if nothing had changed, its old
timings and winners returned for a kernel that no longer runs.  A script's file holds the
sweep's own call and the analysis after it, which run nothing of the kernel: hashed
whole, an edit of ``trials=`` or of a plot refused the resume as a changed kernel (and
past ``force=True`` measured every config again), and saving the file while the sweep ran
stopped it.

So a kernel defined there is identified by what it reaches: starting from its launch and
the functions its declaration names, each function's code (its bytecode, names and
constants: no comment, blank line or line number, the same in a new process of the same
Python), and through the names that code reads, each function, ``@triton.jit`` function
(its Python function), class and value of ``__main__`` it reaches, each once; a value by
what it is (a number, text, a ``tl.constexpr``, a tuple of them; anything else by its
type, as its text may name an address).  A function, class or module of the user's own
project it reaches (a ``helpers.py`` beside the notebook) is that module's text; the
standard library's, an installed package's, sweeper's, triton's and torch's are named by
their versions in a study's fingerprint, not here."""

from __future__ import annotations

import enum
import functools
import re
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

from sweeper.kernels._own_modules import installed, source_of, theirs

#: A memory address in a repr (``<function ref at 0x7f...>``): another in every process.
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
#: A class's attributes that say nothing of what it runs.
_UNSHOWN = frozenset({"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__"})
#: Values shown as they are: their repr is the same in every process.
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def reached_source(roots: Iterable[Any], main: str = "__main__") -> str:
    """The text that identifies the code ``roots`` (functions, Triton functions, classes)
    reach within module ``main`` (:mod:`this module <sweeper.kernels._reached>`), followed
    by the text of each of the user's own modules reached from there."""
    parts, modules = _reach(roots, main)
    return "\n".join(parts) + source_of(list(modules.items()))


def reached_modules(roots: Iterable[Any], main: str) -> list[tuple[str, Path]]:
    """The user's own modules (name, file) other than ``main`` whose functions, Triton
    functions or classes the code ``roots`` reach within ``main`` uses: a launch's
    ``@triton.jit`` function given it from another module (through a closure too),
    which its module's imports may not name."""
    return list(_reach(roots, main)[1].items())


def _reach(roots: Iterable[Any], main: str) -> tuple[list[str], dict[str, Path]]:
    """The text of what ``roots`` reach within ``main`` (:func:`reached_source`), and the
    user's own modules reached from there, each once, in the order reached."""
    parts: list[str] = []
    modules: dict[str, Path] = {}
    seen: set[int] = set()
    todo: deque[tuple[str, Any]] = deque(("", root) for root in roots)
    while todo:
        name, value = todo.popleft()
        value = _unwrapped(value)
        if id(value) in seen:
            continue
        seen.add(id(value))
        own = _own_module(value, main)
        if own is not None:
            modules.setdefault(*own)
        elif isinstance(value, (FunctionType, type)) and value.__module__ == main:
            parts.append(f"# {name or value.__qualname__}")
            todo.extend(_follow(value, parts))
        elif isinstance(value, functools.partial):
            todo.extend((name, v) for v in (value.func, *value.args, *value.keywords.values()))
        elif type(value).__module__ == main:        # an instance of a class defined there
            parts.append(f"{name} = <{type(value).__qualname__}>")
            todo.extend((f"{name}.{k}", v) for k, v in [("__class__", type(value)),
                                                         *getattr(value, "__dict__", {}).items()])
        elif name and not _library(value):
            parts.append(f"{name} = {shown(value)}")
            if isinstance(value, (tuple, list, set, frozenset, dict)):  # functions held
                held = value.values() if isinstance(value, dict) else value
                todo.extend((f"{name}[]", v) for v in held if callable(v))
    return parts, modules


def shown(value: Any) -> str:
    """``value`` as text that is the same in every process: numbers, text and enum
    members (a ``torch.dtype``, a ``tl.constexpr``'s value) as they are, containers of
    them alike (a set sorted), anything else by its type."""
    if isinstance(value, (*_PLAIN, enum.Enum)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(shown(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(shown(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{shown(k)}: {shown(v)}" for k, v in value.items()) + "}"
    kind = type(value)
    if kind.__name__ == "constexpr" and hasattr(value, "value"):    # triton's tl.constexpr
        return f"constexpr({shown(value.value)})"
    if kind.__module__ == "torch" and kind.__name__ == "dtype":
        return repr(value)
    return f"<{kind.__module__}.{kind.__qualname__}>"


def code_text(code: CodeType) -> str:
    """What ``code`` runs, without its lines or file: its name, arguments, names read,
    bytecode and constants (a nested function's or comprehension's code as its own)."""
    head = [code.co_name, str(code.co_argcount), str(code.co_kwonlyargcount),
            str(code.co_flags), " ".join(code.co_varnames), " ".join(code.co_names),
            " ".join(code.co_freevars), code.co_code.hex()]
    return "\n".join(head + [code_text(c) if isinstance(c, CodeType) else _constant(c)
                             for c in code.co_consts])


def _constant(value: Any) -> str:
    """A code object's constant as text the same in every process (a frozenset, as
    ``x in {"a", "b"}`` compiles, in sorted order)."""
    if isinstance(value, frozenset):
        return "frozenset(" + ", ".join(sorted(_constant(v) for v in value)) + ")"
    if isinstance(value, tuple):
        return "(" + ", ".join(_constant(v) for v in value) + ",)"
    return ADDRESS.sub("", repr(value))


def _follow(value: FunctionType | type, parts: list[str]) -> Iterator[tuple[str, Any]]:
    """Add ``value``'s own text to ``parts``; yield the names its code reads and the
    values they hold (a class: its bases and attributes, each by its name)."""
    if isinstance(value, type):
        parts.append(" ".join(b.__qualname__ for b in value.__bases__))
        for attr, held in vars(value).items():
            if attr not in _UNSHOWN:
                yield attr, held
        for base in value.__bases__:
            yield "", base
        return
    code = value.__code__
    parts.append(code_text(code))
    parts.append(shown(value.__defaults__) + shown(value.__kwdefaults__)
                 + shown({k: _annotation(v) for k, v in value.__annotations__.items()}))
    scope = value.__globals__
    for name in _names(code):
        if name in scope:
            yield name, scope[name]
    for name, cell in zip(code.co_freevars, value.__closure__ or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:              # a cell not filled yet
            continue


def _annotation(value: Any) -> str:
    """An annotation as text (``BLOCK: tl.constexpr`` decides how Triton compiles)."""
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return shown(value)


def _names(code: CodeType) -> list[str]:
    """The global names ``code`` and the code nested in it read, each once, in order."""
    names: dict[str, None] = dict.fromkeys(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names.update(dict.fromkeys(_names(const)))
    return list(names)


def _unwrapped(value: Any) -> Any:
    """The Python function behind ``value``: a Triton function's (``@triton.jit``, the
    interpreter's, an autotuned or heuristic one), a bound method's."""
    for _ in range(8):
        if isinstance(value, (MethodType, staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, property) and value.fget is not None:
            value = value.fget
        elif any(c.__name__ == "KernelInterface" for c in type(value).__mro__) and \
                hasattr(value, "fn"):
            value = value.fn
        else:
            break
    return value


def _own_module(value: Any, main: str) -> tuple[str, Path] | None:
    """The user's own module (name, file) that ``value`` is, or defines it, where it is
    neither ``main`` nor a library's (:func:`_library`); else ``None``."""
    module = value if isinstance(value, ModuleType) else \
        sys.modules.get(getattr(value, "__module__", None) or "") \
        if isinstance(value, (FunctionType, type)) else None
    if module is None or module.__name__ == main or theirs(module.__name__):
        return None
    file = getattr(module, "__file__", None)
    if not file or not str(file).endswith(".py"):
        return None
    path = Path(file).resolve()
    return None if installed(path) else (module.__name__, path)


def _library(value: Any) -> bool:
    """Whether ``value`` is a module, function or class of no module of the user's (a
    library's: its version is the study's fingerprint's), or a builtin."""
    if isinstance(value, (ModuleType, FunctionType, type)):
        return True
    return callable(value) and not isinstance(value, _PLAIN)


__all__ = ["ADDRESS", "code_text", "reached_source", "shown"]
