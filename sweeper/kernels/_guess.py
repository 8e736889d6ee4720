"""First-principles guesses of a launch's throughput, for ``auto``'s start (``Kernel.model``).

A guess is relative (1.0: nothing in the launch shape holds the kernel back) and is
never shown as a measurement: ``auto`` only uses it to leave out, at the start and
first among moves, configs whose shape alone predicts a large loss.  The limits are
Hopper's (H100/H200) per-SM figures; on another GPU they still rank in the right order.
"""

from __future__ import annotations

from sweeper.space import Config

#: Threads and programs (thread blocks) one SM holds at once.
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32
#: Shared memory one program may use.
SMEM_PER_PROGRAM = 227 * 1024
#: 32-bit values a thread keeps in registers before the compiler spills to local memory.
REGISTERS = 128
#: Bytes each SM must have in flight to cover DRAM latency at full bandwidth (Little's law:
#: about 4.8 TB/s × 0.9 µs over 132 SMs).
IN_FLIGHT_PER_SM = 32 * 1024
#: The widest load one thread issues (128 bits).
VECTOR_BYTES = 16


def streaming(config: Config, sms: int, block_elems: int, inputs: int) -> float:
    """An elementwise kernel that loads ``inputs`` arrays in steps of ``block_elems``
    elements per program: the product of three losses, each 1.0 when absent.

    - vector width: a thread loading fewer than 16 bytes per step issues narrow loads;
    - registers: more than ``REGISTERS`` values per thread spill;
    - bytes in flight: too few resident programs × bytes per step leave DRAM latency
      uncovered (Little's law).
    """
    itemsize = config.problem.itemsize
    per_thread = max(block_elems // config.block, 1)
    vector = min(1.0, per_thread * itemsize / VECTOR_BYTES)
    values = per_thread * itemsize / 4 * inputs
    registers = min(1.0, REGISTERS / values)
    resident = min(PROGRAMS_PER_SM, THREADS_PER_SM // config.block)
    in_flight = min(config.grid, sms * resident) * block_elems * itemsize * inputs
    latency = min(1.0, in_flight / (IN_FLIGHT_PER_SM * sms))
    return vector * registers * latency


def tiled(config: Config, sms: int, tiles: int, tile_m: int, tile_n: int, tile_k: int,
          stages: int) -> float:
    """A tiled matmul computing ``tiles`` output tiles of ``tile_m × tile_n``:

    - shared memory: ``stages`` buffers of A and B slices beyond one program's share
      cannot launch (0);
    - registers: a float32 accumulator of more than ``REGISTERS`` values per thread spills,
      and spilling the accumulator costs far more than its share (cubed);
    - reuse: each loaded element serves ``tile_m·tile_n/(tile_m+tile_n)`` multiply-adds,
      so larger tiles need less bandwidth per flop (relative to a 128 × 256 tile);
    - waves: the last wave of tiles over the resident programs runs partly empty, and
      fewer programs than SMs leave SMs idle (one program is taken to fill an SM).
    """
    smem = (tile_m + tile_n) * tile_k * stages * config.problem.itemsize
    if smem > SMEM_PER_PROGRAM:
        return 0.0
    accumulators = tile_m * tile_n / config.block
    registers = 1.0 if accumulators <= REGISTERS else (REGISTERS / accumulators) ** 3
    reuse = (tile_m * tile_n / (tile_m + tile_n)) / (128 * 256 / (128 + 256))
    per_sm = max(1, min(THREADS_PER_SM // config.block, SMEM_PER_PROGRAM // smem))
    running = min(config.grid, tiles, sms * per_sm)      # programs at work at once
    waves = -(-tiles // running)
    busy = min(1.0, running / sms)
    return registers * min(reuse, 1.0) * tiles / (waves * running) * busy
