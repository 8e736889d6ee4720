"""What a study's records must be together, beyond each record's own fields: checked in
the order they were appended, by the journal's reader and writer and by the PostgreSQL
store alike, so every command reads the same study.

- A trial number is recorded once, and a config (its choice's :func:`key_of`) too: a
  later trial of either is set aside and the first is kept.  A config whose trial is to
  be measured again (``retry``: its worker was killed from outside) may have one more.
- A trial belongs to the study's space: its choice has a label for each of the study's
  axes (``study.json``'s ``axes``, widened by every resume to the space it ran) but those
  of one label (which resolving a choice fills in: a journal older than the ``cache`` axis
  has none), and each label is one of that axis's.  A study.json without axes (a journal
  read on its own) checks none.
- A record that names trials (a final, a drift) comes after them.

A record that fails is a line set aside with the reason :meth:`Ledger.problem` gives; one
that passes is counted (:meth:`Ledger.add`) before the next is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sweeper.escape import cut
from sweeper.store._records import key_of
from sweeper.store._schema import record_class, show

#: An axis's labels as messages list them: the first few, then how many more.
LISTED = 6

Axes = Mapping[str, Sequence[str]]


def study_axes(meta: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """The axes and their labels a study's metadata records, or ``None`` if it has none."""
    axes = meta.get("axes")
    return {name: [str(v) for v in labels] for name, labels in axes.items()} \
        if isinstance(axes, dict) else None


def widened(axes: Axes | None, more: Axes) -> dict[str, list[str]]:
    """``axes`` with ``more``'s axes and labels added after their own, in order: the space
    of a study resumed with another space (``--force``, ``-p``) holds the trials of both."""
    out = {name: list(labels) for name, labels in (axes or {}).items()}
    for name, labels in more.items():
        have = out.setdefault(name, [])
        have.extend(label for label in labels if label not in have)
    return out


def choice_problem(choice: Mapping[str, str], axes: Axes,
                   labels: Mapping[str, frozenset[str]] | None = None) -> str | None:
    """Why ``choice`` is not a choice of the space ``axes``, or ``None`` if it is one;
    ``labels``, each axis's labels as a set, finds them faster."""
    sets: Mapping[str, Any] = axes if labels is None else labels
    for name, label in choice.items():
        if name not in axes:
            return f"axis {show(name)} is not one of the study's axes ({_listed(sorted(axes))})"
        if label not in sets[name]:
            return (f"{name} {show(label)} is not one of the study's labels "
                    f"({_listed(axes[name])})")
    missing = [name for name in axes if name not in choice and len(axes[name]) != 1]
    if missing:
        return (f"no label for the study's axis {show(missing[0])} "
                f"({_listed(axes[missing[0]])})")
    return None


def _listed(labels: Sequence[str]) -> str:
    """The first :data:`LISTED` labels, each escaped and cut to 24 characters."""
    shown = ", ".join(cut(repr(str(x))[1:-1], 24) for x in labels[:LISTED])
    return shown + (f" and {len(labels) - LISTED} more" if len(labels) > LISTED else "")


class Ledger:
    """The records of one study as far as they were read: each trial's line by number,
    each config's first trial, and the study's axes to check choices against."""

    def __init__(self, axes: Axes | None = None) -> None:
        self.axes = axes
        self.trials: dict[int, int] = {}                          # number -> line
        #: (config key, source hash) -> (number, line, retry): each config's trial on each
        #: kernel source (a study resumed with ``--force`` after its kernel changed
        #: measures its configs again on the new one): its first, or the one after a
        #: trial to be measured again (``retry``)
        self.configs: dict[tuple[tuple[str, ...], str | None], tuple[int, int, bool]] = {}

    @property
    def axes(self) -> Axes | None:
        """The study's axes and their labels that choices are checked against."""
        return self._axes

    @axes.setter
    def axes(self, axes: Axes | None) -> None:
        self._axes = axes
        # each label found by hashing: a range axis holds thousands of labels
        self._labels = None if axes is None else {name: frozenset(labels)
                                                  for name, labels in axes.items()}

    def copy(self) -> Ledger:
        """A ledger counting what this one counts, to count more in without changing it."""
        out = Ledger()
        out._axes, out._labels = self._axes, self._labels
        out.trials, out.configs = dict(self.trials), dict(self.configs)
        return out

    def problem(self, data: dict[str, Any]) -> str | None:
        """Why ``data`` (a record :func:`~sweeper.store._schema.record_problem` passed)
        cannot follow the records counted so far, or ``None``."""
        kind = data["kind"]
        if kind == "trial":
            number = data["number"]
            first = self.trials.get(number)
            if first is not None:
                return f"trial #{number} again (first on line {first}); the first is kept"
            if self._axes is not None:
                problem = choice_problem(data["choice"], self._axes, self._labels)
                if problem is not None:
                    return f"trial #{number}: {problem}"
            earlier = self.configs.get((key_of(data["choice"]), data.get("source_hash")))
            if earlier is not None and not earlier[2]:
                return (f"trial #{number} measures the config of trial #{earlier[0]} (line "
                        f"{earlier[1]}) again; the first is kept")
            return None
        refs = getattr(record_class(kind), "trial_refs", None)
        unknown = [n for n in refs(data) if n not in self.trials] if refs else []
        if unknown:
            return f"{kind} record: trial #{unknown[0]} is not recorded before it"
        return None

    def add(self, data: dict[str, Any], line: int) -> None:
        """Count ``data``, a record :meth:`problem` passed, as the study's line ``line``."""
        if data["kind"] == "trial":
            self.add_trial(data["number"], key_of(data["choice"]), line,
                           data.get("source_hash"), bool(data.get("retry")))

    def add_trial(self, number: int, key: tuple[str, ...], line: int,
                  source: str | None = None, retry: bool = False) -> None:
        """Count trial ``number`` of the config ``key`` (:func:`key_of`), measured on the
        kernel source ``source`` (None: unnamed), as line ``line``; ``retry``: its config
        is to be measured again."""
        self.trials[number] = line
        earlier = self.configs.get((key, source))
        if earlier is None or earlier[2]:
            self.configs[(key, source)] = (number, line, retry)
