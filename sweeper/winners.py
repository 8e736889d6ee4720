"""The config each problem ends with: its current interleaved final's winner (with finals
on several GPUs, the config they agree on), else the sweep's best.

The finals (:mod:`sweeper.finals`) choose a winner per GPU and :mod:`sweeper.consensus`
reads several GPUs' finals together; this module reads a study's journal for both, so
every output that names a problem's choice (exports, reports, the run's summary) names
the same one, and says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sweeper.consensus import Agreement, agreement
from sweeper.finals import FinalRecord, finalists_by_problem, problem_of
from sweeper.store import ProblemKey, Storage, TrialRecord

#: What a problem without a current final says wherever its choice is shown.
UNFINISHED = ("its interleaved final has not run over its fastest configs yet (a run stopped "
              "first, is still going, or was narrowed by -p); `sweeper run` of the whole "
              "space runs it")


@dataclass(frozen=True)
class Pick:
    """The config a problem ends with: the interleaved finals' winner, else the sweep's best."""

    trial: TrialRecord
    median_ms: float                          # from the samples it was chosen on
    final: FinalRecord | None = None          # the final that chose it, if one did
    #: with finals on several GPUs: how they agree (``final`` is then the first GPU's and
    #: ``median_ms`` the config's median there)
    agreement: Agreement | None = None

    @property
    def chosen_by(self) -> str:
        """What chose the config, as exports and reports say: ``interleaved final``
        (``..., cut short by the time budget`` where it was), ``sweep median``, or with
        finals on several GPUs ``agreement of N GPUs`` or ``best common config of N
        GPUs``."""
        if self.agreement is not None:
            n = len(self.agreement.gpus)
            return (f"agreement of {n} GPUs" if self.agreement.agreed
                    else f"best common config of {n} GPUs")
        if self.final is None:
            return "sweep median"
        return "interleaved final" + (", cut short by the time budget"
                                      if self.final.cut_short else "")

    @property
    def median_from(self) -> str:
        """Where ``median_ms`` was measured, as every output that gives it says."""
        if self.final is None:
            return "sweep"
        rounds = f"{self.final.rounds} rounds x {self.final.samples_per_round} samples"
        if self.agreement is not None and self.final.gpu is not None:
            return (f"interleaved finals on {len(self.agreement.gpus)} GPUs: {rounds} each; "
                    f"this median on {self.final.gpu}")
        return f"interleaved final: {rounds}"


@dataclass
class Winners:
    """Latest final record per problem, looked up by trial numbers.

    The finals are a stage of their own, finished problem by problem: a final record is
    its problem's completion record, current while no measured trial of that problem came
    after it (:attr:`FinalRecord.after_trial`).  A run that stopped before or during the
    finals leaves some problems without a current final; :meth:`missing` names them, the
    next ``sweeper run`` measures just those, and until then they end with the sweep's
    best, said so wherever the choice is shown."""

    finals: dict[ProblemKey, FinalRecord] = field(default_factory=dict)
    #: per problem, the latest final's set: one record, or one per GPU where the finals
    #: ran on each of several (``finals`` then holds the first GPU's)
    per_gpu: dict[ProblemKey, list[FinalRecord]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, finals: Sequence[FinalRecord]) -> Winners:
        """The latest of ``finals`` for each problem (later records replace earlier
        ones).  Consecutive records of one problem taken on different GPUs after the same
        trial are one set: a multi-GPU final."""
        out = cls()
        for f in finals:
            group = out.per_gpu.get(f.problem, [])
            joins = f.gpu is not None and bool(group) and all(
                g.gpu is not None and g.gpu.index != f.gpu.index and
                g.after_trial == f.after_trial for g in group)
            group = [*group, f] if joins else [f]
            out.per_gpu[f.problem] = group
            out.finals[f.problem] = min(group, key=lambda g: g.gpu.index if g.gpu else -1)
        return out

    @classmethod
    def of(cls, store: Storage) -> Winners:
        """The latest final of each problem in ``store``'s journal."""
        return cls.from_records(store.read(FinalRecord))

    def current(self, trials: Sequence[TrialRecord]) -> dict[ProblemKey, FinalRecord]:
        """The finals no later measured trial of their problem has made out of date, and
        that were drawn from the problem's fastest configs: a final among fewer (a run
        narrowed by ``-p`` after the whole space was measured) decides only that run, not
        the problem, whose best config it never met."""
        newest: dict[ProblemKey, int] = {}
        fastest: dict[ProblemKey, float] = {}
        medians: dict[int, float] = {}
        for t in trials:
            if t.ok:
                key = problem_of(t)
                newest[key] = max(newest.get(key, -1), t.number)
                if t.stats is not None and t.samples_ms and not t.suspicious:
                    medians[t.number] = t.stats.median
                    fastest[key] = min(fastest.get(key, math.inf), t.stats.median)

        def met_the_best(f: FinalRecord) -> bool:
            best = fastest.get(f.problem)
            return best is None or any(medians.get(r.number, math.inf) <= best
                                       for r in f.finalists)

        return {key: f for key, f in self.finals.items()
                if (f.after_trial < 0 or f.after_trial >= newest.get(key, -1))
                and met_the_best(f)}

    def missing(self, trials: Sequence[TrialRecord]) -> list[ProblemKey]:
        """Problems that have finalists but no current final, or one the time budget
        cut short (:attr:`~sweeper.finals.FinalRecord.cut_short`), in (dtype, footprint,
        cache) order: what the finals stage still has to do."""
        current = self.current(trials)
        return sorted(k for k in finalists_by_problem(trials)
                      if k not in current or current[k].cut_short)

    def picks(self, trials: Sequence[TrialRecord]) -> dict[ProblemKey, Pick]:
        """Per problem, the one choice that ``sweeper export`` writes and reports mark: the
        current final's winner, else the sweep's best score (never a suspicious one)."""
        out: dict[ProblemKey, Pick] = {}
        for t in trials:
            if t.ok and t.config and t.stats and not t.suspicious:
                key = problem_of(t)
                if key not in out or t.score > out[key].trial.score:
                    out[key] = Pick(t, t.stats.median)
        by_number = {t.number: t for t in trials}
        agreements = self.agreements(trials)
        for key, final in self.current(trials).items():
            agree = agreements.get(key)
            number = final.winner if agree is None else agree.chosen
            if number in by_number:
                row = next(r for r in final.finalists if r.number == number)
                out[key] = Pick(by_number[number], row.stats.median, final, agree)
        return out

    def agreements(self, trials: Sequence[TrialRecord]) -> dict[ProblemKey, Agreement]:
        """For each problem whose current final ran on several GPUs, how they agree
        (:mod:`sweeper.consensus`)."""
        return {key: agreement(self.per_gpu[key]) for key in self.current(trials)
                if len(self.per_gpu.get(key, [])) > 1}
