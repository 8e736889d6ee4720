"""A user kernel's declared model (issue 28, "Search that no table fools"): ``model:
{streaming: {tile: EXPR, inputs: N}}`` in a ``cuda`` kernel's space file, ``model=`` in
``sweeper.kernel``, and ``{tiled: ...}`` for a matmul.  Read and checked with the space (a
bad one is one located line, exit status 2, nothing written), answered as
``_guess.streaming`` at the evaluated tile or ``_guess.tiled`` at the evaluated sizes and
tiles, and followed by ``auto`` on the recorded H200 CUDA C copy and on the Triton
tutorial's matmul (examples/matmul.py)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

import sweeper
from examples.scale import A, scale_kernel
from sweeper.cli import main
from sweeper.devices import open_device
from sweeper.errors import SweeperError
from sweeper.kernels import _guess, load_kernel
from sweeper.samplers._auto import ModelGuidedSearch, Phase
from sweeper.space import Config, Problem, SamplerSpec, load_space
from sweeper.store import StudyStore
from sweeper.sweep import Sweep, open_study
from tests.conftest import H200, ROOT

COPY_CU = ROOT / "examples" / "copy.cu"
#: The CUDA C copy's space with ``{model}`` as the kernel's last option (line 9).
SPACE = """\
kernel:
  name: cuda
  source: copy.cu
  entry: copy
  inputs: {{src: n}}
  outputs: {{dst: n}}
  args: [dst, src, "n:int64"]
  reference: "torch:clone"
  model: {model}
params:
  block: [64, 256]
  VEC: [1, 2, 4]
  UNROLL: [1, 4]
  dtype: [{dtype}]
  footprint: [1GiB]
"""


@pytest.fixture
def cu_space(tmp_path):
    """Writes the space (``SPACE`` with a model) beside a copy of examples/copy.cu."""
    shutil.copy(COPY_CU, tmp_path / "copy.cu")

    def write(model: str, dtype: str = "float32") -> Path:
        path = tmp_path / "space.yaml"
        path.write_text(SPACE.format(model=model, dtype=dtype))
        return path
    return write


def test_a_declared_streaming_model_guesses_as_the_built_in_at_the_evaluated_tile(cu_space):
    space = load_space(cu_space('{streaming: {tile: "block * VEC * UNROLL", inputs: 1}}'))
    kernel = load_kernel(space.kernel, space.kernel_options)   # as a run builds it
    problem = Problem("float32", 1 << 30)
    guesses = set()
    for grid in (132, 4 * 132, 1 << 20):
        for block in (64, 256):
            for vec in (1, 2, 4):
                for unroll in (1, 4):
                    config = Config(problem=problem, grid=grid, block=block,
                                    meta={"VEC": vec, "UNROLL": unroll})
                    guess = kernel.model(config, H200)
                    assert guess == _guess.streaming(config, H200.sms, block * vec * unroll, 1)
                    guesses.add(guess)
    assert len(guesses) > 10                               # the tile matters, per config


def test_inputs_default_to_the_kernels_declared_inputs_and_the_tile_may_read_itemsize(
        cu_space):
    space = load_space(cu_space('{streaming: {tile: "block * 16 // itemsize"}}', "float16"))
    kernel = load_kernel(space.kernel, space.kernel_options)
    assert kernel.declared_model.inputs == 1
    config = Config(problem=Problem("float16", 1 << 20), grid=132, block=256, meta={"VEC": 1})
    assert kernel.model(config, H200) == _guess.streaming(config, H200.sms, 256 * 8, 1)


def test_a_cuda_kernel_without_a_model_still_has_none(cu_space):
    path = cu_space("x")
    path.write_text(path.read_text().replace("  model: x\n", ""))
    space = load_space(path)
    kernel = load_kernel(space.kernel, space.kernel_options)
    config = Config(problem=Problem("float32", 4096), grid=1, block=64, meta={"VEC": 1})
    assert kernel.model(config, H200) is None


@pytest.mark.parametrize(("model", "line", "message"), [
    ("streaming", 9, "kernel.model: 'streaming' is not one model; allowed: a mapping of one "
     "of streaming, tiled, rowwise to its settings, such as {streaming: {tile: EXPR, inputs: N}}"),
    ("{stream: {tile: block}}", 9, "kernel.model: unknown model 'stream'; allowed: "
     "streaming, tiled, rowwise; did you mean 'streaming'?"),
    ("{streaming: {tile: block}, rowwise: {}}", 9, "kernel.model: {'streaming': {'tile': "
     "'block'}, 'rowwise': {}} is not one model"),
    ("{streaming: block}", 9, "kernel.model.streaming: 'block' is not streaming's settings; "
     "allowed: a mapping of tile, inputs"),
    ("{streaming: {tile: block, input: 1}}", 9, "kernel.model.streaming.input: streaming "
     "takes no setting 'input'; allowed: tile, inputs; did you mean 'inputs'?"),
    ("{streaming: {inputs: 1}}", 9, "kernel.model.streaming: streaming needs tile: the "
     "elements of each array one program moves per step"),
    ('{streaming: {tile: "block * VECTOR"}}', 9, "kernel.model.streaming.tile: unknown name "
     "'VECTOR' in 'block * VECTOR'; known: block, itemsize, VEC, UNROLL"),
    ('{streaming: {tile: "block ** 2"}}', 9, "kernel.model.streaming.tile: operator "
     "'**' is not allowed in 'block ** 2'; allowed: integers"),
    ('{streaming: {tile: "block * ("}}', 9, "kernel.model.streaming.tile: cannot parse "
     "expression 'block * ('"),
    ('{streaming: {tile: "block > VEC"}}', 9, "kernel.model.streaming.tile: 'block > VEC' "
     "is a comparison (true or false), not a number"),
    ("{streaming: {tile: 2.5}}", 9, "kernel.model.streaming.tile: 2.5 is no tile; allowed: "
     "an expression over block, itemsize, VEC, UNROLL (such as block * VEC) or a positive "
     "integer"),
    ("{streaming: {tile: 0}}", 9, "kernel.model.streaming.tile: 0 is no tile; allowed: at "
     "least 1 element"),
    ('{streaming: {tile: "4 - 8"}}', 9, "kernel.model.streaming.tile: '4 - 8' gives -4 "
     "elements; allowed: a tile of at least 1 element"),
    ('{streaming: {tile: "block * (VEC - 2)"}}', 9, "kernel.model.streaming.tile: 'block * "
     "(VEC - 2)' gives -64 elements at VEC=1, block=64; allowed: a tile of at least 1 "
     "element at every config"),
    ('{streaming: {tile: "block // (VEC * UNROLL * 32)"}}', 9, "kernel.model.streaming.tile: "
     "'block // (VEC * UNROLL * 32)' gives 0 elements at UNROLL=1, VEC=4, block=64"),
    ('{streaming: {tile: "block // (VEC - 1)"}}', 9, "kernel.model.streaming.tile: division "
     "by zero in 'block // (VEC - 1)' with VEC=1, block=64; allowed: a tile of at least 1 "
     "element at every config"),
    ("{streaming: {tile: block, inputs: 0}}", 9, "kernel.model.streaming.inputs: 0 is not a "
     "count of arrays read; allowed: an integer from 1 to 64"),
    ("{streaming: {tile: block, inputs: true}}", 9, "kernel.model.streaming.inputs: True is "
     "not a count of arrays read"),
    ("{streaming: {tile: block, inputs: '1'}}", 9, "kernel.model.streaming.inputs: '1' is "
     "not a count of arrays read"),
    ("3", 9, "kernel.model: 3 is not a valid model; allowed: a string of 1 to 200 "
     "characters, or a mapping"),
])
def test_a_bad_model_is_one_located_line_and_nothing_is_written(cu_space, tmp_path, capsys,
                                                                 model, line, message):
    path = cu_space(model)
    for command in (["plan", str(path)],
                    ["run", str(path), "--studies-dir", str(tmp_path / "st")]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert err.startswith(f"{path}:{line}: {message}"), err
    assert not (tmp_path / "st").exists()


def test_a_block_style_model_is_refused_at_the_line_of_the_part_at_fault(cu_space):
    path = cu_space("\n    streaming:\n      inputs: 1\n      tile: block * VECTOR")
    with pytest.raises(SweeperError, match=rf"^{path}:12: kernel\.model\.streaming\.tile: "
                                           "unknown name 'VECTOR'"):
        load_space(path)


def test_the_shipped_cuda_space_declares_the_streaming_model_of_its_loop():
    """``examples/copy.cu``: each block's step loads ``UNROLL`` vectors of ``VEC`` floats a
    thread (``base += gridDim.x * block_size_x * UNROLL`` vectors), so one program moves
    ``block * VEC * UNROLL`` elements of src and of dst per step."""
    space = load_space(ROOT / "spaces" / "cuda-copy.yaml")
    kernel = load_kernel(space.kernel, space.kernel_options)
    assert kernel.declared_model.text == \
        "{streaming: {tile: block * VEC * UNROLL, inputs: 1}}"
    assert "block_size_x * UNROLL" in COPY_CU.read_text()


def test_auto_follows_the_declared_model_on_the_recorded_h200_cuda_copy(tmp_path):
    """The CUDA C copy's recorded H200 table (225 configs, 11 within 2 % of the best), as
    ``benchmarks/search_efficiency.py`` replays it: with the model the space declares,
    ``auto`` runs the model's search and its first trial, the model's best guess, is
    within 98 % of the table's best on every seed (without a model: 9.5 / 16 trials,
    docs/search.md)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from search_robustness import auto_samplers
    from table_sets import table_path

    table = table_path("h200-cuda-copy.csv")
    device = open_device(f"replay:{table}")
    space = load_space(ROOT / "spaces" / "cuda-copy.yaml")
    kernel = load_kernel(space.kernel, space.kernel_options)
    everything = StudyStore(tmp_path / "all")
    open_study(everything, space, kernel, device, command="test")
    best = Sweep(space, kernel, device, everything).run().best.score
    with auto_samplers() as made:
        for seed in range(3):
            auto = dataclasses.replace(space, sampler=SamplerSpec(name="auto", seed=seed))
            store = StudyStore(tmp_path / f"auto-{seed}")
            open_study(store, auto, kernel, device, command="test")
            Sweep(auto, kernel, device, store, max_trials=5).run()
            scores = [t.score for t in store.records()[0] if t.ok]
            assert scores[0] >= 0.98 * best
    assert all(isinstance(s.strategy, ModelGuidedSearch) for s in made)
    assert all(s.phases[0] is Phase.BEST_GUESS for s in made)


# -- sweeper.kernel(..., model=...) ------------------------------------------------------------

def _scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)


def test_a_python_short_kernel_declares_the_same_model_with_model_keyword():
    declared = sweeper.kernel(_scale, inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                              reference=lambda x: x * A, name="scale-modelled",
                              model={"streaming": {"tile": "BLOCK"}})
    config = Config(problem=Problem("float32", 1 << 26), grid=132, block=128,
                    meta={"BLOCK": 4096})
    assert declared().model(config, H200) == _guess.streaming(config, H200.sms, 4096, 1)
    plain = sweeper.kernel(_scale, inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                           reference=lambda x: x * A, name="scale-plain")
    assert plain().model(config, H200) is None


@pytest.mark.parametrize(("model", "message"), [
    ({"streaming": {"tile": "BLOCK * VEC"}}, "kernel scale-bad: model.streaming.tile: unknown "
     "name 'VEC' in 'BLOCK * VEC'; known: block, itemsize, BLOCK"),
    ({"roofline": {}}, "kernel scale-bad: model: unknown model 'roofline'; allowed: "
     "streaming, tiled, rowwise"),
    ("streaming", "kernel scale-bad: model: 'streaming' is not one model"),
    ({"tiled": {"m": "n", "n": "n", "k": "n", "tile_m": "BLOCK", "tile_n": "BLOCK",
                "tile_k": "BLOCK", "tma": True}}, "kernel scale-bad: model.tiled.tma: True is "
     "no tma; allowed: an expression over block, itemsize, BLOCK (such as block) or an "
     "integer of at least 0"),
    ({"rowwise": {"rows": "n", "cols": "n", "tile": [64]}}, "kernel scale-bad: "
     "model.rowwise.tile: [64] is no tile; allowed: an expression over block, itemsize, "
     "BLOCK (such as BLOCK) or a positive integer"),
    ({"tiled": {"m": "n", "n": "n", "k": "n", "tile_m": "", "tile_n": "BLOCK",
                "tile_k": "BLOCK"}}, "kernel scale-bad: model.tiled.tile_m: '' is no tile_m; "
     "allowed: an expression over block, itemsize, BLOCK (such as BLOCK) or a positive "
     "integer"),
])
def test_a_python_short_kernels_bad_model_is_refused_as_it_is_declared(model, message):
    with pytest.raises(SweeperError) as refused:
        sweeper.kernel(_scale, inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                       reference=lambda x: x * A, name="scale-bad", model=model)
    assert str(refused.value).startswith(message), str(refused.value)


def test_a_factory_kernel_gives_its_inputs_count():
    with pytest.raises(SweeperError, match=r"model\.streaming\.inputs: give inputs: the "
                                           "arrays the kernel reads"):
        sweeper.kernel(_scale, inputs=lambda problem: {}, outputs=["x"], meta={"BLOCK": 1024},
                       reference=lambda x: x * A, name="scale-factory",
                       model={"streaming": {"tile": "BLOCK"}})


LATE_MODULE = '''\
import sweeper
from examples.scale import A, scale_kernel


@sweeper.kernel(inputs={"x": "n"}, outputs=["x"], meta={"BLOCK": 1024},
                reference=lambda x: x * A, model={"streaming": {"tile": "BLOCK - 200"}})
def scale(x, config):
    scale_kernel[(config.grid,)](x, x.numel(), A, num_warps=config.num_warps, **config.meta)
'''
LATE_SPACE = """\
kernel: tile_late_kernel:scale
sampler: auto
params:
  grid: [sms]
  block: [32]
  BLOCK: [512,
          "64 * sms"]
  dtype: [float32]
  footprint: [16KiB]
"""


def test_a_tile_that_is_no_element_once_the_device_is_known_is_refused_before_writing(
        tmp_path, capsys, monkeypatch):
    """A tile over an axis given as an expression (``64 * sms``) cannot be checked as the
    space is read; ``run`` checks it against the device before it opens the study, at
    that value's line."""
    path, err = _refused_run(tmp_path, capsys, monkeypatch, "tile_late_kernel", LATE_MODULE,
                             LATE_SPACE)
    assert err.startswith(f"{path}:7: params.BLOCK[1]: on Triton interpreter (CPU), kernel "
                          "model {streaming: {tile: BLOCK - 200, inputs: 1}}: tile 'BLOCK - "
                          "200' gives "), err
    assert "allowed: a tile of at least 1 element at every config" in err


SHRUNK_MODULE = '''\
import sweeper
from examples.matmul import matmul_kernel


@sweeper.kernel(inputs={"a": "M, K", "b": "K, N"}, outputs={"c": "M, N"},
                dims={"M": 128, "N": 64, "K": 64}, meta={"BLOCK_M": 16, "BLOCK_N": 16,
                "BLOCK_K": 16, "GROUP_M": 1}, grid="cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
                dtype="float16", footprint_bytes="(M * K + K * N + M * N) * itemsize",
                reference=lambda a, b: a @ b,
                model={"tiled": {"m": "M - 64", "n": "N", "k": "K", "tile_m": "BLOCK_M",
                                 "tile_n": "BLOCK_N", "tile_k": "BLOCK_K"}})
def mm(a, b, c, config):
    matmul_kernel[(config.grid,)](a, b, c, a.shape[0], b.shape[1], a.shape[1],
                                  num_warps=config.num_warps, **config.meta)
'''
SHRUNK_SPACE = """\
kernel: tiled_shrunk_kernel:mm
sampler: auto
params:
  block: [128]
  BLOCK_M: [16, 32]
  M: [128]
"""


def test_a_tiled_size_that_the_interpreters_shrunk_dimensions_make_no_size_is_refused(
        tmp_path, capsys, monkeypatch):
    """A tiled model's size holds at the dimensions the space gives (``M - 64`` at
    ``M=128``), but the interpreter shrinks them (M to 64): ``run`` refuses it at the
    dimension's line before it opens the study, not as the first guess is made."""
    path, err = _refused_run(tmp_path, capsys, monkeypatch, "tiled_shrunk_kernel",
                             SHRUNK_MODULE, SHRUNK_SPACE)
    assert err.startswith(f"{path}:6: params.M[0]: on Triton interpreter (CPU), kernel "
                          "model {tiled: {m: M - 64, "), err
    assert "m 'M - 64' gives 0 at M=64" in err, err


def _refused_run(tmp_path, capsys, monkeypatch, module, text, space):
    """``sweeper run`` of ``space`` (its kernel in ``module``, written from ``text``) on the
    interpreter, refused: exit status 2, one line on stderr and no traceback, nothing
    written; the space's path and that line."""
    (tmp_path / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "space.yaml"
    path.write_text(space)
    studies = tmp_path / "st"
    assert main(["run", str(path), "--device", "interpret", "--studies-dir", str(studies),
                 "--allow-path", str(ROOT), "--gpu-check", "off"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert not studies.exists()
    return path, err


@pytest.mark.gpu
def test_auto_measures_the_declared_models_best_guess_first_on_the_gpu(tmp_path, monkeypatch):
    """``spaces/cuda-copy.yaml`` under ``auto`` on a GPU, 64 MiB and three trials: the
    kernel compiled through NVRTC, every trial verified, and the first the config the
    declared model guesses best on this GPU."""
    monkeypatch.setenv("SWEEPER_CACHE", str(tmp_path / "cache"))
    device = open_device("cuda")
    space = dataclasses.replace(
        load_space(ROOT / "spaces" / "cuda-copy.yaml", ["footprint=64MiB"]),
        sampler=SamplerSpec(name="auto", seed=0))
    _auto_starts_at_the_best_guess(tmp_path, space, device)


def _auto_starts_at_the_best_guess(tmp_path, space, device, **sweep):
    """Three trials of ``space`` under ``auto`` on ``device``: each verified, and the
    first the config the kernel's declared model guesses best there."""
    from sweeper.study import resolved

    kernel = load_kernel(space.kernel, space.kernel_options)
    assert kernel.declared_model is not None
    facts = device.facts()
    guesses = {tuple(sorted(choice.items())): kernel.model(config, facts)
               for choice, config in resolved(space, facts.env(), facts.max_footprint)
               if isinstance(config, Config)}
    store = StudyStore(tmp_path / "auto")
    open_study(store, space, kernel, device, command="test")
    Sweep(space, kernel, device, store, max_trials=3, **sweep).run()
    trials = store.records()[0]
    assert len(trials) == 3 and all(t.ok for t in trials), [t.reason for t in trials]
    assert guesses[tuple(sorted(trials[0].choice.items()))] == max(guesses.values())


# -- model: {tiled: ...} -----------------------------------------------------------------------

TILED = {"tiled": {"m": "M", "n": "N", "k": "K", "tile_m": "BLOCK_M", "tile_n": "BLOCK_N",
                   "tile_k": "BLOCK_K", "stages": "num_stages"}}


def _matmul(a, b, c, config):
    raise AssertionError("never launched here")


def _tiled_kernel(model, name="mm-declared", meta=None):
    return sweeper.kernel(_matmul, inputs={"a": "M, K", "b": "K, N"}, outputs={"c": "M, N"},
                          dims={"M": 256, "N": 256, "K": 256},
                          meta=meta or {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32,
                                        "num_stages": 3},
                          grid="cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
                          footprint_bytes="(M * K + K * N + M * N) * itemsize",
                          reference=lambda a, b: a @ b, name=name, model=model)


def test_a_declared_tiled_model_guesses_as_the_built_in_tiled_model_at_its_settings():
    """``model: {tiled: ...}``: sizes from the problem's dimensions, tiles and stages from
    the config, answered by ``_guess.tiled``; ``stages`` defaults to 3 and ``split_k`` to
    1, and the declaration as written is kept for messages."""
    kernel = _tiled_kernel(TILED)()
    problem = Problem("bfloat16", 3 * 4096 * 4096 * 2,
                      dims=(("M", 4096), ("N", 2048), ("K", 4096)))
    config = Config(problem=problem, grid=32 * 16, block=256,
                    meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4})
    assert kernel.model(config, H200) == _guess.tiled(config, H200.sms, (4096, 2048, 4096),
                                                      128, 128, 64, 4)
    assert kernel.declared_model.text == (
        "{tiled: {m: M, n: N, k: K, tile_m: BLOCK_M, tile_n: BLOCK_N, tile_k: BLOCK_K, "
        "stages: num_stages, split_k: 1}}")
    defaults = {"tiled": {k: v for k, v in TILED["tiled"].items() if k != "stages"}}
    assert _tiled_kernel(defaults, "mm-defaults")().model(config, H200) == \
        _guess.tiled(config, H200.sms, (4096, 2048, 4096), 128, 128, 64, 3)


@pytest.mark.parametrize(("space", "variant", "count"), [
    ("spaces/matmul.yaml", "auto-declared", 144),
    ("benchmarks/spaces/matmul-k256.yaml", "auto-declared-tma", 0),
])
def test_a_tiled_declaration_of_what_the_built_in_matmul_does_guesses_as_its_own_model(
        space, variant, count):
    """The built-in matmul searched as a user's kernel declaring the tiled model
    (``benchmarks/search_efficiency.py``'s ``auto-declared``): on ``spaces/matmul.yaml``,
    whose configs load by pointer in one slice of K, every guess is the built-in's; with
    its TMA loads, the epilogue's shared memory and the flattened loop declared too
    (``auto-declared-tma``), on a space of TMA configs as well."""
    from sweeper.study import resolved
    from tests.test_dispatch_benchmarks import script

    kernel = load_kernel("matmul")
    declared = script("search_efficiency").declared_model(kernel, variant)
    device = open_device("replay:" + str(ROOT / "tests" / "data" / "replay" / "h200-matmul.csv"))
    facts = device.facts()
    configs = [c for _, c in resolved(load_space(ROOT / space), facts.env(),
                                      facts.max_footprint) if isinstance(c, Config)]
    assert len(configs) == count or (not count and len(configs) > 100)
    assert any(c.meta.get("TMA") for c in configs) is (count == 0)
    assert all(declared(c, facts) == kernel.model(c, facts) for c in configs)


@pytest.mark.parametrize("space", ["spaces/softmax.yaml",
                                   "benchmarks/spaces/softmax-bf16-32k.yaml"])
def test_a_rowwise_declaration_guesses_as_the_built_in_softmax_model(space):
    """Softmax searched as a user's kernel declaring ``rowwise`` (rows and cols over its
    dimensions, the tile its ``BLOCK``): every guess is the built-in softmax model's, rows
    in one tile and rows read twice alike."""
    from sweeper.study import resolved
    from tests.test_dispatch_benchmarks import script

    kernel = load_kernel("softmax")
    declared = script("search_efficiency").declared_model(kernel)
    device = open_device("replay:" + str(ROOT / "tests" / "data" / "replay" / "h200-matmul.csv"))
    facts = device.facts()
    configs = [c for _, c in resolved(load_space(ROOT / space), facts.env(),
                                      facts.max_footprint) if isinstance(c, Config)]
    assert len(configs) >= 12
    assert any(c.meta["BLOCK"] < c.problem.dim("cols") for c in configs)   # rows read twice
    assert all(declared(c, facts) == kernel.model(c, facts) for c in configs)


@pytest.mark.parametrize(("model", "message"), [
    ({"rowwise": {"rows": "rows", "cols": "cols"}},
     "kernel mm-bad: model.rowwise: rowwise needs tile: the columns one program loads"),
    ({"rowwise": {"rows": "rows", "cols": "cols", "tile": "BLOCK_M"}},
     "kernel mm-bad: model.rowwise.rows: unknown name 'rows' in 'rows'; known: M, N, K"),
    ({"tiled": {k: v for k, v in TILED["tiled"].items() if k != "k"}},
     "kernel mm-bad: model.tiled: tiled needs k: the inner dimension"),
    ({"tiled": {**TILED["tiled"], "m": "P"}},
     "kernel mm-bad: model.tiled.m: unknown name 'P' in 'P'; known: M, N, K"),
    ({"tiled": {**TILED["tiled"], "tile_m": "BLOCK_MM"}},
     "kernel mm-bad: model.tiled.tile_m: unknown name 'BLOCK_MM' in 'BLOCK_MM'; known: "
     "block, itemsize, BLOCK_M, BLOCK_N, BLOCK_K, num_stages; did you mean 'BLOCK_M'?"),
    ({"tiled": {**TILED["tiled"], "stages": 0}},
     "kernel mm-bad: model.tiled.stages: 0 is no stages; allowed: at least 1, or an "
     "expression over block"),
    ({"tiled": {**TILED["tiled"], "split_k": "2 - 2"}},
     "kernel mm-bad: model.tiled.split_k: '2 - 2' gives 0; allowed: a split_k of at least "
     "1, or an expression over block"),
    ({"tiled": {**TILED["tiled"], "tile": "BLOCK_M"}},
     "kernel mm-bad: model.tiled.tile: tiled takes no setting 'tile'; allowed: m, n, k, "
     "tile_m"),
    ({"tiled": "BLOCK_M"}, "kernel mm-bad: model.tiled: 'BLOCK_M' is not tiled's settings; "
     "allowed: a mapping of m, n, k, tile_m, tile_n, tile_k, stages, split_k, epilogue, "
     "tma, flatten, such as {tiled: {m: M"),
    ({"tiled": {**TILED["tiled"], "epilogue": -1}},
     "kernel mm-bad: model.tiled.epilogue: -1 is no epilogue; allowed: at least 0, or an "
     "expression over block"),
])
def test_a_bad_tiled_model_is_refused_as_it_is_declared(model, message):
    with pytest.raises(SweeperError) as refused:
        _tiled_kernel(model, "mm-bad")
    assert str(refused.value).startswith(message), str(refused.value)


TILED_MODULE = '''\
import sweeper
from tests.test_declared_model import TILED, _matmul

matmul = sweeper.kernel(_matmul, inputs={"a": "M, K", "b": "K, N"}, outputs={"c": "M, N"},
                        dims={"M": 256, "N": 256, "K": 256},
                        meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_stages": 3},
                        grid="cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)",
                        footprint_bytes="(M * K + K * N + M * N) * itemsize",
                        reference=lambda a, b: a @ b, name="mm-tile-k",
                        model={"tiled": {**TILED["tiled"], "tile_k": "BLOCK_K - 32"}})
'''
TILED_SPACE = """\
kernel: tiled_kernel_module:matmul
sampler: auto
params:
  BLOCK_M: [64]
  BLOCK_N: [64]
  BLOCK_K: [32,
            64]
  num_stages: [3]
  dtype: [float16]
"""


def test_a_tiled_setting_below_one_at_some_value_is_refused_at_the_kernel_line(
        tmp_path, capsys, monkeypatch):
    """The space's values are checked against every setting the declaration reads as the
    space is read: ``tile_k: BLOCK_K - 32`` is no tile at ``BLOCK_K`` 32."""
    path, err = _refused_run(tmp_path, capsys, monkeypatch, "tiled_kernel_module",
                             TILED_MODULE, TILED_SPACE)
    assert err.startswith(f"{path}:1: kernel.model.tiled.tile_k: 'BLOCK_K - 32' gives 0 at "
                          "BLOCK_K=32; allowed: a tile_k of at least 1 at every config"), err


@pytest.mark.parametrize(("device_name", "changes"), [
    ("interpret", []),
    pytest.param("cuda", ["M=2048", "N=2048", "K=2048"], marks=pytest.mark.gpu),
])
def test_auto_measures_the_tiled_models_best_guess_first(tmp_path, device_name, changes):
    """``examples/matmul.yaml``, the Triton tutorial's matmul declaring the tiled model,
    under ``auto`` on the interpreter and at 2048³ fp16 on a GPU: every trial verified
    against the reference, and the first the config the declared model guesses best on
    that device."""
    space = load_space(ROOT / "examples" / "matmul.yaml", changes)
    _auto_starts_at_the_best_guess(tmp_path, space, open_device(device_name), finals=False)
