"""What a journal record and a ``study.json`` must hold, checked where they are read, and
how a checked record becomes its typed object and is written back.

A record type is a dataclass; its field annotations are the schema (a field without a
default is required), and an optional ``invariants(data)`` static method adds what its
readers index without looking (an ``ok`` trial's median, a final's winner among its
finalists).  A record that passes is safe for every reader: none of them needs a guard.

msgspec checks and builds the typed record from its JSON in one pass (:func:`decode`),
and writes it back (:meth:`Record.to_json`): it is small, strict (a ``"9"`` is no
``int``, a ``true`` no number) and fast, with no dependencies of its own, where
pydantic's validation of dataclasses is a larger compiled dependency that is slower and
words its errors no closer to ours.  Plain JSON types, enums (by value), lists, dicts and
nested dataclasses are msgspec's own; the value types of :data:`LOADS` (a ``Config``,
``Stats``, flags, stop reasons, a problem's key, registered by ``_codec``) are read by
their own functions, in the form records keep them.  msgspec's errors are said in this
package's words by one translation (:func:`_said`): ``number is '9', not int``.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import importlib
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from sweeper.escape import cut

if TYPE_CHECKING:
    from typing_extensions import Self

#: The format records and study files are written in, each as its ``format`` field; how
#: older ones are read is :mod:`sweeper.store._upgrade`, the one place that knows them.
FORMAT = 2
#: The format of a trial record whose config is to be measured again (``retry``: its
#: worker process was killed from outside), the one record written in a format above
#: :data:`FORMAT`, and the newest format of records this sweeper reads (a later format
#: of every record is 4).  A sweeper older than ``retry`` reads such a trial as its
#: config's crash, and sets aside the trial that measured the config again as one
#: recorded twice: it would keep the kill and lose the measurement.  It reads records of
#: formats 1 to 2, so it sets this one aside instead, saying it was written by a newer
#: sweeper, and keeps the config's next trial; every other record stays readable by it.
RETRY_FORMAT = 3

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


def format_problem(data: Mapping[str, Any], what: str, newest: int = FORMAT) -> str | None:
    """Why ``data``'s ``format`` (1 where it has none) is not one this sweeper reads
    (``what``: records, study files; ``newest``: the newest it reads of them), or
    ``None``."""
    version = data.get("format", 1)
    if type(version) is not int or version < 1:
        return f"format {show(version)} is not a format number (a whole number >= 1)"
    if version > newest:
        return (f"written in format {version} by a newer sweeper; this one reads {what} "
                f"of formats 1 to {newest}: upgrade sweeper")
    return None


@functools.cache
def record_class(kind: str) -> Any:
    """The record type of ``kind`` (a key of :data:`KINDS`), imported when first asked for,
    so reading a journal imports only the record types it holds."""
    module, _, name = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def fields_invalid(cls: Any, data: Any) -> Invalid | None:
    """The first way ``data`` does not fill dataclass ``cls``'s fields (the first that
    msgspec meets, in ``data``'s order), with the keys of the entry it names
    (:attr:`Invalid.keys`), or ``None``."""
    try:
        decode(cls, data)
    except Invalid as err:
        return Invalid(str(err).strip(), err.keys)
    return None


def fields_problem(cls: Any, data: Any) -> str | None:
    """:func:`fields_invalid`'s reason, or ``None``."""
    invalid = fields_invalid(cls, data)
    return None if invalid is None else str(invalid)


class Invalid(ValueError):
    """Why a JSON value is not of a type, in this package's words: ``key is 5, not int``.
    A text that starts with a space says what is wrong with the value itself, and follows
    the name of the field that holds it; any other says what is wrong inside it, after the
    field's name and a colon (``config: dtype 'float8' is not one of ...``).  ``keys``:
    where in the JSON the field it names is (``("sampler", "seed")``, ``("top", 2)``;
    ``()`` for the value as a whole or where unknown), so a file's reader can give its
    line."""

    def __init__(self, message: str, keys: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.keys = keys


def decode(cls: Any, data: Any) -> Any:
    """Dataclass ``cls`` from the JSON value ``data`` (keys it has no field for are left,
    a field left out reads as its default, a JSON integer in a ``float`` field as a
    float), checked against its annotations by msgspec; :class:`Invalid` says how ``data``
    does not fit them."""
    try:
        found = msgspec.convert(data, _wire(cls), dec_hook=_hook)
    except msgspec.ValidationError as err:
        inner = err.__cause__.keys if isinstance(err.__cause__, Invalid) else ()
        raise Invalid(*_said(str(err), cls, data, inner)) from None
    return cls(**msgspec.structs.asdict(found))


@functools.cache
def _wire(cls: Any) -> Any:
    """What msgspec decodes dataclass ``cls`` as: a Struct of its fields and defaults,
    each a value type of :data:`LOADS` (or a dataclass holding one) replaced by its
    :func:`_marker`, which msgspec leaves to :func:`_hook`."""
    def default(f: dataclasses.Field[Any]) -> Any:
        given: dict[str, Any] = {"default": f.default, "default_factory": f.default_factory}
        return msgspec.field(**{k: v for k, v in given.items() if v is not dataclasses.MISSING})

    fields = [(f.name, _marked(_hints(cls)[f.name]), default(f))
              for f in dataclasses.fields(cls) if f.init]
    return msgspec.defstruct(cls.__name__, fields, kw_only=True)


@functools.cache
def _marked(hint: Any) -> Any:
    """``hint`` as msgspec is to decode it: a type of :data:`LOADS`, or a dataclass with
    a field of one, as its :func:`_marker`; every other type as it is."""
    args = typing.get_args(hint)
    if hint in LOADS or (_structured(hint) and any(
            _marked(h) is not h for h in _hints(hint).values())):
        return _marker(hint)
    if not args:
        return hint
    origin = typing.get_origin(hint)
    marked = tuple(map(_marked, args))
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, marked)
    return origin[marked]


@functools.cache
def _marker(typed: type) -> type:
    """A class msgspec does not know, so hands to :func:`_hook`, standing for ``typed``
    (whose instances it takes for its own: msgspec checks what the hook gives)."""
    marker: Any = abc.ABCMeta(typed.__name__, (), {"typed": typed})
    marker.register(typed)
    return typing.cast(type, marker)


def _hook(marker: Any, value: Any) -> Any:
    """The typed value of a :func:`_marker`'s JSON: by its :data:`LOADS` function, or a
    dataclass by :func:`decode` (msgspec names the field of an :class:`Invalid`)."""
    load = LOADS.get(marker.typed)
    return load(value) if load is not None else decode(marker.typed, value)


def _said(message: str, cls: Any, data: Any, inner: tuple[str | int, ...] = ()
          ) -> tuple[str, tuple[str | int, ...]]:
    """msgspec's ``message`` of why ``data`` is not a ``cls`` in this package's words: the
    field (``key``, ``list[i]``, ``outer: inner``), its value, what it should be; and the
    keys of that field in ``data`` (:attr:`Invalid.keys`), ``inner`` the keys inside it
    of a value read by :func:`_hook` whose :class:`Invalid` the message says.  A value
    inside a list or dict of plain values is told of by the whole list or dict; any text
    of msgspec's but a missing field and an enum's value (``Expected `int`, got
    `str```, ``Number out of range``) says the value is not of its field's type."""
    text, at, path = message.rpartition(" - at `$")
    text = text if at else message
    hint, value, key, whole = cls, data, "", True
    keys: list[str | int] = []
    for name, index in re.findall(r"\.(\w+)|\[(\d+|\.\.\.)\]", path if at else ""):
        arm, args = _arm(hint), typing.get_args(_arm(hint))
        if name and _structured(arm):
            hint, value, key = _hints(arm)[name], value[name], f"{key}: {name}" if key else name
            keys.append(name)
        elif index.isdigit() and typing.get_origin(arm) is list and _structured(args[0]):
            hint, value, key = args[0], value[int(index)], f"{key}[{index}]"
            keys.append(int(index))
        else:
            whole = False
            break
    if whole and text.startswith("Object missing required field"):
        missing = [f.name for f in msgspec.structs.fields(_wire(_arm(hint)))
                   if f.required and f.name not in value]
        return f"{key}{': ' if key else ''}no {', '.join(missing)}", tuple(keys)
    if whole and isinstance(hint, enum.EnumMeta):
        members: list[enum.Enum] = list(hint)
        return (f"{key} {show(value)} is not one of "
                f"{', '.join(str(m.value) for m in members)}", tuple(keys))
    if whole and not text[:1].isupper():        # an Invalid of ours, not msgspec's text
        return (key + text if text.startswith(" ") or not key else f"{key}: {text}",
                (*keys, *inner))
    wanted = "an object" if _structured(_arm(hint)) else type_name(hint)
    return f"{key} is {show(value)}, not {wanted}", tuple(keys)


def _arm(hint: Any) -> Any:
    """``X`` of ``X | None``; any other type as it is."""
    arms = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and len(arms) == 1
    return arms[0] if optional else hint


def _structured(hint: Any) -> bool:
    """Kept as a JSON object read field by field: a dataclass, or a type of :data:`LOADS`."""
    return hint in LOADS or dataclasses.is_dataclass(hint)


#: How a value type that records keep in a form of its own (a ``Config``, ``Stats``, flags,
#: stop reasons, a problem's key) is read from its JSON, raising :class:`Invalid`, and
#: how one is written (:data:`DUMPS`, where msgspec's form of the dataclass is not the
#: journal's); filled by :mod:`sweeper.store._codec`, which the record types import for
#: the values they hold (its forms are read with this module, which cannot import it).
LOADS: dict[Any, Callable[[Any], Any]] = {}
DUMPS: dict[type, Callable[[Any], Any]] = {}


def register_forms(loads: Mapping[type, Callable[[Any], Any]],
                   dumps: Mapping[type, Callable[[Any], Any]]) -> None:
    """Add to :data:`LOADS` and :data:`DUMPS`; what was worked out without them is
    forgotten."""
    LOADS.update(loads)
    DUMPS.update(dumps)
    for cached in (_wire, _marked):
        cached.cache_clear()


def type_name(hint: Any) -> str:
    """An annotation as a reader of an error message would write it: ``int``,
    ``list[float]``, ``str | None``."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(map(type_name, args))}]"
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def stats_problem(stats: Any, owner: str, keys: tuple[str, ...] = ()) -> str | None:
    """What is wrong with a statistics dict whose readers index its median (a number
    above 0) and ``keys`` (numbers)."""
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

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


def amounts_problem(data: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    """What is wrong with the amounts a record keeps under ``names`` (rates, seconds,
    joules): each, where kept, a finite number >= 0, as measuring writes them; a NaN or
    a negative rate would rank a config it never earned, or stop the sampler that is
    told it."""
    for name in names:
        x = data.get(name)
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            continue
        if x < 0 or (isinstance(x, float) and not math.isfinite(x)):
            return f"{name} {show(x)} is not a finite number >= 0"
    return None


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
    return cut(repr(value), 40)


class Record:
    """A journal record: written as the JSON of its fields, read back by :func:`decode`
    once :func:`record_problem` passed it."""

    def to_json(self) -> dict[str, Any]:
        """The record as its journal line's JSON object: its fields by msgspec, those of a
        type of :data:`DUMPS` in their own form (a record holds such a value as a field,
        never deeper), and its ``format`` (:meth:`written_format`)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        out: dict[str, Any] = msgspec.to_builtins(
            {k: DUMPS[type(v)](v) if type(v) in DUMPS else v for k, v in fields.items()},
            enc_hook=float)      # numpy's float scalars, which json writes as floats
        out["format"] = self.written_format()
        return out

    def written_format(self) -> int:
        """The format the record is written in: :data:`FORMAT`, the oldest that holds
        what every record of its kind says, so older sweepers read it."""
        return FORMAT

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The typed record from a JSON object that :func:`record_problem` passed."""
        out: Self = decode(cls, data)
        return out
