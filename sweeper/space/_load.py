"""Read a space file into a :class:`Space`, validating everything before anything runs.

Every error is one :class:`SpaceError` that names the file, the line and the key
path, shows the bad value and says what is allowed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


from sweeper.errors import ExpressionError, SpaceError, SweeperError
from sweeper.space import _expr
from sweeper.space._expr import Expr
from sweeper.space._model import (
    CACHE_MODES,
    FACT_NAMES,
    LAUNCH_AXES,
    PROBLEM_AXES,
    Axis,
    AxisRole,
    Budget,
    Constraint,
    MeasureSpec,
    SamplerSpec,
    Space,
    Tie,
    Value,
)
from sweeper.space._units import DTYPES, parse_duration, parse_size
from sweeper.space._files import load_located, override, reachable
from sweeper.space._names import safe_name, study_name_problem
from sweeper.space._yaml import load_with_lines

TOP_KEYS = ("study", "kernel", "sampler", "seed", "params", "constraints", "measure", "budget",
            "extends")
MEASURE_KEYS = ("warmup", "repeat", "stop", "target", "min_samples", "min_time", "max_time",
                "cache", "batch", "graph", "abandon", "timeout", "duty")
STOP_RULES = ("fixed", "ci", "stdrel")
TEXT_AXES = ("dtype", "cache")         # values are names, not numbers: not in expressions
BUDGET_KEYS = ("trials", "time", "target", "patience")
SAMPLER_KEYS = ("name", "seed", "baseline")
AXIS_FORMS = ("a list of values", "{range: [lo, hi, step]}", "{pow2: [lo, hi]}")
MAX_AXIS_VALUES = 4096
BLOCKS = (32, 64, 128, 256, 512, 1024)


def load_space(path: str | Path, overrides: Sequence[str] = (), *,
               allow: Sequence[str | Path] = (), user_code: bool = True) -> Space:
    """Read and validate the space file at ``path`` (following ``extends:`` within its
    folder and the folders in ``allow``), with ``overrides`` such as ``BLOCK=1024,2048``
    replacing axes (the CLI's ``-p``).  ``user_code=False`` imports no user kernel: its
    meta-parameters are taken from the space as written, unchecked."""
    data, where, text = load_located(Path(path), (), reachable(Path(path), allow))
    data, where = override(data, where, overrides)
    return _Parser(str(path), where, user_code).space(data, text, safe_name(Path(path).stem))


def parse_space(text: str, *, file: str = "<space>", default_study: str = "study") -> Space:
    data, lines = load_with_lines(text, file)
    return _Parser(file, {k: (file, v) for k, v in lines.items()}).space(data, text,
                                                                         default_study)


class _Parser:
    def __init__(self, file: str, where: Mapping[str, tuple[str, int | None]],
                 user_code: bool = True) -> None:
        self.file = file
        self.where = where
        self.user_code = user_code
        self.conditions: list[tuple[str, str, str]] = []    # axis, condition, path
        self.ties: list[Tie] = []

    def names_known(self, expr: Expr, path: str, known: Sequence[str]) -> Expr:
        """``expr`` if every name it reads is in ``known``, else the error for the first."""
        unknown = sorted(expr.names - set(known))
        if unknown:
            raise self.error(path, f"unknown name {unknown[0]!r} in {expr.text!r}; "
                             f"known: {', '.join(known)}")
        return expr

    def line_of(self, path: str) -> int:
        return self.where.get(path, (self.file, 0))[1] or 0

    def error(self, path: str, message: str) -> SpaceError:
        found = self.where.get(path)
        parent = path
        while found is None and parent:
            if parent.endswith("]"):
                parent = parent[:parent.rindex("[")]
            else:
                parent = parent.rpartition(".")[0]
            found = self.where.get(parent)
        file, line = found if found is not None else (self.file, None)
        return SpaceError(message, file=file, line=line, path=path)

    def keys(self, data: Any, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(data, dict):
            what = "the file" if not path else path
            raise self.error(path, f"{what} must be a mapping of keys, got {_kind(data)}")
        for key in data:
            if key not in known:
                raise self.error(f"{path}.{key}" if path else key,
                                 f"unknown key {key!r}; known: {', '.join(known)}")
        return data

    # -- the whole file ---------------------------------------------------------------
    def space(self, data: Any, text: str, default_study: str) -> Space:
        data = self.keys(data, "", TOP_KEYS)
        study = data.get("study", default_study)
        if study_name_problem(study):
            raise self.error("study", str(study_name_problem(study)))
        if "kernel" not in data:
            raise self.error("", "missing key 'kernel'; give a built-in name or module:attr")
        kernel_name = data["kernel"]
        kernel_cls = self.kernel(kernel_name, data.get("params"))
        if "params" not in data:
            raise self.error("", "missing key 'params'; it lists the axes to sweep")
        measure, cache_modes = self.measure(data.get("measure", {}))
        axes = self.axes(data["params"], kernel_cls, cache_modes)
        order = self.order(axes)
        constraints = self.constraints(data.get("constraints", []), axes)
        sampler = self.sampler(data.get("sampler", "auto"), data.get("seed", 0), axes)
        return Space(
            study=study, kernel=kernel_name, sampler=sampler, axes=tuple(axes), order=order,
            constraints=constraints, measure=measure, ties=tuple(self.ties),
            budget=self.budget(data.get("budget", {})), path=self.file, text=text,
            sha256=hashlib.sha256(text.encode()).hexdigest())

    def kernel(self, name: Any, params: Any) -> type:
        """The kernel's class; with ``user_code`` off a user kernel is not imported: a
        stand-in declares the meta-parameters ``params`` names."""
        from sweeper.kernels import kernel_class, unchecked_kernel

        if not isinstance(name, str):
            raise self.error("kernel", f"{name!r} is not a kernel name")
        try:
            return kernel_class(name) if self.user_code else unchecked_kernel(name, params)
        except SweeperError as err:
            raise self.error("kernel", str(err)) from None

    def sampler(self, value: Any, seed: Any, axes: list[Axis]) -> SamplerSpec:
        from sweeper.samplers import SAMPLERS

        path, baseline = "sampler", {}
        if isinstance(value, dict):
            value = self.keys(value, path, SAMPLER_KEYS)
            seed = value.get("seed", seed)
            baseline = value.get("baseline", {})
            path, value = "sampler.name", value.get("name", "auto")
        if value not in SAMPLERS:
            raise self.error(path, f"unknown sampler {value!r}; known: {', '.join(SAMPLERS)}")
        if type(seed) is not int:
            raise self.error("seed", f"seed must be an integer, got {seed!r}")
        if baseline and value != "one-at-a-time":
            raise self.error("sampler.baseline", "a baseline belongs to the one-at-a-time "
                             "sampler")
        by_name = {a.name: a for a in axes}
        base = self.keys(baseline, "sampler.baseline", tuple(by_name))
        chosen = []
        for a in axes:
            label = str(base.get(a.name, a.labels[(len(a.labels) - 1) // 2]))
            if label not in a.labels:
                raise self.error(f"sampler.baseline.{a.name}", f"{label!r} is not a value of "
                                 f"the axis; allowed: {', '.join(a.labels)}")
            chosen.append((a.name, label))
        return SamplerSpec(name=value, seed=seed,
                           baseline=tuple(chosen) if value == "one-at-a-time" else ())

    # -- axes ----------------------------------------------------------------------------
    def axes(self, params: Any, kernel_cls: type, cache_modes: list[str]) -> list[Axis]:
        meta = dict(kernel_cls.meta_params)
        known = (*LAUNCH_AXES, *PROBLEM_AXES, *meta)
        params = self.zipped(params, known)
        params = self.keys(params, "params", known)
        axes = []
        for name in known:
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
                raw = cache_modes
            else:
                raw = [meta[name].default if name in meta else kernel_cls.defaults[name]]
            role = (AxisRole.LAUNCH if name in LAUNCH_AXES else
                    AxisRole.PROBLEM if name in PROBLEM_AXES else AxisRole.META)
            values = tuple(self.value(name, v, f"{path}[{i}]") for i, v in enumerate(raw))
            labels = [v.label for v in values]
            dup = next((lb for lb in labels if labels.count(lb) > 1), None)
            if dup is not None:
                raise self.error(path, f"value {dup!r} appears twice")
            if name == "block":
                for i, v in enumerate(values):
                    if isinstance(v.constant, int) and v.constant not in BLOCKS:
                        raise self.error(f"{path}[{i}]", f"{v.constant} threads per program; "
                                         f"allowed: {', '.join(map(str, BLOCKS))} "
                                         "(num_warps × 32)")
            if name in meta and meta[name].pow2:
                for i, v in enumerate(values):
                    if isinstance(v.constant, int) and not _is_pow2(v.constant):
                        raise self.error(f"{path}[{i}]", f"{v.constant} is not a power of two; "
                                         f"{kernel_cls.name}'s {name} must be one")
            axes.append(Axis(name=name, role=role, values=values,
                             line=self.line_of(path)))
        return axes

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
            lengths = set()
            for name, values in members.items():
                if name not in known:
                    raise self.error(f"{path}.{name}", f"unknown axis {name!r}; known: "
                                     f"{', '.join(known)}")
                if name in params:
                    raise self.error(f"{path}.{name}", f"{name} is also given on its own; "
                                     "an axis is either zipped or free")
                if not isinstance(values, list) or not values:
                    raise self.error(f"{path}.{name}", "give a non-empty list")
                lengths.add(len(values))
            if len(lengths) != 1:
                raise self.error(path, f"the zipped lists differ in length "
                                 f"({', '.join(f'{n}: {len(v)}' for n, v in members.items())})")
            rows = list(zip(*(
                [self.value(name, v, f"{path}.{name}[{i}]").label for i, v in enumerate(vals)]
                for name, vals in members.items())))
            if len(set(rows)) != len(rows):
                raise self.error(path, "a row appears twice")
            for name, vals in members.items():
                out[name] = list(dict.fromkeys(vals))
            self.ties.append(Tie(name=group, members=tuple(members), rows=tuple(rows)))
        return out

    def expand(self, raw: Any, path: str) -> list[Any]:
        if isinstance(raw, dict):
            forms: dict[str, Callable[[Any, str], list[int]]] = {
                "range": self.range_form, "pow2": self.pow2_form}
            raw = self.keys(raw, path, tuple(forms))
            if len(raw) != 1:
                raise self.error(path, f"give exactly one of {', '.join(forms)}")
            (form, args), = raw.items()
            return forms[form](args, f"{path}.{form}")
        if not isinstance(raw, list):
            raw = [raw]
        if not raw:
            raise self.error(path, f"empty axis; allowed: {'; '.join(AXIS_FORMS)}")
        return raw

    def range_form(self, args: Any, path: str) -> list[int]:
        if not (isinstance(args, list) and len(args) in (2, 3) and all(
                type(a) is int for a in args)):
            raise self.error(path, f"{args!r} is not [lo, hi] or [lo, hi, step] of integers")
        lo, hi, step = (*args, 1) if len(args) == 2 else args
        if step <= 0 or lo > hi:
            raise self.error(path, f"range needs lo <= hi and step > 0, got {lo=}, {hi=}, "
                             f"{step=}")
        return self.capped(list(range(lo, hi + 1, step)), path)

    def pow2_form(self, args: Any, path: str) -> list[int]:
        if not (isinstance(args, list) and len(args) == 2):
            raise self.error(path, f"{args!r} is not [lo, hi]")
        lo, hi = (self.integer(a, path) for a in args)
        for bound in (lo, hi):
            if not _is_pow2(bound):
                raise self.error(path, f"{bound} is not a power of two")
        if lo > hi:
            raise self.error(path, f"pow2 needs lo <= hi, got {lo=}, {hi=}")
        return self.capped([1 << k for k in range(lo.bit_length() - 1, hi.bit_length())], path)

    def capped(self, values: list[int], path: str) -> list[int]:
        if len(values) > MAX_AXIS_VALUES:
            raise self.error(path, f"{len(values)} values; at most {MAX_AXIS_VALUES} per axis")
        return values

    def integer(self, raw: Any, path: str) -> int:
        if type(raw) is int:
            return raw
        if isinstance(raw, str):
            try:
                return parse_size(raw)
            except ValueError as err:
                raise self.error(path, str(err)) from None
        raise self.error(path, f"{raw!r} is not an integer or a size")

    def value(self, axis: str, raw: Any, path: str) -> Value:
        if axis == "cache":
            if raw not in CACHE_MODES:
                raise self.error(path, f"{raw!r} is not a cache mode; allowed: "
                                 f"{', '.join(CACHE_MODES)}")
            return Value(label=raw, constant=raw)
        if axis == "dtype":
            if raw not in DTYPES:
                raise self.error(path, f"unknown dtype {raw!r}; allowed: {', '.join(DTYPES)}")
            return Value(label=raw, constant=raw)
        if type(raw) is int:
            return self.positive(Value(label=str(raw), constant=raw), path)
        if not isinstance(raw, str):
            raise self.error(path, f"{raw!r} is not an integer, a size or an expression")
        try:
            return self.positive(Value(label=raw, constant=parse_size(raw)), path)
        except ValueError:
            pass
        try:
            expr = _expr.parse(raw)
        except ExpressionError as err:
            raise self.error(path, str(err)) from None
        if not expr.names:
            return self.positive(Value(label=raw, constant=int(_expr.evaluate(expr, {}))), path)
        return Value(label=raw, expr=expr)

    def positive(self, value: Value, path: str) -> Value:
        if isinstance(value.constant, int) and value.constant <= 0:
            raise self.error(path, f"{value.label} must be positive")
        return value

    def order(self, axes: list[Axis]) -> tuple[str, ...]:
        """Axis names in an order where each expression's names come first."""
        axis_names = {a.name for a in axes} - set(TEXT_AXES)
        known = sorted(axis_names | set(FACT_NAMES))
        deps: dict[str, set[str]] = {name: set() for name in TEXT_AXES}
        for a in axes:
            deps[a.name] = set()
            for i, v in enumerate(a.values):
                if v.expr is None:
                    continue
                self.names_known(v.expr, f"params.{a.name}[{i}]", known)
                reads = set(v.expr.names)
                if "n" in reads:
                    reads |= {"footprint", "dtype"}
                deps[a.name] |= reads & axis_names
        deps["footprint"] |= {"dtype"}
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
            raise self.error("constraints", f"{raw!r} is not a list of expressions "
                             "(e.g. [\"BLOCK >= block\"])")
        known = sorted({a.name for a in axes} - set(TEXT_AXES) | set(FACT_NAMES))
        first = {a.name: a.values[0].label for a in axes}
        sources = [(f"constraints[{i}]", text, text, None) for i, text in enumerate(raw)]
        sources += [(path, when, f"({when}) or {axis} == ({first[axis]})", (axis, when))
                    for axis, when, path in self.conditions]
        out = []
        for path, text, full, condition_of in sources:
            try:
                self.names_known(_expr.parse(text), path, known)
                expr = _expr.parse(full)
            except ExpressionError as err:
                raise self.error(path, str(err)) from None
            out.append(Constraint(expr=expr, line=self.line_of(path),
                                  condition_of=condition_of))
        return tuple(out)

    def measure(self, raw: Any) -> tuple[MeasureSpec, list[str]]:
        """The measurement settings, and the cache modes the ``cache`` axis defaults to."""
        raw = self.keys(raw, "measure", MEASURE_KEYS)
        d = MeasureSpec()
        warmup = self.whole(raw, "warmup", d.warmup, 0)
        repeat = self.whole(raw, "repeat", d.repeat, 1)
        min_samples = self.whole(raw, "min_samples", d.min_samples, 2)
        batch = self.whole(raw, "batch", d.batch, 1)
        stop = raw.get("stop", "fixed" if "repeat" in raw else d.stop)
        if stop not in STOP_RULES:
            raise self.error("measure.stop", f"unknown stopping rule {stop!r}; allowed: "
                             f"{', '.join(STOP_RULES)}")
        target = raw.get("target", d.target)
        try:
            target = _fraction(target)
        except ValueError:
            raise self.error("measure.target", f"{target!r} is not a fraction between 0 and 1 "
                             "(e.g. 0.5% or 0.005)") from None
        times = {}
        for key, default in (("min_time", d.min_time_s), ("max_time", d.max_time_s)):
            value = raw.get(key, default)
            try:
                times[key] = 0.0 if key == "min_time" and value in (0, "0", "0s") else \
                    parse_duration(value)
            except ValueError as err:
                raise self.error(f"measure.{key}", str(err)) from None
        graph = raw.get("graph", d.graph)
        if not isinstance(graph, bool):
            raise self.error("measure.graph", f"{graph!r} is not true or false")
        cache = raw.get("cache", "cold")
        if cache not in (*CACHE_MODES, "both"):
            raise self.error("measure.cache", f"{cache!r} is not a cache mode; allowed: cold, "
                             "warm, both")
        abandon = raw.get("abandon")
        if abandon is not None and (isinstance(abandon, bool) or not isinstance(
                abandon, (int, float)) or abandon <= 1):
            raise self.error("measure.abandon", f"{abandon!r} is not a factor above 1 "
                             "(e.g. 1.5: abandon configs 1.5x slower than the best)")
        timeout = raw.get("timeout", d.timeout_s)
        if timeout in (None, False, "off"):         # YAML reads a bare off as false
            timeout = None
        else:
            try:
                timeout = parse_duration(timeout)
            except ValueError as err:
                raise self.error("measure.timeout", f"{err}, or off") from None
        duty, duty_s = self.duty(raw.get("duty", d.duty), d.duty_s)
        spec = MeasureSpec(warmup=warmup, repeat=repeat, stop=stop, target=target,
                           min_samples=min_samples, min_time_s=times["min_time"],
                           max_time_s=times["max_time"], batch=batch, graph=graph,
                           abandon=float(abandon) if abandon is not None else None,
                           timeout_s=timeout, duty=duty, duty_s=duty_s)
        return spec, list(CACHE_MODES) if cache == "both" else [cache]

    def duty(self, raw: Any, default_s: float) -> tuple[str, float]:
        """``auto``, ``off`` or ``{cool|load: DURATION}`` (sweeper.measure._duty)."""
        allowed = "auto, off, {cool: 1s} or {load: 500ms}"
        if raw is False or raw == "off":          # YAML reads a bare off as false
            return "off", default_s
        if raw == "auto":
            return "auto", default_s
        if not (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("cool", "load")):
            raise self.error("measure.duty", f"{raw!r} is not a duty schedule; allowed: "
                             f"{allowed}")
        (kind, value), = raw.items()
        try:
            seconds = parse_duration(value)
        except ValueError as err:
            raise self.error(f"measure.duty.{kind}", f"{err}; allowed: {allowed}") from None
        return kind, seconds

    def whole(self, raw: dict[str, Any], key: str, default: int, least: int) -> int:
        value = raw.get(key, default)
        if type(value) is not int or value < least:
            raise self.error(f"measure.{key}", f"{value!r} is not a whole number >= {least}")
        return value

    def budget(self, raw: Any) -> Budget:
        raw = self.keys(raw, "budget", BUDGET_KEYS)
        trials = raw.get("trials")
        if trials is not None and (type(trials) is not int or trials < 1):
            raise self.error("budget.trials", f"{trials!r} is not a whole number >= 1")
        time_s = None
        if "time" in raw:
            try:
                time_s = parse_duration(raw["time"])
            except ValueError as err:
                raise self.error("budget.time", str(err)) from None
        target = raw.get("target")
        if target is not None:
            try:
                target = _fraction(target) if not (isinstance(target, (int, float)) and
                                                   target == 1) else 1.0
            except ValueError:
                raise self.error("budget.target", f"{target!r} is not a fraction of the "
                                 "ceiling (e.g. 95%)") from None
        patience = raw.get("patience")
        if patience is not None and (type(patience) is not int or patience < 1):
            raise self.error("budget.patience", f"{patience!r} is not a whole number >= 1")
        return Budget(trials=trials, time_s=time_s, target=target, patience=patience)


def _fraction(value: Any) -> float:
    """``"0.5%"`` or ``0.005`` -> 0.005; raises ``ValueError`` outside (0, 1)."""
    if isinstance(value, str) and value.strip().endswith("%"):
        value = float(value.strip()[:-1]) / 100
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(value)
    return float(value)


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _kind(data: Any) -> str:
    return {list: "a list", str: "a string", int: "an integer", type(None): "nothing"}.get(
        type(data), type(data).__name__)
