"""Kernels a space can name: built-ins by name, installed plugins by their entry point
name (group ``sweeper.kernels``), your own by ``module:attr``; :mod:`sweeper.plugins`
finds, imports and checks each."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sweeper import plugins
from sweeper.core import THREAD_BLOCKS, Dim, LaunchShape
from sweeper.errors import SweeperError, user_line
from sweeper.kernels._base import (
    SOURCE_HASH,
    Buffers,
    CountError,
    Headline,
    Kernel,
    MetaParam,
    checked_count,
    fill_random,
    hash_of_source,
)
from sweeper.kernels._cuda_spec import includes_gone, includes_now
from sweeper.kernels._own_modules import module_file
from sweeper.kernels._unimported import module_source_hash, names_bound

#: The built-in kernels (name -> ``module:attr``), loaded only when named.
BUILTINS: dict[str, str] = plugins.KERNEL.builtins


def kernel_class(name: str) -> type[Kernel]:
    """The :class:`Kernel` subclass ``name`` leads to (its module imported)."""
    obj = plugins.load(plugins.KERNEL, name).obj
    return obj if isinstance(obj, type) else type(obj)


def load_kernel(name: str, options: Iterable[tuple[str, str]] = ()) -> Kernel:
    """An instance of the kernel called ``name``, constructed with ``options`` (a space's
    ``kernel_options``) as keyword arguments; a :class:`SweeperError` naming the kernel
    and the line where its own constructor raised.  Its source is read as it is loaded
    (:func:`~sweeper.kernels._base.as_loaded`)."""
    cls = kernel_class(name)
    try:
        kernel = cls(**dict(options))
    except SweeperError:
        raise
    except Exception as err:  # noqa: BLE001 - the kernel's own code: one line, no traceback
        line = user_line(err)
        raise SweeperError(f"kernel {name}: constructing {cls.__name__} raised "
                           f"{type(err).__name__}: {err}{f' (at {line})' if line else ''}"
                           ) from None
    # read as it is loaded, the code imported (Kernel.source); the kernel's own code,
    # which raises again where the source is hashed
    with contextlib.suppress(Exception):
        kernel.source()
    return kernel


def source_hash_now(name: str, options: Mapping[str, str] | None = None) -> str | None:
    """Kernel ``name``'s source hash as a study of it would record it now
    (:meth:`Kernel.source_hash`), running no code this process has not run: a built-in's,
    or a kernel whose module this process imported already, from the kernel itself; any
    other's from its module's text, where that is what its study hashes
    (:func:`~sweeper.kernels._unimported.module_source_hash`).  A built-in built from a
    space's ``options`` (``cuda``: its files as they read now, nothing compiled;
    ``torch-op``: its op), from those options, as the run that recorded them hashed it:
    ``None`` without them, or where they no longer build it (the ``.cu`` file gone).
    ``None`` too for a Kernel subclass whose module is not imported."""
    try:
        found = plugins.find(plugins.KERNEL, name)
        if found.builtin and options:
            given = tuple(sorted(options.items()))
            return source_hash_unrun(name, given) or load_kernel(name, given).source_hash()
        if found.builtin or found.target.partition(":")[0] in sys.modules:
            return load_kernel(name).source_hash()
    except (SweeperError, OSError, TypeError):
        return None
    return module_source_hash(found.target)


def _builtin_declaration(name: str) -> type[Kernel] | None:
    """Built-in kernel ``name``'s declaration; ``None`` for any other kernel, or a name
    no plugin has.  Nothing but a built-in's declaration is imported."""
    try:
        if not plugins.find(plugins.KERNEL, name).builtin:
            return None
        return plugins.kernel_declaration(name)
    except SweeperError:
        return None


@functools.cache
def named_by(name: str) -> tuple[str, ...]:
    """The options that tell one built-in kernel ``name`` built from its space's options
    from another (its declaration's :attr:`Kernel.named_by`: ``cuda``'s source and entry,
    ``torch-op``'s op); none for any other kernel, or a name no plugin has.  Nothing but
    a built-in's declaration is imported."""
    declaration = _builtin_declaration(name)
    return () if declaration is None else tuple(declaration.named_by)


@functools.cache
def launch_shape(name: str) -> LaunchShape:
    """The blocks kernel ``name``'s launch takes: a built-in's, as its declaration says
    (:attr:`Kernel.launch_shape`: a Triton kernel's ``num_warps`` × 32 threads, ``cuda``'s
    any count, in up to three dimensions); for any other kernel, or a name no plugin
    has, every block of one dimension a CUDA launch takes (1 to 1024 threads), as a
    user's kernel is not imported to be asked (a tuning file is read without running its
    code) and one launching compiled CUDA C (``sweeper.cuda``) takes any: its
    meta-parameters are not read as extents in y and z, as a Triton one's
    ``block_size_y`` is only its own.  Nothing but a built-in's declaration is imported."""
    declaration = _builtin_declaration(name)
    return declaration.launch_shape if declaration is not None else \
        dataclasses.replace(THREAD_BLOCKS, extents=(), grids=())


def moved_options(name: str, options: Mapping[str, str], move: Callable[[str], str]
                  ) -> dict[str, str]:
    """Built-in kernel ``name``'s kept ``options`` (a tuning entry's) with each file or
    folder they name passed through ``move`` (its declaration's
    :meth:`Kernel.moved_option`); as they are for any other kernel, or a name no plugin
    has.  Nothing but a built-in's declaration is imported."""
    declaration = _builtin_declaration(name)
    if declaration is None:
        return dict(options)
    return {k: declaration.moved_option(k, v, move) for k, v in options.items()}


def options_hashed(name: str, options: Mapping[str, str]) -> list[str]:
    """The files besides those built-in kernel ``name``'s ``options`` name that the
    source built from them reads now (its declaration's :meth:`Kernel.hashed_files`: a
    ``cuda`` kernel's included files, relative to its ``.cu`` file's folder), and those a
    user kernel launching ``sweeper.cuda`` reads besides its module (the files its
    ``.cu`` file includes, so too: :func:`cuda_source`): what a study records beside
    its source hash, for :func:`options_missing` to tell a file gone since from one that
    hash never held.  Empty for any other kernel, or a name no plugin has.  Nothing is
    imported that this process has not imported."""
    declaration = _builtin_declaration(name)
    if declaration is not None:
        return declaration.hashed_files(options)
    source = cuda_source(name)
    return [] if source is None else includes_now(source)


def options_missing(name: str, options: Mapping[str, str], hashed: Sequence[str] = ()
                    ) -> list[str]:
    """The files and folders kernel ``name``'s kept ``options`` name, or that the source
    they build read when its hash was taken (``hashed``: :func:`options_hashed` then, as
    its study or tuning entry recorded it), which are not there, each once (its
    declaration's :meth:`Kernel.missing_files`: a ``cuda`` kernel's ``.cu`` file, a file
    it included, its reference's or refuse's file); for a user kernel launching
    ``sweeper.cuda``, its ``.cu`` file (:func:`cuda_source`), or a file it included of
    those ``hashed`` names: its source cannot be hashed from them to compare.  Empty for
    any other kernel, or a name no plugin has.  Nothing is imported that this process
    has not imported."""
    declaration = _builtin_declaration(name)
    if declaration is not None:
        return declaration.missing_files(options, hashed)
    source = cuda_source(name)
    if source is None:
        return []
    return [str(source)] if not source.exists() else \
        [str(p) for p in includes_gone(source, hashed)]


def cuda_source(name: str) -> Path | None:
    """The CUDA C file user kernel ``name``'s ``sweeper.cuda`` launch compiles
    (:attr:`Kernel.cuda_source`): from the kernel, where this process imported its
    module already, else from its module's source, never run (where the call gives it
    as a literal); ``None`` for a built-in, any other kernel, or a name no plugin has."""
    try:
        found = plugins.find(plugins.KERNEL, name)
        if found.builtin:
            return None
        imported = found.target.partition(":")[0] in sys.modules
        declared = plugins.kernel_declaration(name, user_code=imported)
    except SweeperError:
        return None
    source = getattr(declared, "cuda_source", None)
    return source if isinstance(source, Path) else None


def launches_warps(name: str) -> bool:
    """Whether kernel ``name`` launches Triton programs of ``num_warps`` warps, not CUDA C
    blocks of any count of threads (:attr:`Kernel.launch_shape`): a built-in's as its
    declaration says; a user kernel's as its module declares it, imported where this
    process imported it already, else read from its source, never run (a ``sweeper.cuda``
    launch, called or bound to a name, is CUDA C); a name no plugin has, or a module that
    cannot be read, is taken for a Triton kernel's, as tuning entries were before CUDA C."""
    try:
        found = plugins.find(plugins.KERNEL, name)
        imported = found.builtin or found.target.partition(":")[0] in sys.modules
        declared = plugins.kernel_declaration(name, user_code=imported)
    except SweeperError:
        return True
    return getattr(declared, "launch_shape", THREAD_BLOCKS).sizes is not None


def files_gone(missing: Sequence[str]) -> str:
    """``FILE is gone: moved, renamed or removed since``, of each of ``missing`` (files a
    kernel's source is read from: :func:`options_missing`)."""
    return (f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} gone: moved, "
            "renamed or removed since")


def put_back(missing: Sequence[str], where: str) -> str:
    """``put it back where WHERE find it`` (``them`` for several of ``missing``): the
    first way on that a message naming them gone (:func:`files_gone`) gives."""
    them = "it" if len(missing) == 1 else "them"
    return f"put {them} back where {where} find {them}"


def looked_for(name: str, kept: str) -> str:
    """Where the files :func:`options_missing` names of kernel ``name`` are looked for, as
    a message naming them gone says it (:func:`put_back`): a built-in's by the options it
    was built from, where they were ``kept`` (a space, a tuning entry's
    ``kernel_options``), or by the files they name; a user kernel's ``sweeper.cuda``
    files by its module, whose call names its ``.cu`` file (relative to the module's
    folder), or by the files that names.  Nothing but a built-in's declaration is
    imported."""
    return kept if _builtin_declaration(name) is not None else \
        "the kernel's module or the files it names"


def source_missing(name: str) -> bool:
    """Whether kernel ``name``'s source cannot be found to compare with a tuned hash: a
    ``module:attr`` (or an installed plugin's) whose module is neither imported nor a
    file on the import path (renamed since, or tuned in another working folder).  A name
    no plugin has (a kernel a program passed as an object) cannot be told: not missing.
    Nothing is imported."""
    try:
        found = plugins.find(plugins.KERNEL, name)
    except SweeperError:
        return False
    module = found.target.partition(":")[0]
    return not found.builtin and module not in sys.modules and module_file(module) is None


def source_undefined(name: str) -> list[str] | None:
    """Where kernel ``name``'s module is there but no longer defines the kernel's name
    (renamed or removed since it was tuned), the public names it binds instead (for a
    "did you mean"); ``None`` where it does, where only running it could tell
    (:func:`~sweeper.kernels._unimported.names_bound`, as ``plan`` refuses such a
    kernel), and where the module is not found (:func:`source_missing`).  Nothing is
    imported: a module this process imported already is asked, any other (one whose
    import is blocked, ``sys.modules[name] = None``, too) read."""
    try:
        found = plugins.find(plugins.KERNEL, name)
    except SweeperError:
        return None
    module, _, attr = found.target.partition(":")
    if found.builtin:
        return None
    loaded = sys.modules.get(module)
    if loaded is None:
        return names_bound(found.target)
    names = vars(loaded)
    if attr in names or "__getattr__" in names:
        return None
    return sorted(n for n in names if not n.startswith("_"))


class Unfound(NamedTuple):
    """Why a kernel's source cannot be found to compare with a tuned hash or to read
    (:func:`source_unfound`): its module and attribute, and ``bound``, the public names
    the module binds instead where it no longer defines the kernel; ``None`` there where
    the module itself is not found."""

    module: str
    attr: str
    bound: list[str] | None


def source_unfound(name: str) -> Unfound | None:
    """Why kernel ``name``'s source cannot be found, nothing imported: its module is there
    but no longer defines its name (:func:`source_undefined`), or is neither imported
    nor a file on the import path (:func:`source_missing`); ``None`` where neither is
    told (a built-in, a name no plugin has, a module that defines it)."""
    bound = source_undefined(name)
    if bound is None and not source_missing(name):
        return None
    module, _, attr = plugins.find(plugins.KERNEL, name).target.partition(":")
    return Unfound(module, attr, bound)


def source_hash_unrun(name: str, options: Iterable[tuple[str, str]] = ()) -> str | None:
    """Kernel ``name``'s source hash as a study of it records it, where that can be told
    importing and running nothing (``sweeper plan``): a function its module declares with
    ``@sweeper.kernel(...)``, from the module's text
    (:func:`~sweeper.kernels._unimported.module_source_hash`); a built-in whose
    ``options`` (a space's ``kernel_options``) declare its source, from the declaration
    they build (``cuda``: the ``.cu`` file and what it includes, read as a run reads
    them, nothing compiled; :meth:`Kernel.declared_source`).  ``None`` for another
    built-in (its source changes only with sweeper's, which a study's fingerprint names
    apart) and for any kernel whose hash needs its code run."""
    try:
        found = plugins.find(plugins.KERNEL, name)
        if not found.builtin:
            return module_source_hash(found.target)
        declared = plugins.kernel_declaration(name).specialize(dict(options), None)
        source = declared.declared_source()
    except (SweeperError, OSError, LookupError, ValueError):
        return None             # options missing or unfit: the run refuses them, and why
    return None if source is None else hash_of_source(source)


def source_hash_respelled(name: str, options: Mapping[str, str], recorded: str,
                          spelled: Mapping[str, str] | None = None) -> str | None:
    """Built-in kernel ``name``'s source hash now, built from ``options`` (as
    :func:`source_hash_unrun` tells it), where ``recorded`` is the hash an earlier sweeper
    gave these same files, spelling the options as ``spelled`` (those options as it
    resolved them; default ``options``) gives them (:meth:`Kernel.earlier_source`: a
    ``cuda`` kernel's ``file.py:function`` reference, refuse or verify named by its path, where
    this sweeper names it by its file's name, so that a project moved keeps its hashes).
    ``None`` where it is not: only that spelling is forgiven, an edit of any file the
    source reads (the ``.cu`` file, the reference's) is still a change."""
    try:
        if not options or not plugins.find(plugins.KERNEL, name).builtin:
            return None
        declared = plugins.kernel_declaration(name).specialize(dict(options), None)
        earlier = declared.earlier_source(options if spelled is None else spelled)
        source = declared.declared_source()
    except (SweeperError, OSError, LookupError, ValueError):
        return None
    if earlier is None or source is None or hash_of_source(earlier) != recorded:
        return None
    return hash_of_source(source)


def declared_count(name: str, what: str) -> Any:
    """Built-in kernel ``name``'s count ``what`` for ``plan``, read from its declaration
    where it declares it as a class method, so no torch is imported: ``bytes_moved`` and
    ``flops`` per problem; ``dram_bytes`` per problem where its access order moves more
    than its bytes moved (``Kernel.dram_bytes``); ``interpreted_ops``, the tensor
    operations a launch of a config runs on the Triton interpreter.  None where only an
    instance can count (``cuda``: its tensors are declared by the space), or where it
    declares none."""
    counted = getattr(plugins.kernel_declaration(name), what)
    return None if getattr(counted, "__self__", None) is None else counted


__all__ = [
    "BUILTINS",
    "SOURCE_HASH",
    "Buffers",
    "CountError",
    "Dim",
    "Headline",
    "Kernel",
    "MetaParam",
    "Unfound",
    "checked_count",
    "declared_count",
    "files_gone",
    "fill_random",
    "kernel_class",
    "launch_shape",
    "launches_warps",
    "load_kernel",
    "looked_for",
    "moved_options",
    "named_by",
    "options_hashed",
    "options_missing",
    "put_back",
    "source_hash_now",
    "source_hash_respelled",
    "source_hash_unrun",
    "source_missing",
    "source_undefined",
    "source_unfound",
]
