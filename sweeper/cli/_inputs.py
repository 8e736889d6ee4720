"""What the commands read from their options, checked once: the space they name, a
study on disk, a fraction.  Each error is one line naming what is wrong."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweeper.engine._options import SpaceSource
from sweeper.errors import StudyError, SweeperError


def space_source(args: argparse.Namespace) -> SpaceSource:
    """The space a command's options name: ``SPACE`` or ``--from-autotune``, ``-p`` and
    ``--allow-path``."""
    return SpaceSource(path=args.space, from_autotune=getattr(args, "from_autotune", None),
                       params=tuple(args.param or ()),
                       allow_path=tuple(str(p) for p in args.allow_path or ()))


def open_study(args: argparse.Namespace) -> Any:
    """The study ``args.study`` names: in ``--storage``'s database, else a folder, else a
    name under ``--studies-dir``."""
    from sweeper.store import StudyStore

    if getattr(args, "storage", None) is not None:
        from sweeper.options import study_folder
        from sweeper.store._open import open_storage

        found = open_storage(args.storage, study_folder(args.studies_dir, args.study))
        if not found.exists():
            raise StudyError(f"no study {args.study!r} in {found.location}")
        return found
    path = Path(args.study)
    if not (path / "study.json").exists() and not (path / "trials.jsonl").exists():
        path = Path(args.studies_dir) / args.study
    if not StudyStore(path).orphaned() and not StudyStore(path).exists():
        from sweeper.options import near_study

        looked = args.study if path == Path(args.study) else f"{args.study} and {path}"
        raise StudyError(f"no study {args.study!r} (looked in {looked})"
                         f"{near_study(Path(args.study), Path(args.studies_dir))}")
    from sweeper.api._study import load_study

    return load_study(path).storage


def recorded_command(argv: Sequence[str]) -> str:
    """``sweeper ARGV`` shell-quoted, as a study records the command that ran it, with
    every URL in it masked (:func:`sweeper.store._url.mask_url`): no password reaches
    the study's metadata or its report."""
    if any("://" in arg for arg in argv):
        from sweeper.store._url import mask_url

        argv = [mask_url(arg) if "://" in arg else arg for arg in argv]
    return shlex.join(["sweeper", *argv])


def fraction_option(option: str, text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05, or a one-line error naming the option."""
    number = text.strip()
    try:
        value = float(number[:-1]) / 100 if number.endswith("%") else float(number)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise SweeperError(f"{option}: {text!r} is not a fraction; allowed: 0% to under "
                           "100% (e.g. 1% or 0.01)")
    return value
