"""Devices by name: ``cuda`` (CUDA events on a GPU), ``interpret`` (Triton on the CPU),
``replay:PATH.csv`` (a recorded table), an installed plugin's entry point name (group
``sweeper.devices``) or ``module:attr``; :mod:`sweeper.plugins` finds, imports and checks
each."""

from __future__ import annotations

from sweeper import plugins
from sweeper.core import DeviceFacts
from sweeper.devices._base import Device, OutputCheck, PlanCosts, recorded_env
from sweeper.errors import SweeperError

#: The built-in devices (name -> ``module:attr``), loaded only when named.
DEVICES: dict[str, str] = plugins.DEVICE.builtins


def device_class(spec: str) -> type[Device]:
    """The :class:`Device` subclass ``spec`` names, its argument checked against what it
    declares (``replay`` needs ``:PATH.csv``; most take none); nothing is opened."""
    name, argument = plugins.split_device(spec)
    plugin = plugins.load(plugins.DEVICE, name)
    cls: type[Device] = plugin.obj
    if cls.argument is not None and not argument:
        raise SweeperError(f"{plugin} needs an argument: {name}:{cls.argument}")
    if cls.argument is None and argument is not None:
        raise SweeperError(f"{plugin} takes no argument; got {spec!r}")
    return cls


def open_device(spec: str, *, for_plan: bool = False) -> Device:
    """Open the device ``spec`` names (``replay:PATH.csv`` for a recorded table);
    :class:`NoDeviceError` if it is not here.  ``for_plan``: its plan stand-in where it
    has one (:meth:`Device.plan_stand_in`: the CUDA device's imports no torch)."""
    cls = device_class(spec)
    argument = plugins.split_device(spec)[1]
    device = cls.plan_stand_in() if for_plan else None
    if device is None:
        device = cls(argument) if cls.argument is not None else cls()  # type: ignore[call-arg]
    device.opened_as = spec
    return device


__all__ = ["DEVICES", "Device", "DeviceFacts", "OutputCheck", "PlanCosts", "device_class",
           "open_device", "recorded_env"]
