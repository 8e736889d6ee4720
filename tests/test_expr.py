import pytest

from sweeper.errors import ExpressionError
from sweeper.space import cdiv, evaluate, parse


@pytest.mark.parametrize("text, env, expected", [
    ("2*sms", {"sms": 132}, 264),
    ("cdiv(n, BLOCK)", {"n": 1000, "BLOCK": 256}, 4),
    ("min(4*sms, cdiv(n, BLOCK))", {"sms": 2, "n": 100, "BLOCK": 64}, 2),
    ("max(1, n // 7 - 3)", {"n": 70}, 7),
    ("n % BLOCK == 0", {"n": 1024, "BLOCK": 256}, True),
    ("BLOCK >= block and not block > 512", {"BLOCK": 256, "block": 128}, True),
    ("1 < block <= 64", {"block": 128}, False),
    ("footprint <= 64MiB", {"footprint": 64 << 20}, True),
    ("-sms + 2", {"sms": 1}, 1),
])
def test_evaluates(text, env, expected):
    assert evaluate(parse(text), env) == expected


def test_names_exclude_functions():
    assert parse("cdiv(n, BLOCK) + max(sms, 1)").names == {"n", "BLOCK", "sms"}


def test_cdiv():
    assert [cdiv(a, 4) for a in (0, 1, 4, 5)] == [0, 1, 1, 2]


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "function '__import__' is not allowed"),
    ("sms.real", "attribute is not allowed"),
    ("open('x')", "function 'open' is not allowed"),
    ("2 ** 10", "operator '2 ** 10' is not allowed"),
    ("1.5 * sms", "constant 1.5 is not allowed"),
    ("'a'", "constant 'a' is not allowed"),
    ("lambda: 1", "lambda is not allowed"),
    ("[1, 2]", "list is not allowed"),
    ("sms / 2", "operator 'sms / 2' is not allowed"),
    ("cdiv(n, BLOCK=1)", "keyword arguments are not allowed"),
    ("2 *", "cannot parse expression"),
])
def test_rejects_what_is_not_allowed(text, fragment):
    with pytest.raises(ExpressionError, match=None) as info:
        parse(text)
    assert fragment in str(info.value)


def test_unknown_name_lists_known():
    with pytest.raises(ExpressionError, match=r"unknown name 'smz' in '2\*smz'; known: n, sms"):
        evaluate(parse("2*smz"), {"sms": 1, "n": 2})


def test_division_by_zero_names_values():
    with pytest.raises(ExpressionError, match=r"division by zero in 'n // b' with b=0, n=4"):
        evaluate(parse("n // b"), {"n": 4, "b": 0})
