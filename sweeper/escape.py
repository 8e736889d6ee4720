"""Text from data (labels, GPU and study names, reasons), written into an output so that it
can only ever be read as the text it is.

A study's strings come from outside: a replay table's header names the GPU, a space file
names the labels, and ``study.json`` can be edited by hand.  Each output has its own way
for text to act as something else, and its own escape here:

- a terminal, a name (an Optuna study's) or a file's comment line: a control character
  (ESC rewrites the screen, a newline starts a line of its own): :func:`printable`;
- a spreadsheet opening a CSV file: a cell starting with ``= + - @``, a tab or a CR is a
  formula (CSV injection): :func:`csv_cell` prefixes ``'`` as OWASP recommends, and
  :func:`csv_uncell` takes it off again, so a replay table reads back the labels it
  was written with;
- Markdown: a line break ends a table row, ``|`` a cell, ``[..](..)`` makes a link (an
  image fetched when the report is viewed), ``<`` starts HTML: :func:`md_text` puts them
  on one line and escapes them with a backslash.  Emphasis and code spans are left: they
  change how text looks, not what the report is, and sweeper's own sentences use them.
- HTML: report.html writes its markup's text through :func:`html.escape`, and its data
  as a JSON block inside ``<script>``, where ``</script>`` would end the block and
  ``<!--`` change how it is parsed: :func:`script_json` writes ``<``, ``>`` and ``&`` as
  JSON's ``\\u`` escapes (its script then puts strings into the page only as text).

Anywhere, text too long for its line (a value quoted in an error, a reason on the
terminal) is cut short by :func:`cut`, ending in a mark that says so.

Python source is not here: a generated module gets every string from data through
``repr`` or a JSON literal, never inside quotes of its own (:mod:`sweeper.export_triton`).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: What a spreadsheet takes as the start of a formula (OWASP, "CSV Injection"), and ``'``,
#: the escape itself, so that a cell that starts with one reads back unchanged.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
#: A plain number is never a formula, whatever its sign: ``-1`` stays ``-1``.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
#: What Markdown makes more than text inside a paragraph or a table cell (the backslash:
#: so that an escape in the data cannot take ours away).
_MARKDOWN = re.compile(r"([\\|\[\]<])")
_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")


def printable(text: str) -> str:
    """``text`` with each character that is not printable (control characters, line and
    paragraph breaks, bidi overrides; a plain space stays) written as its Python escape,
    ``\\x1b`` for ESC: one line that shows what it holds and cannot act on a terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def cut(text: str, limit: int, mark: str = "...") -> str:
    """``text`` if it has at most ``limit`` characters, else its start and ``mark`` in
    ``limit`` characters: one value from data cannot flood a message or a line."""
    return text if len(text) <= limit else text[:limit - len(mark)] + mark


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: ``'`` in front of one that would start a
    formula (or starts with ``'``); a plain number is left as it is."""
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_uncell(text: str) -> str:
    """The text :func:`csv_cell` was given: ``csv_uncell(csv_cell(x)) == x`` for every
    ``x``, since every cell it wrote starting with ``'`` got that ``'`` from it."""
    return text[1:] if text.startswith("'") else text


def md_text(text: str) -> str:
    """``text`` on one line (each run of line breaks a space; then :func:`printable`) with
    a backslash before each of ``\\ | [ ] <``: a paragraph or a table cell that shows
    it, and is nothing else."""
    return _MARKDOWN.sub(r"\\\1", printable(_BREAKS.sub(" ", text)))


def script_json(data: Any) -> str:
    """``data`` as compact JSON that cannot end or open an element inside ``<script>``:
    ``<``, ``>`` and ``&`` (and the line separators U+2028, U+2029) written as ``\\u``
    escapes, which JSON reads back as themselves.  NaN is refused: JSON has none."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


__all__ = ["FORMULA_START", "csv_cell", "csv_uncell", "cut", "md_text", "printable",
           "script_json"]
