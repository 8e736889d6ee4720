"""First-principles guesses of a launch's throughput, for ``auto`` (``Kernel.model``).

A guess is relative (1.0: nothing in the launch shape holds the kernel back) and is
never shown as a measurement: ``auto`` uses it as the prior mean of its surrogate, and
learns from the measurements how far to trust it.  The limits are Hopper's (H100/H200)
per-SM figures; the four constants marked *fitted* were read off the recorded H200
tables in ``tests/data/replay`` (the third and fourth sessions' tables; held-out set 5
was recorded after they were fixed).  On another GPU they still rank in the right order.
"""

from __future__ import annotations

import math

from sweeper.space import Config

#: Threads and programs (thread blocks) one SM holds at once.
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32
#: Shared memory one program may use.
SMEM_PER_PROGRAM = 227 * 1024
#: 32-bit values a thread keeps in registers before the compiler spills to local memory.
REGISTERS = 128
#: *Fitted*: loads in flight per SM that reach half the DRAM ceiling.  Latency grows with
#: load, so throughput nears its ceiling gradually (copy at one program per SM: 4 KiB in
#: flight measured 0.49 of the best, 8 KiB 0.71, 16 KiB 0.85, 32 KiB 0.94).
HALF_IN_FLIGHT = 3 * 1024
#: *Fitted*: bytes a program must move to hide its own start: the H200 starts about
#: 1.7e9 programs a second over all SMs (copy and add with one small tile per program),
#: so at 4.8 TB/s a program moving less than ~2.5 KiB is bound by program starts.
PROGRAM_BYTES = 2560
#: *Fitted*: a grid-stride loop (fewer programs than tiles) splits the work up front; one
#: tile per program lets the hardware hand tiles to SMs as they free up.  Every recorded
#: copy and add table measured the grid-stride configs 3-6 % below the best.
STATIC_SPLIT = 0.95
#: *Fitted*: a matmul's operand bytes in flight per SM (``stages - 1`` tiles of A and B
#: per resident program) at which the pipeline covers ``1 - 1/e`` of the memory latency
#: (BLOCK_K 32 at 3 stages measured 0.6-0.8 of BLOCK_K 64 at 4 stages).
PIPELINE_BYTES = 25 * 1024


def streaming(config: Config, sms: int, block_elems: int, inputs: int) -> float:
    """An elementwise kernel that loads ``inputs`` arrays and stores one, in tiles of
    ``block_elems`` elements, one or more tiles per program: the product of four
    losses, each 1.0 when absent.

    - registers: more than ``REGISTERS`` values per thread spill;
    - bytes in flight: the resident programs' loads must cover DRAM latency (Little's
      law, with latency rising under load: ``in_flight / (in_flight + HALF_IN_FLIGHT)``);
    - program starts: a program moving fewer than ``PROGRAM_BYTES`` waits on its start;
    - static split: a grid-stride loop is ``STATIC_SPLIT`` of one tile per program.
    """
    itemsize = config.problem.itemsize
    per_thread = max(block_elems // config.block, 1)
    values = per_thread * itemsize / 4 * inputs
    registers = min(1.0, REGISTERS / values)
    tiles = -(-config.problem.n // block_elems)
    programs = min(config.grid, tiles)
    resident = min(PROGRAMS_PER_SM, THREADS_PER_SM // config.block, programs / sms)
    in_flight = resident * block_elems * itemsize * inputs
    latency = in_flight / (in_flight + HALF_IN_FLIGHT)
    moved = -(-tiles // programs) * block_elems * itemsize * (inputs + 1)
    starts = min(1.0, moved / PROGRAM_BYTES)
    split = 1.0 if programs >= tiles else STATIC_SPLIT
    return registers * latency * starts * split


def tiled(config: Config, sms: int, tiles: int, tile_m: int, tile_n: int, tile_k: int,
          stages: int) -> float:
    """A tiled matmul computing ``tiles`` output tiles of ``tile_m × tile_n``:

    - shared memory: ``stages`` buffers of A and B slices beyond one program's share
      cannot launch (0);
    - registers: a float32 accumulator of more than ``REGISTERS`` values per thread spills,
      and spilling the accumulator costs far more than its share (cubed);
    - reuse: each loaded element serves ``tile_m·tile_n/(tile_m+tile_n)`` multiply-adds,
      so larger tiles need less bandwidth per flop (relative to a 128 × 256 tile);
    - pipeline: the ``stages - 1`` slices loading while one is multiplied, over the
      resident programs, must cover memory latency (``1 - exp(-bytes / PIPELINE_BYTES)``);
    - waves: the SMs at work each finish ``ceil(tiles / SMs at work)`` tiles, so a last
      partial round and SMs without a tile both leave compute idle.
    """
    itemsize = config.problem.itemsize
    smem = (tile_m + tile_n) * tile_k * stages * itemsize
    if smem > SMEM_PER_PROGRAM:
        return 0.0
    accumulators = tile_m * tile_n / config.block
    registers = 1.0 if accumulators <= REGISTERS else (REGISTERS / accumulators) ** 3
    reuse = (tile_m * tile_n / (tile_m + tile_n)) / (128 * 256 / (128 + 256))
    programs = min(config.grid, tiles)
    fits = max(1, min(THREADS_PER_SM // config.block, SMEM_PER_PROGRAM // smem))
    resident = min(fits, max(1.0, programs / sms))
    in_flight = resident * (tile_m + tile_n) * tile_k * (stages - 1) * itemsize
    pipeline = 1.0 - math.exp(-in_flight / PIPELINE_BYTES)
    working = min(programs, sms)
    waves = tiles / (sms * -(-tiles // working))
    return registers * min(reuse, 1.0) * pipeline * waves
