"""An existing ``@triton.autotune`` kernel brought as it is: a short kernel names it
(``autotuned=``), and ``sweeper run --from-autotune`` or a space's ``from_autotune:`` runs
exactly its configs, on the interpreter here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

import sweeper
from sweeper.cli import main
from sweeper.cli._exits import EXIT_CONFIGS_FAILED
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


def test_a_from_autotune_studys_reproduce_line_names_the_option_and_its_kernel(tmp_path):
    """The reproduce line of a ``--from-autotune`` study passes the option and its kernel
    as two arguments, as the command took them (quoted as one, the shell handed the
    parser a single argument no option is)."""
    import shlex

    from sweeper.cli._parser import build_parser
    from sweeper.report import reproduce_command

    assert main(["run", "--from-autotune", ADD, "--device", "interpret", "-p",
                 "n_elements=1024", "--studies-dir", str(tmp_path), "--quiet", "--no-report",
                 "--trials", "1", "--gpu-check", "off"]) == 0
    line = reproduce_command(StudyStore(tmp_path / "add-interpret").study_meta())
    assert line == f"sweeper run --from-autotune {ADD} --device interpret --study add-interpret"
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert (args.from_autotune, args.space, args.study) == (ADD, None, "add-interpret")


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
     " (module:attr path): tests.short_kernels_for_tests:add_kernel is a @triton.autotune "
     "function (Autotuner), not a sweeper.kernels.Kernel subclass or instance; declare a "
     "launcher with @sweeper.kernel(..., autotuned=add_kernel) and name it in from_autotune: "
     "(or sweeper run --from-autotune), which runs its configs"),
    (f"from_autotune: {ADD}\nparams:\n  BLOCK_SIZE: [64]\n",
     "space.yaml:3: params.BLOCK_SIZE: BLOCK_SIZE is set by from_autotune's configs (block, "
     "num_stages, BLOCK_SIZE zipped as autotune); drop it here, or name the kernel with "
     "kernel: and list the values"),
    # zipped in a group of the file's: said at that key, not at a group it never wrote
    (f"from_autotune: {ADD}\nparams:\n  n_elements: [1024]\n"
     "  tiles: {zip: {BLOCK_SIZE: [64, 128], block: [32, 64]}}\n",
     "space.yaml:4: params.tiles.zip.BLOCK_SIZE: BLOCK_SIZE is set by from_autotune's configs "
     "(block, num_stages, BLOCK_SIZE zipped as autotune); drop it here, or name the kernel "
     "with kernel: and list the values"),
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


def test_plan_takes_from_autotune_as_run_does(write_space, capsys):
    """``plan --from-autotune`` plans what ``run --from-autotune`` runs, reading the module's
    source as a space file's ``from_autotune:`` is read (nothing imported: a subprocess
    says so), and names it as run does."""
    import subprocess

    assert main(["plan", "--from-autotune", ADD, "--device", "interpret"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"space --from-autotune {ADD}: 3 configs")
    path = write_space(f"study: add\nfrom_autotune: {ADD}\nsampler: exhaustive\n")
    assert main(["plan", str(path), "--device", "interpret"]) == 0
    assert out.splitlines()[1:] == capsys.readouterr().out.splitlines()[1:]
    code = ("import sys; from sweeper.cli import main; "
            f"rc = main(['plan', '--from-autotune', '{ADD}', '--device', 'interpret']); "
            "assert rc == 0; assert 'tests.short_kernels_for_tests' not in sys.modules")
    ran = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize("command", ["run", "plan"])
@pytest.mark.parametrize(("argv", "message"), [
    ([], "sweeper: give a space file or --from-autotune module:kernel (one of them)"),
    (["space.yaml", "--from-autotune", ADD],
     "sweeper: give a space file or --from-autotune module:kernel (one of them)"),
    (["--from-autotune", "not a path"], "--from-autotune: 'not a path' is not "
     "package.module:attr (the sweeper.kernel that names the autotuned function)"),
])
def test_run_takes_a_space_file_or_from_autotune(command, argv, message, capsys):
    assert main([command, *argv, "--device", "interpret"]) == 2
    assert capsys.readouterr().err == message + "\n"


def test_a_p_that_sets_a_config_column_says_what_from_autotune_can_do(tmp_path, capsys):
    assert main(["run", "--from-autotune", ADD, "--device", "interpret", "-p",
                 "BLOCK_SIZE=64", "--studies-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "-p BLOCK_SIZE=64: params.BLOCK_SIZE: BLOCK_SIZE is set by from_autotune's configs "
        "(block, num_stages, BLOCK_SIZE zipped as autotune); --from-autotune runs the "
        "autotuner's configs as listed: drop -p BLOCK_SIZE, or, to sweep other values, write "
        f"a space file with kernel: {ADD} and params: {{BLOCK_SIZE: [...]}}\n")
    assert not any(tmp_path.iterdir())


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
     "): BLOCK=64.5; allowed: an integer for every kwarg"),
    # a bool is an int to Python: "must be an integer, got {..., 'SPLIT': True}" puzzled;
    # the kwarg is named, and what to write instead
    ([triton.Config({"BLOCK": 64, "SPLIT": True})], ["n"], "kernel k: autotune config 0 (",
     "): SPLIT=True; allowed: an integer for every kwarg (a switch as 1 or 0, which "
     "`if FLAG:` reads as True and False)"),
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


#: Functions ``autotuned=`` may wrongly name, each with what importing it binds: a
#: ``@triton.jit`` one (interpreted, as the device ``interpret`` sets), one
#: ``@triton.heuristics`` wraps, and a plain ``def``.
NOT_AUTOTUNED = {
    "jit": ("@triton.jit\n", "InterpretedFunction"),
    "heuristics": ("@triton.heuristics({'BLOCK': lambda args: 64})\n@triton.jit\n",
                   "Heuristics"),
    "plain": ("", "function"),
}


@pytest.mark.parametrize("where", ["same module", "imported"])
@pytest.mark.parametrize(("decorators", "kind"), NOT_AUTOTUNED.values(), ids=NOT_AUTOTUNED)
def test_plan_refuses_a_function_no_autotune_decorates_as_run_does(
        tmp_path, monkeypatch, capsys, where, decorators, kind):
    """``autotuned=body`` where ``body``'s source shows no ``@triton.autotune``: ``plan``,
    which imports nothing, refuses the file in the words ``run`` refuses it with once it
    has imported the module (the kind of object ``body`` is, named), not that the value
    is not a literal, whether ``body`` is defined beside the declaration or imported."""
    import uuid

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    body = (f"import triton\nimport triton.language as tl\n\n\n{decorators}"
            "def body(x, n, BLOCK: tl.constexpr):\n    pass\n")
    name = f"notautotuned_{uuid.uuid4().hex[:8]}"
    declared = ("import sweeper\n{imports}\n\nK = sweeper.kernel(lambda x, config: None, "
                "name='k', inputs={{'x': 'n'}}, outputs=['x'], reference=lambda x: x, "
                "grid='n', autotuned=body)\n")
    if where == "imported":
        (tmp_path / f"{name}_lib.py").write_text(body)
        (tmp_path / f"{name}.py").write_text(declared.format(
            imports=f"from {name}_lib import body"))
    else:
        (tmp_path / f"{name}.py").write_text(body + "\n\n" + declared.format(imports=""))
    said = []
    try:
        for command in ("plan", "run"):
            assert main([command, "--from-autotune", f"{name}:K", "--device", "interpret",
                         "--studies-dir", str(tmp_path / "studies")]) == 2
            said.append(capsys.readouterr().err)
    finally:
        for module in (name, f"{name}_lib"):
            sys.modules.pop(module, None)
    assert said[0] == said[1], said
    assert f"raised SweeperError: kernel k: autotuned= is {kind}, not a @triton.autotune(" \
        "configs=..., key=...) kernel (at " in said[0] and said[0].count("\n") == 1, said[0]
    assert not (tmp_path / "studies").exists()


def test_a_function_plan_cannot_tell_is_named_where_it_is_defined(tmp_path, monkeypatch,
                                                                  capsys):
    """``autotuned=body`` where a decorator only running the module resolves makes
    ``body``: plan names ``body`` and where it is defined, as it names one in another
    module, not that the value is not a literal."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cached.py").write_text(
        "import functools\nimport sweeper\n\n\n@functools.cache\ndef body(x, n):\n"
        "    pass\n\n\nK = sweeper.kernel(lambda x, config: None, name='k', inputs={'x': "
        "'n'}, outputs=['x'], reference=lambda x: x, grid='n', autotuned=body)\n")
    assert main(["plan", "--from-autotune", "cached:K", "--device", "interpret"]) == 2
    assert "(autotuned= at cached.py:10 (body at cached.py:6 is no @triton.autotune(...) " \
        "function its source shows))" in capsys.readouterr().err
    assert "cached" not in sys.modules


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
    assert "done: 6 measured, 0 failed, 3 skipped as problems the device shrinks onto one " \
           "measured, 0 repeated" in out
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


#: A module whose configs a function builds, as Triton's tutorials write them: only
#: running it shows them.
COMPUTED = '''
import triton
import triton.language as tl

import sweeper


def configs():
    return [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 1), (128, 2))]


@triton.autotune(configs=configs(), key=["n"])
@triton.jit
def _double(x, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs={"out": "n"}, dims={"n": 1 << 20},
                grid="cdiv(n, BLOCK)", reference=lambda x: 2 * x, autotuned=_double)
def double(x, out, config):
    _double.fn[(config.grid,)](x, out, x.numel(), num_warps=config.num_warps, **config.meta)
'''


def test_an_export_reads_the_study_back_with_the_configs_it_ran(tmp_path, monkeypatch,
                                                                 capsys):
    """Configs only running the module shows are read back from the study, which
    recorded those it ran: its export keeps the problem the run asked for (``n=1 <<
    20``, 4 MiB, measured shrunk) and, after an edit of the kernel, says its source
    changed, not that the space no longer reads in the folder the study was run in."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "computed_double.py"
    source.write_text(COMPUTED)
    try:
        assert main(["run", "--from-autotune", "computed_double:double", "--device",
                     "interpret", "--quiet", "--no-report"]) == 0, capsys.readouterr().err
    finally:
        sys.modules.pop("computed_double", None)         # as the next process finds it
    source.write_text(COMPUTED.replace("* 2, mask", "* 2.0, mask"))
    capsys.readouterr()
    assert main(["export", "studies/double-interpret"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "sweeper: warning: study double-interpret: the source of computed_double:double "
        "changed since the study measured it;"), err
    [entry] = json.loads((tmp_path / "studies" / "tuning.json").read_text())["entries"]
    assert entry["asked_footprint"] == 4 << 20 and entry["footprint"] == 16 << 10


HOOKED = "tests.autotune_kernels_for_tests"


def _run_study(tmp_path, capsys, name: str, *argv: str) -> list:
    rc = main(["run", "--from-autotune", f"{HOOKED}:{name}", "--device", "interpret",
               "--studies-dir", str(tmp_path), "--quiet", "--no-report", *argv])
    assert rc == 0, capsys.readouterr()
    return StudyStore(tmp_path / f"{name}-interpret").records()[0]


def test_reset_to_zero_zeroes_the_named_output_before_every_launch(tmp_path, capsys):
    """The issue's atomic_add kernel: without the zeroing every config was wrong_answer
    (NaN, sweeper's poison, plus the sum); now each is verified and timed, and the total
    after the timed launches (checked again) is one launch's, not their sum."""
    trials = _run_study(tmp_path, capsys, "total")
    assert len(trials) == 4 and {t.status for t in trials} == {TrialStatus.OK}


def test_an_autotuner_over_triton_heuristics_runs_its_configs(tmp_path, capsys):
    """``@triton.autotune`` over ``@triton.heuristics`` (Triton's own kernels stack them):
    its ``fn`` is the heuristics, no plain function, and the kernel was refused as "not a
    @triton.autotune(configs=..., key=...) kernel"; its configs now run, the heuristics
    setting ``EVEN`` at each launch (a masked tail at n=1000, none at 1024)."""
    for n in (1000, 1024):
        trials = _run_study(tmp_path / str(n), capsys, "heuristic", "-p", f"n={n}")
        assert {t.status for t in trials} == {TrialStatus.OK} and len(trials) == 2


def test_zeroing_and_restoring_happen_inside_each_launch():
    """What the timer times is the kernel's launch: the zeroing and the restoring are in
    it, as Triton's do_bench times its pre_hook with each launch."""
    import torch

    from tests.autotune_kernels_for_tests import restored, total

    kernel = total()
    config = _config(kernel, n=256, BLOCK=64)
    buffers = kernel.allocate(config.problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(1))
    kernel.poison(buffers)
    for _ in range(3):          # three launches: each starts from zero, as Triton's do
        kernel.launch(buffers, config)
    assert kernel.check(buffers) is None
    assert torch.allclose(buffers["total"], buffers["x"].sum().reshape(1), rtol=1e-4)

    kernel = restored()
    config = _config(kernel, n=256, BLOCK=64)
    buffers = kernel.allocate(config.problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(1))
    original = buffers["x"].clone()
    for _ in range(3):          # each launch sees x as the first one did: one doubling
        kernel.launch(buffers, config)
    assert torch.equal(buffers["x"], 2 * original)


def _config(kernel, **values):
    from sweeper.core import Config, Problem

    n = values.pop("n")
    return Config(problem=Problem("float32", 4 * n, (("n", n),)), grid=n // values["BLOCK"],
                  block=32, meta={"num_stages": 3, **values})


def test_early_config_prune_skips_what_it_drops_with_the_reason(tmp_path, capsys):
    """The issue's 8 configs of which the prune keeps 6 (BLOCK_SIZE <= n // 8): the other
    2 are skipped, each saying why; the prune is called once, with the launch's
    arguments by name as Triton passes them (the config's own keywords left out)."""
    from tests.autotune_kernels_for_tests import CALLS

    CALLS.clear()
    trials = _run_study(tmp_path, capsys, "pruned", "-p", "n_elements=2048")
    ran = [t for t in trials if t.status is TrialStatus.OK]
    skipped = [t for t in trials if t.status is TrialStatus.INVALID]
    assert len(ran) == 6 and {t.config.meta["BLOCK_SIZE"] for t in ran} == {64, 128, 256}
    assert len(skipped) == 2 and {t.choice["BLOCK_SIZE"] for t in skipped} == {"512"}
    assert skipped[0].reason == (
        "pruned by the prune_configs_by of _times_two's @triton.autotune: it keeps 6 of "
        "the 8 listed configs for this problem, as Triton would at its first launch")
    assert CALLS == [("prune", 2048, ())]


def test_configs_skipped_are_counted_by_their_cause(tmp_path, write_space, capsys):
    """The 2 configs prune_configs_by drops are counted as its, in the done line and the
    report, apart from those the space's constraints skip; they were all 'skipped by
    constraints'."""
    rc = main(["run", "--from-autotune", f"{HOOKED}:pruned", "--device", "interpret", "-p",
               "n_elements=2048", "--studies-dir", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert rc == 0 and "done: 6 measured, 0 failed, 2 skipped by prune_configs_by, " in out
    report = (tmp_path / "a" / "pruned-interpret" / "report.md").read_text()
    assert "8 trials: 6 measured, 0 failed, 2 skipped by prune_configs_by" in report
    path = write_space(f"""
        from_autotune: {HOOKED}:pruned
        sampler: exhaustive
        params:
          n_elements: [2048]
        constraints: ["block == 32"]
        measure: {{warmup: 1, repeat: 3}}
    """)
    rc = main(["run", str(path), "--device", "interpret", "--studies-dir", str(tmp_path / "b"),
               "--no-report"])
    out = capsys.readouterr().out
    assert rc == 0 and "done: 3 measured, 0 failed, 5 skipped: 4 by constraints, 1 by " \
        "prune_configs_by, " in out, out


def test_a_declarations_refuse_and_the_prune_are_counted_apart(tmp_path, capsys):
    """The 8 configs of which the prune drops 2 (BLOCK_SIZE=512) and the declaration's
    refuse= 2 others (BLOCK_SIZE=64): each counted by its cause, each saying its own
    reason."""
    rc = main(["run", "--from-autotune", f"{HOOKED}:pruned_and_refused", "--device",
               "interpret", "-p", "n_elements=2048", "--studies-dir", str(tmp_path),
               "--no-report"])
    out = capsys.readouterr().out
    assert rc == 0 and "done: 4 measured, 0 failed, 4 skipped: " in out, out
    assert "2 by prune_configs_by" in out and "2 by the kernel" in out, out
    trials = StudyStore(tmp_path / "pruned_and_refused-interpret").records()[0]
    reasons = {t.choice["BLOCK_SIZE"]: t.reason for t in trials
               if t.status is TrialStatus.INVALID}
    assert reasons["64"] == "BLOCK_SIZE=64 is too small"
    assert reasons["512"].startswith("pruned by the prune_configs_by of _times_two's")


def test_a_prune_that_raises_says_its_whole_message_on_one_line(tmp_path, capsys):
    """A prune whose error has two lines: each config's trial fails (a bug in the prune,
    not a refusal), its reason and the run's "no config was measured" line saying both,
    joined on one line, not the first alone."""
    rc = main(["run", "--from-autotune", f"{HOOKED}:prune_fails", "--device", "interpret",
               "--studies-dir", str(tmp_path), "--no-report"])
    out = capsys.readouterr()
    trials = StudyStore(tmp_path / "prune_fails-interpret").records()[0]
    said = ("_times_two's prune_configs_by raised ValueError: no configs for this "
            "n_elements see the table")
    assert len(trials) == 2 and {t.status for t in trials} == {TrialStatus.CRASHED}
    assert all(said in t.reason and "\n" not in t.reason for t in trials), trials[0].reason
    assert rc != 0 and said in out.out + out.err, out


def test_debug_prints_the_prune_s_own_error_for_every_config_it_failed(tmp_path, capsys,
                                                                      monkeypatch):
    """A prune that raises is asked once a problem, and each listed config's trial fails
    with it: under ``--debug`` every one of them shows the traceback of the prune's own
    error, then the failed refusal raised from it, as a failed ``refuse=`` shows."""
    from sweeper.errors import DEBUG_ENV

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    rc = main(["--debug", "run", "--from-autotune", f"{HOOKED}:prune_fails", "--device",
               "interpret", "--studies-dir", str(tmp_path), "--no-report", "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and err.count("sweeper --debug: trial #") == 2, err
    for trial in err.split("sweeper --debug: trial #")[1:]:
        assert trial.count("Traceback (most recent call last):\n") == 2, trial
        assert "\nValueError: no configs for this n_elements\nsee the table in the docs\n" \
            "\nThe above exception was the direct cause of the following exception:\n" \
            in trial, trial
        assert "sweeper.errors.RefusalFailed: _times_two's prune_configs_by raised " \
            "ValueError: " in trial, trial


def test_a_prune_that_raises_for_one_problem_fails_its_configs_and_measures_the_rest(
        tmp_path, capsys):
    """A prune with a bug past 1024 elements: the 2 configs of n_elements=2048 fail as
    crashed, their reason naming the prune, what it raised and its line, in the run's
    ``failed:`` line too, not skipped by prune_configs_by; those of n_elements=1024 are
    measured, and the run ends with the exit status of a kernel's failure."""
    from tests import autotune_kernels_for_tests as hooked

    rc = main(["run", "--from-autotune", f"{HOOKED}:prune_fails_past_1024", "-p",
               "n_elements=1024,2048", "--device", "interpret", "--studies-dir",
               str(tmp_path), "--no-report"])
    out, err = capsys.readouterr()
    assert rc == EXIT_CONFIGS_FAILED and "Traceback" not in err, err
    assert "done: 2 measured, 2 failed, 0 skipped by constraints, " in out, out
    line = hooked._prune_fails_past_1024.__code__.co_firstlineno + 3
    said = (f"_times_two's prune_configs_by raised IndexError: list index out of range (at "
            f"autotune_kernels_for_tests.py:{line}: ")
    assert "failed: 2 crashed (first: #0 " in out and said[:100] in out, out
    trials = StudyStore(tmp_path / "prune_fails_past_1024-interpret").records()[0]
    assert {(t.config.problem.dim("n_elements"), t.status) for t in trials} == {
        (1024, TrialStatus.OK), (2048, TrialStatus.CRASHED)}
    assert all(t.reason.startswith(said) for t in trials if t.status is TrialStatus.CRASHED)


@pytest.mark.parametrize(("name", "said"), [
    ("launch_fails", "the kernel's launch raised NameError: name 'n_elements' is not "
     "defined (at autotune_kernels_for_tests.py:{line}: _times_two[(config.grid,)](x, out, "
     "n_elements, **config.meta)"),
    ("launch_calls_nothing", "the launch of kernel launch_calls_nothing called no "
     "_times_two[grid](...), so prune_configs_by has no arguments to prune with")])
def test_a_launch_that_fails_before_the_autotuner_is_blamed_not_the_prune(
        tmp_path, capsys, name, said):
    """A launch function with a bug before it calls the autotuned function (asked for the
    arguments prune_configs_by prunes with): each config's trial fails as crashed, as
    where the prune raises, its reason naming the launch and its line, not the prune,
    which never ran."""
    from tests import autotune_kernels_for_tests as hooked

    hooked.CALLS.clear()
    rc = main(["run", "--from-autotune", f"{HOOKED}:{name}", "--device", "interpret",
               "--studies-dir", str(tmp_path), "--no-report"])
    out, err = capsys.readouterr()
    assert rc != 0 and "Traceback" not in err, err
    said = said.format(line=hooked._launch_with_a_bug.__code__.co_firstlineno + 2)
    assert said[:60] in out + err, out
    trials = StudyStore(tmp_path / f"{name}-interpret").records()[0]
    assert len(trials) == 2 and {t.status for t in trials} == {TrialStatus.CRASHED}
    assert all(t.reason.startswith(said) for t in trials), trials[0].reason
    assert not any("prune_configs_by raised" in t.reason for t in trials)
    assert hooked.CALLS == []


def test_perf_model_and_top_k_keep_the_configs_it_rates_fastest(tmp_path, capsys):
    trials = _run_study(tmp_path, capsys, "modelled", "-p", "n_elements=2048")
    ran = [t for t in trials if t.status is TrialStatus.OK]
    assert {(t.config.block, t.config.meta["BLOCK_SIZE"]) for t in ran} == {(32, 64), (64, 64)}
    assert sum(t.status is TrialStatus.INVALID for t in trials) == 4


def test_the_autotuners_and_a_configs_pre_hook_run_before_each_launch(tmp_path, capsys):
    """A config's pre_hook before its own launches only, the autotuner's before every
    launch (in place of restore_value's restoring, as in Triton); both verified right."""
    from tests.autotune_kernels_for_tests import CALLS

    CALLS.clear()
    trials = _run_study(tmp_path, capsys, "hooked")
    assert {t.status for t in trials} == {TrialStatus.OK}
    config_calls = [c for c in CALLS if c[0] == "config"]
    assert config_calls and set(config_calls) == {("config", 64)}
    assert CALLS.count(("autotuner",)) > len(config_calls)


def test_a_launch_that_never_calls_the_autotuned_function_fails_saying_so():
    from sweeper.kernels._autotune import Hooks
    from tests.autotune_kernels_for_tests import total

    hooks = total.autotune_hooks
    assert isinstance(hooks, Hooks)
    with pytest.raises(SweeperError, match=r"^the launch of kernel total called no "
                       r"_sum_kernel\[grid\]\(\.\.\.\), the function its @triton.autotune "
                       r"wraps, so its hooks \(reset_to_zero, restore_value, pre_hook\) "
                       r"could not run before it; launch _sum_kernel through the "
                       r"autotuner's \.fn$"):
        hooks.launch(lambda: None, (32, 3, 64), {})


def test_a_post_hook_is_refused_at_its_declaration(tmp_path, monkeypatch, capsys):
    """A post_hook may undo the launch sweeper verifies: refused as the module is
    imported, at the declaration's line, exit 2 and nothing written; plan, which reads
    the source only, refuses it too."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "posthooked.py").write_text(
        "import triton\nimport triton.language as tl\nimport sweeper\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'],\n"
        "                 post_hook=lambda nargs, exception: None)\n"
        "@triton.jit\ndef body(x, n, BLOCK: tl.constexpr):\n    pass\n\n"
        "K = sweeper.kernel(lambda x, config: None, name='k', inputs={'x': 'n'},\n"
        "                   outputs=['x'], reference=lambda x: x, autotuned=body)\n")
    rule = ("kernel k: @triton.autotune(post_hook=...) of body is not supported: it runs "
            "after each launch, commonly to undo it, and sweeper verifies what a launch leaves "
            "in its outputs; drop post_hook= (sweeper honours reset_to_zero=, restore_value=, "
            "pre_hook= and a config's pre_hook)")
    try:
        assert main(["run", "--from-autotune", "posthooked:K", "--device", "interpret",
                     "--studies-dir", str(tmp_path / "studies")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and rule in err and "Traceback" not in err
        assert "(at posthooked.py:11: K = sweeper.kernel(lambda x, config: None, name='k', " \
               "inputs={'x': 'n'}, outputs=['x'], reference=lambda x: x, autotuned=body))" \
               in err
        assert not (tmp_path / "studies").exists()
        (tmp_path / "space.yaml").write_text("from_autotune: posthooked:K\n")
        assert main(["plan", "space.yaml", "--device", "interpret"]) == 2
        assert rule in capsys.readouterr().err
    finally:
        sys.modules.pop("posthooked", None)


def test_a_wrong_declaration_is_refused_at_the_from_autotune_line(tmp_path, monkeypatch):
    """A space naming its kernel by ``from_autotune:`` has no ``kernel:`` key: the
    declaration's error names the key the file has, at its line."""
    from sweeper.space import load_space

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "baddecl.py").write_text(
        "import triton\nimport triton.language as tl\nimport sweeper\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'])\n"
        "@triton.jit\ndef body(x, n, BLOCK: tl.constexpr):\n    pass\n\n"
        "K = sweeper.kernel(lambda x, config: None, name='k', inputs={'x': 'n'},\n"
        "                   outputs=['x'], reference=lambda x: x, autotuned=body,\n"
        "                   footprint_bytes='m * itemsize')\n")
    (tmp_path / "space.yaml").write_text("study: s\nfrom_autotune: baddecl:K\n")
    try:
        with pytest.raises(SweeperError) as refused:
            load_space(tmp_path / "space.yaml")
        assert str(refused.value) == (f"{tmp_path / 'space.yaml'}:2: from_autotune: kernel k: "
                                      "footprint_bytes reads 'm'; known: n, itemsize")
    finally:
        sys.modules.pop("baddecl", None)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "measure"), [
    ("total", "{}"), ("total", "{graph: true, batch: 4}"), ("restored", "{graph: true}"),
    ("hooked", "{batch: 4}"), ("pruned", "{}")])
def test_the_autotuners_hooks_verify_on_the_gpu_in_graphs_and_batches(tmp_path, name,
                                                                      measure):
    """On the GPU, in a fresh process: reset_to_zero, restore_value and the hooks run with
    each launch of a batch and inside a captured CUDA graph, so every config verifies; the
    prune skips the configs it drops."""
    import os
    import subprocess
    from pathlib import Path

    space = tmp_path / "space.yaml"
    space.write_text(f"from_autotune: {HOOKED}:{name}\nmeasure: {measure}\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-m", "sweeper", "run", str(space), "--device",
                          "cuda", "--studies-dir", str(tmp_path / "st"), "--quiet",
                          "--no-report"], cwd=Path(__file__).resolve().parent.parent,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    study, = (tmp_path / "st").iterdir()
    trials, _ = StudyStore(study).records()
    ran = [t for t in trials if t.status is not TrialStatus.INVALID]     # not pruned
    assert ran and {t.status for t in ran} == {TrialStatus.OK}, \
        [(t.status, t.reason) for t in trials]
    assert len(trials) - len(ran) == (2 if name == "pruned" else 0)


def test_asked_ahead_a_kernel_allocates_nothing_and_says_only_its_refuse(monkeypatch):
    """What a sweep's coordinator asks before compiling a config ahead on a GPU
    (``cannot_launch(..., ahead=True)``) allocates no buffers (they would take the
    measured GPU's memory in a process that measures nothing): the declaration's refuse=
    answers, the autotuner's prune, asked on buffers, is left to the worker."""
    from sweeper.core import Config, Problem
    from tests.autotune_kernels_for_tests import pruned_and_refused

    kernel = pruned_and_refused()
    problem = Problem("float32", 2048 * 4, dims=(("n_elements", 2048),))
    configs = {b: Config(problem, grid=2048 // b, block=32,
                         meta={"BLOCK_SIZE": b, "num_stages": 3}) for b in (64, 512)}

    def no_buffers(*args, **kwargs):
        raise AssertionError("allocated")

    monkeypatch.setattr(kernel, "allocate", no_buffers)
    assert kernel.cannot_launch(configs[64], "cuda", ahead=True) == "BLOCK_SIZE=64 is too small"
    assert kernel.cannot_launch(configs[512], "cuda", ahead=True) is None
    monkeypatch.undo()          # the worker's question, on buffers: the prune drops 512
    assert kernel.cannot_launch(configs[512], "cpu").startswith("pruned by the prune_configs_by")


def test_the_from_autotune_hint_comes_where_the_name_finds_no_launcher_only(
        tmp_path, monkeypatch, capsys):
    """A ``from_autotune:`` name that finds no kernel is told what it must name (the
    ``sweeper.kernel(..., autotuned=...)`` launcher); a declaration that its own module
    refused while imported is not, though the quoted line is cut before its
    ``autotuned=``: the user named the right thing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    body = ("import triton\nimport triton.language as tl\nimport sweeper\n\n"
            "@triton.autotune(configs=[triton.Config({'BLOCK': 64}{ctas})], key=['n'])\n"
            "@triton.jit\ndef body(x, n, BLOCK: tl.constexpr):\n    pass\n\n"
            "K = sweeper.kernel(lambda x, config: None, name='a_kernel_whose_name_is_long"
            "_enough_to_push_the_rest_of_its_line_past_the_quote', inputs={'x': 'n'}, "
            "outputs=['x'], reference=lambda x: x, autotuned=body)\n")
    (tmp_path / "longdecl.py").write_text(body.replace("{ctas}", ", num_ctas=2"))
    (tmp_path / "okdecl.py").write_text(body.replace("{ctas}", ""))
    hint = "from_autotune: names the sweeper.kernel(..., autotuned=...)"
    try:
        for name, hinted in (("longdecl:K", False), ("okdecl:NOPE", True)):
            assert main(["run", "--from-autotune", name, "--device", "interpret",
                         "--studies-dir", str(tmp_path / "studies")]) == 2
            err = capsys.readouterr().err
            assert (hint in err) is hinted, err
            assert "Traceback" not in err and err.count("\n") == 1
            assert ("sets num_ctas" in err) is not hinted
            assert "autotuned=" not in err.replace(hint, "")
    finally:
        sys.modules.pop("longdecl", None)
        sys.modules.pop("okdecl", None)
