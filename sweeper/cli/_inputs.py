"""What the commands read from their options, checked once: the space file and the
device, a study on disk, a fraction; and the command line as a study records it.  Each
error is one line naming what is wrong."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sweeper.errors import StudyError, SweeperError


def space_and_device(args: argparse.Namespace, for_plan: bool = False,
                     on_space: Callable[[Any], object] | None = None) -> tuple[Any, Any]:
    """The device's name, the space (with -p overrides) and the device itself, checked in
    that order, then the space against the device; ``for_plan``: kernel options checked
    by form only, and the device's plan stand-in (``open_device``): no torch imported.
    ``on_space`` is called with the space once it is read, before the device opens."""
    from sweeper.devices import device_class, open_device
    from sweeper.space import autotune_space, load_space

    # the variables a device sets (the interpreter's) before any kernel module is imported
    os.environ.update(device_class(args.device).sets_env)
    target = getattr(args, "from_autotune", None)
    if (args.space is None) == (target is None):
        raise SweeperError("give a space file or --from-autotune module:kernel (one of them)")
    # the Python API gives a space as text (``space_text``) under a pseudo file name
    space = autotune_space(target, args.param) if target is not None else \
        load_space(args.space, args.param, allow=args.allow_path, user_code=not for_plan,
                   text=getattr(args, "space_text", None))
    if on_space is not None:
        on_space(space)
    device = open_device(args.device, for_plan=for_plan)
    device.check_space(space)
    return space, device


def kernel_for(space: Any, device: Any) -> Any:
    """The space's kernel, constructed with its options; refused in one line where it
    runs on a CUDA GPU only and ``device`` launches elsewhere (a replay launches nothing)."""
    from sweeper.kernels import load_kernel

    kernel = load_kernel(space.kernel, space.kernel_options)
    if kernel.needs_gpu and not device.replays and device.torch_device != "cuda":
        raise SweeperError(f"kernel {kernel.name} runs on a CUDA GPU only (compiled CUDA "
                           f"C); device {device.name} cannot run it: run on a GPU (leave "
                           "out --device) or replay a recorded table (--device "
                           "replay:TABLE.csv)")
    return kernel


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
        raise StudyError(f"no study {args.study!r} (looked in {args.study} and {path})")
    from sweeper.api._study import load_study

    return load_study(path)


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
