"""The journal forms of the value types records carry, where a form is not simply the
dataclass's fields (see :mod:`sweeper.store._schema`).

Each :class:`Codec` checks a JSON value (``problem``: why it is not one, naming the
field), builds the typed value from a checked one (``load``) and writes it back
(``dump``), so that a record read and written again is the line it was.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sweeper.measure import Stats
from sweeper.store._schema import show, values_problem


@dataclass(frozen=True)
class Codec:
    problem: Callable[[Any, str], str | None]
    load: Callable[[Any], Any]
    dump: Callable[[Any], Any]


#: Statistics as a trial has always kept them: every field a number; a field a journal
#: written by hand leaves out reads as NaN (0 for counts); readers that need the median
#: or a bound say so in their record's invariants.
STATS_FIELDS = {f.name: f for f in dataclasses.fields(Stats)}


def _stats_problem(value: Any, key: str) -> str | None:
    if not isinstance(value, dict):
        return f"{key} is {show(value)}, not an object of statistics"
    problem = values_problem(value, {name: float for name in STATS_FIELDS})
    return None if problem is None else f"{key}: {problem}"


def _stats_load(value: dict[str, Any]) -> Stats:
    missing = {name: 0 if f.type in ("int", int) else math.nan
               for name, f in STATS_FIELDS.items() if name not in value}
    return Stats(**{**missing, **{k: v for k, v in value.items() if k in STATS_FIELDS}})


CODECS: dict[type, Codec] = {
    Stats: Codec(_stats_problem, _stats_load, Stats.to_dict),
}
