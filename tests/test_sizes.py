"""Size limits that keep sweeper readable (house style: modules under ~400 lines, no
function over ~60 lines without a reason).  A module or function past its limit fails
here with its ``file:line``; a reason to keep one goes in ``ALLOWED`` below, next to it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 400
FUNCTION_LINES = 60

#: ``"path"`` (a module) or ``"path:qualified.name"`` (a function) -> the most lines it may
#: have, each with a comment saying why it may exceed the limit.
ALLOWED: dict[str, int] = {}


def function_lengths(source: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (first line, lines) of every function and method in ``source``;
    a function's lines run from its first decorator to its last line."""
    found: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    found[name] = (first, (child.end_lineno or first) - first + 1)
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def oversized(root: Path) -> dict[str, tuple[str, int, int]]:
    """Each module and function under ``root/sweeper`` past its limit: key (as in
    ``ALLOWED``) -> (``file:line``, lines, limit)."""
    over: dict[str, tuple[str, int, int]] = {}
    for path in sorted((root / "sweeper").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > MODULE_LINES:
            over[rel] = (f"{rel}:1", lines, MODULE_LINES)
        for name, (first, length) in function_lengths(source).items():
            if length > FUNCTION_LINES:
                over[f"{rel}:{name}"] = (f"{rel}:{first}", length, FUNCTION_LINES)
    return over


def violations(root: Path, allowed: dict[str, int]) -> list[str]:
    """One line for each module or function past its limit (or past what ``allowed``
    grants it), and for each grant no longer needed."""
    over = oversized(root)
    found = [f"{where}: {key.partition(':')[2] or 'the module'} has {lines} lines; "
             f"allowed: {allowed.get(key, limit)}"
             for key, (where, lines, limit) in over.items() if lines > allowed.get(key, limit)]
    return found + [f"{key}: within the limits now; drop it from ALLOWED"
                    for key in sorted(set(allowed) - set(over))]


def test_modules_and_functions_stay_within_their_limits():
    found = violations(ROOT, ALLOWED)
    assert not found, "\n".join(found)


def test_the_limits_are_measured_as_stated(tmp_path):
    package = tmp_path / "sweeper"
    package.mkdir()
    def body(indent: int) -> str:         # FUNCTION_LINES - 2 lines
        return "\n".join(f"{' ' * indent}x{i} = {i}" for i in range(FUNCTION_LINES - 2))

    # a decorated function of exactly the limit, and a method of one line less
    (package / "short.py").write_text(f"@decorated\ndef fits():\n{body(4)}\n\n\n"
                                      f"class A:\n    def fits_too(self):\n{body(8)}\n")
    # a method one line over (counted from its decorator) in a module one line over
    (package / "long.py").write_text(
        f"class A:\n    @property\n    def method(self):\n{body(8)}\n        return 1\n"
        + "\n" * (MODULE_LINES - FUNCTION_LINES - 1))
    assert function_lengths((package / "short.py").read_text()) == {
        "fits": (1, FUNCTION_LINES), "A.fits_too": (FUNCTION_LINES + 4, FUNCTION_LINES - 1)}
    assert oversized(tmp_path) == {
        "sweeper/long.py:A.method": ("sweeper/long.py:2", FUNCTION_LINES + 1, FUNCTION_LINES),
        "sweeper/long.py": ("sweeper/long.py:1", MODULE_LINES + 1, MODULE_LINES)}
    assert violations(tmp_path, {"sweeper/long.py": 450, "sweeper/short.py:fits": 70}) == [
        (f"sweeper/long.py:2: A.method has {FUNCTION_LINES + 1} lines; allowed: "
         f"{FUNCTION_LINES}"),
        "sweeper/short.py:fits: within the limits now; drop it from ALLOWED"]
    assert violations(tmp_path, {})[0] == (f"sweeper/long.py:1: the module has "
                                           f"{MODULE_LINES + 1} lines; allowed: {MODULE_LINES}")
