"""The coordinator's side of compiling ahead: which configs go to the compile pool, and
what a config the pool found refused becomes.

A sampler that knows its next proposals (a plan walked in order: ``exhaustive``,
``one-at-a-time``; its ``upcoming(count)``) has them compiled ahead, a window of
``AHEAD_PER_PROCESS`` per compile process beyond those measured now, configs sharing a
binary counted once.  A sampler that can take its configs in another order (``exhaustive``,
its ``prefer``) is told which can be measured without waiting for a compile.  An adaptive
sampler decides each config from the outcomes before it, so nothing can be compiled
ahead without asking it early, which would change what it proposes.  One that follows the
kernel model (``uses_model``: ``auto``) has the configs the model rates fastest compiled
ahead instead (:class:`ModelHints`), any other adaptive sampler every config in a seeded
shuffled order (:class:`SpreadHints`): a guess that misses costs a compile process's time,
never a proposal, so the search's trials-to-best are untouched.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sweeper.kernels._binaries import binary_of
from sweeper.kernels._precompile import Compile, Target
from sweeper.space import Config, Space
from sweeper.store import TrialRecord, key_of
from sweeper.study import Choice, now
from sweeper.sweep._compile_pool import CompilePool, PoolSetup
from sweeper.trial import TrialResult, TrialStatus


class Upcoming(Protocol):
    """What the pool is fed from: the configs (sampler params) proposed next, in order,
    and a ``prefer`` hook the sweep sets (a planned sampler swaps a config whose binary
    is built to the front; others ignore it)."""

    prefer: Callable[[dict[str, Any]], bool] | None

    def upcoming(self, count: int) -> Iterable[dict[str, Any]]:
        """At least the next ``count`` configs, in the order they will be proposed."""


class ModelHints:
    """The configs a sampler that follows the kernel model is likely to propose next: all
    valid ones (``params``, as the sampler names them), the model's fastest ``guesses``
    first.  The pool skips those measured, measuring or handed over already."""

    prefer: Callable[[dict[str, Any]], bool] | None = None

    def __init__(self, params: Sequence[dict[str, Any]], guesses: Sequence[float]) -> None:
        self.order = [params[i] for i in sorted(range(len(params)), key=guesses.__getitem__)]

    def upcoming(self, count: int) -> Sequence[dict[str, Any]]:
        """Every valid config, fastest guess first (``count``: what a plan would give;
        here the pool's filter needs the ones beyond those it knows)."""
        return self.order


class SpreadHints:
    """For an adaptive sampler without a kernel model (``tpe``, ``random``, ``gp`` ...),
    whose next proposal depends on the outcome in flight: every valid config (``configs``,
    each named as the sampler names it by ``params`` when reached) in an order shuffled
    by ``seed``, so the pool builds the space's binaries, evenly over its axes, while
    trials run.  The
    sampler is never asked early, so what it proposes, and its trials to the best, are
    those of a sweep without a pool; a proposal whose binary is built loads it instead of
    compiling.  Each call goes on from the config the last one stopped at (those before
    it were handed over, measured or measuring), so a sweep of a million configs walks
    them once."""

    prefer: Callable[[dict[str, Any]], bool] | None = None

    def __init__(self, configs: Sequence[dict[str, Any]], seed: int,
                 params: Callable[[dict[str, Any]], dict[str, Any]] = dict) -> None:
        import numpy as np

        self.configs, self.params = configs, params
        self.order = np.random.default_rng(seed).permutation(len(configs))
        self.next = 0

    def upcoming(self, count: int) -> Iterator[dict[str, Any]]:
        """The valid configs from where the last call stopped (that one again: the pool
        may have stopped before taking it), in the shuffled order."""
        for at in range(max(0, self.next - 1), len(self.order)):
            self.next = at + 1
            yield self.params(self.configs[int(self.order[at])])

#: Configs waiting or compiling per compile process, beyond those being measured.
AHEAD_PER_PROCESS = 4
#: How many windows of upcoming configs are looked through for compiles to queue: most
#: configs of a launch-grid sweep share a binary already handed over.
LOOK_AHEAD = 4
#: Seconds of a trial's first launch (compile + first run) past which it compiled: on the
#: H200 a launch loaded from a warm cache took 1 ms (median of the 204 trials of
#: studies/h200-copy-fp32); a compile takes tenths of a second.
COMPILED_S = 0.05


@dataclass(frozen=True)
class CompileOptions:
    """How a sweep compiles ahead: ``workers`` processes compiling for ``target`` (0 or
    no target: none), with ``lazy`` started once a trial compiled, else with the sweep;
    ``pool``: one already started and fed (``sweeper run`` starts it with its workers
    where every config will compile), adopted in place of starting one."""

    workers: int = 0
    target: Target | None = None
    lazy: bool = False
    pool: CompilePool | None = None
    #: whether this machine has compiled a config's binary before (``binaries.json``):
    #: a lazy pool does not start for a slow first launch of one (a new launcher, a slow
    #: disk), only for a compile.  ``None``: every slow first launch counts.
    built: Callable[[Config], bool] | None = None


class CompileAhead:
    """Feeds ``pool`` the configs ``sampler`` will propose next and turns what it
    found into records; ``resolve`` gives a choice's config (``None``: ruled out).

    With ``start_pool`` the pool is started only once a trial of this run compiled
    (its first launch took ``COMPILED_S`` or more, the run's first trial aside: it
    also pays the worker's own first launch): on a warm cache there is nothing to
    compile, and eight processes importing torch beside the worker slowed its trials
    by a fifth on the H200 machine."""

    def __init__(self, space: Space, sampler: Upcoming, pool: CompilePool | None,
                 resolve: Callable[[Choice], Config | None], window: int,
                 start_pool: Callable[[], CompilePool] | None = None,
                 built: Callable[[Config], bool] | None = None) -> None:
        self.space, self.sampler, self.pool, self.resolve = space, sampler, pool, resolve
        self.start_pool, self.built = start_pool, built
        #: how many configs the pool may hold, waiting or compiling
        self.window = window
        #: how each config measured so far was compiled: ``compiled``/``failed``/``left``
        #: by the pool, or ``worker`` (the pool had not reached it)
        self.counts: dict[str, int] = {}
        self._kept = 0
        #: the seconds the coordinator waited for compiles in progress before handing
        #: configs to workers
        self.waited_s = 0.0
        #: the seconds each compile the pool finished took
        self.compiled_s: list[float] = []
        #: the kernel source hash the sweep records trials under: a refusal of a compile
        #: process that loaded another (:attr:`Precompiled.source`) is the worker's to
        #: find, not a trial (None: any is kept)
        self.source: str | None = None
        sampler.prefer = self.ready       # configs whose binary is built go first

    @classmethod
    def start(cls, space: Space, sampler: Upcoming | None, options: CompileOptions,
              workers: int, resolve: Callable[[Choice], Config | None]
              ) -> CompileAhead | None:
        """The pool ``options`` give (adopted, or ``options.workers`` processes compiling
        for ``options.target``, lazily or now), fed with the sampler's next proposals;
        ``None`` where there is no pool, target or size, or the sampler cannot say what
        it proposes next (a pool started already is then ended)."""
        if sampler is None:
            if options.pool is not None:
                options.pool.close()
            return None
        size = options.pool.size if options.pool is not None else options.workers
        window = size * AHEAD_PER_PROCESS + workers
        if options.pool is not None:
            ahead = cls(space, sampler, options.pool, resolve, window)
        elif options.target is None or size <= 0:
            return None
        else:
            import sys

            start_pool = functools.partial(
                CompilePool, PoolSetup(space, options.target, list(sys.path)), size)
            if options.lazy:
                return cls(space, sampler, None, resolve, window, start_pool, options.built)
            ahead = cls(space, sampler, start_pool(), resolve, window)
        ahead.look_ahead((), ())
        return ahead

    def ready(self, params: dict[str, Any]) -> bool:
        """Whether the config ``params`` name can be measured without waiting for a
        compile: no pool is compiling (none started), or its binary is built."""
        pool = self.pool
        if pool is None or not pool.pending():
            return True
        config = self.resolve(self.space.expand(params))
        return config is None or binary_of(config) in pool.built

    def kept(self, record: TrialRecord) -> None:
        """A trial of this run was kept: its binary is built (where it ran); a lazy pool
        starts if it compiled (its first launch took ``COMPILED_S`` or more, and this
        machine had not compiled its binary before), the run's first trial aside."""
        if self.pool is not None and record.ok and record.config is not None:
            self.pool.built.add(binary_of(record.config))
        self._kept += 1
        if self.pool is None and self.start_pool is not None and self._kept > 1 and \
                (record.cold_s or 0.0) >= COMPILED_S and not (
                    self.built is not None and record.config is not None and
                    self.built(record.config)):
            self.pool, self.start_pool = self.start_pool(), None

    def look_ahead(self, done: Container[tuple[str, ...]],
                   in_flight: Container[tuple[str, ...]]) -> None:
        """Hand the pool the sampler's next proposals it lacks, in order, until the
        window holds as many compiles (neither measured, nor measuring, nor ruled out;
        those sharing a binary handed over count once), looking at most
        ``LOOK_AHEAD`` windows ahead; nothing while a lazy pool has not started."""
        pool = self.pool
        if pool is None:
            return
        room = self.window - pool.pending()
        if room <= 0:
            return

        def upcoming() -> Iterator[tuple[tuple[str, ...], Config]]:
            for params in self.sampler.upcoming(LOOK_AHEAD * self.window):
                choice = self.space.expand(params)
                key = key_of(choice)
                if key in done or key in in_flight or pool.known(key):
                    continue
                config = self.resolve(choice)
                if config is not None:
                    yield key, config
        pool.ahead(upcoming(), limit=room)

    def refused(self, number: int, choice: Choice) -> TrialRecord | None:
        """Trial ``number`` of ``choice`` as a ``compile_error``, if the pool found the
        compiler refusing it (the reason as the worker would record it); else ``None``:
        the worker measures it (loading what the pool compiled, or compiling it).  A
        compile in progress is waited for only as long as the worker would take to
        compile it itself (:meth:`CompilePool.worth_waiting_s`); what a compile process
        did of another source of the kernel (:attr:`source`) is left to the worker."""
        started, t0 = now(), time.perf_counter()
        pool = self.pool
        result = pool.take(key_of(choice), pool.worth_waiting_s()) if pool is not None \
            else None
        if result is not None and self.source is not None and result.source != self.source:
            result = dataclasses.replace(result, status=Compile.LEFT)
        how = result.status.value if result is not None else "worker"
        self.counts[how] = self.counts.get(how, 0) + 1
        if result is not None and result.status is Compile.COMPILED:
            self.compiled_s.append(result.seconds)
        self.waited_s += time.perf_counter() - t0
        if result is None or result.status is not Compile.FAILED:
            return None
        return TrialRecord.from_result(
            number, choice, self.resolve(choice),
            TrialResult(TrialStatus.COMPILE_ERROR, result.reason), started,
            result.seconds + time.perf_counter() - t0)

    def lines(self, t0: float) -> list[str]:
        """What the pool did, for the sweep's timing breakdown (``t0``: its start)."""
        if self.pool is None:
            return ["compile pool: not started (no trial compiled)"]
        done = ", ".join(f"{how} {n}" for how, n in sorted(self.counts.items()))
        return [f"compile pool: {self.pool.size} processes, started at "
                f"{self.pool.created_at - t0:.2f} s; configs by how their compile went: "
                f"{done or 'none yet'} (worker: the worker compiled or loaded it); waited "
                f"{self.waited_s:.2f} s for compiles in progress"]

    def close(self) -> None:
        """End the pool's processes."""
        if self.pool is not None:
            self.pool.close()

