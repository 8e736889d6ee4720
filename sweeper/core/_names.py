"""Study names: a study is a folder under ``--studies-dir``, so its name must be a safe
file name there and print as itself.

A name is 1 to :data:`MAX_STUDY_NAME` ASCII letters, digits and ``. - _ +``, not
starting with ``.``.  That leaves out path separators and ``..`` (a study written
outside the studies folder), NUL and control characters (names that cannot be
created or that rewrite the terminal), right-to-left overrides and look-alike
letters (names that print as another name), and hidden folders.
"""

from __future__ import annotations

import re

MAX_STUDY_NAME = 100
STUDY_NAME_RULE = (f"allowed: 1 to {MAX_STUDY_NAME} of the letters A-Z a-z, digits and "
                   ". - _ +, not starting with '.'")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._+-]+")


def study_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a study (one line, the name shown escaped), or ``None``."""
    if not isinstance(name, str):
        return f"{name!r} is not a study name: not text; {STUDY_NAME_RULE}"
    shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}... ({len(name)} characters)"
    if not name:
        why = "it is empty"
    elif len(name) > MAX_STUDY_NAME:
        why = f"longer than {MAX_STUDY_NAME} characters"
    elif (bad := _NOT_ALLOWED.search(name)) is not None:
        why = f"{bad.group()[0]!r} is not allowed"
    elif name.startswith("."):
        why = "it starts with '.'"
    else:
        return None
    return f"{shown} is not a study name: {why}; {STUDY_NAME_RULE}"


def safe_name(text: str, default: str = "study") -> str:
    """``text`` made a valid study name: each run of other characters becomes ``-``,
    dots and dashes in front and dashes at the end go, and it is cut to the longest name
    allowed (``default`` if nothing is left).  For names derived from a file name, never
    for names a user typed: those are refused, not rewritten."""
    name = _NOT_ALLOWED.sub("-", text).lstrip(".-")[:MAX_STUDY_NAME].rstrip("-")
    return name or default


__all__ = ["MAX_STUDY_NAME", "STUDY_NAME_RULE", "safe_name", "study_name_problem"]
