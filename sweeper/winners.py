"""The config each problem ends with: its current interleaved final's winner (with finals
on several GPUs, the config they agree on), else the sweep's best.

The finals (:mod:`sweeper.finals`) choose a winner per GPU and :mod:`sweeper.consensus`
reads several GPUs' finals together; this module reads a study's journal for both, so
every output that names a problem's choice (exports, reports, the run's summary) names
the same one, and says why.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from sweeper.consensus import Agreement, agreement
from sweeper.finals import FinalRecord, finalists_by_problem, problem_of
from sweeper.store import ProblemKey, Storage, StudyMeta, TrialRecord
from sweeper.trial import TrialStatus
from sweeper.tuning import SOURCE_HASH

#: What a problem without a current final says wherever its choice is shown.
UNFINISHED = ("its interleaved final has not run over its fastest configs yet (a run stopped "
              "first, is still going, or was narrowed by -p); `sweeper run` of the whole "
              "space runs it")


#: A resume with ``--force`` that changed the kernel's source, as study.json's ``forced``
#: entries say it (``kernel_source: 'OLD' -> 'NEW'``): the source before it.
_SOURCE_CHANGE = re.compile(f"kernel_source: '({SOURCE_HASH})' -> ")


def source_changes(meta: StudyMeta) -> list[str]:
    """The changes of the kernel's source that resumes with ``--force`` recorded in
    ``meta``'s ``forced`` entries (``kernel_source: 'OLD' -> 'NEW'``), first to last."""
    return [str(c) for entry in meta.forced if isinstance(entry.get("changed"), list)
            for c in entry["changed"] if str(c).startswith("kernel_source:")]


def unnamed_clause(earlier: int, unknown: int) -> str:
    """What follows "on an earlier source" of ``earlier`` trials where ``unknown`` of them
    name no source and may have run on the source now (:meth:`Sources.unknown`: A, B,
    then A again); ``""`` where none does.  The one wording of the report and ``compare``."""
    if not unknown:
        return ""
    those = "those" if unknown == earlier else f"the {unknown} of them"
    return f" or, {those} that name no source, on this one before trials named their source"


class EarlierShown(NamedTuple):
    """The earlier source of the kernel whose trials a report shows while none was
    measured on the source now (:meth:`Sources.shown_earlier`)."""

    #: its hash; None where its trials name none and which source ran them is unknown
    source: str | None
    #: how many of its trials were measured (those the constraints ruled out aside)
    trials: int


@dataclass(frozen=True)
class Sources:
    """Which of a study's trials were measured on the kernel source it has now (its
    ``kernel_source_hash``: a resume with ``--force`` after an edit makes it the new
    source's).  A trial names its own (``source_hash``); one that names none (an older
    sweeper's) was measured on its source now where the source never changed, else on
    the source the study recorded before the first such resume (``unnamed``) or, where
    an older sweeper forced the study past an edit before trials named their source, on
    a later one.  So where the source came back to the first one (A, then B, then A
    again) which of them is unknown: ``unnamed`` is None, such a trial is on an earlier
    source and its config is measured again, as a shared sweep's claim on the source now
    asks for a trial that names it (:func:`sweeper.store._base.claim_key`).  A trial that
    names a hash an earlier sweeper gave a source this one hashes otherwise (``respelled``)
    was measured on that source.  The default counts every trial as measured now: a study
    whose source never changed reads as it always has."""

    now: str | None = None
    #: the source the study recorded before its first forced change of it (None: unknown)
    first: str | None = None
    #: whether a resume with ``--force`` changed the kernel's source (then a config is
    #: done only once measured on the source now: a resume measures the others again)
    changed: bool = False
    #: the study's ``respelled`` hashes: each an earlier sweeper's of a source, with this
    #: one's of it (:func:`sweeper.study.source_respelled`)
    respelled: Mapping[str, str] = field(default_factory=dict)

    @property
    def unnamed(self) -> str | None:
        """The source a trial that names none counts as measured on: the first, unless
        the source came back to it (then which is unknown: None)."""
        return None if self.changed and self.first == self.now else self.first

    @classmethod
    def of(cls, meta: StudyMeta) -> Sources:
        """The sources of the study ``meta`` describes; a source hash that does not read
        as one counts every trial."""
        now = meta.kernel_source_hash
        if not isinstance(now, str) or not re.fullmatch(SOURCE_HASH, now):
            return cls()
        changes = source_changes(meta)
        if not changes:
            return cls(now, now, respelled=meta.respelled)
        before = _SOURCE_CHANGE.match(changes[0])      # else: an earlier one, unknown
        return cls(now, before.group(1) if before else None, changed=True,
                   respelled=meta.respelled)

    def edited(self, source: str) -> Sources:
        """The sources as a resume forced past an edit of the kernel to ``source`` leaves
        them (what :meth:`of` reads of the ``study.json`` that resume records), for a
        ``plan`` that sees the edit before the run."""
        if self.now in (None, source):
            return self
        return dataclasses.replace(self, now=source, changed=True)

    def current(self, trial: TrialRecord) -> bool:
        """Whether ``trial`` was measured on the study's source now."""
        return self.now is None or self.source_of(trial) == self.now

    def measured_now(self, trials: Iterable[TrialRecord]) -> list[TrialRecord]:
        """``trials`` measured on the study's source now: all where every one was, so what
        the winners, the finals and the exports choose from."""
        return [t for t in trials if self.current(t)]

    def done(self, trials: Iterable[TrialRecord]) -> list[TrialRecord]:
        """``trials`` that leave their config done for a resumed sweep: those measured on
        the study's source now, and those the constraints ruled out (no source changes
        that).  A config measured only on an earlier source is measured again, and so is
        one whose trial is to be (``retry``: its worker was killed from outside)."""
        return [t for t in self.on_source_now(trials) if not t.retry]

    def again(self, trials: Iterable[TrialRecord]) -> list[TrialRecord]:
        """``trials`` on the study's source now to be measured again (``retry``: their
        worker was killed from outside), whose configs a resumed sweep measures first:
        those :meth:`done` leaves out but an earlier source's."""
        return [t for t in self.on_source_now(trials) if t.retry]

    def on_source_now(self, trials: Iterable[TrialRecord]) -> list[TrialRecord]:
        """``trials`` measured on the study's source now, and those the constraints
        ruled out: :meth:`done`'s and those to be measured again (``retry``)."""
        return [t for t in trials if t.status is TrialStatus.INVALID or self.current(t)]

    def source_of(self, trial: TrialRecord) -> str | None:
        """The source ``trial`` was measured on: the one it names (as this sweeper hashes
        it: :attr:`respelled`), else :attr:`unnamed` (None: unknown)."""
        source = trial.source_hash or self.unnamed
        return self.respelled.get(source, source) if source is not None else None

    def shown_earlier(self, trials: Sequence[TrialRecord]) -> EarlierShown | None:
        """Where no trial among ``trials`` was measured on the source now yet but some
        were on earlier ones, the one source whose trials the report shows: the latest
        that measured any (that of the highest-numbered), so no table or map mixes two
        sources' timings (trials that name no source where which one ran them is unknown
        are one group, None); else None."""
        measured = [t for t in trials if t.status is not TrialStatus.INVALID]
        if not measured or any(self.current(t) for t in measured):
            return None
        source = self.source_of(max(measured, key=lambda t: t.number))
        return EarlierShown(source, sum(1 for t in measured if self.source_of(t) == source))

    def shown(self, trials: Sequence[TrialRecord]) -> list[TrialRecord]:
        """``trials`` as the report shows them (its tables, heatmaps and failures, and
        the failed line ``sweeper report`` prints): those measured on the source now,
        once one was, a trial to be measured again included (:meth:`done` leaves it
        out); until then those of the latest earlier source that measured any
        (:meth:`shown_earlier`); beside them, those the constraints ruled out."""
        earlier = self.shown_earlier(trials)
        if earlier is None:
            return self.on_source_now(trials)
        return [t for t in trials if t.status is TrialStatus.INVALID
                or self.source_of(t) == earlier.source]

    def earlier(self, trials: Iterable[TrialRecord]) -> int:
        """How many of ``trials`` ran on an earlier source of the kernel (those the
        constraints ruled out aside)."""
        return sum(1 for t in trials if t.status is not TrialStatus.INVALID
                   and not self.current(t))

    def unknown(self, trials: Iterable[TrialRecord]) -> int:
        """How many of those :meth:`earlier` counts name no source where which one ran
        them is unknown (:attr:`unnamed` None: the source came back to the first): on an
        earlier source, or on this one before trials named their source."""
        return sum(1 for t in trials if t.status is not TrialStatus.INVALID
                   and not self.current(t) and self.source_of(t) is None)


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
    #: which trials count: those measured on the study's kernel source now
    #: (:meth:`current`, :meth:`missing` and :meth:`picks` read no other)
    sources: Sources = field(default_factory=Sources)

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
        """The latest final of each problem in ``store``'s journal, choosing among the
        trials measured on the study's kernel source now (:class:`Sources`)."""
        out = cls.from_records(store.read(FinalRecord))
        out.sources = Sources.of(store.study_meta())
        return out

    def shown(self, trials: Sequence[TrialRecord]) -> list[FinalRecord]:
        """The latest final of each problem, in problem order, whose finalists were all
        measured on the study's kernel source now (among ``trials``): a final drawn from
        an earlier source's trials chooses nothing now, and its finalists are not among
        the trials a report shows (:class:`Sources`)."""
        now = {t.number for t in self.sources.measured_now(trials)}
        return [f for key, f in sorted(self.finals.items())
                if all(r.number in now for r in f.finalists)]

    def current(self, trials: Sequence[TrialRecord]) -> dict[ProblemKey, FinalRecord]:
        """The finals no later measured trial of their problem has made out of date, and
        that were drawn from the problem's fastest configs: a final among fewer (a run
        narrowed by ``-p`` after the whole space was measured) decides only that run, not
        the problem, whose best config it never met."""
        trials = self.sources.measured_now(trials)
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
        trials = self.sources.measured_now(trials)
        current = self.current(trials)
        return sorted(k for k in finalists_by_problem(trials)
                      if k not in current or current[k].cut_short)

    def picks(self, trials: Sequence[TrialRecord]) -> dict[ProblemKey, Pick]:
        """Per problem, the one choice that ``sweeper export`` writes and reports mark: the
        current final's winner, else the sweep's best score (never a suspicious one)."""
        trials = self.sources.measured_now(trials)
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
