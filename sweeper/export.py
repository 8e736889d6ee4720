"""Export best configs to a tuning file, a replay table or an importable Triton module.

``sweeper export STUDY`` writes, per (kernel, GPU, dtype, problem), the config the problem
ends with (the interleaved finals' winner, else the sweep's best) into a JSON tuning file,
merging with what is there; an entry names its problem by footprint and by the kernel's
dimensions (``dims``), and its kernel by name (``kernel_path``: the ``module:attr`` the
space named it by), and the kernel's source by the hash the study measured it with
(``source_hash``).  :func:`sweeper.tuned` reads it back (:mod:`sweeper.lookup`);
``--format triton`` writes the winners as ``triton.Config`` objects
(:mod:`sweeper.export_triton`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from sweeper.core import grid_labels
from sweeper.core._units import counted
from sweeper.dispatch import TOP_K
from sweeper.errors import StaleTuningWarning, SweeperError, TuningWarning, user_stacklevel
from sweeper.finals import problem_of
from sweeper.fsio import atomic_write, writable_target
from sweeper.kernels import Headline
from sweeper.lookup import RETUNE, TunedConfig, current_gpu, describe, tuned
from sweeper.matching import gpu_model
from sweeper.space import Expr, Problem, Space, parse
from sweeper.store import JOURNAL, META, REJECTED, ProblemKey, Storage, StudyMeta, TrialRecord
from sweeper.store._claims_file import CLAIMS, LOCK
from sweeper.tuning import (
    EMPTY,
    SOURCE_HASH,
    TopConfig,
    TuningEntry,
    merged,
    read_tuning,
    tuning_path,
    written_in,
)
from sweeper.winners import UNFINISHED, Pick, Sources, Winners

if TYPE_CHECKING:
    from sweeper.core import Shrunk
    from sweeper.kernels import Kernel

#: The files that are a study's record (and its lock), which no export may write over.
RECORD_FILES = (META, JOURNAL, REJECTED, CLAIMS, LOCK)


def output_file(store: Storage, path: str | Path) -> Path:
    """The regular file an export of ``store`` may write at ``path`` (a link followed), or
    a :class:`SweeperError` (exit 2) before any work: what cannot take a file (a folder, a
    device, a FIFO: :func:`sweeper.fsio.writable_target`), and the study's own record
    (``study.json``, its journal, claims and lock, by name or by being that file), whose
    loss would lose what the study measured.  Every export format checks its target
    here."""
    target = writable_target(path)
    root = getattr(store, "root", None)          # a PostgreSQL study keeps no files
    if root is None:
        return target
    own = [root / name for name in RECORD_FILES]
    folder = Path(os.path.realpath(target.parent))
    if any((folder == Path(os.path.realpath(f.parent)) and target.name == f.name) or
           (target.exists() and f.exists() and os.path.samefile(target, f)) for f in own):
        raise SweeperError(f"cannot write {path}: it is the study's own {target.name}, "
                           "which holds what it measured; give another path")
    return target


def data_line(target: Path, marker: str, prefix: str, what: str) -> str | None:
    """The data an export that merges into its file (``what``: ``module `sweeper export
    --format triton```) keeps on one line of it, what follows ``prefix``; ``None`` where
    there is no file yet.  A file whose first line is not ``marker`` is another's and is
    refused, never overwritten, as is one that cannot be read."""
    if not target.exists():
        return None
    try:
        text = target.read_bytes().decode(errors="replace")
    except OSError as err:
        raise SweeperError(f"{target}: cannot read it to add this study to it: "
                           f"{err.strerror or err}; give another -o") from None
    line = next((x for x in text.splitlines() if x.startswith(prefix)), None)
    if not text.startswith(marker) or line is None:
        raise SweeperError(f"{target}: not a {what} wrote (its first line would be "
                           f"{marker!r}); give another -o")
    return line[len(prefix):]


class StudyWinners(NamedTuple):
    """What a study ends with: its metadata, its trials, the pick of each problem (a
    problem measured cold and warm: the cold one's) and the problems whose finals have
    not run yet."""

    meta: StudyMeta
    trials: list[TrialRecord]
    picks: dict[ProblemKey, Pick]
    unfinished: set[ProblemKey]

    def unfinished_named(self) -> list[str]:
        """The problems whose winner is the sweep's best for now, as a report names them
        (``float32 M=64 N=32``, ``float32 4MiB``): what an export's line says of them."""
        return [f"{key.dtype} {key.problem.describe()}" for key, pick in self.picks.items()
                if problem_of(pick.trial) in self.unfinished]


def study_winners(store: Storage) -> StudyWinners:
    """The winners of ``store`` as every export writes them, from its trials measured on
    the kernel source it has now (:class:`~sweeper.winners.Sources`); a study with no
    successful such trial is refused."""
    meta = store.study_meta()
    winners = Winners.of(store)
    recorded = store.records()[0]
    trials = winners.sources.measured_now(recorded)
    picks = winners.picks(trials)
    unfinished = set(winners.missing(trials)) if meta.finals else set()
    best: dict[ProblemKey, Pick] = {}
    for key, pick in sorted(picks.items()):                        # cold wins over warm
        plain = key._replace(cache="cold")
        if key.cache == "cold" or plain not in best:
            best[plain] = pick
    if not best:
        earlier = [t for t in recorded if t.ok and not winners.sources.current(t)]
        if earlier:
            raise SweeperError(
                f"{store.root}: no successful trial on the kernel's source now to export: "
                f"{counted(len(earlier), 'trial')} ran on an earlier source, before a resume "
                f"with --force after the kernel changed; run the study again (sweeper run) "
                f"to measure its configs on this source")
        raise SweeperError(f"{store.root}: no successful trial to export")
    return StudyWinners(meta, list(trials), dict(sorted(best.items())), unfinished)


def warn_without_winner(won: StudyWinners) -> None:
    """Warn (:class:`TuningWarning`), once per problem, of each problem the study ran
    configs of that all failed, so none is exported: its problem, how they failed, and
    what a lookup there gets instead."""
    from sweeper.outcome import labelled_count, outcome_label
    from sweeper.trial import FAILURES

    failed: dict[ProblemKey, Counter[str]] = {}
    for t in won.trials:
        key = problem_of(t)._replace(cache="cold")
        if key.dtype and key not in won.picks and t.status in FAILURES:
            failed.setdefault(key, Counter())[outcome_label(t)] += 1
    for key, count in sorted(failed.items()):
        # a lookup dispatches among the problems of its dtype and dimensions only
        kin = any(k.dtype == key.dtype and [d for d, _ in k.dims] == [d for d, _ in key.dims]
                  for k in won.picks)
        instead = "a lookup there gets the nearest tuned problem's config" if kin else \
            f"this study exports no {key.dtype} problem, so a lookup in {key.dtype} finds " \
            "none of its configs"
        warnings.warn(f"not exported: {won.meta.tuned_name} {key.dtype} "
                      f"{key.problem.describe()}: no config of it ran ok ("
                      f"{', '.join(labelled_count(s, n) for s, n in count.most_common())}"
                      f"); {instead}",
                      TuningWarning, stacklevel=user_stacklevel())


def warn_source_changed(meta: StudyMeta, options: dict[str, str] | None,
                        recorded: Space | SweeperError | None, source: str | None) -> None:
    """Warn (:class:`StaleTuningWarning`), once, where the kernel's source now is not the
    one the study measured (``source``: the hash the export wrote, :func:`exported_source`,
    so that the same files an earlier sweeper hashed otherwise are no change): the
    winners are exported all the same, as measured, and each lookup of them will warn;
    this says so at export, with what to do.  The source now is told as a lookup tells it
    (:func:`~sweeper.kernels.source_hash_now`, importing nothing); a study without a
    hash, or a kernel whose source cannot be told so, says nothing, unless a file it was
    read from is gone (below); a kernel built from
    its space's options (``cuda``) is hashed from those the study's space recorded
    (``options``: :func:`recorded_options`); one whose files are not all there (a file
    its source read as the study measured it gone: :func:`~sweeper.kernels.options_missing`
    of the files the study recorded beside its hash; a user kernel's ``sweeper.cuda``
    file or one it included) is said to be that, not a change: a
    hash of what is left of it says nothing of an edit.  Where the
    study's recorded space no longer reads here (``recorded``, the caller's
    :func:`recorded_space`), that is said instead, once: the check is not made, and what
    the export takes from the space and the study did not keep is left out (its
    footprint rule, where the study recorded none: an older sweeper's; its options too,
    for a kernel built from them, :func:`takes_options`, where the recorded text gives
    none)."""
    from sweeper.kernels import (
        files_gone,
        looked_for,
        options_missing,
        put_back,
        source_hash_now,
    )

    if isinstance(recorded, SweeperError):
        taken = " and ".join(what for what, kept in (
            ("options", options or not takes_options(meta.kernel)),
            ("footprint rule", _kept_rule(meta.footprint_rule))) if not kept)
        lost = [*(["the source of its kernel is not checked against the one it measured"]
                  if source is not None else []),
                *([f"what the export takes from it (the kernel's {taken}) is left out"]
                  if taken else [])]
        if lost:
            warnings.warn(f"study {meta.study}: its space no longer reads here ({recorded}): "
                          f"{', and '.join(lost)}; run the export from the folder the study "
                          "was run in, with the files its space names there",
                          StaleTuningWarning, stacklevel=user_stacklevel())
        return
    if source is None:
        return
    now = source_hash_now(meta.kernel, options)
    if now == source:
        return
    missing = options_missing(meta.kernel, options or {}, meta.kernel_source_files)
    if now is None and not missing:
        return
    if missing:
        where = looked_for(meta.kernel, "the study's space or the files it names")
        warnings.warn(f"study {meta.study}: the source of {meta.kernel} cannot be found here "
                      f"to compare with the one the study measured ({files_gone(missing)}); "
                      "the winners are written as measured, and a lookup of them warns so: "
                      f"{put_back(missing, where)}, or to tune the kernel as it is now, "
                      f"{RETUNE}",
                      StaleTuningWarning, stacklevel=user_stacklevel())
        return
    warnings.warn(f"study {meta.study}: the source of {meta.kernel} changed since the study "
                  "measured it; the winners written are those of that earlier source, and a "
                  f"lookup of them warns so: to tune its source as it is now, {RETUNE}",
                  StaleTuningWarning, stacklevel=user_stacklevel())


def problem_tops(won: StudyWinners, k: int | None = TOP_K
                 ) -> dict[ProblemKey, list[tuple[TrialRecord, float]]]:
    """Per problem, its winner then the next fastest distinct configs (grid, block and
    meta-parameters; a config measured twice counts by its faster median), ``k`` in all
    (``None``: every one), each with its sweep median over the problem's fastest: what
    dispatch to an untuned shape interpolates (:mod:`sweeper.dispatch`).  Only trials of
    the winner's own cache mode are ranked: a problem measured cold and warm ranks its
    cold runs, as its winner is the cold one's."""
    fastest: dict[ProblemKey, dict[str, TrialRecord]] = {
        problem_of(pick.trial): {} for pick in won.picks.values()}
    for t in won.trials:
        mine = fastest.get(problem_of(t))
        if mine is not None and t.ok and t.config and t.stats and not t.suspicious:
            ident = config_identity(t)
            if ident not in mine or t.stats.median < _median(mine[ident]):
                mine[ident] = t
    out = {}
    for key, pick in won.picks.items():
        mine = fastest[problem_of(pick.trial)]
        best = min(map(_median, [*mine.values(), pick.trial]))
        mine.pop(config_identity(pick.trial), None)
        ranked = [pick.trial, *sorted(mine.values(), key=_median)]
        out[key] = [(t, round(_median(t) / best, 6)) for t in ranked[:k]]
    return out


def _median(t: TrialRecord) -> float:
    """A trial's sweep median; every trial asked about here has statistics."""
    return t.stats.median if t.stats else math.inf


def config_identity(t: TrialRecord) -> str:
    """What makes two trials of one problem the same config: grid (in y and z too, where
    its space gives them), block, meta."""
    assert t.config is not None
    extents = grid_labels(t.choice, t.config)
    return json.dumps([str(t.choice["grid"]), t.config.block, dict(t.config.meta),
                       *([extents] if extents else [])], sort_keys=True)


class _GridExprs(TypedDict):
    """A config's grid in y and z as :class:`~sweeper.tuning.LaunchConfig` takes them."""

    grid_y_expr: str | None
    grid_z_expr: str | None


def _grid_exprs(t: TrialRecord) -> _GridExprs:
    """A trial's grid in y and z as a tuning file keeps them, by the keys it keeps them
    under, ``grid_y_expr`` and ``grid_z_expr`` (:func:`~sweeper.core.grid_labels`;
    ``None``: 1, a 1-D launch's)."""
    assert t.config is not None
    labels = grid_labels(t.choice, t.config)
    return {"grid_y_expr": labels.get("grid_y"), "grid_z_expr": labels.get("grid_z")}


def export_study(store: Storage, path: str | Path | None = None
                 ) -> tuple[Path, list[dict[str, Any]]]:
    """Merge the study's best config per problem into the tuning file (:func:`merged`);
    return the file and the entries as written (a ``.cu`` file's path relative to the
    tuning file's folder: :func:`~sweeper.tuning.written_in`)."""
    from sweeper.consensus import export_fields

    won = study_winners(store)
    by_number = {t.number: t for t in won.trials}
    tops = problem_tops(won)
    recorded = recorded_space(won.meta)                # read once, as the files are now
    rule = footprint_rule(won.meta.kernel, recorded=recorded,   # once: a user kernel's source
                          kept=won.meta.footprint_rule)
    options = recorded_options(won.meta)
    source = exported_source(won.meta, options)
    asked = asked_of(won.meta, recorded)
    entries = [_entry(won.meta, key.problem, pick, problem_of(pick.trial) in won.unfinished,
                      [TopConfig(str(t.choice["grid"]), t.config.block, dict(t.config.meta),
                                 slowdown, **_grid_exprs(t))
                       for t, slowdown in tops[key] if t.config],
                      export_fields(pick.agreement, by_number), rule_for(rule, key.problem),
                      source, options, asked(pick.trial))
               for key, pick in won.picks.items()]
    target = tuning_path(path)
    output_file(store, target)               # a device or a folder: refused before work
    data = merged(read_tuning(target) if target.exists() else EMPTY, entries, target.parent)
    atomic_write(target, json.dumps(data, indent=2) + "\n")
    warn_without_winner(won)
    warn_source_changed(won.meta, options, recorded, source)
    return target, [written_in(e.to_json(), target.parent) for e in entries]


def _entry(meta: StudyMeta, problem: Problem, pick: Pick, unfinished: bool,
           top: list[TopConfig], agreement: dict[str, Any], rule: str | None,
           source: str | None, options: dict[str, str] | None = None,
           asked: Problem | None = None) -> TuningEntry:
    """One tuning entry.  ``median_ms`` and ``gbps`` are from the samples the config was
    chosen on (the interleaved final's where one chose it), ``median_from`` says which, as
    the report does; the sweep's median and rate are kept under their own names, and the
    headline rate is at the median the entry states, so the two always agree.
    ``unfinished``: the problem's final has not run yet, and ``note`` says so;
    ``agreement``: the fields of :func:`sweeper.consensus.export_fields`; ``rule``: the
    kernel's footprint rule over the problem's dimensions (:func:`rule_for`);
    ``source``: the hash of the kernel's source it was measured on (:func:`exported_source`);
    ``options``: those the kernel is built from (:func:`recorded_options`); ``asked``:
    the problem the space asked for, where the device measured ``problem`` in its place
    (:func:`asked_of`)."""
    t, env = pick.trial, meta.environment
    cfg, stats = t.config, t.stats
    assert cfg is not None and stats is not None        # a pick always has both
    headline = Headline(meta.headline)
    return TuningEntry(
        kernel=meta.tuned_name, gpu=meta.gpu, dtype=problem.dtype,
        footprint=problem.footprint, dims=dict(problem.dims), grid=cfg.grid,
        grid_expr=str(t.choice["grid"]), block=cfg.block, meta=dict(cfg.meta),
        grid_y=cfg.grid_y, grid_z=cfg.grid_z, **_grid_exprs(t),
        gbps=t.rate(Headline.GBPS, pick.median_ms), median_ms=pick.median_ms,
        median_from=pick.median_from, sweep_median_ms=stats.median, sweep_gbps=t.gbps,
        study=meta.study, trial=t.number, chosen_by=pick.chosen_by,
        facts={"sms": env.get("sms"), "l2_bytes": env.get("l2_bytes")},
        exported=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        kernel_path=meta.kernel if meta.tuned_name != meta.kernel else None,
        footprint_expr=rule, kernel_options=options,
        source_files=meta.kernel_source_files or None,
        capability=str(env["capability"]) if env.get("capability") else None,
        cache=problem_of(t).cache,
        note=UNFINISHED if unfinished else None, headline=headline,
        rate=t.rate(headline, pick.median_ms), top=top, source_hash=source,
        tuned=t.started or None, asked_dims=None if asked is None else dict(asked.dims),
        asked_footprint=None if asked is None else asked.footprint, **agreement)


def measured_source(meta: StudyMeta) -> str | None:
    """The hash of the kernel's source the study measured (its ``kernel_source_hash``: a
    study resumed with ``--force`` after an edit takes the new one's, and its winners come
    from the trials measured on it), not the source there is at export: the kernel may
    have been edited since.
    ``None`` where the study recorded none that reads as a hash (every study sweeper
    writes has one); the source at export is never taken in its place, so exporting
    never imports a user's kernel."""
    source = meta.kernel_source_hash
    return source if isinstance(source, str) and re.fullmatch(SOURCE_HASH, source) else None


def exported_source(meta: StudyMeta, options: dict[str, str] | None) -> str | None:
    """The hash of the kernel's source the study measured (:func:`measured_source`) as
    its tuning entries keep it: as this sweeper spells that source, where an earlier
    sweeper spelled the same files otherwise (:func:`~sweeper.study.respelled_hash`, from
    the kernel's ``options``, :func:`recorded_options`, and the study's recorded space:
    a ``cuda`` kernel's ``file.py:function`` reference by its path).  That is the hash a
    lookup computes, wherever the project lies: the earlier one a lookup could respell
    only from the paths the entry names now, which a project moved since no longer
    gives."""
    from sweeper.study import respelled_hash

    measured = measured_source(meta)
    if measured is None or not options:
        return measured
    return respelled_hash(measured, meta.kernel, options, meta.space_text, meta.space_path,
                          meta.space_folder) or measured


def kernel_declared(kernel: str) -> type[Kernel] | SweeperError:
    """Kernel ``kernel``'s declaration as an export reads it, without importing a user's
    module (:func:`~sweeper.plugins.kernel_declaration` without user code: a user
    kernel's is read from its source), or the :class:`SweeperError` reading it raised:
    read once, and each use of it answers that error its own way."""
    from sweeper.plugins import kernel_declaration

    try:
        return kernel_declaration(kernel, user_code=False)
    except SweeperError as err:
        return err


def footprint_rule(kernel: str, declared: type[Kernel] | SweeperError | None = None,
                   recorded: Space | SweeperError | None = None, kept: str = ""
                   ) -> Expr | None:
    """Kernel ``kernel``'s footprint over its dimensions and ``itemsize`` (its declared
    ``footprint_bytes``): the rule its study kept as its run had it (``kept``: the
    study's ``footprint_rule``), so that a kernel whose files are gone or changed since
    still gives the rule it was measured by; else (a study an older sweeper wrote) read
    without importing a user's module; ``None`` where it cannot be read there: a user
    kernel whose source says no ``footprint_bytes`` and left some of its declaration
    unread (its module gone, the name no declaration there, its ``dims`` not literals)
    would give the rule of a kernel over ``n`` alone, a guess.
    A kernel that takes its dimensions and footprint as options of the space
    (``cuda``'s ``dims`` and ``footprint_bytes``) has the rule the study's space
    declared (``recorded``: the study's space read again, :func:`recorded_space`);
    ``None`` without it or where that space no longer reads (its ``.cu`` file gone).
    ``declared``: its declaration read already (:func:`kernel_declared`), else it is
    read here."""
    from sweeper.core._problem import shape_of

    rule = _kept_rule(kept)
    if rule is not None:
        return rule
    declared = kernel_declared(kernel) if declared is None else declared
    if isinstance(declared, SweeperError):
        return None
    if "footprint_bytes" in getattr(declared, "options", {}):
        return recorded.shape.footprint if isinstance(recorded, Space) else None
    unread: tuple[str, ...] = getattr(declared, "unread", ())
    if unread and "footprint_bytes" not in vars(declared):
        return None
    try:
        return shape_of(declared).footprint
    except SweeperError:
        return None


def _kept_rule(text: str) -> Expr | None:
    """The footprint rule a study kept (its ``footprint_rule``), parsed; ``None`` where it
    kept none (an older sweeper's) or none that parses (a study file edited by hand)."""
    try:
        return parse(text) if text else None
    except (SweeperError, RecursionError):
        return None


def recorded_folder(meta: StudyMeta) -> str | None:
    """The folder a command that reads the study's recorded space (an export, a worker
    without a space) reads the space's relative file names from (a ``cuda`` kernel's
    ``.cu`` file): the one its run read them from (``space_folder``) while it is there;
    ``None``, where it is not (its project moved, or copied to another machine, with the
    study) or was not recorded (an older sweeper's study): its ``space_path``'s folder,
    relative to the working folder."""
    folder = meta.space_folder
    return folder if folder and Path(folder).is_dir() else None


def recorded_space(meta: StudyMeta | None) -> Space | SweeperError | None:
    """The space the study recorded (its ``space_text``), read again without user code,
    its files from :func:`recorded_folder`, or the error that reading raised (its
    ``.cu`` file gone, its kernel's module not on the import path here); ``None`` where
    it recorded none."""
    from sweeper.space import parse_space

    if meta is None or not meta.space_text:
        return None
    try:
        return parse_space(meta.space_text, file=meta.space_path or "<space>",
                           user_code=False, folder=recorded_folder(meta),
                           autotune=autotune_ran(meta))
    except SweeperError as err:
        return err


def autotune_ran(meta: StudyMeta) -> dict[str, list[int]] | None:
    """The ``from_autotune:`` configs the study ran (its zipped group of that name, as
    ``study.json`` keeps it): what its space read back without user code takes where
    the kernel's source does not show them (a function builds them).  ``None`` where it
    recorded none, or none that are whole numbers, as every autotune column is."""
    from sweeper.space._parser import AUTOTUNE_GROUP

    group = meta.zipped.get(AUTOTUNE_GROUP) or {}
    try:
        return {name: [int(row[i]) for row in group["rows"]]
                for i, name in enumerate(group["members"])} or None
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def recorded_options(meta: StudyMeta) -> dict[str, str] | None:
    """The options of a built-in kernel built from its space's options (``cuda``: its
    ``.cu`` file, entry and reference; ``torch-op``: its op), as the study's recorded
    space (``space_text``) gives them
    (:func:`~sweeper.space.recorded_kernel_options`): what its source is hashed from now
    (:func:`~sweeper.kernels.source_hash_now`), and what a tuning entry keeps for a
    lookup to do the same and to tell it from another such kernel.  They are read from
    that text alone, so a ``.cu`` file moved or deleted since the study still gives
    them.  ``None`` for any other kernel, or a study without such a text."""
    from sweeper.plugins import KERNEL, find
    from sweeper.space import recorded_kernel_options

    try:
        if not find(KERNEL, meta.kernel).builtin or not meta.space_text:
            return None
        options = recorded_kernel_options(meta.space_text,
                                          file=meta.space_path or "<space>",
                                          folder=recorded_folder(meta))
    except SweeperError:
        return None
    return dict(options) or None


def takes_options(kernel: str) -> bool:
    """Whether ``kernel`` is built from its space's options (a built-in that declares
    ``options``: ``cuda``, ``torch-op``): only such a kernel has options an export can
    lose; a user kernel, or a built-in of none, takes none."""
    from sweeper.plugins import KERNEL, find, kernel_declaration

    try:
        return find(KERNEL, kernel).builtin and bool(kernel_declaration(kernel).options)
    except SweeperError:
        return False


def rule_for(rule: Expr | None, problem: Problem) -> str | None:
    """``rule`` (:func:`footprint_rule`) as an entry keeps it for ``problem``: ``None``
    where there is none, or it reads other names than the problem's dimensions (a study
    recorded before the kernel's declaration changed)."""
    dims = {name for name, _ in problem.dims} or {"n"}
    return rule.text if rule is not None and rule.names <= dims | {"itemsize"} else None


def export_csv(store: Storage, path: str | Path) -> tuple[Path, int, int, int]:
    """Write the study as a replay table (see :mod:`sweeper.devices._replay`); the path,
    the rows written, the trials left out as measured on an earlier source of the
    kernel (a study resumed with ``--force`` after an edit: the table holds each config
    once, as measured on the source now; :class:`~sweeper.winners.Sources`), and those
    left out as to be measured again (``retry``: their worker process was killed from
    outside, so their config was not measured, and a replay of it as ``crashed`` would
    read as the kernel's fault; a replay says the table does not hold it).  Its
    ``gpu`` is the GPU the timings were recorded on: a replayed study's table names the
    recorded GPU, not ``replay: ...``, so replaying it again measures that GPU still, and
    keeps the recorded table's driver and date.  A study no trial of which ran (all
    missing from a replayed table, or ruled out) is a SweeperError, no empty table."""
    from sweeper.devices._replay import write_table
    from sweeper.outcome import labelled_count, outcome_label

    meta = store.study_meta()
    every, _ = store.records()
    ran = [t for t in every if t.status.value not in ("invalid", "missing") and not t.retry]
    again = sum(1 for t in every if t.retry)
    trials = Sources.of(meta).measured_now(ran)
    params = list(meta.axes)
    env = meta.environment
    recorded = env.get("recorded") or {}
    rows = [{**{p: t.choice.get(p, "") for p in params}, "status": t.status.value,
             "median_ms": t.stats.median if t.stats else "",
             "samples_ms": " ".join(repr(x) for x in t.samples_ms),
             "reason": "" if t.ok else t.reason or ""}
            for t in trials]
    if not rows and ran:
        raise SweeperError(f"{store.root}: no trial ran on the kernel's source now "
                           f"({counted(len(ran), 'trial')} on an earlier source, before a "
                           "resume with --force after the kernel changed): a replay table "
                           "of it would hold no row; nothing written")
    if not rows:
        left = Counter(outcome_label(t) for t in every)
        raise SweeperError(f"{store.root}: no trial ran ("
                           + (", ".join(labelled_count(s, n) for s, n in sorted(left.items()))
                              or "none recorded")
                           + "): a replay table of it would hold no row; nothing written")
    output_file(store, path)
    header = {"gpu": gpu_model(meta.gpu), "sms": env.get("sms", ""),
              "l2_bytes": env.get("l2_bytes", ""), "kernel": meta.kernel,
              "study": meta.study, "driver": env.get("driver") or recorded.get("driver", ""),
              "created": recorded.get("created") or meta.created,
              "space_sha256": meta.space_sha256, **_shrink_header(meta)}
    target = Path(path)
    write_table(target, header, params, rows)
    return target, len(rows), len(ran) - len(trials), again


def _shrunk_of(meta: StudyMeta, recorded: Space | SweeperError | None
               ) -> tuple[Space | None, tuple[Shrunk, ...]]:
    """The study's recorded space (``recorded``, :func:`recorded_space`) as the run had
    it, and each problem of that space the cap on footprints its device measured under
    (the interpreter's, :func:`_cap`) shrank (:func:`~sweeper.space.shrunk_problems`;
    none where there was no cap or the space no longer reads)."""
    from sweeper.space import shrunk_problems

    env = meta.environment
    cap = _cap(meta)
    if cap is None:
        return None, ()
    space = _space_as_run(meta, recorded)
    return space, () if space is None else shrunk_problems(
        space, {"sms": int(env.get("sms") or 1), "l2_bytes": int(env.get("l2_bytes") or 0)},
        cap)


def _cap(meta: StudyMeta) -> int | None:
    """The cap on footprints the study's device measured under (the interpreter's), or
    ``None``."""
    env = meta.environment
    cap = env.get("max_footprint") or (env.get("recorded") or {}).get("max_footprint")
    return int(cap) if cap else None


def _space_as_run(meta: StudyMeta, recorded: Space | SweeperError | None) -> Space | None:
    """The study's recorded space (``recorded``) with its problem's axes (``dtype`` and
    the size axes) as the run had them (a ``-p footprint=1MiB`` replaced the text's),
    read without user code; ``None`` where it no longer reads, or its problem's axes
    cannot be made the run's (a ``-p`` on a zipped axis): what the study asked for is
    then not told, rather than told wrong."""
    from sweeper.space import parse_space

    if not isinstance(recorded, Space):
        return None
    space = recorded

    def labels(s: Space, name: str) -> list[str]:
        return [str(x) for x in s.axis(name).labels] if name in {a.name for a in s.axes} \
            else []

    def differing(s: Space) -> list[str]:
        # its own size axes and those the run sized the problem by: `-p n=...` replaces
        # the footprint a space's text gives (as `--from-autotune` has by default)
        names = dict.fromkeys(["dtype", *s.sizes, *(n for n in ("footprint", *s.shape.names)
                                                    if n in meta.axes)])
        return [n for n in names if labels(s, n) != [str(x) for x in meta.axes.get(n, ())]]

    changed = [n for n in differing(space) if n in meta.axes]
    if not changed:
        return space
    try:
        space = parse_space(meta.space_text or "", file=meta.space_path or "<space>",
                            user_code=False, folder=recorded_folder(meta), overrides=[
                                f"{n}=[{', '.join(map(str, meta.axes.get(n, ())))}]"
                                for n in changed], autotune=autotune_ran(meta))
    except SweeperError:
        return None
    return None if differing(space) else space


def asked_of(meta: StudyMeta, recorded: Space | SweeperError | None
             ) -> Callable[[TrialRecord], Problem | None]:
    """For a trial of the study, the problem its space asked for where the device's cap
    measured a smaller one (``rows=64 cols=1000``, where ``rows=16 cols=255`` was
    measured), else ``None``; ``recorded``: the study's space (:func:`recorded_space`)."""
    from sweeper.core._problem import SizeError

    space, shrunk = _shrunk_of(meta, recorded)
    if space is None or not shrunk:
        return lambda t: None
    sizes = space.sizes
    by_labels: dict[tuple[str, tuple[str, ...]], Problem] = {}
    for s in shrunk:
        with contextlib.suppress(SizeError):     # it was asked and shrunk: it reads
            by_labels[s.dtype, s.labels] = space.shape.problem(
                s.dtype, dict(s.asked), None, by_footprint="footprint" in sizes)
    return lambda t: by_labels.get((t.config.problem.dtype if t.config else "",
                                    tuple(str(t.choice.get(n, "")) for n in sizes)))


def _shrink_header(meta: StudyMeta) -> dict[str, Any]:
    """The replay table's header lines for a study measured under a cap on footprints
    (the interpreter's): ``max_footprint``, which a replay shrinks by as the study did,
    and ``shrunk``, what each problem asked for was measured as (the rows keep the sizes
    asked, their timings are those of the problem measured); none where there was no
    cap."""
    cap = _cap(meta)
    if cap is None:
        return {}
    _, shrunk = _shrunk_of(meta, recorded_space(meta))
    dtypes = len({s.dtype for s in shrunk}) > 1
    return {"max_footprint": cap,
            **({"shrunk": "; ".join(s.describe(dtypes) for s in shrunk)} if shrunk else {})}


__all__ = [
    "StudyWinners",
    "TunedConfig",
    "config_identity",
    "current_gpu",
    "describe",
    "export_csv",
    "export_study",
    "measured_source",
    "output_file",
    "problem_tops",
    "study_winners",
    "tuned",
    "tuning_path",
    "warn_source_changed",
    "warn_without_winner",
]
