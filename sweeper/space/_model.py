"""The parsed space: frozen dataclasses the rest of sweeper works with.

A space file is read once, at the edge (:mod:`sweeper.space._load`), into a
:class:`Space`.  A sampler proposes a *choice* (axis name -> value label); the
space resolves it, with the device's facts, into a :class:`Config` whose launch
options (grid, block), problem (dtype, footprint) and kernel meta-parameters
(``BLOCK`` ...) are separate fields.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from sweeper.errors import ExpressionError
from sweeper.measure._decide import StopRule
from sweeper.measure._duty import DEFAULT_DUTY, Duty
from sweeper.space._expr import Expr, evaluate
from sweeper.space._units import DTYPES

#: Names every expression may read besides the axes: device facts and problem facts.
FACT_NAMES = ("sms", "l2_bytes", "n", "itemsize")


class AxisRole(enum.Enum):
    LAUNCH = "launch"    # grid, block
    PROBLEM = "problem"  # dtype, footprint
    META = "meta"        # kernel constexprs such as BLOCK


LAUNCH_AXES = ("grid", "block")
PROBLEM_AXES = ("dtype", "footprint", "cache")
CACHE_MODES = ("cold", "warm")


@dataclass(frozen=True)
class Value:
    """One value on an axis: its label as written, and a constant or an expression."""

    label: str
    constant: int | str | None = None
    expr: Expr | None = None


@dataclass(frozen=True)
class Axis:
    name: str
    role: AxisRole
    values: tuple[Value, ...]
    line: int = 0

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(v.label for v in self.values)

    def value(self, label: str) -> Value:
        for v in self.values:
            if v.label == label:
                return v
        raise KeyError(f"{self.name}: no value labelled {label!r}")


@dataclass(frozen=True)
class Constraint:
    expr: Expr
    line: int = 0
    #: for a conditional axis: the axis and its condition, to word the skip reason
    condition_of: tuple[str, str] | None = None

    @property
    def text(self) -> str:
        return self.expr.text


@dataclass(frozen=True)
class MeasureSpec:
    """How each trial is measured.  ``stop`` is ``fixed`` (exactly ``repeat`` samples),
    ``ci`` or ``stdrel`` (adaptive: until the noise is under ``target``)."""

    warmup: int = 10
    repeat: int = 50
    stop: str = "ci"
    target: float = 0.005
    min_samples: int = 10
    min_time_s: float = 0.0
    max_time_s: float = 1.0
    batch: int = 1           # launches per timed sample, between one event pair
    graph: bool = False      # replay the batch from a CUDA graph
    abandon: float | None = None   # stop sampling configs this many times slower than the best
    timeout_s: float | None = 300.0   # a trial with no result by then is hung: recorded, skipped
    #: auto: a cool-down schedule once a problem shows itself power-bound; off; or cool /
    #: load for ``duty_s`` before every config's samples (sweeper.measure._duty)
    duty: str = "auto"
    duty_s: float = DEFAULT_DUTY.seconds

    def fixed_duty(self) -> Duty | None:
        """The schedule the space asks for outright; ``None`` for ``off``, and for ``auto``
        until a problem shows itself power-bound."""
        return Duty(self.duty, self.duty_s) if self.duty in ("cool", "load") else None

    def rule(self) -> StopRule:
        return StopRule(kind=self.stop, repeat=self.repeat, target=self.target,
                        min_samples=self.min_samples, min_time_s=self.min_time_s,
                        max_time_s=self.max_time_s)

    def describe(self) -> str:
        if self.stop == "fixed":
            how = f"{self.warmup} warmup + {self.repeat} timed"
        else:
            how = (f"{self.warmup} warmup, then timed until the {self.stop} noise is under "
                   f"{100 * self.target:g}% (at least {self.min_samples} samples, "
                   f"{self.min_time_s:g} s; at most {self.max_time_s:g} s)")
        fixed = self.fixed_duty()
        if fixed is not None:
            how = f"{fixed.describe()}, then {how}"
        if self.abandon:
            how += f", abandoned early when clearly over {self.abandon:g}x the best"
        if self.graph:
            how += f", {self.batch} launches per sample from a CUDA graph"
        elif self.batch > 1:
            how += f", {self.batch} launches per sample"
        return how


@dataclass(frozen=True)
class Budget:
    trials: int | None = None
    time_s: float | None = None
    target: float | None = None      # fraction of the calibrated ceiling that ends the search
    patience: int | None = None      # measured trials without an improvement beyond noise


@dataclass(frozen=True)
class SamplerSpec:
    name: str = "auto"
    seed: int = 0
    #: one-at-a-time: the config every axis is varied around (axis -> label)
    baseline: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Problem:
    """What the kernel works on: element type and working-set bytes."""

    dtype: str
    footprint: int

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype]

    @property
    def n(self) -> int:
        return self.footprint // self.itemsize


@dataclass(frozen=True)
class Config:
    """A resolved point of the space: everything a launch needs, all concrete."""

    problem: Problem
    grid: int
    block: int
    meta: Mapping[str, int] = field(default_factory=dict)
    #: ``cold``: L2 flushed before each sample; ``warm``: not flushed.
    cache: str = "cold"

    @property
    def num_warps(self) -> int:
        return self.block // 32


@dataclass(frozen=True)
class Tie:
    """Zipped axes: ``members`` move together through ``rows`` (one label per member)."""

    name: str
    members: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def label(self, row: tuple[str, ...]) -> str:
        return ",".join(f"{m}={v}" for m, v in zip(self.members, row))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.label(r) for r in self.rows)


class Invalid(Exception):
    """A choice that cannot be launched: a constraint is false or a value cannot be computed."""


@dataclass(frozen=True)
class Space:
    study: str
    kernel: str
    sampler: SamplerSpec
    axes: tuple[Axis, ...]
    order: tuple[str, ...]            # axis names in dependency order
    constraints: tuple[Constraint, ...] = ()
    measure: MeasureSpec = MeasureSpec()
    budget: Budget = Budget()
    path: str = "<space>"
    text: str = ""
    sha256: str = ""
    ties: tuple[Tie, ...] = ()

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def size(self) -> int:
        total = 1
        for labels in self.choices().values():
            total *= len(labels)
        return total

    def choices(self) -> Mapping[str, tuple[str, ...]]:
        """Dimension -> labels: the categorical search space a sampler sees.  Zipped axes
        are one dimension, named after their group, whose labels are whole rows."""
        tied = {m for t in self.ties for m in t.members}
        out = {a.name: a.labels for a in self.axes if a.name not in tied}
        out.update({t.name: t.labels for t in self.ties})
        return out

    def expand(self, choice: Mapping[str, str]) -> dict[str, str]:
        """A sampler's choice with each zipped group replaced by its members' labels."""
        out = {k: v for k, v in choice.items() if k not in {t.name for t in self.ties}}
        for t in self.ties:
            if t.name in choice:
                row = t.rows[t.labels.index(choice[t.name])]
                out.update(zip(t.members, row))
        return out

    def contract(self, choice: Mapping[str, str]) -> dict[str, str] | None:
        """The inverse of :meth:`expand`; ``None`` when the members match no row."""
        out = dict(choice)
        for t in self.ties:
            row = tuple(str(out.pop(m, "")) for m in t.members)
            if row not in t.rows:
                return None
            out[t.name] = t.label(row)
        return out

    def resolve(self, choice: Mapping[str, str], facts: Mapping[str, int],
                max_footprint: int | None = None) -> Config:
        """Turn a choice of labels into a :class:`Config`, or raise :class:`Invalid`.

        ``facts`` gives ``sms`` and ``l2_bytes``; ``max_footprint`` caps footprints
        (the interpreter) before ``n`` and everything that reads it is computed.
        """
        if any(t.name in choice for t in self.ties):
            choice = self.expand(choice)
        choice = self._complete(choice)
        env: dict[str, int] = {k: facts[k] for k in ("sms", "l2_bytes")}
        dtype = str(self._constant("dtype", choice))
        env["itemsize"] = DTYPES[dtype]
        values: dict[str, int] = {}
        for name in self.order:
            if name in ("dtype", "cache"):
                continue
            value = self.axis(name).value(choice[name])
            if value.expr is not None:
                try:
                    result = evaluate(value.expr, env)
                except ExpressionError as err:
                    raise Invalid(f"{name}: {err}") from None
            else:
                result = value.constant  # type: ignore[assignment]
            if name == "footprint" and max_footprint is not None:
                result = min(int(result), max_footprint)
            values[name] = int(result)
            env[name] = int(result)
            if name == "footprint":
                env["n"] = int(result) // env["itemsize"]
        for c in self.constraints:
            try:
                ok = evaluate(c.expr, env)
            except ExpressionError as err:
                raise Invalid(f"constraint {c.text!r}: {err}") from None
            if not ok:
                shown = ", ".join(f"{k}={env[k]}" for k in sorted(c.expr.names))
                if c.condition_of is not None:
                    axis, when = c.condition_of
                    raise Invalid(f"{axis} only varies when {when!r}; otherwise it stays at "
                                  f"its first value ({shown})")
                raise Invalid(f"constraint {c.text!r} is false ({shown})")
        return self._config(dtype, str(self._constant("cache", choice)), values)

    def _complete(self, choice: Mapping[str, str]) -> Mapping[str, str]:
        """``choice`` with axes of a single value filled in; a missing other axis is a bug."""
        missing = [a for a in self.axes if a.name not in choice]
        if not missing:
            return choice
        full = dict(choice)
        for a in missing:
            if len(a.values) != 1:
                raise KeyError(f"choice {dict(choice)} has no value for axis {a.name!r}")
            full[a.name] = a.labels[0]
        return full

    def _constant(self, name: str, choice: Mapping[str, str]) -> int | str | None:
        return self.axis(name).value(choice[name]).constant

    def _config(self, dtype: str, cache: str, values: Mapping[str, int]) -> Config:
        problem = Problem(dtype=dtype, footprint=values["footprint"])
        grid, block = values["grid"], values["block"]
        if grid < 1:
            raise Invalid(f"grid: {grid} programs; a launch needs at least 1")
        if block < 32 or block > 1024 or block & (block - 1) or block % 32:
            raise Invalid(f"block: {block} threads; allowed: 32, 64, 128, 256, 512, 1024")
        if problem.footprint % problem.itemsize or problem.footprint <= 0:
            raise Invalid(f"footprint: {problem.footprint} bytes is not a positive multiple of "
                          f"{dtype}'s {problem.itemsize} bytes")
        meta = {a.name: values[a.name] for a in self.axes if a.role is AxisRole.META}
        return Config(problem=problem, grid=grid, block=block, meta=meta, cache=cache)
