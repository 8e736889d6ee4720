"""What a kernel must offer to be swept.

Built-ins and user kernels (``package.module:attr``) go through this one
interface.  A kernel declares its problem dimensions (:class:`Dim`), allocates its
buffers once per problem (dtype × dimensions),
launches with a resolved :class:`~sweeper.space.Config`, and checks its own
output against a reference on fresh random data.
"""

from __future__ import annotations

import abc
import contextlib
import enum
import hashlib
import inspect
import math
import numbers
import os
import reprlib
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from sweeper.core import DECLARED_ONLY, DTYPES, WARP_BLOCKS, Config, Dim, LaunchShape, Problem
from sweeper.errors import SweeperError, defined_at
from sweeper.kernels._guess import streaming

if TYPE_CHECKING:      # a kernel's declaration is read without importing torch
    import torch

    from sweeper.core import DeviceFacts


class Headline(str, enum.Enum):
    """The rate reports lead with for a kernel (the search still maximizes GB/s)."""

    GBPS = "gbps"          # bytes_moved / median: for kernels bound by memory bandwidth
    TFLOPS = "tflops"      # flops / median: for compute-bound kernels such as matmul

    @property
    def unit(self) -> str:
        """The rate's unit as reports print it: ``GB/s`` or ``TFLOP/s``."""
        return {"gbps": "GB/s", "tflops": "TFLOP/s"}[self.value]


@dataclass(frozen=True)
class MetaParam:
    """A kernel meta-parameter (a Triton constexpr) that a space may sweep."""

    default: int
    pow2: bool = False
    doc: str = ""
    #: The value counts elements of the problem's dtype (not tiles or stages): a winner
    #: found at another dtype is carried over at the same bytes (``auto``'s priors).
    elements: bool = False
    #: The only values allowed (a switch: ``(0, 1)``); empty: any integer from ``least``.
    choices: tuple[int, ...] = ()
    #: The least value where there are no ``choices``: 1, or 0 where 0 means something
    #: (a CUDA define such as ``-DUSE_SHARED=0``).
    least: int = 1


@dataclass
class Buffers:
    """The tensors of one problem, allocated once and reused by every trial."""

    problem: Problem
    tensors: dict[str, torch.Tensor]

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]


#: What a kernel's source hash is (:func:`hash_of_source`).
SOURCE_HASH = "[0-9a-f]{16}"


def hash_of_source(source: str) -> str:
    """A kernel's source hash, as a study records it (:meth:`Kernel.source_hash`): 16 hex
    digits of the sha256 of ``source``."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def fill_random(tensor: torch.Tensor, generator: torch.Generator) -> None:
    """Uniform in [-1, 1) for floats, in [-100, 100) for signed integers, [0, 100) for
    unsigned ones, both values for bools: small values, so that no copy, sum or product
    of a few of them reaches :func:`poison_value`."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        tensor.uniform_(-1.0, 1.0, generator=generator)
    elif str(tensor.dtype) == "torch.bool":
        tensor.random_(0, 2, generator=generator)
    else:
        low = 0 if str(tensor.dtype).startswith("torch.uint") else -100
        tensor.random_(low, 100, generator=generator)


def poison_value(dtype: torch.dtype) -> float | int | bool:
    """The value every output is filled with before a launch, so that an element the
    kernel never wrote fails its check.  It must be one a wrong kernel cannot produce by
    chance: NaN for floats (it compares equal to nothing, not even itself, so no reference
    can match it); for integers the end of the range farthest from :func:`fill_random`'s
    values (the most negative, the largest unsigned): no copy, sum or product of a few of
    those reaches it, and unlike 0 or -1 it is no value that uninitialised memory or an
    off-by-one tends to hold.  (In int8 a wrapped sum can reach -128 by chance; one such
    element in a block the kernel skipped still leaves the others wrong.)  True for
    bools, the only option left: a kernel that writes nothing is caught where the
    reference is False."""
    import torch

    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return int(info.max if info.min == 0 else info.min)


def fill_poison(tensor: torch.Tensor) -> None:
    """Fill ``tensor`` with :func:`poison_value`: what every kernel does to its outputs."""
    tensor.fill_(poison_value(tensor.dtype))


def mismatch(got: torch.Tensor, expected: torch.Tensor, what: str,
             detail: Callable[[int], str] = lambda first: "", *,
             tolerance: tuple[float, float] | None = None) -> str | None:
    """``None`` when ``got`` equals ``expected`` (bit for bit, or within ``tolerance``'s
    (rtol, atol) for a floating ``got``); else how many elements differ from ``what``
    (a NaN always differs, so the poison does) and the first of them: its index (a tuple
    for a tensor of several dimensions), ``detail`` of its flat index, both values.
    Every built-in and short kernel's check says a wrong answer through this."""
    import torch

    floating = got.dtype.is_floating_point or got.dtype.is_complex
    if (tolerance is None or not floating) and got.dtype == expected.dtype and \
            torch.equal(got, expected):   # one read of each, one sync: the usual outcome
        return None                       # (NaN equals nothing, so the poison fails it)
    if tolerance is not None and floating:
        rtol, atol = tolerance
        common = torch.promote_types(got.dtype, expected.dtype)
        wrong = ~torch.isclose(got.to(common), expected.to(common), rtol=rtol, atol=atol)
        within = f" at rtol {rtol:g}, atol {atol:g} for {str(got.dtype)[6:]}"
    else:
        wrong = got != expected.to(got.dtype)
        if floating:
            wrong |= torch.isnan(got)
        within = "" if tolerance is None else f", compared exactly in {str(got.dtype)[6:]}"
    bad = int(wrong.sum())
    if bad == 0:
        return None
    first = int(wrong.flatten().nonzero()[0, 0])
    index: Any = first if got.dim() <= 1 else \
        tuple(int(i) for i in torch.unravel_index(torch.tensor(first), got.shape))
    return (f"{bad} of {got.numel()} elements differ from {what}{within} (first at index "
            f"{index}{detail(first)}: {got.flatten()[first].item()!r} != "
            f"{expected.flatten()[first].item()!r})")


def elementwise_block(verb: str) -> Mapping[str, MetaParam]:
    """The one meta-parameter of an elementwise grid-stride kernel: ``BLOCK``, the
    elements each program ``verb`` per step (a power of two, 1024 unless swept)."""
    return {"BLOCK": MetaParam(default=1024, pow2=True, elements=True,
                               doc=f"elements each program {verb} per step")}


#: The largest int32: Triton computes program ids, and offsets built from them, in int32
#: unless a kernel widens them, and CUDA takes no larger grid.  An offset past it wraps
#: negative, its mask still lets it through, and the load or store lands outside its buffer.
INT32_MAX = 2**31 - 1
#: How each reason a kernel gives for not launching a config begins or reads, so that a
#: count of skipped configs names the kernel as their cause: an index that would wrap
#: (:meth:`Kernel.cannot_launch`), a problem its inputs cannot be made for, a config the
#: ``prune_configs_by`` of an autotuned kernel drops.
WRAPS = " in int32 and here it reaches "
ALLOCATING = "allocating the inputs: "
PRUNED = "pruned by the prune_configs_by of "


def wide_offsets(n: int, grid: int, block: int) -> bool:
    """Whether a grid-stride loop over ``n`` items (elements; a persistent kernel's rows)
    by ``grid`` programs of ``block`` items must count in int64: its counter reaches
    ``n - 1 + grid * block`` (the last start below ``n`` plus one stride), past
    :data:`INT32_MAX` here.  The built-ins take this as their ``WIDE`` constexpr, so a
    launch that fits int32 compiles to the very code it always did (the same PTX, read on
    an H200) and only one that does not pays for int64 counters and offsets."""
    return n - 1 + grid * block > INT32_MAX


class OptionError(SweeperError):
    """Options of ``kernel:`` that do not fit together: ``key`` names the one at fault."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class CountError(SweeperError):
    """A kernel's ``bytes_moved`` or ``flops`` returned something other than a number
    >= 0: its problem's configs fail with this message as their reason."""


def checked_count(what: str, value: object, counter: Callable[..., object]) -> int | float:
    """``value``, what the kernel's ``what`` (``bytes_moved`` or ``flops``), the function
    ``counter``, returned, if it is a number >= 0: a finite ``int`` or ``float`` (numpy's
    too; not a bool, a string or a tensor); else :class:`CountError`, naming what it
    returned and where ``counter`` is defined."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and math.isfinite(value) and float(value) >= 0:
        return cast("int | float", value)
    where = defined_at(counter)
    raise CountError(f"{where + ': ' if where else ''}the kernel's {what} returned "
                     f"{reprlib.repr(value)} ({type(value).__name__}); it must return a "
                     f"number >= 0 (an int or a finite float)")


class Kernel(abc.ABC):
    """A sweepable kernel.  Subclasses set the class attributes and five methods."""

    name: ClassVar[str]
    #: Constexprs a space may sweep, with defaults for when it does not.
    meta_params: ClassVar[Mapping[str, MetaParam]] = {}
    #: Values for the launch and problem axes a space leaves out (``footprint``: used
    #: where a space gives neither it nor the dimensions, if dimensions follow from it).
    defaults: ClassVar[Mapping[str, Any]] = {
        "grid": "cdiv(n, BLOCK)", "block": 128, "dtype": "float32", "footprint": "64MiB"}
    #: The problem's dimensions, in order: what each counts, its default and limits.
    #: A space sweeps them as axes; expressions and constraints read them by name.
    dims: ClassVar[Mapping[str, Dim]] = {"n": Dim("elements of each array")}
    #: The footprint in bytes, an expression over the dimensions and ``itemsize``: what
    #: reports name a problem by and read the copy ceiling at (each array's bytes for an
    #: elementwise kernel, the largest array's otherwise).
    footprint_bytes: ClassVar[str] = "n * itemsize"
    #: Each dimension from ``footprint`` and ``itemsize``, so that a space may give a
    #: footprint instead of the dimensions; empty: the dimensions must be given.
    dims_from_footprint: ClassVar[Mapping[str, str]] = {"n": "footprint // itemsize"}
    #: What a torch baseline of the same work is called in reports ("torch copy_").
    baseline_name: ClassVar[str | None] = None
    #: What reports show first: GB/s, or TFLOP/s for a compute-bound kernel.
    headline: ClassVar[Headline] = Headline.GBPS
    #: One line saying what the kernel computes, for ``sweeper kernels``; empty: the
    #: first line of the class's docstring stands in.
    summary: ClassVar[str] = ""
    #: Options a space gives with the kernel's name (``kernel: {name: ..., op: ...}``),
    #: option -> what it says; the kernel is constructed with them as keyword arguments.
    options: ClassVar[Mapping[str, str]] = {}
    #: Values for options a space may leave out; an option without one is required.
    option_defaults: ClassVar[Mapping[str, str]] = {}
    #: The dtypes a space may give it: all but the 8-bit floats, which need scaled inputs
    #: and an output of another dtype; a kernel that handles them lists them here.
    dtypes: ClassVar[tuple[str, ...]] = tuple(d for d in DTYPES if d not in DECLARED_ONLY)
    #: Options a space may leave out with no value standing in (the kernel does without).
    optional_options: ClassVar[frozenset[str]] = frozenset()
    #: Options whose value is an expression, which a space may give as a plain number
    #: (``shared_memory: 4096``, ``grid_y: 4``), read as its text, as the Python form
    #: takes one; any other option is text, a mapping or a list.
    number_options: ClassVar[frozenset[str]] = frozenset()
    #: The options that tell one kernel built from its space's options from another of
    #: the same name (``cuda``'s source and entry, ``torch-op``'s op): a tuning entry of
    #: it is named ``NAME:VALUE:...`` by them (:attr:`sweeper.tuning.TuningEntry.name`);
    #: none: the name alone tells the kernel.
    named_by: ClassVar[tuple[str, ...]] = ()
    #: The kernel runs on a CUDA GPU only (compiled CUDA C): a device that runs kernels
    #: elsewhere (the interpreter) refuses it before the first trial.
    needs_gpu: ClassVar[bool] = False
    #: The CUDA C file a user kernel's launch compiles (``sweeper.cuda``'s source,
    #: resolved), which its study records the includes of beside its source hash, so
    #: that one gone since is told from an edit (:func:`~sweeper.kernels.options_hashed`);
    #: ``None`` for any other kernel (the built-in ``cuda``'s is its ``source`` option).
    cuda_source: ClassVar[Path | None] = None
    #: Why the kernel's winners can feed no ``@triton.autotune``, where it launches no
    #: Triton function whose constexprs and warps they would set (``torch-op`` calls a
    #: library op): ``export --format triton`` refuses its study saying so.  Empty: they
    #: can (compiled CUDA C, which cannot either, says so by :attr:`needs_gpu`).
    no_triton_function: ClassVar[str] = ""
    #: The blocks its launch takes: a Triton program's ``num_warps`` × 32 threads; a
    #: launch of compiled CUDA C (``cuda``, ``sweeper.cuda``) declares its own.
    launch_shape: ClassVar[LaunchShape] = WARP_BLOCKS

    @classmethod
    def resolve_option(cls, key: str, value: str, folder: Path) -> str:
        """Option ``key`` as the kernel keeps it, given where the space that wrote it lies
        (``folder``): a kernel whose options name files makes them absolute here."""
        return value

    @classmethod
    def moved_option(cls, key: str, value: str, move: Callable[[str], str]) -> str:
        """Option ``key`` as :meth:`resolve_option` keeps it, each file or folder it names
        passed through ``move``: how a tuning file keeps them relative to its own folder,
        and reads them back, so that moved with them it still finds them; as it is where
        it names none."""
        return value

    @classmethod
    def hashed_files(cls, options: Mapping[str, str]) -> list[str]:
        """The files besides those ``options`` (as :meth:`resolve_option` keeps them) name
        that the source built from them reads now, and its hash so holds, spelled as
        :meth:`missing_files` reads them back: what a study records beside that hash, so
        that a file gone since is told from one the hash never held.  None here."""
        return []

    @classmethod
    def missing_files(cls, options: Mapping[str, str], hashed: Sequence[str] = ()
                      ) -> list[str]:
        """The files and folders that options kept as :meth:`resolve_option` keeps them (a
        tuning entry's) name, or that the source they build read when its hash was taken
        (``hashed``: :meth:`hashed_files` then), which are not there, each once: the
        source cannot be hashed from them to compare with that hash.  Here, those
        :meth:`moved_option` passes on."""
        named: list[str] = []

        def seen(path: str) -> str:
            if path not in named:
                named.append(path)
            return path

        for key, value in options.items():
            cls.moved_option(key, value, seen)
        return [path for path in named if not os.path.exists(path)]

    @classmethod
    def specialize(cls, options: Mapping[str, str], params: Any) -> type[Kernel]:
        """The declaration for these ``options`` and the space's ``params`` mapping: the
        class itself, or for a kernel that declares its meta-parameters and tensors in
        the space (``cuda``) a subclass declaring them; an :class:`OptionError` naming
        the option at fault where they do not fit together."""
        return cls

    @classmethod
    def option_problem(cls, key: str, value: str, *, imports: bool = False) -> str | None:
        """Why ``value`` is no valid option ``key`` (what is), or ``None``; called as the
        space is parsed.  Without ``imports`` (``plan``) it must import nothing; with it
        (``run``) it may import what the option names, to check that it exists.  A
        mistake in one entry of an option that is a mapping may be raised as an
        :class:`OptionError` whose ``key`` names the entry (``coeffs``), so that the
        space's error names that entry's line."""
        return None

    @abc.abstractmethod
    def allocate(self, problem: Problem, device: str) -> Buffers:
        """Allocate inputs and outputs for ``problem`` on ``device`` ("cuda" or "cpu")."""

    @abc.abstractmethod
    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        """Fill the inputs with fresh random data (never zeros: they hide bugs)."""

    @abc.abstractmethod
    def poison(self, buffers: Buffers) -> None:
        """Fill the outputs with values no correct run can leave behind."""

    @abc.abstractmethod
    def launch(self, buffers: Buffers, config: Config) -> None:
        """Launch once with ``config``; asynchronous on a GPU."""

    @abc.abstractmethod
    def check(self, buffers: Buffers) -> str | None:
        """Compare the outputs with the reference: ``None`` when right, else the reason."""

    def refusal(self, config: Config, device: str) -> str | None:
        """Why ``config`` cannot run on ``device`` ("cuda" or "cpu"), what can, or ``None``;
        asked before its buffers are allocated, a refusal is recorded as an invalid trial
        with this line (a GPU without the instructions a variant needs, a shape a variant
        cannot address)."""
        return None

    def int32_reach(self, config: Config) -> Mapping[str, int]:
        """The largest value each index expression a launch of ``config`` computes in int32
        reaches, keyed by the expression as the kernel's code writes it (``"rm * K + rk"``).
        :meth:`cannot_launch` refuses a launch where one passes :data:`INT32_MAX`, as its
        offsets would wrap and its masked loads and stores reach outside the buffers.
        Empty (the default): nothing a launch computes in int32 can pass it, as in a kernel
        that widens such offsets to int64 (:func:`wide_offsets`)."""
        return {}

    def cannot_launch(self, config: Config, device: str, *, ahead: bool = False
                      ) -> str | None:
        """Why ``config`` cannot be launched on ``device``, or ``None``: an int32 index
        past :data:`INT32_MAX` (:meth:`int32_reach`), else the kernel's own
        :meth:`refusal`.  What everything about to launch a config asks first.  With
        ``ahead``, what can be told before anything is allocated (:meth:`refusal_ahead`):
        what a sweep's coordinator asks before it compiles a config ahead of its trial.
        :class:`~sweeper.errors.RefusalFailed` where the user's rule asked failed: the
        config's trial fails, it is not turned down."""
        for expression, reach in self.int32_reach(config).items():
            if reach > INT32_MAX:
                return (f"{self.name} computes {expression}{WRAPS}"
                        f"{reach}, past {INT32_MAX}: its offsets would wrap and reach "
                        f"outside the buffers; allowed: a grid and problem that keep it <= "
                        f"{INT32_MAX}")
        return self.refusal_ahead(config, device) if ahead else self.refusal(config, device)

    def refusal_ahead(self, config: Config, device: str) -> str | None:
        """:meth:`refusal` where it allocates nothing on ``device`` to answer, else None
        (the worker asks :meth:`refusal` before it launches): the sweep's coordinator asks
        it, which holds no buffers of its own, and whose allocations on a GPU would take
        memory the workers measure in.  By default :meth:`refusal` itself."""
        return self.refusal(config, device)

    def bytes_moved(self, problem: Problem) -> int:
        """Fewest bytes one launch must move through device memory: a number >= 0 (an int
        or a finite float); anything else fails the problem's configs, saying so."""
        return 0

    def dram_bytes(self, problem: Problem) -> int:
        """Bytes one launch is expected to move through device memory, for ``sweeper
        plan``'s time: :meth:`bytes_moved`, unless the kernel's access order moves more (a
        built-in that reads a 32-byte sector for fewer bytes declares it as a class
        method, as ``copy-strided`` does)."""
        return self.bytes_moved(problem)

    def working_set(self, problem: Problem) -> int:
        """Bytes one launch touches: what must fit in L2 for it to be L2-resident."""
        return self.bytes_moved(problem)

    def flops(self, problem: Problem) -> int:
        """Floating-point operations one launch does, a number as :meth:`bytes_moved`."""
        return 0

    def interpreted_ops(self, config: Config) -> int | None:
        """Tensor operations the body of one launch of ``config`` runs in its loops, over
        all its programs, counted from its source: what a launch on the Triton
        interpreter costs in proportion to (each is a Python call there), for ``sweeper
        plan``.  ``None`` (the default): not counted; a built-in declares it as a class
        method, so the plan reads it without importing torch."""
        return None

    def model(self, config: Config, facts: DeviceFacts) -> float | None:
        """A first-principles guess of ``config``'s throughput on the GPU ``facts``
        describes (its ``sms`` and ``l2_bytes``), in any unit that is the same for every
        config of one study (the built-ins: relative to what the kernel can reach, or 1 /
        the launch's modelled time); never measured
        and never reported as a figure.  ``auto`` measures the best guess first, starts
        its search among the configs guessed within ``MODEL_POOL`` of the best guess, and
        takes the guess as its surrogate's prior mean, weighted by how well it matches the
        measurements (``_guess.py`` has the built-ins' models).  ``None`` (the default):
        no guess."""
        return None

    @classmethod
    def values_problem(cls, values: Mapping[str, Sequence[int | str]]) -> tuple[str, str] | None:
        """Why the declaration does not fit the space's values, as (the option at fault,
        what is wrong and what is allowed), or ``None``; asked once the space's axes are
        read, ``values`` holding each axis's constant values (those given as numbers),
        ``itemsize``'s (each dtype's) and ``dtype``'s (the dtypes' names): a declared
        model's setting below its least at some of them
        (:meth:`ShortKernel.values_problem`)."""
        return None

    def baseline(self, buffers: Buffers) -> None:
        """Do the same work with torch, for the report's "% of torch" column."""
        raise NotImplementedError

    def source(self) -> str:
        """The source whose hash identifies this kernel's version in a study: the class's,
        and the user's own modules its module imports
        (:func:`~sweeper.kernels._own_modules.own_source`), as first read in this process
        (:func:`as_loaded`); of a class in ``__main__`` (a notebook, a script), the code
        it reaches (:func:`_main_source`)."""
        if type(self).__module__ == "__main__":
            return _main_source(type(self))
        return as_loaded(type(self), lambda: inspect.getsource(type(self)) +
                         _own_source(type(self)))

    @classmethod
    def declared_source(cls) -> str | None:
        """:meth:`source` as the class alone tells it, constructing nothing, where it is
        declared with the class (a short kernel's, such as a ``cuda`` kernel's built from
        a space's options); ``None`` where only an instance tells it."""
        return None

    @classmethod
    def earlier_source(cls, spelled: Mapping[str, str]) -> str | None:
        """:meth:`declared_source` as an earlier sweeper wrote it, where that was other
        text for the same files: it spelled the options the class was built from as
        ``spelled`` (those options as it resolved them) gives them (``cuda``: a
        ``file.py:function`` reference, refuse or verify by its path, now by its file's name);
        ``None`` where no earlier sweeper wrote it otherwise."""
        return None

    def source_hash(self) -> str:
        """A short hash of :meth:`source` (:func:`hash_of_source`): a study records it, so
        results of an edited kernel are not mixed with those of the version they were
        measured with."""
        return hash_of_source(self.source())

    def source_reread(self) -> str:
        """:meth:`source` as the files hold it now, where it is not what
        :func:`source_afresh` finds by reading it again (a source read once, when the
        kernel was declared)."""
        return self.source()

    def code_modules(self) -> tuple[str, ...]:
        """The modules, by name, whose code this kernel runs: its class's and the user's
        own modules that imports (as walked for its source, not again); what a run
        checks for an edit since this process imported them
        (:func:`~sweeper.engine._inputs.refuse_stale`)."""
        cls = type(self)
        if cls.__module__ == "__main__":
            return (cls.__module__,)
        return (cls.__module__, *(m for m, _ in _own_of(cls)))

    def source_files(self) -> tuple[Path, ...]:
        """The files :meth:`source` is read from, which a sweep watches for an edit while it
        runs (:class:`~sweeper.kernels._watch.SourceWatch`): the class's module and the
        user's own modules it imports; none where it has no file (a notebook's) or is a
        script's ``__main__``, whose code no save of its file changes once it runs."""
        from sweeper.kernels._watch import files_of

        if type(self).__module__ == "__main__":
            return ()
        return _with_own(files_of(type(self)), type(self))


#: Each kernel class's source as first read in this process (:func:`as_loaded`).
_READ: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def as_loaded(cls: type, read: Callable[[], str]) -> str:
    """Kernel class ``cls``'s source as first read in this process (``read()`` then;
    :func:`~sweeper.kernels.load_kernel` reads it as it loads the kernel): the code that
    runs is the one imported, whatever its files hold by the time a study takes its hash
    (an edit since is no trial of this process's, and a worker process or a later run that
    imports the edited text hashes that).  A class defined anew (its module imported
    again) reads anew."""
    try:
        return _READ[cls]
    except KeyError:
        text = _READ[cls] = read()
        return text
    except TypeError:                   # a class that cannot be weakly referenced
        return read()


def source_afresh(kernel: Kernel) -> str | None:
    """``kernel``'s :meth:`~Kernel.source` as its files hold it now (each module's, one
    imported as read too: :func:`~sweeper.kernels._own_modules.files_as_now`), where the
    code that runs keeps the text first read (:func:`as_loaded`,
    :meth:`Kernel.source_reread`); ``None`` where it cannot be read (a file gone, a class
    with no file)."""
    from sweeper.kernels._own_modules import files_as_now

    cls = type(kernel)
    try:
        kept = _READ.pop(cls, None)
    except TypeError:                   # a class that cannot be weakly referenced: read
        kept = None                     # afresh each time already
    try:
        with files_as_now():
            return kernel.source_reread()
    except (OSError, TypeError):
        return None
    finally:
        if kept is not None:
            _READ[cls] = kept


#: The user's own modules each kernel class's module imports, walked once in this
#: process (:func:`_own_of`).
_OWN: weakref.WeakKeyDictionary[type, list[tuple[str, Path]]] = weakref.WeakKeyDictionary()


def _own_of(cls: type) -> list[tuple[str, Path]]:
    """The user's own modules ``cls``'s module imports
    (:func:`~sweeper.kernels._own_modules.own_modules`; none for a module without a
    file), walked once per class in this process: its source's text and the files a
    sweep watches are those of one walk."""
    from sweeper.kernels._own_modules import own_modules

    try:
        return _OWN[cls]
    except (KeyError, TypeError):
        pass
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    found = own_modules(cls.__module__, file) if file else []
    with contextlib.suppress(TypeError):        # a class that cannot be weakly referenced
        _OWN[cls] = found
    return found


def _own_source(cls: type) -> str:
    """The text of the user's own modules ``cls``'s module imports ("" for none, or a
    module without a file)."""
    from sweeper.kernels._own_modules import source_of

    return source_of(_own_of(cls))


def _main_source(cls: type) -> str:
    """The source of kernel class ``cls`` defined in ``__main__`` (a notebook, a script):
    the code it reaches (:func:`~sweeper.kernels._reached.reached_source`: its methods,
    the ``@triton.jit`` functions they launch, the constants they read), not the whole
    script, whose other code (the sweep's call, the analysis) runs nothing of it.  Read
    as asked, not as first read: a notebook cell run again redefines a function the
    class launches by its name, which is then the code that runs."""
    from sweeper.kernels._reached import reached_source

    return reached_source([cls])


def _with_own(files: tuple[Path, ...], cls: type) -> tuple[Path, ...]:
    """``files`` and after them those of the user's own modules ``cls``'s module imports."""
    return files + tuple(path for _, path in _own_of(cls) if path not in files)


class Builtin(Kernel):
    """What the built-in kernels share: ``bodies``, the Triton functions they launch
    (part of :meth:`source`), ``inputs`` that :meth:`randomize` fills with random values
    and ``outputs`` that :meth:`poison` fills with the poison."""

    bodies: ClassVar[tuple[Callable[..., Any], ...]] = ()
    inputs: ClassVar[tuple[str, ...]] = ()
    outputs: ClassVar[tuple[str, ...]] = ()

    def randomize(self, buffers: Buffers, generator: torch.Generator) -> None:
        for name in self.inputs:
            fill_random(buffers[name], generator)

    def poison(self, buffers: Buffers) -> None:
        for name in self.outputs:
            fill_poison(buffers[name])

    @staticmethod
    def run(body: Callable[..., Any], config: Config, *args: Any, **constexprs: Any) -> None:
        """Launch ``body`` with ``args``, ``constexprs`` and ``config.meta`` on
        ``config.grid`` programs of ``config.num_warps`` warps, jitted for the device of
        its first argument (interpreted for CPU tensors)."""
        from sweeper.kernels._jit import jitted

        jitted(body, not args[0].is_cuda)[(config.grid,)](
            *args, num_warps=config.num_warps, **constexprs, **config.meta)

    def source(self) -> str:
        """The Triton bodies, the declaration (the base class ``_declared`` defines) and
        the class itself, as first read in this process (:func:`as_loaded`)."""
        if type(self).__module__ == "__main__":
            return _main_source(type(self))
        declared = [c for c in type(self).__mro__ if c.__module__.endswith("._declared")]
        parts: tuple[Callable[..., Any], ...] = (*self.bodies, *declared[:1], type(self))
        return as_loaded(type(self), lambda: "".join(map(inspect.getsource, parts)) +
                         _own_source(type(self)))

    def source_files(self) -> tuple[Path, ...]:
        """The files of the Triton bodies, the declaration and the class, and of the
        user's own modules the class's module imports (a user's subclass of a built-in)."""
        from sweeper.kernels._watch import files_of

        if type(self).__module__ == "__main__":
            return ()
        declared = [c for c in type(self).__mro__ if c.__module__.endswith("._declared")]
        return _with_own(files_of(*self.bodies, *declared[:1], type(self)), type(self))


class Elementwise(Builtin):
    """A built-in grid-stride kernel over 1-D tensors of ``n`` elements: ``inputs`` and
    ``outputs`` of the problem's dtype, launched with them in that order, ``n`` and
    ``WIDE`` (:func:`wide_offsets`), guessed as :func:`~sweeper.kernels._guess.streaming`
    of its inputs."""

    def allocate(self, problem: Problem, device: str) -> Buffers:
        import torch

        dtype = getattr(torch, problem.dtype)
        return Buffers(problem, {name: torch.empty(problem.n, dtype=dtype, device=device)
                                 for name in (*self.inputs, *self.outputs)})

    def launch(self, buffers: Buffers, config: Config) -> None:
        n = buffers.problem.n
        self.run(self.bodies[0], config, *(buffers[t] for t in (*self.inputs, *self.outputs)),
                 n, WIDE=wide_offsets(n, config.grid, config.meta["BLOCK"]))

    def model(self, config: Config, facts: DeviceFacts) -> float | None:
        return streaming(config, facts.sms, config.meta["BLOCK"], inputs=len(self.inputs))
