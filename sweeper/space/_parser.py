"""Read a space file into a :class:`Space`, validating everything before anything runs.

Every error is one :class:`SpaceError` that names the file, the line and the key path,
shows the bad value and says what is allowed.  One parser reads the whole file, in the
order a space is made:

- ``kernel:``: a kernel's name, or a mapping of its name and the options it declares
  (``kernel: {name: torch-op, op: torch.nn.functional.gelu}``).  An option says *which*
  computation a kernel runs, so it belongs with the kernel's name, not among the axes
  (it is never swept) nor at the top of the file (where it would mean nothing to the
  other kernels).  ``from_autotune: module:kernel`` names a kernel together with the
  configs of its ``@triton.autotune`` function, as one group of zipped axes
  (``sweeper.kernel``'s ``autotuned=`` reads them into ``autotune_params``; this reads
  that attribute only, so the space layer knows nothing of Triton).
- What sizes the problem: the kernel's declared dimensions, whether a footprint or the
  dimensions are swept, zipped axes (dimensions that move together), and the names
  expressions may read.
- The axes' values and forms (lists, ``range``, ``pow2``), their order, the constraints.
- The settings around the axes: sampler and seed, measurement, budget.  Each value is
  checked against what the code that uses it can take: a seed numpy's generators
  accept, finite positive durations a timer can be armed with, counts that fit in
  memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeper import plugins
from sweeper.core import _expr
from sweeper.core._expr import LIMIT, Expr
from sweeper.core._model import (
    CACHE_MODES,
    FACT_NAMES,
    GRID_EXTENTS,
    LAUNCH_AXES,
    MAX_CONFIGS,
    MAX_GRID_YZ,
    PROBLEM_AXES,
    Axis,
    AxisRole,
    Budget,
    Constraint,
    KernelDeclaration,
    MeasureSpec,
    Origin,
    SamplerSpec,
    Space,
    Tie,
    Value,
    dimensions,
)
from sweeper.core._names import safe_name, study_name_problem
from sweeper.core._problem import Shape, is_pow2, shape_of
from sweeper.core._units import (
    DTYPE_ALIASES,
    DTYPES,
    MAX_TRIALS,
    canonical_dtype,
    did_you_mean,
    meant_as_size,
    parse_duration,
    parse_size,
    unknown_name,
    zip_members,
)
from sweeper.errors import ExpressionError, SpaceError, SweeperError
from sweeper.escape import cut
from sweeper.space._files import (
    TOP_KEYS,
    Override,
    load_located,
    load_recorded,
    override,
    reachable,
)
from sweeper.space._yaml import LongNumber, content_sha256, load_with_lines

#: An axis's values written as a mapping of one key (``BLOCK: {pow2: [256, 4096]}``): each
#: key with the fewest and most items its list takes and how a message writes it.  The
#: parser reads a form with its ``KEY_form`` method, and the schema writes it from here.
VALUE_FORMS: dict[str, tuple[int, int, str]] = {
    "range": (2, 3, "{range: [lo, hi, step]}"), "pow2": (2, 2, "{pow2: [lo, hi]}")}
#: The keys of a conditional axis, ``{values: [...], when: "expression"}``.
CONDITIONAL_KEYS = ("values", "when")
AXIS_FORMS = ("a list of values", *(written for _, _, written in VALUE_FORMS.values()))
MAX_AXIS_VALUES = 4096
SAMPLER_KEYS = ("name", "seed", "baseline")
MAX_SEED = 2**32 - 1               # numpy's generators, under every Optuna sampler, take no more
MAX_COUNT = 1_000_000              # warmup runs, samples, launches per sample

#: Axes whose values are names, not numbers: expressions cannot read them.
TEXT_AXES = ("dtype", "cache")

#: A kernel option's value: a short string, checked by the kernel's declaration.
MAX_OPTION = 200

#: A mapping or list as an option's value (``inputs: {src: n}``), kept as its JSON text.
MAX_STRUCTURED = 2000

#: What a kernel's default for each axis a file may leave out is, as a message asks for one.
_DEFAULT_OF = {"grid": "the programs launched: an expression over its dimensions and "
                       "meta-parameters, such as \"cdiv(n, BLOCK)\"",
               "block": "threads per program, such as 128",
               "dtype": "a dtype, such as \"float32\""}

#: The group of zipped axes ``from_autotune:`` adds to ``params``: one row per config.
AUTOTUNE_GROUP = "autotune"


def load_space(path: str | Path, overrides: Sequence[str | Override] = (), *,
               allow: Sequence[str | Path] = (), user_code: bool = True,
               text: str | None = None, lines: bool = True) -> Space:
    """Read and validate the space file at ``path`` (following ``extends:`` within its
    folder and the folders in ``allow``), with ``overrides`` such as ``BLOCK=1024,2048``
    replacing axes (the CLI's ``-p``).  ``user_code=False`` imports no plugin that is not
    built in: a user kernel's meta-parameters are taken from the space as written, and a
    user sampler's baseline, unchecked.  ``text``: the YAML itself, ``path`` its name
    (``<string>``, ``<dict>``): without ``study:`` such a space's study is named after its
    kernel, as ``--from-autotune``'s is, where a file's is named after the file.
    ``lines=False``: ``text`` has no lines of its own (a dict dumped to YAML), so its
    errors, and messages pointing into it, give the key path only, never a line of
    YAML the caller never wrote (a file it extends keeps its lines)."""
    if not str(path).strip():          # Path("") is the current folder: say what was given
        raise SpaceError("no space file named (an empty path); give a space file's path, "
                         "such as spaces/copy.yaml", file="''")
    data, where, read = load_located(Path(path), (), reachable(Path(path), allow), text)
    if not lines:
        where = {k: (f, None if f == str(path) else n) for k, (f, n) in where.items()}
    default = safe_name(Path(path).stem) if text is None else _kernel_study(data)
    return _Parser(str(path), where, user_code).space(data, read, default, overrides)


def _kernel_study(data: Any) -> str:
    """The study a space without a file is named after: its kernel's name (the attribute
    of a ``module:attr``), ``study`` where it names none."""
    kernel = data.get("kernel", data.get("from_autotune")) if isinstance(data, dict) else None
    if isinstance(kernel, dict):
        kernel = kernel.get("name")
    return safe_name(kernel.rpartition(":")[2]) if isinstance(kernel, str) else "study"


def autotune_space(target: str, overrides: Sequence[str | Override] = (),
                   user_code: bool = True) -> Space:
    """The space ``sweeper run --from-autotune TARGET`` runs: as a file holding
    ``from_autotune: TARGET`` and ``sampler: exhaustive`` (every listed config, as Triton's
    autotuner runs them), its study named after the kernel's attribute; ``overrides``
    are ``-p``'s; ``user_code=False``: as :func:`load_space`'s (``plan``: the module's
    source read, not imported).  Errors name ``--from-autotune TARGET``."""
    file = f"--from-autotune {target}"
    if plugins.PATH.fullmatch(target) is None:
        raise SpaceError(f"{target!r} is not package.module:attr (the sweeper.kernel that "
                         "names the autotuned function)", file="--from-autotune")
    study = target.rpartition(":")[2]
    text = f"study: {study}\nfrom_autotune: {json.dumps(target)}\nsampler: exhaustive\n"
    data, lines = load_with_lines(text, file)
    return _Parser(file, {k: (file, None) for k in lines}, user_code=user_code).space(
        data, text, study, overrides)


def parse_space(text: str, *, file: str = "<space>", default_study: str = "study",
                user_code: bool = True, folder: str | Path | None = None,
                overrides: Sequence[str | Override] = (),
                autotune: Mapping[str, Sequence[int]] | None = None) -> Space:
    """The space in YAML ``text`` (called ``file`` in errors), checked as a file is; a
    text a study recorded of a file with ``extends:`` is read merged, as it was
    (:func:`~sweeper.space._files.load_recorded`).  ``user_code=False``: as
    :func:`load_space`'s, no plugin that is not built in is imported.  ``folder``: where
    its relative file names are read from (a study's recorded ``space_folder``), else
    ``file``'s folder, from the working folder where ``file`` is relative;
    ``overrides``: as :func:`load_space`'s (the axes a run's ``-p`` replaced);
    ``autotune``: the ``from_autotune:`` configs as a study ran them (axis -> one value
    per config), for a reading without user code where the source does not show them
    (a function builds them)."""
    data, where = override(*load_recorded(text, file, folder), overrides)
    return _Parser(file, where, user_code, folder, autotune).space(data, text, default_study)


def recorded_kernel_options(text: str, *, file: str = "<space>",
                            folder: str | Path | None = None
                            ) -> tuple[tuple[str, str], ...]:
    """The options the space in YAML ``text`` (called ``file``) gives its kernel, as
    :func:`parse_space` reads them (a relative file resolved against ``folder``, else
    ``file``'s folder; a declared default standing in for an option not given), but not
    checked against
    what is there now: the space a study recorded names the ``.cu`` file it ran, which
    may have been moved or deleted since, and its options still say which kernel the
    study measured.  ``()`` for a kernel named without options; a
    :class:`~sweeper.errors.SpaceError` where the text names no kernel, or options it
    does not declare.  No user code is imported."""
    data, where = load_recorded(text, file, folder)
    parser = _Parser(file, where, user_code=False, folder=folder)
    value = data.get("kernel") if isinstance(data, dict) else None
    if value is None:
        raise parser.error("", "missing key 'kernel'; give a built-in name or module:attr")
    return parser.named(value, None, checked=False)[2]


class _Parser:
    """One space file's reading: its file name, where each key path was written
    (``where``), and what the reading has learnt so far (the kernel's declaration and
    problem shape, zipped axes)."""

    shape: Shape
    #: the kernel's declaration, once the file names it (:meth:`declared`)
    kernel_cls: type[KernelDeclaration]
    #: the kernel as the file names it (``module:attr``, a built-in's or a plugin's name):
    #: what messages call it, so that ``plan``, which reads a user kernel's source, and
    #: ``run``, which imports it, say the same, and a fix they suggest reads as the file
    #: must (``kernel: {name: ...}``), never by the ``name`` its class declares
    kernel_name: str

    def __init__(self, file: str, where: Mapping[str, tuple[str, int | None]],
                 user_code: bool = True, folder: str | Path | None = None,
                 autotune: Mapping[str, Sequence[int]] | None = None) -> None:
        self.file = file
        #: the ``from_autotune:`` configs a study ran, where its source does not show them
        self.autotune_ran = autotune
        #: where the relative file names written in ``file`` itself are read from: resolved,
        #: so that a study records no ``..`` through the folder its command ran in
        #: (``../y/spaces``), which may be gone when the study is read from another
        self.folder = Path(folder) if folder else Path(file).parent.resolve()
        self.where = dict(where)
        #: Off: no plugin that is not built in is imported (``sweeper plan``).
        self.user_code = user_code
        self.conditions: list[tuple[str, str, str]] = []    # axis, condition, path
        #: an axis left out of params whose default a kernel option wrote
        #: (``params.grid`` -> ``kernel.grid``): its errors point at that option
        self.from_option: dict[str, str] = {}
        #: an axis left out of params that the kernel's own default stands in for, and
        #: that default: its errors are the kernel's (:meth:`at_kernel_default`)
        self.defaulted: dict[str, Any] = {}
        self.ties: list[Tie] = []
        #: per axis, the axes its values' expressions read, and the names derived from
        #: the problem's sizes (``n`` from a footprint; :meth:`order` fills both)
        self.reads: dict[str, set[str]] = {}
        self.derived: set[str] = set()

    def names_known(self, expr: Expr, path: str, known: Sequence[str]) -> None:
        """Refuse ``expr`` unless every name it reads is in ``known``: the error names the
        first that is not."""
        unknown = unknown_name(expr, known, kept=self.kernel_cls.launch_shape.extent_names)
        if unknown is not None:
            raise self.error(path, unknown)

    def origin(self, path: str) -> Origin:
        """Where ``path`` was written: its own line, else its nearest parent's (an axis's
        default, at the kernel option that wrote it)."""
        path = self.from_option.get(path.partition("[")[0], path)
        found = self.where.get(path)
        parent = path
        while found is None and parent:
            parent = parent[:parent.rindex("[")] if parent.endswith("]") else \
                parent.rpartition(".")[0]
            found = self.where.get(parent)
        file, line = found if found is not None else (self.file, None)
        return Origin(file=file, line=line, path=cut(path, 80))

    def error(self, path: str, message: str) -> SpaceError:
        o = self.origin(path)
        return SpaceError(message, file=o.file, line=o.line, path=o.path)

    def keys(self, data: Any, path: str, known: tuple[str, ...],
             hints: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``data``, a mapping of no keys but ``known``; an unknown key is refused with the
        known ones and a hint: ``hints``' for that key, else the known key it is close to."""
        if not isinstance(data, dict):
            what = path or "the file"
            raise self.error(path, f"{what} must be a mapping of keys, got {_kind(data)}")
        for key in data:
            if key not in known:
                hint = (hints or {}).get(str(key)) or did_you_mean(str(key), known)
                if not path and (key in (*LAUNCH_AXES, *PROBLEM_AXES) or
                                 (isinstance(key, str) and key.isupper())):
                    hint = (f"; {key} looks like an axis: an axis's values go under params "
                            f"(params: {{{key}: [...]}})")
                if path == "params" and key == "num_warps" and "block" in known:
                    hint = ("; num_warps is swept as block, threads per program (num_warps "
                            "× 32): block: [128] for num_warps=4")
                raise self.error(f"{path}.{key}" if path else key,
                                 f"unknown key {shown(key)}; known: {', '.join(known)}{hint}")
        return data

    # -- the whole file ---------------------------------------------------------------
    def space(self, data: Any, text: str, default_study: str,
              overrides: Sequence[str | Override] = ()) -> Space:
        """The space ``data`` describes (read from ``text``) with ``overrides`` (``-p``)
        applied; its ``content_sha256`` is the hash of what the files say, before them
        (:func:`~sweeper.space._yaml.content_sha256`), its ``applied_sha256`` the same
        hash with them applied."""
        content = content_sha256(data)
        data, self.where = override(data, self.where, overrides)
        applied = content_sha256(data) if overrides else content
        data = self.keys(data, "", TOP_KEYS)
        study = data.get("study", default_study)
        if study_name_problem(study):
            raise self.error("study", str(study_name_problem(study)))
        # the key that names the kernel, where its declaration's errors point
        named_by = "from_autotune" if "from_autotune" in data else "kernel"
        if "from_autotune" in data:
            data = self.from_autotune(data)
        if "kernel" not in data:
            raise self.error("", "missing key 'kernel'; give a built-in name or module:attr")
        kernel_name, options = self.declared(data["kernel"], data.get("params"), named_by)
        if "params" not in data:
            raise self.error("", "missing key 'params'; it lists the axes to sweep")
        measure, cache_modes = self.measure(data.get("measure", {}))
        axes = self.axes(data["params"], cache_modes)
        self.one_cache(data.get("measure"), axes, cache_modes)
        self.size(axes)
        self.fits_kernel(axes)
        order = self.order(axes)
        constraints = self.constraints(data.get("constraints", []), axes)
        sampler = self.sampler(data.get("sampler", "auto"), data.get("seed", 0), axes,
                               top_seed="seed" in data)
        budget = Budget(**self.settings(data.get("budget", {}), "budget", BUDGET))
        return Space(
            study=study, kernel=kernel_name, kernel_options=options, sampler=sampler,
            axes=tuple(axes), order=order, constraints=constraints, measure=measure,
            ties=tuple(self.ties), shape=self.shape, budget=budget,
            launch_shape=self.kernel_cls.launch_shape,
            path=self.file, folder=str(self.folder), text=text,
            sha256=hashlib.sha256(text.encode()).hexdigest(), content_sha256=content,
            applied_sha256=applied)

    def kernel(self, name: Any, params: Any, path: str = "kernel") -> type[KernelDeclaration]:
        """The class declaring the kernel's meta-parameters and defaults, from the plugin
        registry; with ``user_code`` off a user kernel is not imported: a stand-in declares
        the meta-parameters ``params`` names.  Errors point at ``path``."""
        if not isinstance(name, str) or len(name) > 200:
            raise self.error(path, f"{shown(name)} is not a kernel name (a built-in name, "
                             "an installed plugin's or module:attr, at most 200 characters)")
        try:
            if not self.user_code:        # not imported, but refused where run would be
                plugins.refuse_missing_module(plugins.KERNEL, name)
            return plugins.kernel_declaration(name, user_code=self.user_code, params=params)
        except SweeperError as err:
            # what from_autotune: names is not found or no kernel: say what it must name;
            # not where the user's module raised while imported (a config its declaration
            # refused, which names that declaration, its line maybe cut before autotuned=)
            cause = err.__cause__
            hint = "; from_autotune: names the sweeper.kernel(..., autotuned=...) that " \
                "launches the @triton.autotune function" if path == "from_autotune" and \
                "autotuned=" not in str(err) and (
                    cause is None or isinstance(cause, (ImportError, AttributeError))) else ""
            raise self.error(path, f"{err}{hint}") from None

    # -- axes ----------------------------------------------------------------------------
    def axes(self, params: Any, modes: list[str]) -> list[Axis]:
        """The axes ``params`` gives and those the kernel's defaults stand in for: the
        launch's (the grid beyond x, ``grid_y`` and ``grid_z``, only where the kernel's
        launch takes it and the file or a kernel option gives it), the problem's and the
        meta-parameters."""
        kernel = self.kernel_cls
        meta = dict(kernel.meta_params)
        dims = self.shape.names
        grids = tuple(g for g in kernel.launch_shape.grids if g not in meta)
        known = (LAUNCH_AXES[0], *grids, *LAUNCH_AXES[1:], *PROBLEM_AXES, *dims, *meta)
        params = self.zipped(params, known)
        # a group's name is a key too: listed, and suggested for a misspelling of it
        params = self.keys(params, "params", (*known, *(t.name for t in self.ties)))
        sizes = self.sized_by(params)
        axes = []
        for name in known:
            if name in ("footprint", *dims) and name not in sizes:
                continue
            if name in grids and name not in params and name not in kernel.defaults:
                continue                        # 1, as a 1-D launch's
            path = f"params.{name}"
            if name in params:
                raw = self.expand(name, params[name], path)
            elif name == "cache":
                raw = modes
            elif name in dims:
                raw = [self.shape.dim(name).default]
            else:
                raw = [meta[name].default if name in meta else self.kernel_default(name)]
                if f"kernel.{name}" in self.where:
                    self.from_option[path] = f"kernel.{name}"
                else:
                    self.defaulted[name] = raw[0]
            role = (AxisRole.LAUNCH if name in (*LAUNCH_AXES, *grids) else
                    AxisRole.PROBLEM if name in (*PROBLEM_AXES, *dims) else AxisRole.META)
            with self.at_kernel_default(name):
                values = self.checked_values(name, raw, path)
            axes.append(Axis(name=name, role=role, values=values, origin=self.origin(path)))
        return axes

    def kernel_default(self, name: str) -> Any:
        """The kernel's default for axis ``name``, which the file leaves out: its class's
        ``defaults`` must give it, as nothing else can stand in for it (the base Kernel's
        are replaced whole by a class that sets its own); one its source, read unimported,
        does not show (an ``autotuned=``'s first config's warps) is named with why."""
        defaults = self.kernel_cls.defaults
        unread = getattr(self.kernel_cls, "unread", ())
        if name not in defaults and unread:
            raise self.error("kernel", f"kernel {self.kernel_name}'s default {name} could not "
                             f"be read from its source ({'; '.join(unread)}), and the file "
                             f"gives no params.{name}; allowed: params.{name}")
        if name not in defaults:
            raise self.error("kernel", f"kernel {self.kernel_name}'s class gives no default "
                             f"{name} (its defaults: {', '.join(defaults) or 'none'}), and "
                             f"the file no params.{name}; allowed: {name!r} in the class's "
                             f"defaults ({_DEFAULT_OF[name]}), or params.{name}")
        return defaults[name]

    @contextlib.contextmanager
    def at_kernel_default(self, name: str) -> Iterator[None]:
        """An error about axis ``name``, where the file leaves it out and the kernel's
        default stands in for it, raised at the kernel, saying whose default it is (the
        base Kernel's where the kernel's class sets no ``defaults``, or its source could not
        be read, unimported) and what to change: that class's ``defaults``, which every
        space of the kernel reads, or the file's ``params``, not at a ``params.NAME`` the
        file does not hold."""
        try:
            yield
        except SpaceError as err:
            if name not in self.defaulted:
                raise
            kernel, value = self.kernel_name, shown(self.defaulted[name])
            unread = getattr(self.kernel_cls, "unread", ())
            if not plugins.inherits_defaults(self.kernel_cls):
                raise self.error("kernel", f"kernel {kernel}'s default {name} {value}, "
                                 f"standing in for params.{name}, is refused (change "
                                 f"{name!r} in its class's defaults, or give params.{name}): "
                                 f"{err.message}") from None
            inherits = "" if unread else f", which kernel {kernel} inherits (its class " \
                "sets no defaults)"
            why = (f" (kernel {kernel}'s own could not be read from its source: "
                   f"{'; '.join(unread)})" if unread else "")
            raise self.error("kernel", f"the base Kernel's default {name} {value}{inherits}, "
                             f"standing in for params.{name}{why}, is refused (give the class a "
                             f"default {name} of its own: defaults = {{**Kernel.defaults, "
                             f"{name!r}: ...}}; or give params.{name}): {err.message}"
                             ) from None

    def checked_values(self, name: str, raw: list[Any], path: str) -> tuple[Value, ...]:
        """Axis ``name``'s values ``raw`` read and checked: each once, each one the axis
        may take (:meth:`refusal`)."""
        values = tuple(self.value(name, v, f"{path}[{i}]") for i, v in enumerate(raw))
        labels = [v.label for v in values]
        dup = next((lb for lb in labels if labels.count(lb) > 1), None)
        if dup is not None:
            raise self.error(path, f"value {shown(dup)} appears twice")
        # two spellings of one constant (16KiB and 16384, 2*128 and 256) are one config
        # measured twice under two labels
        first: dict[object, Value] = {}
        for i, v in enumerate(values):
            if v.constant is None:
                continue
            if v.constant in first:
                raise self.error(f"{path}[{i}]", f"{shown(v.label)} is "
                                 f"{shown(first[v.constant].label)} again (both "
                                 f"{v.constant}); allowed: each value once")
            first[v.constant] = v
        for i, v in enumerate(values):
            refusal = self.refusal(name, v.constant) if isinstance(v.constant, int) else None
            if refusal is not None:
                raise self.error(f"{path}[{i}]", refusal)
        return values

    def fits_kernel(self, axes: list[Axis]) -> None:
        """The kernel's declaration checked against the axes' constant values, each
        dtype's ``itemsize`` and the dtypes' names (``Kernel.values_problem``: each
        setting of a declared model must be at least its least at each), its error at the
        option it names, or at the axis (``params.NAME``) whose values it refuses."""
        values: dict[str, list[int | str]] = {
            a.name: [v.constant for v in a.values if type(v.constant) is int]
            for a in axes if a.name not in TEXT_AXES}
        dtypes = [str(v.constant) for a in axes if a.name == "dtype" for v in a.values]
        values["itemsize"] = sorted({DTYPES[d] for d in dtypes})
        values["dtype"] = list(dtypes)
        problem = self.kernel_cls.values_problem(values)
        if problem is None:
            return
        key, message = problem
        axis = next((a for a in axes if key == f"params.{a.name}"), None)
        if axis is not None:                    # an axis: where it was written, zipped too
            o = axis.origin
            raise SpaceError(message, file=o.file, line=o.line, path=o.path)
        raise self.error(key if key.startswith("params.") else f"kernel.{key}", message)

    def size(self, axes: list[Axis]) -> None:
        """Refuse a space of more than :data:`MAX_CONFIGS` configs, counted before any is
        built, at the line of its largest dimension (zipped axes are one)."""
        dims = {name: len(labels) for name, labels in dimensions(axes, self.ties).items()}
        total = math.prod(dims.values())
        if total > MAX_CONFIGS:
            largest = max(dims, key=dims.__getitem__)
            path = f"params.{largest}" + (".zip" if largest not in {a.name for a in axes}
                                          else "")
            shown = " × ".join(f"{n} {k}" for k, n in dims.items() if n > 1)
            raise self.error(path, f"the space has {total} configs ({shown}); at most "
                             f"{MAX_CONFIGS}: give this axis ({dims[largest]} values) or "
                             "another fewer values")

    def expand(self, name: str, raw: Any, path: str, conditional: bool = True) -> list[Any]:
        """The values of axis ``name`` that ``raw`` lists, a form of :data:`VALUE_FORMS`
        makes, or a conditional axis's ``values:`` gives (its ``when:`` kept; with
        ``conditional`` off, ``raw`` is those values); a key that is none of them is refused
        with every key the mapping takes."""
        if not isinstance(raw, dict):
            values: list[Any] = raw if isinstance(raw, list) else [raw]
            if not values:
                raise self.error(path, f"empty axis; allowed: {'; '.join(AXIS_FORMS)}")
            self.capped(len(values), path)
            return values
        if conditional and "when" in raw:
            spec = self.keys(raw, path, CONDITIONAL_KEYS)
            if "values" not in spec or not isinstance(spec["when"], str):
                raise self.error(path, "a conditional axis is {values: [...], when: "
                                 "\"expression\"}")
            if name in TEXT_AXES:
                raise self.error(path, f"{name} cannot be conditional; only numeric axes")
            self.conditions.append((name, spec["when"], f"{path}.when"))
            return self.expand(name, spec["values"], f"{path}.values", conditional=False)
        if name in TEXT_AXES:      # range and pow2 make numbers
            names = ", ".join(("float32", "bfloat16") if name == "dtype" else CACHE_MODES)
            raise self.error(path, f"{name} takes a list of names, not a mapping; allowed: "
                             f"a name or a list of them, such as [{names}]")
        forms: dict[str, Callable[[Any, str], list[int]]] = {
            key: getattr(self, f"{key}_form") for key in VALUE_FORMS}
        if "values" in raw and conditional:
            listed = raw["values"] if isinstance(raw["values"], list) else [256, 512]
            raise self.error(f"{path}.values", "values: belongs to a conditional axis, "
                             "{values: [...], when: \"expression\"}; give when:, or the "
                             f"values as a list ({shown(listed)})")
        known = (*forms, *CONDITIONAL_KEYS) if conditional else tuple(forms)
        raw = self.keys(raw, path, known, {"step": "; a range's step is its third item: "
                                           f"{VALUE_FORMS['range'][2]}"})
        if len(raw) != 1:
            raise self.error(path, f"give exactly one of {', '.join(forms)}")
        (form, args), = raw.items()
        return forms[form](args, f"{path}.{form}")

    def range_form(self, args: Any, path: str) -> list[int]:
        if not (isinstance(args, list) and len(args) in (2, 3) and all(
                type(a) is int for a in args)):
            raise self.error(path, f"{shown(args)} is not [lo, hi] or [lo, hi, step] of "
                             "integers")
        lo, hi, step = (*args, 1) if len(args) == 2 else args
        if step <= 0 or lo > hi:
            raise self.error(path, f"range needs lo <= hi and step > 0, got lo={shown(lo)}, "
                             f"hi={shown(hi)}, step={shown(step)}")
        self.capped((hi - lo) // step + 1, path)       # counted before any value is built
        self.bounded(hi, path)
        return list(range(lo, hi + 1, step))

    def pow2_form(self, args: Any, path: str) -> list[int]:
        if not (isinstance(args, list) and len(args) == 2):
            raise self.error(path, f"{shown(args)} is not [lo, hi]")
        lo, hi = (self.integer(a, path) for a in args)
        for bound in (lo, hi):
            if not is_pow2(bound):
                raise self.error(path, f"{shown(bound)} is not a power of two; allowed: a "
                                 f"power of two at each end{_powers_near(bound)}")
        if lo > hi:
            raise self.error(path, f"pow2 needs lo <= hi, got lo={shown(lo)}, hi={shown(hi)}")
        self.capped(hi.bit_length() - lo.bit_length() + 1, path)
        self.bounded(hi, path)
        return [1 << k for k in range(lo.bit_length() - 1, hi.bit_length())]

    def capped(self, count: int, path: str) -> None:
        if count > MAX_AXIS_VALUES:
            raise self.error(path, f"{count} values; at most {MAX_AXIS_VALUES} per axis")

    def bounded(self, value: int | LongNumber, path: str) -> None:
        """Refuse ``value`` beyond 2**62, and a number too long to be read as one."""
        if isinstance(value, LongNumber) or not -LIMIT <= value <= LIMIT:
            raise self.error(path, f"{shown(value)} is too large; values are at most 2**62 "
                             f"({LIMIT})")

    def integer(self, raw: Any, path: str) -> int:
        if type(raw) is int:
            return raw
        if isinstance(raw, str):
            try:
                return parse_size(raw)
            except ValueError as err:
                raise self.error(path, str(err)) from None
        raise self.error(path, f"{shown(raw)} is not an integer or a size")

    def value(self, axis: str, raw: Any, path: str) -> Value:
        """The value ``raw`` of ``axis``, written at ``path``: a cache mode, a dtype, or an
        integer, a size or an expression; one that reads no name is a constant, positive
        (unless the axis's least value is below 1) and within 2**62."""
        if axis == "cache":
            if raw not in CACHE_MODES:
                raise self.error(path, f"{shown(raw)} is not a cache mode; allowed: "
                                 f"{', '.join(CACHE_MODES)}")
            return Value(label=raw, constant=raw)
        if axis == "dtype":
            name = self.dtype_name(raw, path)
            return Value(label=name, constant=name)
        if type(raw) is not int and not isinstance(raw, str):
            raise self.error(path, f"{shown(raw)} is not an integer, a size or an expression")
        if isinstance(raw, LongNumber):         # more digits than int() reads
            self.bounded(raw, path)
        origin, label = self.origin(path), str(raw)
        try:
            constant = raw if type(raw) is int else parse_size(label)
        except ValueError as not_size:
            if meant_as_size(label):            # 16KB: the units a size may have
                raise self.error(path, str(not_size)) from None
            try:
                expr = _expr.parse(label)
            except ExpressionError as err:
                raise self.error(path, f"{err}{_split_at_a_comma(label)}") from None
            if expr.names:
                return Value(label=label, expr=expr, origin=origin)
            try:
                constant = int(_expr.evaluate(expr, {}))
            except ExpressionError as err:
                raise self.error(path, f"{err}; allowed: an expression that gives a positive "
                                 "integer") from None
        # a dimension declaring a minimum below 1 (0 for a flag) has its limits checked later
        if constant <= 0 and self.lowest(axis) >= 1:
            # a meta-parameter whose default is 0 (a switch declared as a plain int, as
            # sweeper.kernel's meta={"EVEN": 0}) takes 0 once the kernel says it may
            declared = self.kernel_cls.meta_params.get(axis)
            switch = f"; a meta-parameter that may be {constant} declares its values " \
                f"(MetaParam(default={declared.default}, choices=(0, 1)))" \
                if declared is not None and declared.default <= 0 else ""
            raise self.error(path, f"{label[:40]} must be positive; allowed: "
                             f"{self.positive(axis)}{switch}")
        self.bounded(constant, path)
        return Value(label=label, constant=constant, origin=origin)

    def order(self, axes: list[Axis]) -> tuple[str, ...]:
        """Axis names in an order where each expression's names come first."""
        axis_names = {a.name for a in axes} - set(TEXT_AXES)
        known = self.known_names(axes)
        grid_known = self.grid_names(known)
        sizes = {a.name for a in axes if a.name in ("footprint", *self.shape.names)}
        derived = set(known) - axis_names - set(FACT_NAMES[:2]) - {"itemsize"}
        deps: dict[str, set[str]] = {name: set() for name in TEXT_AXES}
        for a in axes:
            deps[a.name] = set()
            for i, v in enumerate(a.values):
                if v.expr is None:
                    continue
                with self.at_kernel_default(a.name):
                    self.names_known(v.expr, f"params.{a.name}[{i}]", grid_known if
                                     a.name in ("grid", *GRID_EXTENTS) else known)
                reads = set(v.expr.names)
                if reads & derived or (a.name not in sizes and reads & sizes):
                    reads |= sizes | {"dtype"}     # the problem is made from all its sizes
                deps[a.name] |= reads & axis_names
        for name in sizes:
            deps[name] |= {"dtype"}
        self.reads, self.derived = deps, derived
        done: list[str] = []
        while len(done) < len(deps):
            ready = [n for n in deps if n not in done and deps[n] <= set(done)]
            if not ready:
                stuck = sorted(n for n in deps if n not in done)
                own = next((n for n in stuck if n in deps[n]), None)
                if own is not None:
                    raise self.error(f"params.{own}", f"{own}'s values read {own} itself; an "
                                     "axis's expression reads the other axes, the dimensions "
                                     "and the device's facts")
                raise self.error(f"params.{stuck[0]}", "the values depend on each other in a "
                                 f"cycle among {', '.join(stuck)}; break it")
            done.extend(sorted(ready, key=[a.name for a in axes].index))
        return tuple(done)

    # -- the rest -------------------------------------------------------------------------
    def constraints(self, raw: Any, axes: list[Axis]) -> tuple[Constraint, ...]:
        if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
            raise self.error("constraints", f"{shown(raw)} is not a list of expressions "
                             "(e.g. [\"BLOCK >= block\"])")
        known = self.known_names(axes)
        first = {a.name: a.values[0].label for a in axes}
        sources: list[tuple[str, str, str, tuple[str, str] | None]] = [
            (f"constraints[{i}]", text, text, None) for i, text in enumerate(raw)]
        sources += [(path, when, f"({when}) or {axis} == ({first[axis]})", (axis, when))
                    for axis, when, path in self.conditions]
        out = []
        for path, text, full, condition_of in sources:
            try:
                parsed = _expr.parse(text, "truth")
                self.names_known(parsed, path, known)
                expr = _expr.parse(full, "truth")
            except ExpressionError as err:
                raise self.error(path, f"{err}{_split_at_a_comma(text)}") from None
            if condition_of is not None:
                self.reads_other_axes(condition_of[0], parsed, path)
            out.append(Constraint(expr=expr, origin=self.origin(path),
                                  condition_of=condition_of))
        return tuple(out)

    def reads_other_axes(self, axis: str, condition: Expr, path: str) -> None:
        """Refuse ``axis``'s ``when:`` condition where it reads ``axis``, itself or through
        an axis whose values are computed from it: whether an axis varies cannot depend
        on the value it takes (``BLOCK > 64`` only rules out values, a constraint's job)."""
        def computed_from(name: str) -> bool:
            seen, todo = set(), [name]
            while todo:
                for read in self.reads.get(todo.pop(), ()):
                    if read == axis:
                        return True
                    if read not in seen:
                        seen.add(read)
                        todo.append(read)
            return False

        if axis in condition.names:
            raise self.error(path, f"when: of {axis} reads {axis} itself; a condition reads "
                             f"other axes (to rule out some of {axis}'s values, give a "
                             f"constraint: constraints: [{shown(condition.text)}])")
        sizes = {"footprint", *self.shape.names}
        via = sorted(n for n in condition.names if computed_from(n) or
                     (n in self.derived and axis in sizes))   # n read from a footprint axis
        if via:
            raise self.error(path, f"when: of {axis} reads {via[0]}, which is "
                             f"computed from {axis}; a condition reads axes that do not "
                             f"depend on {axis} (to rule out some of {axis}'s values, give "
                             f"a constraint: constraints: [{shown(condition.text)}])")

    def sampler(self, value: Any, seed: Any, axes: list[Axis], top_seed: bool = False
                ) -> SamplerSpec:
        """The ``sampler:`` setting (a name, or a mapping with ``name``, ``seed`` and
        ``baseline``) with the top-level ``seed`` (``top_seed``: the file gives one),
        checked: a sampler that is registered, one seed from 0 to ``MAX_SEED`` (two that
        differ are refused: one would be dropped unsaid), and a baseline only for a sampler
        that takes one, each of its values one of the axis's; an unnamed axis's baseline
        is its middle value."""
        path, baseline, seed_path = "sampler", {}, "seed"
        if isinstance(value, dict):
            value = self.keys(value, path, SAMPLER_KEYS)
            seed_path = "sampler.seed" if "seed" in value else seed_path
            if top_seed and "seed" in value and value["seed"] != seed:
                raise self.error("sampler.seed", f"the seed is given twice, {shown(seed)} at "
                                 f"the top level and {shown(value['seed'])} here; give one")
            seed = value.get("seed", seed)
            baseline = value.get("baseline", {})
            path, value = "sampler.name", value.get("name", "auto")
        if not isinstance(value, str):        # a list, a number: no name to look up
            mapping = " or {name: ..., seed: ..., baseline: ...}" if path == "sampler" else ""
            raise self.error(path, f"{shown(value)} is not a sampler; give a name{mapping}; "
                             f"known names: {plugins.known(plugins.SAMPLER)}")
        if len(value) > 200:
            raise self.error(path, f"unknown sampler {shown(value)}; known: "
                             f"{plugins.known(plugins.SAMPLER)}")
        takes_baseline = self.takes_baseline(value, path, bool(baseline))
        if type(seed) is not int or not 0 <= seed <= MAX_SEED:
            raise self.error(seed_path, f"seed must be an integer from 0 to {MAX_SEED} "
                f"(2**32 - 1), got {shown(seed)}")
        if baseline and not takes_baseline:
            takers = [n for n in plugins.SAMPLER.builtins
                      if plugins.sampler_capabilities(n).takes_baseline]
            raise self.error("sampler.baseline", f"a baseline belongs to the "
                             f"{', '.join(takers)} sampler; {value} takes none")
        base = self.keys(baseline, "sampler.baseline", tuple(a.name for a in axes))
        chosen = []
        for a in axes:
            label = str(base.get(a.name, a.labels[(len(a.labels) - 1) // 2]))
            if label not in a.labels:
                # an axis -p replaced: the file's own list holds the value, so say who cut it
                origin, line = self.where.get(f"params.{a.name}", (self.file, 0))
                by = f" (the axis as {origin} gives it)" if line is None and \
                    origin != self.file else ""
                raise self.error(f"sampler.baseline.{a.name}", f"{shown(label)} is not a value of "
                                 f"the axis; allowed: {', '.join(a.labels)}{by}")
            chosen.append((a.name, label))
        return SamplerSpec(name=value, seed=seed, baseline=tuple(
            self.baseline_rows(chosen, base)) if takes_baseline else ())

    def baseline_rows(self, chosen: list[tuple[str, str]], given: Mapping[str, Any]
                      ) -> list[tuple[str, str]]:
        """``chosen`` with each group of zipped axes at one of its rows: the middle one of
        the rows that hold the members the baseline names (all rows where it names none),
        as an axis left out sits at its middle value; each member's own middle value need
        not make a row.  Members named that no row holds are an error at
        ``sampler.baseline`` listing the rows."""
        values = dict(chosen)
        for tie in self.ties:
            named = {m: str(given[m]) for m in tie.members if m in given}
            rows = [r for r in tie.rows
                    if all(v == named.get(m, v) for m, v in zip(tie.members, r, strict=True))]
            if not rows:
                given_text = ", ".join(f"{m}={v}" for m, v in named.items())
                raise self.error("sampler.baseline", f"{given_text} is no row of the zipped "
                                 f"{tie.name}; allowed rows: "
                                 f"{'; '.join(tie.label(r) for r in tie.rows)}")
            values.update(zip(tie.members, rows[(len(rows) - 1) // 2], strict=True))
        return list(values.items())

    def takes_baseline(self, name: str, path: str, given: bool) -> bool:
        """Whether sampler ``name`` declares a baseline; an unknown sampler is an error at
        ``path``.  With ``user_code`` off, a sampler that is not built in is not imported:
        it takes a baseline if the file gives one."""
        try:
            found = plugins.find(plugins.SAMPLER, name)
            if not (found.builtin or self.user_code):
                plugins.refuse_missing_module(plugins.SAMPLER, name)
                return given
            return plugins.sampler_capabilities(name).takes_baseline
        except SweeperError as err:
            raise self.error(path, str(err)) from None

    def settings(self, raw: Any, path: str, table: Mapping[str, Setting]) -> dict[str, Any]:
        """The ``path:`` mapping's keys read by their :class:`Setting` in ``table``, by the
        field each sets; the first value in the file that is wrong is the error."""
        read = {}
        for key, value in self.keys(raw, path, tuple(table)).items():
            setting = table[key]
            try:
                read[setting.field or key] = setting.read(value)
            except ValueError as err:
                message, *inside = err.args
                raise self.error(".".join((path, key, *inside)), message) from None
        return read

    def measure(self, raw: Any) -> tuple[MeasureSpec, list[str]]:
        """The measurement settings, and the cache modes the ``cache`` axis defaults to."""
        fields = self.settings(raw, "measure", MEASURE)
        cache = fields.pop("cache", "cold")
        said = "stop" in fields
        fields.setdefault("stop", "fixed" if "repeat" in fields else MeasureSpec.stop)
        adaptive = [k for k in ("target", "min_samples", "min_time", "max_time")
                    if (MEASURE[k].field or k) in fields]
        if fields["stop"] == "fixed" and adaptive:   # read by the adaptive rules only:
            raise self.error(                        # it would go unread, unsaid
                f"measure.{adaptive[0]}", "only the adaptive rules (stop: ci or stdrel) "
                "read it, and " + ("stop: fixed takes exactly repeat samples; allowed: stop: "
                                   f"ci or stdrel, or fixed without {adaptive[0]}" if said else
                                   "with repeat given and no stop the rule is fixed (exactly "
                                   "repeat samples); allowed: stop: ci or stdrel beside it, "
                                   "or repeat alone"))
        if "duty" in fields:
            fields["duty"], fields["duty_s"] = fields["duty"]
        return MeasureSpec(**fields), list(CACHE_MODES) if cache == "both" else [cache]

    def one_cache(self, measure: Any, axes: list[Axis], modes: list[str]) -> None:
        """``measure.cache`` beside a ``params.cache`` the files write (``-p cache=...``
        is this run's and wins) must say the same: the axis decides, so a
        ``measure.cache`` that says otherwise would go unread, unsaid."""
        written = self.where.get("params.cache")
        if not (isinstance(measure, dict) and "cache" in measure and written is not None
                and written[1] is not None):
            return
        axis = next(a for a in axes if a.name == "cache")
        labels = [v.label for v in axis.values]
        if set(labels) != set(modes):
            raise self.error("measure.cache", f"{shown(measure['cache'])} contradicts "
                             f"params.cache ({', '.join(labels)}, at "
                             f"{written[0]}:{written[1]}), the cache axis it would set; "
                             "allowed: one of them, or both saying the same")

    def declared(self, value: Any, params: Any, named_by: str = "kernel"
                 ) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The kernel ``kernel:`` names (a name, or a mapping of its name and options) and
        its options (:meth:`kernel_options`); the declaration the kernel makes of them and
        the space's ``params`` (``Kernel.specialize``, its error located at the option it
        names) becomes ``kernel_cls``, its problem dimensions ``shape``: a declaration that
        is wrong, or a dimension named like an axis, is an error at the line of the key
        ``named_by`` (``kernel``, or ``from_autotune``, which names it too)."""
        name, kernel, options = self.named(value, params)
        try:
            kernel = kernel.specialize(dict(options), params)
            self.shape = shape_of(kernel)
        except SweeperError as err:
            key = getattr(err, "key", None)
            # a key under params: the axis the kernel's declaration refuses
            raise self.error(key if key and key.startswith("params.") else
                             f"kernel.{key}" if key else named_by, str(err)) from None
        clash = [d for d in self.shape.names if d in (*LAUNCH_AXES, *PROBLEM_AXES,
                                                       *kernel.meta_params, *FACT_NAMES[:2])]
        if clash:
            raise self.error(named_by, f"kernel {name}: dimension {clash[0]!r} "
                             "has the name of an axis or a device fact; rename it")
        self.kernel_cls = kernel
        return name, options

    def named(self, value: Any, params: Any, *, checked: bool = True
              ) -> tuple[str, type[KernelDeclaration], tuple[tuple[str, str], ...]]:
        """The kernel ``kernel:`` names (a name, or a mapping of its name and options): its
        name, its declaration (:meth:`kernel`) and the options given it
        (:meth:`kernel_options`, ``checked`` as there)."""
        if isinstance(value, dict) and "name" not in value:
            raise self.error("kernel", "a kernel mapping needs a name: "
                             "{name: KERNEL, OPTION: value, ...}")
        name = value["name"] if isinstance(value, dict) else value
        kernel = self.kernel(name, params)
        self.kernel_name = name
        return name, kernel, self.kernel_options(value, kernel, checked=checked)

    def dtype_name(self, raw: Any, path: str) -> str:
        """The torch name of the dtype ``raw`` names (a name or an alias: ``fp32``,
        ``bf16``, ``torch.float16``) if the kernel takes it (``Kernel.dtypes``: 8-bit
        floats only where a kernel declares them), else the error listing those it takes
        (and the nearest, for a misspelling)."""
        allowed = self.kernel_cls.dtypes
        name = canonical_dtype(raw) if isinstance(raw, str) else None
        if name is not None and name in allowed:
            return name
        if name is not None:
            raise self.error(path, f"{self.kernel_name} takes no {name}; allowed: "
                             f"{', '.join(allowed)}")
        hint = did_you_mean(raw, [*allowed, *DTYPE_ALIASES]) if isinstance(raw, str) else ""
        raise self.error(path, f"unknown dtype {shown(raw)}; allowed: {', '.join(allowed)} "
                         f"(or an alias: fp32, bf16, ...){hint}")

    def lowest(self, axis: str) -> int:
        """The least value ``axis`` may take before its own checks: a dimension's declared
        minimum, a switch's 0 (a meta-parameter with ``choices``), a meta-parameter's
        declared ``least``, else 1."""
        if axis in self.shape.names:
            return int(self.shape.dim(axis).min)
        declared = self.kernel_cls.meta_params.get(axis)
        if declared is None:
            return 1
        return int(min(declared.choices) if declared.choices else declared.least)

    def positive(self, axis: str) -> str:
        """What ``axis`` takes, as the message refusing a value below 1 says it: the kind
        of value (threads per program, a size, a dimension's limits, a meta-parameter's
        power of two or least) and an example, the axis's default where it has one."""
        kernel = self.kernel_cls
        declared = kernel.meta_params.get(axis)
        if axis == "block":
            return kernel.launch_shape.text
        if axis == "footprint":
            return f"a positive size, e.g. {kernel.defaults.get('footprint', '64MiB')}"
        if axis in self.shape.names:
            dim = self.shape.dim(axis)
            return dim.allowed() + ("" if dim.default is None else f", e.g. {dim.default}")
        if declared is not None:
            kind = "a positive power of two" if declared.pow2 else (
                f"one of {', '.join(map(str, declared.choices))}" if declared.choices else
                f"an integer from {declared.least} up" if declared.least > 1 else
                "a positive integer")
            return kind + (f", e.g. {declared.default}" if declared.default >= max(
                declared.least, 1) else "")
        example = kernel.defaults.get(axis, 1024)    # a kernel option's: maybe the one refused
        if str(example).lstrip("-").isdigit() and int(example) < 1:
            example = 1024
        return f"a positive integer or an expression, e.g. {example}"

    def refusal(self, axis: str, value: int) -> str | None:
        """Why ``value`` cannot be one of ``axis``'s (``None`` if it can): threads per
        program, a grid in y or z or a block's extent in y or z (``block_size_y``) the
        kernel's launch cannot have, a dimension out of its declared limits, or a
        meta-parameter that is not a power of two where it must be one or not among its
        ``choices``."""
        declared = self.kernel_cls.meta_params.get(axis)
        shape = self.kernel_cls.launch_shape
        if axis == "block":
            return shape.problem(value)
        if axis in shape.grids and declared is None and not 1 <= value <= MAX_GRID_YZ:
            return f"{value} blocks; allowed: 1 to {MAX_GRID_YZ} (CUDA's limit in y and z)"
        if axis in dict(shape.extents):
            return shape.extent_problem(axis, value)
        if axis in self.shape.names:
            refusal = self.shape.dim(axis).refusal(value)
            return None if refusal is None else f"{axis}: {refusal}"
        if declared is not None and declared.pow2 and not is_pow2(value):
            return f"{value} is not a power of two; {self.kernel_name}'s {axis} must be one"
        if declared is not None and declared.choices and value not in declared.choices:
            return (f"{value} is not a value of {self.kernel_name}'s {axis}; allowed: "
                    f"{', '.join(map(str, declared.choices))}")
        if declared is not None and not declared.choices and value < declared.least:
            return (f"{value} is below {declared.least}; allowed: {self.kernel_name}'s {axis} "
                    f"from {declared.least} up")
        return None

    def sized_by(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The axes that size the problem: ``footprint`` or the kernel's dimensions, never
        both; neither given: the kernel's default footprint where its dimensions follow
        from one, else its dimensions at their defaults."""
        dims, rules = self.shape.names, self.shape.from_footprint
        given = [d for d in dims if d in params]
        if "footprint" in params and given:
            raise self.error(f"params.{given[0]}", f"both footprint and {', '.join(given)} "
                             f"size the problem; give the footprint or the dimensions "
                             f"({', '.join(dims)}), not both")
        if "footprint" in params and not rules:
            raise self.error("params.footprint", f"{self.kernel_name} is sized by its "
                             f"dimensions, not a footprint; give {', '.join(dims)}")
        if "footprint" in params or (not given and rules and "footprint" in
                                     self.kernel_cls.defaults):
            return ("footprint",)
        for d in dims:
            if d not in params and self.shape.dim(d).default is None:
                raise self.error("params", f"missing dimension {d} ({self.shape.dim(d).doc}); "
                                 f"{self.kernel_name} has no default for it: give params.{d}")
        return dims

    def zipped(self, params: Any, known: tuple[str, ...]) -> Any:
        """Take ``group: {zip: {AXIS: [...], ...}}`` out of ``params``: each member becomes an
        axis of its distinct values, and the group a :class:`Tie` of the rows."""
        if not isinstance(params, dict):
            return params
        out = {}
        for group, value in params.items():
            if group in known or not (isinstance(value, dict) and "zip" in value):
                out[group] = value
                continue
            path = f"params.{group}.zip"
            members = self.keys(value, f"params.{group}", ("zip",))["zip"]
            if not isinstance(members, dict) or len(members) < 2:
                raise self.error(path, "zip needs a mapping of two or more axes to lists of "
                                 "equal length")
            for name, values in members.items():
                if name not in known:
                    raise self.error(f"{path}.{name}", f"unknown axis {shown(name)}; known: "
                                     f"{', '.join(known)}{did_you_mean(str(name), known)}")
                if name in params:
                    raise self.error(f"{path}.{name}", f"{name} is also given on its own; "
                                     "an axis is either zipped or free")
                other = next((t.name for t in self.ties if name in t.members), None)
                if other is not None:
                    o = self.origin(f"params.{other}")
                    at = o.file if o.line is None else f"{o.file}:{o.line}"
                    raise self.error(f"{path}.{name}", f"{name} is also zipped in "
                                     f"params.{other} ({at}); an axis is zipped in one "
                                     "group at most")
                if not isinstance(values, list) or not values:
                    raise self.error(f"{path}.{name}", "give a non-empty list")
            if len({len(values) for values in members.values()}) != 1:
                raise self.error(path, f"the zipped lists differ in length "
                                 f"({', '.join(f'{n}: {len(v)}' for n, v in members.items())})")
            read = [[self.value(name, v, f"{path}.{name}[{i}]") for i, v in enumerate(vals)]
                    for name, vals in members.items()]
            rows = list(zip(*([v.label for v in col] for col in read), strict=True))
            # a constant by its value: a row of 16KiB is one of 16384 again
            same = list(zip(*([v.label if v.constant is None else v.constant for v in col]
                              for col in read), strict=True))
            if len(set(same)) != len(same):
                raise self.error(path, "a row appears twice")
            for name, vals in members.items():
                out[name] = list(dict.fromkeys(vals))
                self.where[f"params.{name}"] = self.where.get(f"{path}.{name}", (self.file, None))
                for i, v in enumerate(out[name]):
                    self.where[f"params.{name}[{i}]"] = self.where.get(
                        f"{path}.{name}[{vals.index(v)}]", (self.file, None))
            self.ties.append(Tie(name=group, members=tuple(members), rows=tuple(rows)))
        return out

    def known_names(self, axes: list[Axis]) -> list[str]:
        """Names an expression may read: the numeric axes, the device and problem facts,
        the footprint and the kernel's dimensions (derived from each other)."""
        return sorted({a.name for a in axes} - set(TEXT_AXES) | set(FACT_NAMES) |
                      {"footprint", *self.shape.names})

    def grid_names(self, known: list[str]) -> list[str]:
        """Names a grid's expression (``grid``, ``grid_y``, ``grid_z``) may read: ``known``
        (:meth:`known_names`), and the block's extents in y and z where the kernel's launch
        has them (CUDA C's ``block_size_y``, ``block_size_z``), at 1 where no axis sweeps
        them, as each compile defines them and Kernel Tuner's grid divisors read them."""
        return sorted({*known, *self.kernel_cls.launch_shape.extent_names})

    def kernel_options(self, value: Any, kernel: type[KernelDeclaration], *,
                       checked: bool = True) -> tuple[tuple[str, str], ...]:
        """The options ``kernel:`` gives ``kernel`` (``()`` for a plain name), each a
        string the kernel declares and accepts (with ``user_code``, checked by importing
        what it names); every declared option must be given unless the kernel
        declares a default for it (``option_defaults``), which then stands in.
        ``checked=False``: each is read (a relative file resolved) but not checked
        against what is there now (:func:`recorded_kernel_options`)."""
        given = {k: v for k, v in value.items() if k != "name"} \
            if isinstance(value, dict) else {}
        declared = dict(getattr(kernel, "options", {}))
        for key, raw in given.items():
            path = f"kernel.{key}"
            if key not in declared:
                known = ", ".join(declared) if declared else "none (give just its name)"
                raise self.error(path, f"kernel {self.kernel_name} takes no option {shown(key)}; "
                                 f"its options: {known}")
            option = json.dumps(raw) if isinstance(raw, (dict, list)) else raw
            number = key in getattr(kernel, "number_options", ())
            if number and isinstance(raw, (int, float)) and not isinstance(raw, bool):
                option = str(raw)                 # an expression's constant: its text
            limit = MAX_STRUCTURED if isinstance(raw, (dict, list)) else MAX_OPTION
            if not isinstance(option, str) or not 0 < len(option) <= limit or \
                    (number and isinstance(raw, (dict, list))):
                forms = f"a number, or an expression of 1 to {MAX_OPTION} characters" \
                    if number else (f"a string of 1 to {MAX_OPTION} characters, or a "
                                    f"mapping or list of up to {MAX_STRUCTURED}")
                raise self.error(path, f"{shown(raw)} is not a valid {key}; allowed: "
                                 f"{forms} ({declared[key]})")
            resolve = getattr(kernel, "resolve_option", lambda key, value, folder: value)
            written = self.origin(path).file          # this file, or one it extends
            option = resolve(key, option,
                             self.folder if written == self.file else Path(written).parent)
            try:
                problem = kernel.option_problem(key, option, imports=self.user_code) \
                    if checked else None
            except SweeperError as err:         # at an entry of the option's (its key)
                inner = getattr(err, "key", None)
                raise self.error(f"{path}.{inner}" if inner else path, str(err)) from None
            if problem is not None:
                raise self.error(path, problem)
            given[key] = option
        defaults = dict(getattr(kernel, "option_defaults", {}))
        missing = [k for k in declared if k not in given and k not in defaults
                   and k not in getattr(kernel, "optional_options", ())]
        if missing:
            raise self.error("kernel", f"kernel {self.kernel_name} needs option {missing[0]!r} "
                             f"({declared[missing[0]]}): kernel: {{name: {self.kernel_name}, "
                             f"{missing[0]}: ...}}")
        return tuple(sorted({**{k: v for k, v in defaults.items() if k in declared},
                             **given}.items()))

    def from_autotune(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with ``from_autotune: module:kernel`` read: the kernel it names, and its
        ``@triton.autotune`` configs as one group of zipped axes under ``params``, placed
        at the ``from_autotune:`` line."""
        if "kernel" in data:
            raise self.error("from_autotune", "give kernel: or from_autotune:, not both "
                             "(from_autotune: names the kernel and sweeps its configs)")
        name = data["from_autotune"]
        declared = self.kernel(name, None, "from_autotune")
        columns = getattr(declared, "autotune_params", None)
        if not isinstance(columns, Mapping) and not self.user_code and self.autotune_ran:
            columns = self.autotune_ran
        if not isinstance(columns, Mapping) and not self.user_code:
            unread = "; ".join(getattr(declared, "unread", ())) or "no @triton.autotune " \
                "function it names"
            raise self.error("from_autotune", f"the configs of {name!r} could not be read "
                             f"from its source ({unread}), and `sweeper plan` imports no "
                             "user code; `sweeper run` and `sweeper ab` read them")
        if not isinstance(columns, Mapping):
            raise self.error("from_autotune", f"{name} names no @triton.autotune function; "
                             "declare it with sweeper.kernel(..., autotuned=the_function)")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise self.error("params", "params must be a mapping of keys, got "
                             f"{type(params).__name__}")
        # an axis of the configs, given on its own or zipped in a group of the file's
        given = [(key, key) for key in (AUTOTUNE_GROUP, *columns) if key in params] + [
            (f"{group}.zip.{key}", key) for group, value in params.items()
            for key in zip_members(value) or () if key in columns]
        if given:
            path, key = given[0]
            if self.file == f"--from-autotune {name}":      # no file to edit: -p set it
                instead = (f"--from-autotune runs the autotuner's configs as listed: drop -p "
                           f"{key}, or, to sweep other values, write a space file with "
                           f"kernel: {name} and params: {{{key}: [...]}}")
            else:
                instead = "drop it here, or name the kernel with kernel: and list the values"
            raise self.error(f"params.{path}", f"{key} is set by from_autotune's configs "
                             f"({', '.join(columns)} zipped as {AUTOTUNE_GROUP}); {instead}")
        line = self.where.get("from_autotune", (self.file, None))
        for key, values in columns.items():
            path = f"params.{AUTOTUNE_GROUP}.zip.{key}"
            self.where.update({path: line, **{f"{path}[{i}]": line for i in range(len(values))}})
        self.where[f"params.{AUTOTUNE_GROUP}"] = line
        zipped = {AUTOTUNE_GROUP: {"zip": {k: list(v) for k, v in columns.items()}}}
        return {**data, "kernel": name, "params": {**params, **zipped}}


# -- the settings: measure: and budget: ---------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """One key of ``measure:`` or ``budget:``, described once for the parser and the JSON
    Schema (:mod:`sweeper.space._schema`): what the schema says of it, how the parser reads
    its value (a ``ValueError`` says what is allowed, and names the key inside the value
    at fault, if any, as its second argument), and the field of :class:`MeasureSpec` or
    :class:`Budget` the value sets (default: the key's name)."""

    schema: dict[str, Any]
    read: Callable[[Any], Any]
    field: str = ""


def _whole(least: int, most: int = MAX_COUNT) -> Setting:
    def read(value: Any) -> int:
        if type(value) is not int or not least <= value <= most:
            raise ValueError(f"{shown(value)} is not a whole number from {least} to {most}")
        return value
    return Setting({"type": "integer", "minimum": least, "maximum": most}, read)


def _one_of(allowed: tuple[str, ...], wrong: str) -> Setting:
    """One of ``allowed``; ``wrong`` words a value that is not, ``{}`` standing for it."""
    def read(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"{wrong.format(shown(value))}; allowed: {', '.join(allowed)}")
        return str(value)
    return Setting({"enum": list(allowed)}, read)


def _fraction(wrong: str, *, ceiling: bool = False) -> Callable[[Any], float | None]:
    """A reader of a fraction strictly between 0 and 1, ``"0.5%"`` or ``0.005``; with
    ``ceiling`` also 1 (the whole ceiling) and nothing (no target).  ``wrong`` follows a
    value that is none of these."""
    def read(value: Any) -> float | None:
        if ceiling and (value is None or (isinstance(value, (int, float)) and value == 1)):
            return None if value is None else 1.0
        number = value
        if isinstance(value, str) and value.strip().endswith("%") and value.isascii():
            with contextlib.suppress(ValueError):     # (float() reads full-width digits)
                number = float(value.strip()[:-1]) / 100
        if isinstance(number, bool) or not isinstance(number, (int, float)) or \
                not 0 < number < 1:
            raise ValueError(f"{shown(value)} {wrong}")
        return float(number)
    return read


def _min_time(value: Any) -> float:
    return 0.0 if value in (0, "0", "0s") else parse_duration(value)


def _duration_or_off(value: Any) -> float | None:
    if value in (None, False, "off"):         # YAML reads a bare off as false
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise ValueError(f"{err}, or off") from None


def _graph(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{shown(value)} is not true or false")
    return value


def _abandon(value: Any) -> float | None:
    # at most the largest float: an integer beyond it is one float() cannot take
    if value is not None and (isinstance(value, bool) or not isinstance(
            value, (int, float)) or not 1 < value <= sys.float_info.max):
        raise ValueError(f"{shown(value)} is not a factor above 1 (e.g. 1.5: abandon "
                         "configs 1.5x slower than the best)")
    return None if value is None else float(value)


_DUTIES = "auto, off, {cool: 1s} or {load: 500ms}"


def _duty(value: Any) -> tuple[str, float]:
    """``auto``, ``off`` or ``{cool|load: DURATION}`` (sweeper.measure._duty): the
    schedule and its seconds."""
    if value is False or value == "off":      # YAML reads a bare off as false
        return "off", MeasureSpec.duty_s
    if value == "auto":
        return "auto", MeasureSpec.duty_s
    if not (isinstance(value, dict) and len(value) == 1 and next(iter(value)) in
            ("cool", "load")):
        raise ValueError(f"{shown(value)} is not a duty schedule; allowed: {_DUTIES}")
    (kind, duration), = value.items()
    try:
        return kind, parse_duration(duration)
    except ValueError as err:
        raise ValueError(f"{err}; allowed: {_DUTIES}", kind) from None


_NUMBER_OR_TEXT = {"type": ["number", "string"]}
#: ``measure:``, its keys in the order messages list them.
MEASURE = {
    "warmup": _whole(0), "repeat": _whole(1),
    "stop": _one_of(("fixed", "ci", "stdrel"), "unknown stopping rule {}"),
    "target": Setting(_NUMBER_OR_TEXT, _fraction("is not a fraction between 0 and 1 "
                                                 "(e.g. 0.5% or 0.005)")),
    "min_samples": _whole(2),
    "min_time": Setting(_NUMBER_OR_TEXT, _min_time, "min_time_s"),
    "max_time": Setting(_NUMBER_OR_TEXT, parse_duration, "max_time_s"),
    "warmup_time": Setting({"type": ["number", "string", "boolean", "null"], "description":
                            "where two warmup turns take this long (1ms, 0.5 ms), those two "
                            "are the warmup; off: always `warmup` turns"}, _duration_or_off,
                           "warmup_time_s"),
    "cache": _one_of((*CACHE_MODES, "both"), "{} is not a cache mode"),
    "batch": _whole(1),
    "graph": Setting({"type": "boolean"}, _graph),
    "abandon": Setting({"type": "number", "exclusiveMinimum": 1}, _abandon),
    "timeout": Setting({"type": ["number", "string", "boolean", "null"], "description":
                        "seconds (or 5m, 30s) before a trial counts as hung; off or false: "
                        "never"}, _duration_or_off, "timeout_s"),
    "duty": Setting({"anyOf": [{"enum": ["auto", "off", False]}, {
        "type": "object", "additionalProperties": False, "minProperties": 1,
        "maxProperties": 1, "properties": {"cool": _NUMBER_OR_TEXT, "load": _NUMBER_OR_TEXT}}],
        "description": "what precedes each config's samples on a power-bound problem: auto "
                       "(a 100 ms cool-down once the power cap shows), off, {cool: 1s} or "
                       "{load: 500ms}"}, _duty),
    "finals_duty": _one_of(("cool", "sustained"), "{} is not a finals schedule"),
}
#: ``budget:``: what ends a search.
BUDGET = {
    "trials": _whole(1, MAX_TRIALS),
    "time": Setting(_NUMBER_OR_TEXT, parse_duration, "time_s"),
    "target": Setting(_NUMBER_OR_TEXT, _fraction("is not a fraction of the ceiling (e.g. 95%)",
                                                 ceiling=True)),
    "patience": _whole(1, MAX_TRIALS),
}


def _kind(data: Any) -> str:
    return {list: "a list", str: "a string", int: "an integer", type(None): "nothing"}.get(
        type(data), type(data).__name__)


def shown(value: Any) -> str:
    """``repr(value)``, cut short: a hostile file's values can be thousands of digits."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** 40 else \
        f"a number of some {int(value.bit_length() * math.log10(2))} digits"
    return cut(text, 60)


def _powers_near(value: int) -> str:
    """The powers of two either side of ``value``, for the message that refuses it."""
    if value < 1:
        return " (1 at least)"
    if value > LIMIT:
        return ""
    return f" ({1 << (value.bit_length() - 1)} or {1 << value.bit_length()} here)"


def _split_at_a_comma(text: str) -> str:
    """A hint for an expression a comma broke: with a ``(`` left open, in a YAML flow list
    (``[sms, cdiv(n, BLOCK)]``) the comma inside the call ended the item, so the parser
    saw ``cdiv(n``, and the fix is quotes; with values a comma separates outside any
    brackets (``BLOCK: 256, 512``), the fix is a list.  The expression's own message can
    say neither."""
    if text.count("(") > text.count(")"):
        return ("; YAML ends a list item at a comma: quote an expression that has one "
                "(\"cdiv(n, BLOCK)\")")
    import ast

    if len(text) <= _expr.MAX_TEXT:
        with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
            if isinstance(ast.parse(text.strip(), mode="eval").body, ast.Tuple):
                return f"; several values are written as a YAML list: [{text.strip()}]"
    return ""
