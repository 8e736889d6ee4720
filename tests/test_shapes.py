"""Problems with shapes: a kernel's declared dimensions as axes (free or zipped), read by
expressions and constraints, refused with file:line errors; the non-square matmul on the
interpreter; the interpreter's cap on dimensions; a shaped study through report, export,
tuned and a replay of its own table."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any, ClassVar

import pytest

from sweeper.cli import main
from sweeper.errors import SpaceError
from sweeper.kernels import Dim, Kernel, MetaParam
from sweeper.space import Problem, parse_space
from sweeper.store import StudyStore

FACTS = {"sms": 4, "l2_bytes": 1 << 20}
MATMUL = """kernel: matmul
params:
  grid: ["cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"]
  shape: {zip: {M: [48, 4096], N: [80, 2048], K: [40, 8192]}}
  BLOCK_M: [32]
  BLOCK_N: [32, 128]
  BLOCK_K: [32]
constraints: ["BLOCK_N <= N"]
"""


class StridedDeclaration(Kernel):
    """A declaration with limits on its dimensions and no footprint rule: a strided copy."""

    name: ClassVar[str] = "strided"
    meta_params: ClassVar[dict[str, MetaParam]] = {"BLOCK": MetaParam(default=1024)}
    dims: ClassVar[dict[str, Dim]] = {
        "n": Dim("elements", default=4096, min=256, multiple_of=256),
        "stride": Dim("elements between two reads", max=64)}
    footprint_bytes: ClassVar[str] = "n * itemsize"
    dims_from_footprint: ClassVar[dict[str, str]] = {}

    def allocate(self, problem: Problem, device: str) -> Any: ...
    def randomize(self, buffers: Any, generator: Any) -> None: ...
    def poison(self, buffers: Any) -> None: ...
    def launch(self, buffers: Any, config: Any) -> None: ...
    def check(self, buffers: Any) -> str | None: ...


STRIDED = "kernel: tests.test_shapes:StridedDeclaration\nparams:\n"


def resolve_all(space, max_footprint=None):
    out = []
    for label in space.choices()["shape"]:
        choice = {"shape": label, **{k: v[0] for k, v in space.choices().items()
                                     if k != "shape"}}
        out.append(space.resolve(choice, FACTS, max_footprint))
    return out


def test_zipped_dims_are_one_dimension_and_expressions_read_them():
    space = parse_space(MATMUL)
    assert space.sizes == ("M", "N", "K") and "footprint" not in space.choices()
    assert space.choices()["shape"] == ("M=48,N=80,K=40", "M=4096,N=2048,K=8192")
    small, large = resolve_all(space)
    assert small.problem == Problem("bfloat16", 80 * 48 * 2, (("M", 48), ("N", 80), ("K", 40)))
    assert small.grid == 2 * 3                       # cdiv(48, 32) * cdiv(80, 32)
    assert large.problem.footprint == 4096 * 8192 * 2   # the largest matrix, A
    assert large.problem.describe() == "M=4096 N=2048 K=8192"
    with pytest.raises(Exception, match=r"constraint 'BLOCK_N <= N' is false \(BLOCK_N=128, "
                                        r"N=80\)"):
        space.resolve({"shape": "M=48,N=80,K=40", "BLOCK_N": "128",
                       "grid": space.choices()["grid"][0]}, {**FACTS})


def test_a_footprint_still_sizes_square_matmuls_and_one_d_kernels():
    matmul = parse_space("kernel: matmul\nparams:\n  footprint: [32MiB]\n  dtype: [bfloat16]\n")
    config = matmul.resolve({}, FACTS)
    assert config.problem.dims == (("M", 4096), ("N", 4096), ("K", 4096))
    assert config.problem.footprint == 32 << 20 and config.grid == 32 * 32   # default grid
    copy = parse_space("kernel: copy\nparams:\n  n: [1000, 4096]\n  BLOCK: [256]\n")
    assert [copy.resolve({"n": n}, FACTS).problem.footprint for n in ("1000", "4096")] == [
        4000, 16384]
    assert copy.resolve({"n": "1000"}, FACTS).grid == 4         # cdiv(n, BLOCK)
    with pytest.raises(Exception, match="footprint 1000B of float32 is no problem of this "
                                        "kernel: M = isqrt"):
        parse_space("kernel: matmul\nparams:\n  footprint: [1000]\n  dtype: [float32]\n"
                    ).resolve({}, FACTS)


@pytest.mark.parametrize("text, line, message", [
    ("kernel: matmul\nparams:\n  footprint: [32MiB]\n  M: [64]\n", 4,
     "params.M: both footprint and M size the problem; give the footprint or the "
     "dimensions (M, N, K), not both"),
    ("kernel: matmul\nparams:\n  Q: [64]\n", 3,
     "params.Q: unknown key 'Q'; known: grid, block, dtype, footprint, cache, M, N, K, "
     "BLOCK_M"),
    ("kernel: matmul\nparams:\n  s: {zip: {M: [1, 2], Z: [1, 2]}}\n", 3,
     "params.s.zip.Z: unknown axis 'Z'; known: grid, block, dtype, footprint, cache, M, N, K"),
    ("kernel: matmul\nparams:\n  M: [64]\n  N: [0]\n", 4, "params.N[0]: 0 must be positive"),
    ("kernel: matmul\nparams:\n  M: [64]\n  grid: [\"cdiv(M, X)\"]\n", 4,
     "unknown name 'X' in 'cdiv(M, X)'; known: BLOCK_K, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE, "
     "FLATTEN, GROUP_M, K, M, N, SPLIT_K, TMA, block, footprint"),
    (STRIDED + "  n: [300]\n  stride: [4]\n", 3,
     "params.n[0]: n: 300 is out of its limits; allowed: an integer >= 256, a multiple of 256"),
    (STRIDED + "  stride: [65]\n", 3,
     "params.stride[0]: stride: 65 is out of its limits; allowed: an integer >= 1 and <= 64"),
    (STRIDED + "  n: [1024]\n", 2,
     "params: missing dimension stride (elements between two reads); "
     "tests.test_shapes:StridedDeclaration has no default for it: give params.stride"),
    (STRIDED + "  footprint: [64KiB]\n", 3,
     "params.footprint: tests.test_shapes:StridedDeclaration is sized by its dimensions, not "
     "a footprint; give n, stride"),
])
def test_a_bad_dimension_is_refused_at_its_line(text, line, message):
    with pytest.raises(SpaceError) as info:
        parse_space(text, file="s.yaml")
    assert str(info.value).startswith(f"s.yaml:{line}: "), str(info.value)
    assert message in str(info.value)


def test_a_dimension_given_by_an_expression_is_checked_when_resolved():
    space = parse_space(STRIDED + "  n: [1024]\n  stride: [\"n // 8\"]\n", file="s.yaml")
    with pytest.raises(Exception, match="stride: 128 is out of its limits") as info:
        space.resolve({}, FACTS)
    assert info.value.origin.line == 4


def test_the_interpreter_cap_shrinks_dims_by_one_factor_or_refuses():
    small, large = resolve_all(parse_space(MATMUL), max_footprint=16 << 10)
    assert small.problem.dims == (("M", 48), ("N", 80), ("K", 40))      # under the cap
    assert large.problem.dims == (("M", 64), ("N", 32), ("K", 128))     # ratios kept
    assert large.problem.footprint == 16 << 10
    strided = parse_space(STRIDED + "  n: [1048576]\n  stride: [8]\n")
    capped = strided.resolve({}, FACTS, 4096)
    assert capped.problem.dims == (("n", 1024), ("stride", 8))   # stride is not bytes
    with pytest.raises(Exception, match=r"n=1048576 stride=8: n=1048576 stride=8 cannot "
                                        r"shrink under 512B: n=256 stride=8 already make 1KiB"):
        strided.resolve({}, FACTS, 512)


def test_a_non_square_matmul_verifies_on_the_interpreter_and_a_wrong_one_fails():
    import torch

    from sweeper.devices import open_device
    from sweeper.kernels import load_kernel
    from sweeper.space import Config

    open_device("interpret")
    kernel = load_kernel("matmul")
    for dtype in ("float32", "float16"):
        problem = Problem(dtype, 80 * 48 * 4, (("M", 48), ("N", 80), ("K", 40)))
        buffers = kernel.allocate(problem, "cpu")
        assert [tuple(buffers[x].shape) for x in "abc"] == [(48, 40), (40, 80), (48, 80)]
        kernel.randomize(buffers, torch.Generator().manual_seed(0))
        kernel.poison(buffers)
        meta = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_stages": 2}
        kernel.launch(buffers, Config(problem=problem, grid=4, block=128, meta=meta))
        assert kernel.check(buffers) is None, dtype
        buffers["c"][47, 79] += 50.0                 # the last element, in a masked tile
        assert kernel.check(buffers).startswith("relative error ")
        kernel.poison(buffers)
        assert kernel.check(buffers) == "3840 of 3840 elements were never written"
    assert kernel.bytes_moved(problem) == (48 * 40 + 40 * 80 + 48 * 80) * 2
    assert kernel.flops(problem) == 2 * 48 * 80 * 40


def test_a_shaped_study_reports_exports_and_replays_by_dimension(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "shapes.yaml"
    space.write_text("study: shapes\nkernel: matmul\nsampler: exhaustive\nparams:\n"
                     "  grid: [\"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)\"]\n  block: [128]\n"
                     "  shape: {zip: {M: [48, 4096], N: [80, 2048], K: [40, 8192]}}\n"
                     "  BLOCK_M: [32]\n  BLOCK_N: [16, 32]\n  BLOCK_K: [16]\n"
                     "  num_stages: [2]\n  dtype: [float16]\n"
                     "measure: {warmup: 1, repeat: 2, stop: fixed}\n")
    assert main(["run", str(space), "--device", "interpret", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "float16 M=48 N=80 K=40 cold: #" in out and "float16 M=64 N=32 K=128 cold" in out
    store = StudyStore(tmp_path / "studies" / "shapes-interpret")
    trials, _ = store.records()
    assert {t.config.problem.dims for t in trials} == {
        (("M", 48), ("N", 80), ("K", 40)), (("M", 64), ("N", 32), ("K", 128))}
    report = (store.root / "report.md").read_text()
    assert "**float16 M=64 N=32 K=128 cold**" in report
    best = json.loads((store.root / "report.json").read_text())["best"]
    assert {(b["M"], b["N"], b["K"]) for b in best} == {(48, 80, 40), (64, 32, 128)}
    assert not any(p.name.startswith("float16_M=64_N=32_K=128_cold")    # only BLOCK_N
                   for p in (store.root / "heatmaps").glob("*"))         # varies: no map

    assert main(["export", "shapes-interpret", "--output", "tuning.json"]) == 0
    entries = json.loads((tmp_path / "tuning.json").read_text())["entries"]
    assert sorted(e["dims"]["M"] for e in entries) == [48, 64]
    capsys.readouterr()
    assert main(["tuned", "matmul", "--dtype", "float16", "--dims", "M=60,N=30,K=120",
                 "--gpu", "Triton interpreter (CPU)", "--tuning", "tuning.json"]) == 0
    tuned = capsys.readouterr().out
    block_n = int(re.search(r"BLOCK_N=(\d+)", tuned).group(1))
    assert "tuned at M=64 N=32 K=128" in tuned                  # the nearest tuned shape
    assert f"grid={2 * -(-30 // block_n)} " in tuned     # its grid at the dims asked for
    # the entry measured 64 x 32 x 128 says so, and that it was asked as 4096 x 2048 x
    # 8192, which a lookup finds exactly (it found the shrunk problem only, and warned far)
    shrunk = next(e for e in entries if e["dims"]["M"] == 64)
    assert shrunk["dims"] == {"M": 64, "N": 32, "K": 128}
    assert shrunk["asked_dims"] == {"M": 4096, "N": 2048, "K": 8192}
    assert shrunk["asked_footprint"] == 4096 * 8192 * 2 and shrunk["footprint"] == 64 * 128 * 2
    assert "asked_dims" not in next(e for e in entries if e["dims"]["M"] == 48)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["tuned", "matmul", "--dtype", "float16", "--dims", "M=4096,N=2048,K=8192",
                     "--gpu", "Triton interpreter (CPU)", "--tuning", "tuning.json"]) == 0
    assert ("tuned at M=64 N=32 K=128 for the asked M=4096 N=2048 K=8192, shrunk to fit its "
            "device (exact)") in capsys.readouterr().out
    assert main(["tuned", "matmul", "--dims", "M=6O"]) == 2
    assert "--dims: 'M=6O' is not NAME=SIZE" in capsys.readouterr().err

    assert main(["export", "shapes-interpret", "--format", "csv", "--output", "t.csv"]) == 0
    header = next(line for line in (tmp_path / "t.csv").read_text().splitlines()
                  if not line.startswith("#"))
    assert {"M", "N", "K"} <= set(header.split(","))      # a column per dimension
    assert main(["run", str(space), "--device", "replay:t.csv", "--study", "again",
                 "--quiet", "--no-report"]) == 0
    replayed = {(t.choice["M"], t.choice["BLOCK_N"]): t.stats.median
                for t in StudyStore(tmp_path / "studies" / "again").records()[0]}
    assert replayed == {(t.choice["M"], t.choice["BLOCK_N"]): t.stats.median
                        for t in trials}
    # the 4096 x 2048 x 8192 rows hold timings of 64 x 32 x 128: the table says the cap,
    # and the replay shrinks as the study did, so its rates are the study's (they were
    # the asked problem's bytes over the shrunk one's time, ~10^5 x too high)
    assert "# max_footprint: 16384\n" in (tmp_path / "t.csv").read_text()
    rates = {(t.choice["M"], t.choice["BLOCK_N"]): t.gbps
             for t in StudyStore(tmp_path / "studies" / "again").records()[0]}
    assert rates == {(t.choice["M"], t.choice["BLOCK_N"]): t.gbps for t in trials}


def test_the_cap_keeps_powers_of_two_and_others_apart():
    """A dimension shrinks to a power of two only where it was one: ``cols=1000`` keeps a
    masked tail on the interpreter, ``rows=4096`` stays a power of two; a footprint that
    is no power of two is lowered to the largest one under the cap that is none either."""
    softmax = parse_space("kernel: softmax\nparams:\n  rows: [4096]\n  cols: [1000]\n"
                          "  dtype: [float32]\n")
    problem = softmax.resolve({}, FACTS, 16 << 10).problem
    assert problem.dims == (("rows", 128), ("cols", 31))
    assert problem.footprint <= 16 << 10
    copy = parse_space("kernel: copy\nparams:\n  footprint: [1GiB, 4000000]\n")
    capped = {label: copy.resolve({"footprint": label}, FACTS, 16 << 10).problem.dims
              for label in ("1GiB", "4000000")}
    assert capped == {"1GiB": (("n", 4096),), "4000000": (("n", 4095),)}


def test_problems_that_shrink_to_one_are_measured_once_and_say_so():
    """``n=4096`` and ``n=1048576`` are one problem under a 16 KiB cap: the one that needs
    no shrinking is measured, the other's configs are ruled out naming it, and each
    problem shrunk says what it became."""
    from sweeper.space import Configs, shrunk_problems

    space = parse_space("kernel: copy\nparams:\n  n: [1048576, 4096, 1000000]\n"
                        "  BLOCK: [256, 1024]\n")
    shrunk = shrunk_problems(space, FACTS, 16 << 10)
    assert [s.describe() for s in shrunk] == [
        "n 1048576 → 4096 (as n=4096 does: measured once, as n=4096)", "n 1000000 → 4095"]
    assert shrunk_problems(space, FACTS, None) == ()
    configs = Configs(space, FACTS, 16 << 10)
    assert sorted(space.resolve(configs[i], FACTS, 16 << 10).problem.n
                  for i in range(len(configs))) == [4095, 4095, 4096, 4096]
    reasons = {str(why) for _, why in configs.ruled_out()}
    assert reasons == {
        "n=1048576 shrinks to 16KiB under the device's 16KiB cap, as n=4096 does: that "
        "problem is measured once, as n=4096"}
    assert len(list(configs.ruled_out())) == 2            # both BLOCKs of n=1048576


def test_problems_that_would_shrink_to_one_stay_apart_where_their_order_allows():
    """4GiB and 1GiB both shrink to 16 KiB: the larger keeps it, the other goes on to
    8 KiB, above the 4 KiB asked for; 64 KiB has no place left above 4 KiB and merges
    with the problem it shrank onto, which is measured once."""
    from sweeper.space import Configs, shrunk_problems

    space = parse_space("kernel: copy\nparams:\n  footprint: [1GiB, 4GiB, 64KiB, 4KiB]\n")
    assert [s.describe() for s in shrunk_problems(space, FACTS, 16 << 10)] == [
        "footprint 1GiB → 8KiB", "footprint 4GiB → 16KiB",
        "footprint 64KiB → 16KiB (as footprint=4GiB does: measured once, as footprint=4GiB)"]
    configs = Configs(space, FACTS, 16 << 10)
    ran = {configs[i]["footprint"]: space.resolve(configs[i], FACTS, 16 << 10).problem.footprint
           for i in range(len(configs))}
    assert ran == {"1GiB": 8 << 10, "4GiB": 16 << 10, "4KiB": 4 << 10}


def test_a_replay_tables_shrunk_line_names_the_sizes_the_run_asked(tmp_path, monkeypatch):
    """A run's ``-p footprint=1MiB`` replaces the space's 16KiB: the table's ``shrunk``
    line reads the space as the run had it (it read the text as written, where 16KiB
    shrinks not at all, and said nothing of the 1MiB measured as 16KiB)."""
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "small.yaml"
    space.write_text("study: small\nkernel: copy\nsampler: exhaustive\nparams:\n"
                     "  grid: [sms]\n  block: [128]\n  BLOCK: [1024]\n  dtype: [float32]\n"
                     "  footprint: [16KiB]\nmeasure: {warmup: 1, repeat: 2, stop: fixed}\n")
    assert main(["run", str(space), "--device", "interpret", "--quiet", "--no-report",
                 "-p", "footprint=1MiB"]) == 0
    assert main(["export", "small-interpret", "--format", "csv", "--output", "t.csv"]) == 0
    header = [line for line in (tmp_path / "t.csv").read_text().splitlines()
              if line.startswith("#")]
    assert header[-2:] == ["# max_footprint: 16384", "# shrunk: footprint 1MiB → 16KiB"]
