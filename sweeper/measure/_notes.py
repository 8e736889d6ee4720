"""What a measurement says about itself, as a kind and its text: why sampling stopped
(:class:`StopReason`) and what a trial's number may not mean on its own
(:class:`TrialFlag`).

Readers decide by the kind (an enum); the text is for people and is kept as it was
written, its first words naming the kind.  Journals written before the kinds were kept
hold the text alone: :meth:`Note.kind_of` reads the kind from those first words, once,
where such a record is read, and nowhere else.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar, cast


class Flag(str, enum.Enum):
    """A caveat on one trial's number; reports count the trials of each."""

    UNCONVERGED = "unconverged"          # the adaptive rule reached max_time first
    L2_RESIDENT = "L2-resident"          # its working set fits in the L2
    LAUNCH_BOUND = "launch-bound"        # its median is mostly launch overhead
    DISCARDED = "samples discarded"      # samples thrown away while the GPU was throttled
    POWER_CAPPED = "power-capped"        # the power limiter engaged while it was sampled
    RETIMED = "re-timed"                 # beyond a limit once, within it when timed again
    SUSPICIOUS = "suspicious"            # still above the calibrated ceiling: it cannot win


class Stop(str, enum.Enum):
    """Why sampling ended."""

    FIXED = "fixed"                      # the fixed rule's number of samples
    CONVERGED = "converged"              # the adaptive rule's noise target met
    UNCONVERGED = "unconverged"          # the adaptive rule's max_time reached first
    ABANDONED = "abandoned"              # clearly slower than the best: cut short
    REPLAYED = "replayed"                # a recorded result, nothing sampled


K = TypeVar("K", Flag, Stop)
#: The first words that name a kind in a text: up to a colon or a parenthesis, without a
#: leading count ("3 samples discarded (throttled)").
_HEAD = re.compile(r"^(?:\d+ )?([^:(]*)")


@dataclass(frozen=True)
class Note(Generic[K]):
    """A kind and the text that says it."""

    kind: K
    text: str
    KINDS: ClassVar[type[enum.Enum]]

    def __str__(self) -> str:
        return self.text

    @classmethod
    def kind_of(cls, text: str) -> K | None:
        """The kind a text written before kinds were kept names by its first words."""
        match = _HEAD.match(text)
        head = match.group(1).strip() if match else ""
        return cast("K | None", next((k for k in cls.KINDS if k.value == head), None))


@dataclass(frozen=True)
class TrialFlag(Note[Flag]):
    """A caveat on a trial's number (``Flag``) and its text: ``L2-resident (warm, rotating
    3 buffer sets)``."""

    KINDS: ClassVar[type[enum.Enum]] = Flag


@dataclass(frozen=True)
class StopReason(Note[Stop]):
    """Why sampling ended (``Stop``) and its text: ``converged: ci 0.41% < 0.5% after 23
    samples``."""

    KINDS: ClassVar[type[enum.Enum]] = Stop
