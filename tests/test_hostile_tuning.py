"""Tuning files tampered with by hand: every value a launch would take from one is
checked when the file is read, and a bad one refuses the whole file with one line naming
the entry and the key, from ``sweeper tuned`` (exit 2), :func:`sweeper.tuned` and
``@sweeper.tuned_kernel`` alike (a :class:`TuningFileError`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sweeper
from sweeper.cli import main
from sweeper.errors import SweeperError, TuningFileError
from sweeper.export import tuned
from sweeper.tuning import read_tuning

GPU = "Fake GPU"


def _entry(**changes):
    entry = {"kernel": "copy", "gpu": GPU, "dtype": "float32", "footprint": 1 << 20,
             "dims": {"n": 1 << 18}, "grid": 256, "grid_expr": "cdiv(n, BLOCK)",
             "block": 128, "meta": {"BLOCK": 1024}, "gbps": 30.0, "median_ms": 1.0,
             "study": "s", "trial": 0, "facts": {"sms": 100, "l2_bytes": 1 << 20},
             "top": [{"grid_expr": "cdiv(n, BLOCK)", "block": 128, "meta": {"BLOCK": 1024},
                      "slowdown": 1.0}]}
    for key, value in changes.items():
        scope, _, sub = key.partition("__")
        if sub:
            entry[scope] = {**entry[scope], sub: value}
        else:
            entry[key] = value
    return entry


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tuning.json"
    path.write_text(text)
    return path


def _file(tmp_path: Path, *entries, version: object = 1) -> Path:
    return _write(tmp_path, json.dumps({"version": version, "entries": list(entries)}))


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err.rstrip("\n")


BLOCKS = "allowed: 32, 64, 128, 256, 512, 1024 (num_warps × 32)"
INT64 = "9223372036854775807"
NAME = "a Python identifier, not a keyword, not starting with '__'"
#: (what is changed in the second entry, the JSON text that replaces a value where only
#: JSON can say it, what the refusal says)
TAMPERED = [
    pytest.param({"block": 1}, None, f"block is 1; {BLOCKS}", id="block-1"),
    pytest.param({"block": 96}, None, f"block is 96; {BLOCKS}", id="block-96"),
    pytest.param({"source_hash": "0123"}, None, "source_hash is '0123'; it must be 16 hex "
                 "digits (the kernel's source hash), or left out", id="source-hash-short"),
    pytest.param({"source_hash": 5}, None, "source_hash is 5, not str | None",
                 id="source-hash-number"),
    pytest.param({"block": 2048}, None, f"block is 2048; {BLOCKS}", id="block-2048"),
    pytest.param({"block": 0}, '"block": 1e30', "block is 1e+30, not int",
                 id="block-1e30"),
    pytest.param({"block": 0}, '"block": 1000000000000000000000000000000',
                 f"block is 1000000000000000000000000000000; {BLOCKS}", id="block-10**30"),
    pytest.param({"meta": {"x y": 1}}, None, f"meta has the key 'x y'; a meta-parameter's "
                 f"name is {NAME}", id="meta-key-space"),
    pytest.param({"meta": {"__class__": 1}}, None, "meta has the key '__class__'; a "
                 f"meta-parameter's name is {NAME}", id="meta-key-dunder"),
    pytest.param({"meta": {"lambda": 1}}, None, "meta has the key 'lambda'; a "
                 f"meta-parameter's name is {NAME}", id="meta-key-keyword"),
    pytest.param({"meta": {"BLOCK": 1024, "num_warps": 64}}, None,
                 "meta has the key 'num_warps', a Triton launch option; the launch takes "
                 "num_warps from block (block / 32) and no other option but num_stages "
                 "from meta", id="meta-num-warps"),
    pytest.param({"meta": {"BLOCK": 1024, "num_ctas": 2}}, None,
                 "meta has the key 'num_ctas', a Triton launch option", id="meta-num-ctas"),
    pytest.param({"meta": {"BLOCK": 1024, "grid": 2}}, None,
                 "meta has the key 'grid', a Triton launch option", id="meta-grid"),
    pytest.param({"meta": {"BLOCK": 1024, "n": 2}}, None,
                 "meta has the key 'n', a name of the problem or the device; a "
                 "meta-parameter cannot take its place", id="meta-shadows-a-dimension"),
    pytest.param({"meta": {"BLOCK": 0}}, '"meta": {"BLOCK": 1e300}',
                 "meta.BLOCK is 1e+300; it must be an integer", id="meta-float"),
    pytest.param({"meta": {"BLOCK": 0}}, '"meta": {"BLOCK": 100000000000000000000000}',
                 "meta.BLOCK is 100000000000000000000000; it must be an integer from "
                 f"-9223372036854775808 to {INT64} (int64)", id="meta-10**23"),
    pytest.param({"meta": {"BLOCK": True}}, None, "meta.BLOCK is True; it must be an integer",
                 id="meta-bool"),
    pytest.param({"dims": {"n": 0}}, '"dims": {"n": 1e40}', "dims.n is 1e+40; it must be "
                 "an integer", id="dims-1e40"),
    pytest.param({"dims": {"n": 0}}, '"dims": {"n": 10000000000000000000000000000000000000000}',
                 "dims.n is a number of some 40 digits; it must be positive and at most "
                 f"{INT64} (int64)", id="dims-10**40"),
    pytest.param({"dims": {"n": -4}}, None, "dims.n is -4; it must be positive",
                 id="dims-negative"),
    pytest.param({"dims": {"x y": 4}}, None, f"dims has the key 'x y'; a dimension's name "
                 f"is {NAME}", id="dims-key"),
    pytest.param({"footprint": 1 << 70}, None, f"footprint is {1 << 70}; it must be "
                 f"positive and at most {INT64} (int64)", id="footprint-2**70"),
    pytest.param({"grid": 0}, None, "grid is 0; it must be an integer from 1 to 2147483647 "
                 "(the most programs a CUDA launch takes)", id="grid-0"),
    pytest.param({"grid": 1 << 31}, None, "grid is 2147483648; it must be an integer from 1 "
                 "to 2147483647", id="grid-2**31"),
    pytest.param({"grid": "many"}, None, "grid is 'many', not int",
                 id="grid-text"),
    pytest.param({"facts__sms": 1 << 64}, None, f"facts.sms is {1 << 64}; it must be "
                 f"at least 0 and at most {INT64} (int64)", id="facts-huge"),
    pytest.param({"grid_expr": "cdiv(n,"}, None, "grid_expr: cannot parse expression",
                 id="grid-expr-syntax"),
    pytest.param({"top": [{"grid_expr": "n", "block": 1, "meta": {}, "slowdown": 1.0}]},
                 None, f"top[0].block is 1; {BLOCKS}", id="top-block"),
    pytest.param({"top": [{"grid_expr": "n", "block": 64, "meta": {"num_warps": 8},
                           "slowdown": 1.0}]}, None,
                 "top[0].meta has the key 'num_warps', a Triton launch option",
                 id="top-meta"),
    pytest.param({"top": [{"grid_expr": "n +", "block": 64, "meta": {}, "slowdown": 1.0}]},
                 None, "top[0].grid_expr: cannot parse expression", id="top-grid-expr"),
]


def _tampered(tmp_path: Path, change: dict, raw: str | None) -> Path:
    path = _file(tmp_path, _entry(), _entry(**change))
    if raw is not None:
        key = raw.split(":")[0]
        shown = f"{key}: {json.dumps(_entry(**change)[key.strip(chr(34))])}"
        text = path.read_text()
        assert text.count(shown) == 1
        path.write_text(text.replace(shown, raw))
    return path


@pytest.mark.parametrize("change, raw, said", TAMPERED)
def test_sweeper_tuned_refuses_a_tampered_entry_in_one_line(tmp_path, capsys, change, raw,
                                                            said):
    path = _tampered(tmp_path, change, raw)
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"sweeper: {path}: entries[1] (copy float32 ")
    assert said in line


@pytest.mark.parametrize("change, raw, said", TAMPERED)
def test_the_api_refuses_a_tampered_entry_with_a_typed_error(tmp_path, change, raw, said):
    path = _tampered(tmp_path, change, raw)
    with pytest.raises(TuningFileError) as err:   # the untampered entry 0 is not served
        tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)
    assert err.value.file == str(path) and err.value.entry == 1
    assert said in str(err.value)
    with pytest.raises(TuningFileError):
        sweeper.tuned_kernel(path, key=["n"], gpu=GPU)


@pytest.mark.parametrize("kernel, block, said", [
    ("cuda", 48, None), ("cuda", 1, None), ("cuda", 1024, None),
    ("cuda", 2048, "block is 2048; allowed: 1 to 1024 threads (blockDim.x)"),
    ("cuda", 0, "block is 0; allowed: 1 to 1024 threads (blockDim.x)"),
    ("copy", 48, f"block is 48; {BLOCKS}"), ("mine.kernels:k", 48, None)])
def test_an_entry_s_block_is_checked_as_its_kernel_s_launch_takes_it(tmp_path, kernel, block,
                                                                      said):
    """A block is one the kernel's launch takes: any count of threads up to 1024 for a
    CUDA C kernel (Kernel Tuner's 48, 16 or 1), warps for a Triton one; a user's kernel,
    not imported as the file is read, takes what any CUDA launch takes."""
    top = [{"grid_expr": "cdiv(n, block)", "block": block, "meta": {}, "slowdown": 1.0}]
    path = _file(tmp_path, _entry(kernel=kernel, block=block, meta={},
                                  grid_expr="cdiv(n, block)", top=top))
    if said is None:
        assert [e.block for e in read_tuning(path).entries] == [block]
        return
    with pytest.raises(TuningFileError) as err:
        read_tuning(path)
    assert f"): {said}" in str(err.value)


@pytest.mark.parametrize("version, shown", [
    ("true", "True"), ("1.0", "1.0"), ('"1"', "'1'"), ("2", "2"), ("0", "0"),
    ("null", "None")])
def test_a_version_that_is_not_a_supported_integer_is_refused(tmp_path, capsys, version,
                                                              shown):
    path = _write(tmp_path, f'{{"version": {version}, "entries": []}}')
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning",
                 str(path)]) == 2
    assert _one_line(capsys) == (f"sweeper: {path}: tuning file version {shown}; this "
                                 "sweeper reads version 1 (an object with version and "
                                 "entries)")
    with pytest.raises(TuningFileError) as err:
        tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)
    assert err.value.entry is None


def test_an_entry_of_a_newer_format_is_refused(tmp_path):
    path = _file(tmp_path, _entry(format=99))
    with pytest.raises(TuningFileError, match=r"entries\[0\] \(copy float32 1MiB on Fake "
                                              r"GPU\): written in format 99 by a newer "
                                              r"sweeper; this one reads tuning entries of "
                                              r"formats 1 to \d+: upgrade sweeper"):
        tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)


@pytest.mark.parametrize("top, said", [
    (5, "top is 5, not list[TopConfig]"), ([5], "top[0] is 5, not an object"),
    ([{"grid_expr": "n"}], "top[0]: no block, meta, slowdown")])
def test_a_top_that_is_not_a_list_of_configs_is_refused(tmp_path, top, said):
    path = _file(tmp_path, _entry(top=top))
    with pytest.raises(TuningFileError) as err:
        tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)
    assert f"entries[0] (copy float32 1MiB on Fake GPU): {said}; " in str(err.value)


def test_a_grid_computed_past_cuda_s_limit_is_refused_at_lookup(tmp_path):
    path = _file(tmp_path, _entry(grid_expr="n * n"))
    with pytest.raises(TuningFileError, match=r"entries\[0\] \(copy float32 1MiB on Fake "
                                              r"GPU\): grid_expr 'n \* n' gives "
                                              r"68719476736 programs at 1MiB; a launch takes "
                                              r"at most 2147483647 \(CUDA's grid limit\)"):
        tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)


def test_launch_options_keep_num_warps_from_the_block(tmp_path):
    cfg = tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU,
                path=_file(tmp_path, _entry()))
    assert cfg.launch_options() == {"num_warps": 4, "BLOCK": 1024}


def test_a_tuned_num_stages_stays_a_meta_parameter(tmp_path):
    """``num_stages`` is the one launch option a space tunes (matmul, from_autotune)."""
    path = _file(tmp_path, _entry(meta={"BLOCK": 1024, "num_stages": 3}))
    cfg = tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)
    assert cfg.launch_options() == {"num_warps": 4, "BLOCK": 1024, "num_stages": 3}


def test_the_error_is_a_sweeper_error():
    assert issubclass(TuningFileError, SweeperError)
