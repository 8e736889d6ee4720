"""A built-in model a user's kernel declares, for ``auto``: ``model: {streaming: ...}``.

A user's kernel (the ``cuda`` kernel of a ``.cu`` file, a :func:`sweeper.kernel`) has no
``Kernel.model`` of its own, so ``auto`` searches it without one.  Where one of the
built-ins' models describes it, it may say which, and how its parameters map onto the
model's, where its other declarations are: in the space file's ``kernel:`` mapping for
``cuda``, in ``sweeper.kernel(..., model=...)`` for a Python kernel::

    model: {streaming: {tile: "block * VEC * UNROLL", inputs: 1}}

says: an elementwise kernel that streams ``inputs`` arrays in and one out, each program
moving ``tile`` elements of each array per step (an expression over the launch's
``block``, the meta-parameters and ``itemsize``), so its guess of a config is
:func:`~sweeper.kernels._guess.streaming` at that tile.  Only ``streaming`` is
declarable: it is the model measured on a user kernel's recorded table (the CUDA C copy,
docs/search.md); the row-wise and matmul models read a kernel's loop structure that a
declaration of a few names would have to guess.

Every check is made where the declaration is read, so a bad one is refused before
anything runs: what it is (one model, its settings, their types), the names the tile
reads (against the kernel's meta-parameters), and, once the space's axes are known, that
the tile is at least one element at every combination of their values
(:meth:`DeclaredModel.values_problem`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeper.core import Config, Expr, evaluate, parse
from sweeper.core._units import did_you_mean
from sweeper.errors import ExpressionError, SweeperError
from sweeper.kernels._base import OptionError
from sweeper.kernels._guess import streaming

if TYPE_CHECKING:
    from sweeper.core import DeviceFacts

#: The models a kernel may declare, each with its settings: what each says.
MODELS: Mapping[str, Mapping[str, str]] = {
    "streaming": {
        "tile": "the elements of each array one program moves per step: an expression "
                "such as block * VEC, or a positive integer",
        "inputs": "the arrays it reads (it writes one); default: its declared inputs",
    },
}
#: What a declaration looks like, for messages.
FORM = "{streaming: {tile: EXPR, inputs: N}}"
#: The names a tile reads besides the meta-parameters: one program's threads and the
#: bytes of an element (a tile given in bytes: ``block * 16 // itemsize``).
TILE_NAMES = ("block", "itemsize")
#: The most arrays ``inputs`` may count (a guess's bytes in flight grow with them).
MAX_INPUTS = 64
#: The most combinations of the space's values a tile is evaluated at as the space is
#: read (a tenth of a second): zipped axes may hold more combinations than the space has
#: configs; the rest are checked as each config is guessed (:meth:`DeclaredModel.tile_of`).
MOST_CHECKED = 1 << 16


@dataclass(frozen=True)
class DeclaredModel:
    """A declared ``streaming`` model: ``tile`` (one program's elements per step, of each
    array) and ``inputs`` (the arrays read; one is written); ``text`` the declaration as
    written, for messages and docs."""

    tile: Expr
    inputs: int
    text: str

    def tile_of(self, config: Config) -> int:
        """``config``'s tile: the expression on its block, meta-parameters and itemsize; a
        :class:`SweeperError` where it is no positive number (an axis whose values the
        device resolves, such as ``64 * sms``, that :meth:`values_problem` could not see:
        a run asks it of every config before it writes anything,
        :func:`sweeper.engine._inputs.refuse_bad_tile`)."""
        env = {"block": config.block, "itemsize": config.problem.itemsize, **config.meta}
        try:
            tile, problem = self._tile_at(env)
        except ExpressionError as err:
            raise SweeperError(f"kernel model {self.text}: {err}") from None
        if problem is not None:
            raise SweeperError(f"kernel model {self.text}: tile {problem}")
        return tile

    def _tile_at(self, env: Mapping[str, int]) -> tuple[int, str | None]:
        """The tile at ``env``, and why it is no element where it is not (``None`` where
        it is): the one rule :meth:`tile_of` and :meth:`values_problem` both apply.  An
        :class:`ExpressionError` where the tile cannot be computed there."""
        tile = int(evaluate(self.tile, env))
        if tile >= 1:
            return tile, None
        return tile, (f"{self.tile.text!r} gives {tile} elements at {_at(self.tile, env)}; "
                      "allowed: a tile of at least 1 element at every config")

    def __call__(self, config: Config, facts: DeviceFacts) -> float:
        """The guess of ``config`` on the GPU ``facts`` describes: the streaming model's
        relative throughput at ``config``'s tile."""
        return streaming(config, facts.sms, self.tile_of(config), self.inputs)

    def values_problem(self, values: Mapping[str, Sequence[int]]) -> str | None:
        """Why the tile is not at least one element (or cannot be computed) at some
        combination of ``values`` (each axis's constant values, and ``itemsize``'s): the
        first such, or ``None``.  A name without values here (an axis of expressions
        only), and combinations past :data:`MOST_CHECKED`, are left to :meth:`tile_of`."""
        names = sorted(self.tile.names)
        if not all(values.get(n) for n in names):
            return None
        combinations = itertools.product(*(dict.fromkeys(values[n]) for n in names))
        for combination in itertools.islice(combinations, MOST_CHECKED):
            env = dict(zip(names, combination, strict=True))
            try:
                _, problem = self._tile_at(env)
            except ExpressionError as err:
                return f"{err}; allowed: a tile of at least 1 element at every config"
            if problem is not None:
                return problem
        return None


def read_model(raw: Any, meta: Sequence[str] | None, inputs: int | None) -> DeclaredModel:
    """The model a kernel declares in ``raw`` (a mapping, or its JSON text as a space's
    option holds it); ``meta``: the kernel's meta-parameters, the names its tile may read
    besides ``block`` and ``itemsize`` (``None``: not checked, as a ``cuda`` kernel built
    for a run declares none and its space was checked as it was read); ``inputs``: the
    arrays it reads, where its declaration says (the default of ``inputs``).  Every
    mistake is an :class:`OptionError` whose ``key`` is the path of the part at fault
    (``model.streaming.tile``) and whose message says what is allowed."""
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
                          f"mapping of {', '.join(known)}, such as {FORM}")
    for key in settings:
        if key not in known:
            raise OptionError(f"{where}.{key}", f"{name} takes no setting {_shown(key)}; "
                              f"allowed: {', '.join(known)}{did_you_mean(str(key), known)}")
    if "tile" not in settings:
        raise OptionError(where, f"{name} needs tile: {known['tile']}")
    tile = _tile(settings["tile"], meta, f"{where}.tile")
    count = settings.get("inputs", inputs)
    if type(count) is not int or not 1 <= count <= MAX_INPUTS:
        raise OptionError(f"{where}.inputs", (
            f"{_shown(count)} is not a count of arrays read; allowed: an integer from 1 to "
            f"{MAX_INPUTS}" if "inputs" in settings else
            "give inputs: the arrays the kernel reads (it declares none by name)"))
    text = json.dumps({name: {"tile": tile.text, "inputs": count}}, separators=(", ", ": "))
    return DeclaredModel(tile=tile, inputs=count, text=text.replace('"', ""))


def _tile(raw: Any, meta: Sequence[str] | None, key: str) -> Expr:
    """The tile expression ``raw`` (text or an integer), its names checked against
    ``meta`` and :data:`TILE_NAMES` unless ``meta`` is ``None``."""
    known = [*TILE_NAMES, *(meta or ())]
    if type(raw) is int:
        if raw < 1:
            raise OptionError(key, f"{raw} is no tile; allowed: at least 1 element, or an "
                              f"expression over {', '.join(known)}")
        raw = str(raw)
    if not isinstance(raw, str) or not raw.strip():
        raise OptionError(key, f"{_shown(raw)} is no tile; allowed: an expression over "
                          f"{', '.join(known)} (such as block * {meta[0] if meta else 4}) "
                          "or a positive integer")
    try:
        expr = parse(raw)
        constant = None if expr.names else evaluate(expr, {})
    except ExpressionError as err:
        raise OptionError(key, str(err)) from None
    if constant is not None and constant < 1:
        raise OptionError(key, f"{raw!r} gives {constant} elements; allowed: a tile of at "
                          f"least 1 element, or an expression over {', '.join(known)}")
    unknown = sorted(expr.names - set(known))
    if meta is not None and unknown:
        raise OptionError(key, f"unknown name {unknown[0]!r} in {raw!r}; known: "
                          f"{', '.join(known)}{did_you_mean(unknown[0], known)}")
    return expr


def _at(expr: Expr, env: Mapping[str, int]) -> str:
    return ", ".join(f"{n}={env[n]}" for n in sorted(expr.names)) or "every config"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
