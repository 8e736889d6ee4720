"""One poison and one comparison for every kernel: each built-in's outputs are filled with
``poison_value`` before a launch, and a planted wrong result or an element left unwritten
fails its check (on the interpreter)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from sweeper.kernels import load_kernel
from sweeper.kernels._base import fill_random, mismatch, poison_value
from sweeper.space import Problem
from sweeper.trial import TrialStatus
from tests.test_library import matrix, n_problem, strided, trial

MATMUL = Problem("float32", 80 * 48 * 4, (("M", 48), ("N", 80), ("K", 40)))
MM_META = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_stages": 2}
INT32 = Problem("int32", 4096 * 4, (("n", 4096),))

#: kernel, options, problem, meta, the output a wrong launch writes, and whether a launch
#: that writes nothing is caught by the poison (scale works in place: nothing to poison).
BUILTINS: list[tuple[str, tuple[tuple[str, str], ...], Problem, dict[str, int], str, bool]] = [
    ("copy", (), n_problem("float32", 4096), {"BLOCK": 256}, "dst", True),
    ("copy", (), INT32, {"BLOCK": 256}, "dst", True),
    ("add", (), n_problem("float32", 4096), {"BLOCK": 256}, "c", True),
    ("add", (), INT32, {"BLOCK": 256}, "c", True),
    ("scale", (), n_problem("float32", 4096), {"BLOCK": 256}, "x", False),
    ("copy-strided", (), strided(4096, 8, 0), {"BLOCK": 256}, "dst", True),
    ("softmax", (), matrix(6, 100), {"BLOCK": 128}, "y", True),
    ("matmul", (), MATMUL, MM_META, "c", True),
    ("torch-op", (("op", "torch.nn.functional.gelu"),), matrix(8, 100), {}, "y", True),
]


def _variant(name: str, options: Any, launch: Any) -> Any:
    """The built-in ``name`` with ``launch(kernel, buffers, config)`` in place of its own."""
    kernel = load_kernel(name, options)
    cls = type(f"Wrong_{type(kernel).__name__}", (type(kernel),), {"launch": launch})
    wrong = cls.__new__(cls)
    wrong.__dict__.update(kernel.__dict__)
    return wrong


@pytest.mark.parametrize("name, options, problem, meta, output, poisoned", BUILTINS,
                         ids=[f"{b[0]}-{b[2].dtype}" for b in BUILTINS])
def test_every_builtin_catches_a_planted_value_and_an_unwritten_output(
        name, options, problem, meta, output, poisoned):
    result, _ = trial(load_kernel(name, options), problem, meta, grid=2)
    assert result.status is TrialStatus.OK, result.reason

    def planted(self: Any, buffers: Any, config: Any) -> None:
        type(self).__mro__[1].launch(self, buffers, config)
        buffers.tensors[output].view(-1)[17] = 1000       # far off any correct value

    result, _ = trial(_variant(name, options, planted), problem, meta, grid=2)
    assert result.status is TrialStatus.WRONG_ANSWER and result.reason
    if poisoned:
        result, _ = trial(_variant(name, options, lambda self, buffers, config: None),
                          problem, meta, grid=2)
        assert result.status is TrialStatus.WRONG_ANSWER and result.reason
        if problem.dtype == "int32":
            assert f"(first at index 0: {-2**31} != " in result.reason


@pytest.mark.parametrize("dtype, value", [
    (torch.float32, "nan"), (torch.bfloat16, "nan"), (torch.int8, -128),
    (torch.int32, -2**31), (torch.int64, -2**63), (torch.uint8, 255), (torch.bool, True)])
def test_the_poison_lies_outside_what_random_inputs_copy_or_add_to(dtype, value):
    poison = poison_value(dtype)
    assert str(poison) == value if value == "nan" else poison == value
    if dtype in (torch.int32, torch.int64, torch.uint8):
        x, y = torch.empty(10_000, dtype=dtype), torch.empty(10_000, dtype=dtype)
        generator = torch.Generator().manual_seed(0)
        fill_random(x, generator)
        fill_random(y, generator)
        assert not (x == poison).any() and not (x + y == poison).any()


def test_one_comparison_says_exact_and_tolerant_differences_alike():
    got = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    want = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert mismatch(got, want, "the input") == \
        "1 of 4 elements differ from the input (first at index (1, 1): nan != 4.0)"
    near = want + 1e-6
    assert mismatch(near, want, "the reference") is not None
    assert mismatch(near, want, "the reference", tolerance=(1.3e-6, 1e-5)) is None
    assert mismatch(near * 2, want, "the reference", tolerance=(1.3e-6, 1e-5)) == (
        "4 of 4 elements differ from the reference at rtol 1.3e-06, atol 1e-05 for float32 "
        f"(first at index (0, 0): {(near * 2)[0, 0].item()!r} != 1.0)")
    assert mismatch(want.clone(), want, "the input") is None
    assert mismatch(torch.tensor([-0.0, 1.0]), torch.tensor([0.0, 1.0]), "the input") is None
    # a NaN is never right, even where the expected value is one
    assert mismatch(got, got.clone(), "the input") == (
        "1 of 4 elements differ from the input (first at index (1, 1): nan != nan)")
    ints = torch.tensor([1, 2, 3], dtype=torch.int32)
    assert mismatch(ints.clone(), ints, "the reference", tolerance=(0.0, 0.0)) is None
    assert mismatch(ints + 1, ints, "the reference", lambda i: f", row {i}",
                    tolerance=(0.0, 0.0)) == ("3 of 3 elements differ from the reference, "
                                              "compared exactly in int32 (first at index 0, "
                                              "row 0: 2 != 1)")
