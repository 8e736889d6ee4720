"""What a Kernel Tuner user brings to a ``cuda`` kernel beyond a plain launch: dynamic
shared memory per config (``smem_args``), outputs left unchecked (``answer``'s ``None``),
the winner as a launch asks for it (``pick``, ``sweeper.tuned``) and as a C header of
``#define``s (``store_results`` / ``create_device_targets``).  Without a GPU: the space's
checks, the bytes each config asks, the claim against a GPU's limit (a stand-in
function), and replayed studies exported and looked up.  The GPU half is at the end,
marked ``gpu``."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import sweeper
from sweeper.cli import main
from sweeper.errors import TuningWarning
from sweeper.kernels import load_kernel
from sweeper.kernels._cuda_build import (
    OutOfResources,
    claim_shared_memory,
    shared_memory_env,
)
from sweeper.space import Config, MeasureSpec, Problem, load_space
from tests.conftest import ROOT

COPY_CU = ROOT / "examples" / "copy.cu"
#: dst = src through a tile of dynamic shared memory: each thread fills TILE floats of it
#: and copies its element from the last, so every byte the launch gives is written and a
#: block given less than it touches faults.
STAGED_CU = """\
extern "C" __global__ void staged(float *dst, const float *src, long long n) {
    extern __shared__ float tile[];
    long long i = (long long)blockIdx.x * block_size_x + threadIdx.x;
    for (int t = 0; t < TILE; t++) tile[threadIdx.x * TILE + t] = i < n ? src[i] : 0.0f;
    __syncthreads();
    if (i < n) dst[i] = tile[threadIdx.x * TILE + TILE - 1];
}
"""
STAGED = """\
kernel:
  name: cuda
  source: staged.cu
  entry: staged
  inputs: {{src: n}}
  outputs: {{dst: n}}
  args: [dst, src, "n:int64"]
  reference: "torch:clone"
  shared_memory: "{shared}"
params:
  block: [64, 256]
  TILE: [4, 64, 512]
  footprint: [64KiB]
sampler: exhaustive
"""


@pytest.fixture
def staged_space(tmp_path):
    """A space of the staged copy beside its .cu file; call with its shared_memory."""
    (tmp_path / "staged.cu").write_text(STAGED_CU)

    def write(shared: str = "block_size_x * TILE * 4", text: str | None = None) -> Path:
        (tmp_path / "space.yaml").write_text(text or STAGED.format(shared=shared))
        return tmp_path / "space.yaml"
    return write


# -- dynamic shared memory (smem_args) -----------------------------------------------------

def test_shared_memory_is_an_expression_of_each_config(staged_space):
    """``shared_memory`` gives each config's bytes from its parameters, Kernel Tuner's
    ``block_size_x`` and sweeper's ``block`` alike, ``block_size_y`` and ``block_size_z``
    at 1 where not swept, the problem's ``n`` and ``itemsize``."""
    space = load_space(staged_space("block_size_x * TILE * 4 + block_size_y * n // itemsize"))
    kernel = load_kernel(space.kernel, space.kernel_options)
    config = space.resolve({"block": "256", "TILE": "64", "footprint": "64KiB"},
                           {"sms": 132, "l2_bytes": 1 << 20})
    assert shared_memory_env(config)["block_size_z"] == 1
    assert kernel.plan.launch.shared_bytes(config) == 256 * 64 * 4 + 16384 // 4
    plain = load_space(staged_space("block * 0 + 1KiB"))           # a size, as axes take
    assert load_kernel(plain.kernel, plain.kernel_options).plan.launch.shared_bytes(
        config) == 1024


def test_a_kernel_without_shared_memory_launches_blocks_of_none(tmp_path):
    """No ``shared_memory``: each block is launched with 0 bytes, as before."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    launch = sweeper.cuda(tmp_path / "copy.cu", "copy", ["dst", "src", "n"])
    config = Config(problem=Problem("float32", 4096), grid=4, block=128, meta={"VEC": 4})
    assert launch.shared_memory is None and launch.shared_bytes(config) == 0


def test_a_number_in_the_space_is_a_constant_shared_memory_or_grid_in_y(staged_space, capsys):
    """``shared_memory: 4096`` and ``grid_y: 2``, YAML numbers, are the expressions'
    constants, as ``sweeper.cuda(..., shared_memory=4096)`` takes one; a real number
    is refused as its text is, and another type says a number or an expression."""
    path = staged_space(text=STAGED.format(shared="").replace(
        '  shared_memory: ""\n', "  shared_memory: 4096\n  grid_y: 2\n"))
    space = load_space(path)
    config = space.resolve({"block": "64", "TILE": "4", "footprint": "64KiB"},
                           {"sms": 132, "l2_bytes": 1 << 20})
    assert config.grid_y == 2
    assert load_kernel(space.kernel, space.kernel_options).plan.launch.shared_bytes(
        config) == 4096
    for value, said in (("4.5", "kernel.shared_memory: constant 4.5 is not allowed in "
                         "'4.5'; only integers are; allowed: bytes as an expression"),
                        ("[4096]", "kernel.shared_memory: [4096] is not a valid "
                         "shared_memory; allowed: a number, or an expression of 1 to 200 "
                         "characters (the dynamic shared memory")):
        path.write_text(STAGED.format(shared="").replace(
            '  shared_memory: ""\n', f"  shared_memory: {value}\n"))
        assert main(["plan", str(path), "--device", "interpret"]) == 2
        assert capsys.readouterr().err.startswith(f"{path}:9: {said}")


@pytest.mark.parametrize(("shared", "said"), [
    ("block_size_x * TILES * 4", "unknown name 'TILES' in 'block_size_x * TILES * 4'; "
     "known: n, itemsize, block, block_size_x, block_size_y, block_size_z, TILE; did you "
     "mean 'TILE'?"),
    ("sms * 1024", "unknown name 'sms' in 'sms * 1024'"),
    ("block_size_x *", "cannot parse expression 'block_size_x *'"),
    ("TILE > 4", "'TILE > 4' is a comparison (true or false), not a number"),
    ("64 - 128", "'64 - 128' gives -64 bytes at every config; allowed: a count of bytes, 0 "
     "or more, or an expression of the config"),
])
def test_a_shared_memory_reading_no_known_name_is_refused_at_its_line(staged_space, capsys,
                                                                      shared, said):
    """An expression that does not parse, reads a name the config has not (a misspelt
    axis, a device fact), or gives no bytes at any config (a negative constant) is
    refused where it is written, before anything runs."""
    path = staged_space(shared)
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:9: kernel.shared_memory: {said}"), err
    assert err.count("\n") == 1


def test_a_sweeper_cuda_kernel_s_shared_memory_is_checked_as_it_is_declared(tmp_path):
    """``sweeper.cuda(..., shared_memory=...)``: its names against what
    ``sweeper.kernel`` declares, its text as it is given."""
    (tmp_path / "staged.cu").write_text(STAGED_CU)
    launch = sweeper.cuda(tmp_path / "staged.cu", "staged", ["dst", "src", "n:int64"],
                          shared_memory="block_size_x * TILE * 4")
    declared = sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                              meta={"TILE": 4}, grid="cdiv(n, block)",
                              reference=lambda src: src.clone())
    config = Config(problem=Problem("float32", 4096), grid=4, block=128, meta={"TILE": 8})
    assert declared.plan.launch.shared_bytes(config) == 128 * 8 * 4
    with pytest.raises(sweeper.SweeperError, match=r"^kernel staged: shared_memory: unknown "
                       r"name 'TILE' in 'block_size_x \* TILE \* 4'; known: n, itemsize, "):
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"TILES": 4},
                       grid="cdiv(n, block)", reference=lambda src: src.clone())
    with pytest.raises(sweeper.SweeperError, match=r"^sweeper.cuda: shared_memory: cannot "
                       r"parse expression 'TILE \*'"):
        sweeper.cuda(tmp_path / "staged.cu", "staged", ["dst", "src", "n"],
                     shared_memory="TILE *")
    with pytest.raises(sweeper.SweeperError, match=r"^sweeper.cuda: shared_memory: '-4' "
                       r"gives -4 bytes at every config"):
        sweeper.cuda(tmp_path / "staged.cu", "staged", ["dst", "src", "n"], shared_memory=-4)
    with pytest.raises(sweeper.SweeperError, match=r"^sweeper.cuda: shared_memory=4.5; "
                       r"allowed: bytes as an expression"):
        sweeper.cuda(tmp_path / "staged.cu", "staged", ["dst", "src", "n"],
                     shared_memory=4.5)   # type: ignore[arg-type]


def test_a_shared_memory_giving_no_bytes_at_a_config_fails_that_config(staged_space):
    """A negative count, or a division by zero at some config, is no launch: that
    config's trial fails with the reason (raised before anything is compiled)."""
    space = load_space(staged_space("1024 // (TILE - 4) - 64"))
    launch = load_kernel(space.kernel, space.kernel_options).plan.launch
    problem = Problem("float32", 65536)
    with pytest.raises(ValueError, match=r"^shared_memory: division by zero in "
                       r"'1024 // \(TILE - 4\) - 64' with TILE=4$"):
        launch.shared_bytes(Config(problem=problem, grid=1, block=64, meta={"TILE": 4}))
    with pytest.raises(ValueError, match=r"gives -62 bytes at this config; allowed: a count "
                       r"of bytes, 0 or more$"):
        launch.shared_bytes(Config(problem=problem, grid=1, block=64, meta={"TILE": 516}))


class LoadedFunction:
    """A loaded CUDA function as the launch sees it: its static shared memory and its
    settable maximum of dynamic shared memory (48 KiB less its static, unasked)."""

    def __init__(self, static: int = 0) -> None:
        self.shared_size_bytes = static
        self.max_dynamic_shared_size_bytes = 48 * 1024 - static


def test_shared_memory_past_48_kib_is_claimed_and_past_the_gpu_s_limit_refused():
    """A block's dynamic shared memory up to the 48 KiB it has unasked launches as it is;
    past that the function's maximum is raised to it (as ``cudaFuncSetAttribute`` asks);
    with the kernel's static memory past the GPU's limit for a block, the launch is refused
    before it is made, as an out-of-resources trial saying how much and what is allowed."""
    from sweeper.trial import TrialStatus, classify

    H100_LIMIT = 232448                             # MaxSharedMemoryPerBlockOptin
    function = LoadedFunction()
    claim_shared_memory(function, 32 * 1024, H100_LIMIT, "block_size_x * TILE * 4")
    assert function.max_dynamic_shared_size_bytes == 48 * 1024
    claim_shared_memory(function, 64 * 1024, H100_LIMIT, "block_size_x * TILE * 4")
    assert function.max_dynamic_shared_size_bytes == 64 * 1024
    with pytest.raises(OutOfResources) as refused:
        claim_shared_memory(LoadedFunction(static=1024), H100_LIMIT, H100_LIMIT,
                            "block_size_x * TILE * 4")
    assert str(refused.value) == (
        "shared_memory 'block_size_x * TILE * 4' asks each block for 232448 B (227KiB) of "
        "dynamic shared memory beside the kernel's 1024 B static, more than the 232448 B "
        "(227KiB) a block of this GPU may have (MaxSharedMemoryPerBlockOptin); allowed: "
        "configs whose shared_memory is at most 231424 B")
    status, reason = classify(refused.value)
    assert status is TrialStatus.OUT_OF_RESOURCES
    assert reason.startswith("OutOfResources: shared_memory 'block_size_x * TILE * 4' asks")


def test_a_loaded_function_s_shared_memory_is_read_and_raised_through_the_driver(
        monkeypatch):
    """The function a CuPy module gives has no shared memory properties (only a
    ``RawKernel`` has): they are read and set with ``cuFuncGetAttribute`` and
    ``cuFuncSetAttribute`` on its pointer, the static size (1) and the dynamic maximum (8)."""
    import sys
    import types

    from sweeper.kernels._cuda_build import DriverAttributes

    attributes = {(0xBEEF, 1): 1024, (0xBEEF, 8): 48 * 1024 - 1024}
    calls: list[tuple[str, int, int, int]] = []

    def get(attribute: int, ptr: int) -> int:
        return attributes[ptr, attribute]

    def set_(ptr: int, attribute: int, value: int) -> None:
        calls.append(("set", ptr, attribute, value))
        attributes[ptr, attribute] = value

    driver = types.SimpleNamespace(funcGetAttribute=get, funcSetAttribute=set_)
    cuda = types.ModuleType("cupy.cuda")
    cuda.driver = driver                             # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda                                 # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)

    function = types.SimpleNamespace(ptr=0xBEEF)     # as cupy.cuda.function.Function
    claim_shared_memory(DriverAttributes(function), 64 * 1024, 232448, "TILE * 4")
    assert calls == [("set", 0xBEEF, 8, 64 * 1024)]
    with pytest.raises(OutOfResources, match="beside the kernel's 1024 B static"):
        claim_shared_memory(DriverAttributes(function), 232448, 232448, "TILE * 4")


def test_shared_memory_is_part_of_the_kernel_s_source(staged_space):
    """Another ``shared_memory`` is another kernel to a study (its source hash), as
    another NVRTC option is; a kernel without one hashes as it did before."""
    hashes = set()
    for shared in ("block_size_x * TILE * 4", "block_size_x * TILE * 8"):
        space = load_space(staged_space(shared))
        hashes.add(load_kernel(space.kernel, space.kernel_options).source_hash())
    assert len(hashes) == 2
    space = load_space(staged_space(text=STAGED.format(shared="").replace(
        '  shared_memory: ""\n', "")))
    assert "shared_memory" not in load_kernel(space.kernel, space.kernel_options).source()


@pytest.mark.parametrize("shared", ['"block * 4"', "4096"])
def test_plan_hashes_a_sweeper_cuda_kernel_s_shared_memory_as_run_does(
        tmp_path, monkeypatch, request, shared):
    """A module's ``sweeper.cuda(..., shared_memory=...)`` given as a literal (an
    expression or a number) is read by ``plan``, never imported, into the source hash a
    run records, as its NVRTC options are."""
    import sys

    from sweeper.kernels import source_hash_unrun

    module = f"sharedplan{len(shared)}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    (tmp_path / f"{module}.py").write_text(
        "import sweeper\n\ncopy = sweeper.kernel(\n"
        f'    sweeper.cuda("copy.cu", "copy", ["dst", "src", "n"], shared_memory={shared}),\n'
        '    inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 1},\n'
        '    grid="cdiv(n, block)", reference=lambda src: src.clone())\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    unrun = source_hash_unrun(f"{module}:copy")
    assert module not in sys.modules
    assert unrun is not None and unrun == load_kernel(f"{module}:copy").source_hash()


# -- outputs left unchecked (answer's None) ------------------------------------------------

#: dst = src, and a scratch buffer the kernel writes that no reference computes.
SCRATCH_CU = """\
extern "C" __global__ void copy_scratch(float *dst, float *scratch, const float *src,
                                        long long n) {
    long long i = (long long)blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        dst[i] = src[i];
        scratch[i] = 2.0f * src[i] + (float)blockIdx.x;
    }
}
"""
SCRATCH = """\
kernel:
  name: cuda
  source: scratch.cu
  entry: copy_scratch
  inputs: {src: n}
  outputs: {dst: n, scratch: n}
  args: [dst, scratch, src, "n:int64"]
  reference: "torch:clone"
  check: [dst]
params:
  block: [128, 256]
  footprint: [64KiB]
sampler: exhaustive
"""


def _doubled(check: list[str] | None, reference: Any = None) -> Any:
    """A short kernel writing ``out = 2 * x`` and a ``scratch`` no reference computes,
    compared as ``check`` says."""
    def double(x, out, scratch, config):
        out.copy_(2 * x)
        scratch.fill_(7.0)

    return sweeper.kernel(double, inputs={"x": "n"}, outputs={"out": "n", "scratch": "n"},
                          meta={"BLOCK": 256}, grid="cdiv(n, BLOCK)",
                          reference=reference or (lambda x: 2 * x), check=check)


def _checked(kernel_class: Any, wrong: bool = False) -> str | None:
    """The check of one launch of ``kernel_class`` (``out`` made wrong after it)."""
    kernel = kernel_class()
    problem = Problem("float32", 4096, (("n", 1024),))
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, Config(problem=problem, grid=4, block=128, meta={"BLOCK": 256}))
    if wrong:
        buffers["out"][3] += 1
    return kernel.check(buffers)


def test_an_output_left_out_of_check_is_written_and_never_compared():
    """``check=["out"]``: the reference returns ``out`` alone, or every output in their
    order, and ``scratch`` (poisoned, then written) is never compared; ``out`` still is.
    Without ``check`` every output is, so a reference of one of two outputs says so."""
    assert _checked(_doubled(["out"])) is None
    assert _checked(_doubled(["out"], lambda x: (2 * x, torch.zeros_like(x)))) is None
    assert _checked(_doubled(["out"], lambda x: {"out": 2 * x})) is None
    assert _checked(_doubled(["out"]), wrong=True).startswith(
        "output out: 1 of 1024 elements differ")
    assert _checked(_doubled(None)) == (
        "the reference returned 1 value(s) for 2 output(s) (out, scratch)")
    assert _checked(_doubled(["out"], lambda x: (x, x, x))) == (
        "the reference returned 3 value(s) for 1 output(s) (out) checked of 2 (out, scratch)")


@pytest.mark.parametrize(("check", "said"), [
    (["outt"], r"check\[0\]: 'outt' is no output; allowed: a list of the outputs compared "
     r"with the reference's \(out, scratch\); did you mean 'out'\?"),
    (["out", "out"], r"check\[1\]: 'out' is named twice"),
    ([], r"check: \[\] is no list of outputs"),
    ("out", r"check: 'out' is no list of outputs"),
])
def test_a_check_naming_no_output_is_refused_as_the_kernel_is_declared(check, said):
    with pytest.raises(sweeper.SweeperError, match=f"^kernel double: {said}"):
        _doubled(check)


def test_a_cuda_kernel_s_check_option_is_read_and_checked_at_its_line(tmp_path, capsys):
    """A space's ``check: [dst]`` compares ``dst`` alone; a name no output has is refused
    at its item, with the outputs it may name."""
    (tmp_path / "scratch.cu").write_text(SCRATCH_CU)
    path = tmp_path / "space.yaml"
    path.write_text(SCRATCH)
    space = load_space(path)
    assert load_kernel(space.kernel, space.kernel_options).plan.checked == ("dst",)
    path.write_text(SCRATCH.replace("check: [dst]", "check: [dst, scrach]"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{path}:9: kernel.check[1]: 'scrach' is no output; allowed: a list of the outputs "
        "compared with the reference's (dst, scratch); did you mean 'scratch'?\n")


@pytest.mark.parametrize(("check", "resumed"), [
    ("[dst, scratch]", True),       # every output, in their order: what none compares
    ("[dst]", False),               # one output fewer compared
    ("[scratch, dst]", False),      # the reference's values read in another order
])
def test_a_check_of_every_output_resumes_a_study_run_without_one(tmp_path, capsys, check,
                                                                 resumed):
    """``check`` naming every output, in their order, compares what no ``check`` does: a
    study run without it resumes with it (and back) as it is, measuring nothing new;
    one that compares other outputs, or reads the reference's in another order, is other
    settings, which a resume refuses without ``--force``."""
    from sweeper.study import enumerate_choices

    (tmp_path / "scratch.cu").write_text(SCRATCH_CU)
    path = tmp_path / "space.yaml"
    unchecked = SCRATCH.replace("  check: [dst]\n", "")
    path.write_text(unchecked)
    valid, _ = enumerate_choices(load_space(path), {"sms": 132, "l2_bytes": 62914560})
    names = list(valid[0])
    with (tmp_path / "t.csv").open("w", newline="") as file:
        file.write("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n"
                   "# l2_bytes: 62914560\n# kernel: cuda\n")
        writer = csv.writer(file)
        writer.writerow([*names, "status", "median_ms", "samples_ms"])
        writer.writerows([*(c[n] for n in names), "ok", 0.01, "0.01 0.01 0.01"] for c in valid)
    run = ["run", str(path), "--device", f"replay:{tmp_path / 't.csv'}", "--studies-dir",
           str(tmp_path / "st"), "--quiet", "--no-report"]
    assert main(run) == 0
    path.write_text(unchecked.replace("  reference:", f"  check: {check}\n  reference:"))
    capsys.readouterr()
    if not resumed:
        assert main(run) == 2
        err = capsys.readouterr().err
        assert "cannot resume, it was measured with other settings (the space's line 8: " \
            f"'(none)' -> 'check: {check}')" in err, err
        return
    assert main(run) == 0
    assert "done: 0 measured" in capsys.readouterr().out
    path.write_text(unchecked)
    assert main(run) == 0


# -- the winner as a launch asks for it (pick) ---------------------------------------------

#: The 2-D matmul's space (tests/test_cuda_launch_2d.py) with a shared memory of its own and
#: an NVRTC option, as a Kernel Tuner user's tune_kernel script becomes one.
MATMUL_EXTRA = ('  shared_memory: "block_size_x * block_size_y * tile_size_y * itemsize + K"\n'
                "  nvrtc_options: [-use_fast_math]\n")


@pytest.fixture
def matmul_study(tmp_path):
    """A replayed study of the 2-D matmul, exported to ``tuning.json``: its path."""
    from tests.test_cuda_launch_2d import MATMUL_CU, SPACE, _replayed

    (tmp_path / "matmul.cu").write_text(MATMUL_CU)
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.format(extra="").replace("  tolerance:", MATMUL_EXTRA +
                                                    "  tolerance:"))
    assert main(_replayed(tmp_path, space)) == 0
    return tmp_path / "st" / "space-replay"


def test_a_tuned_cuda_config_gives_the_launch_cupy_takes(matmul_study, tmp_path):
    """``sweeper.tuned(...).cuda_launch()``: the name to compile, NVRTC's options with
    the winner's defines (``block_size_x`` its block, ``block_size_y``, ``block_size_z``
    at 1, each meta-parameter, ``DTYPE``) and the kernel's own, the grid and block in x,
    y and z and the shared memory, each computed for the problem asked, as sweeper
    compiled and launched it; a candidate's too."""
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(matmul_study), "-o", str(tuning)]) == 0
    kernel = f"cuda:{tmp_path / 'matmul.cu'}:matmul"
    cfg = sweeper.tuned(kernel, dtype="float32", dims={"M": 200, "N": 120, "K": 64},
                        gpu="NVIDIA H200", path=tuning)
    launch = cfg.cuda_launch()
    assert launch.name == "matmul" and launch.source == tmp_path / "matmul.cu"
    assert launch.defines == {"DTYPE": "float", "block_size_x": "16", "block_size_y": "16",
                              "block_size_z": "1", "tile_size_y": "1"}
    assert launch.options == (
        "-DDTYPE=float", "-Dblock_size_x=16", "-Dblock_size_y=16", "-Dblock_size_z=1",
        "-Dtile_size_y=1", "-use_fast_math", f"-I{tmp_path}", "-std=c++17")
    assert (launch.grid, launch.block) == ((8, 13, 1), (16, 16, 1))
    assert launch.shared_mem == 16 * 16 * 1 * 4 + 64
    with pytest.warns(TuningWarning):
        far = sweeper.tuned(kernel, dtype="float32", dims={"M": 4000, "N": 1200, "K": 640},
                            gpu="NVIDIA H200", path=tuning)
    at = far.cuda_launch()
    assert (at.grid, at.shared_mem) == ((75, 250, 1), 16 * 16 * 4 + 640)
    other = far.candidates[1]
    assert far.cuda_launch(other).block == (other.block, other.meta["block_size_y"], 1)
    with pytest.raises(sweeper.SweeperError, match="is none of this lookup's candidates"):
        far.cuda_launch(cfg.candidates[0].__class__(**{**vars(cfg.candidates[0]),
                                                        "block": 999}))


def test_a_sweeper_cuda_kernel_s_launch_is_given_by_the_launch_it_is_declared_with(
        matmul_study, tmp_path):
    """A ``sweeper.cuda`` kernel's entry keeps no launch of its own: ``launch=`` gives
    it (its template, options and shared memory), the ``sweeper.cuda(...)`` or the kernel
    ``sweeper.kernel`` declared with it; an entry of no CUDA C kernel, or another object
    (a Python launch's kernel), is refused, saying what to give."""
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(matmul_study), "-o", str(tuning)]) == 0
    cfg = sweeper.tuned(f"cuda:{tmp_path / 'matmul.cu'}:matmul", dtype="float32",
                        dims={"M": 200, "N": 120, "K": 64}, gpu="NVIDIA H200", path=tuning)
    mine = sweeper.cuda(tmp_path / "matmul.cu", "matmul", ["C", "A", "B", "M", "N", "K"],
                        nvrtc_options=["--fmad=false"], shared_memory="1KiB")
    launch = cfg.cuda_launch(launch=mine)
    assert "--fmad=false" in launch.options and "-use_fast_math" not in launch.options
    assert launch.shared_mem == 1024
    declared = sweeper.kernel(mine, inputs={"A": "M, K", "B": "K, N"}, outputs={"C": "M, N"},
                              dims={"M": 200, "N": 120, "K": 64},
                              meta={"block_size_y": 1, "tile_size_y": 1},
                              grid="cdiv(N, block)",
                              grid_y="cdiv(M, block_size_y * tile_size_y)",
                              footprint_bytes="M * K * itemsize", reference=torch.matmul)
    assert cfg.cuda_launch(launch=declared) == launch
    assert cfg.cuda_launch(launch=declared()) == launch          # an instance too
    with pytest.raises(sweeper.SweeperError, match=r"launch='matmul\.cu' is none; allowed: "
                       r"for a sweeper\.cuda kernel, launch= the kernel sweeper\.kernel\(\.\.\.\) "
                       r"declared or the sweeper\.cuda\(\.\.\.\) it is declared with"):
        cfg.cuda_launch(launch="matmul.cu")       # type: ignore[arg-type]

    def python(C, A, B, config):
        C.copy_(A @ B)

    triton_like = sweeper.kernel(python, inputs={"A": "M, K", "B": "K, N"},
                                 outputs={"C": "M, N"}, dims={"M": 200, "N": 120, "K": 64},
                                 meta={"BLOCK": 16}, grid="cdiv(N, BLOCK)",
                                 footprint_bytes="M * K * itemsize", reference=torch.matmul)
    with pytest.raises(sweeper.SweeperError, match=r"cuda_launch\(\) is the launch of a CUDA "
                       r"C kernel, .*; launch=<class .*> is none; allowed:"):
        cfg.cuda_launch(launch=triton_like)


def test_a_triton_kernel_s_tuned_config_has_no_cuda_launch(tmp_path):
    """A Triton kernel's entry is launched with its grid, warps and meta: asked for a
    CUDA C launch, it says so."""
    from tests.test_export_triton import study

    tuning = tmp_path / "tuning.json"
    assert main(["export", str(study(tmp_path / "copy-fp32").root), "-o", str(tuning)]) == 0
    cfg = sweeper.tuned("copy", dtype="float32", footprint="1MiB", gpu="NVIDIA H200",
                        path=tuning)
    with pytest.raises(sweeper.SweeperError, match=r"^copy: cuda_launch\(\) is the launch "
                       r"of a CUDA C kernel, .*a Triton kernel launches with grid, "
                       r"num_warps and meta"):
        cfg.cuda_launch()


# -- a C header of the winners (store_results, create_device_targets) ---------------------

def _preprocessed(header: Path, *defines: str) -> str:
    """What a C preprocessor makes of a file that includes ``header`` and reads some of
    its names, compiled with ``defines``."""
    import subprocess

    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("no C preprocessor (cpp)")
    use = header.parent / "use.c"
    use.write_text(f'#include "{header.name}"\n' + "bx=block_size_x by=block_size_y "
                   "tile=tile_size_y gy=MATMUL_GRID_Y smem=MATMUL_SHARED_MEMORY dtype=DTYPE\n")
    out = subprocess.run([cpp, "-P", *(f"-D{d}" for d in defines), str(use)],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def _replay_on(tmp_path: Path, gpu: str, study: str, space: Path) -> list[str]:
    """The run of ``space`` on a replay of every config (:func:`_replayed`'s) as measured
    on ``gpu``, into study ``study``."""
    from tests.test_cuda_launch_2d import _replayed

    run = _replayed(tmp_path, space)
    table = tmp_path / "t.csv"
    table.write_text(table.read_text().replace("# gpu: NVIDIA H200", f"# gpu: {gpu}"))
    return [*run, "--study", study]


def test_a_header_defines_each_gpu_s_and_problem_s_winner_as_kernel_tuner_guards_them(
        tmp_path, capsys):
    """``--format header``: per GPU (``-DTARGET_NVIDIA_H200``) and tuned problem
    (``-DPROBLEM_float32_M400_N120_K64``) the winner's defines, launch and shared memory;
    a GPU alone gives its default, neither every GPU's; a name given already is kept.
    Another GPU's study adds its section; another study of a GPU replaces the winners of
    the problems it measured and keeps the others'."""
    from tests.test_cuda_launch_2d import MATMUL_CU, SPACE

    (tmp_path / "matmul.cu").write_text(MATMUL_CU)
    space = tmp_path / "space.yaml"
    space.write_text(SPACE.format(extra="").replace("  tolerance:", MATMUL_EXTRA +
                                                    "  tolerance:").replace(
        "params:\n", "params:\n  M: [200, 400]\n"))
    header = tmp_path / "tuned.h"
    assert main(_replay_on(tmp_path, "NVIDIA H200", "h200", space)) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "st" / "h200"), "--format", "header", "-o",
                 str(header)]) == 0
    assert capsys.readouterr().out == (
        f"wrote 2 winners of NVIDIA H200 to {header} (#include it; compile with "
        "-DTARGET_NVIDIA_H200, and -DPROBLEM_... for a problem's winner)\n")
    text = header.read_text()
    assert text.startswith("// sweeper header export v1\n// The tuned configs of "
                           f"cuda:{tmp_path / 'matmul.cu'}:matmul, written by")
    assert "//   TARGET_NVIDIA_H200: NVIDIA H200 (study h200)\n" in text
    assert "#if defined(TARGET_NVIDIA_H200) && defined(PROBLEM_float32_M200_N120_K64)\n" in text
    # the replayed winner: the most threads in y, one row a thread; its grid at each M
    assert _preprocessed(header, "TARGET_NVIDIA_H200", "PROBLEM_float32_M400_N120_K64") == (
        "bx=16 by=16 tile=1 gy=25 smem=1088 dtype=float")
    assert _preprocessed(header, "TARGET_NVIDIA_H200", "PROBLEM_float32_M200_N120_K64") == (
        "bx=16 by=16 tile=1 gy=13 smem=1088 dtype=float")
    assert _preprocessed(header, "TARGET_NVIDIA_H200") == (
        "bx=16 by=16 tile=1 gy=MATMUL_GRID_Y smem=MATMUL_SHARED_MEMORY dtype=DTYPE")
    assert _preprocessed(header) == _preprocessed(header, "TARGET_NVIDIA_H200")
    assert _preprocessed(header, "TARGET_NVIDIA_H200", "block_size_x=99").startswith("bx=99 ")
    # another GPU: a section of its own
    assert main(_replay_on(tmp_path, "NVIDIA H100 80GB HBM3", "h100", space)) == 0
    assert main(["export", str(tmp_path / "st" / "h100"), "--format", "header", "-o",
                 str(header)]) == 0
    assert "//   TARGET_NVIDIA_H100_80GB_HBM3: NVIDIA H100 80GB HBM3 (study h100)\n" in \
        header.read_text()
    assert _preprocessed(header, "TARGET_NVIDIA_H100_80GB_HBM3",
                         "PROBLEM_float32_M400_N120_K64").startswith("bx=16 by=16 ")
    assert _preprocessed(header, "TARGET_NVIDIA_H200",
                         "PROBLEM_float32_M200_N120_K64").endswith("gy=13 smem=1088 dtype=float")
    # the same GPU again, M=200 alone: its winner replaced, M=400's kept
    space.write_text(space.read_text().replace("  M: [200, 400]\n", "  M: [200]\n"))
    assert main(_replay_on(tmp_path, "NVIDIA H200", "h200-again", space)) == 0
    assert main(["export", str(tmp_path / "st" / "h200-again"), "--format", "header", "-o",
                 str(header)]) == 0
    text = header.read_text()
    assert "//   TARGET_NVIDIA_H200: NVIDIA H200 (study h200, h200-again)\n" in text
    assert "PROBLEM_float32_M200_N120_K64: trial" not in text
    assert "M=200 N=120 K=64: trial #" in text and "of study h200-again" in text
    assert "M=400 N=120 K=64: trial #" in text


def test_a_header_of_a_template_s_instance_defines_no_template_parameter(tmp_path, capsys,
                                                                         monkeypatch):
    """A ``sweeper.cuda`` kernel instantiating a template (its launch as the study's run
    recorded it, nothing imported to export): its template's parameters are no defines,
    which would break the template, and the instance names them."""
    (tmp_path / "tcopy.cu").write_text(
        "template <int VEC> __global__ void tcopy(float *dst, const float *src, int n) {\n"
        "    int i = (blockIdx.x * block_size_x + threadIdx.x) * VEC;\n"
        "    for (int v = 0; v < VEC; v++) if (i + v < n) dst[i + v] = src[i + v];\n}\n")
    (tmp_path / "usertemplate.py").write_text(
        "import sweeper\n\ncopy = sweeper.kernel(\n"
        '    sweeper.cuda("tcopy.cu", "tcopy", ["dst", "src", "n"], template="tcopy<{VEC}>",\n'
        '                 shared_memory="block * VEC * 4"),\n'
        '    inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},\n'
        '    grid="cdiv(n, block * VEC)", reference=lambda src: src.clone())\n')
    (tmp_path / "s.yaml").write_text("kernel: usertemplate:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  block: [128]\n  footprint: [4KiB]\n")
    rows = [f'{vec},128,cold,float32,4KiB,"cdiv(n, block * VEC)",ok,{ms},{ms} {ms} {ms}'
            for vec, ms in ((1, 0.01), (4, 0.008))]
    (tmp_path / "t.csv").write_text(
        "# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 62914560\n"
        "# kernel: usertemplate:copy\nVEC,block,cache,dtype,footprint,grid,status,median_ms,"
        "samples_ms\n" + "\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", "s.yaml", "--device", "replay:t.csv", "--studies-dir", "st",
                 "--quiet", "--no-report"]) == 0
    meta = json.loads((tmp_path / "st" / "s-replay" / "study.json").read_text())
    assert meta["cuda_launch"] == {"source": str(tmp_path / "tcopy.cu"), "entry": "tcopy",
                                   "template": "tcopy<{VEC}>", "nvrtc_options": [],
                                   "shared_memory": "block * VEC * 4"}
    assert main(["export", "st/s-replay", "--format", "header", "-o", "tuned.h"]) == 0
    text = (tmp_path / "tuned.h").read_text()
    assert "#define TCOPY_INSTANCE tcopy<4>\n" in text
    assert "#define TCOPY_SHARED_MEMORY 2048\n" in text
    assert "#define VEC" not in text and "#define block_size_x 128\n" in text


def test_a_header_of_a_triton_kernel_or_of_another_file_is_refused(tmp_path, capsys):
    """A Triton kernel's configs are no defines: refused in one line naming the formats
    that serve it, nothing written; a file the export did not write is not overwritten,
    nor one holding another kernel's header."""
    from tests.test_export_triton import study

    store = study(tmp_path / "copy-fp32")
    assert main(["export", str(store.root), "--format", "header"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: kernel copy is not compiled CUDA C, so no #define compiles its configs "
        "into a header; allowed: --format triton (a module of triton.Configs for "
        "@triton.autotune), tuning (sweeper.tuned), csv, parquet or optuna\n")
    assert not (store.root / "tuned.h").exists()
    mine = tmp_path / "mine.h"
    mine.write_text("#define X 1\n")
    study(tmp_path / "cu", kernel="cuda", cuda_launch={
        "source": str(COPY_CU), "entry": "copy", "template": None, "nvrtc_options": [],
        "shared_memory": None})
    assert main(["export", str(tmp_path / "cu"), "--format", "header", "-o", str(mine)]) == 2
    assert "mine.h: not a header `sweeper export --format header` wrote" in \
        capsys.readouterr().err
    assert mine.read_text() == "#define X 1\n"


# -- on a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
def test_dynamic_shared_memory_launches_claims_past_48_kib_and_refuses_past_the_limit(
        staged_space, tmp_path, monkeypatch):
    """The staged copy, each block given ``block_size_x * TILE * 4`` bytes of dynamic
    shared memory: 1 KiB to 64 KiB launch and verify (64 KiB past the 48 KiB a block
    has unasked, so its maximum is raised first), a 512 KiB block is more than any GPU
    gives one and is recorded out of resources with its reason, and the sweep goes on."""
    from sweeper.devices import open_device
    from sweeper.trial import TrialStatus, run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = load_space(staged_space())
    kernel = load_kernel(space.kernel, space.kernel_options)
    device = open_device("cuda")
    problem = Problem("float32", 65536 + 12)
    for block, tile, status in ((64, 4, TrialStatus.OK), (256, 4, TrialStatus.OK),
                                (256, 64, TrialStatus.OK), (256, 512,
                                                            TrialStatus.OUT_OF_RESOURCES)):
        config = Config(problem=problem, grid=-(-problem.n // block), block=block,
                        meta={"TILE": tile})
        result = run_trial(kernel, kernel.allocate(problem, "cuda"), config, device,
                           MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                           torch.Generator(device="cuda").manual_seed(0))
        assert result.status is status, (block, tile, result.reason)
        if status is TrialStatus.OUT_OF_RESOURCES:
            assert "(MaxSharedMemoryPerBlockOptin); allowed: configs whose shared_memory " \
                   "is at most" in result.reason
    studies = tmp_path / "st"
    assert main(["run", str(tmp_path / "space.yaml"), "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0  # out of resources: the GPU's, not a fault
    rows = [json.loads(line) for line in
            (studies / "space" / "trials.jsonl").read_text().splitlines()]
    statuses = {(r["config"]["block"], r["config"]["meta"]["TILE"]): r["status"]
                for r in rows if r.get("kind") == "trial"}
    assert statuses == {(64, 4): "ok", (64, 64): "ok", (64, 512): "ok", (256, 4): "ok",
                        (256, 64): "ok", (256, 512): "out_of_resources"}, statuses
    _the_winner_compiles_and_launches_as_exported(tmp_path, studies / "space")


def _the_winner_compiles_and_launches_as_exported(folder: Path, study: Path) -> None:
    """The study's winner, looked up (``cuda_launch()``) and compiled and launched by
    CuPy as its docstring says, copies; the header, included by a kernel NVRTC compiles
    for this GPU and the tuned problem, gives the same defines and launch."""
    import cupy
    import numpy

    from sweeper.export_header import target_macro

    tuning, header = folder / "tuning.json", folder / "tuned.h"
    assert main(["export", str(study), "-o", str(tuning)]) == 0
    assert main(["export", str(study), "--format", "header", "-o", str(header)]) == 0
    cfg = sweeper.tuned(f"cuda:{folder / 'staged.cu'}:staged", dtype="float32",
                        footprint="64KiB", path=tuning)
    launch = cfg.cuda_launch()
    module = cupy.RawModule(code=launch.source.read_text(), options=launch.options,
                            name_expressions=[launch.name])
    function = module.get_function(launch.name)
    if launch.shared_mem > 48 * 1024:               # as TunedLaunch's docstring says
        function.max_dynamic_shared_size_bytes = launch.shared_mem
    n = 65536 // 4
    src = cupy.random.rand(n, dtype=cupy.float32)
    dst = cupy.zeros_like(src)
    function(launch.grid, launch.block, (dst, src, numpy.int64(n)),
             shared_mem=launch.shared_mem)
    cupy.testing.assert_array_equal(dst, src)
    values = cupy.RawModule(code=f'#include "{header.name}"\n' + (
        "extern \"C\" __global__ void tuned(long long *out) {\n"
        "    out[0] = block_size_x; out[1] = TILE; out[2] = STAGED_GRID_X;\n"
        "    out[3] = STAGED_SHARED_MEMORY; out[4] = STAGED_BLOCK_Y;\n}\n"),
        options=(f"-I{folder}", f"-D{target_macro(torch.cuda.get_device_name(0))}",
                 "-DPROBLEM_float32_n16384")).get_function("tuned")
    out = cupy.zeros(5, dtype=cupy.int64)
    values((1,), (1,), (out,))
    assert out.tolist() == [launch.block[0], int(launch.defines["TILE"]), launch.grid[0],
                            launch.shared_mem, 1]


@pytest.mark.gpu
def test_an_unchecked_scratch_output_runs_on_the_gpu_and_the_checked_one_is_compared(
        tmp_path, monkeypatch):
    """``check: [dst]``: the kernel's scratch output, which ``torch:clone`` does not
    compute, is not compared, and the config verifies; a planted wrong ``dst`` is still
    caught."""
    from sweeper.devices import open_device
    from sweeper.trial import TrialStatus, run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scratch.cu").write_text(SCRATCH_CU)
    (tmp_path / "space.yaml").write_text(SCRATCH)
    device = open_device("cuda")
    problem = Problem("float32", 65536 + 12)
    for source, status in ((SCRATCH_CU, TrialStatus.OK),
                           (SCRATCH_CU.replace("dst[i] = src[i];", "dst[i] = src[i] + 1;"),
                            TrialStatus.WRONG_ANSWER)):
        (tmp_path / "scratch.cu").write_text(source)
        space = load_space(tmp_path / "space.yaml")
        kernel = load_kernel(space.kernel, space.kernel_options)
        config = Config(problem=problem, grid=-(-problem.n // 128), block=128, meta={})
        result = run_trial(kernel, kernel.allocate(problem, "cuda"), config, device,
                           MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                           torch.Generator(device="cuda").manual_seed(0))
        assert result.status is status, result.reason
    assert result.reason.startswith("output dst: ")
