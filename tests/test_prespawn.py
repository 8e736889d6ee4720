"""Processes started ahead (sweeper._processes): ``sweeper run`` starts its workers (and,
on a GPU, its compile processes) before it imports torch itself; a worker or pool adopts
the one started with its module and environment; whatever nobody adopts is ended.  The
run's last line says where its time went, and NVML watches the GPU a worker measures."""

from __future__ import annotations

import os
import re
import sys
import time
import types
from pathlib import Path

import pytest

from sweeper import _processes
from sweeper._processes import COMPILER, WORKER, adopt, prespawn, release, worker_env
from sweeper.cli import main
from sweeper.devices._cuda import nvml_uuid
from sweeper.engine._clock import RunClock, process_age, recompiled_note, recompiled_sources
from sweeper.engine._prespawn import StartAhead, prespawn_workers
from tests.conftest import SMALL_SPACE


@pytest.fixture(autouse=True)
def _empty_nursery():
    release()
    yield
    release()


def test_a_process_is_adopted_only_with_its_module_and_environment_and_the_rest_ended():
    prespawn(WORKER, {"X_SWEEPER_TEST": "1"}, list(sys.path), count=2)
    assert _processes.waiting() == 2
    assert adopt(WORKER, {"X_SWEEPER_TEST": "2"}) is None
    assert adopt(COMPILER, {"X_SWEEPER_TEST": "1"}) is None
    got = adopt(WORKER, {"X_SWEEPER_TEST": "1"})
    assert got is not None and got.proc.poll() is None and _processes.waiting() == 1
    left = next(iter(_processes._waiting.values()))[0]
    release()
    assert _processes.waiting() == 0
    assert left.proc.wait(5) is not None           # ended, not left behind
    _processes.kill_now(got.proc)


def test_processes_are_killed_side_by_side_with_their_children():
    """``kill_now`` signals every group first, then reaps: each process and its child
    end, and one already reaped is left alone."""
    import subprocess

    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \
           "'import time; time.sleep(60)']); time.sleep(60)"
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
             for _ in range(3)]
    procs[0].kill()
    procs[0].wait(5)
    _processes.kill_now(*procs, reap_s=5.0)
    assert all(p.returncode is not None for p in procs)
    for p in procs[1:]:                    # no process of its group is left (its child,
        deadline = time.monotonic() + 5    # reparented, is reaped by the system)
        while time.monotonic() < deadline:
            try:
                os.killpg(p.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"process group {p.pid} outlived kill_now")


def test_a_process_that_died_while_waiting_is_not_adopted():
    prespawn(WORKER, {"X_SWEEPER_TEST": "3"}, list(sys.path))
    (spawned,) = next(iter(_processes._waiting.values()))
    _processes.kill_now(spawned.proc)
    assert adopt(WORKER, {"X_SWEEPER_TEST": "3"}) is None and _processes.waiting() == 0


def test_worker_env_names_the_gpu_among_those_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert worker_env(1, True, {"A": "b"}) == {"A": "b", "CUDA_VISIBLE_DEVICES": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert worker_env(1, True, {})["CUDA_VISIBLE_DEVICES"] == "6"
    assert worker_env(1, False, {"A": "b"}) == {"A": "b"}


def _args(**kw):
    from sweeper.engine import RunOptions, SpaceSource

    gpus = kw.pop("gpus", ())
    return RunOptions(SpaceSource(path="space.yaml"), gpus=None if gpus is None else tuple(gpus),
                      **kw)


def test_run_starts_a_worker_per_gpu_it_will_use_and_none_where_it_measures_inline(
        monkeypatch):
    from sweeper.devices import _gpu_query

    started = []
    monkeypatch.setattr(_processes, "prespawn", lambda module, env, path, count=1:
                        started.append((module, env, count)))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: False)
    assert prespawn_workers(_args()) == 0 and not started     # no driver: refused anyway
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: True)
    assert prespawn_workers(_args()) == 1
    assert started == [(WORKER, {"CUDA_VISIBLE_DEVICES": "0"}, 1)]
    started.clear()
    assert prespawn_workers(_args(gpus=[0, 1])) == 2 and len(started) == 2
    assert prespawn_workers(_args(workers="inline")) == 0
    assert prespawn_workers(_args(device="interpret")) == 0
    assert prespawn_workers(_args(device="no-such-device")) == 0   # refused later, in order
    started.clear()
    assert prespawn_workers(_args(device="interpret", workers="process")) == 1
    assert started == [(WORKER, {"TRITON_INTERPRET": "1"}, 1)]


def test_the_workers_start_before_the_cuda_driver_is_asked_about_the_pool(
        monkeypatch, write_space):
    """Whether the compile pool starts ahead asks the CUDA driver for the GPU (its
    initialization took tenths of a second on the H100 machines) and reads the caches: the
    workers' imports, the run's longest wait before its first trial, start before that."""
    from sweeper.devices import _gpu_query
    from sweeper.engine import _prespawn
    from sweeper.space import load_space

    order = []
    monkeypatch.setattr(_processes, "prespawn", lambda module, env, path, count=1:
                        order.append("worker"))
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: True)
    monkeypatch.setattr(_prespawn, "pool_starts_ahead",
                        lambda options, space: order.append("pool decided") or False)
    space = load_space(write_space("kernel: copy\nparams:\n  grid: [1]\n"
                                   "  footprint: [1MiB]\n"))
    started = StartAhead(_args())
    started(space)
    assert order == ["worker", "pool decided"] and started.pool is None


def test_the_compile_pool_starts_with_the_workers_only_where_enough_will_compile(
        monkeypatch, write_space):
    """With the space read: a sampler that knows what comes next (a plan, or the kernel
    model's order) and nothing of the kernel in Triton's cache, or enough of its binaries
    not compiled here (:func:`sweeper.plan.pool_from_start`), start the compile pool
    beside the workers, as many processes as the run asks for, compiling for the GPU's
    architecture, handed every valid config of the space keyed as the sweep keys them;
    anything else starts none."""
    from types import SimpleNamespace

    from sweeper.devices import DeviceFacts, _gpu_query
    from sweeper.kernels import _cache_probe
    from sweeper.samplers._order import plan_order
    from sweeper.space import load_space
    from sweeper.store import key_of
    from sweeper.study import enumerate_choices
    from sweeper.sweep import _compile_pool

    made = []

    class FakePool:
        def __init__(self, setup, size):
            self.setup, self.size, self.handed, self.closed = setup, size, [], False
            made.append(self)

        def ahead(self, configs, limit=None):
            self.handed.extend(configs)

        def close(self):
            self.closed = True

    monkeypatch.setattr(_compile_pool, "CompilePool", FakePool)
    monkeypatch.setattr(_processes, "prespawn", lambda *args, **kw: None)
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: True)
    h200 = DeviceFacts(name="NVIDIA H200", sms=132, l2_bytes=60 << 20)
    monkeypatch.setattr(_gpu_query, "query_gpu", lambda index=0: h200)
    monkeypatch.setattr(_gpu_query, "gpu_arch", lambda index=0: "sm_90")
    cold = {"copy": True, "matmul": False}
    monkeypatch.setattr(_cache_probe, "space_cold", lambda kernel: cold[kernel])
    monkeypatch.setattr(_processes.os, "cpu_count", lambda: 16)      # the GPU machine's
    real = load_space(write_space(SMALL_SPACE))

    def space(kernel="copy", sampler="exhaustive"):
        if (kernel, sampler) == ("copy", "exhaustive"):
            return real
        return SimpleNamespace(kernel=kernel, sampler=SimpleNamespace(name=sampler))

    def sizes(args, sp):
        made.clear()
        started = StartAhead(args)
        started(sp)
        assert (started.pool is not None) == bool(made)
        return [pool.size for pool in made]

    assert sizes(_args(), space()) == [8]
    (pool,) = made
    assert str(pool.setup.target) == "sm_90" and pool.setup.space is real
    valid, _ = enumerate_choices(real, h200.env())
    assert len(valid) == 6 and [key for key, _ in pool.handed] == \
        plan_order([key_of(c) for c in valid], real.sampler.seed)     # the sampler's order
    assert sizes(_args(gpus=[0, 1]), space()) == [8]
    monkeypatch.setattr(_processes.os, "cpu_count", lambda: 6)
    assert sizes(_args(gpus=[0, 1]), space()) == [3]     # a core per worker, and one
    assert sizes(_args(compile_workers=3), space()) == [3]
    assert sizes(_args(compile_workers=0), space()) == []
    assert sizes(_args(), space(sampler="tpe")) == []
    # a sampler that follows the kernel model: started with the workers, handed nothing
    # (the sweep hands the configs over in the model's order, ModelHints)
    assert len(sizes(_args(), space(sampler="auto"))) == 1 and made[0].handed == []
    cold["copy"] = False          # other shapes of the kernel cached, none of these run
    monkeypatch.setattr("sweeper.plan.EARLY_POOL_S", 1e9)
    assert sizes(_args(), space()) == []            # too little to compile: waits
    monkeypatch.setattr("sweeper.plan.EARLY_POOL_S", 0.1)
    assert len(sizes(_args(), space())) == 1        # enough: started with the workers
    cold["copy"] = True
    assert sizes(_args(workers="inline"), space()) == []
    assert sizes(_args(device="interpret", workers="process"), space()) == []
    monkeypatch.setattr(_gpu_query, "gpu_arch", lambda index=0: None)
    assert sizes(_args(), space()) == []            # the sweep starts its own then
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: False)
    assert sizes(_args(), space()) == []


def test_a_run_with_worker_processes_starts_them_first_and_says_where_its_time_went(
        write_space, tmp_path, capsys):
    """The worker was launched before the sweep began (its imports beside this
    process's); the time line adds up the steps; nothing is left waiting."""
    path = write_space(SMALL_SPACE)
    assert main(["run", str(path), "--device", "interpret", "--workers", "process",
                 "--studies-dir", str(tmp_path), "--quiet", "--no-report", "--timing"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("time: "))
    total = float(re.match(r"time: ([\d.]+) s in all", line).group(1))
    parts = [float(v) for v in re.findall(r"(?:^|, )[a-z -]+ ([\d.]+) s", line.split(": ", 2)[2])]
    assert "sweep" in line and "(start " in line
    assert sum(parts) == pytest.approx(total, abs=0.1 * len(parts))
    launched = float(re.search(r"worker 0: launched at (-?[\d.]+) s", out).group(1))
    assert launched < 0, out             # before the sweep's clock started
    assert _processes.waiting() == 0


def test_the_clock_counts_from_the_process_start_where_proc_tells_it():
    age = process_age()
    if sys.platform.startswith("linux"):
        assert age is not None and 0 <= age < 24 * 3600
    clock = RunClock(before_s=None)            # a call from Python: from the call on
    clock.mark("a")
    assert clock.line(None).startswith("time: ") and "python start" not in clock.line(None)
    assert "python start 2.0 s" in RunClock(before_s=2.0).line(None)
    clock.mark("report")
    clock.parts["report"] = "tables 0.2, pictures 0.5, files 0.0"
    assert "report 0.0 s (tables 0.2, pictures 0.5, files 0.0)" in clock.line(None)


def _package_without_bytecode(tmp_path, name, modules, size):
    """A package ``name`` of ``modules`` of ``size`` bytes each, imported from
    ``tmp_path`` with no bytecode written, as an environment with PYTHONDONTWRITEBYTECODE
    imports one installed without it; their names, to drop from ``sys.modules`` after."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for module in modules:
        (folder / f"{module}.py").write_text("X = 1\n" + "#" * (size - 7) + "\n")
    sys.path.insert(0, str(tmp_path))
    try:
        for module in modules:
            __import__(f"{name}.{module}")
    finally:
        sys.path.remove(str(tmp_path))
    return [name] + [f"{name}.{m}" for m in modules]


def test_source_compiled_at_every_start_is_counted_and_said(tmp_path, monkeypatch):
    """With PYTHONDONTWRITEBYTECODE a package with no bytecode is compiled at every start
    (torch in some container images: 2.7 s a process); the note gives its megabytes by
    package, where it lies and how to stop paying; too little to matter, or with bytecode
    written, nothing is said."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    names = _package_without_bytecode(tmp_path, "sweeper_recompiled_pkg",
                                      [f"m{i}" for i in range(5)], 1_000_000)
    try:
        found = recompiled_sources()
        assert found["sweeper_recompiled_pkg"] == 5_000_000      # __init__.py is empty
        assert not list(tmp_path.rglob("*.pyc"))
        note = recompiled_note(found)
        assert note is not None and "(sweeper_recompiled_pkg 5.0 MB" in note
        assert f"python -m compileall -q {tmp_path}" in note
        assert recompiled_note(type(found)({"sweeper": 1_500_000})) is None   # a checkout
        monkeypatch.setattr(sys, "dont_write_bytecode", False)
        assert not recompiled_sources()        # Python writes it: only a first start pays
    finally:
        for name in names:
            sys.modules.pop(name, None)


def test_nvml_reads_the_gpu_of_the_workers_cuda_device_by_its_uuid(monkeypatch):
    """With CUDA_VISIBLE_DEVICES=1 a worker's CUDA device 0 is the machine's GPU 1;
    NVML numbers GPUs ignoring that variable, so the reader finds it by UUID."""
    from sweeper.devices import _nvml

    asked = []
    fake = types.SimpleNamespace(
        NVMLError=Exception, NVML_CLOCK_SM=0, nvmlInit=lambda: None,
        nvmlDeviceGetHandleByUUID=lambda u: asked.append(("uuid", u)) or "h",
        nvmlDeviceGetHandleByIndex=lambda i: asked.append(("index", i)) or "h",
        nvmlDeviceGetDefaultApplicationsClock=lambda h, c: 1980,
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    props = types.SimpleNamespace(uuid="6f1f2a8e-0000-1111-2222-333344445555")
    reader = _nvml.open_reader(0, uuid=nvml_uuid(props))
    assert asked == [("uuid", "GPU-6f1f2a8e-0000-1111-2222-333344445555")]
    assert reader.available and reader.power_limit_w == 700
    assert nvml_uuid(types.SimpleNamespace()) is None
    assert nvml_uuid(types.SimpleNamespace(uuid="GPU-abc")) == "GPU-abc"
    asked.clear()
    _nvml.open_reader(2)
    assert asked == [("index", 2)]


def test_a_lingering_worker_that_does_not_end_is_stopped_after_the_grace():
    """A worker asked to end is not waited for; one that does not end on its own within
    GRACE_S is stopped by the reaper."""
    import subprocess
    import time

    from sweeper._processes import GRACE_S, linger

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    t0 = time.monotonic()
    linger(proc)
    assert proc.poll() is None                       # not waited for
    assert proc.wait(GRACE_S + 15) is not None and time.monotonic() - t0 >= GRACE_S


def test_workers_let_end_add_no_exit_handler_each():
    """A notebook runs sweep after sweep with worker processes, each let end on its own:
    no exit handler (and no hold on the ended process) is added per worker; the one
    handler kills those still there at exit."""
    import atexit
    import subprocess
    import threading

    from sweeper._processes import GRACE_S, linger

    before = atexit._ncallbacks()
    procs = [subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
             for _ in range(5)]
    for proc in procs:
        linger(proc)
    for thread in threading.enumerate():
        if thread.name == "sweeper-reap":
            thread.join(GRACE_S + 15)
    assert all(p.returncode == 0 for p in procs)          # reaped, each by its thread
    assert atexit._ncallbacks() == before
    assert not _processes._lingering


LINGERS_AT_EXIT = """
import subprocess, sys
from sweeper._processes import linger

proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                        start_new_session=True)
linger(proc)
print(proc.pid, flush=True)
"""


def test_a_worker_still_ending_when_the_coordinator_exits_is_killed_then(tmp_path):
    import subprocess

    from tests.api_fixtures import ROOT

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", LINGERS_AT_EXIT], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    pid = int(run.stdout)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:            # gone, or dead and not reaped (a container's init may not reap)
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail(f"the lingering process {pid} outlived the process that let it end")


def test_a_bad_space_file_starts_no_process(write_space, tmp_path, monkeypatch, capsys):
    from sweeper.devices import _gpu_query

    started = []
    monkeypatch.setattr(_gpu_query, "has_driver", lambda: True)
    monkeypatch.setattr(_processes, "prespawn", lambda *a, **k: started.append(a))
    bad = write_space(SMALL_SPACE.replace("sampler: exhaustive", "sampler: nonsense"))
    assert main(["run", str(bad), "--studies-dir", str(tmp_path)]) == 2
    assert "nonsense" in capsys.readouterr().err and not started
    good = write_space(SMALL_SPACE)
    main(["run", str(good), "--studies-dir", str(tmp_path / "g"), "--quiet"])  # no GPU here
    assert len(started) == 1


def test_the_nvml_poll_period_is_20_ms_unless_the_environment_says(monkeypatch):
    from sweeper.devices._nvml import POLL_PERIOD_S, poll_period_s

    monkeypatch.delenv("SWEEPER_NVML_PERIOD_MS", raising=False)
    assert poll_period_s() == POLL_PERIOD_S == 0.02
    for text, want in [("100", 0.1), ("0.2", 0.001), ("nan", 0.02), ("x", 0.02), ("", 0.02)]:
        monkeypatch.setenv("SWEEPER_NVML_PERIOD_MS", text)
        assert poll_period_s() == pytest.approx(want), text
