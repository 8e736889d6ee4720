import re
import textwrap
from pathlib import Path

import pytest

from sweeper.errors import SpaceError
from sweeper.space import AxisRole, Invalid, load_space, parse_space
from tests.conftest import SPACE_FOLDERS, shipped_spaces

ROOT = Path(__file__).resolve().parent.parent
FACTS = {"sms": 132, "l2_bytes": 60 << 20}

GOOD = """\
study: demo
kernel: copy
params:
  grid: [sms, 2*sms, "cdiv(n, BLOCK)"]
  block: [32, 64, 128]
  BLOCK: {pow2: [256, 1024]}
  dtype: [float32, float16]
  footprint: [64KiB, 1GiB]
constraints: ["BLOCK >= block"]
measure: {warmup: 2, repeat: 5, cache: warm}
budget: {trials: 10, time: 90s}
"""


def parse(text: str):
    return parse_space(textwrap.dedent(text), file="s.yaml")


def test_parses_every_form():
    space = parse(GOOD)
    assert space.study == "demo" and space.kernel == "copy"
    assert space.axis("BLOCK").labels == ("256", "512", "1024")
    assert space.axis("BLOCK").role is AxisRole.META
    assert space.axis("footprint").values[1].constant == 1 << 30
    assert space.axis("grid").values[0].expr is not None
    assert space.size == 3 * 3 * 3 * 2 * 2 * 1
    assert space.measure.repeat == 5 and space.measure.stop == "fixed"
    assert space.axis("cache").labels == ("warm",)
    assert space.budget.trials == 10 and space.budget.time_s == 90.0
    assert space.sampler.name == "auto" and space.sampler.seed == 0
    # expressions read n (footprint, dtype) and BLOCK: those come first
    order = space.order
    assert order.index("grid") > max(order.index(n) for n in ("BLOCK", "footprint", "dtype"))


def test_range_form_and_defaults():
    space = parse("""
        kernel: copy
        sampler: {name: tpe, seed: 7}
        params:
          grid: {range: [2, 8, 3]}
    """)
    assert space.axis("grid").labels == ("2", "5", "8")
    assert space.axis("block").labels == ("128",)
    # axes the file leaves out take the kernel's defaults
    assert space.axis("BLOCK").labels == ("1024",)
    assert space.sampler.name == "tpe" and space.sampler.seed == 7
    assert space.study == "study"


def test_resolve_computes_expressions_in_order():
    space = parse(GOOD)
    cfg = space.resolve({"grid": "cdiv(n, BLOCK)", "block": "64", "BLOCK": "512",
                         "dtype": "float16", "footprint": "64KiB"}, FACTS)
    assert cfg.problem.n == 32768 and cfg.grid == 64 and cfg.num_warps == 2
    assert dict(cfg.meta) == {"BLOCK": 512}
    assert space.resolve({"grid": "2*sms", "block": "32", "BLOCK": "256", "dtype": "float32",
                          "footprint": "1GiB"}, FACTS).grid == 264


def test_constraint_violation_is_invalid_with_reason():
    space = parse(GOOD.replace("block: [32, 64, 128]", "block: [32, 512]"))
    with pytest.raises(Invalid, match=r"constraint 'BLOCK >= block' is false "
                                      r"\(BLOCK=256, block=512\)"):
        space.resolve({"grid": "sms", "block": "512", "BLOCK": "256", "dtype": "float32",
                       "footprint": "64KiB"}, FACTS)


def test_footprint_cap_applies_before_n():
    space = parse(GOOD)
    cfg = space.resolve({"grid": "cdiv(n, BLOCK)", "block": "32", "BLOCK": "256",
                         "dtype": "float32", "footprint": "1GiB"}, FACTS, max_footprint=4096)
    assert cfg.problem.footprint == 4096 and cfg.grid == 4


def test_expression_error_at_resolve_is_invalid():
    space = parse(GOOD.replace('grid: [sms, 2*sms, "cdiv(n, BLOCK)"]',
                               'grid: ["sms // (BLOCK - 256)"]'))
    with pytest.raises(Invalid, match="division by zero"):
        space.resolve({"grid": "sms // (BLOCK - 256)", "block": "32", "BLOCK": "256",
                       "dtype": "float32", "footprint": "64KiB"}, FACTS)


def test_every_shipped_space_parses():
    files = shipped_spaces()
    assert {path.parent for path in files} == set(SPACE_FOLDERS)
    for path in files:
        assert load_space(path).size > 0


# Each bad input: the YAML, the line the error must name, and what the message must say.
BAD = [
    ("kernel: copy\nparams: {grid: [1]\n", 3, "YAML syntax error"),
    ("- just\n- a list\n", 1, "the file must be a mapping of keys, got a list"),
    ("kernel: copy\nparams: {}\nsampl: tpe\n", 3,
     "sampl: unknown key 'sampl'; known: study, kernel, from_autotune, sampler, seed, params"),
    ("kernel: copy\nparams: {}\nfootprint: [4KiB]\n", 3,
     "footprint: unknown key 'footprint'; known: study, kernel, from_autotune, sampler, seed, "
     "params, constraints, measure, budget, extends; footprint looks like an axis: an axis's "
     "values go under params (params: {footprint: [...]})"),
    ("kernel: copy\nparams: {}\nBLOCK: [1024]\n", 3, "BLOCK looks like an axis"),
    ("kernel: copy\n", 1, "missing key 'params'"),
    ("params: {}\n", 1, "missing key 'kernel'"),
    ("kernel: memcpy\nparams: {}\n", 1, "kernel: unknown kernel 'memcpy'; known: copy"),
    ("kernel: copy\nsampler: annealing\nparams: {}\n", 2,
     "sampler: unknown sampler 'annealing'; known: auto, exhaustive, one-at-a-time, tpe, random, "
     "gp"),
    ("kernel: copy\nsampler: TPE\nparams: {}\n", 2,     # another case is the likeliest slip
     "cmaes, or package.module:attr for your own; did you mean 'tpe'?"),
    # Kernel Tuner's names: its strategies, and block_size_x, which reads like a tile
    ("kernel: copy\nsampler: brute_force\nparams: {}\n", 2,
     "cmaes, or package.module:attr for your own; did you mean 'exhaustive'?"),
    ("kernel: copy\nsampler: bayes_opt\nparams: {}\n", 2, "; did you mean 'gp'?"),
    ("kernel: copy\nsampler: random_sample\nparams: {}\n", 2, "; did you mean 'random'?"),
    ("kernel: copy\nparams:\n  block_size_x: [128]\n", 3, "unknown key 'block_size_x'; "
     "known: grid, block, dtype, footprint, cache, n, BLOCK; did you mean 'block'? (Kernel "
     "Tuner's block_size_x is sweeper's block)"),
    ("kernel: copy\nparams:\n  BLOCK: [256]\nconstraints: ['BLOCK >= block_size_x']\n", 4,
     "unknown name 'block_size_x' in 'BLOCK >= block_size_x'; known: BLOCK, block, footprint, "
     "grid, itemsize, l2_bytes, n, sms; did you mean 'block'? (Kernel Tuner's block_size_x "
     "is sweeper's block)"),
    ("kernel: mykern.axpy\nparams: {}\n", 1, "unknown kernel 'mykern.axpy'; known: copy, "
     "add, matmul, scale, copy-strided, softmax, torch-op, cuda, or package.module:attr for "
     "your own; did you mean 'mykern:axpy'?"),                 # a dot where the colon goes
    ("kernel: copy\nparams:\n  grid: [\"l2 // 1024\"]\n", 3,    # the start of a name
     "unknown name 'l2' in 'l2 // 1024'; known: BLOCK, block, footprint, grid, itemsize, "
     "l2_bytes, n, sms; did you mean 'l2_bytes'?"),
    ("kernel: copy\nparams:\n  grid: []\n", 3, "params.grid: empty axis; allowed:"),
    ("kernel: copy\nparams:\n  BLOCK: {values: [256, 512]}\n", 3,    # when: left out
     "params.BLOCK.values: values: belongs to a conditional axis, {values: [...], when: "
     "\"expression\"}; give when:, or the values as a list ([256, 512])"),
    ("kernel: copy\nparams:\n  BLOCK: {pow2: [300, 1024]}\n", 3,
     "params.BLOCK.pow2: 300 is not a power of two; allowed: a power of two at each end "
     "(256 or 512 here)"),
    ("kernel: copy\nparams:\n  BLOCK: {pow2: [256, 0]}\n", 3,
     "params.BLOCK.pow2: 0 is not a power of two; allowed: a power of two at each end "
     "(1 at least)"),
    ("kernel: copy\nparams:\n  BLOCK: {pow2: [2048, 1024]}\n", 3, "pow2 needs lo <= hi"),
    ("kernel: copy\nparams:\n  block: {range: [32, 128, 0]}\n", 3,
     "range needs lo <= hi and step > 0"),
    ("kernel: copy\nparams:\n  footprint:\n    - 1GiB\n    - 1GB\n", 5,
     "params.footprint[1]: '1GB' is not a size; allowed: an integer with a unit of B, KiB, "
     "MiB, GiB, TiB (e.g. 64MiB)"),
    ("kernel: copy\nparams:\n  footprint: [16KB]\n", 3,
     "params.footprint[0]: '16KB' is not a size; allowed: an integer with a unit of B, KiB"),
    ("kernel: copy\nparams:\n  grid: [\"sms*\"]\n", 3,
     "params.grid[0]: cannot parse expression 'sms*': invalid syntax; it is not an "
     "expression, which may use integers, sizes (64MiB), names, + - * // %, cdiv(a, b)"),
    ("kernel: copy\nparams:\n  grid: [sms, cdiv(n, BLOCK)]\n", 3,     # YAML split it: quote it
     "params.grid[1]: cannot parse expression 'cdiv(n': '(' was never closed; it is not an "
     "expression, which may use integers, sizes (64MiB), names, + - * // %, cdiv(a, b) min(a, "
     "b, ...) max(a, b, ...) isqrt(a), comparisons, and/or/not; YAML ends a list item at a "
     "comma: quote an expression that has one (\"cdiv(n, BLOCK)\")"),
    ("kernel: copy\nparams:\n  BLOCK: {values: [1024, 4096]}\n", 3,    # its own values
     "give when:, or the values as a list ([1024, 4096])"),
    ("kernel: copy\nparams:\n  BLOCK: 256, 512\n", 3,        # the brackets left out
     "params.BLOCK[0]: tuple is not allowed in '256, 512'; allowed: integers, sizes (64MiB), "
     "names, + - * // %, cdiv(a, b) min(a, b, ...) max(a, b, ...) isqrt(a), comparisons, "
     "and/or/not; several values are written as a YAML list: [256, 512]"),
    ("kernel: copy\nparams: {}\nconstraints: [BLOCK >= max(block, 256)]\n", 3,
     "and/or/not; YAML ends a list item at a comma: quote an expression that has one"),
    ("kernel: copy\nparams:\n  dtype: [float32, fp9]\n", 3,
     "params.dtype[1]: unknown dtype 'fp9'; allowed: float64, float32"),
    ("kernel: copy\nparams:\n  dtype: [flaot32]\n", 3,
     "(or an alias: fp32, bf16, ...); did you mean 'float32'?"),
    ("kernel: copy\nparams:\n  block: [32, 48]\n", 3,
     "params.block[1]: 48 threads per program; allowed: 32, 64, 128, 256, 512, 1024"),
    ("kernel: copy\nparams:\n  grid: [\"2*smz\"]\n", 3,
     "params.grid[0]: unknown name 'smz' in '2*smz'; known: BLOCK, block, footprint, grid, "
     "itemsize, l2_bytes, n, sms"),
    ("kernel: copy\nparams:\n  grid: [\"__import__('os')\"]\n", 3,
     "function '__import__' is not allowed"),
    ("kernel: copy\nparams:\n  BLOCK: [1000]\n", 3,
     "params.BLOCK[0]: 1000 is not a power of two; copy's BLOCK must be one"),
    ("kernel: copy\nparams:\n  WARPS: [4]\n", 3,
     "params.WARPS: unknown key 'WARPS'; known: grid, block, dtype, footprint, cache, n, BLOCK"),
    ("kernel: copy\nparams:\n  num_warps: [4]\n", 3,
     "params.num_warps: unknown key 'num_warps'; known: grid, block, dtype, footprint, cache, "
     "n, BLOCK; num_warps is swept as block, threads per program (num_warps × 32): block: "
     "[128] for num_warps=4"),
    ("kernel: copy\nparams: {}\nconstraints: [\"BLOCK >= blk\"]\n", 3,
     "constraints[0]: unknown name 'blk'"),
    ("kernel: copy\nparams: {}\nconstraints: BLOCK >= block\n", 3,
     "constraints: 'BLOCK >= block' is not a list of expressions"),
    ("kernel: copy\nparams: {}\nmeasure:\n  warmup: 1\n  repeat: 0\n", 5,
     "measure.repeat: 0 is not a whole number from 1 to 1000000"),
    ("kernel: copy\nparams: {}\nmeasure: {flush: true}\n", 3,
     "measure.flush: unknown key 'flush'; known: warmup, repeat, stop, target"),
    ("kernel: copy\nparams: {}\nmeasure: {timeout: soon}\n", 3,
     "measure.timeout: 'soon' is not a duration; allowed: a positive number, bare (seconds) "
     "or with h, m, s or ms, or several from the largest unit down (e.g. 90, 10m, 1h30m), or "
     "off"),
    ("kernel: copy\nparams: {}\nbudget: {time: 10x}\n", 3,
     "budget.time: '10x' is not a duration"),
    ("kernel: copy\nparams: {}\nmeasure:\n  warmup_time: fast\n", 4,
     "measure.warmup_time: 'fast' is not a duration; allowed: a positive number, bare "
     "(seconds) or with h, m, s or ms"),
    ("kernel: copy\nparams: {}\nbudget:\n  trials: -4\n", 4,
     "budget.trials: -4 is not a whole number from 1 to 1000000000"),
    ("kernel: copy\nparams:\n  block: [32]\n  block: [64]\n", 4,
     "params.block: duplicate key 'block' (first on line 3)"),
    ("kernel: copy\nparams:\n  BLOCK: [\"grid * 2\"]\n  grid: [\"BLOCK // 2\"]\n", 3,
     "the values depend on each other in a cycle among BLOCK, grid"),
    ("kernel: copy\nparams:\n  grid: [sms, \"2 * grid\"]\n", 3,
     "params.grid: grid's values read grid itself"),
    ("kernel: copy\nparams:\n  block: [32, 32]\n", 3, "params.block: value '32' appears twice"),
    ("kernel: copy\nseed: one\nparams: {}\n", 2,
     "seed: seed must be an integer from 0 to 4294967295 (2**32 - 1), got 'one'"),
    ("kernel: copy\nsampler: [tpe]\nparams: {}\n", 2,
     "sampler: ['tpe'] is not a sampler; give a name or {name: ..., seed: ..., baseline: "
     "...}; known names: auto, exhaustive, one-at-a-time, tpe,"),
    ("kernel: copy\nsampler: {name: 3}\nparams: {}\n", 2,
     "sampler.name: 3 is not a sampler; give a name; known names: auto, exhaustive,"),
    ("kernel: copy\nseed: 3\nsampler: {name: tpe, seed: 5}\nparams: {}\n", 3,
     "sampler.seed: the seed is given twice, 3 at the top level and 5 here; give one"),
    ("kernel: copy\nparams: {}\nstudy: ../escape\n", 3, "study: '../escape' is not a study name"),
    ("kernel: copy\nparams:\n  grid: [0]\n", 3, "params.grid[0]: 0 must be positive"),
    ("", 1, "the file is empty"),
]


@pytest.mark.parametrize("text, line, message", BAD, ids=[m[:40] for _, _, m in BAD])
def test_bad_input_names_file_line_and_what_is_wrong(text, line, message):
    with pytest.raises(SpaceError) as info:
        parse_space(text, file="spaces/x.yaml")
    err = info.value
    assert err.line == line, str(err)
    assert str(err).startswith(f"spaces/x.yaml:{line}: ")
    assert message in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("kernel, axis, value, allowed", [
    ("copy", "grid", "0", "a positive integer or an expression, e.g. cdiv(n, BLOCK)"),
    ("copy", "block", "0", "32, 64, 128, 256, 512, 1024 (num_warps × 32)"),
    ("copy", "BLOCK", "-4", "a positive power of two, e.g. 1024"),
    ("copy", "footprint", "0B", "a positive size, e.g. 64MiB"),
    ("matmul", "num_stages", "0", "a positive integer, e.g. 3"),
    ("softmax", "rows", "0", "an integer >= 1, e.g. 4096"),
])
def test_a_value_below_one_is_refused_with_what_the_axis_allows(kernel, axis, value, allowed):
    """'0 must be positive' said what was wrong and not what to write instead."""
    with pytest.raises(SpaceError) as info:
        parse_space(f"kernel: {kernel}\nparams:\n  {axis}: [{value}]\n", file="x.yaml")
    assert str(info.value) == (f"x.yaml:3: params.{axis}[0]: {value} must be positive; "
                               f"allowed: {allowed}")


@pytest.mark.parametrize("value, path, known, hint", [
    ("{range: [256, 1024], step: 256}", "step", "range, pow2, values, when",
     "; a range's step is its third item: {range: [lo, hi, step]}"),
    ("{rnage: [256, 1024]}", "rnage", "range, pow2, values, when", "; did you mean 'range'?"),
    ("{vales: [256, 512]}", "vales", "range, pow2, values, when", "; did you mean 'values'?"),
    ("{values: {rnage: [256, 1024]}, when: 'block > 32'}", "values.rnage", "range, pow2",
     "; did you mean 'range'?"),
])
def test_an_unknown_key_of_an_axis_mapping_lists_every_key_it_takes(value, path, known, hint):
    """An unknown key of ``{range: ...}`` listed only range and pow2, not the keys of a
    conditional axis (whose values take range and pow2 alone); the keys are the parser's
    one table of forms and the conditional axis's."""
    from sweeper.space._parser import CONDITIONAL_KEYS, VALUE_FORMS

    assert ", ".join((*VALUE_FORMS, *CONDITIONAL_KEYS)) == "range, pow2, values, when"
    with pytest.raises(SpaceError) as info:
        parse_space(f"kernel: copy\nparams:\n  BLOCK: {value}\n", file="x.yaml")
    key = path.rpartition(".")[2]
    assert str(info.value) == (f"x.yaml:3: params.BLOCK.{path}: unknown key {key!r}; known: "
                               f"{known}{hint}")


def test_the_schema_takes_the_axis_forms_the_parser_reads():
    from sweeper.space._parser import CONDITIONAL_KEYS, VALUE_FORMS
    from sweeper.space._schema import space_schema

    forms = space_schema()["properties"]["params"]["properties"]["grid"]["anyOf"]
    keys = [tuple(f["properties"]) for f in forms if f.get("type") == "object"]
    assert keys == [*((k,) for k in VALUE_FORMS), CONDITIONAL_KEYS]


LONG_MINUTES = "3." + "0" * 39 + "m"          # 42 characters: the unit past the 40th


def test_warmup_time_is_a_duration_or_off_and_the_header_says_what_it_does():
    assert parse("kernel: copy\nparams: {}\n").measure.warmup_time_s == 0.001
    spec = parse("kernel: copy\nparams: {}\nmeasure: {warmup_time: 2ms}\n").measure
    assert spec.warmup_time_s == 0.002
    assert spec.describe().startswith("10 warmup (2 where they take 2 ms), then timed")
    off = parse("kernel: copy\nparams: {}\nmeasure: {warmup_time: off, repeat: 5}\n").measure
    assert off.warmup_time_s is None and off.describe().startswith("10 warmup + 5 timed")


def test_a_duration_longer_than_40_characters_keeps_its_unit():
    space = parse(f"kernel: copy\nparams: {{}}\nbudget: {{time: {LONG_MINUTES}}}\n"
                  f"measure: {{max_time: {LONG_MINUTES}, timeout: {LONG_MINUTES}}}\n")
    assert space.budget.time_s == 180.0
    assert space.measure.max_time_s == 180.0 and space.measure.timeout_s == 180.0
    with pytest.raises(SpaceError) as info:
        parse(f"kernel: copy\nparams: {{}}\nbudget: {{time: {'9' * 60}x}}\n")
    assert str(info.value) == (f"s.yaml:3: budget.time: {'9' * 40!r} is not a duration; "
                               "allowed: a positive number, bare (seconds) or with h, m, s or "
                               "ms, or several from the largest unit down (e.g. 90, 10m, 1h30m)")


def test_missing_file(tmp_path, monkeypatch):
    """A relative path that is not there names the folder it was looked for in: the
    newcomer who runs ``sweeper run spaces/copy.yaml`` from another folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpaceError) as info:
        load_space("spaces/nope.yaml")
    assert str(info.value) == ("spaces/nope.yaml: cannot read the space file: No such file or "
                               f"directory in {tmp_path}")
    with pytest.raises(SpaceError) as info:
        load_space(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path}/nope.yaml: cannot read the space file: No such " \
        "file or directory"


def test_a_python_file_given_as_the_space_says_where_its_kernel_goes(tmp_path, capsys):
    """``sweeper run examples/scale.py``: the newcomer gives the kernel's module where the
    space file goes; the error says so instead of a YAML syntax error at line 1."""
    from sweeper.cli import main
    from tests.conftest import ROOT

    assert main(["run", str(ROOT / "examples/scale.py"), "--device", "interpret",
                 "--studies-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"{ROOT / 'examples/scale.py'}: a Python file, not a space file (YAML); name its "
        "kernel as module:attr under kernel: in a space file (as examples/scale.yaml does), "
        "or run an @triton.autotune kernel with --from-autotune MODULE:KERNEL\n")
    assert list(tmp_path.iterdir()) == []                   # nothing written


def test_extends_merges_params_and_errors_name_the_right_file(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(GOOD)
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\nstudy: child\nparams:\n  BLOCK: [2048]\n"
                     "measure: {repeat: 7}\n")
    space = load_space(child)
    assert space.study == "child" and space.axis("BLOCK").labels == ("2048",)
    assert space.axis("grid").labels == ("sms", "2*sms", "cdiv(n, BLOCK)")   # from the base
    assert space.measure.repeat == 7 and space.measure.warmup == 2         # merged key by key
    assert "# extends base.yaml:" in space.text
    base.write_text(GOOD.replace("block: [32, 64, 128]", "block: [32, 48]"))
    with pytest.raises(SpaceError) as info:
        load_space(child)
    assert str(info.value).startswith(f"{base}:5: params.block[1]: 48 threads per program")
    loop = tmp_path / "loop.yaml"
    loop.write_text("extends: loop2.yaml\nkernel: copy\nparams: {}\n")
    (tmp_path / "loop2.yaml").write_text("extends: loop.yaml\n")
    with pytest.raises(SpaceError, match="extends itself"):
        load_space(loop)
    itself = tmp_path / "itself.yaml"          # the chain is named whole, never left empty
    itself.write_text("extends: itself.yaml\nkernel: copy\nparams: {}\n")
    with pytest.raises(SpaceError) as info:
        load_space(itself)
    assert str(info.value) == (f"{itself}:1: extends: itself.yaml extends itself through "
                               f"{itself} -> {itself}; a space file may not extend itself, "
                               "directly or through the files it extends")
    orphan = tmp_path / "orphan.yaml"
    orphan.write_text("kernel: copy\nextends: nowhere.yaml\nparams: {}\n")
    with pytest.raises(SpaceError) as info:
        load_space(orphan)
    assert str(info.value) == (f"{orphan}:2: extends: cannot read 'nowhere.yaml' "
                               f"({tmp_path / 'nowhere.yaml'}: No such file or directory); "
                               "allowed: the path of a readable space file, from this file's "
                               "folder")


def test_command_line_overrides_replace_one_axis(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD)
    space = load_space(path, ["BLOCK=1024,2048", "footprint=64MiB",
                              'grid=[sms, "cdiv(n, BLOCK)"]'])
    assert space.axis("BLOCK").labels == ("1024", "2048")
    assert space.axis("footprint").labels == ("64MiB",)
    assert space.axis("grid").labels == ("sms", "cdiv(n, BLOCK)")
    with pytest.raises(SpaceError, match=r"^-p BLOCK=300: params.BLOCK\[0\]: 300 is not a "
                                         "power of two"):
        load_space(path, ["BLOCK=300"])
    with pytest.raises(SpaceError, match="'BLOCK' is not KEY=VALUE"):
        load_space(path, ["BLOCK"])
    for split in ('grid=sms,cdiv(n, BLOCK)', 'grid=sms,"cdiv(n, BLOCK)"'):  # quoted or not
        with pytest.raises(SpaceError, match=re.escape(
                f"-p: {split!r}: a comma splits the values, and so the expression at ")
                + r".*; give a list with an expression holding a comma as YAML: "
                + re.escape('grid=[sms, "cdiv(n, BLOCK)"]')):
            load_space(path, [split])
    unknown = "-p WARPS=4: params.WARPS: unknown key 'WARPS'"
    with pytest.raises(SpaceError, match=re.escape(unknown)):
        load_space(path, ["WARPS=4"])
    for text, wrong in (("- a\n- b\n", "the file must be a mapping of keys, got a list"),
                        ("kernel: copy\nparams: [ab, cd]\n",
                         "params must be a mapping of keys, got a list")):
        path.write_text(text)                   # refused as written, -p or not
        with pytest.raises(SpaceError, match=re.escape(wrong)):
            load_space(path, ["BLOCK=1024"])


def test_schema_validates_every_shipped_space_and_matches_the_committed_copy():
    import json

    import yaml

    from sweeper.space._schema import space_schema

    # the test extra installs it; the GPU machine's image lacks it
    jsonschema = pytest.importorskip("jsonschema")

    schema = space_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in shipped_spaces():
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path, errors[0].message)
    bad = {"kernel": "copy", "params": {"block": [48]}, "measure": {"flush": True}}
    messages = " ".join(e.message for e in validator.iter_errors(bad))
    assert "'flush' was unexpected" in messages and "[48]" in messages
    # a CUDA C block is any count of threads up to 1024, as the cuda kernel's launch takes
    assert not list(validator.iter_errors({"kernel": {"name": "cuda"},
                                           "params": {"block": [48, 16]}}))
    assert list(validator.iter_errors({"kernel": "cuda", "params": {"block": [2048]}}))
    committed = json.loads((ROOT / "docs" / "space.schema.json").read_text())
    assert committed == schema, "run: sweeper schema -o docs/space.schema.json"


def test_zipped_axes_move_together():
    space = parse("""
        kernel: matmul
        params:
          grid: [sms, 2*sms]
          tiles:
            zip:
              BLOCK_M: [64, 128, 128]
              BLOCK_N: [64, 128, 256]
    """)
    assert space.choices()["tiles"] == ("BLOCK_M=64,BLOCK_N=64", "BLOCK_M=128,BLOCK_N=128",
                                        "BLOCK_M=128,BLOCK_N=256")
    assert "BLOCK_M" not in space.choices() and space.size == 2 * 3
    assert space.axis("BLOCK_M").labels == ("64", "128")        # the members stay axes
    cfg = space.resolve({"grid": "sms", "tiles": "BLOCK_M=128,BLOCK_N=256"}, FACTS)
    assert dict(cfg.meta)["BLOCK_M"] == 128 and dict(cfg.meta)["BLOCK_N"] == 256
    expanded = space.expand({"grid": "sms", "tiles": "BLOCK_M=64,BLOCK_N=64"})
    assert expanded == {"grid": "sms", "BLOCK_M": "64", "BLOCK_N": "64"}
    assert space.contract({**expanded})["tiles"] == "BLOCK_M=64,BLOCK_N=64"
    assert space.contract({"grid": "sms", "BLOCK_M": "64", "BLOCK_N": "256"}) is None


@pytest.mark.parametrize("params, line, message", [
    ("  t:\n    zip:\n      BLOCK_M: [64, 128]\n      BLOCK_N: [64]\n", 4,
     "params.t.zip: the zipped lists differ in length (BLOCK_M: 2, BLOCK_N: 1)"),
    ("  t:\n    zip:\n      BLOCK_M: [64]\n      WARPS: [4]\n", 6,
     "params.t.zip.WARPS: unknown axis 'WARPS'"),
    ("  BLOCK_M: [64]\n  t:\n    zip:\n      BLOCK_M: [64]\n      BLOCK_N: [64]\n", 6,
     "params.t.zip.BLOCK_M: BLOCK_M is also given on its own"),
    ("  t:\n    zip:\n      BLOCK_M: [64, 64]\n      BLOCK_N: [32, 32]\n", 4,
     "params.t.zip: a row appears twice"),
    ("  t: {zip: {BLOCK_M: [64, 128], BLOCK_N: [64, 128]}}\n"
     "  u: {zip: {BLOCK_K: [32, 64], BLOCK_M: [64, 128]}}\n", 4,
     "params.u.zip.BLOCK_M: BLOCK_M is also zipped in params.t (m.yaml:3); an axis is "
     "zipped in one group at most"),
    ("  num_stages: {values: [3, 4], when: \"BLOCK_Q > 1\"}\n", 3,
     "params.num_stages.when: unknown name 'BLOCK_Q'"),
    ("  dtype: {values: [float16], when: \"BLOCK_M > 1\"}\n", 3,
     "params.dtype: dtype cannot be conditional"),
    # range and pow2 make numbers: a text axis is a list of names, not a mapping
    ("  dtype: {rnage: [1, 2]}\n", 3, "params.dtype: dtype takes a list of names, not a "
     "mapping; allowed: a name or a list of them, such as [float32, bfloat16]"),
    ("  cache: {pow2: [1, 2]}\n", 3, "params.cache: cache takes a list of names, not a "
     "mapping; allowed: a name or a list of them, such as [cold, warm]"),
    ("  BLOCK_K: [32, 64]\n  num_stages: {values: [3, 4], when: \"num_stages > 3\"}\n", 4,
     "params.num_stages.when: when: of num_stages reads num_stages itself; a condition "
     "reads other axes (to rule out some of num_stages's values, give a constraint: "
     "constraints: ['num_stages > 3'])"),
    ("  BLOCK_M: {values: [64, 128], when: \"grid > 4 and BLOCK_K > 16\"}\n", 3,
     "params.BLOCK_M.when: when: of BLOCK_M reads grid, which is computed from "
     "BLOCK_M; a condition reads axes that do not depend on BLOCK_M"),
    ("  M: [64]\n  N: {values: [64, 128], when: \"footprint > 4096\"}\n", 4,
     "params.N.when: when: of N reads footprint, which is computed from N; a condition "
     "reads axes that do not depend on N"),
])
def test_zip_and_conditional_errors(params, line, message):
    with pytest.raises(SpaceError) as info:
        parse_space(f"kernel: matmul\nparams:\n{params}", file="m.yaml")
    assert str(info.value).startswith(f"m.yaml:{line}: "), str(info.value)
    assert message in str(info.value)


def test_conditional_axis_varies_only_when_its_condition_holds():
    space = parse("""
        kernel: matmul
        params:
          BLOCK_K: [32, 64]
          num_stages: {values: [3, 4, 5], when: "BLOCK_K >= 64"}
    """)
    base = {"BLOCK_K": "32", "num_stages": "3"}
    assert dict(space.resolve(base, FACTS).meta)["num_stages"] == 3
    with pytest.raises(Invalid, match=r"num_stages only varies when 'BLOCK_K >= 64'; "
                                      r"otherwise it stays at its first value"):
        space.resolve({**base, "num_stages": "4"}, FACTS)
    assert dict(space.resolve({"BLOCK_K": "64", "num_stages": "5"}, FACTS).meta)[
        "num_stages"] == 5



FLAGGED = """
import triton
import triton.language as tl

import sweeper


@triton.jit
def flagged_kernel(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024, "EVEN": 0},
                reference=lambda x: x * 2)
def flagged(x, config):
    flagged_kernel[(config.grid,)](x, x.numel(), num_warps=config.num_warps, **config.meta)
"""


@pytest.mark.parametrize("axis, said", [
    ("EVEN", "0 must be positive; allowed: a positive integer; a meta-parameter that may "
             "be 0 declares its values (MetaParam(default=0, choices=(0, 1)))"),
    ("BLOCK", "0 must be positive; allowed: a positive integer, e.g. 1024"),
])
def test_a_zero_for_a_meta_parameter_whose_default_is_zero_says_how_to_allow_it(
        tmp_path, monkeypatch, capsys, axis, said):
    """``sweeper.kernel(meta={"EVEN": 0})`` declares a plain int whose default is 0; a
    space listing ``EVEN: [0, 1]`` was told only '0 must be positive', with nothing
    allowed said."""
    from sweeper.cli import main

    (tmp_path / "flagmod.py").write_text(FLAGGED)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "flag.yaml"
    path.write_text(f"kernel: flagmod:flagged\nparams:\n  {axis}: [0, 1]\n")
    studies = tmp_path / "st"
    assert main(["plan", str(path), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == f"{path}:3: params.{axis}[0]: {said}\n"
    assert main(["run", str(path), "--device", "interpret", "--studies-dir",
                 str(studies)]) == 2
    assert capsys.readouterr().err == f"{path}:3: params.{axis}[0]: {said}\n"
    assert not studies.exists()


#: The files behind docs/space.md's "Other messages, as printed" (those of one file each).
DOCUMENTED_ERRORS = {
    "bad.yaml": "kernel: copy\nparams:\n  BLOCK: {pow2: [300, 1024]}\n",
    "unknown-key.yaml": "kernel: copy\nparams:\n  block: [32]\nmesure: {}\n",
    "block.yaml": "kernel: copy\nparams:\n  block: [32, 96]\n",
    "dtype.yaml": "kernel: copy\nparams:\n  dtype: [float32, fp8]\n",
    "expr-name.yaml": "kernel: copy\nparams:\n  grid: [2*smz]\n",
    "expr-kind.yaml": "kernel: copy\nparams:\n  grid: [\"sms > 1\"]\n",
    "expr-eval.yaml": "kernel: copy\nparams:\n  grid: [\"__import__('os')\"]\n",
    "cycle.yaml": "kernel: copy\nparams:\n  grid: [block]\n  block: [grid]\n",
    "zip.yaml": "kernel: matmul\nparams:\n  tiles: {zip: {BLOCK_M: [64, 128], BLOCK_N: [64]}}\n",
    "stop.yaml": "kernel: copy\nparams: {}\nmeasure:\n  stop: median\n",
    "duty2.yaml": "kernel: copy\nparams: {}\nmeasure:\n  duty: sometimes\n",
    "sampler.yaml": "kernel: copy\nsampler: bayes\nparams: {}\n",
    "toobig.yaml": "kernel: matmul\nparams:\n  grid: {range: [1, 4000]}\n"
                   "  num_stages: {range: [1, 4000]}\n",
    "nothing.yaml": "kernel: copy\nparams:\n  BLOCK: [256]\n  block: [512]\n"
                    "constraints: [\"BLOCK >= block\"]\n",
}


@pytest.mark.parametrize("name", DOCUMENTED_ERRORS)
def test_the_errors_docs_space_md_shows_are_as_printed(name, tmp_path, monkeypatch, capsys):
    from sweeper.cli import main
    from tests.conftest import ROOT

    shown = [line for line in (ROOT / "docs/space.md").read_text().splitlines()
             if line.startswith(f"{name}:")]
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(DOCUMENTED_ERRORS[name])
    assert main(["plan", name]) == 2
    assert [capsys.readouterr().err.removeprefix("sweeper: ").rstrip("\n")] == shown


def test_docs_space_md_lists_every_dtype_alias():
    """The aliases the parser takes, each in docs/space.md's list of them."""
    import re

    from sweeper.core._units import DTYPE_ALIASES
    from tests.conftest import ROOT

    text = (ROOT / "docs/space.md").read_text()
    listed = {word for span in re.findall(r"`([a-z0-9 ]+)`", text[text.index("an alias"):
                                                                   text.index("torch.NAME")])
              for word in span.split()}
    assert listed == set(DTYPE_ALIASES)


def test_the_plan_docs_space_md_shows_is_as_printed_where_nothing_was_measured(
        tmp_path, monkeypatch, capsys):
    """docs/space.md's ``sweeper plan spaces/copy.yaml --device interpret``, line for line,
    on a machine where no run has measured anything yet (an empty sweeper cache)."""
    from sweeper.cli import main
    from tests.conftest import ROOT

    lines = (ROOT / "docs/space.md").read_text().splitlines()
    start = lines.index("$ sweeper plan spaces/copy.yaml --device interpret") + 1
    shown = lines[start:lines.index("```", start)]
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(ROOT)
    assert main(["plan", "spaces/copy.yaml", "--device", "interpret",
                 "--studies-dir", str(tmp_path / "studies")]) == 0
    assert capsys.readouterr().out.splitlines() == shown


@pytest.mark.parametrize("value, message", [
    ('"1 // 0"', "s.yaml:4: params.grid[0]: division by zero in '1 // 0'; allowed: an "
                 "expression that gives a positive integer"),
    ('"isqrt(-4)"', "s.yaml:4: params.grid[0]: isqrt of a negative number (-4) in "
                    "'isqrt(-4)'; allowed: an expression that gives a positive integer"),
])
def test_a_constant_expression_that_fails_says_what_is_allowed(value, message):
    """An expression over no names is computed as the file is read; its failure has no
    values to name, so the message ends with what a value may be."""
    with pytest.raises(SpaceError) as info:
        parse(GOOD.replace('[sms, 2*sms, "cdiv(n, BLOCK)"]', f"[{value}]"))
    assert str(info.value) == message


def test_a_kernels_bad_default_is_refused_at_the_kernel_as_its_default():
    """A default the file does not hold (block 100) was refused at 'params.block[0]', on
    the params line, as if the file said it; it is the kernel's, at the kernel line."""
    with pytest.raises(SpaceError) as info:
        parse("kernel: tests.kernels_for_tests:DefaultsToOddBlock\nparams:\n  BLOCK: [256]\n")
    assert str(info.value) == (
        "s.yaml:1: kernel: kernel tests.kernels_for_tests:DefaultsToOddBlock's default block "
        "100, standing in for params.block, is refused (change 'block' in its class's "
        "defaults, or give params.block): 100 threads per program; allowed: "
        "32, 64, 128, 256, 512, 1024 (num_warps × 32)")
    assert parse("kernel: tests.kernels_for_tests:DefaultsToOddBlock\nparams:\n"
                 "  block: [128]\n").axis("block").labels == ("128",)


def test_an_adaptive_setting_under_stop_fixed_is_refused_at_its_line():
    """docs/space.md: beside ``repeat``, ``target`` needs ``stop: ci`` or ``stdrel``.
    ``{stop: fixed, repeat: 3, target: 5%}`` was taken and its target never read."""
    from sweeper.errors import SpaceError
    from sweeper.space import parse_space

    for measure, key in (("{stop: fixed, repeat: 3, target: 5%}", "target"),
                         ("{stop: fixed, min_samples: 4}", "min_samples"),
                         ("{stop: fixed, max_time: 2s}", "max_time")):
        with pytest.raises(SpaceError) as info:
            parse_space(f"kernel: copy\nparams: {{BLOCK: [1024]}}\nmeasure: {measure}\n",
                        file="s.yaml")
        assert str(info.value) == (
            f"s.yaml:3: measure.{key}: only the adaptive rules (stop: ci or stdrel) read "
            f"it, and stop: fixed takes exactly repeat samples; allowed: stop: ci or "
            f"stdrel, or fixed without {key}")


def test_an_adaptive_setting_beside_repeat_alone_is_refused_at_its_line(tmp_path):
    """``{repeat: 3, target: 5%}`` is the fixed rule (repeat given, no stop), which reads
    no target: it was taken and never used."""
    from sweeper.errors import SpaceError
    from sweeper.space import parse_space

    for setting in ("target: 5%", "max_time: 2s"):
        with pytest.raises(SpaceError, match=r"^s.yaml:3: measure\.(target|max_time): only the "
                                             r"adaptive rules \(stop: ci or stdrel\) read it"):
            parse_space(f"kernel: copy\nparams: {{BLOCK: [1024]}}\n"
                        f"measure: {{repeat: 3, {setting}}}\n", file="s.yaml")
    for fine in ("{repeat: 3}", "{repeat: 3, stop: ci, target: 5%}", "{target: 5%}",
                 "{repeat: 3, stop: fixed}"):
        parse_space(f"kernel: copy\nparams: {{BLOCK: [1024]}}\nmeasure: {fine}\n",
                    file="s.yaml")


def test_a_measure_cache_that_contradicts_the_cache_axis_is_refused(tmp_path):
    """``params.cache`` sets the cache axis, so a ``measure.cache`` beside it that says
    otherwise would go unread: refused at its line, naming the axis's line; saying the
    same (``both`` beside ``[warm, cold]``) is no contradiction, and ``-p cache=...`` is
    this run's and wins over the file's ``measure.cache``."""
    text = "kernel: copy\nparams:\n  cache: [cold]\nmeasure:\n  cache: {}\n"
    with pytest.raises(SpaceError) as err:
        parse(text.format("warm"))
    assert str(err.value) == ("s.yaml:5: measure.cache: 'warm' contradicts params.cache "
                              "(cold, at s.yaml:3), the cache axis it would set; allowed: "
                              "one of them, or both saying the same")
    with pytest.raises(SpaceError, match=r"^s.yaml:5: measure.cache: 'both' contradicts"):
        parse(text.format("both"))
    assert parse(text.format("cold")).axis("cache").labels == ("cold",)
    both = "kernel: copy\nparams: {cache: [warm, cold]}\nmeasure: {cache: both}\n"
    assert parse(both).axis("cache").labels == ("warm", "cold")
    path = tmp_path / "s.yaml"
    path.write_text(text.format("cold"))
    assert load_space(path, ["cache=warm"]).axis("cache").labels == ("warm",)


@pytest.mark.parametrize(("params", "message"), [
    ("{footprint: [16KiB, 16384]}",
     "s.yaml:2: params.footprint[1]: '16384' is '16KiB' again (both 16384); allowed: each "
     "value once"),
    ("{footprint: [16KiB, 16384B]}",
     "s.yaml:2: params.footprint[1]: '16384B' is '16KiB' again (both 16384); allowed: each "
     "value once"),
    ("{BLOCK: ['2*128', 256]}",
     "s.yaml:2: params.BLOCK[1]: '256' is '2*128' again (both 256); allowed: each value once"),
    ("{t: {zip: {footprint: [16KiB, 16384], BLOCK: [256, '2*128']}}}",
     "s.yaml:2: params.t.zip: a row appears twice"),
])
def test_one_value_spelt_twice_is_refused_as_a_value_given_twice(params, message):
    """``16KiB`` and ``16384`` are one footprint: measured as two values, the sweep ran the
    same config twice under two labels, and the report showed it as two problems."""
    with pytest.raises(SpaceError) as err:
        parse(f"kernel: copy\nparams: {params}\n")
    assert str(err.value) == message


@pytest.mark.parametrize(("text", "message"), [
    ("kernel: copy\nparams: {BLOCK: [0400]}\n",
     "s.yaml:2: params.BLOCK[0]: 0400 has a leading zero, which YAML reads as an octal "
     "number (256); allowed: 400 without it, or quotes where text is meant"),
    ("kernel: copy\nparams: {BLOCK: [256]}\nbudget: {trials: 0010}\n",
     "s.yaml:3: budget.trials: 0010 has a leading zero, which YAML reads as an octal "
     "number (8); allowed: 10 without it, or quotes where text is meant"),
])
def test_a_leading_zero_yaml_reads_as_octal_is_refused(tmp_path, text, message):
    """YAML 1.1 reads a plain ``0400`` as octal 256 and ``0010`` as 8: the value used was
    not the one written, silently; refused at its line, in a file and in ``-p`` alike.
    ``0`` itself, and a quoted ``"0400"``, are no octal number."""
    with pytest.raises(SpaceError) as err:
        parse(text)
    assert str(err.value) == message
    path = tmp_path / "s.yaml"
    path.write_text("kernel: copy\nparams: {BLOCK: [256]}\nseed: 0\n")
    with pytest.raises(SpaceError) as err:
        load_space(path, ["BLOCK=0400"])
    assert str(err.value) == ("-p BLOCK=0400: 0400 has a leading zero, which YAML reads as "
                              "an octal number (256); allowed: 400 without it, or quotes "
                              "where text is meant")
    assert load_space(path).sampler.seed == 0


def test_null_in_an_extending_file_drops_the_key_it_inherits(tmp_path):
    """A child cannot otherwise size by dimensions a problem its base sizes by footprint
    (both were refused, ``footprint: null`` included): ``null`` under params, measure or
    budget drops what the files extended give, read the same from the study's recorded
    text; a null for a key no file extended gives drops nothing and is refused."""
    from sweeper.space import parse_space

    (tmp_path / "base.yaml").write_text(
        "kernel: copy\nparams:\n  BLOCK: [256, 1024]\n  footprint: [16KiB]\n"
        "budget: {trials: 5}\nmeasure: {warmup: 1, repeat: 3}\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\nparams:\n  footprint: null\n  n: [4096]\n"
                     "budget: {trials: null}\n")
    space = load_space(child)
    assert "footprint" not in {a.name for a in space.axes}
    assert space.axis("n").labels == ("4096",) and space.budget.trials is None
    assert space.axis("BLOCK").labels == ("256", "1024") and space.measure.repeat == 3
    again = parse_space(space.text, file=str(child), folder=tmp_path)
    assert again.axis("n").labels == ("4096",) and again.budget.trials is None
    child.write_text("extends: base.yaml\nparams:\n  grid: null\n")
    with pytest.raises(SpaceError) as err:
        load_space(child)
    assert str(err.value) == (f"{child}:3: params.grid: null drops params.grid inherited "
                              "through extends:, but the files extended give no params.grid; "
                              "allowed: null for one of BLOCK, footprint")
