"""A GPU's facts for ``sweeper plan``, read from the CUDA driver without importing torch.

Opening the CUDA device imports torch (1.6 s on a 2-core machine, and more on a busy
one) only to read three facts a plan needs: the GPU's name, SMs and L2 size.  The
driver API (``libcuda``, the library every CUDA program loads) gives the same three
through ``ctypes`` in milliseconds, for the same GPU torch would open (GPU 0 of
``CUDA_VISIBLE_DEVICES``).  No NVML or ``nvidia-smi`` is needed: neither reports the
SM count or the L2 size.  Where there is no driver or no GPU, a plan is made for an
assumed GPU and says so.
"""

from __future__ import annotations

import ctypes
from typing import Any

from sweeper.bounds import HardwareFacts, Sourced
from sweeper.core import DeviceFacts

#: ``CUdevice_attribute`` values (cuda.h): SMs, the L2 cache's bytes, the compute
#: capability, and the peak SM clock, peak memory clock (both kHz) and memory bus width
#: (bits) that the GPU's physical bounds are derived from (:mod:`sweeper.bounds`).
MULTIPROCESSOR_COUNT = 16
L2_CACHE_SIZE = 38
CAPABILITY_MAJOR, CAPABILITY_MINOR = 75, 76
CLOCK_RATE, MEMORY_CLOCK_RATE, GLOBAL_MEMORY_BUS_WIDTH = 13, 36, 37
#: The H200 that ``GPU_COSTS`` (:mod:`sweeper.devices._base`) was read on, as NVML
#: describes it: the bounds a plan on another GPU scales those figures by until a run
#: there measures its kernel (:func:`sweeper.plan.gpu_scale`; an H100's DRAM bound, 3352
#: GB/s, is 0.70 of this one's 4814), and the GPU a plan assumes where none can be read.
GPU_COSTS_READ_ON = HardwareFacts(
    gpu="NVIDIA H200", sms=132, l2_bytes=60 << 20, capability=(9, 0),
    mem_mhz=Sourced(3201, "NVML"), bus_bits=Sourced(6016, "NVML"), sm_mhz=Sourced(1980, "NVML"))
ASSUMED_GPU = DeviceFacts(name=GPU_COSTS_READ_ON.gpu, sms=GPU_COSTS_READ_ON.sms,
                          l2_bytes=GPU_COSTS_READ_ON.l2_bytes)


def _driver() -> Any:
    """The CUDA driver library; an ``OSError`` where it is not installed."""
    return ctypes.CDLL("libcuda.so.1")


def has_driver() -> bool:
    """Whether the CUDA driver library loads (nothing is initialized)."""
    try:
        _driver()
    except OSError:
        return False
    return True


def _count(lib: Any) -> int:
    """GPUs ``lib`` (the driver) counts, initialized; 0 where it fails to."""
    count = ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def gpu_count() -> int:
    """GPUs the CUDA driver counts (0 where there is no driver)."""
    try:
        return _count(_driver())
    except OSError:
        return 0


def query_gpu(index: int = 0) -> DeviceFacts | str:
    """GPU ``index``'s name, SMs and L2 size, as ``torch.cuda.get_device_properties``
    gives them, from the driver API; else why they cannot be read."""
    found = query_hardware(index)
    return found if isinstance(found, str) else \
        DeviceFacts(name=found.gpu, sms=found.sms, l2_bytes=found.l2_bytes)


def query_hardware(index: int = 0) -> HardwareFacts | str:
    """What GPU ``index``'s physical bounds are derived from: its name, SMs and L2 size
    (:func:`query_gpu`), compute capability, peak clocks and bus width, from the driver
    API; else why the first three cannot be read.  A clock or width the driver does not
    give is left out (its bound is then absent, and says so)."""
    opened = _open(index)
    if isinstance(opened, str):
        return opened
    lib, device = opened
    name = ctypes.create_string_buffer(256)
    values = None if lib.cuDeviceGetName(name, len(name), device) else \
        _attributes(lib, device, MULTIPROCESSOR_COUNT, L2_CACHE_SIZE)
    if values is None:
        return f"the CUDA driver did not describe GPU {index}"
    sms, l2 = values
    capability = _attributes(lib, device, CAPABILITY_MAJOR, CAPABILITY_MINOR)

    def one(attribute: int, scale: float = 1.0) -> Sourced | None:
        value = _attributes(lib, device, attribute)
        return Sourced.first(("the CUDA driver", value[0] * scale if value else None))

    return HardwareFacts(
        gpu=name.value.decode(errors="replace"), sms=sms, l2_bytes=l2,
        capability=(capability[0], capability[1]) if capability else None,
        mem_mhz=one(MEMORY_CLOCK_RATE, 1e-3), bus_bits=one(GLOBAL_MEMORY_BUS_WIDTH),
        sm_mhz=one(CLOCK_RATE, 1e-3))


def gpu_arch(index: int = 0) -> str | None:
    """GPU ``index``'s architecture as the CUDA device's ``compile_target`` names it
    (``sm_90``), from the driver API; None where it cannot be read."""
    opened = _open(index)
    if isinstance(opened, str):
        return None
    values = _attributes(*opened, CAPABILITY_MAJOR, CAPABILITY_MINOR)
    return None if values is None else f"sm_{values[0]}{values[1]}"


def _open(index: int) -> tuple[Any, ctypes.c_int] | str:
    """The driver, initialized, and GPU ``index``'s handle; else why not."""
    try:
        lib = _driver()
    except OSError:
        return "no CUDA driver found (libcuda.so.1)"
    if _count(lib) <= index:
        return "no CUDA device found"
    device = ctypes.c_int()
    if lib.cuDeviceGet(ctypes.byref(device), index):
        return f"the CUDA driver did not describe GPU {index}"
    return lib, device


def _attributes(lib: Any, device: ctypes.c_int, *attributes: int) -> list[int] | None:
    """The ``CUdevice_attribute`` values of ``device``, in order; None if one fails."""
    values = []
    for attribute in attributes:
        value = ctypes.c_int()
        if lib.cuDeviceGetAttribute(ctypes.byref(value), attribute, device):
            return None
        values.append(value.value)
    return values
