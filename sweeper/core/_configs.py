"""Every config of a space sorted out, those that can be launched from those ruled out,
without resolving each one.

Before its first trial a sweep needs how many configs can be launched, the i-th of them
(the exhaustive sampler walks them in a seeded order) and each ruled-out one with its
reason (recorded up front).  Resolving each of 10⁶ configs took 80 s; but each step of
resolving (:mod:`._steps`) reads few dimensions (``BLOCK >= block`` reads two).  So each
step runs once for each combination of the labels it reads, with the steps before it
that read no others; its outcomes (passed, or the :class:`Invalid` it raised) are spread
over the space as an array; and a config's reason is the first step, in order, that
ruled it out: what resolving it raises.  Where that would cost more than resolving
every config (a constraint over every axis), every config is resolved, as before.
"""

from __future__ import annotations

import abc
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from sweeper.core._model import MAX_CONFIGS, Invalid, Resolving, Space, Step
from sweeper.errors import SpaceError

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")
#: Names a step may read that no step sets: the device's facts.
FACTS = frozenset({"sms", "l2_bytes"})


class Lazy(Sequence[T]):
    """A sequence whose items are made when asked for, by :meth:`_item`."""

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        return self._item(index)

    @abc.abstractmethod
    def _item(self, index: int) -> T:
        """Item ``index``, made now."""


class Configs(Lazy[Mapping[str, str]]):
    """The configs of ``space`` that can be launched on a device with ``facts`` (problems
    capped at ``max_footprint``), in the order of the product of its dimensions
    (:meth:`Space.choices`), each a read-only choice as a sampler sees it (zipped axes
    as one dimension), made only when asked for; and those ruled out
    (:meth:`ruled_out`).  Memory: a few bytes a config."""

    def __init__(self, space: Space, facts: Mapping[str, int],
                 max_footprint: int | None = None) -> None:
        import numpy as np

        if space.size > MAX_CONFIGS:     # a space built without the parser
            raise SpaceError(f"the space has {space.size} configs; at most {MAX_CONFIGS}",
                             file=space.path)
        dims = space.choices()
        self.space = space
        self.names = tuple(dims)
        self.labels = tuple(dims.values())
        self._shape = tuple(len(labels) for labels in self.labels)
        self._places = [{label: i for i, label in enumerate(labels)} for labels in self.labels]
        self._labels_of = dict(dims)
        self._ties = {t.name: t for t in space.ties}
        self._facts = {k: facts[k] for k in FACTS}
        self._why: list[Invalid] = []
        steps = space.steps(max_footprint)
        plans = _plans(steps)
        if plans is not None and self._cost(plans) > math.prod(self._shape) * len(steps):
            plans = None
        first = self._by_step(steps, plans) if plans is not None else self._each(steps)
        flat = first.ravel()
        self._valid = np.flatnonzero(flat == 0)
        self._ruled = np.flatnonzero(flat)
        self._codes = flat[self._ruled]
        #: the configs as :meth:`expanded` gives them (every axis named), in this order
        self.expanded_all: Sequence[dict[str, str]] = _Expanded(self)

    def __len__(self) -> int:
        return len(self._valid)

    def _item(self, index: int) -> Mapping[str, str]:
        return MappingProxyType(self._choice(int(self._valid[index])))

    def index_of(self, choice: Mapping[str, Any]) -> int | None:
        """The place of ``choice`` (dimension -> label) among these configs; ``None`` for
        one ruled out or not of this space."""
        import numpy as np

        flat = 0
        try:
            for name, places, size in zip(self.names, self._places, self._shape, strict=True):
                flat = flat * size + places[str(choice[name])]
        except KeyError:
            return None
        if len(choice) != len(self.names):
            return None
        place = int(np.searchsorted(self._valid, flat))
        return place if place < len(self._valid) and self._valid[place] == flat else None

    def places(self) -> np.ndarray:
        """Each launchable config's place among each dimension's labels: ``len(self)``
        rows, one column a dimension in :attr:`names`' order (a zipped group's place is
        its row's), in this sequence's order; read without making a config."""
        import numpy as np

        return np.stack(np.unravel_index(self._valid, self._shape), axis=1).reshape(
            len(self._valid), len(self._shape))

    def expanded(self, index: int) -> dict[str, str]:
        """The ``index``-th config with every axis named (zipped ones as their members)."""
        return self._full(int(self._valid[index]))

    def ruled_out(self) -> Iterator[tuple[dict[str, str], Invalid]]:
        """Each config ruled out, in order, every axis named, with what ruled it out."""
        for flat, code in zip(self._ruled.tolist(), self._codes.tolist(), strict=True):
            yield self._full(flat), self._why[code - 1]

    def _choice(self, flat: int) -> dict[str, str]:
        picked = []
        for size, labels in zip(reversed(self._shape), reversed(self.labels), strict=True):
            flat, place = divmod(flat, size)
            picked.append(labels[place])
        return dict(zip(self.names, reversed(picked), strict=True))

    def _full(self, flat: int) -> dict[str, str]:
        choice = self._choice(flat)
        return self.space.expand(choice) if self._ties else choice

    def _partial(self, names: Sequence[str], places: Sequence[int]) -> dict[str, str]:
        """The labels of dimensions ``names`` at ``places``, zipped ones as their members."""
        out: dict[str, str] = {}
        for name, place in zip(names, places, strict=True):
            tie = self._ties.get(name)
            if tie is None:
                out[name] = self._labels_of[name][place]
            else:
                out.update(zip(tie.members, tie.rows[place], strict=True))
        return out

    def _by_step(self, steps: Sequence[Step], plans: list[frozenset[str]]) -> np.ndarray:
        """The first step ruling out each config (its reason's place in ``_why`` + 1), or
        0, each step run over the labels it reads."""
        import numpy as np

        first = np.zeros(self._shape, dtype=np.int32)
        for i, (step, reads) in enumerate(zip(steps, plans, strict=True)):
            names = [n for n in self.names if n in reads]
            before = [s for s, p in zip(steps[:i], plans[:i], strict=True) if p <= reads]
            codes = [self._code(self._partial(names, places), before, (step,)) for places in
                     itertools.product(*(range(len(self._labels_of[n])) for n in names))]
            if any(codes):
                shape = [self._shape[d] if n in reads else 1 for d, n in enumerate(self.names)]
                outcome = np.asarray(codes, dtype=np.int32).reshape(shape)
                first = np.where(first == 0, outcome, first)
        return first

    def _code(self, choice: Mapping[str, str], before: Sequence[Step],
              steps: Sequence[Step]) -> int:
        """0 if ``steps`` pass ``choice`` (or a step ``before`` them fails, which then gives
        the reason), else the reason of the first that fails: its place in ``_why`` + 1."""
        state = Resolving.start(self._facts)
        try:
            for earlier in before:
                earlier.run(choice, state)
        except Invalid:
            return 0
        try:
            for step in steps:
                step.run(choice, state)
        except Invalid as why:
            self._why.append(why)
            return len(self._why)
        return 0

    def _cost(self, plans: list[frozenset[str]]) -> int:
        """Steps :meth:`_by_step` runs: each over its dimensions' labels, with the steps
        before it that read no others."""
        sizes = dict(zip(self.names, self._shape, strict=True))
        return sum(math.prod(sizes[n] for n in reads) *
                   (1 + sum(1 for p in plans[:i] if p <= reads))
                   for i, reads in enumerate(plans))

    def _each(self, steps: Sequence[Step]) -> np.ndarray:
        """As :meth:`_by_step`, every config resolved whole."""
        import numpy as np

        every = itertools.product(*(range(n) for n in self._shape))
        codes = (self._code(self._partial(self.names, places), (), steps) for places in every)
        return np.fromiter(codes, np.int32, math.prod(self._shape)).reshape(self._shape)


def _plans(steps: Sequence[Step]) -> list[frozenset[str]] | None:
    """The dimensions each step's outcome depends on (those it reads, and those read by
    the steps that set the names it reads), or None where running the steps that way
    costs more than resolving every config, or a step reads a name nothing sets."""
    given: dict[str, frozenset[str]] = dict.fromkeys(FACTS, frozenset())
    plans = []
    for step in steps:
        if not step.reads <= given.keys():
            return None
        reads = step.dims.union(*(given[n] for n in step.reads))
        plans.append(reads)
        given.update(dict.fromkeys(step.gives, reads))
    return plans


class _Expanded(Lazy[dict[str, str]]):
    """The configs of a :class:`Configs`, every axis named, made one at a time."""

    def __init__(self, configs: Configs) -> None:
        self._configs = configs

    def __len__(self) -> int:
        return len(self._configs)

    def _item(self, index: int) -> dict[str, str]:
        return self._configs.expanded(index)
