"""Read a tuned config back at launch time: :func:`tuned` and the :class:`Tuning` table.

A launch asks by kernel name, dtype (any spelling, a torch dtype too), GPU (this one by
default) and problem (its dimensions, or its footprint); the entry is found by the rules
of :mod:`sweeper.matching` (GPU by name then by architecture, nearest tuned shape in log
space) and its grid re-computed for the problem asked for when it was an expression such
as ``cdiv(n, BLOCK)``.  The medians returned are those the report shows: the interleaved
finals' where they chose the winner.  An entry tuned on an earlier source of its kernel
than the one there is now (its ``source_hash``) is used all the same, with a
:class:`~sweeper.errors.StaleTuningWarning` once per kernel and ``stale`` set; so is one
whose dispatch candidates come from such an entry (a tuned problem around the asked one).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.core._api_errors import cut_at_call
from sweeper.core._expr import LIMIT
from sweeper.core._model import CACHE_MODES, MAX_GRID_YZ, THREAD_BLOCKS
from sweeper.core._spelling import entry
from sweeper.core._units import did_you_mean, whole
from sweeper.dispatch import bracketing, candidates, log_distance
from sweeper.errors import (
    ExpressionError,
    StaleTuningWarning,
    SweeperError,
    TuningFileError,
    TuningWarning,
    user_stacklevel,
)
from sweeper.escape import cut
from sweeper.kernels import launches_warps
from sweeper.matching import FAR_RATIO, GpuMatch, dtype_name, match_gpu, nearest
from sweeper.space import (
    DTYPES,
    Config,
    Problem,
    evaluate,
    format_size,
    parse,
    parse_size,
    show_dims,
)
from sweeper.tuning import (
    MAX_GRID,
    LaunchConfig,
    TopConfig,
    TuningEntry,
    entry_name,
    read_tuning,
    tuning_path,
)

if TYPE_CHECKING:
    from sweeper.kernels import Kernel
    from sweeper.kernels._cuda_build import CudaLaunch, TunedLaunch


@dataclass(frozen=True)
class Candidate(TopConfig):
    """A config to try for the asked problem: one of a tuned problem's top configs, with
    its ``slowdown`` there (the asked problem where it was tuned, else the nearest tuned
    problem around it that has the config) and its ``grid`` computed for the asked
    problem (``grid_y`` and ``grid_z`` too: 1 where it has no expression for them)."""

    grid: int = 0
    grid_y: int = 1
    grid_z: int = 1


@dataclass(frozen=True)
class TunedConfig(TuningEntry):
    """A tuning file's entry as a launch asked for it: its ``grid`` (a CUDA C launch's
    ``grid_y`` and ``grid_z`` too) is computed for the problem asked for (the entry's own
    was for the problem it was tuned at)."""

    #: sum over dimensions of |log2(tuned / asked)|: 0 when tuned at the asked problem
    distance: float = 0.0
    #: some dimension differs by more than ``FAR_RATIO`` times (a warning was given)
    far: bool = False
    #: True when no entry of the asked GPU existed and one of its architecture was taken
    by_architecture: bool = False
    #: the kernel's source is not the one this entry, or another entry whose configs are
    #: among its ``candidates``, was tuned on (its ``source_hash``; a
    #: :class:`~sweeper.errors.StaleTuningWarning` was given, once per kernel)
    stale: bool = False
    #: the configs worth measuring for this problem, this one first (:mod:`sweeper.dispatch`:
    #: the tuned problem's top configs, or the bracketing tuned problems' for a shape that
    #: was not tuned); just this one from a file written without top configs
    candidates: tuple[Candidate, ...] = ()
    #: the problem asked for (its footprint 0 where asked by dimensions its entry cannot
    #: size), which :meth:`cuda_launch` launches
    asked: Problem | None = None

    def cuda_launch(self, config: LaunchConfig | None = None, *,
                    launch: CudaLaunch | type[Kernel] | Kernel | None = None
                    ) -> TunedLaunch:
        """This config of a CUDA C kernel (or ``config``, one of its :attr:`candidates`)
        as a program of its own compiles and launches it for the problem asked
        (:class:`~sweeper.kernels._cuda_build.TunedLaunch`: the name to compile and look
        up, NVRTC's options with each define, the grid and block in x, y and z, the
        dynamic shared memory), as sweeper compiled and launched it.  A space's ``cuda``
        kernel is built from the options its entry keeps; a ``sweeper.cuda`` kernel
        declared in Python is given by ``launch``: the kernel ``sweeper.kernel(...)``
        declared, or the ``sweeper.cuda(...)`` it was declared with (its template,
        options and shared memory are its, not the tuning file's)."""
        from sweeper.kernels._cuda_build import CudaLaunch

        if launch is None and self.kernel == "cuda" and self.kernel_options:
            launch = CudaLaunch.of_options(self.kernel_options, "")
        held = getattr(getattr(launch, "plan", None), "launch", None)
        if isinstance(held, CudaLaunch):          # a kernel: the launch it is declared with
            launch = held
        if not isinstance(launch, CudaLaunch):
            given = "" if launch is None else f"; launch={cut(repr(launch), 60)} is none"
            raise SweeperError(
                f"{self.name}: cuda_launch() is the launch of a CUDA C kernel, which a "
                f"space's cuda kernel's entry keeps{given}; allowed: for a sweeper.cuda "
                "kernel, launch= the kernel sweeper.kernel(...) declared or the "
                "sweeper.cuda(...) it is declared with; a Triton kernel launches with "
                "grid, num_warps and meta (launch_options())")
        chosen = self if config is None else config
        if config is not None and config not in (self, *self.candidates):
            raise SweeperError(f"{self.name}: cuda_launch(config): {cut(repr(config), 80)} "
                               "is none of this lookup's candidates; allowed: one of "
                               ".candidates, or none for the tuned config")
        asked = self.asked or Problem(self.dtype, self.footprint, tuple(self.dims.items()))
        grid, grid_y, grid_z = (int(getattr(chosen, k, 1)) for k in ("grid", "grid_y", "grid_z"))
        try:
            return launch.tuned_launch(Config(problem=asked, grid=grid, block=chosen.block,
                                              meta=dict(chosen.meta), grid_y=grid_y,
                                              grid_z=grid_z))
        except ValueError as err:
            raise SweeperError(f"{self.name}: {err}") from None


#: How to tune a kernel's source as it is now, for a warning that its winners are stale:
#: a study of a space file, or of an ``@triton.autotune`` kernel brought in by name.
RETUNE = ("run its space into a new study (`sweeper run SPACE --study NEW`, or `sweeper run "
          "--from-autotune MODULE:KERNEL --study NEW` for an autotuned kernel) and export "
          "that")


def cache_problem(cache: object) -> str | None:
    """Why ``cache`` names no cache mode a lookup can ask for (what is allowed), or
    ``None``."""
    if isinstance(cache, str) and cache in CACHE_MODES:
        return None
    return (f"cache {cache!r}: allowed: {', '.join(CACHE_MODES)} (the L2 flushed before each "
            "sample, or not)")


def current_gpu() -> str:
    """The name studies record for the device this process would run on: the Triton
    interpreter where it is on (``TRITON_INTERPRET=1``) or where there is no CUDA device
    (there a Triton kernel runs on nothing else), else the first CUDA device."""
    import os

    interpreted = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
    if not interpreted:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    from sweeper.devices import open_device

    return open_device("interpret").facts().name


def _current_capability() -> tuple[int, int] | None:
    """This process's GPU's compute capability, ``None`` without one."""
    import torch

    return tuple(torch.cuda.get_device_capability(0)) if torch.cuda.is_available() \
        else None  # type: ignore[return-value]


class Tuning:
    """A tuning file read once, answering lookups; what :func:`tuned` and
    :func:`sweeper.tuned_kernel` ask."""

    def __init__(self, path: str | Path | None = None) -> None:
        if path is not None and not isinstance(path, (str, Path)):
            raise SweeperError(f"path {path!r}: give the tuning file's path (text or a "
                               "Path), or None for $SWEEPER_TUNING or studies/tuning.json")
        self.path = tuning_path(path)
        if not self.path.exists():
            raise SweeperError(f"{self.path}: no tuning file; run `sweeper export STUDY` "
                               "first")
        self.entries = read_tuning(self.path).entries
        self._warned_no_top = False
        #: whether an entry's source hash is stale (:meth:`_stale`) and, where the source
        #: hash now cannot be told, why its source cannot be found (:func:`unfound`), asked
        #: once per file read, per kernel, the options it is built from and the hash
        self._sources: dict[tuple[str, str, str], tuple[bool, str | None]] = {}

    def config(self, kernel: str, *, dtype: object, footprint: int | None = None,
               dims: Mapping[str, int] | None = None, gpu: str | None = None,
               warn: bool = True, gpu_option: str | None = None, cache: str = "cold",
               cache_option: str = "cache={!r}") -> TunedConfig:
        """The config for ``kernel`` (see :func:`tuned`); ``warn=False``: leave the far
        and architecture warnings to the caller, which reads ``far``/``by_architecture``
        (a changed source is warned of here either way, once per kernel).
        A lookup that finds the kernel tuned on other GPUs only suggests naming one: as
        ``gpu_option`` says (the CLI's ``--gpu {!r}``), else as ``gpu={!r}`` where ``gpu``
        was not given; one that finds it tuned in the other cache mode only, asking for
        that, as ``cache_option`` says."""
        if not isinstance(kernel, str):
            raise SweeperError(f"kernel {kernel!r}: give the kernel's name as text (e.g. "
                               "'matmul', or its 'module:attr' path)")
        if gpu is not None and not isinstance(gpu, str):
            raise SweeperError(f"gpu {gpu!r}: give the GPU's name as text (e.g. 'NVIDIA "
                               "H100 80GB HBM3'), or None for this one")
        wrong = cache_problem(cache)
        if wrong is not None:
            raise SweeperError(wrong)
        dtype = dtype_name(dtype)
        footprint, dims = _checked_problem(footprint, dims, dtype)
        capability = None if gpu else _current_capability()
        option = gpu_option if gpu_option is not None else None if gpu else "gpu={!r}"
        gpu = gpu or current_gpu()
        matched = self._matched(kernel, dtype, dims, gpu, capability, option,
                                (cache, cache_option))
        asked: Mapping[str, int] = dims if dims is not None else {"footprint": footprint or 1}
        problems = [_problem_of(self.entries[i], asked, by_dims=dims is not None)
                    for i in matched.indices]
        at, near = nearest(problems, asked)
        index = matched.indices[at]
        entry = self.entries[index]
        tops = [self._top(i) for i in matched.indices]
        # the tuned problems around the asked one, whose top configs are the candidates,
        # nearest first: a candidate is its nearest such problem's, with that slowdown
        around = sorted((j for j, _ in bracketing(problems, asked)),
                        key=lambda j: (log_distance(problems[j], asked), j))
        where: dict[str, tuple[int, TopConfig]] = {}
        for j in around:
            for t in tops[j]:
                where.setdefault(_ident(t), (matched.indices[j], t))
        chosen = [where[str(c)] for c in candidates(
            problems, [[(_ident(t), t.slowdown) for t in top] for top in tops], asked)]
        # every entry whose configs the lookup may dispatch to: the nearest, and those
        reach = dict.fromkeys([index, *(matched.indices[j] for j in around)])
        stale = next((self.entries[i] for i in reach if self._stale(self.entries[i])), None)
        config = TunedConfig(
            **{**vars(entry), "meta": dict(entry.meta), "dims": dict(entry.dims),
               **self._grids(index, entry, dtype, footprint, dims)},
            distance=near.distance, far=near.far, by_architecture=matched.by_architecture,
            stale=stale is not None,
            asked=Problem(dtype, self._footprint(entry, dtype, footprint, dims) or 0,
                          tuple((dims or {}).items())),
            candidates=tuple(Candidate(t.grid_expr, t.block, dict(t.meta), t.slowdown,
                                       grid_y_expr=t.grid_y_expr, grid_z_expr=t.grid_z_expr,
                                       **self._grids(i, t, dtype, footprint, dims))
                             for i, t in chosen))
        if stale is not None:
            warn_stale(stale, self.path)
        if warn:
            warn_for(config, gpu, asked)
        return config

    def _stale(self, entry: TuningEntry) -> bool:
        """Whether ``entry`` was tuned on another source of its kernel than the one there
        is now; an entry without a ``source_hash`` (an older sweeper's), or a kernel
        whose source cannot be told here, is not; one built from its space's options is
        hashed from those the entry keeps (``kernel_options``), and is not stale where its
        hash is the one an earlier sweeper gave the same files, spelling those options as
        it kept them, absolute (:func:`~sweeper.kernels.source_hash_respelled`: a ``cuda``
        kernel's ``file.py:function`` reference by its path, now by its file's name).  A
        kernel whose source cannot be found (its module gone, or no longer defining it; a
        file its kept options name, or that its source read as its study measured it
        (``source_files``), gone: :func:`unfound`) is warned of, once, as not compared,
        not as stale: a hash of what is left of it says nothing of an edit."""
        from sweeper.kernels import source_hash_now, source_hash_respelled

        if entry.source_hash is None:
            return False
        options = entry.kernel_options
        asked = entry.identity, json.dumps(options, sort_keys=True), entry.source_hash
        if asked not in self._sources:
            now = source_hash_now(entry.identity, options)
            same = now is not None and (now == entry.source_hash or bool(
                options and source_hash_respelled(entry.identity, options,
                                                  entry.source_hash) == now))
            why = None if same else unfound(entry.identity, options, entry.source_files or ())
            self._sources[asked] = (not same and now is not None and why is None, why)
        stale, why = self._sources[asked]
        if why is not None:
            warn_unfound(entry, self.path, why)
        return stale

    def _matched(self, kernel: str, dtype: str, dims: Mapping[str, int] | None, gpu: str,
                 capability: tuple[int, int] | None, option: str | None,
                 cache: tuple[str, str] = ("cold", "cache={!r}")) -> GpuMatch:
        """The entries for ``kernel`` in ``dtype`` (over ``dims``' names) measured in the
        cache mode ``cache`` names (with how to ask for another) of the GPU
        :func:`~sweeper.matching.match_gpu` chooses; none is refused (``option``: how to
        ask for another GPU, where this one was not named).  Those measured at the
        problem they were tuned for come first, so that of two tuned at one problem (the
        nearest's ties go to the first) a lookup takes the one measured there for it, not
        one measured there in place of a larger problem (shrunk: ``asked_footprint``)."""
        mode, cache_option = cache
        mine = self.kernel_entries(kernel)
        shaped = [i for i in mine if self.entries[i].dtype == dtype and
                  (dims is None or set(self.entries[i].dims) == set(dims))]
        ours = sorted((i for i in shaped if self.entries[i].cache == mode),
                      key=lambda i: self.entries[i].asked_footprint is not None)
        matched = match_gpu(self.entries, ours, gpu, capability)
        other = match_gpu(self.entries, [i for i in shaped if i not in ours], gpu, capability)
        if matched is None and other is not None:
            shape = f" {show_dims(dims)}" if dims is not None else ""
            held = self.entries[other.indices[0]].cache
            raise SweeperError(f"{self.path}: no tuned config for {kernel} {dtype}{shape} on "
                               f"{gpu!r} measured {mode}; it is tuned {held} only (L2 "
                               f"{'not ' if held == 'warm' else ''}flushed): ask for "
                               f"{cache_option.format(held)}")
        if matched is None:
            named = sorted({" ".join(e.dims) for e in map(self.entries.__getitem__, mine)
                            if dims is not None and e.dtype == dtype and
                            set(e.dims) != set(dims)})
            if named:
                raise SweeperError(f"{self.path}: {kernel} {dtype} was tuned over the "
                                   f"dimensions {' / '.join(named)}, not {' '.join(dims or ())}"
                                   "; allowed: each of them by name")
            shape = f" {show_dims(dims)}" if dims is not None else ""
            raise SweeperError(f"{self.path}: no tuned config for {kernel} {dtype}{shape} "
                               f"on {gpu!r}{self._held(kernel, mine, ours, option)}")
        return matched

    def kernel_entries(self, kernel: str) -> list[int]:
        """The indices of the entries for ``kernel`` (:meth:`TuningEntry.is_for`): where
        the name is shared by kernels of different paths (a built-in and a user's, two
        modules'), the kernel whose own name it is (a warning names the others), else
        none of them: that is refused, naming their paths."""
        named = [i for i, e in enumerate(self.entries) if e.is_for(kernel)]
        kinds = sorted({self.entries[i].name for i in named})
        if len(kinds) <= 1:
            return named
        others = [k for k in kinds if k != kernel]
        if len(others) == len(kinds):
            raise SweeperError(f"{self.path}: {kernel!r} names {len(kinds)} tuned kernels, "
                               f"{', '.join(kinds)}; ask for one by its module:attr path "
                               "(a CUDA C kernel: cuda:FILE:ENTRY, FILE its .cu file's "
                               "path, or as much of its end as tells it apart; a torch "
                               "op: torch-op:OP)")
        warnings.warn(f"{self.path}: {kernel!r} is the kernel of that name; "
                      f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} tuned "
                      "under that name too: ask for it by its module:attr path (a kernel "
                      "built from its space's options: by the name given here)",
                      TuningWarning, stacklevel=user_stacklevel())
        return [i for i in named if self.entries[i].name == kernel]

    def _held(self, kernel: str, mine: list[int], ours: list[int], option: str | None
              ) -> str:
        """What the file holds nearest to a lookup that found nothing, so that the message
        says what to ask for instead: the GPUs ``kernel`` in the asked dtype was tuned on
        (``ours``; with how to ask for one, ``option``, where the lookup named none),
        else the dtypes it was tuned in (``mine``: its entries), else the kernels the
        file has, each as a lookup finds it without doubt: a user's by its
        ``module:attr`` path, as its name alone may mean a built-in's entries."""
        if ours:
            gpus = sorted({self.entries[i].gpu for i in ours})
            ask = "" if option is None else \
                f"; to use {'its' if len(gpus) == 1 else 'their'} winners here, give " \
                f"{'' if len(gpus) == 1 else 'e.g. '}{option.format(gpus[0])}"
            return f"; it is tuned on {', '.join(map(repr, gpus))}{ask}"
        dtypes = sorted({self.entries[i].dtype for i in mine})
        if dtypes:
            return f"; {kernel} is tuned in {', '.join(dtypes)}"
        kernels = sorted({e.name for e in self.entries})
        return (f"; tuned kernels: {', '.join(kernels) or 'none'}"
                f"{did_you_mean(kernel, kernels)}")

    def _top(self, index: int) -> list[TopConfig]:
        """An entry's top configs; its winner alone for an entry written without them (a
        warning, once per file read, says so)."""
        entry = self.entries[index]
        if not entry.top and not self._warned_no_top:
            self._warned_no_top = True
            warnings.warn(f"{self.path}: written without top configs per problem; a shape "
                          "that was not tuned gets the neighbouring tuned winners only (the "
                          "nearest first): export the study again for dispatch candidates",
                          TuningWarning, stacklevel=user_stacklevel())
        return entry.top or [TopConfig(entry.grid_expr, entry.block, entry.meta, 1.0,
                                       grid_y_expr=entry.grid_y_expr,
                                       grid_z_expr=entry.grid_z_expr)]

    def _grids(self, index: int, config: TuningEntry | TopConfig, dtype: str,
               footprint: int | None, dims: Mapping[str, int] | None) -> dict[str, int]:
        """The grid expressions of ``config`` (entry ``index`` or one of its top configs)
        evaluated for the problem asked for: its dimensions, footprint and ``n`` (each
        where known), the entry's device facts, block and meta; ``grid``, and a CUDA C
        launch's ``grid_y`` and ``grid_z`` (1 where it keeps no expression for them).
        A CUDA C block's extents in y and z its meta-parameters do not hold are read at
        1, as its space resolved them (only a launch with them lets a grid read them)."""
        entry = self.entries[index]
        facts = {k: v for k, v in entry.facts.items() if k in ("sms", "l2_bytes") and
                 v is not None}
        env: dict[str, int] = {**dict.fromkeys(THREAD_BLOCKS.extent_names, 1), **facts,
                               "itemsize": DTYPES[dtype], **(dims or {}),
                               "block": config.block, **config.meta}
        size = self._footprint(entry, dtype, footprint, dims)
        if size is not None:
            env.update(footprint=size, n=(dims or {}).get("n", size // DTYPES[dtype]))
        asked = format_size(footprint) if footprint is not None else show_dims(dims or {})

        def refused(message: str) -> TuningFileError:
            return TuningFileError(message, file=str(self.path), entry=index,
                                   name=entry_name(vars(entry)))

        grids = {"grid": 1, "grid_y": 1, "grid_z": 1}
        for key, text in config.grid_exprs.items():
            axis, most = key.removesuffix("_expr"), MAX_GRID if key == "grid_expr" else \
                MAX_GRID_YZ
            expr = parse(text)                      # checked as the tuning file was read
            by_dims = sorted(set(entry.dims) & expr.names - set(env))
            if by_dims:     # asked by footprint: the grid needs the dimensions, not the bytes
                raise SweeperError(
                    f"{entry.kernel} was tuned over the dimensions {' '.join(entry.dims)} "
                    f"and its {axis} {text!r} reads {by_dims[0]}, which a footprint does "
                    f"not give; give the dimensions instead (--dims "
                    f"{','.join(f'{d}=...' for d in entry.dims)}, dims={{...}})")
            try:
                grids[axis] = int(evaluate(expr, env))
            except (SweeperError, ValueError, OverflowError, RecursionError) as err:
                unread = sorted({"n", "footprint"} & expr.names - set(env))
                if unread:    # an entry written before it kept its kernel's footprint rule
                    raise refused(
                        f"{key} {text!r} reads {unread[0]}, which this entry cannot compute "
                        f"at {asked}: it keeps no footprint rule (footprint_expr); export "
                        "the study again with this sweeper, or give the footprint "
                        "(--footprint, footprint=)") from None
                raise refused(f"{key}: {err}") from None
            if not 1 <= grids[axis] <= most:
                allowed = "a launch needs at least one" if grids[axis] <= 0 else \
                    f"a launch takes at most {most} (CUDA's grid limit" + \
                    ("" if axis == "grid" else " in y and z") + ")"
                raise refused(f"{key} {text!r} gives {grids[axis]} "
                              f"{'programs' if axis == 'grid' else 'blocks'} at {asked}; "
                              f"{allowed}")
        return grids

    @staticmethod
    def _footprint(entry: TuningEntry, dtype: str, footprint: int | None,
                   dims: Mapping[str, int] | None) -> int | None:
        """The footprint of the problem asked for: as given, the entry's own where asked at
        its dimensions, else the kernel's footprint rule at the dimensions asked (the
        entry's ``footprint_expr``); ``None`` where none of them tells it."""
        if footprint is not None:
            return footprint
        if dims is not None and dict(dims) == entry.dims:
            return entry.footprint
        if dims is not None and entry.footprint_expr is not None:
            # at dimensions not tuned, the footprint the kernel's own rule gives there
            try:
                return int(evaluate(parse(entry.footprint_expr),
                                    {**dims, "itemsize": DTYPES[dtype]}))
            except ExpressionError as err:      # the dimensions asked, not the file
                asked = ",".join(f"{k}={v}" for k, v in dims.items())
                raise SweeperError(f"dims {asked}: the kernel's footprint there: {err}; "
                                   "allowed: dimensions of at most 2**62 bytes") from None
        return None


def _ident(config: TopConfig) -> str:
    """What makes two configs of a tuning file the same: grid expressions, block, meta
    (the grid in y and z only where a config has them, so a 1-D config is the same text
    it always was)."""
    extents = [config.grid_y_expr, config.grid_z_expr]
    return json.dumps([config.grid_expr, config.block, config.meta,
                       *(extents if any(extents) else [])], sort_keys=True)


#: (tuning file, kernel) whose changed source was warned of in this process: once each.
_STALE_WARNED: set[tuple[str, str]] = set()


def warn_stale(config: TuningEntry, path: Path) -> None:
    """Warn (:class:`StaleTuningWarning`), once per kernel of a tuning file, that
    ``config`` (an entry a lookup may dispatch to) was tuned on an earlier source of its
    kernel, and how to tune it again."""
    _warn_once(path, config.name, lambda: _stale_text(
        path, config.kernel, config.name, config.tuned or config.exported, config.study))


def warn_unfound(config: TuningEntry, path: Path, why: str) -> None:
    """Warn (:class:`StaleTuningWarning`), once per kernel of a tuning file, that the
    source of ``config``'s kernel, tuned with a ``source_hash``, cannot be found to
    compare (``why``: :func:`unfound`'s): its winners are used unchecked."""
    _warn_once(path, config.name, lambda: _unfound_text(
        path, config.kernel, config.name, config.study, why))


def unfound(identity: str, options: Mapping[str, str] | None = None,
            hashed: Sequence[str] = ()) -> str | None:
    """Why the source of kernel ``identity`` cannot be found here to compare with the
    hash it was tuned on, and what to do, as :func:`_unfound_text` ends: a file its kept
    ``options`` name or its source read as that hash was taken (a ``cuda`` kernel's
    ``.cu`` file, a file it included, of those ``hashed`` names: its entry's
    ``source_files``; its reference's module; a user kernel's ``sweeper.cuda`` file, or
    one that includes, found from its module, not the tuning file) is not there
    (:func:`~sweeper.kernels.options_missing`), or its module is neither imported nor on
    the import path, or no longer defines it (:func:`~sweeper.kernels.source_unfound`);
    ``None`` where none is told.  Nothing is imported."""
    from sweeper.kernels import (
        files_gone,
        looked_for,
        options_missing,
        put_back,
        source_unfound,
    )

    missing = options_missing(identity, options or {}, hashed)
    where = looked_for(identity, "the entry's kernel_options (relative to the tuning "
                                 "file's folder) or the files they name") if missing else ""
    if missing and not options:     # a user kernel's sweeper.cuda files, from its module
        return (f"{files_gone(missing)}); they are used as they are, unchecked: "
                f"{put_back(missing, where)}, or to tune the kernel as it is now, {RETUNE}")
    if missing:
        return (f"{files_gone(missing)}, or the tuning file moved without "
                f"{'it' if len(missing) == 1 else 'them'}); they are used as they are, "
                f"unchecked: {put_back(missing, where)}, or to tune the kernel as it is "
                f"now, {RETUNE}")
    unfound = source_unfound(identity)
    if unfound is None:
        return None
    module, attr, bound = unfound
    if bound is None:
        gone = f"module {module!r} is neither imported nor on the import path" \
            if ":" in identity else "its module is neither imported nor on the import path"
        return (f"{gone}: renamed, or tuned in another working folder); they are used as "
                "they are, unchecked: run from the folder that holds it, or tune it again")
    return (f"module {module!r} no longer defines {attr!r}: renamed or removed since"
            f"{did_you_mean(attr, bound)}); they are used as they are, unchecked: to tune "
            f"the kernel as it is now, {RETUNE}")


def _unfound_text(path: str | Path, kernel: str, identity: str, study: str | None,
                  why: str) -> str:
    """What a warning of a kernel source that cannot be found to compare says: where,
    whose winners, which study tuned them, and why it cannot be found and what to do
    (``why``: :func:`unfound`'s)."""
    return (f"{path}: the winners of {kernel} were tuned for a source of {identity} (study "
            f"{study}) that cannot be found here to compare ({why}")


def _warn_once(path: str | Path, identity: str, text: Callable[[], str],
               importer_of: str | None = None) -> None:
    """A :class:`StaleTuningWarning` of ``text`` at the user's line (``importer_of``: the
    line importing that module), once per kernel (``identity``) of the tuning file or
    exported module at ``path`` (a stale source and one not found are one kernel's)."""
    key = (str(Path(path).resolve()), identity)
    if key in _STALE_WARNED:
        return
    _STALE_WARNED.add(key)
    warnings.warn(text(), StaleTuningWarning, stacklevel=user_stacklevel(importer_of=importer_of))


def warn_stale_export(path: str | Path, data: Mapping[str, Any]) -> bool:
    """Warn (:class:`StaleTuningWarning`), once per process, where the module at ``path``
    that ``sweeper export --format triton`` wrote (its ``_DATA``, ``data``) holds winners
    tuned on another source of its kernel than the one there is now, as a lookup of a
    tuning file warns: the module calls this as it is imported, where sweeper is
    installed.  The source now is told as lookups tell it
    (:func:`~sweeper.kernels.source_hash_now`, running no code this process has not
    run); a kernel whose source cannot be found at all (its module gone, or no longer
    defining it: :func:`unfound`) is warned of, once, as not compared; winners without
    a hash, a kernel whose source cannot be told otherwise, and a ``_DATA`` of another
    shape say nothing; a kernel built from its space's options (a ``torch-op`` module an
    older sweeper wrote, before its studies were refused this format) is hashed from those
    the module keeps (``kernel_options``), as a tuning entry's.  Whether some winner is
    stale (warned of now or before)."""
    from sweeper.kernels import source_hash_now

    try:
        kernel = str(data["kernel"])
        identity = str(data.get("kernel_path") or kernel)
        options = data.get("kernel_options")
        options = {str(k): str(v) for k, v in options.items()} if options else None
        winners = [w for s in data["gpus"].values() for w in s["winners"]
                   if isinstance(w, Mapping) and isinstance(w.get("source_hash"), str)]
    except (KeyError, TypeError, AttributeError):
        return False
    if not winners:
        return False
    now = source_hash_now(identity, options)
    why = unfound(identity, options) if now is None else None
    if why is not None:
        _warn_once(path, identity, lambda: _unfound_text(
            path, kernel, identity, str(winners[0].get("study")), why), importer_of=str(path))
    stale = [w for w in winners if now is not None and w["source_hash"] != now]
    if stale:
        _warn_once(path, identity, lambda: _stale_text(
            path, kernel, identity, str(stale[0].get("tuned") or ""), str(stale[0].get("study"))),
            importer_of=str(path))
    return bool(stale)


def _stale_text(path: str | Path, kernel: str, identity: str, tuned: str | None,
                study: str | None) -> str:
    """What a stale warning says: where, whose winners, when and by which study they
    were tuned, and how to tune the source as it is now."""
    date = (tuned or "")[:10]
    when = f"tuned {date}, " if date else ""
    return (f"{path}: the winners of {kernel} were tuned for an earlier source of "
            f"{identity} ({when}study {study}); they are used as they are: to tune its "
            f"source as it is now, {RETUNE}")


def warn_for(config: TunedConfig, gpu: str, asked: Mapping[str, int | None],
             instead: str = "") -> None:
    """Warn (:class:`TuningWarning`) when ``config`` was tuned on another GPU of the same
    architecture, or at a problem far from ``asked`` (``instead``: what else the caller
    can do about that, after tuning it)."""
    if config.by_architecture:
        warnings.warn(f"{config.kernel} {config.dtype}: nothing tuned on {gpu!r}; using the "
                      f"config tuned on {config.gpu!r}, the same architecture (compute "
                      "capability major version); tune on this GPU for its own",
                      TuningWarning, stacklevel=user_stacklevel())
    if config.far:
        warnings.warn(f"{config.kernel} {config.dtype}: {far_text(config, asked)}{instead}",
                      TuningWarning, stacklevel=user_stacklevel())


def far_text(config: TunedConfig, asked: Mapping[str, int | None]) -> str:
    """``the nearest tuned problem, 1GiB, is far from the asked 16KiB ...``: what a far
    match warns, and how to tune the size asked (into the study it was found in)."""
    if "footprint" in asked:
        want, have = format_size(asked["footprint"] or 1), format_size(config.footprint)
    else:
        want = show_dims({k: v or 1 for k, v in asked.items()})
        have = show_dims(config.dims)
    return (f"the nearest tuned problem, {have}, is far from the asked {want} (more than "
            f"{FAR_RATIO:g}x in a dimension); its config may be far from this problem's "
            f"best: tune {want} (add it to the space of study {config.study}, run it and "
            "export the study again)")


@cut_at_call
@entry(spelled=False, needs={
    "kernel": "the kernel's name, as the tuning file names it, such as 'copy'",
    "dtype": "the problem's dtype, such as 'float32', 'fp32' or torch.float32"})
def tuned(kernel: str, *, dtype: object, footprint: int | None = None,
          dims: Mapping[str, int] | None = None, gpu: str | None = None,
          path: str | Path | None = None, cache: str = "cold") -> TunedConfig:
    """The tuned config for ``kernel`` (its name; a ``module:attr`` path also matches; a
    CUDA C kernel is ``cuda:FILE.cu:ENTRY``, :attr:`~sweeper.tuning.TuningEntry.name`,
    its ``.cu`` file's path or as much of its end as tells it apart from another's; a
    torch op ``torch-op:OP``)
    in ``dtype`` (``float32``, ``fp32`` or ``torch.float32``) on ``gpu`` (default: this
    one; a replay of it matches, else another GPU of its architecture with a warning),
    for a problem of ``dims`` or of ``footprint`` bytes (a number, or a size such as
    ``"256MiB"``): the entry tuned there, else the
    nearest (:mod:`sweeper.matching`; a warning when far).  The grid is computed for the
    problem asked for; ``median_ms`` is the one the report shows.  ``cache``: the cache
    mode the winner was measured in, ``cold`` (L2 flushed before each sample: the
    default, and what an entry of an older sweeper was) or ``warm``; the other mode's
    entries are never served in its place."""
    return Tuning(path).config(kernel, dtype=dtype, footprint=footprint, dims=dims, gpu=gpu,
                               cache=cache)


def _checked_problem(footprint: object, dims: Mapping[str, object] | None, dtype: str
                     ) -> tuple[int | None, dict[str, int] | None]:
    """The problem :func:`tuned` looks up, its sizes as Python ``int``s (numpy's integers
    taken as the integers they are); one it cannot look up is refused with what it
    takes."""
    if (footprint is None) == (dims is None):
        raise SweeperError("give the problem by footprint=BYTES or by dims={NAME: SIZE}, "
                           "one of them")
    size = whole(footprint)
    if isinstance(footprint, str):              # "256MiB", as `sweeper tuned` takes it
        try:
            size = parse_size(footprint)
        except ValueError as err:
            raise SweeperError(f"footprint: {err}") from None
    if footprint is not None and (size is None or size <= 0):
        raise SweeperError(f"footprint {footprint!r}: give a positive number of bytes, or "
                           "a size such as '256MiB'")
    # past 2**62 no entry's grid or footprint rule can be computed: the asked size is
    # wrong, not the tuning file whose expression would overflow on it
    if size is not None and size > LIMIT:
        raise SweeperError(f"footprint {size} B is too large; allowed: at most 2**62 bytes "
                           f"({LIMIT})")
    if size is not None and size < DTYPES[dtype]:
        raise SweeperError(f"footprint {size} B is less than one {dtype} element "
                           f"({DTYPES[dtype]} bytes); give at least that (e.g. 256MiB)")
    if size is not None and size % DTYPES[dtype]:
        whole_size = size - size % DTYPES[dtype]
        raise SweeperError(f"footprint {size} B is no whole number of {dtype} elements; "
                           f"allowed: a multiple of {DTYPES[dtype]} bytes (e.g. {whole_size})")
    if dims is None:
        return size, None
    sizes = {k: whole(v) for k, v in dims.items()} if isinstance(dims, Mapping) else {}
    if not sizes or not all(isinstance(k, str) and v is not None and v > 0
                            for k, v in sizes.items()):
        shown = dict(dims) if isinstance(dims, Mapping) else dims
        raise SweeperError(f"dims {shown!r}: give each dimension a positive integer "
                           "(e.g. {'M': 4096, 'N': 2048, 'K': 8192})")
    big = next((k for k, v in sizes.items() if v is not None and v > LIMIT), None)
    if big is not None:
        raise SweeperError(f"dims: {big}={sizes[big]} is too large; allowed: at most 2**62 "
                           f"({LIMIT})")
    return None, {k: v for k, v in sizes.items() if v is not None}


def _problem_of(entry: TuningEntry, asked: Mapping[str, int], *, by_dims: bool
                ) -> Mapping[str, int]:
    """The problem ``entry`` was tuned at, as a lookup of ``asked`` (by its dimensions
    where ``by_dims``, else by its footprint) measures its distance: the problem it
    measured, or ``asked`` itself where that is the problem its space asked for and the
    device measured smaller (:attr:`TuningEntry.asked`), which it was tuned for."""
    if (dict(asked) == entry.asked_dims) if by_dims else \
            (asked["footprint"] == entry.asked_footprint):
        return asked
    return entry.dims if by_dims else {"footprint": entry.footprint}


def describe(config: TunedConfig) -> str:
    """One line: the launch config, the kernel's headline rate where it was tuned (and
    that it was measured warm, the L2 not flushed, where it was), how far that is
    from the problem asked for, and where the entry is its problem's sweep's best for
    now (its note: the interleaved final has not run yet), that, as its export said."""
    meta = " ".join(f"{k}={v}" for k, v in config.meta.items())
    tuned_at = Problem(config.dtype, config.footprint, tuple(config.dims.items())).describe()
    if config.asked_footprint is not None:      # measured shrunk (the interpreter's cap)
        asked = Problem(config.dtype, config.asked_footprint,
                        tuple((config.asked_dims or {}).items())).describe()
        tuned_at += f" for the asked {asked}, shrunk to fit its device"
    near = "exact" if config.distance == 0 else \
        f"nearest, log2 distance {config.distance:.3g}{'; far' if config.far else ''}"
    warm = " warm (L2 not flushed)" if config.cache == "warm" else ""
    kernel = config.name if config.name != config.identity else config.kernel  # cuda:F:E
    # a CUDA C kernel's block is blockDim.x (cuda, sweeper.cuda): no warps a Triton launch
    # is given
    warps = f" (num_warps={config.num_warps})" if launches_warps(config.identity) else ""
    grids = "".join(f" {axis}={getattr(config, axis)} ({text})" for axis, text in
                    (("grid_y", config.grid_y_expr), ("grid_z", config.grid_z_expr)) if text)
    for_now = f"; the sweep's best for now: {config.note}" if config.note else ""
    return (f"{kernel} {config.dtype} on {config.gpu}: grid={config.grid} "
            f"({config.grid_expr}){grids} block={config.block}{warps} {meta}; "
            f"tuned{warm} at {tuned_at} ({near}): median {config.median_ms:.4g} ms, "
            f"{config.rate:.4g} {config.headline.unit} (study {config.study})"
            f"{for_now}"
            f"{'; STALE: tuned for an earlier source of the kernel' if config.stale else ''}")


__all__ = ["Candidate", "TunedConfig", "Tuning", "cache_problem", "current_gpu", "describe",
           "far_text", "tuned", "warn_for", "warn_stale", "warn_stale_export", "warn_unfound"]
