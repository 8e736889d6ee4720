"""The Python API's arguments, checked by type before anything is read or written.

The command's parser only ever hands the engine text, so a value the command cannot be
given (``device=None``, ``storage=5``, ``force="no"``) would otherwise reach code that
assumes text and fail there with a raw ``AttributeError`` or ``TypeError``, or, worse,
pass silently (``"no"`` is true).  Each check here refuses it with the one line the API
gives for bad input: the keyword, the value, what is allowed (a
:class:`~sweeper.errors.SweeperError`).  What a value means is checked after, by the
parsers the command shares (:mod:`sweeper.options`)."""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeper.core._units import whole
from sweeper.errors import SweeperError
from sweeper.store._schema import show


def refuse(name: str, value: Any, allowed: str) -> SweeperError:
    """The error for keyword ``name`` given ``value``: ``name: VALUE is not ...; allowed``."""
    return SweeperError(f"{name}: {show(value)} is not {allowed}")


def flag(name: str, value: Any) -> bool:
    """A yes/no keyword: ``True`` or ``False`` only (``"no"`` or ``0`` would be read as
    the opposite of what was meant, or by accident)."""
    if not isinstance(value, bool):
        raise refuse(name, value, "True or False")
    return value


def folder(name: str, value: Any) -> str:
    """A path keyword: text or a :class:`~pathlib.Path`, as text, ``~`` expanded
    (:func:`home`)."""
    if not isinstance(value, (str, Path)):
        raise refuse(name, value, "a path; allowed: text or a Path")
    return home(value)


def home(path: str | Path) -> str:
    """``path`` with a leading ``~`` or ``~user`` as that home folder, as a shell expands
    the command's arguments: from Python nothing does, and ``studies_dir="~/studies"``
    made a folder named ``~`` in the working folder."""
    return os.path.expanduser(path)


def optional_text(name: str, value: Any, allowed: str) -> str | None:
    """A keyword that is ``None`` (left out) or text; ``allowed`` says which text."""
    if value is not None and not isinstance(value, str):
        raise refuse(name, value, allowed)
    return value


def plain(value: Any) -> Any:
    """``value`` with the numbers and arrays of numpy and torch as the Python numbers and
    lists they hold (``np.int64(64)`` -> ``64``, ``np.array([1, 2])`` and ``range(1, 3)``
    -> ``[1, 2]``), through dicts, lists and tuples: a space built in a notebook is
    commonly built with them, and YAML and JSON, which a space is read as, know only
    Python's own.  Anything else is left as it is, for the caller's check to refuse."""
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, range)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if (number := whole(value)) is not None:
        return number
    if isinstance(value, numbers.Real):
        return float(value)
    tolist = getattr(value, "tolist", None)        # an array, or numpy's bool
    return plain(tolist()) if callable(tolist) else value


def paths(name: str, value: Any) -> tuple[str, ...]:
    """Folders: one (text or a Path) or a list of them."""
    if isinstance(value, (str, Path)):
        return (home(value),)
    if not (isinstance(value, Sequence) and all(isinstance(p, (str, Path)) for p in value)):
        raise refuse(name, value, "a folder; allowed: a path, or a list of paths")
    return tuple(home(p) for p in value)


__all__ = ["flag", "folder", "home", "optional_text", "paths", "plain", "refuse"]
