"""A ``cuda`` kernel's launch in two and three dimensions, as Kernel Tuner writes its
kernels: ``block_size_y`` and ``block_size_z`` (axes, defines and ``blockDim.y``/``.z``),
``grid_y`` and ``grid_z`` (launch axes over the problem's dimensions and the axes, no
define), the rule on a block's threads, and the extents carried through records,
reports, exports and lookups.  Without a GPU: the launch tuple, the space's checks and a
replayed study.  The GPU half is at the end, marked ``gpu``: a 2-D tiled matmul compiled,
checked against torch and swept, a block of 48 threads among its configs."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch

import sweeper
from sweeper.cli import main
from sweeper.errors import TuningWarning
from sweeper.kernels import MetaParam, load_kernel
from sweeper.kernels._cuda_build import _defines, launch_dims
from sweeper.space import AxisRole, Config, Invalid, MeasureSpec, Problem, load_space
from sweeper.store import TrialRecord
from sweeper.store._schema import record_problem
from sweeper.study import enumerate_choices
from tests.conftest import ROOT

#: C[M, N] = A[M, K] @ B[K, N] in float32, row-major, written as Kernel Tuner's examples
#: are: a block of block_size_x × block_size_y threads computes block_size_x columns of
#: block_size_y * tile_size_y rows, each thread tile_size_y rows of one column, strided by
#: block_size_y; every size a -D define.
MATMUL_CU = """\
extern "C" __global__ void matmul(float *C, const float *A, const float *B, int M, int N,
                                  int K) {
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y = blockIdx.y * block_size_y * tile_size_y + threadIdx.y;
    if (x >= N) return;
    float sum[tile_size_y];
#pragma unroll
    for (int t = 0; t < tile_size_y; t++) sum[t] = 0.0f;
    for (int k = 0; k < K; k++) {
        float b = B[(long long)k * N + x];
#pragma unroll
        for (int t = 0; t < tile_size_y; t++) {
            int row = y + t * block_size_y;
            if (row < M) sum[t] += A[(long long)row * K + k] * b;
        }
    }
#pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        int row = y + t * block_size_y;
        if (row < M) C[(long long)row * N + x] = sum[t];
    }
}
"""
SPACE = """\
kernel:
  name: cuda
  source: matmul.cu
  entry: matmul
  dims: {{M: 200, N: 120, K: 64}}
  inputs: {{A: "M, K", B: "K, N"}}
  outputs: {{C: "M, N"}}
  args: [C, A, B, M, N, K]
  reference: "torch:matmul"
  footprint_bytes: "M * K * itemsize"
  grid: "cdiv(N, block)"
  grid_y: "cdiv(M, block_size_y * tile_size_y)"
  tolerance: {{float32: [1e-4, 1e-4]}}
params:
  block: [16, 48, 128]
  block_size_y: [1, 4, 16]
  tile_size_y: [1, 2]
{extra}sampler: exhaustive
"""
FACTS = {"sms": 132, "l2_bytes": 62914560}


@pytest.fixture
def matmul_space(tmp_path):
    """A 2-D matmul space beside its .cu file; call with lines to add after params."""
    (tmp_path / "matmul.cu").write_text(MATMUL_CU)

    def write(extra: str = "", text: str | None = None) -> Path:
        (tmp_path / "space.yaml").write_text(text or SPACE.format(extra=extra))
        return tmp_path / "space.yaml"
    return write


def test_the_launch_is_the_configs_grid_and_block_in_x_y_and_z():
    """A config launches ``(grid, grid_y, grid_z)`` blocks of ``(block, block_size_y,
    block_size_z)`` threads, each 1 where the space gives none: a 1-D config launches as
    it always did."""
    problem = Problem("float32", 4096)
    flat = Config(problem=problem, grid=8, block=128, meta={"VEC": 4})
    assert launch_dims(flat) == ((8, 1, 1), (128, 1, 1))
    tall = Config(problem=problem, grid=8, block=16, grid_y=50, grid_z=3,
                  meta={"block_size_y": 4, "block_size_z": 2, "tile_size_y": 2})
    assert launch_dims(tall) == ((8, 50, 3), (16, 4, 2))


def test_a_kernel_tuner_2d_kernel_sweeps_block_size_y_and_launches_its_grid_in_y(
        matmul_space):
    """``block_size_y`` is an axis compiled as its define and launched as ``blockDim.y``;
    ``grid_y`` (here the kernel's option, over the dimensions and the axes) is a launch
    axis that is no define, so a compile serves every problem."""
    space = load_space(matmul_space())
    roles = {a.name: a.role for a in space.axes}
    assert roles["grid_y"] is AxisRole.LAUNCH and roles["block_size_y"] is AxisRole.META
    assert [a.name for a in space.axes][:3] == ["grid", "grid_y", "block"]
    choice = {"block": "48", "block_size_y": "4", "tile_size_y": "2"}
    config = space.resolve(choice, FACTS)
    assert (config.grid, config.grid_y, config.grid_z) == (3, 25, 1)     # cdiv(200, 8)
    assert dict(config.meta) == {"block_size_y": 4, "tile_size_y": 2}
    assert launch_dims(config) == ((3, 25, 1), (48, 4, 1))
    kernel = load_kernel("cuda", space.kernel_options)
    entry, options = _defines(kernel.plan.launch, config)
    assert entry == "matmul" and not any("grid" in o for o in options)
    assert {"-Dblock_size_x=48", "-Dblock_size_y=4", "-Dblock_size_z=1",
            "-Dtile_size_y=2"} <= set(options)


def test_a_block_of_more_than_1024_threads_is_ruled_out_at_its_extent_s_line(
        matmul_space, capsys):
    """``block × block_size_y × block_size_z`` past 1024 threads is no CUDA block: such a
    config is ruled out, never launched, counted at the line of ``block_size_y``'s value,
    as a constraint's configs are at the constraint's, its reason the same for each."""
    path = matmul_space()
    valid, ruled = enumerate_choices(load_space(path), FACTS)
    assert len(valid) == 16 and len(ruled) == 2                # 128 × 16, both tiles
    assert {why for _, why in ruled} == {
        "block × block_size_y must be at most 1024 threads, the most a CUDA block has "
        "(128 × 16 = 2048)"}
    with pytest.raises(Invalid) as raised:
        load_space(path).resolve({"block": "128", "block_size_y": "16", "tile_size_y": "1"},
                                 FACTS)
    assert (raised.value.origin.line, raised.value.origin.path) == (
        16, "params.block_size_y[2]")


@pytest.mark.parametrize(("extra", "line", "said"), [
    ("  block_size_z: [1, 128]\n", "18: params.block_size_z[1]",
     "block_size_z=128; allowed: 1 to 64 (blockDim.z of a CUDA block)"),
    ("  block_size_z: [0]\n", "18: params.block_size_z[0]",
     "block_size_z=0; allowed: 1 to 64 (blockDim.z of a CUDA block)"),
    ("  grid_y: [1, 70000]\n", "18: params.grid_y[1]",
     "70000 blocks; allowed: 1 to 65535 (CUDA's limit in y and z)"),
])
def test_an_extent_no_cuda_launch_takes_is_refused_at_its_line(matmul_space, capsys, extra,
                                                                line, said):
    """A block's extent in y or z, or a grid's, that no launch takes is refused where it
    is written, as a block past 1024 is."""
    path = matmul_space(extra)
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == f"{path}:{line}: {said}\n"


@pytest.mark.parametrize("option", ["grid_y", "grid"])
def test_a_kernel_option_s_grid_of_no_blocks_is_refused_with_an_example_that_runs(
        matmul_space, capsys, option):
    """``grid_y: 0`` (or ``grid``) among the kernel's options is refused at its line with
    an example of what is allowed, not with the 0 it refuses as the example."""
    written = {"grid": '"cdiv(N, block)"', "grid_y": '"cdiv(M, block_size_y * tile_size_y)"'}
    path = matmul_space(text=SPACE.format(extra="").replace(
        f"  {option}: {written[option]}\n", f"  {option}: 0\n"))
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("0 must be positive; allowed: a positive integer or an expression, "
                        "e.g. 1024\n"), err


def test_a_grid_in_y_given_by_an_expression_is_ruled_out_past_cuda_s_limit(matmul_space):
    """An expression resolves config by config: a ``grid_y`` past 65535 blocks is ruled
    out at its value's line, the others run."""
    space = load_space(matmul_space("  grid_y: ['M * 400']\n"))
    with pytest.raises(Invalid, match=r"^grid_y: 80000 blocks; allowed: 1 to 65535 ") as err:
        space.resolve({"block": "16", "block_size_y": "1", "tile_size_y": "1"}, FACTS)
    assert err.value.origin.path == "params.grid_y[0]"


def test_a_block_size_y_is_swept_by_a_1d_kernel_too_without_a_read_of_its_own(
        matmul_space, tmp_path):
    """``block_size_y`` is read by the launch (``blockDim.y``) as well as a define: a kernel
    that indexes its rows by ``blockDim.y`` and names no ``block_size_y`` sweeps it, where
    an axis nothing reads is refused."""
    (tmp_path / "matmul.cu").write_text(MATMUL_CU.replace("block_size_y", "blockDim.y"))
    assert load_space(matmul_space()).choices()["block_size_y"] == ("1", "4", "16")


def test_a_triton_kernel_takes_no_grid_in_y(tmp_path, capsys):
    """A Triton kernel's launch is ``config.grid`` programs: ``grid_y`` is no axis of its,
    refused with the axes it has."""
    path = tmp_path / "copy.yaml"
    path.write_text("kernel: copy\nparams:\n  grid_y: [2]\n  footprint: [4KiB]\n")
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3: params.grid_y: unknown key 'grid_y'; known: grid, "
                          "block, "), err


def test_a_sweeper_cuda_kernel_takes_grid_y_and_a_python_launch_does_not():
    """``sweeper.kernel(sweeper.cuda(...), grid_y=...)`` declares the grid in y its spaces
    default to; a Python launch (a Triton kernel's) has none, and says so."""
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"])
    declared = sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                              meta={"VEC": 4}, grid="cdiv(n, block * VEC)",
                              grid_y="cdiv(n, 1048576)", reference=lambda src: src.clone())
    assert declared.defaults["grid_y"] == "cdiv(n, 1048576)"
    unswept = sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                             meta={"VEC": 4}, grid="cdiv(n, block * VEC * block_size_z)",
                             grid_y="cdiv(n, 1048576 * block_size_y)",
                             reference=lambda src: src.clone())
    assert unswept.defaults["grid_y"] == "cdiv(n, 1048576 * block_size_y)"
    with pytest.raises(sweeper.SweeperError, match=r"^kernel copy: grid_y='cdiv\(n, VECS\)' "
                       r"reads 'VECS', which the kernel does not declare"):
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"VEC": 4},
                       grid="cdiv(n, block * VEC)", grid_y="cdiv(n, VECS)",
                       reference=lambda src: src.clone())

    def copy(src, dst, config):
        dst.copy_(src)

    with pytest.raises(sweeper.SweeperError, match=r"^kernel copy: grid_y=2, but its launch "
                       r"takes a grid in x alone \(config\.grid\)"):
        sweeper.kernel(copy, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"BLOCK": 4},
                       grid_y=2, reference=lambda src: src.clone())


# -- a replayed study ----------------------------------------------------------------------

def _replayed(tmp_path: Path, space_path: Path) -> list[str]:
    """A replay table of every config of the space (the faster, the more threads in y
    and the fewer rows a thread) and the command that runs the study on it."""
    space = load_space(space_path)
    names = [a.name for a in space.axes]
    valid, _ = enumerate_choices(space, FACTS)
    with (tmp_path / "t.csv").open("w", newline="") as file:
        file.write("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n"
                   "# l2_bytes: 62914560\n# kernel: cuda\n")
        writer = csv.writer(file)
        writer.writerow([*names, "status", "median_ms", "samples_ms"])
        for choice in valid:
            ms = 0.01 + 0.001 * int(choice["block"]) / int(choice.get("block_size_y", 1)) + \
                0.0001 * int(choice["tile_size_y"])
            writer.writerow([*(choice[n] for n in names), "ok", ms, f"{ms} {ms} {ms}"])
    return ["run", str(space_path), "--device", f"replay:{tmp_path / 't.csv'}",
            "--studies-dir", str(tmp_path / "st"), "--quiet", "--no-report"]


def test_a_2d_study_records_reports_exports_and_looks_up_its_grid_in_y(matmul_space,
                                                                       tmp_path, capsys):
    """The grid in y goes everywhere the grid does: each trial's record, the study's
    tables and report (beside the meta-parameters, an ordinary parameter, the heatmaps
    staying grid × block), the tuning entry (as the
    expression, for a lookup to compute at another problem, and its value where tuned),
    and ``sweeper.tuned``'s config and line, so the winner launches as it was measured."""
    run = _replayed(tmp_path, matmul_space())
    assert main(run) == 0
    rows = [json.loads(line) for line in
            (tmp_path / "st" / "space-replay" / "trials.jsonl").read_text().splitlines()]
    trials = [r for r in rows if r.get("kind") == "trial" and r["status"] == "ok"]
    assert trials and all(r["config"]["grid_y"] ==
                          -(-200 // (r["config"]["meta"]["block_size_y"] *
                                     r["config"]["meta"]["tile_size_y"])) for r in trials)
    assert all("grid_z" not in r["config"] for r in trials)       # 1: left out
    line = trials[0]
    assert TrialRecord.from_json(line).to_json()["config"] == line["config"]   # as it was
    assert record_problem({**line, "config": {**line["config"], "grid_y": 0}}) == (
        "trial record: config: grid_y 0 is not a count of blocks (at least 1)")
    study = sweeper.load_study(tmp_path / "st" / "space-replay")
    table = study.trials_dataframe()
    assert {"grid_y", "block_size_y", "tile_size_y"} <= set(table.columns)
    best = study.winners
    assert best["block_size_y"].tolist() == [16] and best["grid_y"].tolist() == [13]
    assert main(["report", str(tmp_path / "st" / "space-replay")]) == 0
    report = (tmp_path / "st" / "space-replay" / "report.md").read_text()
    assert "| # | programs | block | grid_y | block_size_y | tile_size_y | median ms |" in report
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(tmp_path / "st" / "space-replay"), "-o", str(tuning)]) == 0
    assert "grid=cdiv(N, block) grid_y=cdiv(M, block_size_y * tile_size_y) block=16" in \
        capsys.readouterr().out
    entry, = json.loads(tuning.read_text())["entries"]
    assert (entry["grid_y_expr"], entry["grid_y"], entry["block"]) == (
        "cdiv(M, block_size_y * tile_size_y)", 13, 16)
    assert entry["meta"] == {"block_size_y": 16, "tile_size_y": 1}
    assert "grid_z" not in entry and "grid_z_expr" not in entry
    assert all(top["grid_y_expr"] == entry["grid_y_expr"] for top in entry["top"])
    kernel = f"cuda:{tmp_path / 'matmul.cu'}:matmul"
    cfg = sweeper.tuned(kernel, dtype="float32", dims={"M": 200, "N": 120, "K": 64},
                        gpu="NVIDIA H200", path=tuning)
    assert (cfg.grid, cfg.grid_y, cfg.grid_z, cfg.block) == (8, 13, 1, 16)
    with pytest.warns(TuningWarning):                          # far from the tuned shape
        cfg = sweeper.tuned(kernel, dtype="float32", dims={"M": 4000, "N": 1200, "K": 64},
                            gpu="NVIDIA H200", path=tuning)
    assert (cfg.grid, cfg.grid_y) == (75, 250)                 # computed at this problem
    assert len(cfg.candidates) > 1 and all(
        c.grid_y == -(-4000 // (c.meta["block_size_y"] * c.meta["tile_size_y"]))
        for c in cfg.candidates)
    assert main(["tuned", kernel, "--dims", "M=200,N=120,K=64", "--gpu", "NVIDIA H200",
                 "--tuning", str(tuning)]) == 0
    assert "grid=8 (cdiv(N, block)) grid_y=13 (cdiv(M, block_size_y * tile_size_y)) " \
           "block=16 block_size_y=16 tile_size_y=1" in capsys.readouterr().out


def test_a_grid_reads_block_size_y_and_z_at_1_where_the_space_does_not_sweep_them(
        matmul_space, tmp_path, capsys):
    """Kernel Tuner's grid divisors read ``block_size_y`` and ``block_size_z`` at 1 where
    they are not tuned, as each compile defines them: a ``grid_y`` over them plans,
    resolves, runs, exports (a tuning entry, a header) and is looked up at another
    problem without an axis of either, neither becoming a meta-parameter."""
    text = SPACE.format(extra="").replace("  block_size_y: [1, 4, 16]\n", "").replace(
        "cdiv(M, block_size_y * tile_size_y)",
        "cdiv(M, block_size_y * block_size_z * tile_size_y)")
    path = matmul_space(text=text)
    assert main(["plan", str(path)]) == 0
    assert "6 valid" in capsys.readouterr().out
    config = load_space(path).resolve({"block": "16", "tile_size_y": "2"}, FACTS)
    assert (config.grid, config.grid_y, dict(config.meta)) == (8, 100, {"tile_size_y": 2})
    assert main(_replayed(tmp_path, path)) == 0
    study = tmp_path / "st" / "space-replay"
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(study), "-o", str(tuning)]) == 0
    entry, = json.loads(tuning.read_text())["entries"]
    assert (entry["block"], entry["grid_y"], entry["meta"]) == (16, 200, {"tile_size_y": 1})
    with pytest.warns(TuningWarning):                          # far from the tuned shape
        cfg = sweeper.tuned(f"cuda:{tmp_path / 'matmul.cu'}:matmul", dtype="float32",
                            dims={"M": 4000, "N": 1200, "K": 64}, gpu="NVIDIA H200",
                            path=tuning)
    assert (cfg.grid, cfg.grid_y) == (75, 4000)
    assert all(c.grid_y == -(-4000 // c.meta["tile_size_y"]) for c in cfg.candidates)
    assert cfg.cuda_launch().grid == (75, 4000, 1)
    header = tmp_path / "tuned.h"
    assert main(["export", str(study), "--format", "header", "-o", str(header)]) == 0
    assert "#define MATMUL_GRID_Y 200\n" in header.read_text()


@pytest.mark.parametrize(("meta", "said"), [
    ({"block_size_y": 0}, "block_size_y=0; allowed: 1 to 1024 (blockDim.y of a CUDA block)"),
    ({"block_size_z": 65}, "block_size_z=65; allowed: 1 to 64 (blockDim.z of a CUDA block)"),
    ({"block_size_y": MetaParam(default=2, choices=(0, 2))},
     "block_size_y=0; allowed: 1 to 1024 (blockDim.y of a CUDA block)"),
])
def test_a_sweeper_cuda_kernel_s_block_extent_is_checked_where_it_is_declared(meta, said):
    """``meta={"block_size_y": 0}`` (a default, or a choice, no CUDA block takes as its
    y or z) is refused by ``sweeper.kernel`` itself, naming the meta-parameter in the
    words a space's axis is refused in, not first by a space that leaves the axis out
    (whose hint, a switch's ``choices=(0, 1)``, no block's extent takes); a Python
    launch's meta-parameter of that name is its own, unchecked."""
    launch = sweeper.cuda("../examples/copy.cu", "copy", ["dst", "src", "n"])
    with pytest.raises(sweeper.SweeperError) as raised:
        sweeper.kernel(launch, inputs={"src": "n"}, outputs={"dst": "n"},
                       meta={"VEC": 4, **meta}, grid="cdiv(n, block * VEC)",
                       reference=lambda src: src.clone())
    assert str(raised.value) == f"kernel copy: meta: {said}"

    def copy(src, dst, config):
        dst.copy_(src)

    declared = sweeper.kernel(copy, inputs={"src": "n"}, outputs={"dst": "n"},
                              meta={"BLOCK": 4, **meta}, reference=lambda src: src.clone())
    assert set(declared.meta_params) == {"BLOCK", *meta}


def test_plan_refuses_a_block_extent_no_cuda_block_takes_without_importing(
        tmp_path, monkeypatch, capsys):
    """``sweeper plan``, which reads a declaration without importing its module, refuses
    ``meta={"block_size_y": 0}`` as importing it would, the launch bound to a name above
    (``launch = sweeper.cuda(...)``, a value only running the module gives) included."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "examples" / "copy.cu", tmp_path / "copy.cu")
    (tmp_path / "ext_y0_kernel.py").write_text(
        "import pathlib\nimport sweeper\npathlib.Path('imported').touch()\n"
        "launch = sweeper.cuda('copy.cu', 'copy', ['dst', 'src', 'n'])\n"
        "K = sweeper.kernel(launch, inputs={'src': 'n'}, outputs={'dst': 'n'},\n"
        "                   meta={'VEC': 4, 'block_size_y': 0}, grid='cdiv(n, block * VEC)',\n"
        "                   reference=lambda src: src.clone())\n")
    space = tmp_path / "s.yaml"
    space.write_text("kernel: ext_y0_kernel:K\nparams:\n  block: [128]\n  footprint: [4KiB]\n")
    assert main(["plan", str(space), "--device", "interpret"]) == 2
    assert "raised SweeperError: kernel ext_y0_kernel:K: meta: block_size_y=0; allowed: 1 to " \
        "1024 (blockDim.y of a CUDA block) (at ext_y0_kernel.py:5" in capsys.readouterr().err
    assert not (tmp_path / "imported").exists()


def test_a_triton_kernel_s_grid_reads_no_block_size_y(tmp_path, capsys):
    """A Triton program has no block in y: its grid reading ``block_size_y`` is refused
    at its line, a Python launch's ``grid=`` where it is declared."""
    path = tmp_path / "copy.yaml"
    path.write_text("kernel: copy\nparams:\n  grid: ['cdiv(n, block_size_y)']\n")
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.startswith(
        f"{path}:3: params.grid[0]: unknown name 'block_size_y' in 'cdiv(n, block_size_y)'")

    def copy(src, dst, config):
        dst.copy_(src)

    with pytest.raises(sweeper.SweeperError, match=r"^kernel copy: grid='cdiv\(n, "
                       r"block_size_y\)' reads 'block_size_y', which the kernel does not"):
        sweeper.kernel(copy, inputs={"src": "n"}, outputs={"dst": "n"}, meta={"BLOCK": 4},
                       grid="cdiv(n, block_size_y)", reference=lambda src: src.clone())


def test_a_tuning_entry_s_grid_and_block_in_y_are_checked_as_it_is_read(matmul_space,
                                                                         tmp_path):
    """A hand-edited grid in y is refused as a grid is (an expression that does not
    parse, a value no launch takes), and a block in y or z as the space refuses it (an
    extent no launch takes, more than 1024 threads in all)."""
    run = _replayed(tmp_path, matmul_space())
    assert main(run) == 0
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(tmp_path / "st" / "space-replay"), "-o", str(tuning)]) == 0
    data = json.loads(tuning.read_text())
    for key, value, said in (("grid_y_expr", "cdiv(M,", "grid_y_expr: "),
                             ("grid_y", 70000, "grid_y is 70000; it must be an integer from 1 "
                              "to 65535"),
                             ("meta", {"block_size_y": 128, "tile_size_y": 1},
                              "block × block_size_y × block_size_z is 2048 threads; allowed: "
                              "at most 1024"),
                             ("meta", {"block_size_y": 1, "block_size_z": 65},
                              r"meta\.block_size_z=65; allowed: 1 to 64")):
        edited = json.loads(json.dumps(data))
        edited["entries"][0][key] = value
        tuning.write_text(json.dumps(edited))
        with pytest.raises(sweeper.SweeperError, match=said):
            sweeper.tuned(f"cuda:{tmp_path / 'matmul.cu'}:matmul", dtype="float32",
                          dims={"M": 200, "N": 120, "K": 64}, gpu="NVIDIA H200", path=tuning)


# -- on a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
def test_a_kernel_tuner_2d_matmul_compiles_runs_verifies_and_sweeps_on_the_gpu(
        matmul_space, tmp_path, monkeypatch):
    """The 2-D tiled matmul, compiled per config through NVRTC and launched in x and y,
    matches torch at each config (blocks of 16, 48 and 128 threads in x, 1 to 16 rows in
    y, one or two rows a thread), a block of 48 among them; a sweep of the space measures
    every config it does not rule out, and its winner exports with its grid in y."""
    from sweeper.devices import open_device
    from sweeper.trial import TrialStatus, run_trial

    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    space = load_space(matmul_space())
    kernel = load_kernel(space.kernel, space.kernel_options)
    device = open_device("cuda")
    valid, ruled = enumerate_choices(space, device.facts().env())
    assert any(c["block"] == "48" for c in valid) and len(ruled) == 2
    problem = space.resolve(valid[0], device.facts().env()).problem
    buffers = kernel.allocate(problem, "cuda")
    for choice in valid:
        config = space.resolve(choice, device.facts().env())
        result = run_trial(kernel, buffers, config, device,
                           MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                           torch.Generator(device="cuda").manual_seed(0))
        assert result.status is TrialStatus.OK, (choice, result.reason)
    broken = tmp_path / "broken"            # a launch that left rows undone is caught
    broken.mkdir()
    shutil.copy(tmp_path / "space.yaml", broken / "space.yaml")
    (broken / "matmul.cu").write_text(MATMUL_CU.replace("int row = y + t * block_size_y;",
                                                        "int row = y + t;"))
    wrong = load_space(broken / "space.yaml")
    config = wrong.resolve({"block": "16", "block_size_y": "4", "tile_size_y": "2"},
                           device.facts().env())
    planted = load_kernel(wrong.kernel, wrong.kernel_options)
    result = run_trial(planted, planted.allocate(problem, "cuda"), config, device,
                       MeasureSpec(warmup=1, repeat=3, stop="fixed"),
                       torch.Generator(device="cuda").manual_seed(0))
    assert result.status is TrialStatus.WRONG_ANSWER
    studies = tmp_path / "st"
    assert main(["run", str(tmp_path / "space.yaml"), "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0
    rows = [json.loads(line) for line in
            (studies / "space" / "trials.jsonl").read_text().splitlines()]
    statuses = [r["status"] for r in rows if r.get("kind") == "trial"]
    assert statuses.count("ok") == len(valid), statuses
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(studies / "space"), "-o", str(tuning)]) == 0
    entry, = json.loads(tuning.read_text())["entries"]
    assert entry["grid_y_expr"] == "cdiv(M, block_size_y * tile_size_y)"

