"""Devices by name: ``cuda`` (CUDA events on a GPU) and ``interpret`` (Triton on the CPU)."""

from __future__ import annotations

from sweeper.devices._base import Device, DeviceFacts, OutputCheck
from sweeper.errors import SweeperError

DEVICES: dict[str, str] = {
    "cuda": "sweeper.devices._cuda:CudaDevice",
    "interpret": "sweeper.devices._interpret:InterpretDevice",
}


def open_device(name: str) -> Device:
    """Open the device called ``name`` (``replay:PATH.csv`` for a recorded table);
    :class:`NoDeviceError` if it is not here."""
    import importlib

    if name.startswith("replay:"):
        from sweeper.devices._replay import ReplayDevice

        return ReplayDevice(name.removeprefix("replay:"))
    if name not in DEVICES:
        raise SweeperError(f"unknown device {name!r}; known: {', '.join(DEVICES)}, "
                           "replay:PATH.csv")
    module, _, attr = DEVICES[name].partition(":")
    return getattr(importlib.import_module(module), attr)()


__all__ = ["DEVICES", "Device", "DeviceFacts", "OutputCheck", "open_device"]
