"""How a message names an option: as the caller gave it.

One check serves two front doors: the ``sweeper`` command, where a study's folder is
``--studies-dir``, and the Python API, where it is ``studies_dir=``.  A message must name
what its reader typed; ``--replace`` means nothing in a notebook.  The message is made
where the check is, often far below the front door (the space parser, the Optuna
writer, a study's resume check), so the front door does not pass the spelling down
every call on the way: the API's entry points run inside :func:`keywords`, and a check
names its option by the API's keyword through :func:`option` and :func:`given`, which
spell it as the command's flag outside that (the default: the command, its workers,
tools).  A context variable, so concurrent calls (threads, asyncio tasks) each keep
their own.

Imports nothing of sweeper's above the core: any layer may name an option."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from sweeper.core._units import did_you_mean
from sweeper.errors import KeywordError

F = TypeVar("F", bound=Callable[..., Any])

#: True inside :func:`keywords`: options are named as the Python API's keywords.
_KEYWORDS: ContextVar[bool] = ContextVar("sweeper_option_keywords", default=False)
#: The command's flag where it is not the keyword with ``-`` for ``_``.
_FLAGS = {"target": "--to", "params": "-p"}


def option(keyword: str) -> str:
    """The option whose API keyword is ``keyword`` as the caller names it:
    ``studies_dir`` from the API, ``--studies-dir`` from the command."""
    if _KEYWORDS.get():
        return keyword
    return _FLAGS.get(keyword, "--" + keyword.replace("_", "-"))


def given(keyword: str, value: object = True) -> str:
    """The option given ``value``, as the caller would write it: ``replace=True`` or
    ``--replace``, ``priors=False`` or ``--no-priors``, ``study='NEW'`` or
    ``--study NEW``."""
    if _KEYWORDS.get():
        return f"{keyword}={value!r}"
    if value is True:
        return option(keyword)
    if value is False:
        return "--no-" + keyword.replace("_", "-")
    return f"{option(keyword)} {value}"


@contextmanager
def keywords() -> Iterator[None]:
    """Within it (a ``with`` block, or as a decorator of an API function), messages name
    options as the Python API's keywords."""
    token = _KEYWORDS.set(True)
    try:
        yield
    finally:
        _KEYWORDS.reset(token)


def entry(*, spelled: bool = True, needs: Mapping[str, str] | None = None
          ) -> Callable[[F], F]:
    """Decorate an API function: a keyword it does not take is refused as a
    :class:`~sweeper.errors.KeywordError` (a ``TypeError``, as Python's own) that lists
    the keywords it takes and the likely one (``devcie=`` -> ``device``), and so are the
    arguments it needs and was not given, each with what it is (``needs``: one line per
    argument without a default, every one of them, checked as it decorates: Python's own
    "missing 3 required keyword-only arguments" says neither); ``spelled``: it runs
    within :func:`keywords`."""
    said = dict(needs or {})

    def decorate(func: F) -> F:
        parameters = list(inspect.signature(func).parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            raise TypeError(f"{func.__qualname__} takes any keyword: nothing to check")
        takes = [p.name for p in parameters
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
        required = [p.name for p in parameters if p.default is p.empty and p.name != "self"
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if sorted(required) != sorted(said):
            raise TypeError(f"{func.__qualname__}: needs= must say what each argument "
                            f"without a default is: {required}, not {sorted(said)}")
        # as the user calls it: sweeper.run(), Study.export()
        name = func.__qualname__ if "." in func.__qualname__ else f"sweeper.{func.__qualname__}"
        positional = [p.name for p in parameters
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        endless = any(p.kind is p.VAR_POSITIONAL for p in parameters)

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for key in kwargs:
                if key not in takes:
                    raise KeywordError(f"{name}() takes no keyword {key!r}; allowed: "
                                       f"{', '.join(takes)}{did_you_mean(key, takes)}")
            if len(args) > len(positional) and not endless:
                raise KeywordError(_too_many_line(name, positional, len(args), takes))
            lacking = _lacking(parameters, len(args), kwargs)
            if lacking:
                raise KeywordError(_lacking_line(name, lacking, said))
            if not spelled:
                return func(*args, **kwargs)
            with keywords():
                return func(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate


#: The code of the function :func:`entry` wraps an API function in (one for all).
ENTRY_WRAPPER = entry()(lambda: None).__code__


def _lacking(parameters: list[inspect.Parameter], given: int, kwargs: Mapping[str, Any]
             ) -> list[inspect.Parameter]:
    """The arguments without a default that a call of ``given`` positional arguments
    (``self`` counted) and ``kwargs`` leaves out."""
    return [p for i, p in enumerate(parameters)
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            and p.name not in kwargs and not (i < given and p.kind is not p.KEYWORD_ONLY)]


def _too_many_line(name: str, positional: list[str], given: int, takes: list[str]) -> str:
    """``sweeper.run() takes 1 positional argument (space), got 3; give the others by
    keyword: ...``, ``self`` counted in neither."""
    shown = [n for n in positional if n != "self"]
    got = given - (len(positional) - len(shown))
    keywords_ = [t for t in takes if t not in shown]
    return (f"{name}() takes {len(shown)} positional argument{'' if len(shown) == 1 else 's'}"
            f" ({', '.join(shown) or 'none'}), got {got}; give the others by keyword: "
            f"{', '.join(f'{k}=' for k in keywords_)}")


def _lacking_line(name: str, lacking: list[inspect.Parameter], said: Mapping[str, str]
                  ) -> str:
    """``sweeper.kernel() needs outputs= (...) and reference= (...), not given; ...``: a
    keyword-only argument shown as its keyword, a positional one by its name."""
    shown = [f"{p.name}{'=' if p.kind is p.KEYWORD_ONLY else ''} ({said[p.name]})"
             for p in lacking]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    return f"{name}() needs {listed}, not given; help({name}) says more"


__all__ = ["ENTRY_WRAPPER", "entry", "given", "keywords", "option"]
