"""``--format csv``, ``--format triton`` and ``--format header``: the study as a replay
table (:func:`sweeper.export.export_csv`), and its winners as an importable module of
``triton.Config`` objects (:func:`sweeper.export_triton.export_triton`) or a CUDA C
kernel's as a C header of ``#define``s (:func:`sweeper.export_header.export_header`)."""

from __future__ import annotations

import re
from keyword import iskeyword
from pathlib import Path

from sweeper.core._spelling import given
from sweeper.core._units import counted
from sweeper.export import export_csv
from sweeper.export_header import export_header, target_macro
from sweeper.export_triton import export_module
from sweeper.interop import Written
from sweeper.outcome import killed_from_outside
from sweeper.store import Storage, StudyStore
from sweeper.winners import UNFINISHED


def write_csv(store: Storage, target: str | None, *, replace: bool = False) -> Written:
    """Every trial that ran, as a table ``--device replay:`` serves (default path:
    STUDY/replay.csv).  Trials ruled out by constraints (``invalid``) and configs a
    replayed table lacked (``missing``) measured nothing, and a replay table cannot hold
    them, so they are left out, and so are those a study resumed with ``--force`` after its
    kernel was edited measured on the earlier source (a table holds each config once) and
    those to be measured again (their worker process was killed from outside: their
    configs were not measured, and a table's ``crashed`` would read as the kernel's fault);
    the Parquet export keeps every trial.  An existing file is
    replaced whole (``replace`` changes nothing)."""
    path, count, earlier, again = export_csv(store, target or store.root / "replay.csv")
    left_out = "" if not earlier else \
        f"; left out {counted(earlier, 'trial')} measured on an earlier source of the kernel"
    if again:
        left_out += (f"; left out {counted(again, 'trial')} to measure again "
                     f"({killed_from_outside(again)}: a replay of the table says it does not "
                     f"hold {'its config' if again == 1 else 'their configs'})")
    return Written(path, f"wrote {count} trials to {path} (replay it with "
                   f"{given('device', f'replay:{path}')}){left_out}")


def write_triton(store: StudyStore, target: str | None, *, replace: bool = False) -> Written:
    """Each GPU's winners, ``configs(k)``, ``key`` and ``grid`` in a Python module that
    imports only triton (default path: STUDY/tuned_configs.py); another GPU's study adds
    its section to the same file, another study of the same GPU its winners for the
    problems it measured (``replace`` changes nothing).  Its line names the problems
    whose winner is the sweep's best for now, their finals not run yet."""
    path, section, note, unfinished = export_module(store,
                                                    target or store.root / "tuned_configs.py")
    meta = store.study_meta()
    others = [w for w in section["winners"] if w.get("study") != meta.study]
    kept = "" if not others else \
        f"; kept {counted(len(others), 'winner')} of {meta.gpu} from " \
        f"{', '.join(dict.fromkeys(str(w['study']) for w in others))} for problems this " \
        "study did not measure"
    wrote = (f"{counted(len(section['winners']) - len(others), 'winner')} and "
             f"{counted(len(section['ranked']), 'distinct config')}")
    later = "" if not unfinished else \
        f"; the sweep's best for now at {', '.join(unfinished)}: {UNFINISHED}"
    return Written(path, f"wrote {wrote} to {path} ({_import_it(path)}; configs(k=4) "
                   f"feeds @triton.autotune){kept}{later}{f'; {note}' if note else ''}")


def write_header(store: StudyStore, target: str | None, *, replace: bool = False) -> Written:
    """A CUDA C kernel's winners, each GPU's and problem's, as a C header of ``#define``s
    (default path: STUDY/tuned.h); another GPU's study adds its section to the same file,
    another study of the same GPU its winners for the problems it measured (``replace``
    changes nothing).  Its line says how a build picks a config, and names the problems
    whose winner is the sweep's best for now, their finals not run yet."""
    written = export_header(store, target or store.root / "tuned.h")
    study = store.study_meta().study
    mine = [w for w in written.section["winners"] if w["study"] == study]
    later = "" if not written.unfinished else \
        f"; the sweep's best for now at {', '.join(written.unfinished)}: {UNFINISHED}"
    return Written(written.path, f"wrote {counted(len(mine), 'winner')} of "
                   f"{written.gpu} to {written.path} (#include it; compile with "
                   f"-D{target_macro(written.gpu)}, and -DPROBLEM_... for a problem's "
                   f"winner){later}")


def _import_it(path: Path) -> str:
    """How the module at ``path`` is imported: by its name where that is a module's
    name, else the name to give the file (``tuned-copy.py``: ``tuned_copy.py``)."""
    if path.suffix == ".py" and path.stem.isidentifier() and not iskeyword(path.stem):
        return "import it"
    name = re.sub(r"\W", "_", path.stem) or "tuned"
    name = f"_{name}" if name[0].isdigit() or iskeyword(name) else name
    return f"`import` cannot name {path.name}: rename it {name}.py to import it"
