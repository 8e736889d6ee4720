"""What input can reach: option values, study names, the folders a run writes to, the files
a space file's ``extends:`` reads, and the user code each command imports."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from sweeper import plugins
from sweeper.cli import main
from sweeper.core._names import safe_name, study_name_problem
from sweeper.space import load_space
from tests.test_hostile_outputs import _one_line

TINY = """
study: tiny
kernel: copy
sampler: exhaustive
params:
  grid: [sms]
  block: [32]
  BLOCK: [256, 1024]
  footprint: [4KiB]
measure: {warmup: 1, repeat: 3}
"""
SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def _refused_run(tmp_path: Path, capsys, *args: str) -> str:
    """``sweeper run`` with ``args`` exits 2 with one line and writes nothing anywhere."""
    before = _files(tmp_path)
    rc = main(["run", *args, "--device", "interpret", "--studies-dir",
               str(tmp_path / "studies"), "--quiet"])
    line = _one_line(capsys)
    assert rc == 2 and _files(tmp_path) == before and not (tmp_path / "studies").exists()
    return line


# -- option values ---------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["-5", "0", "abc", "1.5", "", "١"])
def test_trials_must_be_a_whole_number_of_at_least_one(tiny, tmp_path, capsys, value):
    line = _refused_run(tmp_path, capsys, str(tiny), f"--trials={value}")
    assert line == (f"sweeper run: argument --trials: {value!r} is not a whole number >= 1 "
                    "(see sweeper run --help)")


def test_trials_are_at_most_what_a_space_files_budget_takes(tiny, tmp_path, capsys):
    """``budget.trials`` stops at a billion; ``--trials`` took any number of digits."""
    line = _refused_run(tmp_path, capsys, str(tiny), "--trials=1000000001")
    assert line == ("sweeper run: argument --trials: '1000000001' is more trials than "
                    "1,000,000,000; allowed: a whole number from 1 to 1,000,000,000 (see "
                    "sweeper run --help)")


def test_an_empty_worker_id_is_refused(tmp_path, capsys):
    """``--worker-id ''`` was taken, and replaced by HOST:PID, unsaid."""
    assert main(["worker", "--study", "s", "--worker-id", " ", "--studies-dir",
                 str(tmp_path / "studies")]) == 2
    assert _one_line(capsys) == ("sweeper worker: argument --worker-id: ' ' is no name; "
                                 "allowed: text that is not empty, such as gpu-host-3 "
                                 "(default: HOST:PID) (see sweeper worker --help)")
    assert not (tmp_path / "studies").exists()



@pytest.mark.parametrize("argv, option", [
    (["schema", "-o", ""], "-o/--output"),
    (["export", "s", "-o", ""], "-o/--output"),
    (["roofline", "-o", " "], "-o/--output"),
    (["tuned", "copy", "--footprint", "1MiB", "--tuning", ""], "--tuning"),
])
def test_an_empty_file_path_is_refused(argv, option, tmp_path, capsys, monkeypatch):
    """``-o ''`` (a script's unset ``-o "$OUT"``) read as the option left out: schema
    printed to stdout, export wrote studies/tuning.json, tuned read it, all unsaid."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert _one_line(capsys) == (
        f"sweeper {argv[0]}: argument {option}: {argv[argv.index(option.split('/')[0]) + 1]!r} "
        "is no path; allowed: a file's path (leave the option out for its default) (see "
        f"sweeper {argv[0]} --help)")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_gpu_name_for_tuned_is_refused(tmp_path, capsys, monkeypatch):
    """``tuned --gpu ''`` looked up this machine's GPU as if --gpu were left out."""
    monkeypatch.chdir(tmp_path)
    assert main(["tuned", "copy", "--footprint", "1MiB", "--gpu", ""]) == 2
    assert _one_line(capsys) == (
        "sweeper tuned: argument --gpu: '' is no GPU's name; allowed: the device as the "
        "tuning file names it, e.g. 'NVIDIA H200' (leave the option out for this "
        "machine's) (see sweeper tuned --help)")

#: More digits than Python's int() reads (4300): the option's own error, its text cut.
HUGE = "1" + "0" * 5000
SHOWN = repr(HUGE[:40])


@pytest.mark.parametrize("option, said", [
    ("--trials", f"argument --trials: {SHOWN} is not a whole number >= 1"),
    ("--compile-workers", f"argument --compile-workers: {SHOWN} is not a whole number >= 0"),
    ("--gpus", f"argument --gpus: {SHOWN}: give GPU indices, comma-separated and each once "
     "(0,1), or all"),
    ("--gpu-check-target", f"argument --gpu-check-target: {SHOWN}: not a CUDA architecture; "
     "one of sm_70"),
])
def test_a_count_of_more_digits_than_int_reads_is_the_options_own_error(
        tiny, tmp_path, capsys, option, said):
    line = _refused_run(tmp_path, capsys, str(tiny), option, HUGE)
    assert line.startswith(f"sweeper run: {said}") and len(line) < 300


@pytest.mark.parametrize("argv, said", [
    (["worker", "--study", "s", "--trials", HUGE],
     f"sweeper worker: argument --trials: {SHOWN} is not a whole number >= 1 "
     "(see sweeper worker --help)"),
    (["tuned", "copy", "--dims", f"n={HUGE}"],
     f"sweeper: --dims: {('n=' + HUGE)[:40]!r} is not NAME=SIZE; allowed: positive integers "
     "by name, e.g. M=4096,N=2048,K=8192"),
    (["tuned", "copy", "--dims", "n=\u00b2"], "sweeper: --dims: 'n=\u00b2' is not NAME=SIZE"),
    (["compare", f"a@{HUGE}", "b"],
     f"sweeper: {('a@' + HUGE)[:40]!r}: a trial is written STUDY@NUMBER"),
    (["compare", "a@\u00b2", "b"], "sweeper: 'a@\u00b2': a trial is written STUDY@NUMBER"),
])
def test_other_commands_whole_numbers_are_one_line(tmp_path, capsys, monkeypatch, argv, said):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert _one_line(capsys).startswith(said)
    assert list(tmp_path.iterdir()) == []


def test_gpu_indices_are_numbers_each_once():
    from sweeper.options import OptionValueError, gpu_list

    assert gpu_list("0,1") == [0, 1] and gpu_list("all") is None
    with pytest.raises(OptionValueError, match="each once"):
        gpu_list("0,00")                                  # the same GPU twice


@pytest.mark.parametrize("value, said", [
    ("0", "'0' is not a positive duration of at most 1000h"),
    ("-1s", "'-1s' is not a duration"),
    ("soon", "'soon' is not a duration"),
    ("nan", "'nan' is not a duration"),
    ("inf", "'inf' is not a duration"),
    ("9" * 400 + "h", f"{'9' * 40!r} is not a positive duration of at most 1000h"),
])
def test_time_must_be_finite_and_positive(tiny, tmp_path, capsys, value, said):
    line = _refused_run(tmp_path, capsys, str(tiny), f"--time={value}")
    assert line.startswith(f"sweeper run: argument --time: {said}")
    assert line.endswith("(see sweeper run --help)")


def test_a_duration_option_reads_its_whole_text():
    from sweeper.cli._parser import build_parser

    minutes = "3." + "0" * 39 + "m"                 # the unit is the 42nd character
    args = build_parser().parse_args(["run", "s.yaml", "--time", minutes])
    assert args.time == 180.0
    args = build_parser().parse_args(["worker", "--study", "s", "--lease", minutes,
                                      "--time", minutes])
    assert args.lease == 180.0 and args.time == 180.0


@pytest.mark.parametrize("text, seconds", [("1h30m", 5400.0), ("2m30s", 150.0),
                                           ("1h 5m 30s", 3930.0), ("1m500ms", 60.5)])
def test_a_compound_duration_reads_the_same_everywhere(tmp_path, text, seconds):
    """``--time``, a space's ``budget.time`` and the API's ``time=`` read ``1h30m`` with
    one parser: the units from the largest down."""
    from sweeper.api._run import _seconds
    from sweeper.cli._parser import build_parser

    assert build_parser().parse_args(["run", "s.yaml", "--time", text]).time == seconds
    path = tmp_path / "s.yaml"
    path.write_text(f"kernel: copy\nparams: {{}}\nbudget: {{time: {text}}}\n")
    assert load_space(path).budget.time_s == seconds
    assert _seconds(text) == seconds


@pytest.mark.parametrize("value", ["30m1h", "1m1m", "1h30", "h30m"])
def test_a_compound_duration_out_of_order_is_refused(tiny, tmp_path, capsys, value):
    line = _refused_run(tmp_path, capsys, str(tiny), f"--time={value}")
    assert line == (f"sweeper run: argument --time: {value!r} is not a duration; allowed: a "
                    "positive number, bare (seconds) or with h, m, s or ms, or several from "
                    "the largest unit down (e.g. 90, 10m, 1h30m) (see sweeper run --help)")


def test_an_unknown_option_is_one_line(tiny, tmp_path, capsys):
    line = _refused_run(tmp_path, capsys, str(tiny), "--frobnicate")
    assert line == "sweeper run: unrecognized arguments: --frobnicate (see sweeper run --help)"
    # -p BLOCK=256, 1024: the shell split the values at the space
    line = _refused_run(tmp_path, capsys, str(tiny), "-p", "BLOCK=256,", "1024")
    assert line == ("sweeper run: unrecognized arguments: 1024; -p BLOCK=256, 1024: the shell "
                    "split the values at the space; write -p BLOCK=256,1024 or quote them "
                    "(see sweeper run --help)")
    # a misspelt option names the one it is close to, as a misspelt space key does
    line = _refused_run(tmp_path, capsys, str(tiny), "--trails", "5")
    assert line == ("sweeper run: unrecognized arguments: --trails 5; did you mean "
                    "'--trials'? (see sweeper run --help)")
    line = _refused_run(tmp_path, capsys, str(tiny), "--studies-dri=x")
    assert line == ("sweeper run: unrecognized arguments: --studies-dri=x; did you mean "
                    "'--studies-dir'? (see sweeper run --help)")


@pytest.mark.parametrize("params, said", [
    (["BLOCK=300"], "-p BLOCK=300: params.BLOCK[0]: 300 is not a power of two"),
    (["footprint=0B"], "-p footprint=0B: params.footprint[0]: 0B must be positive"),
    (["block=33"], "-p block=33: params.block[0]: 33 threads per program; allowed: 32, 64"),
    (["BLOCK=[1024, 1024]"], "-p BLOCK=[1024, 1024]: params.BLOCK: value '1024' appears twice"),
    (['grid=[sms, "cdiv(n,"]'], '-p grid=[sms, "cdiv(n,"]: params.grid[1]: cannot parse'),
    # what follows "YAML syntax error: " is PyYAML's own wording, not ours to pin
    (["grid=[sms"], "-p grid=[sms: YAML syntax error: "),
    (["BLOCK=1024", "BLOCK=2048"], "-p BLOCK=2048: BLOCK is given twice (also -p BLOCK=1024); "
     "give each axis once"),
    (["seed=3"], "-p seed=3: params.seed: unknown key 'seed'; known: grid, block"),
    (["BLOCK="], "-p: 'BLOCK=' is not KEY=VALUE[,VALUE...]"),
    ([f"BLOCK=1,{'9' * 5000}"], f"-p BLOCK=1,{'9' * 49}...: params.BLOCK[1]: a number of "
     "5000 digits is too large; values are at most 2**62"),
    ([f"BLOCK=[1, {'9' * 5000}]"], f"-p BLOCK=[1, {'9' * 47}...: params.BLOCK[1]: a number "
     "of 5000 digits is too large"),
    (["BLOCK=@x"], "-p: 'BLOCK=@x': not YAML: found character '@' that cannot start any "
     "token"),
    (["BLOCK=\x01"], "-p: 'BLOCK=\\x01': not YAML: unacceptable character #x0001: special "
     "characters are not allowed"),
    ([f"BLOCK=0x{'f' * 4000}"], f"-p BLOCK=0x{'f' * 49}...: params.BLOCK[0]: a number of "
     "some 4816 digits is too large; values are at most 2**62"),
    ([f"BLOCK=[1, 0x{'f' * 4000}]"], f"-p BLOCK=[1, 0x{'f' * 45}...: params.BLOCK[1]: a "
     "number of some 4816 digits is too large"),
])
def test_p_values_go_through_the_files_checks(tiny, tmp_path, capsys, params, said):
    options = [x for p in params for x in ("-p", p)]
    assert _refused_run(tmp_path, capsys, str(tiny), *options).startswith(said)


# -- study names -----------------------------------------------------------------------------
BAD_NAMES = [
    ("../../x", "'/' is not allowed"),
    ("/abs/x", "'/' is not allowed"),
    ("a\\b", "'\\\\' is not allowed"),
    ("a\x00b", "'\\x00' is not allowed"),
    ("a\nb", "'\\n' is not allowed"),
    ("\u202egnp.exe", "'\\u202e' is not allowed"),
    ("x" * 300, "longer than 100 characters"),
    (".hidden", "it starts with '.'"),
    ("..", "it starts with '.'"),
    ("", "it is empty"),
    ("a b", "' ' is not allowed"),
    ("ü", "'ü' is not allowed"),
]
RULE = ("allowed: 1 to 100 of the letters A-Z a-z, digits and . - _ +, not starting with "
        "'.'")


@pytest.mark.parametrize("name, why", BAD_NAMES)
def test_a_bad_study_option_is_refused_and_nothing_written(tiny, tmp_path, capsys, name, why):
    line = _refused_run(tmp_path, capsys, str(tiny), "--study", name)
    shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}... (300 characters)"
    assert line == f"sweeper: --study: {shown} is not a study name: {why}; {RULE}"


@pytest.mark.parametrize("name, why", BAD_NAMES[:8])
def test_a_bad_study_in_the_space_file_is_refused_with_its_line(tmp_path, capsys, name, why):
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("study: tiny", f"study: {json.dumps(name)}"))
    line = _refused_run(tmp_path, capsys, str(space))
    assert line.startswith(f"{space}:2: study: ") and f"is not a study name: {why}" in line


def test_good_study_names_pass_and_a_file_name_is_made_safe(tmp_path):
    for name in ("copy-fp32", "a.b-c_d+e", "X" * 100, "h200.v2"):
        assert study_name_problem(name) is None
    assert safe_name("my space (2)") == "my-space-2"
    assert safe_name("..\u202e..") == "study" and safe_name("a" * 300) == "a" * 100
    space = tmp_path / "my space (2).yaml"
    space.write_text(TINY.replace("study: tiny\n", ""))
    assert load_space(space).study == "my-space-2"


def test_a_study_link_out_of_the_studies_folder_is_refused(tiny, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "evil").symlink_to(outside)
    rc = main(["run", str(tiny), "--device", "interpret", "--studies-dir", str(studies),
               "--study", "evil", "--quiet"])
    assert rc == 2 and _one_line(capsys) == (
        f"sweeper: {studies / 'evil'}: resolves to {outside}, outside the studies folder "
        f"{studies}; a study is written under --studies-dir only")
    assert list(outside.iterdir()) == []


def test_a_studies_dir_that_is_a_file_is_refused(tiny, tmp_path, capsys):
    (tmp_path / "studies").write_text("")
    rc = main(["run", str(tiny), "--device", "interpret", "--studies-dir",
               str(tmp_path / "studies"), "--quiet"])
    assert rc == 2 and _one_line(capsys) == f"sweeper: --studies-dir {tmp_path / 'studies'}: " \
                                            "not a folder"


def test_a_run_writes_under_its_studies_folder_only(tmp_path, capsys):
    """A whole run (replayed, so it is quick) leaves every file outside --studies-dir as it
    was, and writes its study in one folder under it."""
    from tests.test_hostile_replay import COLUMNS, HEADER, ROWS, SPACE

    (tmp_path / "tiny.yaml").write_text(SPACE)
    (tmp_path / "t.csv").write_text("\n".join([*HEADER, COLUMNS, *ROWS]) + "\n")
    before = _files(tmp_path)
    assert main(["run", str(tmp_path / "tiny.yaml"), "--device", f"replay:{tmp_path / 't.csv'}",
                 "--studies-dir", str(tmp_path / "st"), "--quiet"]) == 0
    after = _files(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("st/")} == before
    assert {Path(k).parts[:2] for k in after if k.startswith("st/")} == {("st", "tiny-replay")}


def test_the_commands_that_read_a_study_add_to_its_folder_only_their_outputs(tmp_path,
                                                                           capsys):
    """report, export, compare, roofline, plan and the Python API's load_study read a study
    (a copy of one, without the lock files a run leaves): its files stay as they were and
    none is added (no claims or worker lock) but report's own."""
    import shutil

    import sweeper
    from tests.test_hostile_replay import COLUMNS, HEADER, ROWS, SPACE

    (tmp_path / "tiny.yaml").write_text(SPACE)
    (tmp_path / "t.csv").write_text("\n".join([*HEADER, COLUMNS, *ROWS]) + "\n")
    assert main(["run", str(tmp_path / "tiny.yaml"), "--device", f"replay:{tmp_path / 't.csv'}",
                 "--studies-dir", str(tmp_path / "st"), "--quiet", "--no-report"]) == 0
    study = tmp_path / "copied" / "tiny-replay"
    shutil.copytree(tmp_path / "st" / "tiny-replay", study,
                    ignore=shutil.ignore_patterns(".*.lock"))
    before = _files(study)
    out = tmp_path / "out"
    for args in (["report", str(study)], ["export", str(study), "-o", str(out / "t.json")],
                 ["compare", f"{study}@1", f"{study}@2"],
                 ["plan", str(tmp_path / "tiny.yaml"), "--device", f"replay:{tmp_path / 't.csv'}",
                  "--studies-dir", str(study.parent)]):
        assert main(args) == 0, args
    # read, then refused: a replay has no roofline
    assert main(["roofline", "--studies-dir", str(study.parent), "-o", str(out / "r.png")]) == 2
    loaded = sweeper.load_study(study)
    loaded.trials_dataframe(), loaded._repr_html_(), loaded.report()
    loaded.export(out / "t.csv", format="csv")
    capsys.readouterr()
    reported = ("report.md", "report.html", "report.json", "heatmaps/")
    assert {k: v for k, v in _files(study).items() if not k.startswith(reported)} == before
    assert sorted(p.name for p in study.iterdir() if p.name.startswith(".")) == []


# -- what a space file can reach ------------------------------------------------------------
@pytest.fixture
def layout(tmp_path):
    """proj/spaces/ holds the space files; secret/shadow lies outside, like /etc/shadow."""
    spaces = tmp_path / "proj" / "spaces"
    (spaces / "base").mkdir(parents=True)
    (spaces / "base" / "common.yaml").write_text(TINY)
    (spaces / "sub").mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "shadow").write_text(SECRET)
    return spaces, secret


def _plan(space: Path, capsys, *options: str) -> tuple[int, str, str]:
    rc = main(["plan", str(space), "--device", "interpret", *options])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_extends_reaches_files_under_the_space_files_folder(layout, capsys):
    spaces, _ = layout
    (spaces / "a.yaml").write_text("extends: base/common.yaml\nparams: {BLOCK: [256]}\n")
    (spaces / "b.yaml").write_text("extends: sub/c.yaml\n")
    (spaces / "sub" / "c.yaml").write_text("extends: ../base/common.yaml\n")
    rc, out, _ = _plan(spaces / "a.yaml", capsys)
    assert rc == 0 and ": 1 config (" in out
    rc, out, _ = _plan(spaces / "b.yaml", capsys)
    assert rc == 0 and "2 configs" in out
    # the folder is the one of the file named on the command line: from sub/, ../base is out
    rc, _, err = _plan(spaces / "sub" / "c.yaml", capsys)
    assert rc == 2 and err.startswith(f"{spaces / 'sub' / 'c.yaml'}:1: extends: "
                                      f"'../base/common.yaml' is outside {spaces / 'sub'}")


@pytest.mark.parametrize("ref", ["ABS", "../../secret/shadow", "link.yaml", "/etc/passwd"])
def test_extends_out_of_the_folder_is_refused_before_reading(layout, capsys, ref):
    spaces, secret = layout
    (spaces / "link.yaml").symlink_to(secret / "shadow")
    ref = str(secret / "shadow") if ref == "ABS" else ref
    (spaces / "a.yaml").write_text(f"extends: {ref}\n")
    rc, out, err = _plan(spaces / "a.yaml", capsys)
    target = Path(spaces / ref).resolve() if not ref.startswith("/") else Path(ref).resolve()
    lands = "" if ref == str(target) else f" (it resolves to {target})"
    assert rc == 2 and out == ""
    assert err == (f"{spaces / 'a.yaml'}:1: extends: {ref!r} is outside {spaces}, the space "
                   f"file's folder{lands}; extends: reaches files under that folder only; to "
                   "allow another folder pass --allow-path DIR or set SWEEPER_ALLOW_PATH\n")
    assert "SECRET" not in err and "root:" not in err


@pytest.mark.parametrize("how", ["option", "env"])
def test_an_allowed_file_that_is_no_space_is_refused_without_its_text(layout, capsys,
                                                                      monkeypatch, how):
    spaces, secret = layout
    (spaces / "a.yaml").write_text(f"extends: {secret / 'shadow'}\n")
    options = ["--allow-path", str(secret)] if how == "option" else []
    if how == "env":
        monkeypatch.setenv("SWEEPER_ALLOW_PATH", f"/nonexistent:{secret}")
    rc, _, err = _plan(spaces / "a.yaml", capsys, *options)
    assert rc == 2 and err == (f"{secret / 'shadow'}:1: not a space file: the key on this "
                               "line is none of study, kernel, from_autotune, sampler, seed, "
                               "params, constraints, measure, budget, extends\n")


def test_a_yaml_error_in_an_extended_file_quotes_none_of_it(layout, capsys):
    spaces, secret = layout
    (secret / "bad.yaml").write_text("kernel: copy\nparams: *SECRETALIAS\n")
    (spaces / "a.yaml").write_text(f"extends: {secret / 'bad.yaml'}\n")
    rc, _, err = _plan(spaces / "a.yaml", capsys, "--allow-path", str(secret))
    assert rc == 2 and "SECRET" not in err
    # the middle is PyYAML's wording; the alias's name is ours to hide
    assert err.startswith(f"{secret / 'bad.yaml'}:2: YAML syntax error: ")
    assert err.endswith(" '…'\n") and err.count("\n") == 1


def test_an_allowed_space_file_outside_is_used(layout, capsys):
    spaces, secret = layout
    (secret / "shared.yaml").write_text(TINY)
    (spaces / "a.yaml").write_text(f"extends: {secret / 'shared.yaml'}\n")
    rc, out, _ = _plan(spaces / "a.yaml", capsys, "--allow-path", str(secret))
    assert rc == 0 and "2 configs" in out


def test_extends_a_folder_is_refused(layout, capsys):
    spaces, _ = layout
    (spaces / "a.yaml").write_text("extends: base\n")
    rc, _, err = _plan(spaces / "a.yaml", capsys)
    assert rc == 2 and err == f"{spaces / 'a.yaml'}:1: extends: 'base' is not a regular file\n"


# -- the user code each command imports -----------------------------------------------------
USER_KERNEL = '''
from pathlib import Path

Path(__file__).with_suffix(".imported").write_text("top-level code ran")

from sweeper.kernels.copy import CopyKernel


class Marked(CopyKernel):
    name = "marked"
'''


@pytest.fixture
def user_kernel(tmp_path, monkeypatch):
    """A user kernel module whose top-level code leaves a marker file when imported."""
    module = f"userkernel_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(USER_KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    space = tmp_path / "user.yaml"
    space.write_text(TINY.replace("kernel: copy", f"kernel: {module}:Marked")
                     .replace("study: tiny", "study: marked"))
    yield module, space, tmp_path / f"{module}.imported"
    sys.modules.pop(module, None)


def test_plan_report_export_compare_import_no_user_code_and_run_does(user_kernel, tmp_path,
                                                                     capsys):
    module, space, marker = user_kernel
    rc, out, _ = _plan(space, capsys)
    assert rc == 0 and "2 configs" in out
    assert (f"not checked: kernel {module}:Marked was not imported (plan runs no user code): "
            "its meta-parameters (BLOCK) and their values") in out
    assert not marker.exists() and module not in sys.modules

    studies = str(tmp_path / "studies")
    assert main(["run", str(space), "--device", "interpret", "--studies-dir", studies,
                 "--quiet", "--no-report"]) == 0
    assert marker.exists()                                   # run must run the kernel
    marker.unlink()
    del sys.modules[module]

    study = tmp_path / "studies" / "marked-interpret"
    meta = json.loads((study / "study.json").read_text())
    del meta["headline"]                     # an older study: report must not ask the kernel
    (study / "study.json").write_text(json.dumps(meta))
    for args in (["report", str(study)], ["export", str(study), "-o", str(tmp_path / "t.json")],
                 ["export", str(study), "--format", "csv", "-o", str(tmp_path / "t.csv")],
                 ["compare", f"{study}@0", f"{study}@1"]):
        assert main(args) == 0, args
        assert not marker.exists() and module not in sys.modules, args
    assert "GB/s" in (study / "report.md").read_text()


def test_plan_on_a_replay_table_imports_no_user_code_and_run_does(user_kernel, tmp_path,
                                                                  capsys):
    """A replay device checks the table's columns against the space's axes: for ``plan``
    it read the user kernel's meta-parameters by importing its module."""
    module, space, marker = user_kernel
    rows = [f"{block},32,cold,float32,4KiB,sms,ok,{ms},{ms} {ms} {ms}"
            for block, ms in ((256, 0.004), (1024, 0.003))]
    table = tmp_path / "t.csv"
    table.write_text("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n"
                     f"# l2_bytes: 62914560\n# kernel: {module}:Marked\n"
                     "BLOCK,block,cache,dtype,footprint,grid,status,median_ms,samples_ms\n"
                     + "\n".join(rows) + "\n")
    assert main(["plan", str(space), "--device", f"replay:{table}"]) == 0
    assert "2 configs" in capsys.readouterr().out
    assert not marker.exists() and module not in sys.modules

    lacking = tmp_path / "lacking.csv"                  # no BLOCK column: refused as run does
    lacking.write_text(table.read_text().replace("BLOCK,", "").replace("\n256,", "\n")
                       .split("\n1024,")[0] + "\n")
    assert main(["plan", str(space), "--device", f"replay:{lacking}"]) == 2
    assert "no column 'BLOCK' for the axis BLOCK" in capsys.readouterr().err
    assert not marker.exists() and module not in sys.modules

    assert main(["run", str(space), "--device", f"replay:{table}", "--studies-dir",
                 str(tmp_path / "studies"), "--quiet", "--no-report"]) == 0
    assert marker.exists()                                   # run must run the kernel


@pytest.mark.parametrize(("key", "grid"), [("kernel", True), ("kernel", False),
                                         ("sampler", True)])
def test_plan_refuses_a_user_plugin_whose_module_is_missing_as_run_does(tmp_path, capsys,
                                                                         key, grid):
    """A kernel (or sampler) module that is nowhere on the path: plan used to plan the
    space with a "not checked" note, where run refuses it; without a grid in the file it
    blamed the base Kernel's default grid (``params.grid[0]: unknown name 'BLOCK'``)."""
    text = TINY.replace("BLOCK: [256, 1024]", "TILE: [16, 32, 64]").replace(
        "kernel: copy", "kernel: not_installed.anywhere:Kernel") if key == "kernel" else \
        TINY.replace("sampler: exhaustive", "sampler: nosampler:S")
    if not grid:
        text = text.replace("  grid: [sms]\n", "")
    space = tmp_path / "s.yaml"
    space.write_text(text)
    target, line = ("kernel 'not_installed.anywhere:Kernel'", 3) if key == "kernel" else \
        ("sampler 'nosampler:S'", 4)
    missing = "not_installed" if key == "kernel" else "nosampler"
    expected = (f"{space}:{line}: {key}: cannot load {target} (module:attr path): No module "
                f"named '{missing}' in the current directory ({Path.cwd()}) or on the Python "
                "path; run from the folder that holds it, or add that folder to PYTHONPATH")
    rc, out, err = _plan(space, capsys)
    assert (rc, out, err) == (2, "", expected + "\n")
    assert _refused_run(tmp_path, capsys, str(space)) == expected


def test_plan_refuses_a_literal_named_as_the_kernel_as_run_does(tmp_path, capsys,
                                                                monkeypatch):
    """``kernel: mod:A`` where the module binds ``A = 5``: plan planned it with a "not
    checked" note, where run refuses it; a name the module may bind again elsewhere (a
    branch) is left to run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "litmod_qa.py").write_text("A = 5\nB = 'copy'\nif B:\n    B = None\n")
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("kernel: copy", "kernel: litmod_qa:A"))
    expected = (f"{space}:3: kernel: cannot load kernel 'litmod_qa:A' (module:attr path): "
                "litmod_qa:A is an int (litmod_qa.py:1), not a sweeper.kernels.Kernel "
                "subclass or instance")
    assert _plan(space, capsys) == (2, "", expected + "\n")
    assert _refused_run(tmp_path, capsys, str(space)).startswith(expected.partition(" (lit")[0])
    space.write_text(TINY.replace("kernel: copy", "kernel: litmod_qa:B"))
    rc, out, _ = _plan(space, capsys)
    assert rc == 0 and "neither a Kernel subclass nor a sweeper.kernel declaration" in out
    sys.modules.pop("litmod_qa", None)


def test_plan_refuses_a_missing_module_of_a_package_that_is_there_as_run_does(
        tmp_path, capsys, monkeypatch):
    """``kernel: mykern.rowsun:rowsum`` (a misspelt module of a package that is there):
    plan used to plan it with a "not checked" note, counting the kernel's dimensions as
    meta-parameters, where run refuses it; it is refused as run refuses it, the package
    never imported.  A package whose ``__init__`` may make its modules (``__path__``,
    ``sys.modules``) is left to run."""
    monkeypatch.chdir(tmp_path)
    package = tmp_path / "mykern_qa"
    package.mkdir()
    (package / "__init__.py").write_text("raise SystemExit('imported')\n")
    (package / "rowsum.py").write_text(USER_KERNEL)
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("kernel: copy", "kernel: mykern_qa.rowsun:Marked"))
    expected = (f"{space}:3: kernel: cannot load kernel 'mykern_qa.rowsun:Marked' "
                "(module:attr path): No module named 'mykern_qa.rowsun'")
    assert _plan(space, capsys) == (2, "", expected + "\n")
    deeper = tmp_path / "deeper.yaml"
    deeper.write_text(TINY.replace("kernel: copy", "kernel: mykern_qa.sub.rowsum:Marked"))
    assert _plan(deeper, capsys)[2].endswith("No module named 'mykern_qa.sub'\n")
    (package / "__init__.py").write_text("__path__.append('elsewhere')\n")
    rc, out, _ = _plan(space, capsys)
    assert rc == 0 and "not found on the path" in out


@pytest.mark.parametrize("opening", ["import sweeper\nimport {missing}\n",
                                     "from sweeper import kernels\nfrom {missing}.x import y\n"])
def test_plan_refuses_a_kernel_module_whose_opening_import_is_missing_as_run_does(
        tmp_path, capsys, monkeypatch, opening):
    """A kernel module whose opening imports name a package nowhere on the path (``import
    nonexisting_pkg``): plan planned it with a "not checked" note where run refuses it; it
    is refused as run refuses it, at that line, the module never run.  An import its
    module may have made findable (after a ``sys.path`` edit) or guarded (``try``) is left
    to run, as is a failure only running its code tells (a ``NameError``): plan runs no
    user code, and says it did not import the kernel."""
    monkeypatch.chdir(tmp_path)
    missing = f"nonexisting_{uuid.uuid4().hex[:8]}"
    module = f"userkernel_{uuid.uuid4().hex[:8]}"
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("kernel: copy", f"kernel: {module}:Marked"))
    (tmp_path / f"{module}.py").write_text(
        '"""A kernel."""\n' + opening.format(missing=missing) + USER_KERNEL)
    imported = opening.splitlines()[1].format(missing=missing)
    expected = (f"{space}:3: kernel: cannot load kernel '{module}:Marked' (module:attr path): "
                f"No module named '{missing}' (at {module}.py:3: {imported})")
    assert _plan(space, capsys) == (2, "", expected + "\n")
    assert not (tmp_path / f"{module}.imported").exists()
    assert _refused_run(tmp_path, capsys, str(space)) == expected
    for left in (f"import sys\nsys.path.insert(0, 'elsewhere')\nimport {missing}\n",
                 f"try:\n    import {missing}\nexcept ImportError:\n    pass\n",
                 "A = undefined_name\n"):
        (tmp_path / f"{module}.py").write_text(left + USER_KERNEL)
        rc, out, _ = _plan(space, capsys)
        assert rc == 0 and f"not checked: kernel {module}:Marked was not imported" in out


def test_plan_refuses_a_kernel_that_is_no_module_path_without_importing(tmp_path, capsys,
                                                                          monkeypatch):
    (tmp_path / "not-a-module.py").write_text(USER_KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    space = tmp_path / "s.yaml"
    space.write_text(TINY.replace("kernel: copy", "kernel: not-a-module:Marked"))
    rc, _, err = _plan(space, capsys)
    assert rc == 2 and err == (f"{space}:3: kernel: unknown kernel 'not-a-module:Marked'; "
                               f"known: {', '.join(plugins.KERNEL.builtins)}, or "
                               "package.module:attr for your own\n")
    assert not (tmp_path / "not-a-module.imported").exists()


def test_p_on_a_zipped_axis_names_its_group(tmp_path, capsys):
    """-p BLOCK=... where the file zips BLOCK was refused at the file's zip line as if the
    file gave BLOCK twice; it names the option, the group and how to override it."""
    zipped = tmp_path / "zipped.yaml"
    zipped.write_text(TINY.replace("  block: [32]\n  BLOCK: [256, 1024]\n",
                                   "  tiles: {zip: {block: [32, 64], BLOCK: [256, 1024]}}\n"))
    assert _refused_run(tmp_path, capsys, str(zipped), "-p", "BLOCK=512") == (
        f"-p BLOCK=512: BLOCK is zipped in params.tiles ({zipped}:7), so it moves with block; "
        "override the group instead (tiles={zip: {...}})")


@pytest.mark.parametrize(("override", "message"), [
    ("tiles=[32]", "params.tiles ({zipped}:7) is a group of zipped axes (block, BLOCK); "
     "override it as a group: tiles={{zip: {{block: [...], BLOCK: [...]}}}}"),
    ("tlies=32", "params.tlies: unknown key 'tlies'; known: grid, block, dtype, footprint, "
     "cache, n, BLOCK, tiles; did you mean 'tiles'?"),
    ("tlies={zip: {block: [32], BLOCK: [256]}}",
     "block is zipped in params.tiles ({zipped}:7), so it moves with BLOCK; override the "
     "group instead (tiles={{zip: {{...}}}}); did you mean 'tiles'?"),
])
def test_p_names_a_zip_group_as_a_key(tmp_path, capsys, override, message):
    """-p with a group's name (or a misspelling of it) is taken as the file takes a group,
    or refused with the group among the known keys: tiles=[32] and tlies=32 were refused
    as 'unknown key' with a list that lacked tiles, and tlies={zip: ...} was accepted,
    zipping the file's axes a second time."""
    zipped = tmp_path / "zipped.yaml"
    zipped.write_text(TINY.replace("  block: [32]\n  BLOCK: [256, 1024]\n",
                                   "  tiles: {zip: {block: [32, 64], BLOCK: [256, 1024]}}\n"))
    assert _refused_run(tmp_path, capsys, str(zipped), "-p", override) == (
        f"-p {override}: " + message.format(zipped=zipped))
    rc = main(["plan", str(zipped), "--device", "interpret", "-p",
               "tiles={zip: {block: [32], BLOCK: [512]}}"])
    assert rc == 0 and "1 config " in capsys.readouterr().out
