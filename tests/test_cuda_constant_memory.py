"""A CUDA C kernel's ``constant_memory`` (Kernel Tuner's ``cmem_args``): the data of each
``__constant__`` symbol of the source, from a function of the config (a space's
``constant_memory: {coeffs: consts.py:make_coeffs}``, ``sweeper.cuda(...,
constant_memory=...)``, which takes the data itself too).  Without a GPU: the space's
and the call's checks, the function's file in the source hash, ``plan`` reading it
unrun, the copy into each loaded module before its launches (CuPy and the driver stood
in for), the trial's failures, and the symbols a study records and a header names.  The
GPU half is at the end, marked ``gpu``."""

from __future__ import annotations

import contextlib
import csv
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy
import pytest
import torch

import sweeper
from sweeper.cli import main
from sweeper.errors import ConstantMemoryFailed
from sweeper.kernels import load_kernel, source_hash_unrun
from sweeper.kernels._cuda_build import Constants, constants_of, write_constants
from sweeper.space import Config, MeasureSpec, Problem, load_space
from sweeper.trial import TrialStatus, classify
from tests.test_cuda_kernel import FakeCompiler

#: dst = src times the 16 coefficients of a ``__constant__`` array, in turn.
SCALED_CU = """\
__constant__ float coeffs[16];

extern "C" __global__ void scaled(float *dst, const float *src, long long n) {
    long long i = (long long)blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) dst[i] = src[i] * coeffs[i % 16];
}
"""
CONSTS_PY = """\
import numpy


def make_coeffs(config):
    return numpy.arange(1, 17, dtype=numpy.float32)


def seventeen(config):
    return numpy.arange(1, 18, dtype=numpy.float32)


def two(config, other):
    return None


def listed(config):
    return [1.0] * 16


def raises(config):
    return {}["coeffs"]


NOT_A_FUNCTION = 3
"""
REF_PY = """\
import torch


def scaled(src):
    c = torch.arange(1, 17, dtype=src.dtype, device=src.device)
    return src * c.repeat(src.numel() // 16 + 1)[:src.numel()]
"""
SPACE = """\
kernel:
  name: cuda
  source: scaled.cu
  entry: scaled
  inputs: {{src: n}}
  outputs: {{dst: n}}
  args: [dst, src, "n:int64"]
  reference: ref.py:scaled
  constant_memory:{constant_memory}
params:
  block: [128, 256]
  footprint: [4KiB]
"""


def space_text(constant_memory: str = "\n    coeffs: consts.py:make_coeffs") -> str:
    return SPACE.format(constant_memory=constant_memory)


@pytest.fixture
def cm_space(tmp_path):
    """A space beside scaled.cu, consts.py and ref.py; call with the space's text."""
    (tmp_path / "scaled.cu").write_text(SCALED_CU)
    (tmp_path / "consts.py").write_text(CONSTS_PY)
    (tmp_path / "ref.py").write_text(REF_PY)

    def write(text: str) -> Path:
        (tmp_path / "space.yaml").write_text(text)
        return tmp_path / "space.yaml"
    return write


# -- the space's option ---------------------------------------------------------------------

def test_a_constant_memory_function_is_read_beside_the_space_and_is_part_of_the_source(
        cm_space):
    """``constant_memory: {coeffs: consts.py:make_coeffs}``: the file resolved beside the
    space, the launch given the symbol and the function (called with the config, its
    array's bytes the data), its file part of the kernel's source and watched."""
    path = cm_space(space_text())
    space = load_space(path)
    options = dict(space.kernel_options)
    assert json.loads(options["constant_memory"]) == {
        "coeffs": f"{path.parent / 'consts.py'}:make_coeffs"}
    kernel = load_kernel(space.kernel, space.kernel_options)
    launch = kernel.plan.launch
    assert list(launch.constant_memory) == ["coeffs"]
    config = Config(problem=Problem("float32", 4096), grid=8, block=128)
    assert launch.constants(config).data == {
        "coeffs": numpy.arange(1, 17, dtype=numpy.float32).tobytes()}
    source = kernel.source()
    assert "// constant_memory coeffs consts.py:make_coeffs\n" in source
    assert "constant_memory ['coeffs']" in source
    assert path.parent / "consts.py" in kernel.source_files()
    # a lookup's launch, from the options alone (nothing imported): the symbols to set
    from sweeper.kernels._cuda_build import CudaLaunch

    looked_up = CudaLaunch.of_options(options, "")
    assert looked_up.tuned_launch(config).constant_memory == ("coeffs",)


def test_an_edit_of_the_constant_memory_file_is_a_new_source_which_plan_reads_unrun(
        cm_space, capsys):
    """An edit of the function's file is a new source hash, read from the options without
    importing the file, as ``plan`` and a lookup hash it (a file that raises as it is
    imported plans all the same); a kernel without the option hashes otherwise."""
    path = cm_space(space_text())
    space = load_space(path)
    options = dict(space.kernel_options)
    before = source_hash_unrun(space.kernel, options)
    assert before == load_kernel(space.kernel, space.kernel_options).source_hash()
    consts = path.parent / "consts.py"
    consts.write_text('raise RuntimeError("imported")\n' + CONSTS_PY)
    assert source_hash_unrun(space.kernel, options) not in (None, before)
    assert main(["plan", str(path)]) == 0
    assert "would measure 2" in capsys.readouterr().out
    plain = load_space(cm_space(space_text().replace(
        "  constant_memory:\n    coeffs: consts.py:make_coeffs\n", "")))
    assert source_hash_unrun(plain.kernel, dict(plain.kernel_options)) != before


@pytest.mark.parametrize(("option", "message"), [
    (" consts.py:make_coeffs", ":9: kernel.constant_memory: 'consts.py:make_coeffs' is not "
     "a valid constant_memory; allowed: a mapping of each __constant__ symbol to "
     "module:function or file.py:function"),
    ("\n    1coeffs: consts.py:make_coeffs", ":10: kernel.constant_memory.1coeffs: '1coeffs' "
     "is not a C name; allowed: the name of a __constant__ variable of the source (coeffs)"),
    ("\n    coeffs: make_coeffs", ":10: kernel.constant_memory.coeffs: 'make_coeffs' is not a "
     "constant_memory; allowed: module:function or file.py:function, relative to the space "
     "file"),
    ("\n    coeffs: [1, 2]", ":10: kernel.constant_memory.coeffs: [1, 2] names no function; "
     "allowed: module:function or file.py:function"),
    ("\n    coeffs: nowhere.py:make_coeffs", ":10: kernel.constant_memory.coeffs: no file "
     "{folder}/nowhere.py for the constant_memory"),
    ("\n    coeffs: consts.py:two", ":10: kernel.constant_memory.coeffs: {folder}/consts.py:two "
     "cannot take the call it gets, constant_memory(config): missing a required argument: "
     "'other'; give it one parameter, the config"),
    ("\n    coeffs: consts.py:absent", ":10: kernel.constant_memory.coeffs: "
     "{folder}/consts.py:absent: AttributeError: "),
    ("\n    coeffs: consts.py:NOT_A_FUNCTION", ":10: kernel.constant_memory.coeffs: "
     "{folder}/consts.py:NOT_A_FUNCTION: TypeError: {folder}/consts.py:NOT_A_FUNCTION is "
     "int, not callable"),
])
def test_a_wrong_constant_memory_is_refused_at_its_line(cm_space, capsys, option, message):
    """A ``constant_memory`` that is no mapping, or an entry whose symbol is no C name or
    whose function is named wrong, is in no file, does not import or cannot take the
    config, is refused at that entry's line by ``run`` (which imports it), exit 2,
    nothing written."""
    path = cm_space(space_text(option))
    studies = path.parent / "studies"
    assert main(["run", str(path), "--studies-dir", str(studies)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}{message.replace('{folder}', str(path.parent))}"), err
    assert "\n" not in err and not studies.exists()


# -- sweeper.cuda(..., constant_memory=...) --------------------------------------------------

def _coeffs(config: Config) -> numpy.ndarray:
    return numpy.arange(1, 17, dtype=numpy.float32)


def _two(config: Config, other: int) -> None:
    return None


@pytest.mark.parametrize(("given", "message"), [
    ([("coeffs", _coeffs)], r"^sweeper.cuda: constant_memory=\[\('coeffs', <function "
     r"_coeffs at .*\)\]; allowed: a dict of the data of each __constant__ symbol"),
    ({"1x": _coeffs}, r"^sweeper.cuda: constant_memory: '1x' is not a C name; allowed: the "
     r"name of a __constant__ variable of the source \(\"coeffs\"\)$"),
    ({"coeffs": [1.0, 2.0]}, r"^sweeper.cuda: constant_memory coeffs: \[1.0, 2.0\] \(list\); "
     r"allowed: a numpy array or torch tensor, the data copied into the __constant__ "
     r"symbol, or a function of the config returning one$"),
    ({"coeffs": _two}, r"^sweeper.cuda: constant_memory coeffs: _two\(config: 'Config', "
     r"other: 'int'\) -> 'None' cannot take the call it gets, _two\(config\): "
     r"missing a required argument: 'other'; give it one parameter, the config$"),
])
def test_a_wrong_constant_memory_is_refused_by_sweeper_cuda(tmp_path, given, message):
    """``sweeper.cuda``'s ``constant_memory`` is a dict of C names to data (a numpy array
    or torch tensor) or a function that can take the config: anything else is refused as
    the call is made, saying what is allowed."""
    (tmp_path / "scaled.cu").write_text(SCALED_CU)
    with pytest.raises(sweeper.SweeperError, match=message):
        sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                     constant_memory=given)


def test_sweeper_cuda_takes_the_data_itself_or_a_function_of_the_config(tmp_path):
    """An array (numpy's or torch's) is the data at every config; a function is asked
    with the config; the symbols are part of the launch's source."""
    (tmp_path / "scaled.cu").write_text(SCALED_CU)
    data = numpy.linspace(0, 1, 16, dtype=numpy.float32)
    launch = sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                          constant_memory={"coeffs": data,
                                           "scale": torch.tensor([2.0], dtype=torch.float64),
                                           "table": lambda config: numpy.int32(config.block)})
    config = Config(problem=Problem("float32", 4096), grid=8, block=128)
    assert launch.constants(config).data == {
        "coeffs": data.tobytes(), "scale": numpy.float64(2.0).tobytes(),
        "table": numpy.int32(128).tobytes()}
    assert "constant_memory ['coeffs', 'scale', 'table']" in launch.kernel_source()


# -- the copy, before a config's launches ----------------------------------------------------

class FakeSymbols:
    """A loaded module's symbols: each found at an address of its own, of ``sizes`` bytes
    (absent where not listed), each write logged with the module it went to."""

    def __init__(self, module: object, log: list[Any], sizes: dict[str, int]) -> None:
        self.module, self.log, self.sizes = module, log, sizes

    def find(self, name: str) -> tuple[int, int] | None:
        return (0x1000 + len(name), self.sizes[name]) if name in self.sizes else None

    def write(self, address: int, data: bytes, stream: int) -> None:
        self.log.append(("write", self.module, address, data, stream))


@pytest.fixture
def faked_launch(tmp_path, monkeypatch):
    """A ``sweeper.cuda`` launch of scaled.cu with CuPy, the driver, the compiler and
    torch's stream stood in for; call with its ``constant_memory`` (and the symbols'
    sizes): the launch, and the log of what it did in order (each module loaded, each
    write and each launch, by module)."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scaled.cu").write_text(SCALED_CU)
    log: list[Any] = []
    modules: list[str] = []

    def load(cubin: bytes, lowered: str) -> tuple[str, Any]:
        module = f"module{len(modules)}"
        modules.append(module)
        log.append(("load", module))
        return module, lambda grid, block, args, shared_mem: log.append(("launch", module))

    monkeypatch.setattr("sweeper.kernels._cuda_build._load", load)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(                       # type: ignore[attr-defined]
        Device=lambda index: contextlib.nullcontext(),
        ExternalStream=lambda ptr: contextlib.nullcontext())
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device: types.SimpleNamespace(cuda_stream=77))

    def make(constant_memory: dict[str, Any], sizes: dict[str, int] | None = None) -> Any:
        launch = sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                              constant_memory=constant_memory)
        launch.compiler = FakeCompiler()
        launch.symbols = lambda module: FakeSymbols(
            module, log, {"coeffs": 64} if sizes is None else sizes)
        return launch, log
    return make


#: Tensors as a launch reads them: on a GPU, a pointer each.
TENSORS = {name: types.SimpleNamespace(is_cuda=True, device=types.SimpleNamespace(index=0),
                                       data_ptr=lambda: 0xD000) for name in ("dst", "src")}


def test_the_data_is_copied_once_a_config_before_its_first_launch(faked_launch):
    """Each config's function is asked once, and its data copied on the launch's stream
    into a module loaded for that data, before the module's first launch; a later launch
    of the config, after another config's, copies nothing.  Two problems of one compile
    (the same defines) with other data each get a module of their own: neither
    overwrites the other's data between their launches."""
    asked: list[int] = []

    def by_n(config: Config) -> numpy.ndarray:
        asked.append(config.problem.n)
        return numpy.full(16, config.problem.n, dtype=numpy.float32)

    launch, log = faked_launch({"coeffs": by_n})
    small = Config(problem=Problem("float32", 4096), grid=8, block=128)
    large = Config(problem=Problem("float32", 8192), grid=16, block=128)
    for config in (small, small, small, large, large, small, large):
        launch(config, **TENSORS)
    assert asked == [1024, 2048]
    data = {n: numpy.full(16, n, dtype=numpy.float32).tobytes() for n in (1024, 2048)}
    assert log == [
        ("load", "module0"), ("write", "module0", 0x1006, data[1024], 77),
        ("launch", "module0"), ("launch", "module0"), ("launch", "module0"),
        ("load", "module1"), ("write", "module1", 0x1006, data[2048], 77),
        ("launch", "module1"), ("launch", "module1"),
        ("launch", "module0"), ("launch", "module1")]
    assert len(launch.compiler.calls) == 1          # one compile: the cache serves the other
    # the data dropped once a module holds it: a digest a config stays
    assert launch.constants(small).data == {} and launch.constants(large).data == {}
    assert launch.constants(small).digest != launch.constants(large).digest


def test_a_kernel_without_constant_memory_loads_one_module_a_compile(faked_launch):
    """No ``constant_memory``: one module for each compile, as before, nothing written."""
    launch, log = faked_launch({})
    for footprint in (4096, 8192, 4096):
        launch(Config(problem=Problem("float32", footprint), grid=8, block=128), **TENSORS)
    assert log == [("load", "module0"), ("launch", "module0"), ("launch", "module0"),
                   ("launch", "module0")]


@pytest.mark.parametrize(("sizes", "reason"), [
    ({}, "constant_memory coeffs: the compiled kernel has no symbol 'coeffs'; allowed: a "
     "__constant__ variable the source declares outside any namespace (__constant__ float "
     "coeffs[16];)"),
    ({"coeffs": 32}, "constant_memory coeffs: the data is 64 B, more than the 32 B the "
     "symbol coeffs holds; allowed: at most 32 B"),
])
def test_a_symbol_the_kernel_lacks_or_too_much_data_fails_the_trial_launching_nothing(
        faked_launch, sizes, reason):
    """A symbol the compiled module does not have, or data larger than the symbol, fails
    the config's trial as crashed with the reason, before anything is copied or launched;
    the config's module is not kept, so a later launch of it fails alike."""
    launch, log = faked_launch({"coeffs": _coeffs}, sizes)
    config = Config(problem=Problem("float32", 4096), grid=8, block=128)
    for _ in range(2):
        with pytest.raises(ConstantMemoryFailed) as failed:
            launch(config, **TENSORS)
        assert str(failed.value) == reason
    assert classify(failed.value) == (TrialStatus.CRASHED, reason)
    assert [entry[0] for entry in log] == ["load", "load"]
    assert launch.loaded == {}


def test_every_symbol_is_looked_up_before_any_is_written():
    """Of two symbols, the second absent: nothing is written, not the first either."""
    log: list[Any] = []
    constants = Constants("digest", {"coeffs": b"\0" * 8, "absent": b"\0" * 4})
    with pytest.raises(ConstantMemoryFailed, match="no symbol 'absent'"):
        write_constants(FakeSymbols("module", log, {"coeffs": 64}), constants, 0)
    assert log == []


def _raises(config: Config) -> Any:
    return {}["coeffs"]


def _listed(config: Config) -> Any:
    return [1.0] * 16


def test_a_function_that_raises_or_gives_no_array_fails_the_trial_saying_so():
    """The user's function raising fails the trial naming it and the line that raised;
    one returning no array (a list: no element type) names what it returned, where it is
    defined and what it must return; both crashed, as a refuse= that fails is."""
    config = Config(problem=Problem("float32", 4096), grid=8, block=128)
    with pytest.raises(ConstantMemoryFailed) as failed:
        constants_of({"coeffs": _raises}, config)
    status, reason = classify(failed.value)
    assert status is TrialStatus.CRASHED
    assert reason.startswith("the kernel's constant_memory coeffs _raises raised KeyError: "
                             "'coeffs' (at test_cuda_constant_memory.py:"), reason
    with pytest.raises(ConstantMemoryFailed) as failed:
        constants_of({"coeffs": _listed}, config)
    assert str(failed.value).startswith("test_cuda_constant_memory.py:")
    assert str(failed.value).endswith(
        ": the kernel's constant_memory coeffs _listed returned [1.0, 1.0, 1.0, 1.0, 1.0, "
        "1.0, ...] (list); it must return a numpy array or torch tensor, the data copied "
        "into the __constant__ symbol")


def test_a_space_s_function_is_called_with_the_config_and_fails_the_trial_at_its_line(
        cm_space):
    """The space's function, imported when first asked, is called with the config; one
    that raises fails the trial at the line of its file that raised."""
    path = cm_space(space_text("\n    coeffs: consts.py:raises"))
    space = load_space(path)
    launch = load_kernel(space.kernel, space.kernel_options).plan.launch
    with pytest.raises(ConstantMemoryFailed) as failed:
        launch.constants(Config(problem=Problem("float32", 4096), grid=8, block=128))
    assert "the kernel's constant_memory coeffs raises raised KeyError: 'coeffs' (at " \
        "consts.py:21: return {}[\"coeffs\"])" in classify(failed.value)[1]


# -- what a study records, and a header says --------------------------------------------------

def test_a_study_records_the_symbols_and_its_header_says_to_set_them(cm_space, tmp_path,
                                                                      capsys):
    """A replayed study of the kernel records the symbols with its launch, the tuned
    launch read back from the record lists them, and the exported header says that they
    must be set before a launch."""
    from sweeper.kernels._cuda_build import CudaLaunch

    path = cm_space(space_text())
    with (tmp_path / "t.csv").open("w", newline="") as file:
        file.write("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n"
                   "# l2_bytes: 62914560\n# kernel: cuda\n")
        writer = csv.writer(file)
        writer.writerow(["block", "cache", "dtype", "footprint", "grid", "status",
                         "median_ms", "samples_ms"])
        for block, ms in ((128, 0.01), (256, 0.008)):
            writer.writerow([block, "cold", "float32", "4KiB", "cdiv(n, block)", "ok", ms,
                             f"{ms} {ms} {ms}"])
    assert main(["run", str(path), "--device", f"replay:{tmp_path / 't.csv'}",
                 "--studies-dir", str(tmp_path / "st"), "--quiet", "--no-report"]) == 0
    study = tmp_path / "st" / "space-replay"
    recorded = json.loads((study / "study.json").read_text())["cuda_launch"]
    assert recorded["constant_memory"] == ["coeffs"]
    launch = CudaLaunch.of_record(recorded)
    assert launch is not None
    tuned = launch.tuned_launch(Config(problem=Problem("float32", 4096), grid=4, block=256))
    assert tuned.constant_memory == ("coeffs",)
    capsys.readouterr()
    assert main(["export", str(study), "--format", "header", "-o",
                 str(tmp_path / "tuned.h")]) == 0
    assert "// Before the first launch, set the __constant__ coeffs (cudaMemcpyToSymbol): " \
        "sweeper copied in the data its constant_memory gave each config.\n" in \
        (tmp_path / "tuned.h").read_text()


# -- on a GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize(("function", "status", "reason"), [
    ("make_coeffs", TrialStatus.OK, None),
    ("seventeen", TrialStatus.CRASHED, "constant_memory coeffs: the data is 68 B, more than "
     "the 64 B the symbol coeffs holds; allowed: at most 64 B"),
])
def test_a_kernel_reads_its_constant_memory_on_the_gpu(cm_space, tmp_path, monkeypatch,
                                                       function, status, reason):
    """A CUDA C kernel reading a ``__constant__`` array gets the data its
    ``constant_memory`` function gives, copied in before its first launch, through its
    timed launches (checked first and after them against the reference); data larger
    than the symbol fails the trial with the reason, launching nothing."""
    from sweeper.devices import open_device
    from sweeper.trial import run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = load_space(cm_space(space_text(f"\n    coeffs: consts.py:{function}")))
    kernel = load_kernel(space.kernel, space.kernel_options)
    problem = Problem("float32", 4096 * 4 + 12)
    for block in (128, 256):
        config = Config(problem=problem, grid=problem.n // block + 1, block=block)
        result = run_trial(kernel, kernel.allocate(problem, "cuda"), config,
                           open_device("cuda"), MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                           torch.Generator(device="cuda").manual_seed(0))
        assert (result.status, result.reason) == (status, reason)


@pytest.mark.gpu
def test_sweeper_cuda_s_constant_memory_reaches_the_kernel_on_the_gpu(tmp_path, monkeypatch):
    """``sweeper.cuda(..., constant_memory=...)`` with the data itself and with a function
    of the config: each config's launch reads its own data (two problems of one compile
    interleaved), and a symbol the kernel lacks fails before anything launches."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scaled.cu").write_text(SCALED_CU)
    launch = sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                          constant_memory={"coeffs": lambda config: numpy.full(
                              16, config.problem.n, dtype=numpy.float32)})
    configs = [Config(problem=Problem("float32", 4 * n), grid=n // 128, block=128)
               for n in (1024, 2048)]
    for config in (*configs, *configs):
        n = config.problem.n
        src = torch.rand(n, device="cuda")
        dst = torch.zeros(n, device="cuda")
        launch(config, dst=dst, src=src)
        torch.testing.assert_close(dst, src * n)
    static = sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                          constant_memory={"coeffs": torch.arange(16.0)})
    src, dst = torch.rand(1024, device="cuda"), torch.zeros(1024, device="cuda")
    static(configs[0], dst=dst, src=src)
    torch.testing.assert_close(dst, src * torch.arange(16.0, device="cuda").repeat(64))
    absent = sweeper.cuda(tmp_path / "scaled.cu", "scaled", ["dst", "src", "n:int64"],
                          constant_memory={"nowhere": numpy.zeros(4, dtype=numpy.float32)})
    with pytest.raises(ConstantMemoryFailed, match="no symbol 'nowhere'"):
        absent(configs[0], dst=dst, src=src)
