"""A built-in model a user's kernel declares, for ``auto``: ``model: {streaming: ...}``,
``{tiled: ...}`` or ``{rowwise: ...}``.

A user's kernel (the ``cuda`` kernel of a ``.cu`` file, a :func:`sweeper.kernel`) has no
``Kernel.model`` of its own, so ``auto`` searches it without one.  Where one of the
built-ins' models describes it, it may say which, and how its parameters map onto the
model's, where its other declarations are: in the space file's ``kernel:`` mapping for
``cuda``, in ``sweeper.kernel(..., model=...)`` for a Python kernel::

    model: {streaming: {tile: "block * VEC * UNROLL", inputs: 1}}

says: an elementwise kernel that streams ``inputs`` arrays in and one out, each program
moving ``tile`` elements of each array per step (an expression over the launch's
``block``, the meta-parameters and ``itemsize``), so its guess of a config is
:func:`~sweeper.kernels._guess.streaming` at that tile.  ::

    model: {tiled: {m: M, n: N, k: K, tile_m: BLOCK_M, tile_n: BLOCK_N, tile_k: BLOCK_K,
                    stages: num_stages}}

says: a matmul of ``m × k`` by ``k × n`` (expressions over the problem's dimensions) whose
programs loop over ``tile_m × tile_n`` tiles of C, ``tile_k`` of K a step, with
``stages`` operand buffers in flight (expressions over ``block``, the meta-parameters and
``itemsize``) and ``split_k`` slices of K (default 1): the built-in matmul's model,
:func:`~sweeper.kernels._guess.tiled`.  By default its operands load and C is stored by
pointer; ``tma`` (operands through the tensor memory accelerator), ``epilogue`` (shared
memory a program holds beside its operand buffers, such as a TMA store's staged tile) and
``flatten`` (the tile loop flattened into the K loop) declare the rest of what the
built-in kernel does.  ::

    model: {rowwise: {rows: rows, cols: cols, tile: BLOCK}}

says: a kernel over ``rows × cols`` (expressions over the problem's dimensions) whose
programs take a row a step and load it ``tile`` columns at a time, reading a row of more
columns than that twice (the second time from the L2 where it fits), as softmax or a
layer norm does: :func:`~sweeper.kernels._guess.rowwise`.

Every check is made where the declaration is read, so a bad one is refused before
anything runs: what it is (one model, its settings, their types), the names each
expression reads (against the kernel's meta-parameters, and a tiled model's sizes against
its dimensions where the kernel declares them), and, once the space's axes are known,
that each is at least one at every combination of their values (``values_problem``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeper.core import Config, Expr, evaluate, parse
from sweeper.core._units import did_you_mean, unknown_name
from sweeper.errors import ExpressionError, SweeperError
from sweeper.kernels._base import OptionError
from sweeper.kernels._guess import rowwise, streaming, tiled

if TYPE_CHECKING:
    from sweeper.core import DeviceFacts

#: The models a kernel may declare, each with its settings: what each says.
MODELS: Mapping[str, Mapping[str, str]] = {
    "streaming": {
        "tile": "the elements of each array one program moves per step: an expression "
                "such as block * VEC, or a positive integer",
        "inputs": "the arrays it reads (it writes one); default: its declared inputs",
    },
    "tiled": {
        "m": "C's rows: an expression over the problem's dimensions, such as M",
        "n": "C's columns: an expression over the problem's dimensions, such as N",
        "k": "the inner dimension: an expression over the problem's dimensions, such as K",
        "tile_m": "the rows of C one program computes at a time: an expression such as "
                  "BLOCK_M, or a positive integer",
        "tile_n": "the columns of C one program computes at a time, such as BLOCK_N",
        "tile_k": "the elements of K one step loads, such as BLOCK_K",
        "stages": "the operand buffers in flight, such as num_stages; default: 3",
        "split_k": "the slices of K, each summed apart in float32 and added by a second "
                   "launch; default: 1",
        "epilogue": "the bytes of shared memory one program holds beside its operand "
                    "buffers (a TMA store's staged tile of C); default: 0",
        "tma": "1 where the operands load through the tensor memory accelerator, 0 where "
               "by pointer, such as TMA; default: 0",
        "flatten": "1 where the loop over tiles is flattened into the K loop "
                   "(tl.range(..., flatten=True)); default: 0",
    },
    "rowwise": {
        "rows": "the rows: an expression over the problem's dimensions, such as rows",
        "cols": "the columns of a row: an expression over the problem's dimensions, such "
                "as cols",
        "tile": "the columns one program loads a step, such as BLOCK: a row of more "
                "columns than that is read twice (its second read from the L2 where it "
                "fits)",
    },
}
#: What a declaration looks like, for messages.
FORM = "{streaming: {tile: EXPR, inputs: N}}"
FORMS = {"streaming": FORM,
         "tiled": "{tiled: {m: M, n: N, k: K, tile_m: BLOCK_M, tile_n: BLOCK_N, tile_k: "
                  "BLOCK_K, stages: num_stages}}",
         "rowwise": "{rowwise: {rows: rows, cols: cols, tile: BLOCK}}"}
#: What a refusal of a launch setting shows as an expression it could be.
LAUNCH_EXAMPLES = {"tile_m": "BLOCK_M", "tile_n": "BLOCK_N", "tile_k": "BLOCK_K",
                   "stages": "num_stages", "split_k": "SPLIT_K", "tile": "BLOCK"}
#: Each model's settings a declaration must give.
REQUIRED = {"streaming": ("tile",), "tiled": ("m", "n", "k", "tile_m", "tile_n", "tile_k"),
            "rowwise": ("rows", "cols", "tile")}
#: Each model's settings over the problem's dimensions; its others read the launch.
SIZES = {"streaming": (), "tiled": ("m", "n", "k"), "rowwise": ("rows", "cols")}
#: The defaults of settings a declaration may leave out (the tiled model's): Triton's
#: ``num_stages`` on Hopper, K in one slice, pointer loads and stores, a loop per tile.
DEFAULTS = {"stages": "3", "split_k": "1", "epilogue": "0", "tma": "0", "flatten": "0"}
#: The unit a model's settings count in, for messages (a streaming tile's elements).
UNITS = {"streaming": " elements"}
#: The least value of the settings that may be zero (the tiled model's flags and bytes);
#: every other setting's is one.
LEAST = {"epilogue": 0, "tma": 0, "flatten": 0}
#: The names a tile reads besides the meta-parameters: one program's threads and the
#: bytes of an element (a tile given in bytes: ``block * 16 // itemsize``).
TILE_NAMES = ("block", "itemsize")
#: The most arrays ``inputs`` may count (a guess's bytes in flight grow with them).
MAX_INPUTS = 64
#: The most combinations of the space's values a tile is evaluated at as the space is
#: read (a tenth of a second): zipped axes may hold more combinations than the space has
#: configs; the rest are checked as each config is guessed (:meth:`DeclaredModel.values_of`).
MOST_CHECKED = 1 << 16


@dataclass(frozen=True)
class DeclaredModel:
    """A declared model (``name``, one of :data:`MODELS`): each of its settings by name,
    as an expression (those of :data:`SIZES` over the problem's dimensions, the rest over
    the launch's block, meta-parameters and itemsize); ``inputs``, the arrays a
    ``streaming`` model reads (one is written); ``text`` the declaration as written, for
    messages and docs.  What it gives the kernel that declares it: its guess of a config
    (``__call__``), the check of a config's settings (:meth:`check`), the names its
    launch settings and its sizes read (``launch_names``: a run checks every config where
    an axis of these is given as an expression,
    :func:`sweeper.engine._inputs.refuse_bad_model`; ``size_names``), and the check of
    the space's values (:meth:`values_problem`)."""

    name: str
    settings: Mapping[str, Expr]
    text: str
    inputs: int = 0

    @property
    def launch_names(self) -> frozenset[str]:
        """The names the settings over the launch read (block, itemsize,
        meta-parameters)."""
        return frozenset().union(*(e.names for k, e in self.settings.items()
                                   if k not in SIZES[self.name]))

    @property
    def size_names(self) -> frozenset[str]:
        """The dimensions the sizes read (the problem's, which a device that caps
        footprints shrinks; none for a streaming model)."""
        return frozenset().union(*(e.names for k, e in self.settings.items()
                                   if k in SIZES[self.name]))

    def values_of(self, config: Config) -> dict[str, int]:
        """Each setting at ``config`` (the sizes on its problem's dimensions, the rest on
        its block, meta-parameters and itemsize); a :class:`SweeperError` where one is
        below its least (:data:`LEAST`, else one) or cannot be computed (an axis whose
        values the device resolves, such as ``64 * sms``, that :meth:`values_problem`
        could not see: a run asks it of every config before it writes anything,
        :func:`sweeper.engine._inputs.refuse_bad_model`)."""
        dims = dict(config.problem.dims)
        launch = {"block": config.block, "itemsize": config.problem.itemsize, **config.meta}
        values: dict[str, int] = {}
        for key, expr in self.settings.items():
            try:
                values[key], problem = _at_least(expr, dims if key in SIZES[self.name] else
                                                 launch, key, UNITS.get(self.name, ""))
            except ExpressionError as err:
                raise SweeperError(f"kernel model {self.text}: {err}") from None
            if problem is not None:
                raise SweeperError(f"kernel model {self.text}: {key} {problem}")
        return values

    def check(self, config: Config) -> None:
        """A :class:`SweeperError` where a setting is below its least at ``config``."""
        self.values_of(config)

    def __call__(self, config: Config, facts: DeviceFacts) -> float:
        """The guess of ``config`` on the GPU ``facts`` describes: the built-in model at
        its settings."""
        v = self.values_of(config)
        if self.name == "streaming":
            return streaming(config, facts.sms, v["tile"], self.inputs)
        if self.name == "rowwise":
            return rowwise(config, facts.sms, facts.l2_bytes, v["rows"], v["cols"], v["tile"])
        return tiled(config, facts.sms, (v["m"], v["n"], v["k"]), v["tile_m"], v["tile_n"],
                     v["tile_k"], v["stages"], split_k=v["split_k"], epilogue=v["epilogue"],
                     tma=bool(v["tma"]), flatten=bool(v["flatten"]))

    def values_problem(self, values: Mapping[str, Sequence[int | str]]) -> tuple[str, str] | None:
        """Where a setting is below its least (or cannot be computed) at some combination
        of the space's ``values`` it reads (each axis's constant values, and
        ``itemsize``'s): its key and why, the first such, or ``None``.  A name without
        values here (an axis of expressions only), and combinations past
        :data:`MOST_CHECKED`, are left to :meth:`values_of`."""
        for key, expr in self.settings.items():
            problem = _values_problem(expr, values, key, UNITS.get(self.name, ""))
            if problem is not None:
                return f"model.{self.name}.{key}", problem
        return None


def _allowed(key: str, unit: str) -> str:
    """What setting ``key`` (counted in ``unit``) must be at every config."""
    return f"a {key} of at least {LEAST.get(key, 1)}{unit.rstrip('s')} at every config"


def _at_least(expr: Expr, env: Mapping[str, int], key: str, unit: str
              ) -> tuple[int, str | None]:
    """``expr`` (setting ``key``) at ``env``, and why it is below its least
    (:data:`LEAST`, else one) where it is (``None`` where it is not): the one rule a
    config's check and the space's values' check both apply.  An
    :class:`ExpressionError` where it cannot be computed there."""
    value = int(evaluate(expr, env))
    if value >= LEAST.get(key, 1):
        return value, None
    return value, (f"{expr.text!r} gives {value}{unit} at {_at(expr, env)}; allowed: "
                   f"{_allowed(key, unit)}")


def _values_problem(expr: Expr, values: Mapping[str, Sequence[int | str]], key: str, unit: str
                    ) -> str | None:
    """Why ``expr`` (setting ``key``) is below its least (or cannot be computed) at some
    combination of ``values``: the first such, or ``None``; names without values, and
    combinations past :data:`MOST_CHECKED`, are left to the configs' own check."""
    names = sorted(expr.names)
    numbers = {n: [v for v in values.get(n, ()) if isinstance(v, int)] for n in names}
    if not all(numbers.values()):
        return None
    combinations = itertools.product(*(dict.fromkeys(numbers[n]) for n in names))
    for combination in itertools.islice(combinations, MOST_CHECKED):
        env = dict(zip(names, combination, strict=True))
        try:
            _, problem = _at_least(expr, env, key, unit)
        except ExpressionError as err:
            return f"{err}; allowed: {_allowed(key, unit)}"
        if problem is not None:
            return problem
    return None


def read_model(raw: Any, meta: Sequence[str] | None, inputs: int | None,
               dims: Sequence[str] | None = None) -> DeclaredModel:
    """The model a kernel declares in ``raw`` (a mapping, or its JSON text as a space's
    option holds it); ``meta``: the kernel's meta-parameters, the names its launch
    settings may read besides ``block`` and ``itemsize`` (``None``: not checked, as a
    ``cuda`` kernel built for a run declares none and its space was checked as it was
    read); ``inputs``: the arrays it reads, where its declaration says (the default of
    ``inputs``); ``dims``: its problem's dimensions, the names a tiled or row-wise model's
    sizes may read (``None``: not checked).  Every mistake is an :class:`OptionError` whose ``key``
    is the path of the part at fault (``model.streaming.tile``) and whose message says
    what is allowed."""
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):       # JSON: a mapping as an option holds it
            raw = json.loads(raw)
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise OptionError("model", f"{_shown(raw)} is not one model; allowed: a mapping of "
                          f"one of {', '.join(MODELS)} to its settings, such as {FORM}")
    (name, settings), = raw.items()
    if name not in MODELS:
        raise OptionError("model", f"unknown model {_shown(name)}; allowed: "
                          f"{', '.join(MODELS)}{did_you_mean(str(name), MODELS)}")
    known = MODELS[name]
    where = f"model.{name}"
    if not isinstance(settings, Mapping):
        raise OptionError(where, f"{_shown(settings)} is not {name}'s settings; allowed: a "
                          f"mapping of {', '.join(known)}, such as {FORMS[name]}")
    for key in settings:
        if key not in known:
            raise OptionError(f"{where}.{key}", f"{name} takes no setting {_shown(key)}; "
                              f"allowed: {', '.join(known)}{did_you_mean(str(key), known)}")
    for key in REQUIRED[name]:
        if key not in settings:
            raise OptionError(where, f"{name} needs {key}: {known[key]}")
    launch = [*TILE_NAMES, *(meta or ())]
    sizes, unit = SIZES[name], UNITS.get(name, "")
    exprs = {key: _expr(settings.get(key, DEFAULTS.get(key)),
                        list(dims or ()) if key in sizes else launch,
                        (dims if key in sizes else meta) is not None, where, key, unit,
                        None if key in sizes else _example(name, key, meta))
             for key in known if key != "inputs"}
    shown: dict[str, Any] = {k: e.text for k, e in exprs.items()
                             if k in settings or k not in LEAST}   # zero defaults left out
    count = 0
    if name == "streaming":
        count = settings.get("inputs", inputs)
        if type(count) is not int or not 1 <= count <= MAX_INPUTS:
            raise OptionError(f"{where}.inputs", (
                f"{_shown(count)} is not a count of arrays read; allowed: an integer from 1 "
                f"to {MAX_INPUTS}" if "inputs" in settings else
                "give inputs: the arrays the kernel reads (it declares none by name)"))
        shown["inputs"] = count
    text = json.dumps({name: shown}, separators=(", ", ": "))
    return DeclaredModel(name=name, settings=exprs, text=text.replace('"', ""), inputs=count)


def _expr(raw: Any, known: Sequence[str], check: bool, where: str, noun: str, unit: str,
          example: str | None) -> Expr:
    """The expression ``raw`` (text or an integer) of the setting ``noun`` of the model at
    ``where``, at least its least (:data:`LEAST`, else one) where it is a constant, its
    names checked against ``known`` where ``check``; ``example`` is the expression a
    refusal shows (default: ``known``'s first name)."""
    key, least = f"{where}.{noun}", LEAST.get(noun, 1)
    over = f"an expression over {', '.join(known)}" if known else "an expression"
    if type(raw) is int:
        if raw < least:
            raise OptionError(key, f"{raw} is no {noun}; allowed: at least {least}{unit[:-1]}, "
                              f"or {over}")
        raw = str(raw)
    if not isinstance(raw, str) or not raw.strip():
        example = example or (known[0] if known else "M")
        integer = "a positive integer" if least == 1 else f"an integer of at least {least}"
        raise OptionError(key, f"{_shown(raw)} is no {noun}; allowed: {over} (such as "
                          f"{example}) or {integer}")
    try:
        expr = parse(raw)
        constant = None if expr.names else evaluate(expr, {})
    except ExpressionError as err:
        raise OptionError(key, str(err)) from None
    if constant is not None and constant < least:
        raise OptionError(key, f"{raw!r} gives {constant}{unit}; allowed: a {noun} of at "
                          f"least {least}{unit[:-1]}, or {over}")
    unknown = unknown_name(expr, known) if check else None
    if unknown is not None:
        raise OptionError(key, unknown)
    return expr


def _example(model: str, key: str, meta: Sequence[str] | None) -> str | None:
    """The launch setting's usual expression (a streaming tile's: ``block`` times the
    kernel's first meta-parameter), or the kernel's first meta-parameter where it has not
    that name; ``None`` (the first known name) for flags and bytes."""
    if model == "streaming":
        return f"block * {meta[0] if meta else 4}"
    usual = LAUNCH_EXAMPLES.get(key)
    return usual if usual is None or not meta or usual in meta else meta[0]


def _at(expr: Expr, env: Mapping[str, int]) -> str:
    return ", ".join(f"{n}={env[n]}" for n in sorted(expr.names)) or "every config"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
