"""A problem, and a kernel's problem shape: the dimensions it declares, the bytes they
make, and how a ``footprint`` alone gives them.

A kernel declares its dimensions as data (:class:`Dim`: meaning, default, limits) with
two kinds of expression in the space's own language (:mod:`sweeper.core._expr`): the
footprint in bytes from the dimensions and ``itemsize``, and, for kernels a single size
describes, each dimension from ``footprint`` and ``itemsize``.  :class:`Shape` holds
them parsed, so a space sweeps dimensions, a footprint, or both derived from each other,
without the core knowing any kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sweeper.core._expr import Expr, evaluate, parse
from sweeper.core._units import DTYPES, format_size
from sweeper.errors import ExpressionError, SweeperError

#: Names a footprint expression may read besides the dimensions, and a dimension's
#: expression from a footprint.
FOOTPRINT_FACTS = ("itemsize",)
FROM_FOOTPRINT_FACTS = ("footprint", "itemsize")


@dataclass(frozen=True)
class Dim:
    """A problem dimension: what it counts, its default (``None``: a space must give it),
    and the values allowed (``min`` to ``max``, a multiple of ``multiple_of``)."""

    doc: str
    default: int | None = None
    min: int = 1
    max: int | None = None
    multiple_of: int = 1

    def allowed(self) -> str:
        """The values allowed, as an error says them."""
        out = f"an integer >= {self.min}"
        if self.max is not None:
            out += f" and <= {self.max}"
        if self.multiple_of > 1:
            out += f", a multiple of {self.multiple_of}"
        return out

    def refusal(self, value: int) -> str | None:
        """Why ``value`` is not allowed (what is), or ``None``."""
        if value < self.min or (self.max is not None and value > self.max) or \
                value % self.multiple_of:
            return f"{value} is out of its limits; allowed: {self.allowed()}"
        return None


Dims = tuple[tuple[str, int], ...]


class SizeError(ValueError):
    """A problem the size axes cannot make; ``axis`` is the axis whose value is at fault."""

    def __init__(self, message: str, axis: str) -> None:
        super().__init__(message)
        self.axis = axis


@dataclass(frozen=True)
class Problem:
    """What the kernel works on: element type, footprint (the bytes the kernel's
    ``footprint_bytes`` gives, always computed) and the kernel's dimensions by name, in
    declared order (``(("M", 4096), ("N", 2048), ("K", 8192))``); ``dims`` is empty only
    for a problem read from a journal or table older than dimensions, until the study's
    kernel derives them (:meth:`Shape.from_size`)."""

    dtype: str
    footprint: int
    dims: Dims = ()

    @property
    def itemsize(self) -> int:
        """Bytes per element of ``dtype``."""
        return DTYPES[self.dtype]

    @property
    def n(self) -> int:
        """The dimension ``n`` of a 1-D kernel; for any other, the elements of the
        footprint (what spaces have always read as ``n``)."""
        return dict(self.dims).get("n", self.footprint // self.itemsize)

    def dim(self, name: str) -> int:
        """The dimension ``name``; a KeyError names the dimensions the problem has."""
        found = dict(self.dims)
        if name not in found:
            raise KeyError(f"problem has no dimension {name!r}; it has "
                           f"{', '.join(found) or 'none recorded'}")
        return found[name]

    @property
    def sized_by_footprint(self) -> bool:
        """Whether the footprint alone says the problem: a 1-D kernel (``n``) or one with
        no dimensions recorded; reports then name it by its footprint."""
        return not self.dims or self.dims == (("n", self.footprint // self.itemsize),)

    def describe(self) -> str:
        """The problem's size as reports and console lines name it: the footprint
        (``1GiB``) for a problem sized by it, else the dimensions (``M=48 N=80 K=40``)."""
        return format_size(self.footprint) if self.sized_by_footprint else show_dims(self.dims)




@dataclass(frozen=True)
class Shape:
    """The parsed shape declaration of one kernel (see the module's docstring)."""

    dims: tuple[tuple[str, Dim], ...]
    footprint: Expr
    #: each dimension from ``footprint`` and ``itemsize``; empty: no ``footprint`` axis
    from_footprint: tuple[tuple[str, Expr], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The dimensions' names in declared order."""
        return tuple(name for name, _ in self.dims)

    def dim(self, name: str) -> Dim:
        """The declaration of dimension ``name``."""
        return dict(self.dims)[name]

    def bytes_of(self, dims: Mapping[str, int], itemsize: int) -> int:
        """The footprint ``dims`` make at ``itemsize`` bytes an element; an
        :class:`ExpressionError` when it cannot be computed."""
        return int(evaluate(self.footprint, {**dims, "itemsize": itemsize}))

    def from_size(self, dtype: str, footprint: int) -> Dims:
        """The dimensions of a problem known by its footprint alone (a ``footprint`` axis,
        a journal or table older than dimensions); a ``ValueError`` when the footprint
        is none the dimensions make exactly (a matmul footprint that is no square)."""
        itemsize = DTYPES[dtype]
        env = {"footprint": footprint, "itemsize": itemsize}
        try:
            dims = {name: int(evaluate(expr, env)) for name, expr in self.from_footprint}
            made = self.bytes_of(dims, itemsize)
        except ExpressionError as err:
            raise ValueError(f"footprint {footprint} bytes of {dtype}: {err}") from None
        if made != footprint:
            rule = ", ".join(f"{n} = {e.text}" for n, e in self.from_footprint)
            raise ValueError(f"footprint {format_size(footprint)} of {dtype} is no problem "
                             f"of this kernel: {rule} gives {show_dims(dims)}, which make "
                             f"{format_size(made)}")
        return tuple(dims.items())

    def scaled(self, dims: Mapping[str, int], itemsize: int, max_bytes: int) -> dict[str, int]:
        """``dims`` shrunk by one common factor, within each dimension's limits, to the
        largest problem of at most ``max_bytes`` (the interpreter's cap); dimensions the
        footprint does not read stay.  A power of two stays a power of two and any other
        value stays another (:func:`kind_kept`: a ``cols`` of 1000 keeps its masked tail),
        where the dimension's limits allow it.  A ``ValueError`` when even the smallest
        allowed values exceed it."""
        sized = [n for n in self.names if n in self.footprint.names]

        def at(factor: float, keep: bool) -> dict[str, int]:
            out = dict(dims)
            for name in sized:
                d = self.dim(name)
                step = d.multiple_of
                value = max(d.min, math.floor(dims[name] * factor / step) * step, step)
                out[name] = kind_kept(value, dims[name], d) if keep else value
            return out

        if self.bytes_of(dims, itemsize) <= max_bytes:
            return dict(dims)
        keep = self.bytes_of(at(0.0, True), itemsize) <= max_bytes
        smallest = at(0.0, keep)
        if self.bytes_of(smallest, itemsize) > max_bytes:
            raise ValueError(f"{show_dims(dims)} cannot shrink under "
                             f"{format_size(max_bytes)}: {show_dims(smallest)} already make "
                             f"{format_size(self.bytes_of(smallest, itemsize))}")
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            fits = self.bytes_of(at(mid, keep), itemsize) <= max_bytes
            lo, hi = (mid, hi) if fits else (lo, mid)
        return at(lo, keep)

    def lowered(self, dtype: str, footprint: int, max_bytes: int) -> int:
        """A ``footprint`` above ``max_bytes`` lowered under it: to the largest power of two
        elements under it for a power of two, else to the largest footprint under it
        whose element count is no power of two and which the kernel's dimensions make (a
        1-D kernel's ``n`` of 4095 where 4096 fits), so a size chosen for its masked tail
        keeps one.  Where the kernel's dimensions make no such footprint (a matmul's
        square of 16 KiB of float16 is none: 8192 elements), the problem's own dimensions
        shrunk by one factor (:meth:`scaled`: square stays square, a power of two one)
        give it: 4096 × 4096 × 4096 becomes 64 × 64 × 64, 8 KiB."""
        if footprint <= max_bytes:
            return footprint
        itemsize = DTYPES[dtype]
        count = max_bytes // itemsize
        if footprint % itemsize or count < 1:
            return max_bytes
        if is_pow2(footprint // itemsize):
            candidates = [(1 << (count.bit_length() - 1))]
        else:
            candidates = [n for n in range(count, max(count - 64, 0), -1) if not is_pow2(n)]
        for n in candidates:
            try:
                self.from_size(dtype, n * itemsize)
            except ValueError:
                continue
            return n * itemsize
        shrunk = self.shrunk_footprint(dtype, footprint, max_bytes)
        if shrunk is not None:
            return shrunk
        return candidates[0] * itemsize if is_pow2(footprint // itemsize) else count * itemsize

    def shrunk_footprint(self, dtype: str, footprint: int, max_bytes: int) -> int | None:
        """The footprint, at most ``max_bytes``, of the problem ``footprint`` gives with its
        dimensions shrunk by one factor (:meth:`scaled`), where the kernel derives those
        dimensions back from it; ``None`` where it does not, or ``footprint`` gives no
        problem."""
        itemsize = DTYPES[dtype]
        try:
            small = self.scaled(dict(self.from_size(dtype, footprint)), itemsize, max_bytes)
            made = self.bytes_of(small, itemsize)
            return made if dict(self.from_size(dtype, made)) == small else None
        except (ValueError, ExpressionError):
            return None

    def problem(self, dtype: str, sizes: Mapping[str, int], max_bytes: int | None, *,
                by_footprint: bool) -> Problem:
        """The problem ``sizes`` give: from its ``footprint`` (lowered to ``max_bytes``,
        then the dimensions derived) or from the dimensions (checked against their
        limits, shrunk under ``max_bytes``, the footprint computed); a
        :class:`SizeError` naming the axis at fault."""
        itemsize = DTYPES[dtype]
        if by_footprint:
            footprint = sizes["footprint"]
            if max_bytes is not None:
                footprint = self.lowered(dtype, footprint, max_bytes)
            if footprint % itemsize or footprint <= 0:
                raise SizeError(f"footprint: {footprint} bytes is not a positive multiple of "
                                f"{dtype}'s {itemsize} bytes", "footprint")
            try:
                return Problem(dtype, footprint, self.from_size(dtype, footprint))
            except ValueError as err:
                raise SizeError(str(err), "footprint") from None
        dims = {name: sizes[name] for name in self.names}
        for name, value in dims.items():
            refusal = self.dim(name).refusal(value)
            if refusal is not None:
                raise SizeError(f"{name}: {refusal}", name)
        try:
            if max_bytes is not None:
                dims = self.scaled(dims, itemsize, max_bytes)
            footprint = self.bytes_of(dims, itemsize)
        except (ValueError, ExpressionError) as err:
            raise SizeError(f"{show_dims(dims)}: {err}", self.names[0]) from None
        if footprint <= 0:
            raise SizeError(f"{show_dims(dims)} make a footprint of {footprint} bytes; it "
                            "must be positive", self.names[0])
        return Problem(dtype, footprint, tuple(dims.items()))


def is_pow2(value: int) -> bool:
    """Whether ``value`` is a positive power of two."""
    return value > 0 and value & (value - 1) == 0


def kind_kept(value: int, original: int, dim: Dim) -> int:
    """``value`` (a shrunk ``original``, within ``dim``'s limits) moved down, within them,
    to a power of two where ``original`` is one, or off a power of two where it is not:
    what makes a problem distinct survives the shrink.  ``value`` itself where no value
    of that kind lies between ``dim.min`` and it (moved up, for a value of another kind,
    by the fewest steps of ``dim.multiple_of``)."""
    step = dim.multiple_of
    want = is_pow2(original)
    if is_pow2(value) == want:
        return value
    low = max(dim.min, step)
    if want:
        found = 1 << (value.bit_length() - 1)
        while found >= low and (found % step or found < dim.min):
            found >>= 1
        return found if found >= low else value
    down = value - step
    while down >= low and is_pow2(down):
        down -= step
    if down >= low:
        return down
    up = value + step
    while is_pow2(up):
        up += step
    return up if dim.max is None or up <= dim.max else value


def show_dims(dims: Mapping[str, int] | Dims) -> str:
    """``M=48 N=80 K=40``: dimensions as lines and titles name them."""
    pairs = dims.items() if isinstance(dims, Mapping) else dims
    return " ".join(f"{n}={v}" for n, v in pairs)


def shape_of(kernel_cls: Any) -> Shape:
    """The :class:`Shape` a kernel class declares (``dims``, ``footprint_bytes``,
    ``dims_from_footprint``); a :class:`SweeperError` naming the attribute that is
    wrong, so a plugin with a bad declaration is refused when it is loaded."""
    name = getattr(kernel_cls, "name", kernel_cls.__name__)
    dims = getattr(kernel_cls, "dims", None)
    if not isinstance(dims, Mapping) or not dims or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, Dim)
            for k, v in dims.items()):
        raise SweeperError(f"kernel {name}: dims must map names to Dim(...), got {dims!r}"[:200])

    def expr(attr: str, text: Any, known: tuple[str, ...]) -> Expr:
        if not isinstance(text, str):
            raise SweeperError(f"kernel {name}: {attr} must be an expression, got {text!r}")
        try:
            parsed = parse(text)
        except ExpressionError as err:
            raise SweeperError(f"kernel {name}: {attr}: {err}") from None
        unknown = sorted(parsed.names - set(known))
        if unknown:
            raise SweeperError(f"kernel {name}: {attr} reads {unknown[0]!r}; known: "
                               f"{', '.join(known)}")
        return parsed

    footprint = expr("footprint_bytes", getattr(kernel_cls, "footprint_bytes", None),
                     (*dims, *FOOTPRINT_FACTS))
    rules = getattr(kernel_cls, "dims_from_footprint", None) or {}
    if rules and set(rules) != set(dims):
        raise SweeperError(f"kernel {name}: dims_from_footprint must give every dim "
                           f"({', '.join(dims)}), got {', '.join(map(str, rules))}")
    return Shape(dims=tuple(dims.items()), footprint=footprint,
                 from_footprint=tuple((d, expr(f"dims_from_footprint[{d!r}]", rules[d],
                                               FROM_FOOTPRINT_FACTS)) for d in dims
                                      if rules))


def default_shape() -> Shape:
    """The shape of a 1-D kernel, and of any kernel that declares none: ``n`` elements of
    each array, a footprint of ``n * itemsize`` bytes."""
    return _DEFAULT


_DEFAULT = Shape(dims=(("n", Dim("elements of each array")),), footprint=parse("n * itemsize"),
                 from_footprint=(("n", parse("footprint // itemsize")),))
