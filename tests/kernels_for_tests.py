"""Kernels that misbehave on purpose, loaded as user kernels (``tests.kernels_for_tests:...``)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sweeper.kernels.copy import CopyKernel
from sweeper.space import Config


class DropsLastBlock(CopyKernel):
    """Copies all but the last BLOCK elements: a partial result the poison must expose."""

    name = "drops-last-block"

    def launch(self, buffers, config: Config) -> None:
        src, dst = buffers["src"], buffers["dst"]
        keep = max(0, src.numel() - config.meta["BLOCK"])
        dst[:keep].copy_(src[:keep])


class RaisesOnBigBlock(CopyKernel):
    """Raises for BLOCK > 256, like a config that runs out of shared memory."""

    name = "raises"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] > 256:
            raise RuntimeError(f"BLOCK={config.meta['BLOCK']} is too big for this test")
        super().launch(buffers, config)


class CopiesZeros(CopyKernel):
    """Writes zeros: right only if the input were zeros, which sweeper never uses."""

    name = "zeros"

    def launch(self, buffers, config: Config) -> None:
        buffers["dst"].copy_(torch.zeros_like(buffers["src"]))


class IllegalAddressOnBigBlock(CopyKernel):
    """For BLOCK > 256, tells the kernel its input is 2**30 elements long: it reads far
    past the allocation and the GPU faults (an illegal memory access), which leaves the
    CUDA context unusable for the rest of the process."""

    name = "illegal-address"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] <= 256:
            super().launch(buffers, config)
            return
        from sweeper.kernels._jit import jitted
        from sweeper.kernels.copy import _copy_body

        jitted(_copy_body, False)[(config.grid,)](buffers["src"], buffers["dst"], 2**30,
                                                  WIDE=False, num_warps=config.num_warps,
                                                  **config.meta)


class HangsOnBigBlock(CopyKernel):
    """For BLOCK > 256 the launch never returns in time, like a kernel spinning forever."""

    name = "hangs"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] > 256:
            import time

            time.sleep(600)
        super().launch(buffers, config)


def _spin_body(flag):
    while tl.load(flag, volatile=True) == 0:     # nothing ever sets the flag
        pass


class SpinsOnBigBlock(CopyKernel):
    """For BLOCK > 256 a GPU kernel spins forever on a flag nothing sets: a real hang."""

    name = "spins"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] <= 256:
            super().launch(buffers, config)
            return
        import triton

        flag = torch.zeros(1, dtype=torch.int32, device=buffers["src"].device)
        triton.jit(_spin_body)[(1,)](flag)


class Memoises(CopyKernel):
    """Copies only when its input changed since its last launch (a memoising
    pseudo-optimisation): the verified first launch after fresh inputs is right, every
    later launch on the same input does nothing and is timed as if it had copied."""

    name = "memoises"

    def __init__(self) -> None:
        self.last: tuple[int, int] | None = None

    def launch(self, buffers, config: Config) -> None:
        src = buffers["src"]
        seen = (src.data_ptr(), src._version)
        if seen != self.last:
            self.last = seen
            super().launch(buffers, config)


class ClaimsTooMuch(CopyKernel):
    """A correct copy whose ``bytes_moved`` claims 1000 times the real traffic."""

    name = "claims-too-much"

    def bytes_moved(self, problem) -> int:
        return 1000 * super().bytes_moved(problem)

    def working_set(self, problem) -> int:
        return super().bytes_moved(problem)


class DiesOrHangsOnBigBlock(CopyKernel):
    """For BLOCK 1024 on more than one program: with 1 warp the process dies at once
    (``os._exit(3)``, a crash no Python code survives), with more it sleeps past any
    timeout (a hang).  Every other config copies."""

    name = "dies-or-hangs"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] == 1024 and config.grid > 1:
            import os
            import sys
            import time

            if config.num_warps == 1:
                print("dies-or-hangs: exiting on purpose", file=sys.stderr, flush=True)
                os._exit(3)
            time.sleep(600)
        super().launch(buffers, config)


class DiesOnBigBlock(CopyKernel):
    """For BLOCK 1024 on more than one program the process dies at once (``os._exit(3)``),
    whatever the warps: two crashes in the small test space.  Every other config copies."""

    name = "dies"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] == 1024 and config.grid > 1:
            import os

            os._exit(3)
        super().launch(buffers, config)


class StuckInC(CopyKernel):
    """Like a worker blocked in a synchronize on a kernel that never returns, where no
    signal handler runs: for BLOCK 1024 on more than one program with 4 warps the process
    ignores SIGTERM, starts a child (``sleep``, in its process group) and blocks in C
    (libc ``pause``).  With ``$SWEEPER_TEST_STUCK_START`` set, it also creates that file,
    and a worker that finds it blocks so while it loads the kernel: a fresh worker that
    never says it is ready.  Every pid it leaves behind is appended to the file
    ``$SWEEPER_TEST_PIDS`` names."""

    name = "stuck-in-c"

    def __init__(self) -> None:
        import os

        marker = os.environ.get("SWEEPER_TEST_STUCK_START")
        if marker and os.path.exists(marker):
            _block_in_c()

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] == 1024 and config.grid > 1 and config.num_warps == 4:
            import os
            import subprocess

            marker = os.environ.get("SWEEPER_TEST_STUCK_START")
            if marker:
                open(marker, "w").close()
            child = subprocess.Popen(["sleep", "600"])
            _block_in_c(child.pid)
        super().launch(buffers, config)


def _block_in_c(*children: int) -> None:
    """Ignore SIGTERM, note this process's pid and ``children``, block in libc."""
    import ctypes
    import os
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(os.environ["SWEEPER_TEST_PIDS"], "a") as pids:
        pids.write(" ".join(str(pid) for pid in (os.getpid(), *children)) + "\n")
    ctypes.CDLL(None).pause()


def _asserting_copy_body(src, dst, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 256, "BLOCK must be at most 256")
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)


class RefusedOnBigBlock(CopyKernel):
    """A copy whose kernel does not compile for BLOCK > 256 (a static assertion): the
    compiler's refusal, a ``compile_error``."""

    name = "refused"

    def launch(self, buffers, config: Config) -> None:
        from sweeper.kernels._jit import jit

        kernel = jit(_asserting_copy_body, interpret=not buffers["src"].is_cuda)
        kernel[(triton.cdiv(buffers.problem.n, config.meta["BLOCK"]),)](
            buffers["src"], buffers["dst"], buffers.problem.n,
            num_warps=config.num_warps, **config.meta)


#: A module-level global that is not a ``tl.constexpr``: the Triton interpreter reads it,
#: Triton's compiler refuses any kernel that does.
SCALE = 1.0


def _reads_a_global_body(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offsets, mask=offsets < n)
    tl.store(dst + offsets, x * SCALE, mask=offsets < n)   # SCALE: not a constexpr


class ReadsAGlobal(CopyKernel):
    """A copy (times ``SCALE``, 1.0) whose kernel reads a module-level global that is not
    a constexpr: right on the interpreter, refused by the compiler for any GPU."""

    name = "reads-a-global"

    def launch(self, buffers, config: Config) -> None:
        from sweeper.kernels._jit import jit

        kernel = jit(_reads_a_global_body, interpret=not buffers["src"].is_cuda)
        kernel[(triton.cdiv(buffers.problem.n, config.meta["BLOCK"]),)](
            buffers["src"], buffers["dst"], buffers.problem.n,
            num_warps=config.num_warps, **config.meta)


class ChecksTrue(CopyKernel):
    """A right copy whose check answers True (meaning "right") instead of None."""

    name = "checks-true"

    def check(self, buffers):  # type: ignore[override]
        return super().check(buffers) is None


class RaisesWhenConstructed(CopyKernel):
    """A kernel whose constructor raises, as one checking its environment might."""

    name = "raises-when-constructed"

    def __init__(self) -> None:
        raise RuntimeError("no GPU library here")


class DefaultsToOddBlock(CopyKernel):
    """A kernel whose default block is no warp count: 100 threads."""

    name = "defaults-to-odd-block"
    defaults = {**CopyKernel.defaults, "block": 100}  # noqa: RUF012 - as Kernel declares


class CountsFlopsInWords(CopyKernel):
    """A right copy whose flops returns a string for 4 KiB problems."""

    name = "flops-in-words"

    def flops(self, problem) -> int:
        return "none" if problem.footprint == 4096 else 0  # type: ignore[return-value]


class RefusalRaisesOnBigBlocks(CopyKernel):
    """A copy whose own :meth:`refusal` has a bug at BLOCK=1024 (a ``KeyError``)."""

    name = "refusal-raises-on-big-blocks"

    def refusal(self, config: Config, device: str) -> str | None:
        return {256: None}[config.meta["BLOCK"]]


class TurnsDownBigBlocks(RefusedOnBigBlock):
    """:class:`RefusedOnBigBlock` that turns down, itself, the configs the compiler would
    refuse (its :meth:`refusal`): they are skipped by the kernel, never compiled."""

    name = "turns-down-big-blocks"

    def refusal(self, config: Config, device: str) -> str | None:
        block = config.meta["BLOCK"]
        return f"BLOCK={block} is past the 256 this kernel takes" if block > 256 else None


def _refuse_fails_below_1024(config: Config) -> str | None:
    return None if 1024 // config.meta["BLOCK"] == 1 else config.meta["SIZES"][0]


class ReadsAGlobalRefusalFailsOnSmallBlocks(ReadsAGlobal):
    """:class:`ReadsAGlobal` whose refusal asks a ``refuse=`` with a bug below BLOCK=1024
    (a ``KeyError``), as a short kernel's does: those configs' trials fail with it."""

    name = "reads-a-global-refusal-fails-on-small-blocks"

    def refusal(self, config: Config, device: str) -> str | None:
        from sweeper.kernels._short import refused

        return refused(_refuse_fails_below_1024, config)


class ReadsAGlobalTurnsDownSmallBlocks(ReadsAGlobal):
    """:class:`ReadsAGlobal` (every config refused by the compiler) that turns down
    BLOCK < 1024 itself (its :meth:`refusal`)."""

    name = "reads-a-global-turns-down-small-blocks"

    def refusal(self, config: Config, device: str) -> str | None:
        block = config.meta["BLOCK"]
        return f"BLOCK={block} is below the 1024 this kernel takes" if block < 1024 else None


class KilledOnBigBlock(CopyKernel):
    """For BLOCK 1024 on more than one program the process is killed by a SIGKILL it sends
    itself, as the OOM killer or a user's ``kill -9`` would send it (or the signal
    ``$SWEEPER_TEST_KILL_SIGNAL`` names: a scheduler's ``SIGTERM``): with 1 warp at every
    try, with 4 only where the file ``$SWEEPER_TEST_KILLED`` names is not there yet (it
    makes it first).  Every other config copies."""

    name = "killed"

    def launch(self, buffers, config: Config) -> None:
        if config.meta["BLOCK"] == 1024 and config.grid > 1:
            import os
            import signal

            marker = os.environ["SWEEPER_TEST_KILLED"]
            if config.num_warps == 1 or not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), getattr(
                    signal, os.environ.get("SWEEPER_TEST_KILL_SIGNAL", "SIGKILL")))
        super().launch(buffers, config)
