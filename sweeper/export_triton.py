"""``sweeper export STUDY --format triton``: the winners as an importable Python module.

The module needs ``triton`` (and the standard library) only, so it ships beside the
kernel it tunes and runs where sweeper is not installed (where it is, it is imported for
the one check of the kernel's source below); its data is one JSON literal
read back with ``ast.literal_eval`` when another GPU's study is exported into the same
file (one module per kernel, one section per GPU; another study of a GPU already there
adds the winners of its problems, :func:`merged_section`).  It gives, per GPU:

- ``WINNERS[gpu]``: each problem's winner (the interleaved finals' where they ran, with
  the median the report shows) as a ``triton.Config``, with its dims and grid, and (where
  the study recorded it) the hash of the kernel's source it was measured on
  (``source_hash``, as a tuning entry keeps it) and when (``tuned``), and where its
  final has not run yet, the sweep's winner with the ``note`` a tuning entry has; each
  winner's ``cache`` says whether it was measured cold (L2 flushed) or warm, and a GPU's
  winners are of one mode (a study of the other is refused); a winner an interpreter
  study measured smaller than its space asked (shrunk to fit 16 KiB) keeps the asked
  problem beside the one measured (``asked_dims``, ``asked_footprint``, as a tuning entry
  does), and ``pick`` and ``configs`` take either as the problem it was tuned at;
- ``configs(k=4, gpu=None, cache="cold")``: the top ``k`` distinct configs for
  ``@triton.autotune`` (``k`` at least 1; without it 4) of winners measured in the cache
  mode ``cache`` (as :func:`sweeper.tuned` takes it: a GPU whose winners were measured
  in the other mode is refused, never served in its place; ``pick`` takes it too):
  each problem's winner first, then by geometric mean slowdown against each problem's
  best over the problems they were measured on (more problems first); with the
  problem's dims, that shape's dispatch candidates, the first ``k`` (without it, all);
- ``key``: for ``@triton.autotune(key=...)``, the names autotune accepts: the
  autotuner's own ``key`` for a kernel declared with ``autotuned=`` (as the study's run
  imported it, kept in its study.json), else the problem's
  dimensions that are arguments of the Triton function the kernel launches
  (:func:`autotune_key`); ``DIMS``: every dimension of the problem, which
  ``configs(**dims)`` and ``pick(**dims)`` take;
- ``grid(meta, gpu=None, **dims)``: the launch grid of the config ``meta`` names,
  computed from the swept grid expression (``cdiv(n, BLOCK)``, ``4*sms``) as Python code
  generated from the parsed expression, never ``eval``.

As it is imported where sweeper is installed, the module compares its winners'
``source_hash`` with the kernel's source now and warns once (``StaleTuningWarning``,
:func:`sweeper.lookup.warn_stale_export`) where they differ, ``STALE`` saying so, and once
where the source cannot be found to compare; without sweeper it says nothing (``STALE`` is
False).  A user kernel whose source cannot be found as the module is written (its module
gone, or no longer defining it) is exported from the ``key`` and footprint rule its
study kept (an autotuned kernel's study does), else refused (:func:`refuse_unfound`):
they would come from that source.  A kernel that launches no Triton function whose
``@triton.autotune`` could take its winners is refused (:func:`refuse_not_triton`):
compiled CUDA C, whose winners a C header (``--format header``) and a lookup's
``cuda_launch()`` give, and ``torch-op``, a library op, whose tuning entries (``--format
tuning``) keep the options it is built from instead.
"""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import json
import math
from keyword import iskeyword
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sweeper import dispatch
from sweeper.core._facts import INTERPRETER
from sweeper.core._model import CACHE_MODES
from sweeper.core._units import DTYPE_ALIASES
from sweeper.errors import SweeperError
from sweeper.export import (
    StudyWinners,
    asked_of,
    data_line,
    footprint_rule,
    kernel_declared,
    measured_source,
    output_file,
    problem_tops,
    recorded_space,
    rule_for,
    study_winners,
    warn_source_changed,
    warn_without_winner,
)
from sweeper.finals import problem_of
from sweeper.fsio import atomic_write
from sweeper.matching import FAR_RATIO
from sweeper.space import DTYPES, Problem, Space, parse
from sweeper.store import ProblemKey, StudyMeta, StudyStore, TrialRecord
from sweeper.tuning import kernel_name
from sweeper.winners import UNFINISHED

if TYPE_CHECKING:
    from sweeper.kernels import Kernel

#: The first line of every module this writes: what marks a file it may merge into.
MARKER = "# sweeper triton export v1"
#: Meta-parameters that are launch options of a ``triton.Config``, not kernel kwargs.
LAUNCH_META = ("num_stages", "num_ctas", "maxnreg")
DATA_PREFIX = "_DATA = json.loads("


def export_triton(store: StudyStore, path: str | Path) -> tuple[Path, dict[str, Any]]:
    """Write (or merge into) the module at ``path`` the study's winners for its GPU;
    return the path and the GPU's section."""
    written = export_module(store, path)
    return written.path, written.section


class TritonExport(NamedTuple):
    """What :func:`export_module` wrote: where, the GPU's section, the note on the
    module's ``key`` (:func:`autotune_key`'s; empty where there is none) that the
    command's line ends with, and the problems (as a report names them) whose winner is
    the sweep's best for now, their finals not run yet."""

    path: Path
    section: dict[str, Any]
    note: str
    unfinished: list[str]


def export_module(store: StudyStore, path: str | Path) -> TritonExport:
    """:func:`export_triton`, with the note on the key: the kernel's declaration, read
    once (:func:`~sweeper.export.kernel_declared`), gives the check that it launches a
    Triton function (:func:`refuse_not_triton`), the key, the footprint rule and the note
    alike."""
    target = Path(path)
    output_file(store, target)
    won = study_winners(store)
    refuse_unfound(won.meta)
    declared = kernel_declared(won.meta.kernel)
    refuse_not_triton(won.meta.kernel, declared)
    data = _existing(target)
    kernel = won.meta.tuned_name
    kernel_path = won.meta.kernel if won.meta.kernel != kernel else None
    recorded = recorded_space(won.meta)             # read once, as the files are now
    mine = kernel_name(kernel, kernel_path, None)
    # a module written before kernel_path was kept is taken to hold this kernel's path; one
    # an older sweeper wrote of a torch-op study names its op (kernel_options)
    held = kernel_name(data["kernel"], data.get("kernel_path", kernel_path),
                       data.get("kernel_options")) if data else mine
    if held != mine:
        raise SweeperError(f"{target}: holds kernel {held!r}, not {mine!r}; one module per "
                           "kernel: give another -o")
    section = gpu_section(won, recorded)
    gpu = won.meta.gpu
    data = data or {"kernel": kernel, "gpus": {}}
    data["kernel_path"] = kernel_path        # two kernels of one name differ by their path
    data["dims"] = _key(won)
    data["key"], note = autotune_key(won.meta.kernel, data["dims"], declared,
                                     won.meta.autotune_key)
    clash = cache_clash(data["gpus"].get(gpu), section)
    if clash is not None:
        raise SweeperError(f"{target}: {clash}; one cache mode per GPU in a module, so that "
                           "no winner stands in for the other's: give another -o")
    data["gpus"][gpu] = section = merged_section(data["gpus"].get(gpu), section)
    rule = rule_for(footprint_rule(won.meta.kernel, declared, recorded,
                                   won.meta.footprint_rule), next(iter(won.picks)).problem)
    if rule is not None:                    # a grid over n or footprint at other dims
        data["footprint"] = rule
    module = target.stem if target.stem.isidentifier() and not iskeyword(target.stem) \
        else "tuned_mod"
    atomic_write(target, render(data, module))
    warn_without_winner(won)
    warn_source_changed(won.meta, None, recorded, measured_source(won.meta))
    return TritonExport(target, section, note, won.unfinished_named())


def refuse_unfound(meta: StudyMeta) -> None:
    """A :class:`SweeperError` where the source of the user kernel of the study ``meta``
    describes cannot be found (:func:`~sweeper.kernels.source_unfound`) and the study
    does not keep what the export reads from it: the autotuner's ``key``
    (``autotune_key``, kept for a kernel declared with ``autotuned=``) and the footprint
    rule (``footprint_rule``), each else a guess written without a word.  A study that
    keeps both is exported from them, its source unread
    (:func:`~sweeper.export.warn_source_changed` says it was not compared).  Its module
    neither imported nor a file on the import path is refused saying where it was looked
    for; a module there whose source no longer defines the kernel's name, saying which
    module and name; each saying what the study does not keep.  A built-in, or a name no
    plugin has (a kernel a program passed as an object), has nothing to find."""
    import os

    from sweeper.core._units import did_you_mean
    from sweeper.kernels import source_unfound
    from sweeper.kernels._own_modules import module_file

    if meta.autotune_key is not None and meta.footprint_rule:
        return
    kernel = meta.kernel
    unfound = source_unfound(kernel)
    if unfound is None:
        return
    module, attr, bound = unfound
    lacks = [what for what, kept in (
        ("the autotuner's key (the kernel declares no autotuned=, or an older sweeper ran "
         "it)", meta.autotune_key is not None),
        ("the footprint rule (an older sweeper ran it)", bool(meta.footprint_rule)))
        if not kept]
    keeps = f"keeps neither {lacks[0]} nor {lacks[1]}" if len(lacks) == 2 else \
        f"does not keep {lacks[0]}"
    reads = (f"the export reads the kernel's key and footprint from its source, as its "
             f"study.json {keeps}")
    if bound is not None:
        file = module_file(module)
        raise SweeperError(
            f"kernel {kernel}: its module {module}{f' ({file})' if file else ''} no longer "
            f"defines {attr} (renamed or removed since the sweep{did_you_mean(attr, bound)}); "
            f"{reads}: allowed: export with the source the study ran on, or sweep the kernel "
            "as it is now into a new study and export that")
    raise SweeperError(
        f"kernel {kernel}: its module {module} is neither imported nor a file on the import "
        f"path (the current folder, {os.getcwd()}, first): renamed, moved, or the study was "
        f"run in another folder; {reads}: allowed: export from the folder that holds it, or "
        "with that folder on PYTHONPATH")


def refuse_not_triton(kernel: str, declared: type[Kernel] | SweeperError) -> None:
    """A :class:`SweeperError` where ``kernel`` launches no Triton function whose
    ``@triton.autotune`` could take its configs: compiled CUDA C (the built-in ``cuda``,
    or a user kernel launching ``sweeper.cuda``, read from its source), whose configs are
    defines and a grid, or a kernel that says why it launches none
    (:attr:`~sweeper.kernels.Kernel.no_triton_function`: ``torch-op``, a library op).
    ``declared``: its declaration (:func:`~sweeper.export.kernel_declared`)."""
    from sweeper.core._spelling import option

    if isinstance(declared, SweeperError):
        return                         # a declaration that cannot be read: taken as Triton's
    if getattr(declared, "needs_gpu", False):
        raise SweeperError(f"kernel {kernel} is compiled CUDA C, not a Triton kernel: its "
                           "configs cannot feed @triton.autotune; allowed: "
                           f"{option('format')} header (a C header of #defines), tuning "
                           "(sweeper.tuned(...).cuda_launch(): the launch for cupy), csv, "
                           "parquet or optuna")
    why = getattr(declared, "no_triton_function", "")
    if why:
        raise SweeperError(f"kernel {kernel} {why}; allowed: {option('format')} tuning "
                           "(sweeper.tuned), csv, parquet or optuna")


def _existing(target: Path) -> dict[str, Any] | None:
    """The data of the module at ``target`` if this function wrote it, ``None`` when there
    is no file; any other file is refused rather than overwritten (:func:`data_line`)."""
    line = data_line(target, MARKER, DATA_PREFIX, "module `sweeper export --format triton`")
    if line is None:
        return None
    try:
        data: dict[str, Any] = json.loads(ast.literal_eval(line[:-1]))
        if not isinstance(data, dict) or not isinstance(data.get("gpus"), dict) or \
                not isinstance(data.get("kernel"), str):
            raise ValueError("no kernel and GPUs")
    except (ValueError, SyntaxError) as err:
        raise SweeperError(f"{target}: its _DATA line cannot be read ({err}); "
                           "delete the file and export again") from None
    return data


def _key(won: StudyWinners) -> list[str]:
    """The kernel's problem dimensions: ``n`` for a kernel sized by its footprint."""
    dims = next(iter(won.picks)).dims
    return [d for d, _ in dims] or ["n"]


def autotune_key(kernel: str, dims: list[str],
                 declared: type[Kernel] | SweeperError | None = None,
                 kept: list[str] | None = None) -> tuple[list[str], str]:
    """The ``key`` ``@triton.autotune`` accepts for a study of ``kernel`` over ``dims``
    (it refuses a name that is no argument of the function), and a note saying what it
    left out, or why it could not tell: the autotuner's own key for a kernel declared
    with ``autotuned=``, as the study's run imported it (``kept``: the study's
    ``autotune_key``; it holds where only running the module resolves the autotuned
    function), else (a study an older sweeper wrote, or a kernel without an autotuner)
    read from its source, never imported, followed into the module it is imported from;
    else the dimensions that are arguments of the Triton function it launches (a
    built-in's bodies; a user kernel's launch as its source shows it); else every
    dimension, with a note.  Where an ``autotuned=`` could not be read, the note says
    why and that the key is not the autotuner's.
    ``declared``: its declaration read already (:func:`~sweeper.export.kernel_declared`),
    else it is read here."""
    from sweeper.plugins import KERNEL, find

    if kept is not None:
        return list(kept), ""
    declared = kernel_declared(kernel) if declared is None else declared
    if isinstance(declared, SweeperError):
        return dims, f"key lists every dimension: {declared}"
    own = getattr(declared, "autotune_key", None)
    if own:
        return list(own), ""
    unread = next((u for u in getattr(declared, "unread", ()) if u.startswith("autotuned=")),
                  None)
    arguments: tuple[str, ...] = tuple(getattr(declared, "triton_arguments", ()))
    if find(KERNEL, kernel).builtin:
        from sweeper.kernels import kernel_class

        bodies = getattr(kernel_class(kernel), "bodies", ())
        arguments = tuple(a for body in bodies
                          for a in inspect.signature(getattr(body, "fn", body)).parameters)
    key = [d for d in dims if d in arguments] if arguments else dims
    if unread is not None:          # an autotuned= the source does not show: not guessed
        listed = f"key {key}" if arguments else f"key lists every dimension ({', '.join(dims)})"
        return key, (f"{listed}: the @triton.autotune key of {kernel} could not be read from "
                     f"its source ({unread}); pass @triton.autotune its own key in place of "
                     "the module's `key`")
    if not arguments:
        return dims, (f"key lists every dimension ({', '.join(dims)}): the Triton function "
                      f"{kernel} launches could not be read from its source; give "
                      "@triton.autotune those of its arguments")
    left = [d for d in dims if d not in arguments]
    return key, (f"key {key}: {', '.join(left)} {'is' if len(left) == 1 else 'are'} no "
                 "argument of the kernel (configs(**dims) and pick(**dims) take every "
                 "dimension)" if left else "")


def _dims(key: ProblemKey | Problem) -> dict[str, int]:
    """A problem's dimensions, ``n`` (elements) for a 1-D one."""
    return dict(key.dims) or {"n": key.footprint // DTYPES[key.dtype]}


def _asked(problem: Problem | None) -> dict[str, Any]:
    """A winner's ``asked_dims`` and ``asked_footprint``: the problem its study's space
    asked for where the device measured a smaller one (:func:`~sweeper.export.asked_of`),
    as a tuning entry keeps them; none where it measured the problem asked for."""
    return {} if problem is None else {"asked_dims": _dims(problem),
                                       "asked_footprint": problem.footprint}


def _config(t: TrialRecord) -> dict[str, Any]:
    """A trial's config as the module stores it: kwargs, num_warps, launch options, grid."""
    assert t.config is not None
    meta = dict(t.config.meta)
    return {"kwargs": {k: v for k, v in meta.items() if k not in LAUNCH_META},
            "num_warps": t.config.num_warps,
            **{k: meta[k] for k in LAUNCH_META if k in meta},
            "grid": parse(str(t.choice["grid"])).text}


def _identity(config: dict[str, Any]) -> str:
    """What makes two configs the same ``triton.Config`` (the grid is no part of one)."""
    return json.dumps({k: v for k, v in config.items() if k != "grid"}, sort_keys=True)


def gpu_section(won: StudyWinners, recorded: Space | SweeperError | None
                ) -> dict[str, Any]:
    """One GPU's part of the module: facts, winners per problem, ranked distinct configs;
    ``recorded``: the study's space read again (:func:`~sweeper.export.recorded_space`),
    which tells the problem asked where a smaller one was measured."""
    env = won.meta.environment
    every = problem_tops(won, k=None)               # ranked reads all, a winner its top
    tops = {key: ranked_configs[:dispatch.TOP_K] for key, ranked_configs in every.items()}
    source = measured_source(won.meta)
    asked = asked_of(won.meta, recorded)
    winners = [{"study": won.meta.study, "dtype": key.dtype, "footprint": key.footprint,
                "dims": _dims(key), **_asked(asked(pick.trial)),
                **_config(pick.trial), "cache": problem_of(pick.trial).cache,
                "median_ms": pick.median_ms,
                "chosen_by": pick.chosen_by, "trial": pick.trial.number,
                **{k: v for k, v in (("source_hash", source), ("tuned", pick.trial.started),
                                     ("note", UNFINISHED if problem_of(pick.trial) in
                                      won.unfinished else None)) if v},
                "top": [{**_config(t), "slowdown": slowdown} for t, slowdown in tops[key]]}
               for key, pick in won.picks.items()]
    return {"facts": {k: env[k] for k in ("sms", "l2_bytes") if env.get(k) is not None},
            "study": won.meta.study,
            "exported": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "winners": winners,
            "ranked": ranked([[(_config(t), slowdown) for t, slowdown in top]
                              for top in every.values()],
                             [_config(p.trial) for p in won.picks.values()])}


#: The fields of a module's config (a winner's, a top config's, a ranked one's).
CONFIG_FIELDS = ("kwargs", "num_warps", *LAUNCH_META, "grid")


def cache_clash(old: dict[str, Any] | None, new: dict[str, Any]) -> str | None:
    """What keeps ``new`` (one study's section of a GPU) out of ``old`` (the GPU's section
    already in the module), or ``None``: winners measured in another cache mode (a winner
    without ``cache``, an older module's, was measured cold)."""
    def modes(section: dict[str, Any]) -> set[str]:
        return {str(w.get("cache", "cold")) for w in section.get("winners", ())}

    held, mine = modes(old or {}), modes(new)
    if not held or held == mine:
        return None
    return (f"its winners on this GPU were measured {' and '.join(sorted(held))}, study "
            f"{new.get('study')}'s {' and '.join(sorted(mine))}")


def merged_section(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new``, one study's section of a GPU, with the winners of ``old`` (the GPU's
    section already in the module, from other studies) for the problems ``new`` has not
    tuned for; its ranked configs are then those of every winner's top configs.  A
    winner measured shrunk (``asked_dims``) is for the problem asked, as measured shrunk,
    as a tuning entry's key has it (:attr:`~sweeper.tuning.TuningEntry.key`); those
    measured at their own problem come first, which ``pick`` takes of two at one
    problem, as :func:`sweeper.tuned` does."""
    def problem(w: dict[str, Any]) -> str:
        return json.dumps([w["dtype"], w.get("asked_dims") or w["dims"], "asked_dims" in w],
                          sort_keys=True)

    old = old or {}
    mine = {problem(w) for w in new["winners"]}
    kept = [{"study": old.get("study"), **w} for w in old.get("winners", ())
            if problem(w) not in mine]
    if not kept:
        return new
    winners = sorted(kept + new["winners"], key=lambda w: "asked_dims" in w)

    def config(c: dict[str, Any]) -> dict[str, Any]:
        return {k: c[k] for k in CONFIG_FIELDS if k in c}

    tops = [[(config(c), c["slowdown"]) for c in w.get("top") or [{**w, "slowdown": 1.0}]]
            for w in winners]
    studies = list(dict.fromkeys(str(w["study"]) for w in winners))
    return {**new, "study": ", ".join(studies), "winners": winners,
            "ranked": ranked(tops, [config(w) for w in winners])}


def ranked(tops: list[list[tuple[dict[str, Any], float]]], leads: list[dict[str, Any]]
           ) -> list[dict[str, Any]]:
    """Distinct configs, best first, from each problem's configs with their slowdowns
    (``tops``) and the problems' winners (``leads``): each winner, with the grid it won
    with, then the others by (problems measured on, more first; geometric mean of median
    / the problem's best), each with the grid of its fastest measurement in the first
    problem that has it (the grid is no part of a ``triton.Config``)."""
    logs: dict[str, list[float]] = {}
    first: dict[str, dict[str, Any]] = {}
    for top in tops:                                      # each winner is in its top
        seen: set[str] = set()
        for config, slowdown in sorted(top, key=lambda x: x[1]):
            ident = _identity(config)
            if ident not in seen:
                seen.add(ident)
                logs.setdefault(ident, []).append(math.log(slowdown))
                first.setdefault(ident, config)
    mean = {ident: sum(x) / len(x) for ident, x in logs.items()}
    order = sorted(logs, key=lambda i: (-len(logs[i]), mean[i]))
    won: dict[str, dict[str, Any]] = {}       # a winner keeps the grid it won with
    for config in leads:
        won.setdefault(_identity(config), config)
    return [{**won.get(i, first[i]), "slowdown": round(math.exp(mean[i]), 6),
             "problems": len(logs[i])} for i in [*won, *(i for i in order if i not in won)]]


class _ToEnv(ast.NodeTransformer):
    """``cdiv(n, BLOCK)`` -> ``_cdiv(e['n'], e['BLOCK'])``: an expression sweeper's parser
    accepted, as Python over the dict ``e``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        assert isinstance(node.func, ast.Name)
        node.args = [self.visit(a) for a in node.args]
        node.func = ast.Name(id=f"_{node.func.id}", ctx=ast.Load())
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Subscript(value=ast.Name(id="e", ctx=ast.Load()),
                             slice=ast.Constant(node.id), ctx=ast.Load())


def grid_source(text: str) -> str:
    """Python source evaluating the grid expression ``text`` over a dict ``e``."""
    tree = parse(text).tree
    return ast.unparse(ast.fix_missing_locations(_ToEnv().visit(tree)))


def render(data: dict[str, Any], module: str = "tuned_mod") -> str:
    """The module's text for ``data``, its docstring importing it as ``module`` (its
    file's name, where that is an identifier)."""
    grids = sorted({c["grid"] for g in data["gpus"].values()
                    for c in [*g["winners"], *g["ranked"]]})
    functions = "\n".join(f"    {text!r}: lambda e: {grid_source(text)},"
                          for text in grids)
    gpus = ", ".join(_quoted(g) for g in data["gpus"])
    name = kernel_name(data["kernel"], None, data.get("kernel_options"))
    head = (f'{MARKER}\n"""Tuned configs of the kernel {_quoted(name)} on {gpus}, '
            "written by `sweeper export STUDY --format triton`.\n\n"
            + USAGE.replace("tuned_mod", module) + '"""\n')
    literal = json.dumps(json.dumps(data, sort_keys=True))
    rule = data.get("footprint")
    footprint = f"lambda e: {grid_source(rule)}" if rule else "None"
    itemsizes = json.dumps(dict(DTYPES), sort_keys=True)
    return (head + RUNTIME + DISPATCH + f"{DATA_PREFIX}{literal})\n"
            + f"_GRIDS = {{\n{functions}\n}}\n"
            + f"_FOOTPRINT = {footprint}\n_ITEMSIZE = {itemsizes}\n"
            + f"_CACHE_MODES = {CACHE_MODES!r}\n_FAR_RATIO = {FAR_RATIO!r}\n"
            + f"_INTERPRETER = {INTERPRETER!r}\n"
            + f"_DTYPE_ALIASES = {json.dumps(dict(DTYPE_ALIASES), sort_keys=True)}\n" + BUILD)


def _quoted(name: str) -> str:
    """A name from the study (a GPU's, a kernel's) as the module's docstring quotes it:
    its ``ascii()`` (one line of printable ASCII), each backslash and double quote escaped
    again, so that no name can end the docstring and put text into the module's code.
    Every other string from the study reaches the module as JSON (``_DATA``) or through
    ``repr`` (the grid expressions)."""
    return ascii(name).replace("\\", "\\\\").replace('"', '\\"')


USAGE = '''    import tuned_mod
    @triton.autotune(configs=tuned_mod.configs(k=4), key=tuned_mod.key,
                     do_bench=tuned_mod.do_bench)   # Triton's; the host clock on its interpreter
    @triton.jit
    def kernel(..., BLOCK: tl.constexpr): ...
    kernel[lambda meta: tuned_mod.grid(meta)](x, y, n)   # dims read from meta by name

configs() and pick() give winners measured cold (the L2 flushed before each sample)
unless asked for cache="warm", as sweeper.tuned does; a GPU's winners are of one mode.
It needs triton only: the module runs without sweeper.  Where sweeper is installed,
importing this module warns once (StaleTuningWarning) if the kernel's source is no longer
the one these winners were tuned on.  Re-export the study rather than editing this file;
exporting another GPU's study into it adds that GPU, and another
study of the same GPU adds (or replaces) the winners of the problems it measured.
'''

RUNTIME = '''
from __future__ import annotations

import json
import math
import os
import time
import warnings

import triton

_cdiv, _isqrt, _min, _max = triton.cdiv, math.isqrt, min, max
__all__ = ["DIMS", "GPUS", "KERNEL", "STALE", "WINNERS", "configs", "do_bench", "grid", "key",
           "pick"]


def do_bench(fn, quantiles=None, **options):
    """triton.autotune's timer: Triton's do_bench on a GPU; under the Triton interpreter
    (no CUDA events) the host clock, three runs."""
    if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        import triton.testing

        return triton.testing.do_bench(fn, quantiles=quantiles, **options)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return [times[1]] * len(quantiles) if quantiles else times[1]


def _whole(value):
    """A kernel argument as a whole number: an int, or the integer scalar the Triton
    interpreter passes an int as (a tensor of one element); None for anything else."""
    if type(value) is int:
        return value
    dtype = getattr(value, "dtype", None)
    data = getattr(getattr(value, "handle", None), "data", None)
    if getattr(dtype, "is_int", lambda: False)() and getattr(data, "size", 0) == 1:
        return int(data.item())
    return None
'''

BUILD = '''

def _config(c):
    extra = {k: c[k] for k in ("num_stages", "num_ctas", "maxnreg") if k in c}
    return triton.Config(dict(c["kwargs"]), num_warps=c["num_warps"], **extra)


KERNEL = _DATA["kernel"]
#: for @triton.autotune(key=...): the kernel's arguments among the problem's dimensions
key = list(_DATA["key"])
#: every dimension of the problem, as configs(**dims) and pick(**dims) take them
DIMS = list(_DATA.get("dims", key))
#: each GPU's facts (sms, l2_bytes), as the study recorded them
GPUS = {g: dict(s["facts"]) for g, s in _DATA["gpus"].items()}
#: per GPU, each problem's winner: dtype, dims, "config" (a triton.Config), grid, median_ms;
#: asked_dims where the device measured dims in place of a larger problem asked for
WINNERS = {g: [{**w, "config": _config(w)} for w in s["winners"]]
           for g, s in _DATA["gpus"].items()}


def _gpu(gpu):
    if gpu is None and len(GPUS) == 1:
        return next(iter(GPUS))
    if gpu is None:
        gpu = _this_device()
    for name in GPUS:
        if name.removeprefix("replay: ") == gpu.removeprefix("replay: "):
            return name
    raise KeyError(f"no configs for GPU {gpu!r}; this module has {', '.join(GPUS)}")


def _this_device():
    """The device this process launches on, as studies name it (sweeper.tuned's rule):
    the Triton interpreter where TRITON_INTERPRET is on or where no CUDA device is,
    else the first CUDA device."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return _INTERPRETER
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else _INTERPRETER


def configs(k=None, gpu=None, dtype=None, cache="cold", **dims):
    """Distinct triton.Configs for GPU gpu (default: the only one, else this process's
    device: the interpreter under TRITON_INTERPRET=1 or without a GPU), at most k of
    them (a whole number of at least 1; anything else is a ValueError), of winners
    measured in the cache mode cache: cold (the L2 flushed before each sample, the
    default) or warm; a GPU whose winners were measured in the
    other mode is a KeyError saying so, never served in its place.  Without dims: the
    top k (k=None: 4), each tuned problem's winner first, then by geometric mean
    slowdown.  With the problem's dims (every name of
    key): the candidates for that shape (sweeper's dispatch rule: the nearest tuned
    winner first, then the bracketing tuned shapes' top configs), the first k (k=None:
    all); dtype: only problems tuned in it (float32, fp32 or torch.float32).  Each is
    launched with its own grid by grid(meta): a config whose kwargs a better one shares
    with another grid is left out (Triton's autotuner tells them apart by kwargs only)."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"configs(k={k!r}): k is how many configs to give, a whole number "
                         "of at least 1, or None: the top 4 without dims, every candidate "
                         "with them")
    gpu = _measured(_gpu(gpu), cache)
    grids = _grids(gpu)
    if not dims:
        return [_config(c) for c in _DATA["gpus"][gpu]["ranked"]
                if grids[_kwargs(c)] == c["grid"]][:4 if k is None else k]
    out, seen = [], set()
    for c in _candidates(gpu, dtype, dims):
        ident = json.dumps({n: v for n, v in c.items() if n not in ("grid", "slowdown")},
                           sort_keys=True)
        if ident not in seen and grids.get(_kwargs(c), c["grid"]) == c["grid"]:
            seen.add(ident)
            out.append(_config(c))
    return out if k is None else out[:k]


def _kwargs(c):
    return json.dumps(c["kwargs"], sort_keys=True)


def _grids(gpu):
    """The grid grid(meta) gives each kwargs when meta has no num_warps, as under
    triton.autotune (Triton passes a grid function the kernel's arguments only): the
    first ranked config's.  configs() leaves out a config tuned with another grid than
    the better one of the same kwargs, which autotune would time with that one's grid."""
    grids = {}
    for c in _DATA["gpus"][gpu]["ranked"]:
        grids.setdefault(_kwargs(c), c["grid"])
    return grids


def pick(gpu=None, dtype=None, cache="cold", **dims):
    """The triton.Config sweeper's dispatch rule picks for a problem of dims: the one
    tuned there (measured there, or asked there and measured smaller to fit its device),
    else the nearest tuned shape's winner (log space; a UserWarning where it is more than
    4x off in a dimension, as sweeper.tuned warns), of winners measured
    in the cache mode cache (as configs() takes it).  Launched outside autotune, give
    grid its launch options (grid({**meta, **c.all_kwargs()})): a better config of the
    same kwargs may have been tuned with another grid."""
    return _config(_candidates(_measured(_gpu(gpu), cache), dtype, dims)[0])


def _measured(gpu, cache):
    """gpu, whose winners were measured in the cache mode cache (a GPU's winners are of
    one mode; a winner without one, an older module's, was measured cold); another
    mode is a KeyError naming the one there is, a cache that names none a ValueError."""
    if cache not in _CACHE_MODES:
        raise ValueError(f"cache={cache!r}: allowed: {', '.join(_CACHE_MODES)} (the L2 "
                         "flushed before each sample, or not)")
    held = sorted({w.get("cache", "cold") for w in _DATA["gpus"][gpu]["winners"]})
    if cache not in held:
        flushed = "not flushed" if held == ["warm"] else "flushed"
        raise KeyError(f"no configs for GPU {gpu!r} measured {cache}; its winners were "
                       f"measured {' and '.join(held)} only (L2 {flushed}): ask for "
                       f"cache={held[0]!r}")
    return gpu


def _candidates(gpu, dtype, dims):
    if set(dims) != set(DIMS):
        raise TypeError(f"give the problem's dims {DIMS}, got {sorted(dims)}")
    # a size of 0, a negative or a float has no nearest tuned problem in log space
    bad = [f"{d}={v!r}" for d, v in dims.items() if isinstance(v, bool)
           or not hasattr(type(v), "__index__") or v.__index__() < 1]
    if bad:
        raise ValueError(f"{', '.join(bad)}: give each of the problem's dims {DIMS} a "
                         "whole number of at least 1")
    dims = {d: v.__index__() for d, v in dims.items()}
    winners = _DATA["gpus"][_gpu(gpu)]["winners"]
    # a dtype as sweeper.tuned takes it: float32, fp32, torch.float32
    name = None if dtype is None else str(dtype).strip().removeprefix("torch.").lower()
    name = _DTYPE_ALIASES.get(name, name)
    tuned = [w for w in winners if name is None or w["dtype"] == name]
    if not tuned:
        raise KeyError(f"no problem tuned in dtype {dtype!r}; tuned: "
                       f"{', '.join(sorted({w['dtype'] for w in winners}))}")
    tops = [[(_ident(c), c["slowdown"]) for c in _top(w)] for w in tuned]
    by_ident = {_ident(c): c for w in tuned for c in _top(w)}
    # a winner measured smaller than its space asked (the interpreter's cap) is exact for
    # the problem asked, as for the one measured; any other is as far as the one measured
    problems = [dims if dims == w.get("asked_dims") else w["dims"] for w in tuned]
    near = nearest_index(problems, dims)
    if any(max(problems[near][d], v) / min(problems[near][d], v) > _FAR_RATIO
           for d, v in dims.items()):           # as sweeper.tuned warns
        def shown(p):
            return " ".join(f"{d}={p[d]}" for d in DIMS)
        warnings.warn(f"{__name__}: the nearest tuned problem, {shown(problems[near])}, is far "
                      f"from the asked {shown(dims)} (more than {_FAR_RATIO:g}x in a "
                      "dimension); its configs may be far from this problem's best: tune "
                      f"{shown(dims)} (add it to the space of study "
                      f"{tuned[near].get('study') or '?'}, run it and export the study "
                      "again)", stacklevel=3)
    return [by_ident[i] for i in candidates(problems, tops, dims)]


def _top(winner):
    if "top" in winner:
        return winner["top"]
    if not _WARNED:
        _WARNED.append(True)
        warnings.warn(f"{__name__}: exported without top configs per problem; untuned "
                      "shapes get the nearest tuned winner only: export the study again")
    return [{**{k: winner[k] for k in _FIELDS if k in winner}, "slowdown": 1.0}]


_WARNED = []
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_FIELDS = ("kwargs", *_OPTIONS, "grid")


def _ident(c):
    return json.dumps({n: v for n, v in c.items() if n != "slowdown"}, sort_keys=True)


def grid(meta, gpu=None, **dims):
    """The launch grid (a 1-tuple) of the config meta names (its kwargs, and the launch
    options num_warps, num_stages ... where meta has them), from the grid expression it
    was tuned with; dimensions are read from meta (the kernel's arguments) or dims.  A
    meta no exported config matches is a ValueError naming its values and the exported
    configs: no grid was tuned with it."""
    gpu = _gpu(gpu)
    ranked = _DATA["gpus"][gpu]["ranked"]
    chosen = next((c for c in ranked if all(meta.get(k) == v for k, v in c["kwargs"].items())
                   and all(meta.get(k, c[k]) == c[k] for k in _OPTIONS if k in c)), None)
    if chosen is None:
        raise ValueError(_unexported(meta, gpu, ranked))
    env = {**GPUS[gpu], **chosen["kwargs"], "block": 32 * chosen["num_warps"]}
    env.update({k: w for k, w in ((k, _whole(v)) for k, v in meta.items()) if w is not None})
    env.update(dims)
    _sized(env, meta, _DATA["gpus"][gpu]["winners"])
    try:
        return (_GRIDS[chosen["grid"]](env),)
    except KeyError as err:
        raise TypeError(f"grid {chosen['grid']!r} needs {err.args[0]!r}: pass it as a kernel "
                        f"argument or grid(meta, {err.args[0]}=...)") from None


def _unexported(meta, gpu, ranked):
    """What grid(meta) says of a meta no exported config matches: its grid would be a
    guess, and a grid another config was tuned with may not cover this one's problem."""
    def shown(c):
        return " ".join(f"{k}={v!r}" for k, v in [*c["kwargs"].items(),
                                                  *((k, c[k]) for k in _OPTIONS if k in c)])
    names = {k for c in ranked for k in c["kwargs"]} | set(_OPTIONS)
    asked = " ".join(f"{k}={meta[k]!r}" for k in sorted(names) if k in meta)
    told = (f"no config exported for {gpu!r} has {asked}" if asked else
            f"meta holds none of the configs' options ({', '.join(sorted(names))})")
    return (f"grid(meta): {told}; exported: "
            f"{'; '.join(shown(c) for c in ranked)}: launch one of configs(), whose grid "
            "was tuned with it")


def _sized(env, meta, winners):
    """n and footprint, where the grid may read them and they are not given: the kernel's
    footprint rule at the dimensions in env, in bytes of the tensors' element (or of the
    one dtype tuned)."""
    if _FOOTPRINT is None or ("n" in env and "footprint" in env):
        return
    sizes = {v.element_size() for v in meta.values() if hasattr(v, "element_size")}
    sizes = sizes or {_ITEMSIZE[w["dtype"]] for w in winners}
    if len(sizes) != 1:
        return
    itemsize = sizes.pop()
    try:
        footprint = _FOOTPRINT({**env, "itemsize": itemsize})
    except KeyError:
        return
    env.setdefault("footprint", footprint)
    env.setdefault("n", footprint // itemsize)


def _check_source():
    """Where sweeper is installed, warn once (its StaleTuningWarning) if the kernel's
    source is no longer the one these winners were tuned on, as sweeper.tuned does; the
    source is read as sweeper's lookups read it, running no code of yours."""
    try:
        from sweeper.lookup import warn_stale_export
    except ImportError:             # no sweeper, or one without the check: nothing to say
        return False
    return warn_stale_export(__file__, _DATA)


#: whether the kernel's source differs from the one these winners were tuned on (False
#: where that cannot be told: no sweeper, no source hash, a source not readable unrun)
STALE = _check_source()
'''

#: The dispatch rule, carried as source so the module needs no sweeper (one implementation).
DISPATCH = "\n\n" + "\n\n".join(
    inspect.getsource(f) for f in (dispatch.log_distance, dispatch.nearest_index,
                                   dispatch.bracketing, dispatch.candidates)) + "\n\n"

__all__ = ["autotune_key", "export_triton", "gpu_section", "grid_source", "ranked", "render"]
