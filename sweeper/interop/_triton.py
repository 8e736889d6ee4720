"""``--format triton``: the winners as an importable module of ``triton.Config`` objects
(:func:`sweeper.export_triton.export_triton`)."""

from __future__ import annotations

from sweeper.export_triton import export_triton
from sweeper.interop import Written
from sweeper.store import StudyStore


def write_triton(store: StudyStore, target: str | None, *, replace: bool = False) -> Written:
    """Each GPU's winners, ``configs(k)``, ``key`` and ``grid`` in a Python module that
    imports only triton (default path: STUDY/tuned_configs.py); another GPU's study adds
    its section to the same file (``replace`` changes nothing)."""
    path, section = export_triton(store, target or store.root / "tuned_configs.py")
    return Written(str(path), f"wrote {len(section['winners'])} winner(s) and "
                   f"{len(section['ranked'])} distinct config(s) to {path} (import it; "
                   "configs(k=4) feeds @triton.autotune)")
