"""Where a ``sweeper run`` spent its wall time, from the process's start to its last line.

The command is judged against a bare script doing the same measurements (issue: a CLI
within 1.15x of a bare loop), so it says what it costs on top: the interpreter and the
imports before ``main`` ran, opening the device and the study, the sweep (its start-up,
the trials, the finals, what follows the loop), and the report.  :func:`process_age`
reads the process's start from ``/proc`` where there is one (Linux); elsewhere, and for
a call from Python, the count starts when the command does.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


def process_age() -> float | None:
    """Seconds since this process started, from ``/proc`` (None where it cannot be read:
    not Linux, or ``/proc`` not mounted)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            stat = f.read()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        # the command name (field 2) may hold spaces and parentheses: count after the last ')'
        started_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


#: Less source than this compiled at every start is not worth a line: Python compiles
#: about 10 MB a second on one core of the development machine, and sweeper's own
#: modules are 1.5 MB (a checkout's, where the variable below is set, compile each time).
RECOMPILED_NOTE_BYTES = 4_000_000


def recompiled_sources() -> Counter[str]:
    """The bytes of source this process's modules had compiled and will have compiled
    again at the next start, by top-level package: no bytecode where Python looks for it,
    and ``sys.dont_write_bytecode`` (``PYTHONDONTWRITEBYTECODE``) stops it writing any.
    An environment that installs torch without bytecode (uv's default, pip's
    ``--no-compile``) and sets that variable (many container images do) pays seconds of
    compiling at every process's start, each worker's included: 2.7 s of `sweeper run`'s
    start on the GPU machine of docs/benchmarks.md (torch alone is 12.5 MB of source in
    716 modules).  Empty where Python writes bytecode (then only the first start pays)."""
    found: Counter[str] = Counter()
    if not sys.dont_write_bytecode:
        return found
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        cached, origin = getattr(spec, "cached", None), getattr(spec, "origin", None)
        if cached and isinstance(origin, str) and origin.endswith(".py") and \
                not os.path.exists(cached):
            with contextlib.suppress(OSError):
                found[name.partition(".")[0]] += os.path.getsize(origin)
    return found


def recompiled_note(found: Counter[str]) -> str | None:
    """The line that says what :func:`recompiled_sources` found and how to stop paying
    for it, or None where it is too little to matter."""
    total = sum(found.values())
    if total < RECOMPILED_NOTE_BYTES:
        return None
    most = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in found.most_common(3))
    places: Counter[str] = Counter()          # the folders they lie in, most source first
    for name, size in found.items():
        folder = _folder(name)
        if folder:
            places[folder] += size
    where = " ".join(folder for folder, _ in places.most_common(2)) or \
        "the site-packages folder"
    return (f"Python compiles {total / 1e6:.1f} MB of source at every start ({most}), each "
            "worker's too: there is no bytecode for it and PYTHONDONTWRITEBYTECODE is set; "
            f"compile it once (python -m compileall -q {where}) or unset the variable")


def _folder(top: str) -> str | None:
    """The folder the imported top-level module ``top`` was found in (site-packages,
    say); None where it is not a file."""
    spec = getattr(sys.modules.get(top), "__spec__", None)
    origin = getattr(spec, "origin", None)
    if not isinstance(origin, str) or not origin.endswith(".py"):
        return None
    folder = os.path.dirname(origin)        # a package's __init__.py: one folder more
    return os.path.dirname(folder) if os.path.basename(origin) == "__init__.py" else folder


@dataclass
class RunClock:
    """Marks taken as a ``sweeper run`` goes (``perf_counter``), and the line saying
    where its time went."""

    #: seconds from the process's start to this clock's creation (None: unknown)
    before_s: float | None = None
    #: whether this is the process's first run (its set-up imports and compiles what a
    #: later run of the same process finds done)
    first: bool = True
    start: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)
    #: what a step was made of, shown in parentheses after it
    parts: dict[str, str] = field(default_factory=dict)
    #: what ``sweeper plan`` estimated the run takes (None: no estimate)
    estimate_s: float | None = None
    #: the heatmaps the report drew (None: no report), kept with its seconds, their
    #: cells, and the report's seconds beyond its pictures (its tables and files)
    report_maps: int | None = None
    report_cells: int | None = None
    report_fixed_s: float | None = None

    def mark(self, name: str) -> None:
        """The step ``name`` ended now."""
        self.marks[name] = time.perf_counter()

    def steps(self) -> dict[str, float]:
        """Each marked step's seconds, in order."""
        out, before = {}, self.start
        for name, at in self.marks.items():
            out[name], before = at - before, at
        return out

    def line(self, summary: Any) -> str:
        """``time: 36.9 s in all: ...``: the process before ``main`` (where
        ``before_s`` is known: a command, not a call from Python), each step, and the
        sweep's own parts from ``summary`` (a :class:`~sweeper.sweep.SweepSummary`)."""
        end = max(self.marks.values(), default=self.start)
        before = self.before_s or 0.0
        parts = [f"python start {before:.1f} s"] if self.before_s is not None else []
        for name, seconds in self.steps().items():
            made_of = sweep_parts(summary, seconds) if name == "sweep" and \
                summary is not None else self.parts.get(name)
            parts.append(f"{name} {seconds:.1f} s" + ("" if made_of is None else f" ({made_of})"))
        estimated = f" (estimated {self.estimate_s:.0f} s)" if self.estimate_s is not None else ""
        return (f"time: {before + end - self.start:.1f} s in all{estimated}: "
                f"{', '.join(parts)}")

    def elapsed_s(self) -> float:
        """Seconds since the process started (a command) or the clock did (a call)."""
        return (self.before_s or 0.0) + time.perf_counter() - self.start

    def startup_s(self) -> float | None:
        """Seconds from the process's start to the sweep (None: not known, a call from
        Python)."""
        return None if self.before_s is None else self.before_s + self._to_sweep()

    def setup_s(self) -> float | None:
        """Seconds from this clock's start to the sweep, where this is the process's first
        run (None: a later one, whose set-up says nothing of a first's)."""
        return self._to_sweep() if self.first else None

    def _to_sweep(self) -> float:
        """Seconds from this clock's start to the sweep: the space and device, the set-up."""
        steps = self.steps()
        return steps.get("space and device", 0.0) + steps.get("set-up", 0.0)


def sweep_parts(summary: Any, step_s: float) -> str:
    """The sweep's ``step_s`` of wall time split: its start (the sweep built, the journal
    read, the workers started, the baselines), the trials, the finals, and what came after
    (the workers closed, the drift check), and how busy it kept its GPUs.  The parts add
    up to the step: its start is what the trials, the finals and what followed them leave
    (the sweep's own clock, ``summary.wall_s``, starts once it is built: 0.3 s later on
    the H100 of the README's example, which the parts then left out)."""
    timing, busy = summary.timing, summary.busy
    shown = f"; {busy.label} busy {100 * busy.share:.1f}%" if busy is not None else ""
    if timing is None:
        return f"finals {summary.finals_s:.1f} s{shown}"
    trials = timing.span_s - timing.setup_s
    after = summary.wall_s - timing.span_s - summary.finals_s
    start = step_s - trials - summary.finals_s - after
    return (f"start {start:.1f}, trials {trials:.1f}, finals {summary.finals_s:.1f}, "
            f"after {after:.1f}{shown}")
