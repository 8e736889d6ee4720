"""An existing ``@triton.autotune`` kernel as a sweeper space, without rewriting it.

Triton's autotuner holds what a space needs: its ``configs`` (each a ``triton.Config``
of meta-parameter kwargs, ``num_warps`` and ``num_stages``) and its ``key`` (the
arguments whose values make a new problem).  It does not hold how the kernel is launched
or what its inputs are, so a short kernel (:func:`sweeper.kernel`) names it with
``autotuned=`` and launches its ``.fn`` (the plain jitted function, which does not tune
on its own).  Then:

- each config kwarg becomes a meta-parameter (its default the first config's value),
  ``num_warps`` the ``block`` axis (32 threads a warp) and ``num_stages`` a
  meta-parameter passed to the launch as Triton's option of that name;
- the configs become one zipped group of axes (:attr:`ShortKernel.autotune_params`), so a
  space with ``from_autotune:`` runs exactly the listed configs, as the autotuner would;
- each ``key`` name must be a dimension the short kernel declares: the key says what the
  best config depends on, and sweeper's problems are its dimensions;
- what the autotuner does around each launch it benchmarks is done around each launch
  sweeper makes (:class:`Hooks`): a config's ``pre_hook``, then the autotuner's
  ``pre_hook`` or, without one, ``reset_to_zero`` (the named arguments zeroed) and
  ``restore_value`` (the named arguments put back as they were before the first launch
  on these inputs), inside the launch and so inside its timed region, as Triton's
  ``do_bench`` times them;
- ``prune_configs_by`` (``early_config_prune``, ``perf_model`` and ``top_k``) is applied
  per problem, by Triton's own ``prune_configs``, to the arguments the launch passes
  (captured without launching), before the problem's first config is measured: a config
  it drops is skipped with the reason (:meth:`Hooks.pruned`);
- a ``post_hook`` is refused: it runs after each launch, commonly to undo it, and sweeper
  verifies what a launch leaves in its outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sweeper.core import Dim
from sweeper.core._units import did_you_mean
from sweeper.errors import RefusalFailed, SweeperError, raised
from sweeper.kernels._base import MetaParam

#: ``triton.Config`` fields sweeper cannot sweep, with the value that means "unused".
UNSUPPORTED = {"num_ctas": 1, "maxnreg": None, "ir_override": None}
BLOCKS = (1, 2, 4, 8, 16, 32)         # num_warps a block of at most 1024 threads allows


def autotune_declaration(kernel: str, autotuner: Any, dims: Mapping[str, Dim],
                         meta: Mapping[str, MetaParam]) -> dict[str, Any]:
    """The class attributes an ``autotuned=`` short kernel adds: its meta-parameters
    (``meta``'s, else from the configs), the configs as zipped columns
    (``autotune_params``: axis -> one value per config) and the key (``autotune_key``);
    a :class:`SweeperError` naming the config or key name sweeper cannot take."""
    configs = getattr(autotuner, "configs", None)
    keys = getattr(autotuner, "keys", None)
    # its fn: the jitted function, or a @triton.heuristics over it (which is no callable)
    if not isinstance(configs, list) or not isinstance(keys, list) or \
            getattr(autotuner, "fn", None) is None:
        raise SweeperError(f"kernel {kernel}: autotuned= is {type(autotuner).__name__}, not "
                           "a @triton.autotune(configs=..., key=...) kernel")
    unknown = [k for k in keys if k not in dims]
    if unknown:
        raise SweeperError(f"kernel {kernel}: the autotune key {unknown[0]!r} is not a "
                           f"dimension of the kernel (dims: {', '.join(dims)}); declare "
                           f"it: dims={{{unknown[0]!r}: 1 << 20}}")
    function = getattr(getattr(autotuner, "base_fn", None), "__name__", "the jitted function")
    if getattr(autotuner, "user_defined_post_hook", False):
        raise SweeperError(f"kernel {kernel}: @triton.autotune(post_hook=...) of {function} "
                           "is not supported: it runs after each launch, commonly to undo "
                           "it, and sweeper verifies what a launch leaves in its outputs; "
                           "drop post_hook= (sweeper honours reset_to_zero=, restore_value=, "
                           "pre_hook= and a config's pre_hook)")
    rows = _rows(kernel, configs, getattr(autotuner, "arg_names", None), function)
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    declared = dict(meta)
    for name, values in columns.items():
        if name != "block" and name not in declared:
            declared[name] = MetaParam(default=values[0], doc=f"{name} of the "
                                       "@triton.autotune configs")
    return {"meta_params": declared, "autotune_params": columns, "autotune_key": tuple(keys),
            "autotune_hooks": Hooks.of(kernel, autotuner, configs, tuple(columns), function)}


class _Captured(Exception):
    """Raised in place of the autotuned function's launch, carrying its arguments."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.args_, self.kwargs = args, kwargs


@dataclass(frozen=True)
class Hooks:
    """What a ``@triton.autotune`` does around each launch it benchmarks, and how it
    prunes its configs, for sweeper to do the same: ``function`` is the autotuner's
    ``fn`` (what the launch calls), ``arg_names`` its arguments; ``config_hooks`` each
    config's ``pre_hook`` by its row (:func:`row_of`); ``autotuner`` the autotuner
    itself, whose ``prune_configs`` applies ``prune_configs_by``."""

    kernel: str
    function: Any
    name: str
    arg_names: tuple[str, ...]
    columns: tuple[str, ...]
    reset_to_zero: tuple[str, ...] = ()
    restore_value: tuple[str, ...] = ()
    pre_hook: Callable[..., Any] | None = None
    config_hooks: Mapping[tuple[int, ...], Callable[..., Any]] = field(default_factory=dict)
    autotuner: Any = None
    rows: tuple[tuple[int, ...], ...] = ()

    @classmethod
    def of(cls, kernel: str, autotuner: Any, configs: list[Any], columns: tuple[str, ...],
           function: str) -> Hooks | None:
        """The hooks and pruning ``autotuner`` declares, or ``None`` where it declares none
        (a stand-in read from the source declares none: ``plan`` launches nothing)."""
        prunes = any(getattr(autotuner, a, None) is not None
                     for a in ("early_config_prune", "perf_model"))
        seen: dict[tuple[int, ...], Callable[..., Any] | None] = {}
        for i, config in enumerate(configs):
            hook = getattr(config, "pre_hook", None)
            row = _row_key(_row(config), columns)
            if seen.setdefault(row, hook) is not hook:
                raise SweeperError(f"kernel {kernel}: autotune config {i} ({config}) is "
                                   "an earlier config's with another pre_hook; sweeper runs "
                                   "each config once: give each config once")
        hooks = {row: hook for row, hook in seen.items() if hook is not None}
        pre_hook = autotuner.pre_hook if getattr(autotuner, "user_defined_pre_hook", False) \
            else None
        reset = tuple(getattr(autotuner, "reset_to_zero", None) or ())
        restore = tuple(getattr(autotuner, "restore_value", None) or ())
        if not (prunes or hooks or pre_hook or reset or restore):
            return None
        return cls(kernel, autotuner.fn, function, tuple(autotuner.arg_names), columns,
                   reset, restore, pre_hook, hooks, autotuner if prunes else None,
                   tuple(_row_key(_row(c), columns) for c in configs))

    def before(self, nargs: dict[str, Any], row: tuple[int, ...],
               saved: dict[str, Any]) -> None:
        """What the autotuner runs before a launch it benchmarks (``_bench``'s
        ``kernel_call``): the config's ``pre_hook``, then the autotuner's, or without one
        ``restore_value``'s tensors put back as ``saved`` holds them (``saved`` takes them
        at the first launch) and ``reset_to_zero``'s zeroed."""
        hook = self.config_hooks.get(row)
        if hook is not None:
            hook(nargs)
        if self.pre_hook is not None:
            self.pre_hook(nargs)
            return
        for name in self.restore_value:
            tensor = nargs.get(name)
            if tensor is None:
                continue
            if name in saved:
                tensor.copy_(saved[name])
            else:
                saved[name] = tensor.clone()
        for name in self.reset_to_zero:
            if nargs.get(name) is not None:
                nargs[name].zero_()

    @contextmanager
    def around(self, before: Callable[[tuple[Any, ...], dict[str, Any]], None] | None
               ) -> Iterator[list[int]]:
        """Within it, each launch of :attr:`function` (``fn[grid](...)``) calls ``before``
        with its arguments first (``None``: raises :class:`_Captured` instead of
        launching); yields a list holding the count of launches made.  A launch that
        compiles only (``warmup``) calls nothing."""
        target, count = self.function, [0]
        own = target.__dict__.get("run")
        method = target.run

        def run(*args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                count[0] += 1
                if before is None:
                    raise _Captured(args, kwargs)
                before(args, kwargs)
            return method(*args, grid=grid, warmup=warmup, **kwargs)

        target.run = run
        try:
            yield count
        finally:
            if own is None:
                del target.run
            else:
                target.run = own

    def launch(self, call: Callable[[], Any], row: tuple[int, ...], saved: dict[str, Any],
               compiling: bool = False) -> None:
        """``call()``, the short kernel's launch, with :meth:`before` run before each
        launch of the autotuned function it makes; a launch that made none is refused
        (its hooks could not run), unless it only ``compiling`` ahead."""
        def before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            self.before({**dict(zip(self.arg_names, args, strict=False)), **kwargs}, row,
                        saved)

        with self.around(before) as count:
            call()
        if not count[0] and not compiling:
            raise SweeperError(f"the launch of kernel {self.kernel} called no "
                               f"{self.name}[grid](...), the function its @triton.autotune "
                               "wraps, so its hooks (reset_to_zero, restore_value, "
                               "pre_hook) could not run before it; launch "
                               f"{self.name} through the autotuner's .fn")

    def pruned(self, call: Callable[[], Any]) -> tuple[set[tuple[int, ...]], str]:
        """The rows of the configs ``prune_configs_by`` keeps for the problem ``call()``
        (the short kernel's launch) passes, as Triton prunes them at the first launch of a
        key: ``early_config_prune(configs, nargs, **kwargs)``, then ``perf_model``'s
        ``top_k``, with ``nargs`` the launch's positional arguments by name and
        ``kwargs`` its keywords but the config's; and a note on kept configs that are
        none of the listed (sweeper runs only those).  :class:`RefusalFailed` where the
        user's code failed, saying whose: the launch's (it raised before it reached
        :attr:`function`, or never called it) or the prune's."""
        with self.around(None):
            try:
                call()
            except _Captured as captured:
                args, kwargs = captured.args_, captured.kwargs
            except Exception as err:
                raise RefusalFailed(raised("the kernel's launch", err)) from err
            else:
                raise RefusalFailed(f"the launch of kernel {self.kernel} called no "
                                    f"{self.name}[grid](...), so prune_configs_by has no "
                                    "arguments to prune with")
        own = {"num_warps", "num_stages", "num_ctas", "maxnreg", *self.columns}
        tuner = self.autotuner
        tuner.nargs = dict(zip(self.arg_names, args, strict=False))
        try:
            kept = tuner.prune_configs({k: v for k, v in kwargs.items() if k not in own})
        except Exception as err:
            raise RefusalFailed(raised(f"{self.name}'s prune_configs_by", err)) from err
        finally:
            tuner.nargs = None
        rows = {_row_key(_row(c), self.columns) for c in kept}
        new = len(rows - set(self.rows))
        return rows, (f"; {new} config(s) it returned are none of the listed, which sweeper "
                      "does not run" if new else "")


def row_of(config: Any, columns: tuple[str, ...]) -> tuple[int, ...]:
    """The autotune row (values of ``columns``) of sweeper's ``config``."""
    return tuple(config.block if c == "block" else config.meta.get(c, -1) for c in columns)


def _row(config: Any) -> dict[str, Any]:
    return {"block": 32 * getattr(config, "num_warps", 4),
            "num_stages": getattr(config, "num_stages", 3), **getattr(config, "kwargs", {})}


def _row_key(row: Mapping[str, Any], columns: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(row.get(c, -1) for c in columns)


def _rows(kernel: str, configs: list[Any], arg_names: Any = None,
          function: str = "the jitted function") -> list[dict[str, int]]:
    """One row a config (``block``, ``num_stages`` and the kwargs), in the configs' order,
    each once; a kwarg that names none of ``arg_names`` (the arguments of the jitted
    ``function``, where the autotuner knows them) is refused: a misspelt constexpr would fail every
    config's launch."""
    rows: list[dict[str, int]] = []
    for i, config in enumerate(configs):
        where = f"kernel {kernel}: autotune config {i} ({config})"
        unknown = [k for k in getattr(config, "kwargs", {})
                   if isinstance(arg_names, list) and k not in arg_names]
        if unknown:
            raise SweeperError(f"{where} sets {unknown[0]}, which is not an argument of "
                               f"{function}; allowed: {', '.join(arg_names or ())}"
                               f"{did_you_mean(unknown[0], arg_names or ())}")
        for attr, unused in UNSUPPORTED.items():
            if getattr(config, attr, unused) != unused:
                raise SweeperError(f"{where} sets {attr}; sweeper sweeps kwargs, num_warps "
                                   f"and num_stages only ({attr} must stay {unused})")
        kwargs = getattr(config, "kwargs", {})
        bad = next((k for k, v in kwargs.items() if type(v) is not int), None)
        if bad is not None:
            switch = " (a switch as 1 or 0, which `if FLAG:` reads as True and False)" \
                if isinstance(kwargs[bad], bool) else ""
            raise SweeperError(f"{where}: {bad}={kwargs[bad]!r}; allowed: an integer for "
                               f"every kwarg{switch}")
        warps = getattr(config, "num_warps", 4)
        if warps not in BLOCKS:
            raise SweeperError(f"{where}: num_warps={warps!r}; allowed: "
                               f"{', '.join(map(str, BLOCKS))}")
        row = {**_row(config), "num_stages": int(getattr(config, "num_stages", 3))}
        if rows and set(row) != set(rows[0]):
            raise SweeperError(f"{where} sets {', '.join(sorted(kwargs))}; config 0 sets "
                               f"{', '.join(sorted(set(rows[0]) - {'block', 'num_stages'}))}:"
                               " every config must set the same kwargs")
        if row not in rows:
            rows.append(row)
    return rows
