"""A ``@triton.autotune`` function declared in another module than the launcher a space
names (``from pkg.lib import add_kernel``): ``sweeper plan``, which reads source and runs
none, follows the import into that module as ``sweeper run``'s import finds it, so both
see the same configs and key, and a triton export keys on the autotuner's key; an import
only running the module resolves is named, with where and what to do."""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sweeper.cli import main

#: Top-level code every module below runs when imported: a marker file plan must not leave.
MARK = 'from pathlib import Path\nPath(__file__).with_suffix(".imported").write_text("ran")\n'


def _jitted_add() -> str:
    """``tests/short_kernels_for_tests.py``'s ``add_kernel`` as its source reads, under
    ``@triton.jit`` alone."""
    text = (Path(__file__).parent / "short_kernels_for_tests.py").read_text()
    start = text.index("@triton.jit\ndef add_kernel(")
    return text[start:text.index("\n\n\n", start)] + "\n"


JITTED = _jitted_add()

#: The module declaring the autotuned function, two configs of ``add_kernel``.
LIB = MARK + '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128}, num_warps=1),
                          triton.Config({"BLOCK_SIZE": 256}, num_warps=2)],
                 key=["n_elements"])
''' + JITTED

#: The launcher: ``{imports}`` binds the autotuned function, ``{kern}`` names it.  Its
#: dimension ``rows`` is none of the key's, so a key of every dimension shows.
LAUNCHER = MARK + '''
import sweeper
{imports}


@sweeper.kernel(inputs={{"x": "n_elements", "y": "n_elements"}},
                outputs={{"out": "n_elements"}}, dims={{"n_elements": 4096, "rows": 1}},
                grid="cdiv(n_elements, BLOCK_SIZE)", footprint_bytes="n_elements * itemsize",
                reference=lambda x, y: x + y, autotuned={kern})
def add(x, y, out, config):
    {kern}.fn[(config.grid,)](x, y, out, x.numel(), num_warps=config.num_warps,
                              **config.meta)
'''

#: The ways a module imports a name of another: (its imports, how it names the
#: function, its package's ``__init__``); ``{pkg}`` is the package.
FOLLOWED = {
    "absolute": ("from {pkg}.lib import add_kernel", "add_kernel", ""),
    "relative": ("from .lib import add_kernel", "add_kernel", ""),
    "alias": ("from .lib import add_kernel as tuned", "tuned", ""),
    "module": ("import {pkg}.lib", "{pkg}.lib.add_kernel", ""),
    "module-alias": ("import {pkg}.lib as lib", "lib.add_kernel", ""),
    "submodule": ("from . import lib", "lib.add_kernel", ""),
    "re-export": ("from {pkg} import add_kernel", "add_kernel",
                  "from .lib import add_kernel\n"),
    "star": ("from {pkg} import add_kernel", "add_kernel", "from .lib import *\n"),
    "name-bound": ("from .lib import add_kernel\nkern = add_kernel", "kern", ""),
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch) -> Iterator[Callable[..., str]]:
    """Write a package in the working folder (``__init__``, ``lib.py`` with the
    autotuned function unless given another, ``kernels.py`` the launcher) and return its
    name; its modules are taken out of ``sys.modules`` after the test."""
    monkeypatch.chdir(tmp_path)
    names: list[str] = []

    def write(imports: str, kern: str, init: str = "", lib: str = LIB) -> str:
        name = f"userpkg_{uuid.uuid4().hex[:8]}"
        names.append(name)
        folder = tmp_path / name
        folder.mkdir()
        (folder / "__init__.py").write_text(MARK + init)
        (folder / "lib.py").write_text(lib)
        (folder / "kernels.py").write_text(LAUNCHER.format(
            imports=imports.format(pkg=name), kern=kern.format(pkg=name)))
        return name

    yield write
    for name in names:
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]


def _plan(tmp_path: Path, capsys, name: str) -> tuple[int, str, str]:
    (tmp_path / "s.yaml").write_text(f"from_autotune: {name}.kernels:add\n")
    rc = main(["plan", str(tmp_path / "s.yaml"), "--device", "interpret"])
    captured = capsys.readouterr()
    assert not list(tmp_path.rglob("*.imported")), "plan ran the user's code"
    return rc, captured.out, captured.err


@pytest.mark.parametrize("imports, kern, init", FOLLOWED.values(), ids=FOLLOWED)
def test_plan_follows_the_import_of_the_autotuned_function(package, tmp_path, capsys,
                                                            imports, kern, init):
    """Each way of importing the autotuned function from another module is followed:
    plan lists its two configs, where it refused the file as though they were computed,
    and the declaration read from source has the autotuner's key."""
    from sweeper.plugins import kernel_declaration

    name = package(imports, kern, init)
    rc, out, err = _plan(tmp_path, capsys, name)
    assert rc == 0, err
    assert out.startswith(f"space {tmp_path / 's.yaml'}: 2 configs (grid 1 × dtype 1 × "
                          "cache 1 × n_elements 1 × rows 1 × autotune 2)"), out
    declared = kernel_declaration(f"{name}.kernels:add", user_code=False)
    assert declared.autotune_key == ("n_elements",) and declared.unread == ()


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_run_and_plan_see_the_same_autotuner_and_the_export_keys_on_its_key(
        package, tmp_path, capsys, form):
    """``run`` imports the launcher (and so ``lib``) and plan reads both files: the same
    configs and key.  The triton export, which reads the declaration from source, keys
    on the autotuner's key, not on every dimension (``n_elements, rows``)."""
    from sweeper.kernels import kernel_class
    from sweeper.plugins import kernel_declaration
    from sweeper.space import load_space

    imports, kern, init = FOLLOWED[form]
    name = package(imports, kern, init)
    target = f"{name}.kernels:add"
    assert _plan(tmp_path, capsys, name)[0] == 0
    read = load_space(tmp_path / "s.yaml", user_code=False)
    assert not list(tmp_path.rglob("*.imported"))
    imported = load_space(tmp_path / "s.yaml", user_code=True)
    assert read.ties == imported.ties and len(read.ties[0].rows) == 2
    assert kernel_declaration(target, user_code=False).autotune_key == \
        kernel_class(target).autotune_key == ("n_elements",)

    studies = tmp_path / "studies"
    assert main(["run", "--from-autotune", target, "--device", "interpret", "-p",
                 "n_elements=2048", "--studies-dir", str(studies), "--quiet",
                 "--no-report"]) == 0
    out = tmp_path / "tuned_add.py"
    capsys.readouterr()
    assert main(["export", str(studies / "add-interpret"), "--format", "triton", "-o",
                 str(out)]) == 0
    said = capsys.readouterr()
    assert said.out.rstrip().endswith("configs(k=4) feeds @triton.autotune)"), said
    assert "warning" not in said.err, said.err
    module = _module(out)
    assert module.key == ["n_elements"] and module.DIMS == ["n_elements", "rows"]


#: Imports only running the module resolves: (its imports, its package's ``__init__``,
#: what plan says of it).
UNFOLLOWED = {
    "importlib": (
        "import importlib\nadd_kernel = importlib.import_module('{pkg}.lib').add_kernel", "",
        "`importlib.import_module('{pkg}.lib').add_kernel` at kernels.py:6 is what only "
        "running the module gives; bind it at the module's top level (from MODULE import "
        "add_kernel) for plan to follow it"),
    "try": (
        "try:\n    from .lib import add_kernel\nexcept ImportError:\n    add_kernel = None",
        "", "add_kernel is bound at kernels.py:6 (`from .lib import add_kernel`) inside "
        "`try:` at kernels.py:5, which only running the module resolves; bind it at the "
        "module's top level (from MODULE import add_kernel) for plan to follow it"),
    "no-module": (
        "from {pkg}.library import add_kernel", "",
        "`from {pkg}.library import add_kernel` at kernels.py:5: {pkg}.library is not "
        "found in the working folder nor on the import path, where `sweeper run` imports "
        "it from"),
    "no-name": (
        "from .lib import add_kernal as add_kernel", "",
        "{pkg}/lib.py binds no add_kernal at its top level"),
    "loop": (
        "from {pkg} import add_kernel", "from .kernels import add_kernel\n",
        "is followed through more than 32 names and imports (do modules import one "
        "another in a loop?)"),
}


@pytest.mark.parametrize("imports, init, why", UNFOLLOWED.values(), ids=UNFOLLOWED)
def test_an_import_plan_cannot_follow_is_named_with_where_and_why(package, tmp_path,
                                                                   capsys, imports, init,
                                                                   why):
    """Where only running the module tells what the autotuned function is, plan refuses
    the file on one line saying where and why, exit 2, not that the configs are not
    literals."""
    name = package(imports, "add_kernel", init)
    rc, out, err = _plan(tmp_path, capsys, name)
    assert (rc, out) == (2, "")
    assert err.startswith(f"{tmp_path / 's.yaml'}:1: from_autotune: the configs of "
                          f"'{name}.kernels:add' could not be read from its source "
                          "(autotuned= at kernels.py:"), err
    assert why.format(pkg=name) in err and err.count("\n") == 1, err


def test_the_followed_modules_own_names_are_read_there(package, tmp_path, capsys):
    """The autotuner's configs bound to a name of ``lib``, itself imported from a third
    module, are read where they are bound; one ``lib`` computes is named at its own
    line in ``lib``, not the launcher's."""
    configs = ('[triton.Config({"BLOCK_SIZE": 128}, num_warps=1),\n'
               '                          triton.Config({"BLOCK_SIZE": 256}, num_warps=2)]')
    lib = LIB.replace(configs, "CONFIGS").replace(
        "import triton\n", "import triton\nfrom .tunings import CONFIGS\n", 1)
    name = package("from .lib import add_kernel", "add_kernel", lib=lib)
    (tmp_path / name / "tunings.py").write_text(f"import triton\n\nCONFIGS = {configs}\n")
    rc, out, err = _plan(tmp_path, capsys, name)
    assert rc == 0 and "2 configs (" in out, err

    (tmp_path / name / "tunings.py").write_text(
        "import triton\n\ndef configs():\n    return []\n\nCONFIGS = configs()\n")
    rc, _, err = _plan(tmp_path, capsys, name)
    assert rc == 2 and f"(autotuned= at kernels.py:11 (not a literal at {name}/lib.py:9))" \
        in err, err


def _module(path: Path) -> Any:
    """The module a triton export wrote at ``path``, imported."""
    spec = importlib.util.spec_from_file_location(f"tuned_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_export_keys_on_the_autotuner_the_run_imported(package, tmp_path, capsys):
    """A study of a launcher whose autotuned function only running it resolves: ``run``
    imports it, measures, and keeps the autotuner's key in study.json; the triton
    export keys on that key (``n_elements``), not on every dimension, though the source
    does not show the autotuner.  A study an older sweeper wrote keeps none: its export
    reads the source, keys on every dimension and says why, and what to do, rather than
    blaming an unread launch."""
    imports, _, _ = UNFOLLOWED["importlib"]
    name = package(imports, "add_kernel")
    studies = tmp_path / "studies"
    assert main(["run", "--from-autotune", f"{name}.kernels:add", "--device", "interpret",
                 "-p", "n_elements=2048", "--studies-dir", str(studies), "--quiet",
                 "--no-report"]) == 0
    study = studies / "add-interpret" / "study.json"
    meta = json.loads(study.read_text())
    assert meta["autotune_key"] == ["n_elements"]
    capsys.readouterr()
    out = tmp_path / "tuned_add.py"
    assert main(["export", str(studies / "add-interpret"), "--format", "triton", "-o",
                 str(out)]) == 0
    said = capsys.readouterr().out
    assert said.rstrip().endswith("configs(k=4) feeds @triton.autotune)"), said
    assert _module(out).key == ["n_elements"]

    del meta["autotune_key"]                        # as an older sweeper wrote it
    study.write_text(json.dumps(meta))
    out.unlink()
    assert main(["export", str(studies / "add-interpret"), "--format", "triton", "-o",
                 str(out)]) == 0
    said_then = capsys.readouterr().out
    assert ("; key lists every dimension (n_elements, rows): the @triton.autotune key of "
            f"{name}.kernels:add could not be read from its source (autotuned= at "
            "kernels.py:") in said_then, said_then
    assert ("for plan to follow it)); pass @triton.autotune its own key in place of the "
            "module's `key`") in said_then
    assert _module(out).key == ["n_elements", "rows"]


def test_a_jitted_function_imported_from_another_module_gives_the_exports_key(
        package, tmp_path, capsys, write_space):
    """A plain launcher (no ``autotuned=``) of a ``@triton.jit`` function imported from
    another module: the export's key is the dimensions that are arguments of that
    function, read in the module that defines it, not every dimension."""
    lib = LIB[:LIB.index("@triton.autotune(")] + JITTED
    name = package("from .lib import add_kernel", "add_kernel", lib=lib)
    kernels = tmp_path / name / "kernels.py"
    kernels.write_text(kernels.read_text().replace(", autotuned=add_kernel", ", meta="
                                                   "{'BLOCK_SIZE': 128}")
                       .replace("add_kernel.fn[", "add_kernel["))
    space = write_space(f"""
        study: add
        kernel: {name}.kernels:add
        sampler: exhaustive
        params: {{BLOCK_SIZE: [128, 256], block: [32], n_elements: [2048]}}
        measure: {{warmup: 1, repeat: 3}}
    """)
    studies = tmp_path / "studies"
    assert main(["run", str(space), "--device", "interpret", "--studies-dir", str(studies),
                 "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["export", str(studies / "add-interpret"), "--format", "triton", "-o",
                 str(tmp_path / "tuned_add.py")]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "key ['n_elements']: rows is no argument of the kernel (configs(**dims) and "
        "pick(**dims) take every dimension)")


def test_the_refusal_docs_space_md_shows_is_as_printed(tmp_path, monkeypatch, capsys):
    """docs/space.md's refusal of an autotuned function imported inside ``try:``, line
    for line, from a package ``pkg`` in the working folder."""
    from tests.conftest import ROOT

    shown = [line for line in (ROOT / "docs/space.md").read_text().splitlines()
             if line.startswith("s.yaml:1: from_autotune: ")]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(MARK)
    (tmp_path / "pkg" / "lib.py").write_text(LIB)
    (tmp_path / "pkg" / "kernels.py").write_text(LAUNCHER.format(
        imports="\ntry:\n    from .lib import add_kernel\nexcept ImportError:\n"
                "    from lib import add_kernel", kern="add_kernel").removeprefix(MARK)
        .lstrip("\n"))
    (tmp_path / "s.yaml").write_text("from_autotune: pkg.kernels:add\n")
    assert main(["plan", "s.yaml", "--device", "interpret"]) == 2
    assert [capsys.readouterr().err.removeprefix("sweeper: ").rstrip("\n")] == shown
    assert not list(tmp_path.rglob("*.imported"))
