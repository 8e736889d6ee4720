"""The ``sweeper`` command: run, plan, report, export, tuned, ab, compare, calibrate, schema.

A :class:`SweeperError` is printed as one line and exits with status 2
(``--debug`` shows the traceback); nothing is written before the space file and
the device have been checked.

Exit status: 0 done; 1 ran, but no config produced a number (every trial failed or was
ruled out; a line on stderr says why), or ``run`` stopped after ``MAX_RESTARTS`` fresh
processes, or a file could not be written (a :class:`WriteError`: a full disk, the world's
fault, not the input's; the line says what is left); 2 bad input (space file, option,
study, device), nothing written; 130 interrupted (Ctrl-C twice), every finished trial kept.
A :class:`StudyWarning` (a journal line set aside) is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweeper.errors import ContextLost, StudyError, StudyWarning, SweeperError
from sweeper.options import (
    ArgumentParser,
    check_study_name,
    seconds,
    study_folder,
    whole_number,
)

EXIT_OK = 0
EXIT_NOTHING_MEASURED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: How many times one `sweeper run` goes on in a fresh process after trials that broke
#: the CUDA context (each such trial is recorded and never tried again).
MAX_RESTARTS = 20


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SweeperError as err:         # a bad option or value: one line, as any bad input
        print(err, file=sys.stderr)
        return EXIT_USAGE
    args.argv = list(sys.argv[1:] if argv is None else argv)   # to restart with
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", StudyWarning)
            warnings.showwarning = _one_line(warnings.showwarning)
            return int(args.func(args) or 0)
    except SweeperError as err:
        if args.debug:
            raise
        print(f"sweeper: {err}" if not _located(err) else str(err), file=sys.stderr)
        return getattr(err, "exit_status", EXIT_USAGE)
    except KeyboardInterrupt:
        print("sweeper: aborted; every finished trial is kept", file=sys.stderr)
        return EXIT_INTERRUPTED


def _located(err: SweeperError) -> bool:
    return hasattr(err, "line")


def _one_line(show: Any) -> Any:
    """``warnings.showwarning`` that prints a study warning as one line (``sweeper:
    warning: ...``) and leaves others to ``show``."""
    def showwarning(message: Warning | str, category: type[Warning], *args: Any,
                    **kwargs: Any) -> None:
        if issubclass(category, StudyWarning):
            print(f"sweeper: warning: {message}", file=sys.stderr, flush=True)
        else:
            show(message, category, *args, **kwargs)
    return showwarning


def _parser() -> argparse.ArgumentParser:
    from sweeper import __version__

    parser = ArgumentParser(prog="sweeper", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"sweeper {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="sweep a space file and report")
    run.add_argument("space", help="the space file (YAML)")
    _device_option(run)
    _param_option(run)
    _allow_option(run)
    _study_options(run)
    run.add_argument("--trials", type=whole_number,
                     help="stop after this many measured trials (at least 1)")
    run.add_argument("--time", type=seconds, help="stop after this long (e.g. 90s, 10m)")
    run.add_argument("--force", action="store_true",
                     help="add to a study measured with other settings")
    run.add_argument("--quiet", action="store_true", help="no progress bar; summary only")
    run.add_argument("--no-report", action="store_true", help="skip the report at the end")
    run.add_argument("--no-priors", action="store_true",
                     help="auto: do not start from the winners of other studies of this "
                     "kernel on this GPU in --studies-dir")
    run.set_defaults(func=cmd_run)

    plan = sub.add_parser("plan", help="size, constraints and time estimate; launches nothing")
    plan.add_argument("space", help="the space file (YAML)")
    _device_option(plan)
    _param_option(plan)
    _allow_option(plan)
    plan.set_defaults(func=cmd_plan)

    report = sub.add_parser("report", help="heatmaps and best-config report of a study")
    report.add_argument("study", help="a study name under --studies-dir, or its folder")
    _study_options(report, name=False)
    report.add_argument("--shared-scale", action="store_true",
                        help="one colour scale for all heatmaps of a problem, so colours "
                        "compare across maps (default: each map its own range)")
    report.set_defaults(func=cmd_report)

    export = sub.add_parser("export", help="write the best configs to a tuning file")
    export.add_argument("study", help="a study name under --studies-dir, or its folder")
    _study_options(export, name=False)
    export.add_argument("-o", "--output", help="tuning file (default: $SWEEPER_TUNING or "
                        "studies/tuning.json); with --format csv, the table's path")
    export.add_argument("--format", choices=("tuning", "csv"), default="tuning",
                        help="tuning: best configs for launches; csv: a replay table of "
                        "every trial (default path: STUDY/replay.csv)")
    export.set_defaults(func=cmd_export)

    ab = sub.add_parser("ab", help="A/B on one variable, everything else fixed, interleaved")
    ab.add_argument("space", help="the space file (YAML)")
    ab.add_argument("--vary", required=True, metavar="KEY=A,B", help="the axis and its two values")
    _device_option(ab)
    _param_option(ab)
    _threshold_option(ab)
    _allow_option(ab)
    ab.add_argument("--studies-dir", default="studies",
                    help="the samples go to STUDIES_DIR/<study>-ab/")
    ab.set_defaults(func=cmd_ab)

    calibrate = sub.add_parser("calibrate", help="measure this GPU's copy and matmul ceilings")
    calibrate.add_argument("--force", action="store_true", help="measure again")
    calibrate.set_defaults(func=cmd_calibrate)

    compare = sub.add_parser("compare", help="SAME/FASTER/SLOWER/UNCLEAR per config, B vs A")
    compare.add_argument("a", help="study, or STUDY@TRIAL for one trial (the reference)")
    compare.add_argument("b", help="study, or STUDY@TRIAL, judged against A")
    compare.add_argument("--max-noise", default="5%",
                         help="relative CI half-width above which SAME becomes UNCLEAR")
    _threshold_option(compare)
    _study_options(compare, name=False)
    compare.set_defaults(func=cmd_compare)

    schema = sub.add_parser("schema", help="print a JSON Schema for space files")
    schema.add_argument("-o", "--output", help="write it to this file instead")
    schema.set_defaults(func=cmd_schema)

    tuned = sub.add_parser("tuned", help="print the tuned config a launch would use")
    tuned.add_argument("kernel", help="kernel name as in the space file (copy, add, matmul, "
                       "or package.module:attr)")
    tuned.add_argument("--dtype", default="float32", help="element type (default float32)")
    tuned.add_argument("--footprint", required=True, help="e.g. 256MiB")
    tuned.add_argument("--gpu", help="GPU name (default: this machine's)")
    tuned.add_argument("--tuning", help="tuning file")
    tuned.set_defaults(func=cmd_tuned)
    return parser


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


def _study_options(p: argparse.ArgumentParser, name: bool = True) -> None:
    p.add_argument("--studies-dir", default="studies", help="where studies live")
    if name:
        p.add_argument("--study", help="study name (default: the space's, with -interpret "
                       "appended on the interpreter)")


# -- commands ---------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from sweeper.space import format_size

    if args.study is not None:
        check_study_name("--study", args.study)
    space, device = _space_and_device(args)
    from sweeper.kernels import load_kernel
    from sweeper.store import StudyStore
    from sweeper.sweep import StopFlag, Sweep, open_study

    kernel = load_kernel(space.kernel)
    name = args.study or (space.study if device.measures_gpu else f"{space.study}-{device.name}")
    store = StudyStore(study_folder(args.studies_dir, name))
    command = shlex.join(["sweeper", *sys.argv[1:]]) if sys.argv[0] else "sweeper run"
    resuming = store.exists()
    open_study(store, space, kernel, device, command=command, force=args.force)
    facts = device.facts()
    measure = device.measure_spec(space.measure)
    say = _Printer(args.quiet)
    kept = len(store.records()[0]) if resuming else 0
    say(f"study {name}: {store.root} ({f'resuming, {kept} trials kept' if resuming else 'new'})")
    say(f"device: {facts.name} ({facts.sms} SMs, {format_size(facts.l2_bytes)} L2)")
    if device.note:
        say(f"note: {device.note}")
    how = "replayed from the table" if device.replays else (
        f"first run timed apart, verified, {measure.describe()}; "
        f"{_cache_text(space.axis('cache').labels, device)}")
    say(f"space: {space.size} configs; sampler {space.sampler.name} (seed {space.sampler.seed}); "
        f"each trial: {how}")
    limits = _ceilings_for(device, store)
    say(f"ceilings: {limits}" if isinstance(limits, str) else
        f"ceilings: measured {limits.measured} (sweeper calibrate); DRAM copy "
        f"{limits.dram_bandwidth():.0f} GB/s")
    bounds = device.bounds()
    say(f"bounds: {bounds.summary(space.axis('dtype').labels)}" +
        ("; a result beyond them fails its trial as impossible" if bounds.all() else ""))
    priors = _priors(space, args, facts.name, store.root, say)
    stop = StopFlag()
    previous = signal.signal(signal.SIGINT, _stop_handler(stop, say))
    try:
        sweep = Sweep(space, kernel, device, store,
                      reporter=_reporter(args.quiet, kernel.headline), stop=stop,
                      max_trials=args.trials, max_time_s=args.time,
                      ceilings=None if isinstance(limits, str) else limits,
                      priors=[c for source in priors for c in source.configs],
                      on_hang=lambda record: _hung(record, args, store))
        summary = sweep.run()
    except ContextLost as lost:
        return _restart(lost, args, store)
    finally:
        signal.signal(signal.SIGINT, previous)
    store.update_meta(last_run={"stopped_by": summary.stopped_by, "wall_s": summary.wall_s,
                                "measured": summary.measured, "command": command,
                                "priors": {p.study: p.configs for p in priors}})
    failed = sum(1 for t in summary.trials[summary.resumed:]
                 if t.status.value not in ("ok", "invalid", "abandoned"))
    print(f"done: {summary.measured} measured ({failed} failed), {summary.skipped} skipped by "
          f"constraints, {summary.repeated} repeated proposals answered from the store, "
          f"in {summary.wall_s:.1f} s; stopped: {summary.stopped_by}")
    restarts = int(os.environ.get("SWEEPER_RESTARTS", "0"))
    if restarts:
        print(f"(counts of this process, the last of {restarts + 1}: {restarts} trial(s) broke "
              "the CUDA context and the sweep went on in a fresh process; the report counts "
              "everything)")
    abandoned = [t for t in summary.trials[summary.resumed:] if t.status.value == "abandoned"]
    if abandoned:
        print(f"early abandonment: {len(abandoned)} trials stopped early, saving about "
              f"{summary.saved_ms:.4g} ms of GPU time")
    if space.budget.target is not None and isinstance(limits, str):
        print(f"note: budget.target needs measured ceilings ({limits}); it was not applied")
    from sweeper.finals import Winners
    from sweeper.outcome import nothing_measured, outcome_lines

    for line in outcome_lines(summary.trials, Winners.of(store), kernel.headline):
        print(line)
    if summary.duty:
        print(f"power: {summary.duty}")
    if not args.no_report:
        _report(store)
    why = nothing_measured(summary.trials, summary.stopped_by)
    if why is not None:
        print(f"sweeper: {why}", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    return EXIT_OK


def _restart(lost: ContextLost, args: argparse.Namespace, store: Any) -> int:
    """Go on in a fresh process after a trial broke the CUDA context: the study resumes
    from its journal, and the crashed trial is never proposed again."""
    return _go_on_fresh(f"{lost}; it is recorded as crashed in {store.journal_path}", args)


def _hung(record: Any, args: argparse.Namespace, store: Any) -> None:
    """On the watchdog thread: a trial ran past measure.timeout (recorded as such); the
    kernel cannot be stopped from this process, so go on in a fresh one."""
    _go_on_fresh(f"trial #{record.number} gave no result after "
                 f"{record.wall_s:g} s; it is recorded as timeout in {store.journal_path}",
                 args)
    os._exit(1)       # too many restarts: the main thread is stuck in the kernel


def _go_on_fresh(message: str, args: argparse.Namespace) -> int:
    restarts = int(os.environ.get("SWEEPER_RESTARTS", "0"))
    print(f"sweeper: {message}", file=sys.stderr)
    if restarts >= MAX_RESTARTS:
        print(f"sweeper: stopping after {restarts} restarts; run the same command to go on",
              file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    print(f"sweeper: going on in a fresh process (restart {restarts + 1} of at most "
          f"{MAX_RESTARTS})", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "sweeper", *args.argv],
              {**os.environ, "SWEEPER_RESTARTS": str(restarts + 1)})
    return 1     # not reached


def _space_and_device(args: argparse.Namespace, user_code: bool = True) -> tuple[Any, Any]:
    """The device's name, the space (with -p overrides) and the device itself, checked in
    that order, then the space against the device; ``user_code=False`` imports no user
    kernel or sampler."""
    from sweeper.devices import device_class, open_device
    from sweeper.space import load_space

    # the variables a device sets (the interpreter's) before any kernel module is imported
    os.environ.update(device_class(args.device).sets_env)
    space = load_space(args.space, args.param, allow=args.allow_path, user_code=user_code)
    device = open_device(args.device)
    device.check_space(space)
    return space, device


def cmd_plan(args: argparse.Namespace) -> int:
    from sweeper.kernels import BUILTINS, load_kernel
    from sweeper.plan import make_plan
    from sweeper.space import AxisRole

    space, device = _space_and_device(args, user_code=False)
    facts = device.facts()
    kernel = load_kernel(space.kernel) if space.kernel in BUILTINS else None
    plan = make_plan(space, kernel, facts, device.plan_costs, device.measure_spec(space.measure))
    axes = " × ".join(f"{name} {len(labels)}" for name, labels in space.choices().items())
    print(f"space {space.path}: {plan.size} configs ({axes})")
    removed = sum(plan.removed.values())
    print(f"constraints and values remove {removed}; {plan.valid} valid")
    for reason, count in plan.removed.most_common():
        print(f"  {count:6d}  {reason}")
    budget = f" (budget: {space.budget.trials} trials)" if space.budget.trials else ""
    print(f"would measure {plan.trials}{budget} on {facts.name}")
    a = plan.assumptions
    print(f"estimated time: {_duration(plan.estimate_s)} (assumes {a['compile_s']:g} s compile "
          f"per config, launches of at least {a['launch_s'] * 1e6:g} us, "
          f"{a['bandwidth'] / 1e9:g} GB/s)")
    if device.replays:
        print("  (as on the GPU the table was recorded on; the replay itself takes seconds)")
    if kernel is None:
        meta = [a.name for a in space.axes if a.role is AxisRole.META]
        print(f"not checked: kernel {space.kernel} was not imported (plan runs no user "
              f"code): its meta-parameters ({', '.join(meta) or 'none'}) and their values, "
              "and its defaults for axes the file leaves out (the base Kernel's were "
              "used); the estimate counts launches only, not the bytes it moves. "
              "`sweeper run` checks all of it before measuring")
    if plan.valid == 0:
        raise plan.ruled_out.nothing_left(plan.size)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    _report(_open_study(args), shared_scale=args.shared_scale)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from sweeper.export import entry_rate, export_csv, export_study
    from sweeper.space import format_size

    store = _open_study(args)
    if args.format == "csv":
        path, count = export_csv(store, args.output or store.root / "replay.csv")
        print(f"wrote {count} trials to {path} (replay it with --device replay:{path})")
        return 0
    path, entries = export_study(store, args.output)
    for e in entries:
        meta = "".join(f" {k}={v}" for k, v in e["meta"].items())
        rate, headline = entry_rate(e)
        print(f"{e['kernel']} {e['dtype']} {format_size(e['footprint'])} on {e['gpu']}: "
              f"#{e['trial']} grid={e['grid_expr']} block={e['block']}{meta}: median "
              f"{e['median_ms']:.4g} ms, {rate:.4g} {headline.unit} ({e['chosen_by']})"
              + (f"; {e['note']}" if e.get("note") else ""))
    print(f"wrote {len(entries)} entries to {path}")
    return 0


def cmd_ab(args: argparse.Namespace) -> int:
    from sweeper.ab import run_ab
    from sweeper.kernels import load_kernel

    threshold = _fraction_option("--threshold", args.threshold)
    space, device = _space_and_device(args)
    if device.replays:
        raise SweeperError("ab measures; it cannot run on a replay device")
    from sweeper.space._names import safe_name

    name = safe_name(args.vary.replace('=', '-').replace(',', '-vs-'), "ab")
    out = study_folder(args.studies_dir, f"{space.study}-ab") / f"{name}.json"
    result = run_ab(space, load_kernel(space.kernel), device, args.vary, out, threshold)
    c = result.comparison
    fixed = " ".join(f"{k}={v}" for k, v in result.fixed.items())
    print(f"A/B on {result.key} with {fixed} fixed; {device.facts().name}")
    for label in (result.a, result.b):
        st = result.samples[label]
        from sweeper.measure import summarize

        s = summarize(st)
        print(f"  {result.key}={label}: median {s.median:.4g} ms, 95% CI [{s.ci_lo:.4g}, "
              f"{s.ci_hi:.4g}], {s.n} samples")
    print(f"verdict: B ({result.key}={result.b}) is {c.verdict.value} than A "
          f"({result.key}={result.a}): time ratio {c.ratio:.4f} [{c.lo:.4f}, {c.hi:.4f}]"
          .replace("SAME than", "the SAME as").replace("UNCLEAR than", "UNCLEAR against")
          + f"; practical threshold {100 * c.threshold:g}%"
          + (" (the CIs are apart, the medians within it)" if c.practically_same else ""))
    if device.note:
        print(f"note: {device.note}")
    print(f"samples: {out}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from sweeper import ceilings
    from sweeper.devices import open_device
    from sweeper.errors import NoDeviceError
    from sweeper.space import format_size

    try:
        device = open_device("cuda")
    except NoDeviceError:
        raise NoDeviceError("calibrate needs a CUDA GPU and none was found: there is "
                            "nothing to calibrate on the CPU") from None
    env = device.environment()
    found = ceilings.load(env["gpu"], env.get("gpu_uuid", ""), env.get("driver", ""))
    if found is None or args.force:
        found = ceilings.measure(device, progress=lambda line: print(line, flush=True))
        print(f"saved to {ceilings.save(found)}")
    else:
        print(f"cached: {ceilings.cache_path(found.gpu, found.uuid, found.driver)} "
              f"(measured {found.measured}; --force to measure again)")
    print(f"{found.gpu} (driver {found.driver}): launch floor {found.launch_floor_us:.1f} us")
    print(f"{'footprint':>10} {'cold GB/s':>10} {'warm GB/s':>10}   (torch copy_, read + write)")
    for fp, row in sorted(found.copy.items()):
        print(f"{format_size(fp):>10} {row['cold']:10.0f} {row['warm']:10.0f}")
    for dtype, tflops in found.matmul.items():
        print(f"matmul {dtype:9} {tflops:8.1f} TFLOP/s (torch.matmul, 8192³, random data)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from sweeper.compare import compare, format_rows

    max_noise = _fraction_option("--max-noise", args.max_noise)
    threshold = _fraction_option("--threshold", args.threshold)
    stores, numbers = [], []
    for ref in (args.a, args.b):
        name, _, number = ref.partition("@")
        if number and not number.isdigit():
            raise SweeperError(f"{ref!r}: a trial is written STUDY@NUMBER")
        stores.append(_open_study(argparse.Namespace(study=name, studies_dir=args.studies_dir)))
        numbers.append(int(number) if number else None)
    print(format_rows(compare(stores[0], stores[1], numbers[0], numbers[1], max_noise,
                              threshold)))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from sweeper.space._schema import space_schema

    text = json.dumps(space_schema(), indent=2) + "\n"
    if args.output:
        from sweeper.fsio import atomic_write

        atomic_write(args.output, text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0


def cmd_tuned(args: argparse.Namespace) -> int:
    from sweeper.export import current_gpu, describe, tuned
    from sweeper.space import parse_size

    try:
        footprint = parse_size(args.footprint)
    except ValueError as err:
        raise SweeperError(f"--footprint: {err}") from None
    if footprint <= 0:
        raise SweeperError(f"--footprint: {args.footprint!r} is not a footprint; allowed: a "
                           "positive size (e.g. 256MiB)")
    try:
        gpu = args.gpu or current_gpu()
    except SweeperError:
        raise SweeperError("no CUDA device here to look the GPU up; name it with --gpu NAME "
                           "(as the tuning file records it)") from None
    print(describe(tuned(args.kernel, dtype=args.dtype, footprint=footprint, gpu=gpu,
                         path=args.tuning)))
    return 0


# -- helpers ----------------------------------------------------------------------------------
def _fraction_option(option: str, text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05, or a one-line error naming the option."""
    number = text.strip()
    try:
        value = float(number[:-1]) / 100 if number.endswith("%") else float(number)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise SweeperError(f"{option}: {text!r} is not a fraction; allowed: 0% to under "
                           "100% (e.g. 1% or 0.01)")
    return value


def _open_study(args: argparse.Namespace) -> Any:
    from sweeper.store import StudyStore

    path = Path(args.study)
    if not (path / "study.json").exists() and not (path / "trials.jsonl").exists():
        path = Path(args.studies_dir) / args.study
    store = StudyStore(path)
    if store.orphaned():
        raise StudyError(f"{path}: {store.journal_path.name} without study.json: nothing says "
                         "what it measured; restore study.json or move the folder away")
    if not store.exists():
        raise StudyError(f"no study {args.study!r} (looked in {args.study} and {path})")
    return store


def _report(store: Any, *, shared_scale: bool = False) -> None:
    from sweeper.report import write_report

    files = write_report(store, shared_scale=shared_scale)
    pngs = [p for p in files.images if p.suffix == ".png"]
    print(f"report: {files.markdown} and {files.json.name}; {len(pngs)} heatmaps in "
          f"{store.root / 'heatmaps'} (PNG and SVG)")


def _cache_text(caches: Sequence[str], device: Any) -> str:
    """``cache cold (L2 flushed before each sample)``, where the device really flushes."""
    text = f"cache {' and '.join(caches)}"
    if "cold" not in caches:
        return text
    if device.flushes_l2:
        return f"{text} (L2 flushed before each sample)"
    return f"{text} (no L2 flush on this device: cold is timed as warm)"


def _priors(space: Any, args: argparse.Namespace, gpu: str, root: Path, say: Any) -> list[Any]:
    """Where a sampler that declares ``uses_priors`` (``auto``) starts: the winners of
    other studies of this kernel on this GPU, each named in the header (``--no-priors``:
    none)."""
    from sweeper.plugins import sampler_capabilities

    if not sampler_capabilities(space.sampler.name).uses_priors:
        return []
    if args.no_priors:
        say(f"{space.sampler.name}: starting without the winners of other studies "
            "(--no-priors)")
        return []
    from sweeper.samplers._priors import prior_sources

    found = prior_sources(args.studies_dir, space, gpu, exclude=root)
    if found:
        names = ", ".join(f"{p.study} ({len(p.configs)} configs"
                          f"{', measured on this same problem' if p.same_problem else ''})"
                          for p in found)
        say(f"{space.sampler.name}: starting from {sum(len(p.configs) for p in found)} "
            f"configs that won other studies of {space.kernel} on {gpu} in "
            f"{args.studies_dir}: {names}; --no-priors to start without them")
    return found


def _ceilings_for(device: Any, store: Any) -> Any:
    """This GPU's cached ceilings (snapshotted into the study), or why there are none."""
    if not device.has_ceilings:
        return f"none on the {device.name} device"
    from sweeper import ceilings

    env = device.environment()
    found = ceilings.load(env["gpu"], env.get("gpu_uuid", ""), env.get("driver", ""))
    if found is None:
        return "not measured for this GPU; run `sweeper calibrate` for % of ceiling"
    store.update_meta(ceilings=found.to_json())
    return found


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


class _Printer:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(text, flush=True)


def _stop_handler(stop: Any, say: _Printer) -> Any:
    def handler(signum: int, frame: Any) -> None:
        if stop.set:
            raise KeyboardInterrupt
        stop.set = True
        print("\nstopping after the current trial (Ctrl-C again to abort it)", file=sys.stderr)
    return handler


def _reporter(quiet: bool, headline: Any) -> Any:
    from sweeper.sweep import SilentReporter

    if quiet:
        return SilentReporter()
    from sweeper.progress import ProgressReporter

    return ProgressReporter(headline=headline)
