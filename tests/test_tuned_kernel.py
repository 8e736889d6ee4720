"""``@sweeper.tuned_kernel``: a jitted kernel launched with the tuned config of each call's
shape, run through the Triton interpreter."""

import json
import warnings

import pytest
import torch
import triton.language as tl

import sweeper
from sweeper.errors import SweeperError, TuningWarning
from sweeper.export import export_study
from sweeper.kernels._jit import jit
from sweeper.measure import summarize
from sweeper.space import Config, Problem
from sweeper.store import StudyStore, TrialRecord
from sweeper.trial import TrialStatus

GPU = "Triton interpreter (CPU)"
#: n -> (block, BLOCK) tuned there
TUNED = {1024: (64, 128), 65536: (128, 1024)}


def _copy_body(x, y, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n), mask=offsets < n)


@pytest.fixture
def tuning(tmp_path):
    """A tuning file of kernel ``copy1d`` at n = 1024 and 65536 (dims ``n``)."""
    store = StudyStore(tmp_path / "copy1d")
    store.create({"study": "copy1d", "kernel": "tests:copy1d", "kernel_name": "copy1d",
                  "environment": {"gpu": GPU, "sms": 4, "l2_bytes": 0}})
    for i, (n, (block, BLOCK)) in enumerate(TUNED.items()):
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK,
            choice={"grid": "cdiv(n, BLOCK)", "block": str(block), "BLOCK": str(BLOCK)},
            config=Config(Problem("float32", 4 * n, (("n", n),)), grid=1, block=block,
                          meta={"BLOCK": BLOCK}),
            stats=summarize([1.0] * 3), gbps=1.0))
    store.close()
    path = tmp_path / "tuning.json"
    export_study(store, path)
    return path


class Spy:
    """Stands in for the jitted function: records each launch's grid and options."""

    def __init__(self, fn):
        self.fn, self.arg_names, self.__name__ = fn, fn.arg_names, "copy1d"
        self.launches = []

    def __getitem__(self, grid):
        def launch(*args, **options):
            self.launches.append((grid, options))
            return self.fn[grid](*args, **options)
        return launch


@pytest.fixture
def kernel(tuning):
    return sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU)(
        Spy(jit(_copy_body, interpret=True)))


def run(kernel, n):
    x = torch.randn(n)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, n)
    assert torch.equal(x, y)
    return kernel.fn.launches[-1]


def test_dispatch_by_shape_exact_and_nearest(kernel):
    assert run(kernel, 1024) == ((8,), {"num_warps": 2, "BLOCK": 128})
    assert run(kernel, 65536) == ((64,), {"num_warps": 4, "BLOCK": 1024})
    # 3000 was not tuned: 1024 is nearer in log space (1.55 against 4.45), grid for 3000
    assert run(kernel, 3000) == ((24,), {"num_warps": 2, "BLOCK": 128})
    x = torch.zeros(30000)
    cfg = kernel.config(x, x, 30000)
    assert cfg.dims == {"n": 65536} and 0 < cfg.distance < 2 and not cfg.far


def test_each_shape_is_looked_up_once(kernel):
    for n in (1024, 1024, 3000, 1024, 3000):
        run(kernel, n)
    assert kernel.lookups == 2 and len(kernel.fn.launches) == 5
    x64 = torch.zeros(1024, dtype=torch.float64)
    with pytest.raises(SweeperError, match="no tuned config for copy1d float64 n=1024"):
        kernel(x64, x64, 1024)                    # the dtype is part of the lookup


def test_a_far_shape_warns_once(kernel):
    with pytest.warns(TuningWarning, match=r"copy1d float32: the nearest tuned problem, "
                                           r"n=1024, is far from the asked n=16"):
        assert run(kernel, 16) == ((1,), {"num_warps": 2, "BLOCK": 128})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(kernel, 8)                            # far again: said once already
        run(kernel, 16)


def test_misuse_is_one_line(tuning):
    body = jit(_copy_body, interpret=True)
    with pytest.raises(SweeperError, match=r"tuned_kernel _copy_body: key \['m'\] must name "
                                           r"arguments of a @triton.jit function \(it has "
                                           r"x, y, n, BLOCK\)"):
        sweeper.tuned_kernel(tuning, key=["m"], gpu=GPU)(body)
    with pytest.raises(SweeperError, match="key must be a list of argument names, got 'n'"):
        sweeper.tuned_kernel(tuning, key="n")
    with pytest.raises(SweeperError, match="no tuning file"):
        sweeper.tuned_kernel(tuning.parent / "none.json", key=["n"])
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(body)
    with pytest.raises(SweeperError, match=r"key \['n'\] must be positive integers, got \[0\]"):
        k(torch.zeros(1), torch.zeros(1), 0)


def test_a_1d_kernel_studied_by_footprint_dispatches_on_n(tmp_path):
    from tests.test_export import study

    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)]), path)
    export_study(study(tmp_path, "b", 1 << 30, [("2*sms", 256, 4096, 50.0)]), path)
    k = sweeper.tuned_kernel(path, key=["n"], name="copy", gpu="Fake GPU")(
        Spy(jit(_copy_body, interpret=True)))
    with pytest.warns(TuningWarning, match=r"n=262144, is far from the asked n=5000"):
        assert run(k, 5000) == ((5,), {"num_warps": 4, "BLOCK": 1024})     # 1 MiB's config
    x = torch.zeros(1 << 26)                                              # 256 MiB: 1 GiB's
    assert k.config(x, x, n=1 << 26).meta == {"BLOCK": 4096}
    y = torch.zeros(2000)
    k(y, torch.empty_like(y), n=2000)                                     # n by keyword
    assert k.fn.launches[-1] == ((2,), {"n": 2000, "num_warps": 4, "BLOCK": 1024})


def test_entries_without_dims_are_looked_up_by_n_times_itemsize(tmp_path):
    from tests.test_export import study

    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)]), path)
    data = json.loads(path.read_text())
    del data["entries"][0]["dims"]                     # as a file older than dimensions
    path.write_text(json.dumps(data))
    k = sweeper.tuned_kernel(path, key=["n"], name="copy", gpu="Fake GPU")(
        Spy(jit(_copy_body, interpret=True)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # 1 MiB of float32 is n = 262144
        assert run(k, 200_000) == ((196,), {"num_warps": 4, "BLOCK": 1024})
