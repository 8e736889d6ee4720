"""On a CUDA GPU: the event timer agrees with triton's do_bench, and a sweep runs end to end."""

import statistics

import pytest
import torch

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.space import Config, Problem
from tests.conftest import sweep_study

pytestmark = pytest.mark.gpu


def test_event_timer_agrees_with_do_bench():
    from triton.testing import do_bench

    device = open_device("cuda")
    kernel = load_kernel("copy")
    problem = Problem("float32", 256 << 20)
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    config = Config(problem=problem, grid=problem.n // 1024, block=256, meta={"BLOCK": 1024})
    ours = statistics.median(device.time(lambda: kernel.launch(buffers, config), warmup=10,
                                         repeat=100, flush=True))
    theirs = do_bench(lambda: kernel.launch(buffers, config), return_mode="median")
    assert ours == pytest.approx(theirs, rel=0.03)


def test_a_short_kernels_first_sample_after_the_warmup_reads_as_the_rest():
    """The warmup turns the sampling loop (``CudaDevice.warm_up``): after launches back to
    back, a 64 MiB copy's first timed sample read a median 1.5× its settled time on an
    H100, and a 15 µs atomic sum's 3.6× (benchmarks/first_samples.py)."""
    device = open_device("cuda")
    x = torch.randn(4 << 20, device="cuda")
    y = torch.empty_like(x)
    ratios = []
    for _ in range(12):
        device.warm_up(lambda: y.copy_(x), 10, flush=True)
        samples = device.time(lambda: y.copy_(x), warmup=0, repeat=20, flush=True)
        ratios.append(samples[0] / statistics.median(samples[10:]))
    assert statistics.median(ratios) < 1.15, ratios


def test_a_long_launch_is_warmed_up_by_two_turns_and_a_short_one_by_all():
    device = open_device("cuda")
    a = torch.randn(4096, 4096, device="cuda")
    c = torch.empty_like(a)
    x = torch.randn(1 << 20, device="cuda")
    y = torch.empty_like(x)
    turns: list[str] = []

    def long() -> None:                  # a float32 matmul 4096³: milliseconds
        turns.append("long")
        torch.mm(a, a, out=c)

    def short() -> None:                 # a 4 MiB copy: microseconds
        turns.append("short")
        y.copy_(x)

    for launch in (long, short):
        device.warm_up(launch, 10, flush=True, enough_s=0.001)
    assert turns.count("long") == 2 and turns.count("short") == 10


def test_sweep_on_gpu_end_to_end(small_space, tmp_path):
    store, summary = sweep_study(small_space, open_device("cuda"), tmp_path / "gpu")
    trials, baselines = store.records()
    assert summary.measured == 6 and all(t.ok for t in trials if t.status.value != "invalid")
    assert store.meta()["environment"]["cuda"]
    assert baselines[0].gbps > 0
    # the report too, with the GPU machine's own libraries (its pandas once crashed every
    # report where the development machine's did not)
    from sweeper.report import write_report

    files = write_report(store)
    assert files.images and "| 1 |" in files.markdown.read_text()


def test_nvml_state_graph_batches_and_launch_floor():
    device = open_device("cuda")
    state = device.state()
    if device.reader.available:
        assert state.sm_mhz > 0 and state.mem_mhz > 0 and device.reader.usual_sm_mhz > 0
    floor = device.launch_floor_ms()
    assert 0.0005 < floor < 0.2
    kernel = load_kernel("copy")
    problem = Problem("float32", 4 << 20)
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    config = Config(problem=problem, grid=problem.n // 1024, block=256, meta={"BLOCK": 1024})
    from sweeper.measure import StopRule

    rule = StopRule(kind="fixed", repeat=20)
    single = device.measure(lambda: kernel.launch(buffers, config), warmup=5, rule=rule,
                            flush=False)
    graphed = device.measure(lambda: kernel.launch(buffers, config), warmup=5, rule=rule,
                             flush=False, batch=20, graph=True)
    assert graphed.graph and graphed.batch == 20
    # per-launch time from a graph of 20 launches cannot exceed one launch with its overhead
    assert statistics.median(graphed.timing.samples) < statistics.median(single.timing.samples)
    buffers["dst"].zero_()
    kernel.launch(buffers, config)
    assert torch.equal(buffers["dst"], buffers["src"])


@pytest.mark.parametrize("workers", ["inline", "process"])
def test_an_illegal_address_is_recorded_and_the_run_goes_on(write_space, tmp_path, workers):
    """A real fault: the configs with BLOCK 1024 read past their buffer.  Each is recorded
    as crashed with CUDA's message; measuring in the command's process, the first hands
    the rest of the sweep to worker processes; with a worker process (the default on a
    GPU), a fresh worker takes over.  Every other config is measured, in one command."""
    from tests.conftest import SMALL_SPACE, run_sweeper_process

    path = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:IllegalAddressOnBigBlock"))
    run, measured = run_sweeper_process(path, "cuda", tmp_path, "tiny",
                                        extra=("--workers", workers))
    assert run.returncode == 3, run.stderr        # measured; the kernel crashed at some
    assert "fresh process" not in run.stderr
    assert run.stderr.count("the sweep went on in worker processes") == (workers == "inline")
    assert len({t.key() for t in measured}) == len(measured) == 6
    crashed = [t for t in measured if t.status.value == "crashed"]
    assert len(crashed) == 4 and all(t.config.meta["BLOCK"] == 1024 for t in crashed)
    assert all("illegal memory access" in t.reason and "unusable" in t.reason
               for t in crashed)
    assert sum(t.ok for t in measured) == 2


@pytest.mark.parametrize("workers", ["inline", "process"])
def test_a_kernel_that_never_returns_is_recorded_as_timeout_and_the_run_goes_on(
        write_space, tmp_path, workers):
    """A real hang: for BLOCK 1024 a kernel spins on a flag nothing sets.  After
    measure.timeout each is recorded as timeout, `sweeper run` re-executes itself (inline)
    or stops the worker and starts a fresh one (process), and the other configs are
    measured."""
    from tests.conftest import SMALL_SPACE, run_sweeper_process

    text = SMALL_SPACE.replace("kernel: copy", "kernel: tests.kernels_for_tests:SpinsOnBigBlock")
    path = write_space(text.replace("measure: {warmup: 1, repeat: 3}",
                                    "measure: {warmup: 1, repeat: 3, timeout: 20s}"))
    run, measured = run_sweeper_process(path, "cuda", tmp_path, "tiny", timeout=500,
                                        extra=("--workers", workers))
    assert run.returncode == 3, run.stderr        # measured; the kernel hung at some
    assert len({t.key() for t in measured}) == len(measured) == 6
    hung = [t for t in measured if t.status.value == "timeout"]
    assert len(hung) == 4 and all(t.config.meta["BLOCK"] == 1024 for t in hung)
    assert sum(t.ok for t in measured) == 2


def test_a_sustained_matmul_shows_the_power_cap_and_a_cool_down_undoes_it():
    """bf16 8192³ draws an H200 to its power limit within a second; the clocks window sees
    it, and after a 1 s cool-down the next samples run at full clock again."""
    from sweeper.measure import Duty, StopRule, power_bound

    device = open_device("cuda")
    if not device.reader.available:
        pytest.skip("NVML is not available")
    assert device.power_limit_w() > 0
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b, c = torch.randn_like(a), torch.empty_like(a)
    launch = lambda: torch.matmul(a, b, out=c)  # noqa: E731
    hot = device.measure(launch, warmup=0, rule=StopRule(kind="fixed", repeat=400),
                         flush=False, duty=Duty("load", 2.0))
    assert hot.window is not None and hot.window.polls > 0
    capped = power_bound(hot.window.reasons, hot.window.power_w_max, device.power_limit_w())
    if capped is None and "H200" not in device.facts().name:
        # an H100 of 700 W ran it at 1980 MHz, 459-495 W, no throttle reason: no premise
        pytest.skip(f"{device.facts().name} stayed under its power cap "
                    f"({hot.window.power_w_max:.0f} W of {device.power_limit_w():.0f} W, "
                    "no throttle reason): nothing for a cool-down to undo")
    assert capped is not None
    cool = device.measure(launch, warmup=0, rule=StopRule(kind="fixed", repeat=20),
                          flush=False, duty=Duty("cool", 1.0))
    assert statistics.median(cool.timing.samples) < 0.95 * statistics.median(
        hot.timing.samples)


def test_cuda_bounds_are_plausible_and_a_real_copy_stays_within_them():
    from sweeper.bounds import ARCHITECTURES
    from sweeper.space import MeasureSpec
    from sweeper.trial import run_trial

    device = open_device("cuda")
    bounds = device.bounds()
    assert bounds.dram is not None, bounds.absent
    assert 0.5e12 < bounds.dram.per_s < 20e12, bounds.dram
    assert bounds.l2_bytes == device.facts().l2_bytes
    if torch.cuda.get_device_capability() in ARCHITECTURES:
        assert bounds.sm_path is not None and bounds.sm_path.per_s > bounds.dram.per_s
        assert 10e12 < bounds.flops["float16"].per_s < 10e15, bounds.flops["float16"]
    if torch.cuda.get_device_capability() == (9, 0):       # H100 / H200: ~1 PFLOP/s bf16
        assert 0.7e15 < bounds.flops["bfloat16"].per_s < 1.3e15
    kernel = load_kernel("copy")
    problem = Problem("float32", 256 << 20)
    config = Config(problem=problem, grid=problem.n // 1024, block=256, meta={"BLOCK": 1024})
    result = run_trial(kernel, kernel.allocate(problem, "cuda"), config, device,
                       MeasureSpec(warmup=5, repeat=20, stop="fixed"),
                       torch.Generator(device="cuda").manual_seed(0))
    assert result.status.value == "ok", result.reason
    assert result.gbps * 1e9 < bounds.dram.per_s
    assert bounds.beyond(kernel.bytes_moved(problem), 0, "float32",
                         result.stats.median * 1e-3) is None


@pytest.mark.parametrize("graph", [False, True])
def test_a_memoising_kernel_is_caught_after_the_timed_samples_on_the_gpu(graph):
    """The kernel copies only when its input changed: the verified first launch is right,
    the timed ones (plain, or replayed from a graph captured after the poisoning) do
    nothing, and the output checked after them is still the poison."""
    from sweeper.space import MeasureSpec
    from sweeper.trial import TrialStatus, run_trial

    device = open_device("cuda")
    kernel = load_kernel("tests.kernels_for_tests:Memoises")
    problem = Problem("float32", 64 << 20)
    config = Config(problem=problem, grid=problem.n // 1024, block=256, meta={"BLOCK": 1024})
    measure = MeasureSpec(warmup=5, repeat=20, stop="fixed", batch=10 if graph else 1,
                          graph=graph)
    result = run_trial(kernel, kernel.allocate(problem, "cuda"), config, device, measure,
                       torch.Generator(device="cuda").manual_seed(0))
    assert result.status is TrialStatus.WRONG_ANSWER
    assert result.reason.startswith("the first launch was right, but the output after the "
                                    "timed samples (20) was wrong: ")
    assert result.reason.endswith("the kernel stopped doing the work after the verified launch")


def test_a_memoising_kernel_never_wins_a_gpu_sweep(write_space, tmp_path):
    from tests.conftest import SMALL_SPACE

    path = write_space(SMALL_SPACE.replace("kernel: copy",
                                           "kernel: tests.kernels_for_tests:Memoises"))
    store, summary = sweep_study(path, open_device("cuda"), tmp_path / "memo")
    measured = [t for t in store.records()[0] if t.status.value != "invalid"]
    # caught at every config alike: the sweep stops after the first five
    assert len(measured) == 5 and summary.best is None and summary.finals == []
    assert all(t.status.value == "wrong_answer" and "stopped doing the work" in t.reason
               for t in measured)


def test_a_copy_claiming_1000x_its_traffic_is_impossible_without_calibration(
        write_space, tmp_path):
    path = write_space("""
        study: claims
        kernel: tests.kernels_for_tests:ClaimsTooMuch
        sampler: exhaustive
        params:
          grid: ["cdiv(n, BLOCK)"]
          block: [128, 256]
          BLOCK: [1024]
          dtype: [float32]
          footprint: [256MiB]
        measure: {warmup: 5, repeat: 20}
    """)
    device = open_device("cuda")
    store, summary = sweep_study(path, device, tmp_path / "claims", ceilings=None)
    measured = store.records()[0]
    assert len(measured) == 2 and summary.best is None and summary.finals == []
    name = device.facts().name
    for t in measured:
        assert t.status.value == "impossible"
        assert t.reason.startswith("faster than physics allows (")
        assert f"beyond the {name}'s DRAM bound of " in t.reason
        assert "memory clock x" in t.reason and "-bit bus x 2 for DDR" in t.reason
        assert t.reason.endswith("still beyond after re-verifying and re-timing")
    assert store.meta()["bounds"]["dram"]["per_s"] == device.bounds().dram.per_s


def test_a_non_square_bf16_matmul_verifies_and_matches_torch_matmul_on_the_gpu():
    """M, N, K independent on the device: 4096 x 2048 x 8192 bf16 verified against a float64
    product and within 1 % of torch.matmul's result, with a launch grid from the dims."""
    kernel = load_kernel("matmul")
    problem = Problem("bfloat16", 4096 * 8192 * 2, (("M", 4096), ("N", 2048), ("K", 8192)))
    buffers = kernel.allocate(problem, "cuda")
    assert tuple(buffers["c"].shape) == (4096, 2048)
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    kernel.poison(buffers)
    meta = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 3}
    kernel.launch(buffers, Config(problem=problem, grid=132, block=256, meta=meta))
    torch.cuda.synchronize()
    assert kernel.check(buffers) is None
    ours = buffers["c"].float()
    theirs = torch.matmul(buffers["a"], buffers["b"]).float()
    assert float((ours - theirs).norm() / theirs.norm()) < 1e-2


def test_two_gpus_each_measure_their_share_once(small_space, tmp_path):
    """One worker process per GPU: every config measured once, the records name both
    GPUs by index and name, and the winner is chosen as on one GPU."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    store, summary = sweep_study(small_space, open_device("cuda"), tmp_path / "two",
                                 gpus=[0, 1], processes=True)
    measured = [t for t in store.records()[0] if t.status.value != "invalid"]
    assert len(measured) == len({t.key() for t in measured}) == 6
    assert all(t.ok for t in measured) and summary.stopped_by.startswith("complete")
    assert {t.gpu.index for t in measured} == {0, 1}
    assert {t.gpu.name for t in measured} == {torch.cuda.get_device_name(i) for i in (0, 1)}


def test_two_gpus_each_measure_the_finals_and_say_whether_they_agree(small_space, tmp_path):
    """The finals on both GPUs at once, one record per GPU naming it, over the same
    finalists; the pick is the agreed (or best common) config of both."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    from sweeper.finals import FinalRecord
    from sweeper.winners import Winners

    store, summary = sweep_study(small_space, open_device("cuda"), tmp_path / "finals",
                                 gpus=[0, 1], processes=True)
    finals = store.read(FinalRecord)
    assert not summary.finals_lost
    assert [f.gpu.index for f in finals] == [0, 1]
    assert [f.gpu.name for f in finals] == [torch.cuda.get_device_name(i) for i in (0, 1)]
    assert len({tuple(sorted(r.number for r in f.finalists)) for f in finals}) == 1
    trials = store.records()[0]
    pick = next(iter(Winners.of(store).picks(trials).values()))
    assert pick.agreement is not None and pick.trial.number == pick.agreement.chosen
    assert pick.agreement.headline().startswith(
        "one config for every GPU: " if pick.agreement.agreed else "the GPUs disagree")


def test_with_two_gpus_a_worker_watches_its_own_gpu_through_nvml():
    """A worker for GPU 1 sees it as CUDA device 0 (CUDA_VISIBLE_DEVICES=1); its NVML
    reader must read GPU 1, which NVML numbers 1 whatever that variable says."""
    import os
    import subprocess
    import sys

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    probe = ("import pynvml; from sweeper.devices import open_device; d = open_device('cuda'); "
             "print(pynvml.nvmlDeviceGetIndex(d.reader._handle))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "1"}, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "1"
