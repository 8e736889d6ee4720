"""Kernels a space can name: built-ins by name, installed plugins by their entry point
name (group ``sweeper.kernels``), your own by ``module:attr``; :mod:`sweeper.plugins`
finds, imports and checks each."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from sweeper import plugins
from sweeper.kernels._base import Buffers, Headline, Kernel, MetaParam, fill_random
from sweeper.space import Dim, Problem

#: The built-in kernels (name -> ``module:attr``), loaded only when named.
BUILTINS: dict[str, str] = plugins.KERNEL.builtins


def kernel_class(name: str) -> type[Kernel]:
    """The :class:`Kernel` subclass ``name`` leads to (its module imported)."""
    obj = plugins.load(plugins.KERNEL, name).obj
    return obj if isinstance(obj, type) else type(obj)


def unchecked_kernel(name: str, params: Any) -> type[Kernel]:
    """A stand-in for the user kernel ``name`` that imports nothing.

    Importing a user kernel runs its module's top-level code, which only ``run`` (and
    ``ab``) must do.  The stand-in declares what the kernel's source declares in literals
    (:mod:`sweeper.kernels._unimported`: dimensions, meta-parameters, options, defaults,
    autotune configs); where the source says no meta-parameters it could read, the names
    ``params`` (a space's ``params`` mapping) gives besides the launch and problem axes
    and the dimensions, without defaults or checks; the rest is the base
    :class:`Kernel`'s.  Its ``unread`` names what could not be read."""
    from sweeper.kernels._unimported import read_declaration
    from sweeper.space._model import LAUNCH_AXES, PROBLEM_AXES

    found = plugins.find(plugins.KERNEL, name)
    read = read_declaration(found.target, name) if not found.builtin else None
    attrs: dict[str, Any] = dict(read.attrs) if read is not None else {}
    dims = attrs.get("dims", Kernel.dims)
    names: list[str] = []
    for key, value in (params.items() if isinstance(params, dict) else ()):
        zipped = value.get("zip") if isinstance(value, dict) else None
        names += list(zipped) if isinstance(zipped, dict) else [key]
    attrs.setdefault("meta_params", {
        n: MetaParam(default=0, doc="not checked: the kernel was not imported")
        for n in names if isinstance(n, str) and n.isidentifier() and n.isascii() and
        n not in (*LAUNCH_AXES, *PROBLEM_AXES, *dims)})
    attrs["defaults"] = {**Kernel.defaults, **attrs.get("defaults", {})}
    attrs["unread"] = read.unread if read is not None else ()
    return type("UncheckedKernel", (Kernel,), {**attrs, "name": name})


def load_kernel(name: str, options: Iterable[tuple[str, str]] = ()) -> Kernel:
    """An instance of the kernel called ``name``, constructed with ``options`` (a space's
    ``kernel_options``) as keyword arguments."""
    return kernel_class(name)(**dict(options))



def bytes_moved_of(name: str) -> Callable[[Problem], int] | None:
    """Built-in kernel ``name``'s bytes moved per problem, for ``plan``: from its
    declaration, where it is a class method, so no torch is imported; None where only an
    instance can count them (``cuda``: its tensors are declared by the space)."""
    counted = plugins.kernel_declaration(name).bytes_moved
    if getattr(counted, "__self__", None) is None:
        return None
    return cast("Callable[[Problem], int]", counted)


__all__ = [
    "BUILTINS",
    "Buffers",
    "Dim",
    "Headline",
    "Kernel",
    "MetaParam",
    "bytes_moved_of",
    "fill_random",
    "kernel_class",
    "load_kernel",
    "unchecked_kernel",
]
