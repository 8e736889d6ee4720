"""One error root for everything sweeper raises on purpose.

The CLI prints a ``SweeperError`` as one line and exits with status 2, or with its
``exit_status`` where the world failed rather than the input (:class:`WriteError`,
:class:`StorageError`: 1); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import linecache
import os
import traceback
from collections.abc import Callable, Sequence

#: Set (to ``1``) by ``sweeper --debug``, in the environment its worker processes inherit:
#: a failed trial prints its traceback to stderr besides recording its reason.
DEBUG_ENV = "SWEEPER_DEBUG"


def users_code(filename: str) -> bool:
    """Whether a frame of file ``filename`` runs the user's own code: not Python's, an
    installed package's or sweeper's, nor code without a file (``<frozen importlib>``)."""
    return not filename.startswith("<") and \
        not os.path.realpath(filename).startswith(_not_users())


@functools.cache
def _not_users() -> tuple[str, ...]:
    """The folders of Python, the installed packages and sweeper itself."""
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(p) + os.sep for p in (
        paths["stdlib"], paths["purelib"], paths["platlib"], os.path.dirname(__file__)))


def user_line(err: BaseException) -> str | None:
    """``kernels.py:12: x = tl.lod(x_ptr + offsets)``: the innermost line of ``err``'s
    traceback in the user's own code (:func:`users_code`), its trailing comment left out:
    where the interpreter ran the kernel's body, or where importing the user's module
    failed; ``None`` where there is none."""
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        if not users_code(frame.filename) or not frame.line:
            continue
        return f"{os.path.basename(frame.filename)}:{frame.lineno}: " \
            f"{statement(linecache.getlines(frame.filename), frame.lineno or 0, frame.line)}"
    return None


#: The most characters of a statement a reason quotes (:func:`statement`).
STATEMENT_MAX = 160
_OPENS, _CLOSES = tuple("([{"), tuple(")]}")


def statement(lines: Sequence[str], lineno: int, line: str = "") -> str:
    """The whole logical statement of source ``lines`` that line ``lineno`` (from 1) is
    part of, on one line: a call spread over several lines quoted whole, each line
    stripped, joined by a space (none after an opening bracket or before a closing one),
    comments left out (:func:`without_comment`), at most :data:`STATEMENT_MAX` characters
    (a longer one cut, ending in ``…``).  Where the statement cannot be told (the source
    does not read as Python up to it), ``line`` (else the line ``lineno``) alone."""
    import io
    import tokenize

    alone = line or (lines[lineno - 1] if 0 < lineno <= len(lines) else "")
    extent: tuple[int, int] | None = None
    comments: dict[int, int] = {}                  # line -> where its comment starts
    first: int | None = None
    skipped = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENCODING)
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(
                text if text.endswith("\n") else text + "\n" for text in lines)).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            if first is None and token.type in skipped:
                continue
            first = token.start[0] if first is None else first
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if first <= lineno <= token.start[0]:
                    extent = (first, token.start[0])
                if first >= lineno:
                    break
                first = None
    except (tokenize.TokenError, SyntaxError):
        pass
    if extent is None or extent[0] == extent[1] or not 0 < extent[0] <= len(lines):
        return _capped(without_comment(alone))
    parts: list[str] = []
    for number in range(extent[0], min(extent[1], len(lines)) + 1):
        text = lines[number - 1].rstrip("\r\n")
        text = text[:comments[number]] if number in comments else text
        text = text.strip().removesuffix("\\").strip()
        if not text:
            continue
        if parts and not parts[-1].endswith(_OPENS) and not text.startswith(_CLOSES):
            parts.append(" ")
        parts.append(text)
    return _capped("".join(parts))


def _capped(text: str) -> str:
    return text if len(text) <= STATEMENT_MAX else text[:STATEMENT_MAX - 1] + "…"


def without_comment(line: str) -> str:
    """Source ``line`` stripped, without a trailing ``# comment`` (a ``#`` inside a string
    literal is code and stays): a reason quotes what ran, not what its author noted.
    The line is read as Python reads it (:mod:`tokenize`), up to where it no longer
    reads alone (a bracket or string left open for the next line)."""
    import io
    import tokenize

    text = line.strip()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.ERRORTOKEN:      # a string left open: unsure
                break
            if token.type == tokenize.COMMENT:
                return text[:token.start[1]].rstrip() or text
    except (tokenize.TokenError, SyntaxError):
        pass
    return text


def one_line(text: str) -> str:
    """``text``'s lines, stripped, joined by spaces: a trial's reason is one line, so a
    terminal that shows a reason's first line keeps all of it."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def raised(what: str, err: BaseException) -> str:
    """``the reference raised ValueError: bad shape (at mymod.py:36: ...)``: what the
    user's code ``what`` raised, on one line as a trial's reason is (:func:`one_line`),
    the user's line included."""
    line = user_line(err)
    return (f"{what} raised {type(err).__name__}: {one_line(str(err))}"
            + (f" (at {line})" if line else ""))


def defined_at(fn: Callable[..., object]) -> str | None:
    """``kernels.py:12``: where function ``fn`` (a method, a lambda, a wrapped function)
    is defined; ``None`` where it has no Python code (a builtin, a C extension's)."""
    import inspect

    code = getattr(inspect.unwrap(getattr(fn, "__func__", fn)), "__code__", None)
    return None if code is None else \
        f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def user_stacklevel(importer_of: str | None = None) -> int:
    """The ``stacklevel`` that attributes a warning, warned where this is called, to the
    first frame outside sweeper: the user's line (a notebook's cell, a script's call to
    :func:`sweeper.run` or a tuned kernel) rather than sweeper's own, however deep the
    call, as Python 3.12's ``skip_file_prefixes`` does.  ``importer_of``: a module's file
    whose import warns, passed over too (with the import machinery), so the warning is at
    the line that imports it."""
    import sys
    from types import FrameType

    ours = os.path.realpath(os.path.dirname(__file__)) + os.sep
    skipped = os.path.realpath(importer_of) if importer_of is not None else None

    def machinery(name: str) -> bool:       # what warnings.warn passes over uncounted
        return "importlib" in name and "_bootstrap" in name

    def passed_over(name: str) -> bool:
        return os.path.realpath(name).startswith(ours) or (skipped is not None and (
            os.path.realpath(name) == skipped or machinery(name)))

    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and passed_over(frame.f_code.co_filename):
        level += not machinery(frame.f_code.co_filename)
        frame = frame.f_back
    return level


class SweeperError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message."""


class SpaceError(SweeperError):
    """A space file is wrong at a known place: ``file:line: key.path: message``."""

    def __init__(self, message: str, *, file: str = "<space>", line: int | None = None,
                 path: str = "") -> None:
        self.file, self.line, self.path, self.message = file, line, path, message
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {path + ': ' if path else ''}{message}")


class DataError(SweeperError):
    """A data file from outside (a replay table) is wrong at a known place:
    ``file:line: message``; the CLI prints it as it is, like a :class:`SpaceError`."""

    def __init__(self, message: str, *, file: str, line: int | None = None) -> None:
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: {message}" if line is not None else
                         f"{file}: {message}")


class TuningFileError(SweeperError):
    """A tuning file (what ``sweeper export`` writes) holds something no launch may take:
    ``file: entries[N] (what it is for): key is VALUE; what is allowed``, or ``file: ...``
    where the file as a whole is wrong (``entry`` is then ``None``), ``file:line: ...``
    where its JSON breaks at a line.  The whole file is refused, never the good entries
    served and the bad ones skipped."""

    def __init__(self, message: str, *, file: str, entry: int | None = None,
                 name: str = "", line: int | None = None) -> None:
        self.file, self.entry, self.message = file, entry, message
        where = file if line is None else f"{file}:{line}"
        where = where if entry is None else f"{where}: entries[{entry}]{name}"
        super().__init__(f"{where}: {message}")


class ExpressionError(SweeperError):
    """An expression in a space file cannot be parsed or evaluated."""


class KeywordError(SweeperError, TypeError):
    """An API function was given a keyword it does not take, or not given an argument it
    needs: a :class:`TypeError`, as Python's own is, whose message lists the keywords it
    takes and the likely one, or says what each argument left out is."""


class NoDeviceError(SweeperError):
    """The requested device is not present on this machine."""


class StudyError(SweeperError):
    """A study on disk is missing, unreadable or does not match the space."""


class SourceEdited(StudyError):
    """The kernel's source was edited while a sweep ran: the sweep stopped before it
    recorded a trial that may have been compiled from the edited text, every trial
    measured before kept.  The CLI prints it as one line and exits 2, as it refuses to
    resume a study whose kernel's source changed."""


class WriteError(SweeperError):
    """A file could not be written (disk full, I/O error, read-only place); what was there
    before is left as it was.  Not the user's input: ``sweeper`` exits with status 1."""

    exit_status = 1

    def __init__(self, message: str, cause: OSError | None = None) -> None:
        super().__init__(message)
        #: the failed write's own error, where one was (what a caller that wrote on
        #: another's behalf words again: :meth:`~sweeper.store.StudyStore.copy_in`)
        self.cause = cause


class StorageError(SweeperError):
    """The study's database failed: it cannot be reached, stopped answering, or a statement
    ran past its time limit.  Not the user's input: ``sweeper`` exits with status 1; every
    record appended before is kept there, and the same command resumes once it is back."""

    exit_status = 1

    def __init__(self, message: str, *, failure: str | None = None) -> None:
        super().__init__(message)
        #: what failed (the database, masked, and why) without what it means for a run:
        #: what a command with another promise (copy-study: all or nothing) words again
        self.failure = message if failure is None else failure


class StudyWarning(UserWarning):
    """Something in a study on disk was set aside (a bad journal line, an unreadable
    study); the command goes on without it.  The CLI prints it as one line."""


class CacheWarning(StudyWarning):
    """A cache folder could not be used (not this user's alone, read-only, not a folder):
    the work goes on without caching.  The CLI prints it as one line."""


class BaselineWarning(StudyWarning):
    """A kernel's torch baseline raised: the problem has no "% of torch", and its configs
    are measured all the same (the baseline is a comparison, not part of the sweep).  The
    CLI prints it as one line."""


class TuningWarning(UserWarning):
    """A tuned config was found, but not for this exact case: tuned on another GPU of the
    same architecture, or at a problem far from the one asked for."""


class StaleTuningWarning(TuningWarning):
    """A tuned config was measured on an earlier source of its kernel (the tuning entry's
    ``source_hash`` is not the kernel's hash now), or on a source that cannot be found
    to compare (its module gone from the import path): it is used all the same, once
    warned."""


class ReferenceFailed(Exception):
    """A kernel's torch reference raised while a trial was checked: the trial fails as
    crashed with the reference named as the cause (``the reference raised ...``), not
    the launch, which ran."""


class VerifyFailed(Exception):
    """A kernel's ``verify=`` (a space's ``verify:``) raised while a trial was checked, or
    returned neither ``None``, ``True``, ``False`` nor a reason: a bug in the user's
    comparison is no verdict on the kernel, so the trial fails as crashed with this reason
    (the function, what it raised or returned, and where), not as a wrong answer."""


class ConstantMemoryFailed(Exception):
    """A CUDA C kernel's ``constant_memory`` could not be set for a config: the function
    giving a symbol's data raised or gave no array, or the compiled module declares no
    such symbol, or the data is larger than the symbol.  Nothing is launched: the
    config's trial fails as crashed with this reason, and the sweep goes on."""


class RefusalFailed(Exception):
    """Asking whether a config may run failed in the user's own code: the kernel's
    ``refuse=`` raised or returned neither ``None`` nor a reason, or its autotuner's
    ``prune_configs_by`` raised, or the launch asked for the arguments it prunes with
    failed before it reached the autotuned function.  A bug in a rule is no refusal: the
    config's trial fails as crashed with this reason (the function, what it raised or
    returned, and where), and the sweep goes on; where something only looks ahead (the
    coordinator deciding what to compile), it means "let the trial find out"."""


class ContextLost(Exception):
    """A trial left the CUDA context unusable (an illegal address, a device-side assert):
    nothing more can run in this process.  The trial is already recorded as crashed;
    the engine goes on with worker processes, resuming the study."""

    def __init__(self, number: int, reason: str) -> None:
        self.number, self.reason = number, reason
        super().__init__(f"trial #{number} left the CUDA context unusable: {reason}")


class TrialHung(Exception):
    """A trial ran past ``measure.timeout``; it is recorded as ``timeout``."""

    def __init__(self, number: int) -> None:
        self.number = number
        super().__init__(f"trial #{number} ran past measure.timeout")
