"""Compiling and launching the ``cuda`` kernel's CUDA function for one config: through
NVRTC (CuPy) per config, launched on torch's current stream, so CUDA-event timing, CUDA
graphs and the L2 flush treat it as they treat a Triton kernel.

CuPy is imported when the first trial compiles, never by ``plan``, reports or ``sweeper
kernels``; it is the optional extra ``pip install 'sweeper[cuda]'``.  Each config
compiles once per process (loaded functions are kept, so a CUDA graph capture loads
nothing) and once per machine (the disk cache, :mod:`sweeper.kernels._cuda_build`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sweeper.core import Config
from sweeper.kernels._cuda_build import Compiled, compiled
from sweeper.kernels._cuda_spec import instantiation, nvrtc_options

if TYPE_CHECKING:         # the launch is handed its declaration; it never makes one
    from sweeper.kernels._cuda_form import CudaLaunch

def launch(cuda: CudaLaunch, tensors: Mapping[str, Any], config: Config) -> None:
    """Compile (or find) the function for ``config``'s defines and launch it with
    ``config.grid`` blocks of ``config.block`` threads on torch's current stream."""
    meta = dict(config.meta)
    entry, options = _defines(cuda, config)
    key = (entry, *options)
    function = cuda.loaded.get(key)
    if function is None:
        built = precompile(cuda, config)
        function = _load(built.cubin, built.lowered, tensors)
        cuda.loaded[key] = function
    dims = {"n": config.problem.n, **dict(config.problem.dims)}
    args = cuda.args(list(tensors), list(dims), list(meta))
    values = [_value(a.name, a.scalar_type(config.problem.dtype), tensors, {**dims, **meta})
              for a in args]
    import cupy
    import torch

    device = next(iter(tensors.values())).device
    with cupy.cuda.Device(device.index or 0), \
            cupy.cuda.ExternalStream(torch.cuda.current_stream(device).cuda_stream):
        function((config.grid,), (config.block,), tuple(values))


def precompile(cuda: CudaLaunch, config: Config) -> Compiled:
    """``config``'s function compiled (or found) in the disk cache, loaded nowhere: what a
    launch does first, and all a compile worker does (its compiler set for a named
    architecture; NVRTC for the current device where none is set)."""
    if cuda.compiler is None:
        from sweeper.kernels._cuda_build import NvrtcCompiler

        cuda.compiler = NvrtcCompiler()
    entry, options = _defines(cuda, config)
    return compiled(cuda.source, entry, options, cuda.compiler)


def _defines(cuda: CudaLaunch, config: Config) -> tuple[str, tuple[str, ...]]:
    """The entry to look up (a template's instantiation) and NVRTC's ``-D`` options."""
    meta = dict(config.meta)
    options = nvrtc_options(meta, config.block, config.problem.dtype, cuda.template)
    return (instantiation(cuda.template, meta) if cuda.template else cuda.entry), options


def _load(cubin: bytes, lowered: str, tensors: Mapping[str, Any]) -> Any:
    """The compiled function, loaded by CuPy from the checked cubin's bytes; a
    ``ValueError`` where a tensor is not on a CUDA device (the kernel cannot run
    elsewhere)."""
    off = [n for n, t in tensors.items() if not t.is_cuda]
    if off:
        raise ValueError(f"the cuda kernel runs on a CUDA GPU; tensor {off[0]!r} is on "
                         f"{tensors[off[0]].device}")
    from cupy.cuda import function

    module = function.Module()          # what cupy.RawModule(path=...) loads a file into
    module.load(cubin)
    return module.get_function(lowered)


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
