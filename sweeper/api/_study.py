"""A recorded study, opened from Python: what was swept and where, every trial as a
typed pandas table, the config each problem ends with, the torch baselines, the report
and the exports.

:class:`Study` is the study on disk (:class:`~sweeper.store.StudyStore`) with the
questions a notebook asks of it; each answer is read from ``study.json`` and the journal
when asked, so a study that another process is still running is seen as it stands."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper._environ import optuna_verbosity_kept
from sweeper.api._checks import flag, folder, home, optional_text, refuse
from sweeper.core._api_errors import cut_at_call
from sweeper.core._spelling import entry, given
from sweeper.errors import StudyError
from sweeper.store import Storage, StudyStore

if TYPE_CHECKING:
    import pandas as pd


class Study:
    """One study: ``name``, ``path``, the ``space`` it was run from, the ``device`` and
    ``gpu`` it was measured on, :meth:`trials_dataframe`, :attr:`winners`,
    :attr:`baselines`, :meth:`report` and :meth:`export`; ``storage`` is the store it is
    read from (a folder's journal, or a database), its local folder by its absolute path.
    Made from a folder or a store, it is checked at once (:func:`study_in`,
    :func:`stored`): a URL, a folder or a store without a study is refused there, saying
    what is allowed; a sweeper error from any of its questions has the traceback of the
    call alone
    (:mod:`sweeper.core._api_errors`)."""

    @cut_at_call
    def __init__(self, storage: Storage | str | Path) -> None:
        if not isinstance(storage, (Storage, str, Path)):
            raise refuse("storage", storage, "a study; allowed: a study's folder (text or a "
                         "Path), or a Storage")
        storage = stored(storage) if isinstance(storage, Storage) else \
            study_in(_folder(storage))
        # held by its absolute path, whatever the store: a notebook that changes folder
        # (``%cd``) still reads this study, never one of the same relative path, and
        # writes its report and exports into its own folder
        self.storage: Storage = storage.absolute()

    @property
    def name(self) -> str:
        """The study's name."""
        return self.storage.name

    @property
    def path(self) -> Path:
        """The study's local folder: the journal's (``study.json``, ``trials.jsonl``), and
        where the report and exports are written whatever the store."""
        return self.storage.root

    @property
    def location(self) -> str:
        """Where its records are, as messages name it (a file, or a URL and the study)."""
        return self.storage.location

    @cut_at_call
    def meta(self) -> dict[str, Any]:
        """``study.json``'s content (the space, sampler, measurement, environment...)."""
        return self.storage.meta()

    @property
    @cut_at_call
    def kernel(self) -> str:
        """The kernel swept, as the space file names it."""
        return self.storage.study_meta().kernel

    @property
    @cut_at_call
    def space(self) -> str:
        """The space file's text the study was created from (a dict given to
        :func:`sweeper.run` as the YAML it was read as; files it extends follow it)."""
        return self.storage.study_meta().space_text

    @property
    @cut_at_call
    def device(self) -> str:
        """The device that measured it: ``cuda``, ``interpret``, ``replay``..."""
        return str(self.storage.study_meta().fingerprint.get("device", "?"))

    @property
    @cut_at_call
    def gpu(self) -> str:
        """The GPU it was measured on, as reports name it (``replay: NVIDIA H200`` for a
        replayed table)."""
        return self.storage.study_meta().gpu

    @cut_at_call
    @entry()
    def trials_dataframe(self, *, samples: bool = False) -> pd.DataFrame:
        """One row per trial, typed: parameters as integers where they are numbers
        (``<NA>`` where a trial never resolved), dimensions by name, status (a categorical),
        reason, median and its 95 % CI (``ci_lo_ms``, ``ci_hi_ms``), GB/s and TFLOP/s,
        flags, the kernel source it was measured on (``source_hash``; a study resumed with
        ``--force`` after an edit holds trials of two, ``df.attrs["kernel_source"]`` is
        the one it has now); ``samples``: each trial's raw samples as a list column
        ``samples_ms``.
        The columns and dtypes are :func:`sweeper.interop.trials_table`'s."""
        from sweeper.interop import trials_table

        return trials_table(self.storage, samples=flag("samples", samples))

    @property
    @cut_at_call
    def winners(self) -> pd.DataFrame:
        """Per problem, the config it ends with, as report.md and ``sweeper export`` give
        it: the interleaved final's winner with that final's median, else the sweep's best
        (``chosen_by`` says which); one row per problem in (dtype, footprint, dims,
        cache) order."""
        from sweeper.api._tables import winners_table

        return winners_table(self.storage)

    @property
    @cut_at_call
    def baselines(self) -> pd.DataFrame:
        """The torch baselines (the same work done by torch, timed the same way), one
        row per problem."""
        from sweeper.api._tables import baselines_table

        return baselines_table(self.storage)

    @cut_at_call
    @entry()
    def report(self, *, shared_scale: bool = False, scale: str | None = None,
               svg: bool = False, redraw: bool = False) -> Path:
        """Write report.md, report.html, report.json and the heatmaps, as ``sweeper
        report`` does with the same options: ``scale``, the heatmaps' colour scale,
        ``study`` (default), ``problem`` or ``map`` (``shared_scale`` without it:
        ``problem``); ``svg``, the pictures as SVG too (``--svg``); ``redraw``, every
        picture drawn again, not only those whose numbers changed (``--redraw``).  Returns
        report.md's path."""
        from sweeper.options import SCALES
        from sweeper.report import write_report

        if scale is not None and scale not in SCALES:
            raise refuse("scale", scale, f"a colour scale; allowed: {', '.join(SCALES)}")
        formats = ("png", "svg") if flag("svg", svg) else ("png",)
        return write_report(self.storage, shared_scale=flag("shared_scale", shared_scale),
                            scale=scale, formats=formats,
                            redraw=flag("redraw", redraw)).markdown

    @cut_at_call
    def _repr_html_(self) -> str:
        """The study as a notebook shows it: report.html's content (interactive heatmaps,
        curves, every trial, failures, provenance) as one self-contained fragment, read
        from the study as it stands now; nothing is written."""
        from sweeper.report import html_fragment, study_tables

        return html_fragment(study_tables(self.storage))

    @cut_at_call
    @entry()
    def export(self, target: str | Path | None = None, *, format: str = "tuning",
               replace: bool = False) -> Path | str:
        """Export the study as ``sweeper export`` does, and return where it went: the
        file's absolute :class:`~pathlib.Path`, as :meth:`report` returns report.md's, or
        for an Optuna database its URL (a ``str``: a URL is no path), a SQLite file's by
        its absolute path: a relative ``target`` names another file once the notebook
        changes folder (``%cd``).
        ``tuning`` (default): merge the winners into the tuning file ``target``, by
        default ``$SWEEPER_TUNING``, else ``studies/tuning.json`` of the working folder,
        whatever folder the study is in (``sweeper export --studies-dir`` writes the same
        file): it is the file :func:`sweeper.tuned` and ``sweeper tuned`` read at launch
        time, knowing no studies folder; pass ``target`` for another, and give the
        launches that file too.  ``csv``: a replay table (default ``STUDY/replay.csv``);
        ``parquet``: every trial with its raw samples (``STUDY/trials.parquet``);
        ``triton``: a module of Triton configs (``STUDY/tuned_configs.py``);
        ``header``: a CUDA C kernel's winners as a C header of ``#define``s
        (``STUDY/tuned.h``);
        ``optuna``: an Optuna study in the storage ``target`` names (``sqlite:///FILE.db``
        or a journal file), refused when it holds one of this name already unless
        ``replace``.  Errors name the keywords (``target``, ``replace=True``), not
        ``sweeper export``'s flags."""
        from sweeper.interop import export

        where = None if target is None else folder("target", target)
        with optuna_verbosity_kept():       # an Optuna export quiets Optuna's own logs
            went = export(self.storage, format, where, replace=flag("replace", replace)).target
        if isinstance(went, Path):
            return went.absolute()
        from sweeper.interop._optuna import absolute_url  # imported by the export

        return absolute_url(went)

    def __repr__(self) -> str:
        if isinstance(self.storage, StudyStore):
            return f"Study({str(self.storage.root)!r})"
        return f"Study({self.storage.location!r})"


@cut_at_call
@entry(needs={"study": "the study: its folder, or its name under studies_dir"})
def load_study(study: str | Path, *, storage: str | None = None,
               studies_dir: str | Path = "studies") -> Study:
    """The study ``study`` names, found as ``sweeper report STUDY`` finds it
    (:func:`find_study`): its folder (the one ``sweeper run`` printed), else a study's
    name under ``studies_dir``; with ``storage`` (a ``postgresql://`` URL, as
    ``sweeper.run(..., storage=URL)`` took) the study of that name in the database, its
    report and exports written under ``studies_dir``.  One that is found nowhere is a
    :class:`~sweeper.errors.StudyError` saying where it looked (a studies folder: the
    studies it holds, as :class:`Study` says)."""
    if not isinstance(study, (str, Path)):
        raise refuse("study", study, "a study; allowed: its folder or name, as text or a Path")
    study = home(study)             # no study's name starts with ~
    storage = optional_text("storage", storage, "a storage; allowed: a postgresql:// URL, "
                            "or None for a study's folder")
    return Study(find_study(study, storage=storage,
                            studies_dir=folder("studies_dir", studies_dir)))


def find_study(study: str | Path, *, storage: str | None, studies_dir: str) -> Storage:
    """The study ``study`` names, for the commands that read one (``report``, ``export``,
    ``compare``...) and :func:`load_study` alike, so both take the same names: with
    ``storage`` (a database URL) the study of that name there; else the folder ``study``
    where it holds a study (``study.json``, or a journal without it), else the study of
    that name under ``studies_dir``.  Found nowhere: a :class:`StudyError` saying where
    it looked, and a study with a close name if there is one (a studies folder: the
    studies it holds, :func:`studies_folder`); a journal without
    ``study.json``, or one that cannot be read, is one line saying so."""
    from sweeper.options import check_study_name, near_study, study_folder

    if storage is not None:
        from sweeper.store._open import open_storage

        check_study_name("study", str(study))
        found = open_storage(storage, study_folder(studies_dir, str(study)))
        if not found.exists():
            raise StudyError(f"no study {str(study)!r} in {found.location}")
        return found
    if not str(study):
        raise StudyError("no study named: the study is empty; give a study's folder or "
                         "its name under the studies folder")
    path = Path(study)
    if not (path / "study.json").exists() and not (path / "trials.jsonl").exists():
        path = Path(studies_dir) / study
    store = StudyStore(path)
    if not store.exists() and not store.orphaned():
        held = studies_folder(Path(study), lambda name: f"its name, {name!r}, with "
                              f"{given('studies_dir', str(study))}")
        if held is not None:
            raise StudyError(f"no study {str(study)!r}: {held}")
        looked = study if path == Path(study) else f"{study} and {path}"
        raise StudyError(f"no study {str(study)!r} (looked in {looked})"
                         f"{near_study(Path(study), Path(studies_dir))}")
    return _readable(store)


#: Most studies a refused :class:`Study` lists of a studies folder it was given.
LISTED = 5


def study_in(path: Path) -> StudyStore:
    """The study in folder ``path``, as :class:`Study` opens it, checked at once: a
    folder without one is a :class:`StudyError` naming it and saying what is allowed (a
    studies folder: the studies it holds; else a study of a close name, and
    :func:`load_study` for a study's name), never a study every question of which fails
    later, its display in a notebook included."""
    from sweeper.options import near_study

    store = StudyStore(path)
    if store.exists() or store.orphaned():
        return _readable(store)
    said = f"Study({str(path)!r}): "
    held = studies_folder(path, lambda name: f"sweeper.load_study({name!r}, "
                          f"studies_dir={str(path)!r})")
    if held is not None:
        raise StudyError(said + held)
    what = f"no study in {path} (no study.json)" if path.is_dir() else \
        f"{path} is a file, not a folder" if path.exists() else f"no folder {path}"
    raise StudyError(f"{said}{what}; allowed: a study's folder (what sweeper run prints, "
                     "a Study's .path), or sweeper.load_study(NAME) for a study's name under "
                     f"studies_dir{near_study(path, Path('studies'))}")


def studies_folder(path: Path, by_name: Callable[[str], str]) -> str | None:
    """What folder ``path``, given where a study goes, is where it holds studies and no
    study of its own: a studies folder, its studies (the first :data:`LISTED`), and how to
    give one, by its folder or as ``by_name`` of its name says; ``None`` elsewhere."""
    held = sorted(p.parent.name for p in path.glob("*/study.json")) if path.is_dir() else []
    if not held:
        return None
    shown = ", ".join(held[:LISTED]) + (f" ({len(held)} in all)" if len(held) > LISTED
                                        else "")
    return (f"{path} is a studies folder, not a study; its studies: {shown}; give one's "
            f"folder ({path / held[0]}), or {by_name(held[0])}")


def stored(storage: Storage) -> Storage:
    """``storage``, a store given to :class:`Study`, checked as a folder is
    (:func:`study_in`): a journal's folder as that; a database's study where the
    database holds it and its metadata reads, else a :class:`StudyError` naming the store
    and what is allowed (never a study whose every question fails later)."""
    if isinstance(storage, StudyStore):
        study_in(storage.root)
        return storage
    if not storage.exists():
        raise StudyError(f"Study({storage.location!r}): no study {storage.name!r} there; "
                         "allowed: a study the database keeps, as sweeper.load_study(NAME, "
                         "storage=URL) finds it by name")
    storage.meta()                             # malformed: one line saying so
    return storage


def _folder(given: str | Path) -> Path:
    """The folder a :class:`Study` is given as text or a path; a URL (a database's, or
    another scheme's) is refused naming what reads a study from a database, where as a
    path it would be a folder of a mangled name (``postgresql:/u@host/db``) that is not
    there."""
    if not isinstance(given, str) or "://" not in given or Path(given).exists():
        return Path(home(given))
    from sweeper.store._open import SCHEMES, is_database
    from sweeper.store._url import mask_url

    # a database's Study shows itself as Study('URL (study NAME)')
    named = re.fullmatch(r"(.*) \(study (.+)\)", given)
    url, name = (mask_url(named[1]), named[2]) if named else (mask_url(given), "")
    said = f"Study({url + (f' (study {name})' if name else '')!r}): "
    if is_database(given):
        raise StudyError(f"{said}a database URL names no study; allowed: "
                         f"sweeper.load_study({name or 'NAME'!r}, storage={url!r})"
                         f"{'' if name else ' for the study NAME it keeps'}, or a study's "
                         "folder")
    scheme = given.partition("://")[0]
    raise StudyError(f"{said}{scheme}:// is no store of studies; allowed: a study's folder, "
                     f"or sweeper.load_study(NAME, storage=URL) with a {SCHEMES[0]} URL for "
                     "a study kept in PostgreSQL")


def _readable(store: StudyStore) -> StudyStore:
    """``store`` where its ``study.json`` can be read; a journal without it, or one that
    cannot be read, is one line saying so."""
    if store.orphaned():
        raise StudyError(f"{store.root}: {store.journal_path.name} without study.json: "
                         "nothing says what it measured; restore study.json or move the "
                         "folder away")
    store.meta()                               # malformed: one line saying so
    return store
