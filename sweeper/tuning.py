"""The tuning file ``sweeper export`` writes: where it is, and reading it back checked.

One JSON object ``{"version": 1, "entries": [...]}``; each entry is the config one problem
(kernel, GPU, dtype, footprint or dimensions) ends with, and (``top``, optional: files
written before it lack it) its best configs with their slowdowns, for dispatch to shapes
that were not tuned (:mod:`sweeper.dispatch`).  Every entry is checked when the
file is read, so a file edited by hand or cut short is refused with one line naming the
entry, never a ``KeyError`` at launch time.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from sweeper.errors import SweeperError
from sweeper.kernels import Headline
from sweeper.space import DTYPES, Problem, format_size

DEFAULT_TUNING = Path("studies") / "tuning.json"
FORMAT_VERSION = 1


def tuning_path(path: str | Path | None = None) -> Path:
    """The tuning file: ``path`` if given, else ``$SWEEPER_TUNING``, else
    ``DEFAULT_TUNING``, so a caller and ``sweeper export`` agree on one file without
    passing it around."""
    return Path(path or os.environ.get("SWEEPER_TUNING") or DEFAULT_TUNING)


def entry_rate(entry: dict[str, Any]) -> tuple[float, Headline]:
    """A tuning entry's headline rate and its kind; entries written before ``rate``
    existed carry GB/s only."""
    if "rate" in entry:
        return entry["rate"], Headline(entry["headline"])
    return entry["gbps"], Headline.GBPS


def entry_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    """What one entry is for; a problem sized by its footprint alone (a 1-D kernel's ``n``,
    or an entry older than dimensions) is keyed by the footprint, so the two agree."""
    problem = Problem(entry["dtype"], entry["footprint"], tuple(entry.get("dims", {}).items()))
    dims = () if problem.sized_by_footprint else problem.dims
    return entry["kernel"], entry["gpu"], entry["dtype"], entry["footprint"], dims


def read_tuning(path: Path) -> dict[str, Any]:
    """The tuning file at ``path``, every entry checked: a file edited by hand or cut
    short is refused with one line naming the entry, never a ``KeyError`` at launch."""
    if path.exists() and not path.is_file():      # /dev/zero would be read without end
        raise SweeperError(f"{path}: not a regular file; a tuning file is a JSON file")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        raise SweeperError(f"{path}: not a readable tuning file: {why}") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise SweeperError(f"{path}: tuning file version {found!r}; this sweeper reads "
                           f"version {FORMAT_VERSION} (an object with version and entries)")
    if not isinstance(data.get("entries"), list):
        raise SweeperError(f"{path}: 'entries' must be a list of tuned configs")
    for i, entry in enumerate(data["entries"]):
        problem = entry_problem(entry)
        if problem:
            raise SweeperError(f"{path}: entries[{i}]{entry_name(entry)}: {problem}; "
                               "`sweeper export STUDY` writes a complete entry")
    return data


#: What :func:`tuned` reads from an entry, and the type each must have.
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "kernel": (str,), "gpu": (str,), "dtype": (str,), "footprint": (int,),
    "grid_expr": (str,), "block": (int,), "meta": (dict,), "gbps": (int, float),
    "median_ms": (int, float), "study": (str,), "facts": (dict,)}


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one tuning entry, or ``None``."""
    if not isinstance(entry, dict):
        return f"an entry must be an object, got {type(entry).__name__}"
    for key, types in ENTRY_FIELDS.items():
        if key not in entry:
            return f"{key!r} is missing"
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, types):
            return f"{key} is {value!r}; it must be {' or '.join(t.__name__ for t in types)}"
    if entry["dtype"] not in DTYPES:
        return f"dtype {entry['dtype']!r} is unknown; allowed: {', '.join(DTYPES)}"
    for key in ("footprint", "block", "median_ms"):
        if not entry[key] > 0 or not math.isfinite(entry[key]):
            return f"{key} is {entry[key]!r}; it must be positive"
    if not math.isfinite(entry["gbps"]) or entry["gbps"] < 0:
        return f"gbps is {entry['gbps']!r}; it must be a finite number >= 0"
    if "rate" in entry:                      # the headline rate, since export wrote one
        rate, headline = entry["rate"], entry.get("headline")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
                not math.isfinite(rate) or rate < 0:
            return f"rate is {rate!r}; it must be a finite number >= 0"
        if headline not in {h.value for h in Headline}:
            return (f"headline is {headline!r}; allowed: "
                    f"{', '.join(h.value for h in Headline)}")
    for key in ("kernel_path", "capability"):       # optional, since export writes them
        if key in entry and not isinstance(entry[key], str):
            return f"{key} is {entry[key]!r}; it must be a string"
    for key in ("sms", "l2_bytes"):
        if key not in entry["facts"]:
            return f"'facts.{key}' is missing"
    top = _top_problem(entry.get("top", []))
    if top:
        return top
    dims = entry.get("dims", {})
    if not isinstance(dims, dict):
        return f"dims is {dims!r}; it must be an object of dimension -> integer"
    for scope, values in (("meta", entry["meta"]), ("facts", entry["facts"]), ("dims", dims)):
        for key, value in values.items():
            if type(value) is not int and not (scope == "facts" and value is None):
                return f"{scope}.{key} is {value!r}; it must be an integer"
            if scope == "dims" and type(value) is int and value <= 0:
                return f"dims.{key} is {value!r}; it must be positive"
    return None


def _top_problem(top: Any) -> str | None:
    """What is wrong with an entry's optional ``top`` (its problem's best configs with
    their slowdowns, for dispatch to untuned shapes), or ``None``."""
    if not isinstance(top, list):
        return f"top is {top!r}; it must be a list of configs with their slowdowns"
    for i, item in enumerate(top):
        if not isinstance(item, dict):
            return f"top[{i}] is {item!r}; it must be an object"
        slowdown, block = item.get("slowdown"), item.get("block")
        if not isinstance(item.get("grid_expr"), str) or not isinstance(item.get("meta"), dict):
            return f"top[{i}]: 'grid_expr' (a string) and 'meta' (an object) are required"
        if type(block) is not int or block <= 0:
            return f"top[{i}].block is {block!r}; it must be a positive integer"
        if any(type(v) is not int for v in item["meta"].values()):
            return f"top[{i}].meta is {item['meta']!r}; its values must be integers"
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float)) or \
                not math.isfinite(slowdown) or slowdown <= 0:
            return f"top[{i}].slowdown is {slowdown!r}; it must be a positive number"
    return None


def entry_name(entry: Any) -> str:
    """`` (copy float32 1GiB on H200)`` from whatever the entry holds, for messages."""
    if not isinstance(entry, dict):
        return ""
    parts = [str(entry[k]) for k in ("kernel", "dtype") if isinstance(entry.get(k), str)]
    dims = entry.get("dims")
    if isinstance(dims, dict) and dims and set(dims) != {"n"}:
        parts.append(" ".join(f"{k}={v}" for k, v in dims.items()))
    elif type(entry.get("footprint")) is int and entry["footprint"] > 0:
        parts.append(format_size(entry["footprint"]))
    if isinstance(entry.get("gpu"), str):
        parts.append(f"on {entry['gpu']}")
    return f" ({' '.join(parts)[:120]})" if parts else ""



__all__ = ["DEFAULT_TUNING", "ENTRY_FIELDS", "FORMAT_VERSION", "entry_key", "entry_name",
           "entry_problem", "entry_rate", "read_tuning", "tuning_path"]
