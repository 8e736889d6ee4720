"""What each built-in kernel declares, apart from its implementation.

A declaration is the class attributes a space file is checked against (the kernel's
name, its meta-parameters and defaults) and those reports read (its headline rate and
baseline).  The implementations (``copy.py``, ``scale.py``, ``matmul.py`` ...) import torch and
triton; these import neither, so parsing a space, ``sweeper plan`` and reports read them
through :func:`sweeper.plugins.kernel_declaration` at no cost.  Each implementation
subclasses its declaration, so the two cannot disagree.  Bytes moved and FLOPs are
declared here too, as class methods, so that ``plan`` estimates a built-in's launches
without loading it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from sweeper.core import Config, Dim, Problem, cdiv
from sweeper.kernels._base import Headline, Kernel, MetaParam, elementwise_block
from sweeper.kernels._interpreted_ops import FunctionOps, function_ops


class CopyDeclaration(Kernel):
    """The ``copy`` kernel as spaces and reports see it: one ``BLOCK`` meta-parameter
    (elements per program step), torch's ``copy_`` as the baseline."""

    name: ClassVar[str] = "copy"
    meta_params: ClassVar[Mapping[str, MetaParam]] = elementwise_block("copies")
    baseline_name: ClassVar[str] = "torch copy_"
    summary: ClassVar[str] = "dst = src over 1-D arrays, a grid-stride Triton copy"

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """src read, dst written."""
        return 2 * problem.n * problem.itemsize

    @classmethod
    def interpreted_ops(cls, config: Config) -> int:
        """Each tile of ``BLOCK`` elements, wherever the grid puts it: the loop's test,
        offsets, mask, two addresses, load, store and the stride (9)."""
        return 9 * tiles(config)


class AddDeclaration(Kernel):
    """The ``add`` kernel as spaces and reports see it: one ``BLOCK`` meta-parameter
    (elements per program step), torch's ``add`` as the baseline."""

    name: ClassVar[str] = "add"
    meta_params: ClassVar[Mapping[str, MetaParam]] = elementwise_block("adds")
    baseline_name: ClassVar[str] = "torch add"
    summary: ClassVar[str] = "c = a + b over 1-D arrays, grid-stride like copy"

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """a and b read, c written."""
        return 3 * problem.n * problem.itemsize

    @classmethod
    def flops(cls, problem: Problem) -> int:
        """One addition per element."""
        return problem.n

    @classmethod
    def interpreted_ops(cls, config: Config) -> int:
        """Each tile: copy's 9, another address and load, and the addition (12)."""
        return 12 * tiles(config)


class MatmulDeclaration(Kernel):
    """The ``matmul`` kernel as spaces and reports see it: tile sizes, pipeline depth, tile
    order, split-K and the TMA variant as meta-parameters, a grid that covers C, bfloat16
    by default (float8_e4m3fn too), TFLOP/s as the headline and ``torch.matmul`` as the
    baseline (``torch._scaled_mm`` for float8_e4m3fn, which torch.matmul does not take)."""

    name: ClassVar[str] = "matmul"
    meta_params: ClassVar[Mapping[str, MetaParam]] = {
        "BLOCK_M": MetaParam(default=128, pow2=True, doc="rows of C per tile"),
        "BLOCK_N": MetaParam(default=128, pow2=True, doc="columns of C per tile"),
        "BLOCK_K": MetaParam(default=64, pow2=True, doc="K step"),
        "num_stages": MetaParam(default=3, doc="software pipeline depth (launch option)"),
        "GROUP_M": MetaParam(default=1, doc="tile rows per group in the L2-friendly tile "
                                            "order (1: row-major)"),
        "SPLIT_K": MetaParam(default=1, doc="slices of K computed by separate programs, "
                                            "their float32 sums then added (1: none)"),
        "TMA": MetaParam(default=0, choices=(0, 1),
                         doc="1: operands and C moved by the tensor memory accelerator "
                             "(compute capability 9.0 or later)"),
        "EPILOGUE_SUBTILE": MetaParam(default=0, choices=(0, 1),
                                      doc="1: C stored in two half-width boxes (TMA=1 only)"),
        "FLATTEN": MetaParam(default=0, choices=(0, 1),
                             doc="1: the tile and K loops pipelined as one"),
    }
    defaults: ClassVar[Mapping[str, Any]] = {
        "grid": "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", "block": 256,
        "dtype": "bfloat16", "footprint": "32MiB"}
    dims: ClassVar[Mapping[str, Dim]] = {
        "M": Dim("rows of A and C", default=4096),
        "N": Dim("columns of B and C", default=4096),
        "K": Dim("columns of A, rows of B", default=4096),
    }
    #: the largest of A (M×K), B (K×N) and C (M×N): a square problem's footprint is the
    #: bytes of one matrix, as a ``footprint`` axis gives it
    footprint_bytes: ClassVar[str] = "max(M * K, K * N, M * N) * itemsize"
    #: a footprint alone sizes square matrices of that many bytes
    dims_from_footprint: ClassVar[Mapping[str, str]] = {
        "M": "isqrt(footprint // itemsize)", "N": "isqrt(footprint // itemsize)",
        "K": "isqrt(footprint // itemsize)"}
    #: float8_e4m3fn: scaled inputs, a bfloat16 C, torch._scaled_mm as the baseline
    dtypes: ClassVar[tuple[str, ...]] = ("float64", "float32", "float16", "bfloat16",
                                         "float8_e4m3fn")
    baseline_name: ClassVar[str] = "torch.matmul"
    headline: ClassVar[Headline] = Headline.TFLOPS
    summary: ClassVar[str] = "C = A @ B (M×K by K×N), a persistent tiled Triton matmul"

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """A and B read once, C written once (bfloat16 for float8_e4m3fn inputs)."""
        m, n, k = mnk(problem)
        out = 2 if problem.dtype == "float8_e4m3fn" else problem.itemsize
        return (m * k + k * n) * problem.itemsize + m * n * out

    @classmethod
    def flops(cls, problem: Problem) -> int:
        """A multiply and an add per (row, column, k)."""
        m, n, k = mnk(problem)
        return 2 * m * n * k

    @classmethod
    def interpreted_ops(cls, config: Config) -> int | None:
        """Counted from the Triton bodies' source as a user kernel's are
        (:mod:`~sweeper.kernels._interpreted_ops`): each program of the grid runs
        ``_matmul_body``, its persistent loop's work units (``SPLIT_K`` slices of each
        tile) shared among them and ``BLOCK_K`` steps of K in each; with ``SPLIT_K`` > 1
        each program of the reduction's grid runs ``_reduce_body`` too.  ``None`` where
        the source cannot be read (the one-step default then)."""
        read = _matmul_bodies()
        if read is None:
            return None
        body, reduce, block = read
        meta = {**{name: p.default for name, p in cls.meta_params.items()}, **config.meta}
        m, n, k = mnk(config.problem)
        ops = config.grid * body.launched({**meta, "M": m, "N": n, "K": k}, config.grid)
        if meta["SPLIT_K"] > 1:
            programs = cdiv(m * n, block)
            ops += programs * reduce.launched(
                {"MN": m * n, "SPLIT_K": meta["SPLIT_K"], "BLOCK": block}, programs)
        return round(ops)


#: The module that holds the matmul's Triton bodies, read (never imported: it imports
#: Triton) for the operations an interpreted launch runs.
MATMUL_BODIES = Path(__file__).with_name("_matmul_triton.py")


@functools.cache
def _matmul_bodies() -> tuple[FunctionOps, FunctionOps, int] | None:
    """The operations of ``_matmul_body`` and ``_reduce_body`` as their source counts
    them, and the elements of C a program of the reduction sums (``REDUCE_BLOCK``);
    ``None`` where the module cannot be read or lacks one of them."""
    try:
        tree = ast.parse(MATMUL_BODIES.read_text(), MATMUL_BODIES.name)
    except (OSError, SyntaxError, ValueError):
        return None
    functions = {node.name: function_ops(node, f"{MATMUL_BODIES.name}:{node.lineno}")
                 for node in tree.body if isinstance(node, ast.FunctionDef)}
    block = next((node.value.value for node in tree.body if isinstance(node, ast.Assign)
                  and [ast.unparse(t) for t in node.targets] == ["REDUCE_BLOCK"]
                  and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, int)), None)
    if "_matmul_body" not in functions or "_reduce_body" not in functions or not block:
        return None
    return functions["_matmul_body"], functions["_reduce_body"], block


def mnk(problem: Problem) -> tuple[int, int, int]:
    """M, N and K of ``problem``; a problem without dimensions (a journal older than them)
    is square: M = N = K = isqrt(elements), and a ``ValueError`` when its footprint is no
    square matrix."""
    if problem.dims:
        return problem.dim("M"), problem.dim("N"), problem.dim("K")
    m = math.isqrt(problem.n)
    if m * m != problem.n:
        raise ValueError(f"matmul: footprint {problem.footprint} bytes of {problem.dtype} "
                         f"is not a square matrix ({problem.n} elements)")
    return m, m, m


class ScaleDeclaration(Kernel):
    """The ``scale`` kernel as spaces and reports see it: ``x *= a`` in place, one ``BLOCK``
    meta-parameter (elements per program step), torch's ``mul_`` as the baseline."""

    name: ClassVar[str] = "scale"
    meta_params: ClassVar[Mapping[str, MetaParam]] = elementwise_block("scales")
    baseline_name: ClassVar[str] = "torch mul_"
    summary: ClassVar[str] = "x *= a in place over a 1-D array, grid-stride like copy"

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """x read and written."""
        return 2 * problem.n * problem.itemsize

    @classmethod
    def working_set(cls, problem: Problem) -> int:
        """One array: x, in place."""
        return problem.n * problem.itemsize

    @classmethod
    def flops(cls, problem: Problem) -> int:
        """One multiplication per element."""
        return problem.n


#: The DRAM's access unit: a read of fewer bytes moves a whole sector.
SECTOR_BYTES = 32


class CopyStridedDeclaration(Kernel):
    """The ``copy-strided`` kernel as spaces and reports see it: ``BLOCK`` as ``copy``'s,
    the problem ``n`` elements read in a strided or line-crossing order (``stride``,
    ``linecross``), a view of ``src`` copied by torch as the baseline."""

    name: ClassVar[str] = "copy-strided"
    meta_params: ClassVar[Mapping[str, MetaParam]] = CopyDeclaration.meta_params
    dims: ClassVar[Mapping[str, Dim]] = {
        "n": Dim("elements of src and dst", default=1 << 24, max=2**31 - 1),
        "stride": Dim("elements between the sources of consecutive elements "
                      "(linecross: the matrix's columns)", default=1),
        "linecross": Dim("0: element i reads src[(i * stride) % n]; 1: read an "
                         "(n / stride) × stride matrix by columns, write it by rows",
                         default=0, min=0, max=1),
    }
    #: a footprint alone: a plain copy of that many bytes (stride 1)
    dims_from_footprint: ClassVar[Mapping[str, str]] = {
        "n": "footprint // itemsize", "stride": "1", "linecross": "0"}
    baseline_name: ClassVar[str] = "torch strided-view copy_"
    summary: ClassVar[str] = ("dst[i] = src[(i * stride) % n], or a matrix read by columns "
                              "(linecross): strided and line-crossing reads")

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """src read, dst written, whatever the order."""
        return 2 * problem.dim("n") * problem.itemsize

    @classmethod
    def dram_bytes(cls, problem: Problem) -> int:
        """dst written whole, and each distinct src element read at the bytes between it
        and the next one read, up to a 32-byte DRAM sector: a transpose or a stride of 8
        fp32 or more reads a sector an element (4.5x the bytes moved in fp32).  Strided
        reads where ``stride`` and ``n`` share a factor ``g`` read ``n / g`` distinct
        elements, the rest again from the L2.  On the H200 (held-out sets 12 and 13) the
        median config took 0.90-1.04x this at 4000 GB/s on two transposes and 2.0-2.4x on a
        gather and a stride of 33, where the bytes moved alone gave 4-11x."""
        n, stride, linecross = (problem.dim(d) for d in ("n", "stride", "linecross"))
        item = problem.itemsize
        distinct = n if linecross else n // math.gcd(stride, n)
        return n * item + distinct * min(SECTOR_BYTES, stride * item)


class SoftmaxDeclaration(Kernel):
    """The ``softmax`` kernel as spaces and reports see it: the problem ``rows × cols``
    (never a footprint alone), ``BLOCK`` the column tile, ``torch.softmax`` as the
    baseline."""

    name: ClassVar[str] = "softmax"
    meta_params: ClassVar[Mapping[str, MetaParam]] = {
        "BLOCK": MetaParam(default=4096, pow2=True, elements=True,
                           doc="columns each program loads per step (>= cols: the row is "
                               "read once and kept in registers; less: read twice)"),
    }
    defaults: ClassVar[Mapping[str, Any]] = {"grid": "rows", "block": 256, "dtype": "float32"}
    dims: ClassVar[Mapping[str, Dim]] = {
        "rows": Dim("rows, each normalised on its own", default=4096),
        "cols": Dim("columns: elements of each row, any number", default=4096),
    }
    footprint_bytes: ClassVar[str] = "rows * cols * itemsize"
    dims_from_footprint: ClassVar[Mapping[str, str]] = {}
    baseline_name: ClassVar[str] = "torch.softmax"
    summary: ClassVar[str] = "y = softmax(x) along each row of a rows × cols matrix"

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """x read once, y written: the fewest a row kept in registers moves."""
        return 2 * problem.dim("rows") * problem.dim("cols") * problem.itemsize

    @classmethod
    def flops(cls, problem: Problem) -> int:
        """Per element: max, subtract, exp, sum and divide."""
        return 5 * problem.dim("rows") * problem.dim("cols")

    @classmethod
    def interpreted_ops(cls, config: Config) -> int:
        """Each row: its test, step and two row addresses (8); kept in registers, one pass
        of 11 (lanes' mask and address, load, convert, max, subtract, exp, sum, divide,
        address, store); else a first tile of 7, 15 for each further tile of the first
        pass and 12 for each tile of the second."""
        problem, block = config.problem, config.meta["BLOCK"]
        cols = problem.dim("cols")
        steps = math.ceil(cols / block)
        row = 8 + (11 if block >= cols else 7 + 15 * (steps - 1) + 12 * steps)
        return problem.dim("rows") * row


def tiles(config: Config) -> int:
    """The ``BLOCK``-element tiles a grid-stride launch of ``config`` covers."""
    return math.ceil(config.problem.n / config.meta["BLOCK"])


#: What an ``op`` must look like before anything is imported: a dotted path into torch.
OP_PATH = re.compile(r"torch(\.[A-Za-z_][A-Za-z0-9_]*)+")


class TorchOpDeclaration(Kernel):
    """The ``torch-op`` kernel as spaces and reports see it: the torch callable ``op``
    (a kernel option) on one ``rows × cols`` input, no meta-parameters, a grid and block
    that nothing reads, and no baseline (the kernel *is* torch)."""

    name: ClassVar[str] = "torch-op"
    options: ClassVar[Mapping[str, str]] = {
        "op": "a torch callable by its dotted path, such as torch.nn.functional.gelu"}
    #: every torch op is this one built-in: its op tells them apart (``torch-op:OP``)
    named_by: ClassVar[tuple[str, ...]] = ("op",)
    #: grid and block are launch axes every kernel has; a torch op ignores them
    defaults: ClassVar[Mapping[str, Any]] = {"grid": "1", "block": 32, "dtype": "float32",
                                             "footprint": "64MiB"}
    dims: ClassVar[Mapping[str, Dim]] = {
        "rows": Dim("rows of the input (1: a 1-D input of cols elements)", default=1),
        "cols": Dim("columns of the input: the last dimension, which row-wise ops such as "
                    "softmax reduce over", default=1 << 24),
    }
    footprint_bytes: ClassVar[str] = "rows * cols * itemsize"
    #: a footprint alone: a 1-D input of that many bytes
    dims_from_footprint: ClassVar[Mapping[str, str]] = {
        "rows": "1", "cols": "footprint // itemsize"}
    summary: ClassVar[str] = ("y = op(x) for a torch callable named in the space "
                              "(kernel: {name: torch-op, op: ...}), over shapes and dtypes")
    no_triton_function: ClassVar[str] = (
        "calls a torch op, not a Triton kernel: its winners are a grid and block that "
        "nothing reads, which tune no @triton.autotune")

    @classmethod
    def bytes_moved(cls, problem: Problem) -> int:
        """The input read and an output of its size written."""
        return 2 * problem.dim("rows") * problem.dim("cols") * problem.itemsize

    @classmethod
    def option_problem(cls, key: str, value: str, *, imports: bool = False) -> str | None:
        """``op`` must be a dotted path into torch; with ``imports`` (``run``), it must
        also lead to a callable, which imports torch."""
        if OP_PATH.fullmatch(value) is None:
            return (f"{value!r} is not a torch callable's path; allowed: a dotted path "
                    "starting with torch., such as torch.nn.functional.gelu")
        found = resolve_op(value) if imports else None
        return found if isinstance(found, str) else None


def resolve_op(path: str) -> Callable[..., Any] | str:
    """The callable the dotted ``path`` names (its longest importable module, then
    attributes), or why there is none."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for depth, attr in enumerate(parts[cut:], start=cut):
            if not hasattr(obj, attr):
                return (f"{path!r} names nothing: {'.'.join(parts[:depth])} has no "
                        f"attribute {attr!r}; allowed: a torch callable's dotted path, such "
                        "as torch.nn.functional.gelu")
            obj = getattr(obj, attr)
        if not callable(obj):
            return f"{path!r} is {type(obj).__name__}, not callable; allowed: a torch callable"
        return obj  # type: ignore[no-any-return]
    return f"{path!r}: no module of it can be imported"
