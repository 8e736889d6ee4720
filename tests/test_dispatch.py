"""The dispatch rule (sweeper.dispatch) and what carries it: a tuning file's ``top``,
``tuned()``'s candidates, and the exported Triton module's ``configs(**dims)``/``pick``."""

import json
import warnings

import pytest

from sweeper import tuned
from sweeper.dispatch import bracketing, candidates, nearest_index
from sweeper.errors import SweeperError, TuningWarning
from sweeper.export_triton import DISPATCH

# Tuned at 1024 and 4096; 2048 asked.  Nearest by log distance is 1024 (ties: first), whose
# winner A is 30 % off at 4096; B is within 2 % on both, so it must be a candidate.
PROBLEMS = [{"N": 1024}, {"N": 4096}]
TOPS = [[("A", 1.0), ("B", 1.02), ("C", 1.5)], [("D", 1.0), ("B", 1.01), ("A", 1.3)]]


def test_bracketing_takes_the_nearest_on_each_side_weighted_by_log_distance():
    assert bracketing([*PROBLEMS, {"N": 512}], {"N": 2048}) == [(0, 0.5), (1, 0.5)]
    assert bracketing(PROBLEMS, {"N": 1024}) == [(0, 1.0)]                 # exact: alone
    assert bracketing(PROBLEMS, {"N": 8192}) == [(1, 1.0)]                 # past the end
    two = [{"M": 1024, "N": 1024}, {"M": 4096, "N": 1024}, {"M": 1024, "N": 4096},
           {"M": 4096, "N": 4096}]
    assert [i for i, _ in bracketing(two, {"M": 2048, "N": 1024})] == [0, 1]
    assert len(bracketing(two, {"M": 2048, "N": 2048})) == 4


def test_candidates_put_the_nearest_winner_first_then_the_neighbours_by_slowdown():
    assert nearest_index(PROBLEMS, {"N": 2048}) == 0
    assert candidates(PROBLEMS, TOPS, {"N": 2048}) == ["A", "B", "D", "C"]
    assert candidates(PROBLEMS, TOPS, {"N": 4096}) == ["D", "B", "A"]


def _entry(n, top=None):
    entry = {"kernel": "mm", "gpu": "NVIDIA H200", "dtype": "float16", "footprint": 2 * n * n,
             "dims": {"N": n}, "grid_expr": "cdiv(N, BLOCK)", "block": 128,
             "meta": {"BLOCK": 64 if n == 1024 else 128}, "gbps": 1.0,
             "median_ms": 1.0, "study": "s", "facts": {"sms": 132, "l2_bytes": 0}}
    if top is not None:
        entry["top"] = [{"grid_expr": "cdiv(N, BLOCK)", "block": 128, "meta": {"BLOCK": b},
                         "slowdown": s} for b, s in top]
    return entry


def _file(tmp_path, entries):
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"version": 1, "entries": entries}))
    return path


def test_tuned_gives_an_untuned_shape_the_candidates_with_grids_for_it(tmp_path):
    path = _file(tmp_path, [_entry(1024, [(64, 1.0), (32, 1.02)]),
                            _entry(4096, [(128, 1.0), (32, 1.01), (64, 1.3)])])
    got = tuned("mm", dtype="fp16", dims={"N": 2048}, gpu="NVIDIA H200", path=path)
    assert got.meta == {"BLOCK": 64}                       # the pick: nearest winner
    # 128 (1.0 at 4096, at most 1.02 at 1024) before 32 (1.02, 1.01)
    assert [(c.meta["BLOCK"], c.grid) for c in got.candidates] == [(64, 32), (128, 16),
                                                                    (32, 64)]
    assert got.candidates[2].launch_options() == {"num_warps": 4, "BLOCK": 32}


def test_each_candidate_carries_its_slowdown_at_the_nearest_tuned_problem_holding_it(
        tmp_path):
    """A candidate's ``slowdown`` is the one measured at the tuned problem it is offered
    from (the asked one where it was tuned, else the nearest bracketing one that has it):
    it was the last entry's of the file holding the config, so at N=1024 its runner-up
    read 1.5x, 4096's figure, not its own 1.02."""
    path = _file(tmp_path, [_entry(1024, [(64, 1.0), (32, 1.02)]),
                            _entry(4096, [(128, 1.0), (32, 1.5), (64, 1.3)]),
                            _entry(16384, [(128, 1.0), (64, 2.0)])])
    exact = tuned("mm", dtype="fp16", dims={"N": 1024}, gpu="NVIDIA H200", path=path)
    assert [(c.meta["BLOCK"], c.slowdown) for c in exact.candidates] == [(64, 1.0), (32, 1.02)]
    # between 4096 and 16384, nearer 4096: 64 is offered at its 4096 slowdown
    near = tuned("mm", dtype="fp16", dims={"N": 6144}, gpu="NVIDIA H200", path=path)
    assert {c.meta["BLOCK"]: c.slowdown for c in near.candidates} == {128: 1.0, 32: 1.5,
                                                                      64: 1.3}


def test_a_grid_over_n_is_computed_at_dimensions_not_tuned_by_the_kernels_footprint_rule(
        tmp_path):
    """A grid that reads ``n`` (``spaces/matmul.yaml``'s) at a shape that was not tuned:
    the entry keeps its kernel's footprint rule (``footprint_expr``, which ``sweeper
    export`` writes), so ``n`` there is the footprint the rule gives over the element size;
    an entry written without the rule says what to do instead of failing on ``n``."""
    def entry(n, rule):
        return {**_entry(n), "grid_expr": "cdiv(isqrt(n), BLOCK)", "footprint": 2 * n * n,
                **({"footprint_expr": rule} if rule else {})}

    path = _file(tmp_path, [entry(1024, "N * N * itemsize"), entry(4096, "N * N * itemsize")])
    got = tuned("mm", dtype="fp16", dims={"N": 2048}, gpu="NVIDIA H200", path=path)
    assert got.meta == {"BLOCK": 64} and got.grid == 2048 // 64      # isqrt(2048 * 2048)
    old = _file(tmp_path, [entry(1024, None), entry(4096, None)])
    with pytest.raises(SweeperError, match=r"grid_expr 'cdiv\(isqrt\(n\), BLOCK\)' reads n, "
                       r"which this entry cannot compute at N=2048: it keeps no footprint "
                       r"rule \(footprint_expr\); export the study again"):
        tuned("mm", dtype="fp16", dims={"N": 2048}, gpu="NVIDIA H200", path=old)
    assert tuned("mm", dtype="fp16", dims={"N": 1024}, gpu="NVIDIA H200", path=old).grid == 16
    bad = _file(tmp_path, [entry(1024, "N * P")])
    with pytest.raises(SweeperError, match=r"footprint_expr is 'N \* P'; it must be an "
                       "expression over N, itemsize"):
        tuned("mm", dtype="fp16", dims={"N": 1024}, gpu="NVIDIA H200", path=bad)


def test_a_grid_over_the_kernels_own_dimensions_asked_by_footprint_says_give_the_dims(
        tmp_path, capsys):
    """A kernel whose dimension is not ``n`` (a short kernel's ``n_elements``, ``M``): its
    grid reads the dimension, which a footprint does not give; the lookup says to give the
    dimensions, not that the tuning file is broken, and at the dims it answers."""
    from sweeper.cli import main as sweeper_main

    path = _file(tmp_path, [_entry(1024, [(64, 1.0)])])
    with pytest.raises(SweeperError) as err:
        tuned("mm", dtype="fp16", footprint=2 * 1024 * 1024, gpu="NVIDIA H200", path=path)
    said = ("mm was tuned over the dimensions N and its grid 'cdiv(N, BLOCK)' reads N, which "
            "a footprint does not give; give the dimensions instead (--dims N=..., dims={...})")
    assert str(err.value) == said
    assert sweeper_main(["tuned", "mm", "--dtype", "fp16", "--footprint", "2MiB", "--gpu",
                         "NVIDIA H200", "--tuning", str(path)]) == 2
    assert capsys.readouterr().err == f"sweeper: {said}\n"
    assert tuned("mm", dtype="fp16", dims={"N": 1024}, gpu="NVIDIA H200", path=path).grid == 16


def test_an_exported_entry_keeps_its_kernels_footprint_rule(tmp_path):
    from sweeper.cli import main as sweeper_main

    studies = tmp_path / "st"
    assert sweeper_main(["run", "spaces/matmul.yaml", "--device",
                         "replay:tests/data/replay/h200-matmul.csv", "--studies-dir",
                         str(studies), "--quiet", "--no-report", "--trials", "3"]) == 0
    out = tmp_path / "tuning.json"
    assert sweeper_main(["export", str(studies / "matmul-bf16-replay"), "-o", str(out)]) == 0
    entry, = json.loads(out.read_text())["entries"]
    assert entry["footprint_expr"] == "max(M * K, K * N, M * N) * itemsize"
    got = tuned("matmul", dtype="bf16", dims={"M": 2048, "N": 4096, "K": 4096},
                gpu=entry["gpu"], path=out)
    assert got.grid >= 1


def test_a_file_without_top_falls_back_to_the_nearest_winner_and_says_so(tmp_path):
    path = _file(tmp_path, [_entry(1024), _entry(4096)])
    with pytest.warns(TuningWarning, match="written without top configs per problem; "
                      "a shape that was not tuned gets the neighbouring tuned winners only"):
        got = tuned("mm", dtype="fp16", dims={"N": 2048}, gpu="NVIDIA H200", path=path)
    assert got.meta == {"BLOCK": 64}
    assert [c.meta for c in got.candidates] == [{"BLOCK": 64}, {"BLOCK": 128}]


def test_a_bad_top_is_refused_with_the_entry_named(tmp_path):
    path = _file(tmp_path, [_entry(1024, [(64, -1.0)])])
    with pytest.raises(SweeperError, match=r"entries\[0\] \(mm float16 N=1024 on NVIDIA "
                       r"H200\): top\[0\].slowdown is -1.0; it must be a positive number"):
        tuned("mm", dtype="fp16", dims={"N": 1024}, gpu="NVIDIA H200", path=path)


def test_the_triton_module_carries_the_rule_as_source():
    namespace: dict = {}
    exec("from __future__ import annotations\nimport math\n" + DISPATCH, namespace)
    assert namespace["candidates"](PROBLEMS, TOPS, {"N": 2048}) == ["A", "B", "D", "C"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(DISPATCH, "dispatch", "exec")
