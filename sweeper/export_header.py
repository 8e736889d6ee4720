"""``sweeper export STUDY --format header``: a CUDA C kernel's winners as a C header of
``#define``s, so that a program of one's own compiles the tuned values in (Kernel Tuner's
``store_results`` and ``create_device_targets``).

One header per kernel, one section per GPU, guarded as Kernel Tuner guards them: a
program compiled with ``-DTARGET_NVIDIA_H200`` takes that GPU's configs (the GPU's name,
each run of other characters one ``_``), and with ``-DPROBLEM_float32_M4096_N4096_K4096``
too the winner of that tuned problem (its dtype and dimensions), its grid and shared
memory as they launched there; with a GPU alone, the GPU's default, the config that won
most of its problems (of those, the one that won the largest); with neither, that rule
over every GPU's winners.  Each config defines what its compile defined
(:meth:`~sweeper.kernels._cuda_build.CudaLaunch.tuned_launch`: ``block_size_x``,
``block_size_y``, ``block_size_z``, each meta-parameter the template does not pass, and a
problem's ``DTYPE``), each under ``#ifndef`` so that a name given already (``-D``, a
sweep of the kernel that includes the header) is kept, and its launch as
``<ENTRY>_BLOCK_X`` ... (``<ENTRY>_GRID_X`` ... and ``<ENTRY>_SHARED_MEMORY`` for a
problem; ``<ENTRY>_INSTANCE`` where a template instantiates the entry).

The header's data is one JSON comment line read back when another study is exported
into it: another GPU's study adds its section, another study of a GPU already there the
winners of the problems it measured.  The launch comes from the study
(:attr:`~sweeper.store.StudyMeta.cuda_launch`, or a ``cuda`` kernel's recorded options),
so nothing of the user's is imported; a study of a Triton kernel is refused, as no
``#define`` compiles it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from sweeper.core._spelling import option
from sweeper.errors import SweeperError
from sweeper.export import (
    StudyWinners,
    data_line,
    kernel_declared,
    measured_source,
    output_file,
    recorded_options,
    recorded_space,
    study_winners,
    warn_source_changed,
    warn_without_winner,
)
from sweeper.finals import problem_of
from sweeper.fsio import atomic_write
from sweeper.kernels._cuda_build import CudaLaunch
from sweeper.space import DTYPES
from sweeper.store import StudyMeta, StudyStore
from sweeper.tuning import kernel_name
from sweeper.winners import UNFINISHED

#: The first line of every header this writes: what marks a file it may merge into.
MARKER = "// sweeper header export v1"
#: The line holding the header's data (JSON, ASCII, on one line).
DATA_PREFIX = "// data: "
#: What an entry or its template's instantiation may be, to stand in a ``#define``: a C++
#: name and, in angle brackets, the arguments a template takes (one line, no comment).
INSTANCE = re.compile(r"[A-Za-z_][\w:]*(?:<[\w:<>, .+\-*()]*>)?", re.ASCII)


class HeaderExport(NamedTuple):
    """What :func:`export_header` wrote: where, for which GPU (as its section is named),
    that GPU's section (its winners) and the problems (as a report names them) whose
    winner is the sweep's best for now, their finals not run yet."""

    path: Path
    gpu: str
    section: dict[str, Any]
    unfinished: list[str]


def export_header(store: StudyStore, path: str | Path) -> HeaderExport:
    """Write (or merge into) the header at ``path`` the study's winners for its GPU."""
    target = output_file(store, Path(path))
    won = study_winners(store)
    launch = study_launch(won.meta)
    data = _existing(target)
    meta = won.meta
    options = recorded_options(meta)              # read once: the space text parsed
    kernel = kernel_name(meta.tuned_name, meta.kernel if meta.tuned_name != meta.kernel
                         else None, options)
    if data is not None and data["kernel"] != kernel:
        raise SweeperError(f"{target}: holds kernel {data['kernel']!r}, not {kernel!r}; one "
                           "header per kernel: give another -o")
    data = data or {"kernel": kernel, "entry": launch.entry, "gpus": {}}
    if launch.constant_memory:                    # what a launch must set first
        data["constant_memory"] = list(launch.constant_memory)
    gpu = won.meta.gpu.removeprefix("replay: ")
    clash = next((g for g in data["gpus"] if g != gpu and target_macro(g) == target_macro(gpu)),
                 None)
    if clash is not None:
        raise SweeperError(f"{target}: GPUs {clash!r} and {gpu!r} would both be "
                           f"{target_macro(gpu)}; give another -o")
    section = merged(data["gpus"].get(gpu), _section(won, launch))
    data["gpus"][gpu] = section
    atomic_write(target, render(data))
    warn_without_winner(won)
    warn_source_changed(meta, options, recorded_space(meta), measured_source(meta))
    return HeaderExport(target, gpu, section, won.unfinished_named())


def study_launch(meta: StudyMeta) -> CudaLaunch:
    """How the study's CUDA C kernel compiled and launched its configs: as its run
    recorded it (:attr:`~sweeper.store.StudyMeta.cuda_launch`), else from a ``cuda``
    kernel's options its space recorded (a study an older sweeper wrote).  A kernel that
    is no CUDA C is refused with the formats that serve it; a ``sweeper.cuda`` kernel of
    an older study, with how to record its launch."""
    launch = CudaLaunch.of_record(meta.cuda_launch) if meta.cuda_launch else None
    options = recorded_options(meta) if launch is None and meta.kernel == "cuda" else None
    if options is not None and "source" in options and "entry" in options:
        launch = CudaLaunch.of_options(options, "")
    if launch is not None:
        return launch
    declared = kernel_declared(meta.kernel)
    if getattr(declared, "needs_gpu", False):
        raise SweeperError(
            f"study {meta.study}: it recorded no launch of its CUDA C kernel {meta.kernel} "
            "(an older sweeper ran it), which a header's defines say; allowed: run the "
            "study again with this sweeper (sweeper run SPACE resumes it, measuring "
            "nothing new), then export it")
    raise SweeperError(
        f"kernel {meta.tuned_name} is not compiled CUDA C, so no #define compiles its "
        f"configs into a header; allowed: {option('format')} triton (a module of "
        "triton.Configs for @triton.autotune), tuning (sweeper.tuned), csv, parquet or "
        "optuna")


def target_macro(gpu: str) -> str:
    """The macro a program defines to compile a GPU's configs, as Kernel Tuner names it:
    ``TARGET_`` and the GPU's name, each run of other characters than ASCII letters and
    digits one ``_`` (``TARGET_NVIDIA_H200``)."""
    return "TARGET_" + (re.sub(r"[^0-9A-Za-z]+", "_", gpu.strip()).strip("_") or "GPU")


def problem_macro(winner: dict[str, Any]) -> str:
    """The macro a program defines to compile one tuned problem's winner: its dtype and
    dimensions (``PROBLEM_float32_M4096_N4096_K4096``)."""
    return "_".join(["PROBLEM", winner["dtype"],
                     *(f"{k}{v}" for k, v in winner["dims"].items())])


def _section(won: StudyWinners, launch: CudaLaunch) -> dict[str, Any]:
    """One study's part of a GPU's section: each problem's winner as it compiled and
    launched, with where it came from."""
    winners = []
    for key, pick in won.picks.items():
        config = pick.trial.config
        assert config is not None                     # a pick always has one
        try:
            tuned = launch.tuned_launch(config)
        except ValueError as err:                     # it ran: its shared memory read
            raise SweeperError(f"study {won.meta.study}: trial {pick.trial.number}: "
                               f"{err}") from None
        if not INSTANCE.fullmatch(tuned.name):        # a study file edited by hand
            raise SweeperError(f"study {won.meta.study}: its kernel's entry "
                               f"{_comment(tuned.name)!r} is no C name or instantiation; "
                               "run the study again with this sweeper")
        winners.append({
            "study": won.meta.study, "dtype": key.dtype,
            "dims": dict(key.dims) or {"n": key.footprint // DTYPES[key.dtype]},
            "cache": problem_of(pick.trial).cache, "trial": pick.trial.number,
            "median_ms": pick.median_ms, "name": tuned.name,
            "defines": tuned.defines, "grid": list(tuned.grid), "block": list(tuned.block),
            "shared_mem": tuned.shared_mem,
            **({"note": UNFINISHED} if problem_of(pick.trial) in won.unfinished else {})})
    return {"studies": [won.meta.study], "winners": winners}


def merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new``, one study's section of a GPU, with the winners of ``old`` (the GPU's
    section in the header already) for the problems ``new`` did not measure."""
    mine = {problem_macro(w) for w in new["winners"]}
    kept = [w for w in (old or {}).get("winners", ()) if problem_macro(w) not in mine]
    studies = list(dict.fromkeys([*(str(w["study"]) for w in kept), *new["studies"]]))
    return {"studies": studies, "winners": kept + new["winners"]}


def default(winners: list[dict[str, Any]]) -> dict[str, Any]:
    """The config a program compiled without a problem takes, of ``winners``: the one
    that won most problems; of those, the one that won the largest (by its dimensions'
    product, then its dtype's size), as a program spends most of its time there."""
    def ident(w: dict[str, Any]) -> str:
        return json.dumps([w["name"], w["block"], _kept(w["defines"])], sort_keys=True)

    def size(w: dict[str, Any]) -> tuple[int, int]:
        product = 1
        for value in w["dims"].values():
            product *= int(value)
        return product, DTYPES[w["dtype"]]

    won = Counter(map(ident, winners))
    return max(winners, key=lambda w: (won[ident(w)], size(w)))


def _kept(defines: dict[str, str]) -> dict[str, str]:
    """A config's defines as a default gives them: without ``DTYPE``, the problem's."""
    return {k: v for k, v in defines.items() if k != "DTYPE"}


def render(data: dict[str, Any]) -> str:
    """The header's text for ``data``."""
    prefix = re.sub(r"\W", "_", data["entry"]).upper()
    gpus = data["gpus"]
    everyone = [w for s in gpus.values() for w in s["winners"]]
    listing = [f"//   {target_macro(g)}: {_comment(g)} (study "
               f"{_comment(', '.join(s['studies']))})" for g, s in gpus.items()]
    listing += [f"//   {m}" for m in dict.fromkeys(problem_macro(w) for w in everyone)]
    head = [
        MARKER,
        f"// The tuned configs of {_comment(data['kernel'])}, written by `sweeper export "
        "STUDY --format header`:",
        "// export again rather than edit it (another GPU's study adds its section, another "
        "study of a GPU its problems').",
        "// Compile with -DTARGET_<GPU> for a GPU's configs and -DPROBLEM_<...> for one "
        "tuned problem's winner; with a GPU",
        "// alone, its default (the config that won most of its problems); with neither, "
        "that of every GPU's winners.",
        "// A name defined already (-D, or before the #include) is kept. Beside the defines "
        f"the kernel compiled with: {prefix}_BLOCK_X/_Y/_Z,",
        f"// and for a problem {prefix}_GRID_X/_Y/_Z and {prefix}_SHARED_MEMORY (bytes of "
        f"dynamic shared memory); {prefix}_INSTANCE where a template",
        "// instantiates the entry.",
        *([f"// Before the first launch, set the __constant__ "
           f"{_comment(', '.join(map(str, data['constant_memory'])))} (cudaMemcpyToSymbol): "
           "sweeper copied in the data its constant_memory gave each config."]
          if data.get("constant_memory") else []),
        *listing,
        DATA_PREFIX + json.dumps(data, ensure_ascii=True),   # dims in their order
        "#pragma once",
    ]
    branches: list[tuple[str, list[str]]] = []
    for gpu, section in gpus.items():
        for w in section["winners"]:
            dims = " ".join(f"{k}={v}" for k, v in w["dims"].items())
            branches.append((f"defined({target_macro(gpu)}) && defined({problem_macro(w)})",
                             _config(prefix, w, problem=True, why=(
                                 f"{gpu}, {w['dtype']} {dims}: trial #{w['trial']} of "
                                 f"study {w['study']}, median {w['median_ms']:.4g} ms"
                                 f"{'' if w.get('cache', 'cold') == 'cold' else ' (L2 warm)'}"
                                 f"{'; ' + w['note'] if w.get('note') else ''}"))))
    for gpu, section in gpus.items():
        branches.append((f"defined({target_macro(gpu)})",
                         _config(prefix, default(section["winners"]), problem=False,
                                 why=f"{gpu}: its default")))
    lines = list(head)
    for i, (condition, config) in enumerate(branches):
        lines += [f"#{'elif' if i else 'if'} {condition}", *config]
    lines += ["#else", *_config(prefix, default(everyone), problem=False,
                                why="every GPU's default"), "#endif", ""]
    return "\n".join(lines)


def _config(prefix: str, winner: dict[str, Any], *, problem: bool, why: str) -> list[str]:
    """A config's lines: a comment saying whose, then each define under ``#ifndef``
    (``DTYPE`` and the grid and shared memory only for a ``problem``'s)."""
    defines = dict(winner["defines"] if problem else _kept(winner["defines"]))
    for axis, value in zip("XYZ", winner["block"], strict=True):
        defines[f"{prefix}_BLOCK_{axis}"] = str(value)
    if problem:
        for axis, value in zip("XYZ", winner["grid"], strict=True):
            defines[f"{prefix}_GRID_{axis}"] = str(value)
        defines[f"{prefix}_SHARED_MEMORY"] = str(winner["shared_mem"])
    if "<" in winner["name"]:
        defines[f"{prefix}_INSTANCE"] = winner["name"]
    lines = [f"/* {_comment(why)} */"]
    for name, value in defines.items():
        lines += [f"#ifndef {name}", f"#define {name} {value}", "#endif"]
    return lines


def _comment(text: str) -> str:
    """``text`` as a comment may hold it: one line of printable ASCII, without ``*/``."""
    return ascii(text)[1:-1].replace("*/", "*\\/")


def _existing(target: Path) -> dict[str, Any] | None:
    """The data of the header at ``target`` if this module wrote it, ``None`` when there
    is no file; any other file is refused rather than overwritten (:func:`data_line`)."""
    line = data_line(target, MARKER, DATA_PREFIX, "header `sweeper export --format header`")
    if line is None:
        return None
    try:
        data: dict[str, Any] = json.loads(line)
        if not isinstance(data, dict) or not isinstance(data.get("gpus"), dict):
            raise ValueError("no GPUs")
    except ValueError as err:
        raise SweeperError(f"{target}: its data line cannot be read ({err}); delete the "
                           "file and export again") from None
    return data


__all__ = ["export_header", "render", "study_launch", "target_macro"]
