"""``sweeper plan``: the size of a space, what its constraints remove, and a time estimate.

Nothing is launched.  The estimate is a model with its assumptions printed next
to it: the command's start-up; per config a load of its binary, then (warmup + repeat +
2) launches of at least the launch floor, each moving the kernel's bytes at an assumed
bandwidth and doing its FLOPs at an assumed peak per dtype (on the Triton interpreter:
costing by its programs and the tensor operations its body runs, at the problem the
interpreter shrinks it to); a compile per distinct binary
the machine has not compiled yet (:mod:`sweeper.kernels._binaries`: Triton's per problem,
block and constexprs, NVRTC's per its cache key), spread over the compile processes where
the sampler walks a plan (started with the sweep where nothing of the kernel is cached,
else once a trial compiled); the sampler's proposals; each problem's finals
(:func:`sweeper.finals.finals_estimate_s`, after cool-downs where the kernel computes at
its peak: a power-bound GPU); the report.  What a start-up, a compile, a proposal and a
report cost is what the last runs on this machine measured (:class:`RunCosts`, kept per
device), else an H200's figures, a launch's scaled by the GPU's physical bounds against
the H200's (:class:`GpuScale`).  A study already run gives a second estimate: its last
run's seconds per trial (``sweeper plan`` prints both), and ``sweeper run`` prints the
estimate at its start and the wall against it at its end.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.bounds import derive_bounds
from sweeper.ceilings import cache_root
from sweeper.core import grid_labels
from sweeper.core._units import counted
from sweeper.devices import DeviceFacts, PlanCosts
from sweeper.devices._base import GPU_COSTS
from sweeper.devices._gpu_query import GPU_COSTS_READ_ON
from sweeper.drawn_maps import ProblemMaps
from sweeper.errors import SweeperError
from sweeper.finals import GPU_FINAL, GPU_ROUND, FinalSize, Round, finals_estimate_s
from sweeper.fsio import read_cache, write_cache
from sweeper.measure import SUSTAINED, Duty
from sweeper.space import Config, Invalid, MeasureSpec, Problem, Space
from sweeper.store import key_of
from sweeper.study import RuledOut, finals_wanted, resolved

if TYPE_CHECKING:
    from sweeper.kernels._binaries import Binaries

#: Seconds of a trial's samples after which a FLOP-bound kernel meets the power limiter.
POWER_AFTER_S = 0.015
#: The chance that a GPU finds a FLOP-bound kernel of shorter samples power-bound all the
#: same (a GPU hot from earlier work): its finals' cool-downs are priced at this share.
#: On the H200 spaces/matmul-shapes.yaml (samples of 2-6 ms) stayed unthrottled in two
#: runs (finals 0.3 s) and turned power-bound late in two others that followed the GPU
#: tests (finals 8.0 s behind 100 ms cool-downs): no plan can tell which, and an estimate
#: midway (about 13 s) is within 1.5x of all four walls (10.1-19.8 s).
POWER_MAYBE = 0.5


#: by sampler, the load a power-bound trial runs before its samples where no run of the
#: sampler on this machine measured it: ``auto``'s proposals take longer than ``IDLE_S``
#: (50 ms a trial on an H100, cold ``auto`` on spaces/matmul-8k), so each of its trials
#: takes the whole ``SUSTAINED`` load; a sampler that plans hands its next config over at
#: once.  Without it that run's estimate on a fresh machine was 18 s; it took 39.4 s.
UNMEASURED_LOAD_S = {"auto": SUSTAINED.seconds}
#: a FLOP-bound launch over the model's (its FLOPs at a tuned matmul's peak) where no run
#: of the kernel on this machine measured it: a sweep's configs are mostly not the tuned
#: one (on the H200 the 306 matmul trials of matmul-8k and matmul-shapes ran at 1.73 times
#: the model, copy's at 1.05 of its bytes' time); without it a fresh machine's plan put
#: matmul-8k at 16 s for 23.9 s
UNMEASURED_FLOP_SCALE = 1.7


@dataclass
class RunCosts:
    """What a run costs on one device beyond its trials' launches, as the last runs on
    this machine measured it (:func:`note_run`), else as on the H200: the command's
    start-up (interpreter, imports, space, device, study: 2.2-3.0 s there with the
    bytecode a user's install writes, 4.6-6.0 s where that machine's image made Python
    compile torch from source at every start: docs/benchmarks.md), the report
    (0.9-1.0 s for the 8 heatmaps of spaces/copy.yaml, matplotlib's import included), a
    compile per distinct binary from a cold cache, by kernel, and a proposal, by sampler
    (``auto`` fits its surrogate: 34 ms a trial for the 108 configs of
    spaces/matmul-8k.yaml)."""

    startup_s: float = 2.5
    #: of a process's first run, the seconds from its call (a command's: once Python read
    #: its arguments) to its sweep (the imports its set-up pulls in, the space, device and
    #: study, the GPU check): what a call from Python spends the first time in its process
    #: (on the interpreter 2.6 s for spaces/copy-small.yaml, 0.2 s a later call);
    #: ``None``: not measured (``startup_s`` is taken)
    setup_s: float | None = None
    report_s: float = 0.7
    #: the heatmaps of the report that took ``report_s``: a report's tables and pictures
    #: grow with its maps (on the H200 0.7 s for 5 and 8 maps, 1.3-1.4 s for 36, 3.1 s for
    #: 107: docs/raw/2026-12-05-s30/), so another space's report is scaled by its own maps
    report_maps: int = 8
    #: the seconds of that report that do not grow with its maps, as measured: its
    #: imports (pandas' and the plotting library's, where the process had not imported
    #: them) and its files; ``None``: not measured, ``REPORT_FIXED_S`` assumed.  Its
    #: pictures and tables grow with the maps, beyond ``DRAWING_FIXED_S``
    report_fixed_s: float | None = None
    #: the cells of those heatmaps (the configs they show, :mod:`sweeper.drawn_maps`):
    #: a map's picture grows with its cells' numbers too; ``None``: not measured, the
    #: report is scaled by its maps alone
    report_cells: int | None = None
    #: by kernel, a trial's own seconds beyond its launches (loading its binary, what its
    #: first launch takes beyond a timed one, verifying, the host's side of sampling), the
    #: median over a run's trials; where none: the device's :class:`PlanCosts` ``compile_s``
    trial_s: dict[str, float] = field(default_factory=dict)
    #: by kernel, a launch's measured median over the model's launch time (its bytes and
    #: FLOPs at the assumed bandwidth and peak), the median over a run's trials: the
    #: interpreter's launch costs what its programs' steps cost, not its bytes
    launch_scale: dict[str, float] = field(default_factory=dict)
    #: by kernel, the measured ratio behind ``launch_scale`` before any pull towards the
    #: model, and how many trials it pools: a run's ratio joins them (weighted by trials,
    #: in log, those kept counting as at most ``SCALE_TRIALS_KEPT``), so that a run of 12
    #: configs does not throw away what one of 204 measured
    launch_ratio: dict[str, float] = field(default_factory=dict)
    launch_trials: dict[str, int] = field(default_factory=dict)
    #: by kernel, a compile from a cold cache in the worker, before its trial (the median
    #: first launch that compiled); and in the compile pool, beside its other processes'
    #: compiles (the median of the pool's): on the H200 the 108 configs of spaces/matmul-8k
    #: compiled in 0.3-0.6 s each in the worker, the ffn space's in 1.57 s each in eight
    #: processes side by side, so one figure for both put a TPE run at 2.7 times its wall
    compile_s: dict[str, float] = field(default_factory=dict)
    pool_compile_s: dict[str, float] = field(default_factory=dict)
    #: by kernel, the run's first trial's compile in the worker, where it compiled: the
    #: compiler starts in that process then (on the H200 softmax's first 1.7 s, its
    #: others 0.14-0.21 s: a plan of 0.17 s put a run at 1.57 times its estimate)
    first_compile_s: dict[str, float] = field(default_factory=dict)
    ask_s: dict[str, float] = field(default_factory=lambda: {"auto": 0.034})
    #: by sampler, the seconds of the config's own work a trial that compiled nothing ran
    #: before its samples in a power-bound sweep under ``measure.duty: auto`` (the GPU
    #: idled since the last samples: the sampler's proposal, a wait), the mean over a
    #: run's such trials (none measured: :data:`UNMEASURED_LOAD_S`); a trial that compiled
    #: is priced with its compile
    load_s: dict[str, float] = field(default_factory=dict)
    #: a final's host seconds per entrant and round beyond its launches, as the last run's
    #: finals measured them (``finals.measured_overhead_s``); ``None``: none measured, the
    #: finals' ``FINALS_OVERHEAD_S`` stands
    finals_overhead_s: float | None = None
    #: by space (its ``study:`` name), what its last report here took: ``report_s``,
    #: ``report_maps`` and ``report_fixed_s`` as above, which price that space's reports
    #: (:meth:`of_space`); the fields above are the machine's last report of any space,
    #: which price a space not reported here yet.  A map's seconds are its space's (its
    #: cells, its marks): priced from whichever space reported last, one space's slow maps
    #: set the next space's time budget and estimate
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: on the interpreter, what the set-up's GPU compile check of one config took here
    #: (the fork, Triton's hash of its library, the compile or its cache lookup), as the
    #: last run that ran one measured it; ``None``: none ran, ``GPU_CHECK_S`` assumed.  A
    #: time budget that leaves less before its report skips the check
    gpu_check_s: float | None = None

    #: a compile from a cold cache where none was measured for the kernel: on the H200
    #: the matmul kernel's took 0.28 s in the worker and 0.31 s in the pool's eight
    #: processes side by side, copy's 0.08 s in the pool (docs/raw/2026-12-05-s34-h200/);
    #: at 0.5 s a fresh plan put a compile pool 102 binaries behind
    COMPILE_S = 0.3
    #: an NVRTC compile of a CUDA C kernel where none was measured (the ``cuda`` kernel's
    #: compiles are kept under its name like any other's): on the H200 the worker spent
    #: 2.8 s compiling the 45 binaries of spaces/cuda-copy.yaml, at most 62 ms each
    #: (docs/raw/2026-12-03-s17/h200-record.log), rounded up
    NVRTC_COMPILE_S = 0.1
    #: a Triton kernel's first compile in the worker where none was measured: it starts
    #: the compiler in that process (on the H200 softmax's took 1.7 s, its others
    #: 0.14-0.21 s; without it a fresh machine's plan put that run at 1.59 times its
    #: estimate)
    FIRST_COMPILE_S = 1.7
    #: seconds of a report that do not grow with its maps where none was measured: on the
    #: H200 the reports above lie on a line of 0.5 s and 25 ms a map
    REPORT_FIXED_S = 0.5
    #: seconds of a report's pictures and tables that do not grow with its maps (the
    #: first figure's set-up): the H200's pictures took 0.5 s for 8 maps, 0.9-1.0 s for
    #: 36 and 2.0 s for 107, a line of 0.38 s and 15 ms a map, so a report of few maps
    #: priced per map alone put 107 at 6.7 s
    DRAWING_FIXED_S = 0.4
    #: trials of launch ratios kept at most: older runs fade as a machine's load changes
    SCALE_TRIALS_KEPT = 200
    #: the cells whose numbers cost a report what one map's figure costs: on the 2-core
    #: development machine the pictures of 8 maps took 2.3-2.5 s over 28 cells and
    #: 4.5-5.1 s over 204 (replayed copy studies, 2026-12-06): 0.25 s a map, 14 ms a cell
    CELLS_A_MAP = 18

    def of_space(self, space: str) -> RunCosts:
        """These costs with the report priced as ``space``'s last report here took (its
        ``study:`` name), where one did; else as they are (the machine's last)."""
        kept = self.reports.get(space)
        if not isinstance(kept, dict) or not isinstance(kept.get("report_s"), (int, float)):
            return self
        return dataclasses.replace(
            self, report_s=kept["report_s"], report_maps=kept.get("report_maps") or 1,
            report_fixed_s=kept.get("report_fixed_s"), report_cells=kept.get("report_cells"))

    def setup_for(self) -> float:
        """What a call from Python spends before its first sweep in its process: as
        measured (``setup_s``), else the command's start-up."""
        return self.startup_s if self.setup_s is None else self.setup_s

    def report_for(self, maps: int, cells: int | None = None) -> float:
        """Seconds a report of ``maps`` heatmaps over ``cells`` cells takes: its part that
        does not grow with them (as measured, with ``DRAWING_FIXED_S``; else
        ``REPORT_FIXED_S``), and the measured report's other seconds scaled from its maps
        and cells to these, a map counting as ``CELLS_A_MAP`` cells (by its maps alone
        where either report's cells are not known).  So a space's report at another size
        (``-p``), and another space's, is priced by what its maps hold, not as the
        measured one's maps held."""
        fixed = min(self.REPORT_FIXED_S if self.report_fixed_s is None
                    else self.report_fixed_s + self.DRAWING_FIXED_S, self.report_s)
        if cells is None or not self.report_cells:
            return fixed + (self.report_s - fixed) / max(1, self.report_maps) * maps
        measured = self.report_maps + self.report_cells / self.CELLS_A_MAP
        return fixed + (self.report_s - fixed) / measured * (maps + cells / self.CELLS_A_MAP)

    def report_reserve(self, maps: int, cells: int | None = None) -> float:
        """What a time budget keeps for a report of ``maps`` heatmaps over ``cells``
        cells: :meth:`report_for`, and where the part that does not grow with the maps was
        not measured, never less than the last report took (its imports, which
        ``REPORT_FIXED_S`` may understate)."""
        estimate = self.report_for(maps, cells)
        return estimate if self.report_fixed_s is not None else max(self.report_s, estimate)

    def scale_of(self, kernel: str, interpreted: bool, by_flops: bool = False) -> float:
        """``kernel``'s launch scale as measured; one not run here yet takes, on an
        interpreter (``interpreted``), what the machine's other kernels measured
        (:meth:`machine_ratio`: what a tensor operation costs is the machine's, and each
        kernel's count of them is its own), else 1, or :data:`UNMEASURED_FLOP_SCALE` for a
        launch bound by its FLOPs (``by_flops``)."""
        if kernel in self.launch_scale:
            return self.launch_scale[kernel]
        if interpreted:
            return self.machine_ratio(kernel) or 1.0
        return UNMEASURED_FLOP_SCALE if by_flops else 1.0

    def machine_ratio(self, kernel: str) -> float | None:
        """The launch ratio the machine's kernels other than ``kernel`` measured: the
        median of their pooled ratios (``launch_ratio``), or of their scales where a cache
        written before ratios were kept holds scales alone; ``None`` where no other kernel
        ran.  The one figure both a kernel not yet run (:meth:`scale_of`) and a kernel's
        first runs (:func:`note_run`'s pull) take for what the machine measured."""
        kept = self.launch_ratio or self.launch_scale
        others = [r for k, r in kept.items() if k != kernel and r > 0]
        return statistics.median(others) if others else None

    def compile_of(self, kernel: str, pooled: bool = False, nvrtc: bool = False) -> float:
        """Seconds a binary of ``kernel`` takes to compile, in the worker or (``pooled``)
        in the compile pool: as measured there, else as measured in the other, else
        assumed (``nvrtc``: a CUDA C kernel's)."""
        first, other = ((self.pool_compile_s, self.compile_s) if pooled else
                        (self.compile_s, self.pool_compile_s))
        return first.get(kernel, other.get(
            kernel, self.NVRTC_COMPILE_S if nvrtc else self.COMPILE_S))


    def first_compile_of(self, kernel: str, nvrtc: bool = False) -> float:
        """Seconds the first binary of ``kernel`` a worker compiles takes: as measured,
        else a fresh compiler's ``FIRST_COMPILE_S`` where nothing of the kernel's
        compiles was measured (a Triton kernel's), else as any other compile."""
        unmeasured = not nvrtc and kernel not in self.compile_s and \
            kernel not in self.pool_compile_s
        return self.first_compile_s.get(kernel, self.FIRST_COMPILE_S if unmeasured
                                        else self.compile_of(kernel, nvrtc=nvrtc))


def _costs_path() -> Path:
    return cache_root() / "run-costs.json"


def costs_key(device: Any) -> str:
    """The name runs on ``device`` keep their costs under: the device's kind and the GPU
    it measures (a plugin device on the same GPU as ``cuda`` costs what it costs)."""
    return device_key(device.name, device.facts())


def device_key(kind: str, facts: DeviceFacts) -> str:
    """:func:`costs_key` of a device of kind ``kind`` on the GPU ``facts`` describes, told
    before the device is opened (the driver's facts alone)."""
    return f"{kind}: {facts.name}"


def run_costs(device: str, first: PlanCosts | None = None) -> RunCosts:
    """What runs on ``device`` (:func:`costs_key`) cost on this machine; where none ran,
    or the cache cannot be read, the start-up and report ``first`` gives (the device's
    own figures), else the H200's."""
    try:
        data = json.loads(_costs_path().read_text()).get(device)
        costs = RunCosts(**data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError, AttributeError):
        costs = None
    if costs is not None and all(isinstance(t, dict) for t in (
            costs.trial_s, costs.launch_scale, costs.launch_ratio, costs.launch_trials,
            costs.compile_s, costs.pool_compile_s,
            costs.first_compile_s, costs.ask_s, costs.reports)):
        return costs
    fresh = RunCosts()                 # none ran, or written by an older sweeper, or damaged
    if first is not None and first.startup_s is not None:
        fresh.startup_s = first.startup_s
    if first is not None and first.report_s is not None:
        fresh.report_s = first.report_s
    return fresh


def note_run(device: str, *, kernel: str, sampler: str, startup_s: float | None,
             report_s: float | None, compiles_s: list[float], ask_s: float | None,
             setup_s: float | None = None,
             report_maps: int | None = None, report_fixed_s: float | None = None,
             report_cells: int | None = None,
             first_compile_s: float | None = None,
             trials_s: list[float] | None = None,
             launch_scales: list[float] | None = None, prior_trials: int = 0,
             pool_compiles_s: Sequence[float] = (),
             finals_overhead_s: float | None = None,
             loads_s: Sequence[float] = (), space: str | None = None,
             gpu_check_s: float | None = None) -> None:
    """Keep what a run on ``device`` measured: its start-up, set-up (``RunCosts.setup_s``)
    and report seconds (``None``: not measured, e.g. a call from Python or
    ``--no-report``) and the report's heatmaps,
    the first launches that
    compiled in the worker and the compile pool's compiles (the median of each is the
    kernel's compile there), a proposal's seconds, and for its
    kernel each trial's seconds beyond its timed launches and each launch's measured
    median over the model's (the medians of both; the latter pooled with the ratios of
    earlier runs, ``RunCosts.launch_ratio``, and pulled towards the other kernels' ratios
    as if they were ``prior_trials`` more trials, in log; the machine's first kernel is
    taken as measured), what its finals took
    per entrant-round beyond their launches, and the loads its power-bound trials ran under
    ``measure.duty: auto`` (``loads_s``; their mean is the sampler's).  The report's seconds
    are kept as the machine's and as those of ``space`` (its ``study:`` name:
    :attr:`RunCosts.reports`), and what its GPU compile check took (``gpu_check_s``, on
    the interpreter).  Never fails the run: a cache that cannot be written is left
    as it is."""
    costs = run_costs(device)
    if trials_s:         # beyond its launches: never below none (noisy timings can say so)
        costs.trial_s[kernel] = round(max(0.0, statistics.median(trials_s)), 4)
    if launch_scales:
        ratio, trials = statistics.median(launch_scales), len(launch_scales)
        before = min(costs.launch_trials.get(kernel, 0), costs.SCALE_TRIALS_KEPT)
        if before and ratio > 0 and costs.launch_ratio.get(kernel, 0) > 0:
            ratio = math.exp((before * math.log(costs.launch_ratio[kernel]) +
                              trials * math.log(ratio)) / (before + trials))
            trials += before
        costs.launch_ratio[kernel], costs.launch_trials[kernel] = round(ratio, 4), trials
        # pulled towards what the machine's other kernels measured: on an interpreter a
        # tensor operation costs what it costs the machine (copy's 404 trials measured
        # 0.133 of the model, softmax's 24 then 0.145).  Not towards the model's 1 where
        # none ran: that is a machine unloaded, and under load a run measured 2-6 times it
        machine = costs.machine_ratio(kernel)
        weight = 1.0 if machine is None else trials / (trials + prior_trials)
        costs.launch_scale[kernel] = round(ratio ** weight * (machine or 1.0) ** (1 - weight),
                                           4)
    # a report of no heatmaps says nothing of what a map costs: its seconds would be
    # kept beside the last report's maps, and the next estimate scaled from that pair
    if report_s is not None and report_maps != 0:
        costs.report_s = round(report_s, 3)
        costs.report_maps = report_maps or costs.report_maps
        costs.report_fixed_s = None if report_fixed_s is None else round(report_fixed_s, 3)
        costs.report_cells = report_cells
        if space is not None:
            costs.reports[space] = {name: getattr(costs, name) for name in (
                "report_s", "report_maps", "report_fixed_s", "report_cells")}
    if compiles_s:
        costs.compile_s[kernel] = round(statistics.median(compiles_s), 3)
    if first_compile_s is not None:
        costs.first_compile_s[kernel] = round(first_compile_s, 3)
    if pool_compiles_s:
        costs.pool_compile_s[kernel] = round(statistics.median(pool_compiles_s), 3)
    if ask_s is not None:
        costs.ask_s[sampler] = round(ask_s, 4)
    if loads_s:
        costs.load_s[sampler] = round(statistics.fmean(loads_s), 4)
    for name, seconds, places in (("startup_s", startup_s, 3), ("setup_s", setup_s, 3),
                                  ("finals_overhead_s", finals_overhead_s, 4),
                                  ("gpu_check_s", gpu_check_s, 3)):
        if seconds is not None:                 # else the figure kept stands
            setattr(costs, name, round(seconds, places))
    path = _costs_path()
    kept = read_cache(path)                       # damaged: written anew
    kept[device] = dataclasses.asdict(costs)
    write_cache(path, kept, indent=1)


def _expected_samples(measure: MeasureSpec, launch_s: float) -> int:
    """Samples a trial will take: ``repeat`` when fixed; for adaptive rules, assume the
    minimum is enough unless ``min_time`` asks for more."""
    if measure.stop == "fixed":
        return measure.repeat
    by_time = int(measure.min_time_s / (launch_s * measure.batch)) + 1
    return min(max(measure.min_samples, by_time),
               int(measure.max_time_s / (launch_s * measure.batch)) + 1)


@dataclass
class Plan:
    """What ``sweeper plan`` reports: configs in the space, how many are valid, why the
    others were removed (reason -> count, and the reasons' examples in ``ruled_out``), how
    many trials the budget lets run and what they would cost, with the costs assumed."""

    size: int
    valid: int
    removed: Counter[str] = field(default_factory=Counter)     # reason -> count
    estimate_s: float = 0.0
    #: of ``estimate_s``, the finals of each problem (none where the run takes none)
    finals_s: float = 0.0
    assumptions: Mapping[str, float | bool] = field(default_factory=dict)
    #: a launch's scale by its bytes and by its FLOPs for the GPU planned for against the
    #: one the costs were read on, and what they compare (:class:`GpuScale`; 1, 1 and
    #: empty where the kernel was measured here or the GPUs' bounds are alike)
    gpu_scale: tuple[float, float, str] = (1.0, 1.0, "")
    trials: int = 0                                       # what the budget lets run
    #: the configs the run would measure without a trial budget (``trials`` where none binds)
    todo: int = 0
    #: of ``trials``, the configs measured again (their worker process was killed from
    #: outside: :attr:`RunShape.again`), which the run measures first
    again: int = 0
    ruled_out: RuledOut = field(default_factory=RuledOut)
    #: ``estimate_s`` by what it goes to (start-up, trials, compile, proposals, finals,
    #: report), in that order
    parts: dict[str, float] = field(default_factory=dict)
    #: the distinct binaries the trials run (counted where the run compiles for a GPU),
    #: and of those, how many the machine has compiled already (a load each)
    binaries: int = 0
    cached: int = 0
    #: the report's heatmaps, those drawn (:mod:`sweeper.drawn_maps`): per problem where
    #: two of grid, block and the meta-parameters vary, one of the best over its meta
    #: values and one per meta values, each where it holds a number in two cells or more
    maps: int = 0
    #: of :attr:`RunShape.done`, the keys of this space's configs (valid or ruled out): a
    #: study run with other values keeps trials this space does not hold
    done_here: frozenset[tuple[str, ...]] = frozenset()

    def parts_text(self) -> str:
        """``start-up 4 s, trials 9 s, ...``: the estimate's parts of a second or more."""
        return ", ".join(f"{k} {seconds_text(v)}" for k, v in self.parts.items() if v >= 0.5)


def estimate_words(plan: Plan, time_s: float | None, *, per_trials: bool = True
                   ) -> tuple[str, str, float]:
    """What an estimate says of ``plan`` under the time budget ``time_s`` (``sweeper run``'s
    line and ``sweeper plan``'s): its head, what leads its parts in the parentheses, and
    its seconds.  A budget shorter than the plan is the estimate, with what the trials
    would take without it; one the start-up alone passes is said to be, not promised
    (the run likely measures nothing).  ``per_trials``: the head names the trials."""
    whole, startup = plan.estimate_s, plan.parts.get("start-up", 0.0)
    would = f"{counted(plan.trials, 'trial')} would take {seconds_text(whole)}: "
    if time_s is not None and startup >= time_s:
        return (f"{seconds_text(startup)}, the start-up alone, longer than the time budget of "
                f"{time_s:g} s: it likely measures nothing", would, startup)
    if time_s is not None and whole > time_s:
        return f"{seconds_text(time_s)}, the time budget", would, time_s
    trials = f" for {counted(plan.trials, 'trial')}" if per_trials else ""
    return f"{seconds_text(whole)}{trials}", "", whole


def seconds_text(s: float) -> str:
    """``12 s``, or past two minutes ``3.5 min``: how estimates and plans say seconds."""
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


#: Seconds of a sweep's compiling the worker does itself where the compile pool starts
#: once a trial compiled (nothing of the kernel cached: with the sweep): the pool's
#: processes import torch and Triton, compile their first binaries, and until one is done
#: the worker compiles what it measures.  On the H200 (2026-12-03) the worker compiled
#: 6.3 and 3.5 s of the 20 and 16 binaries of two softmax shapes, all of them, and 7.4
#: and 8.1 s of the 72 of two matmul shapes (0.35 s each), the pool the rest
LAZY_POOL_S = 8.0
#: The worker's seconds of compiling that start a run's compile pool with the sweep
#: rather than once a trial compiled: three times what starting it early costs where
#: nothing compiles (eight processes importing beside the coordinator and the worker
#: slowed their imports by about a second on the H200 machine)
EARLY_POOL_S = 3.0


def compiles_ahead(sampler: str) -> bool:
    """Whether a sweep under ``sampler`` knows which configs come next, so its compile pool
    builds them while the GPU measures: a sampler that walks a plan, or one that follows
    the kernel model (the model's fastest guesses first,
    :class:`~sweeper.sweep._compile_ahead.ModelHints`).  Any other sampler's pool
    builds the space in a shuffled order once a trial compiled, and the worker compiles
    what it has not reached."""
    from sweeper.plugins import sampler_capabilities

    declared = sampler_capabilities(sampler)
    return declared.plans or declared.uses_model


def pool_from_start(space: Space, facts: DeviceFacts, key: str, costs: RunCosts) -> bool:
    """Whether a run of ``space`` on the GPU ``facts`` describes (runs kept under ``key``,
    :func:`costs_key`) starts its compile pool with the sweep: its sampler knows what
    comes next (:func:`compiles_ahead`), and nothing of the kernel is in
    Triton's cache, or the binaries the machine has not compiled
    (:func:`~sweeper.kernels._binaries.space_binaries`) would keep the worker compiling
    for ``EARLY_POOL_S`` or more (new shapes of a kernel whose others are cached).  What
    the run does (:mod:`sweeper.engine._prespawn`) and what the plan counts."""
    from sweeper.kernels._binaries import space_binaries
    from sweeper.kernels._cache_probe import names_triton, space_cold

    if not compiles_ahead(space.sampler.name):
        return False
    if space_cold(space.kernel):
        return True
    if space.kernel == "cuda" or not names_triton(space.kernel):
        return False                  # no Triton binaries to compile (NVRTC's: the worker)
    binaries = space_binaries(space, key)
    seen: set[Any] = set()
    missing = 0
    each = costs.compile_of(space.kernel)
    try:
        for _, config in resolved(space, facts.env()):
            if isinstance(config, Invalid):
                continue
            binary = binaries.key(config)
            if binary not in seen:
                seen.add(binary)
                missing += not binaries.cached(binary)
                if missing * each >= EARLY_POOL_S:
                    return True
    except SweeperError:              # said in its place, when the sweep enumerates it
        return False
    return False


@dataclass(frozen=True)
class GpuScale:
    """How much longer than on the GPU ``GPU_COSTS`` was read on (an H200) a launch takes
    on the GPU planned for, by its physical bounds (:meth:`~sweeper.devices.Device.bounds`):
    a launch bound by its bytes by the two DRAM bounds' ratio, one bound by its FLOPs by
    the two 16-bit tensor FLOP bounds'.  It prices a kernel no run on this machine has
    measured (a measured one is priced by its own launches); 1 where a bound is absent.
    On an H100 a fresh plan of spaces/copy.yaml priced at the H200's bandwidth put its
    wall at 1.54 times the estimate, the H100's DRAM bound being 0.70 of the H200's."""

    by_bytes: float = 1.0
    by_flops: float = 1.0
    #: what each ratio compares (``DRAM 3352 against 4814 GB/s``), empty where it is 1
    bytes_why: str = ""
    flops_why: str = ""

    def why(self, flop_bound: bool) -> str:
        """What the ratios that price this plan compare (those of the FLOPs where some
        launch is bound by its FLOPs), for its assumptions; empty where none does."""
        said = [w for w in (self.bytes_why, self.flops_why if flop_bound else "") if w]
        return f"{', '.join(said)} of the {GPU_COSTS_READ_ON.gpu} these figures were read on" \
            if said else ""


#: the dtype whose FLOP bounds scale a FLOP-bound launch, that of ``GPU_COSTS``' peak
FLOP_BOUND_DTYPE = "bfloat16"


def gpu_scale(device: Any) -> GpuScale:
    """:class:`GpuScale` of ``device`` against the GPU ``GPU_COSTS`` was read on, for a
    device that prices its trials by ``GPU_COSTS`` (not an interpreter, whose costs are
    its own); 1 where it gives no bounds (a replay, a plugin device)."""
    if device.plan_costs is not GPU_COSTS:
        return GpuScale()
    own, read_on = device.bounds(), derive_bounds(GPU_COSTS_READ_ON)

    def ratio(name: str, mine: Any, theirs: Any, unit: str, per: float) -> tuple[float, str]:
        if mine is None or theirs is None or mine.per_s <= 0 or mine.per_s == theirs.per_s:
            return 1.0, ""
        return theirs.per_s / mine.per_s, \
            f"{name} {mine.per_s / per:.0f} against {theirs.per_s / per:.0f} {unit}"

    by_bytes, bytes_why = ratio("DRAM", own.dram, read_on.dram, "GB/s", 1e9)
    by_flops, flops_why = ratio(f"{FLOP_BOUND_DTYPE} FLOP", own.flops.get(FLOP_BOUND_DTYPE),
                                read_on.flops.get(FLOP_BOUND_DTYPE), "TFLOP/s", 1e12)
    return GpuScale(by_bytes, by_flops, bytes_why, flops_why)


@dataclass(frozen=True)
class RunShape:
    """What a run adds around its trials, for the estimate: the sampler's name, which of
    the kernel's binaries compile (``binaries``, per binary; where none is given, all of
    them when ``cold``, else none), whether the compile pool starts with the sweep
    (``cold``: :func:`pool_from_start`, nothing of the kernel cached or enough of its
    binaries to compile) and with how many processes, whether a report and the command's
    start-up are counted, and their costs."""

    sampler: str = "exhaustive"
    kernel: str = ""
    cold: bool = False
    compile_workers: int = 0
    report: bool = False
    startup: bool = False
    #: where not ``startup``: whether the run is a call's first in its process, whose
    #: set-up (``RunCosts.setup_s``) counts
    setup: bool = False
    costs: RunCosts = field(default_factory=RunCosts)
    binaries: Binaries | None = None
    #: the configs the study has already answered (their :func:`~sweeper.store.key_of`
    #: keys: a resumed run measures none of them again) and how many of its trials the
    #: trial budget counts already (all but those the constraints ruled out)
    done: frozenset[tuple[str, ...]] = frozenset()
    spent: int = 0
    #: the choices of the study's trials to be measured again (``retry``: their worker
    #: process was killed from outside): a resumed run measures those of its configs
    #: first, within its trial budget, so the plan prices them first
    again: tuple[Mapping[str, str], ...] = ()
    #: the finals the study still owes (a run stopped before or during them) of problems
    #: that may have no config left to measure: per (problem, cache), how many configs it
    #: measured and the fastest median, in seconds
    finals_owed: Mapping[tuple[Problem, str], tuple[int, float]] = field(default_factory=dict)
    #: the GPU planned for against the one the costs were read on (:func:`gpu_scale`)
    gpu: GpuScale = GpuScale()


Counts = tuple[Callable[[Problem], int] | None, Callable[[Problem], int] | None,
               Callable[[Config], int | None] | None]


def declared_counts(kernel: str, options: Mapping[str, str] | None = None) -> Counts:
    """What ``kernel`` (a space's ``kernel:``, with its ``options``) declares of a launch:
    the bytes it moves through DRAM (its bytes moved, or more where its access order
    says so: ``Kernel.dram_bytes``) and its FLOPs per problem, and the tensor operations
    an interpreted launch of a config runs (each ``None`` where not declared).  A
    built-in declares them in its class; a ``cuda`` kernel by its tensors' shapes (or its
    ``bytes_moved`` and ``flops`` options); a user's ``sweeper.kernel`` the operations of
    the Triton functions its launch launches, counted from their source, never run
    (:mod:`sweeper.kernels._interpreted_ops`), and no bytes: the plan counts its
    launches alone."""
    from sweeper.kernels import BUILTINS, declared_count

    if kernel == "cuda" and options:
        from sweeper.kernels._cuda_form import declared_counts as cuda_counts

        return (*cuda_counts(options), None)
    if kernel not in BUILTINS:
        return None, None, source_ops(kernel)
    counted = declared_count(kernel, "bytes_moved")
    moved = declared_count(kernel, "dram_bytes") or counted   # what its access order moves
    return (moved, declared_count(kernel, "flops") if counted is not None else None,
            declared_count(kernel, "interpreted_ops"))


def source_ops(kernel: str) -> Callable[[Config], int] | None:
    """The tensor operations an interpreted launch of user kernel ``kernel`` runs, as its
    source counts them (the stand-in :func:`~sweeper.plugins.unchecked_kernel` reads, so
    ``plan`` and ``run`` price it alike, importing nothing); ``None`` where none are read
    (a ``Kernel`` subclass, a launch whose Triton function cannot be followed)."""
    from sweeper import plugins
    from sweeper.kernels._interpreted_ops import LaunchOps

    try:
        counted = getattr(plugins.kernel_declaration(kernel, user_code=False),
                          "interpreted_ops", None)
    except SweeperError:                 # the run refuses it, or imported it already
        return None
    return counted if isinstance(counted, LaunchOps) else None


def plan_of(space: Space, device: Any, shape: RunShape | None = None) -> tuple[Plan, bool]:
    """``space``'s plan on ``device`` (see :func:`make_plan`), and whether the kernel's
    bytes and FLOPs were counted (a built-in's declaration; else launches only)."""
    counted, flops, ops = declared_counts(space.kernel, dict(space.kernel_options))
    plan = make_plan(space, counted or (lambda _: 0), device.facts(), device.plan_costs,
                     device.measure_spec(space.measure), flops=flops, ops=ops,
                     finals=finals_wanted(space, device), shape=shape,
                     finals_round=Round.on(device.measure_spec), proposed=proposed(space),
                     finals_size=FinalSize.declared(device.most_finalists,
                                                    device.most_final_rounds))
    return plan, counted is not None


def proposed(space: Space) -> set[tuple[tuple[str, str], ...]] | None:
    """The configs (as the sampler names them, items sorted) a built-in sampler that can
    tell them from the baseline and the axes (``proposes``: one-at-a-time) will measure;
    ``None`` for any other, which may propose every valid config.  Without it ``sweeper
    plan spaces/copy-oat.yaml`` counted 408 trials and 39 s on the interpreter for a run
    of 16 trials and 5 s.  A plugin's sampler is not imported: plan imports no user code."""
    from sweeper import plugins

    if not plugins.find(plugins.SAMPLER, space.sampler.name).builtin:
        return None
    proposes = plugins.sampler_capabilities(space.sampler.name).proposes
    if proposes is None:
        return None
    baseline = space.contract(dict(space.sampler.baseline)) or {}
    return {tuple(sorted(c.items())) for c in proposes(baseline, space.choices())}


def launch_model(space: Space, device: Any) -> Callable[[Config], float]:
    """The plan's model of one launch of a config of ``space`` on ``device`` (seconds), as
    :func:`plan_of` prices it."""
    counted, flops, ops = declared_counts(space.kernel, dict(space.kernel_options))
    return lambda config: model_launch_s(config, counted or (lambda _: 0), flops,
                                         device.plan_costs, ops)


def run_shape(space: Space, device: Any, *, report: bool, startup: bool,
              setup: bool = False, compile_workers: int | None = None) -> RunShape:
    """What a run of ``space`` on ``device`` adds around its trials: on a device that
    compiles for a GPU, for a kernel that compiles any (:func:`~sweeper.kernels._binaries.
    compiles_any`), each binary the machine has not compiled yet
    (:func:`~sweeper.kernels._binaries.space_binaries`) compiles, in
    ``compile_workers`` processes (default: as ``--compile-workers auto``) started with
    the sweep where :func:`pool_from_start` says so; the costs are those measured on this
    machine for the device."""
    from sweeper.kernels._binaries import compiles_any, space_binaries
    from sweeper.sweep._compile_pool import default_size

    compiles = bool(device.measures_gpu) and compiles_any(space)
    workers = default_size(1) if compile_workers is None else compile_workers
    key = costs_key(device)
    costs = run_costs(key, device.plan_costs).of_space(space.study)
    return RunShape(sampler=space.sampler.name, kernel=space.kernel,
                    cold=compiles and pool_from_start(space, device.facts(), key, costs),
                    compile_workers=workers if compiles else 0, report=report,
                    startup=startup, setup=setup, costs=costs,
                    binaries=space_binaries(space, key) if compiles else None,
                    gpu=gpu_scale(device))


def make_plan(space: Space, bytes_moved: Callable[[Problem], int], facts: DeviceFacts,
              costs: PlanCosts, measure: MeasureSpec, *,
              flops: Callable[[Problem], int] | None = None,
              ops: Callable[[Config], int | None] | None = None, finals: bool = False,
              shape: RunShape | None = None, finals_round: Round = GPU_ROUND,
              proposed: set[tuple[tuple[str, str], ...]] | None = None,
              finals_size: FinalSize = GPU_FINAL) -> Plan:
    """The plan, from one pass over the space that keeps no list of configs: memory grows
    with the space's distinct problems and binaries only, however large the space (up to
    the parser's limit) is.  ``costs``: what the
    device declares a trial costs (a replay's: the GPU's its table was recorded on).
    ``bytes_moved`` and ``flops``: the kernel's, per problem (a built-in's from its
    declaration); ``ops``: its tensor operations per launch on an interpreter;
    ``finals``: whether the run takes each problem's finals (each entrant's rounds as
    ``finals_round``, the most finalists and rounds as ``finals_size``: the device's);
    ``shape``: what the run adds around its trials (none: the trials and finals alone);
    ``proposed``: the only configs the sampler will measure (:func:`proposed`; ``None``:
    any valid one)."""
    from sweeper.kernels._binaries import binary_of

    shape = shape or RunShape()
    ruled_out = RuledOut()
    valid = 0
    budget = space.budget.trials
    seconds = 0.0
    problems: dict[tuple[Problem, str], tuple[int, float]] = {}   # configs, fastest launch
    binaries: set[Any] = set()
    cached = 0
    maps: dict[tuple[Problem, str], ProblemMaps] = {}     # the report's, per problem
    computing = False             # some launch is bound by its FLOPs: power-bound on a GPU
    loaded = 0                    # trials bound by their FLOPs (those a power-bound sweep loads)
    flop_bound = False            # some launch is bound by its FLOPs, however short
    fixed = measure.fixed_duty()
    own = shape.costs.trial_s.get(shape.kernel, costs.compile_s)
    interpreted = costs.op_s > 0      # launches priced by programs and operations, no GPU
    # the launch scale of a launch bound by its bytes, and by its FLOPs; a kernel not
    # measured here yet at the GPU's bounds against those the costs were read on
    fresh = not interpreted and shape.kernel not in shape.costs.launch_scale
    gpu = (shape.gpu.by_bytes, shape.gpu.by_flops) if fresh else (1.0, 1.0)
    base = tuple(shape.costs.scale_of(shape.kernel, interpreted, by_flops)
                 for by_flops in (False, True))
    scales = (base[0] * gpu[0], base[1] * gpu[1])
    todo = 0                      # the valid configs the study has not answered yet
    left = None if budget is None else max(0, budget - shape.spent)
    # the configs measured again come first, the others in the trials the budget leaves
    again = measured_again(space, shape.again, facts, proposed)
    first = len(again) if left is None else min(len(again), left)
    firsts = others = 0
    done_here: set[tuple[str, ...]] = set()
    for choice, outcome in resolved(space, facts.env(), facts.max_footprint):
        config_key = key_of(choice)
        if shape.done and config_key in shape.done:
            done_here.add(config_key)
        if isinstance(outcome, Invalid):
            ruled_out.add(outcome)
            continue
        valid += 1
        if proposed is not None and _sampler_key(space, choice) not in proposed:
            continue
        if shape.done and config_key in shape.done:
            continue
        todo += 1
        if config_key in again:
            firsts += 1
            priced = firsts <= first
        else:
            others += 1
            priced = left is None or others <= left - first
        if priced:
            launch, by_flops = _launch_seconds(outcome, bytes_moved, flops, costs, ops)
            launch *= scales[by_flops]
            # the power limiter steps in after 15-20 ms of load (the H200): a FLOP-bound
            # kernel whose samples last that long is power-bound
            computing = computing or (by_flops and _expected_samples(measure, launch) *
                                      measure.batch * launch >= POWER_AFTER_S)
            flop_bound = flop_bound or by_flops
            seconds += own + _trial_seconds(outcome, launch, facts, costs, measure)
            seconds += fixed.seconds if fixed is not None else 0.0
            loaded += by_flops
            key = (outcome.problem, outcome.cache)
            maps.setdefault(key, ProblemMaps()).add(     # the grid in y and z as params
                tuple(sorted({**outcome.meta, **grid_labels(choice, outcome)}.items())),
                choice.get("grid"), choice.get("block"))
            count, fastest = problems.get(key, (0, launch))
            problems[key] = (count + 1, min(fastest, launch))
            if shape.binaries is not None:
                binary = shape.binaries.key(outcome)
                if binary not in binaries:
                    binaries.add(binary)
                    cached += shape.binaries.cached(binary)
            elif shape.cold:
                binaries.add(binary_of(outcome))
    power = computing and measure.duty == "auto"
    if power:             # each FLOP-bound trial loads the GPU after a pause, if it had one
        seconds += loaded * shape.costs.load_s.get(
            shape.sampler, UNMEASURED_LOAD_S.get(shape.sampler, 0.0))
    powered = SUSTAINED.for_finals(measure.finals_duty)

    def finals_under(duty: Duty | None) -> float:
        return sum(finals_estimate_s(count, 1e3 * launch, duty, typical=True,
                                     rounds=costs.finals_rounds, round_=finals_round,
                                     overhead_s=shape.costs.finals_overhead_s,
                                     baseline_free=interpreted, size=finals_size,
                                     ties=costs.finals_tie)
                   for count, launch in {**shape.finals_owed, **problems}.values()) \
            if finals else 0.0

    if fixed is not None or power:
        finals_s = finals_under(fixed.for_finals() if fixed is not None else powered)
    elif flop_bound and measure.duty == "auto" and not interpreted:
        finals_s = ((1 - POWER_MAYBE) * finals_under(None) +
                    POWER_MAYBE * finals_under(powered))
    else:
        finals_s = finals_under(None)
    trials = todo if left is None else min(todo, left)
    heatmaps = sum(m.drawn().count for m in maps.values())
    cells = sum(m.drawn_cells() for m in maps.values())
    startup = shape.costs.startup_s if shape.startup else (
        shape.costs.setup_for() if shape.setup else 0.0)
    parts = {"start-up": startup, "trials": seconds,
             "compile": _compile_seconds(len(binaries) - cached, seconds, shape, power),
             "proposals": trials * shape.costs.ask_s.get(shape.sampler, 0.0),
             "finals": finals_s,
             "report": shape.costs.report_for(heatmaps, cells) if shape.report else 0.0}
    total = sum(parts.values())
    return Plan(size=space.size, valid=valid, removed=ruled_out.by_reason(), estimate_s=total,
                finals_s=parts["finals"],
                assumptions={**dataclasses.asdict(costs), "compile_s": own,
                             "flop_scale": base[1] / base[0] if flop_bound else 1.0},
                gpu_scale=(gpu[False], gpu[True] if flop_bound else 1.0,
                           shape.gpu.why(flop_bound) if fresh else ""),
                trials=trials, todo=todo, again=first, ruled_out=ruled_out, parts=parts,
                binaries=len(binaries) if shape.binaries is not None else 0, cached=cached,
                maps=heatmaps, done_here=frozenset(done_here))


def _sampler_key(space: Space, choice: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``choice`` as :func:`proposed` keys a config: as the sampler names it, sorted."""
    return tuple(sorted((space.contract(choice) or {}).items()))


def measured_again(space: Space, again: Sequence[Mapping[str, str]], facts: DeviceFacts,
                   proposed: set[tuple[tuple[str, str], ...]] | None = None
                   ) -> set[tuple[str, ...]]:
    """The keys of the choices ``again`` (trials to be measured again) that a run of
    ``space`` measures: each axis at one of the space's labels (a zipped group at one of
    its rows), valid on the device with ``facts``, and among those the sampler proposes
    (``proposed``; ``None``: any)."""
    labels = {a.name: set(a.labels) for a in space.axes}
    out: set[tuple[str, ...]] = set()
    for choice in again:
        if set(choice) != set(labels) or any(choice[a] not in labels[a] for a in labels) \
                or space.contract(choice) is None:
            continue
        try:
            space.resolve(choice, facts.env(), facts.max_footprint)
        except Invalid:
            continue
        if proposed is None or _sampler_key(space, choice) in proposed:
            out.add(key_of(choice))
    return out


def _compile_seconds(binaries: int, trials_s: float, shape: RunShape, power: bool) -> float:
    """The wall ``binaries`` compiles add, each distinct binary compiled once: by the
    compile processes while the GPU measures where the sampler knows what comes next
    (:func:`compiles_ahead`: a plan, or the kernel model ``auto`` follows; started with
    the sweep where ``shape.cold``: the first compile waited for, the rest hidden behind
    the trials as far as they last; else started once a trial
    compiled: the worker compiles for its first ``LAZY_POOL_S``, the pool the rest behind
    the trials left), else in the worker before its trial (which a power-bound sweep
    follows with its sustained load)."""
    if not binaries:
        return 0.0
    nvrtc = shape.binaries is not None and shape.binaries.kind == "nvrtc"
    each = shape.costs.compile_of(shape.kernel, nvrtc=nvrtc)
    # the first binary the worker compiles starts the compiler in its process
    first = max(each, shape.costs.first_compile_of(shape.kernel, nvrtc)) - each
    after = each + (SUSTAINED.seconds if power else 0.0)
    if shape.compile_workers <= 0 or not compiles_ahead(shape.sampler):
        return first + binaries * after
    pooled = shape.costs.compile_of(shape.kernel, pooled=True, nvrtc=nvrtc)
    if shape.cold:             # the first trial waits for the pool's compile or its own
        return max(pooled, first + each) + max(0.0, binaries * pooled /
                                               shape.compile_workers - trials_s)
    own = min(binaries, math.ceil(LAZY_POOL_S / max(each, 1e-3)))
    left = binaries - own
    return first + own * after + max(0.0, left * pooled / shape.compile_workers -
                                     trials_s * left / binaries)


def model_launch_s(config: Config, bytes_moved: Callable[[Problem], int],
                   flops: Callable[[Problem], int] | None, costs: PlanCosts,
                   ops: Callable[[Config], int | None] | None = None) -> float:
    """What the plan's model says one launch of ``config`` takes (seconds)."""
    return _launch_seconds(config, bytes_moved, flops, costs, ops)[0]


def _launch_seconds(config: Config, bytes_moved: Callable[[Problem], int],
                    flops: Callable[[Problem], int] | None, costs: PlanCosts,
                    ops: Callable[[Config], int | None] | None = None
                    ) -> tuple[float, bool]:
    """One launch: its bytes at the assumed bandwidth, its FLOPs at the assumed peak of
    its dtype (where one is assumed), at least the launch floor; and whether its FLOPs
    bound it.  On an interpreter (``costs.op_s``): the launch, its programs and its
    body's tensor operations (``ops``; none counted: ``OPS_PER_PROGRAM`` a program)."""
    if costs.op_s > 0:
        counted = ops(config) if ops is not None else None
        steps = counted if counted is not None else costs.OPS_PER_PROGRAM * config.grid
        return costs.launch_s + costs.program_s * config.grid + costs.op_s * steps, False
    problem = config.problem
    peak = costs.flops.get(problem.dtype)
    computing = flops(problem) / peak if flops is not None and peak else 0.0
    moving = bytes_moved(problem) / costs.bandwidth
    return max(moving, computing, costs.launch_s), computing > max(moving, costs.launch_s)


def _trial_seconds(config: Config, launch: float, facts: DeviceFacts, costs: PlanCosts,
                   measure: MeasureSpec) -> float:
    samples = _expected_samples(measure, launch)
    warmup = measure.warmup_turns(launch)
    launches = warmup + 2 + samples * measure.batch
    flushes = costs.flush and config.cache == "cold"
    flush = 2 * facts.l2_bytes / costs.bandwidth if flushes else 0.0
    return launches * launch + (warmup + samples) * flush
