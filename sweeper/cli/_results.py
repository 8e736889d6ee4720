"""Commands over recorded studies: ``report``, ``roofline``, ``export``, ``compare``, and
``tuned``, which reads the tuning file ``export`` writes.  None of them measures anything."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from sweeper.cli._exits import EXIT_NOTHING_MEASURED
from sweeper.cli._inputs import fraction_option, open_study
from sweeper.core._units import counted
from sweeper.errors import StudyWarning, SweeperError
from sweeper.escape import printable
from sweeper.options import digits
from sweeper.space import Problem, launch_text, parse_size

#: The formats ``sweeper roofline -o`` writes, by suffix.
PICTURES = (".png", ".svg")


def cmd_report(args: argparse.Namespace) -> int:
    """``sweeper report``: write the report of a recorded study, after the line ``sweeper
    run`` prints of its failed trials (``failed: ...``), where any failed, and one of the
    configs left to measure again (``to measure again: ...``), where any are."""
    from sweeper.engine import report_study
    from sweeper.outcome import again_line, failed_line
    from sweeper.winners import Sources

    store = open_study(args)
    # a study forced past a kernel edit: the failures of the trials the report shows
    shown = Sources.of(store.study_meta()).shown(store.records()[0])
    for line in (failed_line(shown), again_line(shown)):
        if line is not None:
            print(line)
    report_study(store, scale=args.scale, svg=args.svg, redraw=args.redraw)
    return 0


def cmd_roofline(args: argparse.Namespace) -> int:
    """``sweeper roofline``: the winners of studies of one GPU against its roofs, drawn and
    listed; exit status 1 when no study has a winner to place."""
    from sweeper.report import draw_roofline, studies_roofline

    paths = _picture_paths(args.output, Path(args.studies_dir) / "roofline")
    named = [open_study(argparse.Namespace(study=s, studies_dir=args.studies_dir))
             for s in args.study]
    # a study named twice (by its name and its folder, or a shell's glob beside a name)
    # is placed once: its winners twice counted it as two
    once: dict[Path, Any] = {}
    for store in named:
        once.setdefault(store.root.resolve(), store)
    stores = list(once.values()) or _every_study(Path(args.studies_dir))
    roof = studies_roofline(stores, gpu=args.gpu)
    if roof.points.empty and not roof.beside:
        print(f"sweeper: nothing to place on the roofline of {roof.gpu}: no study of it "
              "measured a config", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    # the GPU's, the studies' and kernels' names as their study.json files have them
    print(printable(f"roofline of {roof.gpu}: "
                    f"{counted(len(roof.points) + len(roof.beside), 'winner')} of "
                    f"{counted(len(stores), 'study', 'studies')}; roofs ({roof.key}): "
                    + "; ".join(f"{r.name}{'' if r.calibrated else ' (physical)'}"
                                for r in roof.roofs)))
    for _, p in roof.points.iterrows():
        print(printable(f"{p['kernel']} {p['problem']} (#{p['number']}, {p['study']}): "
                        f"{p['intensity']:.4g} FLOP/B, {p['flop_s'] / 1e12:.4g} TFLOP/s, "
                        f"{p['pct_roof']:.1f}% of the roof ({p['roof']})"
                        + (f": {p['above']}" if p["above"] else "")))
    for line in roof.beside:
        print(printable(line))
    for path in draw_roofline(roof, paths):
        print(f"wrote {path}")
    return 0


def _picture_paths(output: str | None, default: Path) -> list[Path]:
    """Where ``roofline`` draws: ``-o FILE`` in its suffix's format, else PNG and SVG."""
    if output is None:
        return [default.with_suffix(s) for s in PICTURES]
    path = Path(output)
    if path.suffix.lower() not in PICTURES:
        raise SweeperError(f"-o {output}: the suffix {path.suffix or '(none)'!r} names no "
                           f"picture format; allowed: {', '.join(PICTURES)}")
    return [path]


def _every_study(studies_dir: Path) -> list[Any]:
    """Every study under ``studies_dir`` (one that cannot be read is skipped, with a
    warning); refused when there is none."""
    from sweeper.store import StudyStore

    found = []
    for meta in sorted(studies_dir.glob("*/study.json")):
        store = StudyStore(meta.parent)
        try:
            store.meta()
        except SweeperError as err:
            warnings.warn(f"{meta.parent}: skipped: {err}", StudyWarning, stacklevel=2)
            continue
        found.append(store)
    if not found:
        raise SweeperError(f"no study in {studies_dir}; name studies, or give --studies-dir")
    return found


def cmd_export(args: argparse.Namespace) -> int:
    """``sweeper export``: write the study's winners to the tuning file (one line each
    printed), or the study in another format (:data:`sweeper.interop.FORMATS`)."""
    from sweeper.export import export_study
    from sweeper.interop import FORMATS, export
    from sweeper.kernels import Headline

    store = open_study(args)
    if args.format in FORMATS:
        print(printable(export(store, args.format,
                               _export_target(args, FORMATS[args.format].storage),
                               replace=args.replace).line))
        return 0
    _export_target(args, storage=False)
    path, entries = export_study(store, args.output)
    for e in entries:
        unit = Headline(e["headline"]).unit
        size = Problem(e["dtype"], e["footprint"], tuple(e["dims"].items())).describe()
        if e.get("asked_footprint"):        # measured shrunk: for the problem asked
            size = Problem(e["dtype"], e["asked_footprint"], tuple(
                e.get("asked_dims", {}).items())).describe() + \
                f" (measured as {size}, shrunk to fit its device)"
        print(printable(f"{e['kernel']} {e['dtype']} {size} on {e['gpu']}: "
                        f"#{e['trial']} {_launch(e)}: "
                        f"median {e['median_ms']:.4g} ms, {e['rate']:.4g} {unit} "
                        f"({e['chosen_by']})" + (f"; {e['note']}" if e.get("note") else "")))
    print(f"wrote {counted(len(entries), 'entry', 'entries')} to {path}")
    return 0


def _launch(entry: dict[str, Any]) -> str:
    """An exported entry's launch as a line names it: its grid expressions (in y and z
    too, where it keeps them), block and meta-parameters."""
    grids = {k.removesuffix("_expr"): entry[k] for k in ("grid_y_expr", "grid_z_expr")
             if k in entry}
    return launch_text(entry["grid_expr"], entry["block"], entry["meta"], grids)


def _export_target(args: argparse.Namespace, storage: bool) -> str | None:
    """Where ``export`` writes: ``--to`` for a format kept in a storage, else ``-o``; the
    option the format does not take is refused, never ignored."""
    from sweeper.interop import check_replace

    wrong, given = ("-o", args.output) if storage else ("--to", args.to)
    if given is not None:
        takes = "--to URL" if storage else "-o FILE"
        raise SweeperError(f"{wrong}: --format {args.format} takes {takes}, not {wrong}")
    check_replace(args.format, args.replace)
    value = args.to if storage else args.output
    return None if value is None else str(value)


def cmd_compare(args: argparse.Namespace) -> int:
    """``sweeper compare A B``: compare two studies config by config, or two trials
    (``STUDY@NUMBER``), and print the verdicts."""
    from sweeper.compare import compare, format_rows

    max_noise = fraction_option("--max-noise", args.max_noise)
    threshold = fraction_option("--threshold", args.threshold)
    # the trial follows the last @ (a folder's name may hold one: /tmp/a@b/studies/s@3)
    refs = [ref.rpartition("@") if "@" in ref and "/" not in ref.rpartition("@")[2]
            else (ref, "", "") for ref in (args.a, args.b)]
    numbers = [digits(number) for _, _, number in refs]
    for ref, (_, at, _), trial in zip((args.a, args.b), refs, numbers, strict=True):
        if at and trial is None:
            raise SweeperError(f"{ref[:40]!r}: a trial is written STUDY@NUMBER")
    if (numbers[0] is None) != (numbers[1] is None):
        trial, study = (args.a, args.b) if numbers[0] is not None else (args.b, args.a)
        raise SweeperError(f"{trial[:40]!r} is one trial and {study[:40]!r} a whole study: "
                           "compare two studies, or two trials (STUDY@NUMBER each)")
    stores = [open_study(argparse.Namespace(study=name, studies_dir=args.studies_dir,
                                            storage=args.storage)) for name, _, _ in refs]
    rows, notes = compare(stores[0], stores[1], numbers[0], numbers[1], max_noise,
                          threshold)
    for line in [*notes, *format_rows(rows).splitlines()]:
        print(printable(line))          # a device's name as a hand-edited study.json has it
    return 0


def cmd_tuned(args: argparse.Namespace) -> int:
    """``sweeper tuned``: the tuning file's entry for a kernel, dtype and footprint (or
    dimensions) on this GPU (or ``--gpu``), as a caller would look it up."""
    from sweeper.export import current_gpu, describe
    from sweeper.lookup import Tuning
    from sweeper.matching import dtype_name

    try:                            # said as the option's, before the file is read
        dtype = dtype_name(args.dtype)
    except SweeperError as err:
        raise SweeperError(f"--dtype: {err}") from None
    footprint = dims = None
    if args.dims is not None:
        dims = _dims_option(args.dims)
    else:
        try:
            footprint = parse_size(args.footprint)
        except ValueError as err:
            raise SweeperError(f"--footprint: {err}") from None
        if footprint <= 0:
            raise SweeperError(f"--footprint: {args.footprint!r} is not a footprint; allowed: "
                               "a positive size (e.g. 256MiB)")
    gpu = args.gpu or current_gpu()
    print(printable(describe(Tuning(args.tuning).config(  # tuned()'s lookup, saying --gpu
        args.kernel, dtype=dtype, footprint=footprint, dims=dims, gpu=gpu,
        gpu_option=None if args.gpu else "--gpu {!r}", cache=args.cache,
        cache_option="--cache {}"))))         # names from a tuning file made elsewhere
    return 0


def _dims_option(text: str) -> dict[str, int]:
    """``M=4096,N=2048,K=8192`` -> ``{"M": 4096, ...}``; anything else is one line saying
    the form."""
    out: dict[str, int] = {}
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        size = digits(value.strip())
        if not (eq and name.isidentifier() and size is not None and size > 0):
            raise SweeperError(f"--dims: {part.strip()[:40]!r} is not NAME=SIZE; allowed: "
                               "positive integers by name, e.g. M=4096,N=2048,K=8192")
        if name in out:                         # which one was meant is not ours to guess
            raise SweeperError(f"--dims: {name} is given twice ({name}={out[name]} and "
                               f"{name}={size}); allowed: each dimension once")
        out[name] = size
    return out
