"""On the interpreter a run also compiles its kernel for a GPU (sm_90), without a GPU, and
records what Triton's compiler refuses as a GPU run would (:mod:`sweeper.sweep._gpu_check`):
the interpreter runs a kernel reading a global that is not a constexpr, the compiler
does not."""

from __future__ import annotations

import re

import pytest

from sweeper.cli import main
from sweeper.kernels._precompile import Compile, Precompiled, Target
from sweeper.space import Config, Problem
from sweeper.store import StudyStore
from sweeper.sweep import _gpu_check
from sweeper.sweep._gpu_check import GpuCheck, cannot_compile
from tests import kernels_for_tests

SPACE = """
    study: {study}
    kernel: {kernel}
    sampler: exhaustive
    params:
      grid: ["cdiv(n, BLOCK)"]
      block: [32, 128]
      BLOCK: [256, 1024]
      dtype: [float32]
      footprint: [4KiB]
    measure: {{warmup: 1, repeat: 3}}
"""

#: the line of the kernel that reads the global, as the compiler's error names it
GLOBAL_LINE = (kernels_for_tests._reads_a_global_body.__code__.co_firstlineno + 3)


@pytest.fixture
def run_space(write_space, tmp_path, monkeypatch, capsys):
    """``sweeper run`` of a small space of ``kernel`` on the interpreter, in this process
    (its own Triton cache); returns the exit status, what it printed and its trials."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))

    def run(kernel: str, *args: str, study: str = "check"):
        path = write_space(SPACE.format(study=study, kernel=kernel), f"{study}.yaml")
        rc = main(["run", str(path), "--device", "interpret", "--no-report", *args])
        out, err = capsys.readouterr()
        assert "studies" in out, err
        trials, _ = StudyStore(tmp_path / "studies" / f"{study}-interpret").records()
        return rc, out, [{"status": t.status.value, "reason": t.reason} for t in trials]

    return run


@pytest.fixture
def compiled(monkeypatch) -> list[int]:
    """The BLOCK of each config compiled for the GPU, in order (compiled in this process,
    not a fork, so the list sees them)."""
    from sweeper.kernels import _precompile

    blocks: list[int] = []
    real = _precompile.Precompiler.compile

    def compile(self, config):
        blocks.append(config.meta["BLOCK"])
        return real(self, config)

    monkeypatch.setattr(_precompile.Precompiler, "compile", compile)
    monkeypatch.setattr(_gpu_check, "in_a_fork",
                        lambda compile, config, within_s=None: compile(config))
    return blocks


def test_a_kernel_reading_a_global_runs_interpreted_but_is_refused_for_the_gpu(run_space):
    """With the check off the interpreter measures every config; with it (the default)
    the header names the compiler's refusal and the kernel's line, and every config is
    the compile_error a GPU run records (the interpreter never runs it)."""
    kernel = "tests.kernels_for_tests:ReadsAGlobal"
    rc, out, trials = run_space(kernel, "--gpu-check", "off", study="unchecked")
    assert rc == 0 and "gpu check" not in out
    assert [t["status"] for t in trials] == ["ok"] * 4

    rc, out, trials = run_space(kernel)
    header = next(line for line in out.splitlines() if line.startswith("gpu check:"))
    assert header.startswith(f"gpu check: the sm_90 compiler refuses the kernel at "
                             f"kernels_for_tests.py:{GLOBAL_LINE}: tl.store(dst + offsets, "
                             "x * SCALE, mask=offsets < n)")
    assert "Cannot access global variable SCALE" in header
    assert "recorded as a compile_error as on a GPU" in header
    assert [t["status"] for t in trials] == ["compile_error"] * 4
    reason = trials[0]["reason"]
    assert reason.startswith("sm_90: CompilationError: NameError(\"Cannot access global "
                             "variable SCALE from within @jit'ed function.")
    assert reason.endswith(f"(at kernels_for_tests.py:{GLOBAL_LINE}: tl.store(dst + "
                           "offsets, x * SCALE, mask=offsets < n))")
    assert "done: 0 measured, 4 failed" in out and rc != 0


def test_a_config_the_kernel_turns_down_is_skipped_by_it_not_compiled_for_the_gpu(
        run_space, compiled):
    """The kernel's refusal is asked before a config is compiled for the GPU: in ``all``
    mode, and once the compiler refused the kernel, a config the kernel turns down is
    never compiled and is skipped by the kernel, not a compile_error."""
    for mode in ("first", "all"):
        compiled.clear()
        _, out, trials = run_space("tests.kernels_for_tests:ReadsAGlobalTurnsDownSmallBlocks",
                                   "--gpu-check", mode, study=f"turned-{mode}")
        small = [t for t in trials if t["reason"].startswith("BLOCK=256")]
        assert len(small) == 2 and all(t["status"] == "invalid" for t in small), trials
        assert all(t["reason"] == "BLOCK=256 is below the 1024 this kernel takes"
                   for t in small)
        assert [t["status"] for t in trials if t not in small] == ["compile_error"] * 2
        assert "skipped by the kernel" in out, out
        assert 256 not in compiled[1:], compiled      # the representative aside: see below


def test_the_representative_is_a_config_the_kernel_takes(run_space, write_space, capsys):
    """The config compiled for the GPU before the first trial is the space's first one
    the kernel does not turn down; where it turns down every one, nothing is compiled and
    the header says so."""
    _, out, _ = run_space("tests.kernels_for_tests:ReadsAGlobalTurnsDownSmallBlocks")
    header = next(line for line in out.splitlines() if line.startswith("gpu check:"))
    assert "(grid=1 block=32 BLOCK=1024)" in header, header

    path = write_space(SPACE.format(study="none", kernel="tests.kernels_for_tests:"
                                    "ReadsAGlobalTurnsDownSmallBlocks")
                       .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512]"), "none.yaml")
    main(["run", str(path), "--device", "interpret", "--no-report"])
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("gpu check:"))
    assert header == ("gpu check: skipped: the kernel turns down every valid config of the "
                      "space (the first, grid=4 block=32 BLOCK=256: BLOCK=256 is below the "
                      "1024 this kernel takes); nothing compiled for sm_90"), header
    assert "4 skipped by the kernel" in out, out


def test_a_config_whose_refusal_fails_is_not_compiled_for_the_gpu_its_trial_fails(
        run_space, compiled):
    """A refusal with a bug (the kernel's refuse= raises below BLOCK=1024) turns nothing
    down, and is not compiled for the GPU either: the representative is the first config
    it does not fail on, and in ``first`` and ``all`` mode those configs' trials fail as
    crashed with the refuse='s bug, as a GPU worker records them, never the compiler's
    error nor skipped."""
    for mode in ("first", "all"):
        compiled.clear()
        _, out, trials = run_space("tests.kernels_for_tests:"
                                   "ReadsAGlobalRefusalFailsOnSmallBlocks",
                                   "--gpu-check", mode, study=f"failing-{mode}")
        header = next(line for line in out.splitlines() if line.startswith("gpu check:"))
        assert "(grid=1 block=32 BLOCK=1024)" in header, header
        assert 256 not in compiled, compiled
        small = [t for t in trials if t["status"] == "crashed"]
        assert len(small) == 2 and all(t["reason"].startswith(
            "the kernel's refuse= raised KeyError: 'SIZES' (at kernels_for_tests.py:")
            for t in small), trials
        assert sorted(t["status"] for t in trials) == ["compile_error"] * 2 + ["crashed"] * 2
        assert "skipped by the kernel" not in out, out


#: A short kernel whose declaration sweeps a meta-parameter its Triton function lacks:
#: the interpreter drops the keyword and runs, a GPU launch refuses it.
LACKS_VEC = """
import triton
import triton.language as tl

import sweeper


@triton.jit
def _halve(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 0.5, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024, "VEC": 1},
                reference=lambda x: x * 0.5)
def halve(x, config):
    _halve[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
"""


def test_a_meta_parameter_the_triton_function_lacks_fails_as_on_a_gpu(run_space, tmp_path):
    """The interpreter drops a keyword the jitted function does not take (``VEC=``) and
    measures every config; a GPU launch raises Triton's KeyError at every one.  The check
    says so at the launch's line, not that the kernel cannot be compiled here, and each
    config is the ``crashed`` trial a GPU run records, never measured."""
    (tmp_path / "lacks_vec_kernel.py").write_text(LACKS_VEC)
    rc, out, trials = run_space("lacks_vec_kernel:halve", study="lacks-vec")
    header = next(line for line in out.splitlines() if line.startswith("gpu check:"))
    assert "cannot be compiled for sm_90 here" not in header, header
    assert header.startswith("gpu check: Triton's sm_90 launch refuses the kernel at "
                             "lacks_vec_kernel.py:"), header
    assert "Keyword argument VEC was specified but unrecognised" in header, header
    assert "recorded as crashed as on a GPU" in header, header
    assert [t["status"] for t in trials] == ["crashed"] * 4, trials
    assert trials[0]["reason"].startswith("sm_90: KeyError: 'Keyword argument VEC was "
                                          "specified but unrecognised' (at "
                                          "lacks_vec_kernel.py:"), trials
    assert "done: 0 measured, 4 failed" in out and rc != 0


def test_a_good_kernel_compiles_once_for_the_gpu_and_is_measured_as_before(run_space):
    rc, out, trials = run_space("copy", "--timing")
    assert rc == 0
    assert "gpu check: one config was compiled for sm_90 too (" in out
    assert "gpu check: 1 binaries compiled for sm_90 in " in out   # the timing's line
    assert [t["status"] for t in trials] == ["ok"] * 4


def test_where_triton_cannot_compile_for_a_gpu_the_check_is_skipped_in_one_line(
        run_space, monkeypatch):
    from triton.backends import backends

    monkeypatch.delitem(backends, "nvidia")
    rc, out, trials = run_space("tests.kernels_for_tests:ReadsAGlobal")
    lines = [line for line in out.splitlines() if line.startswith("gpu check")]
    assert lines == ["gpu check: skipped: this Triton has no nvidia backend (it has: amd); "
                     "nothing compiled for sm_90"]
    assert rc == 0 and [t["status"] for t in trials] == ["ok"] * 4


def test_no_ptxas_is_said(monkeypatch):
    from triton import knobs

    tool = type(knobs.nvidia).__dict__["ptxas"]
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setattr(tool, "default_path", "/nonexistent/ptxas")
    assert cannot_compile(Target()) == ("Triton's NVIDIA backend finds no ptxas (Cannot "
                                        "find ptxas)")


def test_a_target_that_is_no_cuda_architecture_is_refused_before_the_run(
        write_space, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = write_space(SPACE.format(study="typo", kernel="copy"), "typo.yaml")
    rc = main(["run", str(path), "--device", "interpret", "--gpu-check-target", "sm_999"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "argument --gpu-check-target: 'sm_999': not a CUDA architecture; one of sm_70, " \
           "sm_72, sm_75, sm_80" in err
    assert not (tmp_path / "studies").exists()


def test_a_target_this_ptxas_does_not_know_skips_the_check(monkeypatch):
    from sweeper.sweep import _gpu_check

    monkeypatch.setattr(_gpu_check, "_ptxas_archs", lambda path: {80, 90})
    assert cannot_compile(Target("cuda", 110)) == (
        "this Triton's ptxas does not compile for sm_110 (it knows sm_80, sm_90)")
    assert cannot_compile(Target("cuda", 90)) is None


def test_ptxas_names_the_architectures_it_compiles_for():
    from triton import knobs

    from sweeper.sweep._gpu_check import _ptxas_archs

    assert {80, 90} <= _ptxas_archs(knobs.nvidia.ptxas.path)
    assert _ptxas_archs("/nonexistent/ptxas") == set()


class _Compiler:
    """Stands in for the Precompiler: refuses the configs with BLOCK in ``refused``."""

    def __init__(self, refused: set[int]) -> None:
        self.refused, self.compiled = refused, []

    def compile(self, config: Config) -> Precompiled:
        self.compiled.append(config.meta["BLOCK"])
        if config.meta["BLOCK"] in self.refused:
            return Precompiled(Compile.FAILED, "CompilationError: no", 0.1)
        return Precompiled(Compile.COMPILED, "", 0.1, 1)


def _config(block: int, grid: int = 1) -> Config:
    return Config(Problem("float32", 4096, (("n", 1024),)), grid, 32, {"BLOCK": block})


@pytest.fixture
def here(monkeypatch):
    """The check compiles in this process (the stand-in compiler counts here), not in a
    forked child."""
    from sweeper.sweep import _gpu_check

    monkeypatch.setattr(_gpu_check, "in_a_fork",
                        lambda compile, config, within_s=None: compile(config))


def _check(mode: str, refused: set[int]) -> tuple[GpuCheck, _Compiler]:
    compiler = _Compiler(refused)
    return GpuCheck(None, Target(), mode, compiler=compiler), compiler   # type: ignore[arg-type]


def test_first_checks_one_binary_then_each_config_only_while_they_are_refused(here):
    check, compiler = _check("first", set())
    assert "one config was compiled for sm_90" in check.start(_config(64))
    assert check.refused(0, {"BLOCK": "128"}, _config(128)) is None
    assert compiler.compiled == [64]                 # one binary a run

    check, compiler = _check("first", {64, 128})
    assert "the sm_90 compiler refuses the kernel (grid=1 block=32 BLOCK=64)" in \
        check.start(_config(64))
    record = check.refused(3, {"BLOCK": "128"}, _config(128))
    assert record is not None and record.status.value == "compile_error"
    assert record.number == 3 and record.reason == "sm_90: CompilationError: no"
    assert check.refused(4, {"BLOCK": "256"}, _config(256)) is None     # it compiles
    assert check.refused(5, {"BLOCK": "128"}, _config(128, grid=2)) is None  # not checked
    assert compiler.compiled == [64, 128, 256]


def test_all_checks_every_binary_once(here):
    check, compiler = _check("all", {128})
    assert "every binary is compiled for sm_90" in check.start(_config(64))
    assert check.refused(0, {}, _config(64, grid=2)) is None          # its binary: known
    assert check.refused(1, {}, _config(128)) is not None
    assert check.refused(2, {}, _config(128, grid=2)) is not None     # the same refusal
    assert check.refused(3, {}, _config(256)) is None
    assert compiler.compiled == [64, 128, 256]
    assert re.fullmatch(r"gpu check: 3 binaries compiled for sm_90 in [0-9.]+ s, 1 refused",
                        check.lines()[0])


def test_the_target_is_checked_as_the_option_is_read(capsys):
    assert main(["run", "x.yaml", "--device", "interpret", "--gpu-check-target", "h100"]) == 2
    assert "expected a CUDA architecture such as sm_90" in capsys.readouterr().err


def test_a_compile_after_the_interpreter_patched_the_language_is_tritons_own():
    """An interpreted kernel calling ``tl.max`` leaves Triton 3.9's language patched for
    the interpreter; the check compiles softmax (``tl.max``, ``tl.sum``) all the same, in
    the language as it was kept, and leaves the patches as they were."""
    from sweeper.kernels import load_kernel
    from sweeper.kernels._precompile import Precompiler, language_patched

    kernel = load_kernel("softmax")
    config = Config(Problem("float32", 0, (("rows", 4), ("cols", 60))), 4, 32,
                    {"BLOCK": 64})
    buffers = kernel.allocate(config.problem, "cpu")
    kernel.launch(buffers, config)                       # interpreted
    patched = language_patched()
    assert patched      # Triton 3.9 leaves it patched (a later Triton may not)
    result = Precompiler(kernel, Target()).compile(config)
    assert result.status is Compile.COMPILED, result.reason
    assert language_patched() == patched


def test_the_api_takes_the_option_as_the_command_does(tmp_path):
    import sweeper
    from sweeper.errors import SweeperError

    with pytest.raises(SweeperError, match="gpu_check: 'some' is not 'first', 'all' or 'off'"):
        sweeper.run("spaces/copy-small.yaml", device="interpret", gpu_check="some",
                    studies_dir=tmp_path)


def test_the_compile_runs_in_a_forked_child_and_leaves_this_process_as_it_was():
    """What a kernel's launch changes on the Python side (``tires`` works on a config's
    first launch only) stays in the child the check compiles in."""
    from sweeper.sweep._gpu_check import in_a_fork

    seen: list[int] = []

    def compile(config: Config) -> Precompiled:
        seen.append(config.meta["BLOCK"])
        return Precompiled(Compile.FAILED, f"refused {len(seen)}")

    assert in_a_fork(compile, _config(64)) == Precompiled(Compile.FAILED, "refused 1")
    assert seen == []

    def dies(config: Config) -> Precompiled:
        raise SystemExit(3)

    assert in_a_fork(dies, _config(64)).reason == "SystemExit: 3"


def test_a_compile_that_never_answers_is_ended_and_the_check_skipped(monkeypatch):
    """A child forked from a process with threads may block on a lock one of them held:
    past FORK_TIMEOUT_S it is killed and the answer is a skip, never a hang; a long
    answer (more than a pipe holds) still arrives whole."""
    import time as clock

    from sweeper.sweep import _gpu_check

    monkeypatch.setattr(_gpu_check, "FORK_TIMEOUT_S", 0.5)

    def stuck(config: Config) -> Precompiled:
        clock.sleep(60)
        return Precompiled(Compile.COMPILED, "")

    t0 = clock.perf_counter()
    result = _gpu_check.in_a_fork(stuck, _config(64))
    assert result.status is Compile.LEFT and "no answer within 0.5 s" in result.reason
    assert clock.perf_counter() - t0 < 10

    def long(config: Config) -> Precompiled:
        return Precompiled(Compile.FAILED, "x" * (1 << 20))

    assert _gpu_check.in_a_fork(long, _config(64)).reason == "x" * (1 << 20)


def test_a_torch_op_is_not_forked_for_a_check(tmp_path, capsys, monkeypatch):
    """A kernel whose module names no Triton has nothing to compile: the run says so and
    forks no child (a torch op's launch computes on the CPU, which a child forked from a
    process whose thread pools ran can block in: it did, for the check's whole 120 s)."""
    from pathlib import Path

    from sweeper.sweep import _gpu_check

    def no_fork(*args, **kwargs):
        raise AssertionError("forked a check for a torch op")

    monkeypatch.setattr(_gpu_check, "in_a_fork", no_fork)
    space = Path(__file__).resolve().parent.parent / "spaces" / "torch-op-gelu.yaml"
    assert main(["run", str(space), "--device", "interpret", "--trials", "2", "--no-report",
                 "--studies-dir", str(tmp_path)]) in (0, 1)
    assert "gpu check: nothing to compile for sm_90: the kernel's module names no Triton" \
        in capsys.readouterr().out


def test_a_time_budget_too_short_for_the_check_skips_it_saying_so(small_space, tmp_path,
                                                                  capsys, monkeypatch):
    """The check runs in the set-up, before the sweep: where the time budget leaves less
    than a compile takes before the report, it is skipped with a line saying so, nothing
    forked (on the interpreter it took 0.6-1.2 s of a budget that had none of it left)."""
    from sweeper.engine import _clock
    from sweeper.sweep import _gpu_check

    def no_fork(*args, **kwargs):
        raise AssertionError("forked a check the time budget has no room for")

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_gpu_check, "in_a_fork", no_fork)
    monkeypatch.setattr(_clock.RunClock, "elapsed_s", lambda self: 0.99)
    main(["run", str(small_space), "--device", "interpret", "--studies-dir", str(tmp_path),
          "--no-report", "--time", "1s"])
    assert "gpu check: skipped: the time budget leaves 0.0 s before the report, less than a " \
        "compile for sm_90 takes here (about 1 s); nothing compiled for it" \
        in capsys.readouterr().out


def test_the_budget_skips_the_check_by_what_one_took_on_this_machine(small_space, tmp_path,
                                                                     capsys, monkeypatch):
    """Whether the time budget leaves room for the check is judged by what this machine's
    last check took (kept in run-costs.json), the constant 1 s only before one ran: a
    check measured at 0.2 s runs where the budget leaves 0.5 s, and what it took is kept
    for the next run."""
    import json

    from sweeper.engine import _clock
    from sweeper.sweep import _gpu_check

    forked: list[float | None] = []

    def quick(compile, config, within_s=None):
        forked.append(within_s)
        return Precompiled(Compile.COMPILED, "")

    cache = tmp_path / "cache"
    monkeypatch.setenv("SWEEPER_CACHE", str(cache))
    monkeypatch.setattr(_gpu_check, "in_a_fork", quick)
    monkeypatch.setattr(_gpu_check, "cannot_compile", lambda target: None)
    cache.mkdir()
    (cache / "run-costs.json").write_text(json.dumps(
        {"interpret: Triton interpreter (CPU)": {"gpu_check_s": 0.2}}))
    # 2 s less 1.2 s spent and END_S: about 0.5 s left before the (absent) report
    monkeypatch.setattr(_clock.RunClock, "elapsed_s", lambda self: 1.2)
    main(["run", str(small_space), "--device", "interpret", "--studies-dir", str(tmp_path),
          "--no-report", "--time", "2s"])
    out = capsys.readouterr().out
    assert "gpu check: one config was compiled for sm_90 too" in out, out
    assert forked and "skipped: the time budget" not in out
    kept = json.loads((cache / "run-costs.json").read_text())
    [costs] = kept.values()
    assert costs["gpu_check_s"] is not None and costs["gpu_check_s"] < 0.2


def test_compiles_before_each_trial_are_kept_for_and_end_at_the_budgets_deadline(
        write_space, tmp_path, capsys, monkeypatch):
    """Where every config is compiled for the GPU before it runs (``--gpu-check all``, or
    once the compiler refused the representative), those compiles are part of the time
    budget: the trial in flight is kept for with its compile (priced from what one took
    in this run), and a compile the time left does not cover is ended at the deadline and
    the sweep stops there, as the set-up's check does.  A compile that took 4 s carried a
    `--time 4s` run to 5.5 s and more."""
    import time as clock

    from sweeper.sweep import _gpu_check

    calls: list[float | None] = []

    def compiles(compile, config, within_s=None):
        calls.append(within_s)
        if len(calls) < 3:                       # the representative and a config
            clock.sleep(0.05)
            return Precompiled(Compile.COMPILED, "")
        took = 4.0 if within_s is None else min(4.0, within_s)
        clock.sleep(took)
        return Precompiled(Compile.LEFT, "no answer") if within_s is not None and \
            took >= within_s else Precompiled(Compile.COMPILED, "")

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_gpu_check, "in_a_fork", compiles)
    monkeypatch.setattr(_gpu_check, "cannot_compile", lambda target: None)
    path = write_space(SPACE.format(study="many", kernel="copy")
                       .replace("block: [32, 128]", "block: [32, 64, 128]")
                       .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024, 2048]"))
    t0 = clock.perf_counter()
    main(["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path),
          "--no-report", "--gpu-check", "all", "--time", "4s"])
    wall = clock.perf_counter() - t0
    out = capsys.readouterr().out
    assert len(calls) >= 3 and calls[2] is not None, calls
    assert "(the compile of the next config for sm_90 ran to its end)" in out, out
    assert wall <= 4 * 1.05, (wall, out)


def test_a_budget_keeps_the_compile_before_the_trial_in_flight():
    """The time kept for the trial in flight holds the compile before it, while every
    config is compiled: the longest of this run's compiles after its first."""
    from sweeper.space import Budget
    from sweeper.sweep._budget import Budgets, StopFlag
    from sweeper.sweep._gpu_check import GPU_CHECK_S

    check = GpuCheck(None, Target.parse("sm_90"), "all",  # type: ignore[arg-type]
                     compiler=object())
    assert check.config_s == GPU_CHECK_S          # none compiled yet
    check._walls[:] = [0.9, 0.2, 0.3]
    assert check.config_s == 0.3
    budgets = Budgets(Budget(), StopFlag(), max_trials=None, max_time_s=10.0, ceilings=None,
                      valid=100, measured=0, t0=0.0)
    budgets.first_trial_s = 0.5
    budgets.check_s = lambda: check.config_s
    assert budgets.keep_for_finals() == pytest.approx(0.8)
    check.every = False                           # the kernel compiles: one check again
    assert budgets.keep_for_finals() == pytest.approx(0.5)


def test_a_check_the_time_budget_left_too_little_is_ended_at_its_deadline():
    """A check that started within the budget is ended where the time it was left runs
    out, and skipped, saying so: set-up never carries the run past its budget."""
    import time as clock

    class Slow:
        def compile(self, config: Config) -> Precompiled:
            clock.sleep(60)
            return Precompiled(Compile.COMPILED, "")

    check = GpuCheck(None, Target.parse("sm_90"), "first", compiler=Slow())  # type: ignore[arg-type]
    t0 = clock.perf_counter()
    line = check.start(_config(64), within_s=0.5)
    assert clock.perf_counter() - t0 < 10
    assert line == ("gpu check: skipped: the compile for sm_90 did not end within the 0.5 s "
                    "the time budget left it; nothing compiled for it (a longer time budget, "
                    "or none, compiles it)")
    assert check.skipped is not None
