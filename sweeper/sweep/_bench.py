"""Measuring a config on this device, for the loop, the drift check and the finals.

A trial resolves the proposed choice into a :class:`Config`.  A device that replays
answers it from its table (``_replay``); any other runs :func:`sweeper.trial.run_trial`
on buffers kept per problem (``_buffers``), after the problem's torch baseline
(``_baselines``).  A result beyond a limit is re-verified and re-timed (``_limits``);
a trial that shows the study power-bound is measured again under the duty schedule
(``_power``).  The fastest result per problem so far is kept: early abandonment cuts
short a config clearly slower than it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from sweeper.devices import Device, DeviceFacts
from sweeper.errors import RefusalFailed, raised
from sweeper.finals import FinalSize, Round
from sweeper.kernels import Buffers, CountError, Kernel, checked_count
from sweeper.kernels._base import ALLOCATING
from sweeper.measure import Spent, StopRule
from sweeper.space import Config, Invalid, MeasureSpec, Problem, Space
from sweeper.store import BaselineRecord, TrialRecord
from sweeper.study import Choice, now
from sweeper.sweep._baselines import Baselines
from sweeper.sweep._buffers import BufferPool
from sweeper.sweep._limits import Limits
from sweeper.sweep._power import PowerCheck
from sweeper.sweep._relay import Journal
from sweeper.sweep._replay import replayed
from sweeper.sweep._timing import Stamps
from sweeper.trial import TrialResult, TrialStatus, classify, debug_failure, run_trial


class Bench:
    """What one sweep measures with: ``measure`` is the device's measurement spec,
    ``baselines`` those the journal holds."""

    def __init__(self, space: Space, kernel: Kernel, device: Device, store: Journal, *,
                 measure: MeasureSpec, facts: DeviceFacts, limits: Limits,
                 baselines: list[BaselineRecord]) -> None:
        self.space, self.kernel, self.device, self.measure = space, kernel, device, measure
        self.facts, self.limits = facts, limits
        #: the L2 size that decides 'L2-resident' (0 where there is no GPU L2 to speak of)
        self.l2_bytes = facts.l2_bytes if device.torch_device == "cuda" else 0
        self.power = PowerCheck(measure, device, store)
        self.buffers = BufferPool(kernel, device, self.l2_bytes)
        self.baselines = Baselines(kernel, device, measure, space.sampler.seed, store,
                                   baselines)
        #: the fastest (median, CI high) per (problem, cache) so far: early abandonment cuts
        #: short a config clearly slower (a worker is handed the coordinator's with each job)
        self.best: dict[tuple[Problem, str], tuple[float, float]] = {}
        #: per problem: why the kernel could not count its work (its ``bytes_moved`` or
        #: ``flops`` raised), or ``None`` where it could
        self.uncounted: dict[Problem, str | None] = {}
        #: seconds spent on per-problem work every worker repeats (allocating buffers,
        #: measuring the torch baseline) since the last :meth:`stamps`
        self.repeated = Spent()
        #: what each entrant of a final takes a round, within the device's caps
        self.round = Round.on(device.measure_spec)
        #: the most finalists and rounds a final takes on this device
        self.final_size = FinalSize.declared(device.most_finalists, device.most_final_rounds)

    def trial(self, number: int, choice: Choice) -> TrialRecord:
        """Trial ``number`` of ``choice``: measured (measured again if it showed the
        study power-bound), or why it could not be; never raises for the config's
        fault."""
        record = self._record(number, choice)
        if self.power.switches(number, record):
            return self._record(number, choice)
        return record

    def note_best(self, t: TrialRecord) -> None:
        """Remember the fastest (median, CI high) per problem, for early abandonment."""
        if t.ok and t.config and t.stats:
            self._faster((t.config.problem, t.config.cache),
                         (t.stats.median, t.stats.bounds()[1]))

    def merge_best(self, best: dict[tuple[Problem, str], tuple[float, float]]) -> None:
        """Take the coordinator's fastest per problem where it beats this bench's own (a
        worker process notes its own trials too: a job asked for ahead carries the best
        as it was before the worker's last outcome was kept)."""
        for key, value in best.items():
            self._faster(key, value)

    def _faster(self, key: tuple[Problem, str], value: tuple[float, float]) -> None:
        """Keep ``value`` as ``key``'s best where its median is lower than the one kept."""
        have = self.best.get(key)
        if have is None or value[0] < have[0]:
            self.best[key] = value

    def run(self, config: Config, number: int) -> TrialResult:
        """``config`` launched, verified and timed (:func:`run_trial`), inputs seeded by
        the sampler's seed and the trial's number; a config the kernel cannot launch on
        this device (:meth:`~sweeper.kernels.Kernel.cannot_launch`: an int32 index that
        would wrap, a variant the GPU lacks) is invalid, with its reason; one whose
        refusal failed (a ``refuse=`` or ``prune_configs_by`` with a bug; a kernel's own
        ``refusal`` or ``int32_reach`` that raised) failed too, saying how, and so does one
        whose inputs could not be allocated (out of memory, or the kernel's ``allocate``
        raised), each under ``--debug`` with its traceback, as a trial that ran
        (:func:`~sweeper.trial.debug_failure`); a problem the kernel's ``allocate``
        refuses (a ``ValueError``) is invalid, with its reason."""
        # imported here: a run that measures nothing (a finished study's) needs no torch
        import torch

        try:
            refusal = self.kernel.cannot_launch(config, self.device.torch_device)
        except Exception as err:  # noqa: BLE001 - the kernel's own code failed: record it
            status, reason = classify(err)
            debug_failure(config, status, err, number)
            asked = "" if isinstance(err, RefusalFailed) else \
                "asking whether the kernel can launch it: "     # (a refusal names its rule)
            return TrialResult(status, f"{asked}{reason}")
        if refusal is not None:
            return TrialResult(TrialStatus.INVALID, refusal)
        try:
            sets = self.buffer_sets(config)
        except torch.cuda.OutOfMemoryError as err:
            debug_failure(config, TrialStatus.OUT_OF_RESOURCES, err, number)
            return TrialResult(TrialStatus.OUT_OF_RESOURCES, f"allocating the inputs: {err}")
        except ValueError as err:      # the kernel refuses this problem (a matmul's non-square)
            return TrialResult(TrialStatus.INVALID, f"{ALLOCATING}{err}")
        except Exception as err:  # noqa: BLE001 - the kernel's own code failed: record it
            debug_failure(config, TrialStatus.CRASHED, err, number)
            return TrialResult(TrialStatus.CRASHED,
                               f"allocating the inputs: {type(err).__name__}: {err}")
        generator = torch.Generator(device=self.device.torch_device)
        generator.manual_seed(self.space.sampler.seed * 1_000_003 + number)
        return run_trial(self.kernel, sets, config, self.device, self.measure, generator,
                         l2_bytes=self.l2_bytes, best=self.best.get(
                             (config.problem, config.cache)), duty=self.power.duty,
                         number=number)

    def config_of(self, t: TrialRecord) -> Config:
        """Trial ``t``'s config, resolved on this device again."""
        return self.space.resolve(t.choice, self.facts.env(), self.facts.max_footprint)

    def bytes_of(self, t: TrialRecord) -> int:
        """The bytes one launch of trial ``t``'s config moves (for the finals' GB/s)."""
        return self.kernel.bytes_moved(self.config_of(t).problem)

    def again(self, t: TrialRecord, rule: StopRule) -> list[float]:
        """Samples of trial ``t``'s config, taken again under ``rule`` (unverified: it
        was verified as a trial)."""
        config = self.config_of(t)
        rotation = itertools.cycle(self.buffer_sets(config))
        return self.device.measure(lambda: self.kernel.launch(next(rotation), config),
                                   warmup=self.round.warmup, rule=rule,
                                   flush=config.cache == "cold", batch=self.measure.batch,
                                   graph=self.measure.graph, duty=self.power.duty
                                   ).timing.samples

    def baseline_again(self, t: TrialRecord
                       ) -> tuple[str, Callable[[StopRule], list[float]]] | None:
        """The torch baseline of ``t``'s problem as one more entrant of the finals' rounds,
        so "% of torch" compares two measurements taken under the same conditions; none
        where the kernel has none or it raised (:meth:`Baselines.ensure`)."""
        if self.kernel.baseline_name is None:
            return None
        config = self.config_of(t)
        buffers = self.buffer_sets(config)[0]
        if self.baselines.raised(buffers, config.cache):
            return None

        def measure(rule: StopRule) -> list[float]:
            return self.device.measure(lambda: self.kernel.baseline(buffers),
                                       warmup=self.round.warmup, rule=rule,
                                       flush=config.cache == "cold",
                                       duty=self.power.duty).timing.samples
        return self.kernel.baseline_name, measure

    def buffer_sets(self, config: Config) -> list[Buffers]:
        """``config``'s buffer sets, its problem's baseline measured first."""
        with self.repeated.on("buffers"):
            sets = self.buffers.sets(config)
        with self.repeated.on("baseline"):
            self.baselines.ensure(sets[0], config.cache, self.power.duty)
        return sets

    def count_fails(self, problem: Problem) -> str | None:
        """Why the kernel cannot count ``problem``'s work (its ``bytes_moved`` or ``flops``,
        a user's code, raised or returned no number), or ``None``: every rate, the
        baseline's and the finals' too, needs both, so each config of such a problem fails
        with that reason."""
        if problem not in self.uncounted:
            self.uncounted[problem] = None
            for what in ("bytes_moved", "flops"):
                count = getattr(self.kernel, what)
                try:
                    checked_count(what, count(problem), count)
                except CountError as err:
                    self.uncounted[problem] = str(err)
                    break
                except Exception as err:  # noqa: BLE001 - the kernel's own code: record it
                    self.uncounted[problem] = raised(f"the kernel's {what}", err)
                    break
        return self.uncounted[problem]

    def stamps(self, got: float) -> Stamps:
        """A job got at ``got`` ends now: its stamps, with the per-problem work it did."""
        repeated, self.repeated = self.repeated, Spent()
        return Stamps(got, time.perf_counter(), repeated)

    def _record(self, number: int, choice: Choice) -> TrialRecord:
        """``choice`` resolved, then replayed or run, then checked against the limits."""
        started, t0 = now(), time.perf_counter()
        config: Config | None = None
        try:
            config = self.space.resolve(choice, self.facts.env(), self.facts.max_footprint)
        except Invalid as err:
            result = TrialResult(TrialStatus.INVALID, str(err))
        else:
            uncounted = self.count_fails(config.problem)
            if uncounted is not None:
                result = TrialResult(TrialStatus.CRASHED, uncounted)
            elif self.device.replays:
                result = replayed(self.device, self.kernel, choice, config)
            else:
                result = self.run(config, number)
            if result.status is TrialStatus.OK:
                checked = config
                result = self.limits.check(config, result,
                                           lambda: self.run(checked, number))
        return TrialRecord.from_result(number, choice, config, result, started,
                                       time.perf_counter() - t0)
