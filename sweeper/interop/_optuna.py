"""``--format optuna``: a study written as an Optuna study, for ``optuna.load_study``,
its ``trials_dataframe()`` and optuna-dashboard.

The Optuna study is named after the sweeper study and minimizes the median in ms (its
one objective).  Each axis is a parameter with a categorical distribution of the axis's
values (numbers as numbers), which is what a sweep chooses among.  Every trial is added:
``ok`` as COMPLETE with its median; ``abandoned`` (sampling cut short, clearly slower than
the best) as PRUNED; every other status as FAIL, with ``status`` and ``reason`` as user
attributes (Optuna's own ``fail_reason`` system attribute too).  User attributes also
carry the sweeper trial number, the headline rate (``gbps`` or ``tflops``), the median's
95 % CI and the other statistics, the resolved grid, the number of samples, the
stopping rule and the flags.  A storage that already holds a study of that name is
refused, unless ``replace``: then that study is deleted and written again from the
journal, which stays the study's one record."""

from __future__ import annotations

import datetime as dt
import math
import warnings
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

from sweeper.errors import SweeperError
from sweeper.interop import Written
from sweeper.report._write import study_headline
from sweeper.store import Storage, TrialRecord
from sweeper.store._url import mask_url
from sweeper.trial import TrialStatus

#: Statistics kept as user attributes, by their name in :class:`~sweeper.measure.Stats`.
STATS = ("median", "ci_lo", "ci_hi", "mean", "min", "max", "p95", "std", "cv", "rel_ci")


def write_optuna(store: Storage, target: str | None, *, replace: bool = False
                 ) -> Written:
    """Write ``store`` into the Optuna storage ``target`` (see the module's text)."""
    if not target:
        raise SweeperError("--format optuna needs --to URL: sqlite:///FILE.db, or a "
                           "journal file path")
    meta = store.meta()
    trials, _ = store.records()
    storage = open_storage(target)
    name = str(meta["study"])
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if name in optuna.get_all_study_names(storage):
        if not replace:
            raise SweeperError(f"--to {mask_url(target)}: it already holds an Optuna study "
                               f"{name!r}; pass --replace to delete it and write it again")
        optuna.delete_study(study_name=name, storage=storage)
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
    study.set_user_attr("sweeper_study", str(store.root))
    study.set_user_attr("kernel", meta["kernel"])
    study.set_user_attr("gpu", meta.get("environment", {}).get("gpu", "?"))
    study.set_user_attr("objective", "median ms (minimize)")
    dists = distributions(meta.get("axes", {}), trials)
    rate = study_headline(meta).value
    study.add_trials([frozen(t, dists, rate) for t in trials])
    return Written(target, f"wrote {len(trials)} trials to the Optuna study {name!r} in "
                   f"{mask_url(target)} (optuna.load_study(study_name={name!r}, storage=...))")


def open_storage(target: str) -> Any:
    """An Optuna storage: a database URL (``sqlite:///x.db``), else a journal file."""
    if "://" in target:
        try:
            return optuna.storages.RDBStorage(target)
        except Exception as err:  # noqa: BLE001  (SQLAlchemy's errors are many; one line)
            raise SweeperError(f"--to {mask_url(target)}: cannot open it as a database: "
                               f"{str(err).splitlines()[0]}") from None
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        try:
            return JournalStorage(JournalFileBackend(target))
        except OSError as err:
            raise SweeperError(f"--to {target}: cannot open it as a journal file: "
                               f"{err.strerror or err}") from None


def value(label: str) -> str | int:
    """An axis label as Optuna gets it: a whole number as an int, anything else as text."""
    return int(label) if label.isascii() and label.isdigit() else label


def distributions(axes: dict[str, list[str]], trials: list[TrialRecord]
                  ) -> dict[str, CategoricalDistribution]:
    """One categorical distribution per axis: the space's values, then any value a trial
    has that the space no longer lists (a study resumed with ``--force``)."""
    choices: dict[str, list[str | int]] = {a: [value(v) for v in labels]
                                           for a, labels in axes.items()}
    for t in trials:
        for axis, label in t.choice.items():
            if value(label) not in choices.setdefault(axis, []):
                choices[axis].append(value(label))
    return {a: CategoricalDistribution(c) for a, c in choices.items() if c}


def frozen(t: TrialRecord, dists: dict[str, CategoricalDistribution], rate: str
           ) -> FrozenTrial:
    """The Optuna trial for ``t`` (see the module's text)."""
    state = {TrialStatus.OK: TrialState.COMPLETE,
             TrialStatus.ABANDONED: TrialState.PRUNED}.get(t.status, TrialState.FAIL)
    params = {a: value(label) for a, label in t.choice.items() if a in dists}
    attrs: dict[str, Any] = {"number": t.number, "status": t.status.value,
                             "reason": t.reason or "", "samples": len(t.samples_ms),
                             "flags": [f.text for f in t.flags]}
    if t.config is not None:
        attrs["grid"] = t.config.grid
    if t.stats is not None:
        attrs.update({f"{s}_ms" if s not in ("cv", "rel_ci") else s: getattr(t.stats, s)
                      for s in STATS if math.isfinite(getattr(t.stats, s))})
        attrs[rate] = t.gbps if rate == "gbps" else t.gflops / 1e3
    if t.stop_reason is not None:
        attrs["stop"] = t.stop_reason.text
    start = _time(t.started)
    system = {"fail_reason": f"{t.status.value}: {t.reason}"} \
        if state is TrialState.FAIL else {}
    return FrozenTrial(
        number=t.number, state=state,
        value=t.stats.median if state is TrialState.COMPLETE and t.stats else None,
        datetime_start=start,
        datetime_complete=start + dt.timedelta(seconds=t.wall_s) if start else None,
        params=params, distributions={a: dists[a] for a in params}, user_attrs=attrs,
        system_attrs=system, intermediate_values={}, trial_id=t.number)


def _time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
