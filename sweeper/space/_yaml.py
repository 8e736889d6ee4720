"""YAML with line numbers, read within bounds: every value comes back with its line.

PyYAML's node tree keeps marks; this walks it once and returns plain Python
values plus a map from key path (``params.BLOCK``) to line, so every later
error can say ``spaces/copy.yaml:14: params.BLOCK: ...``.

A space file comes from outside, so nothing in it may cost more than a space
needs: the file is at most :data:`MAX_FILE_BYTES`, UTF-8 (or UTF-16 with a byte
order mark, as YAML allows), and the document at most :data:`MAX_NODES` values
nested at most :data:`MAX_DEPTH` deep, *counting every alias as the copy it
stands for*.  Sizes are checked while the node tree is composed (an alias is a
reference there), before anything is expanded, so an alias bomb is refused in
milliseconds at the line of the alias that crosses the limit.  Brackets nested
deeper than that are refused by a scan of the text before any parser sees it
(:func:`_flow_depth`): PyYAML's pure-Python scanner takes time quadratic in
their depth.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from sweeper.errors import SpaceError

MAX_FILE_BYTES = 1 << 20
#: Real spaces hold hundreds of values; composing one costs some 25 us in Python, so
#: this many is refused within about half a second.
MAX_NODES = 20_000
MAX_DEPTH = 100
#: The most bits an integer a space file writes may have (some 1233 decimal digits): far
#: past any setting's values (at most 2**62), printable (``str()`` refuses more than 4300
#: digits), and longer than any setting that takes text takes; a larger one is a
#: :class:`LongNumber`.
MOST_BITS = 1 << 12
_MERGE = "tag:yaml.org,2002:merge"
_PLAIN_COLLECTIONS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
#: An integer YAML 1.1 reads as octal: a plain ``0400`` is 256, ``budget: {trials: 0010}`` 8
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_UTF32 = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
_UTF16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def read_capped(path: Path) -> bytes:
    """The file's bytes, reading at most one byte past :data:`MAX_FILE_BYTES` (a device
    or a pipe is never read to its end); raises ``OSError`` as ``open`` does, and
    :class:`SpaceError` for a larger file."""
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            info = os.fstat(f.fileno())
            size = f"{info.st_size} bytes" if stat.S_ISREG(info.st_mode) else \
                f"more than {MAX_FILE_BYTES} bytes"
            raise SpaceError(f"the file is {size}; a space file may be at most "
                             f"{MAX_FILE_BYTES} bytes (1 MiB)", file=str(path), line=1)
    return data


def decode_text(data: bytes, file: str) -> str:
    """``data`` as text, or a :class:`SpaceError` at the line of the first byte that is not."""
    if data.startswith(_UTF32):
        raise SpaceError("UTF-32 text; save the space file as UTF-8", file=file, line=1)
    if data.startswith(_UTF16):
        try:
            text = data.decode("utf-16").lstrip("\ufeff")
        except UnicodeDecodeError as err:
            raise SpaceError(f"not UTF-16 text after its byte order mark (offset {err.start}); "
                             "save the space file as UTF-8", file=file, line=1) from None
        nul = text.find("\0")
        if nul >= 0:
            raise SpaceError(f"not text (a NUL character at offset {nul}); save the space file "
                             "as UTF-8", file=file, line=text.count("\n", 0, nul) + 1)
        return text
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if nul < 0 or nul > err.start:
            raise SpaceError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                             f"{err.start}); save the space file as UTF-8", file=file,
                             line=data.count(b"\n", 0, err.start) + 1) from None
    if nul >= 0:
        raise SpaceError(f"not text (a NUL byte at offset {nul}); save the space file as UTF-8",
                         file=file, line=data.count(b"\n", 0, nul) + 1)
    return text.removeprefix("\ufeff")


#: What the nesting scan stops at: a bracket, a quote, a comment, a block scalar's
#: indicator.
_FLOW_MARKS = re.compile(r"[\[\]{}'\"#|>]")
_QUOTED = {"'": re.compile(r"'(?:[^']|'')*'"), '"': re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)}
#: Where a plain value in block context may end and another begin: a ``: ``, a comment.
_PLAIN_END = re.compile(r":[ \t\r\n]|[ \t]#|\n")
#: What may stand before a value in a flow collection, and in block context.
_BEFORE_FLOW_VALUE, _BEFORE_BLOCK_VALUE = "[{,:?", ":-?"


def _flow_depth(text: str, file: str) -> None:
    """Refuse brackets (flow collections) nested more than :data:`MAX_DEPTH` deep, at the
    line of the first that crosses it, in one pass over the text before it is parsed.
    Each bracket counted is a value the composer counts too, so this refuses nothing the
    composer would take: quoted text, comments and block scalars are skipped, and a
    bracket within a plain value in block context (``a[1]``) is not counted (in a flow
    collection a plain value ends at one).  The pass reads the whole text, however many
    marks it holds and however far a bracket stands from what precedes it (a long anchor,
    a line of spaces), in time linear in its length: each look back ends where the last
    mark did (:func:`_starts_value`)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth, pos, lead, comment = 0, 0, "\n", False
    while True:
        found = _FLOW_MARKS.search(text, pos)
        if found is None:
            return
        mark, at, floor = found.group(), found.start(), pos
        if floor and not comment:   # what stands before floor, a comment's text aside
            lead = text[floor - 1]
        pos, comment = at + 1, False
        if mark in "]}":
            depth = max(depth - 1, 0)
        elif mark == "#":
            if at == 0 or text[at - 1] in " \t\n":
                lead = (text[floor:at].rstrip(_BLANK) or lead)[-1]
                pos, comment = _line_end(text, at), True
        elif mark in "[{" and (depth or _starts_value(text, at, depth, floor, lead)):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpaceError(f"brackets nested more than {MAX_DEPTH} levels deep; a space "
                                 f"file nests values at most {MAX_DEPTH} deep", file=file,
                                 line=text.count("\n", 0, at) + 1)
        elif mark in "[{" or not _starts_value(text, at, depth, floor, lead):
            if not depth:                       # within a plain value, which runs on to
                found = _PLAIN_END.search(text, at)     # a ': ', a comment or its line's end
                pos = len(text) if found is None else found.start()
        elif mark in "'\"":
            quoted = _QUOTED[mark].match(text, at)
            if quoted is None:                  # unterminated: the parser says where
                return
            pos = quoted.end()
        elif depth == 0:                        # | or >: skip the block scalar's lines
            start = text.rfind("\n", 0, at) + 1
            indent = _parent_indent(text[start:at])
            pos = _line_end(text, at) + 1
            while pos < len(text):
                following = text[pos:_line_end(text, pos)]
                if following.strip() and len(following) - len(following.lstrip(" ")) <= indent:
                    break
                pos += len(following) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


_BLANK = " \t\r\n"


def _starts_value(text: str, at: int, depth: int, floor: int, lead: str) -> bool:
    """Whether ``text[at]`` is the first character of a value, not within a plain one:
    after what may stand before a value (anchors and tags aside, however long), or first
    on its line in block context.  It looks back no further than ``floor``, where the last
    mark the scan took ended, so that the looks back of one scan never overlap; there,
    ``lead``, the character before ``floor`` (that mark's, or the last before a comment),
    decides."""
    newline = -1 if depth else text.rfind("\n", floor, at)
    start = newline + 1 if newline >= 0 else floor
    end = at
    while True:
        while end > start and text[end - 1] in _BLANK:
            end -= 1
        if end == start:
            break
        if text[end - 1] in (_BEFORE_FLOW_VALUE if depth else _BEFORE_BLOCK_VALUE):
            return True
        word = end
        while word > start and text[word - 1] not in _BLANK:
            word -= 1
        if text[word] not in "&!":              # &anchor, !!tag
            return False
        end = word
    if depth:
        return lead in _BEFORE_FLOW_VALUE
    return start == 0 or text[start - 1] == "\n"


def _parent_indent(prefix: str) -> int:
    """The indentation a block scalar's lines must pass, from ``prefix``, what precedes
    its ``|`` or ``>`` on its line: the column of the innermost collection begun there (a
    key's, or the last ``- `` or ``? `` entry's), else the line's own indentation."""
    column = len(prefix) - len(prefix.lstrip(" "))
    entry, rest = column, prefix[column:]
    while rest.startswith(("- ", "-\t", "? ", "?\t")):
        entry, stripped = column, rest[1:].lstrip(" \t")
        column, rest = column + len(rest) - len(stripped), stripped
    return column if ": " in rest or ":\t" in rest else entry


class _Alias(yaml.Node):
    """Where ``*name`` was written, standing for the node its anchor names."""

    id = "alias"

    def __init__(self, target: yaml.Node, mark: Any) -> None:
        super().__init__(target.tag, target.value, mark, mark)
        self.target = target


class _Bounded(yaml.composer.Composer):
    """PyYAML's composer, counting every node the document stands for as it goes."""

    #: the parser whose events it composes (PyYAML's pure-Python one, or libyaml's)
    events: Any

    def __init__(self, text: str, file: str) -> None:
        self.events.__init__(self, text)
        self.file = file
        self.anchors: dict[str, yaml.Node] = {}
        self.depth = 0
        self.total = 0                                       # nodes, aliases expanded
        self.extent: dict[int, tuple[int, int]] = {}         # id(node) -> (size, height)

    def refuse(self, message: str, mark: Any) -> SpaceError:
        return SpaceError(message, file=self.file, line=mark.line + 1)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent) and self.peek_event().anchor in self.anchors:
            event = self.get_event()
            target = self.anchors[event.anchor]
            if target.end_mark is None:          # its anchor's node is still being composed
                raise self.refuse(f"alias *{event.anchor} is recursive (it stands for a node "
                                  "that contains it)", event.start_mark)
            size, height = self.extent[id(target)]
            self.count(size, event.start_mark, f"alias *{event.anchor} stands for {size} values"
                       " (an alias is a full copy); ")
            if self.depth + height > MAX_DEPTH:
                raise self.refuse(f"alias *{event.anchor} nests the document more than "
                                  f"{MAX_DEPTH} levels deep", event.start_mark)
            return _Alias(target, event.start_mark)
        mark = self.peek_event().start_mark
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.refuse(f"nested more than {MAX_DEPTH} levels deep", mark)
        self.count(1, mark, "")
        node = super().compose_node(parent, index)
        self.depth -= 1
        children = [] if isinstance(node, yaml.ScalarNode) else (
            node.value if isinstance(node, yaml.SequenceNode) else
            [n for pair in node.value for n in pair])
        sizes = [self.extent[id(getattr(c, "target", c))] for c in children]
        self.extent[id(node)] = (1 + sum(s for s, _ in sizes),
                                 1 + max((h for _, h in sizes), default=0))
        return node

    def count(self, size: int, mark: Any, why: str) -> None:
        self.total += size
        if self.total > MAX_NODES:
            raise self.refuse(f"{why}the document grows past {MAX_NODES} values; a space file "
                              "may hold at most that many", mark)


class LongNumber(str):
    """An integer too large for any setting and too long to print (more than
    :data:`MOST_BITS`; a decimal of more digits than Python's ``int()`` reads, 4300,
    ``sys.get_int_max_str_digits``), kept as its text: reading or printing it would cost
    time quadratic in its length or fail, and refusing it while the file is read would
    say nothing of the key it was written for.  Every check that wants a number refuses a
    string, so it is refused where it stands in the setting's own words (``budget.trials:
    a number of 5000 digits is not a whole number from 1 to ...``); ``digits``: its
    decimal digits, about, where it is not written in decimal digits (``0xfff...``,
    YAML 1.1's base 60 ``1:2:3``)."""

    digits: int | None

    def __new__(cls, text: str, digits: int | None = None) -> LongNumber:
        number = super().__new__(cls, text)
        number.digits = digits
        return number

    def __repr__(self) -> str:
        if self.digits is None:
            return f"a number of {len(self.lstrip('+-'))} digits"
        return f"a number of some {self.digits} digits"


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """PyYAML's integer, or a :class:`LongNumber` for one of more than :data:`MOST_BITS`
    (``0x`` and 4000 ``f``, which ``int()`` reads but nothing prints) or of more digits
    than ``int()`` reads; a base 60 one of more than ``MOST_BITS // 5`` places (each
    worth 60, so past :data:`MOST_BITS`) is not computed, as that is quadratic in them."""
    places = node.value.count(":")
    if places > MOST_BITS // 5:
        return LongNumber(node.value, int(places * math.log10(60)))
    try:
        number = yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:
        return LongNumber(node.value)
    if number.bit_length() > MOST_BITS:
        return LongNumber(node.value, int(number.bit_length() * math.log10(2)))
    return number


class _Loader(_Bounded, yaml.SafeLoader):
    """PyYAML's pure-Python parser under the bounded composer: the reference reading, whose
    refusals are sweeper's own whatever libyaml version is installed."""

    events = yaml.SafeLoader


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


# libyaml's parser, where PyYAML has it, is some 20 times faster than the pure-Python one
# (a 1 MiB file is read in a fraction of a second), but it refuses some documents with
# messages of its own that change between versions (libyaml's nesting limit, say).  A
# document it refuses is read again by the pure-Python parser, which gives the refusal.
_CEvents: Any = getattr(yaml, "CSafeLoader", None)
#: The loader tried first: libyaml's events under the bounded composer where PyYAML has
#: them, else the reference one.
_FastLoader: type[_Bounded] = _Loader
if _CEvents is not None:
    class _CLoader(_Bounded, _CEvents):
        events = _CEvents

    _CLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _FastLoader = _CLoader


def _compose(text: str, file: str, kind: type[_Bounded]) -> tuple[Any, _Bounded]:
    loader: Any = kind(text, file)
    try:
        return loader.get_single_node(), loader
    finally:
        loader.dispose()


def load_with_lines(text: str, file: str) -> tuple[Any, dict[str, int]]:
    """Parse ``text``; return ``(data, lines)`` where ``lines[path]`` is 1-based."""
    _printable(text, file)
    _flow_depth(text, file)
    try:
        try:
            node, loader = _compose(text, file, _FastLoader)
        except yaml.YAMLError:
            if _FastLoader is _Loader:
                raise
            node, loader = _compose(text, file, _Loader)
        if node is None:
            raise SpaceError("the file is empty; a space needs at least 'kernel' and 'params'",
                             file=file, line=1)
        lines: dict[str, int] = {}
        return _convert(node, "", lines, file, loader), lines
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        what = "YAML" if isinstance(err, yaml.constructor.ConstructorError) else \
            "YAML syntax error"
        problem = str(err.problem or err.context or err)
        if "'\\t'" in problem:
            problem += "; YAML indents with spaces, not tabs"
        raise SpaceError(f"{what}: {problem}", file=file,
                         line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as err:
        raise SpaceError(f"YAML error: {err}", file=file, line=1) from None


def content_sha256(data: Any) -> str:
    """The hash of what parsed YAML ``data`` says: the same for texts that differ only in
    comments, whitespace, quoting, flow or block style, or the order of a mapping's keys;
    a value's type counts (``1``, ``1.0`` and ``"1"`` differ)."""
    text = json.dumps(_canonical(data), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` as JSON that says what it is: each value tagged with its type, a
    mapping's entries in one order whatever order the text gave them."""
    if isinstance(value, dict):
        entries = [[_canonical(k), _canonical(v)] for k, v in value.items()]
        return ["map", sorted(entries, key=json.dumps)]
    if isinstance(value, list):
        return ["seq", [_canonical(v) for v in value]]
    kept = value if value is None or isinstance(value, str | int | float) else repr(value)
    return [type(value).__name__, kept]


def load_value(text: str, file: str) -> Any:
    """One value written on the command line (a ``-p`` value between commas), read as a
    space file's values are (``None`` for no text)."""
    _flow_depth(text, file)
    node, loader = _compose(text, file, _Loader)
    if isinstance(node, yaml.ScalarNode):       # read as a file's value is: 0400 refused
        try:
            return _scalar(node, file, loader, "a value")
        except SpaceError as err:               # one line on the command line: no line
            raise SpaceError(err.message, file=err.file, path=err.path) from None
    return None if node is None else loader.construct_document(node)


def _printable(text: str, file: str) -> None:
    """Refuse the characters YAML does not allow (control characters), with their line."""
    bad = yaml.reader.Reader.NON_PRINTABLE.search(text)
    if bad:
        raise SpaceError(f"character U+{ord(bad.group()):04X} is not allowed in YAML (a control "
                         "character, not text)", file=file,
                         line=text.count("\n", 0, bad.start()) + 1)


def _convert(node: yaml.Node, path: str, lines: dict[str, int], file: str,
             loader: yaml.SafeLoader) -> Any:
    lines[path] = node.start_mark.line + 1
    node = getattr(node, "target", node)
    if isinstance(node, yaml.MappingNode):
        _plain(node, file)
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if getattr(key_node, "target", key_node).tag == _MERGE:
                for source in _merge_sources(value_node, file):
                    for key, value in _convert(source, path, lines, file, loader).items():
                        merged.setdefault(key, value)
                lines[path] = node.start_mark.line + 1
                continue
            key = str(_scalar(key_node, file, loader, "a key"))
            child = f"{path}.{key}" if path else key
            if key in out:
                raise SpaceError(f"duplicate key {key!r} (first on line {lines[child]})",
                                 file=file, line=key_node.start_mark.line + 1, path=child)
            out[key] = _convert(value_node, child, lines, file, loader)
            lines[child] = key_node.start_mark.line + 1
        return {**{k: v for k, v in merged.items() if k not in out}, **out}
    if isinstance(node, yaml.SequenceNode):
        _plain(node, file)
        return [_convert(item, f"{path}[{i}]", lines, file, loader)
                for i, item in enumerate(node.value)]
    return _scalar(node, file, loader, "a value", path)


def _merge_sources(value: yaml.Node, file: str) -> list[yaml.MappingNode]:
    """What ``<<:`` merges: a mapping or a list of them, earlier ones taking precedence."""
    value = getattr(value, "target", value)
    items = value.value if isinstance(value, yaml.SequenceNode) else [value]
    sources = [getattr(item, "target", item) for item in items]
    for item, source in zip(items, sources, strict=True):
        if not isinstance(source, yaml.MappingNode):
            raise SpaceError("a merge key (<<) takes a mapping or a list of mappings, such as "
                             "<<: *common", file=file, line=item.start_mark.line + 1)
    return sources


def _plain(node: yaml.Node, file: str) -> None:
    if node.tag not in _PLAIN_COLLECTIONS:
        raise SpaceError(f"the tag {node.tag} is not allowed here; write a plain mapping or "
                         "list", file=file, line=node.start_mark.line + 1)


def _scalar(node: yaml.Node, file: str, loader: yaml.SafeLoader, what: str,
            path: str = "") -> Any:
    node = getattr(node, "target", node)
    if not isinstance(node, yaml.ScalarNode):
        raise SpaceError(f"{what} here must be a plain value, not a "
                         f"{'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}",
                         file=file, line=node.start_mark.line + 1)
    if node.tag == "tag:yaml.org,2002:int" and _OCTAL.fullmatch(node.value):
        # YAML 1.1 reads it as octal, which no one writing 0400 or 0010 means
        sign = "-" if node.value.startswith("-") else ""
        digits = node.value.lstrip("+-").replace("_", "").lstrip("0") or "0"
        raise SpaceError(f"{node.value} has a leading zero, which YAML reads as an octal "
                         f"number ({sign}{int(digits, 8)}); allowed: {sign}{digits} without "
                         "it, or quotes where text is meant", file=file,
                         line=node.start_mark.line + 1, path=path)
    try:
        return loader.construct_object(node, deep=True)
    except (ValueError, OverflowError) as err:        # a 5000-digit integer, a 13th month
        reason = str(err).split(":")[0]
        raise SpaceError(f"cannot read {node.value[:40]!r}: {reason}", file=file,
                         line=node.start_mark.line + 1) from None
