"""What `sweeper plan` prices on a fresh H200 machine (no run's costs kept, an empty Triton
cache), computed without a GPU: the plan of each space on a CUDA device described by the
H200's facts, with the default run costs (`sweeper.plan.RunCosts`), every binary to
compile and the compile pool a 16-core machine gives.

    python benchmarks/fresh_plan.py spaces/copy.yaml spaces/matmul-shapes.yaml ...

Prints each space's estimate and its parts.  On the GPU machine itself, `STAGES=busy
BUSY=freshplan bash benchmarks/gpu_run.sh` asks the real device.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["SWEEPER_CACHE"] = tempfile.mkdtemp()          # nothing measured yet
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()       # nothing compiled yet

from sweeper import plan as planning
from sweeper.devices import DeviceFacts
from sweeper.devices._cuda import CudaDevice
from sweeper.kernels import _binaries
from sweeper.space import load_space


class FreshH200(CudaDevice):
    """The CUDA device's plan costs and measuring rules, with the H200's facts."""

    def __init__(self) -> None:       # opens no GPU
        pass

    def facts(self) -> DeviceFacts:
        return DeviceFacts(name="NVIDIA H200", sms=132, l2_bytes=60 << 20)

    def compile_target(self) -> str:
        return "sm_90"


def main() -> None:
    os.cpu_count = lambda: 16                                  # the H200 machine's cores
    planning.costs_key = lambda device: "NVIDIA H200 (fresh)"
    _binaries.triton_binaries = lambda device, kernel: _binaries.Binaries(
        "triton", _binaries.binary_of, lambda key: False)
    device = FreshH200()
    for path in sys.argv[1:]:
        space = load_space(path)
        shape = planning.run_shape(space, device, report=True, startup=True)
        plan, _ = planning.plan_of(space, device, shape)
        head, _, _ = planning.estimate_words(plan, None)
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in plan.parts.items() if v >= 0.05)
        print(f"{path}: {head} ({parts}; {plan.binaries} binaries, pool from the start: "
              f"{shape.cold})")


if __name__ == "__main__":
    main()
