"""What watching a kernel's source for an edit costs a trial: one check of
:class:`~sweeper.kernels._watch.SourceWatch` (a stat of each of the kernel's files) in the
coordinator, two in the worker, against a hash of the source read again.

    python benchmarks/source_watch_cost.py [KERNEL ...]     (default: copy matmul softmax)
"""

from __future__ import annotations

import sys
import time

from sweeper.kernels import load_kernel
from sweeper.kernels._watch import SourceWatch


def per_call(step, n: int) -> float:
    """Mean seconds of ``step()`` over ``n`` calls."""
    start = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - start) / n


def main(names: list[str]) -> None:
    print("kernel    files  watch check (us)  a trial's 3 checks (us)  source hash (ms)")
    for name in names:
        kernel = load_kernel(name)
        watch = SourceWatch(kernel.source_files(), kernel.source_hash())
        check = per_call(lambda watch=watch: watch.differs(None), 20_000)
        hashed = per_call(kernel.source_hash, 200)
        print(f"{name:9s} {len(watch.files):5d}  {check * 1e6:16.1f}  {3 * check * 1e6:23.1f}"
              f"  {hashed * 1e3:16.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["copy", "matmul", "softmax"])
