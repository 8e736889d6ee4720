"""The parsed space: frozen dataclasses the rest of sweeper works with.

A space file is read once, at the edge (:mod:`sweeper.space._parser`), into a
:class:`Space`.  A sampler proposes a *choice* (axis name -> value label); the
space resolves it, with the device's facts, into a :class:`Config` whose launch
options (grid, block), problem (dtype, footprint and the kernel's dimensions) and kernel
meta-parameters (``BLOCK`` ...) are separate fields.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol

from sweeper.core._expr import Expr, evaluate, quoted
from sweeper.core._problem import Problem, Shape, SizeError, default_shape, show_dims
from sweeper.core._units import DTYPES, format_size
from sweeper.errors import ExpressionError
from sweeper.measure._decide import StopRule
from sweeper.measure._duty import DEFAULT_DUTY, Duty

#: Names every expression may read besides the axes: device facts and problem facts.
FACT_NAMES = ("sms", "l2_bytes", "n", "itemsize")


class KernelDeclaration(Protocol):
    """What the parser reads of a kernel's class (``sweeper.kernels.Kernel`` declares it),
    typed here so that the space imports nothing of the kernels."""

    name: ClassVar[str]
    meta_params: ClassVar[Mapping[str, Any]]    # name -> MetaParam (.default, .pow2)
    defaults: ClassVar[Mapping[str, Any]]
    dims: ClassVar[Mapping[str, Any]]           # name -> Dim (sweeper.core._problem)
    footprint_bytes: ClassVar[str]
    dims_from_footprint: ClassVar[Mapping[str, str]]
    options: ClassVar[Mapping[str, str]]        # option -> what it says (kernel: {...})
    dtypes: ClassVar[tuple[str, ...]]           # the dtypes it takes, in DTYPES' order
    launch_shape: ClassVar[LaunchShape]         # the blocks its launch takes

    @classmethod
    def option_problem(cls, key: str, value: str, *, imports: bool = False) -> str | None:
        """Why ``value`` is no valid option ``key``, or ``None`` (``Kernel``'s)."""

    @classmethod
    def specialize(cls, options: Mapping[str, str], params: Any) -> type[KernelDeclaration]:
        """The declaration for these options and the space's ``params`` (``Kernel``'s)."""

    @classmethod
    def values_problem(cls, values: Mapping[str, Sequence[int | str]]) -> tuple[str, str] | None:
        """Why the declaration does not fit the space's values: (option, message), or
        ``None`` (``Kernel``'s)."""


class AxisRole(enum.Enum):
    """Which field of a :class:`Config` an axis sets: a launch option, the problem, or a
    kernel meta-parameter; kept apart so a kernel never mistakes a launch option for its
    own."""

    LAUNCH = "launch"    # grid, block
    PROBLEM = "problem"  # dtype, footprint or the kernel's dimensions, cache
    META = "meta"        # kernel constexprs such as BLOCK


LAUNCH_AXES = ("grid", "block")
#: The pseudo file names a space given as text (``sweeper.run``'s YAML string) and as a
#: dict is called in errors; a dict's YAML is none the caller wrote, so messages name
#: its keys, never its lines.
STRING, DICT = "<string>", "<dict>"
#: The axes of a launch's grid beyond x, which a kernel whose launch takes them
#: (:attr:`LaunchShape.grids`) lets a space give: 1 where none does.
GRID_EXTENTS = ("grid_y", "grid_z")
#: The most blocks a CUDA grid may have in y and in z.
MAX_GRID_YZ = 65535
#: The most threads a CUDA block may have (``blockDim.x × y × z``).
MAX_THREADS = 1024
#: The threads a Triton program may have: num_warps × 32, 1 to 32 warps.
BLOCKS = (32, 64, 128, 256, 512, 1024)
#: The threads a program may have, as a message says what is allowed.
BLOCKS_TEXT = f"{', '.join(map(str, BLOCKS))} (num_warps × 32)"


@dataclass(frozen=True)
class LaunchShape:
    """The blocks a kernel's launch takes, as the kernel declares them: ``sizes``, the
    threads a block may have in x (``None``: any count from 1 to :data:`MAX_THREADS`),
    and ``text``, how a message says them; ``extents``, the meta-parameters that are its
    blocks' further dimensions (``blockDim.y``, ``blockDim.z``) with the most each may
    be, a block's threads being their product with ``block``; ``grids``, the grid axes
    beyond x it takes (:data:`GRID_EXTENTS`).  A Triton program is ``num_warps`` warps
    in one dimension (:data:`WARP_BLOCKS`); a CUDA C block any count of threads a launch
    takes (:data:`THREAD_BLOCKS`, Kernel Tuner's ``[16, 32, 64]`` or ``32 * i``), in up
    to three dimensions, its grid too."""

    sizes: tuple[int, ...] | None
    text: str
    extents: tuple[tuple[str, int], ...] = ()
    grids: tuple[str, ...] = ()

    @property
    def extent_names(self) -> tuple[str, ...]:
        """The names of the block's further dimensions (:attr:`extents`): where no axis
        sweeps one, a grid expression reads it at 1, as each compile defines it and as
        Kernel Tuner's grid divisors default it."""
        return tuple(name for name, _ in self.extents)

    def extent_problem(self, name: str, value: int) -> str | None:
        """Why ``value`` is no extent the launch takes as its block's dimension ``name``
        (one of :attr:`extents`), or ``None``."""
        most = dict(self.extents)[name]
        return None if 1 <= value <= most else \
            f"{name}={value}; allowed: 1 to {most} (blockDim.{name[-1]} of a CUDA block)"

    def allows(self, block: int) -> bool:
        """Whether a block of ``block`` threads is one the launch takes."""
        return block in self.sizes if self.sizes is not None else 1 <= block <= MAX_THREADS

    def problem(self, block: int) -> str | None:
        """Why a block of ``block`` threads is none the launch takes, or ``None``."""
        return None if self.allows(block) else \
            f"{block} threads per program; allowed: {self.text}"


#: A Triton kernel's blocks: ``num_warps`` × 32 threads.
WARP_BLOCKS = LaunchShape(BLOCKS, BLOCKS_TEXT)
#: A CUDA C kernel's blocks: any count of threads a launch takes, in up to three
#: dimensions (Kernel Tuner's ``block_size_y`` and ``block_size_z``, CUDA's limits of 1024
#: and 64), and a grid in up to three (``grid_y``, ``grid_z``).
THREAD_BLOCKS = LaunchShape(None, f"1 to {MAX_THREADS} threads (blockDim.x)",
                            (("block_size_y", MAX_THREADS), ("block_size_z", 64)),
                            GRID_EXTENTS)
#: The most programs a launch takes: CUDA's limit on a grid's x dimension, the largest
#: program count Triton's int32 ``num_programs`` holds.
MAX_GRID = 2**31 - 1
PROBLEM_AXES = ("dtype", "footprint", "cache")
CACHE_MODES = ("cold", "warm")
#: The most configs a space may have: every one of them is enumerated before a sweep.
MAX_CONFIGS = 1_000_000


@dataclass(frozen=True)
class Origin:
    """Where a piece of the space was written, for an error about it found later."""

    file: str = "<space>"
    line: int | None = None
    path: str = ""


@dataclass(frozen=True)
class Value:
    """One value on an axis: its label as written, and a constant or an expression."""

    label: str
    constant: int | str | None = None
    expr: Expr | None = None
    origin: Origin = field(default=Origin(), compare=False)

    def number(self, env: Mapping[str, int]) -> int:
        """The value as a number, its expression evaluated with the names in ``env`` (an
        :class:`ExpressionError` when it cannot be)."""
        if self.expr is not None:
            return int(evaluate(self.expr, env))
        return int(self.constant)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Axis:
    """One swept parameter: its name, its role and its values in the order written."""

    name: str
    role: AxisRole
    values: tuple[Value, ...]
    origin: Origin = field(default=Origin(), compare=False)

    @property
    def labels(self) -> tuple[str, ...]:
        """The value labels in the order written: what a sampler chooses among."""
        return tuple(v.label for v in self.values)

    @cached_property
    def _by_label(self) -> dict[str, Value]:
        return {v.label: v for v in self.values}

    def value(self, label: str) -> Value:
        """The value labelled ``label``; a KeyError names the axis and the label."""
        try:
            return self._by_label[label]
        except KeyError:
            raise KeyError(f"{self.name}: no value labelled {label!r}") from None


@dataclass(frozen=True)
class Constraint:
    """A boolean expression every config must satisfy (``constraints:`` in the file, or an
    axis's ``when:``); a config for which it is false is ruled out, never launched, and
    counted under ``origin``."""

    expr: Expr
    origin: Origin = field(default=Origin(), compare=False)
    #: for a conditional axis: the axis and its condition, to word the skip reason
    condition_of: tuple[str, str] | None = None

    @property
    def text(self) -> str:
        """The expression as the file wrote it, as skip reasons quote it."""
        return self.expr.text


def warmup_turns(warmup: int, warmup_time_s: float | None, launch_s: float) -> int:
    """Turns of the timer's loop before a trial's samples: ``warmup``, or only two where
    two launches of ``launch_s`` take ``warmup_time_s`` or more.  Two turns of launches
    of 0.7 ms or more measured the same as ten: on an H100 the 204 configs of
    ``spaces/copy.yaml`` (1 GiB fp32) kept their medians within 0.55 % of ten turns'
    (two sweeps with ten differ by up to 0.42 %) and their winner, and the command took
    16.0 s instead of 18.0 s (docs/benchmarks.md).  A short kernel's first samples need
    the ten (:func:`~sweeper.measure.time_cuda`)."""
    if warmup_time_s is not None and warmup > 2 and 2 * launch_s >= warmup_time_s:
        return 2
    return warmup


@dataclass(frozen=True)
class MeasureSpec:
    """How each trial is measured.  ``stop`` is ``fixed`` (exactly ``repeat`` samples),
    ``ci`` or ``stdrel`` (adaptive: until the noise is under ``target``)."""

    warmup: int = 10
    #: where two warmup turns' launches take this long (seconds), those two are the warmup
    #: (:func:`warmup_turns`); ``None``: always ``warmup`` turns
    warmup_time_s: float | None = 0.001
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
    #: under ``duty: auto`` once a problem is power-bound, what precedes each finalist's
    #: samples: ``cool`` (:data:`~sweeper.measure._duty.DEFAULT_DUTY`'s cool-down) or
    #: ``sustained`` (back to back, as the sweep measured them)
    finals_duty: str = "cool"

    def fixed_duty(self) -> Duty | None:
        """The schedule the space asks for outright; ``None`` for ``off``, and for ``auto``
        until a problem shows itself power-bound."""
        return Duty(self.duty, self.duty_s) if self.duty in ("cool", "load") else None

    def warmup_turns(self, launch_s: float) -> int:
        """The warmup turns a trial whose launches take ``launch_s`` seconds gets."""
        return warmup_turns(self.warmup, self.warmup_time_s, launch_s)

    def rule(self) -> StopRule:
        """The stopping rule these settings ask for."""
        return StopRule(kind=self.stop, repeat=self.repeat, target=self.target,
                        min_samples=self.min_samples, min_time_s=self.min_time_s,
                        max_time_s=self.max_time_s)

    def describe(self) -> str:
        """How each trial is measured, in one line: warmup, stopping rule, duty schedule,
        abandoning and batching, as a run's header and a report say it."""
        warm = f"{self.warmup} warmup"
        if self.warmup_time_s is not None and self.warmup > 2:
            t = self.warmup_time_s
            warm += f" (2 where they take {f'{t * 1e3:g} ms' if t < 1 else f'{t:g} s'})"
        if self.stop == "fixed":
            how = f"{warm} + {self.repeat} timed"
        else:
            how = (f"{warm}, then timed until the {self.stop} noise is under "
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
    """What ends a search, whichever comes first: ``trials`` measured, ``time_s`` of wall
    time, a rate of ``target`` times the calibrated ceiling, or ``patience`` trials without
    an improvement beyond noise; ``None``: no such limit."""

    trials: int | None = None
    time_s: float | None = None
    target: float | None = None      # fraction of the calibrated ceiling that ends the search
    patience: int | None = None      # measured trials without an improvement beyond noise


@dataclass(frozen=True)
class SamplerSpec:
    """The sampler by its registered name, its seed (the same seed proposes the same
    configs), and for one-at-a-time the config every axis is varied around."""

    name: str = "auto"
    seed: int = 0
    #: one-at-a-time: the config every axis is varied around (axis -> label)
    baseline: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Config:
    """A resolved point of the space: everything a launch needs, all concrete."""

    problem: Problem
    grid: int
    block: int
    meta: Mapping[str, int] = field(default_factory=dict)
    #: ``cold``: L2 flushed before each sample; ``warm``: not flushed.
    cache: str = "cold"
    #: the grid in y and z (a CUDA C launch's ``gridDim.y``, ``gridDim.z``): 1 unless the
    #: space gives them (:data:`GRID_EXTENTS`)
    grid_y: int = 1
    grid_z: int = 1

    @property
    def num_warps(self) -> int:
        """Warps per program: ``block`` threads over the 32 of a warp."""
        return self.block // 32

    @property
    def grid_extents(self) -> dict[str, int]:
        """The grid beyond x where it is not 1 (``{"grid_y": 64}``): what a line naming
        the launch adds after its grid (:func:`launch_text`)."""
        return {k: v for k, v in (("grid_y", self.grid_y), ("grid_z", self.grid_z)) if v != 1}


def grid_labels(choice: Mapping[str, Any], config: Config) -> dict[str, str]:
    """The labels ``choice`` gave the grid of ``config`` beyond x (``{"grid_y": "cdiv(M,
    16)"}``), where its space gives one (:data:`GRID_EXTENTS`; a meta-parameter of that
    name is no grid): what a tuning file keeps as ``grid_y_expr``, for a lookup to
    compute it at another problem, as ``grid``'s label is ``grid_expr``."""
    return {k: str(choice[k]) for k in GRID_EXTENTS if k in choice and k not in config.meta}


def launch_text(grid: int | str, block: int, meta: Mapping[str, int],
                extents: Mapping[str, int | str] | None = None) -> str:
    """``grid=6 block=64 BLOCK=512``: a config's launch as every line names it (``grid``
    may be its label with its value, ``sms (=132)``); ``extents``, its grid beyond x
    (:attr:`Config.grid_extents`), after its grid (``grid=8 grid_y=64 block=16 ...``)."""
    grids = "".join(f" {k}={v}" for k, v in (extents or {}).items())
    return f"grid={grid}{grids} block={block}" + "".join(f" {k}={v}" for k, v in meta.items())


@dataclass(frozen=True)
class Tie:
    """Zipped axes: ``members`` move together through ``rows`` (one label per member)."""

    name: str
    members: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def label(self, row: tuple[str, ...]) -> str:
        """One row's label: ``member=value`` pairs joined by commas."""
        return ",".join(f"{m}={v}" for m, v in zip(self.members, row, strict=True))

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels of every row: what a sampler chooses among for the group."""
        return tuple(self.label(r) for r in self.rows)


class Invalid(Exception):
    """A choice that cannot be launched: a constraint is false or a value cannot be computed.
    ``origin`` is the value or constraint in the space file that ruled it out."""

    def __init__(self, reason: str, origin: Origin = Origin()) -> None:
        super().__init__(reason)
        self.origin = origin


@dataclass
class Resolving:
    """What resolving a choice has found so far: the names expressions read (the device's
    facts, then each axis's value and the problem's), the value each axis took, and
    the problem once its size axes are known."""

    env: dict[str, int]
    chosen: dict[str, Value] = field(default_factory=dict)
    problem: Problem | None = None

    @classmethod
    def start(cls, facts: Mapping[str, int]) -> Resolving:
        """Nothing resolved yet: only the device's ``sms`` and ``l2_bytes`` known."""
        return cls({k: facts[k] for k in ("sms", "l2_bytes")})


#: A step's work on a choice (axis -> label): adds to what was found, or raises Invalid.
StepRun = Callable[[Mapping[str, str], Resolving], None]


@dataclass(frozen=True)
class Step:
    """One step of :meth:`Space.resolve`: the dimensions whose labels it reads, the names
    it reads and those it sets, and its work."""

    dims: frozenset[str]
    reads: frozenset[str]
    gives: frozenset[str]
    run: StepRun


def dimensions(axes: Sequence[Axis], ties: Sequence[Tie]) -> dict[str, tuple[str, ...]]:
    """Dimension -> labels for ``axes`` with the zipped groups ``ties``: each group one
    dimension, named after it, whose labels are whole rows (:meth:`Space.choices`)."""
    tied = {m for t in ties for m in t.members}
    out = {a.name: a.labels for a in axes if a.name not in tied}
    out.update({t.name: t.labels for t in ties})
    return out


@dataclass(frozen=True)
class Space:
    """A validated space file: the study's name, the kernel, the sampler, the axes and
    constraints, how each trial is measured and the budget.  ``text`` is every file read
    (those it extends too) and ``sha256`` its hash, so a study records exactly what it
    was run from; ``content_sha256`` is the hash of what they say (their YAML parsed and
    merged, before ``-p``), which comments, whitespace, quoting and the order of keys
    leave as it is: a study is resumed by it."""

    study: str
    kernel: str
    sampler: SamplerSpec
    axes: tuple[Axis, ...]
    order: tuple[str, ...]            # axis names in dependency order
    constraints: tuple[Constraint, ...] = ()
    measure: MeasureSpec = MeasureSpec()
    budget: Budget = Budget()
    path: str = "<space>"
    #: the folder, absolute and resolved (no ``..``, no link), that its relative file
    #: names (a ``cuda`` kernel's ``source``, a ``file.py:function`` reference) were read
    #: from: the space file's own, or the working folder for a space given as text; a
    #: study records it, so that a command run later from another folder reads those
    #: files as the run did
    folder: str = ""
    text: str = ""
    sha256: str = ""
    content_sha256: str = ""
    #: ``content_sha256`` of what the files say with ``-p`` applied: two spaces that
    #: measure alike have the same (``sweeper ab`` names its samples by it)
    applied_sha256: str = ""
    ties: tuple[Tie, ...] = ()
    #: the options ``kernel:`` gives (``op`` for ``torch-op``), sorted by name
    kernel_options: tuple[tuple[str, str], ...] = ()
    #: the kernel's dimensions and how they and the footprint follow from each other
    shape: Shape = field(default_factory=default_shape)
    #: the blocks the kernel's launch takes (:attr:`KernelDeclaration.launch_shape`)
    launch_shape: LaunchShape = WARP_BLOCKS

    @property
    def keyed(self) -> bool:
        """Whether the space was given as a dict (:data:`DICT`): its text is YAML dumped
        from it, whose lines the caller never saw, so a message names its keys."""
        return self.path == DICT

    @property
    def sizes(self) -> tuple[str, ...]:
        """The axes that size the problem: ``footprint``, or the kernel's dimensions."""
        return ("footprint",) if "footprint" in self._by_name else self.shape.names

    def axis(self, name: str) -> Axis:
        """The axis called ``name``; a KeyError for an unknown one."""
        return self._by_name[name]

    @property
    def grid_extents(self) -> tuple[str, ...]:
        """The launch axes of the grid beyond x the space gives (``grid_y``, ``grid_z``:
        those of :data:`GRID_EXTENTS` its kernel's launch takes); a config of a space
        without one launches 1 there."""
        return tuple(g for g in GRID_EXTENTS if g in self._by_name and
                     self._by_name[g].role is AxisRole.LAUNCH)

    @cached_property
    def _by_name(self) -> dict[str, Axis]:
        return {a.name: a for a in self.axes}

    @property
    def size(self) -> int:
        """Configs in the space before constraints: the product of each dimension's
        labels."""
        return math.prod(len(labels) for labels in self.choices().values())

    def choices(self) -> Mapping[str, tuple[str, ...]]:
        """Dimension -> labels: the categorical search space a sampler sees.  Zipped axes
        are one dimension, named after their group, whose labels are whole rows."""
        return dimensions(self.axes, self.ties)

    def expand(self, choice: Mapping[str, Any]) -> dict[str, str]:
        """A sampler's choice (its params, labels or values Optuna gave back) as labels,
        each zipped group replaced by its members' labels."""
        out = {k: str(v) for k, v in choice.items() if k not in {t.name for t in self.ties}}
        for t in self.ties:
            if t.name in choice:
                row = t.rows[t.labels.index(str(choice[t.name]))]
                out.update(zip(t.members, row, strict=True))
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
        """Turn a choice of labels into a :class:`Config`, or raise :class:`Invalid`
        carrying the reason and the value or constraint of the file that gave it.

        ``facts`` gives ``sms`` and ``l2_bytes``; ``max_footprint`` caps problems (the
        interpreter) before ``n``, the dimensions and everything that reads them are
        computed: a footprint is lowered to it, dimensions shrink by one factor.
        """
        if any(t.name in choice for t in self.ties):
            choice = self.expand(choice)
        choice = self._complete(choice)
        state = Resolving.start(facts)
        for step in self.steps(max_footprint):
            step.run(choice, state)
        assert state.problem is not None
        return Config(problem=state.problem, grid=state.env["grid"], block=state.env["block"],
                      meta={a.name: state.env[a.name] for a in self.axes
                            if a.role is AxisRole.META},
                      cache=str(self.constant("cache", choice)),
                      **{g: state.env[g] for g in self.grid_extents})

    def dimension_of(self, axis: str) -> str:
        """The sampler's dimension that sets ``axis`` (its zipped group's, or its own)."""
        return next((t.name for t in self.ties if axis in t.members), axis)

    def steps(self, max_footprint: int | None = None) -> tuple[Step, ...]:
        """What :meth:`resolve` does, step by step, in order (:func:`make_steps`)."""
        steps = self.__dict__.setdefault("_steps", {})    # not pickled: closures
        if max_footprint not in steps:
            steps[max_footprint] = tuple(make_steps(self, max_footprint))
        return steps[max_footprint]  # type: ignore[no-any-return]

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_steps"}

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

    def constant(self, name: str, choice: Mapping[str, str]) -> int | str | None:
        """The constant value of axis ``name`` that ``choice`` picks (dtype, cache)."""
        return self.axis(name).value(choice[name]).constant


# -- resolving step by step ------------------------------------------------------------------
# The steps of resolving a choice into a config (:meth:`Space.resolve`), each with what
# it reads: the labels of which dimensions, which names.
#
# ``resolve`` runs them in order on one choice; the first that raises :class:`Invalid`
# gives the reason.  Knowing what each step reads lets :class:`sweeper.space.Configs`
# run each over only the labels it reads (a constraint ``BLOCK >= block`` over BLOCK's
# and block's, not over every config of the space), so a space of 10⁶ configs is sorted
# out in a fraction of a second where resolving each took minutes.


def make_steps(space: Space, max_footprint: int | None) -> list[Step]:
    """The steps of ``space.resolve`` with problems capped at ``max_footprint``: the
    dtype's item size; the block's extents no axis sweeps, at 1, for a grid to read
    (:attr:`LaunchShape.extent_names`); each axis's value in dependency order, the
    problem once its size axes are known; each constraint; the grid and the block a
    launch can take (the kernel's :attr:`Space.launch_shape`)."""
    dtype_dim = frozenset({space.dimension_of("dtype")})

    def itemsize(choice: Mapping[str, str], state: Resolving) -> None:
        state.env["itemsize"] = DTYPES[str(space.constant("dtype", choice))]

    shape, named = space.launch_shape, {a.name for a in space.axes}
    unswept = tuple(e for e in shape.extent_names if e not in named)

    def unswept_extents(choice: Mapping[str, str], state: Resolving) -> None:
        state.env.update(dict.fromkeys(unswept, 1))

    out = [Step(dtype_dim, frozenset(), frozenset({"itemsize"}), itemsize)]
    if unswept:              # a grid reads a block's extent no axis sweeps at 1
        out.append(Step(frozenset(), frozenset(), frozenset(unswept), unswept_extents))
    sizes, given = space.sizes, set()
    for name in space.order:
        if name in ("dtype", "cache"):
            continue
        reads = frozenset().union(*(v.expr.names for v in space.axis(name).values
                                    if v.expr is not None))
        out.append(Step(frozenset({space.dimension_of(name)}), reads, frozenset({name}),
                        _value_step(space, name)))
        given.add(name)
        if name in sizes and given.issuperset(sizes):
            out.append(Step(dtype_dim, frozenset(sizes),
                            frozenset({"footprint", "n", *space.shape.names}),
                            _problem_step(space, max_footprint)))
    out += [Step(frozenset(), c.expr.names, frozenset(), _constraint_step(c))
            for c in space.constraints]
    extents = tuple(e for e in shape.extent_names if e in named)
    return [*out, Step(frozenset(), frozenset({"grid"}), frozenset(), _grid_step),
            *(Step(frozenset(), frozenset({g}), frozenset(), _grid_extent_step(g))
              for g in space.grid_extents),
            Step(frozenset(), frozenset({"block", *extents}), frozenset(),
                 _block_step(shape, extents))]


def _value_step(space: Space, name: str) -> StepRun:
    axis = space.axis(name)

    def value_of(choice: Mapping[str, str], state: Resolving) -> None:
        value = state.chosen[name] = axis.value(choice[name])
        try:
            state.env[name] = value.number(state.env)
        except ExpressionError as err:
            raise Invalid(f"{name}: {err}", value.origin) from None
    return value_of


def _problem_step(space: Space, max_footprint: int | None) -> StepRun:
    by_footprint = "footprint" in space.sizes
    #: per device facts: each shrunk problem's place (:func:`shrunk_problems`)
    placed: dict[tuple[int, int], dict[tuple[str, tuple[str, ...]], Shrunk]] = {}

    def problem_of(choice: Mapping[str, str], state: Resolving) -> None:
        dtype = str(space.constant("dtype", choice))
        try:
            problem = space.shape.problem(dtype, state.env, max_footprint,
                                          by_footprint=by_footprint)
        except SizeError as err:
            raise Invalid(str(err), state.chosen[err.axis].origin) from None
        if max_footprint is not None:
            facts = (state.env["sms"], state.env["l2_bytes"])
            if facts not in placed:
                placed[facts] = {(s.dtype, s.labels): s for s in shrunk_problems(
                    space, dict(zip(("sms", "l2_bytes"), facts, strict=True)), max_footprint)}
            found = placed[facts].get((dtype, tuple(choice[n] for n in space.sizes)))
            if found is not None and found.same_as is not None:
                raise Invalid(found.merge_reason(max_footprint),
                              state.chosen[space.sizes[0]].origin)
            if found is not None:
                problem = found.problem
        state.problem = problem
        state.env.update(problem.dims)
        state.env.update(footprint=problem.footprint, n=problem.n)
    return problem_of


@dataclass(frozen=True)
class Shrunk:
    """A problem of a space that a device's cap on footprints (the interpreter's) makes
    smaller: its dtype, the size axes' labels and values asked for, the problem measured
    instead (:func:`shrunk_problems` places it), and ``same_as``, the problem of the space
    (as :attr:`asked_text` names it) it had to merge with, where it found no place apart:
    this one is then ruled out, so the shrunk problem is measured once
    (:meth:`Space.resolve` says so in its reason)."""

    dtype: str
    labels: tuple[str, ...]
    asked: tuple[tuple[str, int], ...]
    problem: Problem
    same_as: str | None = None

    @property
    def asked_text(self) -> str:
        """The problem as the space names it: ``n_elements=1048576``, ``footprint=1GiB``."""
        if self.asked and self.asked[0][0] == "footprint":
            return f"footprint={self.labels[0]}"
        return show_dims(self.asked)

    def changes(self) -> str:
        """What was measured instead, value by value: ``cols 1000 → 31, rows 4096 →
        128``, ``footprint 1GiB → 16KiB``."""
        if self.asked and self.asked[0][0] == "footprint":
            return f"footprint {format_size(self.asked[0][1])} → " \
                   f"{format_size(self.problem.footprint)}"
        ran = dict(self.problem.dims)
        return ", ".join(f"{n} {v} → {ran[n]}" for n, v in self.asked if ran.get(n, v) != v)

    def describe(self, dtypes: bool = False) -> str:
        """One problem's line: its changes, and the problem it merged with if it did;
        with ``dtypes``, the dtype first (a space of several, which shrink apart)."""
        out = (f"{self.dtype} " if dtypes else "") + self.changes()
        if self.same_as is not None:
            out += f" (as {self.same_as} does: measured once, as {self.same_as})"
        return out

    def merge_reason(self, max_footprint: int) -> str:
        """Why this problem's configs are ruled out: another one shrinks to it too
        (:func:`merged`)."""
        return (f"{self.asked_text} shrinks to {self.problem.describe()} under the "
                f"device's {format_size(max_footprint)} cap, as {self.same_as} does: "
                f"{MERGED} {self.same_as}")


#: What a config's reason says where it was ruled out because its problem shrinks onto
#: another's (:meth:`Shrunk.merge_reason`), not by a constraint or value.
MERGED = "that problem is measured once, as"


def merged(reason: str) -> bool:
    """Whether a ruled-out config's ``reason`` is a problem shrunk onto another's."""
    return MERGED in reason


#: The most further shrinks one problem takes to stay apart from the others before it
#: merges: each is a search over the dimensions' factor.
MAX_STEPS_APART = 32


def shrunk_problems(space: Space, facts: Mapping[str, int], max_footprint: int | None
                    ) -> tuple[Shrunk, ...]:
    """Every problem of ``space`` that ``max_footprint`` makes smaller, in the order the
    space lists them, and what each is measured as.  Problems stay apart where they can:
    one that shrinks onto another problem of the space shrinks further (the largest asked
    for keeping the largest place), as long as it stays above every problem of its dtype
    asked smaller that needs no shrinking (sizes keep their order); where it cannot, it
    merges with the problem it shrank onto (``same_as``), which is measured once.  Empty
    without a cap, or where a size axis's value reads another axis (its problems are known
    only config by config)."""
    if max_footprint is None:
        return ()
    sizes, by_footprint = space.sizes, "footprint" in space.sizes
    known = {"sms", "l2_bytes", "itemsize"}
    if any(v.expr is not None and not v.expr.names <= known
           for n in sizes for v in space.axis(n).values):
        return ()
    dims = list(dict.fromkeys(space.dimension_of(n) for n in ("dtype", *sizes)))
    labels_of = space.choices()
    asked: dict[tuple[str, tuple[str, ...]], tuple[dict[str, int], Problem]] = {}
    for combo in itertools.product(*(labels_of[d] for d in dims)):
        choice = space.expand(dict(zip(dims, combo, strict=True)))
        dtype = str(space.constant("dtype", choice))
        key = (dtype, tuple(choice[n] for n in sizes))
        if key in asked:
            continue
        env = {"sms": facts["sms"], "l2_bytes": facts["l2_bytes"], "itemsize": DTYPES[dtype]}
        try:
            values = {n: space.axis(n).value(choice[n]).number(env) for n in sizes}
            asked[key] = (values, space.shape.problem(dtype, values, None,
                                                       by_footprint=by_footprint))
        except (ExpressionError, SizeError):
            continue

    def shrunk(key: tuple[str, tuple[str, ...]], cap: int) -> Problem | None:
        try:
            return space.shape.problem(key[0], asked[key][0], cap, by_footprint=by_footprint)
        except SizeError:
            return None

    def named(key: tuple[str, tuple[str, ...]]) -> str:
        return Shrunk(key[0], key[1], tuple(asked[key][0].items()), asked[key][1]).asked_text

    kept = {key: p for key, (_, p) in asked.items() if p.footprint <= max_footprint}
    taken = {p: named(key) for key, p in kept.items()}
    placed: dict[tuple[str, tuple[str, ...]], tuple[Problem, str | None]] = {}
    for key in sorted(asked.keys() - kept.keys(), key=lambda k: -asked[k][1].footprint):
        first = shrunk(key, max_footprint)
        if first is None:
            continue
        floor = max((p.footprint for k, p in kept.items() if k[0] == key[0] and
                     p.footprint < asked[key][1].footprint), default=0)
        found: Problem | None = first
        for _ in range(MAX_STEPS_APART):
            if found is None or found not in taken or found.footprint <= floor:
                break
            found = shrunk(key, found.footprint - 1)
        if found is None or found in taken or found.footprint <= floor:
            placed[key] = (first, taken.get(first))
        else:
            placed[key] = (found, None)
            taken[found] = named(key)
    return tuple(Shrunk(key[0], key[1], tuple(asked[key][0].items()), *placed[key])
                 for key in asked if key in placed)


def _constraint_step(c: Constraint) -> StepRun:
    def holds(choice: Mapping[str, str], state: Resolving) -> None:
        env = state.env
        try:
            ok = evaluate(c.expr, env)
        except ExpressionError as err:
            raise Invalid(f"constraint {quoted(c.text)}: {err}", c.origin) from None
        if not ok:
            shown = ", ".join(f"{k}={env[k]}" for k in sorted(c.expr.names))
            if c.condition_of is not None:
                axis, when = c.condition_of
                raise Invalid(f"{axis} only varies when {when!r}; otherwise it stays at "
                              f"its first value ({shown})", c.origin)
            raise Invalid(f"constraint {quoted(c.text)} is false ({shown})", c.origin)
    return holds


def _grid_step(choice: Mapping[str, str], state: Resolving) -> None:
    grid = state.env["grid"]
    if grid < 1 or grid > MAX_GRID:
        raise Invalid(f"grid: {grid} programs; allowed: 1 to {MAX_GRID} (a launch needs "
                      "at least 1, and CUDA takes no more)", state.chosen["grid"].origin)


def _grid_extent_step(name: str) -> StepRun:
    def extent_of(choice: Mapping[str, str], state: Resolving) -> None:
        grid = state.env[name]
        if not 1 <= grid <= MAX_GRID_YZ:
            raise Invalid(f"{name}: {grid} blocks; allowed: 1 to {MAX_GRID_YZ} (a launch "
                          "needs at least 1, and CUDA takes no more in y or z)",
                          state.chosen[name].origin)
    return extent_of


def _block_step(shape: LaunchShape, extents: tuple[str, ...]) -> StepRun:
    """The step that rules out a block the launch cannot take: its threads in x
    (``shape``), and where the kernel's blocks have further dimensions the space sweeps
    (``extents``: ``block_size_y`` ...), each of them and the threads of all, at most
    :data:`MAX_THREADS` (at the line of the first extent's value)."""
    def block_of(choice: Mapping[str, str], state: Resolving) -> None:
        block = state.env["block"]
        if not shape.allows(block):
            raise Invalid(f"block: {block} threads; allowed: {shape.text}",
                          state.chosen["block"].origin)
        for name in extents:
            wrong = shape.extent_problem(name, state.env[name])
            if wrong is not None:
                raise Invalid(wrong, state.chosen[name].origin)
        sizes = [state.env[n] for n in ("block", *extents)]
        threads = math.prod(sizes)
        if threads > MAX_THREADS:       # the values last, so configs alike count as one
            raise Invalid(f"{' × '.join(('block', *extents))} must be at most {MAX_THREADS} "
                          f"threads, the most a CUDA block has ({' × '.join(map(str, sizes))} "
                          f"= {threads})", state.chosen[extents[0]].origin)
    return block_of
