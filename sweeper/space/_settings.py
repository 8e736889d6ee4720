"""The settings around the axes: sampler and seed, measurement, budget.

Each value is checked against what the code that uses it can take: a seed numpy's
generators accept, finite positive durations a timer can be armed with, counts that
fit in memory.
"""

from __future__ import annotations

import math
from typing import Any

from sweeper import plugins
from sweeper.core._model import CACHE_MODES, Axis, Budget, MeasureSpec, SamplerSpec
from sweeper.core._units import parse_duration
from sweeper.errors import SpaceError, SweeperError

MEASURE_KEYS = ("warmup", "repeat", "stop", "target", "min_samples", "min_time", "max_time",
                "cache", "batch", "graph", "abandon", "timeout", "duty")
STOP_RULES = ("fixed", "ci", "stdrel")
BUDGET_KEYS = ("trials", "time", "target", "patience")
SAMPLER_KEYS = ("name", "seed", "baseline")
MAX_SEED = 2**32 - 1               # numpy's generators, under every Optuna sampler, take no more
MAX_COUNT = 1_000_000              # warmup runs, samples, launches per sample
MAX_TRIALS = 1_000_000_000


class Settings:
    """The parser's methods for the settings; the parser supplies ``error`` and ``keys``."""

    #: Off: no plugin that is not built in is imported (``sweeper plan``).
    user_code: bool = True

    def error(self, path: str, message: str) -> SpaceError:
        """A SpaceError located at key ``path`` of the file (its line, through ``extends:``
        too) with ``message``; the caller raises it."""
        raise NotImplementedError

    def keys(self, data: Any, path: str, known: tuple[str, ...]) -> dict[str, Any]:
        """``data`` as a mapping whose keys are all in ``known``; anything else raises a
        SpaceError at ``path`` that lists the known keys."""
        raise NotImplementedError

    def sampler(self, value: Any, seed: Any, axes: list[Axis]) -> SamplerSpec:
        """The ``sampler:`` setting (a name, or a mapping with ``name``, ``seed`` and
        ``baseline``) with the top-level ``seed``, checked: a sampler that is registered, a
        seed from 0 to ``MAX_SEED``, and a baseline only for a sampler that takes one, each
        of its values one of the axis's; an unnamed axis's baseline is its middle value."""
        path, baseline, seed_path = "sampler", {}, "seed"
        if isinstance(value, dict):
            value = self.keys(value, path, SAMPLER_KEYS)
            seed_path = "sampler.seed" if "seed" in value else seed_path
            seed = value.get("seed", seed)
            baseline = value.get("baseline", {})
            path, value = "sampler.name", value.get("name", "auto")
        if not isinstance(value, str) or len(value) > 200:
            raise self.error(path, f"unknown sampler {shown(value)}; known: "
                             f"{plugins.known(plugins.SAMPLER)}")
        takes_baseline = self.takes_baseline(value, path, bool(baseline))
        if type(seed) is not int or not 0 <= seed <= MAX_SEED:
            raise self.error(seed_path, f"seed must be an integer from 0 to {MAX_SEED} "
                f"(2**32 - 1), got {shown(seed)}")
        if baseline and not takes_baseline:
            takers = [n for n in plugins.SAMPLER.builtins
                      if plugins.sampler_capabilities(n).takes_baseline]
            raise self.error("sampler.baseline", f"a baseline belongs to the "
                             f"{', '.join(takers)} sampler; {value} takes none")
        by_name = {a.name: a for a in axes}
        base = self.keys(baseline, "sampler.baseline", tuple(by_name))
        chosen = []
        for a in axes:
            label = str(base.get(a.name, a.labels[(len(a.labels) - 1) // 2]))
            if label not in a.labels:
                raise self.error(f"sampler.baseline.{a.name}", f"{shown(label)} is not a value of "
                                 f"the axis; allowed: {', '.join(a.labels)}")
            chosen.append((a.name, label))
        return SamplerSpec(name=value, seed=seed,
                           baseline=tuple(chosen) if takes_baseline else ())

    def takes_baseline(self, name: str, path: str, given: bool) -> bool:
        """Whether sampler ``name`` declares a baseline; an unknown sampler is an error at
        ``path``.  With ``user_code`` off, a sampler that is not built in is not imported:
        it takes a baseline if the file gives one."""
        try:
            found = plugins.find(plugins.SAMPLER, name)
            if not (found.builtin or self.user_code):
                return given
            return plugins.sampler_capabilities(name).takes_baseline
        except SweeperError as err:
            raise self.error(path, str(err)) from None

    def measure(self, raw: Any) -> tuple[MeasureSpec, list[str]]:
        """The measurement settings, and the cache modes the ``cache`` axis defaults to."""
        raw = self.keys(raw, "measure", MEASURE_KEYS)
        d = MeasureSpec()
        warmup = self.whole(raw, "warmup", d.warmup, 0)
        repeat = self.whole(raw, "repeat", d.repeat, 1)
        min_samples = self.whole(raw, "min_samples", d.min_samples, 2)
        batch = self.whole(raw, "batch", d.batch, 1)
        stop = raw.get("stop", "fixed" if "repeat" in raw else d.stop)
        if stop not in STOP_RULES:
            raise self.error("measure.stop", f"unknown stopping rule {shown(stop)}; allowed: "
                             f"{', '.join(STOP_RULES)}")
        target = raw.get("target", d.target)
        try:
            target = _fraction(target)
        except ValueError:
            raise self.error("measure.target", f"{shown(target)} is not a fraction between 0 and 1 "
                             "(e.g. 0.5% or 0.005)") from None
        times = {}
        for key, default in (("min_time", d.min_time_s), ("max_time", d.max_time_s)):
            value = raw.get(key, default)
            try:
                times[key] = 0.0 if key == "min_time" and value in (0, "0", "0s") else \
                    parse_duration(value)
            except ValueError as err:
                raise self.error(f"measure.{key}", str(err)) from None
        graph = raw.get("graph", d.graph)
        if not isinstance(graph, bool):
            raise self.error("measure.graph", f"{shown(graph)} is not true or false")
        cache = raw.get("cache", "cold")
        if cache not in (*CACHE_MODES, "both"):
            raise self.error("measure.cache", f"{shown(cache)} is not a cache mode; allowed: cold, "
                             "warm, both")
        abandon = raw.get("abandon")
        if abandon is not None and (isinstance(abandon, bool) or not isinstance(
                abandon, (int, float)) or not 1 < abandon < math.inf):
            raise self.error("measure.abandon", f"{shown(abandon)} is not a factor above 1 "
                             "(e.g. 1.5: abandon configs 1.5x slower than the best)")
        timeout = raw.get("timeout", d.timeout_s)
        if timeout in (None, False, "off"):         # YAML reads a bare off as false
            timeout = None
        else:
            try:
                timeout = parse_duration(timeout)
            except ValueError as err:
                raise self.error("measure.timeout", f"{err}, or off") from None
        duty, duty_s = self.duty(raw.get("duty", d.duty), d.duty_s)
        spec = MeasureSpec(warmup=warmup, repeat=repeat, stop=stop, target=target,
                           min_samples=min_samples, min_time_s=times["min_time"],
                           max_time_s=times["max_time"], batch=batch, graph=graph,
                           abandon=float(abandon) if abandon is not None else None,
                           timeout_s=timeout, duty=duty, duty_s=duty_s)
        return spec, list(CACHE_MODES) if cache == "both" else [cache]

    def duty(self, raw: Any, default_s: float) -> tuple[str, float]:
        """``auto``, ``off`` or ``{cool|load: DURATION}`` (sweeper.measure._duty)."""
        allowed = "auto, off, {cool: 1s} or {load: 500ms}"
        if raw is False or raw == "off":          # YAML reads a bare off as false
            return "off", default_s
        if raw == "auto":
            return "auto", default_s
        if not (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("cool", "load")):
            raise self.error("measure.duty", f"{shown(raw)} is not a duty schedule; allowed: "
                             f"{allowed}")
        (kind, value), = raw.items()
        try:
            seconds = parse_duration(value)
        except ValueError as err:
            raise self.error(f"measure.duty.{kind}", f"{err}; allowed: {allowed}") from None
        return kind, seconds

    def whole(self, raw: dict[str, Any], key: str, default: int | None, least: int,
              most: int = MAX_COUNT, path: str = "measure") -> int:
        """``raw[key]`` (else ``default``), which must be a whole number from ``least`` to
        ``most``; otherwise a SpaceError at ``path.key``."""
        value = raw.get(key, default)
        if type(value) is not int or not least <= value <= most:
            raise self.error(f"{path}.{key}", f"{shown(value)} is not a whole number from "
                             f"{least} to {most}")
        return value

    def budget(self, raw: Any) -> Budget:
        """The ``budget:`` mapping as a :class:`Budget`, each limit checked against what it
        may be."""
        raw = self.keys(raw, "budget", BUDGET_KEYS)
        trials = self.whole(raw, "trials", None, 1, MAX_TRIALS, "budget") \
            if "trials" in raw else None
        time_s = None
        if "time" in raw:
            try:
                time_s = parse_duration(raw["time"])
            except ValueError as err:
                raise self.error("budget.time", str(err)) from None
        target = raw.get("target")
        if target is not None:
            try:
                target = _fraction(target) if not (isinstance(target, (int, float)) and
                                                   target == 1) else 1.0
            except ValueError:
                raise self.error("budget.target", f"{shown(target)} is not a fraction of the "
                                 "ceiling (e.g. 95%)") from None
        patience = self.whole(raw, "patience", None, 1, MAX_TRIALS, "budget") \
            if "patience" in raw else None
        return Budget(trials=trials, time_s=time_s, target=target, patience=patience)


def _fraction(value: Any) -> float:
    """``"0.5%"`` or ``0.005`` -> 0.005; raises ``ValueError`` outside (0, 1)."""
    if isinstance(value, str) and value.strip().endswith("%"):
        if not value.isascii():                 # float() reads full-width digits
            raise ValueError(value)
        value = float(value.strip()[:-1]) / 100
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(value)
    return float(value)


def shown(value: Any) -> str:
    """``repr(value)``, cut short: a hostile file's values can be thousands of digits."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** 40 else \
        f"a number of some {int(value.bit_length() * math.log10(2))} digits"
    return text if len(text) <= 60 else text[:57] + "..."
