"""Which grid × block heatmaps a problem's configs make: the one rule the report draws
its maps by and ``plan`` prices them by.

A map shows how a rate moves over two varying axes: grid across, block down, or one of
them against the meta-parameter values a best-over-meta map names in its cells.  So a
problem where fewer than two of grid, block and the meta-parameters vary among the
configs that hold a number has no map (the report's tables rank its configs); else it has
a map of the best over its meta values where those configs fill two cells or more, and,
where they hold two meta values or more, one per meta values that fills two cells or more
(a map of one cell is no map: it is folded into the best-over-meta one; the map of a
problem's only meta values would be its best-over-meta map again).  Plain Python:
``plan`` counts with it without pandas, over up to a million configs, holding a few
values per meta values, never the configs.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from sweeper.core import grid_labels

#: Where an axis or a map holds more than one value: ``None`` could be a value.
_MANY = object()


def drawable(cells: int) -> bool:
    """Whether a map holding a number in ``cells`` cells is drawn: two or more."""
    return cells >= 2


@dataclass(frozen=True)
class MapsDrawn:
    """A problem's heatmaps: ``own``, the meta values whose own map is drawn; ``best``,
    whether the best-over-meta map is; ``folded``, the maps of one cell that map folds
    in; ``flat``, whether fewer than two of grid, block and the meta-parameters vary (then
    nothing is drawn)."""

    own: frozenset[Hashable]
    best: bool
    folded: int
    flat: bool

    @property
    def count(self) -> int:
        """How many maps are drawn."""
        return len(self.own) + self.best


class ProblemMaps:
    """One problem's configs that hold a number, added one at a time (:meth:`add`), and
    the maps they make (:meth:`drawn`).  It keeps, per meta values, its first cell until
    it holds a second, and per axis its first value until it takes a second."""

    def __init__(self) -> None:
        self._cells: dict[Hashable, Any] = {}        # meta values -> first cell, or _MANY
        self._axes: dict[Hashable, Any] = {}         # axis -> first value, or _MANY
        #: the configs added: each is a cell of its meta values' map (what a report's
        #: pictures and tables grow with beside the maps, ``plan.RunCosts.report_for``)
        self.cells = 0

    def add(self, meta: tuple[Any, ...], grid: Any, block: Any) -> None:
        """A config of meta values ``meta`` (the same order for every config of the
        problem) at grid label ``grid`` and block ``block`` holds a number."""
        cell = (grid, block)
        self.cells += 1
        if self._cells.setdefault(meta, cell) != cell:
            self._cells[meta] = _MANY
        for axis, value in (("grid", grid), ("block", block), *enumerate(meta)):
            if self._axes.setdefault(axis, value) != value:
                self._axes[axis] = _MANY

    def add_trial(self, trial: Any) -> None:
        """:meth:`add` of a trial record that holds a number: its config's meta values,
        grid and block as the record labels them."""
        params = {**trial.config.meta, **grid_labels(trial.choice, trial.config)}
        self.add(tuple(sorted(params.items())), trial.choice.get("grid"),
                 trial.choice.get("block"))

    def drawn_cells(self) -> int:
        """The cells of the maps drawn: every config added where any map is, else none."""
        return self.cells if self.drawn().count else 0

    def drawn(self) -> MapsDrawn:
        """The maps the configs added make (see the module's docstring)."""
        varying = sum(value is _MANY for value in self._axes.values())
        if varying < 2:
            return MapsDrawn(frozenset(), best=False, folded=0, flat=bool(self._cells))
        best = self._axes["grid"] is _MANY or self._axes["block"] is _MANY
        if len(self._cells) == 1:           # its own map is the best-over-meta map
            return MapsDrawn(frozenset(), best=best, folded=0, flat=False)
        many = frozenset(meta for meta, cell in self._cells.items() if cell is _MANY)
        return MapsDrawn(many, best=best, folded=len(self._cells) - len(many), flat=False)

    def most_added(self) -> int:
        """The most maps one config more may add to those drawn: the best-over-meta map
        where it is not drawn, and one meta values' own map (the new config's, or, where
        the problem held one meta values, that one's).  A problem whose configs vary on
        fewer than two axes draws none, but the config that makes it vary on two draws
        up to two at once: one config adds at most one meta values with a second cell,
        and a problem varying on one axis holds at most one."""
        rule = self.drawn()
        if not rule.flat:
            return (not rule.best) + (rule.folded > 0 or not rule.own)
        one_cell = len(self._cells) == 1 and next(iter(self._cells.values())) is not _MANY
        return 1 if one_cell else 2
