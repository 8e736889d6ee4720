"""Shared fixtures.  Tests run on the CPU through the Triton interpreter; tests marked
``gpu`` need a CUDA device and are skipped without one."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    # before triton is imported: its own jitted helpers (tl.cdiv ...) are built at import
    os.environ.setdefault("TRITON_INTERPRET", "1")

    # Triton's language as it is before any test interprets a kernel (the interpreter
    # leaves it patched): a run's GPU compile check compiles in it (sweeper.sweep._gpu_check)
    from sweeper.kernels._precompile import keep_language

    keep_language()

# what runs cache (ceilings, CUDA builds, the costs an estimate assumes) goes to a folder of
# the test session's own, never the user's; a test that needs its own sets it again
# (pytest-xdist's workers inherit the controller's); the process that made it removes it
if "SWEEPER_CACHE" not in os.environ:
    os.environ["SWEEPER_CACHE"] = tempfile.mkdtemp(prefix="sweeper-test-cache-")
    atexit.register(shutil.rmtree, os.environ["SWEEPER_CACHE"], ignore_errors=True)

# imported once the environment above is set
from sweeper.devices import DeviceFacts

# Under pytest-xdist (pyproject.toml's addopts) the workers share the machine's cores: each
# worker's torch takes its share of them for its intra-op threads, not all of them each
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    torch.set_num_threads(max(1, torch.get_num_threads() // _WORKERS))

ROOT = Path(__file__).resolve().parent.parent
#: The recorded H200's facts (``tests/data/replay``: 132 SMs, 60 MiB of L2), for the
#: kernel models.
H200 = DeviceFacts("NVIDIA H200", sms=132, l2_bytes=60 << 20)
#: The space files the repository ships: the examples, then the recording and benchmark
#: spaces that live with the benchmarks.
SPACE_FOLDERS = (ROOT / "spaces", ROOT / "benchmarks" / "spaces")
#: How much CPU time a test under :func:`alarm` may take (what it guards takes at most a
#: few seconds: the deepest hostile YAML, read with Python's allocations traced).
ALARM_SECONDS = 20


def shipped_spaces() -> list[Path]:
    """Every space file in :data:`SPACE_FOLDERS`, sorted within each folder."""
    return [path for folder in SPACE_FOLDERS for path in sorted(folder.glob("*.yaml"))]


def priors_from_studies(studies_dir, space, gpu, exclude=None) -> list[dict[str, str]]:
    """Every config of :func:`sweeper.samplers._priors.prior_sources`, in order."""
    from sweeper.samplers._priors import prior_sources

    return [c for s in prior_sources(studies_dir, space, gpu, exclude) for c in s.configs]


@contextlib.contextmanager
def cpu_alarm(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeoutError` in the code under it once this process has spent
    ``seconds`` of CPU time (its own threads', user and system: ``ITIMER_PROF``), not of
    the wall clock: what it guards against is work without bound, which only this
    process does, while a loaded machine (other processes, the other xdist worker)
    stretches the wall clock alone and must not make a bounded test fail, nor raise in
    the middle of whatever happens to run when the clock ran out."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"ran past {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail a test that works longer than :data:`ALARM_SECONDS` of CPU time
    (:func:`cpu_alarm`: a hostile input read without bound) instead of hanging the
    suite."""
    with cpu_alarm(ALARM_SECONDS):
        yield


@pytest.fixture(autouse=True)
def one_gpu_test_at_a_time(request: pytest.FixtureRequest,
                           tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run the tests marked ``gpu`` one at a time across the session's worker processes
    (an exclusive lock on a file their temporary folders share), the others beside them
    as before: two tests on one GPU time each other's kernels.  On an H100 a sustained
    matmul's samples after a cool-down read 2.9 ms among its own 1.38 ms while the other
    worker's GPU test ran, and its test failed."""
    if "gpu" not in request.keywords or not torch.cuda.is_available():
        yield
        return
    lock = tmp_path_factory.getbasetemp().parent / "gpu-tests.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def write_space(tmp_path: Path):
    """Write a space file from dedented YAML text; returns its path."""

    def write(text: str, name: str = "space.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write


SMALL_SPACE = """
    study: tiny
    kernel: copy
    sampler: exhaustive
    params:
      grid: [sms, "cdiv(n, BLOCK)"]
      block: [32, 128]
      BLOCK: [256, 1024]
      dtype: [float32]
      footprint: [4KiB]
    constraints: ["BLOCK >= 4 * block"]
    measure: {warmup: 1, repeat: 3}
"""


@pytest.fixture
def small_space(write_space) -> Path:
    return write_space(SMALL_SPACE, "tiny.yaml")


def run_sweeper_process(space: Path, device: str, studies_dir: Path, study: str,
                        timeout: float = 600, extra: tuple[str, ...] = ()):
    """``sweeper run`` as a real process (it may re-execute itself); returns the finished
    process and the study's trials that were launched (not ruled out)."""
    import os
    import subprocess
    import sys

    from sweeper.store import StudyStore

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), os.environ.get("PYTHONPATH", "")])}
    env.pop("SWEEPER_RESTARTS", None)
    env.pop("SWEEPER_SINCE", None)
    run = subprocess.run([sys.executable, "-m", "sweeper", "run", str(space), "--device",
                          device, "--studies-dir", str(studies_dir), "--quiet", "--no-report",
                          *extra],
                         cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    trials = StudyStore(studies_dir / study).records()[0] if run.returncode in (0, 3) else []
    return run, [t for t in trials if t.status.value != "invalid"]


def sweep_study(space_path: Path, device, root: Path, **kwargs):
    """Open a study at ``root`` and sweep the space file on ``device`` in this process;
    returns the store and the sweep's summary."""
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from sweeper.store import StudyStore
    from sweeper.sweep import Sweep, open_study

    space = load_space(space_path)
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test")
    return store, Sweep(space, kernel, device, store, **kwargs).run()


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server for the whole session (started on first use; skipped only
    where the server tools are not installed, and failed there instead where
    ``SWEEPER_TEST_POSTGRES=required``, as CI sets)."""
    from tests import pgserver

    why = pgserver.missing()
    if why:
        if os.environ.get("SWEEPER_TEST_POSTGRES") == "required":
            pytest.fail(f"SWEEPER_TEST_POSTGRES=required, but {why}")
        pytest.skip(why)
    with pgserver.server() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (:mod:`tests.browser`): skipped where it is not installed, and
    failed there instead where ``SWEEPER_TEST_BROWSER=required``, as CI sets."""
    from tests import browser as chromium

    why = chromium.missing()
    if why:
        if os.environ.get("SWEEPER_TEST_BROWSER") == "required":
            pytest.fail(f"SWEEPER_TEST_BROWSER=required, but {why}")
        pytest.skip(why)
    return chromium
