"""A kernel's source edited while its sweep runs: the sweep stops before it records a
trial that may have been compiled from the edited text, keeps every trial measured before,
and says how to measure the edited kernel (as a resume refused for an edit says)."""

from __future__ import annotations

import os
import re
import sys
import uuid

import pytest

from sweeper.cli import main
from sweeper.kernels._watch import SourceWatch
from sweeper.store import StudyStore
from sweeper.sweep._bench import Bench
from sweeper.trial import TrialStatus
from tests.conftest import ROOT

#: The README's own kernel (``x *= A``), copied as a user's module that the tests edit.
KERNEL = (ROOT / "examples" / "scale.py").read_text()

SPACE = """\
study: edited
kernel: {module}:scale
sampler: exhaustive
params:
  BLOCK: [128, 256, 512, 1024]
  n: [1024]
measure: {{warmup: 1, repeat: 3}}
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A Triton kernel module of the user's (a fresh name: imported anew by each test),
    its file and a space sweeping it."""
    module = f"edited_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{module}.py"
    path.write_text(KERNEL)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))    # written long before the sweep
    monkeypatch.syspath_prepend(str(tmp_path))
    space = tmp_path / "edited.yaml"
    space.write_text(SPACE.format(module=module))
    yield module, path, space
    sys.modules.pop(module, None)


def _after_first_trial(monkeypatch, change) -> None:
    """Call ``change()`` once the sweep's first trial was kept, as the second starts (the
    user saving the kernel's file while the sweep runs)."""
    trial = Bench.trial

    def measured(self, number, choice):
        if number == 1:
            change()
        return trial(self, number, choice)
    monkeypatch.setattr(Bench, "trial", measured)


def _run(space, studies, *extra):
    return main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
                 "--quiet", "--no-report", *extra])


def test_an_edit_while_the_sweep_runs_stops_it_keeping_the_trials_before(
        user_module, tmp_path, monkeypatch, capsys):
    module, path, space = user_module
    studies = tmp_path / "studies"
    _after_first_trial(monkeypatch, lambda: path.write_text(KERNEL.replace(
        "A = 0.5", "A = 0.25")))
    assert _run(space, studies) == 2            # as a resume refused for an edit exits
    err = capsys.readouterr().err
    root = studies / "edited-interpret"
    assert err.strip().splitlines()[-1] == (
        f"sweeper: {root}: stopped, its kernel's source changed during the sweep "
        f"({path} was edited); the 1 trial it measured before is kept in the study; rerun "
        "with --force to keep its trials and measure its configs again on this source "
        "(those of the earlier source stay in the study but choose no winner), or with "
        "--study NEW to measure this source in a new study")
    store = StudyStore(root)
    trials = store.records()[0]
    source = store.meta()["kernel_source_hash"]
    # the first trial alone, measured on the source the study records; the one measured
    # after the edit is not kept under it
    assert [(t.number, t.status, t.source_hash) for t in trials] == \
        [(0, TrialStatus.OK, source)]

    # the same command refuses to resume for the edit; with --force it measures the rest
    # (and the first config again) on the edited source
    monkeypatch.undo()
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(module, None)
    assert _run(space, studies) == 2
    assert "cannot resume, its kernel's source changed" in capsys.readouterr().err
    assert _run(space, studies, "--force") == 0
    trials = StudyStore(root).records()[0]
    edited = StudyStore(root).meta()["kernel_source_hash"]
    assert edited != source
    assert [t.source_hash for t in trials] == [source] + [edited] * 4


def test_a_file_saved_unchanged_while_the_sweep_runs_stops_nothing(user_module, tmp_path,
                                                                   monkeypatch):
    """Saving the kernel's file unchanged moves its stamp, not its text: no edit."""
    _, path, space = user_module
    _after_first_trial(monkeypatch, lambda: path.write_text(path.read_text()))
    assert _run(space, tmp_path / "studies") == 0
    trials = StudyStore(tmp_path / "studies" / "edited-interpret").records()[0]
    assert len(trials) == 4


def test_the_watch_names_the_file_edited_and_not_one_touched(tmp_path):
    """The watch stats each file, reads again only one whose stamp moved, and names the
    first whose bytes changed (or that is gone)."""
    a, b = tmp_path / "a.py", tmp_path / "b.h"
    for path in (a, b):
        path.write_text("x = 1\n")
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    watch = SourceWatch([a, b])
    assert watch.edited() is None
    b.write_text("x = 1\n")                     # saved unchanged
    assert watch.edited() is None
    b.write_text("x = 2\n")
    assert watch.edited() == b
    b.write_text("x = 1\n")                     # put back as it was
    assert watch.edited() is None
    a.unlink()
    assert watch.edited() == a


def test_an_edit_of_the_same_size_within_a_timestamp_tick_is_seen(tmp_path):
    """A file written just before the watch began may be rewritten within its stamp's
    tick at the same size: read again at each ask until its stamp is old enough."""
    path = tmp_path / "k.py"
    path.write_text("x = 1\n")
    watch = SourceWatch([path])
    stat = path.stat()
    path.write_text("x = 2\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))     # the same stamp
    assert watch.edited() == path
    assert re.fullmatch(r"x = 2\n", path.read_text())


def test_the_sweep_s_watch_and_a_cuda_launch_keep_files_by_one_settled_rule(
        tmp_path, monkeypatch):
    """A file read too soon after it was last written (its stamp may not tell the next
    edit) is read again at each ask by the sweep's watch and by a CUDA launch alike: the
    rule is one (``_watch.settled``), so a window set there holds for both; a file written
    a minute before a read is read once by each under the usual window, again at each ask
    under a longer one."""
    import time

    from sweeper.kernels import _cuda_build, _watch
    from sweeper.kernels._cuda_spec import sources
    from tests.test_cuda_kernel import COPY_CU

    cu = tmp_path / "copy.cu"
    cu.write_text(COPY_CU.read_text())
    os.utime(cu, ns=(time.time_ns() - 60_000_000_000,) * 2)
    reads = []

    def counted(path, seen=()):
        reads.append(path)
        return sources(path, seen)
    monkeypatch.setattr(_cuda_build, "sources", counted)
    digests = []
    read = _watch._read

    def hashed(path):
        digests.append(path)
        return read(path)
    monkeypatch.setattr(_watch, "_read", hashed)

    def asked_twice():
        reads.clear()
        digests.clear()
        launch = _cuda_build.CudaLaunch(cu, "copy", ["dst", "src", "n"], None, __name__)
        launch.files()
        launch.files()
        watch = SourceWatch([cu])
        assert watch.edited() is None and watch.edited() is None
        return len(reads), len(digests)
    assert asked_twice() == (1, 1)
    monkeypatch.setattr(_watch, "SETTLED_NS", 600_000_000_000)     # ten minutes
    assert asked_twice() == (2, 3)


def test_a_cuda_kernel_s_files_are_watched_as_the_launch_reads_them(tmp_path):
    """A CUDA C launch compiles its files as they read at each compile (an edit since is
    compiled): the sweep watches the ``.cu`` file and each file it includes, and names
    the one edited."""
    from sweeper.kernels import load_kernel
    from sweeper.kernels._cuda_build import precompile
    from sweeper.space import Config, Problem, load_space
    from tests.test_cuda_kernel import COPY_CU, FakeCompiler, space_text

    cu, header = tmp_path / "copy.cu", tmp_path / "common.h"
    cu.write_text('#include "common.h"\n' + COPY_CU.read_text())
    header.write_text("#define SCALE 1\n")
    for path in (cu, header):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    (tmp_path / "space.yaml").write_text(space_text())
    space = load_space(tmp_path / "space.yaml")
    kernel = load_kernel(space.kernel, space.kernel_options)
    launch = kernel.plan.launch
    assert {cu, header} <= set(kernel.source_files())
    watch, source = SourceWatch(kernel.source_files()), kernel.source_hash()
    config = Config(problem=Problem("float32", 4096), grid=4, block=128, meta={"VEC": 4})
    launch.compiler = FakeCompiler()
    precompile(launch, config)
    assert watch.edited() is None

    header.write_text("#define SCALE 2\n")      # saved while the sweep runs
    assert watch.edited() == header
    assert launch.files()[header] == b"#define SCALE 2\n"   # what the next compile reads
    assert kernel.source_hash() != source


def test_a_cuda_kernel_s_include_that_appears_is_watched_and_hashed(tmp_path):
    """An ``#include "..."`` that resolves to no file beside its includer (a header not
    written yet, or one NVRTC finds elsewhere on its include path) brings in the file
    written there later, which NVRTC compiles from then on: its appearance is an edit the
    sweep sees, and the source hash covers it."""
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from tests.test_cuda_kernel import COPY_CU, space_text

    cu, header = tmp_path / "copy.cu", tmp_path / "tuning.h"
    cu.write_text('#include "tuning.h"\n' + COPY_CU.read_text())
    os.utime(cu, ns=(1_000_000_000, 1_000_000_000))
    (tmp_path / "space.yaml").write_text(space_text())
    space = load_space(tmp_path / "space.yaml")
    kernel = load_kernel(space.kernel, space.kernel_options)
    watch, source = SourceWatch(kernel.source_files()), kernel.source_hash()
    assert watch.edited() is None

    header.write_text("#define SCALE 2\n")      # written while the sweep runs
    os.utime(header, ns=(1_000_000_000, 1_000_000_000))
    assert watch.edited() == header
    assert kernel.plan.launch.files()[header] == b"#define SCALE 2\n"
    assert kernel.source_hash() != source
    assert header in kernel.source_files()


def _cuda_with_headers(tmp_path, head, part_text):
    """A ``cuda`` kernel's space in ``tmp_path`` whose ``copy.cu`` begins with ``head`` and
    includes ``sub/part.cuh`` (``part_text``), with a ``common.h`` beside it, every file
    written long enough ago to be settled: the three files and the kernel loaded."""
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from tests.test_cuda_kernel import COPY_CU, space_text

    cu, part, common = tmp_path / "copy.cu", tmp_path / "sub" / "part.cuh", \
        tmp_path / "common.h"
    part.parent.mkdir(exist_ok=True)
    cu.write_text(head + '#include "sub/part.cuh"\n' + COPY_CU.read_text())
    part.write_text(part_text)
    common.write_text("#define SCALE 1\n")
    for path in (cu, part, common):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    (tmp_path / "space.yaml").write_text(space_text())
    space = load_space(tmp_path / "space.yaml")
    return cu, part, common, load_kernel(space.kernel, space.kernel_options)


def test_a_cuda_kernel_s_header_found_through_the_source_s_folder_is_watched_and_hashed(
        tmp_path):
    """NVRTC compiles with ``-I`` of the ``.cu`` file's folder, so a header in a subfolder
    that includes ``"common.h"`` gets the one beside the ``.cu`` file where none is beside
    it: that file is part of the source (hashed, watched, keyed in the compile cache) as
    one beside its includer is, and one written later beside the includer, which NVRTC
    would take first, is watched for."""
    from sweeper.kernels._cuda_spec import sources

    cu, part, common, kernel = _cuda_with_headers(tmp_path, "", '#include "common.h"\n')
    assert list(sources(cu)) == [cu, part, common]
    assert {cu, part, common} <= set(kernel.source_files())
    assert tmp_path / "sub" / "common.h" in kernel.source_files()
    watch, source = SourceWatch(kernel.source_files()), kernel.source_hash()
    assert watch.edited() is None

    common.write_text("#define SCALE 2\n")      # saved while the sweep runs
    assert watch.edited() == common
    assert kernel.plan.launch.files()[common] == b"#define SCALE 2\n"
    assert kernel.source_hash() != source


def test_a_cuda_kernel_s_header_included_in_angle_brackets_from_its_folder_is_its_source(
        tmp_path):
    """NVRTC finds ``#include <common.h>`` through the ``-I`` of the ``.cu`` file's folder
    (never beside a header of a subfolder): that file is part of the source as a quoted
    one is, and one the folder lacks (``<cuda_fp16.h>``) is a system header left out, its
    path in the folder watched in case one is written there."""
    from sweeper.kernels._cuda_spec import absent_includes, sources

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "common.h").write_text("#define SCALE 9\n")   # not where <> looks
    cu, part, common, kernel = _cuda_with_headers(tmp_path, "#include <cuda_fp16.h>\n",
                                                  "#include <common.h>\n")
    files = sources(cu)
    assert list(files) == [cu, part, common]
    assert absent_includes(files) == (tmp_path / "cuda_fp16.h",)
    watch, source = SourceWatch(kernel.source_files()), kernel.source_hash()
    common.write_text("#define SCALE 2\n")      # saved while the sweep runs
    assert watch.edited() == common
    assert kernel.source_hash() != source


def test_a_worker_process_that_imported_the_edited_kernel_runs_none_of_it(
        user_module, tmp_path, monkeypatch, capsys):
    """The kernel saved with other text after the run imported it, before its worker
    process did: the worker holds the edited kernel, which the study would record under
    the source the run hashed.  It compares its own source with the one each job is
    recorded under, runs none of it, and the sweep stops naming the file."""
    from sweeper.sweep import Sampling

    _, path, space = user_module
    build = Sampling.build.__func__

    def edited_then_built(cls, *args, **kwargs):      # after the run hashed the kernel
        path.write_text(KERNEL.replace("A = 0.5", "A = 0.25"))
        return build(cls, *args, **kwargs)
    monkeypatch.setattr(Sampling, "build", classmethod(edited_then_built))
    studies = tmp_path / "studies"
    assert _run(space, studies, "--workers", "process") == 2
    assert f"during the sweep ({path} was edited); the 0 trials it measured before are " \
        "kept in the study; rerun with --force" in capsys.readouterr().err
    assert StudyStore(studies / "edited-interpret").records()[0] == []


#: A user's kernel class (the built-in copy's, subclassed), whose source is its class's
#: text as ``inspect`` read it from the file when the kernel was loaded.
CLASS_KERNEL = """\
from sweeper.kernels.copy import CopyKernel


class MyCopy(CopyKernel):
    name = "my-copy"
"""


def _class_kernel(tmp_path, monkeypatch):
    """:data:`CLASS_KERNEL` as a user's module of a fresh name, its file and a space
    sweeping it."""
    module = f"edited_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{module}.py"
    path.write_text(CLASS_KERNEL)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    monkeypatch.syspath_prepend(str(tmp_path))
    space = tmp_path / "edited.yaml"
    space.write_text(f"study: edited\nkernel: {module}:MyCopy\nparams:\n  grid: [1, 2]\n"
                     "  block: [32, 64]\n  footprint: [4KiB]\n"
                     "measure: {warmup: 1, repeat: 3}\n")
    return module, path, space


def test_an_edit_after_a_lost_context_stops_the_sweep_that_goes_on_in_workers(
        tmp_path, monkeypatch, capsys):
    """A trial that breaks this process's CUDA context hands the rest of the sweep to
    worker processes, a sweep of its own: it holds its workers against the source the
    study records (the worker processes import the kernel anew), so an edit saved in
    between stops it, as it would have stopped the sweep before, and no trial is recorded
    under the edited source without --force."""
    from sweeper.devices._interpret import InterpretDevice
    from sweeper.engine import _run as engine_run

    module, path, space = _class_kernel(tmp_path, monkeypatch)
    monkeypatch.setattr(InterpretDevice, "healthy", lambda self: False)
    trial = Bench.trial

    def crashed(self, number, choice):             # the first trial breaks the context
        record = trial(self, number, choice)
        return record if number else \
            record.__class__(**{**vars(record), "status": TrialStatus.CRASHED})
    monkeypatch.setattr(Bench, "trial", crashed)
    reporter, calls = engine_run.progress_reporter, []

    def edited_then(quiet, headline):              # the second sweep's: between the two
        calls.append(quiet)
        if len(calls) == 2:
            path.write_text(CLASS_KERNEL.replace('"my-copy"', '"my-copy"  # edited'))
        return reporter(quiet, headline)
    monkeypatch.setattr(engine_run, "progress_reporter", edited_then)
    studies = tmp_path / "studies"
    try:
        assert _run(space, studies, "--workers", "inline") == 2
    finally:
        sys.modules.pop(module, None)
    err = capsys.readouterr().err
    assert "left the CUDA context unusable" in err and len(calls) == 2
    kernels = ROOT / "sweeper" / "kernels"      # the edit was not seen, only its effect
    assert (f"during the sweep (one of {kernels / 'copy.py'}, {kernels / '_declared.py'} and "
            f"{path} was edited); the 0 trials it measured before are kept") in err
    store = StudyStore(studies / "edited-interpret")
    source = store.meta()["kernel_source_hash"]
    assert [(t.number, t.status, t.source_hash) for t in store.records()[0]] == \
        [(0, TrialStatus.CRASHED, source)]


def test_a_compile_process_s_answer_names_its_source_and_another_is_left_to_the_worker(
        write_space, tmp_path, monkeypatch):
    """A compile process tells the source it compiled (the kernel as it loaded it); a
    refusal from another source than the sweep records is no trial: the worker compiles
    that config itself, under its own check."""
    from types import SimpleNamespace

    from sweeper.devices import open_device
    from sweeper.kernels import load_kernel
    from sweeper.kernels._precompile import Compile, Precompiled
    from sweeper.sweep._compile_ahead import CompileAhead
    from sweeper.sweep._compile_pool import CompilePool, PoolSetup
    from tests.conftest import SMALL_SPACE
    from tests.test_compile_pool import SM90, _configs

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    space, configs = _configs(write_space(SMALL_SPACE), open_device("interpret"))
    key, config = configs[0]
    pool = CompilePool(PoolSetup(space, SM90, list(sys.path)), 1)
    try:
        pool.wait_started()
        pool.ahead([(key, config)])
        result = pool.take(key)
    finally:
        pool.close()
    assert result is not None and result.status is Compile.COMPILED
    assert result.source == load_kernel(space.kernel).source_hash()

    refusal = Precompiled(Compile.FAILED, "CompilationError: out of registers", 0.1,
                          source="1" * 16)
    stub = SimpleNamespace(take=lambda key, wait_s: refusal, worth_waiting_s=lambda: 0.0)
    sampler = SimpleNamespace(prefer=None)
    ahead = CompileAhead(space, sampler, stub, lambda choice: config, window=1)
    choice = dict(zip(space.choices(), key, strict=False))
    assert ahead.refused(0, choice).status is TrialStatus.COMPILE_ERROR   # none expected
    ahead.source = "2" * 16                                   # the sweep's, another
    assert ahead.refused(1, choice) is None and ahead.counts["left"] == 1
    ahead.source = "1" * 16
    assert ahead.refused(2, choice).status is TrialStatus.COMPILE_ERROR


@pytest.mark.parametrize("workers", ["inline", "process"])
def test_an_edit_during_the_finals_keeps_no_final_measured_past_it(
        user_module, tmp_path, monkeypatch, capsys, workers):
    """The finals measure the finalists again and choose the winner: one measured after
    the kernel's source was edited is not kept (here or in a worker process, which holds
    its own kernel against the source of the finalists), the trials are."""
    from sweeper.finals import FinalRecord
    from sweeper.sweep import _workers
    from sweeper.sweep._process import ProcessWorker

    _, path, space = user_module

    def edit() -> None:
        path.write_text(KERNEL.replace("A = 0.5", "A = 0.25"))
    final_of = _workers.final_of
    monkeypatch.setattr(_workers, "final_of", lambda *args: (edit(), final_of(*args))[1])
    submit = ProcessWorker.submit_finals
    monkeypatch.setattr(ProcessWorker, "submit_finals",
                        lambda self, job: (edit(), submit(self, job))[1])
    studies = tmp_path / "studies"
    assert _run(space, studies, "--workers", workers) == 2
    assert f"({path} was edited); the 4 trials it measured before are kept in the study" \
        in capsys.readouterr().err
    store = StudyStore(studies / "edited-interpret")
    assert len(store.records()[0]) == 4 and store.read(FinalRecord) == []


#: The README's kernel with its Triton body and its constant in a module of the user's own
#: beside it, which the kernel's module imports.
HELPERS = '''\
import triton
import triton.language as tl

A = 0.5


@triton.jit
def scaled(x, a):
    return x * a
'''
IMPORTING = KERNEL.replace("A = 0.5\n", "from HELPERS import A, scaled\n").replace(
    "tl.load(x + offsets, mask=offsets < n) * a",
    "scaled(tl.load(x + offsets, mask=offsets < n), a)")


@pytest.fixture
def helper_module(user_module):
    """``user_module`` importing its constant and a Triton function from a module of the
    user's own beside it (a fresh name too), and that module's file."""
    module, path, space = user_module
    helpers = f"helpers_{uuid.uuid4().hex[:8]}"
    helper = path.parent / f"{helpers}.py"
    helper.write_text(HELPERS)
    path.write_text(IMPORTING.replace("HELPERS", helpers))
    for written in (path, helper):
        os.utime(written, ns=(1_000_000_000, 1_000_000_000))
    yield module, path, space, helper
    sys.modules.pop(helpers, None)


def test_an_edit_of_a_module_the_kernel_imports_stops_the_sweep(
        helper_module, tmp_path, monkeypatch, capsys):
    """A Triton function or constant the kernel's module imports from another module of
    the user's own is part of the kernel: an edit of that module during the sweep stops
    it, as an edit of the kernel's own module does."""
    _, _, space, helper = helper_module
    _after_first_trial(monkeypatch, lambda: helper.write_text(HELPERS.replace(
        "A = 0.5", "A = 0.25")))
    studies = tmp_path / "studies"
    assert _run(space, studies) == 2
    assert f"during the sweep ({helper} was edited); the 1 trial it measured before is " \
        "kept" in capsys.readouterr().err
    assert len(StudyStore(studies / "edited-interpret").records()[0]) == 1


def test_an_edit_of_a_module_the_kernel_imports_refuses_a_resume(helper_module, tmp_path,
                                                                  capsys):
    """The source hash a study records covers the user's modules the kernel's module
    imports: a resume after one was edited is refused, as after an edit of the kernel's
    own module; the libraries it imports (triton, sweeper) are not part of it."""
    from sweeper.kernels import load_kernel
    from sweeper.kernels._unimported import module_source_hash

    module, path, space, helper = helper_module
    studies = tmp_path / "studies"
    unrun = module_source_hash(f"{module}:scale")       # as `sweeper plan` tells it
    assert _run(space, studies, "--trials", "1") == 0
    kernel = load_kernel(f"{module}:scale")
    assert set(kernel.source_files()) == {path, helper}
    assert unrun == kernel.source_hash() == \
        StudyStore(studies / "edited-interpret").meta()["kernel_source_hash"]
    helper.write_text(HELPERS.replace("A = 0.5", "A = 0.25"))
    sys.modules.pop(module, None)
    sys.modules.pop(helper.stem, None)
    assert module_source_hash(f"{module}:scale") != unrun
    assert _run(space, studies, "--trials", "2") == 2
    assert "cannot resume, its kernel's source changed" in capsys.readouterr().err


#: ``sweeper.kernel``'s arguments in the README's kernel, and its launch's body.
DECLARED = KERNEL[KERNEL.index("@sweeper.kernel(") + len("@sweeper.kernel("):
                  KERNEL.index("def scale(")].rstrip()[:-1]
LAUNCHED = KERNEL[KERNEL.index("    scale_kernel["):]
#: The README's kernel declared with its launch given to ``sweeper.kernel``: a function
#: of its module, called or curried, a lambda, or one imported from another module.
GIVEN = {
    "passed": f"def launch(x, config):\n{LAUNCHED}\n\n"
              f"scale = sweeper.kernel(launch, name='scale', {DECLARED})\n",
    "curried": f"def launch(x, config):\n{LAUNCHED}\n\n"
               f"scale = sweeper.kernel(name='scale', {DECLARED})(launch)\n",
    "lambda": f"scale = sweeper.kernel(lambda x, config: {LAUNCHED.strip()}, name='scale', "
              f"{DECLARED})\n",
    "imported": f"from HELPER import launch\n\n"
                f"scale = sweeper.kernel(launch, name='scale', {DECLARED})\n",
}


@pytest.mark.parametrize("form", GIVEN)
def test_plan_hashes_a_kernel_given_its_module_s_own_launch_as_run_does(
        tmp_path, monkeypatch, request, form):
    """``plan`` tells the source hash of a kernel declared by ``sweeper.kernel(launch,
    ...)`` (or ``sweeper.kernel(...)(launch)``) from its module's text, as a run of it
    records it, where the module defines the launch (a function, a lambda), as it does
    for a decorated one; where the launch is imported from another module, whose text
    the run hashes instead, ``plan`` does not tell it."""
    from sweeper.kernels import load_kernel
    from sweeper.kernels._unimported import module_source_hash

    module, helper = f"given_{uuid.uuid4().hex[:8]}", f"launch_{uuid.uuid4().hex[:8]}"
    head = KERNEL[:KERNEL.index("@sweeper.kernel(")]
    (tmp_path / f"{module}.py").write_text(head + GIVEN[form].replace("HELPER", helper))
    (tmp_path / f"{helper}.py").write_text(
        head.replace("import sweeper\n", "") + f"def launch(x, config):\n{LAUNCHED}")
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(lambda: [sys.modules.pop(m, None) for m in (module, helper)])
    unrun = module_source_hash(f"{module}:scale")
    assert module not in sys.modules
    imported = load_kernel(f"{module}:scale").source_hash()
    assert unrun == (None if form == "imported" else imported)


def test_a_kernel_walks_its_module_s_imports_once(helper_module, tmp_path, monkeypatch):
    """The user's own modules a kernel's module imports are found once, as its source is
    read: the files the sweep watches are those whose text the source holds, never walked
    again (a short kernel's and a kernel class's alike)."""
    from sweeper.kernels import _own_modules, load_kernel

    walked = []
    walk = _own_modules.own_modules

    def counted(name, file):
        walked.append(name)
        return walk(name, file)
    monkeypatch.setattr(_own_modules, "own_modules", counted)
    module, path, space, helper = helper_module
    assert _run(space, tmp_path / "studies", "--trials", "1") == 0
    assert walked == [module]
    path.write_text(path.read_text() + "\nfrom sweeper.kernels.copy import CopyKernel\n\n\n"
                    "class MyCopy(CopyKernel):\n    name = \"my-copy\"\n")
    sys.modules.pop(module, None)
    kernel = load_kernel(f"{module}:MyCopy")        # the class's source read as loaded
    walked.clear()
    assert helper in kernel.source_files() and "A = 0.5" in kernel.source()
    assert walked == []


def test_modules_edited_while_the_kernel_s_module_is_imported_are_hashed_as_imported(
        helper_module, tmp_path, capsys):
    """A kernel's module and the user's modules it imports are hashed as the import read
    them, the code that runs: saved with other text while the import runs (here by the
    module itself, once it imported its helper), the trials of the code imported were
    recorded under the edited text's hash, which a later run of the edited code would
    resume.  They are recorded under the hash of the text imported, and the edited code's
    run is refused a resume."""
    from sweeper.kernels._unimported import module_source_hash

    module, path, space, helper = helper_module
    loaded = path.read_text()
    edited = loaded.replace("* a", "* a * 2")
    saving = (f"import pathlib\n"
              f"pathlib.Path({str(helper)!r}).write_text({HELPERS.replace('0.5', '0.25')!r})\n"
              f"pathlib.Path(__file__).write_text({edited!r})\n")
    at = loaded.index("\n", loaded.index(f"from {helper.stem} import")) + 1
    loaded = loaded[:at] + saving + loaded[at:]
    path.write_text(loaded)
    studies = tmp_path / "studies"
    try:
        assert _run(space, studies, "--trials", "1") == 0
    finally:
        sys.modules.pop(module, None)
        sys.modules.pop(helper.stem, None)
    assert path.read_text() == edited
    helper.write_text(HELPERS)
    path.write_text(loaded)
    as_imported = module_source_hash(f"{module}:scale")
    store = StudyStore(studies / "edited-interpret")
    assert store.meta()["kernel_source_hash"] == as_imported
    assert {t.source_hash for t in store.records()[0]} == {as_imported}
    path.write_text(edited)
    helper.write_text(HELPERS.replace("0.5", "0.25"))
    capsys.readouterr()
    try:
        assert _run(space, studies, "--trials", "2") == 2
    finally:
        sys.modules.pop(module, None)
        sys.modules.pop(helper.stem, None)
    assert "cannot resume, its kernel's source changed" in capsys.readouterr().err


def test_the_user_s_own_modules_are_those_of_the_kernel_s_project(tmp_path, monkeypatch):
    """Followed through relative and absolute imports (inside functions too), each module
    once; the standard library, sweeper, triton and torch are not the user's, nor a
    module installed in a site-packages folder under the project."""
    from sweeper.kernels._own_modules import own_modules

    package = tmp_path / "proj"
    installed = tmp_path / ".venv" / "lib" / "site-packages"
    for folder in (package, installed):
        folder.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kern.py").write_text(
        "import os\nimport triton\nfrom sweeper import kernel\nfrom .helpers import f\n"
        "import vendored\n\ndef launch():\n    from proj import late\n")
    (package / "helpers.py").write_text("from proj.deep import g\nfrom . import helpers\n")
    (package / "deep.py").write_text("import proj.helpers\n")
    (package / "late.py").write_text("")
    (installed / "vendored.py").write_text("")
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = own_modules("proj.kern", package / "kern.py")
    assert [(name, path.relative_to(tmp_path).as_posix()) for name, path in found] == [
        ("proj", "proj/__init__.py"), ("proj.helpers", "proj/helpers.py"),
        ("proj.late", "proj/late.py"), ("proj.deep", "proj/deep.py")]
    assert own_modules("sweeper.kernels.copy", ROOT / "sweeper" / "kernels" / "copy.py") \
        == []


def test_a_kernel_class_edited_after_it_was_imported_is_hashed_as_imported(
        tmp_path, monkeypatch, capsys):
    """A kernel class's source is read from its file, while the code that runs is the one
    imported: saved with other text in between (here as the sampler is built, before the
    sweep takes its hash), the trials of the code imported were recorded under the edited
    text's hash, which a later run of the edited code would resume.  The source is the
    text as the kernel was loaded: the trials are recorded under the hash of the code that
    ran, and the edited code's run is refused a resume."""
    from sweeper.kernels import load_kernel
    from sweeper.sweep import Sampling

    module, path, space = _class_kernel(tmp_path, monkeypatch)
    edited = CLASS_KERNEL.replace('"my-copy"', '"my-copy"  # edited')
    build = Sampling.build.__func__

    def edited_then_built(cls, *args, **kwargs):
        path.write_text(edited)
        return build(cls, *args, **kwargs)
    monkeypatch.setattr(Sampling, "build", classmethod(edited_then_built))
    studies = tmp_path / "studies"
    try:
        assert _run(space, studies, "--workers", "inline") == 0
    finally:
        sys.modules.pop(module, None)
    monkeypatch.setattr(Sampling, "build", classmethod(build))
    path.write_text(CLASS_KERNEL)
    try:
        imported = load_kernel(f"{module}:MyCopy").source_hash()
    finally:
        sys.modules.pop(module, None)
    store = StudyStore(studies / "edited-interpret")
    assert store.meta()["kernel_source_hash"] == imported
    assert {t.source_hash for t in store.records()[0]} == {imported}
    path.write_text(edited)
    capsys.readouterr()
    try:
        assert _run(space, studies, "--workers", "inline") == 2
    finally:
        sys.modules.pop(module, None)
    assert "cannot resume, its kernel's source changed" in capsys.readouterr().err


def test_a_hang_past_an_edit_is_not_recorded_under_the_source_before_it(
        user_module, tmp_path, monkeypatch):
    """A trial that hangs once the kernel's source was edited may run code compiled from
    the edited text (a CUDA C launch compiles its files as they read then): the watchdog
    keeps no timeout under the source the study records, as the sweep keeps no outcome
    past an edit, and hands over saying which file was edited (the run that goes on in a
    fresh process is refused a resume for the edit)."""
    import dataclasses
    import time

    from sweeper.devices import open_device
    from sweeper.errors import TrialHung
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from sweeper.sweep import Sweep, open_study

    _, path, space_path = user_module
    space = load_space(space_path)
    device, kernel = open_device("interpret"), load_kernel(space.kernel)
    store = StudyStore(tmp_path / "s")
    open_study(store, space, kernel, device, command="test")
    hangs = []
    sweep = Sweep(space, kernel, device, store,
                  on_hang=lambda record, edited: hangs.append((record.number, edited)))
    sweep.measure = dataclasses.replace(sweep.measure, timeout_s=0.2)

    def hung(self, number, choice):           # edited, then no result for a while
        path.write_text(KERNEL.replace("A = 0.5", "A = 0.25"))
        time.sleep(1.0)
    monkeypatch.setattr(Bench, "trial", hung)
    with pytest.raises(TrialHung):
        sweep.run()
    assert StudyStore(tmp_path / "s").records()[0] == []
    assert hangs == [(0, str(path))]
