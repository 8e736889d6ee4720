"""The built-in ``torch-op`` kernel: ``y = op(x)`` for a torch callable the space names
(``kernel: {name: torch-op, op: torch.nn.functional.gelu}``), a footprint scan of a library
op timed and verified like any sweep.

The op is imported when the kernel first allocates, never by ``plan`` or reports.  There
is nothing to tune: no meta-parameters, and the grid and block axes are held at their
defaults, which nothing reads.  Every launch calls ``op(x)`` and keeps the tensor it
returns (so the timed work includes the output's allocation, as a torch user pays it).

The check runs the op in float64 on the same input and compares within the dtype's
tolerances; where the op cannot run in float64 (or the dtype is no floating one, where
float64 would change what the op computes) a second call must give the same output bit
for bit.  Bytes moved: the input read and an output of the input's size written (an op
whose output is smaller or larger is credited with that assumption); FLOPs are not
counted, so the headline is GB/s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from sweeper.core import Config, Problem
from sweeper.kernels._base import Buffers, Builtin, fill_poison
from sweeper.kernels._declared import TorchOpDeclaration, resolve_op
from sweeper.kernels._tensors import TOLERANCES, difference


class TorchOpKernel(Builtin, TorchOpDeclaration):
    """``y = op(x)`` for the torch callable ``op`` on a ``rows × cols`` input (a 1-D one of
    ``cols`` elements where ``rows`` is 1), checked against the op in float64."""

    inputs = ("x",)

    def __init__(self, op: str) -> None:
        self.op = op

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        """The op, imported on first use; a ValueError (the trial's reason) if ``op``
        leads to no callable."""
        found = resolve_op(self.op)
        if isinstance(found, str):
            raise ValueError(found)
        return found

    def allocate(self, problem: Problem, device: str) -> Buffers:
        self.function                        # noqa: B018 -- a bad op fails here, once
        rows, cols = problem.dim("rows"), problem.dim("cols")
        shape = (cols,) if rows == 1 else (rows, cols)
        x = torch.empty(shape, dtype=getattr(torch, problem.dtype), device=device)
        return Buffers(problem, {"x": x, "y": torch.empty_like(x)})

    def poison(self, buffers: Buffers) -> None:
        """A fresh poisoned tensor (``fill_poison``) as ``y``: a launch replaces it with the op's
        output, so finding this very tensor at the check means no launch ran."""
        buffers.tensors["y"] = torch.empty_like(buffers["x"])
        fill_poison(buffers["y"])
        buffers.tensors["poison"] = buffers["y"]

    def launch(self, buffers: Buffers, config: Config) -> None:
        buffers.tensors["y"] = self.function(buffers["x"])

    def check(self, buffers: Buffers) -> str | None:
        x, y = buffers["x"], buffers.tensors["y"]
        if y is buffers.tensors.get("poison"):
            return f"{self.op} left no output: the launch did not run"
        if not isinstance(y, torch.Tensor):
            return f"{self.op} returned {type(y).__name__}, not a tensor"
        expected = self._float64(x)
        if expected is None:
            again = self.function(x)
            why = difference("y", y, again, {})
            return None if why is None else \
                f"{self.op} is not deterministic (no float64 reference): {why}"
        why = difference("y", y, expected, TOLERANCES)
        return None if why is None else f"{self.op} against itself in float64: {why}"

    def _float64(self, x: torch.Tensor) -> Any:
        """The op on ``x`` in float64, or ``None`` where that cannot be had or would not
        be the same computation (a dtype that is no floating one)."""
        if not x.dtype.is_floating_point:
            return None
        try:
            return self.function(x.double())
        except (RuntimeError, TypeError, NotImplementedError):
            return None

    def source(self) -> str:
        """The kernel's code and the op's path: a study of another op is another kernel."""
        return f"op: {self.op}\n" + super().source()
