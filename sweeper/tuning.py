"""The tuning file ``sweeper export`` writes: where it is, and its entries read back
checked and typed.

One JSON object ``{"version": 1, "entries": [...]}``; each entry (a :class:`TuningEntry`)
is the config one problem (kernel, GPU, dtype, footprint or dimensions) ends with, and
(``top``: files of older sweepers lack it) its best configs with their slowdowns, for
dispatch to shapes that were not tuned (:mod:`sweeper.dispatch`).  Every entry is
checked when the file is read, against :class:`TuningEntry`'s annotations and
invariants, once an entry of an older format is read as the current one
(:func:`sweeper.store._upgrade.upgraded_entry`): a file edited by hand or cut short is
refused with one line naming the entry, never a ``KeyError`` at launch time.

An entry records the cache mode its winner was measured in (``cache``: ``cold``, L2
flushed before each sample, or ``warm``), which a lookup asks for (cold unless told); an
entry without it (an older sweeper's) was measured cold.

An entry records the hash of its kernel's source as the study measured it
(``source_hash``) and when its winner was measured (``tuned``): a lookup warns where the
kernel's source is no longer that one (:class:`~sweeper.errors.StaleTuningWarning`); a
kernel built from its space's options (``cuda``, ``torch-op``) keeps those options
(``kernel_options``), from which its source now is hashed.  They are all optional and the
format is kept: an entry without them (an older sweeper's) is read and used as before,
and an older sweeper reading an entry with them leaves them.
"""

from __future__ import annotations

import json
import keyword
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, NamedTuple

from sweeper.core._model import (
    CACHE_MODES,
    FACT_NAMES,
    LAUNCH_AXES,
    MAX_GRID_YZ,
    MAX_THREADS,
    PROBLEM_AXES,
    LaunchShape,
)
from sweeper.errors import ExpressionError, SweeperError, TuningFileError
from sweeper.kernels import SOURCE_HASH, Headline, launch_shape, moved_options, named_by
from sweeper.space import DTYPES, Problem, format_size, parse
from sweeper.space._parser import shown
from sweeper.store._schema import FORMAT, Record, fields_problem
from sweeper.store._upgrade import upgraded_entry

DEFAULT_TUNING = Path("studies") / "tuning.json"
#: The version of the file as a whole (its entries carry their own ``format``).
FORMAT_VERSION = 1
#: The versions of the file this sweeper reads.
SUPPORTED_VERSIONS = (FORMAT_VERSION,)
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


def tuning_path(path: str | Path | None = None) -> Path:
    """The tuning file: ``path`` if given, else ``$SWEEPER_TUNING``, else
    ``DEFAULT_TUNING``, so a caller and ``sweeper export`` agree on one file without
    passing it around."""
    return Path(path or os.environ.get("SWEEPER_TUNING") or DEFAULT_TUNING)


@dataclass(frozen=True)
class LaunchConfig:
    """A config as a tuning file keeps it, and what a Triton launch needs of it: the grid
    expression, the block of threads and the meta-parameters (constexpr name -> integer,
    checked by :meth:`TuningEntry.invariants`); a CUDA C launch's grid in y and z too,
    as expressions (``None``: 1, as every Triton launch's, and left out of the file)."""

    grid_expr: str
    block: int
    meta: dict[str, Any]
    grid_y_expr: str | None = field(default=None, kw_only=True)
    grid_z_expr: str | None = field(default=None, kw_only=True)

    @property
    def grid_exprs(self) -> dict[str, str]:
        """The grid's expressions by the key a file keeps each under: ``grid_expr``, and
        ``grid_y_expr`` and ``grid_z_expr`` where the config has them."""
        given = (("grid_expr", self.grid_expr), ("grid_y_expr", self.grid_y_expr),
                 ("grid_z_expr", self.grid_z_expr))
        return {k: v for k, v in given if v is not None}

    @property
    def num_warps(self) -> int:
        """Warps per program: the tuned block of threads over the 32 of a warp."""
        return self.block // 32

    def launch_options(self) -> dict[str, int]:
        """Keyword arguments for a Triton launch: ``num_warps`` and the constexprs."""
        return {"num_warps": self.num_warps, **self.meta}


@dataclass(frozen=True)
class TopConfig(LaunchConfig):
    """One of a problem's best configs, with its sweep median over the problem's fastest
    (``slowdown``: 1 for the fastest)."""

    slowdown: float


@dataclass(frozen=True)
class TuningEntry(LaunchConfig, Record):
    """The config one problem ends with, as a launch reads it back: its launch, its median
    and headline rate (the interleaved final's where one chose it, as the report shows),
    where it was tuned (GPU, device facts, dimensions) and its problem's ``top`` configs;
    the fields after ``top`` say where it came from, written by ``sweeper export`` for
    people, not read at launch."""

    kernel: str
    gpu: str
    dtype: str
    footprint: int
    gbps: float
    median_ms: float
    #: the kernel's headline rate at ``median_ms`` (GB/s or TFLOP/s)
    rate: float
    headline: Headline
    study: str
    #: the device's ``sms`` and ``l2_bytes`` (each an integer, or ``None`` where unknown)
    facts: dict[str, Any]
    format: int = FORMAT
    grid: int = 1
    #: the grid in y and z at the problem it was tuned at (a CUDA C launch's; 1, and left
    #: out of the file, for any other)
    grid_y: int = 1
    grid_z: int = 1
    #: dimension name -> size; none in an entry written before dimensions
    dims: dict[str, Any] = field(default_factory=dict)
    #: the ``module:attr`` a space named the kernel by, where ``kernel`` is its name
    kernel_path: str | None = None
    #: the kernel's footprint over its dimensions and ``itemsize`` (its ``footprint_bytes``),
    #: so a lookup at dimensions not tuned knows the footprint and ``n`` a grid may read
    footprint_expr: str | None = None
    capability: str | None = None
    #: the cache mode the winner was measured in: ``cold`` (L2 flushed before each sample)
    #: or ``warm``; an entry written before it was kept was measured cold
    cache: str = "cold"
    #: the problem's best configs, this one first; none in a file of an older sweeper
    top: list[TopConfig] = field(default_factory=list)
    trial: int | None = None
    chosen_by: str | None = None
    median_from: str | None = None
    sweep_median_ms: float | None = None
    sweep_gbps: float | None = None
    exported: str | None = None
    note: str | None = None
    agreement: dict[str, Any] | None = None
    gpu_winners: list[dict[str, Any]] | None = None
    #: the kernel's :meth:`~sweeper.kernels.Kernel.source_hash` as the study measured it;
    #: none in an entry of an older sweeper (it is then not compared)
    source_hash: str | None = None
    #: when the winner was measured (its trial's start, ISO 8601), for the warning a
    #: changed source gets
    tuned: str | None = None
    #: the options of a built-in kernel built from its space's options (``cuda``'s
    #: source, entry, reference ...; ``torch-op``'s op), as its study's space gave them,
    #: so a lookup hashes its source now as the run did; none for any other kernel.  The
    #: file keeps the files they name (``cuda``'s source, reference, refuse, verify) relative to
    #: its folder (:func:`written_in`), read back absolute (:func:`read_in`)
    kernel_options: dict[str, str] | None = None
    #: the files besides those ``kernel_options`` name that its source read as its study
    #: measured it (``cuda``: the files its ``.cu`` file includes, relative to that
    #: file's folder; :meth:`~sweeper.kernels.Kernel.hashed_files`), so a lookup whose
    #: hash now differs tells one of them gone from an edit; none where it read none,
    #: or in an entry of an older sweeper (a file gone since is then an edit)
    source_files: list[str] | None = None
    #: the problem the study's space asked for, where its device measured a smaller one
    #: (the interpreter's cap on footprints): its dimensions and footprint; ``dims`` and
    #: ``footprint`` are the problem measured, and a lookup of the asked problem finds
    #: the entry as exact
    asked_dims: dict[str, Any] | None = None
    asked_footprint: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as the tuning file holds it: a field left unset (``None``) is left out,
        as is a grid of 1 in y or z (an older sweeper's file reads the same), in its top
        configs too."""
        out = {k: v for k, v in super().to_json().items() if v is not None and
               not (k in ("grid_y", "grid_z") and v == 1)}
        out["top"] = [{k: v for k, v in top.items() if v is not None} for top in out["top"]]
        return out

    @property
    def identity(self) -> str:
        """The kernel the entry is for, one text per kernel: the ``module:attr`` path a
        space named a user kernel by (an older file keyed it by that path alone), else
        its name; two kernels of one name (a built-in and a user's, or two modules')
        differ here."""
        return self.kernel_path or self.kernel

    @property
    def name(self) -> str:
        """The kernel as a lookup names it, one text per kernel: a built-in built from
        its space's options is named by those of its kept options that tell one such
        kernel from another (its declaration's ``named_by``), as every CUDA C kernel is
        the one built-in ``cuda`` and every torch op ``torch-op``: ``cuda:SOURCE:ENTRY``
        (``cuda:/work/a/copy.cu:copy``: the file's path as its kept options give it, read
        from the tuning file's folder where it keeps it relative, :func:`read_in`, so
        two ``.cu`` files of one name in different folders are two kernels; a lookup may
        give as much of the path's end as tells them apart, :meth:`is_for`),
        ``torch-op:OP`` (``torch-op:torch.nn.functional.gelu``); any other (or such an
        entry without its options, an older sweeper's) is its :attr:`identity`."""
        return kernel_name(self.kernel, self.kernel_path, self.kernel_options)

    @property
    def key(self) -> tuple[Any, ...]:
        """What the entry is for, which an export replaces: its kernel, GPU, dtype, the
        problem it was tuned for (a problem sized by its footprint alone, a 1-D kernel's
        ``n`` or an entry older than dimensions, by the footprint, so the two agree) and
        cache mode.  An entry measured shrunk (``asked_footprint``: the interpreter's cap)
        was tuned for the problem its space asked, and is keyed by it and as measured
        shrunk: it replaces another such entry for that problem alone, never one measured
        at its own size, neither of the problem it measured in its place nor of the one
        asked."""
        problem = Problem(self.dtype, self.footprint, tuple(self.dims.items()))
        if self.asked_footprint is not None:              # measured shrunk: the one asked
            problem = Problem(self.dtype, self.asked_footprint,
                              tuple((self.asked_dims or {}).items()))
        shape = () if problem.sized_by_footprint else problem.dims
        return (self.name, self.gpu, self.dtype, problem.footprint, shape, self.cache,
                self.asked_footprint is not None)

    def is_for(self, kernel: str) -> bool:
        """Whether the entry is for ``kernel``: by its name, or by the ``module:attr`` path
        a space named it by (older files keyed user kernels by that path only; the
        attribute is then taken for the name), or by its :attr:`name`, whose file paths
        may be given by as much of their end as the asker likes
        (``cuda:copy.cu:copy`` and ``cuda:a/copy.cu:copy`` for
        ``cuda:/work/a/copy.cu:copy``)."""
        return (self.name != self.identity and names_kernel(kernel, self.name)) or any(
            name is not None and (name == kernel or (
                ":" in name and ":" not in kernel and name.rpartition(":")[2] == kernel))
            for name in (self.kernel, self.kernel_path))

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What the annotations cannot say of an entry: a known dtype, a positive median,
        finite rates, the device facts a grid reads, counts a 64-bit launch takes, and
        launches (its own and its top configs') that the CUDA launch and a Triton kernel
        take."""
        if data["dtype"] not in DTYPES:
            return f"dtype {shown(data['dtype'])} is unknown; allowed: {', '.join(DTYPES)}"
        if data.get("cache", "cold") not in CACHE_MODES:
            return f"cache is {shown(data['cache'])}; allowed: {', '.join(CACHE_MODES)}"
        source = data.get("source_hash")
        if source is not None and not re.fullmatch(SOURCE_HASH, source):
            return f"source_hash is {shown(source)}; it must be 16 hex digits (the " \
                "kernel's source hash), or left out"
        if not data["median_ms"] > 0 or not math.isfinite(data["median_ms"]):
            return f"median_ms is {shown(data['median_ms'])}; it must be positive"
        for key in ("gbps", "rate"):
            if not math.isfinite(data[key]) or data[key] < 0:
                return f"{key} is {shown(data[key])}; it must be a finite number >= 0"
        facts, dims = data["facts"], data.get("dims", {})
        # the kernel as tuned: a user kernel by its module:attr path, whose name (a
        # sweeper.cuda entry's, copy) may be a built-in's of other blocks
        shape = launch_shape(data.get("kernel_path") or data["kernel"])
        missing = [key for key in ("sms", "l2_bytes") if key not in facts]
        if missing:
            return f"'facts.{missing[0]}' is missing"
        grid = data.get("grid", 1)
        if not 1 <= grid <= MAX_GRID:
            return f"grid is {shown(grid)}; it must be an integer from 1 to {MAX_GRID} " \
                "(the most programs a CUDA launch takes)"
        for key in ("grid_y", "grid_z"):
            if not 1 <= data.get(key, 1) <= MAX_GRID_YZ:
                return f"{key} is {shown(data[key])}; it must be an integer from 1 to " \
                    f"{MAX_GRID_YZ} (the most blocks a CUDA launch takes in y or z)"
        counts = [("footprint", data["footprint"], 1),
                  *((f"dims.{k}", v, 1) for k, v in dims.items()),
                  *((f"facts.{k}", v, 0) for k, v in facts.items() if v is not None),
                  *((f"asked_dims.{k}", v, 1)
                    for k, v in (data.get("asked_dims") or {}).items()),
                  *((("asked_footprint", data["asked_footprint"], 1),)
                    if data.get("asked_footprint") is not None else ())]
        return (_names_problem("dims", dims, "a dimension's") or
                _names_problem("asked_dims", data.get("asked_dims") or {},
                               "a dimension's") or
                _footprint_rule_problem(data.get("footprint_expr"), dims) or
                next((p for key, value, least in counts
                      if (p := _count_problem(key, value, least))), None) or
                _config_problem("", data, dims, shape) or
                next((p for i, top in enumerate(data.get("top", []))
                      if (p := _top_problem(f"top[{i}].", top, dims, shape))), None))


def kernel_name(kernel: str, kernel_path: str | None = None,
                options: dict[str, str] | None = None) -> str:
    """The name :attr:`TuningEntry.name` gives a kernel of that name, ``module:attr``
    path and kept options; a module ``sweeper export --format triton`` writes names its
    kernel so too."""
    named = named_by(kernel) if options else ()
    if options and named and all(key in options for key in named):
        return ":".join([kernel, *(options[key] for key in named)])
    return kernel_path or kernel


def names_kernel(asked: str, name: str) -> bool:
    """Whether ``asked`` names the kernel called ``name`` (``KERNEL:VALUE:...``, a
    :attr:`TuningEntry.name`): ``name`` itself, or with a value that is a file's path
    given by its last parts (``cuda:copy.cu:copy`` or ``cuda:a/copy.cu:copy`` for
    ``cuda:/work/a/copy.cu:copy``)."""
    if asked == name:
        return True
    want, have = asked.split(":"), name.split(":")
    if len(want) != len(have) or want[0] != have[0]:
        return False
    for part, value in zip(want[1:], have[1:], strict=True):
        tail = PurePath(part).parts
        if part != value and (not tail or PurePath(value).parts[-len(tail):] != tail):
            return False
    return True


def _footprint_rule_problem(text: Any, dims: dict[str, Any]) -> str | None:
    """What is wrong with an entry's ``footprint_expr``, or ``None``: an expression over
    its dimensions (``n`` for an entry sized by its footprint alone) and ``itemsize``."""
    if text is None:
        return None
    known = [*(dims or ["n"]), "itemsize"]
    try:
        names = parse(text).names if isinstance(text, str) else None
    except ExpressionError as err:
        return f"footprint_expr: {err}"
    if names is None or not names <= set(known):
        return (f"footprint_expr is {shown(text)}; it must be an expression over "
                f"{', '.join(known)}")
    return None


def _count_problem(key: str, value: Any, least: int) -> str | None:
    """What is wrong with a count (a footprint, a dimension, a device fact), or ``None``."""
    if type(value) is not int:
        return f"{key} is {shown(value)}; it must be an integer"
    if not least <= value <= INT64_MAX:
        what = "positive" if least == 1 else f"at least {least}"
        return f"{key} is {shown(value)}; it must be {what} and at most {INT64_MAX} (int64)"
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


def _config_problem(at: str, config: dict[str, Any], dims: dict[str, Any],
                    shape: LaunchShape) -> str | None:
    """What is wrong with a config's launch (``block``, ``meta`` and the grid
    expressions) as the entry or its ``top[i]`` (``at``) holds it, or ``None``: a block
    the kernel's launch takes (``shape``, as a space allows it: a CUDA C block's extents
    in y and z among the meta-parameters too, at most 1024 threads in all), meta keys
    that are a kernel's constexprs and nothing the launch or the grid expression would
    read otherwise, values a Triton constexpr integer takes."""
    block, meta = config["block"], config["meta"]
    if not shape.allows(block):
        return f"{at}block is {shown(block)}; allowed: {shape.text}"
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
    extents = [(name, meta.get(name, 1)) for name, _ in shape.extents]
    wrong = next((p for name, v in extents if (p := shape.extent_problem(name, v))), None)
    if wrong is not None:
        return f"{at}meta.{wrong}"
    threads = math.prod((block, *(v for _, v in extents)))
    if threads > MAX_THREADS:
        return f"{at}block × {' × '.join(n for n, _ in extents)} is {threads} threads; " \
            f"allowed: at most {MAX_THREADS} (the most a CUDA block has)"
    for key in ("grid_expr", "grid_y_expr", "grid_z_expr"):
        if config.get(key) is None:
            continue
        try:
            parse(config[key])
        except (SweeperError, RecursionError) as err:
            return f"{at}{key}: {err}"
    return None


def _top_problem(at: str, top: dict[str, Any], dims: dict[str, Any], shape: LaunchShape
                 ) -> str | None:
    """What is wrong with one of an entry's top configs (``at``: ``top[i].``), or
    ``None``."""
    slowdown = top["slowdown"]
    if not math.isfinite(slowdown) or slowdown <= 0:
        return f"{at}slowdown is {shown(slowdown)}; it must be a positive number"
    return _config_problem(at, top, dims, shape)


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one tuning entry of the current format, or ``None``."""
    if not isinstance(entry, dict):
        return f"an entry must be an object, got {type(entry).__name__}"
    return fields_problem(TuningEntry, entry) or TuningEntry.invariants(entry)


def entry_name(entry: Any) -> str:
    """`` (copy float32 1GiB on H200)`` from whatever the entry holds (its JSON, or the
    ``vars`` of a :class:`TuningEntry`), for messages."""
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


class TuningFile(NamedTuple):
    """A tuning file read: its entries typed, and its JSON (the entries as the current
    format), which a merge writes back with the keys this sweeper does not know."""

    entries: list[TuningEntry]
    data: dict[str, Any]


def read_tuning(path: Path) -> TuningFile:
    """The tuning file at ``path``, every entry checked: a file edited by hand, tampered
    with or cut short is refused whole with one line naming the entry and the key (a
    :class:`TuningFileError`), never a ``KeyError`` or a wrong launch later."""
    where = str(path)
    if path.exists() and not path.is_file():      # /dev/zero would be read without end
        raise TuningFileError("not a regular file; a tuning file is a JSON file", file=where)
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as err:      # the line, as the journal and study.json say
        raise TuningFileError(f"not a readable tuning file: {err.msg} (column {err.colno})",
                              file=where, line=err.lineno) from None
    except (OSError, UnicodeDecodeError, RecursionError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        raise TuningFileError(f"not a readable tuning file: {why}", file=where) from None
    version = data.get("version") if isinstance(data, dict) else None
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        raise TuningFileError(f"tuning file version {shown(version)}; this sweeper reads "
                              f"version {' or '.join(map(str, SUPPORTED_VERSIONS))} (an "
                              "object with version and entries)", file=where)
    if not isinstance(data.get("entries"), list):
        raise TuningFileError("'entries' must be a list of tuned configs", file=where)
    entries = []
    for i, entry in enumerate(data["entries"]):
        entry, problem = upgraded_entry(entry)
        problem = problem or entry_problem(entry)
        if problem:
            raise TuningFileError(f"{problem}; `sweeper export STUDY` writes a complete "
                                  "entry", file=where, entry=i, name=entry_name(entry))
        entries.append(TuningEntry.from_json(read_in(entry, path.parent)))
    return TuningFile(entries, data)


def written_in(entry: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``entry`` (a :class:`TuningEntry`'s JSON) as a tuning file in ``folder`` keeps it:
    the files its kernel's options name (:func:`~sweeper.kernels.moved_options`:
    ``cuda``'s ``source``, a ``file.py:function`` reference's or refuse's file, the folder
    a ``module:function`` one is pinned to; absolute as its study's space resolved them)
    relative to that folder, so that the tuning file moved or copied with those files (a
    checkout moved, another machine) names the same kernel (:attr:`TuningEntry.name`) and
    finds its source to compare; a file no relative path reaches (another drive) as it
    is."""
    base = Path(folder).resolve()

    def relative(path: str) -> str:
        try:
            return os.path.relpath(path, base) if os.path.isabs(path) else path
        except ValueError:
            return path

    return _moved_in(entry, relative)


def read_in(entry: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``entry`` (checked JSON) as read from a tuning file in ``folder``: :func:`written_in`
    undone, its kernel's files absolute from that folder; an absolute one (an older
    sweeper's) as it is."""
    base = Path(folder).resolve()
    return _moved_in(entry, lambda path: path if os.path.isabs(path)
                     else os.path.normpath(base / path))


def _moved_in(entry: dict[str, Any], move: Callable[[str], str]) -> dict[str, Any]:
    """``entry`` with each file its kernel's options name passed through ``move``."""
    options = entry.get("kernel_options")
    if not options:
        return entry
    return {**entry, "kernel_options": moved_options(entry["kernel"], options, move)}


def merged(old: TuningFile, new: list[TuningEntry], folder: Path) -> dict[str, Any]:
    """The JSON of ``old`` with ``new`` added (as a tuning file in ``folder`` keeps them,
    :func:`written_in`), each replacing an entry of the same kernel
    (:attr:`TuningEntry.name`, so one an older sweeper keyed by the kernel's
    ``module:attr`` path too) for the same problem; another kernel of the same name (a
    ``cuda`` kernel of another ``.cu`` file, one of the same name in another folder too,
    or of another entry function; a ``torch-op`` of another op) keeps its entries, but
    for a ``.cu`` file that has left the folder an entry names (:func:`_moved`)."""
    keys = {e.key for e in new}
    kept = [raw for entry, raw in zip(old.entries, old.data["entries"], strict=True)
            if entry.key not in keys and not any(_moved(entry, e) for e in new)]
    return {**old.data, "entries": kept + [written_in(e.to_json(), folder) for e in new]}


def _moved(old: TuningEntry, new: TuningEntry) -> bool:
    """Whether ``old`` is ``new``'s kernel exported from a place its files have left: a
    ``cuda`` kernel's entry for the same problem whose ``.cu`` file, of the same name and
    entry function (its other files, a reference's, of the same names too), is no longer
    where ``old`` names it (the checkout moved, or the
    tuning file came from another machine). Such an entry is replaced, where two
    ``.cu`` files present in two folders stay two kernels."""
    if old.key[1:] != new.key[1:] or old.name == new.name or old.kernel != new.kernel:
        return False
    was, now = old.kernel_options or {}, new.kernel_options or {}
    if "source" not in named_by(old.kernel) or not was.get("source") or \
            not now.get("source") or _placeless(old.kernel, was) != _placeless(old.kernel, now):
        return False
    return not Path(was["source"]).exists()


def _placeless(kernel: str, options: dict[str, str]) -> dict[str, str]:
    """``options`` with each file they name (:func:`~sweeper.kernels.moved_options`) by its
    name alone: what the same kernel's options are wherever its project lies."""
    return moved_options(kernel, options, lambda path: Path(path).name)


#: The tuning file there is before the first export.
EMPTY = TuningFile([], {"version": FORMAT_VERSION, "entries": []})


__all__ = ["DEFAULT_TUNING", "EMPTY", "FORMAT_VERSION", "LAUNCH_OPTIONS", "MAX_GRID",
           "SOURCE_HASH", "SUPPORTED_VERSIONS", "LaunchConfig", "TopConfig", "TuningEntry",
           "TuningFile", "entry_name", "entry_problem", "kernel_name", "merged", "names_kernel",
           "read_in", "read_tuning", "tuning_path", "written_in"]
