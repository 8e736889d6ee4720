"""Space files on disk: ``extends:`` chains and ``-p`` overrides, merged with the file
and line every value came from, so errors can point at the right place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from sweeper.errors import SpaceError
from sweeper.space._yaml import load_with_lines

Where = dict[str, tuple[str, "int | None"]]      # key path -> (file, line)
MERGED = ("params", "measure", "budget")          # merged key by key under extends


def load_located(path: Path, chain: tuple[Path, ...]) -> tuple[Any, Where, str]:
    file = str(path)
    try:
        text = path.read_text()
    except OSError as err:
        where = f" (extended by {chain[-1]})" if chain else ""
        raise SpaceError(f"cannot read the space file{where}: {err.strerror}", file=file) \
            from None
    data, lines = load_with_lines(text, file)
    where: Where = {k: (file, v) for k, v in lines.items()}
    if not isinstance(data, dict) or "extends" not in data:
        return data, where, text
    parent_ref = data.pop("extends")
    if not isinstance(parent_ref, str):
        raise SpaceError(f"{parent_ref!r} is not a file name", file=file,
                         line=lines.get("extends"), path="extends")
    parent = (path.parent / parent_ref).resolve()
    if parent in chain or parent == path.resolve():
        raise SpaceError(f"{parent_ref} extends itself through {' -> '.join(map(str, chain))}",
                         file=file, line=lines.get("extends"), path="extends")
    pdata, pwhere, ptext = load_located(parent, (*chain, path.resolve()))
    if not isinstance(pdata, dict):
        raise SpaceError("the extended file must be a mapping of keys", file=str(parent),
                         line=1)
    merged = dict(pdata)
    merged_where = dict(pwhere)
    for key, value in data.items():
        if key in MERGED and isinstance(value, dict) and isinstance(pdata.get(key), dict):
            merged[key] = {**pdata[key], **value}
            for sub in value:
                _drop(merged_where, f"{key}.{sub}")
        else:
            merged[key] = value
            _drop(merged_where, key)
    merged_where.update(where)
    return merged, merged_where, f"{text}\n# extends {parent_ref}:\n{ptext}"


def _drop(where: Where, path: str) -> None:
    for key in [k for k in where if k == path or k.startswith((path + ".", path + "["))]:
        del where[key]


def override(data: Any, where: Where, overrides: Sequence[str]) -> tuple[Any, Where]:
    """Apply ``KEY=V1,V2`` (or ``KEY=[yaml list]``) to ``params``; errors name the option.
    The values are read as a space file's are (the same YAML loader, then the same
    checks), and an axis given twice is refused, as a key written twice in a file is."""
    if not overrides:
        return data, where
    data = dict(data) if isinstance(data, dict) else data
    given: dict[str, str] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise SpaceError(f"{item!r} is not KEY=VALUE[,VALUE...]", file="-p")
        key = key.strip()
        if key in given:
            raise SpaceError(f"{key} is given twice (also -p {given[key]}); give each axis "
                             "once", file="-p " + item)
        given[key] = item
        if raw.lstrip().startswith(("[", "{")):
            loaded, _ = load_with_lines(raw, "-p " + item)
        else:
            try:
                loaded = [yaml.safe_load(v) for v in raw.split(",")]
            except yaml.YAMLError as err:
                raise SpaceError(f"{item!r}: not YAML: {err}", file="-p") from None
        params = dict(data.get("params") or {}) if isinstance(data, dict) else {}
        params[key] = loaded
        data["params"] = params
        _drop(where, f"params.{key}")
        where[f"params.{key}"] = ("-p " + item, None)
    return data, where
