"""The built-in ``cuda`` kernel: a CUDA C/C++ function from a ``.cu`` file, compiled
through NVRTC (CuPy) per config and launched on torch's current stream
(:mod:`sweeper.kernels._cuda_build`); its declaration and checks are
:mod:`sweeper.kernels._cuda_form`'s.
"""

from __future__ import annotations

from typing import Any

from sweeper.kernels._cuda_form import CudaDeclaration


class CudaKernel(CudaDeclaration):
    """``kernel: {name: cuda, ...}`` as a run constructs it: the short kernel its options
    declare (:meth:`CudaDeclaration.specialize`), whose launch compiles and launches the
    CUDA function.  Constructing this class returns that kernel, as the options alone
    say which class it is."""

    def __new__(cls, **options: str) -> Any:
        return CudaDeclaration.specialize(options, None)()
