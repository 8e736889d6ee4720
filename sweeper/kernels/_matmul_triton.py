"""The Triton bodies of the built-in ``matmul`` (``matmul.py`` launches them).

One persistent body serves every variant, chosen by constexprs so that each compiled
kernel holds only its own path:

- work units are ``SPLIT_K`` slices of K for every ``BLOCK_M × BLOCK_N`` tile of C,
  slice-major, so the programs running at once share the same K range of A and B;
- tiles are numbered in groups of ``GROUP_M`` tile rows, column by column within a group
  (Triton's grouped ordering): the programs running at once then read a few panels of A
  and B that stay in L2, where row-major order (``GROUP_M = 1``) streams all of B per
  row of tiles;
- ``TMA``: A, B and C are host tensor descriptors, loaded and stored by Hopper's tensor
  memory accelerator (out-of-bounds boxes read as zeros and are not written), otherwise
  masked pointer loads and stores;
- ``SPLIT_K > 1``: each unit stores its float32 partial sum into a workspace of
  ``SPLIT_K × M × N`` and :func:`_reduce_body` adds the slices in a fixed order, scales
  and casts into C (the two launches are one timed launch).
"""

from __future__ import annotations

import triton.language as tl


# Triton reads a kernel's annotations (tl.constexpr marks a compile-time constant): its
# other arguments stay unannotated, hence the type: ignore.
def _matmul_body(a, b, c, partials, scale,  # type: ignore[no-untyped-def]
                 M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                 SBK: tl.constexpr, SBN: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                 SPLIT_K: tl.constexpr, TMA: tl.constexpr, B_T: tl.constexpr,
                 EPILOGUE_SUBTILE: tl.constexpr, FLATTEN: tl.constexpr,
                 SCALED: tl.constexpr):
    # Row-major A (M x K) and C (M x N); B (K x N) at strides SBK, SBN, or with TMA an
    # N x K descriptor when B_T. The sizes are constexprs: the K loop then has constant
    # bounds (pipelined on the GPU, and runnable by the interpreter).
    tiles_m = (M + BLOCK_M - 1) // BLOCK_M
    tiles_n = (N + BLOCK_N - 1) // BLOCK_N
    tiles = tiles_m * tiles_n
    k_split = ((K + BLOCK_K * SPLIT_K - 1) // (BLOCK_K * SPLIT_K)) * BLOCK_K
    for unit in tl.range(tl.program_id(0), tiles * SPLIT_K, tl.num_programs(0),
                         flatten=FLATTEN):
        tile = unit % tiles
        group = GROUP_M * tiles_n
        first_m = (tile // group) * GROUP_M
        rows = min(tiles_m - first_m, GROUP_M)
        pm = (first_m + (tile % group) % rows) * BLOCK_M
        pn = ((tile % group) // rows) * BLOCK_N
        k0 = (unit // tiles) * k_split
        rm = pm + tl.arange(0, BLOCK_M)
        rn = pn + tl.arange(0, BLOCK_N)
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)   # tl.zeros is itself jitted
        for kk in range(0, k_split, BLOCK_K):
            if TMA:
                x = a.load([pm, k0 + kk])
                y = b.load([pn, k0 + kk]).T if B_T else b.load([k0 + kk, pn])
            else:
                rk = k0 + kk + tl.arange(0, BLOCK_K)
                x = tl.load(a + rm[:, None] * K + rk[None, :],
                            mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
                y = tl.load(b + rk[:, None] * SBK + rn[None, :] * SBN,
                            mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, y, acc)
        inside = (rm[:, None] < M) & (rn[None, :] < N)
        if SPLIT_K > 1:
            tl.store(partials + (unit // tiles) * M * N + rm[:, None] * N + rn[None, :], acc,
                     mask=inside)
        else:
            if SCALED:
                acc = acc * tl.load(scale)
            if TMA and EPILOGUE_SUBTILE:     # two half-width stores: fewer live registers
                halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
                left, right = tl.split(halves)
                c.store([pm, pn], left.to(c.dtype))
                c.store([pm, pn + BLOCK_N // 2], right.to(c.dtype))
            elif TMA:
                c.store([pm, pn], acc.to(c.dtype))
            else:
                tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
                         mask=inside)


def _reduce_body(partials, c, scale, MN: tl.constexpr,  # type: ignore[no-untyped-def]
                 SPLIT_K: tl.constexpr, BLOCK: tl.constexpr, SCALED: tl.constexpr):
    # C = the sum of the SPLIT_K float32 slices, always added in the same order.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < MN
    total = tl.load(partials + offsets, mask=inside, other=0.0)
    for split in tl.static_range(1, SPLIT_K):
        total += tl.load(partials + split * MN + offsets, mask=inside, other=0.0)
    if SCALED:
        total = total * tl.load(scale)
    tl.store(c + offsets, total.to(c.dtype.element_ty), mask=inside)


#: Elements of C each program of the split-K reduction sums.
REDUCE_BLOCK = 1024


def _dot_probe_body(a, b, c, N: tl.constexpr):  # type: ignore[no-untyped-def]
    # C = A @ B for one N x N tile of row-major A, B and C: what
    # ``matmul.interpreter_dot_wrong`` runs once on the interpreter.
    rows = tl.arange(0, N)[:, None] * N
    cols = tl.arange(0, N)[None, :]
    tile = tl.dot(tl.load(a + rows + cols), tl.load(b + rows + cols))
    tl.store(c + rows + cols, tile)


def descriptor(tensor: object, block: list[int]) -> object:
    """A host tensor descriptor of a contiguous 2-D ``tensor`` in boxes of ``block``."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor.from_tensor(tensor, block)


