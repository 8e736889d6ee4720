"""``sweeper export STUDY --format triton``: an importable module whose configs feed a real
``@triton.autotune`` kernel (run here through the Triton interpreter)."""

import ast
import importlib.util
import json
import re
import warnings

import pytest
import torch
import triton
import triton.language as tl

from sweeper.cli import main
from sweeper.errors import SweeperError, TuningWarning
from sweeper.export_triton import export_triton, grid_source
from sweeper.finals import Finalist, FinalRecord
from sweeper.kernels._jit import jit
from sweeper.measure import summarize
from sweeper.space import Config, Problem
from sweeper.store import ProblemKey, StudyStore, TrialRecord
from sweeper.trial import TrialStatus

#: (footprint, grid, block, BLOCK, num_stages, median ms) per trial
ROWS = [(1 << 20, "cdiv(n, BLOCK)", 128, 1024, 3, 1.0),
        (1 << 20, "4*sms", 64, 256, 2, 1.1),
        (1 << 20, "sms", 128, 1024, 3, 1.5),        # same triton.Config as #0, other grid
        (1 << 20, "cdiv(n, BLOCK)", 256, 4096, 3, 1.2),
        (1 << 30, "4*sms", 64, 256, 2, 2.0),
        (1 << 30, "cdiv(n, BLOCK)", 128, 1024, 3, 2.2),
        (1 << 30, "cdiv(n, BLOCK)", 256, 4096, 3, 3.0)]


def study(root, gpu="NVIDIA H200", kernel="copy", final=True, rows=ROWS, sized=False,
          **meta):
    """A study of ``rows`` (and the final of 1 GiB); ``sized``: its problems carry their
    dimension ``n``, as a study records it now (else, as an older one did, none)."""
    def dims(fp):
        return (("n", fp // 4),) if sized else ()
    store = StudyStore(root)
    store.create({"study": root.name, "kernel": kernel,
                  "environment": {"gpu": gpu, "sms": 132, "l2_bytes": 1 << 20}, **meta})
    for i, (fp, grid, block, BLOCK, stages, ms) in enumerate(rows):
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK,
            choice={"grid": grid, "block": str(block), "BLOCK": str(BLOCK),
                    "footprint": str(fp)},
            config=Config(Problem("float32", fp, dims(fp)), grid=1, block=block,
                          meta={"BLOCK": BLOCK, "num_stages": stages}),
            stats=summarize([ms] * 3), gbps=fp / ms / 1e6))
    if final:        # the interleaved final of 1 GiB chose #5 over #4, at 2.1 ms
        rows = [Finalist(number=n, samples_ms=[m] * 50, stats=summarize([m] * 50))
                for n, m in ((5, 2.1), (4, 2.15))]
        store.append(FinalRecord(problem=ProblemKey("float32", 1 << 30, dims=dims(1 << 30)),
                                 finalists=rows, tied=[5], winner=5))
    store.close()
    return store


def load(path):
    spec = importlib.util.spec_from_file_location(f"tuned_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interpreted_module(space, studies, name):
    """Run the study ``name`` of ``space`` on the interpreter into ``studies`` and export
    it as the module ``tuned_<name>.py`` beside ``studies``; return the module's path."""
    assert main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0
    out = studies.parent / f"tuned_{name}.py"
    assert main(["export", str(studies / f"{name}-interpret"), "--format", "triton", "-o",
                 str(out)]) == 0
    return out


def test_the_module_holds_the_finals_winners_ranked_configs_key_and_grid(tmp_path, capsys):
    store = study(tmp_path / "copy-fp32")
    out = tmp_path / "tuned_copy.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert capsys.readouterr().out == (f"wrote 2 winners and 3 distinct configs to {out} "
                                       "(import it; configs(k=4) feeds @triton.autotune)\n")
    assert "import sweeper" not in out.read_text() and "eval(" not in out.read_text()
    # its docstring's example imports it by its file's name, where that can be imported
    assert "    import tuned_copy\n    @triton.autotune(configs=tuned_copy.configs(k=4)" \
        in out.read_text()
    keyword = tmp_path / "class.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(keyword)]) == 0
    assert "    import tuned_mod\n" in keyword.read_text()
    capsys.readouterr()
    mod = load(out)
    assert mod.KERNEL == "copy" and mod.key == ["n"]
    assert mod.GPUS == {"NVIDIA H200": {"sms": 132, "l2_bytes": 1 << 20}}
    small, big = mod.WINNERS["NVIDIA H200"]
    assert (small["trial"], small["median_ms"], small["chosen_by"]) == (0, 1.0, "sweep median")
    assert (big["trial"], big["median_ms"], big["chosen_by"]) == (5, 2.1, "interleaved final")
    assert big["dims"] == {"n": (1 << 30) // 4}
    cfg = big["config"]
    assert (cfg.kwargs, cfg.num_warps, cfg.num_stages) == ({"BLOCK": 1024}, 4, 3)
    # each problem's winner first (#0 and #5 are one config), then by geomean slowdown
    ranked = [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in mod.configs(k=10)]
    assert ranked == [(1024, 4, 3), (256, 2, 2), (4096, 8, 3)]
    assert len(mod.configs()) == 3 and len(mod.configs(k=2)) == 2
    # the grid each config was tuned with, at the problem asked for
    assert mod.grid({"BLOCK": 1024, "num_warps": 4}, n=10_000) == (10,)
    assert mod.grid({"BLOCK": 256, "num_warps": 2}, n=10_000) == (4 * 132,)
    assert mod.configs(gpu="replay: NVIDIA H200")[0].kwargs == {"BLOCK": 1024}
    with pytest.raises(TypeError, match=r"grid 'cdiv\(n, BLOCK\)' needs 'n': pass it as a "
                                        r"kernel argument or grid\(meta, n=...\)"):
        mod.grid({"BLOCK": 1024})
    with pytest.raises(KeyError, match="no configs for GPU 'NVIDIA A100'; this module has "
                                       "NVIDIA H200"):
        mod.configs(gpu="NVIDIA A100")


def test_grid_of_a_config_not_exported_is_refused_naming_it_and_the_exported(tmp_path):
    """A meta no exported config matches (a config of the user's, or another num_warps)
    has no tuned grid: grid(meta) says so, naming the values asked and the configs
    exported, rather than launch the top config's grid (``4*sms`` here), which need
    not cover that config's problem."""
    rows = [(1 << 20, "4*sms", 64, 256, 2, 1.0), (1 << 20, "cdiv(n, BLOCK)", 128, 1024, 3, 1.2)]
    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "copy-fp32", rows=rows, final=False), out)
    mod = load(out)
    assert mod.grid({"BLOCK": 1024, "num_warps": 4}, n=10_000) == (10,)
    exported = ("exported: BLOCK=256 num_warps=2 num_stages=2; BLOCK=1024 num_warps=4 "
                "num_stages=3: launch one of configs()")
    for meta, asked in (({"BLOCK": 2048, "x": 0}, "BLOCK=2048"),
                        ({"BLOCK": 1024, "num_warps": 8}, "BLOCK=1024 num_warps=8")):
        with pytest.raises(ValueError, match=re.escape(
                f"grid(meta): no config exported for 'NVIDIA H200' has {asked}; {exported}")):
            mod.grid(meta, n=10_000)
    with pytest.raises(ValueError, match=re.escape(   # was "... has nothing"
            "grid(meta): meta holds none of the configs' options (BLOCK, maxnreg, "
            f"num_ctas, num_stages, num_warps); {exported}")):
        mod.grid({"n": 10_000})


def _copy_body(x, y, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n), mask=offsets < n)


def autotuned(mod, k):
    """Copy 3000 elements through @triton.autotune over mod.configs(k) on the interpreter,
    launched on mod.grid(meta): the best config, and each grid asked for (last: its)."""
    kernel = triton.autotune(configs=mod.configs(k=k), key=mod.key,
                             do_bench=mod.do_bench)(jit(_copy_body, interpret=True))
    grids = []

    def grid(meta):
        grids.append(mod.grid(meta))
        return grids[-1]

    x = torch.randn(3000)
    y = torch.full_like(x, float("nan"))
    kernel[grid](x, y, x.numel())
    assert torch.equal(x, y)
    return kernel.best_config, grids


def test_its_configs_and_grid_feed_a_real_autotuned_kernel(tmp_path):
    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "copy-fp32"), out)
    mod = load(out)
    # the module's own timer and grid work on the interpreter as on a GPU: the host clock
    # for CUDA events, n read from the 0-d tensor the interpreter passes it as
    best, grids = autotuned(mod, k=3)
    assert (best.kwargs["BLOCK"], best.num_warps) in {(1024, 4), (256, 2), (4096, 8)}
    expected = {1024: (3,), 256: (4 * 132,), 4096: (1,)}[best.kwargs["BLOCK"]]
    assert grids[-1] == expected


def test_autotune_times_each_offered_config_with_its_own_grid(tmp_path):
    """Triton passes a grid function the kernel's arguments only, never num_warps: two
    configs of one BLOCK tuned with other warps and other grids would both be timed (and
    launched) with the better one's grid.  configs() offers only the better one;
    grid(meta) gives the other its own grid where meta says its num_warps."""
    rows = [(1 << 20, "cdiv(n, BLOCK)", 128, 1024, 3, 1.0),
            (1 << 20, "4*sms", 256, 1024, 3, 1.05),      # BLOCK 1024 again: 8 warps, 4*sms
            (1 << 20, "sms", 64, 256, 2, 1.1)]
    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "copy-fp32", final=False, rows=rows), out)
    mod = load(out)
    assert len(mod.WINNERS["NVIDIA H200"][0]["top"]) == 3
    offered = [(c.kwargs["BLOCK"], c.num_warps) for c in mod.configs(k=10)]
    assert offered == [(1024, 4), (256, 2)]
    assert [(c.kwargs["BLOCK"], c.num_warps) for c in mod.configs(n=1 << 18)] == offered
    assert mod.grid({"BLOCK": 1024}, n=10_000) == (10,)
    assert mod.grid({"BLOCK": 1024, "num_warps": 8}, n=10_000) == (4 * 132,)
    _, timed = autotuned(mod, k=4)
    assert set(timed) == {(3,), (132,)}           # cdiv(3000, 1024) and sms: each its own


def test_another_gpu_merges_and_foreign_files_are_refused(tmp_path):
    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "a"), out)
    export_triton(study(tmp_path / "b", gpu="NVIDIA B200", final=False), out)
    mod = load(out)
    assert sorted(mod.GPUS) == ["NVIDIA B200", "NVIDIA H200"]
    assert mod.WINNERS["NVIDIA B200"][1]["trial"] == 4          # no final: the sweep's best
    with pytest.raises(KeyError, match="no configs for GPU"):
        mod.configs(gpu="NVIDIA A100")
    with pytest.raises(SweeperError, match=r"holds kernel 'copy', not 'add'; one module per "
                                           r"kernel: give another -o"):
        export_triton(study(tmp_path / "c", kernel="add"), out)
    mine = tmp_path / "mine.py"
    mine.write_text("x = 1\n")
    with pytest.raises(SweeperError, match=r"mine.py: not a module `sweeper export --format "
                                           r"triton` wrote"):
        export_triton(study(tmp_path / "d"), mine)
    assert mine.read_text() == "x = 1\n"


def test_a_cuda_c_kernels_study_is_refused_and_nothing_written(tmp_path, capsys):
    """A CUDA C kernel's configs are defines and a grid, which no ``@triton.autotune``
    takes: the export is refused in one line, exit 2, and no module is written."""
    study(tmp_path / "cu", kernel="cuda")
    assert main(["export", str(tmp_path / "cu"), "--format", "triton"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: kernel cuda is compiled CUDA C, not a Triton kernel: its configs cannot "
        "feed @triton.autotune; allowed: --format header (a C header of #defines), tuning "
        "(sweeper.tuned(...).cuda_launch(): the launch for cupy), csv, parquet or optuna\n")
    assert not (tmp_path / "cu" / "tuned_configs.py").exists()


def test_a_user_kernel_and_a_built_in_of_one_name_are_two_modules(tmp_path):
    out = tmp_path / "tuned_scale.py"
    user = study(tmp_path / "user", kernel="examples.scale:scale")
    meta = json.loads((user.root / "study.json").read_text())
    (user.root / "study.json").write_text(json.dumps({**meta, "kernel_name": "scale"}))
    export_triton(user, out)
    with pytest.raises(SweeperError, match=r"holds kernel 'examples.scale:scale', not "
                                           r"'scale'; one module per kernel"):
        export_triton(study(tmp_path / "builtin", kernel="scale", gpu="NVIDIA B200"), out)
    export_triton(user, out)                                # its own kernel: merged again
    assert load(out).KERNEL == "scale"


def test_studies_of_one_gpu_merge_their_problems_winners(tmp_path, capsys):
    out = tmp_path / "tuned_copy.py"
    small = [r for r in ROWS if r[0] == 1 << 20]
    big = [r for r in ROWS if r[0] == 1 << 30]
    export_triton(study(tmp_path / "small", rows=small, final=False), out)
    assert main(["export", str(study(tmp_path / "big", rows=big, final=False).root),
                 "--format", "triton", "-o", str(out)]) == 0
    assert "wrote 1 winner and 3 distinct configs" in capsys.readouterr().out
    mod = load(out)
    assert [(w["dims"]["n"], w["trial"], w["study"]) for w in mod.WINNERS["NVIDIA H200"]] \
        == [((1 << 20) // 4, 0, "small"), ((1 << 30) // 4, 0, "big")]
    assert mod.pick(n=1 << 18).kwargs == {"BLOCK": 1024}            # small's winner
    assert mod.pick(n=1 << 28).kwargs == {"BLOCK": 256}             # big's winner
    assert [c.kwargs["BLOCK"] for c in mod.configs(k=10)] == [1024, 256, 4096]
    # a study measuring a problem again replaces that problem's winner only
    export_triton(study(tmp_path / "again", rows=ROWS[5:6], final=False), out)
    winners = load(out).WINNERS["NVIDIA H200"]
    assert [(w["study"], w["config"].kwargs["BLOCK"]) for w in winners] == [
        ("small", 1024), ("again", 1024)]


def test_the_grid_of_a_config_told_apart_by_its_num_stages(tmp_path):
    out = tmp_path / "tuned_copy.py"
    rows = [(1 << 20, "sms", 128, 1024, 3, 1.0), (1 << 30, "cdiv(n, BLOCK)", 128, 1024, 4, 2.0)]
    export_triton(study(tmp_path / "a", rows=rows, final=False), out)
    mod = load(out)
    n = (1 << 30) // 4
    big = mod.pick(n=n)
    assert big.num_stages == 4
    assert mod.grid({**big.all_kwargs()}, n=n) == (n // 1024,)
    assert mod.grid({**mod.pick(n=1 << 18).all_kwargs()}, n=n) == (132,)


def test_a_winner_is_launched_on_the_grid_it_won_with(tmp_path):
    rows = [(1 << 20, "sms", 128, 1024, 3, 1.0),                  # faster in the sweep
            (1 << 20, "cdiv(n, BLOCK)", 128, 1024, 3, 1.1)]       # the final's winner
    store = study(tmp_path / "a", rows=rows, final=False)
    store = StudyStore(store.root)
    store.append(FinalRecord(problem=ProblemKey("float32", 1 << 20), winner=1, tied=[0],
                             finalists=[Finalist(number=n, samples_ms=[m] * 50,
                                                 stats=summarize([m] * 50))
                                        for n, m in ((1, 1.0), (0, 1.002))]))
    store.close()
    out = tmp_path / "tuned_copy.py"
    export_triton(store, out)
    mod = load(out)
    assert mod.WINNERS["NVIDIA H200"][0]["grid"] == "cdiv(n, BLOCK)"
    assert mod.grid({"BLOCK": 1024}, n=1 << 20) == ((1 << 20) // 1024,)   # not 132 (sms)


def test_grid_expressions_become_python_over_the_problem():
    assert grid_source("cdiv(n, BLOCK)") == "_cdiv(e['n'], e['BLOCK'])"
    assert grid_source("min(4*sms, isqrt(n) // 2)") == \
        "_min(4 * e['sms'], _isqrt(e['n']) // 2)"


@pytest.mark.gpu
def test_on_a_gpu_the_module_feeds_autotune_and_tuned_kernel_dispatches(tmp_path):
    """The same flow compiled for the GPU: autotune times the exported configs with its own
    do_bench, and the decorator launches with the tuned config of each shape."""
    import sweeper

    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "copy-fp32"), out)
    mod = load(out)
    body = jit(_copy_body, interpret=False)
    kernel = triton.autotune(configs=mod.configs(k=3), key=mod.key)(body)
    x = torch.randn(1 << 20, device="cuda")
    y = torch.full_like(x, float("nan"))
    kernel[lambda meta: mod.grid(meta)](x, y, x.numel())
    torch.cuda.synchronize()
    assert torch.equal(x, y)
    tuning = tmp_path / "tuning.json"
    from sweeper.export import export_study

    export_study(study(tmp_path / "copy2"), tuning)
    gpu = torch.cuda.get_device_name(0)
    launcher = sweeper.tuned_kernel(tuning, key=["n"], name="copy", gpu="NVIDIA H200")(body)
    for n in (1 << 18, 1 << 20, 1 << 26):
        a = torch.randn(n, device="cuda")
        b = torch.full_like(a, float("nan"))
        with warnings.catch_warnings():
            warnings.simplefilter("error", TuningWarning)      # each within 4x of a tuned n
            launcher(a, b, n)
        torch.cuda.synchronize()
        assert torch.equal(a, b), (gpu, n)
    assert launcher.lookups == 3


def test_the_module_dispatches_a_shape_by_sweepers_rule(tmp_path):
    """configs(**dims) gives the candidates of sweeper.dispatch, pick(**dims) the first:
    n = 2**23 lies half way (log space) between the tuned 2**18 and 2**28 elements."""
    store = study(tmp_path / "s")
    path, _ = export_triton(store, tmp_path / "tuned_copy.py")
    mod = load(path)
    asked = mod.configs(n=1 << 23)
    assert [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in asked] == [
        (1024, 4, 3), (256, 2, 2), (4096, 8, 3)]          # grids of one Config merged
    assert len(mod.configs(k=2, n=1 << 23)) == 2
    assert mod.pick(n=5).kwargs == {"BLOCK": 1024} and mod.pick(n=1 << 30).num_warps == 4
    assert mod.pick(n=1 << 18, dtype="torch.float32").kwargs == {"BLOCK": 1024}
    assert len(mod.configs()) == 3                        # without dims: the ranked top
    with pytest.raises(TypeError, match=r"give the problem's dims \['n'\], got \['M'\]"):
        mod.pick(M=4)
    with pytest.raises(KeyError, match="no problem tuned in dtype 'float16'; tuned: float32"):
        mod.configs(n=4, dtype="float16")
    # the dtype's other names, as sweeper.tuned takes them (fp32 was no problem tuned)
    assert mod.pick(n=1 << 18, dtype="fp32") == mod.pick(n=1 << 18, dtype="FLOAT32") \
        == mod.pick(n=1 << 18, dtype=torch.float32)


@pytest.mark.parametrize("size", [0, -3, 4096.0, True])
def test_a_dimension_no_problem_has_is_a_value_error_naming_it(tmp_path, size):
    """pick(n=0) raised ZeroDivisionError and pick(n=-3) 'math domain error' from inside
    the log distance: a size the module cannot look up is one ValueError naming it and
    what it takes (a numpy integer is a whole number, as sweeper.tuned takes it)."""
    import numpy as np

    path, _ = export_triton(study(tmp_path / "s"), tmp_path / "tuned_copy.py")
    mod = load(path)
    for ask in (mod.pick, mod.configs):
        with pytest.raises(ValueError) as err:
            ask(n=size)
        assert str(err.value) == (f"n={size!r}: give each of the problem's dims ['n'] a "
                                  "whole number of at least 1")
    assert mod.pick(n=np.int64(1 << 18)) == mod.pick(n=1 << 18)


def test_a_shape_far_from_every_tuned_one_is_warned_as_sweeper_tuned_warns(tmp_path):
    """pick() and configs(**dims) at a shape more than 4x from the nearest tuned one in a
    dimension warn, at the caller's line, saying what to tune and into which study, as
    sweeper.tuned does (they gave the far winner without a word); a near shape says
    nothing."""
    mod = load(export_triton(study(tmp_path / "s", sized=True), tmp_path / "tuned_copy.py")[0])
    with pytest.warns(UserWarning, match=r"^tuned_\w+: the nearest tuned problem, "
                      r"n=262144, is far from the asked n=5 \(more than 4x in a dimension\); "
                      r"its configs may be far from this problem's best: tune n=5 \(add it to "
                      r"the space of study s, run it and export the study again\)$") as said:
        assert mod.pick(n=5).kwargs == {"BLOCK": 1024}
    assert [w.filename for w in said] == [__file__]
    with pytest.warns(UserWarning, match=r"n=268435456, is far from the asked n=4294967296"):
        mod.configs(n=1 << 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.pick(n=1 << 20)                           # 4x from 2**18: not far
        mod.configs(n=1 << 19)


def test_k_means_the_same_with_and_without_dims(tmp_path):
    """configs(k=N) gives the first N with or without dims, and k=None the top 4 without
    them and every candidate with them; k=0 (or below, or not a whole number) is a
    ValueError either way: it gave the default 4 without dims and every candidate with
    them, and k=-1 all but the last."""
    rows = [(fp, "cdiv(n, BLOCK)", 128, block, 3, ms * (1 + i / 10))
            for fp, ms in ((1 << 20, 1.0), (1 << 30, 2.0))
            for i, block in enumerate((256, 512, 1024, 2048, 4096, 8192))]
    path, _ = export_triton(study(tmp_path / "s", final=False, rows=rows),
                            tmp_path / "tuned_copy.py")
    mod = load(path)
    for dims in ({}, {"n": 1 << 23}):
        assert [len(mod.configs(k=k, **dims)) for k in (1, 2, 5, 100)] == [1, 2, 5, 6]
        for k in (0, -1, 2.0, True):
            with pytest.raises(ValueError, match=rf"configs\(k={k!r}\): k is how many "
                               r"configs to give, a whole number of at least 1, or None"):
                mod.configs(k=k, **dims)
    assert len(mod.configs()) == 4 and len(mod.configs(n=1 << 23)) == 6


def test_a_grid_over_n_is_launched_at_dimensions_not_tuned(tmp_path):
    """``spaces/matmul.yaml``'s grid reads ``n``, which ``@triton.autotune`` never passes:
    the module carries the kernel's footprint rule and works ``n`` out from the dimensions
    (M, N, K, from meta or as keywords), in bytes of the tensors' element, or of the one
    dtype tuned."""
    studies = tmp_path / "st"
    assert main(["run", "spaces/matmul.yaml", "--device",
                 "replay:tests/data/replay/h200-matmul.csv", "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0
    path = tmp_path / "tuned_mm.py"
    assert main(["export", str(studies / "matmul-bf16-replay"), "--format", "triton",
                 "-o", str(path)]) == 0
    mod = load(path)
    ranked = next(iter(mod._DATA["gpus"].values()))["ranked"]
    first = {}                  # grid() takes the first ranked config of these kwargs
    for c in ranked:
        first.setdefault(json.dumps([c["kwargs"], c["num_warps"]], sort_keys=True), c)
    tuned = next(c for c in first.values() if "isqrt(n)" in c["grid"])
    kwargs = {**tuned["kwargs"], "num_warps": tuned["num_warps"]}
    bm, bn = kwargs["BLOCK_M"], kwargs["BLOCK_N"]
    dims = {"M": 2048, "N": 2048, "K": 2048}         # n = max(M K, K N, M N) = 2048²
    assert mod.grid({**kwargs, **dims}) == (triton.cdiv(2048, bm) * triton.cdiv(2048, bn),)
    a = torch.empty(1, dtype=torch.float32)           # a float32 tensor: 4-byte elements
    assert mod.grid({**kwargs, "a": a}, **dims) == mod.grid({**kwargs, **dims})
    with pytest.raises(TypeError, match="needs 'n'"):          # no M: no footprint either
        mod.grid({**kwargs, "N": 2048, "K": 2048})


def test_the_key_names_only_the_kernels_arguments_and_dispatch_all_dims(tmp_path, capsys,
                                                                       write_space):
    """The issue's layer norm: dims M, N, grid M, no argument M.  Its key is ["N"], which
    @triton.autotune takes (["M", "N"] raised "key contains names that are not kernel
    arguments: M"), while configs(M=..., N=...) still dispatches by both dims; the
    export's line says why M is left out.  A from_autotune study's key is the
    autotuner's own."""
    from tests.short_kernels_for_tests import centre_rows

    space = write_space("""
        study: centre
        kernel: tests.short_kernels_for_tests:centre
        sampler: exhaustive
        params: {BLOCK_SIZE: [64, 128], block: [32, 64], M: [8], N: [64]}
        measure: {warmup: 1, repeat: 3}
    """)
    studies = tmp_path / "studies"
    out = interpreted_module(space, studies, "centre")
    assert capsys.readouterr().out.rstrip().endswith(
        "configs(k=4) feeds @triton.autotune); key ['N']: M is no argument of the kernel "
        "(configs(**dims) and pick(**dims) take every dimension)")
    mod = load(out)
    assert mod.key == ["N"] and mod.DIMS == ["M", "N"]
    assert mod.pick(M=8, N=64).kwargs["BLOCK_SIZE"] in (64, 128)
    with pytest.raises(TypeError, match=r"give the problem's dims \['M', 'N'\], got \['N'\]"):
        mod.pick(N=64)
    kernel = triton.autotune(configs=mod.configs(k=4), key=mod.key,
                             do_bench=mod.do_bench)(centre_rows)
    x = torch.randn(8, 64)
    y = torch.full_like(x, float("nan"))
    kernel[lambda meta: mod.grid(meta, M=8)](x, y, x.stride(0), 64)
    torch.testing.assert_close(y, x - x.mean(dim=1, keepdim=True), rtol=1e-4, atol=1e-5)

    assert main(["run", "--from-autotune", "tests.short_kernels_for_tests:add", "--device",
                 "interpret", "-p", "n_elements=2048", "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0
    out = tmp_path / "tuned_add.py"
    assert main(["export", str(studies / "add-interpret"), "--format", "triton", "-o",
                 str(out)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("feeds @triton.autotune)")
    assert load(out).key == ["n_elements"]


def test_a_winner_measured_shrunk_is_picked_exactly_by_the_problem_asked(tmp_path,
                                                                         write_space):
    """The interpreter measures 1 GiB as 8 KiB (n=2048) and 4 GiB as 16 KiB (n=4096):
    each winner keeps the problem asked beside the one measured, as a tuning entry does,
    and pick() by either is exact (by the asked n=2**28 it gave the nearest measured
    problem's winner, 4 GiB's BLOCK=1024); a problem tuned at neither is as far as the
    problem measured, as before."""
    space = write_space("""
        study: cp
        kernel: copy
        sampler: exhaustive
        params:
          grid: [sms]
          block: [128]
          shape: {zip: {footprint: [1GiB, 4GiB], BLOCK: [256, 1024]}}
          dtype: [float32]
        measure: {warmup: 1, repeat: 2, stop: fixed}
    """)
    mod = load(interpreted_module(space, tmp_path / "studies", "cp"))
    winners = mod.WINNERS["Triton interpreter (CPU)"]
    assert [(w["dims"], w["asked_dims"], w["footprint"], w["asked_footprint"])
            for w in winners] == [({"n": 2048}, {"n": 1 << 28}, 8 << 10, 1 << 30),
                                  ({"n": 4096}, {"n": 1 << 30}, 16 << 10, 4 << 30)]
    assert [mod.pick(n=n).kwargs["BLOCK"] for n in (1 << 28, 2048, 1 << 30, 4096)] == [
        256, 256, 1024, 1024]
    assert [c.kwargs["BLOCK"] for c in mod.configs(n=1 << 28)] == [256]     # exact: its own
    assert mod.pick(n=1 << 29).kwargs["BLOCK"] == 1024    # nearest measured: n=4096


def test_a_winner_measured_shrunk_never_replaces_one_measured_at_its_size(tmp_path,
                                                                         write_space):
    """A module holds one winner per problem a GPU was tuned for: a study measuring 1 MiB
    as 16 KiB (n=4096) exported after one measuring 16 KiB at that size replaced its
    winner; both are kept now, and pick(n=4096) is the one measured there for it,
    pick(n=2**18) the one tuned for 1 MiB, in either order of export."""
    for name, block, footprint in (("small", 256, "16KiB"), ("big", 1024, "1MiB")):
        space = write_space(f"""
            study: {name}
            kernel: copy
            sampler: exhaustive
            params: {{grid: [sms], block: [128], BLOCK: [{block}], footprint: [{footprint}]}}
            measure: {{warmup: 1, repeat: 2, stop: fixed}}
        """, f"{name}.yaml")
        assert main(["run", str(space), "--device", "interpret", "--studies-dir",
                     str(tmp_path / "studies"), "--quiet", "--no-report"]) == 0
    for order in (("small", "big"), ("big", "small")):
        out = tmp_path / f"tuned_{order[0]}_first.py"
        for name in (*order, *order):
            assert main(["export", str(tmp_path / "studies" / f"{name}-interpret"),
                         "--format", "triton", "-o", str(out)]) == 0
        mod = load(out)
        winners = mod.WINNERS["Triton interpreter (CPU)"]
        assert sorted((w["study"], w["dims"]["n"], w.get("asked_dims", {}).get("n"))
                      for w in winners) == [("big-interpret", 4096, 1 << 18),
                                            ("small-interpret", 4096, None)]
        assert mod.pick(n=4096).kwargs["BLOCK"] == 256, order
        assert mod.pick(n=1 << 18).kwargs["BLOCK"] == 1024, order


def test_a_dimension_given_by_p_in_place_of_the_footprint_keeps_the_problem_asked(
        tmp_path, write_space):
    """A space that leaves copy's size to its default footprint, run with ``-p n=2**20``:
    the interpreter measures n=4096, and every export still names the problem asked, as
    for a space whose text gives n (they named none: the tuning entry and the module had
    no ``asked_dims``, so ``pick(n=2**20)`` was 256 times off, and the replay table had no
    ``shrunk`` line)."""
    space = write_space("""
        study: cp
        kernel: copy
        sampler: exhaustive
        params: {grid: [sms], block: [128], BLOCK: [256, 1024]}
        measure: {warmup: 1, repeat: 2, stop: fixed}
    """)
    studies = tmp_path / "studies"
    assert main(["run", str(space), "-p", "n=1048576", "--device", "interpret",
                 "--studies-dir", str(studies), "--quiet", "--no-report"]) == 0
    root = str(studies / "cp-interpret")
    assert main(["export", root, "-o", str(tmp_path / "tuning.json")]) == 0
    [entry] = json.loads((tmp_path / "tuning.json").read_text())["entries"]
    assert (entry["dims"], entry["asked_dims"], entry["asked_footprint"]) == (
        {"n": 4096}, {"n": 1 << 20}, 4 << 20)
    out = tmp_path / "tuned_cp.py"
    assert main(["export", root, "--format", "triton", "-o", str(out)]) == 0
    [winner] = load(out).WINNERS["Triton interpreter (CPU)"]
    assert winner["asked_dims"] == {"n": 1 << 20}
    assert main(["export", root, "--format", "csv", "-o", str(tmp_path / "t.csv")]) == 0
    assert "# shrunk: n 1048576 → 4096\n" in (tmp_path / "t.csv").read_text()


@pytest.mark.parametrize("name, instead", [("tuned-copy.py", "tuned_copy.py"),
                                           ("tuned.txt", "tuned.py"),
                                           ("class.py", "_class.py")])
def test_a_module_written_under_a_name_import_cannot_name_says_what_to_call_it(
        tmp_path, capsys, name, instead):
    """The line said "import it" of ``tuned-copy.py`` too, which no import statement can
    name: it says the name to give the file instead (the module is written all the
    same, and loads from its path)."""
    store = study(tmp_path / "s")
    out = tmp_path / name
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert f"to {out} (`import` cannot name {name}: rename it {instead} to import it; " \
        "configs(k=4) feeds @triton.autotune)" in capsys.readouterr().out
    renamed = out.rename(tmp_path / instead)
    assert load(renamed).pick(n=1 << 18).kwargs == {"BLOCK": 1024}


def test_an_older_module_without_dims_dispatches_by_its_key(tmp_path):
    """A module exported before DIMS: its key was every dimension, and still is DIMS."""
    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "copy-fp32"), out)
    text = out.read_text()
    line = next(x for x in text.splitlines() if x.startswith("_DATA = json.loads("))
    data = json.loads(ast.literal_eval(line[len("_DATA = json.loads("):-1]))
    del data["dims"]
    out.write_text(text.replace(line, f"_DATA = json.loads({json.dumps(json.dumps(data))})"))
    mod = load(out)
    assert mod.key == mod.DIMS == ["n"] and mod.pick(n=1 << 20).kwargs == {"BLOCK": 1024}


@pytest.mark.parametrize("damage", [{"gpus": []}, {"kernel": None}, ["copy"], 7])
def test_a_module_whose_data_is_not_a_modules_is_refused_in_one_line(tmp_path, capsys,
                                                                     damage):
    """A module this command wrote whose _DATA line was edited into other JSON (its GPUs
    a list, no kernel, not an object): exporting into it again says so, where it raised
    a TypeError or KeyError, and the file is left as it is."""
    out = tmp_path / "tuned_copy.py"
    store = study(tmp_path / "copy-fp32")
    export_triton(store, out)
    text = out.read_text()
    line = next(x for x in text.splitlines() if x.startswith("_DATA = json.loads("))
    data = json.loads(ast.literal_eval(line[len("_DATA = json.loads("):-1]))
    damaged = {**data, **damage} if isinstance(damage, dict) else damage
    text = text.replace(line, f"_DATA = json.loads({json.dumps(json.dumps(damaged))})")
    out.write_text(text)
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (f"sweeper: {out}: its _DATA line cannot be read (no "
                                       "kernel and GPUs); delete the file and export again\n")
    assert out.read_text() == text


def test_a_winner_whose_final_has_not_run_is_said_so(tmp_path, capsys):
    """A study whose interleaved final of a problem has not run yet (a run stopped first)
    exports that problem's sweep winner, as a tuning file does; the winner carries the
    same note as a tuning entry, and the command's line names the problem."""
    from sweeper.winners import UNFINISHED

    store = StudyStore(tmp_path / "s")
    store.create({"study": "s", "kernel": "copy",
                  "environment": {"gpu": "NVIDIA H200", "sms": 132, "l2_bytes": 1 << 20}})
    for i, (BLOCK, ms) in enumerate([(1024, 1.0), (256, 1.1)]):
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK,
            choice={"grid": "sms", "block": "128", "BLOCK": str(BLOCK)},
            config=Config(Problem("float32", 1 << 20), grid=1, block=128,
                          meta={"BLOCK": BLOCK}),
            samples_ms=[ms] * 20, stats=summarize([ms] * 20), gbps=1.0))
    store.close()
    out = tmp_path / "tuned_copy.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert capsys.readouterr().out == (
        f"wrote 1 winner and 2 distinct configs to {out} (import it; configs(k=4) feeds "
        f"@triton.autotune); the sweep's best for now at float32 1MiB: {UNFINISHED}\n")
    [winner] = load(out).WINNERS["NVIDIA H200"]
    assert winner["chosen_by"] == "sweep median" and winner["note"] == UNFINISHED


def exported_scale(tmp_path, monkeypatch, module):
    """examples/scale.py as the module ``module`` in ``tmp_path`` (on the path), a study of
    it recording its source's hash, and that study exported: the source's path and the
    module's; each test forgets the kernels warned of, as a new process does."""
    from pathlib import Path

    from sweeper import lookup
    from sweeper.kernels._unimported import module_source_hash

    source = tmp_path / f"{module}.py"
    source.write_text((Path(__file__).parent.parent / "examples" / "scale.py").read_text())
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    tuned_on = module_source_hash(f"{module}:scale")
    store = study(tmp_path / "s", kernel=f"{module}:scale", kernel_source_hash=tuned_on)
    return source, export_triton(store, tmp_path / "tuned_scale.py")[0]


def test_importing_the_module_warns_once_where_the_kernels_source_changed(tmp_path,
                                                                          monkeypatch):
    """The module's winners carry the source hash they were tuned on; imported where
    sweeper is installed, it compares that with the kernel's source now, read as lookups
    read it (the module's text, never run), and warns once at the importing line."""
    import sys

    from sweeper.errors import StaleTuningWarning

    source, path = exported_scale(tmp_path, monkeypatch, "stale_scale")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not load(path).STALE                  # the source it was tuned on: silent
    source.write_text(source.read_text().replace("A = 0.5", "A = 0.25"))
    with pytest.warns(StaleTuningWarning, match=(
            rf"^{path}: the winners of \S+ were tuned for an earlier source of "
            r"stale_scale:scale \(study s\); they are used as they are")) as said:
        load(path)
    assert [w.filename for w in said] == [__file__]      # at the line that imports it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(path).STALE                      # once per process
    assert "stale_scale" not in sys.modules


def test_an_export_whose_kernel_source_is_missing_is_refused_and_nothing_written(
        tmp_path, monkeypatch, capsys):
    """The module's key and footprint rule are read from the kernel's source: where its
    module is nowhere to be found (renamed, moved, or the study run in another folder),
    the export is refused in one line, exit 2, instead of writing a module whose key and
    footprint are guesses; with the module back on the path, it is written."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    store = study(tmp_path / "s", kernel="gone_scale:scale")
    out = tmp_path / "tuned_scale.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: kernel gone_scale:scale: its module gone_scale is neither imported nor a "
        f"file on the import path (the current folder, {tmp_path}, first): renamed, moved, or "
        "the study was run in another folder; the export reads the kernel's key and "
        "footprint from its source, as its study.json keeps neither the autotuner's key "
        "(the kernel declares no autotuned=, or an older sweeper ran it) nor the footprint "
        "rule (an older sweeper ran it): allowed: export from the folder that holds it, or "
        "with that folder on PYTHONPATH\n")
    assert not out.exists()
    (tmp_path / "gone_scale.py").write_text(
        (Path(__file__).parent.parent / "examples" / "scale.py").read_text())
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert load(out).key == ["n"]


def test_an_export_whose_kernel_module_no_longer_defines_it_is_refused(tmp_path, monkeypatch,
                                                                      capsys):
    """The kernel's module is there but its source defines the kernel's name no more
    (renamed or removed since the sweep): the key and footprint rule cannot be read from
    it, so the export is refused in one line naming the module and the name, exit 2,
    nothing written, rather than a module with a guessed key."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    store = study(tmp_path / "s", kernel="renamed_scale:scale", sized=True)
    source = tmp_path / "renamed_scale.py"
    text = (Path(__file__).parent.parent / "examples" / "scale.py").read_text()
    source.write_text(text.replace("def scale(", "def scale_v2("))
    out = tmp_path / "tuned_scale.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: kernel renamed_scale:scale: its module renamed_scale ({source}) no longer "
        "defines scale (renamed or removed since the sweep; did you mean 'scale_v2'?); the "
        "export reads the kernel's key and footprint from its source, as its study.json "
        "keeps neither the autotuner's key (the kernel declares no autotuned=, or an older "
        "sweeper ran it) nor the footprint rule (an older sweeper ran it): allowed: export "
        "with the source the study ran on, or sweep the kernel as it is now into a new study "
        "and export that\n")
    assert not out.exists()
    source.write_text(text)                               # the source the study ran on
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert load(out).key == ["n"]


def _moved(source):
    source.rename(source.with_name("elsewhere.py"))


def _renamed(source):
    source.write_text(source.read_text().replace("def scale(", "def scale_v2("))


@pytest.mark.parametrize("module, edit, why", [
    ("moved_scale", _moved,
     r"module 'moved_scale' is neither imported nor on the import path: renamed, or tuned "
     r"in another working folder\); they are used as they are, unchecked: run from the "
     r"folder that holds it, or tune it again$"),
    ("undefined_scale", _renamed,
     r"module 'undefined_scale' no longer defines 'scale': renamed or removed since; did "
     r"you mean 'scale_v2'\?\); they are used as they are, unchecked: to tune the kernel as "
     r"it is now, run its space into a new study \(`sweeper run SPACE --study NEW`, or "
     r"`sweeper run --from-autotune MODULE:KERNEL --study NEW` for an autotuned kernel\) "
     r"and export that$")])
def test_importing_the_module_warns_once_where_the_kernels_source_is_missing(
        tmp_path, monkeypatch, module, edit, why):
    """Imported where sweeper is installed but the kernel's module is nowhere on the path
    (renamed, moved, or imported from another folder), or is there but no longer defines
    the kernel (renamed or removed since), the source cannot be compared: the module
    still loads, and warns once, naming the module (and the name it lacks), as a tuning
    file's lookup does; ``STALE`` stays False (it cannot be told)."""
    from sweeper.errors import StaleTuningWarning

    source, path = exported_scale(tmp_path, monkeypatch, module)
    edit(source)
    with pytest.warns(StaleTuningWarning, match=(
            rf"^{path}: the winners of \S+ were tuned for a source of {module}:scale "
            rf"\(study s\) that cannot be found here to compare \({why}")) as said:
        mod = load(path)
    assert len(said) == 1 and [w.filename for w in said] == [__file__]
    assert not mod.STALE and mod.pick(n=1 << 20).kwargs == {"BLOCK": 1024}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(path)                                   # once per process


def test_an_export_reads_the_kernels_declaration_once(tmp_path, monkeypatch, capsys):
    """The module's CUDA C check, key, footprint rule and the key's note on the output
    line all come from one reading of the user kernel's declaration from its source."""
    from sweeper.kernels import _unimported

    store = study(tmp_path / "s", kernel="examples.scale:scale", sized=True)
    read, reads = _unimported.read_declaration, []

    def counted(*args, **kwargs):
        reads.append(args)
        return read(*args, **kwargs)
    monkeypatch.setattr(_unimported, "read_declaration", counted)
    out = tmp_path / "tuned_scale.py"
    assert main(["export", str(store.root), "--format", "triton", "-o", str(out)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("feeds @triton.autotune)")
    assert reads == [("examples.scale:scale", "examples.scale:scale")]
    # what the one reading gave is what each function, reading for itself, gives
    from sweeper.export import footprint_rule
    from sweeper.export_triton import _existing, autotune_key

    data = _existing(out)
    assert data["key"] == autotune_key("examples.scale:scale", ["n"])[0] == ["n"]
    assert data["footprint"] == footprint_rule("examples.scale:scale").text


def test_a_torch_op_study_is_refused_and_nothing_written(tmp_path, capsys):
    """A ``torch-op`` study times a library op: no Triton function launches with its
    winners, a grid and block that nothing reads, so a module of them would tune nothing
    (``configs()`` gave ``num_warps=1`` and ``grid()`` one program for whatever kernel took
    them).  The export is refused in one line, exit 2, naming the formats that keep its
    winners, and no module is written; ``--format tuning`` writes its entries."""
    from tests.test_export import torch_op_study

    gelu = torch_op_study(tmp_path, "g", "torch.nn.functional.gelu", 10.0)
    out = tmp_path / "tuned_gelu.py"
    assert main(["export", str(gelu.root), "--format", "triton", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        "sweeper: kernel torch-op calls a torch op, not a Triton kernel: its winners are a "
        "grid and block that nothing reads, which tune no @triton.autotune; allowed: "
        "--format tuning (sweeper.tuned), csv, parquet or optuna\n")
    assert not out.exists()
    assert main(["export", str(gelu.root), "-o", str(tmp_path / "tuning.json")]) == 0
    assert json.loads((tmp_path / "tuning.json").read_text())["entries"][0]["kernel"] == \
        "torch-op"


def test_a_modules_configs_and_pick_give_warm_winners_only_where_warm_is_asked(tmp_path):
    """As ``sweeper.tuned`` does, a module's ``configs()`` and ``pick()`` give winners
    measured cold unless asked for ``cache="warm"``: a warm-only study's module refuses a
    caller that did not ask (a ``KeyError`` naming the mode it has), rather than serve
    its winners as cold ones, and a cold one's refuses a caller asking for warm."""
    from tests.test_export import warm_study

    warm = load(export_triton(warm_study(tmp_path, "w", "warm", 512), tmp_path / "w.py")[0])
    n = (1 << 20) // 4
    for call in (lambda: warm.configs(), lambda: warm.configs(n=n), lambda: warm.pick(n=n)):
        with pytest.raises(KeyError, match=r"no configs for GPU 'Fake GPU' measured cold; "
                           r"its winners were measured warm only \(L2 not flushed\): ask "
                           r"for cache='warm'"):
            call()
    assert [c.kwargs for c in warm.configs(cache="warm")] == [{"BLOCK": 512}]
    assert warm.pick(cache="warm", n=n).kwargs == {"BLOCK": 512}
    with pytest.raises(ValueError, match=r"cache='hot': allowed: cold, warm"):
        warm.configs(cache="hot")
    cold = load(export_triton(warm_study(tmp_path, "c", "cold", 256), tmp_path / "c.py")[0])
    assert [c.kwargs for c in cold.configs()] == [{"BLOCK": 256}]
    assert cold.pick(n=n).kwargs == {"BLOCK": 256}
    with pytest.raises(KeyError, match=r"measured warm; its winners were measured cold only "
                       r"\(L2 flushed\): ask for cache='cold'"):
        cold.configs(cache="warm")


def test_a_module_of_several_devices_serves_the_interpreters_under_it(tmp_path, monkeypatch):
    """A module holding a GPU's winners and the interpreter's (README: exporting another
    device's study adds it) gave ``configs()`` on a machine without a GPU a ``KeyError``
    for GPU '?', and under ``TRITON_INTERPRET=1`` on a GPU machine the GPU's winners for
    interpreted launches; it takes the device as ``sweeper.tuned`` does: the interpreter
    where it is on or where no CUDA device is."""
    import torch

    out = tmp_path / "tuned_copy.py"
    export_triton(study(tmp_path / "a"), out)
    export_triton(study(tmp_path / "b", gpu="Triton interpreter (CPU)",
                        rows=[(1 << 20, "sms", 32, 128, 3, 1.0)], final=False), out)
    mod = load(out)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert [c.kwargs for c in mod.configs()] == [{"BLOCK": 128}]
    assert mod.grid({"n": 1 << 18, "BLOCK": 128}) == (132,)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert [c.kwargs for c in mod.configs()] == [{"BLOCK": 128}]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H200")
    assert mod.configs(k=1)[0].kwargs == {"BLOCK": 1024}
