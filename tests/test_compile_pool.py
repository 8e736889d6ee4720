"""Compiling ahead: compile processes that hold no GPU compile for a named target
(sm_90 here, without a GPU) into Triton's disk cache, under the key a launch looks up;
configs reach them in the order the sweep measures them; a compiler's refusal is the
trial's compile_error; the processes are started once and reused."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.kernels._jit import jit
from sweeper.kernels._precompile import (
    Compile,
    Precompiled,
    Precompiler,
    Target,
    compiling_for,
)
from sweeper.kernels.copy import _copy_body
from sweeper.space import load_space
from sweeper.store import StudyStore, key_of
from sweeper.sweep import _compile_ahead
from sweeper.sweep._compile_ahead import CompileOptions
from sweeper.sweep._compile_pool import (
    WAIT_S,
    CompilePool,
    PoolSetup,
    binary_of,
    default_size,
)
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE, sweep_study

SM90 = Target("cuda", 90, 32)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty Triton cache, shared with the compile processes through the environment."""
    folder = tmp_path / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(folder))
    return folder


def _configs(path, device):
    from sweeper.study import enumerate_choices

    space = load_space(path)
    facts = device.facts()
    valid, _ = enumerate_choices(space, facts.env(), facts.max_footprint)
    return space, [(key_of(c), space.resolve(c, facts.env(), facts.max_footprint))
                   for c in valid]


def test_targets_parse_and_refuse_with_one_line():
    assert Target.parse("sm_90") == Target.parse("90") == SM90
    assert str(Target.parse("sm_100a")) == "sm_100"
    with pytest.raises(Exception, match="compile target 'h200': expected a CUDA "
                       "architecture such as sm_90"):
        Target.parse("h200")


def test_default_size_leaves_a_core_per_worker_and_the_coordinator():
    assert default_size(1, cores=16) == 8
    assert default_size(2, cores=8) == 5
    assert default_size(1, cores=2) == 0


def test_the_pool_compiles_for_sm90_into_the_cache_key_a_launch_looks_up(
        write_space, cache_dir, monkeypatch):
    """The pool compiles copy for sm_90 without a GPU; then Triton's own warm-up of the
    same arguments (what a launch computes) finds it in the cache: same key, no compile."""
    device = open_device("interpret")
    space, configs = _configs(write_space(SMALL_SPACE), device)
    key, config = configs[0]
    pool = CompilePool(PoolSetup(space, SM90, list(sys.path)), 1)
    try:
        pool.wait_started()
        pool.ahead([(key, config)])       # handed over at once: take() waits for it
        result = pool.take(key)
    finally:
        pool.close()
    assert result is not None and result.status is Compile.COMPILED and result.kernels == 1
    written = sorted(os.listdir(cache_dir))
    assert written

    from triton.compiler.compiler import ASTSource
    from triton.runtime.cache import get_cache_manager

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again: the pool's artifacts were not found")

    monkeypatch.setattr(ASTSource, "make_ir", no_compile)
    fresh = jit(_copy_body, interpret=False)       # its own in-memory cache: empty
    with compiling_for(SM90):
        compiled = fresh.warmup(torch.float32, torch.float32, config.problem.n,
                                grid=(config.grid,), num_warps=config.num_warps,
                                WIDE=False, **config.meta)
    assert os.path.basename(get_cache_manager(compiled.hash).cache_dir) in written
    assert sorted(os.listdir(cache_dir)) == written         # nothing new was written


def test_configs_sharing_a_binary_are_compiled_once(write_space, cache_dir):
    """Configs that differ only in their grid share a binary: the first is compiled, the
    others are not queued, and taking one waits for that compile, then leaves the launch
    to the worker (which loads the binary); ``limit`` counts compiles, not configs."""
    device = open_device("interpret")
    space, configs = _configs(write_space(SMALL_SPACE), device)
    by_binary: dict = {}
    for key, config in configs:
        by_binary.setdefault(binary_of(config), []).append(key)
    shared = next(keys for keys in by_binary.values() if len(keys) > 1)
    assert len(by_binary) < len(configs)
    configs.sort(key=lambda kc: kc[0] not in shared)     # the shared binary's first
    first, members = shared[0], shared[1:]
    pool = CompilePool(PoolSetup(space, SM90, list(sys.path)), 1)
    try:
        assert pool.ahead(iter(configs), limit=1) == 1          # one compile queued
        assert all(pool.known(k) for k in shared) and pool.pending() == 1
        assert not any(pool.known(k) for k, _ in configs if k not in shared)
        pool.wait_started()
        assert pool.take(members[0]) is None          # waited for the compile, then left
        assert first in pool.done and pool.compiled_by[first] in pool.pids
        assert not pool.known(members[0])
        assert pool.take(first).status is Compile.COMPILED
        assert pool.ahead(iter(configs)) == len(by_binary) - 1  # the others, once each
        assert pool.leader[shared[-1]] == shared[0]
    finally:
        pool.close()
    assert pool.handed[0] == first


def test_a_refused_config_is_the_compile_error_serial_compiling_gives(cache_dir):
    kernel = load_kernel("tests.kernels_for_tests:RefusedOnBigBlock")
    device = open_device("interpret")
    _, configs = _configs(_space_of("tests.kernels_for_tests:RefusedOnBigBlock"), device)
    big = next(c for _, c in configs if c.meta["BLOCK"] > 256)
    result = Precompiler(kernel, SM90).compile(big)
    assert result.status is Compile.FAILED
    # what the worker's own compile would record: Triton's message and the kernel's line
    assert result.reason == (
        'CompileTimeAssertionFailure: BLOCK must be at most 256 (at kernels_for_tests.py:204: '
        'tl.static_assert(BLOCK <= 256, "BLOCK must be at most 256"))')


def test_a_launch_through_triton_heuristics_is_compiled_ahead_not_run(cache_dir, write_space):
    """A short kernel's launch through a ``@triton.heuristics`` (which calls the jitted
    function's ``run``, never ``kernel[grid]``) is compiled for the target like a plain
    launch: it was run on the meta tensors instead, and left to the worker."""
    import json

    name = "tests.short_kernels_for_tests:heuristic_scale"
    device = open_device("interpret")
    _, configs = _configs(write_space(json.dumps({
        "study": "heuristic", "kernel": name, "sampler": "exhaustive",
        "params": {"BLOCK": [256], "n": [1024]}}), "h.json"), device)
    result = Precompiler(load_kernel(name), SM90).compile(configs[0][1])
    assert (result.status, result.reason, result.kernels) == (Compile.COMPILED, "", 1)
    assert os.listdir(cache_dir)


_written: dict[str, str] = {}


def _space_of(kernel: str) -> str:
    return _written[kernel]


@pytest.fixture(autouse=True)
def _spaces(write_space):
    _written["tests.kernels_for_tests:RefusedOnBigBlock"] = str(write_space(
        SMALL_SPACE.replace("kernel: copy", "kernel: tests.kernels_for_tests:RefusedOnBigBlock")
        .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024]")))


class _Recorded(CompilePool):
    """The pool a sweep starts, kept for the test to read once the sweep closed it; its
    processes are waited for, as a sweep on a GPU waits for its worker's start-up, and so
    is each compile in progress, as where compiling takes the worker as long (the
    interpreter's trials here end before the processes are ready, and compile nothing)."""

    made: ClassVar[list[_Recorded]] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _Recorded.made.append(self)
        self.wait_started()

    def worth_waiting_s(self) -> float:
        return WAIT_S


def test_a_sweep_compiles_ahead_in_measuring_order_reusing_its_processes(
        cache_dir, tmp_path, monkeypatch):
    """Through a whole sweep: configs reach the pool in the order they are measured, two
    processes compile all of them, a refused config is recorded as the compile_error
    that compiling it serially gives, and every other config is measured as usual."""
    monkeypatch.setattr(_compile_ahead, "CompilePool", _Recorded)
    # every config counts as ready: the sampler then measures in its plan's order, which
    # a config built early would otherwise jump (a race on a loaded machine)
    monkeypatch.setattr(_compile_ahead.CompileAhead, "ready", lambda self, params: True)
    _Recorded.made.clear()
    path = _space_of("tests.kernels_for_tests:RefusedOnBigBlock")
    store, _ = sweep_study(path, open_device("interpret"), tmp_path / "s",
                           compile=CompileOptions(2, SM90), finals=False)
    (pool,) = _Recorded.made
    trials = sorted((t for t in store.records()[0] if t.status is not TrialStatus.INVALID),
                    key=lambda t: t.number)
    order = [t.key() for t in trials]
    assert pool.handed == [k for k in order if k in set(pool.handed)]
    assert len(pool.handed) >= 2
    assert len(pool.pids) == 2 and not pool.deaths
    assert len(pool.compiled_by) > len(set(pool.compiled_by.values()))   # reused
    assert set(pool.compiled_by.values()) <= pool.pids
    kernel = load_kernel("tests.kernels_for_tests:RefusedOnBigBlock")
    serial = Precompiler(kernel, SM90)
    for t in trials:
        if t.config.meta["BLOCK"] > 256 and t.key() in pool.compiled_by:
            assert t.status is TrialStatus.COMPILE_ERROR
            assert t.reason == serial.compile(t.config).reason
        elif t.config.meta["BLOCK"] <= 256:
            assert t.ok, t.reason
    assert any(t.status is TrialStatus.COMPILE_ERROR for t in trials)


class _Instant:
    """A pool that compiles each config the moment it is handed over, as the compiler of
    :class:`~tests.kernels_for_tests.RefusedOnBigBlock` would: BLOCK > 256 refused."""

    made: ClassVar[list[_Instant]] = []

    def __init__(self, setup=None, size=2):
        self.size, self.created_at, self.built = size, time.perf_counter(), set()
        self.handed, self.done = [], {}
        _Instant.made.append(self)

    def known(self, key):
        return key in self.done

    def ahead(self, configs, limit=None):
        queued = 0
        for key, config in configs:
            if limit is not None and queued >= limit:
                break
            self.handed.append(config)
            self.done[key] = Precompiled(Compile.FAILED, "CompilationError: too big", 0.1) \
                if config.meta["BLOCK"] > 256 else Precompiled(Compile.COMPILED, "", 0.1, 1)
            queued += 1
        return queued

    def pending(self):
        return 0

    def take(self, key, wait_s=WAIT_S):
        return self.done.pop(key, None)

    def worth_waiting_s(self):
        return 0.0

    def close(self):
        pass


def test_a_config_the_kernel_turns_down_is_never_compiled_ahead_nor_a_compile_error(
        write_space, tmp_path, monkeypatch):
    """The kernel's refusal is asked before a config is handed to the pool: a config it
    turns down is never compiled ahead, and is skipped by the kernel with its reason,
    not recorded as the compile_error the compiler would have made of it."""
    from sweeper.outcome import KERNEL, skip_cause

    monkeypatch.setattr(_compile_ahead, "CompilePool", _Instant)
    _Instant.made.clear()
    path = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:TurnsDownBigBlocks")
        .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024]"))
    store, _ = sweep_study(path, open_device("interpret"), tmp_path / "s",
                           compile=CompileOptions(2, SM90), finals=False)
    (pool,) = _Instant.made
    assert pool.handed and all(c.meta["BLOCK"] <= 256 for c in pool.handed)
    trials = [t for t in store.records()[0] if t.config is not None]
    big = [t for t in trials if t.config.meta["BLOCK"] > 256]
    assert len(big) == 8 and all(t.status is TrialStatus.INVALID for t in big)
    assert all(t.reason.endswith("is past the 256 this kernel takes") for t in big)
    assert all(skip_cause(t.reason, True) == KERNEL for t in big)
    assert all(t.ok for t in trials if t.config.meta["BLOCK"] <= 256)


def test_a_pool_started_with_the_workers_has_what_the_kernel_turns_down_taken_back(
        write_space, tmp_path):
    """A pool started before the kernel was imported was handed every valid config; the
    sweep takes back, uncompiled, those the kernel turns down (a config sharing the
    binary of one taken back is handed over again as its own)."""
    path = write_space(SMALL_SPACE.replace(
        "kernel: copy", "kernel: tests.kernels_for_tests:TurnsDownBigBlocks")
        .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024]"))
    device = open_device("interpret")
    _, configs = _configs(path, device)
    taken = []

    class Taken(CompilePool):
        def take(self, key, wait_s=WAIT_S):
            taken.append(dict(configs)[key].meta["BLOCK"])
            return super().take(key, wait_s)

    pool = Taken(None, 0)   # type: ignore[arg-type] - no process: configs wait
    try:
        pool.ahead(configs)
        assert pool.withdraw(lambda key, config: config is configs[0][1]) == 1
        follower = next(k for k, c in configs[1:] if binary_of(c) == binary_of(configs[0][1]))
        assert not pool.known(configs[0][0]) and not pool.known(follower)
        assert pool.ahead(configs[1:]) == 1 and pool.leader[follower] == follower

        store, _ = sweep_study(path, device, tmp_path / "s",
                               compile=CompileOptions(pool=pool), finals=False)
        # none waited to be compiled until the sweep reached it
        assert [c.meta["BLOCK"] for _, c in pool.waiting if c.meta["BLOCK"] > 256] == []
        assert taken and max(taken) <= 256
        big = [t for t in store.records()[0] if t.config and t.config.meta["BLOCK"] > 256]
        assert big and all(t.status is TrialStatus.INVALID for t in big)
    finally:
        pool.close()


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_an_adaptive_sampler_has_the_spaces_binaries_built_while_proposing_as_without(
        sampler, write_space, cache_dir, tmp_path, monkeypatch):
    """A sampler whose next proposal waits for the outcome in flight is never asked early:
    the pool is fed every valid config in a seeded shuffled order instead (each binary
    once), and the sweep proposes what it proposes without a pool, in the same order."""
    monkeypatch.setattr(_compile_ahead, "CompilePool", _Recorded)
    _Recorded.made.clear()
    root = Path(__file__).resolve().parent.parent
    path = write_space((root / "spaces/copy.yaml").read_text().replace(
        "sampler: exhaustive", f"sampler: {sampler}"))
    replay = f"replay:{root / 'tests/data/replay/h200-copy.csv'}"   # the same timings twice
    _, summary = sweep_study(path, open_device(replay), tmp_path / "s", max_trials=12,
                             compile=CompileOptions(2, SM90), finals=False)
    (pool,) = _Recorded.made
    assert summary.measured == 12 and pool.handed          # replay outruns the compiles
    assert len(pool.handed) == len(set(pool.handed))        # each compiled once
    _, plain = sweep_study(path, open_device(replay), tmp_path / "p", max_trials=12,
                           finals=False)
    assert [t.choice for t in summary.trials] == [t.choice for t in plain.trials]


def test_auto_has_the_configs_its_kernel_model_rates_fastest_compiled_ahead(
        write_space, cache_dir, tmp_path, monkeypatch):
    """``auto`` asks nothing early: the pool is fed the configs in the order of the
    kernel model's guesses, fastest first, which proposals do not depend on."""
    from sweeper.space import Configs
    from sweeper.sweep._optuna import model_guesses

    monkeypatch.setattr(_compile_ahead, "CompilePool", _Recorded)
    _Recorded.made.clear()
    path = write_space(SMALL_SPACE.replace("sampler: exhaustive", "sampler: auto"))
    device = open_device("interpret")
    _, summary = sweep_study(path, device, tmp_path / "s",
                             compile=CompileOptions(2, SM90), finals=False)
    (pool,) = _Recorded.made
    assert summary.measured == 6 and pool.handed
    space, facts = load_space(path), device.facts()
    valid = Configs(space, facts.env(), facts.max_footprint)
    guesses = model_guesses(load_kernel("copy"), space, facts, valid.expanded_all)
    guess_of = {key_of(c): g for c, g in zip(valid.expanded_all, guesses, strict=True)}
    handed = [guess_of[k] for k in pool.handed]
    assert handed == sorted(handed)


def test_compile_workers_on_a_device_that_compiles_nothing_is_refused(
        write_space, tmp_path, capsys):
    from sweeper.cli import main

    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--compile-workers", "2",
                 "--studies-dir", str(tmp_path / "studies")]) == 2
    assert capsys.readouterr().err.strip() == (
        "sweeper: --compile-workers 2: the interpret device compiles nothing for a GPU; "
        "leave the option out")
    assert not (tmp_path / "studies").exists()


def test_compile_workers_takes_a_count_or_auto():
    from sweeper.options import OptionValueError, compile_workers

    assert compile_workers("auto") is None          # as when left out: the cores left over
    assert compile_workers("0") == 0 and compile_workers("3") == 3
    with pytest.raises(OptionValueError, match="is not a whole number >= 0"):
        compile_workers("-1")


def test_the_benchmark_compiles_serially_and_by_the_pool_without_a_gpu(capsys, cache_dir):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "compile_pool.py"
    spec = importlib.util.spec_from_file_location("compile_pool_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--dry", "--limit", "2", "--workers", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| 2 configs of matmul-compile64.yaml, sm_90 | seconds |"
    assert out[2].startswith("| serial, one process (its imports before the clock) | ")
    assert out[3].startswith("| pool of 1, start-up included | ")
    assert out[4].startswith("| pool of 1, processes started ahead (as sweeper run starts")
    seconds = [float(line.rsplit("|", 2)[1]) for line in out[2:5]]
    assert all(s > 0 for s in seconds) and seconds[2] < seconds[1]   # start-up left out
    assert out[5].startswith("| pool / serial, start-up included | ") and "x (goal" in out[5]
    assert out[6].startswith("| pool / serial, started ahead | ") and "x (goal" in out[6]
    assert out[7] == "A/B: needs a GPU (skipped)"


@pytest.mark.gpu
def test_on_a_gpu_the_worker_loads_what_the_pool_compiled(write_space, cache_dir, tmp_path,
                                                          monkeypatch):
    """Every config compiled by the pool for this GPU's target; then a sweep measuring in
    this process compiles nothing (the compiler's first step fails the test if called)
    and every trial is right."""
    device = open_device("cuda")
    space, configs = _configs(write_space(SMALL_SPACE), device)
    pool = CompilePool(PoolSetup(space, Target.parse(device.compile_target()),
                                 list(sys.path)), 2)
    try:
        pool.ahead(configs)
        pool.drain()
        compiled = set(pool.handed)      # one config per binary; the others share it
        results = {key: pool.take(key) for key, _ in configs}
    finally:
        pool.close()
    assert len(compiled) < len(configs)
    assert all(r is not None and r.status is Compile.COMPILED if key in compiled
               else r is None for key, r in results.items()), results
    assert {binary_of(c) for _, c in configs} == pool.built

    from triton.compiler.compiler import ASTSource

    def no_compile(*args, **kwargs):
        raise AssertionError("the worker compiled a config the pool had compiled")

    device.launch_floor_ms()        # its own empty kernel compiled first
    monkeypatch.setattr(ASTSource, "make_ir", no_compile)
    store, _ = sweep_study(write_space(SMALL_SPACE), device, tmp_path / "s", finals=False)
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert measured and all(t.ok for t in measured), [t.reason for t in measured]


def test_a_compile_in_progress_is_waited_for_as_long_as_compiling_it_would_take():
    """Waiting for the pool pays only while it is shorter than the worker compiling the
    config itself: the median compile so far; before any compile finished (the pool's
    processes still warming up), not at all.  The sweep's take passes that bound."""
    from types import SimpleNamespace

    pool = CompilePool.__new__(CompilePool)
    pool._lock, pool.walls = threading.RLock(), []
    assert pool.worth_waiting_s() == 0.0
    pool.walls = [0.9, 0.2, 0.4]
    assert pool.worth_waiting_s() == 0.4
    asked = []
    fake = SimpleNamespace(take=lambda key, wait_s: asked.append(wait_s),
                           worth_waiting_s=lambda: 0.4)
    ahead = _compile_ahead.CompileAhead(SimpleNamespace(), SimpleNamespace(), fake,
                                        lambda c: c, 9)
    assert ahead.refused(0, {"BLOCK": "1"}) is None and asked == [0.4]


def test_a_lazy_pool_starts_only_once_a_trial_compiled():
    """On a warm cache nothing compiles, and no pool is started beside the worker; the
    first trial that took COMPILED_S or more to launch (the run's first aside: it pays
    the worker's own first launch) starts it, and it is fed from then on."""
    from types import SimpleNamespace

    started = []

    class FakePool:
        size = 3

        def __init__(self):
            self.handed, self.created_at = [], time.perf_counter()
            started.append(self)

        def pending(self):
            return 0

        def known(self, key):
            return False

        def ahead(self, configs, limit=None):
            self.handed.extend(configs)

    sampler = SimpleNamespace(upcoming=lambda n: [{"BLOCK": 1}, {"BLOCK": 2}])
    space = SimpleNamespace(expand=lambda params: params)
    ahead = _compile_ahead.CompileAhead(space, sampler, None, lambda c: c, 9,
                                        start_pool=FakePool)
    slow, quick = _compile_ahead.COMPILED_S * 5, _compile_ahead.COMPILED_S / 10

    def record(cold_s):
        return SimpleNamespace(cold_s=cold_s, ok=False, config=None)
    ahead.kept(record(slow))        # the run's first: its own start
    ahead.look_ahead({}, ())
    ahead.kept(record(quick))
    ahead.look_ahead({}, ())
    assert not started and ahead.refused(0, {"BLOCK": 1}) is None   # the worker compiles
    assert ahead.lines(0.0) == ["compile pool: not started (no trial compiled)"]
    ahead.kept(record(slow))
    ahead.look_ahead({}, ())
    assert len(started) == 1 and len(started[0].handed) == 2
    (line,) = ahead.lines(ahead.pool.created_at - 1.5)
    assert line.startswith("compile pool: 3 processes, started at 1.50 s; configs by how "
                           "their compile went: worker 1 (worker: the worker compiled or "
                           "loaded it); waited 0.00 s")
    ahead.kept(record(slow))
    ahead.look_ahead({}, ())
    assert len(started) == 1


def test_a_slow_first_launch_of_a_binary_compiled_before_starts_no_pool():
    """A first launch of COMPILED_S or more whose binary this machine lists as compiled
    (a new launcher, a slow disk: on the H200 one 82 ms launch of an 864-config warm run
    started eight compile processes) leaves the lazy pool down; one of a binary never
    compiled here starts it."""
    from types import SimpleNamespace

    started = []

    def pool():
        started.append(1)
        return SimpleNamespace(built=set(), pending=lambda: 0, known=lambda key: False,
                               ahead=lambda configs, limit=None: None)

    listed = {"old"}
    ahead = _compile_ahead.CompileAhead(
        SimpleNamespace(expand=lambda p: p), SimpleNamespace(upcoming=lambda n: []), None,
        lambda c: c, 9, start_pool=pool, built=lambda config: config in listed)
    slow = _compile_ahead.COMPILED_S * 2

    def record(config):
        return SimpleNamespace(cold_s=slow, ok=True, config=config)
    ahead.kept(record("first"))             # the run's first: its own start
    ahead.kept(record("old"))
    assert not started
    ahead.kept(record("new"))
    assert started == [1]


def test_a_lazy_pool_starts_at_once_where_the_cache_holds_nothing_of_the_kernel(
        cache_dir, monkeypatch):
    """Triton names a cache entry's files after the jitted function: where no entry is
    named after a function the kernel's module defines or imports (told from the
    space's ``kernel:`` before anything is imported), every config will compile and the
    pool starts with the sweep; where one is, or the kernel is not Triton's, or nothing
    can be told, it waits for a trial that compiled."""
    from types import SimpleNamespace

    from sweeper.engine._prespawn import StartAhead
    from sweeper.kernels import _cache_probe as probe

    assert probe.triton_cache_dir() == str(cache_dir)
    assert probe.space_cold("copy")                       # no cache folder yet
    cache_dir.mkdir()
    (cache_dir / "ABC").mkdir()
    (cache_dir / "ABC" / "_matmul_body.json").write_text("{}")
    assert probe.space_cold("copy")
    assert not probe.space_cold("matmul")                 # imported from _matmul_triton
    assert not probe.space_cold("cuda") and not probe.space_cold("torch-op")   # no Triton
    assert not probe.space_cold("no_such_module:K")
    monkeypatch.setattr(probe, "CACHE_SCAN", 0)          # too big to look through
    assert not probe.space_cold("copy")
    monkeypatch.setattr(probe, "CACHE_SCAN", 5_000)
    started = []

    class FakePool:
        def __init__(self, *args):
            started.append(self)

        def pending(self):
            return 0

        def ahead(self, configs, limit=None):
            return 0

    monkeypatch.setattr(_compile_ahead, "CompilePool", FakePool)
    monkeypatch.setattr("sweeper.engine._prespawn.prespawn_workers", lambda args: 0)
    study = SimpleNamespace(sampler=SimpleNamespace(upcoming=lambda n: []))
    args = SimpleNamespace(device="cuda", compile_workers=None, gpus=None)
    for kernel, at_once in (("copy", True), ("matmul", False)):
        ahead_of = StartAhead(args)
        ahead_of(SimpleNamespace(kernel=kernel, sampler=SimpleNamespace(name="exhaustive")))
        started.clear()
        ahead = _compile_ahead.CompileAhead.start(
            SimpleNamespace(), study.sampler,
            CompileOptions(2, SM90, lazy=not ahead_of.pool_ahead), 1, lambda c: c)
        assert (ahead.pool is not None, len(started)) == (at_once, int(at_once))


def test_configs_whose_binary_is_built_are_measured_first(write_space):
    """While the pool compiles, the exhaustive sampler is told which configs can go
    without waiting: those of a binary the pool built or a kept trial loaded; with
    nothing compiling, every config can."""
    from types import SimpleNamespace

    from sweeper.samplers import ExhaustiveSampler

    device = open_device("interpret")
    _, configs = _configs(write_space(SMALL_SPACE), device)
    first, last = configs[0][1], configs[-1][1]
    assert binary_of(first) != binary_of(last)

    class FakePool:
        compiling = 1

        def __init__(self):
            self.built = set()

        def pending(self):
            return self.compiling

    pool = FakePool()
    sampler = ExhaustiveSampler([{"x": "1"}], seed=None)
    resolve = {"a": first, "b": last}
    ahead = _compile_ahead.CompileAhead(
        SimpleNamespace(expand=lambda params: params), sampler, pool,
        lambda choice: resolve[choice["name"]], 9)
    assert sampler.prefer == ahead.ready
    assert not ahead.ready({"name": "a"}) and not ahead.ready({"name": "b"})
    ahead.kept(SimpleNamespace(ok=True, config=resolve["a"], cold_s=0.0))
    assert ahead.ready({"name": "a"}) and not ahead.ready({"name": "b"})
    pool.compiling = 0
    assert ahead.ready({"name": "b"})


@pytest.mark.gpu
def test_on_a_gpu_a_cold_run_starts_its_compile_processes_with_its_workers(
        write_space, cache_dir, tmp_path, capsys):
    """From an empty Triton cache, ``sweeper run`` starts its compile pool with its
    worker (nothing of the kernel cached), before the sweep; the sweep adopts it, every
    trial is right, and no process is left waiting."""
    from sweeper import _processes
    from sweeper.cli import main

    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--studies-dir", str(tmp_path), "--quiet", "--timing",
                 "--no-report", "--compile-workers", "2"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "compile pool:" in x)
    assert "compile pool: 2 processes, started at " in line and "compiled " in line, line
    assert float(line.split("started at ")[1].split(" s;")[0]) < 0.0, line
    assert _processes.waiting() == 0
    trials = StudyStore(tmp_path / "tiny").records()[0]
    assert trials and all(t.ok for t in trials if t.status is not TrialStatus.INVALID)


def test_a_pool_started_with_the_workers_is_adopted_and_compiles_each_binary_once(
        write_space, cache_dir, tmp_path, monkeypatch):
    """``sweeper run`` on a cold cache starts its pool before its own imports
    (:func:`~sweeper.engine._prespawn.start_pool`, the GPU read from the driver) and hands
    it every valid config, keyed as the sweep keys them and in the order it measures
    them: the sweep adopts it (its time line says it started before the sweep), asks for
    nothing twice, each binary is compiled once, and the pool is ended with the sweep."""
    from types import SimpleNamespace

    from sweeper.devices import DeviceFacts, _gpu_query
    from sweeper.engine._prespawn import start_pool

    monkeypatch.setattr(_gpu_query, "query_gpu", lambda index=0: DeviceFacts(
        name="NVIDIA H200", sms=132, l2_bytes=60 << 20))
    monkeypatch.setattr(_gpu_query, "gpu_arch", lambda index=0: "sm_90")
    path = write_space(SMALL_SPACE)
    pool = start_pool(SimpleNamespace(compile_workers=2, gpus=[]), load_space(path), 1)
    assert pool is not None and pool.size == 2 and len(pool.leader) == 6
    pool.drain()        # what the head start the workers' imports give does on a GPU
    store, summary = sweep_study(path, open_device("interpret"), tmp_path / "s",
                                 compile=CompileOptions(pool=pool), finals=False)
    assert len(pool.handed) == len(set(pool.handed)) == 3          # one per binary
    order = [t.key() for t in sorted(store.records()[0], key=lambda t: t.number)]
    assert pool.handed == [k for k in order if k in pool.handed]   # as the sweep measured
    assert len(pool.compiled_by) == 3 and not pool.deaths and not pool.procs   # ended
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert len(measured) == 6 and all(t.ok for t in measured)
    (line,) = [x for x in summary.timing.lines() if x.startswith("compile pool:")]
    assert line.startswith("compile pool: 2 processes, started at -"), line


def test_auto_adopts_a_pool_started_with_the_workers_and_feeds_it_the_models_order(
        write_space, cache_dir, tmp_path, monkeypatch):
    """Under ``auto`` a cold run's pool starts with the workers too, handed nothing (the
    model's guesses come with the sweep): the sweep adopts it and hands it the configs
    the kernel model rates fastest first."""
    from types import SimpleNamespace

    from sweeper.devices import DeviceFacts, _gpu_query
    from sweeper.engine._prespawn import start_pool
    from sweeper.space import Configs
    from sweeper.sweep._optuna import model_guesses

    monkeypatch.setattr(_gpu_query, "query_gpu", lambda index=0: DeviceFacts(
        name="NVIDIA H200", sms=132, l2_bytes=60 << 20))
    monkeypatch.setattr(_gpu_query, "gpu_arch", lambda index=0: "sm_90")
    path = write_space(SMALL_SPACE.replace("sampler: exhaustive", "sampler: auto"))
    pool = start_pool(SimpleNamespace(compile_workers=2, gpus=[]), load_space(path), 1)
    assert pool is not None and pool.size == 2 and not pool.leader     # handed nothing
    queued: list = []
    ahead = pool.ahead

    def recorded(configs, limit=None):
        def seen():
            for key, config in configs:
                queued.append(key)
                yield key, config
        return ahead(seen(), limit)

    pool.ahead = recorded
    device = open_device("interpret")
    store, summary = sweep_study(path, device, tmp_path / "s",
                                 compile=CompileOptions(pool=pool), finals=False)
    space, facts = load_space(path), device.facts()
    valid = Configs(space, facts.env(), facts.max_footprint)
    guesses = model_guesses(load_kernel("copy"), space, facts, valid.expanded_all)
    guess_of = {key_of(c): g for c, g in zip(valid.expanded_all, guesses, strict=True)}
    # the first queued is the model's favourite, and they come fastest guess first
    assert queued and guess_of[queued[0]] == min(guesses)
    assert [guess_of[k] for k in dict.fromkeys(queued)] == sorted(
        guess_of[k] for k in dict.fromkeys(queued))
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert measured and all(t.ok for t in measured) and not pool.procs      # ended
    (line,) = [x for x in summary.timing.lines() if x.startswith("compile pool:")]
    assert line.startswith("compile pool: 2 processes, started at -"), line


def test_spread_hints_walk_the_space_once_shuffled_by_the_seed():
    """Each call goes on where the last stopped (that config again: the pool may have
    stopped before taking it), so a sweep walks a large space once, not once a trial."""
    import itertools

    from sweeper.sweep._compile_ahead import SpreadHints

    configs = [{"i": str(i)} for i in range(50)]
    hints = SpreadHints(configs, seed=3)
    first = [c["i"] for c in itertools.islice(hints.upcoming(8), 5)]
    rest = [c["i"] for c in hints.upcoming(8)]
    assert rest[0] == first[-1] and len(first) + len(rest) == 51
    assert sorted(first + rest[1:], key=int) == [str(i) for i in range(50)]
    assert first != [str(i) for i in range(5)]                      # shuffled
    assert first == [c["i"] for c in itertools.islice(SpreadHints(configs, 3).upcoming(8), 5)]
    assert list(hints.upcoming(8)) == [configs[int(hints.order[-1])]]   # the last again
