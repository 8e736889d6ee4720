"""``sweeper plan`` on a user kernel reads its declaration from the module's source,
never importing it: dimensions as the problem, options known, autotune configs listed,
and a declaration that is not literal named as what was not read."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sweeper.cli import main

#: Top-level code every module below runs when imported: a marker file plan must not leave.
MARK = 'from pathlib import Path\nPath(__file__).with_suffix(".imported").write_text("ran")\n'

SHORT = MARK + '''
import sweeper

@sweeper.kernel(inputs={"x": ("rows", "cols")}, outputs=["x"], reference=lambda x: x,
                dims={"rows": 64, "cols": 128}, meta={"BLOCK": 32}, grid="rows",
                footprint_bytes="rows * cols * itemsize")
def rowwise(x, config):
    pass
'''

SUBCLASS = MARK + '''
from typing import ClassVar
from sweeper.kernels import Dim, Kernel, MetaParam

SIZES = {"rows": Dim("rows of x", default=64), "cols": Dim("columns of x", default=128)}

class Rowwise(Kernel):
    name = "rowwise"
    dims: ClassVar = SIZES
    meta_params: ClassVar = {"BLOCK": MetaParam(default=32, pow2=True)}
    options = {"mode": "fast or exact"}
    footprint_bytes = "rows * cols * itemsize"
    dims_from_footprint = {}
    defaults = {"grid": "rows", "block": 64, "dtype": "float32"}
'''

NOT_LITERAL = MARK + '''
import sweeper

def sizes():
    return {"rows": 64, "cols": 128}

@sweeper.kernel(inputs={"x": ("rows", "cols")}, outputs=["x"], reference=lambda x: x,
                dims=sizes(), meta={"BLOCK": 32}, grid="rows",
                footprint_bytes="rows * cols * itemsize")
def rowwise(x, config):
    pass
'''

AUTOTUNE_COMPUTED = MARK + '''
import sweeper, triton

def configs():
    return [triton.Config({"BLOCK": b}) for b in (64, 128)]

@triton.autotune(configs=configs(), key=["n"])
@triton.jit
def body(x, n, BLOCK):
    pass

@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], reference=lambda x: x, autotuned=body)
def tuned(x, config):
    pass
'''

SPACE = """
kernel: {kernel}
sampler: exhaustive
params:
  grid: [rows]
  block: [32]
  BLOCK: [32, 64]
  rows: [64, 256]
  cols: [100]
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch) -> Iterator[Callable[[str], tuple[str, Path]]]:
    """Write a kernel module on the path: its name and the marker its import leaves."""
    names: list[str] = []
    monkeypatch.chdir(tmp_path)

    def write(source: str) -> tuple[str, Path]:
        name = f"userkernel_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(source)
        names.append(name)
        return name, tmp_path / f"{name}.imported"

    yield write
    for name in names:
        assert name not in sys.modules


def _plan(tmp_path: Path, capsys, text: str) -> tuple[int, str, str]:
    (tmp_path / "s.yaml").write_text(text)
    rc = main(["plan", str(tmp_path / "s.yaml"), "--device", "interpret"])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("source, attr", [(SHORT, "rowwise"), (SUBCLASS, "Rowwise")],
                         ids=["decorator", "subclass"])
def test_plan_shows_declared_dims_as_the_problem(module, tmp_path, capsys, source, attr):
    name, marker = module(source)
    kernel = f"{name}:{attr}" if attr == "rowwise" else \
        f"{{name: {name}:{attr}, mode: fast}}"
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=kernel))
    assert rc == 0 and not marker.exists()
    assert "4 configs (grid 1 × block 1 × dtype 1 × cache 1 × rows 2 × cols 1 × BLOCK 2)" in out
    assert "  launch: grid, block; problem: dtype, cache, rows, cols; meta-parameters: " \
        "BLOCK\n" in out
    options = "mode" if attr == "Rowwise" else "none"
    assert (f"not checked: kernel {name}:{attr} was not imported (plan runs no user code); "
            "its declaration was read from its source (dimensions rows, cols; "
            f"meta-parameters BLOCK; options {options}), but not its checks of values: "
            "the estimate counts launches only") in out


def test_plan_says_it_counts_what_a_refuse_would_turn_down_as_measured(module, tmp_path,
                                                                      capsys):
    """A declaration's refuse= is code, which plan does not run: the configs it would turn
    down are counted among those measured, and the note says so, naming its line."""
    name, marker = module(SHORT.replace('footprint_bytes="rows * cols * itemsize")',
                                        'footprint_bytes="rows * cols * itemsize",\n'
                                        '                refuse=lambda config: "never")'))
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowwise"))
    assert rc == 0 and not marker.exists()
    assert "would measure 4 on " in out
    line = (tmp_path / f"{name}.py").read_text().splitlines().index(
        '                refuse=lambda config: "never")') + 1
    assert (f"but not its checks of values nor which configs its refuse= at {name}.py:{line} "
            "turns down (counted here among those it would measure): the estimate counts "
            "launches only") in out, out
    name, _ = module(NOT_LITERAL.replace('footprint_bytes="rows * cols * itemsize")',
                                         'footprint_bytes="rows * cols * itemsize",\n'
                                         '                refuse=lambda config: "never")'))
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowwise")
                       .replace("  rows: [64, 256]\n  cols: [100]\n", "")
                       .replace("[rows]", "[4]"))
    assert rc == 0 and f"), and which configs its refuse= at {name}.py:{line + 3} turns " \
        "down (counted here among those it would measure); the estimate counts" in out, out


def test_plan_knows_a_subclass_options_and_its_meta_parameters(module, tmp_path, capsys):
    name, marker = module(SUBCLASS)
    rc, _, err = _plan(tmp_path, capsys, SPACE.format(kernel=f"{{name: {name}:Rowwise, "
                                                      "speed: high}"))
    assert rc == 2 and err.endswith(f"s.yaml:2: kernel.speed: kernel {name}:Rowwise takes no "
                                    "option 'speed'; its options: mode\n")
    rc, _, err = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:Rowwise"))
    assert rc == 2 and err.endswith(f"s.yaml:2: kernel: kernel {name}:Rowwise needs option "
                                    f"'mode' (fast or exact): kernel: {{name: {name}:Rowwise, "
                                    "mode: ...}\n")
    rc, _, err = _plan(tmp_path, capsys, SPACE.format(kernel=f"{{name: {name}:Rowwise, "
                                                      "mode: fast}").replace("32, 64]",
                                                                             "32, 48]"))
    assert rc == 2 and "params.BLOCK[1]: 48 is not a power of two" in err
    assert not marker.exists()


def test_plan_and_run_name_a_subclass_as_its_space_does(module, tmp_path, capsys):
    """A space whose kernel's options or values are wrong is refused in the same line by
    ``plan``, which reads the kernel's source, and ``run``, which imports it: both name the
    kernel as the space does (``module:attr``, what a fix writes under ``kernel:``), never
    by the ``name`` its class declares (``rowwise``, which no space could load)."""
    name, _ = module(SUBCLASS + "".join(
        f"    def {method}(self, *args): ...\n" for method in (
            "__init__", "allocate", "randomize", "poison", "launch", "check")))
    spaces = [SPACE.format(kernel=f"{name}:Rowwise"),
              SPACE.format(kernel=f"{{name: {name}:Rowwise, speed: high}}"),
              SPACE.format(kernel=f"{{name: {name}:Rowwise, mode: fast}}").replace(
                  "32, 64]", "32, 48]")]
    try:
        for text in spaces:
            rc, _, planned = _plan(tmp_path, capsys, text)
            assert rc == 2 and f"{name}:Rowwise" in planned and "rowwise" not in planned
            assert main(["run", str(tmp_path / "s.yaml"), "--device", "interpret",
                         "--studies-dir", str(tmp_path / "st")]) == 2
            assert capsys.readouterr().err == planned
    finally:
        sys.modules.pop(name, None)


def test_a_non_literal_declaration_is_named_and_stood_in_for(module, tmp_path, capsys):
    name, marker = module(NOT_LITERAL)
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowwise")
                       .replace("  rows: [64, 256]\n  cols: [100]\n", "")
                       .replace("[rows]", "[4]"))
    assert rc == 0 and not marker.exists()
    assert "meta-parameters: BLOCK\n" in out
    assert (f"not checked: kernel {name}:rowwise was not imported (plan runs no user code): "
            "its meta-parameters (BLOCK) and their values, and its defaults for axes the file "
            "leaves out (the base Kernel's were used where its source could not be read: "
            f"dims= at {name}.py:10 (not a literal)); the estimate counts launches only") in out


META_COMPUTED = MARK + '''
from sweeper.kernels import Kernel

def meta():
    return {}

class Tiled(Kernel):
    name = "tiled"
    meta_params = meta()
'''


def test_a_default_grid_that_names_an_unknown_axis_is_the_kernels(module, tmp_path, capsys):
    """A file with no grid, whose kernel's declaration plan cannot read: the base Kernel's
    default grid ``cdiv(n, BLOCK)`` stood in and its unknown BLOCK was blamed on a
    ``params.grid[0]`` the file does not hold; it is the kernel's default that is refused,
    and the message says why it was the base Kernel's."""
    name, marker = module(META_COMPUTED)
    rc, out, err = _plan(tmp_path, capsys, f"kernel: {name}:Tiled\nparams:\n  block: [32]\n")
    assert (rc, out) == (2, "") and not marker.exists()
    assert err.endswith(
        f"s.yaml:1: kernel: the base Kernel's default grid 'cdiv(n, BLOCK)', standing in for "
        f"params.grid (kernel {name}:Tiled's own could not be read from its source: "
        f"meta_params at {name}.py:11 (not a literal)), is refused (give the class a "
        "default grid of its own: defaults = {**Kernel.defaults, 'grid': ...}; or give "
        "params.grid): "
        "unknown name 'BLOCK' in 'cdiv(n, BLOCK)'; known: block, footprint, grid, itemsize, "
        "l2_bytes, n, sms; did you mean 'block'?\n")


@pytest.mark.parametrize(
    "defaults", ["", '    defaults = {"block": 64, "dtype": "float32", "footprint": "4KiB"}\n'],
    ids=["inherited", "without-grid"])
def test_a_kernel_class_without_a_grid_of_its_own_is_told_to_declare_one(
        module, tmp_path, capsys, defaults):
    """A ``Kernel`` subclass over its own meta-parameter (``TILE``) that declares no default
    grid: the base Kernel's ``cdiv(n, BLOCK)`` it inherits reads a ``BLOCK`` it lacks, and
    one whose ``defaults`` leave ``grid`` out has none at all (``run`` raised a KeyError).
    ``plan`` and ``run`` refuse it in one line naming what to change: the class's
    ``defaults``, which every space of the kernel reads, or the file's ``params.grid``."""
    source = MARK + (
        "from sweeper.kernels import Kernel, MetaParam\n\nclass Tiled(Kernel):\n"
        '    name = "tiled"\n    meta_params = {"TILE": MetaParam(default=64, pow2=True)}\n'
        f"{defaults}" + "".join(f"    def {method}(self, *args): ...\n" for method in (
            "allocate", "randomize", "poison", "launch", "check")))
    name, _ = module(source)
    kernel = f"{name}:Tiled"
    said = (f"s.yaml:1: kernel: the base Kernel's default grid 'cdiv(n, BLOCK)', which kernel "
            f"{kernel} inherits (its class sets no defaults), standing in for params.grid, is "
            "refused (give the class a default grid of its own: defaults = {**Kernel.defaults, "
            "'grid': ...}; or give params.grid): unknown name 'BLOCK' in 'cdiv(n, BLOCK)'; "
            "known: TILE, block, footprint, grid, itemsize, l2_bytes, n, sms; did you mean "
            "'block'?\n") if not defaults else (
        f"s.yaml:1: kernel: kernel {kernel}'s class gives no default grid (its defaults: "
        "block, dtype, footprint), and the file no params.grid; allowed: 'grid' in the "
        "class's "
        'defaults (the programs launched: an expression over its dimensions and '
        'meta-parameters, such as "cdiv(n, BLOCK)"), or params.grid\n')
    try:
        rc, out, err = _plan(tmp_path, capsys, f"kernel: {kernel}\nparams:\n  TILE: [64]\n")
        assert (rc, out) == (2, "") and err.endswith(said), err
        assert main(["run", str(tmp_path / "s.yaml"), "--device", "interpret",
                     "--studies-dir", str(tmp_path / "st")]) == 2
        assert capsys.readouterr().err == err
        assert not (tmp_path / "st").exists()
        (tmp_path / "s.yaml").write_text(f"kernel: {kernel}\nparams:\n  TILE: [64]\n"
                                         '  grid: ["cdiv(n, TILE)"]\n')
        assert main(["plan", str(tmp_path / "s.yaml"), "--device", "interpret"]) == 0
    finally:
        sys.modules.pop(name, None)


ARITHMETIC = MARK + """
import sweeper

COLS = 2**7

@sweeper.kernel(inputs={{"x": ("rows", "cols")}}, outputs=["x"], reference=lambda x: x,
                dims={{"rows": {rows}, "cols": COLS}}, meta={{"BLOCK": 4 * 8}}, grid="rows",
                footprint_bytes="rows * cols * itemsize")
def rowwise(x, config):
    pass
"""


@pytest.mark.parametrize("rows, value", [
    ("1 << 24", 1 << 24), ("4096 * 4096", 4096 * 4096), ("2**20", 2**20),
    ("COLS * 2 - 1", 255), ("(1 << 10) // 3 % 100", 41), ("-(-8)", 8)])
def test_constant_integer_arithmetic_is_read_from_the_source(module, tmp_path, capsys, rows,
                                                             value):
    from sweeper.kernels._unimported import read_declaration

    name, marker = module(ARITHMETIC.format(rows=rows))
    read = read_declaration(f"{name}:rowwise", "rowwise")
    assert read.unread == ()
    assert read.attrs["dims"]["rows"].default == value
    assert read.attrs["dims"]["cols"].default == 128
    assert read.attrs["meta_params"]["BLOCK"].default == 32
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowwise")
                       .replace("  rows: [64, 256]\n  cols: [100]\n", ""))
    assert rc == 0 and not marker.exists()
    assert "its declaration was read from its source (dimensions rows, cols; " in out


@pytest.mark.parametrize("rows", [
    "2**10**10", "1 << 10**12", "(1 << 64) * (1 << 64)", "1 / 2", "1 // 0", "1 << -1",
    "2 ** -1", "rows_of() * 2", "UNBOUND * 2", '"8" * 2', "[8] * 2", "2.5 * 2"])
def test_arithmetic_that_is_not_a_constant_integer_is_not_read(module, rows):
    from sweeper.kernels._unimported import read_declaration

    name, marker = module(ARITHMETIC.format(rows=rows))
    read = read_declaration(f"{name}:rowwise", "rowwise")
    assert read.unread == (f"dims= at {name}.py:9 (not a literal)",)
    assert "dims" not in read.attrs and not marker.exists()


def test_plan_reads_the_readmes_own_autotune_example(module, tmp_path, capsys):
    """README.md's ``mymodule.py`` (``dims={"n_elements": 1 << 24}``, its configs a list
    comprehension), read by ``sweeper plan`` as ``sweeper run`` would import it."""
    import re

    from sweeper.space import load_space
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    source = re.search(r"^# mymodule\.py\n(.*?)^```", readme, re.S | re.M).group(1)
    assert "1 << 24" in source and " for b, w in " in source
    name, marker = module(MARK + source)
    rc, out, err = _plan(tmp_path, capsys, f"from_autotune: {name}:add\n")
    assert rc == 0 and not marker.exists(), err
    assert "3 configs (grid 1 × dtype 1 × cache 1 × n_elements 1 × autotune 3)" in out
    space = load_space(tmp_path / "s.yaml", user_code=False)
    tie, = space.ties
    assert tie.members == ("block", "num_stages", "BLOCK_SIZE")
    assert tie.rows == (("64", "3", "256"), ("128", "3", "1024"), ("256", "3", "4096"))
    assert space.axis("n_elements").labels == (str(1 << 24),)


@pytest.mark.parametrize("hook", ["note", "lambda nargs: nargs['x'].zero_()"])
def test_plan_reads_configs_whose_pre_hook_is_code(module, tmp_path, capsys, hook):
    """A config's ``pre_hook`` (which the README says sweeper honours) is code, not
    data: the configs' values are still literals, so plan lists them rather than
    refusing the whole list as not literal."""
    name, marker = module(AUTOTUNE_COMPUTED.replace(
        "configs=configs()", "configs=[triton.Config({'BLOCK': 64}, num_warps=2, "
        f"pre_hook={hook}), triton.Config({{'BLOCK': 128}}, num_warps=4)], "
        "prune_configs_by={'early_config_prune': lambda c, n, **k: c}"
    ).replace("def configs():", "def note(nargs):\n    pass\n\ndef configs():"))
    rc, out, err = _plan(tmp_path, capsys, f"from_autotune: {name}:tuned\n")
    assert rc == 0 and not marker.exists(), err
    assert "2 configs (" in out and "autotune 2)" in out


def test_a_short_kernel_over_n_is_sized_by_its_declared_default_as_run_sizes_it(
        module, tmp_path, capsys):
    """A short kernel whose one dimension is ``n`` and a space that leaves the size out:
    importing it (``sweeper run``) sizes the problem by ``dims``' default; read from its
    source (plan, and an export reading the study's space back) it was the base kernel's
    64 MiB footprint, so plan shrank a problem the run never measures and exports lost
    the problem the run asked for."""
    from sweeper.space import load_space

    name, marker = module(MARK + AUTOTUNE_COMPUTED.replace(
        "configs=configs()", "configs=[triton.Config({'BLOCK': b}) for b in (64, 128)]"
    ).replace("autotuned=body", "dims={'n': 1 << 20}, autotuned=body"))
    rc, out, err = _plan(tmp_path, capsys, f"from_autotune: {name}:tuned\n")
    assert rc == 0 and not marker.exists(), err
    assert "problem: dtype, cache, n;" in out and "shrunk to fit 16KiB: n 1048576 → 4096" in out
    space = load_space(tmp_path / "s.yaml", user_code=False)
    assert space.sizes == ("n",) and space.axis("n").labels == (str(1 << 20),)


@pytest.mark.parametrize("configs", [
    "[triton.Config({'BLOCK': b}) for b in (64, 128) if b]",
    "[triton.Config({'BLOCK': b}) for b in sizes()]",
    "[triton.Config({'BLOCK': b}) for b in {64, 128}]",
    "[triton.Config({'BLOCK': b}) for b in range(1, 10000)]",
    "[triton.Config({'BLOCK': b}) for b in range(1 << 63)]",
    "[triton.Config({'BLOCK': b}) for b in range(-(1 << 64), 1 << 64, 3)]",
    "[triton.Config({'BLOCK': b}) for b, w in ((64, 2, 1),)]",
    "[triton.Config({'BLOCK': c}) for b in (64, 128)]",
])
def test_plan_refuses_a_comprehension_it_cannot_build(module, tmp_path, capsys, configs):
    name, marker = module(AUTOTUNE_COMPUTED.replace("configs=configs()", f"configs={configs}"))
    rc, _, err = _plan(tmp_path, capsys, f"from_autotune: {name}:tuned\n")
    assert rc == 2 and not marker.exists()
    assert f"(autotuned= at {name}.py:14 (not a literal at {name}.py:9))" in err


def test_plan_lists_the_configs_of_a_literal_autotune(tmp_path, capsys):
    rc, out, _ = _plan(tmp_path, capsys,
                       "from_autotune: tests.short_kernels_for_tests:add\n")
    assert rc == 0 and "3 configs (grid 1 × dtype 1 × cache 1 × n_elements 1 × autotune 3)" \
        in out
    assert "problem: dtype, cache, n_elements; meta-parameters: num_stages, BLOCK_SIZE" in out


def test_plan_refuses_computed_autotune_configs_naming_them(module, tmp_path, capsys):
    """The Triton tutorials' ``configs=configs()``: the reason names the line of
    ``configs=``, not only ``autotuned=``'s, which names the function by a name and sent
    a reader looking for a literal there."""
    name, marker = module(AUTOTUNE_COMPUTED)
    rc, _, err = _plan(tmp_path, capsys, f"from_autotune: {name}:tuned\n")
    assert rc == 2 and not marker.exists()
    assert err == (f"{tmp_path / 's.yaml'}:1: from_autotune: the configs of '{name}:tuned' "
                   f"could not be read from its source (autotuned= at {name}.py:14 (not a "
                   f"literal at {name}.py:9)), and `sweeper plan` imports no user code; "
                   "`sweeper run` and `sweeper ab` read them\n")


BOUNDED = MARK + """
import sweeper
from sweeper.kernels import MetaParam
{names}
@sweeper.kernel(inputs={{"x": "n"}}, outputs=["x"], reference=lambda x: x, dims={{"n": {n}}}, meta={{"BLOCK": {block}}}, grid="n")
def rowwise(x, config):
    pass
"""  # noqa: E501 - the declaration on one line, the line every unread phrase names


def _names(template: str, count: int) -> str:
    """``x0 = 1`` then ``x{i} = template`` of ``x{i-1}`` for i up to ``count``."""
    return "x0 = 1\n" + "".join(f"x{i} = {template.format(p=f'x{i - 1}')}\n"
                                for i in range(1, count + 1))


@pytest.mark.parametrize("names, n, block, value, unread", [
    # each name read once: 2**40 from 40 names that each add the one before to itself
    (_names("{p} + {p}", 60), "x40", "32", 1 << 40, None),
    # comprehensions over the names before: the inner ones read once, 3 * 4096 steps
    ("E = [e for e in range(4096) for f in []]\nD = [d for d in range(4096) for g in E]\n"
     "C = [c for c in range(4096) for h in D]\n", "64", "MetaParam(32, choices=C)", 64, None),
    # the same nested in one another: 4096**3 steps
    ("", "64", "[c for c in range(4096) for h in [d for d in range(4096) for g in "
     "[e for e in range(4096) for f in []]]]", None,
     "too large to read: the module's reading ran past 262144 steps"),
    # each name a list holding the one before twice: 2**41 items
    (_names("[{p}, {p}]", 60), "64", "x40", None, "too large to read: over 262144 items"),
    # a chain past Python's stack
    (_names("{p}", 5000), "x5000", "32", None, "nested too deeply to read"),
], ids=["doubling-names", "comprehensions-through-names", "nested-comprehensions",
        "doubling-lists", "chain-of-5000-names"])
def test_the_reader_is_bounded_in_work_and_size(module, alarm, names, n, block, value,
                                               unread):
    """What a short module makes exponential (names that each use the one before twice,
    comprehensions nested in one another) is read once or named as too large, in about
    a second at most, never hours; a chain too deep for Python's stack is named too."""
    from sweeper.kernels._unimported import read_declaration

    source = BOUNDED.format(names=names, n=n, block=block)
    name, marker = module(source)
    line = source[:source.index("@sweeper.kernel")].count("\n") + 1
    read = read_declaration(f"{name}:rowwise", "rowwise")
    assert not marker.exists()
    if unread is None:
        assert read.unread == () and read.attrs["dims"]["n"].default == value
    else:
        where = "dims" if n.startswith("x") else "meta"
        assert read.unread[0] == f"{where}= at {name}.py:{line} ({unread})"
        # the budget is the module's: what comes after it is spent is not read either
        assert all(u.endswith(f"({unread})") for u in read.unread)


@pytest.mark.parametrize("key", ["kernel", "from_autotune"])
def test_plan_refuses_a_name_the_module_never_binds_as_run_does(module, tmp_path, capsys,
                                                                  key):
    """A misspelt ``module:attr`` (``rowwsie``) got from plan a message about the base
    Kernel's default grid, the kernel's own 'neither a Kernel subclass nor a sweeper.kernel
    declaration'; run says the module has no such attribute.  Plan now says what run says,
    still without importing the module."""
    name, marker = module(SHORT)
    text = SPACE.replace("kernel: {kernel}", f"{key}: {name}:rowwsie")
    rc, out, err = _plan(tmp_path, capsys, text)
    said = (f"{tmp_path / 's.yaml'}:2: {key}: cannot load kernel '{name}:rowwsie' "
            f"(module:attr path): module {name} has no attribute 'rowwsie'; did you mean "
            "'rowwise'?")
    assert rc == 2 and out == "" and err.startswith(said + ("\n" if key == "kernel" else ";"))
    assert not marker.exists()
    assert main(["run", str(tmp_path / "s.yaml"), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == err
    sys.modules.pop(name, None)


@pytest.mark.parametrize("binds", ["globals()['rowwsie'] = rowwise",
                                   "setattr(sys.modules[__name__], 'rowwsie', rowwise)",
                                   "def __getattr__(name):\n    return rowwise",
                                   "from os.path import *"])
def test_plan_leaves_a_name_the_module_may_bind_unseen_to_run(module, tmp_path, capsys,
                                                               binds):
    name, marker = module(SHORT + "\nimport sys\n" + binds + "\n")
    _, _, err = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowwsie"))
    assert "has no attribute" not in err and not marker.exists()


ROWSUM = MARK + '''
import sweeper


@sweeper.kernel(inputs={"x": "rows, cols"}, outputs={"y": "rows"},
                reference=lambda x: x.sum(1), dims={"rows": 64, "cols": 128},
                meta={"BLOCK": 128}, grid="rows",
                footprint_bytes="rows * cols * itemsize")
def rowsum(x, y, config):
    pass
'''

ROWSUM_CALLED = MARK + '''
import sweeper


def launch(x, y, config):
    pass


rowsum = sweeper.kernel(launch, inputs={"x": "rows, cols"}, outputs={"y": "rows"},
                        reference=lambda x: x.sum(1), dims={"rows": 64, "cols": 128},
                        meta={"BLOCK": 128}, grid="rows",  # a comment left out
                        footprint_bytes="rows * cols * itemsize")
'''


def _plan_then_run(tmp_path: Path, capsys, name: str, marker: Path
                   ) -> tuple[int, str, str, int, str]:
    """Plan, then run, a space of kernel ``name:rowsum``: plan's status, output and
    errors (its module left unimported), then run's status and errors."""
    rc, out, planned = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowsum"))
    assert not marker.exists()
    ran = main(["run", str(tmp_path / "s.yaml"), "--device", "interpret", "--studies-dir",
                str(tmp_path / "studies")])
    said = capsys.readouterr().err
    sys.modules.pop(name, None)
    return rc, out, planned, ran, said


@pytest.mark.parametrize("source, old, new", [
    (ROWSUM, "def rowsum(x, y, config)", "def rowsum(inp, y, config)"),
    (ROWSUM, "def rowsum(x, y, config)", "def rowsum(x, y, config, *, scale: float, shift=0.5)"),
    (ROWSUM, "def rowsum(x, y, config)", "def rowsum(x, config)"),
    (ROWSUM, "reference=lambda x: x.sum(1)", "reference=lambda inp: inp.sum(1)"),
    (ROWSUM, 'grid="rows"', 'grid="row"'),
    (ROWSUM, 'dims={"rows": 64, "cols": 128},', ""),
    (ROWSUM, 'footprint_bytes="rows * cols * itemsize")', ")"),
    (ROWSUM, 'meta={"BLOCK": 128}', 'meta={"BLOCK": "x"}'),
    (ROWSUM, 'outputs={"y": "rows"}', 'outputs={"y": "rows, k"}'),
    (ROWSUM, 'grid="rows"', 'grid="rows", tolerance={"fp17": (1e-3, 1e-5)}'),
    (ROWSUM, 'grid="rows"', 'grid="rows", headline="fast"'),
    (ROWSUM, 'grid="rows"', 'grid="rows", dtype=["float32"]'),
    (ROWSUM, 'grid="rows"', 'grid="rows", autotuned=5'),
    (ROWSUM, 'grid="rows"', 'grid="rows", verify=lambda outputs: None'),
    (ROWSUM, 'grid="rows"', 'grid="rows", verify=lambda o, e: None, tolerance={"float32": '
     '(1e-3, 0)}'),
    (ROWSUM_CALLED, "def launch(x, y, config)", "def launch(inp, y, config)"),
    (ROWSUM_CALLED, 'grid="rows"', 'grid="row"'),
], ids=["launch-parameter", "launch-keyword", "launch-missing", "reference", "grid", "dims",
        "footprint", "meta", "output-shape", "tolerance", "headline", "dtype-list",
        "autotuned-literal", "verify-parameters", "verify-tolerance", "called-launch",
        "called-grid"])
def test_plan_refuses_a_declaration_as_run_does(module, tmp_path, capsys, source, old, new):
    """A mistake in a declaration that importing the module refuses is refused by plan,
    which reads the module's source, with run's message and exit status: its launch's
    parameters that cannot take the tensors (plan said nothing), a grid= naming no
    dimension (plan blamed a params.grid the file does not give), a declaration without
    dims= (plan and run named different first errors)."""
    assert old in source
    name, marker = module(source.replace(old, new))
    rc, out, planned, ran, said = _plan_then_run(tmp_path, capsys, name, marker)
    assert ran == 2 and said.count("\n") == 1 and "Traceback" not in said, said
    assert (rc, out, planned) == (2, "", said)
    assert not (tmp_path / "studies").exists()


@pytest.mark.parametrize("old, new, line", [
    ("    pass\n", "    print(sep=1, sep=2)\n", 12),
    ("import sweeper\n", "import sweeper\nreturn None\n", 5),
    ("    pass\n", "    pass(\n", 12),
], ids=["repeated-keyword", "return-outside-function", "unparsable"])
def test_plan_refuses_a_module_that_does_not_compile_as_run_does(module, tmp_path, capsys,
                                                                   old, new, line):
    """A module that does not compile (a keyword repeated in a call, ``return`` outside
    a function, which the parser accepts; or one the parser refuses) got from plan no
    error, or a missing attribute, where run's import raises SyntaxError at its line.
    Plan now compiles the source (running none of it) and says what run says."""
    name, marker = module(ROWSUM.replace(old, new, 1))
    rc, out, planned, ran, said = _plan_then_run(tmp_path, capsys, name, marker)
    assert ran == 2 and "raised SyntaxError: " in said and f"(at {name}.py:{line}: " in said
    assert (rc, out, planned) == (2, "", said)


def test_plan_says_which_checks_of_a_declaration_it_could_not_make(module, tmp_path, capsys):
    """A launch under another decorator (``@triton.jit`` stacked below, which importing
    refuses) is what only running the module makes: plan says, in its note, that it did
    not make the checks importing the module makes, and why."""
    name, marker = module(ROWSUM.replace("def rowsum(", "@triton.jit\ndef rowsum("))
    rc, out, _ = _plan(tmp_path, capsys, SPACE.format(kernel=f"{name}:rowsum"))
    line = (tmp_path / f"{name}.py").read_text().splitlines().index("@triton.jit") + 2
    assert rc == 0 and not marker.exists()
    assert ("but not its checks of values, nor the checks importing it makes of its "
            f"declaration (its launch rowsum at {name}.py:{line}, decorated by more than "
            "sweeper.kernel): the estimate") in out, out


COUNTED = MARK + '''
import sweeper
import triton
import triton.language as tl


@triton.jit
def body(x, y, n, K, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tiles = tl.cdiv(K, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.range(0, tiles, num_stages=2):
        acc += tl.load(x + i * BLOCK + tl.arange(0, BLOCK))
    if EVEN:
        tl.store(y + pid, tl.sum(acc))
    else:
        tl.store(y + pid, tl.sum(acc), mask=pid < n)
    while pid < n:
        pid += tl.num_programs(0)


@sweeper.kernel(inputs={"x": "K"}, outputs={"y": "n"}, reference=lambda x: x,
                dims={"n": 64, "K": 1000}, meta={"BLOCK": 32, "EVEN": 1}, grid="n",
                footprint_bytes="K * itemsize")
def summed(x, y, config):
    body[(config.grid,)](x, y, y.numel(), x.numel(), **config.meta)
'''


@pytest.mark.parametrize("K, BLOCK, EVEN, per_program", [
    (1000, 32, 1, 3 + 32 * 7 + 3 + 3),         # cdiv(1000, 32) = 32 trips of 6 and a step
    (1000, 32, 0, 3 + 32 * 7 + 4 + 3),         # the other branch: its mask's test too
    (100, 128, 1, 3 + 1 * 7 + 3 + 3)])
def test_an_interpreted_launch_counts_its_functions_operations_from_the_source(
        module, K, BLOCK, EVEN, per_program):
    """A user kernel's interpreted launch is priced by the operations of the Triton
    function it launches, read from the source, never run: each operator, comparison
    and call of the language is one; a ``range`` (``tl.range``) loop runs as many times
    as its bounds say over the config's dimensions and meta-parameters by the function's
    argument names, through a name the function binds before it (``tiles``); an ``if``
    on a meta-parameter takes its branch; a ``while`` whose trips only running tells
    counts once (its test and body)."""
    from sweeper.plan import declared_counts
    from sweeper.space import Config, Problem

    name, marker = module(COUNTED)
    _, _, ops = declared_counts(f"{name}:summed")
    assert ops is not None and ops.named == f"body ({name}.py:10)"
    config = Config(Problem("float32", 4 * K, (("n", 64), ("K", K))), grid=64, block=64,
                    meta={"BLOCK": BLOCK, "EVEN": EVEN})
    assert ops(config) == 64 * per_program and not marker.exists()


STRIDED = MARK + '''
import sweeper
import triton
import triton.language as tl


@triton.jit
def body(x, y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n), mask=offsets < n)
    for tile in tl.range(tl.program_id(axis=0), tl.cdiv(n, BLOCK), tl.num_programs(0)):
        tl.store(y + tile, 0.0)
    for row in range(pid, n, 2):
        tl.store(y + row, 1.0)


@sweeper.kernel(inputs={"x": "n"}, outputs={"y": "n"}, reference=lambda x: x,
                meta={"BLOCK": 256}, grid="4", footprint_bytes="n * itemsize")
def strided(x, y, config):
    body[(config.grid,)](x, y, x.numel(), **config.meta)
'''


@pytest.mark.parametrize("grid", [1, 2, 3, 16, 64])
def test_a_grid_stride_loops_trips_are_shared_among_the_grids_programs(module, grid):
    """A grid-stride loop (``range(pid * BLOCK, n, tl.num_programs(0) * BLOCK)``, a
    persistent kernel's loop over its tiles) runs each of its trips in one program: a
    launch runs them all, however many programs share them (programs past the last trip
    run none).  Counted as one trip a program, a persistent matmul over a grid of two
    was priced at a tenth of its operations.  A loop whose step is not the program count
    times its start's stride (``range(pid, n, 2)``) counts once, as any untold loop."""
    from sweeper.plan import declared_counts
    from sweeper.space import Config, Problem

    name, marker = module(STRIDED)
    _, _, ops = declared_counts(f"{name}:strided")
    assert ops is not None
    n, block = 4096, 256
    tiles = n // block
    config = Config(Problem("float32", n, (("n", n),)), grid=grid, block=64,
                    meta={"BLOCK": block})
    # each program: its id, and the third loop's trip once (an address, a store, a step);
    # each tile: the first loop's trip (offsets (2), two masks, two addresses, load,
    # store, a step) and the second's (an address, a store, a step)
    per_program = 1 + 3
    assert ops(config) == grid * per_program + tiles * (2 + 2 + 2 + 2 + 1) + tiles * 3
    assert not marker.exists()
