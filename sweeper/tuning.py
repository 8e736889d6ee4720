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
import keyword
import math
import os
from pathlib import Path
from typing import Any

from sweeper.core._model import BLOCKS, FACT_NAMES, LAUNCH_AXES, PROBLEM_AXES
from sweeper.errors import SweeperError, TuningFileError
from sweeper.kernels import Headline
from sweeper.space import DTYPES, Problem, format_size, parse
from sweeper.space._parser import shown

DEFAULT_TUNING = Path("studies") / "tuning.json"
FORMAT_VERSION = 1
#: The versions of the file this sweeper reads.
SUPPORTED_VERSIONS = (FORMAT_VERSION,)


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
    """The tuning file at ``path``, every entry checked: a file edited by hand, tampered
    with or cut short is refused whole with one line naming the entry and the key (a
    :class:`TuningFileError`), never a ``KeyError`` or a wrong launch later."""
    where = str(path)
    if path.exists() and not path.is_file():      # /dev/zero would be read without end
        raise TuningFileError("not a regular file; a tuning file is a JSON file", file=where)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        raise TuningFileError(f"not a readable tuning file: {why}", file=where) from None
    version = data.get("version") if isinstance(data, dict) else None
    if not isinstance(data, dict) or type(version) is not int or \
            version not in SUPPORTED_VERSIONS:
        raise TuningFileError(f"tuning file version {shown(version)}; this sweeper reads "
                              f"version {' or '.join(map(str, SUPPORTED_VERSIONS))} (an "
                              "object with version and entries)", file=where)
    if not isinstance(data.get("entries"), list):
        raise TuningFileError("'entries' must be a list of tuned configs", file=where)
    for i, entry in enumerate(data["entries"]):
        problem = entry_problem(entry)
        if problem:
            raise TuningFileError(f"{problem}; `sweeper export STUDY` writes a complete "
                                  "entry", file=where, entry=i, name=entry_name(entry))
    return data


#: What :func:`tuned` reads from an entry, and the type each must have.
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "kernel": (str,), "gpu": (str,), "dtype": (str,), "footprint": (int,),
    "grid_expr": (str,), "block": (int,), "meta": (dict,), "gbps": (int, float),
    "median_ms": (int, float), "study": (str,), "facts": (dict,)}
#: The largest count an entry may hold (a footprint, a dimension, a device fact): what
#: a launch passes as a 64-bit integer.
INT64_MAX = 2**63 - 1
#: The most programs one launch may have: CUDA's limit on a grid's x dimension.
MAX_GRID = 2**31 - 1
#: Triton's launch keywords and compile options (``JITFunction.run`` and the CUDA and
#: HIP backends' options, Triton 3.x): a meta key of one of these names would reach the
#: launch as that option, not as a constexpr.  ``num_warps`` is the tuned block's
#: (:attr:`sweeper.lookup.TunedConfig.num_warps`); ``num_stages`` alone is tuned as a
#: meta-parameter (matmul, ``from_autotune:``), so it is allowed there.
LAUNCH_OPTIONS = frozenset({
    "grid", "warmup", "stream", "device", "num_warps", "num_ctas", "warp_size", "maxnreg",
    "ptx_version", "ptx_options", "ir_override", "enable_fp_fusion", "sched4reg",
    "enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl", "clc",
    "supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes",
    "default_dot_input_precision", "allowed_dot_input_precisions",
    "max_num_imprecise_acc_default", "extern_libs", "debug", "backend_name",
    "sanitize_overflow", "arch", "instrumentation_mode", "fpsan_homomorphic_casts",
    "min_shared_mem", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint",
    "pre_hook", "post_hook"})
#: The names a grid expression binds besides the meta-parameters (and the dimensions):
#: a meta-parameter of one of these names would take its place.
GRID_NAMES = frozenset({*LAUNCH_AXES, *PROBLEM_AXES, *FACT_NAMES})


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one tuning entry, or ``None``."""
    if not isinstance(entry, dict):
        return f"an entry must be an object, got {type(entry).__name__}"
    for key, types in ENTRY_FIELDS.items():
        if key not in entry:
            return f"{key!r} is missing"
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, types):
            return f"{key} is {shown(value)}; it must be " \
                f"{' or '.join(t.__name__ for t in types)}"
    if entry["dtype"] not in DTYPES:
        return f"dtype {shown(entry['dtype'])} is unknown; allowed: {', '.join(DTYPES)}"
    if not entry["median_ms"] > 0 or not math.isfinite(entry["median_ms"]):
        return f"median_ms is {entry['median_ms']!r}; it must be positive"
    if not math.isfinite(entry["gbps"]) or entry["gbps"] < 0:
        return f"gbps is {entry['gbps']!r}; it must be a finite number >= 0"
    if "rate" in entry:                      # the headline rate, since export wrote one
        rate, headline = entry["rate"], entry.get("headline")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
                not math.isfinite(rate) or rate < 0:
            return f"rate is {shown(rate)}; it must be a finite number >= 0"
        if headline not in {h.value for h in Headline}:
            return (f"headline is {shown(headline)}; allowed: "
                    f"{', '.join(h.value for h in Headline)}")
    for key in ("kernel_path", "capability"):       # optional, since export writes them
        if key in entry and not isinstance(entry[key], str):
            return f"{key} is {shown(entry[key])}; it must be a string"
    for key in ("sms", "l2_bytes"):
        if key not in entry["facts"]:
            return f"'facts.{key}' is missing"
    dims = entry.get("dims", {})
    if not isinstance(dims, dict):
        return f"dims is {shown(dims)}; it must be an object of dimension -> integer"
    return (_count_problem("footprint", entry["footprint"]) or
            _grid_problem("grid", entry.get("grid", 1)) or
            _names_problem("dims", dims, "a dimension's") or
            next((p for k, v in dims.items() if (p := _count_problem(f"dims.{k}", v))), None)
            or next((p for k, v in entry["facts"].items()
                     if v is not None and (p := _count_problem(f"facts.{k}", v, 0))), None)
            or _config_problem("", entry, dims) or _top_problem(entry.get("top", []), dims))


def _count_problem(key: str, value: Any, least: int = 1) -> str | None:
    """What is wrong with a count (a footprint, a dimension, a device fact), or ``None``."""
    if type(value) is not int:
        return f"{key} is {shown(value)}; it must be an integer"
    if not least <= value <= INT64_MAX:
        what = "positive" if least == 1 else f"at least {least}"
        return f"{key} is {shown(value)}; it must be {what} and at most {INT64_MAX} (int64)"
    return None


def _grid_problem(key: str, value: Any) -> str | None:
    """What is wrong with a number of programs to launch, or ``None``."""
    if type(value) is not int or not 1 <= value <= MAX_GRID:
        return f"{key} is {shown(value)}; it must be an integer from 1 to {MAX_GRID} " \
            "(the most programs a CUDA launch takes)"
    return None


def _names_problem(scope: str, values: dict[str, Any], whose: str) -> str | None:
    """A key of ``values`` that cannot be a name in a grid expression or a launch's
    keyword arguments, or ``None``."""
    bad = next((k for k in values if not k.isidentifier() or keyword.iskeyword(k) or
                k.startswith("__")), None)
    if bad is None:
        return None
    return f"{scope} has the key {shown(bad)}; {whose} name is a Python identifier, not " \
        "a keyword, not starting with '__'"


def _config_problem(at: str, config: dict[str, Any], dims: dict[str, Any]) -> str | None:
    """What is wrong with a config's launch (``block``, ``meta`` and ``grid_expr``) as the
    entry or its ``top[i]`` (``at``) holds it, or ``None``: a block the CUDA launch takes
    (as a space allows it), meta keys that are a kernel's constexprs and nothing the launch
    or the grid expression would read otherwise, values a Triton constexpr integer takes."""
    block, meta = config["block"], config["meta"]
    if type(block) is not int or block not in BLOCKS:
        return f"{at}block is {shown(block)}; allowed: {', '.join(map(str, BLOCKS))} " \
            "(threads a program: num_warps x 32)"
    problem = _names_problem(f"{at}meta", meta, "a meta-parameter's")
    if problem:
        return problem
    for key, value in meta.items():
        if key in LAUNCH_OPTIONS:
            return f"{at}meta has the key {key!r}, a Triton launch option; the launch " \
                "takes num_warps from block (block / 32) and no other option but " \
                "num_stages from meta"
        if key in GRID_NAMES or key in dims:
            return f"{at}meta has the key {key!r}, a name of the problem or the device; " \
                "a meta-parameter cannot take its place"
        if type(value) is not int or not -INT64_MAX - 1 <= value <= INT64_MAX:
            return f"{at}meta.{key} is {shown(value)}; it must be an integer from " \
                f"{-INT64_MAX - 1} to {INT64_MAX} (int64)"
    try:
        parse(config["grid_expr"])
    except (SweeperError, RecursionError) as err:
        return f"{at}grid_expr: {err}"
    return None


def _top_problem(top: Any, dims: dict[str, Any]) -> str | None:
    """What is wrong with an entry's optional ``top`` (its problem's best configs with
    their slowdowns, for dispatch to untuned shapes), or ``None``."""
    if not isinstance(top, list):
        return f"top is {shown(top)}; it must be a list of configs with their slowdowns"
    for i, item in enumerate(top):
        if not isinstance(item, dict):
            return f"top[{i}] is {shown(item)}; it must be an object"
        slowdown = item.get("slowdown")
        if not isinstance(item.get("grid_expr"), str) or not isinstance(item.get("meta"), dict):
            return f"top[{i}]: 'grid_expr' (a string) and 'meta' (an object) are required"
        problem = _config_problem(f"top[{i}].", {"block": item.get("block"), **item}, dims)
        if problem:
            return problem
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float)) or \
                not math.isfinite(slowdown) or slowdown <= 0:
            return f"top[{i}].slowdown is {shown(slowdown)}; it must be a positive number"
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



__all__ = ["DEFAULT_TUNING", "ENTRY_FIELDS", "FORMAT_VERSION", "LAUNCH_OPTIONS", "MAX_GRID",
           "SUPPORTED_VERSIONS", "entry_key", "entry_name", "entry_problem", "entry_rate",
           "read_tuning", "tuning_path"]
