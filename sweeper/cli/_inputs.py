"""What the commands read from their options, checked once: the space they name, a
study on disk, a fraction.  Each error is one line naming what is wrong."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from typing import Any

from sweeper.engine._options import SpaceSource
from sweeper.errors import SweeperError


def space_source(args: argparse.Namespace) -> SpaceSource:
    """The space a command's options name: ``SPACE`` or ``--from-autotune``, ``-p`` and
    ``--allow-path``."""
    return SpaceSource(path=args.space, from_autotune=getattr(args, "from_autotune", None),
                       params=tuple(args.param or ()),
                       allow_path=tuple(str(p) for p in args.allow_path or ()))


def open_study(args: argparse.Namespace) -> Any:
    """The study ``args.study`` names: in ``--storage``'s database, else a folder, else a
    name under ``--studies-dir`` (:func:`sweeper.api._study.find_study`, which
    :func:`sweeper.load_study` shares)."""
    from sweeper.api._study import find_study

    return find_study(args.study, storage=getattr(args, "storage", None),
                      studies_dir=args.studies_dir)


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
        raise SweeperError(f"{option}: {text[:40]!r} is not a fraction; allowed: 0% to under "
                           "100% (e.g. 1% or 0.01)")
    return value
