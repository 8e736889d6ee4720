"""What the measuring side of a sweep writes to: the study's journal, or a relay.

A trial's measurement may append records of its own besides the trial's (a problem's
torch baseline, the switch to a duty schedule).  In the sweep's own process those go to
the :class:`~sweeper.store.StudyStore`; in a worker process they go to a
:class:`Relay`, which hands them back with the trial, so that only the coordinator ever
writes the journal and a worker that dies mid-trial leaves nothing half-written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from sweeper.store import Record

R = TypeVar("R", bound="Record")


class Journal(Protocol):
    """Where records are appended and read back by type (a ``StudyStore`` is one)."""

    def append(self, record: Any) -> None:
        """Keep ``record``."""

    def read(self, cls: type[R]) -> list[R]:
        """The records of type ``cls`` kept so far."""


class Relay:
    """A :class:`Journal` that keeps what is appended until :meth:`drain`; ``known`` are
    the records it starts from (those of the study's journal the worker needs)."""

    def __init__(self, known: list[Any] | None = None) -> None:
        self.known: list[Any] = list(known or [])
        self.pending: list[Any] = []

    def append(self, record: Any) -> None:
        self.pending.append(record)

    def read(self, cls: type[R]) -> list[R]:
        return [r for r in [*self.known, *self.pending] if isinstance(r, cls)]

    def drain(self) -> list[Any]:
        """What was appended since the last drain, in order; kept as known from now on."""
        out, self.pending = self.pending, []
        self.known += out
        return out
