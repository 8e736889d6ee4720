"""CI runs what the docs say it runs: README's two set-up commands, then ruff and mypy
from the same install (docs/architecture.md, "Checks"), then the report's tests under the
oldest pandas of each line allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _commands(text: str) -> list[str]:
    """A shell text's commands: no comments, no blank lines, no ``set`` options."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("set ")]


def _bash_block(markdown: str, after: str) -> str:
    """The first ```bash block after the heading ``after``."""
    section = markdown[markdown.index(after):]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found, f"no bash block after {after!r}"
    return found.group(1)


def test_ci_runs_the_readme_set_up_then_the_linters():
    readme = _bash_block((ROOT / "README.md").read_text(encoding="utf-8"), "## Set up")
    ci_text = (ROOT / ".ci/run").read_text(encoding="utf-8")
    marker = '# README.md "Set up", word for word:'
    older = "# The report's tests again under the oldest pandas"
    assert marker in ci_text and older in ci_text
    ci = _commands(ci_text.split(marker, 1)[1].split(older, 1)[0])
    assert ci == [*_commands(readme), "ruff check .", "mypy"]
    checks = _bash_block((ROOT / "docs/architecture.md").read_text(encoding="utf-8"),
                         "## Checks")
    assert _commands(checks) == ci[-3:]


def test_ci_starts_in_a_fresh_virtual_environment():
    """A new user's environment, not the machine's: the README's first command makes a
    fresh venv (``--clear``) and enters it, so nothing installed by hand can hide a
    missing dependency of the ``test`` extra."""
    first = _commands(_bash_block((ROOT / "README.md").read_text(encoding="utf-8"),
                                  "## Set up"))[0]
    assert first.startswith("python3 -m venv --clear .venv") and ". .venv/bin/activate" in first


def test_ci_makes_the_postgresql_tests_required():
    ci_text = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "apt-get install -y -qq postgresql" in ci_text
    assert "export SWEEPER_TEST_POSTGRES=required" in ci_text


def test_ci_makes_the_browser_tests_required():
    ci_text = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "apt-get install -y -qq chromium" in ci_text
    assert "export SWEEPER_TEST_BROWSER=required" in ci_text


def test_the_readme_install_brings_the_linters():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = re.search(r"\.\[(\w+)\]", _bash_block(
        (ROOT / "README.md").read_text(encoding="utf-8"), "## Set up")).group(1)
    names = {re.match(r"[A-Za-z0-9_.-]+", req).group(0)
             for req in project["project"]["optional-dependencies"][extra]}
    assert {"pytest", "ruff", "mypy"} <= names
    if "-n" in project["tool"]["pytest"]["ini_options"]["addopts"].split():
        assert "pytest-xdist" in names          # the plugin that reads pytest's -n
    assert "ruff" in project["tool"] and "mypy" in project["tool"]


def test_ci_tests_the_report_under_the_oldest_pandas_allowed():
    """pyproject.toml's pandas floor is what CI tests: each line's oldest release runs the
    report's tests after the newest ran the suite."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (floor,) = [r for r in project["project"]["dependencies"] if r.startswith("pandas")]
    ci_text = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert floor == "pandas>=2.2" and '"pandas==2.2.*" "pandas==3.0.*"' in ci_text
