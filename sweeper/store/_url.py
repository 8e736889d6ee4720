"""A database URL as sweeper takes it and as it shows it.

Taken: :func:`database_url` checks a ``--storage`` URL once, at the edge, before anything
is written or any connection tried, and :func:`with_timeouts` adds the time limits a
connection gets unless the URL (or libpq's environment) sets them: a host that accepts a
connection and never answers, or a statement stuck behind a lock, ends the command with one
line instead of hanging it.  The limits are libpq's own parameters, so a URL sets them as
it sets any other: ``?connect_timeout=30&options=-c%20statement_timeout%3D5min``.

Shown: :func:`mask_url` is the one way every message, header and recorded command shows a
URL, its password (and every other secret libpq takes as a parameter) replaced by ``***``.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from sweeper.errors import SweeperError

if TYPE_CHECKING:
    import sqlalchemy as sa

#: Seconds a connection may take to be accepted and answered (libpq's ``connect_timeout``).
CONNECT_TIMEOUT_S = 10
#: The server's limits on one statement, and on the wait for a lock within it: every
#: statement sweeper sends reads or writes one study's rows and ends in well under a
#: second; a minute means something is wrong (a lock held by a stuck process).
SERVER_TIMEOUTS = {"statement_timeout": "60s", "lock_timeout": "30s"}
#: The parameters libpq takes that hold a secret: masked as a password is.
SECRET_PARAMETERS = ("password", "sslpassword", "oauth_client_secret", "scram_client_key",
                     "scram_server_key")
_SECRET_PARAMETER = re.compile(rf"([?&](?:{'|'.join(SECRET_PARAMETERS)})=)[^&#\s]*")
SHAPE = "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?PARAMETER=VALUE&...]"


def mask_url(url: str) -> str:
    """``url`` as every message shows it: its password, and each secret parameter's
    value, replaced by ``***``.  A URL SQLAlchemy parses is shown as SQLAlchemy renders
    it; any other text (a malformed URL, a command line) by the same rule on its text,
    everything between ``USER:`` and the last ``@`` masked."""
    import sqlalchemy as sa

    try:
        parsed = sa.engine.make_url(url)
    except (ValueError, sa.exc.ArgumentError):
        parsed = None
    if parsed is not None and "@" not in (parsed.host or ""):
        shown = parsed.render_as_string(hide_password=True)
    else:
        head, sep, rest = url.partition("://")
        user_info, at, host = rest.rpartition("@")
        user, colon, _ = user_info.partition(":")
        shown = head + sep + (f"{user}{colon and ':***'}{at}{host}" if at else rest)
    return _SECRET_PARAMETER.sub(r"\1***", shown)


def database_url(url: str) -> sa.URL:
    """``url`` parsed, checked as far as it can be without connecting: a port that is
    a number from 1 to 65535, one ``@`` before the host, only parameters libpq takes,
    and ``host``/``port`` parameters the engine can read.
    Anything else is refused in one line that shows it masked."""
    import sqlalchemy as sa

    def refuse(why: str) -> SweeperError:
        return SweeperError(f"{mask_url(url)}: not a database URL: {why}; allowed: {SHAPE}")

    host_port = url.partition("://")[2].partition("/")[0].rpartition("@")[2]
    if "[" in host_port and "]" not in host_port:
        raise refuse("the [ of its IPv6 host has no ]")
    try:
        parsed = sa.engine.make_url(url)
    except ValueError:           # the port: the only part SQLAlchemy converts
        raise refuse("its port is not a number (an IPv6 host goes in [brackets])") from None
    except sa.exc.ArgumentError:
        raise refuse("it does not parse as one") from None
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise refuse(f"its port {parsed.port} is not from 1 to 65535")
    if "@" in (parsed.host or "") or "@" in (parsed.username or ""):
        raise refuse("an @ after USER:PASSWORD@ (write an @ in a password as %40)")
    if re.search(r"\s", parsed.host or ""):
        raise refuse("a space in its host")
    from psycopg import pq

    known = {d.keyword.decode() for d in pq.Conninfo.get_defaults()}   # the installed libpq's
    unknown = sorted(set(parsed.query) - known)
    if unknown:
        raise refuse(f"libpq takes no parameter {unknown[0]!r} (it takes "
                     f"{', '.join(sorted(known))})")
    from sqlalchemy.dialects.postgresql.psycopg import dialect

    try:     # its ?host=/run/pg&port=5432 parameters, as the engine reads them
        dialect().create_connect_args(parsed)
    except sa.exc.ArgumentError as err:
        raise refuse(f"its parameters do not read as hosts and ports ({err})") from None
    return parsed


def with_timeouts(url: sa.URL) -> sa.URL:
    """``url`` with the limits of :data:`CONNECT_TIMEOUT_S` and :data:`SERVER_TIMEOUTS`
    added where neither the URL nor libpq's environment (``PGCONNECT_TIMEOUT``,
    ``PGOPTIONS``) sets them; the server options of the environment are kept."""
    query = dict(url.query)
    if "connect_timeout" not in query and "PGCONNECT_TIMEOUT" not in os.environ:
        query["connect_timeout"] = str(CONNECT_TIMEOUT_S)
    given = query.get("options", os.environ.get("PGOPTIONS", ""))
    options = " ".join(given) if isinstance(given, tuple) else given
    added = [f"-c {name}={value}" for name, value in SERVER_TIMEOUTS.items()
             if name not in options]
    if added:
        query["options"] = " ".join([options, *added]).strip()
    return url.set(query=query)
