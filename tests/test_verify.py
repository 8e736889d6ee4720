"""``verify=`` (a space's ``verify:``): a comparison of one's own in place of the
tolerance check, Kernel Tuner's ``verify``.  Short kernels end to end on the interpreter
(an approximate kernel it accepts, the reasons it gives, the bugs it has), the function
itself, its declaration's refusals, and a ``cuda`` kernel's option without a GPU (its
parsing, refusals, source and check on buffers filled by hand); its GPU run is at the
end, marked ``gpu``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import sweeper
from sweeper.cli import main
from sweeper.errors import SweeperError, VerifyFailed
from sweeper.kernels import load_kernel
from sweeper.kernels._short import VERIFY_FALSE, verified
from sweeper.space import Config, Problem, load_space
from sweeper.store import StudyStore
from sweeper.trial import TrialStatus
from tests import short_kernels_for_tests as declared
from tests.test_cuda_kernel import COPY_CU, one_gpu_trial, space_text
from tests.test_short_kernels import TINY


def _run(tmp_path, write_space, kernel: str, *extra: str) -> tuple[int, StudyStore]:
    """``sweeper run`` of the two-config space of ``tests.short_kernels_for_tests:kernel``
    on the interpreter: its exit status and its study."""
    space = write_space(TINY.format(study=kernel,
                                    kernel=f"tests.short_kernels_for_tests:{kernel}"))
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(tmp_path),
               *extra])
    return rc, StudyStore(tmp_path / f"{kernel}-interpret")


def test_a_verify_accepts_an_approximate_kernel_the_tolerance_refuses(tmp_path, write_space,
                                                                       capsys):
    """A kernel off by a part in a thousand fails float32's tolerance check at every
    config; declared with a verify= that accepts within 1 %, its trials are measured."""
    rc, store = _run(tmp_path, write_space, "approximate_unverified", "--quiet",
                        "--no-report")
    trials = store.records()[0]
    assert rc == 1 and {t.status for t in trials} == {TrialStatus.WRONG_ANSWER}
    assert trials[0].reason.startswith("output x: ") and "differ from the reference at " \
        "rtol 1.3e-06, atol 1e-05 for float32" in trials[0].reason, trials[0].reason
    rc, store = _run(tmp_path, write_space, "approximate_verified", "--quiet",
                        "--no-report")
    assert rc == 0, capsys.readouterr()
    assert [t.status for t in store.records()[0]] == [TrialStatus.OK, TrialStatus.OK]


@pytest.mark.parametrize(("kernel", "reason"), [
    ("verify_says_why", "x is off by up to "),
    ("verify_says_false", VERIFY_FALSE),
])
def test_a_verify_that_says_no_makes_a_wrong_answer_with_its_reason(kernel, reason, tmp_path,
                                                                    write_space, capsys):
    """A verify= that returns a string, or False, is the trial's verdict: a wrong answer
    whose reason is its string (``verify returned False``), which the run's ``failed:``
    line and the report show, as they show the tolerance check's."""
    rc, store = _run(tmp_path, write_space, kernel)
    out = capsys.readouterr().out
    assert rc == 1, out
    trials = store.records()[0]
    assert {t.status for t in trials} == {TrialStatus.WRONG_ANSWER}
    assert all(t.reason.startswith(reason) for t in trials), [t.reason for t in trials]
    assert "failed: 2 wrong_answer (first: #" in out and reason in out, out
    assert reason in (tmp_path / f"{kernel}-interpret" / "report.md").read_text()


@pytest.mark.parametrize(("kernel", "reason"), [
    ("verify_raises", "the kernel's verify= _raises raised KeyError: 'y' (at "
     "short_kernels_for_tests.py:{raised}: return outputs[\"y\"])"),
    ("verify_says_three", "short_kernels_for_tests.py:{defined}: the kernel's verify= "
     "_says_three returned 3 (int); it must return None or True where the outputs agree, "
     "else False or a string saying why not"),
])
def test_a_verify_that_raises_or_gives_no_verdict_fails_its_trial_saying_so(
        kernel, reason, tmp_path, write_space, capsys):
    """A verify= that raises, or returns anything but None, True, False or a reason, has
    a bug: no verdict on the kernel, so each trial fails as crashed, its reason naming the
    function and what it raised (at its line) or returned (and where it is); the run ends
    with a kernel's failure's exit status, no traceback, the failed line naming it."""
    function = {"verify_raises": declared._raises,
                "verify_says_three": declared._says_three}[kernel]
    defined = function.__code__.co_firstlineno
    reason = reason.format(defined=defined, raised=defined + 1)
    rc, store = _run(tmp_path, write_space, kernel, "--no-report")
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in err, err
    trials = store.records()[0]
    assert {t.status for t in trials} == {TrialStatus.CRASHED}
    assert [t.reason for t in trials] == [reason, reason]
    assert "failed: 2 crashed (first: #" in out and reason[:100] in out, out


@pytest.mark.parametrize(("kernel", "said"), [
    ("verify_says_why", "sweeper: BLOCK=256: wrong answer: x is off by up to "),
    ("verify_raises", "sweeper: BLOCK=256: the kernel's verify= _raises raised KeyError: 'y' "
     "(at short_kernels_for_tests.py:"),
    ("broken_reference", "sweeper: BLOCK=256: the reference raised RuntimeError: "),
])
def test_ab_stops_at_a_verify_that_says_no_or_raises_saying_so(kernel, said, tmp_path,
                                                               write_space, capsys,
                                                               monkeypatch):
    """``sweeper ab`` checks both sides before timing either: a verify= that says no stops
    it as a wrong answer does; one that raises (as a reference that raises) stops it in
    one line naming what raised and where, exit 2, not a traceback."""
    monkeypatch.chdir(tmp_path)
    space = write_space(TINY.format(study=f"ab_{kernel}",
                                    kernel=f"tests.short_kernels_for_tests:{kernel}"))
    rc = main(["ab", str(space), "--vary", "BLOCK=256,1024", "--device", "interpret"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(said), err


@pytest.mark.parametrize(("said", "verdict"), [
    (None, None), (True, None), (False, VERIFY_FALSE), ("off by 2", "off by 2")])
def test_what_a_verify_says_is_the_verdict(said, verdict):
    def verify(outputs, expected):
        return said

    assert verified(verify, {"x": torch.ones(2)}, {"x": torch.ones(2)}) == verdict


@pytest.mark.parametrize(("said", "shown"), [
    ("", "'' (str)"), ("  ", "'  ' (str)"), (0, "0 (int)"), (torch.tensor(True),
                                                              "tensor(True) (Tensor)"),
    ([False], "[False] (list)")])
def test_a_verify_that_returns_no_verdict_fails_naming_it_and_what_it_returned(said, shown):
    """No verdict (an empty string, a number, a tensor a comparison left unreduced) is a
    bug in the verify, not a wrong answer: :class:`VerifyFailed`, naming the function,
    where it is and what it returned."""
    def close(outputs, expected):
        return said

    with pytest.raises(VerifyFailed) as failed:
        verified(close, {}, {})
    assert str(failed.value) == (
        f"test_verify.py:{close.__code__.co_firstlineno}: the kernel's verify= close "
        f"returned {shown}; it must return None or True where the outputs agree, else False "
        "or a string saying why not")


def test_a_verify_is_given_the_checked_outputs_the_kernels_and_the_references():
    """verify= is called with two dicts of output name -> tensor, the kernel's outputs
    and the reference's, of those ``check`` names alone (a scratch output left out)."""
    seen = []

    def look(outputs, expected):
        seen.append((outputs, expected))

    def launch(x, y, scratch, config):
        y.copy_(x * 2)
        scratch.zero_()

    kernel = sweeper.kernel(launch, name="doubles", inputs={"x": "n"},
                            outputs={"y": "n", "scratch": "n"}, check=["y"], grid=1,
                            reference=lambda x: x * 2, verify=look)()
    problem = Problem("float32", 64 * 4, (("n", 64),))
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    kernel.poison(buffers)
    kernel.launch(buffers, Config(problem=problem, grid=1, block=128, meta={}))
    assert kernel.check(buffers) is None
    (outputs, expected), = seen
    assert list(outputs) == list(expected) == ["y"]
    assert outputs["y"] is buffers["y"] and torch.equal(expected["y"], buffers["x"] * 2)


def _launch(x, config):
    pass


@pytest.mark.parametrize(("kwargs", "message", "tail"), [
    ({"verify": 5}, "kernel k: verify= must be a function of the outputs and the "
     "reference's (two dicts of output name -> tensor) returning None or True where they "
     "agree, else False or a string saying why not, got 5", ""),
    ({"verify": lambda outputs, expected, tolerance: None}, "kernel k: verify= "
     "<lambda>(outputs, expected, tolerance) at test_verify.py:", " cannot take the call it "
     "gets, <lambda>(outputs, expected): missing a required argument: 'tolerance'; give it "
     "two parameters, the outputs and the reference's"),
    ({"verify": lambda o, e: None, "tolerance": {"float32": (1e-3, 1e-5)}},
     "kernel k: tolerance= would never be used: verify replaces the tolerance check (a "
     "verify compares at tolerances of its own); allowed: one of tolerance and verify=", ""),
])
def test_a_wrong_verify_is_refused_where_the_kernel_is_declared(kwargs, message, tail):
    with pytest.raises(SweeperError) as err:
        sweeper.kernel(_launch, name="k", inputs={"x": "n"}, outputs=["x"],
                       meta={"BLOCK": 64}, reference=lambda x: x, **kwargs)
    assert str(err.value).startswith(message) and str(err.value).endswith(tail), \
        str(err.value)


def _module(tmp_path, monkeypatch, name: str, before: str, verify: str) -> str:
    """Kernel ``k`` of a module ``name`` on the path, ``before`` its declaration, which
    gives ``verify=verify`` (at line 5 where ``before`` is empty); its import
    leaves ``name.imported``.  Returns ``name:k``."""
    (tmp_path / f"{name}.py").write_text(
        "from pathlib import Path\n"
        "Path(__file__).with_suffix('.imported').write_text('ran')\n"
        f"import sweeper\n{before}"
        "@sweeper.kernel(inputs={'x': 'n'}, outputs=['x'], meta={'BLOCK': 64},\n"
        f"                reference=lambda x: x, verify={verify})\n"
        "def k(x, config):\n"
        "    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return f"{name}:k"


def test_a_verify_that_cannot_take_its_call_is_refused_by_run_and_plan_alike(
        tmp_path, monkeypatch, write_space, capsys):
    """A module whose verify= cannot take (outputs, expected): ``sweeper run`` refuses its
    space at the kernel's line, exit 2, nothing written; ``sweeper plan``, which reads
    the declaration from the source without importing or running it, in the same line."""
    space = write_space(TINY.format(study="arity", kernel=_module(
        tmp_path, monkeypatch, "verify_arity", "", "lambda outputs: None")))
    assert main(["plan", str(space), "--device", "interpret"]) == 2
    planned = capsys.readouterr().err
    assert not (tmp_path / "verify_arity.imported").exists()
    studies = tmp_path / "studies"
    rc = main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies)])
    said = capsys.readouterr().err
    assert rc == 2 and said == planned and "Traceback" not in said, said
    assert said.startswith(f"{space}:2: kernel: cannot load kernel 'verify_arity:k'"), said
    assert "kernel k: verify= <lambda>(outputs) at verify_arity.py:5 cannot take the call " \
        "it gets, <lambda>(outputs, expected): too many positional arguments; give it two " \
        "parameters, the outputs and the reference's" in said
    assert not studies.exists()


def test_plan_reads_a_verify_without_running_it(tmp_path, monkeypatch, write_space, capsys):
    """A declaration with a verify= that would fail: ``plan`` reads it from the source,
    checks its parameters, and neither imports the module nor calls the function."""
    space = write_space(TINY.format(study="unrun", kernel=_module(
        tmp_path, monkeypatch, "verify_unrun",
        "def close(outputs, expected):\n    raise RuntimeError('ran')\n", "close")))
    assert main(["plan", str(space), "--device", "interpret"]) == 0, capsys.readouterr()
    assert "would measure 2 on " in capsys.readouterr().out
    assert not (tmp_path / "verify_unrun.imported").exists()


# -- a cuda kernel's verify: option, without a GPU ------------------------------------------

CHECK_PY = """\
import torch

def close(outputs, expected):
    return torch.allclose(outputs["dst"], expected["dst"], rtol=1e-2)

def says_why(outputs, expected):
    return "dst is not src"

def takes_one(outputs):
    return None

NOT_A_FUNCTION = 5
"""


@pytest.fixture
def cu_space(tmp_path):
    """A space beside a copy of examples/copy.cu and check.py; call with its text."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")
    (tmp_path / "check.py").write_text(CHECK_PY)

    def write(text: str) -> Path:
        (tmp_path / "space.yaml").write_text(text)
        return tmp_path / "space.yaml"
    return write


def _checked(kernel, factor: float) -> str | None:
    """The check of the copy kernel's outputs where ``dst`` holds ``src * factor``, filled
    by hand (no launch: this machine has no GPU)."""
    problem = Problem("float32", 64 * 4, (("n", 64),))
    buffers = kernel.allocate(problem, "cpu")
    kernel.randomize(buffers, torch.Generator().manual_seed(0))
    kernel.poison(buffers)
    buffers["dst"].copy_(buffers["src"] * factor)
    return kernel.check(buffers)


def test_a_cuda_verify_file_is_read_beside_the_space_and_judges_the_outputs(cu_space):
    """``verify: check.py:close`` is the short form's ``verify=``: resolved beside the
    space file, called with the checked outputs and the reference's in place of the
    tolerance check (a copy off by 0.1 % passes it, and fails without it), what it
    says the trial's verdict; its file is part of the kernel's source."""
    folder = cu_space(space_text()).parent
    plain = load_space(cu_space(space_text()))
    assert _checked(load_kernel(plain.kernel, plain.kernel_options), 1.001).startswith(
        "output dst: ")
    space = load_space(cu_space(space_text(extra="\n  verify: check.py:close")))
    assert dict(space.kernel_options)["verify"] == f"{folder / 'check.py'}:close"
    kernel = load_kernel(space.kernel, space.kernel_options)
    assert _checked(kernel, 1.001) is None
    assert _checked(kernel, 1.1) == VERIFY_FALSE
    assert "// verify check.py:close\n" in kernel.source()
    assert folder / "check.py" in kernel.source_files()
    space = load_space(cu_space(space_text(extra="\n  verify: check.py:says_why")))
    assert _checked(load_kernel(space.kernel, space.kernel_options), 1) == "dst is not src"


def test_a_cuda_verify_files_edit_is_a_new_source_which_plan_reads_unrun(cu_space):
    """An edit of the verify's file is a new source hash, read from the options without
    importing the file (as ``plan`` and a lookup hash it): the same hash a built kernel
    gives."""
    from sweeper.kernels import source_hash_unrun

    space = load_space(cu_space(space_text(extra="\n  verify: check.py:close")))
    options = dict(space.kernel_options)
    before = source_hash_unrun(space.kernel, options)
    assert before == load_kernel(space.kernel, space.kernel_options).source_hash()
    check = Path(options["verify"].rpartition(":")[0])
    check.write_text(CHECK_PY.replace("rtol=1e-2", "rtol=1e-3"))
    assert source_hash_unrun(space.kernel, options) not in (None, before)
    plain = load_space(cu_space(space_text()))
    assert source_hash_unrun(plain.kernel, dict(plain.kernel_options)) != before


@pytest.mark.parametrize(("extra", "message"), [
    ("\n  verify: nowhere.py:close", ":9: kernel.verify: no file {folder}/nowhere.py for the "
     "verify"),
    ("\n  verify: close", ":9: kernel.verify: 'close' is not a verify; allowed: "
     "module:function or file.py:function, relative to the space file"),
    ("\n  verify: check.py:takes_one", ":9: kernel.verify: {folder}/check.py:takes_one cannot "
     "take the call it gets, verify(outputs, expected): too many positional arguments; give "
     "it two parameters, the outputs and the reference's"),
    ("\n  verify: check.py:absent", ":9: kernel.verify: {folder}/check.py:absent: "
     "AttributeError: "),
    ("\n  verify: check.py:NOT_A_FUNCTION", ":9: kernel.verify: {folder}/check.py:"
     "NOT_A_FUNCTION: TypeError: {folder}/check.py:NOT_A_FUNCTION is int, not callable"),
    ("\n  verify: check.py:close\n  tolerance: {float32: [1e-3, 1e-5]}", ":10: "
     "kernel.tolerance: would never be used: verify replaces the tolerance check (a verify "
     "compares at tolerances of its own); allowed: one of tolerance and verify:"),
])
def test_a_wrong_cuda_verify_is_refused_at_its_line(cu_space, capsys, extra, message):
    """A verify: that names no function, a missing file or one that cannot take (outputs,
    expected), or one beside a tolerance it would leave unused, is refused at its line
    by ``run`` (which imports it), exit 2, nothing written."""
    path = cu_space(space_text(extra=extra))
    studies = path.parent / "studies"
    assert main(["run", str(path), "--device", "interpret", "--studies-dir",
                 str(studies)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{path}{message.replace('{folder}', str(path.parent))}"), err
    assert "\n" not in err and not studies.exists()


# -- on a GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize(("function", "status", "reason"), [
    ("close", TrialStatus.OK, None),
    ("says_why", TrialStatus.WRONG_ANSWER, "dst is not src"),
])
def test_a_cuda_verify_judges_a_trial_on_the_gpu(tmp_path, monkeypatch, function, status,
                                                 reason):
    """A CUDA C kernel's ``verify:`` judges its trials on the GPU: the copy passes
    ``close``, and ``says_why``'s string is its wrong answer's reason, checked first and
    after the timed launches."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "check.py").write_text(CHECK_PY)
    result = one_gpu_trial(tmp_path, extra=f"\n  verify: check.py:{function}")
    assert (result.status, result.reason) == (status, reason)

