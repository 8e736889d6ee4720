"""Choosing the winner honestly: finalists re-measured interleaved, ties broken by rule.

The best config of a problem is a *set*: every config whose median's confidence
interval overlaps the fastest one's is tied within noise.  Before a winner is
named, the finalists (the top ``TOP_K`` and that tied set) are re-measured in
round-robin rounds (``MIN_ROUNDS`` to ``ROUNDS``: they stop once the outcome is settled,
and a finalist out of contention leaves for good), in a shuffled order each round, in the
same process, as Helion does; the winner is chosen from those samples alone, among the
finalists still racing.  A device whose timings cannot tell more apart takes fewer
finalists and rounds (:class:`FinalSize`: the interpreter, the top ``TOP_K`` in
``MIN_ROUNDS``).  The
kernel's torch baseline runs in the same rounds as one more entrant (it cannot
win), so "% of torch" compares two measurements taken under the same conditions,
and on a power-bound problem every entrant's samples follow the same duty schedule
(:mod:`sweeper.measure._duty`).

The winner is the fastest median, unless another config is both tied within noise
*and* within ``PRACTICAL`` (1 %) of the fastest median: only among those does the
rule prefer the lowest variance (CV), then the simplest config (fewest warps, then
smallest meta-parameters, then fewest programs).  Statistical ties alone are not
enough: with wide intervals (matmul's, on the H200) a config 10 % slower can be "tied"
and would win on its lower CV.  The threshold is relative to the fastest median because
what a slower pick costs is the fraction of every launch's time it adds: that holds at
any footprint (an absolute time would not), is about the same fraction of GB/s or
TFLOP/s, and says how much slowness is worth trading for stability, which the CIs'
width (the statistical test again) cannot.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweeper.core import MeasureSpec
from sweeper.measure import (
    DEFAULT_DUTY,
    PRACTICAL,
    Duty,
    Stats,
    StopRule,
    median_ci,
    summarize,
    tied_set,
)
from sweeper.measure._duty import BURST_S
from sweeper.store import GpuSlot, ProblemKey, Record, TrialRecord
from sweeper.store._schema import samples_problem, stats_problem

TOP_K = 5
MAX_FINALISTS = 12
ROUNDS = 5
SAMPLES_PER_ROUND = 10
#: Rounds every final runs before it may stop: from then on it stops once the winner and
#: the set tied with the fastest are the same two rounds in a row (:func:`remeasure`).
MIN_ROUNDS = 3
#: A finalist slower than the fastest's median by more than this, and not tied with it,
#: leaves the rounds.  Replayed on six recorded H200 finals
#: (``benchmarks/finals_savings.py``), 2 % with ``MIN_ROUNDS`` 3 kept every winner and
#: all but one borderline tie in 77 % of the entrant-rounds; 1 % lost a tie (63 %).
LEAVES_BEYOND = 2 * PRACTICAL
#: Rounds the winner and the baseline take after a race under sustained load
#: (:class:`Confirmation`).
CONFIRM_ROUNDS = MIN_ROUNDS
RULE = ("the fastest median wins, unless others are both tied within noise (95% CIs of the "
        f"medians overlap) and within {PRACTICAL:.0%} of its median; among those: lowest CV, "
        "then fewest warps, then smallest meta-parameters, then fewest programs")


@dataclass(kw_only=True)
class Finalist:
    """Trial ``number`` as re-measured in a final: its samples, their statistics, GB/s."""

    number: int
    samples_ms: list[float] = field(default_factory=list)
    stats: Stats
    gbps: float = 0.0


@dataclass(kw_only=True)
class FinalBaseline:
    """The kernel's torch baseline (``name``) timed in the same rounds as the finalists."""

    name: str
    samples_ms: list[float] = field(default_factory=list)
    stats: Stats


@dataclass(kw_only=True)
class Confirmation:
    """A final raced under sustained load (``measure.finals_duty: sustained``), its winner
    and the torch baseline then measured again after cool-downs (``duty``), in ``rounds``
    interleaved rounds of their own.  The race's medians move with the power state (on the
    H200 the same winner read 4.7 % apart in two runs, and 0.979x and 1.023x
    ``torch.matmul``), while cool rounds hold (0.3 %), so a report states the winner's
    speed and its speed against the baseline from these."""

    duty: str
    rounds: int
    samples_ms: list[float] = field(default_factory=list)
    stats: Stats
    baseline: FinalBaseline | None = None


@dataclass
class FinalRecord(Record):
    """The interleaved re-measurement of one problem's finalists and the winner."""

    problem: ProblemKey
    finalists: list[Finalist]
    tied: list[int]
    winner: int
    rounds: int = ROUNDS
    samples_per_round: int = SAMPLES_PER_ROUND
    rule: str = RULE
    #: the torch baseline measured in the same rounds
    baseline: FinalBaseline | None = None
    duty: str = ""                            # the power schedule before each entrant's samples
    #: the study's newest trial number when this final was taken: the final stands for its
    #: problem until a newer measured trial of that problem comes after it (-1: not recorded;
    #: such a final stands)
    after_trial: int = -1
    #: the GPU these rounds ran on, where the finals ran on each of several GPUs
    #: (:mod:`sweeper.consensus`); ``None``: the one device the sweep opened
    gpu: GpuSlot | None = None
    #: the winner and the baseline after cool-downs, where the rounds ran under sustained load
    confirmed: Confirmation | None = None
    kind: str = "final"

    @property
    def cut_short(self) -> bool:
        """Whether the time budget's end stopped this final before ``MIN_ROUNDS`` (left
        alone, a final stops only once its outcome is settled, after ``MIN_ROUNDS``): its
        winner stands, said so, until the next run measures the final again."""
        return self.rounds < MIN_ROUNDS

    def baseline_ratio_text(self) -> str:
        """The ratio as outputs print it: three decimals, or two significant digits when it
        is under 0.01 (an interpreter's kernel against torch), never a bare 0.000."""
        ratio = self.baseline_ratio()
        if ratio is None:
            return ""
        return f"{ratio:.3f}" if ratio >= 0.01 else f"{ratio:.2g}"

    def baseline_ratio(self) -> float | None:
        """The winner's speed over the baseline's (baseline median / winner median), both
        from the same rounds: the confirmation's where there is one, else these; ``None``
        without a baseline."""
        base = self.compared_baseline()
        if base is None:
            return None
        winner = self.confirmed.stats if self.confirmed else self.winner_row().stats
        return base.stats.median / winner.median

    def compared_baseline(self) -> FinalBaseline | None:
        """The baseline the winner's speed is stated against: as measured in the
        confirmation's rounds where there is one, else in these."""
        return self.confirmed.baseline if self.confirmed else self.baseline

    def winner_row(self) -> Finalist:
        """The winner as re-measured here (the journal checks it is among the finalists)."""
        return next(r for r in self.finalists if r.number == self.winner)

    @staticmethod
    def invariants(data: dict[str, Any]) -> str | None:
        """What the journal checks beyond the field types (readers index all of it)."""
        def problem(row: dict[str, Any], owner: str) -> str | None:
            return stats_problem(row["stats"], owner + "stats", ("ci_lo", "ci_hi", "cv")) or \
                samples_problem(row, owner)

        for row in data["finalists"]:
            if found := problem(row, f"finalist #{row['number']}'s "):
                return found
        if data["winner"] not in [row["number"] for row in data["finalists"]]:
            return f"the winner #{data['winner']} is not among its finalists"
        confirmed = data.get("confirmed") or {}
        entrants = ((data.get("baseline"), "its baseline's "),
                    (data.get("confirmed"), "its confirmation's "),
                    (confirmed.get("baseline"), "its confirmation's baseline's "))
        return next((p for row, owner in entrants
                     if row is not None and (p := problem(row, owner))), None)

    @staticmethod
    def trial_refs(data: dict[str, Any]) -> list[int]:
        """The trials this record refers to: they come before it in the journal."""
        return [row["number"] for row in data["finalists"]]


@dataclass(frozen=True)
class Round:
    """What each entrant of a final takes in each round: ``warmup`` launches, then
    ``samples`` timed ones."""

    warmup: int = 2
    samples: int = SAMPLES_PER_ROUND

    @classmethod
    def on(cls, cap: Callable[[MeasureSpec], MeasureSpec]) -> Round:
        """A round within a device's caps on any measurement (``Device.measure_spec``: the
        interpreter's at most 1 warm-up and 5 timed runs; a GPU's none)."""
        spec = cap(MeasureSpec(warmup=cls.warmup, repeat=cls.samples, stop="fixed"))
        return cls(min(spec.warmup, cls.warmup), min(spec.repeat, cls.samples))


#: A round as a GPU runs it: nothing caps a final's measurement there.
GPU_ROUND = Round()


@dataclass(frozen=True)
class FinalSize:
    """The most finalists a final takes (the top ``TOP_K`` and those tied with the
    fastest) and the most rounds it runs: ``MAX_FINALISTS`` and ``ROUNDS``, or fewer where
    a device says its finals need no more (``Device.most_finalists``,
    ``Device.most_final_rounds``; never under ``MIN_ROUNDS``, whose final would count as
    cut short and be measured again by every run)."""

    finalists: int = MAX_FINALISTS
    rounds: int = ROUNDS

    @classmethod
    def declared(cls, finalists: int | None, rounds: int | None) -> FinalSize:
        """The size a device declares (``None``: the finals' own), within the finals' own
        and at least ``MIN_ROUNDS`` rounds and one finalist."""
        return cls(max(1, min(finalists or MAX_FINALISTS, MAX_FINALISTS)),
                   max(MIN_ROUNDS, min(rounds or ROUNDS, ROUNDS)))

    @property
    def top(self) -> int:
        """The finalists a final takes by their sweep medians alone, before any tied."""
        return min(TOP_K, self.finalists)


#: A final as a GPU runs it: nothing narrows it there.
GPU_FINAL = FinalSize()

#: Seconds of host work per entrant and round of a final beyond its launches (its
#: measurement set up, synchronized, its NVML reads, the L2 flushed before each sample)
#: where no final ran on the machine yet: an upper bound, as the time budget keeps it (the
#: H200's finals measured 1.9 ms, ``measured_overhead_s``).
FINALS_OVERHEAD_S = 0.02
#: Finalists a final usually keeps past its first round: one out of contention leaves
#: after each round (:func:`remeasure`), and on the H200 a median of 3 of 5 finalists ran
#: every round (1-5 over 22 finals of matmul and copy spaces; the entrant-rounds run were
#: 0.51-1.0 of all entrants in every round, median 0.83).
FINALS_STAYING = 3


def finals_estimate_s(count: int, median_ms: float, duty: Duty | None,
                      typical: bool = False, rounds: float | None = None,
                      round_: Round = GPU_ROUND, overhead_s: float | None = None,
                      baseline_free: bool = False, size: FinalSize = GPU_FINAL,
                      ties: bool = False) -> float:
    """Seconds the final of a problem with ``count`` measured configs, the fastest at
    ``median_ms``, will take at most: :func:`final_bound_s` of its finalists (at most
    ``size.finalists``) each at ``median_ms``, in ``size.rounds``. ``typical``: what a
    final usually takes instead (what a time estimate wants, not a budget): ``TOP_K``
    finalists (``size.top``) at 1.2 times the fastest median in the first round and
    ``FINALS_STAYING`` of them in the others (all of them where the device's timings make
    them ``ties``: none leaves), half a round past ``MIN_ROUNDS`` (on the H200, 18 of 23
    finals stopped after 3 or 4 of their 5 rounds), or ``rounds`` where the device says
    how many its finals typically run, never past ``size.rounds`` (not ``typical``:
    ``rounds`` bounds that many rounds instead); the baseline in every round, at nothing
    where it is ``baseline_free`` (torch's op beside a kernel the Triton interpreter
    runs)."""
    if not typical:
        return final_bound_s([median_ms] * min(count, size.finalists), duty,
                             size.rounds if rounds is None else rounds, round_, overhead_s)
    overhead = FINALS_OVERHEAD_S if overhead_s is None else overhead_s
    rounds = min(MIN_ROUNDS + 0.5 if rounds is None else rounds, size.rounds)
    count, median_ms = min(count, size.top), 0.6 * median_ms
    staying = count if ties else min(count, FINALS_STAYING)
    entrant = _entrant_s(median_ms, duty, round_, overhead)
    baseline = overhead if baseline_free else entrant
    total = (count + staying * (rounds - 1)) * entrant + baseline * rounds
    return total + _confirm_s(median_ms, duty, round_, overhead)


def final_bound_s(medians_ms: Sequence[float], duty: Duty | None, rounds: float | None = None,
                  round_: Round = GPU_ROUND, overhead_s: float | None = None) -> float:
    """Seconds the final of finalists of these sweep medians takes at most in ``ROUNDS``
    rounds (or ``rounds``: the time budget keeps ``MIN_ROUNDS``) of ``round_``
    (``SAMPLES_PER_ROUND`` samples and two warm-up launches each, within the device's caps),
    each finalist's at twice its own median (the L2 is flushed before each sample) and the
    torch baseline's at twice the slowest finalist's (its own is not known), each preceded
    by the duty's cool-down or load (a cool-down before each burst of its samples; nothing
    under sustained load, whose winner and baseline then take ``CONFIRM_ROUNDS`` rounds
    after :data:`DEFAULT_DUTY`'s cool-downs).  Each at its own median, not all at the
    slowest's: under load the first trials' medians spread over 2-24 ms for configs of
    about 1.2 ms, and priced at the slowest the finals kept 5-6 s of a 10 s budget after
    3-5 configs (docs/benchmarks-log.md, "A final starts when its first round fits").
    ``overhead_s``: an entrant-round's host seconds beyond its launches as this machine's
    finals measured them (``RunCosts.finals_overhead_s``), else ``FINALS_OVERHEAD_S``."""
    overhead = FINALS_OVERHEAD_S if overhead_s is None else overhead_s
    rounds = ROUNDS if rounds is None else rounds
    slowest = max(medians_ms)
    per_round = sum(_entrant_s(m, duty, round_, overhead) for m in (*medians_ms, slowest))
    return rounds * per_round + _confirm_s(slowest, duty, round_, overhead)


def _entrant_s(median_ms: float, duty: Duty | None, round_: Round, overhead: float) -> float:
    """Seconds an entrant of this sweep median takes a round at most."""
    launches_s = 2 * (round_.samples + round_.warmup) * median_ms / 1e3
    settles = 0 if duty is None or duty.kind == "sustained" else (
        max(1, math.ceil(round_.samples * median_ms / 1e3 / BURST_S))
        if duty.kind == "cool" else 1)
    return launches_s + settles * (duty.seconds if duty else 0) + overhead


def _confirm_s(median_ms: float, duty: Duty | None, round_: Round, overhead: float) -> float:
    """Seconds a final under sustained load takes after its rounds: the winner and the
    baseline in ``CONFIRM_ROUNDS`` rounds after cool-downs (nothing under other duties)."""
    if duty is None or duty.kind != "sustained":
        return 0.0
    return 2 * CONFIRM_ROUNDS * _entrant_s(median_ms, DEFAULT_DUTY, round_, overhead)


def measured_overhead_s(finals: Sequence[FinalRecord], seconds: float,
                        round_: Round = GPU_ROUND) -> float | None:
    """An entrant-round's host seconds beyond its launches in ``finals``, which took
    ``seconds`` in all (what :func:`finals_estimate_s` calls ``overhead_s``): the seconds
    beyond every timed and warm-up launch, per entrant-round (the L2 flush before each
    sample, the set-up, the synchronizing, the NVML reads, the baseline's first call).
    ``None`` where they say nothing of it: no finals, or any with a cool-down or load (its
    waits are the duty's, not the host's).  With several GPUs the records of one count:
    their finals ran at once."""
    one = [f for f in finals if f.gpu == finals[0].gpu] if finals else []
    if not one or any(f.duty or f.confirmed for f in one):
        return None
    rounds = launches_ms = 0.0
    for f in one:
        entrants = [e.samples_ms for e in f.finalists] + (
            [f.baseline.samples_ms] if f.baseline else [])
        per = max(1, f.samples_per_round)
        rounds += sum(math.ceil(len(s) / per) for s in entrants)
        launches_ms += sum(sum(s) * (1 + round_.warmup / per) for s in entrants)
    return max(0.0, seconds - launches_ms / 1e3) / rounds if rounds else None


def problem_of(t: TrialRecord) -> ProblemKey:
    """``t``'s problem; empty for a trial whose choice never resolved (no reader asks)."""
    return t.problem or ProblemKey("", 0)


def simplicity(t: TrialRecord) -> tuple[int, int, int]:
    """The last tie-break's key, smaller is simpler: warps, then the product of the
    meta-parameters, then programs in the grid; a config that never resolved sorts first,
    though such a trial is never a finalist."""
    cfg = t.config
    if cfg is None:
        return 0, 0, 0
    return cfg.num_warps, math.prod(cfg.meta.values()) if cfg.meta else 0, cfg.grid


def finalists(trials: Sequence[TrialRecord], size: FinalSize = GPU_FINAL
              ) -> list[TrialRecord]:
    """The top ``TOP_K`` by median and everything tied with the best, fastest first, at
    most ``size.finalists`` of them."""
    ok = sorted((t for t in trials if t.ok and not t.suspicious and t.samples_ms),
                key=lambda t: t.stats.median if t.stats else math.inf)
    return [ok[i] for i in chosen([median_ci(t.samples_ms) for t in ok], size)]


def finalists_by_problem(trials: Iterable[TrialRecord], size: FinalSize = GPU_FINAL
                         ) -> dict[ProblemKey, list[TrialRecord]]:
    """The :func:`finalists` of each problem among ``trials`` that has any, in the order
    the problems first come."""
    groups: dict[ProblemKey, list[TrialRecord]] = {}
    for t in trials:
        if t.ok:
            groups.setdefault(problem_of(t), []).append(t)
    return {key: chosen for key, group in groups.items()
            if (chosen := finalists(group, size))}


def chosen(bounds: Sequence[tuple[float, float]], size: FinalSize = GPU_FINAL) -> list[int]:
    """Which of the configs whose medians' 95 % intervals are ``bounds`` (fastest median
    first) are finalists: the first ``TOP_K`` and every one whose interval overlaps the
    fastest's (tied within noise), at most ``size.finalists`` (``MAX_FINALISTS``), in
    order."""
    if not bounds:
        return []
    lo, hi = bounds[0]
    return [i for i, (a, b) in enumerate(bounds) if i < size.top or (a <= hi and b >= lo)
            ][:size.finalists]


def pick_winner(samples: dict[int, list[float]], trials: dict[int, TrialRecord]
                ) -> tuple[int, list[int]]:
    """The winner among re-measured finalists (see the module docstring), and the set
    tied with the fastest, fastest first."""
    stats = {n: summarize(s) for n, s in samples.items()}
    fastest, tied = tied_set(samples)
    limit = stats[fastest].median * (1 + PRACTICAL)
    close = [n for n in tied if stats[n].median <= limit]
    winner = min(close, key=lambda n: (stats[n].cv, simplicity(trials[n])))
    return winner, sorted(tied, key=lambda n: stats[n].median)


Baseline = tuple[str, Callable[[StopRule], list[float]]]


def still_in(samples: dict[int, list[float]]) -> set[int]:
    """The finalists that can still win or tie, from their samples so far: those tied with
    the fastest (their medians' CIs overlap) and those within ``LEAVES_BEYOND`` of its
    median; the others are slower beyond noise and beyond what matters, and leave."""
    fastest, tied = tied_set(samples)
    limit = summarize(samples[fastest]).median * (1 + LEAVES_BEYOND)
    return set(tied) | {n for n, s in samples.items() if summarize(s).median <= limit}


def settled(history: Sequence[tuple[int, list[int]]]) -> bool:
    """Whether a final whose rounds gave ``history`` (after each round: the winner and the
    set tied with the fastest) may stop: ``MIN_ROUNDS`` run, and the last two the same."""
    return len(history) >= MIN_ROUNDS and history[-1] == history[-2]


def remeasure(group: Sequence[TrialRecord], measure_one: Callable[[TrialRecord, StopRule],
              list[float]], bytes_moved: Callable[[TrialRecord], int], seed: int = 0,
              baseline: Baseline | None = None, duty: str = "",
              on_round: Callable[[int, int], None] | None = None,
              per_round: int = SAMPLES_PER_ROUND,
              deadline: float | None = None, most_rounds: int = ROUNDS) -> FinalRecord:
    """Interleave up to ``most_rounds`` (``ROUNDS``, or the device's
    :attr:`FinalSize.rounds`) rounds over ``group`` (and ``baseline``: its name and
    how to time it, in every round); ``measure_one`` times one config.  After each round a
    finalist no longer in contention (:func:`still_in`) leaves, and the rounds stop once
    the outcome is :func:`settled`: a final costs what its field needs, not a fixed
    ``ROUNDS`` x finalists.  ``on_round`` hears each round's number as it ends and how
    many finalists are still in; each entrant takes ``per_round`` samples a round.
    ``deadline`` (``time.monotonic()``, the time budget's end): after the first round, a
    round starts only if one as long as the last ends before it, and a round the deadline
    passes in stops at its next entrant, its samples set aside so that every entrant keeps
    the same rounds; the record's ``rounds`` says how many ran (a budget's estimate of a
    final can miss where the machine is loaded: on the 2-core CI machine, beside another
    test, an interpreted final took 2.0 s in 2 rounds where the budget had kept 0.8 s, and
    a final that started must not carry the command past its budget)."""
    rng = random.Random(seed)
    rule = StopRule(kind="fixed", repeat=per_round)
    samples: dict[int, list[float]] = {t.number: [] for t in group}
    by_number = {t.number: t for t in group}
    entrants: list[TrialRecord | None] = [*group, *([None] if baseline else [])]
    base_samples: list[float] = []
    history: list[tuple[int, list[int]]] = []
    rounds = 0
    racing = set(samples)
    round_s = 0.0
    while rounds < most_rounds and not settled(history):
        if rounds and deadline is not None and time.monotonic() + round_s > deadline:
            break
        started = time.monotonic()
        rng.shuffle(entrants)
        measured: list[list[float]] = []
        for t in entrants:
            if rounds and deadline is not None and time.monotonic() > deadline:
                break
            measured.append(baseline[1](rule) if t is None      # type: ignore[index]
                            else measure_one(t, rule))
        if len(measured) < len(entrants):      # the deadline passed: the round is set aside
            break
        for t, got in zip(entrants, measured, strict=True):
            (base_samples if t is None else samples[t.number]).extend(got)
        rounds += 1
        # only those still racing are compared: one that left was measured in fewer
        # rounds, and its early samples never met the later rounds' conditions
        running = {n: samples[n] for n in racing}
        history.append(pick_winner(running, by_number))
        racing = still_in(running)
        entrants = [t for t in entrants if t is None or t.number in racing]
        if on_round is not None:
            on_round(rounds, len(racing))
        round_s = time.monotonic() - started
    winner, tied = history[-1]
    rows = []
    for t in group:
        stats = summarize(samples[t.number])
        rows.append(Finalist(number=t.number, samples_ms=samples[t.number], stats=stats,
                             gbps=bytes_moved(t) / (stats.median * 1e-3) / 1e9))
    base = FinalBaseline(name=baseline[0], samples_ms=base_samples,
                         stats=summarize(base_samples)) if baseline else None
    return FinalRecord(problem=problem_of(group[0]), finalists=rows, tied=tied, winner=winner,
                       rounds=rounds, samples_per_round=per_round, baseline=base, duty=duty)


def confirm(winner: TrialRecord, measure_one: Callable[[TrialRecord, StopRule], list[float]],
            baseline: Baseline | None, duty: str, seed: int = 0,
            per_round: int = SAMPLES_PER_ROUND) -> Confirmation:
    """``winner`` and ``baseline`` in ``CONFIRM_ROUNDS`` interleaved rounds of their own,
    in a shuffled order each round, ``measure_one`` and the baseline's timer following the
    schedule ``duty`` names (the caller sets it)."""
    rng = random.Random(seed)
    rule = StopRule(kind="fixed", repeat=per_round)
    entrants: list[TrialRecord | None] = [winner, *([None] if baseline else [])]
    own: list[float] = []
    base: list[float] = []
    for _ in range(CONFIRM_ROUNDS):
        rng.shuffle(entrants)
        for t in entrants:
            if t is None:
                base.extend(baseline[1](rule))       # type: ignore[index]
            else:
                own.extend(measure_one(t, rule))
    return Confirmation(duty=duty, rounds=CONFIRM_ROUNDS, samples_ms=own,
                        stats=summarize(own),
                        baseline=FinalBaseline(name=baseline[0], samples_ms=base,
                                               stats=summarize(base)) if baseline else None)
