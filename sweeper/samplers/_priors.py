"""Priors for ``auto``: the best configs of earlier studies of the same kernel on the same
GPU (another footprint or dtype), translated into this space's labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweeper.space import Space

PER_STUDY = 3


def priors_from_studies(studies_dir: str | Path, space: Space, gpu: str,
                        exclude: str | Path | None = None) -> list[dict[str, str]]:
    """Up to ``PER_STUDY`` best configs from every other study of ``space.kernel`` on
    ``gpu`` whose labels this space also has (axes of one value are filled in)."""
    from sweeper.store import StudyStore

    out: list[dict[str, str]] = []
    for meta_path in sorted(Path(studies_dir).glob("*/study.json")):
        root = meta_path.parent
        if exclude is not None and root.resolve() == Path(exclude).resolve():
            continue
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if meta.get("kernel") != space.kernel or \
                meta.get("environment", {}).get("gpu") != gpu:
            continue
        trials = [t for t in StudyStore(root).records()[0] if t.ok and not t.suspicious]
        for t in sorted(trials, key=lambda t: -t.score)[:PER_STUDY]:
            choice = _translate(t.choice, space)
            if choice is not None and choice not in out:
                out.append(choice)
    return out


def _translate(choice: dict[str, Any], space: Space) -> dict[str, str] | None:
    out = {}
    for axis in space.axes:
        label = str(choice.get(axis.name, ""))
        if label in axis.labels:
            out[axis.name] = label
        elif len(axis.labels) == 1:
            out[axis.name] = axis.labels[0]
        else:
            return None
    return out
