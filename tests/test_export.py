import json

import pytest

from sweeper.errors import SweeperError, TuningWarning
from sweeper.export import export_study, tuned
from sweeper.export_triton import export_triton
from sweeper.measure import summarize
from sweeper.space import Config, Problem
from sweeper.store import FORMAT, StudyStore, TrialRecord
from sweeper.trial import TrialStatus

GPU = "Fake GPU"


def hand_study(tmp_path, name, trials, **meta):
    """A hand-built study ``name`` (its ``study.json`` with ``meta`` too, on :data:`GPU`)
    holding ``trials``, each (choice, config, median ms, GB/s), all measured."""
    store = StudyStore(tmp_path / name)
    store.create({"study": name, "kernel": "copy",
                  "environment": {"gpu": GPU, "sms": 100, "l2_bytes": 1 << 20}, **meta})
    for i, (choice, config, ms, gbps) in enumerate(trials):
        store.append(TrialRecord(number=i, status=TrialStatus.OK, choice=choice,
                                 config=config, stats=summarize([ms] * 3), gbps=gbps))
    store.close()
    return store


def study(tmp_path, name, footprint, rows):
    return hand_study(tmp_path, name, [
        ({"grid": grid, "block": str(block), "BLOCK": str(BLOCK)},
         Config(Problem("float32", footprint), grid=1, block=block, meta={"BLOCK": BLOCK}),
         1.0, gbps) for grid, block, BLOCK, gbps in rows])


def test_export_keeps_the_best_per_problem_and_merges(tmp_path):
    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 20, [("sms", 64, 256, 10.0),
                                                ("cdiv(n, BLOCK)", 128, 1024, 30.0)]), path)
    export_study(study(tmp_path, "b", 1 << 30, [("2*sms", 256, 4096, 50.0)]), path)
    entries = json.loads(path.read_text())["entries"]
    assert [(e["footprint"], e["grid_expr"], e["gbps"]) for e in entries] == [
        (1 << 20, "cdiv(n, BLOCK)", 30.0), (1 << 30, "2*sms", 50.0)]
    # exporting again replaces, never duplicates
    export_study(study(tmp_path, "c", 1 << 30, [("sms", 32, 256, 60.0)]), path)
    entries = json.loads(path.read_text())["entries"]
    assert len(entries) == 2 and entries[-1]["study"] == "c"


def test_tuned_picks_nearest_footprint_and_recomputes_the_grid(tmp_path):
    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 20, [("cdiv(n, BLOCK)", 128, 1024, 30.0)]), path)
    export_study(study(tmp_path, "b", 1 << 30, [("2*sms", 256, 4096, 50.0)]), path)
    small = tuned("copy", dtype="float32", footprint=4 << 20, gpu=GPU, path=path)
    assert small.footprint == 1 << 20 and small.block == 128 and small.num_warps == 4
    assert small.grid == (4 << 20) // 4 // 1024          # cdiv(n, BLOCK) for 4 MiB, not 1 MiB
    assert small.launch_options() == {"num_warps": 4, "BLOCK": 1024}
    big = tuned("copy", dtype="float32", footprint=256 << 20, gpu=GPU, path=path)
    assert big.footprint == 1 << 30 and big.grid == 200 and big.meta == {"BLOCK": 4096}


def test_tuned_says_what_is_missing(tmp_path):
    path = tmp_path / "tuning.json"
    with pytest.raises(SweeperError, match="no tuning file; run `sweeper export STUDY` first"):
        tuned("copy", dtype="float32", footprint=1, gpu=GPU, path=path)
    export_study(study(tmp_path, "a", 1 << 20, [("sms", 64, 256, 10.0)]), path)
    with pytest.raises(SweeperError, match="no tuned config for copy float16 on 'Fake GPU'"):
        tuned("copy", dtype="float16", footprint=1 << 20, gpu=GPU, path=path)
    with pytest.raises(SweeperError, match="no tuned config for copy float32 on 'Other'"):
        tuned("copy", dtype="float32", footprint=1 << 20, gpu="Other", path=path)


def test_an_entry_keeps_no_footprint_rule_its_kernels_source_does_not_give(tmp_path,
                                                                           monkeypatch):
    """The footprint rule (``footprint_expr``) is read from the kernel's source: where that
    source cannot be read (its module gone, or no longer declaring the kernel), the entry
    keeps none, rather than the rule of a kernel over ``n`` alone, which is wrong for
    this kernel over ``m`` and ``n``; with the source there, its own rule is kept."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(tmp_path)
    store = hand_study(tmp_path, "s", [(
        {"grid": "cdiv(n, BLOCK)", "block": "128", "BLOCK": "256"},
        Config(Problem("float32", 64 * 256 * 4, (("m", 64), ("n", 256))), grid=1, block=128,
               meta={"BLOCK": 256}), 1.0, 10.0)], kernel="rows_kernel:rows")
    path = tmp_path / "tuning.json"
    [entry] = export_study(store, path)[1]
    assert "footprint_expr" not in entry and entry["dims"] == {"m": 64, "n": 256}
    source = tmp_path / "rows_kernel.py"
    source.write_text("import sweeper\n\n\n"
                      "@sweeper.kernel(inputs={'x': 'm, n'}, outputs=['x'], meta={'BLOCK': 256},"
                      " dims={'m': 64, 'n': 256}, footprint_bytes='m * n * itemsize')\n"
                      "def other(x, config):\n    pass\n")
    [entry] = export_study(store, path)[1]                  # no rows there: none kept
    assert "footprint_expr" not in entry
    source.write_text(source.read_text().replace("def other(", "def rows("))
    [entry] = export_study(store, path)[1]
    assert entry["footprint_expr"] == "m * n * itemsize"


def test_the_top_configs_of_a_study_measured_cold_and_warm_are_the_cold_ones(tmp_path):
    """A study measured cold and warm (``cache: both``) exports each problem's cold
    winner; its top configs, and their slowdowns, are of the cold runs too: a warm median
    is no rival of a cold one."""
    store = hand_study(tmp_path, "s", [
        ({"grid": "sms", "block": "128", "BLOCK": str(BLOCK), "cache": cache},
         Config(Problem("float32", 1 << 20), grid=1, block=128, meta={"BLOCK": BLOCK},
                cache=cache), ms, 1.0)
        for cache, BLOCK, ms in [("cold", 256, 1.0), ("cold", 1024, 1.2),
                                 ("warm", 256, 0.5), ("warm", 1024, 0.3)]])
    [entry] = export_study(store, tmp_path / "tuning.json")[1]
    assert entry["meta"] == {"BLOCK": 256} and entry["median_ms"] == 1.0
    assert [(t["meta"], t["slowdown"]) for t in entry["top"]] == [
        ({"BLOCK": 256}, 1.0), ({"BLOCK": 1024}, 1.2)]
    section = export_triton(store, tmp_path / "tuned_copy.py")[1]
    assert [(c["kwargs"], c["slowdown"]) for c in section["ranked"]] == [
        ({"BLOCK": 256}, 1.0), ({"BLOCK": 1024}, 1.2)]


def test_export_needs_a_successful_trial(tmp_path):
    with pytest.raises(SweeperError, match="no successful trial to export"):
        export_study(study(tmp_path, "empty", 1 << 20, []), tmp_path / "t.json")


def test_a_problem_whose_every_config_failed_is_named_as_not_exported(tmp_path):
    store = study(tmp_path, "half", 1 << 20, [("sms", 64, 256, 10.0)])
    store = StudyStore(store.root)
    # the last one's worker was killed from outside: no crash, its config to measure again
    for i, status, retry in ((1, TrialStatus.WRONG_ANSWER, False),
                             (2, TrialStatus.WRONG_ANSWER, False),
                             (3, TrialStatus.CRASHED, False), (4, TrialStatus.CRASHED, True)):
        store.append(TrialRecord(
            number=i, status=status, reason="output y: 3 of 4 elements differ",
            choice={"grid": "sms", "block": "64", "BLOCK": str(1024 << i)},
            config=Config(Problem("float32", 1 << 30), grid=1, block=64,
                          meta={"BLOCK": 1024 << i}), retry=retry))
    store.close()
    with pytest.warns(TuningWarning, match=r"^not exported: copy float32 1GiB: no config of "
                                           r"it ran ok \(2 wrong_answer, 1 crashed, 1 to "
                                           r"measure again\); a "
                                           r"lookup there gets the nearest tuned problem's "
                                           r"config$") as said:
        _, entries = export_study(store, tmp_path / "t.json")
    assert [w.filename for w in said] == [__file__]      # at the caller's line
    assert [e["footprint"] for e in entries] == [1 << 20]
    with pytest.warns(TuningWarning, match=r"not exported: copy float32 1GiB"):
        export_triton(store, tmp_path / "tuned_copy.py")


def test_a_dtype_whose_every_problem_failed_is_not_said_to_get_a_neighbours_config(tmp_path):
    """A lookup dispatches among the problems of the dtype asked: where every problem of
    a dtype failed, none of the study's configs serves it, which the warning says (it
    said a lookup there got the nearest tuned problem's config, and the lookup refused)."""
    store = study(tmp_path, "half", 1 << 20, [("sms", 64, 256, 10.0)])
    store = StudyStore(store.root)
    store.append(TrialRecord(
        number=1, status=TrialStatus.WRONG_ANSWER, reason="output y: 3 of 4 elements differ",
        choice={"grid": "sms", "block": "64", "BLOCK": "512"},
        config=Config(Problem("int32", 1 << 20), grid=1, block=64, meta={"BLOCK": 512})))
    store.close()
    path = tmp_path / "t.json"
    with pytest.warns(TuningWarning, match=r"^not exported: copy int32 1MiB: no config of it "
                      r"ran ok \(1 wrong_answer\); this study exports no int32 problem, so a "
                      r"lookup in int32 finds none of its configs$"):
        export_study(store, path)
    with pytest.raises(SweeperError, match="no tuned config for copy int32"):
        tuned("copy", dtype="int32", footprint=1 << 20, gpu=GPU, path=path)


def test_the_entry_gives_the_median_the_winner_was_chosen_on_and_where_from(tmp_path):
    from sweeper.finals import Finalist, FinalRecord
    from sweeper.store import ProblemKey

    store = study(tmp_path, "f", 1 << 20, [("sms", 64, 256, 10.0), ("2*sms", 128, 1024, 30.0)])
    # the interleaved final re-measured both at 0.8 ms and 0.9 ms and chose #0
    rows = [Finalist(number=n, samples_ms=[m] * 50, stats=summarize([m] * 50))
            for n, m in ((0, 0.8), (1, 0.9))]
    store.append(FinalRecord(problem=ProblemKey("float32", 1 << 20), finalists=rows,
                             tied=[0, 1], winner=0))
    store.close()
    path = tmp_path / "tuning.json"
    _, [entry] = export_study(store, path)
    assert entry["trial"] == 0 and entry["chosen_by"] == "interleaved final"
    assert entry["median_ms"] == 0.8
    assert entry["median_from"] == "interleaved final: 5 rounds x 10 samples"
    assert entry["gbps"] == pytest.approx(10.0 * 1.0 / 0.8)     # the rate at that median
    assert (entry["sweep_median_ms"], entry["sweep_gbps"]) == (1.0, 10.0)
    config = tuned("copy", dtype="float32", footprint=1 << 20, gpu=GPU, path=path)
    assert config.median_ms == 0.8 and config.gbps == pytest.approx(12.5)


def test_without_a_final_the_entry_says_its_median_is_the_sweeps(tmp_path):
    _, [entry] = export_study(study(tmp_path, "s", 1 << 20, [("sms", 64, 256, 10.0)]),
                              tmp_path / "tuning.json")
    assert entry["median_from"] == "sweep" and entry["chosen_by"] == "sweep median"
    assert entry["median_ms"] == entry["sweep_median_ms"] == 1.0
    assert entry["gbps"] == entry["sweep_gbps"] == 10.0


def test_entries_carry_their_format_and_an_older_one_is_upgraded_on_merge(tmp_path):
    """An entry without a format (an older sweeper's, GB/s alone) is read as the current
    format, and a merge writes it back so, keeping keys this sweeper does not know."""
    path = tmp_path / "tuning.json"
    export_study(study(tmp_path, "a", 1 << 30, [("sms", 64, 256, 10.0)]), path)
    data = json.loads(path.read_text())
    old = {k: v for k, v in data["entries"][0].items()
           if k not in ("format", "rate", "headline")}
    path.write_text(json.dumps({"version": 1, "entries": [{**old, "mine": "kept"}]}))
    assert tuned("copy", dtype="float32", footprint=1 << 30, gpu=GPU, path=path).rate == 10.0
    export_study(study(tmp_path, "b", 1 << 20, [("sms", 64, 256, 20.0)]), path)
    first, second = json.loads(path.read_text())["entries"]
    assert (first["format"], first["rate"], first["headline"], first["mine"]) == \
        (FORMAT, 10.0, "gbps", "kept")
    assert second["format"] == FORMAT and second["rate"] == 20.0


CUDA_SPACE = """\
kernel:
  name: cuda
  source: copy.cu
  entry: copy
  inputs: {src: "m, n"}
  outputs: {dst: "m, n"}
  args: [dst, src, m, n]
  reference: "torch:clone"
  dims: {m: 64, n: 256}
  footprint_bytes: 'm * n * itemsize'
params:
  block: [128]
  VEC: [1, 4]
"""


def test_a_cuda_kernels_entry_keeps_the_footprint_rule_its_space_declared(tmp_path):
    """A ``cuda`` kernel declares its dimensions and footprint in the space
    (``footprint_bytes``), which the study keeps (``space_text``): the entry keeps that
    rule, never the ``n * itemsize`` of a kernel over ``n`` alone; where the space cannot
    be read again (its ``.cu`` file gone), the entry keeps none."""
    store = cuda_study(tmp_path, "s", "copy.cu", 10.0)
    [entry] = export_study(store, tmp_path / "tuning.json")[1]
    assert entry["footprint_expr"] == "m * n * itemsize"
    (tmp_path / "copy.cu").unlink()
    [entry] = export_study(store, tmp_path / "tuning.json")[1]
    assert "footprint_expr" not in entry


def warm_study(tmp_path, name, cache, BLOCK):
    """A study of copy at 1 MiB measured in one cache mode (``cache``)."""
    return hand_study(tmp_path, name, [(
        {"grid": "sms", "block": "128", "BLOCK": str(BLOCK), "cache": cache},
        Config(Problem("float32", 1 << 20), grid=1, block=128, meta={"BLOCK": BLOCK},
               cache=cache), 1.0, 1.0)])


def test_a_warm_studys_winner_is_kept_as_warm_and_served_only_where_warm_is_asked(tmp_path):
    """An entry records the cache mode its winner was measured in; a lookup asks for one
    (cold unless told), so a warm-only study's winner is never served, or replaced, as a
    cold one; an entry written before the mode was kept means cold."""
    path = tmp_path / "tuning.json"
    [entry] = export_study(warm_study(tmp_path, "w", "warm", 512), path)[1]
    assert entry["cache"] == "warm"
    asked = {"dtype": "float32", "footprint": 1 << 20, "gpu": GPU, "path": path}
    with pytest.raises(SweeperError, match=r"no tuned config for copy float32 on 'Fake GPU'"
                                           r" measured cold; it is tuned warm only \(L2 not "
                                           r"flushed\): ask for cache='warm'"):
        tuned("copy", **asked)
    assert tuned("copy", cache="warm", **asked).meta == {"BLOCK": 512}
    export_study(warm_study(tmp_path, "c", "cold", 256), path)      # kept beside it
    assert [(e["cache"], e["study"]) for e in json.loads(path.read_text())["entries"]] == [
        ("warm", "w"), ("cold", "c")]
    assert tuned("copy", **asked).meta == {"BLOCK": 256}
    assert tuned("copy", cache="warm", **asked).meta == {"BLOCK": 512}
    data = json.loads(path.read_text())
    del data["entries"][1]["cache"]                               # an older sweeper's
    path.write_text(json.dumps(data))
    assert tuned("copy", **asked).meta == {"BLOCK": 256}
    with pytest.raises(SweeperError, match=r"cache 'hot': allowed: cold, warm"):
        tuned("copy", cache="hot", **asked)



def test_sweeper_tuned_asks_for_a_cache_mode(tmp_path, capsys):
    from sweeper.cli import main

    path = tmp_path / "tuning.json"
    export_study(warm_study(tmp_path, "w", "warm", 512), path)
    asked = ["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning", str(path)]
    assert main(asked) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "measured cold; it is tuned warm only (L2 not flushed): ask for --cache warm")
    assert main([*asked, "--cache", "warm"]) == 0
    assert "BLOCK=512" in capsys.readouterr().out


def test_a_warm_entry_says_so_where_it_is_described(tmp_path, capsys):
    """``describe`` (and so ``sweeper tuned``'s line) says an entry's winner was measured
    warm, the L2 not flushed; a cold one's line is as it was."""
    from sweeper.cli import main
    from sweeper.lookup import describe

    path = tmp_path / "tuning.json"
    export_study(warm_study(tmp_path, "w", "warm", 512), path)
    export_study(warm_study(tmp_path, "c", "cold", 256), path)
    asked = {"dtype": "float32", "footprint": 1 << 20, "gpu": GPU, "path": path}
    assert "; tuned warm (L2 not flushed) at 1MiB (exact): " in \
        describe(tuned("copy", cache="warm", **asked))
    assert "; tuned at 1MiB (exact): " in describe(tuned("copy", **asked))
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", GPU, "--tuning", str(path),
                 "--cache", "warm"]) == 0
    assert "; tuned warm (L2 not flushed) at 1MiB (exact): " in capsys.readouterr().out


def test_a_modules_winners_say_their_cache_mode_and_one_gpu_holds_one(tmp_path):
    """The module's winners record the cache mode they were measured in; a warm study is
    not merged into a GPU whose winners are cold (nor the other way), where its winners
    would stand in for cold ones."""
    out = tmp_path / "tuned_copy.py"
    section = export_triton(warm_study(tmp_path, "c", "cold", 256), out)[1]
    assert [w["cache"] for w in section["winners"]] == ["cold"]
    with pytest.raises(SweeperError, match=r"tuned_copy.py: its winners on this GPU were "
                                           r"measured cold, study w's warm; one cache mode "
                                           r"per GPU in a module"):
        export_triton(warm := warm_study(tmp_path, "w", "warm", 512), out)
    section = export_triton(warm, tmp_path / "warm.py")[1]
    assert [w["cache"] for w in section["winners"]] == ["warm"]


def cuda_study(tmp_path, name, source, gbps):
    """A hand-built study of a ``cuda`` kernel of ``source`` (a copy of examples/copy.cu,
    entry ``copy``) at one problem, its one trial at ``gbps``."""
    import shutil

    from tests.conftest import ROOT

    shutil.copy(ROOT / "examples" / "copy.cu", tmp_path / source)
    return hand_study(tmp_path, name, [(
        {"grid": "cdiv(n, block)", "block": "128", "VEC": "4"},
        Config(Problem("float32", 64 * 256 * 4, (("m", 64), ("n", 256))), grid=1, block=128,
               meta={"VEC": 4}), 1.0, gbps)], kernel="cuda",
        space_text=CUDA_SPACE.replace("source: copy.cu", f"source: {source}"),
        space_path=str(tmp_path / "space.yaml"))


def test_two_cuda_kernels_keep_their_own_entries_and_are_looked_up_by_file_and_entry(
        tmp_path, capsys):
    """Every CUDA C kernel is the built-in ``cuda``: its entries are kept apart by the
    kernel they are of, ``cuda:FILE:ENTRY`` (the ``.cu`` file's name and the entry
    function), so a study of another ``.cu`` file never replaces them; a lookup asks by
    that name, and ``cuda`` alone is refused where it names more than one; an entry with
    no options (an older sweeper's) is still ``cuda``."""
    path = tmp_path / "tuning.json"
    export_study(cuda_study(tmp_path, "a", "copy.cu", 10.0), path)
    [entry] = export_study(cuda_study(tmp_path, "b", "other.cu", 20.0), path)[1]
    entries = json.loads(path.read_text())["entries"]
    assert [e["study"] for e in entries] == ["a", "b"]
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": GPU, "path": path}
    assert tuned("cuda:copy.cu:copy", **asked).study == "a"
    assert tuned("cuda:other.cu:copy", **asked).study == "b"
    from sweeper.cli import main

    assert main(["tuned", "cuda:other.cu:copy", "--dims", "m=64,n=256", "--gpu", GPU,
                 "--tuning", str(path)]) == 0
    other = (tmp_path / "other.cu").resolve()
    assert capsys.readouterr().out.startswith(f"cuda:{other}:copy float32 on Fake GPU: ")
    with pytest.raises(SweeperError, match=rf"'cuda' names 2 tuned kernels, "
                       rf"cuda:{tmp_path.resolve()}/copy\.cu:copy, cuda:.*/other\.cu:copy; "
                       r"ask for one by"):
        tuned("cuda", **asked)
    export_study(cuda_study(tmp_path, "c", "other.cu", 30.0), path)     # replaces b's
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["a", "c"]
    old = {k: v for k, v in entry.items() if k != "kernel_options"}
    path.write_text(json.dumps({"version": 1, "entries": [old]}))
    assert tuned("cuda", **asked).study == "b"


def test_a_cuda_kernels_entry_keeps_its_options_when_its_cu_file_is_gone(tmp_path):
    """The options a ``cuda`` entry is named and hashed by come from the space its study
    recorded, not from the ``.cu`` file being there at export: a file moved or deleted
    since the study still exports under its own name, never plain ``cuda``."""
    store = cuda_study(tmp_path, "s", "copy.cu", 10.0)
    [kept] = export_study(store, tmp_path / "kept.json")[1]
    (tmp_path / "copy.cu").unlink()
    [entry] = export_study(store, tmp_path / "tuning.json")[1]
    assert entry["kernel_options"] == kept["kernel_options"]
    assert entry["kernel_options"]["source"] == "copy.cu"     # beside the tuning file
    assert entry["kernel_options"]["entry"] == "copy"
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": GPU,
             "path": tmp_path / "tuning.json"}
    assert tuned("cuda:copy.cu:copy", **asked).study == "s"


def test_two_cu_files_of_one_name_in_different_folders_keep_their_own_entries(
        tmp_path, capsys):
    """Two ``.cu`` files of one name (``a/copy.cu``, ``b/copy.cu``) are two kernels: the
    entry's name holds the file's path as the study's space resolved it, so one's export
    never replaces the other's winners; ``cuda:copy.cu:copy`` is refused naming both, and
    as much of the path's end as tells them apart asks for each."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    path = tmp_path / "tuning.json"
    export_study(cuda_study(tmp_path, "sa", "a/copy.cu", 10.0), path)
    export_study(cuda_study(tmp_path, "sb", "b/copy.cu", 20.0), path)
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["sa", "sb"]
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": GPU, "path": path}
    root = tmp_path.resolve()
    with pytest.raises(SweeperError, match=rf"'cuda:copy\.cu:copy' names 2 tuned kernels, "
                       rf"cuda:{root}/a/copy\.cu:copy, cuda:{root}/b/copy\.cu:copy; ask "
                       r"for one by .*as much of its end as tells it apart"):
        tuned("cuda:copy.cu:copy", **asked)
    assert tuned("cuda:a/copy.cu:copy", **asked).study == "sa"
    assert tuned("cuda:b/copy.cu:copy", **asked).study == "sb"
    assert tuned(f"cuda:{root}/b/copy.cu:copy", **asked).study == "sb"
    from sweeper.cli import main

    assert main(["tuned", "cuda:b/copy.cu:copy", "--dims", "m=64,n=256", "--gpu", GPU,
                 "--tuning", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"cuda:{root}/b/copy.cu:copy float32 on ")
    assert main(["tuned", "cuda:copy.cu:copy", "--dims", "m=64,n=256", "--gpu", GPU,
                 "--tuning", str(path)]) == 2
    assert "names 2 tuned kernels" in capsys.readouterr().err
    export_study(cuda_study(tmp_path, "sb2", "b/copy.cu", 30.0), path)     # replaces sb's
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["sa", "sb2"]
    with pytest.raises(SweeperError, match=r"no tuned config for cuda:c/copy\.cu:copy"):
        tuned("cuda:c/copy.cu:copy", **asked)


def test_a_cu_file_moved_with_its_checkout_replaces_its_entries_where_it_was(tmp_path):
    """A ``.cu`` file that has left the folder an entry names (the checkout moved, or the
    tuning file came from another machine) is the same kernel as one of its file name
    and entry exported now: its entries are replaced, not kept beside the new ones (which
    would make ``cuda:copy.cu:copy`` ambiguous); one whose file is still there stays."""
    for folder in ("old", "new", "other"):
        (tmp_path / folder).mkdir()
    path = tmp_path / "tuning.json"
    export_study(cuda_study(tmp_path, "s1", "old/copy.cu", 10.0), path)
    export_study(cuda_study(tmp_path, "s2", "other/copy.cu", 15.0), path)
    (tmp_path / "old" / "copy.cu").unlink()                 # the checkout moved
    export_study(cuda_study(tmp_path, "s3", "new/copy.cu", 20.0), path)
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["s2", "s3"]
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": GPU, "path": path}
    assert tuned("cuda:new/copy.cu:copy", **asked).study == "s3"


def torch_op_study(tmp_path, name, op, gbps):
    """A hand-built study of the ``torch-op`` kernel of ``op`` at one problem (a 1-D
    input of 1 Mi elements), its one trial at ``gbps``."""
    return hand_study(tmp_path, name, [(
        {"grid": "1", "block": "32"},
        Config(Problem("float32", 4 << 20, (("rows", 1), ("cols", 1 << 20))), grid=1,
               block=32, meta={}), 1.0, gbps)], kernel="torch-op",
        space_text=f"kernel: {{name: torch-op, op: {op}}}\nparams: {{cols: [1048576]}}\n",
        space_path=str(tmp_path / f"{name}.yaml"))


def test_two_torch_ops_keep_their_own_entries_and_are_looked_up_by_op(tmp_path, capsys):
    """Every library op is the built-in ``torch-op``: its entries are kept apart by the op
    they time, ``torch-op:OP``, so a study of another op never replaces them; a lookup
    asks by that name, and ``torch-op`` alone is refused naming each where it names more
    than one; an entry without options (an older sweeper's) is still ``torch-op``."""
    path = tmp_path / "tuning.json"
    [entry] = export_study(torch_op_study(tmp_path, "g", "torch.nn.functional.gelu", 10.0),
                           path)[1]
    asked = {"dtype": "float32", "dims": {"rows": 1, "cols": 1 << 20}, "gpu": GPU,
             "path": path}
    assert tuned("torch-op", **asked).study == "g"          # one op: its plain name will do
    export_study(torch_op_study(tmp_path, "r", "torch.relu", 20.0), path)
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["g", "r"]
    assert tuned("torch-op:torch.nn.functional.gelu", **asked).study == "g"
    assert tuned("torch-op:torch.relu", **asked).study == "r"
    with pytest.raises(SweeperError, match=r"'torch-op' names 2 tuned kernels, "
                       r"torch-op:torch\.nn\.functional\.gelu, torch-op:torch\.relu; ask "
                       r"for one by .*torch-op:OP"):
        tuned("torch-op", **asked)
    from sweeper.cli import main

    assert main(["tuned", "torch-op:torch.relu", "--dims", "rows=1,cols=1048576", "--gpu",
                 GPU, "--tuning", str(path)]) == 0
    assert capsys.readouterr().out.startswith("torch-op:torch.relu float32 on Fake GPU: ")
    export_study(torch_op_study(tmp_path, "r2", "torch.relu", 30.0), path)   # replaces r's
    assert [e["study"] for e in json.loads(path.read_text())["entries"]] == ["g", "r2"]
    old = {k: v for k, v in entry.items() if k != "kernel_options"}
    new = json.loads(path.read_text())["entries"][1]
    path.write_text(json.dumps({"version": 1, "entries": [old, new]}))
    with pytest.warns(TuningWarning, match=r"'torch-op' is the kernel of that name; "
                      r"torch-op:torch\.relu is tuned under that name too: ask for it by "
                      r"its module:attr path \(a kernel built from its space's options: by "
                      r"the name given here\)"):
        assert tuned("torch-op", **asked).study == "g"          # an older sweeper's entry
    assert tuned("torch-op:torch.relu", **asked).study == "r2"
def cuda_project(tmp_path):
    """A project folder ``a`` holding spaces/x.yaml, a ``cuda`` space whose source,
    ../kern/copy.cu, is relative to it, and a replay table of its two configs, and an empty
    folder ``b``; the study is made from ``a`` with the space's relative path, as a user
    types it: the run's arguments (its studies folder absolute)."""
    import shutil

    from tests.conftest import ROOT

    project = tmp_path / "a"
    (project / "spaces").mkdir(parents=True)
    (project / "kern").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(ROOT / "examples" / "copy.cu", project / "kern" / "copy.cu")
    (project / "spaces" / "x.yaml").write_text(
        "study: x\n" + CUDA_SPACE.replace("source: copy.cu", "source: ../kern/copy.cu"))
    rows = [f'{vec},128,cold,float32,"cdiv(n, block)",64,256,ok,{ms},{ms} {ms} {ms}'
            for vec, ms in ((1, 0.01), (4, 0.008))]
    (project / "t.csv").write_text(
        "# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n# l2_bytes: 62914560\n"
        "# kernel: cuda\nVEC,block,cache,dtype,grid,m,n,status,median_ms,"
        "samples_ms\n" + "\n".join(rows) + "\n")
    return ["run", "spaces/x.yaml", "--device", "replay:t.csv", "--study", "x",
            "--studies-dir", str(tmp_path / "st"), "--quiet", "--no-report"]


def referenced_project(tmp_path, refuse):
    """:func:`cuda_project` whose space names the reference ``ref.py:ref`` and the refuse
    ``refuse`` (``FILE.py:function`` or ``module:function``), each in a file beside it
    (the reference copies, the refuse refuses nothing): the run's arguments and the space
    file."""
    run = cuda_project(tmp_path)
    space = tmp_path / "a" / "spaces" / "x.yaml"
    space.write_text(space.read_text().replace(
        '"torch:clone"', f'"ref.py:ref"\n  refuse: "{refuse}"'))
    (space.parent / "ref.py").write_text("def ref(src):\n    return src.clone()\n")
    module, _, function = refuse.rpartition(":")
    (space.parent / module).with_suffix(".py").write_text(
        f"def {function}(config):\n    return None\n")
    return run, space


def test_a_file_a_base_space_names_is_read_from_the_base_s_folder_by_every_reader(
        tmp_path, monkeypatch, capsys):
    """docs/space.md: a kernel's paths are read from the space file that writes them.  A
    space in ``a/`` extends ``sub/base.yaml``, whose ``source: copy.cu`` lies beside it:
    ``run`` read ``a/sub/copy.cu``, while the readers of the study's recorded text (export,
    a worker without a space, from any folder) read ``a/copy.cu``, named the base's key at
    the main file's name and a line of the recorded text, and found no file."""
    import shutil

    from sweeper.cli import main

    run = cuda_project(tmp_path)
    base = tmp_path / "a" / "spaces" / "sub"
    base.mkdir()
    shutil.move(tmp_path / "a" / "kern" / "copy.cu", base / "copy.cu")
    (base / "base.yaml").write_text(CUDA_SPACE)
    (tmp_path / "a" / "spaces" / "x.yaml").write_text("study: x\nextends: sub/base.yaml\n")
    monkeypatch.chdir(tmp_path / "a")
    assert main(run) == 0
    monkeypatch.chdir(tmp_path / "b")
    capsys.readouterr()
    assert main(["export", "x", "--studies-dir", "../st", "-o", "tuning.json"]) == 0
    assert capsys.readouterr().err == ""
    [entry] = json.loads((tmp_path / "b" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["source"] == "../a/spaces/sub/copy.cu"   # from b
    assert entry["footprint_expr"] == "m * n * itemsize"
    common = ["--study", "x", "--studies-dir", "../st", "--device",
              f"replay:{tmp_path / 'a' / 't.csv'}"]
    assert main(["worker", *common]) == 0, capsys.readouterr().err
    (base / "copy.cu").unlink()              # what is missing is named where it is written
    assert main(["worker", *common]) == 2
    assert capsys.readouterr().err == (
        f"{base / 'base.yaml'}:3: kernel.source: no file {base / 'copy.cu'}; "
        "allowed: a CUDA source file, relative to the space file\n")


def test_an_export_from_another_folder_reads_the_space_s_files_as_the_run_did(
        tmp_path, monkeypatch, capsys):
    """A study records the space file's path as its command named it, relative to the
    folder that ran it, and the folder its files were read from, absolute: an export run
    from another folder reads the ``.cu`` file the run read, so its entries keep the
    kernel's options and footprint rule, and an edit of that file is told, never skipped
    without a word.  Where the file is gone, the entry keeps the footprint rule the study
    recorded as it ran (it was left out: a lookup at other dimensions could not compute a
    grid over ``n``), and one line says the source is not checked."""
    from sweeper.cli import main

    run = cuda_project(tmp_path)
    monkeypatch.chdir(tmp_path / "a")
    assert main(run) == 0
    monkeypatch.chdir(tmp_path / "b")
    export = ["export", "x", "--studies-dir", "../st", "-o", "tuning.json"]
    capsys.readouterr()
    assert main(export) == 0
    assert capsys.readouterr().err == ""
    [entry] = json.loads((tmp_path / "b" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["source"] == "../a/kern/copy.cu"     # from b's tuning
    assert entry["footprint_expr"] == "m * n * itemsize"
    cu = tmp_path / "a" / "kern" / "copy.cu"
    cu.write_text(cu.read_text() + "// edited\n")
    assert main(export) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the source of cuda changed since the study" in err
    cu.unlink()
    assert main(export) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"sweeper: warning: study x: its space no longer reads here (spaces/x.yaml:4: "
        f"kernel.source: no file {cu}; ") and err.endswith(
        "the source of its kernel is not checked against the one it measured; run the "
        "export from the folder the study was run in, with the files its space names "
        "there\n")
    [entry] = json.loads((tmp_path / "b" / "tuning.json").read_text())["entries"]
    assert entry["footprint_expr"] == "m * n * itemsize"
    assert json.loads((tmp_path / "st" / "x" / "study.json").read_text())[
        "footprint_rule"] == "m * n * itemsize"


INTERPRETED = """
study: {study}
kernel: copy
sampler: exhaustive
params: {{grid: [sms], block: [128], BLOCK: [{BLOCK}], dtype: [float32],
         footprint: [{footprint}]}}
measure: {{warmup: 1, repeat: 2, stop: fixed}}
"""


def test_a_winner_measured_shrunk_never_replaces_one_measured_at_its_size(
        tmp_path, monkeypatch, capsys):
    """The interpreter measures a 1 MiB copy as 16 KiB: its winner is for 1 MiB, and an
    export of it replaced another study's winner of 16 KiB measured at that size (and a
    later export of that one replaced it back, so the 1 MiB asked was no longer tuned).
    Both are kept now, each replaced only by a winner for its own problem; a lookup at
    16 KiB takes the one measured there for it, at 1 MiB the one tuned for it, and the
    export's line names the problem a winner is for and the one measured."""
    from sweeper.cli import main

    monkeypatch.chdir(tmp_path)
    for name, block, footprint in (("big", 1024, "1MiB"), ("small", 256, "16KiB")):
        (tmp_path / f"{name}.yaml").write_text(
            INTERPRETED.format(study=name, BLOCK=block, footprint=footprint))
        assert main(["run", f"{name}.yaml", "--device", "interpret", "--quiet",
                     "--no-report"]) == 0
    capsys.readouterr()
    for name in ("big", "small", "big", "small"):
        assert main(["export", f"studies/{name}-interpret", "-o", "tuning.json"]) == 0
    out = capsys.readouterr().out
    assert "copy float32 1MiB (measured as 16KiB, shrunk to fit its device) on Triton " \
        "interpreter (CPU): #0 " in out
    assert "copy float32 16KiB on Triton interpreter (CPU): #0 " in out
    entries = json.loads((tmp_path / "tuning.json").read_text())["entries"]
    assert sorted((e["study"], e["footprint"], e.get("asked_footprint")) for e in entries) \
        == [("big-interpret", 16 << 10, 1 << 20), ("small-interpret", 16 << 10, None)]
    asked = {"dtype": "float32", "gpu": "Triton interpreter (CPU)", "path": "tuning.json"}
    small = tuned("copy", footprint=16 << 10, **asked)
    assert (small.study, small.meta, small.distance) == ("small-interpret", {"BLOCK": 256}, 0)
    big = tuned("copy", footprint=1 << 20, **asked)
    assert (big.study, big.meta, big.distance) == ("big-interpret", {"BLOCK": 1024}, 0)


def test_a_cuda_kernels_entry_is_named_the_same_once_its_project_moved(
        tmp_path, monkeypatch, capsys):
    """A ``cuda`` kernel is named by its ``.cu`` file, which the tuning file keeps relative
    to its own folder (it kept the path absolute: moved with its project, or copied to
    another machine, the file named no kernel there, its source was no longer compared,
    and an export of the moved study named the folder it had left); the study's files,
    its recorded folder gone, are read from its space's path in the working folder, as
    an older study's are.  An entry an older sweeper wrote with an absolute path is read
    as it is, and replaced by an export of the same kernel."""
    import shutil
    import warnings

    from sweeper.cli import main
    from sweeper.errors import StaleTuningWarning

    run = cuda_project(tmp_path)
    run[run.index("--studies-dir") + 1] = "studies"          # the studies in the project
    monkeypatch.chdir(tmp_path / "a")
    assert main(run) == 0
    export = ["export", "studies/x", "-o", "tuning.json"]
    assert main(export) == 0
    [entry] = json.loads((tmp_path / "a" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["source"] == "kern/copy.cu"
    shutil.move(tmp_path / "a", tmp_path / "c")               # the project moved
    monkeypatch.chdir(tmp_path / "c")
    cu = (tmp_path / "c" / "kern" / "copy.cu").resolve()
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = tuned("cuda:kern/copy.cu:copy", **asked)
    assert found.name == f"cuda:{cu}:copy" and not found.stale
    cu.write_text(cu.read_text() + "// edited\n")             # compared where it is now
    with pytest.warns(StaleTuningWarning, match="earlier source of cuda"):
        assert tuned("cuda:copy.cu:copy", **asked).stale
    capsys.readouterr()
    assert main(export) == 0                                  # the moved study, from here
    assert "the source of cuda changed since the study measured it" in capsys.readouterr().err
    [entry] = json.loads((tmp_path / "c" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["source"] == "kern/copy.cu"
    assert entry["footprint_expr"] == "m * n * itemsize"
    older = {**entry, "kernel_options": {**entry["kernel_options"], "source": str(cu)}}
    (tmp_path / "c" / "tuning.json").write_text(json.dumps({"version": 1,
                                                            "entries": [older]}))
    assert tuned("cuda:copy.cu:copy", **asked).name == f"cuda:{cu}:copy"   # warned above
    assert main(export) == 0
    [entry] = json.loads((tmp_path / "c" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["source"] == "kern/copy.cu"


def test_a_cuda_kernels_reference_and_refuse_files_move_with_its_project(
        tmp_path, monkeypatch, capsys):
    """A ``cuda`` kernel's reference given as a file (``file.py:function``) and refuse as a
    module beside the space (``module:function``, pinned to its folder) are kept relative
    to the tuning file's folder, as its ``.cu`` file is, and a file's is hashed by its
    name, not where it lies: moved with its project, the kernel's winners are compared
    with its files where they are now (they were kept absolute, and the reference hashed
    with its folder: the move alone made every lookup, and the moved study's export, say
    its source had changed, and an edit there was never seen).  An older entry that kept
    them absolute, its project moved since, is replaced by an export of the kernel."""
    import shutil
    import warnings

    from sweeper import lookup
    from sweeper.cli import main
    from sweeper.errors import StaleTuningWarning

    run, _ = referenced_project(tmp_path, "myrefuse:never")
    run[run.index("--studies-dir") + 1] = "studies"          # the studies in the project
    monkeypatch.chdir(tmp_path / "a")
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    assert main(run) == 0
    export = ["export", "studies/x", "-o", "tuning.json"]
    assert main(export) == 0
    [entry] = json.loads((tmp_path / "a" / "tuning.json").read_text())["entries"]
    kept = {k: entry["kernel_options"][k] for k in ("source", "reference", "refuse")}
    assert kept == {"source": "kern/copy.cu", "reference": "spaces/ref.py:ref",
                    "refuse": "spaces/myrefuse:never"}
    shutil.move(tmp_path / "a", tmp_path / "c")               # the project moved
    monkeypatch.chdir(tmp_path / "c")
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("cuda:copy.cu:copy", **asked).stale
    capsys.readouterr()
    assert main(export) == 0                                  # the moved study, from here
    assert capsys.readouterr().err == ""
    ref = tmp_path / "c" / "spaces" / "ref.py"
    ref.write_text(ref.read_text() + "# edited\n")           # compared where it is now
    with pytest.warns(StaleTuningWarning, match="earlier source of cuda"):
        assert tuned("cuda:copy.cu:copy", **asked).stale
    older = {**entry, "kernel_options": {
        **entry["kernel_options"], "source": str(tmp_path / "a" / "kern" / "copy.cu"),
        "reference": f"{tmp_path / 'a' / 'spaces' / 'ref.py'}:ref",
        "refuse": f"{tmp_path / 'a' / 'spaces'}/myrefuse:never"}}
    (tmp_path / "c" / "tuning.json").write_text(json.dumps({"version": 1,
                                                            "entries": [older]}))
    assert main(export) == 0
    [entry] = json.loads((tmp_path / "c" / "tuning.json").read_text())["entries"]
    assert {k: entry["kernel_options"][k] for k in kept} == kept


def run_as_an_earlier_sweeper(run, monkeypatch):
    """``sweeper`` ``run`` (its arguments) as an earlier sweeper ran it, whose source hash
    named a ``cuda`` kernel's ``file.py:function`` reference or refuse by its path (this
    one names them by their files' names)."""
    from sweeper.cli import main
    from sweeper.kernels import _cuda_form

    spelled = _cuda_form._spelled

    def earlier(value):
        return value if value.rpartition(":")[0].endswith(".py") else spelled(value)

    with monkeypatch.context() as older:
        older.setattr(_cuda_form, "_spelled", earlier)
        assert main(run) == 0


def test_a_cuda_study_and_entry_an_earlier_sweeper_hashed_with_its_reference_s_path_hold(
        tmp_path, monkeypatch, capsys):
    """A ``cuda`` kernel's ``file.py:function`` reference and refuse, which an earlier
    sweeper's source hash named by their paths (this one names them by their files'
    names), leave its study and tuning entries on the same source: the study resumes
    without ``--force`` and measures nothing again (its trials name the earlier hash),
    recording the hash now; its export (which writes the hash now), and a lookup of its
    entries (the earlier hash, their options absolute, as that earlier sweeper kept them),
    do not say it is stale.
    An edit of the reference's file is still a change to each."""
    import warnings

    from sweeper import lookup
    from sweeper.cli import main
    from sweeper.errors import StaleTuningWarning

    run, space = referenced_project(tmp_path, "limits.py:fits")
    at = run.index("--study")
    del run[at:at + 2]                                      # the study plan finds too
    monkeypatch.chdir(tmp_path / "a")
    run_as_an_earlier_sweeper(run, monkeypatch)
    store = StudyStore(tmp_path / "st" / "x-replay")
    was = store.study_meta().kernel_source_hash
    trials = len(store.records()[0])
    capsys.readouterr()
    assert main(["export", "x-replay", "--studies-dir", str(tmp_path / "st"),
                 "-o", "tuning.json"]) == 0
    assert capsys.readouterr().err == ""                   # no source changed
    asked = {"dtype": "float32", "dims": {"m": 64, "n": 256}, "gpu": "replay: NVIDIA H200",
             "path": "tuning.json"}
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("cuda:copy.cu:copy", **asked).stale
    tuning = tmp_path / "a" / "tuning.json"
    data = json.loads(tuning.read_text())
    [now] = {entry["source_hash"] for entry in data["entries"]}
    assert now != was                           # as this sweeper hashes the same files
    for entry in data["entries"]:               # as the earlier sweeper kept them
        entry["kernel_options"].update(reference=f"{space.parent / 'ref.py'}:ref",
                                       refuse=f"{space.parent / 'limits.py'}:fits")
        entry["source_hash"] = was
    tuning.write_text(json.dumps(data))
    ref = space.parent / "ref.py"
    ref.write_text(ref.read_text() + "# edited\n")             # a change to both
    with pytest.warns(StaleTuningWarning, match="earlier source of cuda"):
        assert tuned("cuda:copy.cu:copy", **asked).stale
    capsys.readouterr()
    assert main(run) == 2
    assert "cannot resume, its kernel's source changed" in capsys.readouterr().err
    ref.write_text(ref.read_text().replace("# edited\n", ""))   # the same files again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("cuda:copy.cu:copy", **asked).stale
    capsys.readouterr()
    assert main(["plan", *run[1:-2]]) == 0                  # as the run will
    assert "would measure 0 on" in capsys.readouterr().out
    assert main(run) == 0                                   # no --force
    meta = store.study_meta()
    assert meta.kernel_source_hash == now and meta.respelled == {was: now}
    assert len(store.records()[0]) == trials                # nothing measured again
    assert not meta.forced
    assert main(run) == 0 and len(store.records()[0]) == trials     # and so on


def test_a_study_an_earlier_sweeper_hashed_with_its_reference_s_path_exports_the_hash_now(
        tmp_path, monkeypatch, capsys):
    """A ``cuda`` study an earlier sweeper hashed naming its ``file.py:function`` reference
    by its path, exported before any run of this sweeper resumed it, writes its entries'
    ``source_hash`` as this sweeper spells the same files (the hash a lookup computes):
    moved with its project, a lookup of them is not stale (the entries kept the earlier
    hash, which the lookup could only respell from the paths where the files are now, so
    each lookup said stale until the study was run once); the export, from the moved
    project, does not say its source changed either."""
    import shutil
    import warnings

    from sweeper import lookup
    from sweeper.cli import main
    from sweeper.kernels import source_hash_now

    run, _ = referenced_project(tmp_path, "limits.py:fits")
    run[run.index("--studies-dir") + 1] = "studies"          # the studies in the project
    monkeypatch.chdir(tmp_path / "a")
    run_as_an_earlier_sweeper(run, monkeypatch)
    was = StudyStore(tmp_path / "a" / "studies" / "x").study_meta().kernel_source_hash
    shutil.move(tmp_path / "a", tmp_path / "c")               # the project moved
    monkeypatch.chdir(tmp_path / "c")
    capsys.readouterr()
    assert main(["export", "studies/x", "-o", "tuning.json"]) == 0
    assert capsys.readouterr().err == ""                      # no source changed
    [entry] = json.loads((tmp_path / "c" / "tuning.json").read_text())["entries"]
    now = source_hash_now("cuda", {**entry["kernel_options"],
                                   "source": str(tmp_path / "c" / "kern" / "copy.cu"),
                                   "reference": f"{tmp_path / 'c' / 'spaces' / 'ref.py'}:ref",
                                   "refuse": f"{tmp_path / 'c' / 'spaces' / 'limits.py'}:fits"})
    assert entry["source_hash"] == now != was
    monkeypatch.setattr(lookup, "_STALE_WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not tuned("cuda:copy.cu:copy", dtype="float32", dims={"m": 64, "n": 256},
                         gpu="replay: NVIDIA H200", path="tuning.json").stale


def test_a_resume_works_out_an_earlier_sweeper_s_hash_of_its_cuda_source_once(
        tmp_path, monkeypatch):
    """A resume of a ``cuda`` study tells whether its recorded source hash is an earlier
    sweeper's of the same files (:func:`~sweeper.study.source_respelled`: the kernel's
    files hashed, the recorded space read again, milliseconds) once, for both checks of
    its fingerprint and the ``respelled`` hashes it records (it did so three times), and
    resumes as it did: without ``--force``, recording the hash now, measuring nothing
    again."""
    from sweeper import kernels
    from sweeper.cli import main

    run, _ = referenced_project(tmp_path, "limits.py:fits")
    monkeypatch.chdir(tmp_path / "a")
    run_as_an_earlier_sweeper(run, monkeypatch)
    store = StudyStore(tmp_path / "st" / "x")
    was = store.study_meta().kernel_source_hash
    trials = len(store.records()[0])
    asked = []
    respelled = kernels.source_hash_respelled

    def counted(*args, **kwargs):
        asked.append(args)
        return respelled(*args, **kwargs)

    monkeypatch.setattr(kernels, "source_hash_respelled", counted)
    assert main(run) == 0                                   # no --force
    assert len(asked) == 1
    meta = store.study_meta()
    assert meta.kernel_source_hash != was and meta.respelled == {was: meta.kernel_source_hash}
    assert len(store.records()[0]) == trials and not meta.forced
    asked.clear()
    assert main(run) == 0                                   # the hash now recorded
    assert len(asked) == 1 and len(store.records()[0]) == trials


def test_a_study_records_its_space_s_folder_resolved_from_any_working_folder(
        tmp_path, monkeypatch, capsys):
    """Whichever folder ran it and however its command named the space file, a study
    records the folder the space's files were read from resolved, never through the
    working folder with a ``..``: run as ``../a/spaces/x.yaml`` from a folder since
    removed, an export and a worker without a space, from a third folder, still find the
    module the kernel's reference names beside the space (through the removed folder
    they found none: the export warned that the kernel's source had changed and the
    worker refused the study)."""
    import shutil

    from sweeper.cli import main

    run = cuda_project(tmp_path)
    space = tmp_path / "a" / "spaces" / "x.yaml"
    space.write_text(space.read_text().replace('"torch:clone"', '"myref:ref"'))
    (space.parent / "myref.py").write_text("def ref(src):\n    return src.clone()\n")
    table = f"replay:{tmp_path / 'a' / 't.csv'}"
    run[3] = table
    (tmp_path / "c").mkdir()
    folder = tmp_path.resolve() / "a" / "spaces"
    for i, (where, named) in enumerate([("a", "spaces/x.yaml"), (".", "a/./spaces/x.yaml"),
                                        ("a/spaces", "x.yaml"), ("b", "../a/spaces/x.yaml")]):
        monkeypatch.chdir(tmp_path / where)
        assert main([run[0], named, *run[2:], "--study", f"x{i}"]) == 0
        meta = json.loads((tmp_path / "st" / f"x{i}" / "study.json").read_text())
        assert (meta["space_path"], meta["space_folder"]) == (named, str(folder))
    monkeypatch.chdir(tmp_path / "c")
    shutil.rmtree(tmp_path / "b")
    capsys.readouterr()
    assert main(["export", "x3", "--studies-dir", "../st", "-o", "tuning.json"]) == 0
    assert capsys.readouterr().err == ""
    [entry] = json.loads((tmp_path / "c" / "tuning.json").read_text())["entries"]
    assert entry["kernel_options"]["reference"] == "../a/spaces/myref:ref"    # from c
    assert main(["worker", "--study", "x3", "--studies-dir", "../st", "--device", table]) == 0
    assert "stopped: complete: every valid config tried" in capsys.readouterr().out
