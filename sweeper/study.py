"""A study's lifecycle around the sweep: what the space holds, and creating or resuming
the study on disk only when its fingerprint matches."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Mapping
from typing import Any

from sweeper.devices import Device
from sweeper.errors import StudyError, SweeperError
from sweeper.kernels import Kernel
from sweeper.space import AxisRole, Invalid, Space
from sweeper.store import StudyStore

MAX_ENUMERATED = 1_000_000

Choice = dict[str, str]


def enumerate_choices(space: Space, facts: Mapping[str, int], max_footprint: int | None = None
                      ) -> tuple[list[Choice], list[tuple[Choice, str]]]:
    """Every choice of the space, split into valid ones and ruled-out ones with the reason."""
    if space.size > MAX_ENUMERATED:
        raise SweeperError(f"{space.path}: the space has {space.size} configs; at most "
                           f"{MAX_ENUMERATED} can be enumerated")
    dims = space.choices()                 # zipped axes are one dimension
    valid: list[Choice] = []
    invalid: list[tuple[Choice, str]] = []
    for labels in itertools.product(*dims.values()):
        choice = space.expand(dict(zip(dims, labels)))
        try:
            space.resolve(choice, facts, max_footprint)
        except Invalid as err:
            invalid.append((choice, str(err)))
        else:
            valid.append(choice)
    return valid, invalid


FINGERPRINT_ENV = ("gpu_uuid", "driver", "cuda", "torch", "triton", "sweeper")


def fingerprint(space: Space, kernel: Kernel, device: Device,
                environment: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What must match for a study to be resumed: measurements are only comparable then."""
    env = environment if environment is not None else device.environment()
    out = {"device": device.name, "gpu": device.facts().name, "kernel": space.kernel,
           "kernel_source": kernel.source_hash(), "space_sha256": space.sha256}
    out.update({k: str(env[k]) for k in FINGERPRINT_ENV if k in env})
    out["env"] = " ".join(f"{k}={v}" for k, v in sorted(env.get("env", {}).items()))
    return out


def fingerprint_diff(have: Mapping[str, str], want: Mapping[str, str]) -> list[str]:
    """``key: old -> new`` for every fingerprint entry that differs."""
    return [f"{k}: {have.get(k)!r} -> {want.get(k)!r}" for k in sorted(set(have) | set(want))
            if have.get(k) != want.get(k)]


def open_study(store: StudyStore, space: Space, kernel: Kernel, device: Device, *,
               command: str, force: bool = False) -> None:
    """Create the study, or check that the one on disk may be resumed by this run (its
    journal then taken for this process and repaired if it needs it)."""
    environment = device.environment()
    wanted = fingerprint(space, kernel, device, environment)
    if store.orphaned():
        raise StudyError(f"{store.root}: {store.journal_path.name} without study.json; it "
                         "cannot be checked against this run; move it away or pass --study NEW")
    if store.exists():
        meta = store.meta()
        changed = fingerprint_diff(meta.get("fingerprint", {}), wanted)
        if changed and not force:
            raise StudyError(f"{store.root}: cannot resume, it was measured with other "
                             f"settings ({'; '.join(changed)}); use --force to add to it "
                             "anyway, or --study NAME for a new study")
        store.open_journal()
        store.update_meta(resumed=[*meta.get("resumed", []), now()], last_command=command)
        return
    store.create({
        "study": store.name, "kernel": space.kernel, "created": now(), "command": command,
        "space_path": space.path, "space_text": space.text, "space_sha256": space.sha256,
        "sampler": {"name": space.sampler.name, "seed": space.sampler.seed,
                    "baseline": [list(p) for p in space.sampler.baseline]},
        "measure": vars(device.measure_spec(space.measure)),
        "measure_requested": vars(space.measure),
        "measure_text": device.measure_spec(space.measure).describe(), "device_note": device.note,
        "environment": environment, "fingerprint": wanted,
        "kernel_source_hash": kernel.source_hash(), "headline": kernel.headline.value,
        "axes": {a.name: list(a.labels) for a in space.axes},
        "meta_axes": [a.name for a in space.axes if a.role is AxisRole.META],
    })


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


