"""The ``cuda`` kernel as a space and a Python file declare it, importing neither torch
nor CuPy: a short kernel (:mod:`sweeper.kernels._short`) whose launch is a CUDA C/C++
function compiled through NVRTC (:class:`~sweeper.kernels._cuda_build.CudaLaunch`).

In a space file every part is an option of ``kernel:``, paths relative to the space
file::

    kernel: {name: cuda, source: ../examples/copy.cu, entry: copy,
             inputs: {src: n}, outputs: {dst: n}, args: [dst, src, n],
             reference: "torch:clone"}

In Python, :func:`cuda` makes the launch that :func:`sweeper.kernel` takes.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from sweeper import plugins
from sweeper.core import DTYPES, THREAD_BLOCKS, Config, LaunchShape, Problem, evaluate, parse
from sweeper.core._api_errors import callers_frame, cut_at_call
from sweeper.core._spelling import entry
from sweeper.core._units import canonical_dtype, did_you_mean, unknown_name, zip_members
from sweeper.errors import ExpressionError, SweeperError
from sweeper.escape import cut
from sweeper.kernels._base import Headline, Kernel, MetaParam, OptionError
from sweeper.kernels._cuda_build import CONSTANT_DATA, CudaLaunch, host_bytes
from sweeper.kernels._cuda_spec import (
    BLOCK_DEFINE,
    DEFINE,
    DTYPE_DEFINE,
    EXTENT_DEFINES,
    IDENTIFIER,
    NUMBER,
    Arg,
    active_code,
    code_only,
    include_paths,
    included,
    includes_gone,
    includes_now,
    int_overflow,
    nvrtc_option_problem,
    sources,
    template_arguments,
    template_names,
    templates,
)
from sweeper.kernels._model_form import read_model
from sweeper.kernels._own_modules import (
    module_file,
    module_file_in,
    theirs,
    user_module_file,
    user_module_root,
)
from sweeper.kernels._short import _count, refused, verified
from sweeper.kernels._short_form import (
    CALLED,
    LAUNCH_CALLED,
    UNUSED_TOLERANCE,
    Declaration,
    _counted,
    cannot_take,
    check_problem,
    tolerance_pair,
)
from sweeper.kernels._tensors import TensorSpec, output_specs, tensor_spec

#: A ``__global__`` function's name, for the list of those a file declares.
GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                    r"(?:void\s+)?([A-Za-z_]\w*)\s*\(")
#: What a preprocessor line reads (``#ifndef VEC``, ``#if UNROLL > 1``): the names a
#: misspelt define is compared with.
DIRECTIVE = re.compile(r"^\s*#\s*\w+(.*)$", re.MULTILINE)
#: The options that hold a mapping or list (kept as JSON text), and what each must be.
STRUCTURED: dict[str, type | tuple[type, ...]] = {
    "inputs": dict, "outputs": (dict, list), "args": list, "dims": dict, "tolerance": dict,
    "nvrtc_options": list, "check": list}
#: The options that name a Python function (``module:function`` or ``file.py:function``,
#: beside the space file first): its file is part of the kernel's source, as is that of
#: each function ``constant_memory`` names (:func:`_references`).
FUNCTIONS = ("reference", *CALLED)
#: What a ``constant_memory`` option or argument is.
CONSTANT_MEMORY = ("the data of each __constant__ symbol of the source, by name: a function "
                   "called with each config, returning a numpy array or torch tensor "
                   "(Kernel Tuner's cmem_args)")


@cut_at_call
@entry(spelled=False, needs={
    "source": "the .cu file's path, relative to the calling module's folder",
    "entry": "the __global__ function's name",
    "args": "its arguments in order: tensors, dimensions and meta-parameters by name, "
            "numbers, such as ['y', 'x', 'n']"})
def cuda(source: str | Path, entry: str, args: Sequence[str], *,
         template: str | None = None, nvrtc_options: Sequence[str] = (),
         shared_memory: str | int | None = None,
         constant_memory: Mapping[str, Any] | None = None) -> CudaLaunch:
    """The launch of a CUDA C/C++ kernel, for :func:`sweeper.kernel`: ``source`` (relative
    to the calling module's folder; in a REPL or notebook, the current one), ``entry``
    the ``__global__`` function, ``args`` its arguments in order (tensors by name,
    dimensions and meta-parameters by name, numbers; a scalar typed as ``n:int64``,
    default int32 or float32), ``template`` an instantiation of ``entry`` such as
    ``"copy<{VEC}>"``, ``nvrtc_options`` NVRTC options every compile adds
    (``["-use_fast_math"]``: Kernel Tuner's ``compiler_options``), ``shared_memory`` the
    dynamic shared memory each block is launched with, in bytes: an expression over the
    dimensions, ``itemsize``, the meta-parameters, ``block`` (or ``block_size_x``),
    ``block_size_y`` and ``block_size_z`` (``"block_size_x * TILE * 4"``: Kernel Tuner's
    ``smem_args``), its names checked as :func:`sweeper.kernel` declares the kernel;
    ``constant_memory`` the data of each ``__constant__`` symbol of the source by name (a
    numpy array or torch tensor, or a function of the config returning one: Kernel
    Tuner's ``cmem_args``), copied in before each config's first launch.
    Meta-parameters become ``-DNAME=value``, the block ``-Dblock_size_x``, the dtype
    ``-DDTYPE``."""
    wrong_type = _cuda_type_problem(source, entry, args, template)
    if wrong_type is not None:
        raise SweeperError(f"sweeper.cuda: {wrong_type}")
    caller = callers_frame(sys._getframe(1)).f_globals
    module_file = caller.get("__file__")
    # no file (a REPL, a notebook, python -c): the current folder, as open() reads it
    folder = Path(module_file).resolve().parent if module_file else Path.cwd()
    path = (folder / source).resolve()
    beside = f"the folder of {module_file}" if module_file else "the current folder"
    wrong = nvrtc_option_problem(list(nvrtc_options) if isinstance(
        nvrtc_options, (list, tuple)) else nvrtc_options)
    if wrong is not None:
        at = "" if wrong[0] is None else f"[{wrong[0]}]"
        raise SweeperError(f"sweeper.cuda: nvrtc_options{at}: {wrong[1]}")
    if shared_memory is not None and (isinstance(shared_memory, bool) or
                                      not isinstance(shared_memory, (str, int))):
        raise SweeperError(f"sweeper.cuda: shared_memory={cut(repr(shared_memory), 60)}; "
                           "allowed: bytes as an expression of the config (\"block_size_x "
                           "* TILE * 4\") or a whole number")
    shared = None if shared_memory is None else str(shared_memory)
    wrong_shared = _shared_problem(shared)
    if wrong_shared is not None:
        raise SweeperError(f"sweeper.cuda: shared_memory: {wrong_shared}")
    constants = _constant_memory_given(constant_memory)
    launch = CudaLaunch(path, entry, args, template, caller.get("__name__", __name__),
                        nvrtc_options, shared, constants)
    files, problem = _read_source(launch, beside)           # read once, kept by the launch
    problem = problem or _entry_problem(entry) or (
        _template_problem(template) if template else None) or \
        (_entry_in_source(path, _decoded(files), entry, template) or ("", None))[1]
    if problem is None:
        problem = (int_overflow(args, {}) or ("", None))[1]      # a literal out of its type
    if problem is not None:
        raise SweeperError(f"sweeper.cuda: {problem}")
    return launch


class CudaDeclaration(Kernel):
    """The ``cuda`` kernel as spaces see it: a ``.cu`` file's entry, the tensors by shape,
    the arguments in order and a reference; the space's own axes are its meta-parameters
    (compiled as ``-D`` defines or template arguments)."""

    name: ClassVar[str] = "cuda"
    options: ClassVar[Mapping[str, str]] = {
        "source": "the .cu file, relative to the space file",
        "entry": "the __global__ function to launch (the one template instantiates)",
        "inputs": "the tensors read, by shape: {src: n} or {a: \"M, K\"}",
        "outputs": "new tensors by shape ({dst: n}), or inputs written in place ([x])",
        "args": "the entry's arguments in order: tensors, dimensions, meta-parameter axes "
                "(each config's value), numbers ([dst, src, n])",
        "reference": "module:function or file.py:function, called with the inputs",
        "template": "a template instantiation such as copy<{VEC}, {UNROLL}>",
        "dims": "the problem's dimensions and default sizes ({n: 1048576})",
        "grid": "the default grid expression (cdiv(n, block))",
        "grid_y": "the default grid in y (cdiv(M, block_size_y * tile_size_y)); default 1",
        "grid_z": "the default grid in z; default 1",
        "footprint_bytes": "the bytes a problem is named by, over the dimensions",
        "bytes_moved": "bytes one launch moves, over the dimensions and itemsize",
        "flops": "FLOPs one launch does, over the dimensions",
        "model": "the built-in model auto follows: {streaming: ...}, {tiled: ...} or "
                 "{rowwise: ...}",
        "refuse": "module:function or file.py:function, called with each config: None to "
                  "run it, else why the kernel cannot",
        "verify": "module:function or file.py:function, called with the checked outputs and "
                  "the reference's (dicts of name -> tensor) in place of the tolerance check: "
                  "None or True where they agree, else False or why not",
        "tolerance": "(rtol, atol) by dtype the outputs are checked at ({float32: [1e-4, "
                     "1e-3]}); default torch.testing.assert_close's",
        "headline": "the rate reports lead with: gbps (default) or tflops (needs flops)",
        "nvrtc_options": "NVRTC options every compile adds ([-use_fast_math, --fmad=false]: "
                         "Kernel Tuner's compiler_options)",
        "shared_memory": "the dynamic shared memory each block is launched with, in bytes, "
                         "over the config (block_size_x * TILE * 4: Kernel Tuner's "
                         "smem_args); default none",
        "check": "the outputs compared with the reference's ([C]: Kernel Tuner's answer, "
                 "None where not checked); default every output",
        "constant_memory": "the data of each __constant__ symbol of the source, by name: "
                           "module:function or file.py:function, called with each config, "
                           "returning a numpy array or torch tensor ({coeffs: "
                           "consts.py:make_coeffs}: Kernel Tuner's cmem_args)",
    }
    optional_options: ClassVar[frozenset[str]] = frozenset(
        {"template", "dims", "grid", "grid_y", "grid_z", "footprint_bytes", "bytes_moved",
         "flops", "model", "refuse", "tolerance", "headline", "nvrtc_options",
         "shared_memory", "check", "verify", "constant_memory"})
    number_options: ClassVar[frozenset[str]] = frozenset(
        {"grid", "grid_y", "grid_z", "footprint_bytes", "bytes_moved", "flops",
         "shared_memory"})
    #: every CUDA C kernel is this one built-in: its file and entry function tell them apart
    named_by: ClassVar[tuple[str, ...]] = ("source", "entry")
    needs_gpu: ClassVar[bool] = True
    launch_shape: ClassVar[LaunchShape] = THREAD_BLOCKS
    defaults: ClassVar[Mapping[str, Any]] = {"grid": "cdiv(n, block)", "block": 256,
                                             "dtype": "float32", "footprint": "64MiB"}
    summary: ClassVar[str] = ("a CUDA C/C++ kernel from a .cu file, compiled through NVRTC "
                              "with the swept axes as -D defines (needs a GPU and cupy)")

    @classmethod
    def resolve_option(cls, key: str, value: str, folder: Path) -> str:
        """``source`` and a ``file.py:function`` reference, refuse or verify (or each
        function ``constant_memory`` names), relative to ``folder``; a ``module:function``
        one of the user's own modules, pinned to the folder it is found in (``folder``
        first, then the import path, the working folder first:
        :func:`~sweeper.kernels._own_modules.user_module_root`) and kept as
        ``FOLDER/module:function``, so that the run imports, and its source hash reads,
        that module's file wherever they are asked from.  A library's (``torch:clone``)
        stays as it is."""
        if key == "source":
            return str((folder / value).resolve())
        if key == "constant_memory":
            return _each_function(value, lambda named: _resolved(named, folder))
        return _resolved(value, folder) if key in FUNCTIONS else value

    @classmethod
    def moved_option(cls, key: str, value: str, move: Callable[[str], str]) -> str:
        """``source``; a reference, refuse or verify's file (``file.py:function``), or the
        folder its module is pinned to (``FOLDER/module:function``), and those of each
        function ``constant_memory`` names; a library's (``torch:clone``), and any other
        option, names none."""
        if key == "source":
            return move(value)
        if key == "constant_memory":
            return _each_function(value, lambda named: _moved(named, move))
        return _moved(value, move) if key in FUNCTIONS else value

    @classmethod
    def hashed_files(cls, options: Mapping[str, str]) -> list[str]:
        """The files the ``.cu`` file includes, where found now, each relative to its
        folder (:func:`~sweeper.kernels._cuda_spec.includes_now`); none where it cannot be
        read (no hash is taken)."""
        source = Path(options.get("source", ""))
        return includes_now(source) if source.name else []

    @classmethod
    def missing_files(cls, options: Mapping[str, str], hashed: Sequence[str] = ()
                      ) -> list[str]:
        """Those the options name (the ``.cu`` file, a ``file.py:function``'s file, the
        folder a ``module:function`` is pinned to), and those their source reads: a
        pinned module's file (:func:`_python_files`), a module of the user's kept unpinned
        (the study's space read where it is found no longer) that is on no import path,
        and a file the ``.cu`` file or one it includes includes that NVRTC would find
        nowhere now, of those the hash read (``hashed``:
        :func:`~sweeper.kernels._cuda_spec.includes_gone`; a header it never read, a
        toolkit's, is none)."""
        missing = super().missing_files(options, hashed)
        read = [p for p in _python_files(options) if not p.exists()]
        source = Path(options.get("source", ""))
        if source.name:
            read += includes_gone(source, hashed)
        named = {Path(p).resolve() for p in missing}
        missing += [str(p) for p in dict.fromkeys(read) if p.resolve() not in named]
        for _, function in _references(options):
            module, colon, _ = function.rpartition(":")
            if colon and not module.endswith(".py") and "/" not in module and \
                    not theirs(module) and module_file(module) is None:
                missing.append(f"module {module!r}")
        return missing

    @classmethod
    def option_problem(cls, key: str, value: str, *, imports: bool = False) -> str | None:
        if key == "nvrtc_options":          # each option at its own line, as declared
            unfit = nvrtc_option_problem(_json_or_text(value))
            return unfit[1] if unfit is not None and unfit[0] is None else None
        if key == "constant_memory":        # each entry at its own line, as declared
            return _constant_memory_problem(value, imports)
        if key in STRUCTURED:
            return _structured_problem(key, value)
        if key in FUNCTIONS:
            return _reference_problem(value, imports, key)
        checks: dict[str, Callable[[str], str | None]] = {
            "source": _source_problem, "entry": _entry_problem, "template": _template_problem,
            "headline": _headline_problem, "shared_memory": _shared_problem}
        return checks[key](value) if key in checks else None

    @classmethod
    def specialize(cls, options: Mapping[str, str], params: Any) -> type[Kernel]:
        """The short kernel these options declare, its meta-parameters the axes ``params``
        names (``None``, as a run, its workers, a resume, ``plan``, a lookup or an export
        rebuild it from the options alone: those ``args`` passes, :func:`_passed_meta`),
        its model the one ``model`` names (:mod:`sweeper.kernels._model_form`; the names
        its settings read are checked against those axes and the dimensions, and
        unchecked where there are none)."""
        unfit = nvrtc_option_problem(json.loads(options.get("nvrtc_options", "[]")))
        if unfit is not None:                   # at the option that is wrong
            raise OptionError("nvrtc_options" if unfit[0] is None else
                              f"nvrtc_options[{unfit[0]}]", unfit[1])
        launch = CudaLaunch.of_options(options, __name__, _constant_functions(options))
        _, problem = _read_source(launch, "the space file")
        if problem is not None:                 # read once here, kept by the launch
            raise OptionError("source", problem)
        meta = _meta_names(options, params)
        reserved = launch.meta_problem(meta)
        if reserved is not None:                # sweeper's own define: at the axis
            raise OptionError(_axis_path(params, reserved[0]), reserved[1])
        inputs, outputs = _tensors(options)
        dims = json.loads(options["dims"]) if "dims" in options else None
        names = list(dims or ["n"])
        model = read_model(options["model"], meta if params is not None else None,
                           len(inputs), names if params is not None else None) \
            if "model" in options else None
        _check_counts(options, names)
        _check_tensors(options, inputs, outputs, names)
        check = json.loads(options["check"]) if "check" in options else None
        unchecked = check_problem(check, list(outputs))
        if unchecked is not None:               # at the item that is wrong
            raise OptionError(f"check{unchecked[0]}", unchecked[1])
        tolerance = _tolerance(options)
        if tolerance is not None and "verify" in options:
            raise OptionError("tolerance", f"{UNUSED_TOLERANCE}:")
        if options.get("headline") == Headline.TFLOPS and "flops" not in options:
            raise OptionError("headline", "tflops is flops over the median, and the kernel "
                              "declares no flops; allowed: gbps, or tflops beside flops: "
                              "FLOPs one launch does, over the dimensions (2 * M * N * K)")
        tensors = (*inputs, *(outputs if isinstance(outputs, dict) else ()))
        if params is None:                      # rebuilt from the options: args names them
            meta = [*meta, *_passed_meta(launch, tensors, names, meta)]
        wrong = launch.args_problem(tensors, names, meta)
        if wrong is not None:                   # at args, before build's
            raise OptionError("args", wrong)
        shared = launch.shared_memory_problem(names, meta) if params is not None else None
        if shared is not None:                  # its names: the space's axes known here
            raise OptionError("shared_memory", shared)
        try:
            declared = Declaration(
                inputs=inputs, outputs=outputs, name="cuda",
                reference=Reference(options["reference"], tuple(inputs)),
                meta={m: MetaParam(default=0, doc="a -D define", least=0) for m in meta},
                dims=dims,
                grid=options.get("grid", cls.defaults["grid"]), block=cls.defaults["block"],
                grid_y=options.get("grid_y"), grid_z=options.get("grid_z"),
                footprint_bytes=options.get("footprint_bytes"),
                bytes_moved=options.get("bytes_moved"), flops=options.get("flops"),
                tolerance=tolerance, headline=options.get("headline"), model=model,
                refuse=Refuse(options["refuse"]) if "refuse" in options else None,
                check=check,
                verify=Verify(options["verify"]) if "verify" in options else None)
            built = declared.build(launch)
        except SweeperError as err:
            raise OptionError("", str(err).replace("kernel cuda: ", "")) from None
        files = _texts(launch)
        missing = _entry_in_source(launch.source, files, launch.entry, launch.template,
                                   None if params is None else _always_defined(launch, meta))
        if missing is not None:
            raise OptionError(*missing)
        if params is not None and files is not None:
            grids = " ".join(options.get(g, "") for g in ("grid", *THREAD_BLOCKS.grids))
            _check_meta_read(launch, files, grids, params, meta)
            _check_template_defines(launch, files, params, meta)
        reference = _named(options, _spelled)
        python = _python_files(options)

        def source(named: str = reference) -> str:
            # the files as compiled, read again after an edit; the reference, refuse and verify
            # as ``named`` spells them (an earlier sweeper's: earlier_source)
            return launch.kernel_source() + named + _python_source(python)

        def earlier_source(_: type, spelled: Mapping[str, str]) -> str | None:
            earlier = _named(spelled, _spelled_earlier)
            return None if earlier == reference else source(earlier)

        def source_files(self: Any) -> tuple[Path, ...]:
            own: tuple[Path, ...] = built.source_files(self)
            return own + tuple(p for p in python if p not in own)

        source()                    # the files can be read: the source option says so
        # the launch's integer arguments are checked against the space's values as the
        # short kernel's values_problem asks the launch (CudaLaunch.values_problem)
        attrs: dict[str, Any] = {
            "plan": dataclasses.replace(built.plan, source=source), "__doc__": cls.__doc__,
            "source_files": source_files, "earlier_source": classmethod(earlier_source)}
        return type("CudaShort", (built, cls), attrs)


def _references(options: Mapping[str, str]) -> list[tuple[str, str]]:
    """Each function the options name, after what names it: the reference, refuse and
    verify, then each of ``constant_memory``'s by its symbol (``constant_memory
    coeffs``)."""
    named = [(key, options[key]) for key in FUNCTIONS if key in options]
    table = _json_or_text(options.get("constant_memory", "{}"))
    if isinstance(table, dict):
        named += [(f"constant_memory {symbol}", value) for symbol, value in table.items()
                  if isinstance(value, str)]
    return named


def _each_function(value: str, change: Callable[[str], str]) -> str:
    """A ``constant_memory`` option (JSON text) with each function it names ``change``d;
    one that is no mapping as it is (its check says why)."""
    table = _json_or_text(value)
    if not isinstance(table, dict):
        return value
    return json.dumps({symbol: change(named) if isinstance(named, str) else named
                       for symbol, named in table.items()})


def _resolved(value: str, folder: Path) -> str:
    """A function's reference as :meth:`CudaDeclaration.resolve_option` keeps it."""
    path, colon, attr = value.rpartition(":")
    if colon and path.endswith(".py"):
        return f"{(folder / path).resolve()}:{attr}"
    if plugins.PATH.fullmatch(value):
        root = user_module_root(path, [folder])
        return value if root is None else f"{root / path}:{attr}"
    return value


def _moved(value: str, move: Callable[[str], str]) -> str:
    """A function's reference as :meth:`CudaDeclaration.moved_option` moves it."""
    path, colon, attr = value.rpartition(":")
    if colon and path.endswith(".py"):
        return f"{move(path)}:{attr}"
    pinned = _pinned(value)
    return value if pinned is None else f"{move(str(pinned[0]))}/{pinned[1]}:{attr}"


def _constant_functions(options: Mapping[str, str]) -> dict[str, Constant]:
    """The function ``constant_memory`` names for each symbol, imported when first
    called."""
    table = json.loads(options.get("constant_memory", "{}"))
    return {symbol: Constant(named) for symbol, named in table.items()}


def _constant_memory_problem(value: str, imports: bool) -> str | None:
    """Why ``value`` is no ``constant_memory`` option, or ``None``: no mapping; an entry
    that is wrong is an :class:`OptionError` at that entry (its symbol no C name, its
    function named wrong, its file absent, and with ``imports`` one that does not import
    or cannot take the config)."""
    table = _json_or_text(value)
    if not isinstance(table, dict) or not table:
        return (f"{cut(repr(value), 60)} is not a valid constant_memory; allowed: a mapping of "
                "each __constant__ symbol to module:function or file.py:function, called "
                "with each config and returning a numpy array or torch tensor ({coeffs: "
                "consts.py:make_coeffs})")
    for symbol, named in table.items():
        if not IDENTIFIER.fullmatch(symbol):
            raise OptionError(symbol, f"{cut(repr(symbol), 60)} is not a C name; allowed: "
                              "the name of a __constant__ variable of the source (coeffs)")
        problem = _reference_problem(named, imports, "constant_memory") \
            if isinstance(named, str) else (
                f"{cut(repr(named), 60)} names no function; allowed: module:function or "
                "file.py:function, relative to the space file")
        if problem is not None:
            raise OptionError(symbol, problem)
    return None


def _constant_memory_given(given: object) -> dict[str, Any]:
    """:func:`cuda`'s ``constant_memory``, checked: a mapping of C names to arrays (a numpy
    array or torch tensor) or functions that can take the config; a
    :class:`~sweeper.errors.SweeperError` saying what is wrong and what is allowed."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise SweeperError(f"sweeper.cuda: constant_memory={cut(repr(given), 60)}; allowed: "
                           f"a dict of {CONSTANT_MEMORY}, or the data itself "
                           "({\"coeffs\": make_coeffs})")
    for symbol, data in given.items():
        if not isinstance(symbol, str) or not IDENTIFIER.fullmatch(symbol):
            raise SweeperError(f"sweeper.cuda: constant_memory: {cut(repr(symbol), 60)} is "
                               "not a C name; allowed: the name of a __constant__ variable "
                               "of the source (\"coeffs\")")
        if callable(data):
            label = getattr(data, "__name__", type(data).__name__)
            problem = cannot_take("constant_memory", data,
                                  functools.partial(_signed, f"sweeper.cuda: constant_memory "
                                                    f"{symbol}: {label}"), label)
            if problem is not None:
                raise SweeperError(problem)
        elif host_bytes(data) is None:
            raise SweeperError(f"sweeper.cuda: constant_memory {symbol}: "
                               f"{cut(repr(data), 60)} ({type(data).__name__}); allowed: "
                               f"{CONSTANT_DATA}, or a function of the config returning one")
    return dict(given)


def _signed(head: str, signature: inspect.Signature) -> str:
    """``head`` then the function's ``signature``, as a refusal names a function."""
    return f"{head}{signature}"


def _python_files(options: Mapping[str, str]) -> tuple[Path, ...]:
    """The files a reference, refuse or verify names (and each function
    ``constant_memory`` names), each once: a ``file.py:function``'s
    (resolved beside the space file), a ``module:function``'s where the module is one of
    the user's own: the file in the folder the space pinned it to
    (:meth:`CudaDeclaration.resolve_option`), the one the run imports, wherever this is
    asked from; one kept unpinned (a tuning file's of an older sweeper) found as its
    import finds it (:func:`~sweeper.kernels._own_modules.user_module_file`), nothing
    imported; a library's, such as ``torch:clone``, is none.  They decide what is right
    and what runs, as the ``.cu`` file does, so their text is part of the kernel's
    source and the sweep watches them."""
    found: list[Path] = []
    for _, value in _references(options):
        path, colon, _ = value.rpartition(":")
        pinned = _pinned(value)
        if pinned is not None:
            file: Path | None = _pinned_file(*pinned[:2])
        else:
            file = (Path(path).resolve() if path.endswith(".py") else
                    user_module_file(path)) if colon else None
        if file is not None and file not in found:
            found.append(file)
    return tuple(found)


def _pinned(value: str) -> tuple[Path, str, str] | None:
    """A reference, refuse or verify pinned to the folder its module is imported from
    (``FOLDER/module:function``, as :meth:`CudaDeclaration.resolve_option` keeps it):
    (the folder, the module, the function); ``None`` for any other form."""
    path, colon, attr = value.rpartition(":")
    if not colon or path.endswith(".py") or "/" not in path:
        return None
    where = Path(path)
    return where.parent, where.name, attr


def _spelled(value: str) -> str:
    """A reference, refuse or verify as its source hash names it: a pinned one's folder left out,
    a ``file.py:function``'s folders too, so that the hash says what it names, not where
    the project lies (a project moved keeps its hashes; the file's text is hashed beside
    it, :func:`_python_source`)."""
    path, colon, attr = value.rpartition(":")
    if colon and path.endswith(".py"):
        return f"{Path(path).name}:{attr}"
    pinned = _pinned(value)
    return value if pinned is None else f"{pinned[1]}:{pinned[2]}"


def _spelled_earlier(value: str) -> str:
    """A reference, refuse or verify as an earlier sweeper's source hash named it: a pinned one's
    folder left out, as :func:`_spelled` does, a ``file.py:function`` by its path as the
    space resolved it (:meth:`CudaDeclaration.resolve_option`)."""
    path, colon, _ = value.rpartition(":")
    return value if colon and path.endswith(".py") else _spelled(value)


def _named(options: Mapping[str, str], spelled: Callable[[str], str]) -> str:
    """The lines a kernel's source hash names its reference, refuse and verify by, and
    each function ``constant_memory`` names (:func:`_references`), each ``spelled`` so."""
    return "".join(f"// {key} {spelled(value)}\n" for key, value in _references(options))


def _pinned_file(root: Path, module: str) -> Path:
    """The file of ``module`` in ``root``, the one an import with ``root`` first on the
    import path finds (``module.py`` where neither is there: one that cannot be read,
    which the source says)."""
    found = module_file_in(module, root)
    return Path(found).resolve() if found is not None else \
        (root / Path(*module.split("."))).with_suffix(".py")


def _python_source(files: Sequence[Path]) -> str:
    """The text of each of ``files`` as it reads now, each after its name (one that
    cannot be read: why, which is a source of its own)."""
    parts = []
    for path in files:
        try:
            text = path.read_bytes().decode(errors="replace")
        except OSError as err:
            text = f"// unreadable: {err.strerror}"
        parts.append(f"// {path.name}\n{text}\n")
    return "".join(parts)


def declared_counts(options: Mapping[str, str]
                    ) -> tuple[Callable[[Problem], int], Callable[[Problem], int] | None]:
    """What a ``cuda`` kernel with these (checked) options declares of one launch, read
    from the options alone (no kernel built, nothing imported): its bytes moved (the
    ``bytes_moved`` option, else each input read once and each output written once, as
    the built kernel counts them) and its FLOPs (the ``flops`` option; ``None``: none
    declared)."""
    dims = tuple(json.loads(options["dims"])) if "dims" in options else ("n",)
    inputs, outputs = _tensors(options)
    written = outputs.items() if isinstance(outputs, dict) else \
        [(name, inputs[name]) for name in outputs]
    specs = [tensor_spec("cuda", name, raw, dims) for name, raw in (*inputs.items(), *written)]

    def counted(option: str) -> Callable[[Problem], int] | None:
        expr = _counted("cuda", option, options.get(option), dims)
        return None if expr is None else (lambda problem: _count(option, expr, problem))

    def moved(problem: Problem) -> int:
        return sum(math.prod(spec.sizes(problem)) *
                   (DTYPES[spec.dtype] if spec.dtype else problem.itemsize) for spec in specs)

    return counted("bytes_moved") or moved, counted("flops")


def _tensors(options: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any] | list[str]]:
    """The ``inputs`` and ``outputs`` options, each shape as
    :func:`~sweeper.kernels._tensors.tensor_spec` takes it (a JSON ``[shape, dtype]`` pair
    as a tuple); outputs as a list: the inputs written in place."""
    def spec(raw: Any) -> Any:
        return tuple(raw) if isinstance(raw, list) and len(raw) == 2 else raw

    inputs, outputs = json.loads(options["inputs"]), json.loads(options["outputs"])
    return {k: spec(v) for k, v in inputs.items()}, \
        {k: spec(v) for k, v in outputs.items()} if isinstance(outputs, dict) else outputs


def _tolerance(options: Mapping[str, str]) -> dict[str, tuple[float, float]] | None:
    """The ``tolerance`` option, ``{dtype: [rtol, atol]}``, as the short form's
    ``tolerance=`` reads it (a key any spelling of a dtype, each a pair of numbers >= 0,
    written as YAML reads ``1e-4``, a string, too); an :class:`OptionError` at the entry
    that is none.  Kernel Tuner's ``atol``: a sum over a long loop (a matmul's K of 4096
    in float32) lands further from torch's than ``assert_close``'s float32 default
    allows, and would fail every config."""
    if "tolerance" not in options:
        return None
    out = {}
    for key, pair in json.loads(options["tolerance"]).items():
        dtype = canonical_dtype(key)
        if dtype is None:
            raise OptionError(f"tolerance.{key}", f"{cut(repr(key), 60)} is not a dtype; "
                              f"allowed: {', '.join(DTYPES)}{did_you_mean(key, DTYPES)}")
        if isinstance(pair, list):          # YAML 1.1 reads 1e-4 as a string
            pair = [float(v) if isinstance(v, str) and NUMBER.fullmatch(v.strip()) else v
                    for v in pair]
        read = tolerance_pair(pair)
        if read is None:
            raise OptionError(f"tolerance.{key}", f"{cut(repr(pair), 60)} is no tolerance; "
                              "allowed: [rtol, atol], two numbers >= 0 (e.g. [1e-3, 1e-5])")
        out[dtype] = read
    return out


def _meta_names(options: Mapping[str, str], params: Any) -> list[str]:
    """The meta-parameters: ``params``' axes but the launch and problem ones (the grid in y
    and z too) and the dimensions; an :class:`OptionError` where the template reads
    another."""

    dims = json.loads(options["dims"]) if "dims" in options else {"n": 0}
    meta = [n for n in plugins.unchecked_kernel("cuda", params).meta_params
            if n not in dims and n not in THREAD_BLOCKS.grids]
    template = options.get("template")
    if template and params is not None:
        missing = [n for n in template_names(template) if n not in meta]
        if missing:
            raise OptionError("template", f"{template!r} reads {{{missing[0]}}}, which is no "
                              f"meta-parameter axis of params; known: {', '.join(meta) or 'none'}")
    return meta


def _passed_meta(launch: CudaLaunch, tensors: Sequence[str], dims: Sequence[str],
                 meta: Sequence[str]) -> list[str]:
    """The meta-parameters ``args`` passes, read from the options alone: each name it
    passes that is no tensor, dimension, number nor one of ``meta``.  A kernel rebuilt
    from its options knows no axes (they are the space's), yet the space was read first,
    and there ``args`` was checked against its axes, a name that is none refused at the
    args line; so each such name is an axis of it, and each launch passes the config's
    value (:meth:`~sweeper.kernels._cuda_build.CudaLaunch.__call__`).  What is no name
    (``n + 1``) is left to the args check, which refuses it here too."""
    known = {*tensors, *dims, *meta}
    return list(dict.fromkeys(
        name for name in (Arg.read(a).name for a in launch.raw_args)
        if name not in known and IDENTIFIER.fullmatch(name)))


def _texts(launch: CudaLaunch) -> dict[Path, str] | None:
    """The text of the source and of each file it includes (the launch's
    :meth:`~CudaLaunch.files`), or ``None`` where the source cannot be read (the source
    option says why)."""
    try:
        return _decoded(launch.files())
    except OSError:
        return None


def _decoded(files: Mapping[Path, bytes] | None) -> dict[Path, str] | None:
    """``files``' texts, a byte that is no UTF-8 replaced (``None``: none read)."""
    return None if files is None else \
        {p: data.decode(errors="replace") for p, data in files.items()}


def _check_meta_read(launch: CudaLaunch, files: Mapping[Path, str], grid: str, params: Any,
                     meta: Sequence[str]) -> None:
    """An :class:`OptionError` at the first swept meta-parameter nothing reads: not the
    source or the files it includes (as a ``-D`` define), the template, the arguments,
    nor the expression of any axis or of the grid options (``grid``: their texts), nor
    the launch (``block_size_y`` and ``block_size_z`` are its block's y and z, which a
    kernel may read as ``blockDim``).  Its configs would compile the
    same kernel and repeat one another; a misspelt define (``UNROL``) is the usual
    cause.  A name in the source's code passes; one only in its comments or string
    literals does not (:func:`code_only`), nor one only in code a preprocessor
    conditional leaves out at every config or in a file only such code includes (read
    as the entry is looked for, :func:`_compiled_code`), though one a conditional that
    is evaluated tests (``#if UNROLL > 1``) passes.  ``files``: the source's
    :func:`_texts`."""
    text = code_only("\n".join(files.values()))
    code = _compiled_code(launch.source, files, _always_defined(launch, meta),
                          conditions=True)
    written = set(IDENTIFIER.findall("\n".join(code.values())))
    macros = sorted(set(IDENTIFIER.findall(" ".join(DIRECTIVE.findall(text)))))
    read = written | set(template_names(launch.template) if launch.template else ())
    read |= {Arg.read(arg).name for arg in launch.raw_args} | set(EXTENT_DEFINES)
    read |= set(IDENTIFIER.findall(" ".join((grid, *_strings(params, keys=False)))))
    for name in meta:
        if name not in read:
            raise OptionError(_axis_path(params, name), (
                f"{launch.source.name} and the files it includes never name {name}, so "
                f"-D{name}=... changes nothing and its configs would repeat one another; "
                "allowed: a define the source reads, a template's {NAME}, an argument, or "
                f"a name an axis's expression reads{did_you_mean(name, macros)}"))


def _check_template_defines(launch: CudaLaunch, files: Mapping[Path, str], params: Any,
                            meta: Sequence[str]) -> None:
    """An :class:`OptionError` at the first swept meta-parameter compiled as a ``-D``
    define (the template does not pass it) whose name is a template parameter in the
    source or what it includes: the macro would turn ``template <int UNROLL>`` into
    ``template <int 1>`` and every config fail to compile.  The entry's own template is
    looked at first, and there the remedy is to pass the axis in ``template``.  Code a
    preprocessor conditional leaves out at every config (``#if 0``, ``#ifdef X`` of an X
    neither swept nor defined in the source) is not read
    (:func:`~sweeper.kernels._cuda_spec.active_code`), nor a file only such code
    includes: the files are read as the entry is looked for (:func:`_compiled_code`).
    ``files``: the source's :func:`_texts`."""
    entry = launch.template.split("<", 1)[0].strip().split("::")[-1] if launch.template \
        else launch.entry
    passed = set(template_names(launch.template)) if launch.template else set()
    defined = _always_defined(launch, meta)
    code = _compiled_code(launch.source, files, defined)
    found = [(path, t) for path, text in code.items() for t in templates(text, defined)]
    found.sort(key=lambda pt: pt[1].name != entry)
    for name in meta:
        path, template = next(((p, t) for p, t in found if name in t.params), (None, None))
        if name in passed or template is None or path is None:
            continue
        where = (f"{name} is a template parameter of {template.name} in {path.name} "
                 f"({template.head}), so its define -D{name}=... would break the template "
                 "and every config fail to compile; allowed: ")
        if template.name != entry:
            raise OptionError(_axis_path(params, name), where + (
                "an axis of another name, or a template parameter renamed"))
        written = template_arguments(launch.template) if launch.template else []
        arguments = [f"{{{p}}}" if p in meta else written[i] if i < len(written) else p
                     for i, p in enumerate(template.params)]
        raise OptionError(_axis_path(params, name), where + (
            f"pass it as a template argument, in the template option: "
            f"template: '{template.name}<{', '.join(arguments)}>'"))


def _always_defined(launch: CudaLaunch, meta: Sequence[str]) -> set[str]:
    """The names every config defines as it compiles: the swept meta-parameters the
    template does not pass, ``block_size_x``, ``DTYPE``, and ``block_size_y`` and
    ``block_size_z`` unless the template passes them
    (:func:`~sweeper.kernels._cuda_spec.nvrtc_options`)."""
    passed = set(template_names(launch.template)) if launch.template else set()
    return {*(n for n in (*meta, *EXTENT_DEFINES) if n not in passed), BLOCK_DEFINE,
            DTYPE_DEFINE}


def _strings(value: Any, keys: bool = True) -> list[str]:
    """Every string in a raw YAML value, nested or not (mapping keys too where ``keys``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*(_strings(k) if keys else ()),
                                                       *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _axis_path(params: Any, name: str) -> str:
    """Where the space's ``params`` sweeps axis ``name``: ``params.NAME``, or inside a
    group of zipped axes ``params.GROUP.zip.NAME``."""
    for key, value in (params.items() if isinstance(params, dict) else ()):
        if name in (zip_members(value) or ()):
            return f"params.{key}.zip.{name}"
    return f"params.{name}"


def _source_problem(value: str, relative_to: str = "the space file") -> str | None:
    """Why ``value`` names no source file (its text is read, and checked, once: as the
    kernel is declared, :func:`_read_source`)."""
    return None if Path(value).is_file() else \
        f"no file {value}; allowed: a CUDA source file, relative to {relative_to}"


def _read_source(launch: CudaLaunch, relative_to: str
                 ) -> tuple[dict[Path, bytes] | None, str | None]:
    """The launch's source and the files it includes (:meth:`CudaLaunch.files`), read
    once and kept by it, and why it cannot serve (``None``: it can): no such file,
    unreadable, or not UTF-8 (the text NVRTC is given; it reads the includes itself)."""
    path, value = launch.source, str(launch.source)
    missing = _source_problem(value, relative_to)
    if missing is not None:
        return None, missing
    try:
        files = launch.files()
        files[path.resolve()].decode()
    except OSError as err:
        return None, f"{value} cannot be read: {err}"
    except UnicodeDecodeError as err:
        return files, (f"{value} is not UTF-8 text (byte {err.start}: {err.reason}); allowed: "
                       "a source saved as UTF-8, as NVRTC is given it")
    return files, None


def _cuda_type_problem(source: Any, entry: Any, args: Any, template: Any) -> str | None:
    """Why :func:`cuda`'s ``source``, ``entry``, ``args`` or ``template`` is of no type it
    takes, what it is and what is allowed, or ``None``: checked before any is read, so
    a wrong one is a line saying so, not a ``TypeError`` from inside the reading."""
    def shown(value: Any) -> str:
        return cut(repr(value), 60)

    if not isinstance(source, (str, Path)):
        return f"source={shown(source)}; allowed: the .cu file's path, as text or a Path"
    if not isinstance(entry, str):
        return (f"entry={shown(entry)}; allowed: the __global__ function's name, as text "
                "(\"copy\")")
    if template is not None and not isinstance(template, str):
        return (f"template={shown(template)}; allowed: an instantiation of the entry, as "
                "text (\"copy<{VEC}>\"), or None")
    if isinstance(args, str) or not isinstance(args, (list, tuple)) or not all(
            isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in args):
        return (f"args={shown(args)}; allowed: a list of the entry's arguments in order, "
                "each a name or a number ([\"dst\", \"src\", \"n:int64\"])")
    return None


def _shared_problem(value: str | None) -> str | None:
    """Why ``value`` (a ``shared_memory``) is no expression, or ``None``: the names it
    reads are checked where the kernel's are known
    (:meth:`~sweeper.kernels._cuda_build.CudaLaunch.shared_memory_problem`)."""
    if value is None:
        return None
    try:
        expr = parse(value)
        constant = None if expr.names else evaluate(expr, {})
    except ExpressionError as err:
        return f"{err}; allowed: bytes as an expression of the config (block_size_x * TILE * 4)"
    if constant is not None and constant < 0:   # no config could launch: said where written
        return (f"{value!r} gives {constant} bytes at every config; allowed: a count of "
                "bytes, 0 or more, or an expression of the config (block_size_x * TILE * 4)")
    return None


def _entry_problem(value: str) -> str | None:
    return None if IDENTIFIER.fullmatch(value) else \
        f"{value!r} is not a function name; allowed: a C identifier such as copy"


def _check_tensors(options: Mapping[str, str], inputs: Mapping[str, Any],
                   outputs: Mapping[str, Any] | list[str], dims: Sequence[str]) -> None:
    """The ``inputs`` and ``outputs`` options (and ``footprint_bytes`` where the dimensions
    are not one ``n``) as the space writes them: an :class:`OptionError` at the tensor
    that is wrong, in the space's words (the Python form's are ``sweeper.kernel``'s)."""
    def spec(where: str, raw: Any) -> TensorSpec:
        try:
            return tensor_spec("cuda", where, raw, tuple(dims))
        except SweeperError as err:
            raise OptionError(where, str(err).removeprefix(f"kernel cuda: {where}: ")) from None

    for name, raw in inputs.items():
        spec(f"inputs.{name}", raw)
    output_specs(
        outputs, inputs, lambda name, raw: spec(f"outputs.{name}", raw),
        shaped_input=lambda name: OptionError(
            f"outputs.{name}", f"{name!r} is an input too; allowed: an input written in place, "
            f"named and not shaped (outputs: [{name}]), or a new output of another name"),
        not_input=lambda name: OptionError(
            "outputs", f"{name!r} is no input (inputs: {', '.join(inputs)}); allowed: the "
            f"inputs written in place, or new outputs by shape ({{{name}: n}})"))
    if list(dims) != ["n"] and "footprint_bytes" not in options:
        raise OptionError("dims", "dimensions other than n need footprint_bytes, the bytes a "
                          f"problem is named by, over {', '.join(dims)} and itemsize (the "
                          "largest array's, such as M * K * itemsize)")


def _check_counts(options: Mapping[str, str], dims: Sequence[str]) -> None:
    """The size options (``footprint_bytes``, ``bytes_moved``, ``flops``) each an
    expression over the dimensions and ``itemsize``; an :class:`OptionError` at the one
    that is not, naming what it reads that is neither."""
    for key in ("footprint_bytes", "bytes_moved", "flops"):
        if key not in options:
            continue
        try:
            unknown = unknown_name(parse(options[key]), [*dims, "itemsize"])
        except ExpressionError as err:
            raise OptionError(key, str(err)) from None
        if unknown is not None:
            raise OptionError(key, unknown)


def _entry_in_source(path: Path, files: Mapping[Path, str] | None, entry: str,
                     template: str | None, defined: Collection[str] | None = None
                     ) -> tuple[str, str] | None:
    """The option (``entry`` or ``template``) that names no function of the source, and
    why, or ``None``: the entry's name is nowhere in the code of the file or what it
    includes, or the template instantiates another function than the entry (NVRTC would
    fail every config, or launch a function the space does not name).  Comments and
    string and character literals are no code, nor is what a preprocessor conditional
    leaves out at every config, ``defined`` being the names every config defines (``None``:
    not known, so only ``#if 0`` is left out;
    :func:`~sweeper.kernels._cuda_spec.active_code`): a name only there declares nothing.
    A name anywhere in the code passes, as a macro invocation that declares the entry
    (``COPY_KERNEL(copy)``) writes it.  Each file is read alone, as the preprocessor
    reads it (a conditional is its file's own), and an included file only where code
    that is read includes it (:func:`_compiled_code`): one included inside ``#if 0``
    or a comment declares nothing.  ``files``: ``path``'s :func:`_texts` (``None``:
    unreadable, which the source option says)."""
    if files is None:
        return None
    named = re.compile(rf"\b{re.escape(entry)}\b")
    code = _compiled_code(path, files, defined)
    if not any(named.search(text) for text in code.values()):
        functions = sorted({f for text in code.values() for f in GLOBAL.findall(text)})
        files = {**_every_include(path), **files}       # those left out, to say which
        written = _written(files)
        elsewhere = next((p for p, t in files.items() if p not in code and
                          named.search(active_code(t, defined, written))), None)
        unread = "" if elsewhere is None else (
            f" ({elsewhere.name} names it, but is included only where code is left out "
            "at every config)")
        return "entry", (
            f"no function {entry!r} in {path.name} or the files it includes{unread}; "
            "allowed: " +
            (f"one of its __global__ functions: {', '.join(functions)}" if functions else
             "a __global__ function of the file") + did_you_mean(entry, functions))
    instantiated = template.split("<", 1)[0].strip().split("::")[-1] if template else entry
    if instantiated != entry:
        arguments = ", ".join(template_arguments(template or ""))
        return "template", (f"{template!r} instantiates {instantiated}, not the entry "
                            f"{entry!r}; allowed: an instantiation of the entry, "
                            f"{entry}<{arguments}>")
    return None


def _every_include(path: Path) -> dict[Path, str]:
    """The texts of ``path`` and of every file it includes, those included
    only in code left out too (``{}`` where one cannot be read)."""
    try:
        return _decoded(sources(path, left_out=True)) or {}
    except OSError:
        return {}


def _written(files: Mapping[Path, str]) -> set[str]:
    """The names a ``#define`` of any of ``files`` (their code, comments left out) gives:
    a conditional on one of them may hold, whichever file includes which."""
    return set().union(*(DEFINE.findall(code_only(t)) for t in files.values()))


def _compiled_code(path: Path, files: Mapping[Path, str],
                   defined: Collection[str] | None, *, conditions: bool = False
                   ) -> dict[Path, str]:
    """The code the preprocessor reads of the source ``path`` and of each file
    (``files``) that code includes, each file's
    :func:`~sweeper.kernels._cuda_spec.active_code` alone, a ``#define`` of any of
    them counted as one that may hold: an ``#include`` inside a comment or a branch left
    out at every config (``#if 0``) brings nothing in.  ``conditions``: the lines of the
    conditionals evaluated are kept, as ``active_code`` keeps them."""
    written = _written(files)
    out: dict[Path, str] = {}
    todo = [path.resolve()]
    while todo:
        file = todo.pop()
        if file in out or file not in files:
            continue
        out[file] = active_code(files[file], defined, written, conditions=conditions)
        todo += [next((f for f in include_paths(file, name, path.resolve().parent)
                       if f in files), file) for name in included(files[file], out[file])]
    return out


def _headline_problem(value: str) -> str | None:
    allowed = [h.value for h in Headline]
    return None if value in allowed else \
        f"{cut(repr(value), 60)} is no headline; allowed: {', '.join(allowed)}"


def _template_problem(value: str) -> str | None:
    names = template_names(value)
    return names if isinstance(names, str) else None


def _json_or_text(value: str) -> Any:
    """A structured option's value as its JSON text reads, else the text itself."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def _structured_problem(key: str, value: str) -> str | None:
    data = _json_or_text(value)
    return None if isinstance(data, STRUCTURED[key]) and data else \
        f"{value!r} is not a valid {key}: {CudaDeclaration.options[key]}"


def _reference_problem(value: str, imports: bool, key: str = "reference") -> str | None:
    """Why ``value`` names no function for option ``key`` (:data:`FUNCTIONS`): not
    ``module:function`` or ``file.py:function``, no such file, and (``imports``) one that
    does not import, or a ``refuse`` or ``verify`` that cannot take the arguments it is
    called with (:data:`~sweeper.kernels._short_form.CALLED`)."""
    path, colon, attr = value.rpartition(":")
    if not colon or not IDENTIFIER.fullmatch(attr) or (
            not path.endswith(".py") and plugins.PATH.fullmatch(_spelled(value)) is None):
        example = " (torch:clone)" if key == "reference" else ""
        return (f"{value!r} is not a {key}; allowed: module:function{example} or "
                "file.py:function, relative to the space file")
    if path.endswith(".py") and not Path(path).is_file():
        return f"no file {path} for the {key}"
    if imports:
        try:
            found = Reference(value, ()).function
        except Exception as err:  # noqa: BLE001 -- any import failure is the user's to see
            return f"{value}: {type(err).__name__}: {err}"
        if key in CALLED or key in LAUNCH_CALLED:
            return cannot_take(key, found, lambda _: value, key)
    return None


class Reference:
    """The reference a space names, imported on its first call and called with the
    inputs in their declared order (so ``torch:clone`` serves a copy)."""

    def __init__(self, target: str, inputs: tuple[str, ...]) -> None:
        self.target, self.inputs = target, inputs

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        """The function, imported once; an error where it is none, or where a module the
        space pinned to a folder (:meth:`CudaDeclaration.resolve_option`) is imported
        from another file (one of that name imported already from elsewhere): its
        source hash reads the pinned folder's."""
        path, _, attr = self.target.rpartition(":")
        pinned = _pinned(self.target)
        if pinned is not None:
            root, name, attr = pinned
            try:
                found = plugins.import_path(f"{name}:{attr}", first=str(root))
            finally:
                _check_imported(root, name)
        elif path.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(path).stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found = getattr(module, attr)
        else:
            found = plugins.import_path(self.target)
        if not callable(found):
            raise TypeError(f"{self.target} is {type(found).__name__}, not callable")
        return found  # type: ignore[no-any-return]

    def __call__(self, **inputs: Any) -> Any:
        return self.function(*(inputs[n] for n in self.inputs))


def _check_imported(root: Path, module: str) -> None:
    """An :class:`ImportError` where ``module``, imported, is not the file in ``root``
    that the space pinned it to (:func:`_pinned_file`): the run would call another
    module's code than the one its source hash reads."""
    loaded = sys.modules.get(module)
    if loaded is None:
        return                          # its import failed, and says why
    file = getattr(loaded, "__file__", None)
    expected = _pinned_file(root, module)
    if file is None or Path(file).resolve() != expected:
        raise ImportError(f"module {module} is imported from {file or 'no file'}, not "
                          f"{expected}, the file the space's folder or the import path "
                          "gave it when the space was read (one of that name was imported "
                          "first): give it a name of its own, or name its file "
                          "(file.py:function)")


class Refuse:
    """The ``refuse`` a space names, imported on its first call and called with the
    config; what it says read as :func:`~sweeper.kernels._short.refused` reads a
    ``refuse=`` (one that raises or returns no reason fails the config's trial, saying
    so at its line)."""

    def __init__(self, target: str) -> None:
        self.imported = Reference(target, ())

    def __call__(self, config: Config) -> str | None:
        return refused(self.imported.function, config)


class Constant:
    """A function ``constant_memory`` names for a symbol, imported on its first call and
    called with the config; what it returns is read as
    :func:`~sweeper.kernels._cuda_build.constants_of` reads it (one that raises or returns
    no array fails the config's trial, saying so)."""

    def __init__(self, target: str) -> None:
        self.imported = Reference(target, ())
        self.__name__ = target.rpartition(":")[2]

    def __call__(self, config: Config) -> Any:
        return self.imported.function(config)


class Verify:
    """The ``verify`` a space names, imported on its first call and called with the
    kernel's checked outputs and the reference's; what it says read as
    :func:`~sweeper.kernels._short.verified` reads a ``verify=`` (one that raises or
    returns no verdict fails the trial, saying so at its line)."""

    def __init__(self, target: str) -> None:
        self.imported = Reference(target, ())

    def __call__(self, outputs: dict[str, Any], expected: dict[str, Any]) -> str | None:
        return verified(self.imported.function, outputs, expected)
