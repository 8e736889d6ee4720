"""Space files on disk: ``extends:`` chains and ``-p`` overrides, merged with the file
and line every value came from, so errors can point at the right place.

What a space file can reach: through ``extends:``, regular files under its own folder
(and below) only, after links are resolved; an absolute path, a ``..`` that leaves the
folder or a link that points out of it is refused before the file is opened, unless
the folder it lands in was allowed (``--allow-path DIR`` or ``$SWEEPER_ALLOW_PATH``).
An extended file that is not a space file is refused without quoting it: errors about
it give its line and never its text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sweeper.core._spelling import given, option
from sweeper.core._units import did_you_mean, zip_members
from sweeper.errors import SpaceError
from sweeper.escape import cut
from sweeper.space._yaml import decode_text, load_value, load_with_lines, read_capped

Where = dict[str, tuple[str, "int | None"]]      # key path -> (file, line)
MERGED = ("params", "measure", "budget")          # merged key by key under extends
MAX_EXTENDS = 16                                  # files a space may extend, one after another
#: The line of a space's text (every file read, one after another) where the lines of a
#: file it extends start, naming it as ``extends:`` does (:func:`extended_file`).
_EXTENDS_LINE = re.compile(r"# extends (.+):")
#: Folders, separated by ``os.pathsep``, that every space file may extend files from.
ALLOW_ENV = "SWEEPER_ALLOW_PATH"
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")

#: The keys a space file may have at its top level.
TOP_KEYS = ("study", "kernel", "from_autotune", "sampler", "seed", "params", "constraints",
            "measure", "budget", "extends")


def reachable(path: Path, allow: Sequence[str | Path]) -> tuple[Path, ...]:
    """The folders the space file at ``path`` may extend files from: its own first, then
    those in ``allow`` and in ``$SWEEPER_ALLOW_PATH``."""
    extra = [*allow, *(p for p in os.environ.get(ALLOW_ENV, "").split(os.pathsep) if p)]
    return (path.parent.resolve(), *(Path(p).expanduser().resolve() for p in extra))


def load_located(path: Path, chain: tuple[Path, ...], roots: tuple[Path, ...],
                 text: str | None = None) -> tuple[Any, Where, str]:
    """The file's data merged over what it extends, with where each key came from, and
    the text of every file read; ``roots``: the folders ``extends:`` may reach
    (:func:`reachable`).  ``text``: the file's text, given rather than read (a space
    given as text, or an extended file, which the file naming it reads so that a file
    that cannot be read is an error at its ``extends:`` line); ``path`` then only names
    it, and its folder is where ``extends:`` looks."""
    file = str(path)
    if text is None:
        try:
            raw = read_capped(path)
        except OSError as err:
            # a relative path run from another folder than the one it was written for
            folder = f" in {os.getcwd()}" if isinstance(err, FileNotFoundError) and \
                not path.is_absolute() else ""
            raise SpaceError(f"cannot read the space file: {err.strerror}{folder}",
                             file=file) from None
        text = decode_text(raw, file)
        if path.suffix == ".py":        # the kernel's module given where its space goes
            raise SpaceError("a Python file, not a space file (YAML); name its kernel as "
                             "module:attr under kernel: in a space file (as "
                             "examples/scale.yaml does), or run an @triton.autotune kernel "
                             "with --from-autotune MODULE:KERNEL", file=file)
    data, lines = load_with_lines(text, file) if not chain else _extended(text, file)
    where: Where = {k: (file, v) for k, v in lines.items()}
    if not isinstance(data, dict) or "extends" not in data:
        return data, where, text
    parent_ref = data.pop("extends")
    parent = (path.parent / parent_ref).resolve() if isinstance(parent_ref, str) else path
    problem = _extends_problem(parent_ref, parent, chain, roots) or (
        f"{parent_ref} extends itself through "
        f"{' -> '.join(map(str, (*chain, path.resolve(), parent)))}; a space file may not "
        "extend itself, directly or through the files it extends"
        if parent in chain or parent == path.resolve() else None)
    if problem is not None:
        raise SpaceError(problem, file=file, line=lines.get("extends"), path="extends")
    try:                  # read here, so that a file that cannot be is named at this line
        extended = read_capped(parent)
    except OSError as err:
        raise SpaceError(f"cannot read {parent_ref!r} ({parent}: {err.strerror}); allowed: "
                         "the path of a readable space file, from this file's folder",
                         file=file, line=lines.get("extends"), path="extends") from None
    pdata, pwhere, ptext = load_located(parent, (*chain, path.resolve()), roots,
                                        decode_text(extended, str(parent)))
    merged, merged_where = _merged(pdata, pwhere, data, where)
    return merged, merged_where, f"{text}\n# extends {parent_ref}:\n{ptext}"


def _merged(pdata: dict[str, Any], pwhere: Where, data: dict[str, Any], where: Where
            ) -> tuple[dict[str, Any], Where]:
    """``data`` (its ``extends:`` taken out) over the ``pdata`` it extends: ``MERGED``
    keys key by key, the others whole; each key where it was written last."""
    merged = dict(pdata)
    merged_where = dict(pwhere)
    where = dict(where)
    for key, value in data.items():
        if key in MERGED and isinstance(value, dict) and isinstance(pdata.get(key), dict):
            merged[key] = {**pdata[key], **value}
            for sub in value:
                _drop(merged_where, f"{key}.{sub}")
                if value[sub] is None:          # `footprint: null`: drop what it inherits
                    _inherited(pdata[key], key, sub, where)
                    del merged[key][sub]
                    _drop(where, f"{key}.{sub}")
        else:
            merged[key] = value
            _drop(merged_where, key)
    merged_where.update(where)
    return merged, merged_where


def load_recorded(text: str, file: str, folder: str | Path | None = None
                  ) -> tuple[Any, Where]:
    """The data of a space's text as a study records it (:func:`load_located`'s third
    result: a file, then after a ``# extends REF:`` line each file it extends), merged as
    ``extends:`` merged them when it was read, with where each key was written: ``file``
    and its lines for the file's own, and for each file it extends that file's path as
    ``extends:`` named it from the folder of the file before it (the first's ``folder``,
    else ``file``'s), resolved, and its own lines, as :func:`load_located` names them, so
    that a relative file name written there (a ``.cu`` source) is read from that file's
    folder as the run read it.  No file is read: a worker that joins a study from its
    record needs none of them."""
    parts: list[tuple[str, list[str]]] = [(file, [])]
    here = Path(folder) if folder else Path(file).parent.resolve()
    for line in text.splitlines():
        ref = extended_file(line)
        if ref is None:
            parts[-1][1].append(line)
            continue
        extended = (here / ref).resolve()
        here = extended.parent
        parts.append((str(extended), []))
    if len(parts) == 1:
        data, lines = load_with_lines(text, file)
        return data, {k: (file, v) for k, v in lines.items()}
    merged: dict[str, Any] = {}
    merged_where: Where = {}
    for written, lines_of in reversed(parts):
        data, lines = load_with_lines("\n".join(lines_of), written)
        if not isinstance(data, dict):
            raise SpaceError("not a space file: each file a space extends must be a mapping "
                             "of keys", file=written, line=1)
        data.pop("extends", None)
        where: Where = {k: (written, v) for k, v in lines.items()}
        merged, merged_where = _merged(merged, merged_where, data, where)
    return merged, merged_where


def extended_file(line: str) -> str | None:
    """The file ``line`` of a space's text says the lines after it come from (as its
    ``extends:`` names it), or ``None`` where it is a line of a file."""
    marked = _EXTENDS_LINE.fullmatch(line)
    return marked.group(1) if marked else None


def _extends_problem(ref: object, target: Path, chain: tuple[Path, ...],
                     roots: tuple[Path, ...]) -> str | None:
    """Why ``extends: ref`` (``target``, resolved) cannot be followed, checked before the
    file is opened: not a file name, a chain too long, a file outside the folders a
    space file may reach, or one that is not a regular file; ``None`` if it can."""
    if not isinstance(ref, str):
        return f"{ref!r} is not a file name"
    if len(chain) >= MAX_EXTENDS:
        return (f"the extends: chain from {chain[0]} is longer than {MAX_EXTENDS} files; a "
                f"space may extend at most {MAX_EXTENDS} in a row")
    if not any(target.is_relative_to(root) for root in roots):
        lands = "" if ref == str(target) else f" (it resolves to {target})"
        return (f"{ref!r} is outside {roots[0]}, the space file's folder{lands}; extends: "
                "reaches files under that folder only; to allow another folder pass "
                f"{given('allow_path', 'DIR')} or set {ALLOW_ENV}")
    if target.exists() and not target.is_file():
        return f"{ref!r} is not a regular file"
    return None


def _extended(text: str, file: str) -> tuple[Any, dict[str, int]]:
    """An extended file's data and lines, refused without quoting it unless it is a
    mapping of space keys: a file that is not a space (a password file reached by
    mistake) must not have its lines printed in an error."""
    try:
        data, lines = load_with_lines(text, file)
    except SpaceError as err:
        raise SpaceError(_QUOTED.sub("'…'", err.message), file=err.file, line=err.line,
                         path=err.path) from None
    if not isinstance(data, dict):
        raise SpaceError("not a space file: an extended file must be a mapping of keys",
                         file=file, line=1)
    for key in data:
        if key not in TOP_KEYS:
            raise SpaceError("not a space file: the key on this line is none of "
                             f"{', '.join(TOP_KEYS)}", file=file, line=lines.get(key))
    return data, lines


def _inherited(inherited: dict[str, Any], key: str, sub: str, where: Where) -> None:
    """Refuse a ``null`` that drops ``key.sub`` where the files extended give none: it
    would drop nothing, and say so to no one."""
    if sub not in inherited:
        file, line = where.get(f"{key}.{sub}", ("<space>", None))
        raise SpaceError(f"null drops {key}.{sub} inherited through extends:, but the "
                         f"files extended give no {key}.{sub}; allowed: null for one of "
                         f"{', '.join(map(str, inherited)) or 'none'}", file=file,
                         line=line, path=f"{key}.{sub}")


def _drop(where: Where, path: str) -> None:
    for key in [k for k in where if k == path or k.startswith((path + ".", path + "["))]:
        del where[key]


def _written_at(where: Where, path: str) -> str:
    """`` (spaces/mm.yaml:7)``: where ``path`` was written, for a message naming it;
    `` (<dict>)`` where it has no line (a dict's entry, named by its key path as the
    dict's other errors are, or a ``-p`` option's), ``""`` where it is not known."""
    file, line = where.get(path, (None, None))
    return "" if not file else f" ({file})" if line is None else f" ({file}:{line})"


def _fits_the_groups(key: str, loaded: Any, params: dict[Any, Any], where: Where,
                     named: str, api: bool = False) -> None:
    """Refuse ``-p key=loaded`` where it breaks the file's groups of zipped axes: an axis
    one of them zips (``BLOCK_M=64``, or a group of another name zipping it, most often a
    misspelt one), or a group's name given anything but a group (``tiles=[64]``); ``api``:
    the advice written as ``sweeper.run``'s ``params=`` dict, as the caller gave it."""
    def as_given(group: object, members: str) -> str:     # as the caller gives a group
        group = cut(str(group), 60)
        return f"params={{{group!r}: {{'zip': {{{members}}}}}}}" if api else \
            f"{group}={{zip: {{{members}}}}}"

    groups = {g: members for g, v in params.items()
              if g != key and (members := zip_members(v)) is not None}
    own = zip_members(params.get(key))
    given_members = zip_members(loaded)
    if own is not None and given_members is None:
        at = _written_at(where, f"params.{key}")
        members = [cut(str(m), 60) for m in own[:8]]
        rows = ", ".join(f"{m!r}: [...]" if api else f"{m}: [...]" for m in members)
        raise SpaceError(f"params.{cut(key, 60)}{at} is a group of zipped axes "
                         f"({', '.join(members)}); override it as a group: "
                         f"{as_given(key, rows)}", file=named)
    for member in given_members if given_members is not None else [key]:
        group = next((g for g, members in groups.items() if member in members), None)
        if group is None:
            continue
        at = _written_at(where, f"params.{group}")
        hint = did_you_mean(key, groups) if given_members is not None else ""
        others = cut(", ".join(str(k) for k in groups[group] if k != member), 200)
        raise SpaceError(f"{cut(str(member), 60)} is zipped in params."
                         f"{cut(str(group), 60)}{at}, so it moves with {others}; override "
                         f"the group instead ({as_given(group, '...')}){hint}", file=named)


@dataclass(frozen=True)
class Override:
    """One axis replaced from a Python dict (``sweeper.run(params={'BLOCK': [300]})``):
    ``key``, its ``values`` as ``-p`` reads them (a YAML list, ``[300]``), and how
    messages ``named`` it, as the caller wrote it (``params={'BLOCK': [300]}``), not as
    the command's ``-p BLOCK=[300]`` the caller never typed."""

    key: str
    values: str
    named: str


def override(data: Any, where: Where, overrides: Sequence[str | Override]) -> tuple[Any, Where]:
    """Apply ``KEY=V1,V2`` (or ``KEY=[yaml list]``, or an :class:`Override`) to
    ``params``; errors name the option as the caller gave it (``-p BLOCK=300``, from the
    API ``params='BLOCK=300'`` or ``params={'BLOCK': 300}``).
    The values are read as a space file's are (the same YAML loader, then the same
    checks), and an axis given twice is refused, as a key written twice in a file is."""
    if not overrides or not isinstance(data, dict):    # a file no mapping: the parser says so
        return data, where
    data = dict(data)
    seen: dict[str, str] = {}
    for item in overrides:
        if isinstance(item, Override):
            key, raw, named = item.key, item.values, item.named
        else:
            named = given("params", cut(item, 60))      # a value cannot flood the message
            key, sep, raw = item.partition("=")
            if not sep or not key.strip() or not raw.strip():
                raise SpaceError(f"{cut(item, 60)!r} is not KEY=VALUE[,VALUE...]",
                                 file=option("params"))
            key = key.strip()
        if key in seen:
            raise SpaceError(f"{cut(key, 60)} is given twice (also {seen[key]}); give each "
                             "axis once", file=named)
        seen[key] = named
        if raw.lstrip().startswith(("[", "{")):
            try:
                loaded, _ = load_with_lines(raw, named)
            except SpaceError as err:          # one line on the command line: no line number
                raise SpaceError(err.message, file=err.file, path=err.path) from None
        else:
            assert isinstance(item, str)       # an Override's values are a YAML list
            open_call = next((v for v in raw.split(",") if v.count("(") > v.count(")")), None)
            if open_call is not None:        # cdiv(n, BLOCK) split at its comma
                raise SpaceError(
                    f"{cut(item, 60)!r}: a comma splits the values, and so the "
                    f"expression at {cut(open_call.strip(), 30)!r}; give a list with an "
                    f"expression holding a comma as YAML: {key}=[sms, \"cdiv(n, BLOCK)\"]",
                    file=option("params"))
            try:
                loaded = [load_value(v, named) for v in raw.split(",")]
            except yaml.YAMLError as err:           # its problem, not PyYAML's lines of context
                problem = getattr(err, "problem", None) or str(err).splitlines()[0]
                raise SpaceError(f"{cut(item, 60)!r}: not YAML: {problem}",
                                 file=option("params")) from None
        params = data.get("params") or {}
        if not isinstance(params, dict):        # refused by the parser, as the file wrote it
            continue
        _fits_the_groups(key, loaded, params, where, named, api=isinstance(item, Override))
        data["params"] = {**params, key: loaded}
        _drop(where, f"params.{key}")
        where[f"params.{key}"] = (named, None)
    return data, where
