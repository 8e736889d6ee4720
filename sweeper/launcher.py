"""``@sweeper.tuned_kernel``: a ``@triton.jit`` function that launches itself with its
tuned config, dispatched by the problem's shape.

On each call the values of the ``key`` arguments (the kernel's dimensions, as the study
named them) and the dtype of the first tensor argument pick the tuning entry: tuned at
exactly that shape, else the nearest tuned shape by the rule of :mod:`sweeper.dispatch`
(a :class:`~sweeper.errors.TuningWarning`, once per kernel, when it is far).  The grid is
computed for the call's shape and the launch gets ``num_warps`` and the meta-parameters.
With ``measure_untuned=True`` the first call at a shape that was not tuned times the
shape's dispatch candidates instead (:mod:`sweeper.launch_timing`) and keeps the fastest.

Each (shape, dtype) is looked up once, into a launcher bound to its grid and options; a
later call with the key and the tensors passed positionally costs one tuple, one dtype
read and one dict hit before the launch (``benchmarks/launcher_overhead.py --stub``
measures it).  The hot path reads the dtype where the first call found the first tensor;
a call with keywords, or without a tensor there, takes the full path, which finds the
same cached launcher.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any

from sweeper.core._api_errors import cut_at_call, cut_unless_kept
from sweeper.core._spelling import entry
from sweeper.errors import SweeperError
from sweeper.launch_timing import Measured, Timer, measure, resetter, timer_for
from sweeper.lookup import (
    Candidate,
    TunedConfig,
    Tuning,
    cache_problem,
    current_gpu,
    warn_for,
)
from sweeper.space import launch_text, show_dims

log = logging.getLogger(__name__)

#: (the key's values: the value for a one-name key, else their tuple; dtype)
ShapeKey = tuple[Any, Any]


class TunedKernel:
    """A ``@triton.jit`` function launched with the tuned config of each call's shape;
    ``config(*args)`` says which config the tuning file gives a call, ``measured`` what
    timing the candidates found per (shape, dtype)."""

    def __init__(self, fn: Any, tuning: Tuning, key: Sequence[str], name: str,
                 gpu: str | None, *, measure_untuned: bool = False,
                 restore: Sequence[str] = (), reset_to_zero: Sequence[str] = (),
                 timer: Timer | None = None, cache: str = "cold", named: bool = True
                 ) -> None:
        names = list(getattr(fn, "arg_names", ()))
        for what, asked in (("key", key), ("restore", restore),
                            ("reset_to_zero", reset_to_zero)):
            missing = [k for k in asked if k not in names]
            if not names or missing:
                raise SweeperError(f"tuned_kernel {name}: {what} {missing or list(asked)} "
                                   f"must name arguments of a @triton.jit function (it "
                                   f"has {', '.join(names) or 'none'})")
        self.fn, self.tuning, self.name, self.gpu = fn, tuning, name, gpu
        #: the cache mode of the entries looked up (:func:`~sweeper.lookup.tuned`'s)
        self.cache_mode = cache
        self.key = tuple(key)
        self.measure_untuned, self.timer = measure_untuned, timer
        self.restore, self.reset_to_zero = tuple(restore), tuple(reset_to_zero)
        self._names = names
        #: whether ``name`` was given, not the function's own taken for it
        self._named = named
        positions = [names.index(k) for k in key]
        self._values = itemgetter(*positions)
        self._needed = max(positions) + 1
        #: the most positional arguments the hot path takes: fewer than the position of
        #: the first argument a tuned config sets (a call giving it takes the full path,
        #: which refuses it)
        self._most = len(names)
        self._dtype_at = 0
        self._cache: dict[ShapeKey, Callable[..., Any]] = {}
        self._warned: set[str] = set()
        #: how many calls looked the tuning file up (the others hit the per-shape cache)
        self.lookups = 0
        #: per (shape, dtype) whose candidates were timed: what the timing found
        self.measured: dict[ShapeKey, Measured] = {}
        mine = [e for e in tuning.entries if e.is_for(name)]
        #: the dtypes this kernel was tuned at, which the dtype of a call is read by
        #: (:meth:`_dtype`)
        self._tuned_dtypes = frozenset(e.dtype for e in mine)
        by_dims = any(set(e.dims) == set(key) for e in mine)
        shaped = sorted({tuple(e.dims) for e in mine if len(e.dims) > 1})
        if shaped and not by_dims:      # a key that is not the dimensions tuned over
            dims = list(shaped[0])
            unsaid = next((d for d in dims if d not in names), dims[0])
            raise SweeperError(
                f"tuned_kernel {name}: key {list(key)} is not the dimensions it was tuned "
                f"over, {' / '.join(' '.join(d) for d in shaped)}; give key={dims!r}, "
                f"each an argument of the @triton.jit function (it has {', '.join(names)}); "
                "where one is not, launch it with sweeper.tuned(..., dims={...}) or the "
                "module `sweeper export --format triton` writes (configs(), grid(meta, "
                f"{unsaid}=...))")
        #: a 1-D kernel tuned by footprint is looked up by key value x itemsize (whatever
        #: other kernels of the file were tuned over)
        self._by_footprint = not by_dims and len(key) == 1

    def __repr__(self) -> str:
        """What a notebook shows: the kernel, its key, how many tuned entries it launches
        from and which file, and the shapes it has resolved so far."""
        entries = sum(e.is_for(self.name) for e in self.tuning.entries)
        return (f"<TunedKernel {self.name} of {getattr(self.fn, '__name__', self.fn)!s}: "
                f"key {', '.join(self.key)}; {entries} tuned "
                f"{'entry' if entries == 1 else 'entries'} in {self.tuning.path}; "
                f"{len(self._cache)} shape{'' if len(self._cache) == 1 else 's'} resolved>")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # no wrapper on the hot path (a cached shape's launch): a sweeper error of the
        # first call at a shape leaves with the traceback of the call alone, as
        # cut_at_call lets an API call's leave
        try:
            if not kwargs and self._needed <= len(args) <= self._most:
                try:
                    launch = self._cache[(self._values(args), args[self._dtype_at].dtype)]
                except (KeyError, AttributeError, IndexError, TypeError):
                    return self._call(args, kwargs)
                return launch(*args)
            return self._call(args, kwargs)
        except SweeperError as err:
            cut_unless_kept(err)
            raise err  # sweeper's own frames left out: SWEEPER_DEBUG=1 keeps them

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The full path: bind the arguments by name, find or prepare the launcher."""
        bound = self._bind(args, kwargs)
        shape = tuple(bound[k] for k in self.key)
        dtype = self._dtype(args, bound)
        cache_key = (shape[0] if len(shape) == 1 else shape, dtype)
        try:
            launch = self._cache.get(cache_key)
        except TypeError:               # a key value that is no size: _lookup says so
            launch = None
        if launch is not None:
            self._refuse_tuned_arguments(launch, bound)
            return launch(*args, **kwargs)
        try:                            # a shape's first call: what fails is said here
            return self._prepare(cache_key, shape, dtype, bound, args, kwargs)(*args,
                                                                              **kwargs)
        except RuntimeError as err:
            if "active drivers" not in str(err):
                raise
            raise SweeperError(                             # Triton: "0 active drivers"
                f"tuned_kernel {self.name}: Triton finds no GPU driver for this call "
                f"({err}); on the CPU set TRITON_INTERPRET=1 before triton is first "
                "imported, so that the kernel runs in Triton's interpreter") from None

    def _refuse_tuned_arguments(self, launch: Callable[..., Any],
                                bound: Mapping[str, Any]) -> None:
        """Refuse a call that gives a launch option or meta-parameter the tuned config
        sets: given by keyword it replaced the tuned value while the grid stayed the one
        computed for it (a larger ``BLOCK``'s grid left most of the output unwritten,
        silently), and given by position Triton failed with "multiple values"."""
        tuned = getattr(launch, "keywords", {})
        given = [k for k in bound if k in tuned]
        if given:
            k = given[0]
            raise SweeperError(
                f"tuned_kernel {self.name}: the call gives {k}={bound[k]!r}, which the tuned "
                f"config sets with its grid ({k}={tuned[k]!r}); allowed: leave "
                f"{', '.join(given)} out of the call (to launch with values of your own, "
                "call the @triton.jit function itself)")

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by name; every key argument must be there."""
        bound = dict(zip(self._names, args, strict=False)) | kwargs
        for k in self.key:
            if k not in bound:
                raise SweeperError(f"tuned_kernel {self.name}: the call gives no {k!r} "
                                   f"(key {list(self.key)})")
        return bound

    def _dtype(self, args: Sequence[Any], bound: Mapping[str, Any]) -> Any:
        """The dtype of the first tensor argument, in the kernel's order, at which an
        entry of this kernel was tuned, else of the first tensor argument (a gather's
        int64 index table ahead of its float32 data is not what it was tuned at); its
        position, when passed positionally, is where the hot path reads it from then on."""
        found = [(i, dtype) for i, name in enumerate(self._names)
                 if (dtype := getattr(bound.get(name), "dtype", None)) is not None]
        for i, dtype in sorted(found, key=lambda f: str(f[1]).removeprefix("torch.")
                               not in self._tuned_dtypes):
            if i < len(args):
                self._dtype_at = i
            return dtype
        raise SweeperError(f"tuned_kernel {self.name}: no tensor argument to read the "
                           "dtype from")

    @cut_at_call
    def config(self, *args: Any, **kwargs: Any) -> TunedConfig:
        """The tuned config the tuning file gives a call with these arguments (looked up
        afresh; with ``measure_untuned`` a shape that was not tuned may launch another of
        its candidates: ``measured``)."""
        bound = self._bind(args, kwargs)
        return self._lookup(tuple(bound[k] for k in self.key), self._dtype(args, bound))

    def _lookup(self, shape: tuple[Any, ...], dtype: Any) -> TunedConfig:
        # a numpy or other integral size counts as the int it is (a bool is no size)
        shape = tuple(int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                      else v for v in shape)
        if not all(type(v) is int and v > 0 for v in shape):
            raise SweeperError(f"tuned_kernel {self.name}: key {list(self.key)} must be "
                               f"positive integers, got {list(shape)}")
        try:
            if self._by_footprint:
                return self.tuning.config(self.name, dtype=dtype, gpu=self.gpu, warn=False,
                                          footprint=shape[0] * dtype.itemsize,
                                          cache=self.cache_mode)
            dims = dict(zip(self.key, shape, strict=True))
            return self.tuning.config(self.name, dtype=dtype, dims=dims, gpu=self.gpu,
                                      warn=False, cache=self.cache_mode)
        except SweeperError as err:
            # the function's own name taken for the kernel's, which the file lacks: its
            # winners may be kept under the name of the kernel that swept it (a
            # from_autotune study's sweeper.kernel, a space's module:attr)
            if self._named or any(e.is_for(self.name) for e in self.tuning.entries):
                raise
            raise SweeperError(f"{err}; tuned_kernel looks the winners up by the @triton.jit "
                               f"function's name, {self.name!r}, where name= is not given: "
                               "pass name= the kernel's name in the tuning file") from None

    def _prepare(self, cache_key: ShapeKey, shape: tuple[Any, ...], dtype: Any,
                 bound: Mapping[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> Callable[..., Any]:
        """Look a new (shape, dtype) up, warn once per kind of doubt, time the candidates
        of a shape that was not tuned when asked to, and cache the launcher."""
        config = self._lookup(shape, dtype)
        self.lookups += 1
        doubts = {"far"} if config.far else set()
        doubts |= {"architecture"} if config.by_architecture else set()
        if doubts - self._warned:
            warn_for(config, self.gpu or current_gpu(), self._asked(shape, dtype),
                     "" if self.measure_untuned else "; or pass measure_untuned=True to time "
                     "its candidates at a shape's first call")
            self._warned |= doubts
        launch = self._bound_launch(config)
        self._refuse_tuned_arguments(launch, bound)
        self._most = min([self._most] + [self._names.index(k) for k in config.meta
                                         if k in self._names])
        if self.measure_untuned and config.distance > 0 and len(config.candidates) > 1:
            launch = self._measure(cache_key, config, shape, bound, args, kwargs)
        self._cache[cache_key] = launch
        return launch

    def _bound_launch(self, config: TunedConfig | Candidate) -> Callable[..., Any]:
        """``fn[(grid,)]`` with the config's launch options bound: what a cached call
        runs; a meta-parameter the function does not take (it was renamed or dropped
        since the study) is refused, naming the study."""
        unknown = [k for k in config.meta if k not in self._names and k != "num_stages"]
        if unknown:
            study = f" (study {config.study})" if isinstance(config, TunedConfig) else ""
            raise SweeperError(
                f"tuned_kernel {self.name}: the tuned config{study} sets {unknown[0]}, which "
                f"is no argument of the @triton.jit function (it has "
                f"{', '.join(self._names)}); the kernel changed since it was tuned: tune it "
                "again and export the study")
        return partial(self.fn[(config.grid,)], **config.launch_options())

    def _measure(self, cache_key: ShapeKey, config: TunedConfig, shape: tuple[Any, ...],
                 bound: Mapping[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> Callable[..., Any]:
        """Time the shape's candidates (the pick first) on the call's own arguments and
        return the fastest's launcher; logs one line saying what was chosen."""
        candidates: Sequence[Candidate] = config.candidates
        launchers = [self._bound_launch(c) for c in candidates]
        tensors = [v for v in bound.values() if hasattr(v, "dtype")]
        reset = resetter([self._tensor(bound, n) for n in self.restore],
                         [self._tensor(bound, n) for n in self.reset_to_zero])
        names = [launch_text(c.grid, c.block, c.meta) for c in candidates]
        found = measure([partial(launch, *args, **kwargs) for launch in launchers], reset,
                        self.timer or timer_for(tensors), names=names)
        self.measured[cache_key] = found
        pick, best = found.seconds[0], found.seconds[found.chosen] or 0.0
        than_pick = " (the pick)" if found.chosen == 0 else \
            f", the pick {pick * 1e3:.4g} ms" if pick else ", the pick failed"
        failed = "" if not found.failures else \
            f"; {len(found.failures)} failed ({names[found.failures[0][0]]}: " \
            f"{found.failures[0][1]})"
        log.info("tuned_kernel %s %s %s: timed %d of %d candidates, chose %s: %.4g ms%s%s",
                 self.name, config.dtype, show_dims(self._asked(shape, None)), found.ran,
                 len(candidates), names[found.chosen], best * 1e3, than_pick, failed)
        return launchers[found.chosen]

    def _tensor(self, bound: Mapping[str, Any], name: str) -> Any:
        """The tensor argument ``name`` of a call, to restore around timed launches."""
        value = bound.get(name)
        if not hasattr(value, "clone"):
            raise SweeperError(f"tuned_kernel {self.name}: {name!r} is to be restored "
                               f"around timed launches but the call gives "
                               f"{type(value).__name__}, not a tensor")
        return value

    def _asked(self, shape: tuple[Any, ...], dtype: Any) -> dict[str, int]:
        """The asked problem as the tuning file keys it: footprint, else dimensions."""
        if self._by_footprint and dtype is not None:
            return {"footprint": shape[0] * dtype.itemsize}
        return dict(zip(self.key, shape, strict=True))


@cut_at_call
@entry(spelled=False, needs={
    "key": "the arguments that are the problem's dimensions, as the study named them, "
           "such as ['n']"})
def tuned_kernel(tuning: str | Path | None = None, *, key: Sequence[str],
                 name: str | None = None, gpu: str | None = None,
                 measure_untuned: bool = False, restore: Sequence[str] = (),
                 reset_to_zero: Sequence[str] = (), timer: Timer | None = None,
                 cache: str = "cold") -> Callable[[Any], TunedKernel]:
    """Decorate a ``@triton.jit`` function so that calling it launches with its tuned
    config: ``tuning`` is the tuning file (default: ``$SWEEPER_TUNING`` or
    ``studies/tuning.json``), ``key`` the arguments that are the problem's dimensions
    (as the study named them), ``name`` the kernel's name in the tuning file (default:
    the function's), ``gpu`` the GPU to look up (default: this one).

    ``measure_untuned=True``: the first call at a shape that was not tuned times the
    shape's dispatch candidates on its own arguments and launches the fastest from then
    on (one ``INFO`` line on the ``sweeper.launcher`` logger says which); off by default,
    because those launches write the call's outputs many times: name in ``restore`` the
    arguments the kernel reads and writes and in ``reset_to_zero`` those it accumulates
    into.  ``timer``: how a candidate is timed (default: CUDA events on a GPU,
    ``perf_counter`` on the CPU; :mod:`sweeper.launch_timing`).  ``cache``: the cache
    mode of the winners to launch (:func:`~sweeper.lookup.tuned`'s: ``cold`` unless
    told; another is refused here, as it decorates)."""
    wrong = cache_problem(cache)
    if wrong is not None:
        raise SweeperError(f"tuned_kernel: {wrong}")
    # refused as it decorates, each by its keyword: a wrong type would fail at the first
    # call in Triton's or the lookup's depths, or ("no" being true) be taken the other way
    for what, value, types, allowed in (
            ("tuning", tuning, (str, Path, type(None)), "the tuning file's path (text or a "
             "Path), or None for $SWEEPER_TUNING or studies/tuning.json"),
            ("name", name, (str, type(None)), "the kernel's name in the tuning file (text), "
             "or None for the function's"),
            ("gpu", gpu, (str, type(None)), "a GPU's name (text), or None for this one"),
            ("measure_untuned", measure_untuned, (bool,), "True or False")):
        if not isinstance(value, types):
            raise SweeperError(f"tuned_kernel: {what}={value!r}; allowed: {allowed}")
    if timer is not None and not callable(timer):
        raise SweeperError(f"tuned_kernel: timer={timer!r}; allowed: a function timing a "
                           "launch (sweeper.launch_timing's Timer), or None for the default")
    table = Tuning(tuning)
    for what, names in (("key", key), ("restore", restore), ("reset_to_zero", reset_to_zero)):
        if isinstance(names, str) or (what == "key" and not names):
            raise SweeperError(f"tuned_kernel: {what} must be a list of argument names, "
                               f"got {names!r}")

    @cut_at_call           # the decorator a user applies is a call of the API too
    def decorate(fn: Any) -> TunedKernel:
        _refuse_autotuner(fn)
        return TunedKernel(fn, table, key, name or _function_name(fn), gpu,
                           measure_untuned=measure_untuned, restore=restore,
                           reset_to_zero=reset_to_zero, timer=timer, cache=cache,
                           named=name is not None)
    return decorate


def _wrapped(fn: Any) -> list[Any]:
    """``fn`` and what it wraps in turn (a ``@triton.heuristics``' or a
    ``@triton.autotune``'s ``fn``), down to the ``@triton.jit`` function."""
    chain = [fn]
    while len(chain) < 8 and not hasattr(chain[-1], "__name__") and \
            getattr(chain[-1], "fn", None) is not None:
        chain.append(chain[-1].fn)
    return chain


def _function_name(fn: Any) -> str:
    """The name of the function ``fn`` is or wraps (a ``@triton.heuristics`` has none of
    its own)."""
    return str(getattr(_wrapped(fn)[-1], "__name__", "kernel"))


def _refuse_autotuner(fn: Any) -> None:
    """Refuse a ``@triton.autotune`` function, or a ``@triton.heuristics`` over one, where
    a ``@triton.jit`` one is to be launched with tuned configs: each launch would give the
    autotuner the tuned meta-parameters, which Triton refuses as clashing with its own
    configs at the first call.  Said as it decorates, with the function it wraps to
    decorate instead."""
    if not any(c.__name__ == "Autotuner" and c.__module__.startswith("triton.")
               for wrapper in _wrapped(fn) for c in type(wrapper).__mro__):
        return
    inner = _function_name(fn)
    raise SweeperError(
        f"tuned_kernel: {inner} is a @triton.autotune function, whose own configs would "
        "clash with the tuned config's at each launch; allowed: a @triton.jit function, "
        f"such as the one it wraps: sweeper.tuned_kernel(..., name=NAME)({inner}.fn), NAME "
        "the kernel as the tuning file names it (of a from_autotune study, the "
        "sweeper.kernel that launches it)")


__all__ = ["TunedKernel", "tuned_kernel"]
