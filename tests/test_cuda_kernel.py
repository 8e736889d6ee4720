"""The ``cuda`` kernel without a GPU: options and defines, the cache key and the disk
cache (with a fake compiler), a compile error as a recorded trial, the space file's
errors, the listing, and the refusal on the interpreter.  The GPU half is at the end,
marked ``gpu``."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import sweeper
from sweeper.cli import main
from sweeper.errors import RefusalFailed
from sweeper.kernels import load_kernel
from sweeper.kernels._cuda_build import CompilationError, compiled, log_reason
from sweeper.kernels._cuda_spec import (
    cache_key,
    instantiation,
    nvrtc_options,
    read_includes,
    sources,
    unfound_includes,
)
from sweeper.space import Config, Invalid, MeasureSpec, Problem, load_space
from tests.conftest import ROOT

COPY_CU = ROOT / "examples" / "copy.cu"
KERNEL = """\
kernel:
  name: cuda
  source: {source}
  entry: {entry}
  inputs: {{src: n}}
  outputs: {{dst: n}}
  args: {args}
  reference: "torch:clone"{extra}
params:
  block: [128]
  VEC: [1, 4]
  footprint: [4KiB]
"""


def space_text(source: str = "copy.cu", entry: str = "copy", args: str = "[dst, src, n]",
               extra: str = "") -> str:
    return KERNEL.format(source=source, entry=entry, args=args, extra=extra)


@pytest.fixture
def cu_space(tmp_path):
    """A space beside a copy of examples/copy.cu; call with the space's text."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")

    def write(text: str) -> Path:
        (tmp_path / "space.yaml").write_text(text)
        return tmp_path / "space.yaml"
    return write


class FakeCompiler:
    """Counts compilations; fails with ``log`` when given one."""

    def __init__(self, arch: str = "sm_90", log: str | None = None) -> None:
        self.arch, self.version, self.log, self.calls = arch, "12.4", log, []

    def compile(self, source, name, options, entry):
        self.calls.append((name, tuple(options), entry))
        if self.log is not None:
            raise CompilationError(log_reason(self.log))
        return b"CUBIN" + entry.encode(), f"_Z{entry}"


def test_meta_parameters_block_and_dtype_become_defines():
    assert nvrtc_options({"VEC": 4, "UNROLL": 2}, 256, "float32") == (
        "-DDTYPE=float", "-DUNROLL=2", "-DVEC=4", "-Dblock_size_x=256", "-Dblock_size_y=1",
        "-Dblock_size_z=1")
    assert "-DDTYPE=__nv_bfloat16" in nvrtc_options({}, 64, "bfloat16")
    assert "-DDTYPE=__half" in nvrtc_options({}, 64, "float16")
    # a meta-parameter the template takes is a template argument, not a macro
    template = "copy<{VEC}, {UNROLL}>"
    assert nvrtc_options({"VEC": 4, "UNROLL": 2, "PAD": 1}, 128, "float32", template) == (
        "-DDTYPE=float", "-DPAD=1", "-Dblock_size_x=128", "-Dblock_size_y=1",
        "-Dblock_size_z=1")
    assert instantiation(template, {"VEC": 4, "UNROLL": 2, "PAD": 1}) == "copy<4, 2>"


#: A Kernel Tuner kernel that reads block_size_y with no #ifndef of its own.
ROWS_CU = """\
extern "C" __global__ void copy(DTYPE *dst, const DTYPE *src, int n) {
    int i = (blockIdx.x * block_size_y + threadIdx.y) * block_size_x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""


def test_block_size_y_and_z_are_defined_at_1_where_no_axis_sweeps_them(cu_space, tmp_path,
                                                                       monkeypatch):
    """Kernel Tuner defines ``block_size_y`` and ``block_size_z`` at every compile, 1 where
    they are not tuned, and its kernels read them without an ``#ifndef``: each compile
    here defines them too, so such a kernel compiles unchanged; a swept one is its axis's
    value, defined once."""
    from sweeper.kernels._cuda_build import _defines, precompile

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", ""))
    (path.parent / "copy.cu").write_text(ROWS_CU)
    kernel = load_kernel("cuda", load_space(path).kernel_options)
    launch = kernel.plan.launch
    launch.compiler = FakeCompiler()
    config = Config(problem=Problem("float32", 4096), grid=8, block=128)
    precompile(launch, config)
    options = launch.compiler.calls[0][1]
    assert {"-Dblock_size_x=128", "-Dblock_size_y=1", "-Dblock_size_z=1"} <= set(options)
    swept = Config(problem=Problem("float32", 4096), grid=8, block=128,
                   meta={"block_size_z": 1})
    assert [o for o in _defines(launch, swept)[1] if "block_size_z" in o] == \
        ["-Dblock_size_z=1"]


def test_a_cuda_kernels_source_hash_reads_no_define_so_a_study_holds_across_them(
        tmp_path, capsys, monkeypatch):
    """A study's kernel source is the files, the entry, the args and the reference, never
    the defines a config compiles with: a study measured where compiles defined other
    names (before ``block_size_y`` and ``block_size_z`` were defined at 1) is resumed as
    the same source, its configs measured."""
    from sweeper.kernels import _cuda_build

    run = _cuda_replay_study(tmp_path)
    monkeypatch.setattr(_cuda_build, "nvrtc_options",
                        lambda meta, block, dtype, template=None: (f"-Dblock_size_x={block}",))
    assert main(run) == 0
    monkeypatch.undo()
    capsys.readouterr()
    assert main(run) == 0
    out, err = capsys.readouterr()
    assert "source changed" not in out + err
    assert main(["plan", *run[1:run.index("--quiet")]]) == 0
    assert "would measure 0 " in capsys.readouterr().out


def test_the_cache_key_follows_source_includes_options_arch_and_nvrtc_only(tmp_path):
    (tmp_path / "k.cu").write_text('#include "common.h"\n#include <cuda_fp16.h>\nK\n')
    (tmp_path / "common.h").write_text("A\n")
    files = sources(tmp_path / "k.cu")
    assert [p.name for p in files] == ["k.cu", "common.h"]       # the system header stays out
    base = cache_key(files, "copy", ["-DVEC=4"], "sm_90", "12.4")
    assert cache_key(files, "copy", ["-DVEC=4"], "sm_90", "12.4") == base
    assert cache_key(files, "copy", ["-DVEC=2"], "sm_90", "12.4") != base
    assert cache_key(files, "copy", ["-DVEC=4"], "sm_80", "12.4") != base
    assert cache_key(files, "copy", ["-DVEC=4"], "sm_90", "12.6") != base
    assert cache_key(files, "copy2", ["-DVEC=4"], "sm_90", "12.4") != base
    (tmp_path / "common.h").write_text("B\n")                   # an include edited
    assert cache_key(sources(tmp_path / "k.cu"), "copy", ["-DVEC=4"], "sm_90", "12.4") != base
    (tmp_path / "common.h").write_text("A\n")
    moved = tmp_path / "elsewhere"                              # the folder is irrelevant
    moved.mkdir()
    for name in ("k.cu", "common.h"):
        shutil.copy(tmp_path / name, moved / name)
    assert cache_key(sources(moved / "k.cu"), "copy", ["-DVEC=4"], "sm_90", "12.4") == base


def test_a_compiled_kernel_is_kept_on_disk_and_found_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    compiler = FakeCompiler()
    first = compiled(COPY_CU, "copy", ("-DVEC=4",), compiler)
    assert first.path.parent == tmp_path / "cache" / "cuda" and first.lowered == "_Zcopy"
    assert first.path.read_bytes() == b"CUBINcopy"
    assert compiler.calls[0][1][-3:] == (f"-I{COPY_CU.parent}", "-arch=sm_90", "-std=c++17")
    assert compiled(COPY_CU, "copy", ("-DVEC=4",), compiler) == first      # a hit
    assert len(compiler.calls) == 1
    compiled(COPY_CU, "copy", ("-DVEC=2",), compiler)                      # other options
    compiled(COPY_CU, "copy", ("-DVEC=4",), FakeCompiler(arch="sm_80"))    # another GPU
    assert len(compiler.calls) == 2
    first.path.with_suffix(".json").write_text("{")                        # damaged: rebuilt
    assert compiled(COPY_CU, "copy", ("-DVEC=4",), compiler) == first
    assert len(compiler.calls) == 3


def test_a_compile_error_is_a_recorded_trial_with_nvrtc_s_log(cu_space, tmp_path,
                                                              monkeypatch):
    from sweeper.devices import open_device
    from sweeper.trial import TrialStatus, run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = load_space(cu_space(space_text()))
    kernel = load_kernel(space.kernel, space.kernel_options)
    kernel.plan.launch.compiler = FakeCompiler(log=(
        "copy.cu(20): warning: unused\ncopy.cu(31): error: identifier \"V\" is undefined\n"
        "1 error detected in the compilation of \"copy.cu\"."))
    problem = Problem("float32", 4096)
    config = Config(problem=problem, grid=4, block=128, meta={"VEC": 3})
    result = run_trial(kernel, kernel.allocate(problem, "cpu"), config,
                       open_device("interpret"), MeasureSpec(warmup=1, repeat=2),
                       torch.Generator().manual_seed(0))
    assert result.status is TrialStatus.COMPILE_ERROR
    assert result.reason == ('CompilationError: copy.cu(31): error: identifier "V" is '
                             'undefined | 1 error detected in the compilation of "copy.cu". '
                             '| copy.cu(20): warning: unused')


@pytest.mark.parametrize(("text", "message"), [
    (space_text(source="missing.cu"), ":3: kernel.source: no file {folder}/missing.cu; "
     "allowed: a CUDA source file, relative to the space file"),
    (space_text(entry="'2copy'"), ":4: kernel.entry: '2copy' is not a function name; "
     "allowed: a C identifier such as copy"),
    (space_text(args="[dst, src, m]"), ":7: kernel.args: argument 'm' is no tensor, "
     "dimension or number; known: src, dst, n, VEC"),
    (space_text(args="[dst, n]"), ":7: kernel.args: tensor 'src' is not passed to the "
     "entry; args: dst, n"),
    (space_text(args="[dst, src, 'n:int128']"), ":7: kernel.args: argument 'n:int128': "
     "type 'int128'; allowed: int32, int64, uint32, uint64, float32, float64, DTYPE"),
    (space_text(extra="\n  template: 'copy<{VEC}, {UNROLL}>'"), ":9: kernel.template: "
     "'copy<{VEC}, {UNROLL}>' reads {UNROLL}, which is no meta-parameter axis of params; "
     "known: VEC"),
    # a format spec would write another number than the value swept
    (space_text(extra="\n  template: 'copy<{VEC:x}>'"), ":9: kernel.template: 'copy<{VEC:x}>': "
     "{VEC:x} formats the value; allowed: {NAME} alone, filled in with the value in decimal"),
    (space_text(extra="\n  template: 'copy<{VEC!r}>'"), ":9: kernel.template: 'copy<{VEC!r}>': "
     "{VEC!r} formats the value"),
    (space_text(extra="\n  template: copy"), ":9: kernel.template: 'copy' is not a "
     "template instantiation; allowed: entry<{META}, ...> such as copy<{VEC}, {UNROLL}>"),
    (space_text().replace('"torch:clone"', "ref.py:clone"), ":8: kernel.reference: no "
     "file {folder}/ref.py for the reference"),
    (space_text().replace("  inputs: {src: n}\n", ""), ":1: kernel: kernel cuda needs "
     "option 'inputs'"),
    # an entry the file does not define would fail every config's compile
    (space_text(entry="cpy"), ":4: kernel.entry: no function 'cpy' in copy.cu or the files "
     "it includes; allowed: one of its __global__ functions: copy; did you mean 'copy'?"),
    # with a template the entry is still the function launched: checked, and instantiated
    (space_text(entry="cpy", extra="\n  template: 'copy<{VEC}>'"), ":4: kernel.entry: no "
     "function 'cpy' in copy.cu or the files it includes; allowed: one of its __global__ "
     "functions: copy; did you mean 'copy'?"),
    (space_text(extra="\n  template: 'cpy<{VEC}>'"), ":9: kernel.template: 'cpy<{VEC}>' "
     "instantiates cpy, not the entry 'copy'; allowed: an instantiation of the entry, "
     "copy<{VEC}>"),
    # the kernel's grid option is params.grid's default: its errors are at the option
    (space_text(extra="\n  grid: 'cdiv(n, block * VEC * UNROLL)'"), ":9: kernel.grid: "
     "unknown name 'UNROLL' in 'cdiv(n, block * VEC * UNROLL)'; known: VEC, block"),
    # the size options are expressions over the dimensions and itemsize, at their own line
    (space_text(extra="\n  bytes_moved: '2 * n * itemsiz'"), ":9: kernel.bytes_moved: unknown "
     "name 'itemsiz' in '2 * n * itemsiz'; known: n, itemsize; did you mean 'itemsize'?"),
    (space_text(extra="\n  flops: 'n * VEC'"), ":9: kernel.flops: unknown name 'VEC' in "
     "'n * VEC'; known: n, itemsize"),
    (space_text(extra="\n  footprint_bytes: 'n ** 2'"), ":9: kernel.footprint_bytes: operator "
     "'**' is not allowed in 'n ** 2'"),
    (space_text(extra="\n  grid: 'grid * 2'"), ":9: kernel.grid: grid's values read grid "
     "itself; an axis's expression reads the other axes, the dimensions and the device's "
     "facts"),
    # the tensors' mistakes at the tensor's own line, in the space's words
    (space_text().replace("{src: n}", "{src: m}"), ":5: kernel.inputs.src: shape 'm' reads "
     "'m'; known: n, itemsize"),
    (space_text().replace("{dst: n}", "[dst]"), ":6: kernel.outputs: 'dst' is no input "
     "(inputs: src); allowed: the inputs written in place, or new outputs by shape "
     "({dst: n})"),
    (space_text().replace("{dst: n}", "{src: n}"), ":6: kernel.outputs.src: 'src' is an "
     "input too; allowed: an input written in place, named and not shaped (outputs: [src]), "
     "or a new output of another name"),
    (space_text(extra="\n  dims: {n: 64, m: 4}"), ":9: kernel.dims: dimensions other than n "
     "need footprint_bytes, the bytes a problem is named by, over n, m and itemsize"),
    (space_text(extra="\n  refuse: limits.py:fits"), ":9: kernel.refuse: no file "
     "{folder}/limits.py for the refuse"),
    (space_text(extra="\n  refuse: fits"), ":9: kernel.refuse: 'fits' is not a refuse; "
     "allowed: module:function or file.py:function, relative to the space file"),
    # a tolerance as the short form's tolerance= takes it, each mistake at its dtype
    (space_text(extra="\n  tolerance: {fp33: [1e-3, 1e-5]}"), ":9: kernel.tolerance.fp33: "
     "'fp33' is not a dtype; allowed: float64, float32, "),
    (space_text(extra="\n  tolerance: {float32: 1e-3}"), ":9: kernel.tolerance.float32: "
     "'1e-3' is no tolerance; allowed: [rtol, atol], two numbers >= 0 (e.g. [1e-3, 1e-5])"),
    (space_text(extra="\n  tolerance: {float32: [-1, 0]}"), ":9: kernel.tolerance.float32: "
     "[-1, 0] is no tolerance; allowed: [rtol, atol], two numbers >= 0"),
    # the rate reports lead with, as the short form's headline=; TFLOP/s needs FLOPs
    (space_text(extra="\n  headline: gflops"), ":9: kernel.headline: 'gflops' is no "
     "headline; allowed: gbps, tflops"),
    (space_text(extra="\n  headline: tflops"), ":9: kernel.headline: tflops is flops over "
     "the median, and the kernel declares no flops; allowed: gbps, or tflops beside flops"),
    # a swept axis the source never names would compile one kernel under many configs
    (space_text().replace("  VEC: [1, 4]\n", "  VECT: [1, 4]\n"), ":11: params.VECT: "
     "copy.cu and the files it includes never name VECT, so -DVECT=... changes nothing and "
     "its configs would repeat one another; allowed: a define the source reads, a "
     "template's {NAME}, an argument, or a name an axis's expression reads; did you mean "
     "'VEC'?"),
])
def test_a_wrong_cuda_kernel_option_is_one_located_line(cu_space, capsys, text, message):
    path = cu_space(text)
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}{message.replace('{folder}', str(path.parent))}"), err
    assert "\n" not in err


#: A file whose one kernel is ``kopy``: ``copy`` is only mentioned, never declared.
MENTIONED_CU = r'''// copy: the entry of an older version
/* __global__ void copy(float *dst) was renamed */
static const char *doc = "copy(dst, src, n)";
static const char *raw = R"x(__global__ void copy() )x";
static const char quote = '"';
__global__ void kopy(float *dst, const float *src, long long n) { if (n > 1'000) dst[0] = src[0]; }
'''
#: A kernel a macro invocation declares: its name is in the code, as the invocation.
MACRO_CU = """\
// a string holding a quote and a comment's mark: "//copy" is still a string
#define DEFINE_COPY(name) extern "C" __global__ void name(DTYPE *dst, const DTYPE *src, \\
                                                          long long n) { dst[0] = src[0]; }
static const char *mark = "\\"//";
DEFINE_COPY(copy)
"""


def test_a_swept_define_named_only_in_a_comment_or_a_literal_is_never_read(cu_space, capsys):
    """A comment or a string that names the swept define reads nothing: ``-DVECT=...``
    would still compile one kernel under every config."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", "  VECT: [1, 4]\n"))
    source = path.parent / "copy.cu"
    source.write_text("// VECT: the older name of VEC\n"
                      'static const char *doc = "VECT";\n' + source.read_text())
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.startswith(
        f"{path}:11: params.VECT: copy.cu and the files it includes never name VECT")


@pytest.mark.parametrize(("opens", "read"), [
    ("#if 0\nint unrolled = UNROL;\n#endif", False),
    ("#ifdef USE_UNROLLED\nint unrolled = UNROL;\n#endif", False),   # no config defines it
    ("#if !defined(VEC)\nint unrolled = UNROL;\n#endif", False),     # every config does
    ('#ifdef USE_UNROLLED\n#include "unrol.cuh"\n#endif', False),    # never included
    ("#if 0\n#if UNROL > 1\n#endif\n#endif", False),     # a condition never evaluated
    ("#if 1\n#elif UNROL > 1\n#endif", False),            # a branch before was taken
    ("int unrolled = UNROL;", True),                       # code
    ("#define STEP (UNROL * 2)", True),                    # a define that code may expand
    ('#include "unrol.cuh"', True),                        # an included file's code
    ("#if UNROL > 1\n#endif", True),                      # a directive alone reads it
    ("#ifdef UNROL\nint unrolled;\n#endif", True),
    ("#if 0\n#elif UNROL > 1\n#endif", True),             # evaluated: the #if was not taken
    ("#ifdef __CUDACC_RTC__\nint unrolled = UNROL;\n#endif", True),  # may hold
])
def test_a_swept_define_named_only_in_code_no_config_compiles_is_never_read(
        cu_space, capsys, opens, read):
    """A name only in code a preprocessor conditional leaves out at every config (``#if
    0``, ``#ifdef X`` of an X neither swept nor defined, a file only such code includes)
    is read by no config: ``-DUNROL=...`` would compile one kernel under every config.
    A name in the code that compiles passes, and so does one a conditional that is
    evaluated reads (``#if UNROL > 1``), though the directive is no code."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", "  VEC: [1, 4]\n  UNROL: [1, 2]\n"))
    source = path.parent / "copy.cu"
    source.write_text(opens + "\n" + source.read_text())
    (path.parent / "unrol.cuh").write_text("static const int unrolled = UNROL;\n")
    if read:
        assert len(load_space(path).choices()["UNROL"]) == 2
        return
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.startswith(
        f"{path}:12: params.UNROL: copy.cu and the files it includes never name UNROL, so "
        "-DUNROL=... changes nothing and its configs would repeat one another; allowed: ")


@pytest.mark.parametrize(("text", "found"), [(MENTIONED_CU, False), (MACRO_CU, True)])
def test_the_entry_is_looked_for_in_code_not_in_comments_or_literals(cu_space, capsys,
                                                                      text, found):
    """A name in a comment or a string literal declares no function: NVRTC would fail
    every config.  A macro invocation in code that declares the entry passes."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", ""))
    (path.parent / "copy.cu").write_text(text)
    entry_found_or_refused(path, capsys, found)


def entry_found_or_refused(path: Path, capsys, found: bool, why: str = "") -> None:
    """The space ``path`` (beside its ``copy.cu``) and ``sweeper.cuda`` of that file take
    the entry ``copy`` where ``found``, else both refuse it, ``why`` after the file."""
    source = path.parent / "copy.cu"
    if found:
        assert dict(load_space(path).kernel_options)["entry"] == "copy"
        assert sweeper.cuda(source, "copy", ["dst", "src", "n"]).entry == "copy"
        return
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{path}:4: kernel.entry: no function 'copy' in copy.cu or the files it includes"
        f"{why}; allowed: one of its __global__ functions: kopy; did you mean 'kopy'?\n")
    with pytest.raises(sweeper.SweeperError, match=r"no function 'copy' in copy\.cu or the "
                       "files it includes" + re.escape(why) + ";"):
        sweeper.cuda(source, "copy", ["dst", "src", "n"])


#: A file whose ``copy`` is declared only inside a conditional, ``kopy`` outside it.
GUARDED_ENTRY_CU = """\
{opens}
__global__ void copy(DTYPE *dst, const DTYPE *src, long long n) {{ dst[0] = src[0]; }}
#endif
__global__ void kopy(DTYPE *dst, const DTYPE *src, long long n) {{ dst[0] = src[0]; }}
"""


@pytest.mark.parametrize(("opens", "space", "python"), [
    ("#if 0", False, False),                   # never compiled
    ("#ifdef USE_OLD", False, True),           # no config defines it; unknown in Python
    ("#if 1", True, True),
    ("#ifdef block_size_x", True, True),       # every config defines it
    ("#if __CUDA_ARCH__ >= 800", True, True),  # may hold
])
def test_an_entry_only_in_code_the_preprocessor_leaves_out_is_refused(cu_space, capsys,
                                                                      opens, space, python):
    """An entry declared only where a conditional leaves the code out at every config is
    no function NVRTC compiles: every config would fail, so it is refused as an entry
    the file does not declare.  ``sweeper.cuda`` knows no defines: only ``#if 0``."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", ""))
    source = path.parent / "copy.cu"
    source.write_text(GUARDED_ENTRY_CU.format(opens=opens))
    if space:
        assert dict(load_space(path).kernel_options)["entry"] == "copy"
    else:
        assert main(["plan", str(path), "--device", "interpret"]) == 2
        assert capsys.readouterr().err == (
            f"{path}:4: kernel.entry: no function 'copy' in copy.cu or the files it "
            "includes; allowed: one of its __global__ functions: kopy; did you mean "
            "'kopy'?\n")
    if python:
        assert sweeper.cuda(source, "copy", ["dst", "src", "n"]).entry == "copy"
    else:
        with pytest.raises(sweeper.SweeperError, match=r"no function 'copy' in copy\.cu"):
            sweeper.cuda(source, "copy", ["dst", "src", "n"])


#: ``copy`` is declared only in ``old.cuh``, which ``copy.cu`` includes where no
#: compile reads it ({where}); ``kopy`` is the file's own.
INCLUDED_ENTRY_CU = """\
{where}
__global__ void kopy(DTYPE *dst, const DTYPE *src, long long n) {{ dst[0] = src[0]; }}
"""
OLD_CUH = "__global__ void copy(DTYPE *dst, const DTYPE *src, long long n) { dst[0] = src[0]; }\n"


@pytest.mark.parametrize(("where", "found"), [
    ('#if 0\n#include "old.cuh"\n#endif', False),        # a branch never compiled
    ('/* before the rename:\n#include "old.cuh"\n*/', False),   # a comment
    ('#include "old.cuh"', True),
    ('#define USE_OLD\n#ifdef USE_OLD\n#include "old.cuh"\n#endif', True),
    ('#include "mid.cuh"', True),                          # through another include
])
def test_an_entry_only_in_a_file_included_where_nothing_is_compiled_is_refused(
        cu_space, capsys, where, found):
    """Each file is read as the preprocessor reads it, and an included file only where
    code that is compiled includes it: an entry declared in a header that the source
    includes inside ``#if 0`` or a comment is no function NVRTC compiles, and the
    message says which file names it."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", ""))
    (path.parent / "copy.cu").write_text(INCLUDED_ENTRY_CU.format(where=where))
    (path.parent / "old.cuh").write_text(OLD_CUH)
    (path.parent / "mid.cuh").write_text('#pragma once\n#include "old.cuh"\n')
    entry_found_or_refused(path, capsys, found, " (old.cuh names it, but is included only "
                           "where code is left out at every config)")


TEMPLATED_CU = """\
// a helper template: sweeping N would break it too
template <int N> struct Vec;
template <> struct Vec<1> { typedef float type; };
template <int VEC, int UNROLL = 1>
__global__ void __launch_bounds__(1024) copy(DTYPE *dst, const DTYPE *src, long long n) {
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += UNROLL * VEC)
        dst[i] = src[i];
}
"""


@pytest.mark.parametrize(("extra", "axes", "message"), [
    # the template passes VEC; UNROLL would be -DUNROLL=1, and template <int VEC, int 1>
    ("\n  template: 'copy<{VEC}>'", "  UNROLL: [1, 2]\n", ":13: params.UNROLL: UNROLL is a "
     "template parameter of copy in copy.cu (template <int VEC, int UNROLL = 1>), so its "
     "define -DUNROLL=... would break the template and every config fail to compile; "
     "allowed: pass it as a template argument, in the template option: template: "
     "'copy<{VEC}, {UNROLL}>'"),
    # no template option at all: every template parameter swept is a define
    ("", "", ":11: params.VEC: VEC is a template parameter of copy in copy.cu (template <int "
     "VEC, int UNROLL = 1>), so its define -DVEC=... would break the template and every "
     "config fail to compile; allowed: pass it as a template argument, in the template "
     "option: template: 'copy<{VEC}, UNROLL>'"),
    # another template's parameter breaks that template as well
    ("\n  template: 'copy<{VEC}>'", "  N: [1, 2]\n", ":13: params.N: N is a template "
     "parameter of Vec in copy.cu (template <int N>), so its define -DN=... would break the "
     "template and every config fail to compile; allowed: an axis of another name, or a "
     "template parameter renamed"),
])
def test_a_swept_template_parameter_left_out_of_the_template_is_refused_at_its_axis(
        cu_space, capsys, extra, axes, message):
    """A meta-parameter the template option does not pass is a ``-D`` define; where the
    source names it as a template parameter the macro breaks the template's parameter
    list and every config would fail to compile on the GPU."""
    path = cu_space(space_text(extra=extra).replace("  footprint:", axes + "  footprint:"))
    (path.parent / "copy.cu").write_text(TEMPLATED_CU)
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == f"{path}{message}\n"


GUARDED_CU = """\
{opens}
template <int UNROLL> __device__ void unrolled(float *x) {{ x[0] = UNROLL; }}
#endif
template <int VEC>
__global__ void copy(DTYPE *dst, const DTYPE *src, long long n) {{
    (void)UNROLL;                       // the define, read where every config compiles
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += VEC)
        dst[i] = src[i];
}}
"""


@pytest.mark.parametrize(("opens", "read"), [
    ("#if 0", False),                      # never compiled
    ("#ifdef USE_UNROLLED", False),        # no config defines it
    ("#if !defined(UNROLL)", False),       # every config defines UNROLL
    ("#if 1", True),
    ("#ifdef block_size_x", True),         # every config defines it
    ("#ifdef __CUDACC_RTC__", True),       # NVRTC's own: may be defined
    ("#if UNROLL > 1", True),              # may hold
    # C23's #elifdef and #elifndef, read as #ifdef and #ifndef after a branch not taken
    ("#if 0\n#elifdef block_size_x", True),
    ("#if 0\n#elifdef USE_UNROLLED", False),
    ("#if 0\n#elifndef USE_UNROLLED", True),
    ("#if 0\n#elifdef __CUDACC_RTC__", True),  # may hold
    ("#if 1\nint x;\n#elifndef USE_UNROLLED", False),   # a branch before was taken
])
def test_a_template_parameter_in_code_the_preprocessor_leaves_out_is_not_read(
        cu_space, capsys, opens, read):
    """A template inside ``#if 0``, or a conditional on a define no config sets, is never
    compiled: sweeping its parameter's name as a define breaks nothing.  Where the
    condition may hold, the template is read as before."""
    unrolled_read_or_refused(cu_space, capsys, GUARDED_CU.format(opens=opens), read)


def unrolled_read_or_refused(cu_space, capsys, source: str, read: bool,
                             header: str | None = None) -> None:
    """A space sweeping ``UNROLL`` as a define beside ``source`` (and ``header``, as
    unrolled.cuh) plans where the template ``unrolled`` is not ``read``; else it is
    refused at the axis, naming the file that declares the template."""
    path = cu_space(space_text(extra="\n  template: 'copy<{VEC}>'").replace(
        "  footprint:", "  UNROLL: [1, 2]\n  footprint:"))
    (path.parent / "copy.cu").write_text(source)
    if header is not None:
        (path.parent / "unrolled.cuh").write_text(header)
    if not read:
        assert len(load_space(path).choices()["UNROLL"]) == 2
        return
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.startswith(
        f"{path}:13: params.UNROLL: UNROLL is a template parameter of unrolled in "
        f"{'copy.cu' if header is None else 'unrolled.cuh'} (template <int UNROLL>)")


#: ``copy.cu`` including ``unrolled.cuh``, whose template names ``UNROLL``, under
#: the conditional ``{opens}``.
INCLUDING_CU = """\
{opens}
#include "unrolled.cuh"
#endif
template <int VEC>
__global__ void copy(DTYPE *dst, const DTYPE *src, long long n) {{
    (void)UNROLL;                       // the define, read where every config compiles
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += VEC)
        dst[i] = src[i];
}}
"""


@pytest.mark.parametrize(("opens", "read"), [
    ("#ifdef USE_UNROLLED", False),        # no config defines it: never included
    ("#if !defined(UNROLL)", False),       # every config defines UNROLL
    ("#ifdef block_size_x", True),         # every config defines it: included
    ("#if UNROLL > 1", True),              # may hold
])
def test_a_template_parameter_in_a_header_included_where_nothing_compiles_is_not_read(
        cu_space, capsys, opens, read):
    """A header is read for template parameters only where code that compiles includes it,
    as the entry is looked for: a template of a header included only under a conditional
    no config takes breaks nothing, so sweeping its parameter's name is not refused."""
    unrolled_read_or_refused(
        cu_space, capsys, INCLUDING_CU.format(opens=opens), read,
        "template <int UNROLL> __device__ void unrolled(float *x) { x[0] = UNROLL; }\n")


def test_a_template_passing_every_swept_parameter_plans(cu_space):
    path = cu_space(space_text(extra="\n  template: 'copy<{VEC}, {UNROLL}>'").replace(
        "  footprint:", "  UNROLL: [1, 2]\n  footprint:"))
    (path.parent / "copy.cu").write_text(TEMPLATED_CU)
    assert len(load_space(path).choices()["UNROLL"]) == 2


@pytest.mark.parametrize(("args", "sizes", "message"), [
    # 8GiB of float32 is 2**31 elements: numpy refuses n as an int32 at every trial
    ("[dst, src, n]", "  footprint: [4KiB, 8GiB]\n", ":7: kernel.args: argument 'n' is "
     "passed untyped, so as int32, which holds at most 2147483647, and reaches 2147483648 in "
     "this space; allowed: type it as int64, args: [dst, src, \"n:int64\"]"),
    ("[dst, src, 'n:uint32']", "  footprint: [16GiB]\n", ":7: kernel.args: argument 'n' is "
     "passed as uint32, which holds at most 4294967295, and reaches 4294967296 in this "
     "space; allowed: type it as int64, args: [dst, src, \"n:int64\"]"),
    # sized by its dimension directly
    ("[dst, src, n]", "  n: [1024, 3000000000]\n", ":7: kernel.args: argument 'n' is passed "
     "untyped, so as int32, which holds at most 2147483647, and reaches 3000000000"),
])
def test_a_dimension_past_its_32_bit_argument_is_refused_at_args(cu_space, capsys, args,
                                                                    sizes, message):
    """An untyped dimension is passed as int32; a problem past 2**31 - 1 elements would
    make every one of its trials fail on numpy's OverflowError, so the space is refused
    where its args are written, showing the typed form."""
    path = cu_space(space_text(args=args).replace("  footprint: [4KiB]\n", sizes))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}{message}"), err
    assert err.count("\n") == 1


def test_an_integer_literal_past_its_type_is_refused_at_args(cu_space, capsys):
    """An untyped integer literal goes as int32: one past it would fail every trial."""
    path = cu_space(space_text(args="[dst, src, n, 3000000000]"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{path}:7: kernel.args: argument '3000000000' is passed untyped, so as int32, which "
        "holds at most 2147483647, and is 3000000000; allowed: type it as int64, args: [dst, "
        'src, n, "3000000000:int64"]\n')
    path = cu_space(space_text(args="[dst, src, n, '-1:uint32']"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert "argument '-1' is passed as uint32, which holds at least 0, and is -1" in \
        capsys.readouterr().err
    with pytest.raises(sweeper.SweeperError, match=r"^sweeper\.cuda: argument '3000000000' "
                       r"is passed untyped, so as int32"):
        sweeper.cuda(COPY_CU, "copy", ["dst", "src", "n", "3000000000"])
    assert sweeper.cuda(COPY_CU, "copy", ["dst", "src", "n", "3000000000:int64"])


@pytest.mark.parametrize(("args", "axes", "message"), [
    ("[dst, src, n, '300:DTYPE']", "  dtype: [float32, int8]\n", "argument '300' is passed "
     "as DTYPE, so as int8, which holds at most 127, and is 300; allowed: a value int8 "
     "holds, -128 to 127, or dtypes that hold it"),
    ("[dst, src, n, '-1:DTYPE']", "  dtype: [uint8]\n", "argument '-1' is passed as DTYPE, "
     "so as uint8, which holds at least 0, and is -1"),
    # n from the footprint over its own dtype's itemsize: 96KiB of int16 is 49152 elements
    ("[dst, src, 'n:DTYPE']", "  dtype: [float32, int16]\n  footprint: [96KiB]\n",
     "argument 'n' is passed as DTYPE, so as int16, which holds at most 32767, and reaches "
     "49152 in this space"),
    ("[dst, src, 'n:DTYPE']", "  dtype: [int8]\n  n: [64, 1000]\n", "argument 'n' is "
     "passed as DTYPE, so as int8, which holds at most 127, and reaches 1000 in this space"),
])
def test_a_dtype_argument_past_a_swept_integer_dtype_is_refused_at_args(cu_space, capsys,
                                                                        args, axes, message):
    """An argument typed ``DTYPE`` goes as the config's dtype: at an integer dtype that
    cannot hold its value numpy refuses it and every such trial fails, so the space is
    refused at its args as a 32-bit argument past its type is."""
    path = cu_space(space_text(args=args).replace(
        "  footprint: [4KiB]\n", axes if "footprint" in axes or "  n:" in axes else
        axes + "  footprint: [4KiB]\n"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:7: kernel.args: {message}"), err
    assert err.count("\n") == 1


def test_a_dtype_argument_within_its_dtypes_or_at_a_real_dtype_plans(cu_space):
    for args, axes in (("[dst, src, n, '300:DTYPE']", "  dtype: [float32, float16]\n"),
                       ("[dst, src, n, '300:DTYPE']", "  dtype: [int16]\n"),
                       ("[dst, src, 'n:DTYPE']", "  dtype: [float32, int16]\n")):
        path = cu_space(space_text(args=args).replace("  footprint:", axes + "  footprint:"))
        assert load_space(path).choices()["dtype"]


def test_a_users_sweeper_cuda_kernel_past_int32_is_refused_as_the_built_in_is(
        tmp_path, monkeypatch, capsys):
    """A ``sweeper.cuda`` launch's untyped ``n`` is int32 as the built-in's is: a space
    past it is refused at the kernel, run importing the kernel, as it is read."""
    user_cuda_module(tmp_path, "usercuda_wide")
    (tmp_path / "s.yaml").write_text("kernel: usercuda_wide:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  footprint: [4KiB, 8GiB]\n")
    monkeypatch.syspath_prepend(tmp_path)
    with pytest.raises(sweeper.SweeperError, match=(
            r"s\.yaml:1: kernel\.args: argument 'n' is passed untyped, so as int32, which "
            r"holds at most 2147483647, and reaches 2147483648 in this space")):
        load_space(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text("kernel: usercuda_wide:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  footprint: [4KiB, 4GiB]\n")
    assert load_space(tmp_path / "s.yaml").choices()["footprint"]


LATE_TOO_LARGE = {
    "space": "argument 'n' is passed untyped, so as int32, which holds at most 2147483647, "
             "and reaches 2214592512 at this config; allowed: type it as int64, args: [dst, "
             'src, "n:int64"]',
    # n:DTYPE at the config's own dtype: 132 SMs * 1MiB of int16 is 69206016 elements
    "dtype": "argument 'n' is passed as DTYPE, so as int16, which holds at most 32767, and "
             "reaches 69206016 at this config; allowed: a value int16 holds, -32768 to "
             "32767, or dtypes that hold it"}


@pytest.mark.parametrize("form", ["space", "python", "dtype"])
def test_a_size_given_by_an_expression_past_int32_is_refused_before_a_run(
        tmp_path, monkeypatch, form):
    """An axis given as an expression over the device's facts has its values only once
    the device is known: the run checks each config's integer arguments (at its own
    dtype, typed ``DTYPE``) then, before anything is written, and refuses at the
    expression's line."""
    from sweeper.devices import open_device
    from sweeper.engine._inputs import kernel_for

    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    sizes = '  footprint: [4KiB, "sms * 67108864"]\n'       # 132 SMs: 8.25GiB, n > 2**31
    if form == "space":
        (tmp_path / "s.yaml").write_text(space_text().replace("  footprint: [4KiB]\n", sizes))
    elif form == "dtype":
        sizes = '  footprint: [4KiB, "sms * 1048576"]\n'
        (tmp_path / "s.yaml").write_text(space_text(args="[dst, src, 'n:DTYPE']").replace(
            "  footprint: [4KiB]\n", "  dtype: [int16]\n" + sizes))
    else:
        user_cuda_module(tmp_path, "usercuda_late")
        (tmp_path / "s.yaml").write_text("kernel: usercuda_late:copy\nparams:\n"
                                         "  VEC: [1, 4]\n" + sizes)
        monkeypatch.syspath_prepend(tmp_path)
    space = load_space(tmp_path / "s.yaml")
    device = open_device("replay:" + str(ROOT / "tests" / "data" / "replay" / "h200-copy.csv"))
    with pytest.raises(sweeper.SweeperError) as refused:
        kernel_for(space, device)
    line = 1 + (tmp_path / "s.yaml").read_text().splitlines().index(sizes.rstrip("\n"))
    assert str(refused.value).startswith(f"{tmp_path / 's.yaml'}:{line}: params.footprint[1]: "
                                         "on ")
    assert str(refused.value).endswith(LATE_TOO_LARGE.get(form, LATE_TOO_LARGE["space"]))


@pytest.mark.parametrize(("axes", "at", "message"), [
    ('  footprint: [4KiB, "sms * 1073741824"]\n', "params.footprint[1]",
     "kernel cuda: argument 'n' is passed untyped, so as int32, which holds at most "
     "2147483647, and reaches "),
    ('  VEC: [4, "sms // sms"]\n', "params.VEC[1]",
     "kernel model {streaming: {tile: block * VEC - 200, inputs: 1}}: tile 'block * VEC - "
     "200' gives "),
])
def test_plan_refuses_what_run_refuses_once_the_device_resolves_an_expression(
        cu_space, capsys, tmp_path, axes, at, message):
    """An axis given as an expression over the device's facts has its values only once
    the device is known: ``run`` refuses a ``cuda`` kernel whose integer argument or
    declared model fails at such a config before anything is written, and ``plan`` on the
    same device refuses it in the same line, rather than plan a run that cannot start."""
    from sweeper.devices import open_device
    from sweeper.engine._inputs import kernel_for

    text = space_text(extra='\n  model: {streaming: {tile: "block * VEC - 200"}}'
                      if "VEC" in axes else "")
    name = axes.split(":")[0].strip()
    path = cu_space("\n".join(axes.rstrip("\n") if line.startswith(f"  {name}:") else line
                              for line in text.split("\n")))
    line = 1 + path.read_text().splitlines().index(axes.rstrip("\n"))
    assert main(["plan", str(path), "--studies-dir", str(tmp_path / "st")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"{path}:{line}: {at}: on "), err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "st").exists()
    space = load_space(path)             # run's check on the device plan stood in with
    with pytest.raises(sweeper.SweeperError) as refused:
        kernel_for(space, open_device("cuda", for_plan=True))
    assert f"sweeper: {refused.value}\n" == err or f"{refused.value}\n" == err


def test_a_dimension_typed_int64_or_within_int32_plans(cu_space):
    for args, sizes in (("[dst, src, 'n:int64']", "[8GiB]"), ("[dst, src, n]", "[4GiB]")):
        path = cu_space(space_text(args=args).replace("[4KiB]", sizes))
        assert load_space(path).choices()["footprint"]


def test_an_axis_the_source_never_names_passes_where_the_grid_or_args_read_it(cu_space):
    """A meta-parameter the grid reads (waves of blocks) or the entry takes as an argument
    changes the launch though no define reads it."""
    text = space_text(args="[dst, src, n, PAD]").replace(
        "  block: [128]\n", "  block: [128]\n  grid: ['WAVES * sms']\n  WAVES: [1, 2]\n"
        "  PAD: [1, 2]\n")
    space = load_space(cu_space(text))
    assert [len(v) for k, v in space.choices().items() if k in ("WAVES", "PAD")] == [2, 2]


def test_a_meta_parameter_args_passes_runs_resumes_and_exports(tmp_path, capsys):
    """A meta-parameter axis that ``args`` passes (``PAD``, which no define reads) is known
    wherever the kernel is built again from its options, not only as the space is read:
    ``run`` measures every config, in worker processes too, a resume and ``plan`` find its
    trials, and ``export`` and a lookup of its winners hash the kernel's source now as
    the run did, so an edit of the .cu file since is told of."""
    run = _cuda_replay_study(tmp_path, pads=(1, 2))
    assert main([*run, "--workers", "process"]) == 0
    study = tmp_path / "st" / "s-replay"
    rows = [json.loads(line) for line in (study / "trials.jsonl").read_text().splitlines()]
    assert sorted((r["config"]["meta"]["VEC"], r["config"]["meta"]["PAD"], r["status"])
                  for r in rows if r.get("kind") == "trial") == \
        [(v, p, "ok") for v in (1, 4) for p in (1, 2)]
    capsys.readouterr()
    assert main(run) == 0
    assert "done: 0 measured" in capsys.readouterr().out
    assert main(["plan", *run[1:run.index("--quiet")]]) == 0
    assert "would measure 0 " in capsys.readouterr().out
    tuning = tmp_path / "tuning.json"
    export = ["export", str(study), "-o", str(tuning)]
    assert main(export) == 0
    assert json.loads(tuning.read_text())["entries"][0]["meta"] == {"VEC": 4, "PAD": 1}
    tuned = ["tuned", "cuda:copy.cu:copy", "--footprint", "4KiB", "--gpu",
             "replay: NVIDIA H200", "--tuning", str(tuning)]
    assert main(tuned) == 0
    assert "VEC=4 PAD=1" in capsys.readouterr().out
    with (tmp_path / "copy.cu").open("a") as file:
        file.write("// edited\n")
    assert main(export) == 0
    assert "the source of cuda changed since the study measured it" in \
        capsys.readouterr().err
    assert main(tuned) == 0
    assert "were tuned for an earlier source" in capsys.readouterr().err


def test_a_name_args_passes_that_is_no_axis_is_refused_at_the_args_line(tmp_path, capsys):
    """A name ``args`` passes that is no tensor, dimension or axis (``PADS`` beside the
    axis ``PAD``) is refused by ``run`` at the args line, nothing written: only a name
    the space sweeps is taken as a meta-parameter."""
    run = _cuda_replay_study(tmp_path, pads=(1, 2))
    space = tmp_path / "s.yaml"
    space.write_text(space.read_text().replace("n, PAD]", "n, PADS]"))
    assert main(run) == 2
    assert capsys.readouterr().err == (
        f"{space}:7: kernel.args: argument 'PADS' is no tensor, dimension or number; known: "
        "src, dst, n, VEC, PAD\n")
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize(("arg", "kind"), [("PAD", "int32"), ("'PAD:int64'", "int64")])
def test_a_meta_parameter_args_passes_is_launched_as_the_configs_integer(
        tmp_path, monkeypatch, arg, kind):
    """The kernel a run builds from its options alone launches a meta-parameter that
    ``args`` passes as the config's value, in its C type: untyped an ``int`` (int32),
    typed as written, after the tensors' pointers and the dimension (CuPy faked: the
    values the function is called with)."""
    import contextlib
    import types

    import numpy

    from sweeper.kernels._cuda_build import _defines

    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    (tmp_path / "s.yaml").write_text(space_text(args=f"[dst, src, 'n:int64', {arg}]").replace(
        "  VEC: [1, 4]\n", "  VEC: [1, 4]\n  PAD: [1, 2]\n"))
    space = load_space(tmp_path / "s.yaml")
    launch = load_kernel(space.kernel, space.kernel_options).plan.launch
    config = Config(problem=Problem("float32", 4096), grid=8, block=128,
                    meta={"VEC": 4, "PAD": 2})
    called = []
    launch.loaded[_defines(launch, config)] = \
        lambda grid, block, args, shared_mem: called.append(args)
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=lambda index: contextlib.nullcontext(),
                                      ExternalStream=lambda ptr: contextlib.nullcontext())
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device: types.SimpleNamespace(cuda_stream=0))
    src, dst = torch.empty(1024), torch.empty(1024)
    launch(config, src=src, dst=dst)
    (args,) = called
    assert [type(a) for a in args] == [numpy.uint64, numpy.uint64, numpy.int64,
                                       getattr(numpy, kind)]
    assert list(args) == [dst.data_ptr(), src.data_ptr(), 1024, 2]


def test_a_define_may_be_swept_off_as_0_and_no_lower(cu_space, capsys):
    """A CUDA switch (``#if USE_SHARED``) is swept over 0 and 1 as the space writes it; the
    define is no Triton constexpr and takes 0 without a declaration a space cannot give."""
    text = space_text().replace("  VEC: [1, 4]\n", "  VEC: [1, 4]\n  USE_SHARED: [0, 1]\n")
    path = cu_space(text)
    (path.parent / "copy.cu").write_text(COPY_CU.read_text() + "#if USE_SHARED\n#endif\n")
    assert load_space(path).choices()["USE_SHARED"] == ("0", "1")
    path.write_text(text.replace("[0, 1]", "[-1, 1]"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (f"{path}:12: params.USE_SHARED[0]: -1 is below 0; "
                                       "allowed: cuda's USE_SHARED from 0 up\n")


@pytest.mark.parametrize(("axis", "line", "allowed"), [
    ("  block_size_x: [64, 128]\n", "12: params.block_size_x", "sweeper defines block_size_x "
     "itself, as each launch's block (blockDim.x), so its own -Dblock_size_x would be replaced "
     "and its configs repeat one another; allowed: the block sizes as the launch axis block"),
    ("  DTYPE: [1, 2]\n", "12: params.DTYPE", "sweeper defines DTYPE itself, as the C type of "
     "the problem's dtype (-DDTYPE=float), so its own -DDTYPE would be replaced and its "
     "configs repeat one another; allowed: the dtypes as the problem axis dtype"),
    ("  pair: {zip: {block_size_x: [64], UNROLL: [2]}}\n", "12: params.pair.zip.block_size_x",
     "sweeper defines block_size_x itself"),
])
def test_an_axis_named_as_a_define_sweeper_gives_is_refused_at_its_line(cu_space, capsys,
                                                                         axis, line, allowed):
    """Every compile defines ``block_size_x`` (the block) and ``DTYPE`` in place of an
    axis's define of that name: swept, Kernel Tuner's way, such an axis would launch one
    kernel under configs labelled otherwise, so it is refused where it is written."""
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", "  VEC: [1, 4]\n" + axis))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line}: {allowed}"), err
    assert err.count("\n") == 1


def test_a_cuda_block_is_any_count_of_threads_a_launch_takes(cu_space, capsys, tmp_path):
    """A CUDA C block is ``blockDim.x`` threads, any count from 1 to 1024 (Kernel Tuner
    sweeps 16, 48 or ``32 * i``), not a Triton program's warps: such blocks plan, as an
    expression's value resolves; one past 1024 is refused at its line, and a Triton
    kernel's blocks stay num_warps × 32."""
    text = space_text().replace("  block: [128]\n", "  block: [16, 48, '8 * sms']\n")
    space = load_space(cu_space(text))
    assert space.choices()["block"] == ("16", "48", "8 * sms")
    assert space.resolve({"block": "8 * sms", "VEC": "1"}, {"sms": 12, "l2_bytes": 0}
                         ).block == 96
    with pytest.raises(Invalid, match=r"^block: 1056 threads; allowed: 1 to 1024 threads"):
        space.resolve({"block": "8 * sms", "VEC": "1"}, {"sms": 132, "l2_bytes": 0})
    path = cu_space(text.replace("48", "1056"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (f"{path}:10: params.block[1]: 1056 threads per "
                                       "program; allowed: 1 to 1024 threads (blockDim.x)\n")
    copy = (tmp_path / "copy.yaml")
    copy.write_text("kernel: copy\nparams:\n  block: ['16 * sms']\n  footprint: [4KiB]\n")
    with pytest.raises(Invalid, match=r"^block: 48 threads; allowed: 32, 64, 128, 256, "
                                      r"512, 1024 \(num_warps × 32\)"):
        load_space(copy).resolve({}, {"sms": 3, "l2_bytes": 0})


def test_a_sweeper_cuda_kernel_takes_a_block_of_any_count_of_threads():
    """``sweeper.kernel``'s ``block=`` is one its launch takes: a ``sweeper.cuda`` launch's
    any count up to 1024, a Python launch's num_warps × 32."""
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"])
    declared = sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                              meta={"VEC": 4}, grid="cdiv(n, block * VEC)", block=48,
                              reference=lambda src: src.clone())
    assert declared.defaults["block"] == 48 and declared.launch_shape.allows(16)
    with pytest.raises(sweeper.SweeperError, match=r"^kernel copy: block=2048 threads per "
                       r"program; allowed: 1 to 1024 threads \(blockDim\.x\)$"):
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},
                       grid="cdiv(n, block * VEC)", block=2048,
                       reference=lambda src: src.clone())


def test_a_sweeper_cuda_kernel_with_a_meta_parameter_sweeper_defines_is_refused():
    """The Python form: ``meta={"block_size_x": ...}`` is refused as it is declared, in the
    space form's words."""
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"])
    with pytest.raises(sweeper.SweeperError) as raised:
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                       meta={"VEC": 4, "block_size_x": 128}, grid="cdiv(n, block * VEC)",
                       reference=lambda src: src.clone())
    assert str(raised.value).startswith("kernel copy: meta: block_size_x: sweeper defines "
                                        "block_size_x itself")


def test_a_cuda_grid_reading_block_size_x_is_told_to_read_block(cu_space, capsys):
    """A Kernel Tuner user's grid (``grid_div_x``'s ``block_size_x``) in a CUDA C space:
    every compile defines ``block_size_x`` and a grid reads ``block_size_y`` as it is, so
    the refusal says the block is read as ``block`` here and gives the grid so written,
    where "unknown name" would deny the define; the space form and the Python form alike."""
    grid = "  grid: ['cdiv(n, block_size_x * VEC)']\n"
    path = cu_space(space_text().replace("  VEC: [1, 4]\n", "  VEC: [1, 4]\n" + grid))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    said = ("'cdiv(n, block_size_x * VEC)' reads block_size_x, which each compile defines for "
            "the kernel's source (blockDim.x) but an expression reads as block, the axis it is "
            "swept as; block_size_y and block_size_z keep Kernel Tuner's names: write "
            "'cdiv(n, block * VEC)'")
    assert capsys.readouterr().err == f"{path}:12: params.grid[0]: {said}\n"
    path = cu_space(space_text().replace("footprint: [4KiB]\n", "footprint: [4KiB]\n"
                                         "constraints: ['block_size_x * VEC <= 512']\n"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.endswith(
        "constraints[0]: 'block_size_x * VEC <= 512' reads block_size_x, which each compile "
        "defines for the kernel's source (blockDim.x) but an expression reads as block, the "
        "axis it is swept as: write 'block * VEC <= 512'\n")
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"])
    with pytest.raises(sweeper.SweeperError) as raised:
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},
                       grid="cdiv(n, block_size_x * VEC)", reference=lambda src: src.clone())
    assert str(raised.value) == f"kernel copy: grid={said}"


def test_nvrtc_options_are_every_compile_s_its_cache_key_s_and_its_source_s(
        cu_space, tmp_path, monkeypatch):
    """``nvrtc_options`` (Kernel Tuner's ``compiler_options``) go to every compile, after
    the defines, and so into the disk cache's key, and into the study's source hash: a
    kernel compiled otherwise is another kernel.  A kernel without them hashes as it did
    before they were taken."""
    from sweeper.kernels._cuda_build import _defines, precompile
    from sweeper.kernels._cuda_spec import cache_key

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    kernels = {}
    for extra in ("", "\n  nvrtc_options: [-use_fast_math, --fmad=false]"):
        space = load_space(cu_space(space_text(extra=extra)))
        kernels[extra] = load_kernel(space.kernel, space.kernel_options)
    plain, fast = kernels.values()
    config = Config(problem=Problem("float32", 4096), grid=8, block=128, meta={"VEC": 4})
    fast.plan.launch.compiler = FakeCompiler()
    precompile(fast.plan.launch, config)
    flags = fast.plan.launch.compiler.calls[0][1]
    assert flags[flags.index("-Dblock_size_z=1") + 1:][:2] == ("-use_fast_math", "--fmad=false")
    files = fast.plan.launch.files()
    assert cache_key(files, *_defines(fast.plan.launch, config), "sm_90", "12.4") != \
        cache_key(files, *_defines(plain.plan.launch, config), "sm_90", "12.4")
    assert plain.source_hash() != fast.source_hash()
    assert "nvrtc_options ['-use_fast_math', '--fmad=false']" in fast.source()
    assert "nvrtc_options" not in plain.source()
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"],
                          nvrtc_options=["-use_fast_math"])
    assert _defines(launch, config)[1][-1] == "-use_fast_math"


@pytest.mark.parametrize(("options", "at", "said"), [
    ("[-use_fast_math, -DVEC=2]", "[1]", "'-DVEC=2': sweeper sets -D / --define-macro "
     "itself; allowed: a define is an axis: params: {NAME: [value]}"),
    ("[-arch=sm_80]", "[0]", "'-arch=sm_80': sweeper sets -arch / --gpu-architecture "
     "itself; allowed: the GPU's own"),
    ("[-I/usr/include]", "[0]", "'-I/usr/include': -I / --include-path has NVRTC read or "
     "write files sweeper neither hashes nor watches; allowed: a header beside the .cu file"),
    ("[fast]", "[0]", "'fast' is no NVRTC option; allowed: one option a list item, "
     "a name after - or -- and without spaces"),
    ("['-']", "[0]", "'-' is no NVRTC option; allowed: one option a list item, a name "
     "after - or --"),
    ("[--use-pch=F]", "[0]", "'--use-pch=F': -use-pch / --use-pch has NVRTC read or write "
     "files sweeper neither hashes nor watches; allowed: the headers #included"),
    ("[-use_fast_math, --create-pch=F]", "[1]", "'--create-pch=F': -create-pch / "
     "--create-pch has NVRTC read or write files"),
    ("[--pch-dir=D]", "[0]", "'--pch-dir=D': -pch-dir / --pch-dir has NVRTC read or write"),
    ("[--time=F]", "[0]", "'--time=F': -time / --time has NVRTC read or write files "
     "sweeper neither hashes nor watches; allowed: options of the code compiled"),
    ("[--fdevice-time-trace]", "[0]", "'--fdevice-time-trace': -fdevice-time-trace / "
     "--fdevice-time-trace has NVRTC read or write files"),
    ("[-ptx]", "[0]", "'-ptx': -ptx / --ptx has NVRTC make other code than the whole "
     "program's cubin sweeper loads and launches; allowed: options of the code compiled "
     "(-use_fast_math, --fmad=false, -maxrregcount=64), in a whole program (-rdc=false, "
     "NVRTC's default)"),
    ("[-dlto]", "[0]", "'-dlto': -dlto / --dlink-time-opt has NVRTC make other code"),
    ("[-dc]", "[0]", "'-dc': -dc / --device-c has NVRTC make other code"),
    ("[-rdc=true]", "[0]", "'-rdc=true': -rdc / --relocatable-device-code has NVRTC make "
     "other code than the whole program's cubin sweeper loads and launches; allowed: "
     "-rdc=false (NVRTC's default)"),
    ("[--relocatable-device-code=true]", "[0]", "'--relocatable-device-code=true': -rdc / "
     "--relocatable-device-code has NVRTC make other code"),
    ("['-Xptxas -v']", "[0]", "'-Xptxas -v' is no NVRTC option"),
    # each by its short name as by its long one, as NVRTC documents them
    ("[-pch]", "[0]", "'-pch': -pch / --pch has NVRTC read or write files sweeper neither "
     "hashes nor watches; allowed: the headers #included"),
    ("[--pch]", "[0]", "'--pch': -pch / --pch has NVRTC read or write files"),
    ("[-gen-opt-lto]", "[0]", "'-gen-opt-lto': -gen-opt-lto / --gen-opt-lto has NVRTC make "
     "other code"),
    ("[--extensible-whole-program]", "[0]", "'--extensible-whole-program': -ewp / "
     "--extensible-whole-program has NVRTC make other code"),
    # ptxas's options through -Xptxas= (--ptxas-options=), checked one by one
    ("[-use_fast_math, '-Xptxas=-o=k.cubin']", "[1]", "'-Xptxas=-o=k.cubin': -o / "
     "--output-file has ptxas read or write files sweeper neither hashes nor watches; "
     "allowed: ptxas options of the code assembled (-Xptxas=-v, -Xptxas=--warn-on-spills)"),
    # NVRTC hands -Xptxas's value on as one option: a list is one ptxas refuses
    ("[-use_fast_math, '-Xptxas=-v,--warn-on-spills']", "[1]", "'-Xptxas=-v,--warn-on-spills'"
     ": NVRTC passes ptxas its value as one option, which ptxas refuses; allowed: one ptxas "
     "option a -Xptxas= ([-Xptxas=-v, -Xptxas=--warn-on-spills])"),
    ("['--ptxas-options=--options-file=f']", "[0]", "'--ptxas-options=--options-file=f': "
     "-optf / --options-file has ptxas read or write files"),
    ("['-Xptxas=--compile-only']", "[0]", "'-Xptxas=--compile-only': -c / --compile-only "
     "has ptxas make other code than the whole program's cubin sweeper loads and launches"),
    ("['-Xptxas=-e']", "[0]", "'-Xptxas=-e': -e / --entry has ptxas make other code"),
    ("['-Xptxas=--preserve-relocs']", "[0]", "'-Xptxas=--preserve-relocs': "
     "-preserve-relocs / --preserve-relocs has ptxas make other code"),
    ("['-Xptxas=-arch=sm_80']", "[0]", "'-Xptxas=-arch=sm_80': sweeper sets -arch / "
     "--gpu-name itself"),
    ("[-Xptxas]", "[0]", "'-Xptxas' passes ptxas no option; allowed: -Xptxas=OPTION "
     "(-Xptxas=-v, -Xptxas=--maxrregcount=64)"),
    ("[--std=c++14]", "[0]", "'--std=c++14': sweeper sets -std / --std itself"),
    ("-use_fast_math", "", "'-use_fast_math' is no list of NVRTC options; allowed: up to 32 "
     "options, such as [-use_fast_math, --fmad=false]"),
])
def test_an_nvrtc_option_sweeper_sets_or_none_is_refused_at_its_line(cu_space, capsys,
                                                                     options, at, said):
    """An option sweeper gives every compile itself (a define, the arch, the language), one
    that has NVRTC read or write files sweeper does not hash (headers, precompiled ones,
    a timing file), one that has it make other code than the cubin sweeper loads (PTX,
    relocatable or link-time code), and what is no option are refused where they are
    written; so is each in ``sweeper.cuda``'s ``nvrtc_options``."""
    path = cu_space(space_text(extra=f"\n  nvrtc_options: {options}"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:9: kernel.nvrtc_options{at}: {said}"), err
    assert err.count("\n") == 1
    import yaml

    given = yaml.safe_load(options)
    with pytest.raises(sweeper.SweeperError, match=rf"^sweeper\.cuda: nvrtc_options"
                       rf"{re.escape(at)}: {re.escape(said)}"):
        sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"], nvrtc_options=given)


def test_a_whole_program_s_nvrtc_options_pass():
    """What is refused is what changes the files read or the code made: a whole program
    (``-rdc=false``, NVRTC's default) and options of the code compiled pass."""
    from sweeper.kernels._cuda_spec import nvrtc_option_problem

    assert nvrtc_option_problem(["-rdc=false", "--relocatable-device-code=false",
                                 "-use_fast_math", "--fmad=false", "-maxrregcount=64",
                                 "-Xptxas=-v", "-lineinfo"]) is None
    # options of the code NVRTC compiles and ptxas assembles, whichever name they go by
    assert nvrtc_option_problem(["-dw", "--device-w", "-pch-verbose=true", "-G", "-dopt=on",
                                 "--ptxas-options=--warn-on-spills", "--ptxas-options=-O3",
                                 "-Xptxas=--maxrregcount=64", "-Xptxas=--def-load-cache=ca",
                                 "--extra-device-vectorization", "-split-compile=4",
                                 "-jtd=50"]) is None


def test_a_tolerance_option_checks_the_outputs_at_it(cu_space):
    """Kernel Tuner's ``atol``: a float32 sum over a long loop lands further from torch's
    than ``assert_close``'s default allows, so a space gives its own (rtol, atol) per
    dtype, its numbers as YAML 1.1 reads ``1e-4`` (a string) too; outputs within it pass
    the check, and only the dtypes it names change."""
    from sweeper.kernels._tensors import TOLERANCES

    def checked(extra: str) -> tuple[Any, str | None]:
        space = load_space(cu_space(space_text(extra=extra)))
        kernel = load_kernel(space.kernel, space.kernel_options)
        buffers = kernel.allocate(Problem("float32", 4096), "cpu")
        kernel.randomize(buffers, torch.Generator().manual_seed(0))
        buffers["dst"].copy_(buffers["src"] * (1 + 5e-5))      # off by 5e-5 of each
        return kernel.plan.tolerances, kernel.check(buffers)

    tolerances, wrong = checked("")
    assert tolerances == TOLERANCES
    assert wrong is not None and "elements differ" in wrong
    tolerances, wrong = checked("\n  tolerance: {fp32: [1e-4, 1e-5]}")
    assert wrong is None
    assert tolerances == {**TOLERANCES, "float32": (1e-4, 1e-5)}


def test_a_cuda_kernel_that_declares_its_flops_may_lead_its_reports_with_tflops(cu_space):
    """A compute-bound CUDA kernel (Kernel Tuner's GFLOP/s metric) heads its reports with
    TFLOP/s where the space says so; GB/s stays the default."""
    from sweeper.kernels import Headline

    for extra, headline in (("\n  flops: 'n'", Headline.GBPS),
                            ("\n  flops: 'n'\n  headline: tflops", Headline.TFLOPS)):
        space = load_space(cu_space(space_text(extra=extra)))
        kernel = load_kernel(space.kernel, space.kernel_options)
        assert kernel.headline is headline
        assert kernel.flops(Problem("float32", 4096)) == 1024


def test_a_source_not_in_utf8_is_refused_as_the_space_is_read(cu_space, capsys):
    """NVRTC is given the source's text: one saved in Latin-1 would fail every config's
    compile with a UnicodeDecodeError, so it is refused at kernel.source instead."""
    path = cu_space(space_text())
    (path.parent / "copy.cu").write_bytes(b"// 5 \xb5s a launch\n" + COPY_CU.read_bytes())
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{path}:3: kernel.source: {path.parent / 'copy.cu'} is not UTF-8 text (byte 5: "
        "invalid start byte); allowed: a source saved as UTF-8, as NVRTC is given it\n")


def test_a_reference_file_is_read_beside_the_space_and_called_with_the_inputs(cu_space):
    folder = cu_space(space_text()).parent
    (folder / "ref.py").write_text("def copied(src):\n    return src + 0\n")
    space = load_space(cu_space(space_text().replace('"torch:clone"', "ref.py:copied")))
    assert dict(space.kernel_options)["reference"] == f"{folder / 'ref.py'}:copied"
    kernel = load_kernel(space.kernel, space.kernel_options)
    buffers = kernel.allocate(Problem("float32", 64), "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    assert torch.equal(kernel.expected(buffers)["dst"], buffers["src"])
    assert kernel.needs_gpu and "extern \"C\" __global__ void copy" in kernel.source()


def test_a_refuse_file_is_read_beside_the_space_and_turns_configs_down(cu_space, capsys):
    """``refuse: limits.py:fits`` is the short form's ``refuse=``: called with each config,
    its reason is the kernel's refusal (a raise or no reason is a bug that fails the
    config's trial, saying so: :class:`~sweeper.errors.RefusalFailed`); it
    is part of the kernel's source, and one that cannot take the config is refused at
    its line."""
    folder = cu_space(space_text()).parent
    (folder / "limits.py").write_text(
        "def fits(config):\n"
        "    if config.meta['VEC'] == 4:\n"
        "        return 'VEC=4 needs n to be a multiple of 4'\n"
        "    return 1 // (config.meta['VEC'] - 2) and None\n"
        "def takes_two(config, device):\n"
        "    return None\n")
    space = load_space(cu_space(space_text(extra="\n  refuse: limits.py:fits")))
    assert dict(space.kernel_options)["refuse"] == f"{folder / 'limits.py'}:fits"
    kernel = load_kernel(space.kernel, space.kernel_options)
    problem = Problem("float32", 4096)

    def refusal(vec: int) -> str | None:
        return kernel.refusal(Config(problem=problem, grid=4, block=128, meta={"VEC": vec}),
                              "cuda")
    assert refusal(1) is None
    assert refusal(4) == "VEC=4 needs n to be a multiple of 4"
    with pytest.raises(RefusalFailed) as failed:
        refusal(2)
    assert str(failed.value).startswith("the kernel's refuse= raised ZeroDivisionError: "
                                        "integer division or modulo by zero (at limits.py:4: ")
    assert "// refuse limits.py:fits\n" in kernel.source()     # not where the project lies
    path = cu_space(space_text(extra="\n  refuse: limits.py:takes_two"))
    assert main(["run", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{path}:9: kernel.refuse: {folder / 'limits.py'}:takes_two cannot take the call it "
        "gets, refuse(config): missing a required argument: 'device'; give it one "
        "parameter, the config\n")


@pytest.mark.parametrize("form", ["file.py", "module"])
def test_the_refuse_and_reference_files_are_part_of_the_kernels_source(cu_space, monkeypatch,
                                                                      form):
    """A ``refuse:`` or ``reference:`` file decides what runs and what is right, as the
    ``.cu`` file does: its text is part of the kernel's source (an edit is a new source
    hash) and the sweep watches it (``source_files``).  So does the file of a
    ``module:function``'s module where it is the user's own (found as its import finds
    it, beside the space file first; read again, not imported again); a library's
    (``torch:clone``) is not."""
    folder = cu_space(space_text()).parent
    monkeypatch.chdir(folder)
    (folder / "cu_limits.py").write_text("def fits(config):\n    return None\n")
    (folder / "cu_check.py").write_text("def copied(src):\n    return src.clone()\n")
    suffix = ".py" if form == "file.py" else ""
    try:
        space = load_space(cu_space(space_text(extra=f"\n  refuse: cu_limits{suffix}:fits")
                                    .replace("torch:clone", f"cu_check{suffix}:copied")))
    finally:                                # a module's is imported as the space is read
        for name in ("cu_limits", "cu_check"):
            sys.modules.pop(name, None)
    if form == "file.py":
        assert dict(space.kernel_options)["reference"] == f"{folder / 'cu_check.py'}:copied"

    def kernel():
        return load_kernel(space.kernel, space.kernel_options)
    before = kernel()
    files = before.source_files()
    assert {folder / "cu_limits.py", folder / "cu_check.py", folder / "copy.cu"} <= set(files)
    hashes = [before.source_hash()]
    for name, text in (("cu_limits.py", "def fits(config):\n    return 'no'\n"),
                       ("cu_check.py", "def copied(src):\n    return src * 1\n")):
        (folder / name).write_text(text)
        hashes.append(kernel().source_hash())
        assert before.source_hash() == hashes[-1]      # its source reads the files now
    assert len(set(hashes)) == 3
    plain = load_space(cu_space(space_text()))
    torch_folder = Path(torch.__file__).parent
    assert not any(p.is_relative_to(torch_folder) for p in
                   load_kernel(plain.kernel, plain.kernel_options).source_files())


def test_a_refuse_and_reference_module_is_found_beside_the_space_from_any_folder(
        cu_space, tmp_path, monkeypatch):
    """A ``module:function`` refuse or reference is looked for in the space file's folder
    first (as a ``file.py:function`` is read there) and kept pinned to the folder it is
    found in: from whichever working folder the space is read, or its options hashed
    (as ``sweeper export`` and a lookup hash them), the run imports and the source hash
    reads that one file, never a module of the same name in the working folder; one of
    that name imported already from elsewhere is refused, not run unhashed."""
    from sweeper.errors import SpaceError
    from sweeper.kernels import source_hash_now, source_hash_unrun

    names = ("cu_pinned_limits", "cu_pinned_check")
    path = cu_space(space_text(extra=f"\n  refuse: {names[0]}:fits")
                    .replace("torch:clone", f"{names[1]}:copied"))
    folder, elsewhere = path.parent, tmp_path / "elsewhere"
    elsewhere.mkdir()
    for where, said in ((folder, "beside"), (elsewhere, "elsewhere")):
        (where / f"{names[0]}.py").write_text(
            f"def fits(config):\n    return {said!r} if config.meta['VEC'] == 4 else None\n")
        (where / f"{names[1]}.py").write_text(f"def copied(src):  # {said}\n"
                                              "    return src.clone()\n")

    def forget() -> None:
        for name in names:
            sys.modules.pop(name, None)

    seen = {}
    for cwd in (folder, elsewhere):
        monkeypatch.chdir(cwd)
        try:
            space = load_space(path)                # as a run reads it: imports them
            kernel = load_kernel(space.kernel, space.kernel_options)
            config = Config(problem=Problem("float32", 4096), grid=4, block=128,
                            meta={"VEC": 4})
            assert kernel.refusal(config, "cuda") == "beside"
            files = set(kernel.source_files())
            assert {folder / f"{n}.py" for n in names} <= files
            assert not any(f.is_relative_to(elsewhere) for f in files), files
            options = dict(space.kernel_options)
            seen[cwd] = (options, kernel.source_hash(), source_hash_now("cuda", options),
                         source_hash_unrun("cuda", options.items()))
        finally:
            forget()
    assert seen[folder] == seen[elsewhere]
    options, hashed = seen[folder][0], seen[folder][1]
    assert len({*seen[folder][1:]}) == 1
    assert f"// refuse {names[0]}:fits\n" in load_kernel("cuda", tuple(options.items())) \
        .source()                                   # named as written, wherever it lies
    forget()
    for cwd in (folder, elsewhere, tmp_path.parent):  # hashed as an export or lookup does
        monkeypatch.chdir(cwd)
        assert source_hash_now("cuda", options) == hashed
    monkeypatch.chdir(elsewhere)
    monkeypatch.syspath_prepend(str(elsewhere))
    __import__(names[0])                            # the other one, imported first
    try:
        with pytest.raises(SpaceError, match=f"module {names[0]} is imported from "
                                             f"{elsewhere / names[0]}.py, not "
                                             f"{folder / names[0]}.py"):
            load_space(path)
    finally:
        forget()


def test_the_shipped_cuda_space_plans_and_is_refused_on_the_interpreter(tmp_path, capsys):
    space = ROOT / "spaces" / "cuda-copy.yaml"
    assert main(["plan", str(space)]) == 0                 # for the GPU, assumed or not
    assert "225 configs" in capsys.readouterr().out
    assert main(["plan", str(space), "--device", "interpret"]) == 2
    planned = capsys.readouterr().err
    assert main(["run", str(space), "--device", "interpret", "--studies-dir",
                 str(tmp_path)]) == 2
    assert capsys.readouterr().err == planned == (
        "sweeper: kernel cuda runs on a CUDA GPU only (compiled CUDA C); device interpret "
        "cannot run it: run on a GPU (leave out --device) or replay a recorded table "
        "(--device replay:TABLE.csv)\n")
    assert list(tmp_path.iterdir()) == []                       # nothing written


def test_no_gpu_for_a_cuda_kernel_points_to_a_replay_not_the_interpreter(tmp_path, capsys):
    """Without a GPU the CUDA device's message sends a Triton kernel to the interpreter;
    a ``cuda`` kernel cannot run there, so it is sent to a replay instead."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    space = ROOT / "spaces" / "cuda-copy.yaml"
    assert main(["run", str(space), "--studies-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "sweeper: no CUDA device found, and kernel cuda runs on a CUDA GPU only (compiled "
        "CUDA C): run on a GPU or replay a recorded table (--device replay:TABLE.csv)\n")
    assert list(tmp_path.iterdir()) == []                       # nothing written


USER_CUDA = {
    "called": 'copy = sweeper.kernel(sweeper.cuda("copy.cu", "copy", ["dst", "src", "n"]),\n'
              '                      {declared})\n',
    "named": 'launch = sweeper.cuda("copy.cu", "copy", ["dst", "src", "n"])\n'
             'copy = sweeper.kernel(launch, {declared})\n',
    "curried": 'copy = sweeper.kernel({declared})(\n'
               '    sweeper.cuda("copy.cu", "copy", ["dst", "src", "n"]))\n',
}


def user_cuda_module(folder: Path, module: str, form: str = "called", more: str = "") -> None:
    """A user's module ``module`` in ``folder`` whose kernel ``copy`` launches
    ``sweeper.cuda`` on a copy of examples/copy.cu beside it, declared in ``form`` (a key
    of :data:`USER_CUDA`) with ``more`` keywords of ``sweeper.kernel``'s."""
    shutil.copy(COPY_CU, folder / "copy.cu")
    declared = ('inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4}, ' + more +
                'grid="cdiv(n, block * VEC)", reference=lambda src: src.clone()')
    (folder / f"{module}.py").write_text(
        "import sweeper\n\n" + USER_CUDA[form].format(declared=declared))


@pytest.mark.parametrize("form", USER_CUDA)
def test_a_users_sweeper_cuda_kernel_is_gpu_only_to_plan_and_run_as_cuda_is(
        tmp_path, monkeypatch, capsys, form):
    """A short kernel whose launch is ``sweeper.cuda(...)`` is compiled CUDA C as the
    built-in ``cuda`` is: ``plan`` (which reads its source, importing nothing) and ``run``
    refuse it on the interpreter in the same one line, writing nothing."""
    module = f"usercuda_{form}"
    user_cuda_module(tmp_path, module, form)
    (tmp_path / "s.yaml").write_text(f"kernel: {module}:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  footprint: [4KiB]\n")
    monkeypatch.chdir(tmp_path)
    cannot = (f"kernel {module}:copy runs on a CUDA GPU only (compiled CUDA C); device "
              "interpret cannot run it")
    refused = (f"sweeper: {cannot}: run on a GPU (leave out --device) or replay a recorded "
               "table (--device replay:TABLE.csv)\n")
    assert main(["plan", "s.yaml", "--device", "interpret"]) == 2
    assert capsys.readouterr() == ("", refused)
    assert main(["run", "s.yaml", "--device", "interpret", "--studies-dir", "st"]) == 2
    assert capsys.readouterr().err == refused
    assert not (tmp_path / "st").exists()


@pytest.mark.parametrize("form", ["called", "named"])
def test_a_users_sweeper_cuda_kernel_takes_any_block_read_or_imported(tmp_path, monkeypatch,
                                                                      form):
    """A short kernel launching ``sweeper.cuda`` takes the blocks a CUDA C launch takes,
    as ``plan`` reads its module (importing nothing) and as ``run`` imports it."""
    module = f"anyblock_{form}"
    user_cuda_module(tmp_path, module, form, "block=48, ")
    (tmp_path / "s.yaml").write_text(f"kernel: {module}:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  block: [16, 96]\n  footprint: [4KiB]\n")
    monkeypatch.chdir(tmp_path)
    for user_code in (False, True):
        space = load_space(tmp_path / "s.yaml", user_code=user_code)
        assert space.choices()["block"] == ("16", "96"), user_code
        assert space.launch_shape.allows(48)


@pytest.mark.parametrize("form", USER_CUDA)
def test_a_users_sweeper_cuda_file_is_found_read_or_imported_alike(tmp_path, monkeypatch,
                                                                    request, form):
    """The ``.cu`` file a ``sweeper.cuda`` launch compiles, which a lookup, an export and
    a resume find the includes of to name one gone (:func:`~sweeper.kernels.cuda_source`):
    read from its module's source (never run) and from the kernel once imported alike,
    beside the module; a source only running the module gives is not guessed."""
    import importlib

    from sweeper.kernels import cuda_source

    module = f"usercuda_found_{form}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    user_cuda_module(tmp_path, module, form)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = (tmp_path / "copy.cu").resolve()
    assert cuda_source(f"{module}:copy") == found and module not in sys.modules
    importlib.import_module(module)
    assert cuda_source(f"{module}:copy") == found
    assert cuda_source("cuda") is None and cuda_source("copy") is None

    computed = f"usercuda_computed_{form}"
    request.addfinalizer(lambda: sys.modules.pop(computed, None))
    text = (tmp_path / f"{module}.py").read_text()
    (tmp_path / f"{computed}.py").write_text(text.replace('"copy.cu"', '"copy" + ".cu"'))
    assert cuda_source(f"{computed}:copy") is None
    importlib.import_module(computed)
    assert cuda_source(f"{computed}:copy") == found


def _tuned_user_cuda(tmp_path: Path, monkeypatch: Any, module: str, form: str) -> Path:
    """A user's ``sweeper.cuda`` kernel ``MODULE:copy`` (its entry named as the built-in
    Triton ``copy`` is) in blocks of 48 threads, run on a replay and exported: the
    tuning file (the working folder is ``tmp_path``)."""
    user_cuda_module(tmp_path, module, form, "block=48, ")
    (tmp_path / "s.yaml").write_text(f"kernel: {module}:copy\nparams:\n  VEC: [1, 4]\n"
                                     "  block: [48]\n  footprint: [4KiB]\n")
    rows = [f'{vec},48,cold,float32,4KiB,"cdiv(n, block * VEC)",ok,{ms},{ms} {ms} {ms}'
            for vec, ms in ((1, 0.01), (4, 0.008))]
    (tmp_path / "t.csv").write_text(
        "# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 62914560\n"
        f"# kernel: {module}:copy\nVEC,block,cache,dtype,footprint,grid,status,median_ms,"
        "samples_ms\n" + "\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["run", "s.yaml", "--device", "replay:t.csv", "--studies-dir", "st",
                 "--quiet", "--no-report"]) == 0
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    return tmp_path / "tuning.json"


def test_a_users_cuda_kernel_named_as_a_built_in_is_looked_up_in_its_own_blocks(
        tmp_path, monkeypatch, request):
    """A tuning entry's block is checked as its kernel's launch takes it, the kernel
    told by the ``module:attr`` path it was tuned by: a ``sweeper.cuda`` kernel whose
    entry is ``copy`` is no built-in Triton ``copy``, and its block of 48 threads is
    looked up, not refused as no count of warps."""
    module = "usercuda_named_copy"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    tuning = _tuned_user_cuda(tmp_path, monkeypatch, module, "called")
    cfg = sweeper.tuned(f"{module}:copy", dtype="float32", footprint="4KiB",
                        gpu="NVIDIA H200", path=tuning)
    assert (cfg.block, cfg.meta) == (48, {"VEC": 4})
    data = json.loads(tuning.read_text())
    data["entries"][0]["block"] = 2048                  # still checked: no CUDA block
    tuning.write_text(json.dumps(data))
    with pytest.raises(sweeper.SweeperError, match="block is 2048; allowed: 1 to 1024"):
        sweeper.tuned(f"{module}:copy", dtype="float32", footprint="4KiB",
                      gpu="NVIDIA H200", path=tuning)


@pytest.mark.parametrize("form", USER_CUDA)
def test_a_users_sweeper_cuda_kernel_s_tuned_line_gives_no_warps(tmp_path, monkeypatch,
                                                                   capsys, request, form):
    """``sweeper tuned``'s line gives a Triton kernel's block with its ``num_warps``; a
    CUDA C block (``cuda``, a ``sweeper.cuda`` kernel, read from its module's source or
    imported) has none: 48 threads are no 1 warp."""
    module = f"usercuda_tuned_{form}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    _tuned_user_cuda(tmp_path, monkeypatch, module, form)
    for imported in (True, False):
        if not imported:
            sys.modules.pop(module, None)
        capsys.readouterr()
        assert main(["tuned", f"{module}:copy", "--footprint", "4KiB", "--gpu", "NVIDIA H200",
                     "--tuning", "tuning.json"]) == 0
        out = capsys.readouterr().out
        assert " block=48 VEC=4; tuned at 4KiB" in out and "num_warps" not in out, out
    from sweeper.kernels import launches_warps

    assert not launches_warps(f"{module}:copy")
    assert launches_warps("copy") and not launches_warps("cuda")
    assert launches_warps("tests.short_kernels_for_tests:tires")


def test_plan_counts_a_users_sweeper_cuda_kernels_binaries_as_nvrtcs(tmp_path, monkeypatch,
                                                                       capsys):
    """A user kernel launching ``sweeper.cuda`` compiles through NVRTC, one binary per
    block, meta-parameters and dtype, not Triton's one per problem too."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    declared = ('inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4}, '
                'grid="cdiv(n, block * VEC)", reference=lambda src: src.clone()')
    (tmp_path / "usercuda_binaries.py").write_text(
        "import sweeper\n\n" + USER_CUDA["called"].format(declared=declared))
    (tmp_path / "s.yaml").write_text("kernel: usercuda_binaries:copy\nparams:\n"
                                     "  VEC: [1, 4]\n  footprint: [4KiB, 8KiB]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "s.yaml", "--studies-dir", "st"]) == 0
    assert "2 binaries: 0 compiled on this machine already (a load each), 2 to compile " \
        "(NVRTC's, per cache key)" in capsys.readouterr().out


def test_sweeper_kernels_lists_cuda(capsys):
    assert main(["kernels"]) == 0
    assert "cuda (built-in): a CUDA C/C++ kernel from a .cu file, compiled through NVRTC " \
        "with the swept axes as -D defines (needs a GPU and cupy)" in capsys.readouterr().out


def test_sweeper_kernels_says_a_users_sweeper_cuda_kernel_is_cuda_c_and_where_it_runs(
        tmp_path, monkeypatch, capsys):
    """``sweeper kernels mod:attr`` of a kernel launching ``sweeper.cuda`` says it is
    compiled CUDA C, which runs on a CUDA GPU only (or a replay), as the built-in's does."""
    user_cuda_module(tmp_path, "usercuda_listed")
    monkeypatch.syspath_prepend(tmp_path)
    runs_on = ("  runs on: compiled CUDA C (NVRTC, through cupy): a CUDA GPU only; without "
               "one, a replay of a recorded table (--device replay:TABLE.csv)\n")
    for name in ("usercuda_listed:copy", "cuda"):
        assert main(["kernels", name]) == 0
        assert capsys.readouterr().out.endswith(runs_on)
        assert main(["kernels", name, "--json"]) == 0
        (entry,) = json.loads(capsys.readouterr().out)
        assert entry["cuda_c"] and entry["runs_on"].startswith("compiled CUDA C")
    assert main(["kernels", "copy", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert not entry["cuda_c"] and "--device interpret" in entry["runs_on"]


def test_sweeper_cuda_without_a_module_file_reads_the_current_folder(tmp_path, monkeypatch):
    """In a REPL, a notebook or ``python -c`` (no ``__file__``) the source is found where
    ``open()`` would find it, in the current folder, not in its parent."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    monkeypatch.chdir(tmp_path)
    launch = eval('sweeper.cuda("copy.cu", "copy", ["dst", "src", "n"])',
                  {"sweeper": sweeper, "__name__": "__main__"})
    assert launch.source == tmp_path / "copy.cu"


def test_a_cuda_launch_reads_its_files_once_and_again_after_an_edit(tmp_path, monkeypatch):
    """``sweeper.cuda`` reads the source and its includes once, for its checks and the
    launch it returns, whose source text (what a study hashes) and compiles reuse them;
    an edit of any of the files is read again, so a later plan or run sees a new
    source.  (The files were last written a minute before: one written within
    ``SETTLED_NS`` of the read is read again at each ask.)"""
    import os
    import time

    from sweeper.kernels import _cuda_build, _cuda_form

    (tmp_path / "copy.cu").write_text('#include "part.cuh"\n' + COPY_CU.read_text())
    (tmp_path / "part.cuh").write_text("// a helper\n")
    for written in ("copy.cu", "part.cuh"):
        os.utime(tmp_path / written, ns=(time.time_ns() - 60_000_000_000,) * 2)
    reads = []

    def counted(path, seen=()):
        reads.append(path)
        return sources(path, seen)
    monkeypatch.setattr(_cuda_form, "sources", counted)
    monkeypatch.setattr(_cuda_build, "sources", counted)
    launch = sweeper.cuda(tmp_path / "copy.cu", "copy", ["dst", "src", "n"])
    text = launch.kernel_source()
    assert launch.kernel_source() is text and "// a helper" in text
    assert len(reads) == 1
    part = tmp_path / "part.cuh"
    part.write_text("// another helper\n")
    stat = part.stat()
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert "// another helper" in launch.kernel_source()
    assert len(reads) == 2


def test_a_cuda_launch_never_keeps_bytes_an_edit_during_or_right_after_its_read_changed(
        tmp_path, monkeypatch):
    """A launch keeps the bytes it read only under the (mtime, size) its files had
    before the read began: an edit that lands between the read and the stat that follows
    it, or a rewrite of the same size within the timestamp's tick of the last write (its
    mtime unchanged), is read at the next ask, never hidden behind a stamp that already
    shows it.  A file last written well before the read is read once."""
    import os

    from sweeper.kernels import _cuda_build

    cu = tmp_path / "copy.cu"
    old, new = COPY_CU.read_text(), COPY_CU.read_text().replace("copy", "kopy")
    assert len(old) == len(new) and old != new
    cu.write_text(old)
    launch = _cuda_build.CudaLaunch(cu, "copy", ["dst", "src", "n"], None, __name__)
    edits = [new]

    def edited_after_reading(path, seen=()):
        read = sources(path, seen)
        while edits:                     # the edit lands between the read and the stat
            cu.write_text(edits.pop())
        return read
    monkeypatch.setattr(_cuda_build, "sources", edited_after_reading)
    assert launch.files()[cu].decode() == old           # what was read then
    assert launch.files()[cu].decode() == new           # the edit, at the next ask
    # a rewrite of the same size within one tick: the mtime and size stay as they were
    stat = cu.stat()
    cu.write_text(old)
    os.utime(cu, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cu.stat().st_mtime_ns == stat.st_mtime_ns and cu.stat().st_size == stat.st_size
    assert launch.files()[cu].decode() == old
    assert "kopy" not in launch.kernel_source()
    # a file last written long before the read: its stamp tells an edit, read once
    reads = []

    def counted(path, seen=()):
        reads.append(path)
        return sources(path, seen)
    monkeypatch.setattr(_cuda_build, "sources", counted)
    os.utime(cu, ns=(stat.st_atime_ns, stat.st_mtime_ns - 60_000_000_000))
    text = launch.kernel_source()
    assert launch.kernel_source() is text and launch.files()[cu].decode() == old
    assert len(reads) == 1


def test_sweeper_cuda_says_a_missing_source_is_read_beside_the_module(tmp_path):
    with pytest.raises(sweeper.SweeperError) as raised:
        sweeper.cuda("missing.cu", "copy", ["dst", "src", "n"])
    assert str(raised.value) == (f"sweeper.cuda: no file {Path(__file__).parent}/missing.cu; "
                                 "allowed: a CUDA source file, relative to the folder of "
                                 f"{__file__}")


def test_a_short_kernel_is_described_by_its_launch_s_own_docstring_only(capsys):
    """``sweeper kernels`` describes a short kernel by its launch's docstring: a
    ``sweeper.cuda`` launch, or a ``functools.partial``, has none of its own (its class's
    says nothing of the kernel), so the kernel is described as what it is."""
    import functools

    declared = sweeper.kernel(sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"]),
                              inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},
                              grid="cdiv(n, block * VEC)", reference=lambda src: src.clone())
    assert declared.__doc__ == "The CUDA C kernel 'copy' of copy.cu (sweeper.cuda)."

    def scaled(x, out, config, factor):
        out.copy_(factor * x)

    curried = sweeper.kernel(functools.partial(scaled, factor=2), name="scaled",
                             inputs={"x": "n"}, outputs={"out": "n"}, meta={"BLOCK": 64},
                             reference=lambda x: 2 * x)
    assert curried.__doc__ == "The short kernel 'scaled' (sweeper.kernel)."

    def documented(x, out, config):
        """Doubles x."""
        out.copy_(2 * x)

    assert sweeper.kernel(documented, inputs={"x": "n"}, outputs={"out": "n"},
                          meta={"BLOCK": 64}, reference=lambda x: 2 * x).__doc__ == "Doubles x."


@pytest.mark.parametrize(("call", "said"), [
    ({"source": None}, "source=None; allowed: the .cu file's path, as text or a Path"),
    ({"entry": 5}, "entry=5; allowed: the __global__ function's name, as text"),
    ({"template": 1}, "template=1; allowed: an instantiation of the entry, as text"),
    ({"args": None}, "args=None; allowed: a list of the entry's arguments in order"),
    ({"args": "dst, src, n"}, "args='dst, src, n'; allowed: a list of the entry's arguments"),
    ({"args": ["dst", ["src"]]}, r"args=\['dst', \['src'\]\]; allowed: a list"),
])
def test_sweeper_cuda_refuses_an_argument_of_a_type_it_does_not_take(call, said):
    """A source, entry, template or args of another type is one line saying which and
    what is allowed, not a ``TypeError`` from reading it."""
    given = {"source": "../examples/copy.cu", "entry": "copy", "args": ["dst", "src", "n"],
             **call}
    with pytest.raises(sweeper.SweeperError, match=f"^sweeper\\.cuda: {said}"):
        sweeper.cuda(given.pop("source"), given.pop("entry"), given.pop("args"), **given)


def test_the_python_form_is_a_short_kernel_launching_the_cuda_function():
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n:int64"])
    assert launch.source == COPY_CU and launch.__module__ == __name__
    declared = sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                              meta={"VEC": 4}, grid="cdiv(n, block * VEC)",
                              reference=lambda src: src.clone())
    assert declared.name == "copy" and declared.needs_gpu
    assert "__global__ void copy" in declared().source()
    with pytest.raises(sweeper.SweeperError, match=r"sweeper\.cuda: no file .*nothing\.cu"):
        sweeper.cuda("nothing.cu", "copy", ["dst"])
    with pytest.raises(sweeper.SweeperError, match=r"sweeper\.cuda: no function 'cpy' in "
                       r"copy\.cu .*; allowed: one of its __global__ functions: copy; did "
                       r"you mean 'copy'\?$"):
        sweeper.cuda("../examples/copy.cu", "cpy", ["dst"])
    with pytest.raises(sweeper.SweeperError, match=r"sweeper\.cuda: 'cpy<\{VEC\}>' "
                       r"instantiates cpy, not the entry 'copy'"):
        sweeper.cuda("../examples/copy.cu", "copy", ["dst"], template="cpy<{VEC}>")


@pytest.mark.parametrize(("args", "message"), [
    (["dst", "src", "m"], "argument 'm' is no tensor, dimension or number; known: src, dst, "
     "n, VEC"),
    (["dst", "n"], "tensor 'src' is not passed to the entry; args: dst, n"),
    (["dst", "src", "n:int128"], "argument 'n:int128': type 'int128'; allowed: int32, int64, "
     "uint32, uint64, float32, float64, DTYPE"),
])
def test_a_sweeper_cuda_kernels_args_are_checked_as_it_is_declared(args, message):
    """``sweeper.kernel`` checks a ``sweeper.cuda`` launch's arguments against the declared
    tensors, dimensions and meta-parameters as it builds the kernel, in the space form's
    words: a mistake never waits for the first launch on a GPU."""
    launch = sweeper.cuda("../examples/copy.cu", "copy", args)
    with pytest.raises(sweeper.SweeperError) as raised:
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},
                       grid="cdiv(n, block * VEC)", reference=lambda src: src.clone())
    assert str(raised.value) == f"kernel copy: args: {message}"


@pytest.mark.parametrize(("args", "message"), [
    (["dst", "src", "m"], "argument 'm' is no tensor, dimension or number; known: src, dst, "
     "n, VEC"),
    (["dst", "n"], "tensor 'src' is not passed to the entry; args: dst, n"),
])
def test_a_sweeper_cuda_kernels_args_are_checked_against_a_factorys_tensors(
        monkeypatch, args, message):
    """Tensors from an inputs factory are known only as it makes them: the arguments are
    checked then, in the words of the declared form, before anything compiles; a launch
    called with tensors its arguments do not fit refuses them before it compiles too."""
    from sweeper.kernels import _cuda_build

    launch = sweeper.cuda("../examples/copy.cu", "copy", args)
    declared = sweeper.kernel(launch, inputs=lambda problem: {"src": torch.empty(problem.n)},
                              outputs={"dst": "n"}, meta={"VEC": 4},
                              grid="cdiv(n, block * VEC)", reference=lambda src: src.clone())
    problem = Problem("float32", 4096)
    with pytest.raises(sweeper.SweeperError) as raised:
        declared().allocate(problem, "cpu")
    assert str(raised.value) == f"kernel copy: args: {message}"
    launch.compiler = FakeCompiler()
    monkeypatch.setattr(_cuda_build, "_load", lambda *a: pytest.fail("loaded"))
    config = Config(problem=problem, grid=4, block=128, meta={"VEC": 4})
    with pytest.raises(ValueError, match=f"^args: {re.escape(message)}$"):
        launch(config, src=torch.empty(1024), dst=torch.empty(1024))
    assert launch.compiler.calls == []


# -- on a GPU ------------------------------------------------------------------------------

def _gpu_kernel(tmp_path: Path, source: Path = COPY_CU, extra: str = ""):
    """The example copy (or ``source`` in its place) declared by a space beside it, with
    ``extra`` among its kernel options."""
    shutil.copy(source, tmp_path / "copy.cu")
    (tmp_path / "space.yaml").write_text(space_text(args="[dst, src, 'n:int64']",
                                                    extra=extra))
    space = load_space(tmp_path / "space.yaml")
    return load_kernel(space.kernel, space.kernel_options)


def one_gpu_trial(tmp_path: Path, source: Path = COPY_CU, extra: str = ""):
    """One trial of :func:`_gpu_kernel`'s kernel on the GPU at 4108 B of float32 (a tail
    of three elements past the last vector of four), one warmup and three timed runs."""
    from sweeper.devices import open_device
    from sweeper.trial import run_trial

    kernel = _gpu_kernel(tmp_path, source, extra)
    problem = Problem("float32", 4096 + 12)
    config = Config(problem=problem, grid=8, block=128, meta={"VEC": 4, "UNROLL": 1})
    return run_trial(kernel, kernel.allocate(problem, "cuda"), config, open_device("cuda"),
                     MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                     torch.Generator(device="cuda").manual_seed(0))


@pytest.mark.gpu
@pytest.mark.parametrize("footprint", [4096 + 12, 1 << 30])
@pytest.mark.parametrize("graph", [False, True])
def test_the_example_copy_compiles_runs_and_verifies_on_the_gpu(tmp_path, monkeypatch,
                                                                footprint, graph):
    from sweeper.devices import open_device
    from sweeper.trial import TrialStatus, run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    kernel = _gpu_kernel(tmp_path)
    problem = Problem("float32", footprint)
    for vec in (1, 2, 4):
        config = Config(problem=problem, grid=264, block=256, meta={"VEC": vec, "UNROLL": 2})
        result = run_trial(kernel, kernel.allocate(problem, "cuda"), config,
                           open_device("cuda"),
                           MeasureSpec(warmup=2, repeat=5, stop="fixed", batch=5 if graph
                                       else 1, graph=graph),
                           torch.Generator(device="cuda").manual_seed(0))
        assert result.status is TrialStatus.OK, result.reason


#: Options of each kind ``nvrtc_options`` allows, by their short and long names: NVRTC
#: must take every one, as the space's check lets them through.
ALLOWED_NVRTC = ["-use_fast_math", "--fmad=false", "-lineinfo", "--extra-device-vectorization",
                 "-Xptxas=-v", "--ptxas-options=--warn-on-spills", "--ptxas-options=-O3",
                 "-Xptxas=--maxrregcount=64", "--restrict",
                 "-default-device"]


@pytest.mark.gpu
@pytest.mark.parametrize("option", ALLOWED_NVRTC)
def test_an_allowed_nvrtc_option_compiles_runs_and_verifies_on_the_gpu(tmp_path, monkeypatch,
                                                                        option):
    """An option the space's check allows is one NVRTC takes: the trial's compile is
    given it, and the trial verifies."""
    from sweeper.kernels._cuda_build import NvrtcCompiler
    from sweeper.trial import TrialStatus

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    given: list[tuple[str, ...]] = []
    real = NvrtcCompiler.compile

    def compile(self, source, name, options, entry):
        given.append(tuple(options))
        return real(self, source, name, options, entry)
    monkeypatch.setattr(NvrtcCompiler, "compile", compile)
    result = one_gpu_trial(tmp_path, extra=f"\n  nvrtc_options: [{json.dumps(option)}]")
    assert result.status is TrialStatus.OK, (option, result.reason)
    assert given and all(option in options for options in given), given


@pytest.mark.gpu
def test_a_planted_wrong_cuda_kernel_is_caught_on_the_gpu(tmp_path, monkeypatch):
    from sweeper.trial import TrialStatus

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    wrong = tmp_path / "wrong.cu"
    wrong.write_text(COPY_CU.read_text().replace("dst[i] = src[i];", "dst[i] = 2 * src[i];"))
    result = one_gpu_trial(tmp_path, wrong)                     # the tail is wrong
    assert result.status is TrialStatus.WRONG_ANSWER
    assert result.reason.startswith("output dst: 3 of 1027 elements differ")


@pytest.mark.gpu
def test_the_second_compile_is_a_disk_cache_hit_without_nvrtc(tmp_path, monkeypatch):
    from sweeper.kernels._cuda_build import NvrtcCompiler

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    compiler = NvrtcCompiler()
    options = nvrtc_options({"VEC": 4, "UNROLL": 1}, 256, "float32")
    first = compiled(COPY_CU, "copy", options, compiler)
    meta = json.loads(first.path.with_suffix(".json").read_text())
    assert meta["lowered"] == "copy" and first.path.stat().st_size > 0
    monkeypatch.setattr(compiler, "compile", lambda *a: pytest.fail("NVRTC ran again"))
    assert compiled(COPY_CU, "copy", options, compiler) == first


@pytest.mark.gpu
def test_a_compile_error_is_recorded_and_the_gpu_sweep_goes_on(tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    (tmp_path / "copy.cu").write_text("#if VEC == 2\n#error VEC 2 is refused here\n#endif\n" +
                                      COPY_CU.read_text())
    (tmp_path / "space.yaml").write_text(space_text(args="[dst, src, 'n:int64']").replace(
        "VEC: [1, 4]", "VEC: [1, 2, 4]") + "sampler: exhaustive\n")
    assert main(["run", str(tmp_path / "space.yaml"), "--studies-dir", str(tmp_path / "s"),
                 "--quiet", "--no-report"]) == 3       # measured; some configs did not compile
    rows = [json.loads(line) for line in
            (tmp_path / "s" / "space" / "trials.jsonl").read_text().splitlines()]
    trials = [r for r in rows if r.get("kind") == "trial"]
    statuses = {r["config"]["meta"]["VEC"]: r["status"] for r in trials}
    assert statuses == {1: "ok", 2: "compile_error", 4: "ok"}, statuses
    reason = next(r["reason"] for r in trials if r["status"] == "compile_error")
    assert "VEC 2 is refused here" in reason


@pytest.mark.gpu
def test_a_meta_parameter_args_passes_reaches_the_kernel_on_the_gpu(tmp_path, monkeypatch):
    """A meta-parameter ``args`` passes reaches the entry as the config's ``int``: a copy
    that writes nothing where its argument is not its define's value (an argument passed
    wrong, or of another width) leaves its output poisoned and fails its check."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "copy.cu").write_text(COPY_CU.read_text().replace(
        "long long n) {\n", "long long n, int pad) {\n    if (pad != PAD) return;\n"))
    (tmp_path / "space.yaml").write_text(space_text(args="[dst, src, 'n:int64', PAD]").replace(
        "  VEC: [1, 4]\n", "  VEC: [1, 4]\n  PAD: [1, 2]\n") + "sampler: exhaustive\n")
    assert main(["run", str(tmp_path / "space.yaml"), "--studies-dir", str(tmp_path / "s"),
                 "--quiet", "--no-report"]) == 0
    rows = [json.loads(line) for line in
            (tmp_path / "s" / "space" / "trials.jsonl").read_text().splitlines()]
    assert sorted((r["config"]["meta"]["PAD"], r["status"]) for r in rows
                  if r.get("kind") == "trial") == [(1, "ok"), (1, "ok"), (2, "ok"), (2, "ok")]


def test_a_graph_capture_runs_with_the_garbage_collector_off(monkeypatch):
    """A CUDA C kernel's module collected mid-capture unloads itself, which the driver
    refuses while a stream captures: the capture runs with collection off, and collection
    is back on after it, also where the capture fails."""
    import contextlib
    import gc

    from sweeper.devices._cuda import CudaDevice

    seen: list[bool] = []

    class Graph:
        def replay(self) -> None: ...

    @contextlib.contextmanager
    def graph(cuda_graph, fail=False):
        seen.append(gc.isenabled())
        yield
        if fail:
            raise RuntimeError("capture failed")

    class Stream:
        def wait_stream(self, other) -> None: ...

    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", Stream)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    launches: list[int] = []
    device = object.__new__(CudaDevice)         # no GPU opened: the capture is faked
    assert gc.isenabled()
    replay = device.batched(lambda: launches.append(1), 3, graph=True)
    assert seen == [False] and gc.isenabled() and len(launches) == 1 + 3
    assert replay.__func__ is Graph.replay      # type: ignore[attr-defined]
    monkeypatch.setattr(torch.cuda, "graph", lambda g: graph(g, fail=True))
    with pytest.raises(RuntimeError, match="capture failed"):
        device.batched(lambda: None, 2, graph=True)
    assert seen == [False, False] and gc.isenabled()


def test_an_included_file_is_gone_only_where_the_recorded_hash_read_it(tmp_path):
    """A file the source includes, in code some config compiles, is gone where NVRTC
    would find it nowhere now (beside its includer, in the source's folder) and the
    source hash a study recorded read it (``read_includes``, relative to the ``.cu``
    file's folder), named where it was read, once: a header that hash never read (a
    toolkit's, found in the toolkit's folder, or found nowhere as the study measured) is
    none, as its absence says nothing of why the hash differs now; nor is any where the
    study recorded none (an older sweeper's)."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "k.cu").write_text(
        '#include "sub/mid.cuh"\n#include "gone.cuh"\n#include <own.h>\n'
        '#include "cuda_fp16.h"\n#if 0\n#include "never.cuh"\n#endif\nK\n')
    (sub / "mid.cuh").write_text('#include "deeper.cuh"\n#include "gone.cuh"\n')
    (sub / "deeper.cuh").write_text("// beside its includer\n")
    (tmp_path / "gone.cuh").write_text("// in the source's folder\n")
    (tmp_path / "own.h").write_text("// in the source's folder, in angle brackets\n")
    read = read_includes(sources(tmp_path / "k.cu"))
    assert read == ["sub/mid.cuh", "sub/deeper.cuh", "gone.cuh", "own.h"]
    assert unfound_includes(sources(tmp_path / "k.cu"), read) == ()
    for gone in (tmp_path / "gone.cuh", sub / "deeper.cuh", tmp_path / "own.h"):
        gone.unlink()
    files = sources(tmp_path / "k.cu")
    assert unfound_includes(files, read) == (
        (tmp_path / "gone.cuh").resolve(), (tmp_path / "own.h").resolve(),
        (sub / "deeper.cuh").resolve())
    assert unfound_includes(files, []) == ()
    assert unfound_includes(files, ["gone\0.cuh", "/"]) == ()     # a hostile record: none


def _cuda_replay_study(tmp_path: Path, pads: tuple[int, ...] = ()) -> list[str]:
    """A ``cuda`` space beside a copy.cu that includes part.cuh, and a replay table of its
    two configs: the run command (a replay measures it without a GPU).  ``pads``: a
    meta-parameter axis ``PAD`` of these values too, which ``args`` passes to the entry
    and no define reads (two configs each)."""
    (tmp_path / "copy.cu").write_text('#include "part.cuh"\n' + COPY_CU.read_text())
    (tmp_path / "part.cuh").write_text("// a helper\n")
    text = space_text(args="[dst, src, n, PAD]" if pads else "[dst, src, n]")
    (tmp_path / "s.yaml").write_text(text.replace(
        "  VEC: [1, 4]\n", f"  VEC: [1, 4]\n  PAD: {list(pads)}\n") if pads else text)
    rows = [f'{vec},{pad}128,{cache},float32,4KiB,"cdiv(n, block)",ok,{ms},{ms} {ms} {ms}'
            for vec, ms in ((1, 0.01), (4, 0.008)) for pad in [f"{p}," for p in pads] or [""]
            for cache in ("cold", "warm")]
    (tmp_path / "t.csv").write_text(
        "# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 62914560\n"
        f"# kernel: cuda\nVEC,{'PAD,' if pads else ''}block,cache,dtype,footprint,grid,status,"
        "median_ms,samples_ms\n" + "\n".join(rows) + "\n")
    return ["run", str(tmp_path / "s.yaml"), "--device", f"replay:{tmp_path / 't.csv'}",
            "--studies-dir", str(tmp_path / "st"), "--quiet", "--no-report"]


def _user_cuda_replay_study(tmp_path: Path, module: str, form: str = "called",
                            more: str = "") -> list[str]:
    """A user module ``module`` in ``tmp_path`` whose kernel ``copy`` launches
    ``sweeper.cuda`` on a copy.cu that includes part.cuh (:func:`user_cuda_module`, of
    ``form`` and ``more``), a space of it and a replay table of its two configs: the run
    command, run from ``tmp_path`` (a replay measures it without a GPU)."""
    user_cuda_module(tmp_path, module, form, more)
    source = tmp_path / "copy.cu"
    source.write_text('#include "part.cuh"\n' + source.read_text())
    (tmp_path / "part.cuh").write_text("// a helper\n")
    (tmp_path / "s.yaml").write_text(f"study: s\nkernel: {module}:copy\nparams:\n"
                                     "  VEC: [1, 4]\n  block: [128]\n  footprint: [4KiB]\n")
    rows = [f'{vec},128,{cache},float32,4KiB,"cdiv(n, block * VEC)",ok,{ms},{ms} {ms} {ms}'
            for vec, ms in ((1, 0.01), (4, 0.008)) for cache in ("cold", "warm")]
    (tmp_path / "t.csv").write_text(
        "# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 62914560\n"
        f"# kernel: {module}:copy\nVEC,block,cache,dtype,footprint,grid,status,median_ms,"
        "samples_ms\n" + "\n".join(rows) + "\n")
    return ["run", "s.yaml", "--device", "replay:t.csv", "--studies-dir", "st", "--quiet",
            "--no-report"]


def refused_alike(commands: list[list[str]], capsys: Any, before: Any = None) -> str:
    """The one line each of ``commands`` (a ``plan`` and a ``run`` of one study) refuses
    with (exit 2), the same from each; ``before()``, where given, is called before each
    (a user's module forgotten, as a new process has not imported it)."""
    refused = []
    for command in commands:
        if before is not None:
            before()
        assert main(command) == 2
        refused.append(capsys.readouterr().err)
    assert all(said == refused[0] for said in refused)
    return refused[0]


def _plan_sees_the_edit(run: list[str], edited: Path, capsys: Any, before: Any = None
                        ) -> None:
    """``plan`` of the study ``run`` measured (in full) would measure nothing; after
    ``edited`` is edited, ``plan`` refuses the resume in ``run``'s own line, and with
    ``--force`` counts the configs measured on the earlier source as to measure
    (``before``: as :func:`refused_alike` calls it)."""
    plan = ["plan", *run[1:run.index("--quiet")]]
    capsys.readouterr()
    assert main(plan) == 0
    assert "would measure 0 " in capsys.readouterr().out
    with edited.open("a") as file:
        file.write("// edited\n")
    assert "its kernel's source changed" in refused_alike([plan, run], capsys, before)
    assert main([*plan, "--force"]) == 0
    out = capsys.readouterr().out
    assert "would measure 2 on replay: NVIDIA H200" in out and "kernel_source" in out


@pytest.mark.parametrize("edited", ["copy.cu", "part.cuh"])
def test_plan_sees_an_edit_of_a_cuda_kernels_source_as_run_does(tmp_path, capsys, edited):
    """``plan`` hashes a ``cuda`` kernel's source and what it includes as ``run`` does
    (reading the files, compiling nothing): after an edit of either, without --force it
    refuses in run's own line, and with --force it counts the configs measured on the
    earlier source as to measure."""
    run = _cuda_replay_study(tmp_path)
    assert main(run) == 0
    _plan_sees_the_edit(run, tmp_path / edited, capsys)


@pytest.mark.parametrize("form", USER_CUDA)
@pytest.mark.parametrize("edited", ["copy.cu", "part.cuh"])
def test_plan_sees_an_edit_of_a_sweeper_cuda_kernels_files_as_run_does(
        tmp_path, monkeypatch, capsys, request, form, edited):
    """A user kernel launching ``sweeper.cuda`` is hashed by ``plan`` as ``run`` hashes
    it (the value its study records), its module read, never imported: the module's
    text, then the ``.cu`` file it names and what that includes, the entry, the
    arguments and the NVRTC options, in each form the declaration is written.  After an
    edit of the ``.cu`` file or a file it includes, ``plan`` refuses the resume in
    ``run``'s own line; with ``--force`` it counts the configs measured on the earlier
    source as to measure."""
    from sweeper.kernels import source_hash_unrun

    module = f"planedit_{form}_{edited.replace('.', '_')}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    monkeypatch.chdir(tmp_path)
    run = _user_cuda_replay_study(tmp_path, module, form)
    declared = tmp_path / f"{module}.py"
    declared.write_text(declared.read_text().replace(
        '"n"])', '"n"],\n                     nvrtc_options=["-use_fast_math"])'))
    assert main(run) == 0
    recorded = json.loads((tmp_path / "st" / "s-replay" / "study.json").read_text())
    del sys.modules[module]                 # plan, as in a new process: the module read
    assert source_hash_unrun(f"{module}:copy") == recorded["kernel_source_hash"]
    assert module not in sys.modules
    _plan_sees_the_edit(run, tmp_path / edited, capsys,
                        lambda: sys.modules.pop(module, None))


def test_a_resume_after_an_included_file_is_gone_names_it_not_an_edit(tmp_path, capsys):
    """A ``cuda`` study whose ``.cu`` file includes a file deleted since (its study
    recorded it beside the source hash) is refused a resume, by ``run`` and ``plan`` in
    one line, naming that file and saying to put it back, or what ``--force`` and
    ``--study`` do; not called an edit of the kernel's source, and nothing is written.
    Put back, the study resumes as it was."""
    run = _cuda_replay_study(tmp_path)
    plan = ["plan", *run[1:run.index("--quiet")]]
    assert main(run) == 0
    study = tmp_path / "st" / "s-replay"
    kept = {p.name: p.read_bytes() for p in study.iterdir() if p.is_file()}
    part = (tmp_path / "part.cuh").resolve()
    text = part.read_text()
    part.unlink()
    capsys.readouterr()
    assert re.fullmatch(
        rf"sweeper: {re.escape(str(study))}: cannot resume, its kernel's source cannot be "
        rf"found as it was measured \({re.escape(str(part))} is gone: moved, renamed or "
        r"removed since; kernel_source: '\w+' -> '\w+'\); put it back where the space or "
        r"the files it names find it, or rerun with --force to keep its trials and measure "
        r"its configs again on this source \(.*\), or with --study NEW to measure this "
        r"source in a new study\n", refused_alike([plan, run], capsys))
    assert {p.name: p.read_bytes() for p in study.iterdir() if p.is_file()} == kept
    part.write_text(text)
    assert main(run) == 0
    assert "done: 0 measured" in capsys.readouterr().out


@pytest.mark.parametrize("where", ["module", "notebook"])
def test_a_sweeper_cuda_kernels_source_hash_follows_an_edit_in_the_same_process(
        tmp_path, monkeypatch, where):
    """A kernel declared with ``sweeper.kernel(sweeper.cuda(...))`` hashes the CUDA text it
    compiles as a study asks (its launch's files, read again after an edit), not the text
    of when it was declared: a notebook that edits the ``.cu`` file and runs again in the
    same process records the new source, as a new process would.  In a notebook (a
    ``__main__`` without a file) the text is hashed too."""
    import os
    import types

    cu = tmp_path / "copy.cu"
    cu.write_text(COPY_CU.read_text())
    cell = ('copy = sweeper.kernel(sweeper.cuda(cu, "copy", ["dst", "src", "n"]), '
            'inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4}, '
            'grid="cdiv(n, block * VEC)", reference=torch.clone)\n')
    if where == "notebook":
        monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))

    def declare() -> Any:
        scope = {"sweeper": sweeper, "torch": torch, "cu": cu,
                 "__name__": "__main__" if where == "notebook" else __name__}
        if where == "module":
            scope["__file__"] = __file__
        exec(cell, scope)
        return scope["copy"]

    declared = declare()
    before = declared().source_hash()
    cu.write_text(COPY_CU.read_text() + "// edited\n")
    stat = cu.stat()
    os.utime(cu, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    kernel = declared()
    assert "// edited" in kernel.source() and kernel.source_hash() != before
    assert kernel.source_hash() == declare()().source_hash()


def test_a_notebook_kernels_source_hash_holds_in_a_new_process_and_follows_an_edit(
        tmp_path, monkeypatch):
    """A kernel declared where no file holds its module (a notebook's ``__main__``) is
    identified by its declaration and its functions' code: the same cell run again (its
    functions new objects at new addresses, as in a new process) gives the same hash, so
    a study resumes; an edited reference gives another.  The declaration's repr alone
    named each function by its address, another in every process."""
    import types

    cu = tmp_path / "copy.cu"
    cu.write_text(COPY_CU.read_text())
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))

    def declare(body: str) -> Any:
        cell = (f"def ref(src):\n    return {body}\n"
                'copy = sweeper.kernel(sweeper.cuda(cu, "copy", ["dst", "src", "n"]), '
                'inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4}, '
                'grid="cdiv(n, block * VEC)", reference=ref)\n')
        scope = {"sweeper": sweeper, "torch": torch, "cu": cu, "__name__": "__main__"}
        exec(cell, scope)
        return scope["copy"]()

    first, again = declare("src.clone()"), declare("src.clone()")
    assert first.source_hash() == again.source_hash()
    assert declare("src.clone() * 1").source_hash() != first.source_hash()


def test_a_header_included_only_where_nothing_is_compiled_is_no_part_of_the_source(tmp_path):
    """The files a CUDA source is (what a study hashes, what the compile cache keys on)
    are those its code includes as the preprocessor reads it: a header included only
    inside ``#if 0`` or a comment is compiled by no config, so an edit of it is no new
    source; one included in code that may be compiled is."""
    source = tmp_path / "copy.cu"
    source.write_text('#if 0\n#include "old.cuh"\n#endif\n/* before the split:\n'
                      '#include "gone.cuh"\n*/\n#ifdef SOMETIMES\n#include "part.cuh"\n'
                      '#endif\n' + COPY_CU.read_text())
    for name in ("old.cuh", "gone.cuh", "part.cuh"):
        (tmp_path / name).write_text(f"// {name}\n")
    assert [p.name for p in sources(source)] == ["copy.cu", "part.cuh"]
    text = sweeper.cuda(source, "copy", ["dst", "src", "n"]).kernel_source()
    assert "// part.cuh" in text and "// old.cuh" not in text and "// gone.cuh" not in text


def test_a_cuda_space_reads_its_source_once_as_it_is_parsed(cu_space, monkeypatch):
    """Parsing a ``cuda`` space reads the source and its includes once: the kernel's
    declaration reads them for its checks and hands them to its launch, whose source
    (what a study hashes) reuses them; the ``source`` option is checked to name a file
    as the space is read, its text as the declaration reads it.  (The source was last
    written a minute before: one written within ``SETTLED_NS`` of the read is read again
    at each ask.)"""
    import os
    import time

    from sweeper.kernels import _cuda_build, _cuda_form

    path = cu_space(space_text())
    os.utime(path.parent / "copy.cu", ns=(time.time_ns() - 60_000_000_000,) * 2)
    reads = []

    def counted(source, seen=(), **kwargs):
        reads.append(source)
        return sources(source, seen, **kwargs)
    monkeypatch.setattr(_cuda_form, "sources", counted)
    monkeypatch.setattr(_cuda_build, "sources", counted)
    assert dict(load_space(path).kernel_options)["entry"] == "copy"
    assert reads == [path.parent / "copy.cu"]
