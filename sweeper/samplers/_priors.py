"""Priors for ``auto``: the best configs of earlier studies of the same kernel on the same
GPU (another footprint or dtype), translated into this space's labels.

A meta-parameter that counts elements (``MetaParam.elements``, e.g. copy's ``BLOCK``) is
carried over at the same bytes when the dtype differs: fp32 copy's best of 1024 elements
per step becomes 2048 in fp16, the same 16 bytes per thread.  The untranslated config is
proposed after it, in case the kernel's optimum is not about bytes.

Priors decide where a search starts, so ``sweeper run`` names the studies they came from
(:func:`prior_sources`) and ``--no-priors`` turns them off: a study of the same problem
(another seed's run, say) hands ``auto`` its answer, which a benchmark of the search
must not count as found.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.errors import StudyWarning, SweeperError, user_stacklevel
from sweeper.space import DTYPES, AxisRole, Space, parse_size

if TYPE_CHECKING:
    from sweeper.store import TrialRecord

#: The best configs each earlier study hands on: enough to cover a near tie, few enough
#: that priors stay a short start.
PER_STUDY = 3


@dataclass
class PriorSource:
    """The configs one earlier study hands ``auto`` (its best, in this space's labels)."""

    study: str
    configs: list[dict[str, str]] = field(default_factory=list)
    #: Its best configs were measured on a problem (dtype, footprint, cache) this space
    #: measures too: they are answers, not hints from a neighbouring problem.
    same_problem: bool = False


def prior_sources(studies_dir: str | Path, space: Space, gpu: str,
                  exclude: str | Path | None = None) -> list[PriorSource]:
    """Up to ``PER_STUDY`` best configs from every other study of ``space.kernel`` on
    ``gpu`` whose labels this space also has (axes of one value are filled in), per
    study, in study-name order; a config two studies offer is counted for the first."""
    out: list[PriorSource] = []
    seen: list[dict[str, str]] = []
    for meta_path in sorted(Path(studies_dir).glob("*/study.json")):
        root = meta_path.parent
        if exclude is not None and root.resolve() == Path(exclude).resolve():
            continue
        found = _best_trials(root, space.kernel, gpu)
        if found is None:
            continue
        source, trials = found
        for t in trials:
            for choice in translate(t.choice, space):
                if choice not in seen:
                    seen.append(choice)
                    source.configs.append(choice)
                    source.same_problem |= _same_problem(t.choice, space)
        if source.configs:
            out.append(source)
    return out


def _best_trials(root: Path, kernel: str, gpu: str
                 ) -> tuple[PriorSource, list[TrialRecord]] | None:
    """The study at ``root`` (an empty source) and its ``PER_STUDY`` best trials measured
    on the kernel source it has now (:class:`~sweeper.winners.Sources`), if it is one of
    ``kernel`` on ``gpu``.  A study that cannot be read is skipped with one warning
    line; one with bad journal lines gives its good trials, with one warning line (the
    lines themselves are listed when that study is run or reported)."""
    from sweeper.store import StudyStore
    from sweeper.winners import Sources

    store = StudyStore(root)
    try:
        meta = store.study_meta()
        if meta.kernel != kernel or meta.environment.get("gpu") != gpu:
            return None
        # a study resumed with --force after its kernel was edited: its source now's
        trials = [t for t in Sources.of(meta).measured_now(store.records(warn=False)[0])
                  if t.ok and not t.suspicious]
    except SweeperError as err:
        warnings.warn(f"auto: study {root} skipped for priors: {err}", StudyWarning,
                      stacklevel=user_stacklevel())
        return None
    bad = store.bad_lines()
    if bad:
        warnings.warn(f"auto: study {root}: {len(bad)} bad line(s) in its journal set aside "
                      f"(line {bad[0].number}: {bad[0].reason}); its other trials are used "
                      "for priors", StudyWarning, stacklevel=user_stacklevel())
    best = sorted(trials, key=lambda t: -t.score)[:PER_STUDY]
    return PriorSource(study=meta.study), best


def _same_problem(choice: Mapping[str, Any], space: Space) -> bool:
    """Were ``choice``'s dtype, footprint and cache values among this space's?"""
    return all(_size_or_label(choice[axis.name]) in map(_size_or_label, axis.labels)
               for axis in space.axes if axis.role is AxisRole.PROBLEM and axis.name in choice)


def _size_or_label(label: Any) -> Any:
    """Footprints by their bytes (``1GiB`` is ``1024MiB``), other labels as they are."""
    try:
        return parse_size(str(label))
    except ValueError:
        return str(label)


def translate(choice: Mapping[str, Any], space: Space) -> list[dict[str, str]]:
    """``choice`` (from a study of the same kernel) in this space's labels: at the same
    bytes first where the dtype differs, then as it was; the ones this space can hold."""
    out = []
    for scale in dict.fromkeys((_element_scale(choice, space), 1.0)):
        found = _labels(choice, space, scale)
        if found is not None and found not in out:
            out.append(found)
    return out


def _element_scale(choice: Mapping[str, Any], space: Space) -> float:
    """Old itemsize / new itemsize, when the dtype changes to this space's only one."""
    old, new = str(choice.get("dtype", "")), space.axis("dtype").labels
    if len(new) != 1 or old not in DTYPES or new[0] not in DTYPES:
        return 1.0
    return DTYPES[old] / DTYPES[new[0]]


def _labels(choice: Mapping[str, Any], space: Space, scale: float) -> dict[str, str] | None:
    from sweeper.kernels import kernel_class

    elements = {name for name, m in kernel_class(space.kernel).meta_params.items()
                if m.elements} if scale != 1.0 else set()
    out = {}
    for axis in space.axes:
        label = str(choice.get(axis.name, ""))
        if axis.name in elements and label.isdigit():
            label = str(round(int(label) * scale))
        if label in axis.labels:
            out[axis.name] = label
        elif len(axis.labels) == 1:
            out[axis.name] = axis.labels[0]
        else:
            return None
    return out
