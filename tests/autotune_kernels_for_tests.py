"""``@triton.autotune`` kernels with hooks and pruning, as short kernels name them
(``autotuned=``), for ``tests/test_from_autotune.py``."""

from __future__ import annotations

import triton
import triton.language as tl

import sweeper

#: Every call of a hook below: (hook, BLOCK) for a config's, (hook,) for the autotuner's.
CALLS: list[tuple[object, ...]] = []


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w)
                          for b in (64, 128) for w in (1, 2)],
                 key=["n"], reset_to_zero=["total"])
@triton.jit
def _sum_kernel(x, total, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total, tl.sum(tl.load(x + offsets, mask=offsets < n, other=0.0)))


@sweeper.kernel(inputs={"x": "n"}, outputs={"total": "1"}, dims={"n": 2048},
                reference=lambda x: x.sum().reshape(1),
                tolerance={"float32": (1e-4, 1e-3)}, autotuned=_sum_kernel)
def total(x, total, config):
    """The sum of ``x``, each program adding its part to ``total`` atomically."""
    _sum_kernel.fn[(config.grid,)](x, total, x.numel(), num_warps=config.num_warps,
                                   **config.meta)


def _keep_small(configs, named_args, **kwargs):
    """Triton's ``early_config_prune``: the configs of at most n // 8 elements a program."""
    CALLS.append(("prune", named_args["n_elements"], tuple(sorted(kwargs))))
    return [c for c in configs if c.kwargs["BLOCK_SIZE"] <= named_args["n_elements"] // 8]


@triton.jit
def _times_two(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def _doubling(name: str, autotuner, refuse=None, launch=None):
    """out = 2x, launched through ``autotuner``'s function (``refuse``: its ``refuse=``;
    ``launch``: a launch function of its own in place of that one)."""
    def through_autotuner(x, out, config):
        autotuner.fn[(config.grid,)](x, out, x.numel(), num_warps=config.num_warps,
                                     **config.meta)
    return sweeper.kernel(launch or through_autotuner, name=name, inputs={"x": "n_elements"},
                          outputs={"out": "n_elements"}, dims={"n_elements": 2048},
                          grid="cdiv(n_elements, BLOCK_SIZE)",
                          footprint_bytes="n_elements * itemsize", reference=lambda x: 2 * x,
                          autotuned=autotuner, refuse=refuse)


#: 8 configs, of which ``early_config_prune`` keeps those of BLOCK_SIZE <= n // 8
pruned = _doubling("pruned", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=w)
             for b in (64, 128, 256, 512) for w in (1, 2)],
    key=["n_elements"], prune_configs_by={"early_config_prune": _keep_small})(_times_two))
#: ``pruned``'s 8 configs, of which its declaration's refuse= turns down BLOCK_SIZE=64
pruned_and_refused = _doubling("pruned_and_refused", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=w)
             for b in (64, 128, 256, 512) for w in (1, 2)],
    key=["n_elements"], prune_configs_by={"early_config_prune": _keep_small})(_times_two),
    refuse=lambda config: "BLOCK_SIZE=64 is too small" if config.meta["BLOCK_SIZE"] == 64
    else None)


def _prune_fails(configs, named_args, **kwargs):
    """An ``early_config_prune`` that raises a message of two lines."""
    raise ValueError("no configs for this n_elements\nsee the table in the docs")


#: 2 configs, whose prune raises: none is kept
prune_fails = _doubling("prune_fails", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=1) for b in (64, 128)],
    key=["n_elements"], prune_configs_by={"early_config_prune": _prune_fails})(_times_two))
def _prune_fails_past_1024(configs, named_args, **kwargs):
    """An ``early_config_prune`` that keeps every config up to 1024 elements, and has a bug
    past them."""
    return configs if named_args["n_elements"] <= 1024 else configs[len(configs) + 1]


#: 2 configs, whose prune keeps both up to 1024 elements and raises IndexError past them
prune_fails_past_1024 = _doubling("prune_fails_past_1024", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=1) for b in (64, 128)],
    key=["n_elements"],
    prune_configs_by={"early_config_prune": _prune_fails_past_1024})(_times_two))


def _launch_with_a_bug(x, out, config):
    """A launch that raises NameError before it reaches the autotuned function."""
    _times_two[(config.grid,)](x, out, n_elements, **config.meta)  # noqa: F821 - the bug


def _launch_of_nothing(x, out, config):
    """A launch that never calls the autotuned function."""


#: 2 configs and ``pruned``'s sound prune, launched by :func:`_launch_with_a_bug`
launch_fails = _doubling("launch_fails", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=1) for b in (64, 128)],
    key=["n_elements"], prune_configs_by={"early_config_prune": _keep_small})(_times_two),
    launch=_launch_with_a_bug)
#: 2 configs and ``pruned``'s sound prune, launched by :func:`_launch_of_nothing`
launch_calls_nothing = _doubling("launch_calls_nothing", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=1) for b in (64, 128)],
    key=["n_elements"], prune_configs_by={"early_config_prune": _keep_small})(_times_two),
    launch=_launch_of_nothing)
#: 6 configs, of which the 2 its perf_model rates fastest are kept (top_k=2)
modelled = _doubling("modelled", triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": b}, num_warps=w)
             for b in (64, 128, 256) for w in (1, 2)],
    key=["n_elements"],
    prune_configs_by={"perf_model": lambda **kw: kw["BLOCK_SIZE"], "top_k": 2})(_times_two))


def _note(hook: str):
    def record(nargs, reset_only=False):
        CALLS.append((hook, nargs["BLOCK"]) if hook == "config" else (hook,))
    return record


@triton.jit
def _double_in_place(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


def _in_place(name: str, autotuner):
    """x *= 2 in place, launched through ``autotuner``'s function."""
    def launch(x, config):
        autotuner.fn[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
    return sweeper.kernel(launch, name=name, inputs={"x": "n"}, outputs=["x"],
                          dims={"n": 1024}, reference=lambda x: 2 * x, autotuned=autotuner)


#: with the autotuner's pre_hook (in place of restore_value's, as in Triton) and a config's
hooked = _in_place("hooked", triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, pre_hook=_note("config")),
             triton.Config({"BLOCK": 128})],
    key=["n"], restore_value=["x"], pre_hook=_note("autotuner"))(_double_in_place))
#: declared with restore_value=["x"]
restored = _in_place("restored", triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["n"], restore_value=["x"])(_double_in_place))


@triton.jit
def _double_maybe_masked(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(x + offsets, tl.load(x + offsets) * 2)
    else:
        tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


#: over @triton.heuristics, which sets EVEN from n and each config's BLOCK, and with a
#: prune (the heuristics object between them is the autotuner's fn)
heuristic = _in_place("heuristic", triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["n"], restore_value=["x"],
    prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs})(
        triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(
            _double_maybe_masked)))
