"""README.md's code blocks, run in order as a new user would, in a fresh folder, so that a
snippet that breaks fails the tests.

Its commands go through ``sweeper``'s own entry point: ``sweeper run`` without a device
runs on the interpreter (``--device interpret``, the study named as on the GPU and a
budget of a few trials), except where the README says what it prints without a GPU
(``# prints: ...``); the set-up block (venv, pip, pytest) is what CI itself runs.  Its
Python blocks run in one namespace, in order, tensors on the CPU where there is no GPU
(``"cuda"`` read as ``"cpu"``); a block whose first line is ``# NAME.py`` is that file,
written for the commands after it to import.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys

import pytest
import torch

from sweeper.cli import main
from sweeper.space import load_space
from tests.conftest import ROOT

#: The set-up block's commands: CI runs them itself (.ci/run), word for word.
SET_UP = ("python3 -m venv", "pip install", "python -m pytest")
#: Trials a `sweeper run` that needs a GPU takes on the interpreter here.
TRIALS = "6"


def blocks(text: str) -> list[tuple[int, str, str]]:
    """The fenced ``bash`` and ``python`` blocks: (line, language, text)."""
    found = []
    for match in re.finditer(r"^```(bash|python)\n(.*?)^```", text, re.S | re.M):
        found.append((text[:match.start()].count("\n") + 1, match.group(1), match.group(2)))
    return found


def _command(line: str) -> tuple[list[str], str | None]:
    """A README command line as ``sweeper``'s arguments, and what it says it prints."""
    command, _, comment = line.partition("#")
    prints = comment.strip()[len("prints:"):].strip().rstrip(". ") \
        if comment.strip().startswith("prints:") else None
    argv = shlex.split(command)
    if argv[:3] == ["python", "-m", "sweeper"]:
        argv = argv[2:]
    assert argv[0] == "sweeper", line
    return argv[1:], prints


def _on_the_interpreter(argv: list[str]) -> list[str]:
    """``run``'s arguments on the interpreter where they need a GPU."""
    if argv[0] != "run" or "--device" in argv or torch.cuda.is_available():
        return argv
    extra = ["--device", "interpret", "--trials", TRIALS, "--no-report"]
    spaces = [a for a in argv[1:] if a.endswith(".yaml")]
    if spaces:                           # the study named as the GPU's, for what follows
        extra += ["--study", load_space(spaces[0]).study]
    return [*argv, *extra]


def test_every_readme_snippet_runs(tmp_path, monkeypatch, capsys):
    for folder in ("spaces", "examples", "tests/data/replay"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, object] = {"__name__": "readme"}
    ran = 0
    for line_no, language, text in blocks((ROOT / "README.md").read_text()):
        where = f"README.md:{line_no}"
        if language == "python":
            first = text.splitlines()[0]
            if re.fullmatch(r"# \w+\.py", first):
                (tmp_path / first[2:]).write_text(text)
                continue
            if not torch.cuda.is_available():
                text = text.replace('device="cuda"', 'device="cpu"')
            exec(compile(text, where, "exec"), namespace)
            ran += 1
            continue
        for line in text.splitlines():
            if not line.strip() or line.startswith(SET_UP):
                continue
            argv, prints = _command(line)
            if prints is None:
                argv = _on_the_interpreter(argv)
            elif torch.cuda.is_available():
                continue                 # what it prints without a GPU
            rc = main(argv)
            out, err = capsys.readouterr()
            if prints is not None:
                assert prints in out + err, (where, line, out, err)
            else:
                assert rc == 0, (where, line, out, err)
            ran += 1
    assert ran >= 15
    # the exported module and the tuning file the snippets made and used
    assert (tmp_path / "tuned_copy.py").is_file() and (tmp_path / "studies" / "tuning.json")
    sys.modules.pop("tuned_copy", None)
    sys.modules.pop("mymodule", None)


@pytest.mark.parametrize("path", ["examples/scale.py"])
def test_a_readme_snippet_that_shows_a_file_is_that_file(path):
    text = (ROOT / "README.md").read_text()
    assert (ROOT / path).read_text() in {t for _, _, t in blocks(text)}


#: The hand-written pages a reader follows links through (reports under docs/raw/ and
#: studies/ are generated).
PAGES = ["README.md", "spaces/README.md", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def _anchors(page: str) -> set[str]:
    """The anchors GitHub gives ``page``'s headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated heading numbered."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+\s+(.*?)\s*$", _prose(page, spans=False), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        seen[slug if slug not in seen else f"{slug}-{seen[slug]}"] = seen.get(slug, 0) + 1
    return set(seen)


def _prose(page: str, spans: bool = True) -> str:
    """``page`` without its fenced blocks (and code spans unless ``spans`` is off), where
    ``](...)`` is no link and ``#`` no heading."""
    text = re.sub(r"^```.*?^```", "", (ROOT / page).read_text(), flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text) if spans else text


@pytest.mark.parametrize("page", PAGES)
def test_every_link_in_the_docs_leads_to_a_file_and_heading_that_exist(page):
    """A newcomer follows the README's and docs' links: each relative one names a file
    of the repository and, after ``#``, a heading of it."""
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", _prose(page)):
        if re.match(r"[a-z]+:", link):
            continue                                    # https:, mailto:
        path, _, anchor = link.partition("#")
        target = (ROOT / page).parent / path if path else ROOT / page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and \
                anchor not in _anchors(str(target.resolve().relative_to(ROOT))):
            broken.append(f"{link}: no heading #{anchor}")
    assert not broken, f"{page}: {broken}"


@pytest.mark.parametrize("page", [p for p in PAGES if p != "docs/benchmarks-log.md"])
def test_every_test_the_docs_name_exists(page):
    """A claim shown "by the test named" leads to a test of that name (the log of how the
    benchmarks were reached keeps the names of its day)."""
    defined = set(re.findall(r"^\s*(?:async )?def (test_\w+)", "\n".join(
        p.read_text() for p in (ROOT / "tests").rglob("*.py")), re.M))
    named = set(re.findall(r"`(test_\w+)(?:\[[^\]`]*\])?`", (ROOT / page).read_text()))
    assert not named - defined, f"{page}: no such test: {sorted(named - defined)}"
