"""``@sweeper.tuned_kernel``: a ``@triton.jit`` function that launches itself with its
tuned config, dispatched by the problem's shape.

On each call the values of the ``key`` arguments (the kernel's dimensions, as the study
named them) and the dtype of the first tensor argument pick the tuning entry: tuned at
exactly that shape, else the nearest tuned shape by the rule of :mod:`sweeper.matching`
(a :class:`~sweeper.errors.TuningWarning`, once per kernel, when it is far).  The grid is
computed for the call's shape and the launch gets ``num_warps`` and the meta-parameters.
Each (shape, dtype) is looked up once: later calls cost one dict lookup
(``benchmarks/launcher_overhead.py`` measures it against a plain launch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sweeper.errors import SweeperError
from sweeper.lookup import TunedConfig, Tuning, current_gpu, warn_for

#: (key values, dtype) -> (grid, launch keyword arguments)
Launch = tuple[tuple[int], dict[str, int]]


class TunedKernel:
    """A ``@triton.jit`` function launched with the tuned config of each call's shape;
    ``config(*args)`` says which config a call would use."""

    def __init__(self, fn: Any, tuning: Tuning, key: Sequence[str], name: str,
                 gpu: str | None) -> None:
        names = list(getattr(fn, "arg_names", ()))
        missing = [k for k in key if k not in names]
        if not names or missing:
            raise SweeperError(f"tuned_kernel {name}: key {missing or list(key)} must name "
                               f"arguments of a @triton.jit function (it has "
                               f"{', '.join(names) or 'none'})")
        self.fn, self.tuning, self.name, self.gpu = fn, tuning, name, gpu
        self.key = tuple(key)
        self._positions = tuple(names.index(k) for k in key)
        self._names = names
        self._cache: dict[tuple[Any, ...], Launch] = {}
        self._warned: set[str] = set()
        #: how many calls looked the tuning file up (the others hit the per-shape cache)
        self.lookups = 0
        by_dims = any(set(e.get("dims", {})) == set(key) for e in tuning.entries)
        #: a 1-D kernel tuned by footprint is looked up by key value x itemsize
        self._by_footprint = not by_dims and len(key) == 1

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) <= max(self._positions):
            shape = self._bound(args, kwargs)
        else:
            shape = tuple(args[i] for i in self._positions)
        dtype = next((a.dtype for a in args if hasattr(a, "dtype")), None)
        try:
            grid, options = self._cache[(shape, dtype)]
        except KeyError:
            grid, options = self._launch(shape, dtype)
        return self.fn[grid](*args, **kwargs, **options)

    def _bound(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The key's values from positional and keyword arguments."""
        values = dict(zip(self._names, args, strict=False)) | kwargs
        try:
            return tuple(values[k] for k in self.key)
        except KeyError as err:
            raise SweeperError(f"tuned_kernel {self.name}: the call gives no {err.args[0]!r} "
                               f"(key {list(self.key)})") from None

    def config(self, *args: Any, **kwargs: Any) -> TunedConfig:
        """The tuned config a call with these arguments uses (looked up afresh)."""
        shape = self._bound(args, kwargs)
        dtype = next((a.dtype for a in args if hasattr(a, "dtype")), None)
        return self._lookup(shape, dtype)

    def _lookup(self, shape: tuple[Any, ...], dtype: Any) -> TunedConfig:
        if dtype is None:
            raise SweeperError(f"tuned_kernel {self.name}: no tensor argument to read the "
                               "dtype from")
        if not all(type(v) is int and v > 0 for v in shape):
            raise SweeperError(f"tuned_kernel {self.name}: key {list(self.key)} must be "
                               f"positive integers, got {list(shape)}")
        if self._by_footprint:
            return self.tuning.config(self.name, dtype=dtype, gpu=self.gpu, warn=False,
                                      footprint=shape[0] * dtype.itemsize)
        dims = dict(zip(self.key, shape, strict=True))
        return self.tuning.config(self.name, dtype=dtype, dims=dims, gpu=self.gpu, warn=False)

    def _launch(self, shape: tuple[Any, ...], dtype: Any) -> Launch:
        """Look a new (shape, dtype) up, warn once per kind of doubt, and cache it."""
        config = self._lookup(shape, dtype)
        self.lookups += 1
        doubts = {"far"} if config.far else set()
        doubts |= {"architecture"} if config.by_architecture else set()
        if doubts - self._warned:
            asked = {"footprint": shape[0] * dtype.itemsize} if self._by_footprint else \
                dict(zip(self.key, shape, strict=True))
            warn_for(config, self.gpu or current_gpu(), asked)
            self._warned |= doubts
        launch: Launch = ((config.grid,), config.launch_options())
        self._cache[(shape, dtype)] = launch
        return launch


def tuned_kernel(tuning: str | Path | None = None, *, key: Sequence[str],
                 name: str | None = None, gpu: str | None = None
                 ) -> Callable[[Any], TunedKernel]:
    """Decorate a ``@triton.jit`` function so that calling it launches with its tuned
    config: ``tuning`` is the tuning file (default: ``$SWEEPER_TUNING`` or
    ``studies/tuning.json``), ``key`` the arguments that are the problem's dimensions
    (as the study named them), ``name`` the kernel's name in the tuning file (default:
    the function's), ``gpu`` the GPU to look up (default: this one)."""
    table = Tuning(tuning)
    if isinstance(key, str) or not key:
        raise SweeperError(f"tuned_kernel: key must be a list of argument names, got {key!r}")

    def wrap(fn: Any) -> TunedKernel:
        return TunedKernel(fn, table, key, name or fn.__name__, gpu)

    return wrap


__all__ = ["TunedKernel", "tuned_kernel"]
