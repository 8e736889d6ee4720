"""The layering rule: what may import what (docs/architecture.md, "Layering").

1. ``import sweeper``, parsing a space file, the errors, the records, the CLI's argument
   parsing, the compile pool and the driver query import no torch, triton, optuna or
   pandas: a command pays for those only when it runs kernels, samplers or reports (a
   compile process imports triton alone).
2. The subpackages ``space``, ``kernels``, ``samplers``, ``devices``, ``measure``,
   ``store`` and ``report`` import each other without a loop.  Every import counts, the
   ones inside functions too: an import deferred into a function is still a dependency
   (the loop between space and kernels was one), it only changes when its cost is paid.
   The plugin registry, ``sweeper.plugins``, is outside the subpackages on purpose: the
   space parser asks it for a kernel's declaration and the sampler names, and it imports
   plugins by their ``module:attr`` name when they are loaded.
3. No module of ``sweeper/`` is part of an import circle, top-level modules and package
   ``__init__`` files included.  Every import counts, inside functions and under ``if
   TYPE_CHECKING:`` too: a type one module takes from another ties the two as a call
   does, and a circle of types only is a circle the next runtime import closes.
4. ``sweeper.sweep`` and ``sweeper.cli``, packages of private modules, keep the names
   their callers import from them.
5. Only the command line knows argparse: no module outside ``sweeper.cli`` imports it, and
   neither the engine nor the Python API imports anything of ``sweeper.cli``.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "triton", "optuna", "pandas")
SUBPACKAGES = ("space", "kernels", "samplers", "devices", "measure", "store", "report")

#: Run in a fresh interpreter from the repository root: each step notes which heavy
#: modules are imported once it is done.
LIGHT_STEPS = r'''
import contextlib, io, json, sys

HEAVY = %r
steps = {}


def note(step):
    steps[step] = sorted(m for m in HEAVY if m in sys.modules)


import sweeper
assert sweeper.SweeperError and "tuned" in dir(sweeper)
note("import sweeper")
from sweeper.space import load_space
space = load_space("spaces/copy.yaml")
assert space.kernel == "copy" and space.size == 210 and space.axis("BLOCK").labels
note("load_space('spaces/copy.yaml')")
import sweeper.errors
import sweeper.store._records
note("sweeper.errors and sweeper.store._records")
import sweeper.sweep._compile_main, sweeper.sweep._compile_pool, sweeper.devices._gpu_query
note("the compile pool and the driver query (a run starts them before its own imports)")
from sweeper.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--help"])
    except SystemExit as exit:
        assert exit.code == 0
assert out.getvalue().startswith("usage: sweeper"), out.getvalue()
note("sweeper --help")
with contextlib.redirect_stderr(err):
    assert main(["run", "spaces/copy.yaml", "--trials", "0"]) == 2
assert "--trials: '0' is not a whole number >= 1" in err.getvalue(), err.getvalue()
note("sweeper run refusing a bad option")
with open("BAD_SPACE", "w") as f:
    f.write("kernel: copy\nparams:\n  BLOCK: [300]\n")
with contextlib.redirect_stderr(err):
    assert main(["run", "BAD_SPACE"]) == 2
assert "BAD_SPACE:3: params.BLOCK[0]: 300 is not a power of two" in err.getvalue()
note("sweeper run refusing a bad space file")
import glob
with contextlib.redirect_stdout(out):
    for path in sorted(glob.glob("spaces/*.yaml")):
        assert main(["plan", path]) == 0, path
note("sweeper plan on every shipped space file (the CUDA device's stand-in)")
with contextlib.redirect_stdout(out):
    assert main(["schema"]) == 0 and main(["kernels"]) == 0
    assert main(["kernels", "--json"]) == 0
note("sweeper schema, kernels and kernels --json")
print(json.dumps(steps))
'''


def test_parsing_and_the_cli_edge_import_no_torch_triton_optuna_or_pandas(tmp_path):
    bad = tmp_path / "bad.yaml"
    script = (LIGHT_STEPS % (HEAVY,)).replace("BAD_SPACE", str(bad))
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    steps = json.loads(run.stdout.splitlines()[-1])
    assert len(steps) == 9
    assert all(not heavy for heavy in steps.values()), \
        f"imported after each step: {json.dumps(steps, indent=1)}"


#: A resume in a fresh interpreter, torch imported first where asked (as a resume that
#: imported it did): what it printed, and whether torch was imported after.
RESUME = r'''
import contextlib, io, json, sys
if sys.argv[1] == "torch":
    import torch
from sweeper.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["run", "spaces/copy-small.yaml", "--device", "interpret", "--studies-dir",
                 sys.argv[2]]) == 0
print(json.dumps({"out": out.getvalue(), "torch": "torch" in sys.modules,
                  "version": str(sys.modules["torch"].__version__) if sys.argv[1] else None}))
'''


def test_a_finished_study_s_resume_on_the_cpu_imports_no_torch(tmp_path):
    """A resume with nothing left to measure (every config measured, the finals run), on
    a device that opens without torch (the interpreter, a replay), imports none: torch's
    import (1.3 s on the 2-core development machine) was most of such a run's wall.  It
    prints what a resume that imported torch prints (but the time it took), and records
    torch's version as that one does."""
    studies = str(tmp_path / "st")
    first = subprocess.run([sys.executable, "-m", "sweeper", "run", "spaces/copy-small.yaml",
                            "--device", "interpret", "--studies-dir", studies, "--quiet"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    said = {}
    for imported in ("", "torch"):
        run = subprocess.run([sys.executable, "-c", RESUME, imported, studies], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        said[imported] = json.loads(run.stdout.splitlines()[-1])
        if not imported:
            meta = json.loads((tmp_path / "st" / "copy-small-interpret" / "study.json")
                              .read_text())
            recorded = meta["environment"]["torch"]
    assert not said[""]["torch"]
    assert "nothing left to measure: the study holds every one" in said[""]["out"]
    assert _untimed(said[""]["out"]) == _untimed(said["torch"]["out"])
    assert recorded == said["torch"]["version"]


def _untimed(out: str) -> list[str]:
    """A run's lines but its ``time:`` line, each duration (``in 0.1 s``) masked: what
    two runs of the same work print alike."""
    return [re.sub(r"\b\d+(\.\d+)? s\b", "_ s", line) for line in out.splitlines()
            if not line.startswith("time:")]


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "sweeper" and len(parts) > 1 and parts[1] in SUBPACKAGES:
        return parts[1]
    return None


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The sweeper modules an import statement names (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{alias.name}" for alias in node.names]


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) subpackage -> where (``file:line``), from every import in
    every module of the package, inside functions too."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted((ROOT / "sweeper").rglob("*.py")):
        rel = path.relative_to(ROOT)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        source = _subpackage(module)
        if source is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(rel))):
            targets = {_subpackage(name)
                       for name in _imported(node, module, path.name == "__init__.py")}
            for target in targets - {None, source}:
                edges.setdefault((source, str(target)), []).append(f"{rel}:{node.lineno}")
    return edges


def find_cycle(edges: dict[tuple[str, str], list[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes (first repeated last), or None."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}          # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_subpackages_import_each_other_without_a_loop():
    edges = import_edges()
    # the walk sees what is there: imports at the top, inside functions, relative ones
    assert ("devices", "measure") in edges and ("report", "store") in edges
    assert ("devices", "kernels") in edges      # inside a function of devices/_cuda.py
    cycle = find_cycle(edges)
    assert cycle is None, "import loop " + " -> ".join(cycle) + ": " + "; ".join(
        f"{a} -> {b} at {', '.join(edges[a, b])}" for a, b in itertools.pairwise(cycle))


def test_the_cycle_finder_finds_a_loop_and_where_it_is():
    edges = {("space", "kernels"): ["sweeper/space/_load.py:1"],
             ("kernels", "space"): ["sweeper/kernels/_base.py:2"],
             ("report", "store"): ["x"]}
    assert find_cycle(edges) == ["kernels", "space", "kernels"]
    assert find_cycle({("report", "store"): ["x"], ("store", "space"): ["y"]}) is None


def module_edges(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """Each module of ``root/sweeper`` -> the sweeper modules it imports, with the line of
    the first such import: ``from P import N`` is an import of ``P.N`` where that is a
    module, else of ``P``; imports under ``if TYPE_CHECKING:`` count as any other."""
    paths = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
             for p in sorted((root / "sweeper").rglob("*.py"))}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out = edges.setdefault(module, {})
        for node in ast.walk(tree):
            names = _imported(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom) and names:
                base, *members = names
                names = [m if m in paths else base for m in members] or [base]
            for name in names:
                target = known(name) if name.startswith("sweeper") else None
                if target is not None and target != module:
                    out.setdefault(target, node.lineno)
    return edges


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_module_is_part_of_an_import_circle():
    edges = module_edges()
    # the walk sees imports inside functions and for the type checker, and resolves names
    # to modules
    assert "sweeper.store._open" in edges["sweeper.engine._run"]
    assert "sweeper.space._yaml" in edges["sweeper.space._parser"]
    assert "sweeper.launcher" in edges["sweeper"]          # under if TYPE_CHECKING: only
    found = circles(edges)
    assert not found, "import circle(s): " + "; ".join(
        ", ".join(f"{a} -> {b} (line {edges[a][b]})" for a in c for b in edges[a] if b in c)
        for c in found)


def test_the_circle_finder_finds_every_circle_and_only_those():
    edges = {"a": {"b": 1}, "b": {"a": 2, "c": 3}, "c": {}, "d": {"e": 1}, "e": {"d": 1}}
    assert circles(edges) == [["a", "b"], ["d", "e"]]
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {}}) == []


def test_the_sweep_and_cli_packages_keep_their_public_names():
    """``sweeper.sweep`` and ``sweeper.cli`` are packages whose parts are private modules;
    what callers import from them is re-exported, and ``__all__`` names only what is there."""
    import sweeper.cli
    import sweeper.sweep
    from sweeper.cli import main
    from sweeper.study import enumerate_choices, open_study
    from sweeper.sweep import Reporter, SilentReporter, StopFlag, Sweep, SweepSummary

    assert sweeper.sweep.open_study is open_study
    assert sweeper.sweep.enumerate_choices is enumerate_choices
    assert Sweep.__module__ == "sweeper.sweep._loop" and StopFlag().set is False
    assert SweepSummary().stopped_by == "" and SilentReporter().finish() is None
    assert Reporter.__module__ == "sweeper.sweep._summary"
    assert callable(main)
    for package in (sweeper.sweep, sweeper.cli):
        assert all(hasattr(package, name) for name in package.__all__), package.__name__


def test_only_the_command_line_knows_argparse():
    """The engine and the Python API take typed options, checked by
    :mod:`sweeper.options`; only :mod:`sweeper.cli` builds a parser."""
    edges = module_edges()
    doors = [m for m in edges if m.startswith(("sweeper.api", "sweeper.engine"))]
    assert "sweeper.api._run" in doors and "sweeper.engine._run" in doors
    for module in doors:
        assert not [t for t in edges[module] if t.startswith("sweeper.cli")], module
    knows = []
    for path in sorted((ROOT / "sweeper").rglob("*.py")):
        if path.relative_to(ROOT / "sweeper").parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "argparse" for n in names):
                knows.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not knows, knows
