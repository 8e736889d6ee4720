"""``from_autotune: module:kernel`` in a space file: the kernel it names, with the configs
of its ``@triton.autotune`` function as one group of zipped axes (``sweeper.kernel``'s
``autotuned=`` reads them into ``autotune_params``; this reads that attribute only, so
the space layer knows nothing of Triton)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweeper.errors import SpaceError

#: The group of zipped axes ``from_autotune:`` adds to ``params``: one row per config.
AUTOTUNE_GROUP = "autotune"


class FromAutotune:
    """Mixed into the space parser, which provides ``error``, ``kernel``, ``where``,
    ``file`` and ``user_code``."""

    where: dict[str, tuple[str, int | None]]
    file: str
    user_code: bool

    def error(self, path: str, message: str) -> SpaceError:
        """The error at ``path``'s line (the parser's)."""
        raise NotImplementedError

    def kernel(self, name: Any, params: Any, path: str = "kernel") -> Any:
        """The kernel's declaring class, errors at ``path`` (the parser's)."""
        raise NotImplementedError

    def from_autotune(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with ``from_autotune: module:kernel`` read: the kernel it names, and its
        ``@triton.autotune`` configs as one group of zipped axes under ``params``, placed
        at the ``from_autotune:`` line."""
        if "kernel" in data:
            raise self.error("from_autotune", "give kernel: or from_autotune:, not both "
                             "(from_autotune: names the kernel and sweeps its configs)")
        name = data["from_autotune"]
        declared = self.kernel(name, None, "from_autotune")
        columns = getattr(declared, "autotune_params", None)
        if not isinstance(columns, Mapping) and not self.user_code:
            unread = "; ".join(getattr(declared, "unread", ())) or "no @triton.autotune " \
                "function it names"
            raise self.error("from_autotune", f"the configs of {name!r} are not literals "
                             f"its source shows ({unread}), and `sweeper plan` imports no "
                             "user code; `sweeper run` and `sweeper ab` read them")
        if not isinstance(columns, Mapping):
            raise self.error("from_autotune", f"{name} names no @triton.autotune function; "
                             "declare it with sweeper.kernel(..., autotuned=the_function)")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise self.error("params", "params must be a mapping of keys, got "
                             f"{type(params).__name__}")
        for key in (AUTOTUNE_GROUP, *columns):
            if key in params:
                raise self.error(f"params.{key}", f"{key} is set by from_autotune's configs "
                                 f"({', '.join(columns)} zipped as {AUTOTUNE_GROUP}); drop it "
                                 "here, or name the kernel with kernel: and list the values")
        line = self.where.get("from_autotune", (self.file, None))
        for key, values in columns.items():
            path = f"params.{AUTOTUNE_GROUP}.zip.{key}"
            self.where.update({path: line, **{f"{path}[{i}]": line for i in range(len(values))}})
        self.where[f"params.{AUTOTUNE_GROUP}"] = line
        zipped = {AUTOTUNE_GROUP: {"zip": {k: list(v) for k, v in columns.items()}}}
        return {**data, "kernel": name, "params": {**params, **zipped}}
