"""YAML with line numbers: every value comes back with the line it was written on.

PyYAML's node tree keeps marks; this walks it once and returns plain Python
values plus a map from key path (``params.BLOCK``) to line, so every later
error can say ``spaces/copy.yaml:14: params.BLOCK: ...``.
"""

from __future__ import annotations

from typing import Any

import yaml

from sweeper.errors import SpaceError


def load_with_lines(text: str, file: str) -> tuple[Any, dict[str, int]]:
    """Parse ``text``; return ``(data, lines)`` where ``lines[path]`` is 1-based."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        raise SpaceError(f"YAML syntax error: {err.problem or err}", file=file, line=line) \
            from None
    finally:
        loader.dispose()
    if node is None:
        raise SpaceError("the file is empty; a space needs at least 'kernel' and 'params'",
                         file=file, line=1)
    lines: dict[str, int] = {}
    return _convert(node, "", lines, file, yaml.SafeLoader("")), lines


def _convert(node: yaml.Node, path: str, lines: dict[str, int], file: str,
             loader: yaml.SafeLoader) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            key = str(key)
            child = f"{path}.{key}" if path else key
            if key in out:
                raise SpaceError(f"duplicate key {key!r} (first on line {lines[child]})",
                                 file=file, line=key_node.start_mark.line + 1, path=child)
            out[key] = _convert(value_node, child, lines, file, loader)
            lines[child] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, f"{path}[{i}]", lines, file, loader)
                for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)
