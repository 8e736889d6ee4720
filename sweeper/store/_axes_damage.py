"""Telling a damaged study's axes from damaged trial lines, for both stores.

A trial whose label is not among the study's axes (``study.json``'s ``axes``, the
PostgreSQL row's) is set aside as a damaged line (:mod:`sweeper.store._ledger`), and a run
measures its config again.  Where the axes are what is damaged, that would lose finished
trials, so the study is refused instead, before any line is set aside or moved, where:

- the axes leave out every one of the journal's trials (``"axes": {}``, an axis deleted);
- or a trial set aside chooses a label the study's recorded space (``space_text``, the
  space its last run read, read again without user code) gives on that axis: every run
  adds its space's axes and labels to the study's (:meth:`Storage.note_resumed`), so axes
  that lack one of them were damaged since.  A line from another space (labels no run's
  space gives) is still set aside.  A study whose last run narrowed an axis with ``-p``
  recorded the file's text: a hand-written line choosing a label the file gives but the
  run left out is refused too, and either remedy the refusal names is sound.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeper.core._units import counted
from sweeper.errors import StudyError, SweeperError
from sweeper.store._journal import Scan, parse_line
from sweeper.store._ledger import Axes
from sweeper.store._schema import show


def axes_refused(found: Scan, unchecked: Callable[[], Scan], meta: Mapping[str, Any],
                 where: Callable[[tuple[str, ...]], str], lines: str, what: str,
                 away: str) -> StudyError | None:
    """The refusal of a study whose axes are damaged (see the module's docstring), or
    ``None``.  ``found``: its records checked against its axes; ``unchecked``: the same
    records checked against none (asked only where ``found`` kept no trial); ``meta``: its
    metadata; ``where``: the place of the metadata's entry at a key path (``("axes",
    "BLOCK")``) as messages name it; ``lines``: the place of its records, before
    ``:LINE``; ``what``: the metadata as messages name it (``study.json``); ``away``: the other
    remedy (``move the study folder away``)."""
    axes = found.ledger.axes
    if not found.bad or axes is None:
        return None
    rest = f"as the space file gives them), or {away}; nothing was moved"
    if not found.ledger.trials:
        every = unchecked()
        if every.ledger.trials:
            first = next(b for b in found.bad if b.number in every.ledger.trials.values())
            return StudyError(
                f"{where(('axes',))}: its axes leave out every one of the journal's "
                f"{counted(len(every.ledger.trials), 'trial')} (first {lines}:"
                f"{first.number}: {first.reason}), so {what} is damaged; restore its axes "
                f"(every axis and label the trials choose from, {rest}")
    recorded = recorded_axes(meta)
    if not recorded:
        return None
    have = {name: frozenset(labels) for name, labels in axes.items()}
    left: dict[tuple[str, str], list[int]] = {}
    for bad in found.bad:
        data, _ = parse_line(bad.text, kept=False)
        if data is None or data["kind"] != "trial":
            continue
        for name, label in data["choice"].items():
            if label in recorded.get(name, ()) and label not in have.get(name, ()):
                left.setdefault((name, label), []).append(bad.number)
    if not left:
        return None
    (name, label), numbers = next(iter(left.items()))
    restore = f"its axis {show(name)}" if name not in axes else \
        f"{show(label)} to its axis {show(name)}"
    return StudyError(
        f"{where(('axes', name) if name in axes else ('axes',))}: its axes leave out "
        f"{name} {show(label)}, which the space the study records gives and the "
        f"journal's trials choose ({counted(len(numbers), 'trial')}, first {lines}:"
        f"{numbers[0]}), so {what} is damaged; restore {restore} (every label the trials "
        f"choose from, {rest}")


def recorded_axes(meta: Mapping[str, Any]) -> Axes | None:
    """The axes and labels of the space the study records (``space_text``), read without
    user code from its recorded folder where that is here; ``None`` where it records none
    or it cannot be read (its ``.cu`` file gone, its kernel's module not importable)."""
    text, file, folder = (meta.get(k) for k in ("space_text", "space_path", "space_folder"))
    if not isinstance(text, str) or not text:
        return None
    return _space_axes(text, file if isinstance(file, str) and file else "<space>",
                       folder if isinstance(folder, str) and Path(folder).is_dir() else None)


@functools.lru_cache(maxsize=8)
def _space_axes(text: str, file: str, folder: str | None) -> Axes | None:
    """:func:`recorded_axes` of one text, read once: each read of a study with a line set
    aside asks again."""
    from sweeper.space import parse_space

    try:
        space = parse_space(text, file=file, user_code=False, folder=folder)
    except (SweeperError, RecursionError):
        return None
    return {axis.name: tuple(str(x) for x in axis.labels) for axis in space.axes}
