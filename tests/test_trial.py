import os

import pytest
import torch
import triton.language as tl

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.space import Config, MeasureSpec, Problem
from sweeper.trial import TrialStatus, classify, run_trial

PROBLEM = Problem("float32", 8192)
MEASURE = MeasureSpec(warmup=1, repeat=3, stop="fixed")


def run(kernel_name: str, block: int = 1024):
    device = open_device("interpret")
    kernel = load_kernel(kernel_name)
    buffers = kernel.allocate(PROBLEM, "cpu")
    config = Config(problem=PROBLEM, grid=2, block=128, meta={"BLOCK": block}, cache="warm")
    return run_trial(kernel, buffers, config, device, MEASURE, torch.Generator().manual_seed(0))


def test_copy_is_measured_and_verified():
    result = run("copy")
    assert result.status is TrialStatus.OK
    assert len(result.samples_ms) == 3 and result.stats.n == 3
    assert result.cold_s is not None and result.cold_s > 0
    assert result.gbps == pytest.approx(2 * 8192 / (result.stats.median * 1e-3) / 1e9)


def test_partial_result_is_a_wrong_answer():
    result = run("tests.kernels_for_tests:DropsLastBlock")
    assert result.status is TrialStatus.WRONG_ANSWER
    assert result.reason.startswith("1024 of 2048 elements differ from the input (first at "
                                    "index 1024: nan")
    assert result.samples_ms == []


def test_zeros_are_a_wrong_answer_on_random_input():
    result = run("tests.kernels_for_tests:CopiesZeros")
    assert result.status is TrialStatus.WRONG_ANSWER
    assert "elements differ" in result.reason


def test_exception_is_recorded_not_raised():
    result = run("tests.kernels_for_tests:RaisesOnBigBlock", block=1024)
    assert result.status is TrialStatus.CRASHED
    assert result.reason == ("RuntimeError: BLOCK=1024 is too big for this test (at "
                             "kernels_for_tests.py:31: raise RuntimeError(f\"BLOCK="
                             "{config.meta['BLOCK']} is too big for this test\"))")
    assert run("tests.kernels_for_tests:RaisesOnBigBlock", block=256).status is TrialStatus.OK


def test_a_check_that_answers_neither_none_nor_a_reason_fails_the_trial_saying_so():
    """A check returning True was a wrong answer whose reason is not text, which the
    journal refused: the sweep stopped with "cannot record a trial record"."""
    result = run("tests.kernels_for_tests:ChecksTrue")
    assert result.status is TrialStatus.CRASHED
    assert result.reason == ("TypeError: ChecksTrue.check returned True; it returns None "
                             "where the outputs are right, else the reason (a str)")


def _named(name: str) -> type[Exception]:
    return type(name, (Exception,), {})


@pytest.mark.parametrize("exc, status", [
    (_named("OutOfResources")("out of resource: shared memory, Required: 262144"),
     TrialStatus.OUT_OF_RESOURCES),
    (_named("CompilationError")("at 3:4: bad"), TrialStatus.COMPILE_ERROR),
    (_named("PTXASError")("ptxas fatal"), TrialStatus.COMPILE_ERROR),
    (ValueError("boom"), TrialStatus.CRASHED),
])
def test_classify(exc, status):
    got, reason = classify(exc)
    assert got is status
    assert reason.startswith(type(exc).__name__ + ": ")


def test_a_cuda_error_keeps_what_happened_and_drops_the_generic_advice():
    err = _named("AcceleratorError")(
        "CUDA error: an illegal memory access was encountered\n"
        "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more "
        "information.\nCUDA kernel errors might be asynchronously reported at some other API "
        "call.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1")
    assert classify(err) == (TrialStatus.CRASHED, "AcceleratorError: CUDA error: an illegal "
                                                  "memory access was encountered")


def test_a_reason_cut_to_its_500_characters_ends_in_an_ellipsis_before_the_line():
    """Triton's advice on a global that is not a constexpr runs past the 500 characters a
    reason keeps: the cut is marked, so the words left before the kernel's line are not
    read as the end of Triton's sentence ("..., but we do (at kernels.py:13: ...)")."""
    from types import SimpleNamespace

    advice = "Cannot access global variable SCALE. " + "Read the advice. " * 40 + \
        "Alternatively, set the envvar, but we do not promise to support this forever."
    err = _named("CompilationError")(advice)
    err.error_message = advice             # type: ignore[attr-defined]
    err.src = "def k(x):\n    y = x * SCALE\n"   # type: ignore[attr-defined]
    err.node = SimpleNamespace(lineno=2)      # type: ignore[attr-defined]
    status, reason = classify(err)
    assert status is TrialStatus.COMPILE_ERROR and len(reason) == 500
    assert reason.startswith("CompilationError: Cannot access global variable SCALE. ")
    assert reason.endswith("… (at line 2 of the kernel: y = x * SCALE)")

    try:
        raise ValueError("a long message. " * 40)
    except ValueError as caught:
        status, reason = classify(caught)
        line = caught.__traceback__.tb_lineno if caught.__traceback__ else 0
    assert status is TrialStatus.CRASHED and len(reason) == 500
    assert reason.endswith(f'… (at test_trial.py:{line}: raise ValueError("a long message. " '
                           '* 40))')


def test_a_statement_over_several_lines_is_quoted_whole_on_one_line():
    """A call spread over lines was quoted by its first line alone (``k[(g,)](x, y,``);
    the reason quotes the whole statement, joined on one line, its comments left out, a
    long one capped at 160 characters ending in "…", in a compile error's line as in a
    crash's."""
    from types import SimpleNamespace

    from sweeper.errors import statement

    err = _named("CompilationError")("bad")
    err.error_message = "bad"                  # type: ignore[attr-defined]
    err.src = ("def k(x):\n    y = tl.load(x,  # the input\n"          # type: ignore[attr-defined]
               "                mask=m,\n                other=0)\n    return y\n")
    err.node = SimpleNamespace(lineno=3)      # type: ignore[attr-defined]
    assert classify(err)[1] == ("CompilationError: bad (at line 3 of the kernel: "
                                "y = tl.load(x, mask=m, other=0))")
    try:
        f = None
        f(1,  # a note
          2)                                  # type: ignore[misc]
    except TypeError as caught:
        line = caught.__traceback__.tb_lineno if caught.__traceback__ else 0
        reason = classify(caught)[1]
    assert reason.endswith(f"(at test_trial.py:{line}: f(1, 2))"), reason
    long = ["call(" + "argument, " * 10 + "\n", "     " + "argument, " * 10 + ")\n"]
    assert statement(long, 2) == ("call(" + "argument, " * 20).strip()[:159] + "…"
    assert statement(["x = 1  # one\n", "y = (2,\n", "     3)\n"], 1) == "x = 1"
    assert statement(["(unclosed,\n"], 1) == "(unclosed,"


def test_an_interpreter_error_and_a_crash_with_no_line_are_capped_by_the_same_rule():
    """The interpreter's error (its cause raised in the user's code) and a crash with no
    user line keep 500 characters like every other reason, a cut message ending in "…"
    and the user's line kept whole after it."""
    interpreter_error = _named("InterpreterError")
    try:
        try:
            raise ValueError("a long message. " * 40)
        except ValueError as cause:
            line = cause.__traceback__.tb_lineno if cause.__traceback__ else 0
            raise interpreter_error("a long message. " * 40) from cause
    except interpreter_error as caught:
        status, reason = classify(caught)
    assert status is TrialStatus.CRASHED and len(reason) == 500
    assert reason.startswith("InterpreterError: a long message. ")
    assert reason.endswith(f'… (at test_trial.py:{line}: raise ValueError("a long message. " '
                           '* 40))')

    status, reason = classify(ValueError("a long message.\n" * 40))   # never raised: no line
    assert status is TrialStatus.CRASHED and len(reason) == 500 and reason.endswith("…")


def _typo_body(x, y, n):  # type: ignore[no-untyped-def]
    import triton.language as tl

    offsets = tl.arange(0, 64)
    tl.store(y + offsets, tl.lod(x + offsets), mask=offsets < n)   # tl.lod: a typo


def test_an_error_in_an_interpreted_kernel_names_the_kernels_line():
    """The interpreter runs the kernel's body as Python: the reason keeps Triton's message
    and adds the line of the user's kernel where it failed."""
    from sweeper.kernels._jit import jit

    kernel = jit(_typo_body, interpret=True)
    with pytest.raises(Exception) as caught:
        kernel[(1,)](torch.zeros(64), torch.zeros(64), 64)
    status, reason = classify(caught.value)
    assert status is TrialStatus.CRASHED
    assert "has no attribute 'lod'" in reason
    assert reason.endswith("(at test_trial.py:"
                           f"{_typo_body.__code__.co_firstlineno + 4}: tl.store(y + offsets, "
                           "tl.lod(x + offsets), mask=offsets < n))")


def _wrong_at_512_body(x, y, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.static_assert(BLOCK != 512, "BLOCK=512 is planted wrong")
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n), mask=offsets < n)


def _typo_compiled_body(x, y, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.lod(x + offsets), mask=offsets < n)   # tl.lod: a typo


#: Compiles one of this file's bodies for an H100/H200 in a fresh interpreter and prints
#: how the trial would record the error: Triton reaches it before it needs a GPU or its
#: assembler.  A fresh process, because a test before may leave the Triton interpreter's
#: patches on ``triton.language`` in place (a hung trial's thread still running a launch),
#: under which a compile for a GPU fails otherwise.
COMPILE = """
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from sweeper.kernels._jit import jit
from sweeper.trial import classify
import tests.test_trial as here

for name, block in zip(sys.argv[1::2], sys.argv[2::2]):
    source = ASTSource(jit(getattr(here, name), interpret=False),
                       constexprs={"BLOCK": int(block)},
                       signature={"x": "*fp32", "y": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    try:
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
    except Exception as err:
        status, reason = classify(err)
        print(json.dumps([status.value, reason]))
    else:
        print(json.dumps(None))
"""


def _compile_errors(*compiles) -> list[tuple[TrialStatus, str]]:
    """How a trial records compiling each ``(body, block)`` at ``BLOCK=block`` for an
    H100/H200, all in one process (its imports of torch and Triton take seconds)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    args = [str(a) for body, block in compiles for a in (body.__name__, block)]
    done = subprocess.run([sys.executable, "-c", COMPILE, *args],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "0"}, check=True)
    printed = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(compiles):]]
    assert len(printed) == len(compiles) and None not in printed, done.stdout
    return [(TrialStatus(status), reason) for status, reason in printed]


def test_an_interpreted_static_assert_is_the_compile_error_a_gpu_records():
    """``tl.static_assert`` fails as the interpreter runs the body (a plain
    ``AssertionError``), where a GPU's compiler refuses the config: the trial is the
    ``compile_error`` the GPU records, with its message and the kernel's line, never a
    crash; an ``assert`` of the kernel's own stays a crash."""
    from sweeper.kernels._jit import jit

    kernel = jit(_wrong_at_512_body, interpret=True)
    with pytest.raises(Exception) as caught:
        kernel[(1,)](torch.zeros(512), torch.zeros(512), 512, BLOCK=512)
    status, reason = classify(caught.value)
    line = _wrong_at_512_body.__code__.co_firstlineno + 2
    assert (status, reason) == (
        TrialStatus.COMPILE_ERROR, "CompileTimeAssertionFailure: BLOCK=512 is planted wrong "
        f"(at test_trial.py:{line}: tl.static_assert(BLOCK != 512, \"BLOCK=512 is planted "
        "wrong\"))")
    interpreter_error = _named("InterpreterError")
    try:
        try:
            raise AssertionError("the kernel's own")
        except AssertionError as cause:
            raise interpreter_error("the kernel's own") from cause
    except interpreter_error as own:
        assert classify(own)[0] is TrialStatus.CRASHED


def test_a_compile_error_keeps_tritons_message_and_names_the_kernels_line():
    """Compiled for a GPU, a kernel wrong at BLOCK=512 only fails to compile there: the
    reason is Triton's message and the line of the user's file, not Triton's excerpt of
    the source cut at 500 characters; a typo (``tl.lod``) likewise."""
    (status, reason), (typo_status, typo_reason) = _compile_errors(
        (_wrong_at_512_body, 512), (_typo_compiled_body, 64))
    assert status is TrialStatus.COMPILE_ERROR
    line = _wrong_at_512_body.__code__.co_firstlineno + 2
    assert reason == ("CompileTimeAssertionFailure: BLOCK=512 is planted wrong (at "
                      f"test_trial.py:{line}: tl.static_assert(BLOCK != 512, \"BLOCK=512 is "
                      "planted wrong\"))")
    assert typo_status is TrialStatus.COMPILE_ERROR
    assert "has no attribute 'lod'" in typo_reason
    line = _typo_compiled_body.__code__.co_firstlineno + 2
    assert typo_reason.endswith(f"(at test_trial.py:{line}"
                                ": tl.store(y + offsets, tl.lod(x + offsets), mask=offsets < n))")
