"""spaces/ holds the examples a user should see, each listed in spaces/README.md with a
command that runs it without a GPU; the recording and benchmark spaces live in
benchmarks/spaces/, and every path the benchmarks and docs name exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

from sweeper import plugins
from sweeper.cli import main
from sweeper.kernels import load_kernel
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.sweep import enumerate_choices
from tests.conftest import ROOT

EXAMPLES = ROOT / "spaces"
RECORDINGS = ROOT / "benchmarks" / "spaces"
H200 = {"sms": 132, "l2_bytes": 60 << 20}
#: A space path as the benchmarks and docs write it: from the repository root, or from
#: docs/ with a leading ``../``.
SPACE_PATH = re.compile(r"(?<![\w/.$-])(?:\.\./)?((?:benchmarks/)?spaces/[\w.-]+\.yaml)")
#: A shell loop over space names: ``for VAR in a b c; do ... PREFIX/$VAR.yaml ... done``.
SHELL_LOOP = re.compile(r"for (\w+) in ([\w -]+); do(.*?)\bdone\b", re.DOTALL)


def readme_rows() -> dict[str, str]:
    """spaces/README.md's table: file name -> the command in its last column."""
    rows = {}
    for line in (EXAMPLES / "README.md").read_text().splitlines():
        found = re.match(r"\| \[([\w.-]+)\]\(\1\) \|.*\| `([^`]+)`[^|]*\|$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def test_every_example_loads_and_is_listed_in_the_readme():
    files = sorted(path.name for path in EXAMPLES.glob("*.yaml"))
    assert {"copy.yaml", "copy-small.yaml", "copy-oat.yaml", "add.yaml",
            "matmul.yaml"} <= set(files)
    assert sorted(readme_rows()) == files
    kernels = {load_space(EXAMPLES / name).kernel for name in files}
    assert kernels == set(plugins.KERNEL.builtins)         # one example per built-in at least


def test_every_readme_command_plans_without_a_gpu(capsys):
    replay = ("sweeper run spaces/matmul.yaml --device "
              "replay:tests/data/replay/h200-matmul.csv")
    commands = [*readme_rows().values(), replay]
    assert replay in (EXAMPLES / "README.md").read_text().replace("\n", " ")
    for command in commands:
        argv = shlex.split(command)
        assert argv[:2] in (["sweeper", "run"], ["sweeper", "plan"]), command
        if argv[1] == "plan":     # a GPU-only kernel: planned for the GPU, refused on the CPU
            space = load_space(ROOT / argv[2])
            assert load_kernel(space.kernel, space.kernel_options).needs_gpu, command
            assert "--device" not in argv, command
        else:
            device = argv[argv.index("--device") + 1]
            assert device == "interpret" or device.startswith("replay:"), command
        space = ROOT / argv[2]
        assert main(["plan", str(space), *argv[3:]]) == 0, command
        out = capsys.readouterr().out
        assert "would measure" in out and "estimated time:" in out, command


def test_the_matmul_example_measures_on_the_interpreter_with_its_header_overrides(tmp_path,
                                                                                  capsys):
    command = readme_rows()["matmul.yaml"]
    header = " ".join(line.lstrip("# ") for line in
                      (EXAMPLES / "matmul.yaml").read_text().splitlines()
                      if line.startswith("#"))
    assert command in header                           # the file says what the README says
    argv = shlex.split(command)[1:]
    argv[1] = str(ROOT / argv[1])
    assert main([*argv, "--trials", "2", "--studies-dir", str(tmp_path), "--quiet",
                 "--no-report"]) == 0
    assert "float32 M=64 N=64 K=64" in capsys.readouterr().out
    trials = StudyStore(tmp_path / "matmul-bf16-interpret").records()[0]
    assert len(trials) == 2 and all(t.ok for t in trials)


@pytest.mark.parametrize("name", ["copy.yaml", "add.yaml", "matmul.yaml"])
def test_an_example_replayed_against_a_table_has_the_configs_it_was_recorded_over(name):
    """The README and the tests replay spaces/copy.yaml against h200-copy.csv, which was
    recorded from benchmarks/spaces/copy.yaml: the two must enumerate the same configs."""
    example, _ = enumerate_choices(load_space(EXAMPLES / name), H200)
    recorded, _ = enumerate_choices(load_space(RECORDINGS / name), H200)
    assert example == recorded and len(example) > 100


def named_space_paths() -> set[str]:
    """Every space path written in benchmarks/ (scripts, spaces' comments), the docs that
    state current claims, and the READMEs; the benchmarks log is history and keeps the
    paths of its day."""
    files = [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("benchmarks/*.sh"),
             *RECORDINGS.glob("*.yaml"), *ROOT.glob("docs/*.md"), ROOT / "README.md",
             EXAMPLES / "README.md"]
    found = set()
    for path in files:
        if path.name != "benchmarks-log.md":
            found |= set(SPACE_PATH.findall(path.read_text()))
    for script in ROOT.glob("benchmarks/*.sh"):
        for var, names, body in SHELL_LOOP.findall(script.read_text()):
            for prefix in re.findall(rf"((?:benchmarks/)?spaces/)\${var}\.yaml", body):
                found |= {f"{prefix}{name}.yaml" for name in names.split()}
    return found


def test_every_space_path_the_benchmarks_and_docs_name_exists():
    named = named_space_paths()
    assert "benchmarks/spaces/copy-8m.yaml" in named            # search_efficiency's sets
    assert "benchmarks/spaces/copy-256m.yaml" in named          # record_replay.sh's loop
    assert "spaces/matmul.yaml" in named                        # gpu_run.sh's live stage
    assert len(named) > 40
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []


def test_record_heldout_takes_names_under_benchmarks_spaces_or_paths(tmp_path):
    """The script's sweeper calls, with python3 replaced by a stub that logs them."""
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls"}\n')
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}",
           "OUT": str(tmp_path / "out")}

    def runs(*args: str) -> tuple[list[str], str]:
        (tmp_path / "calls").write_text("")
        proc = subprocess.run(["bash", "benchmarks/record_heldout.sh", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=30, check=False)
        calls = (tmp_path / "calls").read_text().splitlines()
        return [c.split()[3] for c in calls if c.startswith("-m sweeper run ")], proc.stdout

    assert runs()[0] == ["benchmarks/spaces/add-256m.yaml", "benchmarks/spaces/copy-fp16.yaml",
                         "benchmarks/spaces/matmul-fp16.yaml"]
    spaces, out = runs("copy-8m", "spaces/copy-small.yaml", "nothing")
    assert spaces == ["benchmarks/spaces/copy-8m.yaml", "spaces/copy-small.yaml"]
    assert "record_heldout.sh: benchmarks/spaces/nothing.yaml: no such space file" in out
    exports = (tmp_path / "calls").read_text()
    assert f"-o {tmp_path / 'out'}/h200-copy-small.csv" in exports
