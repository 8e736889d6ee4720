"""Compiling a CUDA C/C++ kernel through NVRTC, cached on disk.

A compiled kernel is keyed by :func:`~sweeper.kernels._cuda_spec.cache_key` (source and
includes, entry, options, arch, NVRTC version) and kept as ``KEY.cubin`` with ``KEY.json``
(the entry's lowered name: a template instantiation's mangled one, and the entry's tag)
under ``<sweeper cache>/cuda``, the JSON also naming the arch and NVRTC version (what
``sweeper plan`` looks entries up by): a second sweep of the same configs, or a resumed
one, compiles nothing.  The cache is this user's alone and each entry is verified before it is
used (:mod:`sweeper.kernels._cuda_cache`); one that cannot be written costs the caching,
never the compile.

The compiler is a small interface so the cache is tested without a GPU; the real one
(:class:`NvrtcCompiler`) imports CuPy when it first compiles, never before.

:class:`CudaLaunch`, the launch a ``cuda`` kernel declares, compiles (or finds) a config's
function and launches it on torch's current stream, so CUDA-event timing, CUDA graphs and
the L2 flush treat it as they treat a Triton kernel.  CuPy is imported when the first
trial compiles, never by ``plan``, reports or ``sweeper kernels``; it is the optional
extra ``pip install 'sweeper[cuda]'``.  Each config compiles once per process (loaded
functions are kept, so a CUDA graph capture loads nothing) and once per machine (the disk
cache).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from sweeper.ceilings import cache_root
from sweeper.core import THREAD_BLOCKS, Config, Expr, evaluate, format_size, parse
from sweeper.core._units import unknown_name
from sweeper.errors import ConstantMemoryFailed, ExpressionError
from sweeper.kernels._cuda_cache import CompileCache
from sweeper.kernels._cuda_spec import (
    BLOCK_DEFINE,
    EXTENT_DEFINES,
    Arg,
    absent_includes,
    cache_key,
    instantiation,
    int_overflow,
    meta_problem,
    nvrtc_options,
    parse_args,
    sources,
)
from sweeper.kernels._short import _asked, _returned
from sweeper.kernels._watch import settled, stamp

#: How many of NVRTC's log lines a failed trial's reason keeps (errors first).
LOG_LINES = 6


class CompilationError(Exception):
    """NVRTC refused the source: the message is its log's error lines.  The name is
    the one :func:`sweeper.trial.classify` records as ``compile_error``."""


class OutOfResources(Exception):
    """A launch asks a block for more than the GPU gives one (its dynamic shared memory,
    with the kernel's static, past the block's limit): the config's trial is recorded as
    ``out_of_resources`` (:func:`sweeper.trial.classify` reads the name) with this
    reason, and the sweep goes on."""


@dataclass(frozen=True)
class Compiled:
    """A compiled kernel: where its cubin is cached (``None``: it could not be), the name
    to look the entry up by, and the cubin itself, what is loaded (never the file again,
    which could have been replaced since it was checked)."""

    path: Path | None
    lowered: str
    cubin: bytes = field(repr=False)


class TunedLaunch(NamedTuple):
    """A config of a CUDA C kernel as a program of its own compiles and launches it, the
    way sweeper did (:meth:`CudaLaunch.tuned_launch`); with CuPy::

        module = cupy.RawModule(code=launch.source.read_text(), options=launch.options,
                                name_expressions=[launch.name])
        module.get_function(launch.name)(launch.grid, launch.block, args,
                                         shared_mem=launch.shared_mem)

    (a ``shared_mem`` past 48 KiB needs the function's maximum raised to it first, as
    ``cudaFuncSetAttribute`` does: ``function.max_dynamic_shared_size_bytes =
    launch.shared_mem`` on the ``RawKernel`` that ``get_function`` gives).  Each
    ``__constant__`` symbol ``constant_memory`` names holds data the kernel reads, which
    sweeper copied in before each config's launches: set it before the first launch, as
    ``cudaMemcpyToSymbol`` does (``cupy.ndarray(data.shape, data.dtype,
    module.get_global(name)).set(data)``)."""

    #: the entry, or its template's instantiation (``copy<4, 2>``): what NVRTC is asked to
    #: name (``name_expressions``) and the function is looked up by
    name: str
    #: the ``.cu`` file compiled
    source: Path
    #: the NVRTC options of its compile: each define (``-DNAME=value``), the kernel's own
    #: ``nvrtc_options``, the source's folder (``-I``, where its headers are) and the
    #: language (``-std=c++17``)
    options: tuple[str, ...]
    #: the defines by name (``block_size_x``, ``block_size_y``, ``block_size_z``, each
    #: meta-parameter the template does not pass, ``DTYPE``)
    defines: dict[str, str]
    #: the grid and the block, each in x, y and z (:func:`launch_dims`)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    #: the dynamic shared memory of each block, in bytes (:meth:`CudaLaunch.shared_bytes`)
    shared_mem: int
    #: the ``__constant__`` symbols whose data the launch needs set first (their data is
    #: the kernel's ``constant_memory`` functions', not the study's)
    constant_memory: tuple[str, ...] = ()


class Compiler(Protocol):
    """What compiles: ``(source text, file name, options, entry) -> (cubin, lowered
    name)``, a :class:`CompilationError` with the log when the source does not compile;
    ``arch`` and ``version`` are part of every cache key."""

    arch: str
    version: str

    def compile(self, source: str, name: str, options: Sequence[str], entry: str
                ) -> tuple[bytes, str]:
        """The cubin of ``source`` and ``entry``'s lowered name."""
        ...


def cuda_cache_dir() -> Path:
    """Where compiled kernels are kept: ``cuda/`` in sweeper's cache folder."""
    return cache_root() / "cuda"


def compiled(source: Path, entry: str, options: Sequence[str], compiler: Compiler,
             folder: Path | None = None, files: Mapping[Path, bytes] | None = None
             ) -> Compiled:
    """The kernel ``entry`` of ``source`` compiled with ``options``: from the cache when it
    holds it with a tag that checks, else compiled (``-I`` the source's folder, ``-arch``
    the compiler's) and stored where the cache can take it.  ``files``: the source's
    :func:`~sweeper.kernels._cuda_spec.sources` as already read (``None``: read here)."""
    files = sources(source) if files is None else files
    key = cache_key(files, entry, options, compiler.arch, compiler.version)
    cache = CompileCache(folder or cuda_cache_dir())
    hit = cache.get(key)
    if hit is not None:
        return Compiled(cache.folder / f"{key}.cubin", hit[1], hit[0])
    text = files[source.resolve()].decode()
    flags = (*options, f"-I{source.resolve().parent}", f"-arch={compiler.arch}",
             "-std=c++17")
    binary, lowered = compiler.compile(text, source.name, flags, entry)
    path = cache.put(key, binary, lowered, {"entry": entry, "options": list(flags),
                                            "source": str(source), "arch": compiler.arch,
                                            "nvrtc": compiler.version})
    return Compiled(path, lowered, binary)


def log_reason(log: str) -> str:
    """NVRTC's log as a reason: its error lines first, then the rest, at most
    ``LOG_LINES`` lines joined by `` | ``."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    kept = (errors + [line for line in lines if line not in errors])[:LOG_LINES]
    return " | ".join(kept) or "NVRTC gave no log"


class NvrtcCompiler:
    """NVRTC through CuPy's binding, for ``arch`` (``sm_90``), else the current CUDA
    device's (CuPy imported here)."""

    def __init__(self, arch: str | None = None) -> None:
        import cupy
        from cupy.cuda import nvrtc

        self.arch = arch or f"sm_{cupy.cuda.Device().compute_capability}"
        self.version = ".".join(map(str, nvrtc.getVersion()))
        # the CUDA toolkit's include folder (cuda_fp16.h), where CuPy finds one
        root = cupy.cuda.get_cuda_path()
        include = os.path.join(root, "include") if root else ""
        self.include = include if include and os.path.isdir(include) else None

    def compile(self, source: str, name: str, options: Sequence[str], entry: str
                ) -> tuple[bytes, str]:
        """NVRTC's cubin and lowered name; a :class:`CompilationError` with its log."""
        from cupy.cuda import nvrtc

        flags = [*options, *([f"-I{self.include}"] if self.include else [])]
        program = nvrtc.createProgram(source, name, (), ())
        try:
            nvrtc.addNameExpression(program, entry)
            try:
                nvrtc.compileProgram(program, flags)
            except nvrtc.NVRTCError as err:
                raise CompilationError(log_reason(nvrtc.getProgramLog(program) or
                                                  str(err))) from None
            return nvrtc.getCUBIN(program), nvrtc.getLoweredName(program, entry)
        finally:
            nvrtc.destroyProgram(program)


class CudaLaunch:
    """Launch ``entry`` (or the ``template`` instantiation) of the CUDA file ``source``
    with the tensors and scalars ``args`` names, a config's grid of blocks in up to three
    dimensions (:func:`launch_dims`), on torch's current stream; compiled per config's
    defines, and with ``options`` (NVRTC options every compile adds, Kernel Tuner's
    ``compiler_options``), on first use (cached on disk) and kept loaded for the process.
    ``shared_memory``: the dynamic shared memory each block is launched with, in bytes,
    an expression of the config (:func:`shared_memory_env`: Kernel Tuner's
    ``smem_args``); none without it.  ``constant_memory``: for each ``__constant__`` symbol
    of the source by name, its data (a numpy array or torch tensor), or a function of the
    config giving it (Kernel Tuner's ``cmem_args``), copied into the loaded module before
    the config's first launch (:meth:`constants`, :func:`write_constants`).  ``module``
    names the module that declares it, whose source identifies the kernel's version in a
    study."""

    needs_gpu = True
    #: a CUDA C block: any count of threads a launch takes, not warps
    launch_shape = THREAD_BLOCKS

    def __init__(self, source: Path, entry: str, args: Sequence[str],
                 template: str | None, module: str, options: Sequence[str] = (),
                 shared_memory: str | None = None,
                 constant_memory: Mapping[str, Any] | None = None) -> None:
        self.source, self.entry, self.template = source, entry, template
        self.raw_args = tuple(args)
        self.options = tuple(options)
        self.shared_memory = shared_memory
        self.constant_memory = dict(constant_memory or {})
        #: each config's :meth:`constants`, asked once, and the last config asked
        self._constants: dict[tuple[Any, ...], Constants] = {}
        self._constants_last: tuple[Config | None, Constants | None] = (None, None)
        #: what reads and writes a loaded module's symbols (a stand-in in tests)
        self.symbols: Any = DriverGlobals
        #: the (config's defines, bytes) whose dynamic shared memory a launch has checked
        #: against the GPU's limit, and claimed past the 48 KiB a block has unasked
        self._claimed: set[tuple[tuple[str, tuple[str, ...]], int]] = set()
        self.__name__ = entry
        self.__module__ = module
        #: the compiler (``None``: NVRTC, made on first use) and the loaded functions
        self.compiler: Any = None
        self.loaded: dict[tuple[str, tuple[str, ...]], Any] = {}
        #: the files as last read, each one's (mtime, size) just after (``None``: one
        #: was written too near the read for them to tell a later edit), and the
        #: :meth:`kernel_source` of them
        self._read: tuple[dict[Path, bytes], dict[Path, tuple[int, int]] | None] | None = None
        #: where the files last read include a file that was not there (:meth:`absent`)
        self._absent: tuple[Path, ...] = ()
        self._kernel_source: str | None = None

    @classmethod
    def of_options(cls, options: Mapping[str, str], module: str,
                   constant_memory: Mapping[str, Any] | None = None) -> CudaLaunch:
        """The launch a space's ``cuda`` kernel options declare (``source``, ``entry``,
        ``args``, ``template``, ``nvrtc_options``, ``shared_memory``), declared in
        ``module``; ``constant_memory``: the functions its ``constant_memory`` option
        names, each by its symbol (none given: the symbols alone, each with no data, what
        a lookup or an export reads of them)."""
        if constant_memory is None:
            constant_memory = dict.fromkeys(json.loads(options.get("constant_memory", "{}")))
        return cls(Path(options["source"]), options["entry"],
                   json.loads(options.get("args", "[]")), options.get("template"), module,
                   json.loads(options.get("nvrtc_options", "[]")),
                   options.get("shared_memory"), constant_memory)

    def recorded(self) -> dict[str, Any]:
        """What a study records of the launch (its ``cuda_launch``): what compiled and
        launched each config beside the config itself, so that an export of its winners
        (a C header) says it without importing the module that declares the kernel; the
        ``__constant__`` symbols whose data it sets, where it sets any."""
        recorded = {"source": str(self.source), "entry": self.entry,
                    "template": self.template, "nvrtc_options": list(self.options),
                    "shared_memory": self.shared_memory}
        if self.constant_memory:
            recorded["constant_memory"] = list(self.constant_memory)
        return recorded

    @classmethod
    def of_record(cls, record: Mapping[str, Any]) -> CudaLaunch | None:
        """The launch a study recorded (:meth:`recorded`), or ``None`` where the record is
        not one (a study file edited by hand)."""
        text = (str, type(None))
        try:
            fields = (record["source"], record["entry"], record["template"],
                      record["nvrtc_options"], record["shared_memory"])
        except (KeyError, TypeError):
            return None
        source, entry, template, options, shared = fields
        symbols = record.get("constant_memory", [])
        if not (isinstance(source, str) and isinstance(entry, str) and
                isinstance(template, text) and isinstance(shared, text) and
                isinstance(options, list) and all(isinstance(o, str) for o in options) and
                isinstance(symbols, list) and all(isinstance(s, str) for s in symbols)):
            return None
        return cls(Path(source), entry, (), template, "", options, shared,
                   dict.fromkeys(symbols))

    def files(self) -> dict[Path, bytes]:
        """The source's and its includes' bytes (:func:`~sweeper.kernels._cuda_spec.
        sources`), read once and kept while each file's modification time and size stay
        as they were: an edit (a later run, plan or compile of this launch) reads them
        again; an ``OSError`` where the source cannot be read.  They are kept only where
        every file was :func:`~sweeper.kernels._watch.settled` when the read began: an edit
        that lands between the read and the stat after it, or a rewrite of the same size
        within a timestamp's tick, would leave a stamp that no later edit of that kind
        changes, so such files are read again at each ask (the same bytes keep their
        :meth:`kernel_source`).  A file written where one of them includes a file that was
        not there (:meth:`absent`) is an edit too."""
        if self._read is not None:
            kept, stamps = self._read
            try:
                if stamps is not None and _stamps(kept) == stamps and \
                        not any(path.exists() for path in self._absent):
                    return kept
            except OSError:
                pass
        began = time.time_ns()
        files = sources(self.source)
        self._absent = absent_includes(files)
        try:
            stamps = _stamps(files)
        except OSError:                 # gone since the read: read again at the next ask
            stamps = None
        if stamps is not None and not settled(stamps.values(), began):
            stamps = None
        if self._read is not None and self._read[0] == files:
            files = self._read[0]
        else:
            self._kernel_source = None
        self._read = (files, stamps)
        return files

    def absent(self) -> tuple[Path, ...]:
        """Where the files :meth:`files` reads include a file that is not
        there (not written yet, or a system header): one written there later is included
        from then on, so a sweep watches these paths too."""
        self.files()
        return self._absent

    def args_problem(self, tensors: Sequence[str], dims: Sequence[str], meta: Sequence[str]
                     ) -> str | None:
        """Why the arguments do not fit a kernel of these tensors, dimensions and
        meta-parameters, or ``None``: one names none of them and is no number, is typed
        wrong, or a tensor is not passed.  Asked as the kernel is declared, in a space or
        by :func:`sweeper.kernel`, so the mistake never waits for a launch."""
        parsed = parse_args(self.raw_args, tensors, (*dims, *meta))
        if isinstance(parsed, str):
            return parsed
        unpassed = [t for t in tensors if t not in {a.name for a in parsed}]
        return None if not unpassed else (f"tensor {unpassed[0]!r} is not passed to the "
                                          f"entry; args: {', '.join(self.raw_args)}")

    def meta_problem(self, meta: Sequence[str]) -> tuple[str, str] | None:
        """The first of the meta-parameters ``meta`` that no axis may be named, and why
        (:func:`~sweeper.kernels._cuda_spec.meta_problem`: ``block_size_x`` and ``DTYPE``,
        which every compile defines itself), or ``None``."""
        return next(((name, why) for name in meta if (why := meta_problem(name)) is not None),
                    None)

    def values_problem(self, values: Mapping[str, Sequence[int | str]]) -> tuple[str, str] | None:
        """``("args", why)`` where an integer argument takes a value its type does not
        hold at some of a space's ``values`` (each axis's constant values, ``itemsize``'s,
        the dtypes' names for a ``DTYPE`` argument), or a literal does
        (:func:`~sweeper.kernels._cuda_spec.int_overflow`)."""
        found = int_overflow(self.raw_args, values)
        return None if found is None else ("args", found[1])

    @functools.cached_property
    def shared_expr(self) -> Expr | None:
        """The ``shared_memory`` expression parsed (``None``: the launch has none); an
        :class:`~sweeper.errors.ExpressionError` where it is none
        (:meth:`shared_memory_problem` says so as the kernel is declared)."""
        return None if self.shared_memory is None else parse(str(self.shared_memory))

    def shared_memory_problem(self, dims: Sequence[str], meta: Sequence[str]
                              ) -> str | None:
        """Why the ``shared_memory`` expression cannot give a config's bytes, or ``None``:
        it does not parse, or reads a name that is none of the dimensions ``dims``,
        ``itemsize``, the meta-parameters ``meta``, the block (``block``, Kernel Tuner's
        ``block_size_x``) or its extents in y and z (``block_size_y``, ``block_size_z``:
        1 where not swept).  Asked as the kernel is declared, so a misspelt name never
        waits for a launch."""
        try:
            expr = self.shared_expr
        except ExpressionError as err:
            return str(err)
        return None if expr is None else \
            unknown_name(expr, [*dims, "itemsize", *SHARED_LAUNCH_NAMES, *meta])

    def shared_bytes(self, config: Config) -> int:
        """The dynamic shared memory ``config`` launches each block with, in bytes (0
        without a ``shared_memory`` expression); a ``ValueError`` where the expression
        gives no count of bytes there (a negative one, a division by zero)."""
        expr = self.shared_expr
        if expr is None:
            return 0
        try:
            value = evaluate(expr, shared_memory_env(config))
        except ExpressionError as err:
            raise ValueError(f"shared_memory: {err}") from None
        if type(value) is not int or value < 0:
            raise ValueError(f"shared_memory {expr.text!r} gives {value} bytes at this "
                             "config; allowed: a count of bytes, 0 or more")
        return value

    def tuned_launch(self, config: Config) -> TunedLaunch:
        """``config`` as a program of its own compiles and launches it: the defines and
        options each compile of it took, its grid and blocks and its shared memory, as
        :meth:`__call__` launches it (``ValueError`` where its ``shared_memory`` gives no
        bytes there)."""
        name, options = _defines(self, config)
        grid, block = launch_dims(config)
        defines = {}
        for option in options[:len(options) - len(self.options)]:       # -DNAME=value
            define, _, value = option.removeprefix("-D").partition("=")
            defines[define] = value
        folder = self.source.resolve().parent
        return TunedLaunch(name, self.source, (*options, f"-I{folder}", "-std=c++17"),
                           defines, grid, block, self.shared_bytes(config),
                           tuple(self.constant_memory))

    @property
    def reads(self) -> frozenset[str]:
        """The axes the arguments' values come from: each name passed, and ``footprint``
        where ``n`` is (a footprint alone gives ``n``)."""
        names = {Arg.read(a).name for a in self.raw_args}
        return frozenset(names | ({"footprint"} if "n" in names else set()))

    def config_problem(self, config: Config) -> tuple[str, str] | None:
        """The argument that takes a value its integer type does not hold at ``config``
        (its problem's dimensions, ``n``, its meta-parameters), and why, or ``None``: what
        a run asks of every config where an axis is an expression that
        :meth:`values_problem` could not see."""
        values: dict[str, list[int | str]] = {
            "n": [config.problem.n], **{k: [v] for k, v in config.problem.dims},
            **{k: [v] for k, v in config.meta.items()}, "dtype": [config.problem.dtype]}
        return int_overflow(self.raw_args, values, "at this config")

    def kernel_source(self) -> str:
        """The source and every file it includes (:meth:`files`), the entry, the
        arguments, and the NVRTC options, shared memory and the ``__constant__`` symbols
        set where it has them: what a study's source hash covers (a kernel without them
        hashes as it did before they were taken)."""
        files = self.files()
        if self._kernel_source is None:
            given = f", nvrtc_options {list(self.options)}" if self.options else ""
            if self.shared_memory is not None:
                given += f", shared_memory {self.shared_memory!r}"
            if self.constant_memory:
                given += f", constant_memory {list(self.constant_memory)}"
            self._kernel_source = "".join(
                f"// {p.name}\n{data.decode(errors='replace')}\n" for p, data in files.items()
            ) + f"// entry {self.template or self.entry}, args {list(self.raw_args)}{given}\n"
        return self._kernel_source

    def constants(self, config: Config) -> Constants | None:
        """The data ``constant_memory`` gives each symbol at ``config`` (:func:`constants_of`),
        each function called once a config (its grid, block, meta-parameters and problem),
        never at each launch; ``None`` where the launch sets no symbol.  Once a module
        holding the data is loaded the bytes are dropped, the digest kept (no data
        where :meth:`__call__` has launched the config), so a long sweep holds a digest a
        config, not up to 64 KiB."""
        if not self.constant_memory:
            return None
        last, found = self._constants_last
        if config is last and found is not None:
            return found
        key = _config_key(config)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = constants_of(self.constant_memory, config)
        self._constants_last = (config, found)
        return found

    def _held(self, config: Config, constants: Constants) -> None:
        """``config``'s data is in a loaded module: keep its digest alone."""
        kept = Constants(constants.digest, {})
        self._constants[_config_key(config)] = kept
        self._constants_last = (config, kept)

    def __call__(self, config: Config, **tensors: Any) -> None:
        """Compile (or find) the function for ``config``'s defines and launch it on
        torch's current stream, its grid and blocks :func:`launch_dims`'s, each block
        with the dynamic shared memory :meth:`shared_bytes` gives; more than the GPU
        gives a block is :class:`OutOfResources`, raised before the launch.  Where the
        launch sets ``__constant__`` symbols, each set of their data (:meth:`constants`)
        has a module loaded of its own, written on that stream as it is loaded, before its
        first launch (:func:`write_constants`): a later launch of the config copies
        nothing, so no timed launch (nor a CUDA graph) holds a copy."""
        meta, dims = dict(config.meta), {"n": config.problem.n, **dict(config.problem.dims)}
        shared = self.shared_bytes(config)
        defined = _defines(self, config)
        constants = self.constants(config)
        key = defined if constants is None else \
            (defined[0], (*defined[1], f"constant_memory:{constants.digest}"))
        built = None
        if key not in self.loaded:
            # the tensors checked before anything compiles; once a config, not each launch
            problem = self.args_problem(list(tensors), list(dims), list(meta))
            if problem is not None:
                raise ValueError(f"args: {problem}")
            built = precompile(self, config)
            _on_gpu(tensors)
        args = parse_args(self.raw_args, list(tensors), (*dims, *meta))
        if isinstance(args, str):                       # an argument is unknown
            raise ValueError(args)
        values = [_value(a.name, a.scalar_type(config.problem.dtype), tensors,
                         {**dims, **meta}) for a in args]
        import cupy
        import torch

        device = next(iter(tensors.values())).device
        gpu = cupy.cuda.Device(device.index or 0)
        stream = torch.cuda.current_stream(device).cuda_stream
        with gpu, cupy.cuda.ExternalStream(stream):
            if built is not None:
                module, function = _load(built.cubin, built.lowered)
                if constants is not None:       # on the stream, ahead of every launch
                    write_constants(self.symbols(module), constants, stream)
                self.loaded[key] = function
            function = self.loaded[key]
            if constants is not None and constants.data:
                self._held(config, constants)
            if shared and (key, shared) not in self._claimed:
                claim_shared_memory(DriverAttributes(function), shared,
                                    gpu.attributes["MaxSharedMemoryPerBlockOptin"],
                                    str(self.shared_memory))
                self._claimed.add((key, shared))
            function(*launch_dims(config), tuple(values), shared_mem=shared)


def precompile(cuda: CudaLaunch, config: Config) -> Compiled:
    """``config``'s function compiled (or found) in the disk cache, loaded nowhere: what a
    launch does first, and all a compile worker does (its compiler set for a named
    architecture; NVRTC for the current device where none is set)."""
    if cuda.compiler is None:
        cuda.compiler = NvrtcCompiler()
    entry, options = _defines(cuda, config)
    return compiled(cuda.source, entry, options, cuda.compiler, files=cuda.files())


def launch_dims(config: Config) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The grid and the block ``config`` launches, each in x, y and z: ``(grid, grid_y,
    grid_z)`` blocks of ``(block, block_size_y, block_size_z)`` threads, Kernel Tuner's
    ``block_size_y`` and ``block_size_z`` read from the config's meta-parameters (1 where
    the space sweeps neither, as each compile then defines them), so the block a kernel
    is compiled for is the block it runs in."""
    by, bz = (int(config.meta.get(name, 1)) for name in EXTENT_DEFINES)
    return (config.grid, config.grid_y, config.grid_z), (config.block, by, bz)


#: The names a ``shared_memory`` expression reads of the launch: the block, as sweeper and
#: as Kernel Tuner name it, and its extents in y and z.
SHARED_LAUNCH_NAMES = ("block", BLOCK_DEFINE, *EXTENT_DEFINES)


def shared_memory_env(config: Config) -> dict[str, int]:
    """What a ``shared_memory`` expression reads at ``config``: the problem's dimensions
    (and ``n``), ``itemsize``, the meta-parameters, the block as ``block`` and
    ``block_size_x``, and ``block_size_y`` and ``block_size_z`` (1 where not swept, as
    each compile defines them): the names Kernel Tuner's ``smem_args`` size reads of a
    config's parameters."""
    problem = config.problem
    env = {**dict(problem.dims), "n": problem.n, "itemsize": problem.itemsize,
           **{name: 1 for name in EXTENT_DEFINES}, **dict(config.meta)}
    env.update(block=config.block, **{BLOCK_DEFINE: config.block})
    return env


class DriverAttributes:
    """A loaded CuPy function's shared memory as :func:`claim_shared_memory` reads and
    sets it, through the CUDA driver (``cuFuncGetAttribute``, ``cuFuncSetAttribute``):
    the ``Function`` a module gives has no such properties, only ``RawKernel`` has."""

    #: ``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`` and ``..._MAX_DYNAMIC_SHARED_SIZE_BYTES``
    #: (the driver API's values)
    STATIC, MAX_DYNAMIC = 1, 8

    def __init__(self, function: Any) -> None:
        self.ptr = int(function.ptr)

    @property
    def shared_size_bytes(self) -> int:
        """The function's static shared memory, in bytes a block."""
        from cupy.cuda import driver
        return int(driver.funcGetAttribute(self.STATIC, self.ptr))

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """The most dynamic shared memory a launch of the function may give a block, in
        bytes (48 KiB less its static until raised)."""
        from cupy.cuda import driver
        return int(driver.funcGetAttribute(self.MAX_DYNAMIC, self.ptr))

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, size: int) -> None:
        """Raise that maximum to ``size``, as ``cudaFuncSetAttribute`` does."""
        from cupy.cuda import driver
        driver.funcSetAttribute(self.ptr, self.MAX_DYNAMIC, int(size))


def claim_shared_memory(function: Any, size: int, limit: int, written: str) -> None:
    """Let ``function`` (a loaded CUDA function: its ``shared_size_bytes`` static, its
    ``max_dynamic_shared_size_bytes`` settable) launch blocks of ``size`` bytes of
    dynamic shared memory, ``limit`` being the most a block of the GPU may have in all
    (``MaxSharedMemoryPerBlockOptin``): past the 48 KiB a block has unasked, its maximum
    is raised to ``size``, as a CUDA program asks with ``cudaFuncSetAttribute``; past
    ``limit`` with its static memory, :class:`OutOfResources` says so (``written``: the
    expression, as the space wrote it), before anything is launched."""
    static = int(function.shared_size_bytes)
    if static + size > limit:
        asked = f"{size} B ({format_size(size)}) of dynamic shared memory"
        beside = f" beside the kernel's {static} B static" if static else ""
        raise OutOfResources(
            f"shared_memory {written!r} asks each block for {asked}{beside}, more than the "
            f"{limit} B ({format_size(limit)}) a block of this GPU may have "
            f"(MaxSharedMemoryPerBlockOptin); allowed: configs whose shared_memory is at "
            f"most {max(limit - static, 0)} B")
    if size > int(function.max_dynamic_shared_size_bytes):
        function.max_dynamic_shared_size_bytes = size


def _stamps(files: Mapping[Path, bytes]) -> dict[Path, tuple[int, int]]:
    """Each file's :func:`stamp`."""
    return {p: stamp(p) for p in files}


def _defines(cuda: CudaLaunch, config: Config) -> tuple[str, tuple[str, ...]]:
    """The entry to look up (a template's instantiation) and the options it compiles
    with: NVRTC's ``-D`` defines, then the launch's own options (both part of the cache
    key)."""
    meta = dict(config.meta)
    options = nvrtc_options(meta, config.block, config.problem.dtype, cuda.template)
    return (instantiation(cuda.template, meta) if cuda.template else cuda.entry), \
        (*options, *cuda.options)


def _config_key(config: Config) -> tuple[Any, ...]:
    """What tells one config from another to a ``constant_memory`` function: its problem,
    grid, block and meta-parameters."""
    return (config.problem, config.grid, config.grid_y, config.grid_z, config.block,
            tuple(sorted(config.meta.items())))


def _on_gpu(tensors: Mapping[str, Any]) -> None:
    """A ``ValueError`` where a tensor is not on a CUDA device (the kernel cannot run
    elsewhere)."""
    off = [n for n, t in tensors.items() if not t.is_cuda]
    if off:
        raise ValueError(f"the cuda kernel runs on a CUDA GPU; tensor {off[0]!r} is on "
                         f"{tensors[off[0]].device}")


def _load(cubin: bytes, lowered: str) -> tuple[Any, Any]:
    """The module loaded by CuPy from the checked cubin's bytes, and its function
    ``lowered``."""
    from cupy.cuda import function

    module = function.Module()          # what cupy.RawModule(path=...) loads a file into
    module.load(cubin)
    return module, module.get_function(lowered)


class Constants(NamedTuple):
    """The data a config's ``constant_memory`` gives each symbol, as the bytes copied, and
    their digest, which tells one set of data from another (a module is loaded for each,
    so each is written once)."""

    digest: str
    data: dict[str, bytes]


def host_bytes(value: Any) -> bytes | None:
    """``value``'s bytes as a C array of its element type holds them: a numpy array or
    scalar (not of Python objects), or a torch tensor (copied to the host where it is on
    a GPU); ``None`` for any other value (a list, a float: no element type to say how
    many bytes each is)."""
    kind = type(value).__module__.split(".")[0]
    if kind == "numpy" and getattr(getattr(value, "dtype", None), "kind", "O") != "O":
        import numpy

        return bytes(numpy.ascontiguousarray(value).tobytes())
    if kind == "torch" and hasattr(value, "data_ptr"):
        import torch

        flat = value.detach().to("cpu").contiguous().reshape(-1)
        return bytes(flat.view(torch.uint8).numpy().tobytes()) if flat.numel() else b""
    return None


#: What a ``constant_memory`` function must return, as a failed trial says.
CONSTANT_DATA = ("a numpy array or torch tensor, the data copied into the __constant__ "
                 "symbol")


def constants_of(sources: Mapping[str, Any], config: Config) -> Constants:
    """Each symbol's data at ``config``: the array ``sources`` gives it, or what its
    function returns called with the config, as bytes (:func:`host_bytes`);
    :class:`~sweeper.errors.ConstantMemoryFailed` where a function raises (at the user's
    line) or returns no array (saying where it is defined)."""
    data: dict[str, bytes] = {}
    for name, source in sources.items():
        value = source
        what = f"the kernel's constant_memory {name}"
        if callable(source):
            what += f" {getattr(source, '__name__', type(source).__name__)}"
            value = _asked(what, source, ConstantMemoryFailed, config)
        found = host_bytes(value)
        if found is None:
            raise ConstantMemoryFailed(_returned(source, what, value, CONSTANT_DATA)
                                       if callable(source) else
                                       f"{what} is {type(value).__name__}; allowed: "
                                       f"{CONSTANT_DATA}")
        data[name] = found
    digest = hashlib.sha256()
    for name, found in data.items():
        digest.update(f"{name}\0{len(found)}\0".encode() + found)
    return Constants(digest.hexdigest(), data)


def write_constants(symbols: Any, constants: Constants, stream: int) -> None:
    """Copy each symbol's data into the loaded module whose symbols ``symbols`` reads and
    writes (``find(name)``: the symbol's device address and size in bytes, ``None``
    where the module has none; ``write(address, data, stream)``: the copy) on
    ``stream``, ahead of the launches made on it; every symbol is looked up first, so
    that :class:`~sweeper.errors.ConstantMemoryFailed`, where the module declares no
    such symbol or its data is larger than the symbol, leaves nothing copied."""
    found = {}
    for name, data in constants.data.items():
        where = symbols.find(name)
        if where is None:
            raise ConstantMemoryFailed(
                f"constant_memory {name}: the compiled kernel has no symbol {name!r}; "
                f"allowed: a __constant__ variable the source declares outside any "
                f"namespace (__constant__ float {name}[16];)")
        if len(data) > where[1]:
            raise ConstantMemoryFailed(
                f"constant_memory {name}: the data is {len(data)} B, more than the "
                f"{where[1]} B the symbol {name} holds; allowed: at most {where[1]} B")
        found[name] = where[0]
    for name, address in found.items():
        symbols.write(address, constants.data[name], stream)


#: ``CUDA_ERROR_NOT_FOUND``, what the driver says of a symbol a module does not have.
CUDA_ERROR_NOT_FOUND = 500


class DriverGlobals:
    """A loaded CuPy module's global symbols as :func:`write_constants` reads and writes
    them, through the CUDA driver: ``cuModuleGetGlobal`` gives a symbol's address and
    size (CuPy's ``get_global`` gives no size), ``cuMemcpyHtoDAsync`` copies on a
    stream."""

    def __init__(self, module: Any) -> None:
        self.handle = int(module.ptr)

    @staticmethod
    @functools.cache
    def driver() -> Any:
        """The CUDA driver library, loaded once (CuPy has loaded it already)."""
        import ctypes

        return ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")

    def find(self, name: str) -> tuple[int, int] | None:
        """The symbol's device address and size in bytes, ``None`` where the module has no
        symbol of that name."""
        import ctypes

        address, size = ctypes.c_uint64(), ctypes.c_size_t()
        status = self.driver().cuModuleGetGlobal_v2(
            ctypes.byref(address), ctypes.byref(size), ctypes.c_void_p(self.handle),
            name.encode())
        if status == CUDA_ERROR_NOT_FOUND:
            return None
        if status:
            raise RuntimeError(f"cuModuleGetGlobal({name!r}) failed: CUDA error {status}")
        return address.value, size.value

    def write(self, address: int, data: bytes, stream: int) -> None:
        """Copy ``data`` from the host to ``address`` on ``stream`` (the driver stages the
        bytes before it returns)."""
        import ctypes

        status = self.driver().cuMemcpyHtoDAsync_v2(
            ctypes.c_uint64(address), ctypes.c_char_p(data), ctypes.c_size_t(len(data)),
            ctypes.c_void_p(stream))
        if status:
            raise RuntimeError(f"cuMemcpyHtoDAsync of {len(data)} B failed: CUDA error "
                               f"{status}")


def _value(name: str, kind: str, tensors: Mapping[str, Any], scalars: Mapping[str, int]
           ) -> Any:
    """Argument ``name`` as CuPy passes it: a tensor's device pointer, else the scalar
    (a dimension, meta-parameter or number) as a numpy scalar of ``kind``."""
    import numpy

    if name in tensors:
        return numpy.uint64(tensors[name].data_ptr())
    value = scalars[name] if name in scalars else float(name)
    if kind == "bfloat16":
        import torch

        bits = torch.tensor(float(value), dtype=torch.bfloat16).view(torch.int16).item()
        return numpy.int16(bits)
    numpy_type = getattr(numpy, kind)        # every scalar type but bfloat16 has numpy's name
    return numpy_type(value if "float" in kind else int(value))
