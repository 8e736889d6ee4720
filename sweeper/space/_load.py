"""Read a space file into a :class:`Space`, validating everything before anything runs.

Every error is one :class:`SpaceError` that names the file, the line and the key
path, shows the bad value and says what is allowed."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeper import plugins
from sweeper.core import _expr
from sweeper.core._expr import LIMIT, Expr
from sweeper.core._model import (
    CACHE_MODES,
    FACT_NAMES,
    LAUNCH_AXES,
    MAX_CONFIGS,
    PROBLEM_AXES,
    Axis,
    AxisRole,
    Constraint,
    KernelDeclaration,
    Origin,
    Space,
    Tie,
    Value,
)
from sweeper.core._names import safe_name, study_name_problem
from sweeper.core._units import parse_size
from sweeper.errors import ExpressionError, SpaceError, SweeperError
from sweeper.space._files import TOP_KEYS, load_located, override, reachable
from sweeper.space._from_autotune import FromAutotune
from sweeper.space._kernel_spec import KernelSpec
from sweeper.space._problem_axes import TEXT_AXES, ProblemAxes
from sweeper.space._settings import Settings, shown
from sweeper.space._yaml import load_with_lines

AXIS_FORMS = ("a list of values", "{range: [lo, hi, step]}", "{pow2: [lo, hi]}")
MAX_AXIS_VALUES = 4096
BLOCKS = (32, 64, 128, 256, 512, 1024)


def load_space(path: str | Path, overrides: Sequence[str] = (), *, allow: Sequence[str | Path]
               = (), user_code: bool = True, text: str | None = None) -> Space:
    """Read and validate the space file at ``path`` (following ``extends:`` within its
    folder and the folders in ``allow``), with ``overrides`` such as ``BLOCK=1024,2048``
    replacing axes (the CLI's ``-p``).  ``user_code=False`` imports no plugin that is not
    built in: a user kernel's meta-parameters are taken from the space as written, and a
    user sampler's baseline, unchecked.  ``text``: the YAML itself, ``path`` its name."""
    data, where, text = load_located(Path(path), (), reachable(Path(path), allow), text)
    data, where = override(data, where, overrides)
    return _Parser(str(path), where, user_code).space(data, text, safe_name(Path(path).stem))


def autotune_space(target: str, overrides: Sequence[str] = ()) -> Space:
    """The space ``sweeper run --from-autotune TARGET`` runs: as a file holding
    ``from_autotune: TARGET`` and ``sampler: exhaustive`` (every listed config, as Triton's
    autotuner runs them), its study named after the kernel's attribute; ``overrides``
    are ``-p``'s.  Errors name ``--from-autotune TARGET``."""
    file = f"--from-autotune {target}"
    if plugins.PATH.fullmatch(target) is None:
        raise SpaceError(f"{target!r} is not package.module:attr (the sweeper.kernel that "
                         "names the autotuned function)", file="--from-autotune")
    study = target.rpartition(":")[2]
    text = f"study: {study}\nfrom_autotune: {json.dumps(target)}\nsampler: exhaustive\n"
    data, lines = load_with_lines(text, file)
    data, where = override(data, {k: (file, None) for k in lines}, overrides)
    return _Parser(file, where).space(data, text, study)


def parse_space(text: str, *, file: str = "<space>", default_study: str = "study") -> Space:
    """The space in YAML ``text`` (called ``file`` in errors), checked as a file is."""
    data, lines = load_with_lines(text, file)
    return _Parser(file, {k: (file, v) for k, v in lines.items()}).space(data, text,
                                                                         default_study)


class _Parser(ProblemAxes, Settings, FromAutotune, KernelSpec):
    def __init__(self, file: str, where: Mapping[str, tuple[str, int | None]],
                 user_code: bool = True) -> None:
        self.file = file
        self.where = dict(where)
        self.user_code = user_code
        self.conditions: list[tuple[str, str, str]] = []    # axis, condition, path
        self.ties: list[Tie] = []

    def names_known(self, expr: Expr, path: str, known: Sequence[str]) -> Expr:
        """``expr`` if every name it reads is in ``known``, else the error for the first."""
        unknown = sorted(expr.names - set(known))
        if unknown:
            raise self.error(path, f"unknown name {shown(unknown[0])} in "
                             f"{_expr.quoted(expr.text)}; known: {', '.join(known)}")
        return expr

    def origin(self, path: str) -> Origin:
        """Where ``path`` was written: its own line, else its nearest parent's."""
        found = self.where.get(path)
        parent = path
        while found is None and parent:
            if parent.endswith("]"):
                parent = parent[:parent.rindex("[")]
            else:
                parent = parent.rpartition(".")[0]
            found = self.where.get(parent)
        file, line = found if found is not None else (self.file, None)
        return Origin(file=file, line=line, path=path if len(path) <= 80 else path[:77] + "...")

    def error(self, path: str, message: str) -> SpaceError:
        o = self.origin(path)
        return SpaceError(message, file=o.file, line=o.line, path=o.path)

    def keys(self, data: Any, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(data, dict):
            what = path or "the file"
            raise self.error(path, f"{what} must be a mapping of keys, got {_kind(data)}")
        for key in data:
            if key not in known:
                raise self.error(f"{path}.{key}" if path else key,
                                 f"unknown key {shown(key)}; known: {', '.join(known)}")
        return data

    # -- the whole file ---------------------------------------------------------------
    def space(self, data: Any, text: str, default_study: str) -> Space:
        data = self.keys(data, "", TOP_KEYS)
        study = data.get("study", default_study)
        if study_name_problem(study):
            raise self.error("study", str(study_name_problem(study)))
        if "from_autotune" in data:
            data = self.from_autotune(data)
        if "kernel" not in data:
            raise self.error("", "missing key 'kernel'; give a built-in name or module:attr")
        kernel_cls = self.kernel(kernel_name := self.kernel_name(data["kernel"]),
                                 data.get("params"))
        options, kernel_cls = self.declared_kernel(data["kernel"], kernel_cls, data.get("params"))
        self.shape = self.declared_shape(kernel_cls)
        if "params" not in data:
            raise self.error("", "missing key 'params'; it lists the axes to sweep")
        measure, cache_modes = self.measure(data.get("measure", {}))
        axes = self.axes(data["params"], kernel_cls, cache_modes)
        self.size(axes)
        order = self.order(axes)
        constraints = self.constraints(data.get("constraints", []), axes)
        sampler = self.sampler(data.get("sampler", "auto"), data.get("seed", 0), axes)
        return Space(
            study=study, kernel=kernel_name, kernel_options=options, sampler=sampler,
            axes=tuple(axes), order=order, constraints=constraints, measure=measure,
            ties=tuple(self.ties), shape=self.shape, budget=self.budget(data.get("budget", {})),
            path=self.file, text=text, sha256=hashlib.sha256(text.encode()).hexdigest())

    def kernel(self, name: Any, params: Any, path: str = "kernel") -> type[KernelDeclaration]:
        """The class declaring the kernel's meta-parameters and defaults, from the plugin
        registry; with ``user_code`` off a user kernel is not imported: a stand-in declares
        the meta-parameters ``params`` names.  Errors point at ``path``."""
        if not isinstance(name, str) or len(name) > 200:
            raise self.error(path, f"{shown(name)} is not a kernel name (a built-in name, "
                             "an installed plugin's or module:attr, at most 200 characters)")
        try:
            return plugins.kernel_declaration(name, user_code=self.user_code, params=params)
        except SweeperError as err:
            hint = "; from_autotune: names the sweeper.kernel(..., autotuned=...) that " \
                "launches the @triton.autotune function" if path == "from_autotune" else ""
            raise self.error(path, f"{err}{hint}") from None

    # -- axes ----------------------------------------------------------------------------
    def axes(self, params: Any, kernel: type[KernelDeclaration], modes: list[str]) -> list[Axis]:
        meta = dict(kernel.meta_params)
        dims = self.shape.names
        known = (*LAUNCH_AXES, *PROBLEM_AXES, *dims, *meta)
        params = self.zipped(params, known)
        params = self.keys(params, "params", known)
        sizes = self.sized_by(params, kernel)
        axes = []
        for name in known:
            if name in ("footprint", *dims) and name not in sizes:
                continue
            path = f"params.{name}"
            if name in params and isinstance(params[name], dict) and "when" in params[name]:
                spec = self.keys(params[name], path, ("values", "when"))
                if "values" not in spec or not isinstance(spec["when"], str):
                    raise self.error(path, "a conditional axis is {values: [...], when: "
                                     "\"expression\"}")
                if name in TEXT_AXES:
                    raise self.error(path, f"{name} cannot be conditional; only numeric axes")
                self.conditions.append((name, spec["when"], f"{path}.when"))
                raw = self.expand(spec["values"], f"{path}.values")
            elif name in params:
                raw = self.expand(params[name], path)
            elif name == "cache":
                raw = modes
            elif name in dims:
                raw = [self.shape.dim(name).default]
            else:
                raw = [meta[name].default if name in meta else kernel.defaults[name]]
            role = (AxisRole.LAUNCH if name in LAUNCH_AXES else
                    AxisRole.PROBLEM if name in (*PROBLEM_AXES, *dims) else AxisRole.META)
            values = tuple(self.value(name, v, f"{path}[{i}]") for i, v in enumerate(raw))
            labels = [v.label for v in values]
            dup = next((lb for lb in labels if labels.count(lb) > 1), None)
            if dup is not None:
                raise self.error(path, f"value {shown(dup)} appears twice")
            if name == "block":
                for i, v in enumerate(values):
                    if isinstance(v.constant, int) and v.constant not in BLOCKS:
                        raise self.error(f"{path}[{i}]", f"{v.constant} threads per program; "
                                         f"allowed: {', '.join(map(str, BLOCKS))} "
                                         "(num_warps × 32)")
            if name in dims:
                for i, v in enumerate(values):
                    refusal = (self.shape.dim(name).refusal(v.constant)
                               if isinstance(v.constant, int) else None)
                    if refusal is not None:
                        raise self.error(f"{path}[{i}]", f"{name}: {refusal}")
            for i, v in enumerate(values):
                if name in meta and isinstance(v.constant, int):
                    self.check_meta(kernel.name, name, meta[name], v.constant, f"{path}[{i}]")
            axes.append(Axis(name=name, role=role, values=values, origin=self.origin(path)))
        return axes

    def size(self, axes: list[Axis]) -> None:
        """Refuse a space of more than :data:`MAX_CONFIGS` configs, counted before any is
        built, at the line of its largest dimension (zipped axes are one)."""
        tied = {m: t for t in self.ties for m in t.members}
        dims = {a.name: len(a.values) for a in axes if a.name not in tied}
        dims.update({t.name: len(t.rows) for t in self.ties})
        total = math.prod(dims.values())
        if total > MAX_CONFIGS:
            largest = max(dims, key=dims.__getitem__)
            path = f"params.{largest}" + (".zip" if largest not in {a.name for a in axes}
                                          else "")
            shown = " × ".join(f"{n} {k}" for k, n in dims.items() if n > 1)
            raise self.error(path, f"the space has {total} configs ({shown}); at most "
                             f"{MAX_CONFIGS}: give this axis ({dims[largest]} values) or "
                             "another fewer values")

    def expand(self, raw: Any, path: str) -> list[Any]:
        if isinstance(raw, dict):
            forms: dict[str, Callable[[Any, str], list[int]]] = {
                "range": self.range_form, "pow2": self.pow2_form}
            raw = self.keys(raw, path, tuple(forms))
            if len(raw) != 1:
                raise self.error(path, f"give exactly one of {', '.join(forms)}")
            (form, args), = raw.items()
            return forms[form](args, f"{path}.{form}")
        values: list[Any] = raw if isinstance(raw, list) else [raw]
        if not values:
            raise self.error(path, f"empty axis; allowed: {'; '.join(AXIS_FORMS)}")
        self.capped(len(values), path)
        return values

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
            if not _is_pow2(bound):
                raise self.error(path, f"{shown(bound)} is not a power of two")
        if lo > hi:
            raise self.error(path, f"pow2 needs lo <= hi, got lo={shown(lo)}, hi={shown(hi)}")
        self.capped(hi.bit_length() - lo.bit_length() + 1, path)
        self.bounded(hi, path)
        return [1 << k for k in range(lo.bit_length() - 1, hi.bit_length())]

    def capped(self, count: int, path: str) -> None:
        if count > MAX_AXIS_VALUES:
            raise self.error(path, f"{count} values; at most {MAX_AXIS_VALUES} per axis")

    def bounded(self, value: int, path: str) -> None:
        if not -LIMIT <= value <= LIMIT:
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
        if axis == "cache":
            if raw not in CACHE_MODES:
                raise self.error(path, f"{shown(raw)} is not a cache mode; allowed: "
                                 f"{', '.join(CACHE_MODES)}")
            return Value(label=raw, constant=raw)
        if axis == "dtype":
            return Value(label=self.dtype_name(raw, path), constant=raw)
        origin = self.origin(path)
        # a dimension declaring a minimum below 1 (0 for a flag) has its limits checked later
        low = self.lowest(axis)
        if type(raw) is int:
            return self.positive(Value(label=str(raw), constant=raw, origin=origin), path, low)
        if not isinstance(raw, str):
            raise self.error(path, f"{shown(raw)} is not an integer, a size or an expression")
        try:
            return self.positive(Value(label=raw, constant=parse_size(raw), origin=origin),
                                 path, low)
        except ValueError:
            pass
        try:
            expr = _expr.parse(raw)
            if not expr.names:
                constant = int(_expr.evaluate(expr, {}))
                return self.positive(Value(label=raw, constant=constant, origin=origin), path,
                                     low)
        except ExpressionError as err:
            raise self.error(path, str(err)) from None
        return Value(label=raw, expr=expr, origin=origin)

    def positive(self, value: Value, path: str, low: int = 1) -> Value:
        if isinstance(value.constant, int):
            if value.constant <= 0 and low >= 1:
                raise self.error(path, f"{value.label[:40]} must be positive")
            self.bounded(value.constant, path)
        return value

    def order(self, axes: list[Axis]) -> tuple[str, ...]:
        """Axis names in an order where each expression's names come first."""
        axis_names = {a.name for a in axes} - set(TEXT_AXES)
        known = self.known_names(axes)
        sizes = {a.name for a in axes if a.name in ("footprint", *self.shape.names)}
        derived = set(known) - axis_names - set(FACT_NAMES[:2]) - {"itemsize"}
        deps: dict[str, set[str]] = {name: set() for name in TEXT_AXES}
        for a in axes:
            deps[a.name] = set()
            for i, v in enumerate(a.values):
                if v.expr is None:
                    continue
                self.names_known(v.expr, f"params.{a.name}[{i}]", known)
                reads = set(v.expr.names)
                if reads & derived or (a.name not in sizes and reads & sizes):
                    reads |= sizes | {"dtype"}     # the problem is made from all its sizes
                deps[a.name] |= reads & axis_names
        for name in sizes:
            deps[name] |= {"dtype"}
        done: list[str] = []
        while len(done) < len(deps):
            ready = [n for n in deps if n not in done and deps[n] <= set(done)]
            if not ready:
                stuck = sorted(n for n in deps if n not in done)
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
                self.names_known(_expr.parse(text, "truth"), path, known)
                expr = _expr.parse(full, "truth")
            except ExpressionError as err:
                raise self.error(path, str(err)) from None
            out.append(Constraint(expr=expr, origin=self.origin(path),
                                  condition_of=condition_of))
        return tuple(out)

def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _kind(data: Any) -> str:
    return {list: "a list", str: "a string", int: "an integer", type(None): "nothing"}.get(
        type(data), type(data).__name__)
