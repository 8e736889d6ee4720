"""What a call of the Python API raises: a :class:`~sweeper.errors.SweeperError` with the
traceback of the call alone.

A sweeper error is made where the check is, often deep below the call (a study's resume
check, the space parser, a writer, a kernel declaration's checks, a tuning file's
lookup), and its message says all a user can act on, as the command's one line does.  In
a notebook the frames between (sweeper's own, 5 to 15 of them) would bury that line under
code the user never wrote; so the error leaves the API with its traceback cut at the
call: the caller's lines and the call's one frame here.  Every public entry point does
so (``sweeper.run``, ``load_study`` and a ``Study``'s calls, ``sweeper.kernel`` and the
decorator it returns, ``sweeper.cuda``, ``sweeper.tuned``, ``sweeper.tuned_kernel``, the
decorator it returns and the tuned kernel's calls), which is why this sits in the core,
below the kernels and the tuning lookup.  What the user's own code raised on the way
(importing their kernel's module, their sampler's factory) stays chained to it, from
their first line on.  ``debug=True`` (:func:`sweeper.run`'s, as ``sweeper --debug``
shows the traceback) or ``SWEEPER_DEBUG=1`` in the environment (for every call) keeps the
whole traceback, for ``%debug`` and bug reports.  Any other exception (a bug in sweeper,
the user's kernel raising where sweeper does not record it) is not sweeper's message, and
keeps its whole traceback; a call that raises another exception as its own message
(``sweeper.run``'s ``KeyboardInterrupt`` after a second Ctrl-C, saying what was kept)
names it (:func:`cutting`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from contextvars import ContextVar
from types import FrameType, TracebackType
from typing import Any, TypeVar

from sweeper.errors import DEBUG_ENV, SweeperError, users_code

F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=BaseException)

#: True within an API call: an API call made inside one (``sweeper.run`` returning its
#: ``Study``, a kernel module's ``sweeper.kernel`` imported by the sweep) leaves the
#: traceback to the outer call, which knows whether to keep it.
_INSIDE: ContextVar[bool] = ContextVar("sweeper_api_call", default=False)


def cutting(*kinds: type[BaseException]) -> Callable[[F], F]:
    """Decorate an API function, method or property getter: an exception of ``kinds``
    (the call's own messages) it raises leaves it with the traceback of the call alone
    (:func:`cut`), unless the call is given ``debug=True`` or the environment sets
    ``SWEEPER_DEBUG``."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            if _INSIDE.get():
                return func(*args, **kwargs)
            token = _INSIDE.set(True)
            try:
                return func(*args, **kwargs)
            except kinds as err:
                if kwargs.get("debug") is True or os.environ.get(DEBUG_ENV):
                    raise
                cut(err)
                raise err  # sweeper's own frames left out: debug=True or SWEEPER_DEBUG=1 keep them
            finally:
                _INSIDE.reset(token)

        return call  # type: ignore[return-value]

    return decorate


#: The decorator of every public entry point: a :class:`SweeperError` leaves it cut.
cut_at_call = cutting(SweeperError)
#: The code of the function :func:`cutting` wraps an API function in (one for all).
_WRAPPER = cut_at_call(lambda: None).__code__


def cut_unless_kept(err: BaseException) -> None:
    """Cut ``err`` (:func:`cut`) as :func:`cut_at_call` lets an error leave, where a
    public call's own code catches it to raise it again (a tuned kernel's call, whose hot
    path takes no wrapper); left whole within another API call or where
    ``SWEEPER_DEBUG`` is set."""
    if not (_INSIDE.get() or os.environ.get(DEBUG_ENV)):
        cut(err)


def callers_frame(frame: FrameType) -> FrameType:
    """The frame of the code that called an API function, ``frame`` being its caller as
    the function sees it (``sys._getframe(1)``): past :func:`cutting`'s wrapper and
    :func:`~sweeper.core._spelling.entry`'s (what ``sweeper.cuda`` reads its caller's
    folder from)."""
    from sweeper.core._spelling import ENTRY_WRAPPER

    while frame.f_code in (_WRAPPER, ENTRY_WRAPPER) and frame.f_back is not None:
        frame = frame.f_back
    return frame


def cut(err: E) -> E:
    """``err`` without its traceback (raising it again gives it the raising frame and the
    caller's), and without the exception it was raised from or while handling, unless
    that one ran the user's own code: then that one stays, its traceback starting at the
    user's first frame (:func:`~sweeper.errors.users_code`)."""
    chained = err.__cause__ if err.__cause__ is not None else \
        None if err.__suppress_context__ else err.__context__
    users = None if chained is None else _from_users_frame(chained.__traceback__)
    if chained is not None and users is not None:
        chained.__traceback__ = users
    else:
        err.__cause__ = None
        err.__suppress_context__ = True
    return err.with_traceback(None)


def _from_users_frame(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from its first frame of the user's own code on; None where it has none."""
    while tb is not None and not users_code(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


__all__ = ["callers_frame", "cut", "cut_at_call", "cut_unless_kept", "cutting"]
