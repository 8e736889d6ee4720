"""``@sweeper.tuned_kernel``: a jitted kernel launched with the tuned config of each call's
shape, run through the Triton interpreter."""

import json
import warnings

import numpy as np
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


def test_a_notebook_shows_what_a_tuned_kernel_launches_from(kernel, tuning):
    """Its repr names the kernel, key, tuned entries, file and shapes resolved, where a
    notebook showed ``<sweeper.launcher.TunedKernel object at 0x...>``."""
    assert repr(kernel) == (f"<TunedKernel copy1d of copy1d: key n; 2 tuned entries in "
                            f"{tuning}; 0 shapes resolved>")
    run(kernel, 1024)
    assert repr(kernel).endswith("; 1 shape resolved>")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU's driver is there")
def test_cpu_tensors_without_the_interpreter_are_told_how_to_run(tuning):
    """A compiled kernel on a machine without a GPU: Triton's "0 active drivers" is said
    as what to do."""
    compiled = sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU)(
        Spy(jit(_copy_body, interpret=False)))
    x = torch.randn(1024)
    with pytest.raises(SweeperError, match=r"tuned_kernel copy1d: Triton finds no GPU driver "
                                           r"for this call \(.*active drivers.*\); on the CPU "
                                           r"set TRITON_INTERPRET=1 before triton is first "
                                           r"imported"):
        compiled(x, torch.empty_like(x), 1024)


def test_a_far_shape_warns_once(kernel):
    """Once, saying what to do: tune the shape into the study, or time the candidates."""
    with pytest.warns(TuningWarning, match=r"copy1d float32: the nearest tuned problem, "
                                           r"n=1024, is far from the asked n=16 .*: tune n=16 "
                                           r"\(add it to the space of study copy1d, run it and "
                                           r"export the study again\); or pass "
                                           r"measure_untuned=True to time its candidates at a "
                                           r"shape's first call$") as said:
        assert run(kernel, 16) == ((1,), {"num_warps": 2, "BLOCK": 128})
    # shown at the user's call (a notebook's cell), not at a line of sweeper's
    assert {w.filename for w in said} == {__file__}
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
    for cache in ("hot", None, ["warm"]):           # refused as it decorates, not at a call
        with pytest.raises(SweeperError, match=r"^tuned_kernel: cache .*: allowed: cold, warm "
                           r"\(the L2 flushed before each sample, or not\)$"):
            sweeper.tuned_kernel(tuning, key=["n"], cache=cache)  # type: ignore[arg-type]
    # each keyword of a wrong type refused as it decorates, by its own name: measure_untuned
    # "no" measured (it is true), name 5 failed at the first call in the lookup's depths
    # with a TypeError, and the tuning file was named "path"
    for keyword, value, allowed in (
            ("measure_untuned", "no", "True or False"),
            ("name", 5, "the kernel's name in the tuning file"),
            ("gpu", 0, "a GPU's name"),
            ("tuning", 5, "the tuning file's path"),
            ("timer", "fast", "a function timing a launch")):
        with pytest.raises(SweeperError, match=rf"^tuned_kernel: {keyword}={value!r}; allowed: "
                                               rf"{allowed}"):
            sweeper.tuned_kernel(**{"tuning": tuning, "key": ["n"], keyword: value})
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(body)
    with pytest.raises(SweeperError, match=r"key \['n'\] must be positive integers, got \[0\]"):
        k(torch.zeros(1), torch.zeros(1), 0)
    with pytest.raises(SweeperError, match=r"must be positive integers, got \[True\]"):
        k.config(torch.zeros(1), torch.zeros(1), True)     # a bool is no size
    # a numpy size is the int it holds (it was refused as "got [4096]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k.config(torch.zeros(1), torch.zeros(1), np.int64(4096)) == \
            k.config(torch.zeros(1), torch.zeros(1), 4096)


def test_misuse_leaves_with_the_traceback_of_the_call_alone(tuning, monkeypatch):
    """The decorator's refusal and a tuned kernel's first call at a bad shape showed the
    lookup's frames (``_call``, ``_prepare``, ``_lookup``) above their one line; each
    leaves as every API call's error does: the caller's frames and the call's one frame
    (the decorator's cut, the call's own ``__call__``: its hot path takes no wrapper)."""
    import traceback

    import sweeper.core._api_errors
    import sweeper.launcher

    monkeypatch.delenv("SWEEPER_DEBUG", raising=False)
    here = (__file__, "test_misuse_leaves_with_the_traceback_of_the_call_alone")
    at_call = (sweeper.core._api_errors.__file__, "call")

    def frames(err: BaseException) -> list[tuple[str, str]]:
        return [(f.filename, f.name) for f in traceback.extract_tb(err.__traceback__)]

    body = jit(_copy_body, interpret=True)
    with pytest.raises(SweeperError, match=r"key \['m'\] must name arguments") as err:
        sweeper.tuned_kernel(tuning, key=["m"], gpu=GPU)(body)
    assert frames(err.value) == [here, at_call]
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(body)
    with pytest.raises(SweeperError, match="must be positive integers") as err:
        k(torch.zeros(1), torch.zeros(1), 0)
    assert frames(err.value) == [here, (sweeper.launcher.__file__, "__call__")]
    with pytest.raises(SweeperError, match="gives no 'n'") as err:
        k(torch.zeros(1), torch.zeros(1))
    assert frames(err.value) == [here, (sweeper.launcher.__file__, "__call__")]
    with pytest.raises(SweeperError, match="must be positive integers") as err:
        k.config(torch.zeros(1), torch.zeros(1), True)
    assert frames(err.value) == [here, at_call]
    monkeypatch.setenv("SWEEPER_DEBUG", "1")             # the whole traceback
    with pytest.raises(SweeperError, match="must be positive integers") as err:
        k(torch.zeros(1), torch.zeros(1), 0)
    assert "_lookup" in [name for _, name in frames(err.value)]


def test_an_autotuned_function_is_refused_as_it_decorates(tuning):
    """Stacked on ``@triton.autotune`` (a from_autotune user's kernel), each call gave the
    autotuner the tuned meta-parameters, and Triton failed at the first call with
    ``Conflicting meta-parameters: BLOCK``; with no ``name=``, the decorator failed on the
    autotuner's missing ``__name__``.  Both are refused as it decorates, saying what to
    decorate instead."""
    import triton

    autotuned = triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])(
        jit(_copy_body, interpret=True))
    for name in ("copy1d", None):
        with pytest.raises(SweeperError, match=(
                r"^tuned_kernel: _copy_body is a @triton.autotune function, whose own "
                r"configs would clash with the tuned config's at each launch; allowed: a "
                r"@triton.jit function, such as the one it wraps: "
                r"sweeper.tuned_kernel\(\.\.\., name=NAME\)\(_copy_body.fn\)")):
            sweeper.tuned_kernel(tuning, key=["n"], name=name, gpu=GPU)(autotuned)
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(autotuned.fn)
    x, y = torch.randn(1024), torch.zeros(1024)
    k(x, y, 1024)                                                        # as it says
    assert torch.equal(x, y) and k.config(x, y, 1024).meta == {"BLOCK": 128}


def test_a_heuristics_function_is_launched_and_one_over_an_autotuner_refused(tuning):
    """A ``@triton.heuristics`` over the ``@triton.jit`` function is launched with the
    tuned config and its heuristic's values, its name (without ``name=``) the function's
    it wraps (the decorator failed on the heuristics' missing ``__name__``); one over a
    ``@triton.autotune`` is refused as the autotuner itself is (each launch would clash
    with its configs), naming the function to decorate."""
    import triton

    def copy_even(x, y, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) + EVEN, mask=offsets < n)

    even = {"EVEN": lambda args: args["n"] % args["BLOCK"] == 0}
    heuristic = triton.heuristics(even)(jit(copy_even, interpret=True))
    k = sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU)(heuristic)
    assert k.name == "copy_even"
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(heuristic)
    x, y = torch.randn(1024), torch.zeros(1024)
    k(x, y, 1024)
    assert torch.equal(x + 1, y) and k.config(x, y, 1024).meta == {"BLOCK": 128}
    over = triton.heuristics(even)(triton.autotune(
        configs=[triton.Config({"BLOCK": 128})], key=["n"])(jit(copy_even, interpret=True)))
    with pytest.raises(SweeperError, match=(
            r"^tuned_kernel: copy_even is a @triton.autotune function, whose own configs "
            r"would clash with the tuned config's at each launch")):
        sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(over)


def _centre_rows(X, Y, stride, N, BLOCK_N: tl.constexpr):  # type: ignore[no-untyped-def]
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + tl.program_id(0) * stride + cols, mask=cols < N, other=0.0)
    tl.store(Y + tl.program_id(0) * stride + cols, x - tl.sum(x, axis=0) / N, mask=cols < N)


def test_a_key_that_is_not_the_dimensions_tuned_over_is_refused_saying_what_to_do(tmp_path):
    """A row-wise kernel tuned over M, N on a grid of M rows takes N only (the README's
    layer norm): ``key=["N"]`` was looked up as a footprint of N elements and failed at
    the first call saying ``--dims M=...,N=...``, an option of another command; it is
    refused as it decorates, saying the key to give and what to use where a dimension
    is no argument."""
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"version": 1, "entries": [
        {"kernel": "centre", "gpu": GPU, "dtype": "float32", "footprint": 4 * 8 * n,
         "dims": {"M": 8, "N": n}, "grid_expr": "M", "block": 64, "meta": {"BLOCK_N": b},
         "gbps": 1.0, "median_ms": 1.0, "study": "s", "facts": {"sms": 4, "l2_bytes": 0},
         "top": [{"grid_expr": "M", "block": 64, "meta": {"BLOCK_N": b}, "slowdown": 1.0}]}
        for n, b in ((64, 64), (256, 256))]}))
    body = jit(_centre_rows, interpret=True)
    with pytest.raises(SweeperError, match=(
            r"^tuned_kernel centre: key \['N'\] is not the dimensions it was tuned over, M N; "
            r"give key=\['M', 'N'\], each an argument of the @triton.jit function \(it has "
            r"X, Y, stride, N, BLOCK_N\); where one is not, launch it with "
            r"sweeper.tuned\(\.\.\., dims=\{\.\.\.\}\) or the module `sweeper export "
            r"--format triton` writes \(configs\(\), grid\(meta, M=\.\.\.\)\)$")):
        sweeper.tuned_kernel(path, key=["N"], name="centre", gpu=GPU)(body)
    x = torch.randn(8, 60)
    cfg = sweeper.tuned("centre", dtype="float32", dims={"M": 8, "N": 60}, gpu=GPU, path=path)
    y = torch.empty_like(x)
    body[(cfg.grid,)](x, y, x.stride(0), 60, **cfg.launch_options())      # as it says
    torch.testing.assert_close(y, x - x.mean(dim=1, keepdim=True), rtol=1e-4, atol=1e-5)


def _renamed_body(x, y, n, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    _copy_body(x, y, n, BLOCK_SIZE)


def test_a_meta_parameter_renamed_since_the_study_is_one_line(tuning):
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(
        jit(_renamed_body, interpret=True))
    with pytest.raises(SweeperError, match=r"^tuned_kernel copy1d: the tuned config \(study "
                                           r"copy1d\) sets BLOCK, which is no argument of the "
                                           r"@triton.jit function \(it has x, y, n, "
                                           r"BLOCK_SIZE\); the kernel changed since it was "
                                           r"tuned"):
        k(torch.zeros(1024), torch.zeros(1024), 1024)


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


def _copy_elements_body(x, y, n_elements, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(y + offsets, tl.load(x + offsets, mask=mask), mask=mask)


def test_another_kernels_dimensions_leave_a_footprint_lookup_alone(tmp_path):
    from tests.test_export import study

    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)]), path)
    other = StudyStore(tmp_path / "add")                  # tuned over n_elements
    other.create({"study": "add", "kernel": "mod:add", "kernel_name": "add",
                  "environment": {"gpu": "Fake GPU", "sms": 4, "l2_bytes": 0}})
    other.append(TrialRecord(
        number=0, status=TrialStatus.OK,
        choice={"grid": "cdiv(n_elements, BLOCK)", "block": "64", "BLOCK": "128"},
        config=Config(Problem("float32", 4096, (("n_elements", 1024),)), grid=1, block=64,
                      meta={"BLOCK": 128}),
        stats=summarize([1.0] * 3), gbps=1.0))
    other.close()
    export_study(other, path)
    k = sweeper.tuned_kernel(path, key=["n_elements"], name="copy", gpu="Fake GPU")(
        Spy(jit(_copy_elements_body, interpret=True)))
    assert run(k, 1 << 18) == ((256,), {"num_warps": 4, "BLOCK": 1024})  # by its footprint


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


def test_the_hot_path_looks_nothing_up_after_the_first_call(kernel, monkeypatch):
    asked = []
    real = kernel.tuning.config
    monkeypatch.setattr(kernel.tuning, "config", lambda *a, **k: asked.append(k) or real(*a, **k))
    x = torch.randn(3000)
    for call in (lambda y: kernel(x, y, 3000), lambda y: kernel(x, y, n=3000),
                 lambda y: kernel(x=x, y=y, n=3000), lambda y: kernel(x, y, 3000)):
        y = torch.zeros_like(x)
        call(y)
        assert torch.equal(x, y)
    assert len(asked) == 1 and kernel.lookups == 1         # positional, keyword: one entry
    assert [(grid, o["num_warps"], o["BLOCK"], sorted(o)) for grid, o in kernel.fn.launches] \
        == [((24,), 2, 128, ["BLOCK", "num_warps"]), ((24,), 2, 128, ["BLOCK", "n", "num_warps"]),
            ((24,), 2, 128, ["BLOCK", "n", "num_warps", "x", "y"]),
            ((24,), 2, 128, ["BLOCK", "num_warps"])]
    with pytest.raises(SweeperError, match=r"tuned_kernel copy1d: the call gives no 'n' "
                                           r"\(key \['n'\]\)"):
        kernel(x, x)


def test_the_dtype_comes_from_the_first_tensor_wherever_it_is(tuning):
    x = torch.randn(1024)
    n_first = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(
        type("Stub", (), {"arg_names": ["n", "x", "y", "BLOCK"], "__name__": "copy1d",
                          "__getitem__": lambda self, grid: lambda *a, **o: None})())
    for _ in range(3):
        n_first(1024, x, x)
    assert n_first.lookups == 1                              # the hot path reads x's dtype
    with pytest.raises(SweeperError, match="no tuned config for copy1d float64 n=1024"):
        n_first(1024, x.double(), x.double())
    with pytest.raises(SweeperError, match="no tensor argument to read the dtype from"):
        n_first(1024, None, None)


def test_the_dtype_is_the_first_tensors_the_kernel_was_tuned_at(tuning):
    """A gather's int64 index table ahead of its float32 data: the dtype is the data's,
    which the kernel was tuned at, not "no tuned config for copy1d int64"."""
    x, index = torch.randn(1024), torch.arange(1024)
    gather = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(
        type("Stub", (), {"arg_names": ["index", "x", "y", "n", "BLOCK"],
                          "__name__": "copy1d",
                          "__getitem__": lambda self, grid: lambda *a, **o: None})())
    for _ in range(3):
        gather(index, x, x, 1024)
    assert gather.lookups == 1                          # the hot path reads x's dtype
    assert gather.config(index, x, x, 1024).dtype == "float32"
    with pytest.raises(SweeperError, match="no tuned config for copy1d int64 n=1024"):
        gather(index, index, index, 1024)           # no tensor at a dtype tuned: the first


#: n -> (block, BLOCK, median ms) of each config measured there: three per tuned shape
MEASURED = {1024: [(64, 128, 1.0), (128, 256, 1.2), (32, 64, 1.5)],
            65536: [(128, 1024, 1.0), (256, 2048, 1.1), (64, 512, 1.3)]}


@pytest.fixture
def tops(tmp_path):
    """A tuning file of ``copy1d`` whose tuned shapes keep three top configs each."""
    store = StudyStore(tmp_path / "tops")
    store.create({"study": "tops", "kernel": "tests:copy1d", "kernel_name": "copy1d",
                  "environment": {"gpu": GPU, "sms": 4, "l2_bytes": 0}})
    trials = [(n, *c) for n, configs in MEASURED.items() for c in configs]
    for i, (n, block, BLOCK, ms) in enumerate(trials):
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK,
            choice={"grid": "cdiv(n, BLOCK)", "block": str(block), "BLOCK": str(BLOCK)},
            config=Config(Problem("float32", 4 * n, (("n", n),)), grid=1, block=block,
                          meta={"BLOCK": BLOCK}),
            stats=summarize([ms] * 3), gbps=1.0 / ms))
    store.close()
    path = tmp_path / "tuning.json"
    export_study(store, path)
    return path


def fake_timer(spy, seconds_by_block, fails=()):
    """Times each launch by its ``BLOCK`` from ``seconds_by_block``: the fake GPU."""
    def timer(launch, reset, runs):
        out = []
        for _ in range(runs):
            reset()
            launch()
            block = spy.launches[-1][1]["BLOCK"]
            if block in fails:
                raise RuntimeError(f"out of resources: BLOCK={block}\nmore")
            out.append(seconds_by_block[block])
        return out
    return timer


#: the pick at n = 3000 (1024's winner, BLOCK 128) slower than BLOCK 512, a neighbour's
FAKE = {128: 4e-3, 256: 3e-3, 64: 5e-3, 1024: 2e-3, 2048: 2.5e-3, 512: 1e-3}


def test_an_untuned_shape_launches_its_measured_fastest_candidate(tops, caplog):
    spy = Spy(jit(_copy_body, interpret=True))
    k = sweeper.tuned_kernel(tops, key=["n"], gpu=GPU, measure_untuned=True,
                             timer=fake_timer(spy, FAKE))(spy)
    with caplog.at_level("INFO", logger="sweeper.launcher"):
        assert run(k, 3000) == ((6,), {"num_warps": 2, "BLOCK": 512})
    assert caplog.messages == ["tuned_kernel copy1d float32 n=3000: timed 6 of 6 candidates, "
                               "chose grid=6 block=64 BLOCK=512: 1 ms, the pick 4 ms"]
    assert k.config(torch.zeros(1), None, 3000).meta == {"BLOCK": 128}     # the file's pick
    found = k.measured[(3000, torch.float32)]
    assert found.seconds[0] == 4e-3 and found.seconds[found.chosen] == 1e-3
    assert len(spy.launches) == 6 * (1 + 3) + 1               # warmup + 3 timed each, the call
    run(k, 3000)
    run(k, 1024)                                              # tuned: its winner, not timed
    assert spy.launches[-2:] == [((6,), {"num_warps": 2, "BLOCK": 512}),
                                 ((8,), {"num_warps": 2, "BLOCK": 128})]
    assert len(spy.launches) == 6 * 4 + 3 and list(k.measured) == [(3000, torch.float32)]


def test_measuring_off_by_default_and_failing_candidates_are_skipped(tops, caplog):
    spy = Spy(jit(_copy_body, interpret=True))
    plain = sweeper.tuned_kernel(tops, key=["n"], gpu=GPU, timer=fake_timer(spy, FAKE))(spy)
    assert run(plain, 3000) == ((24,), {"num_warps": 2, "BLOCK": 128}) and not plain.measured
    spy = Spy(jit(_copy_body, interpret=True))
    k = sweeper.tuned_kernel(tops, key=["n"], gpu=GPU, measure_untuned=True,
                             timer=fake_timer(spy, FAKE, fails=(512,)))(spy)
    with caplog.at_level("INFO", logger="sweeper.launcher"):
        assert run(k, 3000) == ((3,), {"num_warps": 4, "BLOCK": 1024})
    assert caplog.messages[-1].endswith(
        "timed 5 of 6 candidates, chose grid=3 block=128 BLOCK=1024: 2 ms, the pick 4 ms; "
        "1 failed (grid=6 block=64 BLOCK=512: RuntimeError: out of resources: BLOCK=512)")


def _scale_body(x, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 0.5, mask=offsets < n)


def _accumulate_body(x, y, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    total = tl.load(y + offsets, mask=offsets < n) + tl.load(x + offsets, mask=offsets < n)
    tl.store(y + offsets, total, mask=offsets < n)


def test_timed_launches_restore_what_the_kernel_writes(tops):
    x = torch.randn(3000)
    scale = sweeper.tuned_kernel(tops, key=["n"], name="copy1d", gpu=GPU,
                                 measure_untuned=True, restore=["x"])(
        jit(_scale_body, interpret=True))
    scaled = x.clone()
    scale(scaled, 3000)                       # 6 candidates x 4 launches, then the call's
    assert torch.equal(scaled, x * 0.5) and scale.measured
    unguarded = sweeper.tuned_kernel(tops, key=["n"], name="copy1d", gpu=GPU,
                                     measure_untuned=True)(jit(_scale_body, interpret=True))
    scaled = x.clone()
    unguarded(scaled, 3000)                   # why measuring is off by default
    assert not torch.equal(scaled, x * 0.5)
    add = sweeper.tuned_kernel(tops, key=["n"], name="copy1d", gpu=GPU, measure_untuned=True,
                               reset_to_zero=["y"])(jit(_accumulate_body, interpret=True))
    y = torch.zeros(3000)
    add(x, y, 3000)
    assert torch.equal(y, x) and add.measured


def test_restore_misuse_is_one_line(tops):
    body = jit(_scale_body, interpret=True)
    with pytest.raises(SweeperError, match=r"tuned_kernel _scale_body: restore \['z'\] must "
                                           r"name arguments of a @triton.jit function"):
        sweeper.tuned_kernel(tops, key=["n"], restore=["z"], gpu=GPU)(body)
    with pytest.raises(SweeperError, match="reset_to_zero must be a list of argument names, "
                                           "got 'x'"):
        sweeper.tuned_kernel(tops, key=["n"], reset_to_zero="x")
    k = sweeper.tuned_kernel(tops, key=["n"], name="copy1d", gpu=GPU, measure_untuned=True,
                             restore=["n"])(body)
    x = torch.ones(3000)
    with pytest.raises(SweeperError, match="tuned_kernel copy1d: 'n' is to be restored around "
                                           "timed launches but the call gives int, not a "
                                           "tensor"):
        k(x, 3000)
    assert torch.equal(x, torch.ones(3000))                 # refused before any launch


@pytest.mark.gpu
def test_measuring_on_the_gpu_times_with_cuda_events_and_restores(tops, caplog):
    scale = sweeper.tuned_kernel(tops, key=["n"], name="copy1d", gpu=GPU,
                                 measure_untuned=True, restore=["x"])(
        jit(_scale_body, interpret=False))
    x = torch.randn(3000, device="cuda")
    scaled = x.clone()
    with caplog.at_level("INFO", logger="sweeper.launcher"):
        scale(scaled, 3000)
    torch.cuda.synchronize()
    assert torch.equal(scaled, x * 0.5)
    found = scale.measured[(3000, torch.float32)]
    assert found.ran == 6 and all(0 < s < 0.1 for s in found.seconds)
    assert "timed 6 of 6 candidates, chose grid=" in caplog.messages[-1]


def test_a_function_named_otherwise_than_its_tuned_kernel_is_told_to_pass_name(tuning):
    """Without ``name=`` the winners are looked up by the jitted function's own name; where
    the file tunes no kernel of that name (a from_autotune study keeps its winners under
    its ``sweeper.kernel``'s) the error says to pass ``name=``; with ``name=`` given, the
    lookup's own error stands alone."""
    fn = Spy(jit(_copy_body, interpret=True))
    fn.__name__ = "row_copy_kernel"
    x = torch.zeros(1024)
    with pytest.raises(SweeperError, match="no tuned config for row_copy_kernel") as err:
        sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU)(fn)(x, x, 1024)
    assert str(err.value).endswith(
        "; tuned_kernel looks the winners up by the @triton.jit function's name, "
        "'row_copy_kernel', where name= is not given: pass name= the kernel's name in the "
        "tuning file")
    assert "; tuned kernels: tests:copy1d;" in str(err.value)
    with pytest.raises(SweeperError) as err:
        sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU, name="row_copy")(fn)(x, x, 1024)
    assert "pass name=" not in str(err.value)
    x64 = torch.zeros(1024, dtype=torch.float64)      # a kernel the file has: as it was
    with pytest.raises(SweeperError) as err:
        sweeper.tuned_kernel(tuning, key=["n"], gpu=GPU)(Spy(fn.fn))(x64, x64, 1024)
    assert "pass name=" not in str(err.value)


def test_a_call_that_gives_a_tuned_meta_parameter_is_refused(tuning):
    """A call that passed ``BLOCK`` itself replaced the tuned one while the grid stayed
    the one computed for it: ``BLOCK=64`` on 8 programs tuned for ``BLOCK=128`` left half
    of ``y`` unwritten, silently (and given by position, Triton failed with "multiple
    values for argument"); such a call is refused, naming what to leave out, before
    anything launches."""
    k = sweeper.tuned_kernel(tuning, key=["n"], name="copy1d", gpu=GPU)(
        jit(_copy_body, interpret=True))
    x, y = torch.randn(1024), torch.zeros(1024)
    for args, kwargs in (((x, y, 1024), {"BLOCK": 64}), ((x, y, 1024, 64), {}),
                         ((x, y, 1024), {"num_warps": 4})):
        for _ in range(2):                     # the first call at the shape, then a cached one
            with pytest.raises(SweeperError) as err:
                k(*args, **kwargs)
            given = next(iter(kwargs), "BLOCK")
            tuned = {"BLOCK": 128, "num_warps": 2}[given]
            assert str(err.value) == (
                f"tuned_kernel copy1d: the call gives {given}={kwargs.get(given, 64)!r}, "
                f"which the tuned config sets with its grid ({given}={tuned}); allowed: leave "
                f"{given} out of the call (to launch with values of your own, call the "
                "@triton.jit function itself)")
        k(x, y, 1024)
    assert not y.eq(0).any() and torch.equal(x, y)
