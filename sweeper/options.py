"""Option values checked at the edge, before anything is read or written: the command's
(its parser names the option in front of the one line) and the Python API's alike.

A bad value is an :class:`OptionValueError`, one line; the command makes it exit status 2, as
a bad space file is.  Only the command line's parser (:mod:`sweeper.cli`) is built on the
standard library's option parsing; nothing here imports it.
"""

from __future__ import annotations

from pathlib import Path

from sweeper.core._spelling import given, option
from sweeper.core._units import MAX_TRIALS
from sweeper.errors import SweeperError


class OptionValueError(SweeperError):
    """A bad option value, said in one line without the option's name (the command's
    parser and the API each put it in front)."""


def digits(text: str) -> int | None:
    """``text`` as a whole number where it is ASCII digits only, else ``None``: also where
    it has more digits than Python's ``int()`` reads (4300, ``sys.get_int_max_str_digits``),
    whose ``ValueError`` would otherwise escape as argparse's message quoting the whole
    text, where the option's own one-line error is due."""
    if not (text.isascii() and text.isdigit()):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def trial_budget(text: str) -> int:
    """A budget of trials, as the command's text: a whole number from 1 to
    :data:`MAX_TRIALS`."""
    return trials_within(digits(text), repr(text[:40]))


def trials_within(number: int | None, shown: str) -> int:
    """``number`` (None: not a whole number) as a budget of trials, from 1 to
    :data:`MAX_TRIALS`; refused quoting ``shown``, the value as its caller gave it (the
    command's text ``'0'``, the API's number ``0``)."""
    if number is None or number < 1:
        raise OptionValueError(f"{shown} is not a whole number >= 1")
    if number > MAX_TRIALS:
        raise OptionValueError(f"{shown} is more trials than {MAX_TRIALS:,}; allowed: "
                               f"a whole number from 1 to {MAX_TRIALS:,}")
    return number


def worker_name(text: str) -> str:
    """A worker's name in claims: text that is not empty (empty would read as unnamed and
    be replaced by HOST:PID, unsaid)."""
    if not text.strip():
        raise OptionValueError(f"{text!r} is no name; allowed: text that is not empty, "
                               "such as gpu-host-3 (default: HOST:PID)")
    return text


def _not_empty(text: str, what: str, allowed: str) -> str:
    """``text``, an option's value, where it is not empty (or blank), as a script's unset
    variable gives (``-o "$OUT"``): read as the option left out, it took the option's
    default, unsaid; else an :class:`OptionValueError` saying it is no ``what``."""
    if not text.strip():
        raise OptionValueError(f"{text!r} is no {what}; allowed: {allowed}")
    return text


def file_path(text: str) -> str:
    """A file's path given to an option (``-o``, ``--tuning``): not empty (an empty one
    wrote to or read the option's default file)."""
    return _not_empty(text, "path", "a file's path (leave the option out for its default)")


def gpu_name(text: str) -> str:
    """``tuned --gpu``: a device's name as a tuning file has it, not empty (an empty one
    looked up this machine's GPU)."""
    return _not_empty(text, "GPU's name", "the device as the tuning file names it, e.g. "
                      "'NVIDIA H200' (leave the option out for this machine's)")


def compile_workers(text: str) -> int | None:
    """``--compile-workers``: a count >= 0 (0: off), or ``auto`` (None, as when the option
    is left out: as many as the cores the workers leave, counted when the sweep starts)."""
    number = digits(text)
    if text != "auto" and number is None:
        raise OptionValueError(f"{text[:40]!r} is not a whole number >= 0")
    return number


#: ``--scale``'s values, the colour scales a study's heatmaps may have: one for the
#: study, one per problem, or one per map (:mod:`sweeper.report._heatmaps`).
SCALES = ("study", "problem", "map")

#: ``--gpu-check``'s values: one representative binary, every binary, none
#: (:mod:`sweeper.sweep._gpu_check`).
GPU_CHECKS = ("first", "all", "off")
#: The GPU ``--gpu-check`` compiles for unless ``--gpu-check-target`` names another
#: (H100, H200).
GPU_CHECK_TARGET = "sm_90"


#: The CUDA architectures (compute capability x 10) ``--gpu-check-target`` takes: those
#: of CUDA 12.9-13's ``ptxas`` from Volta on (a target the installed ``ptxas`` does not
#: know skips the check with a line, :func:`sweeper.sweep._gpu_check.cannot_compile`).
CUDA_ARCHS = (70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)


def gpu_target(text: str) -> str:
    """``--gpu-check-target``: a CUDA architecture, ``sm_90`` (or ``90``, ``sm_100a``),
    as ``sm_NN``; one of :data:`CUDA_ARCHS`, so that a typo is refused before the run,
    not recorded as every config's compile error."""
    import re

    m = re.fullmatch(r"(?:sm_?)?(\d+)[af]?", text.strip(), re.ASCII)
    if not m:
        raise OptionValueError(f"{text[:40]!r}: expected a CUDA architecture such as sm_90")
    arch = digits(m.group(1))
    if arch not in CUDA_ARCHS:
        raise OptionValueError(f"{text[:40]!r}: not a CUDA architecture; one of "
                               f"{', '.join(f'sm_{a}' for a in CUDA_ARCHS)}")
    return f"sm_{arch}"


def gpu_list(text: str) -> list[int] | None:
    """``--gpus``: GPU indices, comma-separated and each once (``0,1``), or ``all`` (None:
    every visible GPU, counted when the device is open)."""
    if text == "all":
        return None
    indices = [digits(p) for p in text.split(",")]
    if None in indices or len(set(indices)) < len(indices):
        raise OptionValueError(
            f"{text[:40]!r}: give GPU indices, comma-separated and each once (0,1), or all")
    return [i for i in indices if i is not None]


def seconds(text: str | float, shown: str | None = None) -> float:
    """An option's duration in seconds: finite, positive and at most 1000 h
    (:data:`~sweeper.core._units.MAX_DURATION_S`), from text (``90s``, ``10m``, ``1h30m``) or, from
    the API, a number of seconds; refused quoting ``shown``, the value as its caller gave
    it (the API's number ``-1``), where given, else the text (``'-1'``)."""
    from sweeper.space import parse_duration

    try:
        return parse_duration(text, shown)
    except ValueError as err:
        raise OptionValueError(str(err)) from None


#: The shortest claim lease a worker takes (``--lease``): a claim is renewed every third
#: of its lease (:data:`~sweeper.sweep._claims.BEATS_PER_LEASE`), and each renewal is a
#: write to the store (a database round trip, or a wait for the study's lock behind another
#: worker's write) that must land before the lease runs out; at 3 s a renewal every second
#: may be two seconds late.  Shorter (``1ms``), claims lapse between renewals and several
#: workers measure the same config.
MIN_LEASE_S = 3.0


def lease(text: str | float, shown: str | None = None) -> float:
    """A worker's claim lease in seconds (``--lease``, :class:`sweeper.engine.WorkerOptions`'s
    ``lease_s``): a duration as :func:`seconds` takes it, at least :data:`MIN_LEASE_S`;
    refused quoting ``shown`` where given, else the text."""
    value = seconds(text, shown)
    if value < MIN_LEASE_S:
        raise OptionValueError(
            f"{shown if shown is not None else repr(str(text)[:40])} is shorter than "
            f"{MIN_LEASE_S:g}s: a worker renews its claim every third of the lease, and a "
            "renewal (a database round trip, a wait for the study's lock) that lands after "
            "the lease ran out lets another worker measure the same config; allowed: "
            f"{MIN_LEASE_S:g}s or longer (default 60s)")
    return value


def check_study_name(name_shown: str, name: str) -> None:
    """Refuse a study name given as an option by the rule the space file's ``study:``
    follows (:mod:`sweeper.core._names`); the message starts with ``name_shown``, the
    option as its caller names it (``--study``, ``study``: :func:`option`)."""
    from sweeper.core._names import study_name_problem

    problem = study_name_problem(name)
    if problem:
        raise SweeperError(f"{name_shown}: {problem}")


def study_folder(studies_dir: str, name: str, keyword: str = "studies_dir") -> Path:
    """The folder of study ``name`` under ``studies_dir`` (the value of the option whose
    API keyword is ``keyword``: ``--to`` for copy-study's ``target``), refused unless it
    lies inside it once links are resolved (a link planted there could point anywhere).
    Its errors name that option as the caller does (:func:`option`)."""
    root = Path(studies_dir)
    if root.exists() and not root.is_dir():
        raise SweeperError(f"{given(keyword, studies_dir)}: not a folder")
    folder = root / name
    inside, lands = root.resolve(), folder.resolve()
    if lands == inside or not lands.is_relative_to(inside):
        raise SweeperError(f"{folder}: resolves to {lands}, outside the studies folder "
                           f"{inside}; a study is written under {option(keyword)} only")
    return folder


__all__ = ["MIN_LEASE_S", "OptionValueError", "check_study_name", "digits", "gpu_list", "lease",
           "seconds",
           "study_folder", "trial_budget", "trials_within", "worker_name"]



def near_study(path: Path, *others: Path) -> str:
    """``"; did you mean studies/copy-fp32-interpret?"`` where ``path`` is a file in
    that study's folder (its report.md, its journal), or a study folder beside ``path``
    (or in ``others``) has a name close to its own, else ``""``."""
    from sweeper.core._units import closest

    if (path.parent / "study.json").is_file():
        return f"; did you mean {path.parent}?"
    found = {p.name: p for folder in (path.parent, *others) if folder.is_dir()
             for p in sorted(folder.iterdir()) if (p / "study.json").is_file()}
    if path.is_file() and path.suffix in (".yaml", ".yml"):
        return _space_studies(path, list(found.values()))
    name = closest(path.name, found)
    return f"; did you mean {found[name]}?" if name is not None else ""


def _space_studies(space: Path, studies: list[Path]) -> str:
    """``"; spaces/copy.yaml is a space file, not a study; its studies: ..."``: the
    studies whose recorded space text is that file's, as they are named."""
    import hashlib
    import json

    digest = hashlib.sha256(space.read_bytes()).hexdigest()
    mine = []
    for folder in studies:
        try:
            meta = json.loads((folder / "study.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("space_sha256") == digest:
            mine.append(str(folder))
    said = f"; {space} is a space file, not a study"
    return said + (f"; its studies: {', '.join(mine)}" if mine else
                   f"; no study here ran it (sweeper run {space} makes one)")
