"""The part of the space parser that reads what sizes the problem: the kernel's declared
dimensions, whether a footprint or the dimensions are swept, zipped axes (dimensions
that move together), and the names expressions may read."""

from __future__ import annotations

from typing import Any

from sweeper.core._model import FACT_NAMES, LAUNCH_AXES, PROBLEM_AXES, Axis, Tie
from sweeper.core._problem import Shape, shape_of
from sweeper.core._units import DTYPES
from sweeper.errors import SpaceError, SweeperError
from sweeper.space._settings import shown

#: Axes whose values are names, not numbers: expressions cannot read them.
TEXT_AXES = ("dtype", "cache")


class ProblemAxes:
    """Mixed into the space parser, which provides ``error``, ``keys``, ``value``,
    ``where`` and ``file``; sets ``shape`` and collects ``ties``."""

    shape: Shape
    #: the kernel's declaration, once the file names it (:meth:`declared_shape`)
    kernel_cls: Any = None
    ties: list[Tie]
    where: dict[str, tuple[str, int | None]]
    file: str

    def error(self, path: str, message: str) -> SpaceError:
        """The error at ``path``'s line (the parser's)."""
        raise NotImplementedError

    def keys(self, data: Any, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        """``data`` as a mapping of ``known`` keys only (the parser's)."""
        raise NotImplementedError

    def value(self, axis: str, raw: Any, path: str) -> Any:
        """One checked value of ``axis`` (the parser's)."""
        raise NotImplementedError

    def declared_shape(self, kernel_cls: Any) -> Shape:
        """The kernel's problem dimensions; a declaration that is wrong, or a dimension
        named like an axis, is an error at the ``kernel`` line."""
        self.kernel_cls = kernel_cls
        try:
            shape = shape_of(kernel_cls)
        except SweeperError as err:
            raise self.error("kernel", str(err)) from None
        clash = [d for d in shape.names if d in (*LAUNCH_AXES, *PROBLEM_AXES,
                                                  *kernel_cls.meta_params, *FACT_NAMES[:2])]
        if clash:
            raise self.error("kernel", f"kernel {kernel_cls.name}: dimension {clash[0]!r} "
                             "has the name of an axis or a device fact; rename it")
        return shape

    def dtype_name(self, raw: Any, path: str) -> str:
        """``raw`` if it names a dtype the kernel takes (``Kernel.dtypes``: 8-bit floats
        only where a kernel declares them), else the error listing those it takes."""
        allowed = getattr(self.kernel_cls, "dtypes", tuple(DTYPES))
        if isinstance(raw, str) and raw in allowed:
            return raw
        if isinstance(raw, str) and raw in DTYPES:
            raise self.error(path, f"{self.kernel_cls.name} takes no {raw}; allowed: "
                             f"{', '.join(allowed)}")
        raise self.error(path, f"unknown dtype {shown(raw)}; allowed: {', '.join(allowed)}")

    def lowest(self, axis: str) -> int:
        """The least value ``axis`` may take before its own checks: a dimension's declared
        minimum, a switch's 0 (a meta-parameter with ``choices``), else 1."""
        if axis in self.shape.names:
            return int(self.shape.dim(axis).min)
        declared = getattr(self.kernel_cls, "meta_params", {}).get(axis)
        return min(declared.choices) if declared is not None and declared.choices else 1

    def check_meta(self, kernel: str, name: str, declared: Any, value: int, path: str) -> None:
        """Refuse a ``value`` of meta-parameter ``name`` that its declaration rules out: not
        a power of two where it must be one, or not among its ``choices``."""
        if declared.pow2 and (value < 1 or value & (value - 1)):
            raise self.error(path, f"{value} is not a power of two; {kernel}'s {name} must "
                             "be one")
        if declared.choices and value not in declared.choices:
            raise self.error(path, f"{value} is not a value of {kernel}'s {name}; allowed: "
                             f"{', '.join(map(str, declared.choices))}")

    def sized_by(self, params: dict[str, Any], kernel_cls: Any) -> tuple[str, ...]:
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
            raise self.error("params.footprint", f"{kernel_cls.name} is sized by its "
                             f"dimensions, not a footprint; give {', '.join(dims)}")
        if "footprint" in params or (not given and rules and "footprint" in
                                     kernel_cls.defaults):
            return ("footprint",)
        for d in dims:
            if d not in params and self.shape.dim(d).default is None:
                raise self.error("params", f"missing dimension {d} ({self.shape.dim(d).doc}); "
                                 f"{kernel_cls.name} has no default for it: give params.{d}")
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
            lengths = set()
            for name, values in members.items():
                if name not in known:
                    raise self.error(f"{path}.{name}", f"unknown axis {shown(name)}; known: "
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
                for name, vals in members.items()), strict=True))
            if len(set(rows)) != len(rows):
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
