"""Issue 4 without a GPU: replay tables, the auto sampler, priors, add and matmul kernels."""

import dataclasses
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.errors import SweeperError
from sweeper.finals import FinalRecord
from sweeper.kernels import load_kernel
from sweeper.measure import Stop, StopReason
from sweeper.samplers import AutoSampler
from sweeper.space import Config, Problem, SamplerSpec, load_space
from sweeper.store import DriftRecord, StudyStore
from sweeper.sweep import Sampling, Sweep, enumerate_choices, open_study
from sweeper.trial import TrialStatus
from tests.conftest import H200, priors_from_studies, shipped_spaces

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "tests" / "data" / "replay"


def replay_sweep(tmp_path, table, space_file, sampler="exhaustive", seed=0, **kwargs):
    device = open_device(f"replay:{TABLES / table}")
    space = load_space(ROOT / space_file)
    space = dataclasses.replace(space, sampler=SamplerSpec(name=sampler, seed=seed))
    kernel = load_kernel(space.kernel)
    store = StudyStore(tmp_path / f"{sampler}-{seed}")
    open_study(store, space, kernel, device, command="test")
    return Sweep(space, kernel, device, store, **kwargs).run(), store, device


def test_replaying_a_recorded_h200_table_reproduces_its_numbers(tmp_path):
    summary, store, device = replay_sweep(tmp_path, "h200-copy.csv", "spaces/copy.yaml")
    assert summary.measured == 204 and summary.finals == []     # nothing to re-measure
    assert device.header["gpu"] == "NVIDIA H200" and device.facts().sms == 132
    trials = {t.key(): t for t in store.records()[0] if t.ok}
    row = min(device.rows, key=lambda r: float(r["median_ms"]))
    best = max(trials.values(), key=lambda t: t.gbps)
    assert best.stats.median == pytest.approx(float(row["median_ms"]))
    assert best.choice["grid"] == row["grid"] and best.choice["BLOCK"] == row["BLOCK"]
    assert best.gbps == pytest.approx(2 * (1 << 30) / (float(row["median_ms"]) * 1e-3) / 1e9)
    assert best.stop_reason == StopReason(Stop.REPLAYED, "replayed") and len(best.samples_ms) == 50


def test_configs_missing_from_the_table_are_reported(tmp_path, write_space):
    table = tmp_path / "t.csv"
    lines = (TABLES / "h200-copy.csv").read_text().splitlines()
    table.write_text("\n".join(lines[:12]) + "\n")        # header, columns and 2 rows
    space = write_space(load_space(ROOT / "spaces/copy.yaml").text)
    rc = main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
               str(tmp_path / "st"), "--quiet", "--no-report"])
    assert rc == 0
    trials = StudyStore(tmp_path / "st" / "copy-fp32-replay").records()[0]
    missing = [t for t in trials if t.status is TrialStatus.MISSING]
    assert len(missing) == 202 and missing[0].reason == f"not in the replay table {table}"
    assert sum(t.ok for t in trials) == 2


def test_a_replay_whose_table_holds_none_of_the_configs_says_so_not_failed(tmp_path, capsys):
    """A config the recorded table has no row for was never measured, and is no failure of
    the kernel's: the run counts it apart, in its words, from the failed ones."""
    rc = main(["run", str(ROOT / "spaces/copy.yaml"), "-p", "footprint=3GiB", "--device",
               f"replay:{TABLES / 'h200-copy.csv'}", "--studies-dir", str(tmp_path),
               "--quiet", "--no-report"])
    out, err = capsys.readouterr()
    assert rc == 1                                      # nothing measured, no kernel fault
    lines = out.splitlines()
    done = next(line for line in lines if line.startswith("done: "))
    assert done.startswith("done: 0 measured, 0 failed, 204 configs the recorded table "
                           "does not hold, 6 skipped by constraints, ")
    assert not any(line.startswith("failed: ") for line in lines)
    assert (f"not measured: 204 configs the recorded table does not hold (first: #6 "
            f"grid=8*sms block=128 BLOCK=8192: not in the replay table {TABLES}/h200-copy.csv); "
            "replay a table recorded with this space, or measure them on a GPU") in lines
    assert err.startswith("sweeper: no config was measured: 204 configs the recorded table "
                          "does not hold (first: #6 ")
    assert "failed" not in err and "missing" not in err


@pytest.mark.parametrize("space_file, table, best", [
    ("spaces/matmul.yaml", "h200-matmul.csv", "746.8 TFLOP/s"),
    ("spaces/copy.yaml", "h200-copy.csv", "4256 GB/s"),
])
def test_run_prints_the_kernels_headline_rate(tmp_path, capsys, space_file, table,
                                              best):
    assert main(["run", space_file, "--device", f"replay:{TABLES / table}", "--studies-dir",
                 str(tmp_path), "--quiet", "--no-report"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("best in the sweep"))
    assert line.endswith(best)


def test_bad_replay_tables_say_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("grid,block\n1,32\n")
    with pytest.raises(SweeperError, match="needs a median_ms column; it has grid, block"):
        open_device(f"replay:{bad}")
    with pytest.raises(SweeperError, match="cannot read the replay table"):
        open_device(f"replay:{tmp_path / 'none.csv'}")
    # a name too long for the file system (Python 3.11's Path.exists raises it) and a
    # NUL in the name are refused in the same words, not with a traceback
    with pytest.raises(SweeperError, match="cannot read the replay table: File name too long"):
        open_device(f"replay:{tmp_path / ('x' * 300 + '.csv')}")
    with pytest.raises(SweeperError, match="not a file name"):
        open_device(f"replay:{tmp_path}/a\0b.csv")


def test_export_csv_round_trips_through_replay(small_space, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(small_space), "--device", "interpret", "--quiet",
                 "--no-report"]) == 0
    assert main(["export", "tiny-interpret", "--format", "csv", "-o", "t.csv"]) == 0
    assert "wrote 6 trials to t.csv" in capsys.readouterr().out
    text = Path("t.csv").read_text()
    assert text.startswith("# sweeper replay table v1\n# gpu: Triton interpreter (CPU)\n")
    assert "BLOCK,block,cache,dtype,footprint,grid,status,median_ms,samples_ms" in text
    assert main(["run", str(small_space), "--device", "replay:t.csv", "--quiet",
                 "--no-report"]) == 0
    original = {t.key(): t.stats.median for t in
                StudyStore("studies/tiny-interpret").records()[0] if t.ok}
    replayed = {t.key(): t.stats.median for t in
                StudyStore("studies/tiny-replay").records()[0] if t.ok}
    assert replayed == pytest.approx(original)


@pytest.mark.parametrize("table, space_file, within", [
    ("h200-copy.csv", "spaces/copy.yaml", 30),
    ("h200-add.csv", "spaces/add.yaml", 10),
    ("h200-matmul.csv", "spaces/matmul.yaml", 40),
])
def test_auto_reaches_98_percent_of_the_best_and_never_repeats(tmp_path, table, space_file,
                                                               within):
    _, store, _ = replay_sweep(tmp_path, table, space_file, sampler="auto",
                               max_trials=within)
    trials = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    keys = [t.key() for t in trials]
    assert len(keys) == len(set(keys)) == within
    everything, _, _ = replay_sweep(tmp_path / "all", table, space_file)
    assert max(t.score for t in trials) >= 0.98 * everything.best.score


def test_auto_proposes_priors_first_and_only_valid_configs():
    axes = {"a": ["1", "2", "3", "4"], "b": ["x", "y"]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"] if (a, b) != ("4", "y")]
    import optuna
    from optuna.distributions import CategoricalDistribution

    sampler = AutoSampler(axes, valid, seed=0, priors=[{"a": "3", "b": "y"},
                                                       {"a": "4", "b": "y"}])
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
    seen = []
    for _ in range(5):
        trial = study.ask(dists)
        seen.append(dict(trial.params))
        study.tell(trial, float(int(trial.params["a"]) + (trial.params["b"] == "y")))
    assert seen[0] == {"a": "3", "b": "y"}               # the valid prior first
    assert {"a": "4", "b": "y"} not in seen              # ruled out: not proposed
    assert len({tuple(sorted(s.items())) for s in seen}) == 5


def test_auto_proposes_with_blas_on_one_thread_and_gives_the_threads_back(monkeypatch):
    """A proposal's small matrices run on one BLAS thread (more spin beside the worker's
    compiles); the process's own setting is back once the proposal is made."""
    import optuna
    from optuna.distributions import CategoricalDistribution
    from threadpoolctl import threadpool_info, threadpool_limits

    axes = {"a": [str(i) for i in range(6)], "b": [str(i) for i in range(6)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    sampler = AutoSampler(axes, valid, seed=0, guesses=[1.0 + int(c["a"]) for c in valid])
    during: list[set[int]] = []
    propose = sampler.strategy.propose

    def watched():
        during.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return propose()

    monkeypatch.setattr(sampler.strategy, "propose", watched)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
    with threadpool_limits(limits=2, user_api="blas"):
        for _ in range(12):
            trial = study.ask(dists)
            study.tell(trial, float(int(trial.params["a"]) * int(trial.params["b"]) + 1))
        after = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert during and all(threads == {1} for threads in during)
    assert after == {2}


def test_the_surrogate_fits_its_length_scales_with_the_exact_gradient():
    """The fit hands L-BFGS the marginal likelihood's analytic gradient (one Cholesky per
    step instead of one per dimension and step); it must be the true one."""
    from scipy.optimize import approx_fprime

    from sweeper.samplers._surrogate import OrdinalGP

    rng = np.random.default_rng(3)
    x = rng.random((12, 3))
    model = OrdinalGP(x, np.sin(4 * x[:, 0]) + x[:, 1] ** 2)
    for point in (np.array([-1.0, 0.0, 0.5]), np.array([0.3, -0.7, -1.5])):
        _, grad = model._nll(point)
        numeric = approx_fprime(point, lambda s: model._nll(s)[0], 1e-6)
        assert grad == pytest.approx(numeric, rel=1e-3, abs=1e-4)


def test_the_surrogate_kernel_is_the_matern_of_the_scaled_distance():
    """The kernel between two sets of points is computed from |a|² + |b|² - 2 a·b (an
    m × n product, cheap at thousands of candidates); it must equal the direct formula."""
    from sweeper.samplers._surrogate import _matern52

    rng = np.random.default_rng(1)
    a, b, scales = rng.random((7, 3)), rng.random((5, 3)), np.array([0.3, 1.0, 2.0])
    r = np.sqrt((((a[:, None, :] - b[None, :, :]) / scales) ** 2).sum(-1)) * np.sqrt(5.0)
    assert _matern52(a, b, scales) == pytest.approx((1 + r + r * r / 3) * np.exp(-r))
    assert np.diag(_matern52(a, a, scales)) == pytest.approx(1.0)


def test_the_surrogate_fits_its_scales_on_a_capped_subset_and_predicts_from_all(monkeypatch):
    """Past ``FIT_POINTS`` points the length scales are fitted on the best half of that
    many and an even spread of the rest (the fit costs the cube of its points); the
    posterior still interpolates every point."""
    import sweeper.samplers._surrogate as surrogate

    monkeypatch.setattr(surrogate, "FIT_POINTS", 20)
    rng = np.random.default_rng(2)
    x = rng.random((60, 2))
    y = np.sin(3 * x[:, 0]) + 0.1 * x[:, 1]
    model = surrogate.OrdinalGP(x, y)
    rows = model._fitted_rows()
    assert len(rows) == 20 == len(set(rows.tolist()))
    assert set(np.argsort(-y)[:10].tolist()) <= set(rows.tolist())     # the best half
    assert model.scales[1] > model.scales[0]             # still learns what matters
    mean, _ = model.predict(x)
    assert np.abs(mean - y).max() < 0.05


def test_the_surrogate_learns_which_axis_matters_and_which_way():
    import numpy as np

    from sweeper.samplers._surrogate import OrdinalGP, expected_improvement

    rng = np.random.default_rng(0)
    x = rng.random((12, 2))
    y = 3.0 * x[:, 0] + 0.01 * rng.standard_normal(12)     # axis 0 matters, axis 1 does not
    model = OrdinalGP(x, y)
    assert model.scales[1] > 3 * model.scales[0]
    mean, std = model.predict(np.array([[0.9, 0.5], [0.1, 0.5]]))
    assert mean[0] > mean[1] + 1.5 and (std > 0).all()
    mean, std = model.predict(x)                             # it interpolates its data
    assert np.abs(mean - y).max() < 0.1
    gain = expected_improvement(np.array([1.0, 0.0]), np.array([0.1, 0.1]), best=0.5)
    assert gain[0] > 0.49 and 0 < gain[1] < 1e-3


def test_auto_ranks_neighbours_by_the_model_once_it_has_data():
    """From the best point, the first move is up the axis that the data say helps."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    start = [{"a": "3", "b": "3"}, {"a": "1", "b": "5"}, {"a": "5", "b": "1"},
             {"a": "0", "b": "0"}]
    sampler = AutoSampler(axes, valid, seed=0, priors=start, start_points=0)
    sampler.strategy.jumped = True                         # no marginal-best jump here
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: CategoricalDistribution(v) for k, v in axes.items()}

    def score(p):                                          # rises with a only
        return 2.0 ** int(p["a"]) * (1 + 0.001 * int(p["b"]))

    for _ in range(len(start)):
        trial = study.ask(dists)
        study.tell(trial, score(trial.params))
    move = study.ask(dists).params
    assert move["b"] == "1" and int(move["a"]) > 5         # along a, away from a=5, b=1


def test_kernel_models_guess_the_losses_a_launch_shape_predicts():
    """Each loss the built-in models name moves the guess the way the physics says."""
    copy, add, matmul = (load_kernel(k) for k in ("copy", "add", "matmul"))
    fp32 = Problem("float32", 1 << 30)

    def elementwise(kernel, grid, block, step, problem=fp32):
        return kernel.model(Config(problem, grid, block, {"BLOCK": step}), H200)

    tiles = fp32.n // 1024
    full = elementwise(copy, tiles, 256, 1024)          # one 4 KiB tile per program
    assert full > 0.9
    few = elementwise(copy, 132, 256, 1024)              # one program per SM: 4 KiB in flight
    assert few < 0.6 and elementwise(copy, 132, 512, 8192) > 1.4 * few    # 32 KiB
    assert elementwise(copy, tiles, 32, 16384) < 0.5     # 512 values a thread: spills
    # a grid-stride loop splits the work up front; one tile per program does not
    assert elementwise(copy, tiles // 2, 256, 1024) == pytest.approx(0.95 * full)
    # a 1 KiB tile is too little to hide a program's start; two per program are not
    small = elementwise(copy, fp32.n // 256, 32, 256)
    assert small < 0.8 < elementwise(copy, fp32.n // 512, 32, 256)
    # registers count per array: add's two inputs at 128 values each per thread do not
    # spill (measured 0.98-1.00 of the best on every recorded add table); 256 each do
    assert elementwise(add, tiles, 64, 8192) >= elementwise(copy, tiles, 64, 8192) > 0.9
    assert elementwise(add, tiles, 32, 8192) == pytest.approx(
        0.5 * elementwise(add, tiles, 64, 8192), rel=0.1)
    # one tile per program: a copy of 2-4 KiB tiles runs faster than one of 8 KiB and
    # more (every recorded copy table: 0.98-1.00 of the best against 0.94-0.97), also
    # where the larger tile has more bytes in flight; a grid-stride loop shows no such step
    assert elementwise(copy, fp32.n // 1024, 32, 1024) > elementwise(copy, fp32.n // 8192, 64,
                                                                        8192)
    assert elementwise(copy, 16 * 132, 64, 8192) > elementwise(copy, 16 * 132, 64, 1024)
    # fp16: a tile of the same elements moves half the bytes
    fp16 = Problem("float16", 1 << 30)
    assert (elementwise(copy, fp16.n // 512, 32, 512, fp16)
            < elementwise(copy, fp16.n // 1024, 32, 1024, fp16))

    def mm(side, grid, block, m, n, k=64, stages=3, dtype="bfloat16"):
        """The model's guess as FLOP/s (it guesses 1 / seconds)."""
        problem = Problem(dtype, side * side * {"bfloat16": 2, "float32": 4}[dtype])
        meta = {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_stages": stages}
        return 2 * side ** 3 * matmul.model(Config(problem, grid, block, meta), H200)

    assert mm(4096, 132, 256, 128, 256) > mm(4096, 132, 256, 128, 128)   # more reuse
    assert mm(4096, 132, 128, 128, 256) < 0.2 * mm(4096, 132, 256, 128, 256)  # spilled acc
    assert mm(2048, 132, 256, 128, 256, k=64, stages=4, dtype="float32") == 0.0  # no smem
    # a TMA store stages C's tile in shared memory beside the operands: 192 KiB of bf16
    # operands (128 × 256 × 64 tiles, four stages) and C's 64 KiB do not fit; half of C at
    # a time (EPILOGUE_SUBTILE) does, and pointer stores need none
    problem = Problem("bfloat16", 4096 * 4096 * 2)

    def tma(tma, subtile, split_k=1):
        meta = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4, "TMA": tma,
                "EPILOGUE_SUBTILE": subtile, "SPLIT_K": split_k}
        return matmul.model(Config(problem, 132, 256, meta), H200)

    assert tma(1, 0) == 0.0 < tma(1, 1) and tma(0, 0) > 0 and tma(1, 0, split_k=2) > 0
    assert mm(2048, 132, 256, 128, 128, k=32, dtype="float32") < 0.2 * mm(
        2048, 132, 256, 128, 128, k=32)                         # no 16-bit tensor cores
    # never faster than the tensor cores, and a 4096³ launch near them
    peak = 989e12
    assert 0.6 * peak < mm(4096, 512, 256, 128, 256) < peak
    # 1024³: 32 tiles of 128 × 256 leave 100 of 132 SMs idle; 128 tiles of 64 × 128 do not
    assert mm(1024, 32, 256, 128, 256) < mm(1024, 128, 128, 64, 128)
    # 3072³: 288 tiles of 128 × 256 take three rounds of 132 SMs, the last one 18 % full;
    # 4096³: 512 tiles take four, the last one 88 % full
    assert mm(3072, 288, 256, 128, 256) < 0.8 * mm(4096, 512, 256, 128, 256)
    # a shallow pipeline (2 slices of BLOCK_K 32 in flight) leaves memory latency uncovered
    assert mm(4096, 132, 256, 128, 256, k=32, stages=3) < 0.9 * mm(4096, 132, 256, 128, 256,
                                                                   stages=4)
    # one program per SM waits on its loads alone; two per SM overlap their waits
    assert mm(2048, 132, 128, 64, 64) < 0.7 * mm(2048, 1024, 128, 64, 64)
    # 1024³, 128 tiles of 64 × 128: a grid of 2 × SMs where two programs fit an SM may put
    # two working programs on one (measured 1.11-1.21 times a grid of the tiles on the
    # bf16 and fp16 1024³ tables), where one program fits it cannot; every program
    # beyond the tiles costs its start, so of equals a grid of the tiles is guessed
    # fastest (measured: 132 programs over 128 tiles 0.97-1.02 of 128)
    assert mm(1024, 264, 128, 64, 128, stages=4) < 0.9 * mm(1024, 128, 128, 64, 128, stages=4)
    one_fits = mm(1024, 264, 256, 128, 256, stages=4)       # 32 tiles, 192 KiB of smem
    assert 0.99 * mm(1024, 32, 256, 128, 256, stages=4) < one_fits
    assert mm(1024, 128, 128, 64, 128) > mm(1024, 132, 128, 64, 128) > mm(1024, 264, 128, 64,
                                                                          128)
    # at 1024³ the launch itself (4.5 µs) is about half the time: no shape nears the peak
    assert max(mm(1024, g, b, m, n, k, st) for g in (128, 256) for b in (128, 256)
               for m in (64, 128) for n in (64, 128) for k in (32, 64)
               for st in (3, 4)) < 0.35 * peak


def test_matmul_model_says_which_recorded_h200_configs_ran_out_of_shared_memory():
    """Every config of the recorded H200 matmul tables that failed out of resources is
    guessed 0 (cannot launch); of those that ran, only non-TMA ones with a flattened loop
    (which Triton does not pipeline, and which ran 4x slower than the best) are."""
    matmul = load_kernel("matmul")
    for table, space_file in ((ROOT / "benchmarks/tables/h200-matmul-bf16-long-k.csv",
                               "matmul-bf16-long-k.yaml"),
                              (ROOT / "benchmarks/tables/h200-matmul-short-k.csv",
                               "matmul-short-k.yaml"),
                              (TABLES / "h200-matmul-fp32.csv", "matmul-fp32.yaml")):
        name = table.name
        device = open_device(f"replay:{table}")
        space = load_space(ROOT / "benchmarks" / "spaces" / space_file)
        facts = device.facts()
        failed = 0
        for row in device.rows:
            config = space.resolve({p: row[p] for p in device.params}, facts.env(),
                                   facts.max_footprint)
            zero = matmul.model(config, facts) == 0
            if row.get("status", "ok") != "ok":
                assert zero, (name, row)
                failed += 1
            elif zero:
                assert config.meta.get("FLATTEN") == 1 and not config.meta.get("TMA"), row
        assert failed >= 6, name


def test_matmul_model_tracks_the_recorded_h200_times():
    """The matmul model's times against two recorded H200 tables, one it was fitted on
    (4096³) and one recorded after its constants were fixed (1152³, held-out set 7):
    ranked alike, times within ~10 % on average."""
    from scipy.stats import spearmanr

    matmul = load_kernel("matmul")
    for name, space_file in (("h200-matmul.csv", "matmul.yaml"),
                             ("h200-matmul-1152.csv", "matmul-1152.yaml")):
        device = open_device(f"replay:{TABLES / name}")
        space, facts = load_space(ROOT / "benchmarks" / "spaces" / space_file), device.facts()
        measured, guessed = [], []
        for row in device.rows:
            if row.get("status", "ok") == "ok" and row["median_ms"]:
                config = space.resolve({p: row[p] for p in device.params}, facts.env(),
                                       facts.max_footprint)
                measured.append(float(row["median_ms"]) / 1e3)
                guessed.append(1 / matmul.model(config, facts))
        assert spearmanr(measured, guessed).statistic > 0.9, name
        error = np.mean(np.abs(np.log(np.array(guessed) / np.array(measured))))
        assert error < 0.12, (name, error)


def test_auto_starts_among_the_models_best_guesses_and_still_reaches_everything():
    import optuna
    from optuna.distributions import CategoricalDistribution

    axes = {"a": [str(i) for i in range(6)], "b": [str(i) for i in range(6)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    guesses = [1.0 if int(c["a"]) + int(c["b"]) >= 8 else 0.1 for c in valid]
    pool = {tuple(sorted(c.items())) for c, g in zip(valid, guesses, strict=True) if g == 1.0}
    sampler = AutoSampler(axes, valid, seed=3, guesses=guesses)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
    seen = []
    for _ in range(200):
        trial = study.ask(dists)
        key = tuple(sorted(trial.params.items()))
        if key not in seen:
            seen.append(key)
        study.tell(trial, 1.0 + int(trial.params["a"]) - 0.5 * int(trial.params["b"]))
        if len(seen) == len(valid):
            break
    # the start: the best guess, then three points spread over the rest of the pool
    assert len(pool) == 6 and all(k in pool for k in seen[:4])
    assert seen[0] == min(pool)          # guesses tie: the first of the pool in key order
    assert len(seen) == len(valid)                   # the model orders; it removes nothing


def test_auto_follows_a_right_model_and_unlearns_a_wrong_one():
    """A right model leads straight to the peak; a model that puts the peak in the far
    corner (blindly followed: the true peak among the last ten of 64) costs some trials,
    not the space, because its slope is refitted to the measurements."""
    import math

    import optuna
    from optuna.distributions import CategoricalDistribution

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]

    def bump(c, a, b):
        return math.exp(-((int(c["a"]) - a) ** 2 + (int(c["b"]) - b) ** 2) / 8)

    def trials_to_peak(guesses, seed):
        sampler = AutoSampler(axes, valid, seed=seed, guesses=guesses)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
        for n in range(1, len(valid) + 1):
            trial = study.ask(dists)
            value = bump(trial.params, 6, 1)
            study.tell(trial, value)
            if value == 1.0:
                return n
        return None

    right = [bump(c, 6, 1) for c in valid]
    wrong = [bump(c, 1, 6) for c in valid]
    assert sorted(range(64), key=lambda i: -wrong[i]).index(right.index(1.0)) >= 54
    assert max(trials_to_peak(right, seed) for seed in range(5)) <= 6
    assert max(trials_to_peak(wrong, seed) for seed in range(5)) <= 20


def test_auto_returns_to_the_models_ranking_after_a_surprise(monkeypatch):
    """The H200's 128 × 64 matmul tile at 8 warps measured 13-30 % slower than at 4; the model
    cannot tell them apart.  Here the model's best guess is that trap, measured first;
    the residual process then writes off the peak next to it, and only the model turns
    (every ``MODEL_TURN``-th proposal: the best unmeasured guess) bring the search back."""
    import math

    import optuna
    from optuna.distributions import CategoricalDistribution

    import sweeper.samplers._auto_model as auto

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)],
            "warps": ["4", "8"]}
    valid = [{"a": a, "b": b, "warps": w} for a in axes["a"] for b in axes["b"]
             for w in axes["warps"]]

    def bump(c):
        return math.exp(-((int(c["a"]) - 6) ** 2 + (int(c["b"]) - 1) ** 2) / 8)

    def measured(c):
        if (c["a"], c["b"], c["warps"]) == ("6", "1", "8"):
            return 0.6                                       # the trap
        return bump(c) * (1.0 if c["warps"] == "4" else 0.97)

    guesses = [bump(c) * (1.0 if c["warps"] == "8" else 0.99) for c in valid]

    def trials_to_peak(seed):
        # six spread points (not the default three with a model): more measurements
        # around the trap for the residual process to be misled by
        sampler = AutoSampler(axes, valid, seed=seed, guesses=guesses, start_points=6)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
        for n in range(1, len(valid) + 1):
            trial = study.ask(dists)
            value = measured(trial.params)
            study.tell(trial, value)
            if value == 1.0:
                return n
        return None

    # a start among a sharp model's favourites measures the peak at once (the test
    # below); this one is about the turns
    monkeypatch.setattr(auto, "SHARP_MAX", 0)
    # the start: the trap (the best guess), then six spread points; then a model turn
    # by the third proposal
    assert max(trials_to_peak(seed) for seed in range(8)) <= 1 + 6 + auto.MODEL_TURN
    monkeypatch.setattr(auto, "MODEL_TURN", 10 ** 9)         # no turns: lost for longer
    assert max(trials_to_peak(seed) for seed in range(8)) > 20


def test_a_sharp_models_favourites_take_the_later_spread_points(monkeypatch):
    """Where at most ``SHARP_MAX`` configs are guessed within ``SHARP_POOL`` of the model's
    best, the spread points after the first are moved among them: a matmul or softmax
    model's second to tenth favourites hold a config within 2 % of the best on most of
    the tables it misses at once.  The first spread point still spreads over the wider
    pool, and a model with many favourites (add, copy) starts as before."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    import sweeper.samplers._auto_model as auto

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    # the model's favourite (0, 0) measures 0.9; its runner-up (0, 1), guessed 0.97, is
    # the best; a wide pool of configs guessed 0.85 lies across the space
    def guess(c):
        return {("0", "0"): 1.0, ("0", "1"): 0.97, ("1", "0"): 0.96}.get(
            (c["a"], c["b"]), 0.85 if (int(c["a"]) + int(c["b"])) % 3 == 0 else 0.5)

    def measured(c):
        return {("0", "0"): 0.9, ("0", "1"): 1.0}.get((c["a"], c["b"]), 0.6)

    def start(seed):
        sampler = AutoSampler(axes, valid, seed=seed, guesses=[guess(c) for c in valid])
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
        out = []
        for _ in range(1 + auto.MODEL_START_POINTS):
            trial = study.ask(dists)
            out.append((trial.params["a"], trial.params["b"]))
            study.tell(trial, measured(trial.params))
        return out

    favourites = {("0", "0"), ("0", "1"), ("1", "0")}
    for seed in range(5):
        first, spread, *later = start(seed)
        assert first == ("0", "0") and spread not in favourites
        assert set(later) == favourites - {first}            # the best among them
    monkeypatch.setattr(auto, "SHARP_MAX", 2)                # three favourites: not sharp
    starts = [start(seed) for seed in range(10)]
    assert sum(("0", "1") in s for s in starts) < 10        # spread over the wide pool
    assert len({s[2] for s in starts} - favourites) > 1


def test_a_model_turn_among_favourites_alike_takes_what_the_measurements_favour(monkeypatch):
    """The matmul model guesses a dozen configs alike at its top (they differ in TMA, the
    epilogue and the loop, which it does not model).  A model turn among such favourites
    takes the one of the highest expected improvement around the model, not the first in
    key order; with ``TURN_TIES`` off, the first in key order.  Below the favourites a turn
    keeps the model's order."""
    from optuna.trial import TrialState

    import sweeper.samplers._auto_model as auto
    from sweeper.samplers._auto import Phase, SearchState
    from sweeper.samplers._auto_state import Proposal

    axes = {"a": [str(i) for i in range(4)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    # the model: every config with a = 3 alike at its top, the rest far below
    guesses = [1.0 if c["a"] == "3" else 0.2 + 0.1 * int(c["a"]) for c in valid]

    def measured(a: str, b: str) -> float:
        """As the model guesses, times what it does not see: throughput grows with b."""
        return guesses[valid.index({"a": a, "b": b})] * (1.0 + int(b) / 7)

    def turn(measured_configs: list[tuple[str, str]]) -> Proposal | None:
        """The proposal after ``measured_configs`` (and a slow one the model rates low),
        in a model turn's slot."""
        state = SearchState(axes, valid, seed=0)
        search = auto.ModelGuidedSearch(state, valid, guesses)
        for a, b in [*measured_configs, ("0", "7")]:
            state.record({"a": a, "b": b}, TrialState.COMPLETE, [measured(a, b)])
        search._turns = auto.MODEL_TURN - 1                # the next proposal is a turn
        return search.propose()

    three = [("3", b) for b in ("0", "1", "7")]
    assert turn(three) == ({"a": "3", "b": "6"}, Phase.TURN)  # next to the fastest measured
    monkeypatch.setattr(auto, "TURN_TIES", False)
    assert turn(three) == ({"a": "3", "b": "2"}, Phase.TURN)  # the first unmeasured, key order
    monkeypatch.setattr(auto, "TURN_TIES", True)
    # every favourite measured: the model's order below them, not the measurements'
    assert turn([("3", b) for b in axes["b"]]) == ({"a": "2", "b": "0"}, Phase.TURN)


def test_auto_explores_without_the_model_once_its_promised_gains_stop_coming():
    """After ``PATIENCE`` measured configs in a row with no gain above 1 %, every
    ``EXPLORE_EVERY``-th proposal comes from a process of the measurements alone (a
    region the model rates middling is never reached through the model); a gain puts the
    model back in charge."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    import sweeper.samplers._auto_model as auto
    from sweeper.samplers._auto import Phase

    assert auto.stale_for([1.0, 1.005, 0.9, 1.02, 1.0]) == 1     # 1.02: a gain above 1 %
    assert auto.stale_for([1.0, 1.0, 1.0]) == 2
    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    guesses = [1.0 / (1 + int(c["a"]) + int(c["b"])) for c in valid]
    sampler = AutoSampler(axes, valid, seed=0, guesses=guesses)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
    for _ in range(auto.PATIENCE + 4):
        trial = study.ask(dists)
        study.tell(trial, 1.0)                   # a flat table: no gain ever comes
    phases = sampler.phases
    first = auto.PATIENCE + 1                    # the first value, then PATIENCE without gain
    assert Phase.EXPLORE not in phases[:first]
    assert phases[first] is phases[first + auto.EXPLORE_EVERY] is Phase.EXPLORE
    assert phases[first + 1] is not Phase.EXPLORE


def test_a_favourite_of_the_model_measured_far_below_the_incumbent_sends_auto_next_door(
        monkeypatch):
    """A config the model guesses at least as well as the incumbent that measures below
    ``CONTRADICTED`` of it: the next proposal is one of the incumbent's unmeasured
    neighbours (one axis, one level); a favourite that measures near the incumbent, or a
    config the model rates lower, changes nothing."""
    from optuna.trial import TrialState

    import sweeper.samplers._auto_model as auto
    from sweeper.samplers._auto import Phase
    from sweeper.samplers._auto_state import SearchState

    monkeypatch.setattr(auto, "CONTRADICTED", 0.5)
    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(4)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    guesses = [1.0 if c["b"] == "3" else 0.9 - 0.05 * abs(int(c["a"]) - 3) for c in valid]

    def after(*measured):
        state = SearchState(axes, valid, seed=0)
        search = auto.ModelGuidedSearch(state, valid, guesses)
        for (a, b), value in measured:
            state.record({"a": a, "b": b}, TrialState.COMPLETE, [value])
        return search.propose()

    start = [(("0", "0"), 0.5), (("3", "2"), 0.95)]       # the incumbent: a=3, b=2
    choice, phase = after(*start, (("5", "3"), 0.3))       # a favourite at a third of it
    assert phase is Phase.NEIGHBOUR
    assert sorted(abs(int(choice[k]) - int(v)) for k, v in (("a", "3"), ("b", "2"))) == [0, 1]
    assert after(*start, (("5", "3"), 0.6))[1] is not Phase.NEIGHBOUR    # near it
    assert after(*start, (("7", "1"), 0.3))[1] is not Phase.NEIGHBOUR    # rated lower
    monkeypatch.setattr(auto, "CONTRADICTED", 0.0)
    assert after(*start, (("5", "3"), 0.3))[1] is not Phase.NEIGHBOUR    # off


def test_auto_learns_where_configs_fail_and_weighs_its_proposals_by_it(monkeypatch):
    """Configs that fail (out of resources) cluster: here every config with ``a >= 6``.
    ``auto`` learns their region from the failures (:func:`feasibility`: near 0 beside a
    failure, 1 far from every failure) and weighs each proposal by it, so a model that
    rates the failing region best stops drawing the search there: the best config that
    runs is reached in a third of the trials, after a quarter of the failures."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    import sweeper.samplers._auto_state as state_module
    from sweeper.samplers._surrogate import FEASIBLE_FLOOR, feasibility

    ran, failed = np.array([[0.0, 0.0], [0.2, 0.1]]), np.array([[1.0, 1.0], [0.9, 1.0]])
    chance = feasibility(ran, failed, np.array([[1.0, 0.9], [0.5, 0.5], [0.1, 0.0]]))
    assert chance[0] < 0.3 and chance[0] < chance[1] < chance[2] <= 1.0
    assert feasibility(ran, np.empty((0, 2)), np.zeros((3, 2))).tolist() == [1.0] * 3
    nothing_ran = feasibility(np.empty((0, 2)), failed, np.array([[1.0, 0.9], [0.0, 0.0]]))
    assert FEASIBLE_FLOOR <= nothing_ran[0] < 0.1 and nothing_ran[1] > 0.9

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)],
            "c": [str(i) for i in range(4)]}
    valid = [dict(zip("abc", v, strict=True)) for v in itertools.product(*axes.values())]
    guesses = [1.0 + int(c["a"]) + int(c["b"]) for c in valid]     # a >= 6 rated best
    best = 1 + 5 + 7 + 0.9

    def search(learn, seed):
        """Trials until the best config that runs, and the failures before it."""
        monkeypatch.setattr(state_module, "FEASIBILITY", learn)
        sampler = AutoSampler(axes, valid, seed=seed, guesses=guesses)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
        for n in range(1, 41):
            trial = study.ask(dists)
            a, b, c = (int(trial.params[k]) for k in "abc")
            if a >= 6:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            study.tell(trial, 1.0 + a + b + 0.3 * c)
            if 1.0 + a + b + 0.3 * c >= best:
                ran = sum(1 for t in study.trials if t.state.name == "COMPLETE")
                assert len(sampler.state.failed) == n - ran      # every failure noted
                return n, len(sampler.state.failed)
        raise AssertionError("the best config was not reached in 40 trials")

    for seed in range(3):
        (trials, failures), (blind, blind_failures) = search(True, seed), search(False, seed)
        assert trials <= 10 and failures <= 4, seed
        assert blind >= 15 and blind_failures >= 12, seed


def test_auto_heeds_the_models_refusals_when_it_explores_without_the_model(monkeypatch):
    """A config the model guesses 0 (cannot launch: more shared memory than a program may
    have) counts as unlikely to run in every proposal, step 4's included, whose expected
    improvement otherwise ignores the model: on a flat table (no gain, so step 4 proposes
    every other config) none of the refused configs is proposed while others are left;
    without the rule step 4 proposes some."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    import sweeper.samplers._auto_model as auto
    from sweeper.samplers._auto import Phase

    axes = {"a": [str(i) for i in range(8)], "b": [str(i) for i in range(8)],
            "c": [str(i) for i in range(4)]}
    valid = [dict(zip("abc", v, strict=True)) for v in itertools.product(*axes.values())]
    guesses = [0.0 if int(c["a"]) >= 6 else 1.0 + int(c["b"]) for c in valid]

    def refused_proposals(heed):
        monkeypatch.setattr(auto, "HEED_REFUSALS", heed)
        counts = []
        for seed in range(3):
            sampler = AutoSampler(axes, valid, seed=seed, guesses=guesses)
            study = optuna.create_study(direction="maximize", sampler=sampler)
            dists = {k: CategoricalDistribution(v) for k, v in axes.items()}
            count = 0
            for _ in range(40):
                trial = study.ask(dists)
                if int(trial.params["a"]) >= 6:
                    count += 1
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                else:
                    study.tell(trial, 1.0)
            assert Phase.EXPLORE in sampler.phases
            counts.append(count)
        return counts

    assert refused_proposals(True) == [0, 0, 0]
    assert sum(refused_proposals(False)) > 0


def test_the_model_slope_follows_the_measurements_and_leans_on_the_model_when_few():
    import numpy as np

    from sweeper.samplers._surrogate import model_slope

    every = np.log(np.linspace(0.05, 1.0, 50))
    guess = every[[5, 20, 35, 49]]
    assert model_slope(guess, 2 * guess, every, 2.0) == pytest.approx(1.6, abs=0.2)
    contradicted = model_slope(guess, -guess, every, 2.0)     # the data say the opposite
    assert -1 < contradicted < 0.2
    many = every[::2]
    assert model_slope(many, -many, every, 2.0) < -0.7       # more data: the data win
    flat = np.zeros(4)                                        # no spread: nothing to fit
    assert model_slope(flat, np.log([1.0, 2.0, 3.0, 4.0]), np.zeros(50), 2.0) == 1.0


def test_the_sweep_hands_auto_the_kernels_guesses(tmp_path):
    space = load_space(ROOT / "spaces/copy.yaml")
    device = open_device(f"replay:{TABLES / 'h200-copy.csv'}")
    valid, _ = enumerate_choices(space, device.facts().env(), device.facts().max_footprint)
    kernel = load_kernel("copy")
    for name, expect in (("auto", True), ("tpe", False)):
        spec = dataclasses.replace(space, sampler=SamplerSpec(name=name, seed=0))
        guesses = Sampling.build(spec, kernel, device.facts(), []).guesses
        assert (guesses is not None) == expect
        if expect:
            assert len(guesses) == len(valid) and 0.9 < max(guesses) <= 1.0
            assert max(guesses) > 4 * min(guesses)          # spilled and starved launches


def test_priors_from_another_dtype_keep_the_bytes_per_step(tmp_path):
    """fp32 copy's winners, offered to an fp16 space: BLOCK counts elements, so it is
    doubled first (the same bytes per step), then offered as it was; block is not."""
    replay_sweep(tmp_path, "h200-copy.csv", "spaces/copy.yaml")
    space = load_space(ROOT / "benchmarks/spaces/copy-fp16.yaml")
    found = priors_from_studies(tmp_path, space, "replay: NVIDIA H200")
    steps = [(c["BLOCK"], c["block"]) for c in found]
    assert steps[:2] == [("2048", "256"), ("1024", "256")]       # fp32's best: 1024 / 256
    assert all(c["dtype"] == "float16" and c["grid"] == "cdiv(n, BLOCK)" for c in found)
    matmul = load_space(ROOT / "benchmarks/spaces/matmul-fp16.yaml")        # tiles are not elements
    from sweeper.samplers._priors import translate
    tile = {"grid": "sms", "block": "256", "BLOCK_M": "128", "BLOCK_N": "256",
            "BLOCK_K": "64", "num_stages": "3", "dtype": "float32", "footprint": "32MiB"}
    assert [c["BLOCK_M"] for c in translate(tile, matmul)] == ["128"]


def test_priors_come_from_earlier_studies_of_the_same_kernel(tmp_path):
    replay_sweep(tmp_path, "h200-copy-256m.csv", "benchmarks/spaces/copy-256m.yaml")
    space = load_space(ROOT / "spaces/copy.yaml")
    found = priors_from_studies(tmp_path, space, "replay: NVIDIA H200")
    assert len(found) == 3
    assert all(c["footprint"] == "1GiB" and c["grid"] == "cdiv(n, BLOCK)" for c in found)
    assert priors_from_studies(tmp_path, space, "other GPU") == []


def test_add_and_matmul_kernels_verify_and_catch_wrong_answers():
    device = open_device("interpret")
    for name, problem, meta in [
        ("add", Problem("float32", 4096), {"BLOCK": 256}),
        ("matmul", Problem("float32", 64 * 64 * 4),
         {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "num_stages": 3}),
        ("matmul", Problem("float16", 64 * 64 * 2),
         {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "num_stages": 2}),
    ]:
        kernel = load_kernel(name)
        buffers = kernel.allocate(problem, "cpu")
        kernel.randomize(buffers, torch.Generator().manual_seed(1))
        kernel.poison(buffers)
        kernel.launch(buffers, Config(problem=problem, grid=3, block=128, meta=meta))
        assert kernel.check(buffers) is None, name
        buffers["c"].view(-1)[7] += 1000.0
        assert kernel.check(buffers) is not None
    assert device.facts().sms >= 1
    matmul = load_kernel("matmul")
    with pytest.raises(ValueError, match="is not a square matrix"):
        matmul.allocate(Problem("float32", 4 * 1000), "cpu")
    assert matmul.flops(Problem("bfloat16", 4096 * 4096 * 2)) == 2 * 4096 ** 3


def test_every_shipped_space_enumerates_on_the_h200_facts():
    for path in shipped_spaces():
        space = load_space(path)
        valid, _ = enumerate_choices(space, {"sms": 132, "l2_bytes": 60 << 20})
        assert valid, path
    assert json.loads(json.dumps({"ok": True}))


def test_one_at_a_time_varies_each_axis_alone_and_measures_drift(write_space, tmp_path,
                                                                 monkeypatch):
    path = write_space("""
        kernel: copy
        sampler:
          name: one-at-a-time
          baseline: {grid: sms, block: 64, BLOCK: 512}
        params:
          grid: [sms, 2*sms, "cdiv(n, BLOCK)"]
          block: [32, 64, 256]
          BLOCK: [256, 512, 1024]
          footprint: [4KiB]
        constraints: ["BLOCK >= 4 * block"]
        measure: {warmup: 0, repeat: 3}
    """, "oat.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--device", "interpret", "--quiet"]) == 0
    store = StudyStore("studies/oat-interpret")
    trials = store.records()[0]
    # baseline, 2 more grids, 2 more blocks, 2 more BLOCKs; block=256 with BLOCK=512 is ruled out
    assert len(trials) == 7
    assert trials[0].choice == {"grid": "sms", "block": "64", "BLOCK": "512", "cache": "cold",
                                "dtype": "float32", "footprint": "4KiB"}
    skipped = [t for t in trials if t.status is TrialStatus.INVALID]
    assert [t.choice["block"] for t in skipped] == ["256"]
    for t in trials[1:]:
        differs = [k for k in t.choice if t.choice[k] != trials[0].choice[k]]
        assert len(differs) == 1
    drift = store.read(DriftRecord)
    assert len(drift) == 1 and drift[0].number == 0 and len(drift[0].samples_ms) == 3
    base = trials[0].stats.median
    assert drift[0].drift_pct == pytest.approx(100 * (drift[0].stats.median - base) / base)
    assert store.read(FinalRecord) == []
    md = Path("studies/oat-interpret/report.md").read_text()
    assert "## One variable at a time" in md and "| grid | " in md
    assert "measured again at the end" in md
    assert Path("studies/oat-interpret/heatmaps/oat_BLOCK.png").exists()


def test_one_at_a_time_baseline_errors(write_space):
    from sweeper.errors import SpaceError

    bad = write_space("""
        kernel: copy
        sampler: {name: one-at-a-time, baseline: {BLOCK: 300}}
        params:
          BLOCK: [256, 512]
    """, "b.yaml")
    with pytest.raises(SpaceError, match=r"b.yaml:2: sampler.baseline.BLOCK: '300' is not a "
                                         r"value of the axis; allowed: 256, 512$"):
        load_space(bad)
    # the file's list holds 256: the message says the option replaced it
    bad.write_text(bad.read_text().replace("300", "256"))
    with pytest.raises(SpaceError, match=r"b.yaml:2: sampler.baseline.BLOCK: '256' is not a "
                                         r"value of the axis; allowed: 512, 1024 \(the axis as "
                                         r"-p BLOCK=512,1024 gives it\)$"):
        load_space(bad, ["BLOCK=512,1024"])
    other = write_space("""
        kernel: copy
        sampler: {name: tpe, baseline: {BLOCK: 256}}
        params:
          BLOCK: [256, 512]
    """, "c.yaml")
    with pytest.raises(SpaceError, match="a baseline belongs to the one-at-a-time sampler"):
        load_space(other)


ZIPPED_OAT = """
    kernel: matmul
    sampler: {sampler}
    params:
      grid: [sms]
      block: [128]
      tiles: {{zip: {{BLOCK_M: [64, 128, 128, 64], BLOCK_N: [64, 128, 256, 256]}}}}
      BLOCK_K: [64]
      num_stages: [3]
      dtype: [bfloat16]
      footprint: [32MiB]
"""


def test_one_at_a_time_over_zipped_axes_starts_from_one_of_their_rows(write_space, tmp_path,
                                                                      monkeypatch):
    """Each member's middle value (BLOCK_M 64, BLOCK_N 128) is no row: the baseline of a
    zipped group left out is its middle row, and members named pick among the rows."""
    from sweeper.errors import SpaceError

    def baseline(sampler: str) -> dict[str, str]:
        return dict(load_space(write_space(ZIPPED_OAT.format(sampler=sampler), "z.yaml"))
                    .sampler.baseline)

    picked = baseline("one-at-a-time")
    assert (picked["BLOCK_M"], picked["BLOCK_N"]) == ("128", "128")
    picked = baseline("{name: one-at-a-time, baseline: {BLOCK_N: 256}}")
    assert (picked["BLOCK_M"], picked["BLOCK_N"]) == ("128", "256")
    with pytest.raises(SpaceError, match=r"z.yaml:2: sampler.baseline: BLOCK_M=64, BLOCK_N=128 "
                       r"is no row of the zipped tiles; allowed rows: BLOCK_M=64,BLOCK_N=64; "
                       r"BLOCK_M=128,BLOCK_N=128; BLOCK_M=128,BLOCK_N=256; BLOCK_M=64,"
                       r"BLOCK_N=256$"):
        baseline("{name: one-at-a-time, baseline: {BLOCK_M: 64, BLOCK_N: 128}}")
    monkeypatch.chdir(tmp_path)
    path = write_space(ZIPPED_OAT.format(sampler="one-at-a-time"), "z.yaml")
    table = Path(__file__).parent / "data" / "replay" / "h200-matmul.csv"
    assert main(["run", str(path), "--device", f"replay:{table}", "--quiet",
                 "--no-report"]) == 0
    trials = StudyStore(tmp_path / "studies" / "z-replay").records()[0]
    assert [(t.choice["BLOCK_M"], t.choice["BLOCK_N"]) for t in trials] == [
        ("128", "128"), ("64", "64"), ("128", "256"), ("64", "256")]


def test_kernels_interpret_even_when_triton_was_imported_for_a_gpu(tmp_path):
    """On a GPU machine triton is imported without TRITON_INTERPRET; its own jitted helpers
    (tl.cdiv, tl.zeros ...) then cannot run in the interpreter, so the built-ins avoid them."""
    import os
    import subprocess
    import sys

    script = tmp_path / "s.py"
    script.write_text(
        "import os\nos.environ.pop('TRITON_INTERPRET', None)\nimport triton, torch\n"
        "from sweeper.kernels import load_kernel\nfrom sweeper.space import Config, Problem\n"
        "for name, p, meta in [('copy', Problem('float32', 4096), {'BLOCK': 256}),\n"
        "    ('add', Problem('float32', 4096), {'BLOCK': 256}),\n"
        "    ('matmul', Problem('float32', 64 * 64 * 4),\n"
        "     {'BLOCK_M': 32, 'BLOCK_N': 32, 'BLOCK_K': 16, 'num_stages': 3})]:\n"
        "    k = load_kernel(name); b = k.allocate(p, 'cpu')\n"
        "    k.randomize(b, torch.Generator().manual_seed(0)); k.poison(b)\n"
        "    k.launch(b, Config(problem=p, grid=3, block=128, meta=meta))\n"
        "    assert k.check(b) is None, name\nprint('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_abandon_rule_needs_the_whole_ci_above_the_limit():
    from sweeper.trial import abandon_rule

    check = abandon_rule(best_ci_hi_ms=1.01, factor=1.5)
    assert check([2.0] * 4) is None                          # too few samples to judge
    assert check([1.4, 1.45, 1.5, 1.6, 1.55, 1.52]) is None  # CI reaches below 1.515
    reason = check([2.0, 2.1, 1.9, 2.05, 2.0, 1.95])
    assert reason.startswith("after 6 samples the median's CI starts at 1.9 ms, above 1.5x")


def test_a_clearly_slower_config_is_abandoned_and_the_saving_recorded():
    from sweeper.devices._interpret import InterpretDevice
    from sweeper.space import MeasureSpec
    from sweeper.trial import run_trial

    class Fixed(InterpretDevice):
        def time(self, launch, *, warmup, repeat, flush):
            return [3.0] * repeat
    kernel = load_kernel("copy")
    problem = Problem("float32", 4096)
    buffers = kernel.allocate(problem, "cpu")
    config = Config(problem=problem, grid=1, block=32, meta={"BLOCK": 1024})
    measure = MeasureSpec(warmup=0, repeat=50, stop="fixed", abandon=1.5)
    result = run_trial(kernel, buffers, config, Fixed(), measure,
                       torch.Generator().manual_seed(0), best=(1.0, 1.0))
    assert result.status is TrialStatus.ABANDONED and len(result.samples_ms) == 10
    assert result.reason.startswith("abandoned: after 10 samples")
    assert result.saved_ms == pytest.approx(40 * 3.0)
    kept = run_trial(kernel, buffers, config, Fixed(), measure,
                     torch.Generator().manual_seed(0), best=(2.5, 2.6))
    assert kept.status is TrialStatus.OK and len(kept.samples_ms) == 50


def test_an_abandoned_config_is_told_to_the_sampler_as_slow_not_as_failed(tmp_path):
    """An abandoned config ran and is clearly slower than the best: the sampler is told
    the rate its samples give, as it is when the study is rebuilt on resume; told as a
    failure, ``auto`` took its neighbours for configs that cannot run."""
    import optuna

    from sweeper.space import Configs
    from sweeper.sweep._optuna import build_sampler, rebuild_study, tell

    space = dataclasses.replace(load_space(ROOT / "spaces/copy.yaml"),
                                sampler=SamplerSpec(name="tpe", seed=0))
    device = open_device(f"replay:{TABLES / 'h200-copy.csv'}")
    store = StudyStore(tmp_path / "s")
    open_study(store, space, load_kernel("copy"), device, command="test")
    Sweep(space, load_kernel("copy"), device, store, max_trials=3).run()
    trials = store.records()[0]
    slow = trials[1]
    slow.status, slow.reason = TrialStatus.ABANDONED, "abandoned: slow"
    failed = trials[2]
    failed.status, failed.reason = TrialStatus.CRASHED, "boom"
    valid = Configs(space, device.facts().env(), device.facts().max_footprint)
    study, _ = rebuild_study(space, build_sampler(space, valid, priors=[], guesses=None),
                             trials)
    told = [(t.state, t.value) for t in study.trials]
    assert told == [(optuna.trial.TrialState.COMPLETE, trials[0].gbps),
                    (optuna.trial.TrialState.COMPLETE, slow.gbps),
                    (optuna.trial.TrialState.FAIL, None)]
    asked = study.ask()
    tell(study, asked, slow)
    assert study.trials[-1].state is optuna.trial.TrialState.COMPLETE
    assert study.trials[-1].value == slow.gbps


def test_beyond_noise_compares_trials_of_two_problems_by_their_rates():
    """Patience restarts on a trial beyond noise of the best; a space over several
    problems compares trials of different sizes, whose medians differ by the problems'
    work: a trial at twice the small problem's rate was within noise of it by their
    times (10 ms against 1 ms), and any trial of a smaller problem beat a larger one's."""
    from sweeper.measure import summarize
    from sweeper.store import TrialRecord
    from sweeper.sweep._budget import beyond_noise

    def trial(n: int, footprint: int, ms: float) -> TrialRecord:
        samples = [ms * (1 + 0.001 * (i % 5)) for i in range(30)]
        stats = summarize(samples)
        return TrialRecord(number=n, status=TrialStatus.OK, choice={"BLOCK": "1024"},
                           config=Config(Problem("float32", footprint), grid=1, block=128,
                                         meta={"BLOCK": 1024}),
                           samples_ms=samples, stats=stats,
                           gbps=2 * footprint / stats.median / 1e6)

    small, large = trial(0, 1 << 20, 1.0), trial(1, 20 << 20, 10.0)   # twice the rate
    assert large.score > 1.9 * small.score
    assert beyond_noise(small, large) and not beyond_noise(large, small)
    slower_small = trial(2, 1 << 20, 1.01)                  # one problem: by their times
    assert beyond_noise(slower_small, small) and not beyond_noise(small, slower_small)
    assert not beyond_noise(small, trial(3, 1 << 20, 1.0))


def test_budget_patience_and_target(tmp_path):
    from sweeper.ceilings import Ceilings

    space = load_space(ROOT / "spaces/copy.yaml")
    device = open_device(f"replay:{TABLES / 'h200-copy.csv'}")
    kernel = load_kernel("copy")
    for name, budget, ceilings, expect in [
        ("patience", dataclasses.replace(space.budget, patience=5), None,
         "budget: the best did not improve beyond noise for 5 trials"),
        ("target", dataclasses.replace(space.budget, target=0.9),
         Ceilings(gpu="g", uuid="", driver="", copy={1 << 30: {"cold": 4300.0,
                                                               "warm": 4300.0}}),
         "budget: target 90% of the ceiling reached"),
    ]:
        sp = dataclasses.replace(space, budget=budget,
                                 sampler=SamplerSpec(name="random", seed=3))
        store = StudyStore(tmp_path / name)
        open_study(store, sp, kernel, device, command="test")
        summary = Sweep(sp, kernel, device, store, ceilings=ceilings).run()
        assert summary.stopped_by.startswith(expect), summary.stopped_by
        assert summary.measured < 204
    with pytest.raises(Exception, match=re.escape("budget.patience: 0 is not a whole number")):
        from sweeper.space import parse_space
        parse_space("kernel: copy\nparams: {}\nbudget: {patience: 0}\n")


def test_ab_says_what_it_measured_where_the_device_shrinks_the_problem(small_space,
                                                                        tmp_path, monkeypatch,
                                                                        capsys):
    """On the interpreter a problem over its 16 KiB cap is measured smaller; the header
    names the problem as asked (``footprint=1MiB``), so the next line says what was
    measured instead, as ``run`` does, and the samples' file keeps it."""
    monkeypatch.chdir(tmp_path)
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,1024", "--device",
                 "interpret", "-p", "footprint=1MiB"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("A/B on BLOCK with grid=sms block=32 dtype=float32 "
                               "footprint=1MiB cache=cold fixed"), lines
    assert lines[1] == "shrunk to fit 16KiB: footprint 1MiB → 16KiB", lines
    (samples,) = Path("studies/tiny-interpret-ab").glob("BLOCK-256-vs-1024-*.json")
    data = json.loads(samples.read_text())
    assert data["shrunk"] == "footprint 1MiB → 16KiB"


def test_ab_compares_one_variable_with_everything_else_fixed(small_space, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,1024", "--device",
                 "interpret"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A/B on BLOCK with grid=sms block=32 dtype=float32 footprint=4KiB "
                          "cache=cold fixed")
    assert "verdict: B (BLOCK=1024) is " in out
    (samples,) = Path("studies/tiny-interpret-ab").glob("BLOCK-256-vs-1024-*.json")
    data = json.loads(samples.read_text())
    assert data["vary"] == "BLOCK" and len(data["samples_ms"]["256"]) == 30
    # what each round took, as the interpreter capped it (its note: at most 1 warmup)
    assert data["samples_per_round"] == 3 and data["warmup_per_round"] == 1
    assert data["verdict"] in ("SAME", "FASTER", "SLOWER", "UNCLEAR")
    assert main(["ab", str(small_space), "--vary", "BLOCK=256", "--device", "interpret"]) == 2
    assert "write KEY=A,B" in capsys.readouterr().err
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,999", "--device",
                 "interpret"]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "'999' is not a value of BLOCK; allowed: 256, 1024; to compare a value the space "
        "does not list, give both: -p BLOCK=256,999")
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,512", "--device",
                 "interpret", "-p", "BLOCK=256,512"]) == 0   # what it says to do works
    assert "verdict: B (BLOCK=512) is " in capsys.readouterr().out
    assert main(["ab", str(small_space), "--vary", "BLOK=256,1024", "--device",
                 "interpret"]) == 2                     # a newcomer's typo, as in a space file
    assert capsys.readouterr().err.rstrip().endswith("no axis 'BLOK'; axes: grid, block, dtype, "
                                                     "footprint, cache, BLOCK; did you mean "
                                                     "'BLOCK'?")
    assert main(["ab", str(small_space), "--vary", "BLOCK=256,256", "--device",
                 "interpret"]) == 2
    assert "A and B are the same value" in capsys.readouterr().err


@pytest.mark.parametrize("sampler", ["exhaustive", "random", "tpe", "gp", "qmc", "cmaes",
                                     "auto", "one-at-a-time"])
def test_every_sampler_over_a_replay_table(tmp_path, sampler):
    from sweeper.samplers import SAMPLERS

    assert set(SAMPLERS) == {"exhaustive", "random", "tpe", "gp", "qmc", "cmaes", "auto",
                             "one-at-a-time"}
    summary, store, _ = replay_sweep(tmp_path, "h200-add.csv", "spaces/add.yaml",
                                     sampler=sampler, seed=2, max_trials=12)
    trials = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    keys = [t.key() for t in trials]
    assert len(keys) == len(set(keys)) == summary.measured == 12     # never measured twice
    assert all(t.ok and t.stop_reason.kind is Stop.REPLAYED for t in trials)


def test_auto_finds_a_counterfactual_best_where_the_add_model_now_puts_it(tmp_path):
    """``benchmarks/counterfactuals.py``'s ``add-1g/spill``: the recorded 1 GiB add table
    with every launch of at most 128 values per thread and array slowed until the others
    lead by 3 %.  The add model counts each array's registers apart, so its best guess is
    among the few configs within 2 % of that table's best; the guess is the first
    proposal, and every proposal is labelled with the step that made it."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from counterfactuals import build, describe
    from search_robustness import auto_samplers

    from sweeper.samplers._auto import Phase

    table, space_file = build("add-1g/spill", tmp_path)
    _, _, near, rank = describe(table, space_file)
    assert near <= 5 and rank == 0
    with auto_samplers() as made:
        device = open_device(f"replay:{table}")
        space = load_space(ROOT / space_file)
        space = dataclasses.replace(space, sampler=SamplerSpec(name="auto", seed=0))
        kernel = load_kernel(space.kernel)
        store = StudyStore(tmp_path / "auto")
        open_study(store, space, kernel, device, command="test")
        Sweep(space, kernel, device, store, max_trials=3).run()
    first = next(t for t in store.records()[0] if t.ok)
    everything = StudyStore(tmp_path / "all")
    exhaustive = dataclasses.replace(space, sampler=SamplerSpec(name="exhaustive"))
    open_study(everything, exhaustive, kernel, device, command="test")
    whole = Sweep(exhaustive, kernel, device, everything).run()
    assert first.score >= 0.98 * whole.best.score
    assert made[-1].phases[:3] == [Phase.BEST_GUESS, Phase.SPREAD, Phase.SPREAD]


def test_search_efficiency_withholds_the_model_for_auto_nomodel(tmp_path, monkeypatch):
    """``benchmarks/search_efficiency.py``'s ``auto-nomodel`` runs ``auto``'s pattern search
    on a table whose kernel has a model (``auto`` runs the model's search there), and
    ``--set`` reaches the pattern search's constants."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from search_efficiency import override, trials_to_goal
    from search_robustness import auto_samplers
    from table_sets import table_path

    from sweeper.samplers import _auto_pattern
    from sweeper.samplers._auto import ModelGuidedSearch, PatternSearch, Phase

    table = table_path("h200-add.csv")
    with auto_samplers() as made:
        trials_to_goal(table, "benchmarks/spaces/add.yaml", "auto", 0, tmp_path, limit=2)
        trials_to_goal(table, "benchmarks/spaces/add.yaml", "auto-nomodel", 0, tmp_path,
                       limit=2)
    with_model, without = made
    assert isinstance(with_model.strategy, ModelGuidedSearch)
    assert with_model.phases[0] is Phase.BEST_GUESS
    assert isinstance(without.strategy, PatternSearch)
    assert without.phases[:2] == [Phase.SPREAD, Phase.SPREAD]
    monkeypatch.setattr(_auto_pattern, "START_POINTS", _auto_pattern.START_POINTS)
    override("START_POINTS=3")
    assert _auto_pattern.START_POINTS == 3
    with pytest.raises(AttributeError, match="no constant NO_SUCH"):
        override("NO_SUCH=1")



def test_the_blind_bound_is_the_first_hit_of_sampling_without_replacement():
    """``benchmarks/search_efficiency.py``'s ``blind``: with one hit among N configs the
    first hit is uniform over 1..N (median N/2; the worst of 10 runs has a median of
    N * 0.5 ** 0.1), every config a hit is found at once, and with several hits it agrees
    with a simulation of random sampling without replacement."""
    import random
    import statistics
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from search_efficiency import blind

    assert blind(210, 1, 10) == "105 / 196"
    assert blind(7, 7, 10) == "1 / 1"
    rng = random.Random(0)
    firsts = [min(rng.sample(range(204), 204).index(h) for h in range(6)) + 1
              for _ in range(4000)]
    worsts = [max(rng.choice(firsts) for _ in range(10)) for _ in range(4000)]
    median, worst = (int(x) for x in blind(204, 6, 10).split(" / "))
    assert abs(statistics.median(firsts) - median) <= 1
    assert abs(statistics.median(worsts) - worst) <= 3


def test_a_model_turn_takes_guesses_within_flat_top_of_the_best_as_alike(monkeypatch):
    """The model's order among configs guessed within ``FLAT_TOP`` of its best is no
    ranking: a model turn among them takes the one of the highest expected improvement
    around the model; with ``FLAT_TOP`` 1, the best guess."""
    from optuna.trial import TrialState

    import sweeper.samplers._auto_model as auto
    from sweeper.samplers._auto import Phase, SearchState
    from sweeper.samplers._auto_state import Proposal

    axes = {"a": [str(i) for i in range(4)], "b": [str(i) for i in range(8)]}
    valid = [{"a": a, "b": b} for a in axes["a"] for b in axes["b"]]
    # the model: configs with a = 3 at its top, guessed 1 % apart at most, falling with b
    guesses = [1.0 - 0.001 * int(c["b"]) if c["a"] == "3" else 0.2 + 0.1 * int(c["a"])
               for c in valid]

    def measured(a: str, b: str) -> float:
        """Throughput grows with b, which the model has the other way round."""
        return guesses[valid.index({"a": a, "b": b})] * (1.0 + int(b) / 7)

    def turn() -> Proposal | None:
        state = SearchState(axes, valid, seed=0)
        search = auto.ModelGuidedSearch(state, valid, guesses)
        for a, b in [("3", "0"), ("3", "1"), ("3", "7"), ("0", "7")]:
            state.record({"a": a, "b": b}, TrialState.COMPLETE, [measured(a, b)])
        search._turns = auto.MODEL_TURN - 1                # the next proposal is a turn
        return search.propose()

    assert turn() == ({"a": "3", "b": "6"}, Phase.TURN)     # next to the fastest measured
    monkeypatch.setattr(auto, "FLAT_TOP", 1.0)
    assert turn() == ({"a": "3", "b": "2"}, Phase.TURN)     # the best unmeasured guess


def test_ab_varies_an_axis_whose_value_holds_a_comma():
    """``--vary grid=sms,cdiv(n, BLOCK)``: the shipped spaces' grid expression holds a
    comma; the pair is the one split that leaves two values of the axis."""
    from sweeper.ab import parse_vary, samples_name
    from sweeper.errors import SweeperError
    from sweeper.space import parse_space

    space = parse_space("kernel: copy\nparams:\n  grid: [sms, 4*sms, \"cdiv(n, BLOCK)\"]\n"
                        "  block: [32]\n  BLOCK: [256]\n  dtype: [float32]\n"
                        "  footprint: [4KiB]\n")
    assert parse_vary("grid=sms,cdiv(n, BLOCK)", space) == ("grid", "sms", "cdiv(n, BLOCK)")
    assert parse_vary("grid=cdiv(n, BLOCK), 4*sms", space) == ("grid", "cdiv(n, BLOCK)",
                                                                "4*sms")
    assert parse_vary("grid=sms,4*sms", space) == ("grid", "sms", "4*sms")
    with pytest.raises(SweeperError, match="write KEY=A,B"):
        parse_vary("grid=sms,4*sms,cdiv(n, BLOCK)", space)
    with pytest.raises(SweeperError, match="'8\\*sms' is not a value of grid"):
        parse_vary("grid=sms,8*sms", space)
    # the samples' file names the two values, the comma inside one no third
    assert re.fullmatch(r"grid-sms-vs-cdiv-n-BLOCK-[0-9a-f]{8}",
                        samples_name("grid=sms,cdiv(n, BLOCK)", space))
    assert re.fullmatch(r"grid-4-sms-vs-sms-[0-9a-f]{8}",
                        samples_name("grid = 4*sms , sms", space))


def test_ab_samples_of_distinct_comparisons_have_distinct_names():
    """Two comparisons the readable name cannot tell apart (``sms*2`` and ``sms//2``; the
    same pair under other ``-p`` settings, which change the values held) are written to
    files of their own; the same comparison, however spelled, to the same file."""
    from sweeper.ab import samples_name
    from sweeper.space import parse_space

    text = ("kernel: copy\nparams:\n  grid: [sms, sms*2, sms//2]\n  block: [32, 64]\n"
            "  BLOCK: [256]\n  dtype: [float32]\n  footprint: [4KiB]\n")
    space = parse_space(text)
    times, half = samples_name("grid=sms,sms*2", space), samples_name("grid=sms,sms//2", space)
    assert times.rsplit("-", 1)[0] == half.rsplit("-", 1)[0] and times != half
    assert samples_name("grid = sms , sms*2", space) == times
    held = samples_name("grid=sms,sms*2", parse_space(text, overrides=["block=64"]))
    assert held != times
    assert samples_name("grid=sms,sms*2", parse_space(text + "# a comment\n")) == times


def test_ab_keeps_another_comparisons_samples_and_says_when_it_replaces_its_own(
        small_space, tmp_path, monkeypatch, capsys):
    """Under other ``-p`` settings the same pair is another comparison, in a file of its
    own; the same comparison run again replaces its samples, and says so."""
    monkeypatch.chdir(tmp_path)
    ab = ["ab", str(small_space), "--vary", "BLOCK=256,1024", "--device", "interpret"]
    samples = []
    for extra in ([], ["-p", "grid=sms"], []):
        assert main([*ab, *extra]) == 0
        samples.append(capsys.readouterr().out.splitlines()[-1])
    assert samples[0] != samples[1] and samples[2] == \
        f"{samples[0]} (replacing those of the same comparison run before)"
    assert not samples[1].endswith("before)")
    assert len(list(Path("studies/tiny-interpret-ab").glob("BLOCK-256-vs-1024-*.json"))) == 2


def test_ab_holds_the_values_nearest_the_middle_that_both_sides_can_run_with(small_space,
                                                                          tmp_path, capsys,
                                                                          monkeypatch):
    """BLOCK's middle value, 256, rules block=128 out (BLOCK >= 4 * block): BLOCK is held
    at 1024 instead, the nearest value with which both sides run, as the header says."""
    monkeypatch.chdir(tmp_path)
    assert main(["ab", str(small_space), "--vary", "block=32,128", "--device",
                 "interpret"]) == 0
    assert capsys.readouterr().out.startswith(
        "A/B on block with grid=sms dtype=float32 footprint=4KiB cache=cold BLOCK=1024 fixed")
    (samples,) = Path("studies/tiny-interpret-ab").glob("block-32-vs-128-*.json")
    data = json.loads(samples.read_text())
    assert data["fixed"]["BLOCK"] == "1024"


def test_ab_refuses_only_where_no_held_values_let_both_sides_run(small_space, tmp_path,
                                                                 capsys, monkeypatch):
    """With BLOCK held at 256 by -p, no value of the other axes lets block=128 run: one
    line naming the middle values held as the header does, the reason, and -p to give
    the other axes values that do; no dict repr, nothing written."""
    monkeypatch.chdir(tmp_path)
    assert main(["ab", str(small_space), "--vary", "block=32,128", "-p", "BLOCK=256",
                 "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: --vary 'block=32,128': block=128 with grid=sms dtype=float32 "
        "footprint=4KiB cache=cold BLOCK=256 held cannot run: constraint 'BLOCK >= 4 * "
        "block' is false (BLOCK=256, block=128); no values of the other axes let both "
        "block=32 and block=128 run: give the other axes values that do with -p "
        "KEY=VALUE\n")
    assert not (tmp_path / "studies").exists()


ZIPPED_AB = """
    study: zab
    kernel: copy
    params:
      grid: [sms]
      shape: {zip: {block: [32, 64, 64], BLOCK: [256, 512, 1024]}}
      dtype: [float32]
      footprint: [4KiB]
    measure: {warmup: 1, repeat: 3}
"""


def test_ab_on_a_zipped_member_varies_the_groups_rows_or_says_to_name_the_group(
        write_space, tmp_path, capsys, monkeypatch):
    """block=32 and block=64 share no row with the same BLOCK: block=32 has one row, so
    where block=64 had one too its row is compared whole, BLOCK moving with it; block=64
    has two rows, so which is ambiguous, and ab says to vary the group by its name, with
    its rows, which then runs."""
    monkeypatch.chdir(tmp_path)
    path = write_space(ZIPPED_AB, "zab.yaml")
    assert main(["ab", str(path), "--vary", "BLOCK=256,512", "--device", "interpret"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A/B on shape with grid=sms dtype=float32 footprint=4KiB cache=cold "
                          "fixed")
    assert "  shape=block=64,BLOCK=512: median " in out
    (samples,) = Path("studies/zab-interpret-ab").glob("BLOCK-256-vs-512-*.json")
    data = json.loads(samples.read_text())
    assert (data["vary"], data["a"], data["b"]) == ("shape", "block=32,BLOCK=256",
                                                    "block=64,BLOCK=512")
    assert main(["ab", str(path), "--vary", "block=32,64", "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: --vary 'block=32,64': block is zipped in shape, no two of whose rows differ "
        "in block alone, and block=64 is in 2 of them: vary the group by its name "
        "and two rows (--vary 'shape=block=32,BLOCK=256,block=64,BLOCK=512'); its rows: "
        "block=32,BLOCK=256; block=64,BLOCK=512; block=64,BLOCK=1024\n")
    assert main(["ab", str(path), "--vary", "shape=block=32,BLOCK=256,block=64,BLOCK=1024",
                 "--device", "interpret"]) == 0
    assert "  shape=block=64,BLOCK=1024: median " in capsys.readouterr().out
    assert main(["ab", str(path), "--vary", "shape=block=32,BLOCK=256,block=32,BLOCK=512",
                 "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: --vary 'shape=block=32,BLOCK=256,block=32,BLOCK=512': "
        "'block=32,BLOCK=256,block=32,BLOCK=512' is not two rows of shape; allowed: two of "
        "its rows, block=32,BLOCK=256; block=64,BLOCK=512; block=64,BLOCK=1024\n")


def test_ab_held_values_are_searched_nearest_the_middle_first():
    """The held values both sides can run with, nearest each axis's middle first (a
    zipped group's middle is its middle row); none where no held values let both run."""
    from sweeper.ab import held_choices
    from sweeper.space import Configs, parse_space

    facts = {"sms": 2, "l2_bytes": 1 << 20}
    space = parse_space("kernel: copy\nparams:\n  grid: [sms, 2*sms, 4*sms]\n"
                        "  block: [32, 64, 128]\n  BLOCK: [256, 512, 1024]\n"
                        "  dtype: [float32]\n  footprint: [4KiB]\n"
                        "constraints: [\"BLOCK >= 8 * block\"]\n")
    held = [(h["grid"], h["BLOCK"]) for h in
            held_choices(space, Configs(space, facts), "block", "32", "128")]
    assert held == [("2*sms", "1024"), ("sms", "1024"), ("4*sms", "1024")]
    nearest = next(held_choices(space, Configs(space, facts), "block", "32", "64"))
    assert nearest["BLOCK"] == "512"
    tiles = parse_space("kernel: matmul\nparams:\n  tiles: {zip: {BLOCK_M: [16, 32, 64], "
                        "BLOCK_N: [16, 32, 64]}}\n  BLOCK_K: [16, 32]\n")
    held = list(held_choices(tiles, Configs(tiles, facts), "BLOCK_K", "16", "32"))
    assert [(h["BLOCK_M"], h["BLOCK_N"]) for h in held] == [("32", "32"), ("16", "16"),
                                                            ("64", "64")]
    assert list(held_choices(tiles, Configs(tiles, facts), "BLOCK_M", "16", "32")) == []
