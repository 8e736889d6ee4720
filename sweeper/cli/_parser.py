"""The ``sweeper`` command's options: one small function per command.

Option values are checked here, at the edge (``sweeper.options``): a bad one is one
line and exit status 2 before anything runs.  Nothing here imports torch, triton,
optuna or pandas: ``sweeper --help`` and a refused option cost no more than Python.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from sweeper.cli._measure import cmd_ab, cmd_calibrate
from sweeper.cli._plan import cmd_kernels, cmd_plan, cmd_schema
from sweeper.cli._results import (
    cmd_compare,
    cmd_export,
    cmd_report,
    cmd_roofline,
    cmd_tuned,
)
from sweeper.cli._run import cmd_run
from sweeper.cli._worker import cmd_copy_study, cmd_worker
from sweeper.core._model import CACHE_MODES
from sweeper.errors import SweeperError
from sweeper.options import (
    GPU_CHECK_TARGET,
    GPU_CHECKS,
    MIN_LEASE_S,
    SCALES,
    OptionValueError,
    compile_workers,
    file_path,
    gpu_list,
    gpu_name,
    gpu_target,
    lease,
    seconds,
    trial_budget,
    worker_name,
)

T = TypeVar("T")

#: What ``sweeper --help`` says the command is, above its commands.
DESCRIPTION = ("Autotuning parameter sweeps for GPU kernels, with measurements you can "
               "trust: describe a search space in YAML, sweep it, report and export the "
               "winners.")


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error raised as one line instead of printed with the usage:
    a bad option or value is one line and exit status 2, as a bad space file is (argparse's
    own errors, an unknown option or a missing value, included).  A word that starts with
    a minus and a digit (``--time -3s``, ``--lease -1m``) is a value, as argparse takes
    ``-3``: no option starts with a digit, and the value's own check says what is wrong
    with it ("expected one argument" would not)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        raise SweeperError(f"{self.prog}: {message} (see {self.prog} --help)")


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed by ``parser`` (:func:`build_parser`'s); an option the command does
    not take is its command's error (``see sweeper run --help``), not the top-level
    parser's (``see sweeper --help``)."""
    parsed, extra = parser.parse_known_args(argv)
    if extra:
        commands = next((a.choices for a in parser._actions
                         if isinstance(a, argparse._SubParsersAction)), {})
        command = commands.get(getattr(parsed, "command", None) or "", parser)
        split = next((p for p in getattr(parsed, "param", None) or [] if p.endswith(",")),
                     None)
        hint = (f"; -p {split} {extra[0]}: the shell split the values at the space; write "
                f"-p {split}{extra[0]} or quote them") if split is not None else \
            _option_meant(command, extra)
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return parsed


def _option_meant(command: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """``; did you mean '--trials'?`` for the first unrecognized word that is an option
    (``--trails`` or ``--trails=5``) close to one ``command`` takes, by the rule every
    name is suggested by (:func:`~sweeper.core._units.closest`), else ``""``: the names
    are compared without their dashes, which every long option shares."""
    from sweeper.core._units import closest

    taken = {o[2:]: o for a in command._actions for o in a.option_strings
             if o.startswith("--")}
    word = next((w.partition("=")[0] for w in extra if w.startswith("--")), None)
    close = None if word is None else closest(word[2:], taken)
    return f"; did you mean {taken[close]!r}?" if close is not None else ""


def _typed(check: Callable[[str], T]) -> Callable[[str], T]:
    """``check`` (a :mod:`sweeper.options` value check) as argparse's ``type``: its
    :class:`~sweeper.options.OptionValueError` becomes argparse's, which names the option in
    front of the one line."""
    def typed(text: str) -> T:
        try:
            return check(text)
        except OptionValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    typed.__name__ = check.__name__
    return typed


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``sweeper``; each command sets ``func``, the function that runs it."""
    from sweeper import __version__

    parser = ArgumentParser(prog="sweeper", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"sweeper {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks, a failed trial's too (on stderr, as it fails)")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    for command in sub.choices.values():   # also after the command: sweeper run ... --debug
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="as sweeper --debug")
    return parser


def _run(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    run = _of_a_space(sub, "run", "sweep a space file and report", optional=True)
    _from_autotune_option(run, "run every config of")
    _study_options(run)
    _budget_options(run)
    _force_option(run)
    run.add_argument("--gpus", type=_typed(gpu_list), default=[], metavar="0,1|all",
                     help="one worker per GPU, each config measured once by whichever is "
                     "free (default: the one GPU the device opens)")
    run.add_argument("--workers", choices=("process", "inline"),
                     help="process: each worker a process of its own, so a crash or hang "
                     "ends that worker, not the sweep (the default on a GPU); inline: "
                     "measure in this process (the default elsewhere)")
    run.add_argument("--compile-workers", type=_typed(compile_workers), metavar="N|auto",
                     help="processes compiling the configs the sampler proposes next while "
                     "the GPU measures (0: off; default auto: the cores the workers "
                     "leave, at most 8)")
    run.add_argument("--gpu-check", choices=GPU_CHECKS, default="first",
                     help="on --device interpret, also compile the kernel for a GPU "
                     "(--gpu-check-target), as the interpreter runs what Triton's "
                     "compiler refuses: first (default): one config, and every config "
                     "once it is refused; all: every binary; off: none")
    run.add_argument("--gpu-check-target", type=_typed(gpu_target), default=GPU_CHECK_TARGET,
                     metavar="sm_NN",
                     help="the GPU --gpu-check compiles for (default sm_90: H100, H200)")
    run.add_argument("--quiet", action="store_true", help="no progress bar; summary only")
    run.add_argument("--no-report", action="store_true", help="skip the report at the end")
    run.add_argument("--svg", action="store_true", help="the report's pictures as SVG too")
    run.add_argument("--timing", action="store_true",
                     help="after the time line, where the sweep's time went: the coordinator's "
                          "milliseconds per trial, each worker's start, busy and idle seconds")
    run.add_argument("--no-priors", action="store_true",
                     help="auto: do not start from the winners of other studies of this "
                     "kernel on this GPU in --studies-dir")
    run.set_defaults(func=cmd_run)


def _worker(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    worker = _of_a_space(sub, "worker", "sweep one study together with other workers, on "
                         "any hosts: each config measured once", optional=True)
    worker.add_argument("--study", required=True, help="the study to share (made from "
                        "SPACE if it does not exist yet)")
    _study_options(worker, name=False)
    worker.add_argument("--worker-id", type=_typed(worker_name),
                        help="this worker's name in claims, held by one live process at a "
                        "time (default: HOST:PID)")
    worker.add_argument("--lease", type=_typed(lease), default=60.0,
                        help="how long a claim outlives its last heartbeat before another "
                        "worker may take the config (default 60s, at least "
                        f"{MIN_LEASE_S:g}s: a heartbeat every third of it must land in "
                        "time); a killed worker's claims go at once")
    worker.add_argument("--trials", type=_typed(trial_budget),
                        help="stop after this many trials")
    worker.add_argument("--time", type=_typed(seconds), help="end the whole command within "
                        "this long, its start-up included (e.g. 10m)")
    _force_option(worker)
    worker.set_defaults(func=cmd_worker)


def _copy_study(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    copy = sub.add_parser("copy-study", help="copy a study between the journal and a "
                          "database, verified equal")
    copy.add_argument("study", help="a study name under --studies-dir, or its folder "
                      "(with --storage: its name)")
    copy.add_argument("--to", required=True, help="a postgresql:// URL, or a studies folder "
                      "for its journal")
    _study_options(copy, name=False)
    copy.set_defaults(func=cmd_copy_study)


def _plan(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    plan = _of_a_space(sub, "plan", "size, constraints and time estimate; launches nothing",
                       optional=True)
    _from_autotune_option(plan, "plan every config of")
    plan.add_argument("--studies-dir", default="studies",
                      help="where the study this space runs into was run before, if it was "
                      "(its last run's time per trial is printed beside the estimate; "
                      "default: %(default)s)")
    _budget_options(plan, planned=True)
    _force_option(plan, planned=True)
    plan.set_defaults(func=cmd_plan)


def _report(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    report = _of_a_study(sub, "report", "heatmaps and best-config report of a study")
    scale = report.add_mutually_exclusive_group()
    scale.add_argument("--scale", choices=SCALES, default="study",
                        help="the heatmaps' colour scale: one for every map of the study, so "
                        "colours compare across maps (default), one per problem, or each "
                        "map its own range")
    scale.add_argument("--shared-scale", dest="scale", action="store_const", const="problem",
                        help="the same as --scale problem")
    report.add_argument("--svg", action="store_true", help="pictures as SVG too (default: PNG)")
    report.add_argument("--redraw", action="store_true", help="draw every picture again "
                        "(default: only those whose numbers or drawing code changed)")
    report.set_defaults(func=cmd_report)


def _roofline(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    roofline = sub.add_parser("roofline", help="the winners of studies on one GPU against "
                              "its calibrated ceilings and physical bounds")
    roofline.add_argument("study", nargs="*", help="studies (names under --studies-dir, or "
                          "folders); default: every study in --studies-dir")
    roofline.add_argument("--studies-dir", default="studies", help="where studies live "
                          "(default: %(default)s)")
    roofline.add_argument("--gpu", help="only the studies measured on this GPU (as their "
                          "reports name it)")
    roofline.add_argument("-o", "--output", type=_typed(file_path), help="the picture, .png "
                          "or .svg (default: STUDIES_DIR/roofline.png and .svg)")
    roofline.set_defaults(func=cmd_roofline)


def _export(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    from sweeper.interop import FORMATS

    export = _of_a_study(sub, "export", "write the best configs to a tuning file, a Triton "
                         "module, or the study in another tool's format")
    export.add_argument("-o", "--output", type=_typed(file_path), help="tuning file "
                        "(default: $SWEEPER_TUNING or studies/tuning.json); with another "
                        "--format, the file's path")
    export.add_argument("--format", choices=("tuning", *FORMATS), default="tuning",
                        help="tuning: best configs for launches; " + "; ".join(
                            f"{name}: {f.help}" for name, f in FORMATS.items()))
    export.add_argument("--to", metavar="URL", help="--format optuna: where the Optuna "
                        "study goes (sqlite:///FILE.db, or a journal file path); --storage "
                        "names where this study is read from")
    export.add_argument("--replace", action="store_true", help="--format optuna: delete "
                        "the Optuna study of this name at --to and write it again "
                        "(without it, one already there is refused)")
    export.set_defaults(func=cmd_export)


def _ab(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    ab = sub.add_parser("ab", help="A/B on one variable, everything else fixed, interleaved")
    ab.add_argument("space", help="the space file (YAML)")
    ab.add_argument("--vary", required=True, metavar="KEY=A,B", help="the axis and its two values")
    _device_option(ab)
    _param_option(ab)
    _threshold_option(ab)
    _allow_option(ab)
    ab.add_argument("--studies-dir", default="studies",
                    help="the samples go to STUDIES_DIR/<study>-ab/KEY-A-vs-B-HASH.json, "
                    "HASH of the comparison with its -p settings: another comparison never "
                    "replaces them (default: %(default)s)")
    ab.set_defaults(func=cmd_ab)


def _calibrate(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    calibrate = sub.add_parser("calibrate", help="measure this GPU's copy and matmul ceilings")
    calibrate.add_argument("--force", action="store_true", help="measure again")
    _device_option(calibrate)
    calibrate.set_defaults(func=cmd_calibrate)


def _compare(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    compare = sub.add_parser("compare", help="SAME/FASTER/SLOWER/UNCLEAR per config, B vs A")
    compare.add_argument("a", help="study, or STUDY@TRIAL for one trial (the reference)")
    compare.add_argument("b", help="study, or STUDY@TRIAL, judged against A")
    compare.add_argument("--max-noise", default="5%",
                         help="relative 95%% CI half-width above which SAME becomes UNCLEAR "
                         "(default: %(default)s)")
    _threshold_option(compare)
    _study_options(compare, name=False)
    compare.set_defaults(func=cmd_compare)


def _schema(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    schema = sub.add_parser("schema", help="print a JSON Schema for space files")
    schema.add_argument("-o", "--output", type=_typed(file_path),
                        help="write it to this file instead")
    schema.set_defaults(func=cmd_schema)


def _tuned(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    tuned = sub.add_parser("tuned", help="print the tuned config a launch would use")
    tuned.add_argument("kernel", help="kernel name as in the space file (a built-in: sweeper "
                       "kernels lists them, or package.module:attr; a CUDA C kernel: "
                       "cuda:FILE.cu:ENTRY, FILE its .cu file's path or as much of its "
                       "end as tells it apart, e.g. cuda:copy.cu:copy or "
                       "cuda:a/copy.cu:copy; a torch op: torch-op:OP, e.g. "
                       "torch-op:torch.nn.functional.gelu)")
    tuned.add_argument("--dtype", default="float32", help="element type (default float32)")
    problem = tuned.add_mutually_exclusive_group(required=True)
    problem.add_argument("--footprint", help="e.g. 256MiB")
    problem.add_argument("--dims", help="the kernel's dimensions, e.g. M=4096,N=2048,K=8192")
    tuned.add_argument("--gpu", type=_typed(gpu_name), help="the device as the tuning file "
                       "names it, e.g. 'NVIDIA H200' or 'replay: NVIDIA H200' (default: this "
                       "machine's GPU; without one, 'Triton interpreter (CPU)')")
    tuned.add_argument("--tuning", type=_typed(file_path), help="tuning file (default: "
                       "$SWEEPER_TUNING or studies/tuning.json)")
    tuned.add_argument("--cache", choices=CACHE_MODES, default="cold",
                       help="the cache mode the winner was measured in: cold (L2 flushed "
                       "before each sample; the default) or warm")
    tuned.set_defaults(func=cmd_tuned)


def _kernels(sub: argparse._SubParsersAction[ArgumentParser]) -> None:
    kernels = sub.add_parser("kernels", help="list the kernels with their meta-parameters, "
                             "problem dimensions and defaults")
    kernels.add_argument("names", nargs="*", metavar="KERNEL",
                         help="only these (a built-in, an installed entry point's name, or "
                         "package.module:attr, which is imported); default: every built-in "
                         "and installed kernel")
    kernels.add_argument("--json", action="store_true", help="print JSON")
    kernels.set_defaults(func=cmd_kernels)


#: The commands in the order ``sweeper --help`` lists them.
COMMANDS: tuple[Callable[[argparse._SubParsersAction[ArgumentParser]], None], ...] = (
    _run, _worker, _plan, _report, _roofline, _export, _ab, _calibrate, _compare,
    _copy_study, _schema, _tuned, _kernels)


def _of_a_space(sub: argparse._SubParsersAction[ArgumentParser], name: str, text: str,
                optional: bool = False) -> argparse.ArgumentParser:
    """A command that reads a space file (``optional``: where another option can stand
    for it), on a device, with ``-p`` and ``--allow-path``."""
    p = sub.add_parser(name, help=text)
    p.add_argument("space", help="the space file (YAML)", nargs="?" if optional else None)
    _device_option(p)
    _param_option(p)
    _allow_option(p)
    return p


def _from_autotune_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--from-autotune``, which stands for the space file: ``what`` the command does with
    the autotuned function's configs."""
    p.add_argument("--from-autotune", metavar="MODULE:KERNEL",
                   help=f"instead of a space file: {what} the @triton.autotune function "
                   "that this sweeper.kernel names (autotuned=)")


def _of_a_study(sub: argparse._SubParsersAction[ArgumentParser], name: str, text: str
                ) -> argparse.ArgumentParser:
    """A command that reads one recorded study."""
    p = sub.add_parser(name, help=text)
    p.add_argument("study", help="a study name under --studies-dir, or its folder")
    _study_options(p, name=False)
    return p


def _threshold_option(p: argparse.ArgumentParser) -> None:
    from sweeper.measure import PRACTICAL

    p.add_argument("--threshold", default=f"{100 * PRACTICAL:g}%",
                   help="medians closer than this are SAME even where their 95%% CIs are "
                   "apart (default: %(default)s, as the finals)")


def _param_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=V1,V2",
                   help="replace one axis for this run, e.g. -p BLOCK=1024,2048 or "
                   "-p 'grid=[sms, \"cdiv(n, BLOCK)\"]' (repeatable)")


def _allow_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-path", action="append", default=[], metavar="DIR",
                   help="a folder besides the space file's own that its extends: may read "
                   "files from (repeatable; also $SWEEPER_ALLOW_PATH, separated by "
                   f"{os.pathsep!r})")


def _device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cuda",
                   help="cuda (default); interpret: the Triton interpreter on the CPU; "
                   "replay:PATH.csv: timings from a recorded table; or an installed "
                   "device plugin's name, or module:attr")


def _budget_options(p: argparse.ArgumentParser, planned: bool = False) -> None:
    """``run``'s ``--trials`` and ``--time`` (overriding the space's budget); ``planned``:
    ``plan``'s, which estimates the run they bound."""
    run = "the run " if planned else ""
    p.add_argument("--trials", type=_typed(trial_budget),
                   help=f"stop {run}after this many measured trials (at least 1)")
    p.add_argument("--time", type=_typed(seconds), help=f"end {run or 'the whole command '}"
                   "within this long, start-up, finals and report included (e.g. 90s, 10m, "
                   "1h30m)")


def _force_option(p: argparse.ArgumentParser, planned: bool = False) -> None:
    """``run``'s ``--force`` (resume a study measured with other settings, such as a
    space changed since); ``planned``: ``plan``'s, which estimates that resumed run."""
    p.add_argument("--force", action="store_true", help=(
        "plan the run that adds to " if planned else "add to ") +
        "a study measured with other settings (a changed space)")


def _study_options(p: argparse.ArgumentParser, name: bool = True) -> None:
    p.add_argument("--studies-dir", default="studies", help="where studies live (default: "
                   "%(default)s; with --storage: where their reports and exports go)")
    p.add_argument("--storage", metavar="URL", help="a postgresql://USER@HOST/DB database "
                   "holding the studies (default: the journal in each study's folder); a "
                   "connection gives up after 10 s unless the URL says ?connect_timeout=N")
    if name:
        p.add_argument("--study", help="study name (default: the space's; on a device "
                       "that measures no GPU, with the device's name appended: -interpret, "
                       "-replay)")
