"""``sweeper.tuned`` as a launch asks: dtype spellings, a replayed or sibling GPU, a user
kernel by its name, how far the tuned problem is from the asked one, and a kernel whose
source changed since it was tuned."""

import importlib
import json
import re
import sys
import warnings
from pathlib import Path

import pytest
import torch

from sweeper.errors import StaleTuningWarning, SweeperError, TuningWarning
from sweeper.export import export_study
from sweeper.lookup import describe, tuned
from sweeper.measure import summarize
from sweeper.space import Config, Problem
from sweeper.store import StudyStore, TrialRecord
from sweeper.trial import TrialStatus
from tests.conftest import ROOT


def study(tmp_path, name, problems, *, gpu="NVIDIA H200", kernel="copy", kernel_name=None,
          capability=None):
    """A study of one trial per problem (footprint or dims) on ``gpu``."""
    store = StudyStore(tmp_path / name)
    env = {"gpu": gpu, "sms": 132, "l2_bytes": 1 << 20}
    if capability:
        env["capability"] = capability
    meta = {"study": name, "kernel": kernel, "environment": env}
    if kernel_name:
        meta["kernel_name"] = kernel_name
    store.create(meta)
    for i, problem in enumerate(problems):
        dims = tuple(problem.items()) if isinstance(problem, dict) else ()
        footprint = 4 * problem["M"] * problem["K"] if dims else problem
        store.append(TrialRecord(
            number=i, status=TrialStatus.OK,
            choice={"grid": "cdiv(M, BLOCK)" if dims else "cdiv(n, BLOCK)", "block": "128",
                    "BLOCK": str(256 << i)},
            config=Config(Problem("float32", footprint, dims), grid=1, block=128,
                          meta={"BLOCK": 256 << i}),
            stats=summarize([1.0] * 3), gbps=10.0))
    store.close()
    return store


@pytest.fixture
def path(tmp_path):
    return tmp_path / "tuning.json"


@pytest.mark.parametrize("dtype", ["float32", "fp32", "FP32", "f32", torch.float32,
                                   "torch.float32"])
def test_dtype_by_any_usual_spelling(tmp_path, path, dtype):
    export_study(study(tmp_path, "a", [1 << 20]), path)
    cfg = tuned("copy", dtype=dtype, footprint=1 << 20, gpu="NVIDIA H200", path=path)
    assert cfg.dtype == "float32" and cfg.meta == {"BLOCK": 256}


def test_an_unknown_dtype_lists_what_is_allowed(tmp_path, path):
    export_study(study(tmp_path, "a", [1 << 20]), path)
    with pytest.raises(SweeperError, match=r"unknown dtype 'fp33'; allowed: float64, "
                                           r"float32, .* the aliases fp64, .*or a torch dtype"):
        tuned("copy", dtype="fp33", footprint=1 << 20, gpu="NVIDIA H200", path=path)


def test_a_replayed_study_is_found_by_the_gpu_it_replays(tmp_path, path):
    export_study(study(tmp_path, "a", [1 << 20], gpu="replay: NVIDIA H200"), path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # an exact match: no warning
        cfg = tuned("copy", dtype="float32", footprint=1 << 20, gpu="NVIDIA H200", path=path)
    assert cfg.gpu == "replay: NVIDIA H200" and not cfg.by_architecture


def test_a_lookup_here_of_a_replay_alone_suggests_naming_its_gpu(tmp_path, path, capsys):
    """Without a GPU (this machine), an entry of a replay is not this device's: the
    message names the option that asks for it, as each caller spells it."""
    from sweeper.cli import main
    from sweeper.lookup import current_gpu

    export_study(study(tmp_path, "a", [1 << 20], gpu="replay: NVIDIA H200"), path)
    here = current_gpu()
    with pytest.raises(SweeperError, match=re.escape(
            f"no tuned config for copy float32 on {here!r}; it is tuned on 'replay: NVIDIA "
            "H200'; to use its winners here, give gpu='replay: NVIDIA H200'") + "$"):
        tuned("copy", dtype="float32", footprint=1 << 20, path=path)
    assert main(["tuned", "copy", "--footprint", "1MiB", "--tuning", str(path)]) == 2
    assert capsys.readouterr().err.endswith(
        "; it is tuned on 'replay: NVIDIA H200'; to use its winners here, give --gpu 'replay: "
        "NVIDIA H200'\n")


def test_another_gpu_of_the_architecture_with_a_warning(tmp_path, path):
    export_study(study(tmp_path, "a", [1 << 20], capability="9.0"), path)
    with pytest.warns(TuningWarning, match=r"copy float32: nothing tuned on 'NVIDIA H100'; "
                                           r"using the config tuned on 'NVIDIA H200', the "
                                           r"same architecture"):
        cfg = tuned("copy", dtype="float32", footprint=1 << 20, gpu="NVIDIA H100", path=path)
    assert cfg.by_architecture and cfg.meta == {"BLOCK": 256}
    with pytest.raises(SweeperError, match="no tuned config for copy float32 on 'NVIDIA A100'"):
        tuned("copy", dtype="float32", footprint=1 << 20, gpu="NVIDIA A100", path=path)


def test_a_user_kernel_by_its_name_or_its_path(tmp_path, path):
    _, [entry] = export_study(study(tmp_path, "a", [1 << 20], kernel="examples.scale:scale",
                                    kernel_name="scale"), path)
    assert (entry["kernel"], entry["kernel_path"]) == ("scale", "examples.scale:scale")
    for name in ("scale", "examples.scale:scale"):
        assert tuned(name, dtype="float32", footprint=1 << 20, gpu="NVIDIA H200",
                     path=path).kernel == "scale"


def test_an_older_file_keyed_by_the_path_is_read_and_replaced(tmp_path, path):
    export_study(study(tmp_path, "old", [1 << 20], kernel="mymod:scale"), path)
    assert json.loads(path.read_text())["entries"][0]["kernel"] == "mymod:scale"
    assert tuned("scale", dtype="float32", footprint=1 << 20, gpu="NVIDIA H200",
                 path=path).study == "old"
    export_study(study(tmp_path, "new", [1 << 20], kernel="mymod:scale",
                       kernel_name="scale"), path)
    entries = json.loads(path.read_text())["entries"]
    assert [(e["kernel"], e["study"]) for e in entries] == [("scale", "new")]


def test_kernels_of_one_name_keep_their_own_entries(tmp_path, path):
    export_study(study(tmp_path, "user", [1 << 10, 1 << 20], kernel="examples.scale:scale",
                       kernel_name="scale"), path)
    export_study(study(tmp_path, "builtin", [1 << 20], kernel="scale"), path)
    entries = json.loads(path.read_text())["entries"]
    assert sorted((e["study"], e["footprint"]) for e in entries) == [
        ("builtin", 1 << 20), ("user", 1 << 10), ("user", 1 << 20)]
    asked = {"dtype": "float32", "footprint": 1 << 20, "gpu": "NVIDIA H200", "path": path}
    assert tuned("examples.scale:scale", **asked).meta == {"BLOCK": 512}
    with pytest.warns(TuningWarning, match=r"'scale' is the kernel of that name; "
                                           r"examples.scale:scale is tuned under that name"
                      ) as said:
        assert tuned("scale", **asked).study == "builtin"
    assert [w.filename for w in said] == [__file__]      # at the caller's line
    export_study(study(tmp_path, "other", [1 << 20], kernel="other.mod:scale",
                       kernel_name="scale"), path)
    with pytest.warns(TuningWarning, match=r"examples.scale:scale, other.mod:scale are "):
        assert tuned("scale", **asked).study == "builtin"
    path.write_text(json.dumps({"version": 1, "entries": [
        e for e in json.loads(path.read_text())["entries"] if e["study"] != "builtin"]}))
    with pytest.raises(SweeperError, match=r"'scale' names 2 tuned kernels, examples.scale:"
                                           r"scale, other.mod:scale; ask for one by its "
                                           r"module:attr path"):
        tuned("scale", **asked)
    assert tuned("other.mod:scale", **asked).study == "other"


def test_the_command_says_a_tuning_warning_in_one_line(tmp_path, path, capsys):
    from sweeper.cli import main

    export_study(study(tmp_path, "a", [1 << 30]), path)
    assert main(["tuned", "copy", "--footprint", "16KiB", "--gpu", "NVIDIA H200",
                 "--tuning", str(path)]) == 0
    err = capsys.readouterr().err
    assert err == ("sweeper: warning: copy float32: the nearest tuned problem, 1GiB, is far "
                   "from the asked 16KiB (more than 4x in a dimension); its config may be far "
                   "from this problem's best: tune 16KiB (add it to the space of study a, "
                   "run it and export the study again)\n")


def test_the_command_names_the_option_of_a_dtype_it_does_not_know(tmp_path, path, capsys):
    from sweeper.cli import main

    export_study(study(tmp_path, "a", [1 << 30]), path)
    assert main(["tuned", "copy", "--footprint", "1GiB", "--dtype", "float33", "--gpu",
                 "NVIDIA H200", "--tuning", str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        "sweeper: --dtype: unknown dtype 'float33'; allowed: float64, float32, ")
    assert main(["tuned", "copy", "--footprint", "1GiB", "--dtype", "fp32", "--gpu",
                 "NVIDIA H200", "--tuning", str(path)]) == 0


def test_a_far_problem_is_said_and_warned(tmp_path, path):
    export_study(study(tmp_path, "a", [1 << 30]), path)
    with pytest.warns(TuningWarning, match=r"copy float32: the nearest tuned problem, 1GiB, "
                                           r"is far from the asked 16KiB \(more than 4x in a "
                                           r"dimension\)"):
        cfg = tuned("copy", dtype="float32", footprint=16 << 10, gpu="NVIDIA H200", path=path)
    assert cfg.far and cfg.distance == 16 and cfg.grid == (16 << 10) // 4 // 256
    assert "(nearest, log2 distance 16; far)" in describe(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # 4x is near enough: no warning
        near = tuned("copy", dtype="float32", footprint=256 << 20, gpu="NVIDIA H200",
                     path=path)
    assert not near.far and near.distance == 2
    exact = tuned("copy", dtype="float32", footprint=1 << 30, gpu="NVIDIA H200", path=path)
    assert exact.distance == 0 and "(exact)" in describe(exact)


def test_nearest_shape_sums_log_distances_and_warns_per_dimension(tmp_path, path):
    shapes = [{"M": 1024, "N": 1024, "K": 1024}, {"M": 4096, "N": 4096, "K": 4096}]
    export_study(study(tmp_path, "a", shapes), path)
    cfg = tuned("copy", dtype="float32", dims={"M": 3000, "N": 3000, "K": 2048},
                gpu="NVIDIA H200", path=path)
    assert cfg.dims == shapes[1] and not cfg.far
    with pytest.warns(TuningWarning, match=r"M=4096 N=4096 K=4096, is far from the asked "
                                           r"M=4096 N=4096 K=128"):
        tuned("copy", dtype="float32", dims={"M": 4096, "N": 4096, "K": 128},
              gpu="NVIDIA H200", path=path)


def test_a_lookup_that_finds_nothing_says_what_the_file_holds(tmp_path, path):
    """Where nothing matches, the message names what to ask for instead: the GPUs the
    kernel was tuned on in that dtype, else its dtypes, else the kernels the file has."""
    export_study(study(tmp_path, "a", [1 << 20]), path)
    asked = {"footprint": 1 << 20, "path": path}
    with pytest.raises(SweeperError, match=r"no tuned config for copy float32 on 'NVIDIA "
                                           r"B200'; it is tuned on 'NVIDIA H200'$"):
        tuned("copy", dtype="float32", gpu="NVIDIA B200", **asked)
    with pytest.raises(SweeperError, match=r"no tuned config for copy float16 on 'NVIDIA "
                                           r"H200'; copy is tuned in float32$"):
        tuned("copy", dtype="float16", gpu="NVIDIA H200", **asked)
    with pytest.raises(SweeperError, match=r"no tuned config for cpy float32 on 'NVIDIA "
                                           r"H200'; tuned kernels: copy; did you mean 'copy'\?$"):
        tuned("cpy", dtype="float32", gpu="NVIDIA H200", **asked)
    # a user's kernel by the path that finds it: its name alone may be a built-in's
    export_study(study(tmp_path, "mine", [1 << 20], kernel="mymod:scale",
                       kernel_name="scale"), path)
    with pytest.raises(SweeperError, match=r"no tuned config for examples.scale:scale "
                                           r"float32 on 'NVIDIA H200'; tuned kernels: copy, "
                                           r"mymod:scale$"):
        tuned("examples.scale:scale", dtype="float32", gpu="NVIDIA H200", **asked)
    with pytest.raises(SweeperError, match=r"; did you mean 'mymod:scale'\?$"):
        tuned("mymod:scal", dtype="float32", gpu="NVIDIA H200", **asked)


def test_numpy_integers_are_sizes_as_python_integers_are(tmp_path, path):
    """Production code computes sizes with numpy (``np.prod(shape)``): an ``np.int64`` is
    a positive integer, looked up as one, not refused as none."""
    import numpy as np

    export_study(study(tmp_path, "a", [{"M": 1024, "N": 1024, "K": 1024}]), path)
    cfg = tuned("copy", dtype="float32", dims={"M": np.int64(1024), "N": np.int32(1024),
                                               "K": 1024}, gpu="NVIDIA H200", path=path)
    assert cfg.dims == {"M": 1024, "N": 1024, "K": 1024} and cfg.distance == 0
    export_study(study(tmp_path, "b", [1 << 20]), path)
    assert tuned("copy", dtype="float32", footprint=np.int64(1 << 20), gpu="NVIDIA H200",
                 path=path).footprint == 1 << 20


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kernel": 5}, "kernel 5: give the kernel's name as text (e.g. 'matmul', or its "
     "'module:attr' path)"),
    ({"gpu": 5}, "gpu 5: give the GPU's name as text (e.g. 'NVIDIA H100 80GB HBM3'), or None "
     "for this one"),
    ({"path": 5}, "path 5: give the tuning file's path (text or a Path), or None for "
     "$SWEEPER_TUNING or studies/tuning.json"),
    ({"dims": [1024]}, "dims [1024]: give each dimension a positive integer"),
    ({"dims": {"M": True}}, "dims {'M': True}: give each dimension a positive integer"),
])
def test_arguments_of_the_wrong_type_are_one_line_not_a_traceback(tmp_path, path, kwargs,
                                                                    message):
    export_study(study(tmp_path, "a", [1 << 20]), path)
    args = {"kernel": "copy", "dtype": "float32", "footprint": 1 << 20, "gpu": "NVIDIA H200",
            "path": path, **kwargs}
    if "dims" in kwargs:
        del args["footprint"]
    with pytest.raises(SweeperError) as err:
        tuned(args.pop("kernel"), **args)
    assert str(err.value).startswith(message), str(err.value)


def test_dims_missing_one_the_kernel_was_tuned_over_are_named_not_said_untuned(tmp_path,
                                                                                path):
    export_study(study(tmp_path, "a", [{"M": 1024, "N": 1024, "K": 1024}]), path)
    with pytest.raises(SweeperError, match=r"copy float32 was tuned over the dimensions M N K"
                                           r", not M N; allowed: each of them by name"):
        tuned("copy", dtype="float32", dims={"M": 1024, "N": 1024}, gpu="NVIDIA H200",
              path=path)


@pytest.fixture
def edited_scale(tmp_path, monkeypatch):
    """examples/scale.py as the module ``edited_scale`` in ``tmp_path`` (the current
    folder), tuned on the interpreter and exported to ``tuning.json``; each lookup in the
    test forgets the kernels warned of, as a new process does."""
    from sweeper import lookup
    from sweeper.cli import main

    module = tmp_path / "edited_scale.py"
    module.write_text((ROOT / "examples" / "scale.py").read_text())
    (tmp_path / "s.yaml").write_text("kernel: edited_scale:scale\nsampler: exhaustive\n"
                                     "params: {grid: [\"cdiv(n, BLOCK)\"], block: [32], "
                                     "BLOCK: [256], footprint: [4KiB]}\n"
                                     "measure: {warmup: 1, repeat: 2}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    sys.modules.pop("edited_scale", None)
    assert main(["run", "s.yaml", "--device", "interpret", "--studies-dir", "studies",
                 "--quiet", "--no-report"]) == 0
    assert main(["export", "studies/s-interpret", "-o", "tuning.json"]) == 0
    yield module
    sys.modules.pop("edited_scale", None)


def _edit(module):
    """Edit the kernel's source as a user does between two runs of their program."""
    module.write_text(module.read_text().replace("A = 0.5", "A = 0.25"))
    sys.modules.pop("edited_scale", None)


ASKED = {"dtype": "float32", "footprint": 4096, "path": "tuning.json"}
STALE = (r"tuning.json: the winners of scale were tuned for an earlier source of "
         r"edited_scale:scale \(tuned 20\d\d-\d\d-\d\d, study s-interpret\); they are used "
         r"as they are: to tune its source as it is now, run its space into a new study "
         r"\(`sweeper run SPACE --study NEW`, or `sweeper run --from-autotune MODULE:KERNEL "
         r"--study NEW` for an autotuned kernel\) and export that$")


def test_an_entry_records_the_source_its_study_measured(edited_scale):
    from sweeper.store import StudyStore

    meta = StudyStore(edited_scale.parent / "studies" / "s-interpret").study_meta()
    [entry] = json.loads(Path("tuning.json").read_text())["entries"]
    assert entry["source_hash"] == meta.kernel_source_hash
    assert entry["tuned"].startswith(meta.created[:10])
    _edit(edited_scale)            # the study's hash, not the source's at export
    assert main_export() == 0
    [entry] = json.loads(Path("tuning.json").read_text())["entries"]
    assert entry["source_hash"] == meta.kernel_source_hash


EXPORTED_STALE = (r"sweeper: warning: study s-interpret: the source of edited_scale:scale "
                  r"changed since the study measured it; the winners written are those of "
                  r"that earlier source, and a lookup of them warns so: to tune its source "
                  r"as it is now, run its space into a new study \(`sweeper run SPACE "
                  r"--study NEW`, or `sweeper run --from-autotune MODULE:KERNEL --study NEW` "
                  r"for an autotuned kernel\) and export that")


@pytest.mark.parametrize("fmt", [(), ("--format", "triton", "-o", "tuned_scale.py")])
def test_an_export_after_the_kernel_changed_says_so_in_one_line(edited_scale, capsys, fmt):
    """Exporting a study whose kernel was edited since it measured it writes its winners
    all the same (exit 0) and says so, once, in one line: not only when they are used."""
    capsys.readouterr()
    assert main_export(*fmt) == 0                       # unchanged: nothing said
    assert capsys.readouterr().err == ""
    _edit(edited_scale)
    assert main_export(*fmt) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(EXPORTED_STALE, err.rstrip())
    assert "edited_scale" not in sys.modules             # read, never imported


def main_export(*args):
    from sweeper.cli import main

    return main(["export", "studies/s-interpret", "-o", "tuning.json", *args])


def test_an_unchanged_kernel_is_looked_up_without_a_warning(edited_scale, monkeypatch):
    monkeypatch.syspath_prepend(edited_scale.parent)
    importlib.import_module("edited_scale")
    for imported in (True, False):       # hashed as the kernel, or its module's text read
        if not imported:
            sys.modules.pop("edited_scale")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cfg = tuned("scale", **ASKED)
        assert not cfg.stale and "STALE" not in describe(cfg)
    assert "edited_scale" not in sys.modules


def test_a_kernel_edited_since_it_was_tuned_is_warned_of_once_and_still_served(edited_scale):
    before = tuned("scale", **ASKED)
    _edit(edited_scale)
    with pytest.warns(StaleTuningWarning, match=STALE) as said:
        cfg = tuned("scale", **ASKED)
    assert [w.filename for w in said] == [__file__]          # at the caller's line
    assert cfg.stale and cfg.meta == before.meta and cfg.grid == before.grid
    assert describe(cfg).endswith("(study s-interpret); STALE: tuned for an earlier source "
                                  "of the kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # once per kernel
        assert tuned("edited_scale:scale", **ASKED).stale


def test_a_candidate_from_an_entry_tuned_on_an_earlier_source_is_warned_of_once(
        edited_scale):
    """The staleness check covers every entry a lookup may dispatch to: asked between two
    tuned problems, the nearest tuned on the source there is now and the other on an
    earlier one, the lookup is ``stale`` and warns once, naming the stale entry's study."""
    data = json.loads(Path("tuning.json").read_text())
    [entry] = data["entries"]
    older = {**entry, "footprint": 16384, "dims": {"n": 4096}, "grid": 16, "study": "old",
             "source_hash": "0" * 16, "tuned": "2026-01-02T00:00:00+00:00",
             "top": [{**entry["top"][0], "meta": {"BLOCK": 512}}]}
    Path("tuning.json").write_text(json.dumps({**data, "entries": [entry, older]}))
    asked = {**ASKED, "footprint": 6144}
    with pytest.warns(StaleTuningWarning, match=r"earlier source of edited_scale:scale "
                      r"\(tuned 2026-01-02, study old\)") as said:
        cfg = tuned("scale", **asked)
    assert len(said) == 1 and cfg.study == "s-interpret" and cfg.stale
    assert {c.meta["BLOCK"] for c in cfg.candidates} == {256, 512}
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # once per kernel
        assert tuned("scale", **asked).stale
        assert not tuned("scale", **ASKED).stale           # tuned there: its own entry only


def test_sweeper_tuned_marks_a_stale_entry_and_warns_in_one_line(edited_scale, capsys):
    from sweeper.cli import main

    _edit(edited_scale)
    with edited_scale.open("a") as module:            # read, never run, to hash it
        module.write("\nopen('top-level-ran', 'w').close()\n")
    capsys.readouterr()
    assert main(["tuned", "scale", "--footprint", "4KiB", "--tuning", "tuning.json"]) == 0
    assert not Path("top-level-ran").exists() and "edited_scale" not in sys.modules
    out, err = capsys.readouterr()
    assert out.rstrip("\n").endswith("; STALE: tuned for an earlier source of the kernel")
    assert err.count("\n") == 1 and re.fullmatch(f"sweeper: warning: {STALE}", err.rstrip())


def test_a_tuned_kernel_warns_once_of_an_edited_source(edited_scale, monkeypatch):
    import sweeper

    _edit(edited_scale)
    monkeypatch.syspath_prepend(edited_scale.parent)     # the user's program imports it
    launch = sweeper.tuned_kernel("tuning.json", key=["n"], name="scale")(
        importlib.import_module("edited_scale").scale_kernel)
    x = torch.ones(1024)
    with pytest.warns(StaleTuningWarning, match=STALE) as said:
        launch(x, x.numel(), 0.5)
    assert [w.filename for w in said] == [__file__]
    assert torch.equal(x, torch.full_like(x, 0.5))        # launched all the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch(x, 512, 0.5)


def _moved(module):
    module.rename(module.with_name("renamed_scale.py"))


def _renamed(module):
    module.write_text(module.read_text().replace("def scale(", "def scale_v2("))


UNFOUND = (r"tuning.json: the winners of scale were tuned for a source of edited_scale:scale "
           r"\(study s-interpret\) that cannot be found here to compare \(module "
           r"'edited_scale' ")
#: why a kernel's source cannot be found: its module gone, or no longer defining it
GONE = (r"is neither imported nor on the import path: renamed, or tuned in another working "
        r"folder\); they are used as they are, unchecked: run from the folder that holds it, "
        r"or tune it again$")
UNDEFINED = (r"no longer defines 'scale': renamed or removed since; did you mean "
             r"'scale_v2'\?\); they are used as they are, unchecked: to tune the kernel as it "
             r"is now, run its space into a new study \(`sweeper run SPACE --study NEW`, or "
             r"`sweeper run --from-autotune MODULE:KERNEL --study NEW` for an autotuned "
             r"kernel\) and export that$")


@pytest.mark.parametrize("edit, why", [(_moved, GONE), (_renamed, UNDEFINED)])
def test_a_kernel_whose_module_is_gone_is_warned_of_once_as_unchecked(edited_scale, capsys,
                                                                       monkeypatch, edit, why):
    """Renamed since (or looked up from another folder), or there but no longer defining
    the kernel (renamed or removed since): no source to compare, so the winners are
    served unchecked, with one warning saying so."""
    edit(edited_scale)
    sys.modules.pop("edited_scale")                    # a new process, after the edit
    cfg = _served_unchecked(UNFOUND + why, ("scale", "edited_scale:scale"), ASKED,
                            ["scale", "--footprint", "4KiB"], monkeypatch, capsys)
    assert cfg.meta == {"BLOCK": 256}


def _served_unchecked(said, names, asked, cli, monkeypatch, capsys):
    """The config a lookup of the first of ``names`` with ``asked`` serves, unchecked
    (not stale), with one warning matching ``said`` at the caller's line, and none for
    the other names (once per kernel); ``sweeper tuned CLI...`` of ``tuning.json`` in a
    new process says it in one line too."""
    from sweeper import lookup
    from sweeper.cli import main

    with pytest.warns(StaleTuningWarning, match=said) as warned:
        cfg = tuned(names[0], **asked)
    assert len(warned) == 1 and [w.filename for w in warned] == [__file__]
    assert not cfg.stale
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # once per kernel
        for name in names[1:]:
            tuned(name, **asked)
    capsys.readouterr()
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())     # `sweeper tuned`: a new process
    assert main(["tuned", *cli, "--tuning", "tuning.json"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(f"sweeper: warning: {said}", err.rstrip())
    return cfg


def test_an_imported_module_no_longer_defining_the_kernel_is_warned_of(edited_scale,
                                                                       monkeypatch):
    """The program imported the kernel's module, which defines the kernel's name no more:
    the module itself is asked, and the warning is the same as where it is read, as it
    is where the program blocked its import (``sys.modules[name] = None``)."""
    from sweeper import lookup

    _renamed(edited_scale)
    sys.modules.pop("edited_scale")
    monkeypatch.syspath_prepend(edited_scale.parent)
    importlib.import_module("edited_scale")            # the program imported it
    with pytest.warns(StaleTuningWarning, match=UNFOUND + UNDEFINED):
        tuned("scale", **ASKED)
    lookup._STALE_WARNED.clear()
    monkeypatch.setitem(sys.modules, "edited_scale", None)    # its import blocked: read
    with pytest.warns(StaleTuningWarning, match=UNFOUND + UNDEFINED):
        tuned("scale", **ASKED)


def test_an_entry_without_a_source_hash_is_used_silently(edited_scale):
    data = json.loads(Path("tuning.json").read_text())
    for entry in data["entries"]:                      # as an older sweeper wrote it
        del entry["source_hash"], entry["tuned"]
    Path("tuning.json").write_text(json.dumps(data))
    _edit(edited_scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("scale", **ASKED).stale


def test_the_triton_module_carries_the_source_its_winners_were_measured_on(edited_scale):
    from sweeper.export_triton import _existing
    from sweeper.store import StudyStore

    assert main_export("--format", "triton", "-o", "tuned_scale.py") == 0
    meta = StudyStore(edited_scale.parent / "studies" / "s-interpret").study_meta()
    [winner] = next(iter(_existing(Path("tuned_scale.py"))["gpus"].values()))["winners"]
    assert winner["source_hash"] == meta.kernel_source_hash
    assert winner["tuned"].startswith(meta.created[:10])


def test_a_source_is_hashed_as_its_study_would_or_not_at_all(tmp_path, monkeypatch):
    from sweeper.kernels import load_kernel, source_hash_now

    assert source_hash_now("copy") == load_kernel("copy").source_hash()
    assert source_hash_now("torch-op") is None           # built from options not given
    (tmp_path / "class_kernel.py").write_text(
        "from sweeper.kernels import Kernel\nopen('top-level-ran', 'w').close()\n\n\n"
        "class Mine(Kernel):\n    name = 'mine'\n")
    monkeypatch.chdir(tmp_path)
    assert source_hash_now("class_kernel:Mine") is None  # its class: not told unimported
    assert source_hash_now("no_such_module:k") is None
    assert not (tmp_path / "top-level-ran").exists() and "class_kernel" not in sys.modules


def test_a_kernel_built_from_its_space_s_options_is_hashed_from_what_its_study_recorded(
        tmp_path, monkeypatch, capsys):
    """A ``cuda`` kernel is its space's options (the ``.cu`` file, what it includes, its
    reference): its source now is hashed from the options the study's recorded space
    gives (an entry keeps them), as the run hashed it, so an edit of the ``.cu`` file is
    warned of as the export writes and as a lookup reads, naming the kernel by its
    entry's name (its file and entry)."""
    from sweeper import lookup
    from sweeper.cli import main
    from sweeper.kernels import source_hash_now
    from tests.test_cuda_kernel import _cuda_replay_study

    assert main(_cuda_replay_study(tmp_path)) == 0
    meta = StudyStore(tmp_path / "st" / "s-replay").study_meta()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    export = ["export", "st/s-replay", "-o", "tuning.json"]
    asked = {"dtype": "float32", "footprint": 4096, "gpu": meta.gpu, "path": "tuning.json"}
    capsys.readouterr()
    assert main(export) == 0 and capsys.readouterr().err == ""
    [entry] = json.loads(Path("tuning.json").read_text())["entries"]
    options = entry["kernel_options"]
    assert options["source"] == "copy.cu"            # relative to the tuning file's folder
    assert source_hash_now("cuda", options) == meta.kernel_source_hash == entry["source_hash"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("cuda", **asked).stale

    with (tmp_path / "copy.cu").open("a") as source:
        source.write("// edited\n")
    assert source_hash_now("cuda", options) not in (None, meta.kernel_source_hash)
    assert main(export) == 0
    assert re.fullmatch(r"sweeper: warning: study s-replay: the source of cuda changed since "
                        r"the study measured it; .*\n", capsys.readouterr().err)
    with pytest.warns(StaleTuningWarning, match=r"^tuning.json: the winners of cuda were "
                      rf"tuned for an earlier source of cuda:{re.escape(str(tmp_path))}/"
                      r"copy\.cu:copy \(tuned "):     # which of the file's cuda kernels
        assert tuned("cuda", **asked).stale


#: what an export of a ``cuda`` study says where a file its kernel's source reads is gone
#: (``{file}``, as it names it), and what to do
EXPORT_GONE = ("sweeper: warning: study s-replay: the source of cuda cannot be found here to "
               "compare with the one the study measured ({file} is gone: moved, renamed or "
               "removed since); the winners are written as measured, and a lookup of them "
               "warns so: put it back where the study's space or the files it names find it, "
               "or to tune the kernel as it is now, run its space into a new study")


@pytest.mark.parametrize(("gone", "exported"), [
    ("copy.cu", "sweeper: warning: study s-replay: its space no longer reads here"),
    ("part.cuh", EXPORT_GONE.format(file="{file}")),
    ("never_refused.py", EXPORT_GONE.format(file="module 'never_refused'")),
])
def test_a_cuda_kernel_whose_file_is_gone_is_warned_of_once_as_unchecked(
        tmp_path, monkeypatch, capsys, gone, exported):
    """A ``cuda`` entry whose ``.cu`` file is gone, or a file its source reads (a header
    the ``.cu`` file includes; the module its refuse names, pinned to the space's folder,
    which stays), cannot be hashed to compare: its winners are served unchecked, with one
    warning naming the kernel, the file and what to do, as a user kernel's module that
    cannot be found is warned of (the ``.cu`` file gone said nothing, as a built-in's
    module is never missing; the others said the winners were tuned for an earlier
    source, the hash of what is left of the files being another).  An export says so
    too (the study's space, read where the module is found no longer, names it by its
    module); the files back, edited, are an earlier source as ever."""
    from sweeper import lookup
    from sweeper.cli import main
    from tests.test_cuda_kernel import _cuda_replay_study, space_text

    run = _cuda_replay_study(tmp_path)
    (tmp_path / "s.yaml").write_text(space_text(extra='\n  refuse: "never_refused:never"'))
    (tmp_path / "never_refused.py").write_text("def never(config):\n    return None\n")
    assert main(run) == 0
    sys.modules.pop("never_refused", None)             # a new process
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    lost = tmp_path.resolve() / gone
    text = lost.read_text()
    lost.unlink()
    cu, file = (re.escape(str(tmp_path.resolve() / "copy.cu")), re.escape(str(lost)))
    asked = {"dtype": "float32", "footprint": 4096, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    said = (rf"tuning.json: the winners of cuda were tuned for a source of cuda:{cu}:copy"
            rf" \(study s-replay\) that cannot be found here to compare \({file} is gone: "
            r"moved, renamed or removed since, or the tuning file moved without it\); they "
            r"are used as they are, unchecked: put it back where the entry's kernel_options "
            r"\(relative to the tuning file's folder\) or the files they name find it, or to "
            r"tune the kernel as it is now, run its space into a new study .* and export "
            r"that$")
    cfg = _served_unchecked(said, ("cuda:copy.cu:copy", "cuda"), asked,
                            ["cuda", "--footprint", "4KiB", "--gpu", "replay: NVIDIA H200"],
                            monkeypatch, capsys)
    assert cfg.meta == {"VEC": 4}
    assert main(["export", "st/s-replay", "-o", "again.json"]) == 0
    assert capsys.readouterr().err.startswith(exported.format(file=lost))
    lost.write_text(text + "// edited\n")                 # back, and edited
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    with pytest.warns(StaleTuningWarning, match="tuned for an earlier source of cuda"):
        assert tuned("cuda", **asked).stale


@pytest.mark.parametrize("imported", [True, False])
def test_a_sweeper_cuda_kernels_gone_header_is_named_as_a_cuda_spaces_is(
        tmp_path, monkeypatch, capsys, request, imported):
    """A user kernel launching ``sweeper.cuda`` records the files its ``.cu`` file
    includes beside its source hash, as a ``cuda`` space's does (study.json's
    ``kernel_source_files``, each tuning entry's ``source_files``, relative to the
    ``.cu`` file's folder): a header deleted since is named as gone, not taken for an
    earlier source, by a lookup (its module imported by the program, or read from its
    source, never run), by an export, and by a resume, ``run``'s and ``plan``'s in one
    line (exit 2, nothing written), each saying to put it back where the kernel's module
    or the files it names find it; put back, the study resumes as it was."""
    from sweeper import lookup
    from sweeper.cli import main
    from tests.test_cuda_kernel import _user_cuda_replay_study, refused_alike

    module = f"usercuda_gone_{'imported' if imported else 'read'}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    monkeypatch.chdir(tmp_path)
    run = _user_cuda_replay_study(tmp_path, module)
    assert main(run) == 0
    study = tmp_path / "st" / "s-replay"
    assert json.loads((study / "study.json").read_text())["kernel_source_files"] == \
        ["part.cuh"]
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    [entry] = json.loads(Path("tuning.json").read_text())["entries"]
    assert entry["source_files"] == ["part.cuh"] and "kernel_options" not in entry
    if not imported:
        del sys.modules[module]                         # a new process: its source read
    part = (tmp_path / "part.cuh").resolve()
    text = part.read_text()
    part.unlink()
    said = (rf"tuning.json: the winners of copy were tuned for a source of {module}:copy "
            rf"\(study s-replay\) that cannot be found here to compare \("
            rf"{re.escape(str(part))} is gone: moved, renamed or removed since\); they are "
            r"used as they are, unchecked: put it back where the kernel's module or the "
            r"files it names find it, or to tune the kernel as it is now, run its space "
            r"into a new study .* and export that$")
    asked = {"dtype": "float32", "footprint": 4096, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    cfg = _served_unchecked(said, (f"{module}:copy",), asked,
                            [f"{module}:copy", "--footprint", "4KiB", "--gpu",
                             "replay: NVIDIA H200"], monkeypatch, capsys)
    assert cfg.meta == {"VEC": 4}
    assert main(["export", "st/s-replay", "-o", "again.json"]) == 0
    assert capsys.readouterr().err.startswith(
        f"sweeper: warning: study s-replay: the source of {module}:copy cannot be found "
        f"here to compare with the one the study measured ({part} is gone: moved, renamed "
        "or removed since); the winners are written as measured, and a lookup of them "
        "warns so: put it back where the kernel's module or the files it names find it, ")
    kept = {p.name: p.read_bytes() for p in study.iterdir() if p.is_file()}
    assert re.fullmatch(
        r"sweeper: st/s-replay: cannot resume, its kernel's source cannot be found as it "
        rf"was measured \({re.escape(str(part))} is gone: moved, renamed or removed since; "
        r"kernel_source: '\w+' -> '\w+'\); put it back where the kernel's module or the "
        r"files it names find it, or rerun with --force .*\n",
        refused_alike([["plan", *run[1:run.index("--quiet")]], run], capsys))
    assert {p.name: p.read_bytes() for p in study.iterdir() if p.is_file()} == kept
    part.write_text(text)
    assert main(run) == 0
    assert "done: 0 measured" in capsys.readouterr().out


@pytest.mark.parametrize("edited", ["copy.cu", "part.cuh"])
def test_a_sweeper_cuda_kernels_edited_file_makes_its_winners_stale(
        tmp_path, monkeypatch, capsys, request, edited):
    """A user kernel launching ``sweeper.cuda`` is stale, as a ``cuda`` space's is, after
    an edit of its ``.cu`` file or of a file that includes: a lookup of its tuning file
    in a new process (``sweeper tuned``, or a program that has not imported its module)
    hashes its module's text and those files, the module read, never run, warns in one
    line that its winners were tuned for an earlier source, and marks the line STALE; an
    export of its study says the source changed."""
    from sweeper import lookup
    from sweeper.cli import main
    from tests.test_cuda_kernel import _user_cuda_replay_study

    module = f"usercuda_edited_{edited.replace('.', '_')}"
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    monkeypatch.chdir(tmp_path)
    assert main(_user_cuda_replay_study(tmp_path, module)) == 0
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    del sys.modules[module]                         # a new process: its source read
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    asked = {"dtype": "float32", "footprint": 4096, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    cli = ["tuned", f"{module}:copy", "--footprint", "4KiB", "--gpu", "replay: NVIDIA H200",
           "--tuning", "tuning.json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned(f"{module}:copy", **asked).stale
    capsys.readouterr()
    with (tmp_path / edited).open("a") as file:
        file.write("// edited\n")
    said = (rf"tuning.json: the winners of copy were tuned for an earlier source of "
            rf"{module}:copy \(tuned .*study s-replay\); they are used as they are: to tune "
            r"its source as it is now, run its space into a new study .*")
    with pytest.warns(StaleTuningWarning, match=said):
        assert tuned(f"{module}:copy", **asked).stale
    assert module not in sys.modules
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())     # `sweeper tuned`: a new process
    assert main(cli) == 0
    out, err = capsys.readouterr()
    assert out.rstrip("\n").endswith("; STALE: tuned for an earlier source of the kernel")
    assert err.count("\n") == 1 and re.fullmatch(f"sweeper: warning: {said}", err.rstrip())
    assert main(["export", "st/s-replay", "-o", "again.json"]) == 0
    assert capsys.readouterr().err.startswith(
        f"sweeper: warning: study s-replay: the source of {module}:copy changed since the "
        "study measured it; ")
    assert module not in sys.modules


def test_a_cuda_kernels_tuned_line_names_its_block_without_triton_s_warps(
        tmp_path, monkeypatch, capsys):
    """A CUDA C kernel's block is the ``blockDim.x`` it is launched with; ``num_warps``
    is what a Triton launch is given, and nothing a CUDA C launch reads."""
    from sweeper.cli import main
    from tests.test_cuda_kernel import _cuda_replay_study

    assert main(_cuda_replay_study(tmp_path)) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    capsys.readouterr()
    assert main(["tuned", "cuda", "--footprint", "4KiB", "--gpu", "replay: NVIDIA H200",
                 "--tuning", "tuning.json"]) == 0
    line = capsys.readouterr().out
    assert re.search(r" block=\d+ VEC=4; tuned at ", line), line
    assert "num_warps" not in line


def test_a_torch_op_is_hashed_from_its_op_as_a_run_hashes_it():
    from sweeper.kernels import load_kernel, source_hash_now

    options = {"op": "torch.nn.functional.gelu"}
    assert source_hash_now("torch-op", options) == \
        load_kernel("torch-op", options.items()).source_hash()
    assert source_hash_now("torch-op", {"op": "torch.relu"}) != \
        source_hash_now("torch-op", options)


def test_a_header_its_hash_never_read_is_not_gone_and_an_edit_is_an_earlier_source(
        tmp_path, monkeypatch, capsys):
    """A ``.cu`` file that includes in quotes a header found nowhere here (a toolkit's,
    NVRTC finding it in folders of its own; no CUDA toolkit needs to be here for a
    replay) has a source hash that never held that header: after an edit of the ``.cu``
    file, a lookup warns its winners were tuned for an earlier source (``cfg.stale``),
    an export that the source changed, and a resume that it changed; none calls the
    header gone, which would have served the winners as unchecked."""
    from sweeper import lookup
    from sweeper.cli import main
    from tests.test_cuda_kernel import _cuda_replay_study

    run = _cuda_replay_study(tmp_path)
    cu = tmp_path / "copy.cu"
    cu.write_text('#include "no_such_vendor_header.h"\n' + cu.read_text())
    assert main(run) == 0
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    assert main(["export", "st/s-replay", "-o", "tuning.json"]) == 0
    [entry] = json.loads(Path("tuning.json").read_text())["entries"]
    assert entry["source_files"] == ["part.cuh"]        # what its hash read
    with cu.open("a") as source:
        source.write("// edited\n")
    capsys.readouterr()
    assert main(run) == 2
    assert "cannot resume, its kernel's source changed since it was measured" in \
        capsys.readouterr().err
    assert main(["export", "st/s-replay", "-o", "again.json"]) == 0
    assert "the source of cuda changed since the study measured it" in \
        capsys.readouterr().err
    asked = {"dtype": "float32", "footprint": 4096, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    with pytest.warns(StaleTuningWarning, match="tuned for an earlier source of cuda") as w:
        assert tuned("cuda", **asked).stale
    assert len(w) == 1 and "is gone" not in str(w[0].message)


def test_a_problem_past_2_62_is_refused_as_the_caller_s_not_blamed_on_the_file(tmp_path,
                                                                                 path):
    """A size no expression can take (past 2**62) is the caller's mistake: refused as the
    asked footprint or dimension, never as a broken tuning file (``TuningFileError``),
    and a dimension whose footprint by the entry's own rule is past 2**62 names the dims
    asked."""
    from sweeper.errors import TuningFileError

    export_study(study(tmp_path, "a", [1 << 20]), path)
    with pytest.raises(SweeperError) as err:
        tuned("copy", dtype="float32", footprint=1 << 200, gpu="NVIDIA H200", path=path)
    assert not isinstance(err.value, TuningFileError)
    assert str(err.value) == (f"footprint {1 << 200} B is too large; allowed: at most 2**62 "
                              f"bytes ({1 << 62})")
    dims_path = tmp_path / "dims.json"
    export_study(study(tmp_path, "b", [{"M": 1024, "N": 1024, "K": 1024}]), dims_path)
    with pytest.raises(SweeperError) as err:
        tuned("copy", dtype="float32", dims={"M": 1 << 70, "N": 4, "K": 4},
              gpu="NVIDIA H200", path=dims_path)
    assert not isinstance(err.value, TuningFileError)
    assert str(err.value).startswith(f"dims: M={1 << 70} is too large; allowed: at most 2**62")
    data = json.loads(dims_path.read_text())
    data["entries"][0]["footprint_expr"] = "M * K * itemsize"
    dims_path.write_text(json.dumps(data))
    with pytest.raises(SweeperError) as err:
        tuned("copy", dtype="float32", dims={"M": 1 << 40, "N": 4, "K": 1 << 40},
              gpu="NVIDIA H200", path=dims_path)
    assert not isinstance(err.value, TuningFileError)
    assert str(err.value).startswith(f"dims M={1 << 40},N=4,K={1 << 40}: the kernel's "
                                     "footprint there: 'M * K * itemsize' gives a number "
                                     "beyond"), str(err.value)


def test_a_dimension_given_twice_to_sweeper_tuned_is_refused(capsys):
    """``--dims n=4096,n=8192`` names two problems: refused, not read as the last."""
    from sweeper.cli import main

    assert main(["tuned", "copy", "--dims", "n=4096,n=8192"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sweeper: --dims: n is given twice (n=4096 and n=8192); allowed: each dimension once")
