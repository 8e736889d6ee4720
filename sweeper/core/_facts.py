"""The facts of the GPU a space is resolved for: what its expressions may read and what
a kernel's model may weigh.  A plain value, below the devices that find it and the
kernels whose models read it."""

from __future__ import annotations

from dataclasses import dataclass

#: The name studies, tuning files and Triton modules give the Triton interpreter on the
#: CPU, as they give a GPU its own.
INTERPRETER = "Triton interpreter (CPU)"


@dataclass(frozen=True)
class DeviceFacts:
    """What expressions may read (``sms``, ``l2_bytes``) and what reports name."""

    name: str
    sms: int
    l2_bytes: int
    #: Footprints above this are capped (the interpreter); ``None``: no cap.
    max_footprint: int | None = None

    def env(self) -> dict[str, int]:
        """The names a space's expressions may read about the device, with their values."""
        return {"sms": self.sms, "l2_bytes": self.l2_bytes}
