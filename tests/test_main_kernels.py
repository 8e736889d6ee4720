"""Kernels defined in ``__main__``, a notebook's cells or a script: a study knows them by
the code they run, the ``@triton.jit`` function their launch calls included, and by
nothing else of the notebook or script.

A cell is run here as IPython runs one: compiled under a name of its own that
``linecache`` holds (so Triton reads the source of a ``@triton.jit`` function defined
there), in the notebook's ``__main__``."""

from __future__ import annotations

import linecache
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import sweeper
from sweeper.errors import StudyError

KERNEL_CELL = """
import triton
import triton.language as tl

A = {a}


@triton.jit
def twice(v):
    return v * {twice}


@triton.jit
def scale_kernel(x, n, a, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, twice(tl.load(x + offsets, mask=offsets < n)) * a,
             mask=offsets < n)
"""
DECLARE_CELL = """
import sweeper


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 256},
                reference=lambda x: x * 2 * A)
def scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps,
                                 **config.meta)
"""
SPACE = {"kernel": "__main__:scale", "sampler": "exhaustive",
         "params": {"block": [32], "BLOCK": [256], "n": [1024]},
         "measure": {"warmup": 1, "repeat": 3}}


class Notebook:
    """A notebook's ``__main__``, whose cells run in the order given."""

    def __init__(self) -> None:
        self.main = types.ModuleType("__main__")
        self.count = 0

    def run(self, text: str) -> None:
        self.count += 1
        name = f"<ipython-input-{self.count}-0123456789ab>"
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        exec(compile(text, name, "exec"), vars(self.main))

    def source_hash(self) -> str:
        return str(self.main.scale().source_hash())


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> Notebook:
    """A fresh notebook kernel on the interpreter: ``TRITON_INTERPRET=1`` set before its
    first cell, as a notebook without a GPU sets it."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    book = Notebook()
    monkeypatch.setitem(sys.modules, "__main__", book.main)
    return book


def test_a_notebook_kernel_is_known_by_the_triton_code_its_launch_calls(notebook):
    """The launch names its ``@triton.jit`` function, a helper and a constant by their
    names in the notebook: an edit of any of them, in a cell run again after the kernel
    was declared, is a new source (the study was resumed with the old timings before);
    the same cells run again, or any other cell, are not."""
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    notebook.run(DECLARE_CELL)
    first = notebook.source_hash()
    notebook.run("import pandas\nshown = [1, 2]\ndef plot(df):\n    return df.plot()\n")
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))         # the same cell run again
    assert notebook.source_hash() == first
    notebook.run(KERNEL_CELL.format(a=0.5, twice=3))         # the helper edited
    assert notebook.source_hash() != first
    notebook.run(KERNEL_CELL.format(a=0.25, twice=2))        # the constant
    assert notebook.source_hash() != first
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2).replace("tl.arange(0, BLOCK)",
                                                            "tl.arange(0, BLOCK) + 0"))
    assert notebook.source_hash() != first
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    assert notebook.source_hash() == first


def test_the_same_cells_in_a_new_notebook_kernel_give_the_same_source(notebook,
                                                                     monkeypatch):
    """A notebook restarted and run again resumes its study: the hash holds no address,
    no cell number, no line."""
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    notebook.run(DECLARE_CELL)
    first = notebook.source_hash()
    again = Notebook()
    again.count = 40
    monkeypatch.setitem(sys.modules, "__main__", again.main)
    again.run("\n\n# the kernel, as before\n" + KERNEL_CELL.format(a=0.5, twice=2))
    again.run(DECLARE_CELL)
    assert again.source_hash() == first


def test_a_study_of_a_notebook_kernel_edited_since_is_refused_not_resumed(notebook,
                                                                         tmp_path):
    """The user's view: a sweep, the kernel's cell edited and run again, the sweep's cell
    run again.  Refused as a changed kernel, saying what to do; it was resumed as though
    nothing had changed, returning the earlier kernel's timings and winner."""
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    notebook.run(DECLARE_CELL)
    options: dict[str, Any] = {"device": "interpret", "studies_dir": tmp_path, "quiet": True,
                               "report": False, "gpu_check": "off"}
    study = sweeper.run(SPACE, **options)
    assert list(study.trials_dataframe().status) == ["ok"]
    notebook.run(KERNEL_CELL.format(a=0.5, twice=3))
    with pytest.raises(StudyError, match="its kernel's source changed since it was measured"
                       r".*rerun with force=True"):
        sweeper.run(SPACE, **options)
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))        # put back: resumed as it was
    assert len(sweeper.run(SPACE, **options).trials_dataframe()) == 1


SCRIPT = KERNEL_CELL.format(a=0.5, twice=2) + DECLARE_CELL + """
study = None          # sweeper.run(...) and the analysis follow here
"""


def _script(path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """``text`` run as ``python path`` runs it: as ``__main__``, its file ``path``."""
    path.write_text(text)
    stat = path.stat()                              # a later save is a new stamp
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10_000_000_000))
    main = types.ModuleType("__main__")
    main.__file__ = str(path)
    monkeypatch.setitem(sys.modules, "__main__", main)
    linecache.checkcache(str(path))
    exec(compile(text, str(path), "exec"), vars(main))
    return main


def test_a_script_kernel_is_known_by_its_code_not_the_rest_of_the_script(tmp_path,
                                                                         monkeypatch):
    """A kernel defined in the script that sweeps it: an edit of the sweep's call or the
    analysis after it is no new source (the study was refused as a changed kernel, and
    past ``force=True`` measured every config again), and the script is not watched
    while the sweep runs (a save stopped it); an edit of the kernel's code is a new
    source."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    script = tmp_path / "sweep.py"
    kernel = _script(script, SCRIPT, monkeypatch).scale()
    first = kernel.source_hash()
    assert kernel.source_files() == ()
    script.write_text(SCRIPT + "print(study)\n")                # saved while it runs
    assert kernel.source_hash() == first
    edited = SCRIPT.replace("study = None", "study = sweeper  # trials=20")
    assert _script(script, edited, monkeypatch).scale().source_hash() == first
    kernel_edited = SCRIPT.replace("v * 2", "v * 3")
    assert _script(script, kernel_edited, monkeypatch).scale().source_hash() != first


CLASS_CELL = """
import torch
from sweeper.kernels import Buffers, Kernel, MetaParam


class Scale(Kernel):
    name = "scale-class"
    meta_params = {"BLOCK": MetaParam(default=256, pow2=True)}

    def allocate(self, problem, device):
        return Buffers({"x": torch.empty(problem.n, device=device)})

    def randomize(self, buffers, generator):
        buffers["x"].uniform_(generator=generator)

    def poison(self, buffers):
        buffers["x"].fill_(float("nan"))

    def check(self, buffers):
        return None

    def launch(self, buffers, config):
        x = buffers["x"]
        scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps,
                                     **config.meta)
"""


def test_a_kernel_class_in_a_notebook_is_known_by_the_triton_code_it_launches(notebook):
    """The subclass form in a notebook: the class's methods and what they launch."""
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    notebook.run(CLASS_CELL)
    first = notebook.main.Scale().source_hash()
    assert notebook.main.Scale().source_files() == ()
    notebook.run(KERNEL_CELL.format(a=0.5, twice=3))
    assert notebook.main.Scale().source_hash() != first
    notebook.run(KERNEL_CELL.format(a=0.5, twice=2))
    assert notebook.main.Scale().source_hash() == first


def test_a_kernel_in_main_is_compiled_by_no_compile_process(write_space):
    """On a GPU a sweep compiles ahead in processes of its own, each importing the kernel
    by its name, and a notebook's or a script's ``__main__`` is not theirs: each died
    loading it (``module __main__ has no attribute 'scale'``), started again three times,
    while up to eight imported torch beside the trials.  A kernel in ``__main__`` compiles
    as its configs first run; asking for compile processes is refused, naming the
    keyword."""
    import dataclasses
    from types import SimpleNamespace

    from sweeper.core._spelling import keywords
    from sweeper.engine._run import _compile_ahead
    from sweeper.errors import SweeperError
    from sweeper.space import load_space
    from sweeper.sweep._compile_ahead import CompileOptions
    from tests.conftest import SMALL_SPACE

    space = load_space(write_space(SMALL_SPACE))
    gpu = SimpleNamespace(name="cuda", compile_target=lambda: "sm_90")
    started = SimpleNamespace(pool_ahead=True, pool=None)
    assert _compile_ahead(None, gpu, 1, started, space).target is not None   # a module's
    in_main = dataclasses.replace(space, kernel="__main__:scale")
    assert _compile_ahead(None, gpu, 1, started, in_main) == CompileOptions()
    with keywords(), pytest.raises(SweeperError, match=(
            r"^compile_workers=2: kernel __main__:scale is defined in __main__ \(a notebook "
            r"or a script\), which compile processes cannot import: leave the option out")):
        _compile_ahead(2, gpu, 1, started, in_main)


BREAKS_CELL = """
import sweeper


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 256}, grid=1,
                reference=lambda x: x * 0.5)
def scale(x, config):
    if config.meta["BLOCK"] > 256:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    x.mul_(0.5)
"""


def test_a_trial_that_breaks_the_cuda_context_stops_a_kernel_in_main_saying_why(
        notebook, tmp_path, monkeypatch, capsys):
    """A trial that leaves the CUDA context unusable hands the rest of a sweep to worker
    processes, which cannot import a notebook's kernel: each died loading it, and the
    call ended in "the worker for GPU 0 did not start", after saying that the sweep went
    on in them.  It stops instead, in one line saying what is kept and what to do."""
    from sweeper.devices._interpret import InterpretDevice
    from sweeper.errors import SweeperError
    from sweeper.store import StudyStore

    monkeypatch.setattr(InterpretDevice, "healthy", lambda self: False)
    notebook.run(BREAKS_CELL)
    space = {"kernel": "__main__:scale", "sampler": "exhaustive",
             "params": {"BLOCK": [256, 1024, 2048], "n": [1024]},
             "measure": {"warmup": 1, "repeat": 3}}
    with pytest.raises(SweeperError) as raised:
        sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                    report=False, gpu_check="off")
    study = tmp_path / "scale-interpret"
    assert str(raised.value) == (
        "trial #1: RuntimeError: CUDA error: an illegal memory access was encountered (it "
        "left the CUDA context unusable; the sweep stopped); recorded as crashed in "
        f"{study / 'trials.jsonl'}, with every trial before it; kernel __main__:scale is "
        "defined in __main__ (a notebook or a script), which worker processes cannot "
        "import, so the sweep cannot go on in them: restart the process (a notebook's "
        "kernel), whose CUDA context is lost, and run the same call again (that config is "
        "not measured again), or put the kernel in a module and name it as module:attr")
    assert "worker" not in capsys.readouterr().err
    assert [t.status.value for t in StudyStore(study).records()[0]] == ["ok", "crashed"]


def test_a_notebook_kernel_made_for_a_gpu_is_refused_saying_how_to_set_the_interpreter(
        tmp_path, monkeypatch):
    """A notebook whose ``@triton.jit`` function was made before the interpreter was
    chosen is refused, saying exactly what to set where ("set it" named nothing)."""
    from sweeper.errors import SweeperError

    monkeypatch.setenv("TRITON_INTERPRET", "0")            # as a fresh notebook has it
    book = Notebook()
    monkeypatch.setitem(sys.modules, "__main__", book.main)
    book.run(KERNEL_CELL.format(a=0.5, twice=2))
    book.run(DECLARE_CELL)
    with pytest.raises(SweeperError, match=r"^kernel __main__:scale: __main__\.twice "
                       r"is a @triton.jit function made for a GPU .*; restart "
                       r"the process \(a notebook's kernel\) and set TRITON_INTERPRET=1 "
                       r"before importing triton: os\.environ\[\"TRITON_INTERPRET\"\] = "
                       r"\"1\" first in a notebook, TRITON_INTERPRET=1 python script\.py for "
                       r"a script$"):
        sweeper.run(SPACE, device="interpret", studies_dir=tmp_path / "studies", quiet=True)
    assert not (tmp_path / "studies").exists()
