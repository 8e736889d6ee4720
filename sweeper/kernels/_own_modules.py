"""The modules of the user's own project that a kernel's module imports: part of its source.

A Triton kernel's module may import its ``@triton.jit`` helpers or its constants from
another module of the project beside it (``kernels/helpers.py`` next to
``kernels/mykernel.py``); an edit there changes what runs as an edit of the kernel's own
module does, so a study's source hash covers those modules and a sweep watches their
files.  They are found from the import statements of each module's text (read, never
run; those inside functions too), each resolved to the file it is imported from (an
imported module's own, else the first on the import path, the working folder first, as
:func:`module_file` finds it), and followed through the
modules found, each once.  Kept: ``.py`` files under the folder the kernel's module is
imported from (``a.b.c`` at ``R/a/b/c.py``: under ``R``), or of its own top-level package
wherever that is installed; never the standard library's, an installed package's
(``site-packages``), nor sweeper's, triton's or torch's (their versions are the study's
fingerprint's).  A module imported while :func:`imports_as_read` is on (as a kernel's
plugin is loaded) is hashed as that import read it, the code that runs.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: Top-level packages never part of a kernel's source, wherever they are: their versions
#: are named apart in a study's fingerprint.
LIBRARIES = frozenset({"sweeper", "triton", "torch"})
#: Folders whose modules are installed or the standard library's, never the user's own.
_INSTALLED = frozenset({"site-packages", "dist-packages"})


def theirs(module: str) -> bool:
    """Whether ``module`` (``a.b``) is of :data:`LIBRARIES` or the standard library, by
    its top-level name: never one of the user's own, wherever its file is."""
    top = module.partition(".")[0]
    return top in LIBRARIES or top in sys.stdlib_module_names


def own_modules(name: str, file: str | Path) -> list[tuple[str, Path]]:
    """The user's own modules (name, file) that module ``name`` (read from ``file``)
    imports, directly or through one another, in the order first imported; not ``name``
    itself.  Empty for a module of :data:`LIBRARIES` or the standard library."""
    top = name.partition(".")[0]
    own = Path(file).resolve()
    if theirs(name):
        return []
    up = name.count(".") + (own.name == "__init__.py")
    root = own.parents[min(up, len(own.parents) - 1)]
    seen, found = {own}, []
    todo = [(name, own)]
    while todo:
        module, path = todo.pop(0)
        for imported in _imported(module, path, _text_of(module, path)):
            if theirs(imported):
                continue
            resolved = _file_of(imported)
            if resolved is None or resolved in seen or \
                    not _users(imported, resolved, top, root):
                continue
            seen.add(resolved)
            found.append((imported, resolved))
            todo.append((imported, resolved))
    return found


def users_files(names: Iterable[str]) -> list[tuple[str, Path]]:
    """Each of the modules ``names`` that is imported and the user's own, with its
    ``.py`` file, each once, in order: none of :data:`LIBRARIES`, the standard
    library's, an installed package's, nor one without such a file."""
    found: dict[str, Path] = {}
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if name in found or not file or not str(file).endswith(".py") or theirs(name):
            continue
        path = Path(file).resolve()
        if not installed(path):
            found[name] = path
    return list(found.items())


def with_own(names: Iterable[str]) -> list[tuple[str, Path]]:
    """:func:`users_files` of ``names`` and, after each, the user's own modules it
    imports (:func:`own_modules`), each once, in order."""
    found: dict[str, Path] = {}
    for name, path in users_files(names):
        found.setdefault(name, path)
        for own, at in own_modules(name, path):
            found.setdefault(own, at)
    return list(found.items())


def modules_at(files: Iterable[Path]) -> list[str]:
    """The names of the imported modules whose files are ``files`` (resolved), in order."""
    named: dict[Path, str] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and str(file).endswith(".py"):
            named.setdefault(Path(file).resolve(), name)
    return [named[f] for f in files if f in named]


def edited_since_read(modules: Iterable[tuple[str, Path]]) -> list[Path]:
    """The files of ``modules`` (name, file) imported while :func:`imports_as_read` was
    on whose text is not the one their import read (:func:`loaded_text`): an edit since,
    which the code this process keeps does not have.  Each module's file is the one a
    new process would import (:func:`module_file`, the working folder first; else the
    one it was imported from), as the source hash a new process records reads it.  A
    module imported otherwise is not told (its text as imported was not kept), nor a
    file gone."""
    edited = []
    for name, path in modules:
        kept = loaded_text(sys.modules.get(name))
        found = module_file(name)
        now = Path(found).resolve() if found else path
        if kept is not None and now.is_file() and _text(now) != kept:
            edited.append(now)
    return edited


def own_source(name: str, file: str | Path) -> str:
    """The text of each of :func:`own_modules`, each after a line naming its module (not
    its file: a project moved elsewhere is the same source), as :meth:`Kernel.source`
    appends it to the kernel's own; "" where the module imports none."""
    return source_of(own_modules(name, file))


def source_of(modules: list[tuple[str, Path]]) -> str:
    """:func:`own_source` of modules :func:`own_modules` found already: a kernel walks its
    module's imports once, and watches the files of the modules whose text it hashed."""
    return "".join(f"\n# module {module}\n{_text_of(module, path)}"
                   for module, path in modules)


#: Whether :func:`files_as_now` is on: every module's text read from its file.
_FILES_NOW: contextvars.ContextVar[bool] = contextvars.ContextVar("files_now", default=False)


@contextlib.contextmanager
def files_as_now() -> Iterator[None]:
    """While on, :func:`loaded_text` knows no text, so a kernel's source is read as its
    files hold it now, not as its imports read them: what a new process would import,
    for telling whether the code this one keeps was edited since."""
    token = _FILES_NOW.set(True)
    try:
        yield
    finally:
        _FILES_NOW.reset(token)


def loaded_text(module: ModuleType | None) -> str | None:
    """The text ``module`` was compiled from, as its import read it, where it was imported
    while :func:`imports_as_read` was on (a user's own module); ``None`` for any other
    (read its file, which an edit since may have changed), and while
    :func:`files_as_now` is on.  Spelled as :func:`inspect.getsource` reads a module, so
    an unedited module hashes the same."""
    if _FILES_NOW.get():
        return None
    spec = getattr(module, "__spec__", None)
    loader = getattr(spec, "loader", None)
    text = loader.text if isinstance(loader, _ReadOnce) else None
    return text if not text or text.endswith("\n") else text + "\n"


@contextlib.contextmanager
def imports_as_read() -> Iterator[None]:
    """While on, each of the user's own modules imported (a ``.py`` file that is neither
    a library's, the standard library's nor an installed package's) is compiled from its
    file's text as read then, never from a ``.pyc``, and keeps that text
    (:func:`loaded_text`): what a study hashes is the code that runs, though the file be
    saved with other text while the import runs or before the hash is taken."""
    finder = _AsRead()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


class _ReadOnce(importlib.machinery.SourceFileLoader):
    """A user's module's loader: its code compiled from the text it reads (kept as
    ``text``), no ``.pyc`` read or written."""

    text: str | None = None

    def path_stats(self, path: str) -> Any:
        raise OSError("compiled from its text as read")   # no .pyc: read the source

    def get_data(self, path: str) -> bytes:
        data = super().get_data(path)
        if path == self.path:
            self.text = importlib.util.decode_source(data)
        return data


class _AsRead:
    """The import-path finder for :func:`imports_as_read`: a user's own module's spec with
    a :class:`_ReadOnce` loader, none for any other (the finders after it find it)."""

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if theirs(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader \
                or not spec.origin or installed(Path(spec.origin).resolve()):
            return None
        spec.loader = _ReadOnce(name, spec.origin)
        return spec

    def invalidate_caches(self) -> None:
        """Nothing kept (the path finder's caches are its own)."""


def _text_of(module: str, path: Path) -> str:
    """Module ``module``'s text at ``path``: as its import read it where it was imported
    so (:func:`loaded_text`), else as the file reads now (:func:`_text`)."""
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    text = loaded_text(loaded) if file and Path(file).resolve() == path else None
    return _text(path) if text is None else text


def _text(path: Path) -> str:
    """``path``'s text as :func:`inspect.getsource` reads a module (through linecache,
    read again where the file changed)."""
    linecache.checkcache(str(path))
    return "".join(linecache.getlines(str(path)))


def _imported(module: str, path: Path, text: str) -> list[str]:
    """The modules ``module``'s ``text`` (its file's, ``path``) imports, absolute, each
    once, in order: the packages an import runs too (``a`` and ``a.b`` for ``import
    a.b.c``), and for ``from m import x`` both ``m`` and ``m.x`` (a submodule, where one
    is found).  None from text that does not parse."""
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            full = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_name(node.module or "", node.level, package)
            if base is None:
                continue
            full = [base, *(f"{base}.{a.name}" if base else a.name for a in node.names
                            if a.name != "*")]
        else:
            continue
        for dotted in full:
            parts = dotted.split(".")
            for n in range(1, len(parts) + 1):
                prefix = ".".join(parts[:n])
                if prefix and prefix not in names:
                    names.append(prefix)
    return names


def absolute_name(module: str, level: int, package: str) -> str | None:
    """The absolute name of ``from <level dots><module> import``, in ``package``, as the
    import system resolves it; None where it climbs past the top (or the module is in no
    package)."""
    if not level:
        return module
    parts = package.split(".") if package else []
    if level - 1 >= len(parts) or not parts:
        return None
    base = ".".join(parts[:len(parts) - level + 1])
    return f"{base}.{module}" if module else base


def module_file(module: str) -> str | None:
    """The source file of ``module`` (``a.b``: ``a/b.py`` or ``a/b/__init__.py``) on the
    import path, the working folder first, found without importing ``a``."""
    for base in [os.getcwd(), *sys.path]:
        path = module_file_in(module, base)
        if path is not None:
            return path
    return None


def module_file_in(module: str, base: str | Path) -> str | None:
    """The source file of ``module`` (``a.b``: ``a/b.py`` or ``a/b/__init__.py``) in the
    folder ``base`` (``""``: the current one), as an import with ``base`` first on the
    import path finds it; ``None`` where it is not there."""
    stem = os.path.join(base or os.curdir, *module.split("."))
    for path in (f"{stem}.py", os.path.join(stem, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def user_module_root(module: str, folders: Sequence[str | Path]) -> Path | None:
    """The folder (resolved) that the user's own ``module`` (``a.b``) is found in, the
    ``folders`` looked in first, then the import path as :func:`module_file` reads it
    (the working folder first), nothing imported: ``None`` for a module of
    :data:`LIBRARIES`, the standard library's or an installed package's, or one not
    found.  Importing it with that folder first on the import path imports that file."""
    found = _own_found(module, folders)
    return None if found is None else Path(found[0] or os.curdir).resolve()


def user_module_file(module: str) -> Path | None:
    """The ``.py`` file of ``module`` (``a.b``) where it is one of the user's own, found as
    :func:`module_file` finds it (the working folder first), nothing imported: ``None``
    for a module of :data:`LIBRARIES`, the standard library's or an installed package's
    (their versions are a study's fingerprint's), or one not found."""
    found = _own_found(module, ())
    return None if found is None else Path(found[1]).resolve()


def _own_found(module: str, folders: Sequence[str | Path]) -> tuple[str | Path, str] | None:
    """The folder and the source file the user's own ``module`` is found in, the
    ``folders`` first, then the import path as :func:`module_file` reads it; ``None`` for
    one of theirs (:func:`theirs`), an installed package's, or one not found."""
    if theirs(module):
        return None
    for base in [*folders, os.getcwd(), *sys.path]:
        found = module_file_in(module, base)
        if found is not None:
            return None if installed(Path(found).resolve()) else (base, found)
    return None


def _file_of(name: str) -> Path | None:
    """The ``.py`` file module ``name`` is (or would be) imported from, found without
    importing anything; None for one without such a file (built in, compiled, a
    namespace package) or not found."""
    module = sys.modules.get(name)
    found = getattr(module, "__file__", None) if module is not None else module_file(name)
    if not found or not str(found).endswith(".py"):
        return None
    return Path(found).resolve()


def _users(name: str, path: Path, top: str, root: Path) -> bool:
    """Whether module ``name`` at ``path`` (none of :data:`LIBRARIES` nor the standard
    library's) is of the user's own project: of the kernel's own top-level package
    ``top``, or under ``root`` and not installed."""
    if name.partition(".")[0] == top:
        return True
    return path.is_relative_to(root) and not installed(path)


def installed(path: Path) -> bool:
    """Whether ``path`` is in an installed package's folder or the standard library's."""
    if _INSTALLED & set(path.parts):
        return True
    return any(path.is_relative_to(folder) for folder in _library_folders())


def _library_folders() -> tuple[Path, ...]:
    """The standard library's and the installed packages' folders of this Python."""
    paths = sysconfig.get_paths()
    return tuple(Path(os.path.realpath(paths[key])) for key in
                 ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
