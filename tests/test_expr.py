import pytest

from sweeper.core._expr import MAX_DEPTH
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
    assert evaluate(parse(text, "truth" if type(expected) is bool else "number"), env) == expected


def test_names_exclude_functions():
    assert parse("cdiv(n, BLOCK) + max(sms, 1)").names == {"n", "BLOCK", "sms"}


def test_cdiv():
    assert [cdiv(a, 4) for a in (0, 1, 4, 5)] == [0, 1, 1, 2]


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "function '__import__' is not allowed"),
    ("sms.real", "attribute is not allowed"),
    ("open('x')", "function 'open' is not allowed"),
    ("2 ** 10", "operator '**' is not allowed in '2 ** 10'; allowed"),
    ("1.5 * sms", "constant 1.5 is not allowed"),
    ("'a'", "constant 'a' is not allowed"),
    ("lambda: 1", "lambda is not allowed"),
    ("[1, 2]", "list is not allowed"),
    ("sms / 2", "operator '/' is not allowed in 'sms / 2' (// divides integers)"),
    ("cdiv(n, BLOCK=1)", "keyword arguments are not allowed"),
    ("2 *", "cannot parse expression"),
    ("sms*", "cannot parse expression 'sms*': invalid syntax; it is not an expression, which "
     "may use integers, sizes (64MiB), names, + - * // %, cdiv(a, b) min(a, b, ...) "
     "max(a, b, ...) isqrt(a), comparisons, and/or/not"),
])
def test_rejects_what_is_not_allowed(text, fragment):
    with pytest.raises(ExpressionError, match=None) as info:
        parse(text)
    assert fragment in str(info.value)


@pytest.mark.parametrize("nest", [
    lambda k: "min(" * k + "sms" + ", 1)" * k,          # calls
    lambda k: "sms" + " + 1" * k,                        # operators, one inside the other
    lambda k: "-" * k + "sms",                           # unary operators
    lambda k: "cdiv(" * (k - 1) + "-sms" + ", 2)" * (k - 1),   # both
])
def test_the_depth_limit_counts_the_calls_and_operators_written(nest):
    """49 nested min() calls were refused as 'more than 50 levels': the count took in the
    nodes ast adds (a call's function name, a name's context).  50 levels as written are
    taken and evaluated; 51 are refused, in the message's words."""
    assert evaluate(parse(nest(MAX_DEPTH)), {"sms": 4}) is not None
    with pytest.raises(ExpressionError, match=r"nests more than 50 levels deep; allowed: "
                       r"calls and operators nested at most 50 deep \(a \+ b \+ c is 2\)"):
        parse(nest(MAX_DEPTH + 1))


@pytest.mark.parametrize("text", ["f()" + "()" * 400, "-" * 999 + "1", "not " * 249 + "1",
                                  "a" + ".b" * 400, "x" + "[0]" * 300,
                                  "(lambda: " + "f(" * 140 + "1" + ")" * 140 + ")()"])
def test_deep_hostile_expressions_are_refused_without_recursing(text):
    """Constructs the language refuses, nested deep, are bounded by the depth check before
    anything walks them recursively (ast.unparse of a called call chain, the type check)."""
    with pytest.raises(ExpressionError, match="nests more than 50 levels deep"):
        parse(text)


def test_unknown_name_lists_known():
    with pytest.raises(ExpressionError, match=r"unknown name 'smz' in '2\*smz'; known: n, sms"):
        evaluate(parse("2*smz"), {"sms": 1, "n": 2})


def test_division_by_zero_names_values():
    with pytest.raises(ExpressionError, match=r"division by zero in 'n // b' with b=0, n=4"):
        evaluate(parse("n // b"), {"n": 4, "b": 0})


@pytest.mark.parametrize("text, fragment", [
    ("min()", "min() takes 2 or more arguments, got 0 in 'min()'"),
    ("max(sms)", "max() takes 2 or more arguments, got 1"),
    ("cdiv(n)", "cdiv() takes 2 arguments, got 1"),
    ("cdiv(n, BLOCK, 3)", "cdiv() takes 2 arguments, got 3"),
    ("isqrt()", "isqrt() takes 1 argument, got 0"),
    ("isqrt(*n)", "* arguments are not allowed"),
    ("1" * 1001, "characters long; at most 1000"),
    ("+".join(["sms"] * 60), "nests more than 50 levels deep"),
    ("1000000000000000000 + sms", "numbers have at most 18 digits"),
    ("1000000TiB", "is too large; at most 18 digits of bytes"),
    ("１２", "character '１' (U+FF11) is not allowed"),  # noqa: RUF001 - fullwidth on purpose
    ("ｓｍｓ * 2", "character 'ｓ' (U+FF53) is not allowed"),  # noqa: RUF001 - as above
    ("sms\x00", "(U+0000) is not allowed"),
    ("sms > 1", "'sms > 1' is a comparison (true or false), not a number"),
    ("not sms", "'sms' in 'not sms' is a number, where true or false is needed"),
    ("(sms > 1) * 2", "'sms > 1' in '(sms > 1) * 2' is a comparison (true or false), where a "
     "number is needed"),
    ("min(sms > 1, 2)", "is a comparison (true or false), where a number is needed"),
])
def test_rejects_at_parse_time(text, fragment):
    with pytest.raises(ExpressionError) as info:
        parse(text)
    assert fragment in str(info.value)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("text, fragment", [
    ("n % BLOCK", "'n % BLOCK' gives a number, not true or false; a constraint must be a "
     "comparison (e.g. 'n % BLOCK != 0')"),
    ("not n", "'n' in 'not n' is a number, where true or false is needed"),
    ("sms > 1 and n", "'n' in 'sms > 1 and n' is a number, where true or false is needed"),
])
def test_a_constraint_must_give_a_truth_value(text, fragment):
    with pytest.raises(ExpressionError) as info:
        parse(text, "truth")
    assert fragment in str(info.value)


def test_the_largest_literal_and_result_are_allowed():
    assert evaluate(parse("999999999999999999"), {}) == 10**18 - 1
    assert evaluate(parse("a * 2"), {"a": 2**61}) == 2**62
    assert evaluate(parse("0 - a * 2"), {"a": 2**61}) == -(2**62)
    assert evaluate(parse("+".join(["sms"] * 20)), {"sms": 3}) == 60


@pytest.mark.parametrize("text, env, fragment", [
    ("isqrt(a)", {"a": -4}, "isqrt of a negative number (-4) in 'isqrt(a)' with a=-4"),
    ("a * a", {"a": 2**40}, "'a * a' gives a number beyond +-2**62 (values must fit in 62 "
     "bits) with a=1099511627776"),
    ("a * 2 + 1", {"a": 2**61}, "gives a number beyond +-2**62"),
    ("cdiv(a, b)", {"a": 1, "b": 0}, "division by zero in 'cdiv(a, b)' with a=1, b=0"),
    ("a % b", {"a": 1, "b": 0}, "division by zero"),
])
def test_arithmetic_failures_are_expression_errors(text, env, fragment):
    """A config that meets one is ruled out with the reason (Space.resolve: Invalid)."""
    with pytest.raises(ExpressionError) as info:
        evaluate(parse(text), env)
    assert fragment in str(info.value)


def test_long_expressions_are_cut_short_in_messages():
    text = "sms * " + " + ".join(["zz"] * 40)
    with pytest.raises(ExpressionError) as info:
        evaluate(parse(text), {"sms": 1})
    assert "'sms * zz + zz + zz + zz + zz + zz + zz + zz + zz + zz + z...'" in str(info.value)


def test_chained_comparisons_evaluate_each_term_once_and_stop_at_a_false_one():
    assert evaluate(parse("1 < a <= 3 < b", "truth"), {"a": 3, "b": 4}) is True
    assert evaluate(parse("1 < a <= 3 < b", "truth"), {"a": 4, "b": 5}) is False
    assert evaluate(parse("a > 1 or b // 0 > 1", "truth"), {"a": 2, "b": 1}) is True
