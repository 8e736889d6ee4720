"""Sizes, durations, dtype names and groups of zipped axes as a space file spells them."""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any

from sweeper.core._expr import MAX_DIGITS, UNITS, Expr, quoted
from sweeper.escape import cut

#: dtype name -> bytes per element.  The names are torch's.
DTYPES: dict[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
    "float8_e4m3fn": 1,
}
#: dtypes only a kernel that declares them may take (``Kernel.dtypes``): 8-bit floats
#: need scaled inputs and an output of another dtype, which a generic kernel has not.
DECLARED_ONLY = ("float8_e4m3fn",)
#: Shorter or other names for the dtypes (keys lower case), taken wherever a dtype is
#: named (a space file, ``sweeper tuned``, :func:`sweeper.tuned`); a torch dtype is
#: matched by its name too (``torch.float32`` -> ``float32``).
DTYPE_ALIASES: dict[str, str] = {
    "fp64": "float64", "f64": "float64", "double": "float64",
    "fp32": "float32", "f32": "float32", "float": "float32",
    "fp16": "float16", "f16": "float16", "half": "float16",
    "bf16": "bfloat16", "fp8": "float8_e4m3fn",
    "i64": "int64", "long": "int64", "i32": "int32", "int": "int32",
    "i16": "int16", "short": "int16", "i8": "int8", "u8": "uint8",
}


#: The most trials a budget may name: a space file's ``budget.trials``, ``--trials`` and
#: ``trials=`` alike (a billion trials of 1 ms each are 11 days).
MAX_TRIALS = 1_000_000_000

def zip_members(value: Any) -> list[Any] | None:
    """The axes a ``params`` entry zips where it is a group of zipped axes
    (``{zip: {AXIS: [...], ...}}``); ``None`` where it is anything else (an axis)."""
    if isinstance(value, dict) and isinstance(value.get("zip"), dict):
        return list(value["zip"])
    return None


def canonical_dtype(text: str) -> str | None:
    """The torch name of a dtype named ``text`` (a name, an alias, ``torch.NAME``, any
    case); ``None`` for no dtype."""
    text = text.strip().removeprefix("torch.")
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    return name if name in DTYPES else None


def closest(word: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` closest to ``word`` where one is close (a misspelling, a
    suffix left out, another case: ``TPE`` for ``tpe``, ``l2`` for ``l2_bytes``), else
    ``None``.  The same word in another case comes first, then a name that ``word``
    begins (``copy-smal`` is ``copy-small-interpret``, not ``copy-oat``), the nearest of
    several."""
    known = list(known)
    same = [name for name in known if name.lower() == word.lower()]
    if len(same) == 1:
        return same[0]
    begun = [name for name in known
             if len(word) >= 2 and name.lower().startswith(word.lower())]
    close = difflib.get_close_matches(word, begun or known, n=1, cutoff=0 if begun else 0.6)
    return close[0] if close else None


#: What Kernel Tuner names the way sweeper names otherwise, where spelling alone would
#: not lead there (``block_size_x`` reads as close to a ``tile_size_x``): its name ->
#: sweeper's.
KERNEL_TUNER_NAMES = {"block_size_x": "block"}


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'float32'?"`` where ``word`` is close to one of ``known``
    (:func:`closest`), or is Kernel Tuner's name for one (:data:`KERNEL_TUNER_NAMES`),
    else ``""``: a hint to append to an error that lists what is allowed."""
    known = list(known)
    ours = KERNEL_TUNER_NAMES.get(word)
    if ours in known:
        return f"; did you mean {ours!r}? (Kernel Tuner's {word} is sweeper's {ours})"
    name = closest(word, known)
    return f"; did you mean {name!r}?" if name is not None else ""


def defined_as(expr: Expr, word: str, known: Sequence[str], kept: Sequence[str]
               ) -> str | None:
    """Where ``word``, a name ``expr`` reads that ``known`` lacks, is one a CUDA C kernel's
    compile defines under Kernel Tuner's name (:data:`KERNEL_TUNER_NAMES`:
    ``-Dblock_size_x``, the block) while expressions read it as sweeper's axis: what to
    write instead, ``expr`` with the name replaced, else ``None``.  A Kernel Tuner user
    reads ``block_size_x`` in the source and ``block_size_y`` among the known names, so
    "unknown name" alone would deny what the compile does define; ``kept``, the Kernel
    Tuner names an expression reads as they are (the block's extents in y and z), are
    said where ``known`` has them."""
    ours = KERNEL_TUNER_NAMES.get(word)
    if ours is None or ours not in known:
        return None
    same = [name for name in kept if name in known]
    also = f"; {' and '.join(same)} keep Kernel Tuner's names" if same else ""
    written = re.sub(rf"\b{word}\b", ours, expr.text)
    return (f"{quoted(expr.text)} reads {word}, which each compile defines for the "
            f"kernel's source (blockDim.x) but an expression reads as {ours}, the axis it "
            f"is swept as{also}: write {quoted(written)}")


def unknown_name(expr: Expr, known: Sequence[str], *, kept: Sequence[str] = ()) -> str | None:
    """``"unknown name 'VECTOR' in 'block * VECTOR'; known: block, VEC; did you mean
    'VEC'?"`` for the first name ``expr`` reads that is not in ``known``, else ``None``:
    what every refusal of such an expression says, before its location.  ``kept``: the
    Kernel Tuner names a CUDA C launch's expressions read as they are (its
    :attr:`~sweeper.core.LaunchShape.extent_names`); given, its compile defines Kernel
    Tuner's names, and one read under sweeper's name is said as such (:func:`defined_as`)."""
    unknown = sorted(expr.names - set(known))
    if not unknown:
        return None
    defined = defined_as(expr, unknown[0], known, kept) if kept else None
    if defined is not None:
        return defined
    return (f"unknown name {cut(repr(unknown[0]), 60)} in {quoted(expr.text)}; known: "
            f"{', '.join(known)}{did_you_mean(unknown[0], known)}")

_SIZE = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$", re.ASCII)
#: A number and a word that reads as a unit of bytes, known or not (16KB, 1gb, 64k).
_SIZE_LIKE = re.compile(r"\s*\d+\s*(?:[KMGTPE]i?B?|B|bytes?)\s*", re.ASCII | re.IGNORECASE)
#: A duration: a bare number (seconds), or numbers each with a unit, the units from the
#: largest down, each once (``90s``, ``1h30m``, ``2m30s``, ``1h 5m 30s``).  No part can be
#: read in two ways (each number ends at its unit), so matching costs time in proportion
#: to the text's length.
_DURATION = re.compile(r"\s*(?:\d+(?:\.\d+)?|(?:\d+(?:\.\d+)?\s*(?:ms|h|m|s)\s*)+)\s*",
                       re.ASCII)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|h|m|s)?", re.ASCII)
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, None: 1.0}
#: The longest duration any setting takes (1000 h): beyond it a timer cannot be armed.
MAX_DURATION_S = 1000 * 3600.0


def parse_size(text: str) -> int:
    """``"64MiB"`` -> 67108864.  Raises ``ValueError`` with what is allowed."""
    match = _SIZE.match(text)
    if not match or (match.group(2) not in UNITS and match.group(2) != ""):
        raise ValueError(f"{text[:40]!r} is not a size; allowed: an integer with a unit of "
                         f"{', '.join(UNITS)} (e.g. 64MiB)")
    if len(match.group(1)) > MAX_DIGITS:
        raise ValueError(f"{text[:40]!r} is too large; sizes have at most {MAX_DIGITS} digits")
    return int(match.group(1)) * UNITS.get(match.group(2) or "B", 1)


def meant_as_size(text: str) -> bool:
    """Whether ``text`` is a number with a word that reads as a unit of bytes (``16KB``,
    ``1gb``, ``64k``): where :func:`parse_size` refuses such a text, its error, which
    lists the units, says what is wrong; an expression's reading would only say that
    ``16KB`` is an invalid decimal literal."""
    return _SIZE_LIKE.fullmatch(text) is not None


def format_size(nbytes: int) -> str:
    """The largest unit that divides ``nbytes`` exactly: 1073741824 -> ``"1GiB"``."""
    for unit, scale in reversed(UNITS.items()):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def parse_duration(text: str | float, shown: str | None = None) -> float:
    """``"10m"`` -> 600.0 seconds, ``"1h30m"`` -> 5400.0; a bare number is seconds.  The
    one reader of every duration (``--time``, a space's ``budget.time`` and ``measure``
    settings, the API's ``time=``), so each accepts what the others do.  A compound
    duration names its units from the largest down, each once: ``30m1h`` or ``1m1m`` is
    refused rather than guessed at.  Raises ``ValueError`` for anything but a finite,
    positive duration of at most :data:`MAX_DURATION_S`.

    The whole text is read, however long (``3.000…0m`` is 180 s, its unit at the end);
    only the text an error shows is cut, to 40 characters, so that a hostile value
    cannot flood the message.  An error quotes ``shown`` where given (the value as its
    caller gave it: the API's number ``-1``), else the text (``'-1'``)."""
    shown = shown if shown is not None else repr(str(text)[:40])
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text) if abs(text) <= MAX_DURATION_S else math.inf
    else:
        parts = [(float(m.group(1)), m.group(2)) for m in _DURATION_PART.finditer(str(text))] \
            if _DURATION.fullmatch(str(text)) else []
        order = [list(_SECONDS).index(unit) for _, unit in parts]
        if not parts or order != sorted(set(order)):
            raise ValueError(f"{shown} is not a duration; allowed: a positive number, "
                             "bare (seconds) or with h, m, s or ms, or several from the "
                             "largest unit down (e.g. 90, 10m, 1h30m)")
        seconds = sum(number * _SECONDS[unit] for number, unit in parts)
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_DURATION_S):
        raise ValueError(f"{shown} is not a positive duration of at most "
                         f"{MAX_DURATION_S / 3600:.0f}h")
    return seconds


def whole(value: object) -> int | None:
    """``value`` as a Python ``int`` where it is an integer: an ``int`` or any other
    :class:`numbers.Integral` (numpy's ``int64``, which ``np.prod(shape)`` or a size read
    from an array gives), so that a caller's integer is taken whatever library made it;
    ``None`` for anything else, a ``bool`` included (``True`` is no size)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 config"``, ``"2 configs"``: ``n`` and the noun in its number (``plural``
    where adding an ``s`` does not make it)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"

