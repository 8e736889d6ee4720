"""Older journals and study files read as the current format: the one place that knows
what earlier sweepers wrote, so no other reader has a branch for it.

Records and ``study.json`` are written in format :data:`FORMAT`, which each carries as its
``format`` field.  A record or study file without one is format 1 (sweeper 0.1), read as
format 2 by :func:`upgraded` and :func:`upgraded_meta`:

- a flag or a stop reason kept as its text alone names its kind by its first words
  (``unconverged: ci 2.1% > 0.5%``), now ``{"kind", "text"}``; an empty stop reason is none;
- a config, or a final's problem, without a ``cache`` was measured ``cold``;
- a study file without a ``headline`` led with its built-in kernel's rate, else GB/s, and
  one without ``finals`` (written with the built-in plugins only) ran them but on a replay
  (nothing can be measured again) or one at a time (it answers another question);
- a problem without dimensions keeps a dtype and a footprint alone: it gets the dimensions
  the study's kernel derives from its footprint (:func:`complete_dims`, once the records
  are typed, as that needs the kernel);
- a tuning entry without a ``rate`` carried GB/s alone: its headline rate is its ``gbps``
  (:func:`upgraded_entry`);
- a study file's ``last_run`` without a ``sweep_s`` (of format 2 too) kept the sweep's
  seconds as its ``wall_s``: they are its ``sweep_s``, the command's seconds unknown.

A trial record to be measured again (``retry``) is written in format 3
(:data:`~sweeper.store._schema.RETRY_FORMAT`), read as it is: format 2 and a ``retry``,
which the sweepers older than it, reading formats 1 to 2, set aside.

A record or study file of a later format than this sweeper's is not guessed at: the
record is set aside (``file:LINE: reason``), the study file refused, each saying so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from sweeper import plugins
from sweeper.core._problem import default_shape
from sweeper.errors import SweeperError
from sweeper.kernels import BUILTINS, Headline
from sweeper.measure import StopReason, TrialFlag
from sweeper.space import Config, Shape, shape_of
from sweeper.store._codec import ProblemKey
from sweeper.store._records import BaselineRecord
from sweeper.store._schema import FORMAT, RETRY_FORMAT, format_problem, show

#: The fields of each kind of record that hold a flag or a stop reason, and whether the
#: field is a list of them.
_NOTES = {"trial": (("stop_reason", StopReason, False), ("flags", TrialFlag, True)),
          "baseline": (("stop_reason", StopReason, False),)}


def upgraded(data: Any) -> tuple[Any, str | None]:
    """A parsed journal line as the current format, and why it cannot be one (``None``:
    it can).  Anything that is not an older record passes as it is, for
    :func:`~sweeper.store._schema.record_problem` to check; the fields changed are
    changed in ``data`` itself."""
    if not isinstance(data, dict) or data.get("format") == FORMAT:
        return data, None
    problem = format_problem(data, "records", RETRY_FORMAT)
    if problem is not None or "format" in data:
        return data, problem
    kind = data.get("kind")
    for field, note, many in _NOTES.get(kind, ()) if isinstance(kind, str) else ():
        problem = _notes_upgraded(data, field, note, many)
        if problem is not None:
            return data, f"{kind} record: {problem}"
    for name in ("config", "problem"):
        value = data.get(name)
        if isinstance(value, dict):
            value.setdefault("cache", "cold")
    data["format"] = FORMAT
    return data, None


def _notes_upgraded(data: dict[str, Any], field: str, note: Any, many: bool) -> str | None:
    """Make the text-alone notes of ``field`` (``many``: each item of that list) objects
    of their kind; what is wrong with one that names none."""
    value = data.get(field)
    if not many:
        items = [(field, value)]
    elif isinstance(value, list):
        items = [(f"{field}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    made = []
    for where, text in items:
        if text == "" and not many:
            text = None                         # a trial that sampled nothing
        elif isinstance(text, str):
            kind = note.kind_of(text)
            if kind is None:
                kinds = ", ".join(str(k.value) for k in note.KINDS)
                return f"{where} {show(text)} does not start with one of {kinds}"
            text = {"kind": kind.value, "text": text}
        made.append(text)
    data[field] = made if many else made[0]
    return None


def upgraded_entry(data: Any) -> tuple[Any, str | None]:
    """A tuning file's entry as the current format, and why it cannot be one (``None``:
    it can), as :func:`upgraded` reads a journal line; the entry is changed in place, so
    an export merging into the file writes it back in the current format."""
    if not isinstance(data, dict) or data.get("format") == FORMAT:
        return data, None
    problem = format_problem(data, "tuning entries")
    if problem is not None:
        return data, problem
    if "rate" not in data and "gbps" in data:
        data.update(rate=data["gbps"], headline=Headline.GBPS.value)
    data["format"] = FORMAT
    return data, None


def upgraded_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A checked study file (:func:`~sweeper.store._meta.meta_problem`) as the current
    format, changed in place."""
    last = meta.get("last_run")
    if isinstance(last, dict) and "wall_s" in last and "sweep_s" not in last:
        meta["last_run"] = {**{k: v for k, v in last.items() if k != "wall_s"},
                            "sweep_s": last["wall_s"]}
    if meta.get("format") == FORMAT:
        return meta
    if not meta.get("headline"):
        kernel = meta.get("kernel")
        meta["headline"] = (plugins.kernel_declaration(kernel).headline.value
                            if kernel in BUILTINS else Headline.GBPS.value)
    if "finals" not in meta:          # checked: environment and sampler are objects
        meta["finals"] = (meta.get("environment", {}).get("device") != "replay" and
                          meta.get("sampler", {}).get("name") != "one-at-a-time")
    meta["format"] = FORMAT
    return meta


def complete_dims(records: Sequence[Any], meta: Callable[[], dict[str, Any]]) -> None:
    """Give every problem in ``records`` that has no dimensions those the study's kernel
    (read from ``meta()`` only if one is missing) derives from its footprint; a footprint
    that gives none stays as it is."""
    shape: Shape | None = None
    for record in records:
        for f in dataclasses.fields(record):
            value = getattr(record, f.name)
            missing = (isinstance(value, Config) and not value.problem.dims) or (
                isinstance(value, ProblemKey) and not value.dims and value.dtype) or (
                isinstance(record, BaselineRecord) and f.name == "dims" and not value)
            if not missing:
                continue
            shape = shape or _shape(meta)
            setattr(record, f.name, _completed(record, value, shape))


def _shape(meta: Callable[[], dict[str, Any]]) -> Shape:
    """The shape the study's kernel declares, read without importing a user kernel (whose
    stand-in, like any kernel that declares none, has the 1-D shape, as has a journal
    read without its study.json)."""
    try:
        return shape_of(plugins.kernel_declaration(str(meta().get("kernel")), user_code=False))
    except SweeperError:
        return default_shape()


def _completed(record: Any, value: Any, shape: Shape) -> Any:
    if isinstance(value, ProblemKey):
        return value.completed(shape)
    if isinstance(value, Config):
        key = ProblemKey.of(value).completed(shape)
        return dataclasses.replace(value, problem=key.problem)
    key = ProblemKey(record.dtype, record.footprint, record.cache).completed(shape)
    return dict(key.dims)
