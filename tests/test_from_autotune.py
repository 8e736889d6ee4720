"""An existing ``@triton.autotune`` kernel brought as it is: a short kernel names it
(``autotuned=``), and ``sweeper run --from-autotune`` or a space's ``from_autotune:`` runs
exactly its configs, on the interpreter here."""

from __future__ import annotations

import json

import pytest
import triton
import triton.language as tl

import sweeper
from sweeper.cli import main
from sweeper.errors import SweeperError
from sweeper.kernels import kernel_class
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus

ADD = "tests.short_kernels_for_tests:add"
#: The three configs of ``add_kernel``: (block, num_stages, BLOCK_SIZE).
CONFIGS = {(32, 3, 128), (64, 2, 256), (128, 3, 256)}


def test_the_autotune_configs_become_meta_parameters_and_zipped_columns():
    cls = kernel_class(ADD)
    assert cls.meta_params["BLOCK_SIZE"].default == 128
    assert cls.meta_params["num_stages"].default == 3
    assert dict(cls.autotune_params) == {"block": [32, 64, 128], "num_stages": [3, 2, 3],
                                         "BLOCK_SIZE": [128, 256, 256]}
    assert cls.autotune_key == ("n_elements",)
    assert list(cls.dims) == ["n_elements"]


def test_from_autotune_runs_exactly_the_listed_configs(tmp_path, capsys):
    rc = main(["run", "--from-autotune", ADD, "--device", "interpret", "-p",
               "n_elements=2048", "--studies-dir", str(tmp_path), "--quiet", "--no-report"])
    assert rc == 0, capsys.readouterr().err
    trials, _ = StudyStore(tmp_path / "add-interpret").records()
    assert {t.status for t in trials} == {TrialStatus.OK}
    assert {(t.config.block, t.config.meta["num_stages"], t.config.meta["BLOCK_SIZE"])
            for t in trials} == CONFIGS and len(trials) == 3
    assert {t.config.problem.dims for t in trials} == {(("n_elements", 2048),)}
    assert {t.config.grid for t in trials} == {2048 // 128, 2048 // 256}


def test_a_space_file_key_takes_the_configs_and_adds_its_own_axes(write_space):
    path = write_space(f"""
        from_autotune: {ADD}
        params:
          dtype: [float32, float16]
        measure: {{warmup: 1, repeat: 3}}
    """)
    space = load_space(path)
    assert space.kernel == ADD and space.size == 6          # 3 configs × 2 dtypes
    tie, = space.ties
    assert tie.name == "autotune" and tie.members == ("block", "num_stages", "BLOCK_SIZE")
    assert set(tie.rows) == {tuple(map(str, c)) for c in CONFIGS}


@pytest.mark.parametrize(("text", "message"), [
    (f"kernel: {ADD}\nfrom_autotune: {ADD}\n",
     "space.yaml:2: from_autotune: give kernel: or from_autotune:, not both (from_autotune: "
     "names the kernel and sweeps its configs)"),
    ("from_autotune: tests.short_kernels_for_tests:axpy\n",
     "space.yaml:1: from_autotune: tests.short_kernels_for_tests:axpy names no "
     "@triton.autotune function; declare it with sweeper.kernel(..., autotuned=the_function)"),
    ("from_autotune: tests.short_kernels_for_tests:add_kernel\n",
     "space.yaml:1: from_autotune: cannot load kernel 'tests.short_kernels_for_tests:add_kernel'"
     " (module:attr path): tests.short_kernels_for_tests:add_kernel is an Autotuner, not a "
     "sweeper.kernels.Kernel subclass or instance; from_autotune: names the "
     "sweeper.kernel(..., autotuned=...) that launches the @triton.autotune function"),
    (f"from_autotune: {ADD}\nparams:\n  BLOCK_SIZE: [64]\n",
     "space.yaml:3: params.BLOCK_SIZE: BLOCK_SIZE is set by from_autotune's configs (block, "
     "num_stages, BLOCK_SIZE zipped as autotune); drop it here, or name the kernel with "
     "kernel: and list the values"),
])
def test_a_bad_from_autotune_is_one_line_at_its_key(text, message, write_space, capsys,
                                                    tmp_path):
    path = write_space(text)
    assert main(["run", str(path), "--device", "interpret", "--studies-dir",
                 str(tmp_path / "studies")]) == 2
    assert capsys.readouterr().err == f"{path.parent}/{message}\n"
    assert not (tmp_path / "studies").exists()


def test_plan_reads_the_autotune_configs_from_the_source(write_space, capsys):
    """(test_plan_source shows that nothing is imported.)"""
    path = write_space(f"from_autotune: {ADD}\n")
    assert main(["plan", str(path), "--device", "interpret"]) == 0
    assert "3 configs" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    ([], "sweeper: give a space file or --from-autotune module:kernel (one of them)"),
    (["space.yaml", "--from-autotune", ADD],
     "sweeper: give a space file or --from-autotune module:kernel (one of them)"),
    (["--from-autotune", "not a path"], "--from-autotune: 'not a path' is not "
     "package.module:attr (the sweeper.kernel that names the autotuned function)"),
])
def test_run_takes_a_space_file_or_from_autotune(argv, message, capsys):
    assert main(["run", *argv, "--device", "interpret"]) == 2
    assert capsys.readouterr().err == message + "\n"


@triton.jit
def _body(x, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    pass


def _declare(configs: list, key: list[str]) -> None:
    sweeper.kernel(lambda x, config: None, name="k", inputs={"x": "n"}, outputs=["x"],
                   reference=lambda x: x, grid="n",
                   autotuned=triton.autotune(configs=configs, key=key)(_body))


@pytest.mark.parametrize(("configs", "key", "message", "rule"), [
    ([triton.Config({"BLOCK": 64})], ["BLOCK"],
     "kernel k: the autotune key 'BLOCK' is not a dimension of the kernel (dims: n); declare "
     "it: dims={'BLOCK': 1 << 20}", ""),
    ([triton.Config({"BLOCK": 64}, num_ctas=2)], ["n"], "kernel k: autotune config 0 (",
     ") sets num_ctas; sweeper sweeps kwargs, num_warps and num_stages only (num_ctas must "
     "stay 1)"),
    ([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 64, "SPLIT": 2})], ["n"],
     "kernel k: autotune config 1 (",
     ") sets BLOCK, SPLIT; config 0 sets BLOCK: every config must set the same kwargs"),
    ([triton.Config({"BLOCK": 64}, num_warps=3)], ["n"], "kernel k: autotune config 0 (",
     "): num_warps=3; allowed: 1, 2, 4, 8, 16, 32"),
    ([triton.Config({"BLOCK": 64.5})], ["n"], "kernel k: autotune config 0 (",
     "): every kwarg must be an integer, got {'BLOCK': 64.5}"),
    # a misspelt constexpr: refused as declared, not a TypeError from every config's launch
    ([triton.Config({"BLOCK": 64}), triton.Config({"BLOCKS": 128})], ["n"],
     "kernel k: autotune config 1 (", ") sets BLOCKS, which is not an argument of _body; "
     "allowed: x, n, BLOCK, SPLIT; did you mean 'BLOCK'?"),
])
def test_an_autotuner_sweeper_cannot_take_is_refused_with_the_config(configs, key, message,
                                                                     rule):
    with pytest.raises(SweeperError) as err:
        _declare(configs, key)
    assert str(err.value).startswith(message) and str(err.value).endswith(rule)


def test_autotuned_must_be_an_autotuner():
    with pytest.raises(SweeperError, match=r"kernel k: autotuned= is JITFunction|"
                                           r"kernel k: autotuned= is InterpretedFunction"):
        sweeper.kernel(lambda x, config: None, name="k", inputs={"x": "n"}, outputs=["x"],
                       reference=lambda x: x, grid="n", autotuned=_body)


def test_problems_the_interpreter_shrinks_are_named_and_measured_once(tmp_path, capsys):
    """The issue's ``-p n_elements=4096,1048576`` (and a non-power of two): the run says
    what each problem became, 1048576 merges into 4096 and is measured once, 1000000
    stays no power of two (4095), and the report lists both."""
    rc = main(["run", "--from-autotune", ADD, "--device", "interpret", "-p",
               "n_elements=4096,1048576,1000000", "--studies-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert ("shrunk to fit 16KiB: n_elements 1048576 → 4096 (as n_elements=4096 does: "
            "measured once, as n_elements=4096); n_elements 1000000 → 4095\n") in out
    assert "done: 6 measured (0 failed), 0 skipped by constraints and 3 whose problem the " \
           "device shrinks onto one measured, " in out
    trials, _ = StudyStore(tmp_path / "add-interpret").records()
    measured = [t for t in trials if t.status is TrialStatus.OK]
    assert sorted(t.config.problem.dim("n_elements") for t in measured) == [4095] * 3 + [4096] * 3
    skipped = [t for t in trials if t.status is TrialStatus.INVALID]
    assert {t.choice["n_elements"] for t in skipped} == {"1048576"} and len(skipped) == 3
    assert "as n_elements=4096 does: that problem is measured once" in skipped[0].reason
    report = (tmp_path / "add-interpret" / "report.md").read_text()
    assert "| float32 | n_elements=1000000 | n_elements=4095 |" in report
    # no map of one cell: each config's map is folded into its problem's best map, and
    # the merged problem, launched nowhere, has none
    maps = json.loads((tmp_path / "add-interpret" / "report.json").read_text())["heatmaps"]
    assert maps["drawn"] == ["float32_n_elements=4095_cold_best",
                             "float32_n_elements=4096_cold_best"] and maps["not_drawn"] == []
    assert "6 maps of one meta values' configs held a number in one cell only" in report
