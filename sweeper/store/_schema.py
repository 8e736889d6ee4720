"""What a journal record and a ``study.json`` must hold, checked where they are read, and
how a checked record becomes its typed object and is written back.

A record type is a dataclass; its field annotations are the schema (a field without a
default is required), and an optional ``invariants(data)`` static method adds what its
readers index without looking (an ``ok`` trial's median, a final's winner among its
finalists).  A record that passes is safe for every reader: none of them needs a guard.

An annotation also says how the field's JSON becomes a typed value (:func:`load`) and
back (:func:`dump`): plain JSON types stay as they are, an enum is kept by its value, a
nested dataclass as an object of its fields (checked the same way), and the value types
of :data:`CODECS` (a ``Config``, ``Stats``, flags, stop reasons, registered by ``_codec``) in
the form that codec gives them.  The typed objects are built once, when a record is read.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

#: The format records and study files are written in, each as its ``format`` field; how
#: older ones are read is :mod:`sweeper.store._upgrade`, the one place that knows them.
FORMAT = 2

#: Every kind of journal record, as ``module:Class`` (loaded when first needed); a new kind
#: of record is added here, or it is set aside as unknown when read.
KINDS = {
    "trial": "sweeper.store._records:TrialRecord",
    "baseline": "sweeper.store._records:BaselineRecord",
    "final": "sweeper.finals:FinalRecord",
    "drift": "sweeper.store._records:DriftRecord",
    "duty": "sweeper.store._records:DutyRecord",
}

def record_problem(data: Any) -> str | None:
    """Why ``data`` (a parsed JSON line) is not a journal record, or ``None`` if it is."""
    if not isinstance(data, dict):
        return f"a JSON {json_type(data)}, not a record (an object with a kind)"
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        got = "no kind" if "kind" not in data else f"unknown kind {show(kind)}"
        return f"{got}; a record's kind is one of {', '.join(sorted(KINDS))}"
    cls = record_class(kind)
    problem = fields_problem(cls, data)
    if problem is None and hasattr(cls, "invariants"):
        problem = cls.invariants(data)
    return None if problem is None else f"{kind} record: {problem}"


def format_problem(data: Mapping[str, Any], what: str) -> str | None:
    """Why ``data``'s ``format`` (1 where it has none) is not one this sweeper reads
    (``what``: records, study files), or ``None``."""
    version = data.get("format", 1)
    if type(version) is not int or version < 1:
        return f"format {show(version)} is not a format number (a whole number >= 1)"
    if version > FORMAT:
        return (f"written in format {version} by a newer sweeper; this one reads {what} "
                f"of formats 1 to {FORMAT}: upgrade sweeper")
    return None


@functools.cache
def record_class(kind: str) -> Any:
    """The record type of ``kind`` (a key of :data:`KINDS`), imported when first asked for,
    so reading a journal imports only the record types it holds."""
    module, _, name = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def fields_problem(cls: Any, data: Mapping[str, Any]) -> str | None:
    """The first way ``data`` does not fill dataclass ``cls``'s fields, or ``None``."""
    missing = [name for name in _required(cls) if name not in data]
    if missing:
        return f"no {', '.join(missing)}"
    return values_problem(data, _hints(cls))


def values_problem(data: Mapping[str, Any], types_: Mapping[str, Any]) -> str | None:
    """The first value of ``data`` that is not of its type in ``types_`` (others are free)."""
    for key, hint in types_.items():
        if key in data:
            problem = _checker(hint)(data[key], key)
            if problem is not None:
                return problem
    return None


@functools.cache
def _required(cls: Any) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` without a default, which a record must hold."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
                 and f.default_factory is dataclasses.MISSING)


@functools.cache
def _checker(hint: Any) -> Callable[[Any, str], str | None]:
    """Why a JSON value does not fit ``hint``, naming it as the key given, or ``None``.
    A value kept in a form of its own (a codec's, a nested dataclass's, an item of a list
    or an ``X | None`` of them) is told about by that form; any other by its whole value
    and the type wanted.  Worked out once per type: a journal of 10⁵ records checks the
    same few dozen types millions of times."""
    codec = codec_for(hint)
    if codec is not None:
        problem: Callable[[Any, str], str | None] = codec.problem
        return problem
    if _structured(hint):
        return functools.partial(_object_problem, hint)
    origin, args = _form(hint)
    arms = [arm for arm in args if arm is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(arms) == 1 and _structured(arms[0]):
        arm = _checker(arms[0])
        return lambda value, key: None if value is None else arm(value, key)
    if origin is list and _structured(args[0]):
        return functools.partial(_items_problem, _checker(args[0]), type_name(hint))
    fits = _fits(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        allowed = ", ".join(str(m.value) for m in hint)
        return lambda value, key: None if fits(value) else \
            f"{key} {show(value)} is not one of {allowed}"
    wanted = type_name(hint)
    return lambda value, key: None if fits(value) else f"{key} is {show(value)}, not {wanted}"


def _object_problem(cls: Any, value: Any, key: str) -> str | None:
    """Why ``value`` (the JSON of ``key``) is not an object that fills dataclass ``cls``."""
    if not isinstance(value, dict):
        return f"{key} is {show(value)}, not an object"
    problem = fields_problem(cls, value)
    return None if problem is None else f"{key}: {problem}"


def _items_problem(item: Callable[[Any, str], str | None], wanted: str, value: Any,
                   key: str) -> str | None:
    """Why ``value`` (the JSON of ``key``) is not a list whose every item passes ``item``."""
    if not isinstance(value, list):
        return f"{key} is {show(value)}, not {wanted}"
    for i, v in enumerate(value):
        problem = item(v, f"{key}[{i}]")
        if problem is not None:
            return problem
    return None


@functools.cache
def _fits(hint: Any) -> Callable[[Any], bool]:
    """A test that a JSON value fits a type annotation (``int``, ``list[float]``, ``X |
    None``, an enum of string values, a dataclass, a type with a codec, ``Any``...);
    JSON integers fit ``float``."""
    origin, args = _form(hint)
    tests = [_fits(arg) for arg in args]
    if hint is Any:
        return lambda value: True
    if hint is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is type(None):
        return lambda value: value is None
    if origin in (typing.Union, types.UnionType):
        return lambda value: any(test(value) for test in tests)
    if origin is list:
        return lambda value: isinstance(value, list) and all(map(tests[0], value))
    if origin is dict:
        return lambda value: isinstance(value, dict) and all(map(tests[1], value.values()))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = _values(hint)
        return lambda value: value in values
    if _structured(hint):
        check = _checker(hint)
        return lambda value: check(value, "") is None
    return lambda value: isinstance(value, hint)


def load(hint: Any, value: Any) -> Any:
    """The typed value of a checked JSON ``value`` of type ``hint``."""
    if hint in (float, int, str, bool, Any):
        return value
    codec = codec_for(hint)
    if codec is not None:
        return codec.load(value)
    origin, args = _form(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        arms = [a for a in args if a is not type(None)]
        if len(arms) > 1:               # the arm the value fits; ``X | None`` has one
            arms = [next((a for a in arms if _fits(a)(value)), Any)]
        return load(arms[0], value)
    if origin is list:
        return list(value) if args[0] in (float, int, str) else [load(args[0], v) for v in value]
    if origin is dict:
        return {k: load(args[1], v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint):
        return load_fields(hint, value)
    return value


def load_fields(cls: Any, data: Mapping[str, Any]) -> Any:
    """Dataclass ``cls`` from a checked JSON object; keys it has no field for are left."""
    hints = _hints(cls)
    return cls(**{f.name: load(hints[f.name], data[f.name])
                  for f in dataclasses.fields(cls) if f.init and f.name in data})


def dump(value: Any) -> Any:
    """The JSON form of a typed value: what :func:`load` reads back as the same value."""
    kind: Any = type(value)
    if kind in _SCALARS:
        return value
    codec = CODECS.get(kind)
    if codec is not None:
        return codec.dump(value)
    if isinstance(value, enum.Enum):
        return value.value
    names = _field_names(kind)
    if names is not None:
        return {name: dump(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value


#: JSON values written as they are.
_SCALARS = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _field_names(kind: Any) -> tuple[str, ...] | None:
    """The field names of dataclass ``kind``, else ``None``: a journal of 10⁵ records
    asks for them for every record and every nested value."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind))


#: The codec of each value type records keep in a form of its own (a ``Config``,
#: ``Stats``, flags, stop reasons, a problem's key), by type: registered by
#: :mod:`sweeper.store._codec`, which the record types import for the values they hold
#: (the codecs check their values with this module, so this one cannot import them).
CODECS: dict[type, Any] = {}


def register_codecs(codecs: Mapping[type, Any]) -> None:
    """Add ``codecs`` to :data:`CODECS`; what was worked out without them is forgotten."""
    CODECS.update(codecs)
    for cached in (_structured, _checker, _fits):
        cached.cache_clear()


def codec_for(hint: Any) -> Any:
    """The codec of a value type records keep in a form of its own, else ``None``."""
    return CODECS.get(hint) if isinstance(hint, type) else None


@functools.cache
def _structured(hint: Any) -> bool:
    """Kept as a JSON object checked field by field, or by a codec."""
    return codec_for(hint) is not None or (isinstance(hint, type) and
                                           dataclasses.is_dataclass(hint))


def type_name(hint: Any) -> str:
    """An annotation as a reader of an error message would write it: ``int``,
    ``list[float]``, ``str | None``."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    origin, args = _form(hint)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(map(type_name, args))}]"
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def stats_problem(stats: Any, owner: str, keys: tuple[str, ...] = ()) -> str | None:
    """What is wrong with a statistics dict whose readers index its median (a number
    above 0) and ``keys`` (numbers)."""
    number = _fits(float)
    median: Any = stats.get("median") if isinstance(stats, dict) else None
    if not (number(median) and median > 0):
        return f"{owner} has no median above 0"
    missing = [k for k in keys if not number(stats.get(k))]
    return f"{owner} has no {', '.join(missing)} number" if missing else None


#: A JSON escape of a UTF-16 surrogate: where a text may hold a lone one.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The control characters (C0, DEL, C1): no label of a space holds one.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def surrogate_problem(value: Any, where: str = "") -> str | None:
    """Where a text in ``value`` (a parsed JSON value; keys too) holds a lone surrogate,
    which no file, table or terminal can write: ``None`` if none does."""
    texts: list[tuple[str, Any]] = [(where, value)]
    while texts:
        at, item = texts.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return f"{at} {show(item)} holds a lone surrogate, not a character".lstrip()
        elif isinstance(item, dict):
            for key, v in item.items():
                inner = f"{at}: {key}" if at else str(key)
                if _SURROGATE.search(key):
                    return f"{at or 'a key'} {show(key)} holds a lone surrogate, not a character"
                texts.append((inner, v))
        elif isinstance(item, list):
            texts.extend((f"{at}[{i}]", v) for i, v in enumerate(item))
    return None


def samples_problem(data: Mapping[str, Any], owner: str = "") -> str | None:
    """What is wrong with the samples a record keeps beside their statistics: each a
    time (a finite number >= 0 ms), and as many as the statistics count when both are
    kept (a journal written by hand may leave either out)."""
    samples = data.get("samples_ms") or []
    for i, x in enumerate(samples):
        if not math.isfinite(x) or x < 0:
            return f"{owner}samples_ms[{i}] {show(x)} is not a time (a finite number >= 0 ms)"
    stats = data.get("stats")
    count = stats.get("n") if isinstance(stats, dict) else None
    if samples and count is not None and count == count and count != len(samples):
        return f"{owner}stats: n is {show(count)}, but samples_ms holds {len(samples)} samples"
    return None


@functools.cache
def _form(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """``hint``'s origin and arguments, worked out once: a journal of 10⁵ records asks
    for them millions of times."""
    return typing.get_origin(hint), typing.get_args(hint)


@functools.cache
def _values(hint: type[enum.Enum]) -> tuple[Any, ...]:
    """The values of enum ``hint``'s members, listed once."""
    return tuple(m.value for m in hint)


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def json_type(value: Any) -> str:
    """A JSON value's type as JSON names it: object, array, string, number..."""
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null", dict: "object"}.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """``value`` as an error message quotes it: its repr, cut to 40 characters so one
    hostile value cannot flood a warning."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Record:
    """A journal record: written as the JSON of its fields (:func:`dump`), read back by
    the same annotations (:func:`load_fields`) once :func:`record_problem` passed it."""

    def to_json(self) -> dict[str, Any]:
        """The record as its journal line's JSON object (:func:`dump` of its fields)."""
        out: dict[str, Any] = dump(self)
        out["format"] = FORMAT
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The typed record from a JSON object that :func:`record_problem` passed."""
        out: Self = load_fields(cls, data)
        return out
