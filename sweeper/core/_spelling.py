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

Imports nothing of sweeper's: any layer may name an option."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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


__all__ = ["given", "keywords", "option"]
