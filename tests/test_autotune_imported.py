"""A ``@triton.autotune`` function declared in another module than the launcher a space
names (``from pkg.lib import add_kernel``): ``sweeper plan``, which reads source and runs
none, follows the import into that module as ``sweeper run``'s import finds it, so both
see the same configs and key, and a triton export keys on the autotuner's key; an import
only running the module resolves is named, with where and what to do."""

from __future__ import annotations

import importlib.util
import json
import shutil
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


def _write_package(folder: Path, imports: str, kern: str, init: str = "", lib: str = LIB
                   ) -> str:
    """Write a package in ``folder`` (``__init__``, ``lib.py`` with the autotuned function
    unless given another, ``kernels.py`` the launcher) and return its name."""
    name = f"userpkg_{uuid.uuid4().hex[:8]}"
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(MARK + init)
    (folder / name / "lib.py").write_text(lib)
    (folder / name / "kernels.py").write_text(LAUNCHER.format(
        imports=imports.format(pkg=name), kern=kern.format(pkg=name)))
    return name


def _forget(name: str) -> None:
    """Package ``name``'s modules out of ``sys.modules``: as a new process finds them."""
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


@pytest.fixture
def package(tmp_path: Path, monkeypatch) -> Iterator[Callable[..., str]]:
    """Write a package in the working folder (:func:`_write_package`) and return its
    name; its modules are taken out of ``sys.modules`` after the test."""
    monkeypatch.chdir(tmp_path)
    names: list[str] = []

    def write(imports: str, kern: str, init: str = "", lib: str = LIB) -> str:
        names.append(_write_package(tmp_path, imports, kern, init, lib))
        return names[-1]

    yield write
    for name in names:
        _forget(name)


@pytest.fixture
def path_package(tmp_path: Path, monkeypatch) -> Iterator[Callable[..., str]]:
    """Write a package in ``tmp_path/site``, a folder on the import path (as PYTHONPATH
    or an installed package's is), not the working folder (``tmp_path/work``), and
    return its name; its modules are taken out of ``sys.modules`` after the test."""
    site, work = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(work)
    names: list[str] = []

    def write(imports: str, kern: str, init: str = "") -> str:
        names.append(_write_package(site, imports, kern, init))
        return names[-1]

    yield write
    for name in names:
        _forget(name)


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


def test_plan_takes_the_declared_grid_where_only_the_autotuner_is_unread(package, tmp_path,
                                                                          capsys):
    """A ``kernel:`` space of a launcher whose autotuned function only running it
    resolves: plan takes the ``grid=`` its declaration gives (not the base Kernel's
    ``cdiv(n, BLOCK)``, refused as though the declaration gave none), and asks for the
    block the space leaves out, which is the autotuner's first config's warps, saying
    why it could not be read, rather than guessing it."""
    imports, _, _ = UNFOLLOWED["importlib"]
    name = package(imports, "add_kernel")
    space = tmp_path / "k.yaml"
    params = "params: {BLOCK_SIZE: [128], n_elements: [1024]"
    space.write_text(f"kernel: {name}.kernels:add\n{params}, block: [64]}}\n")
    assert main(["plan", str(space), "--device", "interpret"]) == 0
    assert capsys.readouterr().out.startswith(f"space {space}: 1 config (grid 1 × block 1 ")
    space.write_text(f"kernel: {name}.kernels:add\n{params}}}\n")
    assert main(["plan", str(space), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{space}:1: kernel: kernel {name}.kernels:add's default block could not be "
        f"read from its source (autotuned= at kernels.py:12 (`importlib.import_module("
        f"'{name}.lib').add_kernel` at kernels.py:6 is what only running the module gives; "
        "bind it at the module's top level (from MODULE import add_kernel) for plan to "
        "follow it)), and the file gives no params.block; allowed: params.block\n")
    assert not list(tmp_path.rglob("*.imported"))


def _run_add(target: str, studies: Path) -> Path:
    """Run ``--from-autotune target`` (two configs, ``n_elements=2048``) on the
    interpreter into ``studies``; the study's folder."""
    assert main(["run", "--from-autotune", target, "--device", "interpret", "-p",
                 "n_elements=2048", "--studies-dir", str(studies), "--quiet",
                 "--no-report"]) == 0
    return studies / "add-interpret"


def test_an_export_of_a_package_on_the_import_path_warns_of_nothing_false(
        path_package, tmp_path, capsys):
    """A study of a launcher in a package on the import path, not in the working folder,
    whose autotuned function only running it resolves (``importlib``): its exports read
    its space back without user code, the configs it ran from study.json and the grid
    from the declaration's ``grid=``, so neither says the space no longer reads here nor
    that the kernel's options (it takes none) are lost.  Each writes the autotuner's key,
    the grid and the footprint rule, and compares the kernel's source: an edit of its
    module since is said; the package gone, that the space no longer reads, and nothing
    of options, which the kernel takes none of."""
    imports, _, _ = UNFOLLOWED["importlib"]
    name = path_package(imports, "add_kernel")
    study = _run_add(f"{name}.kernels:add", tmp_path / "studies")
    capsys.readouterr()
    module, tuning = tmp_path / "tuned_add.py", tmp_path / "tuning.json"
    for argv in (["--format", "triton", "-o", str(module)], ["-o", str(tuning)]):
        assert main(["export", str(study), *argv]) == 0
        assert capsys.readouterr().err == "", argv
    tuned = _module(module)
    assert tuned.key == ["n_elements"] and tuned.DIMS == ["n_elements", "rows"]
    best = tuned.configs(k=1)[0]
    assert tuned.grid(best.all_kwargs(), n_elements=4096) == \
        (4096 // best.kwargs["BLOCK_SIZE"],)
    [entry] = json.loads(tuning.read_text())["entries"]
    assert (entry["grid_expr"], entry["footprint_expr"]) == \
        ("cdiv(n_elements, BLOCK_SIZE)", "n_elements * itemsize")

    _forget(name)                                   # a new process, the module edited
    with (tmp_path / "site" / name / "kernels.py").open("a") as source:
        source.write("# edited\n")
    assert main(["export", str(study), "-o", str(tmp_path / "again.json")]) == 0
    assert capsys.readouterr().err.startswith(
        f"sweeper: warning: study add-interpret: the source of {name}.kernels:add changed "
        "since the study measured it; ")

    shutil.rmtree(tmp_path / "site" / name)         # gone: its space reads here no more
    _forget(name)
    assert main(["export", str(study), "-o", str(tmp_path / "gone.json")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "sweeper: warning: study add-interpret: its space no longer reads here ("), err
    assert err.rstrip().endswith(   # and nothing of options, which the kernel takes none of
        "): the source of its kernel is not checked against the one it measured; run the "
        "export from the folder the study was run in, with the files its space names there")


def test_an_autotuned_study_whose_module_is_gone_is_exported_from_its_study(
        path_package, tmp_path, capsys):
    """The package of an autotuned study's launcher gone since the run: the triton export
    writes the module from the autotuner's key and the footprint rule the study kept,
    saying that the kernel's source was not compared, rather than refusing.  A study an
    older sweeper wrote keeps no key: it is refused in one line, exit 2, saying what
    study.json does not keep and what to do, and nothing is written."""
    from sweeper.errors import StaleTuningWarning

    name = path_package(*FOLLOWED["absolute"][:2])
    study = _run_add(f"{name}.kernels:add", tmp_path / "studies")
    shutil.rmtree(tmp_path / "site" / name)
    _forget(name)
    capsys.readouterr()
    out = tmp_path / "tuned_add.py"
    assert main(["export", str(study), "--format", "triton", "-o", str(out)]) == 0
    said = capsys.readouterr()
    assert said.out.rstrip().endswith("configs(k=4) feeds @triton.autotune)"), said
    assert said.err.count("\n") == 1 and said.err.startswith(
        "sweeper: warning: study add-interpret: its space no longer reads here ("), said.err
    assert said.err.rstrip().endswith(
        "): the source of its kernel is not checked against the one it measured; run the "
        "export from the folder the study was run in, with the files its space names there")
    with pytest.warns(StaleTuningWarning, match="that cannot be found here to compare"):
        tuned = _module(out)
    assert tuned.key == ["n_elements"] and tuned.DIMS == ["n_elements", "rows"]
    best = tuned.configs(k=1)[0]
    assert tuned.grid(best.all_kwargs(), n_elements=4096) == \
        (4096 // best.kwargs["BLOCK_SIZE"],)
    assert tuned._FOOTPRINT({"n_elements": 10, "itemsize": 4}) == 40   # the study's rule

    meta = json.loads((study / "study.json").read_text())
    del meta["autotune_key"]                        # as an older sweeper wrote it
    (study / "study.json").write_text(json.dumps(meta))
    older = tmp_path / "tuned_older.py"
    assert main(["export", str(study), "--format", "triton", "-o", str(older)]) == 2
    assert capsys.readouterr().err == (
        f"sweeper: kernel {name}.kernels:add: its module {name}.kernels is neither imported "
        f"nor a file on the import path (the current folder, {tmp_path / 'work'}, first): "
        "renamed, moved, or the study was run in another folder; the export reads the "
        "kernel's key and footprint from its source, as its study.json does not keep the "
        "autotuner's key (the kernel declares no autotuned=, or an older sweeper ran it): "
        "allowed: export from the folder that holds it, or with that folder on PYTHONPATH\n")
    assert not older.exists()
