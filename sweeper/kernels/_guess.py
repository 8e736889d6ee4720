"""First-principles guesses of a launch's throughput, for ``auto`` (``Kernel.model``).

A guess is a throughput in arbitrary units (the streaming model's 1.0: nothing in the
launch shape holds the kernel back; the matmul model's: 1 / the launch's time in
seconds), compared only between configs of one study, and is never shown as a
measurement: ``auto`` uses it as the prior mean of its surrogate, and
learns from the measurements how far to trust it.  The limits are Hopper's (H100/H200)
per-SM figures; the constants marked *fitted* were read off the recorded H200 tables in
``tests/data/replay``: the streaming ones on the copy and add tables of the design and
held-out sets 1-4, the matmul ones on the nine matmul tables of the design and held-out
sets 1-5 (``benchmarks/fit_matmul_model.py``); the later sets were recorded after and
test them.  On another GPU they still rank in the right order.
"""

from __future__ import annotations

from sweeper.core import Config

#: Threads and programs (thread blocks) one SM holds at once.
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32
#: Shared memory one program may use.
SMEM_PER_PROGRAM = 227 * 1024
#: 32-bit values of one array a thread keeps in registers before the compiler spills to
#: local memory.  An elementwise kernel's arrays count apart (the compiler interleaves
#: each element's loads, arithmetic and store): on the eleven recorded add tables, 128
#: values of each input per thread measured 0.98-1.00 of the best, where counting both
#: inputs (256) guessed 0.5 and put them among the last third of the guesses; 256 of each
#: measured 0.73-0.75 and 512 of each 0.24-0.25 (copy: 0.76-0.88 and 0.14-0.28).
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
#: How many times the DRAM's rate the L2 moves bytes at.  Every byte a kernel moves passes
#: through the L2, the DRAM's bytes and the L2's own hits alike, so a launch takes the
#: longer of its DRAM bytes at the DRAM rate and all its bytes at the L2 rate.  Physical,
#: and loose: published figures for Hopper's L2 run 7-12 TB/s, 1.5-2.5 times the H200's
#: 4.8 TB/s of DRAM; above 1.5 a row's second read from the L2 (three L2 bytes for two
#: DRAM bytes) costs nothing, and no guess changes with it.  On the H200 softmax bf16
#: table two passes whose rows the L2 holds measured 0.97-1.06 of one pass at the same
#: grid and threads (512 and 1024 threads).
L2_RATE = 2.0
#: A program that copies one tile of more than ``TILE_BYTES`` per array (one tile per
#: program) ...
TILE_BYTES = 4096
#: ... *fitted*: runs at this fraction, by the number of arrays loaded.  On every recorded
#: copy table (fp32, fp16 and bf16, 8 MiB to 4 GiB) one-tile-per-program launches of
#: 2-4 KiB tiles measured 0.98-1.00 of the best and every tile of 8 KiB and more
#: 0.94-0.97 (at 8 MiB 0.85-0.97) unless it spilled (16 bytes a thread at 8 KiB: 0.99),
#: whatever the threads and bytes in flight.  Grid-stride launches show no such step;
#: the cause is not established.  Add's step is smaller (0.98-0.99 against 0.99-1.00)
#: and left out: at 0.99 it moved the first config within 98 % of two add tables from
#: the model's rank 1 to 3 (``benchmarks/model_accuracy.py``).
LARGE_TILE = {1: 0.955}
#: Hopper's dense 16-bit tensor-core rate per SM (989 TFLOP/s over 132 SMs).
TENSOR_FLOPS_PER_SM = 989e12 / 132
#: The register file of one SM, and the most registers one thread may hold.
REGISTER_FILE = 65536
MAX_THREAD_REGISTERS = 255
#: *Fitted* (the matmul constants below, by least squares on the log of the measured
#: times of those nine matmul tables, 1266 launches, with
#: ``benchmarks/fit_matmul_model.py``; mean |log error| 0.07-0.14 on the 16-bit tables,
#: 0.33 on float32): float32 operands multiply at this fraction of the
#: 16-bit rate (Triton's default for them is TF32, whose peak is half the 16-bit one; the
#: one float32 table measured far below it, and the model fits that table worst).
FP32_RATE = 0.07
#: *Measured*: the share of a tile's time left where the tensor memory accelerator loads
#: its operands (``TMA=1``) instead of the threads' pointer loads, which spend issue slots
#: and registers on addresses in every K step.  On the seven recorded H200 tables with a
#: TMA axis, configs within 10 % of the best measured 0.82-0.88 of the time of the same
#: config without TMA (median 0.85; 0.41-0.47 on the two shortest-K ones), and every
#: config within 98 % of a table's best uses it.  Without this the model rated them alike
#: and ``auto`` walked both halves of its favourites: worst 19 -> 8 trials to 98 % over
#: those tables (docs/search.md, "TMA in the matmul model").
TMA_LOADS = 0.85
#: The share of the pipeline's fill (``LOAD_LATENCY``: the first K step's loads) that a
#: flattened loop (``FLATTEN=1``: one loop over tiles and K steps, so the next tile's
#: loads are issued while this one's last steps multiply) saves each tile; 0 is the model
#: without it.  All of it matches the seven recorded H200 tables that sweep ``FLATTEN``:
#: near the best a flattened loop took 0.77 of the time at 4 K steps a tile, 0.92-0.97 at
#: 16, 0.98 at 64 and 0.99-1.00 at 96-224, as one fill of 600 ns says; and ``auto``
#: there: mean 5.03 -> 3.22 trials to 98 % over 30 seeds, four tables at their first
#: trial (docs/search.md, "A flattened loop in the matmul model").
FLATTEN_FILL = 1.0
#: *Fitted*: operand bytes one SM loads into shared memory per second (the operands of
#: the recorded sizes are L2 hits; the rate also holds the cost of issuing the loads).
OPERAND_BYTES_PER_SM = 200e9
#: *Fitted*: how long one K step's loads take to arrive; ``stages - 1`` steps are in
#: flight while one is multiplied, so a step waits ``LOAD_LATENCY / (stages - 1)``.
LOAD_LATENCY = 600e-9
#: *Fitted*: registers a matmul thread holds besides its accumulators.
REGISTER_OVERHEAD = 45
#: *Fitted*: a K step's multiply, load and wait overlap in part: its time is their
#: ``OVERLAP``-norm, between their sum (1) and the longest of them (infinity).
OVERLAP = 1.5
#: *Fitted*: launching the kernel and waiting for its end.
LAUNCH_S = 4.5e-6
#: Programs the H200 starts a second over all SMs, read off copy and add with one small
#: tile per program (``PROGRAM_BYTES``): a matmul program with no work unit still costs
#: its start.
PROGRAM_STARTS = 1.7e9


def streaming(config: Config, sms: int, block_elems: int, inputs: int) -> float:
    """An elementwise kernel that loads ``inputs`` arrays and stores one, in tiles of
    ``block_elems`` elements, one or more tiles per program: the product of five
    losses, each 1.0 when absent.

    - registers: more than ``REGISTERS`` values of one array per thread spill;
    - bytes in flight: the resident programs' loads must cover DRAM latency (Little's
      law, with latency rising under load: ``in_flight / (in_flight + HALF_IN_FLIGHT)``);
    - program starts: a program moving fewer than ``PROGRAM_BYTES`` waits on its start;
    - static split: a grid-stride loop is ``STATIC_SPLIT`` of one tile per program;
    - large tile: one tile per program of more than ``TILE_BYTES`` per array is
      ``LARGE_TILE`` (copy's; add's step is too small to count).
    """
    itemsize = config.problem.itemsize
    tiles = -(-config.problem.n // block_elems)
    programs = min(config.grid, tiles)
    moved = -(-tiles // programs) * block_elems * itemsize * (inputs + 1)
    large = programs >= tiles and block_elems * itemsize > TILE_BYTES
    tile = LARGE_TILE.get(inputs, 1.0) if large else 1.0
    return tile * _losses(config, sms, block_elems, tiles, block_elems * itemsize * inputs,
                          moved)


#: Bytes a row-wise kernel's value takes in registers at least: softmax computes in
#: float32 whatever its dtype, so a bf16 row of 32768 columns in one tile of 128 threads
#: holds 256 float32 values a thread (measured 0.76 of the best on the H200 table).
ROW_VALUE_BYTES = 4


def rowwise(config: Config, sms: int, l2_bytes: int, rows: int, cols: int,
            block_elems: int) -> float:
    """A row-wise kernel (softmax over ``rows × cols``) that takes a row per program step
    and loads it in tiles of ``block_elems`` columns: :func:`streaming`'s four losses with
    a row as the tile (lanes past ``cols`` hold registers but move nothing), times the
    cost of the second read of a row that does not fit one tile.

    A row read twice was read from DRAM a moment before: the second read finds it in the
    L2 (``l2_bytes``) unless the rows the resident programs hold between their two reads
    outgrow it; the part of those rows the L2 cannot hold is read from DRAM again.  The
    launch takes the longer of its DRAM bytes (a read, a write and that part of a second
    read, per row) and its L2 bytes (two reads and a write) at ``L2_RATE`` times the DRAM
    rate, against one read and one write for a row in one tile: a row read twice from
    DRAM rates 2/3 of one pass, a row read again from the L2 as much as one pass."""
    itemsize = config.problem.itemsize
    programs = min(config.grid, rows)
    moved = -(-rows // programs) * cols * itemsize * 2
    loaded = min(block_elems, cols) * itemsize
    value = max(ROW_VALUE_BYTES, itemsize)
    losses = _losses(config, sms, block_elems, rows, loaded, moved, value)
    if block_elems >= cols:
        return losses
    held = _resident(config, sms, programs) * sms * cols * itemsize
    missed = max(0.0, 1.0 - l2_bytes / held)
    return losses * 2 / max(2 + missed, 3 / L2_RATE)


def _resident(config: Config, sms: int, programs: int) -> float:
    """Programs of ``config`` one SM runs at once, of ``programs`` in all."""
    return min(PROGRAMS_PER_SM, THREADS_PER_SM // config.block, programs / sms)


def _losses(config: Config, sms: int, block_elems: int, tiles: int, loaded: int,
            moved: int, value_bytes: int | None = None) -> float:
    """The registers, bytes-in-flight, program-start and static-split losses of a launch
    of ``config`` over ``tiles`` tiles of ``block_elems`` elements per program step, each
    step loading ``loaded`` bytes, each program moving ``moved`` bytes in all; a value
    takes ``value_bytes`` of registers (default: its dtype's size)."""
    per_thread = max(block_elems // config.block, 1)
    value = config.problem.itemsize if value_bytes is None else value_bytes
    registers = min(1.0, REGISTERS / (per_thread * value / 4))
    programs = min(config.grid, tiles)
    in_flight = _resident(config, sms, programs) * loaded
    latency = in_flight / (in_flight + HALF_IN_FLIGHT)
    starts = min(1.0, moved / PROGRAM_BYTES)
    split = 1.0 if programs >= tiles else STATIC_SPLIT
    return registers * latency * starts * split


def tiled(config: Config, sms: int, mnk: tuple[int, int, int], tile_m: int, tile_n: int,
          tile_k: int, stages: int, split_k: int = 1, epilogue: int = 0,
          tma: bool = False, flatten: bool = False) -> float:
    """A persistent tiled matmul of M×K by K×N matrices (``mnk``), ``tile_m × tile_n`` output
    tiles with a K step of ``tile_k``: 1 / the launch's time in seconds, modelled as
    the busiest SM's work.

    - shared memory: ``stages`` buffers of A and B slices plus ``epilogue`` bytes (C's tile
      staged for a TMA store) beyond one program's share cannot launch (0);
    - programs per SM: as many as threads, shared memory and registers (accumulators
      plus ``REGISTER_OVERHEAD`` per thread) let one SM hold at once;
    - the busiest SM computes ``ceil(programs / SMs)`` programs' share of the tiles,
      as many at once as fit, the last round with the programs left (a tile alone on an
      SM runs faster than beside another);
    - a grid of more programs than work units and than SMs, where one SM holds several
      programs, is taken to put as many working programs on the busiest SM as the grid
      gives each SM (up to those that fit): the hardware places programs without knowing
      which have work (on the recorded H200 tables a grid of 2 × SMs over 90-128 tiles
      measured 1.14-1.5 times a grid of the tiles on average where two programs fit an
      SM, 1.00-1.03 where one does, 1.02-1.03 where three or four do: the rule errs on
      the slow side; ``benchmarks/matmul_empty_programs.py``); every program beyond the
      work units also costs its start (``PROGRAM_STARTS``);
    - a tile takes ``ceil(K / tile_k)`` K steps; a step's time combines the tensor
      cores' multiply and the operand loads of every program the SM holds at once, and
      the wait for the step's loads (``LOAD_LATENCY / (stages - 1)``);
    - a float32 accumulator of more than ``REGISTERS`` values per thread spills, and
      spilling costs far more than its share (cubed);
    - ``split_k`` slices of K make as many work units of each tile, each ``split_k``
      times shorter, plus a second launch that reads the float32 partial sums back
      (``split_k × M × N × 4`` bytes written and read at ``OPERAND_BYTES_PER_SM`` per SM);
    - 8-bit operands multiply at twice the 16-bit rate (Hopper's fp8 tensor cores);
    - operands loaded by the tensor memory accelerator (``tma``) take ``TMA_LOADS`` of the
      tile's time that pointer loads do;
    - a flattened loop (``flatten``) saves each tile the pipeline's fill
      (``FLATTEN_FILL`` × ``LOAD_LATENCY``), never below the tile's multiplies;
    - plus the launch itself (``LAUNCH_S``).
    """
    itemsize = config.problem.itemsize
    smem = (tile_m + tile_n) * tile_k * stages * itemsize + epilogue
    if smem > SMEM_PER_PROGRAM:
        return 0.0
    m, n, k = mnk
    tiles = -(-m // tile_m) * -(-n // tile_n) * split_k
    programs = min(config.grid, tiles)
    accumulators = tile_m * tile_n / config.block
    fits = programs_per_sm(config, tile_m, tile_n, tile_k, stages, epilogue)
    per_sm = -(-programs // sms)
    if config.grid > tiles and config.grid > sms:     # working programs may share an SM
        per_sm = max(per_sm, min(fits, -(-config.grid // sms), programs))
    together = min(fits, per_sm)
    work = -(-per_sm * tiles // programs)       # tiles the busiest SM computes
    rounds, rest = divmod(work, together)
    rate = TENSOR_FLOPS_PER_SM * {4: FP32_RATE, 1: 2.0}.get(itemsize, 1.0)
    wait = LOAD_LATENCY / max(stages - 1, 1)
    fill = FLATTEN_FILL * LOAD_LATENCY if flatten else 0.0    # saved each tile

    def tile_time(at_once: int) -> float:
        multiply = at_once * 2 * tile_m * tile_n * tile_k / rate
        load = at_once * (tile_m + tile_n) * tile_k * itemsize / OPERAND_BYTES_PER_SM
        step: float = (multiply ** OVERLAP + load ** OVERLAP + wait ** OVERLAP) ** (1 / OVERLAP)
        steps = -(-k // (tile_k * split_k))
        return max(steps * step - fill, steps * multiply)

    busy = rounds * tile_time(together) + (tile_time(rest) if rest else 0.0)
    busy *= TMA_LOADS if tma else 1.0
    spill = 1.0 if accumulators <= REGISTERS else (accumulators / REGISTERS) ** 3
    reduce = 0.0 if split_k == 1 else \
        2 * split_k * m * n * 4 / (OPERAND_BYTES_PER_SM * sms) + LAUNCH_S
    idle = max(config.grid - tiles, 0) / PROGRAM_STARTS
    return 1.0 / (busy * spill + LAUNCH_S + idle + reduce)


def programs_per_sm(config: Config, tile_m: int, tile_n: int, tile_k: int,
                    stages: int, epilogue: int = 0) -> int:
    """Programs of a tiled matmul one SM holds at once (at least 1): as many as its
    threads, its shared memory (``stages`` buffers of ``tile_m + tile_n`` rows of
    ``tile_k`` operands, plus ``epilogue`` bytes) and its registers (the float32
    accumulators of a ``tile_m × tile_n`` tile plus ``REGISTER_OVERHEAD`` per thread)
    allow."""
    smem = (tile_m + tile_n) * tile_k * stages * config.problem.itemsize + epilogue
    registers = min(tile_m * tile_n / config.block + REGISTER_OVERHEAD, MAX_THREAD_REGISTERS)
    return max(1, min(PROGRAMS_PER_SM, THREADS_PER_SM // config.block,
                      SMEM_PER_PROGRAM // smem,
                      int(REGISTER_FILE // (config.block * registers))))
