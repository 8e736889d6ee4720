"""``sweeper ab SPACE --vary KEY=A,B``: one variable, everything else fixed, A against B.

Every other axis is held at one value (its only value, or the middle one), both
configs are verified, then measured in interleaved rounds (A B, B A, ...) in one
process, and the samples of each are compared: SAME / FASTER / SLOWER / UNCLEAR for
B against A with the interval of the time ratio, under the same practical threshold as
``sweeper compare`` (:func:`sweeper.measure.compare_samples`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sweeper.core._units import did_you_mean
from sweeper.devices import Device
from sweeper.errors import SweeperError
from sweeper.fsio import atomic_write
from sweeper.kernels import Kernel
from sweeper.measure import PRACTICAL, Comparison, StopRule, compare_samples, summarize
from sweeper.space import Config, Invalid, Space

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

    def to_json(self) -> dict[str, Any]:
        """The JSON ``sweeper ab`` writes (``STUDIES_DIR/STUDY-ab/``): the samples, each
        side's median, the verdict with its interval and threshold, and the rounds it was
        measured in, with the samples and warmup turns each side took in each."""
        c = self.comparison
        return {"vary": self.key, "a": self.a, "b": self.b, "fixed": self.fixed,
                "samples_ms": self.samples,
                "median_ms": {k: summarize(v).median for k, v in self.samples.items()},
                "verdict": c.verdict.value, "ratio_b_over_a": c.ratio, "interval": [c.lo, c.hi],
                "threshold": c.threshold,
                "rounds": ROUNDS, "samples_per_round": self.per_round,
                "warmup_per_round": self.warmup}


def held_text(fixed: dict[str, str]) -> str:
    """``grid=sms block=32``: the values the other axes are held at, as ``ab`` says them."""
    return " ".join(f"{k}={v}" for k, v in fixed.items())


def parse_vary(text: str, space: Space) -> tuple[str, str, str]:
    """``KEY=A,B`` -> ``(axis, A, B)``, checked against ``space``: a bad key or value
    raises a SweeperError that lists the axes or the values allowed.  A value holding a
    comma (``grid=sms,cdiv(n, BLOCK)``) is split at the one comma that leaves two values
    of the axis."""
    key, sep, values = text.partition("=")
    pair = [v.strip() for v in values.split(",")] if sep else []
    try:
        axis = space.axis(key.strip()) if sep else None
    except KeyError:
        names = [a.name for a in space.axes]
        raise SweeperError(f"--vary {text!r}: no axis {key.strip()!r}; axes: "
                           f"{', '.join(names)}{did_you_mean(key.strip(), names)}") from None
    if axis is not None and len(pair) > 2:
        splits = [(values[:i].strip(), values[i + 1:].strip())
                  for i, c in enumerate(values) if c == ","]
        found = [list(s) for s in splits if all(v in axis.labels for v in s)]
        if len(found) == 1:
            pair = found[0]
    if axis is None or len(pair) != 2 or not all(pair):
        raise SweeperError(f"--vary {text!r}: write KEY=A,B (two values of one axis)")
    if pair[0] == pair[1]:
        raise SweeperError(f"--vary {text!r}: A and B are the same value; write two "
                           "different values of one axis")
    for v in pair:
        if v not in axis.labels:
            raise SweeperError(f"--vary {text!r}: {v!r} is not a value of {axis.name}; "
                               f"allowed: {', '.join(axis.labels)}"
                               f"{did_you_mean(v, axis.labels)}")
    return axis.name, pair[0], pair[1]


def run_ab(space: Space, kernel: Kernel, device: Device, vary: str, out: Path | None = None,
           threshold: float = PRACTICAL) -> ABResult:
    """Verify A and B, then time them in ``ROUNDS`` interleaved rounds (A B, B A, ...) with
    every other axis fixed, so drift in clock or temperature falls on both alike; compare
    their samples under ``threshold`` and write the result to ``out`` if given."""
    key, a, b = parse_vary(vary, space)
    fixed = {ax.name: ax.labels[(len(ax.labels) - 1) // 2] for ax in space.axes
             if ax.name != key}
    facts = device.facts()
    held = held_text(fixed)
    configs: dict[str, Config] = {}
    for label in (a, b):
        try:
            configs[label] = space.resolve({**fixed, key: label}, facts.env(),
                                           facts.max_footprint)
            refused = kernel.cannot_launch(configs[label], device.torch_device)
        except Invalid as err:
            refused = str(err)
        if refused is not None:
            raise SweeperError(f"--vary {vary!r}: {key}={label} with {held} held cannot run: "
                               f"{refused}; the other axes are held at their middle value: "
                               "hold others with -p KEY=VALUE")
    problems = {c.problem for c in configs.values()}
    buffers = {p: kernel.allocate(p, device.torch_device) for p in problems}
    generator = torch.Generator(device=device.torch_device).manual_seed(space.sampler.seed)
    for label, config in configs.items():        # verify both before timing either
        bufs = buffers[config.problem]
        kernel.randomize(bufs, generator)
        kernel.poison(bufs)
        kernel.launch(bufs, config)
        device.synchronize()
        wrong = kernel.check(bufs)
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
    result = ABResult(key, a, b, fixed, samples, compare_samples(samples[a], samples[b],
                                                                threshold=threshold),
                      per_round=rule.repeat, warmup=warmup)
    if out is not None:
        atomic_write(out, json.dumps({**result.to_json(), "environment": device.environment()},
                                     indent=2) + "\n")
    return result
