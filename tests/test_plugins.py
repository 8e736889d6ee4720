"""The plugin registry (``sweeper/plugins.py``): a kernel, a sampler or a device comes from
a built-in name, an installed distribution's entry point or a ``module:attr`` path; each is
checked when loaded, every error names the plugin and where it came from, and the core
asks what a plugin declares it can do, never its name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any, ClassVar

import optuna
import pytest

from sweeper import plugins
from sweeper.cli import main
from sweeper.devices import PlanCosts
from sweeper.devices._interpret import InterpretDevice
from sweeper.errors import SweeperError
from sweeper.kernels import kernel_class
from sweeper.plugins import declares
from sweeper.samplers import ExhaustiveSampler, SamplerContext
from sweeper.space import load_space
from sweeper.store import DriftRecord, StudyStore

ROOT = Path(__file__).resolve().parent.parent

#: A plugin package as a third party writes it: a kernel in plain torch, a sampler that
#: proposes the valid configs last to first, and a device timed by the host clock.
PACKAGE = '''
from __future__ import annotations

import optuna
import torch

from sweeper.devices import Device, DeviceFacts
from sweeper.kernels import Buffers, Kernel, MetaParam, fill_random
from sweeper.measure import time_host
from sweeper.plugins import declares


class Double(Kernel):
    """y = 2 x in steps of CHUNK elements, with torch alone."""

    name = "double"
    meta_params = {"CHUNK": MetaParam(default=256, pow2=True, doc="elements per step")}
    defaults = {"grid": 1, "block": 32, "dtype": "float32", "footprint": "4KiB"}

    def allocate(self, problem, device):
        x = torch.empty(problem.n, dtype=getattr(torch, problem.dtype), device=device)
        return Buffers(problem, {"x": x, "y": torch.empty_like(x)})

    def randomize(self, buffers, generator):
        fill_random(buffers["x"], generator)

    def poison(self, buffers):
        buffers["y"].fill_(float("nan"))

    def launch(self, buffers, config):
        x, y, step = buffers["x"], buffers["y"], config.meta["CHUNK"]
        for start in range(0, x.numel(), step):
            torch.mul(x[start:start + step], 2, out=y[start:start + step])

    def check(self, buffers):
        return None if torch.equal(buffers["y"], 2 * buffers["x"]) else "y is not 2 x"

    def bytes_moved(self, problem):
        return 2 * problem.footprint

    def model(self, config, facts):
        return float(config.meta["CHUNK"])


CALLS = []


class Backwards(optuna.samplers.BaseSampler):
    def __init__(self, choices):
        self.queue = [dict(c) for c in reversed(choices)]
        self.current = self.queue[0]

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def before_trial(self, study, trial):
        if self.queue:
            self.current = self.queue.pop(0)

    def sample_independent(self, study, trial, name, distribution):
        return self.current[name]


@declares(uses_model=True, needs_finals=False)
def backwards(context):
    CALLS.append({"seed": context.seed, "choices": len(context.choices),
                  "guesses": context.guesses})
    return Backwards(context.choices)


def forwards(spec, choices, axes, priors, guesses):
    """A factory of the five positional arguments that sweeper no longer passes."""
    return Backwards(list(reversed(choices)))


class HostDevice(Device):
    name = "host"
    torch_device = "cpu"
    note = "host-timed CPU runs of a plugin device"

    def facts(self):
        return DeviceFacts(name="host CPU", sms=2, l2_bytes=1 << 20)

    def time(self, launch, *, warmup, repeat, flush):
        return time_host(launch, warmup=warmup, repeat=repeat)

    def synchronize(self):
        return None
'''
#: What ``pip install`` writes for a pyproject.toml that declares, under
#: ``[project.entry-points."sweeper.kernels"]`` (and the two other groups), these lines.
ENTRY_POINTS = """
[sweeper.kernels]
double = sweeper_tinyplug:Double

[sweeper.samplers]
backwards = sweeper_tinyplug:backwards
forwards = sweeper_tinyplug:forwards

[sweeper.devices]
host = sweeper_tinyplug:HostDevice
"""
SCALE_SPACE = """
study: scaled
kernel: double
sampler: backwards
params:
  CHUNK: [64, 128, 256, 512]
measure: {warmup: 1, repeat: 3}
"""


def install(site: Path, name: str, version: str, entry_points: str,
            modules: dict[str, str] | None = None) -> None:
    """A distribution as an installer leaves it in ``site``: its modules and a dist-info
    folder with its metadata and entry points."""
    site.mkdir(exist_ok=True)
    for module, text in (modules or {}).items():
        (site / f"{module}.py").write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip())


@pytest.fixture
def tinyplug(tmp_path, monkeypatch):
    """The plugin package installed on a ``sys.path`` entry of its own."""
    site = tmp_path / "site"
    install(site, "sweeper-tinyplug", "0.1", ENTRY_POINTS, {"sweeper_tinyplug": PACKAGE})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    yield site
    sys.modules.pop("sweeper_tinyplug", None)


def test_an_installed_package_adds_a_kernel_a_sampler_and_a_device(tinyplug, tmp_path,
                                                                     capsys):
    (tmp_path / "scale.yaml").write_text(SCALE_SPACE)
    assert main(["run", "scale.yaml", "--device", "host", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "study scaled-host: studies/scaled-host (new)" in out
    assert "device: host CPU (2 SMs, 1MiB L2)\nnote: host-timed CPU runs of a plugin device" in out
    assert "sampler backwards (seed 0)" in out and "cache cold (no L2 flush on this device" in out
    assert "done: 4 measured, 0 failed" in out
    assert "interleaved" not in out                 # the sampler declares needs_finals=False
    store = StudyStore(tmp_path / "studies" / "scaled-host")
    trials = store.records()[0]
    assert [t.choice["CHUNK"] for t in trials] == ["512", "256", "128", "64"]   # backwards
    assert all(t.ok and t.samples_ms for t in trials)
    # uses_model: the sampler got the kernel model's guess of each valid config
    calls = sys.modules["sweeper_tinyplug"].CALLS
    assert calls == [{"seed": 0, "choices": 4, "guesses": (64.0, 128.0, 256.0, 512.0)}]
    meta = store.meta()
    assert (meta["kernel"], meta["sampler"]["name"], meta["environment"]["device"],
            meta["finals"]) == ("double", "backwards", "host", False)
    # the report imports no plugin: it tells the device's story from what the study recorded
    assert main(["report", "studies/scaled-host"]) == 0
    report = (tmp_path / "studies" / "scaled-host" / "report.md").read_text()
    assert "median of the host device's samples (host-timed CPU runs of a plugin device)" \
        in report and "CUDA-event" not in report


def test_installed_names_are_listed_and_a_bad_one_is_named_with_its_entry_point(
        tinyplug, tmp_path, capsys, monkeypatch):
    broken = tmp_path / "broken"
    install(broken, "sweeper-broken", "0.2", """
        [sweeper.kernels]
        nokernel = sweeper_tinyplug:backwards
        [sweeper.samplers]
        nofactory = sweeper_tinyplug:CALLS
        [sweeper.devices]
        host = sweeper_tinyplug:HostDevice
        abstract = sweeper.devices:Device
        """)
    monkeypatch.syspath_prepend(str(broken))
    known = plugins.known(plugins.KERNEL)
    assert known.startswith(", ".join(plugins.KERNEL.builtins) + ", ") and \
        known.endswith(", or package.module:attr for your own")
    assert "double (sweeper-tinyplug 0.1)" in known and "nokernel (sweeper-broken 0.2)" in known
    space = tmp_path / "s.yaml"
    origin = "in {group} of sweeper-broken 0.2"

    space.write_text(SCALE_SPACE.replace("kernel: double", "kernel: nokernel"))
    assert main(["run", str(space), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{space}:3: kernel: cannot load kernel 'nokernel' (entry point nokernel = "
        f"sweeper_tinyplug:backwards {origin.format(group='sweeper.kernels')}): "
        "sweeper_tinyplug:backwards is a function, not a sweeper.kernels.Kernel subclass or "
        "instance; decorate it with @sweeper.kernel(inputs=..., outputs=...) (README: Your "
        "own kernel)\n")
    space.write_text(SCALE_SPACE.replace("sampler: backwards", "sampler: nofactory"))
    assert main(["run", str(space), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{space}:4: sampler: cannot load sampler 'nofactory' (entry point nofactory = "
        f"sweeper_tinyplug:CALLS {origin.format(group='sweeper.samplers')}): "
        "sweeper_tinyplug:CALLS is a list, not a sampler factory (a callable: (context: "
        "sweeper.samplers.SamplerContext) -> optuna.samplers.BaseSampler)\n")
    space.write_text(SCALE_SPACE)
    assert main(["run", str(space), "--device", "abstract"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: cannot load device 'abstract' (entry point abstract = sweeper.devices:Device "
        f"{origin.format(group='sweeper.devices')}): sweeper.devices:Device is abstract: it "
        "does not implement facts, synchronize, time\n")
    assert main(["run", str(space), "--device", "host"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sweeper: device 'host' is declared by 2 installed distributions (")
    assert "sweeper-tinyplug 0.1" in err and err.endswith(
        ") in sweeper.devices; uninstall all but one\n")
    assert not (tmp_path / "studies").exists()              # nothing written


def test_an_installed_five_argument_factory_is_refused_naming_the_context(tinyplug, tmp_path,
                                                                          capsys):
    space = tmp_path / "old.yaml"
    space.write_text(SCALE_SPACE.replace("sampler: backwards", "sampler: forwards"))
    assert main(["run", str(space), "--device", "host"]) == 2
    assert capsys.readouterr().err == (
        f"{space}:4: sampler: cannot load sampler 'forwards' (entry point forwards = "
        "sweeper_tinyplug:forwards in sweeper.samplers of sweeper-tinyplug 0.1): "
        "sweeper_tinyplug:forwards takes (spec, choices, axes, priors, guesses); a sampler "
        "factory takes one argument: (context: sweeper.samplers.SamplerContext) -> "
        "optuna.samplers.BaseSampler, whose fields spec, choices, axes, priors and guesses "
        "replace the five arguments of older factories\n")
    assert not (tmp_path / "studies").exists()              # nothing written


def takes_two(context: SamplerContext, extra: Any) -> Any:
    return optuna.samplers.RandomSampler()


def takes_none() -> Any:
    return optuna.samplers.RandomSampler()


def takes_more_later(context: SamplerContext, extra: Any = None) -> Any:
    return optuna.samplers.RandomSampler(seed=context.seed)


def test_a_sampler_factory_is_checked_to_take_one_argument_when_loaded():
    path = "tests.test_plugins:{}"
    for name, takes in (("takes_two", "(context, extra)"), ("takes_none", "()")):
        with pytest.raises(SweeperError) as err:
            plugins.load(plugins.SAMPLER, path.format(name))
        assert str(err.value) == (
            f"cannot load sampler '{path.format(name)}' (module:attr path): "
            f"{path.format(name)} takes {takes}; a sampler factory takes one argument: "
            "(context: sweeper.samplers.SamplerContext) -> optuna.samplers.BaseSampler")
    assert plugins.load(plugins.SAMPLER, path.format("takes_more_later")).obj is \
        takes_more_later
    assert all(callable(plugins.load(plugins.SAMPLER, name).obj)
               for name in plugins.SAMPLER.builtins)         # the built-ins take a context


def test_a_device_name_takes_an_argument_only_where_the_device_declares_one(capsys):
    assert main(["plan", "spaces/copy-small.yaml", "--device", "replay"]) == 2
    assert capsys.readouterr().err == ("sweeper: device 'replay' (built-in) needs an argument: "
                                       "replay:PATH.csv\n")
    assert main(["plan", "spaces/copy-small.yaml", "--device", "interpret:fast"]) == 2
    assert capsys.readouterr().err == ("sweeper: device 'interpret' (built-in) takes no "
                                       "argument; got 'interpret:fast'\n")
    assert main(["plan", "spaces/copy-small.yaml", "--device", "tpu"]) == 2
    assert capsys.readouterr().err == ("sweeper: unknown device 'tpu'; known: cuda, interpret, "
                                       "replay, or package.module:attr for your own\n")


def test_a_newcomers_word_for_a_device_is_answered_with_its_name(capsys):
    """``--device cpu`` on a laptop: the error names ``interpret``, which no spelling of
    ``cpu`` is close to; ``gpu`` names ``cuda``; ``sampler: grid`` (Optuna's word)
    ``exhaustive`` and ``bayes`` ``gp``."""
    for word, meant in (("cpu", "interpret"), ("gpu", "cuda")):
        assert main(["run", "spaces/copy-small.yaml", "--device", word]) == 2
        assert capsys.readouterr().err == (f"sweeper: unknown device {word!r}; known: cuda, "
                                           "interpret, replay, or package.module:attr for your "
                                           f"own; did you mean {meant!r}?\n")
    for word, meant in (("grid", "exhaustive"), ("bayes", "gp")):   # not 'cmaes' by spelling
        with pytest.raises(SweeperError, match=rf"; did you mean {meant!r}\?$"):
            plugins.find(plugins.SAMPLER, word)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write a module of a unique name into the current directory; returns its name."""
    monkeypatch.chdir(tmp_path)
    names: list[str] = []

    def write(text: str) -> str:
        names.append(f"usermod_{uuid.uuid4().hex[:8]}")
        (tmp_path / f"{names[-1]}.py").write_text(textwrap.dedent(text))
        return names[-1]

    yield write
    for name in names:
        sys.modules.pop(name, None)


def test_a_path_plugin_not_found_says_where_it_was_looked_for(user_module, tmp_path):
    """Run from another folder than the one holding the module (``examples.scale:scale``
    from outside the repository), the message says where sweeper looked and what to do; a
    file's name or path given as the module gets the module path it means, a misspelt
    attribute the one it is close to; a module the plugin itself imports that is missing
    is named at its line instead."""
    with pytest.raises(SweeperError) as err:
        plugins.load(plugins.KERNEL, "absentpkg_qa.scale:scale")
    assert str(err.value) == ("cannot load kernel 'absentpkg_qa.scale:scale' (module:attr path): "
                              "No module named 'absentpkg_qa' in the current directory "
                              f"({tmp_path}) or on the Python path; run from the folder that "
                              "holds it, or add that folder to PYTHONPATH")
    with pytest.raises(SweeperError) as err:                # the package is there
        plugins.load(plugins.KERNEL, "tests.absent_qa:K")
    assert str(err.value).endswith("No module named 'tests.absent_qa'")
    kernels = user_module("def scale():\n    pass\n")
    for given in (f"{kernels}.py:scale", f"./{kernels}.py:scale"):   # a file's name or path
        with pytest.raises(SweeperError, match=rf"; did you mean '{kernels}:scale'\?$"):
            plugins.load(plugins.KERNEL, given)
    with pytest.raises(SweeperError, match=rf"^cannot load kernel '{kernels}:scal' \(module:attr "
                                           rf"path\): module {kernels} has no attribute 'scal'; "
                                           r"did you mean 'scale'\?$"):
        plugins.load(plugins.KERNEL, f"{kernels}:scal")
    imports = user_module("import absentdep_qa\n")
    with pytest.raises(SweeperError) as err:
        plugins.load(plugins.KERNEL, f"{imports}:K")
    assert str(err.value) == (f"cannot load kernel '{imports}:K' (module:attr path): No module "
                              f"named 'absentdep_qa' (at {imports}.py:1: import absentdep_qa)")


def test_a_module_named_without_its_kernel_gets_the_kernels_it_declares(user_module,
                                                                      tmp_path):
    """``kernel: mykern.rowsum`` names a module, not what in it to load: the hint names
    the kernels its source declares after a colon (``mykern.rowsum:rowsum``), read without
    importing it, never ``mykern:rowsum`` (a dot read as the colon, which that package
    does not bind); a module that declares none says what to add."""
    package = tmp_path / f"pkg_{uuid.uuid4().hex[:8]}"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rowsum.py").write_text(textwrap.dedent("""
        import sweeper
        from sweeper.kernels import Kernel
        raise SystemExit("imported")


        @sweeper.kernel(inputs={"x": "n"}, outputs=["x"], reference=lambda x: x)
        def rowsum(x, config):
            pass


        class Other(Kernel):
            pass


        def helper():
            pass
        """))
    with pytest.raises(SweeperError) as err:
        plugins.find(plugins.KERNEL, f"{package.name}.rowsum")
    assert str(err.value).endswith(f"; {package.name}.rowsum is a module "
                                   f"({package.name}/rowsum.py): name the kernel in it after "
                                   f"a colon: did you mean '{package.name}.rowsum:rowsum' or "
                                   f"'{package.name}.rowsum:Other'?"), err.value
    bare = user_module("def helper():\n    pass\n")
    with pytest.raises(SweeperError) as err:
        plugins.find(plugins.KERNEL, bare)
    assert str(err.value).endswith(f"; {bare} is a module ({bare}.py): name the kernel in it "
                                   f"after a colon ('{bare}:NAME')"), err.value
    with pytest.raises(SweeperError, match=r"did you mean 'tests.kernels_for_tests:"
                                           r"ReadsAGlobal'\?$"):   # a dot for the colon
        plugins.find(plugins.KERNEL, "tests.kernels_for_tests.ReadsAGlobal")


def test_a_path_plugin_that_fails_is_named_with_its_path(user_module):
    raises = user_module("raise RuntimeError('needs a GPU to import')\n")
    with pytest.raises(SweeperError) as err:
        plugins.load(plugins.KERNEL, f"{raises}:K")
    assert str(err.value) == (f"cannot load kernel '{raises}:K' (module:attr path): importing "
                              f"{raises} raised RuntimeError: needs a GPU to import (at "
                              f"{raises}.py:1: raise RuntimeError('needs a GPU to import'))")
    empty = user_module("X = 1\n")
    with pytest.raises(SweeperError, match=rf"^cannot load sampler '{empty}:nope' \(module:attr "
                                           rf"path\): module {empty} has no attribute 'nope'$"):
        plugins.load(plugins.SAMPLER, f"{empty}:nope")
    with pytest.raises(SweeperError, match=rf"^cannot load device '{empty}:X' \(module:attr "
                                           rf"path\): {empty}:X is an int, not a sweeper"):
        plugins.load(plugins.DEVICE, f"{empty}:X")
    with pytest.raises(SweeperError, match=r"declares needs_finals = 'no'; a capability is "
                                           r"True or False$"):
        plugins.load(plugins.SAMPLER, "tests.test_plugins:undecided")
    with pytest.raises(SweeperError, match=r"declares proposes = 17; proposes is a function "
                                           r"or None$"):
        plugins.load(plugins.SAMPLER, "tests.test_plugins:lists_no_configs")
    with pytest.raises(TypeError, match="unknown sampler capability 'fast'; known: "
                                        "needs_finals, uses_model"):
        declares(fast=True)


@pytest.mark.parametrize(("text", "said"), [
    ("X = 1\nfrom .helpers import SCALE\n", "attempted relative import with no known parent "
     "package (at {name}.py:2: from .helpers import SCALE)"),
    ("import triton\ndef f(:\n    pass\n", "importing {name} raised SyntaxError: invalid "
     "syntax (at {name}.py:2: def f(:)"),
    ("import sweeper\n\nK = sweeper.kernel(lambda x, config: None, name='k', inputs={'x': "
     "'n'},\n                outputs=['x'], reference=lambda x: x)\n",
     "importing {name} raised SweeperError: kernel k: give grid="),
])
def test_a_user_module_that_fails_to_import_is_named_at_its_line(user_module, text, said):
    """A kernel module with a relative import, a syntax error or a refused declaration:
    the message names the user's file and line (a declaration refused by sweeper, the
    line that declares it), as a trial's error in an interpreted kernel does."""
    name = user_module(text)
    with pytest.raises(SweeperError) as err:
        plugins.load(plugins.KERNEL, f"{name}:K")
    assert said.format(name=name) in str(err.value)
    if "sweeper.kernel" in text:
        assert str(err.value).endswith(f"(at {name}.py:3: K = sweeper.kernel(lambda x, "
                                       "config: None, name='k', inputs={'x': 'n'}, "
                                       "outputs=['x'], reference=lambda x: x))")


@pytest.mark.parametrize(("text", "code"), [
    ("import argparse\nX = 1\nargparse.ArgumentParser().parse_args(['--size', '4'])\n", "2"),
    ("import sys\nX = 1\nsys.exit('done')\n", "done"),
])
def test_a_user_module_that_exits_as_it_is_imported_is_named_at_its_line(
        user_module, text, code, capsys):
    """A kernel module with a script's top level (argparse, ``sys.exit``) ended the
    command while it was imported, with the script's usage or its exit text and no word of
    sweeper's; now that is a one-line error at the line that exited."""
    name = user_module(text)
    with pytest.raises(SweeperError) as err:
        plugins.load(plugins.KERNEL, f"{name}:K")
    line = text.splitlines()[2]
    assert str(err.value) == (f"cannot load kernel '{name}:K' (module:attr path): importing "
                              f"{name} exited (SystemExit: {code}) (at {name}.py:3: {line}); "
                              "its module is imported, so code to run as a script goes under "
                              "if __name__ == \"__main__\":")


def test_finding_a_plugin_imports_nothing_and_plan_reads_a_stand_in(user_module):
    marked = user_module("import pathlib\npathlib.Path('imported').write_text('yes')\n")
    found = plugins.find(plugins.KERNEL, f"{marked}:K")
    assert (found.origin, found.target, found.builtin) == ("module:attr path", f"{marked}:K",
                                                           False)
    stand_in = plugins.kernel_declaration(f"{marked}:K", user_code=False,
                                          params={"TILE": [16, 32], "block": [32]})
    assert list(stand_in.meta_params) == ["TILE"] and stand_in.name == f"{marked}:K"
    assert marked not in sys.modules and not Path("imported").exists()


def test_a_built_in_kernel_is_its_declaration_implemented():
    for name in plugins.KERNEL.builtins:
        declared = plugins.kernel_declaration(name)
        implementation = kernel_class(name)
        assert issubclass(implementation, declared) and implementation.name == name
        assert implementation.meta_params is declared.meta_params
        if name == "cuda":      # its options name a .cu file: tests/test_cuda_kernel.py
            assert declared.__module__ == "sweeper.kernels._cuda_form"
            continue
        assert declared.__module__ == "sweeper.kernels._declared"
        # the study's kernel version covers what the kernel declares
        options = {key: "torch.tanh" for key in declared.options}      # torch-op's op
        assert f"class {declared.__name__}(Kernel):" in implementation(**options).source()


# -- third-party plugins given by module:attr, each declaring one capability ------------------
def undecided(context: SamplerContext) -> Any:
    return optuna.samplers.RandomSampler(seed=context.seed)


undecided.needs_finals = "no"        # type: ignore[attr-defined]


def lists_no_configs(context: SamplerContext) -> Any:
    return optuna.samplers.RandomSampler(seed=context.seed)


lists_no_configs.proposes = 17       # type: ignore[attr-defined]


@declares(takes_baseline=True, needs_finals=False)
def around(context: SamplerContext) -> Any:
    """The baseline, then the other values of BLOCK: a one-at-a-time of one axis."""
    base = dict(context.baseline)
    plan = [base] + [{**base, "BLOCK": b} for b in context.axes["BLOCK"]
                     if b != base["BLOCK"]]
    return ExhaustiveSampler(plan, seed=None)


@declares(uses_priors=True)
def remembers(context: SamplerContext) -> Any:
    return ExhaustiveSampler(context.choices, seed=context.seed)


def gives_no_sampler(context: SamplerContext) -> Any:
    return {"not": "a sampler"}


def raises_when_built(context: SamplerContext) -> Any:
    raise ValueError("no GPU model for this kernel")


@declares(plans=True)
def plans_without_a_plan(context: SamplerContext) -> Any:
    import optuna

    return optuna.samplers.RandomSampler(seed=context.seed)


class GpuLike(InterpretDevice):
    """The interpreter, declaring what a GPU device declares."""

    name: ClassVar[str] = "gpu-like"
    measures_gpu: ClassVar[bool] = True
    has_ceilings: ClassVar[bool] = True
    sets_env: ClassVar[dict[str, str]] = {"TRITON_INTERPRET": "1", "SWEEPER_TEST_MARK": "set"}


class SlowCompiles(InterpretDevice):
    name: ClassVar[str] = "slow"
    plan_costs: ClassVar[PlanCosts] = PlanCosts(compile_s=7.0, launch_s=1e-3, bandwidth=1e9,
                                                flush=False)


SPACE = """study: caps
kernel: copy
sampler: {sampler}
params:
  grid: [sms]
  block: [32]
  BLOCK: [256, 512, 1024]
  footprint: [4KiB]
measure: {{warmup: 1, repeat: 3}}
"""


def test_the_core_asks_a_device_what_it_declares(user_module, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SWEEPER_TEST_MARK", "not yet")
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    kernel = user_module("""
        import os
        SEEN = os.environ["SWEEPER_TEST_MARK"]      # what the kernel's module saw on import
        from sweeper.kernels.copy import CopyKernel
        class K(CopyKernel):
            name = "k"
        """)
    (tmp_path / "s.yaml").write_text(SPACE.format(sampler="exhaustive").replace(
        "kernel: copy", f"kernel: {kernel}:K"))
    assert main(["run", "s.yaml", "--device", "tests.test_plugins:GpuLike", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert sys.modules[kernel].SEEN == "set"                              # sets_env
    assert "study caps: studies/caps (new)" in out                        # measures_gpu
    assert "ceilings: not measured for this GPU; run `sweeper calibrate`" in out  # has_ceilings
    assert "winner, float32 4KiB cold, after" in out                      # finals, as declared
    assert main(["report", "studies/caps"]) == 0                # reproduced as it was opened
    assert "sweeper run s.yaml --device tests.test_plugins:GpuLike --study caps" in \
        (tmp_path / "studies" / "caps" / "report.md").read_text()
    assert main(["plan", "s.yaml", "--device", "tests.test_plugins:SlowCompiles"]) == 0
    out = capsys.readouterr().out
    assert "; assumes 7 s a trial beyond its launches, launches of at least 1000 us, 1 GB/s)" \
        in out                                                            # plan_costs
    assert "(as on the GPU the table was recorded on" not in out           # replays: False


def test_the_core_asks_a_sampler_what_it_declares(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "s.yaml"
    space.write_text(SPACE.format(sampler="{name: tests.test_plugins:around, baseline: "
                                          "{BLOCK: 512}}"))
    assert load_space(space).sampler.baseline[-1] == ("BLOCK", "512")       # takes_baseline
    assert main(["run", str(space), "--device", "interpret", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "interleaved" not in out                                       # needs_finals
    store = StudyStore(tmp_path / "studies" / "caps-interpret")
    assert [t.choice["BLOCK"] for t in store.records()[0]] == ["512", "256", "1024"]
    assert [d.number for d in store.read(DriftRecord)] == [0]    # the baseline measured again
    assert store.meta()["finals"] is False

    space.write_text(SPACE.format(sampler="{name: tests.test_plugins:remembers, baseline: "
                                          "{BLOCK: 512}}"))
    assert main(["run", str(space), "--device", "interpret"]) == 2
    assert capsys.readouterr().err.endswith(
        ":3: sampler.baseline: a baseline belongs to the one-at-a-time sampler; "
        "tests.test_plugins:remembers takes none\n")
    space.write_text(SPACE.format(sampler="tests.test_plugins:remembers"))
    assert main(["run", str(space), "--device", "interpret", "--no-priors", "--study", "r",
                 "--no-report"]) == 0
    assert "tests.test_plugins:remembers: starting without the winners of other studies " \
           "(--no-priors)" in capsys.readouterr().out                      # uses_priors
    space.write_text(SPACE.format(sampler="tests.test_plugins:gives_no_sampler"))
    assert main(["run", str(space), "--device", "interpret", "--study", "g"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: sampler 'tests.test_plugins:gives_no_sampler' (module:attr path): its "
        "factory returned dict, not an optuna.samplers.BaseSampler\n")
    space.write_text(SPACE.format(sampler="tests.test_plugins:raises_when_built"))
    assert main(["run", str(space), "--device", "interpret", "--study", "r2"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: sampler 'tests.test_plugins:raises_when_built' (module:attr path): its "
        "factory raised ValueError: no GPU model for this kernel (at test_plugins.py:"
        f"{raises_when_built.__code__.co_firstlineno + 1}: "
        "raise ValueError(\"no GPU model for this kernel\"))\n")
    space.write_text(SPACE.format(sampler="tests.test_plugins:plans_without_a_plan"))
    assert main(["run", str(space), "--device", "interpret", "--study", "p"]) == 2
    assert capsys.readouterr().err == (
        "sweeper: sampler 'tests.test_plugins:plans_without_a_plan' declares plans=True but "
        "its factory returned RandomSampler, not a "
        "sweeper.samplers._exhaustive.PlannedSampler\n")


def returns_42(context: SamplerContext) -> Any:
    return 42


@pytest.mark.parametrize("factory", ["returns_42", "raises_when_built",
                                     "plans_without_a_plan"])
def test_a_sampler_factory_that_fails_writes_nothing(factory, tmp_path, capsys, monkeypatch):
    """A bad input: exit 2 and nothing written.  The sampler is built before the study is:
    a new study is not created, on the interpreter or a replay, and a resumed one (its
    study.json, its journal) is left as it was, by ``sweeper run`` and ``sweeper worker``
    alike."""
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "s.yaml"
    space.write_text(SPACE.format(sampler=f"tests.test_plugins:{factory}"))
    studies = tmp_path / "studies"
    assert main(["run", str(space), "--device", "interpret", "--study", "new"]) == 2
    assert "its factory" in capsys.readouterr().err
    copy = tmp_path / "copy.yaml"
    copy.write_text((ROOT / "spaces/copy.yaml").read_text().replace(
        "sampler: exhaustive", f"sampler: tests.test_plugins:{factory}"))
    replay = f"replay:{ROOT / 'tests/data/replay/h200-copy.csv'}"
    for command in ("run", "worker"):
        assert main([command, str(copy), "--device", replay, "--study", "new"]) == 2
        assert "its factory" in capsys.readouterr().err
    assert not studies.exists()

    copy.write_text((ROOT / "spaces/copy.yaml").read_text())
    assert main(["run", str(copy), "--device", replay, "--study", "kept", "--trials", "3",
                 "--no-report", "--quiet"]) == 0
    kept = {p.name: p.read_bytes() for p in (studies / "kept").iterdir()}
    copy.write_text((ROOT / "spaces/copy.yaml").read_text().replace(
        "sampler: exhaustive", f"sampler: tests.test_plugins:{factory}"))
    capsys.readouterr()
    for command in ("run", "worker"):
        assert main([command, str(copy), "--device", replay, "--study", "kept",
                     "--force"]) == 2
        assert "its factory" in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in (studies / "kept").iterdir()} == kept


#: What pip writes as the console script for ``[project.scripts] sweeper =
#: "sweeper.cli:main"``: its ``sys.path`` starts at the script's folder, not the current one.
CONSOLE_SCRIPT = """\
import re
import sys
from sweeper.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def test_a_kernel_module_in_the_current_directory_loads_from_the_console_script(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sweeper").write_text(CONSOLE_SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    (work / "mykernels.py").write_text("from sweeper.kernels.copy import CopyKernel\n\n\n"
                                       "class MyKernel(CopyKernel):\n    name = 'mine'\n")
    (work / "space.yaml").write_text(SPACE.format(sampler="exhaustive").replace(
        "kernel: copy", "kernel: mykernels:MyKernel").replace("[256, 512, 1024]", "[256]"))
    # this checkout's sweeper, and no empty entry: Python reads one as the current folder
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in [str(ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)] if p)}
    run = subprocess.run([sys.executable, str(tmp_path / "bin" / "sweeper"), "run",
                          "space.yaml", "--device", "interpret", "--quiet", "--no-report"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "done: 1 measured, 0 failed" in run.stdout
    meta = json.loads((work / "studies" / "caps-interpret" / "study.json").read_text())
    assert meta["kernel"] == "mykernels:MyKernel"


def test_an_abstract_kernel_class_is_refused_naming_what_it_leaves_out(tmp_path, capsys):
    """A Kernel subclass missing a method (a misspelt ``poisson``) is refused at its line
    like any other plugin that cannot be loaded; it was a TypeError's traceback."""
    space = tmp_path / "s.yaml"
    space.write_text("kernel: sweeper.kernels:Kernel\nparams: {block: [32]}\n")
    assert main(["run", str(space), "--device", "interpret",
                 "--studies-dir", str(tmp_path / "studies")]) == 2
    assert capsys.readouterr().err == (
        f"{space}:1: kernel: cannot load kernel 'sweeper.kernels:Kernel' (module:attr path): "
        "sweeper.kernels:Kernel is abstract: it does not implement allocate, check, launch, "
        "poison, randomize\n")
    assert not (tmp_path / "studies").exists()


@pytest.mark.parametrize(("attr", "said"), [
    ("_broken_baseline", "is a function, not a sweeper.kernels.Kernel subclass or instance; "
     "decorate it with @sweeper.kernel(inputs=..., outputs=...) (README: Your own kernel)"),
    ("_axpy_body", "is a @triton.jit function (InterpretedFunction), not a "
     "sweeper.kernels.Kernel subclass or instance; write a function that launches it, "
     "decorate that with @sweeper.kernel(inputs=..., outputs=...) (README: Your own "
     "kernel), and name it"),
    ("add_kernel", "is a @triton.autotune function (Autotuner), not a sweeper.kernels.Kernel "
     "subclass or instance; declare a launcher with @sweeper.kernel(..., "
     "autotuned=add_kernel) and name it in from_autotune: (or sweeper run --from-autotune), "
     "which runs its configs"),
])
def test_a_function_named_as_a_kernel_says_how_to_declare_one(attr, said, tmp_path, capsys):
    space = tmp_path / "s.yaml"
    target = f"tests.short_kernels_for_tests:{attr}"
    space.write_text(f"kernel: {target}\nparams: {{n: [1024]}}\n")
    assert main(["run", str(space), "--device", "interpret",
                 "--studies-dir", str(tmp_path / "studies")]) == 2
    assert capsys.readouterr().err == (
        f"{space}:1: kernel: cannot load kernel '{target}' (module:attr path): {target} "
        f"{said}\n")
    assert not (tmp_path / "studies").exists()


@pytest.mark.parametrize(("decorators", "said"), [
    ("", "is a function (m.py:6), not a sweeper.kernels.Kernel subclass or instance; "
     "decorate it with @sweeper.kernel(inputs=..., outputs=...) (README: Your own kernel)"),
    ("@triton.jit\n", "is a @triton.jit function (m.py:7), not a sweeper.kernels.Kernel "
     "subclass or instance; write a function that launches it, decorate that with "
     "@sweeper.kernel(inputs=..., outputs=...) (README: Your own kernel), and name it"),
    ("@triton.autotune(configs=[], key=['n'])\n@triton.jit\n", "is a @triton.autotune "
     "function (m.py:8), not a sweeper.kernels.Kernel subclass or instance; declare a "
     "launcher with @sweeper.kernel(..., autotuned=f) and name it in from_autotune: (or "
     "sweeper run --from-autotune), which runs its configs"),
])
def test_plan_refuses_a_function_named_as_a_kernel_as_run_does(decorators, said, tmp_path,
                                                               capsys, monkeypatch):
    """``plan`` reads a user kernel's module without running it, and a function that no
    decorator can have made a kernel (Triton's own, or none) is refused there in run's
    words and advice; it said the base Kernel's default grid was refused, its 'neither a
    Kernel subclass nor a sweeper.kernel declaration' in brackets."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "m.py").write_text("import triton\nimport triton.language as tl\n\n\n\n"
                                   f"{decorators}def f(x, n, BLOCK: tl.constexpr):\n    pass\n")
    space = tmp_path / "s.yaml"
    space.write_text("kernel: m:f\nparams: {block: [128], n: [1024]}\n")
    assert main(["plan", str(space), "--device", "interpret"]) == 2
    assert capsys.readouterr().err == (
        f"{space}:1: kernel: cannot load kernel 'm:f' (module:attr path): m:f {said}\n")


def test_plan_reads_a_function_under_a_decorator_of_its_own_as_unread(tmp_path, capsys,
                                                                    monkeypatch):
    """A decorator of the module's own may return a kernel: ``plan`` cannot tell, and
    refuses nothing for it (the run, importing it, does)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "m.py").write_text("def mine(fn):\n    return fn\n\n\n@mine\n"
                                   "def f(x, n):\n    pass\n")
    space = tmp_path / "s.yaml"
    space.write_text("kernel: m:f\nparams: {block: [128], n: [1024]}\n")
    main(["plan", str(space), "--device", "interpret"])
    assert "cannot load kernel" not in capsys.readouterr().err


def test_a_kernel_whose_constructor_raises_is_refused_in_one_line(tmp_path, capsys):
    """A user kernel's __init__ that raises is one line naming the kernel and the line,
    exit status 2, nothing written; it was a traceback."""
    space = tmp_path / "s.yaml"
    space.write_text("kernel: tests.kernels_for_tests:RaisesWhenConstructed\n"
                     "params: {block: [32]}\n")
    assert main(["run", str(space), "--device", "interpret",
                 "--studies-dir", str(tmp_path / "studies")]) == 2
    assert capsys.readouterr().err == (
        "sweeper: kernel tests.kernels_for_tests:RaisesWhenConstructed: constructing "
        "RaisesWhenConstructed raised RuntimeError: no GPU library here (at "
        "kernels_for_tests.py:265: raise RuntimeError(\"no GPU library here\"))\n")
    assert not (tmp_path / "studies").exists()
