"""Compile the matmul body for every config of the square recording space on the GPU and
print registers, spills, shared memory and the driver's occupancy (programs per SM)."""
import itertools, json, os, sys, time
sys.path.insert(0, os.getcwd())
import torch
import triton
from sweeper.kernels._matmul_triton import _matmul_body
kernel = triton.jit(_matmul_body)
try:
    from cuda.bindings import driver as cu
except Exception as e:
    cu = None; print("no cuda.bindings", e)
out = []
sizes = [int(x) for x in sys.argv[1].split(",")]
dtypes = sys.argv[2].split(",")
dest = os.path.join(os.environ.get("OUT", "/tmp"), "regs.json")
for size, dt in itertools.product(sizes, dtypes):
    dtype = getattr(torch, dt)
    m = n = k = size
    a = torch.randn(m, k, device="cuda", dtype=dtype); b = torch.randn(k, n, device="cuda", dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    for bm, bn, bk, st, warps in itertools.product([64, 128], [64, 128, 256], [32, 64], [3, 4], [4, 8]):
        t0 = time.time()
        rec = dict(size=size, dtype=dt, bm=bm, bn=bn, bk=bk, stages=st, warps=warps)
        try:
            ck = kernel[(132,)](a, b, c, c, c, M=m, N=n, K=k, SBK=b.stride(0), SBN=b.stride(1),
                                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, SPLIT_K=1, TMA=0,
                                B_T=False, EPILOGUE_SUBTILE=0, FLATTEN=0, SCALED=False,
                                num_warps=warps, num_stages=st)
            if hasattr(ck, "_init_handles"):
                ck._init_handles()
            rec.update(regs=ck.n_regs, spills=ck.n_spills, shared=ck.metadata.shared)
            if cu is not None:
                try:
                    err, blocks = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                        ck.function, warps * 32, ck.metadata.shared)
                    rec.update(occupancy=blocks, occ_err=str(err))
                except Exception as e:
                    rec["occ_exc"] = str(e)[:200]
        except Exception as e:
            rec["error"] = str(e)[:300]
        rec["compile_s"] = round(time.time() - t0, 2)
        out.append(rec)
        print(json.dumps(rec), flush=True)
        json.dump(out, open(dest, "w"))
