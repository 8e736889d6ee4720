"""Short kernels (``sweeper.kernel``): the scale example end to end on the interpreter,
the defaults a declaration gets (random inputs, poison, the check and its message, bytes
moved), in-place verification after many launches, planted wrong launches caught first
and after timing, and the declaration's errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import sweeper
from sweeper import plugins
from sweeper.cli import main
from sweeper.cli._exits import EXIT_CONFIGS_FAILED
from sweeper.errors import BaselineWarning, SweeperError
from sweeper.finals import FinalRecord
from sweeper.kernels import Headline, Kernel
from sweeper.space import Config, Problem
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus

ROOT = Path(__file__).resolve().parent.parent
N = 1024
TINY = """
    study: {study}
    kernel: {kernel}
    sampler: exhaustive
    params:
      BLOCK: [256, 1024]
      n: [1024]
    measure: {{warmup: 1, repeat: 3}}
"""


def _problem(n: int = N, dtype: str = "float32") -> Problem:
    itemsize = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    return Problem(dtype, n * itemsize, (("n", n),))


def _config(problem: Problem, block: int = 256) -> Config:
    return Config(problem=problem, grid=-(-problem.n // block), block=32, meta={"BLOCK": block})


def _load(name: str) -> Kernel:
    from sweeper.kernels import load_kernel

    return load_kernel(name)


def _sweep(tmp_path, write_space, kernel: str, *extra: str) -> tuple[int, StudyStore]:
    study = kernel.rpartition(":")[2]
    space = write_space(TINY.format(study=study, kernel=kernel))
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--quiet", "--no-report", *extra])
    return rc, StudyStore(tmp_path / f"{study}-interpret")


def test_the_scale_example_takes_at_most_15_lines():
    lines = [line for line in (ROOT / "examples" / "scale.py").read_text().splitlines()
             if line.strip()]
    assert len(lines) <= 15, "\n".join(lines)


def test_the_scale_example_runs_verified_reports_and_exports_like_a_subclass(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)                  # examples.scale:scale is found from the root
    rc = main(["run", "examples/scale.yaml", "--device", "interpret", "--studies-dir",
               str(tmp_path), "--quiet", "-p", "dtype=float32", "-p", "block=32"])
    assert rc == 0, capsys.readouterr().err
    store = StudyStore(tmp_path / "scale-short-interpret")
    trials, baselines = store.records()
    # in place: the check after 1 warmup + 5 timed launches restores x and verifies again
    assert [t.status for t in trials] == [TrialStatus.OK, TrialStatus.OK]
    assert [b.name for b in baselines] == ["torch"]
    assert {t.gbps > 0 for t in trials} == {True}
    report = json.loads((store.root / "report.json").read_text())
    assert report["kernel"] == "examples.scale:scale" and report["winners"]
    assert not (store.root / "heatmaps").exists()     # only BLOCK varies: no map
    tuning = tmp_path / "tuning.json"
    assert main(["export", str(store.root), "-o", str(tuning)]) == 0
    entry, = json.loads(tuning.read_text())["entries"]
    assert (entry["kernel"], entry["kernel_path"]) == ("scale", "examples.scale:scale")
    assert entry["dims"] == {"n": 4096}
    assert entry["meta"]["BLOCK"] in (256, 1024) and entry["grid_expr"] == "cdiv(n, BLOCK)"
    cfg = sweeper.tuned("scale", dtype="float32", dims={"n": 4096},
                        gpu="Triton interpreter (CPU)", path=tuning)
    assert cfg.meta["BLOCK"] == entry["meta"]["BLOCK"] and cfg.num_warps == 1


def test_a_baseline_that_raises_is_said_once_and_every_config_is_measured(tmp_path):
    """The baseline is a comparison, not part of the sweep: one that raises was each
    config's crash ("allocating the inputs: RuntimeError ...", no config measured); now it
    is one warning, the configs are measured and the finals race without it."""
    space = TINY.format(study="broken", kernel="tests.short_kernels_for_tests:broken_baseline")
    with pytest.warns(BaselineWarning) as said:
        study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                            report=False)
    store = StudyStore(study.path)
    trials, baselines = store.records()
    assert [t.status for t in trials] == [TrialStatus.OK, TrialStatus.OK] and baselines == []
    assert [str(w.message) for w in said] == [
        "the baseline 'torch' of float32 4KiB cold raised RuntimeError: the baseline is "
        "broken; its configs are measured without it (no '% of torch')"]
    assert [w.filename for w in said] == [__file__]     # the user's sweeper.run, not sweeper's
    assert store.read(FinalRecord)           # the finals ran, without the baseline


def test_a_reference_that_raises_is_named_as_the_cause(tmp_path):
    """A reference that raises fails each trial as crashed with the reference named, at
    its line, not as the launch's own error (which read as if the kernel had raised)."""
    space = TINY.format(study="badref", kernel="tests.short_kernels_for_tests:broken_reference")
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    trials, _ = StudyStore(study.path).records()
    assert {t.status for t in trials} == {TrialStatus.CRASHED}
    reason = trials[0].reason
    assert reason.startswith("the reference raised RuntimeError: shape '[-1, 3]' is invalid"), \
        reason
    assert reason.endswith("(at short_kernels_for_tests.py:36: return x.view(-1, 3) * A)"), \
        reason


def _sweep_1024_and_2048(tmp_path, kernel: str) -> list:
    """The trials of ``kernel`` swept at n=1024 and n=2048, after checking that every
    config of the first crashed and every config of the second was measured."""
    space = TINY.format(study="counts", kernel=kernel).replace("n: [1024]", "n: [1024, 2048]")
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    trials, _ = StudyStore(study.path).records()
    by_n = {n: {t.status for t in trials if t.config and t.config.problem.n == n}
            for n in (1024, 2048)}
    assert by_n == {1024: {TrialStatus.CRASHED}, 2048: {TrialStatus.OK}}
    return trials


def test_a_count_that_raises_fails_its_problems_configs_and_the_sweep_goes_on(tmp_path):
    """A flops= (or bytes_moved=) function that raises for one problem fails each of that
    problem's configs as crashed, naming the count and its line; the other problem's
    configs are measured (it was a traceback out of the command, nothing recorded)."""
    trials = _sweep_1024_and_2048(tmp_path, "tests.short_kernels_for_tests:uncountable_at_1024")
    reason = next(t.reason for t in trials if t.status is TrialStatus.CRASHED)
    assert reason == ("the kernel's flops raised ZeroDivisionError: integer division or "
                      "modulo by zero (at short_kernels_for_tests.py:123: return 2 * "
                      "problem.n // (problem.n - 1024))"), reason


def test_a_count_that_raises_a_message_of_lines_is_one_line_with_its_place(tmp_path):
    """A reason is one line, as a kernel's own errors are: the terminal shows a reason's
    first line, and it lost the rest of the message and the user's line."""
    from sweeper.outcome import reason_line

    trials = _sweep_1024_and_2048(tmp_path,
                                  "tests.short_kernels_for_tests:two_line_error_at_1024")
    failed = next(t for t in trials if t.status is TrialStatus.CRASHED)
    assert failed.reason is not None and "\n" not in failed.reason
    assert reason_line(failed).startswith(
        "the kernel's flops raised ValueError: no count at 1024 use 2048 (at "
        "short_kernels_for_tests.py:"), reason_line(failed)


@pytest.mark.parametrize(("kernel", "reason"), [
    ("tests.short_kernels_for_tests:unnumbered_at_1024",
     "short_kernels_for_tests.py:149: the kernel's bytes_moved returned 'lots' (str); it "
     "must return a number >= 0 (an int or a finite float)"),
    ("tests.kernels_for_tests:CountsFlopsInWords",
     "kernels_for_tests.py:280: the kernel's flops returned 'none' (str); it must return a "
     "number >= 0 (an int or a finite float)"),
    ("tests.short_kernels_for_tests:negative_at_1024",
     "short_kernels_for_tests.py:160: the kernel's flops returned -1 (int); it must return "
     "a number >= 0 (an int or a finite float)"),
    ("tests.short_kernels_for_tests:negative_expression_at_1024",
     "the kernel's flops, 'n - 2048', came to -1024; it must be a number >= 0"),
])
def test_a_count_that_returns_no_number_fails_its_problems_configs_at_its_line(
        tmp_path, kernel, reason):
    """A bytes_moved= (or a subclass's flops) that returns a string for one problem fails
    each of that problem's configs as crashed, saying what it returned, that it must be a
    number, and where it is defined; the other problem's configs are measured (the short
    form said only int()'s 'invalid literal for int()', a subclass's flops crashed the
    command with a traceback); a negative number fails them the same way (it was
    accepted), an expression's naming the expression (not sweeper's own line)."""
    trials = _sweep_1024_and_2048(tmp_path, kernel)
    assert {t.reason for t in trials if t.status is TrialStatus.CRASHED} == {reason}


def test_a_1d_footprint_other_than_n_times_itemsize_is_sized_by_n(tmp_path):
    """footprint_bytes="2 * n * itemsize": n = footprint // itemsize would not give that
    footprint back, so the kernel is sized by n (its declared default where the space
    gives none), and a footprint axis is refused saying so (every config was refused
    as "no problem of this kernel", the default's too)."""
    kernel = "tests.short_kernels_for_tests:named_by_both_arrays"
    space = TINY.format(study="both", kernel=kernel).replace("      n: [1024]\n", "")
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    trials, _ = StudyStore(study.path).records()
    assert {(t.status, t.config.problem.n, t.config.problem.footprint) for t in trials} == {
        (TrialStatus.OK, 1024, 8192)}
    with pytest.raises(SweeperError, match=r"params\.footprint: tests\.short_kernels_for_"
                       r"tests:named_by_both_arrays is sized by its dimensions, not a "
                       r"footprint; give n"):
        sweeper.run(space.replace("BLOCK: [256, 1024]", "footprint: [8KiB]"),
                    device="interpret", studies_dir=tmp_path, quiet=True, report=False)


def test_a_space_that_leaves_the_size_out_takes_the_declared_dims(tmp_path):
    """dims={"n": 1000} is the size a space leaving it out measures (the short form's
    64 MiB footprint took its place, unsaid); without dims, 64 MiB stays the default."""
    space = TINY.format(study="declared", kernel="tests.short_kernels_for_tests:scale_1000"
                        ).replace("      n: [1024]\n", "")
    study = sweeper.run(space, device="interpret", studies_dir=tmp_path, quiet=True,
                        report=False)
    trials, _ = StudyStore(study.path).records()
    assert {(t.status, t.config.problem.n) for t in trials} == {(TrialStatus.OK, 1000)}
    assert _load("tests.short_kernels_for_tests:scale_1000").defaults.get("footprint") is None
    assert _load("examples.scale:scale").defaults["footprint"] == "64MiB"


def test_the_short_form_is_a_kernel_the_registry_loads():
    plugin = plugins.load(plugins.KERNEL, "tests.short_kernels_for_tests:axpy")
    cls = plugin.obj
    assert isinstance(cls, type) and issubclass(cls, Kernel) and cls.name == "axpy"
    assert cls.meta_params["BLOCK"].default == 256 and cls.baseline_name == "torch add(alpha=2)"
    assert cls.defaults["grid"] == "cdiv(n, BLOCK)" and cls.footprint_bytes == "n * itemsize"
    assert "def axpy" in cls().source()          # the declaring module identifies a version


def test_defaults_randomize_poison_check_bytes_and_flops():
    kernel = _load("tests.short_kernels_for_tests:axpy")
    problem = _problem()
    buffers = kernel.allocate(problem, "cpu")
    assert sorted(buffers.tensors) == ["out", "x", "y"]
    generator = torch.Generator().manual_seed(0)
    kernel.randomize(buffers, generator)
    assert bool((buffers["x"] != 0).all()) and not torch.equal(buffers["x"], buffers["y"])
    kernel.poison(buffers)
    assert bool(buffers["out"].isnan().all())
    assert kernel.check(buffers).startswith(f"output out: {N} of {N} elements differ")
    kernel.launch(buffers, _config(problem))
    assert kernel.check(buffers) is None
    buffers["out"][17] += 1e-3
    assert kernel.check(buffers) == (
        f"output out: 1 of {N} elements differ from the reference at rtol 1.3e-06, atol 1e-05 "
        f"for float32 (first at index 17: {buffers['out'][17].item()!r} != "
        f"{(2 * buffers['x'][17] + buffers['y'][17]).item()!r})")
    assert kernel.bytes_moved(problem) == 3 * N * 4       # x, y read; out written
    assert kernel.flops(problem) == 2 * N
    kernel.baseline(buffers)
    assert kernel.check(buffers) is None


def test_integer_outputs_are_poisoned_with_a_sentinel_and_compared_exactly():
    kernel = sweeper.kernel(lambda x, y, config: y.copy_(x), name="int-copy",
                            inputs={"x": ("n", "int32")}, outputs={"y": ("n", "int32")},
                            meta={"BLOCK": 128}, reference=lambda x: x)()
    problem = _problem(64, "float32")
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(1))
    kernel.poison(buffers)
    assert int(buffers["y"][0]) == torch.iinfo(torch.int32).min
    assert kernel.check(buffers).startswith(
        "output y: 64 of 64 elements differ from the reference, compared exactly in int32 "
        "(first at index 0: -2147483648 != ")
    assert kernel.bytes_moved(problem) == 2 * 64 * 4


def test_an_in_place_kernel_verifies_after_many_launches():
    kernel = _load("examples.scale:scale")
    problem = _problem()
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    original = buffers["x"].clone()
    kernel.poison(buffers)                        # in place: x as it was randomized
    assert torch.equal(buffers["x"], original)
    assert kernel.check(buffers).startswith("output x: ")    # nothing launched: not scaled
    config = _config(problem)
    kernel.launch(buffers, config)
    assert kernel.check(buffers) is None
    for _ in range(7):                            # x is now x * A**8 ...
        kernel.launch(buffers, config)
    assert kernel.check(buffers) is None          # ... and the check still holds
    assert torch.equal(buffers["x"], original * 0.5)        # by one launch on restored x
    assert kernel.bytes_moved(problem) == 2 * N * 4          # x read and written


@pytest.mark.parametrize(("kernel", "reason"), [
    ("skips_index_17", f"output x: 1 of {N} elements differ from the reference at rtol 1.3e-06, "
                       "atol 1e-05 for float32 (first at index 17: "),
    ("tires", "the first launch was right, but the output after the timed samples (3) was "
              f"wrong: output x: {N} of {N} elements differ from the reference"),
])
def test_a_planted_wrong_launch_is_caught_first_or_after_timing(kernel, reason, tmp_path,
                                                                write_space):
    rc, store = _sweep(tmp_path, write_space, f"tests.short_kernels_for_tests:{kernel}")
    assert rc == 1
    trials, _ = store.records()
    assert len(trials) == 2 and {t.status for t in trials} == {TrialStatus.WRONG_ANSWER}
    assert trials[0].reason.startswith(reason), trials[0].reason


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"inputs": {"x": "m"}}, "kernel k: inputs['x']: shape 'm' reads 'm'; known: n, itemsize"),
    ({"outputs": ["y"]}, "kernel k: output 'y' is no input (inputs: x); give its shape: "
                         "outputs={'y': \"n\"}"),
    ({"outputs": {"x": "n"}}, "kernel k: outputs['x'] is an input too; an output written in "
                              "place is named, not shaped: outputs=['x']"),
    ({"inputs": {"config": "n"}}, "kernel k: inputs: 'config' is not a tensor name; a Python "
                                  "identifier other than config"),
    ({"meta": {"BLOCK_SIZE": 128}}, "kernel k: give grid=, an expression such as "
     "\"cdiv(n, BLOCK_SIZE)\"; the default cdiv(n, BLOCK) needs a dimension n and a "
     "meta-parameter BLOCK"),
    ({"dims": {"M": 64, "N": 32}, "inputs": {"x": "M, N"}, "grid": "M"},
     "kernel k: give footprint_bytes=, the bytes a problem is named by, as an expression "
     "over M, N and itemsize (the largest array's, e.g. \"M * K * itemsize\")"),
    ({"bytes_moved": "3 * m"}, "kernel k: bytes_moved= is an expression over n, itemsize or "
                               "a function of the problem, got '3 * m'"),
    ({"dims": {"n": 0}}, "kernel k: dims['n'] = 0; give its default size (an integer >= 1) or "
                         "a sweeper.kernels.Dim"),
    ({"inputs": {"x": ("n", "float8")}}, "kernel k: inputs['x']: dtype 'float8'; allowed: "
                                         "float64, float32"),
    ({"inputs": {"x": 3}}, "kernel k: inputs['x']: 3 is not a shape; give expressions over "
                           "the dimensions"),
    ({"meta": ["BLOCK"]}, "kernel k: meta= is a dict of meta-parameter -> default "
                          "({\"BLOCK\": 1024}), got ['BLOCK']"),
    ({"tolerance": {"float32": 1e-3}}, "kernel k: tolerance['float32'] = 0.001; give (rtol, "
                                       "atol), two numbers >= 0 (e.g. (1e-3, 1e-5))"),
    ({"tolerance": {"fp33": (1e-3, 0)}}, "kernel k: tolerance: 'fp33' is not a dtype; "
                                         "allowed: float64, float32"),
    ({"tolerance": (1e-3, 0)}, "kernel k: tolerance= is a dict of dtype -> (rtol, atol), got "
                               "(0.001, 0)"),
    ({"headline": "TFLOP/s"}, "kernel k: headline='TFLOP/s'; allowed: 'gbps', 'tflops' or a "
                              "sweeper.kernels.Headline"),
    ({"baseline": 5}, "kernel k: baseline= must be a function of the tensors doing the same "
                      "work in torch, got 5"),
    ({"refuse": 5}, "kernel k: refuse= must be a function of the config returning None (run "
                    "it) or a string saying why not, got 5"),
    ({"refuse": lambda: None}, "kernel k: refuse= <lambda>() at test_short_kernels.py:"),
    ({"grid": [1]}, "kernel k: grid=[1]; give the programs launched: an expression such as "
                    "\"cdiv(n, BLOCK)\", or an integer >= 1"),
    ({"block": 33}, "kernel k: block=33 threads per program; allowed: 32, 64, 128, 256, "
                    "512, 1024 (num_warps × 32)"),
    ({"dtype": ["float32"]}, "kernel k: dtype=['float32']; allowed: float64, float32"),
    ({"footprint_bytes": 5}, "kernel k: footprint_bytes=5; give the bytes a problem is named "
                             "by as an expression over n and itemsize (a string"),
    ({"grid": "cdiv(n, BLOK)"}, "kernel k: grid='cdiv(n, BLOK)' reads 'BLOK', which the "
     "kernel does not declare; known: BLOCK, block, footprint, itemsize, l2_bytes, n, sms; "
     "did you mean 'BLOCK'?"),
    # not "give name= (a lambda has none)", which the name given was never about
    ({"name": 5}, "sweeper.kernel: name=5 is not a name; allowed: text, such as "
                  "name='scale'"),
])
def test_a_bad_declaration_names_the_kernel_and_the_argument(kwargs, message):
    args = {"name": "k", "inputs": {"x": "n"}, "outputs": ["x"], "meta": {"BLOCK": 64},
            "reference": lambda x: x, **kwargs}
    with pytest.raises(SweeperError) as err:
        sweeper.kernel(lambda x, config: None, **args)
    assert str(err.value).startswith(message)


def test_a_declaration_takes_tolerances_headlines_and_numpy_integers_by_any_spelling():
    """A tolerance keyed by a dtype's alias or torch dtype is the one the check uses (under
    the alias it was once ignored without a word), a headline may be given as its text,
    and numpy's integers are integers."""
    import numpy as np

    declared = sweeper.kernel(lambda x, config: None, name="k", inputs={"x": "n"},
                              outputs=["x"], meta={"BLOCK": np.int64(64)},
                              dims={"n": np.int64(4096)}, reference=lambda x: x,
                              tolerance={"fp32": (0.5, 0), torch.float16: [0.25, 0]},
                              headline="tflops")
    assert declared.plan.tolerances["float32"] == (0.5, 0.0)
    assert declared.plan.tolerances["float16"] == (0.25, 0.0)
    assert declared.headline is Headline.TFLOPS
    assert declared.meta_params["BLOCK"].default == 64 and declared.dims["n"].default == 4096


def test_import_sweeper_offers_kernel_lazily():
    assert "kernel" in dir(sweeper) and "kernel" in sweeper.__all__
    assert sweeper.kernel.__module__ == "sweeper.kernels._short_form"


@pytest.mark.gpu
@pytest.mark.parametrize("argv", [["examples/scale.yaml", "-p", "n=16777216"],
                                  ["--from-autotune", "tests.short_kernels_for_tests:add",
                                   "-p", "n_elements=16777216"]])
def test_short_and_autotuned_kernels_verify_on_the_gpu(argv, tmp_path):
    """In a fresh process: a plain ``@triton.jit`` binds to the interpreter or the GPU when
    its module is imported, and the interpreter tests of this session imported these."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-m", "sweeper", "run", *argv, "--device", "cuda",
                          "--studies-dir", str(tmp_path), "--quiet", "--no-report"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    study, = tmp_path.iterdir()
    trials, _ = StudyStore(study).records()
    assert trials and {t.status for t in trials} == {TrialStatus.OK}
    assert all(t.gbps > 0 for t in trials)


@pytest.mark.gpu
def test_a_launch_through_heuristics_is_checked_on_the_gpu(tmp_path):
    """On the GPU, in a fresh process (compiled ``JITFunction``s, not the interpreter's):
    a launch through a ``@triton.heuristics`` on a grid of its own fails the config whose
    grid it did not run and measures the one it did, as on the interpreter."""
    import os
    import subprocess
    import sys

    space = tmp_path / "heuristic.json"
    space.write_text(json.dumps({
        "study": "heuristic", "kernel": "tests.short_kernels_for_tests:heuristic_own_grid",
        "sampler": "exhaustive",
        "params": {"BLOCK": [256], "n": [1 << 20], "grid": ["1", "cdiv(n, BLOCK)"]}}))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-m", "sweeper", "run", str(space), "--device",
                          "cuda", "--studies-dir", str(tmp_path / "st"), "--quiet",
                          "--no-report"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    study, = (tmp_path / "st").iterdir()
    trials, _ = StudyStore(study).records()
    assert sorted(t.status.value for t in trials) == ["crashed", "ok"], run.stderr
    failed, = [t for t in trials if t.status is TrialStatus.CRASHED]
    assert failed.reason.startswith(
        "SweeperError: the launch of kernel heuristic_own_grid ran _scale_even on 4096 "
        "programs, never on the config's grid of 1"), failed.reason


def test_the_readme_shows_the_scale_example_as_it_is():
    readme = (ROOT / "README.md").read_text()
    assert f"```python\n{(ROOT / 'examples' / 'scale.py').read_text()}```" in readme


@pytest.mark.parametrize("dims, n", [({"n": 1 << 22}, 1 << 22), (None, 1 << 24)])
def test_a_space_that_sizes_nothing_measures_the_declared_n(tmp_path, monkeypatch, dims, n):
    """A short kernel's declared ``dims`` default is the problem a space leaves out, not a
    64 MiB footprint; without ``dims``, 64 MiB (16 Mi float32), as the docstring says."""
    module = tmp_path / f"sized_kernel_{n}.py"
    module.write_text("import sweeper\n"
                      f"k = sweeper.kernel(lambda x, config: None, inputs={{'x': 'n'}}, "
                      f"outputs=['x'], reference=lambda x: x, meta={{'BLOCK': 64}}, name='k', "
                      f"dims={dims!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    space = sweeper.space.parse_space(f"kernel: sized_kernel_{n}:k\nparams: {{BLOCK: [64]}}\n")
    config = space.resolve(space.expand({"BLOCK": "64"}), {"sms": 132, "l2_bytes": 1 << 20})
    assert space.sizes == (("n",) if dims else ("footprint",))
    assert config.problem.dim("n") == n
    assert config.problem.footprint == n * 4


def test_a_launch_that_raises_is_recorded_at_the_users_line(tmp_path, monkeypatch,
                                                             write_space):
    """An exception the user's launch function raises names its line, as a reference's or
    an interpreted kernel's does, and the sweep goes on."""
    (tmp_path / "raising_kernel.py").write_text(
        "import sweeper\n"
        "def launch(x, config):\n"
        "    if config.meta['BLOCK'] == 1024:\n"
        "        raise ValueError('no tile of 1024 here')\n"
        "k = sweeper.kernel(launch, name='k', inputs={'x': 'n'}, outputs=['x'],\n"
        "                   reference=lambda x: x, meta={'BLOCK': 64})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rc, store = _sweep(tmp_path, write_space, "raising_kernel:k")
    assert rc == 3                            # measured, but a config failed
    trials, _ = store.records()
    [crashed] = [t for t in trials if t.status is TrialStatus.CRASHED]
    assert crashed.reason == ("ValueError: no tile of 1024 here (at raising_kernel.py:4: "
                              "raise ValueError('no tile of 1024 here'))")


@pytest.mark.parametrize(("launch", "declared", "message"), [
    ("def k(x, cfg):", "", "kernel k: the launch function k(x, cfg) at wrong_call_{i}.py:2 "
     "cannot take the call it gets, k(x=..., config=...): missing a required argument: "
     "'cfg'; give it one parameter per tensor, by its name (x) and config"),
    ("def k(x):", "", "the launch function k(x) at wrong_call_{i}.py:2 cannot take the call "
     "it gets, k(x=..., config=...): got an unexpected keyword argument 'config'"),
    ("def k(src, config):", "", "missing a required argument: 'src'"),
    ("def k(x, config):", ", outputs={'y': 'n'}", "k(x=..., y=..., config=...): got an "
     "unexpected keyword argument 'y'; give it one parameter per tensor, by its name (x, y) "
     "and config"),
    ("def k(x, config):", ", reference=lambda y: y", "kernel k: reference= <lambda>(y) at "
     "wrong_call_{i}.py:4 cannot take the call it gets, <lambda>(x=...): missing a required "
     "argument: 'y'; give it one parameter per input, by its name (x)"),
    ("def k(x, config):", ", baseline=lambda: None", "kernel k: baseline= <lambda>() at "
     "wrong_call_{i}.py:4 cannot take the call it gets, <lambda>(x=...): got an unexpected "
     "keyword argument 'x'; give it one parameter per tensor, by its name (x)"),
])
def test_a_function_that_cannot_take_its_call_is_refused_where_the_kernel_is_declared(
        launch, declared, message, tmp_path, monkeypatch, write_space, capsys):
    """The launch is called as ``launch(**tensors, config=config)``, the reference with the
    inputs and the baseline with the tensors, each by name: one whose parameters cannot
    take that call crashed every config alike and wrote a study of failures; now the space
    is refused at its kernel's line, exit 2, naming the function, its parameters and the
    call, with nothing written."""
    i = len(list(tmp_path.glob("wrong_call_*.py")))
    module = tmp_path / f"wrong_call_{i}.py"
    arguments = {"outputs": "['x']", "reference": "lambda x: x"}
    for part in filter(None, declared.split(", ")):
        key, _, value = part.partition("=")
        arguments[key] = value
    module.write_text(
        "import sweeper\n"
        f"{launch}\n"
        "    pass\n"
        "k = sweeper.kernel(k, name='k', inputs={'x': 'n'}, meta={'BLOCK': 64}, "
        + ", ".join(f"{key}={value}" for key, value in arguments.items()) + ")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    space = write_space(TINY.format(study="wrong", kernel=f"wrong_call_{i}:k"))
    studies = tmp_path / "studies"
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
               "--quiet"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", out
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"{space}:2: kernel: cannot load kernel 'wrong_call_{i}:k'"), err
    assert message.format(i=i) in err, err
    assert not studies.exists()


def _refused_as_imported(module: str, text: str, tmp_path, monkeypatch, write_space,
                         capsys) -> str:
    """What ``sweeper run`` says of a space whose kernel is ``module:k`` (``text``): exit
    status 2, one line without a traceback at the space's kernel line, no study."""
    (tmp_path / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    space = write_space(TINY.format(study=module, kernel=f"{module}:k"))
    studies = tmp_path / "studies"
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
               "--quiet"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "Traceback" not in err, err
    assert err.startswith(f"{space}:2: kernel: cannot load kernel '{module}:k'"), err
    assert not studies.exists()
    return err


def test_a_kernel_given_its_launch_and_used_as_a_decorator_says_so(tmp_path, monkeypatch,
                                                                     write_space, capsys):
    """``sweeper.kernel(launch, ...)`` (a ``sweeper.cuda`` launch's form) is the kernel
    itself: stacked over a ``def`` as the launchless form is, it was called with that
    function and raised Python's own TypeError about ``__init__``; now the import says
    which form to write, and the space is refused at its kernel's line."""
    err = _refused_as_imported(
        "built_as_decorator",
        "import sweeper\n"
        "def launch(x, config):\n"
        "    pass\n"
        "@sweeper.kernel(launch, inputs={'x': 'n'}, outputs=['x'], meta={'BLOCK': 64},\n"
        "                reference=lambda x: x)\n"
        "def k():\n"
        "    pass\n", tmp_path, monkeypatch, write_space, capsys)
    assert "kernel launch: sweeper.kernel(launch, ...) is the kernel itself, not a " \
           "decorator, so it takes no function 'k' under it; allowed: launch = " \
           "sweeper.kernel(launch, ...), or @sweeper.kernel(...) without the launch over " \
           "the launch function (at built_as_decorator.py:4: " in err, err


def test_a_triton_kernel_given_as_the_launch_is_refused_where_it_is_declared(
        tmp_path, monkeypatch, write_space, capsys):
    """``@sweeper.kernel`` stacked on ``@triton.jit`` made the jitted function the launch,
    which crashed every config (it cannot take ``config``) and wrote a study of failures;
    now the space is refused at its kernel's line, saying what the launch should be."""
    err = _refused_as_imported(
        "jit_as_launch",
        "import triton\n"
        "import triton.language as tl\n"
        "import sweeper\n"
        "@sweeper.kernel(inputs={'x': 'n'}, outputs=['x'], meta={'BLOCK': 64},\n"
        "                reference=lambda x: x)\n"
        "@triton.jit\n"
        "def k(x, n, BLOCK: tl.constexpr):\n"
        "    pass\n", tmp_path, monkeypatch, write_space, capsys)
    assert "kernel k: the launch is the Triton kernel k itself (" in err
    assert "); give a Python function of the tensors by name and config that launches it: " \
           "def k(x, config): k[(config.grid,)](x, ..., num_warps=config.num_warps, " \
           "**config.meta) (at jit_as_launch.py:4: " in err


def test_a_config_the_declarations_refuse_turns_down_is_skipped_by_the_kernel(
        tmp_path, write_space, capsys):
    """``refuse=`` turns BLOCK=1024 down: that config is skipped with the refuse's own
    words and counted as skipped by the kernel in the done line and the report (the
    space's constraints did not skip it); ``sweeper plan``, which imports no user code,
    counts it among the configs it would measure, as it does a prune_configs_by's."""
    kernel = "tests.short_kernels_for_tests:refuses_big_blocks"
    space = write_space(TINY.format(study="refuses", kernel=kernel))
    assert main(["plan", str(space), "--device", "interpret"]) == 0
    assert "would measure 2 on " in capsys.readouterr().out
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "done: 1 measured, 0 failed, 1 skipped by the kernel, " in out, out
    trials = StudyStore(tmp_path / "refuses-interpret").records()[0]
    assert {t.config.meta["BLOCK"]: t.status for t in trials} == {
        256: TrialStatus.OK, 1024: TrialStatus.INVALID}
    assert [t.reason for t in trials if t.status is TrialStatus.INVALID] == [
        "BLOCK=1024 is more than this kernel's 256"]
    report = (tmp_path / "refuses-interpret" / "report.md").read_text()
    assert "2 trials: 1 measured, 0 failed, 1 skipped by the kernel" in report


@pytest.mark.parametrize(("kernel", "reason"), [
    ("refuse_raises_at_1024", "the kernel's refuse= raised ZeroDivisionError: integer "
     "division or modulo by zero (at short_kernels_for_tests.py:{raised}"),
    ("refuse_says_true_at_1024", "short_kernels_for_tests.py:{defined}: the kernel's "
     "refuse= returned True (bool); it must return None to run the config or a string "
     "saying why not"),
])
def test_a_refuse_that_raises_or_says_no_reason_fails_its_config_saying_so(
        kernel, reason, tmp_path, write_space, capsys):
    """A refuse= that raises, or returns neither None nor a reason, at BLOCK=1024: a bug in
    the user's rule, not a refusal, so that config's trial fails as crashed (it never runs
    on a rule that failed), its reason naming the function, what it raised or returned,
    and where; the run's ``failed:`` line names it, the run ends with the exit status of
    a kernel's failure, and the sweep goes on to measure BLOCK=256."""
    from tests import short_kernels_for_tests as declared

    rule = {"refuse_raises_at_1024": declared._raises_at_1024,
            "refuse_says_true_at_1024": declared._true_at_1024}[kernel]
    defined = rule.__code__.co_firstlineno
    reason = reason.format(defined=defined, raised=defined + 1)
    space = write_space(TINY.format(study=kernel, kernel=f"tests.short_kernels_for_tests:"
                                                         f"{kernel}"))
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--no-report"])
    out, err = capsys.readouterr()
    assert rc == EXIT_CONFIGS_FAILED and "Traceback" not in err, err
    assert "done: 1 measured, 1 failed, 0 skipped by constraints, " in out, out
    # the line shows a reason's first 120 characters: where and what, in either case
    assert "failed: 1 crashed (first: #" in out and reason[:110] in out, out
    trials = StudyStore(tmp_path / f"{kernel}-interpret").records()[0]
    assert {t.config.meta["BLOCK"]: t.status for t in trials} == {
        256: TrialStatus.OK, 1024: TrialStatus.CRASHED}
    failed = next(t for t in trials if t.status is TrialStatus.CRASHED)
    assert failed.reason.startswith(reason), failed.reason


@pytest.mark.parametrize("kernel", ["refuse_raises_at_1024", "refuse_says_true_at_1024"])
def test_debug_prints_the_traceback_of_a_refuse_that_failed(kernel, tmp_path, write_space,
                                                            capsys, monkeypatch):
    """``--debug`` shows a failed refusal's traceback as it shows a failed launch's: the
    trial named, then the user's own error behind it where there is one (what the refuse=
    raised, at its line); a run without ``--debug`` shows none."""
    from sweeper.errors import DEBUG_ENV

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    space = write_space(TINY.format(study=kernel, kernel=f"tests.short_kernels_for_tests:"
                                                         f"{kernel}"))
    rc = main(["--debug", "run", str(space), "--device", "interpret", "--studies-dir",
               str(tmp_path), "--no-report", "--quiet"])
    err = capsys.readouterr().err
    assert rc == EXIT_CONFIGS_FAILED, err
    assert err.count("Traceback (most recent call last):\n") == \
        (2 if kernel == "refuse_raises_at_1024" else 1), err
    assert "sweeper --debug: trial #" in err and " BLOCK=1024 failed (crashed):\n" \
        "Traceback (most recent call last):\n" in err, err
    assert "RefusalFailed: " in err, err
    if kernel == "refuse_raises_at_1024":
        assert "ZeroDivisionError: integer division or modulo by zero\n" in err, err
        assert 'in _raises_at_1024\n    return f"BLOCK=' in err, err
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--no-report", "--quiet", "--study", "again"])
    assert rc == EXIT_CONFIGS_FAILED and "Traceback" not in capsys.readouterr().err


def test_ab_stops_at_a_refuse_that_raises_saying_so(tmp_path, write_space, capsys,
                                                   monkeypatch):
    """``sweeper ab`` on a refuse= that raises at BLOCK=1024: one line naming the side,
    what the refuse raised and where, exit 2; not "cannot run", as if it had refused."""
    monkeypatch.chdir(tmp_path)
    space = write_space(TINY.format(study="ab_refuse", kernel="tests.short_kernels_for_"
                                                              "tests:refuse_raises_at_1024"))
    rc = main(["ab", str(space), "--vary", "BLOCK=256,1024", "--device", "interpret"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "BLOCK=1024 with " in err and " held: the kernel's refuse= raised " \
        "ZeroDivisionError: integer division or modulo by zero (at short_kernels_for_" \
        "tests.py:" in err, err
    assert "cannot run" not in err, err


@pytest.mark.parametrize(("said", "shown"), [
    ("", "'' (str)"), (0, "0 (int)"), (["too big"], "['too big'] (list)"),
    ("  ", "'  ' (str)"), (True, "True (bool)")])
def test_a_refuse_that_returns_no_reason_fails_naming_what_it_returned(said, shown):
    from sweeper.errors import RefusalFailed
    from sweeper.kernels._short import refused

    def refuse(config):
        return said

    config = _config(_problem())
    with pytest.raises(RefusalFailed) as failed:
        refused(refuse, config)
    assert str(failed.value) == (
        f"test_short_kernels.py:{refuse.__code__.co_firstlineno}: the kernel's refuse= "
        f"returned {shown}; it must return None to run the config or a string saying why "
        "not")
    assert refused(lambda c: None, config) is None
    assert refused(lambda c: "no", config) == "no"


def test_a_refuse_that_raises_quotes_its_line_without_the_trailing_comment():
    """The line a failed refuse= is quoted at is the code that ran: its trailing comment
    is left out, a ``#`` inside a string literal kept."""
    from sweeper.errors import RefusalFailed
    from sweeper.kernels._short import refused

    def refuse(config):
        return len("# not a comment") / 0  # a note of the author's, "quoted"

    with pytest.raises(RefusalFailed) as failed:
        refused(refuse, _config(_problem()))
    assert str(failed.value).endswith(
        f"(at test_short_kernels.py:{refuse.__code__.co_firstlineno + 1}: return "
        'len("# not a comment") / 0)'), str(failed.value)


def test_every_config_refused_says_why_nothing_was_measured(tmp_path, write_space, capsys):
    """Where the declaration's refuse= turns down every config, the run fails saying the
    configs were skipped by the kernel, and why."""
    space = write_space(TINY.format(study="refuses", kernel="tests.short_kernels_for_tests:"
                                    "refuses_big_blocks").replace("[256, 1024]", "[512, 1024]"))
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               "--quiet", "--no-report"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err, err
    assert "no config was measured: 2 skipped by the kernel (1 of them: BLOCK=512 is more " \
        "than this kernel's 256)" in err, err


@pytest.mark.parametrize(("kernel", "params", "reason"), [
    ("own_grid", {"grid": ["1", "cdiv(n, BLOCK)"]},
     "SweeperError: the launch of kernel own_grid ran scale_kernel on 4 programs, never on "
     "the config's grid of 1: pass (config.grid,) as the grid (fn[(config.grid,)](...)), or "
     "sweep the grid the launch computes as params.grid (an expression, e.g. "
     "\"cdiv(n, BLOCK)\")"),
    ("default_warps", {"block": [32, 128]},
     "SweeperError: the launch of kernel default_warps ran scale_kernel with num_warps=4 "
     "(Triton's default: the launch gave none), not the config's block of 32 threads "
     "(num_warps=1): pass num_warps=config.num_warps"),
    ("heuristic_own_grid", {"grid": ["1", "cdiv(n, BLOCK)"]},
     "SweeperError: the launch of kernel heuristic_own_grid ran _scale_even on 4 programs, "
     "never on the config's grid of 1: pass (config.grid,) as the grid "
     "(fn[(config.grid,)](...)), or sweep the grid the launch computes as params.grid (an "
     "expression, e.g. \"cdiv(n, BLOCK)\")"),
    ("heuristic_default_warps", {"block": [32, 128]},
     "SweeperError: the launch of kernel heuristic_default_warps ran _scale_even with "
     "num_warps=4 (Triton's default: the launch gave none), not the config's block of 32 "
     "threads (num_warps=1): pass num_warps=config.num_warps"),
    ("tuned_by_triton", {"block": [64, 128]},
     "SweeperError: the launch of kernel tuned_by_triton ran _scale_even with num_warps=2, "
     "not the config's block of 128 threads (num_warps=4): pass num_warps=config.num_warps"
     "; _scale_even was launched through its @triton.autotune, which runs the config it "
     "chose, not the swept one: launch _scale_even.fn (the function it wraps) and name the "
     "autotuner with autotuned= to sweep its configs"),
])
def test_a_launch_that_ignores_the_configs_grid_or_block_fails_it(kernel, params, reason,
                                                                  tmp_path, write_space):
    """A launch on its own grid lambda measured the same launch under each swept grid's
    name, and the winner went out with a grid it never ran on (grid=1 on a kernel of one
    block a program: the tuned launch left most of its output unwritten); a launch without
    ``num_warps`` did the same for the block.  The config whose launch ran another grid
    or block fails with what to pass; the one it did run is measured.  So through a
    ``@triton.heuristics`` (which launches the jitted function by its ``run``, never
    ``fn[grid]``) and a ``@triton.autotune`` (which runs the config it chose)."""
    space = write_space(json.dumps({
        "study": kernel, "kernel": f"tests.short_kernels_for_tests:{kernel}",
        "sampler": "exhaustive", "params": {"BLOCK": [256], "n": [1024], **params},
        "measure": {"warmup": 1, "repeat": 3}}))
    main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
          "--quiet", "--no-report"])
    trials, _ = StudyStore(tmp_path / f"{kernel}-interpret").records()
    assert len(trials) == 2
    failed, = [t for t in trials if t.status is not TrialStatus.OK]
    assert failed.status is TrialStatus.CRASHED and failed.reason == reason, failed.reason


def test_a_launch_through_heuristics_or_an_autotuner_is_recorded_once(monkeypatch):
    """A ``@triton.heuristics`` launch is recorded once, with the values it adds (its
    grid function reads them); a ``@triton.autotune`` launch once, as the config it chose
    ran, not each config it benchmarked to choose; a compile-only launch not at all; and
    Triton's classes are left as they were."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from sweeper.kernels._launched import Launched, recording
    from tests.short_kernels_for_tests import A, _scale_even, _scale_tuned

    before = {c: c.__dict__.get("run") for c in (JITFunction, InterpretedFunction, Autotuner)}
    x = torch.ones(4096)
    with recording() as seen:
        _scale_even[lambda meta: (4096 // meta["BLOCK"] + meta["EVEN"] - 1,)](
            x, 4096, A, BLOCK=1024, num_warps=2)
        _scale_tuned[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, 4096, A)
        _scale_even.fn.warmup(x, 4096, A, BLOCK=1024, EVEN=True, grid=(4,))
    assert seen == [Launched("_scale_even", 4, 2), Launched("_scale_even", 16, 2, True)]
    assert torch.equal(x, torch.full((4096,), A * A))
    assert {c: c.__dict__.get("run") for c in before} == before


def test_a_triton_function_launched_without_run_is_recorded_at_its_launch():
    """An older interpreter's function launches by its own ``fn[grid]``, its class having
    no ``run`` (each instance has its own): its launches go through the wrapper there,
    once, and its class is put back."""
    from sweeper.kernels._launched import Launched, _launched, runs_patched

    ran: list[object] = []

    class Older:                        # Triton 3.1's InterpretedFunction, in its ways
        arg_names = ("x", "BLOCK")
        __name__ = "older"

        def __getitem__(self, grid):
            return lambda *args, **kwargs: ran.append((args, kwargs))

    seen = []

    def recorded(original):
        def run(fn, *args, grid, warmup, **kwargs):
            seen.append(_launched(fn, grid, args, kwargs))
            return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
        return run

    before = Older.__dict__["__getitem__"]
    with runs_patched({Older: recorded}):
        Older()[lambda meta: (meta["BLOCK"] // 2,)](1, BLOCK=8, num_warps=2)
    assert seen == [Launched("older", 4, 2)]
    assert ran == [((1,), {"BLOCK": 8, "num_warps": 2})]
    assert Older.__dict__["__getitem__"] is before and "run" not in Older.__dict__


def test_a_launch_of_a_second_kernel_or_of_none_is_no_mismatch():
    """A split-K launch's reduction runs on a grid of its own beside the config's, a grid
    function that cannot be evaluated outside Triton says nothing, and a launch of no
    Triton kernel (CUDA C, torch) has nothing to compare."""
    from sweeper.kernels._launched import Launched, mismatch

    assert mismatch([Launched("mm", 64, 4), Launched("reduce", 8, None)], 64, 4) is None
    assert mismatch([Launched("mm", None, 2)], 64, 2) is None
    assert mismatch([], 64, 2) is None
    assert mismatch([Launched("mm", 64, None)], 64, 2) is not None


def test_a_launch_adding_y_and_z_of_its_own_runs_the_configs_grid_in_x():
    """``fn[(config.grid, heads)]`` runs the config's grid in x, as a batched or per-head
    launch writes it: its programs in x are what is compared, not all its programs."""
    from sweeper.kernels._launched import _launched

    def fn() -> None: ...

    assert _launched(fn, (64, 12), (), {"num_warps": 4}).programs == 64
    assert _launched(fn, lambda meta: (64, 3, 2), (), {}).programs == 64
    assert _launched(fn, 64, (), {}).programs == 64
