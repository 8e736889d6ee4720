"""The tensors of a short kernel (:func:`sweeper.kernel`): how they are declared, made
for a problem, and compared with the reference.

A tensor is declared by its shape, expressions over the problem's dimensions in the
space's own language (``"M, K"``; parsed once, never ``eval``), and optionally a dtype
other than the problem's; or the kernel's inputs come from a factory ``problem -> dict``
called with the target device as torch's default.  Outputs are compared with
``torch.isclose`` at the tolerances of ``torch.testing.assert_close`` for their dtype,
which a kernel may override.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sweeper.core import DTYPES, Expr, Problem, evaluate, parse
from sweeper.errors import ExpressionError, SweeperError
from sweeper.kernels._base import mismatch

if TYPE_CHECKING:
    import torch

#: (rtol, atol) by dtype: ``torch.testing.assert_close``'s defaults; integers are exact.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7)}
#: (rtol, atol) for a floating dtype TOLERANCES does not list: float32's.
DEFAULT_TOLERANCE = TOLERANCES["float32"]
#: The names a launch, reference or baseline receives besides the tensors.
RESERVED = ("config",)

Factory = Callable[[Problem], Mapping[str, Any]]


@dataclass(frozen=True)
class TensorSpec:
    """One declared tensor: its shape as expressions over the problem's dimensions, and
    its dtype (``None``: the problem's)."""

    shape: tuple[Expr, ...]
    dtype: str | None = None

    def sizes(self, problem: Problem) -> list[int]:
        """The shape at ``problem``."""
        env = {"n": problem.n, **dict(problem.dims), "itemsize": problem.itemsize}
        return [int(evaluate(e, env)) for e in self.shape]

    def make(self, problem: Problem, device: str) -> torch.Tensor:
        """An uninitialized tensor of this shape and dtype on ``device``."""
        import torch

        return torch.empty(self.sizes(problem), device=device,
                           dtype=getattr(torch, self.dtype or problem.dtype))


def parsed(kernel: str, where: str, text: str) -> Expr:
    """The expression ``text``; a :class:`SweeperError` naming the kernel and ``where`` (the
    argument that gives it) where it does not parse."""
    try:
        return parse(text)
    except ExpressionError as err:
        raise SweeperError(f"kernel {kernel}: {where}: {err}") from None


def tensor_spec(kernel: str, where: str, raw: Any, dims: tuple[str, ...]) -> TensorSpec:
    """``"M, K"``, ``("n", "int32")`` or ``(("M", "K"), "int32")`` as a :class:`TensorSpec`;
    a :class:`SweeperError` naming the kernel and the tensor otherwise."""
    shape, dtype = raw if isinstance(raw, tuple) and len(raw) == 2 and \
        isinstance(raw[1], str) and raw[1].isidentifier() and \
        raw[1] not in (*dims, "itemsize") else (raw, None)
    if dtype is not None and dtype not in DTYPES:
        raise SweeperError(f"kernel {kernel}: {where}: dtype {dtype!r}; allowed: "
                           f"{', '.join(DTYPES)}")
    parts = [p.strip() for p in shape.split(",")] if isinstance(shape, str) else \
        list(shape) if isinstance(shape, (tuple, list)) else None
    if not parts or not all(isinstance(p, (str, int)) and str(p).strip() for p in parts):
        raise SweeperError(f"kernel {kernel}: {where}: {raw!r} is not a shape; give "
                           "expressions over the dimensions (\"n\" or \"M, K\"), optionally "
                           f"with a dtype (\"n\", \"int32\"); dtypes: {', '.join(DTYPES)}")
    exprs = []
    for part in parts:
        expr = parsed(kernel, where, str(part))
        unknown = sorted(expr.names - {*dims, "itemsize"})
        if unknown:
            raise SweeperError(f"kernel {kernel}: {where}: shape {shape!r} reads "
                               f"{unknown[0]!r}; known: {', '.join((*dims, 'itemsize'))}")
        exprs.append(expr)
    return TensorSpec(tuple(exprs), dtype)


def output_specs(raw: Mapping[Any, Any] | Sequence[Any], inputs: Collection[str] | None,
                 spec: Callable[[Any, Any], TensorSpec], *,
                 shaped_input: Callable[[Any], Exception], not_input: Callable[[Any], Exception],
                 named: Callable[[Any], Any] = lambda name: name) -> dict[Any, TensorSpec | None]:
    """Each output's ``spec(name, shape)``, ``None`` for one written in place (``raw`` a
    list of names, not a mapping to shapes), each name first checked by ``named``.  The
    form that declares them words the errors: ``shaped_input(name)`` is raised where a
    shaped output is an input too, ``not_input(name)`` where one written in place is none
    of ``inputs`` (``None``: not known before a launch, as from a factory)."""
    if isinstance(raw, Mapping):
        specs: dict[Any, TensorSpec | None] = {}
        for name, shape in raw.items():
            name = named(name)
            specs[name] = spec(name, shape)
            if inputs is not None and name in inputs:
                raise shaped_input(name)
        return specs
    for name in raw:
        named(name)
        if inputs is not None and name not in inputs:
            raise not_input(name)
    return dict.fromkeys(raw)


def made_by(factory: Factory, problem: Problem, device: str) -> dict[str, torch.Tensor]:
    """What ``factory`` makes for ``problem``, with ``device`` as torch's default device
    (``meta``: shapes only, no memory); a ``TypeError`` saying what it returned instead
    of a mapping of names to tensors on that device."""
    import torch

    with torch.device(device):
        made = factory(problem)
    if not isinstance(made, Mapping) or not made:
        raise TypeError(f"the inputs factory returned {type(made).__name__}; it returns a "
                        "non-empty dict of name -> tensor")
    want = torch.device(device).type
    for name, tensor in made.items():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"the inputs factory gave {name!r} = {type(tensor).__name__}; "
                            "each value is a tensor")
        if tensor.device.type != want:
            raise TypeError(f"the inputs factory put {name!r} on {tensor.device}, not on "
                            f"{want}: create tensors without device= (the factory runs "
                            "with the target device as the default)")
    return dict(made)


def difference(name: str, actual: torch.Tensor, expected: Any,
               tolerances: Mapping[str, tuple[float, float]]) -> str | None:
    """Why output ``name`` differs from the reference's ``expected`` (:func:`mismatch`,
    floats within the dtype's tolerances, integers exactly); ``None`` when they agree."""
    import torch

    if not isinstance(expected, torch.Tensor):
        return f"output {name}: the reference returned {type(expected).__name__}, not a tensor"
    if tuple(expected.shape) != tuple(actual.shape):
        return (f"output {name}: the reference's shape {tuple(expected.shape)} is not the "
                f"output's {tuple(actual.shape)}")
    dtype = str(actual.dtype).removeprefix("torch.")
    why = mismatch(actual, expected.to(actual.device), "the reference",
                   tolerance=tolerances.get(dtype, DEFAULT_TOLERANCE))
    return None if why is None else f"output {name}: {why}"
