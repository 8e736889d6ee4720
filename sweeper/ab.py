"""``sweeper ab SPACE --vary KEY=A,B``: one variable, everything else fixed, A against B.

Every other axis is held at one value (its only value, or the middle one; where the
middle values rule A or B out, the values closest to them with which both can run),
both configs are verified, then measured in interleaved rounds (A B, B A, ...) in one
process, and the samples of each are compared: SAME / FASTER / SLOWER / UNCLEAR for
B against A with the interval of the time ratio, under the same practical threshold as
``sweeper compare`` (:func:`sweeper.measure.compare_samples`).  ``KEY`` may name a zipped
group, A and B two of its rows; an axis zipped in a group is varied by the group's rows
where no two rows differ in it alone (:func:`zipped_vary`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sweeper.core import shrunk_problems
from sweeper.core._units import did_you_mean
from sweeper.devices import Device
from sweeper.errors import ReferenceFailed, RefusalFailed, SweeperError, VerifyFailed, raised
from sweeper.fsio import atomic_write
from sweeper.kernels import Kernel
from sweeper.measure import PRACTICAL, Comparison, StopRule, compare_samples, summarize
from sweeper.space import Config, Configs, Invalid, Space, Tie

ROUNDS = 10
SAMPLES_PER_ROUND = 10
#: Warmup turns before each side's samples in a round (fewer where the space's
#: ``measure.warmup``, or the device's cap of it, is lower).
WARMUP_PER_ROUND = 2


@dataclass
class ABResult:
    """The outcome of one A/B run: the axis varied, its two values, the values every other
    axis was held at, each value's raw samples (ms, kept so the verdict can be re-derived)
    and B's comparison against A."""

    key: str
    a: str
    b: str
    fixed: dict[str, str]
    samples: dict[str, list[float]]
    comparison: Comparison
    #: samples and warmup turns each side took in each round
    per_round: int = SAMPLES_PER_ROUND
    warmup: int = WARMUP_PER_ROUND
    #: what was measured in place of the problem ``fixed`` names, where the device's cap
    #: on footprints made it smaller (``footprint 1MiB → 16KiB``); ``None``: as asked
    shrunk: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON ``sweeper ab`` writes (``STUDIES_DIR/STUDY-ab/``, the study named as
        on its device: ``copy-interpret-ab`` on the interpreter): the samples, each side's
        median, the verdict with its interval and threshold, and the rounds it was
        measured in, with the samples and warmup turns each side took in each; where the
        device measured a smaller problem than asked, what it measured (``shrunk``)."""
        c = self.comparison
        return {"vary": self.key, "a": self.a, "b": self.b, "fixed": self.fixed,
                "samples_ms": self.samples,
                "median_ms": {k: summarize(v).median for k, v in self.samples.items()},
                "verdict": c.verdict.value, "ratio_b_over_a": c.ratio, "interval": [c.lo, c.hi],
                "threshold": c.threshold,
                "rounds": ROUNDS, "samples_per_round": self.per_round,
                "warmup_per_round": self.warmup,
                **({"shrunk": self.shrunk} if self.shrunk is not None else {})}


def held_text(fixed: dict[str, str]) -> str:
    """``grid=sms block=32``: the values the other axes are held at, as ``ab`` says them."""
    return " ".join(f"{k}={v}" for k, v in fixed.items())


def parse_vary(text: str, space: Space) -> tuple[str, str, str]:
    """``KEY=A,B`` -> ``(axis, A, B)``, checked against ``space``: a bad key or value
    raises a SweeperError that lists the axes or the values allowed.  ``KEY`` may name a
    zipped group, whose values are its rows (``tiles=BLOCK_M=64,BLOCK_N=64,BLOCK_M=128,
    BLOCK_N=128``).  A value holding a comma (``grid=sms,cdiv(n, BLOCK)``) is split at the
    one comma that leaves two values of the axis."""
    key, sep, values = text.partition("=")
    key = key.strip()
    pair = [v.strip() for v in values.split(",")] if sep else []
    groups = {t.name: t for t in space.ties}
    if not sep:
        raise SweeperError(f"--vary {text!r}: write KEY=A,B (two values of one axis)")
    try:
        name, labels = (key, groups[key].labels) if key in groups else \
            (space.axis(key).name, space.axis(key).labels)
    except KeyError:
        names = [a.name for a in space.axes] + list(groups)
        raise SweeperError(f"--vary {text!r}: no axis {key!r}; axes: "
                           f"{', '.join(names)}{did_you_mean(key, names)}") from None
    if len(pair) > 2:
        splits = [(values[:i].strip(), values[i + 1:].strip())
                  for i, c in enumerate(values) if c == ","]
        found = [list(s) for s in splits if all(v in labels for v in s)]
        if len(found) == 1:
            pair = found[0]
    if len(pair) != 2 or not all(pair):
        if key in groups and values.strip():      # rows hold commas: split as no two rows
            raise SweeperError(f"--vary {text!r}: {values.strip()!r} is not two rows of "
                               f"{name}; allowed: two of its rows, {'; '.join(labels)}")
        raise SweeperError(f"--vary {text!r}: write KEY=A,B (two values of one axis)")
    if pair[0] == pair[1]:
        raise SweeperError(f"--vary {text!r}: A and B are the same value; write two "
                           "different values of one axis")
    for v in pair:
        if v not in labels:
            # a value the space does not list is measured once the run's axis holds it
            listed = f"{name}={pair[0]},{pair[1]}" if "," not in pair[0] + pair[1] else \
                f"'{name}=[{pair[0]}, {pair[1]}]'"
            more = "" if key in groups else \
                f"; to compare a value the space does not list, give both: -p {listed}"
            raise SweeperError(f"--vary {text!r}: {v!r} is not a value of {name}; "
                               f"allowed: {('; ' if key in groups else ', ').join(labels)}"
                               f"{did_you_mean(v, labels)}{more}")
    return name, pair[0], pair[1]


def samples_name(vary: str, space: Space) -> str:
    """The file stem ``sweeper ab`` writes its samples under: ``BLOCK-256-vs-1024-HASH``,
    from ``--vary`` as :func:`parse_vary` reads it, so a value holding a comma
    (``grid=sms,cdiv(n, BLOCK)``) is one value in the name, not two.  ``HASH`` (8 hex
    digits) is of the comparison whole: the two values as given and the space with its
    ``-p`` settings (which decide the values held and how each side is measured), so that
    comparisons the readable part cannot tell apart (``4*sms`` and ``4+sms``; another
    ``-p``) never replace each other's samples, and the same one run again replaces its
    own."""
    import hashlib

    from sweeper.core._names import MAX_STUDY_NAME, safe_name

    key, a, b = parse_vary(vary, space)
    whole = json.dumps([key, a, b, space.kernel, space.applied_sha256])
    digest = hashlib.sha256(whole.encode()).hexdigest()[:8]
    return f"{safe_name(f'{key}-{a}-vs-{b}', 'ab')[:MAX_STUDY_NAME - 9]}-{digest}"


def zipped_vary(space: Space, key: str, a: str, b: str, vary: str) -> tuple[str, str, str]:
    """What ``--vary key=a,b`` varies: ``key`` itself where it is zipped in no group, or
    where two of its group's rows differ in ``key`` alone; else the group, the one row
    with ``key=a`` against the one with ``key=b`` (its other members moving with it).
    Where more rows than one hold either, which to compare is ambiguous: a SweeperError
    that says to vary the group by its name, with its rows."""
    tie = next((t for t in space.ties if key in t.members), None)
    if tie is None:
        return key, a, b
    k = tie.members.index(key)
    rows = {v: [r for r in tie.rows if r[k] == v] for v in (a, b)}
    if {r[:k] + r[k + 1:] for r in rows[a]} & {r[:k] + r[k + 1:] for r in rows[b]}:
        return key, a, b
    if len(rows[a]) == len(rows[b]) == 1:
        return tie.name, tie.label(rows[a][0]), tie.label(rows[b][0])
    many = next(v for v in (a, b) if len(rows[v]) != 1)
    raise SweeperError(
        f"--vary {vary!r}: {key} is zipped in {tie.name}, no two of whose rows differ in "
        f"{key} alone, and {key}={many} is in {len(rows[many])} of them: "
        f"vary the group by its name and two rows (--vary '{tie.name}="
        f"{tie.label(rows[a][0])},{tie.label(rows[b][0])}'); its rows: "
        f"{'; '.join(tie.labels)}")


def _varied(space: Space, key: str) -> set[str]:
    """The axes that ``--vary key=...`` sets: a zipped group's members, or the one axis."""
    return next((set(t.members) for t in space.ties if t.name == key), {key})


def held_choices(space: Space, configs: Configs, key: str, a: str, b: str
                 ) -> Iterator[dict[str, str]]:
    """The values every axis but ``key`` (a zipped group's members, where ``key`` names the
    group) may be held at with both ``key=a`` and ``key=b`` among ``configs`` (the space's
    launchable ones), closest to the middle first: by the sum over the other dimensions of
    how many places their value is from the middle one (``(n - 1) // 2``; a zipped
    group's middle is its middle row), then dimension by dimension.  The middle values
    themselves come first where both sides have them; nothing comes where no held values
    let both be launched."""
    import numpy as np

    names = list(configs.names)
    d = names.index(space.dimension_of(key))
    ties = {t.name: t for t in space.ties}
    tie = ties.get(names[d])
    # each label of key's dimension: its side (0: A, 1: B, -1: neither) and, for a zipped
    # group one of whose members is key, which values of the group's other members it
    # holds beside key's
    rests: list[tuple[str, ...]] = [()]
    member = tie is not None and key != tie.name
    if not member:
        side_of = [{a: 0, b: 1}.get(x, -1) for x in configs.labels[d]]
        rest_of = [0] * len(side_of)
    else:
        assert tie is not None
        k = tie.members.index(key)
        rest_ids: dict[tuple[str, ...], int] = {}
        side_of = [{a: 0, b: 1}.get(row[k], -1) for row in tie.rows]
        rest_of = [rest_ids.setdefault(row[:k] + row[k + 1:], len(rest_ids))
                   for row in tie.rows]
        rests = list(rest_ids)
    places = configs.places()
    side = np.asarray(side_of, dtype=np.int64)[places[:, d]]
    held = places.copy()
    held[:, d] = np.asarray(rest_of, dtype=np.int64)[places[:, d]]
    shape = [len(labels) for labels in configs.labels]
    shape[d] = len(rests)
    both = np.intersect1d(*(np.ravel_multi_index(held[side == s].T, shape) for s in (0, 1)))
    at = np.stack(np.unravel_index(both, shape), axis=1).reshape(len(both), len(shape))
    middle = np.asarray([(n - 1) // 2 for n in shape])
    far = np.abs(at - middle)
    # key's own dimension: a zipped group's other members are as far from its middle row
    # as the first row that holds them
    far[:, d] = 0 if tie is None or not member else np.abs(
        np.asarray([rest_of.index(i) for i in range(len(rests))])[at[:, d]] - _middle_row(tie))
    order = np.lexsort((both, *far.T[::-1], far.sum(axis=1)))
    varied = _varied(space, key)
    axes = [ax.name for ax in space.axes if ax.name not in varied]
    for row in at[order].tolist():
        values: dict[str, str] = {}
        for name, place in zip(names, row, strict=True):
            group = ties.get(name)
            if name == names[d]:
                if member and group is not None:
                    values.update(zip((m for m in group.members if m != key), rests[place],
                                      strict=True))
            elif group is not None:
                values.update(zip(group.members, group.rows[place], strict=True))
            elif name != key:
                values[name] = configs.labels[names.index(name)][place]
        yield {name: values[name] for name in axes}


def _middle_row(tie: Tie) -> int:
    """The place of a zipped group's middle row, as an axis's middle value's."""
    return (len(tie.rows) - 1) // 2


def run_ab(space: Space, kernel: Kernel, device: Device, vary: str, out: Path | None = None,
           threshold: float = PRACTICAL) -> ABResult:
    """Verify A and B, then time them in ``ROUNDS`` interleaved rounds (A B, B A, ...) with
    every other axis fixed, so drift in clock or temperature falls on both alike; compare
    their samples under ``threshold`` and write the result to ``out`` if given."""
    key, a, b = zipped_vary(space, *parse_vary(vary, space), vary)
    facts = device.facts()

    def launched(fixed: dict[str, str], label: str) -> Config | str:
        """``key=label`` with ``fixed`` held, or why it cannot run; a refusal that failed
        (a ``refuse=`` or ``prune_configs_by`` with a bug, a kernel's own ``refusal``
        that raised) stops the comparison saying so, as a wrong answer does."""
        try:
            config = space.resolve({**fixed, key: label}, facts.env(), facts.max_footprint)
        except Invalid as err:
            return str(err)
        try:
            return kernel.cannot_launch(config, device.torch_device) or config
        except Exception as err:          # the kernel's own code failed: say so
            why = str(err) if isinstance(err, RefusalFailed) else \
                raised("the kernel's refusal", err)
            raise SweeperError(f"{key}={label} with {held_text(fixed)} held: {why}") from err

    valid = Configs(space, facts.env(), facts.max_footprint)
    configs: dict[str, Config] = {}
    for fixed in held_choices(space, valid, key, a, b):
        sides = {label: launched(fixed, label) for label in (a, b)}
        if all(isinstance(c, Config) for c in sides.values()):
            configs = {label: c for label, c in sides.items() if isinstance(c, Config)}
            break
    else:
        varied = _varied(space, key)
        middle = {ax.name: ax.labels[(len(ax.labels) - 1) // 2] for ax in space.axes
                  if ax.name not in varied}
        for tie in space.ties:
            if key not in tie.members and tie.name != key:
                middle.update(zip(tie.members, tie.rows[_middle_row(tie)], strict=True))
        refused = next((f"{key}={label} with {held_text(middle)} held cannot run: {why}; "
                        for label in (a, b)
                        if isinstance(why := launched(middle, label), str)), "")
        raise SweeperError(f"--vary {vary!r}: {refused}no values of the other axes let both "
                           f"{key}={a} and {key}={b} run: give the other axes values that "
                           "do with -p KEY=VALUE")
    problems = {c.problem for c in configs.values()}
    buffers = {p: kernel.allocate(p, device.torch_device) for p in problems}
    generator = torch.Generator(device=device.torch_device).manual_seed(space.sampler.seed)
    for label, config in configs.items():        # verify both before timing either
        bufs = buffers[config.problem]
        kernel.randomize(bufs, generator)
        kernel.poison(bufs)
        kernel.launch(bufs, config)
        device.synchronize()
        try:
            wrong = kernel.check(bufs)
        except (ReferenceFailed, VerifyFailed) as err:  # the user's check failed: say so
            raise SweeperError(f"{key}={label}: {err}") from err
        if wrong is not None:
            raise SweeperError(f"{key}={label}: wrong answer: {wrong}")
    measure = device.measure_spec(space.measure)
    rule = StopRule(kind="fixed", repeat=min(SAMPLES_PER_ROUND, measure.repeat))
    warmup = min(WARMUP_PER_ROUND, measure.warmup)
    samples: dict[str, list[float]] = {a: [], b: []}
    for round_ in range(ROUNDS):
        for label in ((a, b) if round_ % 2 == 0 else (b, a)):
            config = configs[label]
            bufs = buffers[config.problem]
            samples[label] += device.measure(
                functools.partial(kernel.launch, bufs, config), warmup=warmup, rule=rule,
                flush=config.cache == "cold", batch=measure.batch, graph=measure.graph
            ).timing.samples
    measured = configs[a].problem
    shrunk = next((s.changes() for s in shrunk_problems(space, facts.env(), facts.max_footprint)
                   if s.problem == measured), None)
    result = ABResult(key, a, b, fixed, samples, compare_samples(samples[a], samples[b],
                                                                threshold=threshold),
                      per_round=rule.repeat, warmup=warmup, shrunk=shrunk)
    if out is not None:
        atomic_write(out, json.dumps({**result.to_json(), "environment": device.environment()},
                                     indent=2) + "\n")
    return result
