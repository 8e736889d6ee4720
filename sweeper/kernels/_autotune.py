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
  best config depends on, and sweeper's problems are its dimensions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweeper.core import Dim
from sweeper.core._units import did_you_mean
from sweeper.errors import SweeperError
from sweeper.kernels._base import MetaParam

#: ``triton.Config`` fields sweeper cannot sweep, with the value that means "unused".
UNSUPPORTED = {"num_ctas": 1, "maxnreg": None, "pre_hook": None, "ir_override": None}
BLOCKS = (1, 2, 4, 8, 16, 32)         # num_warps a block of at most 1024 threads allows


def autotune_declaration(kernel: str, autotuner: Any, dims: Mapping[str, Dim],
                         meta: Mapping[str, MetaParam]) -> dict[str, Any]:
    """The class attributes an ``autotuned=`` short kernel adds: its meta-parameters
    (``meta``'s, else from the configs), the configs as zipped columns
    (``autotune_params``: axis -> one value per config) and the key (``autotune_key``);
    a :class:`SweeperError` naming the config or key name sweeper cannot take."""
    configs = getattr(autotuner, "configs", None)
    keys = getattr(autotuner, "keys", None)
    if not isinstance(configs, list) or not isinstance(keys, list) or \
            not callable(getattr(autotuner, "fn", None)):
        raise SweeperError(f"kernel {kernel}: autotuned= is {type(autotuner).__name__}, not "
                           "a @triton.autotune(configs=..., key=...) kernel")
    unknown = [k for k in keys if k not in dims]
    if unknown:
        raise SweeperError(f"kernel {kernel}: the autotune key {unknown[0]!r} is not a "
                           f"dimension of the kernel (dims: {', '.join(dims)}); declare "
                           f"it: dims={{{unknown[0]!r}: 1 << 20}}")
    function = getattr(getattr(autotuner, "base_fn", None), "__name__", "the jitted function")
    rows = _rows(kernel, configs, getattr(autotuner, "arg_names", None), function)
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    declared = dict(meta)
    for name, values in columns.items():
        if name != "block" and name not in declared:
            declared[name] = MetaParam(default=values[0], doc=f"{name} of the "
                                       "@triton.autotune configs")
    return {"meta_params": declared, "autotune_params": columns, "autotune_key": tuple(keys)}


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
        if not all(type(v) is int for v in kwargs.values()):
            raise SweeperError(f"{where}: every kwarg must be an integer, got {kwargs!r}")
        warps = getattr(config, "num_warps", 4)
        if warps not in BLOCKS:
            raise SweeperError(f"{where}: num_warps={warps!r}; allowed: "
                               f"{', '.join(map(str, BLOCKS))}")
        row = {"block": 32 * warps, "num_stages": int(getattr(config, "num_stages", 3)),
               **kwargs}
        if rows and set(row) != set(rows[0]):
            raise SweeperError(f"{where} sets {', '.join(sorted(kwargs))}; config 0 sets "
                               f"{', '.join(sorted(set(rows[0]) - {'block', 'num_stages'}))}:"
                               " every config must set the same kwargs")
        if row not in rows:
            rows.append(row)
    return rows
